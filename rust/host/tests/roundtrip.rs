// SPDX-License-Identifier: GPL-2.0

//! Property tests: encode then decode gives back the same header; decode
//! then encode gives back the same bytes; no input makes decode panic.

use proptest::prelude::*;
use rpcrdma_proto::proto::header::*;

fn segment() -> impl Strategy<Value = Segment> {
    (any::<u32>(), any::<u32>(), any::<u64>()).prop_map(|(handle, length, offset)| Segment {
        handle,
        length,
        // Keep offset + length from wrapping: the codec refuses that.
        offset: offset.min(u64::MAX - u64::from(length)),
    })
}

fn read_segment() -> impl Strategy<Value = ReadSegment> {
    (any::<u32>(), segment()).prop_map(|(p, segment)| ReadSegment {
        position: p & !3,
        segment,
    })
}

#[derive(Debug, Clone)]
enum Owned {
    Chunked {
        xid: u32,
        credit: u32,
        proc: MsgProc,
        reads: Vec<ReadSegment>,
        writes: Vec<Vec<Segment>>,
        reply: Option<Vec<Segment>>,
    },
    Error {
        xid: u32,
        credit: u32,
        err: RdmaError,
    },
}

fn owned() -> impl Strategy<Value = Owned> {
    let chunked = (
        any::<u32>(),
        any::<u32>(),
        any::<bool>(),
        prop::collection::vec(read_segment(), 0..8),
        prop::collection::vec(prop::collection::vec(segment(), 0..6), 0..4),
        prop::option::of(prop::collection::vec(segment(), 0..6)),
    )
        .prop_map(
            |(xid, credit, nomsg, reads, writes, reply)| Owned::Chunked {
                xid,
                credit,
                proc: if nomsg { MsgProc::NoMsg } else { MsgProc::Msg },
                reads,
                writes,
                reply,
            },
        );
    let error = (
        any::<u32>(),
        any::<u32>(),
        prop_oneof![
            Just(RdmaError::Chunk),
            (any::<u32>(), any::<u32>()).prop_map(|(low, high)| RdmaError::Vers { low, high }),
        ],
    )
        .prop_map(|(xid, credit, err)| Owned::Error { xid, credit, err });
    prop_oneof![4 => chunked, 1 => error]
}

const L: DecodeLimits = DecodeLimits::PERMISSIVE;

fn encode_owned(o: &Owned) -> Vec<u8> {
    let mut out = vec![0u8; 4096];
    let n = match o {
        Owned::Chunked {
            xid,
            credit,
            proc,
            reads,
            writes,
            reply,
        } => {
            let wrefs: Vec<&[Segment]> = writes.iter().map(|w| w.as_slice()).collect();
            Message {
                xid: *xid,
                credit: *credit,
                proc: *proc,
                read_list: reads,
                write_list: &wrefs,
                reply_chunk: reply.as_deref(),
            }
            .encode(&mut out)
            .unwrap()
        }
        Owned::Error { xid, credit, err } => encode_error(&mut out, *xid, *credit, *err).unwrap(),
    };
    out.truncate(n);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn encode_then_decode(o in owned(), payload in prop::collection::vec(any::<u8>(), 0..16)) {
        let mut out = vec![0u8; 4096];
        match &o {
            Owned::Chunked { xid, credit, proc, reads, writes, reply } => {
                let wrefs: Vec<&[Segment]> = writes.iter().map(|w| w.as_slice()).collect();
                let m = Message {
                    xid: *xid,
                    credit: *credit,
                    proc: *proc,
                    read_list: reads,
                    write_list: &wrefs,
                    reply_chunk: reply.as_deref(),
                };
                let n = m.encode(&mut out).unwrap();
                prop_assert_eq!(Some(n), m.encoded_len());
                // Only RDMA_MSG may carry an RPC message after the header.
                let mut wire = out[..n].to_vec();
                if *proc == MsgProc::Msg {
                    wire.extend_from_slice(&payload);
                }
                let (h, len) = decode(&wire, &L).unwrap();
                prop_assert_eq!(len, n);
                prop_assert_eq!(h.xid, *xid);
                prop_assert_eq!(h.credit, *credit);
                let c = h.chunk_lists().unwrap();
                match (proc, h.body) {
                    (MsgProc::Msg, Body::Msg(_)) | (MsgProc::NoMsg, Body::NoMsg(_)) => {}
                    _ => prop_assert!(false, "wrong proc"),
                }
                prop_assert_eq!(&c.read_list.iter().collect::<Vec<_>>(), reads);
                let ws: Vec<Vec<Segment>> = c.write_list.iter().map(|w| w.iter().collect()).collect();
                prop_assert_eq!(&ws, writes);
                let r: Option<Vec<Segment>> = c.reply_chunk.map(|r| r.iter().collect());
                prop_assert_eq!(&r, reply);
                // Read chunks partition the Read list.
                let total: usize = c.read_list.chunks().map(|ch| ch.len()).sum();
                prop_assert_eq!(total, reads.len());
            }
            Owned::Error { xid, credit, err } => {
                let n = encode_error(&mut out, *xid, *credit, *err).unwrap();
                let (h, len) = decode(&out[..n], &L).unwrap();
                prop_assert_eq!(len, n);
                prop_assert_eq!(h, Header { xid: *xid, credit: *credit, body: Body::Error(*err) });
            }
        }
    }

    #[test]
    fn decode_then_encode(o in owned(),
        mutations in prop::collection::vec(
            (any::<prop::sample::Index>(), prop_oneof![3 => 0u32..3, 1 => any::<u32>(), 1 => 0u32..64]),
            0..3),
        cut in any::<prop::sample::Index>(), do_cut in prop::bool::weighted(0.2)) {
        // Start from a valid header and damage a few words, or cut it
        // short: near-valid input, much of which still decodes.
        let mut buf = encode_owned(&o);
        let words = buf.len() / 4;
        let mutations_empty = mutations.is_empty();
        for (i, v) in mutations {
            let i = i.index(words);
            buf[i * 4..i * 4 + 4].copy_from_slice(&v.to_be_bytes());
        }
        if do_cut {
            buf.truncate(cut.index(buf.len() + 1));
        }
        match decode(&buf, &L) {
            Ok((h, len)) => {
                let mut out = vec![0u8; len];
                let n = h.encode(&mut out).unwrap();
                prop_assert_eq!(n, len);
                prop_assert_eq!(&out[..], &buf[..len]);
            }
            Err(e) => {
                // Undamaged input decodes; cut short, it is only truncated.
                let whole = encode_owned(&o).len();
                prop_assert!(!mutations_empty || (do_cut && buf.len() < whole));
                if mutations_empty {
                    prop_assert_eq!(e, DecodeError::Truncated);
                }
            }
        }
    }

    #[test]
    fn decode_arbitrary_bytes(buf in prop::collection::vec(any::<u8>(), 0..256)) {
        if let Ok((h, len)) = decode(&buf, &L) {
            prop_assert!(len <= buf.len());
            let mut out = vec![0u8; len];
            prop_assert_eq!(h.encode(&mut out), Ok(len));
            prop_assert_eq!(&out[..], &buf[..len]);
        }
    }
}
