#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Inline thresholds: with rpcrdma_rs offering 1024-byte thresholds, long
# Calls (Position Zero Read chunks) and Reply chunks happen on ordinary
# requests, and the data integrity test must still pass; with the server's
# private data ignored, the RFC 8797 fallback (1024 bytes) is what the
# connection uses. The thresholds are read back from the module's report.
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

require_rs_transport "inline threshold settings"
require_rdma_xprt "inline threshold settings"
tap_plan 9

settings=/sys/kernel/debug/rpcrdma_rs/settings
mnt=/mnt/nfs-inline
restore() {
	echo "inline_max 4096" >"$settings"
	echo "ignore_peer_private 0" >"$settings"
}
trap restore EXIT

thresholds_are() {
	local send recv
	send=$(rs_xprt_field inline_send)
	recv=$(rs_xprt_field inline_recv)
	tap_diag "inline_send $send inline_recv $recv"
	[ "$send" = "$1" ] && [ "$recv" = "$2" ]
}

# A symlink target longer than the thresholds: SYMLINK carries it in a
# Read chunk, READLINK's reply comes in a Reply chunk.
long_symlink() {
	local target
	target=$(printf 'x%.0s' $(seq 1 2000))
	ln -s "$target" "$1/long-link" && drop_caches &&
		[ "$(readlink "$1/long-link")" = "$target" ] && rm "$1/long-link"
}

# An extended attribute longer than the thresholds (NFSv4.2 SETXATTR has
# no DDP-eligible data): the Call goes as a Long Call (RDMA_NOMSG, Position
# Zero Read chunk), GETXATTR's reply in a Reply chunk.
long_xattr() {
	python3 - "$1/xattr-file" <<'PY'
import os, sys
path = sys.argv[1]
open(path, "w").close()
value = os.urandom(3000)
os.setxattr(path, "user.big", value)
os.system("echo 3 >/proc/sys/vm/drop_caches")
assert os.getxattr(path, "user.big") == value
os.unlink(path)
PY
}

# A directory whose listing needs more than one kilobyte.
listing() {
	local n
	mkdir -p "$1/dir" && (cd "$1/dir" && seq -f 'name-%04g' 300 | xargs touch) || return 1
	drop_caches
	n=$(ls -f "$1/dir" | grep -c '^name-')
	rm -rf "$1/dir"
	[ "$n" = 300 ]
}

nomsg_and_reply_chunks() {
	[ "$(mountstats_field "$1" 21)" -gt 0 ] && [ "$(mountstats_field "$1" 13)" -gt 0 ]
}

echo "inline_max 1024" >"$settings"
if tap_check "NFSv4.2 mount with 1024-byte inline thresholds offered" nfs_mount 4.2 "$mnt"; then
	tap_check "thresholds in use are 1024/1024" thresholds_are 1024 1024
	tap_check "the server's private data was read (receive size 4096)" \
		[ "$(rs_xprt_field peer_recv_size)" = 4096 ]
	tap_check "long symlink: Read chunk and Reply chunk" long_symlink "$mnt"
	tap_check "long extended attribute: Long Call and Reply chunk" long_xattr "$mnt"
	tap_check "300-entry directory listed" listing "$mnt"
	tap_diag "$(mount_xprt_line "$mnt")"
	tap_check "RDMA_NOMSG Calls and Reply chunks were used" nomsg_and_reply_chunks "$mnt"
	umount "$mnt"
else
	for i in 2 3 4 5 6 7; do tap_not_ok "case $i (not mounted)"; done
fi

# The whole data integrity test under the small thresholds, as a subtest.
integrity() {
	NFS_VERSIONS="4.1" bash "$(dirname "$0")/nfs_data_integrity.sh" "$RUN_DIR" | sed 's/^/    /'
	return "${PIPESTATUS[0]}"
}
tap_check "data integrity with 1024-byte thresholds" integrity

echo "inline_max 4096" >"$settings"
echo "ignore_peer_private 1" >"$settings"
fallback() {
	nfs_mount 3 "$mnt" || return 1
	[ "$(rs_xprt_field peer_private_data)" = none ] && thresholds_are 1024 1024 &&
		head -c 300000 /dev/urandom >/tmp/fallback.bin &&
		cp /tmp/fallback.bin "$mnt/fallback.bin" && drop_caches &&
		cmp /tmp/fallback.bin "$mnt/fallback.bin"
	local rc=$?
	rm -f "$mnt/fallback.bin"
	umount "$mnt"
	return $rc
}
tap_check "no peer private data: 1024-byte fallback, data intact" fallback
tap_exit
