// SPDX-License-Identifier: GPL-2.0

//! Host build of the rpcrdma-rs protocol core: the files under
//! `rust/proto/` compiled as an ordinary `no_std` library so they can be
//! unit-tested, property-tested, fuzzed and benchmarked outside the kernel.

#![no_std]

#[path = "../proto/mod.rs"]
pub mod proto;
