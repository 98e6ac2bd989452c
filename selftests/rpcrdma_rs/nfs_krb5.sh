#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# NFS over RDMA with RPCSEC_GSS Kerberos: under sec=krb5i and sec=krb5p no
# data item may be placed directly (C: RPCAUTH_AUTH_DATATOUCH), since the
# integrity checksum or the encryption covers the whole message. A large
# WRITE must then go whole as a Long Call (RDMA_NOMSG, a Read chunk at
# position zero) instead of with its payload in a Read chunk, and a large
# READ reply must come back in a Reply chunk instead of a Write chunk.
#
# Set-up: a KDC for the realm RPCRDMA.TEST and rpc.svcgssd in the server
# guest, nfsd restarted behind it and the export opened to
# sec=sys:krb5:krb5i:krb5p; a keytab, rpc_pipefs and rpc.gssd in the
# client guest. For sec=sys (the control), then krb5i and krb5p: mount,
# write 8 MiB of random data, remount, read it back and compare SHA-256
# sums; check the chunk counters of the mount's transport
# (/proc/self/mountstats) and what the server saw on the wire (the
# svcrdma trace events of a private trace instance in the server guest).
# Everything is undone at the end, so that later tests find the guests as
# they were.
#
# read_chunk_count counts the segments of Long Calls too, so it is not 0
# under krb5i/krb5p; the checks are that each WRITE went as a Long Call,
# that no Write chunk was used, and that the server saw Read chunks only
# at position zero and wrote no Write chunk.
#
# Most functions run through tap_check or, in the server guest, server_fn.
# shellcheck disable=SC2317
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

# NFS_KRB5_VERSION=3 mounts /srv/export with NFSv3 instead.
VERS=${NFS_KRB5_VERSION:-4.2}
require_rdma_xprt "nfs krb5"
tap_plan 26

REALM=RPCRDMA.TEST
# rpc.gssd asks for the service principal nfs/<server name>, the name the
# mount uses; both guests resolve these through /etc/hosts.
SERVER_NAME=server.rpcrdma.test
CLIENT_NAME=client.rpcrdma.test
# Each guest's private working directory (/run is a per-guest overlay).
KRB_DIR=/run/rpcrdma-krb5
# Logs, the keytab handed to the client and the server's trace summaries.
LOG_DIR=$RUN_DIR/nfs_krb5
PIPEFS=/run/rpc_pipefs
TRACE_INSTANCE=rpcrdma_krb5
CLIENT_LOG=$LOG_DIR/client.log

mkdir -p "$LOG_DIR"
: >"$CLIENT_LOG"
scratch=/mnt/scratch-krb5
mkdir -p "$scratch"
mountpoint -q "$scratch" || mount -t tmpfs -o size=32m tmpfs "$scratch"
head -c $((8 << 20)) /dev/urandom >"$scratch/data"
expected=$(sha256sum "$scratch/data" | cut -d' ' -f1)

# ---- Run in both guests (the server gets them through server_fn) ----

# etc_save FILE...: keeps what /etc/FILE is now (or that it does not
# exist), for etc_restore.
etc_save() {
	local f
	mkdir -p "$KRB_DIR/etc" || return 1
	for f in "$@"; do
		if [ -e "/etc/$f" ]; then
			cp -p "/etc/$f" "$KRB_DIR/etc/$f" || return 1
		else
			: >"$KRB_DIR/etc/$f.absent"
		fi
	done
}

# etc_restore FILE...: puts back what etc_save kept.
etc_restore() {
	local f rc=0
	for f in "$@"; do
		if [ -e "$KRB_DIR/etc/$f.absent" ]; then
			rm -f "/etc/$f" || rc=1
		elif [ -e "$KRB_DIR/etc/$f" ]; then
			cp -p "$KRB_DIR/etc/$f" "/etc/$f" || rc=1
		fi
	done
	return "$rc"
}

