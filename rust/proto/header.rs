// SPDX-License-Identifier: GPL-2.0

//! The RPC-over-RDMA version 1 transport header (RFC 8166, section 4).
//!
//! ```text
//! rdma_xid | rdma_vers | rdma_credit | rdma_proc | body
//!
//! RDMA_MSG, RDMA_NOMSG body:
//!   Read list:  { 1, position, handle, length, offset(hyper) }* 0
//!   Write list: { 1, count, { handle, length, offset(hyper) }[count] }* 0
//!   Reply chunk: 1, count, { handle, length, offset(hyper) }[count]  |  0
//! RDMA_ERROR body:
//!   ERR_VERS (1), vers_low, vers_high  |  ERR_CHUNK (2)
//! ```
//!
//! Decoding does not allocate: [`decode`] validates the whole header once
//! and returns a [`Header`] that borrows the received buffer and keeps the
//! byte range of each list. The iterators over those ranges then only
//! re-read words that are known to be there.
//!
//! Encoding writes into a caller-provided buffer, from slices
//! ([`Message::encode`]), from any iterators ([`encode_chunked`]), or from a
//! decoded header ([`Header::encode`]). The encoder refuses exactly what the
//! decoder refuses (misaligned Read positions, segments whose offset plus
//! length wraps), so whatever it writes decodes back to the same header.

use super::xdr::{XdrError, XdrReader, XdrWriter};
use super::RPCRDMA_VERSION;

/// `rdma_proc` of an RPC message carried inline after the header.
pub const RDMA_MSG: u32 = 0;
/// `rdma_proc` of an RPC message carried entirely in chunks (Long message).
pub const RDMA_NOMSG: u32 = 1;
/// `rdma_proc` of the padded message of RFC 5666; not used in version 1.
pub const RDMA_MSGP: u32 = 2;
/// `rdma_proc` of RFC 5666's Read-Read completion; not used in version 1.
pub const RDMA_DONE: u32 = 3;
/// `rdma_proc` of a transport-level error report.
pub const RDMA_ERROR: u32 = 4;

/// `rdma_err` value: the receiver does not support the sender's version.
pub const ERR_VERS: u32 = 1;
/// `rdma_err` value: the receiver could not parse the chunk lists.
pub const ERR_CHUNK: u32 = 2;

/// Encoded size of a plain segment: handle, length, 64-bit offset.
pub const SEGMENT_LEN: usize = 16;
/// Encoded size of a Read segment: position, then a plain segment.
pub const READ_SEGMENT_LEN: usize = 20;
/// Encoded size of one Read list entry: the "present" word, then a Read
/// segment.
const READ_ENTRY_LEN: usize = 24;
/// Encoded size of the four fixed fields.
pub const FIXED_LEN: usize = 16;
/// Smallest RDMA_MSG or RDMA_NOMSG header: the fixed fields and three empty
/// lists (C: `RPCRDMA_HDRLEN_MIN`).
pub const MIN_HEADER_LEN: usize = 28;
/// Length of an RDMA_ERROR header carrying ERR_CHUNK
/// (C: `RPCRDMA_HDRLEN_ERR`).
pub const ERR_CHUNK_HEADER_LEN: usize = 20;
/// Length of an RDMA_ERROR header carrying ERR_VERS.
pub const ERR_VERS_HEADER_LEN: usize = 28;

/// A plain RDMA segment (RFC 8166, section 4.1.1): the coordinates of one
/// contiguous registered memory region.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Segment {
    /// The steering tag (R_key) of the region.
    pub handle: u32,
    /// Length of the region in bytes.
    pub length: u32,
    /// Address (or offset) of the region's first byte.
    pub offset: u64,
}

impl Segment {
    /// True if `offset + length` does not wrap around 64 bits. A segment that
    /// wraps cannot describe a real memory region (RFC 8166, section 3.4.3:
    /// a segment is one contiguous region), so both directions refuse it.
    pub const fn is_valid(&self) -> bool {
        self.offset.checked_add(self.length as u64).is_some()
    }

    fn from_bytes(b: &[u8; SEGMENT_LEN]) -> Self {
        Self {
            handle: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            length: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
            offset: u64::from_be_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]),
        }
    }

    #[inline]
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        let seg = Self {
            handle: r.get_u32()?,
            length: r.get_u32()?,
            offset: r.get_u64()?,
        };
        if !seg.is_valid() {
            return Err(DecodeError::SegmentOverflow);
        }
        Ok(seg)
    }

    fn encode(&self, w: &mut XdrWriter<'_>) -> Result<(), EncodeError> {
        if !self.is_valid() {
            return Err(EncodeError::SegmentOverflow);
        }
        w.put_u32(self.handle)?;
        w.put_u32(self.length)?;
        w.put_u64(self.offset)?;
        Ok(())
    }
}

/// A Read segment (RFC 8166, section 4.1.2): a plain segment and the XDR
/// position in the Payload stream where its data belongs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ReadSegment {
    /// Byte offset in the unreduced Payload stream; a multiple of four
    /// (RFC 8166, section 3.4.5). Zero marks a Long Call's Payload stream.
    pub position: u32,
    /// Where the data is.
    pub segment: Segment,
}

impl ReadSegment {
    fn from_entry(b: &[u8; READ_ENTRY_LEN]) -> Self {
        // Word 0 is the list's "present" discriminator, already checked.
        let seg = [
            b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15], b[16], b[17], b[18], b[19],
            b[20], b[21], b[22], b[23],
        ];
        Self {
            position: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
            segment: Segment::from_bytes(&seg),
        }
    }
}

