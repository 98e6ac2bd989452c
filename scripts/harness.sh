#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The two-guest harness: boots an NFS server guest and a client guest from
# the cached test kernel under QEMU (TCG), links them with a socket netdev
# over the host's loopback, and runs selftests in the client guest.
#
#   scripts/harness.sh [--transport c|rs] [--rdma rxe|siw] [--tests "a.sh b.sh"]
#                      [--out DIR] [--timeout SECONDS] [--env NAME=VALUE]...
#                      [--append KERNEL-ARGS] [--cpus N] [--server-cpus N]
#                      [--kernel test|bench|kasan] [--server-kernel test|kasan]
#                      [--module PATH] [--without "a.sh ..."]
#                      [--canary] [--client-qemu-opts OPTIONS]
#   scripts/harness.sh --judge DIR
#
# --server-kernel boots the server guest on another kernel than the
# client's (scripts/test.sh --wire-fuzz: the KASAN kernel checks the client,
# where the module runs, and the server, which runs the fuzzing peer in
# userspace, boots the test kernel).
# --kernel bench boots the benchmark kernel (scripts/bench.sh), which has no
# lockdep or kmemleak to check and gets no debugging options on its command
# line. --module loads that rpcrdma_rs.ko instead of the checkout's (not
# under /tmp, which the guests mount afresh). --cpus is the client's vCPUs,
# --server-cpus the server's. --client-qemu-opts adds OPTIONS to the client
# guest's QEMU command line (scripts/bench.sh loads its instruction
# counter so).
#
# Writes everything into the run directory (default under the cache):
# params, both guests' logs and dmesg, one TAP file per test, summary,
# problems.txt and accepted-skips.txt. Exits non-zero when a test failed,
# exited non-zero or wrote to stderr, skipped a case not listed in
# selftests/rpcrdma_rs/known_skips, a guest failed to set up or the time
# ran out, either kernel logged an oops, BUG, WARN, lockdep splat, SLUB
# report, stall, lockup or kmemleak report, was tainted or lost lockdep,
# kmemleak did not run, or the kernel's rpcrdma loaded in an rs run.
# Reports of the reference server's known defects (known_server_defects)
# are listed and accepted. --judge reads an earlier run directory again
# and gives its verdict as it would be given now, booting nothing.
#
# --canary checks the harness itself in the same run: harness_canary.sh
# runs first with HARNESS_CANARY=1 and plants a kernel WARNING and a data
# check with a wrong expected checksum. Both must be caught, and are then
# taken out of the verdict: the run passes one case more ("harness
# self-test") if they were and the rest passed, and has a problem of its
# own if either was missed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

transport=c
rdma=rxe
tests=""
out=""
limit=${HARNESS_TIMEOUT:-4800}
extra_env=()
judge=""
without=""
# The client guest's vCPUs: with two, QEMU runs them as two host threads
# (MTTCG), so the transport's completion handlers and senders really run
# at the same time. The server guest has one unless told otherwise: the
# machine has two cores.
cpus=${HARNESS_CPUS:-2}
server_cpus=1
kernel="test"
server_kernel=""
module=$RPCRDMA_RS_TOP/rpcrdma_rs.ko
append=""
append_set=0
canary=0
client_qemu=""
while [ $# -gt 0 ]; do
	case "$1" in
	--transport) transport=$2; shift 2 ;;
	--rdma) rdma=$2; shift 2 ;;
	--tests) tests=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--timeout) limit=$2; shift 2 ;;
	--env) extra_env+=("$2"); shift 2 ;;
	--append) append=$2; append_set=1; shift 2 ;;
	--judge) judge=$2; shift 2 ;;
	--cpus) cpus=$2; shift 2 ;;
	--server-cpus) server_cpus=$2; shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	--server-kernel) server_kernel=$2; shift 2 ;;
	--module) module=$2; shift 2 ;;
	--without) without=$2; shift 2 ;;
	--canary) canary=1; shift ;;
	--client-qemu-opts) client_qemu=$2; shift 2 ;;
	*) die "unknown argument $1" ;;
	esac
done
if [ -n "$judge" ]; then
	[ -f "$judge/params" ] || die "no run directory at $judge"
	# shellcheck disable=SC1091 # written by an earlier run
	. "$judge/params"
	transport=$TRANSPORT rdma=$RDMA tests=$TESTS
	canary=${HARNESS_CANARY:-0}
	# (Runs before KERNEL was recorded booted the test kernel.)
	kernel=${KERNEL:-test}
	# (Runs before APPEND was recorded: the client's command line.)
	append=${APPEND-$(sed -n 's/^.*Command line: //p' "$judge/client-dmesg.txt" 2>/dev/null | head -1)}
	append_set=1
	out=$(cd "$judge" && pwd)
