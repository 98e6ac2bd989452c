// SPDX-License-Identifier: GPL-2.0

//! Arbitrary RPC layouts and connection limits into the chunk planner: it
//! must never panic, and every plan must respect the thresholds.
//!
//! Input: big-endian 32-bit words, missing ones read as zero:
//! call head, page_base, page_len, tail; flags (bit 0 ddp_write, bit 1
//! ddp_read, bit 2 ddp_allowed); reply buflen, head, page_len, tail;
//! inline_send, inline_recv, max_rdma_segs, max_send_sge, page_size.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rpcrdma_proto::proto::chunks::*;

fn word(data: &[u8], i: usize) -> u32 {
    let mut b = [0u8; 4];
    for (k, v) in b.iter_mut().enumerate() {
        *v = data.get(i * 4 + k).copied().unwrap_or(0);
    }
    u32::from_be_bytes(b)
}

fuzz_target!(|data: &[u8]| {
    let w = |i| word(data, i);
    let flags = w(4);
    let call = CallLayout {
        head_len: w(0),
        page_base: w(1),
        page_len: w(2),
        tail_len: w(3),
        ddp_write: flags & 1 != 0,
    };
    let reply = ReplyLayout {
        buflen: w(5),
        head_len: w(6),
        page_len: w(7),
        tail_len: w(8),
        ddp_read: flags & 2 != 0,
    };
    let ddp = flags & 4 != 0;
    let t = Thresholds::new(w(9), w(10), w(11), w(12), w(13));

    let call_total = u64::from(call.head_len) + u64::from(call.page_len) + u64::from(call.tail_len);
    let reply_total =
        u64::from(reply.head_len) + u64::from(reply.page_len) + u64::from(reply.tail_len);

    match plan(&call, &reply, ddp, &t) {
        Err(PlanError::ZeroPageSize) => assert_eq!(t.page_size, 0),
        Err(PlanError::TooLarge) => {
            assert!(call_total > u64::from(u32::MAX) || reply_total > u64::from(u32::MAX))
        }
        Ok(p) => {
            match p.call {
                CallPlan::Inline { len } => {
                    assert_eq!(u64::from(len), call_total);
                    assert!(len <= t.max_inline_send);
                    if call.page_len != 0 {
                        let off = u64::from(call.page_base % t.page_size);
                        let ps = u64::from(t.page_size);
                        let pages = (off + u64::from(call.page_len)).div_ceil(ps);
                        assert!(3 + pages <= u64::from(t.max_send_sge));
                    }
                }
                CallPlan::ReadChunk(r) => {
                    assert!(ddp && call.ddp_write);
                    assert_eq!(r.position, call.head_len);
                    assert_eq!(r.position % 4, 0);
                    assert_eq!(r.chunk_len, call.page_len);
                    assert!(r.chunk_len != 0);
                    assert_eq!(r.inline_len, call.head_len + r.tail_send);
                    assert!(r.inline_len <= t.max_inline_send);
                    if call.tail_len > 3 {
                        assert_eq!(r.tail_skip + r.tail_send, call.tail_len);
                        assert!(r.tail_skip < 4);
                    } else {
                        assert_eq!((r.tail_skip, r.tail_send), (0, 0));
                    }
                }
                CallPlan::LongCall { chunk_len } => {
                    assert_eq!(u64::from(chunk_len), call_total);
                    assert_eq!(p.call.inline_len(), 0);
                }
            }
            match p.reply {
                ReplyPlan::Inline => assert!(reply.buflen <= t.max_inline_recv),
                ReplyPlan::WriteChunk(wp) => {
                    assert!(ddp && reply.ddp_read);
                    assert!(reply.buflen > t.max_inline_recv);
                    assert!(
                        u64::from(reply.head_len) + u64::from(reply.tail_len)
                            < u64::from(t.max_inline_recv)
                    );
                    assert_eq!(wp.len, reply.page_len);
                    assert!(wp.len != 0);
                    assert_eq!(wp.pad_segment, wp.len % 4 != 0);
                }
                ReplyPlan::ReplyChunk { len } => {
                    assert!(reply.buflen > t.max_inline_recv);
                    assert_eq!(u64::from(len), reply_total);
                }
            }
            let (_, write, reply_chunk) = p.lists();
            assert!(!(write && reply_chunk));
        }
    }
});
