// SPDX-License-Identifier: GPL-2.0

//! The transport class as sunrpc drives it (the C `transport.c`'s
//! `xprt_class` and `rpc_xprt_ops`): what an instance of the class does
//! ([`XprtOps`]), the C entry points that call it ([`Adapter`]), and the
//! class registration ([`ClassRegistration`]).
//!
//! The class and its ops table are C (`include/rpcrdma_rs_sunrpc.c`). The
//! entries that are not sunrpc's own functions call `rpcrdma_rs_op_*`
//! (`include/rpcrdma_rs_ops.h`); [`class_ops!`] defines those symbols, once,
//! as thin calls into `Adapter<T>` for the type `T` that implements the
//! transport. Everything `unsafe` about them is here: an implementation of
//! [`XprtOps`] is safe Rust.

use super::{Rqst, Xprt};
use crate::bindings;
use core::{cell::UnsafeCell, marker::PhantomData};
use kernel::{
    error::{from_result, to_result},
    ffi::{c_int, c_uint, c_void},
    prelude::*,
    sync::{Arc, ArcBorrow},
    types::ForeignOwnable,
};

/// Proof that the caller holds the write lock of transport instance `xprt`
/// (`XPRT_LOCKED`), which sunrpc holds for the operations that change its
/// connection: [`XprtOps::send_request`] (`xprt_prepare_transmit` took it
/// for the sending task), [`XprtOps::connect`] (the connecting task hands
/// it to the connect worker, `xprt_lock_connect`), [`XprtOps::close`]
/// (`xprt_autoclose`, which `xprt_force_disconnect` queues with it taken,
/// or the sender) and [`XprtOps::detach`] (`xprt_destroy` takes it for
/// good).
///
/// # Invariants
///
/// Made only by [`Adapter`], for the call of one of those operations on
/// `xprt`, and lent to it: while it lives, no other thread holds a
/// `WriteLock` of `xprt`.
pub(crate) struct WriteLock<'a> {
    xprt: *mut bindings::rpc_xprt,
    _call: PhantomData<&'a mut ()>,
}

impl WriteLock<'_> {
    /// The write lock of `xprt`, which the caller holds.
    ///
    /// # Safety
    ///
    /// The caller holds `xprt`'s write lock (`XPRT_LOCKED`) until the
    /// result is dropped, and makes no other `WriteLock` of it meanwhile.
    unsafe fn held(xprt: *mut bindings::rpc_xprt) -> Self {
        // INVARIANT: by the function's contract.
        Self {
            xprt,
            _call: PhantomData,
        }
    }
}

/// A value of transport instance `xprt` that only the holder of its write
/// lock ([`WriteLock`]) reaches: no lock of its own.
pub(crate) struct WriteLocked<T> {
    xprt: Xprt,
    value: UnsafeCell<T>,
}

// SAFETY: The value is reached only through `get`, by the one holder of
// `xprt`'s write lock at a time; it may move between threads (`T: Send`).
unsafe impl<T: Send> Sync for WriteLocked<T> {}
// SAFETY: As above.
unsafe impl<T: Send> Send for WriteLocked<T> {}

impl<T> WriteLocked<T> {
    /// `value`, for the holders of `xprt`'s write lock.
    pub(crate) fn new(xprt: Xprt, value: T) -> Self {
        Self {
            xprt,
            value: UnsafeCell::new(value),
        }
    }

    /// The value, for as long as `lock` is borrowed; `EINVAL` for the
    /// write lock of another instance.
    pub(crate) fn get<'a>(&'a self, lock: &'a mut WriteLock<'_>) -> Result<&'a mut T> {
        if lock.xprt != self.xprt.as_ptr() {
            return Err(EINVAL);
        }
        // SAFETY: `lock` is the write lock of this value's instance, held
        // by this thread alone (its invariant), and borrowed mutably for as
        // long as the result: nothing else reaches the value meanwhile.
        Ok(unsafe { &mut *self.value.get() })
    }
}

