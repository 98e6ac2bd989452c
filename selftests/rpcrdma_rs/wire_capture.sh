#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Traffic for the wire corpus (scripts/make-wire-corpus.sh): NFS operations
# chosen so that every RPC-over-RDMA header shape crosses the link while
# the server guest captures it: inline calls and replies, Read chunks
# (large WRITE), Write chunks (large READ), Reply chunks (large READDIR)
# and a long call (a SYMLINK whose target does not fit inline).
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

require_rdma_xprt "wire capture"
tap_plan 11
mnt=/mnt/wire
tap_check "NFSv4.2 mount over rdma" nfs_mount 4.2 "$mnt"
dir=$mnt/wire-$$
mkdir -p "$dir/many"
tap_check "1 MiB write (Read chunk)" dd if=/dev/urandom of="$dir/big" bs=1M count=1 oflag=direct status=none
tap_check "1 MiB read (Write chunk)" dd if="$dir/big" of=/dev/null bs=1M iflag=direct status=none
make_files() {
	local i
	for ((i = 1; i <= 400; i++)); do : >"$dir/many/file-with-a-longish-name-$i" || return 1; done
}
count_files() {
	local n
	n=$(ls -l "$dir/many" | grep -c file-with-a-longish-name-)
	tap_diag "listed $n files"
	[ "$n" = 400 ]
}
tap_check "400 files" make_files
umount "$mnt" && nfs_mount 4.2 "$mnt"
tap_check "large READDIR (Reply chunk)" count_files
target=$(head -c 3000 /dev/zero | tr '\0' 'x')/$(head -c 1000 /dev/zero | tr '\0' 'y')
tap_check "SYMLINK with a 4001-byte target (long call)" ln -s "$target" "$dir/long-link"
set_xattr() {
	/usr/bin/python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.wire", b"z" * 3000)' "$1"
}
tap_check "SETXATTR with a 3000-byte value (long call)" set_xattr "$dir/big"
tap_check "unmount" umount "$mnt"

# A second connection with 1 KiB inline thresholds (other private data, and
# long calls and Reply chunks for ordinary operations): the C transport's
# sysctls, rpcrdma_rs's module parameters of the same names. Back to the
# defaults (4096) on exit.
if [ "$TRANSPORT" = rs ]; then
	inline_dir=/sys/module/rpcrdma_rs/parameters inline_prefix=max_inline_
else
	inline_dir=/proc/sys/sunrpc inline_prefix=rdma_max_inline_
fi
set_inline() {
	[ -w "$inline_dir/${inline_prefix}write" ] || return 0
	echo "$1" >"$inline_dir/${inline_prefix}write"
	echo "$1" >"$inline_dir/${inline_prefix}read"
}
trap 'set_inline 4096' EXIT
set_inline 1024
tap_check "NFSv4.2 mount with 1 KiB inline thresholds" nfs_mount 4.2 "$mnt"
tap_check "listing and xattr with 1 KiB thresholds" bash -c "ls -l '$dir/many' >/dev/null && /usr/bin/python3 -c 'import os; os.setxattr(\"$dir/big\", \"user.small\", b\"s\" * 900)'"
rm -rf "$dir"
tap_check "unmount" umount "$mnt"
tap_exit
