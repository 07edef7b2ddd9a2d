//! Compiles every kernel of the backend and prints the time each took (`CUZK_WGPU_TRACE`),
//! then times two runs of a tiny G1 and G2 MSM and NTT: lavapipe compiles a pipeline's machine
//! code at its first dispatch, so the first run shows that cost (set
//! `MESA_SHADER_CACHE_DISABLE=true` to measure without Mesa's disk cache):
//! `cargo bench -p cuzk-backend-wgpu --bench compile_probe`.
use blstrs::{G1Projective, G2Projective, Scalar};
use cuzk_core::backend::{Backend, MsmScalars, NttDirection};
use cuzk_core::domain::Domain;
use ff::Field;
use group::{Curve, Group};
use rand::SeedableRng;

fn main() {
    std::env::set_var("CUZK_WGPU_TRACE", "1");
    let b = match cuzk_backend_wgpu::WgpuBackend::from_env() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("SKIPPED: no wgpu adapter ({e})");
            return;
        }
    };
    let t = std::time::Instant::now();
    b.warm_up().expect("kernels");
    eprintln!("all kernels in {:.1} s", t.elapsed().as_secs_f64());
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let scalars: Vec<Scalar> = (0..64).map(|_| Scalar::random(&mut rng)).collect();
    let g1: Vec<_> = (0..64).map(|_| G1Projective::random(&mut rng).to_affine()).collect();
    let g2: Vec<_> = (0..64).map(|_| G2Projective::random(&mut rng).to_affine()).collect();
    let buf = b.upload_slice(&scalars).unwrap();
    let (b1, b2) = (b.load_g1(g1).unwrap(), b.load_g2(g2).unwrap());
    let dense = || MsmScalars { buf: &buf, len: 64, density: None };
    let domain = Domain::new(10).unwrap();
    for run in 1..=2 {
        let t = std::time::Instant::now();
        let mut v = b.upload_slice(&vec![Scalar::ONE; 1024]).unwrap();
        b.ntt(&mut v, &domain, NttDirection::Forward, true).unwrap();
        let t1 = t.elapsed().as_secs_f64();
        b.msm_g1(&b1, 0, dense()).unwrap();
        let t2 = t.elapsed().as_secs_f64();
        b.msm_g2(&b2, 0, dense()).unwrap();
        let t3 = t.elapsed().as_secs_f64();
        eprintln!("run {run}: NTT 2^10 {t1:.1} s, G1 MSM of 64 {:.1} s, G2 MSM of 64 {:.1} s", t2 - t1, t3 - t2);
    }
}
