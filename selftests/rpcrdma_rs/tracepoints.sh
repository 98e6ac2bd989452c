#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rpcrdma_rs's tracepoints (rpcrdma_rs:* in tracefs; Documentation/usage.rst,
# "Tracepoints") fire with the right fields during an NFSv3 mount over
# rdma: sunrpc's request for each connection (with its delay), the
# connection's attempt (server, device, result, the credits it asks for),
# the server's RFC 8797 private data and the thresholds chosen, the first
# credit grant, the end of each connection, for the client's own close
# both after a disconnect injected through fail_sunrpc and at unmount;
# every Call marshalled (how it and its Reply go) with each chunk segment
# it advertised, and every reply. A healthy mount traces no reply, work
# completion, mapping or memory registration error; a region that cannot
# be mapped (the test hook fail_maps) traces the one. (The backchannel's
# events and the reconnect backoff are checked by nfs_load.sh, a failed
# Receive's by hostile_peer.sh.)
# The events are read from a tracefs instance of the test's own, so the
# global trace buffer is left alone; the instance goes at the end.
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

require_rs_transport "tracepoints"
require_rdma_xprt "tracepoints"

LOG_DIR=$RUN_DIR/tracepoints
log=$LOG_DIR/tools.log
mkdir -p "$LOG_DIR"
mnt=/mnt/nfs-trace
data=/tmp/tracepoints.bin
xprts=/sys/kernel/debug/rpcrdma_rs/xprts
fail_sunrpc=/sys/kernel/debug/fail_sunrpc

# Whatever happens: no injection armed, no mount, the instance and its
# buffer gone (the events off with it), tracefs as it was.
cleanup() {
	[ -d "$fail_sunrpc" ] && echo 0 >"$fail_sunrpc/times"
	if mounted "$mnt"; then
		timeout -s KILL 60 umount "$mnt" || umount -f -l "$mnt"
	fi
	trace_stop
	rm -f "$data"
} >>"$log" 2>&1
trap cleanup EXIT
trap 'exit 143' TERM INT

tap_plan 14

# rs_transports_gone: no rpcrdma_rs transport is left (an earlier test's
# may still be being destroyed), so that every event traced here is this
# test's mount's. Waits up to 30 s.
rs_transports_gone() {
	local i
	for ((i = 0; i < 300; i++)); do
		[ "$(awk '$1 == "transports" { print $2 }' "$xprts" 2>/dev/null)" = 0 ] && return 0
		sleep 0.1
	done
	tap_diag "rpcrdma_rs transports left: $(tr '\n' ' ' <"$xprts" 2>/dev/null)"
	return 1
}

# Leaves the file on the server: its reads are the traffic of the
# injection below.
write_read_back() {
	head -c 65536 /dev/urandom >"$data" && cp "$data" "$mnt/trace.bin" && drop_caches &&
		cmp "$data" "$mnt/trace.bin"
}

# The debugfs report's account of the connection, for the cross-checks.
requested="" granted=""
read_report() {
	requested=$(rs_xprt_field credits_requested 2>>"$log") &&
		granted=$(rs_xprt_field credits_granted 2>>"$log")
}

connect_traced() {
	local l
	l=$(trace_first connect)
	[ -n "$l" ] && trace_expect "$l" peer "$SERVER_IP4" device "$(rdma_dev)" result 0 \
		credits "${requested:-?}"
}

# The Linux server sends version 1 private data, R clear, 4 KiB both ways
# (as connect_probe.sh reads it), and the client offers 4 KiB: 4096/4096.
private_data_traced() {
	local l
	l=$(trace_first private_data)
	[ -n "$l" ] || return 1
	trace_expect "$l" peer "$SERVER_IP4" valid 1 peer_send 4096 peer_recv 4096 peer_rinv 0 \
		inline_send 4096 inline_recv 4096 || return 1
	[ "$(trace_last_field "$l" status)" = received ] || {
		tap_diag "status is not 'received' in: $l"
		return 1
	}
}

# A connection starts with one credit; the server's first reply grants
# what the report shows.
credits_traced() {
	local l
	l=$(trace_first credits)
	[ -n "$l" ] && trace_expect "$l" peer "$SERVER_IP4" old 1 new "${granted:-?}"
}

# closes: the number of disconnect events with reason "closed".
closes() { trace_events disconnect | grep -c ' reason=closed$'; }
# connects_ok: successful connect events.
connects_ok() { trace_events connect | grep -c ' result=0 '; }

