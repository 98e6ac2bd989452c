#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A hostile server: rpcrdma-peer (rust/peer) serves NFSv3 over RDMA on
# port 20050 of the server guest, from a directory of its own, correctly
# until the fault under test fires. The MOUNT call goes to the server's
# real mountd over TCP; the peer takes nfsd's root handle as its own root.
#
# One peer serves every case. Each case writes its name and the peer's
# settings for it to the peer's case file (--fault-file, in the run
# directory both guests share); the peer disconnects the case before's
# connections and starts its directory and the fault's count afresh, as a
# new peer would, and runs the case on its next connection. The case then
# mounts with a soft mount and short timeouts, does the I/O that triggers
# the fault, and checks:
#   1. the mount works, over a new connection that the peer accepted
#      under this case (so the previous case left the client usable);
#   2. the peer did its part (the fault fired) and came through it (still
#      running, no exit or panic logged; otherwise a new peer is started
#      for the cases after), and the I/O ended in time;
#   3. the I/O ended as the case expects (its line in CASES: ok, error or
#      either), never with wrong data (for frwr-write-after-reply: the
#      client's page cache is unchanged after the peer wrote to the rkeys
#      of a finished READ);
#   4. the client's own account of the fault: for rpcrdma_rs the line it
#      logs, its debugfs state, or the counters in mountstats; for a reply
#      it cannot trust, also that the RPC was sent again rather than
#      failed (rs_retried), and the trace events of the fault: the
#      reply_error event with its kind and XID, and the disconnect with
#      its reason (rs_traced). Every
#      fault of the server has rpcrdma_rs log a line naming the server
#      (rs_peer_logged), which this check requires too where its account
#      is otherwise debugfs or mountstats. A line is counted (rs_logged):
#      "rpcrdma_rs: SERVER: " and the fault's text, once per fault the
#      peer fired (once per connection for the lines said per
#      connection), after the case's marker; fewer only where a
#      "callbacks suppressed" line accounts for the rest. With
#      TRANSPORT=rs this check also reads the reply-order witness of the
#      test-hook build (witness_check): reply_before_invalidation 0 once
#      the case is done, and deliveries_checked grown during an I/O that
#      moved data through chunks. The credits cases' account is the
#      peer's, read once unmounted (after_grant), and binds the C client
#      as much;
#   5. the same mount works afterwards: an O_DIRECT READ of data64k goes
#      to the peer again (well-behaved by then, or still granting absurd
#      credits) and comes back right; after an RDMA_ERROR, over the same
#      connection.
# Checks 4 and 5 are reported once the case is unmounted.
# With TRANSPORT=c the same cases run as the reference: where the C client
# differs in 3 or 4, the case is skipped with the reason "C differs: ..."
# (known_skips accepts it, and the harness lists it); wrong data fails.
# A last case mounts a well-behaved peer again and moves data both ways.
# Each case says how long it took ("# NAME: N s").
#
# Under TCG every process the test starts costs about a tenth of a second
# (binaries come over 9p), so the steps of a case are shell builtins where
# they can be: the mount, the I/O and the unmount, each under timeout
# (readpar's eight readers under one polled bound instead), dmesg where a
# log line is checked, and the one question to the server guest whether
# the peer still runs (peer_alive), are its only processes.
#
# HOSTILE_PEER_CASES="name ..." runs only those cases.
# The checks are called by name (rs_*, check_*; after_* once unmounted).
# shellcheck disable=SC2317
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

PEER=$SOURCE_TOP/rust/peer/target/release/rpcrdma-peer
PORT=20050
LOG_DIR=$RUN_DIR/hostile_peer
CLIENT_LOG=$LOG_DIR/client.log
# What the peer's next connection runs: "NAME ARGS..." (its --fault-file).
CASE_FILE=$LOG_DIR/case
# The case file's length, whatever its line (peer_case).
CASE_BYTES=512
MNT=/mnt/hostile-peer
SCRATCH=/run/hostile-peer
# Soft, with a 3 s timeout and one retransmission: a silent server costs at
# most 3 + 6 s before the I/O fails. MOUNT goes to the real mountd over
# TCP, found through rpcbind; noacl keeps NFSACL calls away from the peer.
# mount -i: the kernel makes the MOUNT call itself (given addr=), and no
# mount.nfs runs first to probe rpcbind and mountd.
# (port= is added at each mount: a peer started to replace one that is
# stuck listens on the next port, in case the old one still holds its own.)
MOUNT_OPTS="vers=3,proto=rdma,mountproto=tcp,nolock,noacl,soft,timeo=30,retrans=1"
# Every wait is bounded; the peer also exits by itself.
IO_LIMIT=60
PEER_LIFETIME=1800

# name | I/O | its outcome | peer arguments | the client's account (a
# check below). The outcome expected of the I/O: ok (it must succeed with
# the right data), error (it must fail) or either; never wrong data. Both
# clients' I/O ended ok in every case over both fabrics; an RDMA_ERROR
# answers the RPC with a transport error (RFC 8166, section 4.5), which a
# client may pass up, so err-vers and err-chunk may end in an error too.
CASES=(
	"pd-ok | read | ok | --private-data ok | pd 4096 4096 1 4096 4096"
	"pd-none | read | ok | --private-data none | pd none none - 1024 1024 none"
	"pd-bad-magic | read | ok | --private-data bad-magic | pd none none - 1024 1024 bad-magic"
	"pd-version-2 | read | ok | --private-data version-2 | pd none none - 1024 1024 version-2"
	"pd-sizes-0 | read | ok | --private-data sizes-0 | pd 1024 1024 1 1024 1024"
	"pd-sizes-max | read | ok | --private-data sizes-max | pd 262144 262144 1 4096 4096"
	"pd-rinv-off | read | ok | --private-data rinv-off | pd 4096 4096 0 4096 4096"
	"pd-offset | read | ok | --private-data offset | pd 4096 4096 1 4096 4096"
	"short-header | read | ok | --fault short-header | retried short transport header \\(12 bytes\\)"
	"truncated-header | read | ok | --fault truncated-header | retried bad transport header: Truncated"
	"bad-version | read | ok | --fault bad-version | retried bad transport header: BadVersion\\(2\\)"
	"bad-proc | read | ok | --fault bad-proc | retried bad transport header: UnknownProc\\(5\\)"
	"bad-proc-twice | read | either | --fault bad-proc --times 2 | backoff"
	"err-vers | read | either | --fault err-vers | rdma_error Vers \\{ low: 2, high: 2 \\}"
	"err-chunk | read | either | --fault err-chunk | rdma_error Chunk"
	"credits-zero | read | ok | --fault credits-zero --on any --times 0 | credits 1"
	"credits-max | read | ok | --fault credits-max --on any --times 0 | credits requested"
	# The peer holds each reply 150 ms: eight readers at once must drive
	# the client to its grant meanwhile, never past it. The shrink comes
	# on the 16th of readpar's 64 READs.
	"credits-grant-1 | readpar | ok | --credits 1 --hold-replies 150 | grant 1"
	"credits-grant-2 | readpar | ok | --credits 2 --hold-replies 150 | grant 2"
	"credits-grant-4 | readpar | ok | --credits 4 --hold-replies 150 | grant 4"
	"credits-shrink | readpar | ok | --credits 8 --hold-replies 150 --fault shrink-credits --shrink-to 2 --on read --after 16 | grant 8 2"
	"wrong-xid | read | ok | --fault wrong-xid | bad_xids"
	"duplicate-reply | read | ok | --fault duplicate-reply | duplicate"
	# One RPC's Reply offered as another's, still waiting: its transport
	# header names the other's XID, its RPC message its own (the live
	# wire fuzzer's other-xid; eight readers at once, so that a next Call
	# comes while the peer holds the Reply).
	"other-xid | readpar | ok | --fault other-xid | retried RPC message's XID 0x[0-9a-f]{8} differs from the transport header's"
	"reply-too-long | read | ok | --fault reply-too-long | retried Receive failed with completion status"
	"write-chunk-overflow | read | ok | --fault write-chunk-overflow | retried Write chunk longer than offered"
	"write-chunk-extra-segment | read | ok | --fault write-chunk-extra-segment | retried Write chunk segments differ from those offered"
	# The XDR pad of a READ's odd-length data written into the pad
	# segment the client offers after the data's (RFC 8166, section
	# 3.4.6): a server may, and the client takes the Reply as it is.
	"write-pad | readodd | ok | --fault write-pad | write_pad"
	# Four bytes after the inline RPC message of a READ whose data went
	# in the Write chunk: XDR that follows the data item, which a client
	# puts after the data, never into it (found by the live wire
	# fuzzer's pad mutation: the bytes overwrote the start of the data).
	"trailing-inline | read | ok | --fault trailing-inline | taken"
	# The same with 1 KiB: more than the READ's receive buffer keeps
	# after the data (room for the XDR pad). What does not fit is left
	# out, as C and TCP leave it (the upper layer sized the buffer for
	# what it decodes), and said: never the RPC failed with EMSGSIZE and
	# nothing logged.
	"trailing-overflow | read | ok | --fault trailing-overflow | left_out [0-9]+ bytes of the reply to xid 0x[0-9a-f]{8} do not fit its receive buffer; left out"
	"reply-chunk-overflow | ls | ok | --fault reply-chunk-overflow --on readdirplus | retried Reply chunk longer than offered"
	"nomsg-no-reply-chunk | read | ok | --fault nomsg-no-reply-chunk | retried RDMA_NOMSG reply but no Reply chunk offered"
	# other-xid's RDMA_NOMSG form: the RPC message in the Reply chunk
	# names another XID than its transport header. Read once the chunk's
	# memory is closed.
	"nomsg-other-xid | ls | ok | --fault nomsg-other-xid --on readdirplus | retried RPC message's XID 0x[0-9a-f]{8} in the Reply chunk differs from the transport header's"
	# A chunk in the reply to a Call that offered none. A READ offers no
	# Write chunk only when its reply fits inline (readsmall: 1 KiB, the
	# peer waits for such a READ); LOOKUP (the read's, none during the
	# mount) offers no Reply chunk.
	"write-list-unoffered | readsmall | ok | --fault write-list-unoffered | retried Write list but no Write chunk offered"
	"reply-chunk-unoffered | read | ok | --fault reply-chunk-unoffered --on lookup | retried RDMA_NOMSG reply but no Reply chunk offered"
	"disconnect-mid-reply | read | ok | --fault disconnect-mid-reply | reconnected"
	"silence | read | ok | --fault silence | reconnected"
	"send-inv-unknown | read | ok | --fault send-inv-unknown | reconnected"
	# The held READ's Reply invalidates the rkey of a WRITE whose Read
	# chunk the peer has pulled (readwrite: the WRITE follows the hold).
	"send-inv-other-rpc | readwrite | ok | --fault send-inv-other-rpc | other_rpc"
	"frwr-write-after-reply | read | ok | --fault frwr-write-after-reply --no-send-inv | frwr write"
	"frwr-read-after-reply | write | ok | --fault frwr-read-after-reply --on write --no-send-inv | frwr read"
)

