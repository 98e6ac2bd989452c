// SPDX-License-Identifier: GPL-2.0

//! The responder's side of RPC-over-RDMA version 1 (RFC 8166), and of
//! version 2 (the draft) with `--version 2`, without the verbs: decoding a
//! Call's transport header, putting the Call back together from its Read
//! chunks, choosing how the Reply goes back, and spoiling that Reply when
//! a fault is due. The result is a list of RDMA operations for `verbs.rs`
//! to carry out, so all of it is testable here.

use crate::cli::Fault;
use crate::nfs::Reply;
use rpcrdma_proto::proto::header::{
    self, Body, ChunkLists, DecodeError, DecodeLimits, EncodeError, MsgProc, RdmaError, Segment,
    FIXED_LEN, MIN_HEADER_LEN,
};
use rpcrdma_proto::proto::header2::{
    self, Body2, DecodeError2, Direction, Error2, PropForm, RPCRDMA_VERSION_2,
};
use rpcrdma_proto::proto::xdr::xdr_pad_size;
use rpcrdma_proto::proto::RPCRDMA_VERSION;

/// Most bytes one Call may bring in Read chunks: the largest WRITE and
/// its arguments, or a Long Call.
pub const MAX_CALL_CHUNKS: usize = 2 << 20;

/// One Read chunk of a Call: its XDR position and its segments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadChunk {
    pub position: u32,
    pub segments: Vec<Segment>,
}

impl ReadChunk {
    pub fn len(&self) -> usize {
        self.segments.iter().map(|s| s.length as usize).sum()
    }
}

/// The versions the peer serves (`--version`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Serve {
    /// Version 1 only: a version 2 Call gets ERR_VERS, as from the Linux
    /// server.
    #[default]
    One,
    /// Version 2, and version 1 Calls as they come.
    Two,
}

/// A received Call's transport header, and the RPC bytes sent inline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub xid: u32,
    /// `rdma_vers`: 1 or 2. The Reply goes in the same version.
    pub version: u32,
    /// Version 2's `rdma_inv_handle`: the one handle the Reply may
    /// invalidate, or 0 (none; always 0 in version 1).
    pub inv_handle: u32,
    pub nomsg: bool,
    pub read_chunks: Vec<ReadChunk>,
    pub write_chunks: Vec<Vec<Segment>>,
    pub reply_chunk: Option<Vec<Segment>>,
    pub inline: Vec<u8>,
}

/// A received message that is not a usable Call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Too short to carry an XID: nothing can be answered.
    Short,
    /// Answer with this RDMA_ERROR header, its `rdma_vers` the Call's
    /// (`vers`), as the Linux server does (`svc_rdma_send_error`).
    Error {
        xid: u32,
        vers: u32,
        error: RdmaError,
    },
    /// Answer with this RDMA2_ERROR header.
    Error2 { xid: u32, error: Error2 },
    /// Something else (an RDMA_ERROR or RDMA_MSG the client should never
    /// send us as a Call): dropped.
    Ignored(DecodeError),
}

/// Decodes a Call's transport header (RFC 8166, section 4), answering a
/// version we do not speak with ERR_VERS and any other malformed header
/// with ERR_CHUNK, as section 4.5 says.
pub fn parse_call(msg: &[u8]) -> Result<Call, Refused> {
    parse_call_as(msg, Serve::One)
}

/// [`parse_call`] for a peer serving `serve`: with [`Serve::Two`] a
/// version 2 Call is decoded as the draft says (section 6.2), and a
/// malformed one answered with RDMA2_ERR_BAD_XDR, an unknown procedure
/// with RDMA2_ERR_INVALID_PROC (section 6.2.4), an unknown optional type
/// with RDMA2_ERR_INVALID_OPTION (section 4.1). The property operations
/// are not supported yet: answered as an unknown optional type or
/// procedure, whichever form they came in.
pub fn parse_call_as(msg: &[u8], serve: Serve) -> Result<Call, Refused> {
    if msg.len() < FIXED_LEN {
        return Err(Refused::Short);
    }
    let xid = u32::from_be_bytes([msg[0], msg[1], msg[2], msg[3]]);
    let vers = u32::from_be_bytes([msg[4], msg[5], msg[6], msg[7]]);
    if serve == Serve::Two && vers == RPCRDMA_VERSION_2 {
        return parse_call_2(msg, xid);
    }
    let (hdr, len) = match header::decode(msg, &DecodeLimits::PERMISSIVE) {
        Ok(d) => d,
        Err(DecodeError::BadVersion(_)) => {
            let high = match serve {
                Serve::One => RPCRDMA_VERSION,
                Serve::Two => RPCRDMA_VERSION_2,
            };
            return Err(Refused::Error {
                xid,
                vers,
                error: RdmaError::Vers {
                    low: RPCRDMA_VERSION,
                    high,
                },
            });
        }
        Err(_) => {
            return Err(Refused::Error {
                xid,
                vers,
                error: RdmaError::Chunk,
            })
        }
    };
    let (lists, nomsg) = match &hdr.body {
        Body::Msg(l) => (l, false),
        Body::NoMsg(l) => (l, true),
        Body::Error(_) => {
            return Err(Refused::Ignored(DecodeError::UnknownProc(
                header::RDMA_ERROR,
            )))
        }
    };
    Ok(Call::from_lists(
        xid,
        RPCRDMA_VERSION,
        0,
        nomsg,
        lists,
        &msg[len..],
    ))
}

/// A version 2 Call (section 6.2).
fn parse_call_2(msg: &[u8], xid: u32) -> Result<Call, Refused> {
    let refuse = |error| Refused::Error2 { xid, error };
    let (hdr, len) = header2::decode(msg, &DecodeLimits::PERMISSIVE).map_err(|e| match e {
        DecodeError2::UnknownProc(_) => refuse(Error2::InvalidProc),
        _ => refuse(Error2::BadXdr),
    })?;
    let (chunks, nomsg) = match &hdr.body {
        Body2::Msg(c) => (c, false),
        Body2::NoMsg(c) => (c, true),
        Body2::Optional(_) | Body2::Prop(_, PropForm::Optional(_)) => {
            return Err(refuse(Error2::InvalidOption))
        }
        Body2::Prop(_, PropForm::Proc) => return Err(refuse(Error2::InvalidProc)),
        Body2::Error(_) => {
            return Err(Refused::Ignored(DecodeError::UnknownProc(
                header2::RDMA2_ERROR,
            )))
        }
    };
    // A Reply where a Call should be: nothing to answer it with.
    if chunks.direction != Direction::Call {
        return Err(Refused::Ignored(DecodeError::UnknownProc(
            header2::RDMA2_MSG,
        )));
    }
    Ok(Call::from_lists(
        xid,
        RPCRDMA_VERSION_2,
        chunks.inv_handle,
        nomsg,
        &chunks.lists,
        &msg[len..],
    ))
}

impl Call {
    fn from_lists(
        xid: u32,
        version: u32,
        inv_handle: u32,
        nomsg: bool,
        lists: &ChunkLists<'_>,
        inline: &[u8],
    ) -> Self {
        Self {
            xid,
            version,
            inv_handle,
            nomsg,
            read_chunks: lists
                .read_list
                .chunks()
                .map(|c| ReadChunk {
                    position: c.position(),
                    segments: c.segments().map(|s| s.segment).collect(),
                })
                .collect(),
            write_chunks: lists
                .write_list
                .iter()
                .map(|c| c.iter().collect())
                .collect(),
            reply_chunk: lists.reply_chunk.map(|c| c.iter().collect()),
            inline: inline.to_vec(),
        }
    }

    /// Bytes the Read chunks carry in all.
    pub fn read_len(&self) -> usize {
        self.read_chunks.iter().map(ReadChunk::len).sum()
    }

    /// The whole RPC Call: the inline bytes with each Read chunk's data
    /// (`pulled[i]` for chunk `i`) put back at its position, followed by
    /// the XDR pad the Requester left out of both (RFC 8166, section
    /// 3.4.5.2). A Position Zero chunk is the whole Call. `None` when the
    /// positions do not fit the inline bytes.
    pub fn assemble(&self, pulled: &[Vec<u8>]) -> Option<Vec<u8>> {
        let mut chunks: Vec<(u32, &[u8])> = self
            .read_chunks
            .iter()
            .zip(pulled)
            .map(|(c, d)| (c.position, d.as_slice()))
            .collect();
        if chunks.len() != self.read_chunks.len() {
            return None;
        }
        chunks.sort_by_key(|(p, _)| *p);
        let mut out = Vec::with_capacity(self.inline.len() + self.read_len() + 4);
        let mut inline = self.inline.as_slice();
        for (position, data) in chunks {
            let take = (position as usize).checked_sub(out.len())?;
            let (head, rest) = inline.split_at_checked(take)?;
            out.extend_from_slice(head);
            inline = rest;
            out.extend_from_slice(data);
            if position != 0 {
                out.resize(out.len() + xdr_pad_size(data.len() as u32) as usize, 0);
            }
        }
        out.extend_from_slice(inline);
        Some(out)
    }

