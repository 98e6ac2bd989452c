// SPDX-License-Identifier: GPL-2.0

//! RDMA-CM private data for RPC-over-RDMA version 1 (RFC 8797) and the
//! inline thresholds a connection ends up with.
//!
//! ```text
//!  0                   1                   2                   3
//! +---------------------------------------------------------------+
//! |                 Format Identifier 0xf6ab0e18                  |
//! +---------------+-------------+-+---------------+---------------+
//! |  Version (1)  |  Reserved   |R|   Send Size   | Receive Size  |
//! +---------------+-------------+-+---------------+---------------+
//! ```
//!
//! Sizes are encoded as `bytes / 1024 - 1`, so 0..=255 stand for
//! 1 KiB..=256 KiB (RFC 8797, section 4.2).
//!
//! Negotiation is stateless: every (re)connection calls [`negotiate`] with
//! whatever private data the new connection brought (RFC 8797, section 4:
//! the settings "MUST" be allowed to change on reconnection).

use super::DEFAULT_INLINE_SIZE;

/// The Format Identifier (RFC 8797, section 4; C: `rpcrdma_cmp_magic`).
pub const FORMAT_ID: u32 = 0xf6ab_0e18;
/// The only message format version defined (C: `RPCRDMA_CMP_VERSION`).
pub const VERSION: u8 = 1;
/// Flags bit 0, "R": the sender supports remote invalidation
/// (C: `RPCRDMA_CMP_F_SND_W_INV_OK`).
pub const FLAG_REMOTE_INVALIDATION: u8 = 1;
/// Length of a version 1 message in octets.
pub const LEN: usize = 8;

const FORMAT_ID_BYTES: [u8; 4] = FORMAT_ID.to_be_bytes();

/// Encodes an inline size in bytes as a Size field (RFC 8797, section 4.2:
/// divide by 1024, subtract one).
///
/// C's `rpcrdma_encode_buffer_size` does `(size >> 10) - 1` in 8 bits, which
/// wraps to 255 (256 KiB) for sizes under 1 KiB and keeps only the low 8
/// bits above 256 KiB. Here sizes are clamped instead: anything under
/// 2 KiB encodes as 0 (1 KiB, the minimum every peer supports) and anything
/// at or above 256 KiB as 255. Sizes between round down to whole KiB, so
/// the advertised value never exceeds the real buffer.
pub const fn encode_size(bytes: u32) -> u8 {
    let kib = bytes / 1024;
    if kib == 0 {
        0
    } else if kib >= 256 {
        255
    } else {
        // 1..=255 minus one fits a u8; `as` cannot truncate here.
        kib.saturating_sub(1) as u8
    }
}

/// Decodes a Size field to bytes: `(code + 1) * 1024`, 1 KiB to 256 KiB
/// (C: `rpcrdma_decode_buffer_size`).
pub const fn decode_size(code: u8) -> u32 {
    // At most 256 * 1024: cannot overflow.
    (code as u32).saturating_add(1).saturating_mul(1024)
}

/// One RFC 8797 version 1 message, field by field as on the wire.
///
/// The raw flags octet (reserved bits included) and the raw Size codes are
/// kept so that a received message re-encodes to the same bytes; receivers
/// ignore the reserved bits, as RFC 8797 section 4 requires, through
/// [`Self::remote_invalidation`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PrivateData {
    /// The flags octet: bit 0 is R, the other seven are reserved.
    pub flags: u8,
    /// Encoded Send Size.
    pub send_code: u8,
    /// Encoded Receive Size.
    pub recv_code: u8,
}

impl PrivateData {
    /// What a peer that sent no valid private data is taken to have sent:
    /// flags zero and both Size fields zero, i.e. 1 KiB each way with no
    /// remote invalidation (RFC 8797, section 5.1).
    pub const ABSENT: Self = Self {
        flags: 0,
        send_code: 0,
        recv_code: 0,
    };

    /// Our own message: sizes in bytes (see [`encode_size`] for the rounding)
    /// and whether we accept Send With Invalidate.
    pub const fn new(send_size: u32, recv_size: u32, remote_invalidation: bool) -> Self {
        Self {
            flags: if remote_invalidation {
                FLAG_REMOTE_INVALIDATION
            } else {
                0
            },
            send_code: encode_size(send_size),
            recv_code: encode_size(recv_size),
        }
    }

