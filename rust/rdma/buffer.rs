// SPDX-License-Identifier: GPL-2.0

//! DMA-mapped buffers that are posted as one Send or one Receive, and the
//! completions the RDMA core reports for them (`struct ib_cqe`).

use super::{CmHandler, CmId};
use crate::{bindings, errno};
use core::{marker::PhantomData, ptr::NonNull};
use kernel::{alloc::KVec, error::to_result, prelude::*, sync::Arc, types::Opaque};

/// What the RDMA core reports about one completed work request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Completion {
    /// `IB_WC_SUCCESS` (0) or why the request failed or was flushed.
    pub(crate) status: u32,
    /// Bytes received (Receives only).
    pub(crate) byte_len: u32,
    /// The R_key the peer invalidated with Send With Invalidate, if it did.
    pub(crate) invalidated_rkey: Option<u32>,
}

impl Completion {
    /// True when the work request completed successfully.
    pub(crate) fn is_success(&self) -> bool {
        self.status == bindings::ib_wc_status_IB_WC_SUCCESS
    }

    /// True when the work request was flushed: the QP went into the error
    /// state (teardown, or an earlier failure) before it ran.
    pub(crate) fn is_flush(&self) -> bool {
        self.status == bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR
    }
}

/// Receives the completions of a [`WorkBuf`]'s work requests. Called from
/// the CQ's workqueue, in process context.
pub(crate) trait CompletionHandler: Send + Sync + 'static + Sized {
    /// The Send of `buf` completed, or was flushed.
    fn sent(&self, buf: &WorkBuf<'_, Self>, completion: &Completion);
    /// A Receive completed, or was flushed. On success `rep` lends what
    /// arrived until it is reposted or held.
    fn received(&self, rep: Received<'_, Self>, completion: &Completion);
}

/// A completed Receive buffer that is not posted again yet: the one way to
/// read what arrived. Reposting consumes it, so no borrow of the bytes can
/// outlive the moment the device may write them again.
///
/// # Invariants
///
/// `buf` is not posted; its first `len` bytes were written by the device
/// and synced for the CPU.
pub(crate) struct Received<'a, H: CompletionHandler> {
    buf: &'a WorkBuf<'a, H>,
    len: usize,
}

impl<'a, H: CompletionHandler> Received<'a, H> {
    /// What arrived.
    pub(crate) fn data(&self) -> &[u8] {
        // SAFETY: Not posted, so the device does not write the bytes while
        // the borrow lives (type invariant); `len` is within the buffer.
        unsafe { core::slice::from_raw_parts(self.buf.data.as_ptr(), self.len) }
    }

    /// The buffer itself, giving up the bytes: for reposting.
    pub(crate) fn into_buf(self) -> &'a WorkBuf<'a, H> {
        self.buf
    }

    /// The buffer itself.
    pub(crate) fn buf(&self) -> &'a WorkBuf<'a, H> {
        self.buf
    }

    /// Keeps the buffer aside without a borrow, e.g. until the memory of
    /// the RPC it answers is invalidated; [`WorkBuf::reclaim`] gives it back.
    pub(crate) fn hold(self) -> HeldRecv {
        HeldRecv {
            buf: core::ptr::from_ref(self.buf).cast(),
            len: self.len,
            tag: self.buf.tag,
        }
    }
}

/// A completed Receive buffer kept aside, not posted: see
/// [`Received::hold`]. Not `Clone`: one holder at a time.
pub(crate) struct HeldRecv {
    buf: *const core::ffi::c_void,
    len: usize,
    tag: u32,
}

impl HeldRecv {
    /// The tag of the buffer.
    pub(crate) fn tag(&self) -> u32 {
        self.tag
    }
}

// SAFETY: Only an address to compare with, a length and a tag.
unsafe impl Send for HeldRecv {}

/// A kernel buffer mapped for DMA by a connection's device, posted as a
/// whole. It borrows the connection (`'id`), so it is unmapped before the
/// connection lets go of the device.
///
/// # Invariants
///
/// `cqe` is the first field (`#[repr(C)]`) and its `done` is
/// [`done_callback::<H>`]. `data` owns `len` initialised bytes of a
/// `capacity`-byte `KVec` allocation, freed by `drop`. While `mapped`,
/// `addr` is the mapping of those bytes for `device`, which the borrowed
/// connection keeps allocated.
#[repr(C)]
#[pin_data(PinnedDrop)]
pub(crate) struct WorkBuf<'id, H: CompletionHandler> {
    #[pin]
    cqe: Opaque<bindings::ib_cqe>,
    /// The bytes, from `KVec::into_raw_parts`: reached only through raw
    /// pointers, since the device writes them while the buffer is posted.
    data: NonNull<u8>,
    len: usize,
    capacity: usize,
    addr: u64,
    mapped: bool,
    device: *mut bindings::ib_device,
    lkey: u32,
    to_device: bool,
    tag: u32,
    handler: Arc<H>,
    _connection: PhantomData<&'id ()>,
}

