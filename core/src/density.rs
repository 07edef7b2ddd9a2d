//! Density bitmaps: which variables of a query have a non-zero coefficient somewhere.
//!
//! The parameter file stores query points only for variables that are present (the generator
//! drops the points at infinity), so an MSM with a density bitmap pairs the `i`-th *set* bit
//! with the `i`-th base.

use crate::alloc::{AllocError, PinnedVec, SharedAllocator};

/// A growable bitmap with a running count of set bits.
#[derive(Debug, Clone)]
pub struct DensityBitmap {
    words: PinnedVec<u64>,
    len: usize,
    count: usize,
}

impl DensityBitmap {
    /// An empty bitmap drawing its storage from `alloc`.
    pub fn new_in(alloc: SharedAllocator) -> Self {
        DensityBitmap { words: PinnedVec::new_in(alloc), len: 0, count: 0 }
    }

    /// Builds a bitmap from booleans (tests and tools).
    pub fn from_bools(bits: &[bool], alloc: SharedAllocator) -> Result<Self, AllocError> {
        let mut d = Self::new_in(alloc);
        for (i, &b) in bits.iter().enumerate() {
            d.push()?;
            if b {
                d.set(i);
            }
        }
        Ok(d)
    }

    /// Appends an unset bit (a new variable).
    #[inline]
    pub fn push(&mut self) -> Result<(), AllocError> {
        if self.len.is_multiple_of(64) {
            self.words.try_push(0)?;
        }
        self.len += 1;
        Ok(())
    }

    /// Sets bit `idx`; counts it once.
    ///
    /// # Panics
    /// If `idx >= len()`, which means a constraint used a variable that was never allocated.
    #[inline]
    pub fn set(&mut self, idx: usize) {
        assert!(idx < self.len, "density index {idx} out of range {}", self.len);
        let (w, b) = (idx / 64, idx % 64);
        let mask = 1u64 << b;
        if self.words[w] & mask == 0 {
            self.words[w] |= mask;
            self.count += 1;
        }
    }

    /// Whether bit `idx` is set.
    #[inline]
    pub fn get(&self, idx: usize) -> bool {
        idx < self.len && self.words[idx / 64] >> (idx % 64) & 1 == 1
    }

    /// Number of bits (variables).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no bits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of set bits: the number of bases the query consumes.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The raw words, least significant bit first (bit `i` is `words[i/64] >> (i%64)`).
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// A bitmap of `len` bits from its raw words ([`DensityBitmap::words`]); `None` when the
    /// words do not hold exactly `len` bits (a set bit past `len`, or a word too many or too
    /// few).
    pub fn from_words(words: &[u64], len: usize, alloc: SharedAllocator) -> Result<Option<Self>, AllocError> {
        if words.len() != len.div_ceil(64) || (!len.is_multiple_of(64) && words.last().is_some_and(|w| w >> (len % 64) != 0)) {
            return Ok(None);
        }
        let count = words.iter().map(|w| w.count_ones() as usize).sum();
        Ok(Some(DensityBitmap { words: PinnedVec::from_slice_in(words, alloc)?, len, count }))
    }

    /// Appends the bits of `other` after this bitmap's bits; with `skip_first`, the first bit
    /// of `other` is left out (it belongs to its own `ONE` input).
    pub fn extend(&mut self, other: &DensityBitmap, skip_first: bool) -> Result<(), AllocError> {
        for i in usize::from(skip_first)..other.len {
            let idx = self.len;
            self.push()?;
            if other.get(i) {
                self.set(idx);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::heap;

    #[test]
    fn counts_each_bit_once() {
        let mut d = DensityBitmap::new_in(heap());
        for _ in 0..130 {
            d.push().unwrap();
        }
        d.set(0);
        d.set(0);
        d.set(64);
        d.set(129);
        assert_eq!(d.count(), 3);
        assert!(d.get(64) && d.get(129) && !d.get(1) && !d.get(500));
        let mut e = DensityBitmap::from_bools(&[true, false, true], heap()).unwrap();
        e.extend(&d, true).unwrap();
        assert_eq!(e.len(), 3 + 129);
        assert_eq!(e.count(), 2 + 2);
    }
}
