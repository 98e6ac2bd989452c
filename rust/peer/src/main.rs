// SPDX-License-Identifier: GPL-2.0

//! rpcrdma-peer: an RPC-over-RDMA version 1 responder that serves NFSv3
//! correctly until a scripted fault fires, to show that a kernel client
//! survives a hostile server. See `cli::USAGE`.

mod cli;
mod credits;
mod fuzz;
mod nfs;
mod sys;
mod transport;
mod verbs;
mod xdr;

use cli::{Fault, Options, Parsed, PrivateDataMode, Trigger};
use credits::CreditBook;
use fuzz::{Fuzzer, Mutation};
use rpcrdma_proto::proto::header::{self, DecodeLimits};
use rpcrdma_proto::proto::header2::{self, Error2};
use rpcrdma_proto::proto::private_data::{self, LocalSettings, PrivateData};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use sys::*;
use transport::{Limits, RdmaWrite, Refused};
use verbs::{wc_status_name, Accept, Conn, Listener};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// One event line on stdout, flushed at once: the test reads it while the
/// tool runs.
macro_rules! event {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, $($arg)*);
        let _ = out.flush();
    }};
}
pub(crate) use event;

fn hex(b: &[u8]) -> String {
    if b.is_empty() {
        return "none".into();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The private data bytes we send in `mode`.
fn our_private_data(mode: PrivateDataMode, inline: u32) -> Vec<u8> {
    let ok = PrivateData::new(inline, inline, true);
    let mut b = match mode {
        PrivateDataMode::None => return Vec::new(),
        PrivateDataMode::Sizes0 => PrivateData {
            send_code: 0,
            recv_code: 0,
            ..ok
        },
        PrivateDataMode::SizesMax => PrivateData {
            send_code: 255,
            recv_code: 255,
            ..ok
        },
        PrivateDataMode::RinvOff => PrivateData::new(inline, inline, false),
        _ => ok,
    }
    .to_bytes()
    .to_vec();
    match mode {
        PrivateDataMode::BadMagic => b[0] ^= 0xff,
        PrivateDataMode::Version2 => b[4] = 2,
        // Octets of some other layer first, and an odd count of them, so
        // that the message is not even word-aligned.
        PrivateDataMode::Offset => {
            b.splice(0..0, [0xa5, 0x5a, 0xa5]);
        }
        _ => {}
    }
    b
}

/// What one connection may do, from both sides' private data: the client
/// computes its thresholds from what it understood of ours, so we do too.
fn connection_limits(o: &Options, ours: &[u8], client: Option<PrivateData>) -> (Limits, usize) {
    // The client's view of us: absent when our message is not valid.
    let believed = private_data::decode(ours);
    let local = LocalSettings {
        send_size: believed.send_size(),
        recv_size: believed.recv_size(),
        remote_invalidation: believed.remote_invalidation(),
    };
    let client_bytes = client.map(|c| c.to_bytes());
    let n = private_data::negotiate(&local, client_bytes.as_ref().map(|b| &b[..]));
    let client_recv = client.map_or(1024, |c| c.recv_size()) as usize;
    let limits = Limits {
        credits: o.credits,
        shrink_to: o.shrink_to.unwrap_or(o.credits),
        send_limit: n.inline_send as usize,
        client_recv,
        send_inv: o.send_inv && client.is_some_and(|c| c.remote_invalidation()),
    };
    // Whatever we advertised, take the largest Send the client may make.
    let recv_size = (n.inline_recv as usize).max(4096);
    (limits, recv_size)
}

/// How often the peer reads its --fault-file between connection requests.
const CASE_POLL: Duration = Duration::from_millis(100);

/// How long `send-inv-other-rpc` holds a Reply for another Call (one of
/// Read chunks alone) to come:
/// well inside the client's RPC timeout, which would reset the connection.
const HOLD_LIMIT: Duration = Duration::from_millis(1500);

/// How long `--fuzz` keeps a Reply to send after the next one, when no
/// next one comes.
const REORDER_LIMIT: Duration = Duration::from_millis(300);

/// A Reply held back by `send-inv-other-rpc`.
struct Held {
    xid: u32,
    proc_name: String,
    out: transport::Outgoing,
    since: Instant,
    /// The handles of the Call's Write chunks.
    write_handles: Vec<u32>,
}

/// A Reply waiting to go: at once, or as `--hold-replies` says.
struct Pending {
    xid: u32,
    out: transport::Outgoing,
    /// When its Call arrived.
    arrived: Instant,
    /// The fault due on its Call, for the FRWR probe's line.
    due: Option<Fault>,
    /// `--fuzz`: how the Reply was mutated.
    mutation: Option<Mutation>,
    /// The rkeys its Call offered (for `--fuzz`).
    handles: Vec<u32>,
}

/// What a `send-inv-other-rpc` Reply placed in its Call's Write chunks,
/// written again when the next Call comes.
struct RkeyProbe {
    xid: u32,
    writes: Vec<RdmaWrite>,
    /// When the Reply's Send completed.
    sent: Instant,
}

/// A connection and what the peer keeps of it.
struct Served {
    conn: Box<Conn>,
    limits: Limits,
    /// The Reply `send-inv-other-rpc` holds back.
    held: Option<Held>,
    book: CreditBook,
    /// Replies not sent yet, in arrival order of their Calls.
    queue: VecDeque<Pending>,
    rkey_probe: Option<RkeyProbe>,
    /// A Reply `--fuzz` sends after the next one.
    reordered: Option<Pending>,
    /// Its credits line was logged.
    ended: bool,
}

impl Served {
    fn new(conn: Box<Conn>, limits: Limits) -> Self {
        Self {
            conn,
            limits,
            held: None,
            book: CreditBook::new(),
            queue: VecDeque::new(),
            rkey_probe: None,
            reordered: None,
            ended: false,
        }
    }

    /// Logs the connection's credit account, once, as it ends.
    fn end(&mut self) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        if let Some(p) = self.rkey_probe.take() {
            for rkey in distinct_handles(&p.writes) {
                event!(
                    "probe rkey={rkey:#010x} result=untested status=-1 xid={:#010x} reason=no-next-call",
                    p.xid
                );
            }
        }
        event!(
            "credits max_outstanding={} overruns={} granted={}",
            self.book.max_outstanding(),
            self.book.overruns(),
            self.book.current()
        );
    }

    /// When the first Reply held by `--hold-replies` is due.
    fn hold_deadline(&self, hold: Option<Duration>) -> Option<Instant> {
        Some(self.queue.front()?.arrived + hold?)
    }
}

struct Peer {
    opts: Options,
    listener: Listener,
    conns: Vec<Served>,
    server: nfs::Server,
    trigger: Trigger,
    /// `shrink-credits` fired in this case: new connections grant
    /// `--shrink-to` too.
    shrunk: bool,
    /// The --fault-file text last applied (or refused).
    case_text: Option<String>,
    case_read: Instant,
    fuzzer: Option<Fuzzer>,
    /// The --fuzz-file text last applied (or refused).
    fuzz_text: String,
}

impl Peer {
    /// Takes a new case from --fault-file when its text has changed: the
    /// connections of the case before are disconnected, and the directory
    /// and the fault's count start afresh, as in a new peer.
    fn check_case(&mut self, at_request: bool) {
        let Some(path) = self.opts.fault_file.clone() else {
            return;
        };
        self.case_read = Instant::now();
        let text = match read_case_file(&path, self.case_text.as_deref(), at_request) {
            CaseFile::Unchanged => return,
            CaseFile::Unreadable(e) => {
                if at_request {
                    event!("case-error reason={e:?}");
                }
                return;
            }
            CaseFile::New(t) => t,
        };
        let parsed = cli::parse_case(&self.opts, &text);
        self.case_text = Some(text);
        let case = match parsed {
            Ok(c) => c,
            Err(e) => {
                event!(
                    "case-error text={:?} reason={e:?}",
                    self.case_text.as_deref().unwrap_or_default()
                );
                return;
            }
        };
        let old = self.conns.len();
        for s in &mut self.conns {
            // Logged now, so that the case's lines are the case's own.
            s.end();
            s.conn.disconnect();
        }
        self.opts = case.opts;
        self.trigger = Trigger::new(&self.opts);
        self.server = nfs::Server::new();
        self.shrunk = false;
        let o = &self.opts;
        let mut extra = String::new();
        if let Some(ms) = o.hold_replies {
            extra += &format!(" hold_replies={ms}");
        }
        if let Some(n) = o.shrink_to {
            extra += &format!(" shrink_to={n}");
        }
        if o.serve == transport::Serve::Two {
            extra += " version=2";
        }
        event!(
            "case name={} private_data={:?} fault={} on={} after={} times={} send_inv={} credits={} inline={} disconnecting={old}{extra}",
            case.name,
            o.private_data,
            o.fault.map_or("none", Fault::name),
            o.on.map_or_else(|| "any".into(), nfs::proc::name),
            o.after,
            o.times,
            u8::from(o.send_inv),
            o.credits,
            o.inline
        );
    }

    /// Handles every pending connection manager event.
    fn cm_events(&mut self) -> Result<(), String> {
        loop {
            let mut ev = std::ptr::null_mut();
            // SAFETY: a non-blocking get on our channel.
            if unsafe { rdma_get_cm_event(self.listener.ch, &mut ev) } != 0 {
                return Ok(());
            }
            // SAFETY: `ev` is valid until acknowledged; what is needed of it
            // is copied first.
            let (kind, id, status, pd, resp, init) = unsafe {
                let e = &*ev;
                let conn = e.param.conn;
                let pd = if conn.private_data.is_null() {
                    Vec::new()
                } else {
                    std::slice::from_raw_parts(
                        conn.private_data as *const u8,
                        conn.private_data_len as usize,
                    )
                    .to_vec()
                };
                (
                    e.event,
                    e.id,
                    e.status,
                    pd,
                    conn.responder_resources,
                    conn.initiator_depth,
                )
            };
            // SAFETY: acknowledged once; only copies are used after.
            unsafe { rdma_ack_cm_event(ev) };
            match kind {
                RDMA_CM_EVENT_CONNECT_REQUEST => self.connect_request(id, &pd, resp, init),
                RDMA_CM_EVENT_ESTABLISHED => {
                    if let Some(s) = self.conns.iter().find(|s| s.conn.id == id) {
                        event!(
                            "connected peer={} send_limit={} credits={} send_inv={}",
                            s.conn.peer,
                            s.limits.send_limit,
                            s.limits.credits,
                            u8::from(s.limits.send_inv)
                        );
                    }
                }
                RDMA_CM_EVENT_DISCONNECTED
                | RDMA_CM_EVENT_REJECTED
                | RDMA_CM_EVENT_CONNECT_ERROR
                | RDMA_CM_EVENT_UNREACHABLE
                | RDMA_CM_EVENT_DEVICE_REMOVAL => {
                    if id == self.listener.id {
                        return Err(format!("listener: {}", event_name(kind)));
                    }
                    if let Some(at) = self.conns.iter().position(|s| s.conn.id == id) {
                        let mut s = self.conns.swap_remove(at);
                        s.end();
                        event!(
                            "disconnected peer={} event={} status={}",
                            s.conn.peer,
                            event_name(kind),
                            status
                        );
                        s.conn.release();
                    }
                }
                _ => {}
            }
        }
    }

    /// Starts or stops fuzzing as --fuzz-file says: a new "SEED RATE"
    /// line starts afresh; no file, or an empty one, stops.
    fn check_fuzz_file(&mut self) {
        let Some(path) = &self.opts.fuzz_file else {
            return;
        };
        self.case_read = Instant::now();
        let text = std::fs::read_to_string(path).unwrap_or_default();
        // A line still being written, or the one last applied.
        if (!text.is_empty() && !text.ends_with('\n')) || text == self.fuzz_text {
            return;
        }
        self.fuzz_text = text;
        if self.fuzz_text.trim().is_empty() {
            if self.fuzzer.take().is_some() {
                event!("fuzzing off");
            }
            return;
        }
        match cli::parse_fuzz_line(&self.fuzz_text) {
            Ok(f) => {
                event!(
                    "fuzzing seed={} rate={}{}",
                    f.seed,
                    f64::from(f.rate_ppm) / 1e6,
                    if f.lie { " lie=1" } else { "" }
                );
                self.fuzzer = Some(Fuzzer::new(f));
            }
            Err(e) => {
                self.fuzzer = None;
                event!("fuzz-file-error text={:?} reason={e:?}", self.fuzz_text);
            }
        }
    }

    fn connect_request(&mut self, id: *mut rdma_cm_id, pd: &[u8], resp: u8, init: u8) {
        self.check_case(true);
        // SAFETY: `id` is the new, live id of this request.
        let peer = unsafe { verbs::dst_addr(id) }.map_or_else(|| "?".into(), |a| a.to_string());
        event!(
            "connect-request peer={peer} private_data={} initiator_depth={init} responder_resources={resp}",
            hex(pd)
        );
        let client = private_data::find(pd).map(|(_, p)| p);
        match &client {
            Some(c) => event!(
                "client-private-data send={} recv={} rinv={}",
                c.send_size(),
                c.recv_size(),
                u8::from(c.remote_invalidation())
            ),
            None => event!("client-private-data none"),
        }
        let mut ours = our_private_data(self.opts.private_data, self.opts.inline);
        if let Some(f) = self.fuzzer.as_mut() {
            let (pd, line) = f.private_data(&ours);
            if let Some(line) = line {
                event!("{line}");
            }
            ours = pd;
        }
        let (mut limits, recv_size) = connection_limits(&self.opts, &ours, client);
        if self.shrunk {
            limits.credits = limits.shrink_to;
        }
        let accept = Accept {
            private_data: &ours,
            recv_size,
            send_size: limits.send_limit.max(limits.client_recv) + 8192,
            initiator_depth: init,
            responder_resources: resp,
        };
        // SAFETY: a fresh id from CONNECT_REQUEST.
        match unsafe { Conn::accept(id, &accept) } {
            Ok(c) => {
                event!(
                    "accepted peer={peer} private_data={} mode={:?} send_limit={} recv_size={}",
                    hex(&ours),
                    self.opts.private_data,
                    limits.send_limit,
                    recv_size
                );
                self.conns.push(Served::new(c, limits));
            }
            Err(e) => event!("connect-refused peer={peer} reason={e:?}"),
        }
    }

    /// Handles every message received on connection `i`, and sends the
    /// Replies that are due.
    fn serve(&mut self, i: usize) {
        let Peer {
            conns,
            server,
            trigger,
            opts,
            shrunk,
            fuzzer,
            ..
        } = self;
        let s = &mut conns[i];
        s.conn.service();
        while !s.conn.dead {
            let Some(msg) = s.conn.next_message() else {
                break;
            };
            handle(s, server, trigger, opts, shrunk, fuzzer, msg);
            flush(s, opts, fuzzer);
        }
        // A Reply sent "after the next one" goes when no next one came.
        if s.reordered
            .as_ref()
            .is_some_and(|p| p.arrived.elapsed() >= REORDER_LIMIT)
        {
            if let Some(p) = s.reordered.take() {
                if p.due == Some(Fault::OtherXid) && p.mutation.is_none() {
                    event!(
                        "fault-not-applicable name=other-xid xid={:#010x} reason=no-next-call",
                        p.xid
                    );
                }
                s.queue.push_back(p);
            }
        }
        flush(s, opts, fuzzer);
        if s.held
            .as_ref()
            .is_some_and(|h| h.since.elapsed() >= HOLD_LIMIT)
            && !s.conn.dead
        {
            // No other Call came: the Reply goes as it was.
            if let Some(h) = s.held.take() {
                release(s, h, None, trigger);
            }
        }
        for (what, status) in std::mem::take(&mut s.conn.errors) {
            event!(
                "completion peer={} op={what} status={}",
                s.conn.peer,
                wc_status_name(status)
            );
        }
        if s.conn.dead {
            // Our QP failed: let the client know.
            s.conn.disconnect();
        }
    }

    fn run(&mut self) -> Result<(), String> {
        let start = Instant::now();
        loop {
            if STOP.load(Ordering::Relaxed) {
                event!("stopping reason=signal");
                return Ok(());
            }
            if let Some(t) = self.opts.lifetime {
                if start.elapsed() >= Duration::from_secs(t) {
                    event!("stopping reason=lifetime");
                    return Ok(());
                }
            }
            let mut fds = vec![libc::pollfd {
                fd: self.listener.fd(),
                events: libc::POLLIN,
                revents: 0,
            }];
            fds.extend(self.conns.iter().map(|s| libc::pollfd {
                fd: s.conn.comp_fd(),
                events: libc::POLLIN,
                revents: 0,
            }));
            let mut timeout = if self.opts.fault_file.is_some() || self.opts.fuzz_file.is_some() {
                CASE_POLL
            } else {
                Duration::from_millis(200)
            };
            // Woken for the first held Reply that falls due: a Call that
            // arrives wakes the poll anyway.
            let hold = self.opts.hold_replies.map(Duration::from_millis);
            if let Some(due) = self
                .conns
                .iter()
                .filter_map(|s| s.hold_deadline(hold))
                .min()
            {
                timeout = timeout.min(due.saturating_duration_since(Instant::now()));
            }
            // Rounded up, so that a Reply is not found 1 ms early and the
            // poll spun again at once.
            let timeout = timeout.as_micros().div_ceil(1000) as libc::c_int;
            // SAFETY: `fds` is a valid array of its length.
            unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
            if self.case_read.elapsed() >= CASE_POLL {
                self.check_case(false);
                self.check_fuzz_file();
            }
            self.cm_events()?;
            for i in 0..self.conns.len() {
                self.serve(i);
            }
        }
    }
}

/// What a look at the --fault-file found.
#[derive(Debug, PartialEq, Eq)]
enum CaseFile {
    /// No file, the text last applied, or a line still being written.
    Unchanged,
    Unreadable(String),
    /// Text to apply (or to refuse, when it does not parse).
    New(String),
}

/// Reads the --fault-file at `path`; `last` is the text last applied. A
/// line without its newline is being written: at a connection request
/// (`at_request`) it is waited for, up to a second, and otherwise left
/// for the next look.
fn read_case_file(path: &std::path::Path, last: Option<&str>, at_request: bool) -> CaseFile {
    let mut tries = 0;
    loop {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return CaseFile::Unchanged,
            Err(e) => return CaseFile::Unreadable(e.to_string()),
        };
        if last == Some(text.as_str()) {
            return CaseFile::Unchanged;
        }
        if text.ends_with('\n') || (at_request && tries == 50) {
            return CaseFile::New(text);
        }
        if !at_request {
            return CaseFile::Unchanged;
        }
        tries += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn event_name(kind: u32) -> String {
    // SAFETY: rdma_event_str returns a static string for any value.
    unsafe { std::ffi::CStr::from_ptr(rdma_event_str(kind)) }
        .to_string_lossy()
        .into_owned()
}

/// Answers one received message: the Reply is queued, and goes when
/// [`flush`] says.
fn handle(
    s: &mut Served,
    server: &mut nfs::Server,
    trigger: &mut Trigger,
    opts: &Options,
    shrunk: &mut bool,
    fuzzer: &mut Option<Fuzzer>,
    msg: verbs::Message,
) {
    if msg.invalidated {
        event!("unexpected-invalidation peer={}", s.conn.peer);
    }
    let call = match transport::parse_call_as(&msg.data, opts.serve) {
        Ok(c) => c,
        Err(Refused::Short) => {
            event!("call-refused reason=short len={}", msg.data.len());
            return;
        }
        Err(Refused::Ignored(e)) => {
            event!("call-refused reason={e:?}");
            return;
        }
        Err(Refused::Error { xid, vers, error }) => {
            arrive(s, xid, msg.arrived);
            event!("call-refused xid={xid:#010x} vers={vers} answer={error:?}");
            let send = transport::error_reply_as(xid, vers, s.limits.credits, error);
            queue_plain(s, xid, send, 1, msg.arrived);
            return;
        }
        Err(Refused::Error2 { xid, error }) => {
            arrive(s, xid, msg.arrived);
            event!("call-refused xid={xid:#010x} vers=2 answer={error:?}");
            let send = transport::error_reply_2(xid, s.limits.credits, &error);
            queue_plain(s, xid, send, 2, msg.arrived);
            return;
        }
    };
    arrive(s, call.xid, msg.arrived);
    if s.rkey_probe.is_some() {
        probe_rkeys(s, &call, opts);
        if s.conn.dead {
            return;
        }
    }
    let pulled = if call.read_chunks.is_empty() {
        Vec::new()
    } else {
        match s.conn.pull(&call.read_chunks) {
            Ok(p) => p,
            Err(e) => {
                event!("call-failed xid={:#010x} reason={e:?}", call.xid);
                return;
            }
        }
    };
    let Some(whole) = call.assemble(&pulled) else {
        event!(
            "call-refused xid={:#010x} reason=read-chunk-position",
            call.xid
        );
        let send = if call.version == 2 {
            transport::error_reply_2(call.xid, s.limits.credits, &Error2::BadXdr)
        } else {
            transport::error_reply(call.xid, s.limits.credits, transport_err_chunk())
        };
        queue_plain(s, call.xid, send, call.version, msg.arrived);
        return;
    };
    let info = nfs::peek(&whole);
    let proc_name = info
        .and_then(|i| i.nfs_proc)
        .map_or_else(|| "other".into(), nfs::proc::name);
    event!(
        "call xid={:#010x} proc={proc_name} nomsg={} read_chunk_bytes={} write_chunks={} reply_chunk={}",
        call.xid,
        u8::from(call.nomsg),
        call.read_len(),
        call.write_chunks.len(),
        u8::from(call.reply_chunk.is_some())
    );
    // A Reply held back goes first, invalidating this Call's rkey: only
    // that of a Call whose chunks were all pulled above (a WRITE's Read
    // chunk), so that this RPC's data has moved and its rkey is of no
    // more use to us; the held Reply's own rkeys can then be probed on
    // a working connection.
    let mut invalidated = None;
    if let Some(rkey) = call.pulled_rkey() {
        if let Some(h) = s.held.take() {
            release(s, h, Some((rkey, call.xid, proc_name.as_str())), trigger);
            invalidated = Some(rkey);
        }
    }
    let Some(reply) = server.handle(&whole) else {
        event!("call-refused xid={:#010x} reason=not-an-rpc-call", call.xid);
        return;
    };
    let decision = fuzzer.as_mut().and_then(|f| {
        f.offered(&call);
        f.decide(&call)
    });
    let due = match &decision {
        Some((Mutation::Fault(f), _)) => Some(*f),
        Some(_) => None,
        None => opts
            .fault
            .filter(|_| trigger.due(info.and_then(|i| i.nfs_proc))),
    };
    let mut out = transport::respond(&call, &reply, &s.limits, due);
    plain_if_invalidated(&mut out, invalidated);
    let handles: Vec<u32> = call_handles(&call).collect();
    if let (Some((m, prefix)), Some(f)) = (decision, fuzzer.as_ref()) {
        let m = f.apply(m, &mut out);
        let fired = match m {
            Mutation::Fault(_) => {
                format!(" fired={}{}", u8::from(out.fired), words(&out.fault_words))
            }
            _ => String::new(),
        };
        event!(
            "{prefix} proc={proc_name} mutation={}{}{fired}",
            m.name(),
            words(&m.words())
        );
        let p = Pending {
            xid: call.xid,
            out,
            arrived: msg.arrived,
            due,
            mutation: Some(m.clone()),
            handles,
        };
        if matches!(m, Mutation::Reorder | Mutation::OtherXid) {
            if let Some(before) = s.reordered.replace(p) {
                s.queue.push_back(before);
            }
        } else {
            queue_after_held(s, p, trigger);
        }
        return;
    }
    if out.hold {
        // Counted now, so that the Call it waits for is answered as usual.
        trigger.fired();
        event!(
            "fault-held name={} xid={:#010x} proc={proc_name} count={}",
            due.map_or("?", Fault::name),
            call.xid,
            trigger.count()
        );
        s.held = Some(Held {
            xid: call.xid,
            proc_name,
            out,
            since: Instant::now(),
            write_handles: call
                .write_chunks
                .iter()
                .flatten()
                .map(|g| g.handle)
                .collect(),
        });
        return;
    }
    if let Some(f) = due.filter(|f| *f != Fault::OtherXid) {
        if out.fired {
            trigger.fired();
            if f == Fault::ShrinkCredits {
                // This Reply grants --shrink-to, and every one after it.
                s.limits.credits = s.limits.shrink_to;
                *shrunk = true;
            }
            event!(
                "fault-fired name={} xid={:#010x} proc={proc_name} count={}{}",
                f.name(),
                call.xid,
                trigger.count(),
                words(&out.fault_words)
            );
        } else {
            event!(
                "fault-not-applicable name={} xid={:#010x} proc={proc_name}{}",
                f.name(),
                call.xid,
                words(&out.fault_words)
            );
        }
    }
    let p = Pending {
        xid: call.xid,
        out,
        arrived: msg.arrived,
        due,
        mutation: None,
        handles,
    };
    if due == Some(Fault::OtherXid) && s.reordered.is_none() {
        // Counted once the next Call comes (queue_after_held); should
        // none come, the next due Call tries again.
        event!(
            "fault-held name=other-xid xid={:#010x} proc={proc_name}",
            call.xid
        );
        s.reordered = Some(p);
    } else {
        queue_after_held(s, p, trigger);
    }
}

/// Queues `p`, and the Reply held for the next one: after it (`--fuzz`
/// reorder), or before it with its XID (other-xid, fuzzed or scripted).
fn queue_after_held(s: &mut Served, p: Pending, trigger: &mut Trigger) {
    match s.reordered.take() {
        Some(mut held)
            if held.mutation == Some(Mutation::OtherXid) || held.due == Some(Fault::OtherXid) =>
        {
            if held.out.send.len() >= 4 {
                held.out.send[..4].copy_from_slice(&p.xid.to_be_bytes());
            }
            if held.mutation.is_some() {
                event!(
                    "fuzz-other-xid xid={:#010x} sent_as={:#010x}",
                    held.xid,
                    p.xid
                );
            } else {
                trigger.fired();
                event!(
                    "fault-fired name=other-xid xid={:#010x} count={} sent_as={:#010x}",
                    held.xid,
                    trigger.count(),
                    p.xid
                );
            }
            s.queue.push_back(held);
            s.queue.push_back(p);
        }
        Some(held) => {
            s.queue.push_back(p);
            s.queue.push_back(held);
        }
        None => s.queue.push_back(p),
    }
}

/// `w` as more words of an event line: after a space, if any.
fn words(w: &str) -> String {
    if w.is_empty() {
        String::new()
    } else {
        format!(" {w}")
    }
}

/// Counts a Call in the connection's credit account.
fn arrive(s: &mut Served, xid: u32, at: Instant) {
    if let Some(o) = s.book.arrive(xid, at) {
        if o.first {
            event!(
                "credit-overrun outstanding={} granted={} xid={xid:#010x}",
                o.outstanding,
                o.granted
            );
        }
    }
}

/// Sends the queued Replies that are due: those whose Call came
/// `--hold-replies` ago; without it, all at once.
fn flush(s: &mut Served, opts: &Options, fuzzer: &mut Option<Fuzzer>) {
    if s.conn.dead {
        // Nothing can go; the client sends the Calls again on its next
        // connection.
        s.queue.clear();
        return;
    }
    let n = releasable(
        s.queue.iter().map(|p| p.arrived),
        opts.hold_replies.map(Duration::from_millis),
        Instant::now(),
    );
    for _ in 0..n {
        let Some(p) = s.queue.pop_front() else {
            break;
        };
        send_reply(s, p, opts, fuzzer);
        if s.conn.dead {
            s.queue.clear();
            return;
        }
    }
}

/// How many of the queued Replies, whose Calls arrived at `arrivals` (in
/// order), go now: those that waited `hold`, or all when nothing is held.
/// Every Reply waits, whatever is outstanding: a client that keeps to its
/// grant then has exactly the grant in flight while they wait, and one
/// that does not sends the Call beyond it meanwhile, which the credit
/// book counts. (Released as soon as the grant is outstanding, a Reply
/// could go before the Call beyond the grant arrived, hiding it.)
fn releasable(
    arrivals: impl Iterator<Item = Instant>,
    hold: Option<Duration>,
    now: Instant,
) -> usize {
    match hold {
        Some(h) => arrivals.take_while(|a| now >= *a + h).count(),
        None => arrivals.count(),
    }
}

/// Sends one queued Reply, and probes the rkeys of its Call after it if
/// its fault says so.
fn send_reply(s: &mut Served, p: Pending, opts: &Options, fuzzer: &mut Option<Fuzzer>) {
    match p.mutation {
        Some(Mutation::WriteTo { rkey, offset, len }) => {
            // Made-up bytes: they must not land.
            let data = (0..len).map(|i| (i as u8) ^ 0x5a).collect();
            let w = RdmaWrite {
                handle: rkey,
                offset,
                data,
            };
            fuzz_probe(rkey, "write", p.xid, s.conn.rewrite(&[w]));
        }
        Some(Mutation::ReadFrom { rkey, offset, len }) => {
            let seg = header::Segment {
                handle: rkey,
                length: len,
                offset,
            };
            let r = s.conn.probe(&transport::Probe::Read(vec![seg]));
            fuzz_probe(rkey, "read", p.xid, r);
        }
        _ => {}
    }
    let sent = execute_reply(s, &p.out, p.xid);
    if let Some(f) = fuzzer.as_mut() {
        match p.mutation {
            Some(Mutation::Stale { xid }) if !s.conn.dead => {
                f.answered(&p.handles, &p.out, p.xid, p.mutation.as_ref());
                if let Some(send) = f.stale(xid) {
                    let out = transport::Outgoing {
                        send,
                        sends: 1,
                        ..Default::default()
                    };
                    if let Err(e) = s.conn.execute(&out) {
                        event!("reply-failed xid={xid:#010x} stale=1 reason={e:?}");
                    }
                }
            }
            _ if sent => f.answered(&p.handles, &p.out, p.xid, p.mutation.as_ref()),
            _ => {}
        }
    }
    let Some(probe) = &p.out.probe else {
        return;
    };
    let what = match probe {
        transport::Probe::Write(_) => "write",
        transport::Probe::Read(_) => "read",
    };
    // Let the client take the Reply and invalidate first.
    s.conn.idle(Duration::from_millis(opts.frwr_delay_ms));
    match s.conn.probe(probe) {
        Ok(r) => event!(
            "frwr-after-reply {what} status={} succeeded={} segments={} bytes={} qp_before={} qp={} xid={:#010x} fault={}",
            r.status.map_or("NOT_POSTED", wc_status_name),
            r.succeeded,
            r.segments,
            r.bytes,
            r.qp_before.map_or("?", verbs::qp_state_name),
            r.qp_state.map_or("?", verbs::qp_state_name),
            p.xid,
            p.due.map_or("?", Fault::name)
        ),
        Err(e) => event!("frwr-after-reply {what} error={e:?} xid={:#010x}", p.xid),
    }
}

/// The fuzz-probe line of a `write-to` or `read-from`: refused (closed),
/// or it reached the client's memory (open), as `probe_rkeys` judges.
fn fuzz_probe(rkey: u32, what: &str, xid: u32, r: Result<verbs::ProbeResult, String>) {
    match r {
        Ok(r) if r.status.is_some() => {
            let result = match r.failed {
                Some(_) => "closed",
                None if r.qp_state != Some(IBV_QPS_RTS) => "closed",
                None => "open",
            };
            event!(
                "fuzz-probe op={what} rkey={rkey:#010x} result={result} status={} xid={xid:#010x} bytes={}",
                r.failed.or(r.status).map_or("?", wc_status_name),
                r.bytes
            );
        }
        Ok(r) => event!(
            "fuzz-probe op={what} rkey={rkey:#010x} result=untested xid={xid:#010x} qp_before={}",
            r.qp_before.map_or("?", verbs::qp_state_name)
        ),
        Err(e) => event!(
            "fuzz-probe op={what} rkey={rkey:#010x} result=untested xid={xid:#010x} reason={e:?}"
        ),
    }
}

/// The handles of `writes`, each once, in order.
fn distinct_handles(writes: &[RdmaWrite]) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    for w in writes {
        if !out.contains(&w.handle) {
            out.push(w.handle);
        }
    }
    out
}

/// Every handle a Call offers.
fn call_handles(c: &transport::Call) -> impl Iterator<Item = u32> + '_ {
    c.read_chunks
        .iter()
        .flat_map(|r| r.segments.iter())
        .chain(c.write_chunks.iter().flatten())
        .chain(c.reply_chunk.iter().flatten())
        .map(|g| g.handle)
}

