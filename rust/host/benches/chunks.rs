// SPDX-License-Identifier: GPL-2.0

//! Micro-benchmark of the chunk planner: one `plan` per RPC, with the
//! layouts and thresholds the transport gives it (`rust/xprt/marshal.rs`
//! `prepare`, `call_layout`, `reply_layout`; `rust/xprt/verbs.rs` for the
//! thresholds), for typical NFSv3 RPCs. Timing: `common/mod.rs`.

mod common;

use common::Bench;
use rpcrdma_proto::proto::chunks::{
    plan, plan_call, plan_reply, CallLayout, CallPlan, Plan, PlanError, ReplyLayout, ReplyPlan,
    Thresholds,
};
use std::hint::black_box;

/// What the transport reads of a plan (`rust/xprt/marshal.rs`): which
/// lists the header has, the inline part, the Read chunk.
type Digest = ((bool, bool, bool), u32, Option<(u32, u32)>);

/// Reads a plan's [`Digest`]: reading fields rather than handing the
/// whole `Plan` to `black_box` keeps the copy into `black_box`'s argument
/// out of the timing.
fn digest(p: Result<Plan, PlanError>) -> Option<Digest> {
    p.ok()
        .map(|p| (p.lists(), p.call.inline_len(), p.call.read_chunk()))
}

/// `MAX_DATA_PAGES` of the module (include/rpcrdma_rs_helpers.h).
const MAX_DATA_PAGES: u32 = 256;
/// `MAX_SEGS` of the module (include/rpcrdma_rs_helpers.h).
const MAX_SEGS: u32 = 16;
/// Pages one FRWR region maps on soft-RoCE (rxe): its `max_sge_rd`.
const RXE_DEPTH: u32 = 32;

/// The connection's thresholds as `rust/xprt/verbs.rs` sets them once
/// connected: negotiated inline thresholds of 4096 each way (what a Linux
/// server advertises), `max_segs` from the device's region depth, no Send
/// SGE limit (the Call is copied into one Send buffer), 4 KiB pages.
fn thresholds() -> Thresholds {
    let max_segs = (MAX_DATA_PAGES.div_ceil(RXE_DEPTH) + 2).min(MAX_SEGS);
    Thresholds::new(4096, 4096, max_segs, u32::MAX, 4096)
}

/// One RPC: its `rq_snd_buf` and `rq_rcv_buf` as `call_layout` and
/// `reply_layout` fill them (NFSv3, AUTH_UNIX, 36-byte file handles).
struct Rpc {
    name: &'static str,
    call: CallLayout,
    reply: ReplyLayout,
    /// What the planner must decide, so that the case times that path.
    lists: (bool, bool, bool),
}

fn rpcs() -> [Rpc; 5] {
    let read_reply = |len: u32| ReplyLayout {
        // xdr_inline_pages: RPC and READ result header in the head, the
        // data in the pages, the rest of the head buffer as the tail.
        buflen: 116 + len + 100,
        head_len: 116,
        page_len: len,
        tail_len: 100,
        ddp_read: true,
    };
    let small_reply = |len: u32| ReplyLayout {
        buflen: len,
        head_len: len,
        ..Default::default()
    };
    let head_only = |len: u32| CallLayout {
        head_len: len,
        ..Default::default()
    };
    [
        Rpc {
            name: "plan: 4 KiB READ (Write chunk)",
            call: head_only(140),
            reply: read_reply(4096),
            lists: (false, true, false),
        },
        Rpc {
            name: "plan: 4 KiB WRITE (Read chunk)",
            call: CallLayout {
                head_len: 164,
                page_base: 0,
                page_len: 4096,
                tail_len: 0,
                ddp_write: true,
            },
            reply: small_reply(300),
            lists: (true, false, false),
        },
        Rpc {
            name: "plan: GETATTR (inline both ways)",
            call: head_only(136),
            reply: small_reply(248),
            lists: (false, false, false),
        },
        Rpc {
            name: "plan: 1 MiB READ (Write chunk)",
            call: head_only(140),
            reply: read_reply(1 << 20),
            lists: (false, true, false),
        },
        Rpc {
            // SYMLINK with a 4000-byte target: nothing DDP-eligible.
            name: "plan: long Call (RDMA_NOMSG, SYMLINK 4000 B)",
            call: head_only(4200),
            reply: small_reply(400),
            lists: (true, false, false),
        },
    ]
}

fn main() {
    let b = Bench::new("chunk planner (rust/proto/chunks.rs)");
    let t = thresholds();
    b.note(&format!(
        "thresholds: inline 4096/4096 -> max_inline_send {}, max_inline_recv {}",
        t.max_inline_send, t.max_inline_recv
    ));
    let rpcs = rpcs();
    for rpc in &rpcs {
        let p = plan(&rpc.call, &rpc.reply, true, &t).expect("plan");
        assert_eq!(p.lists(), rpc.lists, "{}", rpc.name);
        b.run(rpc.name, || {
            digest(plan(
                black_box(&rpc.call),
                black_box(&rpc.reply),
                black_box(true),
                black_box(&t),
            ))
        });
    }
    assert!(matches!(
        plan(&rpcs[4].call, &rpcs[4].reply, true, &t).map(|p| p.call),
        Ok(CallPlan::LongCall { .. })
    ));

    // Each half on its own, for the 4 KiB cases.
    let read = &rpcs[0];
    assert!(matches!(
        plan_reply(&read.reply, true, &t),
        Ok(ReplyPlan::WriteChunk(_))
    ));
    b.run("plan_reply: 4 KiB READ (Write chunk)", || {
        plan_reply(black_box(&read.reply), black_box(true), black_box(&t))
            .ok()
            .map(|r| matches!(r, ReplyPlan::WriteChunk(w) if w.pad_segment))
    });
    let write = &rpcs[1];
    assert!(matches!(
        plan_call(&write.call, true, &t),
        Ok(CallPlan::ReadChunk(_))
    ));
    b.run("plan_call: 4 KiB WRITE (Read chunk)", || {
        plan_call(black_box(&write.call), black_box(true), black_box(&t))
            .ok()
            .map(|c| (c.inline_len(), c.read_chunk()))
    });

    // Once per connection, after the inline thresholds are negotiated.
    b.run("Thresholds::new", || {
        let t = Thresholds::new(
            black_box(4096),
            black_box(4096),
            black_box(10),
            black_box(u32::MAX),
            black_box(4096),
        );
        (t.max_inline_send, t.max_inline_recv)
    });
}
