// SPDX-License-Identifier: GPL-2.0

//! RDMA connection manager identifiers (`struct rdma_cm_id`), and the
//! protection domain and completion queues a connection's QP needs.

use super::buffer::{CompletionHandler, Received, WorkBuf};
use super::Device;
use crate::{bindings, errno};
use core::{
    cell::Cell,
    marker::PhantomData,
    ptr::NonNull,
    sync::atomic::{AtomicBool, Ordering},
};
use kernel::{
    error::{from_err_ptr, to_result},
    ffi::{c_int, c_void},
    prelude::*,
    str::CStr,
    sync::Arc,
    types::ForeignOwnable,
};

/// A socket address, IPv4 or IPv6.
pub(crate) struct SockAddr(bindings::__kernel_sockaddr_storage);

impl SockAddr {
    /// Parses `addr` (IPv4, or IPv6 with an optional `%scope`) and `port`.
    pub(crate) fn parse(addr: &CStr, port: &CStr) -> Result<Self> {
        let mut ss = bindings::__kernel_sockaddr_storage::default();
        // SAFETY: Both strings are NUL-terminated; `ss` is valid for writes.
        to_result(unsafe {
            bindings::rpcrdma_rs_parse_addr(addr.as_char_ptr(), port.as_char_ptr(), &mut ss)
        })?;
        Ok(Self(ss))
    }

    /// Copies an address the RPC layer holds (`len` bytes of `raw`).
    pub(crate) fn from_storage(
        raw: &bindings::__kernel_sockaddr_storage,
        len: usize,
    ) -> Result<Self> {
        if len > core::mem::size_of::<bindings::__kernel_sockaddr_storage>() {
            return Err(EINVAL);
        }
        Ok(Self(*raw))
    }

    fn as_raw(&self) -> *const bindings::sockaddr {
        core::ptr::from_ref(&self.0).cast()
    }
}

/// What the connection manager reports to a [`CmHandler`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CmEventKind {
    /// `RDMA_CM_EVENT_ADDR_RESOLVED`
    AddrResolved,
    /// `RDMA_CM_EVENT_ADDR_ERROR`
    AddrError,
    /// `RDMA_CM_EVENT_ROUTE_RESOLVED`
    RouteResolved,
    /// `RDMA_CM_EVENT_ROUTE_ERROR`
    RouteError,
    /// `RDMA_CM_EVENT_CONNECT_ERROR`
    ConnectError,
    /// `RDMA_CM_EVENT_UNREACHABLE`
    Unreachable,
    /// `RDMA_CM_EVENT_REJECTED`
    Rejected,
    /// `RDMA_CM_EVENT_ESTABLISHED`
    Established,
    /// `RDMA_CM_EVENT_DISCONNECTED`
    Disconnected,
    /// `RDMA_CM_EVENT_DEVICE_REMOVAL`
    DeviceRemoval,
    /// `RDMA_CM_EVENT_ADDR_CHANGE`
    AddrChange,
    /// Anything a requester does not act on.
    Other(u32),
}

impl CmEventKind {
    /// A bit of its own for each kind, for sets of kinds seen.
    pub(crate) fn bit(self) -> u32 {
        let index = match self {
            Self::AddrResolved => 0,
            Self::AddrError => 1,
            Self::RouteResolved => 2,
            Self::RouteError => 3,
            Self::ConnectError => 4,
            Self::Unreachable => 5,
            Self::Rejected => 6,
            Self::Established => 7,
            Self::Disconnected => 8,
            Self::DeviceRemoval => 9,
            Self::AddrChange => 10,
            Self::Other(_) => 31,
        };
        1 << index
    }

    fn from_raw(event: bindings::rdma_cm_event_type) -> Self {
        match event {
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_RESOLVED => Self::AddrResolved,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_ERROR => Self::AddrError,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_RESOLVED => Self::RouteResolved,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_ERROR => Self::RouteError,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_ERROR => Self::ConnectError,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_UNREACHABLE => Self::Unreachable,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_REJECTED => Self::Rejected,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED => Self::Established,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED => Self::Disconnected,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_DEVICE_REMOVAL => Self::DeviceRemoval,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_CHANGE => Self::AddrChange,
            other => Self::Other(other),
        }
    }
}

