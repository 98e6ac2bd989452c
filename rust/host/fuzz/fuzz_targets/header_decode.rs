// SPDX-License-Identifier: GPL-2.0

//! Any bytes into the transport header decoders, version 1 and version 2:
//! neither may panic, and whatever one accepts must re-encode to exactly
//! the bytes it read. The decoder of the common Reply shapes must agree
//! with the general one wherever it decodes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rpcrdma_proto::proto::header::{
    decode, decode_common_reply, Body, DecodeLimits, Offer, ReplyError, ReplyKind, Segment,
};

const UNLIMITED: DecodeLimits = DecodeLimits {
    max_read_segments: u32::MAX,
    max_write_chunks: u32::MAX,
    max_segments_per_chunk: u32::MAX,
    max_reply_segments: u32::MAX,
};

fuzz_target!(|data: &[u8]| {
    for limits in [DecodeLimits::REPLY, DecodeLimits::PERMISSIVE, UNLIMITED] {
        version_2(data, &limits);
        let general = decode(data, &limits);
        if let Some(fast) = decode_common_reply(data, &limits) {
            assert_eq!(Ok(fast), general, "the common-shape decoder differs");
        }
        let Ok((h, len)) = general else {
            continue;
        };
        assert!(len <= data.len());
        let mut out = vec![0u8; len];
        let n = h.encode(&mut out).expect("re-encode of a decoded header");
        assert_eq!(n, len);
        assert_eq!(&out[..], &data[..len]);
        let _ = h.classify_reply();
        check_against_offers(&h);
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

/// Whatever was offered, the check never panics; offered exactly the
/// chunk a Reply returns, it passes the offer checks, and it never counts
/// more data than the offered data segments hold.
fn check_against_offers(h: &rpcrdma_proto::proto::header::Header<'_>) {
    for offer in [Offer::Inline, Offer::ReplyChunk(&[])] {
        let _ = h.check_reply(&offer);
    }
    let Some(c) = h.chunk_lists() else {
        return;
    };
    let offer_errors = |r: Result<ReplyKind, ReplyError>| {
        !matches!(
            r,
            Err(ReplyError::WriteChunkMismatch
                | ReplyError::WriteChunkTooLong
                | ReplyError::ReplyChunkMismatch
                | ReplyError::ReplyChunkTooLong)
        )
    };
    if let Some(w) = c.write_list.first() {
        let segs: Vec<Segment> = w.iter().collect();
        let (data, pad) = match segs.split_last() {
            Some((last, rest)) if last.length <= 4 => (rest, Some(*last)),
            _ => (&segs[..], None),
        };
        let offer = Offer::WriteChunk { data, pad };
        let r = h.check_reply(&offer);
        assert!(offer_errors(r));
        if let Ok(ReplyKind::Inline { write_chunk_len }) = r {
            let room: u64 = data.iter().map(|s| u64::from(s.length)).sum();
            assert!(write_chunk_len <= room);
        }
    }
    if let Some(rc) = c.reply_chunk {
        let segs: Vec<Segment> = rc.iter().collect();
        let r = h.check_reply(&Offer::ReplyChunk(&segs));
        assert!(offer_errors(r));
        if matches!(h.body, Body::NoMsg(_)) && c.write_list.is_empty() {
            assert!(!matches!(r, Err(ReplyError::NoMsgNotOffered)));
        }
    }
}

/// The version 2 decoder on the same bytes: re-encoded exactly, its
/// property sets walked to their announced length, each property read.
fn version_2(data: &[u8], limits: &DecodeLimits) {
    use rpcrdma_proto::proto::header2::{decode, Body2, PropOp};
    let Ok((h, len)) = decode(data, limits) else {
        return;
    };
    assert!(len <= data.len());
    let mut out = vec![0u8; len];
    let n = h
        .encode(&mut out)
        .expect("re-encode of a decoded version 2 header");
    assert_eq!(n, len);
    assert_eq!(&out[..], &data[..len]);
    let sets = match h.body {
        Body2::Prop(PropOp::ConnProp { start, .. }, _) => vec![start],
        Body2::Prop(PropOp::ReqProp { want }, _) => vec![want],
        Body2::Prop(PropOp::ResProp { other, .. }, _) => vec![other],
        Body2::Prop(PropOp::UpdProp { now }, _) => vec![now],
        _ => vec![],
    };
    for set in sets {
        assert_eq!(set.iter().count(), set.len());
        for p in set.iter() {
            let _ = p.property();
        }
    }
}
