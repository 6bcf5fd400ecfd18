//! The panic boundary and the checked conversions every entry point uses: pointers in
//! (NULL, `struct_size`), pointers out (written only on success), C strings (UTF-8).

use crate::status::{set_last_error, ApiError, ApiResult, DtexStatus, DTEX_STATUS_INTERNAL};
use crate::status::{DTEX_STATUS_INVALID_ARGUMENT, DTEX_STATUS_OK};
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

/// Run the body of one C entry point: a panic becomes `DTEX_STATUS_INTERNAL`, an error its
/// status; either way the message becomes this thread's last error.
pub fn entry(body: impl FnOnce() -> ApiResult<()>) -> DtexStatus {
    // AssertUnwindSafe: after a panic nothing the body touched is used again by this call,
    // and shared state is behind locks that parking_lot does not poison (the engine keeps
    // its own invariants across panics, as its fill workers do).
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => DTEX_STATUS_OK,
        Ok(Err(e)) => {
            set_last_error(&e.message);
            e.status
        }
        Err(payload) => {
            let what = engine::error::panic_message(&*payload);
            set_last_error(&format!("internal error (caught panic): {what}"));
            DTEX_STATUS_INTERNAL
        }
    }
}

/// Run an entry point that returns a value rather than a status (a `void` function, or a
/// constant): a panic gives `fallback`.
pub fn entry_value<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

/// A struct whose first field is `uint32_t struct_size`.
///
/// # Safety
/// Implementors must be `#[repr(C)]` with a `u32` `struct_size` as the first field.
pub unsafe trait Versioned: Sized {
    /// The C name, for messages.
    const NAME: &'static str;
    /// The `struct_size` values of the versions this library knows (today only the
    /// current one; an appended field adds the new size and keeps the old ones).
    const KNOWN_SIZES: &'static [u32] = &[std::mem::size_of::<Self>() as u32];
}

/// Check a `struct_size` against the known versions of `T`.
fn check_struct_size<T: Versioned>(size: u32) -> ApiResult<()> {
    if T::KNOWN_SIZES.contains(&size) {
        Ok(())
    } else {
        Err(ApiError::new(
            DTEX_STATUS_INVALID_ARGUMENT,
            format!(
                "{}.struct_size is {size}, expected {} (set it with the *_default function \
                 or to sizeof({}))",
                T::NAME,
                std::mem::size_of::<T>(),
                T::NAME
            ),
        ))
    }
}

/// An optional versioned input: NULL gives `None`; otherwise `struct_size` must be known.
///
/// # Safety
/// `ptr` is NULL or points to a readable, initialised `T` that outlives `'a`.
pub unsafe fn optional_in<'a, T: Versioned>(ptr: *const T) -> ApiResult<Option<&'a T>> {
    // SAFETY: the caller's contract: NULL or valid for reads for 'a.
    let Some(value) = (unsafe { ptr.as_ref() }) else {
        return Ok(None);
    };
    // SAFETY: `Versioned` guarantees the first field is the u32 struct_size.
    let size = unsafe { *(ptr as *const u32) };
    check_struct_size::<T>(size)?;
    Ok(Some(value))
}

/// An optional versioned input that may be an older, shorter version of `T` (a caller
/// built against an older header): NULL gives `None`; otherwise `struct_size` must be known,
/// and its first `struct_size` bytes (the fields that version has: every known size ends
/// at a field, with no padding) are copied over `T::default()`, so fields it lacks keep
/// their defaults.
///
/// # Safety
/// `ptr` is NULL or points to `struct_size` readable bytes of a `T`.
pub unsafe fn optional_in_prefix<T: Versioned + Default>(ptr: *const T) -> ApiResult<Option<T>> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: `Versioned` guarantees the first field is the u32 struct_size.
    let size = unsafe { *(ptr as *const u32) };
    check_struct_size::<T>(size)?;
    let n = (size as usize).min(std::mem::size_of::<T>());
    let mut value = T::default();
    // SAFETY: the caller's `n` ≤ struct_size bytes are readable; `value` is a plain repr(C)
    // struct of at least `n` bytes whose fields are integers and floats (any bits valid).
    unsafe {
        std::ptr::copy_nonoverlapping(ptr as *const u8, &mut value as *mut T as *mut u8, n);
    }
    Ok(Some(value))
}

