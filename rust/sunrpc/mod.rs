// SPDX-License-Identifier: GPL-2.0

//! Safe wrappers for the sunrpc objects the transport touches: the
//! transport instance (`struct rpc_xprt`) and its requests (`struct
//! rpc_rqst`) here; in [`transport`], the operations sunrpc calls on an
//! instance, the C entry points that call them, and the class
//! registration; in [`params`], the module parameters; in [`trace`], the
//! module's tracepoints. The class, its ops table and the field-level glue
//! are C (`include/rpcrdma_rs_sunrpc.c`).

pub(crate) mod params;
pub(crate) mod trace;
mod transport;

use crate::{
    bindings,
    rdma::{NetNs, Piece, Pieces, SockAddr},
};
use core::{fmt, marker::PhantomData, mem::ManuallyDrop, ptr::NonNull};
use kernel::{error::to_result, ffi::c_int, prelude::*, str::CStr};

pub(crate) use transport::{
    class_ops, Adapter, ClassOps, ClassRegistration, WriteLock, WriteLocked, XprtOps, XprtStats,
};

/// Backchannel requests the server may have outstanding.
pub(crate) const BC_SLOTS: u32 = bindings::RPCRDMA_RS_BC_SLOTS;
/// Memory regions per connection.
pub(crate) const MRS: u32 = bindings::RPCRDMA_RS_MRS;
/// Most segments in one chunk.
pub(crate) const MAX_SEGS: u32 = bindings::RPCRDMA_RS_MAX_SEGS;
/// Most pages of RPC payload.
pub(crate) const MAX_DATA_PAGES: u32 = bindings::RPCRDMA_RS_MAX_DATA_PAGES;

/// A transport instance of the class.
///
/// # Invariants
///
/// `raw` points to an `rpc_xprt` of this class that stays allocated while
/// the `Xprt` exists: the transport state that holds it is detached, and
/// every connection it made torn down, before `destroy` frees the xprt.
#[derive(Clone, Copy)]
pub(crate) struct Xprt {
    raw: NonNull<bindings::rpc_xprt>,
}

// SAFETY: The functions called on an xprt take its locks as they need.
unsafe impl Send for Xprt {}
// SAFETY: As above.
unsafe impl Sync for Xprt {}

impl Xprt {
    /// Wraps `raw`; for the class's entry points ([`Adapter`]).
    ///
    /// # Safety
    ///
    /// `raw` must be an xprt of this class that outlives the result (and
    /// every copy of it), as the type invariant says.
    unsafe fn from_raw(raw: *mut bindings::rpc_xprt) -> Option<Self> {
        // INVARIANT: by the function's contract.
        NonNull::new(raw).map(|raw| Self { raw })
    }

    fn as_ptr(&self) -> *mut bindings::rpc_xprt {
        self.raw.as_ptr()
    }

    /// Asks sunrpc to close the connection and reconnect (autoclose).
    pub(crate) fn force_disconnect(&self) {
        // SAFETY: `raw` is live (type invariant).
        unsafe { bindings::rpcrdma_rs_xprt_force_disconnect(self.as_ptr()) }
    }

    /// Sets the congestion window to `credits` requests.
    pub(crate) fn set_cwnd(&self, credits: u32) {
        // SAFETY: `raw` is live (type invariant).
        unsafe { bindings::rpcrdma_rs_xprt_set_cwnd(self.as_ptr(), credits) }
    }

    /// Back to one request in flight, for a new connection.
    pub(crate) fn reset_cwnd(&self) {
        // SAFETY: `raw` is live (type invariant).
        unsafe { bindings::rpcrdma_rs_xprt_reset_cwnd(self.as_ptr()) }
    }

    /// Wakes requests that waited for a Send buffer.
    pub(crate) fn write_space(&self) {
        // SAFETY: `raw` is live (type invariant).
        unsafe { bindings::rpcrdma_rs_xprt_write_space(self.as_ptr()) }
    }

    /// Marks that a request waits for a Send buffer.
    pub(crate) fn wait_for_buffer_space(&self) {
        // SAFETY: `raw` is live (type invariant).
        unsafe { bindings::rpcrdma_rs_xprt_wait_for_buffer_space(self.as_ptr()) }
    }

