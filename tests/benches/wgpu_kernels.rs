//! `cuzk-wgpu-kernels`: wgpu against CUDA on the same inputs: forward NTT and dense G1 MSM at
//! 2^16 … 2^22, `compute_h` (each backend's own against the seven-transform composition of
//! its steps, `compute_h_in_steps`), and one whole partition (squaring-chain with timing-only parameters) whose
//! stages run through the worker (`cuzk-worker`, each device stage waited for so it is timed
//! alone). Prints markdown tables with the ratios; results of the two backends are compared
//! (they must be identical).
//!
//! It sits with the benches of cuzk-tests, above both backends and the worker (a backend crate
//! depends on no other backend and not on the worker: `tests/tests/it/layers.rs`).
//!
//! ```sh
//! cargo bench -p cuzk-tests --bench cuzk-wgpu-kernels -- --ntt 16,18,20,22 --msm 16,18,20,22 --h 16,18,20 --proof 20 --reps 3 --cuda on
//! ```
//!
//! Arguments (cargo's own `--bench` is ignored; the values shown are the defaults): `--ntt 16,18,20,22` and `--msm 16,18,20,22`
//! and `--h 16,18,20` (log2 sizes; an empty list skips the part), `--bits 0` (the percentage of
//! the MSM's scalars made 0 or 1), `--proof 20` (log2 size of the partition; 0
//! skips it), `--reps 3` (timed repetitions after a warm-up; the median is shown), `--cuda on`
//! (`off` runs wgpu alone). The backend's own `CUZK_WGPU_ADAPTER` and `CUZK_WGPU_DEVICE_TYPE`
//! pick the adapter. The partition's timing-only parameters are written to a file in the
//! system's temporary directory (`TMPDIR`) for the worker to load, and removed after.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Projective, Scalar};
use cuzk_backend_cuda::CudaBackend;
use cuzk_backend_wgpu::WgpuBackend;
use cuzk_circuits::{BuiltinShape, CircuitKind};
use cuzk_core::alloc::{heap, PinnedVec};
use cuzk_core::backend::{compute_h_in_steps, Backend, MsmScalars, NttDirection};
use cuzk_core::domain::Domain;
use cuzk_core::engine::{CircuitId, DeviceId, Location, Stage};
use cuzk_core::params::{Parameters, Validation, VerifyingKey};
use cuzk_core::synth::{synthesize, SizeHint};
use cuzk_worker::{BackendWorker, LoadTask, ParamSource, Worker};
use ff::Field;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

const USAGE: &str = "usage: cuzk-wgpu-kernels [--ntt LOGS] [--msm LOGS] [--bits PCT] [--h LOGS] [--proof LOG] [--reps N] [--cuda on|off]
  --ntt LOGS    log2 sizes of the forward NTT, comma-separated, empty for none (default 16,18,20,22)
  --msm LOGS    log2 sizes of the dense G1 MSM (default 16,18,20,22)
  --bits PCT    make PCT% of the MSM's scalars 0 or 1 (in equal shares), as Filecoin's witnesses are (default 0)
  --h LOGS      log2 sizes of compute_h, the backend's own and in seven-transform steps (default 16,18,20)
  --proof LOG   log2 size of the whole partition (squaring-chain), 0 to skip (default 20)
  --reps N      timed repetitions after a warm-up, N >= 1 (default 3)
  --cuda on|off compare with the first CUDA device (default on)";

/// What to time.
struct Args {
    ntt: Vec<u32>,
    msm: Vec<u32>,
    bits: u32,
    h: Vec<u32>,
    proof: u32,
    reps: usize,
    cuda: bool,
}

/// The largest log2 size of an NTT or MSM argument.
const MAX_LOG: u32 = 30;

fn log_list(name: &str, v: &str) -> Result<Vec<u32>, String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().ok().filter(|k| *k <= MAX_LOG).ok_or_else(|| format!("{name}: {s:?} is not a log2 size up to {MAX_LOG}")))
        .collect()
}

