// SPDX-License-Identifier: GPL-2.0

//! DMA-mapped buffers that are posted as one Send or one Receive, and the
//! completions the RDMA core reports for them (`struct ib_cqe`).
//!
//! Ownership says where a buffer is. A [`SendBuf`] or a [`RecvBuf`] is not
//! posted: its owner may fill it, post it or drop it. Posting moves it to
//! its [`Qp`]; the completion hands it back to the handler, a Send as a
//! [`SendBuf`] again, a Receive as a [`Received`], the one way to read what
//! arrived, which reposting consumes. So no buffer is written, read or
//! freed while the device may use it, and none is posted twice. Each
//! buffer holds its QP, so it is unmapped before the QP's device goes, and
//! is posted only on the QP whose device it is mapped for.

use super::qp::{Posting, Qp, RemoteInvalidation, SendWr};
use crate::{bindings, errno};
use core::{cell::Cell, ptr::NonNull};
use kernel::{alloc::KVec, error::to_result, prelude::*, sync::Arc, types::Opaque};

/// What the RDMA core reports about one completed work request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Completion {
    /// `IB_WC_SUCCESS` (0) or why the request failed or was flushed.
    pub(crate) status: u32,
    /// Bytes received (Receives only).
    pub(crate) byte_len: u32,
    /// The R_key the peer invalidated with Send With Invalidate, if it did.
    pub(crate) invalidated_rkey: Option<u32>,
}

impl Completion {
    /// True when the work request completed successfully.
    pub(crate) fn is_success(&self) -> bool {
        self.status == bindings::ib_wc_status_IB_WC_SUCCESS
    }

    /// True when the work request was flushed: the QP went into the error
    /// state (teardown, or an earlier failure) before it ran.
    pub(crate) fn is_flush(&self) -> bool {
        self.status == bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR
    }
}

/// Receives the completions of the buffers made with it. Called from the
/// CQ's workqueue, in process context. A handler must not drop the last
/// reference to a memory region of the same QP, nor shut the QP down: both
/// wait for this workqueue.
pub(crate) trait CompletionHandler: Send + Sync + 'static + Sized {
    /// The Send of `buf` completed, or was flushed; `buf` is not posted
    /// any more.
    fn sent(&self, buf: SendBuf<Self>, completion: &Completion);
    /// A Receive completed, or was flushed. On success `rep` holds what
    /// arrived; on failure it holds nothing.
    fn received(&self, rep: Received<Self>, completion: &Completion);
}

/// The start of every buffer: its completion entry, and its links in its
/// QP's list of posted buffers.
///
/// # Invariants
///
/// `prev` and `next` are written only under the posting lock of the QP the
/// buffer is posted on, and only while it is posted. `free` drops the
/// buffer this header begins.
#[repr(C)]
pub(super) struct BufHeader {
    cqe: Opaque<bindings::ib_cqe>,
    prev: Cell<*mut BufHeader>,
    next: Cell<*mut BufHeader>,
    free: unsafe fn(NonNull<BufHeader>),
}

impl BufHeader {
    /// The list neighbours of `h`.
    ///
    /// # Safety
    ///
    /// `h` is live, in a QP's list, and its posting lock is held.
    pub(super) unsafe fn links(h: NonNull<Self>) -> (*mut Self, *mut Self) {
        // SAFETY: By the function's contract; only the `Cell`s are borrowed.
        unsafe {
            let h = h.as_ptr();
            ((*h).prev.get(), (*h).next.get())
        }
    }

    /// Sets both list neighbours of `h`.
    ///
    /// # Safety
    ///
    /// `h` is live and owned by (or being given to) a QP's list, whose
    /// posting lock is held.
    pub(super) unsafe fn set_links(h: NonNull<Self>, prev: *mut Self, next: *mut Self) {
        // SAFETY: By the function's contract; only the `Cell`s are borrowed.
        unsafe {
            let h = h.as_ptr();
            (*h).prev.set(prev);
            (*h).next.set(next);
        }
    }