/// One connection manager event, valid for the duration of the handler.
pub(crate) struct CmEvent<'a> {
    raw: &'a bindings::rdma_cm_event,
}

impl CmEvent<'_> {
    /// The kind of event.
    pub(crate) fn kind(&self) -> CmEventKind {
        CmEventKind::from_raw(self.raw.event)
    }

    /// The event's status: an errno, or for `Rejected` the CM reject reason.
    pub(crate) fn status(&self) -> i32 {
        self.raw.status
    }

    /// The private data the peer sent with an `Established` or `Rejected`
    /// event (empty for other events). The buffer may be longer than what
    /// the peer wrote: the transport searches it (RFC 8797 section 5.2).
    pub(crate) fn private_data(&self) -> &[u8] {
        match self.kind() {
            CmEventKind::Established | CmEventKind::Rejected => {}
            _ => return &[],
        }
        // SAFETY: For these events the connection parameters are the
        // active member of the union.
        let conn = unsafe { &self.raw.param.conn };
        if conn.private_data.is_null() {
            return &[];
        }
        // SAFETY: The connection manager hands the handler
        // `private_data_len` readable bytes, valid during the event.
        unsafe {
            core::slice::from_raw_parts(
                conn.private_data.cast::<u8>(),
                usize::from(conn.private_data_len),
            )
        }
    }
}

/// Receives the connection manager's events for a [`CmId`]. Called in
/// process context, one event at a time per identifier.
pub(crate) trait CmHandler: Send + Sync + 'static {
    /// Handles one event.
    fn handle(&self, event: &CmEvent<'_>);
}

/// A protection domain (`struct ib_pd`). Only a [`CmId`] makes one, for
/// its own device, and frees it after its QP.
///
/// # Invariants
///
/// `raw` was allocated by `ib_alloc_pd` and is freed only by `drop`.
pub(crate) struct Pd {
    raw: NonNull<bindings::ib_pd>,
}

// SAFETY: A PD may be used and freed from any thread.
unsafe impl Send for Pd {}
// SAFETY: The verbs that take a PD do their own locking.
unsafe impl Sync for Pd {}

impl Pd {
    /// The key that lets the device reach any local DMA-mapped memory.
    fn local_dma_lkey(&self) -> u32 {
        // SAFETY: The PD is live (type invariant).
        unsafe { bindings::rpcrdma_rs_pd_local_dma_lkey(self.raw.as_ptr()) }
    }

    /// Allocates a protection domain on `device`.
    fn new(device: &Device) -> Result<Self> {
        // SAFETY: `device` is registered (its type invariant).
        let raw = from_err_ptr(unsafe { bindings::rpcrdma_rs_alloc_pd(device.as_raw()) })?;
        // INVARIANT: allocated by `ib_alloc_pd`, which never returns NULL.
        NonNull::new(raw).map(|raw| Self { raw }).ok_or(ENOMEM)
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: Ours to free (type invariant); every QP using it was
        // destroyed first (see `QpResources`).
        unsafe { bindings::rpcrdma_rs_dealloc_pd(self.raw.as_ptr()) };
    }
}

/// A completion queue (`struct ib_cq`) polled from a workqueue. Only a
/// [`CmId`] makes one, for its own device, and frees it after its QP.
///
/// # Invariants
///
/// `raw` was allocated by `ib_alloc_cq_any` and is freed only by `drop`.
pub(crate) struct Cq {
    raw: NonNull<bindings::ib_cq>,
}

// SAFETY: A CQ may be used and freed from any thread.
unsafe impl Send for Cq {}
// SAFETY: The verbs that take a CQ do their own locking.
unsafe impl Sync for Cq {}