/// The message types this implementation sends and accepts as an RPC
/// carrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MsgProc {
    /// RDMA_MSG: the (possibly reduced) RPC message follows the header.
    Msg,
    /// RDMA_NOMSG: the RPC message travels in a Position Zero Read chunk
    /// (a Long Call) or in the Reply chunk (a Long Reply).
    NoMsg,
}

impl MsgProc {
    /// The `rdma_proc` value on the wire.
    pub const fn to_wire(self) -> u32 {
        match self {
            Self::Msg => RDMA_MSG,
            Self::NoMsg => RDMA_NOMSG,
        }
    }
}

/// The body of an RDMA_ERROR message (RFC 8166, section 4.2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RdmaError {
    /// ERR_VERS: the range of versions the sender supports.
    Vers {
        /// Lowest supported version.
        low: u32,
        /// Highest supported version.
        high: u32,
    },
    /// ERR_CHUNK: the sender could not parse the chunk lists.
    Chunk,
}

/// Every way a received transport header can be malformed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DecodeError {
    /// The message ends inside the header.
    Truncated,
    /// `rdma_vers` is not 1. The message is not parsed further (C drops it
    /// without touching the credit grant).
    BadVersion(u32),
    /// `rdma_proc` is none of the five values RFC 8166 defines.
    UnknownProc(u32),
    /// RDMA_MSGP: defined by RFC 5666, never sent in version 1
    /// (RFC 8166, section 4.2.4).
    MsgpNotSupported,
    /// RDMA_DONE: defined by RFC 5666, never sent in version 1.
    DoneNotSupported,
    /// A list or optional-data discriminator is neither 0 nor 1 (an XDR
    /// bool, RFC 4506, section 4.4). The C decoder takes any non-zero value
    /// as "present"; this one refuses it.
    BadDiscriminator(u32),
    /// More entries in the Read list than [`DecodeLimits::max_read_segments`].
    TooManyReadSegments,
    /// More chunks in the Write list than [`DecodeLimits::max_write_chunks`].
    TooManyWriteChunks,
    /// A Write chunk's segment count exceeds
    /// [`DecodeLimits::max_segments_per_chunk`].
    TooManySegments,
    /// The Reply chunk's segment count exceeds
    /// [`DecodeLimits::max_reply_segments`].
    TooManyReplySegments,
    /// A segment's offset plus length wraps around 64 bits.
    SegmentOverflow,
    /// A Read segment's position is not a multiple of four
    /// (RFC 8166, section 3.4.5).
    MisalignedPosition(u32),
    /// Bytes follow an RDMA_NOMSG or RDMA_ERROR header, whose Send carries
    /// nothing else.
    TrailingBytes,
    /// `rdma_err` is neither ERR_VERS nor ERR_CHUNK.
    UnknownErrorCode(u32),
}

impl From<XdrError> for DecodeError {
    fn from(_: XdrError) -> Self {
        Self::Truncated
    }
}

/// Why a header could not be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EncodeError {
    /// The output buffer is too small.
    NoSpace,
    /// A Read segment's position is not a multiple of four.
    MisalignedPosition(u32),
    /// A segment's offset plus length wraps around 64 bits.
    SegmentOverflow,
    /// A counted array has more than `u32::MAX` segments.
    TooManySegments,
}

impl From<XdrError> for EncodeError {
    fn from(_: XdrError) -> Self {
        Self::NoSpace
    }
}

/// Upper bounds on what a received header may contain. A header that
/// exceeds one is refused rather than partly parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DecodeLimits {
    /// Entries (Read segments) in the Read list.
    pub max_read_segments: u32,
    /// Write chunks in the Write list.
    pub max_write_chunks: u32,
    /// Segments in one Write chunk.
    pub max_segments_per_chunk: u32,
    /// Segments in the Reply chunk.
    pub max_reply_segments: u32,
}

impl DecodeLimits {
    /// What a Reply to the Linux-style requester can legitimately carry:
    /// no Read list (C: `decode_read_list`), one Write chunk
    /// (C: `decode_write_list`) of at most `MAX_HDR_SEGS` data segments
    /// plus the XDR pad segment, and a Reply chunk of at most
    /// `MAX_HDR_SEGS` segments. The transport should pass its own
    /// `max_rdma_segs` (plus one for the pad) when it knows it.
    pub const REPLY: Self = Self {
        max_read_segments: 0,
        max_write_chunks: 1,
        max_segments_per_chunk: super::MAX_HDR_SEGS + 1,
        max_reply_segments: super::MAX_HDR_SEGS,
    };

    /// Generous limits for tools that parse headers in both directions
    /// (captures, tests): 64 of everything, 16 Write chunks.
    pub const PERMISSIVE: Self = Self {
        max_read_segments: 64,
        max_write_chunks: 16,
        max_segments_per_chunk: 64,
        max_reply_segments: 64,
    };
}

/// The Read list of a decoded header: validated entries, in wire order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ReadList<'a> {
    /// `count` entries of [`READ_ENTRY_LEN`] bytes each, terminator excluded.
    raw: &'a [u8],
}

impl<'a> ReadList<'a> {
    /// Number of Read segments.
    pub fn len(&self) -> usize {
        self.raw.len() / READ_ENTRY_LEN
    }

    /// True when the list is empty (the header carried a single 0).
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// The Read segments in wire order.
    pub fn iter(&self) -> ReadSegments<'a> {
        ReadSegments { entries: self.raw }
    }

    /// The Read chunks: runs of consecutive segments that share a position
    /// (RFC 8166, section 3.4.5: the Responder concatenates segments "until
    /// there are no more RDMA segments at that Position value").
    pub fn chunks(&self) -> ReadChunks<'a> {
        ReadChunks { entries: self.raw }
    }
}

