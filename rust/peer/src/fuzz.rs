// SPDX-License-Identifier: GPL-2.0

//! `--fuzz SEED --rate P`: the peer serves correctly and, with
//! probability P per Reply, mutates it; with the same probability per
//! connection, the private data it accepts with.
//!
//! Every decision comes from the seed and the index of the Reply (or of
//! the connection), counted from 1 over the peer's whole run, so that the
//! same workload against the same seed meets the same mutations in the
//! same places, and `--only N,...` (with `--fuzz` or `--replay`) applies
//! just the listed ones. Each mutation is logged, with the seed and the
//! index, as a `fuzz` event line.
//!
//! What a mutation may change is the transport's part of a Reply (the
//! RPC-over-RDMA header, the Sends, the RDMA operations and the
//! connection), never the RPC message it carries: a Reply that lies about
//! the RPC's results is a server's wrong answer, which no client can tell
//! from a right one. Whatever the mutation, the data the peer places in
//! the client's memory through the chunks it was offered is the Reply's
//! own, so that a reader who is given bytes must be given the right ones.

use crate::cli::{Fault, FuzzOptions};
use crate::transport::{Call, Outgoing};
use rpcrdma_proto::proto::header::{self, DecodeLimits};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// SplitMix64: small, fast, and enough for choosing mutations.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// The generator for decision `index` of `stream` (Replies or
    /// connections) under `seed`.
    pub fn new(seed: u64, stream: u64, index: u64) -> Self {
        let mut r = Self(seed ^ stream.wrapping_mul(0xA076_1D64_78BD_642F));
        r.0 ^= r
            .next()
            .wrapping_add(index.wrapping_mul(0xE703_7ED1_A0B4_28DB));
        r
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }

    /// True with probability `ppm` per million.
    pub fn chance(&mut self, ppm: u32) -> bool {
        self.below(1_000_000) < u64::from(ppm)
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> Option<T> {
        from.get(self.below(from.len() as u64) as usize).copied()
    }
}

const STREAM_REPLY: u64 = 1;
const STREAM_CONNECT: u64 = 2;

/// The scripted faults a fuzzed Reply may get as they are. Left out:
/// `shrink-credits` (it changes every later grant), `send-inv-other-rpc`
/// (it holds the Reply for another Call), `other-xid` (a mutation of
/// its own here) and the FRWR probes after a Reply (they stop the peer
/// for `--frwr-delay-ms`; `write-to` and `read-from` below do their work
/// without waiting).
const FAULTS: &[Fault] = &[
    Fault::ShortHeader,
    Fault::TruncatedHeader,
    Fault::BadVersion,
    Fault::BadProc,
    Fault::ErrVers,
    Fault::ErrChunk,
    Fault::CreditsZero,
    Fault::CreditsMax,
    Fault::WrongXid,
    Fault::DuplicateReply,
    Fault::ReplyTooLong,
    Fault::WriteChunkOverflow,
    Fault::WriteChunkExtraSegment,
    Fault::WriteListUnoffered,
    Fault::ReplyChunkOverflow,
    Fault::ReplyChunkUnoffered,
    Fault::NomsgNoReplyChunk,
    Fault::DisconnectMidReply,
    Fault::Silence,
    Fault::SendInvUnknown,
    Fault::WritePad,
    Fault::TrailingInline,
    Fault::TrailingOverflow,
    Fault::NomsgOtherXid,
];

/// Values a header word is replaced with, besides ones made from the
/// word itself.
const WORDS: &[u32] = &[0, 1, 2, 3, 4, 5, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff];

/// One Reply's mutation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// A scripted fault, applied by `transport::respond`.
    Fault(Fault),
    /// Word `index` of the transport header becomes `to`.
    Word { index: usize, from: u32, to: u32 },
    /// The Send cut to `to` bytes.
    Truncate { to: usize },
    /// `bytes` bytes appended to the Send.
    Pad { bytes: usize },
    /// Held until the next Call comes, then sent first, with that Call's
    /// XID in its transport header (the RPC message keeps its own): the
    /// Reply of one RPC offered as another's, still waiting.
    OtherXid,
    /// Sent twice.
    Duplicate,
    /// Sent after the next Reply.
    Reorder,
    /// Followed by a copy of an earlier Reply's Send: an answer to an RPC
    /// that has finished.
    Stale { xid: u32 },
    /// Send With Invalidate of an rkey seen earlier.
    Invalidate { rkey: u32 },
    /// A plain Send where the Reply would invalidate.
    PlainSend,
    /// Before the Reply, an RDMA Write of made-up bytes to an rkey the
    /// client should have invalidated (`Seen`); it must not land.
    WriteTo { rkey: u32, offset: u64, len: usize },
    /// Before the Reply, an RDMA Read from such an rkey.
    ReadFrom { rkey: u32, offset: u64, len: u32 },
    /// The RDMA Writes, then a disconnect instead of the Send.
    Disconnect,
    /// No Reply.
    Silence,
}

