// SPDX-License-Identifier: GPL-2.0

//! The version negotiation of the version 2 draft, section 7, from the
//! requester's side: every state against every kind of reply, a server
//! that refuses version 2 (once per server, then never asked again), one
//! that drops the version 2 Call, and a property test that no sequence
//! of replies and connection losses makes a requester offer version 2
//! again to a server that refused it, or fail an RPC over a version
//! mismatch while it negotiates.

use proptest::prelude::*;
use rpcrdma_proto::proto::version::*;

const V1: u32 = 1;
const V2: u32 = 2;

fn msg(vers: u32) -> Received {
    Received::Message { vers }
}

#[test]
fn version_1_only_requester_never_offers_2() {
    for known in [Known::Unknown, Known::Two, Known::OneOnly] {
        let n = Negotiation::start(1, known);
        assert_eq!(n.call_version(), V1);
        assert_eq!(n.settled(), Some(V1));
    }
    // Anything but 2 counts as 1.
    assert_eq!(Negotiation::start(0, Known::Unknown).call_version(), V1);
    assert_eq!(Negotiation::start(7, Known::Unknown).call_version(), V2);
}

#[test]
fn server_speaking_2() {
    let mut known = Known::Unknown;
    let mut n = Negotiation::start(2, known);
    assert_eq!((n.call_version(), n.settled()), (V2, None));
    assert_eq!(n.reply(msg(V2), &mut known), Verdict::Take);
    assert_eq!(
        (n.call_version(), n.settled(), known),
        (V2, Some(V2), Known::Two)
    );
    // Then only version 2 replies are taken.
    assert_eq!(n.reply(msg(V2), &mut known), Verdict::Take);
    assert_eq!(n.reply(msg(V1), &mut known), Verdict::Fault);
    assert_eq!(known, Known::Two);
    // A reconnect asks again (nothing else in flight: one credit).
    let n2 = Negotiation::start(2, known);
    assert_eq!((n2.call_version(), n2.settled()), (V2, None));
}

#[test]
fn server_refusing_2_in_either_layout() {
    // The Linux server answers ERR_VERS 1..1.
    let mut known = Known::Unknown;
    let mut n = Negotiation::start(2, known);
    assert_eq!(
        n.reply(Received::ErrVers { low: 1, high: 1 }, &mut known),
        Verdict::Resend
    );
    assert_eq!(
        (n.call_version(), n.settled(), known),
        (V1, Some(V1), Known::OneOnly)
    );
    assert_eq!(n.reply(msg(V1), &mut known), Verdict::Take);
    // A range that includes 2 contradicts the refusal: refused all the
    // same, and version 1 is in it.
    let mut known2 = Known::Unknown;
    let mut m = Negotiation::start(2, known2);
    assert_eq!(
        m.reply(Received::ErrVers { low: 1, high: 2 }, &mut known2),
        Verdict::Resend
    );
    assert_eq!(known2, Known::OneOnly);
    // The next connection goes straight to version 1: no loop.
    let n2 = Negotiation::start(2, known);
    assert_eq!((n2.call_version(), n2.settled()), (V1, Some(V1)));
}

#[test]
fn faults_while_probing() {
    for got in [
        // A version 1 reply to a version 2 Call (section 7.3).
        msg(V1),
        msg(3),
        // A range without version 1.
        Received::ErrVers { low: 3, high: 5 },
        Received::ErrVers { low: 2, high: 2 },
        Received::ErrVers { low: 2, high: 1 },
    ] {
        let mut known = Known::Unknown;
        let mut n = Negotiation::start(2, known);
        assert_eq!(n.reply(got, &mut known), Verdict::Fault, "{got:?}");
        assert_eq!((n.settled(), known), (None, Known::Unknown), "{got:?}");
    }
}

#[test]
fn settled_connections() {
    let mut known = Known::OneOnly;
    let mut n = Negotiation::start(2, known);
    assert_eq!(n.settled(), Some(V1));
    assert_eq!(n.reply(msg(V2), &mut known), Verdict::Fault);
    // An ERR_VERS that leaves version 1 out answers its RPC.
    assert_eq!(
        n.reply(Received::ErrVers { low: 2, high: 2 }, &mut known),
        Verdict::Take
    );
    // One that includes it cannot be meant.
    assert_eq!(
        n.reply(Received::ErrVers { low: 1, high: 2 }, &mut known),
        Verdict::Fault
    );
    assert_eq!(known, Known::OneOnly);
}

#[test]
fn lost_while_probing() {
    // Section 7.2: a lost negotiation Call counts as a refusal.
    let mut known = Known::Unknown;
    let n = Negotiation::start(2, known);
    n.lost(&mut known);
    assert_eq!(known, Known::OneOnly);
    // Lost after settling on 2: what was learnt stays.
    let mut known = Known::Unknown;
    let mut n = Negotiation::start(2, known);
    n.reply(msg(V2), &mut known);
    n.lost(&mut known);
    assert_eq!(known, Known::Two);
}

#[derive(Clone, Debug)]
enum Event {
    Reply(Received),
    Lost,
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        3 => (0u32..4).prop_map(|vers| Event::Reply(Received::Message { vers })),
        2 => (0u32..4, 0u32..4).prop_map(|(low, high)| Event::Reply(Received::ErrVers { low, high })),
        1 => Just(Event::Lost),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// Whatever the server does: once it refused version 2 no Call is
    /// offered as version 2 again; a connection never changes version
    /// once settled; a refusal resends, never fails; the version of each
    /// Call is one the requester offers.
    #[test]
    fn no_loop_no_failure(offer in 1u32..3, events in prop::collection::vec(event(), 0..40)) {
        let mut known = Known::Unknown;
        let mut n = Negotiation::start(offer, known);
        let mut refused = false;
        for e in events {
            prop_assert!(n.call_version() <= offer.max(1));
            if refused {
                prop_assert_eq!(n.call_version(), V1);
            }
            match e {
                Event::Lost => {
                    n.lost(&mut known);
                    n = Negotiation::start(offer, known);
                }
                Event::Reply(got) => {
                    let before = n.settled();
                    let verdict = n.reply(got, &mut known);
                    if let Some(v) = before {
                        prop_assert_eq!(n.settled(), Some(v));
                        prop_assert_ne!(verdict, Verdict::Resend);
                    }
                    if verdict == Verdict::Resend {
                        prop_assert_eq!(n.call_version(), V1);
                        prop_assert_eq!(known, Known::OneOnly);
                    }
                }
            }
            refused |= known == Known::OneOnly;
        }
    }
}
