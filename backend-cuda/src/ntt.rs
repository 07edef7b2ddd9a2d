//! Host side of the NTT: resident root tables and the pass schedule.

use blstrs::Scalar;
use cuzk_core::domain::Domain;
use ff::{Field, PrimeField};

use crate::device::{Args, DevBuf, Module, Stream};
use crate::error::CudaError;
use crate::{scalar_words, FrArg};

/// log2 of the elements one block transforms in shared memory (must match `NTT_LOG_ELEMS`).
const LOG_ELEMS: u32 = 10;

/// log2 of a bit-reversal tile's side (must match `BR_BITS` in `ntt.cu`).
const BITREV_TILE_BITS: u32 = 4;

/// Resident tables: powers of the 2^32-th root of unity, of g and of 1/g (2^16 + 2^16 entries
/// each).
#[derive(Debug)]
pub struct NttTables {
    tw_lo: DevBuf,
    tw_hi: DevBuf,
    g_lo: DevBuf,
    g_hi: DevBuf,
    ginv_lo: DevBuf,
    ginv_hi: DevBuf,
}

fn pow2_list(base: Scalar) -> Vec<Scalar> {
    // base^(2^k) for k = 0..32
    let mut v = Vec::with_capacity(32);
    let mut x = base;
    for _ in 0..32 {
        v.push(x);
        x = x.square();
    }
    v
}

impl NttTables {
    /// Builds the tables on the device.
    pub fn new(module: &Module, stream: &Stream) -> Result<Self, CudaError> {
        // With CUZK_NTT_FP64 the entries are stored times 2^4 (see TW_MUL in ntt.cu).
        let mk = |base: Scalar, scale16: bool| -> Result<(DevBuf, DevBuf), CudaError> {
            let lo = DevBuf::new(stream, 32 << 16)?;
            let hi = DevBuf::new(stream, 32 << 16)?;
            let pows = pow2_list(base);
            let words = scalar_words(&pows);
            let p = DevBuf::new(stream, 32 * 32)?;
            // SAFETY: 32 scalars fit; the host vector lives until the sync below.
            unsafe { crate::device::htod_async(p.ptr, words.as_ptr().cast(), 32 * 32, stream)? };
            // SAFETY: arguments match ntt_pow_table.
            unsafe { module.launch("ntt_pow_table", 256, 256, 0, stream, Args::new().push(lo.ptr).push(hi.ptr).push(p.ptr).push(u32::from(scale16)))? };
            stream.sync()?;
            Ok((lo, hi))
        };
        let all16 = module.ntt_fp64();
        let (tw_lo, tw_hi) = mk(Scalar::ROOT_OF_UNITY, all16)?;
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let (g_lo, g_hi) = mk(g, all16)?;
        let (ginv_lo, ginv_hi) = mk(g.invert().unwrap(), all16)?;
        Ok(NttTables { tw_lo, tw_hi, g_lo, g_hi, ginv_lo, ginv_hi })
    }
}

/// Scaling applied while loading or storing (see `apply_scale` in `ntt.cu`).
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    /// Multiply by a constant.
    pub constant: Option<Scalar>,
    /// Multiply by g^e (`Some(false)`) or g^-e (`Some(true)`).
    pub pow_inverse: Option<bool>,
    /// e is the bit-reversed position rather than the position.
    pub brev: bool,
}

impl Scale {
    /// No scaling.
    pub const NONE: Scale = Scale { constant: None, pow_inverse: None, brev: false };

    fn mode(&self) -> u32 {
        let mut m = 0;
        if self.constant.is_some() {
            m |= 1;
        }
        if self.pow_inverse.is_some() {
            m |= 2;
        }
        if self.brev {
            m |= 4;
        }
        m
    }
}

