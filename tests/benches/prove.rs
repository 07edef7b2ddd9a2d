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
//!   before the timed proofs (`off`: plain synthesis); with them on, a line per case splits
//!   the host's synthesis into witness generation (one thread, all threads) and the sparse
//!   products, and gives the bytes a partition moves host→device;
//! - `--eval gpu`: with the matrices, where the CUDA backend's `a, b, c` come from: `gpu`
//!   (the witness is uploaded and the matrices evaluated on the device), `host` (sparse
//!   products on the host, `a, b, c` copied), or `gpu,host` (both, one row each);
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
//!   the key is handed to the worker directly (`BackendWorker::load_key`).
//!
//! - `--filecoin porep-2k,snap-2k` (default: none): Filecoin partitions through the witness
//!   path and the host path (`prove/filecoin.rs`); with it, the built-in circuits run only
//!   when `--circuits` is given; `--fil-dir DIR` keeps their parameters and sector (default:
//!   `TMPDIR/cuzk-prove-fil`).
//! - `--fil-shapes 32g,64g` (default: none): the witness of synthetic PoRep and SnapDeals partitions at
//!   those sector sizes (real circuit, fabricated values, no proof): Filecoin's gadgets against
//!   the native writer on one thread, and a whole partition on all threads; and a PoRep
//!   partition's matrices recorded sequentially against in parallel on all threads;
//!   `snap-32g` or `porep-32g` times one kind.
//! - `--fil-shares porep-32g,snap-32g` (default: none): the share of 0, 1, small and dense
//!   scalars in the A, B and L MSMs of a synthetic partition of that kind and size.
//! - `--fil-shape-proofs 32g` (default: none): a whole synthetic PoRep C2 (`snap-32g`: a
//!   SnapDeals proof) at that size on each backend, with timing-only parameters of the circuit's exact shape (not verified): one-time
//!   costs, then per partition the witness and upload → proof, and the proof's wall time.
//!
//! The "peak RSS" column is the process's peak resident memory during the one-proof runs,
//! above what it held before them (parameters and matrices already resident).

use std::path::PathBuf;
use std::sync::mpsc::sync_channel;
use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::Scalar;
use cuzk_backend_cpu::CpuBackend;
use cuzk_backend_cuda::CudaBackend;
use cuzk_circuits::{BuiltinShape, CircuitKind};
use cuzk_core::backend::Backend;
use cuzk_core::engine::{CircuitId, DeviceId, JobId, Location, PartitionId, Stage};
use cuzk_core::matrices::ConstraintMatrices;
use cuzk_core::params::{Parameters, Validation, VerifyingKey};
use cuzk_core::proof::{verify, Proof};
use cuzk_core::synth::{synthesize, SizeHint};
use cuzk_worker::{BackendWorker, LoadTask, ParamSource, PartData, StageInput, StageOutput, StageTask, Work, WorkError, Worker};
use ff::Field;
use rand::SeedableRng;

#[path = "prove/filecoin.rs"]
mod filecoin;