/// The index of the MR an rkey names: its key byte is the low 8 bits,
/// which a client changes each time it registers the MR again.
fn mr_index(rkey: u32) -> u32 {
    rkey >> 8
}

/// The next Call after a `send-inv-other-rpc` Reply has come: writes
/// again what that Reply placed in its Call's Write chunks, rkey by rkey.
/// A correct client invalidated those regions itself before it took the
/// Reply (the rkey the Reply invalidated was another RPC's), so each
/// Write must fail. Skipped for an MR that a Call not yet answered uses
/// (the client may have registered it again for that Call: the bytes
/// would land in that Call's buffer).
fn probe_rkeys(s: &mut Served, call: &transport::Call, opts: &Options) {
    let Some(p) = s.rkey_probe.take() else {
        return;
    };
    // As long after the Reply as frwr-after-reply waits: this Call may
    // have been sent before the client took the Reply.
    let wait = Duration::from_millis(opts.frwr_delay_ms).saturating_sub(p.sent.elapsed());
    s.conn.idle(wait);
    let mut busy: Vec<u32> = call_handles(call).map(mr_index).collect();
    let later: Vec<transport::Call> = s
        .conn
        .pending()
        .filter_map(|m| transport::parse_call(m).ok())
        .collect();
    busy.extend(later.iter().flat_map(call_handles).map(mr_index));
    for rkey in distinct_handles(&p.writes) {
        if busy.contains(&mr_index(rkey)) {
            event!(
                "probe rkey={rkey:#010x} result=skipped status=-1 xid={:#010x}",
                p.xid
            );
            continue;
        }
        let writes: Vec<RdmaWrite> = p
            .writes
            .iter()
            .filter(|w| w.handle == rkey)
            .cloned()
            .collect();
        match s.conn.rewrite(&writes) {
            Ok(r) if r.status.is_some() => {
                // Refused, or (iWARP) completed and the connection then
                // terminated by the client.
                let (result, status) = match r.failed {
                    Some(st) => ("closed", i64::from(st)),
                    None if r.qp_state != Some(IBV_QPS_RTS) => ("closed", 0),
                    None => ("open", 0),
                };
                event!(
                    "probe rkey={rkey:#010x} result={result} status={status} xid={:#010x} bytes={} qp={}",
                    p.xid,
                    r.bytes,
                    r.qp_state.map_or("?", verbs::qp_state_name)
                );
            }
            Ok(r) => event!(
                "probe rkey={rkey:#010x} result=untested status=-1 xid={:#010x} qp_before={}",
                p.xid,
                r.qp_before.map_or("?", verbs::qp_state_name)
            ),
            Err(e) => event!(
                "probe rkey={rkey:#010x} result=untested status=-1 xid={:#010x} reason={e:?}",
                p.xid
            ),
        }
    }
}

