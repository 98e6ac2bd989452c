// SPDX-License-Identifier: GPL-2.0

//! Credit accounting of one connection: the Calls outstanding (received,
//! not answered), checked against the grant the client may be using.
//!
//! The rule, which never blames a correct client:
//!
//! - A correct client, once it has taken a Reply carrying grant `g`, keeps
//!   at most `g` Calls in flight (RFC 8166, section 3.3.1); on a new
//!   connection it assumes one credit until the first Reply (section
//!   3.3.3). Both the Linux client (`rpcrdma_reqs_reset` and
//!   `rpcrdma_reset_cwnd` zero `xprt->cong` and set a window of one on
//!   each connect) and rpcrdma-rs (`rpcrdma_rs_xprt_reset_cwnd`, stale
//!   congestion slots forgotten) start every connection at one, even when
//!   Calls of the connection before are retransmitted.
//! - The Calls we count are never more than the client's: each Call we
//!   received and have not answered was sent before the one arriving (a
//!   Reliable Connection delivers in order) and is still in flight at the
//!   client, which only lets it go when it takes our Reply. So a count
//!   above what the client may use is the client's doing. A Call that
//!   comes again with an XID still outstanding is counted once.
//! - The grant a Call is checked against is the largest the client may
//!   have taken before sending it: the latest grant we sent, or the
//!   grant before it while it is recent. A grant that shrinks does not
//!   bind at once: Calls the client sent before it took the shrinking
//!   Reply may still arrive, so the grant before stays allowed for
//!   [`WINDOW`] after the shrinking Reply's Send completed. A larger
//!   grant allows more at once (the client cannot use it earlier, so
//!   allowing it early blames no one).
//! - [`WINDOW`] is 3 s: a client takes a Reply from its Receive
//!   completion within milliseconds, even under emulation; and the
//!   shrinking Reply answers a Call that was sent before the Reply went,
//!   so a client that had not taken that Reply 3 s after it went has an
//!   RPC 3 s old without its reply: the hostile tests mount with
//!   `timeo=30`, and both clients drop the connection when an RPC times
//!   out (`xprt_rdma_timer`, `rpcrdma_rs_timer`), after which no Call
//!   comes on it. A window longer than needed only delays the check.
//! - A grant of 0 counts as 1 (what both clients use instead).
//!
//! Only Replies the client can take change the grant: one it cannot
//! decode, or whose XID is not the Call's, leaves the client on the grant
//! it had. A client that abandons an RPC on a live connection (a killed
//! task frees its congestion slot without a Reply) can appear to overrun;
//! the hostile tests kill no I/O on a connection that works.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// How long a grant stays allowed after a smaller one was sent.
pub const WINDOW: Duration = Duration::from_secs(3);

/// Grants superseded within [`WINDOW`] kept at most; older ones merge.
const KEEP: usize = 16;

/// A Call that arrived with more outstanding than allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overrun {
    pub outstanding: usize,
    pub granted: u32,
    /// The first on this connection.
    pub first: bool,
}

/// The credit state of one connection.
#[derive(Clone, Debug, Default)]
pub struct CreditBook {
    /// XIDs received and not answered, with how many Calls carried each.
    outstanding: HashMap<u32, u32>,
    /// The grant of the latest Reply the client can take (0 taken as 1);
    /// `None` before the first.
    grant: Option<u32>,
    /// Grants superseded recently: (allowed until, grant).
    earlier: VecDeque<(Instant, u32)>,
    max_outstanding: usize,
    overruns: u64,
}

impl CreditBook {
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls outstanding now (distinct XIDs).
    #[cfg(test)]
    pub fn outstanding(&self) -> usize {
        self.outstanding.len()
    }

    /// The grant the client uses once it has taken our latest Reply: 1
    /// before the first.
    pub fn current(&self) -> u32 {
        self.grant.unwrap_or(1)
    }

    pub fn max_outstanding(&self) -> usize {
        self.max_outstanding
    }

    pub fn overruns(&self) -> u64 {
        self.overruns
    }

    /// The most Calls the client may have in flight when sending a Call
    /// that arrived at `at`.
    pub fn allowed(&self, at: Instant) -> u32 {
        self.earlier
            .iter()
            .filter(|(until, _)| *until > at)
            .map(|(_, g)| *g)
            .fold(self.current(), u32::max)
    }

    /// Counts a Call with `xid` that arrived at `at`; says if it overran.
    pub fn arrive(&mut self, xid: u32, at: Instant) -> Option<Overrun> {
        // Calls are taken in arrival order: what expired before this one
        // expired before any later one.
        while self.earlier.front().is_some_and(|(until, _)| *until <= at) {
            self.earlier.pop_front();
        }
        *self.outstanding.entry(xid).or_insert(0) += 1;
        let n = self.outstanding.len();
        self.max_outstanding = self.max_outstanding.max(n);
        let granted = self.allowed(at);
        if n <= granted as usize {
            return None;
        }
        self.overruns += 1;
        Some(Overrun {
            outstanding: n,
            granted,
            first: self.overruns == 1,
        })
    }