impl Mutation {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Fault(f) => f.name(),
            Self::Word { .. } => "word",
            Self::Truncate { .. } => "truncate",
            Self::Pad { .. } => "pad",
            Self::OtherXid => "other-xid",
            Self::Duplicate => "duplicate",
            Self::Reorder => "reorder",
            Self::Stale { .. } => "stale",
            Self::Invalidate { .. } => "invalidate",
            Self::PlainSend => "plain-send",
            Self::WriteTo { .. } => "write-to",
            Self::ReadFrom { .. } => "read-from",
            Self::Disconnect => "disconnect",
            Self::Silence => "silence",
        }
    }

    /// The event line's words after the name.
    pub fn words(&self) -> String {
        match self {
            Self::Word { index, from, to } => format!("word={index} from={from:#x} to={to:#x}"),
            Self::Truncate { to } => format!("to={to}"),
            Self::Pad { bytes } => format!("bytes={bytes}"),
            Self::Stale { xid } => format!("of_xid={xid:#010x}"),
            Self::Invalidate { rkey } => format!("rkey={rkey:#010x}"),
            Self::WriteTo { rkey, offset, len } => {
                format!("rkey={rkey:#010x} offset={offset:#x} len={len}")
            }
            Self::ReadFrom { rkey, offset, len } => {
                format!("rkey={rkey:#010x} offset={offset:#x} len={len}")
            }
            _ => String::new(),
        }
    }
}

/// An rkey a Call offered, and how it may be touched later.
#[derive(Clone, Copy, Debug)]
struct Seen {
    rkey: u32,
    offset: u64,
    len: u32,
    /// When its Call was answered with a Reply the client takes (see
    /// `Fuzzer::answered`); `None` while it was not (yet).
    answered: Option<Instant>,
    /// That Reply invalidated it remotely: it is dead from that Send on.
    invalidated: bool,
    /// That Reply's Send invalidated another rkey, or none where it
    /// would have: the client had to close this one itself.
    suspect: bool,
}

/// How long after an honest Reply an rkey it did not invalidate remotely
/// counts as one the client has invalidated itself: time enough for a
/// client under emulation to handle the Reply (it must invalidate before
/// the RPC completes, not at once).
const LOCAL_INVALIDATION: Duration = Duration::from_secs(5);

/// rkeys are kept this long, well inside the time a client takes to
/// register the same MR 256 times more (its key byte wraps).
const SEEN_FOR: Duration = Duration::from_secs(20);

/// Earlier Replies' Sends, for `Stale`.
const HISTORY: usize = 16;

/// The fuzzer's state over the peer's whole run.
pub struct Fuzzer {
    pub opts: FuzzOptions,
    replies: u64,
    connects: u64,
    seen: VecDeque<Seen>,
    history: VecDeque<(u32, Vec<u8>)>,
}

impl Fuzzer {
    pub fn new(opts: FuzzOptions) -> Self {
        Self {
            opts,
            replies: 0,
            connects: 0,
            seen: VecDeque::new(),
            history: VecDeque::new(),
        }
    }

    fn applies(&self, rng: &mut Rng, index: u64) -> bool {
        // The draw is made either way, so that the choices after it are
        // the same with and without --only.
        let drawn = rng.chance(self.opts.rate_ppm);
        if self.opts.only.is_empty() {
            drawn
        } else {
            self.opts.only.contains(&index)
        }
    }

    fn prefix(&self, what: &str, index: u64) -> String {
        format!(
            "fuzz seed={} {what}={index}{}",
            self.opts.seed,
            if self.opts.replay { " replay=1" } else { "" }
        )
    }