/// A required versioned input: NULL is `DTEX_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// As [`optional_in`].
pub unsafe fn required_in<'a, T: Versioned>(ptr: *const T, what: &str) -> ApiResult<&'a T> {
    // SAFETY: forwarded contract.
    unsafe { optional_in(ptr) }?.ok_or_else(|| null_argument(what))
}

/// A required plain input (no `struct_size`): NULL is `DTEX_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `ptr` is NULL or points to a readable, initialised `T` that outlives `'a`.
pub unsafe fn plain_in<'a, T>(ptr: *const T, what: &str) -> ApiResult<&'a T> {
    // SAFETY: the caller's contract.
    unsafe { ptr.as_ref() }.ok_or_else(|| null_argument(what))
}

/// `count` elements at `ptr` as a slice; NULL is allowed only when `count` is 0.
///
/// # Safety
/// `ptr` is NULL or points to `count` readable, initialised `T`s that outlive `'a`.
pub unsafe fn slice_in<'a, T>(ptr: *const T, count: usize, what: &str) -> ApiResult<&'a [T]> {
    if count == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(null_argument(what));
    }
    check_array_bytes::<T>(count, what)?;
    // SAFETY: non-null, and the caller promises `count` valid elements.
    Ok(unsafe { std::slice::from_raw_parts(ptr, count) })
}

/// `count` writable elements at `ptr`; NULL is allowed only when `count` is 0.
///
/// # Safety
/// `ptr` is NULL or points to `count` writable `T`s, not aliased while the result lives.
pub unsafe fn slice_out<T: Copy>(ptr: *mut T, count: usize, what: &str) -> ApiResult<OutSlice<T>> {
    if count == 0 {
        return Ok(OutSlice {
            ptr: NonNull::dangling(),
            len: 0,
        });
    }
    let ptr = NonNull::new(ptr).ok_or_else(|| null_argument(what))?;
    check_array_bytes::<T>(count, what)?;
    Ok(OutSlice { ptr, len: count })
}

/// An output array in caller memory, written element by element and never read (it may
/// be uninitialised).
pub struct OutSlice<T> {
    ptr: NonNull<T>,
    len: usize,
}

impl<T: Copy> OutSlice<T> {
    /// Elements in the array.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the array is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Store `value` at `index` (panics past the end: a bug here, caught at the boundary).
    #[inline]
    pub fn set(&mut self, index: usize, value: T) {
        assert!(index < self.len, "output index {index} past {}", self.len);
        // SAFETY: `slice_out`'s contract: `len` writable elements; index checked.
        unsafe { self.ptr.as_ptr().add(index).write(value) }
    }
}

/// Reject an array whose size in bytes overflows `isize` (a garbage count).
fn check_array_bytes<T>(count: usize, what: &str) -> ApiResult<()> {
    match count.checked_mul(std::mem::size_of::<T>()) {
        Some(b) if b <= isize::MAX as usize => Ok(()),
        _ => Err(ApiError::invalid_argument(format!(
            "{what}: a count of {count} is too large"
        ))),
    }
}

/// An out pointer, checked non-NULL up front and written once, at the end, on success.
pub struct Out<T>(NonNull<T>);

impl<T> Out<T> {
    /// Check `ptr` (NULL is `DTEX_STATUS_INVALID_ARGUMENT`).
    ///
    /// # Safety
    /// `ptr` is NULL or valid for writing one `T` until [`write`](Self::write).
    pub unsafe fn new(ptr: *mut T, what: &str) -> ApiResult<Out<T>> {
        NonNull::new(ptr)
            .map(Out)
            .ok_or_else(|| null_argument(what))
    }

    /// An optional out pointer: NULL gives `None`.
    ///
    /// # Safety
    /// As [`new`](Self::new).
    pub unsafe fn optional(ptr: *mut T) -> Option<Out<T>> {
        NonNull::new(ptr).map(Out)
    }

