// SPDX-License-Identifier: GPL-2.0

//! Command line: where to listen, what private data to send, and which
//! fault to inject when.

use crate::transport::Serve;
use std::net::SocketAddr;
use std::path::PathBuf;

pub const USAGE: &str = "\
usage: rpcrdma-peer --listen ADDR:PORT [options]

A userspace RPC-over-RDMA responder (version 1; version 2, the draft, with
--version 2) serving NFSv3 from a tiny in-memory directory, which
misbehaves on purpose when told to.

Options:
  --listen ADDR:PORT      address to listen on (e.g. 0.0.0.0:20050, [::]:20050)
  --private-data MODE     RFC 8797 private data sent with the accept:
                            ok (default), none, bad-magic, version-2,
                            sizes-0, sizes-max, rinv-off, offset
  --inline BYTES          Send and Receive sizes advertised (default 4096)
  --version N             the highest RPC-over-RDMA version served: 1
                          (default: a version 2 Call gets ERR_VERS, as
                          from the Linux server) or 2 (version 2 Calls
                          answered in version 2, version 1 Calls in
                          version 1; no --fault, --fuzz or --fuzz-file
                          yet)
  --credits N             credit grant in every reply (default 32)
  --hold-replies MS       hold each reply until MS milliseconds after its
                          Call arrived, then send in arrival order, so a
                          client keeps its whole grant in flight meanwhile
                          (default: reply at once)
  --shrink-to N           the grant shrink-credits puts in replies
  --no-send-inv           never answer with Send With Invalidate
  --fault NAME            misbehave (see below) on the chosen calls
  --on PROC               calls that count for --fault: an NFSv3 procedure
                          (null, getattr, setattr, lookup, access, read,
                          write, create, remove, readdir, readdirplus,
                          fsstat, fsinfo, pathconf, commit) or any
                          (default read)
  --after N               the fault fires on the Nth such call (default 1)
  --times N               ... and on the N-1 such calls after it; 0 means
                          on every one from the Nth (default 1)
  --frwr-delay-ms MS      wait before touching stale rkeys (default 1500)
  --lifetime SECONDS      exit by itself after this long (default: never)
  --fault-file PATH       take each case from PATH (see below)
  --fuzz SEED             mutate Replies and private data at random
                          (see Fuzzing below)
  --rate P                the chance of a mutation, per Reply and per
                          connection (0 to 1; default 0.05)
  --replay SEED           --fuzz SEED again, said so in the event lines
  --only N,...            with --fuzz or --replay: only the mutations of
                          these Replies (by index), as the rate chose them
  --fuzz-lie              every mutation is a Reply sent twice that also
                          changes a byte of the data it places (to check
                          that a test tells wrong data; a --fuzz-file
                          line says so with a third word, lie)
  --fuzz-file PATH        fuzz while PATH holds a line SEED RATE: each
                          new line starts afresh (indices from 1) with
                          its seed and rate; no file, or an empty one,
                          serves correctly (read every 100 ms; the
                          directory is kept)
  -h, --help              this text

