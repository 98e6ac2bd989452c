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
#      is otherwise debugfs or mountstats;
#   5. the same mount works afterwards: an O_DIRECT READ of data64k goes
#      to the peer again (well-behaved by then, or still granting absurd
#      credits) and comes back right.
# With TRANSPORT=c the same cases run as the reference: where the C client
# differs in 3 or 4, the case is skipped with the reason "C differs: ..."
# (known_skips accepts it, and the harness lists it); wrong data fails.
# A last case mounts a well-behaved peer again and moves data both ways.
# Each case says how long it took ("# NAME: N s").
#
# Under TCG every process the test starts costs about a tenth of a second
# (binaries come over 9p), so the steps of a case are shell builtins where
# they can be: the mount, the I/O and the unmount, each under timeout,
# dmesg where a log line is checked, and the one question to the server
# guest whether the peer still runs (peer_alive), are its only processes.
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
	"wrong-xid | read | ok | --fault wrong-xid | bad_xids"
	"duplicate-reply | read | ok | --fault duplicate-reply | duplicate"
	"reply-too-long | read | ok | --fault reply-too-long | retried Receive failed with completion status"
	"write-chunk-overflow | read | ok | --fault write-chunk-overflow | retried Write chunk longer than offered"
	"write-chunk-extra-segment | read | ok | --fault write-chunk-extra-segment | retried Write chunk longer than offered"
	"reply-chunk-overflow | ls | ok | --fault reply-chunk-overflow --on readdirplus | retried Reply chunk longer than offered"
	"nomsg-no-reply-chunk | read | ok | --fault nomsg-no-reply-chunk | retried malformed reply chunk lists"
	"disconnect-mid-reply | read | ok | --fault disconnect-mid-reply | reconnected"
	"silence | read | ok | --fault silence | reconnected"
	"send-inv-unknown | read | ok | --fault send-inv-unknown | reconnected"
	"send-inv-other-rpc | read2 | ok | --fault send-inv-other-rpc | other_rpc"
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
	trace_start rpcrdma_rs_hostile reply_error disconnect ||
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
if [ "${BREAK_DATA_CHECK:-0}" = 1 ]; then
	tap_diag "BREAK_DATA_CHECK=1: corrupting the expected checksums"
	expected=$(rotate_first_digit <<<"$expected")
	expected_h1=$(rotate_first_digit <<<"$expected_h1")
	expected_h2=$(rotate_first_digit <<<"$expected_h2")
	expected_w=$(rotate_first_digit <<<"$expected_w")
fi

# ---- Waiting without a process ----

# snooze SECONDS: a read that times out on a FIFO nobody writes to.
[ -p "$SCRATCH/snooze" ] || mkfifo "$SCRATCH/snooze"
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

rs_logged() {
	local i l re="$*"
	for ((i = 0; i < 50; i++)); do
		dmesg_since_mark
		for l in "${kmsg[@]}"; do
			[[ $l =~ $re ]] && { why="logged"; return 0; }
		done
		snooze 0.1
	done
	why="no line matching '$re' in dmesg since the case's marker"
	dmesg_missing_why
	return 1
}

# rs_retried REGEX: rpcrdma_rs logged REGEX (as rs_logged), and the RPC
# the faulty reply answered was not failed but sent again after the
# reset: the peer saw a Call with the XID of its fault after the fault. A
# READ failed with EIO and retried by the page cache would carry a new XID.
# The fault was traced too (rs_traced): a reply_error event of the kind
# the line names and a disconnect for a bad reply, or for a failed
# Receive only its disconnect.
rs_retried() {
	local l xid="" again=0 kind=bad_chunk txid reason="bad reply"
	rs_logged "$@" || return 1
	peer_read
	for l in "${peer_lines[@]}"; do
		if [ -z "$xid" ]; then
			[[ $l =~ ^fault-fired\ .*\ xid=(0x[0-9a-f]+) ]] && xid=${BASH_REMATCH[1]}
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
	"Receive failed"*) kind="" reason="Receive failed with completion status " ;;
	esac
	rs_traced "$kind" "$txid" "$reason"
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

