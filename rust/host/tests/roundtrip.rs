// SPDX-License-Identifier: GPL-2.0

//! Property tests of the transport header codec (RFC 8166, section 4).
//!
//! Every case starts from a valid header generated field by field: the
//! encoder must write exactly the words built here and the decoder must
//! give back exactly the generated fields. `valid_then_mutated` then
//! damages the header (bits flipped, cut short, discriminators, counts,
//! positions and segment words rewritten, bytes appended) and compares the
//! decoder with a word-by-word reference decoder written here: the same
//! header or the same error, and never a panic. Each test counts the cases
//! that reached the paths it is about and fails if too few did, so it
//! cannot quietly test nothing.

mod common;

use common::Reach;
use proptest::prelude::*;
use proptest::sample::Index;
use rpcrdma_proto::proto::header::*;
use std::cell::RefCell;
use std::collections::BTreeMap;

fn segment() -> impl Strategy<Value = Segment> {
    (any::<u32>(), any::<u32>(), any::<u64>()).prop_map(|(handle, length, offset)| Segment {
        handle,
        length,
        // Keep offset + length from wrapping: the codec refuses that.
        offset: offset.min(u64::MAX - u64::from(length)),
    })
}

fn read_segment() -> impl Strategy<Value = ReadSegment> {
    // Mostly a few small positions, so that neighbours often share one and
    // form a Read chunk of several segments.
    let position = prop_oneof![
        2 => (0u32..3).prop_map(|k| k * 4),
        1 => any::<u32>().prop_map(|p| p & !3),
    ];
    (position, segment()).prop_map(|(position, segment)| ReadSegment { position, segment })
}

/// A header with owned lists, to generate and to compare.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Owned {
    Chunked {
        xid: u32,
        credit: u32,
        proc: MsgProc,
        reads: Vec<ReadSegment>,
        writes: Vec<Vec<Segment>>,
        reply: Option<Vec<Segment>>,
    },
    Error {
        xid: u32,
        credit: u32,
        err: RdmaError,
    },
}

fn owned() -> impl Strategy<Value = Owned> {
    let chunked = (
        any::<u32>(),
        any::<u32>(),
        any::<bool>(),
        prop::collection::vec(read_segment(), 0..8),
        prop::collection::vec(prop::collection::vec(segment(), 0..6), 0..4),
        prop::option::of(prop::collection::vec(segment(), 0..6)),
    )
        .prop_map(
            |(xid, credit, nomsg, reads, writes, reply)| Owned::Chunked {
                xid,
                credit,
                proc: if nomsg { MsgProc::NoMsg } else { MsgProc::Msg },
                reads,
                writes,
                reply,
            },
        );
    let error = (
        any::<u32>(),
        any::<u32>(),
        prop_oneof![
            Just(RdmaError::Chunk),
            (any::<u32>(), any::<u32>()).prop_map(|(low, high)| RdmaError::Vers { low, high }),
        ],
    )
        .prop_map(|(xid, credit, err)| Owned::Error { xid, credit, err });
    prop_oneof![4 => chunked, 1 => error]
}

const L: DecodeLimits = DecodeLimits::PERMISSIVE;

const UNLIMITED: DecodeLimits = DecodeLimits {
    max_read_segments: u32::MAX,
    max_write_chunks: u32::MAX,
    max_segments_per_chunk: u32::MAX,
    max_reply_segments: u32::MAX,
};

fn encode_owned(o: &Owned) -> Vec<u8> {
    let mut out = vec![0u8; 4096];
    let n = match o {
        Owned::Chunked {
            xid,
            credit,
            proc,
            reads,
            writes,
            reply,
        } => {
            let wrefs: Vec<&[Segment]> = writes.iter().map(|w| w.as_slice()).collect();
            Message {
                xid: *xid,
                credit: *credit,
                proc: *proc,
                read_list: reads,
                write_list: &wrefs,
                reply_chunk: reply.as_deref(),
            }
            .encode(&mut out)
            .unwrap()
        }
        Owned::Error { xid, credit, err } => encode_error(&mut out, *xid, *credit, *err).unwrap(),
    };
    out.truncate(n);
    out
}

