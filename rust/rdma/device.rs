// SPDX-License-Identifier: GPL-2.0

//! An RDMA device (`struct ib_device`).

use crate::bindings;
use kernel::{str::CStr, types::Opaque};

/// An RDMA device known to the RDMA core.
///
/// # Invariants
///
/// A `&Device` is only made while the RDMA core guarantees the device is
/// allocated and its driver operations valid: inside an `ib_client`
/// callback for it (during `remove` it is already unregistered, but not
/// yet torn down), or while an `rdma_cm_id` bound to it exists.
#[repr(transparent)]
pub(crate) struct Device(Opaque<bindings::ib_device>);

impl Device {
    /// Wraps a C `ib_device`.
    ///
    /// # Safety
    ///
    /// `ptr` must point to an `ib_device` that stays allocated, with valid
    /// driver operations, for the lifetime `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device) -> &'a Self {
        // CAST: `Device` is a transparent wrapper of `ib_device`.
        // SAFETY: Guaranteed by the caller.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The raw pointer, for the wrapper layer.
    pub(crate) fn as_raw(&self) -> *mut bindings::ib_device {
        self.0.get()
    }

    /// The device's name, e.g. `rxe0`.
    pub(crate) fn name(&self) -> &CStr {
        // SAFETY: The device is allocated (type invariant), so its name is a
        // valid NUL-terminated string. Like the C code, this reads it
        // without `devices_rwsem`: a concurrent rename may show either name.
        unsafe { CStr::from_char_ptr(bindings::rpcrdma_rs_ib_device_name(self.as_raw())) }
    }

    /// The RDMA core's index of the device, unique while it is registered.
    pub(crate) fn index(&self) -> u32 {
        // SAFETY: The device is allocated (type invariant).
        unsafe { bindings::rpcrdma_rs_ib_device_index(self.as_raw()) }
    }

    /// How many RDMA Read requests one QP of this device can answer at
    /// once (`attrs.max_qp_rd_atom`).
    pub(crate) fn max_qp_rd_atom(&self) -> u32 {
        // SAFETY: The device is allocated (type invariant).
        unsafe { bindings::rpcrdma_rs_ib_device_max_qp_rd_atom(self.as_raw()) }
    }
}
