// SPDX-License-Identifier: GPL-2.0

//! The debugfs connection probe, a test hook: built only with
//! `--cfg rpcrdma_rs_test_hooks` (`make RPCRDMA_RS_TEST_HOOKS=y`, which
//! `scripts/build-module.sh` passes for the test guests), absent from the
//! module users build.
//!
//! `/sys/kernel/debug/rpcrdma_rs/connect`: write `ADDRESS PORT`, read the
//! outcome. The module resolves the address and route, creates the PD, CQs
//! and QP, connects with its private data, reads the peer's, negotiates the
//! inline thresholds, sends an NFSv3 NULL call, and disconnects, all with
//! `connect.rs`'s parameters and event handling but none of the
//! transport's state: it offers the inline sizes of the module parameters
//! and asks for `slot_table_entries` credits, as a new transport's first
//! connection would. `ADDRESS PORT vers2` sends the call with transport
//! version 2, which a version 1 responder must refuse with RDMA_ERROR
//! ERR_VERS (RFC 8166 section 5.3.4): the one way to make a well-behaved
//! server send an RDMA_ERROR. `selftests/rpcrdma_rs/connect_probe.sh` and
//! the wire corpus capture (`scripts/make-wire-corpus.sh`) drive it.

use super::connect::{self, requester_params, ConnEvents, MAX_PEER_PRIVATE, RESOLVE_TIMEOUT_MS};
use crate::{
    debugfs::{self, seq_print, SeqFile},
    errno,
    proto::{
        header::{self, Body, DecodeLimits, Message, MsgProc, RdmaError},
        private_data::{self, LocalSettings, Negotiated, PrivateData},
        xdr::{XdrReader, XdrWriter},
    },
    rdma::{
        CmEvent, CmEventKind, CmHandler, CmId, Completion, CompletionHandler, CompletionInfo,
        QpCaps, Received, RecvBuf, SendBuf, SockAddr,
    },
    sunrpc::params,
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    fmt, new_condvar, new_mutex,
    prelude::*,
    str::CString,
    sync::{Arc, CondVar, Mutex},
};

/// How much of a received message the report keeps.
const MAX_REPLY_KEPT: usize = 128;
/// RPC: NFS program, version 3, procedure NULL (RFC 1813), AUTH_NONE.
const NFS_PROGRAM: u32 = 100003;
const NFS_V3: u32 = 3;
static NEXT_XID: AtomicU32 = AtomicU32::new(0x5253_0001);

/// What one probe connection's handlers see: the connection manager's
/// events (kept by `ConnEvents`, as for a transport's connection), and the
/// completions of its one Send and one Receive.
#[pin_data]
struct ProbeEvents {
    #[pin]
    conn: ConnEvents,
    #[pin]
    state: Mutex<ProbeState>,
    #[pin]
    changed: CondVar,
}

struct ProbeState {
    /// The last connection manager event, for the report.
    last: Option<(CmEventKind, i32)>,
    /// The Receive's completion and the start of what arrived.
    received: Option<CompletionInfo>,
    reply: [u8; MAX_REPLY_KEPT],
    reply_len: usize,
    /// The Send's completion.
    sent: Option<CompletionInfo>,
}

impl ProbeEvents {
    fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            conn <- ConnEvents::new(),
            state <- new_mutex!(ProbeState {
                last: None,
                received: None,
                reply: [0; MAX_REPLY_KEPT],
                reply_len: 0,
                sent: None,
            }),
            changed <- new_condvar!(),
        })
    }
}

impl CmHandler for ProbeEvents {
    fn handle(&self, event: &CmEvent<'_>) {
        // Kept before `conn` wakes its waiter: a failed step reports it.
        self.state.lock().last = Some((event.kind(), event.status()));
        self.conn.handle(event);
    }
}