    /// Sets the previous list neighbour of `h`.
    ///
    /// # Safety
    ///
    /// As for [`BufHeader::set_links`].
    pub(super) unsafe fn set_prev(h: NonNull<Self>, prev: *mut Self) {
        // SAFETY: By the function's contract.
        unsafe { (*h.as_ptr()).prev.set(prev) };
    }

    /// Sets the next list neighbour of `h`.
    ///
    /// # Safety
    ///
    /// As for [`BufHeader::set_links`].
    pub(super) unsafe fn set_next(h: NonNull<Self>, next: *mut Self) {
        // SAFETY: By the function's contract.
        unsafe { (*h.as_ptr()).next.set(next) };
    }

    /// Frees the buffer `h` begins.
    ///
    /// # Safety
    ///
    /// The caller owns the buffer (it is in no list, or the list that owned
    /// it is gone) and nothing refers to it any more.
    pub(super) unsafe fn free(h: NonNull<Self>) {
        // SAFETY: `h` is live by the function's contract; `free` matches the
        // buffer's type (type invariant).
        unsafe { ((*h.as_ptr()).free)(h) };
    }
}

/// A kernel buffer mapped for DMA by the device of a QP.
///
/// # Invariants
///
/// `header` is the first field (`#[repr(C)]`); its `cqe.done` is
/// [`done_callback::<H>`] and its `free` is [`free_buf::<H>`]. `data` owns
/// `len` initialised bytes of a `capacity`-byte `KVec` allocation; `addr`
/// maps them for the device of `qp` (towards it when `to_device`), and is
/// unmapped only by `drop`. `filled <= len`. A `Buf` is always in a
/// `Pin<KBox<_>>`, owned either by a [`SendBuf`], [`RecvBuf`] or
/// [`Received`] (then not posted), or by the in-flight list of `qp` (then
/// posted, and `sq_seq` is its send-queue sequence number if a Send).
#[repr(C)]
struct Buf<H: CompletionHandler> {
    header: BufHeader,
    data: NonNull<u8>,
    len: usize,
    capacity: usize,
    addr: u64,
    to_device: bool,
    /// Sends: the bytes filled in and handed to the device.
    filled: usize,
    sq_seq: u64,
    qp: Arc<Qp>,
    handler: Arc<H>,
}

// SAFETY: The raw pointers are an owned allocation and list links that are
// written only under the QP's posting lock; the rest is `Send`.
unsafe impl<H: CompletionHandler> Send for Buf<H> {}

type Owned<H> = Pin<KBox<Buf<H>>>;

impl<H: CompletionHandler> Buf<H> {
    /// Allocates `len` bytes and maps them for the device of `qp`: for
    /// Sends when `to_device`, else for Receives.
    fn new(qp: &Arc<Qp>, len: usize, to_device: bool, handler: Arc<H>) -> Result<Owned<H>> {
        let (data, len, capacity) = KVec::from_elem(0u8, len, GFP_KERNEL)?.into_raw_parts();
        // A `KVec` pointer is never NULL, even when empty.
        let data = NonNull::new(data).ok_or(ENOMEM)?;
        let mut addr = 0u64;
        // SAFETY: `data` is a live allocation of `len` bytes that stays put
        // until `drop` unmaps it; the device is registered (held by `qp`).
        let mapped = to_result(unsafe {
            bindings::rpcrdma_rs_dma_map(
                qp.device().as_raw(),
                data.as_ptr().cast(),
                len,
                to_device,
                &mut addr,
            )
        });
        if let Err(e) = mapped {
            // SAFETY: From `into_raw_parts` above; no buffer owns it.
            drop(unsafe { KVec::from_raw_parts(data.as_ptr(), len, capacity) });
            return Err(e);
        }
        // INVARIANT: the header's callbacks are `H`'s; `addr` maps `data`;
        // nothing is filled. On an allocation failure the value is dropped,
        // which unmaps and frees.
        Ok(KBox::pin(
            Self {
                header: BufHeader {
                    cqe: Opaque::new(bindings::ib_cqe {
                        done: Some(done_callback::<H>),
                    }),
                    prev: Cell::new(core::ptr::null_mut()),
                    next: Cell::new(core::ptr::null_mut()),
                    free: free_buf::<H>,
                },
                data,
                len,
                capacity,
                addr,
                to_device,
                filled: 0,
                sq_seq: 0,
                qp: qp.clone(),
                handler,
            },
            GFP_KERNEL,
        )?)
    }

