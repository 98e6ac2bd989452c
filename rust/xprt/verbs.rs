// SPDX-License-Identifier: GPL-2.0

//! One connection of a transport (the C `verbs.c`: `rpcrdma_ep`,
//! `rpcrdma_xprt_connect`, `rpcrdma_xprt_disconnect`, the Send and Receive
//! buffers): its connection manager identifier, queue pair, pre-posted
//! Receives and Send buffers, and what was negotiated with the peer.

use super::{
    connect::{requester_params, ConnEvents, MAX_PEER_PRIVATE, RESOLVE_TIMEOUT_MS},
    frwr::{self, MrPool, Pending, MAX_DATA_PAGES, MAX_SEGS},
    marshal, settings,
    stats::Stats,
};
use crate::{
    errno,
    proto::{
        chunks::{self, CallLayout, CallPlan, ReplyLayout, ReplyPlan, Thresholds},
        header::{Message, ReadSegment, Segment},
        private_data::{self, Negotiated},
    },
    rdma::{
        CmEvent, CmEventKind, CmHandler, CmId, Completion, CompletionHandler, FrwrAttrs, Mr,
        MrHandler, Piece, QpCaps, QpHandle, WorkBuf,
    },
    sunrpc::{self, Rqst, XdrLayout, Xprt},
};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use kernel::{
    alloc::KVec,
    fmt, new_condvar, new_spinlock,
    page::PAGE_SIZE,
    prelude::*,
    str::CString,
    sync::{Arc, CondVar, SpinLock},
};

/// Credits asked of the server in every Call (C: `re_max_requests`, the
/// slot table size).
pub(crate) const MAX_REQUESTS: u32 = 128;
/// Receives kept posted: one per credit, and a few for replies that pass
/// their Call's Send completion.
const RECEIVES: u32 = MAX_REQUESTS + 8;
/// Send buffers: a Send completes after its reply sometimes, so more than
/// the credits.
const SENDS: u32 = MAX_REQUESTS + 8;
/// Tags at and above this are Send buffers; below, Receives.
const SEND_TAG_BASE: u32 = 0x1_0000;
/// Memory regions per connection: enough for every credit's RPC to have a
/// few chunks registered; an RPC that finds none waits for one.
const MRS: u32 = 256;

/// The indices of the Send buffers that are not posted, as a stack.
///
/// # Invariants
///
/// `stack[..len]` holds distinct indices below `SENDS`.
struct FreeSends {
    stack: [u32; SENDS as usize],
    len: usize,
}

impl FreeSends {
    fn full() -> Self {
        let mut stack = [0; SENDS as usize];
        for (i, slot) in (0..).zip(stack.iter_mut()) {
            *slot = i;
        }
        // INVARIANT: every index once.
        Self {
            stack,
            len: stack.len(),
        }
    }

    fn take(&mut self) -> Option<u32> {
        let index = *self.stack.get(self.len.checked_sub(1)?)?;
        self.len -= 1;
        Some(index)
    }

    /// Returns `index`, taken before, to the stack.
    fn put(&mut self, index: u32) {
        if let Some(slot) = self.stack.get_mut(self.len) {
            *slot = index;
            self.len += 1;
        }
    }
}

/// What the connection's handlers share: connection manager events, the
/// gate that stops reposting at teardown, the free Send buffers, credits.
#[pin_data]
pub(crate) struct EpShared {
    #[pin]
    events: ConnEvents,
    pub(crate) xprt: Xprt,
    pub(crate) stats: Arc<Stats>,
    /// The QP to repost Receives on, while the connection is open.
    #[pin]
    gate: SpinLock<Option<QpHandle>>,
    /// The Send buffers not posted.
    #[pin]
    free_sends: SpinLock<FreeSends>,
    /// The connection was established and not yet torn down: losing it
    /// must be reported to sunrpc (once).
    live: AtomicBool,
    /// The server's current grant.
    pub(crate) credits: AtomicU32,
    /// The memory regions and which RPC holds each. Lock order: `gate`,
    /// then `pool`.
    #[pin]
    pub(crate) pool: SpinLock<MrPool>,
    /// Signalled when regions are freed, for `buf_free`.
    #[pin]
    released: CondVar,
}