/// The operations of a transport instance: the entries of the C
/// `rpc_xprt_ops` table that are not sunrpc's own functions.
///
/// sunrpc owns the instance (`struct rpc_xprt`). The transport's state is
/// the `Arc<Self>` that [`XprtOps::attach`] returns; the C instance keeps it
/// and hands it back to [`XprtOps::detach`] when sunrpc destroys the
/// instance. The other operations borrow it, and none runs once `detach`
/// has begun.
#[vtable]
pub(crate) trait XprtOps: Sized + Send + Sync + 'static {
    /// What every instance of the class shares: given to the class
    /// registration, lent to `attach`.
    type Class: Send + Sync + 'static;

    /// Largest RPC payload (rsize/wsize) an instance carries
    /// (`xprt->max_payload`).
    const MAX_PAYLOAD: u32;

    /// Creates the state of `xprt`, an instance being set up (`setup`). The
    /// xprt stays allocated until `detach` returns: nothing of the state may
    /// use it after that.
    fn attach(class: ArcBorrow<'_, Self::Class>, xprt: Xprt) -> Result<Arc<Self>>;

    /// sunrpc destroys the instance (`destroy`): tear the connection down
    /// and release the state. Sleeps.
    fn detach(this: Arc<Self>, lock: &mut WriteLock<'_>);

    /// Connects (`connect`, from its worker in process context). Sleeps.
    fn connect(&self, lock: &mut WriteLock<'_>) -> Result;

    /// True if the last connection attempt failed, or the transport wants
    /// the next one delayed for another reason: it backs off.
    fn connect_failed(&self) -> bool {
        false
    }

    /// True if the last connection ended at a fault of the server: its
    /// `close` keeps the reconnect backoff reached so far, which sunrpc
    /// otherwise starts again.
    fn peer_faulted(&self) -> bool {
        false
    }

    /// Closes the connection (`close`). Sleeps.
    fn close(&self, lock: &mut WriteLock<'_>);

    /// Marshals and posts `rqst` (`send_request`; a backchannel reply if
    /// `bc_reply`). `EAGAIN`: no buffer, sunrpc waits for write space;
    /// `ENOTCONN`: the connection is gone, the C glue closes it.
    fn send_request(&self, lock: &mut WriteLock<'_>, rqst: &Rqst<'_>, bc_reply: bool) -> Result;

    /// RPC `xid`'s memory is about to be freed (`buf_free`, or GSS privacy
    /// about to free the pages it encrypted the Call into, through the
    /// request's `rq_release_snd_buf`, which the C glue wraps): return only
    /// when the server can no longer reach it. Sleeps.
    fn buf_free(&self, _xid: u32) {}

    /// An RPC got no reply within its timeout (`timer`, in the RPC task's
    /// process context); the C glue then has sunrpc close the connection.
    /// Sleeps.
    fn timer(&self) {}

    /// Largest backchannel message the connection carries (`bc_maxpayload`).
    /// Runs under the RCU read lock: may not sleep.
    fn bc_maxpayload(&self) -> usize;

    /// The counters `print_stats` reports.
    fn stats(&self) -> XprtStats {
        XprtStats::default()
    }
}

/// Marks the one [`XprtOps`] implementation the C class calls.
///
/// # Safety
///
/// Implemented only by [`class_ops!`], whose `rpcrdma_rs_op_*` functions
/// call `Adapter<Self>` and nothing else; the symbols they define can exist
/// once, so no other type implements this. A [`ClassRegistration<T>`]
/// relies on it: the class it registers calls `Adapter<T>`, the same `T`.
///
/// And `Self`'s [`XprtOps`] implementation uses no copy of the [`Xprt`]
/// it was lent once `detach` returns: sunrpc frees the xprt then. `Xprt`
/// is `Copy` and `'static`, so the compiler cannot check this; whoever
/// invokes `class_ops!` states it, in the `unsafe` the macro asks for.
pub(crate) unsafe trait ClassOps: XprtOps {}

/// Defines [`XprtStats`] with the counters listed, and its conversion into
/// the C glue's `struct rpcrdma_rs_stats`, from one list: a counter added
/// to the C struct and not here fails to build.
macro_rules! xprt_stats {
    ($($field:ident),* $(,)?) => {
        /// The transport's counters for `print_stats`, in the order of the C
        /// transport's `struct rpcrdma_stats` (its `xprt: rdma` line in
        /// `/proc/self/mountstats`).
        #[derive(Default, Clone, Copy)]
        pub(crate) struct XprtStats {
            $(pub(crate) $field: u64,)*
        }

        impl From<XprtStats> for bindings::rpcrdma_rs_stats {
            fn from(s: XprtStats) -> Self {
                Self {
                    $($field: s.$field,)*
                }
            }
        }
    };
}

xprt_stats!(
    read_chunk_count,
    write_chunk_count,
    reply_chunk_count,
    total_rdma_request,
    total_rdma_reply,
    pullup_copy_count,
    fixup_copy_count,
    hardway_register_count,
    failed_marshal_count,
    bad_reply_count,
    nomsg_call_count,
    mrs_recycled,
    mrs_orphaned,
    mrs_allocated,
    local_inv_needed,
    empty_sendctx_q,
);

/// The `rdma` transport class, registered with sunrpc while this exists.
/// Its instances are `T`s, and share `T::Class`.
///
/// # Invariants
///
/// `class` comes from `Arc<T::Class>::into_foreign` and is released only by
/// `drop`. Until then the class is registered, and the C glue hands `class`
/// to `rpcrdma_rs_op_attach` (with its class mutex held) for each instance
/// it sets up.
pub(crate) struct ClassRegistration<T: ClassOps> {
    class: *const c_void,
    _ops: PhantomData<T>,
}

// SAFETY: The registration owns an `Arc<T::Class>` (as a pointer), which may
// move between threads because `T::Class` is `Send + Sync`; it offers no
// access to it.
unsafe impl<T: ClassOps> Send for ClassRegistration<T> {}
// SAFETY: `&ClassRegistration` gives access to nothing.
unsafe impl<T: ClassOps> Sync for ClassRegistration<T> {}

impl<T: ClassOps> ClassRegistration<T> {
    /// Registers the class, whose instances share `class`; fails with
    /// `EEXIST` if another module (the C `rpcrdma`) has the `rdma` ident
    /// already.
    pub(crate) fn new(class: Arc<T::Class>) -> Result<Self> {
        let class = class.into_foreign();
        // The C glue keeps `class` for `rpcrdma_rs_op_attach`, which calls
        // `Adapter::<T>::attach` (`T` is `ClassOps`), until unregistered in
        // `drop`, or forgets it at once if this fails.
        // SAFETY: No precondition.
        let ret = unsafe { bindings::rpcrdma_rs_xprt_class_register(class.cast_mut()) };
        if let Err(e) = to_result(ret) {
            // SAFETY: From `into_foreign` above, released once; the failed
            // registration kept no copy.
            drop(unsafe { <Arc<T::Class> as ForeignOwnable>::from_foreign(class) });
            return Err(e);
        }
        // INVARIANT: registered with `class`, from `into_foreign`.
        Ok(Self {
            class,
            _ops: PhantomData,
        })
    }
}

impl<T: ClassOps> Drop for ClassRegistration<T> {
    fn drop(&mut self) {
        // Once this returns no setup holds `class` (the C glue clears it
        // under its class mutex, which `attach` runs under), and none can
        // start. Instances still alive hold their state, not `class`.
        // SAFETY: Registered (type invariant).
        unsafe { bindings::rpcrdma_rs_xprt_class_unregister() };
        // SAFETY: From `into_foreign` (type invariant), released only here,
        // and the C glue no longer has it.
        drop(unsafe { <Arc<T::Class> as ForeignOwnable>::from_foreign(self.class) });
    }
}

/// The C entry points of the class, for the [`XprtOps`] implementation
/// `T`: each turns the C arguments into Rust ones and a Rust `Result` into
/// an errno. [`class_ops!`] exports them under the names
/// `include/rpcrdma_rs_ops.h` declares.
///
/// `transport` below is the pointer `attach` returned, which the C
/// instance keeps (`struct rpcrdma_rs_xprt`).
pub(crate) struct Adapter<T: ClassOps>(PhantomData<T>);

impl<T: ClassOps> Adapter<T> {
    /// The state `transport` stands for.
    ///
    /// # Safety
    ///
    /// `transport` was returned by [`Self::attach`] and not yet given to
    /// [`Self::detach`], and is not given to it before the borrow ends.
    unsafe fn state<'a>(transport: *mut c_void) -> ArcBorrow<'a, T> {
        // SAFETY: By the function's contract it came from `into_foreign`
        // in `attach`, and the reference it holds is not released while
        // borrowed.
        unsafe { <Arc<T> as ForeignOwnable>::borrow(transport) }
    }

    /// `rpcrdma_rs_op_attach`: creates the state of a new transport
    /// instance; NULL on failure (the C glue reports `ENOMEM`).
    ///
    /// # Safety
    ///
    /// `class` is the pointer a live [`ClassRegistration<T>`] registered
    /// the class with, and the registration is not dropped during the call.
    /// `xprt` is an xprt of the class being set up, freed only after
    /// [`Self::detach`] has released the returned state. `max_payload` is
    /// writable.
    pub(crate) unsafe extern "C" fn attach(
        class: *mut c_void,
        xprt: *mut bindings::rpc_xprt,
        max_payload: *mut c_uint,
    ) -> *mut c_void {
        // SAFETY: The xprt outlives its state, which `detach` tears down,
        // by the function's contract; `XprtOps::attach` says the state may
        // not keep the xprt beyond that.
        let Some(xprt) = (unsafe { Xprt::from_raw(xprt) }) else {
            return core::ptr::null_mut();
        };
        // `T` is the type the registration was made for, as `ClassOps` says.
        // SAFETY: `class` came from `into_foreign` of an `Arc<T::Class>` (the
        // registration's invariant), and the registration, which holds that
        // reference, lives for the call.
        let class = unsafe { <Arc<T::Class> as ForeignOwnable>::borrow(class) };
        match T::attach(class, xprt) {
            Ok(state) => {
                // SAFETY: Writable by the function's contract.
                unsafe { *max_payload = T::MAX_PAYLOAD };
                state.into_foreign().cast_mut()
            }
            Err(_) => core::ptr::null_mut(),
        }
    }

    /// `rpcrdma_rs_op_detach`: tears the connection down and releases the
    /// state. Sleeps.
    ///
    /// # Safety
    ///
    /// `transport` came from [`Self::attach`] for `xprt`, no other
    /// operation on it is running, and it is not used again; the caller
    /// holds `xprt`'s write lock.
    pub(crate) unsafe extern "C" fn detach(transport: *mut c_void, xprt: *mut bindings::rpc_xprt) {
        // SAFETY: From `into_foreign` in `attach`, by the function's
        // contract, and released once: this takes its reference back.
        let state = unsafe { <Arc<T> as ForeignOwnable>::from_foreign(transport) };
        // SAFETY: Held by the caller for the call (the function's contract).
        let mut lock = unsafe { WriteLock::held(xprt) };
        T::detach(state, &mut lock);
    }

    /// `rpcrdma_rs_op_connect`: connects. 0 or a negative errno. Sleeps.
    ///
    /// # Safety
    ///
    /// As for [`Self::state`]; `xprt` is the instance `transport` was
    /// attached to, whose write lock the caller holds.
    pub(crate) unsafe extern "C" fn connect(
        transport: *mut c_void,
        xprt: *mut bindings::rpc_xprt,
    ) -> c_int {
        // SAFETY: By the function's contract.
        let state = unsafe { Self::state(transport) };
        // SAFETY: Held by the caller for the call (the function's contract).
        let mut lock = unsafe { WriteLock::held(xprt) };
        from_result(|| {
            T::connect(&state, &mut lock)?;
            Ok(0)
        })
    }

    /// `rpcrdma_rs_op_connect_failed`.
    ///
    /// # Safety
    ///
    /// As for [`Self::state`].
    pub(crate) unsafe extern "C" fn connect_failed(transport: *mut c_void) -> bool {
        // SAFETY: By the function's contract.
        let state = unsafe { Self::state(transport) };
        T::connect_failed(&state)
    }

    /// `rpcrdma_rs_op_peer_faulted`.
    ///
    /// # Safety
    ///
    /// As for [`Self::state`].
    pub(crate) unsafe extern "C" fn peer_faulted(transport: *mut c_void) -> bool {
        // SAFETY: By the function's contract.
        let state = unsafe { Self::state(transport) };
        T::peer_faulted(&state)
    }

    /// `rpcrdma_rs_op_close`: closes the connection. Sleeps.
    ///
    /// # Safety
    ///
    /// As for [`Self::connect`].
    pub(crate) unsafe extern "C" fn close(transport: *mut c_void, xprt: *mut bindings::rpc_xprt) {
        // SAFETY: By the function's contract.
        let state = unsafe { Self::state(transport) };
        // SAFETY: Held by the caller for the call (the function's contract).
        let mut lock = unsafe { WriteLock::held(xprt) };
        T::close(&state, &mut lock);
    }

    /// `rpcrdma_rs_op_send_request`: marshals and posts a Call, or a
    /// backchannel Reply if `bc_reply`. 0 or a negative errno; `EINVAL` if
    /// `rqst` is NULL.
    ///
    /// # Safety
    ///
    /// As for [`Self::connect`]; `rqst`, if not NULL, is a request being
    /// transmitted on the xprt, which sunrpc holds for the call.
    pub(crate) unsafe extern "C" fn send_request(
        transport: *mut c_void,
        xprt: *mut bindings::rpc_xprt,
        rqst: *mut bindings::rpc_rqst,
        bc_reply: bool,
    ) -> c_int {
        // SAFETY: By the function's contract.
        let state = unsafe { Self::state(transport) };
        // SAFETY: Held by the caller for the call (the function's contract).
        let mut lock = unsafe { WriteLock::held(xprt) };
        from_result(|| {
            // SAFETY: NULL or live for the call, by the function's
            // contract; `Rqst` borrows it no longer than that.
            let rqst = unsafe { Rqst::from_raw(rqst) }.ok_or(EINVAL)?;
            T::send_request(&state, &mut lock, &rqst, bc_reply)?;
            Ok(0)
        })
    }

    /// `rpcrdma_rs_op_buf_free`: RPC `xid`'s memory is about to be freed.
    /// Sleeps.
    ///
    /// # Safety
    ///
    /// As for [`Self::state`].
    pub(crate) unsafe extern "C" fn buf_free(transport: *mut c_void, xid: u32) {
        // SAFETY: By the function's contract.
        let state = unsafe { Self::state(transport) };
        T::buf_free(&state, xid);
    }

    /// `rpcrdma_rs_op_timer`: an RPC timed out. Sleeps.
    ///
    /// # Safety
    ///
    /// As for [`Self::state`].
    pub(crate) unsafe extern "C" fn timer(transport: *mut c_void) {
        // SAFETY: By the function's contract.
        let state = unsafe { Self::state(transport) };
        T::timer(&state);
    }

    /// `rpcrdma_rs_op_bc_maxpayload`.
    ///
    /// # Safety
    ///
    /// As for [`Self::state`].
    pub(crate) unsafe extern "C" fn bc_maxpayload(transport: *mut c_void) -> usize {
        // SAFETY: By the function's contract.
        let state = unsafe { Self::state(transport) };
        T::bc_maxpayload(&state)
    }

    /// `rpcrdma_rs_op_stats`: a snapshot of the counters into `out`.
    ///
    /// # Safety
    ///
    /// As for [`Self::state`]; `out` is writable.
    pub(crate) unsafe extern "C" fn stats(
        transport: *mut c_void,
        out: *mut bindings::rpcrdma_rs_stats,
    ) {
        // SAFETY: By the function's contract.
        let state = unsafe { Self::state(transport) };
        let stats = T::stats(&state);
        // SAFETY: Writable by the function's contract.
        unsafe { *out = stats.into() };
    }
}

/// Makes `$t`'s [`XprtOps`] the operations of the `rdma` class: defines
/// the `rpcrdma_rs_op_*` functions `include/rpcrdma_rs_ops.h` declares,
/// each a call into `Adapter<$t>`, and marks `$t` [`ClassOps`]. Used once,
/// at the crate root (the symbols are global).
macro_rules! class_ops {
    (unsafe $t:ty) => {
        const _: () = {
            use ::kernel::ffi::{c_int, c_uint, c_void};
            use $crate::{bindings, sunrpc::Adapter};

            // SAFETY: The functions below, defined once, are the class's
            // entry points, and they call `Adapter<$t>` only; the invoker
            // stated, with `unsafe`, that `$t` keeps no `Xprt` past
            // `detach`.
            unsafe impl $crate::sunrpc::ClassOps for $t {}

            /// # Safety
            ///
            /// As for `Adapter::attach`.
            #[no_mangle]
            unsafe extern "C" fn rpcrdma_rs_op_attach(
                class: *mut c_void,
                xprt: *mut bindings::rpc_xprt,
                max_payload: *mut c_uint,
            ) -> *mut c_void {
                // SAFETY: The caller guarantees what `attach` requires.
                unsafe { Adapter::<$t>::attach(class, xprt, max_payload) }
            }

            /// # Safety
            ///
            /// As for `Adapter::detach`.
            #[no_mangle]
            unsafe extern "C" fn rpcrdma_rs_op_detach(
                transport: *mut c_void,
                xprt: *mut bindings::rpc_xprt,
            ) {
                // SAFETY: The caller guarantees what `detach` requires.
                unsafe { Adapter::<$t>::detach(transport, xprt) }
            }

            /// # Safety
            ///
            /// As for `Adapter::connect`.
            #[no_mangle]
            unsafe extern "C" fn rpcrdma_rs_op_connect(
                transport: *mut c_void,
                xprt: *mut bindings::rpc_xprt,
            ) -> c_int {
                // SAFETY: The caller guarantees what `connect` requires.
                unsafe { Adapter::<$t>::connect(transport, xprt) }
            }

            /// # Safety
            ///
            /// As for `Adapter::connect_failed`.
            #[no_mangle]
            unsafe extern "C" fn rpcrdma_rs_op_connect_failed(transport: *mut c_void) -> bool {
                // SAFETY: The caller guarantees what `connect_failed`
                // requires.
                unsafe { Adapter::<$t>::connect_failed(transport) }
            }

            /// # Safety
            ///
            /// As for `Adapter::peer_faulted`.
            #[no_mangle]
            unsafe extern "C" fn rpcrdma_rs_op_peer_faulted(transport: *mut c_void) -> bool {
                // SAFETY: The caller guarantees what `peer_faulted`
                // requires.
                unsafe { Adapter::<$t>::peer_faulted(transport) }
            }

            /// # Safety
            ///
            /// As for `Adapter::close`.
            #[no_mangle]
            unsafe extern "C" fn rpcrdma_rs_op_close(
                transport: *mut c_void,
                xprt: *mut bindings::rpc_xprt,
            ) {
                // SAFETY: The caller guarantees what `close` requires.
                unsafe { Adapter::<$t>::close(transport, xprt) }
            }

            /// # Safety
            ///
            /// As for `Adapter::send_request`.
            #[no_mangle]
            unsafe extern "C" fn rpcrdma_rs_op_send_request(
                transport: *mut c_void,
                xprt: *mut bindings::rpc_xprt,
                rqst: *mut bindings::rpc_rqst,
                bc_reply: bool,
            ) -> c_int {
                // SAFETY: The caller guarantees what `send_request`
                // requires.
                unsafe { Adapter::<$t>::send_request(transport, xprt, rqst, bc_reply) }
            }

            /// # Safety
            ///
            /// As for `Adapter::buf_free`.
            #[no_mangle]
            unsafe extern "C" fn rpcrdma_rs_op_buf_free(transport: *mut c_void, xid: u32) {
                // SAFETY: The caller guarantees what `buf_free` requires.
                unsafe { Adapter::<$t>::buf_free(transport, xid) }
            }

            /// # Safety
            ///
            /// As for `Adapter::timer`.
            #[no_mangle]
            unsafe extern "C" fn rpcrdma_rs_op_timer(transport: *mut c_void) {
                // SAFETY: The caller guarantees what `timer` requires.
                unsafe { Adapter::<$t>::timer(transport) }
            }

            /// # Safety
            ///
            /// As for `Adapter::bc_maxpayload`.
            #[no_mangle]
            unsafe extern "C" fn rpcrdma_rs_op_bc_maxpayload(transport: *mut c_void) -> usize {
                // SAFETY: The caller guarantees what `bc_maxpayload`
                // requires.
                unsafe { Adapter::<$t>::bc_maxpayload(transport) }
            }

            /// # Safety
            ///
            /// As for `Adapter::stats`.
            #[no_mangle]
            unsafe extern "C" fn rpcrdma_rs_op_stats(
                transport: *mut c_void,
                out: *mut bindings::rpcrdma_rs_stats,
            ) {
                // SAFETY: The caller guarantees what `stats` requires.
                unsafe { Adapter::<$t>::stats(transport, out) }
            }
        };
    };
}
pub(crate) use class_ops;