impl Cq {
    /// Allocates a completion queue of `entries` entries on `device`.
    fn new(device: &Device, entries: u32) -> Result<Self> {
        let entries = c_int::try_from(entries).map_err(|_| EINVAL)?;
        // SAFETY: `device` is registered (its type invariant).
        let raw = from_err_ptr(unsafe { bindings::rpcrdma_rs_alloc_cq(device.as_raw(), entries) })?;
        // INVARIANT: allocated by `ib_alloc_cq_any`, which never returns NULL.
        NonNull::new(raw).map(|raw| Self { raw }).ok_or(ENOMEM)
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: Ours to free (type invariant); no QP uses it any more.
        unsafe { bindings::ib_free_cq(self.raw.as_ptr()) };
    }
}

/// The sizes of a queue pair and its completion queues.
pub(crate) struct QpCaps {
    /// Entries of each of the send and receive completion queues.
    pub(crate) cq_entries: u32,
    /// Send work requests that may be outstanding.
    pub(crate) max_send_wr: u32,
    /// Receive work requests that may be outstanding.
    pub(crate) max_recv_wr: u32,
    /// Scatter/gather entries per Send.
    pub(crate) max_send_sge: u32,
    /// Scatter/gather entries per Receive.
    pub(crate) max_recv_sge: u32,
}

/// What a QP uses, kept until the QP is destroyed: field order is the
/// order of release after `rdma_destroy_qp`.
struct QpResources {
    /// The QP exists: not destroyed early by [`CmId::quiesce`].
    qp_alive: Cell<bool>,
    /// The send and receive CQs, freed early with the QP.
    cqs: Cell<Option<(Cq, Cq)>>,
    pd: Pd,
}

/// Connection parameters for [`CmId::connect`].
pub(crate) struct ConnParam<'a> {
    /// The private data to send (RFC 8797 for RPC-over-RDMA).
    pub(crate) private_data: &'a [u8],
    /// RDMA Reads the peer may have outstanding against us.
    pub(crate) responder_resources: u8,
    /// RDMA Reads we may have outstanding against the peer.
    pub(crate) initiator_depth: u8,
    /// Transport retries before the connection fails.
    pub(crate) retry_count: u8,
    /// Receiver-not-ready retries (7 is infinite).
    pub(crate) rnr_retry_count: u8,
}

/// A connection manager identifier: one active connection's endpoint.
///
/// # Invariants
///
/// `raw` was created by `rdma_create_id` with `context` (an `Arc<H>` turned
/// foreign) as its context and [`cm_handler::<H>`] as its handler; both are
/// released only by `drop`. `qp` holds the QP's resources while a QP exists.
pub(crate) struct CmId<H: CmHandler> {
    raw: NonNull<bindings::rdma_cm_id>,
    context: *const c_void,
    qp: Option<QpResources>,
    /// Work requests were posted: the QP must be drained before teardown.
    posted: AtomicBool,
    _handler: PhantomData<Arc<H>>,
}

// SAFETY: The identifier's functions may be called from any thread; the
// handler runs on the connection manager's own workqueue. Not `Sync`: the
// connection manager does not serialise, e.g., `rdma_connect` against
// `rdma_disconnect` on one identifier.
unsafe impl<H: CmHandler> Send for CmId<H> {}

impl<H: CmHandler> CmId<H> {
    /// Creates an identifier for a reliable-connected (RC) connection in the
    /// initial network namespace; `handler` receives its events.
    pub(crate) fn new(handler: Arc<H>) -> Result<Self> {
        // SAFETY: NULL is the initial namespace, which always exists.
        unsafe { Self::new_in(handler, core::ptr::null_mut()) }
    }