// SAFETY: The raw pointers are a device and an owned allocation, usable
// from any thread.
unsafe impl<H: CompletionHandler> Send for WorkBuf<'_, H> {}
// SAFETY: A shared reference never reads or writes the bytes: that takes a
// `Received` (one per completed Receive, not posted) or `&mut` (`fill_with`,
// for a Send buffer the owner has not posted).
unsafe impl<H: CompletionHandler> Sync for WorkBuf<'_, H> {}

impl<'id, H: CompletionHandler> WorkBuf<'id, H> {
    /// Allocates `len` bytes and maps them for the device of `id`, which
    /// must have its QP: for Sends when `to_device`, else for Receives.
    pub(crate) fn new<C: CmHandler>(
        id: &'id CmId<C>,
        len: usize,
        to_device: bool,
        tag: u32,
        handler: Arc<H>,
    ) -> Result<Pin<KBox<Self>>> {
        // SAFETY: The result borrows `id`, so it goes first.
        unsafe { Self::new_unbound(id, len, to_device, tag, handler) }
    }

    /// As [`WorkBuf::new`], for a buffer kept next to its connection.
    ///
    /// # Safety
    ///
    /// The buffer must be dropped before `id`.
    pub(crate) unsafe fn new_unbound<C: CmHandler>(
        id: &CmId<C>,
        len: usize,
        to_device: bool,
        tag: u32,
        handler: Arc<H>,
    ) -> Result<Pin<KBox<Self>>> {
        let device = id.device().ok_or(EINVAL)?;
        let lkey = id.local_dma_lkey()?;
        let (data, len, capacity) = KVec::from_elem(0u8, len, GFP_KERNEL)?.into_raw_parts();
        // A `KVec` pointer is never NULL, even when empty.
        let data = NonNull::new(data).ok_or(ENOMEM)?;
        let buf = KBox::pin_init(
            pin_init!(Self {
                cqe <- Opaque::ffi_init(|slot: *mut bindings::ib_cqe| {
                    // SAFETY: `slot` is valid for writes while initialised.
                    unsafe {
                        slot.write(bindings::ib_cqe {
                            done: Some(done_callback::<H>),
                        })
                    };
                }),
                data,
                len,
                capacity,
                addr: 0,
                mapped: false,
                device: device.as_raw(),
                lkey,
                to_device,
                tag,
                handler,
                _connection: PhantomData,
            }),
            GFP_KERNEL,
        );
        let mut buf = match buf {
            Ok(buf) => buf,
            Err(e) => {
                // SAFETY: From `into_raw_parts` above; no buffer owns it.
                drop(unsafe { KVec::from_raw_parts(data.as_ptr(), len, capacity) });
                return Err(e);
            }
        };
        // SAFETY: Plain fields are written, nothing moves out of the pin.
        let this = unsafe { buf.as_mut().get_unchecked_mut() };
        let mut addr = 0u64;
        // SAFETY: `data` is a live allocation of `len` bytes that stays put
        // until `drop` unmaps it; `device` is kept allocated by `id`.
        to_result(unsafe {
            bindings::rpcrdma_rs_dma_map(
                this.device,
                this.data.as_ptr().cast(),
                this.len,
                to_device,
                &mut addr,
            )
        })?;
        // INVARIANT: `addr` maps `data` for `device`.
        this.addr = addr;
        this.mapped = true;
        Ok(buf)
    }

    /// Lets `write` fill a Send buffer in place, then hands the `len` bytes
    /// it reports to the device.
    ///
    /// # Safety
    ///
    /// The buffer must not be posted: the device must not be reading it.
    pub(crate) unsafe fn fill_with(
        self: Pin<&mut Self>,
        write: impl FnOnce(&mut [u8]) -> Result<usize>,
    ) -> Result<usize> {
        // SAFETY: Plain fields are written, nothing moves out of the pin.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: Not posted (the function's contract) and `&mut self`, so
        // nothing else reads or writes the bytes.
        let bytes = unsafe { core::slice::from_raw_parts_mut(this.data.as_ptr(), this.len) };
        let len = write(bytes)?;
        if len > this.len {
            return Err(errno::emsgsize());
        }
        // SAFETY: Mapped by `new_unbound` (type invariant).
        unsafe {
            bindings::rpcrdma_rs_dma_sync_for_device(this.device, this.addr, len, this.to_device)
        };
        Ok(len)
    }

