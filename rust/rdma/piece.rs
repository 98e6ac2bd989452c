// SPDX-License-Identifier: GPL-2.0

//! The memory a memory region registers: parts of pages of an RPC
//! request's buffers (C: `rpcrdma_convert_iovs`).
//!
//! Registering memory lets the peer read or write it until the
//! registration is invalidated, so a [`Piece`] can only be cut from what
//! sunrpc lent the transport for one request: the head, page data and
//! tail of its send or receive `xdr_buf`. The cutters here are unsafe;
//! `sunrpc::XdrLayout` is their one caller. sunrpc frees those buffers
//! only after the transport's `buf_free` for the request returns, and
//! `buf_free` waits until no region maps them any more (`XdrLayout` says
//! how GSS privacy's re-encoding is held to this too). The one other
//! piece is a connection's Write chunk pad ([`PadBuffer`]), scratch memory
//! that the region mapping it owns.

use crate::bindings;
use kernel::{alloc::KVec, page::PAGE_SIZE, prelude::*, types::Opaque};

/// A part of one page of an RPC request's buffer, to register with
/// [`Mr::map`](super::Mr::map).
///
/// # Invariants
///
/// `page` is a page of a buffer of an RPC request, as laid out in its
/// `xdr_buf` (head, page data or tail), or of a [`PadBuffer`] that the
/// region mapping the piece keeps until the mapping is undone (after the
/// region is deregistered, if it goes mapped); the piece lies within
/// that buffer and within the page (`offset + len <= PAGE_SIZE`).
#[repr(transparent)]
pub(crate) struct Piece(bindings::rpcrdma_rs_piece);

impl Piece {
    /// Where the piece starts in its page.
    pub(crate) fn offset(&self) -> u32 {
        self.0.offset
    }

    /// How many bytes the piece has.
    pub(crate) fn length(&self) -> u32 {
        self.0.len
    }

    /// Cuts `len` bytes of page data, starting at byte `start` of the
    /// page array, into pieces appended to `out`; `page_at` names the page
    /// holding a position.
    ///
    /// # Safety
    ///
    /// The pages `page_at` returns must be a request's buffer pages, which
    /// stay allocated until the transport's `buf_free` for the request
    /// returns (after every piece and every mapping of it is gone).
    pub(crate) unsafe fn cut_pages(
        start: usize,
        len: u32,
        out: &mut Pieces,
        page_at: impl Fn(usize) -> Result<*mut bindings::page>,
    ) -> Result {
        // INVARIANT: the pages are a request's (the function's contract).
        cut_into_pages(start, len, out, page_at)
    }

    /// Cuts `len` bytes of a request's kernel buffer at `base` (its head or
    /// tail) into page pieces appended to `out`.
    ///
    /// # Safety
    ///
    /// `base..base + len` must be a request's head or tail buffer, which
    /// stays allocated until the transport's `buf_free` for the request
    /// returns.
    pub(crate) unsafe fn cut_kernel_buffer(base: *const u8, len: u32, out: &mut Pieces) -> Result {
        cut_into_pages(base as usize, len, out, |addr| {
            // SAFETY: No precondition: an address that is not linear-mapped
            // gives NULL.
            let page = unsafe { bindings::rpcrdma_rs_virt_to_page(addr as *const _) };
            if page.is_null() {
                return Err(EINVAL);
            }
            Ok(page)
        })
    }
}

/// Bytes of a [`PadBuffer`]: one XDR unit (C: `XDR_UNIT`).
pub(crate) const PAD_LEN: u32 = 4;

/// The scratch memory a Write chunk's pad segment exposes (C:
/// `re_write_pad`): RFC 8166 lets a Responder write the XDR pad of a
/// payload whose length is not a multiple of four, and the Requester
/// offers this for it rather than memory past the payload. The peer may
/// write it; nothing reads it.
///
/// # Invariants
///
/// `0` is a kmalloc'ed (so linear-mapped) buffer of [`PAD_LEN`] bytes,
/// which the device may write while it is mapped (hence `Opaque`).
pub(crate) struct PadBuffer(KBox<Opaque<[u8; PAD_LEN as usize]>>);

