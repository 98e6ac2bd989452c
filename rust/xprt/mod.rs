// SPDX-License-Identifier: GPL-2.0

//! The RPC-over-RDMA transport: what the module sets up while loaded.
//!
//! The map to the C implementation (`net/sunrpc/xprtrdma/`) is file by
//! file where it can be: `ib_client.rs` here is `ib_client.c` there,
//! `transport.rs` is `transport.c` (its ops, as `sunrpc::XprtOps`; the C
//! entry points are `sunrpc`'s), `verbs.rs` is `verbs.c` (one connection:
//! its buffers, posts and completions), `connect.rs` is `verbs.c`'s
//! connection set-up with the RDMA connection manager, `marshal.rs` is
//! `rpc_rdma.c`, `frwr.rs` is `frwr_ops.c`, and `stats.rs` is `struct
//! rpcrdma_stats`. `probe.rs` (the debugfs `connect` probe) and
//! `witness.rs` (the reply-order witness) are test hooks, with no C
//! counterpart. The backchannel's C side is `include/`'s; what it
//! decides is in `verbs.rs` and `transport.rs`.

// The transport works through the safe wrappers of `rdma` and `sunrpc`.
#![forbid(unsafe_code)]

mod connect;
mod frwr;
mod ib_client;
mod marshal;
#[cfg(rpcrdma_rs_test_hooks)]
mod probe;
mod stats;
mod transport;
mod verbs;
#[cfg(rpcrdma_rs_test_hooks)]
mod witness;

use crate::{debugfs, rdma, sunrpc};
use kernel::{c_str, prelude::*, sync::Arc};

pub(crate) use ib_client::DeviceTracker;
#[cfg(rpcrdma_rs_test_hooks)]
pub(crate) use probe::ConnectProbe;
use transport::Registry;
pub(crate) use transport::XprtState;
#[cfg(rpcrdma_rs_test_hooks)]
use witness::WitnessReport;

/// Everything the module holds while loaded. Fields drop in order: the
/// class first (no new transport after it; it shares the registry with
/// them), the debugfs files (they read the tracker, the probe and the
/// registry), then the client registration; the directory goes with its
/// last file. The `connect` probe (`probe.rs`) and the `witness` report
/// (`witness.rs`) are test hooks, there only when built with
/// `rpcrdma_rs_test_hooks`.
pub(crate) struct Transport {
    _class: sunrpc::ClassRegistration<XprtState>,
    _xprts_file: Pin<KBox<debugfs::File<Registry>>>,
    #[cfg(rpcrdma_rs_test_hooks)]
    _connect_file: Pin<KBox<debugfs::File<ConnectProbe>>>,
    #[cfg(rpcrdma_rs_test_hooks)]
    _witness_file: Pin<KBox<debugfs::File<WitnessReport>>>,
    _devices_file: Pin<KBox<debugfs::File<DeviceTracker>>>,
    _devices: rdma::Registration<DeviceTracker>,
    _debugfs: debugfs::Dir,
}

impl Transport {
    /// Starts tracking RDMA devices, publishes the reports, and registers
    /// the `rdma` transport class with sunrpc.
    pub(crate) fn new() -> Result<Self> {
        // Everything that can fail is allocated before the first file
        // appears: an open file pins the module, even one whose init fails.
        #[cfg(rpcrdma_rs_test_hooks)]
        let probe = Arc::pin_init(ConnectProbe::new(), GFP_KERNEL)?;
        #[cfg(rpcrdma_rs_test_hooks)]
        let witness = Arc::new(WitnessReport, GFP_KERNEL)?;
        let registry = Arc::pin_init(Registry::new(), GFP_KERNEL)?;
        let debugfs = debugfs::Dir::new(c_str!("rpcrdma_rs"))?;
        let tracker = Arc::pin_init(DeviceTracker::new(), GFP_KERNEL)?;
        let devices = rdma::Registration::new(tracker)?;
        let devices_file = debugfs::File::new(c_str!("devices"), &debugfs, devices.data().clone())?;
        #[cfg(rpcrdma_rs_test_hooks)]
        let connect_file = debugfs::File::new(c_str!("connect"), &debugfs, probe)?;
        #[cfg(rpcrdma_rs_test_hooks)]
        let witness_file = debugfs::File::new(c_str!("witness"), &debugfs, witness)?;
        // The harness takes this file as the sign that the class exists.
        let xprts_file = debugfs::File::new(c_str!("xprts"), &debugfs, registry.clone())?;
        let class = sunrpc::ClassRegistration::new(registry)?;
        Ok(Self {
            _class: class,
            _xprts_file: xprts_file,
            #[cfg(rpcrdma_rs_test_hooks)]
            _connect_file: connect_file,
            #[cfg(rpcrdma_rs_test_hooks)]
            _witness_file: witness_file,
            _devices_file: devices_file,
            _devices: devices,
            _debugfs: debugfs,
        })
    }
}
