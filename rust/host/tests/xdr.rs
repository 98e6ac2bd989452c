// SPDX-License-Identifier: GPL-2.0

//! XDR primitives: roundup, pad, and the bounds of reader and writer.

use rpcrdma_proto::proto::xdr::*;

#[test]
fn roundup_and_pad() {
    assert_eq!(xdr_roundup(0), Some(0));
    assert_eq!(xdr_roundup(1), Some(4));
    assert_eq!(xdr_roundup(4), Some(4));
    assert_eq!(xdr_roundup(5), Some(8));
    assert_eq!(xdr_roundup(usize::MAX - 3), Some(usize::MAX - 3));
    assert_eq!(xdr_roundup(usize::MAX - 2), None);
    assert_eq!(xdr_roundup_u32(1_000_001), Some(1_000_004));
    assert_eq!(xdr_roundup_u32(u32::MAX), None);
    assert_eq!([0, 1, 2, 3, 4, 5].map(xdr_pad_size), [0, 3, 2, 1, 0, 3]);
    assert_eq!(xdr_pad_size(u32::MAX), 1);
}

#[test]
fn reader_bounds() {
    let buf = [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0xff];
    let mut r = XdrReader::new(&buf);
    assert_eq!(r.get_u32(), Ok(1));
    assert_eq!(r.position(), 4);
    assert_eq!(r.get_u64(), Ok(2));
    assert_eq!(r.remaining(), 1);
    assert_eq!(r.get_u32(), Err(XdrError::Truncated));
    // A failed read consumes nothing.
    assert_eq!(r.remaining(), 1);
    assert_eq!(r.take(2), Err(XdrError::Truncated));
    assert_eq!(r.take(1), Ok(&[0xff][..]));
    assert_eq!(r.rest(), &[] as &[u8]);
    assert_eq!(r.take(usize::MAX), Err(XdrError::Truncated));
}

#[test]
fn writer_bounds() {
    let mut buf = [0u8; 10];
    let mut w = XdrWriter::new(&mut buf);
    assert!(w.is_empty());
    let at = w.reserve_u32().unwrap();
    assert_eq!(w.put_u32(0xdeadbeef), Ok(()));
    assert_eq!(w.put_u32(1), Err(XdrError::NoSpace));
    assert_eq!(w.len(), 8);
    assert_eq!(w.remaining(), 2);
    assert_eq!(w.set_u32_at(at, 7), Ok(()));
    // Only words already written may be patched.
    assert_eq!(w.set_u32_at(6, 7), Err(XdrError::NoSpace));
    assert_eq!(w.set_u32_at(usize::MAX, 7), Err(XdrError::NoSpace));
    assert_eq!(w.put_bytes(&[1, 2]), Ok(()));
    assert_eq!(w.put_bytes(&[3]), Err(XdrError::NoSpace));
    assert_eq!(w.put_u64(0), Err(XdrError::NoSpace));
    assert_eq!(buf, [0, 0, 0, 7, 0xde, 0xad, 0xbe, 0xef, 1, 2]);
}
