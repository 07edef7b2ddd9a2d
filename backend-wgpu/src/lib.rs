//! `cuzk-backend-wgpu`: the wgpu backend of cuzk, the porting test bed of the kernels.
//!
//! The same [`Backend`] as the CPU oracle and the CUDA backend, on any GPU wgpu reaches
//! through Vulkan, Metal or DX12 (and on lavapipe, Mesa's Vulkan on the CPU, in CI). The
//! kernels are WGSL under `kernels/wgsl/`: Montgomery Fr/Fp arithmetic on 32-bit limbs with
//! 32×32→64-bit products built from 16-bit halves, Fp2, XYZZ curve arithmetic, a radix-2 NTT
//! (first stages in workgroup memory) and a signed-window Pippenger MSM for G1 and G2.
//!
//! Scalars and points are uploaded as the raw bytes of blstrs values (blst's little-endian
//! Montgomery limbs, as the CUDA backend does), so results are bit-identical to the oracle's.
//! The adapter is chosen by [`AdapterSelector`] (name substring, device type); the adapter's
//! limits are requested in full and respected: workgroup size and dispatch dimensions, buffer
//! and binding sizes (MSMs are split into chunks that fit; an NTT needs one binding).

#![warn(missing_docs)]

pub mod device;
pub mod error;
pub mod kernels;
pub mod msm;
pub mod ntt;
pub mod shaders;

use std::sync::Arc;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_core::alloc::{heap, PinnedVec, SharedAllocator};
use cuzk_core::backend::{Backend, BackendError, MsmScalars, NttDirection};
use cuzk_core::domain::Domain;
use group::Group as _;

pub use device::{list_adapters, AdapterSelector, Gpu};
pub use error::WgpuError;
/// The wgpu version this backend is built on (for adapter types and limits).
pub use wgpu;

use kernels::{CurveKernels, Lazy, NttKernels, PrepareKernels};

const _: () = assert!(std::mem::size_of::<Scalar>() == 32);
const _: () = assert!(std::mem::size_of::<G1Affine>() == 96);
const _: () = assert!(std::mem::size_of::<G2Affine>() == 192);

/// The raw bytes of a slice of blstrs values (plain limbs, no padding).
fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: only used with blstrs field and affine point types: plain arrays of u64 limbs.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// The raw bytes (Montgomery limbs) of scalars.
pub(crate) fn scalar_bytes(v: &[Scalar]) -> &[u8] {
    as_bytes(v)
}

/// Scalars on the device (Montgomery form).
#[derive(Debug)]
pub struct WgpuScalars {
    buf: Option<wgpu::Buffer>,
    len: usize,
}

impl WgpuScalars {
    /// Number of scalars.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Resident affine bases (G1 or G2).
#[derive(Debug)]
pub struct WgpuBases {
    buf: Option<wgpu::Buffer>,
    len: usize,
}

struct Inner {
    gpu: Gpu,
    ntt: Lazy<NttKernels>,
    prep: Lazy<PrepareKernels>,
    g1: Lazy<CurveKernels>,
    g2: Lazy<CurveKernels>,
    twiddles: ntt::TwiddleCache,
    name: String,
}

/// The wgpu backend on one adapter.
#[derive(Clone)]
pub struct WgpuBackend {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for WgpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WgpuBackend").field("name", &self.inner.name).finish()
    }
}

impl WgpuBackend {
    /// Opens the best adapter matching `sel`.
    pub fn new(sel: &AdapterSelector) -> Result<Self, WgpuError> {
        let gpu = Gpu::open(sel)?;
        let name = format!("wgpu {}", gpu.describe());
        Ok(WgpuBackend {
            inner: Arc::new(Inner {
                gpu,
                ntt: Lazy::default(),
                prep: Lazy::default(),
                g1: Lazy::default(),
                g2: Lazy::default(),
                twiddles: Default::default(),
                name,
            }),
        })
    }

    /// Opens the adapter chosen by `CUZK_WGPU_ADAPTER` / `CUZK_WGPU_DEVICE_TYPE` (else the best).
    pub fn from_env() -> Result<Self, WgpuError> {
        Self::new(&AdapterSelector::from_env()?)
    }

    /// The device, its limits and adapter.
    pub fn gpu(&self) -> &Gpu {
        &self.inner.gpu
    }

    /// Compiles every kernel now (otherwise each module compiles on first use).
    pub fn warm_up(&self) -> Result<(), WgpuError> {
        self.ntt_k()?;
        self.prep_k()?;
        self.curve_k(false)?;
        self.curve_k(true)?;
        Ok(())
    }

