// SPDX-License-Identifier: GPL-2.0

//! RDMA connection manager identifiers (`struct rdma_cm_id`): one
//! active connection's endpoint, and the queue pair created on it.

use super::{
    qp::{Qp, QpCaps},
    Device,
};
use crate::bindings;
use core::{marker::PhantomData, ptr::NonNull};
use kernel::{
    error::{from_err_ptr, to_result},
    ffi::{c_int, c_void},
    prelude::*,
    sync::Arc,
    types::{ForeignOwnable, Opaque},
};

/// A socket address, IPv4 or IPv6.
pub(crate) struct SockAddr(bindings::__kernel_sockaddr_storage);

impl SockAddr {
    /// Parses `addr` (IPv4, or IPv6 with an optional `%scope`) and `port`.
    /// Only the test hooks' connection probe takes an address as text.
    #[cfg(rpcrdma_rs_test_hooks)]
    pub(crate) fn parse(addr: &kernel::str::CStr, port: &kernel::str::CStr) -> Result<Self> {
        let mut ss = bindings::__kernel_sockaddr_storage::default();
        // SAFETY: Both strings are NUL-terminated; `ss` is valid for writes.
        to_result(unsafe {
            bindings::rpcrdma_rs_parse_addr(addr.as_char_ptr(), port.as_char_ptr(), &mut ss)
        })?;
        Ok(Self(ss))
    }

    /// Copies an address the RPC layer holds (`len` bytes of `raw`; 0 when
    /// the RPC layer has none usable).
    pub(crate) fn from_storage(
        raw: &bindings::__kernel_sockaddr_storage,
        len: usize,
    ) -> Result<Self> {
        if len == 0 || len > core::mem::size_of::<bindings::__kernel_sockaddr_storage>() {
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
/// released only by `drop`. `qp`, once set, is the QP created on `raw`;
/// `drop` shuts it down before destroying `raw`.
pub(crate) struct CmId<H: CmHandler> {
    raw: NonNull<bindings::rdma_cm_id>,
    context: *const c_void,
    qp: Option<Arc<Qp>>,
    _handler: PhantomData<Arc<H>>,
}

// SAFETY: The identifier's functions may be called from any thread; the
// handler runs on the connection manager's own workqueue. Not `Sync`: the
// connection manager does not serialise, e.g., `rdma_connect` against
// `rdma_disconnect` on one identifier.
unsafe impl<H: CmHandler> Send for CmId<H> {}

/// A network namespace (`struct net`), borrowed from what holds a
/// reference on it.
///
/// # Invariants
///
/// The namespace is alive while the reference to this exists.
#[repr(transparent)]
pub(crate) struct NetNs(Opaque<bindings::net>);

impl NetNs {
    /// Wraps `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must point to a namespace that stays alive for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::net) -> &'a Self {
        // CAST: `NetNs` is a transparent wrapper of `bindings::net`.
        // SAFETY: Alive for `'a` by the function's contract.
        // INVARIANT: as above.
        unsafe { &*ptr.cast::<Self>() }
    }

    fn as_ptr(&self) -> *mut bindings::net {
        self.0.get()
    }
}

impl<H: CmHandler> CmId<H> {
    /// Creates an identifier for a reliable-connected (RC) connection in the
    /// initial network namespace; `handler` receives its events. Only the
    /// test hooks' connection probe uses it: a transport connects in its
    /// own namespace (`new_in`).
    #[cfg(rpcrdma_rs_test_hooks)]
    pub(crate) fn new(handler: Arc<H>) -> Result<Self> {
        // SAFETY: NULL is the initial namespace, which always exists.
        unsafe { Self::new_in_raw(handler, core::ptr::null_mut()) }
    }

    /// Creates an identifier for a reliable-connected (RC) connection in
    /// network namespace `net`; `handler` receives its events.
    pub(crate) fn new_in(handler: Arc<H>, net: &NetNs) -> Result<Self> {
        // SAFETY: `net` is alive while borrowed; the identifier takes a
        // reference of its own.
        unsafe { Self::new_in_raw(handler, net.as_ptr()) }
    }

    /// As [`CmId::new_in`], in network namespace `net` (NULL: the initial
    /// one).
    ///
    /// # Safety
    ///
    /// `net`, if not NULL, must be alive during the call; the identifier
    /// takes its own reference.
    unsafe fn new_in_raw(handler: Arc<H>, net: *mut bindings::net) -> Result<Self> {
        let context = handler.into_foreign();
        // SAFETY: `cm_handler::<H>` matches the handler type and `context`
        // stays valid until `rdma_destroy_id` in `drop`; `net` is alive by
        // the function's contract, and `rdma_create_id` takes a reference.
        let raw = unsafe {
            bindings::rpcrdma_rs_create_id(net, Some(cm_handler::<H>), context.cast_mut())
        };
        match from_err_ptr(raw).ok().and_then(NonNull::new) {
            // INVARIANT: created with `context` and `cm_handler::<H>`.
            Some(raw) => Ok(Self {
                raw,
                context,
                qp: None,
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
        // SAFETY: The connection manager's removal of a device waits until
        // every identifier bound to it is destroyed (`cma_process_remove`),
        // so the device stays registered while the borrow of `self` lives.
        Some(unsafe { Device::from_raw(device.cast()) })
    }

    /// Creates the identifier's RC queue pair, with a protection domain and
    /// send and receive CQs of its own on the resolved device. Buffers and
    /// memory regions are made for it with [`CmId::qp`].
    pub(crate) fn create_qp(&mut self, caps: &QpCaps) -> Result {
        if self.qp.is_some() {
            return Err(EBUSY);
        }
        let device = self.device().ok_or(EINVAL)?;
        // SAFETY: `raw` is live and has no QP (checked above); `drop` shuts
        // the QP down before destroying `raw`, and before letting go of
        // `context`, the handler `Arc<H>` turned foreign (type invariant).
        let qp = unsafe {
            Qp::create(
                self.raw,
                device,
                caps,
                self.context,
                core::any::TypeId::of::<H>(),
            )
        }?;
        // INVARIANT: the QP created on `raw`.
        self.qp = Some(qp);
        Ok(())
    }

    /// The identifier's queue pair; `EINVAL` before [`CmId::create_qp`].
    pub(crate) fn qp(&self) -> Result<&Arc<Qp>> {
        self.qp.as_ref().ok_or(EINVAL)
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

    /// Shuts the queue pair down, if there is one: see [`Qp::shutdown`].
    /// Afterwards nothing posted on it can reach memory or complete.
    pub(crate) fn quiesce(&self) -> Result {
        self.qp.as_ref().map_or(Ok(()), |qp| qp.shutdown())
    }

    /// Starts an orderly disconnect; the handler is told `Disconnected`.
    pub(crate) fn disconnect(&self) -> Result {
        // SAFETY: `raw` is live (type invariant).
        to_result(unsafe { bindings::rdma_disconnect(self.raw.as_ptr()) })
    }
}

impl<H: CmHandler> Drop for CmId<H> {
    fn drop(&mut self) {
        // Drains and destroys the QP unless the owner did (a no-op then):
        // the `Qp` must not use `raw` after it is destroyed. Its PD stays
        // while buffers and regions made for it hold it.
        let _ = self.quiesce();
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