# write_hosts server|client: both names first, this guest's own host name
# as an alias of its address (rpc.gssd looks for nfs/<own name> in the
# keytab), then the original entries.
write_hosts() {
	local server_alias="" client_alias=""
	case "$1" in
	server) server_alias=" $(uname -n)" ;;
	client) client_alias=" $(uname -n)" ;;
	esac
	{
		echo "$SERVER_IP4 $SERVER_NAME$server_alias"
		echo "$CLIENT_IP4 $CLIENT_NAME$client_alias"
		cat "$KRB_DIR/etc/hosts" 2>/dev/null
	} >"$KRB_DIR/hosts.new" && cat "$KRB_DIR/hosts.new" >/etc/hosts
}

write_krb5_conf() {
	cat >/etc/krb5.conf <<EOF
[libdefaults]
	default_realm = $REALM
	dns_lookup_realm = false
	dns_lookup_kdc = false
	dns_canonicalize_hostname = false
	rdns = false
[realms]
	$REALM = {
		kdc = $SERVER_IP4
		admin_server = $SERVER_IP4
	}
[domain_realm]
	.rpcrdma.test = $REALM
	rpcrdma.test = $REALM
EOF
}

# wait_gone PID: the process has exited (a zombie counts: whoever
# inherited it may not reap it at once).
wait_gone() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ -e "/proc/$1" ] || return 0
		[ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" = Z ] && return 0
		sleep 0.1
	done
	return 1
}

# has_open PID REGEX: process PID has a file open whose path matches REGEX.
has_open() {
	local fd
	for fd in "/proc/$1/fd/"*; do
		readlink "$fd"
	done 2>/dev/null | grep -qE "$2"
}

# ---- Run in the server guest ----

srv_trace_dir() {
	local t
	t=$(cat "$KRB_DIR/tracefs" 2>/dev/null) || return 1
	echo "$t/instances/$TRACE_INSTANCE"
}

# The wire as the server sees it: each Read segment the client offers
# (with its chunk's XDR position; 0 is a Long Call), each Write chunk and
# Reply chunk the server writes. A private instance leaves the global
# trace buffer alone.
srv_trace_start() {
	local t=/sys/kernel/tracing inst e
	if [ ! -d "$t/instances" ]; then
		if mount -t tracefs nodev "$t"; then
			: >"$KRB_DIR/tracefs-mounted"
		else
			t=/sys/kernel/debug/tracing
		fi
	fi
	echo "$t" >"$KRB_DIR/tracefs"
	inst=$t/instances/$TRACE_INSTANCE
	mkdir -p "$inst" || return 1
	echo 4096 >"$inst/buffer_size_kb" || return 1
	for e in svcrdma_decode_rseg svcrdma_post_write_chunk svcrdma_post_reply_chunk; do
		echo 1 >"$inst/events/rpcrdma/$e/enable" || return 1
	done
	echo 1 >"$inst/tracing_on"
}

srv_trace_clear() {
	local dir
	exec >>"$LOG_DIR/server.log" 2>&1
	dir=$(srv_trace_dir) && : >"$dir/trace"
}

# srv_trace_count LABEL: the counts since srv_trace_clear, into
# $LOG_DIR/trace-LABEL.txt; "lost" counts events the buffer overwrote.
srv_trace_count() {
	local dir
	exec >>"$LOG_DIR/server.log" 2>&1
	rm -f "$LOG_DIR/trace-$1.txt"
	dir=$(srv_trace_dir) && [ -r "$dir/trace" ] || return 1
	awk '
		/^# entries-in-buffer\/entries-written:/ { split($3, n, "/"); lost = n[2] - n[1] }
		/ svcrdma_decode_rseg:/ {
			for (i = 1; i <= NF; i++)
				if ($i ~ /^position=/) {
					split($i, p, "=")
					if (p[2] + 0 == 0) pos0++; else posn++
				}
		}
		/ svcrdma_post_write_chunk:/ { wch++ }
		/ svcrdma_post_reply_chunk:/ { rch++ }
		END {
			printf "read_segments_position_zero %d\n", pos0
			printf "read_segments_other_position %d\n", posn
			printf "write_chunks %d\nreply_chunks %d\nlost %d\n", wch, rch, lost
		}' "$dir/trace" >"$LOG_DIR/trace-$1.txt"
}