    fn ntt_k(&self) -> Result<Arc<NttKernels>, WgpuError> {
        self.inner.ntt.get(|| NttKernels::build(&self.inner.gpu))
    }

    fn prep_k(&self) -> Result<Arc<PrepareKernels>, WgpuError> {
        self.inner.prep.get(|| PrepareKernels::build(&self.inner.gpu))
    }

    fn curve_k(&self, g2: bool) -> Result<Arc<CurveKernels>, WgpuError> {
        let lazy = if g2 { &self.inner.g2 } else { &self.inner.g1 };
        lazy.get(|| CurveKernels::build(&self.inner.gpu, g2))
    }

    /// Uploads scalars from any slice.
    pub fn upload_slice(&self, v: &[Scalar]) -> Result<WgpuScalars, WgpuError> {
        let buf = if v.is_empty() { None } else { Some(self.inner.gpu.storage_init(scalar_bytes(v), "scalars")?) };
        self.inner.gpu.check()?;
        Ok(WgpuScalars { buf, len: v.len() })
    }

    fn load<T: Copy>(&self, points: &[T], what: &str) -> Result<WgpuBases, WgpuError> {
        let buf = if points.is_empty() { None } else { Some(self.inner.gpu.storage_init(as_bytes(points), what)?) };
        self.inner.gpu.check()?;
        Ok(WgpuBases { buf, len: points.len() })
    }
}

fn check_msm(bases_len: usize, offset: usize, s: &MsmScalars<'_, WgpuScalars>) -> Result<(), WgpuError> {
    cuzk_core::msm::check_inputs(s, s.buf.len, bases_len, offset).map_err(WgpuError::Invalid)
}

fn scalars_buf(s: &WgpuScalars) -> Result<&wgpu::Buffer, WgpuError> {
    s.buf.as_ref().ok_or_else(|| WgpuError::Invalid("empty scalar buffer".into()))
}

impl Backend for WgpuBackend {
    type Scalars = WgpuScalars;
    type G1Bases = WgpuBases;
    type G2Bases = WgpuBases;
    /// Evaluated through the host for now (`cuzk_core::backend::evaluate_on_host`): provers
    /// keep synthesizing `a, b, c` on the CPU for this backend.
    type Matrices = std::sync::Arc<cuzk_core::matrices::ConstraintMatrices>;

    fn load_matrices(&self, m: &std::sync::Arc<cuzk_core::matrices::ConstraintMatrices>) -> Result<Self::Matrices, BackendError> {
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
        cuzk_core::backend::evaluate_on_host(self, m, input, aux, domain)
    }

    fn name(&self) -> String {
        self.inner.name.clone()
    }

    fn host_allocator(&self) -> SharedAllocator {
        heap()
    }

    fn wait_idle(&self) -> Result<(), BackendError> {
        Ok(self.inner.gpu.wait()?)
    }

    fn upload_scalars(&self, host: PinnedVec<Scalar>) -> Result<Self::Scalars, BackendError> {
        Ok(self.upload_slice(&host)?)
    }

    fn download_scalars(&self, buf: &Self::Scalars) -> Result<Vec<Scalar>, BackendError> {
        let mut out = vec![Scalar::from(0u64); buf.len];
        if let Some(b) = &buf.buf {
            let raw = self.inner.gpu.read(b, 0, 32 * buf.len as u64)?;
            // SAFETY: Scalar is 32 plain bytes of Montgomery limbs; raw holds len of them,
            // written from valid scalars by kernels that keep values reduced.
            unsafe { std::ptr::copy_nonoverlapping(raw.as_ptr(), out.as_mut_ptr().cast::<u8>(), raw.len()) };
        }
        Ok(out)
    }

    fn ntt(&self, buf: &mut Self::Scalars, domain: &Domain, direction: NttDirection, coset: bool) -> Result<(), BackendError> {
        if buf.len != domain.size() {
            return Err(BackendError::InvalidInput(format!("NTT of {} scalars over a domain of {}", buf.len, domain.size())));
        }
        let k = self.ntt_k()?;
        let b = scalars_buf(buf)?;
        ntt::ntt(&self.inner.gpu, &k, &self.inner.twiddles, b, domain, direction == NttDirection::Inverse, coset)?;
        Ok(())
    }

