fn main() {
    use rand::SeedableRng;
    let k: u32 = std::env::args().nth(1).unwrap().parse().unwrap();
    let kind = cuzk_circuits::CircuitKind::from_name(&std::env::args().nth(2).unwrap()).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let t = std::time::Instant::now();
    let p = cuzk_setup::generate_parameters(kind.instance(k, 0).unwrap(), &mut rng).unwrap();
    println!("total {:?} h={}", t.elapsed(), p.h.len());
}
