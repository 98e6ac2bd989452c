// SPDX-License-Identifier: GPL-2.0

//! The RDMA side: a listening `rdma_cm` id, and one accepted connection
//! with its protection domain, completion queue, queue pair and one
//! registered buffer holding the Receive buffers, the Send buffers and a
//! staging area for RDMA Reads and Writes.
//!
//! Everything runs on one thread and each Call is handled to the end
//! before the next (its Reply may wait in a queue of `main.rs`): work
//! requests are all signaled, and a Call's RDMA Reads, a Reply's RDMA
//! Writes and Sends are waited for before it is done. Receives that
//! complete meanwhile are queued, stamped with when they were taken. Only
//! a finished connection's objects are destroyed on a thread of their own
//! ([`Conn::release`]).

use crate::sys::*;
use crate::transport::{Outgoing, Probe, RdmaWrite};
use rpcrdma_proto::proto::header::Segment;
use std::collections::VecDeque;
use std::ffi::c_void;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Receives kept posted: more than any Linux client has Calls in flight
/// (C: 128 slots), so a client that ignores the credit grant still finds
/// one.
const RECVS: usize = 160;
/// Send buffers.
const SENDS: usize = 16;
/// Send queue depth: a Call's RDMA Writes or Reads and its Sends.
const SEND_WR: u32 = 256;
/// Room for RDMA Reads of a Call and RDMA Writes of a Reply.
const STAGING: usize = crate::transport::MAX_CALL_CHUNKS;
/// Longest wait for a Call's own work requests.
const WAIT: Duration = Duration::from_secs(10);

// wr_id: kind in the top byte, index below.
const WR_RECV: u64 = 1 << 56;
const WR_SEND: u64 = 2 << 56;
const WR_RDMA: u64 = 3 << 56;
const KIND: u64 = 0xff << 56;

/// The `IBV_WC_*` name of a completion status, without the prefix.
pub fn wc_status_name(status: u32) -> &'static str {
    const NAMES: &[&str] = &[
        "SUCCESS",
        "LOC_LEN_ERR",
        "LOC_QP_OP_ERR",
        "LOC_EEC_OP_ERR",
        "LOC_PROT_ERR",
        "WR_FLUSH_ERR",
        "MW_BIND_ERR",
        "BAD_RESP_ERR",
        "LOC_ACCESS_ERR",
        "REM_INV_REQ_ERR",
        "REM_ACCESS_ERR",
        "REM_OP_ERR",
        "RETRY_EXC_ERR",
        "RNR_RETRY_EXC_ERR",
        "LOC_RDD_VIOL_ERR",
        "REM_INV_RD_REQ_ERR",
        "REM_ABORT_ERR",
        "INV_EECN_ERR",
        "INV_EEC_STATE_ERR",
        "FATAL_ERR",
        "RESP_TIMEOUT_ERR",
        "GENERAL_ERR",
        "TM_ERR",
        "TM_RNDV_INCOMPLETE",
    ];
    NAMES.get(status as usize).copied().unwrap_or("UNKNOWN")
}

/// The `IBV_QPS_*` name of a queue pair state.
pub fn qp_state_name(state: u32) -> &'static str {
    const NAMES: &[&str] = &["RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"];
    NAMES.get(state as usize).copied().unwrap_or("UNKNOWN")
}

pub fn last_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// A socket address as the C library lays it out.
pub fn to_sockaddr(a: &SocketAddr) -> libc::sockaddr_storage {
    // SAFETY: sockaddr_storage is plain data; all-zero is a valid value.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match a {
        SocketAddr::V4(v4) => {
            // SAFETY: sockaddr_storage is large and aligned enough for any
            // sockaddr.
            let sin = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in) };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = v4.port().to_be();
            sin.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
        }
        SocketAddr::V6(v6) => {
            // SAFETY: as above.
            let sin6 = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in6) };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = v6.port().to_be();
            sin6.sin6_addr.s6_addr = v6.ip().octets();
            sin6.sin6_scope_id = v6.scope_id();
        }
    }
    ss
}

/// Reads a C socket address; `None` for other families.
///
/// # Safety
/// `sa` must point to a socket address of the size its family implies,
/// and be derived from a pointer to all of it (a `sockaddr_storage`, or
/// the `sockaddr_in6` itself), not from a reference to a 16-byte
/// `sockaddr`.
pub unsafe fn from_sockaddr(sa: *const libc::sockaddr) -> Option<SocketAddr> {
    // SAFETY: the caller's promise.
    unsafe {
        match i32::from((*sa).sa_family) {
            libc::AF_INET => {
                let sin = &*(sa as *const libc::sockaddr_in);
                let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                Some(SocketAddr::new(IpAddr::V4(ip), u16::from_be(sin.sin_port)))
            }
            libc::AF_INET6 => {
                let sin6 = &*(sa as *const libc::sockaddr_in6);
                let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
                Some(SocketAddr::new(
                    IpAddr::V6(ip),
                    u16::from_be(sin6.sin6_port),
                ))
            }
            _ => None,
        }
    }
}

