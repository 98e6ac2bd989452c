// SPDX-License-Identifier: GPL-2.0

//! Replies checked against what their Call offered
//! ([`Header::check_reply`]): a Write list, a Reply chunk or RDMA_NOMSG that
//! was not offered, and returned chunks that are not a prefix of the
//! offered ones. Each Reply is written one XDR word per line.

use rpcrdma_proto::proto::header::*;

/// A transport header from its words.
fn words(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// Decodes `w` as a Reply and checks it against `offer`.
fn check(w: &[u32], offer: &Offer<'_>) -> Result<ReplyKind, ReplyError> {
    let buf = words(w);
    let (h, _) = decode(&buf, &DecodeLimits::REPLY).expect("decodes");
    h.check_reply(offer)
}

const XID: u32 = 0x0bad_cafe;

/// The page data's segments of the offered Write chunk: 4096 + 1001 bytes,
/// an odd length, so a pad segment follows them.
const DATA: [Segment; 2] = [
    Segment {
        handle: 0x1001,
        length: 4096,
        offset: 0x10_0000,
    },
    Segment {
        handle: 0x1002,
        length: 1001,
        offset: 0x20_0000,
    },
];
const PAD: Segment = Segment {
    handle: 0x2000,
    length: 4,
    offset: 0x30_0000,
};
const WRITE: Offer<'static> = Offer::WriteChunk {
    data: &DATA,
    pad: Some(PAD),
};
const WRITE_NO_PAD: Offer<'static> = Offer::WriteChunk {
    data: &DATA,
    pad: None,
};

/// The offered Reply chunk: 1024 + 8192 bytes.
const REPLY: [Segment; 2] = [
    Segment {
        handle: 0x3001,
        length: 1024,
        offset: 0x40_0000,
    },
    Segment {
        handle: 0x3002,
        length: 8192,
        offset: 0x50_0000,
    },
];
const REPLY_CHUNK: Offer<'static> = Offer::ReplyChunk(&REPLY);

/// RDMA_MSG with a Write list of one chunk of three segments (the two
/// data segments and the pad's, with these lengths), no Reply chunk.
fn msg_write(a: u32, b: u32, pad: u32) -> Vec<u32> {
    vec![
        XID, 1, 32, 0, // xid, vers, credit, RDMA_MSG
        0, // Read list: empty
        1, 3, // Write list: a chunk of 3 segments
        0x1001, a, 0, 0x10_0000, // handle, length, offset (hi, lo)
        0x1002, b, 0, 0x20_0000, //
        0x2000, pad, 0, 0x30_0000, //
        0,         // end of the Write list
        0,         // no Reply chunk
    ]
}

#[test]
fn write_chunk_filled_in_order() {
    // All the data, no pad written (RFC 8166, section 3.4.6.2).
    assert_eq!(
        check(&msg_write(4096, 1001, 0), &WRITE),
        Ok(ReplyKind::Inline {
            write_chunk_len: 5097
        })
    );
    // The pad written anyway: not counted as data.
    assert_eq!(
        check(&msg_write(4096, 1001, 3), &WRITE),
        Ok(ReplyKind::Inline {
            write_chunk_len: 5097
        })
    );
    // A short read, the Linux server's way: every segment returned, the
    // ones after the data with length zero.
    assert_eq!(
        check(&msg_write(100, 0, 0), &WRITE),
        Ok(ReplyKind::Inline {
            write_chunk_len: 100
        })
    );
    // Fewer segments than offered: a prefix.
    let w = [
        XID, 1, 32, 0, // RDMA_MSG
        0, // Read list: empty
        1, 2, // a chunk of 2 segments
        0x1001, 4096, 0, 0x10_0000, //
        0x1002, 500, 0, 0x20_0000, //
        0,         // end of the Write list
        0,         // no Reply chunk
    ];
    assert_eq!(
        check(&w, &WRITE),
        Ok(ReplyKind::Inline {
            write_chunk_len: 4596
        })
    );
    // The chunk returned unused, with no segments.
    let w = [
        XID, 1, 32, 0, // RDMA_MSG
        0, // Read list: empty
        1, 0, // a chunk of no segments
        0, // end of the Write list
        0, // no Reply chunk
    ];
    assert_eq!(
        check(&w, &WRITE),
        Ok(ReplyKind::Inline { write_chunk_len: 0 })
    );
    // An offered Write chunk need not come back.
    let w = [XID, 1, 32, 0, 0, 0, 0];
    assert_eq!(
        check(&w, &WRITE),
        Ok(ReplyKind::Inline { write_chunk_len: 0 })
    );
}