    /// The rkey to invalidate with the Reply's Send: in version 1 the one
    /// handle every chunk of the Call uses, if there is exactly one (as
    /// the Linux server decides, `svc_rdma_get_inv_rkey`); in version 2
    /// the handle the Call named in `rdma_inv_handle`, if it is one of
    /// its own (section 6.2.3), and no other.
    pub fn inv_rkey(&self) -> Option<u32> {
        let mut handles = self
            .read_chunks
            .iter()
            .flat_map(|c| c.segments.iter())
            .chain(self.write_chunks.iter().flatten())
            .chain(self.reply_chunk.iter().flatten())
            .map(|s| s.handle);
        if self.version == RPCRDMA_VERSION_2 {
            let named = self.inv_handle;
            return (named != 0 && handles.any(|h| h == named)).then_some(named);
        }
        let first = handles.next()?;
        handles.all(|h| h == first).then_some(first)
    }

    /// [`Self::inv_rkey`] of a Call whose only chunks are Read chunks (a
    /// WRITE's): the peer is done with that rkey once it has pulled them,
    /// before it answers, so another Reply may invalidate it without
    /// breaking this RPC's own data transfer (`send-inv-other-rpc`).
    pub fn pulled_rkey(&self) -> Option<u32> {
        if self.read_chunks.is_empty() || !self.write_chunks.is_empty() {
            return None;
        }
        self.reply_chunk.is_none().then(|| self.inv_rkey())?
    }
}

/// One RDMA Write of the Reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RdmaWrite {
    pub handle: u32,
    pub offset: u64,
    pub data: Vec<u8>,
}

/// What to touch after the Reply, for the FRWR checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// RDMA Write to these segments (a READ's Write chunk).
    Write(Vec<Segment>),
    /// RDMA Read from these segments (a WRITE's Read chunk).
    Read(Vec<Segment>),
}

/// Everything to do for one Call, in order: the RDMA Writes, then the
/// Send (`sends` times), then a disconnect, then the probe.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outgoing {
    pub writes: Vec<RdmaWrite>,
    pub send: Vec<u8>,
    pub sends: usize,
    /// Send With Invalidate of this rkey (the first Send only).
    pub invalidate: Option<u32>,
    pub disconnect: bool,
    pub probe: Option<Probe>,
    /// Hold the Reply until another Call offers an rkey, and invalidate
    /// that one with it (`send-inv-other-rpc`).
    pub hold: bool,
    /// The fault changed this reply.
    pub fired: bool,
    /// More `key=value` words for the fault's line: what it did, or why
    /// it did not fire.
    pub fault_words: String,
    /// The version the Reply is read in: its Call's (0 and 1 both mean
    /// version 1).
    pub version: u32,
}

impl Outgoing {
    /// The rkey the `i`th Send of the Reply invalidates: only the first
    /// Send's. A duplicate is a plain Send, so that it tests how the
    /// client handles a second Reply, not an rkey invalidated twice.
    pub fn invalidate_for(&self, i: usize) -> Option<u32> {
        self.invalidate.filter(|_| i == 0)
    }
}

/// What the connection allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Credits granted in each reply.
    pub credits: u32,
    /// Credits granted by `shrink-credits`.
    pub shrink_to: u32,
    /// Most bytes in one of our Sends: the reply inline threshold as the
    /// client computed it.
    pub send_limit: usize,
    /// The client's Receive buffer size, from its private data.
    pub client_recv: usize,
    /// Send With Invalidate may be used.
    pub send_inv: bool,
}

/// The Reply's transport header fields and payload, before encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Plan {
    xid: u32,
    /// The Call's version, which the Reply's is.
    version: u32,
    credit: u32,
    proc: MsgProc,
    write_list: Vec<Vec<Segment>>,
    reply_chunk: Option<Vec<Segment>>,
    inline: Vec<u8>,
    writes: Vec<RdmaWrite>,
    error: Option<RdmaError>,
    /// Why the honest Reply did not fit the Call's chunks: version 2
    /// says it (RDMA2_ERR_WRITE_RESOURCE, RDMA2_ERR_REPLY_RESOURCE) where
    /// version 1 has only ERR_CHUNK.
    short: Option<Short>,
}

/// What the Reply needed that the Call did not offer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Short {
    /// The first Write chunk, this many bytes.
    Write(usize),
    /// A Reply chunk, this many bytes.
    Reply(usize),
}

impl Short {
    fn error2(self) -> Error2 {
        let need = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        match self {
            Self::Write(n) => Error2::WriteResource {
                chunk_index: 1,
                length_needed: need(n),
            },
            Self::Reply(n) => Error2::ReplyResource {
                length_needed: need(n),
            },
        }
    }
}

/// Which chunk an honest Reply used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Used {
    Nothing,
    WriteChunk,
    ReplyChunk,
}

/// Spreads `data` over `segs` in order; returns the Writes and the
/// segments with the lengths written (zero for those not reached), or
/// `None` when `data` does not fit.
fn scatter(data: &[u8], segs: &[Segment]) -> Option<(Vec<RdmaWrite>, Vec<Segment>)> {
    let mut rest = data;
    let mut writes = Vec::new();
    let mut returned = Vec::new();
    for s in segs {
        let n = rest.len().min(s.length as usize);
        let (now, later) = rest.split_at(n);
        if n > 0 {
            writes.push(RdmaWrite {
                handle: s.handle,
                offset: s.offset,
                data: now.to_vec(),
            });
        }
        returned.push(Segment {
            length: n as u32,
            ..*s
        });
        rest = later;
    }
    rest.is_empty().then_some((writes, returned))
}

fn zeroed(segs: &[Segment]) -> Vec<Segment> {
    segs.iter().map(|s| Segment { length: 0, ..*s }).collect()
}

/// Header length of an RDMA_MSG or RDMA_NOMSG Reply with these lists,
/// in `version` (2 adds the direction and `rdma_inv_handle`).
fn header_len(version: u32, write_list: &[Vec<Segment>], reply_chunk: Option<&[Segment]>) -> usize {
    MIN_HEADER_LEN
        + if version == RPCRDMA_VERSION_2 { 8 } else { 0 }
        + write_list.iter().map(|c| 8 + 16 * c.len()).sum::<usize>()
        + reply_chunk.map_or(0, |c| 4 + 16 * c.len())
}

/// How a well-behaved responder answers `call` with `reply`.
fn honest(call: &Call, reply: &Reply, lim: &Limits) -> (Plan, Used) {
    let mut plan = Plan {
        xid: call.xid,
        version: call.version,
        credit: lim.credits,
        proc: MsgProc::Msg,
        write_list: call.write_chunks.iter().map(|c| zeroed(c)).collect(),
        reply_chunk: None,
        inline: Vec::new(),
        writes: Vec::new(),
        error: None,
        short: None,
    };
    let chunk_error = |mut plan: Plan, short: Short| {
        plan.error = Some(RdmaError::Chunk);
        plan.short = Some(short);
        (plan, Used::Nothing)
    };
    let whole = Short::Reply(reply.body.len());
    // The READ data goes into the first Write chunk when there is one
    // (RFC 8166, section 3.4.6; the Linux client provides one at most).
    if let (Some(r), Some(chunk)) = (&reply.ddp, call.write_chunks.first()) {
        let Some((writes, returned)) = scatter(&reply.body[r.clone()], chunk) else {
            return chunk_error(plan, Short::Write(r.len()));
        };
        plan.write_list[0] = returned;
        plan.writes = writes;
        plan.inline = reply.reduced();
        if header_len(call.version, &plan.write_list, None) + plan.inline.len() > lim.send_limit {
            return chunk_error(plan, whole);
        }
        return (plan, Used::WriteChunk);
    }
    // A Reply chunk, when the Call has one, is used whatever the Reply's
    // size, as the Linux server does (`svc_rdma_sendto`): a Long Reply
    // (section 3.5.3).
    let Some(chunk) = &call.reply_chunk else {
        if header_len(call.version, &plan.write_list, None) + reply.body.len() <= lim.send_limit {
            plan.inline = reply.body.clone();
            return (plan, Used::Nothing);
        }
        return chunk_error(plan, whole);
    };
    let Some((writes, returned)) = scatter(&reply.body, chunk) else {
        return chunk_error(plan, whole);
    };
    plan.proc = MsgProc::NoMsg;
    plan.reply_chunk = Some(returned);
    plan.writes = writes;
    (plan, Used::ReplyChunk)
}

/// Length of the longest RDMA_ERROR header (ERR_VERS), and of the
/// longest RDMA2_ERROR (RDMA2_ERR_WRITE_RESOURCE).
const ERROR_HEADER_LEN: usize = FIXED_LEN + 12;

