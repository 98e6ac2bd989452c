// SPDX-License-Identifier: GPL-2.0

//! The RPC-over-RDMA version 2 transport header
//! (draft-cel-nfsv4-rpcrdma-version-two-04, section 6.2).
//!
//! ```text
//! rdma_xid | rdma_vers (2) | rdma_credit | rdma_proc | body
//!
//! RDMA2_MSG, RDMA2_NOMSG:  rdma_direction, rdma_inv_handle, the three
//!                          chunk lists of version 1
//! RDMA2_ERROR:             rdma_err, then per code: ERR_VERS low, high;
//!                          READ_CHUNKS/WRITE_CHUNKS max chunks; SEGMENTS
//!                          max segments; WRITE_RESOURCE chunk index,
//!                          length needed; REPLY_RESOURCE length needed
//! RDMA2_OPTIONAL:          rdma_optdir, rdma_opttype, opaque rdma_optinfo<>
//! RDMA2_CONNPROP (6):      propset rdma_start, propsubset rdma_nochg
//! RDMA2_REQPROP (7):       propset rdma_want
//! RDMA2_RESPROP (8):       propsubset rdma_done, rdma_rejected,
//!                          propset rdma_other
//! RDMA2_UPDPROP (9):       propset rdma_now
//! propset:    count, { rdma_which, opaque rdma_data<> }[count]
//! propsubset: count, uint32[count]
//! ```
//!
//! The draft defines the four property operations twice: as procedures 6
//! to 9 in its XDR (section 6.2) and as optional types 1 to 4 of
//! RDMA2_OPTIONAL in its Table 2 (section 5.3). [`decode`] accepts both,
//! and says which it got ([`PropForm`]). The client sends the Table 2 form
//! ([`encode_prop`] with [`PropForm::Optional`]): a peer that reads the
//! draft the other way answers an optional type it does not know with
//! RDMA2_ERR_INVALID_OPTION, which costs nothing, where a procedure it
//! does not know gets RDMA2_ERR_INVALID_PROC and ends the connection.
//!
//! As in version 1, decoding validates the whole header once, borrows the
//! received bytes and does not allocate, and encoding writes into a
//! caller's buffer exactly what decoding accepts.

use super::header::{
    decode_chunk_lists, decode_fixed, encode_lists, ChunkLists, DecodeError, DecodeLimits,
    EncodeError, MsgProc, ReadSegment, Segment,
};
use super::xdr::{xdr_roundup, XdrError, XdrReader, XdrWriter};

/// `rdma_vers` of version 2.
pub const RPCRDMA_VERSION_2: u32 = 2;

/// The inline threshold every version 2 receiver supports, and the one a
/// sender assumes without other word (section 2.3).
pub const DEFAULT_INLINE_SIZE_2: u32 = 4096;

/// `rdma_proc` values (section 6.2, `rpcrdma2_proc`).
pub const RDMA2_MSG: u32 = 0;
/// An RPC message carried entirely in chunks.
pub const RDMA2_NOMSG: u32 = 1;
/// A transport error report.
pub const RDMA2_ERROR: u32 = 4;
/// An optional operation, `rdma_opttype` saying which.
pub const RDMA2_OPTIONAL: u32 = 5;
/// Transport properties at connection, as a procedure.
pub const RDMA2_CONNPROP: u32 = 6;
/// A request to change properties, as a procedure.
pub const RDMA2_REQPROP: u32 = 7;
/// The answer to [`RDMA2_REQPROP`], as a procedure.
pub const RDMA2_RESPROP: u32 = 8;
/// An unsolicited change of properties, as a procedure.
pub const RDMA2_UPDPROP: u32 = 9;

/// `rdma_opttype` of the property operations (section 5.3, Table 2).
pub const OPT_CONNPROP: u32 = 1;
/// See [`OPT_CONNPROP`].
pub const OPT_REQPROP: u32 = 2;
/// See [`OPT_CONNPROP`].
pub const OPT_RESPROP: u32 = 3;
/// See [`OPT_CONNPROP`].
pub const OPT_UPDPROP: u32 = 4;