Cases: with --fault-file the peer reads PATH at each connection request
and every 100 ms. Its one line is a case: NAME, then any of
--private-data, --inline, --credits, --hold-replies, --shrink-to,
--no-send-inv, --fault, --on, --after, --times, --frwr-delay-ms and
--version.
Once the text differs from the text last applied, the peer takes the
case (what the line leaves out takes its default, not this command
line's), logs the credits line of each connection it had, disconnects
them, starts its directory and the fault's count afresh, and logs a
case line; its next connection runs the case. A reconnect within the
case finds the same text and changes nothing.

Faults:
  short-header            a 12-byte transport header
  truncated-header        an RDMA_MSG header cut inside its chunk lists
  bad-version             rdma_vers 2
  bad-proc                an undefined rdma_proc (5)
  err-vers                RDMA_ERROR ERR_VERS (versions 2..2)
  err-chunk               RDMA_ERROR ERR_CHUNK
  credits-zero            a grant of 0 credits
  credits-max             a grant of 2^32-1 credits
  shrink-credits          from this call on, replies grant --shrink-to N
                          credits instead of --credits (on every
                          connection, until the case ends)
  wrong-xid               the reply carries another XID
  duplicate-reply         the reply is sent twice (the copy as a plain Send)
  reply-too-long          an inline reply 4 KiB longer than the client's
                          Receive buffers
  write-chunk-overflow    the Write chunk claims 4 KiB more than offered
  write-chunk-extra-segment
                          the Write chunk has one segment more than
                          offered, claiming 4 KiB more
  write-list-unoffered    a READ whose call offered no Write chunk is
                          answered with a Write list of one chunk of one
                          made-up segment claiming the data, which is
                          left out of the inline reply (waits for such a
                          READ: one whose reply fits inline)
  reply-chunk-overflow    the Reply chunk claims 4 KiB more than offered
  nomsg-no-reply-chunk    RDMA_NOMSG without a Reply chunk
  reply-chunk-unoffered   a call that offered no Reply chunk is answered
                          with RDMA_NOMSG and a Reply chunk of one
                          made-up segment (nothing written)
  disconnect-mid-reply    RDMA Writes of the reply, then a disconnect
                          instead of the Send
  silence                 no reply at all
  send-inv-unknown        the reply's Send With Invalidate names an rkey
                          the client never offered (even with
                          --no-send-inv)
  send-inv-other-rpc      the reply is held until another call comes
                          whose only chunks are Read chunks of one rkey
                          (a WRITE; up to 1.5 s); once they are pulled,
                          the held reply is sent with Send With
                          Invalidate of that rkey (even with
                          --no-send-inv), then that call is answered as
                          usual but with a plain Send (its rkey is
                          gone). When the next call comes on
                          that connection, the peer waits until
                          --frwr-delay-ms after the reply, then writes
                          the same bytes again to the held reply's Write
                          chunk rkeys (probe lines), skipping any whose
                          MR index (rkey >> 8) that call, or one that
                          came meanwhile, uses
  frwr-write-after-reply  after a reply, RDMA Write to the Write chunk's
                          rkeys (use with --on read)
  frwr-read-after-reply   after a reply, RDMA Read from the Read chunk's
                          rkeys (use with --on write)
  write-pad               a READ whose data length is not a multiple of
                          4 and whose Write chunk offers a segment after
                          the data's (the pad segment): the XDR pad, 4 -
                          len % 4 zero bytes, is RDMA Written to it and
                          returned with that length (RFC 8166, 3.4.6);
                          without one, fault-not-applicable with
                          reason=no-pad-segment, an honest reply, and
                          the next READ is tried
  other-xid               the reply is held until the next call comes,
                          then sent first with that call's XID in its
                          transport header (its RPC message keeps its
                          own): one RPC's reply offered as another's,
                          still waiting (up to 300 ms; then it goes as
                          it was)
  trailing-inline         a READ whose data goes in the Write chunk gets
                          4 bytes (0xa5) after its inline RPC message,
                          where the data item would end: XDR that a
                          client puts after the data, never into it
                          (waits for such a READ)
  trailing-overflow       the same with 1024 bytes: more than the
                          client's receive buffer holds after the data
                          (waits for a READ whose Reply still fits the
                          client's Receive)
  nomsg-other-xid         a Reply written into the Reply chunk names
                          another XID in its RPC message (the header's
                          with the top bit flipped) while the transport
                          header keeps the Call's (waits for such a Call)

Fuzzing: with --fuzz SEED the peer serves correctly and mutates each
Reply with probability P (--rate): a scripted fault above (but for
shrink-credits, send-inv-other-rpc and the FRWR probes), a word of the
transport header (counts, discriminators, handles, lengths, offsets,
XID, version, procedure, credits), a Send cut short or padded, the
XID of the next Call (sent before that Call's own Reply), a Reply sent
twice, after the next one, or followed
by an earlier Reply's Send, Send With Invalidate of an rkey seen
before or a plain Send, an RDMA Write or Read (before the Reply) of an
rkey the client must have invalidated, a disconnect instead of the
Send, or silence. The private data of a connection is mutated with the
same probability. The RPC messages and the data placed in the chunks
are always the right ones. Each mutation is a fuzz line naming the
seed and the Reply's (or connection's) index, counted over the run;
the choices are a function of the seed and the index, so the same
workload meets the same mutations. write-to and read-from report their
outcome in a fuzz-probe line: result=closed (refused, as it must be),
result=open (it reached the client's memory), result=untested.

Credits: on every connection the peer counts the calls outstanding
(received, not answered) and checks each arriving call against the grant
the client may be using: 1 before the first reply, then the grant of the
latest reply, or a larger grant it replaced less than 3 s before. The
first call over it logs credit-overrun; the end of each connection logs
a credits line.

Output: one line per event on stdout, words of the form key=value after
the event's name (listening, case, case-error, connect-request,
client-private-data, accepted, connected, call, fault-fired,
frwr-after-reply, credit-overrun, probe, credits, completion,
disconnected, fuzzing, fuzz, fuzz-probe, exit).

Exit status: 0 after SIGINT, SIGTERM or --lifetime; 1 when the RDMA
set-up fails; 2 for a usage error.
";

/// The private data sent when accepting a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrivateDataMode {
    /// A valid RFC 8797 message: our sizes, the R bit set.
    Ok,
    /// No private data at all.
    None,
    /// Eight octets whose Format Identifier is wrong.
    BadMagic,
    /// A valid message but for its version, 2.
    Version2,
    /// Both Size fields 0: 1 KiB each way.
    Sizes0,
    /// Both Size fields 255: 256 KiB each way.
    SizesMax,
    /// A valid message with the R bit clear.
    RinvOff,
    /// A valid message after three other octets: RFC 8797, section 5.2,
    /// has the receiver search for it at any offset.
    Offset,
}

impl PrivateDataMode {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "ok" => Self::Ok,
            "none" => Self::None,
            "bad-magic" => Self::BadMagic,
            "version-2" => Self::Version2,
            "sizes-0" => Self::Sizes0,
            "sizes-max" => Self::SizesMax,
            "rinv-off" => Self::RinvOff,
            "offset" => Self::Offset,
            _ => return None,
        })
    }
}

