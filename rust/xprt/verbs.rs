// SPDX-License-Identifier: GPL-2.0

//! One connection of a transport (the C `verbs.c`: `rpcrdma_ep`,
//! `rpcrdma_xprt_connect`, `rpcrdma_xprt_disconnect`, the Send and Receive
//! buffers): its connection manager identifier, queue pair, pre-posted
//! Receives and Send buffers, what was negotiated with the peer; the send
//! path, which registers the chunks `marshal.rs` plans (through
//! `frwr.rs`) and posts the Send `marshal.rs` encodes; and the handlers
//! that apply `marshal.rs`'s decisions and `frwr.rs`'s rules to what the
//! queues report. The connection's events are traced here
//! (`sunrpc::trace`): its attempt, private data, credit changes, reply
//! errors, failed memory registrations and its end.

use super::{
    connect::{self, requester_params, ConnEvents, MAX_PEER_PRIVATE, RESOLVE_TIMEOUT_MS},
    frwr::{Answer, Gate, Invalidated, MrList, MrPool, Recorded, MAX_DATA_PAGES, MAX_SEGS},
    marshal::{self, Incoming, OtherXid, Outcome},
    stats::{bump, Delivered, Stats},
};
use crate::{
    errno,
    proto::{
        chunks::Thresholds,
        credits::Credits,
        private_data::{self, Negotiated},
    },
    rdma::{
        CmEvent, CmEventKind, CmHandler, CmId, Completion, CompletionHandler, FrwrAttrs, Mr,
        MrHandler, Pieces, QpCaps, Received, RecvBuf, RegChain, SendBuf, SentBatch,
    },
    sunrpc::{
        self, params,
        trace::{self, ReplyError},
        Budget, Layouts, PinnedRqst, Rqst, Xprt,
    },
};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use kernel::{
    alloc::{KVVec, KVec},
    fmt, new_condvar, new_spinlock,
    page::PAGE_SIZE,
    prelude::*,
    str::CString,
    sync::{Arc, CondVar, SpinLock},
};

/// Pieces one chunk of the largest RPC is usually cut into: a piece per
/// page of its page data, one more if that starts inside a page, and two
/// each for its head and tail, which may cross a page boundary. A longer
/// head or tail takes more, allocated then and kept.
const MAX_PIECES: usize = MAX_DATA_PAGES as usize + 5;
/// Backchannel requests the server may have outstanding (C:
/// `rb_bc_srv_max_requests`).
pub(crate) const BC_CREDITS: u32 = sunrpc::BC_SLOTS;
/// Send buffers beyond one per credit and backchannel reply: for Sends
/// that complete after their reply.
const EXTRA_SENDS: u32 = 8;
/// Memory regions per connection for RPCs: enough for every credit's RPC
/// to have a few chunks registered; an RPC that finds none waits for one.
const MRS: u32 = sunrpc::MRS;
/// Memory regions per connection: the RPCs', and the Write chunks' pad
/// (`frwr.rs`), which only ever has its one REG_MR in the send queue.
const REGIONS: u32 = MRS + 1;

type Pool = MrPool<EpShared, Deferred>;

/// What [`EpShared::regs`] guards. Under one lock because sending, a
/// reply and `buf_free` each need both, and take it once.
struct Regs {
    /// Whether send-queue work requests may be posted, and whether the QP
    /// can still reach memory.
    gate: Gate,
    /// The memory regions and the RPCs holding them.
    pool: Pool,
}

/// A reply held until the memory of its RPC is unreachable: the Receive
/// buffer it arrived in (`rep`) is not reposted before then.
pub(crate) struct Deferred {
    /// The RPC's XID: what a Reply chunk's message must name, and the
    /// test hooks' check of the delivery (`witness.rs`), made under the
    /// lock the pool hands the reply out under (`handed_out`).
    xid: u32,
    #[cfg(rpcrdma_rs_test_hooks)]
    check: Option<super::witness::Check>,
    rqst: PinnedRqst,
    outcome: Outcome,
    rep: Received<EpShared>,
}

/// The pool hands out `d`'s reply for delivery: the test hooks' witness
/// checks its RPC's regions now, under the lock the pool decided under,
/// so that no completion handled after the decision can hide what the
/// decision did not wait for.
#[cfg(rpcrdma_rs_test_hooks)]
fn handed_out(pool: &mut Pool, d: &mut Deferred) {
    d.check = Some(pool.witness().check(d.xid));
}
#[cfg(not(rpcrdma_rs_test_hooks))]
fn handed_out(_pool: &mut Pool, _d: &mut Deferred) {}

/// Why a connection was lost, for the one line that reports it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Loss {
    /// A connection manager event: the server disconnected, the device
    /// went, the address changed.
    Cm(CmEventKind),
    /// A Send, Receive or memory registration work request that failed or
    /// was flushed (the QP went into the error state): which, and its
    /// completion status (flushed: `IB_WC_WR_FLUSH_ERR`).
    Completion(&'static str, u32, bool),
    /// A work request could not be posted.
    Post(&'static str),
    /// A memory region could not be invalidated: its LOCAL_INV could not
    /// be posted, or the region may still be reachable.
    Invalidate,
    /// A message from the server that cannot be trusted (logged on its
    /// own line before).
    BadReply,
    /// A backchannel Call the callback service refused.
    Backchannel,
    /// An RPC got no reply in time (sunrpc's timer).
    Timeout,
}

impl Loss {
    fn completion(what: &'static str, completion: &Completion) -> Self {
        Self::Completion(what, completion.status, completion.is_flush())
    }
}

impl core::fmt::Display for Loss {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Cm(CmEventKind::Disconnected) => f.write_str("DISCONNECTED"),
            Self::Cm(CmEventKind::DeviceRemoval) => f.write_str("DEVICE_REMOVAL"),
            Self::Cm(CmEventKind::AddrChange) => f.write_str("ADDR_CHANGE"),
            Self::Cm(kind) => write!(f, "connection manager event {:?}", kind),
            Self::Completion(what, _, true) => write!(f, "{} flushed", what),
            Self::Completion(what, status, false) => {
                write!(f, "{} failed with completion status {}", what, status)
            }
            Self::Post(what) => write!(f, "could not post a {}", what),
            Self::Invalidate => f.write_str("could not invalidate a memory region"),
            Self::BadReply => f.write_str("bad reply"),
            Self::Backchannel => f.write_str("backchannel Call refused"),
            Self::Timeout => f.write_str("RPC timed out"),
        }
    }
}

/// Send buffers that are not posted, as a stack: those the completions
/// handed back ([`EpShared::free_sends`]), or those the sender took from
/// there ([`Endpoint::stash`]).
///
/// # Invariants
///
/// `slots[..len]` are `Some`, the rest `None`, and there is a slot for
/// every Send buffer of the connection.
struct FreeSends {
    /// One per slot of the transport's table and more: too many for one
    /// kmalloc with a large table.
    slots: KVVec<Option<SendBuf<EpShared>>>,
    len: usize,
}

impl FreeSends {
    const fn empty() -> Self {
        Self {
            slots: KVVec::new(),
            len: 0,
        }
    }

