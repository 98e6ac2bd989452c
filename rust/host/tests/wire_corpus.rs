// SPDX-License-Identifier: GPL-2.0

//! Wire corpus: every `tests/wire/*.hdr` file is one received
//! RPC-over-RDMA message, starting at the transport header; every `*.pd`
//! file is a connection's RDMA-CM private data. Each must decode, and
//! re-encoding must give back exactly the bytes on the wire.
//!
//! Decode-then-encode identity alone cannot see a mistake made the same
//! way in both directions (say, handle and length swapped), so every
//! header is also read by a small word reader written here, and its fields
//! compared one by one with what the decoder returned.
//!
//! Captured headers also carry tshark's dissection of the same frame
//! (`<name>.tshark`), and the decoder must agree with it field by field.
//!
//! The hand-made files come from the vectors in `common/mod.rs`
//! (regenerate them with `cargo test --test wire_corpus -- --ignored`);
//! captures from guests are added beside them.

mod common;

use rpcrdma_proto::proto::header::{
    decode, encode_error, Body, DecodeLimits, Header, Message, MsgProc, RdmaError, ReadSegment,
    Segment,
};
use rpcrdma_proto::proto::private_data;
use std::fmt::Display;
use std::path::{Path, PathBuf};

fn wire_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wire")
}

/// The `*.hdr` files of the corpus, sorted by name.
fn corpus_headers() -> Vec<(String, Vec<u8>)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(wire_dir())
        .expect("tests/wire must exist")
        .map(|e| e.expect("readdir").path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "hdr"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect()
}

/// One segment's three fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seg {
    handle: u32,
    length: u32,
    offset: u64,
}

/// The fields of a transport header, from either reader.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Fields {
    xid: u32,
    vers: u32,
    credit: u32,
    proc: u32,
    /// Position and segment of each Read list entry.
    reads: Vec<(u32, Seg)>,
    writes: Vec<Vec<Seg>>,
    reply: Option<Vec<Seg>>,
    /// `rdma_err`, then `rdma_vers_low` and `rdma_vers_high` for ERR_VERS.
    err: Vec<u32>,
    /// Header length in bytes.
    len: usize,
}

/// Big-endian words off the front of a header. Indexing panics past the
/// end, which fails the test: the corpus holds only complete headers.
struct Words<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Words<'_> {
    fn next(&mut self) -> u32 {
        let w = &self.bytes[self.at..self.at + 4];
        self.at += 4;
        u32::from_be_bytes([w[0], w[1], w[2], w[3]])
    }

    // Struct fields and operands are evaluated in the order written, so
    // these read handle, length, offset high, offset low.
    fn seg(&mut self) -> Seg {
        Seg {
            handle: self.next(),
            length: self.next(),
            offset: u64::from(self.next()) << 32 | u64::from(self.next()),
        }
    }

    fn segs(&mut self) -> Vec<Seg> {
        let count = self.next();
        (0..count).map(|_| self.seg()).collect()
    }
}

/// Reads a header straight from its words as RFC 8166 section 4.2 lays
/// them out, without the proto decoder.
fn read_fields(bytes: &[u8]) -> Fields {
    let mut w = Words { bytes, at: 0 };
    let mut f = Fields {
        xid: w.next(),
        vers: w.next(),
        credit: w.next(),
        proc: w.next(),
        ..Fields::default()
    };
    match f.proc {
        // RDMA_MSG, RDMA_NOMSG: Read list, Write list, Reply chunk.
        0 | 1 => {
            while w.next() == 1 {
                f.reads.push((w.next(), w.seg()));
            }
            while w.next() == 1 {
                f.writes.push(w.segs());
            }
            if w.next() == 1 {
                f.reply = Some(w.segs());
            }
        }
        // RDMA_ERROR: ERR_VERS carries the version range.
        4 => {
            let err = w.next();
            f.err.push(err);
            if err == 1 {
                f.err.push(w.next());
                f.err.push(w.next());
            }
        }
        other => panic!("rdma_proc {other} in the corpus"),
    }
    f.len = w.at;
    f
}

fn seg_from(s: Segment) -> Seg {
    Seg {
        handle: s.handle,
        length: s.length,
        offset: s.offset,
    }
}

