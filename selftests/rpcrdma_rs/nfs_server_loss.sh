#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The server lost abruptly while verified I/O runs on a hard NFSv4.2
# mount. In each case fio writes a file in 1 MiB O_DIRECT blocks, with
# checksums, and reads it back verified; the fault comes once the server
# has written fio's first MiB, while fio still runs with at most half
# its file written, and when the fault has returned fio must still run
# with less than its whole file written (so the fault fell among its
# writes). fio must then write and verify all of it, without an error,
# and a new file must read back intact on the same mount.
#
# - The server's RDMA device is removed (rdma link del) and added again:
#   the client must reconnect. nfsd's listener is bound to the wildcard
#   address, which the RDMA CM listens on for each device as it comes;
#   it is added again only if nfsd lost it (said in a diagnostic).
# - The server's link goes down for 8 s and comes up again (addresses
#   kept, as a lost carrier keeps them). Over Soft-RoCE the server's
#   sends fail while it is down, and its QPs with them (if its QP1 is
#   among them, rxe never recovers it, and the device is made again):
#   the client must reconnect by itself. Over
#   Soft-iWARP TCP retransmits, and the same connection must carry on.
# - nfsd is stopped and started again while the client holds an open
#   file and a whole-file lock (flock(2), which NFSv4 makes a POSIX lock
#   on the server). The client must reconnect and reclaim both in the
#   grace period: afterwards the server's states list them as new state,
#   a lock taken in the server guest or by another process of the client
#   is refused, and once the client unlocks the server guest gets it.
# - The client's own RDMA device is removed and added again: the client
#   must reconnect; with rpcrdma_rs its report shows the connection on
#   the device again, with all its MRs free.
#
# The server guest is put back as it was whatever happens. Logs are in
# nfs_server_loss/ in the run directory; NFS_SERVER_LOSS_MIB sets fio's
# file size (16).
# shellcheck disable=SC2016 # the single-quoted scripts run in the server guest
# shellcheck disable=SC2317 # functions run through tap_check
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

require_rdma_xprt "server loss"
tap_plan 17

SIZE_MIB=${NFS_SERVER_LOSS_MIB:-16}
# Each fio run is bounded: a lost RPC waits for the mount's 60 s timeout
# before it is sent again, and fio needs its time besides.
FIO_SECONDS=180
LINK_DOWN_SECONDS=8
POOL=256

LOG_DIR=$RUN_DIR/nfs_server_loss
log=$LOG_DIR/tools.log
# quietly SECONDS COMMAND...: COMMAND under a KILL timeout, with the
# shell's note of a kill in the log, not on the test's stderr: a command
# that had to be killed is an outcome the caller judges.
quietly() { (timeout -s KILL "$@"; exit $?) 2>>"$log"; }
mnt=/mnt/nfs-server-loss
scratch=/mnt/scratch-server-loss
mkdir -p "$LOG_DIR" "$scratch"
mountpoint -q "$scratch" || mount -t tmpfs -o size=32m tmpfs "$scratch"

LOCK_DIR=loss-lock
LOCK_NAME=lockfile
# The lock holder: opens the file for reading and writing (over NFSv4
# an exclusive flock needs that) and flocks it whole, says "held", and
# unlocks when sent SIGTERM. A process of its own, so that the test
# never waits in an NFS close itself.
LOCK_HOLDER='import fcntl, os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("held", flush=True)
signal.sigwait({signal.SIGTERM})
fcntl.flock(fd, fcntl.LOCK_UN)
os.close(fd)
print("released", flush=True)'
# lockprobe FILE: a POSIX write lock on FILE from a process of its own,
# not waiting: prints "refused" when another owner holds a lock,
# "granted" when it got it (released as it exits); fails otherwise.
LOCK_PROBE='import errno, fcntl, sys
f = open(sys.argv[1], "r+")
try:
    fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
except OSError as e:
    if e.errno not in (errno.EAGAIN, errno.EACCES):
        raise
    print("refused")
