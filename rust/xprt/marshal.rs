// SPDX-License-Identifier: GPL-2.0

//! Marshalling Calls and decoding Replies (the C `rpc_rdma.c`:
//! `rpcrdma_marshal_req`, `rpcrdma_reply_handler`,
//! `rpcrdma_complete_rqst`).
//!
//! Sending, this file makes every decision about a Call: how it goes
//! (inline, with a Read chunk, or as a Long Call) and how its Reply may
//! come back, by the protocol core's planner; which memory is registered
//! for its chunks; the transport header and the inline part written into
//! the Send buffer; what is counted. Receiving, it says what a message
//! is and what it does to its RPC, and completes the RPC. `verbs.rs`
//! does what touches the connection: it supplies the Send buffer, takes
//! the locks, registers the chunks through `frwr.rs`, posts, and decides
//! what a failure does to the connection.

use super::{
    frwr::MAX_SEGS,
    stats::{bump, Delivered, Stats},
};
use crate::{
    errno,
    proto::{
        chunks::{self, CallLayout, CallPlan, ReplyLayout, ReplyPlan, Thresholds},
        header::{self, Body, DecodeLimits, Offer, ReadSegment, ReplyKind, Segment},
        RPCRDMA_VERSION,
    },
    rdma::{Piece, Pieces},
    sunrpc::{
        trace::{self, Chunk, Rtype, Wtype},
        Layouts, PinnedRqst, Rqst, XdrLayout, Xprt,
    },
};
use kernel::prelude::*;

/// A Call planned, with the memory its chunks cover cut into page pieces
/// ([`prepare`]); then encoded into a Send buffer once the pieces are
/// registered ([`Prepared::encode`]), and counted once posted
/// ([`Prepared::count`]).
pub(crate) struct Prepared<'a> {
    xid: u32,
    /// A backchannel reply, not a Call.
    bc_reply: bool,
    call: &'a XdrLayout<'a>,
    plan: chunks::Plan,
    /// The credits the header asks for.
    credit: u32,
    /// For the Read chunk (or the Long Call's Position Zero Read chunk).
    reads: &'a mut Pieces,
    /// For the Write chunk or the Reply chunk.
    writes: &'a mut Pieces,
    /// What the last successful [`Prepared::encode`] advertised.
    advertised: Advertised,
}

/// The chunk segments a header advertised, for the counters, and the
/// lengths it was written with, for the trace.
#[derive(Clone, Copy, Default)]
struct Advertised {
    /// Bytes of transport header.
    hdr_len: u32,
    /// Bytes of the Call after it.
    inline_len: u32,
    /// Segments in the Read list.
    reads: usize,
    /// Segments in the Write chunk or the Reply chunk.
    writes: usize,
    /// Bytes those segments cover.
    write_bytes: u64,
}

