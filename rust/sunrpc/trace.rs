// SPDX-License-Identifier: GPL-2.0

//! The module's tracepoints, `rpcrdma_rs:*` in tracefs: defined in C
//! (`include/rpcrdma_rs_trace.h`) and fired through the plain functions of
//! `include/rpcrdma_rs_trace.c`, as Rust cannot call the static inline
//! `trace_*()`. Each function here costs a call and a patched-out branch
//! while its event is off; text is formatted only when the event is on,
//! into a buffer on the stack. None allocates or sleeps: the reply and
//! credit events fire in completion context.

use super::Xprt;
use crate::{
    bindings,
    proto::{header::Segment, private_data::Negotiated},
};
use core::fmt::{self, Write};
use kernel::{error::Result, ffi::c_int, str::CStr};

/// The longest string an event records; longer text is cut.
const STR_MAX: usize = bindings::RPCRDMA_RS_TRACE_STR_MAX as usize;

/// Text for an event: formatted on the stack, cut at [`STR_MAX`] bytes
/// (at a character boundary).
struct Text {
    buf: [u8; STR_MAX],
    len: usize,
}

impl Text {
    fn new(args: fmt::Arguments<'_>) -> Self {
        let mut text = Self {
            buf: [0; STR_MAX],
            len: 0,
        };
        // `write_str` cuts rather than fails: an error can only come from
        // a `Display` implementation, and what was written before it stays.
        let _ = text.write_fmt(args);
        text
    }

    fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }
}

impl Write for Text {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = STR_MAX.saturating_sub(self.len);
        let mut n = s.len().min(room);
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        let src = s.as_bytes().get(..n).unwrap_or(&[]);
        if let Some(dst) = self.buf.get_mut(self.len..self.len + src.len()) {
            dst.copy_from_slice(src);
            self.len += src.len();
        }
        Ok(())
    }
}

/// `bytes` cut to what an event records: the length passed to C.
fn bounded(bytes: &[u8]) -> &[u8] {
    bytes.get(..bytes.len().min(STR_MAX)).unwrap_or(&[])
}

/// `rpcrdma_rs_connect`: a connection attempt to the transport's server
/// ended with `result`; through `device` (`None` if the attempt failed
/// before a route was found), asking the server for `credits` (0 if not
/// yet known).
pub(crate) fn connect(xprt: &Xprt, device: Option<&CStr>, result: Result, credits: u32) {
    let device = bounded(device.map_or(b"-".as_slice(), |d| d.as_bytes()));
    let result: c_int = match result {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    };
    // SAFETY: The xprt is live (`Xprt`'s invariant); `device` is readable
    // for its length, at most `STR_MAX`, and copied before the call
    // returns.
    unsafe {
        bindings::rpcrdma_rs_trace_connect(
            xprt.as_ptr().cast_const(),
            device.as_ptr().cast(),
            device.len(),
            result,
            credits,
        )
    }
}

/// `rpcrdma_rs_disconnect`: an established connection ended, for `reason`.
pub(crate) fn disconnect(xprt: &Xprt, reason: fmt::Arguments<'_>) {
    // SAFETY: Reads a static key; no precondition.
    if !unsafe { bindings::rpcrdma_rs_trace_disconnect_enabled() } {
        return;
    }
    let reason = Text::new(reason);
    let reason = reason.as_bytes();
    // SAFETY: The xprt is live (`Xprt`'s invariant); `reason` is readable
    // for its length, at most `STR_MAX`, and copied before the call
    // returns.
    unsafe {
        bindings::rpcrdma_rs_trace_disconnect(
            xprt.as_ptr().cast_const(),
            reason.as_ptr().cast(),
            reason.len(),
        )
    }
}

/// `rpcrdma_rs_private_data`: a connection was established with
/// `negotiated`; `status` says whether the server's RFC 8797 private data
/// was received, or why none counts.
pub(crate) fn private_data(xprt: &Xprt, negotiated: &Negotiated, status: fmt::Arguments<'_>) {
    // SAFETY: Reads a static key; no precondition.
    if !unsafe { bindings::rpcrdma_rs_trace_private_data_enabled() } {
        return;
    }
    let (valid, send, recv, rinv) = match &negotiated.peer {
        Some(p) => (true, p.send_size(), p.recv_size(), p.remote_invalidation()),
        None => (false, 0, 0, false),
    };
    let status = Text::new(status);
    let status = status.as_bytes();
    // SAFETY: The xprt is live (`Xprt`'s invariant); `status` is readable
    // for its length, at most `STR_MAX`, and copied before the call
    // returns.
    unsafe {
        bindings::rpcrdma_rs_trace_private_data(
            xprt.as_ptr().cast_const(),
            valid,
            send,
            recv,
            rinv,
            negotiated.inline_send,
            negotiated.inline_recv,
            status.as_ptr().cast(),
            status.len(),
        )
    }
}

