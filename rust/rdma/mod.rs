// SPDX-License-Identifier: GPL-2.0

//! Safe wrappers for the kernel's RDMA core (`ib_core`, `rdma_cm`).
//!
//! Only this layer (and the other wrapper layers) touches the generated
//! bindings; the transport sees Rust types with their rules written down,
//! and what the verbs require of their callers is kept by those types:
//!
//! - A [`Qp`](qp::Qp) holds its device registered and its PD allocated, and every
//!   buffer and memory region made for it holds the `Qp`: nothing mapped
//!   or registered for a device outlives it.
//! - Work requests are posted only through buffers and regions, on their
//!   own QP, and only while it is open; [`Qp::shutdown`](qp::Qp::shutdown) closes it to
//!   posting under the same lock before it drains and destroys it.
//! - A posted buffer belongs to its QP until its completion hands it back
//!   ([`SendBuf`], [`RecvBuf`], [`Received`]), or, for a Send posted
//!   unsignaled, the successful completion of a later signaled Send does
//!   ([`SentBatch`](buffer::SentBatch)), so it is never written, read or
//!   freed while the device may use it.
//! - A memory region's mapping is a token ([`Mapped`]); the region refuses
//!   to undo a mapping the peer may still reach, and a region that was
//!   posted is freed only after its QP is destroyed.
//! - What a region maps comes from a request's buffers only ([`Piece`]),
//!   or is a scratch buffer the region owns ([`Mr::map_pad`](mr::Mr::map_pad)).

pub(crate) mod buffer;
pub(crate) mod client;
pub(crate) mod cm;
pub(crate) mod device;
pub(crate) mod mr;
pub(crate) mod piece;
pub(crate) mod qp;

#[cfg(rpcrdma_rs_test_hooks)]
pub(crate) use buffer::CompletionInfo;
pub(crate) use buffer::{Completion, CompletionHandler, Received, RecvBuf, SendBuf, SentBatch};
pub(crate) use client::{Client, Registration};
pub(crate) use cm::{CmEvent, CmEventKind, CmHandler, CmId, ConnParam, NetNs, SockAddr};
pub(crate) use device::Device;
pub(crate) use mr::{
    post_local_invs, FrwrAttrs, Mapped, Mr, MrHandler, MrKey, RegChain, MAX_CHAIN, MAX_INV_CHAIN,
};
pub(crate) use piece::{Piece, Pieces};
pub(crate) use qp::{QpCaps, RemoteInvalidation};

/// A number no other object of this module gets: an identity that, unlike
/// an address, is not reused after the object is freed.
fn next_uid() -> u64 {
    static NEXT: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, core::sync::atomic::Ordering::Relaxed)
}
