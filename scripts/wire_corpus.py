#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Extracts RPC-over-RDMA headers and RDMA-CM private data from a RoCEv2 capture.

Usage: wire_corpus.py CAPTURE.pcap OUT_DIR [--client IP] [--per-shape N]

Writes, for each distinct header shape (direction, procedure, which chunk
lists are present), up to N examples as OUT_DIR/<name>.hdr: the bytes of one
received message from the transport header on (as much of the message as
the first packet of the Send carries). Also writes the private data of the
CM REQ and REP as req-*.pd and rep-*.pd: the whole private data area the
RDMA-CM consumer gets (REQ: after the 36-byte RDMA-CM IP header; REP: all
196 bytes), so the decoder's search for the RFC 8797 message is exercised on
real buffers. The format is parsed here, not by a dissector. Then, for each
header, tshark's own rpcordma dissection of the same frame is written beside
it as <name>.tshark ("field value[,value...]" lines), so that the host tests
can check the decoder field by field against an independent reader.
"""

import hashlib
import os
import struct
import subprocess
import sys

ROCE_PORT = 4791
# InfiniBand BTH opcodes (RC) that start a Send; with-invalidate carries an IETH.
SEND_FIRST, SEND_ONLY, SEND_ONLY_INV = 0x00, 0x04, 0x17
UD_SEND_ONLY = 0x64
CM_CLASS = 0x07
CM_REQ, CM_REP = 0x0010, 0x0013
PROCS = {0: "msg", 1: "nomsg", 2: "msgp", 3: "done", 4: "error"}


def packets(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data, 0)[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    linktype = struct.unpack_from(endian + "I", data, 20)[0]
    if linktype != 1:
        raise SystemExit(f"link type {linktype}: expected Ethernet")
    off = 24
    while off + 16 <= len(data):
        _, _, incl, orig = struct.unpack_from(endian + "IIII", data, off)
        off += 16
        yield data[off:off + incl], incl == orig
        off += incl


def roce_payload(frame):
    """(source IP, UDP payload) of a RoCEv2 frame, or None."""
    ethertype = struct.unpack_from(">H", frame, 12)[0]
    ip = frame[14:]
    if ethertype == 0x0800:
        ihl = (ip[0] & 0x0F) * 4
        proto, src = ip[9], ".".join(str(b) for b in ip[12:16])
        l4 = ip[ihl:]
    elif ethertype == 0x86DD:
        proto, src = ip[6], ip[8:24].hex()
        l4 = ip[40:]
    else:
        return None
    if proto != 17 or len(l4) < 8 or struct.unpack_from(">H", l4, 2)[0] != ROCE_PORT:
        return None
    udp_len = struct.unpack_from(">H", l4, 4)[0]
    return src, l4[8:udp_len]


def shape(hdr):
    """A short name for the header's shape, or None if it does not parse."""
    try:
        xid, vers, credits, proc = struct.unpack_from(">IIII", hdr, 0)
        name = PROCS.get(proc, f"proc{proc}")
        # An RDMA_ERROR may answer a call of another version in that
        # version (RFC 8166 section 7 keeps its layout in every version).
        if proc == 4:
            return f"{name}-{struct.unpack_from('>I', hdr, 16)[0]}"
        if vers != 1:
            return None
        off, parts = 16, []
        reads = 0
        while struct.unpack_from(">I", hdr, off)[0] == 1:
            reads += 1
            pos = struct.unpack_from(">I", hdr, off + 4)[0]
            off += 4 + 20
        off += 4
        if reads:
            parts.append("read0" if pos == 0 else "read")
        writes = 0
        while struct.unpack_from(">I", hdr, off)[0] == 1:
            writes += 1
            n = struct.unpack_from(">I", hdr, off + 4)[0]
            off += 8 + 16 * n
        off += 4
        if writes:
            parts.append("write")
        if struct.unpack_from(">I", hdr, off)[0] == 1:
            parts.append("reply")
        return "-".join([name] + (parts or ["inline"]))
    except struct.error:
        return None


