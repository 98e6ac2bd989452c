// SPDX-License-Identifier: GPL-2.0

//! RFC 8797 private data: encoding, the search at any offset, and the
//! negotiation of inline thresholds.

mod common;

use common::*;
use proptest::prelude::*;
use proptest::sample::Index;
use rpcrdma_proto::proto::private_data::*;

const OURS: LocalSettings = LocalSettings {
    send_size: 4096,
    recv_size: 4096,
    remote_invalidation: true,
};

#[test]
fn linux_client_vector() {
    let bytes = pd_linux_client();
    let (off, pd) = find(&bytes).unwrap();
    assert_eq!(off, 0);
    assert_eq!(pd.send_size(), 4096);
    assert_eq!(pd.recv_size(), 4096);
    assert!(pd.remote_invalidation());
    assert_eq!(pd.to_bytes().to_vec(), bytes);
    // What we send with the C client's defaults is exactly this.
    assert_eq!(OURS.private_data().to_bytes().to_vec(), bytes);
}

#[test]
fn size_codes() {
    assert_eq!(encode_size(1024), 0);
    assert_eq!(encode_size(4096), 3);
    assert_eq!(encode_size(65536), 63);
    assert_eq!(encode_size(262144), 255);
    // Clamped, never wrapped like C's (size >> 10) - 1 in a u8.
    assert_eq!(encode_size(0), 0);
    assert_eq!(encode_size(1023), 0);
    assert_eq!(encode_size(262144 + 1024), 255);
    assert_eq!(encode_size(u32::MAX), 255);
    // Rounded down to whole KiB: never advertise more than we have.
    assert_eq!(encode_size(4095), 2);
    assert_eq!(decode_size(0), 1024);
    assert_eq!(decode_size(255), 262144);
    for code in 0..=255u8 {
        assert_eq!(encode_size(decode_size(code)), code);
    }
}

#[test]
fn found_at_any_offset_and_alignment() {
    let msg = PrivateData::new(8192, 16384, true).to_bytes();
    for prefix in 0..40usize {
        for suffix in [0usize, 1, 3, 17] {
            let mut buf = vec![0x5au8; prefix];
            buf.extend_from_slice(&msg);
            buf.extend(std::iter::repeat_n(0u8, suffix));
            let (off, pd) = find(&buf).unwrap();
            assert_eq!(off, prefix);
            assert_eq!(pd.send_size(), 8192);
            assert_eq!(pd.recv_size(), 16384);
            assert!(pd.remote_invalidation());
        }
    }
    let buf = pd_unaligned_in_cm_buffer();
    let (off, pd) = find(&buf).unwrap();
    assert_eq!(off, 3);
    assert_eq!(pd.send_size(), 32768);
    assert_eq!(pd.recv_size(), 4096);
    assert!(!pd.remote_invalidation());
}

#[test]
fn not_found_falls_back_to_defaults() {
    // Nothing at all, empty buffer, garbage.
    assert_eq!(find(&[]), None);
    assert_eq!(decode(&[]), PrivateData::ABSENT);
    assert_eq!(decode(&[0u8; 56]), PrivateData::ABSENT);
    assert_eq!(
        decode(b"MPA ID Req Frame garbage garbage"),
        PrivateData::ABSENT
    );
    // Identifier with an unknown version.
    assert_eq!(decode(&hex(&["f6ab0e18", "02010303"])), PrivateData::ABSENT);
    assert_eq!(decode(&hex(&["f6ab0e18", "00010303"])), PrivateData::ABSENT);
    // Truncated: the message would overrun the buffer.
    let full = pd_linux_client();
    for cut in 0..full.len() {
        assert_eq!(decode(&full[..cut]), PrivateData::ABSENT, "cut {cut}");
    }
    let mut tail = vec![0u8; 13];
    tail.extend_from_slice(&full[..7]);
    assert_eq!(decode(&tail), PrivateData::ABSENT);
    // Byte-swapped identifier (a little-endian writer) is not it.
    assert_eq!(decode(&hex(&["180eabf6", "01010303"])), PrivateData::ABSENT);

    let abs = PrivateData::ABSENT;
    assert_eq!(abs.send_size(), 1024);
    assert_eq!(abs.recv_size(), 1024);
    assert!(!abs.remote_invalidation());
}

