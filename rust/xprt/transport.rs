// SPDX-License-Identifier: GPL-2.0

//! The transport instance (the C `transport.c`): the state each `rpc_xprt`
//! of the class carries, its operations ([`XprtOps`], which sunrpc calls
//! through the C ops table and `sunrpc::Adapter`), and the registry of
//! instances behind the debugfs `xprts` report.

use super::{
    connect,
    frwr::{Recorded, MAX_DATA_PAGES},
    stats::Stats,
    verbs::{Endpoint, EpShared},
};
use crate::{
    debugfs::{self, seq_print, SeqFile},
    errno,
    proto::{self, header, private_data::Negotiated},
    sunrpc::{params, Rqst, WriteLock, WriteLocked, Xprt, XprtOps, XprtStats},
};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use kernel::{
    alloc::KVec,
    fmt, new_mutex,
    prelude::*,
    str::CString,
    sync::{Arc, ArcBorrow, Mutex},
};

/// The state of one transport instance.
#[pin_data]
pub(crate) struct XprtState {
    xprt: Xprt,
    stats: Arc<Stats>,
    /// The records of RPCs holding memory regions, counted by XID bucket,
    /// of every connection: `buf_free` of an RPC whose bucket has none
    /// returns at once, without finding the connection.
    recorded: Arc<Recorded>,
    /// Where the instance is listed, from `attach` to `detach`.
    registry: Arc<Registry>,
    /// The current connection, if any: only the holder of the transport's
    /// write lock reaches it (the sender, the connect worker, the close
    /// and the teardown), so it needs no lock of its own.
    ep: WriteLocked<Option<Endpoint>>,
    /// The last connection, for those without the write lock. Kept after
    /// the connection closes, until the next one: `buf_free` must find the
    /// regions of an RPC while its connection is being torn down (the
    /// teardown takes `ep` first), and wait for the drain.
    #[pin]
    last: Mutex<Option<Last>>,
    /// The last connection attempt failed: back off before the next.
    connect_failed: AtomicBool,
    /// The last connection ended at a fault of the server (a message that
    /// cannot be trusted): back off before the next, and keep the backoff
    /// reached so far when it closes, for the server may well do the same
    /// again with the retransmission.
    peer_fault: AtomicBool,
    /// The inline thresholds of the last connection, for readers that may
    /// not sleep (`bc_maxpayload` runs under the RCU read lock).
    inline_send: AtomicU32,
    inline_recv: AtomicU32,
}

/// What the transport keeps of its last connection ([`XprtState::last`]).
struct Last {
    /// What its handlers share.
    shared: Arc<EpShared>,
    /// What was negotiated, and the device, for the report.
    negotiated: Negotiated,
    device: Option<CString>,
    /// Not closed yet.
    open: bool,
}

impl XprtState {
    fn new(
        xprt: Xprt,
        stats: Arc<Stats>,
        recorded: Arc<Recorded>,
        registry: Arc<Registry>,
    ) -> impl PinInit<Self> {
        pin_init!(Self {
            xprt,
            stats,
            recorded,
            registry,
            ep: WriteLocked::new(*xprt, None),
            last <- new_mutex!(None),
            connect_failed: AtomicBool::new(false),
            peer_fault: AtomicBool::new(false),
            inline_send: AtomicU32::new(proto::DEFAULT_INLINE_SIZE),
            inline_recv: AtomicU32::new(proto::DEFAULT_INLINE_SIZE),
        })
    }