impl CompletionHandler for ProbeEvents {
    fn sent(&self, _buf: SendBuf<Self>, completion: &Completion) {
        let mut state = self.state.lock();
        if state.sent.is_some() {
            // Flushed at teardown: nothing to do.
            return;
        }
        state.sent = Some(completion.info());
        drop(state);
        self.changed.notify_all();
    }

    fn received(&self, rep: Received<Self>, completion: &Completion) {
        let mut state = self.state.lock();
        if state.received.is_some() {
            return;
        }
        state.reply_len = connect::copy_prefix(&mut state.reply, rep.data());
        state.received = Some(completion.info());
        drop(state);
        self.changed.notify_all();
    }
}

/// The outcome of one NULL call over the connection.
#[derive(Clone, Copy, Debug)]
struct NullCall {
    xid: u32,
    reply_bytes: u32,
    answer: Answer,
    invalidated_rkey: Option<u32>,
}

/// What the server answered the NULL call with.
#[derive(Clone, Copy, Debug)]
enum Answer {
    /// An RPC Reply, and the credits its transport header granted.
    Reply { credit: u32, accepted: bool },
    /// RDMA_ERROR ERR_VERS, with the versions the server supports.
    VersionRefused { low: u32, high: u32 },
}

/// Encodes an RDMA_MSG carrying an NFSv3 NULL call, asking for `credit`
/// credits, into `out`.
fn encode_null_call(out: &mut [u8], xid: u32, credit: u32) -> Result<usize> {
    let hdr = Message {
        xid,
        credit,
        proc: MsgProc::Msg,
        read_list: &[],
        write_list: &[],
        reply_chunk: None,
    }
    .encode(out)
    .map_err(|_| errno::emsgsize())?;
    let rpc = out.get_mut(hdr..).ok_or(errno::emsgsize())?;
    let mut w = XdrWriter::new(rpc);
    // xid, CALL, RPC version 2, program, version, procedure, AUTH_NONE
    // credential and verifier (flavor 0, empty body).
    for word in [xid, 0, 2, NFS_PROGRAM, NFS_V3, 0, 0, 0, 0, 0] {
        w.put_u32(word).map_err(|_| errno::emsgsize())?;
    }
    hdr.checked_add(w.len()).ok_or(errno::emsgsize())
}

/// Checks a received message answers the NULL call `xid`: with an
/// RDMA_MSG RPC Reply, or, when the call was sent as version 2
/// (`bad_version`), with RDMA_ERROR ERR_VERS and nothing else.
fn check_null_reply(msg: &[u8], xid: u32, bad_version: bool) -> Result<Answer> {
    let (hdr, hdr_len) = header::decode(msg, &DecodeLimits::REPLY).map_err(|e| {
        pr_warn!("NULL reply: bad transport header: {:?}\n", e);
        errno::eproto()
    })?;
    if hdr.xid != xid {
        return Err(errno::eproto());
    }
    match (bad_version, hdr.body) {
        (true, Body::Error(RdmaError::Vers { low, high })) => {
            return Ok(Answer::VersionRefused { low, high })
        }
        (false, Body::Msg(_)) => {}
        _ => return Err(errno::eproto()),
    }
    let mut r = XdrReader::new(msg.get(hdr_len..).ok_or(errno::eproto())?);
    let mut word = || r.get_u32().map_err(|_| errno::eproto());
    // xid, REPLY, MSG_ACCEPTED, verifier flavor and length.
    if word()? != xid || word()? != 1 {
        return Err(errno::eproto());
    }
    let accepted = word()? == 0;
    if accepted {
        let _flavor = word()?;
        let verf_len = word()?;
        for _ in 0..verf_len.div_ceil(4) {
            word()?;
        }
        // accept_stat SUCCESS
        let accepted = word()? == 0;
        return Ok(Answer::Reply {
            credit: hdr.credit,
            accepted,
        });
    }
    Ok(Answer::Reply {
        credit: hdr.credit,
        accepted: false,
    })
}

