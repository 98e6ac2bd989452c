// SPDX-License-Identifier: GPL-2.0

//! The module parameters (`include/rpcrdma_rs_params.c`), the C transport's
//! `/proc/sys/sunrpc/rdma_*` sysctls: the C file declares them, keeps them
//! within C's bounds, and shows them in `/sys/module/rpcrdma_rs/parameters/`.
//! Each function here returns the value now: it may change between two
//! calls, so a caller reads it once for what it sets up. The test hooks'
//! `fail_*` take one from their count instead.

use crate::bindings;

/// Largest reply received inline, in bytes: the receive size offered in
/// RFC 8797 private data (C: `xprt_rdma_max_inline_read`), 1024 to 65536.
pub(crate) fn max_inline_read() -> u32 {
    // SAFETY: A plain read of the parameter; no precondition.
    unsafe { bindings::rpcrdma_rs_param_max_inline_read() }
}

/// Largest Call sent inline, in bytes: the send size offered in RFC 8797
/// private data (C: `xprt_rdma_max_inline_write`), 1024 to 65536.
pub(crate) fn max_inline_write() -> u32 {
    // SAFETY: A plain read of the parameter; no precondition.
    unsafe { bindings::rpcrdma_rs_param_max_inline_write() }
}

/// The slot table size a new transport gets (C:
/// `xprt_rdma_slot_table_entries`), 4 to 16384. The C `setup` reads it for
/// the transport, whose own is [`super::Xprt::max_reqs`] from then on; in
/// Rust only the connection probe, which has no transport, asks.
#[cfg(rpcrdma_rs_test_hooks)]
pub(crate) fn slot_table_entries() -> u32 {
    // SAFETY: A plain read of the parameter; no precondition.
    unsafe { bindings::rpcrdma_rs_param_slot_table_entries() }
}

/// A test hook: new connections act as if the server sent no RFC 8797
/// private data.
#[cfg(rpcrdma_rs_test_hooks)]
pub(crate) fn ignore_peer_private() -> bool {
    // SAFETY: A plain read of the parameter; no precondition.
    unsafe { bindings::rpcrdma_rs_param_ignore_peer_private() }
}

/// Without the test hooks there is no such parameter: the server's private
/// data always counts.
#[cfg(not(rpcrdma_rs_test_hooks))]
pub(crate) fn ignore_peer_private() -> bool {
    false
}

/// A test hook: true, taking one, while the next connection attempts are
/// to fail as for want of memory (`fail_connects`).
#[cfg(rpcrdma_rs_test_hooks)]
pub(crate) fn fail_connect() -> bool {
    // SAFETY: An atomic update of the parameter; no precondition.
    unsafe { bindings::rpcrdma_rs_param_fail_connect() }
}

/// Without the test hooks no connection attempt is failed on purpose.
#[cfg(not(rpcrdma_rs_test_hooks))]
pub(crate) fn fail_connect() -> bool {
    false
}

/// A test hook: true, taking one, while the next mappings of a chunk's
/// region are to fail as a DMA mapping does (`fail_maps`).
#[cfg(rpcrdma_rs_test_hooks)]
pub(crate) fn fail_map() -> bool {
    // SAFETY: An atomic update of the parameter; no precondition.
    unsafe { bindings::rpcrdma_rs_param_fail_map() }
}

/// Without the test hooks no mapping is failed on purpose.
#[cfg(not(rpcrdma_rs_test_hooks))]
pub(crate) fn fail_map() -> bool {
    false
}
