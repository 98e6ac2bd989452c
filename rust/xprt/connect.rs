// SPDX-License-Identifier: GPL-2.0

//! Connection set-up through the RDMA connection manager (the C
//! `verbs.c`: `rpcrdma_create_id`, `rpcrdma_ep_create`,
//! `rpcrdma_xprt_connect`): what this requester offers in its RFC 8797
//! private data (from the module parameters), its connection parameters,
//! and the connection manager's events as a connecting thread waits for
//! them. `verbs.rs` builds the transport's connections with them.

use crate::{
    errno,
    proto::private_data::{self, LocalSettings},
    rdma::{CmEvent, CmEventKind, CmHandler, ConnParam},
    sunrpc::params,
};
use kernel::{
    new_condvar, new_mutex,
    prelude::*,
    sync::{CondVar, CondVarTimeoutResult, Mutex},
    time::msecs_to_jiffies,
};

/// What a new connection offers, read once for it from the module
/// parameters, as C's `rpcrdma_ep_create` reads its sysctls: a change
/// applies from the next connection on. RFC 8797 private data says sizes
/// in whole KiB, so a size that is not a multiple of 1024 is rounded down
/// here, for the offer and for this side's thresholds alike. (C offers it
/// rounded down but keeps the exact value as its threshold: with 1500 it
/// would take a 1400-byte reply inline without offering a Reply chunk,
/// which a server holding it to the 1024 offered could not send.)
///
/// Send With Invalidate is offered when the device checks the key the
/// server names (`invalidation_checks_key`, from
/// `Device::invalidation_checks_key`), the same property by which the
/// `rdma` layer takes a Receive's invalidation as proof
/// (`RemoteInvalidation`). The C client always offers it; on siw a server
/// that predicted a region's next key could then leave the region
/// registered while its invalidation said it was not.
pub(crate) fn local(invalidation_checks_key: bool) -> LocalSettings {
    LocalSettings {
        send_size: whole_kib(params::max_inline_write()),
        recv_size: whole_kib(params::max_inline_read()),
        remote_invalidation: invalidation_checks_key,
    }
}

/// `size` as the private data can say it: rounded down to a multiple of
/// 1024 (the parameters are 1024 to 65536).
fn whole_kib(size: u32) -> u32 {
    private_data::decode_size(private_data::encode_size(size))
}

/// What sunrpc is told of a failed connection attempt, whose own error
/// `e` is logged and traced: `e` itself if `call_connect_status` (6.12)
/// tries to connect again after it; `ENOTCONN` for a failed allocation,
/// as C says for the allocations it can fail (`rpcrdma_ep_create`), so
/// that every RPC waits for the next attempt; `EHOSTUNREACH` for the rest
/// (the device gone or unable, a status of the connection manager), which
/// fails a soft-connect RPC (mount's first call) at once, as C's errno
/// would, and has any other wait 3 s and try again. Passed on as it is,
/// such an errno would fail every RPC waiting, a hard mount's included.
pub(crate) fn sunrpc_error(e: Error) -> Error {
    if errno::connect_retried(e) {
        e
    } else if e == ENOMEM {
        errno::enotconn()
    } else {
        errno::ehostunreach()
    }
}

/// Address and route resolution time limit (C: RDMA_RESOLVE_TIMEOUT).
pub(crate) const RESOLVE_TIMEOUT_MS: u32 = 5000;
/// How long to wait for each connection manager event.
const EVENT_TIMEOUT_MS: u32 = 20000;
/// The largest private data area the connection manager hands a consumer.
pub(crate) const MAX_PEER_PRIVATE: usize = 196;

/// The connection parameters of an RPC-over-RDMA requester (C:
/// `rpcrdma_ep_create`): offer RDMA Read to the server but do not initiate
/// it; a small retry count finds a vanished peer quickly; credits replace
/// RNR retries.
pub(crate) fn requester_params(private_data: &[u8], responder_resources: u8) -> ConnParam<'_> {
    ConnParam {
        private_data,
        responder_resources,
        initiator_depth: 0,
        retry_count: 6,
        rnr_retry_count: 0,
    }
}

