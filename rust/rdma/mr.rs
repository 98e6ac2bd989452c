// SPDX-License-Identifier: GPL-2.0

//! Fast-registration memory regions (FRWR: `IB_WR_REG_MR` and
//! `IB_WR_LOCAL_INV`), which expose parts of pages to the peer's RDMA
//! Reads and Writes.
//!
//! A region is made for one [`Qp`] and posts only there; it holds the QP,
//! so its PD and device stay while it exists, and dropping a region that
//! was ever posted shuts its QP down first.
//!
//! A mapping is a typestate: [`Mr::map`] returns a [`Mapped`] token, which
//! [`Mr::post_reg`] and [`Mr::post_local_inv`] borrow and [`Mr::unmap`]
//! consumes. The region keeps track of what the device may still do with
//! the mapping, and [`Mr::unmap`] hands the token back while the peer may
//! still reach the memory. A mapping is undone only when
//!
//! - its REG_MR was never posted;
//! - a LOCAL_INV of it completed: its own signaled completion arrived, or
//!   that of a later request on the send queue (which completes in order,
//!   see [`Qp`]);
//! - the peer invalidated it with Send With Invalidate, reported by a
//!   Receive of the same QP delivered after the REG_MR was posted
//!   ([`Mr::invalidated_by_peer`]);
//! - or the QP is destroyed.
//!
//! The transport's own rules (`xprt/frwr.rs`) decide when to invalidate
//! and when to unmap; these checks only refuse what would let the peer
//! reach memory after it is handed back.

use super::{
    buffer::Completion,
    qp::{Qp, RemoteInvalidation, SendWr},
    CmHandler, CmId, Piece,
};
use crate::{bindings, proto::header::Segment};
use core::ptr::NonNull;
use kernel::{
    error::to_result,
    new_spinlock,
    prelude::*,
    sync::{Arc, SpinLock},
    types::Opaque,
};

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

/// Told when a memory region's work requests complete. Called from the
/// CQ's workqueue, with the same restrictions as a
/// [`CompletionHandler`](super::CompletionHandler).
pub(crate) trait MrHandler: Send + Sync + 'static + Sized {
    /// The signaled LOCAL_INV of `mr` completed, or was flushed.
    fn invalidated(&self, mr: &Mr<Self>, completion: &Completion);
    /// The REG_MR of `mr` was flushed or failed (a successful one, being
    /// unsignaled, reports nothing).
    fn reg_failed(&self, mr: &Mr<Self>, completion: &Completion);
}

/// A live mapping of a region, from [`Mr::map`] until [`Mr::unmap`]
/// takes it back; the segment to advertise. Not `Clone`: one holder.
#[must_use]
pub(crate) struct Mapped {
    mr: u64,
    gen: u64,
    seg: Segment,
}

impl Mapped {
    /// The segment the mapping is advertised as (RFC 8166, section 4.2).
    pub(crate) fn segment(&self) -> Segment {
        self.seg
    }
}

/// What a region's current mapping may still let the device do.
#[derive(Clone, Copy)]
struct Mapping {
    gen: u64,
    nents: u32,
    writing: bool,
    rkey: u32,
    /// The REG_MR is posted; how many Receive completions the QP had
    /// delivered by then.
    reg: Option<u64>,
    /// The send-queue sequence number of the last LOCAL_INV posted.
    inv: Option<u64>,
    /// The peer invalidated this registration.
    remote: bool,
}

struct MrState {
    mapping: Option<Mapping>,
    next_gen: u64,
    /// A work request was posted for the region, ever.
    posted: bool,
    /// The sequence number of the signaled LOCAL_INV whose completion has
    /// not come yet.
    inv_signaled: Option<u64>,
}

impl MrState {
    /// The current mapping, if `m` is its token.
    fn current(&mut self, uid: u64, m: &Mapped) -> Option<&mut Mapping> {
        self.mapping
            .as_mut()
            .filter(|mapping| m.mr == uid && m.gen == mapping.gen)
    }
}

/// One memory region and its scatterlist.
///
/// # Invariants
///
/// `raw` was allocated by `ib_alloc_mr` on the PD of `qp`, with a
/// `depth`-entry scatterlist `sg`; both are released only by `drop`, after
/// `qp` is destroyed if anything was ever posted for the region. While
/// `state.mapping` is set, `sg` holds its `nents` entries, DMA-mapped for
/// the device of `qp` in its direction. `reg_cqe` and `inv_cqe` call
/// [`reg_done::<H>`] and [`inv_done::<H>`]. `uid` is no other region's.
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
    index: u32,
    uid: u64,
    qp: Arc<Qp>,
    handler: Arc<H>,
    #[pin]
    state: SpinLock<MrState>,
}

// SAFETY: The raw pointers are verbs objects usable from any thread; the
// region's state is behind its lock.
unsafe impl<H: MrHandler> Send for Mr<H> {}
// SAFETY: As above.
unsafe impl<H: MrHandler> Sync for Mr<H> {}