/// Plans `rqst` and cuts what its chunks cover into page pieces, kept in
/// `reads` and `writes` (the connection's, emptied here and when the
/// [`Prepared`] goes: their room stays from one Call to the next), its
/// buffers described in `room`; a backchannel reply (`bc_reply`) goes
/// inline only and grants the server `bc_credits`, any other Call asks
/// for `max_requests`. May allocate (more room for pieces): call it
/// before taking any lock.
#[allow(clippy::too_many_arguments)]
pub(crate) fn prepare<'a, 'r: 'a>(
    rqst: &'a Rqst<'r>,
    bc_reply: bool,
    thresholds: &Thresholds,
    max_requests: u32,
    bc_credits: u32,
    room: &'a mut Layouts<'r>,
    reads: &'a mut Pieces,
    writes: &'a mut Pieces,
) -> Result<Prepared<'a>> {
    reads.clear();
    writes.clear();
    let xid = rqst.xid();
    // A backchannel reply expects no reply: no receive buffer.
    let (call, reply) = rqst.layouts(bc_reply, room)?;
    let (plan, credit) = match &reply {
        // C: rpcrdma_bc_marshal_reply. Never chunks: their regions
        // would be keyed by the server's XID and never invalidated.
        None => {
            let plan = chunks::Plan {
                call: CallPlan::Inline { len: call.len() },
                reply: ReplyPlan::Inline,
            };
            (plan, bc_credits)
        }
        Some(reply) => {
            let plan = chunks::plan(
                &call_layout(call),
                &reply_layout(reply),
                call.ddp_allowed(),
                thresholds,
            )
            .map_err(|_| errno::emsgsize())?;
            (plan, max_requests)
        }
    };

    // The pieces go into `Prepared` at once, so that its drop empties
    // them whatever fails below.
    let prepared = Prepared {
        xid,
        bc_reply,
        call,
        plan,
        credit,
        reads,
        writes,
        advertised: Advertised::default(),
    };
    // What to register, cut into pages before taking any lock.
    match prepared.plan.call {
        CallPlan::Inline { .. } => {}
        CallPlan::ReadChunk(_) => prepared.call.cut_pages(prepared.reads)?,
        CallPlan::LongCall { .. } => whole_buffer_pieces(prepared.call, prepared.reads)?,
    }
    if let Some(reply) = reply {
        match prepared.plan.reply {
            ReplyPlan::Inline => {}
            ReplyPlan::WriteChunk(_) => reply.cut_pages(prepared.writes)?,
            ReplyPlan::ReplyChunk { .. } => whole_buffer_pieces(reply, prepared.writes)?,
        }
    }
    Ok(prepared)
}

impl Drop for Prepared<'_> {
    /// Empties the connection's piece vectors: a piece names a page of
    /// this RPC's buffers, which sunrpc frees after `buf_free`.
    fn drop(&mut self) {
        self.reads.clear();
        self.writes.clear();
    }
}

