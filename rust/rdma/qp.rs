// SPDX-License-Identifier: GPL-2.0

//! A connection's queue pair (`struct ib_qp`), with the protection domain
//! and completion queues it uses, and the rules for posting to it.
//!
//! A [`Qp`] is shared (`Arc`) by its [`CmId`](super::CmId) and by every
//! buffer and memory region made for it. It holds its device registered
//! ([`ARef<Device>`]) and its PD allocated, so nothing mapped or registered
//! for the QP outlives either.
//!
//! Work requests are posted only through those buffers and regions, and
//! only while the QP is open: [`Qp::shutdown`] closes it (under the lock
//! every post takes), drains it, destroys it and frees its CQs. After that
//! the device reaches nothing through it and no completion handler runs.
//! A posted buffer belongs to the QP until its completion hands it back;
//! buffers whose completion never came (a drain that could not be posted)
//! are freed by the shutdown, after the QP and its CQs are gone.
//!
//! Each send-queue work request gets the next sequence number. Requests
//! on an RC send queue complete in order, and a failed one puts the QP in
//! the error state, which flushes every later one: so the successful
//! completion of a signaled request means every request posted before it
//! on the send queue completed successfully. [`Qp`] keeps the highest such
//! number; memory regions use it to tell when a LOCAL_INV took effect.

use super::{buffer::BufHeader, Device};
use crate::{bindings, errno};
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
};
use kernel::{
    error::{from_err_ptr, to_result},
    ffi::c_int,
    new_mutex, new_spinlock,
    prelude::*,
    sync::{Arc, Mutex, SpinLock},
    types::ARef,
};

/// A protection domain (`struct ib_pd`). Only a [`Qp`] makes one, on its
/// own device, and frees it after the QP and every region made on it.
///
/// # Invariants
///
/// `raw` was allocated by `ib_alloc_pd` and is freed only by `drop`.
struct Pd {
    raw: NonNull<bindings::ib_pd>,
}

// SAFETY: A PD may be used and freed from any thread.
unsafe impl Send for Pd {}
// SAFETY: The verbs that take a PD do their own locking.
unsafe impl Sync for Pd {}

impl Pd {
    /// Allocates a protection domain on `device`.
    fn new(device: &Device) -> Result<Self> {
        // SAFETY: `device` is registered (its type invariant).
        let raw = from_err_ptr(unsafe { bindings::rpcrdma_rs_alloc_pd(device.as_raw()) })?;
        // INVARIANT: allocated by `ib_alloc_pd`, which never returns NULL.
        NonNull::new(raw).map(|raw| Self { raw }).ok_or(ENOMEM)
    }

    /// The key that lets the device reach any local DMA-mapped memory.
    fn local_dma_lkey(&self) -> u32 {
        // SAFETY: The PD is live (type invariant).
        unsafe { bindings::rpcrdma_rs_pd_local_dma_lkey(self.raw.as_ptr()) }
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: Ours to free (type invariant). Its owner, a `Qp`, drops it
        // after destroying the QP, and after every region made on it (each
        // holds the `Qp`).
        unsafe { bindings::rpcrdma_rs_dealloc_pd(self.raw.as_ptr()) };
    }
}

/// A completion queue (`struct ib_cq`) polled from a workqueue. Only a
/// [`Qp`] makes one, on its own device, and frees it after the QP.
///
/// # Invariants
///
/// `raw` was allocated by `ib_alloc_cq_any` and is freed only by `drop`.
struct Cq {
    raw: NonNull<bindings::ib_cq>,
}

// SAFETY: A CQ may be used and freed from any thread.
unsafe impl Send for Cq {}

