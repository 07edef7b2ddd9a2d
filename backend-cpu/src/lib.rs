//! The CPU backend of cuzk: the reference ("oracle") every GPU backend must match bit for bit,
//! and the default backend where no GPU exists. Multi-threaded with rayon.

#![warn(missing_docs)]

pub mod msm;
pub mod ntt;
pub mod points;

use std::sync::{Arc, Mutex};

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use rayon::prelude::*;

use cuzk_core::alloc::{heap, PinnedVec, SharedAllocator};
use cuzk_core::backend::{check_evaluation, check_rows, first_unsatisfied_row, Backend, BackendError, MsmScalars, NttDirection};
use cuzk_core::domain::Domain;
use cuzk_core::matrices::ConstraintMatrices;
use cuzk_core::params::PointFailure;

use ntt::Twiddles;

/// The CPU backend. Cheap to create; caches the twiddles of the last domains used.
#[derive(Debug, Default)]
pub struct CpuBackend {
    twiddles: Mutex<Vec<Arc<Twiddles>>>,
    witness_path: bool,
}

/// How many domains' twiddle tables to keep.
const TWIDDLE_CACHE: usize = 2;

impl CpuBackend {
    /// A new CPU backend using rayon's global pool.
    pub fn new() -> Self {
        Self::default()
    }

    /// A CPU backend that says it evaluates constraints on its "device", so provers hand it
    /// only the witness and it evaluates and checks `a, b, c` from the recorded matrices: the
    /// oracle of the path GPU backends take.
    pub fn on_witness_path() -> Self {
        CpuBackend { witness_path: true, ..Self::default() }
    }

    fn twiddles(&self, domain: &Domain) -> Arc<Twiddles> {
        let mut cache = self.twiddles.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = cache.iter().find(|t| t.log_n == domain.log_n) {
            return t.clone();
        }
        let t = Arc::new(Twiddles::new(domain));
        if cache.len() >= TWIDDLE_CACHE {
            cache.remove(0);
        }
        cache.push(t.clone());
        t
    }

    /// NTT of a host slice (the trait method works on backend buffers, which on the CPU are
    /// host buffers too).
    pub fn ntt_slice(&self, data: &mut [Scalar], domain: &Domain, direction: NttDirection, coset: bool) -> Result<(), BackendError> {
        if data.len() != domain.size() {
            return Err(BackendError::InvalidInput(format!("NTT of {} elements over a domain of {}", data.len(), domain.size())));
        }
        let tw = self.twiddles(domain);
        match direction {
            NttDirection::Forward => {
                if coset {
                    ntt::distribute_powers(data, domain.coset, Scalar::from(1u64));
                }
                ntt::ntt_with_twiddles(data, domain.log_n, &tw.forward);
            }
            NttDirection::Inverse => {
                ntt::ntt_with_twiddles(data, domain.log_n, &tw.inverse);
                if coset {
                    ntt::distribute_powers(data, domain.coset_inv, domain.n_inv);
                } else {
                    ntt::scale(data, domain.n_inv);
                }
            }
        }
        Ok(())
    }
}

fn check_msm<S>(bases_len: usize, offset: usize, scalars: &MsmScalars<'_, S>, buf_len: usize) -> Result<(), BackendError> {
    cuzk_core::msm::check_inputs(scalars, buf_len, bases_len, offset).map_err(BackendError::InvalidInput)
}

/// Rows of `A, B, C` per parallel task of [`Backend::evaluate_constraints`].
const ROWS_PER_TASK: usize = 1 << 13;

impl Backend for CpuBackend {
    type Scalars = PinnedVec<Scalar>;
    type G1Bases = Vec<G1Affine>;
    type G2Bases = Vec<G2Affine>;
    /// Host memory is the CPU's device memory: the recorded matrices are shared, not copied.
    type Matrices = Arc<ConstraintMatrices>;

    fn evaluates_constraints_on_device(&self) -> bool {
        self.witness_path
    }

    fn load_matrices(&self, m: &Arc<ConstraintMatrices>) -> Result<Self::Matrices, BackendError> {
        Ok(m.clone())
    }

    fn matrices_bytes(&self, _: &Self::Matrices) -> u64 {
        0
    }

    fn evaluate_constraints(
        &self,
        m: &Self::Matrices,
        input: &Self::Scalars,
        aux: &Self::Scalars,
        domain: &Domain,
    ) -> Result<[Self::Scalars; 3], BackendError> {
        check_evaluation(m, input.len(), aux.len(), domain)?;
        let zeros = || PinnedVec::from_elem_in(Scalar::ZERO, domain.size(), heap()).map_err(|e| BackendError::OutOfMemory(e.to_string()));
        let (mut a, mut b, mut c) = (zeros()?, zeros()?, zeros()?);
        let rows = m.num_constraints();
        a[..rows].par_chunks_mut(ROWS_PER_TASK).zip(b[..rows].par_chunks_mut(ROWS_PER_TASK)).zip(c[..rows].par_chunks_mut(ROWS_PER_TASK)).enumerate().for_each(
            |(t, ((a, b), c))| {
                let lo = t * ROWS_PER_TASK;
                m.evaluate_rows(lo..lo + a.len(), input, aux, a, b, c);
            },
        );
        Ok([a, b, c])
    }