impl EpShared {
    fn new(xprt: Xprt, stats: Arc<Stats>) -> impl PinInit<Self> {
        pin_init!(Self {
            events <- ConnEvents::new(),
            xprt,
            stats,
            gate <- new_spinlock!(None),
            free_sends <- new_spinlock!(FreeSends::full()),
            live: AtomicBool::new(false),
            credits: AtomicU32::new(1),
            pool <- new_spinlock!(MrPool::empty()),
            released <- new_condvar!(),
        })
    }

    /// Invalidates what RPC `xid` has registered (except `remote_rkey`,
    /// which the server invalidated), then runs `pending`: at once if
    /// nothing is left registered, else when the last LOCAL_INV completes.
    pub(crate) fn release_rpc(&self, xid: u32, remote_rkey: Option<u32>, pending: Pending) {
        let now = {
            let gate = self.gate.lock();
            let mut pool = self.pool.lock();
            pool.invalidate(xid, remote_rkey, gate.as_ref(), pending, self)
        };
        if let Some(pending) = now {
            self.run_pending(pending);
        }
    }

    fn run_pending(&self, pending: Pending) {
        match pending {
            Pending::Complete(rqst, result) => rqst.complete(result),
            Pending::Wake => self.released.notify_all(),
        }
        self.xprt.write_space();
    }

    /// `buf_free`: the RPC's memory is about to be freed. If no reply came,
    /// its regions are still reachable: invalidate them and wait. Sleeps.
    pub(crate) fn release_rpc_sync(&self, xid: u32) {
        if !self.pool.lock().holds(xid) {
            return;
        }
        self.release_rpc(xid, None, Pending::Wake);
        let mut pool = self.pool.lock();
        while pool.holds(xid) {
            self.released.wait(&mut pool);
        }
    }

    /// The connection failed: have sunrpc close it and reconnect. Only the
    /// first report counts; teardown clears `live` first, so a connection
    /// being closed on purpose does not report itself.
    pub(crate) fn connection_lost(&self) {
        if self.live.swap(false, Ordering::AcqRel) {
            self.xprt.force_disconnect();
        }
    }

    fn repost(&self, buf: &WorkBuf<'_, Self>) {
        let gate = self.gate.lock();
        let Some(qp) = gate.as_ref() else {
            return;
        };
        // SAFETY: The gate is open, so the QP exists and is not drained
        // (teardown closes the gate, under this lock, before draining); the
        // buffer lives in the endpoint, which drains before it goes.
        let posted = unsafe { qp.post_recv(buf) };
        drop(gate);
        if posted.is_err() {
            self.connection_lost();
        }
    }
}

impl CmHandler for EpShared {
    fn handle(&self, event: &CmEvent<'_>) {
        CmHandler::handle(&self.events, event);
        match event.kind() {
            CmEventKind::Disconnected | CmEventKind::DeviceRemoval | CmEventKind::AddrChange => {
                self.connection_lost()
            }
            _ => {}
        }
    }
}

impl MrHandler for EpShared {
    fn invalidated(&self, mr: &Mr<Self>, completion: &Completion) {
        if !completion.is_success() {
            self.connection_lost();
        }
        let pending = self.pool.lock().invalidated(mr.index());
        if let Some(pending) = pending {
            self.run_pending(pending);
        }
    }

    fn reg_failed(&self, _mr: &Mr<Self>, _completion: &Completion) {
        self.connection_lost();
    }
}

