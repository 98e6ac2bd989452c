// SPDX-License-Identifier: GPL-2.0

//! Chunk registration with FRWR (the C `frwr_ops.c`): a connection's memory
//! regions, the ones each RPC holds (C: `req->rl_registered`), and their
//! invalidation before the RPC may complete or its memory be freed.
//!
//! The rules, which the types here keep:
//!
//! - An idle region sits on the free list, unmapped and invalid. Only
//!   [`MrPool::register`] takes one, for one RPC's record.
//! - A region goes back to the free list only when it is known invalid: the
//!   server invalidated it (Send With Invalidate naming its rkey), the
//!   signaled LOCAL_INV that follows it in the send queue completed
//!   successfully, or the QP was drained ([`MrPool::release_drained`]).
//!   A LOCAL_INV that could not be posted, or was flushed, strands the
//!   record until the drain: no completion of an earlier use can then
//!   reach a later one.
//! - Each region's mapping is a token ([`Mapped`]) the pool keeps while a
//!   record holds the region; the region checks the same rule for itself
//!   and refuses to undo a mapping the server may still reach. A refusal
//!   strands the record too, and resets the connection, so the drain
//!   settles it.
//! - What an RPC does when its memory is unreachable (deliver its reply,
//!   wake `buf_free`) is stored in its record, and handed out only by the
//!   events above. Dropping it instead (at teardown) leaves the RPC to be
//!   retransmitted, never failed.
//! - Once a reply for an RPC with a record is accepted, no other reply is
//!   delivered for it, unless the delivery refuses it (a Reply chunk
//!   whose message names another XID): the mark below is then removed,
//!   and the RPC, which holds no region any more, waits as one with no
//!   record. When a LOCAL_INV's completion hands the reply out
//!   for delivery, the record stays behind until `buf_free` or the drain,
//!   holding no region, as the mark that the RPC was answered
//!   ([`Phase::Answered`]): a duplicate reply may have found and pinned
//!   the RPC before the delivery took it off sunrpc's receive queue, and
//!   reach [`MrPool::answer`] only after the delivery; it still finds the
//!   mark. sunrpc calls `buf_free` only once the RPC is off that queue and
//!   no reply handler holds it pinned, so no reply can look for the mark
//!   any more when `buf_free` removes it. A reply that [`MrPool::answer`]
//!   hands out at once needs no mark: its caller, the Receive handler,
//!   completes (or refuses) the RPC's reply before it looks up the RPC of
//!   the next reply.
//! - How many records each bucket of XIDs has is counted where it can be
//!   read without the pool's lock ([`Recorded`]): an RPC whose bucket is
//!   empty holds nothing, and `buf_free` returns at once.
//! - One region is no RPC's: the Write chunks' pad (C: `re_write_pad_mr`),
//!   a few bytes of scratch memory the region owns, mapped for the
//!   server to write when the pool is made and unmapped only at the
//!   drain. A Write chunk whose data length is not a multiple of four
//!   offers it after its data segments, so that a server writing the XDR
//!   pad (RFC 8166, section 3.4.6.2 lets it) does not fail; nothing of it
//!   is ever delivered, so it needs no invalidation, and the server's
//!   invalidation of it proves nothing about an RPC's regions.
//!
//! This file knows nothing of the connection: the regions' completion
//! handler `H` and the deferred action `P` are the caller's.

#[cfg(rpcrdma_rs_test_hooks)]
use super::witness::Witness;
use crate::{
    errno,
    proto::{
        header::{Offer, Segment},
        xid_index,
    },
    rdma::{
        post_local_invs, Mapped, Mr, MrHandler, MrKey, Piece, RegChain, RemoteInvalidation,
        MAX_CHAIN, MAX_INV_CHAIN,
    },
    sunrpc::{self, params},
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    alloc::{KVVec, KVec},
    c_str,
    page::PAGE_SIZE,
    prelude::*,
    sync::Arc,
};

/// Most segments in one chunk (C: `RPCRDMA_MAX_HDR_SEGS`).
pub(crate) const MAX_SEGS: usize = sunrpc::MAX_SEGS as usize;
/// Most pages of RPC payload (C: `RPCRDMA_MAX_DATA_SEGS`, less one).
pub(crate) const MAX_DATA_PAGES: u32 = sunrpc::MAX_DATA_PAGES;
/// Most regions one RPC holds: a Read chunk and a Write or Reply chunk.
const MAX_RPC_MRS: usize = 2 * MAX_SEGS;
// An RPC's REG_MRs go in one chain before its Send, after the pad's in
// the connection's first.
const _: () = assert!(MAX_RPC_MRS < MAX_CHAIN);

/// A connection's memory regions, index `i` at `i`: shared by its pool
/// and its sender, which posts their REG_MRs after letting the pool's
/// lock go; fixed while the connection lives.
pub(crate) type MrList<H> = KVec<Pin<KBox<Mr<H>>>>;

/// Buckets of XIDs that [`Recorded`] counts records in.
const RECORDED_BUCKETS: usize = 256;

/// How many records the pools of a transport's connections have for the
/// XIDs of each bucket. A pool changes the counts under its lock, as it
/// adds and removes records (with locked adds: the pools of two
/// connections, each under its own lock, may both be at it while the old
/// one is released); anyone may read them without a lock.
///
/// # Invariants
///
/// Once a pool's lock is let go, the count of a bucket is at least the
/// number of that pool's live records whose XIDs fall in it: it is the
/// number of live records, in every pool that shares this `Recorded`. A
/// record goes (and its count with it) only once none of its regions can
/// be reached (`remove_record`).
pub(crate) struct Recorded {
    counts: KVec<AtomicU32>,
}