else:
    print("granted")'

not_run() {
	local why=$1 d
	shift
	for d in "$@"; do tap_not_ok "$d ($why)"; done
}

# mark TEXT: a line in the client's kernel log, to find each case there.
mark() { echo "rpcrdma-rs-selftest: nfs_server_loss: $*" >/dev/kmsg; }

diag_lines() { # TEXT: each line as a diagnostic
	local l
	while IFS= read -r l; do [ -z "$l" ] || tap_diag "$1$l"; done <<<"$2"
}

# --- The server guest ---

srv_if="" leases0=1 keep0=0 listeners0=""
# The names the server-side scripts use.
srv_env() {
	printf 'IF=%q DEV=%q RDMA=%q IP6=%q MAC=%q LEASES=%q KEEP=%q DOWN=%q\n' "$srv_if" \
		"$(rdma_dev)" "$RDMA" "$SERVER_IP6" "$SERVER_MAC" "$leases0" "$keep0" "$LINK_DOWN_SECONDS"
}

# srv VAR SCRIPT: runs SCRIPT in the server guest with srv_env's names;
# VAR gets what it printed.
srv() {
	server_output "$1" "$(srv_env)"$'\n'"$2"
}

# The server's NIC (by its MAC), and what the faults change there.
srv_probe() {
	local out
	srv out '
i=$(grep -lx "$MAC" /sys/class/net/*/address) || exit 1
i=${i%/address}
i=${i##*/}
echo "$i $(cat /proc/sys/fs/leases-enable) $(cat /proc/sys/net/ipv6/conf/$i/keep_addr_on_down)" \
	"$(grep -cx "rdma 20049" /proc/fs/nfsd/portlist)"' || return 1
	read -r srv_if leases0 keep0 listeners0 <<<"$out"
	[ -n "$srv_if" ] && [ -n "$listeners0" ]
}

# Puts the server guest back as the other tests expect it: link up with
# its addresses, the RDMA device, nfsd listening on rdma 20049, leases
# and the link's address policy as they were.
srv_repair() {
	local out
	[ -n "$srv_if" ] || return 0
	srv out '
ip link set "$IF" up
[ -e "/sys/class/infiniband/$DEV" ] || rdma link add "$DEV" type "$RDMA" netdev "$IF"
ip -6 addr show dev "$IF" | grep -qF "inet6 $IP6/64 " || ip -6 addr add "$IP6/64" dev "$IF" nodad
echo "$LEASES" >/proc/sys/fs/leases-enable
echo "$KEEP" >"/proc/sys/net/ipv6/conf/$IF/keep_addr_on_down"
[ "$(cat /proc/fs/nfsd/threads)" != 0 ] || rpc.nfsd 8
grep -qx "rdma 20049" /proc/fs/nfsd/portlist || echo "rdma 20049" >/proc/fs/nfsd/portlist'
}

# --- fio, and the state of one case ---

fio_pid="" holder_pid="" conn_before=""

# fio_start NAME: fio in the background (fio_pid), writing SIZE_MIB in
# 1 MiB O_DIRECT blocks with checksums, then reading all of it back and
# verifying it; both output formats in the log directory. A timeout(1)
# of its own, in a process group of its own, bounds it.
fio_start() {
	timeout -s KILL 60 mkdir -p "$mnt/$1" 2>>"$log" || return 1
	rm -f "$LOG_DIR/fio-$1.txt"
	timeout -s KILL "$FIO_SECONDS" fio --name="$1" --directory="$mnt/$1" --rw=write --bs=1M \
		--size="${SIZE_MIB}M" --ioengine=psync --direct=1 --end_fsync=1 --verify=crc32c \
		--verify_fatal=1 --verify_state_save=0 --output-format=terse,normal \
		--output="$LOG_DIR/fio-$1.txt" >/dev/null 2>"$LOG_DIR/fio-$1.err" &
	fio_pid=$!
}