    fn quotient_on_coset(&self, a: &mut Self::Scalars, b: &Self::Scalars, c: &Self::Scalars, domain: &Domain) -> Result<(), BackendError> {
        let n = domain.size();
        if a.len != n || b.len != n || c.len != n {
            return Err(BackendError::InvalidInput("quotient operands must have the domain's size".into()));
        }
        let k = self.ntt_k()?;
        ntt::quotient(&self.inner.gpu, &k, scalars_buf(a)?, scalars_buf(b)?, scalars_buf(c)?, domain)?;
        Ok(())
    }

    /// Six transforms instead of the default's seven: `C` is not taken to the coset, since on
    /// the coset `Z` is a constant and `deg C < n`, so `(A·B − C)/Z`'s coefficients are the
    /// inverse coset transform of `A·B`, minus `C`'s coefficients, over `Z`.
    fn compute_h(&self, mut a: Self::Scalars, mut b: Self::Scalars, mut c: Self::Scalars, domain: &Domain) -> Result<Self::Scalars, BackendError> {
        let n = domain.size();
        if a.len != n || b.len != n || c.len != n {
            return Err(BackendError::InvalidInput("compute_h operands must have the domain's size".into()));
        }
        for v in [&mut a, &mut b] {
            self.ntt(v, domain, NttDirection::Inverse, false)?;
            self.ntt(v, domain, NttDirection::Forward, true)?;
        }
        self.ntt(&mut c, domain, NttDirection::Inverse, false)?;
        let k = self.ntt_k()?;
        ntt::product(&self.inner.gpu, &k, scalars_buf(&a)?, scalars_buf(&b)?, domain)?;
        drop(b);
        self.ntt(&mut a, domain, NttDirection::Inverse, true)?;
        ntt::difference_over_z(&self.inner.gpu, &k, scalars_buf(&a)?, scalars_buf(&c)?, domain)?;
        Ok(a)
    }

    fn load_g1(&self, points: Vec<G1Affine>) -> Result<Self::G1Bases, BackendError> {
        Ok(self.load(&points, "G1 bases")?)
    }

    fn load_g2(&self, points: Vec<G2Affine>) -> Result<Self::G2Bases, BackendError> {
        Ok(self.load(&points, "G2 bases")?)
    }

    /// No streaming yet: streamed bases are loaded resident (a set larger than the device's
    /// buffers fails to load as with [`Backend::load_g1`]).
    fn load_g1_placed(&self, points: Vec<G1Affine>, _streamed: bool) -> Result<Self::G1Bases, BackendError> {
        self.load_g1(points)
    }

    /// As [`Backend::load_g1_placed`]: loaded resident.
    fn load_g2_placed(&self, points: Vec<G2Affine>, _streamed: bool) -> Result<Self::G2Bases, BackendError> {
        self.load_g2(points)
    }

    fn g1_len(&self, bases: &Self::G1Bases) -> usize {
        bases.len
    }

    fn g2_len(&self, bases: &Self::G2Bases) -> usize {
        bases.len
    }

    fn msm_g1(&self, bases: &Self::G1Bases, bases_offset: usize, scalars: MsmScalars<'_, Self::Scalars>) -> Result<G1Projective, BackendError> {
        check_msm(bases.len, bases_offset, &scalars)?;
        let (Some(bb), Some(sb)) = (&bases.buf, &scalars.buf.buf) else {
            return Ok(G1Projective::identity());
        };
        if scalars.bases_needed() == 0 {
            return Ok(G1Projective::identity());
        }
        let (p, c) = (self.prep_k()?, self.curve_k(false)?);
        let src = msm::Source { buf: sb, len: scalars.len, density: scalars.density };
        Ok(msm::msm_g1(&self.inner.gpu, &p, &c, bb, bases_offset, &src)?)
    }

    fn msm_g2(&self, bases: &Self::G2Bases, bases_offset: usize, scalars: MsmScalars<'_, Self::Scalars>) -> Result<G2Projective, BackendError> {
        check_msm(bases.len, bases_offset, &scalars)?;
        let (Some(bb), Some(sb)) = (&bases.buf, &scalars.buf.buf) else {
            return Ok(G2Projective::identity());
        };
        if scalars.bases_needed() == 0 {
            return Ok(G2Projective::identity());
        }
        let (p, c) = (self.prep_k()?, self.curve_k(true)?);
        let src = msm::Source { buf: sb, len: scalars.len, density: scalars.density };
        Ok(msm::msm_g2(&self.inner.gpu, &p, &c, bb, bases_offset, &src)?)
    }
}
