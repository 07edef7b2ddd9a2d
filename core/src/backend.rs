//! The interface every compute backend (CPU oracle, CUDA, wgpu) implements.
//!
//! Buffers are associated types so a GPU backend keeps data on the device between calls:
//! `a, b, c` are uploaded once, transformed in place, and only MSM results come back.

use std::sync::Arc;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;

use crate::alloc::{PinnedVec, SharedAllocator};
use crate::density::DensityBitmap;
use crate::domain::Domain;
use crate::matrices::ConstraintMatrices;
use crate::params::PointFailure;

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

/// [`Backend::compute_h`] as the textbook composes it from the backend's own steps: each of
/// `a, b, c` to coefficients and on to the coset (six transforms), the quotient there, and back
/// (a seventh). The CPU backend, the oracle, computes `h` this way; benchmarks time a backend's
/// own `compute_h` against it.
pub fn compute_h_in_steps<B: Backend + ?Sized>(
    backend: &B,
    mut a: B::Scalars,
    mut b: B::Scalars,
    mut c: B::Scalars,
    domain: &Domain,
) -> Result<B::Scalars, BackendError> {
    for v in [&mut a, &mut b, &mut c] {
        backend.ntt(v, domain, NttDirection::Inverse, false)?;
        backend.ntt(v, domain, NttDirection::Forward, true)?;
    }
    backend.quotient_on_coset(&mut a, &b, &c, domain)?;
    drop((b, c));
    backend.ntt(&mut a, domain, NttDirection::Inverse, true)?;
    Ok(a)
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
    /// A circuit's constraint matrices, resident on the backend (device memory on a GPU).
    type Matrices: Send + Sync;

    /// A short name for logs and tables (`"cpu"`, `"cuda:0 NVIDIA H200"`).
    fn name(&self) -> String;

    /// The allocator synthesis should write into so uploads are DMA-able.
    fn host_allocator(&self) -> SharedAllocator;

    /// Free memory of the backend's own device, bytes, measured now; `None` for a backend
    /// without memory of its own (the CPU backend) or one that cannot tell.
    fn free_memory(&self) -> Option<u64> {
        None
    }

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
    /// The default is [`compute_h_in_steps`]; backends may fuse the steps or take fewer.
    fn compute_h(&self, a: Self::Scalars, b: Self::Scalars, c: Self::Scalars, domain: &Domain) -> Result<Self::Scalars, BackendError> {
        compute_h_in_steps(self, a, b, c, domain)
    }

    /// Makes a circuit's recorded constraint matrices resident (once per circuit and device).
    fn load_matrices(&self, m: &Arc<ConstraintMatrices>) -> Result<Self::Matrices, BackendError>;

    /// Bytes that resident matrices occupy on the backend (for memory budgets and status).
    fn matrices_bytes(&self, m: &Self::Matrices) -> u64;

    /// `a = A·w, b = B·w, c = C·w` for the witness `w = (input, aux)` already on the backend,
    /// each padded with zeros to `domain.size()`: the NTT's operands, without `a, b, c` ever
    /// existing on the host. `input` and `aux` hold at least the matrices' inputs and aux
    /// variables; the domain holds at least their constraints.
    fn evaluate_constraints(&self, m: &Self::Matrices, input: &Self::Scalars, aux: &Self::Scalars, domain: &Domain)
        -> Result<[Self::Scalars; 3], BackendError>;

    /// The first (lowest) row `r < rows` whose constraint `a[r]·b[r] = c[r]` is violated, or
    /// `None` when every row holds: the satisfaction check of evaluated `a, b, c` where they
    /// are, so an unsatisfied witness fails its job instead of yielding an invalid proof. Rows
    /// from `rows` on (the domain's padding) are not read; `rows` beyond any buffer is
    /// [`BackendError::InvalidInput`].
    ///
    /// The default downloads the three buffers and checks them on the calling thread
    /// ([`first_unsatisfied_row`]); backends override it to check where the buffers live.
    fn first_unsatisfied(&self, a: &Self::Scalars, b: &Self::Scalars, c: &Self::Scalars, rows: usize) -> Result<Option<usize>, BackendError> {
        let (a, b, c) = (self.download_scalars(a)?, self.download_scalars(b)?, self.download_scalars(c)?);
        check_rows(rows, [a.len(), b.len(), c.len()])?;
        Ok(first_unsatisfied_row(&a[..rows], &b[..rows], &c[..rows]))
    }

    /// Whether [`Backend::evaluate_constraints`] runs on the device itself (so provers should
    /// move only the witness); `false` when it goes through the host.
    fn evaluates_constraints_on_device(&self) -> bool {
        false
    }

    /// Whether [`Backend::first_invalid_g1`] and [`Backend::first_invalid_g2`] are fast (on the
    /// device, or on every host thread), so that a parameter file validated in full is decoded
    /// with the cheap checks only (the encoding, the point at infinity) and its points are
    /// checked here; `false` by default (the defaults run on the calling thread), and the
    /// loader then validates while it decodes.
    fn checks_points(&self) -> bool {
        false
    }

    /// The first (lowest-index) point of `points` that is the point at infinity, off the curve
    /// or outside the prime-order subgroup, and why; `None` when every point passes. Exactly
    /// [`first_invalid_g1`](crate::params::first_invalid_g1), the blst oracle, which the
    /// default runs on the calling thread. Coordinates are reduced field elements (as every
    /// blstrs value is).
    fn first_invalid_g1(&self, points: &[G1Affine]) -> Result<Option<PointFailure>, BackendError> {
        Ok(crate::params::first_invalid_g1(points))
    }

    /// G2 counterpart of [`Backend::first_invalid_g1`].
    fn first_invalid_g2(&self, points: &[G2Affine]) -> Result<Option<PointFailure>, BackendError> {
        Ok(crate::params::first_invalid_g2(points))
    }

    /// Makes G1 points resident.
    fn load_g1(&self, points: Vec<G1Affine>) -> Result<Self::G1Bases, BackendError>;

    /// Makes G2 points resident.
    fn load_g2(&self, points: Vec<G2Affine>) -> Result<Self::G2Bases, BackendError>;

    /// Loads G1 bases placed as asked: `streamed` keeps them in page-locked host memory and
    /// streams them through the device in chunks during each MSM (for parameters larger than
    /// the device's budget), otherwise they are resident as with [`Backend::load_g1`]. The
    /// default ignores `streamed`: a backend whose device memory is host memory (the CPU) or
    /// that cannot stream (wgpu) loads them resident.
    fn load_g1_placed(&self, points: Vec<G1Affine>, streamed: bool) -> Result<Self::G1Bases, BackendError> {
        let _ = streamed;
        self.load_g1(points)
    }

    /// G2 counterpart of [`Backend::load_g1_placed`].
    fn load_g2_placed(&self, points: Vec<G2Affine>, streamed: bool) -> Result<Self::G2Bases, BackendError> {
        let _ = streamed;
        self.load_g2(points)
    }

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

/// Checks that `domain` and witness lengths fit the matrices of [`Backend::evaluate_constraints`].
pub fn check_evaluation(m: &ConstraintMatrices, input_len: usize, aux_len: usize, domain: &Domain) -> Result<(), BackendError> {
    if input_len < m.num_inputs || aux_len < m.num_aux {
        return Err(BackendError::InvalidInput(format!(
            "witness of {input_len} inputs and {aux_len} aux variables for matrices of {} and {}",
            m.num_inputs, m.num_aux
        )));
    }
    if m.num_constraints() > domain.size() {
        return Err(BackendError::InvalidInput(format!("{} constraints do not fit a domain of {}", m.num_constraints(), domain.size())));
    }
    Ok(())
}

/// Checks that `rows` rows of a [`Backend::first_unsatisfied`] fit buffers of `lens` scalars.
pub fn check_rows(rows: usize, lens: [usize; 3]) -> Result<(), BackendError> {
    if lens.iter().any(|&l| l < rows) {
        return Err(BackendError::InvalidInput(format!("satisfaction check of {rows} rows on buffers of {lens:?} scalars")));
    }
    Ok(())
}

/// The first index `r` with `a[r]·b[r] ≠ c[r]` over the shortest of the three slices, on the
/// calling thread (the host oracle of [`Backend::first_unsatisfied`]).
pub fn first_unsatisfied_row(a: &[Scalar], b: &[Scalar], c: &[Scalar]) -> Option<usize> {
    a.iter().zip(b).zip(c).position(|((a, b), c)| *a * b != *c)
}

/// [`Backend::evaluate_constraints`] through the host, on the calling thread: downloads the
/// witness, evaluates every row and uploads `a, b, c`. For backends without a kernel for it.
pub fn evaluate_on_host<B: Backend>(
    backend: &B,
    m: &ConstraintMatrices,
    input: &B::Scalars,
    aux: &B::Scalars,
    domain: &Domain,
) -> Result<[B::Scalars; 3], BackendError> {
    let (input, aux) = (backend.download_scalars(input)?, backend.download_scalars(aux)?);
    check_evaluation(m, input.len(), aux.len(), domain)?;
    let (alloc, n, rows) = (backend.host_allocator(), domain.size(), m.num_constraints());
    let zeros = || PinnedVec::from_elem_in(Scalar::ZERO, n, alloc.clone()).map_err(|e| BackendError::OutOfMemory(e.to_string()));
    let (mut a, mut b, mut c) = (zeros()?, zeros()?, zeros()?);
    m.evaluate_rows(0..rows, &input, &aux, &mut a[..rows], &mut b[..rows], &mut c[..rows]);
    Ok([backend.upload_scalars(a)?, backend.upload_scalars(b)?, backend.upload_scalars(c)?])
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
