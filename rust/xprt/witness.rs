// SPDX-License-Identifier: GPL-2.0

//! The invalidation witness, a test hook: built only with
//! `--cfg rpcrdma_rs_test_hooks`, absent from the module users build.
//!
//! It checks, apart from the rules that decide delivery (`frwr.rs`), the
//! transport's first promise: a reply is handed to sunrpc only once every
//! memory region its RPC registered is invalid, that is, since the region
//! was registered
//!
//! - a LOCAL_INV of its rkey was posted and is known to have completed
//!   successfully: a successful completion of that LOCAL_INV or of one
//!   posted after it (the send queue completes in order), or
//! - a successful Receive carried `IB_WC_WITH_INVALIDATE` naming exactly
//!   its rkey, on a device that refuses a key its REG_MR has not set
//!   (`Device::invalidation_checks_key`).
//!
//! What it knows comes from the work requests as posted and from the
//! completions as reported, never from the pool's records: each region's
//! registration (the RPC's XID, the rkey advertised), as its REG_MR is
//! prepared for posting; each LOCAL_INV (the rkey it names and its place
//! among the connection's LOCAL_INVs); how far the LOCAL_INVs have
//! completed; the rkeys trusted Receives said were invalidated. Each
//! connection has its own (a field of its regions, under their lock: every
//! post it learns of is made under it); the counts are the module's.
//!
//! A miss is a region of the RPC not proven invalid when its reply is
//! delivered, or one registered again for another RPC (so free before it
//! was proven invalid, whether or not its RPC's reply ever comes: an RPC
//! ended by a signal frees its memory without one). Each miss is counted
//! and logged with the XID.
//!
//! `/sys/kernel/debug/rpcrdma_rs/witness` reads
//!
//! ```text
//! reply_before_invalidation N
//! deliveries_checked N
//! ```
//!
//! the misses, and the deliveries checked of replies whose RPC registered
//! at least one region (more than zero shows that the witness saw some).

use crate::{
    debugfs::{self, seq_print, SeqFile},
    sunrpc::{self, Budget, Xprt},
};
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::{alloc::KVec, prelude::*};

/// Regions of replies delivered before they were proven invalid.
static MISSES: AtomicU64 = AtomicU64::new(0);
/// Replies delivered whose RPC registered at least one region.
static CHECKED: AtomicU64 = AtomicU64::new(0);

/// What the witness knows of one region.
#[derive(Clone, Copy)]
struct Region {
    /// Registered for RPC `xid` with `rkey`, and not yet checked at the
    /// delivery of its reply.
    live: bool,
    xid: u32,
    rkey: u32,
    /// The last LOCAL_INV posted for the region since its registration:
    /// the rkey it names and its place.
    inv: Option<(u32, u64)>,
    /// An rkey a trusted Receive said was invalidated, since the
    /// registration, and equal to the region's.
    remote: Option<u32>,
}

impl Region {
    const IDLE: Self = Self {
        live: false,
        xid: 0,
        rkey: 0,
        inv: None,
        remote: None,
    };

    /// Invalid since its registration, by what was seen.
    fn proven(&self, done: u64) -> bool {
        let local = self
            .inv
            .is_some_and(|(rkey, place)| rkey == self.rkey && place <= done);
        local || self.remote == Some(self.rkey)
    }
}

/// The witness of one connection.
pub(crate) struct Witness {
    /// By region index.
    regions: KVec<Region>,
    /// LOCAL_INVs posted on the connection: the place of the last.
    posted: u64,
    /// Every LOCAL_INV up to this place completed successfully.
    done: u64,
    /// The device refuses a Send With Invalidate of a key that no REG_MR
    /// set: only then does one prove anything.
    trusted: bool,
}

impl Witness {
    pub(crate) const fn empty() -> Self {
        Self {
            regions: KVec::new(),
            posted: 0,
            done: 0,
            trusted: false,
        }
    }

    /// For `count` regions, indices `0..count`.
    pub(crate) fn new(count: usize) -> Result<Self> {
        let mut regions = KVec::with_capacity(count, GFP_KERNEL)?;
        for _ in 0..count {
            regions.push(Region::IDLE, GFP_KERNEL)?;
        }
        Ok(Self {
            regions,
            ..Self::empty()
        })
    }

    /// Whether the connection's device may be trusted with the server's
    /// invalidation.
    pub(crate) fn trust_remote(&mut self, trusted: bool) {
        self.trusted = trusted;
    }