    /// The tag given at creation.
    pub(crate) fn tag(&self) -> u32 {
        self.tag
    }

    /// Takes back a buffer [`Received::hold`] kept aside; `held` is handed
    /// back if it is another buffer's. A `HeldRecv` must not outlive its
    /// buffer (the owner drops every one before freeing the buffers), or a
    /// new buffer at the same address could take it for its own.
    pub(crate) fn reclaim(
        &self,
        held: HeldRecv,
    ) -> core::result::Result<Received<'_, H>, HeldRecv> {
        if !core::ptr::eq(held.buf, core::ptr::from_ref(self).cast()) {
            return Err(held);
        }
        // INVARIANT: `held` came from a `Received` of this buffer, which is
        // not posted since (posting takes the `Received`, and `held` is not
        // `Clone`).
        Ok(Received {
            buf: self,
            len: held.len,
        })
    }

    /// The DMA address, length and local key to post.
    pub(crate) fn sge(&self) -> (u64, u32, u32) {
        let len = u32::try_from(self.len).unwrap_or(u32::MAX);
        (self.addr, len, self.lkey)
    }

    /// The completion entry to post with.
    pub(crate) fn cqe(&self) -> *mut bindings::ib_cqe {
        self.cqe.get()
    }
}

#[pinned_drop]
impl<H: CompletionHandler> PinnedDrop for WorkBuf<'_, H> {
    fn drop(self: Pin<&mut Self>) {
        if self.mapped {
            // SAFETY: Mapped by `new` for a device the connection still
            // holds (type invariant), and no longer posted: the contract of
            // posting is a drain before the buffer goes.
            unsafe {
                bindings::rpcrdma_rs_dma_unmap(self.device, self.addr, self.len, self.to_device)
            };
        }
        // SAFETY: From `into_raw_parts` in `new_unbound` (type invariant),
        // freed only here.
        drop(unsafe { KVec::from_raw_parts(self.data.as_ptr(), self.len, self.capacity) });
    }
}

/// The RDMA core's completion callback for work requests of [`WorkBuf<H>`].
///
/// # Safety
///
/// `wc->wr_cqe` is the `cqe` of a live `WorkBuf<'_, H>` that was posted.
unsafe extern "C" fn done_callback<H: CompletionHandler>(
    _cq: *mut bindings::ib_cq,
    wc: *mut bindings::ib_wc,
) {
    // SAFETY: `wc` is valid during the callback.
    let wc = unsafe { &*wc };
    // SAFETY: Every work request is posted with its buffer's `cqe` in
    // `wr_cqe` (the union member the kernel's CQ API uses).
    let cqe = unsafe { wc.__bindgen_anon_1.wr_cqe };
    // CAST: `cqe` is the first field of the `#[repr(C)]` `WorkBuf<H>`,
    // whose `Opaque` wrapper is transparent.
    let buf = cqe.cast::<WorkBuf<'_, H>>();
    // SAFETY: By the function's contract the buffer is alive.
    let buf = unsafe { &*buf };
    let with_invalidate = i32::try_from(bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE).unwrap_or(0);
    let invalidated = wc.wc_flags & with_invalidate != 0;
    // SAFETY: Both members of the union are 32-bit integers; the value is
    // the R_key when IB_WC_WITH_INVALIDATE is set, and unused otherwise.
    let rkey = unsafe { wc.ex.invalidate_rkey };
    let completion = Completion {
        status: wc.status,
        byte_len: wc.byte_len,
        invalidated_rkey: invalidated.then_some(rkey),
    };
    if buf.to_device {
        buf.handler.sent(buf, &completion);
        return;
    }
    let mut len = 0;
    if completion.is_success() {
        len = usize::try_from(completion.byte_len)
            .unwrap_or(usize::MAX)
            .min(buf.len);
        // SAFETY: Mapped (type invariant); the device is done with it.
        unsafe { bindings::rpcrdma_rs_dma_sync_for_cpu(buf.device, buf.addr, len, false) };
    }
    // INVARIANT: the Receive completed, so the buffer is not posted; the
    // device wrote `len` bytes (none if it failed or was flushed).
    buf.handler.received(Received { buf, len }, &completion);
}
