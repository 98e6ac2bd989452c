#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# NFS over RDMA data integrity: for each NFS version, mount with
# proto=rdma, check the mount really uses the rdma transport, write files
# of several sizes (buffered and O_DIRECT), remount to defeat the page
# cache, read them back and compare checksums, and read the transport's
# counters through nfs-utils (mountstats, nfsiostat); then the same over
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
# payloads large enough for chunks.
head -c 4096 /dev/urandom >"$scratch/small"
head -c 123457 /dev/urandom >"$scratch/odd"
head -c $((8 << 20)) /dev/urandom >"$scratch/large"
head -c $((4 << 20)) /dev/urandom >"$scratch/direct"
(cd "$scratch" && sha256sum small odd large direct >expected.sha256)
if [ "${BREAK_DATA_CHECK:-0}" = 1 ]; then
	# Self-test of the harness: a wrong expectation must fail the run.
	tap_diag "BREAK_DATA_CHECK=1: corrupting the expected checksums"
	break_checksums "$scratch/expected.sha256"
fi

write_files() {
	local dst=$1
	cp "$scratch/small" "$scratch/odd" "$scratch/large" "$dst/" &&
		dd if="$scratch/direct" of="$dst/direct" bs=1M oflag=direct status=none &&
		sync
}

verify_buffered() {
	(cd "$1" && sha256sum -c --quiet <(grep -v ' direct$' "$scratch/expected.sha256"))
}

verify_direct() {
	local sum
	sum=$(dd if="$1/direct" bs=1M iflag=direct status=none | sha256sum | cut -d' ' -f1)
	grep -q "^$sum  direct\$" "$scratch/expected.sha256"
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
	tap_check "NFSv$vers write 4 KiB, 123457 B, 8 MiB buffered and 4 MiB O_DIRECT" write_files "$dir"
	# Remount so that reads go to the server, not the page cache.
	umount "$mnt" && nfs_mount "$vers" "$mnt"
	tap_check "NFSv$vers buffered read back matches" verify_buffered "$dir"
	tap_check "NFSv$vers O_DIRECT read back matches" verify_direct "$dir"
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
	write_files "$dir" && umount "$mnt" && nfs_mount "$vers" "$mnt" rdma6
	tap_check "NFSv$vers IPv6 buffered read back matches" verify_buffered "$dir"
	tap_check "NFSv$vers IPv6 O_DIRECT read back matches" verify_direct "$dir"
	rm -rf "$dir"
	tap_check "NFSv$vers IPv6 unmount" umount "$mnt"
done
tap_exit