# split_case LINE: sets case_name, io_kind, want, args and check from a
# line of CASES, each trimmed.
split_case() {
	local f
	IFS='|' read -r case_name io_kind want args check <<<"$1"
	for f in case_name io_kind want args check; do
		read -r "${f?}" <<<"${!f}"
	done
}

# The cases where the C client (6.12), the reference, returns wrong data:
# a Write list in a reply whose Call offered no Write chunk is taken for
# data placed in the pages, so what they held is read as the file's
# (rpcrdma_decode_msg checks no offer); for other-xid a READ's Reply
# taken for another READ's, whose pages the server never wrote (it checks
# neither the RPC message's XID nor the Write chunk's handles); and for
# trailing-inline and trailing-overflow the bytes after the inline message
# copied over the start of the data (rpcrdma_inline_fixup copies what
# follows the head into the pages, Write chunk or not). Each seen over
# Soft-RoCE. Recorded as "C differs" skips;
# wrong data fails in any other case, and with rpcrdma_rs in every one.
C_WRONG_DATA="write-list-unoffered other-xid trailing-inline trailing-overflow"

selected=()
for c in "${CASES[@]}"; do
	split_case "$c"
	if [ -z "${HOSTILE_PEER_CASES:-}" ] || [[ " $HOSTILE_PEER_CASES " == *" $case_name "* ]]; then
		selected+=("$c")
	fi
done