/// The address of the other end of the connection `id`.
///
/// # Safety
/// `id` must point to a live `rdma_cm_id`.
pub unsafe fn dst_addr(id: *const rdma_cm_id) -> Option<SocketAddr> {
    // The pointer is taken with `addr_of!` from the union's whole
    // `sockaddr_storage` member, never through a reference to a smaller
    // one, so it covers whichever family the connection manager wrote.
    // SAFETY: `id` is live (the caller's promise), and the storage covers
    // the `sockaddr_in6` or `sockaddr_in` that `from_sockaddr` reads.
    unsafe {
        from_sockaddr(
            ptr::addr_of!((*id).route.addr.__bindgen_anon_2.dst_storage).cast::<libc::sockaddr>(),
        )
    }
}

fn set_nonblocking(fd: i32) -> std::io::Result<()> {
    // SAFETY: fcntl on a descriptor we own; failure is reported.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(last_error());
        }
    }
    Ok(())
}

/// The event channel and the listening id.
pub struct Listener {
    pub ch: *mut rdma_event_channel,
    pub id: *mut rdma_cm_id,
}

impl Listener {
    pub fn new(addr: &SocketAddr) -> Result<Self, String> {
        // SAFETY: plain librdmacm calls; every pointer they return is
        // checked, and kept in `Self`, which frees them on drop.
        unsafe {
            let ch = rdma_create_event_channel();
            if ch.is_null() {
                return Err(format!("rdma_create_event_channel: {}", last_error()));
            }
            let mut l = Self {
                ch,
                id: ptr::null_mut(),
            };
            set_nonblocking((*ch).fd).map_err(|e| format!("event channel: {e}"))?;
            if rdma_create_id(ch, &mut l.id, ptr::null_mut(), RDMA_PS_TCP) != 0 {
                return Err(format!("rdma_create_id: {}", last_error()));
            }
            let mut ss = to_sockaddr(addr);
            if rdma_bind_addr(l.id, &mut ss as *mut _ as *mut sockaddr) != 0 {
                return Err(format!("rdma_bind_addr {addr}: {}", last_error()));
            }
            if rdma_listen(l.id, 16) != 0 {
                return Err(format!("rdma_listen {addr}: {}", last_error()));
            }
            Ok(l)
        }
    }

    pub fn fd(&self) -> i32 {
        // SAFETY: the channel lives as long as `self`.
        unsafe { (*self.ch).fd }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // SAFETY: each was created by `new` and is destroyed once.
        unsafe {
            if !self.id.is_null() {
                rdma_destroy_id(self.id);
            }
            rdma_destroy_event_channel(self.ch);
        }
    }
}

/// What a CONNECT_REQUEST told us, and what to answer.
pub struct Accept<'a> {
    /// Our private data (empty: none).
    pub private_data: &'a [u8],
    /// Size of each posted Receive buffer.
    pub recv_size: usize,
    /// Size of each Send buffer.
    pub send_size: usize,
    /// The CONNECT_REQUEST's values, which the connection manager gives
    /// from our side: the RDMA Reads we may have outstanding (the
    /// client's responder resources) and those the client will have
    /// outstanding to us (its initiator depth).
    pub initiator_depth: u8,
    pub responder_resources: u8,
}

/// A received message, copied out of its Receive buffer.
pub struct Message {
    pub data: Vec<u8>,
    /// The Send carried an invalidation of one of our rkeys (we offer none).
    pub invalidated: bool,
    /// When its completion was taken from the CQ: the CQ is polled
    /// whenever the peer waits (see [`Conn::idle`]), so this is close to
    /// when it arrived, even if it is handled later.
    pub arrived: Instant,
}

/// Results of an FRWR probe.
pub struct ProbeResult {
    /// Status of the probe's first work request; `None` when nothing was
    /// posted because the QP was not fit to test anything (see
    /// `qp_before`).
    pub status: Option<u32>,
    /// QP state just before the probe was posted: it is posted only on a
    /// QP in RTS with nothing else in flight, so that a failure is the
    /// probe's own and not a flush of a QP already broken.
    pub qp_before: Option<u32>,
    /// Work requests that succeeded.
    pub succeeded: usize,
    /// Status of the first work request that failed.
    pub failed: Option<u32>,
    pub segments: usize,
    pub bytes: u64,
    /// QP state once the probe is done (an iWARP RDMA Write completes
    /// locally; the peer's refusal shows as a terminated connection).
    pub qp_state: Option<u32>,
}

