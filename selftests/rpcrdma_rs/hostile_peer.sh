#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A hostile server: rpcrdma-peer (rust/peer) serves NFSv3 over RDMA on
# port 20050 of the server guest, from a directory of its own, correctly
# until the fault under test fires. The MOUNT call goes to the server's
# real mountd over TCP; the peer takes nfsd's root handle as its own root.
#
# Each case starts a fresh peer with its fault, mounts with a soft mount
# and short timeouts, does the I/O that triggers the fault, and checks:
#   1. the mount works (so the previous case left the client usable);
#   2. the peer did its part (the fault fired) and the I/O ended in time;
#   3. what the I/O returned is the right data or an error, never wrong
#      data (for the FRWR cases: the client's page cache is unchanged
#      after the peer wrote to the rkeys of a finished READ);
#   4. the client's own account of the fault: for rpcrdma_rs the line it
#      logs, its debugfs state, or the counters in mountstats.
# With TRANSPORT=c the same cases run as the reference: where the C client
# differs in 3 or 4, the case passes with a "C differs" diagnostic.
# A last case mounts a well-behaved peer again and moves data both ways.
#
# HOSTILE_PEER_CASES="name ..." runs only those cases.
# The checks are called by name (rs_*, check_*).
# shellcheck disable=SC2317
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

PEER=$(cd "$SELFTEST_DIR/../.." && pwd)/rust/peer/target/release/rpcrdma-peer
PORT=20050
LOG_DIR=$RUN_DIR/hostile_peer
CLIENT_LOG=$LOG_DIR/client.log
MNT=/mnt/hostile-peer
SCRATCH=/run/hostile-peer
# Soft, with a 3 s timeout and one retransmission: a silent server costs at
# most 3 + 6 s before the I/O fails. MOUNT goes to the real mountd over
# TCP, found through rpcbind; noacl keeps NFSACL calls away from the peer.
MOUNT_OPTS="vers=3,proto=rdma,port=$PORT,mountproto=tcp,nolock,noacl,soft,timeo=30,retrans=1"
# Every wait is bounded; the peer also exits by itself.
IO_LIMIT=60
PEER_LIFETIME=300

# name | I/O | peer arguments | the client's account (a check below)
CASES=(
	"pd-ok | read | --private-data ok | pd 4096 4096 1 4096 4096"
	"pd-none | read | --private-data none | pd none none - 1024 1024"
	"pd-bad-magic | read | --private-data bad-magic | pd none none - 1024 1024"
	"pd-version-2 | read | --private-data version-2 | pd none none - 1024 1024"
	"pd-sizes-0 | read | --private-data sizes-0 | pd 1024 1024 1 1024 1024"
	"pd-sizes-max | read | --private-data sizes-max | pd 262144 262144 1 4096 4096"
	"pd-rinv-off | read | --private-data rinv-off | pd 4096 4096 0 4096 4096"
	"short-header | read | --fault short-header | logged short transport header \\(12 bytes\\)"
	"truncated-header | read | --fault truncated-header | logged bad transport header: Truncated"
	"bad-version | read | --fault bad-version | logged bad transport header: BadVersion\\(2\\)"
	"bad-proc | read | --fault bad-proc | logged bad transport header: UnknownProc\\(5\\)"
	"err-vers | read | --fault err-vers | logged RDMA_ERROR Vers \\{ low: 2, high: 2 \\}"
	"err-chunk | read | --fault err-chunk | logged RDMA_ERROR Chunk"
	"credits-zero | read | --fault credits-zero --on any --times 0 | credits 1"
	"credits-max | read | --fault credits-max --on any --times 0 | credits requested"
	"wrong-xid | read | --fault wrong-xid | bad_xids"
	"duplicate-reply | read | --fault duplicate-reply | duplicate"
	"reply-too-long | read | --fault reply-too-long | logged Receive failed with completion status"
	"write-chunk-overflow | read | --fault write-chunk-overflow | logged Write chunk longer than offered"
	"reply-chunk-overflow | ls | --fault reply-chunk-overflow --on readdirplus | logged Reply chunk longer than offered"
	"nomsg-no-reply-chunk | read | --fault nomsg-no-reply-chunk | logged malformed reply chunk lists"
	"disconnect-mid-reply | read | --fault disconnect-mid-reply | reconnected"
	"silence | read | --fault silence | reconnected"
	"frwr-write-after-reply | read | --fault frwr-write-after-reply --no-send-inv | frwr write"
	"frwr-read-after-reply | write | --fault frwr-read-after-reply --on write --no-send-inv | frwr read"
)

