//! Whole-partition proving benchmark: per-stage times of one proof, and steady-state
//! throughput with synthesis pipelined against the backend, on every available backend, on the
//! built-in circuits. Every stage runs through the worker (`cuzk-worker`: one `BackendWorker`
//! per backend, parameters made resident with `load_params`, then `run_stage` per stage, as
//! the daemon dispatches them). Proofs are verified and must be byte-identical across
//! backends.
//!
//! ```sh
//! cargo bench -p cuzk-tests --bench prove -- --logs 16,18 --backends cpu,cuda
//! ```
//!
//! Arguments (cargo's own `--bench` is ignored; the values shown are the defaults):
//!
//! - `--logs 14,16`: log2 domain sizes;
//! - `--circuits sha256-chain,squaring-chain`;
//! - `--backends cpu,cuda` (a backend that is not available is skipped);
//! - `--reps 3`: timed proofs after a warm-up proof; 0: one proof without the warm-up, for the
//!   largest sizes;
//! - `--cpu-max-log 20`: the largest size run on the CPU backend;
//! - `--pipeline 6`: proofs in the throughput run (0 skips it);
//! - `--synth-workers N`: threads synthesizing and uploading in the throughput run (default:
//!   cores / 2);
//! - `--matrices on`: synthesize through the constraint matrices, recorded once per circuit
//!   and backend before the timed proofs (`off`: plain synthesis);
//! - `--stage-wait on`: wait for the device at the end of each device stage, so each stage is
//!   timed alone (`off`: no waits, so uploads overlap the transforms as in production, a stage
//!   column is the time its call took to return, and "first upload → proof" is the latency);
//!   the throughput run never waits;
//! - `--timing-params-from LOG` (default: never): from this log size on, use timing-only
//!   parameters: the right shape, pseudo-random points instead of a trusted setup, so proofs
//!   are not verified; generating real parameters at 2^24 and beyond costs minutes of the GPU
//!   host's time;
//! - `--timing-params-in-memory`: make timing-only parameters resident straight from memory
//!   (`ProvingKey::load`) instead of through a parameter file. Parameters reach the worker only
//!   as a file (`LoadTask`), so without this flag they are written to a file in the temporary
//!   directory (`TMPDIR`) and loaded from there; at 2^27 that file would be 77 GB. With it,
//!   upload, MSM and finalize run on that key, synthesis and the NTT stage still through the
//!   backend's worker; it needs `--matrices off` (the key's upload takes the full synthesis
//!   record).

use std::path::PathBuf;
use std::sync::mpsc::sync_channel;
use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::Scalar;
use cuzk_backend_cpu::CpuBackend;
use cuzk_backend_cuda::CudaBackend;
use cuzk_circuits::CircuitKind;
use cuzk_core::backend::Backend;
use cuzk_core::engine::{CircuitId, DeviceId, JobId, Location, PartitionId, Stage};
use cuzk_core::params::{Parameters, Validation, VerifyingKey};
use cuzk_core::proof::{verify, Proof};
use cuzk_core::prover::{finalize, msms, upload, ProvingKey};
use cuzk_core::synth::{synthesize, SizeHint};
use cuzk_worker::matrices::MatrixCache;
use cuzk_worker::{BackendWorker, BuiltinShape, LoadTask, PartData, StageInput, StageOutput, StageTask, Work, WorkError, Worker};
use ff::Field;
use rand::SeedableRng;

const USAGE: &str = "usage: cargo bench -p cuzk-tests --bench prove -- [options]
  --logs LOGS                  log2 domain sizes, comma-separated (default 14,16)
  --circuits NAMES             sha256-chain, squaring-chain (default both)
  --backends NAMES             cpu, cuda (default cpu,cuda)
  --reps N                     timed proofs after a warm-up; 0: one proof, no warm-up (default 3)
  --cpu-max-log LOG            largest size run on the CPU backend (default 20)
  --pipeline N                 proofs in the throughput run, 0 skips it (default 6)
  --synth-workers N            synthesis threads in the throughput run (default cores / 2)
  --matrices on|off            synthesis through recorded constraint matrices (default on)
  --stage-wait on|off          wait for the device after each device stage (default on)
  --timing-params-from LOG     timing-only parameters from this size on (default never)
  --timing-params-in-memory    make timing-only parameters resident without a parameter file
                               (with --matrices off)";