#[test]
fn first_valid_occurrence_wins() {
    // A false match (version 7) overlapping the real message's start.
    let buf = hex(&["f6ab0e18", "07", "f6ab0e18", "01011f0f"]);
    let (off, pd) = find(&buf).unwrap();
    assert_eq!(off, 5);
    assert_eq!(pd.send_size(), 32 * 1024);
    assert_eq!(pd.recv_size(), 16 * 1024);
    // Two valid messages: the first one counts.
    let buf = hex(&["f6ab0e18", "01000000", "f6ab0e18", "01010303"]);
    assert_eq!(find(&buf).unwrap().0, 0);
}

#[test]
fn reserved_bits_ignored_but_kept() {
    let buf = hex(&["f6ab0e18", "01fe0303"]);
    let pd = decode(&buf);
    assert!(!pd.remote_invalidation());
    assert_eq!(pd.to_bytes().to_vec(), buf);
    let buf = hex(&["f6ab0e18", "01ff0303"]);
    assert!(decode(&buf).remote_invalidation());
}

#[test]
fn negotiation_min_rules() {
    // Peer: sends up to 32 KiB, receives 4 KiB.
    let n = negotiate(&OURS, Some(&pd_unaligned_in_cm_buffer()));
    assert_eq!(n.inline_send, 4096); // min(4096 ours, 4096 peer recv)
    assert_eq!(n.inline_recv, 4096); // min(4096 ours, 32768 peer send)
    assert!(!n.remote_invalidation); // peer cleared R
    assert!(n.peer.is_some());

    let big = LocalSettings {
        send_size: 65536,
        recv_size: 65536,
        remote_invalidation: true,
    };
    let n = negotiate(&big, Some(&pd_unaligned_in_cm_buffer()));
    assert_eq!(n.inline_send, 4096);
    assert_eq!(n.inline_recv, 32768);

    let peer = PrivateData::new(262144, 262144, true).to_bytes();
    let n = negotiate(&big, Some(&peer));
    assert_eq!((n.inline_send, n.inline_recv), (65536, 65536));
    assert!(n.remote_invalidation);
    // We do not want it: off even though the peer set R.
    let no_rinv = LocalSettings {
        remote_invalidation: false,
        ..big
    };
    assert!(!negotiate(&no_rinv, Some(&peer)).remote_invalidation);

    // Smallest peer: 1 KiB each way.
    let peer = PrivateData::new(1024, 1024, true).to_bytes();
    let n = negotiate(&big, Some(&peer));
    assert_eq!((n.inline_send, n.inline_recv), (1024, 1024));
}

/// Sizes that are not a multiple of 1 KiB (the kernel module's
/// `max_inline_read`/`max_inline_write` take any value from 1024 to 65536)
/// behave as in C: advertised as `(size >> 10) - 1`, used exactly as our
/// side's limit.
#[test]
fn unaligned_sizes_as_c() {
    let peer = PrivateData::new(65536, 65536, true).to_bytes();
    for size in 1024..=65536u32 {
        let c_code = u8::try_from((size >> 10) - 1).unwrap();
        assert_eq!(encode_size(size), c_code, "size {size}");
        let ours = LocalSettings {
            send_size: size,
            recv_size: size,
            remote_invalidation: true,
        };
        assert_eq!(ours.private_data().send_code, c_code);
        assert_eq!(ours.private_data().recv_code, c_code);
        let n = negotiate(&ours, Some(&peer));
        assert_eq!((n.inline_send, n.inline_recv), (size, size), "size {size}");
    }
    let ours = LocalSettings {
        send_size: 1500,
        recv_size: 3000,
        remote_invalidation: true,
    };
    assert_eq!(ours.private_data().to_bytes()[6..], [0, 1]);
    // The peer's sizes still bound ours.
    let n = negotiate(&ours, Some(&PrivateData::new(2048, 1024, true).to_bytes()));
    assert_eq!((n.inline_send, n.inline_recv), (1024, 2048));
}

