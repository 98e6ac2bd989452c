// SPDX-License-Identifier: GPL-2.0

//! Any bytes into the transport header decoder: it must never panic, and
//! whatever it accepts must re-encode to exactly the bytes it read.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rpcrdma_proto::proto::header::{decode, DecodeLimits};

const UNLIMITED: DecodeLimits = DecodeLimits {
    max_read_segments: u32::MAX,
    max_write_chunks: u32::MAX,
    max_segments_per_chunk: u32::MAX,
    max_reply_segments: u32::MAX,
};

fuzz_target!(|data: &[u8]| {
    for limits in [DecodeLimits::REPLY, DecodeLimits::PERMISSIVE, UNLIMITED] {
        let Ok((h, len)) = decode(data, &limits) else {
            continue;
        };
        assert!(len <= data.len());
        let mut out = vec![0u8; len];
        let n = h.encode(&mut out).expect("re-encode of a decoded header");
        assert_eq!(n, len);
        assert_eq!(&out[..], &data[..len]);
        let _ = h.classify_reply();
        if let Some(c) = h.chunk_lists() {
            assert!(c.read_list.len() <= limits.max_read_segments as usize);
            let in_chunks: usize = c.read_list.chunks().map(|ch| ch.len()).sum();
            assert_eq!(in_chunks, c.read_list.len());
            for ch in c.read_list.chunks() {
                assert!(!ch.is_empty());
                assert_eq!(ch.position() % 4, 0);
                assert!(ch.segments().all(|s| s.position == ch.position()));
            }
            assert_eq!(c.write_list.iter().count(), c.write_list.len());
            let mut total = 0u64;
            for w in c.write_list.iter() {
                assert!(w.len() <= limits.max_segments_per_chunk as usize);
                assert!(w.iter().all(|s| s.is_valid()));
                total = total.saturating_add(w.total_length());
            }
            // Added up while decoding, it is what walking the list gives.
            assert_eq!(c.write_list.total_length(), total);
            if let Some(r) = c.reply_chunk {
                assert!(r.len() <= limits.max_reply_segments as usize);
                assert_eq!(r.iter().count(), r.len());
            }
        }
    }
});
