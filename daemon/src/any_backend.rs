//! One backend type over every backend the daemon opens: the CUDA devices, a wgpu adapter, the
//! CPU backend, the CPU backend beside the GPUs as their fallback (`engine.cpu_fallback`), and
//! any of these behind the fault injector (`[faults]`). The worker, the driver and the server
//! are built once, for this type, instead of once per backend and wrapper; a call costs one
//! `match` beside work of a millisecond or more.
//!
//! The fallback device takes only what no GPU may (a retry after a GPU fault when no other GPU
//! is in service, or everything once every GPU is out of service): that is the engine's rule,
//! this type only lets one worker drive the GPUs and the CPU alike.

use std::sync::Arc;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};

use cuzk_backend_cpu::CpuBackend;
use cuzk_backend_cuda::CudaBackend;
use cuzk_backend_wgpu::WgpuBackend;
use cuzk_core::alloc::{PinnedVec, SharedAllocator};
use cuzk_core::backend::{Backend, BackendError, MsmScalars, NttDirection};
use cuzk_core::domain::Domain;
use cuzk_core::matrices::ConstraintMatrices;
use cuzk_core::params::PointFailure;
use cuzk_faults::{FaultPlan, FaultyBackend};

/// A backend the daemon drives.
pub enum AnyBackend {
    /// A CUDA device.
    Cuda(CudaBackend),
    /// A wgpu adapter.
    Wgpu(WgpuBackend),
    /// The CPU backend as a device of its own (`engine.backend = "cpu"`).
    Cpu(CpuBackend),
    /// The CPU backend standing in for the GPUs (`engine.cpu_fallback`).
    CpuFallback(CpuBackend),
    /// A backend behind the fault injector (`[faults]`, test use only).
    Faulty(Box<FaultyBackend<AnyBackend>>),
}

impl AnyBackend {
    /// `inner` behind a fault injector following `plan`.
    pub fn faulty(inner: AnyBackend, plan: FaultPlan) -> Self {
        AnyBackend::Faulty(Box::new(FaultyBackend::new(inner, plan)))
    }
}

/// A value one of the backends made (a scalar buffer, a base set, loaded matrices); it is used
/// only with a backend of the same kind.
pub enum Made<C, W, P> {
    /// Made by a CUDA device.
    Cuda(C),
    /// Made by a wgpu adapter.
    Wgpu(W),
    /// Made by the CPU backend (as a device or as the fallback).
    Cpu(P),
}

/// The associated type `$t` of each backend, as a [`Made`].
macro_rules! made {
    ($t:ident) => {
        Made<<CudaBackend as Backend>::$t, <WgpuBackend as Backend>::$t, <CpuBackend as Backend>::$t>
    };
}

fn mismatch(what: &str) -> BackendError {
    BackendError::InvalidInput(format!("{what} was made by another kind of backend (device buffers do not mix)"))
}

/// Runs `$body` with `$b` bound to the backend inside `$self` and each `$buf` (a [`Made`])
/// unwrapped to that backend's own value; `$wrap`, when named, rewraps what the body makes.
/// A value of another kind of backend gives `$other`. Behind the fault injector, whose values
/// are this type's own, everything passes through whole.
macro_rules! on_backend {
    ($self:expr, |$b:ident $(, $buf:ident)*| $(wrap $wrap:ident)? => $body:expr, else $other:expr) => {
        match $self {
            AnyBackend::Cuda($b) => match ($($buf,)*) {
                ($(Made::Cuda($buf),)*) => { $(let $wrap = Made::Cuda;)? $body }
                #[allow(unreachable_patterns)]
                _ => $other,
            },
            AnyBackend::Wgpu($b) => match ($($buf,)*) {
                ($(Made::Wgpu($buf),)*) => { $(let $wrap = Made::Wgpu;)? $body }
                #[allow(unreachable_patterns)]
                _ => $other,
            },
            AnyBackend::Cpu($b) | AnyBackend::CpuFallback($b) => match ($($buf,)*) {
                ($(Made::Cpu($buf),)*) => { $(let $wrap = Made::Cpu;)? $body }
                #[allow(unreachable_patterns)]
                _ => $other,
            },
            AnyBackend::Faulty($b) => { $(let $wrap = std::convert::identity;)? $body }
        }
    };
}

impl Backend for AnyBackend {
    type Scalars = made!(Scalars);
    type G1Bases = made!(G1Bases);
    type G2Bases = made!(G2Bases);
    type Matrices = made!(Matrices);

