#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A canary for the harness itself. With HARNESS_CANARY=1 (scripts/test.sh
# sets it for one short run of its own) it plants two faults the harness
# must catch: a "WARNING:" line in the kernel log, and a data check whose
# expected checksum is wrong (BREAK_DATA_CHECK, as nfs_data_integrity.sh
# does it). That run must fail for exactly these two reasons. Without
# HARNESS_CANARY=1 it is an ordinary, passing data check.
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

require_rdma_xprt "harness canary"
tap_plan 3

if [ "${HARNESS_CANARY:-0}" = 1 ]; then
	# Level 4 (warning), as a kernel WARNING would be logged.
	echo "<4>WARNING: harness canary: planted by harness_canary.sh, must fail the run" >/dev/kmsg
	BREAK_DATA_CHECK=1
fi

# NFSv3: no grace period to wait out on a fresh server.
mnt=/mnt/canary
data=/tmp/canary.bin
sums=/tmp/canary.sha256
head -c $((1 << 20)) /dev/urandom >"$data"
(cd /tmp && sha256sum canary.bin) >"$sums"
if [ "${BREAK_DATA_CHECK:-0}" = 1 ]; then
	tap_diag "BREAK_DATA_CHECK=1: corrupting the expected checksum"
	break_checksums "$sums"
fi

# --status: a mismatch fails the case without a word on stderr, so that
# the planted fault is the only thing that goes wrong.
read_back() { (cd "$mnt" && sha256sum -c --status "$sums"); }

if tap_check "NFSv3 mount over rdma" nfs_mount 3 "$mnt"; then
	# Remount so that the read goes to the server, not the page cache.
	cp "$data" "$mnt/canary.bin" && umount "$mnt" && nfs_mount 3 "$mnt"
	tap_check "1 MiB written and read back matches its checksum" read_back
	rm -f "$mnt/canary.bin"
	tap_check "unmount" umount "$mnt"
else
	tap_not_ok "read back (not mounted)"
	tap_not_ok "unmount (not mounted)"
fi
tap_exit
