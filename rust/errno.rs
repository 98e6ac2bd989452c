// SPDX-License-Identifier: GPL-2.0

//! Errnos the kernel crate of Linux 6.12 does not name, defined once.

use crate::bindings;
use kernel::error::Error;

macro_rules! errnos {
    ($($(#[$doc:meta])* $fn:ident => $name:ident,)*) => {$(
        $(#[$doc])*
        pub(crate) fn $fn() -> Error {
            // Errno values are small positive numbers; the cast cannot wrap.
            Error::from_errno(-(bindings::$name as i32))
        }
    )*};
}

errnos! {
    /// Connection timed out.
    etimedout => ETIMEDOUT,
    /// Connection refused.
    econnrefused => ECONNREFUSED,
    /// No route to host.
    ehostunreach => EHOSTUNREACH,
    /// Message too long.
    emsgsize => EMSGSIZE,
    /// Protocol error (only the test hooks' connection probe says it).
    #[cfg(rpcrdma_rs_test_hooks)]
    eproto => EPROTO,
    /// Transport endpoint is not connected.
    enotconn => ENOTCONN,
    /// Protocol not available.
    enoprotoopt => ENOPROTOOPT,
}

/// True for the errnos after which sunrpc's `call_connect_status` (Linux
/// 6.12) tries to connect again rather than fail the RPC: the refusals,
/// the network's and the peer's failures, a timeout, a try-again. Not all
/// of them are in this module's bindings: the kernel crate's have them.
pub(crate) fn connect_retried(e: Error) -> bool {
    use kernel::bindings as k;
    let Ok(errno) = u32::try_from(-e.to_errno()) else {
        return false;
    };
    [
        k::ECONNREFUSED,
        k::ECONNRESET,
        k::ECONNABORTED,
        k::ENETDOWN,
        k::ENETUNREACH,
        k::EHOSTUNREACH,
        k::EPIPE,
        k::EPROTO,
        k::EADDRINUSE,
        k::ENOTCONN,
        k::EAGAIN,
        k::ETIMEDOUT,
        k::ENOBUFS,
    ]
    .contains(&errno)
}
