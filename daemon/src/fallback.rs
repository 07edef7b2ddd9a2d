//! The GPU backends with the CPU backend beside them as a fallback device
//! (`engine.cpu_fallback`): one backend type over both, so one worker drives the GPUs and the
//! CPU alike, and the engine sends the CPU only what no GPU may take (a retry after a GPU
//! fault when no other GPU is in service, or everything once every GPU is out of service).

use std::sync::Arc;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};

use cuzk_backend_cpu::CpuBackend;
use cuzk_core::alloc::{PinnedVec, SharedAllocator};
use cuzk_core::backend::{Backend, BackendError, MsmScalars, NttDirection};
use cuzk_core::domain::Domain;
use cuzk_core::matrices::ConstraintMatrices;

/// A GPU backend, or the CPU backend standing in for one.
pub enum OrCpu<G> {
    /// A GPU.
    Gpu(G),
    /// The CPU fallback.
    Cpu(CpuBackend),
}

/// A value of the GPU backend or of the CPU backend (their buffers, bases and matrices).
pub enum Side<G, C> {
    /// Made by the GPU backend.
    Gpu(G),
    /// Made by the CPU backend.
    Cpu(C),
}

type Cpu = CpuBackend;

fn mismatch(what: &str) -> BackendError {
    BackendError::InvalidInput(format!("{what} belongs to the other backend (GPU and CPU fallback buffers do not mix)"))
}

impl<G: Backend> OrCpu<G> {
    fn msm_parts<'a>(
        scalars: MsmScalars<'a, Side<G::Scalars, <Cpu as Backend>::Scalars>>,
    ) -> Side<MsmScalars<'a, G::Scalars>, MsmScalars<'a, <Cpu as Backend>::Scalars>> {
        let (len, density) = (scalars.len, scalars.density);
        match scalars.buf {
            Side::Gpu(buf) => Side::Gpu(MsmScalars { buf, len, density }),
            Side::Cpu(buf) => Side::Cpu(MsmScalars { buf, len, density }),
        }
    }
}

impl<G: Backend> Backend for OrCpu<G> {
    type Scalars = Side<G::Scalars, <Cpu as Backend>::Scalars>;
    type G1Bases = Side<G::G1Bases, <Cpu as Backend>::G1Bases>;
    type G2Bases = Side<G::G2Bases, <Cpu as Backend>::G2Bases>;
    type Matrices = Side<G::Matrices, <Cpu as Backend>::Matrices>;

    /// The inner backend's name; the CPU's says it is the fallback.
    fn name(&self) -> String {
        match self {
            OrCpu::Gpu(g) => g.name(),
            OrCpu::Cpu(c) => format!("{} (fallback)", c.name()),
        }
    }

    fn host_allocator(&self) -> SharedAllocator {
        match self {
            OrCpu::Gpu(g) => g.host_allocator(),
            OrCpu::Cpu(c) => c.host_allocator(),
        }
    }

    fn free_memory(&self) -> Option<u64> {
        match self {
            OrCpu::Gpu(g) => g.free_memory(),
            OrCpu::Cpu(c) => c.free_memory(),
        }
    }

    fn wait_idle(&self) -> Result<(), BackendError> {
        match self {
            OrCpu::Gpu(g) => g.wait_idle(),
            OrCpu::Cpu(c) => c.wait_idle(),
        }
    }

    fn upload_scalars(&self, host: PinnedVec<Scalar>) -> Result<Self::Scalars, BackendError> {
        Ok(match self {
            OrCpu::Gpu(g) => Side::Gpu(g.upload_scalars(host)?),
            OrCpu::Cpu(c) => Side::Cpu(c.upload_scalars(host)?),
        })
    }

    fn download_scalars(&self, buf: &Self::Scalars) -> Result<Vec<Scalar>, BackendError> {
        match (self, buf) {
            (OrCpu::Gpu(g), Side::Gpu(b)) => g.download_scalars(b),
            (OrCpu::Cpu(c), Side::Cpu(b)) => c.download_scalars(b),
            _ => Err(mismatch("a scalar buffer")),
        }
    }