fi
case "$transport" in c | rs) ;; *) die "--transport is c or rs" ;; esac
case "$rdma" in rxe | siw) ;; *) die "--rdma is rxe or siw" ;; esac
case "$kernel" in test | bench | kasan) ;; *) die "--kernel is test, bench or kasan" ;; esac
[[ $cpus =~ ^[1-9][0-9]*$ ]] || die "--cpus is a number of vCPUs"
[[ $server_cpus =~ ^[1-9][0-9]*$ ]] || die "--server-cpus is a number of vCPUs"
# kernel_dir (scripts/lib.sh) picks the build tree by flavor.
KERNEL_FLAVOR=$kernel
# Debugging aids on the guests' command line (the test kernel has the rest
# built in); the bench kernel runs as it is.
if [ "$append_set" = 0 ] && [ "$kernel" != bench ]; then
	append="slub_debug=FZP kmemleak=on"
fi
# The default tests. Whether chunks may be used under krb5i/krb5p is
# decided above the fabric, so the Kerberos test runs over rxe only.
if [ -z "$tests" ]; then
	tests="nfs_data_integrity.sh nfs_workloads.sh nfs_teardown.sh nfs_server_loss.sh nfs_load.sh"
	[ "$rdma" = rxe ] && tests="$tests nfs_krb5.sh"
	tests="$tests nfs_inline_thresholds.sh connect_probe.sh tracepoints.sh device_tracking.sh nfs_utils.sh rpcctl.sh"
	tests="$tests dkms.sh"
	tests="$tests hostile_peer.sh nfs_wire_fuzz.sh"
	# --without leaves some of the default tests out.
	for w in $without; do
		tests=$(tr ' ' '\n' <<<"$tests" | grep -vxF "$w" | tr '\n' ' ')
	done
	tests=${tests% }
fi
if [ "$canary" = 1 ] && [ -z "$judge" ]; then
	tests="harness_canary.sh $tests"
	extra_env+=("HARNESS_CANARY=1")
fi

# The skips a run accepts, each with its reason; any other skip fails it.
# Lines "TRANSPORT | RDMA | TEST: CASE | REASON" (see the file): a skip
# applies to its transport over its fabric (rxe or siw), or both (*).
known_skips=$RPCRDMA_RS_TOP/selftests/rpcrdma_rs/known_skips
[ -f "$known_skips" ] || die "no $known_skips"
ks_pattern=() ks_reason=()
lineno=0
while IFS='|' read -r k_transport k_fabric k_pattern k_reason k_extra || [ -n "$k_transport" ]; do
	lineno=$((lineno + 1))
	read -r k_transport <<<"$k_transport"
	case "$k_transport" in '' | '#'*) continue ;; esac
	read -r k_fabric <<<"$k_fabric"
	read -r k_pattern <<<"$k_pattern"
	read -r k_reason <<<"$k_reason"
	case "$k_transport" in c | rs) ;; *) die "$known_skips:$lineno: the transport is c or rs" ;; esac
	case "$k_fabric" in rxe | siw | '*') ;; *) die "$known_skips:$lineno: RDMA is rxe, siw or *" ;; esac
	if [ -z "$k_pattern" ] || [ -z "$k_reason" ] || [ -n "$k_extra" ]; then
		die "$known_skips:$lineno: not TRANSPORT | RDMA | TEST: CASE | REASON"
	fi
	[ "$k_transport" = "$transport" ] || continue
	[ "$k_fabric" = '*' ] || [ "$k_fabric" = "$rdma" ] || continue
	ks_pattern+=("$k_pattern")
	ks_reason+=("$k_reason")
done <"$known_skips"

# The reference server's own defects the run accepts, each with its
# reason (see the file): "RDMA | KIND | REPORT | TRACE | REASON".
known_defects=$RPCRDMA_RS_TOP/selftests/rpcrdma_rs/known_server_defects
[ -f "$known_defects" ] || die "no $known_defects"
kd_kind=() kd_report=() kd_trace=() kd_reason=()
lineno=0
while IFS='|' read -r k_rdma k_kind k_report k_trace k_reason k_extra || [ -n "$k_rdma" ]; do
	lineno=$((lineno + 1))
	read -r k_rdma <<<"$k_rdma"
	case "$k_rdma" in '' | '#'*) continue ;; esac
	for v in k_kind k_report k_trace k_reason; do read -r "${v?}" <<<"${!v}"; done
	case "$k_rdma" in rxe | siw | any) ;; *) die "$known_defects:$lineno: RDMA is rxe, siw or any" ;; esac
	case "$k_kind" in warn | leak) ;; *) die "$known_defects:$lineno: KIND is warn or leak" ;; esac
	if [ -z "$k_report" ] || [ -z "$k_trace" ] || [ -z "$k_reason" ] || [ -n "$k_extra" ]; then
		die "$known_defects:$lineno: not RDMA | KIND | REPORT | TRACE | REASON"
	fi
	[ "$k_rdma" = any ] || [ "$k_rdma" = "$rdma" ] || continue
	kd_kind+=("$k_kind") kd_report+=("$k_report") kd_trace+=("$k_trace") kd_reason+=("$k_reason")