/// One accepted connection.
pub struct Conn {
    pub id: *mut rdma_cm_id,
    pub peer: String,
    pd: *mut ibv_pd,
    comp: *mut ibv_comp_channel,
    cq: *mut ibv_cq,
    mr: *mut ibv_mr,
    mem: Box<[u8]>,
    recv_size: usize,
    send_size: usize,
    send_base: usize,
    staging_base: usize,
    free_sends: Vec<usize>,
    /// Completed Receives not handled yet: (buffer index, length, flags,
    /// when the completion was taken).
    received: VecDeque<(usize, usize, u32, Instant)>,
    /// Completed RDMA Reads and Writes and Sends waited for: (wr_id, status).
    done: Vec<(u64, u32)>,
    next_wr: u64,
    /// The QP failed or we disconnected: handle nothing more.
    pub dead: bool,
    /// rdma_disconnect was called.
    disconnected: bool,
    /// Completion errors to report (wr kind, status), for the event lines.
    pub errors: Vec<(&'static str, u32)>,
}

impl Conn {
    /// Sets up a connection for the new `id` and accepts it; on failure
    /// rejects and destroys `id`.
    ///
    /// # Safety
    /// `id` must be the id of a CONNECT_REQUEST event, not yet used.
    pub unsafe fn accept(id: *mut rdma_cm_id, a: &Accept<'_>) -> Result<Box<Self>, String> {
        // SAFETY: `id` is a fresh id with a device (the caller's promise);
        // every object created is checked and owned by the returned
        // `Conn`, whose drop frees what exists.
        unsafe {
            let peer = dst_addr(id).map_or_else(|| "?".into(), |a| a.to_string());
            let send_base = RECVS * a.recv_size;
            let staging_base = send_base + SENDS * a.send_size;
            let mut c = Box::new(Self {
                id,
                peer,
                pd: ptr::null_mut(),
                comp: ptr::null_mut(),
                cq: ptr::null_mut(),
                mr: ptr::null_mut(),
                mem: vec![0u8; staging_base + STAGING].into_boxed_slice(),
                recv_size: a.recv_size,
                send_size: a.send_size,
                send_base,
                staging_base,
                free_sends: (0..SENDS).collect(),
                received: VecDeque::new(),
                done: Vec::new(),
                next_wr: 0,
                dead: false,
                disconnected: false,
                errors: Vec::new(),
            });
            match c.setup(a) {
                Ok(()) => Ok(c),
                Err(e) => {
                    // Refused before `c` goes, since its drop destroys the id.
                    rdma_reject(id, ptr::null(), 0);
                    Err(e)
                }
            }
        }
    }

