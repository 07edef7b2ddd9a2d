//! Host side of the Pippenger MSM (see `kernels/cuda/msm/msm.cu` for the algorithm).
//!
//! What an MSM does is decided on the host, from its sizes: the window size by [`window_bits`]
//! (from the count of scalars above 1), then, once the digits are counted, the sort and the
//! bucket rounds by [`plan`] (a pure function, tested on the host below). [`MsmConfig`] forces
//! a window size or a batch-affine rule (tests, benchmarks); its default is what the `Backend`
//! MSMs run.

use crate::device::{dtoh_sync, htod_async, Args, DevBuf, Event, Module, Stream};
use crate::error::CudaError;

pub use cuzk_core::msm::Group;

/// The suffix of a group's kernels (`msm_accumulate_seg_g1`, ...).
fn suffix(group: Group) -> &'static str {
    match group {
        Group::G1 => "g1",
        Group::G2 => "g2",
    }
}

/// Window size for `m` scalars: the shared rule ([`cuzk_core::msm::window_bits`], ~log2(m) - 6
/// up to 16), and 20 from 2^24 scalars on, where 13 windows instead of 16 save more bucket
/// additions than the larger window sums cost (`cuzk-cuda-kernels g1c` / `g2c` on the H200,
/// docs/perf-cuda.md).
pub fn window_bits(m: usize) -> u32 {
    if m >= 1 << 24 {
        20
    } else {
        cuzk_core::msm::window_bits(m)
    }
}

/// Which MSMs run batch-affine bucket rounds before the XYZZ ones (see [`plan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AffineRule {
    /// Large MSMs with mostly nonzero digits: at least 2^24 bucket entries in G1 or 2^22 in G2,
    /// and at least half as many entries as windows × scalars (below that the rounds were no
    /// faster on the H200). What the `Backend` MSMs use.
    #[default]
    Auto,
    /// No MSM (XYZZ rounds only).
    Never,
    /// Every MSM, run to one point per bucket when the fullest bucket needs at most
    /// `AFFINE_FULL_MAX_ROUNDS` rounds (tests).
    Always,
    /// Every MSM, never to one point per bucket: the XYZZ rounds finish (tests).
    AlwaysPartial,
}

/// Choices an MSM can be forced into (tests and benchmarks). The default leaves every decision
/// to [`window_bits`] and [`plan`], as the `Backend` MSMs do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsmConfig {
    /// Window bits (2..=24); `None`: [`window_bits`] of the count of scalars above 1.
    pub window_bits: Option<u32>,
    /// Which MSMs run batch-affine rounds.
    pub affine: AffineRule,
    /// How windowed scatters place their keys.
    pub scatter: ScatterRule,
    /// Entries of each group of batch-affine rounds, as a power of two (20..=27); `None`: sized
    /// from the free device memory ([`affine_group_entries`]).
    pub affine_group_log: Option<u32>,
    /// Elements each batch-affine round's batch inversion inverts one per thread, at most, as a
    /// power of two (5..=20); `None`: [`AFFINE_INV_EACH_MAX`].
    pub inversion_log: Option<u32>,
}

impl MsmConfig {
    /// What the `Backend` MSMs run (usable in constants).
    pub const DEFAULT: MsmConfig =
        MsmConfig { window_bits: None, affine: AffineRule::Auto, scatter: ScatterRule::Auto, affine_group_log: None, inversion_log: None };
}

impl Default for MsmConfig {
    fn default() -> Self {
        MsmConfig::DEFAULT
    }
}

/// The sizes an MSM's plan depends on, known once its digits are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsmSizes {
    /// G1 or G2.
    pub group: Group,
    /// Scalars taking part (after the density filter).
    pub scalars: usize,
    /// Window bits.
    pub window_bits: u32,
    /// Bucket entries: the nonzero digits of all windows (random scalars: about
    /// windows × scalars; 0/1 scalars: at most the scalar count).
    pub entries: usize,
}

impl MsmSizes {
    /// Windows: ceil(256 / window bits).
    pub fn windows(&self) -> u32 {
        cuzk_core::msm::windows(self.window_bits)
    }
    /// Buckets: windows × 2^(window bits - 1).
    pub fn buckets(&self) -> u32 {
        cuzk_core::msm::buckets(self.window_bits)
    }
}

/// How the digits are sorted into their buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scatter {
    /// One launch over the scalars (small MSMs, and mostly-0/1 scalars whose few entries cost
    /// little wherever they land).
    Direct,
    /// One window at a time, its keys written first (large dense MSMs, see `scatter`);
    /// `aggregate`: some bucket holds more than `SCATTER_PLAIN_MAX` entries, so the atomics
    /// are aggregated per warp.
    Windowed {
        /// Warp-aggregated atomics instead of plain ones.
        aggregate: bool,
        /// Bucket ranges per window, each spanning about `SCATTER_SPAN_BYTES` of entries.
        ranges: u32,
        /// The keys binned by range and placed in one launch, instead of one launch per range
        /// over all of them.
        binned: bool,
    },
}

/// How a windowed scatter places a window's keys (see [`Scatter::Windowed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScatterRule {
    /// Binned from `BIN_MIN_PARTS` ranges per window on. What the `Backend` MSMs use.
    #[default]
    Auto,
    /// One launch per range (tests, benchmarks).
    Ranges,
    /// Binned, in at least `BIN_FORCED_RANGES` ranges (tests: several bins at any size).
    Binned,
}

/// The batch-affine rounds of an MSM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AffinePlan {
    /// Rounds, each halving every bucket.
    pub rounds: u32,
    /// Whether they leave at most one point per bucket: the window sums then read the buckets
    /// as affine points, with no XYZZ round.
    pub full: bool,
}

/// What one MSM does, decided on the host from its sizes (see [`plan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsmPlan {
    /// The sort into buckets.
    pub scatter: Scatter,
    /// Batch-affine rounds before the XYZZ ones, if any.
    pub affine: Option<AffinePlan>,
}

/// Rounds the full plan may take (the fullest bucket holds at most 2^this many points).
const AFFINE_FULL_MAX_ROUNDS: u32 = 10;

/// The most the batch-affine rounds' output may take (their last round writes it all at once).
const AFFINE_LEFT_BYTES: usize = 8 << 30;