# The next transmission closes the connection (xprt_inject_disconnect),
# once; the mount reconnects (its connect count rises) within 60 s, reads
# that go to the server being the traffic. Then the trace has the close
# of the first connection and a second successful connect, in that order.
inject_disconnect() {
	local before after deadline=$((SECONDS + 60)) seq
	[ -d "$fail_sunrpc" ] || {
		tap_diag "no $fail_sunrpc (CONFIG_FAIL_SUNRPC)"
		return 1
	}
	before=$(mountstats_field "$mnt" 3)
	arm_disconnect || return 1
	while ((SECONDS < deadline)); do
		timeout -s KILL 30 dd if="$mnt/trace.bin" of=/dev/null bs=4k iflag=direct \
			status=none 2>>"$log"
		after=$(mountstats_field "$mnt" 3)
		[ "${after:-0}" -gt "${before:-0}" ] 2>/dev/null && break
		sleep 1
	done
	echo 0 >"$fail_sunrpc/times"
	tap_diag "connections: $before before the injection, $after after"
	[ "${after:-0}" -gt "${before:-0}" ] 2>/dev/null || return 1
	# connect and disconnect events, in order: "C" a success, "D" a close.
	seq=$(sed -n -e 's/^.* rpcrdma_rs_connect: .* result=0 .*$/C/p' \
		-e 's/^.* rpcrdma_rs_disconnect: .* reason=closed$/D/p' "$trace_inst/trace" | tr -d '\n')
	tap_diag "successful connects (C) and closes (D), in order: $seq"
	[[ $seq == CDC* ]] || return 1
	local l
	l=$(trace_events disconnect | head -1)
	[ "$l" = "peer=$SERVER_IP4 reason=closed" ] || {
		tap_diag "first disconnect event: $l"
		return 1
	}
}

# After the unmount each connection's end was traced once: as many closes
# as successful connects, all to the server. The transport is destroyed
# from a work item after the unmount: waits up to 30 s.
all_ends_traced() {
	local i c d
	for ((i = 0; i < 300; i++)); do
		c=$(connects_ok) d=$(closes)
		[ "$c" -ge 1 ] && [ "$c" = "$d" ] && break
		sleep 0.1
	done
	tap_diag "successful connects $c, closes $d"
	[ "$c" -ge 1 ] && [ "$c" = "$d" ] || return 1
	all_name_server disconnect
}

# all_name_server EVENT: every rpcrdma_rs_EVENT traced names the server
# first (peer=...); says which does not.
all_name_server() {
	local l
	while IFS= read -r l; do
		[[ $l == "peer=$SERVER_IP4 "* ]] && continue
		tap_diag "an rpcrdma_rs_$1 event names another peer: $l"
		return 1
	done < <(trace_events "$1")
}

# sunrpc asked for each connection before it was attempted: an
# op_connect event (the server's address) before every connect event, the
# first with no delay.
op_connect_traced() {
	local seq l
	trace_complete || return 1
	seq=$(sed -n -e 's/^.* rpcrdma_rs_op_connect: .*$/O/p' \
		-e 's/^.* rpcrdma_rs_connect: .*$/C/p' "$trace_inst/trace" | tr -d '\n')
	tap_diag "connection requests (O) and attempts (C), in order: $seq"
	[[ $seq =~ ^(OC)+$ ]] || return 1
	l=$(trace_first op_connect)
	trace_expect "$l" peer "$SERVER_IP4" delay_ms 0 || return 1
	all_name_server op_connect
}

# marshal_summary: one line per marshal event, "XID RTYPE WTYPE HDR
# INLINE", in trace order; chunk_summary: "XID KIND POS LENGTH" per chunk
# event.
marshal_summary() {
	trace_events marshal | awk -v peer="$SERVER_IP4" '{
		delete f
		for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		if (f["peer"] != peer) { print "bad peer " $0; next }
		print f["xid"], f["rtype"], f["wtype"], f["hdr"], f["inline"]
	}'
}
chunk_summary() {
	trace_events chunk | awk -v peer="$SERVER_IP4" '{
		delete f
		for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		if (f["peer"] != peer) { print "bad peer " $0; next }
		print f["xid"], f["kind"], f["pos"], f["length"]
	}'
}