impl Args {
    /// Parses `--name value` and `--name=value`; `None` for `--help`.
    fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Args>, String> {
        let mut a = Args { ntt: vec![16, 18, 20, 22], msm: vec![16, 18, 20, 22], bits: 0, h: vec![16, 18, 20], proof: 20, reps: 3, cuda: true };
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "--bench" => continue, // passed by cargo bench
                "-h" | "--help" => return Ok(None),
                _ => {}
            }
            let (name, inline) = match arg.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (arg.clone(), None),
            };
            if !matches!(name.as_str(), "--ntt" | "--msm" | "--bits" | "--h" | "--proof" | "--reps" | "--cuda") {
                return Err(format!("unknown argument {arg:?}"));
            }
            let v = match inline.or_else(|| it.next()) {
                Some(v) => v,
                None => return Err(format!("{name} needs a value")),
            };
            let number = || v.parse::<u32>().map_err(|_| format!("{name} takes a number, not {v:?}"));
            match name.as_str() {
                "--ntt" => a.ntt = log_list(&name, &v)?,
                "--msm" => a.msm = log_list(&name, &v)?,
                "--bits" => a.bits = number().ok().filter(|p| *p <= 100).ok_or_else(|| format!("--bits takes a percentage, not {v:?}"))?,
                "--h" => a.h = log_list(&name, &v)?,
                "--proof" => a.proof = number()?,
                "--reps" => a.reps = number()? as usize,
                _ => a.cuda = cuzk_tests::on_off(&name, &v)?,
            }
        }
        if a.reps == 0 {
            return Err("--reps takes at least 1".into());
        }
        if a.proof != 0 {
            BuiltinShape::new(CircuitKind::SquaringChain, a.proof).map_err(|e| format!("--proof {}: {e}", a.proof))?;
        }
        Ok(Some(a))
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Random scalars, in parallel chunks.
fn scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(1 << 14).enumerate().for_each(|(c, o)| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ ((c as u64) << 20));
        o.iter_mut().for_each(|x| *x = Scalar::random(&mut rng));
    });
    out
}

/// `n` distinct points `P + i·Q` (`cuzk_tests::random_points` from a seed).
fn points<G>(n: usize, seed: u64) -> Vec<G::AffineRepr>
where
    G: Curve + Group<Scalar = Scalar> + Send + Sync,
    G::AffineRepr: Copy + Send + Sync,
{
    cuzk_tests::random_points::<G>(n, &mut ChaCha8Rng::seed_from_u64(seed))
}

fn upload<B: Backend>(b: &B, v: &[Scalar]) -> B::Scalars {
    b.upload_scalars(PinnedVec::from_slice_in(v, b.host_allocator()).expect("host memory")).expect("upload")
}

/// Median milliseconds of `reps` forward NTTs (after a warm-up) and the result.
fn time_ntt<B: Backend>(b: &B, input: &[Scalar], domain: &Domain, reps: usize) -> (f64, Vec<Scalar>) {
    let mut buf = upload(b, input);
    b.ntt(&mut buf, domain, NttDirection::Forward, false).expect("ntt");
    let result = b.download_scalars(&buf).expect("download");
    let mut t = Vec::new();
    for _ in 0..reps {
        b.wait_idle().expect("sync");
        let s = Instant::now();
        b.ntt(&mut buf, domain, NttDirection::Forward, false).expect("ntt");
        b.wait_idle().expect("sync");
        t.push(s.elapsed().as_secs_f64() * 1e3);
    }
    (median(t), result)
}

/// Median milliseconds of `reps` dense G1 MSMs (after a warm-up) and the result.
fn time_msm<B: Backend>(b: &B, bases: &[G1Affine], sc: &[Scalar], reps: usize) -> (f64, G1Projective) {
    let buf = upload(b, sc);
    let rb = b.load_g1(bases.to_vec()).expect("load");
    let s = MsmScalars { buf: &buf, len: sc.len(), density: None };
    let result = b.msm_g1(&rb, 0, s).expect("msm");
    let mut t = Vec::new();
    for _ in 0..reps {
        b.wait_idle().expect("sync");
        let st = Instant::now();
        b.msm_g1(&rb, 0, s).expect("msm");
        t.push(st.elapsed().as_secs_f64() * 1e3);
    }
    (median(t), result)
}