/// The plan of an MSM of `sizes` under `cfg`: a pure function of the sizes and of the fullest
/// bucket's entry count, which `fullest` returns (on the device it costs a launch and a read,
/// so it is asked for at most once, and only when a decision depends on it).
///
/// - The scatter goes by windows when the entries outgrow one launch's span
///   (`SCATTER_SPAN_BYTES`) and the digits are mostly nonzero (2·entries ≥ windows·scalars),
///   with warp-aggregated atomics when the fullest bucket holds more than `SCATTER_PLAIN_MAX`,
///   and binned by range from `BIN_MIN_PARTS` ranges per window on.
/// - Batch-affine rounds as `cfg.affine` says (by default the large dense MSMs). They run until
///   every bucket holds one point when the fullest bucket needs at most
///   `AFFINE_FULL_MAX_ROUNDS` (not for [`AffineRule::AlwaysPartial`]); otherwise until about
///   two points per bucket are left (2 to 6 rounds from the mean load), and then more while the
///   points left would take more than `AFFINE_LEFT_BYTES`.
pub fn plan<E>(sizes: &MsmSizes, cfg: &MsmConfig, fullest: impl FnOnce() -> Result<u32, E>) -> Result<MsmPlan, E> {
    let (group, m, total) = (sizes.group, sizes.scalars, sizes.entries);
    let (w, nb) = (sizes.windows(), sizes.buckets());
    let mut ask = Some(fullest);
    let mut known = None;
    let mut fullest = || -> Result<u32, E> {
        if let Some(f) = ask.take() {
            known = Some(f()?);
        }
        Ok(known.unwrap_or(0))
    };
    let dense = 2 * total >= w as usize * m;
    let scatter = if 4 * total > SCATTER_SPAN_BYTES && dense {
        let half = 1u32 << (sizes.window_bits - 1);
        let ranges = (4 * total / w as usize).div_ceil(SCATTER_SPAN_BYTES).clamp(1, half as usize) as u32;
        let (ranges, binned) = match cfg.scatter {
            ScatterRule::Auto => (ranges, ranges >= BIN_MIN_PARTS),
            ScatterRule::Ranges => (ranges, false),
            ScatterRule::Binned => (ranges.max(BIN_FORCED_RANGES).min(half), true),
        };
        Scatter::Windowed { aggregate: fullest()? > SCATTER_PLAIN_MAX, ranges, binned }
    } else {
        Scatter::Direct
    };
    let least = if group == Group::G1 { 1 << 24 } else { 1 << 22 };
    let on = match cfg.affine {
        AffineRule::Auto => total >= least && dense,
        AffineRule::Never => false,
        AffineRule::Always | AffineRule::AlwaysPartial => true,
    };
    if !on {
        return Ok(MsmPlan { scatter, affine: None });
    }
    let needed = fullest()?.max(1).next_power_of_two().ilog2();
    if needed <= AFFINE_FULL_MAX_ROUNDS && cfg.affine != AffineRule::AlwaysPartial {
        // At most one point per bucket is left, whatever the memory.
        return Ok(MsmPlan { scatter, affine: Some(AffinePlan { rounds: needed.max(1), full: true }) });
    }
    let mean = (total / nb.max(1) as usize).max(1);
    let mut rounds = (mean.ilog2().saturating_sub(1)).clamp(2, 6);
    while rounds < 16 && (total >> rounds) * group.affine_bytes() > AFFINE_LEFT_BYTES {
        rounds += 1;
    }
    Ok(MsmPlan { scatter, affine: Some(AffinePlan { rounds, full: false }) })
}

/// The smallest batch-affine group (entries); with no room for it the rounds are left to XYZZ.
/// Near it they gain little under a full card: the 2^27 H MSM with 52 GB of an H100 80GB held,
/// rounds in 2^20-entry groups 2,169 ms against XYZZ rounds 2,186.
const AFFINE_GROUP_MIN: usize = 1 << 20;

/// Entries one group of batch-affine rounds takes at most, with `free` bytes of device memory
/// free: the largest power of two from 2^20 up to 2^27 whose two groups in flight fit in a
/// quarter of it. A group of E entries holds about E/2 · (ab + fb + 4) bytes in its first round
/// (2^27 G1 entries: 9.9 GB).
pub fn affine_group_entries(group: Group, free: usize) -> usize {
    let per_entry = (group.affine_bytes() + group.field_bytes() + 4) / 2 + 1;
    let mut log = 27;
    while (1 << log) > AFFINE_GROUP_MIN && 2 * (1usize << log) * per_entry > free / 4 {
        log -= 1;
    }
    1 << log
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
        Some((prepared, m)) => windows(module, stream, group, bases, prepared.ptr, Some(prepared), m, cfg),
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
    let density = match scalars.density {
        Some((words, _)) => Some(density_on_device(module, stream, &words[..scalars.len.div_ceil(64)])?),
        None => None,
    };
    let args = Args::new()
        .push(scalars.ptr)
        .push(len)
        .push(density.as_ref().map_or(0, |(w, _)| w.ptr))
        .push(density.as_ref().map_or(0, |(_, p)| p.ptr))
        .push(u32::from(density.is_some()))
        .push(prepared.ptr);
    // SAFETY: arguments match msm_prepare.
    unsafe { module.launch("msm_prepare", grid(scalars.len, 256)?, 256, 0, stream, args)? };
    if density.is_some() {
        // The density words were copied from memory the caller may free or reuse once this
        // returns (page-locked memory is not staged by the driver).
        stream.sync()?;
    }
    Ok(Some((prepared, m)))
}

/// Copies the density `words` to the device and computes, there, the number of set bits before
/// each word (popcounts, then an exclusive scan): (words, prefix). Nothing is computed on the host,
/// so a 130 M-bit density costs one 16 MB copy instead of a host pass over its 2 M words.
fn density_on_device(module: &Module, stream: &Stream, words: &[u64]) -> Result<(DevBuf, DevBuf), CudaError> {
    let nw = u32::try_from(words.len()).map_err(|_| CudaError::Invalid("density of more than 2^32 words".into()))?;
    let dev_words = DevBuf::new(stream, 8 * words.len())?;
    let counts = DevBuf::new(stream, 4 * words.len())?;
    let prefix = DevBuf::new(stream, 4 * words.len())?;
    // SAFETY: sizes match; the caller syncs the stream before `words` may change (see prepare).
    unsafe { htod_async(dev_words.ptr, words.as_ptr().cast(), 8 * words.len(), stream)? };
    // SAFETY: arguments match density_popcounts; both buffers hold nw entries.
    unsafe { module.launch("density_popcounts", grid(words.len(), 256)?, 256, 0, stream, Args::new().push(dev_words.ptr).push(nw).push(counts.ptr))? };
    scan(module, stream, counts.ptr, prefix.ptr, nw, 0)?;
    Ok((dev_words, prefix))
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
    windows(module, stream, group, bases, prepared, None, m, cfg)
}

