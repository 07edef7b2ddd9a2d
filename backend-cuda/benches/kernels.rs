//! `cuzk-cuda-kernels`: host→device bandwidth (pinned vs pageable), NTT and MSM timings on the
//! first CUDA device: `cargo bench -p cuzk-backend-cuda --bench cuzk-cuda-kernels -- ARGS`
//! (cargo's own `--bench` is ignored).
//!
//! Usage: `cuzk-cuda-kernels [h2d] [field] [ntt LO HI] [g1 LO HI] [g1s LO HI] [g2 LO HI] [h LO HI] [overlap K P]
//! [g1c LO HI] [g2c LO HI] [affine RULE] [scatter RULE] [groups LOG|auto] [invs LOG|auto] [cs C,C,...] [bits PCT] [hold GB]
//! [points LO HI]`
//! (log2 sizes); with no arguments runs `h2d ntt 20 27 g1 16 26 g2 16 24 h 20 26`. The
//! arguments are checked before the device is opened: a bad one prints the usage and exits
//! with status 2.
//!
//! `overlap K P`: P partitions' a, b, c (2^K each, in pinned pool buffers) go through upload +
//! `compute_h`, first one after the other, then with a second thread uploading partition i+1
//! (copy stream) while partition i computes (compute stream). `g1s`: G1 MSM over bases kept in
//! host memory and streamed through the device. `g1c` / `g2c`: the MSM at each size for every
//! window size of the last `cs` argument (default `14,16,18,19,20,21,22`), to tune
//! `window_bits`. `affine RULE` (`auto`, the default and what the prover runs, `never`,
//! `always` or `partial`; `msm::AffineRule`) sets the batch-affine rounds of the MSMs that
//! follow it, for A/B runs (`scripts/h200/variants.sh`); `scatter RULE` (`auto`, `ranges` or
//! `binned`; `msm::ScatterRule`) likewise how their windowed scatters place the keys, and
//! `groups LOG` the entries of their batch-affine groups (2^LOG, 20..=27; `auto`: sized from the
//! free device memory, as the prover does), `invs LOG` how many elements each round's batch
//! inversion ends on, one inversion per thread (2^LOG, 5..=20; `auto`: the default). `bits
//! PCT` makes PCT% of the scalars of the `g1`, `g1s` and `g2` MSMs that follow it bits (0 and
//! 1 in equal shares, the rest random), as Filecoin's PoRep and SnapDeals witnesses are
//! (`docs/perf-cuda.md`: 95–99% bits).
//! `hold GB` keeps GB (10^9 bytes) of device memory allocated from the stream-ordered pool for
//! the commands after it (`hold 0` lets it go), to time MSMs on a device that parameters and
//! partitions nearly fill, as the daemon's on an 80 GB card.
//! `field`: Fr and Fp product throughput (independent product chains on every thread), the
//! ceiling for the NTT and the MSM accumulation. `h` also times upload + `compute_h` with the
//! transforms of `a` overlapping the copies of `b` and `c`, against waiting for all copies.
//! `points`: the curve and subgroup checks of a parameter file validated in full
//! (`Backend::first_invalid_g1` / `_g2`: copies from pageable memory and the check kernels) on
//! 2^LO … 2^HI valid G1 and G2 points, in points per second, with the time half a billion points
//! (a 32 GiB PoRep file: 47 GB, about 4.5·10^8 G1 and 2.5·10^7 G2 points) would take.

use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_backend_cuda::msm::{AffineRule, MsmConfig, ScatterRule};
use cuzk_backend_cuda::CudaBackend;
use cuzk_core::alloc::{heap, PinnedVec};
use cuzk_core::backend::{Backend, MsmScalars, NttDirection};
use cuzk_core::domain::Domain;
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};