/// The misbehaviours, each documented in [`USAGE`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    ShortHeader,
    TruncatedHeader,
    BadVersion,
    BadProc,
    ErrVers,
    ErrChunk,
    CreditsZero,
    CreditsMax,
    ShrinkCredits,
    WrongXid,
    DuplicateReply,
    ReplyTooLong,
    WriteChunkOverflow,
    WriteChunkExtraSegment,
    WriteListUnoffered,
    ReplyChunkOverflow,
    ReplyChunkUnoffered,
    NomsgNoReplyChunk,
    DisconnectMidReply,
    Silence,
    SendInvUnknown,
    SendInvOtherRpc,
    FrwrWriteAfterReply,
    FrwrReadAfterReply,
    WritePad,
    OtherXid,
    TrailingInline,
    TrailingOverflow,
    NomsgOtherXid,
}

const FAULTS: &[(&str, Fault)] = &[
    ("short-header", Fault::ShortHeader),
    ("truncated-header", Fault::TruncatedHeader),
    ("bad-version", Fault::BadVersion),
    ("bad-proc", Fault::BadProc),
    ("err-vers", Fault::ErrVers),
    ("err-chunk", Fault::ErrChunk),
    ("credits-zero", Fault::CreditsZero),
    ("credits-max", Fault::CreditsMax),
    ("shrink-credits", Fault::ShrinkCredits),
    ("wrong-xid", Fault::WrongXid),
    ("duplicate-reply", Fault::DuplicateReply),
    ("reply-too-long", Fault::ReplyTooLong),
    ("write-chunk-overflow", Fault::WriteChunkOverflow),
    ("write-chunk-extra-segment", Fault::WriteChunkExtraSegment),
    ("write-list-unoffered", Fault::WriteListUnoffered),
    ("reply-chunk-overflow", Fault::ReplyChunkOverflow),
    ("reply-chunk-unoffered", Fault::ReplyChunkUnoffered),
    ("nomsg-no-reply-chunk", Fault::NomsgNoReplyChunk),
    ("disconnect-mid-reply", Fault::DisconnectMidReply),
    ("silence", Fault::Silence),
    ("send-inv-unknown", Fault::SendInvUnknown),
    ("send-inv-other-rpc", Fault::SendInvOtherRpc),
    ("frwr-write-after-reply", Fault::FrwrWriteAfterReply),
    ("frwr-read-after-reply", Fault::FrwrReadAfterReply),
    ("write-pad", Fault::WritePad),
    ("other-xid", Fault::OtherXid),
    ("trailing-inline", Fault::TrailingInline),
    ("trailing-overflow", Fault::TrailingOverflow),
    ("nomsg-other-xid", Fault::NomsgOtherXid),
];