/// Sends the Reply `h` held back: with Send With Invalidate of `other`'s
/// rkey (that Call's XID and procedure alongside), or as it was when no
/// other Call came.
fn release(s: &mut Served, mut h: Held, other: Option<(u32, u32, &str)>, trigger: &Trigger) {
    let name = Fault::SendInvOtherRpc.name();
    match other {
        Some((rkey, other_xid, other_proc)) => {
            h.out.invalidate = Some(rkey);
            event!(
                "fault-fired name={name} xid={:#010x} proc={} count={} rkey={rkey:#010x} of_xid={other_xid:#010x} of_proc={other_proc}",
                h.xid,
                h.proc_name,
                trigger.count()
            );
        }
        None => event!(
            "fault-not-applicable name={name} xid={:#010x} proc={} reason=no-other-call",
            h.xid,
            h.proc_name
        ),
    }
    let sent = execute_reply(s, &h.out, h.xid);
    let writes: Vec<RdmaWrite> = h
        .out
        .writes
        .iter()
        .filter(|w| h.write_handles.contains(&w.handle))
        .cloned()
        .collect();
    if sent && other.is_some() && !writes.is_empty() {
        s.rkey_probe = Some(RkeyProbe {
            xid: h.xid,
            writes,
            sent: Instant::now(),
        });
    }
}