    /// Creates the connection's verbs objects, posts the Receives and
    /// accepts.
    unsafe fn setup(&mut self, a: &Accept<'_>) -> Result<(), String> {
        let c = self;
        let id = c.id;
        // SAFETY: `id` has a device (see `accept`); each object created is
        // checked and kept in `c`, whose drop frees it.
        unsafe {
            let verbs = (*id).verbs;
            let mut attr: ibv_device_attr = std::mem::zeroed();
            if ibv_query_device(verbs, &mut attr) != 0 {
                return Err(format!("ibv_query_device: {}", last_error()));
            }
            c.pd = ibv_alloc_pd(verbs);
            if c.pd.is_null() {
                return Err(format!("ibv_alloc_pd: {}", last_error()));
            }
            c.comp = ibv_create_comp_channel(verbs);
            if c.comp.is_null() {
                return Err(format!("ibv_create_comp_channel: {}", last_error()));
            }
            set_nonblocking((*c.comp).fd).map_err(|e| format!("completion channel: {e}"))?;
            let max_wr = u32::try_from(attr.max_qp_wr).unwrap_or(0);
            let send_wr = SEND_WR.min(max_wr);
            let recv_wr = (RECVS as u32 + 1).min(max_wr);
            let cqe = (send_wr + recv_wr + 16).min(u32::try_from(attr.max_cqe).unwrap_or(0));
            c.cq = ibv_create_cq(verbs, cqe as i32, ptr::null_mut(), c.comp, 0);
            if c.cq.is_null() {
                return Err(format!("ibv_create_cq({cqe}): {}", last_error()));
            }
            let mut qa: ibv_qp_init_attr = std::mem::zeroed();
            qa.send_cq = c.cq;
            qa.recv_cq = c.cq;
            qa.qp_type = IBV_QPT_RC;
            qa.cap.max_send_wr = send_wr;
            qa.cap.max_recv_wr = recv_wr;
            qa.cap.max_send_sge = 1;
            qa.cap.max_recv_sge = 1;
            if rdma_create_qp(id, c.pd, &mut qa) != 0 {
                return Err(format!("rdma_create_qp: {}", last_error()));
            }
            c.mr = ibv_reg_mr(
                c.pd,
                c.mem.as_mut_ptr() as *mut c_void,
                c.mem.len(),
                IBV_ACCESS_LOCAL_WRITE as i32,
            );
            if c.mr.is_null() {
                return Err(format!("ibv_reg_mr: {}", last_error()));
            }
            for i in 0..RECVS.min(recv_wr as usize) {
                c.post_recv(i)?;
            }
            c.arm();
            // As the Linux server does (`sc_ord`): our RDMA Reads pull the
            // Read chunks.
            let initiator_depth = u32::from(a.initiator_depth)
                .min(u32::try_from(attr.max_qp_init_rd_atom).unwrap_or(0));
            let responder_resources = u32::from(a.responder_resources)
                .min(u32::try_from(attr.max_qp_rd_atom).unwrap_or(0));
            let mut p: rdma_conn_param = std::mem::zeroed();
            if !a.private_data.is_empty() {
                p.private_data = a.private_data.as_ptr() as *const c_void;
                p.private_data_len = a.private_data.len() as u8;
            }
            p.initiator_depth = initiator_depth as u8;
            p.responder_resources = responder_resources as u8;
            p.flow_control = 1;
            p.retry_count = 6;
            // A Linux client keeps a Receive per credit; a few RNR retries
            // cover a moment without one, and stay bounded.
            p.rnr_retry_count = 3;
            if rdma_accept(id, &mut p) != 0 {
                return Err(format!("rdma_accept: {}", last_error()));
            }
            Ok(())
        }
    }

    fn qp(&self) -> *mut ibv_qp {
        // SAFETY: the id lives as long as `self`.
        unsafe { (*self.id).qp }
    }

    fn addr(&self, off: usize) -> u64 {
        self.mem.as_ptr() as u64 + off as u64
    }

    fn lkey(&self) -> u32 {
        // SAFETY: the MR lives as long as `self`.
        unsafe { (*self.mr).lkey }
    }

    pub fn comp_fd(&self) -> i32 {
        // SAFETY: the channel lives as long as `self`.
        unsafe { (*self.comp).fd }
    }

    fn post_recv(&mut self, i: usize) -> Result<(), String> {
        let mut sge = ibv_sge {
            addr: self.addr(i * self.recv_size),
            length: self.recv_size as u32,
            lkey: self.lkey(),
        };
        let mut wr = ibv_recv_wr {
            wr_id: WR_RECV | i as u64,
            next: ptr::null_mut(),
            sg_list: &mut sge,
            num_sge: 1,
        };
        let mut bad = ptr::null_mut();
        // SAFETY: the WR and its SGE live through the call; the buffer is
        // ours and registered.
        let rc = unsafe { peer_ibv_post_recv(self.qp(), &mut wr, &mut bad) };
        if rc != 0 {
            return Err(format!(
                "ibv_post_recv: {}",
                std::io::Error::from_raw_os_error(rc)
            ));
        }
        Ok(())
    }

    fn arm(&mut self) {
        // SAFETY: the CQ lives as long as `self`.
        unsafe {
            peer_ibv_req_notify_cq(self.cq, 0);
        }
    }

    /// Takes a pending completion event, if any, and re-arms.
    pub fn take_event(&mut self) {
        let mut cq = ptr::null_mut();
        let mut ctx = ptr::null_mut();
        // SAFETY: a non-blocking get on our channel; each event got is
        // acknowledged at once.
        unsafe {
            while ibv_get_cq_event(self.comp, &mut cq, &mut ctx) == 0 {
                ibv_ack_cq_events(cq, 1);
            }
        }
    }