impl Cq {
    /// Allocates a completion queue of `entries` entries on `device`.
    fn new(device: &Device, entries: u32) -> Result<Self> {
        let entries = c_int::try_from(entries).map_err(|_| EINVAL)?;
        // SAFETY: `device` is registered (its type invariant).
        let raw = from_err_ptr(unsafe { bindings::rpcrdma_rs_alloc_cq(device.as_raw(), entries) })?;
        // INVARIANT: allocated by `ib_alloc_cq_any`, which never returns NULL.
        NonNull::new(raw).map(|raw| Self { raw }).ok_or(ENOMEM)
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: Ours to free (type invariant); its QP is destroyed (the
        // `Qp` frees its CQs only then). This waits for a handler in
        // progress, and no completion is delivered afterwards.
        unsafe { bindings::ib_free_cq(self.raw.as_ptr()) };
    }
}

/// The sizes of a queue pair and its completion queues.
pub(crate) struct QpCaps {
    /// Entries of each of the send and receive completion queues.
    pub(crate) cq_entries: u32,
    /// Send work requests that may be outstanding.
    pub(crate) max_send_wr: u32,
    /// Receive work requests that may be outstanding.
    pub(crate) max_recv_wr: u32,
    /// Scatter/gather entries per Send.
    pub(crate) max_send_sge: u32,
    /// Scatter/gather entries per Receive.
    pub(crate) max_recv_sge: u32,
}

/// Where a QP is in its life.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not created yet: nothing can be posted.
    Idle,
    /// Work requests may be posted.
    Open,
    /// [`Qp::shutdown`] is draining it: nothing may be posted, and the QP
    /// may still execute what was.
    Closing,
    /// Destroyed, its CQs freed: it reaches nothing, and no completion
    /// handler runs for it again.
    Destroyed,
}

/// A send-queue work request, for [`Posting::post_send`].
pub(super) enum SendWr {
    /// A signaled Send of `len` bytes at DMA address `addr`.
    Send {
        cqe: *mut bindings::ib_cqe,
        addr: u64,
        len: u32,
        lkey: u32,
    },
    /// An unsignaled REG_MR of `mr` (its completion is reported only if it
    /// fails or is flushed).
    RegMr {
        mr: *mut bindings::ib_mr,
        writing: bool,
        cqe: *mut bindings::ib_cqe,
    },
    /// A LOCAL_INV of `rkey`.
    LocalInv {
        rkey: u32,
        cqe: *mut bindings::ib_cqe,
        signaled: bool,
    },
}

/// A QP's posting state, under the lock every post takes.
///
/// # Invariants
///
/// `raw` is the live QP while `state` is `Open` or `Closing`. `inflight`
/// heads a list, linked through their [`BufHeader`]s, of the buffers posted
/// and not yet handed back by their completion; each is owned by the list.
pub(super) struct Posting {
    state: State,
    raw: *mut bindings::ib_qp,
    /// Something was posted: the QP must be drained before it is destroyed.
    posted: bool,
    /// The sequence number of the next send-queue work request.
    sq_next: u64,
    inflight: *mut BufHeader,
}

// SAFETY: The pointers are a QP, usable from any thread, and buffers the
// list owns, which are `Send`.
unsafe impl Send for Posting {}

impl Posting {
    /// Posts one send-queue work request; returns its sequence number.
    ///
    /// # Safety
    ///
    /// What `wr` points to must stay alive, and (for a Send) be owned by the
    /// in-flight list, until the request's completion is delivered or the
    /// QP is destroyed.
    pub(super) unsafe fn post_send(&mut self, wr: SendWr) -> Result<u64> {
        if self.state != State::Open {
            return Err(errno::enotconn());
        }
        let seq = self.sq_next;
        let qp = self.raw;
        // SAFETY: Open, so `qp` is live (type invariant); what `wr` points
        // to outlives the request by the function's contract.
        let rc = unsafe {
            match wr {
                SendWr::Send {
                    cqe,
                    addr,
                    len,
                    lkey,
                } => bindings::rpcrdma_rs_post_send(qp, cqe, addr, len, lkey),
                SendWr::RegMr { mr, writing, cqe } => {
                    bindings::rpcrdma_rs_post_reg_mr(qp, mr, writing, cqe)
                }
                SendWr::LocalInv {
                    rkey,
                    cqe,
                    signaled,
                } => bindings::rpcrdma_rs_post_local_inv(qp, rkey, cqe, signaled),
            }
        };
        to_result(rc)?;
        self.sq_next += 1;
        self.posted = true;
        Ok(seq)
    }

