// SPDX-License-Identifier: GPL-2.0

//! Chunk planning: how one RPC Call is sent and how its Reply may come back
//! (RFC 8166, section 3.5), decided as the Linux client decides it in
//! `rpcrdma_marshal_req`.
//!
//! The inputs mirror the two `xdr_buf`s of an `rpc_rqst`: the Call's
//! `rq_snd_buf` ([`CallLayout`]) and the Reply's `rq_rcv_buf`
//! ([`ReplyLayout`]), plus the connection's limits ([`Thresholds`]). In both
//! buffers the page list, when present, is the one DDP-eligible data item
//! and sits right after the head: its XDR position is the head's length.
//!
//! Choices RFC 8166 leaves open, made here the way the C client makes them:
//!
//! - A Call that fits under the call inline threshold is always sent
//!   inline, even when it has a DDP-eligible payload (section 3.5.1).
//! - Only the page list is ever reduced, and only when the upper layer
//!   marked it (`XDRBUF_WRITE` for Calls, `XDRBUF_READ` for Replies) and
//!   the RPC's security flavour allows direct placement (no GSS integrity or
//!   privacy, C: `RPCAUTH_AUTH_DATATOUCH`), section 3.4.2.
//! - A Call that is too large and cannot be reduced becomes a Long Call:
//!   the whole Payload stream in a Position Zero Read chunk, sent as
//!   RDMA_NOMSG (section 3.5.3). Long Calls are never used otherwise.
//! - A Read chunk does not include the payload's XDR roundup padding
//!   (section 3.4.5.2, "SHOULD NOT"); the pad is also dropped from the
//!   inline part, so the tail's remaining content stays XDR-aligned.
//! - The Requester provides at most one Write chunk or one Reply chunk,
//!   never both (section 3.5.3 lets it provide both).
//! - A Write chunk covers the data item only (section 3.4.6.2, "SHOULD
//!   NOT" include padding), but when the item's length is not a multiple of
//!   four, one extra 4-byte segment pointing at a scratch pad buffer
//!   follows the data's (C: `re_write_pad_mr`), so a Responder that writes
//!   the pad anyway does not write past the data. [`WritePlan::pad_segment`]
//!   says when.
//! - A Reply chunk is provisioned for the largest possible Reply
//!   (`rq_rcv_buf.buflen`), and covers the whole receive buffer.
//!
//! Where this planner differs from C, it is to keep the promise that a plan
//! respects the thresholds, for any input:
//!
//! - C sends a Read chunk Call whenever the payload is marked and the Call
//!   is too large, assuming the rest fits inline ("This assumes that the
//!   upper layer does not present a request that both has a data payload,
//!   and whose non-data arguments by themselves are larger than the inline
//!   threshold"). Here, when the rest does not fit, or the payload's
//!   position is not a multiple of four, or the page list is empty, the
//!   Call becomes a Long Call instead.
//! - C would provision a Write chunk for an empty page list; here the Reply
//!   chunk is used (this cannot happen with a consistent `xdr_buf`, where
//!   `buflen` is the sum of the three parts).

use super::header::{MsgProc, READ_SEGMENT_LEN, SEGMENT_LEN};
use super::xdr::xdr_pad_size;

/// Size in bytes of the largest transport header of a Call: the fixed
/// fields, a Read list of `maxsegs` entries, an empty Write list and a
/// one-segment Reply chunk (C: `rpcrdma_max_call_header_size`).
pub const fn max_call_header_size(maxsegs: u32) -> u32 {
    // Fixed fields and three list discriminators (C: RPCRDMA_HDRLEN_MIN).
    let fixed: u32 = 28;
    // Each Read list entry: "present" (4), position and plain segment
    // (READ_SEGMENT_LEN, 20).
    let entry = READ_SEGMENT_LEN.saturating_add(4) as u32;
    // Minimal Reply chunk: segment count (4), one segment (16), and the
    // "present" discriminator (4) beside the terminator counted in `fixed`.
    let reply = SEGMENT_LEN.saturating_add(8) as u32;
    fixed
        .saturating_add(maxsegs.saturating_mul(entry))
        .saturating_add(reply)
}