#[test]
fn negotiation_fallback() {
    for peer in [
        None,
        Some(&[][..]),
        Some(&[0u8; 56][..]),
        Some(&b"\xf6\xab\x0e\x18\x02\x01\x03\x03"[..]),
        Some(&b"\xf6\xab\x0e\x18\x01\x01\x03"[..]),
    ] {
        let n = negotiate(&OURS, peer);
        assert_eq!(n.inline_send, 1024);
        assert_eq!(n.inline_recv, 1024);
        assert!(!n.remote_invalidation);
        assert_eq!(n.peer, None);
    }
}

#[test]
fn reconnect_is_stateless() {
    let a = negotiate(&OURS, Some(&PrivateData::new(2048, 2048, true).to_bytes()));
    let b = negotiate(&OURS, None);
    let c = negotiate(&OURS, Some(&PrivateData::new(2048, 2048, true).to_bytes()));
    assert_eq!(a, c);
    assert_ne!(a, b);
}

#[test]
fn encode_into_buffer() {
    let pd = PrivateData::new(4096, 4096, true);
    let mut out = [0u8; 8];
    assert_eq!(pd.encode(&mut out), Some(8));
    assert_eq!(out.to_vec(), pd_linux_client());
    assert_eq!(pd.encode(&mut [0u8; 7]), None);
}

/// The first offset at which a whole version 1 message sits
/// (RFC 8797, section 5.2), by a plain scan independent of [`find`].
fn reference_find(buf: &[u8]) -> Option<(usize, PrivateData)> {
    (0..buf.len()).find_map(|off| {
        let m = buf.get(off..off + 8)?;
        (m[..4] == [0xf6, 0xab, 0x0e, 0x18] && m[4] == 1).then_some((
            off,
            PrivateData {
                flags: m[5],
                send_code: m[6],
                recv_code: m[7],
            },
        ))
    })
}

/// RFC 8797 sections 4.1, 4.2 and 5.1, worked out directly.
fn reference_negotiate(ours: &LocalSettings, peer: Option<PrivateData>) -> Negotiated {
    let size = |code: u8| (u32::from(code) + 1) * 1024;
    let (peer_send, peer_recv, peer_r) = match peer {
        Some(pd) => (size(pd.send_code), size(pd.recv_code), pd.flags & 1 == 1),
        None => (1024, 1024, false),
    };
    Negotiated {
        inline_send: ours.send_size.min(peer_recv),
        inline_recv: ours.recv_size.min(peer_send),
        remote_invalidation: ours.remote_invalidation && peer_r,
        peer,
    }
}

/// Checks `find`, `decode` and `negotiate` on `buf` against the reference
/// scan and returns what was found.
fn check_buffer(
    ours: &LocalSettings,
    buf: &[u8],
) -> Result<Option<(usize, PrivateData)>, TestCaseError> {
    let found = find(buf);
    prop_assert_eq!(found, reference_find(buf));
    if let Some((off, pd)) = found {
        prop_assert_eq!(&buf[off..off + LEN], &pd.to_bytes()[..]);
    }
    prop_assert_eq!(decode(buf), found.map_or(PrivateData::ABSENT, |(_, pd)| pd));
    let n = negotiate(ours, Some(buf));
    prop_assert_eq!(n, reference_negotiate(ours, found.map(|(_, pd)| pd)));
    // Whatever the peer sent: never above our sizes or 256 KiB, never below
    // 1 KiB unless we asked for less, R only if we want it.
    prop_assert!(n.inline_send <= ours.send_size && n.inline_recv <= ours.recv_size);
    prop_assert!(n.inline_send <= 262144 && n.inline_recv <= 262144);
    let floor = |x: u32| x.min(1024);
    prop_assert!(n.inline_send >= floor(ours.send_size) && n.inline_recv >= floor(ours.recv_size));
    prop_assert!(!n.remote_invalidation || ours.remote_invalidation);
    Ok(found)
}