impl Prepared<'_> {
    /// The Call's XID, which its regions are registered under.
    pub(crate) fn xid(&self) -> u32 {
        self.xid
    }

    /// True if the pieces the server writes are a Reply chunk, false if
    /// they are a Write chunk (or there are none).
    pub(crate) fn offers_reply_chunk(&self) -> bool {
        matches!(self.plan.reply, ReplyPlan::ReplyChunk { .. })
    }

    /// True if the Write chunk offers a segment for the XDR pad of its
    /// data after the data's segments (C: `re_write_pad_mr`): the data's
    /// length is not a multiple of four.
    pub(crate) fn offers_write_pad(&self) -> bool {
        matches!(self.plan.reply, ReplyPlan::WriteChunk(w) if w.pad_segment)
    }

    /// What to register: the pieces the server reads (the Read chunk),
    /// and those it writes (the Write or Reply chunk). Both empty: the
    /// Call has no chunk.
    pub(crate) fn pieces(&self) -> (&[Piece], &[Piece]) {
        (self.reads.as_slice(), self.writes.as_slice())
    }

    /// Writes the transport header into `out` (the Send buffer, of which
    /// the first `inline_send` bytes may be sent), advertising the
    /// segments `registered` for [`Prepared::pieces`] (none if both were
    /// empty), and `pad` after a Write chunk's (the connection's pad
    /// segment, if the record offers it: [`Prepared::offers_write_pad`]),
    /// then the inline part of the Call; returns the bytes used.
    ///
    /// Each segment advertised is traced (`rpcrdma_rs_chunk`) for `xprt`.
    pub(crate) fn encode(
        &mut self,
        xprt: &Xprt,
        out: &mut [u8],
        inline_send: u32,
        registered: Option<(&[Segment], &[Segment])>,
        pad: Option<Segment>,
    ) -> Result<usize> {
        let position = match self.plan.call {
            CallPlan::ReadChunk(r) => r.position,
            _ => 0,
        };
        let (read, written) = registered.unwrap_or((&[], &[]));
        // The pool cuts each chunk at `MAX_SEGS` segments, the most the
        // server accepts.
        if read.len() > MAX_SEGS || written.len() > MAX_SEGS {
            return Err(errno::emsgsize());
        }
        // Encoded from the record's segments where they lie. The pad
        // segment is counted in the Write chunk's segments on the wire, as
        // C counts it (`rpcrdma_encode_write_list`).
        let segs = || written.iter().copied();
        let (write_chunk, reply_chunk) = match self.plan.reply {
            ReplyPlan::WriteChunk(_) => (Some(Iterator::chain(segs(), pad)), None),
            ReplyPlan::ReplyChunk { .. } => (None, Some(segs())),
            ReplyPlan::Inline => (None, None),
        };
        let out = out.get_mut(..usize::try_from(inline_send)?).ok_or(EINVAL)?;
        let hdr_len = header::encode_chunked(
            out,
            self.xid,
            self.credit,
            self.plan.call.proc(),
            read.iter()
                .map(|&segment| ReadSegment { position, segment }),
            write_chunk,
            reply_chunk,
        )
        .map_err(|_| errno::emsgsize())?;
        let used = marshal(out, hdr_len, &self.plan.call, self.call)?;
        // Not the pad segment (C counts it): every segment counted here is
        // one that an RPC registered, and that is invalidated once.
        self.advertised = Advertised {
            hdr_len: u32::try_from(hdr_len).unwrap_or(u32::MAX),
            inline_len: u32::try_from(used.saturating_sub(hdr_len)).unwrap_or(u32::MAX),
            reads: read.len(),
            writes: written.len(),
            write_bytes: written.iter().map(|s| u64::from(s.length)).sum(),
        };
        if trace::chunk_enabled() {
            self.trace_chunks(xprt, read, position, written, pad);
        }
        Ok(used)
    }

    /// Traces each segment the header advertised: `read` at `position`,
    /// `written` as the Write or Reply chunk, and `pad` after a Write
    /// chunk's.
    fn trace_chunks(
        &self,
        xprt: &Xprt,
        read: &[Segment],
        position: u32,
        written: &[Segment],
        pad: Option<Segment>,
    ) {
        for seg in read {
            trace::chunk(xprt, self.xid, Chunk::Read, position, seg);
        }
        let kind = match self.plan.reply {
            ReplyPlan::WriteChunk(_) => Chunk::Write,
            ReplyPlan::ReplyChunk { .. } => Chunk::Reply,
            ReplyPlan::Inline => return,
        };
        for seg in written {
            trace::chunk(xprt, self.xid, kind, 0, seg);
        }
        if let (Chunk::Write, Some(seg)) = (kind, pad) {
            trace::chunk(xprt, self.xid, Chunk::Pad, 0, &seg);
        }
    }

    /// Traces the Call as [`Prepared::encode`] wrote it
    /// (`rpcrdma_rs_marshal`; a backchannel reply as
    /// `rpcrdma_rs_cb_reply`).
    pub(crate) fn trace(&self, xprt: &Xprt) {
        let Advertised {
            hdr_len,
            inline_len,
            ..
        } = self.advertised;
        if self.bc_reply {
            return trace::cb_reply(xprt, self.xid, inline_len);
        }
        let call = match self.plan.call {
            CallPlan::Inline { .. } => Rtype::Inline,
            CallPlan::ReadChunk(_) => Rtype::ReadChunk,
            CallPlan::LongCall { .. } => Rtype::LongCall,
        };
        let reply = match self.plan.reply {
            ReplyPlan::Inline => Wtype::Inline,
            ReplyPlan::WriteChunk(_) => Wtype::WriteChunk,
            ReplyPlan::ReplyChunk { .. } => Wtype::ReplyChunk,
        };
        trace::marshal(xprt, self.xid, hdr_len, inline_len, call, reply);
    }

    /// Counts the Call as [`Prepared::encode`] wrote it, once it is posted
    /// (by its sender, the one context that writes these counters).
    pub(crate) fn count(&self, stats: &Stats) {
        let n = |len: usize| u64::try_from(len).unwrap_or(0);
        let Advertised {
            reads,
            writes,
            write_bytes,
            ..
        } = self.advertised;
        bump(&stats.read_chunk_count, n(reads));
        match self.plan.reply {
            ReplyPlan::WriteChunk(_) => bump(&stats.write_chunk_count, n(writes)),
            ReplyPlan::ReplyChunk { .. } => bump(&stats.reply_chunk_count, n(writes)),
            ReplyPlan::Inline => {}
        }
        bump(&stats.total_rdma_request, write_bytes);
        match self.plan.call {
            CallPlan::LongCall { .. } => bump(&stats.nomsg_call_count, 1),
            CallPlan::Inline { .. } => bump(&stats.pullup_copy_count, 1),
            CallPlan::ReadChunk(_) => {}
        }
    }
}

