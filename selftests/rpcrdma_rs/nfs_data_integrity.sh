#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# NFS over RDMA data integrity: for each NFS version, mount with
# proto=rdma, check the mount really uses the rdma transport, write files
# of several sizes (buffered and O_DIRECT), remount to defeat the page
# cache (a umount that fails fails the read-back cases: the reads could
# come from the page cache), read them back from the server and compare
# checksums, and read the transport's counters through nfs-utils
# (mountstats, nfsiostat); then the same over
# IPv6. NFS_VERSIONS lists the versions (all four), NFS_IPV6_VERSIONS
# which of them also run over IPv6 (all): the netid and the address are
# the transport's, whatever the version above it.
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

VERSIONS=${NFS_VERSIONS:-3 4.0 4.1 4.2}
CASES_PER_VERSION=8

IPV6_VERSIONS=""
for v in ${NFS_IPV6_VERSIONS-$VERSIONS}; do
	case " $VERSIONS " in *" $v "*) IPV6_VERSIONS+="$v " ;; esac
done

require_rdma_xprt "nfs data integrity"
IPV6_CASES=5
set -- $IPV6_VERSIONS
ipv6_plan=$(($# * IPV6_CASES))
set -- $VERSIONS
tap_plan $(($# * CASES_PER_VERSION + ipv6_plan))

scratch=/mnt/scratch
mkdir -p "$scratch"
mountpoint -q "$scratch" || mount -t tmpfs -o size=256m tmpfs "$scratch"

# Reference data, made once: sizes chosen to cover inline, odd lengths and
# payloads large enough for chunks. The 1000-byte file's O_DIRECT READ
# reply is inline (verify_direct).
head -c 1000 /dev/urandom >"$scratch/tiny"
head -c 4096 /dev/urandom >"$scratch/small"
head -c 123457 /dev/urandom >"$scratch/odd"
head -c $((8 << 20)) /dev/urandom >"$scratch/large"
head -c $((4 << 20)) /dev/urandom >"$scratch/direct"
(cd "$scratch" && sha256sum tiny small odd large direct >expected.sha256)
if [ "${BREAK_DATA_CHECK:-0}" = 1 ]; then
	# Self-test of the harness: a wrong expectation must fail the run.
	tap_diag "BREAK_DATA_CHECK=1: corrupting the expected checksums"
	break_checksums "$scratch/expected.sha256"
fi

write_files() {
	local dst=$1
	cp "$scratch/tiny" "$scratch/small" "$scratch/odd" "$scratch/large" "$dst/" &&
		dd if="$scratch/direct" of="$dst/direct" bs=1M oflag=direct status=none &&
		sync
}

# verify_buffered DIR: the buffered files read back right, and from the
# server: the fresh mount's READs (mountstats serverreadbytes) returned at
# least their 8517161 bytes.
verify_buffered() {
	local got
	(cd "$1" && sha256sum -c --quiet <(grep -v ' direct$' "$scratch/expected.sha256")) || return 1
	got=$(mount_bytes "$mnt" 6)
	[ "${got:-0}" -ge $((1000 + 4096 + 123457 + (8 << 20))) ] && return 0
	tap_diag "the server returned ${got:-no} bytes to READs: the rest came from a cache"
	return 1
}

# verify_direct DIR: the O_DIRECT file read back right, and the 1000-byte
# file in one O_DIRECT READ of 1000 bytes: its reply is inline, so its
# data reaches the pages by the transport's copy (a buffered READ asks
# for whole pages, whose reply needs a Write chunk).
verify_direct() {
	local sum
	sum=$(dd if="$1/direct" bs=1M iflag=direct status=none | sha256sum | cut -d' ' -f1)
	grep -q "^$sum  direct\$" "$scratch/expected.sha256" || return 1
	sum=$(dd if="$1/tiny" bs=1000 count=1 iflag=direct status=none | sha256sum | cut -d' ' -f1)
	grep -q "^$sum  tiny\$" "$scratch/expected.sha256" && return 0
	tap_diag "the 1000-byte file read back wrong in an inline READ reply"
	return 1
}

# remount VERS MNT [PROTO]: MNT unmounted and mounted afresh, so that the
# reads after it go to the server: a umount that failed would leave the
# superblock, and with it the page cache of what was written (a new
# mount of the same export shares them), for the reads to be served from.
remount() {
	umount "$2" || { tap_diag "umount $2 failed: reads would come from the page cache"; return 1; }
	nfs_mount "$@" || { tap_diag "mounting $2 again failed"; return 1; }
}

# read_back LABEL DIR: the buffered and O_DIRECT read-back cases; both
# fail, saying why, when $not_read says the files were not written or
# not remounted.
read_back() {
	if [ -n "$not_read" ]; then
		tap_not_ok "$1 buffered read back matches ($not_read)"
		tap_not_ok "$1 O_DIRECT read back matches ($not_read)"
		return
	fi
	tap_check "$1 buffered read back matches" verify_buffered "$2"
	tap_check "$1 O_DIRECT read back matches" verify_direct "$2"
}

for vers in $VERSIONS; do
	mnt=/mnt/nfs-$vers
	if ! tap_check "NFSv$vers mount over rdma" nfs_mount "$vers" "$mnt"; then
		for ((i = 1; i < CASES_PER_VERSION; i++)); do
			tap_not_ok "NFSv$vers case $i (not mounted)"
		done
		continue
	fi
	tap_check "NFSv$vers mountstats shows xprt: rdma" mount_uses "$mnt" rdma
	dir="$mnt/integrity-$$"
	mkdir -p "$dir"
	tap_check "NFSv$vers write 1000 B, 4 KiB, 123457 B, 8 MiB buffered and 4 MiB O_DIRECT" write_files "$dir"
	# Remount so that reads go to the server, not the page cache.
	not_read=""
	remount "$vers" "$mnt" || not_read="not remounted"
	read_back "NFSv$vers" "$dir"
	tap_check "NFSv$vers nfs-utils mountstats and nfsiostat read the transport's counters" \
		nfs_utils_read "$mnt"
	tap_check "NFSv$vers remove files" rm -rf "$dir"
	tap_check "NFSv$vers unmount" umount "$mnt"
done

# The same over IPv6 (netid rdma6), for each of NFS_IPV6_VERSIONS.
for vers in $IPV6_VERSIONS; do
	mnt=/mnt/nfs6-$vers
	if ! tap_check "NFSv$vers mount over rdma6 [$SERVER_IP6]" nfs_mount "$vers" "$mnt" rdma6; then
		for ((i = 1; i < IPV6_CASES; i++)); do tap_not_ok "NFSv$vers IPv6 case $i (not mounted)"; done
		continue
	fi
	tap_check "NFSv$vers IPv6 mountstats shows xprt: rdma" mount_uses "$mnt" rdma
	dir="$mnt/integrity6-$$"
	mkdir -p "$dir"
	not_read=""
	if ! write_files "$dir"; then
		not_read="writing the files failed"
	elif ! remount "$vers" "$mnt" rdma6; then
		not_read="not remounted"
	fi
	read_back "NFSv$vers IPv6" "$dir"
	rm -rf "$dir"
	tap_check "NFSv$vers IPv6 unmount" umount "$mnt"
done
tap_exit
