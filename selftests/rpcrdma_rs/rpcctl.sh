#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rpcctl (nfs-utils) and /sys/kernel/sunrpc/ see and steer a mount over
# the transport under test as they do one over TCP. With an NFSv4.2 mount
# over rdma: `rpcctl xprt show` names its transport rdma, the server's
# address, port 20049 and CONNECTED, as main; `rpcctl switch show` lists
# it. Then the server gains a second address, and `rpcctl xprt set XPRT
# dstaddr ADDR` moves the mounted transport there: sysfs and rpcctl name
# the new address, the next RPC connects to it (the client's RDMA CM
# identifiers, `rdma resource show cm_id`, name it as their destination,
# the old one no longer), and data written over the mount reads back past
# the page cache. Moving back works the same way. sunrpc resolves the
# address and forces the disconnect; the transport must take the new
# address on its next connect and nothing of the old connection may stay.
# shellcheck disable=SC2317
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

require_rdma_xprt "rpcctl"

NEW_IP4=10.225.0.11
mnt=/mnt/rpcctl
data=/tmp/rpcctl-data
head -c $((1 << 20)) /dev/urandom >"$data"
out=$RUN_DIR/rpcctl
mkdir -p "$out"

# xprt_of ADDR: sets xprt to the rpcctl name (xprt-N) of the rdma
# transport whose sysfs dstaddr is ADDR.
xprt_of() {
	local d
	xprt=""
	for d in /sys/kernel/sunrpc/xprt-switches/switch-*/xprt-*-rdma; do
		[ "$(cat "$d/dstaddr" 2>/dev/null)" = "$1" ] || continue
		d=${d##*/}
		xprt=${d%-rdma}
		return 0
	done
	why="no rdma transport with dstaddr $1 under /sys/kernel/sunrpc/xprt-switches"
	return 1
}
# rpcctl_says FILE REGEX ARGS...: rpcctl ARGS prints a line matching
# REGEX (its output kept in FILE for the record).
rpcctl_says() {
	local file=$out/$1 re=$2
	shift 2
	timeout 60 rpcctl "$@" >"$file" 2>&1 && grep -Eq "$re" "$file"
}
# The client's RDMA CM identifiers to port 20049 name ADDR, and no other
# address, as their destination (the old connection's may take a moment
# to go after the new one is up).
cm_dst_is() {
	local addr=$1 i l dsts
	for ((i = 0; i < 50; i++)); do
		dsts=()
		rdma resource show cm_id >"$out/cm_id-$addr.txt" 2>&1 || return 1
		while read -r l; do
			[[ $l =~ dst-addr\ ([0-9.]+):20049 ]] && dsts+=("${BASH_REMATCH[1]}")
		done <"$out/cm_id-$addr.txt"
		[ "${dsts[*]}" = "$addr" ] && return 0
		sleep 0.1
	done
	return 1
}
io() {
	cp "$data" "$mnt/rpcctl-data" && sync && drop_caches &&
		cmp "$data" "$mnt/rpcctl-data" && rm "$mnt/rpcctl-data" && sync
}
server_second_address() {
	server_run "dev=\$(ip -o -4 addr show | awk '\$4 == \"$SERVER_IP4/24\" { print \$2 }') &&
		ip addr add $NEW_IP4/24 dev \"\$dev\""
}
# move ADDR: the mounted transport is set to ADDR, and says so.
move() {
	rpcctl_says "set-$1.txt" "^$xprt: rdma, ${1//./\\.}, " xprt set "$xprt" dstaddr "$1" &&
		[ "$(cat /sys/kernel/sunrpc/xprt-switches/switch-*/"$xprt"-rdma/dstaddr)" = "$1" ]
}

tap_plan 11
tap_check "NFSv4.2 mounted over rdma" nfs_mount 4.2 "$mnt"
if ! xprt_of "$SERVER_IP4"; then
	tap_not_ok "the mount's transport found in sysfs ($why)"
	mounted "$mnt" && timeout -s KILL 60 umount "$mnt"
	tap_exit
fi
tap_ok "the mount's transport found in sysfs: $xprt"
tap_check "rpcctl xprt show: rdma, $SERVER_IP4, port 20049, CONNECTED, main" \
	rpcctl_says xprt-show.txt "^$xprt: rdma, ${SERVER_IP4//./\\.}, port 20049, state <[^>]*CONNECTED[^>]*>, main$" \
	xprt show "$xprt"
tap_check "rpcctl switch show lists it" \
	rpcctl_says switch-show.txt "^[[:space:]]+$xprt: rdma, ${SERVER_IP4//./\\.}" switch show
tap_check "the server has a second address, $NEW_IP4" server_second_address
tap_check "rpcctl xprt set $xprt dstaddr $NEW_IP4" move "$NEW_IP4"
tap_check "1 MiB written over the moved transport reads back" io
tap_check "its connection goes to $NEW_IP4 (rdma resource show cm_id)" cm_dst_is "$NEW_IP4"
tap_check "rpcctl xprt set $xprt dstaddr $SERVER_IP4 (back)" move "$SERVER_IP4"
tap_check "1 MiB written over it again reads back" io
tap_check "its connection goes to $SERVER_IP4 again" cm_dst_is "$SERVER_IP4"
mounted "$mnt" && timeout -s KILL 60 umount "$mnt"
server_run "ip addr del $NEW_IP4/24 dev \$(ip -o -4 addr show | awk '\$4 == \"$NEW_IP4/24\" { print \$2 }')" || true
rm -f "$data"
tap_exit