/// Fast valid scalars: random limbs with the top limb below 2^62 (so < r; any value < r is a
/// valid Montgomery representation).
fn fill_scalars(v: &mut [Scalar], seed: u64) {
    let mut x = seed | 1;
    for s in v.iter_mut() {
        let mut l = [0u64; 4];
        for w in l.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *w = x;
        }
        l[3] &= (1 << 62) - 1;
        // SAFETY: Scalar is 4 Montgomery limbs; the value is below r.
        *s = unsafe { std::mem::transmute::<[u64; 4], Scalar>(l) };
    }
}

/// The MSM rows' note on their scalars.
fn bits_label(pct: u32) -> String {
    if pct == 0 {
        String::new()
    } else {
        format!(" ({pct}% bits)")
    }
}

/// Makes `pct`% of `v` bits, 0 and 1 in equal shares, at pseudo-random places.
fn with_bits(mut v: PinnedVec<Scalar>, pct: u32, seed: u64) -> PinnedVec<Scalar> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for s in v.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if ((x >> 8) % 100) < u64::from(pct) {
            *s = if x & 1 == 0 { Scalar::ZERO } else { Scalar::ONE };
        }
    }
    v
}

fn scalars_in(b: &CudaBackend, n: usize, seed: u64) -> PinnedVec<Scalar> {
    let mut v = PinnedVec::from_elem_in(Scalar::ZERO, n, b.host_allocator()).expect("pinned alloc");
    fill_scalars(&mut v, seed);
    v
}

/// n points P0 + i·Q, built in parallel chunks and batch-normalized.
fn g1_points(n: usize) -> Vec<G1Affine> {
    let threads = std::thread::available_parallelism().map_or(4, |t| t.get());
    let chunk = n.div_ceil(threads).max(1);
    let mut rng = rand_core_seed();
    let p0 = G1Projective::random(&mut rng);
    let q = G1Projective::random(&mut rng);
    let mut out = vec![G1Affine::identity(); n];
    std::thread::scope(|s| {
        for (ci, part) in out.chunks_mut(chunk).enumerate() {
            s.spawn(move || {
                let mut acc = p0 + q * Scalar::from((ci * chunk) as u64);
                let mut proj = Vec::with_capacity(part.len());
                for _ in 0..part.len() {
                    proj.push(acc);
                    acc += q;
                }
                G1Projective::batch_normalize(&proj, part);
            });
        }
    });
    out
}

fn g2_points(n: usize) -> Vec<G2Affine> {
    let threads = std::thread::available_parallelism().map_or(4, |t| t.get());
    let chunk = n.div_ceil(threads).max(1);
    let mut rng = rand_core_seed();
    let p0 = G2Projective::random(&mut rng);
    let q = G2Projective::random(&mut rng);
    let mut out = vec![G2Affine::identity(); n];
    std::thread::scope(|s| {
        for (ci, part) in out.chunks_mut(chunk).enumerate() {
            s.spawn(move || {
                let mut acc = p0 + q * Scalar::from((ci * chunk) as u64);
                let mut proj = Vec::with_capacity(part.len());
                for _ in 0..part.len() {
                    proj.push(acc);
                    acc += q;
                }
                G2Projective::batch_normalize(&proj, part);
            });
        }
    });
    out
}

/// Host bases kept from one command to the next. Point i is p0 + i·q whatever the count asked
/// for, so a smaller set is a prefix of a larger one, and a later `g1 27 27` (after `hold`,
/// `affine`, `groups`, ...) costs a copy instead of a new set (about a minute at 2^27 on 16
/// cores). The largest set asked for stays in host memory (12.9 GB at 2^27 G1).
#[derive(Default)]
struct HostBases {
    g1: Vec<G1Affine>,
    g2: Vec<G2Affine>,
}

impl HostBases {
    /// The first `n` G1 bases, and how they came: generated in so many seconds, or reused.
    fn g1(&mut self, n: usize) -> (Vec<G1Affine>, String) {
        prefix_of(&mut self.g1, n, g1_points)
    }

    /// [`HostBases::g1`] for G2.
    fn g2(&mut self, n: usize) -> (Vec<G2Affine>, String) {
        prefix_of(&mut self.g2, n, g2_points)
    }
}