/// What the proto decoder returned, in the same shape.
fn decoded_fields(h: &Header<'_>, len: usize) -> Fields {
    let mut f = Fields {
        xid: h.xid,
        vers: h.vers,
        credit: h.credit,
        len,
        ..Fields::default()
    };
    match h.body {
        Body::Msg(c) | Body::NoMsg(c) => {
            f.proc = if matches!(h.body, Body::Msg(_)) { 0 } else { 1 };
            f.reads = c
                .read_list
                .iter()
                .map(|r| (r.position, seg_from(r.segment)))
                .collect();
            f.writes = c
                .write_list
                .iter()
                .map(|w| w.iter().map(seg_from).collect())
                .collect();
            f.reply = c.reply_chunk.map(|r| r.iter().map(seg_from).collect());
        }
        Body::Error(e) => {
            f.proc = 4;
            f.err = match e {
                RdmaError::Vers { low, high } => vec![1, low, high],
                RdmaError::Chunk => vec![2],
            };
        }
    }
    f
}

/// Field-by-field differences between the wire and the decoder.
#[derive(Default)]
struct Diff {
    mismatches: Vec<String>,
    segments: usize,
}

impl Diff {
    fn field(&mut self, what: impl Display, wire: impl Into<u64>, decoded: impl Into<u64>) {
        let (wire, decoded) = (wire.into(), decoded.into());
        if wire != decoded {
            self.mismatches
                .push(format!("{what}: wire {wire:#x}, decoded {decoded:#x}"));
        }
    }

    fn seg(&mut self, what: &str, wire: &Seg, decoded: &Seg) {
        self.field(format_args!("{what}.handle"), wire.handle, decoded.handle);
        self.field(format_args!("{what}.length"), wire.length, decoded.length);
        self.field(format_args!("{what}.offset"), wire.offset, decoded.offset);
        self.segments += 1;
    }

    fn segs(&mut self, what: &str, wire: &[Seg], decoded: &[Seg]) {
        self.field(
            format_args!("{what} count"),
            wire.len() as u64,
            decoded.len() as u64,
        );
        for (i, (w, d)) in wire.iter().zip(decoded).enumerate() {
            self.seg(&format!("{what}[{i}]"), w, d);
        }
    }
}

fn compare(wire: &Fields, decoded: &Fields) -> Diff {
    let mut d = Diff::default();
    d.field("xid", wire.xid, decoded.xid);
    d.field("vers", wire.vers, decoded.vers);
    d.field("credit", wire.credit, decoded.credit);
    d.field("proc", wire.proc, decoded.proc);
    d.field("header length", wire.len as u64, decoded.len as u64);
    d.field(
        "Read list entries",
        wire.reads.len() as u64,
        decoded.reads.len() as u64,
    );
    for (i, ((wp, ws), (dp, ds))) in wire.reads.iter().zip(&decoded.reads).enumerate() {
        d.field(format_args!("read[{i}].position"), *wp, *dp);
        d.seg(&format!("read[{i}]"), ws, ds);
    }
    d.field(
        "Write chunks",
        wire.writes.len() as u64,
        decoded.writes.len() as u64,
    );
    for (i, (w, c)) in wire.writes.iter().zip(&decoded.writes).enumerate() {
        d.segs(&format!("write[{i}]"), w, c);
    }
    d.field(
        "Reply chunk present",
        wire.reply.is_some(),
        decoded.reply.is_some(),
    );
    if let (Some(w), Some(c)) = (&wire.reply, &decoded.reply) {
        d.segs("reply", w, c);
    }
    d.field(
        "error words",
        wire.err.len() as u64,
        decoded.err.len() as u64,
    );
    for (i, (w, c)) in wire.err.iter().zip(&decoded.err).enumerate() {
        d.field(format_args!("error word {i}"), *w, *c);
    }
    d
}

#[test]
fn corpus_decodes_and_reencodes_exactly() {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(wire_dir())
        .expect("tests/wire must exist")
        .map(|e| e.expect("readdir").path())
        .filter(|p| p.is_file())
        .collect();
    entries.sort();
    let (mut hdrs, mut pds) = (0, 0);
    for path in &entries {
        let bytes = std::fs::read(path).unwrap();
        let name = path.display();
        match path.extension().and_then(|e| e.to_str()) {
            Some("hdr") => {
                // Captures hold Calls as well as Replies: generous limits.
                let (h, len) = decode(&bytes, &DecodeLimits::PERMISSIVE)
                    .unwrap_or_else(|e| panic!("{name}: {e:?}"));
                let mut out = vec![0u8; len];
                let n = h
                    .encode(&mut out)
                    .unwrap_or_else(|e| panic!("{name}: re-encode: {e:?}"));
                assert_eq!(n, len, "{name}");
                assert_eq!(out, bytes[..len], "{name}: re-encoded header differs");
                hdrs += 1;
            }
            Some("pd") => {
                let (off, pd) = private_data::find(&bytes)
                    .unwrap_or_else(|| panic!("{name}: no RFC 8797 message"));
                assert_eq!(
                    pd.to_bytes()[..],
                    bytes[off..off + private_data::LEN],
                    "{name}: re-encoded private data differs"
                );
                pds += 1;
            }
            _ => {}
        }
    }
    assert!(
        hdrs + pds > 0,
        "tests/wire holds no .hdr or .pd file: the corpus test would test nothing"
    );
    eprintln!("wire corpus: {hdrs} headers, {pds} private data files");
}