    /// A reply arrived: the connection works, reconnect at once if lost.
    pub(crate) fn reply_arrived(&self) {
        // SAFETY: `raw` is live (type invariant).
        unsafe { bindings::rpcrdma_rs_xprt_reply_arrived(self.as_ptr()) }
    }

    /// Requests holding a congestion slot, and the window, in requests.
    pub(crate) fn window(&self) -> (u32, u32) {
        let (mut cong, mut cwnd) = (0, 0);
        // SAFETY: `raw` is live (type invariant); both are writable.
        unsafe { bindings::rpcrdma_rs_xprt_window(self.as_ptr(), &mut cong, &mut cwnd) };
        (cong, cwnd)
    }

    /// The server's address. For the connect worker: sunrpc may rewrite
    /// the address at other times.
    pub(crate) fn addr(&self) -> Result<SockAddr> {
        let mut storage = bindings::__kernel_sockaddr_storage::default();
        // SAFETY: `raw` is live (type invariant); `storage` is writable, and
        // the helper copies the address into it (C reads the xprt: no Rust
        // reference to it is made).
        let len = unsafe { bindings::rpcrdma_rs_xprt_addr(self.as_ptr(), &mut storage) };
        SockAddr::from_storage(&storage, len)
    }

    /// The network namespace the transport lives in; the xprt holds a
    /// reference on it for as long as it exists.
    pub(crate) fn net(&self) -> &NetNs {
        // SAFETY: `raw` is live (type invariant), and holds a reference on
        // its namespace for as long as it is.
        unsafe { NetNs::from_raw(bindings::rpcrdma_rs_xprt_net(self.as_ptr())) }
    }

    /// The transport's slot table size (`max_reqs`): the
    /// `slot_table_entries` parameter when it was set up, fixed for its
    /// life.
    pub(crate) fn max_reqs(&self) -> u32 {
        // SAFETY: `raw` is live (type invariant).
        unsafe { bindings::rpcrdma_rs_xprt_max_reqs(self.as_ptr()) }
    }

    /// The server's address as text, copied: sysfs may replace the xprt's
    /// string at any time.
    pub(crate) fn peer(&self) -> PeerName {
        let mut name = PeerName([0; PeerName::LEN]);
        // SAFETY: `raw` is live (type invariant); `name` is writable for
        // its length, and the helper copies into it under the RCU read
        // lock, NUL-terminated.
        unsafe {
            bindings::rpcrdma_rs_xprt_peer(self.as_ptr(), name.0.as_mut_ptr().cast(), name.0.len())
        };
        name
    }

    /// Hands a backchannel Call (`data`, from its RPC header on) to the
    /// callback service. `ENOPROTOOPT`: the transport has no callback
    /// service, so the message is not a Call for it; `ENOBUFS` or
    /// `EMSGSIZE`: more Calls than the slots, or one too long; `ENOMEM`:
    /// no memory for another slot.
    pub(crate) fn bc_receive_call(&self, data: &[u8]) -> Result {
        let len = u32::try_from(data.len()).map_err(|_| EINVAL)?;
        // SAFETY: `raw` is live (type invariant); `data` is readable for
        // `len` bytes and copied before the call returns.
        to_result(unsafe {
            bindings::rpcrdma_rs_bc_receive_call(self.as_ptr(), data.as_ptr().cast(), len)
        })
    }

    /// Finds the request waiting for a reply with `xid` and pins it so it
    /// stays while the reply is copied in.
    pub(crate) fn lookup_pin(&self, xid: u32) -> Option<PinnedRqst> {
        // SAFETY: `raw` is live (type invariant).
        let raw = unsafe { bindings::rpcrdma_rs_lookup_pin(self.as_ptr(), xid) };
        // INVARIANT: pinned by the lookup.
        NonNull::new(raw).map(|raw| PinnedRqst { raw })
    }
}

/// The server's address as text ([`Xprt::peer`]), for messages.
pub(crate) struct PeerName([u8; PeerName::LEN]);

impl PeerName {
    /// Room for the longest address sunrpc formats (`RPC_MAX_ADDRBUFLEN`)
    /// and its NUL; a longer one is cut.
    const LEN: usize = 64;
}

impl fmt::Display for PeerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let end = self.0.iter().position(|&b| b == 0);
        match end
            .and_then(|end| self.0.get(..=end))
            .and_then(|s| CStr::from_bytes_with_nul(s).ok())
        {
            Some(s) => fmt::Display::fmt(s, f),
            None => f.write_str("?"),
        }
    }
}