    /// Room for `n` buffers, and none in it.
    fn with_room(n: usize) -> Result<Self> {
        let mut slots = KVVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            slots.push(None, GFP_KERNEL)?;
        }
        // INVARIANT: no buffer.
        Ok(Self { slots, len: 0 })
    }

    /// All of `bufs`, free.
    fn new(bufs: KVVec<SendBuf<EpShared>>) -> Result<Self> {
        let mut slots = KVVec::with_capacity(bufs.len(), GFP_KERNEL)?;
        for buf in bufs {
            slots.push(Some(buf), GFP_KERNEL)?;
        }
        // INVARIANT: every buffer, in its own slot.
        Ok(Self {
            len: slots.len(),
            slots,
        })
    }

    /// Takes a free buffer; returns it and how many are left free.
    fn take(&mut self) -> Option<(SendBuf<EpShared>, usize)> {
        let buf = self.slots.get_mut(self.len.checked_sub(1)?)?.take()?;
        self.len -= 1;
        Some((buf, self.len))
    }

    /// Moves every buffer of `self` to `to`; those `to` has no room for
    /// (none, for two stacks with room for every buffer) are dropped.
    fn move_all(&mut self, to: &mut Self) {
        while let Some((buf, _)) = self.take() {
            drop(to.put(buf));
        }
    }

    /// Returns `buf`, taken before, to the stack; hands it back if there
    /// is no room (not one of this stack's buffers), to be dropped outside
    /// the lock.
    fn put(&mut self, buf: SendBuf<EpShared>) -> Result<(), SendBuf<EpShared>> {
        match self.slots.get_mut(self.len) {
            Some(slot) => {
                *slot = Some(buf);
                self.len += 1;
                Ok(())
            }
            None => Err(buf),
        }
    }
}

/// What the connection's handlers share: connection manager events, the
/// gate that stops posting to the send queue at teardown, the free Send
/// buffers, the memory regions (and the replies waiting for their
/// invalidation), credits. The posted Receives and Sends belong to the QP
/// until they complete.
///
/// The gate and the regions share one lock (`regs`); replies are
/// delivered outside it.
#[pin_data]
pub(crate) struct EpShared {
    #[pin]
    events: ConnEvents,
    pub(crate) xprt: Xprt,
    pub(crate) stats: Arc<Stats>,
    /// The Send buffers the completions handed back, which the sender
    /// takes all at once into its stash when that is empty.
    #[pin]
    free_sends: SpinLock<FreeSends>,
    /// How many `free_sends` has, as last stored under its lock: read
    /// without it by the sender, the one who takes from there, so never
    /// more than there are.
    free_hint: AtomicUsize,
    /// The connection was established and not yet torn down: losing it
    /// must be reported to sunrpc (once).
    live: AtomicBool,
    /// The server sent a message that cannot be trusted: the next
    /// connection is made after sunrpc's reconnect backoff.
    peer_fault: AtomicBool,
    /// The connection before this one ended at a fault of the server: the
    /// backoff that earned is not undone by this one's replies, so it
    /// grows if the server does it again (a clean close undoes it).
    after_fault: bool,
    /// The server's current grant.
    pub(crate) credits: AtomicU32,
    /// A grant out of range was logged: once per connection is enough
    /// (the server may send it in every reply).
    grant_logged: AtomicBool,
    /// The most credits this connection accepts: the transport's slot
    /// table size, or less if the device's queues are too short.
    pub(crate) max_requests: AtomicU32,
    /// Whether send-queue work requests may be posted, and the memory
    /// regions with the RPCs holding them.
    #[pin]
    regs: SpinLock<Regs>,
    /// The pool's records by XID bucket, read without `regs`.
    recorded: Arc<Recorded>,
    /// Signalled when an RPC lets go of its regions, for `buf_free`.
    #[pin]
    released: CondVar,
}

impl EpShared {
    fn new(
        xprt: Xprt,
        stats: Arc<Stats>,
        after_fault: bool,
        recorded: Arc<Recorded>,
    ) -> impl PinInit<Self> {
        let max_requests = xprt.max_reqs();
        pin_init!(Self {
            events <- ConnEvents::new(),
            xprt,
            stats,
            free_sends <- new_spinlock!(FreeSends::empty()),
            free_hint: AtomicUsize::new(0),
            live: AtomicBool::new(false),
            peer_fault: AtomicBool::new(false),
            after_fault,
            credits: AtomicU32::new(1),
            grant_logged: AtomicBool::new(false),
            max_requests: AtomicU32::new(max_requests),
            regs <- new_spinlock!(Regs {
                gate: Gate::Idle,
                pool: MrPool::empty(),
            }),
            released <- new_condvar!(),
            recorded,
        })
    }

    /// `buf_free`: the memory of RPC `xid` is about to be freed. If it
    /// still holds regions (no reply came, or its invalidation is under
    /// way), invalidate them and wait until they are unreachable: by their
    /// LOCAL_INV, or by the drain of a connection being torn down. The
    /// mark that it was answered goes (no reply can find the RPC any
    /// more). Sleeps.
    pub(crate) fn release_rpc_sync(&self, xid: u32) {
        // Most often the reply came, the server invalidated what the RPC
        // held, and its record went with the reply: nothing to take the
        // lock for, which the sender and the Receive handler want (the
        // transport checks that before it even finds this connection).
        if self.recorded.none(xid) {
            return;
        }
        let (held, posted, ok) = {
            let mut regs = self.regs.lock();
            let Regs { gate, pool } = &mut *regs;
            pool.release(xid, gate)
        };
        self.count_local_invs(posted);
        if !ok {
            self.connection_lost(Loss::Invalidate);
        }
        if held {
            let mut regs = self.regs.lock();
            while regs.pool.holds(xid) {
                self.released.wait(&mut regs);
            }
            regs.pool.forget_answered(xid);
        }
        // Regions came back: a sender may be waiting for them.
        self.xprt.write_space();
    }

    /// The server sent this connection a message that cannot be trusted
    /// ([`EpShared::bad_reply`]).
    pub(crate) fn peer_faulted(&self) -> bool {
        self.peer_fault.load(Ordering::Relaxed)
    }

    /// The connection failed (`why`): say so, naming the server, and have
    /// sunrpc close it and reconnect. Only the first report counts, so one
    /// loss logs one line however many completions it flushes; teardown
    /// clears `live` first, so a connection being closed on purpose (idle,
    /// unmount, after an earlier loss) does not report itself.
    pub(crate) fn connection_lost(&self, why: Loss) {
        self.lose(why);
    }

    /// [`EpShared::connection_lost`]; true if this call was the report
    /// that counted.
    fn lose(&self, why: Loss) -> bool {
        if self.live.swap(false, Ordering::AcqRel) {
            trace::disconnect(&self.xprt, fmt!("{}", why));
            if sunrpc::ratelimit(Budget::Conn) {
                match why {
                    // The server may only be slow: not a loss yet.
                    Loss::Timeout => pr_notice!(
                        "{}: no reply in time; resetting the connection\n",
                        self.xprt.peer()
                    ),
                    _ => pr_warn!("{}: connection lost ({})\n", self.xprt.peer(), why),
                }
            }
            self.xprt.force_disconnect();
            return true;
        }
        false
    }

    /// Posts a completed Receive again; the buffer is freed if that fails
    /// (the QP is shut down, or its device refuses). Not under `regs`: the
    /// QP's own posting lock is what keeps a post from following the
    /// drain. A Receive posted between the gate's closing and the drain
    /// completes, is flushed, or is freed with the QP, like every other.
    fn repost(&self, rep: Received<Self>, done: &Completion) {
        if let Err((rep, _)) = rep.repost(done) {
            drop(rep);
            self.connection_lost(Loss::Post("Receive"));
        }
    }