srv_trace_stop() {
	local t
	[ -e "$KRB_DIR/tracefs" ] || return 0
	t=$(cat "$KRB_DIR/tracefs")
	if [ -d "$t/instances/$TRACE_INSTANCE" ]; then
		echo 0 >"$t/instances/$TRACE_INSTANCE/tracing_on"
		rmdir "$t/instances/$TRACE_INSTANCE" || return 1
	fi
	if [ -e "$KRB_DIR/tracefs-mounted" ]; then
		umount "$t" || return 1
	fi
}

srv_setup() {
	exec >>"$LOG_DIR/server.log" 2>&1
	echo "=== srv_setup $(date +%T)"
	set -x
	local kdc_env pid i svcgssd_ok=1
	rm -rf "$KRB_DIR" && mkdir -p "$KRB_DIR/kdc" "$KRB_DIR/rcache" || return 1
	modprobe rpcsec_gss_krb5 || return 1
	# rpc.svcgssd offers the client only what the kernel can use.
	tr ',' '\n' </proc/net/rpc/gss_krb5_enctypes | grep -qxE '17|18' || {
		echo "the kernel has no AES-SHA1 Kerberos enctypes: '$(cat /proc/net/rpc/gss_krb5_enctypes)'"
		return 1
	}
	etc_save hosts krb5.conf krb5.keytab exports || return 1
	write_hosts server && write_krb5_conf || return 1

	# The KDC keeps its database here, not in /var/lib/krb5kdc (read-only
	# in the guest).
	cat >"$KRB_DIR/kdc.conf" <<EOF
[kdcdefaults]
	kdc_ports = 88
	kdc_tcp_ports = 88
[realms]
	$REALM = {
		database_name = $KRB_DIR/kdc/principal
		key_stash_file = $KRB_DIR/kdc/stash
	}
[logging]
	kdc = FILE:$LOG_DIR/kdc.log
	default = FILE:$LOG_DIR/kdc.log
EOF
	kdc_env=(env "KRB5_KDC_PROFILE=$KRB_DIR/kdc.conf")
	"${kdc_env[@]}" kdb5_util create -s -r "$REALM" -P "rpcrdma-krb5-master" || return 1
	# kadmin.local exits 0 even when a query fails: klist tells.
	"${kdc_env[@]}" kadmin.local -r "$REALM" -q "addprinc -randkey nfs/$SERVER_NAME"
	"${kdc_env[@]}" kadmin.local -r "$REALM" -q "addprinc -randkey nfs/$CLIENT_NAME"
	rm -f /etc/krb5.keytab "$LOG_DIR/client.keytab"
	"${kdc_env[@]}" kadmin.local -r "$REALM" -q "ktadd -k /etc/krb5.keytab nfs/$SERVER_NAME"
	"${kdc_env[@]}" kadmin.local -r "$REALM" -q "ktadd -k $LOG_DIR/client.keytab nfs/$CLIENT_NAME"
	klist -ke /etc/krb5.keytab | grep -q "nfs/$SERVER_NAME@$REALM" || return 1
	klist -ke "$LOG_DIR/client.keytab" | grep -q "nfs/$CLIENT_NAME@$REALM" || return 1
	"${kdc_env[@]}" krb5kdc -P "$KRB_DIR/krb5kdc.pid" || return 1
	for ((i = 0; i < 100; i++)); do
		ss -ulnH 'sport = :88' | grep -q . && break
		sleep 0.1
	done
	ss -ulnH 'sport = :88' | grep -q . || { echo "krb5kdc is not listening"; return 1; }

	sed -i 's/(/(sec=sys:krb5:krb5i:krb5p,/' /etc/exports && exportfs -ra || return 1
	exportfs -v | grep -q 'sec=sys:krb5:krb5i:krb5p' || return 1
	# nfsd comes back up behind rpc.svcgssd, whether or not that started.
	rpc.nfsd 0 || return 1
	# The acceptor's replay cache would go to /var/tmp, read-only here.
	KRB5RCACHEDIR=$KRB_DIR/rcache rpc.svcgssd -f -vvv -p "nfs/$SERVER_NAME@$REALM" \
		</dev/null >>"$LOG_DIR/svcgssd.log" 2>&1 &
	pid=$!
	echo "$pid" >"$KRB_DIR/svcgssd.pid"
	# Ready once it holds nfsd's context-initiation channel open.
	for ((i = 0; i < 100; i++)); do
		has_open "$pid" 'auth\.rpcsec\.init' && break
		kill -0 "$pid" || break
		sleep 0.1
	done
	has_open "$pid" 'auth\.rpcsec\.init' ||
		{ echo "rpc.svcgssd did not open its channel"; svcgssd_ok=0; }
	rpc.nfsd 8 && echo "rdma 20049" >/proc/fs/nfsd/portlist || return 1
	cat /proc/fs/nfsd/portlist
	# Without the trace only the trace checks fail.
	srv_trace_start || echo "no svcrdma trace instance"
	[ "$svcgssd_ok" = 1 ]
}

