// SPDX-License-Identifier: GPL-2.0

//! The Requester's accounting of the Responder's credit grant
//! (RFC 8166, section 3.3.1).
//!
//! Each Call asks for `max_requests` credits; each Reply says how many the
//! Responder grants. The grant comes off the wire and is not trusted: it is
//! sanitised the way C's `rpcrdma_reply_handler` does before anything uses
//! it. The RPC layer's congestion window follows the grant
//! (C: `xprt->cwnd = credits << RPC_CWNDSHIFT`).

/// The RPC layer's congestion window scale (C: `RPC_CWNDSHIFT`): one
/// request in flight is `1 << RPC_CWNDSHIFT` units of `xprt->cwnd`.
pub const RPC_CWNDSHIFT: u32 = 8;

/// Credit state of one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Credits {
    max_requests: u32,
    granted: u32,
}

impl Credits {
    /// A fresh connection that will ask for `max_requests` credits
    /// (C: `re_max_requests`, from the slot table size and the device's
    /// limits). Zero is taken as one: a Requester needs at least one request
    /// in flight. Until the first Reply, one credit is assumed
    /// (RFC 8166, section 3.3.3: a Requester "MUST NOT assume more than one
    /// credit is available").
    pub const fn new(max_requests: u32) -> Self {
        Self {
            max_requests: if max_requests == 0 { 1 } else { max_requests },
            granted: 1,
        }
    }

    /// What to put in `rdma_credit` of every Call
    /// (C: `rb_max_requests`).
    pub const fn requested(&self) -> u32 {
        self.max_requests
    }

    /// The current grant, always between 1 and [`Self::requested`].
    pub const fn granted(&self) -> u32 {
        self.granted
    }

    /// Sanitises a grant from the wire: zero becomes one (a grant of zero
    /// would deadlock, RFC 8166, section 3.3.1 forbids it), and a grant above
    /// what we asked for is clamped to it (C: `re_max_requests`).
    pub const fn sanitize(grant: u32, max_requests: u32) -> u32 {
        if grant == 0 {
            1
        } else if grant > max_requests {
            max_requests
        } else {
            grant
        }
    }

    /// Applies the grant carried by a Reply that decoded correctly and
    /// matched a pending Call, and returns the sanitised value. A smaller
    /// grant applies at once: requests already in flight stay in flight,
    /// but no new one starts until they drop below it. Returns whether
    /// the grant changed (C updates `cwnd` only then).
    pub fn update(&mut self, grant: u32) -> (u32, bool) {
        let grant = Self::sanitize(grant, self.max_requests);
        let changed = grant != self.granted;
        self.granted = grant;
        (grant, changed)
    }

    /// Back to one credit, for a new connection
    /// (C: `rpcrdma_reset_cwnd`; RFC 8166, section 3.3.3).
    pub fn reset(&mut self) {
        self.granted = 1;
    }

    /// How many new requests may start with `in_flight` already
    /// outstanding: the lower of requested and granted, minus those in
    /// flight (RFC 8166, section 3.3.1), never below zero.
    pub const fn available(&self, in_flight: u32) -> u32 {
        self.granted.saturating_sub(in_flight)
    }

    /// True if one more request may be sent now.
    pub const fn may_send(&self, in_flight: u32) -> bool {
        in_flight < self.granted
    }

    /// The RPC layer's congestion window for the current grant
    /// (C: `xprt->cwnd = credits << RPC_CWNDSHIFT`). 64 bits, so even the
    /// largest grant cannot overflow.
    pub const fn cwnd(&self) -> u64 {
        (self.granted as u64) << RPC_CWNDSHIFT
    }

    /// Receives to keep posted: one per credit plus two per backchannel
    /// request (C: `rpcrdma_post_recvs(r_xprt, credits +
    /// (rb_bc_srv_max_requests << 1))`).
    pub const fn receives_needed(&self, bc_max_requests: u32) -> u32 {
        self.granted
            .saturating_add(bc_max_requests.saturating_mul(2))
    }
}