    /// Posts one Receive of `len` bytes at DMA address `addr`.
    ///
    /// # Safety
    ///
    /// `cqe` is the header of a buffer owned by the in-flight list, which
    /// stays there until the completion is delivered or the QP destroyed.
    pub(super) unsafe fn post_recv(
        &mut self,
        cqe: *mut bindings::ib_cqe,
        addr: u64,
        len: u32,
        lkey: u32,
    ) -> Result {
        if self.state != State::Open {
            return Err(errno::enotconn());
        }
        // SAFETY: As in `post_send`.
        to_result(unsafe { bindings::rpcrdma_rs_post_recv(self.raw, cqe, addr, len, lkey) })?;
        self.posted = true;
        Ok(())
    }

    /// Adds a buffer to the in-flight list, which owns it from now on.
    ///
    /// # Safety
    ///
    /// `h` is the header of a live buffer in its final place, not in any
    /// list, whose owner gives it up to the list.
    pub(super) unsafe fn link(&mut self, h: NonNull<BufHeader>) {
        // SAFETY: `h` is live (the function's contract) and the list's
        // members are live (type invariant); the links are touched only
        // under this lock.
        unsafe {
            BufHeader::set_links(h, core::ptr::null_mut(), self.inflight);
            if let Some(next) = NonNull::new(self.inflight) {
                BufHeader::set_prev(next, h.as_ptr());
            }
        }
        // INVARIANT: `h` heads the list, which owns it.
        self.inflight = h.as_ptr();
    }

    /// Takes a buffer out of the in-flight list, giving ownership back.
    ///
    /// # Safety
    ///
    /// `h` is in this QP's in-flight list.
    pub(super) unsafe fn unlink(&mut self, h: NonNull<BufHeader>) {
        // SAFETY: `h` and its neighbours are in the list, so live (type
        // invariant); the links are touched only under this lock.
        unsafe {
            let (prev, next) = BufHeader::links(h);
            match NonNull::new(prev) {
                Some(prev) => BufHeader::set_next(prev, next),
                None => self.inflight = next,
            }
            if let Some(next) = NonNull::new(next) {
                BufHeader::set_prev(next, prev);
            }
            BufHeader::set_links(h, core::ptr::null_mut(), core::ptr::null_mut());
        }
    }
}

/// A reliable-connected queue pair, its CQs and PD, on one device.
///
/// # Invariants
///
/// `id` is the `rdma_cm_id` the QP was created on; it is live until
/// `destroyed` is set (the owning [`CmId`](super::CmId) shuts the QP down
/// before destroying the identifier). `teardown` holds the CQs until they
/// are freed, after the QP is destroyed. `destroyed` is set only once the
/// QP is destroyed and its CQs freed. `sq_done` is 0 or the sequence number
/// of a send-queue work request known to have completed successfully with
/// every one before it (module documentation).
#[pin_data(PinnedDrop)]
pub(crate) struct Qp {
    #[pin]
    post: SpinLock<Posting>,
    /// Serialises [`Qp::shutdown`], which sleeps.
    #[pin]
    teardown: Mutex<Option<(Cq, Cq)>>,
    id: NonNull<bindings::rdma_cm_id>,
    pd: Pd,
    device: ARef<Device>,
    lkey: u32,
    uid: u64,
    sq_done: AtomicU64,
    /// Receive completions delivered so far.
    rq_seen: AtomicU64,
    destroyed: AtomicBool,
}

// SAFETY: The verbs objects may be used from any thread; `id` is used only
// by `shutdown`, which the connection manager serialises against the
// identifier's other functions (its QP mutex).
unsafe impl Send for Qp {}
// SAFETY: Shared state is behind locks or atomics.
unsafe impl Sync for Qp {}

