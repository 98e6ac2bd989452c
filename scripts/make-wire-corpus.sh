#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Remakes the captured part of the wire corpus in rust/host/tests/wire/
# from real traffic: boots the harness over Soft-RoCE with the kernel's NFS
# server and the client transport asked for, captures RoCEv2 in the server
# guest while selftests/rpcrdma_rs/wire_capture.sh runs, and keeps a few
# examples of each header shape, the connections' private data, and
# tshark's dissection of each header (<name>.tshark). With rpcrdma_rs the
# capture also holds an RDMA_ERROR (ERR_VERS) from the server.
#
#   scripts/make-wire-corpus.sh [--transport c|rs] [--from-capture PCAP]
#
# The C transport's files are named linux-*, rpcrdma_rs's rs-*.
# --from-capture extracts from an earlier run's capture.pcap, booting
# nothing. Only RoCEv2 is parsed: Soft-iWARP carries the same messages in
# MPA/DDP framing over TCP, which the extractor does not read. The
# committed files are replaced only once a complete set is extracted.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$RPCRDMA_RS_TOP"

transport=c pcap=""
while [ $# -gt 0 ]; do
	case "$1" in
	--transport) transport=$2; shift 2 ;;
	--from-capture) pcap=$2; shift 2 ;;
	*) die "usage: $0 [--transport c|rs] [--from-capture PCAP]" ;;
	esac
done
case "$transport" in c) prefix=linux ;; rs) prefix=rs ;; *) die "--transport is c or rs" ;; esac

if [ -z "$pcap" ]; then
	scripts/setup.sh
	scripts/build-kernel.sh >/dev/null
	[ "$transport" = c ] || scripts/build-module.sh >/dev/null
	out=$RPCRDMA_RS_CACHE/runs/wire-corpus-$(date +%Y%m%d-%H%M%S)-$transport
	# With rpcrdma_rs, its connection probe also sends a call as version
	# 2, which the server refuses with RDMA_ERROR ERR_VERS.
	tests=wire_capture.sh
	[ "$transport" = c ] || tests="$tests connect_probe.sh"
	scripts/harness.sh --transport "$transport" --rdma rxe --tests "$tests" \
		--env CAPTURE=1 --out "$out"
	pcap=$out/capture.pcap
fi
[ -s "$pcap" ] || die "no capture at $pcap"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 scripts/wire_corpus.py "$pcap" "$tmp" >/dev/null
# Every shape wire_capture.sh makes must be there, or the corpus stays.
for want in cm-req-1.pd cm-rep-1.pd call-msg-inline-1.hdr reply-msg-inline-1.hdr \
	call-msg-read-1.hdr call-msg-write-1.hdr reply-msg-write-1.hdr \
	call-msg-reply-1.hdr reply-nomsg-reply-1.hdr call-nomsg-read0-1.hdr; do
	[ -s "$tmp/$want" ] || die "the capture lacks $want; $prefix-* left as it was"
done
if [ "$transport" = rs ] && [ ! -s "$tmp/reply-error-1-1.hdr" ]; then
	die "the capture lacks the server's RDMA_ERROR (reply-error-1-1.hdr); $prefix-* left as it was"
fi
for f in "$tmp"/*.hdr; do
	case "$f" in */reply-error-1-*) continue ;; esac # version 2: tshark reads only 1
	[ -s "${f%.hdr}.tshark" ] || die "no tshark dissection for $(basename "$f")"
done

dest=rust/host/tests/wire
rm -f "$dest/$prefix"-*
for f in "$tmp"/*; do mv "$f" "$dest/$prefix-$(basename "$f")"; done
log "corpus in $dest:"
ls -l "$dest"/"$prefix"-* >&2