# fio_stop: TERM reaches fio through its timeout(1); the group is killed
# after 10 s.
fio_stop() {
	local i
	[ -n "$fio_pid" ] || return 0
	kill -TERM "$fio_pid" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		kill -0 "$fio_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL -- "-$fio_pid" 2>/dev/null
	wait "$fio_pid" 2>/dev/null
	fio_pid=""
}

# io_under_way: waits (two minutes at most) for the server to have
# written fio's first MiB; succeeds if fio still runs then with at most
# half its file written, so that the fault falls among its writes.
io_under_way() {
	local i w=0
	for ((i = 0; i < 1200; i++)); do
		kill -0 "$fio_pid" 2>/dev/null || break
		w=$(server_written "$mnt")
		[ "${w:-0}" -ge $((1 << 20)) ] 2>/dev/null && break
		sleep 0.1
	done
	if ! kill -0 "$fio_pid" 2>/dev/null; then
		tap_diag "fio ended before the fault ($w bytes written)"
		return 1
	fi
	if ! [ "${w:-0}" -ge $((1 << 20)) ] 2>/dev/null; then
		tap_diag "the server wrote only ${w:-0} bytes of fio's in two minutes"
		return 1
	fi
	if [ "$w" -gt $((SIZE_MIB << 19)) ]; then
		tap_diag "fio is too far on for a fault among its writes: $w bytes written"
		return 1
	fi
	tap_diag "fault while fio runs, the server has written $w bytes of it"
}

# fio_ok NAME STATUS: fio exited 0, and its job wrote all SIZE_MIB and
# read all of it back verified (terse version 3: field 5 error, 6 KiB
# read, that is verified, 47 KiB written, 50 the write phase's ms).
fio_ok() {
	local out=$LOG_DIR/fio-$1.txt
	[ "$2" = 0 ] || tap_diag "fio $1 exited $2: $(head -3 "$LOG_DIR/fio-$1.err" | tr '\n' ' ')"
	[ -s "$out" ] || { tap_diag "fio $1 wrote no report"; return 1; }
	awk -F';' -v want=$((SIZE_MIB * 1024)) '
		$1 == 3 {
			n++
			printf "# fio: error %s, %s KiB written in %s ms, %s KiB verified, of %s\n", $5, $47, $50, $6, want
			if ($5 != 0 || $47 != want || $6 != want) bad = 1
		}
		END {
			if (n != 1) printf "# %d fio jobs reported, not 1\n", n
			exit !(n == 1 && !bad)
		}' < <(fio_terse "$out") && [ "$2" = 0 ]
}

# struck_among_writes FAULT: once FAULT has returned, fio still runs
# and the server has not yet written all of its file: the fault fell
# among fio's writes, not after them.
struck_among_writes() {
	local w
	w=$(server_written "$mnt")
	if ! kill -0 "$fio_pid" 2>/dev/null; then
		tap_diag "fio had ended when the fault ($1) returned (${w:-?} bytes written): it did not strike under fio"
		return 1
	fi
	if ! [ "${w:-0}" -lt $((SIZE_MIB << 20)) ] 2>/dev/null; then
		tap_diag "the server had written ${w:-?} bytes, all of fio's file, when the fault ($1) returned:" \
			"it did not strike among fio's writes"
		return 1
	fi
	tap_diag "the fault ($1) returned with fio running, the server having written $w of $((SIZE_MIB << 20)) bytes"
}

# fault_under_fio NAME FAULT: fio NAME runs, FAULT strikes among its
# writes; fio must then end well.
fault_under_fio() {
	local rc
	fio_start "$1" || return 1
	if ! io_under_way; then
		fio_stop
		return 1
	fi
	if ! "$2"; then
		tap_diag "the fault ($2) failed"
		fio_stop
		return 1
	fi
	if ! struck_among_writes "$2"; then
		fio_stop
		return 1
	fi
	wait "$fio_pid" 2>>"$log"
	rc=$?
	fio_pid=""
	tap_diag "$(mount_xprt_line "$mnt")"
	fio_ok "$1" "$rc"
}

