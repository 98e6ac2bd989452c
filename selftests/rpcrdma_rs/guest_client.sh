#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The client guest: the transport under test, then each selftest in turn,
# each writing TAP to the run directory; then unload and leak checks.
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"
exec >"$RUN_DIR/client.log" 2>&1
set -x

fail() {
	echo "client: $*"; echo "$*" >"$RUN_DIR/client-failed"
	record_kernel_state client; dmesg >"$RUN_DIR/client-dmesg.txt"
	touch "$RUN_DIR/client-done"; exit 1
}

setup_link "$CLIENT_MAC" "$CLIENT_IP4" "$CLIENT_IP6" >/dev/null || fail "link setup"
echo 'clear' >/sys/kernel/debug/kmemleak 2>/dev/null
load_transport || fail "loading transport $TRANSPORT"
# Without the class a proto=rdma mount would load the kernel's rpcrdma by
# itself, and still show "xprt: rdma".
rdma_xprt_registered || fail "transport $TRANSPORT registered no rdma transport class"
# Up to ten minutes for the server to be ready, unless it failed: by its
# own account, or (written by the host) by ending before it was ready, as
# a guest that panicked booting does.
for ((i = 0; i < 6000; i++)); do
	[ -e "$RUN_DIR/server-failed" ] && fail "server failed: $(cat "$RUN_DIR/server-failed")"
	[ -e "$RUN_DIR/server-ready" ] && break
	sleep 0.1
done
[ -e "$RUN_DIR/server-ready" ] || fail "server not ready"

mkdir -p "$RUN_DIR/tap"
# The seconds from this guest's start to its first test (both guests'
# boot and set-up), for the run's time table.
read -r up _ </proc/uptime
echo "boot ${up%.*}" >>"$RUN_DIR/tap/status"
for t in $TESTS; do
	set +x
	echo "=== $t"
	start=$SECONDS
	# Each test gets TEST_TIMEOUT, 1200 s by default: twice what the
	# longest (nfs_data_integrity.sh with four NFS versions, hostile_peer.sh)
	# take on a fast host under TCG, a little more than they take on a slow
	# one.
	timeout "${TEST_TIMEOUT:-1200}" bash "$SELFTEST_DIR/$t" "$RUN_DIR" >"$RUN_DIR/tap/$t.tap" 2>"$RUN_DIR/tap/$t.err"
	# The seconds each test took, for the run's time budget.
	echo "$t exit $? $((SECONDS - start))" >>"$RUN_DIR/tap/status"
	# The kernel's rpcrdma must never load in an rpcrdma_rs run; the
	# harness fails the run, naming the tests after which it was loaded.
	if [ "$TRANSPORT" = rs ] && [ -e /sys/module/rpcrdma ]; then
		echo "$t" >>"$RUN_DIR/client-rpcrdma-loaded"
	fi
	# A test that ran out of time may leave mounts behind: they would
	# change what the next test sees.
	umount -a -f -l -t nfs,nfs4 2>/dev/null
	cat "$RUN_DIR/tap/$t.tap"
	set -x
done

# Whatever the tests left mounted goes now, then the transport, cleanly.
umount -a -t nfs,nfs4 2>/dev/null
if lsmod | grep -q "^rpcrdma_rs\b\|^rpcrdma\b"; then
	unload_transport || echo "transport unload failed" >"$RUN_DIR/client-unload-failed"
fi
kmemleak_report >"$RUN_DIR/client-kmemleak.txt"
echo $? >"$RUN_DIR/client-kmemleak.rc"
record_kernel_state client
dmesg >"$RUN_DIR/client-dmesg.txt"
touch "$RUN_DIR/client-done"