    /// The most bytes the sender will put in one Send.
    pub const fn send_size(&self) -> u32 {
        decode_size(self.send_code)
    }

    /// The most bytes the sender can take in one Receive.
    pub const fn recv_size(&self) -> u32 {
        decode_size(self.recv_code)
    }

    /// The R bit: the sender can be sent Send With Invalidate.
    pub const fn remote_invalidation(&self) -> bool {
        self.flags & FLAG_REMOTE_INVALIDATION != 0
    }

    /// The eight octets of the message.
    pub const fn to_bytes(&self) -> [u8; LEN] {
        let id = FORMAT_ID_BYTES;
        [
            id[0],
            id[1],
            id[2],
            id[3],
            VERSION,
            self.flags,
            self.send_code,
            self.recv_code,
        ]
    }

    /// Writes the message at the start of `out`; returns [`LEN`], or `None`
    /// when `out` is too short.
    pub fn encode(&self, out: &mut [u8]) -> Option<usize> {
        out.get_mut(..LEN)?.copy_from_slice(&self.to_bytes());
        Some(LEN)
    }

    /// Parses a message that starts exactly at the start of `buf`: the
    /// Format Identifier, a recognised version, and all eight octets inside
    /// `buf` (RFC 8797, section 5.2).
    pub fn parse_at_start(buf: &[u8]) -> Option<Self> {
        let msg = buf.first_chunk::<LEN>()?;
        let [i0, i1, i2, i3, version, flags, send_code, recv_code] = *msg;
        if [i0, i1, i2, i3] != FORMAT_ID_BYTES || version != VERSION {
            return None;
        }
        Some(Self {
            flags,
            send_code,
            recv_code,
        })
    }
}

/// Searches a received private data buffer for a version 1 message, as
/// RFC 8797 section 5.2 says: the Format Identifier may sit at any offset
/// with any alignment (other layers, MPAv2 for one, may put their own data
/// first); the version must be one we recognise (1) and the eight octets
/// must not overrun the buffer.
///
/// Returns the offset of the first occurrence that passes those checks and
/// the message found there. An occurrence that fails them (a wrong version,
/// or too close to the end) is taken to be other data that happens to
/// contain the identifier, and the search goes on past its first octet;
/// RFC 8797 leaves this open, and it lets a real message that follows such
/// bytes still be found.
///
/// C's `rpcrdma_update_cm_private` looks only at offset 0, and does not
/// check the buffer's length.
pub fn find(buf: &[u8]) -> Option<(usize, PrivateData)> {
    buf.windows(LEN)
        .enumerate()
        .find_map(|(off, w)| PrivateData::parse_at_start(w).map(|pd| (off, pd)))
}

/// The peer's private data as RFC 8797 section 5 says to treat it: the
/// message [`find`] locates, or [`PrivateData::ABSENT`] when there is none.
pub fn decode(buf: &[u8]) -> PrivateData {
    find(buf).map_or(PrivateData::ABSENT, |(_, pd)| pd)
}

/// Why a private data buffer holds no version 1 message (see [`find`]),
/// for the line that reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Absence {
    /// The peer sent no private data at all (or only zeros: InfiniBand's
    /// CM pads what was sent to 196 octets with them).
    Empty,
    /// No Format Identifier anywhere in the buffer of `len` octets.
    NoFormatId {
        /// The buffer's length.
        len: usize,
    },
    /// The first Format Identifier is followed by a version other than 1.
    Version(u8),
    /// The first Format Identifier has fewer than [`LEN`] octets left in
    /// the buffer.
    Truncated,
}

impl core::fmt::Display for Absence {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Empty => f.write_str("none sent"),
            Self::NoFormatId { len } => write!(f, "no format identifier in {len} octets"),
            Self::Version(v) => write!(f, "version {v}, not {VERSION}"),
            Self::Truncated => f.write_str("message cut short"),
        }
    }
}