    /// Store `value` (the old contents are not dropped: they are plain C data).
    pub fn write(self, value: T) {
        // SAFETY: `new`'s contract: valid for writing one T.
        unsafe { self.0.as_ptr().write(value) }
    }

    /// Read what the caller left there (for `struct_size` of out structs).
    ///
    /// # Safety
    /// The pointee must be readable and initialised as far as `T`'s first `u32`.
    pub unsafe fn read_struct_size(&self) -> u32 {
        // SAFETY: the caller's contract.
        unsafe { *(self.0.as_ptr() as *const u32) }
    }
}

/// An out struct with a caller-set `struct_size` (e.g. `DtexStats`): checked up front and
/// written only as far as the caller's version of the struct goes.
pub struct VersionedOut<T> {
    out: Out<T>,
    size: u32,
}

impl<T: Versioned> VersionedOut<T> {
    /// Store the first `struct_size` bytes of `value` (a caller built against an older
    /// header gets the fields its struct has), keeping the caller's `struct_size`.
    pub fn write(self, value: T) {
        let n = (self.size as usize).min(std::mem::size_of::<T>());
        // SAFETY: `versioned_out`'s contract: the destination holds the caller's version of
        // T, `struct_size` = `n` bytes (a known size, at most size_of::<T>()); `value` is a
        // plain repr(C) struct, so its first `n` bytes are its first fields. Then the
        // caller's struct_size is put back.
        unsafe {
            let dst = self.out.0.as_ptr() as *mut u8;
            std::ptr::copy_nonoverlapping(&value as *const T as *const u8, dst, n);
            *(dst as *mut u32) = self.size;
        }
    }
}

/// Check an out struct with a caller-set `struct_size` (NULL or an unknown size is
/// `DTEX_STATUS_INVALID_ARGUMENT`).
///
/// # Safety
/// `ptr` is NULL or valid for reading and writing `struct_size` bytes of a `T`.
pub unsafe fn versioned_out<T: Versioned>(ptr: *mut T, what: &str) -> ApiResult<VersionedOut<T>> {
    // SAFETY: forwarded contract.
    let out = unsafe { Out::new(ptr, what) }?;
    // SAFETY: readable, per the contract.
    let size = unsafe { out.read_struct_size() };
    check_struct_size::<T>(size)?;
    Ok(VersionedOut { out, size })
}

/// A required UTF-8 C string.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that outlives `'a`.
pub unsafe fn c_str<'a>(ptr: *const c_char, what: &str) -> ApiResult<&'a str> {
    // SAFETY: forwarded contract.
    unsafe { optional_c_str(ptr, what) }?.ok_or_else(|| null_argument(what))
}

/// An optional UTF-8 C string: NULL gives `None`.
///
/// # Safety
/// As [`c_str`].
pub unsafe fn optional_c_str<'a>(ptr: *const c_char, what: &str) -> ApiResult<Option<&'a str>> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null and NUL-terminated per the contract.
    let s = unsafe { CStr::from_ptr(ptr) };
    s.to_str().map(Some).map_err(|e| {
        ApiError::invalid_argument(format!(
            "{what} is not valid UTF-8 (byte {}): {}",
            e.valid_up_to(),
            s.to_string_lossy()
        ))
    })
}

/// The error for a NULL required pointer.
pub fn null_argument(what: &str) -> ApiError {
    ApiError::invalid_argument(format!("{what} is NULL"))
}

/// A C boolean (`uint32_t` 0 or 1).
pub fn c_bool(value: u32, what: &str) -> ApiResult<bool> {
    match value {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(ApiError::invalid_argument(format!(
            "{what} is {v} (a boolean: 0 or 1)"
        ))),
    }
}

/// A `reserved` field, which must be 0 so that it can be given a meaning later.
pub fn check_reserved(value: u32, what: &str) -> ApiResult<()> {
    if value == 0 {
        Ok(())
    } else {
        Err(ApiError::invalid_argument(format!(
            "{what} is {value} (reserved: must be 0)"
        )))
    }
}