field() { # LINE N: the Nth "|"-separated field of LINE, trimmed
	local f
	f=$(cut -d'|' -f"$2" <<<"$1")
	read -r f <<<"$f"
	printf '%s' "$f"
}

selected=()
for c in "${CASES[@]}"; do
	name=$(field "$c" 1)
	if [ -z "${HOSTILE_PEER_CASES:-}" ] || [[ " $HOSTILE_PEER_CASES " == *" $name "* ]]; then
		selected+=("$c")
	fi
done

require_rdma_xprt "hostile peer"
tap_plan $((4 * ${#selected[@]} + 1))

mkdir -p "$LOG_DIR" "$MNT" "$SCRATCH"
: >"$CLIENT_LOG"
if [ ! -x "$PEER" ]; then
	tap_diag "no $PEER: scripts/test.sh builds it (cargo build --release in rust/peer)"
fi

# What data64k holds (see rust/peer/src/nfs.rs), and data to write.
expected=$(seq -f '%015g' 0 4095 | sha256sum | cut -d' ' -f1)
head -c 65536 /dev/urandom >"$SCRATCH/w64k"
expected_w=$(sha256sum <"$SCRATCH/w64k" | cut -d' ' -f1)
if [ "${BREAK_DATA_CHECK:-0}" = 1 ]; then
	tap_diag "BREAK_DATA_CHECK=1: corrupting the expected checksums"
	expected=$(rotate_first_digit <<<"$expected")
	expected_w=$(rotate_first_digit <<<"$expected_w")
fi

# ---- The peer, in the server guest ----

# peer_start NAME ARGS...: starts a peer whose events go to
# $LOG_DIR/NAME.log; true once it listens.
peer_start() {
	local name=$1 log=$LOG_DIR/$1.log pidf=$LOG_DIR/$1.pid i
	shift
	rm -f "$log" "$pidf"
	server_run "'$PEER' --listen 0.0.0.0:$PORT --lifetime $PEER_LIFETIME $* \
		</dev/null >'$log' 2>&1 & echo \$! >'$pidf'" || return 1
	for ((i = 0; i < 150; i++)); do
		grep -q '^listening ' "$log" 2>/dev/null && return 0
		grep -q '^exit ' "$log" 2>/dev/null && break
		sleep 0.1
	done
	tap_diag "$name: the peer did not start: $(tail -n 2 "$log" 2>/dev/null | tr '\n' ' ')"
	return 1
}

# peer_stop NAME: stops the peer and waits until it is gone (a zombie
# counts as gone: the guest's init need not reap it at once).
peer_stop() {
	local pidf=$LOG_DIR/$1.pid
	[ -s "$pidf" ] || return 0
	server_run "pid=\$(cat '$pidf')
		gone() { local s; s=\$(awk '{ print \$3 }' /proc/\$pid/stat 2>/dev/null) || return 0
			[ -z \"\$s\" ] || [ \"\$s\" = Z ]; }
		kill \$pid 2>/dev/null
		for i in \$(seq 50); do gone && exit 0; sleep 0.2; done
		kill -9 \$pid; sleep 1; gone"
}

# peer_wait NAME REGEX SECONDS: waits for an event line of the peer.
peer_wait() {
	local log=$LOG_DIR/$1.log i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -qE "$2" "$log" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# ---- The client ----

peer_mount() {
	timeout 90 mount -t nfs -o "$MOUNT_OPTS" "$SERVER_IP4:/srv/export" "$MNT" >>"$CLIENT_LOG" 2>&1 ||
		return 1
	rdma_mount_carrier_ok "$SERVER_IP4" && return 0
	peer_umount
	return 1
}

peer_umount() {
	mountpoint -q "$MNT" || return 0
	timeout 30 umount "$MNT" >>"$CLIENT_LOG" 2>&1 && return 0
	umount -f -l "$MNT" >>"$CLIENT_LOG" 2>&1
	return 1
}

# sum_of FILE: its SHA-256; fails as reading it in time failed.
sum_of() {
	local rc
	timeout "$IO_LIMIT" cat "$1" >"$SCRATCH/read.out" 2>>"$CLIENT_LOG"
	rc=$?
	[ "$rc" = 0 ] || return "$rc"
	sha256sum <"$SCRATCH/read.out" | cut -d' ' -f1
}

# verdict STATUS SUM EXPECTED: ok, error, hung or wrong.
verdict() {
	case "$1" in
	0) [ "$2" = "$3" ] && echo ok || echo wrong ;;
	124 | 137) echo hung ;;
	*) echo error ;;
	esac
}

# do_io KIND: the I/O that triggers the fault; sets io to its verdict.
do_io() {
	local sum rc
	case "$1" in
	read)
		sum=$(sum_of "$MNT/data64k")
		io=$(verdict $? "$sum" "$expected")
		;;
	write)
		timeout "$IO_LIMIT" dd if="$SCRATCH/w64k" of="$MNT/w64k" bs=64k conv=fsync \
			status=none >>"$CLIENT_LOG" 2>&1
		rc=$?
		if [ "$rc" = 0 ]; then
			# What the server stored, not the page cache.
			sync
			echo 3 >/proc/sys/vm/drop_caches
			sum=$(sum_of "$MNT/w64k")
			rc=$?
		fi
		io=$(verdict "$rc" "$sum" "$expected_w")
		;;
	ls)
		timeout "$IO_LIMIT" ls -l "$MNT" >"$SCRATCH/ls.out" 2>>"$CLIENT_LOG"
		rc=$?
		if [ "$rc" = 0 ]; then
			grep -q ' data64k$' "$SCRATCH/ls.out" && io=ok || io=wrong
		else
			io=$(verdict "$rc" "" "")
		fi
		;;
	esac
}

