// SPDX-License-Identifier: GPL-2.0

//! The transport instance (the C `transport.c`): the state each `rpc_xprt`
//! of the class carries, and the operations the C ops table calls.

use super::{
    frwr::MAX_DATA_PAGES,
    stats::Stats,
    verbs::{Endpoint, EpShared},
};
use crate::{
    bindings,
    debugfs::{self, seq_print, SeqFile},
    errno,
    proto::{self, header},
    sunrpc::{Rqst, Xprt},
};
use core::{
    ptr,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering},
};
use kernel::{
    alloc::KVec,
    ffi::{c_int, c_uint, c_void},
    new_mutex,
    prelude::*,
    sync::{Arc, ArcBorrow, Mutex},
    types::ForeignOwnable,
};

/// Largest RPC payload (rsize/wsize) this transport carries: what the
/// chunks of one RPC can register (C: `RPCRDMA_MAX_DATA_SEGS` pages).
const MAX_PAYLOAD: c_uint = MAX_DATA_PAGES * kernel::page::PAGE_SIZE as c_uint;

/// The state of one transport instance.
#[pin_data]
pub(crate) struct XprtState {
    xprt: Xprt,
    stats: Arc<Stats>,
    /// The current connection, if any.
    #[pin]
    ep: Mutex<Option<Endpoint>>,
    /// What the last connection's handlers share. Kept after the
    /// connection closes, until the next one: `buf_free` must find the
    /// regions of an RPC while its connection is being torn down (the
    /// teardown takes `ep` first), and wait for the drain.
    #[pin]
    last: Mutex<Option<Arc<EpShared>>>,
    /// The last connection attempt failed: back off before the next.
    connect_failed: AtomicBool,
    /// The inline thresholds of the last connection, for readers that may
    /// not sleep (`bc_maxpayload` runs under the RCU read lock).
    inline_send: AtomicU32,
    inline_recv: AtomicU32,
}

impl XprtState {
    fn new(xprt: Xprt, stats: Arc<Stats>) -> impl PinInit<Self> {
        pin_init!(Self {
            xprt,
            stats,
            ep <- new_mutex!(None),
            last <- new_mutex!(None),
            connect_failed: AtomicBool::new(false),
            inline_send: AtomicU32::new(proto::DEFAULT_INLINE_SIZE),
            inline_recv: AtomicU32::new(proto::DEFAULT_INLINE_SIZE),
        })
    }

