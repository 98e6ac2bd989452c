#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Benchmarks rpcrdma_rs against the kernel's C transport, NFS over TCP and
# the raw RDMA link, on the same two guests and link, in one run.
#
#   scripts/bench.sh [--reps N] [--runtime SECONDS] [--size MIB] [--rdma rxe|siw]
#
# Prints a table of medians with spread and ratios to the C transport, and
# writes results.csv and ratios.png under ~/.cache/rpcrdma-rs/results/.
# Asserts no speed; fails if a job errors or a mount used the wrong transport.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$RPCRDMA_RS_TOP"

reps=3 runtime=10 size=64 rdma=rxe
while [ $# -gt 0 ]; do
	case "$1" in
	--reps) reps=$2; shift 2 ;;
	--runtime) runtime=$2; shift 2 ;;
	--size) size=$2; shift 2 ;;
	--rdma) rdma=$2; shift 2 ;;
	*) die "unknown argument $1" ;;
	esac
done

scripts/setup.sh
# The plot is the one thing only the benchmark needs.
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null ||
	apt-get install -y -q --no-install-recommends python3-matplotlib
scripts/build-kernel.sh >/dev/null
scripts/build-module.sh

results=$RPCRDMA_RS_CACHE/results/bench-$(date +%Y%m%d-%H%M%S)
mkdir -p "$results"
# No kmemleak scanning or SLUB poisoning while measuring; the debug
# options compiled into the test kernel stay, the same for every transport.
common=(--rdma "$rdma" --tests bench.sh --timeout 3600 --append "kmemleak=off" --env TEST_TIMEOUT=3300
	--env "BENCH_REPS=$reps" --env "BENCH_RUNTIME=$runtime" --env "BENCH_SIZE=$size")

status=0
# The C transport's guest also measures TCP and the raw link: same boot,
# same link, same export.
scripts/harness.sh --transport c --out "$results/c" "${common[@]}" \
	--env "BENCH_PROTOS=rdma tcp" --env BENCH_PERFTEST=1 || status=1
scripts/harness.sh --transport rs --out "$results/rs" "${common[@]}" \
	--env "BENCH_PROTOS=rdma" || status=1

/usr/bin/python3 scripts/bench_report.py "$results" || status=1
exit "$status"