impl<H: MrHandler> Mr<H> {
    /// Allocates a region of `depth` pages on the PD of `qp`; `index` is
    /// the owner's name for it, `handler` is told of its completions.
    pub(crate) fn new(
        qp: &Arc<Qp>,
        depth: u32,
        index: u32,
        handler: Arc<H>,
    ) -> Result<Pin<KBox<Self>>> {
        // SAFETY: No precondition.
        let sg = NonNull::new(unsafe { bindings::rpcrdma_rs_alloc_sg(depth) }).ok_or(ENOMEM)?;
        // SAFETY: The PD is live while `qp` is.
        let raw = kernel::error::from_err_ptr(unsafe {
            bindings::rpcrdma_rs_alloc_mr(qp.raw_pd(), depth)
        })
        .ok()
        .and_then(NonNull::new);
        let Some(raw) = raw else {
            // SAFETY: Allocated above, not used.
            unsafe { bindings::rpcrdma_rs_free_sg(sg.as_ptr()) };
            return Err(ENOMEM);
        };
        let mr = KBox::pin_init(
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
                index,
                uid: super::next_uid(),
                qp: qp.clone(),
                handler,
                state <- new_spinlock!(MrState {
                    mapping: None,
                    next_gen: 0,
                    posted: false,
                    inv_signaled: None,
                }),
            }),
            GFP_KERNEL,
        );
        if mr.is_err() {
            // SAFETY: Allocated above, never posted, owned by no region.
            unsafe {
                bindings::rpcrdma_rs_dereg_mr(raw.as_ptr());
                bindings::rpcrdma_rs_free_sg(sg.as_ptr());
            }
        }
        mr
    }

    /// The owner's index of this region.
    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    /// The name of the region's device, for log lines.
    pub(crate) fn device_name(&self) -> &CStr {
        self.qp.device().name()
    }

    /// DMA-maps `pieces` and maps them into the region for RPC `xid`, with
    /// a new key; returns the mapping, whose segment is to be advertised.
    /// `EBUSY` while the region is mapped.
    pub(crate) fn map(&self, pieces: &[Piece], writing: bool, xid: u32) -> Result<Mapped> {
        let n = u32::try_from(pieces.len()).map_err(|_| EINVAL)?;
        if n == 0 || n > self.depth {
            return Err(EINVAL);
        }
        let mut state = self.state.lock();
        if state.mapping.is_some() {
            return Err(EBUSY);
        }
        let mut seg = bindings::rpcrdma_rs_mr_seg::default();
        // Not mapped: no work request reads the region's page list (the
        // last mapping was undone only once unreachable, see `unmap`).
        // `Piece` is a transparent wrapper of the C piece.
        // SAFETY: The region and its `depth`-entry scatterlist are live (type
        // invariant) and not mapped; `pieces` has `n <= depth` entries, each
        // a part of one page of a request's buffer (`Piece`'s invariant).
        to_result(unsafe {
            bindings::rpcrdma_rs_mr_map(
                self.qp.device().as_raw(),
                self.raw.as_ptr(),
                self.sg.as_ptr(),
                pieces.as_ptr().cast(),
                n,
                writing,
                xid,
                &mut seg,
            )
        })?;
        let gen = state.next_gen;
        state.next_gen = gen.wrapping_add(1);
        // INVARIANT: `sg` holds `n` entries mapped in this direction.
        state.mapping = Some(Mapping {
            gen,
            nents: n,
            writing,
            rkey: seg.handle,
            reg: None,
            inv: None,
            remote: false,
        });
        Ok(Mapped {
            mr: self.uid,
            gen,
            seg: Segment {
                handle: seg.handle,
                length: seg.length,
                offset: seg.offset,
            },
        })
    }

    /// Posts the unsignaled REG_MR that makes the mapping reachable by the
    /// peer, on the region's QP. Once per mapping, and never after a
    /// LOCAL_INV of it (`EBUSY`): a key registered after its invalidation
    /// would stay reachable while `unmap` took the LOCAL_INV as proof that
    /// it is not. `EINVAL` if `m` is not the region's current mapping;
    /// `ENOTCONN` if the QP is not open.
    pub(crate) fn post_reg(&self, m: &Mapped) -> Result {
        let mut state = self.state.lock();
        let mapping = state.current(self.uid, m).ok_or(EINVAL)?;
        if mapping.reg.is_some() || mapping.inv.is_some() {
            return Err(EBUSY);
        }
        let wr = SendWr::RegMr {
            mr: self.raw.as_ptr(),
            writing: mapping.writing,
            cqe: self.reg_cqe.get(),
        };
        // SAFETY: The region and its `reg_cqe` stay until the QP is
        // destroyed: `drop` shuts the QP down first once anything was
        // posted, which is recorded below before the lock is let go.
        self.qp.posting(|post| unsafe { post.post_send(wr) })?;
        // Counted after posting: the peer can only invalidate the new key
        // in answer to what is posted after this REG_MR.
        mapping.reg = Some(self.qp.rq_seen());
        state.posted = true;
        Ok(())
    }

    /// Posts a LOCAL_INV of the mapping's key on the region's QP, after
    /// its REG_MR (`EINVAL` before: see `post_reg`); only a signaled one
    /// reports its completion to the handler, and only one signaled
    /// LOCAL_INV may be outstanding per region (`EBUSY`).
    pub(crate) fn post_local_inv(&self, m: &Mapped, signaled: bool) -> Result {
        let mut state = self.state.lock();
        if signaled && state.inv_signaled.is_some() {
            return Err(EBUSY);
        }
        let mapping = state.current(self.uid, m).ok_or(EINVAL)?;
        if mapping.reg.is_none() {
            return Err(EINVAL);
        }
        let wr = SendWr::LocalInv {
            rkey: mapping.rkey,
            cqe: self.inv_cqe.get(),
            signaled,
        };
        // SAFETY: As in `post_reg`.
        let seq = self.qp.posting(|post| unsafe { post.post_send(wr) })?;
        mapping.inv = Some(seq);
        state.posted = true;
        if signaled {
            state.inv_signaled = Some(seq);
        }
        Ok(())
    }

    /// Records that the peer invalidated the mapping `m` (Send With
    /// Invalidate), if `proof` names its key, comes from the region's QP,
    /// and was delivered after the mapping's REG_MR was posted; returns
    /// whether it did. Then [`Mr::unmap`] may undo the mapping.
    pub(crate) fn invalidated_by_peer(&self, m: &Mapped, proof: &RemoteInvalidation) -> bool {
        let qp = self.qp.uid();
        let mut state = self.state.lock();
        let Some(mapping) = state.current(self.uid, m) else {
            return false;
        };
        let ours = proof.qp == qp
            && proof.rkey == mapping.rkey
            && mapping.reg.is_some_and(|mark| proof.index >= mark);
        if ours {
            mapping.remote = true;
        }
        ours
    }

    /// Undoes the DMA mapping `m`, if the peer can no longer reach it (see
    /// the module documentation); otherwise hands `m` back, still mapped.
    pub(crate) fn unmap(&self, m: Mapped) -> Result<(), Mapped> {
        let mut state = self.state.lock();
        let Some(mapping) = state.current(self.uid, &m).copied() else {
            return Err(m);
        };
        let unreachable = mapping.reg.is_none()
            || mapping.remote
            || mapping.inv.is_some_and(|seq| self.qp.sq_done_through(seq))
            || self.qp.is_destroyed();
        if !unreachable {
            return Err(m);
        }
        // The peer can no longer reach the pages, and no work request reads
        // the region's page list (above).
        // SAFETY: `sg` holds the mapping's `nents` entries, mapped in its
        // direction (type invariant), for a device `qp` holds registered,
        // and nothing can reach them any more.
        unsafe {
            bindings::rpcrdma_rs_mr_unmap(
                self.qp.device().as_raw(),
                self.sg.as_ptr(),
                mapping.nents,
                mapping.writing,
            )
        };
        // INVARIANT: unmapped.
        state.mapping = None;
        Ok(())
    }
}