impl Qp {
    /// Creates the RC queue pair of identifier `id`, whose address resolved
    /// to `device`, with a PD and a send and a receive CQ of its own.
    ///
    /// # Safety
    ///
    /// `id` is a live identifier that has no QP, and is not destroyed
    /// before [`Qp::shutdown`] of the result has returned.
    pub(super) unsafe fn create(
        id: NonNull<bindings::rdma_cm_id>,
        device: &Device,
        caps: &QpCaps,
    ) -> Result<Arc<Self>> {
        let pd = Pd::new(device)?;
        let lkey = pd.local_dma_lkey();
        let send_cq = Cq::new(device, caps.cq_entries)?;
        let recv_cq = Cq::new(device, caps.cq_entries)?;
        let mut attr = bindings::ib_qp_init_attr {
            send_cq: send_cq.raw.as_ptr().cast(),
            recv_cq: recv_cq.raw.as_ptr().cast(),
            qp_type: bindings::ib_qp_type_IB_QPT_RC,
            sq_sig_type: bindings::ib_sig_type_IB_SIGNAL_REQ_WR,
            ..Default::default()
        };
        attr.cap.max_send_wr = caps.max_send_wr;
        attr.cap.max_recv_wr = caps.max_recv_wr;
        attr.cap.max_send_sge = caps.max_send_sge;
        attr.cap.max_recv_sge = caps.max_recv_sge;
        let pd_raw = pd.raw.as_ptr();
        let qp = Arc::pin_init(
            pin_init!(Self {
                post <- new_spinlock!(Posting {
                    state: State::Idle,
                    raw: core::ptr::null_mut(),
                    posted: false,
                    sq_next: 1,
                    inflight: core::ptr::null_mut(),
                }),
                teardown <- new_mutex!(Some((send_cq, recv_cq))),
                id,
                pd,
                device: ARef::from(device),
                lkey,
                uid: super::next_uid(),
                sq_done: AtomicU64::new(0),
                rq_seen: AtomicU64::new(0),
                destroyed: AtomicBool::new(false),
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: `id` is live (the function's contract); the PD and CQs are
        // on its device and, held by `qp`, outlive the QP, which `shutdown`
        // destroys first.
        to_result(unsafe { bindings::rdma_create_qp(id.as_ptr(), pd_raw.cast(), &mut attr) })?;
        {
            let mut post = qp.post.lock();
            // SAFETY: `id` is live, and now has its QP.
            post.raw = unsafe { (*id.as_ptr()).qp }.cast();
            // INVARIANT: the QP exists until `shutdown` destroys it.
            post.state = State::Open;
        }
        Ok(qp)
    }

    /// The device the QP is on, which it holds registered.
    pub(crate) fn device(&self) -> &Device {
        &self.device
    }

    /// The local DMA key of the QP's protection domain.
    pub(super) fn local_dma_lkey(&self) -> u32 {
        self.lkey
    }

    /// The QP's protection domain, live as long as `self`.
    pub(super) fn raw_pd(&self) -> *mut bindings::ib_pd {
        self.pd.raw.as_ptr()
    }

    /// An identity that no other QP has, even one at the same address.
    pub(super) fn uid(&self) -> u64 {
        self.uid
    }

    /// Runs `f` with the posting state while the QP is open; `ENOTCONN`
    /// otherwise. [`Qp::shutdown`] takes the same lock to close the QP, so
    /// nothing `f` posts can follow the drain.
    pub(super) fn posting<T>(&self, f: impl FnOnce(&mut Posting) -> Result<T>) -> Result<T> {
        let mut post = self.post.lock();
        if post.state != State::Open {
            return Err(errno::enotconn());
        }
        f(&mut post)
    }

    /// Takes a buffer whose completion arrived out of the in-flight list.
    ///
    /// # Safety
    ///
    /// `h` is in this QP's in-flight list.
    pub(super) unsafe fn unlink(&self, h: NonNull<BufHeader>) {
        // SAFETY: By the function's contract.
        unsafe { self.post.lock().unlink(h) };
    }

    /// A signaled send-queue work request of sequence number `seq`
    /// completed successfully: it and every one before it took effect.
    pub(super) fn sq_completed(&self, seq: u64) {
        // INVARIANT: by the in-order completion of the send queue.
        self.sq_done.fetch_max(seq, Ordering::AcqRel);
    }

    /// True when every send-queue work request up to `seq` is known to
    /// have completed successfully.
    pub(super) fn sq_done_through(&self, seq: u64) -> bool {
        seq <= self.sq_done.load(Ordering::Acquire)
    }

    /// Counts a Receive completion; returns how many came before it.
    pub(super) fn rq_completed(&self) -> u64 {
        self.rq_seen.fetch_add(1, Ordering::AcqRel)
    }

    /// Receive completions delivered so far.
    pub(super) fn rq_seen(&self) -> u64 {
        self.rq_seen.load(Ordering::Acquire)
    }

    /// True once the QP is destroyed and its CQs freed: the device reaches
    /// nothing through it, and no completion handler runs for it again.
    pub(crate) fn is_destroyed(&self) -> bool {
        self.destroyed.load(Ordering::Acquire)
    }

    /// Stops the QP for good: closes it to posting, moves it to the error
    /// state and waits until every posted work request has completed or
    /// been flushed, then destroys it and frees its CQs (completions still
    /// queued, if the drain could not be posted, are discarded, and the
    /// buffers they would have handed back are freed). Afterwards the peer
    /// reaches nothing through the QP, the device touches no buffer, and no
    /// completion handler runs for it again. The PD stays while anything
    /// holds the `Qp`. Sleeps; a no-op after the first call.
    ///
    /// The QP is destroyed even after a drain that reports success: a
    /// device's own drain method cannot report a failure. An error says
    /// the drain could not be posted. Each queue needs room for one more
    /// work request than is ever posted (the drain's own).
    ///
    /// Must not be called from a completion handler of this QP: the drain
    /// waits for that handler's queue.
    pub(crate) fn shutdown(&self) -> Result {
        // Once destroyed, nothing to wait for: a last reference dropped where
        // sleeping is not allowed then takes no mutex.
        if self.is_destroyed() {
            return Ok(());
        }
        let mut cqs = self.teardown.lock();
        if self.is_destroyed() {
            return Ok(());
        }
        let (raw, created, posted) = {
            let mut post = self.post.lock();
            let created = matches!(post.state, State::Open | State::Closing);
            if created {
                post.state = State::Closing;
            }
            (post.raw, created, post.posted)
        };
        let mut drained = Ok(());
        if created {
            if posted {
                // SAFETY: The QP is live (`Posting` invariant: closing), its
                // CQs are polled from a workqueue, and nothing is posted any
                // more (closed under the posting lock).
                drained = to_result(unsafe { bindings::rpcrdma_rs_drain_qp(raw) });
            }
            // SAFETY: `id` is live and has this QP (type invariant: not yet
            // destroyed); nothing posts to it any more. The device stops all
            // access on return.
            unsafe { bindings::rdma_destroy_qp(self.id.as_ptr()) };
        }
        // `ib_free_cq` waits for a handler in progress, and no completion is
        // delivered afterwards.
        drop(cqs.take());
        let mut inflight = {
            let mut post = self.post.lock();
            post.state = State::Destroyed;
            post.raw = core::ptr::null_mut();
            core::mem::replace(&mut post.inflight, core::ptr::null_mut())
        };
        // INVARIANT: destroyed, and the CQs freed.
        self.destroyed.store(true, Ordering::Release);
        // What the list still owns never completed, and never will: the QP
        // and the CQs are gone.
        while let Some(h) = NonNull::new(inflight) {
            // SAFETY: A member of the list, which owned it and is gone: the
            // buffer is ours to free, and nothing else refers to it.
            unsafe {
                inflight = BufHeader::links(h).1;
                BufHeader::free(h);
            }
        }
        drained
    }
}

#[pinned_drop]
impl PinnedDrop for Qp {
    fn drop(self: Pin<&mut Self>) {
        // The owning identifier shut the QP down already (its `drop` does
        // before destroying the identifier), or the QP was never created:
        // either way `id` is not used. Then the CQs, the PD and the device
        // reference go, in field order.
        let _ = self.shutdown();
    }
}

/// Proof that the peer invalidated `rkey` with a Send With Invalidate that
/// arrived on a QP: made only from a successful Receive completion that
/// carried `IB_WC_WITH_INVALIDATE`. `index` counts the Receive completions
/// of that QP handled before it (in the order the handler takes them,
/// which need not be the order they arrived in), so a proof handled before
/// a registration was posted cannot be taken for it. One that arrived
/// before a REG_MR but is handled after it would pass that check; it would
/// also need the same key (8 bits that wrap only after 256 mappings of one
/// region) and, in the transport, the same RPC's reply on the same
/// connection, which a retransmission never is (it reconnects first).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RemoteInvalidation {
    pub(super) qp: u64,
    pub(super) rkey: u32,
    pub(super) index: u64,
}

impl RemoteInvalidation {
    /// The R_key the peer invalidated.
    pub(crate) fn rkey(&self) -> u32 {
        self.rkey
    }
}