impl Fault {
    pub fn parse(s: &str) -> Option<Self> {
        FAULTS.iter().find(|(n, _)| *n == s).map(|(_, f)| *f)
    }

    pub fn name(self) -> &'static str {
        FAULTS
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("?", |(n, _)| n)
    }
}

/// How `--fuzz` was asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuzzOptions {
    pub seed: u64,
    /// Mutated Replies (and connections) per million.
    pub rate_ppm: u32,
    /// Set by `--replay`: only said in the event lines.
    pub replay: bool,
    /// `--only`: the indices whose mutation applies, whatever the rate.
    pub only: Vec<u64>,
    /// `--fuzz-lie`: every mutation is a Reply sent twice that also
    /// changes a byte of the data it writes into the client's memory.
    /// Only for checking that a test tells wrong data when it gets some.
    pub lie: bool,
}

/// Everything the command line says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    pub listen: SocketAddr,
    pub private_data: PrivateDataMode,
    pub inline: u32,
    pub credits: u32,
    /// --hold-replies, in milliseconds.
    pub hold_replies: Option<u64>,
    /// --shrink-to: the grant of `shrink-credits`.
    pub shrink_to: Option<u32>,
    pub send_inv: bool,
    pub fault: Option<Fault>,
    /// NFSv3 procedure number the fault counts, or `None` for any call.
    pub on: Option<u32>,
    pub after: u64,
    pub times: u64,
    pub frwr_delay_ms: u64,
    pub lifetime: Option<u64>,
    pub fault_file: Option<PathBuf>,
    pub fuzz: Option<FuzzOptions>,
    pub fuzz_file: Option<PathBuf>,
    /// --version: the versions served.
    pub serve: Serve,
}

/// What parsing produced: options to run with, or a request for help.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    Run(Box<Options>),
    Help,
}

fn number<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("{flag}: '{v}' is not a valid number"))
}

impl Options {
    /// Every setting at its default; listening on 0.0.0.0:20050.
    fn defaults() -> Self {
        Self {
            listen: SocketAddr::from(([0, 0, 0, 0], 20050)),
            private_data: PrivateDataMode::Ok,
            inline: 4096,
            credits: 32,
            hold_replies: None,
            shrink_to: None,
            send_inv: true,
            fault: None,
            on: Some(crate::nfs::proc::READ),
            after: 1,
            times: 1,
            frwr_delay_ms: 1500,
            lifetime: None,
            fault_file: None,
            fuzz: None,
            fuzz_file: None,
            serve: Serve::One,
        }
    }
}

/// The options that apply to the whole run, not to one case.
const WHOLE_RUN: &[&str] = &[
    "--listen",
    "--lifetime",
    "--fault-file",
    "--fuzz-file",
    "-h",
    "--help",
];