/// `rdma_err` values (section 6.2, `rpcrdma2_errcode`).
pub const RDMA2_ERR_VERS: u32 = 1;
/// The header could not be parsed (the value of version 1's ERR_CHUNK).
pub const RDMA2_ERR_BAD_XDR: u32 = 2;
/// `rdma_proc` not recognised.
pub const RDMA2_ERR_INVALID_PROC: u32 = 3;
/// More Read chunks than the responder takes.
pub const RDMA2_ERR_READ_CHUNKS: u32 = 4;
/// More Write chunks than the responder takes.
pub const RDMA2_ERR_WRITE_CHUNKS: u32 = 5;
/// More segments in a chunk than the responder takes.
pub const RDMA2_ERR_SEGMENTS: u32 = 6;
/// A Write chunk too small for its result.
pub const RDMA2_ERR_WRITE_RESOURCE: u32 = 7;
/// No Reply chunk, or one too small, for a Reply that does not fit inline.
pub const RDMA2_ERR_REPLY_RESOURCE: u32 = 8;
/// An `rdma_opttype` not recognised (`RDMA2_ERR_INVAL_OPTION` in the
/// draft's prose).
pub const RDMA2_ERR_INVALID_OPTION: u32 = 9;
/// Any other failure of the responder: the RPC ends.
pub const RDMA2_ERR_SYSTEM: u32 = 10;

/// Property identifiers (section 5.2, Table 1).
pub const PROPID_RBSIZ: u32 = 1;
/// Backward Request Support.
pub const PROPID_BRS: u32 = 2;

/// Most properties a received property set may hold: the draft defines
/// two. A longer set is refused before it is walked.
pub const MAX_PROPS: u32 = 32;
/// Most words a received property subset may hold: one per 32 properties
/// would do, but a peer may send words of zeros beyond its last.
pub const MAX_SUBSET_WORDS: u32 = 8;

/// The direction of a message (section 6.2.2): a Call's XID is the
/// sender's, a Reply's the receiver's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// `CALL` (0).
    Call,
    /// `REPLY` (1).
    Reply,
}

impl Direction {
    /// The word on the wire (RFC 5531 `msg_type`).
    pub const fn to_wire(self) -> u32 {
        match self {
            Self::Call => 0,
            Self::Reply => 1,
        }
    }

    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError2> {
        match r.get_u32()? {
            0 => Ok(Self::Call),
            1 => Ok(Self::Reply),
            other => Err(DecodeError2::BadDirection(other)),
        }
    }
}

/// The chunk lists of an RDMA2_MSG or RDMA2_NOMSG, with what version 2
/// adds before them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunks2<'a> {
    /// `rdma_direction`.
    pub direction: Direction,
    /// `rdma_inv_handle`: in a Call, the one handle of it the responder
    /// may invalidate remotely, or 0 (section 6.2.3).
    pub inv_handle: u32,
    /// The Read list, Write list and Reply chunk.
    pub lists: ChunkLists<'a>,
}

/// The body of an RDMA2_ERROR (section 6.2.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Error2 {
    /// The versions the responder supports.
    Vers {
        /// Lowest.
        low: u32,
        /// Highest.
        high: u32,
    },
    /// The header could not be parsed.
    BadXdr,
    /// `rdma_proc` not recognised.
    InvalidProc,
    /// At most this many Read chunks.
    ReadChunks {
        /// `rdma_max_chunks`.
        max: u32,
    },
    /// At most this many Write chunks.
    WriteChunks {
        /// `rdma_max_chunks`.
        max: u32,
    },
    /// At most this many segments per chunk.
    Segments {
        /// `rdma_max_segments`.
        max: u32,
    },
    /// Write chunk `chunk_index` (from 1; 0: unknown) needs
    /// `length_needed` bytes.
    WriteResource {
        /// `rdma_chunk_index`.
        chunk_index: u32,
        /// `rdma_length_needed`.
        length_needed: u32,
    },
    /// The Reply needs a Reply chunk of `length_needed` bytes.
    ReplyResource {
        /// `rdma_length_needed`.
        length_needed: u32,
    },
    /// `rdma_opttype` not recognised.
    InvalidOption,
    /// Anything else: the RPC ends.
    System,
}