    /// Posts `buf` on its QP: as a Send of its filled bytes, or as a
    /// Receive of all of it. On error the buffer comes back, not posted.
    fn post(buf: Owned<H>) -> Result<(), (Owned<H>, Error)> {
        let to_device = buf.to_device;
        let len = if to_device { buf.filled } else { buf.len };
        let Ok(len) = u32::try_from(len) else {
            return Err((buf, EINVAL));
        };
        let (addr, lkey) = (buf.addr, buf.qp.local_dma_lkey());
        let qp = buf.qp.clone();
        // SAFETY: Nothing moves out of the allocation: its ownership passes
        // to the QP's list, and comes back as the same pinned box.
        let raw = KBox::into_raw(unsafe { Pin::into_inner_unchecked(buf) });
        // CAST: the header is the first field of the `#[repr(C)]` `Buf`.
        let header = raw.cast::<BufHeader>();
        let posted = qp.posting(|post: &mut Posting| {
            let h = NonNull::new(header).ok_or(EINVAL)?;
            // SAFETY: `raw` is a live buffer in its pinned place, which we
            // own and give to the list.
            unsafe { post.link(h) };
            // SAFETY: Only the header's `cqe` field is borrowed.
            let cqe = unsafe { (*header).cqe.get() };
            let result = if to_device {
                // SAFETY: The buffer is owned by the in-flight list until
                // its completion, or until the QP is destroyed.
                unsafe {
                    post.post_send(SendWr::Send {
                        cqe,
                        addr,
                        len,
                        lkey,
                    })
                }
                .map(|seq| {
                    // SAFETY: A field nothing else reads until the
                    // completion, which takes this lock first.
                    unsafe { (*raw).sq_seq = seq };
                })
            } else {
                // SAFETY: As above.
                unsafe { post.post_recv(cqe, addr, len, lkey) }
            };
            if result.is_err() {
                // SAFETY: Linked above, and not posted.
                unsafe { post.unlink(h) };
            }
            result
        });
        posted.map_err(|e| {
            // SAFETY: Not posted, and out of the list (or never in it): ours
            // again, the same pinned box.
            (unsafe { Pin::new_unchecked(KBox::from_raw(raw)) }, e)
        })
    }
}

impl<H: CompletionHandler> Drop for Buf<H> {
    fn drop(&mut self) {
        // SAFETY: Mapped by `new` for a device `qp` holds registered (type
        // invariant), and not posted: a posted buffer is owned by its QP's
        // list, which drops it only after its completion or the QP's end.
        unsafe {
            bindings::rpcrdma_rs_dma_unmap(
                self.qp.device().as_raw(),
                self.addr,
                self.len,
                self.to_device,
            )
        };
        // SAFETY: From `into_raw_parts` in `new` (type invariant), freed
        // only here.
        drop(unsafe { KVec::from_raw_parts(self.data.as_ptr(), self.len, self.capacity) });
    }
}

/// A buffer for Sends, not posted.
pub(crate) struct SendBuf<H: CompletionHandler>(Owned<H>);

impl<H: CompletionHandler> SendBuf<H> {
    /// Allocates a `len`-byte Send buffer mapped for the device of `qp`;
    /// `handler` is told of its completions.
    pub(crate) fn new(qp: &Arc<Qp>, len: usize, handler: Arc<H>) -> Result<Self> {
        Buf::new(qp, len, true, handler).map(Self)
    }