/// Applies `args` to `o`; `listen` gets what `--listen` says. True when
/// help was asked for.
fn apply<I: IntoIterator<Item = String>>(
    o: &mut Options,
    listen: &mut Option<SocketAddr>,
    args: I,
) -> Result<bool, String> {
    let mut args = args.into_iter();
    let mut fuzz_set = o.fuzz.is_some();
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            return Ok(true);
        }
        if flag == "--no-send-inv" {
            o.send_inv = false;
            continue;
        }
        if flag == "--fuzz-lie" {
            o.fuzz.get_or_insert_with(fuzz_defaults).lie = true;
            continue;
        }
        const WITH_VALUE: &[&str] = &[
            "--listen",
            "--private-data",
            "--inline",
            "--credits",
            "--hold-replies",
            "--shrink-to",
            "--fault",
            "--on",
            "--after",
            "--times",
            "--frwr-delay-ms",
            "--lifetime",
            "--fault-file",
            "--fuzz",
            "--replay",
            "--rate",
            "--only",
            "--fuzz-file",
            "--version",
        ];
        if !WITH_VALUE.contains(&flag.as_str()) {
            return Err(format!("unknown option {flag}"));
        }
        let v = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--listen" => {
                *listen = Some(
                    v.parse::<SocketAddr>()
                        .map_err(|_| format!("--listen: '{v}' is not ADDR:PORT"))?,
                )
            }
            "--private-data" => {
                o.private_data = PrivateDataMode::parse(&v)
                    .ok_or_else(|| format!("--private-data: unknown mode '{v}'"))?
            }
            "--inline" => {
                o.inline = number(&flag, &v)?;
                if !(1024..=256 * 1024).contains(&o.inline) {
                    return Err("--inline: between 1024 and 262144".into());
                }
            }
            "--credits" => o.credits = number(&flag, &v)?,
            "--version" => {
                o.serve = match v.as_str() {
                    "1" => Serve::One,
                    "2" => Serve::Two,
                    _ => return Err(format!("--version: 1 or 2, not '{v}'")),
                }
            }
            "--hold-replies" => o.hold_replies = Some(number(&flag, &v)?),
            "--shrink-to" => o.shrink_to = Some(number(&flag, &v)?),
            "--fault" => {
                o.fault = Some(Fault::parse(&v).ok_or_else(|| format!("--fault: unknown '{v}'"))?)
            }
            "--on" => {
                o.on = if v == "any" {
                    None
                } else {
                    Some(
                        crate::nfs::proc::by_name(&v)
                            .ok_or_else(|| format!("--on: unknown procedure '{v}'"))?,
                    )
                }
            }
            "--after" => {
                o.after = number(&flag, &v)?;
                if o.after == 0 {
                    return Err("--after counts from 1".into());
                }
            }
            "--times" => o.times = number(&flag, &v)?,
            "--frwr-delay-ms" => o.frwr_delay_ms = number(&flag, &v)?,
            "--lifetime" => o.lifetime = Some(number(&flag, &v)?),
            "--fault-file" => o.fault_file = Some(PathBuf::from(v)),
            "--fuzz" | "--replay" => {
                let f = o.fuzz.get_or_insert_with(fuzz_defaults);
                f.seed = number(&flag, &v)?;
                f.replay = flag == "--replay";
                fuzz_set = true;
            }
            "--rate" => {
                let p: f64 = v
                    .parse()
                    .map_err(|_| format!("--rate: '{v}' is not a number"))?;
                if !(0.0..=1.0).contains(&p) {
                    return Err("--rate: between 0 and 1".into());
                }
                o.fuzz.get_or_insert_with(fuzz_defaults).rate_ppm = (p * 1e6).round() as u32;
            }
            "--fuzz-file" => o.fuzz_file = Some(PathBuf::from(v)),
            "--only" => {
                let only = v
                    .split(',')
                    .map(|n| number::<u64>(&flag, n))
                    .collect::<Result<Vec<_>, _>>()?;
                o.fuzz.get_or_insert_with(fuzz_defaults).only = only;
            }
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if o.fuzz.is_some() && !fuzz_set {
        return Err("--rate and --only go with --fuzz SEED or --replay SEED".into());
    }
    if o.fault == Some(Fault::ShrinkCredits) && o.shrink_to.is_none() {
        return Err("--fault shrink-credits needs --shrink-to N".into());
    }
    // The faults and the fuzzer rewrite version 1 headers word by word.
    if o.serve == Serve::Two && (o.fault.is_some() || o.fuzz.is_some() || o.fuzz_file.is_some()) {
        return Err("--version 2 takes no --fault, --fuzz or --fuzz-file yet".into());
    }
    Ok(false)
}

/// What `--fuzz` starts from: 5 % of the Replies mutated.
fn fuzz_defaults() -> FuzzOptions {
    FuzzOptions {
        seed: 0,
        rate_ppm: 50_000,
        replay: false,
        only: Vec::new(),
        lie: false,
    }
}

