// SPDX-License-Identifier: GPL-2.0

//! DMA-mapped buffers that are posted as one Send or one Receive, and the
//! completions the RDMA core reports for them (`struct ib_cqe`).

use super::{CmHandler, CmId};
use crate::{bindings, errno};
use core::marker::PhantomData;
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
    /// The work request of `buf` completed; for a Receive, `data` is what
    /// arrived (`buf`'s own memory).
    fn complete(&self, buf: &WorkBuf<'_, Self>, completion: &Completion, data: &[u8]);
}

/// A kernel buffer mapped for DMA by a connection's device, posted as a
/// whole. It borrows the connection (`'id`), so it is unmapped before the
/// connection lets go of the device.
///
/// # Invariants
///
/// `cqe` is the first field (`#[repr(C)]`) and its `done` is
/// [`done_callback::<H>`]. While `mapped`, `addr` is the mapping of `data`'s
/// heap memory, which never moves or grows, for `device`, which the
/// borrowed connection keeps allocated.
#[repr(C)]
#[pin_data(PinnedDrop)]
pub(crate) struct WorkBuf<'id, H: CompletionHandler> {
    #[pin]
    cqe: Opaque<bindings::ib_cqe>,
    data: KVec<u8>,
    addr: u64,
    mapped: bool,
    device: *mut bindings::ib_device,
    lkey: u32,
    to_device: bool,
    tag: u32,
    handler: Arc<H>,
    _connection: PhantomData<&'id ()>,
}

// SAFETY: The raw pointers are a device and a DMA address, usable from any
// thread; the data is only touched by the owner or the completion handler,
// never at once (a buffer is either posted or not).
unsafe impl<H: CompletionHandler> Send for WorkBuf<'_, H> {}
// SAFETY: Shared access reads the data only in a completion, when the
// device has finished with it and the owner does not write it.
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
        let data = KVec::from_elem(0u8, len, GFP_KERNEL)?;
        let mut buf = KBox::pin_init(
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
        )?;
        // SAFETY: Plain fields are written, nothing moves out of the pin.
        let this = unsafe { buf.as_mut().get_unchecked_mut() };
        let mut addr = 0u64;
        // SAFETY: `data` is a live allocation of `len` bytes that stays put
        // until `drop` unmaps it; `device` is kept allocated by `id`.
        to_result(unsafe {
            bindings::rpcrdma_rs_dma_map(
                this.device,
                this.data.as_mut_ptr().cast(),
                this.data.len(),
                to_device,
                &mut addr,
            )
        })?;
        // INVARIANT: `addr` maps `data` for `device`.
        this.addr = addr;
        this.mapped = true;
        Ok(buf)
    }

    /// Copies `bytes` to the start of a Send buffer and hands it back to
    /// the device. Only while the buffer is not posted.
    pub(crate) fn fill(self: Pin<&mut Self>, bytes: &[u8]) -> Result {
        // SAFETY: Plain fields are written, nothing moves out of the pin.
        let this = unsafe { self.get_unchecked_mut() };
        let dst = this.data.get_mut(..bytes.len()).ok_or(errno::emsgsize())?;
        dst.copy_from_slice(bytes);
        // SAFETY: Mapped by `new` (type invariant).
        unsafe {
            bindings::rpcrdma_rs_dma_sync_for_device(
                this.device,
                this.addr,
                bytes.len(),
                this.to_device,
            )
        };
        Ok(())
    }

    /// Lets `write` fill a Send buffer in place, then hands the `len` bytes
    /// it reports to the device. Only while the buffer is not posted.
    pub(crate) fn fill_with(
        self: Pin<&mut Self>,
        write: impl FnOnce(&mut [u8]) -> Result<usize>,
    ) -> Result<usize> {
        // SAFETY: Plain fields are written, nothing moves out of the pin.
        let this = unsafe { self.get_unchecked_mut() };
        let len = write(&mut this.data)?;
        if len > this.data.len() {
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

    /// The DMA address, length and local key to post.
    pub(crate) fn sge(&self) -> (u64, u32, u32) {
        let len = u32::try_from(self.data.len()).unwrap_or(u32::MAX);
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
                bindings::rpcrdma_rs_dma_unmap(
                    self.device,
                    self.addr,
                    self.data.len(),
                    self.to_device,
                )
            };
        }
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
    let mut data: &[u8] = &[];
    if !buf.to_device && completion.is_success() {
        let len = usize::try_from(completion.byte_len)
            .unwrap_or(usize::MAX)
            .min(buf.data.len());
        // SAFETY: Mapped (type invariant); the device is done with it.
        unsafe { bindings::rpcrdma_rs_dma_sync_for_cpu(buf.device, buf.addr, len, false) };
        data = buf.data.get(..len).unwrap_or(&[]);
    }
    buf.handler.complete(buf, &completion, data);
}