/// A request being transmitted (`send_request`): sunrpc holds the
/// transport's send lock and the request for the duration of the call.
///
/// # Invariants
///
/// `raw` points to a request that stays allocated for `'a`. C changes it
/// meanwhile (the layout helper allocates receive pages into it), so it is
/// only handed to C, as a raw pointer: no Rust reference to it is made.
pub(crate) struct Rqst<'a> {
    raw: NonNull<bindings::rpc_rqst>,
    _rqst: PhantomData<&'a bindings::rpc_rqst>,
}

impl<'a> Rqst<'a> {
    /// Wraps `raw`; for the class's entry points ([`Adapter`]).
    ///
    /// # Safety
    ///
    /// `raw` must be NULL or a live request for the lifetime `'a`, which
    /// sunrpc holds, with the transport's send lock, for that long.
    unsafe fn from_raw(raw: *mut bindings::rpc_rqst) -> Option<Self> {
        // INVARIANT: by the function's contract.
        NonNull::new(raw).map(|raw| Self {
            raw,
            _rqst: PhantomData,
        })
    }

    fn as_ptr(&self) -> *mut bindings::rpc_rqst {
        self.raw.as_ptr()
    }

    /// The XID, as the number its big-endian wire bytes encode.
    pub(crate) fn xid(&self) -> u32 {
        // SAFETY: The request is live (type invariant); its XID is set
        // before sunrpc transmits it, and not changed while it does.
        unsafe { bindings::rpcrdma_rs_rqst_xid(self.as_ptr()) }
    }

    /// The Call's send buffer and, unless `bc_reply` (a backchannel reply
    /// expects no reply), the Reply's receive buffer, described in one
    /// call into C, which writes them into `room` where it lies.
    pub(crate) fn layouts<'s>(
        &self,
        bc_reply: bool,
        room: &'s mut Layouts<'a>,
    ) -> Result<(&'s XdrLayout<'a>, Option<&'s XdrLayout<'a>>)> {
        let reply_ptr: *mut bindings::rpcrdma_rs_xdr_layout = if bc_reply {
            core::ptr::null_mut()
        } else {
            &mut room.reply.raw
        };
        let rqst = self.as_ptr();
        // INVARIANT: C describes this request's buffers, held for `'a`.
        // On failure nothing of `room` is handed out (its fields are
        // private), and it is dropped with the sender's frame.
        // SAFETY: The request is live and held by sunrpc (type invariant);
        // C allocates receive pages into it (no Rust reference to it
        // exists), fills `call`, and `reply` unless its pointer is NULL.
        to_result(unsafe {
            bindings::rpcrdma_rs_rqst_layouts(rqst, &mut room.call.raw, reply_ptr)
        })?;
        Ok((&room.call, (!bc_reply).then_some(&room.reply)))
    }
}

/// Room for the layouts of a request's buffers, which [`Rqst::layouts`]
/// fills in place: kept in the sender's frame, so that they are not
/// copied from one function's frame to the next.
pub(crate) struct Layouts<'a> {
    call: XdrLayout<'a>,
    reply: XdrLayout<'a>,
}

impl Layouts<'_> {
    /// Two empty buffers, until [`Rqst::layouts`] describes a request's.
    pub(crate) fn new() -> Self {
        Self {
            call: XdrLayout::empty(),
            reply: XdrLayout::empty(),
        }
    }
}

/// One of a request's buffers (`struct xdr_buf`), described for chunk
/// planning and registration; valid while the request is held (`'a`).
///
/// # Invariants
///
/// `raw` describes a buffer of a request that sunrpc holds for `'a`; its
/// memory stays allocated until the transport's `buf_free` for the
/// request returns. (GSS privacy frees the pages it encrypted a Call into
/// when it encodes the Call again, through `rq_release_snd_buf`; the C
/// glue wraps that to run `buf_free` first.) `'a` is one `send_request`
/// call ([`Rqst`]), during which sunrpc changes nothing of the request's
/// send buffer. `raw.buf` is that send buffer's `xdr_buf` in the Call's
/// layout, and NULL in the receive buffer's: a reply to an earlier
/// transmission may be placed there meanwhile. Or `raw` is all zeros
/// ([`XdrLayout::empty`]): no head, pages, tail or send buffer.
pub(crate) struct XdrLayout<'a> {
    raw: bindings::rpcrdma_rs_xdr_layout,
    _rqst: PhantomData<&'a ()>,
}

