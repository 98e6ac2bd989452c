// SPDX-License-Identifier: GPL-2.0

//! DMA-mapped buffers that are posted as one Send or one Receive, and the
//! completions the RDMA core reports for them (`struct ib_cqe`).
//!
//! Ownership says where a buffer is. A [`SendBuf`] or a [`RecvBuf`] is not
//! posted: its owner may fill it, post it or drop it. Posting moves it to
//! its [`Qp`]; the completion hands it back to the handler, a Send as a
//! [`SendBuf`] again, a Receive as a [`Received`], the one way to read what
//! arrived, which reposting consumes. A Send posted unsignaled has no
//! completion of its own when it succeeds: the successful completion of a
//! later signaled Send hands it back, with that one, as a [`SentBatch`]
//! (see [`Qp`]). So no buffer is written, read or freed while the device
//! may use it, and none is posted twice. Each buffer holds its QP, so it
//! is unmapped before the QP's device goes, and is posted only on the QP
//! whose device it is mapped for.

use super::qp::{Posting, Qp, RemoteInvalidation, SendWr, Taken};
use crate::{bindings, errno};
use core::{
    any::TypeId,
    cell::Cell,
    marker::PhantomData,
    ptr::NonNull,
    sync::atomic::{AtomicBool, Ordering},
};
use kernel::{
    alloc::KVec,
    error::to_result,
    prelude::*,
    sync::Arc,
    types::{ForeignOwnable, Opaque},
};

/// What the RDMA core reports about one completed work request, lent to
/// its handler for the callback only.
///
/// # Invariants
///
/// Made only by this module's completion callbacks, for the QP `qp`
/// whose CQ they run for, and only lent (`&Completion`) to the handlers
/// they call: not `Clone`, so nothing of it outlives the callback, during
/// which the QP is alive: the identifier it was made on holds it (an
/// `Arc`, whatever the handler drops meanwhile) until its shutdown has
/// returned, and the shutdown frees the CQs, which waits for the callback.
/// [`Completion::info`] is a copy of what it says.
#[derive(Debug)]
pub(crate) struct Completion {
    /// `IB_WC_SUCCESS` (0) or why the request failed or was flushed.
    pub(crate) status: u32,
    /// Bytes received (Receives only).
    pub(crate) byte_len: u32,
    /// The R_key the peer invalidated with Send With Invalidate, if it did.
    pub(crate) invalidated_rkey: Option<u32>,
    /// The device's own code for a failure (for the trace events).
    pub(crate) vendor_err: u32,
    qp: NonNull<Qp>,
}

/// What a [`Completion`] says, to be kept (by the test hooks' probe).
#[cfg(rpcrdma_rs_test_hooks)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct CompletionInfo {
    pub(crate) status: u32,
    pub(crate) byte_len: u32,
    pub(crate) invalidated_rkey: Option<u32>,
}

#[cfg(rpcrdma_rs_test_hooks)]
impl CompletionInfo {
    /// True when the work request completed successfully.
    pub(crate) fn is_success(&self) -> bool {
        self.status == bindings::ib_wc_status_IB_WC_SUCCESS
    }
}

impl Completion {
    /// A completion for the callback of a work request on `qp`, to be lent
    /// to its handler only (type invariant).
    pub(super) fn new(qp: &Qp, wc: &bindings::ib_wc, invalidated_rkey: Option<u32>) -> Self {
        Self {
            status: wc.status,
            byte_len: wc.byte_len,
            invalidated_rkey,
            vendor_err: wc.vendor_err,
            qp: NonNull::from(qp),
        }
    }

    /// What it says, as a copy to keep.
    #[cfg(rpcrdma_rs_test_hooks)]
    pub(crate) fn info(&self) -> CompletionInfo {
        CompletionInfo {
            status: self.status,
            byte_len: self.byte_len,
            invalidated_rkey: self.invalidated_rkey,
        }
    }

    /// The QP the completion is of, alive while the completion is lent.
    pub(super) fn qp(&self) -> &Qp {
        // SAFETY: The callback that made this completion runs for this QP,
        // which is alive until the callback returns, and the completion is
        // only lent for the callback (type invariant).
        unsafe { self.qp.as_ref() }
    }

