// SPDX-License-Identifier: GPL-2.0

//! The memory a memory region registers: parts of pages of an RPC
//! request's buffers (C: `rpcrdma_convert_iovs`).
//!
//! Registering memory lets the peer read or write it until the
//! registration is invalidated, so a [`Piece`] can only be cut from what
//! sunrpc lent the transport for one request: the head, page data and
//! tail of its send or receive `xdr_buf` ([`XdrLayout`]). sunrpc frees
//! those buffers only after the transport's `buf_free` for the request
//! returns, and `buf_free` waits until no region maps them any more.

use crate::{bindings, sunrpc::XdrLayout};
use kernel::{alloc::KVec, page::PAGE_SIZE, prelude::*};

/// A part of one page of an RPC request's buffer, to register with
/// [`Mr::map`](super::Mr::map).
///
/// # Invariants
///
/// `page` is a page of a buffer of an RPC request, as laid out in its
/// `xdr_buf` (head, page data or tail), and the piece lies within that
/// buffer and within the page (`offset + len <= PAGE_SIZE`).
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

    /// Cuts the page data of `layout` into pieces, appended to `out`.
    pub(crate) fn cut_pages(layout: &XdrLayout<'_>, out: &mut KVec<Piece>) -> Result {
        let base = usize::try_from(layout.raw.page_base)?;
        cut_into_pages(base, layout.raw.page_len, out, |at| {
            // The page array has an entry for every page of the data.
            layout.page(at / PAGE_SIZE).ok_or(EINVAL)
        })
    }

    /// Cuts the head of `layout` into pieces, appended to `out`.
    pub(crate) fn cut_head(layout: &XdrLayout<'_>, out: &mut KVec<Piece>) -> Result {
        cut_kvec(layout.raw.head.cast(), layout.raw.head_len, out)
    }

    /// Cuts the tail of `layout` into pieces, appended to `out`.
    pub(crate) fn cut_tail(layout: &XdrLayout<'_>, out: &mut KVec<Piece>) -> Result {
        cut_kvec(layout.raw.tail.cast(), layout.raw.tail_len, out)
    }
}

/// Cuts `len` bytes starting at position `start` into pieces that do not
/// cross a page boundary; `page_at` names the page holding a position.
fn cut_into_pages(
    start: usize,
    len: u32,
    out: &mut KVec<Piece>,
    page_at: impl Fn(usize) -> Result<*mut bindings::page>,
) -> Result {
    let mut at = start;
    let mut left = usize::try_from(len)?;
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

/// Cuts `len` bytes of a request's kernel buffer at `base` (its head or
/// tail: `rpc_malloc` memory, linear-mapped) into page pieces.
fn cut_kvec(base: *const u8, len: u32, out: &mut KVec<Piece>) -> Result {
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