require_rdma_xprt "hostile peer"
tap_plan $((5 * ${#selected[@]} + 1))
# rpcrdma_rs's account of a fault includes its trace events (rs_traced):
# each case starts with an empty buffer.
if [ "$TRANSPORT" = rs ]; then
	trap trace_stop EXIT
	trap 'exit 143' TERM INT
	trace_start rpcrdma_rs_hostile reply_error disconnect wc_error ||
		tap_diag "no trace: the cases that check trace events fail"
fi
run_start=${EPOCHREALTIME/[.,]/}

mkdir -p "$LOG_DIR" "$MNT" "$SCRATCH"
: >"$CLIENT_LOG"
if [ ! -x "$PEER" ]; then
	tap_diag "no $PEER: scripts/test.sh builds it (cargo build --release in rust/peer)"
fi

# What data64k holds (see rust/peer/src/nfs.rs), and its two halves;
# data to write.
expected=$(seq -f '%015g' 0 4095 | sha256sum | cut -d' ' -f1)
expected_h1=$(seq -f '%015g' 0 2047 | sha256sum | cut -d' ' -f1)
expected_h2=$(seq -f '%015g' 2048 4095 | sha256sum | cut -d' ' -f1)
head -c 65536 /dev/urandom >"$SCRATCH/w64k"
expected_w=$(sha256sum <"$SCRATCH/w64k" | cut -d' ' -f1)
# data64k's text itself, for readpar's pieces (compared by the shell: no
# sha256sum per piece). %015d prints what seq's %015g does below 10^6.
printf -v data64k_text '%015d\n' {0..4095}
# What odd6k holds: data64k's first 6001 bytes.
expected_odd=$(printf '%s' "${data64k_text:0:6001}" | sha256sum | cut -d' ' -f1)
# readwrite's 64 KiB to write: text, so that the shell itself can feed it
# to the writer the moment it is due (no process then).
printf -v rw_text 'w%014d\n' {0..4095}
expected_rw=$(printf '%s' "$rw_text" | sha256sum | cut -d' ' -f1)
if [ "${BREAK_DATA_CHECK:-0}" = 1 ]; then
	tap_diag "BREAK_DATA_CHECK=1: corrupting the expected checksums"
	expected=$(rotate_first_digit <<<"$expected")
	expected_h1=$(rotate_first_digit <<<"$expected_h1")
	expected_h2=$(rotate_first_digit <<<"$expected_h2")
	expected_w=$(rotate_first_digit <<<"$expected_w")
	expected_rw=$(rotate_first_digit <<<"$expected_rw")
	expected_odd=$(rotate_first_digit <<<"$expected_odd")
	data64k_text=X${data64k_text:1}
fi

# ---- Waiting without a process ----

# snooze SECONDS: a read that times out on a FIFO nobody writes to.
[ -p "$SCRATCH/snooze" ] || mkfifo "$SCRATCH/snooze"
# readwrite's writer reads its data from this FIFO.
[ -p "$SCRATCH/rwfifo" ] || mkfifo "$SCRATCH/rwfifo"
exec {snooze_fd}<>"$SCRATCH/snooze"
snooze() { read -r -t "$1" -u "$snooze_fd" _ || :; }

# wait_until SECONDS COMMAND...: true once COMMAND is, tried every 0.1 s.
wait_until() {
	local i n=$(($1 * 10))
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		snooze 0.1
	done
	"$@"
}

# elapsed START: sets secs to the seconds since START (microseconds since
# the epoch, as run_start), to a tenth.
elapsed() {
	local us=$((${EPOCHREALTIME/[.,]/} - $1))
	printf -v secs '%d.%d' $((us / 1000000)) $((us / 100000 % 10))
}

# ---- The peer, in the server guest ----

peer_n=0
PEER_LOG=/dev/null
PEER_PID=
peer_mark=0
peer_lines=()

# peer_start: starts a peer whose events go to $LOG_DIR/peer-N.log, and
# waits in the server guest until it listens; true once it does.
peer_start() {
	peer_n=$((peer_n + 1))
	PORT=$((20049 + peer_n))
	PEER_LOG=$LOG_DIR/peer-$peer_n.log
	PEER_PID=$LOG_DIR/peer-$peer_n.pid
	peer_mark=0
	rm -f "$PEER_LOG" "$PEER_PID" "$CASE_FILE"
	if server_run "'$PEER' --listen 0.0.0.0:$PORT --lifetime $PEER_LIFETIME \
		--fault-file '$CASE_FILE' </dev/null >'$PEER_LOG' 2>&1 & echo \$! >'$PEER_PID'
		for i in \$(seq 150); do
			grep -q '^listening ' '$PEER_LOG' && exit 0
			grep -q '^exit ' '$PEER_LOG' && exit 1
			sleep 0.1
		done
		exit 1"; then
		return 0
	fi
	peer_read
	peer_last 2
	tap_diag "the peer did not start: $last"
	return 1
}

# peer_stop: stops the peer and waits until it is gone (a zombie counts as
# gone: the guest's init need not reap it at once). Its state is read with
# shell builtins: a process started per look takes a second or more under
# emulation. One that SIGKILL does not end is stuck in the kernel.
peer_stop() {
	[ -s "$PEER_PID" ] || return 0
	server_run "pid=\$(cat '$PEER_PID')
		gone() { local l; { read -r l </proc/\$pid/stat; } 2>/dev/null || return 0
			l=\${l##*) }; [ \"\${l%% *}\" = Z ]; }
		kill \$pid 2>/dev/null
		for i in \$(seq 25); do gone && exit 0; sleep 0.2; done
		kill -9 \$pid 2>/dev/null
		for i in \$(seq 15); do gone && exit 0; sleep 0.2; done
		exit 1"
}

# peer_stacks: where each thread of the peer is (state, wait channel), for
# the diagnosis of one that stopped answering; their kernel stacks go to
# $LOG_DIR/peer-N.stacks. Sets $stacks.
peer_stacks() {
	stacks=
	[ -s "$PEER_PID" ] || return 0
	server_output stacks "pid=\$(cat '$PEER_PID')
		for t in /proc/\$pid/task/*; do
			{ read -r l <\$t/stat; } 2>/dev/null || continue
			l=\${l##*) }
			printf '%s:%s:%s ' \${t##*/} \${l%% *} \$(cat \$t/wchan)
			{ echo \"== \$t \$(cat \$t/comm) \${l%% *}\"; cat \$t/stack; } >>'${PEER_LOG%.log}.stacks'
		done"
}

# peer_alive: the peer's process is still there (asks the server guest).
peer_alive() {
	[ -s "$PEER_PID" ] && server_run "kill -0 \$(cat '$PEER_PID') 2>/dev/null"
}

# peer_fine: the peer has come through the case: it logged no exit,
# stop or panic since the mark, and its process is still there (asks the
# server guest). Otherwise peer_gone says what happened.
peer_fine() {
	local l
	peer_gone=
	peer_read
	for l in "${peer_lines[@]}"; do
		if [[ $l == "exit "* ]] || [[ $l == "stopping "* ]] || [[ $l == *panicked* ]]; then
			peer_gone="it logged '$l'"
			return 1
		fi
	done
	peer_alive && return 0
	peer_last 2
	peer_gone="its process is gone (last lines: $last)"
	return 1
}

# peer_read: peer_lines gets the peer's event lines since the mark.
peer_read() {
	peer_lines=()
	[ -r "$PEER_LOG" ] && mapfile -t -s "$peer_mark" peer_lines <"$PEER_LOG"
	:
}

# peer_last N: sets last to the last N of peer_lines, joined by "; ".
peer_last() {
	local n=${#peer_lines[@]}
	local from=$((n > $1 ? n - $1 : 0))
	printf -v last '%s; ' "${peer_lines[@]:from}"
	last=${last%; }
}

# peer_has REGEX: an event line since the mark matches.
peer_has() {
	local l
	peer_read
	for l in "${peer_lines[@]}"; do
		[[ $l =~ $1 ]] && return 0
	done
	return 1
}

# peer_case NAME ARGS: the peer's next connection runs case NAME with
# ARGS; its event lines from now on are this case's.
peer_case() {
	local args=$2
	# Over siw the peer's Send With Invalidate (userspace, libsiw) fails
	# at the client with a remote invalidate error, where the kernel
	# server's works; the peer sends plain Sends there (but for the
	# send-inv-* faults' own, which go all the same).
	if [ "$RDMA" = siw ] && [[ $args != *--no-send-inv* ]]; then
		args="$args --no-send-inv"
	fi
	peer_read
	peer_mark=$((peer_mark + ${#peer_lines[@]}))
	# A new file renamed into place: rewritten in place, the peer's
	# guest could read the new length over the old contents (9p). Every
	# version is CASE_BYTES long, the line padded with spaces: the peer's
	# guest may take the length from one version and open the next (9p
	# opens by path), and a read that finds fewer bytes than that length
	# says retries for ever in the kernel (netfs in 6.12), which SIGKILL
	# does not end and which keeps the server guest's vCPU busy.
	local line
	printf -v line '%s %s' "$1" "$args"
	if [ "${#line}" -ge "$CASE_BYTES" ]; then
		tap_diag "$1: the case line is longer than $CASE_BYTES bytes"
	fi
	printf "%-$((CASE_BYTES - 1))s\n" "$line" >"$CASE_FILE.new" && mv -f "$CASE_FILE.new" "$CASE_FILE"
}

# peer_ready NAME ARGS: the peer has taken case NAME (it reads the case
# file every 100 ms). One that has not is hung or gone, whatever the case
# before did to it: a new peer takes over, and says so, so that one stuck
# peer cannot fail every case after it.
peer_ready() {
	wait_until 5 peer_has "^case name=$1 " && return 0
	peer_last 3
	peer_stacks
	tap_diag "$1: the peer did not take the case (its last lines: $last; its threads: $stacks); starting a new one"
	peer_stop || tap_diag "$1: the old peer did not stop"
	peer_start || return 1
	peer_case "$1" "$2"
	wait_until 5 peer_has "^case name=$1 "
}

# peer_took_case NAME: the peer has taken case NAME and then accepted a
# connection; the mark moves to its case line, so that what came before
# (the case before's connections going) is not this case's.
peer_took_case() {
	local i taken=
	peer_read
	for i in "${!peer_lines[@]}"; do
		case "${peer_lines[i]}" in
		"case name=$1 "*) taken=$i ;;
		"accepted "*)
			if [ -n "$taken" ]; then
				peer_mark=$((peer_mark + taken))
				return 0
			fi
			;;
		esac
	done
	return 1
}

# peer_case_end NAME: keeps the case's event lines in $LOG_DIR/NAME.log.
peer_case_end() {
	peer_read
	if [ "${#peer_lines[@]}" -gt 0 ]; then
		printf '%s\n' "${peer_lines[@]}" >"$LOG_DIR/$1.log"
	else
		: >"$LOG_DIR/$1.log"
	fi
	peer_mark=$((peer_mark + ${#peer_lines[@]}))
}

# ---- The client ----

mount_helper=0
mounted_once=0

# peer_mount: mounts the peer at $MNT. Should the kernel refuse mount -i
# before any mount worked, mount.nfs mounts from then on.
peer_mount() {
	local rc
	if [ "$mount_helper" = 0 ]; then
		timeout 90 mount -i -t nfs -o "$MOUNT_OPTS,port=$PORT,addr=$SERVER_IP4" "$SERVER_IP4:/srv/export" "$MNT" \
			>>"$CLIENT_LOG" 2>&1
		rc=$?
		if [ "$rc" != 0 ] && [ "$mounted_once" = 0 ]; then
			tap_diag "mount -i failed ($rc): mounting through mount.nfs from now on"
			mount_helper=1
		fi
	fi
	if [ "$mount_helper" = 1 ]; then
		timeout 90 mount -t nfs -o "$MOUNT_OPTS,port=$PORT" "$SERVER_IP4:/srv/export" "$MNT" >>"$CLIENT_LOG" 2>&1
		rc=$?
	fi
	[ "$rc" = 0 ] || return 1
	mounted_once=1
	rdma_mount_carrier_ok "$SERVER_IP4" && return 0
	peer_umount
	return 1
}

peer_umount() {
	mounted "$MNT" || return 0
	timeout 30 umount -i "$MNT" >>"$CLIENT_LOG" 2>&1 && return 0
	umount -i -f -l "$MNT" >>"$CLIENT_LOG" 2>&1
	return 1
}

# mount_xprt: sets xprt_line to the "xprt:" line of the mount at $MNT in
# /proc/self/mountstats (as mount_xprt_line prints it) and xprt to its
# words: field N as mountstats_field numbers them is ${xprt[N + 1]}
# (3 connect_count, 8 bad_xids). Fails when there is none.
mount_xprt() {
	local l w found=0
	xprt_line=
	xprt=()
	mapfile -t ms </proc/self/mountstats
	for l in "${ms[@]}"; do
		if [[ $l == "device "* ]]; then
			read -r -a w <<<"$l"
			[ "${w[4]}" = "$MNT" ] && found=1 || found=0
		elif [ "$found" = 1 ] && [[ $l =~ ^[[:space:]]*xprt: ]]; then
			xprt_line=$l
			read -r -a xprt <<<"$l"
			return 0
		fi
	done
	return 1
}

# sum_of FILE: sets sum to its SHA-256; fails as reading it in time failed.
sum_of() {
	local rc
	sum=
	timeout "$IO_LIMIT" sha256sum "$1" >"$SCRATCH/sum.out" 2>>"$CLIENT_LOG"
	rc=$?
	[ "$rc" = 0 ] && read -r sum _ <"$SCRATCH/sum.out"
	return "$rc"
}

# verdict STATUS SUM EXPECTED: sets io to ok, error, hung or wrong.
verdict() {
	case "$1" in
	0) [ "$2" = "$3" ] && io=ok || io=wrong ;;
	124 | 137) io=hung ;;
	*) io=error ;;
	esac
}

# do_io KIND: the I/O that triggers the fault; sets io to its verdict.
do_io() {
	local rc l
	sum=
	case "$1" in
	read)
		sum_of "$MNT/data64k"
		verdict $? "$sum" "$expected"
		;;
	read2)
		# Both halves of data64k at once, O_DIRECT: two READs, each
		# with a Write chunk, the second sent while the first waits.
		local p1 p2 rc1 rc2 rc s1
		rm -f "$SCRATCH/h1" "$SCRATCH/h2"
		timeout "$IO_LIMIT" dd if="$MNT/data64k" of="$SCRATCH/h1" iflag=direct bs=32k count=1 \
			status=none 2>>"$CLIENT_LOG" &
		p1=$!
		timeout "$IO_LIMIT" dd if="$MNT/data64k" of="$SCRATCH/h2" iflag=direct bs=32k skip=1 count=1 \
			status=none 2>>"$CLIENT_LOG" &
		p2=$!
		wait "$p1"
		rc1=$?
		wait "$p2"
		rc2=$?
		if [ "$rc1" = 0 ] && [ "$rc2" = 0 ]; then
			sum_of "$SCRATCH/h1"
			rc=$?
			s1=$sum
			[ "$rc" = 0 ] && { sum_of "$SCRATCH/h2"; rc=$?; }
			# Both halves right, or the data is wrong.
			if [ "$rc" != 0 ]; then
				verdict "$rc" "" ""
			elif [ "$s1" = "$expected_h1" ]; then
				verdict 0 "$sum" "$expected_h2"
			else
				io=wrong
			fi
		elif [ "$rc1" = 124 ] || [ "$rc1" = 137 ]; then
			verdict "$rc1" "" ""
		else
			verdict "$((rc2 == 0 ? rc1 : rc2))" "" ""
		fi
		;;
	readsmall)
		# The first KiB of data64k, O_DIRECT: a READ whose reply fits
		# inline, so that it offers no Write chunk.
		timeout "$IO_LIMIT" dd if="$MNT/data64k" of="$SCRATCH/small" iflag=direct bs=1k count=1 \
			status=none 2>>"$CLIENT_LOG"
		rc=$?
		if [ "$rc" = 0 ]; then
			l=
			IFS= read -r -N 1024 l <"$SCRATCH/small"
			[ "$l" = "${data64k_text:0:1024}" ] && io=ok || io=wrong
		else
			verdict "$rc" "" ""
		fi
		;;
	readodd)
		# All of odd6k, 6001 bytes, in one O_DIRECT READ of that many:
		# NFS direct I/O keeps the byte count (a buffered READ asks for
		# whole pages), so the READ's data is not a multiple of 4 and
		# its Write chunk offers the pad segment after the data's.
		rm -f "$SCRATCH/odd"
		timeout "$IO_LIMIT" dd if="$MNT/odd6k" of="$SCRATCH/odd" iflag=direct bs=6001 count=1 \
			status=none 2>>"$CLIENT_LOG"
		rc=$?
		# Compared by its checksum: the shell's read drops NUL bytes.
		[ "$rc" = 0 ] && { sum_of "$SCRATCH/odd"; rc=$?; }
		verdict "$rc" "$sum" "$expected_odd"
		;;
	readpar)
		# Eight O_DIRECT readers at once, reader k reading the 8 blocks
		# of 4 KiB from block k: up to eight READs outstanding, each
		# with its Write chunk. One bound for all of them (polled: a
		# timeout process per reader would cost eight more), then
		# each piece compared with data64k's text by the shell.
		local k p i pids=() rck got left
		rc=0
		for ((k = 0; k < 8; k++)); do
			dd if="$MNT/data64k" of="$SCRATCH/par$k" iflag=direct bs=4k skip="$k" count=8 \
				status=none 2>>"$CLIENT_LOG" &
			pids+=("$!")
		done
		for ((i = 0; i < IO_LIMIT * 10; i++)); do
			left=0
			for p in "${pids[@]}"; do
				kill -0 "$p" 2>/dev/null && { left=1; break; }
			done
			[ "$left" = 0 ] && break
			snooze 0.1
		done
		if [ "$left" = 1 ]; then
			kill -9 "${pids[@]}" 2>/dev/null
			rc=137
		fi
		for p in "${pids[@]}"; do
			wait "$p"
			rck=$?
			[ "$rc" = 0 ] && rc=$rck
		done
		if [ "$rc" = 0 ]; then
			io=ok
			for ((k = 0; k < 8; k++)); do
				got=
				IFS= read -r -N 32768 got <"$SCRATCH/par$k"
				if [ "$got" != "${data64k_text:k*4096:32768}" ]; then
					io=wrong
					echo "readpar: reader $k (from block $k) read wrong data" >>"$CLIENT_LOG"
				fi
			done
		else
			verdict "$rc" "" ""
		fi
		;;
	write)
		timeout "$IO_LIMIT" dd if="$SCRATCH/w64k" of="$MNT/w64k" bs=64k conv=fsync \
			status=none >>"$CLIENT_LOG" 2>&1
		rc=$?
		if [ "$rc" = 0 ]; then
			# What the server stored, not the page cache.
			sync
			echo 3 >/proc/sys/vm/drop_caches
			sum_of "$MNT/w64k"
			rc=$?
		fi
		verdict "$rc" "$sum" "$expected_w"
		;;
	readwrite)
		# An O_DIRECT READ of data64k, which send-inv-other-rpc's peer
		# holds, and, once it does (its fault-held line), an O_DIRECT
		# WRITE of 64 KiB: a Call whose one chunk is a Read chunk, which
		# the peer pulls before it answers the READ with Send With
		# Invalidate of the WRITE's rkey. The writer starts first, its
		# file opened, and waits for its data on a FIFO, so that the
		# WRITE follows the hold at once (the peer holds for 1.5 s at
		# most). Then the READ's bytes are compared with data64k's, and
		# the written file is read back from the server.
		local pr pw rcr rcw fd got
		rm -f "$SCRATCH/rw-read"
		exec {fd}<>"$SCRATCH/rwfifo"
		timeout "$IO_LIMIT" dd of="$MNT/rw64k" oflag=direct conv=notrunc bs=64k count=1 iflag=fullblock \
			status=none <&"$fd" {fd}<&- 2>>"$CLIENT_LOG" &
		pw=$!
		timeout "$IO_LIMIT" dd if="$MNT/data64k" of="$SCRATCH/rw-read" iflag=direct bs=64k count=1 \
			status=none 2>>"$CLIENT_LOG" &
		pr=$!
		wait_until 5 peer_has '^fault-held ' ||
			echo "readwrite: no fault-held line from the peer in 5 s; writing all the same" >>"$CLIENT_LOG"
		# 64 KiB: what a pipe holds, so this returns at once.
		printf '%s' "$rw_text" >&"$fd"
		exec {fd}<&-
		wait "$pr"
		rcr=$?
		wait "$pw"
		rcw=$?
		if [ "$rcr" != 0 ] || [ "$rcw" != 0 ]; then
			echo "readwrite: the read ended $rcr, the write $rcw" >>"$CLIENT_LOG"
			case "$rcr:$rcw" in
			124:* | 137:* | *:124 | *:137) verdict 124 "" "" ;;
			*) verdict 1 "" "" ;;
			esac
		else
			got=
			IFS= read -r -N 65536 got <"$SCRATCH/rw-read"
			if [ "$got" != "$data64k_text" ]; then
				io=wrong
				echo "readwrite: the READ of data64k read wrong data" >>"$CLIENT_LOG"
			else
				# What the server stored, not the page cache.
				echo 3 >/proc/sys/vm/drop_caches
				sum_of "$MNT/rw64k"
				verdict $? "$sum" "$expected_rw"
				[ "$io" = wrong ] && echo "readwrite: the written file read back wrong" >>"$CLIENT_LOG"
			fi
		fi
		;;
	ls)
		timeout "$IO_LIMIT" ls -l "$MNT" >"$SCRATCH/ls.out" 2>>"$CLIENT_LOG"
		rc=$?
		if [ "$rc" = 0 ]; then
			io=wrong
			mapfile -t listing <"$SCRATCH/ls.out"
			for l in "${listing[@]}"; do
				[[ $l == *" data64k" ]] && io=ok
			done
		else
			verdict "$rc" "" ""
		fi
		;;
	esac
}

