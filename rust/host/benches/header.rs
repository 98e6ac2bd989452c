// SPDX-License-Identifier: GPL-2.0

//! Micro-benchmark of the transport header codec: encode of the Calls the
//! transport sends (built as `rust/xprt/marshal.rs` builds them, from the
//! planner's decision and the registered segments), decode of the Replies
//! a Linux server sends back (with the transport's `DecodeLimits::REPLY`),
//! and `check_reply` of each against what its Call offered; plus the
//! first cases, a 120-byte RDMA_MSG header with a three-segment Write
//! chunk and a two-segment Reply chunk. Timing: `common/mod.rs`.

mod common;

use common::Bench;
use rpcrdma_proto::proto::chunks::{
    plan, CallLayout, CallPlan, Plan, ReplyLayout, ReplyPlan, Thresholds,
};
use rpcrdma_proto::proto::header::{
    decode, decode_common_reply, encode_chunked, Body, DecodeLimits, Header, Message, MsgProc,
    Offer, ReadSegment, ReplyError, ReplyKind, Segment,
};
use std::hint::black_box;

fn seg(handle: u32, length: u32, offset: u64) -> Segment {
    Segment {
        handle,
        length,
        offset,
    }
}

/// The transport header of a Call, encoded as `Prepared::encode` in
/// `rust/xprt/marshal.rs` does: `read` for the Read chunk, `written` for
/// the Write or Reply chunk, `pad` after a Write chunk's segments.
fn encode_call(
    out: &mut [u8],
    xid: u32,
    credit: u32,
    plan: &Plan,
    read: &[Segment],
    written: &[Segment],
    pad: Option<Segment>,
) -> usize {
    let position = match plan.call {
        CallPlan::ReadChunk(r) => r.position,
        _ => 0,
    };
    let segs = || written.iter().copied();
    let (write_chunk, reply_chunk) = match plan.reply {
        ReplyPlan::WriteChunk(_) => (Some(Iterator::chain(segs(), pad)), None),
        ReplyPlan::ReplyChunk { .. } => (None, Some(segs())),
        ReplyPlan::Inline => (None, None),
    };
    encode_chunked(
        out,
        xid,
        credit,
        plan.call.proc(),
        read.iter()
            .map(|&segment| ReadSegment { position, segment }),
        write_chunk,
        reply_chunk,
    )
    .unwrap_or(0)
}

/// A Linux server's Reply header, followed by `rpc_len` bytes of RPC
/// Reply when it is RDMA_MSG: the bytes of one received Send.
fn reply_wire(msg: &Message<'_>, rpc_len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; 512];
    let len = msg.encode(&mut buf).expect("encode reply");
    buf.truncate(len);
    if msg.proc == MsgProc::Msg {
        buf.resize(len + rpc_len, 0);
    }
    buf
}

/// The bytes a checked Reply says were written, as the transport reads
/// them: reading the field rather than handing the whole result to
/// `black_box` keeps that copy out of the timing.
fn placed(r: Result<ReplyKind, ReplyError>) -> Option<u64> {
    match r {
        Ok(ReplyKind::Inline { write_chunk_len }) => Some(write_chunk_len),
        Ok(ReplyKind::Long { reply_chunk_len }) => Some(reply_chunk_len),
        Ok(ReplyKind::Error(_)) | Err(_) => None,
    }
}

fn decoded(wire: &[u8]) -> Header<'_> {
    decode(wire, &DecodeLimits::REPLY).expect("decode reply").0
}