srv_teardown() {
	exec >>"$LOG_DIR/server.log" 2>&1
	echo "=== srv_teardown $(date +%T)"
	set -x
	local rc=0 d pid
	srv_trace_stop || rc=1
	for d in svcgssd krb5kdc; do
		pid=$(cat "$KRB_DIR/$d.pid" 2>/dev/null) || continue
		[ -n "$pid" ] || continue
		kill "$pid" && wait_gone "$pid" || rc=1
	done
	etc_restore hosts krb5.conf krb5.keytab exports || rc=1
	exportfs -ra || rc=1
	exportfs -v | grep -q krb5 && rc=1
	# nfsd keeps running; it must still listen for RDMA.
	[ "$(cat /proc/fs/nfsd/threads)" -gt 0 ] || rpc.nfsd 8 || rc=1
	grep -qx 'rdma 20049' /proc/fs/nfsd/portlist || echo "rdma 20049" >/proc/fs/nfsd/portlist || rc=1
	cat /proc/fs/nfsd/portlist
	rm -rf "$KRB_DIR"
	return "$rc"
}

srv_diag() {
	local pid
	{
		pid=$(cat "$KRB_DIR/svcgssd.pid" 2>/dev/null)
		echo "== server: rpc.svcgssd (pid ${pid:-none})"
		[ -n "$pid" ] && [ -e "/proc/$pid" ] && echo "running"
		tail -n 30 "$LOG_DIR/svcgssd.log"
		echo "== server: KDC log"
		tail -n 15 "$LOG_DIR/kdc.log"
		echo "== server: keytab"
		klist -ke /etc/krb5.keytab
		echo "== server: exports, listeners, kernel enctypes"
		exportfs -v
		cat /proc/fs/nfsd/portlist /proc/net/rpc/gss_krb5_enctypes
		echo
		echo "== server: dmesg"
		dmesg | grep -iE 'gss|krb5|rpc|nfsd|svcrdma' | tail -n 15
		echo "== server: set-up log"
		tail -n 40 "$LOG_DIR/server.log"
	} >"$LOG_DIR/server-diag.txt" 2>&1
}

# server_fn COMMAND: runs COMMAND in the server guest with this file's
# settings and server-side functions.
server_fn() {
	server_run "$(declare -p REALM SERVER_NAME CLIENT_NAME KRB_DIR LOG_DIR TRACE_INSTANCE \
		SERVER_IP4 CLIENT_IP4)
$(declare -f etc_save etc_restore write_hosts write_krb5_conf wait_gone has_open srv_trace_dir \
		srv_trace_start srv_trace_clear srv_trace_count srv_trace_stop srv_setup srv_teardown \
		srv_diag)
$*"
}

