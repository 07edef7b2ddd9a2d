//! Host side of the Pippenger MSM (kernels: `kernels/wgsl/msm/`).
//!
//! Per chunk of at most `max_m` scalars (chunks keep every binding within the adapter's
//! limits): gather and convert the scalars, size the windows from those above 1, count
//! signed-digit bucket entries, scan on the host, scatter, sum the buckets in balanced rounds
//! (all planned on the host from the scanned offsets, so one submission runs them), reduce each
//! window on the GPU, and combine the window sums and the chunks on the host.

use blstrs::{G1Projective, G2Projective};
use cuzk_core::density::DensityBitmap;
use cuzk_core::msm::{buckets, fp2_from_bytes, fp_from_bytes, segment_len, window_bits, windows, Group, COUNT_DENSE_MIN};
use ff::Field;
use group::Group as _;

use crate::device::{Batch, Bind, Gpu};
use crate::error::WgpuError;
use crate::kernels::{CurveKernels, PrepareKernels};

const NONE: u32 = u32::MAX;

/// Segments per window and buckets per segment (a power of two each) for the window sums of
/// `nw` windows of `c` bits: about 16384 invocations in all.
pub(crate) fn window_split(c: u32, nw: u32) -> (u32, u32) {
    let half = 1u32 << (c - 1);
    let mut nseg = (16384 / nw).next_power_of_two().min(half).max(1);
    if nseg * nw > 16384 {
        nseg = (nseg / 2).max(1);
    }
    (nseg, half / nseg)
}

/// Scalars of an MSM on the device.
pub struct Source<'a> {
    /// Montgomery-form scalars.
    pub buf: &'a wgpu::Buffer,
    /// How many take part (before density filtering).
    pub len: usize,
    /// Present variables, if sparse.
    pub density: Option<&'a DensityBitmap>,
}

/// A run of scalar indices `[i0, i1)` (i0 a multiple of 64) whose `m` present scalars use the
/// bases from rank `r0`.
#[derive(Debug, Clone, Copy)]
struct Chunk {
    i0: usize,
    i1: usize,
    r0: usize,
    m: usize,
}

fn word_bits(words: &[u64], w: usize, len: usize) -> u64 {
    let v = words.get(w).copied().unwrap_or(0);
    let valid = len.saturating_sub(w * 64);
    if valid >= 64 {
        v
    } else {
        v & ((1u64 << valid) - 1)
    }
}

/// Splits `[0, len)` into chunks of at most `max_m` present scalars and `max_span` indices.
fn plan(len: usize, density: Option<&DensityBitmap>, max_m: usize, max_span: usize) -> Vec<Chunk> {
    let mut out = Vec::new();
    match density {
        None => {
            let step = max_m.min(max_span);
            let mut i0 = 0;
            while i0 < len {
                let i1 = (i0 + step).min(len);
                out.push(Chunk { i0, i1, r0: i0, m: i1 - i0 });
                i0 = i1;
            }
        }
        Some(d) => {
            let words = d.words();
            let nw = len.div_ceil(64);
            let (mut i0, mut r0, mut m) = (0usize, 0usize, 0usize);
            for w in 0..nw {
                let c = word_bits(words, w, len).count_ones() as usize;
                if m > 0 && (m + c > max_m || (w + 1) * 64 - i0 > max_span) {
                    out.push(Chunk { i0, i1: w * 64, r0, m });
                    i0 = w * 64;
                    r0 += m;
                    m = 0;
                }
                m += c;
            }
            if m > 0 {
                out.push(Chunk { i0, i1: len, r0, m });
            }
        }
    }
    out
}

/// Window bits, windows and bucket count for a chunk of `m` under the binding limit.
fn shape(m: usize, xb: u64, max_binding: u64) -> (u32, u32, u32) {
    let mut c = window_bits(m);
    while c > 4 && buckets(c) as u64 * xb * 2 > max_binding {
        c -= 1;
    }
    (c, windows(c), buckets(c))
}

/// Whether a chunk of `m` scalars keeps every buffer within the binding limit.
fn fits(m: usize, g: Group, mb: u64) -> bool {
    let m64 = m as u64;
    let (ab, xb) = (g.affine_bytes() as u64, g.xyzz_bytes() as u64);
    let (_, w, nb) = shape(m, xb, mb);
    let entries = 4 * w as u64 * m64;
    let partials = (w as u64 * m64 / 16 + nb as u64 + 1) * xb;
    32 * m64 <= mb && m64 * ab + 256 <= mb && entries <= mb && partials <= mb
}

