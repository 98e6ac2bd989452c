#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The two-guest harness: boots an NFS server guest and a client guest from
# the cached test kernel under QEMU (TCG), links them with a socket netdev
# over the host's loopback, and runs selftests in the client guest.
#
#   scripts/harness.sh [--transport c|rs] [--rdma rxe|siw] [--tests "a.sh b.sh"]
#                      [--out DIR] [--timeout SECONDS] [--env NAME=VALUE]...
#                      [--append KERNEL-ARGS]
#
# Writes everything into the run directory (default under the cache):
# params, both guests' logs and dmesg, one TAP file per test. Exits non-zero
# when a test failed, a guest failed to set up or the time ran out, or
# either kernel logged an oops, BUG, WARN, lockdep splat or kmemleak report.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

transport=c
rdma=rxe
tests="nfs_data_integrity.sh nfs_workloads.sh nfs_inline_thresholds.sh connect_probe.sh device_tracking.sh"
out=""
limit=${HARNESS_TIMEOUT:-1200}
extra_env=()
# Debugging aids on the guests' command line (the kernel has the rest built in).
append="slub_debug=FZP kmemleak=on"
while [ $# -gt 0 ]; do
	case "$1" in
	--transport) transport=$2; shift 2 ;;
	--rdma) rdma=$2; shift 2 ;;
	--tests) tests=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--timeout) limit=$2; shift 2 ;;
	--env) extra_env+=("$2"); shift 2 ;;
	--append) append=$2; shift 2 ;;
	*) die "unknown argument $1" ;;
	esac
done
case "$transport" in c | rs) ;; *) die "--transport is c or rs" ;; esac
case "$rdma" in rxe | siw) ;; *) die "--rdma is rxe or siw" ;; esac

kdir=$(kernel_dir)
[ -f "$kdir/.rpcrdma-rs-complete" ] || die "no test kernel (scripts/build-kernel.sh)"
module=$RPCRDMA_RS_TOP/rpcrdma_rs.ko
[ "$transport" = c ] || [ -f "$module" ] || die "no $module (make)"

# The run directory is shared read-write with both guests; it must not be
# under /tmp, which the guests mount afresh.
out=${out:-$RPCRDMA_RS_CACHE/runs/$(date +%Y%m%d-%H%M%S)-$transport-$rdma}
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
{
	echo "TRANSPORT=$transport"
	echo "RDMA=$rdma"
	echo "TESTS='$tests'"
	echo "MODULE=$module"
	# Addresses on the guests' private virtual link; nothing else routes there.
	echo "SERVER_IP4=10.225.0.1"
	echo "CLIENT_IP4=10.225.0.2"
	echo "SERVER_IP6=fd00:225::1"
	echo "CLIENT_IP6=fd00:225::2"
	echo "SERVER_MAC=52:54:00:e1:00:01"
	echo "CLIENT_MAC=52:54:00:e1:00:02"
	for e in "${extra_env[@]}"; do printf '%s=%q\n' "${e%%=*}" "${e#*=}"; done
} >"$out/params"
. "$out/params"

sel=$RPCRDMA_RS_TOP/selftests/rpcrdma_rs
# The source tree is shared explicitly: the guests mount fresh file systems
# over /tmp and parts of /var, where a checkout may live.
vng_common=(--run "$kdir" --disable-kvm --force-9p --user root --memory 2G --cpus 1
	--verbose --rodir="$RPCRDMA_RS_TOP" --rwdir="$out" --overlay-rwdir=/etc --overlay-rwdir=/var/lib/nfs
	--overlay-rwdir=/srv --overlay-rwdir=/mnt --overlay-rwdir=/run
	--append "$append")

guest() { # ROLE NETDEV-OPTIONS MAC
	local role=$1 netdev=$2 mac=$3
	timeout --kill-after=15 "$limit" "$VNG" "${vng_common[@]}" --name "rpcrdma-$role" \
		--qemu-opts="-netdev socket,id=n1,$netdev -device virtio-net-pci,netdev=n1,mac=$mac" \
		-- bash "$sel/guest_$role.sh" "$out" </dev/null >"$out/$role-console.log" 2>&1
}

log "run $out: transport=$transport rdma=$rdma tests: $tests"
start=$(date +%s)
guest server "listen=127.0.0.1:$port" "$SERVER_MAC" &
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

problems=()
[ "$client_status" = 124 ] || [ "$server_status" = 124 ] && problems+=("timed out after $limit s")
for role in server client; do
	[ -e "$out/$role-failed" ] && problems+=("$role setup failed: $(cat "$out/$role-failed")")
	[ -s "$out/$role-dmesg.txt" ] || problems+=("$role: no dmesg collected (guest died?)")
	# Kernel reports that fail a run, from the log or the console.
	if grep -hE 'BUG:|WARNING:|Oops|kernel BUG|general protection fault|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|DEBUG_LOCKS_WARN_ON|bad unlock balance|KFENCE:|UBSAN:|Kernel panic|rust_panic|panicked at|unreferenced object' \
		"$out/$role-dmesg.txt" "$out/$role-console.log" 2>/dev/null | sort -u >"$out/$role-kernel-problems.txt" &&
		[ -s "$out/$role-kernel-problems.txt" ]; then
		problems+=("$role kernel: $(head -3 "$out/$role-kernel-problems.txt" | tr '\n' ' ')")
	fi
	if [ -s "$out/$role-kmemleak.txt" ] && ! grep -q unavailable "$out/$role-kmemleak.txt"; then
		problems+=("$role: kmemleak: $(head -2 "$out/$role-kmemleak.txt" | tr '\n' ' ')")
	fi
done
[ -e "$out/client-unload-failed" ] && problems+=("client: transport did not unload")

# Each test must have produced TAP with its whole plan.
for t in $tests; do
	f=$out/tap/$t.tap
	if [ ! -s "$f" ]; then
		problems+=("$t produced no TAP")
		continue
	fi
	plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$f" | head -1)
	ran=$(grep -cE '^(not )?ok ' "$f" || true)
	[ "$plan" = "$ran" ] || problems+=("$t: planned ${plan:-?} cases, reported $ran")
	grep -E '^not ok ' "$f" | sed "s|^|$t: |" >>"$out/failures.txt" || true
done

passed=$(cat "$out"/tap/*.tap 2>/dev/null | grep -E '^ok ' | grep -vc '# SKIP' || true)
skipped=$(cat "$out"/tap/*.tap 2>/dev/null | grep -cE '^ok .*# SKIP' || true)
failed=$(cat "$out"/tap/*.tap 2>/dev/null | grep -cE '^not ok ' || true)
# A harness problem counts as a failed case of its own.
failed=$((failed + ${#problems[@]}))
{
	echo "passed=$passed"
	echo "failed=$failed"
	echo "skipped=$skipped"
} >"$out/summary"

for t in $tests; do
	[ -s "$out/tap/$t.tap" ] && sed "s|^|  [$transport/$rdma] $t: |" "$out/tap/$t.tap" | grep -E '(not )?ok |# ' >&2
done
for p in "${problems[@]}"; do log "PROBLEM: $p"; done
log "$transport/$rdma: $passed passed, $failed failed, $skipped skipped (logs: $out)"
[ "$failed" = 0 ]