    /// Delivers a reply whose RPC's memory is unreachable, counted in the
    /// delivering handler's `counts`, then reposts its Receive buffer (the
    /// handler's completion `done` is of the same QP). A Reply chunk whose
    /// message names another RPC is refused here instead, and only a reply
    /// delivered restarts the reconnect backoff (`taken`).
    fn finish(&self, d: Deferred, counts: &Delivered, done: &Completion) {
        #[cfg(rpcrdma_rs_test_hooks)]
        if let Some(check) = d.check {
            check.report(&self.xprt, d.xid);
        }
        let xid = d.xid;
        match marshal::deliver(d.rqst, xid, d.outcome, d.rep.data(), counts) {
            Ok(dropped) => {
                self.taken();
                if dropped != 0 && sunrpc::ratelimit(Budget::Info) {
                    pr_info!(
                        "{}: {} bytes of the reply to xid {:#010x} do not fit its receive buffer; left out\n",
                        self.xprt.peer(),
                        dropped,
                        xid
                    );
                }
                self.repost(d.rep, done);
            }
            Err(OtherXid(rpc_xid)) => {
                // The RPC waits for a reply again: a later one for it on
                // this connection is taken as for an RPC that registered
                // nothing (it no longer has), not as a duplicate. It is
                // unpinned already: should it be sent again on this
                // connection first, `register` has replaced the mark,
                // and a live record is never removed here.
                self.regs.lock().pool.forget_answered(xid);
                self.bad_reply(
                    d.rep,
                    done,
                    Some(xid),
                    ReplyError::Malformed,
                    fmt!("RPC message's XID {rpc_xid:#010x} in the Reply chunk differs from the transport header's"),
                );
            }
        }
    }

    /// Counts LOCAL_INVs posted (by `buf_free` or the Receive handler:
    /// two contexts, so a locked add, and only when there were any).
    fn count_local_invs(&self, posted: u32) {
        if posted != 0 {
            self.stats
                .local_inv_needed
                .fetch_add(u64::from(posted), Ordering::Relaxed);
        }
    }

    /// Acts on what the pool decided for the reply it accepted for RPC
    /// `xid` ([`MrPool::answer`], under `regs`, in `handle_reply`): deliver
    /// it now if nothing of the RPC is reachable by the server, else later
    /// (a LOCAL_INV's completion hands it out), or drop a duplicate. Called
    /// only from the Receive completion handler, which the CQ's workqueue
    /// runs one completion at a time: a reply delivered here
    /// (`Answer::Now`) has completed its RPC, taking it off sunrpc's
    /// receive queue, or been refused, before the next reply is looked
    /// up, as `MrPool::answer` requires.
    fn answered(&self, xid: u32, answered: (Answer<Deferred>, u32, bool, bool), done: &Completion) {
        let (answer, posted, remote, ok) = answered;
        if remote {
            // Only this handler counts them.
            bump(&self.stats.remote_invalidations, 1);
        }
        self.count_local_invs(posted);
        if !ok {
            self.connection_lost(Loss::Invalidate);
        }
        if remote || !matches!(answer, Answer::Later) {
            // Regions came back: a sender may be waiting for them.
            self.xprt.write_space();
        }
        match answer {
            Answer::Now(d) => self.finish(d, &self.stats.delivered_received, done),
            Answer::Later => {}
            Answer::Duplicate(d) => {
                self.stats.duplicate_replies.fetch_add(1, Ordering::Relaxed);
                trace::reply_error(
                    &self.xprt,
                    Some(xid),
                    ReplyError::Duplicate,
                    fmt!("duplicate reply dropped"),
                );
                if sunrpc::ratelimit(Budget::Fault) {
                    pr_warn!(
                        "{}: duplicate reply dropped (xid {:#010x})\n",
                        self.xprt.peer(),
                        xid
                    );
                }
                drop(d.rqst);
                self.repost(d.rep, done);
            }
        }
    }

    /// Counts, logs and traces (as `kind`) a message that cannot be
    /// trusted and resets the connection. The Call it names is left on
    /// sunrpc's receive queue, as every Call the reset finds unanswered:
    /// the reset wakes it and it is sent again on the next connection,
    /// once the drain has made its memory unreachable. Failing it here
    /// instead would race the drain (the failure is delivered only if its
    /// LOCAL_INV completes before the QP is flushed), and would give a
    /// hard mount `EIO` where a retransmission may well succeed. A server
    /// that sends such a message every time is reconnected to after
    /// sunrpc's backoff (`peer_fault`), not at once.
    fn bad_reply(
        &self,
        rep: Received<Self>,
        done: &Completion,
        xid: Option<u32>,
        kind: ReplyError,
        what: core::fmt::Arguments<'_>,
    ) {
        self.stats.bad_reply_count.fetch_add(1, Ordering::Relaxed);
        trace::reply_error(&self.xprt, xid, kind, what);
        if sunrpc::ratelimit(Budget::Fault) {
            match xid {
                Some(xid) => pr_warn!("{}: {} (xid {:#010x})\n", self.xprt.peer(), what, xid),
                None => pr_warn!("{}: {}\n", self.xprt.peer(), what),
            }
        }
        self.peer_fault.store(true, Ordering::Relaxed);
        self.connection_lost(Loss::BadReply);
        self.repost(rep, done);
    }

    /// A message was taken: sunrpc's reconnect backoff starts again
    /// (`reply_arrived`), unless the server broke the protocol on this
    /// connection or the one before: the messages queued behind a fault,
    /// or answered before it comes again, must not undo the backoff it
    /// earned.
    fn taken(&self) {
        if !self.after_fault && !self.peer_faulted() {
            self.xprt.reply_arrived();
        }
    }