impl Plan {
    /// The Reply's transport header, and the inline RPC bytes after it for
    /// RDMA_MSG. Fails only when a segment cannot be encoded (its offset
    /// plus length wraps): the buffer is as long as the lists need.
    fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        let len = header_len(self.version, &self.write_list, self.reply_chunk.as_deref())
            .max(ERROR_HEADER_LEN);
        let mut out = vec![0u8; len];
        let n = match self.error {
            Some(_) if self.version == RPCRDMA_VERSION_2 => {
                // Only an honest Reply that did not fit comes here in
                // version 2 (no fault is planted in it).
                let e = self.short.map_or(Error2::System, Short::error2);
                header2::encode_error(&mut out, self.xid, self.credit, &e)
            }
            None if self.version == RPCRDMA_VERSION_2 => header2::encode_chunked(
                &mut out,
                self.xid,
                self.credit,
                self.proc,
                Direction::Reply,
                0,
                [],
                self.write_list.iter().map(|c| c.iter().copied()),
                self.reply_chunk.as_ref().map(|c| c.iter().copied()),
            ),
            Some(e) => header::encode_error(&mut out, self.xid, self.credit, e),
            None => header::encode_chunked(
                &mut out,
                self.xid,
                self.credit,
                self.proc,
                [],
                self.write_list.iter().map(|c| c.iter().copied()),
                self.reply_chunk.as_ref().map(|c| c.iter().copied()),
            ),
        };
        out.truncate(n?);
        if self.error.is_none() && self.proc == MsgProc::Msg {
            out.extend_from_slice(&self.inline);
        }
        Ok(out)
    }
}

/// Makes the claimed lengths of `segs` the offered ones, plus 4 KiB on
/// the last segment (kept from wrapping its offset).
fn overclaim(segs: &mut [Segment], offered: &[Segment]) {
    for (s, o) in segs.iter_mut().zip(offered) {
        s.length = o.length;
    }
    if let Some(last) = segs.last_mut() {
        let room = u64::MAX - last.offset;
        last.length = last
            .length
            .saturating_add(4096)
            .min(u32::try_from(room).unwrap_or(u32::MAX));
    }
}

/// An rkey the client was never given: the highest index, which no
/// device of the tests hands out (Soft-RoCE's are below 2^19).
pub const UNKNOWN_RKEY: u32 = 0xffff_ff5a;

/// A made-up segment claiming `length` bytes, for the chunks the client
/// never offered: an rkey it was never given, a page-aligned offset.
fn unoffered(length: u32) -> Segment {
    Segment {
        handle: UNKNOWN_RKEY,
        length,
        offset: 0x10_0000,
    }
}

/// Adds a segment the client did not offer after `segs`: the offered
/// chunk's last handle, just past its end, claiming 4 KiB (kept from
/// wrapping its offset).
fn extra_segment(segs: &mut Vec<Segment>, offered: &[Segment]) {
    let Some(last) = offered.last() else {
        return;
    };
    let offset = last.offset.saturating_add(u64::from(last.length));
    segs.push(Segment {
        handle: last.handle,
        length: u32::try_from((u64::MAX - offset).min(4096)).unwrap_or(0),
        offset,
    });
}

/// The XDR pad of `data_len` bytes of READ data placed in `returned` (the
/// Write chunk as the honest Reply returns it) out of `offered`: the
/// segment after the data's that the Requester offers for it (RFC 8166,
/// section 3.4.6; C: `re_write_pad_mr`), the pad's zero bytes written at
/// its start and the segment returned with their length. Otherwise why
/// not: no such segment (the last offered, 4 bytes, that the data did not
/// reach), a length that needs no pad, or data that stops short of it.
fn write_pad(
    offered: &[Segment],
    returned: &mut [Segment],
    data_len: usize,
) -> Result<RdmaWrite, &'static str> {
    let reached = returned.iter().take_while(|s| s.length > 0).count();
    let pad = xdr_pad_size(data_len as u32) as usize;
    let Some(seg) = offered
        .last()
        .filter(|s| s.length == 4 && offered.len() >= 2)
    else {
        return Err("no-pad-segment");
    };
    if reached >= offered.len() {
        // The data ran into it: the last segment was a data segment.
        return Err("no-pad-segment");
    }
    if pad == 0 {
        return Err("no-pad-needed");
    }
    let full = returned[..reached]
        .iter()
        .zip(offered)
        .all(|(r, o)| r.length == o.length);
    if reached != offered.len() - 1 || !full {
        return Err("data-short-of-pad-segment");
    }
    returned[reached].length = pad as u32;
    Ok(RdmaWrite {
        handle: seg.handle,
        offset: seg.offset,
        data: vec![0; pad],
    })
}

/// Bytes `trailing-overflow` puts after a READ's inline RPC message: more
/// than the XDR pad a client's receive buffer keeps room for there. With
/// the header and the reduced Reply, more than RFC 8166's smallest inline
/// threshold (1024): the fault waits for a client that receives more.
const TRAILING_OVERFLOW: usize = 1024;

fn patch_word(buf: &mut [u8], word: usize, v: u32) {
    if let Some(w) = buf.get_mut(word * 4..word * 4 + 4) {
        w.copy_from_slice(&v.to_be_bytes());
    }
}

/// What to do for `call` with `reply`, spoiled by `fault` if one is due.
/// A fault that needs something the Call lacks (a chunk to misuse) leaves
/// the Reply alone and `fired` false.
pub fn respond(call: &Call, reply: &Reply, lim: &Limits, fault: Option<Fault>) -> Outgoing {
    let mut reply_body;
    let mut reply = reply;
    if fault == Some(Fault::WrongXid) {
        // The RPC Reply names the same other XID as the header.
        reply_body = Reply {
            body: reply.body.clone(),
            ddp: reply.ddp.clone(),
        };
        patch_word(&mut reply_body.body, 0, call.xid ^ 0x8000_0000);
        reply = &reply_body;
    }
    let (mut plan, mut used) = honest(call, reply, lim);
    if fault == Some(Fault::NomsgOtherXid) && used == Used::ReplyChunk {
        // The RPC Reply written into the Reply chunk names another XID;
        // the transport header keeps the Call's. Same length, same plan.
        let mut other = Reply {
            body: reply.body.clone(),
            ddp: reply.ddp.clone(),
        };
        patch_word(&mut other.body, 0, call.xid ^ 0x8000_0000);
        (plan, used) = honest(call, &other, lim);
    }
    let mut out = Outgoing {
        version: call.version,
        sends: 1,
        invalidate: call.inv_rkey().filter(|_| lim.send_inv),
        ..Outgoing::default()
    };
    let mut fired = true;
    match fault {
        None => fired = false,
        Some(Fault::CreditsZero) => plan.credit = 0,
        Some(Fault::CreditsMax) => plan.credit = u32::MAX,
        Some(Fault::ShrinkCredits) => plan.credit = lim.shrink_to,
        Some(Fault::WrongXid) => plan.xid ^= 0x8000_0000,
        Some(Fault::ErrVers) => plan.error = Some(RdmaError::Vers { low: 2, high: 2 }),
        Some(Fault::ErrChunk) => plan.error = Some(RdmaError::Chunk),
        Some(Fault::WriteChunkOverflow) if used == Used::WriteChunk => {
            overclaim(&mut plan.write_list[0], &call.write_chunks[0]);
        }
        Some(Fault::WriteChunkExtraSegment) if used == Used::WriteChunk => {
            extra_segment(&mut plan.write_list[0], &call.write_chunks[0]);
        }
        // READ data that fits inline, claimed as placed in a Write chunk
        // the Call did not offer, and left out of the inline Reply.
        Some(Fault::WriteListUnoffered)
            if call.write_chunks.is_empty()
                && used == Used::Nothing
                && plan.error.is_none()
                && reply.ddp.as_ref().is_some_and(|r| !r.is_empty()) =>
        {
            let len = reply.ddp.as_ref().map_or(0, |r| r.len());
            plan.write_list = vec![vec![unoffered(len as u32)]];
            plan.inline = reply.reduced();
        }
        // A Long Reply, as if the whole RPC Reply had been written to a
        // Reply chunk the Call did not offer (it is written nowhere); the
        // Write chunks offered come back unused, so that only the Reply
        // chunk is wrong.
        Some(Fault::ReplyChunkUnoffered) if call.reply_chunk.is_none() && plan.error.is_none() => {
            plan.proc = MsgProc::NoMsg;
            plan.write_list = call.write_chunks.iter().map(|c| zeroed(c)).collect();
            plan.writes.clear();
            plan.reply_chunk = Some(vec![unoffered(reply.body.len() as u32)]);
        }
        Some(Fault::ReplyChunkOverflow) if used == Used::ReplyChunk => {
            if let (Some(r), Some(o)) = (plan.reply_chunk.as_mut(), &call.reply_chunk) {
                overclaim(r, o);
            }
        }
        Some(Fault::NomsgNoReplyChunk) => {
            plan.proc = MsgProc::NoMsg;
            plan.write_list.clear();
            plan.reply_chunk = None;
            plan.writes.clear();
        }
        // Whether or not the client allows Send With Invalidate.
        Some(Fault::SendInvUnknown) => out.invalidate = Some(UNKNOWN_RKEY),
        // The other Call's rkey is set when it comes (main.rs).
        Some(Fault::SendInvOtherRpc) if call.inv_rkey().is_some() => out.hold = true,
        Some(Fault::FrwrWriteAfterReply) if used == Used::WriteChunk => {
            out.probe = Some(Probe::Write(call.write_chunks[0].clone()));
        }
        // A Responder that writes the XDR pad of odd-length READ data
        // into the segment the Requester offers for it.
        Some(Fault::WritePad) => {
            let data_len = reply.ddp.as_ref().map_or(0, |r| r.len());
            let pad = match (used, call.write_chunks.first()) {
                (Used::WriteChunk, Some(offered)) => {
                    write_pad(offered, &mut plan.write_list[0], data_len)
                }
                _ => Err("no-pad-segment"),
            };
            match pad {
                Ok(w) => {
                    out.fault_words = format!(
                        "pad_bytes={} rkey={:#010x} offset={:#x} data_bytes={data_len}",
                        w.data.len(),
                        w.handle,
                        w.offset
                    );
                    plan.writes.push(w);
                }
                Err(reason) => {
                    fired = false;
                    out.fault_words = format!("reason={reason} data_bytes={data_len}");
                }
            }
        }
        Some(Fault::TrailingInline) if used == Used::WriteChunk => {
            out.fault_words = "bytes=4".into();
        }
        Some(Fault::TrailingOverflow) if used == Used::WriteChunk => {
            out.fault_words = format!("bytes={TRAILING_OVERFLOW}");
        }
        Some(Fault::NomsgOtherXid) if used == Used::ReplyChunk => {
            out.fault_words = format!("rpc_xid={:#010x}", call.xid ^ 0x8000_0000);
        }
        Some(Fault::FrwrReadAfterReply) if !call.read_chunks.is_empty() => {
            out.probe = Some(Probe::Read(
                call.read_chunks
                    .iter()
                    .flat_map(|c| c.segments.iter().copied())
                    .collect(),
            ));
        }
        Some(
            Fault::ShortHeader
            | Fault::TruncatedHeader
            | Fault::BadVersion
            | Fault::BadProc
            | Fault::DuplicateReply
            | Fault::ReplyTooLong
            | Fault::DisconnectMidReply
            | Fault::Silence,
        ) => {}
        Some(_) => fired = false,
    }
    out.fired = fired;
    out.send = match plan.encode() {
        Ok(send) => send,
        // A segment that wraps. parse_call refuses such segments, the
        // Reply's are no longer than the Call's, and an overflowing claim
        // from a fault is kept in range where it is made; should one come
        // through all the same, ERR_CHUNK answers it, as a Call we cannot
        // answer, rather than a panic.
        Err(_) => {
            plan.error = Some(RdmaError::Chunk);
            error_reply(plan.xid, plan.credit, RdmaError::Chunk)
        }
    };
    let trailing = match fault.filter(|_| fired && plan.error.is_none()) {
        Some(Fault::TrailingInline) => 4,
        Some(Fault::TrailingOverflow) => TRAILING_OVERFLOW,
        _ => 0,
    };
    if trailing > 0 {
        // Within what the client receives, or it is another fault (a
        // Receive too short): then the next such READ is tried.
        if out.send.len() + trailing <= lim.client_recv {
            out.send.resize(out.send.len() + trailing, 0xa5);
        } else {
            out.fired = false;
            out.fault_words = format!("bytes={trailing} reason=exceeds-receive-size");
        }
    }
    if plan.error.is_some() {
        // An RDMA_ERROR places nothing.
        plan.writes.clear();
    }
    out.writes = std::mem::take(&mut plan.writes);
    match fault.filter(|_| fired) {
        Some(Fault::ShortHeader) => {
            out.writes.clear();
            out.send.truncate(12);
        }
        Some(Fault::TruncatedHeader) => {
            out.writes.clear();
            // Without segments the header always encodes.
            if let Ok(mut h) = (Plan {
                write_list: Vec::new(),
                reply_chunk: None,
                inline: Vec::new(),
                error: None,
                proc: MsgProc::Msg,
                ..plan
            })
            .encode()
            {
                // Fixed fields and the Read and Write list ends: the Reply
                // chunk's discriminator is missing.
                h.truncate(MIN_HEADER_LEN - 4);
                out.send = h;
            }
        }
        Some(Fault::BadVersion) => patch_word(&mut out.send, 1, 2),
        Some(Fault::BadProc) => patch_word(&mut out.send, 3, 5),
        Some(Fault::DuplicateReply) => out.sends = 2,
        Some(Fault::ReplyTooLong) => {
            let len = lim.client_recv + 4096;
            out.send.resize(len.max(out.send.len()), 0);
        }
        Some(Fault::DisconnectMidReply) => {
            out.sends = 0;
            out.disconnect = true;
        }
        Some(Fault::Silence) => {
            out.writes.clear();
            out.sends = 0;
        }
        _ => {}
    }
    if out.sends == 0 {
        out.invalidate = None;
    }
    out
}