impl<'a> IntoIterator for ReadList<'a> {
    type Item = ReadSegment;
    type IntoIter = ReadSegments<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Iterator over Read segments.
///
/// A slice split by a constant, not `chunks_exact`: its `size_hint`
/// divides by a run-time chunk size, a division-by-zero panic path the
/// kernel's objtool does not know cannot return.
#[derive(Clone, Debug)]
pub struct ReadSegments<'a> {
    /// Entries of [`READ_ENTRY_LEN`] bytes; a shorter tail is not one.
    entries: &'a [u8],
}

impl Iterator for ReadSegments<'_> {
    type Item = ReadSegment;
    fn next(&mut self) -> Option<ReadSegment> {
        let (entry, rest) = self.entries.split_first_chunk::<READ_ENTRY_LEN>()?;
        self.entries = rest;
        Some(ReadSegment::from_entry(entry))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.entries.len() / READ_ENTRY_LEN;
        (n, Some(n))
    }
}

impl ExactSizeIterator for ReadSegments<'_> {}

/// One Read chunk: consecutive Read segments with the same position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadChunk<'a> {
    /// Whole entries of [`READ_ENTRY_LEN`] bytes.
    entries: &'a [u8],
}

impl<'a> ReadChunk<'a> {
    /// The position shared by every segment of the chunk.
    pub fn position(&self) -> u32 {
        self.segments().next().map_or(0, |s| s.position)
    }

    /// Number of segments in the chunk.
    pub fn len(&self) -> usize {
        self.entries.len() / READ_ENTRY_LEN
    }

    /// Always false: a chunk has at least one segment.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Sum of the segment lengths.
    pub fn total_length(&self) -> u64 {
        self.segments().fold(0u64, |acc, s| {
            acc.saturating_add(u64::from(s.segment.length))
        })
    }

    /// The chunk's segments.
    pub fn segments(&self) -> ReadSegments<'a> {
        ReadSegments {
            entries: self.entries,
        }
    }
}

/// Iterator over the Read chunks of a Read list.
#[derive(Clone, Debug)]
pub struct ReadChunks<'a> {
    /// Whole entries of [`READ_ENTRY_LEN`] bytes.
    entries: &'a [u8],
}

impl<'a> Iterator for ReadChunks<'a> {
    type Item = ReadChunk<'a>;
    fn next(&mut self) -> Option<ReadChunk<'a>> {
        // Compare the position words directly: bytes 4..8 of each entry.
        let pos = self.entries.get(4..8)?;
        let run = self
            .entries
            .chunks_exact(READ_ENTRY_LEN)
            .take_while(|e| e.get(4..8) == Some(pos))
            .count();
        let split = run.checked_mul(READ_ENTRY_LEN)?;
        let chunk = self.entries.get(..split)?;
        self.entries = self.entries.get(split..)?;
        Some(ReadChunk { entries: chunk })
    }
}

/// A counted array of plain segments: one Write chunk, or the Reply chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SegmentArray<'a> {
    /// `count` segments of [`SEGMENT_LEN`] bytes, count word excluded.
    raw: &'a [u8],
}

impl<'a> SegmentArray<'a> {
    /// Number of segments (the array's count word).
    pub fn len(&self) -> usize {
        self.raw.len() / SEGMENT_LEN
    }

    /// True for an empty chunk (count zero, RFC 8166, section 3.4.6).
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// The segments in array order.
    pub fn iter(&self) -> Segments<'a> {
        Segments { segs: self.raw }
    }

    /// Sum of the segment lengths: for a returned Write chunk, the number of
    /// bytes the Responder wrote. Computed in 64 bits, so it cannot wrap the
    /// way C's `u32` sum in `decode_write_chunk` could.
    pub fn total_length(&self) -> u64 {
        self.iter()
            .fold(0u64, |acc, s| acc.saturating_add(u64::from(s.length)))
    }
}

impl<'a> IntoIterator for SegmentArray<'a> {
    type Item = Segment;
    type IntoIter = Segments<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Iterator over plain segments (split as [`ReadSegments`] is, and why).
#[derive(Clone, Debug)]
pub struct Segments<'a> {
    /// Segments of [`SEGMENT_LEN`] bytes; a shorter tail is not one.
    segs: &'a [u8],
}

impl Iterator for Segments<'_> {
    type Item = Segment;
    fn next(&mut self) -> Option<Segment> {
        let (seg, rest) = self.segs.split_first_chunk::<SEGMENT_LEN>()?;
        self.segs = rest;
        Some(Segment::from_bytes(seg))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.segs.len() / SEGMENT_LEN;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Segments<'_> {}

/// The Write list of a decoded header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct WriteList<'a> {
    /// The chunks as on the wire, each `1, count, segments`; terminator
    /// excluded.
    raw: &'a [u8],
    count: usize,
    /// Sum of the lengths of every segment of every chunk, added up as
    /// they were decoded.
    total: u64,
}

impl<'a> WriteList<'a> {
    /// Number of Write chunks.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Sum of the segment lengths of all its chunks: for a Reply, the
    /// bytes the Responder wrote. As [`SegmentArray::total_length`] of
    /// each chunk, added without walking the list again.
    pub fn total_length(&self) -> u64 {
        self.total
    }