    /// True when the work request completed successfully.
    pub(crate) fn is_success(&self) -> bool {
        self.status == bindings::ib_wc_status_IB_WC_SUCCESS
    }

    /// True when the work request was flushed: the QP went into the error
    /// state (teardown, or an earlier failure) before it ran.
    pub(crate) fn is_flush(&self) -> bool {
        self.status == bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR
    }

    /// True for a Receive that failed for what the peer sent: a message
    /// longer than the buffer, or a Send With Invalidate naming an R_key
    /// it may not invalidate. Other failures may be local or the link's
    /// (some devices report a QP's flushed Receives with the error that
    /// moved it to the error state).
    pub(crate) fn is_peer_error(&self) -> bool {
        self.status == bindings::ib_wc_status_IB_WC_LOC_LEN_ERR
            || self.status == bindings::ib_wc_status_IB_WC_REM_INV_REQ_ERR
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
    /// A signaled Send completed successfully, and with it the unsignaled
    /// Sends posted before it on the QP: `batch` hands all their buffers
    /// back, in post order, the signaled one last; `completion` is its
    /// (successful) completion, which stands for all of them. By default
    /// each goes to [`CompletionHandler::sent`].
    fn sent_batch(&self, batch: SentBatch<Self>, completion: &Completion) {
        for buf in batch {
            self.sent(buf, completion);
        }
    }
    /// A Receive completed, or was flushed. On success `rep` holds what
    /// arrived; on failure it holds nothing.
    fn received(&self, rep: Received<Self>, completion: &Completion);
}

/// The start of every buffer: its completion entry, and its links in its
/// QP's lists of posted buffers.
///
/// # Invariants
///
/// `prev`, `next`, `unsignaled` and `sq_seq` are written only by the
/// buffer's owner: under the posting lock of the QP the buffer is posted
/// on while one of its lists owns it, or, once out of the lists, by whoever
/// took it out (the `SendDone` and then the [`SentBatch`] that carry a
/// batch, or the QP's shutdown). `free` drops the
/// buffer this header begins. For a Receive buffer, `reg_index` is its
/// index in its QP's registry (`usize::MAX` when not in it), read and
/// written under that registry's lock; `posted` is set while the QP holds
/// it (by the post, cleared by the completion or a failed post).
#[repr(C)]
pub(super) struct BufHeader {
    cqe: Opaque<bindings::ib_cqe>,
    prev: Cell<*mut BufHeader>,
    next: Cell<*mut BufHeader>,
    /// Posted as an unsignaled Send: in its QP's list of those.
    unsignaled: Cell<bool>,
    /// Posted as a Send: its send-queue sequence number.
    sq_seq: Cell<u64>,
    /// A Receive the QP holds.
    posted: AtomicBool,
    /// A Receive's index in its QP's registry.
    reg_index: Cell<usize>,
    free: unsafe fn(NonNull<BufHeader>),
}

impl BufHeader {
    /// Whether the QP holds the Receive buffer `h`.
    ///
    /// # Safety
    ///
    /// `h` is live.
    pub(super) unsafe fn posted(h: NonNull<Self>) -> bool {
        // SAFETY: Live by the function's contract.
        unsafe { (*h.as_ptr()).posted.load(Ordering::Acquire) }
    }

    /// The flag [`BufHeader::posted`] reads, for the post (C glue) to set.
    ///
    /// # Safety
    ///
    /// `h` is live.
    pub(super) unsafe fn posted_flag(h: NonNull<Self>) -> *mut bool {
        // SAFETY: Live by the function's contract.
        unsafe { (*h.as_ptr()).posted.as_ptr() }
    }

    /// The Receive buffer `h` is no longer the QP's: its completion came.
    ///
    /// # Safety
    ///
    /// `h` is live.
    pub(super) unsafe fn clear_posted(h: NonNull<Self>) {
        // SAFETY: Live by the function's contract.
        unsafe { (*h.as_ptr()).posted.store(false, Ordering::Release) }
    }