/// What the decoder returned, as owned lists.
fn owned_from(h: &Header<'_>) -> Owned {
    let (proc, c) = match h.body {
        Body::Error(err) => {
            return Owned::Error {
                xid: h.xid,
                credit: h.credit,
                err,
            }
        }
        Body::Msg(c) => (MsgProc::Msg, c),
        Body::NoMsg(c) => (MsgProc::NoMsg, c),
    };
    Owned::Chunked {
        xid: h.xid,
        credit: h.credit,
        proc,
        reads: c.read_list.iter().collect(),
        writes: c.write_list.iter().map(|w| w.iter().collect()).collect(),
        reply: c.reply_chunk.map(|r| r.iter().collect()),
    }
}

/// Where the fields a mutation aims at sit in a built header, as word
/// indices.
#[derive(Debug, Default)]
struct Layout {
    /// List discriminators and terminators, and the Reply chunk's.
    discriminators: Vec<usize>,
    /// Segment counts of the Write chunks and the Reply chunk.
    counts: Vec<usize>,
    /// Read segment positions.
    positions: Vec<usize>,
    /// Each segment's handle word; length, offset high and low follow.
    segments: Vec<usize>,
    /// `rdma_err` of an RDMA_ERROR header.
    err_code: Option<usize>,
}

#[derive(Default)]
struct Builder {
    words: Vec<u32>,
    layout: Layout,
}

impl Builder {
    fn put(&mut self, w: u32) -> usize {
        self.words.push(w);
        self.words.len() - 1
    }

    fn flag(&mut self, present: bool) {
        let at = self.put(u32::from(present));
        self.layout.discriminators.push(at);
    }

    fn segment(&mut self, s: &Segment) {
        let at = self.put(s.handle);
        self.layout.segments.push(at);
        self.put(s.length);
        self.put((s.offset >> 32) as u32);
        self.put(s.offset as u32);
    }

    fn array(&mut self, segs: &[Segment]) {
        let at = self.put(u32::try_from(segs.len()).unwrap());
        self.layout.counts.push(at);
        for s in segs {
            self.segment(s);
        }
    }
}

/// Writes `o` one XDR word at a time from the layout in RFC 8166,
/// section 4.2, without the codec under test; also says where each field
/// went.
fn build(o: &Owned) -> (Vec<u8>, Layout) {
    let mut b = Builder::default();
    match o {
        Owned::Chunked {
            xid,
            credit,
            proc,
            reads,
            writes,
            reply,
        } => {
            b.put(*xid);
            b.put(1);
            b.put(*credit);
            b.put(match proc {
                MsgProc::Msg => 0,
                MsgProc::NoMsg => 1,
            });
            for r in reads {
                b.flag(true);
                let at = b.put(r.position);
                b.layout.positions.push(at);
                b.segment(&r.segment);
            }
            b.flag(false);
            for w in writes {
                b.flag(true);
                b.array(w);
            }
            b.flag(false);
            match reply {
                Some(r) => {
                    b.flag(true);
                    b.array(r);
                }
                None => b.flag(false),
            }
        }
        Owned::Error { xid, credit, err } => {
            b.put(*xid);
            b.put(1);
            b.put(*credit);
            b.put(4);
            let at = match err {
                RdmaError::Vers { low, high } => {
                    let at = b.put(1);
                    b.put(*low);
                    b.put(*high);
                    at
                }
                RdmaError::Chunk => b.put(2),
            };
            b.layout.err_code = Some(at);
        }
    }
    let bytes = b.words.iter().flat_map(|w| w.to_be_bytes()).collect();
    (bytes, b.layout)
}