    /// Drains the CQ, sorting completions into their queues.
    pub fn poll(&mut self) {
        loop {
            // SAFETY: ibv_wc is plain data.
            let mut wcs: [ibv_wc; 16] = unsafe { std::mem::zeroed() };
            // SAFETY: the array has room for 16 completions.
            let n = unsafe { peer_ibv_poll_cq(self.cq, 16, wcs.as_mut_ptr()) };
            if n <= 0 {
                return;
            }
            let now = Instant::now();
            for wc in &wcs[..n as usize] {
                let idx = (wc.wr_id & !KIND) as usize;
                let ok = wc.status == IBV_WC_SUCCESS;
                match wc.wr_id & KIND {
                    WR_RECV if ok => {
                        self.received
                            .push_back((idx, wc.byte_len as usize, wc.wc_flags, now))
                    }
                    WR_RECV => self.failed("RECV", wc.status),
                    WR_SEND => {
                        self.free_sends.push(idx);
                        self.done.push((wc.wr_id, wc.status));
                        if !ok {
                            self.failed("SEND", wc.status);
                        }
                    }
                    _ => {
                        self.done.push((wc.wr_id, wc.status));
                        if !ok {
                            self.dead = true;
                        }
                    }
                }
            }
        }
    }

    fn failed(&mut self, what: &'static str, status: u32) {
        if status != IBV_WC_WR_FLUSH_ERR {
            self.errors.push((what, status));
        }
        self.dead = true;
    }

    /// Polls, re-arms and polls again, so no completion is left behind an
    /// armed CQ.
    pub fn service(&mut self) {
        self.take_event();
        self.poll();
        self.arm();
        self.poll();
    }

    /// The next received message, copied; its buffer is posted again.
    pub fn next_message(&mut self) -> Option<Message> {
        let (i, len, flags, arrived) = self.received.pop_front()?;
        let off = i * self.recv_size;
        let data = self.mem[off..off + len.min(self.recv_size)].to_vec();
        if !self.dead {
            if let Err(e) = self.post_recv(i) {
                self.errors.push(("RECV", 0));
                eprintln!("{e}");
                self.dead = true;
            }
        }
        Some(Message {
            data,
            invalidated: flags & IBV_WC_WITH_INV != 0,
            arrived,
        })
    }

    /// The messages received and not handled yet, in order.
    pub fn pending(&self) -> impl Iterator<Item = &[u8]> {
        self.received.iter().map(|&(i, len, _, _)| {
            let off = i * self.recv_size;
            &self.mem[off..off + len.min(self.recv_size)]
        })
    }

    /// Waits `d`, taking completions meanwhile, so that what arrives is
    /// stamped when it arrives.
    pub fn idle(&mut self, d: Duration) {
        let deadline = Instant::now() + d;
        loop {
            self.service();
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            let mut pfd = libc::pollfd {
                fd: self.comp_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut pfd, 1, left.as_millis().clamp(1, 100) as i32) };
        }
    }