impl CompletionHandler for EpShared {
    fn complete(&self, buf: &WorkBuf<'_, Self>, completion: &Completion, data: &[u8]) {
        let tag = buf.tag();
        if !completion.is_success() && !completion.is_flush() && sunrpc::warn_ratelimit() {
            // E.g. a message longer than the Receive buffer (local length
            // error): the connection is reset and the RPC retransmitted.
            pr_warn!(
                "{}: {} failed with completion status {}\n",
                self.xprt.peer(),
                if tag >= SEND_TAG_BASE {
                    "Send"
                } else {
                    "Receive"
                },
                completion.status
            );
        }
        if tag >= SEND_TAG_BASE {
            if !completion.is_success() {
                self.connection_lost();
            }
            self.free_sends.lock().put(tag - SEND_TAG_BASE);
            self.xprt.write_space();
            return;
        }
        if !completion.is_success() {
            // Flushed at teardown, or the connection failed.
            self.connection_lost();
            return;
        }
        marshal::handle_reply(self, data, completion);
        self.repost(buf);
    }
}

/// One connection.
///
/// # Invariants
///
/// The buffers are declared before `id` and drop first; `drop` drains the
/// QP before any of them goes.
pub(crate) struct Endpoint {
    pub(crate) shared: Arc<EpShared>,
    sends: KVec<Pin<KBox<WorkBuf<'static, EpShared>>>>,
    reps: KVec<Pin<KBox<WorkBuf<'static, EpShared>>>>,
    id: CmId<EpShared>,
    pub(crate) negotiated: Negotiated,
    pub(crate) device: CString,
    pub(crate) peer_private: ([u8; MAX_PEER_PRIVATE], usize),
    /// Chunk-planning limits for this connection.
    thresholds: Thresholds,
    /// Pages one memory region maps.
    depth: u32,
}

impl Endpoint {
    /// Connects to the transport's server: resolves the address and
    /// route, creates the QP, posts the Receives, and connects with our
    /// RFC 8797 private data. Sleeps.
    pub(crate) fn connect(xprt: Xprt, stats: &Arc<Stats>) -> Result<Self> {
        let shared = Arc::pin_init(EpShared::new(xprt, stats.clone()), GFP_KERNEL)?;
        // SAFETY: The xprt holds its namespace, and outlives the endpoint
        // (type invariant of `Xprt`).
        let mut id = unsafe { CmId::new_in(shared.clone(), xprt.net()) }?;
        let dst = xprt.addr()?;

        id.resolve_addr(&dst, RESOLVE_TIMEOUT_MS)?;
        shared.events.await_event(CmEventKind::AddrResolved)?;
        id.resolve_route(RESOLVE_TIMEOUT_MS)?;
        shared.events.await_event(CmEventKind::RouteResolved)?;

        let device = id.device().ok_or(ENODEV)?;
        let device_name = CString::try_from_fmt(fmt!("{}", device.name()))?;
        let responder_resources = u8::try_from(device.max_qp_rd_atom()).unwrap_or(u8::MAX);
        let attrs = FrwrAttrs::query(&id)?;
        let depth = attrs.depth.min(MAX_DATA_PAGES);
        // Each region has a REG_MR and a LOCAL_INV outstanding at most.
        let max_send_wr = (SENDS + 2 * MRS + 8).min(attrs.max_qp_wr);
        id.create_qp(&QpCaps {
            cq_entries: max_send_wr.max(RECEIVES) + 16,
            max_send_wr,
            max_recv_wr: RECEIVES,
            max_send_sge: 1,
            max_recv_sge: 1,
        })?;
        shared
            .stats
            .mrs_allocated
            .fetch_add(u64::from(MRS), Ordering::Relaxed);

        let local = settings::local();
        let recv_size = usize::try_from(local.recv_size)?;
        let send_size = usize::try_from(local.send_size)?;
        let mut reps = KVec::with_capacity(usize::try_from(RECEIVES)?, GFP_KERNEL)?;
        for i in 0..RECEIVES {
            // SAFETY: Kept in the endpoint, which drops its buffers first.
            let buf = unsafe { WorkBuf::new_unbound(&id, recv_size, false, i, shared.clone()) }?;
            reps.push(buf, GFP_KERNEL)?;
        }
        let mut sends = KVec::with_capacity(usize::try_from(SENDS)?, GFP_KERNEL)?;
        for i in 0..SENDS {
            let tag = SEND_TAG_BASE + i;
            // SAFETY: As above.
            let buf = unsafe { WorkBuf::new_unbound(&id, send_size, true, tag, shared.clone()) }?;
            sends.push(buf, GFP_KERNEL)?;
        }

        // From here on the endpoint drains on drop.
        let mut ep = Self {
            shared,
            sends,
            reps,
            id,
            negotiated: private_data::negotiate(&local, None),
            device: device_name,
            peer_private: ([0; MAX_PEER_PRIVATE], 0),
            thresholds: Thresholds::new(1024, 1024, 2, u32::MAX, 4096),
            depth,
        };
        // Filled outside the lock (allocation sleeps), then installed.
        let mut pool = MrPool::empty();
        for i in 0..MRS {
            // SAFETY: The pool is emptied and its regions dropped after
            // the drain and before the identifier goes (`Endpoint::drop`).
            let mr = unsafe { Mr::new(&ep.id, depth, i, ep.shared.clone()) }?;
            pool.add(mr)?;
        }
        *ep.shared.pool.lock() = pool;
        *ep.shared.gate.lock() = Some(ep.id.qp_handle()?);
        // With no RNR retries the server must never find no Receive: post
        // them all before connecting, as the C client does.
        for rep in &ep.reps {
            // SAFETY: Not posted yet; drained in `drop` before it goes.
            unsafe { ep.id.post_recv(rep) }?;
        }
        xprt.reset_cwnd();
        let sent = local.private_data().to_bytes();
        ep.id
            .connect(&requester_params(&sent, responder_resources))?;
        ep.shared.events.await_event(CmEventKind::Established)?;
        ep.peer_private = ep.shared.events.peer_private();
        let (bytes, len) = &ep.peer_private;
        let peer = if settings::ignore_peer_private() {
            None
        } else {
            bytes.get(..*len)
        };
        ep.negotiated = private_data::negotiate(&local, peer);
        // C: re_max_rdma_segs, the segments a chunk of the largest payload
        // needs, plus head and tail.
        let max_segs = (MAX_DATA_PAGES.div_ceil(depth) + 2).min(MAX_SEGS as u32);
        // The Call is copied into one Send buffer, so the device's Send SGE
        // limit never applies.
        ep.thresholds = Thresholds::new(
            ep.negotiated.inline_send,
            ep.negotiated.inline_recv,
            max_segs,
            u32::MAX,
            u32::try_from(PAGE_SIZE)?,
        );
        ep.shared.live.store(true, Ordering::Release);
        Ok(ep)
    }

