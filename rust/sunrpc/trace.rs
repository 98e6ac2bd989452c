// SPDX-License-Identifier: GPL-2.0

//! The module's tracepoints, `rpcrdma_rs:*` in tracefs: defined in C
//! (`include/rpcrdma_rs_trace.h`) and fired through the plain functions of
//! `include/rpcrdma_rs_trace.c`, as Rust cannot call the static inline
//! `trace_*()`. Each function here costs a call and a patched-out branch
//! while its event is off; text is formatted only when the event is on,
//! into a buffer on the stack. None allocates or sleeps: the reply and
//! credit events fire in completion context.

use super::Xprt;
use crate::{bindings, proto::private_data::Negotiated};
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
/// `mr` completed with work completion `status`.
pub(crate) fn mr_error(xprt: &Xprt, op: &'static str, mr: u32, status: u32) {
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
        )
    }
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