# ---- Run in the client guest ----

# check DESCRIPTION COMMAND...: tap_check, returning the command's status.
check() {
	local desc=$1
	shift
	if "$@"; then
		tap_ok "$desc"
		return 0
	fi
	tap_not_ok "$desc"
	return 1
}

# The names, the realm, and the kernel's side of Kerberos; nothing runs yet.
client_prepare() {
	local rc=0
	{
		mkdir -p "$KRB_DIR" && etc_save hosts krb5.conf krb5.keytab &&
			write_hosts client && write_krb5_conf
	} >>"$CLIENT_LOG" 2>&1 || { tap_diag "could not write /etc/hosts and /etc/krb5.conf"; rc=1; }
	modprobe rpcsec_gss_krb5 >>"$CLIENT_LOG" 2>&1 || { tap_diag "no rpcsec_gss_krb5"; return 1; }
	tap_diag "kernel Kerberos enctypes: $(cat /proc/net/rpc/gss_krb5_enctypes 2>/dev/null)"
	if ! tr ',' '\n' 2>/dev/null </proc/net/rpc/gss_krb5_enctypes | grep -qxE '17|18'; then
		tap_diag "no AES-SHA1 enctypes (CONFIG_RPCSEC_GSS_KRB5_ENCTYPES_AES_SHA1)"
		rc=1
	fi
	return "$rc"
}

server_setup() {
	server_fn srv_setup && return 0
	tap_diag "server set-up failed (see $LOG_DIR/server.log)"
	return 1
}

gssd_pid=""
client_setup() {
	{
		install -m 600 "$LOG_DIR/client.keytab" /etc/krb5.keytab &&
			rm -f "$LOG_DIR/client.keytab" &&
			klist -ke /etc/krb5.keytab | grep -q "nfs/$CLIENT_NAME@$REALM"
	} >>"$CLIENT_LOG" 2>&1 || { tap_diag "no client keytab from the server"; return 1; }
	# The KDC must answer for the keytab's key before a mount relies on it.
	if ! kinit -k -t /etc/krb5.keytab -c "FILE:$KRB_DIR/ccache" "nfs/$CLIENT_NAME@$REALM" \
		>>"$CLIENT_LOG" 2>&1; then
		tap_diag "kinit with the client keytab failed: $(tail -n 1 "$CLIENT_LOG")"
		return 1
	fi
	mkdir -p "$PIPEFS"
	if ! mountpoint -q "$PIPEFS"; then
		mount -t rpc_pipefs sunrpc "$PIPEFS" >>"$CLIENT_LOG" 2>&1 || return 1
		: >"$KRB_DIR/pipefs-mounted"
	fi
	gssd_start
}

gssd_start() {
	local i
	rpc.gssd -f -vvv -p "$PIPEFS" </dev/null >>"$LOG_DIR/gssd.log" 2>&1 &
	gssd_pid=$!
	# The kernel uses GSS only once rpc.gssd holds its dummy pipe open.
	for ((i = 0; i < 100; i++)); do
		has_open "$gssd_pid" '/gssd/clntXX/gssd$' && return 0
		kill -0 "$gssd_pid" 2>/dev/null || break
		sleep 0.1
	done
	tap_diag "rpc.gssd did not open $PIPEFS/gssd/clntXX/gssd"
	return 1
}

gssd_stop() {
	if [ -n "$gssd_pid" ]; then
		kill "$gssd_pid" 2>/dev/null
		wait "$gssd_pid" 2>/dev/null
		gssd_pid=""
	fi
}

client_teardown() {
	local rc=0
	gssd_stop
	if [ -e "$KRB_DIR/pipefs-mounted" ]; then
		umount "$PIPEFS" >>"$CLIENT_LOG" 2>&1 || rc=1
	fi
	# rpc.gssd's machine credential.
	rm -f "/tmp/krb5ccmachine_$REALM"
	if [ -d "$KRB_DIR/etc" ]; then
		etc_restore hosts krb5.conf krb5.keytab || rc=1
	fi
	rm -rf "$KRB_DIR"
	return "$rc"
}

