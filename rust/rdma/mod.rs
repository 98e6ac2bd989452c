// SPDX-License-Identifier: GPL-2.0

//! Safe wrappers for the kernel's RDMA core (`ib_core`, `rdma_cm`).
//!
//! Only this layer (and the other wrapper layers) touches the generated
//! bindings; the transport sees Rust types with their rules written down.

pub(crate) mod buffer;
pub(crate) mod client;
pub(crate) mod cm;
pub(crate) mod device;
pub(crate) mod mr;

pub(crate) use buffer::{Completion, CompletionHandler, HeldRecv, Received, WorkBuf};
pub(crate) use client::{Client, Registration};
pub(crate) use cm::{CmEvent, CmEventKind, CmHandler, CmId, ConnParam, QpCaps, QpHandle, SockAddr};
pub(crate) use device::Device;
pub(crate) use mr::{FrwrAttrs, Mr, MrHandler, Piece};