    /// True when the list is empty.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The Write chunks in list order.
    pub fn iter(&self) -> WriteChunks<'a> {
        WriteChunks {
            r: XdrReader::new(self.raw),
        }
    }

    /// The first Write chunk, if any: the only one the C client ever
    /// provisions.
    pub fn first(&self) -> Option<SegmentArray<'a>> {
        self.iter().next()
    }
}

impl<'a> IntoIterator for WriteList<'a> {
    type Item = SegmentArray<'a>;
    type IntoIter = WriteChunks<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Iterator over the Write chunks of a Write list.
#[derive(Clone, Debug)]
pub struct WriteChunks<'a> {
    r: XdrReader<'a>,
}

impl<'a> Iterator for WriteChunks<'a> {
    type Item = SegmentArray<'a>;
    fn next(&mut self) -> Option<SegmentArray<'a>> {
        // The range was validated by decode(); a failure here cannot happen
        // and would simply end the iteration.
        let _present = self.r.get_u32().ok()?;
        let count = usize::try_from(self.r.get_u32().ok()?).ok()?;
        let raw = self.r.take(count.checked_mul(SEGMENT_LEN)?).ok()?;
        Some(SegmentArray { raw })
    }
}

/// The three chunk lists of an RDMA_MSG or RDMA_NOMSG header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ChunkLists<'a> {
    /// The Read list (Call messages only).
    pub read_list: ReadList<'a>,
    /// The Write list.
    pub write_list: WriteList<'a>,
    /// The Reply chunk, if present.
    pub reply_chunk: Option<SegmentArray<'a>>,
}

/// The body of a decoded header, by `rdma_proc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body<'a> {
    /// RDMA_MSG: the RPC message starts right after the header.
    Msg(ChunkLists<'a>),
    /// RDMA_NOMSG: the RPC message is in a chunk.
    NoMsg(ChunkLists<'a>),
    /// RDMA_ERROR.
    Error(RdmaError),
}

/// A validated, decoded transport header that borrows the received bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    /// `rdma_vers`: 1, except in an RDMA_ERROR with ERR_VERS, which RFC 8166
    /// section 7 keeps decodable in every version (a responder that does
    /// not support a requester's version answers in that version).
    pub vers: u32,
    /// `rdma_xid`, as the number the big-endian word encodes
    /// (`xid.to_be_bytes()` gives back the wire bytes, to compare with the
    /// RPC layer's `rq_xid`).
    pub xid: u32,
    /// `rdma_credit`, exactly as received: see
    /// [`credits::Credits::update`](super::credits::Credits::update) for
    /// its sanitising.
    pub credit: u32,
    /// What follows the fixed fields.
    pub body: Body<'a>,
}

#[inline]
fn decode_discriminator(r: &mut XdrReader<'_>) -> Result<bool, DecodeError> {
    match r.get_u32()? {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(DecodeError::BadDiscriminator(other)),
    }
}

/// Bytes of `buf` between two reader positions.
#[inline]
fn span(buf: &[u8], from: usize, to: usize) -> Result<&[u8], DecodeError> {
    buf.get(from..to).ok_or(DecodeError::Truncated)
}

/// Decodes a counted array of at most `max` segments; returns its segment
/// bytes (count word excluded) and the sum of their lengths.
fn decode_segment_array<'a>(
    buf: &'a [u8],
    r: &mut XdrReader<'a>,
    max: u32,
    too_many: DecodeError,
) -> Result<(SegmentArray<'a>, u64), DecodeError> {
    let count = r.get_u32()?;
    // Check the count before looping so a hostile count costs nothing.
    if count > max {
        return Err(too_many);
    }
    let start = r.position();
    let mut total = 0u64;
    for _ in 0..count {
        total = total.saturating_add(u64::from(Segment::decode(r)?.length));
    }
    let raw = span(buf, start, r.position())?;
    Ok((SegmentArray { raw }, total))
}

/// Decodes the three chunk lists at `r` (the same in versions 1 and 2),
/// within `limits`.
pub(super) fn decode_chunk_lists<'a>(
    buf: &'a [u8],
    r: &mut XdrReader<'a>,
    limits: &DecodeLimits,
) -> Result<ChunkLists<'a>, DecodeError> {
    // Read list: a linked list of Read segments (RFC 8166, section 4.2.1.1).
    let start = r.position();
    let mut n: u32 = 0;
    let mut end = start;
    while decode_discriminator(r)? {
        if n >= limits.max_read_segments {
            return Err(DecodeError::TooManyReadSegments);
        }
        let position = r.get_u32()?;
        if position & 3 != 0 {
            return Err(DecodeError::MisalignedPosition(position));
        }
        Segment::decode(r)?;
        n = n.saturating_add(1);
        end = r.position();
    }
    let read_list = ReadList {
        raw: span(buf, start, end)?,
    };

    // Write list: a linked list of counted arrays (section 4.2.1.2).
    let start = r.position();
    let mut count: usize = 0;
    let mut total = 0u64;
    let mut end = start;
    while decode_discriminator(r)? {
        if count >= limits.max_write_chunks as usize {
            return Err(DecodeError::TooManyWriteChunks);
        }
        let (_, bytes) = decode_segment_array(
            buf,
            r,
            limits.max_segments_per_chunk,
            DecodeError::TooManySegments,
        )?;
        total = total.saturating_add(bytes);
        count = count.saturating_add(1);
        end = r.position();
    }
    let write_list = WriteList {
        raw: span(buf, start, end)?,
        count,
        total,
    };

    // Reply chunk: optional counted array (section 4.2.1.3).
    let reply_chunk = if decode_discriminator(r)? {
        let (chunk, _) = decode_segment_array(
            buf,
            r,
            limits.max_reply_segments,
            DecodeError::TooManyReplySegments,
        )?;
        Some(chunk)
    } else {
        None
    };

    Ok(ChunkLists {
        read_list,
        write_list,
        reply_chunk,
    })
}

