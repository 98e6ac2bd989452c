// SPDX-License-Identifier: GPL-2.0

//! Marshalling Calls and handling Replies (the C `rpc_rdma.c`:
//! `rpcrdma_marshal_req`, `rpcrdma_reply_handler`,
//! `rpcrdma_complete_rqst`). Every wire decision is the protocol core's.

use super::{frwr::Pending, verbs::EpShared};
use crate::{
    errno,
    proto::{
        chunks::CallPlan,
        credits::Credits,
        header::{self, Body, DecodeLimits, Message, ReplyKind},
    },
    rdma::Completion,
    sunrpc::{self, Rqst, XdrLayout},
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
            let end = copy(hdr_len, 0, call.raw.head_len)?;
            let tail_at = call
                .raw
                .head_len
                .checked_add(call.raw.page_len)
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

/// Handles one received message: finds the Call it answers, updates the
/// credits, and hands the RPC Reply to sunrpc. A message that cannot be
/// trusted resets the connection (after failing its RPC, if found).
pub(crate) fn handle_reply(ep: &EpShared, data: &[u8], completion: &Completion) {
    let stats = &ep.stats;
    ep.xprt.reply_arrived();
    let Some(xid) = be32(data, 0).filter(|_| data.len() >= FIXED_WORDS * 4) else {
        bad_reply(ep, None, "short transport header", data.len());
        return;
    };
    let decoded = header::decode(data, &DecodeLimits::REPLY);
    let (hdr, hdr_len) = match decoded {
        Ok(d) => d,
        Err(e) => {
            if sunrpc::warn_ratelimit() {
                pr_warn!(
                    "{}: bad transport header (xid {:#010x}): {:?}\n",
                    ep.xprt.peer(),
                    xid,
                    e
                );
            }
            let rqst = ep.xprt.lookup_pin(xid).map(|r| (xid, r));
            bad_reply(ep, rqst, "", 0);
            return;
        }
    };
    let body = data.get(hdr_len..).unwrap_or(&[]);
    if is_backchannel_call(&hdr, body) {
        match ep.xprt.bc_receive_call(body) {
            Ok(()) => return,
            // No callback service: not a Call for us after all.
            Err(e) if e == errno::enoprotoopt() => {}
            Err(e) => {
                if sunrpc::warn_ratelimit() {
                    pr_warn!("{}: backchannel Call dropped: {:?}\n", ep.xprt.peer(), e);
                }
                ep.connection_lost();
                return;
            }
        }
    }
    let Some(mut rqst) = ep.xprt.lookup_pin(xid) else {
        // No such Call (sunrpc counts bad_xids): a late or duplicate reply.
        return;
    };
    let granted = Credits::sanitize(hdr.credit, super::verbs::MAX_REQUESTS);
    if ep.credits.swap(granted, Ordering::AcqRel) != granted {
        ep.xprt.set_cwnd(granted);
    }
    let (buflen, page_room) = rqst.rcv_room();
    let result = match hdr.classify_reply() {
        Ok(ReplyKind::Inline { write_chunk_len }) => {
            match u32::try_from(write_chunk_len) {
                Ok(written) if written <= page_room => {
                    let result = rqst.deliver(body, written).map(|fixup| {
                        stats
                            .fixup_copy_count
                            .fetch_add(u64::from(fixup), Ordering::Relaxed);
                        stats
                            .total_rdma_reply
                            .fetch_add(u64::from(written), Ordering::Relaxed);
                        // C: rpclen + xdr_align_size(writelist).
                        let rpclen = u32::try_from(body.len()).unwrap_or(u32::MAX);
                        rpclen.saturating_add(written.next_multiple_of(4))
                    });
                    Ok(result)
                }
                _ => Err("Write chunk longer than offered"),
            }
        }
        Ok(ReplyKind::Long { reply_chunk_len }) => match u32::try_from(reply_chunk_len) {
            Ok(len) if len <= buflen => {
                stats
                    .total_rdma_reply
                    .fetch_add(u64::from(len), Ordering::Relaxed);
                Ok(Ok(len))
            }
            _ => Err("Reply chunk longer than offered"),
        },
        Ok(ReplyKind::Error(e)) => {
            stats.rdma_errors.fetch_add(1, Ordering::Relaxed);
            if sunrpc::warn_ratelimit() {
                pr_warn!(
                    "{}: RDMA_ERROR {:?} for xid {:#010x}\n",
                    ep.xprt.peer(),
                    e,
                    xid
                );
            }
            Ok(Err(EIO))
        }
        Err(_) => Err("malformed reply chunk lists"),
    };
    match result {
        Ok(result) => {
            ep.release_rpc(
                xid,
                completion.invalidated_rkey,
                Pending::Complete(rqst, result),
            );
        }
        Err(what) => {
            if sunrpc::warn_ratelimit() {
                pr_warn!("{}: {} (xid {:#010x})\n", ep.xprt.peer(), what, xid);
            }
            ep.stats.bad_reply_count.fetch_add(1, Ordering::Relaxed);
            ep.connection_lost();
            ep.release_rpc(
                xid,
                completion.invalidated_rkey,
                Pending::Complete(rqst, Err(EIO)),
            );
        }
    }
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

/// Counts a bad reply, fails its RPC if known, and resets the connection.
fn bad_reply(ep: &EpShared, rqst: Option<(u32, sunrpc::PinnedRqst)>, what: &str, len: usize) {
    ep.stats.bad_reply_count.fetch_add(1, Ordering::Relaxed);
    if !what.is_empty() && sunrpc::warn_ratelimit() {
        pr_warn!("{}: {} ({} bytes)\n", ep.xprt.peer(), what, len);
    }
    ep.connection_lost();
    if let Some((xid, rqst)) = rqst {
        // Its memory is unreachable before it completes.
        ep.release_rpc(xid, None, Pending::Complete(rqst, Err(EIO)));
    }
}