/// Size in bytes of the largest transport header of a Reply: the fixed
/// fields and one Write chunk of `maxsegs` segments
/// (C: `rpcrdma_max_reply_header_size`).
pub const fn max_reply_header_size(maxsegs: u32) -> u32 {
    let fixed: u32 = 28;
    // Segment count, segments, and the "present" discriminator.
    fixed
        .saturating_add(4)
        .saturating_add(maxsegs.saturating_mul(SEGMENT_LEN as u32))
        .saturating_add(4)
}

/// Number of pages `len` bytes starting `offset` bytes into a page span,
/// in 64 bits so it cannot overflow. `page_size` must not be zero.
fn pages_spanned(offset: u32, len: u32, page_size: u32) -> Option<u64> {
    let page_size = u64::from(page_size);
    let first = u64::from(offset).checked_rem(page_size)?;
    let end = first.checked_add(u64::from(len))?;
    end.checked_add(page_size.checked_sub(1)?)?
        .checked_div(page_size)
}

/// The connection's limits, as the planner uses them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Thresholds {
    /// Most RPC Call bytes that may follow the transport header in a Send
    /// (C: `re_max_inline_send`).
    pub max_inline_send: u32,
    /// Most RPC Reply bytes that may follow the transport header in the
    /// peer's Send (C: `re_max_inline_recv`).
    pub max_inline_recv: u32,
    /// Send SGEs the Send queue was created with (C:
    /// `re_attr.cap.max_send_sge`: the device's limit capped at
    /// `RPCRDMA_MAX_SEND_SGES`).
    pub max_send_sge: u32,
    /// The kernel's page size (C: `PAGE_SIZE`); not zero.
    pub page_size: u32,
}

/// Send SGEs every inline Call needs besides its pages: transport header,
/// head, tail (C: `RPCRDMA_MIN_SEND_SGES`).
pub const MIN_SEND_SGES: u32 = 3;

impl Thresholds {
    /// Derives the limits from the negotiated inline thresholds and the
    /// device's limits, as C's `rpcrdma_set_max_header_sizes` does: the
    /// room left for the RPC message once the largest possible transport
    /// header is taken out (C would wrap if the header did not fit; here
    /// the room is then zero).
    pub const fn new(
        inline_send: u32,
        inline_recv: u32,
        max_rdma_segs: u32,
        max_send_sge: u32,
        page_size: u32,
    ) -> Self {
        Self {
            max_inline_send: inline_send.saturating_sub(max_call_header_size(max_rdma_segs)),
            max_inline_recv: inline_recv.saturating_sub(max_reply_header_size(max_rdma_segs)),
            max_send_sge,
            page_size,
        }
    }
}

/// The Call's `rq_snd_buf`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CallLayout {
    /// Bytes in the head iovec: the RPC header and the arguments before the
    /// page data. Also the page data's XDR position.
    pub head_len: u32,
    /// Offset of the page data in its first page (C: `page_base`).
    pub page_base: u32,
    /// Bytes of page data, without XDR padding.
    pub page_len: u32,
    /// Bytes in the tail iovec: the page data's XDR pad, if any, then the
    /// arguments after the page data.
    pub tail_len: u32,
    /// The page data is a DDP-eligible payload, e.g. NFS WRITE data
    /// (C: `XDRBUF_WRITE`).
    pub ddp_write: bool,
}

/// The Reply's `rq_rcv_buf`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ReplyLayout {
    /// The largest Reply the upper layer expects, in bytes (C: `buflen`).
    pub buflen: u32,
    /// Room before the page data; also the page data's XDR position.
    pub head_len: u32,
    /// Room for page data: the DDP-eligible result, e.g. NFS READ data.
    pub page_len: u32,
    /// Room after the page data.
    pub tail_len: u32,
    /// The page data is a DDP-eligible result, e.g. NFS READ or READLINK
    /// data (C: `XDRBUF_READ`).
    pub ddp_read: bool,
}