impl XdrLayout<'_> {
    /// An empty buffer, which reaches no memory.
    fn empty() -> Self {
        // INVARIANT: all zeros.
        Self {
            raw: bindings::rpcrdma_rs_xdr_layout::default(),
            _rqst: PhantomData,
        }
    }

    /// Bytes in the head.
    pub(crate) fn head_len(&self) -> u32 {
        self.raw.head_len
    }

    /// Where the page data starts in its first page.
    pub(crate) fn page_base(&self) -> u32 {
        self.raw.page_base
    }

    /// Bytes of page data.
    pub(crate) fn page_len(&self) -> u32 {
        self.raw.page_len
    }

    /// Bytes in the tail.
    pub(crate) fn tail_len(&self) -> u32 {
        self.raw.tail_len
    }

    /// The buffer's size (`buflen`): for a receive buffer, the largest
    /// Reply it can take.
    pub(crate) fn buflen(&self) -> u32 {
        self.raw.buflen
    }

    /// The message's length (`len`).
    pub(crate) fn len(&self) -> u32 {
        self.raw.len
    }

    /// Whether the page data may be placed directly (`XDRBUF_WRITE` for a
    /// send buffer, `XDRBUF_READ` for a receive buffer).
    pub(crate) fn ddp(&self) -> bool {
        self.raw.ddp
    }

    /// Whether the RPC's security flavour allows direct data placement
    /// (not GSS integrity or privacy).
    pub(crate) fn ddp_allowed(&self) -> bool {
        self.raw.ddp_allowed
    }

    /// Copies the Call's bytes from `offset` on into all of `out`; for the
    /// send buffer's layout only (`EINVAL` for the receive buffer's).
    pub(crate) fn read(&self, offset: u32, out: &mut [u8]) -> Result {
        let len = u32::try_from(out.len()).map_err(|_| EINVAL)?;
        if self.raw.buf.is_null()
            || offset
                .checked_add(len)
                .map_or(true, |end| end > self.raw.len)
        {
            return Err(EINVAL);
        }
        // SAFETY: A non-NULL `buf` is the request's send buffer, held and
        // unchanged for `'a` (type invariant), so its message is still
        // `len` bytes long; `out` is writable for `len` bytes.
        to_result(unsafe {
            bindings::rpcrdma_rs_xdr_read(self.raw.buf, offset, out.as_mut_ptr().cast(), len)
        })
    }

    /// Cuts the head into page pieces, appended to `out`.
    pub(crate) fn cut_head(&self, out: &mut Pieces) -> Result {
        // SAFETY: The head is the request's buffer, or an empty layout's
        // NULL of length 0, of which nothing is read (type invariant).
        unsafe { Piece::cut_kernel_buffer(self.raw.head.cast(), self.raw.head_len, out) }
    }

    /// Cuts the page data into page pieces, appended to `out`.
    pub(crate) fn cut_pages(&self, out: &mut Pieces) -> Result {
        let base = usize::try_from(self.raw.page_base)?;
        // SAFETY: The pages are the request's buffer pages (type invariant).
        unsafe {
            Piece::cut_pages(base, self.raw.page_len, out, |at| {
                self.page(at / kernel::page::PAGE_SIZE).ok_or(EINVAL)
            })
        }
    }

    /// Cuts the tail into page pieces, appended to `out`.
    pub(crate) fn cut_tail(&self, out: &mut Pieces) -> Result {
        // SAFETY: The tail is the request's buffer, or an empty layout's
        // NULL of length 0, of which nothing is read (type invariant).
        unsafe { Piece::cut_kernel_buffer(self.raw.tail.cast(), self.raw.tail_len, out) }
    }

    /// Page `index` of the page data array.
    fn page(&self, index: usize) -> Option<*mut bindings::page> {
        if self.raw.pages.is_null() {
            return None;
        }
        let count = (usize::try_from(self.raw.page_base).ok()?
            + usize::try_from(self.raw.page_len).ok()?)
        .div_ceil(kernel::page::PAGE_SIZE);
        if index >= count {
            return None;
        }
        // SAFETY: The array has an entry for every page of the page data,
        // and lives while the request is held.
        let page = unsafe { *self.raw.pages.add(index) };
        (!page.is_null()).then_some(page)
    }
}