/// What was wrong with a received message, for `rpcrdma_rs_reply_error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReplyError {
    /// The server answered with RDMA_ERROR.
    RdmaError,
    /// Shorter than the fixed transport header.
    Short,
    /// A transport header that does not decode.
    Malformed,
    /// Chunks the Call did not offer, or chunk lists that make no sense.
    BadChunk,
    /// A second reply to an RPC already answered.
    Duplicate,
    /// A reply to no RPC that waits for one.
    UnknownXid,
}

impl ReplyError {
    /// The event's `kind`: one word.
    fn name(self) -> &'static str {
        match self {
            Self::RdmaError => "rdma_error",
            Self::Short => "short",
            Self::Malformed => "malformed",
            Self::BadChunk => "bad_chunk",
            Self::Duplicate => "duplicate",
            Self::UnknownXid => "unknown_xid",
        }
    }
}

/// `rpcrdma_rs_reply_error`: a received message of `kind`, naming `xid`
/// (if it was long enough to), described by `detail`.
pub(crate) fn reply_error(
    xprt: &Xprt,
    xid: Option<u32>,
    kind: ReplyError,
    detail: fmt::Arguments<'_>,
) {
    // SAFETY: Reads a static key; no precondition.
    if !unsafe { bindings::rpcrdma_rs_trace_reply_error_enabled() } {
        return;
    }
    let kind = kind.name().as_bytes();
    let detail = Text::new(detail);
    let detail = detail.as_bytes();
    // SAFETY: The xprt is live (`Xprt`'s invariant); `kind` and `detail`
    // are readable for their lengths, at most `STR_MAX`, and copied before
    // the call returns.
    unsafe {
        bindings::rpcrdma_rs_trace_reply_error(
            xprt.as_ptr().cast_const(),
            xid.unwrap_or(0),
            kind.as_ptr().cast(),
            kind.len(),
            detail.as_ptr().cast(),
            detail.len(),
        )
    }
}

/// `rpcrdma_rs_credits`: the server's grant went from `old` to `new`.
pub(crate) fn credits(xprt: &Xprt, old: u32, new: u32) {
    // SAFETY: The xprt is live (`Xprt`'s invariant).
    unsafe { bindings::rpcrdma_rs_trace_credits(xprt.as_ptr().cast_const(), old, new) }
}

/// `rpcrdma_rs_mr_error`: the `op` (`REG_MR`, `LOCAL_INV`) of memory region
/// `mr` completed with work completion `status` (the device's own code:
/// `vendor_err`).
pub(crate) fn mr_error(xprt: &Xprt, op: &'static str, mr: u32, status: u32, vendor_err: u32) {
    let op = bounded(op.as_bytes());
    // SAFETY: The xprt is live (`Xprt`'s invariant); `op` is readable for
    // its length, at most `STR_MAX`, and copied before the call returns.
    unsafe {
        bindings::rpcrdma_rs_trace_mr_error(
            xprt.as_ptr().cast_const(),
            op.as_ptr().cast(),
            op.len(),
            mr,
            status,
            vendor_err,
        )
    }
}

/// `rpcrdma_rs_wc_error`: a Send or Receive (`op`) completed with work
/// completion `status` (the device's own code: `vendor_err`).
pub(crate) fn wc_error(xprt: &Xprt, op: &'static str, status: u32, vendor_err: u32) {
    let op = bounded(op.as_bytes());
    // SAFETY: The xprt is live (`Xprt`'s invariant); `op` is readable for
    // its length, at most `STR_MAX`, and copied before the call returns.
    unsafe {
        bindings::rpcrdma_rs_trace_wc_error(
            xprt.as_ptr().cast_const(),
            op.as_ptr().cast(),
            op.len(),
            status,
            vendor_err,
        )
    }
}

/// How a Call goes, for `rpcrdma_rs_marshal` (the C glue's `rtype`).
#[derive(Clone, Copy)]
pub(crate) enum Rtype {
    /// All of it inline.
    Inline = 0,
    /// Its page data in a Read chunk.
    ReadChunk = 1,
    /// All of it in a Read chunk at position zero (RDMA_NOMSG).
    LongCall = 2,
}

