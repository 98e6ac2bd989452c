// SPDX-License-Identifier: GPL-2.0

//! Chunk registration with FRWR (the C `frwr_ops.c` and the chunk-list
//! encoders of `rpc_rdma.c`): a connection's pool of memory regions, which
//! RPC holds which, and their invalidation (remote, by the server's Send
//! With Invalidate, or local, by LOCAL_INV) before the RPC completes.

use super::verbs::EpShared;
use crate::{
    proto::header::Segment,
    rdma::{Mr, Piece, QpHandle},
    sunrpc::{PinnedRqst, XdrLayout},
};
use core::sync::atomic::Ordering;
use kernel::{alloc::KVec, page::PAGE_SIZE, prelude::*};

/// Most segments in one chunk (C: `RPCRDMA_MAX_HDR_SEGS`).
pub(crate) const MAX_SEGS: usize = 16;
/// Most pages of RPC payload (C: `RPCRDMA_MAX_DATA_SEGS`, less one).
pub(crate) const MAX_DATA_PAGES: u32 = 256;

/// What happens when a region's invalidation completes.
pub(crate) enum Pending {
    /// Complete the RPC with this result.
    Complete(PinnedRqst, Result<u32>),
    /// Wake whoever waits in `buf_free`.
    Wake,
}

/// One region's state.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SlotState {
    Free,
    /// Mapped for RPC `xid` with `nents` pieces (REG_MR posted, or about
    /// to be).
    Registered {
        xid: u32,
        rkey: u32,
        nents: u32,
        writing: bool,
    },
    /// LOCAL_INV posted.
    Invalidating {
        xid: u32,
        nents: u32,
        writing: bool,
    },
}

struct Slot {
    state: SlotState,
    pending: Option<Pending>,
}

/// The regions of a connection and who holds them.
pub(crate) struct MrPool {
    mrs: KVec<Pin<KBox<Mr<EpShared>>>>,
    slots: KVec<Slot>,
}

impl MrPool {
    pub(crate) const fn empty() -> Self {
        Self {
            mrs: KVec::new(),
            slots: KVec::new(),
        }
    }

    /// Adds a region; used while the connection is set up.
    pub(crate) fn add(&mut self, mr: Pin<KBox<Mr<EpShared>>>) -> Result {
        self.slots.push(
            Slot {
                state: SlotState::Free,
                pending: None,
            },
            GFP_KERNEL,
        )?;
        self.mrs.push(mr, GFP_KERNEL)?;
        Ok(())
    }

    /// Everything, for teardown after the QP is drained.
    pub(crate) fn take_all(&mut self) -> KVec<Pin<KBox<Mr<EpShared>>>> {
        self.slots = KVec::new();
        core::mem::replace(&mut self.mrs, KVec::new())
    }

    fn free_index(&self) -> Option<usize> {
        self.slots.iter().position(|s| s.state == SlotState::Free)
    }

    /// Maps `pieces` into a free region for `xid`; returns its index and
    /// segment. The REG_MR is not posted yet.
    pub(crate) fn map(
        &mut self,
        pieces: &[Piece],
        writing: bool,
        xid: u32,
    ) -> Result<(u32, Segment)> {
        let i = self.free_index().ok_or(EAGAIN)?;
        let mr = self.mrs.get(i).ok_or(EINVAL)?;
        // SAFETY: Free, so neither mapped nor posted; the RPC's pages stay
        // until it completes or is freed, and both unmap first.
        let seg = unsafe { mr.map(pieces, writing, xid) }?;
        let slot = self.slots.get_mut(i).ok_or(EINVAL)?;
        slot.state = SlotState::Registered {
            xid,
            rkey: seg.handle,
            nents: u32::try_from(pieces.len())?,
            writing,
        };
        Ok((u32::try_from(i)?, seg))
    }