    /// Waits for work requests `ids` to complete; returns their statuses
    /// in order, or `None` after [`WAIT`].
    fn wait(&mut self, ids: &[u64]) -> Option<Vec<u32>> {
        let deadline = Instant::now() + WAIT;
        loop {
            self.service();
            if ids.iter().all(|id| self.done.iter().any(|(d, _)| d == id)) {
                let statuses = ids
                    .iter()
                    .map(|id| {
                        let at = self.done.iter().position(|(d, _)| d == id).unwrap_or(0);
                        self.done.swap_remove(at).1
                    })
                    .collect();
                return Some(statuses);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                self.dead = true;
                return None;
            }
            let mut pfd = libc::pollfd {
                fd: self.comp_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(100) as i32) };
        }
    }

    fn wr_id(&mut self) -> u64 {
        self.next_wr += 1;
        WR_RDMA | (self.next_wr & !KIND)
    }

    /// Posts one signaled RDMA Read or Write between our staging area at
    /// `local` and the peer's `seg`.
    fn post_rdma(&mut self, opcode: u32, local: usize, seg: &Segment) -> Result<u64, String> {
        let id = self.wr_id();
        let mut sge = ibv_sge {
            addr: self.addr(self.staging_base + local),
            length: seg.length,
            lkey: self.lkey(),
        };
        // SAFETY: ibv_send_wr is plain data; all-zero is valid.
        let mut wr: ibv_send_wr = unsafe { std::mem::zeroed() };
        wr.wr_id = id;
        wr.sg_list = &mut sge;
        wr.num_sge = 1;
        wr.opcode = opcode;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = seg.offset;
        wr.wr.rdma.rkey = seg.handle;
        let mut bad = ptr::null_mut();
        // SAFETY: the WR and SGE live through the call; the local range is
        // inside our registered buffer (checked by the callers).
        let rc = unsafe { peer_ibv_post_send(self.qp(), &mut wr, &mut bad) };
        if rc != 0 {
            self.dead = true;
            return Err(format!(
                "ibv_post_send: {}",
                std::io::Error::from_raw_os_error(rc)
            ));
        }
        Ok(id)
    }

    /// Pulls each Read chunk into a buffer of its own (RFC 8166, section
    /// 3.4.5); `None` if a Read failed or the chunks are too large.
    pub fn pull(&mut self, chunks: &[crate::transport::ReadChunk]) -> Result<Vec<Vec<u8>>, String> {
        let total: usize = chunks.iter().map(|c| c.len()).sum();
        if total > STAGING {
            return Err(format!("Read chunks of {total} bytes"));
        }
        let mut ids = Vec::new();
        let mut at = 0;
        for seg in chunks.iter().flat_map(|c| c.segments.iter()) {
            if seg.length > 0 {
                ids.push(self.post_rdma(IBV_WR_RDMA_READ, at, seg)?);
            }
            at += seg.length as usize;
        }
        let statuses = self.wait(&ids).ok_or("RDMA Read timed out")?;
        if let Some(s) = statuses.iter().find(|s| **s != IBV_WC_SUCCESS) {
            self.dead = true;
            return Err(format!("RDMA Read status={}", wc_status_name(*s)));
        }
        let mut at = self.staging_base;
        Ok(chunks
            .iter()
            .map(|c| {
                let v = self.mem[at..at + c.len()].to_vec();
                at += c.len();
                v
            })
            .collect())
    }

    /// Posts RDMA Writes of `writes` from the staging area; returns their
    /// work request ids.
    fn post_writes(&mut self, writes: &[RdmaWrite]) -> Result<Vec<u64>, String> {
        let total: usize = writes.iter().map(|w| w.data.len()).sum();
        if total > STAGING {
            return Err(format!("RDMA Writes of {total} bytes"));
        }
        let mut ids = Vec::new();
        let mut at = 0;
        for w in writes {
            let base = self.staging_base + at;
            self.mem[base..base + w.data.len()].copy_from_slice(&w.data);
            let seg = Segment {
                handle: w.handle,
                length: w.data.len() as u32,
                offset: w.offset,
            };
            ids.push(self.post_rdma(IBV_WR_RDMA_WRITE, at, &seg)?);
            at += w.data.len();
        }
        Ok(ids)
    }

    /// Posts one Send of `msg`, with an invalidation if asked.
    fn post_send(&mut self, msg: &[u8], invalidate: Option<u32>) -> Result<u64, String> {
        if msg.len() > self.send_size {
            return Err(format!("a Send of {} bytes", msg.len()));
        }
        let deadline = Instant::now() + WAIT;
        while self.free_sends.is_empty() {
            if self.dead || Instant::now() > deadline {
                return Err("no free Send buffer".into());
            }
            self.service();
            // The Sends in flight complete on their own.
            std::thread::sleep(Duration::from_millis(1));
        }
        let slot = self.free_sends.pop().unwrap_or(0);
        let off = self.send_base + slot * self.send_size;
        self.mem[off..off + msg.len()].copy_from_slice(msg);
        let mut sge = ibv_sge {
            addr: self.addr(off),
            length: msg.len() as u32,
            lkey: self.lkey(),
        };
        // SAFETY: ibv_send_wr is plain data; all-zero is valid.
        let mut wr: ibv_send_wr = unsafe { std::mem::zeroed() };
        wr.wr_id = WR_SEND | slot as u64;
        wr.sg_list = &mut sge;
        wr.num_sge = 1;
        wr.send_flags = IBV_SEND_SIGNALED;
        match invalidate {
            Some(rkey) => {
                wr.opcode = IBV_WR_SEND_WITH_INV;
                wr.__bindgen_anon_1.invalidate_rkey = rkey;
            }
            None => wr.opcode = IBV_WR_SEND,
        }
        let mut bad = ptr::null_mut();
        // SAFETY: as in `post_rdma`.
        let rc = unsafe { peer_ibv_post_send(self.qp(), &mut wr, &mut bad) };
        if rc != 0 {
            self.free_sends.push(slot);
            self.dead = true;
            return Err(format!(
                "ibv_post_send: {}",
                std::io::Error::from_raw_os_error(rc)
            ));
        }
        Ok(wr.wr_id)
    }

    /// Carries out a Reply: the RDMA Writes, the Send(s), a disconnect.
    /// Returns the status of the first failed work request, if any.
    pub fn execute(&mut self, out: &Outgoing) -> Result<Option<u32>, String> {
        let mut ids = self.post_writes(&out.writes)?;
        for i in 0..out.sends {
            ids.push(self.post_send(&out.send, out.invalidate_for(i))?);
            if i + 1 < out.sends {
                // A duplicate goes once the first is acknowledged.
                let statuses = self.wait(&ids).ok_or("Send timed out")?;
                if let Some(s) = statuses.into_iter().find(|s| *s != IBV_WC_SUCCESS) {
                    return Ok(Some(s));
                }
                ids.clear();
            }
        }
        let statuses = self.wait(&ids).ok_or("RDMA Writes or Send timed out")?;
        if out.disconnect {
            self.disconnect();
        }
        Ok(statuses.into_iter().find(|s| *s != IBV_WC_SUCCESS))
    }

    /// RDMA Writes to, or Reads from, rkeys that should be gone. Posted
    /// only as the first work requests after the Reply's, all of which
    /// have completed, on a QP still in RTS; otherwise nothing is posted
    /// and the result says why (`status` `None`, `qp_before`).
    pub fn probe(&mut self, probe: &Probe) -> Result<ProbeResult, String> {
        let (opcode, segs) = match probe {
            Probe::Write(s) => (IBV_WR_RDMA_WRITE, s),
            Probe::Read(s) => (IBV_WR_RDMA_READ, s),
        };
        let qp_before = match self.probe_start() {
            Ok(q) => q,
            Err(r) => return Ok(r),
        };
        let mut ids = Vec::new();
        let mut at = 0;
        let mut bytes = 0u64;
        for seg in segs.iter().filter(|s| s.length > 0) {
            let len = (seg.length as usize).min(STAGING - at);
            if len == 0 {
                break;
            }
            // A pattern the client's data can be checked against.
            let base = self.staging_base + at;
            self.mem[base..base + len].fill(0xa5);
            let seg = Segment {
                length: len as u32,
                ..*seg
            };
            ids.push(self.post_rdma(opcode, at, &seg)?);
            at += len;
            bytes += len as u64;
        }
        self.probe_finish(&ids, bytes, qp_before)
    }

    /// RDMA Writes of `writes` again, the same bytes to the same places:
    /// harmless to a region still open, refused by one that is closed.
    /// Posted under the same conditions as [`Self::probe`].
    pub fn rewrite(&mut self, writes: &[RdmaWrite]) -> Result<ProbeResult, String> {
        let qp_before = match self.probe_start() {
            Ok(q) => q,
            Err(r) => return Ok(r),
        };
        let ids = self.post_writes(writes)?;
        let bytes = writes.iter().map(|w| w.data.len() as u64).sum();
        self.probe_finish(&ids, bytes, qp_before)
    }

    /// Takes in whatever completed meanwhile (the client's Calls; a failed
    /// completion marks the connection dead) and says whether a probe may
    /// be posted: the QP state when it may, what to report when not.
    fn probe_start(&mut self) -> Result<Option<u32>, ProbeResult> {
        self.service();
        let qp_before = self.qp_state();
        // Every Send buffer free: no Send in flight. RDMA Reads and Writes
        // are always waited for, or the connection is dead.
        let idle = self.free_sends.len() == SENDS;
        if self.dead || !idle || qp_before != Some(IBV_QPS_RTS) {
            return Err(ProbeResult {
                status: None,
                qp_before,
                succeeded: 0,
                failed: None,
                segments: 0,
                bytes: 0,
                qp_state: qp_before,
            });
        }
        Ok(qp_before)
    }

    /// Waits for the probe's work requests `ids` and reports.
    fn probe_finish(
        &mut self,
        ids: &[u64],
        bytes: u64,
        qp_before: Option<u32>,
    ) -> Result<ProbeResult, String> {
        let statuses = self.wait(ids).ok_or("probe timed out")?;
        // An iWARP peer refuses a Write by terminating the connection: give
        // its Terminate a moment to arrive before looking at the QP.
        self.idle(Duration::from_millis(500));
        Ok(ProbeResult {
            status: statuses.first().copied(),
            qp_before,
            succeeded: statuses.iter().filter(|s| **s == IBV_WC_SUCCESS).count(),
            failed: statuses.iter().copied().find(|s| *s != IBV_WC_SUCCESS),
            segments: ids.len(),
            bytes,
            qp_state: self.qp_state(),
        })
    }

    fn qp_state(&self) -> Option<u32> {
        // SAFETY: plain data out-parameters for a live QP.
        unsafe {
            let mut attr: ibv_qp_attr = std::mem::zeroed();
            let mut init: ibv_qp_init_attr = std::mem::zeroed();
            (ibv_query_qp(self.qp(), &mut attr, IBV_QP_STATE as i32, &mut init) == 0)
                .then_some(attr.qp_state)
        }
    }

    /// Ends the connection from our side, once; DISCONNECTED follows.
    pub fn disconnect(&mut self) {
        self.dead = true;
        if std::mem::replace(&mut self.disconnected, true) {
            return;
        }
        // SAFETY: a live id.
        unsafe {
            rdma_disconnect(self.id);
        }
    }
}

