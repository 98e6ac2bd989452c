#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Benchmarks rpcrdma_rs against the kernel's C transport, NFS over TCP and
# the raw RDMA link, on the same two guests and link, in one run.
#
#   scripts/bench.sh [--reps N] [--runtime SECONDS] [--size MIB] [--rdma rxe|siw]
#                    [--no-scaling] [--no-profile] [--no-tcp] [--no-insn-count]
#                    [--only-rs] [--record DIR]
#
# The guests run the bench kernel (KERNEL_FLAVOR=bench: the test kernel's
# configuration without its debugging options) with two vCPUs each, and
# load an rpcrdma_rs.ko built for it without the test hooks, in a copy of
# the sources: the checkout's own build for the test kernel stays as it is.
# --no-scaling leaves out the queue-depth and block-size sweeps over RDMA,
# --no-profile the perf profiles of the client, --no-tcp NFS over TCP.
#
# The transports' boots alternate, C, rs, C, rs ..., --reps boots each
# (default 5), each boot running one repetition of every job, so that
# whatever drifts on the host over the run (its load, its caches) falls on
# both alike; boot I's results are in c-I/ and rs-I/. NFS over TCP and the
# raw link (perftest) are measured in the first C boot only. --only-rs
# boots rpcrdma_rs only, for a quick look while developing: the report
# then has no ratios.
#
# QEMU counts the instructions the client guest executes (the insn_count
# plugin, scripts/insn_count.c, built here): under TCG that, not CPU time,
# is what a transport costs the client. Every job ends with a profile
# mark, so each job of each repetition has the kernel's instructions by
# function, and the module's locks and atomic operations per operation.
# --no-insn-count leaves the plugin out, and profiles three jobs with perf
# instead, in the first boot of each transport.
#
# Prints a table of medians with spread and ratios to the C transport, the
# targets met or not, and a profile summary; writes results.csv,
# ratios.png, scaling-iops.png, scaling-throughput.png, profile-summary.txt
# and instructions.txt under ~/.cache/rpcrdma-rs/results/. --record DIR
# also writes the run's text results and plots into DIR
# (scripts/bench_report.py --record; make bench BENCH_RECORD=1 records into
# Documentation/benchmark-results/latest).
# Asserts no speed; fails if a job errors, a mount used the wrong transport
# or the instruction counts do not match the jobs.
set -euo pipefail
here=$PWD
. "$(dirname "$0")/lib.sh"
cd "$RPCRDMA_RS_TOP"