    fn ntt(&self, buf: &mut Self::Scalars, domain: &Domain, direction: NttDirection, coset: bool) -> Result<(), BackendError> {
        match (self, buf) {
            (OrCpu::Gpu(g), Side::Gpu(b)) => g.ntt(b, domain, direction, coset),
            (OrCpu::Cpu(c), Side::Cpu(b)) => c.ntt(b, domain, direction, coset),
            _ => Err(mismatch("a scalar buffer")),
        }
    }

    fn quotient_on_coset(&self, a: &mut Self::Scalars, b: &Self::Scalars, c: &Self::Scalars, domain: &Domain) -> Result<(), BackendError> {
        match (self, a, b, c) {
            (OrCpu::Gpu(g), Side::Gpu(a), Side::Gpu(b), Side::Gpu(c)) => g.quotient_on_coset(a, b, c, domain),
            (OrCpu::Cpu(k), Side::Cpu(a), Side::Cpu(b), Side::Cpu(c)) => k.quotient_on_coset(a, b, c, domain),
            _ => Err(mismatch("a scalar buffer")),
        }
    }

    fn compute_h(&self, a: Self::Scalars, b: Self::Scalars, c: Self::Scalars, domain: &Domain) -> Result<Self::Scalars, BackendError> {
        match (self, a, b, c) {
            (OrCpu::Gpu(g), Side::Gpu(a), Side::Gpu(b), Side::Gpu(c)) => Ok(Side::Gpu(g.compute_h(a, b, c, domain)?)),
            (OrCpu::Cpu(k), Side::Cpu(a), Side::Cpu(b), Side::Cpu(c)) => Ok(Side::Cpu(k.compute_h(a, b, c, domain)?)),
            _ => Err(mismatch("a scalar buffer")),
        }
    }

    fn load_matrices(&self, m: &Arc<ConstraintMatrices>) -> Result<Self::Matrices, BackendError> {
        Ok(match self {
            OrCpu::Gpu(g) => Side::Gpu(g.load_matrices(m)?),
            OrCpu::Cpu(c) => Side::Cpu(c.load_matrices(m)?),
        })
    }

    fn matrices_bytes(&self, m: &Self::Matrices) -> u64 {
        match (self, m) {
            (OrCpu::Gpu(g), Side::Gpu(m)) => g.matrices_bytes(m),
            (OrCpu::Cpu(c), Side::Cpu(m)) => c.matrices_bytes(m),
            _ => 0,
        }
    }

    fn evaluate_constraints(
        &self,
        m: &Self::Matrices,
        input: &Self::Scalars,
        aux: &Self::Scalars,
        domain: &Domain,
    ) -> Result<[Self::Scalars; 3], BackendError> {
        match (self, m, input, aux) {
            (OrCpu::Gpu(g), Side::Gpu(m), Side::Gpu(i), Side::Gpu(x)) => Ok(g.evaluate_constraints(m, i, x, domain)?.map(Side::Gpu)),
            (OrCpu::Cpu(c), Side::Cpu(m), Side::Cpu(i), Side::Cpu(x)) => Ok(c.evaluate_constraints(m, i, x, domain)?.map(Side::Cpu)),
            _ => Err(mismatch("a matrix or witness buffer")),
        }
    }

    fn first_unsatisfied(&self, a: &Self::Scalars, b: &Self::Scalars, c: &Self::Scalars, rows: usize) -> Result<Option<usize>, BackendError> {
        match (self, a, b, c) {
            (OrCpu::Gpu(g), Side::Gpu(a), Side::Gpu(b), Side::Gpu(c)) => g.first_unsatisfied(a, b, c, rows),
            (OrCpu::Cpu(k), Side::Cpu(a), Side::Cpu(b), Side::Cpu(c)) => k.first_unsatisfied(a, b, c, rows),
            _ => Err(mismatch("a scalar buffer")),
        }
    }

    fn evaluates_constraints_on_device(&self) -> bool {
        match self {
            OrCpu::Gpu(g) => g.evaluates_constraints_on_device(),
            OrCpu::Cpu(c) => c.evaluates_constraints_on_device(),
        }
    }