# gss_mount OPTS SOURCE MNT: one mount attempt, and one more only on the
# evidence of a user-space race. rpc.gssd (nfs-utils 2.6) may open a new
# client's legacy "krb5" pipe before its "gssd" pipe; the kernel then
# keeps using legacy upcalls, which name no enctypes, rpc.gssd offers
# single DES, which Kerberos no longer has, and the mount fails with
# EACCES before any RPC reaches the transport under test. A fresh rpc.gssd
# closes every pipe, and the kernel chooses the pipe version again.
gss_mount() {
	local log=$LOG_DIR/gssd.log from
	# (The sec=sys control mounts before rpc.gssd has a log.)
	from=$(($(cat "$log" 2>/dev/null | wc -l) + 1))
	timeout 300 mount -t nfs -o "$1" "$2" "$3" >>"$CLIENT_LOG" 2>&1 && return 0
	[ -n "$gssd_pid" ] || return 1
	tail -n "+$from" "$log" | grep -q '^handle_krb5_upcall' &&
		tail -n "+$from" "$log" | grep -q '^do_error_downcall.* err -13' ||
		return 1
	tap_diag "rpc.gssd answered on the legacy krb5 pipe without enctypes; restarting it, mounting again"
	gssd_stop
	gssd_start || return 1
	timeout 300 mount -t nfs -o "$1" "$2" "$3" >>"$CLIENT_LOG" 2>&1
}

# krb5_mount SEC MNT: mounts the export by the server's name with flavor
# SEC; the transport under test must carry it and the mount must use SEC.
krb5_mount() {
	local sec=$1 mnt=$2 opts mopts path=/
	opts="vers=$VERS,proto=rdma,port=20049,sec=$sec"
	if [ "$VERS" = 3 ]; then
		opts="$opts,nolock"
		path=/srv/export
	fi
	mkdir -p "$mnt"
	if ! gss_mount "$opts" "$SERVER_NAME:$path" "$mnt"; then
		tap_diag "mount -o $opts $SERVER_NAME:$path failed: $(tail -n 1 "$CLIENT_LOG")"
		return 1
	fi
	if ! rdma_mount_carrier_ok "$SERVER_IP4"; then
		umount "$mnt" >>"$CLIENT_LOG" 2>&1 || umount -f -l "$mnt" >>"$CLIENT_LOG" 2>&1
		return 1
	fi
	mopts=$(awk -v m="$mnt" '$2 == m { print $4 }' /proc/mounts)
	tr ',' '\n' <<<"$mopts" | grep -qx "sec=$sec" && return 0
	tap_diag "$mnt is not mounted with sec=$sec: $mopts"
	return 1
}

quiet_umount() { umount "$1" >>"$CLIENT_LOG" 2>&1; }

# chunk_counters MNT: the mount's transport counters read_chunk_count,
# write_chunk_count, reply_chunk_count and nomsg_call_count (Long Calls):
# mountstats fields 11, 12, 13 and 21.
chunk_counters() {
	echo "$(mountstats_field "$1" 11) $(mountstats_field "$1" 12)" \
		"$(mountstats_field "$1" 13) $(mountstats_field "$1" 21)"
}

# nfs_op_count MNT OP: how many OP RPCs the mount has sent (mountstats
# per-op statistics, first field).
nfs_op_count() {
	awk -v m="$1" -v op="$2:" '$1 == "device" { found = ($5 == m); next }
		found && $1 == op { print $2; exit }' /proc/self/mountstats
}

write_file() { dd if="$scratch/data" of="$1" bs=1M conv=fsync status=none 2>>"$CLIENT_LOG"; }