#[test]
fn corpus_fields_match_independent_reader() {
    let (mut reads, mut writes, mut replies, mut errors) = (0, 0, 0, 0);
    let mut segments = 0;
    for (name, bytes) in corpus_headers() {
        let wire = read_fields(&bytes);
        // Version 1, or an ERR_VERS answering another version.
        assert!(
            wire.vers == 1 || (wire.proc == 4 && wire.err.first() == Some(&1)),
            "{name}: rdma_vers {}",
            wire.vers
        );
        let (h, len) =
            decode(&bytes, &DecodeLimits::PERMISSIVE).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let diff = compare(&wire, &decoded_fields(&h, len));
        assert!(
            diff.mismatches.is_empty(),
            "{name}: decoder disagrees with the wire:\n  {}",
            diff.mismatches.join("\n  ")
        );
        segments += diff.segments;
        reads += wire.reads.len();
        writes += wire.writes.iter().map(Vec::len).sum::<usize>();
        replies += wire.reply.as_ref().map_or(0, Vec::len);
        errors += usize::from(wire.proc == 4);
    }
    eprintln!(
        "wire fields: {segments} segments compared ({reads} read, {writes} write, \
         {replies} reply), {errors} RDMA_ERROR headers"
    );
    // Otherwise the segment comparison above would check nothing.
    assert!(
        reads > 0 && writes > 0 && replies > 0 && errors > 0,
        "corpus lacks a Read, Write or Reply segment or an RDMA_ERROR"
    );
    assert_eq!(segments, reads + writes + replies);
}