/// The first cases (their names kept): one header with a three-segment
/// Write chunk (two data segments and the pad) and a two-segment Reply
/// chunk, through `Message::encode`, `decode` with permissive limits,
/// `decode` and a walk over every segment, and `Header::encode`.
fn message_cases(b: &Bench) {
    let write_chunk = [
        seg(0x0101, 0x8_0000, 0xc0c0_c0c0_0000_0000),
        seg(0x0102, 0x8_0000, 0xc0c0_c0c0_0008_0000),
        seg(0x0103, 4, 0x0000_0000_0000_1000),
    ];
    let writes: [&[Segment]; 1] = [&write_chunk];
    let reply = [
        seg(0x0201, 0x1000, 0xc0c0_c0c0_0010_0000),
        seg(0x0202, 0x0200, 0xc0c0_c0c0_0010_1000),
    ];
    let msg = Message {
        xid: 0xc0c0_c0c0,
        credit: 128,
        proc: MsgProc::Msg,
        read_list: &[],
        write_list: &writes,
        reply_chunk: Some(&reply),
    };
    let mut buf = [0u8; 256];
    let len = msg.encode(&mut buf).expect("encode");
    let wire = buf[..len].to_vec();
    b.note(&format!(
        "header: RDMA_MSG, Write chunk of 3 segments, Reply chunk of 2: {len} bytes"
    ));

    let mut xid = 0u32;
    b.run("encode (Message::encode)", || {
        xid = xid.wrapping_add(1);
        let m = Message {
            xid: black_box(xid),
            ..msg
        };
        m.encode(black_box(&mut buf)).ok()
    });

    let limits = DecodeLimits::PERMISSIVE;
    b.run("decode (validate, zero-copy view)", || {
        decode(black_box(&wire), black_box(&limits))
            .ok()
            .map(|(_, n)| n)
    });

    b.run("decode + walk every segment", || {
        let mut sum = 0u64;
        if let Ok((h, _)) = decode(black_box(&wire), black_box(&limits)) {
            if let Body::Msg(c) = h.body {
                for w in c.write_list.iter() {
                    for s in w.iter() {
                        sum = sum.wrapping_add(u64::from(s.length) ^ s.offset);
                    }
                }
                if let Some(r) = c.reply_chunk {
                    for s in r.iter() {
                        sum = sum.wrapping_add(u64::from(s.handle));
                    }
                }
            }
        }
        sum
    });

    b.run("decode + re-encode (Header::encode)", || {
        decode(black_box(&wire), black_box(&limits))
            .ok()
            .and_then(|(h, _)| h.encode(black_box(&mut buf)).ok())
    });
}