connects() { mountstats_field "$mnt" 3; }

reconnected() {
	local after
	after=$(connects)
	tap_diag "connections: $conn_before at the start, $after now"
	[ "${after:-0}" -gt "${conn_before:-0}" ] 2>/dev/null
}

same_connection() {
	local after
	after=$(connects)
	tap_diag "connections: $conn_before at the start, $after now"
	[ -n "$after" ] && [ "$after" = "$conn_before" ]
}

# mount_works NAME: 4 MiB written with O_DIRECT and read back (from the
# server) intact.
mount_works() {
	local f=$mnt/after-$1.bin sum got
	head -c 4M /dev/urandom >"$scratch/after.bin"
	sum=$(expected "$(sha256sum <"$scratch/after.bin" | cut -d' ' -f1)")
	if ! quietly 120 dd if="$scratch/after.bin" of="$f" bs=1M oflag=direct status=none 2>>"$log"; then
		tap_diag "writing $f failed"
		return 1
	fi
	got=$(quietly 120 dd if="$f" bs=1M iflag=direct status=none 2>>"$log" | sha256sum | cut -d' ' -f1)
	quietly 60 rm -f "$f"
	[ "$got" = "$sum" ] || { tap_diag "$f read back as $got, written as $sum"; return 1; }
}

# case_mount TITLE: a fresh NFSv4.2 hard mount for one case.
case_mount() {
	mark "$1"
	tap_diag "--- $1"
	case_start=$SECONDS
	if ! nfs_mount 4.2 "$mnt" 2>>"$log"; then
		tap_diag "NFSv4.2 mount over rdma failed"
		return 1
	fi
	conn_before=$(connects)
}

# unlock: SIGTERM has the holder unlock (within 30 s), or it is killed.
unlock() {
	local i
	[ -n "$holder_pid" ] || return 0
	kill -TERM "$holder_pid" 2>/dev/null
	for ((i = 0; i < 300; i++)); do
		kill -0 "$holder_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$holder_pid" 2>/dev/null
	wait "$holder_pid" 2>/dev/null
	holder_pid=""
	grep -qx released "$scratch/holder.out"
}

# case_end: nothing of the case is left, on either guest: the next case
# starts from the server guest as it was.
case_end() {
	fio_stop
	unlock
	quietly 60 find "$mnt" -mindepth 1 -delete
	quietly 60 umount "$mnt" || umount -f -l "$mnt" 2>>"$log"
	srv_repair || tap_diag "the server guest could not be put back as it was"
	tap_diag "case took $((SECONDS - case_start)) s"
}

cleanup() {
	fio_stop
	unlock
	if mounted "$mnt"; then
		quietly 60 umount "$mnt" || umount -f -l "$mnt"
	fi
	[ -e "/sys/class/infiniband/$(rdma_dev)" ] ||
		rdma link add "$(rdma_dev)" type "$RDMA" netdev "$(nic_by_mac "$CLIENT_MAC")"
	srv_repair
} >>"$log" 2>&1
trap cleanup EXIT
trap 'exit 143' TERM INT

[ "${BREAK_DATA_CHECK:-0}" = 1 ] && tap_diag "BREAK_DATA_CHECK=1: every expected checksum is wrong"

# --- 1. The server's RDMA device removed and added again ---

D_DEV_FIO="server's RDMA device removed and added again under verified fio: all of it written and read back verified"
D_DEV_CONN="server's RDMA device removed: the client reconnected"
D_DEV_AFTER="server's RDMA device removed: the mount works afterwards, 4 MiB read back intact"