impl Error2 {
    /// `rdma_err` on the wire.
    pub const fn code(&self) -> u32 {
        match self {
            Self::Vers { .. } => RDMA2_ERR_VERS,
            Self::BadXdr => RDMA2_ERR_BAD_XDR,
            Self::InvalidProc => RDMA2_ERR_INVALID_PROC,
            Self::ReadChunks { .. } => RDMA2_ERR_READ_CHUNKS,
            Self::WriteChunks { .. } => RDMA2_ERR_WRITE_CHUNKS,
            Self::Segments { .. } => RDMA2_ERR_SEGMENTS,
            Self::WriteResource { .. } => RDMA2_ERR_WRITE_RESOURCE,
            Self::ReplyResource { .. } => RDMA2_ERR_REPLY_RESOURCE,
            Self::InvalidOption => RDMA2_ERR_INVALID_OPTION,
            Self::System => RDMA2_ERR_SYSTEM,
        }
    }

    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError2> {
        Ok(match r.get_u32()? {
            RDMA2_ERR_VERS => Self::Vers {
                low: r.get_u32()?,
                high: r.get_u32()?,
            },
            RDMA2_ERR_BAD_XDR => Self::BadXdr,
            RDMA2_ERR_INVALID_PROC => Self::InvalidProc,
            RDMA2_ERR_READ_CHUNKS => Self::ReadChunks { max: r.get_u32()? },
            RDMA2_ERR_WRITE_CHUNKS => Self::WriteChunks { max: r.get_u32()? },
            RDMA2_ERR_SEGMENTS => Self::Segments { max: r.get_u32()? },
            RDMA2_ERR_WRITE_RESOURCE => Self::WriteResource {
                chunk_index: r.get_u32()?,
                length_needed: r.get_u32()?,
            },
            RDMA2_ERR_REPLY_RESOURCE => Self::ReplyResource {
                length_needed: r.get_u32()?,
            },
            RDMA2_ERR_INVALID_OPTION => Self::InvalidOption,
            RDMA2_ERR_SYSTEM => Self::System,
            other => return Err(DecodeError2::UnknownErrorCode(other)),
        })
    }

    fn encode(&self, w: &mut XdrWriter<'_>) -> Result<(), XdrError> {
        w.put_u32(self.code())?;
        match *self {
            Self::Vers { low, high } => {
                w.put_u32(low)?;
                w.put_u32(high)
            }
            Self::ReadChunks { max } | Self::WriteChunks { max } | Self::Segments { max } => {
                w.put_u32(max)
            }
            Self::WriteResource {
                chunk_index,
                length_needed,
            } => {
                w.put_u32(chunk_index)?;
                w.put_u32(length_needed)
            }
            Self::ReplyResource { length_needed } => w.put_u32(length_needed),
            Self::BadXdr | Self::InvalidProc | Self::InvalidOption | Self::System => Ok(()),
        }
    }
}

/// A transport property's value as sent: `rdma_which` and the XDR of the
/// value in `rdma_data` (empty: the property's default).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PropVal<'a> {
    /// `rdma_which`.
    pub which: u32,
    /// `rdma_data`, without its XDR pad.
    pub data: &'a [u8],
}

/// Backward Request Support (section 5.2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackwardRequests {
    /// `RDMA2_BKREQSUP_NONE`.
    None,
    /// `RDMA2_BKREQSUP_INLINE`: inline Calls and Replies only (default).
    Inline,
    /// `RDMA2_BKREQSUP_GENL`: as in the forward direction.
    General,
}

impl BackwardRequests {
    /// The enum's value on the wire.
    pub const fn to_wire(self) -> u32 {
        match self {
            Self::None => 0,
            Self::Inline => 1,
            Self::General => 2,
        }
    }
}

/// A property this code knows, read from a [`PropVal`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Property {
    /// Receive Buffer Size, in bytes (default 4096).
    ReceiveBufferSize(u32),
    /// Backward Request Support (default inline).
    BackwardRequests(BackwardRequests),
    /// A property this code does not know: ignored (section 5.1.1).
    Unknown(u32),
}

impl PropVal<'_> {
    /// What the value says. A known property whose data is not its type's
    /// XDR, or is longer, is an XDR error (section 5.1.1); empty data is
    /// the default.
    pub fn property(&self) -> Result<Property, DecodeError2> {
        let word = || -> Result<u32, DecodeError2> {
            let mut r = XdrReader::new(self.data);
            let v = r
                .get_u32()
                .map_err(|_| DecodeError2::BadProperty(self.which))?;
            if r.remaining() != 0 {
                return Err(DecodeError2::BadProperty(self.which));
            }
            Ok(v)
        };
        Ok(match self.which {
            PROPID_RBSIZ if self.data.is_empty() => {
                Property::ReceiveBufferSize(DEFAULT_INLINE_SIZE_2)
            }
            PROPID_RBSIZ => Property::ReceiveBufferSize(word()?),
            PROPID_BRS if self.data.is_empty() => {
                Property::BackwardRequests(BackwardRequests::Inline)
            }
            PROPID_BRS => Property::BackwardRequests(match word()? {
                0 => BackwardRequests::None,
                1 => BackwardRequests::Inline,
                2 => BackwardRequests::General,
                _ => return Err(DecodeError2::BadProperty(self.which)),
            }),
            other => Property::Unknown(other),
        })
    }
}

