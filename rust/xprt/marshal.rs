// SPDX-License-Identifier: GPL-2.0

//! Marshalling Calls and decoding Replies (the C `rpc_rdma.c`:
//! `rpcrdma_marshal_req`, `rpcrdma_reply_handler`,
//! `rpcrdma_complete_rqst`). Every wire decision is the protocol core's;
//! what to do with the connection is `verbs.rs`'s.

use super::stats::Stats;
use crate::{
    errno,
    proto::{
        chunks::CallPlan,
        header::{self, Body, DecodeLimits, Message, ReplyKind},
        RPCRDMA_VERSION,
    },
    sunrpc::{PinnedRqst, Rqst, XdrLayout},
};
use core::sync::atomic::Ordering;
use kernel::prelude::*;

/// Writes the transport header `msg` into `out` (the Send buffer, cut to
/// the inline threshold), then the part of the Call that goes inline by
/// `plan`; returns the bytes used.
pub(crate) fn marshal(
    out: &mut [u8],
    rqst: &Rqst<'_>,
    msg: &Message<'_>,
    plan: &CallPlan,
    call: &XdrLayout<'_>,
) -> Result<usize> {
    let hdr_len = msg.encode(out).map_err(|_| errno::emsgsize())?;
    let mut copy = |at: usize, offset: u32, len: u32| -> Result<usize> {
        let end = at
            .checked_add(usize::try_from(len)?)
            .ok_or_else(errno::emsgsize)?;
        rqst.read_call(offset, out.get_mut(at..end).ok_or_else(errno::emsgsize)?)?;
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
    /// connection, failing Call `xid` if it names one.
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
    Reply(Reply),
}

/// A transport header that answers a Call.
pub(crate) struct Reply {
    pub(crate) xid: u32,
    /// The credit grant; none from an ERR_VERS sent in another version
    /// than 1, whose credit field speaks for that version.
    pub(crate) credit: Option<u32>,
    body_at: usize,
    kind: Result<ReplyKind, header::ReplyError>,
}

/// Decodes the transport header of a received message.
pub(crate) fn classify(data: &[u8]) -> Incoming<'_> {
    let Some(xid) = be32(data, 0).filter(|_| data.len() >= FIXED_WORDS * 4) else {
        return Incoming::Short;
    };
    let (hdr, body_at) = match header::decode(data, &DecodeLimits::REPLY) {
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
        body_at,
        kind: hdr.classify_reply(),
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

impl Reply {
    /// Checks the reply against what its RPC offered: `buflen` bytes of
    /// receive buffer, `page_room` of them in pages.
    pub(crate) fn outcome(&self, buflen: u32, page_room: u32) -> Result<Outcome, Rejected> {
        match self.kind {
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
            Err(_) => Err("malformed reply chunk lists"),
        }
    }

    /// The RDMA_ERROR this reply carries, if it is one.
    pub(crate) fn rdma_error(&self) -> Option<header::RdmaError> {
        match self.kind {
            Ok(ReplyKind::Error(e)) => Some(e),
            _ => None,
        }
    }
}

/// Completes `rqst` with `outcome`, copying the inline part of its Reply
/// from `data` (the whole received message). Runs only once nothing of the
/// RPC's memory is reachable by the server or mapped for DMA.
pub(crate) fn deliver(mut rqst: PinnedRqst, outcome: Outcome, data: &[u8], stats: &Stats) {
    let result = match outcome {
        Outcome::Inline { body_at, written } => {
            let body = data.get(body_at..).unwrap_or(&[]);
            rqst.deliver(body, written).map(|fixup| {
                stats
                    .fixup_copy_count
                    .fetch_add(u64::from(fixup), Ordering::Relaxed);
                stats
                    .total_rdma_reply
                    .fetch_add(u64::from(written), Ordering::Relaxed);
                // C: rpclen + xdr_align_size(writelist).
                let rpclen = u32::try_from(body.len()).unwrap_or(u32::MAX);
                rpclen.saturating_add(written.next_multiple_of(4))
            })
        }
        Outcome::Long { len } => {
            stats
                .total_rdma_reply
                .fetch_add(u64::from(len), Ordering::Relaxed);
            Ok(len)
        }
        Outcome::Failed(e) => Err(e),
    };
    rqst.complete(result);
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