/// The line of a `--fuzz-file`: "SEED RATE", and "lie" for `--fuzz-lie`.
pub fn parse_fuzz_line(text: &str) -> Result<FuzzOptions, String> {
    let mut words = text.split_whitespace();
    let (Some(seed), Some(rate)) = (words.next(), words.next()) else {
        return Err("not SEED RATE".into());
    };
    let lie = match (words.next(), words.next()) {
        (None, _) => false,
        (Some("lie"), None) => true,
        _ => return Err("not SEED RATE [lie]".into()),
    };
    let mut o = Options::defaults();
    apply(
        &mut o,
        &mut None,
        ["--fuzz", seed, "--rate", rate].map(String::from),
    )?;
    let mut f = o.fuzz.ok_or("no seed")?;
    f.lie = lie;
    Ok(f)
}

/// Parses the arguments after the program name.
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Parsed, String> {
    let mut o = Options::defaults();
    let mut listen = None;
    if apply(&mut o, &mut listen, args)? {
        return Ok(Parsed::Help);
    }
    o.listen = listen.ok_or("--listen is required")?;
    Ok(Parsed::Run(Box::new(o)))
}

/// One case from a --fault-file: its name and the options to run it with.
#[derive(Debug, PartialEq, Eq)]
pub struct Case {
    pub name: String,
    pub opts: Options,
}

/// Parses the text of a --fault-file: one line, a name, then the options
/// of the case. The settings of the whole run come from `run`; every
/// other setting is the default unless the line sets it.
pub fn parse_case(run: &Options, text: &str) -> Result<Case, String> {
    let line = text
        .strip_suffix('\n')
        .ok_or("no newline at the end of the line")?;
    if line.contains('\n') {
        return Err("more than one line".into());
    }
    let mut words = line.split_whitespace().map(String::from);
    let name = words.next().ok_or("no case name")?;
    if name.starts_with('-') {
        return Err(format!("no case name before {name}"));
    }
    let args: Vec<String> = words.collect();
    if let Some(a) = args.iter().find(|a| WHOLE_RUN.contains(&a.as_str())) {
        return Err(format!("{a} is for the command line, not a case"));
    }
    let mut opts = Options {
        listen: run.listen,
        lifetime: run.lifetime,
        fault_file: run.fault_file.clone(),
        fuzz_file: run.fuzz_file.clone(),
        ..Options::defaults()
    };
    apply(&mut opts, &mut None, args)?;
    Ok(Case { name, opts })
}

/// Decides, call by call, whether the fault fires.
#[derive(Clone, Debug)]
pub struct Trigger {
    on: Option<u32>,
    after: u64,
    times: u64,
    seen: u64,
    fired: u64,
}

impl Trigger {
    pub fn new(o: &Options) -> Self {
        Self {
            on: o.on,
            after: o.after,
            times: o.times,
            seen: 0,
            fired: 0,
        }
    }

    /// Counts a call of NFSv3 procedure `proc` (`None`: not an NFSv3
    /// call, counted only by `--on any`); true when the fault is due.
    pub fn due(&mut self, proc: Option<u32>) -> bool {
        if self.on.is_some() && proc != self.on {
            return false;
        }
        self.seen = self.seen.saturating_add(1);
        self.seen >= self.after && (self.times == 0 || self.fired < self.times)
    }

    /// The fault was applied (a call it could not apply to does not count:
    /// the next due call gets it).
    pub fn fired(&mut self) {
        self.fired = self.fired.saturating_add(1);
    }