/// Pass sizes for a transform of 2^k: as even as possible, each at most `LOG_ELEMS`.
fn passes(k: u32) -> Vec<u32> {
    if k == 0 {
        return vec![];
    }
    let p = k.div_ceil(LOG_ELEMS);
    let (base, rem) = (k / p, k % p);
    (0..p).map(|i| base + u32::from(i < rem)).collect()
}

/// Runs a DIF (natural -> bit-reversed) or DIT (bit-reversed -> natural) transform in place.
#[allow(clippy::too_many_arguments)]
pub fn transform(
    module: &Module,
    stream: &Stream,
    t: &NttTables,
    data: u64,
    log_n: u32,
    inverse: bool,
    dit: bool,
    load: Scale,
    store: Scale,
) -> Result<(), CudaError> {
    if log_n == 0 {
        return Ok(());
    }
    let ps = passes(log_n);
    // Scaling constants times 2^4 for twiddle products on the FP64 units (`TW_MUL` in ntt.cu).
    let constant_scale = if module.ntt_fp64() { Scalar::from(16u64) } else { Scalar::ONE };
    // DIF schedule: (L, B) from the whole problem down to stride 1.
    let mut sched = Vec::with_capacity(ps.len());
    let mut l = log_n;
    for &b in &ps {
        sched.push((l, b));
        l -= b;
    }
    if dit {
        sched.reverse();
    }
    let eb = log_n.min(LOG_ELEMS);
    let elems = 1u32 << eb;
    // Eight elements per thread: 128 threads per 2^10-element block. Measured on the H200: a 2^24
    // forward NTT took 6.12 ms against 6.30 with 4 elements per thread, and 6.17 against 7.02
    // with 16 (docs/perf-cuda.md, "Decisions").
    let threads = (elems / 8).max(1);
    let grid = 1u32 << (log_n - eb);
    let last = sched.len() - 1;
    for (i, &(l, b)) in sched.iter().enumerate() {
        let ld = if i == 0 { load } else { Scale::NONE };
        let st = if i == last { store } else { Scale::NONE };
        let gtab = |s: &Scale| {
            if s.pow_inverse == Some(true) {
                (t.ginv_lo.ptr, t.ginv_hi.ptr)
            } else {
                (t.g_lo.ptr, t.g_hi.ptr)
            }
        };
        // One pair of g tables per launch: load and store scaling never both use powers.
        let (glo, ghi) = if ld.pow_inverse.is_some() { gtab(&ld) } else { gtab(&st) };
        let args = Args::new()
            .push(data)
            .push(log_n)
            .push(l)
            .push(b)
            .push(u32::from(inverse))
            .push(u32::from(dit))
            .push(t.tw_lo.ptr)
            .push(t.tw_hi.ptr)
            .push(ld.mode())
            .push(st.mode())
            .push(FrArg::from(ld.constant.unwrap_or(Scalar::ONE) * constant_scale))
            .push(FrArg::from(st.constant.unwrap_or(Scalar::ONE) * constant_scale))
            .push(glo)
            .push(ghi);
        // SAFETY: the arguments match ntt_pass; data holds 2^log_n scalars.
        unsafe { module.launch("ntt_pass", grid, threads, elems * 32, stream, args)? };
    }
    Ok(())
}

/// In-place bit-reversal permutation.
pub fn bitrev(module: &Module, stream: &Stream, data: u64, log_n: u32) -> Result<(), CudaError> {
    if log_n == 0 {
        return Ok(());
    }
    let n = 1u32 << log_n;
    if log_n >= 2 * BITREV_TILE_BITS {
        // SAFETY: arguments match ntt_bitrev_tiled; one block per middle-bit value.
        return unsafe {
            module.launch("ntt_bitrev_tiled", 1 << (log_n - 2 * BITREV_TILE_BITS), 1 << (2 * BITREV_TILE_BITS), 0, stream, Args::new().push(data).push(log_n))
        };
    }
    let block = n.min(256);
    // SAFETY: arguments match ntt_bitrev.
    unsafe { module.launch("ntt_bitrev", n.div_ceil(block), block, 0, stream, Args::new().push(data).push(log_n)) }
}