    /// The private data to accept connection number N with: `ours`, or a
    /// mutation of it, and the event line that says which.
    pub fn private_data(&mut self, ours: &[u8]) -> (Vec<u8>, Option<String>) {
        self.connects += 1;
        let index = self.connects;
        let mut rng = Rng::new(self.opts.seed, STREAM_CONNECT, index);
        let mut pd = ours.to_vec();
        if !self.applies(&mut rng, index) {
            return (pd, None);
        }
        let what = match rng.below(5) {
            0 if !pd.is_empty() => {
                let i = rng.below(pd.len() as u64) as usize;
                let bit = 1u8 << rng.below(8);
                pd[i] ^= bit;
                format!("flip byte={i} bit={bit:#x}")
            }
            1 if !pd.is_empty() => {
                let i = rng.below(pd.len() as u64) as usize;
                pd[i] = rng.next() as u8;
                format!("byte={i} to={:#x}", pd[i])
            }
            2 => {
                let to = rng.below(pd.len() as u64 + 1) as usize;
                pd.truncate(to);
                format!("truncate to={to}")
            }
            3 => {
                let n = 1 + rng.below(16) as usize;
                pd.extend((0..n).map(|_| rng.next() as u8));
                format!("extend bytes={n}")
            }
            _ => {
                let n = 1 + rng.below(7) as usize;
                let mut moved: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                moved.extend_from_slice(&pd);
                pd = moved;
                format!("offset bytes={n}")
            }
        };
        let line = format!(
            "{} mutation=private-data {what} private_data={}",
            self.prefix("connect", index),
            crate::hex(&pd)
        );
        (pd, Some(line))
    }

    /// Notes the rkeys `call` offers (before its Reply is made).
    pub fn offered(&mut self, call: &Call) {
        let now = Instant::now();
        while self
            .seen
            .front()
            .is_some_and(|s| s.answered.is_some_and(|a| now - a > SEEN_FOR))
        {
            self.seen.pop_front();
        }
        // A bound, should Replies stop being honest for a long time.
        while self.seen.len() > 4096 {
            self.seen.pop_front();
        }
        let segs = call
            .read_chunks
            .iter()
            .flat_map(|c| c.segments.iter())
            .chain(call.write_chunks.iter().flatten())
            .chain(call.reply_chunk.iter().flatten());
        for s in segs {
            self.seen.push_back(Seen {
                rkey: s.handle,
                offset: s.offset,
                len: s.length,
                answered: None,
                invalidated: false,
                suspect: false,
            });
        }
    }

    /// The Reply `out` to the Call that offered `call_handles` went, as
    /// `m` left it: when the client takes such a Reply (honest, or
    /// mutated in what does not concern its RPC), or resets the
    /// connection for it, the Call's rkeys must be dead once the client
    /// has handled it, at once for the one the Send invalidated.
    pub fn answered(
        &mut self,
        call_handles: &[u32],
        out: &Outgoing,
        xid: u32,
        m: Option<&Mutation>,
    ) {
        let taken = matches!(
            m,
            None | Some(
                Mutation::Duplicate
                    | Mutation::Reorder
                    | Mutation::Stale { .. }
                    | Mutation::Pad { .. }
                    | Mutation::PlainSend
                    | Mutation::Invalidate { .. }
            )
        );
        if !taken {
            return;
        }
        let now = Instant::now();
        for s in self.seen.iter_mut().rev() {
            if s.answered.is_none() && call_handles.contains(&s.rkey) {
                s.answered = Some(now);
                s.invalidated = out.invalidate == Some(s.rkey);
                s.suspect = matches!(m, Some(Mutation::PlainSend | Mutation::Invalidate { .. }));
            }
        }
        if m.is_none() {
            if self.history.len() == HISTORY {
                self.history.pop_front();
            }
            self.history.push_back((xid, out.send.clone()));
        }
    }

    /// rkeys no Reply may reach any more, now: answered, and not offered
    /// again by a Call still waiting (its key byte wrapped).
    fn dead(&self) -> Vec<Seen> {
        let now = Instant::now();
        let live = |rkey: u32| {
            self.seen
                .iter()
                .any(|s| s.rkey == rkey && s.answered.is_none())
        };
        self.seen
            .iter()
            .filter(|s| {
                s.answered
                    .is_some_and(|a| s.invalidated || now - a >= LOCAL_INVALIDATION)
                    && !live(s.rkey)
            })
            .copied()
            .collect()
    }