/// Median milliseconds of `reps` runs of `compute_h` (the backend's own, or with `in_steps`
/// [`compute_h_in_steps`]) after a warm-up, and the result; the uploads are not timed.
fn time_h<B: Backend>(b: &B, abc: &[Vec<Scalar>; 3], domain: &Domain, in_steps: bool, reps: usize) -> (f64, Vec<Scalar>) {
    let mut t = Vec::new();
    let mut result = Vec::new();
    for rep in 0..=reps {
        let [x, y, z] = abc.each_ref().map(|v| upload(b, v));
        b.wait_idle().expect("sync");
        let s = Instant::now();
        let h = if in_steps { compute_h_in_steps(b, x, y, z, domain) } else { b.compute_h(x, y, z, domain) }.expect("compute_h");
        b.wait_idle().expect("sync");
        if rep > 0 {
            t.push(s.elapsed().as_secs_f64() * 1e3);
        } else {
            result = b.download_scalars(&h).expect("download");
        }
    }
    (median(t), result)
}

/// Parameters of the right shape with pseudo-random points (timing only; proofs do not verify).
fn timing_params(kind: CircuitKind, k: u32) -> Parameters {
    let s = synthesize(kind.instance(k, 0).expect("circuit"), heap(), SizeHint::default()).expect("synthesize");
    let n = Domain::for_len(s.num_constraints()).expect("domain").size();
    let g = G1Projective::generator().to_affine();
    let h = G2Projective::generator().to_affine();
    let b = s.b_input_density.count() + s.b_aux_density.count();
    Parameters {
        vk: VerifyingKey { alpha_g1: g, beta_g1: g, beta_g2: h, gamma_g2: h, delta_g1: g, delta_g2: h, ic: points::<G1Projective>(s.input.len(), 1) },
        h: points::<G1Projective>(n - 1, 2),
        l: points::<G1Projective>(s.aux.len(), 3),
        a: points::<G1Projective>(s.input.len() + s.a_aux_density.count(), 4),
        b_g1: points::<G1Projective>(b, 5),
        b_g2: points::<G2Projective>(b, 6),
    }
}

/// A parameter file in the temporary directory, removed when dropped.
struct ParamsFile(PathBuf);

impl ParamsFile {
    fn write(params: &Parameters, name: &str) -> std::io::Result<ParamsFile> {
        let path = std::env::temp_dir().join(format!("cuzk-wgpu-kernels-{}-{name}.params", std::process::id()));
        let file = ParamsFile(path);
        let mut w = std::io::BufWriter::new(std::fs::File::create(&file.0)?);
        params.write_to(&mut w)?;
        std::io::Write::flush(&mut w)?;
        Ok(file)
    }
}

impl Drop for ParamsFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The partition's circuit id in the workers.
const PARTITION: CircuitId = CircuitId(0);

/// A worker over `backend` with the parameters of `file` resident on its device: plain
/// synthesis (one circuit, proved a few times), every device stage waited for.
fn worker<B: Backend + Clone + 'static>(backend: &B, file: &ParamsFile) -> Result<BackendWorker<B>, cuzk_worker::WorkError> {
    let w = BackendWorker::new(vec![Arc::new(backend.clone())]).without_matrix_cache().with_stage_sync(true);
    let t = Instant::now();
    w.load_params(LoadTask {
        circuit: PARTITION,
        at: Location::Device(DeviceId(0)),
        source: ParamSource::File(file.0.clone()),
        validation: Validation::Trusted,
        from_host: false,
        streamed: false,
    })?;
    eprintln!("{}: parameters resident in {:.1} s", backend.name(), t.elapsed().as_secs_f64());
    Ok(w)
}