#[test]
fn write_list_not_offered() {
    // A Write list for a Call that offered no Write chunk, whatever it
    // says: the pages were never registered, so nothing was written there.
    let w = [
        XID, 1, 32, 0, // RDMA_MSG
        0, // Read list: empty
        1, 1, // a chunk of 1 segment
        0x1001, 4096, 0, 0x10_0000, //
        0,         // end of the Write list
        0,         // no Reply chunk
    ];
    assert_eq!(
        check(&w, &Offer::Inline),
        Err(ReplyError::WriteListNotOffered)
    );
    assert_eq!(
        check(&w, &REPLY_CHUNK),
        Err(ReplyError::WriteListNotOffered)
    );
    // Even empty.
    let w = [XID, 1, 32, 0, 0, 1, 0, 0, 0];
    assert_eq!(
        check(&w, &Offer::Inline),
        Err(ReplyError::WriteListNotOffered)
    );
    assert_eq!(
        ReplyError::WriteListNotOffered.describe(),
        "Write list but no Write chunk offered"
    );
}

#[test]
fn more_write_chunks_than_offered() {
    let w = [
        XID, 1, 32, 0, // RDMA_MSG
        0, // Read list: empty
        1, 1, // chunk 1: 1 segment
        0x1001, 4096, 0, 0x10_0000, //
        1, 1, // chunk 2: 1 segment
        0x1002, 1001, 0, 0x20_0000, //
        0,         // end of the Write list
        0,         // no Reply chunk
    ];
    // A Reply decoder refuses it outright.
    assert_eq!(
        decode(&words(&w), &DecodeLimits::REPLY).map(|_| ()),
        Err(DecodeError::TooManyWriteChunks)
    );
    // Decoded with room for it, it has more chunks than offered.
    let buf = words(&w);
    let (h, _) = decode(&buf, &DecodeLimits::PERMISSIVE).unwrap();
    assert_eq!(h.check_reply(&WRITE), Err(ReplyError::TooManyWriteChunks));
    assert_eq!(
        h.check_reply(&Offer::Inline),
        Err(ReplyError::WriteListNotOffered)
    );
}

#[test]
fn write_chunk_segments_not_offered() {
    let mismatch = Err(ReplyError::WriteChunkMismatch);
    // One segment more than offered.
    let w = [
        XID, 1, 32, 0, // RDMA_MSG
        0, // Read list: empty
        1, 4, // a chunk of 4 segments
        0x1001, 4096, 0, 0x10_0000, //
        0x1002, 1001, 0, 0x20_0000, //
        0x2000, 0, 0, 0x30_0000, //
        0x2001, 0, 0, 0x30_0000, //
        0,         // end of the Write list
        0,         // no Reply chunk
    ];
    assert_eq!(check(&w, &WRITE), mismatch);
    // The pad segment where none was offered.
    assert_eq!(check(&msg_write(4096, 1001, 0), &WRITE_NO_PAD), mismatch);
    // Another handle.
    let mut w = msg_write(4096, 1001, 0);
    w[11] = 0x1003;
    assert_eq!(check(&w, &WRITE), mismatch);
    // Another offset: its low word, then its high word.
    let mut w = msg_write(4096, 1001, 0);
    w[10] = 0x10_0004;
    assert_eq!(check(&w, &WRITE), mismatch);
    let mut w = msg_write(4096, 1001, 0);
    w[13] = 1;
    assert_eq!(check(&w, &WRITE), mismatch);
    // Written after a segment left short: the gap is not data.
    assert_eq!(check(&msg_write(100, 10, 0), &WRITE), mismatch);
    assert_eq!(check(&msg_write(4096, 1000, 1), &WRITE), mismatch);
    assert_eq!(
        ReplyError::WriteChunkMismatch.describe(),
        "Write chunk segments differ from those offered"
    );
}