    /// Marshals `rqst` into a free Send buffer and posts it.
    pub(crate) fn send(&mut self, rqst: &Rqst<'_>, credit: u32) -> Result {
        let shared = &self.shared;
        let index = match shared.free_sends.lock().take() {
            Some(index) => index,
            None => {
                shared.stats.empty_sendctx_q.fetch_add(1, Ordering::Relaxed);
                shared.xprt.wait_for_buffer_space();
                // A completion may have freed one before we marked the wait.
                shared.free_sends.lock().take().ok_or(EAGAIN)?
            }
        };
        let result = self.post_one(usize::try_from(index)?, rqst, credit);
        if result.is_err() {
            self.shared.free_sends.lock().put(index);
        }
        result
    }

    fn post_one(&mut self, index: usize, rqst: &Rqst<'_>, credit: u32) -> Result {
        let shared = self.shared.clone();
        let xid = rqst.xid();
        let call = rqst.layout(false)?;
        let reply = rqst.layout(true)?;
        let plan = chunks::plan(
            &call_layout(&call),
            &reply_layout(&reply),
            call.raw.ddp_allowed,
            &self.thresholds,
        )
        .map_err(|_| errno::emsgsize())?;

        // What to register, cut into pages before taking any lock.
        let mut read_pieces = KVec::new();
        match plan.call {
            CallPlan::Inline { .. } => {}
            CallPlan::ReadChunk(_) => frwr::page_pieces(&call, &mut read_pieces)?,
            CallPlan::LongCall { .. } => whole_buffer_pieces(&call, &mut read_pieces)?,
        }
        let mut write_pieces = KVec::new();
        match plan.reply {
            ReplyPlan::Inline => {}
            ReplyPlan::WriteChunk(_) => frwr::page_pieces(&reply, &mut write_pieces)?,
            ReplyPlan::ReplyChunk { .. } => whole_buffer_pieces(&reply, &mut write_pieces)?,
        }

        let stats = &shared.stats;
        let gate = shared.gate.lock();
        let qp = gate.as_ref().ok_or_else(errno::enotconn)?;
        let mut pool = shared.pool.lock();
        let mut regs = Registrations::new();
        let mut result = regs.map(&mut pool, &read_pieces, false, xid, self.depth);
        if result.is_ok() {
            result = regs.map(&mut pool, &write_pieces, true, xid, self.depth);
        }
        if let Err(e) = result {
            pool.release_unposted(regs.indices());
            if e == EAGAIN {
                // Regions come back as replies arrive.
                shared.xprt.wait_for_buffer_space();
            } else {
                stats.failed_marshal_count.fetch_add(1, Ordering::Relaxed);
            }
            return Err(e);
        }

        let position = match plan.call {
            CallPlan::ReadChunk(r) => r.position,
            _ => 0,
        };
        let mut read_list = [ReadSegment::default(); MAX_SEGS];
        for (dst, seg) in read_list.iter_mut().zip(regs.read_segs()) {
            *dst = ReadSegment {
                position,
                segment: *seg,
            };
        }
        let read_list = read_list.get(..regs.read_count).unwrap_or(&[]);
        let written = regs.write_segs();
        let write_chunk = [written];
        let (write_list, reply_chunk): (&[&[Segment]], _) = match plan.reply {
            ReplyPlan::WriteChunk(_) => (&write_chunk, None),
            ReplyPlan::ReplyChunk { .. } => (&[], Some(written)),
            ReplyPlan::Inline => (&[], None),
        };
        let msg = Message {
            xid,
            credit,
            proc: plan.call.proc(),
            read_list,
            write_list,
            reply_chunk,
        };
        let inline_send = usize::try_from(self.negotiated.inline_send)?;
        let buf = self.sends.get_mut(index).ok_or(EINVAL)?;
        let filled = buf.as_mut().fill_with(|out| {
            let out = out.get_mut(..inline_send).ok_or(EINVAL)?;
            marshal::marshal(out, rqst, &msg, &plan.call, &call)
        });
        let len = match filled {
            Ok(len) => u32::try_from(len)?,
            Err(e) => {
                pool.release_unposted(regs.indices());
                stats.failed_marshal_count.fetch_add(1, Ordering::Relaxed);
                return Err(e);
            }
        };
        for &i in regs.indices() {
            if pool.post_reg(i, qp).is_err() {
                drop(pool);
                drop(gate);
                shared.connection_lost();
                return Err(errno::enotconn());
            }
        }
        drop(pool);
        drop(gate);
        count_chunks(stats, &plan, &regs);

        let buf = self.sends.get(index).ok_or(EINVAL)?;
        // SAFETY: Taken from the free list, so not posted; the endpoint
        // drains before its buffers go.
        unsafe { self.id.post_send(buf, len) }.map_err(|_| errno::enotconn())
    }

