#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Host microbenchmarks of the protocol core (rust/proto, built by the host
# crate rust/host): the chunk planner, the header codec, the XID index and
# the credit grant. Prints one line per case: name, median ns/op, [min -
# max] over the samples, (samples x iterations, shortest sample).
#
#   scripts/host-bench.sh [--record FILE] [FILTER...]
#
#   --record FILE  also write the table to FILE, after a header line with
#                  the CPU model, the rustc version and the commit
#                  ("+dirty" when the tree has changes)
#   FILTER         run only the cases whose name contains one of these
#
# BENCH_SAMPLES (default 15) and BENCH_SAMPLE_MS (least time of one sample,
# default 20) are passed on to the benches. Runs under `nice -n 19`
# with `-j 1` when a kernel build is running.
set -euo pipefail
# The rustc cargo runs: $RUSTC if the caller exported it (lib.sh sets its
# own for the kernel build, which cargo does not see), else the one on PATH.
cargo_rustc=$(printenv RUSTC || echo rustc)
. "$(dirname "$0")/lib.sh"
cd "$RPCRDMA_RS_TOP"

record=
filters=()
while [ $# -gt 0 ]; do
	case "$1" in
	--record)
		[ $# -ge 2 ] || die "--record needs a file"
		record=$2
		shift 2
		;;
	--record=*)
		record=${1#--record=}
		shift
		;;
	-h | --help)
		sed -n '3,18p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	-*) die "unknown option $1 (see --help)" ;;
	*)
		filters+=("$1")
		shift
		;;
	esac
done

# The host crate builds with the default toolchain: cargo from PATH, where
# lib.sh adds rustup's place.
command -v cargo >/dev/null || die "no cargo on PATH (scripts/setup.sh)"
manifest=rust/host/Cargo.toml
run=(cargo)
jobs=()
if pgrep -f 'make -j' >/dev/null; then
	log "a kernel build is running: nice -n 19, -j 1, noisy numbers"
	run=(nice -n 19 cargo)
	jobs=(-j 1)
fi

header() {
	local cpu rustc commit
	cpu=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)
	rustc=$(cd rust/host && "$cargo_rustc" --version)
	commit=$(git rev-parse --short HEAD)
	if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
		commit+="+dirty"
	fi
	printf '# host-bench: cpu "%s" (%s cpus); %s; commit %s; %s\n' \
		"${cpu:-unknown}" "$(nproc)" "$rustc" "$commit" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}

# Build first, so that the compiler's output stays out of the table.
"${run[@]}" bench --manifest-path "$manifest" "${jobs[@]}" --bench '*' --no-run -q
table=$(mktemp)
trap 'rm -f "$table"' EXIT
if [ -n "$record" ]; then
	header >"$table"
fi
"${run[@]}" bench --manifest-path "$manifest" "${jobs[@]}" --bench '*' -q -- "${filters[@]}" |
	tee -a "$table"
if [ -n "$record" ]; then
	cp "$table" "$record"
	log "recorded in $record"
fi