/// How the Call is conveyed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallPlan {
    /// RDMA_MSG with the whole Call in the Send (RFC 8166, section 3.5.1;
    /// C: `rpcrdma_noch_pullup` or `rpcrdma_noch_mapped`, a copy-or-map
    /// choice left to the transport).
    Inline {
        /// Bytes of RPC Call after the transport header.
        len: u32,
    },
    /// RDMA_MSG with the page data reduced into one Read chunk (section
    /// 3.5.2; C: `rpcrdma_readch`). The Send carries the head, then the
    /// tail without its leading XDR pad.
    ReadChunk(ReadPlan),
    /// RDMA_NOMSG with the whole Call in a Position Zero Read chunk
    /// (section 3.5.3; C: `rpcrdma_areadch`). The Send carries only the
    /// transport header.
    LongCall {
        /// Bytes in the chunk: head, page data and tail.
        chunk_len: u32,
    },
}

/// A Call with a Read chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReadPlan {
    /// The chunk's XDR position: the head's length, a multiple of four.
    pub position: u32,
    /// Bytes in the chunk: the page data, not rounded up.
    pub chunk_len: u32,
    /// Leading tail bytes left out of the Send: the page data's XDR pad
    /// (C: `rpcrdma_prepare_readch` skips `tail.iov_len & 3` bytes).
    pub tail_skip: u32,
    /// Tail bytes sent inline after the head; zero when the tail is only a
    /// pad (3 bytes or fewer).
    pub tail_send: u32,
    /// Bytes of RPC Call after the transport header: head plus `tail_send`.
    pub inline_len: u32,
}

impl CallPlan {
    /// `rdma_proc` of the Call.
    pub const fn proc(&self) -> MsgProc {
        match self {
            Self::Inline { .. } | Self::ReadChunk(_) => MsgProc::Msg,
            Self::LongCall { .. } => MsgProc::NoMsg,
        }
    }

    /// Bytes of RPC Call that follow the transport header in the Send.
    pub const fn inline_len(&self) -> u32 {
        match self {
            Self::Inline { len } => *len,
            Self::ReadChunk(r) => r.inline_len,
            Self::LongCall { .. } => 0,
        }
    }

    /// The Read chunk as (position, length), if the Call has one.
    pub const fn read_chunk(&self) -> Option<(u32, u32)> {
        match self {
            Self::Inline { .. } => None,
            Self::ReadChunk(r) => Some((r.position, r.chunk_len)),
            Self::LongCall { chunk_len } => Some((0, *chunk_len)),
        }
    }
}

/// How the Reply may come back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReplyPlan {
    /// No chunk: the Reply fits inline (C: `rpcrdma_noch`).
    Inline,
    /// One Write chunk for the page data (C: `rpcrdma_writech`).
    WriteChunk(WritePlan),
    /// A Reply chunk for the whole Reply (C: `rpcrdma_replych`).
    ReplyChunk {
        /// Bytes the chunk covers: head, page data and tail.
        len: u32,
    },
}

/// A Reply with a Write chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WritePlan {
    /// XDR position of the result data in the Reply (the head's room); not
    /// sent, Write chunks have no position (RFC 8166, section 3.4.6).
    pub position: u32,
    /// Bytes the data segments cover: the page data, not rounded up.
    pub len: u32,
    /// One more 4-byte segment, of scratch memory, is offered after the
    /// data's for the XDR pad, because `len` is not a multiple of four
    /// (C: `re_write_pad_mr`).
    pub pad_segment: bool,
}

/// The complete decision for one RPC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Plan {
    /// How the Call goes out.
    pub call: CallPlan,
    /// What the Requester provisions for the Reply.
    pub reply: ReplyPlan,
}

impl Plan {
    /// Whether the Call's header has a Read list, a Write list, a Reply
    /// chunk. The planner only produces the combinations RFC 8166 allows and
    /// the C client emits: any one of them, Read list with Reply chunk, and
    /// Read list with Write list; never Write list with Reply chunk.
    pub const fn lists(&self) -> (bool, bool, bool) {
        (
            !matches!(self.call, CallPlan::Inline { .. }),
            matches!(self.reply, ReplyPlan::WriteChunk(_)),
            matches!(self.reply, ReplyPlan::ReplyChunk { .. }),
        )
    }
}