# The Calls of the mount were traced as they went: the 64 KiB file's
# WRITE with a Read chunk at a non-zero, 4-aligned XDR position, READs
# with a Write chunk; a header of 28 bytes for a Call with no chunk,
# more with one. Each chunk event belongs to a Call traced with that
# chunk; each Call with a chunk traced at least one segment of it.
marshal_traced() {
	local m c
	trace_complete || return 1
	m=$(marshal_summary) c=$(chunk_summary)
	printf '%s\n' "$m" >"$LOG_DIR/marshal.txt"
	printf '%s\n' "$c" >"$LOG_DIR/chunks.txt"
	tap_diag "$(wc -l <<<"$m") marshal events ($(grep -c ' read ' <<<"$m") with a Read chunk, $(grep -c ' write ' <<<"$m") with a Write chunk), $(wc -l <<<"$c") chunk events"
	awk '
		FNR == NR {
			if ($1 == "bad") { print "marshal event of another peer"; bad = 1; next }
			rt[$1] = $2; wt[$1] = $3
			if ($2 == "inline" && $3 == "inline" && $4 != 28) { print "no chunk but hdr=" $4 ": " $0; bad = 1 }
			if (($2 != "inline" || $3 != "inline") && $4 <= 28) { print "chunks but hdr=" $4 ": " $0; bad = 1 }
			if ($2 == "read") reads++
			if ($3 == "write") writes++
			next
		}
		{
			if ($1 == "bad") { print "chunk event of another peer"; bad = 1; next }
			if (!($1 in rt)) { print "chunk of an untraced Call: " $0; bad = 1; next }
			if ($2 == "read") {
				if (rt[$1] != "read" && rt[$1] != "long") { print "read segment of a Call without a Read chunk: " $0; bad = 1 }
				if (rt[$1] == "read" && ($3 == 0 || $3 % 4 != 0)) { print "Read chunk at position " $3 ": " $0; bad = 1 }
				seen[$1 " read"] = 1
			} else {
				if ($3 != 0) { print "position " $3 " on a written chunk: " $0; bad = 1 }
				if ($2 == "write" || $2 == "pad") { if (wt[$1] != "write") { print "Write segment of a Call without one: " $0; bad = 1 } }
				if ($2 == "reply") { if (wt[$1] != "reply") { print "Reply segment of a Call without one: " $0; bad = 1 } }
				if ($2 != "pad") seen[$1 " " wt[$1]] = 1
			}
		}
		END {
			for (x in rt) {
				if ((rt[x] == "read" || rt[x] == "long") && !((x " read") in seen)) { print "no Read segment traced for " x; bad = 1 }
				if (wt[x] != "inline" && !((x " " wt[x]) in seen)) { print "no " wt[x] " segment traced for " x; bad = 1 }
			}
			if (!reads) { print "no Call with a Read chunk"; bad = 1 }
			if (!writes) { print "no Call with a Write chunk"; bad = 1 }
			exit bad
		}' <(printf '%s\n' "$m") <(printf '%s\n' "$c") | head -5 | sed 's/^/# /'
	return "${PIPESTATUS[0]}"
}

# Every Call traced was answered, and traced so: a reply event for each
# marshalled XID (a Call sent again keeps its XID), each naming the
# server, RDMA_MSG or RDMA_NOMSG, with a grant that, held to what the
# client asked for, is the one the report shows; no reply event for an
# XID never marshalled.
replies_traced() {
	local r
	trace_complete || return 1
	r=$(trace_events reply | awk '{
		delete f
		for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		print f["peer"], f["xid"], f["credits"], f["proc"]
	}')
	tap_diag "$(wc -l <<<"$r") reply events"
	awk -v peer="$SERVER_IP4" -v granted="${granted:-?}" -v requested="${requested:-0}" '
		FNR == NR { called[$1] = 1; next }
		{
			if ($1 != peer) { print "reply event of another peer: " $0; bad = 1 }
			if ($4 != "RDMA_MSG" && $4 != "RDMA_NOMSG") { print "proc " $4 ": " $0; bad = 1 }
			used = $3 + 0
			if (used > requested + 0) used = requested + 0
			if (used < 1) used = 1
			if (used "" != granted) { print "credits " $3 " (" used " used), the report says " granted ": " $0; bad = 1 }
			if (!($2 in called)) { print "reply to an untraced Call: " $0; bad = 1 }
			answered[$2] = 1
		}
		END {
			for (x in called) if (!(x in answered)) { print "no reply traced for " x; bad = 1 }
			exit bad
		}' <(marshal_summary) <(printf '%s\n' "$r") | head -5 | sed 's/^/# /'
	return "${PIPESTATUS[0]}"
}

no_errors_traced() {
	local e n rc=0
	[ -n "$trace_inst" ] || { tap_diag "no trace to read"; return 1; }
	for e in reply_error mr_error wc_error map_error; do
		n=$(trace_events "$e" | wc -l)
		if [ "$n" != 0 ]; then
			tap_diag "$n rpcrdma_rs_$e events, the first: $(trace_events "$e" | head -1)"
			rc=1
		fi
	done
	return "$rc"
}