# again_io: an O_DIRECT READ of all of data64k, past the page cache, on
# the case's mount; sets io to its verdict.
again_io() {
	rm -f "$SCRATCH/again"
	timeout "$IO_LIMIT" dd if="$MNT/data64k" of="$SCRATCH/again" iflag=direct bs=64k count=1 \
		status=none 2>>"$CLIENT_LOG"
	local rc=$?
	if [ "$rc" = 0 ]; then
		sum_of "$SCRATCH/again"
		rc=$?
	fi
	verdict "$rc" "$sum" "$expected"
}

# ---- The client's account of each fault: true when as expected; $why
# says what was seen. Those named rs_* read what only rpcrdma_rs shows
# (its log lines, its debugfs) and do not run under the C transport. ----

# dmesg_set_mark NAME: a marker line in the kernel log begins case NAME's
# part of it (a marker, not a line count: the log may wrap, and other
# lines may come and go meanwhile). Written by the shell: no process.
dmesg_set_mark() {
	dmesg_marker="rpcrdma-rs-selftest: hostile_peer: case $1"
	echo "$dmesg_marker" >/dev/kmsg
}

# dmesg_since_mark: kmsg gets the kernel log's lines after the last
# marker of the case; none, and dmesg_marker_seen 0, if it is not there.
dmesg_since_mark() {
	local all i
	kmsg=()
	dmesg_marker_seen=0
	mapfile -t all < <(dmesg)
	for ((i = ${#all[@]} - 1; i >= 0; i--)); do
		if [[ ${all[i]} == *"$dmesg_marker" ]]; then
			kmsg=("${all[@]:i+1}")
			dmesg_marker_seen=1
			return 0
		fi
	done
	return 1
}

# dmesg_missing_why: adds to why what the kernel log says about a line
# that is not there: no marker (the log wrapped?), or a "callbacks
# suppressed" line after it (the line may have been rate-limited).
dmesg_missing_why() {
	local l
	if [ "$dmesg_marker_seen" = 0 ]; then
		why="$why; no '$dmesg_marker' line in dmesg (the log wrapped?)"
		return
	fi
	for l in "${kmsg[@]}"; do
		if [[ $l == *"callbacks suppressed"* ]]; then
			why="$why; after the case's marker: '$l' (the line may have been rate-limited)"
			return
		fi
	done
}

# rs_xprt NAME...: sets xv to the values of NAME... (empty when absent) for
# the one rpcrdma_rs transport in debugfs, in one read of the report. A
# transport whose mount is gone lingers until its destroy work has run, so
# this waits up to 30 s for the count to settle at one (as rs_xprt_field).
rs_xprt() {
	local f=/sys/kernel/debug/rpcrdma_rs/xprts i k v n l report=()
	local -A seen
	for ((i = 0; i < 300; i++)); do
		report=()
		[ -r "$f" ] && mapfile -t report <"$f"
		n=
		seen=()
		for l in "${report[@]}"; do
			read -r k v _ <<<"$l"
			[ "$k" = transports ] && n=$v
			[ -n "$k" ] && [ -z "${seen[$k]+set}" ] && seen[$k]=$v
		done
		if [ "$n" = 1 ]; then
			xv=()
			for k; do
				xv+=("${seen[$k]:-}")
			done
			return 0
		fi
		snooze 0.1
	done
	echo "rs_xprt $*: not exactly one transport in $f: ${report[*]}" >>"$CLIENT_LOG"
	xv=()
	for k; do
		xv+=("")
	done
	return 1
}

# peer_count REGEX: sets count to the number of the case's peer lines
# (since the mark) that match REGEX.
peer_count() {
	local l
	count=0
	peer_read
	for l in "${peer_lines[@]}"; do
		[[ $l =~ $1 ]] && count=$((count + 1))
	done
}

# rs_logged REGEX: the kernel log has, after the case's marker, the line
# of rpcrdma_rs naming the server, "rpcrdma_rs: $SERVER_IP4: " and then
# REGEX (after dmesg's time stamp and caller id, if any), as often as the
# case calls for. A fault's line (log_per unset) comes once per fault the
# peer fired (its fault-fired lines; at least once). A line said once per
# connection (log_per=conn: the private data, the grant) comes at least
# once and at most once per connection the peer accepted in the case. The
# lines are rate-limited: fewer are allowed only when "callbacks
# suppressed" lines of rpcrdma_rs's budgets after the marker account for
# the rest, more never. Waits up to 5 s for them; sets why to what it saw.
rs_logged() {
	local i l n=0 supp=0 first="" lo hi per re
	re="^(\[[^]]*\] ?)*rpcrdma_rs: ${SERVER_IP4//./[.]}: ($1)"
	if [ "${log_per:-}" = conn ]; then
		peer_count '^accepted '
		lo=1 hi=$((count > 1 ? count : 1))
		per="at most once per connection ($count accepted)"
	else
		peer_count '^fault-fired '
		lo=$((count > 1 ? count : 1)) hi=$lo
		per="once per fault fired ($count)"
	fi
	for ((i = 0; i < 50; i++)); do
		dmesg_since_mark
		n=0 supp=0 first=""
		for l in "${kmsg[@]}"; do
			if [[ $l =~ $re ]]; then
				n=$((n + 1))
				[ -n "$first" ] || first=${l#\[*\] }
			elif [[ $l =~ rpcrdma_rs_ratelimit:\ ([0-9]+)\ callbacks\ suppressed ]]; then
				supp=$((supp + BASH_REMATCH[1]))
			fi
		done
		[ "$n" -ge "$lo" ] && break
		snooze 0.1
	done
	if [ "$n" = 0 ]; then
		why="no line 'rpcrdma_rs: $SERVER_IP4: $1' in dmesg since the case's marker"
		dmesg_missing_why
		return 1
	fi
	why="logged $n time(s), want $per: '$first'"
	if [ "$n" -gt "$hi" ]; then
		why="$why; more often than that"
		return 1
	fi
	if [ "$n" -lt "$lo" ]; then
		if [ "$supp" -lt $((lo - n)) ]; then
			why="$why; too few, and $supp callbacks suppressed after the marker"
			return 1
		fi
		why="$why; the rest rate-limited ($supp callbacks suppressed after the marker)"
	fi
	return 0
}

# rs_retried REGEX: rpcrdma_rs logged REGEX (as rs_logged), and the RPC
# the faulty reply answered was not failed but sent again after the
# reset: the peer saw a Call with the XID of its fault after the fault. A
# READ failed with EIO and retried by the page cache would carry a new XID.
# The fault was traced too (rs_traced): a reply_error event of the kind
# the line names and a disconnect for a bad reply, or for a failed
# Receive its disconnect and a wc_error event for the Receive. (A failed
# Receive is logged as the connection's loss: "connection lost (Receive
# failed ...)".)
rs_retried() {
	local l xid="" again=0 kind=bad_chunk txid reason="bad reply" re="$*" sent_as=""
	[[ $re == "Receive failed"* ]] && re="connection lost \\($re"
	rs_logged "$re" || return 1
	peer_read
	for l in "${peer_lines[@]}"; do
		if [ -z "$xid" ]; then
			[[ $l =~ ^fault-fired\ .*\ xid=(0x[0-9a-f]+) ]] && xid=${BASH_REMATCH[1]}
			[[ $l =~ ^fault-fired\ .*\ sent_as=(0x[0-9a-f]+) ]] && sent_as=${BASH_REMATCH[1]}
		elif [[ $l == "call xid=$xid "* ]]; then
			again=1
			break
		fi
	done
	if [ "$again" != 1 ]; then
		why="$why; the RPC ${xid:-of the fault (no fault-fired line)} not sent again after the fault"
		return 1
	fi
	why="$why; the RPC $xid sent again after the reset"
	printf -v txid '0x%08x' "$xid"
	case "$*" in
	"short transport header"*) kind=short txid=0x00000000 ;;
	"bad transport header"*) kind=malformed ;;
	# Traced under the XID its transport header names: the other RPC's
	# for other-xid (sent_as), the RPC's own for nomsg-other-xid.
	"RPC message's XID"*) kind=malformed; [ -z "$sent_as" ] || printf -v txid '0x%08x' "$sent_as" ;;
	"Receive failed"*) kind="" reason="Receive failed with completion status " ;;
	esac
	rs_traced "$kind" "$txid" "$reason" || return 1
	[[ $* == "Receive failed"* ]] || return 0
	# The failed Receive itself, with the device's status and its own code.
	local wc
	wc=$(trace_events wc_error | grep -m1 "^peer=$SERVER_IP4 op=Receive vendor_err=0x[0-9a-f]* status=[A-Z_]* ([1-9][0-9]*)$")
	if [ -z "$wc" ]; then
		why="$why; no wc_error event op=Receive traced"
		return 1
	fi
	why="$why, wc_error ${wc#peer=$SERVER_IP4 }"
}

