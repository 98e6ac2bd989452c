// SPDX-License-Identifier: GPL-2.0

//! RDMA device lifetime: which devices exist, so that transports using a
//! device can be told when it is removed (the C `ib_client.c`); a removal
//! is traced (`rpcrdma_rs:rpcrdma_rs_device_removal`).

use crate::{
    debugfs::{self, seq_print, SeqFile},
    rdma::{self, Device},
    sunrpc::trace,
};
use kernel::{
    c_str, new_mutex,
    prelude::*,
    rbtree::RBTree,
    str::{CStr, CString},
    sync::{Arc, Mutex},
};

/// An RDMA device the module knows of.
pub(crate) struct TrackedDevice {
    index: u32,
    name: CString,
}

/// The RDMA devices present, in the order the RDMA core indexed them.
#[pin_data]
pub(crate) struct DeviceTracker {
    #[pin]
    devices: Mutex<RBTree<u32, Arc<TrackedDevice>>>,
}

impl DeviceTracker {
    /// An empty tracker.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            devices <- new_mutex!(RBTree::new(), "DeviceTracker::devices"),
        })
    }
}

impl rdma::Client for DeviceTracker {
    const NAME: &'static CStr = c_str!("rpcrdma_rs");
    type DeviceData = Arc<TrackedDevice>;

    fn add(&self, device: &Device) -> Result<Arc<TrackedDevice>> {
        let tracked = Arc::new(
            TrackedDevice {
                index: device.index(),
                name: CString::try_from(device.name())?,
            },
            GFP_KERNEL,
        )?;
        self.devices
            .lock()
            .try_create_and_insert(tracked.index, tracked.clone(), GFP_KERNEL)?;
        pr_info!("RDMA device {} added\n", device.name());
        Ok(tracked)
    }

    /// The device is going away: the connections through it are told
    /// next, by their connection manager (`DEVICE_REMOVAL`).
    fn remove(&self, device: &Device, data: Arc<TrackedDevice>) {
        trace::device_removal(device.name(), data.index);
        self.devices.lock().remove(&data.index);
        pr_info!("RDMA device {} removed\n", device.name());
    }
}

impl debugfs::Show for DeviceTracker {
    fn show(&self, m: &SeqFile) -> Result {
        for (index, device) in self.devices.lock().iter() {
            seq_print!(m, "{} {}\n", index, &*device.name);
        }
        Ok(())
    }
}
