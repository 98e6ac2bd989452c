// SPDX-License-Identifier: GPL-2.0

//! Transport header codec: hand-worked vectors and every malformed-input
//! error (RFC 8166, section 4).

mod common;

use common::*;
use rpcrdma_proto::proto::header::*;

const P: DecodeLimits = DecodeLimits::PERMISSIVE;

fn reencode(h: &Header<'_>) -> Vec<u8> {
    let mut out = vec![0u8; 4096];
    let n = h.encode(&mut out).expect("re-encode");
    out.truncate(n);
    out
}

#[test]
fn inline_reply() {
    let buf = msg_inline_reply();
    let (h, len) = decode(&buf, &DecodeLimits::REPLY).unwrap();
    assert_eq!(len, MSG_INLINE_REPLY_HDR_LEN);
    assert_eq!(h.xid, 0x6a1f0c42);
    assert_eq!(h.credit, 128);
    let Body::Msg(c) = h.body else {
        panic!("not RDMA_MSG")
    };
    assert!(c.read_list.is_empty());
    assert!(c.write_list.is_empty());
    assert!(c.reply_chunk.is_none());
    // The RPC Reply starts right after the header, with the same XID.
    assert_eq!(&buf[len..len + 4], &0x6a1f0c42u32.to_be_bytes());
    assert_eq!(
        h.classify_reply(),
        Ok(ReplyKind::Inline { write_chunk_len: 0 })
    );
    assert_eq!(reencode(&h), buf[..len]);
}

#[test]
fn write_chunk_reply() {
    let buf = msg_write_chunk_reply();
    let (h, len) = decode(&buf, &DecodeLimits::REPLY).unwrap();
    assert_eq!(len, MSG_WRITE_CHUNK_REPLY_HDR_LEN);
    assert_eq!(h.credit, 32);
    let c = h.chunk_lists().unwrap();
    assert_eq!(c.write_list.len(), 1);
    let chunk = c.write_list.first().unwrap();
    let segs: Vec<Segment> = chunk.iter().collect();
    assert_eq!(
        segs,
        vec![
            Segment {
                handle: 0xabcd,
                length: 4096,
                offset: 0x1_0000_2000
            },
            Segment {
                handle: 0xabce,
                length: 3584,
                offset: 0x1_0000_3000
            },
        ]
    );
    assert_eq!(chunk.total_length(), 7680);
    assert_eq!(
        h.classify_reply(),
        Ok(ReplyKind::Inline {
            write_chunk_len: 7680
        })
    );
    assert_eq!(buf.len() - len, 11 * 4);
    assert_eq!(reencode(&h), buf[..len]);
}

#[test]
fn nomsg_long_reply() {
    let buf = nomsg_reply_chunk();
    let (h, len) = decode(&buf, &DecodeLimits::REPLY).unwrap();
    assert_eq!(len, buf.len());
    assert!(matches!(h.body, Body::NoMsg(_)));
    let rc = h.chunk_lists().unwrap().reply_chunk.unwrap();
    assert_eq!(rc.len(), 2);
    assert_eq!(rc.iter().nth(1).unwrap().offset, 0xffff_8880_1234_6000);
    assert_eq!(
        h.classify_reply(),
        Ok(ReplyKind::Long {
            reply_chunk_len: 4096 + 564
        })
    );
    assert_eq!(reencode(&h), buf);
}

#[test]
fn errors() {
    let buf = error_vers();
    let (h, len) = decode(&buf, &DecodeLimits::REPLY).unwrap();
    assert_eq!(len, ERR_VERS_HEADER_LEN);
    assert_eq!(h.body, Body::Error(RdmaError::Vers { low: 1, high: 1 }));
    assert_eq!(
        h.classify_reply(),
        Ok(ReplyKind::Error(RdmaError::Vers { low: 1, high: 1 }))
    );
    assert_eq!(reencode(&h), buf);

    let buf = error_chunk();
    let (h, len) = decode(&buf, &DecodeLimits::REPLY).unwrap();
    assert_eq!(len, ERR_CHUNK_HEADER_LEN);
    assert_eq!(h.body, Body::Error(RdmaError::Chunk));
    assert_eq!(h.credit, 64);
    assert_eq!(reencode(&h), buf);

    let mut out = [0u8; 28];
    assert_eq!(
        encode_error(&mut out, 0x11223344, 1, RdmaError::Vers { low: 1, high: 1 }),
        Ok(28)
    );
    assert_eq!(out[..], error_vers()[..]);
    assert_eq!(
        encode_error(&mut out[..27], 1, 1, RdmaError::Vers { low: 1, high: 1 }),
        Err(EncodeError::NoSpace)
    );
}