# fault_xid: sets xid to the XID of the peer's fault (fault-fired), or
# to nothing.
fault_xid() {
	local l
	xid=""
	peer_read
	for l in "${peer_lines[@]}"; do
		[[ $l =~ ^fault-fired\ .*\ xid=(0x[0-9a-f]+) ]] || continue
		printf -v xid '0x%08x' "${BASH_REMATCH[1]}"
		return 0
	done
	return 1
}

# rs_traced KIND XID REASON: the case's trace has a reply_error event of
# KIND for XID (none with KIND empty) and a disconnect whose reason starts
# with REASON (none with REASON empty), both naming the server; adds what
# was seen to why.
rs_traced() {
	local kind=$1 txid=$2 reason=$3 l err="" lost="" lines=()
	if [ -z "$trace_inst" ]; then
		why="$why; no trace: the tracefs instance was not made"
		return 1
	fi
	mapfile -t lines <"$trace_inst/trace"
	for l in "${lines[@]}"; do
		[ -n "$kind" ] && [[ $l == *" rpcrdma_rs_reply_error: peer=$SERVER_IP4 xid=$txid kind=$kind "* ]] &&
			err=1
		[ -n "$reason" ] && [[ $l == *" rpcrdma_rs_disconnect: peer=$SERVER_IP4 reason=$reason"* ]] &&
			lost=1
	done
	if [ -n "$kind" ] && [ -z "$err" ]; then
		why="$why; no reply_error event kind=$kind xid=$txid traced"
		return 1
	fi
	if [ -n "$reason" ] && [ -z "$lost" ]; then
		why="$why; no disconnect event reason=$reason... traced"
		return 1
	fi
	local seen=""
	[ -n "$kind" ] && seen="reply_error kind=$kind xid=$txid"
	[ -n "$reason" ] && seen="${seen:+$seen, }disconnect reason=${reason% }..."
	why="$why; traced $seen"
}

# check_rdma_error REGEX: the peer answered the RPC of its fault with
# RDMA_ERROR, which answers that RPC with an error (RFC 8166, section
# 4.5: rpcrdma_rs and C fail it with EIO) and is no reason to reset the
# connection: the mount's connect_count is what it was once mounted
# (connects0), and the peer saw no Call with the fault's XID again (the
# page cache may read again, under a new XID). Check 5 then has the same
# connection serve again. rpcrdma_rs also counted it (debugfs rdma_errors,
# one per fault; bad_replies 0), logged "RDMA_ERROR REGEX for xid XID"
# once per fault (rs_logged), traced a reply_error event of kind
# rdma_error for XID, and traced no disconnect.
check_rdma_error() {
	local xid l n again=0 lost=0 lines=()
	mount_xprt
	n=${xprt[4]}
	if ! fault_xid; then
		why="no fault-fired line from the peer"
		return 1
	fi
	peer_read
	for l in "${peer_lines[@]}"; do
		if [[ $l == "fault-fired "* ]]; then
			again=0
		elif [[ $l == "call xid=$xid "* ]]; then
			again=1
		fi
	done
	why="connect_count ${connects0:-?} once mounted, ${n:-?} now; the RPC $xid"
	[ "$again" = 1 ] && why="$why sent again" || why="$why not sent again"
	[ -n "$connects0" ] && [ "$n" = "$connects0" ] && [ "$again" = 0 ] || return 1
	[ "$TRANSPORT" = rs ] || return 0
	peer_count '^fault-fired '
	rs_xprt rdma_errors bad_replies
	why="$why; rdma_errors ${xv[0]:-?}, bad_replies ${xv[1]:-?} (want $count, 0)"
	[ "${xv[0]}" = "$count" ] && [ "${xv[1]}" = 0 ] || return 1
	rs_peer_logged "RDMA_ERROR $1 for xid $xid" || return 1
	rs_traced rdma_error "$xid" "" || return 1
	[ -n "$trace_inst" ] && mapfile -t lines <"$trace_inst/trace"
	for l in "${lines[@]}"; do
		[[ $l == *" rpcrdma_rs_disconnect: peer=$SERVER_IP4 "* ]] && lost=1
	done
	if [ "$lost" = 1 ]; then
		why="$why, and a disconnect"
		return 1
	fi
	why="$why, no disconnect"
}

# rs_peer_logged REGEX: with TRANSPORT=rs, the kernel log has the line
# of rpcrdma_rs naming the server, "rpcrdma_rs: $SERVER_IP4: " and then
# REGEX, since the case's marker, as often as rs_logged wants; adds what
# was seen to why. True at once with the C transport, which logs none of
# these faults.
rs_peer_logged() {
	local before=$why rc
	[ "$TRANSPORT" = rs ] || return 0
	rs_logged "$1"
	rc=$?
	why="${before:+$before; }$why"
	return "$rc"
}

# rs_pd SEND RECV RINV INLINE_SEND INLINE_RECV [FAULT]: as debugfs shows
# them; with SEND none, also the line saying there was no valid private
# data, and why (FAULT: none, bad-magic or version-2, the peer's mode).
rs_pd() {
	local got want reason ok=1 log_per=conn
	if [ "$1" = none ]; then
		want="none - - $4 $5"
		rs_xprt peer_private_data inline_send inline_recv
		got="${xv[0]} - - ${xv[1]} ${xv[2]}"
	else
		want="$1 $2 $3 $4 $5"
		rs_xprt peer_send_size peer_recv_size peer_remote_invalidation inline_send inline_recv
		got="${xv[0]} ${xv[1]} ${xv[2]} ${xv[3]} ${xv[4]}"
	fi
	why="peer send/recv/R, inline send/recv: $got (want $want)"
	[ "$got" = "$want" ] || ok=0
	if [ "$1" = none ]; then
		# None sent (iWARP passes an empty buffer, IB and RoCE a
		# zero-padded one: both are none).
		case "${6:-}" in
		none) reason="none sent" ;;
		bad-magic) reason="no format identifier in [0-9]+ octets" ;;
		version-2) reason="version 2, not 1" ;;
		*) reason=".*" ;;
		esac
		rs_peer_logged "no RPC-over-RDMA private data from the server \\($reason\\); inline thresholds $4/$5" ||
			ok=0
	fi
	[ "$ok" = 1 ]
}