/// A received `rpcrdma2_propset`: validated, walked by [`PropSet::iter`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PropSet<'a> {
    /// The entries, after the count word.
    raw: &'a [u8],
    count: u32,
}

impl<'a> PropSet<'a> {
    /// Number of properties.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True if it holds none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The properties, in order.
    pub fn iter(&self) -> PropVals<'a> {
        PropVals {
            r: XdrReader::new(self.raw),
        }
    }
}

/// Iterator over a [`PropSet`].
#[derive(Clone, Debug)]
pub struct PropVals<'a> {
    r: XdrReader<'a>,
}

impl<'a> Iterator for PropVals<'a> {
    type Item = PropVal<'a>;

    fn next(&mut self) -> Option<PropVal<'a>> {
        // Validated when decoded: every entry is there.
        decode_propval(&mut self.r).ok()
    }
}

/// An XDR opaque: its bytes, without the pad, which must be zeros
/// (RFC 4506, section 4.10), so that every header has one encoding.
fn decode_opaque<'a>(r: &mut XdrReader<'a>) -> Result<&'a [u8], DecodeError2> {
    let len = r.get_u32()? as usize;
    let padded = xdr_roundup(len).ok_or(DecodeError2::Truncated)?;
    let data = r.take(padded)?;
    if data
        .get(len..)
        .is_some_and(|pad| pad.iter().any(|&b| b != 0))
    {
        return Err(DecodeError2::NonZeroPad);
    }
    data.get(..len).ok_or(DecodeError2::Truncated)
}

fn decode_propval<'a>(r: &mut XdrReader<'a>) -> Result<PropVal<'a>, DecodeError2> {
    let which = r.get_u32()?;
    let data = decode_opaque(r)?;
    Ok(PropVal { which, data })
}

fn decode_propset<'a>(buf: &'a [u8], r: &mut XdrReader<'a>) -> Result<PropSet<'a>, DecodeError2> {
    let count = r.get_u32()?;
    if count > MAX_PROPS {
        return Err(DecodeError2::TooManyProps(count));
    }
    let start = r.position();
    for _ in 0..count {
        decode_propval(r)?;
    }
    let raw = buf
        .get(start..r.position())
        .ok_or(DecodeError2::Truncated)?;
    Ok(PropSet { raw, count })
}

/// A received `rpcrdma2_propsubset`: bit `N % 32` of word `N / 32` stands
/// for the property at position `N` of a property set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PropSubset<'a> {
    /// The words, after the count word.
    raw: &'a [u8],
}

impl PropSubset<'_> {
    /// True if the property at `position` is in the subset (words beyond
    /// the last sent are zero).
    pub fn contains(&self, position: usize) -> bool {
        let mut r = XdrReader::new(self.raw);
        for _ in 0..position / 32 {
            if r.get_u32().is_err() {
                return false;
            }
        }
        r.get_u32()
            .is_ok_and(|w| w & (1u32 << (position % 32)) != 0)
    }

    /// Number of words sent.
    pub fn words(&self) -> usize {
        self.raw.len() / 4
    }
}

fn decode_subset<'a>(buf: &'a [u8], r: &mut XdrReader<'a>) -> Result<PropSubset<'a>, DecodeError2> {
    let count = r.get_u32()?;
    if count > MAX_SUBSET_WORDS {
        return Err(DecodeError2::TooManySubsetWords(count));
    }
    let start = r.position();
    for _ in 0..count {
        r.get_u32()?;
    }
    let raw = buf
        .get(start..r.position())
        .ok_or(DecodeError2::Truncated)?;
    Ok(PropSubset { raw })
}

/// A property operation (section 5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropOp<'a> {
    /// RDMA2_CONNPROP: the sender's properties, and which of them will not
    /// change.
    ConnProp {
        /// `rdma_start`.
        start: PropSet<'a>,
        /// `rdma_nochg`.
        nochg: PropSubset<'a>,
    },
    /// RDMA2_REQPROP: the values the sender asks for.
    ReqProp {
        /// `rdma_want`.
        want: PropSet<'a>,
    },
    /// RDMA2_RESPROP: what became of a request (its `rdma_xid`).
    ResProp {
        /// `rdma_done`.
        done: PropSubset<'a>,
        /// `rdma_rejected`.
        rejected: PropSubset<'a>,
        /// `rdma_other`.
        other: PropSet<'a>,
    },
    /// RDMA2_UPDPROP: the sender's properties changed.
    UpdProp {
        /// `rdma_now`.
        now: PropSet<'a>,
    },
}