#[test]
fn call_with_read_chunk() {
    let buf = call_read_chunk();
    let (h, len) = decode(&buf, &P).unwrap();
    assert_eq!(len, CALL_READ_CHUNK_HDR_LEN);
    let c = h.chunk_lists().unwrap();
    assert_eq!(c.read_list.len(), 2);
    let chunks: Vec<ReadChunk<'_>> = c.read_list.chunks().collect();
    assert_eq!(chunks.len(), 1, "same position: one chunk");
    assert_eq!(chunks[0].position(), 140);
    assert_eq!(chunks[0].len(), 2);
    assert_eq!(chunks[0].total_length(), 1 << 20);
    // A Call is not a valid Reply.
    assert_eq!(h.classify_reply(), Err(ReplyError::ReadListPresent));
    // ...and the Reply limits refuse its Read list outright.
    assert_eq!(
        decode(&buf, &DecodeLimits::REPLY),
        Err(DecodeError::TooManyReadSegments)
    );
    assert_eq!(reencode(&h), buf[..len]);

    // Encoding the same header from slices gives the same bytes.
    let reads = [
        ReadSegment {
            position: 140,
            segment: Segment {
                handle: 0x101,
                length: 0xff000,
                offset: 0x7f00_1000,
            },
        },
        ReadSegment {
            position: 140,
            segment: Segment {
                handle: 0x102,
                length: 0x1000,
                offset: 0x8000_0000,
            },
        },
    ];
    let m = Message {
        xid: 0xa0a0a0a0,
        credit: 128,
        proc: MsgProc::Msg,
        read_list: &reads,
        write_list: &[],
        reply_chunk: None,
    };
    let mut out = [0u8; 128];
    assert_eq!(m.encoded_len(), Some(len));
    assert_eq!(m.encode(&mut out), Ok(len));
    assert_eq!(out[..len], buf[..len]);
}

#[test]
fn long_call() {
    let buf = call_long();
    let (h, len) = decode(&buf, &P).unwrap();
    assert_eq!(len, buf.len());
    let c = h.chunk_lists().unwrap();
    let rs: Vec<ReadSegment> = c.read_list.iter().collect();
    assert_eq!(rs.len(), 1);
    assert_eq!(rs[0].position, 0);
    assert_eq!(rs[0].segment.length, 5120);
    assert_eq!(c.reply_chunk.unwrap().total_length(), 8192);
    assert_eq!(reencode(&h), buf);
}

#[test]
fn read_chunks_split_on_position_change() {
    let seg = |h| Segment {
        handle: h,
        length: 8,
        offset: 0,
    };
    let reads = [
        ReadSegment {
            position: 0,
            segment: seg(1),
        },
        ReadSegment {
            position: 0,
            segment: seg(2),
        },
        ReadSegment {
            position: 64,
            segment: seg(3),
        },
        ReadSegment {
            position: 0,
            segment: seg(4),
        },
    ];
    let m = Message {
        xid: 1,
        credit: 1,
        proc: MsgProc::NoMsg,
        read_list: &reads,
        write_list: &[],
        reply_chunk: None,
    };
    let mut out = [0u8; 256];
    let n = m.encode(&mut out).unwrap();
    let (h, _) = decode(&out[..n], &P).unwrap();
    let chunks: Vec<(u32, usize)> = h
        .chunk_lists()
        .unwrap()
        .read_list
        .chunks()
        .map(|c| (c.position(), c.len()))
        .collect();
    assert_eq!(chunks, vec![(0, 2), (64, 1), (0, 1)]);
}

