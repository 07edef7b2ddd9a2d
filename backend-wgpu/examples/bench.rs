//! wgpu against CUDA on the same inputs: forward NTT and dense G1 MSM at 2^16 … 2^22, and one
//! whole partition (squaring-chain with timing-only parameters). Prints markdown tables with
//! the ratios; results of the two backends are compared (they must be identical).
//!
//! ```sh
//! cargo build --release -p cuzk-backend-wgpu --example cuzk-wgpu-bench
//! ```
//!
//! Environment: `CUZK_WGPU_BENCH_NTT` (log sizes, default `16,18,20,22`),
//! `CUZK_WGPU_BENCH_MSM` (default `16,18,20,22`), `CUZK_WGPU_BENCH_PROOF` (log size of the
//! partition, default 20; 0 skips), `CUZK_WGPU_BENCH_REPS` (default 3), `CUZK_WGPU_BENCH_CUDA`
//! (default 1; 0 runs wgpu alone), plus the backend's `CUZK_WGPU_ADAPTER` and
//! `CUZK_WGPU_DEVICE_TYPE`.

use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Projective, Scalar};
use cuzk_backend_cuda::CudaBackend;
use cuzk_backend_wgpu::WgpuBackend;
use cuzk_circuits::CircuitKind;
use cuzk_core::alloc::{heap, PinnedVec};
use cuzk_core::backend::{Backend, MsmScalars, NttDirection};
use cuzk_core::domain::Domain;
use cuzk_core::params::{Parameters, VerifyingKey};
use cuzk_core::prover::{prove, ProvingKey, Stage};
use cuzk_core::synth::{synthesize, SizeHint};
use ff::Field;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

fn env_logs(name: &str, default: &str) -> Vec<u32> {
    std::env::var(name).unwrap_or_else(|_| default.into()).split(',').filter_map(|s| s.trim().parse().ok()).collect()
}

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
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

/// `n` distinct points `P + i·Q`.
fn points<G>(n: usize, seed: u64) -> Vec<G::AffineRepr>
where
    G: Curve + Group<Scalar = Scalar> + Send + Sync,
    G::AffineRepr: Copy + Send + Sync,
{
    const CHUNK: usize = 1 << 14;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (p, q) = (G::random(&mut rng), G::random(&mut rng));
    let mut out = vec![G::identity().to_affine(); n];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(c, o)| {
        let mut acc = p + q * Scalar::from((c * CHUNK) as u64);
        let proj: Vec<G> = (0..o.len())
            .map(|_| {
                acc += q;
                acc
            })
            .collect();
        G::batch_normalize(&proj, o);
    });
    out
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

/// Per-stage milliseconds (upload, ntt, msm) and the total of one proof (after a warm-up).
fn time_proof<B: Backend>(b: &B, kind: CircuitKind, k: u32, params: &Parameters, reps: usize) -> ([f64; 3], f64, [u8; 192]) {
    let key = ProvingKey::load(b, params.clone()).expect("key");
    let (r, s) = (Scalar::from(3u64), Scalar::from(5u64));
    let mut stages = vec![Vec::new(); 3];
    let mut totals = Vec::new();
    let mut bytes = [0u8; 192];
    for rep in 0..=reps {
        let synth = synthesize(kind.instance(k, 1).expect("circuit"), b.host_allocator(), SizeHint::default()).expect("synthesize");
        let mut times: Vec<(Stage, f64)> = Vec::new();
        let mut last: Option<(Stage, Instant)> = None;
        let t0 = Instant::now();
        let proof = prove(b, &key, synth, r, s, &mut |stage| {
            b.wait_idle().expect("sync");
            let now = Instant::now();
            if let Some((p, since)) = last {
                times.push((p, (now - since).as_secs_f64() * 1e3));
            }
            last = Some((stage, now));
        })
        .expect("prove");
        let total = t0.elapsed().as_secs_f64() * 1e3;
        bytes = proof.to_bytes();
        if rep == 0 {
            continue;
        }
        for (st, ms) in times {
            let i = match st {
                Stage::Upload => 0,
                Stage::Ntt => 1,
                Stage::Msm => 2,
                _ => continue,
            };
            stages[i].push(ms);
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
    ([m(&stages[0]), m(&stages[1]), m(&stages[2])], median(totals), bytes)
}

fn ratio(a: f64, b: Option<f64>) -> String {
    b.map_or("-".into(), |b| format!("{:.2}", a / b))
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.2}"))
}

fn main() {
    let reps = env_num("CUZK_WGPU_BENCH_REPS", 3).max(1);
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
    let cuda = if env_num("CUZK_WGPU_BENCH_CUDA", 1) == 1 {
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
    for k in env_logs("CUZK_WGPU_BENCH_NTT", "16,18,20,22") {
        let domain = Domain::new(k).expect("domain");
        let input = scalars(domain.size(), k as u64);
        let (tw, rw) = time_ntt(&wgpu, &input, &domain, reps);
        let c = cuda.as_ref().map(|c| time_ntt(c, &input, &domain, reps));
        let eq = c.as_ref().map_or("-".into(), |(_, rc)| (rc == &rw).to_string());
        println!("| NTT (forward) | 2^{k} | {tw:.2} | {} | {} | {eq} |", opt(c.as_ref().map(|x| x.0)), ratio(tw, c.as_ref().map(|x| x.0)));
    }
    for k in env_logs("CUZK_WGPU_BENCH_MSM", "16,18,20,22") {
        let n = 1usize << k;
        let sc = scalars(n, 100 + k as u64);
        let bases = points::<G1Projective>(n, 200 + k as u64);
        let (tw, rw) = time_msm(&wgpu, &bases, &sc, reps);
        let c = cuda.as_ref().map(|c| time_msm(c, &bases, &sc, reps));
        let eq = c.as_ref().map_or("-".into(), |(_, rc)| (rc == &rw).to_string());
        println!("| G1 MSM (dense) | 2^{k} | {tw:.2} | {} | {} | {eq} |", opt(c.as_ref().map(|x| x.0)), ratio(tw, c.as_ref().map(|x| x.0)));
    }
    let pk = env_num("CUZK_WGPU_BENCH_PROOF", 20) as u32;
    if pk > 0 {
        let kind = CircuitKind::SquaringChain;
        let t = Instant::now();
        let params = timing_params(kind, pk);
        eprintln!("timing parameters for {} 2^{pk} in {:.1} s", kind.name(), t.elapsed().as_secs_f64());
        let (sw, tw, pw) = time_proof(&wgpu, kind, pk, &params, reps);
        let c = cuda.as_ref().map(|c| time_proof(c, kind, pk, &params, reps));
        let eq = c.as_ref().map_or("-".into(), |(_, _, pc)| (pc == &pw).to_string());
        let names = ["upload", "h (NTTs)", "MSMs"];
        for (i, name) in names.iter().enumerate() {
            let cv = c.as_ref().map(|x| x.0[i]);
            println!("| partition {}: {name} | 2^{pk} | {:.2} | {} | {} | |", kind.name(), sw[i], opt(cv), ratio(sw[i], cv));
        }
        let ct = c.as_ref().map(|x| x.1);
        println!("| partition {}: whole proof | 2^{pk} | {tw:.2} | {} | {} | {eq} |", kind.name(), opt(ct), ratio(tw, ct));
    }
}