done <"$known_defects"

# accepted_warnings REPORT TRACE FILE...: prints each WARNING line (as
# the problem scan records it) that matches REPORT and whose splat's call
# trace has a line matching TRACE.
accepted_warnings() {
	local report=$1 trace=$2
	shift 2
	# (Patterns through the environment: awk -v would take their
	# backslashes as escapes.)
	REPORT=$report TRACE=$trace awk '
		function flush() { if (inw && hit) print wline; inw = 0; hit = 0 }
		{ sub(/[[:space:]]+$/, "") }
		/WARNING:/ { flush(); if ($0 ~ ENVIRON["REPORT"]) { inw = 1; wline = $0; n = 0 } next }
		inw { if ($0 ~ ENVIRON["TRACE"]) hit = 1; if ($0 ~ /---\[ end trace/ || ++n > 200) flush() }
		END { flush() }' "$@" 2>/dev/null || true
}

# injected_failures FILE...: prints the "page allocation failure" lines
# that a test's fault injection explains: those between the markers it
# writes to /dev/kmsg when it turns injection on and off.
injected_failures() {
	awk '
		{ sub(/[[:space:]]+$/, "") }
		/rpcrdma-rs-selftest: fault injection begins/ { on = 1; next }
		/rpcrdma-rs-selftest: fault injection ends/ { on = 0; next }
		on && /page allocation failure/' "$@" 2>/dev/null || true
}

# drop_problems ROLE FILE: takes the lines of FILE out of ROLE's list of
# kernel problems.
drop_problems() {
	grep -vxF -f "$2" "$out/$1-kernel-problems.txt" >"$out/$1-problems.tmp" || true
	mv "$out/$1-problems.tmp" "$out/$1-kernel-problems.txt"
}

# unexplained_leaks TRACE FILE: prints the kmemleak objects in FILE whose
# backtrace has no line matching TRACE.
unexplained_leaks() {
	TRACE=$1 awk '
		function flush() { if (obj != "" && !hit) printf "%s", obj; obj = ""; hit = 0 }
		/^unreferenced object/ { flush() }
		{ obj = obj $0 "\n"; if ($0 ~ ENVIRON["TRACE"]) hit = 1 }
		END { flush() }' "$2"
}

# known_skip KEY: prints the reason known_skips gives for skipping the case
# KEY ("test.sh: description") under this transport and fabric; fails if
# none does.
known_skip() {
	local i
	for i in "${!ks_pattern[@]}"; do
		# shellcheck disable=SC2053 # the pattern is a glob on purpose
		if [[ $1 == ${ks_pattern[$i]} ]]; then
			echo "${ks_reason[$i]}"
			return 0
		fi
	done
	return 1
}

# Kernel reports that fail a run, from the log or the console (extended
# regular expressions): oopses, BUG and WARNING splats (lockdep's
# included), SLUB debugging reports ("BUG kmalloc-128 (Not tainted): ..."
# has no colon after BUG), lockdep's INFO reports, RCU stalls, hung tasks,
# soft and workqueue lockups, failed page allocations, KFENCE, KASAN, UBSAN,
# panics, Rust panics and kmemleak reports. (The test kernel has the
# hung-task watchdog at 240 s, the soft-lockup detector and the workqueue
# watchdog built in: selftests/rpcrdma_rs/config. It has no UBSAN; that
# pattern is there for a kernel built otherwise.)
kernel_problem_patterns=(
	'BUG:' 'WARNING:' 'Oops' 'kernel BUG' 'general protection fault'
	'possible circular locking' 'possible recursive locking' 'inconsistent lock state'
	'suspicious RCU usage' 'DEBUG_LOCKS_WARN_ON' 'bad unlock balance'
	'BUG [^ ]+ \((Not tainted|Tainted: [^)]*)\)' '([Pp]oison|Redzone|[Pp]adding) overwritten'
	'INFO: trying to register non-static key'
	'self-detected stall' 'detected (expedited )?stalls'
	'INFO: task .* blocked for more than'
	'BUG: soft lockup' 'BUG: workqueue lockup'
	'page allocation failure'
	'KFENCE:' 'KASAN:' 'UBSAN:' 'Kernel panic' 'rust_panic' 'panicked at' 'unreferenced object'
)
kernel_problem_re=$(IFS='|'; echo "${kernel_problem_patterns[*]}")

# Taint flags by bit (include/linux/panic.h); O (out-of-tree module) and E
# (unsigned module) are what loading rpcrdma_rs.ko does, nothing else is
# expected of a good run.
taint_letters=PFSRMBUDAWCIOELKXTN
taint_allowed=OE
# bad_taint VALUE: prints the flags of a /proc/sys/kernel/tainted value
# other than the allowed ones.
bad_taint() {
	local v=$1 i flag out=""
	for ((i = 0; i < 64; i++)); do
		((v >> i & 1)) || continue
		flag=${taint_letters:i:1}
		[ -n "$flag" ] || flag="bit$i"
		[[ $taint_allowed == *"$flag"* ]] || out="$out $flag"
	done
	echo "${out# }"
}

# kmemleak must have scanned both guests, unless the kernel command line
# turned it off on purpose or the kernel is the bench kernel, built without
# it. The bench kernel has no lockdep either: its guests record no
# debug_locks (record_kernel_state leaves the file empty).
kmemleak_expected=1 lockdep_expected=1
case " $append " in *" kmemleak=off "*) kmemleak_expected=0 ;; esac
[ "$kernel" = bench ] && kmemleak_expected=0 lockdep_expected=0

