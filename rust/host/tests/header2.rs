// SPDX-License-Identifier: GPL-2.0

//! The version 2 header codec (draft-cel-nfsv4-rpcrdma-version-two-04,
//! section 6.2): byte vectors worked out by hand from the draft's XDR,
//! each error code, both forms of the property operations, the malformed
//! inputs, and a round trip property test.

use proptest::prelude::*;
use rpcrdma_proto::proto::header::{DecodeError, DecodeLimits, MsgProc, ReadSegment, Segment};
use rpcrdma_proto::proto::header2::*;

const P: DecodeLimits = DecodeLimits::PERMISSIVE;

/// Big-endian words, as the draft's XDR lays them out.
fn words(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|v| v.to_be_bytes()).collect()
}

fn reencode(h: &Header2<'_>) -> Vec<u8> {
    let mut out = vec![0u8; 4096];
    let n = h.encode(&mut out).expect("re-encode");
    out.truncate(n);
    out
}

#[test]
fn msg_call_with_a_write_chunk_and_inv_handle() {
    // xid, vers 2, credit 32, RDMA2_MSG; CALL, inv_handle 0xabc; no Read
    // list; one Write chunk of one segment (handle 0xabc, 8192 bytes at
    // 0x1_0000_2000); no Reply chunk; then the RPC Call.
    let mut buf = words(&[
        0x1234_5678,
        2,
        32,
        0,
        0,
        0xabc,
        0,
        1,
        1,
        0xabc,
        8192,
        0x1,
        0x2000,
        0,
        0,
    ]);
    let hdr_len = buf.len();
    buf.extend_from_slice(&words(&[0x1234_5678, 0]));
    let (h, len) = decode(&buf, &P).unwrap();
    assert_eq!(len, hdr_len);
    assert_eq!((h.xid, h.vers, h.credit), (0x1234_5678, 2, 32));
    let Body2::Msg(c) = h.body else {
        panic!("not RDMA2_MSG: {:?}", h.body)
    };
    assert_eq!((c.direction, c.inv_handle), (Direction::Call, 0xabc));
    assert!(c.lists.read_list.is_empty());
    assert_eq!(c.lists.write_list.len(), 1);
    let seg = c.lists.write_list.first().unwrap().iter().next().unwrap();
    assert_eq!(
        seg,
        Segment {
            handle: 0xabc,
            length: 8192,
            offset: 0x1_0000_2000
        }
    );
    assert!(c.lists.reply_chunk.is_none());
    assert_eq!(reencode(&h), buf[..len]);

    // The encoder writes the same bytes.
    let mut out = [0u8; 256];
    let n = encode_chunked(
        &mut out,
        0x1234_5678,
        32,
        MsgProc::Msg,
        Direction::Call,
        0xabc,
        [],
        [[seg]],
        None::<[Segment; 0]>,
    )
    .unwrap();
    assert_eq!(&out[..n], &buf[..hdr_len]);
}

#[test]
fn nomsg_reply_with_a_reply_chunk() {
    // RDMA2_NOMSG, REPLY, inv_handle 0; empty Read and Write lists; a
    // Reply chunk of two segments; nothing may follow.
    let buf = words(&[
        7, 2, 1, 1, 1, 0, 0, 0, 1, 2, 0x10, 4096, 0, 0x1000, 0x11, 100, 0, 0x2000,
    ]);
    let (h, len) = decode(&buf, &P).unwrap();
    assert_eq!(len, buf.len());
    let Body2::NoMsg(c) = h.body else {
        panic!("not RDMA2_NOMSG")
    };
    assert_eq!((c.direction, c.inv_handle), (Direction::Reply, 0));
    let reply = c.lists.reply_chunk.unwrap();
    assert_eq!((reply.len(), reply.total_length()), (2, 4196));
    assert_eq!(reencode(&h), buf);
    let mut longer = buf.clone();
    longer.extend_from_slice(&[0; 4]);
    assert_eq!(decode(&longer, &P), Err(DecodeError2::TrailingBytes));
}