read_back() {
	local sum
	sum=$(sha256sum "$1" 2>>"$CLIENT_LOG" | cut -d' ' -f1)
	[ "$sum" = "$expected" ] && return 0
	tap_diag "read back ${sum:-nothing}, expected $expected"
	return 1
}

# trace_value LABEL KEY: one count from the server's trace summary.
trace_value() { awk -v k="$2" '$1 == k { print $2 }' "$LOG_DIR/trace-$1.txt" 2>/dev/null; }

nums() {
	local v
	for v in "$@"; do [[ $v =~ ^[0-9]+$ ]] || return 1; done
}

# The checks, on counter deltas of the write phase (r0/r1, n0/n1, writes)
# and of the read phase after the remount (w2/w3) of run_flavor.
ddp_write_used() { # control: WRITE payloads in Read chunks, not Long Calls
	nums "$r0" "$r1" "$n0" "$n1" "$writes" && ((r1 > r0 && n1 - n0 < writes))
}
ddp_read_used() { nums "$w2" "$w3" && ((w3 > w2)); }
writes_long_calls() {
	nums "$n0" "$n1" "$writes" && ((writes > 0 && n1 - n0 >= writes))
}
no_write_chunks() { nums "$w0" "$w1" "$w2" "$w3" && ((w1 == w0 && w3 == w2)); }
server_saw_ddp() { # control
	local other wch
	other=$(trace_value "$1" read_segments_other_position)
	wch=$(trace_value "$1" write_chunks)
	nums "$other" "$wch" && ((other > 0 && wch > 0))
}
server_saw_no_ddp() {
	local sec=$1 pos0 other wch lost
	pos0=$(trace_value "$sec" read_segments_position_zero)
	other=$(trace_value "$sec" read_segments_other_position)
	wch=$(trace_value "$sec" write_chunks)
	lost=$(trace_value "$sec" lost)
	nums "$pos0" "$other" "$wch" "$lost" && ((pos0 > 0 && other == 0 && wch == 0 && lost == 0))
}

# run_flavor SEC: seven cases.
run_flavor() {
	local sec=$1 mnt=/mnt/nfs-krb5-$1 file=krb5-$1-$$.bin d
	local r0 w0 p0 n0 r1 w1 p1 n1 r2 w2 p2 n2 r3 w3 p3 n3 writes
	server_fn srv_trace_clear || tap_diag "sec=$sec: the server's trace was not cleared"
	if ! check "sec=$sec: NFSv$VERS mount over rdma" krb5_mount "$sec" "$mnt"; then
		for d in "8 MiB written" "remounted, read back, SHA-256 matches" "chunk check 1" \
			"chunk check 2" "server trace check" "unmount"; do
			tap_not_ok "sec=$sec: $d (not mounted)"
		done
		return
	fi
	read -r r0 w0 p0 n0 <<<"$(chunk_counters "$mnt")"
	tap_check "sec=$sec: 8 MiB written" write_file "$mnt/$file"
	read -r r1 w1 p1 n1 <<<"$(chunk_counters "$mnt")"
	writes=$(nfs_op_count "$mnt" WRITE)
	tap_diag "sec=$sec written: ${writes:-?} WRITEs; $(mount_xprt_line "$mnt")"
	# A fresh mount, so that the data comes from the server.
	if quiet_umount "$mnt" && krb5_mount "$sec" "$mnt"; then
		read -r r2 w2 p2 n2 <<<"$(chunk_counters "$mnt")"
		tap_check "sec=$sec: remounted, read back, SHA-256 matches" read_back "$mnt/$file"
		read -r r3 w3 p3 n3 <<<"$(chunk_counters "$mnt")"
		tap_diag "sec=$sec read: $(mount_xprt_line "$mnt")"
	else
		tap_not_ok "sec=$sec: remounted, read back, SHA-256 matches (remount failed)"
	fi
	tap_diag "sec=$sec chunks written/read: Read $r0..$r1/$r2..$r3, Write $w0..$w1/$w2..$w3," \
		"Reply $p0..$p1/$p2..$p3, Long Calls $n0..$n1/$n2..$n3"
	server_fn "srv_trace_count $sec" || tap_diag "sec=$sec: no trace summary from the server"
	tap_diag "sec=$sec server saw: $(tr '\n' ' ' 2>/dev/null <"$LOG_DIR/trace-$sec.txt")"
	if [ "$sec" = sys ]; then
		tap_check "sec=sys: WRITE payloads went in Read chunks, not Long Calls (control)" \
			ddp_write_used
		tap_check "sec=sys: READ payloads came back in Write chunks (control)" ddp_read_used
		tap_check "sec=sys: the server saw Read chunks past position zero, wrote Write chunks (control)" \
			server_saw_ddp sys
	else
		tap_check "sec=$sec: every WRITE went whole as a Long Call" writes_long_calls
		tap_check "sec=$sec: no Write chunk (write_chunk_count unchanged)" no_write_chunks
		tap_check "sec=$sec: the server saw Read chunks only at position zero, wrote no Write chunk" \
			server_saw_no_ddp "$sec"
	fi
	rm -f "$mnt/$file" 2>>"$CLIENT_LOG"
	tap_check "sec=$sec: unmount" quiet_umount "$mnt"
}