impl PropOp<'_> {
    /// The procedure of this operation (section 6.2).
    pub const fn proc(&self) -> u32 {
        match self {
            Self::ConnProp { .. } => RDMA2_CONNPROP,
            Self::ReqProp { .. } => RDMA2_REQPROP,
            Self::ResProp { .. } => RDMA2_RESPROP,
            Self::UpdProp { .. } => RDMA2_UPDPROP,
        }
    }

    /// Its optional type (section 5.3, Table 2).
    pub const fn opttype(&self) -> u32 {
        match self {
            Self::ConnProp { .. } => OPT_CONNPROP,
            Self::ReqProp { .. } => OPT_REQPROP,
            Self::ResProp { .. } => OPT_RESPROP,
            Self::UpdProp { .. } => OPT_UPDPROP,
        }
    }
}

/// Which of the draft's two forms a property operation came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PropForm {
    /// As a procedure, 6 to 9 (section 6.2).
    Proc,
    /// As RDMA2_OPTIONAL of type 1 to 4 (section 5.3), with its
    /// `rdma_optdir`.
    Optional(Direction),
}

/// An RDMA2_OPTIONAL this code does not interpret.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Optional<'a> {
    /// `rdma_optdir`.
    pub direction: Direction,
    /// `rdma_opttype`.
    pub opttype: u32,
    /// `rdma_optinfo`, without its pad.
    pub info: &'a [u8],
}

/// The body of a decoded version 2 header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body2<'a> {
    /// RDMA2_MSG: the RPC message follows the header.
    Msg(Chunks2<'a>),
    /// RDMA2_NOMSG: the RPC message is in a chunk.
    NoMsg(Chunks2<'a>),
    /// RDMA2_ERROR.
    Error(Error2),
    /// A property operation, in either form.
    Prop(PropOp<'a>, PropForm),
    /// Any other RDMA2_OPTIONAL: answered with RDMA2_ERR_INVALID_OPTION.
    Optional(Optional<'a>),
}

/// A validated, decoded version 2 header that borrows the received bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header2<'a> {
    /// `rdma_vers`: 2, except in an RDMA2_ERROR with RDMA2_ERR_VERS.
    pub vers: u32,
    /// `rdma_xid`.
    pub xid: u32,
    /// `rdma_credit`, as received.
    pub credit: u32,
    /// What follows the fixed fields.
    pub body: Body2<'a>,
}

/// Every way a received version 2 header can be malformed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DecodeError2 {
    /// The message ends inside the header.
    Truncated,
    /// `rdma_vers` is not 2.
    BadVersion(u32),
    /// `rdma_proc` is none the draft defines.
    UnknownProc(u32),
    /// `rdma_direction` or `rdma_optdir` is neither CALL nor REPLY.
    BadDirection(u32),
    /// The chunk lists, as version 1 finds them wrong.
    Lists(DecodeError),
    /// `rdma_err` is none the draft defines.
    UnknownErrorCode(u32),
    /// A property set longer than [`MAX_PROPS`].
    TooManyProps(u32),
    /// A property subset longer than [`MAX_SUBSET_WORDS`].
    TooManySubsetWords(u32),
    /// A known property whose value is not its type's XDR.
    BadProperty(u32),
    /// A property operation carried in RDMA2_OPTIONAL whose `rdma_optinfo`
    /// holds more than the operation.
    OptinfoLength,
    /// Bytes follow a header whose Send carries nothing else.
    TrailingBytes,
    /// An opaque's XDR pad is not zeros.
    NonZeroPad,
}

impl From<XdrError> for DecodeError2 {
    fn from(_: XdrError) -> Self {
        Self::Truncated
    }
}

impl DecodeError2 {
    /// The error a responder reports for it (section 6.2.4): an unknown
    /// procedure is RDMA2_ERR_INVALID_PROC, another version ERR_VERS, the
    /// rest RDMA2_ERR_BAD_XDR.
    pub const fn error_code(&self) -> u32 {
        match self {
            Self::BadVersion(_) => RDMA2_ERR_VERS,
            Self::UnknownProc(_) => RDMA2_ERR_INVALID_PROC,
            _ => RDMA2_ERR_BAD_XDR,
        }
    }
}

fn decode_prop_op<'a>(
    buf: &'a [u8],
    r: &mut XdrReader<'a>,
    op: u32,
) -> Result<PropOp<'a>, DecodeError2> {
    Ok(match op {
        OPT_CONNPROP => PropOp::ConnProp {
            start: decode_propset(buf, r)?,
            nochg: decode_subset(buf, r)?,
        },
        OPT_REQPROP => PropOp::ReqProp {
            want: decode_propset(buf, r)?,
        },
        OPT_RESPROP => PropOp::ResProp {
            done: decode_subset(buf, r)?,
            rejected: decode_subset(buf, r)?,
            other: decode_propset(buf, r)?,
        },
        _ => PropOp::UpdProp {
            now: decode_propset(buf, r)?,
        },
    })
}