/// The transport header answering a refused Call.
pub fn error_reply(xid: u32, credits: u32, error: RdmaError) -> Vec<u8> {
    let mut out = vec![0u8; ERROR_HEADER_LEN];
    // An RDMA_ERROR has no segments: it fails only for want of room,
    // which ERROR_HEADER_LEN gives (the tests encode both kinds).
    let n = header::encode_error(&mut out, xid, credits, error).unwrap_or(0);
    out.truncate(n);
    out
}

/// [`error_reply`] with the refused Call's `rdma_vers` word (`vers`)
/// where the version goes, as the Linux server answers (an ERR_VERS to a
/// version 2 Call says 2 there).
pub fn error_reply_as(xid: u32, vers: u32, credits: u32, error: RdmaError) -> Vec<u8> {
    let mut out = error_reply(xid, credits, error);
    if let Some(w) = out.get_mut(4..8) {
        w.copy_from_slice(&vers.to_be_bytes());
    }
    out
}

/// The RDMA2_ERROR header answering a refused version 2 Call.
pub fn error_reply_2(xid: u32, credits: u32, error: &Error2) -> Vec<u8> {
    let mut out = vec![0u8; ERROR_HEADER_LEN];
    let n = header2::encode_error(&mut out, xid, credits, error).unwrap_or(0);
    out.truncate(n);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcrdma_proto::proto::header::{ReadSegment, ReplyKind};

    const LIM: Limits = Limits {
        credits: 32,
        shrink_to: 4,
        send_limit: 4096,
        client_recv: 4096,
        send_inv: true,
    };

    fn seg(handle: u32, length: u32, offset: u64) -> Segment {
        Segment {
            handle,
            length,
            offset,
        }
    }

    fn encode_call(
        proc: MsgProc,
        reads: &[ReadSegment],
        writes: &[&[Segment]],
        reply: Option<&[Segment]>,
        inline: &[u8],
    ) -> Vec<u8> {
        let msg = header::Message {
            xid: 0x1234_5678,
            credit: 128,
            proc,
            read_list: reads,
            write_list: writes,
            reply_chunk: reply,
        };
        let mut out = vec![0; 4096];
        let n = msg.encode(&mut out).unwrap();
        out.truncate(n);
        out.extend_from_slice(inline);
        out
    }

    /// Decodes a reply as the rpcrdma-rs client does.
    fn client_view(send: &[u8]) -> Result<(u32, u32, ReplyKind), String> {
        let (h, _) = header::decode(send, &DecodeLimits::REPLY).map_err(|e| format!("{e:?}"))?;
        let k = h.classify_reply().map_err(|e| format!("{e:?}"))?;
        Ok((h.xid, h.credit, k))
    }

    fn read_reply(len: usize) -> Reply {
        let mut e = crate::xdr::Enc::default();
        e.u32(0x1234_5678).u32(1).u32(0).u32(0).u32(0).u32(0);
        e.u32(0)
            .bool(false)
            .u32(len as u32)
            .bool(true)
            .u32(len as u32);
        let at = e.len();
        e.fixed(&vec![7u8; len]);
        Reply {
            body: e.0,
            ddp: Some(at..at + len),
        }
    }

    #[test]
    fn parses_a_call_and_puts_read_chunks_back() {
        let rs = |pos, h| ReadSegment {
            position: pos,
            segment: seg(h, 3, 0x1000),
        };
        // Head of 8 bytes, a 6-byte item in two segments at position 8,
        // then a 4-byte tail (its leading pad left out).
        let wire = encode_call(
            MsgProc::Msg,
            &[rs(8, 5), rs(8, 6)],
            &[],
            None,
            b"HEADHEADtail",
        );
        let call = parse_call(&wire).unwrap();
        assert_eq!(call.xid, 0x1234_5678);
        assert_eq!(call.read_chunks.len(), 1);
        assert_eq!(call.read_len(), 6);
        assert_eq!(call.inv_rkey(), None);
        let whole = call.assemble(&[b"abcdef".to_vec()]).unwrap();
        assert_eq!(whole, b"HEADHEADabcdef\0\0tail");
        assert!(call.assemble(&[]).is_none());

        // A Long Call: everything at position zero, no pad added.
        let wire = encode_call(MsgProc::NoMsg, &[rs(0, 9)], &[], None, b"");
        let call = parse_call(&wire).unwrap();
        assert!(call.nomsg);
        assert_eq!(call.inv_rkey(), Some(9));
        assert_eq!(call.assemble(&[b"xyz".to_vec()]).unwrap(), b"xyz");

        // A position beyond the inline bytes.
        let wire = encode_call(MsgProc::Msg, &[rs(16, 5)], &[], None, b"HEAD");
        assert!(parse_call(&wire)
            .unwrap()
            .assemble(&[b"a".to_vec()])
            .is_none());
    }

    #[test]
    fn only_a_call_of_read_chunks_alone_offers_a_pulled_rkey() {
        let rs = |h| ReadSegment {
            position: 8,
            segment: seg(h, 4096, 0x1000),
        };
        let parsed = |reads: &[ReadSegment], writes: &[&[Segment]], reply| {
            let wire = encode_call(MsgProc::Msg, reads, writes, reply, b"HEADHEAD");
            parse_call(&wire).unwrap()
        };
        // A WRITE's Read chunk: done with once pulled.
        assert_eq!(parsed(&[rs(7)], &[], None).pulled_rkey(), Some(7));
        // Two rkeys: no one handle to invalidate.
        assert_eq!(parsed(&[rs(7), rs(8)], &[], None).pulled_rkey(), None);
        // A Write or Reply chunk is used when the Call is answered, even
        // under the same rkey.
        let w = [seg(7, 4096, 0x2000)];
        assert_eq!(parsed(&[rs(7)], &[&w], None).pulled_rkey(), None);
        assert_eq!(parsed(&[], &[&w], None).pulled_rkey(), None);
        assert_eq!(parsed(&[], &[&w], None).inv_rkey(), Some(7));
        assert_eq!(parsed(&[rs(7)], &[], Some(&w)).pulled_rkey(), None);
        // No chunk at all.
        assert_eq!(parsed(&[], &[], None).pulled_rkey(), None);
    }

    #[test]
    fn refuses_bad_calls_as_rfc_8166_says() {
        assert_eq!(parse_call(&[0; 8]), Err(Refused::Short));
        let mut wire = encode_call(MsgProc::Msg, &[], &[], None, b"");
        wire[7] = 2;
        assert_eq!(
            parse_call(&wire),
            Err(Refused::Error {
                xid: 0x1234_5678,
                vers: 2,
                error: RdmaError::Vers { low: 1, high: 1 }
            })
        );
        let mut wire = encode_call(MsgProc::Msg, &[], &[], None, b"");
        wire[19] = 7;
        assert!(matches!(
            parse_call(&wire),
            Err(Refused::Error {
                error: RdmaError::Chunk,
                ..
            })
        ));
        let e = error_reply(5, 32, RdmaError::Chunk);
        assert!(matches!(parse_call(&e), Err(Refused::Ignored(_))));
    }

    /// A version 2 Call: `inv` its `rdma_inv_handle`.
    fn encode_call_2(
        proc: MsgProc,
        inv: u32,
        writes: &[&[Segment]],
        reply: Option<&[Segment]>,
        inline: &[u8],
    ) -> Vec<u8> {
        let mut out = vec![0; 4096];
        let n = header2::encode_chunked(
            &mut out,
            0x1234_5678,
            128,
            proc,
            Direction::Call,
            inv,
            [],
            writes.iter().map(|c| c.iter().copied()),
            reply.map(|c| c.iter().copied()),
        )
        .unwrap();
        out.truncate(n);
        out.extend_from_slice(inline);
        out
    }

    #[test]
    fn version_2_calls_are_answered_in_version_2() {
        let chunk = [seg(1, 4096, 0x10000), seg(2, 4096, 0x20000)];
        let wire = encode_call_2(MsgProc::Msg, 2, &[&chunk], None, b"call");
        let call = parse_call_as(&wire, Serve::Two).unwrap();
        assert_eq!((call.version, call.inv_handle), (2, 2));
        let reply = read_reply(5001);
        let out = respond(&call, &reply, &LIM, None);
        // The one handle the Call named, not what version 1 would choose.
        assert_eq!(out.invalidate, Some(2));
        assert_eq!((out.writes[1].handle, out.writes[1].data.len()), (2, 905));
        let (h, len) = header2::decode(&out.send, &DecodeLimits::REPLY).unwrap();
        assert_eq!((h.vers, h.xid, h.credit), (2, 0x1234_5678, 32));
        let Body2::Msg(c) = h.body else {
            panic!("not an RDMA2_MSG: {:?}", h.body);
        };
        assert_eq!((c.direction, c.inv_handle), (Direction::Reply, 0));
        let returned: Vec<Vec<Segment>> = c
            .lists
            .write_list
            .iter()
            .map(|w| w.iter().collect())
            .collect();
        assert_eq!(
            returned,
            vec![vec![seg(1, 4096, 0x10000), seg(2, 905, 0x20000)]]
        );
        assert_eq!(&out.send[len..], &reply.reduced()[..]);

        // No handle named, or one the Call does not hold: no Send With
        // Invalidate, though every chunk uses one handle.
        let one = [seg(7, 8192, 0x10000)];
        for inv in [0, 8] {
            let wire = encode_call_2(MsgProc::Msg, inv, &[&one], None, b"call");
            let call = parse_call_as(&wire, Serve::Two).unwrap();
            assert_eq!(
                respond(&call, &read_reply(100), &LIM, None).invalidate,
                None
            );
        }
        let wire = encode_call(MsgProc::Msg, &[], &[&one], None, b"call");
        assert_eq!(parse_call(&wire).unwrap().inv_rkey(), Some(7));

        // A Long Reply in an RDMA2_NOMSG.
        let rc = [seg(4, 8192, 0x40000)];
        let wire = encode_call_2(MsgProc::Msg, 4, &[], Some(&rc), b"call");
        let call = parse_call_as(&wire, Serve::Two).unwrap();
        let big = Reply {
            body: vec![5; 6000],
            ddp: None,
        };
        let out = respond(&call, &big, &LIM, None);
        let (h, len) = header2::decode(&out.send, &DecodeLimits::REPLY).unwrap();
        let Body2::NoMsg(c) = h.body else {
            panic!("not an RDMA2_NOMSG: {:?}", h.body);
        };
        assert_eq!(c.direction, Direction::Reply);
        assert_eq!(
            c.lists.reply_chunk.map(|r| r.iter().collect::<Vec<_>>()),
            Some(vec![seg(4, 6000, 0x40000)])
        );
        assert_eq!(len, out.send.len());
        assert_eq!(out.invalidate, Some(4));

        // A version 1 Call to a version 2 peer is answered in version 1.
        let wire = encode_call(MsgProc::Msg, &[], &[&chunk], None, b"call");
        let call = parse_call_as(&wire, Serve::Two).unwrap();
        assert_eq!(call.version, 1);
        let out = respond(&call, &read_reply(5001), &LIM, None);
        assert!(client_view(&out.send).is_ok());
    }

    #[test]
    fn version_2_replies_say_which_chunk_was_short() {
        let chunk = [seg(1, 4096, 0x10000)];
        let wire = encode_call_2(MsgProc::Msg, 0, &[&chunk], None, b"call");
        let call = parse_call_as(&wire, Serve::Two).unwrap();
        let out = respond(&call, &read_reply(9000), &LIM, None);
        assert!(out.writes.is_empty());
        let (h, _) = header2::decode(&out.send, &DecodeLimits::REPLY).unwrap();
        assert_eq!(
            h.body,
            Body2::Error(Error2::WriteResource {
                chunk_index: 1,
                length_needed: 9000
            })
        );
        let wire = encode_call_2(MsgProc::Msg, 0, &[], None, b"call");
        let call = parse_call_as(&wire, Serve::Two).unwrap();
        let big = Reply {
            body: vec![5; 6000],
            ddp: None,
        };
        let out = respond(&call, &big, &LIM, None);
        let (h, _) = header2::decode(&out.send, &DecodeLimits::REPLY).unwrap();
        assert_eq!(
            h.body,
            Body2::Error(Error2::ReplyResource {
                length_needed: 6000
            })
        );
    }

    #[test]
    fn version_2_calls_are_refused_as_the_draft_and_linux_say() {
        let wire = encode_call_2(MsgProc::Msg, 0, &[], None, b"call");
        // A version 1 peer answers ERR_VERS with the Call's rdma_vers word,
        // as the Linux server does; both decoders read it.
        let refused = parse_call_as(&wire, Serve::One);
        assert_eq!(
            refused,
            Err(Refused::Error {
                xid: 0x1234_5678,
                vers: 2,
                error: RdmaError::Vers { low: 1, high: 1 }
            })
        );
        let send = error_reply_as(0x1234_5678, 2, 32, RdmaError::Vers { low: 1, high: 1 });
        assert_eq!(&send[4..8], &2u32.to_be_bytes());
        let (h, _) = header2::decode(&send, &DecodeLimits::REPLY).unwrap();
        assert_eq!(h.body, Body2::Error(Error2::Vers { low: 1, high: 1 }));
        assert_eq!(
            client_view(&send).unwrap().2,
            ReplyKind::Error(RdmaError::Vers { low: 1, high: 1 })
        );

        // A version 2 peer: a version it does not know gets 1..2.
        let mut v3 = wire.clone();
        v3[7] = 3;
        assert!(matches!(
            parse_call_as(&v3, Serve::Two),
            Err(Refused::Error {
                error: RdmaError::Vers { low: 1, high: 2 },
                ..
            })
        ));
        let Err(Refused::Error { vers, .. }) = parse_call_as(&v3, Serve::Two) else {
            panic!()
        };
        assert_eq!(vers, 3);
        // A procedure the draft does not define: RDMA2_ERR_INVALID_PROC.
        let mut p10 = wire.clone();
        p10[15] = 10;
        assert_eq!(
            parse_call_as(&p10, Serve::Two),
            Err(Refused::Error2 {
                xid: 0x1234_5678,
                error: Error2::InvalidProc
            })
        );
        // The property operations, not supported: their optional form as
        // an unknown optional type, their procedure form as an unknown
        // procedure.
        let mut out = vec![0; 64];
        for (form, error) in [
            (PropForm::Optional(Direction::Call), Error2::InvalidOption),
            (PropForm::Proc, Error2::InvalidProc),
        ] {
            let upd = header2::PropOpOut::UpdProp { now: &[] };
            let n = header2::encode_prop(&mut out, 9, 1, &upd, form).unwrap();
            assert_eq!(
                parse_call_as(&out[..n], Serve::Two),
                Err(Refused::Error2 { xid: 9, error })
            );
        }
        // A header cut short: RDMA2_ERR_BAD_XDR.
        assert_eq!(
            parse_call_as(&wire[..20], Serve::Two),
            Err(Refused::Error2 {
                xid: 0x1234_5678,
                error: Error2::BadXdr
            })
        );
        // An optional type the draft does not define.
        let mut out = vec![0; 64];
        let opt = header2::Header2 {
            vers: 2,
            xid: 9,
            credit: 1,
            body: Body2::Optional(header2::Optional {
                direction: Direction::Call,
                opttype: 77,
                info: b"abc",
            }),
        };
        let n = opt.encode(&mut out).unwrap();
        assert_eq!(
            parse_call_as(&out[..n], Serve::Two),
            Err(Refused::Error2 {
                xid: 9,
                error: Error2::InvalidOption
            })
        );
        // A Reply where a Call should be is not answered.
        let mut reply = vec![0; 4096];
        let n = header2::encode_chunked(
            &mut reply,
            5,
            1,
            MsgProc::Msg,
            Direction::Reply,
            0,
            [],
            std::iter::empty::<[Segment; 0]>(),
            None::<[Segment; 0]>,
        )
        .unwrap();
        assert!(matches!(
            parse_call_as(&reply[..n], Serve::Two),
            Err(Refused::Ignored(_))
        ));
        let e = error_reply_2(5, 32, &Error2::System);
        assert!(matches!(
            parse_call_as(&e, Serve::Two),
            Err(Refused::Ignored(_))
        ));
    }

    #[test]
    fn read_data_goes_into_the_write_chunk() {
        let chunk = [
            seg(1, 4096, 0x10000),
            seg(2, 4096, 0x20000),
            seg(3, 4, 0x30000),
        ];
        let wire = encode_call(MsgProc::Msg, &[], &[&chunk], None, b"call");
        let call = parse_call(&wire).unwrap();
        let reply = read_reply(5001);
        let out = respond(&call, &reply, &LIM, None);
        assert!(!out.fired);
        assert_eq!(out.sends, 1);
        assert_eq!(out.invalidate, None);
        assert_eq!(out.writes.len(), 2);
        assert_eq!(out.writes[0].data.len(), 4096);
        assert_eq!((out.writes[1].handle, out.writes[1].data.len()), (2, 905));
        let (xid, credit, kind) = client_view(&out.send).unwrap();
        assert_eq!((xid, credit), (0x1234_5678, 32));
        assert_eq!(
            kind,
            ReplyKind::Inline {
                write_chunk_len: 5001
            }
        );
        // The inline part is the reduced reply.
        let hdr = header::decode(&out.send, &DecodeLimits::REPLY).unwrap().1;
        assert_eq!(&out.send[hdr..], &reply.reduced()[..]);

        // Too much data for the chunk: ERR_CHUNK, nothing placed.
        let out = respond(&call, &read_reply(9000), &LIM, None);
        assert!(out.writes.is_empty());
        assert_eq!(
            client_view(&out.send).unwrap().2,
            ReplyKind::Error(RdmaError::Chunk)
        );
    }

    #[test]
    fn small_replies_go_inline_and_large_ones_in_the_reply_chunk() {
        let rc = [seg(4, 8192, 0x40000), seg(4, 8192, 0x50000)];
        let wire = encode_call(MsgProc::Msg, &[], &[], Some(&rc), b"call");
        let call = parse_call(&wire).unwrap();
        assert_eq!(call.inv_rkey(), Some(4));
        let small = Reply {
            body: vec![1; 100],
            ddp: None,
        };
        let out = respond(&call, &small, &LIM, None);
        assert_eq!(out.writes.len(), 1);
        assert_eq!(out.writes[0].data, small.body);
        assert_eq!(out.invalidate, Some(4));
        assert_eq!(
            client_view(&out.send).unwrap().2,
            ReplyKind::Long {
                reply_chunk_len: 100
            }
        );
        // A duplicate Reply: the first Send invalidates, the second not.
        let dup = respond(&call, &small, &LIM, Some(Fault::DuplicateReply));
        assert_eq!(dup.sends, 2);
        assert_eq!(dup.invalidate_for(0), Some(4));
        assert_eq!(dup.invalidate_for(1), None);

        // Without a Reply chunk, a small Reply goes inline.
        let wire = encode_call(MsgProc::Msg, &[], &[], None, b"call");
        let out = respond(&parse_call(&wire).unwrap(), &small, &LIM, None);
        assert!(out.writes.is_empty());
        assert_eq!(out.invalidate, None);
        assert_eq!(
            client_view(&out.send).unwrap().2,
            ReplyKind::Inline { write_chunk_len: 0 }
        );
        assert_eq!(&out.send[out.send.len() - 100..], &small.body[..]);

        let big = Reply {
            body: vec![2; 10000],
            ddp: None,
        };
        let out = respond(&call, &big, &LIM, None);
        assert_eq!(&out.send[12..16], &header::RDMA_NOMSG.to_be_bytes());
        assert_eq!(out.writes.len(), 2);
        assert_eq!(out.writes[1].data.len(), 10000 - 8192);
        assert_eq!(
            client_view(&out.send).unwrap().2,
            ReplyKind::Long {
                reply_chunk_len: 10000
            }
        );

        // No Reply chunk for a large reply: ERR_CHUNK.
        let wire = encode_call(MsgProc::Msg, &[], &[], None, b"call");
        let out = respond(&parse_call(&wire).unwrap(), &big, &LIM, None);
        assert_eq!(
            client_view(&out.send).unwrap().2,
            ReplyKind::Error(RdmaError::Chunk)
        );
        // Send With Invalidate only when allowed.
        let lim = Limits {
            send_inv: false,
            ..LIM
        };
        assert_eq!(respond(&call, &small, &lim, None).invalidate, None);
    }

    #[test]
    fn faults_spoil_the_reply_as_named() {
        let chunk = [seg(1, 8192, 0x10000)];
        let wire = encode_call(MsgProc::Msg, &[], &[&chunk], None, b"call");
        let call = parse_call(&wire).unwrap();
        let reply = read_reply(5000);
        let run = |f| respond(&call, &reply, &LIM, Some(f));

        let out = run(Fault::ShortHeader);
        assert!(out.fired && out.writes.is_empty());
        assert_eq!(out.send.len(), 12);
        let out = run(Fault::TruncatedHeader);
        assert_eq!(
            header::decode(&out.send, &DecodeLimits::REPLY),
            Err(DecodeError::Truncated)
        );
        let out = run(Fault::BadVersion);
        assert_eq!(
            header::decode(&out.send, &DecodeLimits::REPLY),
            Err(DecodeError::BadVersion(2))
        );
        let out = run(Fault::BadProc);
        assert_eq!(
            header::decode(&out.send, &DecodeLimits::REPLY),
            Err(DecodeError::UnknownProc(5))
        );
        let out = run(Fault::ErrVers);
        assert!(out.writes.is_empty());
        assert_eq!(
            client_view(&out.send).unwrap().2,
            ReplyKind::Error(RdmaError::Vers { low: 2, high: 2 })
        );
        let out = run(Fault::ErrChunk);
        assert_eq!(
            client_view(&out.send).unwrap().2,
            ReplyKind::Error(RdmaError::Chunk)
        );
        assert_eq!(client_view(&run(Fault::CreditsZero).send).unwrap().1, 0);
        assert_eq!(
            client_view(&run(Fault::CreditsMax).send).unwrap().1,
            u32::MAX
        );

        let out = run(Fault::WrongXid);
        let (xid, _, _) = client_view(&out.send).unwrap();
        assert_eq!(xid, 0x9234_5678);
        let hdr = header::decode(&out.send, &DecodeLimits::REPLY).unwrap().1;
        assert_eq!(&out.send[hdr..hdr + 4], &0x9234_5678u32.to_be_bytes());

        let out = run(Fault::DuplicateReply);
        assert_eq!(out.sends, 2);
        assert_eq!(out.invalidate_for(1), None);
        assert_eq!(run(Fault::ReplyTooLong).send.len(), 8192);

        let out = run(Fault::WriteChunkOverflow);
        assert!(out.fired);
        assert_eq!(
            client_view(&out.send).unwrap().2,
            ReplyKind::Inline {
                write_chunk_len: 8192 + 4096
            }
        );
        // One segment more than the one offered, claiming 4 KiB more.
        let out = run(Fault::WriteChunkExtraSegment);
        assert!(out.fired);
        let hdr = header::decode(&out.send, &DecodeLimits::REPLY).unwrap().0;
        let lists = hdr.chunk_lists().unwrap();
        let segs: Vec<Segment> = lists.write_list.first().unwrap().iter().collect();
        assert_eq!(segs, [seg(1, 5000, 0x10000), seg(1, 4096, 0x10000 + 8192)]);
        assert_eq!(
            client_view(&out.send).unwrap().2,
            ReplyKind::Inline {
                write_chunk_len: 5000 + 4096
            }
        );
        // An rkey never offered, allowed or not; another Call's, later.
        assert_eq!(run(Fault::SendInvUnknown).invalidate, Some(UNKNOWN_RKEY));
        let no_inv = Limits {
            send_inv: false,
            ..LIM
        };
        let out = respond(&call, &reply, &no_inv, Some(Fault::SendInvUnknown));
        assert!(out.fired && out.invalidate == Some(UNKNOWN_RKEY));
        let out = run(Fault::SendInvOtherRpc);
        assert!(out.fired && out.hold && out.sends == 1);
        // Not applicable without a Reply chunk: an honest reply.
        let out = run(Fault::ReplyChunkOverflow);
        assert!(!out.fired);
        assert_eq!(out, respond(&call, &reply, &LIM, None));

        let out = run(Fault::NomsgNoReplyChunk);
        assert!(out.writes.is_empty());
        assert_eq!(out.send.len(), MIN_HEADER_LEN);
        assert_eq!(
            header::decode(&out.send, &DecodeLimits::REPLY)
                .unwrap()
                .0
                .classify_reply(),
            Err(header::ReplyError::EmptyReplyChunk)
        );

        let out = run(Fault::DisconnectMidReply);
        assert!(out.disconnect && out.sends == 0 && !out.writes.is_empty());
        let out = run(Fault::Silence);
        assert!(out.sends == 0 && out.writes.is_empty() && !out.disconnect);

        let out = run(Fault::FrwrWriteAfterReply);
        assert_eq!(out.probe, Some(Probe::Write(chunk.to_vec())));
        assert_eq!(out.sends, 1);
        assert!(!run(Fault::FrwrReadAfterReply).fired);
    }

    #[test]
    fn chunk_faults_that_need_a_chunk() {
        let rc = [seg(4, 8192, 0x40000)];
        let wire = encode_call(MsgProc::Msg, &[], &[], Some(&rc), b"call");
        let call = parse_call(&wire).unwrap();
        let big = Reply {
            body: vec![2; 5000],
            ddp: None,
        };
        let out = respond(&call, &big, &LIM, Some(Fault::ReplyChunkOverflow));
        assert!(out.fired);
        assert_eq!(
            client_view(&out.send).unwrap().2,
            ReplyKind::Long {
                reply_chunk_len: 8192 + 4096
            }
        );
        assert!(!respond(&call, &big, &LIM, Some(Fault::WriteChunkOverflow)).fired);
        assert!(!respond(&call, &big, &LIM, Some(Fault::FrwrWriteAfterReply)).fired);

        let rs = ReadSegment {
            position: 8,
            segment: seg(7, 64, 0x7000),
        };
        let wire = encode_call(MsgProc::Msg, &[rs], &[], None, b"HEADHEAD");
        let call = parse_call(&wire).unwrap();
        let small = Reply {
            body: vec![1; 100],
            ddp: None,
        };
        let out = respond(&call, &small, &LIM, Some(Fault::FrwrReadAfterReply));
        assert!(out.fired);
        assert_eq!(out.probe, Some(Probe::Read(vec![rs.segment])));
    }

    #[test]
    fn nomsg_other_xid_spoils_only_the_reply_chunk() {
        let rc = [seg(4, 8192, 0x40000)];
        let wire = encode_call(MsgProc::Msg, &[], &[], Some(&rc), b"call");
        let call = parse_call(&wire).unwrap();
        let mut body = vec![1; 100];
        body[..4].copy_from_slice(&0x1234_5678u32.to_be_bytes());
        let small = Reply { body, ddp: None };
        let out = respond(&call, &small, &LIM, Some(Fault::NomsgOtherXid));
        assert!(out.fired);
        assert_eq!(out.fault_words, "rpc_xid=0x92345678");
        assert_eq!(client_view(&out.send).unwrap().0, 0x1234_5678);
        assert_eq!(&out.writes[0].data[..4], &0x9234_5678u32.to_be_bytes());
        assert_eq!(&out.writes[0].data[4..], &small.body[4..]);
        // Without a Reply chunk it waits, and the Reply is honest.
        let wire = encode_call(MsgProc::Msg, &[], &[], None, b"call");
        let out = respond(
            &parse_call(&wire).unwrap(),
            &small,
            &LIM,
            Some(Fault::NomsgOtherXid),
        );
        assert!(!out.fired);
        assert_eq!(&out.send[out.send.len() - 100..], &small.body[..]);
    }

    #[test]
    fn trailing_overflow_follows_the_inline_message() {
        let chunk = [seg(1, 8192, 0x10000)];
        let wire = encode_call(MsgProc::Msg, &[], &[&chunk], None, b"call");
        let call = parse_call(&wire).unwrap();
        let reply = read_reply(5001);
        let out = respond(&call, &reply, &LIM, Some(Fault::TrailingOverflow));
        assert!(out.fired);
        let hdr = header::decode(&out.send, &DecodeLimits::REPLY).unwrap().1;
        let inline = reply.reduced();
        assert_eq!(&out.send[hdr..hdr + inline.len()], &inline[..]);
        assert_eq!(out.send[hdr + inline.len()..], [0xa5; TRAILING_OVERFLOW]);
        // Past what the client receives it would be another fault: none.
        let small = Limits {
            client_recv: 1024,
            ..LIM
        };
        let out = respond(&call, &reply, &small, Some(Fault::TrailingOverflow));
        assert!(!out.fired);
        assert_eq!(&out.send[hdr..], &inline[..]);
        // No Write chunk: it waits.
        let wire = encode_call(MsgProc::Msg, &[], &[], None, b"call");
        let out = respond(
            &parse_call(&wire).unwrap(),
            &read_reply(100),
            &LIM,
            Some(Fault::TrailingOverflow),
        );
        assert!(!out.fired);
    }

    #[test]
    fn headers_of_any_size_and_unencodable_segments() {
        // A Reply chunk whose header alone is larger than 64 KiB (more
        // segments than parse_call takes, but respond has no limit).
        let call = Call {
            xid: 0x1234_5678,
            version: 1,
            inv_handle: 0,
            nomsg: false,
            read_chunks: Vec::new(),
            write_chunks: Vec::new(),
            reply_chunk: Some((0..5000).map(|i| seg(4, 16, 0x10_0000 + i * 16)).collect()),
            inline: Vec::new(),
        };
        let small = Reply {
            body: vec![1; 100],
            ddp: None,
        };
        let out = respond(&call, &small, &LIM, None);
        assert_eq!(out.send.len(), MIN_HEADER_LEN + 4 + 16 * 5000);
        assert_eq!(&out.send[12..16], &header::RDMA_NOMSG.to_be_bytes());
        assert_eq!(out.writes.len(), 7);

        // A segment whose offset plus length wraps cannot be encoded:
        // ERR_CHUNK, nothing placed.
        let call = Call {
            xid: 0x1234_5678,
            version: 1,
            inv_handle: 0,
            nomsg: false,
            read_chunks: Vec::new(),
            write_chunks: vec![vec![seg(1, 8192, u64::MAX - 100)]],
            reply_chunk: None,
            inline: Vec::new(),
        };
        let out = respond(&call, &read_reply(5000), &LIM, None);
        assert!(out.writes.is_empty());
        assert_eq!(
            client_view(&out.send).unwrap().2,
            ReplyKind::Error(RdmaError::Chunk)
        );
        // Both kinds of RDMA_ERROR fit their buffer.
        assert_eq!(error_reply(1, 2, RdmaError::Chunk).len(), FIXED_LEN + 4);
        let vers = RdmaError::Vers { low: 1, high: 1 };
        assert_eq!(error_reply(1, 2, vers).len(), ERROR_HEADER_LEN);
    }

    #[test]
    fn shrink_credits_grants_shrink_to() {
        let wire = encode_call(MsgProc::Msg, &[], &[], None, b"call");
        let call = parse_call(&wire).unwrap();
        let small = Reply {
            body: vec![1; 100],
            ddp: None,
        };
        let out = respond(&call, &small, &LIM, Some(Fault::ShrinkCredits));
        assert!(out.fired);
        assert_eq!(client_view(&out.send).unwrap().1, 4);
        // Otherwise the same Reply.
        let honest = respond(&call, &small, &LIM, None);
        assert_eq!(&out.send[12..], &honest.send[12..]);
        // An RDMA_ERROR carries it too.
        let big = Reply {
            body: vec![2; 10000],
            ddp: None,
        };
        let out = respond(&call, &big, &LIM, Some(Fault::ShrinkCredits));
        let (_, credit, kind) = client_view(&out.send).unwrap();
        assert_eq!((credit, kind), (4, ReplyKind::Error(RdmaError::Chunk)));
    }

    #[test]
    fn write_list_unoffered_claims_the_inline_data() {
        let wire = encode_call(MsgProc::Msg, &[], &[], None, b"call");
        let call = parse_call(&wire).unwrap();
        let reply = read_reply(1000);
        let honest = respond(&call, &reply, &LIM, None);
        assert_eq!(
            client_view(&honest.send).unwrap().2,
            ReplyKind::Inline { write_chunk_len: 0 }
        );
        let out = respond(&call, &reply, &LIM, Some(Fault::WriteListUnoffered));
        assert!(out.fired && out.writes.is_empty() && out.sends == 1);
        let (h, len) = header::decode(&out.send, &DecodeLimits::REPLY).unwrap();
        let lists = h.chunk_lists().unwrap();
        let segs: Vec<Segment> = lists.write_list.first().unwrap().iter().collect();
        assert_eq!(segs, [unoffered(1000)]);
        assert_eq!(lists.write_list.iter().count(), 1);
        assert!(lists.reply_chunk.is_none());
        // The data is left out, its length word kept.
        assert_eq!(&out.send[len..], &reply.reduced()[..]);
        assert_eq!(out.send.len() - len, reply.body.len() - 1000);
        // Well-formed on its own: only the Call shows it was not offered.
        assert_eq!(
            h.classify_reply(),
            Ok(ReplyKind::Inline {
                write_chunk_len: 1000
            })
        );

        // Waits for a READ without a Write chunk, and with data.
        let chunk = [seg(1, 8192, 0x10000)];
        let wire = encode_call(MsgProc::Msg, &[], &[&chunk], None, b"call");
        let with = parse_call(&wire).unwrap();
        assert!(!respond(&with, &reply, &LIM, Some(Fault::WriteListUnoffered)).fired);
        let not_read = Reply {
            body: vec![1; 100],
            ddp: None,
        };
        assert!(!respond(&call, &not_read, &LIM, Some(Fault::WriteListUnoffered)).fired);
        assert!(!respond(&call, &read_reply(0), &LIM, Some(Fault::WriteListUnoffered)).fired);
        // Nor when the honest Reply is an error (too large for inline).
        assert!(
            !respond(
                &call,
                &read_reply(5000),
                &LIM,
                Some(Fault::WriteListUnoffered)
            )
            .fired
        );
    }

    #[test]
    fn reply_chunk_unoffered_claims_the_whole_reply() {
        let small = Reply {
            body: vec![1; 100],
            ddp: None,
        };
        let wire = encode_call(MsgProc::Msg, &[], &[], None, b"call");
        let call = parse_call(&wire).unwrap();
        let out = respond(&call, &small, &LIM, Some(Fault::ReplyChunkUnoffered));
        assert!(out.fired && out.writes.is_empty() && out.sends == 1);
        assert_eq!(&out.send[12..16], &header::RDMA_NOMSG.to_be_bytes());
        let (h, len) = header::decode(&out.send, &DecodeLimits::REPLY).unwrap();
        assert_eq!(len, out.send.len());
        let lists = h.chunk_lists().unwrap();
        let segs: Vec<Segment> = lists.reply_chunk.unwrap().iter().collect();
        assert_eq!(segs, [unoffered(100)]);
        assert_eq!(
            h.classify_reply(),
            Ok(ReplyKind::Long {
                reply_chunk_len: 100
            })
        );

        // A READ with a Write chunk: the chunk comes back unused, nothing
        // is written, the whole Reply claimed in the Reply chunk.
        let chunk = [seg(1, 8192, 0x10000)];
        let wire = encode_call(MsgProc::Msg, &[], &[&chunk], None, b"call");
        let call = parse_call(&wire).unwrap();
        let reply = read_reply(5000);
        let out = respond(&call, &reply, &LIM, Some(Fault::ReplyChunkUnoffered));
        assert!(out.fired && out.writes.is_empty());
        let h = header::decode(&out.send, &DecodeLimits::REPLY).unwrap().0;
        let lists = h.chunk_lists().unwrap();
        assert_eq!(lists.write_list.total_length(), 0);
        let segs: Vec<Segment> = lists.reply_chunk.unwrap().iter().collect();
        assert_eq!(segs, [unoffered(reply.body.len() as u32)]);

        // Waits for a Call without a Reply chunk.
        let rc = [seg(4, 8192, 0x40000)];
        let wire = encode_call(MsgProc::Msg, &[], &[], Some(&rc), b"call");
        let call = parse_call(&wire).unwrap();
        let out = respond(&call, &small, &LIM, Some(Fault::ReplyChunkUnoffered));
        assert!(!out.fired);
        assert_eq!(out, respond(&call, &small, &LIM, None));
    }

    #[test]
    fn write_pad_fills_the_pad_segment() {
        // 6001 bytes over two data segments, then the 4-byte pad segment.
        let data = [seg(1, 4096, 0x10000), seg(2, 1905, 0x20000)];
        let pad = seg(3, 4, 0x30000);
        let chunk = [data[0], data[1], pad];
        let wire = encode_call(MsgProc::Msg, &[], &[&chunk], None, b"call");
        let call = parse_call(&wire).unwrap();
        let reply = read_reply(6001);
        // Honest: the pad segment comes back unused.
        let honest = respond(&call, &reply, &LIM, None);
        let h = header::decode(&honest.send, &DecodeLimits::REPLY)
            .unwrap()
            .0;
        let segs: Vec<Segment> = h
            .chunk_lists()
            .unwrap()
            .write_list
            .first()
            .unwrap()
            .iter()
            .collect();
        assert_eq!(segs, [data[0], data[1], seg(3, 0, 0x30000)]);

        let out = respond(&call, &reply, &LIM, Some(Fault::WritePad));
        assert!(out.fired);
        assert_eq!(
            out.fault_words,
            "pad_bytes=3 rkey=0x00000003 offset=0x30000 data_bytes=6001"
        );
        // The data's Writes as before, then the pad's zeroes.
        assert_eq!(out.writes[..2], honest.writes[..]);
        assert_eq!(
            out.writes[2],
            RdmaWrite {
                handle: 3,
                offset: 0x30000,
                data: vec![0; 3],
            }
        );
        let h = header::decode(&out.send, &DecodeLimits::REPLY).unwrap().0;
        let segs: Vec<Segment> = h
            .chunk_lists()
            .unwrap()
            .write_list
            .first()
            .unwrap()
            .iter()
            .collect();
        assert_eq!(segs, [data[0], data[1], seg(3, 3, 0x30000)]);
        // As the client checks it: the pad's bytes are not data.
        let offer = header::Offer::WriteChunk {
            data: &data,
            pad: Some(pad),
        };
        assert_eq!(
            h.check_reply(&offer),
            Ok(ReplyKind::Inline {
                write_chunk_len: 6001
            })
        );
        // Otherwise the same Reply.
        assert_eq!(out.invalidate, honest.invalidate);
        assert_eq!(out.sends, 1);
    }

    #[test]
    fn write_pad_waits_for_a_pad_segment() {
        let reply = read_reply(6001);
        let not_applicable = |chunks: &[&[Segment]], reply: &Reply, reason: &str| {
            let wire = encode_call(MsgProc::Msg, &[], chunks, None, b"call");
            let call = parse_call(&wire).unwrap();
            let out = respond(&call, reply, &LIM, Some(Fault::WritePad));
            assert!(!out.fired);
            assert_eq!(out.fault_words.split(' ').next(), Some(reason));
            // An honest Reply.
            let honest = respond(&call, reply, &LIM, None);
            assert_eq!((&out.send, &out.writes), (&honest.send, &honest.writes));
        };
        // A client that offers no pad segment (the chunk is the data's).
        not_applicable(&[&[seg(1, 6001, 0x10000)]], &reply, "reason=no-pad-segment");
        // A larger data segment: the data never reaches a segment after it.
        not_applicable(
            &[&[seg(1, 8192, 0x10000), seg(3, 4, 0x30000)]],
            &reply,
            "reason=data-short-of-pad-segment",
        );
        // The data runs into the last 4-byte segment: it is the data's.
        not_applicable(
            &[&[seg(1, 5997, 0x10000), seg(3, 4, 0x30000)]],
            &reply,
            "reason=no-pad-segment",
        );
        // A length that needs no pad.
        not_applicable(
            &[&[seg(1, 6000, 0x10000), seg(3, 4, 0x30000)]],
            &read_reply(6000),
            "reason=no-pad-needed",
        );
        // No Write chunk: a READ whose reply fits inline.
        not_applicable(&[], &read_reply(1001), "reason=no-pad-segment");
        // Not a READ.
        let small = Reply {
            body: vec![1; 100],
            ddp: None,
        };
        not_applicable(&[], &small, "reason=no-pad-segment");
    }

    #[test]
    fn overclaim_never_wraps() {
        let offered = [seg(1, 100, u64::MAX - 200)];
        let mut s = offered.to_vec();
        overclaim(&mut s, &offered);
        assert_eq!(s[0].length, 200);
        assert!(s[0].is_valid());
    }
}
