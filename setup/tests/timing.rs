//! Timing-only parameters have the queries real parameters of the same circuit have, and the
//! file size they would have.

use cuzk_circuits::CircuitKind;
use cuzk_core::matrices::ConstraintMatrices;
use cuzk_setup::timing::{timing_params, QueryLengths};
use rand::SeedableRng;

#[test]
fn timing_parameters_match_the_real_parameters_query_for_query() {
    for (kind, log) in [(CircuitKind::SquaringChain, 6), (CircuitKind::Sha256Chain, 15)] {
        let circuit = kind.instance(log, 3).unwrap();
        let real = cuzk_setup::generate_parameters(circuit.clone(), &mut rand_chacha::ChaCha8Rng::seed_from_u64(1)).unwrap();
        let m = ConstraintMatrices::record(circuit).unwrap();
        let t = timing_params(&m).unwrap();
        let lens = |p: &cuzk_core::params::Parameters| [p.vk.ic.len(), p.h.len(), p.l.len(), p.a.len(), p.b_g1.len(), p.b_g2.len()];
        assert_eq!(lens(&t), lens(&real), "{kind:?} 2^{log}: query lengths");
        let mut file = Vec::new();
        real.write_to(&mut file).unwrap();
        assert_eq!(QueryLengths::of(&m).unwrap().file_bytes(), file.len() as u64, "{kind:?} 2^{log}: file size");
        // Points repeat only past the distinct count: the queries here are all distinct.
        let mut h: Vec<_> = t.h.iter().map(|p| p.to_compressed()).collect();
        h.sort();
        h.dedup();
        assert_eq!(h.len(), t.h.len());
    }
}