    /// A Reply to `xid` went (any Reply, taken or not: the Call is no
    /// longer ours to answer).
    pub fn answered(&mut self, xid: u32) {
        if let Some(n) = self.outstanding.get_mut(&xid) {
            *n -= 1;
            if *n == 0 {
                self.outstanding.remove(&xid);
            }
        }
    }

    /// A Reply the client can take, carrying `grant`, completed its Send
    /// at `at`.
    pub fn granted(&mut self, grant: u32, at: Instant) {
        let grant = grant.max(1);
        let before = self.current();
        self.grant = Some(grant);
        if grant < before {
            self.earlier.push_back((at + WINDOW, before));
            if self.earlier.len() > KEEP {
                // Merging the two oldest keeps the larger grant for the
                // longer time: more allowed, never less.
                if let (Some((_, a)), Some((until, b))) =
                    (self.earlier.pop_front(), self.earlier.pop_front())
                {
                    self.earlier.push_front((until, a.max(b)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: Instant, n: u64) -> Instant {
        t + Duration::from_millis(n)
    }

    #[test]
    fn one_credit_before_the_first_reply() {
        let t = Instant::now();
        let mut b = CreditBook::new();
        assert_eq!(b.current(), 1);
        assert_eq!(b.arrive(1, t), None);
        let o = b.arrive(2, t).unwrap();
        assert_eq!((o.outstanding, o.granted, o.first), (2, 1, true));
        assert!(!b.arrive(3, t).unwrap().first);
        assert_eq!((b.max_outstanding(), b.overruns()), (3, 2));
    }

    #[test]
    fn a_grant_allows_that_many() {
        let t = Instant::now();
        let mut b = CreditBook::new();
        b.arrive(1, t);
        b.answered(1);
        b.granted(4, t);
        for x in 10..14 {
            assert_eq!(b.arrive(x, t), None);
        }
        assert_eq!(b.arrive(14, t).map(|o| o.granted), Some(4));
        b.answered(14);
        b.answered(10);
        // A Call to which a Reply went makes room for one more.
        assert_eq!(b.arrive(15, t), None);
        assert_eq!(b.outstanding(), 4);
    }

    #[test]
    fn a_retransmission_counts_once_until_both_are_answered() {
        let t = Instant::now();
        let mut b = CreditBook::new();
        assert_eq!(b.arrive(7, t), None);
        assert_eq!(b.arrive(7, t), None);
        assert_eq!(b.outstanding(), 1);
        b.answered(7);
        assert_eq!(b.outstanding(), 1);
        b.answered(7);
        assert_eq!(b.outstanding(), 0);
        // A Reply to no outstanding Call changes nothing.
        b.answered(99);
        assert_eq!(b.outstanding(), 0);
    }

    #[test]
    fn a_shrinking_grant_binds_after_the_window() {
        let t = Instant::now();
        let mut b = CreditBook::new();
        b.granted(32, t);
        for x in 0..8 {
            assert_eq!(b.arrive(x, ms(t, 1)), None);
        }
        b.granted(2, ms(t, 10));
        assert_eq!(b.current(), 2);
        // Sent before the client took the Reply: still allowed.
        assert_eq!(b.arrive(8, ms(t, 20)), None);
        assert_eq!(b.allowed(ms(t, 10) + WINDOW - Duration::from_millis(1)), 32);
        for x in 0..8 {
            b.answered(x);
        }
        // After the window, the new grant.
        let late = ms(t, 10) + WINDOW;
        assert_eq!(b.allowed(late), 2);
        assert_eq!(b.arrive(100, late), None);
        let o = b.arrive(101, late).unwrap();
        assert_eq!((o.outstanding, o.granted), (3, 2));
        // A grant of 0 is 1; growing applies at once.
        b.granted(0, late);
        assert_eq!(b.current(), 1);
        b.granted(64, late);
        assert_eq!(b.allowed(late), 64);
    }

    #[test]
    fn many_shrinks_keep_the_largest() {
        let t = Instant::now();
        let mut b = CreditBook::new();
        b.granted(100, t);
        for g in (1..=40).rev() {
            b.granted(g, ms(t, 100 - g as u64));
        }
        assert!(b.earlier.len() <= KEEP);
        assert_eq!(b.allowed(ms(t, 100)), 100);
        assert_eq!(b.allowed(ms(t, 100) + WINDOW), 1);
    }
}
