// SPDX-License-Identifier: GPL-2.0

//! Micro-benchmark of the per-slot state: the XID index
//! (`rust/proto/xid_index.rs`) in the steady state of a full slot table,
//! and the credit grant's sanitising (`rust/proto/credits.rs`). Timing:
//! `common/mod.rs`.

mod common;

use common::Bench;
use rpcrdma_proto::proto::credits::Credits;
use rpcrdma_proto::proto::xid_index::{find, insert, remove, table_len};
use std::hint::black_box;

/// The XID the transport sees for sunrpc's `n`th: sunrpc counts `rq_xid`
/// up in CPU order and stores it as a big-endian word, which the
/// transport reads back with `be32_to_cpu` (a byte swap on x86).
fn xid(n: u32) -> u32 {
    n.swap_bytes()
}

/// One RPC's turn through a table of `slots` slots, all in flight: the
/// oldest RPC's Reply is looked up (`find`), its record released
/// (`remove`), and its slot reused for the next Call (`insert`).
fn xid_cycle(b: &Bench, slots: usize) {
    let len = table_len(slots).expect("table_len");
    let mut table = vec![0u64; len];
    let slots32 = u32::try_from(slots).expect("slots");
    let first: u32 = 0x6b8b_4567;
    for i in 0..slots32 {
        assert!(insert(&mut table, xid(first.wrapping_add(i)), i as usize));
    }
    // `next` is the next XID to insert; the oldest mapped is `next - slots`.
    let mut next = first.wrapping_add(slots32);
    let mut slot = 0usize;
    b.run(
        &format!("xid_index: find+remove+insert, {slots} slots, full"),
        || {
            let old = xid(next.wrapping_sub(slots32));
            let found = find(black_box(&table), black_box(old));
            remove(black_box(&mut table), old);
            let ok = insert(black_box(&mut table), xid(next), slot);
            next = next.wrapping_add(1);
            slot = if slot + 1 == slots { 0 } else { slot + 1 };
            (found, ok)
        },
    );
    // Every slot still mapped once, to the slot the cycle gave it.
    for i in 0..slots32 {
        let n = next.wrapping_sub(slots32).wrapping_add(i);
        let expect = (slot + i as usize) % slots;
        assert_eq!(find(&table, xid(n)), Some(expect), "xid {n:#x}");
    }
}

fn main() {
    let b = Bench::new("per-slot state (rust/proto/xid_index.rs, rust/proto/credits.rs)");
    b.note("XIDs count up as sunrpc's do, seen byte-swapped (be32_to_cpu on x86)");
    xid_cycle(&b, 128);
    xid_cycle(&b, 1024);

    // The grants a Linux server sends (its credit limit, below what was
    // asked), with now and then a zero and an over-grant: every branch.
    let max_requests = 128;
    let grants = [64u32, 64, 64, 0, 64, 64, 200, 64];
    let mut i = 0usize;
    b.run("credits: Credits::sanitize", || {
        i = (i + 1) & 7;
        Credits::sanitize(black_box(grants[i]), black_box(max_requests))
    });
    let mut credits = Credits::new(max_requests);
    b.run("credits: Credits::update", || {
        i = (i + 1) & 7;
        black_box(&mut credits).update(black_box(grants[i]))
    });
}