#[test]
fn write_chunk_segment_longer_than_offered() {
    let long = Err(ReplyError::WriteChunkTooLong);
    assert_eq!(check(&msg_write(4097, 1001, 0), &WRITE), long);
    assert_eq!(check(&msg_write(4096, 1002, 0), &WRITE), long);
    assert_eq!(check(&msg_write(4096, 1001, 5), &WRITE), long);
    // The same wording as the check of the whole chunk's length.
    assert_eq!(
        ReplyError::WriteChunkTooLong.describe(),
        "Write chunk longer than offered"
    );
}

/// RDMA_NOMSG with the Reply in a two-segment Reply chunk.
fn nomsg(a: u32, b: u32) -> Vec<u32> {
    vec![
        XID, 1, 32, 1, // xid, vers, credit, RDMA_NOMSG
        0, // Read list: empty
        0, // Write list: empty
        1, 2, // Reply chunk: 2 segments
        0x3001, a, 0, 0x40_0000, //
        0x3002, b, 0, 0x50_0000, //
    ]
}

#[test]
fn long_reply_in_offered_reply_chunk() {
    assert_eq!(
        check(&nomsg(1024, 8192), &REPLY_CHUNK),
        Ok(ReplyKind::Long {
            reply_chunk_len: 9216
        })
    );
    assert_eq!(
        check(&nomsg(1024, 4), &REPLY_CHUNK),
        Ok(ReplyKind::Long {
            reply_chunk_len: 1028
        })
    );
    // RDMA_MSG with the offered Reply chunk returned unused.
    let w = [
        XID, 1, 32, 0, // RDMA_MSG
        0, 0, // Read list, Write list: empty
        1, 1, // Reply chunk: 1 segment
        0x3001, 0, 0, 0x40_0000, //
    ];
    assert_eq!(
        check(&w, &REPLY_CHUNK),
        Ok(ReplyKind::Inline { write_chunk_len: 0 })
    );
}

#[test]
fn nomsg_without_offered_reply_chunk() {
    let not_offered = Err(ReplyError::NoMsgNotOffered);
    assert_eq!(check(&nomsg(1024, 8192), &Offer::Inline), not_offered);
    assert_eq!(check(&nomsg(1024, 8192), &WRITE), not_offered);
    // With no Reply chunk at all.
    let w = [XID, 1, 32, 1, 0, 0, 0];
    assert_eq!(check(&w, &Offer::Inline), not_offered);
    assert_eq!(
        ReplyError::NoMsgNotOffered.describe(),
        "RDMA_NOMSG reply but no Reply chunk offered"
    );
}

#[test]
fn reply_chunk_not_offered() {
    let w = [
        XID, 1, 32, 0, // RDMA_MSG
        0, 0, // Read list, Write list: empty
        1, 1, // Reply chunk: 1 segment, unused
        0x3001, 0, 0, 0x40_0000, //
    ];
    assert_eq!(
        check(&w, &Offer::Inline),
        Err(ReplyError::ReplyChunkNotOffered)
    );
    assert_eq!(check(&w, &WRITE), Err(ReplyError::ReplyChunkNotOffered));
    assert_eq!(
        ReplyError::ReplyChunkNotOffered.describe(),
        "Reply chunk but none offered"
    );
}

#[test]
fn reply_chunk_segments_not_offered() {
    let mismatch = Err(ReplyError::ReplyChunkMismatch);
    let mut w = nomsg(1024, 8192);
    w[8] = 0x3003;
    assert_eq!(check(&w, &REPLY_CHUNK), mismatch);
    let mut w = nomsg(1024, 8192);
    w[15] = 0x50_1000;
    assert_eq!(check(&w, &REPLY_CHUNK), mismatch);
    // Written after a short segment.
    assert_eq!(check(&nomsg(1000, 8192), &REPLY_CHUNK), mismatch);
    // More segments than offered.
    let one = [REPLY[0]];
    assert_eq!(check(&nomsg(1024, 0), &Offer::ReplyChunk(&one)), mismatch);
    assert_eq!(
        ReplyError::ReplyChunkMismatch.describe(),
        "Reply chunk segments differ from those offered"
    );
}