/// What the run varies.
struct Args {
    logs: Vec<u32>,
    circuits: Vec<CircuitKind>,
    cpu: bool,
    cuda: bool,
    reps: usize,
    cpu_max_log: u32,
    pipeline: usize,
    synth_workers: usize,
    matrices: bool,
    stage_wait: bool,
    timing_from: u32,
    timing_in_memory: bool,
}

fn list(v: &str) -> impl Iterator<Item = &str> {
    v.split(',').map(str::trim).filter(|s| !s.is_empty())
}

fn on_off(name: &str, v: &str) -> Result<bool, String> {
    match v {
        "on" | "1" | "true" => Ok(true),
        "off" | "0" | "false" => Ok(false),
        _ => Err(format!("{name} takes on or off, not {v:?}")),
    }
}

impl Args {
    /// Parses `--name value` and `--name=value`; `None` for `--help`.
    fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Args>, String> {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let mut a = Args {
            logs: vec![14, 16],
            circuits: vec![CircuitKind::Sha256Chain, CircuitKind::SquaringChain],
            cpu: true,
            cuda: true,
            reps: 3,
            cpu_max_log: 20,
            pipeline: 6,
            synth_workers: (cores / 2).max(1),
            matrices: true,
            stage_wait: true,
            timing_from: u32::MAX,
            timing_in_memory: false,
        };
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "--bench" => continue, // passed by cargo bench
                "-h" | "--help" => return Ok(None),
                "--timing-params-in-memory" => {
                    a.timing_in_memory = true;
                    continue;
                }
                _ => {}
            }
            let (name, inline) = match arg.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (arg.clone(), None),
            };
            const VALUED: [&str; 10] = [
                "--logs",
                "--circuits",
                "--backends",
                "--reps",
                "--cpu-max-log",
                "--pipeline",
                "--synth-workers",
                "--matrices",
                "--stage-wait",
                "--timing-params-from",
            ];
            if !VALUED.contains(&name.as_str()) {
                return Err(format!("unknown argument {arg:?}"));
            }
            let Some(v) = inline.or_else(|| it.next()) else { return Err(format!("{name} needs a value")) };
            let number = || v.parse::<u32>().map_err(|_| format!("{name} takes a number, not {v:?}"));
            match name.as_str() {
                "--logs" => {
                    a.logs = list(&v)
                        .map(|s| s.parse().ok().filter(|k| *k <= cuzk_circuits::MAX_LOG_SIZE))
                        .collect::<Option<_>>()
                        .ok_or_else(|| format!("--logs takes log2 sizes up to {}, not {v:?}", cuzk_circuits::MAX_LOG_SIZE))?
                }
                "--circuits" => a.circuits = list(&v).map(CircuitKind::from_name).collect::<Result<_, _>>().map_err(|e| format!("--circuits: {e}"))?,
                "--backends" => {
                    (a.cpu, a.cuda) = (false, false);
                    for b in list(&v) {
                        match b {
                            "cpu" => a.cpu = true,
                            "cuda" => a.cuda = true,
                            _ => return Err(format!("--backends takes cpu and cuda, not {b:?}")),
                        }
                    }
                }
                "--reps" => a.reps = number()? as usize,
                "--cpu-max-log" => a.cpu_max_log = number()?,
                "--pipeline" => a.pipeline = number()? as usize,
                "--synth-workers" => a.synth_workers = number()?.max(1) as usize,
                "--matrices" => a.matrices = on_off(&name, &v)?,
                "--stage-wait" => a.stage_wait = on_off(&name, &v)?,
                _ => a.timing_from = number()?,
            }
        }
        if a.timing_in_memory && a.matrices {
            return Err("--timing-params-in-memory needs --matrices off".into());
        }
        Ok(Some(a))
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Per-stage medians of one backend on one circuit.
struct Row {
    stages: [f64; 5],
    total: f64,
    pipelined: Option<f64>,
    proof: [u8; 192],
}

/// One circuit at one size, as every backend runs it.
struct Case<'a> {
    kind: CircuitKind,
    k: u32,
    shape: BuiltinShape,
    circuit: CircuitId,
    /// Real parameters: proofs are verified.
    check: bool,
    args: &'a Args,
}

/// The data a stage produced for the next one.
fn data<D>(out: StageOutput<D>) -> D {
    match out {
        StageOutput::Data(d) | StageOutput::Synthesized { data: d, .. } => d,
        StageOutput::Proof(_) => panic!("a stage before finalize produced a proof"),
    }
}

fn device_stage(stage: Stage) -> bool {
    matches!(stage, Stage::Upload | Stage::Ntt | Stage::Msm)
}