/// The largest chunk size (a multiple of 64) that fits, at most `want`.
fn max_chunk(want: usize, g: Group, mb: u64) -> Result<usize, WgpuError> {
    let mut m = want.next_multiple_of(64).max(64);
    while !fits(m, g, mb) {
        if m <= 64 {
            return Err(WgpuError::OutOfMemory(format!("the adapter's binding limit ({mb} bytes) is too small for an MSM")));
        }
        m = (m / 2).next_multiple_of(64);
    }
    Ok(m)
}

fn u32_bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Exclusive prefix sums with the total appended.
fn scan(counts: &[u32]) -> Result<Vec<u32>, WgpuError> {
    let mut out = Vec::with_capacity(counts.len() + 1);
    let mut acc = 0u64;
    for &c in counts {
        out.push(acc as u32);
        acc += c as u64;
        if acc >= 1 << 31 {
            return Err(WgpuError::Invalid("more than 2^31 bucket entries in one MSM chunk".into()));
        }
    }
    out.push(acc as u32);
    Ok(out)
}

/// Runs the MSM over `bases` (starting at point `offset`) and returns the sum as Jacobian
/// window sums already combined: the caller gets one point per group via [`msm_g1`]/[`msm_g2`].
#[allow(clippy::too_many_arguments)]
fn msm_windows(
    gpu: &Gpu,
    prep: &PrepareKernels,
    ck: &CurveKernels,
    g: Group,
    bases: &wgpu::Buffer,
    offset: usize,
    src: &Source<'_>,
) -> Result<Vec<(Vec<u8>, u32)>, WgpuError> {
    let mb = gpu.max_binding;
    let need = src.density.map_or(src.len, |d| d.count());
    if need == 0 {
        return Ok(Vec::new());
    }
    let max_m = max_chunk(need, g, mb)?;
    let max_span = ((mb / 32) as usize / 64 * 64).max(64);
    let chunks = plan(src.len, src.density, max_m, max_span);
    let dummy = gpu.storage(8, "dummy")?;
    let align = gpu.limits.min_storage_buffer_offset_alignment.max(4) as u64;
    let (ab, xb) = (g.affine_bytes() as u64, g.xyzz_bytes() as u64);
    let mut results = Vec::new();
    for ch in chunks {
        let m = ch.m;
        if m == 0 {
            continue;
        }
        let span = ch.i1 - ch.i0;
        // 1. Gather + convert, 2. histogram.
        let prepared = gpu.storage(32 * m as u64, "prepared scalars")?;
        let (words, prefix) = match src.density {
            Some(d) => {
                let (w0, w1) = (ch.i0 / 64, ch.i1.div_ceil(64));
                let mut wv = Vec::with_capacity(2 * (w1 - w0));
                let mut pv = Vec::with_capacity(w1 - w0);
                let mut acc = 0u32;
                for w in w0..w1 {
                    let bits = word_bits(d.words(), w, ch.i1);
                    wv.push(bits as u32);
                    wv.push((bits >> 32) as u32);
                    pv.push(acc);
                    acc += bits.count_ones();
                }
                (Some(gpu.storage_init(&u32_bytes(&wv), "density words")?), Some(gpu.storage_init(&u32_bytes(&pv), "density prefix")?))
            }
            None => (None, None),
        };
        let mut b = Batch::new(gpu);
        let scal = Bind { buf: src.buf, offset: 32 * ch.i0 as u64, size: Some(32 * span as u64) };
        let wb = words.as_ref().unwrap_or(&dummy);
        let pb = prefix.as_ref().unwrap_or(&dummy);
        let use_density = u32::from(src.density.is_some());
        b.dispatch(
            &prep.prepare,
            &[(0, scal), (1, wb.into()), (2, pb.into()), (3, (&prepared).into())],
            4,
            [span as u32, use_density, 0, 0, 0, 0, 0, 0],
            span as u64,
            false,
        )?;
        // The windows are sized from the scalars above 1 (`COUNT_DENSE_MIN`).
        let sizing = if m >= COUNT_DENSE_MIN {
            let dense = gpu.storage(4, "dense scalar count")?;
            b.dispatch(&prep.count_dense, &[(5, (&prepared).into()), (6, (&dense).into())], 4, [m as u32, 0, 0, 0, 0, 0, 0, 0], m as u64, false)?;
            b.submit()?;
            b = Batch::new(gpu);
            let raw = gpu.read(&dense, 0, 4)?;
            (u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]) as usize).max(1)
        } else {
            m
        };
        let (c, nw, nb) = shape(sizing, xb, mb);
        let counts = gpu.storage(4 * nb as u64, "bucket counts")?;
        b.dispatch(&prep.histogram, &[(5, (&prepared).into()), (6, (&counts).into())], 4, [m as u32, c, nw, 0, 0, 0, 0, 0], m as u64, false)?;
        b.submit()?;
        let raw = gpu.read(&counts, 0, 4 * nb as u64)?;
        let cnt: Vec<u32> = raw.chunks_exact(4).map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]])).collect();
        let off = scan(&cnt)?;
        let total = off[nb as usize] as usize;
        if total == 0 {
            continue;
        }
        // 3. Scatter.
        let mut b = Batch::new(gpu);
        let cursor = gpu.storage_init(&u32_bytes(&off[..nb as usize]), "cursor")?;
        let entries = gpu.storage(4 * total as u64, "entries")?;
        b.dispatch(
            &prep.scatter,
            &[(5, (&prepared).into()), (6, (&cursor).into()), (7, (&entries).into())],
            4,
            [m as u32, c, nw, 0, 0, 0, 0, 0],
            m as u64,
            false,
        )?;
        // 4. Bucket rounds: at most `cuzk_core::msm::MAX_SEGMENT` entries (round 1) or partials
        // (later rounds) per invocation. With `window_split`, this bounds the curve operations
        // of one invocation, which must stay far below llvmpipe's 65535 loop iterations per
        // invocation (`shaders::program_tests`).
        let s = segment_len(total);
        let byte_off = (offset + ch.r0) as u64 * ab;
        let base_al = byte_off / align * align;
        let bases_bind = Bind { buf: bases, offset: base_al, size: Some(byte_off - base_al + m as u64 * ab) };
        let g_words = ((byte_off - base_al) / 4) as u32;
        // Round 1: equal segments of S entries over the sorted entries.
        let mut count = vec![0u32; nb as usize];
        for (bk, nc) in count.iter_mut().enumerate() {
            let (lo, hi) = (off[bk], off[bk + 1]);
            if hi > lo {
                *nc = (hi - 1) / s - lo / s + 1;
            }
        }
        let mut base = scan(&count)?;
        let nparts = base[nb as usize] as u64;
        if nparts * xb > mb {
            return Err(WgpuError::OutOfMemory(format!("{nparts} bucket partials exceed the binding limit")));
        }
        let mut cur = gpu.storage(nparts * xb, "bucket partials")?;
        let off_buf = gpu.storage_init(&u32_bytes(&off), "bucket offsets")?;
        let pb_buf = gpu.storage_init(&u32_bytes(&base[..nb as usize]), "partial bases")?;
        let prm = [total as u32, s, nb, 0, 0, 0, g_words, 0];
        let threads = total.div_ceil(s as usize) as u64;
        b.dispatch(
            &ck.round_affine,
            &[(0, bases_bind), (1, (&entries).into()), (2, (&off_buf).into()), (3, (&pb_buf).into()), (5, (&cur).into())],
            7,
            prm,
            threads,
            false,
        )?;
        let mut keep = vec![off_buf, pb_buf];
        // Later rounds: tasks of at most S partials of one bucket.
        while count.iter().any(|&c| c > 1) {
            let (mut ts, mut tl) = (Vec::new(), Vec::new());
            for bk in 0..nb as usize {
                let (c0, b0) = (count[bk], base[bk]);
                base[bk] = ts.len() as u32;
                let k = c0.div_ceil(s);
                for j in 0..k {
                    ts.push(b0 + j * s);
                    tl.push((c0 - j * s).min(s));
                }
                count[bk] = k;
            }
            let nt = ts.len();
            let next = gpu.storage(nt as u64 * xb, "bucket partials")?;
            let ts_buf = gpu.storage_init(&u32_bytes(&ts), "task starts")?;
            let tl_buf = gpu.storage_init(&u32_bytes(&tl), "task lengths")?;
            b.dispatch(
                &ck.round_tasks,
                &[(1, (&ts_buf).into()), (3, (&tl_buf).into()), (4, (&cur).into()), (5, (&next).into())],
                7,
                [nt as u32, 0, 0, 0, 0, 0, 0, 0],
                nt as u64,
                false,
            )?;
            keep.push(std::mem::replace(&mut cur, next));
            keep.push(ts_buf);
            keep.push(tl_buf);
        }
        let fin = cur;
        let bidx: Vec<u32> = count.iter().zip(&base).map(|(&n, &p)| if n == 1 { p } else { NONE }).collect();
        // 5. Window sums.
        let half = 1u32 << (c - 1);
        let (nseg, seg) = window_split(c, nw);
        let bidx_buf = gpu.storage_init(&u32_bytes(&bidx), "bucket index")?;
        let mut layer = gpu.storage(xb * (nw * nseg) as u64, "window segments")?;
        b.dispatch(
            &ck.window,
            &[(4, (&fin).into()), (5, (&layer).into()), (6, (&bidx_buf).into())],
            7,
            [half, nw, seg, nseg, 0, 0, 0, 0],
            (nw * nseg) as u64,
            false,
        )?;
        let mut width = nseg;
        while width > 1 {
            let mh = width / 2;
            let next = gpu.storage(xb * (nw * mh) as u64, "window pairs")?;
            b.dispatch(&ck.pair, &[(4, (&layer).into()), (5, (&next).into())], 7, [nw, mh, 0, 0, 0, 0, 0, 0], (nw * mh) as u64, false)?;
            keep.push(std::mem::replace(&mut layer, next));
            width = mh;
        }
        b.submit()?;
        let raw = gpu.read(&layer, 0, xb * nw as u64)?;
        drop((keep, fin, entries, cursor, prepared));
        results.push((raw, c));
    }
    Ok(results)
}

