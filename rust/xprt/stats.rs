// SPDX-License-Identifier: GPL-2.0

//! The transport's counters (the C `struct rpcrdma_stats`), updated by the
//! data path and read as an [`XprtStats`] snapshot by `print_stats` for
//! `/proc/self/mountstats`.
//!
//! A counter that one context at a time writes is added to with [`bump`],
//! a load and a store: no locked read-modify-write on the data path, as C
//! increments its counters plainly. The sender writes its own counters
//! (with the transport's write lock); each of the two completion
//! handlers that deliver replies has a [`Delivered`] of its own, summed
//! in the snapshot. Counters that several contexts update (errors, rare
//! events) keep `fetch_add`.

use crate::sunrpc::XprtStats;
use core::sync::atomic::{AtomicU64, Ordering};

/// Adds `n` to `counter`, which only the caller's context writes (see the
/// module documentation); readers see whole values.
pub(crate) fn bump(counter: &AtomicU64, n: u64) {
    if n != 0 {
        counter.store(
            counter.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    }
}

/// What the replies one completion handler delivered carried.
#[derive(Default)]
pub(crate) struct Delivered {
    pub(crate) total_rdma_reply: AtomicU64,
    pub(crate) fixup_copy_count: AtomicU64,
}

/// Counters, in the order of the C transport's `xprt: rdma` line.
#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) read_chunk_count: AtomicU64,
    pub(crate) write_chunk_count: AtomicU64,
    pub(crate) reply_chunk_count: AtomicU64,
    pub(crate) total_rdma_request: AtomicU64,
    /// Replies delivered by the Receive handler, and by a LOCAL_INV's
    /// completion (a reply that waited for its RPC's invalidation).
    pub(crate) delivered_received: Delivered,
    pub(crate) delivered_invalidated: Delivered,
    pub(crate) pullup_copy_count: AtomicU64,
    pub(crate) hardway_register_count: AtomicU64,
    pub(crate) failed_marshal_count: AtomicU64,
    pub(crate) bad_reply_count: AtomicU64,
    pub(crate) nomsg_call_count: AtomicU64,
    pub(crate) mrs_recycled: AtomicU64,
    pub(crate) mrs_orphaned: AtomicU64,
    pub(crate) mrs_allocated: AtomicU64,
    pub(crate) local_inv_needed: AtomicU64,
    pub(crate) empty_sendctx_q: AtomicU64,
    /// Not in the C line: MRs the server invalidated with Send With
    /// Invalidate, and RDMA_ERROR replies.
    pub(crate) remote_invalidations: AtomicU64,
    pub(crate) rdma_errors: AtomicU64,
    /// Replies to an RPC already answered, dropped.
    pub(crate) duplicate_replies: AtomicU64,
    /// Times a Send found too few free memory regions and waited for
    /// replies to bring some back (an RPC may wait more than once).
    pub(crate) mr_waits: AtomicU64,
    /// Sends posted, and those of them posted signaled: the rest complete
    /// silently, handed back by a later signaled Send's completion.
    pub(crate) sends: AtomicU64,
    pub(crate) sends_signaled: AtomicU64,
}

impl Stats {
    /// A snapshot of the counters the C `print_stats` formats.
    pub(crate) fn snapshot(&self) -> XprtStats {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        XprtStats {
            read_chunk_count: r(&self.read_chunk_count),
            write_chunk_count: r(&self.write_chunk_count),
            reply_chunk_count: r(&self.reply_chunk_count),
            total_rdma_request: r(&self.total_rdma_request),
            total_rdma_reply: r(&self.delivered_received.total_rdma_reply)
                .wrapping_add(r(&self.delivered_invalidated.total_rdma_reply)),
            pullup_copy_count: r(&self.pullup_copy_count),
            fixup_copy_count: r(&self.delivered_received.fixup_copy_count)
                .wrapping_add(r(&self.delivered_invalidated.fixup_copy_count)),
            hardway_register_count: r(&self.hardway_register_count),
            failed_marshal_count: r(&self.failed_marshal_count),
            bad_reply_count: r(&self.bad_reply_count),
            nomsg_call_count: r(&self.nomsg_call_count),
            mrs_recycled: r(&self.mrs_recycled),
            mrs_orphaned: r(&self.mrs_orphaned),
            mrs_allocated: r(&self.mrs_allocated),
            local_inv_needed: r(&self.local_inv_needed),
            empty_sendctx_q: r(&self.empty_sendctx_q),
        }
    }
}
