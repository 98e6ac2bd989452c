#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Sets up everything a fresh Debian 12 machine lacks, then runs the tests:
# the protocol core's host tests, and the two-guest harness with
# rpcrdma_rs over Soft-RoCE and Soft-iWARP; with --full, also with the
# kernel's C transport (the reference) over both.
# Ends with "N passed, N failed, N skipped".
#
#   scripts/test.sh [--full]
#   scripts/test.sh --soak MINUTES [--transport c|rs] [--rdma rxe|siw]
#   scripts/test.sh --mutants [NAME...]
#   scripts/test.sh --wire-fuzz MINUTES
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$RPCRDMA_RS_TOP"

# --full: every test in every run, four runs: rpcrdma_rs and the kernel's
# C client, each over Soft-RoCE and Soft-iWARP. Without it (what CI runs,
# to stay within CI's time on a slow two-core host), two runs of
# rpcrdma_rs, and every test but nfs_server_loss.sh in one of them:
# - over rxe: the data integrity test (NFSv3 to v4.2, IPv6 with v3 and
#   v4.2), nfs_workloads.sh, nfs_wire_fuzz.sh (60 s of a fuzzing
#   server), nfs_load.sh (3 unload rounds instead of 50)
#   and nfs_inline_thresholds.sh (a region maps 32 pages over rxe, 256
#   over siw, so RPCs take several and the load runs the MR pool dry),
#   nfs_krb5.sh (which needs rxe) and hostile_peer.sh (whose cases over
#   rxe include those siw cannot fire); the harness checks itself in this
#   run (--canary);
# - over siw: the data integrity test (NFSv4.2, over IPv4 and IPv6) and
#   all the others: nfs_teardown.sh, connect_probe.sh, tracepoints.sh,
#   device_tracking.sh, rpcctl.sh, nfs_utils.sh (which mounts over the kernel's
#   rpcrdma too, for nfs-utils to read both) and dkms.sh;
# that is rotation 0: ROTATION (below) swaps the fabrics of all but the
# data integrity test and the four pinned to rxe from one commit to the
# next.
# nfs_server_loss.sh (four server losses under verified fio, 12 minutes
# on a slow host) runs with --full only.
# The C reference's code does not change with this tree: its results
# change only when a test does, so it runs with --full only.
# The C client always has one vCPU: with two it crashes in
# nfs_teardown.sh (see Documentation/testing.rst).
# --soak MINUTES: nothing of the above; one guest pair (rpcrdma_rs over
# rxe unless --transport or --rdma say otherwise) runs nfs_soak.sh for
# MINUTES.
# --wire-fuzz MINUTES: nothing of the above; nfs_wire_fuzz.sh fuzzes for
# MINUTES with rpcrdma_rs over rxe, then over siw, on the KASAN kernel
# (KERNEL_FLAVOR=kasan, built with clang once and cached under its own
# key; should it fail to build, on the test kernel, with KFENCE and
# slub_debug, and the run says so), then the same with the kernel's C
# client: the reference column, whose outcome is recorded in the results,
# not counted (WIRE_FUZZ_RUNS="rs:rxe c:siw ..." picks runs). The default
# command fuzzes for 60 s, on the test kernel, over the fabric
# nfs_workloads.sh has.
# --mutants [NAME...]: nothing of the above; scripts/mutants.sh plants
# each fault of selftests/rpcrdma_rs/mutants/ (or those NAMEd) in a copy
# of the tree, and passes only if its test goes red on every one.
usage="usage: $0 [--full] | --soak MINUTES [--transport c|rs] [--rdma rxe|siw] | --mutants [NAME...] | --wire-fuzz MINUTES"
full=0 soak="" soak_transport="" soak_rdma="" mutants=0 wire_fuzz=
while [ $# -gt 0 ]; do
	case "$1" in
	--full) full=1; shift ;;
	--mutants) mutants=1; shift; break ;;
	--wire-fuzz)
		[ $# -ge 2 ] && [[ $2 =~ ^[1-9][0-9]*$ ]] || die "--wire-fuzz takes a whole number of minutes"
		wire_fuzz=$2
		shift 2
		;;
	--soak | --transport | --rdma)
		[ $# -ge 2 ] || die "$usage"
		case "$1" in
		--soak) soak=$2 ;;
		--transport) soak_transport=$2 ;;
		--rdma) soak_rdma=$2 ;;
		esac
		shift 2
		;;
	*) die "$usage" ;;
	esac