    /// Lets `write` fill the buffer in place, then hands the bytes it
    /// reports to the device; they are what [`SendBuf::post`] sends.
    pub(crate) fn fill_with(
        &mut self,
        write: impl FnOnce(&mut [u8]) -> Result<usize>,
    ) -> Result<usize> {
        // SAFETY: Plain fields are written, nothing moves out of the pin.
        let this = unsafe { self.0.as_mut().get_unchecked_mut() };
        this.filled = 0;
        // SAFETY: Not posted (a `SendBuf` owns it) and `&mut self`, so
        // nothing else reads or writes the bytes.
        let bytes = unsafe { core::slice::from_raw_parts_mut(this.data.as_ptr(), this.len) };
        let len = write(bytes)?;
        if len > this.len {
            return Err(errno::emsgsize());
        }
        // SAFETY: Mapped (type invariant); `len` is within the mapping.
        unsafe {
            bindings::rpcrdma_rs_dma_sync_for_device(
                this.qp.device().as_raw(),
                this.addr,
                len,
                this.to_device,
            )
        };
        // INVARIANT: `len <= this.len`.
        this.filled = len;
        Ok(len)
    }

    /// Posts the filled bytes as one signaled Send on the buffer's QP. The
    /// buffer comes back to the handler's [`CompletionHandler::sent`], or
    /// here with the error if it could not be posted (the QP is not open,
    /// or its queue is full).
    pub(crate) fn post(self) -> Result<(), (Self, Error)> {
        Buf::post(self.0).map_err(|(buf, e)| (Self(buf), e))
    }
}

/// A buffer for Receives, not posted and holding nothing.
pub(crate) struct RecvBuf<H: CompletionHandler>(Owned<H>);

impl<H: CompletionHandler> RecvBuf<H> {
    /// Allocates a `len`-byte Receive buffer mapped for the device of `qp`;
    /// `handler` is told of its completions.
    pub(crate) fn new(qp: &Arc<Qp>, len: usize, handler: Arc<H>) -> Result<Self> {
        Buf::new(qp, len, false, handler).map(Self)
    }

    /// Posts the buffer as one Receive on its QP. It comes back to the
    /// handler's [`CompletionHandler::received`], or here with the error if
    /// it could not be posted.
    pub(crate) fn post(self) -> Result<(), (Self, Error)> {
        Buf::post(self.0).map_err(|(buf, e)| (Self(buf), e))
    }
}

/// A completed Receive: the one way to read what arrived. Reposting
/// consumes it, so no borrow of the bytes outlives the moment the device
/// may write them again. It may be kept (e.g. until the memory of the RPC
/// it answers is invalidated) as long as needed.
///
/// # Invariants
///
/// `buf` is not posted; its first `len` bytes were written by the device
/// and synced for the CPU. `remote` was made from this Receive's
/// completion.
pub(crate) struct Received<H: CompletionHandler> {
    buf: Owned<H>,
    len: usize,
    remote: Option<RemoteInvalidation>,
}

impl<H: CompletionHandler> Received<H> {
    /// What arrived.
    pub(crate) fn data(&self) -> &[u8] {
        // SAFETY: Not posted, so the device does not write the bytes while
        // the borrow lives (type invariant); `len` is within the buffer.
        unsafe { core::slice::from_raw_parts(self.buf.data.as_ptr(), self.len) }
    }

    /// The peer's Send With Invalidate this message carried, if any.
    pub(crate) fn remote_invalidation(&self) -> Option<RemoteInvalidation> {
        self.remote
    }

