//! The interface every compute backend (CPU oracle, CUDA, wgpu) implements.
//!
//! Buffers are associated types so a GPU backend keeps data on the device between calls:
//! `a, b, c` are uploaded once, transformed in place, and only MSM results come back.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};

use crate::alloc::{PinnedVec, SharedAllocator};
use crate::density::DensityBitmap;
use crate::domain::Domain;

/// Direction of a number-theoretic transform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NttDirection {
    /// Coefficients → evaluations.
    Forward,
    /// Evaluations → coefficients (scaled by `1/n`).
    Inverse,
}

/// A backend failure.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// Device (or host) memory ran out.
    #[error("out of memory: {0}")]
    OutOfMemory(String),
    /// Arguments are inconsistent (lengths, ranges, domain sizes).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The device or its driver reported an error.
    #[error("device error: {0}")]
    Device(String),
    /// The backend is not available on this machine (no device, no driver).
    #[error("backend unavailable: {0}")]
    Unavailable(String),
}

/// A source of scalars for an MSM: the first `len` scalars of `buf`, optionally filtered by a
/// density bitmap (then `density.len() == len` and `density.count()` bases are consumed).
pub struct MsmScalars<'a, S> {
    /// The scalar buffer.
    pub buf: &'a S,
    /// How many leading scalars take part.
    pub len: usize,
    /// Present variables, if the query is sparse.
    pub density: Option<&'a DensityBitmap>,
}

impl<S> MsmScalars<'_, S> {
    /// Number of bases the MSM consumes.
    pub fn bases_needed(&self) -> usize {
        self.density.map_or(self.len, DensityBitmap::count)
    }
}

impl<S> Clone for MsmScalars<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S> Copy for MsmScalars<'_, S> {}

/// The user's cuzk cache directory, where backends keep what they compile (kernel images,
/// pipeline caches): `$XDG_CACHE_HOME/cuzk`, else `~/.cache/cuzk`; `None` without either.
pub fn user_cache_dir() -> Option<std::path::PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .map(|x| std::path::PathBuf::from(x).join("cuzk"))
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache").join("cuzk")))
}

/// A compute backend: buffers, the NTT family, the quotient, and G1/G2 MSM.
///
/// Every backend must produce exactly the results of the CPU backend (the oracle).
pub trait Backend: Send + Sync {
    /// A vector of scalars owned by the backend (device memory on a GPU).
    type Scalars: Send + Sync;
    /// Resident G1 bases.
    type G1Bases: Send + Sync;
    /// Resident G2 bases.
    type G2Bases: Send + Sync;

    /// A short name for logs and tables (`"cpu"`, `"cuda:0 NVIDIA H200"`).
    fn name(&self) -> String;

    /// The allocator synthesis should write into so uploads are DMA-able.
    fn host_allocator(&self) -> SharedAllocator;

    /// Blocks until all work queued on the backend has finished (a no-op for synchronous
    /// backends). Only for measuring stages separately; the prover never needs it.
    fn wait_idle(&self) -> Result<(), BackendError> {
        Ok(())
    }

    /// Moves host scalars into a backend buffer (the CPU backend adopts the buffer as is).
    fn upload_scalars(&self, host: PinnedVec<Scalar>) -> Result<Self::Scalars, BackendError>;

    /// Copies a backend buffer back to the host.
    fn download_scalars(&self, buf: &Self::Scalars) -> Result<Vec<Scalar>, BackendError>;

    /// In-place NTT of the whole buffer over `domain` (`buf` length must be `domain.size()`);
    /// with `coset`, the forward transform evaluates on `g·<ω>` and the inverse interpolates
    /// from it.
    fn ntt(&self, buf: &mut Self::Scalars, domain: &Domain, direction: NttDirection, coset: bool) -> Result<(), BackendError>;

    /// On the coset: `a ← (a·b − c) / Z`, element-wise.
    fn quotient_on_coset(&self, a: &mut Self::Scalars, b: &Self::Scalars, c: &Self::Scalars, domain: &Domain) -> Result<(), BackendError>;

    /// The coefficients of `h = (A·B − C)/Z` from the evaluations `a, b, c` (each of length
    /// `domain.size()`); consumes `b` and `c`, returns the buffer that held `a`.
    ///
    /// The default composes [`Backend::ntt`] and [`Backend::quotient_on_coset`]; backends may
    /// fuse the steps.
    fn compute_h(&self, mut a: Self::Scalars, mut b: Self::Scalars, mut c: Self::Scalars, domain: &Domain) -> Result<Self::Scalars, BackendError> {
        for v in [&mut a, &mut b, &mut c] {
            self.ntt(v, domain, NttDirection::Inverse, false)?;
            self.ntt(v, domain, NttDirection::Forward, true)?;
        }
        self.quotient_on_coset(&mut a, &b, &c, domain)?;
        drop((b, c));
        self.ntt(&mut a, domain, NttDirection::Inverse, true)?;
        Ok(a)
    }

    /// Makes G1 points resident.
    fn load_g1(&self, points: Vec<G1Affine>) -> Result<Self::G1Bases, BackendError>;

    /// Makes G2 points resident.
    fn load_g2(&self, points: Vec<G2Affine>) -> Result<Self::G2Bases, BackendError>;

    /// Number of points in resident G1 bases.
    fn g1_len(&self, bases: &Self::G1Bases) -> usize;

    /// Number of points in resident G2 bases.
    fn g2_len(&self, bases: &Self::G2Bases) -> usize;

    /// `Σ sᵢ·Pᵢ` over the scalars of `scalars` (density-filtered) and the bases starting at
    /// `bases_offset`.
    fn msm_g1(&self, bases: &Self::G1Bases, bases_offset: usize, scalars: MsmScalars<'_, Self::Scalars>) -> Result<G1Projective, BackendError>;

    /// G2 counterpart of [`Backend::msm_g1`].
    fn msm_g2(&self, bases: &Self::G2Bases, bases_offset: usize, scalars: MsmScalars<'_, Self::Scalars>) -> Result<G2Projective, BackendError>;
}

/// Combines Pippenger window sums: `sum_w 2^(c·w) · S_w` (window 0 first) by Horner's rule.
pub fn combine_windows<G: group::Group>(windows: &[G], c: u32) -> G {
    let mut acc = G::identity();
    for (i, s) in windows.iter().enumerate().rev() {
        if i + 1 != windows.len() {
            for _ in 0..c {
                acc = acc.double();
            }
        }
        acc += s;
    }
    acc
}