#[test]
fn empty_and_multiple_write_chunks() {
    let a = [Segment {
        handle: 7,
        length: 100,
        offset: 0x1000,
    }];
    let writes: [&[Segment]; 3] = [&a, &[], &a];
    let m = Message {
        xid: 9,
        credit: 3,
        proc: MsgProc::Msg,
        read_list: &[],
        write_list: &writes,
        reply_chunk: Some(&[]),
    };
    let mut out = [0u8; 256];
    let n = m.encode(&mut out).unwrap();
    assert_eq!(Some(n), m.encoded_len());
    let (h, len) = decode(&out[..n], &P).unwrap();
    assert_eq!(len, n);
    let c = h.chunk_lists().unwrap();
    let lens: Vec<usize> = c.write_list.iter().map(|w| w.len()).collect();
    assert_eq!(lens, vec![1, 0, 1]);
    // The list's total, added while decoding, is its chunks' sum.
    assert_eq!(c.write_list.total_length(), 200);
    let summed: u64 = c.write_list.iter().map(|w| w.total_length()).sum();
    assert_eq!(c.write_list.total_length(), summed);
    assert!(c.reply_chunk.unwrap().is_empty());
    assert_eq!(reencode(&h), out[..n]);
    // The Reply limits allow one Write chunk only, as the C client does.
    assert_eq!(
        decode(&out[..n], &DecodeLimits::REPLY),
        Err(DecodeError::TooManyWriteChunks)
    );
}

#[test]
fn truncated_everywhere() {
    for buf in [
        msg_write_chunk_reply(),
        nomsg_reply_chunk(),
        error_vers(),
        error_chunk(),
        call_read_chunk(),
        call_long(),
    ] {
        let (_, len) = decode(&buf, &P).unwrap();
        for cut in 0..len {
            assert_eq!(
                decode(&buf[..cut], &P),
                Err(DecodeError::Truncated),
                "cut at {cut}"
            );
        }
    }
}

/// RFC 8166 section 7: an ERR_VERS decodes whatever its rdma_vers (the
/// Linux server answers a version 2 call in version 2), and re-encodes
/// as it came; any other header of another version is refused.
#[test]
fn err_vers_in_any_version() {
    let mut buf = [0u8; 28];
    let n = encode_error(
        &mut buf,
        0x5253_0002,
        64,
        RdmaError::Vers { low: 1, high: 1 },
    )
    .unwrap();
    assert_eq!(n, 28);
    buf[4..8].copy_from_slice(&2u32.to_be_bytes());
    let (h, len) = decode(&buf, &P).expect("ERR_VERS in version 2");
    assert_eq!((h.vers, h.xid, h.credit, len), (2, 0x5253_0002, 64, 28));
    assert_eq!(h.body, Body::Error(RdmaError::Vers { low: 1, high: 1 }));
    let mut out = [0u8; 28];
    assert_eq!(h.encode(&mut out), Ok(28));
    assert_eq!(out, buf);
    // One word more is refused, as in version 1.
    let mut long = [0u8; 32];
    long[..28].copy_from_slice(&buf);
    assert_eq!(decode(&long, &P), Err(DecodeError::TrailingBytes));
    // ERR_CHUNK has no such place: a version 2 one is a bad version.
    let mut chunk = [0u8; 20];
    encode_error(&mut chunk, 1, 1, RdmaError::Chunk).unwrap();
    chunk[4..8].copy_from_slice(&2u32.to_be_bytes());
    assert_eq!(decode(&chunk, &P), Err(DecodeError::BadVersion(2)));
}

#[test]
fn bad_version_and_procs() {
    let mut buf = msg_inline_reply();
    buf[4..8].copy_from_slice(&2u32.to_be_bytes());
    assert_eq!(decode(&buf, &P), Err(DecodeError::BadVersion(2)));
    buf[4..8].copy_from_slice(&0u32.to_be_bytes());
    assert_eq!(decode(&buf, &P), Err(DecodeError::BadVersion(0)));

    let mut buf = msg_inline_reply();
    for (proc, err) in [
        (2, DecodeError::MsgpNotSupported),
        (3, DecodeError::DoneNotSupported),
        (5, DecodeError::UnknownProc(5)),
        (0xffff_ffff, DecodeError::UnknownProc(0xffff_ffff)),
    ] {
        buf[12..16].copy_from_slice(&u32::to_be_bytes(proc));
        assert_eq!(decode(&buf, &P), Err(err));
    }
}