/// Reads the four fixed words (xid, vers, credit, proc), and whether what
/// follows may be read as version `want` lays it out. Like the C reply
/// handler, the version is checked before anything else, since nothing
/// after it is known to have this layout. Except ERR_VERS: RFC 8166
/// section 7 keeps rdma_proc, the ERR_VERS value and the version range in
/// place in every version (and version 2 keeps both values), so that a
/// mismatch can be reported; the Linux server sends it in the requester's
/// version.
pub(super) fn decode_fixed(
    r: &mut XdrReader<'_>,
    want: u32,
) -> Result<(u32, u32, u32, u32, bool), XdrError> {
    let xid = r.get_u32()?;
    let vers = r.get_u32()?;
    let credit = r.get_u32()?;
    let proc = r.get_u32()?;
    let err_vers = proc == RDMA_ERROR && r.clone().get_u32().ok() == Some(ERR_VERS);
    Ok((xid, vers, credit, proc, vers == want || err_vers))
}

/// Decodes and validates the transport header at the start of `buf`, which
/// holds exactly the bytes of one received Send.
///
/// Returns the header and its length in bytes. For RDMA_MSG the RPC message
/// is `buf[len..]`; RDMA_NOMSG and RDMA_ERROR must end exactly at `len`
/// (their Send carries nothing else, RFC 8166, sections 4.2.4 and 4.5).
pub fn decode<'a>(
    buf: &'a [u8],
    limits: &DecodeLimits,
) -> Result<(Header<'a>, usize), DecodeError> {
    let mut r = XdrReader::new(buf);
    let (xid, vers, credit, proc, readable) = decode_fixed(&mut r, RPCRDMA_VERSION)?;
    if !readable {
        return Err(DecodeError::BadVersion(vers));
    }

    let body = match proc {
        RDMA_MSG => Body::Msg(decode_chunk_lists(buf, &mut r, limits)?),
        RDMA_NOMSG => Body::NoMsg(decode_chunk_lists(buf, &mut r, limits)?),
        RDMA_MSGP => return Err(DecodeError::MsgpNotSupported),
        RDMA_DONE => return Err(DecodeError::DoneNotSupported),
        RDMA_ERROR => Body::Error(match r.get_u32()? {
            ERR_VERS => RdmaError::Vers {
                low: r.get_u32()?,
                high: r.get_u32()?,
            },
            ERR_CHUNK => RdmaError::Chunk,
            other => return Err(DecodeError::UnknownErrorCode(other)),
        }),
        other => return Err(DecodeError::UnknownProc(other)),
    };

    if !matches!(body, Body::Msg(_)) && r.remaining() != 0 {
        return Err(DecodeError::TrailingBytes);
    }
    Ok((
        Header {
            vers,
            xid,
            credit,
            body,
        },
        r.position(),
    ))
}

/// [`decode`] for the shapes nearly every Reply has, without its loops:
/// an RDMA_MSG with no chunk or with one Write chunk, and an RDMA_NOMSG
/// with only a Reply chunk, each within `limits`. `None` for anything
/// else, which [`decode`] then decodes or refuses; where it returns a
/// header, it is exactly the one [`decode`] returns (the host tests check
/// this for every input they make).
#[inline]
pub fn decode_common_reply<'a>(
    buf: &'a [u8],
    limits: &DecodeLimits,
) -> Option<(Header<'a>, usize)> {
    // The word at byte `at`.
    let word = |at: usize| -> Option<u32> {
        let b = buf.get(at..)?.first_chunk::<4>()?;
        Some(u32::from_be_bytes(*b))
    };
    // The counted array whose count is at byte `at`, of at most `max`
    // segments: its segment bytes, the sum of their lengths, and where it
    // ends.
    let array = |at: usize, max: u32| -> Option<(&'a [u8], u64, usize)> {
        let n = word(at)?;
        if n > max {
            return None;
        }
        let start = at.checked_add(4)?;
        let end = start.checked_add(usize::try_from(n).ok()?.checked_mul(SEGMENT_LEN)?)?;
        let raw = buf.get(start..end)?;
        let mut total = 0u64;
        for seg in (Segments { segs: raw }) {
            if !seg.is_valid() {
                return None;
            }
            total = total.saturating_add(u64::from(seg.length));
        }
        Some((raw, total, end))
    };
    // Version 1, and an empty Read list.
    if word(4)? != RPCRDMA_VERSION || word(16)? != 0 {
        return None;
    }
    let (body, len) = match (word(12)?, word(20)?) {
        // RDMA_MSG, no Write list, no Reply chunk.
        (RDMA_MSG, 0) => {
            if word(24)? != 0 {
                return None;
            }
            (Body::Msg(ChunkLists::default()), MIN_HEADER_LEN)
        }
        // RDMA_MSG, one Write chunk, no Reply chunk.
        (RDMA_MSG, 1) if limits.max_write_chunks >= 1 => {
            let (_, total, end) = array(24, limits.max_segments_per_chunk)?;
            if word(end)? != 0 || word(end.checked_add(4)?)? != 0 {
                return None;
            }
            let lists = ChunkLists {
                write_list: WriteList {
                    raw: buf.get(20..end)?,
                    count: 1,
                    total,
                },
                ..ChunkLists::default()
            };
            (Body::Msg(lists), end.checked_add(8)?)
        }
        // RDMA_NOMSG, a Reply chunk only, and nothing after it.
        (RDMA_NOMSG, 0) => {
            if word(24)? != 1 {
                return None;
            }
            let (raw, _, end) = array(28, limits.max_reply_segments)?;
            if buf.len() != end {
                return None;
            }
            let lists = ChunkLists {
                reply_chunk: Some(SegmentArray { raw }),
                ..ChunkLists::default()
            };
            (Body::NoMsg(lists), end)
        }
        _ => return None,
    };
    let hdr = Header {
        vers: RPCRDMA_VERSION,
        xid: word(0)?,
        credit: word(8)?,
        body,
    };
    Some((hdr, len))
}