    /// Posts the REG_MR of region `index`.
    pub(crate) fn post_reg(&self, index: u32, qp: &QpHandle) -> Result {
        let i = usize::try_from(index)?;
        let (Some(mr), Some(slot)) = (self.mrs.get(i), self.slots.get(i)) else {
            return Err(EINVAL);
        };
        let SlotState::Registered { writing, .. } = slot.state else {
            return Err(EINVAL);
        };
        // SAFETY: Mapped; the QP is live while the caller holds the gate
        // open, and regions live until after the drain.
        unsafe { mr.post_reg(qp, writing) }
    }

    /// Unmaps and frees region `i`, whatever its state; the peer must no
    /// longer be able to reach it.
    fn release(&mut self, i: usize) {
        let (Some(mr), Some(slot)) = (self.mrs.get(i), self.slots.get_mut(i)) else {
            return;
        };
        let (nents, writing) = match slot.state {
            SlotState::Free => return,
            SlotState::Registered { nents, writing, .. }
            | SlotState::Invalidating { nents, writing, .. } => (nents, writing),
        };
        // SAFETY: Mapped with these values; the caller knows the peer can
        // no longer reach it.
        unsafe { mr.unmap(nents, writing) };
        slot.state = SlotState::Free;
    }

    /// Unmaps and frees every region: the QP is drained.
    pub(crate) fn release_all(&mut self) {
        for i in 0..self.slots.len() {
            self.release(i);
            if let Some(slot) = self.slots.get_mut(i) {
                // A pending completion cannot happen any more: fail it.
                drop(slot.pending.take());
            }
        }
    }

    /// Frees regions whose REG_MR was never posted.
    pub(crate) fn release_unposted(&mut self, indices: &[u32]) {
        for &i in indices {
            if let Ok(i) = usize::try_from(i) {
                self.release(i);
            }
        }
    }

    fn owned_by(&self, xid: u32) -> impl DoubleEndedIterator<Item = usize> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(move |(i, s)| match s.state {
                SlotState::Registered { xid: x, .. } if x == xid => Some(i),
                _ => None,
            })
    }

    /// A reply for `xid` arrived, or its RPC is being freed. Frees the
    /// region the server invalidated (`remote_rkey`), and posts a
    /// LOCAL_INV for each other region of the RPC, the last one signaled
    /// and carrying `pending`. Returns `pending` if nothing is left to
    /// invalidate: the caller acts on it at once.
    pub(crate) fn invalidate(
        &mut self,
        xid: u32,
        remote_rkey: Option<u32>,
        qp: Option<&QpHandle>,
        pending: Pending,
        ep: &EpShared,
    ) -> Option<Pending> {
        for i in 0..self.slots.len() {
            if let Some(SlotState::Registered { xid: x, rkey, .. }) =
                self.slots.get(i).map(|s| s.state)
            {
                if x == xid && (Some(rkey) == remote_rkey || qp.is_none()) {
                    // Remotely invalidated, or the connection is gone and
                    // the peer cannot reach the region any more.
                    if Some(rkey) == remote_rkey {
                        ep.stats
                            .remote_invalidations
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    self.release(i);
                }
            }
        }
        let (Some(qp), Some(last)) = (qp, self.owned_by(xid).last()) else {
            return Some(pending);
        };
        let mut failed = false;
        for i in 0..self.slots.len() {
            let (Some(mr), Some(slot)) = (self.mrs.get(i), self.slots.get_mut(i)) else {
                continue;
            };
            let SlotState::Registered {
                xid: x,
                rkey,
                nents,
                writing,
            } = slot.state
            else {
                continue;
            };
            if x != xid {
                continue;
            }
            slot.state = SlotState::Invalidating {
                xid,
                nents,
                writing,
            };
            ep.stats.local_inv_needed.fetch_add(1, Ordering::Relaxed);
            // SAFETY: A registered region on a live QP (the caller holds
            // the gate open); regions stay until after the drain.
            if unsafe { mr.post_local_inv(qp, rkey, i == last) }.is_err() {
                failed = true;
            }
        }
        if failed {
            // The QP is broken and goes into the error state: nothing can
            // reach the regions once it is closed.
            ep.connection_lost();
            for i in 0..self.slots.len() {
                if matches!(self.slots.get(i).map(|s| s.state),
                    Some(SlotState::Invalidating { xid: x, .. }) if x == xid)
                {
                    self.release(i);
                }
            }
            return Some(pending);
        }
        if let Some(slot) = self.slots.get_mut(last) {
            slot.pending = Some(pending);
        }
        None
    }

    /// The signaled LOCAL_INV of region `index` completed: every region of
    /// its RPC is now unreachable (send queue order). Frees them and
    /// returns what to do next.
    pub(crate) fn invalidated(&mut self, index: u32) -> Option<Pending> {
        let i = usize::try_from(index).ok()?;
        let xid = match self.slots.get(i)?.state {
            SlotState::Invalidating { xid, .. } => xid,
            _ => return None,
        };
        let pending = self.slots.get_mut(i)?.pending.take();
        for j in 0..self.slots.len() {
            if matches!(self.slots.get(j).map(|s| s.state),
                Some(SlotState::Invalidating { xid: x, .. }) if x == xid)
            {
                self.release(j);
            }
        }
        pending
    }

    /// True if `xid` still has regions registered or being invalidated.
    pub(crate) fn holds(&self, xid: u32) -> bool {
        self.slots.iter().any(|s| match s.state {
            SlotState::Registered { xid: x, .. } | SlotState::Invalidating { xid: x, .. } => {
                x == xid
            }
            SlotState::Free => false,
        })
    }
}

