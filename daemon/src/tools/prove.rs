//! `cuzk prove`: proves partitions of a built-in circuit on the opened backends, without the
//! daemon's engine (one worker, a thread per device).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_core::backend::Backend;
use cuzk_core::engine::{CircuitId, DeviceId, Location, Stage};
use cuzk_core::params::Validation;
use cuzk_worker::{prove_one, BackendWorker, LoadTask, ParamSource, PartData, StageOutput, Worker};

use crate::families::GenericShape;
use ff::Field;
use rand::SeedableRng;

use crate::any_backend::AnyBackend;
use crate::CliError;

fn fmt_dur(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 1000.0 {
        format!("{ms:9.1} ms")
    } else {
        format!("{:9.3} s ", d.as_secs_f64())
    }
}

/// What `cuzk prove` proves.
pub struct ProveRun {
    /// The circuit and its size.
    pub shape: GenericShape,
    /// The first partition's instance seed (partition `i` uses `seed + i`).
    pub seed: u64,
    /// How many partitions to prove.
    pub partitions: u32,
    /// The parameter file.
    pub path: PathBuf,
    /// How the parameter file is checked as it is read.
    pub validation: Validation,
    /// Where validation records are kept (the daemon's `<data dir>/validated`): a file
    /// validated in full once, by this command or the daemon, is trusted while it is unchanged.
    pub records: Option<PathBuf>,
    /// The ordinal each backend drives (for the report).
    pub ordinals: Vec<u32>,
}

/// One partition's proof and where and how fast it was made.
struct ProvedPartition {
    device: usize,
    proof: cuzk_core::proof::Proof,
    public: usize,
    constraints: usize,
    times: Vec<(Stage, Duration)>,
    total: Duration,
}

/// Proves `run.partitions` partitions over `backends`, each device taking the next unproven
/// partition as it frees up, verifies them, and prints the stage times and the proofs.
pub fn run_prove(backends: Vec<AnyBackend>, run: ProveRun) -> Result<(), CliError> {
    let names: Vec<String> = backends.iter().map(|b| b.name()).collect();
    let n_dev = backends.len();
    // One partition: recording the constraint matrices would cost a second synthesis; with
    // more, the first records them and the others write only their witness.
    let mut worker = BackendWorker::new(backends.into_iter().map(Arc::new).collect());
    if let Some(dir) = &run.records {
        worker = worker.with_validation_records(dir.clone());
    }
    let worker = if run.partitions > 1 { worker } else { worker.without_matrix_cache() };
    let circuit = CircuitId(0);
    let t = Instant::now();
    let load = |at, from_host| {
        worker.load_params(LoadTask { circuit, at, source: ParamSource::File(run.path.clone()), validation: run.validation, from_host, streamed: false })
    };
    if n_dev == 1 {
        load(Location::Device(DeviceId(0)), false)?;
    } else {
        // Read (and check) the file once, then copy it to every device at once.
        load(Location::Host, false)?;
        std::thread::scope(|s| {
            let loads: Vec<_> = (0..n_dev as u32).map(|d| s.spawn(move || load(Location::Device(DeviceId(d)), true))).collect();
            loads.into_iter().try_for_each(|h| h.join().unwrap_or_else(|_| Err(cuzk_worker::WorkError::Panicked("a parameter load panicked".into()))))
        })?;
    }
    let load = t.elapsed();

    // Each device proves partitions in turn, taking the next unproven one as it frees up.
    let next = std::sync::atomic::AtomicU32::new(0);
    let t0 = Instant::now();
    let results: Vec<Result<Vec<(u32, ProvedPartition)>, CliError>> = std::thread::scope(|s| {
        let (worker, next, run) = (&worker, &next, &run);
        let handles: Vec<_> = (0..n_dev)
            .map(|d| {
                s.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= run.partitions {
                            return Ok(done);
                        }
                        let seed = run.seed.wrapping_add(u64::from(i));
                        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
                        let (r, s) = (blstrs::Scalar::random(&mut rng), blstrs::Scalar::random(&mut rng));
                        let (mut times, mut constraints) = (Vec::new(), 0);
                        let t = Instant::now();
                        let (proof, public) = prove_one(
                            worker,
                            circuit,
                            d as u32,
                            run.shape.partition(seed).map_err(CliError::Build)?,
                            Some((r, s)),
                            true,
                            |stage, took, out| {
                                if let StageOutput::Synthesized { data: PartData::Synthesized(s), .. } = out {
                                    constraints = s.num_constraints();
                                }
                                times.push((stage, took));
                            },
                        )?;
                        done.push((i, ProvedPartition { device: d, proof, public: public.len(), constraints, times, total: t.elapsed() }));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(CliError::Work(cuzk_worker::WorkError::Panicked("a device thread panicked".into())))))
            .collect()
    });
    let total = t0.elapsed();
    let mut proved: Vec<(u32, ProvedPartition)> = Vec::new();
    for r in results {
        proved.extend(r?);
    }
    proved.sort_by_key(|(i, _)| *i);

    let first = &proved[0].1;
    let shape = run.shape;
    println!("circuit   {} (2^{} domain, {} constraints, {} public inputs)", shape.name(), shape.log_size, first.constraints, first.public);
    if n_dev == 1 {
        println!("backend   {}", names[0]);
    } else {
        for (d, name) in names.iter().enumerate() {
            println!("device {d}  {name} (ordinal {})", run.ordinals[d]);
        }
    }
    println!("params    read and made resident in {}", fmt_dur(load).trim());
    println!();
    if proved.len() == 1 {
        println!("{:<12} {:>12}", "stage", "time");
        for (stage, d) in &first.times {
            println!("{:<12} {}", stage.name(), fmt_dur(*d));
        }
        println!("{:<12} {}", "total", fmt_dur(total));
        println!();
        println!("proof     {}", hex(&first.proof.to_bytes()));
    } else {
        print!("{:<10} {:>6}", "partition", "device");
        for stage in Stage::ALL {
            print!(" {:>12}", stage.name());
        }
        println!(" {:>12}", "total");
        for (i, p) in &proved {
            print!("{i:<10} {:>6}", p.device);
            for (_, d) in &p.times {
                print!(" {}", fmt_dur(*d));
            }
            println!(" {}", fmt_dur(p.total));
        }
        println!();
        for d in 0..n_dev {
            println!("device {d}  {} partitions", proved.iter().filter(|(_, p)| p.device == d).count());
        }
        println!("wall      {} for {} partitions", fmt_dur(total).trim(), proved.len());
        println!();
        for (i, p) in &proved {
            println!("proof {i:<3} {}", hex(&p.proof.to_bytes()));
        }
    }
    println!("verified  yes");
    Ok(())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