impl<'a> Header<'a> {
    /// The chunk lists, for RDMA_MSG and RDMA_NOMSG.
    pub fn chunk_lists(&self) -> Option<&ChunkLists<'a>> {
        match &self.body {
            Body::Msg(c) | Body::NoMsg(c) => Some(c),
            Body::Error(_) => None,
        }
    }

    /// Re-encodes this header into `out`; returns the bytes written. The
    /// result is byte-for-byte the header that was decoded.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, EncodeError> {
        match &self.body {
            Body::Msg(c) | Body::NoMsg(c) => {
                let proc = if matches!(self.body, Body::Msg(_)) {
                    MsgProc::Msg
                } else {
                    MsgProc::NoMsg
                };
                encode_chunked(
                    out,
                    self.xid,
                    self.credit,
                    proc,
                    c.read_list,
                    c.write_list,
                    c.reply_chunk,
                )
            }
            Body::Error(e) => encode_error_in(out, self.vers, self.xid, self.credit, *e),
        }
    }

    /// Applies the C client's sanity checks for a Reply
    /// (C: `rpcrdma_decode_msg`, `rpcrdma_decode_nomsg`,
    /// `rpcrdma_decode_error`) and says where the RPC Reply is.
    pub fn classify_reply(&self) -> Result<ReplyKind, ReplyError> {
        let lists = match &self.body {
            Body::Error(e) => return Ok(ReplyKind::Error(*e)),
            Body::Msg(c) | Body::NoMsg(c) => c,
        };
        // A Reply never carries a Read list (RFC 8166, section 4.2.1.1).
        if !lists.read_list.is_empty() {
            return Err(ReplyError::ReadListPresent);
        }
        let written = lists.write_list.total_length();
        let reply_len = lists.reply_chunk.map_or(0, |c| c.total_length());
        match self.body {
            Body::Msg(_) => {
                // The Responder used the Reply chunk yet also sent the RPC
                // Reply inline: C refuses this too.
                if reply_len != 0 {
                    return Err(ReplyError::ReplyChunkUsedWithMsg);
                }
                Ok(ReplyKind::Inline {
                    write_chunk_len: written,
                })
            }
            _ => {
                if written != 0 {
                    return Err(ReplyError::WriteListUsedWithNoMsg);
                }
                if reply_len == 0 {
                    return Err(ReplyError::EmptyReplyChunk);
                }
                Ok(ReplyKind::Long {
                    reply_chunk_len: reply_len,
                })
            }
        }
    }
}

impl Header<'_> {
    /// [`Header::classify_reply`], once the chunks the Reply returns are
    /// checked against those its Call offered (`offer`), so that no byte
    /// the Responder did not write is taken for Reply data: a Write list
    /// only for an offered Write chunk, a Reply chunk and RDMA_NOMSG only
    /// for an offered Reply chunk, and each returned chunk a prefix of
    /// the offered one. For RDMA_MSG, `write_chunk_len` is then the bytes
    /// written into the page data's segments, without the pad segment's.
    pub fn check_reply(&self, offer: &Offer<'_>) -> Result<ReplyKind, ReplyError> {
        let lists = match &self.body {
            Body::Error(e) => return Ok(ReplyKind::Error(*e)),
            Body::Msg(c) | Body::NoMsg(c) => c,
        };
        if matches!(self.body, Body::NoMsg(_)) && !matches!(offer, Offer::ReplyChunk(_)) {
            return Err(ReplyError::NoMsgNotOffered);
        }
        let mut chunks = lists.write_list.iter();
        let placed = match (chunks.next(), offer) {
            (None, _) => 0,
            (Some(chunk), Offer::WriteChunk { data, pad }) => {
                let offered = data.iter().chain(pad.iter()).copied();
                check_returned(chunk, offered, data.len()).map_err(|m| match m {
                    Mismatch::Differs => ReplyError::WriteChunkMismatch,
                    Mismatch::TooLong => ReplyError::WriteChunkTooLong,
                })?
            }
            (Some(_), _) => return Err(ReplyError::WriteListNotOffered),
        };
        if chunks.next().is_some() {
            return Err(ReplyError::TooManyWriteChunks);
        }
        match (lists.reply_chunk, offer) {
            (None, _) => {}
            (Some(chunk), Offer::ReplyChunk(segs)) => {
                check_returned(chunk, segs.iter().copied(), segs.len()).map_err(|m| match m {
                    Mismatch::Differs => ReplyError::ReplyChunkMismatch,
                    Mismatch::TooLong => ReplyError::ReplyChunkTooLong,
                })?;
            }
            (Some(_), _) => return Err(ReplyError::ReplyChunkNotOffered),
        }
        match self.classify_reply()? {
            ReplyKind::Inline { .. } => Ok(ReplyKind::Inline {
                write_chunk_len: placed,
            }),
            kind => Ok(kind),
        }
    }
}