/// Cuts `len` bytes starting at position `start` into pieces that do not
/// cross a page boundary; `page_at` names the page holding a position.
fn cut_into_pages(
    start: usize,
    len: u32,
    out: &mut KVec<Piece>,
    page_at: impl Fn(usize) -> Result<*mut crate::bindings::page>,
) -> Result {
    let mut at = start;
    let mut left = usize::try_from(len)?;
    while left > 0 {
        let offset = at & (PAGE_SIZE - 1);
        let n = (PAGE_SIZE - offset).min(left);
        out.push(
            Piece {
                page: page_at(at)?,
                offset: u32::try_from(offset)?,
                len: u32::try_from(n)?,
            },
            GFP_ATOMIC,
        )?;
        at += n;
        left -= n;
    }
    Ok(())
}

/// Cuts `len` bytes of kernel virtual memory at `base` into page pieces.
pub(crate) fn kvec_pieces(base: *const u8, len: u32, out: &mut KVec<Piece>) -> Result {
    cut_into_pages(base as usize, len, out, |addr| {
        // SAFETY: `addr` lies in the kernel buffer the RPC layer gave us
        // (linear-mapped kmalloc memory).
        Ok(unsafe { crate::bindings::rpcrdma_rs_virt_to_page(addr as *const _) })
    })
}

/// Cuts the page data of `layout` into page pieces.
pub(crate) fn page_pieces(layout: &XdrLayout<'_>, out: &mut KVec<Piece>) -> Result {
    let base = usize::try_from(layout.raw.page_base)?;
    cut_into_pages(base, layout.raw.page_len, out, |at| {
        layout.page(at / PAGE_SIZE).ok_or(EINVAL)
    })
}

/// Splits `pieces` into runs that one region maps: at most `depth`, and
/// no gap inside a run (only its first piece may start inside a page, and
/// only its last may end inside one).
pub(crate) fn runs(pieces: &[Piece], depth: usize) -> impl Iterator<Item = &[Piece]> {
    let mut rest = pieces;
    core::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut n = 0;
        while let Some(p) = rest.get(n).filter(|_| n < depth) {
            n += 1;
            let ends_in_page = (p.offset as usize + p.len as usize) & (PAGE_SIZE - 1) != 0;
            let next_starts_in_page = rest.get(n).is_some_and(|q| q.offset != 0);
            if ends_in_page || next_starts_in_page {
                break;
            }
        }
        let (run, tail) = rest.split_at(n);
        rest = tail;
        Some(run)
    })
}
