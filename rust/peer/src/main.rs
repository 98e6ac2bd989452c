// SPDX-License-Identifier: GPL-2.0

//! rpcrdma-peer: an RPC-over-RDMA version 1 responder that serves NFSv3
//! correctly until a scripted fault fires, to show that a kernel client
//! survives a hostile server. See `cli::USAGE`.

mod cli;
mod nfs;
mod sys;
mod transport;
mod verbs;
mod xdr;

use cli::{Fault, Options, Parsed, PrivateDataMode, Trigger};
use rpcrdma_proto::proto::private_data::{self, LocalSettings, PrivateData};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use sys::*;
use transport::{Limits, Refused};
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

/// How long `send-inv-other-rpc` holds a Reply for another Call to come:
/// well inside the client's RPC timeout, which would reset the connection.
const HOLD_LIMIT: Duration = Duration::from_millis(1500);

/// A Reply held back by `send-inv-other-rpc`.
struct Held {
    xid: u32,
    proc_name: String,
    out: transport::Outgoing,
    since: Instant,
}

/// A connection, what it allows, and a Reply it holds back.
type Served = (Box<Conn>, Limits, Option<Held>);

struct Peer {
    opts: Options,
    listener: Listener,
    conns: Vec<Served>,
    server: nfs::Server,
    trigger: Trigger,
    /// The --fault-file text last applied (or refused).
    case_text: Option<String>,
    case_read: Instant,
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
        for (c, _, _) in &mut self.conns {
            c.disconnect();
        }
        self.opts = case.opts;
        self.trigger = Trigger::new(&self.opts);
        self.server = nfs::Server::new();
        let o = &self.opts;
        event!(
            "case name={} private_data={:?} fault={} on={} after={} times={} send_inv={} credits={} inline={} disconnecting={old}",
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
                    if let Some((c, l, _)) = self.conns.iter().find(|(c, _, _)| c.id == id) {
                        event!(
                            "connected peer={} send_limit={} credits={} send_inv={}",
                            c.peer,
                            l.send_limit,
                            l.credits,
                            u8::from(l.send_inv)
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
                    if let Some(at) = self.conns.iter().position(|(c, _, _)| c.id == id) {
                        let (c, _, _) = self.conns.swap_remove(at);
                        event!(
                            "disconnected peer={} event={} status={}",
                            c.peer,
                            event_name(kind),
                            status
                        );
                        c.release();
                    }
                }
                _ => {}
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
        let ours = our_private_data(self.opts.private_data, self.opts.inline);
        let (limits, recv_size) = connection_limits(&self.opts, &ours, client);
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
                self.conns.push((c, limits, None));
            }
            Err(e) => event!("connect-refused peer={peer} reason={e:?}"),
        }
    }

    /// Handles every message received on connection `i`.
    fn serve(&mut self, i: usize) {
        let (conn, limits, held) = &mut self.conns[i];
        conn.service();
        while !conn.dead {
            let Some(msg) = conn.next_message() else {
                break;
            };
            handle(
                conn,
                limits,
                held,
                &mut self.server,
                &mut self.trigger,
                &self.opts,
                msg,
            );
        }
        if held
            .as_ref()
            .is_some_and(|h| h.since.elapsed() >= HOLD_LIMIT)
            && !conn.dead
        {
            // No other Call came: the Reply goes as it was.
            if let Some(h) = held.take() {
                release(conn, h, None, &self.trigger);
            }
        }
        for (what, status) in std::mem::take(&mut conn.errors) {
            event!(
                "completion peer={} op={what} status={}",
                conn.peer,
                wc_status_name(status)
            );
        }
        if conn.dead {
            // Our QP failed: let the client know.
            conn.disconnect();
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
            fds.extend(self.conns.iter().map(|(c, _, _)| libc::pollfd {
                fd: c.comp_fd(),
                events: libc::POLLIN,
                revents: 0,
            }));
            let timeout = if self.opts.fault_file.is_some() {
                CASE_POLL.as_millis() as libc::c_int
            } else {
                200
            };
            // SAFETY: `fds` is a valid array of its length.
            unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
            if self.case_read.elapsed() >= CASE_POLL {
                self.check_case(false);
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

/// Answers one received message.
#[allow(clippy::too_many_arguments)]
fn handle(
    conn: &mut Conn,
    limits: &Limits,
    held: &mut Option<Held>,
    server: &mut nfs::Server,
    trigger: &mut Trigger,
    opts: &Options,
    msg: verbs::Message,
) {
    if msg.invalidated {
        event!("unexpected-invalidation peer={}", conn.peer);
    }
    let call = match transport::parse_call(&msg.data) {
        Ok(c) => c,
        Err(Refused::Short) => {
            event!("call-refused reason=short len={}", msg.data.len());
            return;
        }
        Err(Refused::Ignored(e)) => {
            event!("call-refused reason={e:?}");
            return;
        }
        Err(Refused::Error { xid, error }) => {
            event!("call-refused xid={xid:#010x} answer={error:?}");
            send_plain(conn, transport::error_reply(xid, limits.credits, error));
            return;
        }
    };
    let pulled = if call.read_chunks.is_empty() {
        Vec::new()
    } else {
        match conn.pull(&call.read_chunks) {
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
        send_plain(
            conn,
            transport::error_reply(call.xid, limits.credits, transport_err_chunk()),
        );
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
    // A Reply held back goes first, invalidating this Call's rkey.
    if let Some(rkey) = call.inv_rkey() {
        if let Some(h) = held.take() {
            release(conn, h, Some((rkey, call.xid)), trigger);
        }
    }
    let Some(reply) = server.handle(&whole) else {
        event!("call-refused xid={:#010x} reason=not-an-rpc-call", call.xid);
        return;
    };
    let due = opts
        .fault
        .filter(|_| trigger.due(info.and_then(|i| i.nfs_proc)));
    let out = transport::respond(&call, &reply, limits, due);
    if out.hold {
        // Counted now, so that the Call it waits for is answered as usual.
        trigger.fired();
        event!(
            "fault-held name={} xid={:#010x} proc={proc_name} count={}",
            due.map_or("?", Fault::name),
            call.xid,
            trigger.count()
        );
        *held = Some(Held {
            xid: call.xid,
            proc_name,
            out,
            since: Instant::now(),
        });
        return;
    }
    if let Some(f) = due {
        if out.fired {
            trigger.fired();
            event!(
                "fault-fired name={} xid={:#010x} proc={proc_name} count={}",
                f.name(),
                call.xid,
                trigger.count()
            );
        } else {
            event!(
                "fault-not-applicable name={} xid={:#010x} proc={proc_name}",
                f.name(),
                call.xid
            );
        }
    }
    execute_reply(conn, &out, call.xid);
    if let Some(probe) = &out.probe {
        let what = match probe {
            transport::Probe::Write(_) => "write",
            transport::Probe::Read(_) => "read",
        };
        // Let the client take the Reply and invalidate first.
        std::thread::sleep(Duration::from_millis(opts.frwr_delay_ms));
        match conn.probe(probe) {
            Ok(r) => event!(
                "frwr-after-reply {what} status={} succeeded={} segments={} bytes={} qp_before={} qp={} xid={:#010x} fault={}",
                r.status.map_or("NOT_POSTED", wc_status_name),
                r.succeeded,
                r.segments,
                r.bytes,
                r.qp_before.map_or("?", verbs::qp_state_name),
                r.qp_state.map_or("?", verbs::qp_state_name),
                call.xid,
                due.map_or("?", Fault::name)
            ),
            Err(e) => event!("frwr-after-reply {what} error={e:?} xid={:#010x}", call.xid),
        }
    }
}

/// Sends the Reply `h` held back: with Send With Invalidate of `other`'s
/// rkey (that Call's XID alongside), or as it was when no other Call came.
fn release(conn: &mut Conn, mut h: Held, other: Option<(u32, u32)>, trigger: &Trigger) {
    let name = Fault::SendInvOtherRpc.name();
    match other {
        Some((rkey, other_xid)) => {
            h.out.invalidate = Some(rkey);
            event!(
                "fault-fired name={name} xid={:#010x} proc={} count={} rkey={rkey:#010x} of_xid={other_xid:#010x}",
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
    execute_reply(conn, &h.out, h.xid);
}

/// Carries out the Reply `out` to Call `xid`; says if it failed.
fn execute_reply(conn: &mut Conn, out: &transport::Outgoing, xid: u32) {
    match conn.execute(out) {
        Ok(None) => {}
        Ok(Some(status)) => event!(
            "reply-failed xid={xid:#010x} status={}",
            wc_status_name(status)
        ),
        Err(e) => event!("reply-failed xid={xid:#010x} reason={e:?}"),
    }
}

fn transport_err_chunk() -> rpcrdma_proto::proto::header::RdmaError {
    rpcrdma_proto::proto::header::RdmaError::Chunk
}

/// Sends a transport header on its own (an RDMA_ERROR).
fn send_plain(conn: &mut Conn, send: Vec<u8>) {
    let out = transport::Outgoing {
        send,
        sends: 1,
        ..Default::default()
    };
    if let Err(e) = conn.execute(&out) {
        event!("reply-failed reason={e:?}");
    }
}

fn main() {
    let opts = match cli::parse(std::env::args().skip(1)) {
        Ok(Parsed::Run(o)) => o,
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
        case_text: None,
        case_read: Instant::now(),
    };
    let result = peer.run();
    let fired = peer.trigger.count();
    for (mut c, _, _) in peer.conns.drain(..) {
        c.disconnect();
        c.release();
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

    fn opts() -> Options {
        let Parsed::Run(o) = cli::parse(["--listen".into(), "0.0.0.0:1".into()]).unwrap() else {
            panic!()
        };
        o
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
    fn hex_of_private_data() {
        assert_eq!(hex(&[]), "none");
        assert_eq!(hex(&[0xf6, 1]), "f601");
    }
}