/// Natural-order NTT family as the `Backend` trait defines it.
pub fn ntt_natural(module: &Module, stream: &Stream, t: &NttTables, data: u64, domain: &Domain, inverse: bool, coset: bool) -> Result<(), CudaError> {
    let k = domain.log_n;
    if !inverse {
        let load = if coset { Scale { constant: None, pow_inverse: Some(false), brev: false } } else { Scale::NONE };
        transform(module, stream, t, data, k, false, false, load, Scale::NONE)?;
    } else {
        let store = Scale { constant: Some(domain.n_inv), pow_inverse: coset.then_some(true), brev: true };
        transform(module, stream, t, data, k, true, false, Scale::NONE, store)?;
    }
    bitrev(module, stream, data, k)
}

/// `(A·B - C)/Z` coefficients from the evaluations in `a, b, c` (results in `a`).
///
/// Six transforms, not seven: `C` is never taken to the coset. `Z` is the constant `g^n - 1`
/// on the coset and `deg C < n`, so the inverse coset transform of `(A·B - C)/Z` is that of
/// `A·B` times `1/Z`, minus `C`'s coefficients times `1/Z`; both scalings ride on the inverse
/// transforms' stores, and one element-wise subtraction replaces `C`'s forward coset transform.
///
/// `before(i)` runs before the work on operand `i` (0 = a, 1 = b, 2 = c) is queued: the
/// backend uses it to order the compute stream after that operand's upload only, so the
/// transforms of `a` run while `b` and `c` are still being copied, and `c`, needed last, has
/// the longest to arrive.
pub fn compute_h(
    module: &Module,
    stream: &Stream,
    t: &NttTables,
    [a, b, c]: [u64; 3],
    domain: &Domain,
    mut before: impl FnMut(usize) -> Result<(), CudaError>,
) -> Result<(), CudaError> {
    let k = domain.log_n;
    let n = 1u32 << k;
    let block = n.min(256);
    if k == 0 {
        // One element: no transforms (whose stores carry the scalings), just the quotient.
        for i in 0..3 {
            before(i)?;
        }
        let args = Args::new().push(a).push(b).push(c).push(FrArg::from(domain.z_inv_on_coset)).push(n);
        // SAFETY: arguments match ntt_quotient; the buffers hold one scalar each.
        return unsafe { module.launch("ntt_quotient", 1, 1, 0, stream, args) };
    }
    // Evaluations -> coefficients (bit-reversed, scaled by g^i / n) -> coset evaluations (natural).
    let to_coset = Scale { constant: Some(domain.n_inv), pow_inverse: Some(false), brev: true };
    for (i, &p) in [a, b].iter().enumerate() {
        before(i)?;
        transform(module, stream, t, p, k, true, false, Scale::NONE, to_coset)?;
        transform(module, stream, t, p, k, false, true, Scale::NONE, Scale::NONE)?;
    }
    // SAFETY: arguments match ntt_mul; both buffers hold n scalars.
    unsafe { module.launch("ntt_mul", n.div_ceil(block), block, 0, stream, Args::new().push(a).push(b).push(n))? };
    // A·B's coefficients over Z (bit-reversed), then C's, then their difference.
    let over_z = domain.n_inv * domain.z_inv_on_coset;
    let from_coset = Scale { constant: Some(over_z), pow_inverse: Some(true), brev: true };
    transform(module, stream, t, a, k, true, false, Scale::NONE, from_coset)?;
    before(2)?;
    transform(module, stream, t, c, k, true, false, Scale::NONE, Scale { constant: Some(over_z), pow_inverse: None, brev: false })?;
    // SAFETY: arguments match ntt_sub; both buffers hold n scalars.
    unsafe { module.launch("ntt_sub", n.div_ceil(block), block, 0, stream, Args::new().push(a).push(c).push(n))? };
    bitrev(module, stream, a, k)
}