/// The other Call's own Reply after `send-inv-other-rpc`: a plain Send
/// where it would invalidate the rkey the held Reply `invalidated`
/// already (invalidating it again fails over Soft-RoCE, and would test
/// the device, not the client).
fn plain_if_invalidated(out: &mut transport::Outgoing, invalidated: Option<u32>) {
    if invalidated.is_some() && out.invalidate == invalidated {
        out.invalidate = None;
    }
}

/// Carries out the Reply `out` to Call `xid`, says if it failed, and
/// keeps the credit account: a Reply that went answers the Call, and one
/// the client can take (it decodes, with the Call's XID) sets the grant.
/// True when every work request succeeded.
fn execute_reply(s: &mut Served, out: &transport::Outgoing, xid: u32) -> bool {
    let result = s.conn.execute(out);
    if out.sends > 0 {
        s.book.answered(xid);
    }
    match result {
        Ok(None) => {
            if out.sends > 0 {
                if let Some(grant) = grant_taken(&out.send, xid, out.version) {
                    s.book.granted(grant, Instant::now());
                }
            }
            true
        }
        Ok(Some(status)) => {
            event!(
                "reply-failed xid={xid:#010x} status={}",
                wc_status_name(status)
            );
            false
        }
        Err(e) => {
            event!("reply-failed xid={xid:#010x} reason={e:?}");
            false
        }
    }
}