# ---- The client's account of each fault: true when as expected; $why
# says what was seen. Those named rs_* read what only rpcrdma_rs shows
# (its log lines, its debugfs) and do not run under the C transport. ----

dmesg_since_mark() { dmesg | tail -n "+$((dmesg_mark + 1))"; }

rs_logged() {
	local i
	for ((i = 0; i < 50; i++)); do
		dmesg_since_mark | grep -qE -- "$*" && { why="logged"; return 0; }
		sleep 0.1
	done
	why="no line matching '$*' in dmesg"
	return 1
}

rs_pd() { # SEND RECV RINV INLINE_SEND INLINE_RECV as debugfs shows them
	local got want
	if [ "$1" = none ]; then
		want="none - - $4 $5"
		got="$(rs_xprt_field peer_private_data 2>>"$CLIENT_LOG") - -"
	else
		want="$1 $2 $3 $4 $5"
		got="$(rs_xprt_field peer_send_size 2>>"$CLIENT_LOG") $(rs_xprt_field peer_recv_size 2>>"$CLIENT_LOG")"
		got="$got $(rs_xprt_field peer_remote_invalidation 2>>"$CLIENT_LOG")"
	fi
	got="$got $(rs_xprt_field inline_send 2>>"$CLIENT_LOG") $(rs_xprt_field inline_recv 2>>"$CLIENT_LOG")"
	why="peer send/recv/R, inline send/recv: $got (want $want)"
	[ "$got" = "$want" ]
}

rs_credits() { # 1 | requested
	local granted requested
	granted=$(rs_xprt_field credits_granted 2>>"$CLIENT_LOG")
	requested=$(rs_xprt_field credits_requested 2>>"$CLIENT_LOG")
	why="credits granted $granted of $requested requested"
	if [ "$1" = requested ]; then
		[ -n "$granted" ] && [ "$granted" = "$requested" ]
	else
		[ "$granted" = "$1" ]
	fi
}

check_bad_xids() {
	local n
	n=$(mountstats_field "$MNT" 8)
	why="bad_xids $n"
	[ "${n:-0}" -gt 0 ]
}

check_duplicate() {
	local n
	n=$(mountstats_field "$MNT" 8)
	why="bad_xids $n"
	[ "${n:-0}" -gt 0 ] && return 0
	dmesg_since_mark | grep -q 'duplicate reply dropped' && { why="logged"; return 0; }
	[ "$TRANSPORT" = rs ] && why="$why, duplicate_replies $(rs_xprt_field duplicate_replies 2>>"$CLIENT_LOG")"
	return 1
}

check_reconnected() {
	local n
	n=$(mountstats_field "$MNT" 3)
	why="connect_count $n"
	[ "${n:-0}" -ge 2 ]
}

# check_frwr write|read: the peer's RDMA to the rkeys of a finished RPC
# failed. Over iWARP a Write completes locally and the client refuses it
# by terminating the connection: the QP's state tells.
check_frwr() {
	local line status qp
	line=$(grep -s "^frwr-after-reply $1 " "$LOG_DIR/$case_name.log" | head -n 1)
	why="peer: ${line:-no frwr-after-reply line}"
	status=$(sed -n 's/.* status=\([A-Z_]*\).*/\1/p' <<<"$line")
	qp=$(sed -n 's/.* qp=\([A-Z]*\).*/\1/p' <<<"$line")
	case "$RDMA:$status" in
	*:REM_ACCESS_ERR) return 0 ;;
	siw:SUCCESS) [ "$1" = write ] && [ "$qp" = ERR ] ;;
	siw:?*) return 0 ;;
	*) return 1 ;;
	esac
}