    /// Handles one received message (C: `rpcrdma_reply_handler`).
    fn handle_reply(&self, rep: Received<Self>, done: &Completion) {
        let reply = match marshal::classify(rep.data()) {
            Incoming::Short => {
                let len = rep.data().len();
                return self.bad_reply(
                    rep,
                    done,
                    None,
                    ReplyError::Short,
                    fmt!("short transport header ({} bytes)", len),
                );
            }
            Incoming::Bad { xid, why } => {
                return self.bad_reply(
                    rep,
                    done,
                    xid,
                    ReplyError::Malformed,
                    fmt!("bad transport header: {:?}", why),
                );
            }
            // The C glue traces the Call (`rpcrdma_rs_cb_call`) as it hands
            // it over.
            Incoming::BackchannelCall { body } => match self.xprt.bc_receive_call(body) {
                Ok(()) => {
                    self.taken();
                    return self.repost(rep, done);
                }
                // No callback service: not a Call for us after all.
                Err(e) if e == errno::enoprotoopt() => match marshal::classify(rep.data()) {
                    Incoming::Reply(reply) => reply,
                    _ => return self.repost(rep, done),
                },
                Err(e) => {
                    if sunrpc::ratelimit(Budget::Fault) {
                        pr_warn!("{}: backchannel Call dropped: {:?}\n", self.xprt.peer(), e);
                    }
                    // More Calls than the slots, or one too long: the
                    // server's; not a failed allocation (ENOMEM).
                    if e != ENOMEM {
                        self.peer_fault.store(true, Ordering::Relaxed);
                    }
                    self.connection_lost(Loss::Backchannel);
                    return self.repost(rep, done);
                }
            },
            Incoming::Reply(reply) => reply,
        };
        let xid = reply.xid;
        trace::reply(&self.xprt, xid, reply.credit_sent, reply.proc);
        if !reply.rpc_xid_matches() {
            let rpc_xid = reply.rpc_xid().unwrap_or(0);
            return self.bad_reply(
                rep,
                done,
                Some(xid),
                ReplyError::Malformed,
                fmt!("RPC message's XID {rpc_xid:#010x} differs from the transport header's"),
            );
        }
        let Some(rqst) = self.xprt.lookup_pin(xid) else {
            // No such Call (sunrpc counts bad_xids): a late or duplicate
            // reply (a task ended by a signal or a soft timeout leaves the
            // queue before its reply comes), or one that names no Call of
            // ours. Information, as the first is no fault.
            trace::reply_error(
                &self.xprt,
                Some(xid),
                ReplyError::UnknownXid,
                fmt!("reply for unknown XID, dropped"),
            );
            if sunrpc::ratelimit(Budget::Info) {
                pr_info!(
                    "{}: reply for unknown XID {:#010x}, dropped\n",
                    self.xprt.peer(),
                    xid
                );
            }
            return self.repost(rep, done);
        };
        if let Some(credit) = reply.credit {
            let max = self.max_requests.load(Ordering::Relaxed);
            let granted = Credits::sanitize(credit, max);
            // Once per connection. A zero grant is a fault (RFC 8166,
            // section 3.3.1: at least one); more than asked for is allowed
            // and clamped, as C does, but said.
            if granted != credit && !self.grant_logged.load(Ordering::Relaxed) {
                let said = if credit == 0 {
                    sunrpc::ratelimit(Budget::Fault) && {
                        pr_warn!(
                            "{}: server granted 0 credits; using {}\n",
                            self.xprt.peer(),
                            granted
                        );
                        true
                    }
                } else {
                    sunrpc::ratelimit(Budget::Info) && {
                        pr_info!(
                            "{}: server granted {} credits; using {}\n",
                            self.xprt.peer(),
                            credit,
                            granted
                        );
                        true
                    }
                };
                if said {
                    self.grant_logged.store(true, Ordering::Relaxed);
                }
            }
            // Only this handler writes the grant: no locked exchange.
            let old = self.credits.load(Ordering::Relaxed);
            if old != granted {
                self.credits.store(granted, Ordering::Relaxed);
                self.xprt.set_cwnd(granted);
                trace::credits(&self.xprt, old, granted);
            }
        }
        if let Some(e) = reply.rdma_error() {
            self.stats.rdma_errors.fetch_add(1, Ordering::Relaxed);
            trace::reply_error(
                &self.xprt,
                Some(xid),
                ReplyError::RdmaError,
                fmt!("RDMA_ERROR {:?}", e),
            );
            if sunrpc::ratelimit(Budget::Fault) {
                pr_warn!(
                    "{}: RDMA_ERROR {:?} for xid {:#010x}\n",
                    self.xprt.peer(),
                    e,
                    xid
                );
            }
        }
        let (buflen, page_room) = rqst.rcv_room();
        // An RPC with no record has nothing registered on this connection
        // (it offered no chunk, or its reply's refusal in `finish` came
        // after all of it was closed): nothing of it can be reachable, so its
        // reply is checked and delivered without the pool's lock. (The test
        // hooks' witness takes it, to check the delivery against what was
        // posted, as it checks every other one.)
        if self.recorded.none(xid) {
            return match reply.outcome(&crate::proto::header::Offer::Inline, buflen, page_room) {
                Ok(outcome) => {
                    #[cfg(rpcrdma_rs_test_hooks)]
                    let check = Some(self.regs.lock().pool.witness().check(xid));
                    let d = Deferred {
                        xid,
                        #[cfg(rpcrdma_rs_test_hooks)]
                        check,
                        rqst,
                        outcome,
                        rep,
                    };
                    self.finish(d, &self.stats.delivered_received, done);
                }
                Err(what) => {
                    drop(rqst);
                    self.bad_reply(rep, done, Some(xid), ReplyError::BadChunk, fmt!("{}", what));
                }
            };
        }
        // Checked against what the RPC registered on this connection, which
        // its record keeps until the reply is accepted, and accepted, under
        // one hold of the lock.
        // `remote_inv` is None on a device that does not check the key
        // (siw), which is also where Send With Invalidate is not offered
        // (`connect::local`): the region then gets a LOCAL_INV, allowed on
        // an invalid key.
        let remote_inv = rep.remote_invalidation();
        let mut regs = self.regs.lock();
        let outcome = match reply.outcome(&regs.pool.offered(xid), buflen, page_room) {
            Ok(outcome) => outcome,
            Err(what) => {
                drop(regs);
                drop(rqst);
                return self.bad_reply(
                    rep,
                    done,
                    Some(xid),
                    ReplyError::BadChunk,
                    fmt!("{}", what),
                );
            }
        };
        let d = Deferred {
            xid,
            #[cfg(rpcrdma_rs_test_hooks)]
            check: None,
            rqst,
            outcome,
            rep,
        };
        let Regs { gate, pool } = &mut *regs;
        let mut answered = pool.answer(xid, remote_inv, gate, d);
        if let Answer::Now(d) = &mut answered.0 {
            handed_out(pool, d);
        }
        drop(regs);
        self.answered(xid, answered, done);
    }
}

impl EpShared {
    /// An RPC got no reply in time (sunrpc's `timer`): RDMA has no
    /// keepalive, so the connection is reset to probe the server.
    pub(crate) fn timed_out(&self) {
        self.connection_lost(Loss::Timeout);
    }

    /// Regions on the free list, for the report.
    pub(crate) fn regions_free(&self) -> usize {
        self.regs.lock().pool.free_count()
    }

    /// Pages one region maps on this connection's device, for the report.
    pub(crate) fn region_pages(&self) -> usize {
        self.regs.lock().pool.depth()
    }
}

impl CmHandler for EpShared {
    fn handle(&self, event: &CmEvent<'_>) {
        match event.kind() {
            // Armed here, before the connecting thread looks: a disconnect
            // right after ESTABLISHED must not go unreported.
            CmEventKind::Established => {
                // Under `regs`, as teardown clears it: a connection
                // being torn down is never armed again.
                let regs = self.regs.lock();
                if matches!(regs.gate, Gate::Open) {
                    self.live.store(true, Ordering::Release);
                }
            }
            kind @ (CmEventKind::Disconnected
            | CmEventKind::DeviceRemoval
            | CmEventKind::AddrChange) => self.connection_lost(Loss::Cm(kind)),
            _ => {}
        }
        CmHandler::handle(&self.events, event);
    }
}

impl MrHandler for EpShared {
    fn invalidated(&self, mr: &Mr<Self>, completion: &Completion) {
        let success = completion.is_success();
        if !success {
            self.mr_failed("LOCAL_INV", mr, completion);
            // Flushed (or failed): the QP is in the error state.
            self.connection_lost(Loss::completion("LOCAL_INV", completion));
        }
        let result = {
            let mut regs = self.regs.lock();
            // Before the pool hears of it: it may hand out a reply.
            #[cfg(rpcrdma_rs_test_hooks)]
            regs.pool.witness().local_inv_done(mr.index(), success);
            let mut result = regs.pool.invalidated(mr.index(), success);
            if let Invalidated::Done(Some(d)) = &mut result {
                handed_out(&mut regs.pool, d);
            }
            result
        };
        match result {
            Invalidated::Done(Some(d)) => {
                self.finish(d, &self.stats.delivered_invalidated, completion)
            }
            // Its RPC is retransmitted on the next connection; the drain
            // settles its memory.
            Invalidated::Flushed(d) => {
                self.connection_lost(Loss::completion("LOCAL_INV", completion));
                drop(d);
            }
            Invalidated::Done(None) | Invalidated::Stale => {}
        }
        self.released.notify_all();
        // Regions came back: a sender may be waiting for them.
        self.xprt.write_space();
    }