/// A request found by its XID and pinned: completing it unpins it.
/// Dropping it unpins it without completing it, so the request keeps
/// waiting for a reply and is retransmitted on the next connection: no
/// path that merely gives up on a reply can fail an RPC.
///
/// # Invariants
///
/// `raw` is a request pinned by `xprt_pin_rqst` and not yet completed.
pub(crate) struct PinnedRqst {
    raw: NonNull<bindings::rpc_rqst>,
}

// SAFETY: A pinned request may be completed from any thread: completion
// takes the transport's queue lock.
unsafe impl Send for PinnedRqst {}

impl PinnedRqst {
    /// Copies the inline part of an RPC Reply into the request's receive
    /// buffer, around `writelist` bytes the server placed in its pages;
    /// returns the bytes copied into pages, and those left out because
    /// the buffer ends before them.
    pub(crate) fn deliver(&mut self, data: &[u8], writelist: u32) -> Result<(u32, u32)> {
        let len = u32::try_from(data.len()).map_err(|_| EINVAL)?;
        let mut dropped = 0;
        // SAFETY: The request is pinned (type invariant), so its buffers
        // stay; `data` is readable for `len` bytes.
        let copied = unsafe {
            bindings::rpcrdma_rs_rqst_deliver(
                self.raw.as_ptr(),
                data.as_ptr().cast(),
                len,
                writelist,
                &mut dropped,
            )
        };
        to_result(copied)?;
        Ok((u32::try_from(copied).map_err(|_| EINVAL)?, dropped))
    }

    /// The first word of the receive buffer, where a Reply chunk's RPC
    /// message starts (its XID). Read only once the server can no longer
    /// write there.
    pub(crate) fn rcv_first_word(&self) -> Option<u32> {
        let mut word = 0;
        // SAFETY: The request is pinned (type invariant), so its receive
        // buffer stays.
        let found = unsafe { bindings::rpcrdma_rs_rqst_rcv_word0(self.raw.as_ptr(), &mut word) };
        found.then_some(word)
    }

    /// Room in the receive buffer, and in its pages.
    pub(crate) fn rcv_room(&self) -> (u32, u32) {
        let mut buflen = 0;
        let mut page_len = 0;
        // SAFETY: The request is pinned (type invariant).
        unsafe {
            bindings::rpcrdma_rs_rqst_rcv_room(self.raw.as_ptr(), &mut buflen, &mut page_len)
        };
        (buflen, page_len)
    }

    /// Completes the request with `result`: bytes received, or a negative
    /// errno that fails the RPC.
    pub(crate) fn complete(self, result: Result<u32>) {
        let result: c_int = match result {
            Ok(n) => c_int::try_from(n).unwrap_or(c_int::MAX),
            Err(e) => e.to_errno(),
        };
        let this = ManuallyDrop::new(self);
        // SAFETY: Pinned and not yet completed (type invariant); this
        // consumes it.
        unsafe { bindings::rpcrdma_rs_complete_unpin(this.raw.as_ptr(), result) };
    }
}

impl Drop for PinnedRqst {
    fn drop(&mut self) {
        // SAFETY: Pinned and not yet completed (type invariant); not used
        // again.
        unsafe { bindings::rpcrdma_rs_unpin(self.raw.as_ptr()) };
    }
}

/// The rate-limit budgets of the module's log lines: each kind has its
/// own, so that a flood of one cannot hide another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Budget {
    /// What a server did wrong.
    Fault,
    /// Connection losses and timeouts.
    Conn,
    /// Information: what may be no fault.
    Info,
}

/// True if a line of `budget` may be printed now.
pub(crate) fn ratelimit(budget: Budget) -> bool {
    let which = match budget {
        Budget::Fault => bindings::RPCRDMA_RS_BUDGET_FAULT,
        Budget::Conn => bindings::RPCRDMA_RS_BUDGET_CONN,
        Budget::Info => bindings::RPCRDMA_RS_BUDGET_INFO,
    };
    // SAFETY: `which` is one of the budgets the helper has.
    unsafe { bindings::rpcrdma_rs_ratelimit(which) }
}
