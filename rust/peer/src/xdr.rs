// SPDX-License-Identifier: GPL-2.0

//! The few XDR items ONC RPC and NFSv3 need beyond the protocol core's
//! words: booleans, variable-length opaques and strings, and an encoder
//! that grows a `Vec`.

use rpcrdma_proto::proto::xdr::{xdr_pad_size, XdrError, XdrReader};

/// A decoder over one RPC message.
pub struct Dec<'a>(pub XdrReader<'a>);

impl<'a> Dec<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Self(XdrReader::new(buf))
    }

    pub fn u32(&mut self) -> Result<u32, XdrError> {
        self.0.get_u32()
    }

    pub fn u64(&mut self) -> Result<u64, XdrError> {
        self.0.get_u64()
    }

    /// An XDR bool: any non-zero word is true, as most servers take it.
    pub fn bool(&mut self) -> Result<bool, XdrError> {
        Ok(self.u32()? != 0)
    }

    /// Fixed-length opaque of `n` bytes (plus its pad).
    pub fn fixed(&mut self, n: usize) -> Result<&'a [u8], XdrError> {
        let data = self.0.take(n)?;
        let pad = xdr_pad_size(u32::try_from(n).map_err(|_| XdrError::Truncated)?);
        self.0.take(pad as usize)?;
        Ok(data)
    }

    /// Variable-length opaque of at most `max` bytes.
    pub fn opaque(&mut self, max: usize) -> Result<&'a [u8], XdrError> {
        let len = self.u32()? as usize;
        if len > max {
            return Err(XdrError::Truncated);
        }
        self.fixed(len)
    }

    #[cfg(test)]
    pub fn position(&self) -> usize {
        self.0.position()
    }
}

/// An encoder that appends to a `Vec`.
#[derive(Default)]
pub struct Enc(pub Vec<u8>);

impl Enc {
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.u32(u32::from(v))
    }

    /// Fixed-length opaque: the bytes and their pad.
    pub fn fixed(&mut self, b: &[u8]) -> &mut Self {
        self.0.extend_from_slice(b);
        let pad = xdr_pad_size(b.len() as u32) as usize;
        self.0.extend_from_slice(&[0u8; 3][..pad]);
        self
    }

    /// Variable-length opaque or string.
    pub fn opaque(&mut self, b: &[u8]) -> &mut Self {
        self.u32(b.len() as u32);
        self.fixed(b)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut e = Enc::default();
        e.u32(7)
            .u64(1 << 40)
            .bool(true)
            .opaque(b"abcde")
            .fixed(b"xy");
        assert_eq!(e.len(), 4 + 8 + 4 + 4 + 8 + 4);
        let mut d = Dec::new(&e.0);
        assert_eq!(d.u32().unwrap(), 7);
        assert_eq!(d.u64().unwrap(), 1 << 40);
        assert!(d.bool().unwrap());
        assert_eq!(d.opaque(16).unwrap(), b"abcde");
        assert_eq!(d.fixed(2).unwrap(), b"xy");
        assert_eq!(d.position(), e.len());
        assert!(d.u32().is_err());
    }

    #[test]
    fn opaque_limits() {
        let mut e = Enc::default();
        e.opaque(&[1; 9]);
        assert!(Dec::new(&e.0).opaque(8).is_err());
        // A length past the end of the message.
        let mut e = Enc::default();
        e.u32(100);
        assert!(Dec::new(&e.0).opaque(1000).is_err());
    }
}