def main():
    args = sys.argv[1:]
    client, per_shape = "10.225.0.2", 2
    if "--client" in args:
        i = args.index("--client")
        client = args[i + 1]
        del args[i:i + 2]
    if "--per-shape" in args:
        i = args.index("--per-shape")
        per_shape = int(args[i + 1])
        del args[i:i + 2]
    pcap, out = args
    os.makedirs(out, exist_ok=True)
    seen, counts, written, frames = set(), {}, [], {}

    def keep(name, blob, frame_no):
        digest = hashlib.sha256(blob).hexdigest()
        if digest in seen or counts.get(name, 0) >= per_shape:
            return
        seen.add(digest)
        counts[name] = counts.get(name, 0) + 1
        fname = f"{name}-{counts[name]}"
        with open(os.path.join(out, fname), "wb") as f:
            f.write(blob)
        written.append(fname)
        frames[fname] = frame_no

    for frame_no, (frame, complete) in enumerate(packets(pcap), start=1):
        got = roce_payload(frame)
        if not got or not complete:
            continue
        src, bth = got
        if len(bth) < 16:
            continue
        opcode, flags = bth[0], bth[1]
        pad = (flags >> 4) & 3
        body = bth[12:len(bth) - 4 - (pad if opcode in (SEND_ONLY, SEND_ONLY_INV) else 0)]
        if opcode == UD_SEND_ONLY:
            mad = body[8:]
            if len(mad) < 256 or mad[1] != CM_CLASS:
                continue
            attr = struct.unpack_from(">H", mad, 16)[0]
            if attr == CM_REQ:
                keep("cm-req", bytes(mad[24 + 140 + 36:24 + 232]), frame_no)
            elif attr == CM_REP:
                keep("cm-rep", bytes(mad[24 + 36:24 + 232]), frame_no)
            continue
        if opcode == SEND_ONLY_INV:
            body = body[4:]
        elif opcode not in (SEND_FIRST, SEND_ONLY):
            continue
        name = shape(body)
        if name is None:
            continue
        direction = "call" if src == client else "reply"
        keep(f"{direction}-{name}", bytes(body), frame_no)

    # Name by kind: private data areas end in .pd, headers in .hdr.
    for fname in written:
        ext = ".pd" if fname.startswith("cm-") else ".hdr"
        os.replace(os.path.join(out, fname), os.path.join(out, fname + ext))
        print(fname + ext)
    if not written:
        raise SystemExit("nothing extracted")
    headers = [f for f in written if not f.startswith("cm-")]
    for fname, fields in dissect(pcap, {frames[f]: f for f in headers}).items():
        with open(os.path.join(out, fname + ".tshark"), "w") as f:
            f.writelines(f"{k} {v}\n" for k, v in fields)
        print(fname + ".tshark")


# tshark's rpcordma fields, in the order the .tshark files list them. Fields
# that occur once per segment or chunk are listed with every occurrence in
# wire order, comma-separated.
TSHARK_FIELDS = [
    "xid", "version", "flow_control", "msg_type", "reads_count", "writes_count",
    "reply_count", "position", "segment_count", "rdma_handle", "rdma_length",
    "rdma_offset", "errcode", "vers_low", "vers_high",
]


def dissect(pcap, by_frame):
    """{name: [(field, value)]}: tshark's reading of the frames in by_frame."""
    cmd = ["tshark", "-r", pcap, "-n", "-T", "fields", "-E", "separator=/t",
           "-E", "occurrence=a", "-E", "aggregator=,", "-e", "frame.number"]
    for f in TSHARK_FIELDS:
        cmd += ["-e", "rpcordma." + f]
    cmd += ["-Y", "frame.number in {%s}" % ",".join(str(n) for n in sorted(by_frame))]
    lines = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()
    got = {}
    for line in lines:
        cols = line.split("\t")
        name = by_frame.get(int(cols[0]))
        if name is None or not cols[1]:
            continue
        got[name] = [(f, v) for f, v in zip(TSHARK_FIELDS, cols[1:]) if v]
    # tshark dissects version 1 only: an ERR_VERS sent in another version
    # (reply-error-1-*) stays without a dissection.
    missing = sorted(n for n in set(by_frame.values()) - set(got)
                     if not n.startswith("reply-error-1-"))
    if missing:
        raise SystemExit(f"tshark did not dissect: {' '.join(missing)}")
    return got


if __name__ == "__main__":
    main()