    fn reg_failed(&self, mr: &Mr<Self>, completion: &Completion) {
        self.mr_failed("REG_MR", mr, completion);
        self.connection_lost(Loss::completion("REG_MR", completion));
    }
}

impl EpShared {
    /// Traces the failed `op` of `mr`, unless it was only flushed: flushes
    /// follow every loss of the connection (whose own event says why), and
    /// the region's failure, if any, came first.
    fn mr_failed(&self, op: &'static str, mr: &Mr<Self>, completion: &Completion) {
        if !completion.is_flush() {
            trace::mr_error(
                &self.xprt,
                op,
                mr.index(),
                completion.status,
                completion.vendor_err,
            );
        }
    }
}

impl EpShared {
    /// A Send or Receive did not complete: reset the connection (the RPC
    /// is retransmitted); the loss's line says which and with what status.
    /// A failure other than a flush that comes once the loss was reported
    /// (a DISCONNECTED may overtake it) is said on its own, as
    /// information.
    fn completion_failed(&self, what: &'static str, completion: &Completion) {
        if !completion.is_flush() {
            trace::wc_error(&self.xprt, what, completion.status, completion.vendor_err);
        }
        let why = Loss::completion(what, completion);
        if !self.lose(why) && !completion.is_flush() && sunrpc::ratelimit(Budget::Info) {
            pr_info!("{}: {}\n", self.xprt.peer(), why);
        }
    }
}

impl CompletionHandler for EpShared {
    fn sent(&self, buf: SendBuf<Self>, completion: &Completion) {
        if !completion.is_success() {
            self.completion_failed("Send", completion);
        }
        let stray = {
            let mut free = self.free_sends.lock();
            let stray = free.put(buf);
            self.free_hint.store(free.len, Ordering::Relaxed);
            stray
        };
        drop(stray);
        self.xprt.write_space();
    }

    /// A signaled Send and the unsignaled ones before it completed: all go
    /// back to the pool under one hold of its lock, and one wake-up
    /// follows (C: `rpcrdma_sendctx_put_locked`).
    fn sent_batch(&self, mut batch: SentBatch<Self>, _completion: &Completion) {
        let stray = {
            let mut free = self.free_sends.lock();
            let stray = batch.find_map(|buf| free.put(buf).err());
            self.free_hint.store(free.len, Ordering::Relaxed);
            stray
        };
        // Outside the lock: a buffer with no room in the pool (none, unless
        // it is not one of the pool's), and any after it, are freed.
        drop(stray);
        drop(batch);
        self.xprt.write_space();
    }

    fn received(&self, rep: Received<Self>, completion: &Completion) {
        if !completion.is_success() {
            // E.g. a message longer than the Receive buffer (a local length
            // error). The buffer is freed: the connection is reset.
            if completion.is_peer_error() {
                self.peer_fault.store(true, Ordering::Relaxed);
            }
            self.completion_failed("Receive", completion);
            return;
        }
        // From the completion itself, before the reply is looked at.
        #[cfg(rpcrdma_rs_test_hooks)]
        if let Some(rkey) = completion.invalidated_rkey {
            self.regs.lock().pool.witness().remote_invalidated(rkey);
        }
        self.handle_reply(rep, completion);
    }
}

/// One connection.
///
/// `drop` shuts the QP down (drain, destroy), then releases the regions,
/// the replies waiting for their invalidation and the free Send buffers
/// that `shared` keeps: they refer back to `shared`, and would otherwise
/// keep it, and the QP's device, forever.
pub(crate) struct Endpoint {
    pub(crate) shared: Arc<EpShared>,
    id: CmId<EpShared>,
    pub(crate) negotiated: Negotiated,
    pub(crate) device: CString,
    pub(crate) peer_private: ([u8; MAX_PEER_PRIVATE], usize),
    /// Chunk-planning limits for this connection.
    thresholds: Thresholds,
    /// One Send in this many is signaled (`Sizes::send_batch`).
    send_batch: u32,
    /// Sends posted unsignaled since the last signaled one (C:
    /// `re_send_count`, counting up).
    unsignaled: u32,
    /// The free Send buffers the sender took from [`EpShared::free_sends`]
    /// (with room for all), its own to take from without a lock.
    stash: FreeSends,
    /// Where each Call's pieces are cut, for its Read chunk and for its
    /// Write or Reply chunk: sized for the largest RPC when connecting,
    /// so that sending rarely allocates. Empty between Calls.
    pieces: (Pieces, Pieces),
    /// The memory regions, shared with the pool: a Call's REG_MRs are
    /// posted with its Send after the pool's lock is let go. `None` once
    /// the drop has them deregistered.
    mrs: Option<Arc<MrList<EpShared>>>,
    /// The REG_MRs of the Call being sent, prepared under the pool's lock
    /// and posted after it. Empty between Calls.
    pending: RegChain,
    /// The pad's REG_MR was posted: the first chain the QP took whole
    /// had it.
    pad_posted: bool,
}

/// The queue sizes of a connection on a device (C: `frwr_query_device`).
struct Sizes {
    max_requests: u32,
    sends: u32,
    /// One Send in this many is signaled, at least (C: `re_send_batch`;
    /// see `Endpoint::signal`).
    send_batch: u32,
    receives: u32,
    max_send_wr: u32,
    max_recv_wr: u32,
    depth: u32,
    max_segs: u32,
}

impl Sizes {
    /// For a transport of `slots` slots (its `max_reqs`).
    fn for_device(attrs: &FrwrAttrs, slots: u32) -> Result<Self> {
        let depth = attrs.depth.clamp(1, MAX_DATA_PAGES);
        // C: re_max_rdma_segs, the segments a chunk of the largest payload
        // needs, plus head and tail; the device must convey the largest
        // payload (C: frwr_query_device's last check).
        let max_segs = (MAX_DATA_PAGES.div_ceil(depth) + 2).min(MAX_SEGS as u32);
        if max_segs.saturating_mul(depth) < MAX_DATA_PAGES + 2 {
            return Err(ENOMEM);
        }
        // Each queue keeps one work request for its drain (C:
        // frwr_query_device, with RPCRDMA_MIN_SLOT_TABLE), and must hold
        // what the credits put in it: the receive queue a Receive per
        // credit and two per backchannel credit; the send queue two work
        // requests per Send buffer and per region (below). A device with
        // short queues gets fewer credits, as in C, never a queue that a
        // full window overflows.
        let room = attrs.max_qp_wr.saturating_sub(2 * BC_CREDITS + 1);
        let send_room = (attrs.max_qp_wr.saturating_sub(2 * MRS + 2) / 2)
            .saturating_sub(BC_CREDITS + EXTRA_SENDS);
        let max_requests = slots.min(room).min(send_room);
        if max_requests < 4 {
            return Err(ENOMEM);
        }
        // One Send buffer per credit and backchannel reply, and a few more.
        let sends = max_requests
            .saturating_add(BC_CREDITS)
            .saturating_add(EXTRA_SENDS);
        // Every credit's reply, and the server's backchannel Calls twice
        // over (C: credits + 2 * rb_bc_srv_max_requests).
        let receives = max_requests.saturating_add(2 * BC_CREDITS);
        // At least one Send in `max_requests / 8` is signaled (16 for the
        // default 128 slots), C's `re_send_batch`: it scales with the pool
        // (one buffer per credit, and a few), so that the Sends an idle
        // connection leaves unsignaled, which hold their buffers until the
        // next signaled one completes, stay an eighth of it. (C uses the
        // whole batch only once: `frwr_send` then resets its count to
        // what is left of it, so it signals every other Send from then on.)
        let send_batch = (max_requests / 8).max(1);
        // A work request keeps its send-queue slot until its completion, or
        // that of a later one, is polled. A region has a REG_MR and a
        // LOCAL_INV in the send queue at most (the pad a REG_MR only), and an
        // unsignaled REG_MR may keep its slot until the Send after it
        // completes (so one more per Send); every Send; the drain. An
        // unsignaled Send keeps its slot until a later completion is polled,
        // but also its buffer: the buffer comes back only after that
        // completion (its own, or the later signaled Send's), so the Sends
        // holding slots are never more than the Send buffers, with or without
        // signaling, and a stale REG_MR is still one per such Send. The
        // credits were capped above so that this fits the device; the `min`
        // only keeps the drain's slot should that ever change.
        let max_send_wr = sends
            .saturating_mul(2)
            .saturating_add(2 * MRS + 1)
            .min(attrs.max_qp_wr.saturating_sub(1))
            + 1;
        Ok(Self {
            max_requests,
            sends,
            send_batch,
            receives,
            max_send_wr,
            max_recv_wr: receives.saturating_add(1),
            depth,
            max_segs,
        })
    }
}