/// Waits on `changed` until `done` holds of what `lock` guards, and returns
/// what `done` says; gives up after the time one connection manager event
/// may take, or on a signal.
pub(super) fn wait_for<S, T>(
    lock: &Mutex<S>,
    changed: &CondVar,
    done: impl Fn(&S) -> Option<T>,
) -> Result<T> {
    let mut state = lock.lock();
    let mut left = msecs_to_jiffies(EVENT_TIMEOUT_MS);
    loop {
        if let Some(v) = done(&state) {
            return Ok(v);
        }
        match changed.wait_interruptible_timeout(&mut state, left) {
            // What woke nobody may still have arrived at the deadline.
            CondVarTimeoutResult::Timeout => {
                return done(&state).ok_or_else(errno::etimedout);
            }
            CondVarTimeoutResult::Signal { .. } => return Err(EINTR),
            CondVarTimeoutResult::Woken { jiffies } => left = jiffies,
        }
    }
}

/// Copies as much of `src` as fits into `dst`; returns how much that was.
pub(super) fn copy_prefix(dst: &mut [u8], src: &[u8]) -> usize {
    let len = src.len().min(dst.len());
    for (d, s) in dst.iter_mut().zip(src) {
        *d = *s;
    }
    len
}

/// The connection manager's events for one connection, as they arrive.
#[pin_data]
pub(crate) struct ConnEvents {
    #[pin]
    state: Mutex<EventState>,
    #[pin]
    changed: CondVar,
}

struct EventState {
    /// Every kind of event seen so far, one bit each (`CmEventKind::bit`):
    /// several events can arrive before a waiter runs (ESTABLISHED then the
    /// peer's DISCONNECTED, DISCONNECTED then TIMEWAIT_EXIT).
    seen: u32,
    last: Option<(CmEventKind, i32)>,
    peer_private: [u8; MAX_PEER_PRIVATE],
    peer_private_len: usize,
}

impl ConnEvents {
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            state <- new_mutex!(EventState {
                seen: 0,
                last: None,
                peer_private: [0; MAX_PEER_PRIVATE],
                peer_private_len: 0,
            }),
            changed <- new_condvar!(),
        })
    }

    /// The private data the peer sent with ESTABLISHED, and its length.
    pub(crate) fn peer_private(&self) -> ([u8; MAX_PEER_PRIVATE], usize) {
        let state = self.state.lock();
        (state.peer_private, state.peer_private_len)
    }

    /// Waits for an event of kind `want`. Fails when an event that ends the
    /// attempt arrives first (a disconnect counts only when not wanted);
    /// ignores the rest (TIMEWAIT_EXIT, ADDR_CHANGE, ...).
    pub(crate) fn await_event(&self, want: CmEventKind) -> Result {
        let mut fatal = [
            CmEventKind::AddrError,
            CmEventKind::RouteError,
            CmEventKind::ConnectError,
            CmEventKind::Unreachable,
            CmEventKind::Rejected,
            CmEventKind::DeviceRemoval,
        ]
        .iter()
        .fold(0, |mask, kind| mask | kind.bit());
        if want != CmEventKind::Disconnected {
            fatal |= CmEventKind::Disconnected.bit();
        }
        let (seen, last) = wait_for(&self.state, &self.changed, |s| {
            (s.seen & (want.bit() | fatal) != 0).then_some((s.seen, s.last))
        })?;
        if seen & want.bit() != 0 {
            return Ok(());
        }
        let (kind, status) = last.unwrap_or((CmEventKind::Other(0), 0));
        Err(match kind {
            CmEventKind::Rejected => errno::econnrefused(),
            CmEventKind::Unreachable | CmEventKind::AddrError | CmEventKind::RouteError => {
                errno::ehostunreach()
            }
            CmEventKind::DeviceRemoval => ENODEV,
            _ if status < 0 => Error::from_errno(status),
            _ => EIO,
        })
    }
}

impl CmHandler for ConnEvents {
    fn handle(&self, event: &CmEvent<'_>) {
        let mut state = self.state.lock();
        if event.kind() == CmEventKind::Established {
            // Copy: the buffer is the connection manager's, valid only now.
            state.peer_private_len = copy_prefix(&mut state.peer_private, event.private_data());
        }
        state.seen |= event.kind().bit();
        state.last = Some((event.kind(), event.status()));
        drop(state);
        self.changed.notify_all();
    }
}
