// SPDX-License-Identifier: GPL-2.0

//! Bounds-checked XDR (RFC 4506) primitives.
//!
//! RPC-over-RDMA headers are sequences of big-endian 32-bit words
//! (RFC 8166, section 4). The reader never reads past its slice and the
//! writer never writes past its slice: both report the problem as an
//! [`XdrError`] instead. Neither allocates.

use super::XDR_UNIT;

/// What went wrong in an XDR read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdrError {
    /// The input ended before the item being read.
    Truncated,
    /// The output buffer has no room for the item being written.
    NoSpace,
}

/// Rounds `len` up to the next multiple of four (XDR roundup, RFC 8166,
/// section 2.2.4.2). `None` if that does not fit in a `usize`.
pub const fn xdr_roundup(len: usize) -> Option<usize> {
    match len.checked_add(XDR_UNIT - 1) {
        Some(v) => Some(v & !(XDR_UNIT - 1)),
        None => None,
    }
}

/// [`xdr_roundup`] for 32-bit lengths, as they appear on the wire.
pub const fn xdr_roundup_u32(len: u32) -> Option<u32> {
    match len.checked_add(3) {
        Some(v) => Some(v & !3),
        None => None,
    }
}

/// Number of XDR roundup padding bytes that follow an item of `len` bytes:
/// 0 to 3 (C: `xdr_pad_size`). Never overflows.
pub const fn xdr_pad_size(len: u32) -> u32 {
    len.wrapping_neg() & 3
}

/// A cursor that decodes XDR items from a borrowed byte slice.
#[derive(Clone, Debug)]
pub struct XdrReader<'a> {
    rest: &'a [u8],
    total: usize,
}

impl<'a> XdrReader<'a> {
    /// Starts reading at the beginning of `buf`.
    pub const fn new(buf: &'a [u8]) -> Self {
        Self {
            rest: buf,
            total: buf.len(),
        }
    }

    /// Bytes consumed so far.
    pub const fn position(&self) -> usize {
        self.total.saturating_sub(self.rest.len())
    }

    /// Bytes not consumed yet.
    pub const fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// The bytes not consumed yet.
    pub const fn rest(&self) -> &'a [u8] {
        self.rest
    }

    /// Consumes and returns the next `n` bytes.
    #[inline]
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], XdrError> {
        // Not `split_at_checked`: the kernel's minimum Rust is 1.78.
        let head = self.rest.get(..n).ok_or(XdrError::Truncated)?;
        self.rest = self.rest.get(n..).ok_or(XdrError::Truncated)?;
        Ok(head)
    }

    /// Consumes the next `N` bytes as an array.
    #[inline]
    fn take_array<const N: usize>(&mut self) -> Result<&'a [u8; N], XdrError> {
        let (head, tail) = self
            .rest
            .split_first_chunk::<N>()
            .ok_or(XdrError::Truncated)?;
        self.rest = tail;
        Ok(head)
    }

    /// Decodes an unsigned 32-bit integer.
    #[inline]
    pub fn get_u32(&mut self) -> Result<u32, XdrError> {
        self.take_array::<4>().map(|b| u32::from_be_bytes(*b))
    }

    /// Decodes an unsigned hyper (64-bit) integer.
    #[inline]
    pub fn get_u64(&mut self) -> Result<u64, XdrError> {
        self.take_array::<8>().map(|b| u64::from_be_bytes(*b))
    }
}

/// A cursor that encodes XDR items into a caller-provided byte slice.
#[derive(Debug)]
pub struct XdrWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> XdrWriter<'a> {
    /// Starts writing at the beginning of `buf`.
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, len: 0 }
    }

    /// Bytes written so far.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// True when nothing has been written yet.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Room left in the buffer.
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.len)
    }

    /// Appends raw bytes.
    #[inline]
    pub fn put_bytes(&mut self, bytes: &[u8]) -> Result<(), XdrError> {
        let end = self.len.checked_add(bytes.len()).ok_or(XdrError::NoSpace)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(XdrError::NoSpace)?;
        dst.copy_from_slice(bytes);
        self.len = end;
        Ok(())
    }

    /// Encodes an unsigned 32-bit integer.
    #[inline]
    pub fn put_u32(&mut self, v: u32) -> Result<(), XdrError> {
        self.put_bytes(&v.to_be_bytes())
    }

    /// Encodes an unsigned hyper (64-bit) integer.
    #[inline]
    pub fn put_u64(&mut self, v: u64) -> Result<(), XdrError> {
        self.put_bytes(&v.to_be_bytes())
    }

    /// Reserves one word whose value is not known yet (a counted array's
    /// count, say) and returns its byte offset for [`Self::set_u32_at`].
    pub fn reserve_u32(&mut self) -> Result<usize, XdrError> {
        let at = self.len;
        self.put_u32(0)?;
        Ok(at)
    }

    /// Overwrites a word already written, at byte offset `at`.
    pub fn set_u32_at(&mut self, at: usize, v: u32) -> Result<(), XdrError> {
        let end = at.checked_add(4).ok_or(XdrError::NoSpace)?;
        if end > self.len {
            return Err(XdrError::NoSpace);
        }
        let dst = self.buf.get_mut(at..end).ok_or(XdrError::NoSpace)?;
        dst.copy_from_slice(&v.to_be_bytes());
        Ok(())
    }
}