/// Inputs the planner cannot work with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PlanError {
    /// The Call or the Reply is larger than 4 GiB - 1 in total.
    TooLarge,
    /// [`Thresholds::page_size`] is zero.
    ZeroPageSize,
}

fn sum3(a: u32, b: u32, c: u32) -> Result<u32, PlanError> {
    a.checked_add(b)
        .and_then(|v| v.checked_add(c))
        .ok_or(PlanError::TooLarge)
}

/// C's `rpcrdma_args_inline`: the whole Call fits, and its pages plus the
/// header, head and tail fit in the device's Send SGEs.
fn args_inline(call: &CallLayout, len: u32, t: &Thresholds) -> Result<bool, PlanError> {
    if len > t.max_inline_send {
        return Ok(false);
    }
    if call.page_len == 0 {
        return Ok(true);
    }
    let pages =
        pages_spanned(call.page_base, call.page_len, t.page_size).ok_or(PlanError::ZeroPageSize)?;
    Ok(u64::from(MIN_SEND_SGES).saturating_add(pages) <= u64::from(t.max_send_sge))
}

/// Plans the Call side.
pub fn plan_call(
    call: &CallLayout,
    ddp_allowed: bool,
    t: &Thresholds,
) -> Result<CallPlan, PlanError> {
    if t.page_size == 0 {
        return Err(PlanError::ZeroPageSize);
    }
    let len = sum3(call.head_len, call.page_len, call.tail_len)?;
    if args_inline(call, len, t)? {
        return Ok(CallPlan::Inline { len });
    }
    if ddp_allowed && call.ddp_write && call.page_len != 0 && call.head_len & 3 == 0 {
        // C: rpcrdma_prepare_readch. A tail of 3 bytes or fewer is only the
        // payload's pad; a longer one starts with `len & 3` pad bytes.
        let (tail_skip, tail_send) = if call.tail_len > 3 {
            let skip = call.tail_len & 3;
            (skip, call.tail_len.saturating_sub(skip))
        } else {
            (0, 0)
        };
        let inline_len = call
            .head_len
            .checked_add(tail_send)
            .ok_or(PlanError::TooLarge)?;
        if inline_len <= t.max_inline_send {
            return Ok(CallPlan::ReadChunk(ReadPlan {
                position: call.head_len,
                chunk_len: call.page_len,
                tail_skip,
                tail_send,
                inline_len,
            }));
        }
    }
    Ok(CallPlan::LongCall { chunk_len: len })
}

/// Plans the Reply side.
pub fn plan_reply(
    reply: &ReplyLayout,
    ddp_allowed: bool,
    t: &Thresholds,
) -> Result<ReplyPlan, PlanError> {
    let chunk_len = sum3(reply.head_len, reply.page_len, reply.tail_len)?;
    // C: rpcrdma_results_inline.
    if reply.buflen <= t.max_inline_recv {
        return Ok(ReplyPlan::Inline);
    }
    // C: rpcrdma_nonpayload_inline; note the strict comparison.
    let nonpayload = reply
        .head_len
        .checked_add(reply.tail_len)
        .ok_or(PlanError::TooLarge)?;
    if ddp_allowed && reply.ddp_read && reply.page_len != 0 && nonpayload < t.max_inline_recv {
        return Ok(ReplyPlan::WriteChunk(WritePlan {
            position: reply.head_len,
            len: reply.page_len,
            pad_segment: xdr_pad_size(reply.page_len) != 0,
        }));
    }
    Ok(ReplyPlan::ReplyChunk { len: chunk_len })
}

/// Plans one RPC: C's `rpcrdma_marshal_req` decisions for `rtype` and
/// `wtype`. `ddp_allowed` is false when the RPC's security flavour forbids
/// direct data placement (GSS integrity or privacy).
pub fn plan(
    call: &CallLayout,
    reply: &ReplyLayout,
    ddp_allowed: bool,
    t: &Thresholds,
) -> Result<Plan, PlanError> {
    Ok(Plan {
        reply: plan_reply(reply, ddp_allowed, t)?,
        call: plan_call(call, ddp_allowed, t)?,
    })
}