    pub fn count(&self) -> u64 {
        self.fired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn fuzz_options() {
        let Parsed::Run(o) =
            parse(args("--listen 1.2.3.4:5 --fuzz 7 --rate 0.125 --only 3,5")).unwrap()
        else {
            panic!()
        };
        let f = o.fuzz.unwrap();
        assert_eq!((f.seed, f.rate_ppm, f.replay), (7, 125_000, false));
        assert_eq!(f.only, [3, 5]);
        let Parsed::Run(o) = parse(args("--listen 1.2.3.4:5 --replay 9")).unwrap() else {
            panic!()
        };
        let f = o.fuzz.unwrap();
        assert_eq!((f.seed, f.rate_ppm, f.replay), (9, 50_000, true));
        assert!(parse(args("--listen 1.2.3.4:5 --rate 0.5")).is_err());
        assert!(parse(args("--listen 1.2.3.4:5 --fuzz 1 --rate 2")).is_err());
        assert!(parse(args("--listen 1.2.3.4:5 --fuzz x")).is_err());
        let f = parse_fuzz_line("11 0.25\n").unwrap();
        assert_eq!((f.seed, f.rate_ppm), (11, 250_000));
        assert!(parse_fuzz_line("11\n").is_err());
        assert!(parse_fuzz_line("11 0.1 x\n").is_err());
        assert!(parse_fuzz_line("11 0.1 lie\n").unwrap().lie);
        assert!(!f.lie);
    }

    #[test]
    fn defaults_and_flags() {
        let Parsed::Run(o) = parse(args("--listen 0.0.0.0:20050")).unwrap() else {
            panic!()
        };
        assert_eq!(o.listen.port(), 20050);
        assert_eq!(o.private_data, PrivateDataMode::Ok);
        assert_eq!((o.inline, o.credits, o.after, o.times), (4096, 32, 1, 1));
        assert!(o.send_inv && o.fault.is_none());

        let Parsed::Run(o) = parse(args(
            "--listen [::]:1 --fault frwr-read-after-reply --on write --after 3 --times 0 \
             --private-data sizes-max --no-send-inv --lifetime 9",
        ))
        .unwrap() else {
            panic!()
        };
        assert_eq!(o.fault, Some(Fault::FrwrReadAfterReply));
        assert_eq!(o.on, Some(crate::nfs::proc::WRITE));
        assert_eq!((o.after, o.times, o.lifetime), (3, 0, Some(9)));
        assert_eq!(o.private_data, PrivateDataMode::SizesMax);
        assert!(!o.send_inv);
        assert_eq!(parse(args("-h")).unwrap(), Parsed::Help);
    }

    #[test]
    fn versions() {
        let Parsed::Run(o) = parse(args("--listen 1.2.3.4:5")).unwrap() else {
            panic!()
        };
        assert_eq!(o.serve, Serve::One);
        let Parsed::Run(o) = parse(args("--listen 1.2.3.4:5 --version 2")).unwrap() else {
            panic!()
        };
        assert_eq!(o.serve, Serve::Two);
        assert!(parse(args("--listen 1.2.3.4:5 --version 3")).is_err());
        assert!(parse(args("--listen 1.2.3.4:5 --version 2 --fault silence")).is_err());
        assert!(parse(args("--listen 1.2.3.4:5 --version 2 --fuzz 7")).is_err());
        assert!(parse(args("--listen 1.2.3.4:5 --version 2 --fuzz-file /tmp/f")).is_err());
        // Per case, as --credits.
        let Parsed::Run(run) = parse(args("--listen 1.2.3.4:5 --fault-file /tmp/c")).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            parse_case(&run, "v2 --version 2\n").unwrap().opts.serve,
            Serve::Two
        );
    }

    #[test]
    fn errors() {
        assert!(parse(args("")).is_err());
        assert!(parse(args("--listen nowhere")).is_err());
        assert!(parse(args("--listen 1.2.3.4:5 --fault nope")).is_err());
        assert!(parse(args("--listen 1.2.3.4:5 --after 0")).is_err());
        assert!(parse(args("--listen 1.2.3.4:5 --on")).is_err());
        assert!(parse(args("--listen 1.2.3.4:5 --inline 100")).is_err());
        assert_eq!(
            parse(args("--bogus --listen 1.2.3.4:5")),
            Err("unknown option --bogus".into())
        );
    }