    fn connect(&self) -> Result {
        // A connection that was lost without a close goes first (outside
        // the lock: its teardown waits for the drain).
        let old = self.ep.lock().take();
        drop(old);
        match Endpoint::connect(self.xprt, &self.stats) {
            Ok(ep) => {
                let n = &ep.negotiated;
                self.inline_send.store(n.inline_send, Ordering::Relaxed);
                self.inline_recv.store(n.inline_recv, Ordering::Relaxed);
                // The previous connection was torn down above: nothing of
                // it is held any more.
                *self.last.lock() = Some(ep.shared.clone());
                *self.ep.lock() = Some(ep);
                self.connect_failed.store(false, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                self.connect_failed.store(true, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    fn close(&self) {
        let ep = self.ep.lock().take();
        drop(ep);
    }

    fn send_request(&self, rqst: &Rqst<'_>, bc_reply: bool) -> Result {
        let mut ep = self.ep.lock();
        ep.as_mut()
            .ok_or_else(errno::enotconn)?
            .send(rqst, bc_reply)
    }

    /// `buf_free`: returns only when nothing of RPC `xid` is registered,
    /// or reachable through a QP that may still execute. Sleeps.
    fn buf_free(&self, xid: u32) {
        let shared = self.last.lock().clone();
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

    fn show(&self, m: &SeqFile) {
        seq_print!(m, "xprt {}\n", self.xprt.peer());
        let (cong, cwnd) = self.xprt.window();
        seq_print!(m, "  cong {}\n  cwnd {}\n", cong, cwnd);
        let ep = self.ep.lock();
        let Some(ep) = ep.as_ref() else {
            seq_print!(m, "  connected no\n");
            return;
        };
        let n = &ep.negotiated;
        seq_print!(m, "  connected yes\n  device {}\n", &*ep.device);
        match ep.peer() {
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
            "  credits_granted {}\n  credits_requested {}\n  mrs_free {}\n",
            ep.shared.credits.load(Ordering::Relaxed),
            ep.shared.max_requests.load(Ordering::Relaxed),
            ep.shared.regions_free()
        );
        let s = &self.stats;
        seq_print!(
            m,
            "  remote_invalidations {}\n  rdma_errors {}\n  bad_replies {}\n  duplicate_replies {}\n",
            s.remote_invalidations.load(Ordering::Relaxed),
            s.rdma_errors.load(Ordering::Relaxed),
            s.bad_reply_count.load(Ordering::Relaxed),
            s.duplicate_replies.load(Ordering::Relaxed)
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

/// The registry while the class is registered: `attach` runs only then.
static REGISTRY: AtomicPtr<Registry> = AtomicPtr::new(ptr::null_mut());

/// Publishes `registry` to `attach` until the returned guard drops, which
/// must happen after the class is unregistered.
pub(crate) struct RegistryPublished(());

impl RegistryPublished {
    pub(crate) fn new(registry: &Arc<Registry>) -> Self {
        let raw = Arc::into_raw(registry.clone());
        REGISTRY.store(raw.cast_mut(), Ordering::Release);
        Self(())
    }
}

impl Drop for RegistryPublished {
    fn drop(&mut self) {
        let raw = REGISTRY.swap(ptr::null_mut(), Ordering::AcqRel);
        if !raw.is_null() {
            // SAFETY: Stored from `Arc::into_raw` in `new`.
            drop(unsafe { Arc::from_raw(raw) });
        }
    }
}

fn registry() -> Option<&'static Registry> {
    let raw = REGISTRY.load(Ordering::Acquire);
    // SAFETY: While published, the registry is kept alive by the reference
    // `RegistryPublished` holds; `attach` and `detach` run only while the
    // class is registered or transports exist, both within that time.
    unsafe { raw.as_ref() }
}

/// # Safety
///
/// `transport` is a pointer `rpcrdma_rs_op_attach` returned and
/// `rpcrdma_rs_op_detach` has not released.
unsafe fn state<'a>(transport: *mut c_void) -> ArcBorrow<'a, XprtState> {
    // SAFETY: By the function's contract it came from `into_foreign`.
    unsafe { <Arc<XprtState> as ForeignOwnable>::borrow(transport) }
}

fn attach(xprt: Xprt) -> Result<Arc<XprtState>> {
    let stats = Arc::new(Stats::default(), GFP_KERNEL)?;
    let state = Arc::pin_init(XprtState::new(xprt, stats), GFP_KERNEL)?;
    if let Some(registry) = registry() {
        let mut xprts = registry.xprts.lock();
        match xprts.iter_mut().find(|x| x.is_none()) {
            Some(free) => *free = Some(state.clone()),
            None => xprts.push(Some(state.clone()), GFP_KERNEL)?,
        }
    }
    Ok(state)
}

/// Creates the state of a new transport instance.
///
/// # Safety
///
/// `xprt` is an xprt being set up by the class, freed only after
/// `rpcrdma_rs_op_detach`; `max_payload` is writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn rpcrdma_rs_op_attach(
    xprt: *mut bindings::rpc_xprt,
    max_payload: *mut c_uint,
) -> *mut c_void {
    // SAFETY: The xprt outlives its state, which `detach` tears down.
    let Some(xprt) = (unsafe { Xprt::from_raw(xprt) }) else {
        return ptr::null_mut();
    };
    match attach(xprt) {
        Ok(state) => {
            // SAFETY: Writable by the function's contract.
            unsafe { *max_payload = MAX_PAYLOAD };
            state.into_foreign().cast_mut()
        }
        Err(_) => ptr::null_mut(),
    }
}

/// Tears the connection down and releases the state.
///
/// # Safety
///
/// `transport` came from `rpcrdma_rs_op_attach` and is not used again.
#[no_mangle]
pub(crate) unsafe extern "C" fn rpcrdma_rs_op_detach(transport: *mut c_void) {
    // SAFETY: By the function's contract.
    let state = unsafe { <Arc<XprtState> as ForeignOwnable>::from_foreign(transport) };
    state.close();
    if let Some(registry) = registry() {
        for x in registry.xprts.lock().iter_mut() {
            if x.as_ref().is_some_and(|x| Arc::ptr_eq(x, &state)) {
                *x = None;
            }
        }
    }
}

/// Connects. Sleeps.
///
/// # Safety
///
/// As for `state`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rpcrdma_rs_op_connect(transport: *mut c_void) -> c_int {
    // SAFETY: By the function's contract.
    let state = unsafe { state(transport) };
    match state.connect() {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// # Safety
///
/// As for `state`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rpcrdma_rs_op_connect_failed(transport: *mut c_void) -> bool {
    // SAFETY: By the function's contract.
    unsafe { state(transport) }
        .connect_failed
        .load(Ordering::Relaxed)
}

/// Closes the connection. Sleeps.
///
/// # Safety
///
/// As for `state`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rpcrdma_rs_op_close(transport: *mut c_void) {
    // SAFETY: By the function's contract.
    unsafe { state(transport) }.close();
}

/// Marshals and posts a Call.
///
/// # Safety
///
/// As for `state`; `rqst` is a request being transmitted on the xprt.
#[no_mangle]
pub(crate) unsafe extern "C" fn rpcrdma_rs_op_send_request(
    transport: *mut c_void,
    rqst: *mut bindings::rpc_rqst,
    bc_reply: bool,
) -> c_int {
    // SAFETY: By the function's contract.
    let state = unsafe { state(transport) };
    // SAFETY: Live for the call, by the function's contract.
    let Some(rqst) = (unsafe { Rqst::from_raw(rqst) }) else {
        return EINVAL.to_errno();
    };
    match state.send_request(&rqst, bc_reply) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Invalidates what RPC `xid` still has registered before its memory is
/// freed. Sleeps.
///
/// # Safety
///
/// As for `state`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rpcrdma_rs_op_buf_free(transport: *mut c_void, xid: u32) {
    // SAFETY: By the function's contract.
    unsafe { state(transport) }.buf_free(xid);
}

/// # Safety
///
/// As for `state`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rpcrdma_rs_op_bc_maxpayload(transport: *mut c_void) -> usize {
    // SAFETY: By the function's contract.
    unsafe { state(transport) }.bc_maxpayload()
}

/// # Safety
///
/// As for `state`; `out` is writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn rpcrdma_rs_op_stats(
    transport: *mut c_void,
    out: *mut bindings::rpcrdma_rs_stats,
) {
    // SAFETY: By the function's contract.
    let state = unsafe { state(transport) };
    // SAFETY: Writable by the function's contract.
    unsafe { *out = state.stats.snapshot() };
}