done
[ -z "$wire_fuzz" ] || [ "$full$mutants$soak$soak_transport$soak_rdma" = 00 ] || die "$usage"
if [ -n "$soak" ]; then
	[[ $soak =~ ^[1-9][0-9]*$ ]] || die "--soak takes a whole number of minutes"
	[ "$full" = 0 ] || die "$usage"
	soak_transport=${soak_transport:-rs} soak_rdma=${soak_rdma:-rxe}
	case "$soak_transport" in c | rs) ;; *) die "--transport is c or rs" ;; esac
	case "$soak_rdma" in rxe | siw) ;; *) die "--rdma is rxe or siw" ;; esac
elif [ -n "$soak_transport$soak_rdma" ]; then
	die "--transport and --rdma choose the soak's guest pair: $usage"
fi

# The time table: each phase's seconds, printed at the end against the
# budget in selftests/rpcrdma_rs/time_budget (see Documentation/testing.rst).
times_file=$(mktemp)
trap 'rm -f "$times_file"' EXIT
phase_start=$SECONDS
mark() { # PHASE: the seconds since the last mark are PHASE's
	echo "$1 $((SECONDS - phase_start))" >>"$times_file"
	phase_start=$SECONDS
}

scripts/setup.sh
mark setup
scripts/build-kernel.sh >/dev/null
mark kernel

if [ "$mutants" = 1 ]; then
	[ "$full" = 0 ] && [ -z "$soak$soak_transport$soak_rdma" ] || die "$usage"
	log "building the hostile server for the guests (rust/peer)"
	build_peer
	rm -f "$times_file"
	exec scripts/mutants.sh "$@"
fi

