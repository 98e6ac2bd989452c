// SPDX-License-Identifier: GPL-2.0

//! RPC-over-RDMA version 1 transport for the kernel's sunrpc layer.
//!
//! The crate is layered, each layer in its own folder:
//!
//! - [`bindings`]: generated C declarations; only the wrappers use them.
//! - [`rdma`], [`debugfs`]: safe wrappers for the RDMA core and debugfs.
//! - [`proto`]: the wire protocol (RFC 8166, RFC 8797) in plain `core` Rust,
//!   also built on the host for tests and fuzzing.
//! - [`sunrpc`]: safe wrappers for sunrpc, and the C entry points of the
//!   transport class, made here for the transport's state type.
//! - [`xprt`]: the transport itself.

// `pin_init!` of the QP's many fields recurses deeper than the default.
#![recursion_limit = "256"]

use kernel::prelude::*;

mod bindings;
mod debugfs;
mod errno;
pub mod proto;
mod rdma;
mod sunrpc;
mod xprt;

// The `rpcrdma_rs_op_*` functions the C ops table calls.
// SAFETY: `XprtState` uses the `Xprt` it is lent through itself, its
// endpoint (`EpShared`, the connection identifier's context, buffers and
// regions) and `last`, and in the debugfs report under the registry lock.
// `XprtState::detach` closes the connection, which drops the endpoint and
// waits for its completions, and takes the state out of the registry under
// that lock, before it returns.
sunrpc::class_ops!(unsafe xprt::XprtState);

module! {
    type: RpcrdmaRs,
    name: "rpcrdma_rs",
    author: "The rpcrdma-rs developers",
    description: "RPC-over-RDMA transport for sunrpc, in Rust",
    license: "GPL",
}

struct RpcrdmaRs {
    _transport: xprt::Transport,
}

impl kernel::Module for RpcrdmaRs {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let transport = xprt::Transport::new()?;
        pr_info!("loaded\n");
        Ok(RpcrdmaRs {
            _transport: transport,
        })
    }
}

impl Drop for RpcrdmaRs {
    fn drop(&mut self) {
        pr_info!("unloading\n");
    }
}