# The device goes (which closes nfsd's connections on it) and comes back
# on the same link 2 s later. nfsd's wildcard listener should survive;
# if it does not, it is added again, as an administrator would.
server_device_cycle() {
	local out rc=0
	srv out '
echo "rpcrdma-rs-selftest: nfs_server_loss: rdma link del $DEV" >/dev/kmsg
s=$(date +%s%N)
rdma link del "$DEV" || exit 1
echo "$DEV removed in $((($(date +%s%N) - s) / 1000000)) ms"
sleep 2
rdma link add "$DEV" type "$RDMA" netdev "$IF" || exit 1
n=$(grep -cx "rdma 20049" /proc/fs/nfsd/portlist)
if [ "$n" = 0 ]; then
	echo "rdma 20049" >/proc/fs/nfsd/portlist || exit 1
	echo "nfsd lost its RDMA listeners with the device: added again"
else
	echo "nfsd kept $n RDMA listeners in its portlist"
fi' || rc=$?
	diag_lines "server: " "$out"
	tap_diag "(nfsd had $listeners0 RDMA listeners before)"
	return "$rc"
}

if ! srv_probe; then
	tap_diag "the server guest's NIC and settings could not be read"
	for i in $(seq 1 17); do tap_not_ok "server loss case $i (the server guest's NIC is unknown)"; done
	tap_exit
fi
tap_diag "server NIC $srv_if, leases-enable $leases0, keep_addr_on_down $keep0, $listeners0 RDMA listeners"

if case_mount "server RDMA device removed and added again"; then
	tap_check "$D_DEV_FIO" fault_under_fio dev server_device_cycle
	tap_check "$D_DEV_CONN" reconnected
	tap_check "$D_DEV_AFTER" mount_works dev
	case_end
else
	not_run "not mounted" "$D_DEV_FIO" "$D_DEV_CONN" "$D_DEV_AFTER"
fi

# --- 2. The server's link down and up ---

D_NET_FIO="server's link down for $LINK_DOWN_SECONDS s under verified fio: all of it written and read back verified"
if [ "$RDMA" = rxe ]; then
	D_NET_CONN="server's link down: the client reconnected by itself (Soft-RoCE: the QPs failed)"
	net_conn=reconnected
else
	D_NET_CONN="server's link down: the connection carried on (Soft-iWARP: TCP retransmitted)"
	net_conn=same_connection
fi
D_NET_AFTER="server's link down: the mount works afterwards, 4 MiB read back intact"

# The link goes down and comes up. An administrative down drops a link's
# IPv6 addresses unless keep_addr_on_down is set; a lost carrier keeps
# them, and so does this (the IPv4 address always stays).
#
# Over Soft-RoCE every send of the server's while the link is down fails
# its route lookup, which puts the QP in the error state: the server's
# connection QPs, and its management QP (QP1) too if it sends the CM's
# disconnect request then. The MAD layer does not post receives again
# on a QP that flushed them (a defect of 6.12's rxe and MAD layer), so
# such a server answers no connection request any more. Where the
# server's QP1 is left in error, its device is made again at once, what
# an administrator would do; either way the client must then reconnect
# by itself, and fio must finish in its time.
server_link_flap() {
	local out rc=0
	srv out '
k=/proc/sys/net/ipv6/conf/$IF/keep_addr_on_down
echo 1 >"$k" || exit 1
echo "rpcrdma-rs-selftest: nfs_server_loss: link $IF down" >/dev/kmsg
down=0
ip link set "$IF" down && down=1 && sleep "$DOWN"
ip link set "$IF" up || exit 1
echo "$KEEP" >"$k"
if ip -6 addr show dev "$IF" | grep -qF "inet6 $IP6/64 "; then
	echo "$IP6 kept over the link flap"
else
	ip -6 addr add "$IP6/64" dev "$IF" nodad || exit 1
	echo "$IP6 was lost with the link: added again"
fi
[ "$down" = 1 ]' || rc=$?
	diag_lines "server: " "$out"
	[ "$rc" = 0 ] && [ "$RDMA" = rxe ] || return "$rc"
	srv out 'rdma resource show qp link "$DEV/1" 2>&1'
	diag_lines "server: " "$out"
	if grep -qE 'lqpn 1 .*state ERR' <<<"$out"; then
		tap_diag "the server's QP1 is in error after the flap: making its $(rdma_dev) again"
		srv out 'rdma link del "$DEV" && rdma link add "$DEV" type "$RDMA" netdev "$IF"' ||
			{ diag_lines "server: " "$out"; return 1; }
	fi
}