    /// The thresholds in use and the peer's private data, for reports.
    pub(crate) fn peer(&self) -> Option<private_data::PrivateData> {
        self.negotiated.peer
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        // Closed on purpose: not a loss to report.
        self.shared.live.store(false, Ordering::Release);
        // No Receive is reposted, nothing registered, from here on.
        *self.shared.gate.lock() = None;
        let _ = self.id.disconnect();
        // Every posted buffer completes (flushed) before the buffers go.
        self.id.drain();
        // The peer cannot reach any region now: unmap and free them all
        // (deregistering sleeps, so outside the lock), then wake any
        // `buf_free` waiting for one.
        let mrs = {
            let mut pool = self.shared.pool.lock();
            pool.release_all();
            pool.take_all()
        };
        drop(mrs);
        self.shared.released.notify_all();
    }
}

/// The regions one RPC has mapped, with their segments.
struct Registrations {
    indices: [u32; 2 * MAX_SEGS],
    segs: [Segment; 2 * MAX_SEGS],
    count: usize,
    read_count: usize,
}

impl Registrations {
    fn new() -> Self {
        Self {
            indices: [0; 2 * MAX_SEGS],
            segs: [Segment::default(); 2 * MAX_SEGS],
            count: 0,
            read_count: 0,
        }
    }

