//! Whole-partition proving benchmark: per-stage times of one proof, and steady-state
//! throughput with synthesis pipelined against the backend, on every available backend, on the
//! built-in circuits. Proofs are verified and must be byte-identical across backends.
//!
//! ```sh
//! CUZK_BENCH_LOGS=16,18 CUZK_BENCH_BACKENDS=cpu,cuda cargo bench -p cuzk-tests --bench prove
//! ```
//!
//! Environment: `CUZK_BENCH_LOGS` (log2 domain sizes, default `14,16`), `CUZK_BENCH_CIRCUITS`
//! (default `sha256-chain,squaring-chain`), `CUZK_BENCH_BACKENDS` (default `cpu,cuda`),
//! `CUZK_BENCH_REPS` (default 3; 0: one proof without the warm-up proof, for the largest
//! sizes), `CUZK_BENCH_CPU_MAX_LOG` (largest size run on the CPU
//! backend, default 20), `CUZK_BENCH_PIPELINE` (proofs in the throughput run, default 6; 0
//! skips it), `CUZK_BENCH_SYNTH_WORKERS` (default: cores / 2), `CUZK_BENCH_PCE` (default 1:
//! synthesize through the constraint-matrix cache, recorded once per circuit; 0: plain),
//! `CUZK_BENCH_STAGE_WAIT` (default 1: wait for the device at each stage boundary, so each
//! stage is timed alone; 0: no waits, so uploads overlap the transforms as in production, the
//! stage columns show when each stage was reached, and "first upload → proof" is the latency),
//! `CUZK_BENCH_TIMING_PARAMS_FROM` (from this log size on, use timing-only parameters: the
//! right shape, pseudo-random points instead of a trusted setup, so proofs are not verified;
//! generating real parameters at 2^24 and beyond costs minutes of the GPU host's time).

use std::sync::mpsc::sync_channel;
use std::time::{Duration, Instant};

use blstrs::Scalar;
use cuzk_backend_cpu::CpuBackend;
use cuzk_circuits::BuiltinCircuit;
use cuzk_circuits::CircuitKind;
use cuzk_core::alloc::SharedAllocator;
use cuzk_core::backend::Backend;
use cuzk_core::matrices::ConstraintMatrices;
use cuzk_core::params::Parameters;
use cuzk_core::proof::verify;
use cuzk_core::prover::{compute_h, finalize, msms, prove, upload, ProvingKey, Stage};
use cuzk_core::synth::{synthesize, SizeHint, Synthesized};
use ff::Field;
use rand::SeedableRng;

fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name).unwrap_or_else(|_| default.to_string()).split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
}

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Per-stage medians of one backend on one circuit.
struct Row {
    stages: [f64; 5],
    total: f64,
    pipelined: Option<f64>,
    proof: [u8; 192],
}

/// Synthesizes through the matrix cache when one is given, else plainly.
fn synth(pce: Option<&ConstraintMatrices>, c: BuiltinCircuit, alloc: SharedAllocator, hint: SizeHint) -> Synthesized {
    match pce {
        Some(m) => cuzk_worker::matrices::synthesize(m, c, alloc).expect("synthesize"),
        None => synthesize(c, alloc, hint).expect("synthesize"),
    }
}