/// Reads big-endian words off a byte slice for the reference decoder.
struct Words<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Words<'_> {
    fn word(&mut self) -> Result<u32, DecodeError> {
        let w = self
            .buf
            .get(self.at..self.at + 4)
            .ok_or(DecodeError::Truncated)?;
        self.at += 4;
        Ok(u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
    }

    fn flag(&mut self) -> Result<bool, DecodeError> {
        match self.word()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(DecodeError::BadDiscriminator(other)),
        }
    }

    fn segment(&mut self) -> Result<Segment, DecodeError> {
        let handle = self.word()?;
        let length = self.word()?;
        let offset = u64::from(self.word()?) << 32 | u64::from(self.word()?);
        if offset.checked_add(u64::from(length)).is_none() {
            return Err(DecodeError::SegmentOverflow);
        }
        Ok(Segment {
            handle,
            length,
            offset,
        })
    }

    fn array(&mut self, max: u32, too_many: DecodeError) -> Result<Vec<Segment>, DecodeError> {
        let count = self.word()?;
        if count > max {
            return Err(too_many);
        }
        (0..count).map(|_| self.segment()).collect()
    }
}

/// A second decoder, straight from RFC 8166 section 4.2 and the checks
/// the proto decoder documents (XDR bools are 0 or 1, positions are
/// multiples of four, segments do not wrap, limits, no bytes after an
/// RDMA_NOMSG or RDMA_ERROR header), in wire order so errors come in the
/// same order.
fn reference_decode(buf: &[u8], l: &DecodeLimits) -> Result<(Owned, usize), DecodeError> {
    let mut r = Words { buf, at: 0 };
    let xid = r.word()?;
    let vers = r.word()?;
    let credit = r.word()?;
    let proc = r.word()?;
    if vers != 1 {
        // RFC 8166 section 7: ERR_VERS decodes in any version.
        if proc == 4 && r.word().ok() == Some(1) {
            let (low, high) = (r.word()?, r.word()?);
            if r.at != buf.len() {
                return Err(DecodeError::TrailingBytes);
            }
            let err = RdmaError::Vers { low, high };
            return Ok((Owned::Error { xid, credit, err }, r.at));
        }
        return Err(DecodeError::BadVersion(vers));
    }
    let o = match proc {
        0 | 1 => {
            let mut reads = Vec::new();
            while r.flag()? {
                if reads.len() >= l.max_read_segments as usize {
                    return Err(DecodeError::TooManyReadSegments);
                }
                let position = r.word()?;
                if position % 4 != 0 {
                    return Err(DecodeError::MisalignedPosition(position));
                }
                let segment = r.segment()?;
                reads.push(ReadSegment { position, segment });
            }
            let mut writes = Vec::new();
            while r.flag()? {
                if writes.len() >= l.max_write_chunks as usize {
                    return Err(DecodeError::TooManyWriteChunks);
                }
                writes.push(r.array(l.max_segments_per_chunk, DecodeError::TooManySegments)?);
            }
            let reply = if r.flag()? {
                Some(r.array(l.max_reply_segments, DecodeError::TooManyReplySegments)?)
            } else {
                None
            };
            Owned::Chunked {
                xid,
                credit,
                proc: if proc == 0 {
                    MsgProc::Msg
                } else {
                    MsgProc::NoMsg
                },
                reads,
                writes,
                reply,
            }
        }
        2 => return Err(DecodeError::MsgpNotSupported),
        3 => return Err(DecodeError::DoneNotSupported),
        4 => {
            let err = match r.word()? {
                1 => RdmaError::Vers {
                    low: r.word()?,
                    high: r.word()?,
                },
                2 => RdmaError::Chunk,
                other => return Err(DecodeError::UnknownErrorCode(other)),
            };
            Owned::Error { xid, credit, err }
        }
        other => return Err(DecodeError::UnknownProc(other)),
    };
    if proc != 0 && r.at != buf.len() {
        return Err(DecodeError::TrailingBytes);
    }
    Ok((o, r.at))
}