    #[test]
    fn fault_file_and_cases() {
        let Parsed::Run(run) = parse(args(
            "--listen 0.0.0.0:20050 --lifetime 60 --fault-file /tmp/case --fault silence",
        ))
        .unwrap() else {
            panic!()
        };
        assert_eq!(run.fault_file, Some(PathBuf::from("/tmp/case")));

        // What the line leaves out is the default, not the command line's.
        let c = parse_case(&run, "quiet\n").unwrap();
        assert_eq!(c.name, "quiet");
        assert_eq!(c.opts.fault, None);
        assert_eq!((c.opts.listen, c.opts.lifetime), (run.listen, Some(60)));
        assert_eq!(c.opts.fault_file, run.fault_file);

        let c = parse_case(
            &run,
            "frwr-read  --fault frwr-read-after-reply --on write --no-send-inv --times 0\n",
        )
        .unwrap();
        assert_eq!(c.name, "frwr-read");
        assert_eq!(c.opts.fault, Some(Fault::FrwrReadAfterReply));
        assert_eq!(c.opts.on, Some(crate::nfs::proc::WRITE));
        assert_eq!((c.opts.times, c.opts.send_inv), (0, false));
        let c = parse_case(&run, "pd --private-data sizes-0 --credits 8\n").unwrap();
        assert_eq!(
            (c.opts.private_data, c.opts.credits),
            (PrivateDataMode::Sizes0, 8)
        );

        // A line being written (no newline yet), and lines that are wrong.
        assert!(parse_case(&run, "").is_err());
        assert!(parse_case(&run, "half --fault sil").is_err());
        assert!(parse_case(&run, "\n").is_err());
        assert!(parse_case(&run, "--fault silence\n").is_err());
        assert!(parse_case(&run, "a\nb\n").is_err());
        assert!(parse_case(&run, "x --fault nope\n").is_err());
        assert!(parse_case(&run, "x --lifetime 5\n").is_err());
        assert!(parse_case(&run, "x --listen 1.2.3.4:5\n").is_err());
        assert!(parse_case(&run, "x --fault-file /y\n").is_err());
        assert!(parse_case(&run, "x --help\n").is_err());
    }

    #[test]
    fn holding_and_shrinking() {
        let Parsed::Run(o) = parse(args("--listen 1.2.3.4:5")).unwrap() else {
            panic!()
        };
        assert_eq!((o.hold_replies, o.shrink_to), (None, None));
        let Parsed::Run(o) = parse(args(
            "--listen 1.2.3.4:5 --hold-replies 250 --fault shrink-credits --shrink-to 4 --on any",
        ))
        .unwrap() else {
            panic!()
        };
        assert_eq!(o.hold_replies, Some(250));
        assert_eq!(
            (o.fault, o.shrink_to),
            (Some(Fault::ShrinkCredits), Some(4))
        );
        assert!(parse(args("--listen 1.2.3.4:5 --fault shrink-credits")).is_err());
        assert!(parse(args("--listen 1.2.3.4:5 --hold-replies soon")).is_err());
        assert!(parse(args("--listen 1.2.3.4:5 --shrink-to -1")).is_err());

        let c = parse_case(
            &o,
            "shrink --fault shrink-credits --shrink-to 2 --hold-replies 500\n",
        )
        .unwrap();
        assert_eq!(
            (c.opts.shrink_to, c.opts.hold_replies),
            (Some(2), Some(500))
        );
        // Not the command line's.
        let c = parse_case(&o, "plain\n").unwrap();
        assert_eq!((c.opts.shrink_to, c.opts.hold_replies), (None, None));
        assert!(parse_case(&o, "x --fault shrink-credits\n").is_err());
    }

    #[test]
    fn every_fault_has_a_name_in_the_usage() {
        for (name, f) in FAULTS {
            assert_eq!(Fault::parse(name), Some(*f));
            assert_eq!(f.name(), *name);
            assert!(USAGE.contains(name), "{name} undocumented");
        }
    }

    #[test]
    fn trigger_counts_matching_calls() {
        let Parsed::Run(mut o) = parse(args("--listen 1.2.3.4:5 --after 2 --times 2")).unwrap()
        else {
            panic!()
        };
        let read = Some(crate::nfs::proc::READ);
        let mut t = Trigger::new(&o);
        assert!(!t.due(Some(crate::nfs::proc::GETATTR)));
        assert!(!t.due(read));
        assert!(t.due(read));
        t.fired();
        assert!(t.due(read));
        t.fired();
        assert!(!t.due(read));
        assert_eq!(t.count(), 2);

        o.on = None;
        o.times = 0;
        o.after = 1;
        let mut t = Trigger::new(&o);
        for _ in 0..5 {
            assert!(t.due(None));
            t.fired();
        }
    }
}