/// [`windows_prepared`], freeing `owned` (the buffer behind `prepared`, when the MSM owns it)
/// once the scatter has read it: the bucket sums then have its bytes (4.3 GB for the 2^27 H
/// MSM) for their batch-affine groups.
#[allow(clippy::too_many_arguments)]
fn windows(
    module: &Module,
    stream: &Stream,
    group: Group,
    bases: u64,
    prepared: u64,
    owned: Option<DevBuf>,
    m: usize,
    cfg: MsmConfig,
) -> Result<(Vec<u8>, u32, usize), CudaError> {
    let sfx = suffix(group);
    if m == 0 {
        return Ok((Vec::new(), 1, 0));
    }
    let m32 = u32::try_from(m).map_err(|_| CudaError::Invalid("more than 2^32 scalars".into()))?;
    let mut prof = Profile::new();

    // 2-3. Digits, histogram, scan, scatter.
    let c = match cfg.window_bits {
        Some(c) => c,
        None => window_bits(dense_scalars(module, stream, prepared, m32)?),
    };
    if !(2..=24).contains(&c) {
        return Err(CudaError::Invalid(format!("window size {c} is outside 2..=24")));
    }
    let w = cuzk_core::msm::windows(c);
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
    let sizes = MsmSizes { group, scalars: m, window_bits: c, entries: total };
    let plan = plan(&sizes, &cfg, || bucket_max(module, stream, &offsets, nb))?;
    scatter(module, stream, prepared, m32, c, w, offsets.ptr, cursor.ptr, entries.ptr, plan.scatter)?;
    drop((cursor, owned));
    prof.mark(stream, "scatter");

    // 4. Bucket sums in rounds: first the batch-affine rounds of the plan, then XYZZ.
    let mut entries = Some(entries);
    let mut acc_total = total;
    let mut reduced_points = None;
    let mut offsets = offsets;
    let mut affine_buckets = None;
    if let Some(ap) = plan.affine {
        let e = entries.as_ref().map_or(0, |e| e.ptr);
        let sized = |free| match cfg.affine_group_log {
            Some(log) => 1 << log.clamp(AFFINE_GROUP_MIN.ilog2(), 27),
            None => affine_group_entries(group, free),
        };
        let inv_each_max = cfg.inversion_log.map_or(AFFINE_INV_EACH_MAX, |l| 1 << l.clamp(5, 20));
        // Groups sized from the free memory counting the pool's idle bytes (after the rounds'
        // output is allocated). The pool may not hand all of those over to one allocation, so on
        // running out the groups are halved until they fit, down to AFFINE_GROUP_MIN entries;
        // below that XYZZ rounds only.
        let last = std::cell::Cell::new(0usize);
        let mut cap = usize::MAX;
        let reduced = loop {
            let size = || -> Result<usize, CudaError> {
                let e = sized(stream.memory_info()?.0).min(cap);
                last.set(e);
                Ok(e)
            };
            match affine_rounds(module, stream, group, bases, e, &counts, &offsets, nb, total, ap.rounds, &size, inv_each_max) {
                Err(CudaError::OutOfMemory(what)) if cfg.affine_group_log.is_none() && last.get() > AFFINE_GROUP_MIN => {
                    tracing::debug!(%what, entries = last.get(), "no room for the batch-affine groups; again in groups half as large");
                    if prof.on {
                        eprintln!("msm-profile: no room for batch-affine groups of {} entries ({what}); again in groups half as large", last.get());
                    }
                    cap = last.get() / 2;
                }
                other => break other,
            }
        };
        match reduced {
            Ok(r) => {
                let left = if ap.full { " to one point per bucket".to_string() } else { format!(", {} left", r.total) };
                prof.mark(stream, &format!("affine({} rounds{left}, {} groups)", ap.rounds, r.clock.len()));
                if prof.on {
                    eprintln!("msm-rounds (ms pairs/prefix/inversion/finish)\n{}", r.clock_report());
                }
                entries = None;
                if ap.full {
                    affine_buckets = Some((r.points, r.offsets));
                } else {
                    acc_total = r.total;
                    offsets = r.offsets;
                    reduced_points = Some(r.points);
                }
            }
            Err(CudaError::OutOfMemory(what)) => {
                tracing::debug!(%what, "no room for the batch-affine rounds; XYZZ rounds only");
                if prof.on {
                    eprintln!("msm-profile: no room for the batch-affine rounds ({what}); XYZZ rounds only");
                }
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
        // Round 1 reads the bases through the entries, or the batch-affine rounds' points.
        let acc_bases = reduced_points.as_ref().map_or(bases, |p: &DevBuf| p.ptr);
        let entries_ptr = entries.as_ref().map_or(0, |e| e.ptr);
        let s_chunk = cuzk_core::msm::segment_len(acc_total);
        let mut cur_off = offsets;
        let max_chunks = DevBuf::new(stream, 4)?;
        let xb = group.xyzz_bytes();
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
        // Later rounds: each bucket's partial sums in chunks of at most s_chunk, one thread per
        // chunk, until every bucket has one.
        let (final_count, final_base, partial) = if maxc <= 1 {
            (new_count, part_base, out)
        } else {
            drop(counts);
            let mut cur_count = new_count;
            cur_off = part_base;
            let mut input = out;
            loop {
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
                let args = Args::new().push(input.ptr).push(ts.ptr).push(tl.ptr).push(ntasks as u32).push(out.ptr);
                // SAFETY: arguments match msm_accumulate_xyzz_*.
                unsafe { module.launch(&format!("msm_accumulate_xyzz_{sfx}"), grid(ntasks, 128)?, 128, 0, stream, args)? };
                let maxc = read_u32(stream, max_chunks.ptr)?;
                prof.mark(stream, &format!("round({ntasks} tasks)"));
                drop((ts, tl));
                if maxc <= 1 {
                    break (new_count, task_base, out);
                }
                cur_count = new_count;
                cur_off = task_base;
                input = out;
            }
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

/// Elements per thread in the inversion's levels.
const AFFINE_BATCH: usize = 16;
/// Levels stop at this many elements, which are then inverted one per thread: 2^16 threads of
/// `msm_inv_each_g1` (120 registers) are one wave on 132 SMs, so the last level costs about one
/// inversion's latency (0.042 ms) and the levels above it go. Against 4096 (H100 80GB, one
/// call): G1 2^27 in 2^21-entry groups 1203.9 → 1087.7 ms, G2 2^24 284.4 → 280.5, G1 2^24
/// 105.9 either way (docs/perf-cuda.md, "Decisions").
pub const AFFINE_INV_EACH_MAX: usize = 1 << 16;

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
/// entries, in groups of consecutive buckets with about equal entries, as many as
/// `group_entries` asks for (called once the rounds' output is allocated; the caller sizes them
/// from the free memory, [`Stream::memory_info`]). A bucket leaves the rounds once it is down to
/// one point, which goes straight to the output.
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
    group_entries: &dyn Fn() -> Result<usize, CudaError>,
    inv_each_max: usize,
) -> Result<Reduced, CudaError> {
    let sfx = suffix(group);
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
    // The groups split the entries, not the buckets, evenly: the top window's ~2^15 used
    // buckets hold as many entries as a whole window's 2^19, so equal bucket ranges gave the
    // group holding them up to 2^27 entries whatever size was asked for (an 80 GB card's
    // daemon failed that group's 3.2 GB output for groups of 2^24 and of 2^23 entries).
    let samples = bound_samples(nb);
    let addrs: Vec<u64> = samples.iter().map(|&b| offsets.ptr + 4 * b as u64).chain([fin.ptr + 4 * nb as u64]).collect();
    let mut sampled = read_u32s(module, stream, &addrs)?;
    let red_total = sampled.pop().unwrap_or(0) as usize;
    // The output first, so that the groups are sized from the memory left beside it.
    let red = DevBuf::new(stream, ab * red_total)?;
    let group_entries = group_entries()?;
    let wanted = total.div_ceil(group_entries).max(2).min(nb as usize);
    let bounds = balanced_bounds(&samples, &sampled, nb, wanted);
    let ngroups = bounds.len() - 1;
    tracing::debug!(group_entries, ngroups, total, "batch-affine groups");
    // Every layout's offset at every group boundary, read before any group runs.
    let addrs: Vec<u64> = inputs.iter().chain(&slots).chain([&fin.ptr]).flat_map(|&l| bounds.iter().map(move |&b| l + 4 * b as u64)).collect();
    let flat = read_u32s(module, stream, &addrs)?;
    let at: Vec<&[u32]> = flat.chunks_exact(bounds.len()).collect();
    let (in_at, rest) = at.split_at(rounds as usize);
    let (slot_at, fin_at) = (&rest[..rounds as usize], rest[rounds as usize]);
    debug_assert_eq!(fin_at[ngroups] as usize, red_total);
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
            let ev = affine_round(module, s, sfx, fb, src, ents, pairs.ptr, dest.ptr, n_out, next_ptr, fin_out, inv_each_max, r == 0, marking)?;
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
    let mut result = Ok(());
    let mut clock = Vec::new();
    for g in 0..ngroups {
        let s = if g % 2 == 0 { stream } else { &side };
        match run(g, s) {
            Ok((ev, c)) => {
                clock.push(c);
                if let (Some(ev), true) = (ev, g == 0) {
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

/// Buckets whose entry offsets place the batch-affine groups' bounds (the bounds fall on these
/// buckets: 2^27 G1 entries in 13 · 2^19 buckets, one sample every 26 buckets).
const GROUP_BOUND_SAMPLES: usize = 1 << 18;

/// The buckets whose offsets place the groups' bounds: [`GROUP_BOUND_SAMPLES`] spread evenly
/// over 0..=nb, from 0 to nb (all of them when there are fewer).
fn bound_samples(nb: u32) -> Vec<u32> {
    let n = GROUP_BOUND_SAMPLES.min(nb as usize + 1);
    (0..n as u64).map(|i| (nb as u64 * i / (n as u64 - 1).max(1)) as u32).collect()
}

/// Bounds (0 = b_0 < b_1 < … < b_k = nb) of at most `wanted` groups of consecutive buckets with
/// about equal entries: `buckets` ascending from 0 to `nb` and `offsets` the entry offset at
/// each (so `offsets` is ascending). Each bound is the first sampled bucket at or past its share
/// of the entries; bounds that coincide merge, so a bucket fuller than a share makes its group
/// that much larger.
fn balanced_bounds(buckets: &[u32], offsets: &[u32], nb: u32, wanted: usize) -> Vec<u32> {
    let total = *offsets.last().unwrap_or(&0) as u64;
    let mut bounds = vec![0u32];
    for g in 1..wanted as u64 {
        let share = (total * g).div_ceil(wanted as u64);
        let i = offsets.partition_point(|&o| (o as u64) < share);
        let b = buckets.get(i).copied().unwrap_or(nb);
        if b > *bounds.last().unwrap_or(&0) && b < nb {
            bounds.push(b);
        }
    }
    bounds.push(nb);
    bounds
}

/// Records a timed event on `stream` into `marks` when there is one (profiling).
fn mark(marks: &mut Option<&mut Vec<Event>>, stream: &Stream) -> Result<(), CudaError> {
    if let Some(m) = marks.as_deref_mut() {
        m.push(Event::record_timed(stream)?);
    }
    Ok(())
}

/// One batch-affine round: the n pairs `pairs` of points (from `src`, through `entries` when
/// not 0) added, their slopes' denominators inverted together (levels of prefix products down
/// to at most `inv_each_max` elements, inverted one per thread); each sum goes where `dest`
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
    inv_each_max: usize,
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
    while len > inv_each_max {
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
    // SAFETY: arguments match msm_affine_finish_*; dest places every sum inside next or fin.
    unsafe { module.launch(&format!("msm_affine_finish_{sfx}"), grid(t0, 128)?, 128, 0, stream, args)? };
    mark(&mut marks, stream)?;
    Ok(prefix_done)
}

/// Bytes of keys the windowed scatter writes per pass over the scalars (2^24 scalars: all 13
/// windows in one pass, instead of reading the scalars once per window).
const SCATTER_KEY_BYTES: usize = 1 << 30;

/// Bytes of entries one scatter launch may spread its writes over: well inside the H200's 50 MB
/// L2, so that the sectors fill up there before they go to DRAM.
const SCATTER_SPAN_BYTES: usize = 24 << 20;

/// The scalars that size the windows: of `m` prepared ones, those above 1 (counted on the
/// device when `m` ≥ [`cuzk_core::msm::COUNT_DENSE_MIN`]), at least 1. An MSM of mostly bits
/// (Filecoin's A, B and L) is the MSM of its few dense scalars plus one heavy bucket. G1 2^24 of 99% bits on the H200:
/// 23.90 ms sized from all `m` (c = 20), 10.72 ms sized so (c = 11) with the digit passes'
/// window bound (docs/perf-cuda.md).
fn dense_scalars(module: &Module, stream: &Stream, prepared: u64, m: u32) -> Result<usize, CudaError> {
    if (m as usize) < cuzk_core::msm::COUNT_DENSE_MIN {
        return Ok(m as usize);
    }
    let count = DevBuf::zeroed(stream, 4)?;
    // SAFETY: arguments match msm_count_dense; prepared holds m scalars.
    unsafe { module.launch("msm_count_dense", grid(m as usize, 256)?, 256, 0, stream, Args::new().push(prepared).push(m).push(count.ptr))? };
    Ok(read_u32(stream, count.ptr)?.max(1) as usize)
}

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

/// Buckets up to this many entries scatter with one plain atomic per entry; fuller ones (equal
/// scalars) with the warp-aggregated ones, which cost ~2x more when nothing aggregates.
const SCATTER_PLAIN_MAX: u32 = 4096;

/// Windows whose entries span at least this many `SCATTER_SPAN_BYTES` ranges are binned by
/// range first (`msm_bin_keys`) instead of re-reading their keys once per range: binning reads
/// and writes about five key-sized arrays, the ranges read one each.
const BIN_MIN_PARTS: u32 = 8;

/// Ranges a forced binned scatter takes at least ([`ScatterRule::Binned`]).
const BIN_FORCED_RANGES: u32 = 64;

/// `msm_bin_keys`' bin limit and keys per thread (`BIN_MAX`, `BIN_KEYS_PER_THREAD` in msm.cu).
const BIN_MAX: u32 = 1024;
const BIN_KEYS_PER_THREAD: u32 = 8;

/// Sorts the digits into `entries` (point index | sign, grouped by bucket) from the cursors
/// (the buckets' offsets, `offsets` unchanged beside them), as the plan's `how` says:
/// [`Scatter::Direct`] from the scalars in one launch; [`Scatter::Windowed`] one window at a
/// time: the window's keys first, then one launch per bucket range whose entries span about
/// `SCATTER_SPAN_BYTES` (see `msm_scatter_range`), or, from [`BIN_MIN_PARTS`] ranges on, the
/// keys binned by range and placed in one launch (see `msm_bin_keys`).
#[allow(clippy::too_many_arguments)]
fn scatter(
    module: &Module,
    stream: &Stream,
    prepared: u64,
    m: u32,
    c: u32,
    w: u32,
    offsets: u64,
    cursor: u64,
    entries: u64,
    how: Scatter,
) -> Result<(), CudaError> {
    let g = grid(m as usize, 256)?;
    let direct = || {
        // SAFETY: arguments match msm_scatter; entries holds total slots.
        unsafe { module.launch("msm_scatter", g, 256, 0, stream, Args::new().push(prepared).push(m).push(c).push(w).push(cursor).push(entries)) }
    };
    let Scatter::Windowed { aggregate, ranges, binned } = how else {
        return direct();
    };
    let aggregate = u32::from(aggregate);
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
    let binning = if binned { Binning::new(stream, m, half, ranges) } else { None };
    for w_lo in (0..w).step_by(per_pass as usize) {
        let w_hi = (w_lo + per_pass).min(w);
        let args = Args::new().push(prepared).push(m).push(c).push(w_lo).push(w_hi).push(keys.ptr);
        // SAFETY: arguments match msm_window_keys; keys holds m words per window of the pass.
        unsafe { module.launch("msm_window_keys", g, 256, 0, stream, args)? };
        for win in w_lo..w_hi {
            let win_keys = keys.at(4 * m as usize * (win - w_lo) as usize);
            if let Some(b) = &binning {
                b.scatter_window(module, stream, win_keys, m, win * half, offsets, cursor, entries, aggregate)?;
                continue;
            }
            for (lo, hi) in bucket_ranges(win * half, half, ranges) {
                let args = Args::new().push(win_keys).push(m).push(lo).push(hi).push(cursor).push(entries).push(aggregate);
                // SAFETY: arguments match msm_scatter_range; the cursors place every key in entries.
                unsafe { module.launch("msm_scatter_range", g, 256, 0, stream, args)? };
            }
        }
    }
    Ok(())
}

/// The buffers of the binned scatter: one window's entries with their keys (8 bytes each, at
/// most `m`), and the bins' cursors. Bins are `2^shift` consecutive buckets, at least `ranges`
/// of them (a power of two, at most `BIN_MAX` of the kernel and at most `half`).
struct Binning {
    binned: DevBuf,
    bcursor: DevBuf,
    shift: u32,
    bins: u32,
}

impl Binning {
    /// `None` where the device has no room for the buffers (the caller scatters by ranges).
    fn new(stream: &Stream, m: u32, half: u32, ranges: u32) -> Option<Binning> {
        let bins = ranges.next_power_of_two().min(half).min(BIN_MAX);
        let shift = (half / bins).trailing_zeros();
        let alloc = || Ok::<_, CudaError>((DevBuf::new(stream, 8 * m as usize)?, DevBuf::new(stream, 4 * (bins as usize + 1))?));
        match alloc() {
            Ok((binned, bcursor)) => Some(Binning { binned, bcursor, shift, bins }),
            Err(e) => {
                tracing::debug!(error = %e, "no room for the binned scatter; scattering by ranges");
                None
            }
        }
    }

    /// Places the keys of the window whose first bucket is `first` (`keys`: one per scalar).
    #[allow(clippy::too_many_arguments)]
    fn scatter_window(
        &self,
        module: &Module,
        stream: &Stream,
        keys: u64,
        m: u32,
        first: u32,
        offsets: u64,
        cursor: u64,
        entries: u64,
        aggregate: u32,
    ) -> Result<(), CudaError> {
        let (shift, bins) = (self.shift, self.bins);
        let args = Args::new().push(offsets).push(first).push(shift).push(bins).push(self.bcursor.ptr);
        // SAFETY: arguments match msm_bin_starts; bcursor holds bins + 1 words and offsets
        // reaches first + bins·2^shift (the window's end, at most the last offset).
        unsafe { module.launch("msm_bin_starts", grid(bins as usize + 1, 256)?, 256, 0, stream, args)? };
        let args = Args::new().push(keys).push(m).push(first).push(shift).push(bins).push(self.bcursor.ptr).push(self.binned.ptr);
        // SAFETY: arguments match msm_bin_keys, each block taking 256 threads' keys per thread;
        // every valid key lies in the window, so in a bin, and the bins' slots lie inside
        // binned's m entries.
        unsafe { module.launch("msm_bin_keys", grid(m as usize, 256 * BIN_KEYS_PER_THREAD)?, 256, 0, stream, args)? };
        let count = self.bcursor.at(4 * bins as usize);
        let args = Args::new().push(self.binned.ptr).push(count).push(cursor).push(entries).push(aggregate);
        // SAFETY: arguments match msm_scatter_binned; the first *count binned entries are written.
        unsafe { module.launch("msm_scatter_binned", grid(m as usize, 256)?, 256, 0, stream, args) }
    }
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
    use super::*;

    /// `plan` for `m` scalars in `group` at the default window size, with `entries` bucket
    /// entries and `fullest` entries in the fullest bucket, as one line of text.
    fn decide(group: Group, m: usize, entries: usize, fullest: u32, affine: AffineRule) -> String {
        let sizes = MsmSizes { group, scalars: m, window_bits: window_bits(m), entries };
        let mut asked = 0;
        let p = plan::<()>(&sizes, &MsmConfig { affine, ..Default::default() }, || {
            asked += 1;
            Ok(fullest)
        })
        .unwrap();
        assert!(asked <= 1, "the fullest bucket is read at most once");
        let scatter = match p.scatter {
            Scatter::Direct => "direct".to_string(),
            Scatter::Windowed { aggregate, ranges, binned } => {
                format!("{}/{ranges}{}", if binned { "binned" } else { "windowed" }, if aggregate { "+aggregate" } else { "" })
            }
        };
        let affine = match p.affine {
            None => "xyzz".to_string(),
            Some(AffinePlan { rounds, full: true }) => format!("affine {rounds} full"),
            Some(AffinePlan { rounds, full: false }) => format!("affine {rounds} partial"),
        };
        format!("c={} {scatter} {affine}", sizes.window_bits)
    }

    #[test]
    fn window_bits_grow_with_the_size_then_jump_to_20() {
        let got: Vec<u32> = (0..=30).map(|k| window_bits(1 << k)).collect();
        let want = [4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 16, 20, 20, 20, 20, 20, 20, 20];
        assert_eq!(got, want);
        assert_eq!(window_bits(0), 4);
        assert_eq!(window_bits((1 << 24) - 1), 16);
    }

    /// The default plan of every size from 2^10 to 2^27: random scalars (every digit nonzero,
    /// the fullest bucket with 600 entries, as the top window's at 2^24) and mostly-0/1 scalars
    /// (one entry per scalar, half of them in one bucket).
    #[test]
    fn default_plan_by_size_group_and_density() {
        let mut got = String::new();
        for group in [Group::G1, Group::G2] {
            for k in 10..=27 {
                let m = 1usize << k;
                let w = cuzk_core::msm::windows(window_bits(m)) as usize;
                let dense = decide(group, m, w * m, 600, AffineRule::Auto);
                let sparse = decide(group, m, m, (m / 2) as u32, AffineRule::Auto);
                got += &format!("{group:?} 2^{k}: {dense} | {sparse}\n");
            }
        }
        let want = "\
G1 2^10: c=4 direct xyzz | c=4 direct xyzz
G1 2^11: c=5 direct xyzz | c=5 direct xyzz
G1 2^12: c=6 direct xyzz | c=6 direct xyzz
G1 2^13: c=7 direct xyzz | c=7 direct xyzz
G1 2^14: c=8 direct xyzz | c=8 direct xyzz
G1 2^15: c=9 direct xyzz | c=9 direct xyzz
G1 2^16: c=10 direct xyzz | c=10 direct xyzz
G1 2^17: c=11 direct xyzz | c=11 direct xyzz
G1 2^18: c=12 direct xyzz | c=12 direct xyzz
G1 2^19: c=13 windowed/1 xyzz | c=13 direct xyzz
G1 2^20: c=14 windowed/1 affine 10 full | c=14 direct xyzz
G1 2^21: c=15 windowed/1 affine 10 full | c=15 direct xyzz
G1 2^22: c=16 windowed/1 affine 10 full | c=16 direct xyzz
G1 2^23: c=16 windowed/2 affine 10 full | c=16 direct xyzz
G1 2^24: c=20 windowed/3 affine 10 full | c=20 direct xyzz
G1 2^25: c=20 windowed/6 affine 10 full | c=20 direct xyzz
G1 2^26: c=20 binned/11 affine 10 full | c=20 direct xyzz
G1 2^27: c=20 binned/22 affine 10 full | c=20 direct xyzz
G2 2^10: c=4 direct xyzz | c=4 direct xyzz
G2 2^11: c=5 direct xyzz | c=5 direct xyzz
G2 2^12: c=6 direct xyzz | c=6 direct xyzz
G2 2^13: c=7 direct xyzz | c=7 direct xyzz
G2 2^14: c=8 direct xyzz | c=8 direct xyzz
G2 2^15: c=9 direct xyzz | c=9 direct xyzz
G2 2^16: c=10 direct xyzz | c=10 direct xyzz
G2 2^17: c=11 direct xyzz | c=11 direct xyzz
G2 2^18: c=12 direct affine 10 full | c=12 direct xyzz
G2 2^19: c=13 windowed/1 affine 10 full | c=13 direct xyzz
G2 2^20: c=14 windowed/1 affine 10 full | c=14 direct xyzz
G2 2^21: c=15 windowed/1 affine 10 full | c=15 direct xyzz
G2 2^22: c=16 windowed/1 affine 10 full | c=16 direct xyzz
G2 2^23: c=16 windowed/2 affine 10 full | c=16 direct xyzz
G2 2^24: c=20 windowed/3 affine 10 full | c=20 direct xyzz
G2 2^25: c=20 windowed/6 affine 10 full | c=20 direct xyzz
G2 2^26: c=20 binned/11 affine 10 full | c=20 direct xyzz
G2 2^27: c=20 binned/22 affine 10 full | c=20 direct xyzz
";
        assert_eq!(got, want);
    }

    /// The thresholds themselves, and what the fullest bucket changes.
    #[test]
    fn plan_thresholds_and_bucket_load() {
        let m = 1usize << 24; // c = 20: 13 windows, 13·2^19 buckets
        let dense = 13 * m;
        // Batch-affine rounds from 2^24 entries in G1 and 2^22 in G2, for dense digit sets
        // (2·entries ≥ windows·scalars) only.
        let at = |g, m: usize, entries| decide(g, m, entries, 2, AffineRule::Auto);
        assert_eq!(at(Group::G1, 1 << 20, 1 << 24), "c=14 windowed/1 affine 1 full");
        assert_eq!(at(Group::G1, 1 << 20, (1 << 24) - 1), "c=14 windowed/1 xyzz");
        assert_eq!(at(Group::G2, 1 << 18, 1 << 22), "c=12 direct affine 1 full");
        assert_eq!(at(Group::G2, 1 << 18, (1 << 22) - 1), "c=12 direct xyzz");
        assert_eq!(at(Group::G1, m, dense / 2), "c=20 windowed/2 affine 1 full");
        assert_eq!(at(Group::G1, m, dense / 2 - 1), "c=20 direct xyzz");
        // The windowed scatter once the entries outgrow 24 MiB (6,291,456 entries).
        assert_eq!(at(Group::G1, 1 << 19, 6 << 20), "c=13 direct xyzz");
        assert_eq!(at(Group::G1, 1 << 19, (6 << 20) + 1), "c=13 windowed/1 xyzz");
        // Full rounds while the fullest bucket needs at most 10 (1024 entries), one at least.
        let load = |fullest| decide(Group::G1, m, dense, fullest, AffineRule::Auto);
        assert_eq!(load(0), "c=20 windowed/3 affine 1 full");
        assert_eq!(load(1), "c=20 windowed/3 affine 1 full");
        assert_eq!(load(3), "c=20 windowed/3 affine 2 full");
        assert_eq!(load(1024), "c=20 windowed/3 affine 10 full");
        // Beyond: partial, from the mean load (13·2^24 / (13·2^19) = 32 -> 4 rounds, just under
        // 32 -> 3), and aggregated scatter atomics once a bucket holds more than 4096 entries.
        assert_eq!(load(1025), "c=20 windowed/3 affine 4 partial");
        assert_eq!(load(4096), "c=20 windowed/3 affine 4 partial");
        assert_eq!(load(4097), "c=20 windowed/3+aggregate affine 4 partial");
        assert_eq!(decide(Group::G1, m, dense - 13, 5000, AffineRule::Auto), "c=20 windowed/3+aggregate affine 3 partial");
        // Mostly-0/1 scalars never read the fullest bucket: nothing depends on it.
        let sizes = MsmSizes { group: Group::G1, scalars: m, window_bits: 20, entries: m };
        assert_eq!(plan(&sizes, &MsmConfig::default(), || Err("read")), Ok(MsmPlan { scatter: Scatter::Direct, affine: None }));
    }

    /// Memory: partial rounds continue until the points left fit in 8 GB; the groups of rounds
    /// shrink with the free device memory.
    #[test]
    fn plan_under_memory_limits() {
        // 2^27 scalars with a heavy top window: the mean rule gives 6 rounds (mean 256), which
        // leave 13·2^27 / 2^6 points, 2.6 GB.
        assert_eq!(decide(Group::G1, 1 << 27, 13 << 27, 5000, AffineRule::Auto), "c=20 binned/22+aggregate affine 6 partial");
        // 2^30 G1 scalars at c = 20 (13·2^30 entries, mean 2^11: 6 rounds by the mean): 8
        // rounds, since after 7 the points left would take 13·2^30 / 2^7 · 96 B = 9.75 GiB.
        let sizes = MsmSizes { group: Group::G1, scalars: 1 << 30, window_bits: 20, entries: 13 << 30 };
        let p = plan::<()>(&sizes, &MsmConfig::default(), || Ok(5000)).unwrap().affine.unwrap();
        assert_eq!((p.rounds, p.full), (8, false));
        assert!((13usize << 30 >> p.rounds) * 96 <= AFFINE_LEFT_BYTES && (13usize << 30 >> (p.rounds - 1)) * 96 > AFFINE_LEFT_BYTES);
        // Group sizes: 2^27 entries on an empty H200 (about 140 GB free), fewer with less.
        let gib = 1usize << 30;
        assert_eq!(affine_group_entries(Group::G1, 140 * gib), 1 << 27);
        assert_eq!(affine_group_entries(Group::G1, 75 * gib), 1 << 27); // 2·2^27·75 B = 18.75 GiB = 75/4 GiB
        assert_eq!(affine_group_entries(Group::G1, 75 * gib - 1), 1 << 26);
        assert_eq!(affine_group_entries(Group::G2, 140 * gib), 1 << 26); // 147 bytes per entry
        assert_eq!(affine_group_entries(Group::G1, 4 * gib), 1 << 22);
        assert_eq!(affine_group_entries(Group::G1, 0), 1 << 20); // never below 2^20
    }

    /// Entry offsets (nb + 1) of per-bucket `counts`.
    fn offsets_of(counts: &[u32]) -> Vec<u32> {
        std::iter::once(0)
            .chain(counts.iter().scan(0u32, |acc, &c| {
                *acc += c;
                Some(*acc)
            }))
            .collect()
    }

    /// The bounds of at most `wanted` groups over `counts`, checked, and each group's entries.
    fn bounds_for(counts: &[u32], wanted: usize) -> (Vec<u32>, Vec<u64>) {
        let off = offsets_of(counts);
        let nb = counts.len() as u32;
        let samples = bound_samples(nb);
        let sampled: Vec<u32> = samples.iter().map(|&b| off[b as usize]).collect();
        let bounds = balanced_bounds(&samples, &sampled, nb, wanted);
        assert_eq!((bounds[0], *bounds.last().unwrap()), (0, nb));
        assert!(bounds.windows(2).all(|w| w[0] < w[1]), "bounds must rise: {bounds:?}");
        assert!(bounds.len() - 1 <= wanted);
        let sizes = bounds.windows(2).map(|w| (off[w[1] as usize] - off[w[0] as usize]) as u64).collect();
        (bounds, sizes)
    }

    /// The batch-affine groups split the entries evenly, also where the buckets are uneven (the
    /// top window of a 2^27 MSM at c = 20: 2^15 used buckets of its 2^19 hold 2^27 entries).
    #[test]
    fn groups_split_the_entries_evenly() {
        let half = 1usize << 19;
        let mut counts = vec![256u32; 12 * half]; // 2^27 scalars over 2^19 buckets, 12 windows
        counts.extend((0..half).map(|b| if b < 1 << 15 { 4096 } else { 0 }));
        let total: u64 = counts.iter().map(|&c| c as u64).sum();
        let nb = counts.len() as u32;
        let off = offsets_of(&counts);
        for log in [20u32, 22, 26] {
            let wanted = (total as usize).div_ceil(1 << log);
            let (_, sizes) = bounds_for(&counts, wanted);
            // A bound falls on a sampled bucket: one sample step (26 buckets) of the top window
            // past its share at most.
            let step = (nb as u64).div_ceil(GROUP_BOUND_SAMPLES as u64 - 1) * 4096;
            let most = *sizes.iter().max().unwrap();
            assert!(most <= (1 << log) + step, "2^{log}: a group of {most} entries");
            assert_eq!(sizes.iter().sum::<u64>(), total);
            // Equal bucket ranges, as before, put the top window's entries in a few groups.
            let even: Vec<u64> = (0..=wanted).map(|g| nb as u64 * g as u64 / wanted as u64).collect();
            let even_most = even.windows(2).map(|w| (off[w[1] as usize] - off[w[0] as usize]) as u64).max().unwrap();
            assert!(even_most >= 2 << log, "2^{log}: equal bucket ranges gave at most {even_most}");
        }
        // Few buckets: every bucket is sampled; equal loads give equal groups, and a bucket
        // fuller than a share ends its group.
        let (bounds, sizes) = bounds_for(&[5; 8], 4);
        assert_eq!((bounds, sizes), (vec![0, 2, 4, 6, 8], vec![10; 4]));
        let (bounds, sizes) = bounds_for(&[1, 1, 100, 1, 1], 4);
        assert_eq!((bounds, sizes), (vec![0, 3, 5], vec![102, 2]));
        // Nothing to split, or one bucket.
        assert_eq!(bounds_for(&[0, 0, 0], 2).0, vec![0, 3]);
        assert_eq!(bounds_for(&[7], 2).0, vec![0, 1]);
    }

    /// The rules tests and benchmarks force.
    #[test]
    fn forced_affine_rules() {
        let m = 1usize << 10; // c = 4: 64 windows, 512 buckets, mean load 128
        let dense = 64 * m;
        assert_eq!(decide(Group::G1, m, dense, 600, AffineRule::Always), "c=4 direct affine 10 full");
        assert_eq!(decide(Group::G1, m, dense, 5000, AffineRule::Always), "c=4 direct affine 6 partial");
        assert_eq!(decide(Group::G1, m, dense, 600, AffineRule::AlwaysPartial), "c=4 direct affine 6 partial");
        assert_eq!(decide(Group::G2, 1, 1, 1, AffineRule::AlwaysPartial), "c=4 direct affine 2 partial");
        assert_eq!(decide(Group::G1, m, m, 600, AffineRule::Always), "c=4 direct affine 10 full");
        assert_eq!(decide(Group::G1, 1 << 24, 13 << 24, 600, AffineRule::Never), "c=20 windowed/3 xyzz");
        assert_eq!(decide(Group::G2, 1 << 24, 13 << 24, 600, AffineRule::Never), "c=20 windowed/3 xyzz");
    }

    /// Ranges per window: ceil(4 bytes · entries per window / 24 MiB); binned from 8 of them,
    /// and the forced rules.
    #[test]
    fn binned_scatter_from_eight_ranges_and_forced() {
        let span = SCATTER_SPAN_BYTES / 4; // entries per range: 6,291,456
        let scatter = |m: usize, entries: usize, rule| {
            let sizes = MsmSizes { group: Group::G1, scalars: m, window_bits: 20, entries };
            plan::<()>(&sizes, &MsmConfig { scatter: rule, ..Default::default() }, || Ok(600)).unwrap().scatter
        };
        let windowed = |ranges, binned| Scatter::Windowed { aggregate: false, ranges, binned };
        // 13 windows of 7·span entries: 7 ranges; one entry more per window makes 8.
        let m = 1 << 26;
        assert_eq!(scatter(m, 13 * 7 * span, ScatterRule::Auto), windowed(7, false));
        assert_eq!(scatter(m, 13 * (7 * span + 1), ScatterRule::Auto), windowed(8, true));
        assert_eq!(scatter(m, 13 * (7 * span + 1), ScatterRule::Ranges), windowed(8, false));
        // Forced binning takes at least 64 ranges, at most one per bucket (c = 20: 2^19).
        assert_eq!(scatter(m, 13 * 7 * span, ScatterRule::Binned), windowed(64, true));
        assert_eq!(scatter(1 << 31, 13 << 31, ScatterRule::Binned), windowed(342, true)); // 8 GiB / 24 MiB
        let sizes = MsmSizes { group: Group::G1, scalars: 1 << 16, window_bits: 2, entries: 128 << 16 };
        let p = plan::<()>(&sizes, &MsmConfig { scatter: ScatterRule::Binned, ..Default::default() }, || Ok(600)).unwrap();
        assert_eq!(p.scatter, windowed(2, true));
        // No rule makes a direct scatter windowed.
        assert_eq!(scatter(m, m, ScatterRule::Binned), Scatter::Direct);
    }

    /// The constants the host sizes `msm_bin_keys`' launches and bins with are the kernel's.
    #[test]
    fn bin_constants_match_the_kernel() {
        let src = crate::kernels::SOURCE;
        assert!(src.contains(&format!("#define BIN_MAX {BIN_MAX}\n")));
        assert!(src.contains(&format!("#define BIN_KEYS_PER_THREAD {BIN_KEYS_PER_THREAD}\n")));
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
