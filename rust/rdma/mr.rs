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
//! [`Mr::prepare_reg`] borrows and [`Mr::unmap`]
//! consumes ([`post_local_invs`] borrows it too). Whatever changes a region's mapping takes its [`MrKey`], the
//! one right to do so, which [`Mr::new`] hands out with the region: its
//! owner keeps the keys where it keeps what the regions are used for
//! (under one lock of its own), and the region itself takes no lock. The region keeps track of what the device may still do with
//! the mapping, and [`Mr::unmap`] hands the token back while the peer may
//! still reach the memory.
//!
//! A REG_MR is posted chained ahead of a Send, in one post, as the C
//! transport's `frwr_send` does: [`Mr::prepare_reg`] fills the region's own
//! work request and hands out a [`PendingReg`], and
//! [`SendBuf::post_chained`](super::SendBuf::post_chained) posts the
//! regions of its `PendingReg`s and the Send together. While a `PendingReg`
//! is out the REG_MR counts as posted for [`Mr::unmap`] (it may be), and
//! as not posted for everything that needs it posted. The chained post
//! marks each region posted or not under the QP's posting lock, before it
//! lets the lock go; a reader that finds a post under way waits for that
//! lock ([`Mr::reg_settled`]), so a Receive that answers the Send never
//! finds its regions still pending.
//!
//! A mapping is undone only when
//!
//! - its REG_MR was never posted;
//! - a LOCAL_INV of it completed: its own signaled completion arrived, or
//!   that of a later request on the send queue (which completes in order,
//!   see [`Qp`]);
//! - the peer invalidated it with Send With Invalidate, reported by a
//!   Receive of the same QP delivered after the REG_MR was posted, on a
//!   device that refuses a key until the REG_MR that sets it has run
//!   ([`Mr::invalidated_by_peer`], [`RemoteInvalidation`]);
//! - or the QP is destroyed.
//!
//! The transport's own rules (`xprt/frwr.rs`) decide when to invalidate
//! and when to unmap; these checks only refuse what would let the peer
//! reach memory after it is handed back.

use super::{
    buffer::{Completion, CompletionHandler, SendBuf},
    piece::PadBuffer,
    qp::{Posting, Qp, RemoteInvalidation, SendWr},
    CmHandler, CmId, Piece,
};
use crate::{bindings, errno, proto::header::Segment};
use core::{
    cell::UnsafeCell,
    ptr::NonNull,
    sync::atomic::{AtomicU64, Ordering},
};
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

/// The most REG_MRs one chained post takes, before its Send: an RPC's
/// two chunks, and a connection's Write chunk pad (posted with its first).
pub(crate) const MAX_CHAIN: usize = 2 * bindings::RPCRDMA_RS_MAX_SEGS as usize + 1;

/// A REG_MR prepared by [`Mr::prepare_reg`], for
/// [`SendBuf::post_chained`](super::SendBuf::post_chained) to post. Not
/// `Clone`: one holder.
///
/// # Invariants
///
/// Only `prepare_reg` makes one, for the region whose `uid` is `mr` and
/// whose owner's index is `index`, whose REG_MR is then [`Reg::Pending`]
/// with its work request filled in; it stays so until the chained post
/// that consumes this value marks it. Dropped unposted, it leaves the
/// region pending, so mapped, until its QP is destroyed.
#[must_use]
pub(crate) struct PendingReg {
    mr: u64,
    index: u32,
}

/// The REG_MRs of one Call, prepared for its chained post, in order:
/// room for [`MAX_CHAIN`], allocated once, so that filling it under a
/// spinlock never allocates.
pub(crate) struct RegChain(KVec<PendingReg>);

// `RegChain::clear` forgets them.
const _: () = assert!(!core::mem::needs_drop::<PendingReg>());

impl RegChain {
    pub(crate) fn new() -> Result<Self> {
        Ok(Self(KVec::with_capacity(MAX_CHAIN, GFP_KERNEL)?))
    }

    /// Appends `reg`; `EMSGSIZE` once it holds [`MAX_CHAIN`].
    pub(crate) fn push(&mut self, reg: PendingReg) -> Result {
        if self.0.len() >= MAX_CHAIN {
            return Err(errno::emsgsize());
        }
        // Within the capacity: no allocation.
        Ok(self.0.push(reg, GFP_ATOMIC)?)
    }