#[pinned_drop]
impl<H: MrHandler> PinnedDrop for Mr<H> {
    fn drop(self: Pin<&mut Self>) {
        let (posted, mapped) = {
            let state = self.state.lock();
            (state.posted, state.mapping.is_some())
        };
        if posted {
            // A no-op once the QP is destroyed, as its owner does before
            // freeing its regions; otherwise the region must not go while
            // a work request or a completion may still refer to it.
            let _ = self.qp.shutdown();
        }
        if mapped {
            // Whoever had the mapping dropped it: the pages may be freed, so
            // leave them alone (unmapping may copy into them) and leak the
            // DMA mapping. The device cannot reach them through the region
            // any more: it is deregistered below.
            pr_warn!(
                "{}: memory region freed while mapped; its DMA mapping is leaked\n",
                self.device_name()
            );
        }
        // SAFETY: Ours (type invariant); nothing posted for the region is
        // outstanding (above) and its PD is live (held by `qp`).
        unsafe { bindings::rpcrdma_rs_dereg_mr(self.raw.as_ptr()) };
        // SAFETY: Ours, and no mapping of it is undone any more.
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
    // SAFETY: By the function's contract the region is alive: it goes only
    // after its QP is destroyed and the CQs freed (`drop`).
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
    // SAFETY: By the function's contract the region is alive: it goes only
    // after its QP is destroyed and the CQs freed (`drop`).
    let mr = unsafe { &*mr };
    let completion = completion_of(wc);
    let seq = mr.state.lock().inv_signaled.take();
    if let Some(seq) = seq.filter(|_| completion.is_success()) {
        // Before the handler looks: it may unmap at once.
        mr.qp.sq_completed(seq);
    }
    mr.handler.invalidated(mr, &completion);
}
