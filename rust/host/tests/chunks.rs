// SPDX-License-Identifier: GPL-2.0

//! Chunk planning, mirroring the C client's decisions in
//! `rpcrdma_marshal_req` for typical NFS traffic.
//!
//! Thresholds are those of a 6.12 client on soft-RoCE (rxe): 4 KiB inline
//! thresholds each way (C: `RPCRDMA_DEF_INLINE`), `re_max_rdma_segs` = 11
//! (max_sge_rd 32: DIV_ROUND_UP(257, 32) + 2), 18 Send SGEs, 4 KiB pages.

use rpcrdma_proto::proto::chunks::*;
use rpcrdma_proto::proto::header::MsgProc;

const MAXSEGS: u32 = 11;

fn rxe(inline: u32) -> Thresholds {
    Thresholds::new(inline, inline, MAXSEGS, 18, 4096)
}

#[test]
fn header_sizes_match_c() {
    // rpcrdma_max_call_header_size: 7 words + maxsegs * 6 words + 6 words.
    assert_eq!(max_call_header_size(MAXSEGS), 28 + 11 * 24 + 24);
    assert_eq!(max_call_header_size(16), 436);
    // rpcrdma_max_reply_header_size: 7 words + 1 + maxsegs * 4 + 1.
    assert_eq!(max_reply_header_size(MAXSEGS), 28 + 4 + 11 * 16 + 4);
    assert_eq!(max_reply_header_size(16), 292);
    let t = rxe(4096);
    assert_eq!(t.max_inline_send, 4096 - 316);
    assert_eq!(t.max_inline_recv, 4096 - 212);
    // A header bigger than the threshold leaves no room, rather than
    // wrapping as the unsigned C subtraction would.
    let t = Thresholds::new(100, 100, 16, 18, 4096);
    assert_eq!((t.max_inline_send, t.max_inline_recv), (0, 0));
}

#[test]
fn small_getattr_inline_both_ways() {
    // NFSv3 GETATTR: RPC header + AUTH_UNIX creds + 36-byte file handle.
    let call = CallLayout {
        head_len: 136,
        ..Default::default()
    };
    let reply = ReplyLayout {
        buflen: 248,
        head_len: 248,
        ..Default::default()
    };
    let p = plan(&call, &reply, true, &rxe(4096)).unwrap();
    assert_eq!(p.call, CallPlan::Inline { len: 136 });
    assert_eq!(p.call.proc(), MsgProc::Msg);
    assert_eq!(p.reply, ReplyPlan::Inline);
    assert_eq!(p.lists(), (false, false, false));
}

#[test]
fn nfs_write_1mib_read_chunk_at_payload() {
    // NFSv3 WRITE: head holds RPC header, fh, offset, count, stable, and
    // the opaque length; the 1 MiB payload is the page list.
    let call = CallLayout {
        head_len: 164,
        page_base: 0,
        page_len: 1 << 20,
        tail_len: 0,
        ddp_write: true,
    };
    let reply = ReplyLayout {
        buflen: 300,
        head_len: 300,
        ..Default::default()
    };
    let p = plan(&call, &reply, true, &rxe(4096)).unwrap();
    assert_eq!(
        p.call,
        CallPlan::ReadChunk(ReadPlan {
            position: 164,
            chunk_len: 1 << 20,
            tail_skip: 0,
            tail_send: 0,
            inline_len: 164,
        })
    );
    assert_eq!(p.call.proc(), MsgProc::Msg);
    assert_eq!(p.call.read_chunk(), Some((164, 1 << 20)));
    assert_eq!(p.reply, ReplyPlan::Inline);
    assert_eq!(p.lists(), (true, false, false));
}

#[test]
fn nfs4_write_unaligned_payload_drops_pad() {
    // NFSv4 WRITE of 1000001 bytes: xdr_write_pages puts the 3-byte pad at
    // the start of the tail, followed by a 40-byte GETATTR op.
    let call = CallLayout {
        head_len: 232,
        page_base: 512,
        page_len: 1_000_001,
        tail_len: 43,
        ddp_write: true,
    };
    let p = plan_call(&call, true, &rxe(4096)).unwrap();
    assert_eq!(
        p,
        CallPlan::ReadChunk(ReadPlan {
            position: 232,
            chunk_len: 1_000_001, // not rounded up
            tail_skip: 3,
            tail_send: 40,
            inline_len: 272,
        })
    );
    // A tail that is only the pad is not sent at all.
    let call = CallLayout {
        tail_len: 3,
        ..call
    };
    let CallPlan::ReadChunk(r) = plan_call(&call, true, &rxe(4096)).unwrap() else {
        panic!()
    };
    assert_eq!((r.tail_skip, r.tail_send, r.inline_len), (0, 0, 232));
}