#[derive(Clone, Debug)]
enum Mutation {
    /// Flip one of the message's 64 bits.
    FlipInMessage(u8),
    /// Flip one bit anywhere in the buffer.
    FlipAnywhere(Index, u8),
    /// Cut the buffer anywhere.
    Truncate(Index),
    /// Cut the buffer inside the message: it would overrun.
    CutMessage(usize),
    /// Another Version.
    Version(u8),
    /// A second valid message anywhere: the first one counts.
    Insert(Index, PrivateData),
    /// The Format Identifier and a version octet anywhere.
    Decoy(Index, u8),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    use Mutation::*;
    let pd = (any::<u8>(), any::<u8>(), any::<u8>()).prop_map(|(flags, s, r)| PrivateData {
        flags,
        send_code: s,
        recv_code: r,
    });
    prop_oneof![
        3 => (0u8..64).prop_map(FlipInMessage),
        1 => (any::<Index>(), 0u8..8).prop_map(|(i, b)| FlipAnywhere(i, b)),
        1 => any::<Index>().prop_map(Truncate),
        1 => (0usize..LEN).prop_map(CutMessage),
        1 => any::<u8>().prop_map(Version),
        1 => (any::<Index>(), pd).prop_map(|(i, pd)| Insert(i, pd)),
        1 => (any::<Index>(), prop_oneof![Just(1u8), any::<u8>()]).prop_map(|(i, v)| Decoy(i, v)),
    ]
}

/// Applies `m`; `at` follows the generated message's offset.
fn apply(m: &Mutation, buf: &mut Vec<u8>, at: &mut usize) {
    let mut insert = |i: &Index, bytes: &[u8], buf: &mut Vec<u8>| {
        let pos = i.index(buf.len() + 1);
        buf.splice(pos..pos, bytes.iter().copied());
        if pos <= *at {
            *at += bytes.len();
        }
    };
    match m {
        Mutation::FlipInMessage(bit) => {
            if let Some(b) = buf.get_mut(*at + usize::from(bit / 8)) {
                *b ^= 1 << (bit % 8);
            }
        }
        Mutation::FlipAnywhere(i, bit) => {
            if !buf.is_empty() {
                let pos = i.index(buf.len());
                buf[pos] ^= 1 << bit;
            }
        }
        Mutation::Truncate(i) => buf.truncate(i.index(buf.len() + 1)),
        Mutation::CutMessage(k) => buf.truncate((*at + k).min(buf.len())),
        Mutation::Version(v) => {
            if let Some(b) = buf.get_mut(*at + 4) {
                *b = *v;
            }
        }
        Mutation::Insert(i, pd) => insert(i, &pd.to_bytes(), buf),
        Mutation::Decoy(i, v) => insert(i, &[0xf6, 0xab, 0x0e, 0x18, *v], buf),
    }
}