#[test]
fn reply_chunk_segment_longer_than_offered() {
    let long = Err(ReplyError::ReplyChunkTooLong);
    assert_eq!(check(&nomsg(1025, 0), &REPLY_CHUNK), long);
    assert_eq!(check(&nomsg(1024, 8193), &REPLY_CHUNK), long);
    assert_eq!(
        ReplyError::ReplyChunkTooLong.describe(),
        "Reply chunk longer than offered"
    );
}

#[test]
fn earlier_checks_still_apply() {
    // RDMA_ERROR is what it says, whatever was offered.
    let w = [XID, 1, 32, 4, 2];
    assert_eq!(
        check(&w, &Offer::Inline),
        Ok(ReplyKind::Error(RdmaError::Chunk))
    );
    // RDMA_NOMSG writing the Write chunk as well (offered both ways).
    let w = [
        XID, 1, 32, 1, // RDMA_NOMSG
        0, // Read list: empty
        1, 1, // a Write chunk of 1 segment
        0x1001, 8, 0, 0x10_0000, //
        0,         // end of the Write list
        1, 1, // Reply chunk: 1 segment
        0x3001, 1024, 0, 0x40_0000, //
    ];
    let seg = [DATA[0]];
    let both_ways = Offer::WriteChunk {
        data: &seg,
        pad: None,
    };
    assert_eq!(check(&w, &both_ways), Err(ReplyError::NoMsgNotOffered));
    assert_eq!(
        check(&w, &REPLY_CHUNK),
        Err(ReplyError::WriteListNotOffered)
    );
    // RDMA_MSG using the offered Reply chunk.
    let w = [
        XID, 1, 32, 0, // RDMA_MSG
        0, 0, // Read list, Write list: empty
        1, 1, // Reply chunk: 1 segment
        0x3001, 16, 0, 0x40_0000, //
    ];
    assert_eq!(
        check(&w, &REPLY_CHUNK),
        Err(ReplyError::ReplyChunkUsedWithMsg)
    );
    assert_eq!(
        ReplyError::ReplyChunkUsedWithMsg.describe(),
        "malformed reply chunk lists"
    );
}

#[test]
fn largest_write_chunk_with_pad_round_trips() {
    // The transport's largest Write chunk: MAX_HDR_SEGS data segments, the
    // pad's after them (as `marshal` chains it), counted on the wire.
    let data: Vec<Segment> = (0..rpcrdma_proto::proto::MAX_HDR_SEGS)
        .map(|i| Segment {
            handle: 0x1000 + i,
            length: if i == 0 { 4093 } else { 4096 },
            offset: u64::from(i) << 20,
        })
        .collect();
    let offered = data.iter().copied().chain(Some(PAD));
    let mut out = [0u8; 512];
    let n = encode_chunked(
        &mut out,
        XID,
        32,
        MsgProc::Msg,
        core::iter::empty(),
        core::iter::once(offered.clone()),
        None::<core::iter::Empty<Segment>>,
    )
    .expect("fits");
    // The server echoes every offered segment: the Reply's limits take
    // them, and only the data segments count as placed.
    let (h, len) = decode(&out[..n], &DecodeLimits::REPLY).expect("within the limits");
    assert_eq!(len, n);
    let chunk = h.chunk_lists().unwrap().write_list.first().unwrap();
    assert_eq!(chunk.len(), data.len() + 1);
    let offer = Offer::WriteChunk {
        data: &data,
        pad: Some(PAD),
    };
    let placed: u64 = data.iter().map(|s| u64::from(s.length)).sum();
    assert_eq!(
        h.check_reply(&offer),
        Ok(ReplyKind::Inline {
            write_chunk_len: placed
        })
    );
    // Without the pad offered, the same echo is refused.
    let no_pad = Offer::WriteChunk {
        data: &data,
        pad: None,
    };
    assert_eq!(h.check_reply(&no_pad), Err(ReplyError::WriteChunkMismatch));
}