const USAGE: &str = "usage: cargo bench -p cuzk-tests --bench prove -- [options]
  --logs LOGS                  log2 domain sizes, comma-separated (default 14,16)
  --circuits NAMES             sha256-chain, squaring-chain (default both)
  --backends NAMES             cpu, cuda (default cpu,cuda)
  --reps N                     timed proofs after a warm-up; 0: one proof, no warm-up (default 3)
  --cpu-max-log LOG            largest size run on the CPU backend (default 20)
  --pipeline N                 proofs in the throughput run, 0 skips it (default 6)
  --synth-workers N            synthesis threads in the throughput run (default cores / 2)
  --matrices on|off            synthesis through recorded constraint matrices (default on)
  --eval gpu|host|gpu,host     with matrices: a, b, c evaluated on the GPU or on the host (default gpu)
  --stage-wait on|off          wait for the device after each device stage (default on)
  --timing-params-from LOG     timing-only parameters from this size on (default never)
  --timing-params-in-memory    make timing-only parameters resident without a parameter file
  --filecoin IDS               2 KiB Filecoin partitions through both paths: porep-2k, snap-2k, wpost-2k, winning-2k
                               (default none; with it the built-ins run only when --circuits is given)
  --fil-dir DIR                their parameters and sealed sector (default TMPDIR/cuzk-prove-fil)
  --fil-shapes 32g,64g         synthetic PoRep and SnapDeals partitions: witness, gadgets against the native writer,
                               matrices recorded sequentially and in parallel (no proof); snap-32g or porep-32g: one kind
  --fil-shares porep-32g       the share of 0, 1, small and dense scalars in a synthetic partition's A, B and L MSMs
  --fil-shape-proofs 32g       a whole synthetic PoRep C2 on each backend with timing-only parameters (not verified);
                               snap-32g: a SnapDeals proof";

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
    evals: Vec<bool>,
    stage_wait: bool,
    timing_from: u32,
    timing_in_memory: bool,
    filecoin: Vec<cuzk_circuits_filecoin::FilShape>,
    fil_dir: PathBuf,
    fil_shapes: Vec<(Option<ShapeKind>, u64)>,
    fil_shape_proofs: Vec<(Option<ShapeKind>, u64)>,
    fil_shares: Vec<cuzk_circuits_filecoin::FilShape>,
}

/// Which synthetic partitions `--fil-shapes` times at a size: `porep-` or `snap-` before the
/// size picks one, a bare size both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShapeKind {
    PoRep,
    Snap,
}

fn list(v: &str) -> impl Iterator<Item = &str> {
    v.split(',').map(str::trim).filter(|s| !s.is_empty())
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
            evals: vec![true],
            stage_wait: true,
            timing_from: u32::MAX,
            timing_in_memory: false,
            filecoin: Vec::new(),
            fil_dir: std::env::temp_dir().join("cuzk-prove-fil"),
            fil_shapes: Vec::new(),
            fil_shape_proofs: Vec::new(),
            fil_shares: Vec::new(),
        };
        let mut circuits_given = false;
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
            const VALUED: [&str; 16] = [
                "--filecoin",
                "--fil-dir",
                "--fil-shapes",
                "--fil-shares",
                "--fil-shape-proofs",
                "--logs",
                "--circuits",
                "--backends",
                "--reps",
                "--cpu-max-log",
                "--pipeline",
                "--synth-workers",
                "--matrices",
                "--eval",
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
                "--filecoin" => {
                    a.filecoin = list(&v)
                        .map(|id| {
                            cuzk_circuits_filecoin::FilShape::parse(id)
                                .filter(|f| f.sector_size == 2048)
                                .ok_or_else(|| format!("--filecoin takes 2 KiB ids (porep-2k, snap-2k, wpost-2k, winning-2k), not {id:?}"))
                        })
                        .collect::<Result<_, _>>()?
                }
                "--fil-dir" => a.fil_dir = PathBuf::from(&v),
                "--fil-shares" => {
                    a.fil_shares = list(&v)
                        .map(|s| {
                            cuzk_circuits_filecoin::FilShape::parse(s)
                                .ok_or_else(|| format!("--fil-shares takes circuit ids (porep-32g, snap-32g, wpost-2k), not {s:?}"))
                        })
                        .collect::<Result<_, _>>()?
                }
                "--fil-shapes" | "--fil-shape-proofs" => {
                    let sizes: Vec<(Option<ShapeKind>, u64)> = list(&v)
                        .map(|s| {
                            let (kind, size) = match s.split_once('-') {
                                Some(("porep", size)) => (Some(ShapeKind::PoRep), size),
                                Some(("snap", size)) => (Some(ShapeKind::Snap), size),
                                _ => (None, s),
                            };
                            match size {
                                "32g" => Ok((kind, 32u64 << 30)),
                                "64g" => Ok((kind, 64 << 30)),
                                "2k" => Ok((kind, 2048)),
                                _ => Err(format!("{name} takes 2k, 32g, 64g, or one kind: porep-32g, snap-32g; not {s:?}")),
                            }
                        })
                        .collect::<Result<_, _>>()?;
                    if name == "--fil-shapes" {
                        a.fil_shapes = sizes;
                    } else {
                        a.fil_shape_proofs = sizes;
                    }
                }
                "--circuits" => {
                    circuits_given = true;
                    a.circuits = list(&v).map(CircuitKind::from_name).collect::<Result<_, _>>().map_err(|e| format!("--circuits: {e}"))?
                }
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
                "--matrices" => a.matrices = cuzk_tests::on_off(&name, &v)?,
                "--eval" => {
                    a.evals = list(&v)
                        .map(|e| match e {
                            "gpu" => Ok(true),
                            "host" => Ok(false),
                            _ => Err(format!("--eval takes gpu and host, not {e:?}")),
                        })
                        .collect::<Result<_, _>>()?
                }
                "--stage-wait" => a.stage_wait = cuzk_tests::on_off(&name, &v)?,
                _ => a.timing_from = number()?,
            }
        }
        if a.evals.is_empty() {
            return Err("--eval needs gpu, host or both".into());
        }
        if (!a.filecoin.is_empty() || !a.fil_shapes.is_empty() || !a.fil_shape_proofs.is_empty() || !a.fil_shares.is_empty()) && !circuits_given {
            a.circuits.clear();
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
    /// Peak RSS above the level before the one-proof runs, bytes (Linux).
    peak_rss: Option<u64>,
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
    let mut input = StageInput::Circuit(case.work(seed));
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

impl Case<'_> {
    /// Partition `seed` of the case's circuit, as the worker takes it.
    fn work(&self, seed: u64) -> Work {
        Arc::new(self.shape.partition(seed).expect("circuit"))
    }
}

