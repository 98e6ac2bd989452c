// SPDX-License-Identifier: GPL-2.0

//! An RDMA device (`struct ib_device`), and the references that keep one
//! registered ([`ARef<Device>`]).

use crate::bindings;
use core::ptr::NonNull;
use kernel::{
    str::CStr,
    types::{AlwaysRefCounted, Opaque},
};

/// An RDMA device known to the RDMA core.
///
/// An [`ARef<Device>`] holds a registration reference (what
/// `ib_device_try_get` takes): `ib_unregister_device` waits until every one
/// is put, so the device stays registered, its driver operations and DMA
/// device valid, for as long as the reference exists. Everything DMA-mapped
/// for a device, and every verbs object made on it, holds one.
///
/// # Invariants
///
/// A `&Device` is only made while the RDMA core guarantees the device is
/// allocated, its driver operations valid and its registration count not
/// zero: inside an `ib_client` callback for it (during `remove` it is
/// already unregistered, but its count is put only after every client's
/// `remove`), while an `rdma_cm_id` bound to it exists (the connection
/// manager's own `remove` waits for every such identifier), or through an
/// [`ARef<Device>`].
#[repr(transparent)]
pub(crate) struct Device(Opaque<bindings::ib_device>);

// SAFETY: The functions called on a device do their own locking, and a
// registration reference may be taken and put from any thread.
unsafe impl Send for Device {}
// SAFETY: As above.
unsafe impl Sync for Device {}

// SAFETY: A registration reference keeps the device registered, and so
// allocated (`ib_dealloc_device` follows unregistration); every
// `ib_device` is counted so.
unsafe impl AlwaysRefCounted for Device {
    fn inc_ref(&self) {
        // SAFETY: The count is not zero while a `&Device` exists (type
        // invariant), so this is a registration reference like
        // `ib_device_try_get`'s.
        unsafe { bindings::rpcrdma_rs_ib_device_get(self.as_raw()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // CAST: `Device` is a transparent wrapper of `ib_device`.
        // SAFETY: The caller gives up a reference taken by `inc_ref`.
        unsafe { bindings::rpcrdma_rs_ib_device_put(obj.as_ptr().cast()) };
    }
}

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

    /// Whether the device refuses an invalidation the peer asks for (Send
    /// With Invalidate) of a key until the REG_MR that sets the key has
    /// run, as rxe does by comparing the whole key. siw does not:
    /// `siw_invalidate_stag` looks up the region by the key's index
    /// (`stag >> 8`) and clears it whatever its key byte and state, and
    /// siw runs a posted REG_MR later, from its send-queue thread. A peer
    /// that predicts the next key can then invalidate a region before its
    /// REG_MR runs, which makes it reachable again under the key the peer
    /// named, while the Receive says the peer invalidated it.
    pub(crate) fn invalidation_checks_key(&self) -> bool {
        // SAFETY: The device is allocated and its driver operations valid
        // (type invariant).
        !unsafe { bindings::rpcrdma_rs_ib_device_is_siw(self.as_raw()) }
    }

    /// How many RDMA Read requests one QP of this device can answer at
    /// once (`attrs.max_qp_rd_atom`).
    pub(crate) fn max_qp_rd_atom(&self) -> u32 {
        // SAFETY: The device is allocated (type invariant).
        unsafe { bindings::rpcrdma_rs_ib_device_max_qp_rd_atom(self.as_raw()) }
    }
}