/// Calls as the transport encodes them, and the Replies a Linux server
/// sends for them.
fn transport_cases(b: &Bench) {
    // Thresholds only decide the plans' shapes here (see benches/chunks.rs).
    let t = Thresholds::new(4096, 4096, 10, u32::MAX, 4096);
    let credit = 128;
    let getattr = plan(
        &CallLayout {
            head_len: 136,
            ..Default::default()
        },
        &ReplyLayout {
            buflen: 248,
            head_len: 248,
            ..Default::default()
        },
        true,
        &t,
    )
    .expect("plan GETATTR");
    let read = plan(
        &CallLayout {
            head_len: 140,
            ..Default::default()
        },
        &ReplyLayout {
            buflen: 116 + 4096 + 100,
            head_len: 116,
            page_len: 4096,
            tail_len: 100,
            ddp_read: true,
        },
        true,
        &t,
    )
    .expect("plan READ");
    let write = plan(
        &CallLayout {
            head_len: 164,
            page_len: 4096,
            ddp_write: true,
            ..Default::default()
        },
        &ReplyLayout {
            buflen: 300,
            head_len: 300,
            ..Default::default()
        },
        true,
        &t,
    )
    .expect("plan WRITE");
    assert_eq!(getattr.lists(), (false, false, false));
    assert_eq!(read.lists(), (false, true, false));
    assert_eq!(write.lists(), (true, false, false));

    // One region each, as FRWR registers a 4 KiB page.
    let data = [seg(0x0004_2a07, 4096, 0xffff_8881_0a3c_2000)];
    let reply_seg = [seg(0x0004_2b07, 8192, 0xffff_8881_0a3d_0000)];
    let mut out = [0u8; 1024];
    b.note("Calls encoded as rust/xprt/marshal.rs encodes them (encode_chunked)");
    let mut xid = 0x1f2e_3d4cu32;
    b.run("encode Call, no chunks (GETATTR)", || {
        xid = xid.wrapping_add(1);
        encode_call(
            black_box(&mut out),
            black_box(xid),
            credit,
            black_box(&getattr),
            &[],
            &[],
            None,
        )
    });
    b.run("encode Call, Write chunk of 1 segment (4 KiB READ)", || {
        xid = xid.wrapping_add(1);
        encode_call(
            black_box(&mut out),
            black_box(xid),
            credit,
            black_box(&read),
            &[],
            black_box(&data),
            None,
        )
    });
    b.run("encode Call, Read chunk of 1 segment (4 KiB WRITE)", || {
        xid = xid.wrapping_add(1);
        encode_call(
            black_box(&mut out),
            black_box(xid),
            credit,
            black_box(&write),
            black_box(&data),
            &[],
            None,
        )
    });

    // The Replies: the Write list returns the segment with the bytes
    // written; the Reply chunk 1200 bytes of a READDIR-like Reply.
    let written = [seg(data[0].handle, 4096, data[0].offset)];
    let written_list: [&[Segment]; 1] = [&written];
    let reply_used = [seg(reply_seg[0].handle, 1200, reply_seg[0].offset)];
    let inline = reply_wire(
        &Message {
            xid,
            credit: 64,
            proc: MsgProc::Msg,
            read_list: &[],
            write_list: &[],
            reply_chunk: None,
        },
        112,
    );
    let with_write = reply_wire(
        &Message {
            xid,
            credit: 64,
            proc: MsgProc::Msg,
            read_list: &[],
            write_list: &written_list,
            reply_chunk: None,
        },
        116,
    );
    let long = reply_wire(
        &Message {
            xid,
            credit: 64,
            proc: MsgProc::NoMsg,
            read_list: &[],
            write_list: &[],
            reply_chunk: Some(&reply_used),
        },
        0,
    );
    b.note("Replies decoded with DecodeLimits::REPLY, as the transport does");
    let limits = DecodeLimits::REPLY;
    b.run("decode Reply, no chunks", || {
        decode(black_box(&inline), black_box(&limits))
            .ok()
            .map(|(_, n)| n)
    });
    b.run("decode Reply, Write list of 1 segment", || {
        decode(black_box(&with_write), black_box(&limits))
            .ok()
            .map(|(_, n)| n)
    });
    b.run(
        "decode Reply, RDMA_NOMSG with Reply chunk of 1 segment",
        || {
            decode(black_box(&long), black_box(&limits))
                .ok()
                .map(|(_, n)| n)
        },
    );
    b.note("The same Replies through decode_common_reply, which the transport tries first");
    for (name, wire) in [
        ("decode_common_reply, no chunks", &inline),
        ("decode_common_reply, Write list of 1 segment", &with_write),
        (
            "decode_common_reply, RDMA_NOMSG with Reply chunk of 1 segment",
            &long,
        ),
    ] {
        assert_eq!(
            decode_common_reply(wire, &limits),
            decode(wire, &limits).ok()
        );
        b.run(name, || {
            decode_common_reply(black_box(wire), black_box(&limits)).map(|(_, n)| n)
        });
    }

    let offer_inline = Offer::Inline;
    let offer_write = Offer::WriteChunk {
        data: &data,
        pad: None,
    };
    let offer_reply = Offer::ReplyChunk(&reply_seg);
    let (h_inline, h_write, h_long) = (decoded(&inline), decoded(&with_write), decoded(&long));
    for (h, offer) in [
        (&h_inline, &offer_inline),
        (&h_write, &offer_write),
        (&h_long, &offer_reply),
    ] {
        h.check_reply(offer).expect("the Reply matches its offer");
    }
    b.run("check_reply, no chunks vs Offer::Inline", || {
        placed(black_box(&h_inline).check_reply(black_box(&offer_inline)))
    });
    b.run("check_reply, Write list vs Offer::WriteChunk", || {
        placed(black_box(&h_write).check_reply(black_box(&offer_write)))
    });
    b.run("check_reply, Reply chunk vs Offer::ReplyChunk", || {
        placed(black_box(&h_long).check_reply(black_box(&offer_reply)))
    });
}

fn main() {
    let b = Bench::new("header codec (rust/proto/header.rs)");
    message_cases(&b);
    transport_cases(&b);
}
