// SPDX-License-Identifier: GPL-2.0

//! The XID index against a model (a map): after any sequence of inserts
//! and removes, every mapped XID is found at its slot and no other XID is
//! found. A miss would let `buf_free` return while an RPC's memory
//! regions are registered, so the sequences include what stresses linear
//! probing: XIDs counted up in either byte order, clusters that wrap past
//! the end of the table, removals from the middle of a cluster, the table
//! half full, XID 0 and slot 0.

use proptest::prelude::*;
use rpcrdma_proto::proto::xid_index::{find, insert, remove, table_len};
use std::collections::HashMap;

/// Applies `ops` (true: insert the next XID into a free slot; false:
/// remove the mapped XID at this position of the model) and checks the
/// table against the model after each.
fn run(slots: usize, start: u32, swap: bool, ops: &[(bool, usize)]) {
    let len = table_len(slots).unwrap();
    assert!(len.is_power_of_two() && len >= 2 * slots.max(1));
    let mut table = vec![0u64; len];
    let mut model: HashMap<u32, usize> = HashMap::new();
    let mut free: Vec<usize> = (0..slots).rev().collect();
    let mut counter = start;
    for &(add, pick) in ops {
        if add && !free.is_empty() {
            let xid = if swap { counter.swap_bytes() } else { counter };
            counter = counter.wrapping_add(1);
            if model.contains_key(&xid) {
                continue;
            }
            let slot = free.remove(pick % free.len());
            assert!(insert(&mut table, xid, slot));
            model.insert(xid, slot);
        } else if !model.is_empty() {
            let mut keys: Vec<u32> = model.keys().copied().collect();
            keys.sort_unstable();
            let xid = keys[pick % keys.len()];
            remove(&mut table, xid);
            free.push(model.remove(&xid).unwrap());
        }
        for (&xid, &slot) in &model {
            assert_eq!(find(&table, xid), Some(slot), "xid {xid:#x}");
        }
        assert!(table.iter().filter(|&&e| e != 0).count() == model.len());
    }
    for probe in [0u32, 1, u32::MAX, counter, counter.swap_bytes()] {
        if !model.contains_key(&probe) {
            assert_eq!(find(&table, probe), None);
        }
    }
}

#[test]
fn table_sizes() {
    assert_eq!(table_len(0), Some(2));
    assert_eq!(table_len(1), Some(2));
    assert_eq!(table_len(3), Some(8));
    assert_eq!(table_len(128), Some(256));
    assert_eq!(table_len(16384), Some(32768));
    assert_eq!(table_len(usize::MAX), None);
}

#[test]
fn full_half_table_then_empty() {
    for slots in [1usize, 2, 5, 128] {
        let mut ops = vec![(true, 0usize); slots];
        ops.extend((0..slots).map(|i| (false, i * 7)));
        run(slots, 0, false, &ops);
        run(slots, u32::MAX - 3, true, &ops);
    }
}

#[test]
fn xid_zero_and_slot_zero() {
    let mut table = vec![0u64; table_len(4).unwrap()];
    assert!(insert(&mut table, 0, 0));
    assert_eq!(find(&table, 0), Some(0));
    assert!(insert(&mut table, 0, 3));
    assert_eq!(find(&table, 0), Some(3));
    remove(&mut table, 0);
    assert_eq!(find(&table, 0), None);
    assert!(table.iter().all(|&e| e == 0));
    // A slot that does not fit the entry is refused, and changes nothing.
    assert!(!insert(&mut table, 7, usize::MAX));
    assert_eq!(find(&table, 7), None);
}

#[test]
fn full_table_refuses() {
    let mut table = vec![0u64; 2];
    assert!(insert(&mut table, 1, 0));
    assert!(insert(&mut table, 2, 1));
    assert!(!insert(&mut table, 3, 0));
    assert_eq!((find(&table, 1), find(&table, 2)), (Some(0), Some(1)));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn matches_the_model(
        slots in 1usize..200,
        start in any::<u32>(),
        swap in any::<bool>(),
        ops in proptest::collection::vec((any::<bool>(), any::<usize>()), 0..600),
    ) {
        run(slots, start, swap, &ops);
    }
}