/// How far a connection attempt got.
#[derive(Clone, Copy, Debug)]
enum Outcome {
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
struct Report {
    peer: CString,
    device: Option<CString>,
    /// What the attempt offers, read once from the module parameters.
    local: LocalSettings,
    sent: PrivateData,
    peer_private: [u8; MAX_PEER_PRIVATE],
    peer_private_len: usize,
    negotiated: Option<Negotiated>,
    null_call: Option<NullCall>,
    outcome: Outcome,
}

/// Connects to `addr`:`port`, exchanges private data, sends an NFSv3 NULL
/// call (with transport version 2 if `bad_version`) and checks its reply,
/// and disconnects.
fn connect_once(addr: &str, port: &str, bad_version: bool) -> Result<Report> {
    // Until `prepare` finds the device, and so whether to offer Send With
    // Invalidate, what a device that checks keys would be offered.
    let local = connect::local(true);
    let mut report = Report {
        peer: CString::try_from_fmt(fmt!("{} {}", addr, port))?,
        device: None,
        local,
        sent: local.private_data(),
        peer_private: [0; MAX_PEER_PRIVATE],
        peer_private_len: 0,
        negotiated: None,
        null_call: None,
        outcome: Outcome::Connected,
    };
    let events = Arc::pin_init(ProbeEvents::new(), GFP_KERNEL)?;
    let mut id = CmId::new(events.clone())?;
    let mut stage = "parsing the address";
    let result = prepare(&mut id, &events, &mut report, &mut stage, addr, port)
        .and_then(|()| exchange(&id, &events, &mut report, &mut stage, bad_version));
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
    // Destroys the QP, then the CQs, PD and identifier.
    drop(id);
    Ok(report)
}

/// Resolves the address and route and creates the QP.
fn prepare(
    id: &mut CmId<ProbeEvents>,
    events: &ProbeEvents,
    report: &mut Report,
    stage: &mut &'static str,
    addr: &str,
    port: &str,
) -> Result {
    let dst = SockAddr::parse(
        &CString::try_from_fmt(fmt!("{}", addr))?,
        &CString::try_from_fmt(fmt!("{}", port))?,
    )?;

    *stage = "resolving the address";
    id.resolve_addr(&dst, RESOLVE_TIMEOUT_MS)?;
    events.conn.await_event(CmEventKind::AddrResolved)?;

    *stage = "resolving the route";
    id.resolve_route(RESOLVE_TIMEOUT_MS)?;
    events.conn.await_event(CmEventKind::RouteResolved)?;

    *stage = "creating the queue pair";
    let device = id.device().ok_or(ENODEV)?;
    report.device = Some(CString::try_from(device.name())?);
    // The offer a connection over this device would make.
    report.local = connect::local(device.invalidation_checks_key());
    report.sent = report.local.private_data();
    id.create_qp(&QpCaps {
        cq_entries: 16,
        // One more each than ever posted: the drain's.
        max_send_wr: 8,
        max_recv_wr: 8,
        max_send_sge: 2,
        max_recv_sge: 1,
    })
}

/// Connects, negotiates, has a NULL call answered and disconnects. A
/// posted buffer belongs to the QP until its completion hands it to
/// `events` (which drops it), or until the QP is shut down.
fn exchange(
    id: &CmId<ProbeEvents>,
    events: &Arc<ProbeEvents>,
    report: &mut Report,
    stage: &mut &'static str,
    bad_version: bool,
) -> Result {
    let local = report.local;
    let size = usize::try_from(local.recv_size).map_err(|_| EINVAL)?;
    let recv = RecvBuf::<ProbeEvents>::new(id.qp()?, size)?;
    let mut send = SendBuf::<ProbeEvents>::new(id.qp()?, size)?;
    let responder_resources = id
        .device()
        .map_or(0, |d| u8::try_from(d.max_qp_rd_atom()).unwrap_or(u8::MAX));

    let steps = move || -> Result {
        // A Receive is posted before connecting, as the C client does:
        // with no RNR retries, the peer must never find none.
        *stage = "posting a Receive";
        recv.post(id.qp()?).map_err(|(_, e)| e)?;

        *stage = "connecting";
        let sent = report.sent.to_bytes();
        id.connect(&requester_params(&sent, responder_resources))?;
        events.conn.await_event(CmEventKind::Established)?;
        (report.peer_private, report.peer_private_len) = events.conn.peer_private();
        let peer = report.peer_private.get(..report.peer_private_len);
        report.negotiated = Some(private_data::negotiate(&local, peer));

        *stage = "sending an NFSv3 NULL call";
        let xid = NEXT_XID.fetch_add(1, Ordering::Relaxed);
        let mut call = [0u8; 128];
        let len = encode_null_call(&mut call, xid, params::slot_table_entries())?;
        if bad_version {
            // rdma_vers, the header's second word.
            call.get_mut(4..8)
                .ok_or_else(errno::emsgsize)?
                .copy_from_slice(&2u32.to_be_bytes());
        }
        let bytes = call.get(..len).ok_or_else(errno::emsgsize)?;
        send.fill_with(|out| {
            out.get_mut(..bytes.len())
                .ok_or_else(errno::emsgsize)?
                .copy_from_slice(bytes);
            Ok(bytes.len())
        })?;
        // Signaled: its buffer comes back by its own completion, as the
        // probe posts no later Send that could hand it back.
        send.post(id.qp()?, true).map_err(|(_, e)| e)?;

        *stage = "waiting for the NULL reply";
        let (received, reply, reply_len) =
            connect::wait_for(&events.state, &events.changed, |s| {
                s.received.map(|c| (c, s.reply, s.reply_len))
            })?;
        if !received.is_success() {
            pr_warn!(
                "NULL reply: Receive completed with status {}\n",
                received.status
            );
            return Err(EIO);
        }
        let answer = check_null_reply(reply.get(..reply_len).ok_or(EIO)?, xid, bad_version)?;
        report.null_call = Some(NullCall {
            xid,
            reply_bytes: received.byte_len,
            answer,
            invalidated_rkey: received.invalidated_rkey,
        });

        *stage = "disconnecting";
        id.disconnect()?;
        events.conn.await_event(CmEventKind::Disconnected)
    };
    let result = steps();
    // Every posted request completes or is flushed, or is freed with the
    // QP; an unposted buffer went with `steps`.
    let _ = id.quiesce();
    result
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
        if let Some(c) = &r.null_call {
            match c.answer {
                Answer::Reply { credit, accepted } => seq_print!(
                    m,
                    "null call: xid {:#010x} reply {} bytes, {}, credits granted {}",
                    c.xid,
                    c.reply_bytes,
                    if accepted { "accepted" } else { "not accepted" },
                    credit
                ),
                Answer::VersionRefused { low, high } => seq_print!(
                    m,
                    "null call: xid {:#010x} as version 2: RDMA_ERROR ERR_VERS {} bytes, versions {} to {}",
                    c.xid,
                    c.reply_bytes,
                    low,
                    high
                ),
            }
            if let Some(rkey) = c.invalidated_rkey {
                seq_print!(m, ", remotely invalidated {:#x}", rkey);
            }
            seq_print!(m, "\n");
        }
        Ok(())
    }

    fn store(&self, input: &[u8]) -> Result {
        let text = core::str::from_utf8(input).map_err(|_| EINVAL)?;
        let mut words = text.split_whitespace();
        let (Some(addr), Some(port)) = (words.next(), words.next()) else {
            return Err(EINVAL);
        };
        let bad_version = match (words.next(), words.next()) {
            (None, None) => false,
            (Some("vers2"), None) => true,
            _ => return Err(EINVAL),
        };
        let report = connect_once(addr, port, bad_version)?;
        let outcome = report.outcome;
        *self.last.lock() = Some(report);
        match outcome {
            Outcome::Connected => Ok(()),
            Outcome::Failed { error, .. } => Err(Error::from_errno(error)),
        }
    }
}