#[test]
fn every_error_code() {
    let cases: &[(&[u32], Error2)] = &[
        (&[1, 1, 2], Error2::Vers { low: 1, high: 2 }),
        (&[2], Error2::BadXdr),
        (&[3], Error2::InvalidProc),
        (&[4, 2], Error2::ReadChunks { max: 2 }),
        (&[5, 1], Error2::WriteChunks { max: 1 }),
        (&[6, 16], Error2::Segments { max: 16 }),
        (
            &[7, 1, 65536],
            Error2::WriteResource {
                chunk_index: 1,
                length_needed: 65536,
            },
        ),
        (
            &[8, 9000],
            Error2::ReplyResource {
                length_needed: 9000,
            },
        ),
        (&[9], Error2::InvalidOption),
        (&[10], Error2::System),
    ];
    for (body, want) in cases {
        let mut w = vec![0x99, 2, 5, 4];
        w.extend_from_slice(body);
        let buf = words(&w);
        let (h, len) = decode(&buf, &P).unwrap();
        assert_eq!(len, buf.len());
        assert_eq!(h.body, Body2::Error(*want), "code {}", body[0]);
        assert_eq!(want.code(), body[0]);
        assert_eq!(reencode(&h), buf);
        let mut out = [0u8; 64];
        let n = encode_error(&mut out, 0x99, 5, want).unwrap();
        assert_eq!(&out[..n], &buf[..]);
        // Each is cut short by a word, if it has any after the code.
        if body.len() > 1 {
            assert_eq!(
                decode(&buf[..buf.len() - 4], &P),
                Err(DecodeError2::Truncated)
            );
        }
    }
    assert_eq!(
        decode(&words(&[1, 2, 5, 4, 11]), &P),
        Err(DecodeError2::UnknownErrorCode(11))
    );
}

#[test]
fn err_vers_in_another_version_decodes() {
    // A responder answers ERR_VERS in the requester's version, or its own.
    let buf = words(&[3, 1, 0, 4, 1, 1, 1]);
    let (h, _) = decode(&buf, &P).unwrap();
    assert_eq!(h.vers, 1);
    assert_eq!(h.body, Body2::Error(Error2::Vers { low: 1, high: 1 }));
    assert_eq!(reencode(&h), buf);
    // Anything else in version 1 is not version 2's to decode.
    assert_eq!(
        decode(&words(&[3, 1, 0, 0, 0, 0, 0, 0, 0]), &P),
        Err(DecodeError2::BadVersion(1))
    );
}

/// CONNPROP's body: Receive Buffer Size 8192, Backward Request Support
/// general, an unknown property 0xffff_ff00 with 3 bytes; nochg {bit 0}.
fn connprop_body() -> Vec<u8> {
    let mut b = words(&[3, PROPID_RBSIZ, 4, 8192, PROPID_BRS, 4, 2, 0xffff_ff00, 3]);
    b.extend_from_slice(&[0xaa, 0xbb, 0xcc, 0]);
    b.extend_from_slice(&words(&[1, 1]));
    b
}

fn check_connprop(op: PropOp<'_>) {
    let PropOp::ConnProp { start, nochg } = op else {
        panic!("not CONNPROP: {op:?}")
    };
    let props: Vec<_> = start.iter().map(|p| p.property()).collect();
    assert_eq!(
        props,
        vec![
            Ok(Property::ReceiveBufferSize(8192)),
            Ok(Property::BackwardRequests(BackwardRequests::General)),
            Ok(Property::Unknown(0xffff_ff00)),
        ]
    );
    assert_eq!(start.iter().nth(2).unwrap().data, &[0xaa, 0xbb, 0xcc]);
    assert!(nochg.contains(0));
    assert!(!nochg.contains(1));
    assert!(!nochg.contains(40), "words beyond the last are zero");
}

#[test]
fn connprop_as_a_procedure_and_as_optional() {
    // As procedure 6 (section 6.2).
    let mut proc_form = words(&[5, 2, 0, RDMA2_CONNPROP]);
    proc_form.extend_from_slice(&connprop_body());
    let (h, len) = decode(&proc_form, &P).unwrap();
    assert_eq!(len, proc_form.len());
    let Body2::Prop(op, PropForm::Proc) = h.body else {
        panic!("not the procedure form")
    };
    check_connprop(op);
    assert_eq!(reencode(&h), proc_form);

    // As RDMA2_OPTIONAL type 1 (section 5.3, Table 2): CALL from a
    // requester, the operation's XDR in rdma_optinfo.
    let body = connprop_body();
    let mut opt_form = words(&[5, 2, 0, RDMA2_OPTIONAL, 0, OPT_CONNPROP, body.len() as u32]);
    opt_form.extend_from_slice(&body);
    let (h, _) = decode(&opt_form, &P).unwrap();
    let Body2::Prop(op, PropForm::Optional(Direction::Call)) = h.body else {
        panic!("not the optional form: {:?}", h.body)
    };
    check_connprop(op);
    assert_eq!(reencode(&h), opt_form);

    // The encoder writes both.
    let start: &[(u32, &[u8])] = &[
        (PROPID_RBSIZ, &8192u32.to_be_bytes()),
        (PROPID_BRS, &2u32.to_be_bytes()),
        (0xffff_ff00, &[0xaa, 0xbb, 0xcc]),
    ];
    let op = PropOpOut::ConnProp { start, nochg: &[1] };
    let mut out = [0u8; 256];
    let n = encode_prop(&mut out, 5, 0, &op, PropForm::Proc).unwrap();
    assert_eq!(&out[..n], &proc_form[..]);
    let n = encode_prop(&mut out, 5, 0, &op, PropForm::Optional(Direction::Call)).unwrap();
    assert_eq!(&out[..n], &opt_form[..]);
}