/// How a Reply may come back, for `rpcrdma_rs_marshal` (`wtype`).
#[derive(Clone, Copy)]
pub(crate) enum Wtype {
    /// Inline.
    Inline = 0,
    /// Its page data in a Write chunk.
    WriteChunk = 1,
    /// All of it in a Reply chunk.
    ReplyChunk = 2,
}

/// `rpcrdma_rs_marshal`: Call `xid` is being posted, a transport header of
/// `hdr` bytes and `inline_len` bytes of the Call inline, as `call` and
/// `reply` say.
pub(crate) fn marshal(xprt: &Xprt, xid: u32, hdr: u32, inline_len: u32, call: Rtype, reply: Wtype) {
    // SAFETY: The xprt is live (`Xprt`'s invariant).
    unsafe {
        bindings::rpcrdma_rs_trace_marshal(
            xprt.as_ptr().cast_const(),
            xid,
            hdr,
            inline_len,
            call as u32,
            reply as u32,
        )
    }
}

/// Which chunk a segment is of, for `rpcrdma_rs_chunk` (its `kind`).
#[derive(Clone, Copy)]
pub(crate) enum Chunk {
    /// A Read chunk's (or a Long Call's).
    Read = 0,
    /// The Write chunk's.
    Write = 1,
    /// The Write chunk's XDR pad.
    Pad = 2,
    /// The Reply chunk's.
    Reply = 3,
}

/// Whether `rpcrdma_rs_chunk` is on: the segments are walked only then.
pub(crate) fn chunk_enabled() -> bool {
    // SAFETY: Reads a static key; no precondition.
    unsafe { bindings::rpcrdma_rs_trace_chunk_enabled() }
}

/// `rpcrdma_rs_chunk`: Call `xid` advertised `seg` in a chunk of `kind`,
/// at XDR position `pos` (Read chunks; 0 for the others).
pub(crate) fn chunk(xprt: &Xprt, xid: u32, kind: Chunk, pos: u32, seg: &Segment) {
    // SAFETY: The xprt is live (`Xprt`'s invariant).
    unsafe {
        bindings::rpcrdma_rs_trace_chunk(
            xprt.as_ptr().cast_const(),
            xid,
            kind as u32,
            pos,
            seg.handle,
            seg.length,
            seg.offset,
        )
    }
}

/// `rpcrdma_rs_reply`: a reply to `xid` arrived with proc `proc` and a
/// grant of `credits` (as sent).
pub(crate) fn reply(xprt: &Xprt, xid: u32, credits: u32, proc: u32) {
    // SAFETY: The xprt is live (`Xprt`'s invariant).
    unsafe { bindings::rpcrdma_rs_trace_reply(xprt.as_ptr().cast_const(), xid, credits, proc) }
}

/// `rpcrdma_rs_mr_wait`: Call `xid` waits for a free memory region.
pub(crate) fn mr_wait(xprt: &Xprt, xid: u32) {
    // SAFETY: The xprt is live (`Xprt`'s invariant).
    unsafe { bindings::rpcrdma_rs_trace_mr_wait(xprt.as_ptr().cast_const(), xid) }
}

/// `rpcrdma_rs_map_error`: Call `xid`'s chunks could not be mapped
/// (`err`).
pub(crate) fn map_error(xprt: &Xprt, xid: u32, err: kernel::error::Error) {
    // SAFETY: The xprt is live (`Xprt`'s invariant).
    unsafe { bindings::rpcrdma_rs_trace_map_error(xprt.as_ptr().cast_const(), xid, err.to_errno()) }
}

/// `rpcrdma_rs_cb_reply`: the reply to backchannel Call `xid`, `len`
/// bytes, was posted.
pub(crate) fn cb_reply(xprt: &Xprt, xid: u32, len: u32) {
    // SAFETY: The xprt is live (`Xprt`'s invariant).
    unsafe { bindings::rpcrdma_rs_trace_cb_reply(xprt.as_ptr().cast_const(), xid, len) }
}

/// `rpcrdma_rs_device_removal`: RDMA device `device`, the RDMA core's
/// `index`, is going away.
pub(crate) fn device_removal(device: &CStr, index: u32) {
    let device = bounded(device.as_bytes());
    // SAFETY: `device` is readable for its length, at most `STR_MAX`, and
    // copied before the call returns.
    unsafe {
        bindings::rpcrdma_rs_trace_device_removal(device.as_ptr().cast(), device.len(), index)
    }
}
