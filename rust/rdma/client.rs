// SPDX-License-Identifier: GPL-2.0

//! RDMA core clients (`struct ib_client`): told of every RDMA device as it
//! is added and before it is removed.

use super::Device;
use crate::bindings;
use core::{
    ptr,
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{
    error::{from_result, to_result},
    ffi::{c_int, c_void},
    prelude::*,
    str::CStr,
    sync::Arc,
    types::{ForeignOwnable, Opaque},
};

/// What an RDMA core client does when devices come and go.
pub(crate) trait Client: Send + Sync + Sized + 'static {
    /// The client's name in the RDMA core.
    const NAME: &'static CStr;

    /// What the client keeps for each device it accepted.
    type DeviceData: ForeignOwnable + Send + Sync;

    /// A device appeared (or existed when the client registered). An error
    /// means the client ignores this device: `remove` is not called for it.
    fn add(&self, device: &Device) -> Result<Self::DeviceData>;

    /// A device accepted by `add` is going away. On return, nothing of the
    /// client may use the device any more.
    fn remove(&self, device: &Device, data: Self::DeviceData);
}

/// The registration whose callbacks are live. The C `ib_client` callbacks
/// carry no context, so the one registration is found here; an `ib_client`
/// is module-wide, and only one [`Registration`] may exist at a time.
static ACTIVE: AtomicPtr<c_void> = AtomicPtr::new(ptr::null_mut());

#[pin_data]
struct Inner<T: Client> {
    #[pin]
    client: Opaque<bindings::ib_client>,
    data: Arc<T>,
}

/// A registered RDMA core client; unregistered on drop.
///
/// # Invariants
///
/// `inner.client` is registered with the RDMA core, and [`ACTIVE`] points
/// to `inner`, until `drop`.
pub(crate) struct Registration<T: Client> {
    inner: Pin<KBox<Inner<T>>>,
}

// SAFETY: After initialisation the `ib_client` is read and written only by
// the RDMA core, under its own locking; Rust keeps just its address. `T` is
// `Send + Sync`.
unsafe impl<T: Client> Send for Registration<T> {}
// SAFETY: `&Registration` gives access to `&T` only, and `T` is `Sync`.
unsafe impl<T: Client> Sync for Registration<T> {}

impl<T: Client> Registration<T> {
    /// Registers `data` as the module's RDMA core client. `add` is called
    /// for every device already present before this returns.
    pub(crate) fn new(data: Arc<T>) -> Result<Self> {
        let inner = KBox::pin_init(
            pin_init!(Inner {
                client <- Opaque::ffi_init(|slot: *mut bindings::ib_client| {
                    // SAFETY: `slot` is valid for writes. An all-zero
                    // `ib_client` is how C declares one before it is
                    // registered (static storage), so zero then fill in.
                    unsafe {
                        slot.write_bytes(0, 1);
                        (*slot).name = T::NAME.as_char_ptr();
                        (*slot).add = Some(add_callback::<T>);
                        (*slot).remove = Some(remove_callback::<T>);
                    }
                }),
                data,
            }),
            GFP_KERNEL,
        )?;
        let raw = ptr::from_ref::<Inner<T>>(&inner)
            .cast_mut()
            .cast::<c_void>();
        ACTIVE
            .compare_exchange(ptr::null_mut(), raw, Ordering::AcqRel, Ordering::Acquire)
            .map_err(|_| EBUSY)?;
        // SAFETY: `client` is pinned and initialised, and lives until `drop`
        // unregisters it; the callbacks find `inner` through `ACTIVE`.
        let ret = unsafe { bindings::ib_register_client(inner.client.get()) };
        if let Err(e) = to_result(ret) {
            ACTIVE.store(ptr::null_mut(), Ordering::Release);
            return Err(e);
        }
        // INVARIANT: registered, and `ACTIVE` points to `inner`.
        Ok(Self { inner })
    }

    /// The client's state.
    pub(crate) fn data(&self) -> &Arc<T> {
        &self.inner.data
    }
}

impl<T: Client> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: Registered by the type invariant. This calls `remove` for
        // every device still added and waits for callbacks in progress.
        unsafe { bindings::ib_unregister_client(self.inner.client.get()) };
        ACTIVE.store(ptr::null_mut(), Ordering::Release);
    }
}

/// The live registration of client type `T`.
///
/// # Safety
///
/// Only for `T`'s callbacks: they are installed in the `ib_client` of a
/// `Registration<T>` alone, which is what `ACTIVE` points to while the RDMA
/// core may call them.
unsafe fn active<'a, T: Client>() -> Result<&'a Inner<T>> {
    let raw = ACTIVE.load(Ordering::Acquire).cast::<Inner<T>>();
    if raw.is_null() {
        return Err(ENODEV);
    }
    // SAFETY: By the function's contract `raw` points to the live
    // `Inner<T>` of the registration the callback belongs to.
    Ok(unsafe { &*raw })
}

/// # Safety
///
/// Called by the RDMA core with a device being added.
unsafe extern "C" fn add_callback<T: Client>(ibdev: *mut bindings::ib_device) -> c_int {
    from_result(|| {
        // SAFETY: A callback of `T`'s registration.
        let inner = unsafe { active::<T>() }?;
        // SAFETY: The device is registered for the duration of the callback.
        let device = unsafe { Device::from_raw(ibdev) };
        let data = inner.data.add(device)?;
        // SAFETY: `client` is registered; the RDMA core keeps the pointer
        // and hands it back to `remove_callback` exactly once.
        unsafe {
            bindings::ib_set_client_data(ibdev, inner.client.get(), data.into_foreign().cast_mut())
        };
        Ok(0)
    })
}

/// # Safety
///
/// Called by the RDMA core with a device being removed and the data that
/// `add_callback` stored for it.
unsafe extern "C" fn remove_callback<T: Client>(
    ibdev: *mut bindings::ib_device,
    data: *mut c_void,
) {
    if data.is_null() {
        return;
    }
    // SAFETY: `data` came from `into_foreign` in `add_callback`, and the RDMA
    // core passes it here once.
    let data = unsafe { T::DeviceData::from_foreign(data) };
    // SAFETY: A callback of `T`'s registration.
    let Ok(inner) = (unsafe { active::<T>() }) else {
        return;
    };
    // SAFETY: The device is registered until this callback returns.
    let device = unsafe { Device::from_raw(ibdev) };
    inner.data.remove(device, data);
}