impl PadBuffer {
    /// A zeroed one. Sleeps.
    pub(crate) fn new() -> Result<Self> {
        Ok(Self(KBox::new(
            Opaque::new([0; PAD_LEN as usize]),
            GFP_KERNEL,
        )?))
    }

    /// The buffer as one piece, for [`Mr::map_pad`](super::Mr::map_pad).
    ///
    /// # Safety
    ///
    /// The buffer must stay allocated until every mapping of the piece is
    /// undone.
    pub(crate) unsafe fn piece(&self) -> Result<Piece> {
        let addr = self.0.get() as usize;
        let offset = addr & (PAGE_SIZE - 1);
        // A small kmalloc object is naturally aligned: never across a page.
        if offset + PAD_LEN as usize > PAGE_SIZE {
            return Err(EINVAL);
        }
        // SAFETY: No precondition: an address that is not linear-mapped
        // gives NULL.
        let page = unsafe { bindings::rpcrdma_rs_virt_to_page(addr as *const _) };
        if page.is_null() {
            return Err(EINVAL);
        }
        // INVARIANT: the pad buffer's page, kept as the function's contract
        // says, and the piece lies within it.
        Ok(Piece(bindings::rpcrdma_rs_piece {
            page,
            offset: u32::try_from(offset)?,
            len: PAD_LEN,
        }))
    }
}

// `Pieces::clear` forgets pieces without dropping them.
const _: () = assert!(!core::mem::needs_drop::<Piece>());

/// The pieces cut for one chunk of one RPC, in room a connection keeps
/// from one RPC to the next: once it is large enough, cutting allocates
/// nothing. Its owner empties it when the RPC's pieces are done with.
pub(crate) struct Pieces(KVec<Piece>);

// SAFETY: A piece is a page's address, an offset and a length: nothing in
// it belongs to the thread that cut it, and its page stays allocated while
// the piece may be used (`Piece`'s invariant), whichever thread that is.
unsafe impl Send for Pieces {}

impl Pieces {
    /// Empty, with room for `n` pieces.
    pub(crate) fn with_capacity(n: usize) -> Result<Self> {
        Ok(Self(KVec::with_capacity(n, GFP_KERNEL)?))
    }

    /// The pieces cut so far.
    pub(crate) fn as_slice(&self) -> &[Piece] {
        self.0.as_slice()
    }

    /// Forgets every piece, keeping the room.
    pub(crate) fn clear(&mut self) {
        // SAFETY: A length of zero is within the capacity and initializes
        // nothing; `Piece` has no drop glue (asserted above), so the
        // pieces need none.
        unsafe { self.0.set_len(0) };
    }
}

/// Cuts `len` bytes starting at position `start` into pieces that do not
/// cross a page boundary; `page_at` names the page holding a position.
fn cut_into_pages(
    start: usize,
    len: u32,
    out: &mut Pieces,
    page_at: impl Fn(usize) -> Result<*mut bindings::page>,
) -> Result {
    let out = &mut out.0;
    let mut at = start;
    let mut left = usize::try_from(len)?;
    if left == 0 {
        return Ok(());
    }
    // One allocation for all the pieces, rather than the vector growing
    // piece by piece on every RPC.
    let pages = ((at & (PAGE_SIZE - 1)) + left).div_ceil(PAGE_SIZE);
    out.reserve(pages, GFP_ATOMIC)?;
    while left > 0 {
        let offset = at & (PAGE_SIZE - 1);
        let n = (PAGE_SIZE - offset).min(left);
        // INVARIANT: a page of the request's buffer (the callers' `page_at`),
        // and `offset + n <= PAGE_SIZE`.
        out.push(
            Piece(bindings::rpcrdma_rs_piece {
                page: page_at(at)?,
                offset: u32::try_from(offset)?,
                len: u32::try_from(n)?,
            }),
            GFP_ATOMIC,
        )?;
        at += n;
        left -= n;
    }
    Ok(())
}
