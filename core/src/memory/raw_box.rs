//! `RawBox`: a heap value that samplers read through raw addresses published in the page
//! table. Holding it as a raw pointer (not a `Box`) means moving the owner never asserts
//! uniqueness over memory other threads are reading.

use std::ptr::NonNull;

/// An owned heap value addressed by raw pointers elsewhere.
pub struct RawBox<T: ?Sized> {
    ptr: NonNull<T>,
}

// SAFETY: RawBox owns its value like Box<T>; shared access is read-only.
unsafe impl<T: ?Sized + Send> Send for RawBox<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Sync> Sync for RawBox<T> {}

impl<T: ?Sized> RawBox<T> {
    /// Take ownership of a box.
    pub fn new(value: Box<T>) -> Self {
        RawBox {
            // Box::into_raw never returns null.
            ptr: NonNull::from(Box::leak(value)),
        }
    }

    /// The stable address of the value.
    pub fn as_ptr(&self) -> *const T {
        self.ptr.as_ptr()
    }
}

impl<T: ?Sized> std::ops::Deref for RawBox<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the pointer came from a Box and is freed only in Drop; nobody writes
        // through it while shared.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: ?Sized> Drop for RawBox<T> {
    fn drop(&mut self) {
        // SAFETY: created from Box::leak in `new`, dropped once.
        drop(unsafe { Box::from_raw(self.ptr.as_ptr()) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_is_stable_and_value_readable() {
        let b = RawBox::new(vec![1u8, 2, 3].into_boxed_slice());
        let p = b.as_ptr() as *const u8;
        let moved = b;
        assert_eq!(moved.as_ptr() as *const u8, p);
        assert_eq!(&moved[..], &[1, 2, 3]);
        // SAFETY: `moved` is alive and never written.
        assert_eq!(unsafe { *p.add(2) }, 3);
    }
}