    /// The registry index of the Receive buffer `h`.
    ///
    /// # Safety
    ///
    /// `h` is live; its QP's registry lock is held.
    pub(super) unsafe fn reg_index(h: NonNull<Self>) -> usize {
        // SAFETY: Live by the function's contract; under the lock.
        unsafe { (*h.as_ptr()).reg_index.get() }
    }

    /// Sets the registry index of the Receive buffer `h`.
    ///
    /// # Safety
    ///
    /// `h` is live; its QP's registry lock is held.
    pub(super) unsafe fn set_reg_index(h: NonNull<Self>, index: usize) {
        // SAFETY: Live by the function's contract; under the lock.
        unsafe { (*h.as_ptr()).reg_index.set(index) }
    }

    /// The list neighbours of `h`.
    ///
    /// # Safety
    ///
    /// `h` is live and its owner is the caller: a QP's list, whose posting
    /// lock is held, or whoever took it out of the lists.
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
    /// `h` is live and owned by (or being given to) the caller: a QP's
    /// list, whose posting lock is held, or whoever took it out of the
    /// lists.
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

    /// Whether `h` was posted as an unsignaled Send.
    ///
    /// # Safety
    ///
    /// As for [`BufHeader::links`].
    pub(super) unsafe fn unsignaled(h: NonNull<Self>) -> bool {
        // SAFETY: By the function's contract.
        unsafe { (*h.as_ptr()).unsignaled.get() }
    }

    /// Records whether `h` is posted as an unsignaled Send.
    ///
    /// # Safety
    ///
    /// As for [`BufHeader::set_links`].
    pub(super) unsafe fn set_unsignaled(h: NonNull<Self>, unsignaled: bool) {
        // SAFETY: By the function's contract.
        unsafe { (*h.as_ptr()).unsignaled.set(unsignaled) };
    }

    /// The send-queue sequence number `h` was posted with, as a Send.
    ///
    /// # Safety
    ///
    /// As for [`BufHeader::links`].
    pub(super) unsafe fn sq_seq(h: NonNull<Self>) -> u64 {
        // SAFETY: By the function's contract.
        unsafe { (*h.as_ptr()).sq_seq.get() }
    }

    /// Records the send-queue sequence number `h` was posted with.
    ///
    /// # Safety
    ///
    /// As for [`BufHeader::set_links`].
    pub(super) unsafe fn set_sq_seq(h: NonNull<Self>, seq: u64) {
        // SAFETY: By the function's contract.
        unsafe { (*h.as_ptr()).sq_seq.set(seq) };
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
/// `Pin<KBox<_>>`, owned either by a [`SendBuf`], [`RecvBuf`],
/// [`Received`] or [`SentBatch`] (then not posted), or by `qp` (then
/// posted): a Send by one of its lists, a Receive by the QP itself, its
/// header's `posted` set. A Receive buffer is in `qp`'s registry from its
/// making until it is freed.
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
    qp: Arc<Qp>,
    _handler: PhantomData<H>,
}

// SAFETY: The raw pointers are an owned allocation and list links that are
// written only by the buffer's owner (`BufHeader`'s invariant); the rest is
// `Send`.
unsafe impl<H: CompletionHandler> Send for Buf<H> {}

type Owned<H> = Pin<KBox<Buf<H>>>;

impl<H: CompletionHandler> Buf<H> {
    /// Allocates `len` bytes and maps them for the device of `qp`: for
    /// Sends when `to_device`, else for Receives. `EINVAL` unless `H` is
    /// the handler of the QP's identifier, which its completions go to.
    fn new(qp: &Arc<Qp>, len: usize, to_device: bool) -> Result<Owned<H>> {
        if !qp.handled_by::<H>() {
            return Err(EINVAL);
        }
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
        let buf = KBox::pin(
            Self {
                header: BufHeader {
                    cqe: Opaque::new(bindings::ib_cqe {
                        done: Some(done_callback::<H>),
                    }),
                    prev: Cell::new(core::ptr::null_mut()),
                    next: Cell::new(core::ptr::null_mut()),
                    unsignaled: Cell::new(false),
                    sq_seq: Cell::new(0),
                    posted: AtomicBool::new(false),
                    reg_index: Cell::new(usize::MAX),
                    free: free_buf::<H>,
                },
                data,
                len,
                capacity,
                addr,
                to_device,
                filled: 0,
                qp: qp.clone(),
                _handler: PhantomData,
            },
            GFP_KERNEL,
        )?;
        if !to_device {
            let h = NonNull::from(&buf.header);
            // SAFETY: A Receive buffer made for `qp`, pinned in its box, not
            // registered; its drop unregisters it.
            unsafe { qp.register_recv(h) }?;
        }
        Ok(buf)
    }