    /// Region `index` is about to be registered for RPC `xid` with
    /// `rkey`: its REG_MR is prepared for posting.
    pub(crate) fn registered(&mut self, index: u32, xid: u32, rkey: u32) {
        let done = self.done;
        let Some(r) = self.regions.get_mut(index as usize) else {
            return;
        };
        if r.live && !r.proven(done) {
            // Free again before it was proven invalid: its RPC's memory
            // may still be reachable, with or without a reply to come.
            miss(r.xid, r.rkey, None);
        }
        *r = Region {
            live: true,
            xid,
            rkey,
            inv: None,
            remote: None,
        };
    }

    /// A LOCAL_INV of `rkey` was posted for region `index`.
    pub(crate) fn local_inv_posted(&mut self, index: u32, rkey: u32) {
        self.posted += 1;
        let place = self.posted;
        if let Some(r) = self.regions.get_mut(index as usize) {
            r.inv = Some((rkey, place));
        }
    }

    /// A LOCAL_INV of region `index` completed (`success`), or failed or
    /// was flushed. Success proves the last one posted for it, and every
    /// one posted before that: the send queue completes in order.
    pub(crate) fn local_inv_done(&mut self, index: u32, success: bool) {
        if !success {
            return;
        }
        if let Some((_, place)) = self.regions.get(index as usize).and_then(|r| r.inv) {
            self.done = self.done.max(place);
        }
    }

    /// A successful Receive carried a Send With Invalidate of `rkey`.
    pub(crate) fn remote_invalidated(&mut self, rkey: u32) {
        if !self.trusted {
            return;
        }
        for r in self.regions.iter_mut().filter(|r| r.live && r.rkey == rkey) {
            r.remote = Some(rkey);
        }
    }

    /// The reply of RPC `xid` is about to be delivered: checks its
    /// regions, which are then no longer its. Count and log what it found
    /// with [`Check::report`], after letting the lock go.
    pub(crate) fn check(&mut self, xid: u32) -> Check {
        let done = self.done;
        let mut check = Check {
            regions: 0,
            missed: 0,
            rkey: 0,
        };
        for r in self.regions.iter_mut().filter(|r| r.live && r.xid == xid) {
            check.regions += 1;
            if !r.proven(done) {
                if check.missed == 0 {
                    check.rkey = r.rkey;
                }
                check.missed += 1;
            }
            r.live = false;
        }
        check
    }
}

/// What [`Witness::check`] found for one reply.
#[must_use]
pub(crate) struct Check {
    /// Regions the RPC registered.
    regions: usize,
    /// Those not proven invalid; the rkey of the first.
    missed: usize,
    rkey: u32,
}

impl Check {
    /// Counts the delivery of RPC `xid`'s reply by `xprt`, and its misses,
    /// logging them.
    pub(crate) fn report(self, xprt: &Xprt, xid: u32) {
        if self.regions > 0 {
            CHECKED.fetch_add(1, Ordering::Relaxed);
        }
        if self.missed > 0 {
            // One is counted with the line that says so.
            let more = u64::try_from(self.missed - 1).unwrap_or(u64::MAX);
            MISSES.fetch_add(more, Ordering::Relaxed);
            miss(xid, self.rkey, Some(xprt));
        }
    }
}

/// Counts and logs one miss: RPC `xid`'s region with `rkey`, whose reply
/// `xprt` is delivering (`None`: that region was registered again).
fn miss(xid: u32, rkey: u32, xprt: Option<&Xprt>) {
    MISSES.fetch_add(1, Ordering::Relaxed);
    if sunrpc::ratelimit(Budget::Fault) {
        match xprt {
            Some(xprt) => pr_err!(
                "{}: reply for xid {:#010x} delivered before its memory region (rkey {:#010x}) was invalidated\n",
                xprt.peer(),
                xid,
                rkey
            ),
            None => pr_err!(
                "memory region (rkey {:#010x}) of xid {:#010x} registered again before it was invalidated\n",
                rkey,
                xid
            ),
        }
    }
}

/// The debugfs `witness` file.
pub(crate) struct WitnessReport;

impl debugfs::Show for WitnessReport {
    fn show(&self, m: &SeqFile) -> Result {
        seq_print!(
            m,
            "reply_before_invalidation {}\ndeliveries_checked {}\n",
            MISSES.load(Ordering::Relaxed),
            CHECKED.load(Ordering::Relaxed)
        );
        Ok(())
    }
}