/// How far a connection attempt got, for its trace event.
#[derive(Default)]
struct Attempt {
    /// The device the route goes through, once resolved.
    device: Option<CString>,
    /// The credits the connection asks for, once known.
    credits: u32,
}

impl Endpoint {
    /// Connects to the transport's server: resolves the address and
    /// route, creates the QP, posts the Receives, and connects with our
    /// RFC 8797 private data; traces the attempt's end. Sleeps.
    /// `after_fault`: the connection before ended at a fault of the server
    /// ([`EpShared::peer_faulted`]).
    /// `recorded` counts the records of every connection of the transport
    /// (see [`Recorded`]).
    pub(crate) fn connect(
        xprt: Xprt,
        stats: &Arc<Stats>,
        recorded: &Arc<Recorded>,
        after_fault: bool,
    ) -> Result<Self> {
        let mut attempt = Attempt::default();
        let result = Self::establish(xprt, stats, recorded, after_fault, &mut attempt);
        trace::connect(
            &xprt,
            attempt.device.as_deref(),
            result.as_ref().map(|_| ()).map_err(|e| *e),
            attempt.credits,
        );
        result
    }

    /// [`Endpoint::connect`], saying in `attempt` how far it got.
    fn establish(
        xprt: Xprt,
        stats: &Arc<Stats>,
        recorded: &Arc<Recorded>,
        after_fault: bool,
        attempt: &mut Attempt,
    ) -> Result<Self> {
        let shared = Arc::pin_init(
            EpShared::new(xprt, stats.clone(), after_fault, recorded.clone()),
            GFP_KERNEL,
        )?;
        let mut id = CmId::new_in(shared.clone(), xprt.net())?;
        let dst = xprt.addr()?;

        id.resolve_addr(&dst, RESOLVE_TIMEOUT_MS)?;
        shared.events.await_event(CmEventKind::AddrResolved)?;
        id.resolve_route(RESOLVE_TIMEOUT_MS)?;
        shared.events.await_event(CmEventKind::RouteResolved)?;

        let device = id.device().ok_or(ENODEV)?;
        let device_name = CString::try_from(device.name())?;
        let invalidation_checks_key = device.invalidation_checks_key();
        // Only for the trace: without it, the event says no device.
        attempt.device = CString::try_from(device.name()).ok();
        let responder_resources = u8::try_from(device.max_qp_rd_atom()).unwrap_or(u8::MAX);
        // The credits to ask for, the Send buffers and Receives follow the
        // transport's slot table (C: `re_max_requests` from `max_reqs`),
        // as far as the device's queues allow.
        let slots = xprt.max_reqs();
        let sizes = Sizes::for_device(&FrwrAttrs::query(&id)?, slots)?;
        attempt.credits = sizes.max_requests;
        shared
            .max_requests
            .store(sizes.max_requests, Ordering::Relaxed);
        let pieces = (
            Pieces::with_capacity(MAX_PIECES)?,
            Pieces::with_capacity(MAX_PIECES)?,
        );
        id.create_qp(&QpCaps {
            cq_entries: sizes.max_send_wr.max(sizes.max_recv_wr) + 1,
            max_send_wr: sizes.max_send_wr,
            max_recv_wr: sizes.max_recv_wr,
            max_send_sge: 1,
            max_recv_sge: 1,
        })?;

        let local = connect::local(invalidation_checks_key);
        let recv_size = usize::try_from(local.recv_size)?;
        let send_size = usize::try_from(local.send_size)?;
        // From here on the endpoint drains on drop, and empties `shared`.
        let mut ep = Self {
            shared,
            id,
            negotiated: private_data::negotiate(&local, None),
            device: device_name,
            peer_private: ([0; MAX_PEER_PRIVATE], 0),
            thresholds: Thresholds::new(1024, 1024, 2, u32::MAX, 4096),
            send_batch: sizes.send_batch,
            unsignaled: 0,
            stash: FreeSends::with_room(usize::try_from(sizes.sends)?)?,
            pieces,
            mrs: None,
            pending: RegChain::new()?,
            pad_posted: false,
        };
        let qp = ep.id.qp()?.clone();
        // Each set is filled outside the locks (allocation sleeps), then
        // installed.
        let mut sends = KVVec::with_capacity(usize::try_from(sizes.sends)?, GFP_KERNEL)?;
        for _ in 0..sizes.sends {
            sends.push(SendBuf::<EpShared>::new(&qp, send_size)?, GFP_KERNEL)?;
        }
        let sends = FreeSends::new(sends)?;
        {
            let mut free = ep.shared.free_sends.lock();
            *free = sends;
            ep.shared.free_hint.store(free.len, Ordering::Relaxed);
        }
        let mut recvs = KVVec::with_capacity(usize::try_from(sizes.receives)?, GFP_KERNEL)?;
        for _ in 0..sizes.receives {
            recvs.push(RecvBuf::<EpShared>::new(&qp, recv_size)?, GFP_KERNEL)?;
        }
        let mut mrs = KVec::with_capacity(usize::try_from(REGIONS)?, GFP_KERNEL)?;
        let mut keys = KVec::with_capacity(usize::try_from(REGIONS)?, GFP_KERNEL)?;
        for i in 0..REGIONS {
            let (mr, key) = Mr::new(&qp, sizes.depth, i, ep.shared.clone())?;
            mrs.push(mr, GFP_KERNEL)?;
            keys.push(key, GFP_KERNEL)?;
        }
        // A record for every RPC the slot table can hold, not only those
        // the credits let fly: an answered RPC may keep its record (as the
        // mark that it was) until `buf_free`, after its credit went to
        // another.
        let mrs = Arc::new(mrs, GFP_KERNEL)?;
        ep.mrs = Some(mrs.clone());
        let pool = MrPool::new(
            mrs,
            keys,
            sizes.depth,
            usize::try_from(slots)?,
            recorded.clone(),
        )?;
        {
            let mut regs = ep.shared.regs.lock();
            regs.pool = pool;
            regs.gate = Gate::Open;
            #[cfg(rpcrdma_rs_test_hooks)]
            regs.pool.witness().trust_remote(invalidation_checks_key);
        }
        ep.shared
            .stats
            .mrs_allocated
            .fetch_add(u64::from(REGIONS), Ordering::Relaxed);
        // With no RNR retries the server must never find no Receive: post
        // them all before connecting, as the C client does. Each belongs to
        // the QP until its completion hands it back.
        for rep in recvs {
            rep.post(&qp).map_err(|(_, e)| e)?;
        }
        xprt.reset_cwnd();
        let sent = local.private_data().to_bytes();
        ep.id
            .connect(&requester_params(&sent, responder_resources))?;
        ep.shared.events.await_event(CmEventKind::Established)?;
        ep.peer_private = ep.shared.events.peer_private();
        let (bytes, len) = &ep.peer_private;
        let ignored = params::ignore_peer_private();
        let peer = if ignored { None } else { bytes.get(..*len) };
        ep.negotiated = private_data::negotiate(&local, peer);
        let absence = peer.and_then(private_data::absence);
        if ignored {
            trace::private_data(&xprt, &ep.negotiated, fmt!("ignored (test hook)"));
        } else if let Some(why) = absence {
            trace::private_data(&xprt, &ep.negotiated, fmt!("{}", why));
        } else {
            trace::private_data(&xprt, &ep.negotiated, fmt!("received"));
        }
        // Once per connection; not when told to ignore what the server
        // sent (a choice of ours, not the server's fault).
        // Information: RFC 8797 private data is optional, and its defaults
        // serve.
        if let Some(why) = absence {
            if sunrpc::ratelimit(Budget::Info) {
                pr_info!(
                    "{}: no RPC-over-RDMA private data from the server ({}); inline thresholds {}/{}\n",
                    xprt.peer(),
                    why,
                    ep.negotiated.inline_send,
                    ep.negotiated.inline_recv
                );
            }
        }
        // The Call is copied into one Send buffer, so the device's Send SGE
        // limit never applies.
        ep.thresholds = Thresholds::new(
            ep.negotiated.inline_send,
            ep.negotiated.inline_recv,
            sizes.max_segs,
            u32::MAX,
            u32::try_from(PAGE_SIZE)?,
        );
        // A disconnect already reported stays reported: `live` was armed
        // by ESTABLISHED, and cleared by the loss.
        Ok(ep)
    }