    /// Posts `buf` as a Receive of all of it on its QP, `qp`. On error the
    /// buffer comes back, not posted.
    fn post_recv(buf: Owned<H>, qp: &Qp) -> Result<(), (Option<Owned<H>>, Error)> {
        let Ok(len) = u32::try_from(buf.len) else {
            return Err((Some(buf), EINVAL));
        };
        if !core::ptr::eq(qp, &*buf.qp) {
            return Err((Some(buf), EINVAL));
        }
        let (addr, lkey) = (buf.addr, qp.local_dma_lkey());
        // SAFETY: Nothing moves out of the allocation: it is the QP's while
        // posted, and comes back as the same pinned box.
        let raw = KBox::into_raw(unsafe { Pin::into_inner_unchecked(buf) });
        // CAST: the header is the first field of the `#[repr(C)]` `Buf`.
        let header = raw.cast::<BufHeader>();
        let Some(h) = NonNull::new(header) else {
            return Err((None, EINVAL));
        };
        // SAFETY: Only the header's `cqe` field is borrowed.
        let cqe = unsafe { (*header).cqe.get() };
        // SAFETY: A Receive buffer of `qp`, registered when it was made,
        // given up to the QP: its completion hands it back, or the QP's
        // shutdown frees it. `qp` is borrowed for the call.
        match unsafe { qp.post_recv(h, cqe, addr, len, lkey) } {
            Ok(()) => Ok(()),
            Err(e) => {
                // SAFETY: Not posted (the post failed, or the QP is closed):
                // ours again, the same pinned box.
                let buf = unsafe { Pin::new_unchecked(KBox::from_raw(raw)) };
                Err((Some(buf), e))
            }
        }
    }

    /// Posts `buf` as a Send of its filled bytes, `signaled` or not, on its
    /// QP, through `send`, which is given the posting state, under its
    /// lock, and the Send, its buffer already in the QP's lists, and says
    /// what the QP took. On error the buffer comes back, unless the QP may
    /// have taken the Send: then it is the QP's, as after a success.
    ///
    /// # Safety
    ///
    /// `send` posts the Send it is given at most once, as
    /// [`Posting::post_chain`] would, and says the QP took it
    /// ([`Taken::send`]) whenever it may have.
    unsafe fn post_send(
        buf: Owned<H>,
        qp: &Qp,
        signaled: bool,
        send: impl FnOnce(&mut Posting, SendWr) -> Taken,
    ) -> Result<(), (Option<Owned<H>>, Error)> {
        let Ok(len) = u32::try_from(buf.filled) else {
            return Err((Some(buf), EINVAL));
        };
        let (addr, lkey) = (buf.addr, buf.qp.local_dma_lkey());
        let post = |post: &mut Posting, h: NonNull<BufHeader>, cqe| {
            // SAFETY: `h` is a live `Buf<H>` in its pinned place, given to
            // the list (`hand_over`).
            if let Err(e) = unsafe { post.link_send(h, TypeId::of::<H>(), signaled) } {
                return (false, Err(e));
            }
            // The buffer is owned by one of the QP's lists until its
            // completion (or a later signaled Send's) hands it back, or
            // until the QP is destroyed: what `send` needs to post it.
            let wr = SendWr {
                cqe,
                addr,
                len,
                lkey,
                signaled,
            };
            let taken = send(post, wr);
            match taken.send {
                // SAFETY: The list owns `h`, and this lock is held; the
                // number is read only under it.
                Some(seq) => unsafe { BufHeader::set_sq_seq(h, seq) },
                // SAFETY: Linked above, and not posted.
                None => unsafe { post.unlink(h) },
            }
            let held = taken.send.is_some();
            match taken.result {
                Ok(()) if !held => (false, Err(EINVAL)),
                result => (held, result),
            }
        };
        // SAFETY: `post` leaves the buffer in a list if the QP may hold it;
        // otherwise unlinked, not posted, and with an error.
        unsafe { Self::hand_over(buf, qp, post) }
    }

