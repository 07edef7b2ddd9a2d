//! Host buffers that a backend can make page-locked.
//!
//! Synthesis writes `a, b, c`, the assignments and the density bitmaps straight into
//! [`PinnedVec`]s obtained from a [`PinnedAllocator`]. With a GPU backend's allocator those
//! buffers are page-locked, so the host→device copy is a plain DMA at line rate; with
//! [`HeapAllocator`] they are ordinary heap memory.

use std::alloc::Layout;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Arc;

/// Alignment of every buffer handed out by a [`PinnedAllocator`], in bytes.
pub const BUFFER_ALIGN: usize = 64;

/// Failure to obtain host memory.
#[derive(Debug, thiserror::Error)]
pub enum AllocError {
    /// The allocator could not provide `bytes` bytes.
    #[error("could not allocate {bytes} bytes of host memory: {reason}")]
    OutOfMemory {
        /// Requested size.
        bytes: usize,
        /// What the allocator reported.
        reason: String,
    },
    /// The requested size overflows `usize`.
    #[error("requested buffer size overflows")]
    Overflow,
}

/// A source of (possibly page-locked) host memory.
///
/// # Safety
/// `allocate` must return a pointer aligned to [`BUFFER_ALIGN`] and valid for reads and
/// writes of the returned number of bytes (at least `min_bytes`) until it is passed back to
/// `deallocate` with that same size.
pub unsafe trait PinnedAllocator: Send + Sync + fmt::Debug {
    /// Allocates at least `min_bytes` bytes (`min_bytes > 0`); returns the pointer and the
    /// usable size, which a pooling allocator may round up.
    fn allocate(&self, min_bytes: usize) -> Result<(NonNull<u8>, usize), AllocError>;

    /// Returns memory obtained from `allocate`.
    ///
    /// # Safety
    /// `ptr` and `bytes` must be exactly what `allocate` returned, and the memory must not be
    /// used afterwards.
    unsafe fn deallocate(&self, ptr: NonNull<u8>, bytes: usize);

    /// Whether the memory is page-locked (DMA-able without staging).
    fn is_page_locked(&self) -> bool {
        false
    }
}

/// Plain heap memory; the default when no backend provides page-locked memory.
#[derive(Debug, Default, Clone, Copy)]
pub struct HeapAllocator;

unsafe impl PinnedAllocator for HeapAllocator {
    fn allocate(&self, min_bytes: usize) -> Result<(NonNull<u8>, usize), AllocError> {
        let layout = Layout::from_size_align(min_bytes, BUFFER_ALIGN).map_err(|_| AllocError::Overflow)?;
        // SAFETY: layout has non-zero size (callers never ask for 0 bytes).
        let ptr = unsafe { std::alloc::alloc(layout) };
        NonNull::new(ptr).map(|p| (p, min_bytes)).ok_or_else(|| AllocError::OutOfMemory { bytes: min_bytes, reason: "heap exhausted".into() })
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, bytes: usize) {
        // SAFETY: same layout as in `allocate`.
        unsafe { std::alloc::dealloc(ptr.as_ptr(), Layout::from_size_align_unchecked(bytes, BUFFER_ALIGN)) }
    }
}

/// A shared handle to an allocator.
pub type SharedAllocator = Arc<dyn PinnedAllocator>;

/// Returns a shared [`HeapAllocator`].
pub fn heap() -> SharedAllocator {
    Arc::new(HeapAllocator)
}

/// A growable vector of plain-old-data elements whose storage comes from a
/// [`PinnedAllocator`].
///
/// `T` must be `Copy` with no drop glue and an alignment of at most [`BUFFER_ALIGN`].
pub struct PinnedVec<T: Copy> {
    ptr: NonNull<T>,
    len: usize,
    /// Capacity in elements.
    cap: usize,
    /// Size of the allocation in bytes (0 when nothing is allocated).
    bytes: usize,
    alloc: SharedAllocator,
    _marker: PhantomData<T>,
}

// SAFETY: PinnedVec owns its elements like Vec does.
unsafe impl<T: Copy + Send> Send for PinnedVec<T> {}
// SAFETY: shared access only hands out `&[T]`.
unsafe impl<T: Copy + Sync> Sync for PinnedVec<T> {}

impl<T: Copy> PinnedVec<T> {
    /// An empty vector that will allocate from `alloc` when it grows.
    pub fn new_in(alloc: SharedAllocator) -> Self {
        assert!(std::mem::align_of::<T>() <= BUFFER_ALIGN && std::mem::size_of::<T>() > 0);
        PinnedVec { ptr: NonNull::dangling(), len: 0, cap: 0, bytes: 0, alloc, _marker: PhantomData }
    }

    /// An empty vector with room for `cap` elements.
    pub fn with_capacity_in(cap: usize, alloc: SharedAllocator) -> Result<Self, AllocError> {
        let mut v = Self::new_in(alloc);
        v.try_reserve(cap)?;
        Ok(v)
    }