    /// Maps `pieces` into as many regions as they need.
    fn map(
        &mut self,
        pool: &mut MrPool,
        pieces: &[Piece],
        writing: bool,
        xid: u32,
        depth: u32,
    ) -> Result {
        let start = self.count;
        for run in frwr::runs(pieces, usize::try_from(depth)?) {
            if self.count - start >= MAX_SEGS {
                return Err(errno::emsgsize());
            }
            let (Some(index_slot), Some(seg_slot)) = (
                self.indices.get_mut(self.count),
                self.segs.get_mut(self.count),
            ) else {
                return Err(errno::emsgsize());
            };
            let (index, seg) = pool.map(run, writing, xid)?;
            *index_slot = index;
            *seg_slot = seg;
            self.count += 1;
        }
        if !writing {
            self.read_count = self.count;
        }
        Ok(())
    }

    fn indices(&self) -> &[u32] {
        self.indices.get(..self.count).unwrap_or(&[])
    }

    fn read_segs(&self) -> &[Segment] {
        self.segs.get(..self.read_count).unwrap_or(&[])
    }

    fn write_segs(&self) -> &[Segment] {
        self.segs.get(self.read_count..self.count).unwrap_or(&[])
    }
}

fn count_chunks(stats: &Stats, plan: &chunks::Plan, regs: &Registrations) {
    let n = |s: &[Segment]| u64::try_from(s.len()).unwrap_or(0);
    let bytes = |s: &[Segment]| s.iter().map(|s| u64::from(s.length)).sum::<u64>();
    stats
        .read_chunk_count
        .fetch_add(n(regs.read_segs()), Ordering::Relaxed);
    match plan.reply {
        ReplyPlan::WriteChunk(_) => {
            stats
                .write_chunk_count
                .fetch_add(n(regs.write_segs()), Ordering::Relaxed);
        }
        ReplyPlan::ReplyChunk { .. } => {
            stats
                .reply_chunk_count
                .fetch_add(n(regs.write_segs()), Ordering::Relaxed);
        }
        ReplyPlan::Inline => {}
    }
    stats
        .total_rdma_request
        .fetch_add(bytes(regs.write_segs()), Ordering::Relaxed);
    match plan.call {
        CallPlan::LongCall { .. } => {
            stats.nomsg_call_count.fetch_add(1, Ordering::Relaxed);
        }
        CallPlan::Inline { .. } => {
            stats.pullup_copy_count.fetch_add(1, Ordering::Relaxed);
        }
        CallPlan::ReadChunk(_) => {}
    }
}

fn call_layout(l: &XdrLayout<'_>) -> CallLayout {
    CallLayout {
        head_len: l.raw.head_len,
        page_base: l.raw.page_base,
        page_len: l.raw.page_len,
        tail_len: l.raw.tail_len,
        ddp_write: l.raw.ddp,
    }
}

fn reply_layout(l: &XdrLayout<'_>) -> ReplyLayout {
    ReplyLayout {
        buflen: l.raw.buflen,
        head_len: l.raw.head_len,
        page_len: l.raw.page_len,
        tail_len: l.raw.tail_len,
        ddp_read: l.raw.ddp,
    }
}

/// Head, page data and tail of a buffer, as page pieces (a Long Call's
/// Position Zero Read chunk, or a Reply chunk).
fn whole_buffer_pieces(l: &XdrLayout<'_>, out: &mut KVec<Piece>) -> Result {
    frwr::kvec_pieces(l.raw.head.cast(), l.raw.head_len, out)?;
    frwr::page_pieces(l, out)?;
    frwr::kvec_pieces(l.raw.tail.cast(), l.raw.tail_len, out)
}