if [ -z "$judge" ]; then
kdir=$(kernel_dir)
[ -f "$kdir/.rpcrdma-rs-complete" ] || die "no $kernel kernel (KERNEL_FLAVOR=$kernel scripts/build-kernel.sh)"
server_kdir=$kdir
if [ -n "$server_kernel" ] && [ "$server_kernel" != "$kernel" ]; then
	case "$server_kernel" in test | kasan) ;; *) die "--server-kernel is test or kasan" ;; esac
	server_kdir=$(KERNEL_FLAVOR=$server_kernel kernel_dir)
	[ -f "$server_kdir/.rpcrdma-rs-complete" ] || die "no $server_kernel kernel for the server"
fi
module=$(realpath -m -- "$module")
# The guests mount a fresh /tmp, so a module there would not be the one
# loaded, or would not be found at all.
case "$module" in /tmp | /tmp/*) die "--module $module: the guests cannot see /tmp; put it elsewhere" ;; esac
[ "$transport" = c ] || [ -f "$module" ] || die "no $module (make)"
# hostile_peer.sh runs rust/peer's server in the server guest.
case " $tests " in *" hostile_peer.sh "* | *" nfs_wire_fuzz.sh "*) build_peer || die "building rust/peer failed" ;; esac

# The run directory is shared read-write with both guests; it must not be
# under /tmp, which the guests mount afresh.
out=${out:-$RPCRDMA_RS_CACHE/runs/$(date +%Y%m%d-%H%M%S)-$transport-$rdma}
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)

# dkms.sh installs in the client guest, through DKMS, the package DKMS
# builds here against the test kernel's tree, as `make dkms` would on a
# machine running that kernel: compiling it in a TCG guest takes minutes.
# The module is the users' build (no test hooks), with DKMS's own trees
# in the run directory rather than the machine's.
dkms_env=()
case " $tests " in
*" dkms.sh "*)
	command -v dkms >/dev/null || die "no dkms (run scripts/setup.sh)"
	kver=$(cat "$kdir/include/config/kernel.release")
	dkms_version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$RPCRDMA_RS_TOP/dkms.conf")
	mkdir -p "$out/dkms/tree"
	log "building rpcrdma_rs/$dkms_version with DKMS for $kver (log: $out/dkms-build.log)"
	# `make install` is run on the same copy of the sources first, into a
	# staging directory dkms.sh looks at, with kbuild's own depmod step
	# made a no-op (DEPMOD=true), as it is with a headers package, which
	# has no System.map: the install must run depmod itself. DKMS then
	# builds as it does on a kernel upgrade: no environment, a plain
	# PATH, the tools named only by the dkms.conf dkms-source wrote.
	{
		make -C "$RPCRDMA_RS_TOP" -s dkms-source DKMS_SOURCETREE="$out/dkms/src" \
			RUSTC="$RUSTC" RUSTDOC="$RUSTDOC" BINDGEN="$BINDGEN" &&
			env -u RPCRDMA_RS_TEST_HOOKS make -C "$out/dkms/src/rpcrdma_rs-$dkms_version" -s \
				KDIR="$kdir" RUSTC="$RUSTC" BINDGEN="$BINDGEN" INSTALL_MOD_PATH="$out/dkms/staging" \
				DEPMOD=true install &&
			make -C "$out/dkms/src/rpcrdma_rs-$dkms_version" -s KDIR="$kdir" RUSTC="$RUSTC" \
				BINDGEN="$BINDGEN" clean &&
			dkms --dkmstree "$out/dkms/tree" --sourcetree "$out/dkms/src" add "rpcrdma_rs/$dkms_version" &&
			env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
				dkms --dkmstree "$out/dkms/tree" --sourcetree "$out/dkms/src" \
				build "rpcrdma_rs/$dkms_version" -k "$kver" --kernelsourcedir "$kdir"
	} >"$out/dkms-build.log" 2>&1 || die "DKMS build failed (log: $out/dkms-build.log)"
	dkms_env=("DKMS_TREE=$out/dkms/tree" "DKMS_SOURCETREE=$out/dkms/src" "DKMS_VERSION=$dkms_version"
		"MAKE_INSTALL_ROOT=$out/dkms/staging")
	;;
esac

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
{
	echo "TRANSPORT=$transport"
	echo "RDMA=$rdma"
	echo "TESTS='$tests'"
	echo "CPUS=$cpus"
	echo "SERVER_CPUS=$server_cpus"
	echo "KERNEL=$kernel"
	printf 'APPEND=%q\n' "$append"
	echo "MODULE=$module"
	# The checkout, as both guests see it (rust/peer's server, the
	# module's modprobe.d file).
	echo "SOURCE_TOP=$RPCRDMA_RS_TOP"
	# Addresses on the guests' private virtual link; nothing else routes there.
	echo "SERVER_IP4=10.225.0.1"
	echo "CLIENT_IP4=10.225.0.2"
	echo "SERVER_IP6=fd00:225::1"
	echo "CLIENT_IP6=fd00:225::2"
	echo "SERVER_MAC=52:54:00:e1:00:01"
	echo "CLIENT_MAC=52:54:00:e1:00:02"
	for e in "${dkms_env[@]}"; do printf '%s=%q\n' "${e%%=*}" "${e#*=}"; done
	for e in "${extra_env[@]}"; do printf '%s=%q\n' "${e%%=*}" "${e#*=}"; done
} >"$out/params"
. "$out/params"

# The guests run the tests from a kernel tree, as kselftests
# (guest_client.sh: make run_tests), the run's own copy of them in it.
sel=$(ksft_tree "$kdir" "$out")/rpcrdma_rs
# The source tree is shared explicitly: the guests mount fresh file systems
# over /tmp and parts of /var, where a checkout may live.
vng_common=(--disable-kvm --force-9p --user root --memory 2G
	--verbose --rodir="$RPCRDMA_RS_TOP" --rwdir="$out" --overlay-rwdir=/etc --overlay-rwdir=/var/lib/nfs
	--overlay-rwdir=/srv --overlay-rwdir=/mnt --overlay-rwdir=/run)
[ -z "$append" ] || vng_common+=(--append "$append")
# The guests' root is the host's, over 9p, read-only, and nothing under it
# changes during a run (the run directory, the checkout and the module
# come through mounts of their own): virtme-ng's root mount options again
# (the kernel takes the last rootflags=), with the cache on. Every
# program a test starts is read through it; under TCG this takes about
# a third off each start, and off udev's coldplug at boot.
vng_common+=(--append "rootflags=version=9p2000.L,trans=virtio,access=any,msize=524288,cache=loose")
# The guests boot without udev (scripts/guest-init.sh); HARNESS_UDEV=1
# keeps it.
[ "${HARNESS_UDEV:-0}" = 1 ] && vng_common+=(--append "rpcrdma_rs_udev=1")
# A module from outside the checkout (--module) is shared the same way:
# /var/tmp and /var/cache are fresh in the guests too.
case "$module" in
"$RPCRDMA_RS_TOP"/*) ;;
*) [ "$transport" = c ] || vng_common+=(--rodir="$(dirname "$module")") ;;
esac

guest() { # ROLE NETDEV-OPTIONS MAC
	local role=$1 netdev=$2 mac=$3
	local n=$cpus more=$client_qemu run=$kdir flavor=$kernel las=()
	[ "$role" = server ] && n=$server_cpus more="" run=$server_kdir flavor=${server_kernel:-$kernel}
	# 6.12 with KASAN and 5-level paging reports a wild access that is
	# not one: identify_cpu() clears boot_cpu_data's capabilities,
	# LA57 among them, before it reads them again, and an interrupt in
	# that window sees KASAN_SHADOW_START computed for 4 levels. TCG's
	# CPU has LA57; a KASAN guest boots with 4 levels instead.
	[ "$flavor" = kasan ] && las=(--append no5lvl)
	timeout --kill-after=15 "$limit" "$VNG" --run "$run" "${vng_common[@]}" "${las[@]}" --cpus "$n" --name "rpcrdma-$role" \
		--qemu-opts="-netdev socket,id=n1,$netdev -device virtio-net-pci,netdev=n1,mac=$mac${more:+ $more}" \
		-- bash "$sel/guest_$role.sh" "$out" </dev/null >"$out/$role-console.log" 2>&1
}

log "run $out: transport=$transport rdma=$rdma kernel=$kernel${server_kernel:+ (server: $server_kernel)} cpus=$cpus/$server_cpus tests: $tests"
start=$(date +%s)
# A server guest that ends before it is ready (one panicked booting under
# TCG with two vCPUs) has failed, as one that says so: the client, which
# waits up to ten minutes for it, stops at once.
(
	rc=0
	guest server "listen=127.0.0.1:$port" "$SERVER_MAC" || rc=$?
	[ -e "$out/server-ready" ] || [ -e "$out/server-failed" ] ||
		echo "the server guest ended before it was ready (see server-console.log)" >"$out/server-failed"
	exit "$rc"
) &
server_pid=$!
# The client's QEMU connects at start-up: wait for the listener.
for _ in $(seq 300); do
	ss -ltn "sport = :$port" | grep -q LISTEN && break
	kill -0 "$server_pid" 2>/dev/null || break
	sleep 0.2
done
client_status=0
guest client "connect=127.0.0.1:$port" "$CLIENT_MAC" || client_status=$?
# The server stops once the client is done; make sure it does.
touch "$out/server-stop"
server_status=0
wait "$server_pid" || server_status=$?
log "guests finished in $(($(date +%s) - start)) s (client $client_status, server $server_status)"
else
	client_status=0 server_status=0
	log "judging $out again: transport=$transport rdma=$rdma tests: $tests"
fi

problems=() defects=()
canary_warned=0
[ "$client_status" = 124 ] || [ "$server_status" = 124 ] && problems+=("timed out after $limit s")
if [ "$kernel" = bench ]; then
	log "bench kernel: no kmemleak or lockdep to check"
elif [ "$kmemleak_expected" = 0 ]; then
	log "kmemleak turned off (--append '$append'): not checked"
fi
for role in server client; do
	[ -e "$out/$role-failed" ] && problems+=("$role setup failed: $(cat "$out/$role-failed")")
	if [ ! -s "$out/$role-dmesg.txt" ]; then
		problems+=("$role: no dmesg collected (guest died?)")
		continue
	fi
	# grep's status is left out: a missing console log must not hide what
	# the dmesg file has. The console's carriage returns go, so that the
	# same line from both counts once.
	{ grep -hE "$kernel_problem_re" "$out/$role-dmesg.txt" "$out/$role-console.log" 2>/dev/null || true; } |
		sed 's/[[:space:]]*$//' | sort -u >"$out/$role-kernel-problems.txt"
	# The canary's planted WARNING leaves it too, noted (--canary).
	if [ "$role" = client ] && [ "$canary" = 1 ]; then
		grep -F 'WARNING: harness canary' "$out/client-kernel-problems.txt" >"$out/client-canary.tmp" || true
		[ -s "$out/client-canary.tmp" ] && canary_warned=1
		drop_problems client "$out/client-canary.tmp"
		rm -f "$out/client-canary.tmp"
	fi
	# Allocation failures a test injected on purpose leave the list.
	injected_failures "$out/$role-dmesg.txt" "$out/$role-console.log" | sort -u >"$out/$role-injected.tmp"
	if [ -s "$out/$role-injected.tmp" ]; then
		defects+=("$role: $(wc -l <"$out/$role-injected.tmp") page allocation failures reported while a test injected them")
		drop_problems "$role" "$out/$role-injected.tmp"
	fi
	rm -f "$out/$role-injected.tmp"
	# The server's known defects (known_server_defects) leave the list.
	warn_accepted=0
	if [ "$role" = server ]; then
		for i in "${!kd_kind[@]}"; do
			[ "${kd_kind[$i]}" = warn ] || continue
			accepted_warnings "${kd_report[$i]}" "${kd_trace[$i]}" \
				"$out/$role-dmesg.txt" "$out/$role-console.log" | sort -u >"$out/$role-accepted.tmp"
			[ -s "$out/$role-accepted.tmp" ] || continue
			warn_accepted=1
			while IFS= read -r line; do defects+=("server: $line (${kd_reason[$i]})"); done <"$out/$role-accepted.tmp"
			drop_problems "$role" "$out/$role-accepted.tmp"
		done
		rm -f "$out/$role-accepted.tmp"
	fi
	if [ -s "$out/$role-kernel-problems.txt" ]; then
		problems+=("$role kernel: $(head -3 "$out/$role-kernel-problems.txt" | tr '\n' ' ')")
	fi
	# The guest records these next to its dmesg, also when it failed.
	taint=$(cat "$out/$role-tainted" 2>/dev/null || true)
	if ! [[ $taint =~ ^[0-9]+$ ]]; then
		problems+=("$role: kernel taint not recorded")
	elif [ "$warn_accepted" = 1 ] && [ "$(bad_taint "$taint")" = W ] &&
		! grep -q 'WARNING:' "$out/$role-kernel-problems.txt"; then
		defects+=("$role: kernel tainted W by the accepted WARNING only")
	elif [ -n "$(bad_taint "$taint")" ]; then
		problems+=("$role: kernel tainted $(bad_taint "$taint") (tainted=$taint; only $taint_allowed allowed)")
	fi
	debug_locks=$(cat "$out/$role-debug-locks" 2>/dev/null || true)
	case "$debug_locks" in
	1) ;;
	0) problems+=("$role: lockdep turned itself off (debug_locks 0)") ;;
	*) [ "$lockdep_expected" = 0 ] && [ -z "$debug_locks" ] ||
		problems+=("$role: no lockdep state (/proc/lockdep_stats debug_locks '$debug_locks')") ;;
	esac
	# A guest that failed to set up never scans; that failure is reported.
	if [ "$kmemleak_expected" = 1 ] && [ ! -e "$out/$role-failed" ]; then
		kmemleak_rc=$(cat "$out/$role-kmemleak.rc" 2>/dev/null || true)
		if [ "$kmemleak_rc" != 0 ]; then
			problems+=("$role: kmemleak did not scan (status ${kmemleak_rc:-none}): $(head -2 "$out/$role-kmemleak.txt" 2>/dev/null | tr '\n' ' ')")
		elif [ -s "$out/$role-kmemleak.txt" ]; then
			# Objects a leak entry explains leave the report; any
			# other fails the run.
			cp "$out/$role-kmemleak.txt" "$out/$role-leaks.tmp"
			if [ "$role" = server ]; then
				for i in "${!kd_kind[@]}"; do
					[ "${kd_kind[$i]}" = leak ] || continue
					n=$(grep -c '^unreferenced object' "$out/$role-leaks.tmp" || true)
					unexplained_leaks "${kd_trace[$i]}" "$out/$role-leaks.tmp" >"$out/$role-leaks.tmp2"
					mv "$out/$role-leaks.tmp2" "$out/$role-leaks.tmp"
					k=$((n - $(grep -c '^unreferenced object' "$out/$role-leaks.tmp" || true)))
					[ "$k" = 0 ] || defects+=("$role: kmemleak: $k objects (${kd_reason[$i]})")
				done
			fi
			if grep -q '^unreferenced object' "$out/$role-leaks.tmp"; then
				problems+=("$role: kmemleak: $(grep -m1 -A1 '^unreferenced object' "$out/$role-leaks.tmp" | tr '\n' ' ')")
			fi
			rm -f "$out/$role-leaks.tmp"
		fi
		if grep -q 'kmemleak: Kernel memory leak detector disabled' "$out/$role-dmesg.txt"; then
			problems+=("$role: kmemleak disabled itself during the run")
		fi
	fi
done
[ -e "$out/client-unload-failed" ] && problems+=("client: transport did not unload")
[ -e "$out/client-rpcrdma-loaded" ] &&
	problems+=("client: the kernel's rpcrdma was loaded in an rs run (after: $(tr '\n' ' ' <"$out/client-rpcrdma-loaded"))")

# Each test must have exited 0 unless it reported a failed case, written
# nothing to stderr, and produced TAP with its whole plan; each skip must
# be a known one.
passed=0 skipped=0 failed=0
accepted=()
: >"$out/failures.txt"
for t in $tests; do
	f=$out/tap/$t.tap
	if [ -s "$out/tap/$t.err" ]; then
		problems+=("$t wrote to stderr: $(head -3 "$out/tap/$t.err" | tr '\n' ' ')")
	fi
	if [ ! -s "$f" ]; then
		problems+=("$t produced no TAP")
		continue
	fi
	plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$f" | head -1)
	ran=$(grep -cE '^(not )?ok ' "$f" || true)
	status=$(awk -v t="$t" '$1 == t && $2 == "exit" { s = $3 } END { print s }' "$out/tap/status" 2>/dev/null || true)
	# A test skipped whole (KTAP "1..0 # SKIP CASE: REASON", exit status
	# KSFT_SKIP) is one skipped case, CASE, which must be a known skip.
	skip_all=$(sed -n 's/^1\.\.0 # SKIP \(.*\)$/\1/p' "$f" | head -1)
	if [ -n "$skip_all" ]; then
		desc=${skip_all%%: *}
		if [ "$status" != 4 ] || [ "$ran" != 0 ]; then
			problems+=("$t: skipped whole, but exited ${status:-?} with $ran cases")
		elif why=$(known_skip "$t: $desc"); then
			accepted+=("$t: $desc ($why)")
			skipped=$((skipped + 1))
		else
			problems+=("$t: skip not in known_skips: '$desc' (# SKIP ${skip_all#*: })")
		fi
		continue
	fi
	[ "$plan" = "$ran" ] || problems+=("$t: planned ${plan:-?} cases, reported $ran")
	[ "$plan" = 0 ] && problems+=("$t: planned no cases")
	grep -E '^not ok ' "$f" | sed "s|^|$t: |" >>"$out/failures.txt" || true
	if [ -z "$status" ]; then
		problems+=("$t: no exit status recorded")
	elif [ "$status" != 0 ] && ! grep -qE '^not ok ' "$f"; then
		problems+=("$t exited $status without a failed case")
	fi
	passed=$((passed + $(grep -E '^ok ' "$f" | grep -vc '# SKIP' || true)))
	failed=$((failed + $(grep -cE '^not ok ' "$f" || true)))
	# Skips at the top level and in subtests (indented TAP) alike.
	while IFS=$'\t' read -r level desc reason; do
		read -r desc <<<"$desc"
		if why=$(known_skip "$t: $desc"); then
			accepted+=("$t: $desc ($why)")
			[ "$level" = top ] && skipped=$((skipped + 1))
		else
			problems+=("$t: skip not in known_skips: '$desc' (# SKIP $reason)")
		fi
	done < <(sed -nE -e 's/^ok [0-9]+(.*)# SKIP ?(.*)$/top\t\1\t\2/p' \
		-e 's/^[[:space:]]+ok [0-9]+(.*)# SKIP ?(.*)$/sub\t\1\t\2/p' "$f")
done

# The canary's planted data error must be its one failed case: then it
# leaves the verdict, and the self-test is a passed case.
if [ "$canary" = 1 ]; then
	canary_failed=$(grep -c '^harness_canary.sh: ' "$out/failures.txt" || true)
	if [ "$canary_warned" = 1 ] && [ "$canary_failed" = 1 ] &&
		grep -q '^harness_canary.sh: not ok [0-9]* 1 MiB written and read back matches' "$out/failures.txt"; then
		grep -v '^harness_canary.sh: ' "$out/failures.txt" >"$out/failures.tmp" || true
		mv "$out/failures.tmp" "$out/failures.txt"
		failed=$((failed - 1)) passed=$((passed + 1))
		log "harness self-test: the planted WARNING and data error were caught"
	else
		problems+=("harness self-test: the planted faults were not caught (the WARNING: $canary_warned; the canary's failed cases: $canary_failed, 1 expected)")
	fi
fi

# A harness problem counts as a failed case of its own.
failed=$((failed + ${#problems[@]}))
{
	echo "passed=$passed"
	echo "failed=$failed"
	echo "skipped=$skipped"
} >"$out/summary"
: >"$out/problems.txt"
[ "${#problems[@]}" = 0 ] || printf '%s\n' "${problems[@]}" >"$out/problems.txt"
: >"$out/accepted-skips.txt"
[ "${#accepted[@]}" = 0 ] || printf '%s\n' "${accepted[@]}" >"$out/accepted-skips.txt"
: >"$out/accepted-defects.txt"
[ "${#defects[@]}" = 0 ] || printf '%s\n' "${defects[@]}" >"$out/accepted-defects.txt"

for t in $tests; do
	[ -s "$out/tap/$t.tap" ] || continue
	# (A TAP file without a single case must not stop the report here.)
	sed "s|^|  [$transport/$rdma] $t: |" "$out/tap/$t.tap" | grep -E '(not )?ok |# ' >&2 || true
done
# Where the run's time went (older runs recorded no seconds).
times=$(awk '$2 == "exit" && $4 != "" { printf "%s%s %ss", sep, $1, $4; sep = ", " }' \
	"$out/tap/status" 2>/dev/null || true)
[ -z "$times" ] || log "$transport/$rdma test times: $times"
for s in "${accepted[@]}"; do log "accepted skip (known_skips): $s"; done
for d in "${defects[@]}"; do log "accepted: $d"; done
for p in "${problems[@]}"; do log "PROBLEM: $p"; done
log "$transport/$rdma: $passed passed, $failed failed, $skipped skipped (logs: $out)"
[ "$failed" = 0 ]