    /// Decides the mutation of the next Reply, to `call`. The event
    /// line's prefix comes with it.
    pub fn decide(&mut self, call: &Call) -> Option<(Mutation, String)> {
        self.replies += 1;
        let index = self.replies;
        let mut rng = Rng::new(self.opts.seed, STREAM_REPLY, index);
        if !self.applies(&mut rng, index) {
            return None;
        }
        let prefix = format!("{} xid={:#010x}", self.prefix("reply", index), call.xid);
        if self.opts.lie {
            // A Reply the client takes, so that the lie reaches the reader.
            return Some((Mutation::Duplicate, prefix));
        }
        let m = match rng.below(16) {
            0..=3 => Mutation::Fault(rng.pick(FAULTS)?),
            // Word and length are resolved against the Reply's own header
            // once it is made (`apply`), from these draws.
            4..=7 => Mutation::Word {
                index: rng.next() as usize,
                from: 0,
                to: rng.next() as u32,
            },
            8 => Mutation::Truncate {
                to: rng.next() as usize,
            },
            9 => Mutation::Pad {
                bytes: 1 + rng.below(64) as usize,
            },
            10 => Mutation::OtherXid,
            11 => match rng.below(3) {
                0 => Mutation::Duplicate,
                1 => Mutation::Reorder,
                _ => match self
                    .history
                    .get(rng.below(self.history.len() as u64) as usize)
                {
                    Some((xid, _)) => Mutation::Stale { xid: *xid },
                    None => Mutation::Reorder,
                },
            },
            12 => {
                let rkey = match self.seen.get(rng.below(self.seen.len() as u64) as usize) {
                    Some(s) if rng.below(2) == 0 => s.rkey,
                    _ => rng.next() as u32,
                };
                if rng.below(3) == 0 {
                    Mutation::PlainSend
                } else {
                    Mutation::Invalidate { rkey }
                }
            }
            13 => {
                let dead = self.dead();
                // Half the time one the client had to close itself
                // although the Reply said otherwise, when there is one.
                let suspect: Vec<Seen> = dead.iter().filter(|s| s.suspect).copied().collect();
                let from = if !suspect.is_empty() && rng.below(2) == 0 {
                    &suspect
                } else {
                    &dead
                };
                match rng.pick(from) {
                    Some(s) => {
                        let len = 1 + rng.below(u64::from(s.len.clamp(1, 8192))) as u32;
                        // Inside the region or just past its end.
                        let offset = s.offset + rng.below(u64::from(s.len) + 64);
                        if rng.below(2) == 0 {
                            Mutation::WriteTo {
                                rkey: s.rkey,
                                offset,
                                len: len as usize,
                            }
                        } else {
                            Mutation::ReadFrom {
                                rkey: s.rkey,
                                offset,
                                len,
                            }
                        }
                    }
                    None => Mutation::Duplicate,
                }
            }
            14 => Mutation::Disconnect,
            _ => Mutation::Silence,
        };
        Some((m, prefix))
    }

    /// Applies the parts of `m` that change the Reply `out` itself;
    /// returns the mutation as it was applied (a word mutation with the
    /// word it found). `Fault` was applied when `out` was made; reorder,
    /// other-xid, stale, write-to and read-from are the caller's, as the
    /// Reply goes.
    pub fn apply(&self, m: Mutation, out: &mut Outgoing) -> Mutation {
        if self.opts.lie {
            if let Some(b) = out.writes.first_mut().and_then(|w| w.data.first_mut()) {
                *b ^= 0x20;
            }
        }
        match m {
            Mutation::Word { index, to, .. } => {
                let hdr_words = header_len(&out.send) / 4;
                if hdr_words == 0 {
                    return Mutation::Truncate { to: out.send.len() };
                }
                let i = index % hdr_words;
                let b = &mut out.send[i * 4..i * 4 + 4];
                let from = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                let to = match to % 8 {
                    0..=2 => WORDS[(to / 8) as usize % WORDS.len()],
                    3 => from ^ (1 << ((to / 8) % 32)),
                    4 => from.wrapping_add(1),
                    5 => from.wrapping_sub(1),
                    6 => from.wrapping_add(4096),
                    _ => to,
                };
                b.copy_from_slice(&to.to_be_bytes());
                Mutation::Word { index: i, from, to }
            }
            Mutation::Truncate { to } => {
                // Mostly inside the header, where it matters.
                let limit = (header_len(&out.send) + 8).min(out.send.len());
                let to = to % (limit + 1);
                out.send.truncate(to);
                Mutation::Truncate { to }
            }
            Mutation::Pad { bytes } => {
                out.send.resize(out.send.len() + bytes, 0xa5);
                m
            }
            Mutation::Duplicate => {
                out.sends = out.sends.max(2);
                m
            }
            Mutation::Invalidate { rkey } => {
                out.invalidate = Some(rkey);
                m
            }
            Mutation::PlainSend => {
                out.invalidate = None;
                m
            }
            Mutation::Disconnect => {
                out.disconnect = true;
                out.sends = 0;
                m
            }
            Mutation::Silence => {
                out.sends = 0;
                out.writes.clear();
                m
            }
            m => m,
        }
    }