fn call_layout(l: &XdrLayout<'_>) -> CallLayout {
    CallLayout {
        head_len: l.head_len(),
        page_base: l.page_base(),
        page_len: l.page_len(),
        tail_len: l.tail_len(),
        ddp_write: l.ddp(),
    }
}

fn reply_layout(l: &XdrLayout<'_>) -> ReplyLayout {
    ReplyLayout {
        buflen: l.buflen(),
        head_len: l.head_len(),
        page_len: l.page_len(),
        tail_len: l.tail_len(),
        ddp_read: l.ddp(),
    }
}

/// Head, page data and tail of a buffer, as page pieces (a Long Call's
/// Position Zero Read chunk, or a Reply chunk).
fn whole_buffer_pieces(l: &XdrLayout<'_>, out: &mut Pieces) -> Result {
    l.cut_head(out)?;
    l.cut_pages(out)?;
    l.cut_tail(out)
}

/// Writes the part of the Call that goes inline by `plan` into `out` (the
/// Send buffer, cut to the inline threshold) after the transport header,
/// its first `hdr_len` bytes; returns the bytes used.
fn marshal(out: &mut [u8], hdr_len: usize, plan: &CallPlan, call: &XdrLayout<'_>) -> Result<usize> {
    let mut copy = |at: usize, offset: u32, len: u32| -> Result<usize> {
        let end = at
            .checked_add(usize::try_from(len)?)
            .ok_or_else(errno::emsgsize)?;
        call.read(offset, out.get_mut(at..end).ok_or_else(errno::emsgsize)?)?;
        Ok(end)
    };
    match plan {
        CallPlan::Inline { len } => copy(hdr_len, 0, *len),
        CallPlan::ReadChunk(r) => {
            // The head, then the tail without the page data's XDR pad: the
            // page data itself is read by the server.
            let end = copy(hdr_len, 0, call.head_len())?;
            let tail_at = call
                .head_len()
                .checked_add(call.page_len())
                .and_then(|v| v.checked_add(r.tail_skip))
                .ok_or_else(errno::emsgsize)?;
            copy(end, tail_at, r.tail_send)
        }
        CallPlan::LongCall { .. } => Ok(hdr_len),
    }
}

/// The fixed part of every transport header: XID, version, credits, proc.
const FIXED_WORDS: usize = 4;