/// Records the constraint matrices of `case`'s circuit, printing the time and size.
fn record_matrices(case: &Case) -> Arc<ConstraintMatrices> {
    let t = Instant::now();
    let m = ConstraintMatrices::record(case.kind.instance(case.k, 0).expect("circuit"))
        .unwrap_or_else(|e| panic!("{}: recording the matrices: {e}", case.shape.id()));
    eprintln!("  matrices recorded in {:.1} ms: {} entries, {:.1} MiB", ms(t.elapsed()), m.num_entries(), m.heap_bytes() as f64 / (1 << 20) as f64);
    Arc::new(m)
}

/// Prints the host's synthesis of one partition of `case` split into its parts, in wall time
/// and in CPU time of the whole process (up to 2^24 also the witness on one thread and plain
/// synthesis, which take minutes beyond), checks that every path gives the same record, and
/// prints the bytes a partition moves to the device.
fn synthesis_split(m: &ConstraintMatrices, case: &Case, cores: usize) {
    let c = case.kind.instance(case.k, 5).expect("circuit");
    let n = m.num_constraints();
    let per = |d: Duration| d.as_secs_f64() * 1e9 / n as f64;
    let alloc = cuzk_core::alloc::heap;
    // Warm-up (one-time layout measurements, page faults of the pool).
    drop(m.witness_parallel(&c, alloc()).expect("witness"));
    let (t, cpu) = (Instant::now(), cpu_time());
    let parallel = m.witness_parallel(&c, alloc()).expect("witness");
    let (t_par, cpu_par) = (t.elapsed(), cpu_time() - cpu);
    let witness_bytes = 32 * (parallel.input.len() + parallel.aux.len()) as u64;
    let mut line = format!(
        "synthesis {} 2^{} ({n} constraints): witness on {cores} threads {:.1} ms wall, {:.2} s CPU ({:.0} ns/constraint)",
        case.kind.name(),
        case.k,
        ms(t_par),
        cpu_par.as_secs_f64(),
        per(cpu_par),
    );
    if case.k <= 24 {
        let t = Instant::now();
        let sequential = m.witness(c.clone(), alloc()).expect("witness");
        let t_seq = t.elapsed();
        assert!(*sequential.aux == *parallel.aux && *sequential.input == *parallel.input, "the parallel witness differs from the sequential one");
        line += &format!("; on one thread {:.1} ms ({:.0} ns/constraint)", ms(t_seq), per(t_seq));
    }
    let (t, cpu) = (Instant::now(), cpu_time());
    let cached = cuzk_worker::matrices::evaluate(m, parallel, alloc()).expect("evaluate");
    let (t_eval, cpu_eval) = (t.elapsed(), cpu_time() - cpu);
    line += &format!("; host products {:.1} ms wall, {:.2} s CPU ({:.0} ns/constraint)", ms(t_eval), cpu_eval.as_secs_f64(), per(cpu_eval));
    if case.k <= 24 {
        let t = Instant::now();
        let plain = synthesize(c, alloc(), SizeHint::default()).expect("synthesize");
        let tp = t.elapsed();
        assert!(
            *plain.a == *cached.a && *plain.b == *cached.b && *plain.c == *cached.c && *plain.aux == *cached.aux,
            "the matrices disagree with plain synthesis"
        );
        line += &format!("; plain synthesis one thread {:.1} ms ({:.0} ns/constraint)", ms(tp), per(tp));
    }
    println!("{line}");
    let abc = 3 * 32 * n as u64;
    println!(
        "bytes per partition {} 2^{}: witness {:.1} MiB (host→device and host buffers with GPU evaluation); host products add a, b, c: {:.1} MiB ({:.1}× the bytes)",
        case.kind.name(),
        case.k,
        witness_bytes as f64 / (1 << 20) as f64,
        abc as f64 / (1 << 20) as f64,
        (witness_bytes + abc) as f64 / witness_bytes as f64
    );
}