#[test]
fn bad_discriminators() {
    // Read list, Write list, Reply chunk discriminators of an empty header.
    for word in [4, 5, 6] {
        let mut buf = msg_inline_reply();
        buf[word * 4..word * 4 + 4].copy_from_slice(&2u32.to_be_bytes());
        assert_eq!(decode(&buf, &P), Err(DecodeError::BadDiscriminator(2)));
    }
    // The Write list terminator after a chunk.
    let mut buf = msg_write_chunk_reply();
    buf[15 * 4..16 * 4].copy_from_slice(&0x8000_0000u32.to_be_bytes());
    assert_eq!(
        decode(&buf, &P),
        Err(DecodeError::BadDiscriminator(0x8000_0000))
    );
    // The second Read list entry's discriminator.
    let mut buf = call_read_chunk();
    buf[10 * 4..11 * 4].copy_from_slice(&0xffu32.to_be_bytes());
    assert_eq!(decode(&buf, &P), Err(DecodeError::BadDiscriminator(0xff)));
}

#[test]
fn limits() {
    let l = DecodeLimits {
        max_read_segments: 1,
        max_write_chunks: 1,
        max_segments_per_chunk: 1,
        max_reply_segments: 1,
    };
    assert_eq!(
        decode(&call_read_chunk(), &l),
        Err(DecodeError::TooManyReadSegments)
    );
    assert_eq!(
        decode(&msg_write_chunk_reply(), &l),
        Err(DecodeError::TooManySegments)
    );
    assert_eq!(
        decode(&nomsg_reply_chunk(), &l),
        Err(DecodeError::TooManyReplySegments)
    );
    // A hostile count is refused before anything is read.
    let mut buf = nomsg_reply_chunk();
    buf[7 * 4..8 * 4].copy_from_slice(&u32::MAX.to_be_bytes());
    assert_eq!(decode(&buf, &P), Err(DecodeError::TooManyReplySegments));
    let big = DecodeLimits {
        max_reply_segments: u32::MAX,
        ..P
    };
    assert_eq!(decode(&buf, &big), Err(DecodeError::Truncated));
}

#[test]
fn segment_overflow() {
    // Reply chunk seg 1: offset 0xffffffff_fffffe00 + length 0x234 wraps.
    let mut buf = nomsg_reply_chunk();
    buf[14 * 4..16 * 4].copy_from_slice(&0xffff_ffff_ffff_fe00u64.to_be_bytes());
    assert_eq!(decode(&buf, &P), Err(DecodeError::SegmentOverflow));
    // Ending exactly at u64::MAX is fine: 0xffff...fdcb + 0x234 = u64::MAX.
    buf[14 * 4..16 * 4].copy_from_slice(&(u64::MAX - 0x234).to_be_bytes());
    assert!(decode(&buf, &P).is_ok());
    let bad = Segment {
        handle: 0,
        length: 1,
        offset: u64::MAX,
    };
    let m = Message {
        xid: 0,
        credit: 0,
        proc: MsgProc::Msg,
        read_list: &[],
        write_list: &[],
        reply_chunk: Some(&[bad]),
    };
    assert_eq!(m.encode(&mut [0u8; 64]), Err(EncodeError::SegmentOverflow));
}

#[test]
fn misaligned_position() {
    let mut buf = call_read_chunk();
    buf[5 * 4..6 * 4].copy_from_slice(&0x8du32.to_be_bytes());
    assert_eq!(decode(&buf, &P), Err(DecodeError::MisalignedPosition(0x8d)));
    let reads = [ReadSegment {
        position: 2,
        segment: Segment::default(),
    }];
    let m = Message {
        xid: 0,
        credit: 0,
        proc: MsgProc::Msg,
        read_list: &reads,
        write_list: &[],
        reply_chunk: None,
    };
    assert_eq!(
        m.encode(&mut [0u8; 64]),
        Err(EncodeError::MisalignedPosition(2))
    );
}

#[test]
fn trailing_bytes() {
    for mut buf in [nomsg_reply_chunk(), error_vers(), error_chunk()] {
        buf.push(0);
        assert_eq!(decode(&buf, &P), Err(DecodeError::TrailingBytes));
        buf.extend_from_slice(&[0, 0, 0]);
        assert_eq!(decode(&buf, &P), Err(DecodeError::TrailingBytes));
    }
    // RDMA_MSG: whatever follows is the RPC message, even a partial word.
    let mut buf = msg_inline_reply();
    buf.push(0xaa);
    assert_eq!(decode(&buf, &P).unwrap().1, MSG_INLINE_REPLY_HDR_LEN);
}