#[test]
fn search_finds_embedded_message() {
    let reach = Reach::new("search_finds_embedded_message");
    proptest!(|(
        prefix in prop::collection::vec(any::<u8>(), 0..64),
        suffix in prop::collection::vec(any::<u8>(), 0..64),
        flags in any::<u8>(), s in any::<u8>(), r in any::<u8>(),
    )| {
        reach.case();
        let pd = PrivateData { flags, send_code: s, recv_code: r };
        let mut buf = prefix.clone();
        buf.extend_from_slice(&pd.to_bytes());
        buf.extend_from_slice(&suffix);
        let (off, found) = find(&buf).unwrap();
        // The prefix might itself contain a valid message; if not, ours is
        // found where we put it.
        prop_assert!(off <= prefix.len());
        if off == prefix.len() {
            prop_assert_eq!(found, pd);
            reach.hit("found where it was put");
        }
        prop_assert_eq!(&buf[off..off + LEN], &found.to_bytes()[..]);
    });
    reach.report();
    reach.require("found where it was put", 50);
}

#[test]
fn negotiation_from_valid_then_mutated() {
    let reach = Reach::new("negotiation_from_valid_then_mutated");
    proptest!(ProptestConfig::with_cases(2000), |(
        prefix in prop::collection::vec(any::<u8>(), 0..48),
        suffix in prop::collection::vec(any::<u8>(), 0..48),
        flags in any::<u8>(), s in any::<u8>(), r in any::<u8>(),
        send in any::<u32>(), recv in any::<u32>(), rinv in any::<bool>(),
        mutations in prop::collection::vec(mutation(), 1..3),
    )| {
        reach.case();
        let ours = LocalSettings { send_size: send, recv_size: recv, remote_invalidation: rinv };
        // Valid: the message put after the prefix is found there and the
        // thresholds come from it.
        let pd = PrivateData { flags, send_code: s, recv_code: r };
        let mut buf = prefix.clone();
        buf.extend_from_slice(&pd.to_bytes());
        buf.extend_from_slice(&suffix);
        let found = check_buffer(&ours, &buf)?;
        if found == Some((prefix.len(), pd)) {
            reach.hit("valid: found where it was put");
        }
        let n = negotiate(&ours, Some(&buf));
        if n.peer == Some(pd) && n.remote_invalidation {
            reach.hit("valid: remote invalidation agreed");
        }

        // Damaged: whatever is found is what the bytes say.
        let mut at = prefix.len();
        for m in &mutations {
            apply(m, &mut buf, &mut at);
        }
        match check_buffer(&ours, &buf)? {
            None => reach.hit("damaged: no message"),
            Some(hit) if hit == (at, pd) => reach.hit("damaged: generated message found"),
            Some(_) => reach.hit("damaged: another message found"),
        }
    });
    reach.report();
    reach.require("valid: found where it was put", 50);
    reach.require("valid: remote invalidation agreed", 10);
    reach.require("damaged: no message", 10);
    reach.require("damaged: generated message found", 5);
    reach.require("damaged: another message found", 10);
}

#[test]
fn absence_says_why() {
    let ok = pd_linux_client();
    assert_eq!(absence(&ok), None);
    assert_eq!(absence(&[]), Some(Absence::Empty));
    // The CM pads with zeros: still nothing sent.
    assert_eq!(absence(&[0; 196]), Some(Absence::Empty));
    assert_eq!(absence(&[0, 0, 1]), Some(Absence::NoFormatId { len: 3 }));
    let mut bad_magic = ok.clone();
    bad_magic[0] ^= 0xff;
    assert_eq!(absence(&bad_magic), Some(Absence::NoFormatId { len: 8 }));
    let mut v2 = ok.clone();
    v2[4] = 2;
    assert_eq!(absence(&v2), Some(Absence::Version(2)));
    assert_eq!(absence(&ok[..7]), Some(Absence::Truncated));
    assert_eq!(absence(&ok[..4]), Some(Absence::Truncated));
    assert_eq!(Absence::Version(2).to_string(), "version 2, not 1");
    assert_eq!(
        Absence::NoFormatId { len: 196 }.to_string(),
        "no format identifier in 196 octets"
    );
    // A wrong version first, a valid message after it: found, no absence.
    let mut both = v2.clone();
    both.extend_from_slice(&ok);
    assert_eq!(absence(&both), None);
}