/// Decodes and validates the version 2 header at the start of `buf`, the
/// bytes of one received Send, with `limits` on the chunk lists.
///
/// Returns the header and its length. An RPC message follows an RDMA2_MSG
/// (and may follow an RDMA2_OPTIONAL, section 6.2.1); every other header
/// must end the Send.
pub fn decode<'a>(
    buf: &'a [u8],
    limits: &DecodeLimits,
) -> Result<(Header2<'a>, usize), DecodeError2> {
    let mut r = XdrReader::new(buf);
    // As in version 1, ERR_VERS keeps its place in every version.
    let (xid, vers, credit, proc, readable) = decode_fixed(&mut r, RPCRDMA_VERSION_2)?;
    if !readable {
        return Err(DecodeError2::BadVersion(vers));
    }
    let mut payload = false;
    let body = match proc {
        RDMA2_MSG | RDMA2_NOMSG => {
            let direction = Direction::decode(&mut r)?;
            let inv_handle = r.get_u32()?;
            let lists = decode_chunk_lists(buf, &mut r, limits).map_err(DecodeError2::Lists)?;
            let chunks = Chunks2 {
                direction,
                inv_handle,
                lists,
            };
            if proc == RDMA2_MSG {
                payload = true;
                Body2::Msg(chunks)
            } else {
                Body2::NoMsg(chunks)
            }
        }
        RDMA2_ERROR => Body2::Error(Error2::decode(&mut r)?),
        RDMA2_OPTIONAL => {
            payload = true;
            let direction = Direction::decode(&mut r)?;
            let opttype = r.get_u32()?;
            let info = decode_opaque(&mut r)?;
            match opttype {
                OPT_CONNPROP..=OPT_UPDPROP => {
                    let mut ir = XdrReader::new(info);
                    let op = decode_prop_op(info, &mut ir, opttype)?;
                    if ir.remaining() != 0 {
                        return Err(DecodeError2::OptinfoLength);
                    }
                    Body2::Prop(op, PropForm::Optional(direction))
                }
                _ => Body2::Optional(Optional {
                    direction,
                    opttype,
                    info,
                }),
            }
        }
        RDMA2_CONNPROP..=RDMA2_UPDPROP => {
            // Procedures 6 to 9 are optional types 1 to 4.
            let op = decode_prop_op(buf, &mut r, proc.saturating_sub(RDMA2_OPTIONAL))?;
            Body2::Prop(op, PropForm::Proc)
        }
        other => return Err(DecodeError2::UnknownProc(other)),
    };
    if !payload && r.remaining() != 0 {
        return Err(DecodeError2::TrailingBytes);
    }
    Ok((
        Header2 {
            vers,
            xid,
            credit,
            body,
        },
        r.position(),
    ))
}

fn encode_fixed(w: &mut XdrWriter<'_>, xid: u32, credit: u32, proc: u32) -> Result<(), XdrError> {
    w.put_u32(xid)?;
    w.put_u32(RPCRDMA_VERSION_2)?;
    w.put_u32(credit)?;
    w.put_u32(proc)
}

fn encode_opaque(w: &mut XdrWriter<'_>, data: &[u8]) -> Result<(), EncodeError> {
    let len = u32::try_from(data.len()).map_err(|_| EncodeError::NoSpace)?;
    w.put_u32(len)?;
    w.put_bytes(data)?;
    for _ in data.len()..xdr_roundup(data.len()).ok_or(EncodeError::NoSpace)? {
        w.put_bytes(&[0])?;
    }
    Ok(())
}