    /// As [`CmId::new`], in network namespace `net` (NULL: the initial one).
    ///
    /// # Safety
    ///
    /// `net`, if not NULL, must stay alive as long as the identifier.
    pub(crate) unsafe fn new_in(handler: Arc<H>, net: *mut bindings::net) -> Result<Self> {
        let context = handler.into_foreign();
        // SAFETY: `cm_handler::<H>` matches the handler type and `context`
        // stays valid until `rdma_destroy_id` in `drop`; `net` outlives the
        // identifier by the function's contract.
        let raw = unsafe {
            bindings::rpcrdma_rs_create_id(net, Some(cm_handler::<H>), context.cast_mut())
        };
        match from_err_ptr(raw).ok().and_then(NonNull::new) {
            // INVARIANT: created with `context` and `cm_handler::<H>`.
            Some(raw) => Ok(Self {
                raw,
                context,
                qp: None,
                posted: AtomicBool::new(false),
                _handler: PhantomData,
            }),
            None => {
                // SAFETY: Not handed to any identifier: still ours.
                drop(unsafe { Arc::<H>::from_foreign(context) });
                Err(from_err_ptr(raw).err().unwrap_or(ENOMEM))
            }
        }
    }

    /// Starts resolving `dst` to an RDMA device and port; the handler is
    /// told `AddrResolved` or `AddrError`.
    pub(crate) fn resolve_addr(&self, dst: &SockAddr, timeout_ms: u32) -> Result {
        // SAFETY: `raw` is live (type invariant); `dst` is a valid address.
        to_result(unsafe {
            bindings::rdma_resolve_addr(
                self.raw.as_ptr(),
                core::ptr::null_mut(),
                dst.as_raw(),
                usize::try_from(timeout_ms).map_err(|_| EINVAL)?,
            )
        })
    }

    /// Starts resolving the route; the handler is told `RouteResolved` or
    /// `RouteError`.
    pub(crate) fn resolve_route(&self, timeout_ms: u32) -> Result {
        let timeout = usize::try_from(timeout_ms).map_err(|_| EINVAL)?;
        // SAFETY: `raw` is live (type invariant).
        to_result(unsafe { bindings::rdma_resolve_route(self.raw.as_ptr(), timeout) })
    }

    /// The RDMA device the address resolved to.
    pub(crate) fn device(&self) -> Option<&Device> {
        // SAFETY: `raw` is live (type invariant); `device` is set once the
        // address is resolved and stays while the identifier exists.
        let device = unsafe { (*self.raw.as_ptr()).device };
        if device.is_null() {
            return None;
        }
        // SAFETY: The identifier holds the device registered until it is
        // destroyed or a DEVICE_REMOVAL event has been handled.
        Some(unsafe { Device::from_raw(device.cast()) })
    }

    /// Creates the identifier's RC queue pair, with a protection domain and
    /// send and receive CQs of its own on the resolved device; they are
    /// freed after the QP, before the identifier.
    pub(crate) fn create_qp(&mut self, caps: &QpCaps) -> Result {
        if self.qp.is_some() {
            return Err(EBUSY);
        }
        let device = self.device().ok_or(EINVAL)?;
        let pd = Pd::new(device)?;
        let send_cq = Cq::new(device, caps.cq_entries)?;
        let recv_cq = Cq::new(device, caps.cq_entries)?;
        let mut attr = bindings::ib_qp_init_attr {
            send_cq: send_cq.raw.as_ptr().cast(),
            recv_cq: recv_cq.raw.as_ptr().cast(),
            qp_type: bindings::ib_qp_type_IB_QPT_RC,
            sq_sig_type: bindings::ib_sig_type_IB_SIGNAL_REQ_WR,
            ..Default::default()
        };
        attr.cap.max_send_wr = caps.max_send_wr;
        attr.cap.max_recv_wr = caps.max_recv_wr;
        attr.cap.max_send_sge = caps.max_send_sge;
        attr.cap.max_recv_sge = caps.max_recv_sge;
        // SAFETY: `raw` is live; `pd` and the CQs are on its device and,
        // kept in `self.qp`, outlive the QP (destroyed first in `drop`).
        to_result(unsafe {
            bindings::rdma_create_qp(self.raw.as_ptr(), pd.raw.as_ptr().cast(), &mut attr)
        })?;
        self.qp = Some(QpResources {
            qp_alive: Cell::new(true),
            cqs: Cell::new(Some((send_cq, recv_cq))),
            pd,
        });
        Ok(())
    }