/// A finished connection on its way to the thread that destroys it.
struct Releasing(Conn);

// SAFETY: a `Conn` owns its verbs objects and its buffer alone: the main
// thread keeps no pointer to them once it hands the connection over (it
// compares ids only, of connections it still lists). The one object it
// shares is the listener's event channel, which its id was created on:
// the main thread never destroys the listener while a release is under
// way (`releases_pending`; it exits the process instead). libibverbs and
// librdmacm may destroy objects from any thread, and librdmacm's
// `rdma_destroy_id` waits until the id's events the main thread has taken
// are acknowledged (each is, as it is taken).
unsafe impl Send for Releasing {}

/// Connections handed to a release thread and not yet destroyed.
static RELEASING: AtomicUsize = AtomicUsize::new(0);

/// Whether connections are still being destroyed: the listener, whose
/// event channel they use, must outlive them.
pub fn releases_pending() -> bool {
    RELEASING.load(Ordering::Acquire) != 0
}

impl Conn {
    /// Destroys the connection on a thread of its own and says how long
    /// that took (`released`). Destroying a connection the client has left
    /// can sleep in the kernel, uninterruptibly, while the connection
    /// manager waits out its timers (minutes, seen over Soft-RoCE under
    /// emulation); the peer must go on taking cases and connections
    /// meanwhile. If no thread can be made, it is destroyed here.
    pub fn release(self) {
        let peer = self.peer.clone();
        let conn = Releasing(self);
        let start = Instant::now();
        RELEASING.fetch_add(1, Ordering::AcqRel);
        let spawned = std::thread::Builder::new()
            .name("release".into())
            .stack_size(256 << 10)
            .spawn(move || {
                // The whole wrapper, not its field: the closure must
                // capture the `Send` type.
                let conn = conn;
                let Releasing(conn) = conn;
                drop(conn);
                RELEASING.fetch_sub(1, Ordering::AcqRel);
                crate::event!(
                    "released peer={} after_ms={}",
                    peer,
                    start.elapsed().as_millis()
                );
            });
        if let Err(e) = spawned {
            // The closure, and the connection with it, was dropped by
            // `spawn` on this thread.
            RELEASING.fetch_sub(1, Ordering::AcqRel);
            eprintln!("no thread to release a connection on ({e}); released it here");
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // SAFETY: each object was created in `accept` and is destroyed once,
        // QP first; completion events were acknowledged as they came.
        unsafe {
            if !(*self.id).qp.is_null() {
                rdma_destroy_qp(self.id);
            }
            if !self.mr.is_null() {
                ibv_dereg_mr(self.mr);
            }
            if !self.cq.is_null() {
                ibv_destroy_cq(self.cq);
            }
            if !self.comp.is_null() {
                ibv_destroy_comp_channel(self.comp);
            }
            if !self.pd.is_null() {
                ibv_dealloc_pd(self.pd);
            }
            rdma_destroy_id(self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_follow_the_enum() {
        assert_eq!(wc_status_name(IBV_WC_SUCCESS), "SUCCESS");
        assert_eq!(wc_status_name(IBV_WC_REM_ACCESS_ERR), "REM_ACCESS_ERR");
        assert_eq!(wc_status_name(IBV_WC_WR_FLUSH_ERR), "WR_FLUSH_ERR");
        assert_eq!(wc_status_name(IBV_WC_LOC_LEN_ERR), "LOC_LEN_ERR");
        assert_eq!(wc_status_name(IBV_WC_GENERAL_ERR), "GENERAL_ERR");
        assert_eq!(wc_status_name(999), "UNKNOWN");
        assert_eq!(qp_state_name(IBV_QPS_ERR), "ERR");
        assert_eq!(qp_state_name(IBV_QPS_RTS), "RTS");
    }

    #[test]
    fn socket_addresses_round_trip() {
        for a in ["10.225.0.1:20050", "[fd00:225::1]:20050", "0.0.0.0:1"] {
            let a: SocketAddr = a.parse().unwrap();
            let ss = to_sockaddr(&a);
            // SAFETY: `ss` holds the address just written.
            let back = unsafe { from_sockaddr(&ss as *const _ as *const libc::sockaddr) };
            assert_eq!(back, Some(a));
        }
    }
}