/// The first `n` of `kept`, made anew by `make` when it holds fewer, and how they came.
fn prefix_of<P: Clone>(kept: &mut Vec<P>, n: usize, make: fn(usize) -> Vec<P>) -> (Vec<P>, String) {
    let t = Instant::now();
    let how = if kept.len() >= n {
        "reused".to_string()
    } else {
        *kept = make(n);
        format!("generated in {:.1} s", t.elapsed().as_secs_f64())
    };
    (kept[..n].to_vec(), how)
}

fn rand_core_seed() -> impl rand_core::RngCore {
    struct X(u64);
    impl rand_core::RngCore for X {
        fn next_u32(&mut self) -> u32 {
            self.next_u64() as u32
        }
        fn next_u64(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn fill_bytes(&mut self, d: &mut [u8]) {
            for c in d.chunks_mut(8) {
                let v = self.next_u64().to_le_bytes();
                c.copy_from_slice(&v[..c.len()]);
            }
        }
        fn try_fill_bytes(&mut self, d: &mut [u8]) -> Result<(), rand_core::Error> {
            self.fill_bytes(d);
            Ok(())
        }
    }
    X(0x9e37_79b9_7f4a_7c15)
}

fn time<F: FnMut()>(reps: usize, mut f: F) -> f64 {
    f(); // warm-up
    let mut best = f64::MAX;
    for _ in 0..reps {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64() * 1e3);
    }
    best
}

const USAGE: &str = "usage: cuzk-cuda-kernels [h2d] [field] [ntt LO HI] [h LO HI] [g1 LO HI] [g1s LO HI] [g2 LO HI] [overlap K P]
       [g1c LO HI] [g2c LO HI] [affine auto|never|always|partial] [scatter auto|ranges|binned]
       [groups LOG|auto] [invs LOG|auto] [cs C,C,...] [bits PCT] [hold GB] [points LO HI]
LO, HI, K: log2 sizes (LO <= HI <= 30); P: partitions; C: window sizes (1..=24);
PCT: the percentage of bits (0 and 1) among the scalars of the g1, g1s and g2 MSMs after it.
GB: device memory (10^9 bytes) held for the commands after it; LOG: 20..=27 for groups, 5..=20 for invs.
With no arguments: h2d ntt 20 27 g1 16 26 g2 16 24 h 20 26";

/// The largest log2 size an argument may ask for.
const MAX_LOG: u32 = 30;

/// One timing the arguments ask for, in order.
#[derive(Debug)]
enum Cmd {
    H2d,
    Field,
    Ntt(u32, u32),
    H(u32, u32),
    /// Resident (`false`) or streamed (`true`) G1 bases.
    G1(u32, u32, bool),
    G2(u32, u32),
    Overlap(u32, u32),
    /// The window sweep over G1 (`true`) or G2 bases.
    Windows(u32, u32, bool),
    Affine(AffineRule),
    Scatter(ScatterRule),
    /// The batch-affine groups' entries (log2), or sized from free memory.
    Groups(Option<u32>),
    /// The elements each round's batch inversion inverts one per thread (log2), or the default.
    Invs(Option<u32>),
    Cs(Vec<u32>),
    /// The share of bits (percent) in the scalars of the MSMs after it.
    Bits(u32),
    /// Device memory (GB) held for the commands after it.
    Hold(u32),
    /// The point checks of parameter loads.
    Points(u32, u32),
}

/// The next argument as a number.
fn num<'a>(it: &mut impl Iterator<Item = &'a str>, name: &str, what: &str) -> Result<u32, String> {
    let v = it.next().ok_or_else(|| format!("{name} needs {what}"))?;
    v.parse().map_err(|_| format!("{name}: {what} must be a number, not {v:?}"))
}