    /// Empties it. A REG_MR not posted stays pending: its region stays
    /// mapped until its QP is destroyed.
    pub(crate) fn clear(&mut self) {
        // SAFETY: A length of zero is within the capacity and initializes
        // nothing; `PendingReg` has no drop glue (asserted above).
        unsafe { self.0.set_len(0) };
    }

    fn as_slice(&self) -> &[PendingReg] {
        self.0.as_slice()
    }
}

/// Where the REG_MR of a region's current mapping is, kept in
/// [`Mr::reg`] as one word so that a chained post can mark it under the
/// QP's posting lock without taking the region's.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reg {
    /// Not posted (or nothing is mapped).
    No,
    /// A [`PendingReg`] is out: posted or not, only its post knows.
    Pending,
    /// Posted, when the QP had delivered this many Receive completions.
    Posted(u64),
}

impl Reg {
    const NO: u64 = u64::MAX;
    const PENDING: u64 = u64::MAX - 1;

    fn from_word(word: u64) -> Self {
        match word {
            Self::NO => Self::No,
            Self::PENDING => Self::Pending,
            mark => Self::Posted(mark),
        }
    }

    fn word(self) -> u64 {
        match self {
            Self::No => Self::NO,
            Self::Pending => Self::PENDING,
            // A count of Receives does not reach either sentinel.
            Self::Posted(mark) => mark.min(Self::PENDING - 1),
        }
    }
}

/// What a region's current mapping may still let the device do.
#[derive(Clone, Copy)]
struct Mapping {
    gen: u64,
    nents: u32,
    writing: bool,
    rkey: u32,
    /// The send-queue sequence number of the last LOCAL_INV posted.
    inv: Option<u64>,
    /// The peer invalidated this registration.
    remote: bool,
}

/// The right to change one region's mapping ([`Mr::map`], [`Mr::unmap`]
/// and the work requests between), made once, with the region, by
/// [`Mr::new`]. Not `Clone`: whoever holds it `&mut` is the only one at
/// the region's state.
pub(crate) struct MrKey {
    mr: u64,
}