/// Per-stage milliseconds (upload, ntt, msm) and the total from the upload to the proof, of
/// one proof through the worker (medians of `reps` after a warm-up), and the proof's bytes.
fn time_proof<B: Backend + 'static>(w: &BackendWorker<B>, shape: BuiltinShape, reps: usize) -> Result<([f64; 3], f64, [u8; 192]), cuzk_worker::WorkError> {
    let rs = (Scalar::from(3u64), Scalar::from(5u64));
    let mut stages = vec![Vec::new(); 3];
    let mut totals = Vec::new();
    let mut bytes = [0u8; 192];
    for rep in 0..=reps {
        let mut times: Vec<(Stage, f64)> = Vec::new();
        // Timing-only parameters: the proof cannot verify.
        let (proof, _) = cuzk_worker::prove_one(w, PARTITION, 0, Arc::new(shape.partition(1).expect("circuit")), Some(rs), false, |stage, took, _| {
            times.push((stage, took.as_secs_f64() * 1e3));
        })?;
        bytes = proof.to_bytes();
        if rep == 0 {
            continue; // warm-up
        }
        let mut total = 0.0;
        for (st, ms) in times {
            let i = match st {
                Stage::Upload => 0,
                Stage::Ntt => 1,
                Stage::Msm => 2,
                Stage::Synthesize => continue,
                Stage::Finalize => {
                    total += ms;
                    continue;
                }
            };
            stages[i].push(ms);
            total += ms;
        }
        totals.push(total);
    }
    let m = |v: &Vec<f64>| {
        if v.is_empty() {
            f64::NAN
        } else {
            median(v.clone())
        }
    };
    Ok(([m(&stages[0]), m(&stages[1]), m(&stages[2])], median(totals), bytes))
}

/// The partition's rows: wgpu and, when given, CUDA on the same timing-only parameters.
fn partition_rows(wgpu: &WgpuBackend, cuda: Option<&CudaBackend>, k: u32, reps: usize) -> Result<(), String> {
    let kind = CircuitKind::SquaringChain;
    let shape = BuiltinShape::new(kind, k).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let file = ParamsFile::write(&timing_params(kind, k), &shape.id()).map_err(|e| format!("writing the timing-only parameters: {e}"))?;
    eprintln!("timing parameters for {} 2^{k} in {:.1} s", kind.name(), t.elapsed().as_secs_f64());
    let (sw, tw, pw) = worker(wgpu, &file).and_then(|w| time_proof(&w, shape, reps)).map_err(|e| format!("wgpu partition: {e}"))?;
    let c = match cuda {
        Some(c) => Some(worker(c, &file).and_then(|w| time_proof(&w, shape, reps)).map_err(|e| format!("cuda partition: {e}"))?),
        None => None,
    };
    let eq = c.as_ref().map_or("-".into(), |(_, _, pc)| (pc == &pw).to_string());
    let names = ["upload", "h (NTTs)", "MSMs"];
    for (i, name) in names.iter().enumerate() {
        let cv = c.as_ref().map(|x| x.0[i]);
        println!("| partition {}: {name} | 2^{k} | {:.2} | {} | {} | |", kind.name(), sw[i], opt(cv), ratio(sw[i], cv));
    }
    let ct = c.as_ref().map(|x| x.1);
    println!("| partition {}: whole proof | 2^{k} | {tw:.2} | {} | {} | {eq} |", kind.name(), opt(ct), ratio(tw, ct));
    Ok(())
}

fn ratio(a: f64, b: Option<f64>) -> String {
    b.map_or("-".into(), |b| format!("{:.2}", a / b))
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.2}"))
}