/// [`Header::classify_reply`] worked out from the owned lists.
fn reference_classify(o: &Owned) -> Result<ReplyKind, ReplyError> {
    let (proc, reads, writes, reply) = match o {
        Owned::Error { err, .. } => return Ok(ReplyKind::Error(*err)),
        Owned::Chunked {
            proc,
            reads,
            writes,
            reply,
            ..
        } => (proc, reads, writes, reply),
    };
    let sum = |segs: &[Segment]| segs.iter().map(|s| u64::from(s.length)).sum::<u64>();
    if !reads.is_empty() {
        return Err(ReplyError::ReadListPresent);
    }
    let written: u64 = writes.iter().map(|w| sum(w)).sum();
    let reply_len = reply.as_deref().map_or(0, sum);
    match proc {
        MsgProc::Msg if reply_len != 0 => Err(ReplyError::ReplyChunkUsedWithMsg),
        MsgProc::Msg => Ok(ReplyKind::Inline {
            write_chunk_len: written,
        }),
        MsgProc::NoMsg if written != 0 => Err(ReplyError::WriteListUsedWithNoMsg),
        MsgProc::NoMsg if reply_len == 0 => Err(ReplyError::EmptyReplyChunk),
        MsgProc::NoMsg => Ok(ReplyKind::Long {
            reply_chunk_len: reply_len,
        }),
    }
}

/// Checks that a header the decoder accepted agrees with the bytes it came
/// from in every view the transport uses.
fn check_accepted(
    h: &Header<'_>,
    len: usize,
    buf: &[u8],
    l: &DecodeLimits,
) -> Result<(), TestCaseError> {
    prop_assert!(
        len <= buf.len() && len.is_multiple_of(4),
        "len {len} of {}",
        buf.len()
    );
    if !matches!(h.body, Body::Msg(_)) {
        prop_assert_eq!(len, buf.len());
    }
    // Decode then encode gives back the bytes read.
    let mut out = vec![0u8; len];
    prop_assert_eq!(h.encode(&mut out), Ok(len));
    prop_assert_eq!(&out[..], &buf[..len]);
    // Nothing past the header matters: the RPC message can be anything.
    prop_assert_eq!(decode(&buf[..len], l), Ok((*h, len)));

    let o = owned_from(h);
    prop_assert_eq!(h.classify_reply(), reference_classify(&o));
    let Some(c) = h.chunk_lists() else {
        return Ok(());
    };
    let Owned::Chunked {
        reads,
        writes,
        reply,
        ..
    } = &o
    else {
        unreachable!()
    };
    prop_assert_eq!(c.read_list.len(), reads.len());
    prop_assert!(reads.len() <= l.max_read_segments as usize);
    // Read chunks are the maximal runs of equal positions, in order.
    let mut joined = Vec::new();
    let mut last = None;
    for ch in c.read_list.chunks() {
        prop_assert!(!ch.is_empty());
        prop_assert!(last != Some(ch.position()), "runs not maximal");
        last = Some(ch.position());
        let segs: Vec<ReadSegment> = ch.segments().collect();
        prop_assert_eq!(segs.len(), ch.len());
        prop_assert!(segs.iter().all(|s| s.position == ch.position()));
        let total: u64 = segs.iter().map(|s| u64::from(s.segment.length)).sum();
        prop_assert_eq!(ch.total_length(), total);
        joined.extend(segs);
    }
    prop_assert_eq!(&joined, reads);
    prop_assert_eq!(c.write_list.len(), writes.len());
    prop_assert!(writes.len() <= l.max_write_chunks as usize);
    for (w, segs) in c.write_list.iter().zip(writes) {
        prop_assert_eq!(w.len(), segs.len());
        prop_assert!(segs.len() <= l.max_segments_per_chunk as usize);
        let total: u64 = segs.iter().map(|s| u64::from(s.length)).sum();
        prop_assert_eq!(w.total_length(), total);
    }
    if let (Some(r), Some(segs)) = (c.reply_chunk, reply) {
        prop_assert_eq!(r.len(), segs.len());
        prop_assert!(segs.len() <= l.max_reply_segments as usize);
        let total: u64 = segs.iter().map(|s| u64::from(s.length)).sum();
        prop_assert_eq!(r.total_length(), total);
    }
    Ok(())
}