fn be32(data: &[u8], word: usize) -> Option<u32> {
    let at = word.checked_mul(4)?;
    let b = data.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// What one received message is (C: `rpcrdma_reply_handler`).
pub(crate) enum Incoming<'a> {
    /// Not a transport header this requester can use: reset the
    /// connection (Call `xid`, if it names one, is sent again on the
    /// next).
    Bad {
        xid: Option<u32>,
        why: header::DecodeError,
    },
    /// Shorter than the fixed header.
    Short,
    /// A backchannel Call from the server (RFC 8167): `body` is the RPC
    /// message.
    BackchannelCall { body: &'a [u8] },
    /// A reply to a forward Call.
    Reply(Reply<'a>),
}

/// A transport header that answers a Call.
pub(crate) struct Reply<'a> {
    pub(crate) xid: u32,
    /// The credit grant; none from an ERR_VERS sent in another version
    /// than 1, whose credit field speaks for that version.
    pub(crate) credit: Option<u32>,
    /// The credit field as sent, and `rdma_proc`, for the trace.
    pub(crate) credit_sent: u32,
    pub(crate) proc: u32,
    body_at: usize,
    /// The first word of the RPC message an RDMA_MSG carries inline.
    rpc_xid: Option<u32>,
    /// Kept to be checked against what its Call offered.
    hdr: header::Header<'a>,
}

/// Decodes the transport header of a received message.
pub(crate) fn classify(data: &[u8]) -> Incoming<'_> {
    let Some(xid) = be32(data, 0).filter(|_| data.len() >= FIXED_WORDS * 4) else {
        return Incoming::Short;
    };
    // The common shapes without the general decoder's loops; the same
    // header where both decode.
    let decoded = match header::decode_common_reply(data, &DecodeLimits::REPLY) {
        Some(d) => Ok(d),
        None => header::decode(data, &DecodeLimits::REPLY),
    };
    let (hdr, body_at) = match decoded {
        Ok(d) => d,
        Err(why) => {
            return Incoming::Bad {
                xid: Some(xid),
                why,
            }
        }
    };
    let body = data.get(body_at..).unwrap_or(&[]);
    if is_backchannel_call(&hdr, body) {
        return Incoming::BackchannelCall { body };
    }
    Incoming::Reply(Reply {
        xid,
        credit: (hdr.vers == RPCRDMA_VERSION).then_some(hdr.credit),
        credit_sent: hdr.credit,
        proc: match hdr.body {
            Body::Msg(_) => header::RDMA_MSG,
            Body::NoMsg(_) => header::RDMA_NOMSG,
            Body::Error(_) => header::RDMA_ERROR,
        },
        body_at,
        rpc_xid: be32(body, 0),
        hdr,
    })
}

/// What a reply does to its RPC once the RPC's memory is unreachable.
pub(crate) enum Outcome {
    /// The RPC Reply is inline at `body_at`; `written` bytes of it were
    /// placed in the receive pages by RDMA Write.
    Inline { body_at: usize, written: u32 },
    /// The whole RPC Reply, `len` bytes, was written into the Reply chunk.
    Long { len: u32 },
    /// The RPC fails with this error.
    Failed(Error),
}

/// Why a reply cannot be accepted for its RPC.
pub(crate) type Rejected = &'static str;

impl Reply<'_> {
    /// Checks the reply against what its RPC offered: the chunks its
    /// header advertised on this connection (`offer`; a Write list, a
    /// Reply chunk or RDMA_NOMSG it did not offer, or a chunk that is not
    /// a prefix of the offered one, would have memory the server never
    /// wrote taken for Reply data), and `buflen` bytes of receive buffer,
    /// `page_room` of them in pages.
    pub(crate) fn outcome(
        &self,
        offer: &Offer<'_>,
        buflen: u32,
        page_room: u32,
    ) -> Result<Outcome, Rejected> {
        match self.hdr.check_reply(offer) {
            Ok(ReplyKind::Inline { write_chunk_len }) => match u32::try_from(write_chunk_len) {
                Ok(written) if written <= page_room => Ok(Outcome::Inline {
                    body_at: self.body_at,
                    written,
                }),
                _ => Err("Write chunk longer than offered"),
            },
            Ok(ReplyKind::Long { reply_chunk_len }) => match u32::try_from(reply_chunk_len) {
                Ok(len) if len <= buflen => Ok(Outcome::Long { len }),
                _ => Err("Reply chunk longer than offered"),
            },
            Ok(ReplyKind::Error(_)) => Ok(Outcome::Failed(EIO)),
            Err(e) => Err(e.describe()),
        }
    }

    /// False for an RDMA_MSG whose RPC message does not start with the
    /// transport header's XID (RFC 8166, section 4.1: `rdma_xid` is the
    /// XID of the RPC message it carries): a server offering one RPC's
    /// Reply as another's, which sunrpc, which skips the RPC XID, would
    /// take. (An RDMA_NOMSG's message is in the Reply chunk, checked by
    /// [`deliver`] once the RPC's memory is closed; C checks neither.)
    pub(crate) fn rpc_xid_matches(&self) -> bool {
        !matches!(self.hdr.body, Body::Msg(_)) || self.rpc_xid == Some(self.xid)
    }

    /// The first word of the RPC message an RDMA_MSG carries inline.
    pub(crate) fn rpc_xid(&self) -> Option<u32> {
        self.rpc_xid
    }

    /// The RDMA_ERROR this reply carries, if it is one.
    pub(crate) fn rdma_error(&self) -> Option<header::RdmaError> {
        match self.hdr.body {
            Body::Error(e) => Some(e),
            _ => None,
        }
    }
}