    fn load_g1(&self, points: Vec<G1Affine>) -> Result<Self::G1Bases, BackendError> {
        Ok(match self {
            OrCpu::Gpu(g) => Side::Gpu(g.load_g1(points)?),
            OrCpu::Cpu(c) => Side::Cpu(c.load_g1(points)?),
        })
    }

    fn load_g2(&self, points: Vec<G2Affine>) -> Result<Self::G2Bases, BackendError> {
        Ok(match self {
            OrCpu::Gpu(g) => Side::Gpu(g.load_g2(points)?),
            OrCpu::Cpu(c) => Side::Cpu(c.load_g2(points)?),
        })
    }

    fn load_g1_placed(&self, points: Vec<G1Affine>, streamed: bool) -> Result<Self::G1Bases, BackendError> {
        Ok(match self {
            OrCpu::Gpu(g) => Side::Gpu(g.load_g1_placed(points, streamed)?),
            OrCpu::Cpu(c) => Side::Cpu(c.load_g1_placed(points, streamed)?),
        })
    }

    fn load_g2_placed(&self, points: Vec<G2Affine>, streamed: bool) -> Result<Self::G2Bases, BackendError> {
        Ok(match self {
            OrCpu::Gpu(g) => Side::Gpu(g.load_g2_placed(points, streamed)?),
            OrCpu::Cpu(c) => Side::Cpu(c.load_g2_placed(points, streamed)?),
        })
    }

    fn g1_len(&self, bases: &Self::G1Bases) -> usize {
        match (self, bases) {
            (OrCpu::Gpu(g), Side::Gpu(b)) => g.g1_len(b),
            (OrCpu::Cpu(c), Side::Cpu(b)) => c.g1_len(b),
            _ => 0,
        }
    }

    fn g2_len(&self, bases: &Self::G2Bases) -> usize {
        match (self, bases) {
            (OrCpu::Gpu(g), Side::Gpu(b)) => g.g2_len(b),
            (OrCpu::Cpu(c), Side::Cpu(b)) => c.g2_len(b),
            _ => 0,
        }
    }

    fn msm_g1(&self, bases: &Self::G1Bases, bases_offset: usize, scalars: MsmScalars<'_, Self::Scalars>) -> Result<G1Projective, BackendError> {
        match (self, bases, Self::msm_parts(scalars)) {
            (OrCpu::Gpu(g), Side::Gpu(b), Side::Gpu(s)) => g.msm_g1(b, bases_offset, s),
            (OrCpu::Cpu(c), Side::Cpu(b), Side::Cpu(s)) => c.msm_g1(b, bases_offset, s),
            _ => Err(mismatch("G1 bases or scalars")),
        }
    }

    fn msm_g2(&self, bases: &Self::G2Bases, bases_offset: usize, scalars: MsmScalars<'_, Self::Scalars>) -> Result<G2Projective, BackendError> {
        match (self, bases, Self::msm_parts(scalars)) {
            (OrCpu::Gpu(g), Side::Gpu(b), Side::Gpu(s)) => g.msm_g2(b, bases_offset, s),
            (OrCpu::Cpu(c), Side::Cpu(b), Side::Cpu(s)) => c.msm_g2(b, bases_offset, s),
            _ => Err(mismatch("G2 bases or scalars")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;

    /// A buffer made by one side is refused by the other, with an error rather than a panic.
    #[test]
    fn buffers_of_the_other_side_are_refused() {
        let cpu: OrCpu<CpuBackend> = OrCpu::Cpu(CpuBackend::new());
        let gpu: OrCpu<CpuBackend> = OrCpu::Gpu(CpuBackend::new());
        let host = |n| PinnedVec::from_elem_in(Scalar::ONE, n, cpu.host_allocator()).unwrap();
        let on_gpu = gpu.upload_scalars(host(4)).unwrap();
        assert!(matches!(cpu.download_scalars(&on_gpu), Err(BackendError::InvalidInput(_))));
        let on_cpu = cpu.upload_scalars(host(4)).unwrap();
        assert_eq!(cpu.download_scalars(&on_cpu).unwrap(), vec![Scalar::ONE; 4]);
        assert!(cpu.name().ends_with("(fallback)"), "{}", cpu.name());
    }
}