#[test]
fn unknown_error_code() {
    let mut buf = error_chunk();
    buf[16..20].copy_from_slice(&3u32.to_be_bytes());
    assert_eq!(decode(&buf, &P), Err(DecodeError::UnknownErrorCode(3)));
    buf[16..20].copy_from_slice(&0u32.to_be_bytes());
    assert_eq!(decode(&buf, &P), Err(DecodeError::UnknownErrorCode(0)));
}

#[test]
fn reply_checks() {
    // RDMA_MSG whose Reply chunk carries data: C's rpcrdma_decode_msg
    // refuses it.
    let seg = [Segment {
        handle: 1,
        length: 4,
        offset: 0,
    }];
    let mut out = [0u8; 128];
    let mut m = Message {
        xid: 0,
        credit: 1,
        proc: MsgProc::Msg,
        read_list: &[],
        write_list: &[],
        reply_chunk: Some(&seg),
    };
    let n = m.encode(&mut out).unwrap();
    let (h, _) = decode(&out[..n], &DecodeLimits::REPLY).unwrap();
    assert_eq!(h.classify_reply(), Err(ReplyError::ReplyChunkUsedWithMsg));

    // An unused Reply chunk (length zero) with RDMA_MSG is fine.
    let unused = [Segment {
        handle: 1,
        length: 0,
        offset: 0,
    }];
    m.reply_chunk = Some(&unused);
    let n = m.encode(&mut out).unwrap();
    let (h, _) = decode(&out[..n], &DecodeLimits::REPLY).unwrap();
    assert_eq!(
        h.classify_reply(),
        Ok(ReplyKind::Inline { write_chunk_len: 0 })
    );

    // RDMA_NOMSG with an empty Reply chunk, or with Write chunk data.
    m.proc = MsgProc::NoMsg;
    let n = m.encode(&mut out).unwrap();
    let (h, _) = decode(&out[..n], &DecodeLimits::REPLY).unwrap();
    assert_eq!(h.classify_reply(), Err(ReplyError::EmptyReplyChunk));
    m.reply_chunk = None;
    let n = m.encode(&mut out).unwrap();
    let (h, _) = decode(&out[..n], &DecodeLimits::REPLY).unwrap();
    assert_eq!(h.classify_reply(), Err(ReplyError::EmptyReplyChunk));
    let w: [&[Segment]; 1] = [&seg];
    m.write_list = &w;
    m.reply_chunk = Some(&seg);
    let n = m.encode(&mut out).unwrap();
    let (h, _) = decode(&out[..n], &DecodeLimits::REPLY).unwrap();
    assert_eq!(h.classify_reply(), Err(ReplyError::WriteListUsedWithNoMsg));
}

#[test]
fn encode_no_space_anywhere() {
    let buf = call_long();
    let (h, len) = decode(&buf, &P).unwrap();
    for room in 0..len {
        let mut out = vec![0u8; room];
        assert_eq!(h.encode(&mut out), Err(EncodeError::NoSpace), "room {room}");
    }
}

#[test]
fn encode_from_iterators() {
    // The transport can feed segments straight from its MR list.
    let mrs = [(0x11u32, 4096u32, 0x1000u64), (0x12, 4096, 0x2000)];
    let mut out = [0u8; 128];
    let n = encode_chunked(
        &mut out,
        0xc0c0c0c0,
        128,
        MsgProc::Msg,
        core::iter::empty(),
        core::iter::once(mrs.iter().map(|&(handle, length, offset)| Segment {
            handle,
            length,
            offset,
        })),
        None::<core::iter::Empty<Segment>>,
    )
    .unwrap();
    let (h, len) = decode(&out[..n], &DecodeLimits::REPLY).unwrap();
    assert_eq!(len, n);
    assert_eq!(
        h.chunk_lists().unwrap().write_list.first().unwrap().len(),
        2
    );
}

#[test]
fn c_client_read_call_vector() {
    let buf = call_write_chunk();
    let (h, len) = decode(&buf, &P).unwrap();
    assert_eq!(len, 13 * 4);
    let w = h.chunk_lists().unwrap().write_list.first().unwrap();
    assert_eq!(w.total_length(), 1 << 20);
    assert_eq!(reencode(&h), buf[..len]);
}