/// Parses tshark's dissection of a captured header (`<name>.tshark`, one
/// "field value[,value...]" line per rpcordma field, written by
/// `scripts/wire_corpus.py`) into the same shape. tshark lists per-segment
/// fields in wire order across all chunks: Read list first, then each Write
/// chunk, then the Reply chunk; `segment_count` once per Write chunk, then
/// once for the Reply chunk.
fn tshark_fields(name: &str, text: &str, len: usize) -> Fields {
    let get = |field: &str| -> Vec<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(' '))
            .map(|v| {
                v.split(',')
                    .map(|n| {
                        let n = n.trim();
                        match n.strip_prefix("0x") {
                            Some(hex) => u64::from_str_radix(hex, 16),
                            None => n.parse(),
                        }
                        .unwrap_or_else(|e| panic!("{name}: {field} {n}: {e}"))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let one = |field: &str| -> u32 {
        match get(field)[..] {
            [v] => u32::try_from(v).unwrap_or_else(|_| panic!("{name}: {field} {v}")),
            ref other => panic!("{name}: {field}: expected one value, tshark gave {other:?}"),
        }
    };
    let mut f = Fields {
        xid: one("xid"),
        vers: one("version"),
        credit: one("flow_control"),
        proc: one("msg_type"),
        len,
        ..Fields::default()
    };
    if f.proc == 4 {
        f.err = ["errcode", "vers_low", "vers_high"]
            .iter()
            .flat_map(|k| get(k))
            .map(|v| v as u32)
            .collect();
        return f;
    }
    let (handles, lengths, offsets) = (get("rdma_handle"), get("rdma_length"), get("rdma_offset"));
    assert!(
        handles.len() == lengths.len() && lengths.len() == offsets.len(),
        "{name}: tshark gave {} handles, {} lengths, {} offsets",
        handles.len(),
        lengths.len(),
        offsets.len()
    );
    let mut segs = handles
        .iter()
        .zip(&lengths)
        .zip(&offsets)
        .map(|((&h, &l), &o)| Seg {
            handle: h as u32,
            length: l as u32,
            offset: o,
        });
    let mut take = |n: u64| -> Vec<Seg> {
        (0..n)
            .map(|_| {
                segs.next()
                    .unwrap_or_else(|| panic!("{name}: too few segments"))
            })
            .collect()
    };
    let positions = get("position");
    f.reads = positions.iter().map(|&p| (p as u32, take(1)[0])).collect();
    assert_eq!(
        positions.len() as u32,
        one("reads_count"),
        "{name}: positions vs reads_count"
    );
    let mut counts = get("segment_count").into_iter();
    for _ in 0..one("writes_count") {
        let n = counts.next().unwrap_or_else(|| panic!("{name}: no count"));
        f.writes.push(take(n));
    }
    if one("reply_count") == 1 {
        let n = counts.next().unwrap_or_else(|| panic!("{name}: no count"));
        f.reply = Some(take(n));
    }
    assert!(counts.next().is_none(), "{name}: segment counts left over");
    assert!(segs.next().is_none(), "{name}: segments left over");
    f
}

/// Each captured header (`linux-*` from the C transport, `rs-*` from this
/// one) is compared field by field with tshark's rpcordma dissection of the
/// same frame, a reader that owes nothing to this project.
#[test]
fn captured_fields_match_tshark() {
    let (mut files, mut segments) = (0, 0);
    for (name, bytes) in corpus_headers() {
        let base = name.trim_end_matches(".hdr");
        let file = Path::new(base).file_name().unwrap().to_string_lossy();
        let captured = file.starts_with("linux-") || file.starts_with("rs-");
        let Ok(text) = std::fs::read_to_string(format!("{base}.tshark")) else {
            // tshark dissects version 1 only; an ERR_VERS answering a
            // version 2 call has none.
            let other_version = bytes.get(4..8) != Some(&[0, 0, 0, 1][..]);
            assert!(
                !captured || other_version,
                "{name}: captured, but no {base}.tshark beside it"
            );
            continue;
        };
        let (h, len) =
            decode(&bytes, &DecodeLimits::PERMISSIVE).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let diff = compare(&tshark_fields(&name, &text, len), &decoded_fields(&h, len));
        assert!(
            diff.mismatches.is_empty(),
            "{name}: decoder disagrees with tshark:\n  {}",
            diff.mismatches.join("\n  ")
        );
        files += 1;
        segments += diff.segments;
    }
    eprintln!("tshark cross-check: {files} captured headers, {segments} segments");
    assert!(
        files > 0 && segments > 0,
        "no captured header with a tshark dissection: the cross-check checked nothing"
    );
}

/// The reader above agrees with a vector worked out by hand.
#[test]
fn independent_reader_on_hand_worked_vectors() {
    let f = read_fields(&common::msg_write_chunk_reply());
    assert_eq!((f.xid, f.vers, f.credit, f.proc), (0xbeef, 1, 32, 0));
    assert!(f.reads.is_empty() && f.reply.is_none());
    let seg = |handle, length, offset| Seg {
        handle,
        length,
        offset,
    };
    assert_eq!(
        f.writes,
        vec![vec![
            seg(0xabcd, 4096, 0x1_0000_2000),
            seg(0xabce, 3584, 0x1_0000_3000)
        ]]
    );
    assert_eq!(f.len, common::MSG_WRITE_CHUNK_REPLY_HDR_LEN);

    let f = read_fields(&common::call_long());
    assert_eq!(f.proc, 1);
    assert_eq!(f.reads, vec![(0, seg(0x201, 5120, 0xa0_0000))]);
    assert_eq!(f.reply, Some(vec![seg(0x202, 8192, 0xb0_0000)]));

    let f = read_fields(&common::error_vers());
    assert_eq!((f.proc, f.err.as_slice()), (4, &[1, 1, 1][..]));
}

/// `f` with handle and length swapped in every segment: what a decoder with
/// that mistake would return.
fn swap_handle_length(f: &Fields) -> Fields {
    let swap = |s: &Seg| Seg {
        handle: s.length,
        length: s.handle,
        offset: s.offset,
    };
    let swap_all = |v: &Vec<Seg>| v.iter().map(swap).collect::<Vec<_>>();
    Fields {
        reads: f.reads.iter().map(|(p, s)| (*p, swap(s))).collect(),
        writes: f.writes.iter().map(swap_all).collect(),
        reply: f.reply.as_ref().map(swap_all),
        ..f.clone()
    }
}

/// Encodes `f` with the proto encoder.
fn encode_fields(f: &Fields) -> Vec<u8> {
    let seg = |s: &Seg| Segment {
        handle: s.handle,
        length: s.length,
        offset: s.offset,
    };
    let mut out = vec![0u8; 4096];
    let n = match f.proc {
        0 | 1 => {
            let reads: Vec<ReadSegment> = f
                .reads
                .iter()
                .map(|(position, s)| ReadSegment {
                    position: *position,
                    segment: seg(s),
                })
                .collect();
            let writes: Vec<Vec<Segment>> = f
                .writes
                .iter()
                .map(|w| w.iter().map(seg).collect())
                .collect();
            let wrefs: Vec<&[Segment]> = writes.iter().map(Vec::as_slice).collect();
            let reply: Option<Vec<Segment>> = f.reply.as_ref().map(|r| r.iter().map(seg).collect());
            Message {
                xid: f.xid,
                credit: f.credit,
                proc: if f.proc == 0 {
                    MsgProc::Msg
                } else {
                    MsgProc::NoMsg
                },
                read_list: &reads,
                write_list: &wrefs,
                reply_chunk: reply.as_deref(),
            }
            .encode(&mut out)
            .unwrap()
        }
        _ => {
            let err = match f.err[..] {
                [1, low, high] => RdmaError::Vers { low, high },
                _ => RdmaError::Chunk,
            };
            encode_error(&mut out, f.xid, f.credit, err).unwrap()
        }
    };
    out.truncate(n);
    out
}

/// A decoder and an encoder that both swapped handle and length would pass
/// `corpus_decodes_and_reencodes_exactly`; the field check fails them.
#[test]
fn field_check_catches_swapped_handle_and_length() {
    let (mut reads, mut writes, mut replies) = (false, false, false);
    for (name, bytes) in corpus_headers() {
        let wire = read_fields(&bytes);
        let (h, len) = decode(&bytes, &DecodeLimits::PERMISSIVE).unwrap();
        let decoded = decoded_fields(&h, len);
        let swapped = swap_handle_length(&decoded);
        if swapped == decoded {
            // No segment, or handle equal to length in every one.
            continue;
        }
        // The same mix-up in the encoder writes the original bytes back:
        // identity holds.
        assert_eq!(
            encode_fields(&swap_handle_length(&swapped)),
            bytes[..len],
            "{name}"
        );
        let diff = compare(&wire, &swapped);
        let names = |field: &str| diff.mismatches.iter().any(|m| m.contains(field));
        assert!(
            names(".handle") && names(".length"),
            "{name}: swapped handle and length not caught: {:?}",
            diff.mismatches
        );
        assert!(
            !names(".offset") && !names("xid"),
            "{name}: {:?}",
            diff.mismatches
        );
        let caught_in = |list: &str| {
            diff.mismatches
                .iter()
                .any(|m| m.starts_with(list) && m.contains(".handle"))
        };
        reads |= caught_in("read[");
        writes |= caught_in("write[");
        replies |= caught_in("reply[");
    }
    assert!(
        reads && writes && replies,
        "the swap was not tried in every kind of list"
    );
}

/// The committed fuzz seeds and hand-made corpus files are the vectors of
/// `common/mod.rs`, byte for byte.
#[test]
fn committed_seeds_match_vectors() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let check = |path: PathBuf, bytes: &[u8]| {
        let on_disk = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run the ignored writer)", path.display()));
        assert_eq!(on_disk, bytes, "{} is stale", path.display());
    };
    for (name, bytes) in common::header_vectors() {
        check(wire_dir().join(name), &bytes);
        check(root.join("fuzz/corpus/header_decode").join(name), &bytes);
    }
    for (name, bytes) in common::pd_vectors() {
        check(wire_dir().join(name), &bytes);
        check(
            root.join("fuzz/corpus/private_data_decode").join(name),
            &bytes,
        );
    }
    for (name, bytes) in common::chunk_plan_vectors() {
        check(root.join("fuzz/corpus/chunk_plan").join(name), &bytes);
    }
}

/// Writes the hand-made vectors to `tests/wire/` and the fuzz seed corpora.
#[test]
#[ignore = "regenerates committed files"]
fn write_hand_made_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let seeds = root.join("fuzz/corpus");
    std::fs::create_dir_all(wire_dir()).unwrap();
    for (name, bytes) in common::header_vectors() {
        std::fs::write(wire_dir().join(name), &bytes).unwrap();
        let dir = seeds.join("header_decode");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), &bytes).unwrap();
    }
    for (name, bytes) in common::pd_vectors() {
        std::fs::write(wire_dir().join(name), &bytes).unwrap();
        let dir = seeds.join("private_data_decode");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), &bytes).unwrap();
    }
    let dir = seeds.join("chunk_plan");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in common::chunk_plan_vectors() {
        std::fs::write(dir.join(name), &bytes).unwrap();
    }
}
