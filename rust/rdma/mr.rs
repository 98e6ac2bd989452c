// SPDX-License-Identifier: GPL-2.0

//! Fast-registration memory regions (FRWR: `IB_WR_REG_MR` and
//! `IB_WR_LOCAL_INV`), which expose parts of pages to the peer's RDMA
//! Reads and Writes.

use super::{buffer::Completion, cm::QpHandle, CmHandler, CmId};
use crate::{bindings, proto::header::Segment};
use core::ptr::NonNull;
use kernel::{error::to_result, prelude::*, sync::Arc, types::Opaque};

/// What a device offers for FRWR.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FrwrAttrs {
    /// Pages one memory region may map.
    pub(crate) depth: u32,
    /// Work requests one queue may hold.
    pub(crate) max_qp_wr: u32,
}

impl FrwrAttrs {
    /// The device of `id`, or `EOPNOTSUPP` if it cannot do FRWR.
    pub(crate) fn query<C: CmHandler>(id: &CmId<C>) -> Result<Self> {
        let device = id.device().ok_or(EINVAL)?;
        let mut raw = bindings::rpcrdma_rs_frwr_attrs::default();
        // SAFETY: The device is registered (type invariant of `Device`).
        unsafe { bindings::rpcrdma_rs_frwr_attrs(device.as_raw(), &mut raw) };
        if !raw.supported || raw.depth == 0 {
            return Err(ENOTSUPP);
        }
        Ok(Self {
            depth: raw.depth,
            max_qp_wr: raw.max_qp_wr,
        })
    }
}

/// Told when a memory region's work requests complete.
pub(crate) trait MrHandler: Send + Sync + 'static + Sized {
    /// The signaled LOCAL_INV of `mr` completed, or was flushed.
    fn invalidated(&self, mr: &Mr<Self>, completion: &Completion);
    /// The REG_MR of `mr` was flushed or failed (a successful one, being
    /// unsignaled, reports nothing).
    fn reg_failed(&self, mr: &Mr<Self>, completion: &Completion);
}

/// A part of one page to register.
pub(crate) type Piece = bindings::rpcrdma_rs_piece;

/// One memory region and its scatterlist.
///
/// # Invariants
///
/// `raw` was allocated by `ib_alloc_mr` on the PD of a connection, with a
/// `depth`-entry scatterlist `sg`; both are released only by `drop`, which
/// the owner runs before the connection's PD goes and after its QP is
/// drained. `reg_cqe` and `inv_cqe` call [`reg_done::<H>`] and
/// [`inv_done::<H>`].
#[repr(C)]
#[pin_data(PinnedDrop)]
pub(crate) struct Mr<H: MrHandler> {
    #[pin]
    reg_cqe: Opaque<bindings::ib_cqe>,
    #[pin]
    inv_cqe: Opaque<bindings::ib_cqe>,
    raw: NonNull<bindings::ib_mr>,
    sg: NonNull<bindings::scatterlist>,
    depth: u32,
    device: *mut bindings::ib_device,
    index: u32,
    handler: Arc<H>,
}

// SAFETY: The raw pointers are verbs objects usable from any thread; the
// owner serialises mapping, posting and unmapping of one region.
unsafe impl<H: MrHandler> Send for Mr<H> {}
// SAFETY: As above.
unsafe impl<H: MrHandler> Sync for Mr<H> {}

impl<H: MrHandler> Mr<H> {
    /// Allocates a region of `depth` pages on the PD of `id`.
    ///
    /// # Safety
    ///
    /// The result must be dropped before `id`, after draining its QP.
    pub(crate) unsafe fn new<C: CmHandler>(
        id: &CmId<C>,
        depth: u32,
        index: u32,
        handler: Arc<H>,
    ) -> Result<Pin<KBox<Self>>> {
        let device = id.device().ok_or(EINVAL)?.as_raw();
        let pd = id.raw_pd()?;
        // SAFETY: No precondition.
        let sg = NonNull::new(unsafe { bindings::rpcrdma_rs_alloc_sg(depth) }).ok_or(ENOMEM)?;
        // SAFETY: `pd` is live while `id` has its QP.
        let raw = kernel::error::from_err_ptr(unsafe { bindings::rpcrdma_rs_alloc_mr(pd, depth) })
            .ok()
            .and_then(NonNull::new);
        let Some(raw) = raw else {
            // SAFETY: Allocated above, not used.
            unsafe { bindings::rpcrdma_rs_free_sg(sg.as_ptr()) };
            return Err(ENOMEM);
        };
        KBox::pin_init(
            pin_init!(Self {
                reg_cqe <- Opaque::ffi_init(|slot: *mut bindings::ib_cqe| {
                    // SAFETY: `slot` is valid for writes.
                    unsafe { slot.write(bindings::ib_cqe { done: Some(reg_done::<H>) }) };
                }),
                inv_cqe <- Opaque::ffi_init(|slot: *mut bindings::ib_cqe| {
                    // SAFETY: `slot` is valid for writes.
                    unsafe { slot.write(bindings::ib_cqe { done: Some(inv_done::<H>) }) };
                }),
                raw,
                sg,
                depth,
                device,
                index,
                handler,
            }),
            GFP_KERNEL,
        )
    }