impl Recorded {
    pub(crate) fn new() -> Result<Arc<Self>> {
        let mut counts = KVec::with_capacity(RECORDED_BUCKETS, GFP_KERNEL)?;
        for _ in 0..RECORDED_BUCKETS {
            counts.push(AtomicU32::new(0), GFP_KERNEL)?;
        }
        Ok(Arc::new(Self { counts }, GFP_KERNEL)?)
    }

    fn bucket(&self, xid: u32) -> Option<&AtomicU32> {
        // XIDs count up: a multiplicative hash spreads neighbours over
        // the buckets, its top bits naming one.
        let bucket = xid.wrapping_mul(0x9e37_79b9) >> 24;
        self.counts.get(bucket as usize)
    }

    fn add(&self, xid: u32) {
        if let Some(count) = self.bucket(xid) {
            count.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn remove(&self, xid: u32) {
        if let Some(count) = self.bucket(xid) {
            // Release: whoever reads the count it leaves also sees the
            // regions back on the free list (`Recorded::none`).
            count.fetch_sub(1, Ordering::Release);
        }
    }

    /// True if RPC `xid` has no record in any pool, so holds no region
    /// (it would be counted in its bucket: the caller must have seen its
    /// `register` happen, as `buf_free` has seen its RPC sent). False
    /// says only that some RPC in its bucket has one.
    pub(crate) fn none(&self, xid: u32) -> bool {
        self.bucket(xid)
            .is_some_and(|count| count.load(Ordering::Acquire) == 0)
    }
}

/// One region an RPC holds; its segment, as advertised, is beside it in
/// [`Record::segs`].
#[derive(Clone, Copy)]
struct Held {
    index: u32,
    /// Unmapped and back on the free list already: the server invalidated
    /// it (Send With Invalidate), or its record is being released.
    gone: bool,
}

/// Where an RPC's registration is.
enum Phase {
    /// The REG_MRs are posted (or about to be): the server may reach the
    /// memory.
    Registered,
    /// LOCAL_INVs are posted; the one of region `signaled` is signaled and
    /// is the last of them in the send queue.
    Invalidating { signaled: u32 },
    /// The memory can become unreachable only by the drain at teardown (a
    /// post failed, a LOCAL_INV was flushed, a region refused to be
    /// unmapped, or the connection is closing).
    Stranded,
    /// The reply was handed out for delivery (by a LOCAL_INV's completion:
    /// [`MrPool::answer`] keeps no mark), and every region is back on the
    /// free list: the record only marks the RPC answered, so that another
    /// reply for it is a duplicate, until `buf_free`
    /// ([`MrPool::forget_answered`]), the refusal of that reply at
    /// delivery (the same), a resend (`register`) or the drain removes it.
    Answered,
}

/// The regions one RPC holds on a connection, in a slot of
/// [`MrPool::records`] kept from one RPC to the next: taking it for an
/// RPC sets every field but `held` and `segs`, of which only the first
/// `count` entries are read, so no RPC clears or copies a kilobyte.
struct Record<P> {
    /// The slot is an RPC's: the fields below are its.
    live: bool,
    xid: u32,
    held: [Held; MAX_RPC_MRS],
    /// The segment of each of `held`, as advertised: in a run of their own,
    /// for the header to be encoded from ([`MrPool::segments`]).
    segs: [Segment; MAX_RPC_MRS],
    count: usize,
    /// Regions not `gone`.
    left: usize,
    /// `held[..read_count]` and `segs[..read_count]` are the Read chunk's.
    read_count: usize,
    /// The rest are a Reply chunk's, not a Write chunk's.
    writes_reply: bool,
    /// The Write chunk offers the pool's pad segment after them.
    pad: bool,
    phase: Phase,
    /// A reply was accepted: another is a duplicate.
    answered: bool,
    /// What to do once the memory is unreachable.
    then: Option<P>,
}

impl<P> Record<P> {
    const fn free() -> Self {
        Self {
            live: false,
            xid: 0,
            held: [Held {
                index: 0,
                gone: false,
            }; MAX_RPC_MRS],
            segs: [Segment {
                handle: 0,
                length: 0,
                offset: 0,
            }; MAX_RPC_MRS],
            count: 0,
            left: 0,
            read_count: 0,
            writes_reply: false,
            pad: false,
            phase: Phase::Registered,
            answered: false,
            then: None,
        }
    }

    fn segs(&self) -> &[Segment] {
        self.segs.get(..self.count).unwrap_or(&[])
    }
}

/// The record in `slot` of `records` if it is an RPC's, shared.
fn live<P>(records: &KVVec<Record<P>>, slot: usize) -> Option<&Record<P>> {
    records.get(slot).filter(|r| r.live)
}

/// The record in `slot` of `records` if it is an RPC's, in place.
fn live_mut<P>(records: &mut KVVec<Record<P>>, slot: usize) -> Option<&mut Record<P>> {
    records.get_mut(slot).filter(|r| r.live)
}

/// Whether the connection's QP may be posted to (C: the endpoint's state).
/// The regions post on their own QP, which refuses once it is shut down;
/// the gate is what this file decides by.
pub(crate) enum Gate {
    /// Not connected yet: nothing posted, nothing reachable.
    Idle,
    /// Connected: work requests may be posted.
    Open,
    /// Teardown started: no send-queue work request may be posted (a
    /// Receive may, until the QP is shut down), and the QP may still
    /// execute what was; only the drain ends that.
    Closing,
    /// The QP is drained and destroyed: nothing can reach memory.
    Drained,
}

/// What [`MrPool::answer`] decided for a reply.
pub(crate) enum Answer<P> {
    /// Nothing of the RPC is reachable: act on `P` now.
    Now(P),
    /// Kept in the RPC's record until its memory is unreachable.
    Later,
    /// The RPC was answered already: drop this reply.
    Duplicate(P),
}

/// What a signaled LOCAL_INV completion means for its RPC.
pub(crate) enum Invalidated<P> {
    /// Every region of the RPC is invalid and unmapped: act on `P`.
    Done(Option<P>),
    /// Flushed, or a region refused to be unmapped: the memory waits for
    /// the drain (the connection must be reset); `P` is to be dropped, so
    /// the RPC is retransmitted on the next connection.
    Flushed(Option<P>),
    /// Not the completion of a region being invalidated.
    Stale,
}

/// A connection's memory regions, apart from the records that hold them.
///
/// # Invariants
///
/// Every region index is either in `free`, or in exactly one record's
/// `held` and not `gone` there, and `owner` names that record, or it is
/// the pad's (`pad`), which no record holds and `owner` does not name.
/// Regions in `free` are unmapped, and `maps` has no mapping for them; a
/// held region that is not `gone` has its mapping in `maps`; the pad's
/// mapping is in `pad`. `keys` has the key of each region, by index.
struct Regions<H: MrHandler> {
    /// `None` in the empty pool, and once taken for deregistration.
    mrs: Option<Arc<MrList<H>>>,
    /// The key of each region, by index: the pool's lock is what keeps the
    /// regions' state, as it keeps the records that use them.
    keys: KVec<MrKey>,
    /// The mapping of each region, by index, while a record holds it.
    maps: KVec<Option<Mapped>>,
    /// `free[..nfree]`: the idle regions, as a stack.
    free: KVec<u32>,
    nfree: usize,
    /// The slot of the record holding each region, by index.
    owner: KVec<Option<u32>>,
    /// Pages one region maps.
    depth: usize,
    /// The Write chunks' pad: its region and mapping, from the pool's
    /// making until the drain.
    pad: Option<(u32, Mapped)>,
    /// What the REG_MRs and LOCAL_INVs posted say of the regions, for the
    /// test hooks' check of each delivery (`witness.rs`).
    #[cfg(rpcrdma_rs_test_hooks)]
    witness: Witness,
}

/// A connection's memory regions and the records of the RPCs holding them.
///
/// Records are worked on where they lie in `records`, beside `regions`
/// (a field of its own so that both can be borrowed at once): a record is
/// about a kilobyte, and moving it out and back costs a copy each way.
///
/// # Invariants
///
/// Those of [`Regions`], whose records are the `live` ones in `records`;
/// `index` maps exactly the XIDs of those, each to its slot (unless
/// `register` logged a failed insert). A record that is not `live` holds
/// nothing: its `then` is `None`.
pub(crate) struct MrPool<H: MrHandler, P> {
    regions: Regions<H>,
    /// One per RPC that may hold regions: up to the largest slot table,
    /// too many for one kmalloc.
    records: KVVec<Record<P>>,
    /// The slot of each record in `records`, by XID: a reply and
    /// `buf_free` find their RPC's record without a scan.
    index: XidIndex,
    /// Where `register` starts looking for a free slot.
    next_slot: usize,
    /// The live records, counted by XID bucket; `None` for the empty
    /// pool, which never has one.
    recorded: Option<Arc<Recorded>>,
}

/// The regions of `mrs`, none once they are taken (a free function, so
/// that other fields of `Regions` can be borrowed beside them).
fn mr_list<H: MrHandler>(mrs: &Option<Arc<MrList<H>>>) -> &[Pin<KBox<Mr<H>>>] {
    mrs.as_deref().map_or(&[], |mrs| &mrs[..])
}

impl<H: MrHandler> Regions<H> {
    fn mrs(&self) -> &[Pin<KBox<Mr<H>>>] {
        mr_list(&self.mrs)
    }

    /// Region `i` with its key.
    fn mr(&mut self, i: usize) -> Option<(&Mr<H>, &mut MrKey)> {
        let mr = mr_list(&self.mrs).get(i)?;
        Some((mr, self.keys.get_mut(i)?))
    }

    /// Maps `pieces` into free regions for `rec`, which is in `slot`, cut
    /// at `depth` pages and at gaps.
    fn map_runs(
        &mut self,
        rec: &mut Record<impl Sized>,
        slot: usize,
        pieces: &[Piece],
        writing: bool,
    ) -> Result {
        let start = rec.count;
        for run in runs(pieces, self.depth) {
            if rec.count - start >= MAX_SEGS {
                return Err(errno::emsgsize());
            }
            let (Some(held), Some(seg)) =
                (rec.held.get_mut(rec.count), rec.segs.get_mut(rec.count))
            else {
                return Err(errno::emsgsize());
            };
            let index = self.pop_free().ok_or(EAGAIN)?;
            let i = usize::try_from(index)?;
            let mapped = match self.mr(i) {
                // The test hooks can fail it as a DMA mapping fails.
                Some(_) if params::fail_map() => Err(EIO),
                Some((mr, key)) => mr.map(key, run, writing, rec.xid),
                None => Err(EINVAL),
            };
            match mapped {
                Ok(m) => {
                    *held = Held { index, gone: false };
                    *seg = m.segment();
                    rec.count += 1;
                    rec.left += 1;
                    if let Some(o) = self.owner.get_mut(i) {
                        *o = u32::try_from(slot).ok();
                    }
                    if let Some(map) = self.maps.get_mut(i) {
                        *map = Some(m);
                    }
                }
                Err(e) => {
                    self.push_free(index);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Prepares the REG_MRs of `rec` into `out`, in order, for the
    /// sender to post chained before the Send. On error the record is
    /// stranded (those prepared may yet be posted) until the drain.
    fn prepare_regs(&mut self, rec: &mut Record<impl Sized>, out: &mut RegChain) -> Result {
        let count = rec.count;
        for (h, _seg) in rec.held.iter().zip(rec.segs.iter()).take(count) {
            let i = h.index as usize;
            let mrs = mr_list(&self.mrs);
            let prepared = match (
                mrs.get(i),
                self.keys.get_mut(i),
                self.maps.get(i).and_then(Option::as_ref),
            ) {
                (Some(mr), Some(key), Some(m)) => mr.prepare_reg(key, m),
                _ => Err(EINVAL),
            };
            let pushed = prepared.and_then(|reg| out.push(reg));
            if let Err(e) = pushed {
                rec.phase = Phase::Stranded;
                return Err(e);
            }
            #[cfg(rpcrdma_rs_test_hooks)]
            self.witness.registered(h.index, rec.xid, _seg.handle);
        }
        Ok(())
    }

    /// Unmaps the regions of `rec` that are not `gone` and puts them back
    /// on the free list; returns false if one refused (the server may
    /// still reach it, says the region), which stays in `rec`. The caller
    /// knows the server can no longer reach them.
    fn unmap_all(&mut self, rec: &mut Record<impl Sized>) -> bool {
        let mut all = true;
        let count = rec.count;
        for h in rec.held.iter_mut().take(count).filter(|h| !h.gone) {
            if self.unmap_one(h.index, None) {
                h.gone = true;
                rec.left = rec.left.saturating_sub(1);
            } else {
                all = false;
            }
        }
        all
    }

    /// Unmaps region `index` and puts it back on the free list, first
    /// telling it of the server's invalidation `remote` if there is one;
    /// false, and nothing changes, if the region refuses.
    fn unmap_one(&mut self, index: u32, remote: Option<&RemoteInvalidation>) -> bool {
        let i = index as usize;
        let Some(m) = self.maps.get_mut(i).and_then(Option::take) else {
            // Nothing mapped: nothing to undo.
            return true;
        };
        let undone = match self.mr(i) {
            Some((mr, key)) => {
                if remote.map_or(true, |proof| mr.invalidated_by_peer(key, &m, proof)) {
                    mr.unmap(key, m)
                } else {
                    Err(m)
                }
            }
            None => Err(m),
        };
        if let Err(m) = undone {
            if let Some(map) = self.maps.get_mut(i) {
                *map = Some(m);
            }
            return false;
        }
        if let Some(o) = self.owner.get_mut(i) {
            *o = None;
        }
        self.push_free(index);
        true
    }

    fn pop_free(&mut self) -> Option<u32> {
        let index = *self.free.get(self.nfree.checked_sub(1)?)?;
        self.nfree -= 1;
        Some(index)
    }

    /// Puts back a region taken by `pop_free`: there is room for every
    /// region.
    fn push_free(&mut self, index: u32) {
        if let Some(slot) = self.free.get_mut(self.nfree) {
            *slot = index;
            self.nfree += 1;
        }
    }

    /// Posts LOCAL_INV for every region of `rec`, the last one signaled.
    /// Returns true if all were posted.
    fn post_invalidates(&mut self, rec: &mut Record<impl Sized>) -> bool {
        let held = rec.held.get(..rec.count).unwrap_or(&[]);
        let mut targets = [0u32; MAX_INV_CHAIN];
        let mut n = 0;
        for h in held.iter().filter(|h| !h.gone) {
            let Some(t) = targets.get_mut(n) else {
                rec.phase = Phase::Stranded;
                return false;
            };
            *t = h.index;
            n += 1;
        }
        let targets = targets.get(..n).unwrap_or(&[]);
        let Some(&last) = targets.last() else {
            return false;
        };
        // One chain, the last signaled: its completion says all are done.
        let mrs = mr_list(&self.mrs);
        if post_local_invs(mrs, &mut self.keys, &self.maps, targets).is_err() {
            rec.phase = Phase::Stranded;
            return false;
        }
        #[cfg(rpcrdma_rs_test_hooks)]
        for &index in targets {
            // The rkey the LOCAL_INV named: the mapping's, as advertised.
            if let Some(Some(m)) = self.maps.get(index as usize) {
                self.witness.local_inv_posted(index, m.segment().handle);
            }
        }
        rec.phase = Phase::Invalidating { signaled: last };
        true
    }

    /// The name of the regions' device, for log lines.
    fn device_name(&self) -> &CStr {
        self.mrs()
            .first()
            .map_or(c_str!("?"), |mr| mr.device_name())
    }
}

impl<H: MrHandler, P> MrPool<H, P> {
    pub(crate) const fn empty() -> Self {
        Self {
            regions: Regions {
                mrs: None,
                keys: KVec::new(),
                maps: KVec::new(),
                free: KVec::new(),
                nfree: 0,
                owner: KVec::new(),
                depth: 1,
                pad: None,
                #[cfg(rpcrdma_rs_test_hooks)]
                witness: Witness::empty(),
            },
            records: KVVec::new(),
            index: XidIndex::empty(),
            next_slot: 0,
            recorded: None,
        }
    }

    /// A pool of `mrs` (whose indices must be `0..mrs.len()`), mapping
    /// `depth` pages each, for at most `rpcs` RPCs at a time, counting its
    /// records in `recorded` (which counts none yet). Allocates everything
    /// it will ever need, and maps one of `mrs` as the Write chunks' pad:
    /// the RPCs have the others. Sleeps.
    pub(crate) fn new(
        mrs: Arc<MrList<H>>,
        keys: KVec<MrKey>,
        depth: u32,
        rpcs: usize,
        recorded: Arc<Recorded>,
    ) -> Result<Self> {
        let n = mrs.len();
        if keys.len() != n {
            return Err(EINVAL);
        }
        let mut free = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut owner = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut maps = KVec::with_capacity(n, GFP_KERNEL)?;
        for (i, mr) in mrs.iter().enumerate() {
            if usize::try_from(mr.index()) != Ok(i) {
                return Err(EINVAL);
            }
        }
        for i in (0..u32::try_from(n)?).rev() {
            free.push(i, GFP_KERNEL)?;
            owner.push(None, GFP_KERNEL)?;
            maps.push(None, GFP_KERNEL)?;
        }
        // `owner` names every slot.
        u32::try_from(rpcs).map_err(|_| EINVAL)?;
        let mut records = KVVec::with_capacity(rpcs, GFP_KERNEL)?;
        for _ in 0..rpcs {
            records.push(Record::free(), GFP_KERNEL)?;
        }
        let index = XidIndex::new(rpcs)?;
        #[cfg(rpcrdma_rs_test_hooks)]
        let witness = Witness::new(n)?;
        // INVARIANT: every region is free and unmapped, no record exists;
        // then the pad's is taken off the free list and mapped, in `pad`.
        let mut regions = Regions {
            mrs: Some(mrs),
            keys,
            maps,
            nfree: free.len(),
            free,
            owner,
            depth: usize::try_from(depth)?,
            pad: None,
            #[cfg(rpcrdma_rs_test_hooks)]
            witness,
        };
        // The region maps nothing if this fails.
        let pad_index = regions.pop_free().ok_or(EINVAL)?;
        let pad = match regions.mr(usize::try_from(pad_index)?) {
            Some((mr, key)) => mr.map_pad(key)?,
            None => return Err(EINVAL),
        };
        regions.pad = Some((pad_index, pad));
        Ok(Self {
            regions,
            records,
            index,
            next_slot: 0,
            recorded: Some(recorded),
        })
    }

    fn find(&self, xid: u32) -> Option<usize> {
        self.index
            .find(xid)
            .filter(|&slot| live(&self.records, slot).is_some_and(|r| r.xid == xid))
    }

    /// The record in `slot`, in place. Where `regions` is changed while
    /// the record is borrowed, the callers spell out the field instead, so
    /// that the two borrows stay apart.
    fn record(&mut self, slot: usize) -> Option<&mut Record<P>> {
        live_mut(&mut self.records, slot)
    }

    /// True while RPC `xid` holds regions: it has a record that is more
    /// than the mark that it was answered.
    pub(crate) fn holds(&self, xid: u32) -> bool {
        self.find(xid)
            .and_then(|slot| self.records.get(slot))
            .is_some_and(|r| !matches!(r.phase, Phase::Answered))
    }

    /// Removes the mark that RPC `xid` was answered, if that is all its
    /// record is. For `buf_free`: sunrpc calls it once the RPC is off its
    /// receive queue and no reply handler holds it pinned
    /// (`xprt_request_dequeue_xprt` waits for that), so no reply for it can
    /// reach [`MrPool::answer`] any more. And for a reply refused at
    /// delivery, whose RPC waits again: a later reply for it is then one
    /// for an RPC with no record, which holds nothing on this connection.
    /// Only a mark is removed, never the record of a resend.
    pub(crate) fn forget_answered(&mut self, xid: u32) {
        if let Some(slot) = self.find(xid) {
            self.forget_if_answered(slot);
        }
    }

    /// [`MrPool::forget_answered`] for the record in `slot`, found
    /// already; true if it was only that mark, and is gone.
    fn forget_if_answered(&mut self, slot: usize) -> bool {
        let answered =
            live(&self.records, slot).is_some_and(|r| matches!(r.phase, Phase::Answered));
        if answered {
            // Holds no region: nothing to unmap.
            self.remove_record(slot);
        }
        answered
    }

    /// Removes the record in `slot`, dropping its `then` (if any is
    /// left) where it lies, and its XID from the index. The caller has put
    /// its regions back (or they are no longer the record's to hold).
    fn remove_record(&mut self, slot: usize) {
        if let Some(rec) = live_mut(&mut self.records, slot) {
            self.index.remove(rec.xid);
            rec.live = false;
            rec.then = None;
            if let Some(recorded) = &self.recorded {
                recorded.remove(rec.xid);
            }
        }
    }

    /// Every region of the record in `slot` is back on the free list:
    /// hands out its `then`. A record that was answered stays as the mark
    /// that it was ([`Phase::Answered`]); one that was not (`buf_free`'s)
    /// is removed.
    fn retire(&mut self, slot: usize) -> Option<P> {
        let rec = self.record(slot)?;
        let then = rec.then.take();
        if rec.answered {
            rec.phase = Phase::Answered;
        } else {
            self.remove_record(slot);
        }
        then
    }

    /// Maps `reads` (for the server to read) and `writes` (for it to
    /// write: a Reply chunk if `writes_reply`, else a Write chunk, which
    /// offers the pad segment after them if `pad`) into regions for RPC
    /// `xid`, cut at `depth` pages and at gaps; returns the record's slot.
    /// The REG_MRs are not posted yet. Nothing is held on error.
    pub(crate) fn register(
        &mut self,
        xid: u32,
        reads: &[Piece],
        writes: &[Piece],
        writes_reply: bool,
        pad: bool,
    ) -> Result<usize> {
        if reads.is_empty() && writes.is_empty() {
            return Err(EINVAL);
        }
        // An RPC sent again on this connection after it was answered
        // (sunrpc closes the connection first today): the mark must not
        // fail it. The resend passed `call_encode`, which took it off the
        // receive queue and waited for its pins, as `buf_free`.
        if let Some(slot) = self.find(xid) {
            if !self.forget_if_answered(slot) {
                return Err(EBUSY);
            }
        }
        // From where the last one was taken: slots come free in about the
        // order they were taken, so this rarely looks far.
        let n = self.records.len();
        let slot = (0..n)
            .map(|k| (self.next_slot + k) % n)
            .find(|&slot| self.records.get(slot).is_some_and(|r| !r.live))
            .ok_or(EAGAIN)?;
        self.next_slot = (slot + 1) % n;
        let rec = self.records.get_mut(slot).ok_or(EINVAL)?;
        // Field by field, in place: `held` and `segs` are read only up to
        // `count`.
        rec.live = true;
        rec.xid = xid;
        rec.count = 0;
        rec.left = 0;
        rec.read_count = 0;
        rec.writes_reply = writes_reply;
        rec.pad = pad && !writes_reply && !writes.is_empty() && self.regions.pad.is_some();
        rec.phase = Phase::Registered;
        rec.answered = false;
        rec.then = None;
        let mut result = self.regions.map_runs(rec, slot, reads, false);
        rec.read_count = rec.count;
        if result.is_ok() {
            result = self.regions.map_runs(rec, slot, writes, true);
        }
        if let Err(e) = result {
            // Never posted, so unreachable: the regions agree (a refusal
            // would leave them out of the free list, still mapped).
            self.regions.unmap_all(rec);
            rec.live = false;
            return Err(e);
        }
        // The index has room for every slot's XID (`XidIndex::new`) and
        // XIDs are unique (above): this cannot fail. Were it to, `find`
        // would miss the record and `buf_free` would not wait for its
        // regions: the RPC fails instead, before anything is posted, and
        // says so loudly.
        if !self.index.insert(xid, slot) {
            pr_err!(
                "{}: record index full: RPC {:#010x} not sent\n",
                self.regions.device_name(),
                xid
            );
            self.regions.unmap_all(rec);
            rec.live = false;
            return Err(ENOSPC);
        }
        // INVARIANT: counted while live; `remove_record` uncounts it.
        if let Some(recorded) = &self.recorded {
            recorded.add(xid);
        }
        Ok(slot)
    }

    /// The segments of the record in `slot`, as advertised: the Read
    /// chunk's, then the Write or Reply chunk's.
    pub(crate) fn segments(&self, slot: usize) -> (&[Segment], &[Segment]) {
        let (segs, reads) =
            live(&self.records, slot).map_or((&[][..], 0), |r| (r.segs(), r.read_count));
        segs.split_at(reads.min(segs.len()))
    }

    /// The pad segment the Write chunk of the record in `slot` offers after
    /// its data segments, if it offers one.
    pub(crate) fn write_pad(&self, slot: usize) -> Option<Segment> {
        live(&self.records, slot)
            .filter(|r| r.pad)
            .and_then(|_| self.pad_segment())
    }

    /// The pad's segment, as advertised.
    fn pad_segment(&self) -> Option<Segment> {
        self.regions.pad.as_ref().map(|(_, m)| m.segment())
    }

    /// Prepares the pad's REG_MR into `out`: once per connection, before
    /// (or in the same chain as) the first Send that may offer it. The pad
    /// is not the witness's (no RPC's reply waits for it).
    pub(crate) fn prepare_pad(&mut self, out: &mut RegChain) -> Result {
        let regions = &mut self.regions;
        let Some((index, m)) = &regions.pad else {
            return Ok(());
        };
        let i = *index as usize;
        let mrs = mr_list(&regions.mrs);
        match (mrs.get(i), regions.keys.get_mut(i)) {
            (Some(mr), Some(key)) => out.push(mr.prepare_reg(key, m)?),
            _ => Err(EINVAL),
        }
    }

    /// What RPC `xid` offered on this connection for its Reply to be
    /// written into: nothing if it has no record (it registered nothing
    /// here), or if its record has only a Read chunk.
    pub(crate) fn offered(&self, xid: u32) -> Offer<'_> {
        let Some(rec) = self.find(xid).and_then(|slot| live(&self.records, slot)) else {
            return Offer::Inline;
        };
        match rec.segs().get(rec.read_count..).unwrap_or(&[]) {
            [] => Offer::Inline,
            segs if rec.writes_reply => Offer::ReplyChunk(segs),
            segs => Offer::WriteChunk {
                data: segs,
                pad: if rec.pad { self.pad_segment() } else { None },
            },
        }
    }

    /// Prepares the REG_MRs of the record in `slot` into `out`, for the
    /// sender to post chained before the Send after letting the pool's
    /// lock go. On error the record is stranded until the drain.
    pub(crate) fn prepare_regs(&mut self, slot: usize, out: &mut RegChain) -> Result {
        let Some(rec) = live_mut(&mut self.records, slot) else {
            return Err(EINVAL);
        };
        self.regions.prepare_regs(rec, out)
    }

    /// The chained post of RPC `xid`'s REG_MRs and Send, whose record is
    /// in `slot`, failed: some REG_MRs may be posted. The record (if a
    /// reply for the RPC came meanwhile, what is left of it) waits for the
    /// drain; the caller resets the connection.
    pub(crate) fn strand(&mut self, slot: usize, xid: u32) {
        if let Some(rec) = live_mut(&mut self.records, slot).filter(|r| r.xid == xid) {
            if !matches!(rec.phase, Phase::Answered) {
                rec.phase = Phase::Stranded;
            }
        }
    }

    /// Releases the record in `slot` whose REG_MRs were never posted.
    /// False if a region refused (it cannot: nothing was posted), which
    /// strands the record until the drain; the caller resets the
    /// connection.
    pub(crate) fn forget_unposted(&mut self, slot: usize) -> bool {
        let Some(rec) = live_mut(&mut self.records, slot) else {
            return true;
        };
        if !self.regions.unmap_all(rec) {
            rec.phase = Phase::Stranded;
            return false;
        }
        self.remove_record(slot);
        true
    }

    /// A reply for RPC `xid` was accepted; `then` delivers it. Frees the
    /// region the server invalidated (`remote`) and starts invalidating
    /// the rest. Returns what to do with `then`, how many LOCAL_INVs were
    /// posted, whether the server invalidated a region, and false if a
    /// post failed and the connection must be reset.
    ///
    /// An RPC without a record registered nothing on this connection, and
    /// nothing here marks it answered; nor does anything stay of a record
    /// whose regions are all unreachable at once. So the caller must act on
    /// its `Answer::Now` (complete the RPC, which takes it off sunrpc's
    /// receive queue, or refuse the reply) before it looks up the RPC of
    /// another reply.
    pub(crate) fn answer(
        &mut self,
        xid: u32,
        remote: Option<RemoteInvalidation>,
        gate: &Gate,
        then: P,
    ) -> (Answer<P>, u32, bool, bool) {
        let Some(slot) = self.find(xid) else {
            return (Answer::Now(then), 0, false, true);
        };
        let Some(rec) = live_mut(&mut self.records, slot) else {
            return (Answer::Now(then), 0, false, true);
        };
        if rec.answered {
            return (Answer::Duplicate(then), 0, false, true);
        }
        rec.answered = true;
        if !matches!(rec.phase, Phase::Registered) {
            // Already being invalidated for `buf_free`, or stranded.
            rec.then = Some(then);
            return (Answer::Later, 0, false, true);
        }
        // The server's Send With Invalidate made that region invalid, if
        // the region agrees the proof is for its registration.
        let mut invalidated = false;
        if let Some(proof) = remote {
            let count = rec.count;
            let named = rec
                .held
                .iter_mut()
                .zip(rec.segs.iter())
                .take(count)
                .find(|(h, seg)| !h.gone && seg.handle == proof.rkey())
                .map(|(h, _)| h);
            if let Some(h) = named {
                if self.regions.unmap_one(h.index, Some(&proof)) {
                    h.gone = true;
                    rec.left -= 1;
                    invalidated = true;
                }
            }
        }
        if rec.left == 0 {
            // Nothing of it is reachable (most often the server invalidated
            // its one region): the reply goes out at once, and no mark
            // stays (see above).
            self.remove_record(slot);
            return (Answer::Now(then), 0, invalidated, true);
        }
        rec.then = Some(then);
        let (answer, posted, ok) = self.settle(slot, gate);
        if matches!(answer, Answer::Now(_)) {
            // No mark: the caller completes the RPC before it looks up
            // another reply's (see above), and `buf_free` then finds
            // nothing to wait for without the lock.
            self.forget_if_answered(slot);
        }
        (answer, posted, invalidated, ok)
    }

    /// `buf_free`: the memory of RPC `xid` is about to be freed. Starts
    /// invalidating what it holds; returns true while it holds anything
    /// (the caller waits for [`MrPool::holds`] to turn false), how
    /// many LOCAL_INVs were posted, and false if a post failed and the
    /// connection must be reset. Removes the mark of an answered RPC.
    pub(crate) fn release(&mut self, xid: u32, gate: &Gate) -> (bool, u32, bool) {
        let Some(slot) = self.find(xid) else {
            return (false, 0, true);
        };
        let registered =
            live(&self.records, slot).is_some_and(|r| matches!(r.phase, Phase::Registered));
        let (mut posted, mut ok) = (0, true);
        if registered {
            // A record not answered has no `then` to hand out.
            (_, posted, ok) = self.settle(slot, gate);
        }
        // `settle` may have removed the record (it was not answered) or
        // left only the mark that it was; nothing else took the slot
        // meanwhile (`&mut self`: the caller holds the pool's lock).
        let holds = live(&self.records, slot).is_some_and(|r| r.xid == xid)
            && !self.forget_if_answered(slot);
        (holds, posted, ok)
    }

    /// Invalidates the regions left in the record in `slot` as `gate`
    /// allows. The record's `then` comes out in `Answer::Now` only; false
    /// if the connection must be reset (a post failed, or a region refused
    /// to be unmapped).
    fn settle(&mut self, slot: usize, gate: &Gate) -> (Answer<P>, u32, bool) {
        let Some(rec) = live_mut(&mut self.records, slot) else {
            return (Answer::Later, 0, true);
        };
        let count = rec.left;
        if count == 0 || matches!(gate, Gate::Idle | Gate::Drained) {
            if !self.regions.unmap_all(rec) {
                // A region says the server may still reach it: the record
                // and its `then` wait for the drain.
                rec.phase = Phase::Stranded;
                return (Answer::Later, 0, false);
            }
            return match self.retire(slot) {
                Some(then) => (Answer::Now(then), 0, true),
                None => (Answer::Later, 0, true),
            };
        }
        match gate {
            Gate::Open => {
                let ok = self.regions.post_invalidates(rec);
                (Answer::Later, u32::try_from(count).unwrap_or(0), ok)
            }
            _ => {
                rec.phase = Phase::Stranded;
                (Answer::Later, 0, true)
            }
        }
    }

    /// The signaled LOCAL_INV of region `index` completed (`success`) or
    /// was flushed. Send queue order makes every earlier work request of
    /// the RPC complete first, so on success all its regions are invalid.
    pub(crate) fn invalidated(&mut self, index: u32, success: bool) -> Invalidated<P> {
        let Some(slot) = self
            .regions
            .owner
            .get(index as usize)
            .copied()
            .flatten()
            .and_then(|slot| usize::try_from(slot).ok())
        else {
            return Invalidated::Stale;
        };
        let Some(rec) = live_mut(&mut self.records, slot) else {
            return Invalidated::Stale;
        };
        match rec.phase {
            Phase::Invalidating { signaled } if signaled == index => {}
            _ => return Invalidated::Stale,
        }
        if !success || !self.regions.unmap_all(rec) {
            // Flushed, or a region says the server may still reach it.
            rec.phase = Phase::Stranded;
            return Invalidated::Flushed(rec.then.take());
        }
        Invalidated::Done(self.retire(slot))
    }

    /// The QP is drained and destroyed: nothing can reach any region, and
    /// no completion handler of the connection runs any more. Unmaps and
    /// frees them all; returns the actions still waiting, to be dropped
    /// (their RPCs are retransmitted) outside the lock. The marks of
    /// answered RPCs go too: no reply can come on this connection.
    pub(crate) fn release_drained(&mut self, out: &mut KVVec<P>) {
        for slot in 0..self.records.len() {
            let Some(rec) = live_mut(&mut self.records, slot) else {
                continue;
            };
            if let Some(then) = rec.then.take() {
                // Room for every record was reserved by the caller; if
                // not, `push` drops it here, which is still correct.
                let _ = out.push(then, GFP_ATOMIC);
            }
            // Only if the QP were not destroyed could a region refuse:
            // then the record stays, and `buf_free` keeps waiting for
            // this RPC rather than let its memory go while mapped.
            if self.regions.unmap_all(rec) {
                self.remove_record(slot);
            }
        }
        // The pad, which only the drain makes unreachable. Were the QP not
        // destroyed, it would stay mapped until its region goes (after
        // `take_regions`), which deregisters it, then undoes the mapping
        // and frees the buffer.
        if let Some((index, m)) = self.regions.pad.take() {
            let undone = match self.regions.mr(index as usize) {
                Some((mr, key)) => mr.unmap(key, m),
                None => Err(m),
            };
            match undone {
                Ok(()) => self.regions.push_free(index),
                Err(m) => self.regions.pad = Some((index, m)),
            }
        }
    }

    /// Every region, for deregistration once the QP is drained.
    pub(crate) fn take_regions(&mut self) -> Option<Arc<MrList<H>>> {
        let regions = &mut self.regions;
        regions.free = KVec::new();
        regions.nfree = 0;
        regions.owner = KVec::new();
        regions.maps = KVec::new();
        regions.keys = KVec::new();
        regions.pad = None;
        regions.mrs.take()
    }

    /// How many RPCs may hold records at once.
    pub(crate) fn records(&self) -> usize {
        self.records.len()
    }

    /// Regions currently on the free list.
    pub(crate) fn free_count(&self) -> usize {
        self.regions.nfree
    }

    /// Pages one region maps.
    pub(crate) fn depth(&self) -> usize {
        self.regions.depth
    }

    /// The witness of what was posted for the regions, to tell it of
    /// their completions and check deliveries against it.
    #[cfg(rpcrdma_rs_test_hooks)]
    pub(crate) fn witness(&mut self) -> &mut Witness {
        &mut self.regions.witness
    }
}

/// The table of [`xid_index`], which holds its invariants: a power of
/// two at least twice as long as the slots it maps.
struct XidIndex {
    table: KVVec<u64>,
}

impl XidIndex {
    const fn empty() -> Self {
        Self {
            table: KVVec::new(),
        }
    }

    /// Room for `slots` XIDs.
    fn new(slots: usize) -> Result<Self> {
        let len = xid_index::table_len(slots).ok_or(EINVAL)?;
        let mut table = KVVec::with_capacity(len, GFP_KERNEL)?;
        for _ in 0..len {
            table.push(0, GFP_KERNEL)?;
        }
        Ok(Self { table })
    }

    fn find(&self, xid: u32) -> Option<usize> {
        xid_index::find(&self.table, xid)
    }

    fn insert(&mut self, xid: u32, slot: usize) -> bool {
        xid_index::insert(&mut self.table, xid, slot)
    }

    fn remove(&mut self, xid: u32) {
        xid_index::remove(&mut self.table, xid)
    }
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
            let ends_in_page = (p.offset() as usize + p.length() as usize) & (PAGE_SIZE - 1) != 0;
            let next_starts_in_page = rest.get(n).is_some_and(|q| q.offset() != 0);
            if ends_in_page || next_starts_in_page {
                break;
            }
        }
        let (run, tail) = rest.split_at(n);
        rest = tail;
        Some(run)
    })
}