# run_case LINE
run_case() {
	local io_kind args check io secs start sum
	case_name=$(field "$1" 1)
	io_kind=$(field "$1" 2)
	args=$(field "$1" 3)
	check=$(field "$1" 4)
	local name=$case_name
	echo "=== $name $(date +%T)" >>"$CLIENT_LOG"
	dmesg_mark=$(dmesg | wc -l)
	if ! peer_start "$name" "$args" || ! peer_mount; then
		tap_not_ok "$name: mounted from a fresh peer"
		tap_not_ok "$name: the fault fired and the I/O ended in time (not mounted)"
		tap_not_ok "$name: right data or an error (not mounted)"
		tap_not_ok "$name: the client's account (not mounted)"
		peer_stop "$name"
		return
	fi
	tap_ok "$name: mounted from a fresh peer"

	start=$SECONDS
	do_io "$io_kind"
	secs=$((SECONDS - start))
	if [ "${check%% *}" = frwr ]; then
		# The peer touches the old rkeys a moment after its Reply.
		peer_wait "$name" '^frwr-after-reply ' 30 || tap_diag "$name: no probe result from the peer"
	fi
	if [ "$check" = "frwr write" ] && [ "$io" = ok ]; then
		# The page cache must not show what the peer wrote to the
		# READ's old rkeys.
		sum=$(sum_of "$MNT/data64k")
		io=$(verdict $? "$sum" "$expected")
	fi
	tap_diag "$name: I/O $io in ${secs}s; $(mount_xprt_line "$MNT")"
	grep -E '^(fault|frwr|completion|reply-failed|call-failed|connect-refused)' "$LOG_DIR/$name.log" \
		2>/dev/null | head -n 5 | sed "s/^/# $name: peer: /"

	local fired=1
	case "$args" in
	*--fault*) grep -qs '^fault-fired ' "$LOG_DIR/$name.log" || fired=0 ;;
	*) grep -qs '^call ' "$LOG_DIR/$name.log" || fired=0 ;;
	esac
	if [ "$fired" = 1 ] && [ "$io" != hung ]; then
		tap_ok "$name: the fault fired and the I/O ended in time ($io)"
	else
		tap_not_ok "$name: the fault fired and the I/O ended in time (fired=$fired, I/O $io)"
	fi

	if [ "$io" != wrong ]; then
		tap_ok "$name: right data or an error"
	elif [ "$TRANSPORT" = c ]; then
		tap_ok "$name: right data or an error # C differs: wrong data"
	else
		tap_not_ok "$name: right data or an error (wrong data)"
	fi

	local why="" kind=${check%% *} arg=${check#* }
	if [ "$TRANSPORT" != rs ] && declare -F "rs_$kind" >/dev/null; then
		tap_ok "$name: the client's account (rpcrdma_rs only)"
	elif declare -F "rs_$kind" >/dev/null; then
		read -r -a words <<<"$arg"
		if "rs_$kind" "${words[@]}"; then
			tap_ok "$name: the client's account ($why)"
		else
			tap_not_ok "$name: the client's account ($why)"
		fi
	elif "check_$kind" "$arg"; then
		tap_ok "$name: the client's account ($why)"
	elif [ "$TRANSPORT" = c ]; then
		tap_ok "$name: the client's account # C differs: $why"
	else
		tap_not_ok "$name: the client's account ($why)"
	fi

	peer_umount || tap_diag "$name: unmount needed -f -l"
	peer_stop "$name" || tap_diag "$name: the peer did not stop"
}

for c in "${selected[@]}"; do
	run_case "$c"
done

# A well-behaved peer again: both directions, chunks included.
final_check() {
	peer_start final "" && peer_mount || return 1
	do_io write
	[ "$io" = ok ] || { tap_diag "final: write and read back: $io"; return 1; }
	do_io read
	[ "$io" = ok ] || { tap_diag "final: read: $io"; return 1; }
	do_io ls
	[ "$io" = ok ] || { tap_diag "final: ls: $io"; return 1; }
	tap_diag "final: $(mount_xprt_line "$MNT")"
	peer_umount
}
tap_check "final: a well-behaved peer serves a new mount, both ways" final_check
peer_umount
peer_stop final
tap_exit