reps=5 runtime=8 size=64 rdma=rxe scaling=1 profile=1 tcp=1 insn_count=1 only_rs=0 record=()
while [ $# -gt 0 ]; do
	case "$1" in
	--reps) reps=$2; shift 2 ;;
	--runtime) runtime=$2; shift 2 ;;
	--size) size=$2; shift 2 ;;
	--rdma) rdma=$2; shift 2 ;;
	--no-scaling) scaling=0; shift ;;
	--no-profile) profile=0; shift ;;
	--no-tcp) tcp=0; shift ;;
	--no-insn-count) insn_count=0; shift ;;
	--only-rs) only_rs=1; shift ;;
	--record)
		[ $# -ge 2 ] || die "--record needs a directory"
		case "$2" in /*) record=(--record "$2") ;; *) record=(--record "$here/$2") ;; esac
		shift 2
		;;
	*) die "unknown argument $1" ;;
	esac
done
for v in reps runtime size; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "--$v is a positive number"
done

scripts/setup.sh
# What only the benchmark needs: the plots, and perf in the client guest
# (which runs the host's binaries). /usr/bin/perf alone may be linux-base's
# wrapper, which runs nothing without linux-perf.
need=()
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || need+=(python3-matplotlib)
if [ "$profile" = 1 ] && [ "$insn_count" = 0 ] && ! dpkg-query -W -f '${Status}' linux-perf 2>/dev/null | grep -q 'ok installed'; then
	need+=(linux-perf)
fi
[ "${#need[@]}" = 0 ] || apt-get install -y -q --no-install-recommends "${need[@]}"

KERNEL_FLAVOR=bench scripts/build-kernel.sh >/dev/null
kdir=$(KERNEL_FLAVOR=bench kernel_dir)

# The module for the bench kernel, without the test hooks, built in a fresh
# copy of the sources (build_module_copy).
build=$RPCRDMA_RS_CACHE/bench-build
log "building rpcrdma_rs.ko for the bench kernel (log: $build/build.log)"
build_module_copy "$build" "$kdir" RPCRDMA_RS_TEST_HOOKS=n ||
	die "building the bench module failed (log: $build/build.log)"
module=$build/src/rpcrdma_rs.ko
# The instruction counter for the client's QEMU, and the program the guest
# marks its jobs with (beside the module: the guests see that directory).
insn=()
if [ "$insn_count" = 1 ]; then
	gcc -O2 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden -o "$build/insn_count.so" \
		scripts/insn_count.c -lpthread || die "building the insn_count plugin failed"
	gcc -O2 -Wall -Wextra -Werror -o "$build/src/insn_mark" scripts/insn_mark.c ||
		die "building insn_mark failed"
	insn=(--env "BENCH_INSN_MARK=$build/src/insn_mark")
fi

results=$RPCRDMA_RS_CACHE/results/bench-$(date +%Y%m%d-%H%M%S)
mkdir -p "$results"
# What ran, for bench_report.py --annotate: the module (its build directory
# is replaced by the next run) and the bench kernel's tree.
cp "$module" "$results/rpcrdma_rs.ko"
echo "$kdir" >"$results/kernel-tree"
# The RDMA core is built into the kernel, so /proc/kallsyms tags its
# symbols with no module: the profile summary tells them by this list.
nm --defined-only "$kdir/drivers/infiniband/core/built-in.a" 2>/dev/null |
	awk 'NF == 3 { print $3 }' | sort -u >"$results/builtin-rdma-core.txt" || true
# The functions of the module's C glue (include/*.c), which the report
# counts apart from its Rust.
nm --defined-only "$build"/src/include/*.o 2>/dev/null |
	awk 'NF == 3 && $2 ~ /^[tTwW]$/ { print $3 }' | sort -u >"$results/glue-symbols.txt" || true
# What was measured, for the report and the recorded results.
{
	echo "COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)"
	if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
		echo "UNCOMMITTED=1"
	else
		echo "UNCOMMITTED=0"
	fi
	echo "KERNEL_FLAVOR=bench"
	echo "KERNEL_RELEASE=$(cat "$kdir/include/config/kernel.release" 2>/dev/null || echo unknown)"
	echo "REPS=$reps"
	echo "RUNTIME=$runtime"
	echo "SIZE_MIB=$size"
	echo "RDMA=$rdma"
	echo "SCALING=$scaling"
	echo "TCP=$tcp"
	echo "INSN_COUNT=$insn_count"
	echo "ONLY_RS=$only_rs"
	echo "QEMU=$(qemu-system-x86_64 --version 2>/dev/null | head -1)"
	echo "DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$results/bench-params.txt"

# The time limits of a boot follow its work: fio jobs of runtime + ramp +
# ~4 s, a metadata job that takes up to a few minutes under TCG, the perf
# profiles and the raw link; twice that, so that only a hang reaches them.
jobs_base=6 jobs_scaling=12
rdma_jobs=$jobs_base
[ "$scaling" = 1 ] && rdma_jobs=$((jobs_base + jobs_scaling))
# budget JOBS PROTOS PROFILES: the limit for a boot running one repetition
# of JOBS fio jobs over PROTOS protocols and PROFILES perf profiles.
budget() { echo $((2 * ($1 * (runtime + 5) + $2 * 200 + $3 * (runtime + 120) + 600))); }
common=(--kernel bench --cpus 2 --server-cpus 2 --rdma "$rdma" --tests bench.sh
	--env BENCH_REPS=1 --env "BENCH_RUNTIME=$runtime" --env "BENCH_SIZE=$size"
	--env "BENCH_SCALING=$scaling")

status=0
# counting RUN: the client QEMU's plugin options for harness run RUN
# (none without the counter).
counting() {
	[ "$insn_count" = 0 ] || echo "-plugin $build/insn_count.so,out=$results/$1/insn-counts.txt"
}
# boot TRANSPORT I: the I-th boot of TRANSPORT (c or rs), repetition I of
# every job. The first C boot also measures TCP and the raw link: same
# boot, same link, same export. Perf profiles (without the counter) are
# made in the first boot of each transport.
boot() {
	local t=$1 i=$2 protos=rdma jobs=$rdma_jobs nprotos=1 perftest=0 prof=0 b more=()
	if [ "$t" = c ] && [ "$i" = 1 ]; then
		perftest=1
		if [ "$tcp" = 1 ]; then
			protos="rdma tcp" jobs=$((rdma_jobs + jobs_base)) nprotos=2
		fi
	fi
	[ "$i" = 1 ] && [ "$insn_count" = 0 ] && prof=$profile
	b=$(budget "$jobs" "$nprotos" "$((prof * 3))")
	[ "$t" = rs ] && more=(--module "$module")
	scripts/harness.sh --transport "$t" "${more[@]}" --out "$results/$t-$i" "${common[@]}" \
		"${insn[@]}" --client-qemu-opts "$(counting "$t-$i")" --timeout "$((b + 600))" \
		--env "TEST_TIMEOUT=$b" --env "BENCH_FIRST_REP=$i" --env "BENCH_PROTOS=$protos" \
		--env "BENCH_PERFTEST=$perftest" --env "BENCH_PROFILE=$prof"
}
for ((i = 1; i <= reps; i++)); do
	if [ "$only_rs" = 0 ]; then
		log "boot $i of $reps, C transport"
		boot c "$i" || status=1
	fi
	log "boot $i of $reps, rpcrdma_rs"
	boot rs "$i" || status=1
done

/usr/bin/python3 scripts/bench_report.py "$results" "${record[@]}" || status=1
exit "$status"
