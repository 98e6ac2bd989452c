// SPDX-License-Identifier: GPL-2.0

//! Connection set-up through the RDMA connection manager (the C
//! `verbs.c`: `rpcrdma_create_id`, `rpcrdma_ep_create`,
//! `rpcrdma_xprt_connect`), with the RFC 8797 private data exchange.
//!
//! Until the transport class exists, a connection is made on request from
//! debugfs (`/sys/kernel/debug/rpcrdma_rs/connect`: write `ADDRESS PORT`,
//! read the outcome): the module resolves the address and route, creates
//! the PD, CQs and QP, connects with its private data, reads the peer's,
//! negotiates the inline thresholds, and disconnects.

use crate::{
    debugfs::{self, seq_print, SeqFile},
    errno,
    proto::private_data::{self, LocalSettings, Negotiated, PrivateData},
    rdma::{CmEvent, CmEventKind, CmHandler, CmId, ConnParam, Cq, Pd, QpCaps, SockAddr},
};
use kernel::{
    fmt, new_condvar, new_mutex,
    prelude::*,
    str::CString,
    sync::{Arc, CondVar, CondVarTimeoutResult, Mutex},
    time::msecs_to_jiffies,
};

/// What this requester offers (the C client's defaults, RPCRDMA_DEF_INLINE).
const LOCAL: LocalSettings = LocalSettings {
    send_size: 4096,
    recv_size: 4096,
    remote_invalidation: true,
};
/// Address and route resolution time limit (C: RDMA_RESOLVE_TIMEOUT).
const RESOLVE_TIMEOUT_MS: u32 = 5000;
/// How long to wait for each connection manager event.
const EVENT_TIMEOUT_MS: u32 = 20000;
/// The largest private data area the connection manager hands a consumer.
const MAX_PEER_PRIVATE: usize = 196;

/// The connection manager's events for one connection, as they arrive.
#[pin_data]
pub(crate) struct ConnEvents {
    #[pin]
    state: Mutex<EventState>,
    #[pin]
    changed: CondVar,
}

struct EventState {
    /// Events seen so far; waiters compare it to what they have seen.
    count: u64,
    last: Option<(CmEventKind, i32)>,
    peer_private: [u8; MAX_PEER_PRIVATE],
    peer_private_len: usize,
}

impl ConnEvents {
    fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            state <- new_mutex!(EventState {
                count: 0,
                last: None,
                peer_private: [0; MAX_PEER_PRIVATE],
                peer_private_len: 0,
            }),
            changed <- new_condvar!(),
        })
    }

    /// Waits for the next event after the `seen`-th one.
    fn next_event(&self, seen: &mut u64) -> Result<(CmEventKind, i32)> {
        let mut state = self.state.lock();
        let mut left = msecs_to_jiffies(EVENT_TIMEOUT_MS);
        while state.count == *seen {
            match self.changed.wait_interruptible_timeout(&mut state, left) {
                CondVarTimeoutResult::Timeout => return Err(errno::etimedout()),
                CondVarTimeoutResult::Signal { .. } => return Err(EINTR),
                CondVarTimeoutResult::Woken { jiffies } => left = jiffies,
            }
        }
        *seen = state.count;
        state.last.ok_or(EINVAL)
    }
}

impl CmHandler for ConnEvents {
    fn handle(&self, event: &CmEvent<'_>) {
        let mut state = self.state.lock();
        if event.kind() == CmEventKind::Established {
            // Copy: the buffer is the connection manager's, valid only now.
            let data = event.private_data();
            let len = data.len().min(MAX_PEER_PRIVATE);
            if let (Some(dst), Some(src)) = (state.peer_private.get_mut(..len), data.get(..len)) {
                dst.copy_from_slice(src);
                state.peer_private_len = len;
            }
        }
        state.count = state.count.wrapping_add(1);
        state.last = Some((event.kind(), event.status()));
        drop(state);
        self.changed.notify_all();
    }
}

/// How far a connection attempt got.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Outcome {
    /// Connected, negotiated, and disconnected cleanly.
    Connected,
    /// Failed while `stage`; `event` is the last connection manager event
    /// (if any) and `error` the errno that ended it.
    Failed {
        stage: &'static str,
        event: Option<(CmEventKind, i32)>,
        error: i32,
    },
}

/// The result of one connection attempt, as reported in debugfs.
pub(crate) struct Report {
    peer: CString,
    device: Option<CString>,
    sent: PrivateData,
    peer_private: [u8; MAX_PEER_PRIVATE],
    peer_private_len: usize,
    negotiated: Option<Negotiated>,
    outcome: Outcome,
}