/// Where a received Reply's RPC message is, per [`Header::classify_reply`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyKind {
    /// RDMA_MSG: the RPC Reply follows the header; the Write chunks (if any)
    /// carried `write_chunk_len` bytes of reduced data.
    Inline {
        /// Bytes the Responder wrote into the Write chunks.
        write_chunk_len: u64,
    },
    /// RDMA_NOMSG: the whole RPC Reply, `reply_chunk_len` bytes, is in the
    /// Reply chunk.
    Long {
        /// Bytes the Responder wrote into the Reply chunk.
        reply_chunk_len: u64,
    },
    /// RDMA_ERROR: the Responder could not process the Call.
    Error(RdmaError),
}

/// A well-formed header that is not a valid Reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyError {
    /// A Reply carried a Read list.
    ReadListPresent,
    /// An RDMA_MSG Reply also wrote into the Reply chunk.
    ReplyChunkUsedWithMsg,
    /// An RDMA_NOMSG Reply wrote into a Write chunk.
    WriteListUsedWithNoMsg,
    /// An RDMA_NOMSG Reply has no data in its Reply chunk.
    EmptyReplyChunk,
    /// A Write list came back, but the Call offered no Write chunk.
    WriteListNotOffered,
    /// The Write list has more chunks than the Call offered.
    TooManyWriteChunks,
    /// The returned Write chunk is not the offered one filled in order:
    /// more segments than offered, a handle or offset that differs, or a
    /// segment written after one left short.
    WriteChunkMismatch,
    /// A returned Write chunk segment is longer than the one offered.
    WriteChunkTooLong,
    /// A Reply chunk came back, but the Call offered none.
    ReplyChunkNotOffered,
    /// RDMA_NOMSG, but the Call offered no Reply chunk to carry the Reply.
    NoMsgNotOffered,
    /// The returned Reply chunk is not the offered one filled in order
    /// (as [`ReplyError::WriteChunkMismatch`]).
    ReplyChunkMismatch,
    /// A returned Reply chunk segment is longer than the one offered.
    ReplyChunkTooLong,
}

impl ReplyError {
    /// The line a requester logs when it refuses a Reply for this reason.
    /// The first four share one, as they always have.
    pub const fn describe(&self) -> &'static str {
        match self {
            Self::ReadListPresent
            | Self::ReplyChunkUsedWithMsg
            | Self::WriteListUsedWithNoMsg
            | Self::EmptyReplyChunk => "malformed reply chunk lists",
            Self::WriteListNotOffered => "Write list but no Write chunk offered",
            Self::TooManyWriteChunks => "Write list has more chunks than offered",
            Self::WriteChunkMismatch => "Write chunk segments differ from those offered",
            Self::WriteChunkTooLong => "Write chunk longer than offered",
            Self::ReplyChunkNotOffered => "Reply chunk but none offered",
            Self::NoMsgNotOffered => "RDMA_NOMSG reply but no Reply chunk offered",
            Self::ReplyChunkMismatch => "Reply chunk segments differ from those offered",
            Self::ReplyChunkTooLong => "Reply chunk longer than offered",
        }
    }
}

/// What a Call offered for its Reply to be written into, as its transport
/// header advertised it ([`Header::check_reply`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer<'s> {
    /// Neither a Write chunk nor a Reply chunk: the Reply comes inline.
    Inline,
    /// One Write chunk: the segments of the page data, then, if the data's
    /// length is not a multiple of four, the XDR pad's segment
    /// (C: `re_write_pad_mr`).
    WriteChunk {
        /// The page data's segments, in order.
        data: &'s [Segment],
        /// The pad segment, after them.
        pad: Option<Segment>,
    },
    /// A Reply chunk, its segments in order.
    ReplyChunk(&'s [Segment]),
}

/// How a returned chunk fails to match the one offered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mismatch {
    /// Another segment, or out of order.
    Differs,
    /// A segment longer than offered.
    TooLong,
}

/// Checks a returned chunk against the segments `offered` for it: no more
/// segments, each with the offered handle and offset and at most the
/// offered length, and filled in order (after a segment left short, only
/// empty ones), so that what the Responder wrote is a prefix of the
/// memory offered, the only thing a delivery can take it for. Returns the
/// bytes written into the first `data` segments.
fn check_returned(
    returned: SegmentArray<'_>,
    offered: impl Iterator<Item = Segment>,
    data: usize,
) -> Result<u64, Mismatch> {
    let mut offered = offered;
    let mut short = false;
    let mut placed = 0u64;
    for (i, seg) in returned.iter().enumerate() {
        let offer = offered.next().ok_or(Mismatch::Differs)?;
        if seg.handle != offer.handle || seg.offset != offer.offset {
            return Err(Mismatch::Differs);
        }
        if seg.length > offer.length {
            return Err(Mismatch::TooLong);
        }
        if short && seg.length != 0 {
            return Err(Mismatch::Differs);
        }
        short = seg.length < offer.length;
        if i < data {
            placed = placed.saturating_add(u64::from(seg.length));
        }
    }
    Ok(placed)
}

/// An RDMA_MSG or RDMA_NOMSG header to encode, described by slices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message<'s> {
    /// `rdma_xid`, the numeric value of the RPC XID's big-endian word.
    pub xid: u32,
    /// `rdma_credit`: the credits requested (C: `rb_max_requests`).
    pub credit: u32,
    /// RDMA_MSG or RDMA_NOMSG.
    pub proc: MsgProc,
    /// The Read list, one entry per registered segment.
    pub read_list: &'s [ReadSegment],
    /// The Write list: each element is one Write chunk's segments.
    pub write_list: &'s [&'s [Segment]],
    /// The Reply chunk's segments, if provisioned.
    pub reply_chunk: Option<&'s [Segment]>,
}

