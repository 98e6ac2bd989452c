// SPDX-License-Identifier: GPL-2.0

//! debugfs: a directory and read-only files rendered by Rust code.
//!
//! As everywhere in the kernel, debugfs failures are not errors: the C
//! functions accept and return error pointers, and a missing file only
//! means less to read.

use crate::bindings;
use core::{fmt, ptr};
use kernel::{
    error::from_result,
    ffi::{c_int, c_void},
    prelude::*,
    str::CStr,
    sync::Arc,
    types::Opaque,
};

/// A debugfs directory, removed with everything in it when the last of it
/// and its files goes.
pub(crate) struct Dir(Arc<DirEntry>);

/// The dentry of a directory.
///
/// # Invariants
///
/// `dentry` was returned by `debugfs_create_dir` (possibly an error pointer,
/// which every debugfs function accepts) and is removed only by `drop`.
struct DirEntry {
    dentry: *mut bindings::dentry,
}

// SAFETY: A dentry pointer may be used and removed from any thread.
unsafe impl Send for DirEntry {}
// SAFETY: `DirEntry` offers no interior mutability.
unsafe impl Sync for DirEntry {}

impl Dir {
    /// Creates a directory at the top of debugfs.
    pub(crate) fn new(name: &CStr) -> Result<Self> {
        // SAFETY: `name` is NUL-terminated; a NULL parent is the debugfs root.
        let dentry = unsafe { bindings::debugfs_create_dir(name.as_char_ptr(), ptr::null_mut()) };
        // INVARIANT: the dentry comes from `debugfs_create_dir`.
        Ok(Self(Arc::new(DirEntry { dentry }, GFP_KERNEL)?))
    }
}

impl Drop for DirEntry {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the dentry is ours to remove, once;
        // every file in it holds this entry, so they were removed first.
        unsafe { bindings::debugfs_remove(self.dentry) };
    }
}

/// A seq_file being filled by a [`Show`] implementation.
#[repr(transparent)]
pub(crate) struct SeqFile(Opaque<bindings::seq_file>);

impl SeqFile {
    /// # Safety
    ///
    /// `ptr` must point to a `seq_file` that stays valid, and is not used by
    /// anyone else, for the lifetime `'a` (a `->show` callback's duration).
    unsafe fn from_raw<'a>(ptr: *mut bindings::seq_file) -> &'a Self {
        // CAST: `SeqFile` is a transparent wrapper of `seq_file`.
        // SAFETY: Guaranteed by the caller.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Appends formatted text; the seq_file core retries with a larger
    /// buffer when it overflows.
    pub(crate) fn print(&self, args: fmt::Arguments<'_>) {
        // SAFETY: The seq_file is valid by the `from_raw` contract; `%pA`
        // formats the `fmt::Arguments` it is handed, which outlive the call.
        unsafe {
            bindings::seq_printf(
                self.0.get(),
                kernel::c_str!("%pA").as_char_ptr(),
                ptr::from_ref(&args).cast::<c_void>(),
            )
        };
    }
}

/// Renders the contents of a debugfs file, and takes what is written to it.
pub(crate) trait Show: Send + Sync {
    /// Whether the file is writable; writes go to [`Show::store`].
    const WRITABLE: bool = false;

    /// Writes the file's contents into `m`.
    fn show(&self, m: &SeqFile) -> Result;

    /// Takes one `write(2)` to the file.
    fn store(&self, _input: &[u8]) -> Result {
        Err(EINVAL)
    }
}

/// A debugfs file whose contents `T` renders at each open (and which `T`
/// may accept writes to).
///
/// # Invariants
///
/// `show.data` points to the `T` owned by `data`; `dentry` is the file
/// created over `show` in `parent`, and is removed before `show`, `data`
/// and `parent` go away.
#[pin_data(PinnedDrop)]
pub(crate) struct File<T: Show> {
    #[pin]
    show: Opaque<bindings::rpcrdma_rs_show>,
    dentry: *mut bindings::dentry,
    data: Arc<T>,
    parent: Arc<DirEntry>,
}

// SAFETY: The raw pointers are only used to remove the file, which any thread may do.
unsafe impl<T: Show> Send for File<T> {}
// SAFETY: `File` has no interior mutability of its own; `T` is `Sync`.
unsafe impl<T: Show> Sync for File<T> {}

impl<T: Show> File<T> {
    /// Creates `name` in `parent`, rendered by `data`.
    pub(crate) fn new(name: &CStr, parent: &Dir, data: Arc<T>) -> Result<Pin<KBox<Self>>> {
        let target = ptr::from_ref::<T>(&data).cast_mut().cast::<c_void>();
        let mut file = KBox::pin_init(
            pin_init!(Self {
                show <- Opaque::ffi_init(|slot: *mut bindings::rpcrdma_rs_show| {
                    // SAFETY: `slot` is valid for writes while being initialised.
                    unsafe {
                        slot.write(bindings::rpcrdma_rs_show {
                            show: Some(show_callback::<T>),
                            write: if T::WRITABLE {
                                Some(write_callback::<T>)
                            } else {
                                None
                            },
                            data: target,
                        })
                    };
                }),
                dentry: ptr::null_mut(),
                data,
                parent: parent.0.clone(),
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: `show` is pinned in the box, so its address stays valid
        // until `drop` removes the file; `name` and `parent` are valid.
        let dentry = unsafe {
            bindings::rpcrdma_rs_debugfs_create_show(
                name.as_char_ptr(),
                parent.0.dentry,
                file.show.get(),
            )
        };
        // SAFETY: Only a plain field is written; nothing is moved out of the pin.
        unsafe { file.as_mut().get_unchecked_mut() }.dentry = dentry;
        Ok(file)
    }
}

#[pinned_drop]
impl<T: Show> PinnedDrop for File<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: The file is ours (type invariant) and its directory is
        // still there (`parent`). `debugfs_remove` waits for readers and
        // writers still in the file's operations, so `data` may go after it.
        unsafe { bindings::debugfs_remove(self.dentry) };
    }
}

/// Called by the C helper for each read of the file.
///
/// # Safety
///
/// `m` is a live seq_file and `data` the `T` the file was created with.
unsafe extern "C" fn show_callback<T: Show>(
    m: *mut bindings::seq_file,
    data: *mut c_void,
) -> c_int {
    from_result(|| {
        // SAFETY: By the function's contract `data` points to a live `T`
        // (the file is removed before the `T` is dropped).
        let target = unsafe { &*data.cast::<T>() };
        // SAFETY: `m` is live for the duration of this callback.
        target.show(unsafe { SeqFile::from_raw(m) })?;
        Ok(0)
    })
}

/// Called by the C helper for each write to a writable file.
///
/// # Safety
///
/// `data` is the `T` the file was created with; `buf` points to `len`
/// readable bytes that live for the duration of the call.
unsafe extern "C" fn write_callback<T: Show>(
    data: *mut c_void,
    buf: *const kernel::ffi::c_char,
    len: usize,
) -> c_int {
    from_result(|| {
        // SAFETY: As in `show_callback`.
        let target = unsafe { &*data.cast::<T>() };
        // SAFETY: By the function's contract.
        let input = unsafe { core::slice::from_raw_parts(buf.cast::<u8>(), len) };
        target.store(input)?;
        Ok(0)
    })
}

/// Formats into a [`SeqFile`], like `seq_printf`.
macro_rules! seq_print {
    ($m:expr, $($arg:tt)+) => {
        $m.print(::core::format_args!($($arg)+))
    };
}
pub(crate) use seq_print;
