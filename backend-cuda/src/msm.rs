//! Host side of the Pippenger MSM (see `kernels/cuda/msm/msm.cu` for the algorithm).

use crate::device::{dtoh_sync, htod_async, Args, DevBuf, Event, Module, Stream};
use crate::error::CudaError;

/// Which group: kernel suffix and sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// G1 over Fp.
    G1,
    /// G2 over Fp2.
    G2,
}

impl Group {
    fn suffix(self) -> &'static str {
        match self {
            Group::G1 => "g1",
            Group::G2 => "g2",
        }
    }
    /// Bytes of one base-field element.
    pub fn field_bytes(self) -> usize {
        match self {
            Group::G1 => 48,
            Group::G2 => 96,
        }
    }
    /// Bytes of an affine point.
    pub fn affine_bytes(self) -> usize {
        2 * self.field_bytes()
    }
    fn xyzz_bytes(self) -> usize {
        4 * self.field_bytes()
    }
}

/// Window size for `m` scalars: ~log2(m) - 6 up to 16; 20 from 2^24 scalars on, where 13
/// windows instead of 16 save more bucket additions than the larger window sums cost
/// (`cuzk-cuda-bench g1c` / `g2c` on the H200, docs/perf-cuda.md).
pub fn window_bits(m: usize) -> u32 {
    if m >= 1 << 24 {
        return 20;
    }
    let lg = usize::BITS - m.max(1).leading_zeros(); // ~log2(m) + 1
    (lg as i64 - 7).clamp(4, 16) as u32
}

/// Tunables of one MSM run (exposed for benchmarks).
#[derive(Debug, Clone, Copy)]
pub struct MsmConfig {
    /// Window bits (0: choose from the size).
    pub c: u32,
}

/// Scalars of an MSM already on the device.
pub struct ScalarSource<'a> {
    /// Montgomery-form scalars (32 bytes each).
    pub ptr: u64,
    /// How many of them take part (before density filtering).
    pub len: usize,
    /// Density words and the number of set bits, if sparse.
    pub density: Option<(&'a [u64], usize)>,
}

/// Optional phase timing (`CUZK_MSM_PROFILE=1`): synchronizes after each phase and prints
/// the durations to stderr.
struct Profile {
    on: bool,
    t: std::time::Instant,
    parts: Vec<(String, f64)>,
}

/// Whether `CUZK_MSM_PROFILE` is set.
fn profiling() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("CUZK_MSM_PROFILE").is_some())
}

impl Profile {
    fn new() -> Self {
        Profile { on: profiling(), t: std::time::Instant::now(), parts: Vec::new() }
    }
    fn mark(&mut self, stream: &Stream, what: &str) {
        if self.on {
            let _ = stream.sync();
            let now = std::time::Instant::now();
            self.parts.push((what.to_string(), (now - self.t).as_secs_f64() * 1e3));
            self.t = now;
        }
    }
    fn report(&self, label: &str) {
        if self.on {
            let total: f64 = self.parts.iter().map(|p| p.1).sum();
            let parts: Vec<String> = self.parts.iter().map(|(w, ms)| format!("{w} {ms:.2}")).collect();
            eprintln!("msm-profile {label}: total {total:.2} ms = {}", parts.join(", "));
        }
    }
}

/// Accumulation kernel variant: `CUZK_MSM_LB=1` picks the one compiled with
/// `__launch_bounds__(128, 3)` (fewer registers, more resident warps), `0` the unbounded one.
fn use_lb(group: Group) -> bool {
    match std::env::var("CUZK_MSM_LB").ok().as_deref() {
        Some("1") => true,
        Some("0") => false,
        _ => {
            let _ = group;
            false
        }
    }
}

/// Round-1 scheme: `CUZK_MSM_SEG=0` cuts each bucket into chunks of at most S entries (one
/// thread per chunk); the default cuts the sorted entries into equal segments of S entries
/// regardless of bucket boundaries (one thread per segment, every thread does S additions).
fn use_segments() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("CUZK_MSM_SEG").ok().as_deref() != Some("0"))
}

/// Window size override (`CUZK_MSM_C`), for tuning.
fn c_override() -> Option<u32> {
    std::env::var("CUZK_MSM_C").ok().and_then(|v| v.parse().ok()).filter(|c| (2..=24).contains(c))
}

fn scan(module: &Module, stream: &Stream, input: u64, out: u64, n: u32, ceil_div: u32) -> Result<(), CudaError> {
    scan_above(module, stream, input, out, n, ceil_div, 0)
}

/// Exclusive scan of `ceil(in[i] / ceil_div)` (`in[i]` when `ceil_div` is 0), where values up
/// to `drop_upto` count as 0.
fn scan_above(module: &Module, stream: &Stream, input: u64, out: u64, n: u32, ceil_div: u32, drop_upto: u32) -> Result<(), CudaError> {
    const B: u32 = 1024;
    let nblocks = n.div_ceil(B);
    let sums = DevBuf::new(stream, 4 * (nblocks as usize + 1))?;
    let args = Args::new().push(input).push(out).push(n).push(sums.ptr).push(ceil_div).push(drop_upto);
    // SAFETY: arguments match scan_block; buffers hold n (resp. nblocks) u32.
    unsafe { module.launch("scan_block", nblocks, B, 0, stream, args)? };
    if nblocks > 1 {
        let offs = DevBuf::new(stream, 4 * (nblocks as usize + 1))?;
        scan(module, stream, sums.ptr, offs.ptr, nblocks, 0)?;
        // SAFETY: arguments match scan_add.
        unsafe { module.launch("scan_add", nblocks, B, 0, stream, Args::new().push(out).push(n).push(offs.ptr))? };
    }
    Ok(())
}

fn read_u32(stream: &Stream, ptr: u64) -> Result<u32, CudaError> {
    let mut b = [0u8; 4];
    // SAFETY: 4 bytes at ptr.
    unsafe { dtoh_sync(&mut b, ptr, stream)? };
    Ok(u32::from_le_bytes(b))
}