/// Connects to `addr`:`port`, exchanges private data, and disconnects.
fn connect_once(addr: &str, port: &str) -> Result<Report> {
    let mut report = Report {
        peer: CString::try_from_fmt(fmt!("{} {}", addr, port))?,
        device: None,
        sent: LOCAL.private_data(),
        peer_private: [0; MAX_PEER_PRIVATE],
        peer_private_len: 0,
        negotiated: None,
        outcome: Outcome::Connected,
    };
    let events = Arc::pin_init(ConnEvents::new(), GFP_KERNEL)?;
    let mut id = CmId::new(events.clone())?;
    let mut seen = 0;
    let mut stage = "parsing the address";

    let result = (|| -> Result {
        let dst = SockAddr::parse(
            &CString::try_from_fmt(fmt!("{}", addr))?,
            &CString::try_from_fmt(fmt!("{}", port))?,
        )?;

        stage = "resolving the address";
        id.resolve_addr(&dst, RESOLVE_TIMEOUT_MS)?;
        expect(&events, &mut seen, CmEventKind::AddrResolved)?;

        stage = "resolving the route";
        id.resolve_route(RESOLVE_TIMEOUT_MS)?;
        expect(&events, &mut seen, CmEventKind::RouteResolved)?;

        stage = "creating the queue pair";
        let device = id.device().ok_or(ENODEV)?;
        report.device = Some(CString::try_from_fmt(fmt!("{}", device.name()))?);
        let responder_resources = u8::try_from(device.max_qp_rd_atom()).unwrap_or(u8::MAX);
        let pd = Pd::new(device)?;
        let send_cq = Cq::new(device, 16)?;
        let recv_cq = Cq::new(device, 16)?;
        let caps = QpCaps {
            max_send_wr: 8,
            max_recv_wr: 8,
            max_send_sge: 2,
            max_recv_sge: 1,
        };
        id.create_qp(pd, send_cq, recv_cq, &caps)?;

        stage = "connecting";
        let sent = report.sent.to_bytes();
        id.connect(&ConnParam {
            private_data: &sent,
            // Offer RDMA Read to the server but do not initiate it (C:
            // rpcrdma_ep_create); a small retry count finds a vanished
            // peer quickly; RPC-over-RDMA credits replace RNR retries.
            responder_resources,
            initiator_depth: 0,
            retry_count: 6,
            rnr_retry_count: 0,
        })?;
        expect(&events, &mut seen, CmEventKind::Established)?;

        {
            let state = events.state.lock();
            report.peer_private = state.peer_private;
            report.peer_private_len = state.peer_private_len;
        }
        let peer = report.peer_private.get(..report.peer_private_len);
        report.negotiated = Some(private_data::negotiate(&LOCAL, peer));

        stage = "disconnecting";
        id.disconnect()?;
        expect(&events, &mut seen, CmEventKind::Disconnected)?;
        Ok(())
    })();

    if let Err(e) = result {
        let event = events.state.lock().last;
        report.outcome = Outcome::Failed {
            stage,
            event,
            error: e.to_errno(),
        };
        pr_warn!(
            "connecting to {} {}: failed while {}: {:?}\n",
            addr,
            port,
            stage,
            e
        );
    }
    // Destroys the QP, CQs, PD and identifier, in that order.
    drop(id);
    Ok(report)
}

/// Waits for the next event and checks it is `want`.
fn expect(events: &ConnEvents, seen: &mut u64, want: CmEventKind) -> Result {
    let (kind, status) = events.next_event(seen)?;
    if kind != want {
        return Err(match kind {
            CmEventKind::Rejected => errno::econnrefused(),
            CmEventKind::Unreachable | CmEventKind::AddrError | CmEventKind::RouteError => {
                errno::ehostunreach()
            }
            CmEventKind::DeviceRemoval => ENODEV,
            _ if status < 0 => Error::from_errno(status),
            _ => EIO,
        });
    }
    Ok(())
}

/// The debugfs `connect` file: a write makes one connection attempt, a read
/// shows the last attempt's report.
#[pin_data]
pub(crate) struct ConnectProbe {
    #[pin]
    last: Mutex<Option<Report>>,
}

impl ConnectProbe {
    /// No attempt yet.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            last <- new_mutex!(None),
        })
    }
}

impl debugfs::Show for ConnectProbe {
    const WRITABLE: bool = true;

    fn show(&self, m: &SeqFile) -> Result {
        let last = self.last.lock();
        let Some(r) = last.as_ref() else {
            seq_print!(m, "no connection attempted\n");
            return Ok(());
        };
        seq_print!(m, "peer: {}\n", &*r.peer);
        if let Some(device) = &r.device {
            seq_print!(m, "device: {}\n", &**device);
        }
        match r.outcome {
            Outcome::Connected => seq_print!(m, "outcome: connected\n"),
            Outcome::Failed {
                stage,
                event,
                error,
            } => {
                seq_print!(m, "outcome: failed while {} (errno {})", stage, error);
                if let Some((kind, status)) = event {
                    seq_print!(m, ", last event {:?} status {}", kind, status);
                }
                seq_print!(m, "\n");
            }
        }
        seq_print!(m, "sent private data:");
        for b in r.sent.to_bytes() {
            seq_print!(m, " {:02x}", b);
        }
        seq_print!(m, "\npeer private data ({} bytes):", r.peer_private_len);
        for b in r.peer_private.iter().take(r.peer_private_len.min(16)) {
            seq_print!(m, " {:02x}", b);
        }
        seq_print!(m, "\n");
        if let Some(n) = &r.negotiated {
            match n.peer {
                Some(p) => seq_print!(
                    m,
                    "peer: send {} receive {} remote invalidation {}\n",
                    p.send_size(),
                    p.recv_size(),
                    p.remote_invalidation()
                ),
                None => seq_print!(m, "peer: no valid RFC 8797 private data\n"),
            }
            seq_print!(
                m,
                "inline send {} receive {} remote invalidation {}\n",
                n.inline_send,
                n.inline_recv,
                n.remote_invalidation
            );
        }
        Ok(())
    }

    fn store(&self, input: &[u8]) -> Result {
        let text = core::str::from_utf8(input).map_err(|_| EINVAL)?;
        let mut words = text.split_whitespace();
        let (Some(addr), Some(port), None) = (words.next(), words.next(), words.next()) else {
            return Err(EINVAL);
        };
        let report = connect_once(addr, port)?;
        let failed = matches!(report.outcome, Outcome::Failed { .. });
        *self.last.lock() = Some(report);
        if failed {
            return Err(errno::econnrefused());
        }
        Ok(())
    }
}
