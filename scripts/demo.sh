#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Sets up everything a fresh Debian 12 machine lacks, then boots the two
# guests and shows an NFS mount over RDMA with some I/O.
#
#   scripts/demo.sh [--transport c|rs] [--rdma rxe|siw]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$RPCRDMA_RS_TOP"

# The demo mounts through rpcrdma_rs; --transport c shows the kernel's C
# transport instead.
transport=rs
rdma=rxe
while [ $# -gt 0 ]; do
	case "$1" in
	--transport) transport=$2; shift 2 ;;
	--rdma) rdma=$2; shift 2 ;;
	*) die "unknown argument $1" ;;
	esac
done

scripts/setup.sh
scripts/build-kernel.sh >/dev/null
scripts/build-module.sh

out=$RPCRDMA_RS_CACHE/runs/demo-$(date +%Y%m%d-%H%M%S)
status=0
scripts/harness.sh --transport "$transport" --rdma "$rdma" --tests demo.sh --out "$out" || status=$?
echo
grep -E '^(#|ok|not ok)' "$out/tap/demo.sh.tap" 2>/dev/null || true
exit "$status"