/// XYZZ (X, Y, ZZ, ZZZ) to Jacobian (X·ZZ·ZZZ², Y·ZZ³·ZZZ², ZZ·ZZZ); `None` for the identity.
fn xyzz_to_jacobian<F: Field>(x: F, y: F, zz: F, zzz: F) -> Option<(F, F, F)> {
    if bool::from(zz.is_zero()) {
        return None;
    }
    let z = zz * zzz;
    Some((x * zzz * z, y * zz * z.square(), z))
}

/// G1 MSM.
pub fn msm_g1(gpu: &Gpu, prep: &PrepareKernels, ck: &CurveKernels, bases: &wgpu::Buffer, offset: usize, src: &Source<'_>) -> Result<G1Projective, WgpuError> {
    let mut acc = G1Projective::identity();
    for (raw, c) in msm_windows(gpu, prep, ck, Group::G1, bases, offset, src)? {
        let pts: Vec<G1Projective> = raw
            .chunks_exact(192)
            .map(|p| match xyzz_to_jacobian(fp_from_bytes(&p[..48]), fp_from_bytes(&p[48..96]), fp_from_bytes(&p[96..144]), fp_from_bytes(&p[144..])) {
                Some((x, y, z)) => G1Projective::from_raw_unchecked(x, y, z),
                None => G1Projective::identity(),
            })
            .collect();
        acc += cuzk_core::backend::combine_windows(&pts, c);
    }
    Ok(acc)
}