    /// The inner backend's name; the CPU fallback's says it is the fallback.
    fn name(&self) -> String {
        match self {
            AnyBackend::CpuFallback(c) => format!("{} (fallback)", c.name()),
            _ => on_backend!(self, |b| => b.name(), else unreachable!()),
        }
    }

    fn host_allocator(&self) -> SharedAllocator {
        on_backend!(self, |b| => b.host_allocator(), else unreachable!())
    }

    fn free_memory(&self) -> Option<u64> {
        on_backend!(self, |b| => b.free_memory(), else unreachable!())
    }

    fn wait_idle(&self) -> Result<(), BackendError> {
        on_backend!(self, |b| => b.wait_idle(), else unreachable!())
    }

    fn upload_scalars(&self, host: PinnedVec<Scalar>) -> Result<Self::Scalars, BackendError> {
        on_backend!(self, |b| wrap w => b.upload_scalars(host).map(w), else unreachable!())
    }

    fn download_scalars(&self, buf: &Self::Scalars) -> Result<Vec<Scalar>, BackendError> {
        on_backend!(self, |b, buf| => b.download_scalars(buf), else Err(mismatch("a scalar buffer")))
    }

    fn ntt(&self, buf: &mut Self::Scalars, domain: &Domain, direction: NttDirection, coset: bool) -> Result<(), BackendError> {
        on_backend!(self, |b, buf| => b.ntt(buf, domain, direction, coset), else Err(mismatch("a scalar buffer")))
    }

    fn quotient_on_coset(&self, a: &mut Self::Scalars, b: &Self::Scalars, c: &Self::Scalars, domain: &Domain) -> Result<(), BackendError> {
        on_backend!(self, |k, a, b, c| => k.quotient_on_coset(a, b, c, domain), else Err(mismatch("a scalar buffer")))
    }

    fn compute_h(&self, a: Self::Scalars, b: Self::Scalars, c: Self::Scalars, domain: &Domain) -> Result<Self::Scalars, BackendError> {
        on_backend!(self, |k, a, b, c| wrap w => k.compute_h(a, b, c, domain).map(w), else Err(mismatch("a scalar buffer")))
    }

    fn load_matrices(&self, m: &Arc<ConstraintMatrices>) -> Result<Self::Matrices, BackendError> {
        on_backend!(self, |b| wrap w => b.load_matrices(m).map(w), else unreachable!())
    }

    fn matrices_bytes(&self, m: &Self::Matrices) -> u64 {
        on_backend!(self, |b, m| => b.matrices_bytes(m), else 0)
    }

    fn evaluate_constraints(
        &self,
        m: &Self::Matrices,
        input: &Self::Scalars,
        aux: &Self::Scalars,
        domain: &Domain,
    ) -> Result<[Self::Scalars; 3], BackendError> {
        on_backend!(self, |b, m, input, aux| wrap w => b.evaluate_constraints(m, input, aux, domain).map(|abc| abc.map(w)),
            else Err(mismatch("a matrix or witness buffer")))
    }

    fn first_unsatisfied(&self, a: &Self::Scalars, b: &Self::Scalars, c: &Self::Scalars, rows: usize) -> Result<Option<usize>, BackendError> {
        on_backend!(self, |k, a, b, c| => k.first_unsatisfied(a, b, c, rows), else Err(mismatch("a scalar buffer")))
    }

    fn evaluates_constraints_on_device(&self) -> bool {
        on_backend!(self, |b| => b.evaluates_constraints_on_device(), else unreachable!())
    }

    fn checks_points(&self) -> bool {
        on_backend!(self, |b| => b.checks_points(), else unreachable!())
    }

    fn first_invalid_g1(&self, points: &[G1Affine]) -> Result<Option<PointFailure>, BackendError> {
        on_backend!(self, |b| => b.first_invalid_g1(points), else unreachable!())
    }

    fn first_invalid_g2(&self, points: &[G2Affine]) -> Result<Option<PointFailure>, BackendError> {
        on_backend!(self, |b| => b.first_invalid_g2(points), else unreachable!())
    }

    fn load_g1(&self, points: Vec<G1Affine>) -> Result<Self::G1Bases, BackendError> {
        on_backend!(self, |b| wrap w => b.load_g1(points).map(w), else unreachable!())
    }

    fn load_g2(&self, points: Vec<G2Affine>) -> Result<Self::G2Bases, BackendError> {
        on_backend!(self, |b| wrap w => b.load_g2(points).map(w), else unreachable!())
    }

    fn load_g1_placed(&self, points: Vec<G1Affine>, streamed: bool) -> Result<Self::G1Bases, BackendError> {
        on_backend!(self, |b| wrap w => b.load_g1_placed(points, streamed).map(w), else unreachable!())
    }