/// Encodes an RDMA2_MSG or RDMA2_NOMSG header from iterators, as
/// [`header::encode_chunked`](super::header::encode_chunked) does for
/// version 1, with its direction and `rdma_inv_handle`. Returns the bytes
/// written.
#[allow(clippy::too_many_arguments)]
pub fn encode_chunked<R, W, C, P>(
    out: &mut [u8],
    xid: u32,
    credit: u32,
    proc: MsgProc,
    direction: Direction,
    inv_handle: u32,
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
    w.put_u32(direction.to_wire())?;
    w.put_u32(inv_handle)?;
    encode_lists(&mut w, read_list, write_list, reply_chunk)?;
    Ok(w.len())
}

/// Encodes an RDMA2_ERROR; returns the bytes written.
pub fn encode_error(
    out: &mut [u8],
    xid: u32,
    credit: u32,
    err: &Error2,
) -> Result<usize, EncodeError> {
    let mut w = XdrWriter::new(out);
    encode_fixed(&mut w, xid, credit, RDMA2_ERROR)?;
    err.encode(&mut w)?;
    Ok(w.len())
}

/// A property operation to send: property sets as `(which, data)` pairs
/// (`data` the value's XDR, without pad), subsets as their words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropOpOut<'s> {
    /// RDMA2_CONNPROP.
    ConnProp {
        /// `rdma_start`.
        start: &'s [(u32, &'s [u8])],
        /// `rdma_nochg`.
        nochg: &'s [u32],
    },
    /// RDMA2_REQPROP.
    ReqProp {
        /// `rdma_want`.
        want: &'s [(u32, &'s [u8])],
    },
    /// RDMA2_RESPROP.
    ResProp {
        /// `rdma_done`.
        done: &'s [u32],
        /// `rdma_rejected`.
        rejected: &'s [u32],
        /// `rdma_other`.
        other: &'s [(u32, &'s [u8])],
    },
    /// RDMA2_UPDPROP.
    UpdProp {
        /// `rdma_now`.
        now: &'s [(u32, &'s [u8])],
    },
}