    /// Marshals `rqst` into a free Send buffer and posts it; a backchannel
    /// reply (`bc_reply`) grants the server its backchannel credits and
    /// goes inline only.
    pub(crate) fn send(&mut self, rqst: &Rqst<'_>, bc_reply: bool) -> Result {
        let (buf, left) = match self.take_send() {
            Some(taken) => taken,
            None => {
                let shared = &self.shared;
                shared.stats.empty_sendctx_q.fetch_add(1, Ordering::Relaxed);
                shared.xprt.wait_for_buffer_space();
                // A completion may have freed one before we marked the wait.
                self.take_send().ok_or(EAGAIN)?
            }
        };
        let mut slot = Some(buf);
        let result = self.post_one(&mut slot, rqst, bc_reply, left);
        if let Some(buf) = slot {
            // Not posted: back to the stash.
            drop(self.stash.put(buf));
        }
        result
    }

    /// A free Send buffer, and how many others are free at least: from the
    /// stash, which takes every buffer the completions handed back, under
    /// one hold of their lock, when it is empty (so the lock is taken once
    /// a batch of Sends, not once a Send).
    fn take_send(&mut self) -> Option<(SendBuf<EpShared>, usize)> {
        if self.stash.len == 0 {
            let mut free = self.shared.free_sends.lock();
            free.move_all(&mut self.stash);
            self.shared.free_hint.store(0, Ordering::Relaxed);
        }
        let (buf, left) = self.stash.take()?;
        // Only this sender takes from `free_sends`: the hint is no more
        // than it holds, and `left` no more than are free.
        let left = left.saturating_add(self.shared.free_hint.load(Ordering::Relaxed));
        Some((buf, left))
    }

    /// Whether to signal the next Send, `left` Send buffers at least being
    /// free once it took its own (`take_send`; fewer only signals more)
    /// (C: `frwr_send`). The pool is the stash and `free_sends`. An
    /// unsignaled Send keeps its
    /// buffer until a later signaled Send completes successfully (or the
    /// connection ends), so:
    ///
    /// - one Send in `send_batch` is signaled, which bounds what the Sends
    ///   after the last signaled one hold: `send_batch - 1` buffers at
    ///   most (all an idle connection keeps);
    /// - and every Send that leaves fewer than `send_batch` buffers free,
    ///   in particular the one that takes the last. So whenever the pool
    ///   is empty, the last Send to empty it (Sends are taken and posted
    ///   one at a time, by the holder of the transport's write lock) was posted
    ///   signaled, and its
    ///   completion has not been handled: no buffer came back since
    ///   (after one did, only a later Send could empty the pool again),
    ///   handling that completion puts its buffer back, and a Send that
    ///   could not be posted puts its own back at once. That completion
    ///   will come and wake the waiters: a success hands back it and
    ///   every unsignaled Send before it, a failure or a flush hands back
    ///   the Send and loses the connection, and the drain flushes it at
    ///   teardown. So a sender that finds no free buffer (`send`, which
    ///   sunrpc wakes with `write_space`) always waits for a completion
    ///   that will come, never for buffers stranded behind an unsignaled
    ///   Send.
    fn signal(&self, left: usize) -> bool {
        let batch = self.send_batch;
        self.unsignaled.saturating_add(1) >= batch
            || usize::try_from(batch).map_or(true, |batch| left < batch)
    }