#[allow(clippy::too_many_arguments)]
fn run<B: Backend>(
    backend: &B,
    kind: CircuitKind,
    k: u32,
    params: Parameters,
    check: bool,
    pce: Option<&ConstraintMatrices>,
    reps: usize,
    pipeline: usize,
    workers: usize,
) -> Row {
    let t = Instant::now();
    let key = ProvingKey::load(backend, params).expect("load key");
    eprintln!("  {}: key resident in {:.1} ms", backend.name(), ms(t.elapsed()));
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(k as u64);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let mut per_stage: Vec<Vec<f64>> = vec![Vec::new(); 5];
    let mut totals = Vec::new();
    let mut proof0 = [0u8; 192];
    let mut hint = SizeHint::default();
    // reps = 0: a single proof that is also timed (no warm-up proof).
    let warmup = usize::from(reps > 0);
    let stage_wait = env_num("CUZK_BENCH_STAGE_WAIT", 1) == 1;
    for rep in 0..reps.max(1) + warmup {
        let circuit = kind.instance(k, 1).unwrap();
        let public = circuit.public_inputs();
        let t0 = Instant::now();
        let synth = synth(pce, circuit, backend.host_allocator(), hint);
        hint = synth.size_hint();
        let mut times = vec![(Stage::Synthesize, t0.elapsed())];
        let mut last: Option<(Stage, Instant)> = None;
        let proof = prove(backend, &key, synth, r, s, &mut |stage| {
            // Asynchronous backends: let the previous stage finish so it is timed alone (unless
            // CUZK_BENCH_STAGE_WAIT=0, which times the stages as they overlap on the device).
            if stage_wait {
                backend.wait_idle().expect("synchronize");
            }
            let now = Instant::now();
            if let Some((p, since)) = last {
                times.push((p, now - since));
            }
            last = Some((stage, now));
        })
        .expect("prove");
        if let Some((p, since)) = last {
            times.push((p, since.elapsed()));
        }
        let total = t0.elapsed();
        let gpu = total - times[0].1;
        eprintln!(
            "  {} 2^{k}: first upload → proof {:.1} ms (stage waits {})",
            kind.name(),
            ms(gpu),
            if stage_wait { "on: the stages are serialized" } else { "off: copies overlap the transforms" }
        );
        if check {
            assert!(verify(&key.vk, &proof, &public).unwrap(), "{}: proof does not verify", backend.name());
        }
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
    // stages.
    let pipelined = (pipeline > 0).then(|| {
        let t = Instant::now();
        std::thread::scope(|scope| {
            let (tx, rx) = sync_channel(workers.max(1));
            for w in 0..workers.max(1) {
                let tx = tx.clone();
                let alloc = backend.host_allocator();
                let key = &key;
                scope.spawn(move || {
                    for i in (w..pipeline).step_by(workers.max(1)) {
                        let c = kind.instance(k, 100 + i as u64).unwrap();
                        let public = c.public_inputs();
                        let synth = synth(pce, c, alloc.clone(), hint);
                        // The worker uploads too: on the CUDA backend the copy runs on its
                        // own stream while the GPU works on earlier proofs.
                        let up = upload(backend, key, synth).expect("upload");
                        if tx.send((up, public)).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(tx);
            for (up, public) in rx {
                let (h, domain, witness) = compute_h(backend, up).expect("compute_h");
                let m = msms(backend, &key, &h, &domain, &witness).expect("msms");
                let proof = finalize(&key.vk, &m, r, s);
                assert!(!check || verify(&key.vk, &proof, &public).unwrap());
            }
        });
        ms(t.elapsed()) / pipeline as f64
    });
    Row { stages, total: median(totals), pipelined, proof: proof0 }
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
        vk: cuzk_core::params::VerifyingKey { alpha_g1: g, beta_g1: g, beta_g2: h, gamma_g2: h, delta_g1: g, delta_g2: h, ic: g1s(s.input.len()) },
        h: g1s(n - 1),
        l: g1s(s.aux.len()),
        a: g1s(s.input.len() + s.a_aux_density.count()),
        b_g1: g1s(b),
        b_g2: tiled(b, &mut |m| random_points::<G2Projective>(m, &mut rng)),
    }
}

fn main() {
    let logs: Vec<u32> = env_list("CUZK_BENCH_LOGS", "14,16").iter().map(|s| s.parse().expect("log size")).collect();
    let circuits: Vec<CircuitKind> =
        env_list("CUZK_BENCH_CIRCUITS", "sha256-chain,squaring-chain").iter().map(|s| CircuitKind::from_name(s).expect("circuit")).collect();
    let backends = env_list("CUZK_BENCH_BACKENDS", "cpu,cuda");
    let reps = env_num("CUZK_BENCH_REPS", 3);
    let cpu_max = env_num("CUZK_BENCH_CPU_MAX_LOG", 20) as u32;
    let pipeline = env_num("CUZK_BENCH_PIPELINE", 6);
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let workers = env_num("CUZK_BENCH_SYNTH_WORKERS", (cores / 2).max(1));
    let use_pce = env_num("CUZK_BENCH_PCE", 1) == 1;
    let timing_from = env_num("CUZK_BENCH_TIMING_PARAMS_FROM", 64) as u32;

    let cpu = CpuBackend::new();
    let cuda = if backends.iter().any(|b| b == "cuda") {
        match cuzk_backend_cuda::CudaBackend::first() {
            Ok(b) => Some(b),
            Err(e) => {
                eprintln!("SKIPPED cuda backend: {e}");
                None
            }
        }
    } else {
        None
    };

    println!("host: {cores} cores; synthesis workers in the pipelined run: {workers}; synthesis cache (PCE): {}", if use_pce { "on" } else { "off" });
    println!();
    println!("| circuit | domain | backend | synth ms | upload ms | ntt ms | msm ms | finalize ms | one proof ms | pipelined ms/proof |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for &kind in &circuits {
        for &k in &logs {
            if k < kind.min_log_size() {
                continue;
            }
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0xbe9c4 + k as u64);
            let t = Instant::now();
            let params =
                if k >= timing_from { timing_params(kind, k) } else { cuzk_setup::generate_parameters(kind.instance(k, 0).unwrap(), &mut rng).expect("setup") };
            let what = if k >= timing_from { "timing-only parameters (proofs not verified)" } else { "parameters" };
            eprintln!("{} 2^{k}: {what} generated in {:.1} s", kind.name(), t.elapsed().as_secs_f64());
            if k >= timing_from {
                println!("({} 2^{k}: timing-only parameters, proofs not verified)", kind.name());
            }
            let pce = use_pce.then(|| {
                let t = Instant::now();
                let m = ConstraintMatrices::record(kind.instance(k, 0).unwrap()).expect("record");
                eprintln!("  matrices recorded in {:.1} ms: {} entries, {:.1} MiB", ms(t.elapsed()), m.num_entries(), m.heap_bytes() as f64 / (1 << 20) as f64);
                // Synthesis time per constraint, plain and cached, on this host (one thread for
                // the witness; the sparse products use all cores).
                let c = kind.instance(k, 5).unwrap();
                let t = Instant::now();
                let plain = synthesize(c.clone(), cuzk_core::alloc::heap(), SizeHint::default()).expect("synthesize");
                let tp = t.elapsed();
                let t = Instant::now();
                let cached = cuzk_worker::matrices::synthesize(&m, c, cuzk_core::alloc::heap()).expect("synthesize");
                let tc = t.elapsed();
                assert!(*plain.a == *cached.a && *plain.c == *cached.c && *plain.aux == *cached.aux, "cache disagrees");
                let per = |d: Duration| d.as_secs_f64() * 1e9 / plain.num_constraints() as f64;
                println!(
                    "synthesis {} 2^{k}: plain {:.1} ms ({:.0} ns/constraint), cached {:.1} ms ({:.0} ns/constraint), {:.1}× faster",
                    kind.name(),
                    ms(tp),
                    per(tp),
                    ms(tc),
                    per(tc),
                    tp.as_secs_f64() / tc.as_secs_f64()
                );
                m
            });
            let mut rows: Vec<(String, Row)> = Vec::new();
            // The last backend takes the parameters (no copy: at 2^27 they are ~77 GB).
            let on_cpu = backends.iter().any(|b| b == "cpu") && k <= cpu_max;
            let mut params = Some(params);
            if on_cpu {
                let p = if cuda.is_some() { params.clone().unwrap() } else { params.take().unwrap() };
                rows.push((cpu.name(), run(&cpu, kind, k, p, k < timing_from, pce.as_ref(), reps, pipeline, workers)));
            }
            if let Some(g) = &cuda {
                rows.push((g.name(), run(g, kind, k, params.take().unwrap(), k < timing_from, pce.as_ref(), reps, pipeline, workers)));
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