impl Message<'_> {
    /// Number of bytes [`Self::encode`] will write; `None` on overflow.
    pub fn encoded_len(&self) -> Option<usize> {
        let reads = self
            .read_list
            .len()
            .checked_mul(READ_ENTRY_LEN)?
            .checked_add(4)?;
        let mut writes: usize = 4;
        for chunk in self.write_list {
            writes = writes
                .checked_add(8)?
                .checked_add(chunk.len().checked_mul(SEGMENT_LEN)?)?;
        }
        let reply = match self.reply_chunk {
            Some(c) => c.len().checked_mul(SEGMENT_LEN)?.checked_add(8)?,
            None => 4,
        };
        FIXED_LEN
            .checked_add(reads)?
            .checked_add(writes)?
            .checked_add(reply)
    }

    /// Encodes the header into `out`; returns the bytes written.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, EncodeError> {
        encode_chunked(
            out,
            self.xid,
            self.credit,
            self.proc,
            self.read_list.iter().copied(),
            self.write_list.iter().map(|c| c.iter().copied()),
            self.reply_chunk.map(|c| c.iter().copied()),
        )
    }
}

fn encode_fixed(w: &mut XdrWriter<'_>, xid: u32, credit: u32, proc: u32) -> Result<(), XdrError> {
    w.put_u32(xid)?;
    w.put_u32(RPCRDMA_VERSION)?;
    w.put_u32(credit)?;
    w.put_u32(proc)
}

/// Encodes a counted array, patching the count in once it is known (as C's
/// `rpcrdma_encode_write_list` does).
fn encode_segment_array<I>(w: &mut XdrWriter<'_>, segs: I) -> Result<(), EncodeError>
where
    I: IntoIterator<Item = Segment>,
{
    let at = w.reserve_u32()?;
    let mut n: u32 = 0;
    for seg in segs {
        seg.encode(w)?;
        n = n.checked_add(1).ok_or(EncodeError::TooManySegments)?;
    }
    w.set_u32_at(at, n)?;
    Ok(())
}

/// Encodes an RDMA_MSG or RDMA_NOMSG header from iterators, so a caller can
/// feed segments straight from its registered memory regions without
/// building arrays. Returns the bytes written.
///
/// `read_list` yields one Read segment per list entry; consecutive entries
/// with the same position form one Read chunk. `write_list` yields one item
/// per Write chunk, itself yielding that chunk's segments.
pub fn encode_chunked<R, W, C, P>(
    out: &mut [u8],
    xid: u32,
    credit: u32,
    proc: MsgProc,
    read_list: R,
    write_list: W,
    reply_chunk: Option<P>,
) -> Result<usize, EncodeError>
where
    R: IntoIterator<Item = ReadSegment>,
    W: IntoIterator<Item = C>,
    C: IntoIterator<Item = Segment>,
    P: IntoIterator<Item = Segment>,
{
    let mut w = XdrWriter::new(out);
    encode_fixed(&mut w, xid, credit, proc.to_wire())?;
    encode_lists(&mut w, read_list, write_list, reply_chunk)?;
    Ok(w.len())
}

/// Encodes the three chunk lists (the same in versions 1 and 2).
pub(super) fn encode_lists<R, W, C, P>(
    w: &mut XdrWriter<'_>,
    read_list: R,
    write_list: W,
    reply_chunk: Option<P>,
) -> Result<(), EncodeError>
where
    R: IntoIterator<Item = ReadSegment>,
    W: IntoIterator<Item = C>,
    C: IntoIterator<Item = Segment>,
    P: IntoIterator<Item = Segment>,
{
    for rs in read_list {
        if rs.position & 3 != 0 {
            return Err(EncodeError::MisalignedPosition(rs.position));
        }
        w.put_u32(1)?;
        w.put_u32(rs.position)?;
        rs.segment.encode(w)?;
    }
    w.put_u32(0)?;

    for chunk in write_list {
        w.put_u32(1)?;
        encode_segment_array(w, chunk)?;
    }
    w.put_u32(0)?;

    match reply_chunk {
        Some(segs) => {
            w.put_u32(1)?;
            encode_segment_array(w, segs)?;
        }
        None => w.put_u32(0)?,
    }
    Ok(())
}

/// Encodes an RDMA_ERROR header (RFC 8166, section 4.5); returns the bytes
/// written.
pub fn encode_error(
    out: &mut [u8],
    xid: u32,
    credit: u32,
    err: RdmaError,
) -> Result<usize, EncodeError> {
    encode_error_in(out, RPCRDMA_VERSION, xid, credit, err)
}

/// [`encode_error`] with `rdma_vers` set to `vers` (an ERR_VERS answers in
/// the requester's version).
fn encode_error_in(
    out: &mut [u8],
    vers: u32,
    xid: u32,
    credit: u32,
    err: RdmaError,
) -> Result<usize, EncodeError> {
    let mut w = XdrWriter::new(out);
    w.put_u32(xid)?;
    w.put_u32(vers)?;
    w.put_u32(credit)?;
    w.put_u32(RDMA_ERROR)?;
    match err {
        RdmaError::Vers { low, high } => {
            w.put_u32(ERR_VERS)?;
            w.put_u32(low)?;
            w.put_u32(high)?;
        }
        RdmaError::Chunk => w.put_u32(ERR_CHUNK)?,
    }
    Ok(w.len())
}