#[derive(Clone, Debug)]
enum Mutation {
    /// Flip one bit anywhere in the message.
    FlipBit(Index, u8),
    /// Cut the message short anywhere.
    Truncate(Index),
    /// Rewrite a list discriminator or terminator.
    Discriminator(Index, u32),
    /// Add to a segment count, wrapping.
    Count(Index, u32),
    /// Rewrite a Read position.
    Position(Index, u32),
    /// Move a segment's offset so that offset + length is `u64::MAX + k`:
    /// 0 still fits, 1 and 2 wrap.
    SegmentEnd(Index, u64),
    /// Rewrite a segment word: handle, length, offset high or low.
    SegmentWord(Index, Index, u32),
    Version(u32),
    Proc(u32),
    ErrorCode(u32),
    /// Bytes after the header: more RPC message for RDMA_MSG, junk
    /// otherwise.
    Append(Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    use Mutation::*;
    // Weighted towards changes that can still decode, so that plenty of
    // damaged headers are accepted and compared field by field.
    prop_oneof![
        3 => (any::<Index>(), 0u8..8).prop_map(|(i, b)| FlipBit(i, b)),
        1 => any::<Index>().prop_map(Truncate),
        1 => (any::<Index>(), prop_oneof![3 => 0u32..4, 1 => any::<u32>()])
            .prop_map(|(i, v)| Discriminator(i, v)),
        1 => (
            any::<Index>(),
            prop_oneof![Just(1u32), Just(u32::MAX), Just(64), any::<u32>()]
        )
            .prop_map(|(i, d)| Count(i, d)),
        1 => (any::<Index>(), prop_oneof![1u32..4, any::<u32>()]).prop_map(|(i, v)| Position(i, v)),
        1 => (any::<Index>(), 0u64..3).prop_map(|(i, k)| SegmentEnd(i, k)),
        4 => (any::<Index>(), any::<Index>(), any::<u32>())
            .prop_map(|(i, j, v)| SegmentWord(i, j, v)),
        1 => prop_oneof![Just(0u32), Just(2), any::<u32>()].prop_map(Version),
        1 => prop_oneof![0u32..6, any::<u32>()].prop_map(Proc),
        1 => prop_oneof![0u32..4, any::<u32>()].prop_map(ErrorCode),
        1 => prop::collection::vec(any::<u8>(), 1..8).prop_map(Append),
    ]
}

fn word_at(buf: &[u8], word: usize) -> Option<u32> {
    let w = buf.get(word * 4..word * 4 + 4)?;
    Some(u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
}

/// Sets a word if the (possibly cut) message still has it.
fn set_word(buf: &mut [u8], word: usize, v: u32) {
    if let Some(w) = buf.get_mut(word * 4..word * 4 + 4) {
        w.copy_from_slice(&v.to_be_bytes());
    }
}

fn pick(words: &[usize], i: &Index) -> Option<usize> {
    (!words.is_empty()).then(|| *i.get(words))
}

fn apply(m: &Mutation, buf: &mut Vec<u8>, lay: &Layout) {
    match m {
        Mutation::FlipBit(i, bit) => {
            if !buf.is_empty() {
                let at = i.index(buf.len());
                buf[at] ^= 1 << bit;
            }
        }
        Mutation::Truncate(i) => buf.truncate(i.index(buf.len() + 1)),
        Mutation::Discriminator(i, v) => {
            if let Some(w) = pick(&lay.discriminators, i) {
                set_word(buf, w, *v);
            }
        }
        Mutation::Count(i, d) => {
            if let Some(w) = pick(&lay.counts, i) {
                if let Some(count) = word_at(buf, w) {
                    set_word(buf, w, count.wrapping_add(*d));
                }
            }
        }
        Mutation::Position(i, v) => {
            if let Some(w) = pick(&lay.positions, i) {
                set_word(buf, w, *v);
            }
        }
        Mutation::SegmentEnd(i, k) => {
            if let Some(w) = pick(&lay.segments, i) {
                if let Some(length) = word_at(buf, w + 1) {
                    let offset = (u64::MAX - u64::from(length)).wrapping_add(*k);
                    set_word(buf, w + 2, (offset >> 32) as u32);
                    set_word(buf, w + 3, offset as u32);
                }
            }
        }
        Mutation::SegmentWord(i, j, v) => {
            if let Some(w) = pick(&lay.segments, i) {
                set_word(buf, w + j.index(4), *v);
            }
        }
        Mutation::Version(v) => set_word(buf, 1, *v),
        Mutation::Proc(v) => set_word(buf, 3, *v),
        Mutation::ErrorCode(v) => {
            if let Some(w) = lay.err_code {
                set_word(buf, w, *v);
            }
        }
        Mutation::Append(bytes) => buf.extend_from_slice(bytes),
    }
}

fn limits() -> impl Strategy<Value = DecodeLimits> {
    prop_oneof![
        3 => Just(DecodeLimits::PERMISSIVE),
        1 => Just(DecodeLimits::REPLY),
        1 => Just(UNLIMITED),
        1 => (0u32..4, 0u32..4, 0u32..4, 0u32..4).prop_map(|(r, w, s, p)| DecodeLimits {
            max_read_segments: r,
            max_write_chunks: w,
            max_segments_per_chunk: s,
            max_reply_segments: p,
        }),
    ]
}

/// Every [`DecodeError`] variant, by name: the mutations must provoke each.
const ALL_ERRORS: [&str; 14] = [
    "Truncated",
    "BadVersion",
    "UnknownProc",
    "MsgpNotSupported",
    "DoneNotSupported",
    "BadDiscriminator",
    "TooManyReadSegments",
    "TooManyWriteChunks",
    "TooManySegments",
    "TooManyReplySegments",
    "SegmentOverflow",
    "MisalignedPosition",
    "TrailingBytes",
    "UnknownErrorCode",
];

fn error_name(e: DecodeError) -> String {
    let name = format!("{e:?}");
    name.split('(').next().unwrap_or_default().to_string()
}

#[test]
fn encode_then_decode() {
    let reach = Reach::new("encode_then_decode");
    proptest!(ProptestConfig::with_cases(2000), |(
        o in owned(),
        payload in prop::collection::vec(any::<u8>(), 0..16),
    )| {
        reach.case();
        let (built, _) = build(&o);
        let n = built.len();
        if let Owned::Chunked { xid, credit, proc, reads, writes, reply } = &o {
            let wrefs: Vec<&[Segment]> = writes.iter().map(|w| w.as_slice()).collect();
            let m = Message {
                xid: *xid,
                credit: *credit,
                proc: *proc,
                read_list: reads,
                write_list: &wrefs,
                reply_chunk: reply.as_deref(),
            };
            prop_assert_eq!(m.encoded_len(), Some(n));
            if !reads.is_empty() {
                reach.hit("Read list");
            }
            if reads.windows(2).any(|w| w[0].position == w[1].position) {
                reach.hit("Read chunk of several segments");
            }
            if !writes.is_empty() {
                reach.hit("Write list");
            }
            if reply.is_some() {
                reach.hit("Reply chunk");
            }
        } else {
            reach.hit("RDMA_ERROR");
        }
        // The encoder writes the words built field by field.
        prop_assert_eq!(&encode_owned(&o), &built, "encoder differs from the field-by-field build");
        // Only RDMA_MSG may carry an RPC message after the header.
        let mut wire = built.clone();
        if matches!(o, Owned::Chunked { proc: MsgProc::Msg, .. }) {
            wire.extend_from_slice(&payload);
        }
        let (h, len) = decode(&wire, &L).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        prop_assert_eq!(len, n);
        prop_assert_eq!(&owned_from(&h), &o);
        check_accepted(&h, len, &wire, &L)?;
        reach.hit("decoded as generated");
    });
    reach.report();
    reach.require("decoded as generated", 100);
    for shape in ["Read list", "Write list", "Reply chunk"] {
        reach.require(shape, 25);
    }
    reach.require("Read chunk of several segments", 15);
    reach.require("RDMA_ERROR", 5);
}

#[test]
fn decode_then_encode() {
    let reach = Reach::new("decode_then_encode");
    proptest!(ProptestConfig::with_cases(2000), |(
        o in owned(),
        mutations in prop::collection::vec(
            (any::<Index>(), prop_oneof![3 => 0u32..3, 1 => any::<u32>(), 1 => 0u32..64]),
            0..3),
        cut in any::<Index>(),
        do_cut in prop::bool::weighted(0.2),
    )| {
        reach.case();
        // Start from a valid header and damage a few words, or cut it
        // short: near-valid input, much of which still decodes.
        let whole = encode_owned(&o);
        let mut buf = whole.clone();
        let words = buf.len() / 4;
        let mutations_empty = mutations.is_empty();
        for (i, v) in mutations {
            let i = i.index(words);
            buf[i * 4..i * 4 + 4].copy_from_slice(&v.to_be_bytes());
        }
        if do_cut {
            buf.truncate(cut.index(buf.len() + 1));
        }
        match decode(&buf, &L) {
            Ok((h, len)) => {
                let mut out = vec![0u8; len];
                let n = h.encode(&mut out).unwrap();
                prop_assert_eq!(n, len);
                prop_assert_eq!(&out[..], &buf[..len]);
                reach.hit("decoded");
                if buf != whole {
                    reach.hit("decoded although damaged");
                }
            }
            Err(e) => {
                // Undamaged input decodes; cut short, it is only truncated.
                prop_assert!(!mutations_empty || (do_cut && buf.len() < whole.len()));
                if mutations_empty {
                    prop_assert_eq!(e, DecodeError::Truncated);
                }
                reach.hit("refused");
            }
        }
    });
    reach.report();
    reach.require("decoded", 30);
    reach.require("decoded although damaged", 10);
    reach.require("refused", 20);
}

#[test]
fn valid_then_mutated() {
    let reach = Reach::new("valid_then_mutated");
    let errors = RefCell::new(BTreeMap::<String, u64>::new());
    proptest!(ProptestConfig::with_cases(3000), |(
        o in owned(),
        payload in prop::collection::vec(any::<u8>(), 0..16),
        mutations in prop::collection::vec(mutation(), 1..3),
        limits in limits(),
    )| {
        reach.case();
        // Valid: the decoder and the reference both give back exactly
        // what was generated.
        let (built, layout) = build(&o);
        prop_assert_eq!(&encode_owned(&o), &built, "encoder differs from the field-by-field build");
        let mut buf = built.clone();
        if matches!(o, Owned::Chunked { proc: MsgProc::Msg, .. }) {
            buf.extend_from_slice(&payload);
        }
        let (h, len) = decode(&buf, &L)
            .map_err(|e| TestCaseError::fail(format!("valid header refused: {e:?}")))?;
        prop_assert_eq!(len, built.len());
        prop_assert_eq!(&owned_from(&h), &o);
        prop_assert_eq!(reference_decode(&buf, &L), Ok((o.clone(), len)));
        reach.hit("valid header decoded as generated");

        // Damaged: the same header as the reference reads from the bytes,
        // or the same error.
        let valid = buf.clone();
        for m in &mutations {
            apply(m, &mut buf, &layout);
        }
        if buf != valid {
            reach.hit("bytes changed");
        }
        let want = reference_decode(&buf, &limits);
        match decode(&buf, &limits) {
            Ok((h, len)) => {
                let got = owned_from(&h);
                prop_assert_eq!(Ok((got.clone(), len)), want);
                check_accepted(&h, len, &buf, &limits)?;
                reach.hit("damaged: accepted");
                if got != o {
                    reach.hit("damaged: accepted with other fields");
                }
            }
            Err(e) => {
                prop_assert_eq!(Err(e), want);
                reach.hit("damaged: refused");
                *errors.borrow_mut().entry(error_name(e)).or_default() += 1;
            }
        }
    });
    reach.report();
    reach.require("valid header decoded as generated", 100);
    reach.require("bytes changed", 70);
    reach.require("damaged: accepted", 15);
    reach.require("damaged: accepted with other fields", 8);
    reach.require("damaged: refused", 30);
    let errors = errors.into_inner();
    eprintln!("errors seen: {errors:?}");
    // The rarest variants come up about 20 times in 3000 cases; skip this
    // when PROPTEST_CASES asks for fewer.
    if reach.cases() >= 3000 {
        let missing: Vec<&str> = ALL_ERRORS
            .into_iter()
            .filter(|e| !errors.contains_key(*e))
            .collect();
        assert!(
            missing.is_empty(),
            "no damaged header provoked {missing:?}\n{reach}"
        );
    }
}

/// Replies of the shapes [`decode_common_reply`] takes, mostly: an
/// RDMA_MSG with no chunk or one Write chunk, an RDMA_NOMSG with a Reply
/// chunk; now and then one with a Read list, a second Write chunk or both
/// chunks, which it must leave to [`decode`].
fn common_reply() -> impl Strategy<Value = Owned> {
    let segs = || prop::collection::vec(segment(), 0..19);
    prop_oneof![
        3 => (any::<u32>(), any::<u32>()).prop_map(|(xid, credit)| Owned::Chunked {
            xid, credit, proc: MsgProc::Msg, reads: vec![], writes: vec![], reply: None,
        }),
        3 => (any::<u32>(), any::<u32>(), segs()).prop_map(|(xid, credit, w)| Owned::Chunked {
            xid, credit, proc: MsgProc::Msg, reads: vec![], writes: vec![w], reply: None,
        }),
        3 => (any::<u32>(), any::<u32>(), segs()).prop_map(|(xid, credit, r)| Owned::Chunked {
            xid, credit, proc: MsgProc::NoMsg, reads: vec![], writes: vec![], reply: Some(r),
        }),
        1 => owned(),
    ]
}

#[test]
fn common_reply_as_decode() {
    let reach = Reach::new("common_reply_as_decode");
    proptest!(ProptestConfig::with_cases(4000), |(
        o in common_reply(),
        payload in prop::collection::vec(any::<u8>(), 0..16),
        mutations in prop::collection::vec(mutation(), 0..3),
        limits in prop_oneof![2 => Just(DecodeLimits::REPLY), 1 => limits()],
    )| {
        reach.case();
        let (built, layout) = build(&o);
        let mut buf = built;
        if matches!(o, Owned::Chunked { proc: MsgProc::Msg, .. }) {
            buf.extend_from_slice(&payload);
        }
        for m in &mutations {
            apply(m, &mut buf, &layout);
        }
        // Where the fast path decodes, it is the general decoder, header
        // and length; where it does not, the general one decides.
        let general = decode(&buf, &limits);
        match decode_common_reply(&buf, &limits) {
            Some(fast) => {
                prop_assert_eq!(Ok(fast), general);
                reach.hit("fast");
                if mutations.is_empty() {
                    reach.hit("fast, undamaged");
                } else {
                    reach.hit("fast, damaged");
                }
            }
            None => match general {
                Ok(_) => reach.hit("left to decode, decoded"),
                Err(_) => reach.hit("left to decode, refused"),
            },
        }
        // Every undamaged common shape within the limits takes the fast
        // path.
        if mutations.is_empty() && limits == DecodeLimits::REPLY {
            if let Owned::Chunked { reads, writes, reply, proc, .. } = &o {
                let common = reads.is_empty()
                    && match proc {
                        MsgProc::Msg => reply.is_none() && writes.len() <= 1
                            && writes.iter().all(|w| w.len() <= 17),
                        MsgProc::NoMsg => writes.is_empty()
                            && reply.as_ref().is_some_and(|r| r.len() <= 16),
                    };
                if common {
                    prop_assert!(decode_common_reply(&buf, &limits).is_some());
                    reach.hit("common shape within limits");
                }
            }
        }
    });
    reach.report();
    reach.require("fast, undamaged", 15);
    reach.require("fast, damaged", 10);
    reach.require("left to decode, decoded", 2);
    reach.require("left to decode, refused", 20);
    reach.require("common shape within limits", 15);
}
