// SPDX-License-Identifier: GPL-2.0

//! Any bytes as received RDMA-CM private data: the search never panics,
//! finds the first valid message, and negotiation stays within bounds.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rpcrdma_proto::proto::private_data::{find, negotiate, LocalSettings, PrivateData, LEN};

fuzz_target!(|data: &[u8]| {
    let found = find(data);
    if let Some((off, pd)) = found {
        assert_eq!(&data[off..off + LEN], &pd.to_bytes()[..]);
        // No valid message starts earlier.
        for early in 0..off {
            assert!(PrivateData::parse_at_start(&data[early..]).is_none());
        }
    } else {
        assert!((0..data.len()).all(|o| PrivateData::parse_at_start(&data[o..]).is_none()));
    }

    // Our settings come from the first bytes, so both sides vary.
    let word = |i: usize| {
        data.get(i..i + 4)
            .map_or(4096, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let ours = LocalSettings {
        send_size: word(0),
        recv_size: word(4),
        remote_invalidation: data.first().is_some_and(|b| b & 1 == 1),
    };
    let n = negotiate(&ours, Some(data));
    assert!(n.inline_send <= ours.send_size && n.inline_recv <= ours.recv_size);
    assert!(n.inline_send <= 256 * 1024 && n.inline_recv <= 256 * 1024);
    assert!(n.inline_send >= ours.send_size.min(1024));
    assert!(n.inline_recv >= ours.recv_size.min(1024));
    assert_eq!(n.peer, found.map(|f| f.1));
    if n.remote_invalidation {
        assert!(ours.remote_invalidation && found.is_some_and(|f| f.1.remote_invalidation()));
    }
});
