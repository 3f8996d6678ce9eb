//! The one place in this crate that needs `unsafe`: wiping secret bytes with
//! writes the optimizer may not elide.

use std::sync::atomic::{Ordering, compiler_fence};

/// Overwrites `bytes` with zeros using volatile stores, so the wipe of a
/// value that is about to be dropped is not removed as a dead store.
pub(crate) fn wipe(bytes: &mut [u8]) {
    for b in bytes.iter_mut() {
        // SAFETY: `b` is a valid, aligned, exclusive reference to an
        // initialized `u8` for the duration of the write.
        unsafe { std::ptr::write_volatile(b, 0) };
    }
    compiler_fence(Ordering::SeqCst);
}
