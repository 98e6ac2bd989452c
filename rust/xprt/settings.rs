// SPDX-License-Identifier: GPL-2.0

//! Settings for new connections, in debugfs `rpcrdma_rs/settings` (the C
//! transport's `rdma_max_inline_read`/`_write` sysctls play this part):
//!
//! - `inline_max BYTES`: the inline thresholds this requester offers in its
//!   RFC 8797 private data, both directions (1024 to 65536, a multiple of
//!   1024; default 4096);
//! - `ignore_peer_private 0|1`: act as if the server sent no private data,
//!   which exercises the RFC 8797 fallback (1024-byte thresholds).
//!
//! A change applies from the next connection on.

use super::connect::LOCAL;
use crate::{
    debugfs::{self, seq_print, SeqFile},
    proto::private_data::LocalSettings,
};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use kernel::prelude::*;

static INLINE_MAX: AtomicU32 = AtomicU32::new(LOCAL.recv_size);
static IGNORE_PEER_PRIVATE: AtomicBool = AtomicBool::new(false);

/// What a new connection offers.
pub(crate) fn local() -> LocalSettings {
    let size = INLINE_MAX.load(Ordering::Relaxed);
    LocalSettings {
        send_size: size,
        recv_size: size,
        remote_invalidation: LOCAL.remote_invalidation,
    }
}

/// True if the server's private data is to be ignored.
pub(crate) fn ignore_peer_private() -> bool {
    IGNORE_PEER_PRIVATE.load(Ordering::Relaxed)
}

/// The debugfs file.
pub(crate) struct SettingsFile;

impl debugfs::Show for SettingsFile {
    const WRITABLE: bool = true;

    fn show(&self, m: &SeqFile) -> Result {
        seq_print!(
            m,
            "inline_max {}\nignore_peer_private {}\n",
            INLINE_MAX.load(Ordering::Relaxed),
            u8::from(IGNORE_PEER_PRIVATE.load(Ordering::Relaxed))
        );
        Ok(())
    }

    fn store(&self, input: &[u8]) -> Result {
        let text = core::str::from_utf8(input).map_err(|_| EINVAL)?;
        let mut words = text.split_whitespace();
        let (Some(key), Some(value), None) = (words.next(), words.next(), words.next()) else {
            return Err(EINVAL);
        };
        let value: u32 = value.parse().map_err(|_| EINVAL)?;
        match key {
            "inline_max" if (1024..=65536).contains(&value) && value % 1024 == 0 => {
                INLINE_MAX.store(value, Ordering::Relaxed)
            }
            "ignore_peer_private" if value <= 1 => {
                IGNORE_PEER_PRIVATE.store(value == 1, Ordering::Relaxed)
            }
            _ => return Err(EINVAL),
        }
        Ok(())
    }
}