passed=0 failed=0 skipped=0
add_counts() { # FILE with passed=/failed=/skipped= lines
	local p=0 f=0 s=0
	eval "$(grep -E '^(passed|failed|skipped)=[0-9]+$' "$1" | sed 's/^passed/p/;s/^failed/f/;s/^skipped/s/')"
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

# BREAK_DATA_CHECK=1 scripts/test.sh: every data check's expectation is
# wrong, and every run must fail.
harness_args=()
[ -n "${BREAK_DATA_CHECK:-}" ] && harness_args+=(--env "BREAK_DATA_CHECK=$BREAK_DATA_CHECK")

if [ -n "$soak" ]; then
	scripts/build-module.sh
	out=$RPCRDMA_RS_CACHE/runs/soak-$(date +%Y%m%d-%H%M%S)/$soak_transport-$soak_rdma
	# The test's limit: its minutes, the round that starts just before
	# they are up, and the final mounts and kmemleak scan. The guests'
	# limit adds their boot, and the unload and leak scans after the test.
	test_timeout=$((soak * 60 + 1200))
	limit=$((test_timeout + 1200))
	log "soak: nfs_soak.sh for $soak minutes, $soak_transport over $soak_rdma" \
		"(test limit $test_timeout s, guests $limit s); progress in $out/tap/nfs_soak.sh.tap"
	scripts/harness.sh --transport "$soak_transport" --rdma "$soak_rdma" --tests nfs_soak.sh \
		--out "$out" --timeout "$limit" --env "SOAK_MINUTES=$soak" --env "TEST_TIMEOUT=$test_timeout" \
		"${harness_args[@]}" || true
	grep '^# soak:' "$out/tap/nfs_soak.sh.tap" 2>/dev/null || true
	if [ -f "$out/summary" ]; then
		add_counts "$out/summary"
	else
		failed=$((failed + 1))
	fi
	log "results: $out (TAP: tap/nfs_soak.sh.tap; each round: nfs_soak/round-N/)"
	echo "$passed passed, $failed failed, $skipped skipped"
	exit "$((failed > 0))"
fi

if [ -n "$wire_fuzz" ]; then
	build_peer || die "building rust/peer failed"
	out=$RPCRDMA_RS_CACHE/runs/wire-fuzz-$(date +%Y%m%d-%H%M%S)
	mkdir -p "$out"
	kernel=kasan module=() server=()
	if KERNEL_FLAVOR=kasan scripts/build-kernel.sh >/dev/null &&
		log "building rpcrdma_rs.ko for the KASAN kernel (log: $out/kasan-build/build.log)" &&
		build_module_copy "$out/kasan-build" "$(KERNEL_FLAVOR=kasan kernel_dir)" \
			RPCRDMA_RS_TEST_HOOKS=y LLVM=1; then
		module=(--module "$out/kasan-build/src/rpcrdma_rs.ko")
		# KASAN checks the client, where the module runs; the server, which
		# runs the peer in userspace, boots the test kernel, which boots
		# faster.
		server=(--server-kernel test)
	else
		kernel=test
		log "no KASAN kernel: fuzzing on the test kernel (KFENCE, slub_debug) instead"
		scripts/build-module.sh
	fi
	echo "$kernel" >"$out/kernel"
	seed=$(date +%s)
	limit=$((wire_fuzz * 60 * 3 + 2400))
	for run in ${WIRE_FUZZ_RUNS:-rs:rxe rs:siw c:rxe c:siw}; do
		IFS=: read -r t r <<<"$run"
		more=()
		[ "$t" = rs ] && more=("${module[@]}")
		[ "$t" = c ] && more=(--cpus 1 --env WIRE_FUZZ_C=1)
		log "wire fuzz: $t over $r, $wire_fuzz minutes, seeds from $seed, $kernel kernel"
		# The test's own limit: KASAN under TCG makes a round of 30 s take
		# about 80.
		scripts/harness.sh --transport "$t" --rdma "$r" --kernel "$kernel" "${server[@]}" \
			--tests nfs_wire_fuzz.sh --out "$out/$t-$r" --timeout "$limit" \
			--env "WIRE_FUZZ_SECONDS=$((wire_fuzz * 60))" --env "TEST_TIMEOUT=$((wire_fuzz * 60 * 3 + 600))" \
			--env "WIRE_FUZZ_SEED=$seed" "${more[@]}" "${harness_args[@]}" || true
		seed=$((seed + 1000))
		if [ "$t" = c ]; then
			# The reference column: recorded, not counted.
			{ echo "$t/$r:"; cat "$out/$t-$r/failures.txt" "$out/$t-$r/problems.txt" 2>/dev/null; } \
				>>"$out/c-column.txt"
		elif [ -f "$out/$t-$r/summary" ]; then
			add_counts "$out/$t-$r/summary"
		else
			failed=$((failed + 1))
		fi
	done
	if [ -f "$out/c-column.txt" ]; then
		log "the C client's column (recorded, not counted): $out/c-column.txt"
		sed 's/^/  /' "$out/c-column.txt" >&2
	fi
	log "results: $out (kernel: $kernel)"
	echo "$passed passed, $failed failed, $skipped skipped"
	exit "$((failed > 0))"
fi

results=$RPCRDMA_RS_CACHE/runs/test-$(date +%Y%m%d-%H%M%S)
mkdir -p "$results"

# Lints first: the clippy builds are full builds of the module as well, one
# as users build it and one with the test hooks; build-module.sh then leaves
# the hooked module, the one the guests load.
kdir=$(kernel_dir)
lint() { # NAME COMMAND...: passes when COMMAND succeeds and says no warning
	local name=$1; shift
	if "$@" >"$results/$name.log" 2>&1 && ! grep -qE '^(warning|error)' "$results/$name.log"; then
		echo "ok - $name"
		passed=$((passed + 1))
	else
		cat "$results/$name.log"
		echo "not ok - $name" | tee -a "$results/steps.log"
		failed=$((failed + 1))
	fi
}
lint kernel-clippy make -s KDIR="$kdir" clippy
lint kernel-clippy-test-hooks make -s KDIR="$kdir" RPCRDMA_RS_TEST_HOOKS=y clippy
lint kernel-rustfmt make -s KDIR="$kdir" rustfmtcheck
lint host-clippy bash -c 'cd rust/host && cargo clippy -q --all-targets -- -D warnings'
lint host-rustfmt bash -c 'cd rust/host && cargo fmt --check'
lint peer-clippy bash -c 'cd rust/peer && cargo clippy -q --all-targets -- -D warnings'
lint peer-rustfmt bash -c 'cd rust/peer && cargo fmt --check'
lint shell-syntax bash -c 'for f in scripts/*.sh selftests/rpcrdma_rs/*.sh .ci/run; do bash -n "$f" || exit 1; done'
lint kselftest-target scripts/ksft-check.sh "$kdir"
lint bench-report /usr/bin/python3 scripts/test_bench_report.py
mark lints
scripts/build-module.sh
log "building the hostile server for the guests (rust/peer)"
build_peer
mark builds

log "host tests (cargo test in rust/host and rust/peer)"
if (cd rust/host && cargo test 2>&1) | tee "$results/host.log"; then :; fi
if (cd rust/peer && cargo test 2>&1) | tee -a "$results/host.log"; then :; fi
# Sum cargo's "test result:" lines; no such line at all is a failure.
awk '/^test result:/ { n++; p += $4; f += $6; s += $8 }
	/^error(\[|:)/ { e++ }
	END { if (!n) f++; print "passed=" p+0; print "failed=" f+e; print "skipped=" s+0 }' \
	"$results/host.log" >"$results/host.summary"
add_counts "$results/host.summary"
host_failed=$(sed -n 's/^failed=//p' "$results/host.summary")
mark host-tests

# Each fuzz target for FUZZ_SECONDS (default 45), seeded with the captured
# wire corpus; a crash, a hang or a target that did not run fails.
fuzz_secs=${FUZZ_SECONDS:-45}
log "fuzzing the protocol core, $fuzz_secs s per target"
if FUZZ_CORPUS=$RPCRDMA_RS_CACHE/fuzz-corpus rust/host/fuzz/run.sh "$fuzz_secs" >"$results/fuzz.log" 2>&1 &&
	[ "$(grep -cE '^Done [0-9]+ runs' "$results/fuzz.log")" = 3 ]; then
	grep -E '^run.sh: fuzzing|^Done [0-9]+ runs' "$results/fuzz.log"
	echo "ok - fuzz"
	passed=$((passed + 1))
else
	tail -30 "$results/fuzz.log"
	echo "not ok - fuzz (see $results/fuzz.log)" | tee -a "$results/steps.log"
	failed=$((failed + 1))
fi
mark fuzz

# The harness checks itself in the first run (--canary): harness_canary.sh
# plants a kernel WARNING and a data check with a wrong expected checksum,
# and the run must catch both; then they leave its verdict, and the
# self-test is a passed case of that run ("harness self-test" in its log).
if [ "$full" = 1 ]; then
	runs=${HARNESS_RUNS:-rs:rxe rs:siw c:rxe c:siw}
else
	runs=${HARNESS_RUNS:-rs:rxe rs:siw}
fi
# Pinned to a fabric: nfs_krb5.sh (rxe only), hostile_peer.sh (rxe has
# the cases siw cannot fire), nfs_load.sh and nfs_inline_thresholds.sh
# (over rxe RPCs take several regions and run the pool dry). The others
# swap fabrics from one commit to the next (ROTATION, default the
# number of commits, even or odd), so that each fabric sees each of them
# over two runs; --full runs everything over both.
pinned_rxe="nfs_load.sh nfs_inline_thresholds.sh nfs_krb5.sh hostile_peer.sh"
swap_a="nfs_workloads.sh nfs_wire_fuzz.sh"
swap_b="nfs_teardown.sh connect_probe.sh tracepoints.sh device_tracking.sh nfs_utils.sh rpcctl.sh dkms.sh"
rotation=${ROTATION:-$(git -C "$RPCRDMA_RS_TOP" rev-list --count HEAD 2>/dev/null || echo 0)}
case "$rotation" in *[!0-9]* | '') die "ROTATION is a whole number" ;; esac
if [ $((rotation % 2)) = 0 ]; then
	rxe_tests="nfs_data_integrity.sh $swap_a $pinned_rxe" siw_tests="nfs_data_integrity.sh $swap_b"
else
	rxe_tests="nfs_data_integrity.sh $swap_b $pinned_rxe" siw_tests="nfs_data_integrity.sh $swap_a"
fi
[ "$full" = 1 ] || log "rotation $((rotation % 2)) (ROTATION=$rotation): over rxe $rxe_tests; over siw $siw_tests"
canary=(--canary)
for run in $runs; do
	IFS=: read -r t r <<<"$run"
	set -- "$t" "$r"
	subset=("${canary[@]}")
	canary=()
	[ "$t" = c ] && subset+=(--cpus 1)
	if [ "$full" = 0 ]; then
		case "$run" in
		rs:rxe) subset+=(--env NFS_LOAD_ROUNDS=3 --env "NFS_IPV6_VERSIONS=3 4.2" --tests "$rxe_tests") ;;
		rs:siw) subset+=(--env NFS_VERSIONS=4.2 --tests "$siw_tests") ;;
		c:*) subset+=(--env "NFS_VERSIONS=3 4.2" --tests "nfs_data_integrity.sh hostile_peer.sh") ;;
		esac
	fi
	scripts/harness.sh --transport "$1" --rdma "$2" --out "$results/$1-$2" "${harness_args[@]}" \
		"${subset[@]}" || true
	if [ -f "$results/$1-$2/summary" ]; then
		add_counts "$results/$1-$2/summary"
	else
		failed=$((failed + 1))
		echo "not ok - $1/$2: the harness left no summary" >>"$results/steps.log"
	fi
	# The run's own part of the table: each test's seconds from the
	# guest's tap/status, its boot, and the rest (start, unload, leak
	# scans, judging) as "other".
	run_secs=$((SECONDS - phase_start))
	awk -v p="$1/$2" -v total="$run_secs" '
		$1 == "boot" { print p "/boot " $2; used += $2 }
		$2 == "exit" && $4 != "" { print p "/" $1 " " $4; used += $4 }
		END { print p "/other " total - used }' "$results/$1-$2/tap/status" 2>/dev/null >>"$times_file" ||
		echo "$1/$2/other $run_secs" >>"$times_file"
	phase_start=$SECONDS
done

log "results: $results"
time_table "$times_file" "$RPCRDMA_RS_TOP/selftests/rpcrdma_rs/time_budget" | tee "$results/times.txt"
# Every failed case and harness problem once more, last: a log read from
# its end (CI keeps the end) names what failed without the runs' output.
{
	grep -h '^not ok - ' "$results/steps.log" 2>/dev/null || true
	[ "$host_failed" = 0 ] || echo "host tests: $host_failed failed (see $results/host.log)"
	for run in $runs; do
		IFS=: read -r t r <<<"$run"
		sed "s|^|$t/$r: |" "$results/$t-$r/failures.txt" 2>/dev/null || true
		sed "s|^|$t/$r: PROBLEM: |" "$results/$t-$r/problems.txt" 2>/dev/null || true
	done
} >"$results/failures.txt"
if [ -s "$results/failures.txt" ]; then
	echo "failed:"
	sed 's/^/  /' "$results/failures.txt"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
