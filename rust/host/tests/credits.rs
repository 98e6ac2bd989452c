// SPDX-License-Identifier: GPL-2.0

//! Credit accounting (RFC 8166, section 3.3.1), as C's
//! `rpcrdma_reply_handler` and `rpcrdma_reset_cwnd` do it.

mod common;

use common::Reach;
use proptest::prelude::*;
use rpcrdma_proto::proto::credits::*;

#[test]
fn starts_at_one_credit() {
    let c = Credits::new(128);
    assert_eq!(c.requested(), 128);
    assert_eq!(c.granted(), 1);
    assert!(c.may_send(0));
    assert!(!c.may_send(1));
    assert_eq!(c.cwnd(), 1 << RPC_CWNDSHIFT);
}

#[test]
fn zero_max_requests_is_one() {
    let c = Credits::new(0);
    assert_eq!(c.requested(), 1);
}

#[test]
fn grant_of_zero_is_one() {
    let mut c = Credits::new(128);
    c.update(64);
    assert_eq!(c.update(0), (1, true));
    assert_eq!(c.granted(), 1);
}

#[test]
fn grant_above_request_is_clamped() {
    let mut c = Credits::new(128);
    assert_eq!(c.update(129), (128, true));
    assert_eq!(c.update(u32::MAX), (128, false));
    assert_eq!(c.cwnd(), 128 << 8);
}

#[test]
fn shrinking_grant_applies_at_once() {
    let mut c = Credits::new(128);
    c.update(100);
    assert_eq!(c.available(30), 70);
    assert_eq!(c.update(20), (20, true));
    // 30 already in flight: they stay, nothing new may start.
    assert_eq!(c.available(30), 0);
    assert!(!c.may_send(30));
    assert!(!c.may_send(20));
    assert!(c.may_send(19));
    assert_eq!(c.available(19), 1);
}

#[test]
fn unchanged_grant_reports_no_change() {
    let mut c = Credits::new(32);
    assert_eq!(c.update(1), (1, false));
    assert_eq!(c.update(32), (32, true));
    assert_eq!(c.update(32), (32, false));
}

#[test]
fn reset_on_reconnect() {
    let mut c = Credits::new(32);
    c.update(32);
    c.reset();
    assert_eq!(c.granted(), 1);
    assert_eq!(c.requested(), 32);
}

#[test]
fn receives_to_post() {
    let mut c = Credits::new(128);
    c.update(64);
    assert_eq!(c.receives_needed(0), 64);
    assert_eq!(c.receives_needed(2), 68);
    assert_eq!(c.receives_needed(u32::MAX), u32::MAX);
}

#[test]
fn huge_limits_do_not_overflow() {
    let mut c = Credits::new(u32::MAX);
    c.update(u32::MAX);
    assert_eq!(c.cwnd(), u64::from(u32::MAX) << 8);
    assert_eq!(c.available(0), u32::MAX);
}

#[test]
fn grant_always_in_range() {
    let reach = Reach::new("grant_always_in_range");
    proptest!(|(max in any::<u32>(), grants in prop::collection::vec(any::<u32>(), 1..32))| {
        reach.case();
        let mut c = Credits::new(max);
        let (mut as_sent, mut clamped) = (false, false);
        for g in grants {
            let (applied, _) = c.update(g);
            prop_assert!(applied >= 1 && applied <= c.requested());
            prop_assert_eq!(applied, c.granted());
            if g >= 1 && g <= c.requested() {
                prop_assert_eq!(applied, g);
                as_sent = true;
            } else {
                clamped = true;
            }
        }
        if as_sent {
            reach.hit("a grant applied as sent");
        }
        if clamped {
            reach.hit("a grant clamped");
        }
    });
    reach.report();
    reach.require("a grant applied as sent", 40);
    reach.require("a grant clamped", 40);
}