/// G2 MSM.
pub fn msm_g2(gpu: &Gpu, prep: &PrepareKernels, ck: &CurveKernels, bases: &wgpu::Buffer, offset: usize, src: &Source<'_>) -> Result<G2Projective, WgpuError> {
    let mut acc = G2Projective::identity();
    for (raw, c) in msm_windows(gpu, prep, ck, Group::G2, bases, offset, src)? {
        let pts: Vec<G2Projective> = raw
            .chunks_exact(384)
            .map(|p| match xyzz_to_jacobian(fp2_from_bytes(&p[..96]), fp2_from_bytes(&p[96..192]), fp2_from_bytes(&p[192..288]), fp2_from_bytes(&p[288..])) {
                Some((x, y, z)) => G2Projective::from_raw_unchecked(x, y, z),
                None => G2Projective::identity(),
            })
            .collect();
        acc += cuzk_core::backend::combine_windows(&pts, c);
    }
    Ok(acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_every_present_scalar_once() {
        let bits: Vec<bool> = (0..1000).map(|i| i % 3 != 0 || i % 7 == 0).collect();
        let d = DensityBitmap::from_bools(&bits, cuzk_core::alloc::heap()).unwrap();
        let chunks = plan(1000, Some(&d), 128, 4096);
        assert!(chunks.len() > 1);
        let mut r = 0;
        let mut i = 0;
        for ch in &chunks {
            assert_eq!(ch.i0, i);
            assert_eq!(ch.i0 % 64, 0);
            assert_eq!(ch.r0, r);
            assert!(ch.m <= 128);
            assert_eq!(ch.m, bits[ch.i0..ch.i1].iter().filter(|b| **b).count());
            r += ch.m;
            i = ch.i1;
        }
        assert_eq!(i, 1000);
        assert_eq!(r, d.count());
        let dense = plan(1000, None, 256, 4096);
        assert_eq!(dense.len(), 4);
        assert_eq!(dense[3].i1, 1000);
    }
}