/// CPU time of the whole process, user and system (Linux `/proc/self/stat`, 100 ticks a
/// second); zero elsewhere.
fn cpu_time() -> Duration {
    let ticks = std::fs::read_to_string("/proc/self/stat").ok().and_then(|s| {
        // Fields after the command name (which may hold spaces) start at field 3.
        let rest = s.rsplit_once(')')?.1;
        let f: Vec<&str> = rest.split_whitespace().collect();
        Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
    });
    Duration::from_millis(ticks.unwrap_or(0) * 10)
}

/// Resident set size now and its peak (`VmRSS`, `VmHWM`), bytes; `None` off Linux.
fn rss() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| {
        status.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok()).map(|kb| kb * 1024)
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// Resets the peak RSS to the current RSS (Linux `clear_refs` 5).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
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
    reset_peak_rss();
    let rss_before = rss().map(|(now, _)| now);
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
    let peak_rss = rss_before.zip(rss()).map(|(before, (_, peak))| peak.saturating_sub(before));

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
                        let (synth, public) = match worker.run_stage(task(i, Stage::Synthesize, StageInput::Circuit(case.work(100 + i as u64)))) {
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
    Row { stages, total: median(totals), peak_rss, pipelined, proof: proof0 }
}

/// One backend: its worker, whose matrix cache records each circuit once.
struct Side<B: Backend> {
    name: String,
    worker: Arc<BackendWorker<B>>,
}