    fn load_g2_placed(&self, points: Vec<G2Affine>, streamed: bool) -> Result<Self::G2Bases, BackendError> {
        on_backend!(self, |b| wrap w => b.load_g2_placed(points, streamed).map(w), else unreachable!())
    }

    fn g1_len(&self, bases: &Self::G1Bases) -> usize {
        on_backend!(self, |b, bases| => b.g1_len(bases), else 0)
    }

    fn g2_len(&self, bases: &Self::G2Bases) -> usize {
        on_backend!(self, |b, bases| => b.g2_len(bases), else 0)
    }

    fn msm_g1(&self, bases: &Self::G1Bases, bases_offset: usize, scalars: MsmScalars<'_, Self::Scalars>) -> Result<G1Projective, BackendError> {
        let MsmScalars { buf, len, density } = scalars;
        on_backend!(self, |b, bases, buf| => b.msm_g1(bases, bases_offset, MsmScalars { buf, len, density }),
            else Err(mismatch("G1 bases or scalars")))
    }

    fn msm_g2(&self, bases: &Self::G2Bases, bases_offset: usize, scalars: MsmScalars<'_, Self::Scalars>) -> Result<G2Projective, BackendError> {
        let MsmScalars { buf, len, density } = scalars;
        on_backend!(self, |b, bases, buf| => b.msm_g2(bases, bases_offset, MsmScalars { buf, len, density }),
            else Err(mismatch("G2 bases or scalars")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use std::io::Write;

    /// 1, 2, ..., n in the backend's host memory.
    fn host(b: &impl Backend, n: usize) -> PinnedVec<Scalar> {
        let mut v = PinnedVec::from_elem_in(Scalar::ONE, n, b.host_allocator()).unwrap();
        for (i, x) in v.iter_mut().enumerate() {
            *x = Scalar::from(i as u64 + 1);
        }
        v
    }

    /// Calls pass through to the backend inside, behind the fault injector too; the fallback
    /// says it is one.
    #[test]
    fn calls_reach_the_backend_inside() {
        let plain = AnyBackend::Cpu(CpuBackend::new());
        let fallback = AnyBackend::CpuFallback(CpuBackend::new());
        let faulty = AnyBackend::faulty(AnyBackend::Cpu(CpuBackend::new()), FaultPlan::default());
        let domain = Domain::new(3).unwrap();
        let oracle = CpuBackend::new();
        let mut want = host(&oracle, 8);
        oracle.ntt(&mut want, &domain, NttDirection::Forward, true).unwrap();
        assert_ne!(want.to_vec(), host(&oracle, 8).to_vec(), "the transform changes the values");
        for b in [&plain, &fallback, &faulty] {
            let mut buf = b.upload_scalars(host(b, 8)).unwrap();
            b.ntt(&mut buf, &domain, NttDirection::Forward, true).unwrap();
            assert_eq!(b.download_scalars(&buf).unwrap(), want.to_vec(), "{}", b.name());
        }
        assert!(fallback.name().ends_with("(fallback)"), "{}", fallback.name());
        assert!(faulty.name().contains("[faults injected]"), "{}", faulty.name());
        assert!(!plain.name().contains("fallback"), "{}", plain.name());
    }

    /// A buffer a GPU made is refused by the CPU backend with an error rather than a panic
    /// (run where a CUDA device is present).
    #[test]
    fn buffers_of_another_kind_are_refused() {
        let Some(gpu) = (cuzk_backend_cuda::device::device_count() > 0).then(|| CudaBackend::new(0)).and_then(Result::ok) else {
            // Past libtest's capture, so the skip shows in a plain `cargo test`.
            let _ = writeln!(std::io::stderr(), "SKIPPED: buffers_of_another_kind_are_refused needs a CUDA device");
            return;
        };
        let gpu = AnyBackend::Cuda(gpu);
        let cpu = AnyBackend::CpuFallback(CpuBackend::new());
        let on_gpu = gpu.upload_scalars(host(&gpu, 4)).unwrap();
        assert!(matches!(cpu.download_scalars(&on_gpu), Err(BackendError::InvalidInput(_))));
        let on_cpu = cpu.upload_scalars(host(&cpu, 4)).unwrap();
        assert!(matches!(gpu.download_scalars(&on_cpu), Err(BackendError::InvalidInput(_))));
        assert_eq!(cpu.download_scalars(&on_cpu).unwrap(), host(&cpu, 4).to_vec());
    }
}