struct MrState {
    mapping: Option<Mapping>,
    next_gen: u64,
    /// A work request was posted for the region, ever.
    posted: bool,
    /// The pad buffer the current mapping maps ([`Mr::map_pad`]), kept
    /// until it is undone (or, should it never be, until `drop` has
    /// deregistered the region and undone it).
    pad: Option<PadBuffer>,
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
/// `qp` is destroyed if anything was ever posted for the region. `state`
/// is read and written only through the region's one [`MrKey`] (whose
/// `mr` is `uid`), borrowed `&mut`, and by `drop`. `inv_signaled` is 0 or
/// the send-queue sequence number of the signaled LOCAL_INV whose
/// completion has not been handled; it is set under the QP's posting
/// lock before that request is posted. While
/// `state.mapping` is set, `sg` holds its `nents` entries, DMA-mapped for
/// the device of `qp` in its direction. `reg_cqe` and `inv_cqe` call
/// [`reg_done::<H>`] and [`inv_done::<H>`]. `uid` is no other region's.
/// `reg` holds a [`Reg`] word about the current mapping (`Reg::No` when
/// there is none); it leaves `Reg::Pending` only by the chained post of
/// the region's [`PendingReg`], which writes it under the QP's posting
/// lock if it posted anything, and after the post otherwise; `reg_wr` is
/// written only by `prepare_reg` and that post.
#[repr(C)]
#[pin_data(PinnedDrop)]
pub(crate) struct Mr<H: MrHandler> {
    #[pin]
    reg_cqe: Opaque<bindings::ib_cqe>,
    #[pin]
    inv_cqe: Opaque<bindings::ib_cqe>,
    /// The region's REG_MR work request, filled by `prepare_reg`.
    #[pin]
    reg_wr: Opaque<bindings::ib_reg_wr>,
    /// The region's LOCAL_INV work request, filled and posted by
    /// [`post_local_invs`], with the region's key.
    #[pin]
    inv_wr: Opaque<bindings::ib_send_wr>,
    reg: AtomicU64,
    raw: NonNull<bindings::ib_mr>,
    sg: NonNull<bindings::scatterlist>,
    depth: u32,
    index: u32,
    uid: u64,
    qp: Arc<Qp>,
    handler: Arc<H>,
    inv_signaled: AtomicU64,
    state: UnsafeCell<MrState>,
}

// SAFETY: The raw pointers are verbs objects usable from any thread; the
// region's state is reached only through its one key, held `&mut` (type
// invariant), `reg` and `inv_signaled` are atomic, `reg_wr` is written
// only by `prepare_reg`, with the key, and by the chained post of the
// region's one `PendingReg` (type invariant), never at once, and `inv_wr`
// only by `post_local_invs`, with the key.
unsafe impl<H: MrHandler> Send for Mr<H> {}
// SAFETY: As above.
unsafe impl<H: MrHandler> Sync for Mr<H> {}

impl<H: MrHandler> Mr<H> {
    /// Allocates a region of `depth` pages on the PD of `qp`; `index` is
    /// the owner's name for it, `handler` is told of its completions.
    /// Returns it with its key.
    pub(crate) fn new(
        qp: &Arc<Qp>,
        depth: u32,
        index: u32,
        handler: Arc<H>,
    ) -> Result<(Pin<KBox<Self>>, MrKey)> {
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
                reg_wr: Opaque::uninit(),
                inv_wr: Opaque::uninit(),
                reg: AtomicU64::new(Reg::NO),
                raw,
                sg,
                depth,
                index,
                uid: super::next_uid(),
                qp: qp.clone(),
                handler,
                inv_signaled: AtomicU64::new(0),
                state: UnsafeCell::new(MrState {
                    mapping: None,
                    next_gen: 0,
                    posted: false,
                    pad: None,
                }),
            }),
            GFP_KERNEL,
        );
        match mr {
            // INVARIANT: the region's one key.
            Ok(mr) => {
                let key = MrKey { mr: mr.uid };
                Ok((mr, key))
            }
            Err(e) => {
                // SAFETY: Allocated above, never posted, owned by no region.
                unsafe {
                    bindings::rpcrdma_rs_dereg_mr(raw.as_ptr());
                    bindings::rpcrdma_rs_free_sg(sg.as_ptr());
                }
                Err(e)
            }
        }
    }

    /// The region's state, for the holder of its key; `EINVAL` for
    /// another region's key.
    fn state<'a>(&'a self, key: &'a mut MrKey) -> Result<&'a mut MrState> {
        if key.mr != self.uid {
            return Err(EINVAL);
        }
        // SAFETY: `key` is this region's one key (type invariant), borrowed
        // mutably for as long as the result: nothing else reaches `state`
        // meanwhile (`drop` has the region to itself).
        Ok(unsafe { &mut *self.state.get() })
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
    pub(crate) fn map(
        &self,
        key: &mut MrKey,
        pieces: &[Piece],
        writing: bool,
        xid: u32,
    ) -> Result<Mapped> {
        let state = self.state(key)?;
        self.map_state(state, pieces, writing, xid)
    }

    /// Maps a scratch buffer of its own (a [`PadBuffer`]) into the region,
    /// for the peer to write a Write chunk's XDR pad into (C:
    /// `frwr_wp_create`); returns the mapping, whose segment is to be
    /// advertised. The region frees the buffer when the mapping is undone.
    /// Sleeps. `EBUSY` while the region is mapped.
    pub(crate) fn map_pad(&self, key: &mut MrKey) -> Result<Mapped> {
        let pad = PadBuffer::new()?;
        let state = self.state(key)?;
        // The buffer goes into the region's state with the mapping (below),
        // which `unmap` empties only once the mapping is undone; otherwise
        // `drop` frees it only after deregistering the region and undoing
        // the mapping. On error nothing is mapped.
        // SAFETY: So the buffer stays until every mapping of it is undone.
        let piece = unsafe { pad.piece() }?;
        // C registers the pad with a zero XID.
        let m = self.map_state(state, core::slice::from_ref(&piece), true, 0)?;
        state.pad = Some(pad);
        Ok(m)
    }

    /// [`Mr::map`], with the region's `state`.
    fn map_state(
        &self,
        state: &mut MrState,
        pieces: &[Piece],
        writing: bool,
        xid: u32,
    ) -> Result<Mapped> {
        let n = u32::try_from(pieces.len()).map_err(|_| EINVAL)?;
        if n == 0 || n > self.depth {
            return Err(EINVAL);
        }
        // A pending REG_MR outlives its mapping only on a destroyed QP.
        if state.mapping.is_some() || self.reg() != Reg::No {
            return Err(EBUSY);
        }
        let mut seg = bindings::rpcrdma_rs_mr_seg::default();
        // Not mapped: no work request reads the region's page list (the
        // last mapping was undone only once unreachable, see `unmap`).
        // `Piece` is a transparent wrapper of the C piece. The region and
        // its `depth`-entry scatterlist are live (type invariant) and not
        // mapped; `pieces` has `n <= depth` entries.
        // SAFETY: As above; each piece is a part of one page that stays
        // while it is mapped (`Piece`'s invariant).
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

    /// Where the current mapping's REG_MR is; read with the region's key,
    /// or by the region's pending post.
    fn reg(&self) -> Reg {
        Reg::from_word(self.reg.load(Ordering::Acquire))
    }

    /// [`Mr::reg`], after any chained post under way has let the QP's
    /// posting lock go: it marks what it posted before it does, so
    /// `Pending` then means not posted yet. Takes that lock, which must not
    /// be held.
    fn reg_settled(&self) -> Reg {
        match self.reg() {
            Reg::Pending => {
                self.qp.settle_posts();
                self.reg()
            }
            reg => reg,
        }
    }

    /// Prepares the unsignaled REG_MR that makes the mapping reachable by
    /// the peer, for [`SendBuf::post_chained`](super::SendBuf::post_chained)
    /// to post on the region's QP. Once per mapping, and never after a
    /// LOCAL_INV of it (`EBUSY`): a key registered after its invalidation
    /// would stay reachable while `unmap` took the LOCAL_INV as proof that
    /// it is not. `EINVAL` if `m` is not the region's current mapping.
    pub(crate) fn prepare_reg(&self, key: &mut MrKey, m: &Mapped) -> Result<PendingReg> {
        let state = self.state(key)?;
        let mapping = state.current(self.uid, m).ok_or(EINVAL)?;
        if mapping.inv.is_some() || self.reg() != Reg::No {
            return Err(EBUSY);
        }
        let writing = mapping.writing;
        // SAFETY: `reg_wr` is the region's, pinned with it; no `PendingReg`
        // of the region is out (`Reg::No`), so no chained post reads or
        // writes it, and no other `prepare_reg` runs (the key is ours).
        unsafe {
            bindings::rpcrdma_rs_prep_reg_wr(
                self.reg_wr.get(),
                self.raw.as_ptr(),
                writing,
                self.reg_cqe.get(),
            )
        };
        // Before anything can be posted: `drop` must then shut the QP down
        // first.
        state.posted = true;
        // INVARIANT: pending, with its work request filled in, and one
        // `PendingReg` out.
        self.reg.store(Reg::PENDING, Ordering::Release);
        Ok(PendingReg {
            mr: self.uid,
            index: self.index,
        })
    }

    /// Records that the peer invalidated the mapping `m` (Send With
    /// Invalidate), if `proof` names its key, comes from the region's QP,
    /// and was delivered after the mapping's REG_MR was posted; returns
    /// whether it did. Then [`Mr::unmap`] may undo the mapping. (No proof
    /// is made on a device whose invalidation does not check the key: see
    /// [`RemoteInvalidation`].)
    pub(crate) fn invalidated_by_peer(
        &self,
        key: &mut MrKey,
        m: &Mapped,
        proof: &RemoteInvalidation,
    ) -> bool {
        let (qp, uid) = (self.qp.uid(), self.uid);
        let Ok(state) = self.state(key) else {
            return false;
        };
        let Some(mapping) = state.current(uid, m) else {
            return false;
        };
        // A proof is a Receive handled already: if the REG_MR is not
        // posted once any post under way is over, the proof came first.
        let ours = proof.qp == qp
            && proof.rkey == mapping.rkey
            && matches!(self.reg_settled(), Reg::Posted(mark) if proof.index >= mark);
        if ours {
            mapping.remote = true;
        }
        ours
    }

    /// Undoes `mapping`'s DMA mapping of the scatterlist's entries.
    ///
    /// # Safety
    ///
    /// `mapping` is the region's current mapping; nothing can reach its
    /// pages through the device any more (the peer, or a work request
    /// reading the region's page list), and they are still allocated (the
    /// unmapping may copy into them).
    unsafe fn unmap_sg(&self, mapping: &Mapping) {
        // SAFETY: `sg` holds the mapping's `nents` entries, mapped in its
        // direction (type invariant), for a device `qp` holds registered;
        // the caller says nothing reaches them and they are allocated.
        unsafe {
            bindings::rpcrdma_rs_mr_unmap(
                self.qp.device().as_raw(),
                self.sg.as_ptr(),
                mapping.nents,
                mapping.writing,
            )
        };
    }

    /// Undoes the DMA mapping `m`, if the peer can no longer reach it (see
    /// the module documentation); otherwise hands `m` back, still mapped.
    pub(crate) fn unmap(&self, key: &mut MrKey, m: Mapped) -> Result<(), Mapped> {
        let uid = self.uid;
        let Ok(state) = self.state(key) else {
            return Err(m);
        };
        let Some(mapping) = state.current(uid, &m).copied() else {
            return Err(m);
        };
        // A pending REG_MR may be posted: reachable, unless the QP is gone.
        let reg = self.reg();
        let unreachable = reg == Reg::No
            || mapping.remote
            || mapping.inv.is_some_and(|seq| self.qp.sq_done_through(seq))
            || self.qp.is_destroyed();
        if !unreachable {
            return Err(m);
        }
        // SAFETY: The peer can no longer reach the pages, no work request
        // reads the region's page list (above), and the mapping's owner
        // holds its pages while it is mapped (`Mapped`).
        unsafe { self.unmap_sg(&mapping) };
        // INVARIANT: unmapped; a pending REG_MR (of a destroyed QP) stays
        // its post's to mark, and keeps the region from being mapped again.
        state.mapping = None;
        // Nothing reaches a pad buffer any more: it may go.
        state.pad = None;
        if reg != Reg::Pending {
            self.reg.store(Reg::NO, Ordering::Release);
        }
        Ok(())
    }
}

/// Most LOCAL_INVs one chained post takes: an RPC's regions.
pub(crate) const MAX_INV_CHAIN: usize = 2 * bindings::RPCRDMA_RS_MAX_SEGS as usize;

/// Posts LOCAL_INVs of the mappings of the regions `targets` (indices in
/// `mrs`, whose keys are in `keys` and whose mappings are in `maps` at the
/// same index) in one chain on their QP, the last one signaled (C:
/// `frwr_unmap_async`);
/// the regions record the ones their QP took. Each must be after its
/// region's REG_MR (`EINVAL` before: see `Mr::prepare_reg`), and only one
/// signaled LOCAL_INV may be outstanding per region (`EBUSY`). An error if
/// not all were posted.
pub(crate) fn post_local_invs<H: MrHandler>(
    mrs: &[Pin<KBox<Mr<H>>>],
    keys: &mut [MrKey],
    maps: &[Option<Mapped>],
    targets: &[u32],
) -> Result {
    let n = targets.len();
    let (Some(&first), true) = (targets.first(), n <= MAX_INV_CHAIN) else {
        return if n == 0 {
            Ok(())
        } else {
            Err(errno::emsgsize())
        };
    };
    let qp = &mrs.get(first as usize).ok_or(EINVAL)?.qp;
    let mut wrs = [core::ptr::null_mut(); MAX_INV_CHAIN];
    for (i, &index) in targets.iter().enumerate() {
        // Each region once: its one work request is linked into the chain
        // once, and each request taken gets its own sequence number.
        if targets
            .get(..i)
            .is_some_and(|before| before.contains(&index))
        {
            return Err(EINVAL);
        }
        let i_mr = index as usize;
        let (Some(mr), Some(key), Some(Some(m))) =
            (mrs.get(i_mr), keys.get_mut(i_mr), maps.get(i_mr))
        else {
            return Err(EINVAL);
        };
        let signaled = i + 1 == n;
        let uid = mr.uid;
        let state = mr.state(key)?;
        let mapping = state.current(uid, m).ok_or(EINVAL)?;
        if mr.qp.uid() != qp.uid() || mr.reg() == Reg::No {
            return Err(EINVAL);
        }
        if signaled && mr.inv_signaled.load(Ordering::Acquire) != 0 {
            return Err(EBUSY);
        }
        // SAFETY: `inv_wr` is the region's, pinned with it; written only
        // here, with the region's key, and read only by the post below.
        unsafe {
            bindings::rpcrdma_rs_prep_inv_wr(
                mr.inv_wr.get(),
                mapping.rkey,
                mr.inv_cqe.get(),
                signaled,
            )
        };
        if let Some(wr) = wrs.get_mut(i) {
            *wr = mr.inv_wr.get();
        }
    }
    let wrs = wrs.get(..n).unwrap_or(&[]);
    let (seq, taken, result) = qp.posting(|post| {
        // Under the posting lock, which a chained post marks its regions
        // under: still pending is not posted.
        for &index in targets {
            match mrs.get(index as usize) {
                Some(mr) if matches!(mr.reg(), Reg::Posted(_)) => {}
                _ => return Err(EINVAL),
            }
        }
        let last = mrs.get(targets.last().copied().unwrap_or(0) as usize);
        // Before the post: its completion may come at once, and must find
        // it (`inv_done`). Sequence numbers start at 1.
        if let Some(mr) = last {
            let seq = post.next_seq() + u64::try_from(n - 1).map_err(|_| EINVAL)?;
            mr.inv_signaled.store(seq, Ordering::Release);
        }
        // SAFETY: The regions, their `inv_wr` and `inv_cqe` stay until the
        // QP is destroyed: `drop` shuts the QP down first once anything was
        // posted, which is recorded below; `wrs` were filled above and
        // nothing else touches them (their keys are borrowed).
        let (seq, taken, result) = unsafe { post.post_local_invs(wrs) };
        if taken < n {
            if let Some(mr) = last {
                mr.inv_signaled.store(0, Ordering::Release);
            }
        }
        Ok((seq, taken, result))
    })?;
    for (i, &index) in targets.iter().enumerate().take(taken) {
        let i_mr = index as usize;
        let (Some(mr), Some(key), Some(Some(m))) =
            (mrs.get(i_mr), keys.get_mut(i_mr), maps.get(i_mr))
        else {
            continue;
        };
        let uid = mr.uid;
        if let Ok(state) = mr.state(key) {
            if let Some(mapping) = state.current(uid, m) {
                mapping.inv = Some(seq + i as u64);
            }
            state.posted = true;
        }
    }
    result
}

/// The prepared work requests of the REG_MRs `regs`, regions of `mrs`
/// made for the QP `qp`, in order, into `wrs`; returns how many. `EINVAL`
/// if one is not such a region's, `EMSGSIZE` for more than [`MAX_CHAIN`].
fn chain_wrs<M: MrHandler>(
    mrs: &[Pin<KBox<Mr<M>>>],
    regs: &[PendingReg],
    qp: u64,
    wrs: &mut [*mut bindings::ib_reg_wr; MAX_CHAIN],
) -> Result<usize> {
    if regs.len() > MAX_CHAIN {
        return Err(errno::emsgsize());
    }
    for (wr, reg) in wrs.iter_mut().zip(regs) {
        let mr = mrs
            .get(reg.index as usize)
            .filter(|mr| mr.uid == reg.mr && mr.qp.uid() == qp)
            .ok_or(EINVAL)?;
        *wr = mr.reg_wr.get();
    }
    Ok(regs.len())
}

/// Marks the REG_MRs of `regs`, regions of `mrs`, after their chained
/// post: the first `posted` as posted, with the Receive completions their
/// QP delivered so far, the rest as not posted. Under the QP's posting
/// lock when anything was posted (see the module documentation).
fn mark_chain<M: MrHandler>(mrs: &[Pin<KBox<Mr<M>>>], regs: &[PendingReg], posted: usize) {
    for (i, reg) in regs.iter().enumerate() {
        let Some(mr) = mrs.get(reg.index as usize).filter(|mr| mr.uid == reg.mr) else {
            continue;
        };
        // Counted after posting: the peer can only invalidate the new key
        // in answer to what is posted after the REG_MR. A reply handled
        // between the post and this count (its handler then waits for the
        // posting lock in `reg_settled`) is not taken as invalidating the
        // region: the transport invalidates it itself, which is only slower.
        let now = if i < posted {
            Reg::Posted(mr.qp.rq_seen())
        } else {
            Reg::No
        };
        // INVARIANT: the post of the region's `PendingReg` marks it.
        mr.reg.store(now.word(), Ordering::Release);
    }
}

impl<H: CompletionHandler> SendBuf<H> {
    /// Posts the filled bytes as one Send, `signaled` or not, chained
    /// after the REG_MRs of `chain` in one post (C: `frwr_send`), on the
    /// buffer's QP, `qp`; `mrs` are the regions they were prepared on, made
    /// for that QP.
    /// Empties `chain`, each REG_MR marked posted or not as the QP took
    /// it.
    /// The buffer comes back as after [`SendBuf::post`], and with an error
    /// as there: the QP may then have taken some of the REG_MRs (a device
    /// may take part of a chain), which their regions know: they keep
    /// their mappings until they are invalidated or the QP is destroyed.
    pub(crate) fn post_chained<M: MrHandler>(
        self,
        qp: &Qp,
        signaled: bool,
        mrs: &[Pin<KBox<Mr<M>>>],
        chain: &mut RegChain,
    ) -> Result<(), (Option<Self>, Error)> {
        let regs = chain.as_slice();
        let mut wrs = [core::ptr::null_mut(); MAX_CHAIN];
        let n = match chain_wrs(mrs, regs, self.qp_uid(), &mut wrs) {
            Ok(n) => n,
            Err(e) => {
                // Nothing posted. A region of another table stays pending:
                // mapped until its QP is destroyed.
                mark_chain(mrs, regs, 0);
                chain.clear();
                return Err((Some(self), e));
            }
        };
        let wrs = wrs.get(..n).unwrap_or(&[]);
        let mut marked = false;
        // `wrs` are the filled work requests of regions made for this QP
        // (`chain_wrs`), which stay until it is destroyed (`Mr::drop`, as
        // `prepare_reg` recorded a post).
        let send = |post: &mut Posting, wr: SendWr| {
            // SAFETY: The regions stay (above); their `PendingReg`s are
            // here, so nothing else touches them; the Send's buffer is in
            // the QP's lists (`post_with`).
            let taken = unsafe { post.post_chain(wrs, wr) };
            // Under the posting lock: see the module documentation.
            mark_chain(mrs, regs, taken.regs);
            marked = true;
            taken
        };
        // SAFETY: `send` posts the Send it is given once, and says what the
        // QP took.
        let posted = unsafe { self.post_with(qp, signaled, send) };
        if !marked {
            // The QP was not open, or the buffer could not be linked:
            // nothing was posted.
            mark_chain(mrs, regs, 0);
        }
        chain.clear();
        posted
    }
}

#[pinned_drop]
impl<H: MrHandler> PinnedDrop for Mr<H> {
    fn drop(self: Pin<&mut Self>) {
        let (posted, mapping, pad) = {
            // SAFETY: Dropped, so ours alone: no key is in use.
            let state = unsafe { &mut *self.state.get() };
            (state.posted, state.mapping, state.pad.take())
        };
        if posted {
            // A no-op once the QP is destroyed, as its owner does before
            // freeing its regions; otherwise the region must not go while
            // a work request or a completion may still refer to it.
            let _ = self.qp.shutdown();
        }
        // A pad buffer is the region's own, still here: its mapping is
        // undone below, once the region is deregistered.
        if mapping.is_some() && pad.is_none() {
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
        if let (Some(mapping), Some(_)) = (mapping, &pad) {
            // SAFETY: The entries are the pad buffer's, allocated until `pad`
            // drops (below); only the region exposed them, and it is
            // deregistered (above).
            unsafe { self.unmap_sg(&mapping) };
        }
        // SAFETY: Ours, and no mapping of it is undone any more.
        unsafe { bindings::rpcrdma_rs_free_sg(self.sg.as_ptr()) };
        // The pad buffer last, its mapping undone (above).
        drop(pad);
    }
}

/// The completion `wc` of a work request of a region of `qp`, for the
/// callback to lend to the handler.
fn completion_of(wc: &bindings::ib_wc, qp: &Qp) -> Completion {
    Completion::new(qp, wc, None)
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
    mr.handler.reg_failed(mr, &completion_of(wc, &mr.qp));
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
    let completion = completion_of(wc, &mr.qp);
    // Set before the post (type invariant); cleared by this handler, which
    // runs one completion at a time (or by a post that the QP did not take,
    // which then has no completion), and no other signaled LOCAL_INV of the
    // region is posted until it is.
    let seq = mr.inv_signaled.load(Ordering::Acquire);
    mr.inv_signaled.store(0, Ordering::Release);
    if let Some(seq) = Some(seq).filter(|&seq| seq != 0 && completion.is_success()) {
        // Before the handler looks: it may unmap at once.
        mr.qp.sq_completed(seq);
    }
    mr.handler.invalidated(mr, &completion);
}
