//! Host side of the NTT family: twiddle tables (cached per domain), the stage schedule, and
//! the power tables for cosets and `1/n`.

use std::sync::{Arc, Mutex};

use blstrs::Scalar;
use cuzk_core::domain::{fill_powers, Domain};
use ff::Field;
use rayon::prelude::*;

use crate::device::{Batch, Bind, Gpu};
use crate::error::WgpuError;
use crate::kernels::NttKernels;
use crate::scalar_bytes;

/// Twiddles `omega^k` and `omega^-k` (`k < n/2`) of one domain, resident.
pub struct Twiddles {
    log_n: u32,
    forward: wgpu::Buffer,
    inverse: wgpu::Buffer,
}

/// The twiddles of the last domains used.
#[derive(Default)]
pub struct TwiddleCache(Mutex<Vec<Arc<Twiddles>>>);

const CACHE: usize = 2;

/// `root^0 .. root^(len-1)`, in parallel chunks ([`fill_powers`] each).
pub fn powers(root: Scalar, len: usize) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; len];
    out.par_chunks_mut(4096).enumerate().for_each(|(ci, chunk)| fill_powers(root, (ci * 4096) as u64, chunk));
    out
}

impl TwiddleCache {
    fn get(&self, gpu: &Gpu, domain: &Domain) -> Result<Arc<Twiddles>, WgpuError> {
        let mut c = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = c.iter().find(|t| t.log_n == domain.log_n) {
            return Ok(t.clone());
        }
        let half = (domain.size() / 2).max(1);
        let forward = gpu.storage_init(scalar_bytes(&powers(domain.omega, half)), "twiddles")?;
        let inverse = gpu.storage_init(scalar_bytes(&powers(domain.omega_inv, half)), "inverse twiddles")?;
        let t = Arc::new(Twiddles { log_n: domain.log_n, forward, inverse });
        if c.len() >= CACHE {
            c.remove(0);
        }
        c.push(t.clone());
        Ok(t)
    }
}

/// Records `d[i] *= scale · g^i` for `i < n` (two tables of about `sqrt(n)` entries).
fn record_scale(gpu: &Gpu, k: &NttKernels, b: &mut Batch<'_>, d: &wgpu::Buffer, log_n: u32, g: Scalar, scale: Scalar) -> Result<(), WgpuError> {
    let n = 1usize << log_n;
    let bits = log_n.div_ceil(2);
    let lo = powers(g, 1 << bits);
    let step = g.pow_vartime([1u64 << bits]);
    let hi: Vec<Scalar> = powers(step, (n >> bits).max(1)).into_iter().map(|x| x * scale).collect();
    let lo_buf = gpu.storage_init(scalar_bytes(&lo), "scale lo")?;
    let hi_buf = gpu.storage_init(scalar_bytes(&hi), "scale hi")?;
    b.dispatch(&k.scale, &[(0, d.into()), (1, (&lo_buf).into()), (2, (&hi_buf).into())], 4, [n as u32, bits, 0, 0, 0, 0, 0, 0], n as u64, false)
}

/// The NTT of `d` (length `domain.size()`) in place, natural order in and out.
pub fn ntt(gpu: &Gpu, k: &NttKernels, cache: &TwiddleCache, d: &wgpu::Buffer, domain: &Domain, inverse: bool, coset: bool) -> Result<(), WgpuError> {
    let log_n = domain.log_n;
    let n = domain.size() as u64;
    if n * 32 > gpu.max_binding {
        return Err(WgpuError::OutOfMemory(format!("an NTT of 2^{log_n} needs a {} byte binding; the adapter allows {}", n * 32, gpu.max_binding)));
    }
    let tw = cache.get(gpu, domain)?;
    let table = if inverse { &tw.inverse } else { &tw.forward };
    let mut b = Batch::new(gpu);
    if coset && !inverse {
        record_scale(gpu, k, &mut b, d, log_n, domain.coset, Scalar::ONE)?;
    }
    if log_n >= 1 {
        b.dispatch(&k.bitrev, &[(0, d.into())], 4, [n as u32, log_n, 0, 0, 0, 0, 0, 0], n, false)?;
        let local = (2 * gpu.wg).trailing_zeros();
        let mut s = 0;
        if log_n >= local {
            let blocks = n >> local;
            b.dispatch(&k.local, &[(0, d.into()), (1, Bind::from(table))], 4, [(n / 2) as u32, local, log_n - 1, 0, 0, 0, 0, 0], blocks, true)?;
            s = local;
        }
        for s in s..log_n {
            b.dispatch(&k.stage, &[(0, d.into()), (1, Bind::from(table))], 4, [(n / 2) as u32, s, log_n - 1 - s, 0, 0, 0, 0, 0], n / 2, false)?;
        }
    }
    if inverse {
        let g = if coset { domain.coset_inv } else { Scalar::ONE };
        record_scale(gpu, k, &mut b, d, log_n, g, domain.n_inv)?;
    }
    b.submit()
}

/// `a ← (a·b − c)·z_inv` element-wise.
pub fn quotient(gpu: &Gpu, k: &NttKernels, a: &wgpu::Buffer, bb: &wgpu::Buffer, c: &wgpu::Buffer, domain: &Domain) -> Result<(), WgpuError> {
    let n = domain.size() as u64;
    let z = gpu.storage_init(scalar_bytes(&[domain.z_inv_on_coset]), "1/Z")?;
    let mut b = Batch::new(gpu);
    b.dispatch(&k.quotient, &[(0, a.into()), (1, bb.into()), (2, c.into()), (3, (&z).into())], 4, [n as u32, 0, 0, 0, 0, 0, 0, 0], n, false)?;
    b.submit()
}

/// `a ← a·b` element-wise (`compute_h`: A·B on the coset).
pub fn product(gpu: &Gpu, k: &NttKernels, a: &wgpu::Buffer, bb: &wgpu::Buffer, domain: &Domain) -> Result<(), WgpuError> {
    let n = domain.size() as u64;
    let mut b = Batch::new(gpu);
    b.dispatch(&k.mul, &[(0, a.into()), (1, bb.into())], 4, [n as u32, 0, 0, 0, 0, 0, 0, 0], n, false)?;
    b.submit()
}

/// `a ← (a − c)·z_inv` element-wise (`compute_h`: the coefficients of A·B's coset interpolant
/// minus C's, over Z).
pub fn difference_over_z(gpu: &Gpu, k: &NttKernels, a: &wgpu::Buffer, c: &wgpu::Buffer, domain: &Domain) -> Result<(), WgpuError> {
    let n = domain.size() as u64;
    let z = gpu.storage_init(scalar_bytes(&[domain.z_inv_on_coset]), "1/Z")?;
    let mut b = Batch::new(gpu);
    b.dispatch(&k.sub_over_z, &[(0, a.into()), (2, c.into()), (3, (&z).into())], 4, [n as u32, 0, 0, 0, 0, 0, 0, 0], n, false)?;
    b.submit()
}
