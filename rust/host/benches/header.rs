// SPDX-License-Identifier: GPL-2.0

//! Micro-benchmark of the transport header codec: ns per encode and per
//! decode of a typical RDMA_MSG Call header with a Write chunk (two data
//! segments and the pad segment) and a Reply chunk (two segments).
//! Plain std timing, no harness: `cargo bench`. `BENCH_ITERS` sets the
//! iteration count (default 5,000,000).

use rpcrdma_proto::proto::header::{decode, Body, DecodeLimits, Message, MsgProc, Segment};
use std::hint::black_box;
use std::time::Instant;

fn seg(handle: u32, length: u32, offset: u64) -> Segment {
    Segment {
        handle,
        length,
        offset,
    }
}

fn report(what: &str, iters: u64, elapsed: std::time::Duration) {
    let ns = elapsed.as_nanos() as f64 / iters as f64;
    println!("{what:<40} {ns:>8.1} ns/op  ({iters} iterations)");
}

fn main() {
    let iters: u64 = std::env::var("BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000_000);

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
    println!("header: RDMA_MSG, Write chunk of 3 segments, Reply chunk of 2: {len} bytes");

    // Warm up caches and branch predictors.
    for _ in 0..iters / 10 {
        black_box(black_box(&msg).encode(black_box(&mut buf)).ok());
    }

    let start = Instant::now();
    for i in 0..iters {
        let m = Message {
            xid: black_box(i as u32),
            ..msg
        };
        black_box(m.encode(black_box(&mut buf)).ok());
    }
    report("encode (Message::encode)", iters, start.elapsed());

    let limits = DecodeLimits::PERMISSIVE;
    let start = Instant::now();
    for _ in 0..iters {
        black_box(decode(black_box(&wire), black_box(&limits)).ok());
    }
    report("decode (validate, zero-copy view)", iters, start.elapsed());

    let start = Instant::now();
    let mut sum = 0u64;
    for _ in 0..iters {
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
    }
    black_box(sum);
    report("decode + walk every segment", iters, start.elapsed());

    let start = Instant::now();
    for _ in 0..iters {
        if let Ok((h, _)) = decode(black_box(&wire), black_box(&limits)) {
            black_box(h.encode(black_box(&mut buf)).ok());
        }
    }
    report(
        "decode + re-encode (Header::encode)",
        iters,
        start.elapsed(),
    );
}