fn location(stage: Stage) -> Location {
    if device_stage(stage) {
        Location::Device(DeviceId(0))
    } else {
        Location::Host
    }
}

/// A proof, its public inputs (without `ONE`) and the time of each stage.
struct Timed {
    proof: Proof,
    public: Vec<Scalar>,
    times: Vec<(Stage, Duration)>,
}

/// One proof through `worker`, stage after stage; with `stage_wait`, each device stage's time
/// includes waiting for the device.
fn prove_timed<B: Backend, W: Worker<Data = PartData<B>>>(
    worker: &W,
    backend: &B,
    case: &Case,
    partition: PartitionId,
    seed: u64,
    rs: (Scalar, Scalar),
) -> Result<Timed, WorkError> {
    let mut input = StageInput::Circuit(Work::Builtin(case.shape, seed));
    let mut public = Vec::new();
    let mut times = Vec::new();
    for stage in Stage::ALL {
        let t = Instant::now();
        let out = worker.run_stage(StageTask {
            partition,
            stage,
            location: location(stage),
            circuit: case.circuit,
            input,
            verify_with: None,
            randomness: Some(rs),
        })?;
        if case.args.stage_wait && device_stage(stage) {
            backend.wait_idle()?;
        }
        times.push((stage, t.elapsed()));
        input = match out {
            StageOutput::Synthesized { data, public: p } => {
                public = p;
                StageInput::Data(data)
            }
            StageOutput::Data(d) => StageInput::Data(d),
            StageOutput::Proof(proof) => return Ok(Timed { proof, public, times }),
        };
    }
    Err(WorkError::Internal("finalize produced no proof".into()))
}

/// Records the constraint matrices of `case` in `cache` (before the timed proofs, so that no
/// timed synthesis records them); with `compare`, also prints synthesis per constraint, plain
/// and through the matrices, on this host (one thread for the witness; the sparse products
/// use all cores).
fn record_matrices(cache: &MatrixCache, name: &str, case: &Case, compare: bool) {
    let t = Instant::now();
    let Some(m) = cache.get_or_record(case.shape.into(), &case.kind.instance(case.k, 0).expect("circuit")) else {
        panic!("{}: the circuit cannot be recorded", case.shape.id());
    };
    eprintln!("  {name}: matrices recorded in {:.1} ms: {} entries, {:.1} MiB", ms(t.elapsed()), m.num_entries(), m.heap_bytes() as f64 / (1 << 20) as f64);
    if !compare {
        return;
    }
    let c = case.kind.instance(case.k, 5).expect("circuit");
    let t = Instant::now();
    let plain = synthesize(c.clone(), cuzk_core::alloc::heap(), SizeHint::default()).expect("synthesize");
    let tp = t.elapsed();
    let t = Instant::now();
    let cached = cuzk_worker::matrices::synthesize(&m, c, cuzk_core::alloc::heap()).expect("synthesize");
    let tc = t.elapsed();
    assert!(*plain.a == *cached.a && *plain.c == *cached.c && *plain.aux == *cached.aux, "the matrices disagree with plain synthesis");
    let per = |d: Duration| d.as_secs_f64() * 1e9 / plain.num_constraints() as f64;
    println!(
        "synthesis {} 2^{}: plain {:.1} ms ({:.0} ns/constraint), cached {:.1} ms ({:.0} ns/constraint), {:.1}× faster",
        case.kind.name(),
        case.k,
        ms(tp),
        per(tp),
        ms(tc),
        per(tc),
        tp.as_secs_f64() / tc.as_secs_f64()
    );
}