/// Why [`find`] finds no message in `buf`, or `None` when it finds one.
/// Of several occurrences of the Format Identifier, the first one says
/// why.
pub fn absence(buf: &[u8]) -> Option<Absence> {
    if find(buf).is_some() {
        return None;
    }
    // InfiniBand's CM pads what was sent to 196 octets with zeros.
    if buf.iter().all(|&b| b == 0) {
        return Some(Absence::Empty);
    }
    let Some(off) = buf.windows(4).position(|w| w == FORMAT_ID_BYTES) else {
        return Some(Absence::NoFormatId { len: buf.len() });
    };
    match buf.get(off.saturating_add(4)) {
        Some(&v) if v != VERSION => Some(Absence::Version(v)),
        _ => Some(Absence::Truncated),
    }
}

/// Our side's settings for a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LocalSettings {
    /// Largest Send we can post, in bytes: the kernel module's
    /// `max_inline_write` parameter (C: `xprt_rdma_max_inline_write`, the
    /// `rdma_max_inline_write` sysctl), 1 KiB to 64 KiB, not necessarily a
    /// multiple of 1 KiB.
    pub send_size: u32,
    /// Size of our posted Receive buffers, in bytes: `max_inline_read`
    /// (C: `xprt_rdma_max_inline_read`), likewise.
    pub recv_size: u32,
    /// Whether we accept Send With Invalidate (the C client always does).
    pub remote_invalidation: bool,
}

impl LocalSettings {
    /// The private data we send when connecting (C: `rpcrdma_ep_create`
    /// fills `re_cm_private` the same way).
    pub const fn private_data(&self) -> PrivateData {
        PrivateData::new(self.send_size, self.recv_size, self.remote_invalidation)
    }
}

/// The properties of one established connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Negotiated {
    /// The call (requester-to-responder) inline threshold: the most bytes
    /// one of our Sends may carry, transport header included
    /// (C: `re_inline_send`).
    pub inline_send: u32,
    /// The reply inline threshold: the most bytes one of the peer's Sends
    /// may carry to us (C: `re_inline_recv`).
    pub inline_recv: u32,
    /// Whether the Responder may use Send With Invalidate: both sides set
    /// R (RFC 8797, section 4.1).
    pub remote_invalidation: bool,
    /// The peer's message, if it sent a valid one.
    pub peer: Option<PrivateData>,
}

/// Computes a connection's inline thresholds from our settings and the
/// private data the peer sent (`None`, or a buffer without a valid message,
/// when it sent none).
///
/// - call threshold = min(our send size, peer's receive size)
/// - reply threshold = min(our receive size, peer's send size)
///
/// (RFC 8797, section 4.2), with the peer's sizes taken as 1024 bytes when
/// it sent nothing valid (RFC 8797, section 5.1). This is what C's
/// `rpcrdma_update_cm_private` computes, with these differences:
///
/// - the message is searched for at any offset (see [`find`]), not only at
///   offset 0, and must fit in the buffer;
/// - remote invalidation is reported as in use only when both sides set R
///   (RFC 8797, section 4.1). The C client never looks at the peer's R: it
///   advertises R and handles any Send With Invalidate that arrives. The
///   Linux server sends R clear (`svc_rdma_accept`: `cp_flags = 0`) yet
///   uses Send With Invalidate whenever the client set R, so this flag is
///   false against it. A transport must therefore handle an invalidation
///   reported by the Receive completion whatever this flag says, and use
///   the flag only as information.
///
/// Our own sizes are used as given, also when they are not a multiple of
/// 1 KiB, as C uses its sysctl values: the private data we send says them
/// rounded down to whole KiB ([`encode_size`], which for sizes of 1 KiB
/// to 64 KiB is C's `(size >> 10) - 1`), while our thresholds are at most
/// the exact sizes. (The kernel transport rounds its module parameters
/// down to whole KiB before it calls this, so that what it offers and
/// what it expects agree.)
pub fn negotiate(local: &LocalSettings, peer_buf: Option<&[u8]>) -> Negotiated {
    let peer = peer_buf.and_then(find).map(|(_, pd)| pd);
    let (peer_send, peer_recv, peer_rinv) = match &peer {
        Some(pd) => (pd.send_size(), pd.recv_size(), pd.remote_invalidation()),
        None => (DEFAULT_INLINE_SIZE, DEFAULT_INLINE_SIZE, false),
    };
    Negotiated {
        inline_send: local.send_size.min(peer_recv),
        inline_recv: local.recv_size.min(peer_send),
        remote_invalidation: local.remote_invalidation && peer_rinv,
        peer,
    }
}