impl<B: Backend + 'static> Side<B> {
    /// A side over `backend`; with `matrices`, `device_eval` picks where `a, b, c` come from.
    fn new(backend: Arc<B>, matrices: bool, device_eval: bool) -> Self {
        let mut name = backend.name();
        let w = BackendWorker::new(vec![backend.clone()]);
        let w = if matrices {
            if backend.evaluates_constraints_on_device() {
                name += if device_eval { " (GPU evaluation)" } else { " (host products)" };
            }
            w.with_device_evaluation(device_eval)
        } else {
            w.without_matrix_cache()
        };
        Side { name, worker: Arc::new(w) }
    }

    fn backend(&self) -> &B {
        self.worker.backend(0).expect("device 0")
    }

    /// Gives the worker the recorded matrices of `case`.
    fn insert_matrices(&self, case: &Case, m: &Arc<ConstraintMatrices>) {
        if let Some(cache) = self.worker.matrices() {
            cache.insert(&case.shape.key(), m.clone());
        }
    }

    /// With GPU evaluation, makes the matrices of `case` resident before the timed proofs.
    fn preload_matrices(&self, case: &Case) -> Option<(Arc<ConstraintMatrices>, Arc<B::Matrices>)> {
        let shape = case.shape.key();
        if !self.worker.witness_only() {
            return None;
        }
        let m = self.worker.matrices()?.get(&shape)?;
        let t = Instant::now();
        let resident = self.worker.resident_matrices(&shape, &m, 0).unwrap_or_else(|e| panic!("{}: uploading the matrices: {e}", self.name));
        self.backend().wait_idle().expect("wait");
        eprintln!(
            "  {}: matrices resident on the device in {:.1} ms ({:.1} MiB)",
            self.name,
            ms(t.elapsed()),
            self.backend().matrices_bytes(&resident) as f64 / (1 << 20) as f64
        );
        Some((m, resident))
    }

    /// Prints the GPU time of the witness upload and of the constraint evaluation alone
    /// (median of three, each waited for).
    fn time_evaluation(&self, case: &Case, (m, resident): &(Arc<ConstraintMatrices>, Arc<B::Matrices>)) {
        let b = self.backend();
        let c = case.kind.instance(case.k, 7).expect("circuit");
        let domain = cuzk_core::domain::Domain::for_len(m.num_constraints()).expect("domain");
        let (mut uploads, mut evals) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            let w = m.witness_parallel(&c, b.host_allocator()).expect("witness");
            b.wait_idle().expect("wait");
            let t = Instant::now();
            let input = b.upload_scalars(w.input).expect("upload");
            let aux = b.upload_scalars(w.aux).expect("upload");
            b.wait_idle().expect("wait");
            uploads.push(ms(t.elapsed()));
            let t = Instant::now();
            let abc = b.evaluate_constraints(resident, &input, &aux, &domain).expect("evaluate");
            b.wait_idle().expect("wait");
            evals.push(ms(t.elapsed()));
            drop(abc);
        }
        println!(
            "GPU evaluation {} 2^{} on {}: witness upload {:.1} ms, constraint evaluation {:.1} ms ({} entries; median of 3)",
            case.kind.name(),
            case.k,
            self.name,
            median(uploads),
            median(evals),
            m.num_entries()
        );
    }

    /// Loads the parameters from `file` through the worker, runs `case`, evicts them.
    fn run_from_file(&self, file: &ParamsFile, case: &Case) -> Row {
        let t = Instant::now();
        let at = Location::Device(DeviceId(0));
        let task = LoadTask {
            circuit: case.circuit,
            at,
            source: ParamSource::File(file.0.clone()),
            validation: Validation::Trusted,
            from_host: false,
            streamed: false,
        };
        if let Err(e) = self.worker.load_params(task) {
            panic!("{}: loading {}: {e}", self.name, file.0.display());
        }
        eprintln!("  {}: parameters resident in {:.1} ms", self.name, ms(t.elapsed()));
        let resident = self.preload_matrices(case);
        let vk = self.worker.verifying_key(case.circuit);
        let row = run(&*self.worker, self.backend(), vk.as_deref(), case);
        if let Some(r) = &resident {
            self.time_evaluation(case, r);
        }
        self.worker.evict_params(case.circuit, at);
        row
    }

    /// Makes `params` resident without a file (timing-only parameters), runs `case`, evicts
    /// them.
    fn run_in_memory(&self, params: Parameters, case: &Case) -> Row {
        let t = Instant::now();
        self.worker.load_key(case.circuit, 0, params).unwrap_or_else(|e| panic!("{}: loading the key: {e}", self.name));
        eprintln!("  {}: parameters resident (from memory) in {:.1} ms", self.name, ms(t.elapsed()));
        let resident = self.preload_matrices(case);
        let row = run(&*self.worker, self.backend(), None, case);
        if let Some(r) = &resident {
            self.time_evaluation(case, r);
        }
        self.worker.evict_params(case.circuit, Location::Device(DeviceId(0)));
        row
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

/// Parameters with the shape `m` was recorded from but pseudo-random points (`P + i·Q`): for
/// timing only, since nobody knows their discrete logs and no proof made with them verifies.
/// Above 2^20 points a vector repeats its first 2^20 points (the kernels' work does not depend
/// on the points; generating 2^26 distinct G1 and G2 points took minutes).
fn timing_params(m: &ConstraintMatrices) -> Parameters {
    use blstrs::{G1Projective, G2Projective};
    use cuzk_tests::random_points;
    use group::{Curve, Group};
    const DISTINCT: usize = 1 << 20;
    fn tiled<T: Copy>(len: usize, make: &mut dyn FnMut(usize) -> Vec<T>) -> Vec<T> {
        let base = make(len.min(DISTINCT));
        base.iter().copied().cycle().take(len).collect()
    }
    let n = cuzk_core::domain::Domain::for_len(m.num_constraints()).unwrap().size();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(n as u64);
    let mut g1s = |len| tiled(len, &mut |k| random_points::<G1Projective>(k, &mut rng));
    let g = G1Projective::generator().to_affine();
    let h = G2Projective::generator().to_affine();
    let [a_aux, b_input, b_aux] = m.densities();
    let b = b_input.count() + b_aux.count();
    Parameters {
        vk: VerifyingKey { alpha_g1: g, beta_g1: g, beta_g2: h, gamma_g2: h, delta_g1: g, delta_g2: h, ic: g1s(m.num_inputs) },
        h: g1s(n - 1),
        l: g1s(m.num_aux),
        a: g1s(m.num_inputs + a_aux.count()),
        b_g1: g1s(b),
        b_g2: tiled(b, &mut |k| random_points::<G2Projective>(k, &mut rng)),
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

    let cpu = args.cpu.then(|| Side::new(Arc::new(CpuBackend::new()), args.matrices, false));
    let cuda: Vec<Side<CudaBackend>> = if args.cuda {
        // A backend per side: each its own pinned pool, so one side's buffers do not hide in
        // another's peak RSS.
        let evals = if args.matrices { args.evals.clone() } else { vec![false] };
        match evals.into_iter().map(|e| CudaBackend::first().map(|b| Side::new(Arc::new(b), args.matrices, e))).collect::<Result<Vec<_>, _>>() {
            Ok(sides) => sides,
            Err(e) => {
                eprintln!("SKIPPED cuda backend: {e}");
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };

    println!(
        "host: {cores} cores; synthesis workers in the pipelined run: {}; synthesis through recorded matrices: {}",
        args.synth_workers,
        if args.matrices { "on" } else { "off" }
    );
    if !args.circuits.is_empty() {
        println!();
        println!("| circuit | domain | backend | synth ms | upload ms | ntt ms | msm ms | finalize ms | one proof ms | peak RSS GiB | pipelined ms/proof |");
        println!("|---|---|---|---|---|---|---|---|---|---|---|");
    }
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
            let on_cpu = cpu.as_ref().filter(|_| k <= args.cpu_max_log);
            // Recorded once: the matrices give timing-only parameters their shape and every
            // side its cache.
            let matrices = (args.matrices || timing).then(|| record_matrices(&case));
            if let (true, Some(m)) = (args.matrices, &matrices) {
                synthesis_split(m, &case, cores);
                if let Some(c) = on_cpu {
                    c.insert_matrices(&case, m);
                }
                for g in &cuda {
                    g.insert_matrices(&case, m);
                }
            }
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0xbe9c4 + k as u64);
            let t = Instant::now();
            let params = match (&matrices, timing) {
                (Some(m), true) => timing_params(m),
                _ => cuzk_setup::generate_parameters(kind.instance(k, 0).unwrap(), &mut rng).expect("setup"),
            };
            if !args.matrices {
                drop(matrices);
            }
            let what = if timing { "timing-only parameters (proofs not verified)" } else { "parameters" };
            eprintln!("{} 2^{k}: {what} generated in {:.1} s", kind.name(), t.elapsed().as_secs_f64());
            if timing {
                println!("({} 2^{k}: timing-only parameters, proofs not verified)", kind.name());
            }
            let mut rows: Vec<(String, Row)> = Vec::new();
            if timing && args.timing_in_memory {
                // The last side takes the parameters (no copy: at 2^27 they are ~77 GB).
                let count = usize::from(on_cpu.is_some()) + cuda.len();
                let mut params = Some(params);
                let mut take = |i: usize| if i + 1 == count { params.take().expect("parameters") } else { params.clone().expect("parameters") };
                let mut i = 0;
                if let Some(c) = on_cpu {
                    rows.push((c.name.clone(), c.run_in_memory(take(i), &case)));
                    i += 1;
                }
                for g in &cuda {
                    rows.push((g.name.clone(), g.run_in_memory(take(i), &case)));
                    i += 1;
                }
            } else {
                let t = Instant::now();
                let file = ParamsFile::write(&params, &case).unwrap_or_else(|e| panic!("writing the parameters to {}: {e}", std::env::temp_dir().display()));
                drop(params);
                eprintln!("  parameter file written in {:.1} s", t.elapsed().as_secs_f64());
                if let Some(c) = on_cpu {
                    rows.push((c.name.clone(), c.run_from_file(&file, &case)));
                }
                for g in &cuda {
                    rows.push((g.name.clone(), g.run_from_file(&file, &case)));
                }
            }
            for (name, row) in &rows {
                let s = row.stages;
                println!(
                    "| {} | 2^{k} | {name} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} |",
                    kind.name(),
                    s[0],
                    s[1],
                    s[2],
                    s[3],
                    s[4],
                    row.total,
                    row.peak_rss.map_or("-".into(), |b| format!("{:.2}", b as f64 / (1u64 << 30) as f64)),
                    row.pipelined.map_or("-".into(), |p| format!("{p:.1}"))
                );
            }
            if let Some((first, _)) = rows.first() {
                for (name, row) in &rows[1..] {
                    assert_eq!(rows[0].1.proof, row.proof, "{first} and {name} disagree on the proof bytes");
                }
            }
            if let (Some(_), Some(g)) = (on_cpu, cuda.first()) {
                let (c, g) = (&rows[0].1, &rows.iter().find(|(n, _)| *n == g.name).expect("cuda row").1);
                let gpu = |r: &Row| r.stages[1] + r.stages[2] + r.stages[3];
                println!("| | | ratio cpu/gpu | | | | | | {:.1}× (backend stages {:.1}×) | | |", c.total / g.total, gpu(c) / gpu(g));
            }
        }
    }
    for &(kind, size) in &args.fil_shapes {
        println!();
        if kind != Some(ShapeKind::Snap) {
            filecoin::synthetic_porep_witness(size);
        }
        if kind != Some(ShapeKind::PoRep) {
            filecoin::synthetic_snap_witness(size);
        }
        if kind != Some(ShapeKind::Snap) {
            filecoin::synthetic_porep_recording(size);
        }
    }
    for shape in &args.fil_shares {
        println!();
        filecoin::synthetic_shares(shape.kind, shape.sector_size);
    }
    for &(kind, size) in &args.fil_shape_proofs {
        let kind = match kind {
            Some(ShapeKind::Snap) => cuzk_circuits_filecoin::FilKind::SnapDeals,
            _ => cuzk_circuits_filecoin::FilKind::PoRep,
        };
        println!();
        if let Some(c) = &cpu {
            filecoin::synthetic_proofs(c.backend(), &c.name, kind, size);
        }
        if let Some(g) = cuda.first() {
            filecoin::synthetic_proofs(g.backend(), &g.name, kind, size);
        }
    }
    if !args.filecoin.is_empty() {
        println!();
        let fx = filecoin::Fixtures::seal(&args.fil_dir);
        for &shape in &args.filecoin {
            if let Some(c) = &cpu {
                filecoin::run(c.backend(), &c.name, shape, &args.fil_dir, &fx, args.reps);
            }
            if let Some(g) = cuda.first() {
                filecoin::run(g.backend(), &g.name, shape, &args.fil_dir, &fx, args.reps);
            }
        }
    }
}
