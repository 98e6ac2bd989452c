// SPDX-License-Identifier: GPL-2.0

//! Generated bindings for the C the module calls.
//!
//! `generated.rs` is written at build time by bindgen from
//! `include/rpcrdma_rs_bindings.h` (see `Kbuild`). Nothing outside the
//! wrapper modules (`rdma`, `sunrpc`, `debugfs`, and `errno`, which names
//! the errnos the kernel crate lacks) may use these directly: they are raw
//! C with every obligation left to the caller. The transport (`xprt`)
//! forbids `unsafe` and names no item of them.

#![allow(
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    dead_code,
    improper_ctypes,
    missing_docs,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    unnecessary_transmutes
)]

use kernel::ffi;

// Manual definitions of the types the kernel's bindgen_parameters blocklist.
type __kernel_size_t = usize;
type __kernel_ssize_t = isize;
type __kernel_ptrdiff_t = isize;

include!("generated.rs");