    /// Marshals `rqst` into the Send buffer in `slot` and posts it, which
    /// takes it out of `slot`: `marshal.rs` plans and encodes the Call,
    /// this registers its chunks and posts, signaled or not (`left`
    /// buffers are free besides this one; see `signal`). The chunks'
    /// REG_MRs are prepared under `regs` and posted with the Send, in one
    /// chain, after it is let go (C: `frwr_send`): the Receive handler and
    /// `buf_free` do not wait for the device. Until the chain is posted
    /// the server has not seen the Call, so no reply of its can answer it,
    /// and only this sender posts REG_MRs, with the transport's write lock
    /// (`XPRT_LOCKED`), which the teardown that takes the regions away
    /// holds too.
    fn post_one(
        &mut self,
        slot: &mut Option<SendBuf<EpShared>>,
        rqst: &Rqst<'_>,
        bc_reply: bool,
        left: usize,
    ) -> Result {
        let shared = &self.shared;
        let (reads, writes) = &mut self.pieces;
        let mut layouts = Layouts::new();
        let mut prepared = marshal::prepare(
            rqst,
            bc_reply,
            &self.thresholds,
            shared.max_requests.load(Ordering::Relaxed),
            BC_CREDITS,
            &mut layouts,
            reads,
            writes,
        )?;

        let stats = &shared.stats;
        let inline_send = self.negotiated.inline_send;
        let (read_pieces, write_pieces) = prepared.pieces();
        if read_pieces.is_empty() && write_pieces.is_empty() {
            // A Call with no chunk registers nothing: it needs neither the
            // pool nor its lock, and is copied into the buffer without it.
            // Nor the gate: it is open while the sender has the endpoint
            // (only the endpoint's drop closes it), and the QP refuses a
            // post once it is shut down.
            let filled = match slot.as_mut() {
                Some(buf) => {
                    buf.fill_with(|out| prepared.encode(&shared.xprt, out, inline_send, None, None))
                }
                None => Err(EINVAL),
            };
            let filled = filled.inspect_err(|_| {
                stats.failed_marshal_count.fetch_add(1, Ordering::Relaxed);
            })?;
            let xid = prepared.xid();
            prepared.count(stats);
            prepared.trace(&shared.xprt);
            drop(prepared);
            return self.post_filled(slot, None, filled, left, false, xid);
        }
        let mut regs = shared.regs.lock();
        if !matches!(regs.gate, Gate::Open) {
            return Err(errno::enotconn());
        }
        let pool = &mut regs.pool;
        let rec = match pool.register(
            prepared.xid(),
            read_pieces,
            write_pieces,
            prepared.offers_reply_chunk(),
            prepared.offers_write_pad(),
        ) {
            Ok(rec) => rec,
            Err(e) => {
                if e == EAGAIN {
                    // Regions come back as replies arrive.
                    stats.mr_waits.fetch_add(1, Ordering::Relaxed);
                    trace::mr_wait(&shared.xprt, prepared.xid());
                    shared.xprt.wait_for_buffer_space();
                } else {
                    stats.failed_marshal_count.fetch_add(1, Ordering::Relaxed);
                    trace::map_error(&shared.xprt, prepared.xid(), e);
                }
                return Err(e);
            }
        };

        let pad = pool.write_pad(rec);
        let filled = match slot.as_mut() {
            Some(buf) => buf.fill_with(|out| {
                let segments = Some(pool.segments(rec));
                prepared.encode(&shared.xprt, out, inline_send, segments, pad)
            }),
            None => Err(EINVAL),
        };
        let filled = match filled {
            Ok(len) => len,
            Err(e) => {
                let forgotten = pool.forget_unposted(rec);
                stats.failed_marshal_count.fetch_add(1, Ordering::Relaxed);
                if !forgotten {
                    // Stranded until the drain: `buf_free` waits for it.
                    drop(regs);
                    shared.connection_lost(Loss::Invalidate);
                }
                return Err(e);
            }
        };
        self.pending.clear();
        let mut pad_chained = false;
        // The pad's REG_MR first, in the first chain (C posts it once,
        // when connected: `frwr_wp_create`): no Send can offer the pad
        // before it is posted, as only a Call with a Write chunk, so
        // with REG_MRs to chain, offers it. Prepared again until a
        // chain with it is posted whole; a REG_MR of it that is still
        // pending, or that a refused chain posted, makes this `EBUSY`
        // (never registered twice), and the connection is lost.
        if !self.pad_posted {
            if pool.prepare_pad(&mut self.pending).is_err() {
                // Nothing of the record was prepared: it goes.
                pool.forget_unposted(rec);
                drop(regs);
                shared.connection_lost(Loss::Post("REG_MR"));
                return Err(errno::enotconn());
            }
            pad_chained = true;
        }
        if pool.prepare_regs(rec, &mut self.pending).is_err() {
            // Stranded until the drain: `buf_free` waits for it.
            drop(regs);
            shared.connection_lost(Loss::Post("REG_MR"));
            return Err(errno::enotconn());
        }
        drop(regs);
        let xid = prepared.xid();
        prepared.count(stats);
        prepared.trace(&shared.xprt);
        drop(prepared);
        self.post_filled(slot, Some(rec), filled, left, pad_chained, xid)
    }

    /// Posts the Send buffer in `slot`, `filled` bytes of Call `xid`, with
    /// the REG_MRs prepared for its record `rec` (and the pad's, when
    /// `pad_chained`), if it has one; `left` buffers are free besides it.
    fn post_filled(
        &mut self,
        slot: &mut Option<SendBuf<EpShared>>,
        rec: Option<usize>,
        filled: usize,
        left: usize,
        pad_chained: bool,
        xid: u32,
    ) -> Result {
        let shared = &self.shared;
        let stats = &shared.stats;
        // The buffer belongs to the QP until its completion (or, if not
        // signaled, that of a later signaled Send) hands it back.
        // A Send of a page or more is signaled too: siw hands such an
        // unsignaled Send's pages to TCP without copying them when they are
        // not slab pages (Send buffers above 8 KiB, with a large
        // max_inline_write), and reports the Send done before TCP is done
        // with them. Its buffer must not be reused until its own completion
        // (C signals every Send that carries mapped pages, for the same
        // reason).
        let signaled = self.signal(left) || filled >= PAGE_SIZE;
        // Not posted, REG_MRs prepared or not, the cases that cannot be
        // (`fill_with` found the buffer; the pool's regions are these)
        // fail as a refused post would: the record waits for the drain.
        let posted = match (slot.take(), rec, self.mrs.as_deref(), self.id.qp()) {
            (Some(buf), None, _, Ok(qp)) => buf.post(qp, signaled),
            (Some(buf), Some(_), Some(mrs), Ok(qp)) => {
                buf.post_chained(qp, signaled, mrs, &mut self.pending)
            }
            (buf, _, _, _) => Err((buf, EINVAL)),
        };
        if let Err((buf, _)) = posted {
            // Unless the device took the Send for all its error: then its
            // completion, or the QP's end, hands the buffer back. REG_MRs
            // left prepared stay pending, their regions mapped until the
            // drain; the next Call clears them.
            *slot = buf;
            let what = if let Some(rec) = rec {
                // The device may have taken some of the REG_MRs: their
                // regions say so, and the record waits for the drain
                // (`buf_free` waits for it).
                shared.regs.lock().pool.strand(rec, xid);
                "REG_MR chain"
            } else {
                "Send"
            };
            shared.connection_lost(Loss::Post(what));
            return Err(errno::enotconn());
        }
        // The QP took the whole chain, the pad's REG_MR with it.
        self.pad_posted |= pad_chained;
        bump(&stats.sends, 1);
        self.unsignaled = if signaled {
            bump(&stats.sends_signaled, 1);
            0
        } else {
            self.unsignaled.saturating_add(1)
        };
        Ok(())
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        let shared = &self.shared;
        // No Send, REG_MR or LOCAL_INV is posted from here on (Receives
        // are, until `quiesce` shuts the QP, whose drain flushes them);
        // regions stay held (and `buf_free` waits) until the drain below.
        // Under the same lock as `Established` arms `live`: once closed,
        // nothing reports a loss.
        let was_live = {
            let mut regs = shared.regs.lock();
            regs.gate = Gate::Closing;
            shared.live.swap(false, Ordering::AcqRel)
        };
        // Closed on purpose: not a loss to report, but the end of the
        // connection all the same (unless a loss was reported before).
        if was_live {
            trace::disconnect(&shared.xprt, fmt!("closed"));
        }
        let _ = self.id.disconnect();
        // Room for every record's action, allocated outside the lock.
        let records = shared.regs.lock().pool.records();
        let mut waiting = KVVec::with_capacity(records, GFP_KERNEL).unwrap_or(KVVec::new());
        if let Err(e) = self.id.quiesce() {
            // The QP and its CQs are destroyed all the same: just as final.
            pr_err!(
                "{}: could not drain the connection ({:?}); destroyed its queue pair\n",
                shared.xprt.peer(),
                e
            );
        }
        // Quiesced: the QP reaches nothing and no completion will come. Unmap
        // and free every region, let go of the RPCs whose replies waited
        // for invalidation (they are retransmitted), wake `buf_free`.
        let regions = {
            let mut regs = shared.regs.lock();
            regs.gate = Gate::Drained;
            regs.pool.release_drained(&mut waiting);
            regs.pool.take_regions()
        };
        drop(waiting);
        shared.released.notify_all();
        // The Send buffers came back with their completions, or with a later
        // signaled Send's (or were freed with the QP); the Receives were
        // freed by their handler, or with the QP.
        let sends = core::mem::replace(&mut *shared.free_sends.lock(), FreeSends::empty());
        drop(sends);
        // Deregistering sleeps: outside the locks. Ours is the last hold
        // on them (the sender's, `&mut self`, is done).
        drop(regions);
        drop(self.mrs.take());
    }
}