#[test]
fn reqprop_resprop_updprop() {
    // REQPROP (7): want Receive Buffer Size 2048.
    let buf = words(&[9, 2, 0, RDMA2_REQPROP, 1, PROPID_RBSIZ, 4, 2048]);
    let (h, _) = decode(&buf, &P).unwrap();
    let Body2::Prop(PropOp::ReqProp { want }, PropForm::Proc) = h.body else {
        panic!("not REQPROP")
    };
    assert_eq!(
        want.iter().next().unwrap().property(),
        Ok(Property::ReceiveBufferSize(2048))
    );
    assert_eq!(reencode(&h), buf);

    // RESPROP (8): done {}, rejected {0}, other: Receive Buffer Size 3072.
    let buf = words(&[9, 2, 0, RDMA2_RESPROP, 0, 1, 1, 1, PROPID_RBSIZ, 4, 3072]);
    let (h, _) = decode(&buf, &P).unwrap();
    let Body2::Prop(
        PropOp::ResProp {
            done,
            rejected,
            other,
        },
        PropForm::Proc,
    ) = h.body
    else {
        panic!("not RESPROP")
    };
    assert!(!done.contains(0));
    assert!(rejected.contains(0));
    assert_eq!(other.len(), 1);
    assert_eq!(reencode(&h), buf);
    let mut out = [0u8; 128];
    let n = encode_prop(
        &mut out,
        9,
        0,
        &PropOpOut::ResProp {
            done: &[],
            rejected: &[1],
            other: &[(PROPID_RBSIZ, &3072u32.to_be_bytes())],
        },
        PropForm::Proc,
    )
    .unwrap();
    assert_eq!(&out[..n], &buf[..]);

    // UPDPROP as optional type 4 from a responder (REPLY): an empty value
    // is the property's default.
    let body = words(&[1, PROPID_RBSIZ, 0]);
    let mut buf = words(&[0, 2, 0, RDMA2_OPTIONAL, 1, OPT_UPDPROP, body.len() as u32]);
    buf.extend_from_slice(&body);
    let (h, _) = decode(&buf, &P).unwrap();
    let Body2::Prop(PropOp::UpdProp { now }, PropForm::Optional(Direction::Reply)) = h.body else {
        panic!("not UPDPROP")
    };
    assert_eq!(
        now.iter().next().unwrap().property(),
        Ok(Property::ReceiveBufferSize(DEFAULT_INLINE_SIZE_2))
    );
    assert_eq!(reencode(&h), buf);
}

#[test]
fn unknown_optional_and_its_payload() {
    // RDMA2_OPTIONAL type 77 with 5 bytes of info, then an RPC message:
    // kept for an RDMA2_ERR_INVALID_OPTION answer; a payload may follow.
    let mut buf = words(&[4, 2, 1, RDMA2_OPTIONAL, 0, 77, 5]);
    buf.extend_from_slice(&[1, 2, 3, 4, 5, 0, 0, 0]);
    let hdr = buf.len();
    buf.extend_from_slice(&words(&[4, 0]));
    let (h, len) = decode(&buf, &P).unwrap();
    assert_eq!(len, hdr);
    assert_eq!(
        h.body,
        Body2::Optional(Optional {
            direction: Direction::Call,
            opttype: 77,
            info: &[1, 2, 3, 4, 5],
        })
    );
    assert_eq!(reencode(&h), buf[..hdr]);
}