    fn show(&self, m: &SeqFile) {
        seq_print!(m, "xprt {}\n", self.xprt.peer());
        let (cong, cwnd) = self.xprt.window();
        seq_print!(m, "  cong {}\n  cwnd {}\n", cong, cwnd);
        let last = self.last.lock();
        let Some(ep) = last.as_ref().filter(|l| l.open) else {
            seq_print!(m, "  connected no\n");
            return;
        };
        let n = &ep.negotiated;
        match &ep.device {
            Some(device) => seq_print!(m, "  connected yes\n  device {}\n", &**device),
            None => seq_print!(m, "  connected yes\n  device ?\n"),
        }
        match n.peer {
            Some(p) => seq_print!(
                m,
                "  peer_send_size {}\n  peer_recv_size {}\n  peer_remote_invalidation {}\n",
                p.send_size(),
                p.recv_size(),
                u8::from(p.remote_invalidation())
            ),
            None => seq_print!(m, "  peer_private_data none\n"),
        }
        seq_print!(
            m,
            "  inline_send {}\n  inline_recv {}\n  remote_invalidation {}\n",
            n.inline_send,
            n.inline_recv,
            u8::from(n.remote_invalidation)
        );
        seq_print!(
            m,
            "  credits_granted {}\n  credits_requested {}\n  mrs_free {}\n  region_pages {}\n",
            ep.shared.credits.load(Ordering::Relaxed),
            ep.shared.max_requests.load(Ordering::Relaxed),
            ep.shared.regions_free(),
            ep.shared.region_pages()
        );
        let s = &self.stats;
        seq_print!(
            m,
            "  remote_invalidations {}\n  rdma_errors {}\n  bad_replies {}\n  duplicate_replies {}\n  mr_waits {}\n  sends {}\n  sends_signaled {}\n",
            s.remote_invalidations.load(Ordering::Relaxed),
            s.rdma_errors.load(Ordering::Relaxed),
            s.bad_reply_count.load(Ordering::Relaxed),
            s.duplicate_replies.load(Ordering::Relaxed),
            s.mr_waits.load(Ordering::Relaxed),
            s.sends.load(Ordering::Relaxed),
            s.sends_signaled.load(Ordering::Relaxed)
        );
    }
}

/// Every transport instance, for the debugfs `xprts` report.
#[pin_data]
pub(crate) struct Registry {
    /// Free entries are `None` and reused.
    #[pin]
    xprts: Mutex<KVec<Option<Arc<XprtState>>>>,
}

impl Registry {
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            xprts <- new_mutex!(KVec::new()),
        })
    }
}

impl debugfs::Show for Registry {
    fn show(&self, m: &SeqFile) -> Result {
        let xprts = self.xprts.lock();
        let live = xprts.iter().flatten();
        seq_print!(m, "transports {}\n", live.clone().count());
        for x in live {
            x.show(m);
        }
        Ok(())
    }
}

#[vtable]
impl XprtOps for XprtState {
    type Class = Registry;

    /// What the chunks of one RPC can register (C: `RPCRDMA_MAX_DATA_SEGS`
    /// pages).
    const MAX_PAYLOAD: u32 = MAX_DATA_PAGES * kernel::page::PAGE_SIZE as u32;

    fn attach(registry: ArcBorrow<'_, Registry>, xprt: Xprt) -> Result<Arc<Self>> {
        let stats = Arc::new(Stats::default(), GFP_KERNEL)?;
        let recorded = Recorded::new()?;
        let state = Arc::pin_init(
            XprtState::new(xprt, stats, recorded, registry.into()),
            GFP_KERNEL,
        )?;
        {
            let mut xprts = state.registry.xprts.lock();
            match xprts.iter_mut().find(|x| x.is_none()) {
                Some(free) => *free = Some(state.clone()),
                None => xprts.push(Some(state.clone()), GFP_KERNEL)?,
            }
        }
        Ok(state)
    }

    fn detach(this: Arc<Self>, lock: &mut WriteLock<'_>) {
        Self::close(&this, lock);
        for x in this.registry.xprts.lock().iter_mut() {
            if x.as_ref().is_some_and(|x| Arc::ptr_eq(x, &this)) {
                *x = None;
            }
        }
    }

