use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand::SeedableRng;
fn main() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    for n in [4096usize, 16384] {
        let s: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        let p1: Vec<_> = (0..n).map(|_| G1Projective::random(&mut rng).to_affine()).collect();
        let p2: Vec<_> = (0..n).map(|_| G2Projective::random(&mut rng).to_affine()).collect();
        let t = std::time::Instant::now();
        let _ = cuzk_backend_cpu::msm::msm::<G1Projective>(&p1, &s, None);
        let a = t.elapsed();
        let t = std::time::Instant::now();
        let _ = cuzk_backend_cpu::msm::msm::<G2Projective>(&p2, &s, None);
        let b = t.elapsed();
        let t = std::time::Instant::now();
        let _ = G1Projective::multi_exp(&p1.iter().map(|p| G1Projective::from(p)).collect::<Vec<_>>(), &s);
        println!("n={n} g1 {:?} g2 {:?} blst-g1 {:?} c={}", a, b, t.elapsed(), 0);
    }
}
