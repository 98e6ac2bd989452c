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
# Each test as the kernel's selftests run: make run_tests in the kernel
# tree the harness put this directory in, one test at a time (TEST_PROGS),
# so that what one leaves behind is cleared before the next. kselftest's
# runner gives each the timeout in "settings" (TEST_TIMEOUT overrides it)
# and nests its TAP in its own; ksft_unwrap takes it out for judging.
ksft=$(cd "$SELFTEST_DIR/.." && pwd)
# The runner writes through /dev/stdout, which virtme-ng links to its
# console port for the guest's script: the links of a usual /dev instead,
# so that it writes where its caller's stdout goes.
for n in 0:stdin 1:stdout 2:stderr; do
	ln -sfn "/proc/self/fd/${n%%:*}" "/dev/${n#*:}"
done
[ -z "${TEST_TIMEOUT:-}" ] || export kselftest_override_timeout=$TEST_TIMEOUT
for t in $TESTS; do
	set +x
	echo "=== $t"
	start=$SECONDS
	# Through a pipe: the runner writes its log lines and the test's TAP
	# to /dev/stdout opened again, which, were it the file on the run
	# directory's 9p mount, would write at an offset of its own.
	RPCRDMA_RS_RUN_DIR=$RUN_DIR RPCRDMA_RS_STDERR_DIR=$RUN_DIR/tap \
		make -s --no-print-directory -C "$ksft" TARGETS=rpcrdma_rs TEST_PROGS="$t" run_tests \
		2>>"$RUN_DIR/tap/$t.err" | cat >"$RUN_DIR/tap/$t.ksft"
	rc=$(ksft_result "$t" <"$RUN_DIR/tap/$t.ksft")
	ksft_unwrap "$t" <"$RUN_DIR/tap/$t.ksft" >"$RUN_DIR/tap/$t.tap"
	# The seconds each test took, for the run's time budget.
	echo "$t exit $rc $((SECONDS - start))" >>"$RUN_DIR/tap/status"
	# The kernel's rpcrdma must never load in an rpcrdma_rs run; the
	# harness fails the run, naming the tests after which it was loaded.
	if [ "$TRANSPORT" = rs ] && [ -e /sys/module/rpcrdma ]; then
		echo "$t" >>"$RUN_DIR/client-rpcrdma-loaded"
	fi
	# A test that ran out of time may leave mounts behind: they would
	# change what the next test sees.
	umount -a -f -l -t nfs,nfs4 2>/dev/null
	cat "$RUN_DIR/tap/$t.ksft"
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