if case_mount "server link down and up"; then
	tap_check "$D_NET_FIO" fault_under_fio net server_link_flap
	tap_check "$D_NET_CONN" "$net_conn"
	tap_check "$D_NET_AFTER" mount_works net
	case_end
else
	not_run "not mounted" "$D_NET_FIO" "$D_NET_CONN" "$D_NET_AFTER"
fi

# --- 3. nfsd restarted while the client holds state ---

D_NFSD_LOCK="before the nfsd restart: the client's lock is the server's (its states list the open and the lock; the server guest cannot lock the file)"
D_NFSD_FIO="nfsd stopped and started again under verified fio: all of it written and read back verified"
D_NFSD_CONN="nfsd restart: the client reconnected"
D_NFSD_STATES="nfsd restart: after the grace period the server lists the client's open and lock again, as new state"
D_NFSD_HELD="nfsd restart: the reclaimed lock holds: the server guest and another process of the client cannot lock the file"
D_NFSD_FREED="nfsd restart: once the client unlocks, the server guest locks the file"
D_NFSD_AFTER="nfsd restart: the mount works afterwards, 4 MiB read back intact"

lock_path=$LOCK_DIR/$LOCK_NAME
lock_lines_before=""
lock_lines=""
grace_checked=0

# lock_state: the server's open and lock of the lock file (lock_lines);
# fails unless it lists both: the open for reading and writing, the lock.
lock_state() {
	local out
	srv out 'cat /proc/fs/nfsd/clients/*/states 2>/dev/null; true' || return 1
	printf '%s\n' "$out" >"$LOG_DIR/states-$SECONDS.txt"
	lock_lines=$(grep -E "type: (open|lock), .*filename: \"[^\"]*/$LOCK_NAME\"" <<<"$out")
	diag_lines "server: " "$lock_lines"
	grep -q 'type: open, access: rw, ' <<<"$lock_lines" && grep -q 'type: lock, ' <<<"$lock_lines"
}

# server_probe EXPECTED: the lock probe in the server guest, on the
# exported file itself, says EXPECTED (refused or granted).
server_probe() {
	local out
	srv out "/usr/bin/python3 -c '$LOCK_PROBE' /srv/export/$lock_path" || {
		diag_lines "server lock probe: " "$out"
		return 1
	}
	tap_diag "a lock in the server guest: $out"
	[ "$out" = "$1" ]
}

# client_probe EXPECTED: the same from another process of the client.
# (A POSIX lock: the client checks it against its own POSIX locks only,
# then asks the server. A second flock(2) would be refused by the
# client's own flock table, whatever the server holds.)
client_probe() {
	local out
	out=$(timeout -s KILL 60 /usr/bin/python3 -c "$LOCK_PROBE" "$mnt/$lock_path" 2>>"$log") || {
		tap_diag "the lock probe on the client failed (or was killed after 60 s)"
		return 1
	}
	tap_diag "a lock from another process of the client: $out"
	[ "$out" = "$1" ]
}

# take_lock: a process of the client holds the lock file open and
# flocked (LOCK_HOLDER); the server must hold the lock itself. The server
# gives no delegations meanwhile: under a write delegation the client
# would keep the lock to itself.
take_lock() {
	local out i
	srv out 'echo 0 >/proc/sys/fs/leases-enable' || return 1
	quietly 60 mkdir -p "$mnt/$LOCK_DIR" || return 1
	: >"$scratch/holder.out"
	/usr/bin/python3 -c "$LOCK_HOLDER" "$mnt/$lock_path" >"$scratch/holder.out" 2>>"$log" &
	holder_pid=$!
	for ((i = 0; i < 300; i++)); do
		grep -qx held "$scratch/holder.out" && break
		kill -0 "$holder_pid" 2>/dev/null || break
		sleep 0.1
	done
	if ! grep -qx held "$scratch/holder.out"; then
		tap_diag "the client could not flock $lock_path"
		return 1
	fi
	lock_state || { tap_diag "the server lists no open and lock of $LOCK_NAME"; return 1; }
	lock_lines_before=$lock_lines
	server_probe refused
}

