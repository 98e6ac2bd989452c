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
//! every send-queue post takes, and, for Receives, which take no lock,
//! followed by an RCU grace period), drains it, destroys it and frees its
//! CQs. After that the device reaches nothing through it and no completion
//! handler runs. A posted buffer belongs to the QP until its completion
//! hands it back; buffers whose completion never came (a drain that could
//! not be posted, or an unsignaled Send, below) are freed by the shutdown,
//! after the QP and its CQs are gone. Posted Sends are kept in lists; a
//! Receive buffer is registered with the QP when it is made
//! ([`Qp::register_recv`]), and its header says whether the QP holds it.
//!
//! Each send-queue work request gets the next sequence number. Requests
//! on an RC send queue complete in order, and a failed one puts the QP in
//! the error state, which flushes every later one: so the successful
//! completion of a signaled request means every request posted before it
//! on the send queue completed successfully. [`Qp`] keeps the highest such
//! number; memory regions use it to tell when a LOCAL_INV took effect.
//!
//! A Send may be posted unsignaled: it reports no completion when it
//! succeeds. It waits in a list of its own, in post order, until the
//! successful completion of a later signaled Send proves it complete,
//! and that completion hands it back too ([`Qp::send_done`]). Otherwise
//! it comes back by its own completion, if the device reports one (a
//! failure or a flush is reported for unsignaled requests too), or is
//! freed by the shutdown. The buffers those batches hand back are typed by
//! the signaled Send's handler, so every Send buffer posted on a QP must
//! have the same handler type ([`Posting::link_send`] checks it).