    /// An earlier Reply's Send, for `Stale`.
    pub fn stale(&self, xid: u32) -> Option<Vec<u8>> {
        self.history
            .iter()
            .find(|(x, _)| *x == xid)
            .map(|(_, s)| s.clone())
    }
}

/// The length of the transport header at the start of `send`: as decoded,
/// or the fixed part's when it does not decode.
fn header_len(send: &[u8]) -> usize {
    match header::decode(send, &DecodeLimits::PERMISSIVE) {
        Ok((_, len)) => len,
        Err(_) => send.len().min(16) & !3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(rate_ppm: u32, only: Vec<u64>) -> FuzzOptions {
        FuzzOptions {
            seed: 42,
            rate_ppm,
            replay: false,
            only,
            lie: false,
        }
    }

    fn call(xid: u32) -> Call {
        Call {
            xid,
            version: 1,
            inv_handle: 0,
            nomsg: false,
            read_chunks: Vec::new(),
            write_chunks: Vec::new(),
            reply_chunk: None,
            inline: Vec::new(),
        }
    }

    #[test]
    fn the_same_seed_makes_the_same_choices() {
        let run = |seed| {
            let mut f = Fuzzer::new(FuzzOptions {
                seed,
                ..opts(300_000, Vec::new())
            });
            (0..200)
                .map(|i| f.decide(&call(i)).map(|(m, _)| m))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        let n = run(7).iter().filter(|m| m.is_some()).count();
        // 30 % of 200, give or take.
        assert!((30..=90).contains(&n), "{n} mutations");
    }

    #[test]
    fn only_applies_the_listed_mutations_as_the_rate_chose_them() {
        let mut all = Fuzzer::new(opts(1_000_000, Vec::new()));
        let mut only = Fuzzer::new(opts(0, vec![3, 5]));
        for i in 1..=6u32 {
            let a = all.decide(&call(i)).map(|(m, _)| m);
            let o = only.decide(&call(i)).map(|(m, _)| m);
            if i == 3 || i == 5 {
                assert_eq!(a, o);
            } else {
                assert_eq!(o, None);
            }
        }
    }

    #[test]
    fn a_word_mutation_stays_in_the_header() {
        let f = Fuzzer::new(opts(0, Vec::new()));
        // RDMA_MSG, no chunks: 7 words of header, then the RPC message.
        let mut send = Vec::new();
        for w in [1u32, 1, 32, 0, 0, 0, 0, 0xdead, 0xbeef] {
            send.extend_from_slice(&w.to_be_bytes());
        }
        for seed in 0..64u64 {
            let mut out = Outgoing {
                send: send.clone(),
                sends: 1,
                ..Outgoing::default()
            };
            let m = f.apply(
                Mutation::Word {
                    index: seed as usize * 7919,
                    from: 0,
                    to: (seed as u32).wrapping_mul(2_654_435_761),
                },
                &mut out,
            );
            let Mutation::Word { index, .. } = m else {
                panic!("{m:?}");
            };
            assert!(index < 7);
            assert_eq!(out.send[28..], send[28..], "the RPC message is untouched");
        }
    }

    #[test]
    fn dead_rkeys_are_the_answered_ones() {
        let mut f = Fuzzer::new(opts(0, Vec::new()));
        let mut c = call(9);
        c.write_chunks = vec![vec![header::Segment {
            handle: 0x100,
            length: 4096,
            offset: 0x1000,
        }]];
        f.offered(&c);
        assert!(f.dead().is_empty(), "not answered yet");
        let out = Outgoing {
            invalidate: Some(0x100),
            sends: 1,
            ..Outgoing::default()
        };
        f.answered(&[0x100], &out, 9, None);
        assert_eq!(f.dead().len(), 1, "invalidated by the Reply's Send");
    }

    #[test]
    fn private_data_is_mutated_at_the_rate() {
        let mut f = Fuzzer::new(opts(1_000_000, Vec::new()));
        let ours = [0xf6, 0xab, 0x0e, 0x18, 1, 0, 3, 3];
        let (pd, line) = f.private_data(&ours);
        assert!(line.is_some());
        assert_ne!(pd, ours);
        let mut none = Fuzzer::new(opts(0, Vec::new()));
        assert_eq!(none.private_data(&ours), (ours.to_vec(), None));
    }
}