#[test]
fn large_non_ddp_call_is_long_call() {
    // NFSv3 SYMLINK with a 4000-byte target: nothing DDP-eligible.
    let call = CallLayout {
        head_len: 4200,
        ..Default::default()
    };
    let reply = ReplyLayout {
        buflen: 400,
        head_len: 400,
        ..Default::default()
    };
    let p = plan(&call, &reply, true, &rxe(4096)).unwrap();
    assert_eq!(p.call, CallPlan::LongCall { chunk_len: 4200 });
    assert_eq!(p.call.proc(), MsgProc::NoMsg);
    assert_eq!(p.call.read_chunk(), Some((0, 4200)));
    assert_eq!(p.call.inline_len(), 0);
}

#[test]
fn write_under_gss_integrity_is_long_call() {
    // krb5i/krb5p forbid direct placement (RPCAUTH_AUTH_DATATOUCH).
    let call = CallLayout {
        head_len: 200,
        page_len: 1 << 20,
        tail_len: 40,
        ddp_write: true,
        ..Default::default()
    };
    let p = plan_call(&call, false, &rxe(4096)).unwrap();
    assert_eq!(
        p,
        CallPlan::LongCall {
            chunk_len: 200 + (1 << 20) + 40
        }
    );
}

#[test]
fn nfs_read_1mib_write_chunk() {
    // NFSv3 READ: the reply's head has room for the RPC and READ result
    // header, the pages receive the data, the tail the rest of the head
    // buffer (xdr_inline_pages).
    let call = CallLayout {
        head_len: 140,
        ..Default::default()
    };
    let reply = ReplyLayout {
        buflen: 116 + (1 << 20) + 100,
        head_len: 116,
        page_len: 1 << 20,
        tail_len: 100,
        ddp_read: true,
    };
    let p = plan(&call, &reply, true, &rxe(4096)).unwrap();
    assert_eq!(p.call, CallPlan::Inline { len: 140 });
    assert_eq!(
        p.reply,
        ReplyPlan::WriteChunk(WritePlan {
            position: 116,
            len: 1 << 20,
            pad_segment: false,
        })
    );
    assert_eq!(p.lists(), (false, true, false));

    // An odd-length READ gets the C client's extra pad segment.
    let reply = ReplyLayout {
        page_len: 4097,
        buflen: 116 + 4097 + 100,
        ..reply
    };
    assert_eq!(
        plan_reply(&reply, true, &rxe(4096)).unwrap(),
        ReplyPlan::WriteChunk(WritePlan {
            position: 116,
            len: 4097,
            pad_segment: true,
        })
    );
    // Under krb5i the READ comes back in a Reply chunk instead.
    assert_eq!(
        plan_reply(&reply, false, &rxe(4096)).unwrap(),
        ReplyPlan::ReplyChunk {
            len: 116 + 4097 + 100
        }
    );
}

#[test]
fn readdir_large_reply_chunk() {
    // READDIR with 64 KiB of entries: page data, but not DDP-eligible.
    let reply = ReplyLayout {
        buflen: 120 + 65536 + 4,
        head_len: 120,
        page_len: 65536,
        tail_len: 4,
        ddp_read: false,
    };
    let call = CallLayout {
        head_len: 160,
        ..Default::default()
    };
    let p = plan(&call, &reply, true, &rxe(4096)).unwrap();
    assert_eq!(p.call, CallPlan::Inline { len: 160 });
    assert_eq!(
        p.reply,
        ReplyPlan::ReplyChunk {
            len: 120 + 65536 + 4
        }
    );
    assert_eq!(p.lists(), (false, false, true));
}

#[test]
fn inline_1024_forces_long_calls_and_reply_chunks() {
    // A peer without RFC 8797 private data: 1 KiB each way.
    let t = rxe(1024);
    assert_eq!(t.max_inline_send, 1024 - 316);
    assert_eq!(t.max_inline_recv, 1024 - 212);
    // An NFSv4 GETATTR COMPOUND of 800 bytes (big creds) no longer fits.
    let call = CallLayout {
        head_len: 800,
        ..Default::default()
    };
    // Its reply may be up to 1500 bytes: Reply chunk.
    let reply = ReplyLayout {
        buflen: 1500,
        head_len: 1500,
        ..Default::default()
    };
    let p = plan(&call, &reply, true, &t).unwrap();
    assert_eq!(p.call, CallPlan::LongCall { chunk_len: 800 });
    assert_eq!(p.reply, ReplyPlan::ReplyChunk { len: 1500 });
    assert_eq!(p.lists(), (true, false, true));
    // The same RPC with 4 KiB thresholds is inline both ways.
    let p = plan(&call, &reply, true, &rxe(4096)).unwrap();
    assert_eq!(p.call, CallPlan::Inline { len: 800 });
    assert_eq!(p.reply, ReplyPlan::Inline);
    // Exactly at the limit is still inline (C: <= for both checks).
    let call = CallLayout {
        head_len: t.max_inline_send,
        ..Default::default()
    };
    let reply = ReplyLayout {
        buflen: t.max_inline_recv,
        head_len: t.max_inline_recv,
        ..Default::default()
    };
    let p = plan(&call, &reply, true, &t).unwrap();
    assert!(matches!(p.call, CallPlan::Inline { .. }));
    assert_eq!(p.reply, ReplyPlan::Inline);
}