diagnose() {
	tap_diag "diagnostics (all logs in $LOG_DIR):"
	server_fn srv_diag
	{
		echo "== client: rpc.gssd"
		tail -n 40 "$LOG_DIR/gssd.log"
		echo "== client: keytab"
		klist -ke /etc/krb5.keytab
		echo "== client: rpc.gssd's machine credential"
		klist -c "FILE:/tmp/krb5ccmachine_$REALM"
		echo "== client: commands"
		tail -n 20 "$CLIENT_LOG"
		echo "== client: dmesg"
		dmesg | grep -iE 'gss|krb5|rpc|nfs' | tail -n 15
		cat "$LOG_DIR/server-diag.txt"
	} 2>&1 | sed 's/^/# /'
}

# Whatever happens, the guests are put back: a test that ends early
# (time limit) still undoes its set-up, without TAP output.
torn_down=0
quiet_teardown() {
	[ "$torn_down" = 1 ] && return
	umount /mnt/nfs-krb5-sys /mnt/nfs-krb5-krb5i /mnt/nfs-krb5-krb5p >/dev/null 2>&1
	client_teardown >/dev/null 2>&1
	server_fn srv_teardown >/dev/null 2>&1
}
trap quiet_teardown EXIT
trap 'exit 143' TERM

tap_check "client: /etc/hosts, krb5.conf written, kernel has Kerberos AES enctypes" \
	client_prepare
server_ok=0
check "server: KDC, keytab, rpc.svcgssd, nfsd restarted, export allows krb5i/krb5p" \
	server_setup && server_ok=1
# The control runs before rpc.gssd starts, so that nothing of Kerberos is
# involved in it.
run_flavor sys
client_ok=0
if [ "$server_ok" = 1 ]; then
	check "client: keytab, machine credential, rpc_pipefs, rpc.gssd ready" client_setup &&
		client_ok=1
else
	tap_not_ok "client: keytab, machine credential, rpc_pipefs, rpc.gssd ready (no server set-up)"
fi
for sec in krb5i krb5p; do
	if [ "$client_ok" = 1 ]; then
		run_flavor "$sec"
	else
		for d in "NFSv$VERS mount over rdma" "8 MiB written" "remounted, read back, SHA-256 matches" \
			"chunk check 1" "chunk check 2" "server trace check" "unmount"; do
			tap_not_ok "sec=$sec: $d (Kerberos set-up failed)"
		done
	fi
done

! tap_failures || diagnose
torn_down=1
tap_check "client: rpc.gssd stopped, rpc_pipefs unmounted, /etc restored" client_teardown
tap_check "server: KDC and rpc.svcgssd stopped, /etc and export restored, nfsd on rdma 20049" \
	server_fn srv_teardown
umount "$scratch" 2>/dev/null
tap_exit