#[test]
fn malformed() {
    let cases: &[(Vec<u8>, DecodeError2)] = &[
        (words(&[1, 2, 0]), DecodeError2::Truncated),
        (words(&[1, 3, 0, 0]), DecodeError2::BadVersion(3)),
        (words(&[1, 2, 0, 2]), DecodeError2::UnknownProc(2)),
        (words(&[1, 2, 0, 10]), DecodeError2::UnknownProc(10)),
        (
            words(&[1, 2, 0, 0, 2, 0, 0, 0, 0]),
            DecodeError2::BadDirection(2),
        ),
        (
            words(&[1, 2, 0, 0, 0, 0, 5, 0, 0]),
            DecodeError2::Lists(DecodeError::BadDiscriminator(5)),
        ),
        (
            words(&[1, 2, 0, RDMA2_OPTIONAL, 3, 77, 0]),
            DecodeError2::BadDirection(3),
        ),
        // An opaque longer than the message.
        (
            words(&[1, 2, 0, RDMA2_OPTIONAL, 0, 77, 100]),
            DecodeError2::Truncated,
        ),
        // A property set with more entries than allowed, refused at once.
        (
            words(&[1, 2, 0, RDMA2_UPDPROP, MAX_PROPS + 1]),
            DecodeError2::TooManyProps(MAX_PROPS + 1),
        ),
        (
            words(&[1, 2, 0, RDMA2_CONNPROP, 0, MAX_SUBSET_WORDS + 1]),
            DecodeError2::TooManySubsetWords(MAX_SUBSET_WORDS + 1),
        ),
        // A property value that runs past the message.
        (
            words(&[1, 2, 0, RDMA2_UPDPROP, 1, PROPID_RBSIZ, 8, 4096]),
            DecodeError2::Truncated,
        ),
        // Optional type 4 whose info holds more than UPDPROP.
        (
            words(&[1, 2, 0, RDMA2_OPTIONAL, 0, OPT_UPDPROP, 8, 0, 0]),
            DecodeError2::OptinfoLength,
        ),
        (
            words(&[1, 2, 0, RDMA2_UPDPROP, 0, 0]),
            DecodeError2::TrailingBytes,
        ),
        (
            words(&[1, 2, 0, RDMA2_OPTIONAL, 0, 77, 1, 0x0100_0000 | 0x80]),
            DecodeError2::NonZeroPad,
        ),
    ];
    for (buf, want) in cases {
        assert_eq!(decode(buf, &P).map(|(h, _)| h), Err(*want), "{buf:02x?}");
    }
    assert_eq!(
        DecodeError2::UnknownProc(2).error_code(),
        RDMA2_ERR_INVALID_PROC
    );
    assert_eq!(DecodeError2::Truncated.error_code(), RDMA2_ERR_BAD_XDR);
    assert_eq!(DecodeError2::BadVersion(3).error_code(), RDMA2_ERR_VERS);
}

#[test]
fn known_properties_with_bad_values() {
    let bad: &[(u32, &[u8])] = &[
        (PROPID_RBSIZ, &[0, 0, 16]),
        (PROPID_RBSIZ, &[0, 0, 16, 0, 0, 0, 0, 0]),
        (PROPID_BRS, &[0, 0, 0, 3]),
    ];
    for &(which, data) in bad {
        assert_eq!(
            PropVal { which, data }.property(),
            Err(DecodeError2::BadProperty(which))
        );
    }
    // An unknown property is never an error (section 5.1.1).
    assert_eq!(
        PropVal {
            which: 99,
            data: &[1]
        }
        .property(),
        Ok(Property::Unknown(99))
    );
}

// The round trip: a header generated field by field is encoded, decoded
// to the same fields, and encoded again to the same bytes.

fn segment() -> impl Strategy<Value = Segment> {
    (any::<u32>(), any::<u32>(), any::<u64>()).prop_map(|(handle, length, offset)| Segment {
        handle,
        length,
        offset: offset.min(u64::MAX - u64::from(length)),
    })
}

fn direction() -> impl Strategy<Value = Direction> {
    prop_oneof![Just(Direction::Call), Just(Direction::Reply)]
}

fn propset() -> impl Strategy<Value = Vec<(u32, Vec<u8>)>> {
    prop::collection::vec(
        (any::<u32>(), prop::collection::vec(any::<u8>(), 0..12)),
        0..4,
    )
}

fn subset() -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(any::<u32>(), 0..3)
}