nfsd_restart() {
	local out rc=0
	srv out '
echo "rpcrdma-rs-selftest: nfs_server_loss: nfsd restart" >/dev/kmsg
rpc.nfsd 0 || exit 1
sleep 3
rpc.nfsd 8 || exit 1
grep -qx "rdma 20049" /proc/fs/nfsd/portlist || echo "rdma 20049" >/proc/fs/nfsd/portlist || exit 1
echo "nfsd started again, listening on: $(sort -u /proc/fs/nfsd/portlist | tr "\n" " ")"' || rc=$?
	diag_lines "server: " "$out"
	return "$rc"
}

# grace_over: waits (a minute at most) for the server to end its grace
# period; the reclaims must be done by then.
grace_over() {
	local out
	grace_checked=1
	srv out '
for i in $(seq 60); do
	if [ "$(cat /proc/fs/nfsd/v4_end_grace)" = Y ]; then
		echo "grace period over ($i s after fio ended)"
		exit 0
	fi
	sleep 1
done
echo "grace period not over after 60 s: v4_end_grace says $(cat /proc/fs/nfsd/v4_end_grace)"
exit 1' || { diag_lines "server: " "$out"; return 1; }
	diag_lines "server: " "$out"
}

# reclaimed: after the grace period, the open and lock are listed again,
# with stateids of the new server instance.
reclaimed() {
	local old new
	grace_over || return 1
	lock_state || return 1
	old=$(grep 'type: lock, ' <<<"$lock_lines_before" | cut -d: -f1)
	new=$(grep 'type: lock, ' <<<"$lock_lines" | cut -d: -f1)
	if [ -z "$old" ] || [ "$new" = "$old" ]; then
		tap_diag "the lock's stateid is the one from before the restart"
		return 1
	fi
}

still_held() {
	local rc=0
	[ "$grace_checked" = 1 ] || grace_over || return 1
	server_probe refused || rc=1
	client_probe refused || rc=1
	return "$rc"
}

freed() {
	if [ -z "$holder_pid" ] || ! kill -0 "$holder_pid" 2>/dev/null; then
		tap_diag "the client's lock holder is gone"
		return 1
	fi
	unlock || { tap_diag "the holder did not unlock (SIGTERM)"; return 1; }
	server_probe granted
}

if case_mount "nfsd restarted while the client holds an open file and a lock"; then
	tap_check "$D_NFSD_LOCK" take_lock
	tap_check "$D_NFSD_FIO" fault_under_fio nfsd nfsd_restart
	tap_check "$D_NFSD_CONN" reconnected
	tap_check "$D_NFSD_STATES" reclaimed
	tap_check "$D_NFSD_HELD" still_held
	tap_check "$D_NFSD_FREED" freed
	tap_check "$D_NFSD_AFTER" mount_works nfsd
	case_end
else
	not_run "not mounted" "$D_NFSD_LOCK" "$D_NFSD_FIO" "$D_NFSD_CONN" "$D_NFSD_STATES" \
		"$D_NFSD_HELD" "$D_NFSD_FREED" "$D_NFSD_AFTER"
fi

# --- 4. The client's RDMA device removed and added again ---

D_CDEV_FIO="client's RDMA device removed and added again under verified fio: all of it written and read back verified"
D_CDEV_CONN="client's RDMA device removed: the client reconnected"
D_CDEV_RS="client's RDMA device removed: rpcrdma_rs's report shows the new connection on the device, all its MRs free"
D_CDEV_AFTER="client's RDMA device removed: the mount works afterwards, 4 MiB read back intact"