/// The u32 values at the device addresses `addrs`, read with one launch and one copy.
fn read_u32s(module: &Module, stream: &Stream, addrs: &[u64]) -> Result<Vec<u32>, CudaError> {
    let n = addrs.len();
    let dev_addrs = DevBuf::new(stream, 8 * n)?;
    let out = DevBuf::new(stream, 4 * n)?;
    // SAFETY: sizes match; addrs outlives the copy (the dtoh_sync below waits for the stream).
    unsafe { htod_async(dev_addrs.ptr, addrs.as_ptr().cast(), 8 * n, stream)? };
    // SAFETY: arguments match read_u32s; every address points at a live u32 on the device.
    unsafe { module.launch("read_u32s", grid(n, 256)?, 256, 0, stream, Args::new().push(dev_addrs.ptr).push(n as u32).push(out.ptr))? };
    let mut bytes = vec![0u8; 4 * n];
    // SAFETY: out holds 4n bytes.
    unsafe { dtoh_sync(&mut bytes, out.ptr, stream)? };
    Ok(bytes.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

fn grid(n: usize, block: u32) -> Result<u32, CudaError> {
    u32::try_from(n.div_ceil(block as usize)).map_err(|_| CudaError::Invalid(format!("{n} threads is too many")))
}

/// Runs the MSM and returns the window sums as Jacobian coordinates (X, Y, Z, each
/// `field_bytes` long, Montgomery form) together with the window size `c`; the caller combines
/// them as `sum_w 2^(c·w) S_w`.
pub fn msm_windows(
    module: &Module,
    stream: &Stream,
    group: Group,
    bases: u64,
    scalars: &ScalarSource<'_>,
    cfg: MsmConfig,
) -> Result<(Vec<u8>, u32, usize), CudaError> {
    match prepare(module, stream, scalars)? {
        Some((prepared, m)) => windows_prepared(module, stream, group, bases, prepared.ptr, m, cfg),
        None => Ok((Vec::new(), 1, 0)),
    }
}

/// Step 1: gathers the scalars that take part (density) and converts them to canonical
/// integers; returns the compact buffer and its length (`None` when no scalar takes part).
pub fn prepare(module: &Module, stream: &Stream, scalars: &ScalarSource<'_>) -> Result<Option<(DevBuf, usize)>, CudaError> {
    let m = scalars.density.map_or(scalars.len, |(_, c)| c);
    if m == 0 {
        return Ok(None);
    }
    if m >= (1 << 31) || scalars.len >= (1 << 31) {
        return Err(CudaError::Invalid("more than 2^31 scalars".into()));
    }
    let len = scalars.len as u32;
    let prepared = DevBuf::new(stream, 32 * m)?;
    let (words_buf, prefix_buf, host) = if let Some((words, _)) = scalars.density {
        let nw = scalars.len.div_ceil(64);
        let mut prefix = Vec::with_capacity(nw);
        let mut acc = 0u32;
        for &w in &words[..nw] {
            prefix.push(acc);
            acc += w.count_ones();
        }
        let wb = DevBuf::new(stream, 8 * nw)?;
        let pb = DevBuf::new(stream, 4 * nw)?;
        let host_words = words[..nw].to_vec();
        // SAFETY: sizes match; the host vectors live until the stream syncs below.
        unsafe {
            htod_async(wb.ptr, host_words.as_ptr().cast(), 8 * nw, stream)?;
            htod_async(pb.ptr, prefix.as_ptr().cast(), 4 * nw, stream)?;
        }
        (Some(wb), Some(pb), Some((host_words, prefix)))
    } else {
        (None, None, None)
    };
    let use_density = u32::from(words_buf.is_some());
    let args = Args::new()
        .push(scalars.ptr)
        .push(len)
        .push(words_buf.as_ref().map_or(0, |b| b.ptr))
        .push(prefix_buf.as_ref().map_or(0, |b| b.ptr))
        .push(use_density)
        .push(prepared.ptr);
    // SAFETY: arguments match msm_prepare.
    unsafe { module.launch("msm_prepare", grid(scalars.len, 256)?, 256, 0, stream, args)? };
    if host.is_some() {
        stream.sync()?; // the pageable host vectors above must outlive their copies
    }
    drop((words_buf, prefix_buf, host));
    Ok(Some((prepared, m)))
}

/// Steps 2-5 over `m` prepared (canonical) scalars at `prepared` and the affine bases at
/// `bases`: returns the window sums as [`msm_windows`] does.
pub fn windows_prepared(
    module: &Module,
    stream: &Stream,
    group: Group,
    bases: u64,
    prepared: u64,
    m: usize,
    cfg: MsmConfig,
) -> Result<(Vec<u8>, u32, usize), CudaError> {
    let sfx = group.suffix();
    if m == 0 {
        return Ok((Vec::new(), 1, 0));
    }
    let m32 = u32::try_from(m).map_err(|_| CudaError::Invalid("more than 2^32 scalars".into()))?;
    let mut prof = Profile::new();

    // 2-3. Digits, histogram, scan, scatter.
    let c = if cfg.c != 0 { cfg.c } else { c_override().unwrap_or_else(|| window_bits(m)) };
    if !(2..=24).contains(&c) {
        return Err(CudaError::Invalid(format!("window size {c} is outside 2..=24")));
    }
    let w = 256u32.div_ceil(c);
    // Entries (one per nonzero digit) are counted and placed with 32-bit offsets.
    if w as u64 * m as u64 >= 1 << 32 {
        return Err(CudaError::Invalid(format!("{m} scalars in {w} windows could exceed 2^32 bucket entries; split the MSM")));
    }
    let half = 1u32 << (c - 1);
    let nb = w * half;
    let nb1 = nb as usize + 1;
    let counts = DevBuf::zeroed(stream, 4 * nb1)?;
    // SAFETY: arguments match msm_histogram.
    unsafe { module.launch("msm_histogram", grid(m, 256)?, 256, 0, stream, Args::new().push(prepared).push(m32).push(c).push(w).push(counts.ptr))? };
    let offsets = DevBuf::new(stream, 4 * nb1)?;
    scan(module, stream, counts.ptr, offsets.ptr, nb + 1, 0)?;
    let total = read_u32(stream, offsets.at(4 * nb as usize))? as usize;
    prof.mark(stream, "prepare+histogram+scan");
    if total == 0 {
        return Ok((Vec::new(), c, 0));
    }
    let entries = DevBuf::new(stream, 4 * total)?;
    let cursor = DevBuf::new(stream, 4 * nb1)?;
    // SAFETY: same sizes.
    unsafe { sys_dtod(cursor.ptr, offsets.ptr, 4 * nb1, stream)? };
    // The fullest bucket's count, known before the scatter when it goes by windows (see there).
    let max_known = if windowed_scatter(total, w, m) { Some(bucket_max(module, stream, &offsets, nb)?) } else { None };
    scatter(module, stream, prepared, m32, c, w, cursor.ptr, entries.ptr, total, max_known)?;
    drop(cursor);
    prof.mark(stream, "scatter");

    // 4. Bucket sums in rounds: first batch-affine rounds for large dense MSMs, then XYZZ.
    let mut entries = Some(entries);
    let mut acc_total = total;
    let mut reduced_points = None;
    let mut offsets = offsets;
    let mut affine_buckets = None;
    let max_count = || max_known.map_or_else(|| bucket_max(module, stream, &offsets, nb), Ok);
    if let Some(plan) = affine_plan(group, total, nb, w, m, max_count)? {
        let e = entries.as_ref().map_or(0, |e| e.ptr);
        match affine_rounds(module, stream, group, bases, e, &counts, &offsets, nb, total, plan.rounds) {
            Ok(r) => {
                let left = if plan.full { " to one point per bucket".to_string() } else { format!(", {} left", r.total) };
                prof.mark(stream, &format!("affine({} rounds{left})", plan.rounds));
                if prof.on {
                    eprintln!("msm-rounds (ms pairs/prefix/inversion/finish)\n{}", r.clock_report());
                }
                entries = None;
                if plan.full {
                    affine_buckets = Some((r.points, r.offsets));
                } else {
                    acc_total = r.total;
                    offsets = r.offsets;
                    reduced_points = Some(r.points);
                }
            }
            Err(CudaError::OutOfMemory(what)) => {
                tracing::debug!(%what, "no room for the batch-affine rounds; XYZZ rounds only");
            }
            Err(e) => return Err(e),
        }
    }
    // The window sums' input: XYZZ partial sums (partial[base[b]] when count[b] is 1), or
    // after full batch-affine rounds affine points (points[base[b]] when base[b + 1] > base[b]).
    let (final_count, partial, final_base) = if let Some((points, base)) = affine_buckets {
        drop((entries, offsets, counts));
        (None, points, base)
    } else {
        // The XYZZ rounds read the bases through the entries, or the batch-affine rounds' points.
        let acc_bases = reduced_points.as_ref().map_or(bases, |p: &DevBuf| p.ptr);
        let entries_ptr = entries.as_ref().map_or(0, |e| e.ptr);
        let s_chunk = ((acc_total >> 19) as u32).clamp(16, 256);
        let mut cur_count = counts;
        let mut cur_off = offsets;
        let mut input: Option<DevBuf> = None; // None: round 1 reads the affine bases through entries
        let max_chunks = DevBuf::new(stream, 4)?;
        let xb = group.xyzz_bytes();
        let mut done = None;
        if use_segments() {
            // Round 1 over equal segments of the sorted entries (see accumulate_segments).
            max_chunks.memset0(stream)?;
            let new_count = DevBuf::zeroed(stream, 4 * nb1)?;
            let args = Args::new().push(cur_off.ptr).push(nb).push(s_chunk).push(new_count.ptr).push(max_chunks.ptr);
            // SAFETY: arguments match msm_seg_counts; offsets holds nb + 1 entries.
            unsafe { module.launch("msm_seg_counts", grid(nb as usize, 256)?, 256, 0, stream, args)? };
            let part_base = DevBuf::new(stream, 4 * nb1)?;
            scan(module, stream, new_count.ptr, part_base.ptr, nb + 1, 0)?;
            let nparts = read_u32(stream, part_base.at(4 * nb as usize))? as usize;
            let out = DevBuf::new(stream, xb * nparts)?;
            let nseg = acc_total.div_ceil(s_chunk as usize);
            let args =
                Args::new().push(acc_bases).push(entries_ptr).push(cur_off.ptr).push(nb).push(acc_total as u32).push(s_chunk).push(part_base.ptr).push(out.ptr);
            // SAFETY: arguments match msm_accumulate_seg_*; out holds nparts points.
            unsafe { module.launch(&format!("msm_accumulate_seg_{sfx}"), grid(nseg, 128)?, 128, 0, stream, args)? };
            let maxc = read_u32(stream, max_chunks.ptr)?;
            prof.mark(stream, &format!("segments({nseg} threads, {nparts} partials)"));
            if maxc <= 1 {
                done = Some((new_count, part_base, out));
            } else {
                cur_count = new_count;
                cur_off = part_base;
                input = Some(out);
            }
        }
        let (final_count, final_base, partial) = match done {
            Some(d) => d,
            None => loop {
                let task_base = DevBuf::new(stream, 4 * nb1)?;
                scan(module, stream, cur_count.ptr, task_base.ptr, nb + 1, s_chunk)?;
                let ntasks = read_u32(stream, task_base.at(4 * nb as usize))? as usize;
                let ts = DevBuf::new(stream, 4 * ntasks)?;
                let tl = DevBuf::new(stream, 4 * ntasks)?;
                max_chunks.memset0(stream)?;
                // The chunk count of each bucket becomes its count in the next round.
                let new_count = DevBuf::new(stream, 4 * nb1)?;
                new_count.memset0(stream)?;
                let args = Args::new()
                    .push(cur_count.ptr)
                    .push(cur_off.ptr)
                    .push(task_base.ptr)
                    .push(nb)
                    .push(s_chunk)
                    .push(ts.ptr)
                    .push(tl.ptr)
                    .push(max_chunks.ptr)
                    .push(new_count.ptr);
                // SAFETY: arguments match msm_make_tasks.
                unsafe { module.launch("msm_make_tasks", grid(nb as usize, 256)?, 256, 0, stream, args)? };
                let out = DevBuf::new(stream, xb * ntasks)?;
                let nt = ntasks as u32;
                match &input {
                    None => {
                        // Only without segments, and so without batch-affine rounds: entries are set.
                        let args = Args::new().push(bases).push(entries_ptr).push(ts.ptr).push(tl.ptr).push(nt).push(out.ptr);
                        // SAFETY: arguments match msm_accumulate_affine_*.
                        let k = if use_lb(group) { format!("msm_accumulate_affine_lb_{sfx}") } else { format!("msm_accumulate_affine_{sfx}") };
                        unsafe { module.launch(&k, grid(ntasks, 128)?, 128, 0, stream, args)? };
                    }
                    Some(inp) => {
                        let args = Args::new().push(inp.ptr).push(ts.ptr).push(tl.ptr).push(nt).push(out.ptr);
                        // SAFETY: arguments match msm_accumulate_xyzz_*.
                        unsafe { module.launch(&format!("msm_accumulate_xyzz_{sfx}"), grid(ntasks, 128)?, 128, 0, stream, args)? };
                    }
                }
                let maxc = read_u32(stream, max_chunks.ptr)?;
                prof.mark(stream, &format!("round({ntasks} tasks)"));
                drop((ts, tl));
                if maxc <= 1 {
                    break (new_count, task_base, out);
                }
                cur_count = new_count;
                cur_off = task_base;
                input = Some(out);
            },
        };
        drop((entries, cur_off, reduced_points));
        (Some(final_count), partial, final_base)
    };

    // 5. Window sums: each window's buckets in nseg segments of at most 64 buckets, and at
    // least ~2^14 threads in all (large windows have 2^19 buckets each). Bucket b is the last
    // round's partial[final_base[b]] when final_count[b] is 1, else empty.
    let nseg = (16384 / w).next_power_of_two().max(half / 64).min(half).max(1);
    let seg = half / nseg;
    let xb = group.xyzz_bytes();
    let mut layer = DevBuf::new(stream, xb * (w * nseg) as usize)?;
    let g = grid((w * nseg) as usize, 64)?;
    match &final_count {
        Some(count) => {
            let args = Args::new().push(partial.ptr).push(count.ptr).push(final_base.ptr).push(half).push(w).push(seg).push(layer.ptr);
            // SAFETY: arguments match msm_window_segments_*; the three arrays cover all nb buckets.
            unsafe { module.launch(&format!("msm_window_segments_{sfx}"), g, 64, 0, stream, args)? };
        }
        None => {
            let args = Args::new().push(partial.ptr).push(final_base.ptr).push(half).push(w).push(seg).push(layer.ptr);
            // SAFETY: arguments match msm_window_segments_affine_*; base holds nb + 1 offsets.
            unsafe { module.launch(&format!("msm_window_segments_affine_{sfx}"), g, 64, 0, stream, args)? };
        }
    }
    drop((partial, final_count, final_base));
    let mut width = nseg;
    while width > 1 {
        let mh = width / 2;
        let next = DevBuf::new(stream, xb * (w * mh) as usize)?;
        let args = Args::new().push(layer.ptr).push(w).push(mh).push(next.ptr);
        // SAFETY: arguments match msm_pair_sums_*.
        unsafe { module.launch(&format!("msm_pair_sums_{sfx}"), grid((w * mh) as usize, 64)?, 64, 0, stream, args)? };
        layer = next;
        width = mh;
    }
    let fb = group.field_bytes();
    let jac = DevBuf::new(stream, 3 * fb * w as usize)?;
    // SAFETY: arguments match msm_to_jacobian_*.
    unsafe { module.launch(&format!("msm_to_jacobian_{sfx}"), 1, w, 0, stream, Args::new().push(layer.ptr).push(w).push(jac.ptr))? };
    let mut out = vec![0u8; 3 * fb * w as usize];
    // SAFETY: jac holds that many bytes.
    unsafe { dtoh_sync(&mut out, jac.ptr, stream)? };
    prof.mark(stream, "windows");
    prof.report(&format!("{sfx} m={m} c={c} entries={total}"));
    Ok((out, c, w as usize))
}

/// How many batch-affine rounds run, and whether they run until every bucket holds at most one
/// point (`full`: the window sums then read the buckets as affine points, with no XYZZ rounds).
#[derive(Debug, Clone, Copy)]
struct AffinePlan {
    rounds: u32,
    full: bool,
}

/// Batch-affine rounds before the XYZZ ones (`CUZK_MSM_AFFINE`): `0` never, `1` for every MSM
/// (tests), unset: MSMs whose digits are mostly nonzero (the scatter's density rule) with at
/// least 2^24 entries for G1 or 2^22 for G2 (below that they were no faster on the H200).
/// `CUZK_MSM_AFFINE_ROUNDS` (1..=16) fixes the round count (partial); otherwise the rounds run until
/// every bucket holds one point when the fullest bucket needs at most `AFFINE_FULL_MAX_ROUNDS`
/// (`CUZK_MSM_AFFINE_FULL=0` turns that off), else until about two points per bucket are left
/// (2 to 6 rounds), and then more while the points left would take more than
/// `AFFINE_LEFT_BYTES`. `max_count` is the fullest bucket's count.
fn affine_plan(
    group: Group,
    total: usize,
    nb: u32,
    w: u32,
    m: usize,
    max_count: impl FnOnce() -> Result<u32, CudaError>,
) -> Result<Option<AffinePlan>, CudaError> {
    if !use_segments() {
        return Ok(None); // the chunked round 1 reads the bases through entries
    }
    let least = if group == Group::G1 { 1 << 24 } else { 1 << 22 };
    let on = match std::env::var("CUZK_MSM_AFFINE").ok().as_deref() {
        Some("0") => false,
        Some("1") => true,
        _ => total >= least && 2 * total >= w as usize * m,
    };
    if !on {
        return Ok(None);
    }
    if let Some(rounds) = std::env::var("CUZK_MSM_AFFINE_ROUNDS").ok().and_then(|v| v.parse().ok()).filter(|r| (1..=16).contains(r)) {
        return Ok(Some(AffinePlan { rounds, full: false }));
    }
    let needed = max_count()?.max(1).next_power_of_two().ilog2();
    if needed <= AFFINE_FULL_MAX_ROUNDS && std::env::var("CUZK_MSM_AFFINE_FULL").ok().as_deref() != Some("0") {
        // At most one point per bucket is left, whatever the memory.
        return Ok(Some(AffinePlan { rounds: needed.max(1), full: true }));
    }
    let mean = (total / nb.max(1) as usize).max(1);
    let mut rounds = (mean.ilog2().saturating_sub(1)).clamp(2, 6);
    while rounds < 16 && (total >> rounds) * group.affine_bytes() > AFFINE_LEFT_BYTES {
        rounds += 1;
    }
    Ok(Some(AffinePlan { rounds, full: false }))
}

/// Rounds the full plan may take (the fullest bucket holds at most 2^this many points).
const AFFINE_FULL_MAX_ROUNDS: u32 = 10;

/// The most the batch-affine rounds' output may take (their last round writes it all at once).
const AFFINE_LEFT_BYTES: usize = 8 << 30;

/// Entries one group of batch-affine rounds takes at most: `CUZK_MSM_AFFINE_GROUP` (log2,
/// 16..=30), else the largest power of two up to 2^27 whose two groups in flight fit in a
/// quarter of the free device memory. A group of E entries holds about E/2 · (ab + fb + 4)
/// bytes in its first round (2^27 G1 entries: 9.9 GB).
fn affine_group_entries(group: Group) -> Result<usize, CudaError> {
    if let Some(log) = std::env::var("CUZK_MSM_AFFINE_GROUP").ok().and_then(|v| v.parse::<u32>().ok()).filter(|l| (16..=30).contains(l)) {
        return Ok(1 << log);
    }
    let (free, _) = cudarc::driver::result::mem_get_info()?;
    let per_entry = (group.affine_bytes() + group.field_bytes() + 4) / 2 + 1;
    let mut log = 27;
    while log > 20 && 2 * (1usize << log) * per_entry > free / 4 {
        log -= 1;
    }
    Ok(1 << log)
}

/// Elements per thread in the inversion's levels.
const AFFINE_BATCH: usize = 16;
/// Levels stop at this many elements, which are then inverted one per thread
/// (`CUZK_MSM_INV_EACH_MAX` overrides it, for tuning): one inversion's latency is ~0.14 ms,
/// 4096 of them (divergent) ~0.26 ms, and 4096 came out ~1 ms ahead of 32 at G1 2^24.
fn affine_inv_each_max() -> usize {
    std::env::var("CUZK_MSM_INV_EACH_MAX").ok().and_then(|v| v.parse().ok()).filter(|&n: &usize| n >= 1).unwrap_or(4096)
}

/// What the batch-affine rounds leave: `total` affine points in bucket order, bucket b's from
/// `offsets[b]` (ceil(count[b] / 2^rounds) of them).
struct Reduced {
    points: DevBuf,
    offsets: DevBuf,
    total: usize,
    /// With `CUZK_MSM_PROFILE`: per group, per round, timed events at the round's start and
    /// after its pair index, prefix pass, inversion and finish pass.
    clock: Vec<Vec<[Event; 5]>>,
}

impl Reduced {
    /// The rounds' times per group (ms: pairs/prefix/inversion/finish), once they completed.
    fn clock_report(&self) -> String {
        let mut out = Vec::new();
        for (g, rounds) in self.clock.iter().enumerate() {
            let mut line = format!("group {g}:");
            for (r, ev) in rounds.iter().enumerate() {
                let d: Vec<String> = (1..5).map(|i| ev[i].ms_since(&ev[i - 1]).map_or("?".into(), |t| format!("{t:.2}"))).collect();
                line += &format!(" r{r} {}", d.join("/"));
            }
            out.push(line);
        }
        out.join("\n")
    }
}

/// Runs `rounds` batch-affine rounds (see msm.cu, "Batch-affine rounds") over the sorted
/// entries, in groups of consecutive buckets with at most about `affine_group_entries` entries.
/// A bucket leaves the rounds once it is down to one point, which goes straight to the output.
/// The groups alternate between `stream` and a second stream, so that one group's
/// memory-bound passes and the latency of its last inversions overlap another's additions.
#[allow(clippy::too_many_arguments)]
fn affine_rounds(
    module: &Module,
    stream: &Stream,
    group: Group,
    bases: u64,
    entries: u64,
    counts: &DevBuf,
    offsets: &DevBuf,
    nb: u32,
    total: usize,
    rounds: u32,
) -> Result<Reduced, CudaError> {
    let sfx = group.suffix();
    let (ab, fb) = (group.affine_bytes(), group.field_bytes());
    let nb1 = nb as usize + 1;
    let layout = |ceil_div: u32, drop_upto: u32| -> Result<DevBuf, CudaError> {
        let off = DevBuf::new(stream, 4 * nb1)?;
        scan_above(module, stream, counts.ptr, off.ptr, nb + 1, ceil_div, drop_upto)?;
        Ok(off)
    };
    // Round r's input: ceil(count / 2^r) points for the buckets that hold two or more (round 0:
    // the sorted entries); its output slots: half as many, rounded up; the final points:
    // ceil(count / 2^rounds) per bucket.
    let mut owned = Vec::with_capacity(2 * rounds as usize);
    let (mut inputs, mut slots) = (vec![offsets.ptr], Vec::with_capacity(rounds as usize));
    for r in 0..rounds {
        if r > 0 {
            let input = layout(1 << r, 1 << r)?;
            inputs.push(input.ptr);
            owned.push(input);
        }
        let slot = layout(2 << r, if r == 0 { 0 } else { 1 << r })?;
        slots.push(slot.ptr);
        owned.push(slot);
    }
    let fin = layout(1 << rounds, 0)?;
    let ngroups = total.div_ceil(affine_group_entries(group)?).max(2).min(nb as usize);
    let bounds: Vec<u32> = (0..=ngroups).map(|g| (nb as u64 * g as u64 / ngroups as u64) as u32).collect();
    // Every layout's offset at every group boundary, read before any group runs.
    let addrs: Vec<u64> = inputs.iter().chain(&slots).chain([&fin.ptr]).flat_map(|&l| bounds.iter().map(move |&b| l + 4 * b as u64)).collect();
    let flat = read_u32s(module, stream, &addrs)?;
    let at: Vec<&[u32]> = flat.chunks_exact(bounds.len()).collect();
    let (in_at, rest) = at.split_at(rounds as usize);
    let (slot_at, fin_at) = (&rest[..rounds as usize], rest[rounds as usize]);
    let red_total = fin_at[ngroups] as usize;
    let red = DevBuf::new(stream, ab * red_total)?;
    let side = stream.sibling()?;
    Event::record(stream)?.wait_on(&side)?;
    let timed = profiling();
    // Returns an event after the group's first memory-bound pass (its first prefix pass), and
    // the rounds' timed events when profiling.
    let run = |g: usize, s: &Stream| -> Result<(Option<Event>, Vec<[Event; 5]>), CudaError> {
        let (b_lo, nbg) = (bounds[g], bounds[g + 1] - bounds[g]);
        let bo = 4 * b_lo as u64;
        let mut first_prefix = None;
        let cnt = counts.at(4 * b_lo as usize);
        let fin_out = red.at(ab * fin_at[g] as usize);
        let mut src = bases;
        let mut ents = entries + 4 * in_at[0][g] as u64;
        let mut cur: Option<DevBuf>; // the previous round's output, freed once this round is queued
        let mut clock = Vec::new();
        for r in 0..rounds as usize {
            let n_out = (slot_at[r][g + 1] - slot_at[r][g]) as usize;
            if n_out == 0 {
                break; // every bucket of the group is down to one point
            }
            let last = r + 1 == rounds as usize;
            let n_next = if last { 0 } else { (in_at[r + 1][g + 1] - in_at[r + 1][g]) as usize };
            let (next_off, next_base) = if last { (0, 0) } else { (inputs[r + 1] + bo, in_at[r + 1][g]) };
            let pairs = DevBuf::new(s, 4 * n_out)?;
            let dest = DevBuf::new(s, 4 * n_out)?;
            let args = Args::new()
                .push(cnt)
                .push(nbg)
                .push(r as u32)
                .push(inputs[r] + bo)
                .push(in_at[r][g])
                .push(slots[r] + bo)
                .push(slot_at[r][g])
                .push(next_off)
                .push(next_base)
                .push(fin.ptr + bo)
                .push(fin_at[g])
                .push(pairs.ptr)
                .push(dest.ptr);
            let mut marks = Vec::new();
            let mut marking = timed.then_some(&mut marks);
            mark(&mut marking, s)?;
            // SAFETY: arguments match msm_pair_index; pairs and dest hold the group's n_out slots.
            unsafe { module.launch("msm_pair_index", grid(nbg as usize, 256)?, 256, 0, s, args)? };
            mark(&mut marking, s)?;
            let next = if n_next > 0 { Some(DevBuf::new(s, ab * n_next)?) } else { None };
            let next_ptr = next.as_ref().map_or(0, |b| b.ptr);
            let ev = affine_round(module, s, sfx, fb, src, ents, pairs.ptr, dest.ptr, n_out, next_ptr, fin_out, r == 0, marking)?;
            if let Ok(m) = <[Event; 5]>::try_from(marks) {
                clock.push(m);
            }
            first_prefix = first_prefix.or(ev);
            cur = next;
            src = cur.as_ref().map_or(0, |b| b.ptr);
            ents = 0;
        }
        Ok((first_prefix, clock))
    };
    // The second group starts once the first one's first prefix pass is done, so that the two
    // streams stay half a round apart: one's memory-bound prefix passes then run beside the
    // other's product-bound additions instead of beside its own kind.
    let stagger = std::env::var("CUZK_MSM_AFFINE_STAGGER").ok().as_deref() != Some("0");
    let mut result = Ok(());
    let mut clock = Vec::new();
    for g in 0..ngroups {
        let s = if g % 2 == 0 { stream } else { &side };
        match run(g, s) {
            Ok((ev, c)) => {
                clock.push(c);
                if let (Some(ev), true) = (ev, g == 0 && stagger) {
                    ev.wait_on(&side)?;
                }
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    // The main stream (and the frees below) wait for the side stream's groups, also on error.
    Event::record(&side)?.wait_on(stream)?;
    result?;
    Ok(Reduced { points: red, offsets: fin, total: red_total, clock })
}

/// Records a timed event on `stream` into `marks` when there is one (profiling).
fn mark(marks: &mut Option<&mut Vec<Event>>, stream: &Stream) -> Result<(), CudaError> {
    if let Some(m) = marks.as_deref_mut() {
        m.push(Event::record_timed(stream)?);
    }
    Ok(())
}

/// One batch-affine round: the n pairs `pairs` of points (from `src`, through `entries` when
/// not 0) added, their slopes' denominators inverted together; each sum goes where `dest`
/// says, into `next` or `fin`. With `mark_prefix`, returns an event recorded after the first
/// (prefix) pass.
#[allow(clippy::too_many_arguments)]
fn affine_round(
    module: &Module,
    stream: &Stream,
    sfx: &str,
    fb: usize,
    src: u64,
    entries: u64,
    pairs: u64,
    dest: u64,
    n: usize,
    next: u64,
    fin: u64,
    mark_prefix: bool,
    mut marks: Option<&mut Vec<Event>>,
) -> Result<Option<Event>, CudaError> {
    // Small rounds take fewer elements per thread: enough threads to fill the GPU, and shorter
    // serial product chains (the rounds near the end are latency-bound).
    let t0 = n.div_ceil((n >> 17).clamp(1, AFFINE_BATCH));
    let prefix0 = DevBuf::new(stream, fb * n)?;
    let mut totals = DevBuf::new(stream, fb * t0)?;
    let args = Args::new().push(src).push(entries).push(pairs).push(n as u32).push(t0 as u32).push(prefix0.ptr).push(totals.ptr);
    // SAFETY: arguments match msm_affine_prefix_*; prefix0 holds n elements, totals t0.
    unsafe { module.launch(&format!("msm_affine_prefix_{sfx}"), grid(t0, 128)?, 128, 0, stream, args)? };
    let prefix_done = if mark_prefix { Some(Event::record(stream)?) } else { None };
    mark(&mut marks, stream)?;
    // The threads' totals, level by level, until few enough to invert one by one.
    let mut levels = Vec::new();
    let mut len = t0;
    let each_max = affine_inv_each_max();
    while len > each_max {
        let t = len.div_ceil(AFFINE_BATCH);
        let prefix = DevBuf::new(stream, fb * len)?;
        let next = DevBuf::new(stream, fb * t)?;
        let args = Args::new().push(totals.ptr).push(len as u32).push(t as u32).push(prefix.ptr).push(next.ptr);
        // SAFETY: arguments match msm_inv_prefix_*.
        unsafe { module.launch(&format!("msm_inv_prefix_{sfx}"), grid(t, 128)?, 128, 0, stream, args)? };
        levels.push((std::mem::replace(&mut totals, next), prefix, len, t));
        len = t;
    }
    // SAFETY: arguments match msm_inv_each_*; totals holds len elements.
    unsafe { module.launch(&format!("msm_inv_each_{sfx}"), grid(len, 64)?, 64, 0, stream, Args::new().push(totals.ptr).push(len as u32))? };
    while let Some((vals, prefix, len, t)) = levels.pop() {
        let args = Args::new().push(vals.ptr).push(prefix.ptr).push(len as u32).push(t as u32).push(totals.ptr);
        // SAFETY: arguments match msm_inv_down_*; totals holds the t inverses of this level's totals.
        unsafe { module.launch(&format!("msm_inv_down_{sfx}"), grid(t, 128)?, 128, 0, stream, args)? };
        totals = vals;
    }
    mark(&mut marks, stream)?;
    let args =
        Args::new().push(src).push(entries).push(pairs).push(dest).push(n as u32).push(t0 as u32).push(prefix0.ptr).push(totals.ptr).push(next).push(fin);
    // G1 uses the finish compiled for 4 blocks per SM (see msm.cu); `CUZK_MSM_FINISH=plain`
    // picks the unbounded one, which G2 always uses.
    let bounded = sfx == "g1" && std::env::var("CUZK_MSM_FINISH").ok().as_deref() != Some("plain");
    let finish = if bounded { "msm_affine_finish_lb" } else { "msm_affine_finish" };
    // SAFETY: arguments match msm_affine_finish_*; dest places every sum inside next or fin.
    unsafe { module.launch(&format!("{finish}_{sfx}"), grid(t0, 128)?, 128, 0, stream, args)? };
    mark(&mut marks, stream)?;
    Ok(prefix_done)
}

/// Bytes of keys the windowed scatter writes per pass over the scalars (2^24 scalars: all 13
/// windows in one pass, instead of reading the scalars once per window).
const SCATTER_KEY_BYTES: usize = 1 << 30;

/// Bytes of entries one scatter launch may spread its writes over: well inside the H200's 50 MB
/// L2, so that the sectors fill up there before they go to DRAM.
const SCATTER_SPAN_BYTES: usize = 24 << 20;

/// The fullest bucket's entry count (from the offsets; at least 1 is not guaranteed: 0 and 1
/// both read as 0 when no bucket holds two entries).
fn bucket_max(module: &Module, stream: &Stream, offsets: &DevBuf, nb: u32) -> Result<u32, CudaError> {
    // msm_seg_counts with S = 1 counts each bucket's entries and keeps the largest (when > 1).
    let max = DevBuf::zeroed(stream, 4)?;
    let scratch = DevBuf::new(stream, 4 * (nb as usize + 1))?;
    let args = Args::new().push(offsets.ptr).push(nb).push(1u32).push(scratch.ptr).push(max.ptr);
    // SAFETY: arguments match msm_seg_counts; offsets holds nb + 1 entries.
    unsafe { module.launch("msm_seg_counts", grid(nb as usize, 256)?, 256, 0, stream, args)? };
    read_u32(stream, max.ptr)
}

/// Whether the scatter goes one window at a time. That path reads every scalar once per window:
/// it pays when most digits are nonzero (random scalars: total ≈ w·m). Mostly-0/1 scalars
/// (witness bits: total ≈ m) scatter directly; their few entries cost little wherever they land.
fn windowed_scatter(total: usize, w: u32, m: usize) -> bool {
    4 * total > SCATTER_SPAN_BYTES && 2 * total >= w as usize * m
}

/// Buckets up to this many entries scatter with one plain atomic per entry; fuller ones (equal
/// scalars) with the warp-aggregated ones, which cost ~2x more when nothing aggregates.
const SCATTER_PLAIN_MAX: u32 = 4096;

/// Sorts the digits into `entries` (point index | sign, grouped by bucket) from the cursors
/// (the buckets' offsets). Small or sparse sorts (`windowed_max` None, see `windowed_scatter`)
/// scatter from the scalars in one launch. Large dense ones (`windowed_max` the fullest bucket's
/// count) go one window at a time: the window's keys first, then one launch per bucket range
/// whose entries span about `SCATTER_SPAN_BYTES` (see `msm_scatter_range`).
#[allow(clippy::too_many_arguments)]
fn scatter(
    module: &Module,
    stream: &Stream,
    prepared: u64,
    m: u32,
    c: u32,
    w: u32,
    cursor: u64,
    entries: u64,
    total: usize,
    windowed_max: Option<u32>,
) -> Result<(), CudaError> {
    let g = grid(m as usize, 256)?;
    let direct = || {
        // SAFETY: arguments match msm_scatter; entries holds total slots.
        unsafe { module.launch("msm_scatter", g, 256, 0, stream, Args::new().push(prepared).push(m).push(c).push(w).push(cursor).push(entries)) }
    };
    let Some(max_count) = windowed_max else {
        return direct();
    };
    let aggregate = u32::from(max_count > SCATTER_PLAIN_MAX);
    // The keys take 4 bytes per scalar and window, for up to SCATTER_KEY_BYTES of windows per
    // pass over the scalars; without room for one window's, scatter directly.
    let per_pass = (SCATTER_KEY_BYTES / (4 * m as usize)).clamp(1, w as usize) as u32;
    let keys = match DevBuf::new(stream, 4 * m as usize * per_pass as usize) {
        Ok(k) => k,
        Err(e) => {
            tracing::debug!(error = %e, "no room for the windowed scatter's keys; scattering directly");
            return direct();
        }
    };
    let half = 1u32 << (c - 1);
    // Each window holds about total / w entries, spread evenly over its buckets.
    let parts = (4 * total / w as usize).div_ceil(SCATTER_SPAN_BYTES).clamp(1, half as usize) as u32;
    for w_lo in (0..w).step_by(per_pass as usize) {
        let w_hi = (w_lo + per_pass).min(w);
        let args = Args::new().push(prepared).push(m).push(c).push(w_lo).push(w_hi).push(keys.ptr);
        // SAFETY: arguments match msm_window_keys; keys holds m words per window of the pass.
        unsafe { module.launch("msm_window_keys", g, 256, 0, stream, args)? };
        for win in w_lo..w_hi {
            let win_keys = keys.at(4 * m as usize * (win - w_lo) as usize);
            for (lo, hi) in bucket_ranges(win * half, half, parts) {
                let args = Args::new().push(win_keys).push(m).push(lo).push(hi).push(cursor).push(entries).push(aggregate);
                // SAFETY: arguments match msm_scatter_range; the cursors place every key in entries.
                unsafe { module.launch("msm_scatter_range", g, 256, 0, stream, args)? };
            }
        }
    }
    Ok(())
}

/// `parts` consecutive key ranges `[lo, hi)` that together cover `[first, first + len)`, of
/// sizes that differ by at most one.
fn bucket_ranges(first: u32, len: u32, parts: u32) -> impl Iterator<Item = (u32, u32)> {
    let cut = move |p: u32| first + (len as u64 * p as u64 / parts as u64) as u32;
    (0..parts).map(move |p| (cut(p), cut(p + 1)))
}

/// Device-to-device copy on the stream.
///
/// # Safety
/// Both ranges must be valid.
unsafe fn sys_dtod(dst: u64, src: u64, bytes: usize, stream: &Stream) -> Result<(), CudaError> {
    cudarc::driver::result::memcpy_dtod_async(dst, src, bytes, stream.raw())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{affine_plan, bucket_ranges, Group};

    /// The default plan (no `CUZK_MSM_*` variables set): off below the size thresholds and for
    /// sparse digit sets; full rounds while the fullest bucket needs at most 10; otherwise from
    /// the mean load; more rounds when the points left would not fit in 8 GB.
    #[test]
    fn affine_plan_follows_the_bucket_load() {
        if ["CUZK_MSM_AFFINE", "CUZK_MSM_AFFINE_ROUNDS", "CUZK_MSM_AFFINE_FULL", "CUZK_MSM_SEG"].iter().any(|v| std::env::var_os(v).is_some()) {
            eprintln!("SKIPPED: a CUZK_MSM_* variable is set");
            return;
        }
        let (m, w, nb) = (1usize << 24, 13u32, 13u32 << 19);
        let total = 13 * m; // random scalars: every digit nonzero
        let plan = |total, max: u32| affine_plan(Group::G1, total, nb, w, m, || Ok(max)).unwrap().map(|p| (p.rounds, p.full));
        assert_eq!(plan(total, 600), Some((10, true)));
        assert_eq!(plan(total, 1), Some((1, true)));
        assert_eq!(plan(total, 5000), Some((4, false))); // 13 > 10 rounds: mean 13·2^24 / (13·2^19) = 32 -> 4
        assert_eq!(plan(total - 13, 5000), Some((3, false))); // mean just under 32 -> 3
        assert_eq!(plan(m, 600), None); // mostly 0/1 scalars
        assert_eq!(plan((1 << 24) - 1, 2), None); // below G1's threshold
        let g2 = affine_plan(Group::G2, 1 << 22, 1 << 16, 16, 1 << 18, || Ok(100)).unwrap().map(|p| (p.rounds, p.full));
        assert_eq!(g2, Some((7, true)));
        // 2^27 scalars, heavy top window: partial rounds, and more of them to keep the output
        // under 8 GB (13·2^27 / 2^6 · 96 bytes = 2.6 GB after 6).
        let big = affine_plan(Group::G1, 13 << 27, nb, w, 1 << 27, || Ok(5000)).unwrap().unwrap();
        assert_eq!((big.rounds, big.full), (6, false));
        let huge = affine_plan(Group::G1, 13 << 30, nb, w, 1 << 30, || Ok(5000)).unwrap().unwrap();
        assert!((13usize << 30 >> huge.rounds) * 96 <= 8 << 30 && !huge.full, "{huge:?}");
    }

    #[test]
    fn bucket_ranges_cover_the_window_without_gaps() {
        for (first, len, parts) in [(0, 1 << 19, 3), (6 << 19, 1 << 19, 22), (5, 7, 7), (0, 1, 1), (1 << 31, 1 << 19, 1 << 19)] {
            let r: Vec<(u32, u32)> = bucket_ranges(first, len, parts).collect();
            assert_eq!(r.len(), parts as usize);
            assert_eq!(r[0].0, first);
            assert_eq!(r[r.len() - 1].1, first + len);
            for w in r.windows(2) {
                assert_eq!(w[0].1, w[1].0);
            }
            let (min, max) = r.iter().map(|(lo, hi)| hi - lo).fold((u32::MAX, 0), |(a, b), d| (a.min(d), b.max(d)));
            assert!(max - min <= 1, "{first} {len} {parts}: sizes {min}..{max}");
        }
    }
}