#[derive(Clone, Debug)]
enum Gen {
    Msg {
        nomsg: bool,
        direction: Direction,
        inv_handle: u32,
        reads: Vec<(u32, Segment)>,
        writes: Vec<Vec<Segment>>,
        reply: Option<Vec<Segment>>,
    },
    Error(Error2),
    Prop {
        kind: u8,
        sets: [Vec<(u32, Vec<u8>)>; 1],
        subsets: [Vec<u32>; 2],
        form: PropForm,
    },
}

fn error2() -> impl Strategy<Value = Error2> {
    prop_oneof![
        (any::<u32>(), any::<u32>()).prop_map(|(low, high)| Error2::Vers { low, high }),
        Just(Error2::BadXdr),
        Just(Error2::InvalidProc),
        any::<u32>().prop_map(|max| Error2::ReadChunks { max }),
        any::<u32>().prop_map(|max| Error2::WriteChunks { max }),
        any::<u32>().prop_map(|max| Error2::Segments { max }),
        (any::<u32>(), any::<u32>()).prop_map(|(chunk_index, length_needed)| {
            Error2::WriteResource {
                chunk_index,
                length_needed,
            }
        }),
        any::<u32>().prop_map(|length_needed| Error2::ReplyResource { length_needed }),
        Just(Error2::InvalidOption),
        Just(Error2::System),
    ]
}

fn gen() -> impl Strategy<Value = Gen> {
    let msg = (
        any::<bool>(),
        direction(),
        any::<u32>(),
        prop::collection::vec(((0u32..8).prop_map(|p| p * 4), segment()), 0..3),
        prop::collection::vec(prop::collection::vec(segment(), 0..3), 0..2),
        prop::option::of(prop::collection::vec(segment(), 0..3)),
    )
        .prop_map(
            |(nomsg, direction, inv_handle, reads, writes, reply)| Gen::Msg {
                nomsg,
                direction,
                inv_handle,
                reads,
                writes,
                reply,
            },
        );
    let form = prop_oneof![
        Just(PropForm::Proc),
        direction().prop_map(PropForm::Optional)
    ];
    let prop = (0u8..4, propset(), subset(), subset(), form).prop_map(|(kind, set, a, b, form)| {
        Gen::Prop {
            kind,
            sets: [set],
            subsets: [a, b],
            form,
        }
    });
    prop_oneof![msg, error2().prop_map(Gen::Error), prop]
}

fn encode_gen(g: &Gen, xid: u32, credit: u32, out: &mut [u8]) -> usize {
    match g {
        Gen::Msg {
            nomsg,
            direction,
            inv_handle,
            reads,
            writes,
            reply,
        } => encode_chunked(
            out,
            xid,
            credit,
            if *nomsg { MsgProc::NoMsg } else { MsgProc::Msg },
            *direction,
            *inv_handle,
            reads
                .iter()
                .map(|&(position, segment)| ReadSegment { position, segment }),
            writes.iter().map(|c| c.iter().copied()),
            reply.as_ref().map(|c| c.iter().copied()),
        )
        .unwrap(),
        Gen::Error(e) => encode_error(out, xid, credit, e).unwrap(),
        Gen::Prop {
            kind,
            sets,
            subsets,
            form,
        } => {
            let set: Vec<(u32, &[u8])> = sets[0].iter().map(|(w, d)| (*w, d.as_slice())).collect();
            let op = match kind {
                0 => PropOpOut::ConnProp {
                    start: &set,
                    nochg: &subsets[0],
                },
                1 => PropOpOut::ReqProp { want: &set },
                2 => PropOpOut::ResProp {
                    done: &subsets[0],
                    rejected: &subsets[1],
                    other: &set,
                },
                _ => PropOpOut::UpdProp { now: &set },
            };
            encode_prop(out, xid, credit, &op, *form).unwrap()
        }
    }
}

fn props_of(set: &PropSet<'_>) -> Vec<(u32, Vec<u8>)> {
    set.iter().map(|p| (p.which, p.data.to_vec())).collect()
}

