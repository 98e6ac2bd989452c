#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# nfs-utils reads both transports alike. In one guest, an NFSv4.2 mount
# over rpcrdma_rs and then the same mount over the kernel's rpcrdma each
# take the same I/O; mountstats --xprt must print the C transport's fields
# for both, in its order, with each line's values, and nfsiostat must print
# the same report for both, numbers aside. rpcrdma_rs is unloaded for the
# C part and loaded again at the end, and the kernel's rpcrdma is gone
# again before the test ends: the harness fails an rs run in which it
# stays loaded after a test.
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

require_rs_transport "nfs-utils on both transports"
require_rdma_xprt "nfs-utils on both transports"

mnt=/mnt/nfs-utils
data=/tmp/nfs-utils-data
head -c $((1 << 20)) /dev/urandom >"$data"

# io: a 1 MiB file written, read back past the page cache and removed, so
# that the counters mountstats reads are not all zero.
io() {
	cp "$data" "$mnt/nfs-utils-data" && sync && drop_caches &&
		cmp "$data" "$mnt/nfs-utils-data" && rm "$mnt/nfs-utils-data"
}
# mount_io_read TRANSPORT: mounts over TRANSPORT (rs or c), does the I/O,
# reads the counters through nfs-utils (leaving nfsiostat's report in
# NFSIOSTAT_SHAPE) and unmounts; four cases.
mount_io_read() {
	local name=rpcrdma_rs
	[ "$1" = c ] && name=rpcrdma
	if ! TRANSPORT=$1 tap_check "NFSv4.2 mount over $name" nfs_mount 4.2 "$mnt"; then
		not_ok 3 "over $name (not mounted)"
		return
	fi
	tap_check "1 MiB written and read back over $name" io
	tap_check "mountstats --xprt and nfsiostat read $name's counters" nfs_utils_read "$mnt"
	tap_check "unmount ($name)" timeout -s KILL 60 umount "$mnt"
}
same_nfsiostat() {
	[ -n "$rs_shape" ] && [ "$rs_shape" = "$NFSIOSTAT_SHAPE" ] && return 0
	tap_diag "nfsiostat over rpcrdma_rs: $rs_shape"
	tap_diag "nfsiostat over rpcrdma: $NFSIOSTAT_SHAPE"
	return 1
}
# not_ok N WHY: N cases that could not run.
not_ok() {
	local i
	for ((i = 0; i < $1; i++)); do tap_not_ok "$2"; done
}
# unmount_left: what a failed case left mounted goes, forced if need be.
unmount_left() {
	mounted "$mnt" || return 0
	timeout -s KILL 60 umount "$mnt" || umount -f -l "$mnt"
}
c_loaded() { TRANSPORT=c load_transport && TRANSPORT=c rdma_xprt_registered; }
rs_loaded_again() { { [ -e /sys/module/rpcrdma_rs ] || load_transport; } && rdma_xprt_registered; }

tap_plan 13
NFSIOSTAT_SHAPE=""
mount_io_read rs
rs_shape=$NFSIOSTAT_SHAPE NFSIOSTAT_SHAPE=""
unmount_left
if ! tap_check "rpcrdma_rs unloaded" unload_transport; then
	not_ok 6 "over rpcrdma (rpcrdma_rs still loaded)"
elif ! tap_check "the kernel's rpcrdma loaded" c_loaded; then
	not_ok 5 "over rpcrdma (not loaded)"
else
	mount_io_read c
	tap_check "nfsiostat prints the same report for both, numbers aside" same_nfsiostat
fi
unmount_left
# Both are tried whatever failed before: the tests after this one need
# rpcrdma_rs, and never the kernel's rpcrdma.
if [ -e /sys/module/rpcrdma ]; then
	TRANSPORT=c tap_check "the kernel's rpcrdma unloaded" unload_transport
else
	tap_not_ok "the kernel's rpcrdma unloaded (it never loaded)"
fi
tap_check "rpcrdma_rs loaded again" rs_loaded_again
rm -f "$data"
tap_exit