    /// A vector of `len` copies of `value`.
    pub fn from_elem_in(value: T, len: usize, alloc: SharedAllocator) -> Result<Self, AllocError> {
        let mut v = Self::with_capacity_in(len, alloc)?;
        v.try_resize(len, value)?;
        Ok(v)
    }

    /// A copy of `src`.
    pub fn from_slice_in(src: &[T], alloc: SharedAllocator) -> Result<Self, AllocError> {
        let mut v = Self::with_capacity_in(src.len(), alloc)?;
        v.try_extend_from_slice(src)?;
        Ok(v)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the vector is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Capacity in elements.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// The allocator this vector draws from.
    pub fn allocator(&self) -> &SharedAllocator {
        &self.alloc
    }

    /// Whether the storage is page-locked.
    pub fn is_page_locked(&self) -> bool {
        self.alloc.is_page_locked()
    }

    /// Makes room for at least `additional` more elements.
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), AllocError> {
        let needed = self.len.checked_add(additional).ok_or(AllocError::Overflow)?;
        if needed <= self.cap {
            return Ok(());
        }
        let new_cap = needed.max(self.cap.saturating_mul(2)).max(64);
        let size = std::mem::size_of::<T>();
        let want = new_cap.checked_mul(size).ok_or(AllocError::Overflow)?;
        let (raw, got) = self.alloc.allocate(want)?;
        let new_ptr = raw.cast::<T>();
        // SAFETY: both regions are valid for `len` elements and do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.as_ptr(), new_ptr.as_ptr(), self.len) };
        self.release();
        self.ptr = new_ptr;
        self.bytes = got;
        self.cap = got / size;
        Ok(())
    }

    /// Appends an element, growing if needed.
    #[inline]
    pub fn try_push(&mut self, value: T) -> Result<(), AllocError> {
        if self.len == self.cap {
            self.try_reserve(1)?;
        }
        // SAFETY: len < cap.
        unsafe { self.ptr.as_ptr().add(self.len).write(value) };
        self.len += 1;
        Ok(())
    }

    /// Appends all of `src`.
    pub fn try_extend_from_slice(&mut self, src: &[T]) -> Result<(), AllocError> {
        self.try_reserve(src.len())?;
        // SAFETY: reserved above; regions do not overlap (src is borrowed elsewhere).
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.as_ptr().add(self.len), src.len()) };
        self.len += src.len();
        Ok(())
    }

    /// Grows (filling with `value`) or truncates to `new_len`.
    pub fn try_resize(&mut self, new_len: usize, value: T) -> Result<(), AllocError> {
        if new_len <= self.len {
            self.len = new_len;
            return Ok(());
        }
        self.try_reserve(new_len - self.len)?;
        for i in self.len..new_len {
            // SAFETY: i < cap after reserve.
            unsafe { self.ptr.as_ptr().add(i).write(value) };
        }
        self.len = new_len;
        Ok(())
    }

    /// Shortens the vector to `len` elements (no-op if already shorter).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Removes all elements, keeping the storage.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    fn release(&mut self) {
        if self.bytes != 0 {
            // SAFETY: ptr/bytes came from this allocator.
            unsafe { self.alloc.deallocate(self.ptr.cast(), self.bytes) };
            self.bytes = 0;
            self.cap = 0;
            self.ptr = NonNull::dangling();
        }
    }
}

impl<T: Copy> Drop for PinnedVec<T> {
    fn drop(&mut self) {
        self.release();
    }
}

impl<T: Copy> Deref for PinnedVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the first `len` elements are initialized.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> DerefMut for PinnedVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: the first `len` elements are initialized and uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy + fmt::Debug> fmt::Debug for PinnedVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedVec").field("len", &self.len).field("page_locked", &self.is_page_locked()).finish()
    }
}

impl<T: Copy> Clone for PinnedVec<T> {
    /// Copies into a new buffer from the same allocator.
    ///
    /// # Panics
    /// If the allocator is out of memory, like `Vec::clone`.
    fn clone(&self) -> Self {
        Self::from_slice_in(self, self.alloc.clone()).expect("out of host memory while cloning a PinnedVec")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_and_keeps_contents() {
        let mut v = PinnedVec::<u64>::new_in(heap());
        for i in 0..10_000u64 {
            v.try_push(i * 3).unwrap();
        }
        assert_eq!(v.len(), 10_000);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64 * 3));
        v.try_resize(10_005, 7).unwrap();
        assert_eq!(&v[10_000..], &[7; 5]);
        v.truncate(3);
        assert_eq!(&*v, &[0, 3, 6]);
        let c = v.clone();
        assert_eq!(&*c, &[0, 3, 6]);
        assert_eq!(v.as_ptr() as usize % BUFFER_ALIGN, 0);
    }

    #[test]
    fn absurd_sizes_fail_cleanly() {
        let mut v = PinnedVec::<[u64; 4]>::new_in(heap());
        assert!(v.try_reserve(usize::MAX / 2).is_err());
    }
}