use super::{buffer::BufHeader, Device};
use crate::{bindings, errno};
use core::{
    any::TypeId,
    ptr::NonNull,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering},
};
use kernel::{
    error::{from_err_ptr, to_result},
    ffi::{c_int, c_void},
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

/// A Send of `len` bytes at DMA address `addr`, for
/// [`Posting::post_chain`]; an unsignaled one reports its completion only
/// if it fails or is flushed.
#[derive(Clone, Copy)]
pub(super) struct SendWr {
    pub(super) cqe: *mut bindings::ib_cqe,
    pub(super) addr: u64,
    pub(super) len: u32,
    pub(super) lkey: u32,
    pub(super) signaled: bool,
}

/// What the QP took of a chain of REG_MRs and a Send
/// ([`Posting::post_chain`]). A device may take part of a chain, and may
/// take all of it and still report an error: what it may have taken
/// counts as taken.
pub(super) struct Taken {
    /// How many of the REG_MRs, from the first.
    pub(super) regs: usize,
    /// The Send's sequence number, if it may have taken the Send.
    pub(super) send: Option<u64>,
    /// What the device reported.
    pub(super) result: Result,
}

/// A doubly linked list of buffers, through the links of their
/// [`BufHeader`]s, under the posting lock of their QP.
///
/// # Invariants
///
/// `head` and `tail` are both null, or the first and the last member. Each
/// member is live and owned by the list; its `prev` and `next` are its
/// neighbours (null at the ends).
struct BufList {
    head: *mut BufHeader,
    tail: *mut BufHeader,
}

impl BufList {
    const fn new() -> Self {
        Self {
            head: core::ptr::null_mut(),
            tail: core::ptr::null_mut(),
        }
    }

    /// The first member.
    fn front(&self) -> Option<NonNull<BufHeader>> {
        NonNull::new(self.head)
    }

    /// Appends `h`, which the list owns from now on.
    ///
    /// # Safety
    ///
    /// `h` is the header of a live buffer in its final place, in no list,
    /// whose owner gives it up to the list; the posting lock is held.
    unsafe fn push_back(&mut self, h: NonNull<BufHeader>) {
        // SAFETY: `h` is live (the function's contract) and so are the
        // members (type invariant); the links are touched only under the
        // posting lock.
        unsafe {
            BufHeader::set_links(h, self.tail, core::ptr::null_mut());
            match NonNull::new(self.tail) {
                Some(tail) => BufHeader::set_next(tail, h.as_ptr()),
                None => self.head = h.as_ptr(),
            }
        }
        // INVARIANT: `h` is the last member, linked to the one before.
        self.tail = h.as_ptr();
    }

    /// Takes `h` out of the list, giving its ownership to the caller.
    ///
    /// # Safety
    ///
    /// `h` is a member; the posting lock is held.
    unsafe fn remove(&mut self, h: NonNull<BufHeader>) {
        // SAFETY: `h` and its neighbours are members, so live (type
        // invariant); the links are touched only under the posting lock.
        unsafe {
            let (prev, next) = BufHeader::links(h);
            match NonNull::new(prev) {
                Some(prev) => BufHeader::set_next(prev, next),
                None => self.head = next,
            }
            match NonNull::new(next) {
                Some(next) => BufHeader::set_prev(next, prev),
                None => self.tail = prev,
            }
            BufHeader::set_links(h, core::ptr::null_mut(), core::ptr::null_mut());
        }
    }

    /// Empties the list; returns its first member, the others following
    /// through `next`. The caller owns them all.
    fn take_all(&mut self) -> *mut BufHeader {
        let head = self.head;
        // INVARIANT: empty.
        self.head = core::ptr::null_mut();
        self.tail = core::ptr::null_mut();
        head
    }
}

/// What the completion of a Send took out of its QP's lists
/// ([`Qp::send_done`]).
pub(super) struct SendDone {
    /// The Send was posted signaled.
    pub(super) signaled: bool,
    /// Its send-queue sequence number.
    pub(super) seq: u64,
    /// Null, or, after the successful completion of a signaled Send, the
    /// first of the unsignaled Sends posted before it, the others following
    /// through their `next` link in post order (the last's is null). Each
    /// completed successfully, is out of every list, and is owned by the
    /// receiver; each is a buffer of the same type as the signaled Send.
    pub(super) earlier: *mut BufHeader,
}

/// A QP's posting state, under the lock every post takes.
///
/// # Invariants
///
/// `raw` is the live QP while `state` is `Open` or `Closing`. Each buffer
/// posted and not yet handed back is owned by exactly one of two lists:
/// `unsignaled` if it is a Send posted unsignaled (its header says so),
/// `inflight` otherwise (Receives, signaled Sends). `unsignaled` is in
/// post order, so its sequence numbers increase from the front. Every Send
/// buffer ever linked begins a buffer whose handler type has the
/// `TypeId` `send_kind`.
pub(super) struct Posting {
    state: State,
    raw: *mut bindings::ib_qp,
    /// Something was posted: the QP must be drained before it is destroyed.
    posted: bool,
    /// The sequence number of the next send-queue work request.
    sq_next: u64,
    inflight: BufList,
    unsignaled: BufList,
    /// The handler type of the Send buffers, set by the first one posted.
    send_kind: Option<TypeId>,
}

// SAFETY: The pointers are a QP, usable from any thread, and buffers the
// lists own, which are `Send`.
unsafe impl Send for Posting {}

impl Posting {
    /// The sequence number the next send-queue work request posted gets.
    pub(super) fn next_seq(&self) -> u64 {
        self.sq_next
    }

    /// Posts the prepared LOCAL_INVs `wrs` in one chain; returns the
    /// sequence number of the first, how many of them, from the first,
    /// the QP may have taken (each got the next number), and what the
    /// device reported. `ENOTCONN`, nothing taken, unless open.
    ///
    /// # Safety
    ///
    /// Each of `wrs` is the filled LOCAL_INV work request of a region made
    /// for this QP, whose completion entry, like the request, stays alive
    /// until the QP is destroyed, and which nothing else reads or writes
    /// until this returns.
    pub(super) unsafe fn post_local_invs(
        &mut self,
        wrs: &[*mut bindings::ib_send_wr],
    ) -> (u64, usize, Result) {
        let first = self.sq_next;
        if self.state != State::Open {
            return (first, 0, Err(errno::enotconn()));
        }
        let Ok(n) = u32::try_from(wrs.len()) else {
            return (first, 0, Err(EINVAL));
        };
        let mut taken = 0u32;
        // SAFETY: Open, so `raw` is live (type invariant); `wrs` are `n`
        // work requests that outlive the requests by the function's
        // contract.
        let rc =
            unsafe { bindings::rpcrdma_rs_post_local_invs(self.raw, wrs.as_ptr(), n, &mut taken) };
        let taken = taken.min(n);
        self.sq_next += u64::from(taken);
        if taken > 0 {
            self.posted = true;
        }
        (first, taken as usize, to_result(rc))
    }

    /// Posts the prepared REG_MRs `regs` (there may be none), in order,
    /// and then the Send `send`, in one chain; says what the QP took. Each
    /// work request it took got the next sequence number.
    ///
    /// # Safety
    ///
    /// What `send` points to must stay alive, and be owned by one of the
    /// QP's lists of posted buffers, until its completion (or, unsignaled,
    /// a later signaled Send's) is delivered or the QP is destroyed, if
    /// the QP took it. Each of `regs` is the filled REG_MR work request of
    /// a region made for this QP, which stays alive until the QP is
    /// destroyed and which nothing else reads or writes until this
    /// returns.
    pub(super) unsafe fn post_chain(
        &mut self,
        regs: &[*mut bindings::ib_reg_wr],
        send: SendWr,
    ) -> Taken {
        if self.state != State::Open {
            return Taken {
                regs: 0,
                send: None,
                result: Err(errno::enotconn()),
            };
        }
        let Ok(n) = u32::try_from(regs.len()) else {
            return Taken {
                regs: 0,
                send: None,
                result: Err(EINVAL),
            };
        };
        let first = self.sq_next;
        let mut taken = 0u32;
        // SAFETY: Open, so `raw` is live (type invariant); `regs` and what
        // the Send points to outlive the requests by the function's
        // contract, and `regs` is `n` pointers.
        let rc = unsafe {
            bindings::rpcrdma_rs_post_chain(
                self.raw,
                regs.as_ptr(),
                n,
                send.cqe,
                send.addr,
                send.len,
                send.lkey,
                send.signaled,
                &mut taken,
            )
        };
        let taken = taken.min(n.saturating_add(1));
        self.sq_next += u64::from(taken);
        if taken > 0 {
            self.posted = true;
        }
        Taken {
            regs: taken.min(n) as usize,
            send: (taken > n).then(|| first + u64::from(n)),
            result: to_result(rc),
        }
    }

    /// Adds a Send buffer, to be posted signaled or not, to the list that
    /// will own it from now on: the in-flight list, or the unsignaled list,
    /// in post order. `EINVAL` (and not added) if an earlier Send buffer of
    /// the QP had another handler type than `kind`.
    ///
    /// # Safety
    ///
    /// `h` is the header of a live buffer in its final place, not in any
    /// list, whose owner gives it up to the list; it begins a buffer whose handler
    /// type has the `TypeId` `kind`.
    pub(super) unsafe fn link_send(
        &mut self,
        h: NonNull<BufHeader>,
        kind: TypeId,
        signaled: bool,
    ) -> Result {
        if *self.send_kind.get_or_insert(kind) != kind {
            return Err(EINVAL);
        }
        // SAFETY: By the function's contract; under this lock. INVARIANT:
        // a Send of the QP's handler type, in the list its header names;
        // appended, and posted next (or unlinked), so in post order.
        unsafe {
            BufHeader::set_unsignaled(h, !signaled);
            if signaled {
                self.inflight.push_back(h);
            } else {
                self.unsignaled.push_back(h);
            }
        }
        Ok(())
    }

    /// Takes a buffer out of the list that owns it, giving ownership back.
    ///
    /// # Safety
    ///
    /// `h` is in one of this QP's lists.
    pub(super) unsafe fn unlink(&mut self, h: NonNull<BufHeader>) {
        // SAFETY: `h` is in the list its header names (type invariant), and
        // is live; under this lock.
        unsafe {
            if BufHeader::unsignaled(h) {
                self.unsignaled.remove(h);
            } else {
                self.inflight.remove(h);
            }
        }
    }

    /// Takes the unsignaled Sends whose sequence number is below `seq`
    /// off the front of their list (the list is in post order), and chains
    /// them through their `next` link in that order; returns the first (or
    /// null). The caller owns them.
    fn take_unsignaled_before(&mut self, seq: u64) -> *mut BufHeader {
        let mut first = core::ptr::null_mut();
        let mut last: Option<NonNull<BufHeader>> = None;
        while let Some(h) = self.unsignaled.front() {
            // SAFETY: A member, so live (type invariant); under this lock.
            if unsafe { BufHeader::sq_seq(h) } >= seq {
                break;
            }
            // SAFETY: A member; out of the list it is ours, and chained
            // only through its own links and those of the one before it,
            // also ours.
            unsafe {
                self.unsignaled.remove(h);
                BufHeader::set_unsignaled(h, false);
                match last {
                    Some(last) => {
                        BufHeader::set_next(last, h.as_ptr());
                        BufHeader::set_prev(h, last.as_ptr());
                    }
                    None => first = h.as_ptr(),
                }
            }
            last = Some(h);
        }
        first
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
    /// The device refuses a peer's invalidation of a key until the REG_MR
    /// that sets it has run ([`Device::invalidation_checks_key`]): only
    /// then is a Receive's invalidation a [`RemoteInvalidation`].
    peer_inv_proves: bool,
    sq_done: AtomicU64,
    /// Receive completions delivered so far; written only by the
    /// Receive completion handler, which runs one completion at a time.
    rq_seen: AtomicU64,
    destroyed: AtomicBool,
    /// The handler of the identifier the QP was made on (an `Arc` of the
    /// type whose `TypeId` is `handler_kind`, turned foreign), which that
    /// identifier keeps until the QP is shut down: the handler of every
    /// buffer posted on it.
    handler: *const c_void,
    handler_kind: TypeId,
    /// Receives may be posted: set once the QP is created, cleared when
    /// its shutdown begins, which then waits for an RCU grace period, as
    /// a Receive is posted under the RCU read lock after checking it
    /// (`rpcrdma_rs_post_recv`), with no lock of the QP's.
    open: AtomicBool,
    /// The QP, set with `open`, for those posts.
    raw_qp: AtomicPtr<bindings::ib_qp>,
    /// A Receive was posted: the QP must be drained before it is
    /// destroyed.
    recv_posted: AtomicBool,
    /// Every Receive buffer made for the QP and not freed, so that its
    /// shutdown frees those it still holds.
    #[pin]
    recvs: SpinLock<RecvRegistry>,
}

/// The Receive buffers of a QP, by the index each keeps in its header;
/// room for `max_recv_wr` of them, allocated with the QP.
///
/// # Invariants
///
/// Each entry is the header of a live Receive buffer made for the QP and
/// not freed, whose header holds its index here.
pub(super) struct RecvRegistry {
    bufs: KVec<NonNull<BufHeader>>,
}

// SAFETY: The headers are of buffers, which are `Send`; they are read only
// under the registry's lock.
unsafe impl Send for RecvRegistry {}

impl RecvRegistry {
    /// Takes the entry at `index` out, the last one taking its place;
    /// returns the one that moved there, if any.
    fn remove_at(&mut self, index: usize) -> Option<NonNull<BufHeader>> {
        let last = self.bufs.len().checked_sub(1)?;
        if index > last {
            return None;
        }
        self.bufs.as_mut_slice().swap(index, last);
        // SAFETY: A shorter length, within what is initialised; the entry
        // it leaves out is a pointer, which needs no drop.
        unsafe { self.bufs.set_len(last) };
        self.bufs.get(index).copied()
    }
}

// SAFETY: The verbs objects may be used from any thread; `id` is used only
// by `shutdown`, which the connection manager serialises against the
// identifier's other functions (its QP mutex).
unsafe impl Send for Qp {}
// SAFETY: Shared state is behind locks or atomics; `handler` and
// `handler_kind` are set at creation and only read, the handler dereferenced
// only by completion callbacks while the identifier keeps it (`create`).
unsafe impl Sync for Qp {}

impl Qp {
    /// Creates the RC queue pair of identifier `id`, whose address resolved
    /// to `device`, with a PD and a send and a receive CQ of its own.
    ///
    /// # Safety
    ///
    /// `id` is a live identifier that has no QP, and is not destroyed
    /// before [`Qp::shutdown`] of the result has returned. `handler` came
    /// from `into_foreign` of an `Arc` of the type whose `TypeId` is
    /// `handler_kind`, and that reference is kept until then too.
    pub(super) unsafe fn create(
        id: NonNull<bindings::rdma_cm_id>,
        device: &Device,
        caps: &QpCaps,
        handler: *const c_void,
        handler_kind: TypeId,
    ) -> Result<Arc<Self>> {
        let recvs = RecvRegistry {
            bufs: KVec::with_capacity(usize::try_from(caps.max_recv_wr)?, GFP_KERNEL)?,
        };
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
                    inflight: BufList::new(),
                    unsignaled: BufList::new(),
                    send_kind: None,
                }),
                teardown <- new_mutex!(Some((send_cq, recv_cq))),
                id,
                pd,
                device: ARef::from(device),
                lkey,
                uid: super::next_uid(),
                peer_inv_proves: device.invalidation_checks_key(),
                sq_done: AtomicU64::new(0),
                rq_seen: AtomicU64::new(0),
                destroyed: AtomicBool::new(false),
                handler,
                handler_kind,
                open: AtomicBool::new(false),
                raw_qp: AtomicPtr::new(core::ptr::null_mut()),
                recv_posted: AtomicBool::new(false),
                recvs <- new_spinlock!(recvs),
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
            qp.raw_qp.store(post.raw, Ordering::Release);
            qp.open.store(true, Ordering::Release);
        }
        Ok(qp)
    }

    /// Registers the Receive buffer `h` (see [`RecvRegistry`]); `ENOMEM`
    /// for more than the receive queue holds.
    ///
    /// # Safety
    ///
    /// `h` is the header of a Receive buffer made for this QP, in its
    /// final place, not registered, and is unregistered before it is
    /// freed ([`Qp::unregister_recv`]), unless the shutdown frees it.
    pub(super) unsafe fn register_recv(&self, h: NonNull<BufHeader>) -> Result {
        let mut recvs = self.recvs.lock();
        let index = recvs.bufs.len();
        if index >= recvs.bufs.capacity() {
            return Err(ENOMEM);
        }
        // Within the capacity: no allocation.
        recvs.bufs.push(h, GFP_ATOMIC)?;
        // SAFETY: Live (the function's contract); the index is written
        // only under this lock. INVARIANT: registered at `index`.
        unsafe { BufHeader::set_reg_index(h, index) };
        Ok(())
    }

    /// Unregisters the Receive buffer `h`, about to be freed, if it is
    /// registered.
    ///
    /// # Safety
    ///
    /// `h` is the header of a live Receive buffer made for this QP.
    pub(super) unsafe fn unregister_recv(&self, h: NonNull<BufHeader>) {
        let mut recvs = self.recvs.lock();
        // SAFETY: Live (the function's contract); under the lock.
        let index = unsafe { BufHeader::reg_index(h) };
        if recvs.bufs.get(index) != Some(&h) {
            return;
        }
        if let Some(moved) = recvs.remove_at(index) {
            // SAFETY: A registered header, so live (type invariant); under
            // the lock. INVARIANT: it moved to `index`.
            unsafe { BufHeader::set_reg_index(moved, index) };
        }
        // SAFETY: As above; it is no longer registered.
        unsafe { BufHeader::set_reg_index(h, usize::MAX) };
    }

    /// Posts the Receive buffer `h` (`len` bytes at DMA address `addr`)
    /// if the QP is open, without a lock: see `open`. Its header says the
    /// QP holds it from just before the post, and again not if the post
    /// fails.
    ///
    /// # Safety
    ///
    /// `h` is a Receive buffer registered with this QP whose owner gives it
    /// up to the QP for the post; `cqe` is its completion entry.
    pub(super) unsafe fn post_recv(
        &self,
        h: NonNull<BufHeader>,
        cqe: *mut bindings::ib_cqe,
        addr: u64,
        len: u32,
        lkey: u32,
    ) -> Result {
        // The QP may reach the buffer from the post on: the shutdown knows
        // that from this, once the post is over (the grace period), before
        // the QP goes.
        self.recv_posted.store(true, Ordering::Release);
        // SAFETY: `raw_qp` and `open` are this QP's; read in the RCU read
        // section, `raw_qp` is live while `open` is set (the shutdown waits
        // for the grace period before destroying it). The buffer stays
        // until its completion or the shutdown frees it (the function's
        // contract); its header's flag is the QP's to set while posted.
        to_result(unsafe {
            bindings::rpcrdma_rs_post_recv(
                self.raw_qp.as_ptr(),
                self.open.as_ptr(),
                BufHeader::posted_flag(h),
                cqe,
                addr,
                len,
                lkey,
            )
        })
    }

    /// The device the QP is on, which it holds registered.
    pub(crate) fn device(&self) -> &Device {
        &self.device
    }

    /// Whether a Receive's invalidation proves anything on this QP (see
    /// [`RemoteInvalidation`]).
    pub(super) fn peer_inv_proves(&self) -> bool {
        self.peer_inv_proves
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

    /// Waits until no post is under way: takes the posting lock and lets
    /// it go (for `Mr::reg_settled`).
    pub(super) fn settle_posts(&self) {
        drop(self.post.lock());
    }

    /// The completion of the Send `h` arrived, successful or not
    /// (`success`): takes `h` out of the QP's lists and, if it was posted
    /// signaled and succeeded, every unsignaled Send posted before it, all
    /// under one hold of the lock. Those completed successfully too (the
    /// send queue completes in order, and a failure flushes what follows
    /// it), without a completion of their own: a device reports one for an
    /// unsignaled request only when it fails or is flushed, which none of
    /// them can have done, and would have reported it before this one. So
    /// no buffer is handed back twice. A failed or flushed signaled Send
    /// proves nothing of those before it: they stay until their own
    /// completion or the QP's end.
    ///
    /// # Safety
    ///
    /// `h` is the header of a Send buffer in one of this QP's lists.
    pub(super) unsafe fn send_done(&self, h: NonNull<BufHeader>, success: bool) -> SendDone {
        let mut post = self.post.lock();
        // SAFETY: In one of the lists (the function's contract), so live;
        // its fields are written only under this lock.
        let (signaled, seq) = unsafe { (!BufHeader::unsignaled(h), BufHeader::sq_seq(h)) };
        // SAFETY: By the function's contract.
        unsafe { post.unlink(h) };
        let earlier = if signaled && success {
            post.take_unsignaled_before(seq)
        } else {
            core::ptr::null_mut()
        };
        SendDone {
            signaled,
            seq,
            earlier,
        }
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

    /// Counts a Receive completion; returns how many came before it. Only
    /// the Receive completion handler calls it, one completion at a time:
    /// a load and a store, no locked add.
    pub(super) fn rq_completed(&self) -> u64 {
        let seen = self.rq_seen.load(Ordering::Relaxed);
        self.rq_seen.store(seen.wrapping_add(1), Ordering::Release);
        seen
    }

    /// True if the handler of the QP's identifier is of type `H`: only then
    /// may buffers of handler type `H` be made for it.
    pub(super) fn handled_by<H: 'static>(&self) -> bool {
        self.handler_kind == TypeId::of::<H>()
    }

    /// The handler of the QP's identifier, an `Arc<H>` turned foreign, for
    /// the completion callbacks of its buffers (see [`Qp::handled_by`]).
    pub(super) fn handler(&self) -> *const c_void {
        self.handler
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
        let (raw, created, sq_posted) = {
            let mut post = self.post.lock();
            let created = matches!(post.state, State::Open | State::Closing);
            if created {
                post.state = State::Closing;
            }
            self.open.store(false, Ordering::Release);
            (post.raw, created, post.posted)
        };
        let mut drained = Ok(());
        if created {
            // Every Receive post that found the QP open is over after this,
            // and none starts: the RCU read section of `post_recv`.
            // SAFETY: No precondition; sleeps, as the shutdown may.
            unsafe { bindings::rpcrdma_rs_synchronize_rcu() };
            if sq_posted || self.recv_posted.load(Ordering::Acquire) {
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
        // Both lists are emptied here, under the lock, once and for all:
        // nothing is posted once destroyed, and no completion walks them.
        let lists = {
            let mut post = self.post.lock();
            post.state = State::Destroyed;
            post.raw = core::ptr::null_mut();
            [post.inflight.take_all(), post.unsignaled.take_all()]
        };
        // The Receives the QP still holds: taken out of the registry (so
        // their drop does not look for them there), and freed below.
        let mut held: *mut BufHeader = core::ptr::null_mut();
        {
            let mut recvs = self.recvs.lock();
            let mut i = 0;
            while let Some(&h) = recvs.bufs.get(i) {
                // SAFETY: Registered, so live (type invariant); no post or
                // completion touches it any more (closed, drained or not,
                // destroyed, CQs freed).
                if unsafe { BufHeader::posted(h) } {
                    let moved = recvs.remove_at(i);
                    // SAFETY: As above; out of the registry, and chained
                    // through its own link, the QP's to give up.
                    unsafe {
                        BufHeader::set_reg_index(h, usize::MAX);
                        BufHeader::set_links(h, core::ptr::null_mut(), held);
                    }
                    held = h.as_ptr();
                    if let Some(moved) = moved {
                        // SAFETY: Registered, live; under the lock.
                        // INVARIANT: it moved to `i`.
                        unsafe { BufHeader::set_reg_index(moved, i) };
                    }
                } else {
                    i += 1;
                }
            }
        }
        // INVARIANT: destroyed, and the CQs freed.
        self.destroyed.store(true, Ordering::Release);
        // What the lists still owned never completed, or completed without
        // a completion of its own (unsignaled Sends no signaled one
        // covered), and nothing will hand it back: the QP and the CQs are
        // gone.
        let [inflight, unsignaled] = lists;
        for mut next in [inflight, unsignaled, held] {
            while let Some(h) = NonNull::new(next) {
                // SAFETY: A member of a list, or a Receive the QP held (out of
                // the registry above), whose owner is gone: the buffer is
                // ours to free, and nothing else refers to it.
                unsafe {
                    next = BufHeader::links(h).1;
                    BufHeader::free(h);
                }
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
/// carried `IB_WC_WITH_INVALIDATE`, on a QP whose device refuses the
/// peer's invalidation of a key until the REG_MR that sets it has run
/// ([`Device::invalidation_checks_key`]; not siw, where a posted REG_MR
/// may run after the invalidation and make the region reachable again).
/// `index` counts the Receive completions of that QP handled before it
/// (in the order the handler takes them, which need not be the order they
/// arrived in), so a proof handled before
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