    /// The owner's index of this region.
    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    /// DMA-maps `pieces` and maps them into the region for RPC `xid`;
    /// returns the segment to advertise.
    ///
    /// # Safety
    ///
    /// The region must not be mapped or posted; the pages must stay until
    /// [`Mr::unmap`].
    pub(crate) unsafe fn map(&self, pieces: &[Piece], writing: bool, xid: u32) -> Result<Segment> {
        let n = u32::try_from(pieces.len()).map_err(|_| EINVAL)?;
        if n == 0 || n > self.depth {
            return Err(EINVAL);
        }
        let mut seg = bindings::rpcrdma_rs_mr_seg::default();
        // SAFETY: The region and its `depth`-entry scatterlist are live
        // (type invariant); `pieces` has `n <= depth` entries.
        to_result(unsafe {
            bindings::rpcrdma_rs_mr_map(
                self.device,
                self.raw.as_ptr(),
                self.sg.as_ptr(),
                pieces.as_ptr(),
                n,
                writing,
                xid,
                &mut seg,
            )
        })?;
        Ok(Segment {
            handle: seg.handle,
            length: seg.length,
            offset: seg.offset,
        })
    }

    /// Undoes the DMA mapping of the `n` pieces [`Mr::map`] mapped.
    ///
    /// # Safety
    ///
    /// The region was mapped with `n` pieces and `writing`, and the peer
    /// can no longer reach it (invalidated, or the QP drained).
    pub(crate) unsafe fn unmap(&self, n: u32, writing: bool) {
        // SAFETY: By the function's contract.
        unsafe { bindings::rpcrdma_rs_mr_unmap(self.device, self.sg.as_ptr(), n, writing) };
    }

    /// Posts the unsignaled REG_MR that makes the mapped region reachable.
    ///
    /// # Safety
    ///
    /// The QP is live and the region mapped; the region stays until the
    /// QP is drained.
    pub(crate) unsafe fn post_reg(&self, qp: &QpHandle, writing: bool) -> Result {
        // SAFETY: By the function's contract.
        to_result(unsafe {
            bindings::rpcrdma_rs_post_reg_mr(qp.qp, self.raw.as_ptr(), writing, self.reg_cqe.get())
        })
    }

    /// Posts a LOCAL_INV of `rkey`; only a signaled one reports completion
    /// to the handler.
    ///
    /// # Safety
    ///
    /// As for [`Mr::post_reg`].
    pub(crate) unsafe fn post_local_inv(&self, qp: &QpHandle, rkey: u32, signaled: bool) -> Result {
        // SAFETY: By the function's contract.
        to_result(unsafe {
            bindings::rpcrdma_rs_post_local_inv(qp.qp, rkey, self.inv_cqe.get(), signaled)
        })
    }
}

#[pinned_drop]
impl<H: MrHandler> PinnedDrop for Mr<H> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: Ours (type invariant); the owner drained the QP, so no
        // work request refers to the region, and the PD is still live.
        unsafe { bindings::rpcrdma_rs_dereg_mr(self.raw.as_ptr()) };
        // SAFETY: Ours, and unmapped.
        unsafe { bindings::rpcrdma_rs_free_sg(self.sg.as_ptr()) };
    }
}

fn completion_of(wc: &bindings::ib_wc) -> Completion {
    Completion {
        status: wc.status,
        byte_len: wc.byte_len,
        invalidated_rkey: None,
    }
}

/// Completion callback of a REG_MR (only when flushed or failed).
///
/// # Safety
///
/// `wc->wr_cqe` is the `reg_cqe` of a live `Mr<H>`.
unsafe extern "C" fn reg_done<H: MrHandler>(_cq: *mut bindings::ib_cq, wc: *mut bindings::ib_wc) {
    // SAFETY: `wc` is valid during the callback.
    let wc = unsafe { &*wc };
    // SAFETY: Posted with `reg_cqe` in `wr_cqe`.
    let cqe = unsafe { wc.__bindgen_anon_1.wr_cqe };
    // SAFETY: `cqe` points to the `reg_cqe` field of a live `Mr<H>` (the
    // function's contract), so the containing object is in bounds.
    let mr =
        unsafe { kernel::container_of!(cqe.cast::<Opaque<bindings::ib_cqe>>(), Mr<H>, reg_cqe) };
    // SAFETY: By the function's contract the region is alive.
    let mr = unsafe { &*mr };
    mr.handler.reg_failed(mr, &completion_of(wc));
}

/// Completion callback of a signaled LOCAL_INV.
///
/// # Safety
///
/// `wc->wr_cqe` is the `inv_cqe` of a live `Mr<H>`.
unsafe extern "C" fn inv_done<H: MrHandler>(_cq: *mut bindings::ib_cq, wc: *mut bindings::ib_wc) {
    // SAFETY: `wc` is valid during the callback.
    let wc = unsafe { &*wc };
    // SAFETY: Posted with `inv_cqe` in `wr_cqe`.
    let cqe = unsafe { wc.__bindgen_anon_1.wr_cqe };
    // SAFETY: `cqe` points to the `inv_cqe` field of a live `Mr<H>` (the
    // function's contract), so the containing object is in bounds.
    let mr =
        unsafe { kernel::container_of!(cqe.cast::<Opaque<bindings::ib_cqe>>(), Mr<H>, inv_cqe) };
    // SAFETY: By the function's contract the region is alive.
    let mr = unsafe { &*mr };
    mr.handler.invalidated(mr, &completion_of(wc));
}