    fn connect(&self, lock: &mut WriteLock<'_>) -> Result {
        let ep_slot = self.ep.get(lock)?;
        // A connection that was lost without a close goes first; what is
        // kept of it (for `buf_free`) says it is closed.
        drop(ep_slot.take());
        if let Some(last) = self.last.lock().as_mut() {
            last.open = false;
        }
        let after_fault = self.peer_fault.load(Ordering::Relaxed);
        // The test hooks can fail the attempt as a failed allocation would.
        let attempt = if params::fail_connect() {
            Err(ENOMEM)
        } else {
            Endpoint::connect(self.xprt, &self.stats, &self.recorded, after_fault)
        };
        match attempt {
            Ok(ep) => {
                let n = &ep.negotiated;
                self.inline_send.store(n.inline_send, Ordering::Relaxed);
                self.inline_recv.store(n.inline_recv, Ordering::Relaxed);
                // The previous connection was torn down above: nothing of
                // it is held any more. The device's name is only for the
                // report.
                let device = CString::try_from_fmt(fmt!("{}", &*ep.device)).ok();
                *self.last.lock() = Some(Last {
                    shared: ep.shared.clone(),
                    negotiated: ep.negotiated,
                    device,
                    open: true,
                });
                *ep_slot = Some(ep);
                self.connect_failed.store(false, Ordering::Relaxed);
                self.peer_fault.store(false, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                // sunrpc backs off between attempts (3 s, doubling up to
                // 5 minutes), which limits how often this is logged.
                pr_warn!("{}: connection attempt failed: {:?}\n", self.xprt.peer(), e);
                self.connect_failed.store(true, Ordering::Relaxed);
                Err(connect::sunrpc_error(e))
            }
        }
    }

    fn connect_failed(&self) -> bool {
        self.connect_failed.load(Ordering::Relaxed) || self.peer_fault.load(Ordering::Relaxed)
    }

    fn peer_faulted(&self) -> bool {
        self.peer_fault.load(Ordering::Relaxed)
    }

    fn close(&self, lock: &mut WriteLock<'_>) {
        // Its teardown waits for the drain.
        let ep = self.ep.get(lock).ok().and_then(Option::take);
        drop(ep);
        let faulted = {
            let mut last = self.last.lock();
            last.as_mut().is_some_and(|l| {
                l.open = false;
                l.shared.peer_faulted()
            })
        };
        self.peer_fault.store(faulted, Ordering::Relaxed);
    }

    fn send_request(&self, lock: &mut WriteLock<'_>, rqst: &Rqst<'_>, bc_reply: bool) -> Result {
        self.ep
            .get(lock)?
            .as_mut()
            .ok_or_else(errno::enotconn)?
            .send(rqst, bc_reply)
    }

    /// An RPC timed out: the connection is reset to probe the server, and
    /// the loss logged as the connection's own (once).
    fn timer(&self) {
        let shared = self
            .last
            .lock()
            .as_ref()
            .filter(|l| l.open)
            .map(|l| l.shared.clone());
        if let Some(shared) = shared {
            shared.timed_out();
        }
    }

    /// `buf_free`: returns only when nothing of RPC `xid` is registered,
    /// or reachable through a QP that may still execute. Sleeps.
    fn buf_free(&self, xid: u32) {
        // Most often the reply came and the server invalidated what the RPC
        // held: no connection has a record of it, and there is nothing to
        // wait for (the caller has seen the RPC sent, so its `register`).
        if self.recorded.none(xid) {
            return;
        }
        let shared = self.last.lock().as_ref().map(|l| l.shared.clone());
        if let Some(shared) = shared {
            shared.release_rpc_sync(xid);
        }
    }

    /// Largest backchannel message, RPC-over-RDMA header included, that
    /// fits inline both ways (C: `xprt_rdma_bc_maxpayload`).
    fn bc_maxpayload(&self) -> usize {
        let send = self.inline_send.load(Ordering::Relaxed);
        let recv = self.inline_recv.load(Ordering::Relaxed);
        let page = kernel::page::PAGE_SIZE;
        let max = usize::try_from(send.min(recv)).unwrap_or(page).min(page);
        max.saturating_sub(header::MIN_HEADER_LEN)
    }

    fn stats(&self) -> XprtStats {
        self.stats.snapshot()
    }
}