/// The grant a Reply carries, if the client can take it: a transport
/// header that decodes, in the version of the Call (`version`), with the
/// Call's XID.
fn grant_taken(send: &[u8], xid: u32, version: u32) -> Option<u32> {
    if version == 2 {
        let (h, _) = header2::decode(send, &DecodeLimits::REPLY).ok()?;
        return (h.xid == xid).then_some(h.credit);
    }
    let (h, _) = header::decode(send, &DecodeLimits::REPLY).ok()?;
    (h.xid == xid).then_some(h.credit)
}

fn transport_err_chunk() -> rpcrdma_proto::proto::header::RdmaError {
    rpcrdma_proto::proto::header::RdmaError::Chunk
}

/// Queues a transport header on its own (an RDMA_ERROR) as the Reply to
/// `xid`.
fn queue_plain(s: &mut Served, xid: u32, send: Vec<u8>, version: u32, arrived: Instant) {
    let out = transport::Outgoing {
        send,
        sends: 1,
        version,
        ..Default::default()
    };
    s.queue.push_back(Pending {
        xid,
        out,
        arrived,
        due: None,
        mutation: None,
        handles: Vec::new(),
    });
}

fn main() {
    let opts = match cli::parse(std::env::args().skip(1)) {
        Ok(Parsed::Run(o)) => *o,
        Ok(Parsed::Help) => {
            print!("{}", cli::USAGE);
            return;
        }
        Err(e) => {
            eprintln!("rpcrdma-peer: {e}\n\n{}", cli::USAGE);
            std::process::exit(2);
        }
    };
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let listener = match Listener::new(&opts.listen) {
        Ok(l) => l,
        Err(e) => {
            event!("error reason={e:?}");
            eprintln!("rpcrdma-peer: {e}");
            std::process::exit(1);
        }
    };
    event!(
        "listening addr={} private_data={:?} fault={} on={} after={} times={}{}",
        opts.listen,
        opts.private_data,
        opts.fault.map_or("none", Fault::name),
        opts.on.map_or_else(|| "any".into(), nfs::proc::name),
        opts.after,
        opts.times,
        opts.fault_file
            .as_ref()
            .map_or_else(String::new, |p| format!(" fault_file={}", p.display()))
    );
    let mut peer = Peer {
        trigger: Trigger::new(&opts),
        opts,
        listener,
        conns: Vec::new(),
        server: nfs::Server::new(),
        shrunk: false,
        case_text: None,
        case_read: Instant::now(),
        fuzzer: None,
        fuzz_text: String::new(),
    };
    if let Some(f) = peer.opts.fuzz.clone() {
        event!(
            "fuzzing seed={} rate={} replay={} only={}",
            f.seed,
            f64::from(f.rate_ppm) / 1e6,
            u8::from(f.replay),
            if f.only.is_empty() {
                "-".to_string()
            } else {
                f.only
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            }
        );
        peer.fuzzer = Some(Fuzzer::new(f));
    }
    let result = peer.run();
    let fired = peer.trigger.count();
    for mut s in peer.conns.drain(..) {
        s.end();
        s.conn.disconnect();
        s.conn.release();
    }
    // Connections still being destroyed use the listener's event channel:
    // wait a little for them, and if some are still sleeping in the
    // kernel, exit without destroying the listener (the kernel cleans up
    // after the process).
    let deadline = Instant::now() + Duration::from_secs(3);
    while verbs::releases_pending() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = match result {
        Ok(()) => {
            event!("exit status=0 faults_fired={fired}");
            0
        }
        Err(e) => {
            event!("exit status=1 faults_fired={fired} reason={e:?}");
            1
        }
    };
    if status != 0 || verbs::releases_pending() {
        std::process::exit(status);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_are_read_in_the_replys_version() {
        use rpcrdma_proto::proto::header::{MsgProc, RdmaError, Segment};
        let mut v2 = vec![0; 64];
        let n = header2::encode_chunked(
            &mut v2,
            7,
            12,
            MsgProc::Msg,
            header2::Direction::Reply,
            0,
            [],
            std::iter::empty::<[Segment; 0]>(),
            None::<[Segment; 0]>,
        )
        .unwrap();
        assert_eq!(grant_taken(&v2[..n], 7, 2), Some(12));
        assert_eq!(grant_taken(&v2[..n], 8, 2), None);
        assert_eq!(
            grant_taken(&transport::error_reply_2(7, 5, &Error2::System), 7, 2),
            Some(5)
        );
        let vers = RdmaError::Vers { low: 1, high: 1 };
        assert_eq!(
            grant_taken(&transport::error_reply_as(7, 2, 3, vers), 7, 1),
            Some(3)
        );
        assert_eq!(
            grant_taken(&transport::error_reply(7, 4, vers), 7, 1),
            Some(4)
        );
    }

    fn opts() -> Options {
        let Parsed::Run(o) = cli::parse(["--listen".into(), "0.0.0.0:1".into()]).unwrap() else {
            panic!()
        };
        *o
    }

    #[test]
    fn private_data_modes() {
        let linux = Some(PrivateData::new(4096, 4096, true));
        let o = opts();
        let ok = our_private_data(PrivateDataMode::Ok, 4096);
        assert_eq!(ok, [0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3]);
        let (l, recv) = connection_limits(&o, &ok, linux);
        assert_eq!((l.send_limit, l.client_recv, recv), (4096, 4096, 4096));
        assert!(l.send_inv);

        for mode in [
            PrivateDataMode::None,
            PrivateDataMode::BadMagic,
            PrivateDataMode::Version2,
            PrivateDataMode::Sizes0,
        ] {
            let b = our_private_data(mode, 4096);
            assert_eq!(b.is_empty(), mode == PrivateDataMode::None);
            // The client takes 1 KiB from us each way.
            let (l, _) = connection_limits(&o, &b, linux);
            assert_eq!(l.send_limit, 1024, "{mode:?}");
        }
        let max = our_private_data(PrivateDataMode::SizesMax, 4096);
        assert_eq!(&max[6..], &[255, 255]);
        assert_eq!(connection_limits(&o, &max, linux).0.send_limit, 4096);
        let off = our_private_data(PrivateDataMode::RinvOff, 4096);
        assert_eq!(off[5], 0);
        // At an offset, found all the same: as if at the start.
        let at3 = our_private_data(PrivateDataMode::Offset, 4096);
        assert_eq!(at3.len(), 11);
        assert_eq!(&at3[3..], &ok[..]);
        assert_eq!(connection_limits(&o, &at3, linux), (l, recv));

        // A client without private data: 1 KiB, no Send With Invalidate.
        let (l, recv) = connection_limits(&o, &ok, None);
        assert_eq!((l.send_limit, l.client_recv, recv), (1024, 1024, 4096));
        assert!(!l.send_inv);
    }

    #[test]
    fn case_file_looks() {
        let path = std::env::temp_dir().join(format!("rpcrdma-peer-case-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        assert_eq!(read_case_file(&path, None, true), CaseFile::Unchanged);
        std::fs::write(&path, "a --fault silence\n").unwrap();
        let new = CaseFile::New("a --fault silence\n".into());
        assert_eq!(read_case_file(&path, None, false), new);
        assert_eq!(read_case_file(&path, Some("b\n"), true), new);
        // A reconnect in the same case finds the same text.
        let last = Some("a --fault silence\n");
        assert_eq!(read_case_file(&path, last, true), CaseFile::Unchanged);
        // Being written: left for later between requests; at a request,
        // waited for, then handed on to be refused.
        std::fs::write(&path, "b --fau").unwrap();
        assert_eq!(read_case_file(&path, last, false), CaseFile::Unchanged);
        assert_eq!(
            read_case_file(&path, last, true),
            CaseFile::New("b --fau".into())
        );
        let _ = std::fs::remove_file(&path);
        assert!(matches!(
            read_case_file(&std::env::temp_dir(), None, true),
            CaseFile::Unreadable(_)
        ));
    }

    #[test]
    fn held_replies_go_after_the_wait() {
        let t = Instant::now();
        let ms = |n| t + Duration::from_millis(n);
        let arrivals = [ms(0), ms(10), ms(20)];
        let hold = Some(Duration::from_millis(100));
        let n = |hold, now| releasable(arrivals.iter().copied(), hold, now);
        // Nothing held without --hold-replies.
        assert_eq!(n(None, t), 3);
        // Each waits its time, in order, whatever is outstanding.
        assert_eq!(n(hold, ms(50)), 0);
        assert_eq!(n(hold, ms(100)), 1);
        assert_eq!(n(hold, ms(115)), 2);
        assert_eq!(n(hold, ms(500)), 3);
    }

    #[test]
    fn replies_the_client_can_take_set_the_grant() {
        let ok = transport::error_reply(0x1234, 7, transport_err_chunk());
        assert_eq!(grant_taken(&ok, 0x1234, 1), Some(7));
        // Another XID, or a header that does not decode: not taken.
        assert_eq!(grant_taken(&ok, 0x1235, 1), None);
        assert_eq!(grant_taken(&ok[..12], 0x1234, 1), None);
        let mut bad = ok.clone();
        bad[7] = 2;
        assert_eq!(grant_taken(&bad, 0x1234, 1), None);
    }

    #[test]
    fn rkeys_and_their_mrs() {
        let w = |handle| RdmaWrite {
            handle,
            offset: 0,
            data: vec![1],
        };
        assert_eq!(
            distinct_handles(&[w(0x105), w(0x205), w(0x105)]),
            [0x105, 0x205]
        );
        // Registered again, the same MR has a new key byte.
        assert_eq!(mr_index(0x1234_5601), mr_index(0x1234_5602));
        assert_ne!(mr_index(0x1234_5601), mr_index(0x1234_5701));
        let seg = |handle| rpcrdma_proto::proto::header::Segment {
            handle,
            length: 8,
            offset: 0,
        };
        let call = transport::Call {
            xid: 1,
            version: 1,
            inv_handle: 0,
            nomsg: false,
            read_chunks: vec![transport::ReadChunk {
                position: 0,
                segments: vec![seg(1)],
            }],
            write_chunks: vec![vec![seg(2), seg(3)]],
            reply_chunk: Some(vec![seg(4)]),
            inline: Vec::new(),
        };
        assert_eq!(call_handles(&call).collect::<Vec<_>>(), [1, 2, 3, 4]);
    }

    #[test]
    fn the_other_rpc_is_answered_by_a_plain_send() {
        let out = |invalidate| transport::Outgoing {
            send: vec![0; 28],
            sends: 1,
            invalidate,
            ..Default::default()
        };
        // Its rkey went with the held Reply: not again.
        let mut o = out(Some(0x105));
        plain_if_invalidated(&mut o, Some(0x105));
        assert_eq!(o, out(None));
        // Any other Reply keeps its own.
        let mut o = out(Some(0x205));
        plain_if_invalidated(&mut o, Some(0x105));
        assert_eq!(o, out(Some(0x205)));
        plain_if_invalidated(&mut o, None);
        assert_eq!(o, out(Some(0x205)));
    }

    #[test]
    fn hex_of_private_data() {
        assert_eq!(hex(&[]), "none");
        assert_eq!(hex(&[0xf6, 1]), "f601");
    }
}