# rs_credits 1|requested: the grant the client uses, and the line saying
# what the server granted instead (credits-zero grants 0, credits-max
# 2^32-1, which the client clamps to what it asked for).
rs_credits() {
	local granted requested sent log_per=conn
	rs_xprt credits_granted credits_requested
	granted=${xv[0]} requested=${xv[1]}
	why="credits granted $granted of $requested requested"
	if [ "$1" = requested ]; then
		[ -n "$granted" ] && [ "$granted" = "$requested" ] || return 1
		sent=4294967295
	else
		[ "$granted" = "$1" ] || return 1
		sent=0
	fi
	rs_peer_logged "server granted $sent credits; using $granted"
}

check_bad_xids() {
	local n
	mount_xprt
	n=${xprt[9]}
	why="bad_xids $n"
	[ "${n:-0}" -gt 0 ] || return 1
	rs_peer_logged "reply for unknown XID 0x[0-9a-f]{8}, dropped"
}

# check_duplicate: the reply's copy was dropped, once per fault, and
# nothing else came of it. The copy finds its RPC either complete
# (answered at once, by Send With Invalidate): sunrpc finds no such XID,
# and mountstats bad_xids grows by one (bad0: its value once mounted),
# rpcrdma_rs logging "reply for unknown XID XID, dropped" and tracing
# reply_error kind=unknown_xid; or, with rpcrdma_rs, answered but still
# being invalidated: debugfs duplicate_replies grows by one, with "duplicate
# reply dropped (xid XID)" and kind=duplicate. Never both. A duplicate is
# no fault of the connection, which stays (connect_count as once
# mounted), and the RPC was answered once, not sent again; the READ's
# data is right (check 3's verdict, io, is ok).
check_duplicate() {
	local n c dup=0 l xid again=0 fired
	peer_count '^fault-fired '
	fired=$count
	fault_xid
	peer_read
	for l in "${peer_lines[@]}"; do
		if [[ $l == "fault-fired "* ]]; then
			again=0
		elif [ -n "$xid" ] && [[ $l == "call xid=$xid "* ]]; then
			again=1
		fi
	done
	mount_xprt
	n=$((${xprt[9]:-0} - ${bad0:-0}))
	c=${xprt[4]}
	[ "$TRANSPORT" = rs ] && rs_xprt duplicate_replies && dup=${xv[0]:-0}
	why="$fired fault(s) fired, xid ${xid:-?}; bad_xids +$n, duplicate_replies $dup"
	why="$why; connect_count ${connects0:-?} once mounted, ${c:-?} now"
	[ "$again" = 1 ] && why="$why; the RPC sent again" || why="$why; the RPC not sent again"
	why="$why; the READ ended $io"
	[ "$fired" -ge 1 ] && [ "$io" = ok ] && [ "$again" = 0 ] || return 1
	[ -n "$connects0" ] && [ "$c" = "$connects0" ] || return 1
	if [ "$n" = "$fired" ] && [ "$dup" = 0 ]; then
		rs_peer_logged "reply for unknown XID $xid, dropped" || return 1
		[ "$TRANSPORT" = rs ] || return 0
		rs_traced unknown_xid "$xid" ""
	elif [ "$n" = 0 ] && [ "$dup" = "$fired" ]; then
		rs_peer_logged "duplicate reply dropped \\(xid $xid\\)" || return 1
		rs_traced duplicate "$xid" ""
	else
		why="$why (want bad_xids +$fired or duplicate_replies $fired, not both)"
		return 1
	fi
}

# check_write_pad: the peer wrote the XDR pad of the READ's odd-length
# data (pad_bytes=3 of 6001) into the pad segment the Call offered after
# the data's, and returned it with that length, as RFC 8166 (section
# 3.4.6) lets a server do: the client takes the Reply as it is (its data
# right: check 3), with no reason to reset the connection (connect_count
# as once mounted, connects0) nor to send the RPC again. A READ without
# a pad segment leaves the fault unfired, and the peer's
# fault-not-applicable line (reason=no-pad-segment) is shown. The rest is
# check_taken's (rpcrdma_rs also counted no bad reply), whose account
# starts with the fault-fired line, where pad_bytes=3 must be.
check_write_pad() {
	local l na="" rc=0
	peer_read
	for l in "${peer_lines[@]}"; do
		[[ $l == "fault-not-applicable name=write-pad "* ]] && [ -z "$na" ] && na=$l
	done
	if ! fault_xid; then
		why="no fault-fired line from the peer"
		[ -n "$na" ] && why="$why; the peer: $na"
		[[ $na == *" reason=no-pad-segment"* ]] && why="$why (the READ offered no pad segment)"
		return 1
	fi
	check_taken || rc=1
	[[ $why == *" pad_bytes=3 "* ]] || { why="$why (want pad_bytes=3)"; rc=1; }
	return "$rc"
}

# check_taken: the peer fired its fault, a Reply a client takes as it is
# (its data right: check 3), and the client took it: the connection kept
# (connect_count as once mounted, connects0) and the RPC not sent again;
# rpcrdma_rs counted no bad reply (debugfs bad_replies 0).
check_taken() {
	local l c xid fired="" again=0
	fault_xid || { why="no fault-fired line from the peer"; return 1; }
	for l in "${peer_lines[@]}"; do
		if [[ $l == "fault-fired "* ]]; then
			fired=$l again=0
		elif [[ $l == "call xid=$xid "* ]]; then
			again=1
		fi
	done
	mount_xprt
	c=${xprt[4]}
	why="${fired#fault-fired }; connect_count ${connects0:-?} once mounted, ${c:-?} now"
	[ "$again" = 1 ] && why="$why; the RPC sent again" || why="$why; the RPC not sent again"
	[ -n "$connects0" ] && [ "$c" = "$connects0" ] && [ "$again" = 0 ] || return 1
	[ "$TRANSPORT" = rs ] || return 0
	rs_xprt bad_replies
	why="$why; bad_replies ${xv[0]:-?} (want 0)"
	[ "${xv[0]}" = 0 ]
}

# check_left_out REGEX: the Reply taken as check_taken says, and for
# rpcrdma_rs the line saying what of it did not fit the RPC's buffer.
check_left_out() {
	check_taken || return 1
	[ "$TRANSPORT" = rs ] || return 0
	local taken_why=$why
	rs_logged "$1" || return 1
	why="$taken_why; $why"
}

# check_reconnected: the mount's connect_count grew after the mount
# (connects0, recorded by run_case once mounted), and rpcrdma_rs logged
# the connection's loss, naming the server.
check_reconnected() {
	local n
	mount_xprt
	n=${xprt[4]}
	why="connect_count ${connects0:-?} once mounted, ${n:-?} now"
	[ -n "$connects0" ] && [ "${n:-0}" -gt "$connects0" ] 2>/dev/null || return 1
	rs_peer_logged "(connection lost \\(|no reply in time; resetting the connection)"
}

# check_backoff: the server broke the protocol for an RPC and again for
# its retransmission (both faults name one XID): the client reconnected at
# once the first time and after sunrpc's backoff (5 s) the second, not in
# a loop and not later. The mount's connect_count grew by 2 or more since
# the mount (connects0), and its connect_time, the whole seconds spent
# connecting, backoff included, by 4 to 12 (ctime0: a first reconnect
# delayed as well would add 5 + 10); rpcrdma_rs logged the fault.
# (backoff_seen sets bo_count and bo_time, names that wait_until's own
# locals do not hide.)
backoff_seen() {
	mount_xprt
	bo_count=${xprt[4]} bo_time=${xprt[5]}
	[ -n "$connects0" ] && [ -n "$ctime0" ] &&
		[ "${bo_count:-0}" -ge $((connects0 + 2)) ] 2>/dev/null
}
check_backoff() {
	local bo_count bo_time l xids=() reconnected=0
	wait_until 10 backoff_seen && reconnected=1
	why="connect_count ${connects0:-?} once mounted, ${bo_count:-?} now; connect_time ${ctime0:-?} s then, ${bo_time:-?} s now"
	peer_read
	for l in "${peer_lines[@]}"; do
		[[ $l =~ ^fault-fired\ .*\ xid=(0x[0-9a-f]+) ]] && xids+=("${BASH_REMATCH[1]}")
	done
	why="$why; faults for ${xids[*]:-no XID}"
	[ "${#xids[@]}" = 2 ] && [ "${xids[0]}" = "${xids[1]}" ] && [ "$reconnected" = 1 ] || return 1
	[ "${bo_time:-0}" -ge $((ctime0 + 4)) ] && [ "${bo_time:-0}" -le $((ctime0 + 12)) ] 2>/dev/null ||
		return 1
	rs_peer_logged "bad transport header: UnknownProc\\(5\\)"
}

# probe_scan: from the peer's "probe rkey=R result=closed|open|skipped|
# untested status=N ..." lines (send-inv-other-rpc's, on the Call after
# its Reply), probes, closed (how many were refused), open (one that was
# not) and results (each probe's result).
probe_scan() {
	local l
	probes=0 closed=0 open="" results=""
	peer_read
	for l in "${peer_lines[@]}"; do
		[[ $l == "probe "* ]] || continue
		probes=$((probes + 1))
		[[ $l =~ \ result=([a-z]+) ]] && results="$results ${BASH_REMATCH[1]}"
		[[ $l == *" result=closed"* ]] && closed=$((closed + 1))
		[[ $l == *" result=open"* ]] && open=$l
	done
}