    /// The QP's protection domain, for memory regions. Valid while the
    /// identifier has its QP.
    pub(super) fn raw_pd(&self) -> Result<*mut bindings::ib_pd> {
        self.qp.as_ref().map(|qp| qp.pd.raw.as_ptr()).ok_or(EINVAL)
    }

    /// The local DMA key of the QP's protection domain.
    pub(crate) fn local_dma_lkey(&self) -> Result<u32> {
        self.qp
            .as_ref()
            .map(|qp| qp.pd.local_dma_lkey())
            .ok_or(EINVAL)
    }

    /// Connects; the handler is told `Established` or why not.
    pub(crate) fn connect(&self, param: &ConnParam<'_>) -> Result {
        let mut raw = bindings::rdma_conn_param {
            private_data: param.private_data.as_ptr().cast(),
            private_data_len: u8::try_from(param.private_data.len()).map_err(|_| EINVAL)?,
            responder_resources: param.responder_resources,
            initiator_depth: param.initiator_depth,
            retry_count: param.retry_count,
            rnr_retry_count: param.rnr_retry_count,
            ..Default::default()
        };
        // SAFETY: `raw` (the identifier) is live; the parameters and the
        // private data they point to are copied before this returns.
        to_result(unsafe { bindings::rdma_connect(self.raw.as_ptr(), &mut raw) })
    }

    fn raw_qp(&self) -> Result<*mut bindings::ib_qp> {
        if !self.qp.as_ref().is_some_and(|qp| qp.qp_alive.get()) {
            return Err(EINVAL);
        }
        // SAFETY: `raw` is live; its QP exists while `qp_alive` is set.
        Ok(unsafe { (*self.raw.as_ptr()).qp }.cast())
    }

    /// A handle that posts Receives without borrowing the identifier, for
    /// completion handlers that repost their buffer.
    pub(crate) fn qp_handle(&self) -> Result<QpHandle> {
        let qp = self.raw_qp()?;
        self.posted.store(true, Ordering::Relaxed);
        Ok(QpHandle { qp })
    }

    /// Posts `buf` as one Receive.
    ///
    /// # Safety
    ///
    /// `buf` must not be posted already, and must stay alive until its
    /// completion is delivered: calling [`CmId::quiesce`] before dropping the
    /// buffer guarantees that.
    pub(crate) unsafe fn post_recv<C: CompletionHandler>(&self, buf: &WorkBuf<'_, C>) -> Result {
        let qp = self.raw_qp()?;
        let (addr, len, lkey) = buf.sge();
        self.posted.store(true, Ordering::Relaxed);
        // SAFETY: The QP is live; the buffer is mapped and outlives the work
        // request by the function's contract.
        to_result(unsafe { bindings::rpcrdma_rs_post_recv(qp, buf.cqe(), addr, len, lkey) })
    }

    /// Posts the first `len` bytes of `buf` as one signaled Send.
    ///
    /// # Safety
    ///
    /// As for [`CmId::post_recv`].
    pub(crate) unsafe fn post_send<C: CompletionHandler>(
        &self,
        buf: &WorkBuf<'_, C>,
        len: u32,
    ) -> Result {
        let qp = self.raw_qp()?;
        let (addr, max, lkey) = buf.sge();
        if len > max {
            return Err(errno::emsgsize());
        }
        self.posted.store(true, Ordering::Relaxed);
        // SAFETY: As in `post_recv`.
        to_result(unsafe { bindings::rpcrdma_rs_post_send(qp, buf.cqe(), addr, len, lkey) })
    }

