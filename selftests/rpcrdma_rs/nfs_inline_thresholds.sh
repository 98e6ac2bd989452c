#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The module parameters (the C transport's rdma_* sysctls) and what they
# do. modinfo describes them, and a write out of C's bounds fails and
# changes nothing. With rpcrdma_rs offering 1024-byte thresholds
# (max_inline_read, max_inline_write), long Calls (Position Zero Read
# chunks) and Reply chunks happen on ordinary requests, and the data
# integrity test must still pass; with the server's private data ignored
# (ignore_peer_private, a test hook), the RFC 8797 fallback (1024 bytes)
# is what the connection uses; with slot_table_entries 32 a new transport
# asks for 32 credits. What a connection uses is read back from the
# module's report.
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

require_rs_transport "module parameters and inline thresholds"
require_rdma_xprt "module parameters and inline thresholds"
tap_plan 16

params=/sys/module/rpcrdma_rs/parameters
mnt=/mnt/nfs-inline
# set_param NAME VALUE: fails, saying so, if the write is refused.
set_param() {
	local err
	err=$({ echo "$2" >"$params/$1"; } 2>&1) && return 0
	tap_diag "writing $2 to $1: $err"
	return 1
}
restore() {
	set_param max_inline_read 4096
	set_param max_inline_write 4096
	set_param slot_table_entries 128
	set_param ignore_peer_private 0
}
trap restore EXIT

# Each of the parameters, with a description, in the file that was loaded
# (lib.sh's load_transport) and writable by root in sysfs.
described() {
	local name parms desc rc=0
	parms=$(modinfo -F parm "$MODULE") || return 1
	for name in max_inline_read max_inline_write slot_table_entries; do
		desc=$(printf '%s\n' "$parms" | sed -n "s/^$name://p")
		desc=${desc% (uint)}
		tap_diag "$name: $desc"
		if [ "${#desc}" -lt 20 ]; then
			tap_diag "$name: no description in modinfo"
			rc=1
		fi
		if [ "$(stat -c %a "$params/$name" 2>/dev/null)" != 644 ]; then
			tap_diag "$name: not a 0644 file in $params"
			rc=1
		fi
	done
	return $rc
}

# bounded NAME LOW HIGH: writing LOW - 1 and HIGH + 1 fails with EINVAL
# and leaves the value as it was; LOW and HIGH are taken. Ends at the
# value it found.
bounded() {
	local name=$1 low=$2 high=$3 before v err rc=0
	before=$(cat "$params/$name") || return 1
	for v in $((low - 1)) $((high + 1)); do
		if err=$({ echo "$v" >"$params/$name"; } 2>&1); then
			tap_diag "$name took $v"
			rc=1
		elif [[ $err != *"Invalid argument"* ]]; then
			tap_diag "$name refused $v, but not with EINVAL: $err"
			rc=1
		fi
		if [ "$(cat "$params/$name")" != "$before" ]; then
			tap_diag "$name is $(cat "$params/$name") after writing $v, was $before"
			rc=1
		fi
	done
	for v in "$low" "$high"; do
		if ! set_param "$name" "$v" || [ "$(cat "$params/$name")" != "$v" ]; then
			tap_diag "$name did not take $v"
			rc=1
		fi
	done
	set_param "$name" "$before" || rc=1
	return $rc
}

inline_bounded() {
	bounded max_inline_read 1024 65536 && bounded max_inline_write 1024 65536
}

tap_check "modinfo describes max_inline_read, max_inline_write and slot_table_entries" described
tap_check "max_inline_read and max_inline_write refuse 1023 and 65537, take 1024 and 65536" \
	inline_bounded
tap_check "slot_table_entries refuses 3 and 16385, takes 4 and 16384" \
	bounded slot_table_entries 4 16384

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

set_param max_inline_read 1024
set_param max_inline_write 1024
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
	for c in "thresholds in use are 1024/1024" \
		"the server's private data was read (receive size 4096)" \
		"long symlink: Read chunk and Reply chunk" \
		"long extended attribute: Long Call and Reply chunk" \
		"300-entry directory listed" \
		"RDMA_NOMSG Calls and Reply chunks were used"; do
		tap_not_ok "$c (not mounted)"
	done
fi

# The whole data integrity test under the small thresholds, as a subtest.
integrity() {
	NFS_VERSIONS="4.1" NFS_IPV6_VERSIONS="4.1" bash "$(dirname "$0")/nfs_data_integrity.sh" "$RUN_DIR" |
		sed 's/^/    /'
	return "${PIPESTATUS[0]}"
}
tap_check "data integrity with 1024-byte thresholds" integrity

set_param max_inline_read 4096
set_param max_inline_write 4096
set_param ignore_peer_private 1
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
set_param ignore_peer_private 0

# A transport's slot table, and so the credits it asks for, is the
# slot_table_entries of when it was set up. Sizes that differ each way
# show which parameter is which threshold.
credits_32() {
	local requested granted
	requested=$(rs_xprt_field credits_requested) && granted=$(rs_xprt_field credits_granted) ||
		return 1
	tap_diag "credits_requested $requested credits_granted $granted"
	[ "$requested" = 32 ] && [ "$granted" -ge 1 ] && [ "$granted" -le 32 ]
}
one_mib() {
	head -c 1048576 /dev/urandom >/tmp/slots.bin &&
		cp /tmp/slots.bin "$1/slots.bin" && drop_caches &&
		cmp /tmp/slots.bin "$1/slots.bin"
	local rc=$?
	rm -f "$1/slots.bin" /tmp/slots.bin
	return $rc
}
set_param slot_table_entries 32
set_param max_inline_write 2048
set_param max_inline_read 3072
if tap_check "NFSv3 mount with slot_table_entries 32, max_inline_write 2048, max_inline_read 3072" \
	nfs_mount 3 "$mnt"; then
	tap_check "1 MiB file written and read back intact" one_mib "$mnt"
	tap_check "the transport asks for 32 credits and takes at most 32" credits_32
	tap_check "thresholds in use are 2048/3072" thresholds_are 2048 3072
	umount "$mnt"
else
	for c in "1 MiB file written and read back intact" \
		"the transport asks for 32 credits and takes at most 32" \
		"thresholds in use are 2048/3072"; do
		tap_not_ok "$c (not mounted)"
	done
fi
set_param slot_table_entries 128
set_param max_inline_write 4096
set_param max_inline_read 4096
tap_exit