    /// On every thread ([`points`]): the parameter loader hands its points here instead of
    /// validating while it decodes, so this is the path the GPU backends' checks take.
    fn checks_points(&self) -> bool {
        true
    }

    fn first_invalid_g1(&self, points: &[G1Affine]) -> Result<Option<PointFailure>, BackendError> {
        Ok(points::first_invalid_g1_par(points))
    }

    fn first_invalid_g2(&self, points: &[G2Affine]) -> Result<Option<PointFailure>, BackendError> {
        Ok(points::first_invalid_g2_par(points))
    }

    fn first_unsatisfied(&self, a: &Self::Scalars, b: &Self::Scalars, c: &Self::Scalars, rows: usize) -> Result<Option<usize>, BackendError> {
        check_rows(rows, [a.len(), b.len(), c.len()])?;
        // Chunks on all threads; the first failing chunk (in order) holds the first failing row.
        let chunk = |t: usize| {
            let lo = t * ROWS_PER_TASK;
            let hi = (lo + ROWS_PER_TASK).min(rows);
            first_unsatisfied_row(&a[lo..hi], &b[lo..hi], &c[lo..hi]).map(|r| lo + r)
        };
        Ok((0..rows.div_ceil(ROWS_PER_TASK)).into_par_iter().find_map_first(chunk))
    }

    fn name(&self) -> String {
        format!("cpu ({} threads)", rayon::current_num_threads())
    }

    fn host_allocator(&self) -> SharedAllocator {
        heap()
    }

    fn upload_scalars(&self, host: PinnedVec<Scalar>) -> Result<Self::Scalars, BackendError> {
        Ok(host)
    }

    fn download_scalars(&self, buf: &Self::Scalars) -> Result<Vec<Scalar>, BackendError> {
        Ok(buf.to_vec())
    }

    fn ntt(&self, buf: &mut Self::Scalars, domain: &Domain, direction: NttDirection, coset: bool) -> Result<(), BackendError> {
        self.ntt_slice(buf, domain, direction, coset)
    }

    fn quotient_on_coset(&self, a: &mut Self::Scalars, b: &Self::Scalars, c: &Self::Scalars, domain: &Domain) -> Result<(), BackendError> {
        if a.len() != b.len() || a.len() != c.len() {
            return Err(BackendError::InvalidInput("quotient of vectors of different lengths".into()));
        }
        let z = domain.z_inv_on_coset;
        a.par_iter_mut().zip(b.par_iter()).zip(c.par_iter()).with_min_len(1024).for_each(|((a, b), c)| {
            *a = (*a * b - c) * z;
        });
        Ok(())
    }

    fn load_g1(&self, points: Vec<G1Affine>) -> Result<Self::G1Bases, BackendError> {
        Ok(points)
    }

    /// Host memory is the CPU's device memory: streamed bases are the resident ones.
    fn load_g1_placed(&self, points: Vec<G1Affine>, _streamed: bool) -> Result<Self::G1Bases, BackendError> {
        Ok(points)
    }

    /// As [`Backend::load_g1_placed`]: streamed is resident.
    fn load_g2_placed(&self, points: Vec<G2Affine>, _streamed: bool) -> Result<Self::G2Bases, BackendError> {
        Ok(points)
    }

    fn load_g2(&self, points: Vec<G2Affine>) -> Result<Self::G2Bases, BackendError> {
        Ok(points)
    }

    fn g1_len(&self, bases: &Self::G1Bases) -> usize {
        bases.len()
    }

    fn g2_len(&self, bases: &Self::G2Bases) -> usize {
        bases.len()
    }

    fn msm_g1(&self, bases: &Self::G1Bases, bases_offset: usize, scalars: MsmScalars<'_, Self::Scalars>) -> Result<G1Projective, BackendError> {
        check_msm(bases.len(), bases_offset, &scalars, scalars.buf.len())?;
        Ok(msm::msm::<G1Projective>(&bases[bases_offset..], &scalars.buf[..scalars.len], scalars.density))
    }

    fn msm_g2(&self, bases: &Self::G2Bases, bases_offset: usize, scalars: MsmScalars<'_, Self::Scalars>) -> Result<G2Projective, BackendError> {
        check_msm(bases.len(), bases_offset, &scalars, scalars.buf.len())?;
        Ok(msm::msm::<G2Projective>(&bases[bases_offset..], &scalars.buf[..scalars.len], scalars.density))
    }
}