# check_other_rpc: the peer held the READ's Reply until a Call came whose
# one chunk is a Read chunk (readwrite's WRITE), pulled that chunk, then
# sent the READ's Reply with Send With Invalidate of the WRITE's rkey
# (its fault-fired line: xid, of_xid, of_proc) and answered the WRITE
# with a plain Send. That invalidation is no proof that the READ's memory
# is closed: the client must invalidate the READ's regions itself before
# it delivers the READ. On the next Call the peer writes the READ's data
# again to the READ's Write chunk rkeys ("probe rkey=R
# result=closed|open|skipped|untested status=N"): over Soft-RoCE at least
# one must be closed (the Write refused) and none open (skipped: the MR
# registered again for a Call then; untested: no Call came on that
# connection, or its QP had failed), and neither Reply failed at the peer
# (no reply-failed line for either XID). This binds the C client as much
# (acct_strict): it too must close the READ's regions. Over Soft-iWARP
# the peer's Send With Invalidate fails at the client (see peer_case):
# only the reset shows (connect_count grown), and no probe may find the
# rkeys open.
check_other_rpc() {
	local l fired="" notapp="" a="" b="" bproc="" failed="" before rc
	local probes closed open results
	[ "$RDMA" = siw ] || acct_strict=1
	peer_read
	for l in "${peer_lines[@]}"; do
		if [[ $l =~ ^fault-fired\ .*\ xid=(0x[0-9a-f]+)\ .*\ of_xid=(0x[0-9a-f]+) ]]; then
			fired=$l a=${BASH_REMATCH[1]} b=${BASH_REMATCH[2]}
			[[ $l =~ \ of_proc=([A-Za-z0-9_]+) ]] && bproc=${BASH_REMATCH[1]}
		elif [[ $l == "fault-not-applicable name=send-inv-other-rpc "* ]]; then
			notapp=$l
		fi
	done
	if [ -z "$fired" ]; then
		why="no fault-fired line naming another RPC (of_xid=)"
		[ -n "$notapp" ] && why="$why; the peer: '$notapp'"
		return 1
	fi
	why="the READ $a answered with Send With Invalidate of the rkey of ${bproc:-?} $b"
	wait_until 10 peer_has '^probe ' || :
	probe_scan
	local probed="$probes probe(s) of the READ's rkeys${results:+ (result:$results)}"
	[ -n "$open" ] && probed="$probed, one open: '$open'"
	if [ "$RDMA" = siw ]; then
		before=$why
		check_reconnected
		rc=$?
		why="$before; $why; $probed"
		[ "$rc" = 0 ] && [ -z "$open" ]
		return
	fi
	for l in "${peer_lines[@]}"; do
		[[ $l == "reply-failed xid=$a "* ]] || [[ $l == "reply-failed xid=$b "* ]] && failed=$l
	done
	[ -n "$failed" ] && why="$why; a Reply failed: '$failed'"
	why="$why; $probed"
	if [ "$closed" = 0 ] && [ -z "$open" ]; then
		why="$why (want one closed at least)"
	fi
	[ -z "$failed" ] && [ "$closed" -ge 1 ] && [ -z "$open" ]
}

# check_grant GRANT [SHRUNK]: the credits cases. Their account is the
# peer's, which it gives at each connection's end (after_grant, once
# unmounted), and binds the C client as much (acct_strict). With
# rpcrdma_rs, debugfs credits_granted is the last grant (SHRUNK if given).
check_grant() {
	local want=${1##* }
	acct_strict=1
	if [ "$TRANSPORT" != rs ]; then
		why="the peer's account once unmounted"
		return 0
	fi
	rs_xprt credits_granted
	why="credits_granted ${xv[0]:-?} (want $want)"
	[ "${xv[0]}" = "$want" ]
}

# grant_scan: from the case's first accepted connection on, gr_conns
# connections, gr_lines their "credits" lines (one at each connection's
# end), gr_over the "credit-overrun" lines.
grant_scan() {
	local l on=0
	gr_conns=0 gr_lines=() gr_over=()
	peer_read
	for l in "${peer_lines[@]}"; do
		[[ $l == "accepted "* ]] && on=1 && gr_conns=$((gr_conns + 1))
		[ "$on" = 1 ] || continue
		case "$l" in
		"credits "*) gr_lines+=("$l") ;;
		"credit-overrun "*) gr_over+=("$l") ;;
		esac
	done
	[ "$gr_conns" -gt 0 ] && [ "${#gr_lines[@]}" -ge "$gr_conns" ]
}

# after_grant GRANT [SHRUNK]: once unmounted, every connection of the case
# has its "credits max_outstanding=N overruns=K granted=G" line; each says
# overruns=0, with no "credit-overrun" line. The peer held its replies
# until GRANT Calls were outstanding, so a client that keeps to its grant
# reaches it and goes no further: one line at least says max_outstanding
# GRANT, none more. With SHRUNK (the grant cut to it under load) it is
# only never more than GRANT.
after_grant() {
	local grant=${1%% *} shrunk="" l max over g shown="" bad="" reached=0
	local gr_conns gr_lines gr_over
	[ "$1" != "$grant" ] && shrunk=${1##* }
	wait_until 15 grant_scan || :
	for l in "${gr_lines[@]}"; do
		max="" over="" g=""
		[[ $l =~ \ max_outstanding=([0-9]+) ]] && max=${BASH_REMATCH[1]}
		[[ $l =~ \ overruns=([0-9]+) ]] && over=${BASH_REMATCH[1]}
		[[ $l =~ \ granted=([0-9]+) ]] && g=${BASH_REMATCH[1]}
		shown="$shown, ${max:-?}/${over:-?}/${g:-?}"
		[ "$over" = 0 ] || bad="overruns"
		[ -n "$max" ] && [ "$max" -le "$grant" ] || bad="${bad:+$bad, }max_outstanding over $grant"
		[ "$max" = "$grant" ] && reached=1
	done
	why="${why:+$why; }peer: $gr_conns connection(s), credits lines (max_outstanding/overruns/granted) ${shown#, }"
	[ "${#gr_over[@]}" -gt 0 ] && why="$why; ${#gr_over[@]} credit-overrun line(s), first '${gr_over[0]}'" &&
		bad="${bad:+$bad, }credit-overrun"
	if [ "$gr_conns" = 0 ] || [ "${#gr_lines[@]}" -lt "$gr_conns" ]; then
		why="$why; not every connection's credits line came"
		return 1
	fi
	if [ -z "$shrunk" ] && [ "$reached" = 0 ] && [ -z "$bad" ]; then
		bad="${bad:+$bad, }max_outstanding never $grant (the client was not driven to its grant)"
	fi
	[ -n "$bad" ] && why="$why; $bad"
	[ -z "$bad" ]
}

# witness_read: w_rbi and w_dc get reply_before_invalidation and
# deliveries_checked from rpcrdma_rs's reply-order witness (debugfs, in
# the test-hook build only); fails, both empty, without them.
WITNESS=/sys/kernel/debug/rpcrdma_rs/witness
witness_read() {
	local l k v lines=()
	w_rbi="" w_dc=""
	[ -r "$WITNESS" ] && mapfile -t lines <"$WITNESS"
	for l in "${lines[@]}"; do
		read -r k v _ <<<"$l"
		case "$k" in
		reply_before_invalidation) w_rbi=$v ;;
		deliveries_checked) w_dc=$v ;;
		esac
	done
	[ -n "$w_rbi" ] && [ -n "$w_dc" ]
}

# witness_check IO_KIND IO: with the readings before (w0_*) and after
# (w1_*) the case's I/O and at the case's end (w2_*): no reply was ever
# delivered before its RPC's memory was invalidated
# (reply_before_invalidation 0 at the end: the counter is the module's,
# so the case it first grew in is the one to fail), and an I/O that moved
# data through chunks (read, read2, write, readpar, readwrite, readodd)
# and ended ok had the witness check its deliveries (deliveries_checked
# grew during it). Sets wwhy.
witness_check() {
	if [ -z "$w0_dc" ] || [ -z "$w1_dc" ] || [ -z "$w2_rbi" ]; then
		wwhy="no reply-order witness: $WITNESS missing or incomplete (the test-hook build has it)"
		return 1
	fi
	wwhy="witness: reply_before_invalidation $w2_rbi (${w0_rbi:-?} before the I/O)"
	wwhy="$wwhy, deliveries_checked +$((w1_dc - w0_dc)) during the I/O"
	[ "$w2_rbi" = 0 ] || return 1
	case "$1:$2" in
	read:ok | read2:ok | write:ok | readpar:ok | readwrite:ok | readodd:ok)
		if [ "$w1_dc" -le "$w0_dc" ]; then
			wwhy="$wwhy (want more: the I/O moved data through chunks)"
			return 1
		fi
		;;
	esac
	return 0
}

# check_frwr write|read: the peer's RDMA to the rkeys of a finished RPC
# failed. The peer posts its probe only as the first work requests after
# the Reply's, on a QP in RTS (qp_before), and reports the first one's
# status, so that a failure is the probe's own. Over Soft-RoCE it fails
# REM_ACCESS_ERR. Over Soft-iWARP the client refuses by terminating the
# connection, and the QP is then in error: a Write has completed locally
# (SUCCESS) or, if the termination came while siw still sent it, is
# flushed (WR_FLUSH_ERR) or failed by siw's transmit path when the
# socket went away under it (LOC_QP_OP_ERR, siw_qp_sq_process), and a
# Read is flushed (siw completes the Read requests of a QP its peer
# terminated that way, never REM_ACCESS_ERR) or fails the same way.
check_frwr() {
	local l line="" status="" qp="" before=""
	peer_read
	for l in "${peer_lines[@]}"; do
		[[ $l == "frwr-after-reply $1 "* ]] && { line=$l; break; }
	done
	why="peer: ${line:-no frwr-after-reply line}"
	[[ $line =~ \ status=([A-Z_]*) ]] && status=${BASH_REMATCH[1]}
	[[ $line =~ \ qp=([A-Z]*) ]] && qp=${BASH_REMATCH[1]}
	[[ $line =~ \ qp_before=([A-Z]*) ]] && before=${BASH_REMATCH[1]}
	if [ -n "$line" ] && [ "$before" != RTS ]; then
		why="$why (the QP was not in RTS before the probe: nothing was tested)"
		return 1
	fi
	case "$RDMA:$1:$status" in
	*:REM_ACCESS_ERR) return 0 ;;
	siw:write:SUCCESS | siw:*:WR_FLUSH_ERR | siw:*:LOC_QP_OP_ERR) [ "$qp" = ERR ] ;;
	*) return 1 ;;
	esac
}

