// SPDX-License-Identifier: GPL-2.0

//! RPC-over-RDMA protocol core: version 1 (RFC 8166, RFC 8797), and the
//! version 2 draft's header (draft-cel-nfsv4-rpcrdma-version-two-04).
//!
//! Everything here is plain `core` Rust: no allocation, no `unsafe`, and no
//! code path that can panic on any input. The same files are compiled into
//! the kernel module (as `crate::proto`) and into the host crate
//! `rpcrdma-proto` for unit tests, property tests, fuzzing and benchmarks,
//! so sibling modules are always named through `super::`.
//!
//! - [`xdr`]: bounds-checked big-endian XDR reader and writer.
//! - [`header`]: the transport header codec (RFC 8166, section 4).
//! - [`header2`]: the version 2 header codec: message direction, remote
//!   invalidation handle, the version 2 errors, RDMA2_OPTIONAL and the
//!   transport property operations.
//! - [`private_data`]: RDMA-CM private data and inline threshold
//!   negotiation (RFC 8797).
//! - [`chunks`]: the choice of chunk types for one RPC Call and its
//!   Reply (RFC 8166, section 3.5), as the Linux client makes it.
//! - [`credits`]: the requester's view of the responder's credit grant
//!   (RFC 8166, section 3.3.1).
//! - [`xid_index`]: a map from XID to record slot in a table the caller
//!   owns.
//! - [`version`]: which version a connection speaks (the version 2
//!   draft's negotiation, section 7), and what a transport remembers of
//!   its server's.

#![forbid(unsafe_code)]
// The kernel builds with overflow checks on and a panic is fatal there:
// let clippy prove that nothing here indexes, unwraps or overflows.
#![deny(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::unreachable,
    clippy::todo,
    clippy::unimplemented,
    clippy::float_arithmetic
)]

pub mod chunks;
pub mod credits;
pub mod header;
pub mod header2;
pub mod private_data;
pub mod version;
pub mod xdr;
pub mod xid_index;

/// The only RPC-over-RDMA version this code speaks (RFC 8166, section 4.2.2;
/// C: `RPCRDMA_VERSION`).
pub const RPCRDMA_VERSION: u32 = 1;

/// The inline threshold every version 1 peer must support, in bytes, and the
/// one assumed when a peer advertises nothing (RFC 8166, section 3.3.3;
/// C: `RPCRDMA_V1_DEF_INLINE_SIZE`).
pub const DEFAULT_INLINE_SIZE: u32 = 1024;

/// Largest inline threshold RFC 8797 private data can express: 256 KiB
/// (RFC 8797, section 4.2).
pub const MAX_INLINE_SIZE: u32 = 256 * 1024;

/// Size of one XDR unit in bytes (RFC 4506, section 3).
pub const XDR_UNIT: usize = 4;

/// Most RDMA segments the C client puts into one chunk list of a Call
/// (C: `RPCRDMA_MAX_HDR_SEGS`). A Write chunk may carry one more, the
/// XDR pad segment (see [`chunks::WritePlan`]).
pub const MAX_HDR_SEGS: u32 = 16;
