//! Compiled kernels, built lazily per shader module on first use.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use crate::device::{Gpu, Kernel};
use crate::error::WgpuError;
use crate::shaders::{source, Program};

/// The NTT module's kernels.
pub struct NttKernels {
    /// Bit-reversal permutation.
    pub bitrev: Kernel,
    /// One radix-2 stage in global memory.
    pub stage: Kernel,
    /// The first stages in workgroup memory.
    pub local: Kernel,
    /// Multiplication by powers from two tables.
    pub scale: Kernel,
    /// `(a·b − c)/Z` on the coset.
    pub quotient: Kernel,
    /// `a·b`, element-wise (`compute_h` on the coset).
    pub mul: Kernel,
    /// `(a − c)/Z`, element-wise (`compute_h` on the coefficients).
    pub sub_over_z: Kernel,
}

/// The MSM scalar-side kernels.
pub struct PrepareKernels {
    /// Density gather and Montgomery → canonical.
    pub prepare: Kernel,
    /// The scalars above 1, which size the windows.
    pub count_dense: Kernel,
    /// Bucket counts.
    pub histogram: Kernel,
    /// Counting-sort placement.
    pub scatter: Kernel,
}

/// The MSM point-side kernels of one group.
pub struct CurveKernels {
    /// Round 1 of bucket sums (affine bases).
    pub round_affine: Kernel,
    /// Later rounds (bucket-aligned tasks over XYZZ partials).
    pub round_tasks: Kernel,
    /// Running sums over segments of each window.
    pub window: Kernel,
    /// Pairwise addition of window segments.
    pub pair: Kernel,
}

fn module(gpu: &Gpu, program: Program) -> Result<wgpu::ShaderModule, WgpuError> {
    let src = source(program, gpu.wg)?;
    gpu.check()?;
    let m = gpu.device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some(program.name()), source: wgpu::ShaderSource::Wgsl(Cow::Owned(src)) });
    gpu.check().map_err(|e| WgpuError::Shader(program.name().into(), e.to_string()))?;
    Ok(m)
}

fn kernels(gpu: &Gpu, program: Program, names: &[&'static str]) -> Result<Vec<Kernel>, WgpuError> {
    let trace = std::env::var_os("CUZK_WGPU_TRACE").is_some();
    let t = std::time::Instant::now();
    let m = module(gpu, program)?;
    let ks = names
        .iter()
        .map(|n| {
            let t = std::time::Instant::now();
            let k = Kernel::new(gpu, &m, n);
            if trace {
                eprintln!("wgpu: pipeline {n} in {:.2} s", t.elapsed().as_secs_f64());
            }
            k
        })
        .collect();
    if trace {
        eprintln!("wgpu: module {} in {:.2} s", program.name(), t.elapsed().as_secs_f64());
    }
    gpu.check().map_err(|e| WgpuError::Shader(program.name().into(), e.to_string()))?;
    // Keep what the driver compiled for the next process (NVIDIA's driver takes about 97 s
    // for all our pipelines on the H200).
    if let Err(e) = gpu.save_pipeline_cache() {
        tracing::warn!(file = ?gpu.pipeline_cache_file(), "wgpu pipeline cache not saved: {e}");
    }
    Ok(ks)
}

/// A lazily built value shared between threads.
pub struct Lazy<T>(Mutex<Option<Arc<T>>>);

impl<T> Default for Lazy<T> {
    fn default() -> Self {
        Lazy(Mutex::new(None))
    }
}

impl<T> Lazy<T> {
    /// The value, building it with `f` on first use (a failed build is retried next time).
    pub fn get(&self, f: impl FnOnce() -> Result<T, WgpuError>) -> Result<Arc<T>, WgpuError> {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = g.as_ref() {
            return Ok(v.clone());
        }
        let v = Arc::new(f()?);
        *g = Some(v.clone());
        Ok(v)
    }
}

impl NttKernels {
    /// Compiles the NTT module.
    pub fn build(gpu: &Gpu) -> Result<Self, WgpuError> {
        let mut k =
            kernels(gpu, Program::Ntt, &["ntt_bitrev", "ntt_stage", "ntt_local", "ntt_scale", "ntt_quotient", "ntt_mul", "ntt_sub_over_z"])?.into_iter();
        let mut next = || k.next().ok_or_else(|| WgpuError::Shader("ntt".into(), "missing kernel".into()));
        Ok(NttKernels { bitrev: next()?, stage: next()?, local: next()?, scale: next()?, quotient: next()?, mul: next()?, sub_over_z: next()? })
    }
}

impl PrepareKernels {
    /// Compiles the MSM scalar-side module.
    pub fn build(gpu: &Gpu) -> Result<Self, WgpuError> {
        let mut k = kernels(gpu, Program::Prepare, &["msm_prepare", "msm_count_dense", "msm_histogram", "msm_scatter"])?.into_iter();
        let mut next = || k.next().ok_or_else(|| WgpuError::Shader("msm-prepare".into(), "missing kernel".into()));
        Ok(PrepareKernels { prepare: next()?, count_dense: next()?, histogram: next()?, scatter: next()? })
    }
}

impl CurveKernels {
    /// Compiles the bucket module of G1 (`g2 = false`) or G2.
    pub fn build(gpu: &Gpu, g2: bool) -> Result<Self, WgpuError> {
        let (p, names) = if g2 {
            (Program::G2, ["g2_round_affine", "g2_round_tasks", "g2_window_segments", "g2_pair_sums"])
        } else {
            (Program::G1, ["g1_round_affine", "g1_round_tasks", "g1_window_segments", "g1_pair_sums"])
        };
        let mut k = kernels(gpu, p, &names)?.into_iter();
        let mut next = || k.next().ok_or_else(|| WgpuError::Shader(p.name().into(), "missing kernel".into()));
        Ok(CurveKernels { round_affine: next()?, round_tasks: next()?, window: next()?, pair: next()? })
    }
}