# map_failed: a chunk's region that cannot be mapped (fail_maps fails it
# as a DMA mapping fails) fails its RPC with EIO, as the C transport's
# frwr_map does: the write fails, one map_error event names the server,
# an XID and -EIO, mountstats' failed_marshal_count (field 19) grows by
# one, and the mount goes on (the same write then reads back intact).
map_failed() {
	local p=/sys/module/rpcrdma_rs/parameters/fail_maps before after left l rc=0
	[ -w "$p" ] || { tap_diag "no $p (the test-hook build has it)"; return 1; }
	nfs_mount 3 "$mnt" 2>>"$log" || { tap_diag "the mount failed"; return 1; }
	trace_start rpcrdma_rs_selftest_map map_error || return 1
	before=$(mountstats_field "$mnt" 19)
	echo 1 >"$p"
	if dd if="$data" of="$mnt/map.bin" bs=64k oflag=direct status=none 2>>"$log"; then
		tap_diag "the write went through, its region's mapping failed"
		rc=1
	fi
	read -r left <"$p"
	echo 0 >"$p"
	[ "$left" = 0 ] || { tap_diag "no region was mapped"; rc=1; }
	after=$(mountstats_field "$mnt" 19)
	trace_complete || rc=1
	l=$(trace_events map_error | tr '\n' ' ')
	tap_diag "map_error events: ${l:-none}; failed_marshal_count $before, then $after"
	[[ $l =~ ^peer=$SERVER_IP4\ xid=0x[0-9a-f]{8}\ result=-5\ $ ]] ||
		{ tap_diag "not one map_error for the server with -EIO"; rc=1; }
	[ "$((after - before))" = 1 ] 2>/dev/null || { tap_diag "failed_marshal_count did not grow by one"; rc=1; }
	{ dd if="$data" of="$mnt/map.bin" bs=64k oflag=direct status=none && drop_caches &&
		cmp "$data" "$mnt/map.bin"; } 2>>"$log" || { tap_diag "the next write did not read back intact"; rc=1; }
	rm -f "$mnt/map.bin" 2>>"$log"
	trace_stop
	unmount || rc=1
	return "$rc"
}

setup() { rs_transports_gone && trace_start rpcrdma_rs_selftest; }
unmount() { timeout -s KILL 60 umount "$mnt" >>"$log" 2>&1; }
tap_check "tracefs instance with the rpcrdma_rs events enabled, no transport left from before" setup
if ! tap_check "NFSv3 mount over rdma" nfs_mount 3 "$mnt" 2>>"$log"; then
	for c in "64 KiB written and read back intact" \
		"connect event: the server's address, the device, result 0, the credits asked for" \
		"private_data event: the server's sizes 4096/4096, R clear, thresholds 4096/4096" \
		"credits event: the first grant, from 1 to what the report shows" \
		"disconnect injected: the close traced, then a new connection" \
		"unmounted" \
		"after the unmount: each connection's end traced once, by the server's address" \
		"op_connect events: one before each connection attempt, the first with no delay" \
		"marshal and chunk events: every Call and each segment it advertised" \
		"reply events: one for every Call, with the grant" \
		"no reply_error, mr_error, wc_error or map_error events" \
		"a region that fails to map: the RPC fails with EIO, map_error traced, failed_marshal_count grows, the mount goes on"; do
		tap_not_ok "$c (not mounted)"
	done
	tap_exit
fi
tap_check "64 KiB written and read back intact" write_read_back 2>>"$log"
read_report
tap_diag "report: credits_requested ${requested:-?} credits_granted ${granted:-?}"
grep ' rpcrdma_rs_' "$trace_inst/trace" 2>>"$log" | head -20 | sed 's/^ */# /'
tap_check "connect event: the server's address, the device, result 0, the credits asked for" \
	connect_traced
tap_check "private_data event: the server's sizes 4096/4096, R clear, thresholds 4096/4096" \
	private_data_traced
tap_check "credits event: the first grant, from 1 to what the report shows" credits_traced
tap_check "disconnect injected: the close traced, then a new connection" inject_disconnect
rm -f "$mnt/trace.bin" 2>>"$log"
tap_check "unmounted" unmount
tap_check "after the unmount: each connection's end traced once, by the server's address" \
	all_ends_traced
tap_check "op_connect events: one before each connection attempt, the first with no delay" \
	op_connect_traced
tap_check "marshal and chunk events: every Call and each segment it advertised" marshal_traced
tap_check "reply events: one for every Call, with the grant" replies_traced
tap_check "no reply_error, mr_error, wc_error or map_error events" no_errors_traced
grep ' rpcrdma_rs_' "$trace_inst/trace" >"$LOG_DIR/trace.txt" 2>>"$log"
trace_stop
tap_check "a region that fails to map: the RPC fails with EIO, map_error traced, failed_marshal_count grows, the mount goes on" \
	map_failed
tap_exit