# dmesg_has TEXT: the client's kernel log has TEXT after this case's mark
# (a mark, not a line count: the log may have wrapped).
dmesg_has() {
	dmesg | awk -v m="nfs_server_loss: rdma link del $(rdma_dev)" 'index($0, m) { on = 1 } on' |
		grep -qF "$1"
}

# The removal waits until every transport has let go of the device. On a
# hard mount fio must wait for it to come back, not fail.
client_device_cycle() {
	local dev ifname pid i t0
	dev=$(rdma_dev)
	ifname=$(nic_by_mac "$CLIENT_MAC") || return 1
	mark "rdma link del $dev"
	t0=$SECONDS
	rdma link del "$dev" >>"$log" 2>&1 &
	pid=$!
	for ((i = 0; i < 1200; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		tap_diag "rdma link del $dev has not returned in 120 s"
		return 1
	fi
	wait "$pid" || { tap_diag "rdma link del $dev failed"; return 1; }
	tap_diag "$dev removed in $((SECONDS - t0)) s"
	kill -0 "$fio_pid" 2>/dev/null || tap_diag "fio ended while the device was gone"
	sleep 2
	rdma link add "$dev" type "$RDMA" netdev "$ifname" >>"$log" 2>&1 ||
		{ tap_diag "rdma link add $dev failed"; return 1; }
}

# rpcrdma_rs's report: its one transport connected again, on the
# device, every MR back on the free list once fio is done (within 30 s:
# the transports of earlier mounts go once their destroy work has run);
# the removal and the addition logged.
rs_new_connection() {
	local dev i n="" c="" d="" f=""
	dev=$(rdma_dev)
	for ((i = 0; i < 150; i++)); do
		# One read of the report: its fields belong together.
		read -r n c d f < <(awk '$1 == "transports" { n = $2 }
			$1 == "connected" { c = $2 } $1 == "device" { d = $2 } $1 == "mrs_free" { f = $2 }
			END { print n + 0, c "-", d "-", f "-" }' /sys/kernel/debug/rpcrdma_rs/xprts 2>>"$log")
		c=${c%-} d=${d%-} f=${f%-}
		[ "$n" = 1 ] && [ "$c" = yes ] && [ "$d" = "$dev" ] && [ "$f" = "$POOL" ] && break
		sleep 0.2
	done
	tap_diag "rpcrdma_rs: ${n:-0} transports; connected ${c:-?}, device ${d:-?}, mrs_free ${f:-?}"
	dmesg_has "rpcrdma_rs: RDMA device $dev removed" || { tap_diag "the removal was not logged"; return 1; }
	dmesg_has "rpcrdma_rs: RDMA device $dev added" || { tap_diag "the addition was not logged"; return 1; }
	[ "$n" = 1 ] && [ "$c" = yes ] && [ "$d" = "$dev" ] && [ "$f" = "$POOL" ]
}

if case_mount "client RDMA device removed and added again"; then
	tap_check "$D_CDEV_FIO" fault_under_fio cdev client_device_cycle
	tap_check "$D_CDEV_CONN" reconnected
	if [ "$TRANSPORT" = rs ]; then
		tap_check "$D_CDEV_RS" rs_new_connection
	else
		tap_skip "$D_CDEV_RS" "rpcrdma_rs's debugfs xprts report; the C transport has none"
	fi
	tap_check "$D_CDEV_AFTER" mount_works cdev
	case_end
else
	not_run "not mounted" "$D_CDEV_FIO" "$D_CDEV_CONN"
	if [ "$TRANSPORT" = rs ]; then
		tap_not_ok "$D_CDEV_RS (not mounted)"
	else
		tap_skip "$D_CDEV_RS" "rpcrdma_rs's debugfs xprts report; the C transport has none"
	fi
	not_run "not mounted" "$D_CDEV_AFTER"
fi
tap_exit