    /// Posts the buffer again as a Receive, giving up what arrived. On
    /// error it comes back unchanged.
    pub(crate) fn repost(self) -> Result<(), (Self, Error)> {
        let (len, remote) = (self.len, self.remote);
        Buf::post(self.buf).map_err(|(buf, e)| {
            // INVARIANT: not posted; the bytes are as they were.
            (Self { buf, len, remote }, e)
        })
    }
}

/// Frees a buffer that its QP's list owned.
///
/// # Safety
///
/// `h` begins a `Buf<H>` in its `Pin<KBox<_>>` allocation, which the caller
/// owns and nothing refers to any more.
unsafe fn free_buf<H: CompletionHandler>(h: NonNull<BufHeader>) {
    // CAST: the header is the first field of the `#[repr(C)]` `Buf<H>`.
    // SAFETY: By the function's contract.
    drop(unsafe { Pin::new_unchecked(KBox::from_raw(h.as_ptr().cast::<Buf<H>>())) });
}

/// The RDMA core's completion callback for work requests of [`Buf<H>`].
///
/// # Safety
///
/// `wc->wr_cqe` is the `cqe` of a `Buf<H>` that was posted and is in its
/// QP's in-flight list.
unsafe extern "C" fn done_callback<H: CompletionHandler>(
    _cq: *mut bindings::ib_cq,
    wc: *mut bindings::ib_wc,
) {
    // SAFETY: `wc` is valid during the callback.
    let wc = unsafe { &*wc };
    // SAFETY: Every work request is posted with its buffer's `cqe` in
    // `wr_cqe` (the union member the kernel's CQ API uses).
    let cqe = unsafe { wc.__bindgen_anon_1.wr_cqe };
    // CAST: `cqe` is the first field of the header, the first field of the
    // `#[repr(C)]` `Buf<H>`; `Opaque` is transparent.
    let raw = cqe.cast::<Buf<H>>();
    let Some(h) = NonNull::new(cqe.cast::<BufHeader>()) else {
        return;
    };
    {
        // SAFETY: The buffer is posted, so alive (the function's contract);
        // only its `qp` field, which nothing writes, is borrowed.
        let qp = unsafe { &(*raw).qp };
        // SAFETY: In the in-flight list of its QP (the function's contract).
        unsafe { qp.unlink(h) };
    }
    // SAFETY: Out of the list, so ours: the same pinned box it was posted
    // as, and nothing else refers to it.
    let buf = unsafe { Pin::new_unchecked(KBox::from_raw(raw)) };
    let with_invalidate = i32::try_from(bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE).unwrap_or(0);
    let invalidated = wc.wc_flags & with_invalidate != 0;
    // SAFETY: Both members of the union are 32-bit integers; the value is
    // the R_key when IB_WC_WITH_INVALIDATE is set, and unused otherwise.
    let rkey = unsafe { wc.ex.invalidate_rkey };
    let completion = Completion {
        status: wc.status,
        byte_len: wc.byte_len,
        invalidated_rkey: invalidated.then_some(rkey),
    };
    let handler = buf.handler.clone();
    if buf.to_device {
        if completion.is_success() {
            buf.qp.sq_completed(buf.sq_seq);
        }
        handler.sent(SendBuf(buf), &completion);
        return;
    }
    let index = buf.qp.rq_completed();
    let mut len = 0;
    let mut remote = None;
    if completion.is_success() {
        len = usize::try_from(completion.byte_len)
            .unwrap_or(usize::MAX)
            .min(buf.len);
        // SAFETY: Mapped (type invariant); the device is done with it.
        unsafe {
            bindings::rpcrdma_rs_dma_sync_for_cpu(buf.qp.device().as_raw(), buf.addr, len, false)
        };
        remote = completion.invalidated_rkey.map(|rkey| RemoteInvalidation {
            qp: buf.qp.uid(),
            rkey,
            index,
        });
    }
    // INVARIANT: the Receive completed, so the buffer is not posted; the
    // device wrote `len` bytes (none if it failed or was flushed).
    handler.received(Received { buf, len, remote }, &completion);
}