    /// Gives `buf` to the lists of its QP, `qp` (`EINVAL` for another),
    /// through `post`, which runs under the posting lock with the buffer's
    /// header and `cqe`, links and posts it, and says whether the QP may
    /// hold it, and what the post said. On error the buffer comes back
    /// unless the QP may hold it. The caller's borrow keeps the QP for the
    /// call: once the lock is let go a completion may free the buffer, and
    /// with it the buffer's own reference to the QP.
    ///
    /// # Safety
    ///
    /// `post` leaves the buffer in one of the QP's lists if it says the QP
    /// may hold it; otherwise in none, not posted, and with an error.
    unsafe fn hand_over(
        buf: Owned<H>,
        qp: &Qp,
        post: impl FnOnce(&mut Posting, NonNull<BufHeader>, *mut bindings::ib_cqe) -> (bool, Result),
    ) -> Result<(), (Option<Owned<H>>, Error)> {
        if !core::ptr::eq(qp, &*buf.qp) {
            return Err((Some(buf), EINVAL));
        }
        // SAFETY: Nothing moves out of the allocation: its ownership passes
        // to the QP's list, and comes back as the same pinned box.
        let raw = KBox::into_raw(unsafe { Pin::into_inner_unchecked(buf) });
        // CAST: the header is the first field of the `#[repr(C)]` `Buf`.
        let header = raw.cast::<BufHeader>();
        // Whether the QP may hold the buffer.
        let mut held = false;
        let posted = qp.posting(|posting: &mut Posting| {
            let h = NonNull::new(header).ok_or(EINVAL)?;
            // SAFETY: Only the header's `cqe` field is borrowed.
            let cqe = unsafe { (*header).cqe.get() };
            let (holds, result) = post(posting, h, cqe);
            held = holds;
            result
        });
        posted.map_err(|e| {
            // Held, for all the error says: the QP's list owns it.
            let buf = (!held).then(|| {
                // SAFETY: Not posted, and out of the list (or never in it,
                // by the function's contract): ours again, the same pinned
                // box.
                unsafe { Pin::new_unchecked(KBox::from_raw(raw)) }
            });
            (buf, e)
        })
    }
}

impl<H: CompletionHandler> Drop for Buf<H> {
    fn drop(&mut self) {
        if !self.to_device {
            // SAFETY: A Receive buffer made for `qp`, live until this
            // returns; a no-op if the QP's shutdown took it out already.
            unsafe { self.qp.unregister_recv(NonNull::from(&self.header)) };
        }
        // SAFETY: Mapped by `new` for a device `qp` holds registered (type
        // invariant), and not posted: a posted buffer is owned by its QP
        // (its lists, or its registry's posted Receives), which drops it
        // only after its completion or the QP's end.
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
    /// Allocates a `len`-byte Send buffer mapped for the device of `qp`,
    /// whose identifier's handler (of type `H`) is told of its
    /// completions.
    pub(crate) fn new(qp: &Arc<Qp>, len: usize) -> Result<Self> {
        Buf::new(qp, len, true).map(Self)
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

    /// Posts the filled bytes as one Send on the buffer's QP, `signaled`
    /// or not. The buffer comes back to the handler: by its own completion
    /// ([`CompletionHandler::sent`]), or, unsignaled, with the successful
    /// completion of a later signaled Send on the QP
    /// ([`CompletionHandler::sent_batch`]), if neither comes it is freed
    /// with the QP. It comes back here with the error if it could not be
    /// posted: the QP is not open, its queue is full, or an earlier Send
    /// buffer of the QP had another handler type (`EINVAL`). A device may
    /// report an error for a Send it took: then the error comes without
    /// the buffer, which is the QP's.
    pub(crate) fn post(self, qp: &Qp, signaled: bool) -> Result<(), (Option<Self>, Error)> {
        let send = |post: &mut Posting, wr: SendWr| {
            // SAFETY: The Send's buffer is in the QP's lists (`post_send`),
            // which own it until its completion hands it back or the QP is
            // destroyed; there are no REG_MRs.
            unsafe { post.post_chain(&[], wr) }
        };
        // SAFETY: `send` posts the Send it is given once, and says what the
        // QP took.
        unsafe { self.post_with(qp, signaled, send) }
    }

    /// [`SendBuf::post`], the Send posted by `send` (see
    /// [`Buf::post_send`]).
    ///
    /// # Safety
    ///
    /// As for `Buf::post_send`.
    pub(super) unsafe fn post_with(
        self,
        qp: &Qp,
        signaled: bool,
        send: impl FnOnce(&mut Posting, SendWr) -> Taken,
    ) -> Result<(), (Option<Self>, Error)> {
        // SAFETY: By the function's contract.
        unsafe { Buf::post_send(self.0, qp, signaled, send) }.map_err(|(buf, e)| (buf.map(Self), e))
    }

    /// The identity of the buffer's QP ([`Qp::uid`]).
    pub(super) fn qp_uid(&self) -> u64 {
        self.0.qp.uid()
    }
}

/// A buffer for Receives, not posted and holding nothing.
pub(crate) struct RecvBuf<H: CompletionHandler>(Owned<H>);

impl<H: CompletionHandler> RecvBuf<H> {
    /// Allocates a `len`-byte Receive buffer mapped for the device of
    /// `qp`, whose identifier's handler (of type `H`) is told of its
    /// completions.
    pub(crate) fn new(qp: &Arc<Qp>, len: usize) -> Result<Self> {
        Buf::new(qp, len, false).map(Self)
    }

    /// Posts the buffer as one Receive on its QP. It comes back to the
    /// handler's [`CompletionHandler::received`], or here with the error if
    /// it could not be posted (always: the `Option` is `SendBuf::post`'s
    /// shape, and a Receive is never taken with an error).
    pub(crate) fn post(self, qp: &Qp) -> Result<(), (Option<Self>, Error)> {
        Buf::post_recv(self.0, qp).map_err(|(buf, e)| (buf.map(Self), e))
    }
}

/// The Send buffers the successful completion of a signaled Send hands
/// back ([`CompletionHandler::sent_batch`]): the unsignaled Sends posted
/// before it on its QP that no completion handed back yet, in post order,
/// then the signaled one. Iterating yields them; those left when the batch
/// is dropped are freed. It allocates nothing: the buffers are chained
/// through their own headers.
///
/// # Invariants
///
/// `next` is null or the header of the first of a chain of `Buf<H>`s
/// linked through their `next` (the last's null), each in its pinned
/// `KBox`, not posted, out of every list, and owned by the batch; `last`
/// is not posted either.
pub(crate) struct SentBatch<H: CompletionHandler> {
    next: *mut BufHeader,
    last: Option<Owned<H>>,
}

impl<H: CompletionHandler> Iterator for SentBatch<H> {
    type Item = SendBuf<H>;

    fn next(&mut self) -> Option<SendBuf<H>> {
        let Some(h) = NonNull::new(self.next) else {
            return self.last.take().map(SendBuf);
        };
        // SAFETY: The batch owns `h` (type invariant), so nothing else
        // touches its links.
        unsafe {
            self.next = BufHeader::links(h).1;
            BufHeader::set_links(h, core::ptr::null_mut(), core::ptr::null_mut());
        }
        // CAST: the header is the first field of the `#[repr(C)]` `Buf<H>`.
        // SAFETY: A `Buf<H>` in its pinned box, not posted, which the batch
        // owned and gives up here (type invariant): nothing else refers to
        // it.
        let buf = unsafe { Pin::new_unchecked(KBox::from_raw(h.as_ptr().cast::<Buf<H>>())) };
        Some(SendBuf(buf))
    }
}

impl<H: CompletionHandler> Drop for SentBatch<H> {
    fn drop(&mut self) {
        // Each is freed (unmapped) as it is dropped: none is posted.
        for buf in self.by_ref() {
            drop(buf);
        }
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

    /// Posts the buffer again as a Receive, giving up what arrived, from
    /// the handler of a completion on its QP (`done`: a Receive's, or any
    /// other work request's on the same QP). On error it comes back
    /// unchanged (as for [`RecvBuf::post`]).
    pub(crate) fn repost(self, done: &Completion) -> Result<(), (Option<Self>, Error)> {
        let (len, remote) = (self.len, self.remote);
        Buf::post_recv(self.buf, done.qp()).map_err(|(buf, e)| {
            // INVARIANT: not posted; the bytes are as they were.
            (buf.map(|buf| Self { buf, len, remote }), e)
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
/// `wc->wr_cqe` is the `cqe` of a `Buf<H>` that was posted: a Send in one
/// of its QP's lists, or a Receive the QP holds.
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
    let status_ok = wc.status == bindings::ib_wc_status_IB_WC_SUCCESS;
    let done = {
        // SAFETY: The buffer is posted, so alive (the function's contract);
        // only its `qp` and `to_device` fields, which nothing writes, are
        // borrowed.
        let (qp, to_device) = unsafe { (&(*raw).qp, (*raw).to_device) };
        if to_device {
            // SAFETY: A Send in one of its QP's lists (the function's
            // contract).
            Some(unsafe { qp.send_done(h, status_ok) })
        } else {
            // SAFETY: A posted Receive (the function's contract): its
            // completion hands it back, and the QP holds it no more.
            unsafe { BufHeader::clear_posted(h) };
            None
        }
    };
    // SAFETY: Out of the lists, so ours: the same pinned box it was posted
    // as, and nothing else refers to it.
    let buf = unsafe { Pin::new_unchecked(KBox::from_raw(raw)) };
    let with_invalidate = i32::try_from(bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE).unwrap_or(0);
    let invalidated = wc.wc_flags & with_invalidate != 0;
    // SAFETY: Both members of the union are 32-bit integers; the value is
    // the R_key when IB_WC_WITH_INVALIDATE is set, and unused otherwise.
    let rkey = unsafe { wc.ex.invalidate_rkey };
    // Of this callback's QP, lent to the handler only.
    let completion = Completion::new(&buf.qp, wc, invalidated.then_some(rkey));
    // SAFETY: The QP's handler is an `Arc<H>` turned foreign (`Buf::new`
    // checked its type), which the identifier the QP was made on keeps
    // until the QP is shut down; a completion callback runs only before
    // that shutdown has freed the CQs, so the borrow lives for the call.
    let handler = unsafe { <Arc<H> as ForeignOwnable>::borrow(buf.qp.handler()) };
    if let Some(done) = done {
        if !(done.signaled && status_ok) {
            // Failed or flushed (or, from a device that reports them, an
            // unsignaled success): only this one, which proves nothing of
            // the send queue (an unsignaled one does not advance it).
            // `done.earlier` is null: `send_done` takes the earlier Sends
            // only for the success of a signaled one.
            handler.sent(SendBuf(buf), &completion);
            return;
        }
        // Before the handler looks: it may reuse what this proves done.
        buf.qp.sq_completed(done.seq);
        // INVARIANT: the earlier ones are `Buf<H>`s, as this one is (every
        // Send buffer of a QP has the same handler type), out of every list
        // and now the batch's, chained in post order; `buf` is not posted.
        let batch = SentBatch {
            next: done.earlier,
            last: Some(buf),
        };
        handler.sent_batch(batch, &completion);
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
        remote = completion
            .invalidated_rkey
            .filter(|_| buf.qp.peer_inv_proves())
            .map(|rkey| RemoteInvalidation {
                qp: buf.qp.uid(),
                rkey,
                index,
            });
    }
    // INVARIANT: the Receive completed, so the buffer is not posted; the
    // device wrote `len` bytes (none if it failed or was flushed).
    handler.received(Received { buf, len, remote }, &completion);
}