/// The per-stage run and the throughput run of `case` on `worker`, whose parameters for
/// `case.circuit` are resident. `vk` checks the proofs when `case.check`.
fn run<B: Backend, W: Worker<Data = PartData<B>>>(worker: &W, backend: &B, vk: Option<&VerifyingKey>, case: &Case) -> Row {
    let Args { reps, pipeline, synth_workers: workers, stage_wait, .. } = *case.args;
    let check = |proof: &Proof, public: &[Scalar]| {
        if case.check {
            let vk = vk.expect("verifying key");
            assert!(verify(vk, proof, public).expect("verify"), "{}: proof does not verify", backend.name());
        }
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(case.k as u64);
    let rs = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let mut per_stage: Vec<Vec<f64>> = vec![Vec::new(); 5];
    let mut totals = Vec::new();
    let mut proof0 = [0u8; 192];
    // reps = 0: a single proof that is also timed (no warm-up proof).
    let warmup = usize::from(reps > 0);
    for rep in 0..reps.max(1) + warmup {
        let partition = PartitionId { job: JobId(0), index: rep as u32 };
        let Timed { proof, public, times } = prove_timed(worker, backend, case, partition, 1, rs).expect("prove");
        let total: Duration = times.iter().map(|(_, d)| *d).sum();
        let gpu = total - times[0].1;
        eprintln!(
            "  {} 2^{}: first upload → proof {:.1} ms (stage waits {})",
            case.kind.name(),
            case.k,
            ms(gpu),
            if stage_wait { "on: the stages are serialized" } else { "off: copies overlap the transforms" }
        );
        check(&proof, &public);
        proof0 = proof.to_bytes();
        if rep < warmup {
            continue; // warm-up: kernel compilation, twiddles, pools
        }
        for (stage, d) in times {
            per_stage[Stage::ALL.iter().position(|s| *s == stage).unwrap()].push(ms(d));
        }
        totals.push(ms(total));
    }
    let stages = std::array::from_fn(|i| median(per_stage[i].clone()));

    // Steady state: `workers` threads synthesize and upload while this thread runs the GPU
    // stages, each stage one `run_stage` call; no stage waits.
    let pipelined = (pipeline > 0).then(|| {
        let workers = workers.max(1);
        let task = |i: usize, stage: Stage, input| StageTask {
            partition: PartitionId { job: JobId(1), index: i as u32 },
            stage,
            location: location(stage),
            circuit: case.circuit,
            input,
            verify_with: None,
            randomness: Some(rs),
        };
        let t = Instant::now();
        std::thread::scope(|scope| {
            let (tx, rx) = sync_channel(workers);
            for w in 0..workers {
                let tx = tx.clone();
                scope.spawn(move || {
                    for i in (w..pipeline).step_by(workers) {
                        let (synth, public) = match worker.run_stage(task(i, Stage::Synthesize, StageInput::Circuit(Work::Builtin(case.shape, 100 + i as u64))))
                        {
                            Ok(StageOutput::Synthesized { data, public }) => (data, public),
                            Ok(_) => panic!("synthesis produced no record"),
                            Err(e) => panic!("synthesize: {e}"),
                        };
                        // The synthesis thread uploads too: on the CUDA backend the copy runs
                        // on its own stream while the GPU works on earlier proofs.
                        let up = data(worker.run_stage(task(i, Stage::Upload, StageInput::Data(synth))).expect("upload"));
                        if tx.send((i, up, public)).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(tx);
            for (i, up, public) in rx {
                let h = data(worker.run_stage(task(i, Stage::Ntt, StageInput::Data(up))).expect("ntt"));
                let m = data(worker.run_stage(task(i, Stage::Msm, StageInput::Data(h))).expect("msm"));
                match worker.run_stage(task(i, Stage::Finalize, StageInput::Data(m))).expect("finalize") {
                    StageOutput::Proof(proof) => check(&proof, &public),
                    _ => panic!("finalize produced no proof"),
                }
            }
        });
        ms(t.elapsed()) / pipeline as f64
    });
    Row { stages, total: median(totals), pipelined, proof: proof0 }
}

/// Timing-only parameters made resident from memory (`--timing-params-in-memory`): upload,
/// MSM and finalize run on `key`; synthesis (plain: `--matrices off`) and the NTT stage, which
/// need no parameters, on the backend's worker.
struct InMemoryKey<B: Backend> {
    worker: Arc<BackendWorker<B>>,
    key: ProvingKey<B>,
}

impl<B: Backend + 'static> Worker for InMemoryKey<B> {
    type Data = PartData<B>;

    fn devices(&self) -> usize {
        1
    }

    fn device_name(&self, d: usize) -> String {
        self.worker.device_name(d)
    }

    fn run_stage(&self, task: StageTask<PartData<B>>) -> Result<StageOutput<PartData<B>>, WorkError> {
        let backend = self.worker.backend(0).ok_or_else(|| WorkError::Internal("no device 0".into()))?;
        Ok(match (task.stage, task.input) {
            (Stage::Upload, StageInput::Data(PartData::Synthesized(s))) => StageOutput::Data(PartData::Uploaded(upload(&**backend, &self.key, s)?)),
            (Stage::Msm, StageInput::Data(PartData::H { h, domain, witness })) => {
                StageOutput::Data(PartData::Msm(msms(&**backend, &self.key, &h, &domain, &witness)?))
            }
            (Stage::Finalize, StageInput::Data(PartData::Msm(m))) => {
                let (r, s) = task.randomness.ok_or_else(|| WorkError::Internal("no r, s".into()))?;
                StageOutput::Proof(finalize(&self.key.vk, &m, r, s))
            }
            (stage, input) => return self.worker.run_stage(StageTask { stage, input, ..task }),
        })
    }

    fn load_params(&self, _: LoadTask) -> Result<(), WorkError> {
        Err(WorkError::Internal("the key is resident already".into()))
    }

    fn evict_params(&self, _: CircuitId, _: Location) {}
}

/// One backend: its worker, whose matrix cache records each circuit once.
struct Side<B: Backend> {
    name: String,
    worker: Arc<BackendWorker<B>>,
}

impl<B: Backend + 'static> Side<B> {
    fn new(backend: B, matrices: bool) -> Self {
        let name = backend.name();
        let w = BackendWorker::new(vec![Arc::new(backend)]);
        Side { name, worker: Arc::new(if matrices { w } else { w.without_matrix_cache() }) }
    }

    fn backend(&self) -> &B {
        self.worker.backend(0).expect("device 0")
    }

    fn record(&self, case: &Case, compare: bool) {
        if let Some(cache) = self.worker.matrices() {
            record_matrices(cache, &self.name, case, compare);
        }
    }

    /// Loads the parameters from `file` through the worker, runs `case`, evicts them.
    fn run_from_file(&self, file: &ParamsFile, case: &Case, compare: bool) -> Row {
        let t = Instant::now();
        let at = Location::Device(DeviceId(0));
        let task = LoadTask { circuit: case.circuit, at, path: file.0.clone(), validation: Validation::Trusted, from_host: false };
        if let Err(e) = self.worker.load_params(task) {
            panic!("{}: loading {}: {e}", self.name, file.0.display());
        }
        eprintln!("  {}: parameters resident in {:.1} ms", self.name, ms(t.elapsed()));
        self.record(case, compare);
        let vk = self.worker.verifying_key(case.circuit);
        let row = run(&*self.worker, self.backend(), vk.as_deref(), case);
        self.worker.evict_params(case.circuit, at);
        row
    }

    /// Makes `params` resident without a file (timing-only parameters), runs `case`.
    fn run_in_memory(&self, params: Parameters, case: &Case) -> Row {
        let t = Instant::now();
        let key = ProvingKey::load(self.backend(), params).expect("load key");
        eprintln!("  {}: parameters resident (from memory) in {:.1} ms", self.name, ms(t.elapsed()));
        run(&InMemoryKey { worker: self.worker.clone(), key }, self.backend(), None, case)
    }
}

/// A parameter file in the temporary directory, removed when dropped.
struct ParamsFile(PathBuf);

impl ParamsFile {
    fn write(params: &Parameters, case: &Case) -> std::io::Result<ParamsFile> {
        let path = std::env::temp_dir().join(format!("cuzk-prove-bench-{}-{}-{}.params", std::process::id(), case.kind.name(), case.k));
        let file = ParamsFile(path);
        let mut w = std::io::BufWriter::with_capacity(1 << 22, std::fs::File::create(&file.0)?);
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

/// Parameters with the shape of `kind` at `2^k` but pseudo-random points (`P + i·Q`): for
/// timing only, since nobody knows their discrete logs and no proof made with them verifies.
/// Above 2^20 points a vector repeats its first 2^20 points (the kernels' work does not depend
/// on the points; generating 2^26 distinct G1 and G2 points took minutes).
fn timing_params(kind: CircuitKind, k: u32) -> Parameters {
    use blstrs::{G1Projective, G2Projective};
    use cuzk_tests::random_points;
    use group::{Curve, Group};
    const DISTINCT: usize = 1 << 20;
    fn tiled<T: Copy>(len: usize, make: &mut dyn FnMut(usize) -> Vec<T>) -> Vec<T> {
        let base = make(len.min(DISTINCT));
        base.iter().copied().cycle().take(len).collect()
    }
    let s = synthesize(kind.instance(k, 0).unwrap(), cuzk_core::alloc::heap(), SizeHint::default()).expect("synthesize");
    let n = cuzk_core::domain::Domain::for_len(s.num_constraints()).unwrap().size();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(k as u64);
    let mut g1s = |len| tiled(len, &mut |m| random_points::<G1Projective>(m, &mut rng));
    let g = G1Projective::generator().to_affine();
    let h = G2Projective::generator().to_affine();
    let b = s.b_input_density.count() + s.b_aux_density.count();
    Parameters {
        vk: VerifyingKey { alpha_g1: g, beta_g1: g, beta_g2: h, gamma_g2: h, delta_g1: g, delta_g2: h, ic: g1s(s.input.len()) },
        h: g1s(n - 1),
        l: g1s(s.aux.len()),
        a: g1s(s.input.len() + s.a_aux_density.count()),
        b_g1: g1s(b),
        b_g2: tiled(b, &mut |m| random_points::<G2Projective>(m, &mut rng)),
    }
}

fn main() {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{USAGE}");
            return;
        }
        Err(e) => {
            eprintln!("prove bench: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());

    let cpu = args.cpu.then(|| Side::new(CpuBackend::new(), args.matrices));
    let cuda = if args.cuda {
        match CudaBackend::first() {
            Ok(b) => Some(Side::new(b, args.matrices)),
            Err(e) => {
                eprintln!("SKIPPED cuda backend: {e}");
                None
            }
        }
    } else {
        None
    };

    println!(
        "host: {cores} cores; synthesis workers in the pipelined run: {}; synthesis through recorded matrices: {}",
        args.synth_workers,
        if args.matrices { "on" } else { "off" }
    );
    println!();
    println!("| circuit | domain | backend | synth ms | upload ms | ntt ms | msm ms | finalize ms | one proof ms | pipelined ms/proof |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut next_id = 0;
    for &kind in &args.circuits {
        for &k in &args.logs {
            if k < kind.min_log_size() {
                continue;
            }
            let timing = k >= args.timing_from;
            let shape = BuiltinShape::new(kind, k).expect("shape");
            let case = Case { kind, k, shape, circuit: CircuitId(next_id), check: !timing, args: &args };
            next_id += 1;
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0xbe9c4 + k as u64);
            let t = Instant::now();
            let params = if timing { timing_params(kind, k) } else { cuzk_setup::generate_parameters(kind.instance(k, 0).unwrap(), &mut rng).expect("setup") };
            let what = if timing { "timing-only parameters (proofs not verified)" } else { "parameters" };
            eprintln!("{} 2^{k}: {what} generated in {:.1} s", kind.name(), t.elapsed().as_secs_f64());
            if timing {
                println!("({} 2^{k}: timing-only parameters, proofs not verified)", kind.name());
            }
            let on_cpu = cpu.as_ref().filter(|_| k <= args.cpu_max_log);
            let mut rows: Vec<(String, Row)> = Vec::new();
            if timing && args.timing_in_memory {
                // The last backend takes the parameters (no copy: at 2^27 they are ~77 GB).
                let mut params = Some(params);
                if let Some(c) = on_cpu {
                    let p = if cuda.is_some() { params.clone().unwrap() } else { params.take().unwrap() };
                    rows.push((c.name.clone(), c.run_in_memory(p, &case)));
                }
                if let Some(g) = &cuda {
                    rows.push((g.name.clone(), g.run_in_memory(params.take().unwrap(), &case)));
                }
            } else {
                let t = Instant::now();
                let file = ParamsFile::write(&params, &case).unwrap_or_else(|e| panic!("writing the parameters to {}: {e}", std::env::temp_dir().display()));
                drop(params);
                eprintln!("  parameter file written in {:.1} s", t.elapsed().as_secs_f64());
                if let Some(c) = on_cpu {
                    rows.push((c.name.clone(), c.run_from_file(&file, &case, true)));
                }
                if let Some(g) = &cuda {
                    rows.push((g.name.clone(), g.run_from_file(&file, &case, on_cpu.is_none())));
                }
            }
            for (name, row) in &rows {
                let s = row.stages;
                println!(
                    "| {} | 2^{k} | {name} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} |",
                    kind.name(),
                    s[0],
                    s[1],
                    s[2],
                    s[3],
                    s[4],
                    row.total,
                    row.pipelined.map_or("-".into(), |p| format!("{p:.1}"))
                );
            }
            if rows.len() == 2 {
                assert_eq!(rows[0].1.proof, rows[1].1.proof, "backends disagree on the proof bytes");
                let gpu = |r: &Row| r.stages[1] + r.stages[2] + r.stages[3];
                println!(
                    "| | | ratio cpu/gpu | | | | | | {:.1}× (backend stages {:.1}×) | |",
                    rows[0].1.total / rows[1].1.total,
                    gpu(&rows[0].1) / gpu(&rows[1].1)
                );
            }
        }
    }
}
