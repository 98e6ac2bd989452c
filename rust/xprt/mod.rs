// SPDX-License-Identifier: GPL-2.0

//! The RPC-over-RDMA transport: what the module sets up while loaded.
//!
//! The map to the C implementation (`net/sunrpc/xprtrdma/`) is file by
//! file where it can be: `ib_client.rs` here is `ib_client.c` there.

mod connect;
mod ib_client;

use crate::{debugfs, rdma};
use kernel::{c_str, prelude::*, sync::Arc};

pub(crate) use connect::ConnectProbe;
pub(crate) use ib_client::DeviceTracker;

/// Everything the module holds while loaded. Fields drop in order: the
/// debugfs files first (they read the tracker and the probe), then the
/// client registration; the directory goes with its last file.
pub(crate) struct Transport {
    _connect_file: Pin<KBox<debugfs::File<ConnectProbe>>>,
    _devices_file: Pin<KBox<debugfs::File<DeviceTracker>>>,
    _devices: rdma::Registration<DeviceTracker>,
    _debugfs: debugfs::Dir,
}

impl Transport {
    /// Starts tracking RDMA devices and publishes the report.
    pub(crate) fn new() -> Result<Self> {
        // Everything that can fail is allocated before the first file
        // appears: an open file pins the module, even one whose init fails.
        let probe = Arc::pin_init(ConnectProbe::new(), GFP_KERNEL)?;
        let debugfs = debugfs::Dir::new(c_str!("rpcrdma_rs"))?;
        let tracker = Arc::pin_init(DeviceTracker::new(), GFP_KERNEL)?;
        let devices = rdma::Registration::new(tracker)?;
        let devices_file = debugfs::File::new(c_str!("devices"), &debugfs, devices.data().clone())?;
        let connect_file = debugfs::File::new(c_str!("connect"), &debugfs, probe)?;
        Ok(Self {
            _connect_file: connect_file,
            _devices_file: devices_file,
            _devices: devices,
            _debugfs: debugfs,
        })
    }
}
