#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rpcrdma_rs connects to the kernel's NFS/RDMA server through the RDMA
# connection manager with RFC 8797 private data, reads the server's,
# negotiates inline thresholds, and has an NFSv3 NULL call answered in
# inline RDMA_MSGs, requested through the debugfs connection probe: a test
# hook, in the module only when built with RPCRDMA_RS_TEST_HOOKS=y (as
# scripts/build-module.sh builds it). A call sent as transport version 2 is
# refused with RDMA_ERROR ERR_VERS naming version 1. Failed attempts fail
# cleanly.
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

require_rs_transport "connection probe"

probe=/sys/kernel/debug/rpcrdma_rs/connect
report() { cat "$probe"; }
has() { report | grep -qF -- "$1"; }
attempt() { echo "$1 $2" >"$probe"; }
# A failed attempt must fail the write, and say why. The write error echo
# reports is expected: it does not go to the test's stderr.
attempt_fails() { ! attempt "$1" "$2" 2>/dev/null && has "outcome: failed while $3"; }
# The report shows the last attempt only, naming its peer: the IPv6 check
# looks at that report alone, so text left from the IPv4 attempt cannot
# pass it.
ipv6_connected() {
	local r
	r=$(report) || return 1
	grep -qxF "peer: $SERVER_IP6 20049" <<<"$r" && grep -qxF "outcome: connected" <<<"$r" &&
		grep -qF "inline send 4096 receive 4096" <<<"$r"
}

lsmod | grep -q '^rpcrdma_rs\b' || insmod "$MODULE"
if [ ! -e "$probe" ]; then
	tap_plan 1
	tap_not_ok "connection probe present (is $MODULE built with RPCRDMA_RS_TEST_HOOKS=y?)"
	tap_exit
fi
tap_plan 15
tap_check "no attempt reported before the first" has "no connection attempted"
tap_check "connect to $SERVER_IP4 port 20049" attempt "$SERVER_IP4" 20049
report | sed 's/^/# /'
tap_check "connected through $(rdma_dev)" bash -c "grep -q 'outcome: connected' $probe && grep -q 'device: $(rdma_dev)' $probe"
# Version 1, remote invalidation (R), 4 KiB send and receive: 03 03. R
# is not offered over siw, whose invalidation does not check the key.
rflag=01
[ "$RDMA" = siw ] && rflag=00
tap_check "sent RFC 8797 private data f6ab0e18 01 $rflag 03 03" has "sent private data: f6 ab 0e 18 01 $rflag 03 03"
# The Linux server answers version 1, R clear, 4 KiB both ways: the
# report's line of what the peer sent, from its first byte (what follows
# is padding: the IB CM hands over 196 bytes of private data).
# Only that line, whole: over siw the client sends the same eight bytes,
# and its "sent private data:" line must not pass for the server's.
tap_check "server's private data read: f6ab0e18 01 00 03 03" \
	grep -qxE "peer private data \([0-9]+ bytes\): f6 ab 0e 18 01 00 03 03( [0-9a-f]{2})*" "$probe"
tap_check "peer's sizes decoded" has "peer: send 4096 receive 4096 remote invalidation false"
tap_check "negotiated inline thresholds 4096/4096" has "inline send 4096 receive 4096"
# An RPC in an inline RDMA_MSG: Send, the server's Receive, its reply.
tap_check "NFSv3 NULL call answered over the connection" \
	grep -qE "null call: xid 0x[0-9a-f]{8} reply [0-9]+ bytes, accepted, credits granted [1-9]" "$probe"
# RFC 8166 section 5.3.4: a responder refuses a version it does not
# support with ERR_VERS, giving the range it does.
tap_check "a call sent as version 2 is answered" attempt "$SERVER_IP4" "20049 vers2"
report | grep '^null call' | sed 's/^/# /'
tap_check "refused with RDMA_ERROR ERR_VERS, versions 1 to 1" \
	grep -qE "null call: xid 0x[0-9a-f]{8} as version 2: RDMA_ERROR ERR_VERS 28 bytes, versions 1 to 1$" "$probe"
tap_check "connect over IPv6 to $SERVER_IP6" attempt "$SERVER_IP6" 20049
tap_check "IPv6 attempt connected and negotiated" ipv6_connected
report | sed 's/^/# /'
tap_check "a port with no listener is refused cleanly" attempt_fails "$SERVER_IP4" 20050 connecting
report | sed 's/^/# /'
tap_check "an address nobody has fails cleanly" attempt_fails 10.225.0.99 20049 resolving
report | sed 's/^/# /'
tap_check "malformed request rejected" bash -c "! echo 'nonsense' >$probe 2>/dev/null"
tap_exit