/// The next two arguments as a range of log2 sizes.
fn range<'a>(it: &mut impl Iterator<Item = &'a str>, name: &str) -> Result<(u32, u32), String> {
    let (lo, hi) = (num(it, name, "LO")?, num(it, name, "HI")?);
    if lo > hi || hi > MAX_LOG {
        return Err(format!("{name} {lo} {hi}: need LO <= HI <= {MAX_LOG}"));
    }
    Ok((lo, hi))
}

/// The next argument: `auto` (`None`) or a log2 size within `logs`.
fn log_or_auto<'a>(it: &mut impl Iterator<Item = &'a str>, name: &str, logs: std::ops::RangeInclusive<u32>) -> Result<Option<u32>, String> {
    let (lo, hi) = (logs.start(), logs.end());
    match it.next() {
        Some("auto") => Ok(None),
        Some(v) => match v.parse() {
            Ok(log) if logs.contains(&log) => Ok(Some(log)),
            _ => Err(format!("{name} takes auto or a log2 size from {lo} to {hi}, not {v:?}")),
        },
        None => Err(format!("{name} needs auto or a log2 size from {lo} to {hi}")),
    }
}

/// The timings `args` ask for, or what is wrong with them.
fn parse(args: &[String]) -> Result<Vec<Cmd>, String> {
    let mut cmds = Vec::new();
    let mut it = args.iter().map(String::as_str);
    while let Some(a) = it.next() {
        let it = &mut it;
        cmds.push(match a {
            "h2d" => Cmd::H2d,
            "field" => Cmd::Field,
            "ntt" => range(it, a).map(|(lo, hi)| Cmd::Ntt(lo, hi))?,
            "h" => range(it, a).map(|(lo, hi)| Cmd::H(lo, hi))?,
            "g1" | "g1s" => range(it, a).map(|(lo, hi)| Cmd::G1(lo, hi, a == "g1s"))?,
            "g2" => range(it, a).map(|(lo, hi)| Cmd::G2(lo, hi))?,
            "points" => range(it, a).map(|(lo, hi)| Cmd::Points(lo, hi))?,
            "g1c" | "g2c" => range(it, a).map(|(lo, hi)| Cmd::Windows(lo, hi, a == "g1c"))?,
            "overlap" => {
                let (k, p) = (num(it, a, "K")?, num(it, a, "P")?);
                if k > MAX_LOG || p == 0 {
                    return Err(format!("overlap {k} {p}: need K <= {MAX_LOG} and P >= 1"));
                }
                Cmd::Overlap(k, p)
            }
            "affine" => Cmd::Affine(match it.next() {
                Some("auto") => AffineRule::Auto,
                Some("never") => AffineRule::Never,
                Some("always") => AffineRule::Always,
                Some("partial") => AffineRule::AlwaysPartial,
                Some(o) => return Err(format!("affine takes auto, never, always or partial, not {o:?}")),
                None => return Err("affine needs auto, never, always or partial".into()),
            }),
            "scatter" => Cmd::Scatter(match it.next() {
                Some("auto") => ScatterRule::Auto,
                Some("ranges") => ScatterRule::Ranges,
                Some("binned") => ScatterRule::Binned,
                Some(o) => return Err(format!("scatter takes auto, ranges or binned, not {o:?}")),
                None => return Err("scatter needs auto, ranges or binned".into()),
            }),
            "hold" => Cmd::Hold(num(it, a, "GB")?),
            "groups" => Cmd::Groups(log_or_auto(it, a, 20..=27)?),
            "invs" => Cmd::Invs(log_or_auto(it, a, 5..=20)?),
            "bits" => {
                let pct = num(it, a, "PCT")?;
                if pct > 100 {
                    return Err(format!("bits {pct}: a percentage, 0 to 100"));
                }
                Cmd::Bits(pct)
            }
            "cs" => {
                let v = it.next().ok_or("cs needs window sizes like 16,18,20")?;
                let cs: Option<Vec<u32>> = v.split(',').map(|c| c.trim().parse().ok().filter(|c| (1..=24).contains(c))).collect();
                Cmd::Cs(cs.ok_or_else(|| format!("cs takes window sizes like 16,18,20, not {v:?}"))?)
            }
            other => return Err(format!("unknown argument {other:?}")),
        });
    }
    Ok(cmds)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return;
    }
    let args = if args.is_empty() { "h2d ntt 20 27 g1 16 26 g2 16 24 h 20 26".split(' ').map(String::from).collect() } else { args };
    let cmds = match parse(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cuzk-cuda-kernels: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let b = match CudaBackend::first() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("SKIPPED: no CUDA device: {e}");
            return;
        }
    };
    let (cached, secs) = b.module_info();
    println!("# device: {}", b.name());
    println!("# kernels: {} in {secs:.2} s", if cached { "loaded from cache" } else { "compiled by NVRTC" });
    println!("# kernel defines: {}", if b.kernel_defines().is_empty() { "none".to_string() } else { b.kernel_defines().join(",") });
    for k in ["ntt_pass", "msm_accumulate_seg_g1", "msm_accumulate_xyzz_g1", "msm_affine_finish_g1", "msm_affine_finish_g2"] {
        println!("# regs {k}: {:?}", b.kernel_regs(k));
    }
    // What `affine`, `scatter` and `cs` set for the MSMs after them.
    let mut cfg = MsmConfig::default();
    let mut cs = vec![14, 16, 18, 19, 20, 21, 22];
    let mut bits = 0u32;
    let mut _held = None;
    let mut host = HostBases::default();
    for cmd in cmds {
        match cmd {
            Cmd::Hold(gb) => {
                _held = None;
                if gb > 0 {
                    match b.hold_device_memory(gb as usize * 1_000_000_000) {
                        Ok(h) => _held = Some(h),
                        Err(e) => {
                            eprintln!("cuzk-cuda-kernels: hold {gb}: {e}");
                            std::process::exit(1);
                        }
                    }
                }
                println!("# device memory held: {gb} GB; allocatable now: {:.2} GB", b.allocatable_bytes().unwrap_or(0) as f64 / 1e9);
            }
            Cmd::Bits(pct) => {
                bits = pct;
                println!("# MSM scalars: {pct}% bits");
            }
            Cmd::Affine(rule) => {
                cfg.affine = rule;
                println!("# batch-affine rule: {:?}", cfg.affine);
            }
            Cmd::Scatter(rule) => {
                cfg.scatter = rule;
                println!("# scatter rule: {:?}", cfg.scatter);
            }
            Cmd::Groups(log) => {
                cfg.affine_group_log = log;
                println!("# batch-affine groups: {}", log.map_or("sized from free memory".into(), |l| format!("2^{l} entries")));
            }
            Cmd::Invs(log) => {
                cfg.inversion_log = log;
                println!("# last-level inversions: {}", log.map_or("the default".into(), |l| format!("up to 2^{l} a round")));
            }
            Cmd::Cs(c) => cs = c,
            Cmd::H2d => {
                // a, b, c of a 2^24 domain: 3 × 512 MiB.
                let n = 3 << 24;
                let bytes = (n * 32) as f64;
                let pinned = scalars_in(&b, n, 1);
                // Measure the copy alone: pre-clone outside the timer.
                let mut best_pin = f64::MAX;
                for _ in 0..4 {
                    let copy = pinned.clone();
                    let t = Instant::now();
                    let d = b.upload_scalars(copy).unwrap();
                    b.synchronize().unwrap();
                    best_pin = best_pin.min(t.elapsed().as_secs_f64());
                    drop(d);
                }
                let mut pageable = PinnedVec::from_elem_in(Scalar::ZERO, n, heap()).unwrap();
                fill_scalars(&mut pageable, 2);
                let mut best_page = f64::MAX;
                for _ in 0..4 {
                    let copy = pageable.clone();
                    let t = Instant::now();
                    let d = b.upload_scalars(copy).unwrap();
                    b.synchronize().unwrap();
                    best_page = best_page.min(t.elapsed().as_secs_f64());
                    drop(d);
                }
                println!(
                    "h2d a,b,c (3 x 2^24 scalars, {:.2} GiB): pinned pool {:.1} GB/s, pageable {:.1} GB/s, ratio {:.1}x",
                    bytes / (1u64 << 30) as f64,
                    bytes / best_pin / 1e9,
                    bytes / best_page / 1e9,
                    best_page / best_pin
                );
            }
            Cmd::Ntt(lo, hi) => {
                for k in lo..=hi {
                    let d = Domain::new(k).unwrap();
                    let mut buf = b.upload_scalars(scalars_in(&b, d.size(), 3)).unwrap();
                    let fwd = time(3, || {
                        b.ntt(&mut buf, &d, NttDirection::Forward, false).unwrap();
                        b.synchronize().unwrap();
                    });
                    let coset = time(3, || {
                        b.ntt(&mut buf, &d, NttDirection::Inverse, true).unwrap();
                        b.synchronize().unwrap();
                    });
                    println!("ntt 2^{k}: forward {fwd:.3} ms, inverse coset {coset:.3} ms");
                }
            }
            Cmd::H(lo, hi) => {
                for k in lo..=hi {
                    let d = Domain::new(k).unwrap();
                    let host: Vec<PinnedVec<Scalar>> = (0..3).map(|j| scalars_in(&b, d.size(), 10 + j)).collect();
                    let mut best = f64::MAX;
                    for _ in 0..3 {
                        let bufs: Vec<_> = host.iter().map(|h| b.upload_scalars(h.clone()).unwrap()).collect();
                        b.synchronize().unwrap();
                        let mut it = bufs.into_iter();
                        let (x, y, z) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
                        let t = Instant::now();
                        let h = b.compute_h(x, y, z, &d).unwrap();
                        b.synchronize().unwrap();
                        best = best.min(t.elapsed().as_secs_f64() * 1e3);
                        drop(h);
                    }
                    println!("compute_h 2^{k} (6 NTTs, product, difference): {best:.3} ms");
                    // With the copies: a, b, c uploaded from pinned buffers, then compute_h, whose
                    // transforms of a start once a has arrived (overlapped), against waiting for
                    // all three copies first (sequential). Interleaved, best of 3 each.
                    let (mut seq, mut ovl) = (f64::MAX, f64::MAX);
                    for _ in 0..3 {
                        for overlapped in [false, true] {
                            let copies: Vec<PinnedVec<Scalar>> = host.to_vec();
                            let t = Instant::now();
                            let bufs: Vec<_> = copies.into_iter().map(|h| b.upload_scalars(h).unwrap()).collect();
                            if !overlapped {
                                b.synchronize().unwrap();
                            }
                            let mut it = bufs.into_iter();
                            let h = b.compute_h(it.next().unwrap(), it.next().unwrap(), it.next().unwrap(), &d).unwrap();
                            b.synchronize().unwrap();
                            let ms = t.elapsed().as_secs_f64() * 1e3;
                            let best = if overlapped { &mut ovl } else { &mut seq };
                            *best = best.min(ms);
                            drop(h);
                        }
                    }
                    println!("upload a, b, c + compute_h 2^{k}: overlapped {ovl:.3} ms, sequential {seq:.3} ms ({:.2}x)", seq / ovl);
                }
            }
            Cmd::Field => {
                // Product throughput: 2^20 threads × 4 chains × ITERS products, best of 3.
                let (threads, iters) = (1u32 << 20, 64u32);
                let products = threads as f64 * 4.0 * iters as f64;
                let mut x = 0x2545_f491_4f6c_dd1du64;
                let mut limbs = |top_mask: u64, n: usize| -> Vec<u8> {
                    let mut v = Vec::with_capacity(1024 * 8 * n);
                    for e in 0..1024 * n {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        // Top limb below the modulus's top limb: a valid (reduced) element.
                        let w = if e % n == n - 1 { x & top_mask } else { x };
                        v.extend_from_slice(&w.to_le_bytes());
                    }
                    v
                };
                let fr = limbs((1 << 62) - 1, 4);
                let fp = limbs((1 << 60) - 1, 6);
                for (name, kernel, input) in [
                    ("Fr", "bench_fr_mul", &fr),
                    ("Fp", "bench_fp_mul", &fp),
                    ("Fr (FP64 units, experimental)", "bench_fr_mul_fp64", &fr),
                    ("Fp (FP64 units, experimental)", "bench_fp_mul_fp64", &fp),
                ] {
                    let ms = time(3, || {
                        b.product_throughput(kernel, input, threads, iters).unwrap();
                    });
                    println!("{name} product throughput: {:.3e} products/s ({products:.3e} products in {ms:.3} ms)", products / (ms * 1e-3));
                }
                // Latency of the batch-affine MSM's last-level inversions (one per thread).
                for n in [1usize, 4096] {
                    let input: Vec<u8> = fp.iter().copied().cycle().take(48 * n).collect();
                    let ms = (0..4).map(|_| b.inversion_seconds(&input).unwrap() * 1e3).skip(1).fold(f64::MAX, f64::min);
                    println!("Fp inversion, {n} in one launch: {ms:.3} ms (best of 3 after a warm-up)");
                }
            }
            Cmd::G1(lo, hi, streamed) => {
                // g1s (streamed): the bases stay in host memory and are streamed in 2^22-point chunks.
                let (pts, how) = host.g1(1 << hi);
                let bases = if streamed { b.load_g1_streamed(&pts, 1 << 22).unwrap() } else { b.load_g1(pts).unwrap() };
                println!("# g1 bases: 2^{hi} {how}");
                let label = format!("{}{}", if streamed { " (streamed bases)" } else { "" }, bits_label(bits));
                for k in lo..=hi {
                    let n = 1usize << k;
                    let s = b.upload_scalars(with_bits(scalars_in(&b, n, 4), bits, 4)).unwrap();
                    let ms = time(2, || {
                        b.msm_g1_with(&bases, 0, MsmScalars { buf: &s, len: n, density: None }, cfg).unwrap();
                    });
                    println!("msm g1 2^{k}{label}: {ms:.2} ms");
                }
            }
            Cmd::G2(lo, hi) => {
                let (pts, how) = host.g2(1 << hi);
                let bases = b.load_g2(pts).unwrap();
                println!("# g2 bases: 2^{hi} {how}");
                for k in lo..=hi {
                    let n = 1usize << k;
                    let s = b.upload_scalars(with_bits(scalars_in(&b, n, 5), bits, 5)).unwrap();
                    let ms = time(2, || {
                        b.msm_g2_with(&bases, 0, MsmScalars { buf: &s, len: n, density: None }, cfg).unwrap();
                    });
                    println!("msm g2 2^{k}{}: {ms:.2} ms", bits_label(bits));
                }
            }
            Cmd::Points(lo, hi) => {
                // The check's work does not depend on the point: 2^20 distinct points, repeated.
                let n = 1usize << hi;
                let distinct = n.min(1 << 20);
                let t = Instant::now();
                let g1: Vec<G1Affine> = g1_points(distinct).into_iter().cycle().take(n).collect();
                let g2: Vec<G2Affine> = g2_points(distinct).into_iter().cycle().take(n).collect();
                println!("# points: 2^{hi} G1 and G2 generated in {:.1} s", t.elapsed().as_secs_f64());
                for k in ["check_points_g1", "check_points_g2"] {
                    println!("# regs {k}: {:?}", b.kernel_regs(k));
                }
                for k in lo..=hi {
                    let m = 1usize << k;
                    let ms1 = time(2, || assert_eq!(b.first_invalid_g1(&g1[..m]).unwrap(), None));
                    let ms2 = time(2, || assert_eq!(b.first_invalid_g2(&g2[..m]).unwrap(), None));
                    let (r1, r2) = (m as f64 / ms1 / 1e3, m as f64 / ms2 / 1e3);
                    println!(
                        "points 2^{k}: G1 {ms1:.2} ms ({r1:.1} M points/s, {:.1} GB/s), G2 {ms2:.2} ms ({r2:.1} M points/s); 4.5e8 G1 + 2.5e7 G2: {:.1} s",
                        m as f64 * 96.0 / ms1 / 1e6,
                        450.0 / r1 + 25.0 / r2
                    );
                }
            }
            Cmd::Overlap(k, p) => {
                let d = Domain::new(k).unwrap();
                let host: Vec<PinnedVec<Scalar>> = (0..3).map(|j| scalars_in(&b, d.size(), 20 + j)).collect();
                let parts = |p: u32| -> Vec<Vec<PinnedVec<Scalar>>> { (0..p).map(|_| host.to_vec()).collect() };
                let run = |work: Vec<Vec<PinnedVec<Scalar>>>, overlapped: bool| -> f64 {
                    b.synchronize().unwrap();
                    let count = work.len() as f64;
                    let t = Instant::now();
                    if overlapped {
                        std::thread::scope(|sc| {
                            let (tx, rx) = std::sync::mpsc::sync_channel(1);
                            let bb = b.clone();
                            sc.spawn(move || {
                                for abc in work {
                                    let up: Vec<_> = abc.into_iter().map(|h| bb.upload_scalars(h).unwrap()).collect();
                                    if tx.send(up).is_err() {
                                        return;
                                    }
                                }
                            });
                            for up in rx {
                                let mut it = up.into_iter();
                                let h = b.compute_h(it.next().unwrap(), it.next().unwrap(), it.next().unwrap(), &d).unwrap();
                                b.synchronize().unwrap();
                                drop(h);
                            }
                        });
                    } else {
                        for abc in work {
                            let up: Vec<_> = abc.into_iter().map(|h| b.upload_scalars(h).unwrap()).collect();
                            let mut it = up.into_iter();
                            let h = b.compute_h(it.next().unwrap(), it.next().unwrap(), it.next().unwrap(), &d).unwrap();
                            b.synchronize().unwrap();
                            drop(h);
                        }
                    }
                    t.elapsed().as_secs_f64() * 1e3 / count
                };
                let _ = run(parts(1), false); // warm-up
                let (mut seq, mut ovl) = (f64::MAX, f64::MAX);
                for _ in 0..2 {
                    seq = seq.min(run(parts(p), false));
                    ovl = ovl.min(run(parts(p), true));
                }
                println!(
                    "overlap 2^{k} x {p} partitions (upload a,b,c + compute_h): sequential {seq:.2} ms/partition, overlapped {ovl:.2} ms/partition ({:.2}x)",
                    seq / ovl
                );
            }
            Cmd::Windows(lo, hi, g1) => {
                let (g1b, g2b) = if g1 { (Some(b.load_g1(host.g1(1 << hi).0).unwrap()), None) } else { (None, Some(b.load_g2(host.g2(1 << hi).0).unwrap())) };
                for k in lo..=hi {
                    let n = 1usize << k;
                    let s = b.upload_scalars(scalars_in(&b, n, 6)).unwrap();
                    let sc = || MsmScalars { buf: &s, len: n, density: None };
                    let mut row = Vec::new();
                    for &bits in &cs {
                        let with_c = MsmConfig { window_bits: Some(bits), ..cfg };
                        let ms = time(2, || match (&g1b, &g2b) {
                            (Some(bs), _) => drop(b.msm_g1_with(bs, 0, sc(), with_c).unwrap()),
                            (_, Some(bs)) => drop(b.msm_g2_with(bs, 0, sc(), with_c).unwrap()),
                            _ => unreachable!(),
                        });
                        row.push(format!("c={bits} {ms:.2}"));
                    }
                    println!("msm {} 2^{k} (ms): {}", if g1 { "g1" } else { "g2" }, row.join(", "));
                }
            }
        }
    }
}