fn encode_propset<'p, I>(w: &mut XdrWriter<'_>, set: I) -> Result<(), EncodeError>
where
    I: IntoIterator<Item = (u32, &'p [u8])>,
{
    let at = w.reserve_u32()?;
    let mut n: u32 = 0;
    for (which, data) in set {
        w.put_u32(which)?;
        encode_opaque(w, data)?;
        n = n.checked_add(1).ok_or(EncodeError::NoSpace)?;
    }
    w.set_u32_at(at, n)?;
    Ok(())
}

fn encode_subset<I>(w: &mut XdrWriter<'_>, words: I) -> Result<(), EncodeError>
where
    I: IntoIterator<Item = u32>,
{
    let at = w.reserve_u32()?;
    let mut n: u32 = 0;
    for word in words {
        w.put_u32(word)?;
        n = n.checked_add(1).ok_or(EncodeError::NoSpace)?;
    }
    w.set_u32_at(at, n)?;
    Ok(())
}

fn encode_prop_op_out(w: &mut XdrWriter<'_>, op: &PropOpOut<'_>) -> Result<(), EncodeError> {
    match *op {
        PropOpOut::ConnProp { start, nochg } => {
            encode_propset(w, start.iter().copied())?;
            encode_subset(w, nochg.iter().copied())
        }
        PropOpOut::ReqProp { want } => encode_propset(w, want.iter().copied()),
        PropOpOut::ResProp {
            done,
            rejected,
            other,
        } => {
            encode_subset(w, done.iter().copied())?;
            encode_subset(w, rejected.iter().copied())?;
            encode_propset(w, other.iter().copied())
        }
        PropOpOut::UpdProp { now } => encode_propset(w, now.iter().copied()),
    }
}

/// Writes what `f` writes as an XDR opaque (`rdma_optinfo`): its length
/// first, patched in once known. A property operation's XDR is whole
/// words, so no pad follows.
fn encode_as_opaque<F>(w: &mut XdrWriter<'_>, f: F) -> Result<(), EncodeError>
where
    F: FnOnce(&mut XdrWriter<'_>) -> Result<(), EncodeError>,
{
    let at = w.reserve_u32()?;
    let start = w.len();
    f(w)?;
    let len = u32::try_from(w.len().saturating_sub(start)).map_err(|_| EncodeError::NoSpace)?;
    w.set_u32_at(at, len)?;
    Ok(())
}

/// The wire values of a [`PropOpOut`]: procedure, optional type.
const fn prop_out_codes(op: &PropOpOut<'_>) -> (u32, u32) {
    match op {
        PropOpOut::ConnProp { .. } => (RDMA2_CONNPROP, OPT_CONNPROP),
        PropOpOut::ReqProp { .. } => (RDMA2_REQPROP, OPT_REQPROP),
        PropOpOut::ResProp { .. } => (RDMA2_RESPROP, OPT_RESPROP),
        PropOpOut::UpdProp { .. } => (RDMA2_UPDPROP, OPT_UPDPROP),
    }
}

/// Encodes a property operation in `form`; returns the bytes written.
pub fn encode_prop(
    out: &mut [u8],
    xid: u32,
    credit: u32,
    op: &PropOpOut<'_>,
    form: PropForm,
) -> Result<usize, EncodeError> {
    let (proc, opttype) = prop_out_codes(op);
    let mut w = XdrWriter::new(out);
    match form {
        PropForm::Proc => {
            encode_fixed(&mut w, xid, credit, proc)?;
            encode_prop_op_out(&mut w, op)?;
        }
        PropForm::Optional(direction) => {
            encode_fixed(&mut w, xid, credit, RDMA2_OPTIONAL)?;
            w.put_u32(direction.to_wire())?;
            w.put_u32(opttype)?;
            encode_as_opaque(&mut w, |w| encode_prop_op_out(w, op))?;
        }
    }
    Ok(w.len())
}

impl Header2<'_> {
    /// Re-encodes this header into `out`; returns the bytes written, the
    /// header that was decoded byte for byte.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, EncodeError> {
        let mut w = XdrWriter::new(out);
        w.put_u32(self.xid)?;
        w.put_u32(self.vers)?;
        w.put_u32(self.credit)?;
        match &self.body {
            Body2::Msg(c) | Body2::NoMsg(c) => {
                let proc = if matches!(self.body, Body2::Msg(_)) {
                    RDMA2_MSG
                } else {
                    RDMA2_NOMSG
                };
                w.put_u32(proc)?;
                w.put_u32(c.direction.to_wire())?;
                w.put_u32(c.inv_handle)?;
                encode_lists(
                    &mut w,
                    c.lists.read_list,
                    c.lists.write_list,
                    c.lists.reply_chunk,
                )?;
            }
            Body2::Error(e) => {
                w.put_u32(RDMA2_ERROR)?;
                e.encode(&mut w)?;
            }
            Body2::Optional(o) => {
                w.put_u32(RDMA2_OPTIONAL)?;
                w.put_u32(o.direction.to_wire())?;
                w.put_u32(o.opttype)?;
                encode_opaque(&mut w, o.info)?;
            }
            Body2::Prop(op, PropForm::Proc) => {
                w.put_u32(op.proc())?;
                encode_prop_op(&mut w, op)?;
            }
            Body2::Prop(op, PropForm::Optional(direction)) => {
                w.put_u32(RDMA2_OPTIONAL)?;
                w.put_u32(direction.to_wire())?;
                w.put_u32(op.opttype())?;
                encode_as_opaque(&mut w, |w| encode_prop_op(w, op))?;
            }
        }
        Ok(w.len())
    }
}

fn encode_set(w: &mut XdrWriter<'_>, set: &PropSet<'_>) -> Result<(), EncodeError> {
    encode_propset(w, set.iter().map(|p| (p.which, p.data)))
}

fn encode_subset_of(w: &mut XdrWriter<'_>, s: &PropSubset<'_>) -> Result<(), EncodeError> {
    let mut r = XdrReader::new(s.raw);
    encode_subset(w, core::iter::from_fn(|| r.get_u32().ok()))
}

fn encode_prop_op(w: &mut XdrWriter<'_>, op: &PropOp<'_>) -> Result<(), EncodeError> {
    match op {
        PropOp::ConnProp { start, nochg } => {
            encode_set(w, start)?;
            encode_subset_of(w, nochg)
        }
        PropOp::ReqProp { want } => encode_set(w, want),
        PropOp::ResProp {
            done,
            rejected,
            other,
        } => {
            encode_subset_of(w, done)?;
            encode_subset_of(w, rejected)?;
            encode_set(w, other)
        }
        PropOp::UpdProp { now } => encode_set(w, now),
    }
}
