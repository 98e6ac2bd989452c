// SPDX-License-Identifier: GPL-2.0

//! Which RPC-over-RDMA version a connection speaks: the negotiation of
//! the version 2 draft (draft-cel-nfsv4-rpcrdma-version-two-04, section
//! 7), from the requester's side.
//!
//! A connection starts with one credit (RFC 8166, section 3.3.1; section
//! 7 of the draft says the same), so its first Call is alone in flight.
//! A requester that offers version 2 sends that Call as version 2
//! ([`Negotiation::call_version`]) unless it knows the server speaks only
//! version 1. The first reply decides ([`Negotiation::reply`]):
//!
//! - a version 2 reply makes the connection version 2;
//! - an ERR_VERS (in either version's layout: version 1 keeps its words
//!   where version 2 has them) whose range includes 1 makes it version 1,
//!   and the Call is sent again as version 1 on the same connection: a
//!   version mismatch never fails an RPC (a range that also includes 2
//!   contradicts the refusal, and is taken at its refusal);
//! - anything else in another version than the Call's is the server's
//!   fault (section 7.3: a server replies in the version of the Call).
//!
//! What was learnt is kept per server for the transport's life
//! ([`Known`]), so that a reconnect does not negotiate again, and a
//! connection lost while its version 2 Call waited counts as the server
//! not speaking version 2 (section 7.2), so that a server that drops
//! version 2 Calls cannot make the client loop.

use super::{header2::RPCRDMA_VERSION_2, RPCRDMA_VERSION};

/// What a transport knows of its server's versions, kept from one
/// connection to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Known {
    /// Not asked yet.
    #[default]
    Unknown,
    /// It answered a version 2 Call in version 2.
    Two,
    /// It refused version 2 (ERR_VERS), or a connection was lost while
    /// its version 2 Call waited.
    OneOnly,
}

/// Where one connection's negotiation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// The first Call goes, or went, as version 2; no reply yet.
    Probing,
    /// Settled on this version.
    Settled(u32),
}

/// One connection's version, from its first Call to its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiation {
    state: State,
}

/// What a reply does to the negotiation ([`Negotiation::reply`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The reply is in the connection's version: handle it as usual.
    Take,
    /// The server refused version 2: the connection now speaks version
    /// 1, and the Call this reply answers is to be sent again, as version
    /// 1 (not failed).
    Resend,
    /// A reply in another version than the connection's, or an ERR_VERS
    /// whose range has no version the client speaks: the server's fault.
    Fault,
}

/// A received header's version, as [`Negotiation::reply`] needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received {
    /// A message of version `vers` that is not ERR_VERS.
    Message {
        /// Its `rdma_vers`.
        vers: u32,
    },
    /// An ERR_VERS (in any version's layout) with the server's range.
    ErrVers {
        /// Lowest version the server speaks.
        low: u32,
        /// Highest.
        high: u32,
    },
}

impl Negotiation {
    /// A new connection's negotiation, for a requester that offers
    /// versions up to `offer` (1 or 2; anything else counts as 1) to a
    /// server of which it knows `known`.
    pub fn start(offer: u32, known: Known) -> Self {
        let state = if offer >= RPCRDMA_VERSION_2 && known != Known::OneOnly {
            State::Probing
        } else {
            State::Settled(RPCRDMA_VERSION)
        };
        Self { state }
    }

    /// The version the next Call is sent in.
    pub fn call_version(&self) -> u32 {
        match self.state {
            State::Probing => RPCRDMA_VERSION_2,
            State::Settled(v) => v,
        }
    }

    /// The version the connection settled on, if it has.
    pub fn settled(&self) -> Option<u32> {
        match self.state {
            State::Probing => None,
            State::Settled(v) => Some(v),
        }
    }

    /// A reply arrived: what it does to the connection's version, and
    /// what the transport learns of the server (`known`, updated).
    pub fn reply(&mut self, got: Received, known: &mut Known) -> Verdict {
        match (self.state, got) {
            (State::Probing, Received::Message { vers }) if vers == RPCRDMA_VERSION_2 => {
                self.state = State::Settled(RPCRDMA_VERSION_2);
                *known = Known::Two;
                Verdict::Take
            }
            (State::Probing, Received::ErrVers { low, high })
                if low <= RPCRDMA_VERSION && RPCRDMA_VERSION <= high =>
            {
                self.state = State::Settled(RPCRDMA_VERSION);
                *known = Known::OneOnly;
                Verdict::Resend
            }
            // A reply in version 1 (or another) to the version 2 Call, or
            // a range without version 1.
            (State::Probing, _) => Verdict::Fault,
            (State::Settled(v), Received::Message { vers }) if vers == v => Verdict::Take,
            // An ERR_VERS on a settled connection answers its RPC as any
            // RDMA_ERROR does, if its range leaves the connection's
            // version out; one that includes it cannot be meant.
            (State::Settled(v), Received::ErrVers { low, high }) if v < low || v > high => {
                Verdict::Take
            }
            (State::Settled(_), _) => Verdict::Fault,
        }
    }

    /// The connection ended. If its version 2 Call was never answered,
    /// the server is taken not to speak version 2 (section 7.2), so that
    /// the next connection does not try again.
    pub fn lost(&self, known: &mut Known) {
        if self.state == State::Probing {
            *known = Known::OneOnly;
        }
    }
}