fn main() {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{USAGE}");
            return;
        }
        Err(e) => {
            eprintln!("cuzk-wgpu-kernels: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let reps = args.reps;
    let wgpu = match WgpuBackend::from_env() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("SKIPPED: no wgpu adapter ({e})");
            return;
        }
    };
    let t = Instant::now();
    wgpu.warm_up().expect("kernels");
    println!(
        "wgpu: {} (kernels compiled in {:.1} s, workgroup {}, max binding {} MiB)",
        wgpu.name(),
        t.elapsed().as_secs_f64(),
        wgpu.gpu().wg,
        wgpu.gpu().max_binding >> 20
    );
    let cuda = if args.cuda {
        match CudaBackend::first() {
            Ok(c) => {
                println!("cuda: {}", c.name());
                Some(c)
            }
            Err(e) => {
                println!("cuda: not available ({e})");
                None
            }
        }
    } else {
        None
    };
    println!();
    println!("| operation | size | wgpu ms | cuda ms | wgpu/cuda | results equal |");
    println!("|---|---|---|---|---|---|");
    for &k in &args.ntt {
        let domain = Domain::new(k).expect("domain");
        let input = scalars(domain.size(), k as u64);
        let (tw, rw) = time_ntt(&wgpu, &input, &domain, reps);
        let c = cuda.as_ref().map(|c| time_ntt(c, &input, &domain, reps));
        let eq = c.as_ref().map_or("-".into(), |(_, rc)| (rc == &rw).to_string());
        println!("| NTT (forward) | 2^{k} | {tw:.2} | {} | {} | {eq} |", opt(c.as_ref().map(|x| x.0)), ratio(tw, c.as_ref().map(|x| x.0)));
    }
    for &k in &args.msm {
        let n = 1usize << k;
        let sc = cuzk_tests::with_bits(scalars(n, 100 + k as u64), args.bits, &mut ChaCha8Rng::seed_from_u64(400 + k as u64));
        let bases = points::<G1Projective>(n, 200 + k as u64);
        let (tw, rw) = time_msm(&wgpu, &bases, &sc, reps);
        let c = cuda.as_ref().map(|c| time_msm(c, &bases, &sc, reps));
        let eq = c.as_ref().map_or("-".into(), |(_, rc)| (rc == &rw).to_string());
        let what = if args.bits == 0 { "dense".to_string() } else { format!("{}% bits", args.bits) };
        println!("| G1 MSM ({what}) | 2^{k} | {tw:.2} | {} | {} | {eq} |", opt(c.as_ref().map(|x| x.0)), ratio(tw, c.as_ref().map(|x| x.0)));
    }
    for &k in &args.h {
        let domain = Domain::new(k).expect("domain");
        let abc = [0, 1, 2].map(|j| scalars(domain.size(), 300 + 3 * k as u64 + j));
        let (tw, rw) = time_h(&wgpu, &abc, &domain, false, reps);
        let (sw, rsw) = time_h(&wgpu, &abc, &domain, true, reps);
        let c = cuda.as_ref().map(|c| (time_h(c, &abc, &domain, false, reps), time_h(c, &abc, &domain, true, reps)));
        let eq = c.as_ref().map_or("-".into(), |((_, rc), _)| (rc == &rw).to_string());
        let own_c = c.as_ref().map(|x| x.0 .0);
        println!("| `compute_h`, the backend's own | 2^{k} | {tw:.2} | {} | {} | {eq} |", opt(own_c), ratio(tw, own_c));
        // Equal here: each backend's steps give what its own compute_h gave.
        let eq = (rsw == rw && c.as_ref().is_none_or(|((_, rc), (_, rsc))| rsc == rc)).to_string();
        let steps_c = c.as_ref().map(|x| x.1 .0);
        println!("| `compute_h` in steps (7 transforms) | 2^{k} | {sw:.2} | {} | {} | {eq} |", opt(steps_c), ratio(sw, steps_c));
    }
    if args.proof > 0 {
        if let Err(e) = partition_rows(&wgpu, cuda.as_ref(), args.proof, reps) {
            eprintln!("cuzk-wgpu-kernels: {e}");
            std::process::exit(1);
        }
    }
}