/// A Reply chunk's RPC message that names another XID than its transport
/// header (as [`Reply::rpc_xid_matches`] finds for RDMA_MSG): found only
/// once the chunk can be read, after its RPC's memory is closed. The RPC
/// is left waiting, to be sent again on the next connection.
pub(crate) struct OtherXid(pub(crate) u32);

/// Completes `rqst`, RPC `xid`, with `outcome`, copying the inline part of
/// its Reply from `data` (the whole received message), counted in `counts`
/// (the delivering handler's own). Runs only once nothing of the RPC's
/// memory is reachable by the server or mapped for DMA, which is when a
/// Reply chunk can be read. Returns how many bytes of an inline Reply
/// were left out because the receive buffer ends before them (the C
/// transport and TCP deliver what fits, too: the upper layer sized the
/// buffer for the largest reply it decodes). A Reply refused here does
/// not complete `rqst`.
pub(crate) fn deliver(
    mut rqst: PinnedRqst,
    xid: u32,
    outcome: Outcome,
    data: &[u8],
    counts: &Delivered,
) -> Result<usize, OtherXid> {
    let mut dropped = 0;
    let result = match outcome {
        Outcome::Inline { body_at, written } => {
            let body = data.get(body_at..).unwrap_or(&[]);
            rqst.deliver(body, written).map(|(fixup, left_out)| {
                dropped = left_out as usize;
                bump(&counts.fixup_copy_count, u64::from(fixup));
                bump(&counts.total_rdma_reply, u64::from(written));
                // C: rpclen + xdr_align_size(writelist), less what was
                // left out.
                let rpclen = u32::try_from(body.len())
                    .unwrap_or(u32::MAX)
                    .saturating_sub(left_out);
                rpclen.saturating_add(written.next_multiple_of(4))
            })
        }
        Outcome::Long { len } => match rqst.rcv_first_word() {
            // Shorter than an XID, it is no RPC Reply, which sunrpc says.
            Some(rpc_xid) if len >= 4 && rpc_xid != xid => return Err(OtherXid(rpc_xid)),
            _ => {
                bump(&counts.total_rdma_reply, u64::from(len));
                Ok(len)
            }
        },
        Outcome::Failed(e) => Err(e),
    };
    rqst.complete(result);
    Ok(dropped)
}

/// True for an RDMA_MSG with no chunks whose RPC message is a Call with
/// the header's XID: the server calling back (RFC 8167, section 4).
fn is_backchannel_call(hdr: &header::Header<'_>, body: &[u8]) -> bool {
    let Body::Msg(lists) = &hdr.body else {
        return false;
    };
    lists.read_list.is_empty()
        && lists.write_list.is_empty()
        && lists.reply_chunk.is_none()
        && be32(body, 0) == Some(hdr.xid)
        && be32(body, 1) == Some(RPC_CALL)
}

/// `msg_type` of an RPC Call (RFC 5531).
const RPC_CALL: u32 = 0;