proptest! {
    #[test]
    fn round_trip(g in gen(), xid in any::<u32>(), credit in any::<u32>()) {
        let mut out = vec![0u8; 2048];
        let n = encode_gen(&g, xid, credit, &mut out);
        let buf = &out[..n];
        let (h, len) = decode(buf, &P).unwrap();
        prop_assert_eq!(len, n);
        prop_assert_eq!((h.xid, h.vers, h.credit), (xid, 2, credit));
        match (&g, h.body) {
            (Gen::Msg { nomsg, direction, inv_handle, reads, writes, reply }, Body2::Msg(c) | Body2::NoMsg(c)) => {
                prop_assert_eq!(*nomsg, matches!(h.body, Body2::NoMsg(_)));
                prop_assert_eq!((c.direction, c.inv_handle), (*direction, *inv_handle));
                let got: Vec<(u32, Segment)> =
                    c.lists.read_list.iter().map(|r| (r.position, r.segment)).collect();
                prop_assert_eq!(&got, reads);
                let got: Vec<Vec<Segment>> = c.lists.write_list.iter().map(|w| w.iter().collect()).collect();
                prop_assert_eq!(&got, writes);
                let got = c.lists.reply_chunk.map(|r| r.iter().collect::<Vec<_>>());
                prop_assert_eq!(&got, reply);
            }
            (Gen::Error(e), Body2::Error(got)) => prop_assert_eq!(got, *e),
            (Gen::Prop { kind, sets, subsets, form }, Body2::Prop(op, got_form)) => {
                prop_assert_eq!(got_form, *form);
                let words_of = |s: &PropSubset<'_>, n: usize| {
                    (0..n * 32).map(|i| s.contains(i)).collect::<Vec<_>>()
                };
                let bits = |w: &[u32]| {
                    (0..w.len() * 32).map(|i| w[i / 32] & (1 << (i % 32)) != 0).collect::<Vec<_>>()
                };
                match (kind, op) {
                    (0, PropOp::ConnProp { start, nochg }) => {
                        prop_assert_eq!(props_of(&start), sets[0].clone());
                        prop_assert_eq!(nochg.words(), subsets[0].len());
                        prop_assert_eq!(words_of(&nochg, subsets[0].len()), bits(&subsets[0]));
                    }
                    (1, PropOp::ReqProp { want }) => prop_assert_eq!(props_of(&want), sets[0].clone()),
                    (2, PropOp::ResProp { done, rejected, other }) => {
                        prop_assert_eq!(words_of(&done, subsets[0].len()), bits(&subsets[0]));
                        prop_assert_eq!(words_of(&rejected, subsets[1].len()), bits(&subsets[1]));
                        prop_assert_eq!(props_of(&other), sets[0].clone());
                    }
                    (3, PropOp::UpdProp { now }) => prop_assert_eq!(props_of(&now), sets[0].clone()),
                    (k, op) => prop_assert!(false, "kind {} decoded as {:?}", k, op),
                }
            }
            (g, body) => prop_assert!(false, "{:?} decoded as {:?}", g, body),
        }
        prop_assert_eq!(reencode(&h), buf.to_vec());
    }

    #[test]
    fn any_bytes_decode_without_panic_and_reencode_exactly(bytes in prop::collection::vec(any::<u8>(), 0..160), head in gen()) {
        // Half the inputs start as a valid header, then damaged.
        let mut out = vec![0u8; 2048];
        let n = encode_gen(&head, 1, 1, &mut out);
        for buf in [bytes.clone(), {
            let mut b = out[..n].to_vec();
            for (i, x) in bytes.iter().enumerate().take(4) {
                let at = usize::from(*x) % b.len().max(1);
                if let Some(v) = b.get_mut(at) { *v ^= 1 << (i % 8); }
            }
            b
        }] {
            if let Ok((h, len)) = decode(&buf, &P) {
                prop_assert_eq!(reencode(&h), buf[..len].to_vec());
                for set in match h.body {
                    Body2::Prop(PropOp::ConnProp { start, .. }, _) => vec![start],
                    Body2::Prop(PropOp::ReqProp { want }, _) => vec![want],
                    Body2::Prop(PropOp::ResProp { other, .. }, _) => vec![other],
                    Body2::Prop(PropOp::UpdProp { now }, _) => vec![now],
                    _ => vec![],
                } {
                    prop_assert_eq!(set.iter().count(), set.len());
                    for p in set.iter() {
                        let _ = p.property();
                    }
                }
            }
        }
    }
}

#[test]
fn the_fuzzers_version_2_seeds_decode() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/corpus/header_decode");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("v2_") {
            continue;
        }
        let buf = std::fs::read(&path).unwrap();
        let (h, len) = decode(&buf, &P).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(reencode(&h), buf[..len], "{name}");
        n += 1;
    }
    assert_eq!(n, 5, "the version 2 seeds");
}
