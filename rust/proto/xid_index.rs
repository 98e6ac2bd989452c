// SPDX-License-Identifier: GPL-2.0

//! A map from XID to a small number (the slot of an RPC's record), in a
//! table the caller owns: open addressing with linear probing, removal
//! by backward shift (no tombstones), at most half full.
//!
//! An entry is `(slot + 1) << 32 | xid`, 0 when empty. The table's length
//! is a power of two ([`table_len`]), at least twice the slots it maps,
//! so a probe always ends at an empty entry; every entry sits between its
//! XID's home and the first empty entry after it. Each XID is mapped at
//! most once. A miss where an XID is mapped would lose track of an RPC's
//! memory regions: `tests/xid_index.rs` checks this against a model.

/// The table length for `slots` slots: the power of two at least twice
/// as large (and at least 2), or `None` if there is none.
pub fn table_len(slots: usize) -> Option<usize> {
    slots
        .checked_mul(2)
        .and_then(usize::checked_next_power_of_two)
        .map(|n| n.max(2))
}

/// Where `xid`'s probe starts in a table of `len` entries (a power of
/// two): the top bits of a multiplicative hash, which all of the XID's
/// bits reach (sunrpc counts XIDs up, in either byte order).
fn home(len: usize, xid: u32) -> usize {
    let h = (xid ^ (xid >> 16)).wrapping_mul(0x9e37_79b1);
    let bits = len.trailing_zeros().min(32);
    let top = h.checked_shr(32u32.saturating_sub(bits)).unwrap_or(0);
    // With 32 bits the shift is 0 and `top` is the whole hash.
    usize::try_from(top).unwrap_or(0) & len.wrapping_sub(1)
}

fn next(len: usize, i: usize) -> usize {
    i.wrapping_add(1) & len.wrapping_sub(1)
}

fn entry_xid(e: u64) -> u32 {
    // The low 32 bits.
    (e & 0xffff_ffff) as u32
}

/// The position of `xid`'s entry.
fn position(table: &[u64], xid: u32) -> Option<usize> {
    let len = table.len();
    let mut i = home(len, xid);
    for _ in 0..len {
        let e = *table.get(i)?;
        if e == 0 {
            return None;
        }
        if entry_xid(e) == xid {
            return Some(i);
        }
        i = next(len, i);
    }
    None
}

/// The slot `xid` is mapped to.
pub fn find(table: &[u64], xid: u32) -> Option<usize> {
    let e = *table.get(position(table, xid)?)?;
    usize::try_from((e >> 32).checked_sub(1)?).ok()
}

/// Maps `xid` to `slot`, replacing what it was mapped to; false, and
/// nothing changes, if the slot cannot be stored or the table is full.
pub fn insert(table: &mut [u64], xid: u32, slot: usize) -> bool {
    let Some(entry) = u64::try_from(slot)
        .ok()
        .and_then(|s| s.checked_add(1))
        .filter(|&s| s <= u64::from(u32::MAX))
        .map(|s| s << 32 | u64::from(xid))
    else {
        return false;
    };
    let len = table.len();
    let mut i = home(len, xid);
    for _ in 0..len {
        let Some(e) = table.get_mut(i) else {
            return false;
        };
        if *e == 0 || entry_xid(*e) == xid {
            *e = entry;
            return true;
        }
        i = next(len, i);
    }
    false
}

/// Unmaps `xid`, if it is mapped. The entries after it move back into
/// the hole where their probe would otherwise stop early.
pub fn remove(table: &mut [u64], xid: u32) {
    let Some(mut hole) = position(table, xid) else {
        return;
    };
    let len = table.len();
    let mask = len.wrapping_sub(1);
    let mut j = hole;
    for _ in 0..len {
        j = next(len, j);
        let e = table.get(j).copied().unwrap_or(0);
        if e == 0 {
            break;
        }
        // The entry at `j` may fill the hole unless its home lies after
        // the hole (cyclically), up to `j`.
        let from_home = j.wrapping_sub(home(len, entry_xid(e))) & mask;
        let from_hole = j.wrapping_sub(hole) & mask;
        if from_home >= from_hole {
            if let Some(h) = table.get_mut(hole) {
                *h = e;
            }
            hole = j;
        }
    }
    if let Some(h) = table.get_mut(hole) {
        *h = 0;
    }
}