# rs_rdma_error REGEX: rpcrdma_rs logged "RDMA_ERROR REGEX" (as
# rs_logged) and traced a reply_error event of kind rdma_error for the
# RPC the peer answered with it. The connection stays.
rs_rdma_error() {
	local xid
	rs_logged "RDMA_ERROR $*" || return 1
	if ! fault_xid; then
		why="$why; no fault-fired line from the peer"
		return 1
	fi
	rs_traced rdma_error "$xid" ""
}

# rs_peer_logged REGEX: with TRANSPORT=rs, the kernel log has a line of
# rpcrdma_rs naming the server, "rpcrdma_rs: $SERVER_IP4: " and then
# REGEX, since the case's marker; adds what was seen to why. True at once
# with the C transport, which logs none of these faults.
rs_peer_logged() {
	local before=$why rc
	[ "$TRANSPORT" = rs ] || return 0
	rs_logged "rpcrdma_rs: ${SERVER_IP4//./[.]}: $1"
	rc=$?
	why="$before; $why"
	return "$rc"
}

# rs_pd SEND RECV RINV INLINE_SEND INLINE_RECV [FAULT]: as debugfs shows
# them; with SEND none, also the line saying there was no valid private
# data, and why (FAULT: none, bad-magic or version-2, the peer's mode).
rs_pd() {
	local got want reason ok=1
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
	local granted requested sent
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

check_duplicate() {
	local n l
	mount_xprt
	n=${xprt[9]}
	why="bad_xids $n"
	[ "${n:-0}" -gt 0 ] && return 0
	dmesg_since_mark
	for l in "${kmsg[@]}"; do
		[[ $l == *"duplicate reply dropped"* ]] && { why="logged"; return 0; }
	done
	if [ "$TRANSPORT" = rs ]; then
		rs_xprt duplicate_replies
		why="$why, duplicate_replies ${xv[0]}, no 'duplicate reply dropped' logged"
		dmesg_missing_why
	fi
	return 1
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

# check_other_rpc: a Reply's Send With Invalidate named the rkey of
# another RPC in flight, and the connection was reset. Over Soft-RoCE
# that rkey was really invalid afterwards: the peer's RDMA Write of the
# other RPC's data to it failed REM_ACCESS_ERR (the client must neither
# have taken it for the first RPC's nor used the other RPC's memory as
# still registered). Over Soft-iWARP the peer's Send With Invalidate
# fails at the client (see peer_case), so only the reset shows.
check_other_rpc() {
	local l other="" line=""
	check_reconnected || return 1
	[ "$RDMA" = rxe ] || return 0
	peer_read
	for l in "${peer_lines[@]}"; do
		[[ $l =~ ^fault-fired\ .*\ of_xid=(0x[0-9a-f]+) ]] && other=${BASH_REMATCH[1]}
	done
	for l in "${peer_lines[@]}"; do
		[ -n "$other" ] && [[ $l == "reply-failed xid=$other "* ]] && line=$l
	done
	why="$why; the other RPC's (${other:-?}) reply: ${line:-did not fail}"
	[[ $line == *" status=REM_ACCESS_ERR"* ]]
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
	local connects0="" ctime0=""
	mount_xprt && connects0=${xprt[4]} ctime0=${xprt[5]}

	local io_start=${EPOCHREALTIME/[.,]/}
	phase connected
	do_io "$io_kind"
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
		[[ $l =~ ^(fault|frwr|completion|reply-failed|call-failed|connect-refused|case-error) ]] || continue
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
	else
		tap_not_ok "$name: the I/O ended as expected ($bad)"
	fi

	if [ "$TRANSPORT" != rs ] && declare -F "rs_$kind" >/dev/null; then
		tap_skip "$name: the client's account" "rpcrdma_rs's own report and log"
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
		tap_skip "$name: the client's account" "C differs: $why"
	else
		tap_not_ok "$name: the client's account ($why)"
	fi

	phase checks
	# The fault is over (a case's fault fires once, but for the credits
	# cases, which still work): the mount must serve again.
	again_io
	phase again
	if [ "$io" = ok ]; then
		tap_ok "$name: the same mount works afterwards"
	else
		tap_not_ok "$name: the same mount works afterwards (an O_DIRECT READ ended $io)"
	fi

	peer_umount || tap_diag "$name: unmount needed -f -l"
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