    /// Stops the QP for good: moves it to the error state, waits until
    /// every posted work request has completed or been flushed, then
    /// destroys the QP and frees its CQs (completions still queued, if the
    /// drain could not be posted, are discarded). Afterwards the peer
    /// reaches nothing through the QP, the device touches no buffer, and no
    /// completion handler runs for it again: what the work requests
    /// referred to may be freed. The PD stays until the identifier goes.
    ///
    /// The QP is destroyed even after a drain that reports success: a
    /// device's own drain method cannot report a failure. An error says
    /// the drain could not be posted.
    ///
    /// Each queue needs room for one more work request than the caller
    /// ever posts (the drain's own), and the caller must have stopped
    /// posting.
    pub(crate) fn quiesce(&self) -> Result {
        let Ok(qp) = self.raw_qp() else {
            return Ok(());
        };
        let mut drained = Ok(());
        if self.posted.load(Ordering::Acquire) {
            // SAFETY: The QP is live, its CQs are polled from a workqueue,
            // and the caller has stopped posting.
            drained = to_result(unsafe { bindings::rpcrdma_rs_drain_qp(qp) });
        }
        // SAFETY: The QP exists (`raw_qp` succeeded); nothing posts to it
        // any more. The device stops all access on return.
        unsafe { bindings::rdma_destroy_qp(self.raw.as_ptr()) };
        if let Some(res) = self.qp.as_ref() {
            res.qp_alive.set(false);
            // `ib_free_cq` waits for a handler in progress, and no
            // completion is delivered afterwards.
            drop(res.cqs.take());
        }
        self.posted.store(false, Ordering::Release);
        drained
    }

    /// Starts an orderly disconnect; the handler is told `Disconnected`.
    pub(crate) fn disconnect(&self) -> Result {
        // SAFETY: `raw` is live (type invariant).
        to_result(unsafe { bindings::rdma_disconnect(self.raw.as_ptr()) })
    }
}

/// A queue pair's raw handle, for reposting Receives from completion
/// handlers. Using it is unsafe: the caller must know the QP still exists.
#[derive(Clone, Copy)]
pub(crate) struct QpHandle {
    pub(super) qp: *mut bindings::ib_qp,
}

// SAFETY: Verbs on a QP may be called from any thread.
unsafe impl Send for QpHandle {}
// SAFETY: As above; posting does its own locking.
unsafe impl Sync for QpHandle {}

impl QpHandle {
    /// Posts a completed Receive buffer again.
    ///
    /// # Safety
    ///
    /// The QP must not have been destroyed (its [`CmId`] is alive and has
    /// not been drained since the handle was taken), and the buffer must
    /// stay alive until its completion is delivered.
    pub(crate) unsafe fn post_recv<C: CompletionHandler>(&self, rep: Received<'_, C>) -> Result {
        // The borrow of the bytes ends here, before the device may write.
        let buf = rep.into_buf();
        let (addr, len, lkey) = buf.sge();
        // SAFETY: The QP is live and the buffer outlives the request, by
        // the function's contract; it was not posted (it was `Received`).
        to_result(unsafe { bindings::rpcrdma_rs_post_recv(self.qp, buf.cqe(), addr, len, lkey) })
    }
}

impl<H: CmHandler> Drop for CmId<H> {
    fn drop(&mut self) {
        // Drains and destroys the QP unless the owner did (a no-op then).
        let _ = self.quiesce();
        // The QP is gone: its CQs and PD may go.
        self.qp = None;
        // SAFETY: Ours to destroy (type invariant). This waits for a
        // handler in progress, and no event is delivered afterwards.
        unsafe { bindings::rdma_destroy_id(self.raw.as_ptr()) };
        // SAFETY: `context` came from `into_foreign` in `new`, and the
        // identifier that used it is gone.
        drop(unsafe { Arc::<H>::from_foreign(self.context) });
    }
}

/// The connection manager's event handler for identifiers of handler `H`.
///
/// # Safety
///
/// `id` was created by [`CmId::<H>::new`], so its context is an `Arc<H>`
/// kept alive until `rdma_destroy_id`; `event` is valid during the call.
unsafe extern "C" fn cm_handler<H: CmHandler>(
    id: *mut bindings::rdma_cm_id,
    event: *mut bindings::rdma_cm_event,
) -> c_int {
    // SAFETY: By the function's contract the context is a live `Arc<H>`.
    let handler = unsafe { <Arc<H> as ForeignOwnable>::borrow((*id).context) };
    // SAFETY: `event` is valid for the duration of the call.
    let raw = unsafe { &*event };
    let event = CmEvent { raw };
    handler.handle(&event);
    // Zero: the identifier stays; `CmId::drop` destroys it.
    0
}