#[test]
fn nonpayload_check_is_strict() {
    // C: rpcrdma_nonpayload_inline uses '<': head + tail equal to the
    // threshold needs a Reply chunk.
    let t = rxe(4096);
    let reply = ReplyLayout {
        buflen: t.max_inline_recv + 8192,
        head_len: t.max_inline_recv - 100,
        page_len: 8192,
        tail_len: 100,
        ddp_read: true,
    };
    assert!(matches!(
        plan_reply(&reply, true, &t).unwrap(),
        ReplyPlan::ReplyChunk { .. }
    ));
    let reply = ReplyLayout {
        tail_len: 99,
        ..reply
    };
    assert!(matches!(
        plan_reply(&reply, true, &t).unwrap(),
        ReplyPlan::WriteChunk(_)
    ));
}

#[test]
fn send_sge_limit_forces_chunk() {
    // A 3000-byte WRITE fits the threshold, but starting 4000 bytes into a
    // page it spans 2 pages: 3 + 2 SGEs > 4 allowed.
    let t = Thresholds::new(4096, 4096, MAXSEGS, 4, 4096);
    let call = CallLayout {
        head_len: 164,
        page_base: 4000,
        page_len: 3000,
        tail_len: 0,
        ddp_write: true,
    };
    assert!(matches!(
        plan_call(&call, true, &t).unwrap(),
        CallPlan::ReadChunk(_)
    ));
    // One page fewer and it is inline.
    let call = CallLayout {
        page_base: 0,
        ..call
    };
    assert_eq!(
        plan_call(&call, true, &t).unwrap(),
        CallPlan::Inline { len: 3164 }
    );
    // Not DDP-eligible: a Long Call.
    let call = CallLayout {
        page_base: 4000,
        ddp_write: false,
        ..call
    };
    assert!(matches!(
        plan_call(&call, true, &t).unwrap(),
        CallPlan::LongCall { .. }
    ));
}

#[test]
fn oversized_non_payload_falls_back_to_long_call() {
    // Differs from C on purpose: the head alone exceeds the threshold, so a
    // Read chunk Call would overflow the peer's Receive.
    let t = rxe(1024);
    let call = CallLayout {
        head_len: 2000,
        page_len: 8192,
        ddp_write: true,
        ..Default::default()
    };
    assert_eq!(
        plan_call(&call, true, &t).unwrap(),
        CallPlan::LongCall {
            chunk_len: 2000 + 8192
        }
    );
    // Misaligned payload position: also a Long Call.
    let call = CallLayout {
        head_len: 202,
        ..call
    };
    assert!(matches!(
        plan_call(&call, true, &t).unwrap(),
        CallPlan::LongCall { .. }
    ));
}

#[test]
fn read_and_write_chunks_together() {
    // The C client can emit a Read list and a Write list together (a
    // COMPOUND with big arguments and a READ); so does the planner.
    let t = rxe(1024);
    let call = CallLayout {
        head_len: 1200,
        ..Default::default()
    };
    let reply = ReplyLayout {
        buflen: 200 + 65536,
        head_len: 200,
        page_len: 65536,
        tail_len: 0,
        ddp_read: true,
    };
    let p = plan(&call, &reply, true, &t).unwrap();
    assert_eq!(p.lists(), (true, true, false));
}

#[test]
fn bad_inputs() {
    let t = Thresholds::new(4096, 4096, MAXSEGS, 18, 0);
    let call = CallLayout {
        head_len: 100,
        page_len: 10,
        ..Default::default()
    };
    assert_eq!(plan_call(&call, true, &t), Err(PlanError::ZeroPageSize));
    let call = CallLayout {
        head_len: u32::MAX,
        page_len: 1,
        ..Default::default()
    };
    assert_eq!(plan_call(&call, true, &rxe(4096)), Err(PlanError::TooLarge));
    let reply = ReplyLayout {
        buflen: 0,
        head_len: u32::MAX,
        tail_len: 1,
        ..Default::default()
    };
    assert_eq!(
        plan_reply(&reply, true, &rxe(4096)),
        Err(PlanError::TooLarge)
    );
}