# phase NAME: the time since the last phase (or the case's start) went to
# NAME; case_done says where a case's time went.
phase() {
	local now=${EPOCHREALTIME/[.,]/} us
	us=$((now - phase_at))
	phase_at=$now
	printf -v phases '%s %s %d.%d' "$phases" "$1" $((us / 1000000)) $((us / 100000 % 10))
}

# case_done NAME START: what the case's time went to, and its peer log.
case_done() {
	phase unmount
	peer_case_end "$1"
	elapsed "$2"
	tap_diag "$1: $secs s (${phases# })"
}

# run_case LINE
run_case() {
	local case_name io_kind want args check io sum secs start l last shown=0
	local phases="" phase_at
	start=${EPOCHREALTIME/[.,]/}
	phase_at=$start
	split_case "$1"
	local name=$case_name
	local why="" kind=${check%% *} arg=${check#* }
	printf '=== %s %(%T)T\n' "$name" -1 >>"$CLIENT_LOG"
	dmesg_set_mark "$name"
	[ -n "$trace_inst" ] && : >"$trace_inst/trace"
	peer_case "$name" "$args"
	why="the mount failed"
	if ! peer_ready "$name" "$args"; then
		why="no peer took the case"
	elif phase ready && peer_mount; then
		phase mount
		why=
		if ! wait_until 10 peer_took_case "$name"; then
			peer_last 3
			why="no connection accepted under this case; the peer: $last"
		fi
	fi
	if [ -n "$why" ]; then
		tap_not_ok "$name: mounted, over a new connection to the peer ($why)"
		tap_not_ok "$name: the fault fired and the I/O ended in time (not mounted)"
		tap_not_ok "$name: the I/O ended as expected (not mounted)"
		tap_not_ok "$name: the client's account (not mounted)"
		tap_not_ok "$name: the same mount works afterwards (not mounted)"
		peer_umount || tap_diag "$name: unmount needed -f -l"
		peer_case_end "$name"
		if ! peer_alive; then
			peer_mark=0
			peer_read
			peer_last 2
			tap_diag "$name: the peer had gone: $last"
			peer_start
		fi
		elapsed "$start"
		tap_diag "$name: $secs s"
		return
	fi
	tap_ok "$name: mounted, over a new connection to the peer"
	# The connections so far, and the seconds spent making them
	# (check_reconnected, check_backoff).
	# And bad_xids (check_duplicate).
	local connects0="" ctime0="" bad0=""
	mount_xprt && connects0=${xprt[4]} ctime0=${xprt[5]} bad0=${xprt[9]}
	# The reply-order witness around the I/O and at the end (witness_check).
	local w_rbi w_dc w0_rbi="" w0_dc="" w1_dc="" w2_rbi=""
	[ "$TRANSPORT" = rs ] && witness_read && w0_rbi=$w_rbi w0_dc=$w_dc

	local io_start=${EPOCHREALTIME/[.,]/}
	phase connected
	do_io "$io_kind"
	[ "$TRANSPORT" = rs ] && witness_read && w1_dc=$w_dc
	elapsed "$io_start"
	local io_secs=$secs
	phase io
	if [ "${check%% *}" = frwr ]; then
		# The peer touches the old rkeys a moment after its Reply.
		wait_until 30 peer_has '^frwr-after-reply ' || tap_diag "$name: no probe result from the peer"
	fi
	local cache_checked=""
	if [ "$check" = "frwr write" ]; then
		if [ "$io" = ok ]; then
			# The page cache must not show what the peer wrote to
			# the READ's old rkeys.
			sum_of "$MNT/data64k"
			verdict $? "$sum" "$expected"
			cache_checked="; the page cache unchanged after the peer's Writes"
		else
			# (The case expects ok: check 3 says so.)
			tap_diag "$name: the page cache not checked: the READ ended $io"
		fi
	fi
	mount_xprt
	tap_diag "$name: I/O $io in ${io_secs}s; $xprt_line"
	peer_read
	for l in "${peer_lines[@]}"; do
		[[ $l =~ ^(fault|frwr|completion|reply-failed|call-failed|connect-refused|case-error|credit-overrun|probe) ]] ||
			continue
		tap_diag "$name: peer: $l"
		shown=$((shown + 1))
		[ "$shown" = 5 ] && break
	done

	local fired=1 peer_gone=""
	case "$args" in
	*--fault*) peer_has '^fault-fired ' || fired=0 ;;
	*) peer_has '^call ' || fired=0 ;;
	esac
	# The peer must survive its own fault: a case that killed it fails
	# here, and a new peer serves the cases after.
	peer_fine || tap_diag "$name: the peer did not come through the case: $peer_gone"
	if [ "$fired" = 1 ] && [ "$io" != hung ] && [ -z "$peer_gone" ]; then
		tap_ok "$name: the fault fired and the I/O ended in time ($io)"
	else
		tap_not_ok "$name: the fault fired and the I/O ended in time (fired=$fired, I/O $io${peer_gone:+, the peer: $peer_gone})"
	fi

	# The I/O's outcome is the case's: ok, error, or either of them; wrong
	# data never. The C client's outcome is compared too: where it is not
	# the one expected, the case is a known skip that says so (wrong
	# data fails all the same).
	local bad=""
	if [ "$io" = wrong ]; then
		bad="wrong data"
	elif [ "$want" = either ]; then
		[ "$io" = ok ] || [ "$io" = error ] || bad="the I/O ended $io, expected ok or error"
	elif [ "$io" != "$want" ]; then
		bad="the I/O ended $io, expected $want"
	fi
	if [ -z "$bad" ]; then
		tap_ok "$name: the I/O ended as expected ($io; expected $want$cache_checked)"
	elif [ "$TRANSPORT" = c ] && [ "$io" != wrong ]; then
		tap_skip "$name: the I/O ended as expected" "C differs: $bad"
	elif [ "$TRANSPORT" = c ] && [[ " $C_WRONG_DATA " == *" $name "* ]]; then
		# The reference's known hole, recorded rather than failed: the
		# column shows it; wrong data fails everywhere else.
		tap_skip "$name: the I/O ended as expected" \
			"C differs: wrong data, the C client's known defect (see C_WRONG_DATA)"
	else
		tap_not_ok "$name: the I/O ended as expected ($bad)"
	fi

	# Check 4, the client's account: computed now, reported with check 5
	# once the case is unmounted (the witness's last reading follows
	# check 5's I/O; the credits cases' account comes at the connection's
	# end). acct: ok, fail or skip; acct_strict: a failure with the C
	# client is no "C differs" skip.
	local acct acct_strict="" wwhy="" case_io=$io
	if [ "$TRANSPORT" != rs ] && declare -F "rs_$kind" >/dev/null; then
		acct=skip why="rpcrdma_rs's own report and log"
	elif declare -F "rs_$kind" >/dev/null; then
		read -r -a words <<<"$arg"
		"rs_$kind" "${words[@]}" && acct=ok || acct=fail
	else
		"check_$kind" "$arg" && acct=ok || acct=fail
	fi

	phase checks
	# The fault is over (a case's fault fires once, but for the credits
	# cases, which still work): the mount must serve again. After an
	# RDMA_ERROR, over the connection it kept.
	local again_why=""
	again_io
	if [ "$kind" = rdma_error ] && [ "$io" = ok ]; then
		mount_xprt
		again_why=" (connect_count ${connects0:-?} once mounted, ${xprt[4]:-?} now)"
		[ -n "$connects0" ] && [ "${xprt[4]}" = "$connects0" ] || io="ok, over another connection"
	fi
	phase again
	if [ "$TRANSPORT" = rs ]; then
		witness_read && w2_rbi=$w_rbi
		witness_check "$io_kind" "$case_io" || acct=fail
		why="$why; $wwhy"
	fi

	peer_umount || tap_diag "$name: unmount needed -f -l"
	if declare -F "after_$kind" >/dev/null; then
		"after_$kind" "$arg" || acct=fail
	fi
	if [ "$acct" = ok ]; then
		tap_ok "$name: the client's account ($why)"
	elif [ "$acct" = skip ]; then
		tap_skip "$name: the client's account" "$why"
	elif [ "$TRANSPORT" = c ] && [ -z "$acct_strict" ]; then
		tap_skip "$name: the client's account" "C differs: $why"
	else
		tap_not_ok "$name: the client's account ($why)"
	fi
	if [ "$io" = ok ]; then
		tap_ok "$name: the same mount works afterwards$again_why"
	else
		tap_not_ok "$name: the same mount works afterwards (an O_DIRECT READ ended $io$again_why)"
	fi
	case_done "$name" "$start"
	if [ -n "$peer_gone" ]; then
		tap_diag "$name: starting a new peer for the cases after"
		peer_stop || tap_diag "$name: the old peer did not stop"
		peer_start
	fi
}

peer_start
for c in "${selected[@]}"; do
	run_case "$c"
done

# A well-behaved peer again: a new case, so a new directory, and a new
# connection; both directions, chunks included.
final_check() {
	peer_case final ""
	peer_ready final "" || return 1
	peer_mount || return 1
	if ! wait_until 10 peer_took_case final; then
		tap_diag "final: no connection accepted under this case"
		return 1
	fi
	do_io write
	[ "$io" = ok ] || { tap_diag "final: write and read back: $io"; return 1; }
	do_io read
	[ "$io" = ok ] || { tap_diag "final: read: $io"; return 1; }
	do_io ls
	[ "$io" = ok ] || { tap_diag "final: ls: $io"; return 1; }
	mount_xprt
	tap_diag "final: $xprt_line"
	peer_umount
}
final_start=${EPOCHREALTIME/[.,]/}
phases="" phase_at=$final_start
tap_check "final: a well-behaved peer serves a new mount, both ways" final_check
peer_umount
case_done final "$final_start"
peer_stop || tap_diag "the peer did not stop"
elapsed "$run_start"
tap_diag "hostile_peer.sh: $secs s"
tap_exit
