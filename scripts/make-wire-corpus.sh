#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Remakes the wire corpus in rust/host/tests/wire/ from real traffic: boots
# the harness with the kernel's C client and server, captures RoCEv2 in the
# server guest while selftests/rpcrdma_rs/wire_capture.sh runs, and keeps a
# few examples of each header shape and the connection's private data.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$RPCRDMA_RS_TOP"

scripts/setup.sh
scripts/build-kernel.sh >/dev/null
out=$RPCRDMA_RS_CACHE/runs/wire-corpus-$(date +%Y%m%d-%H%M%S)
scripts/harness.sh --transport c --rdma "${1:-rxe}" --tests wire_capture.sh --env CAPTURE=1 --out "$out"
dest=rust/host/tests/wire
rm -f "$dest"/linux-*
tmp=$(mktemp -d)
python3 scripts/wire_corpus.py "$out/capture.pcap" "$tmp"
for f in "$tmp"/*; do mv "$f" "$dest/linux-$(basename "$f")"; done
rmdir "$tmp"
log "corpus in $dest:"
ls -l "$dest" >&2
