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
        // The largest query a load holds, as the decoded vectors take it in memory.
        let (g1, g2) = (std::mem::size_of::<blstrs::G1Affine>(), std::mem::size_of::<blstrs::G2Affine>());
        let decoded = [real.h.len() * g1, real.l.len() * g1, real.a.len() * g1, real.b_g1.len() * g1, real.b_g2.len() * g2].into_iter().max().unwrap() as u64;
        assert_eq!(QueryLengths::of(&m).unwrap().largest_query_bytes(), decoded, "{kind:?} 2^{log}: largest query");
        assert_eq!(cuzk_core::params::ParamsLayout::parse(&file).unwrap().largest_query_bytes(), decoded, "{kind:?} 2^{log}: largest query in the file");
        // Points repeat only past the distinct count: the queries here are all distinct.
        let mut h: Vec<_> = t.h.iter().map(|p| p.to_compressed()).collect();
        h.sort();
        h.dedup();
        assert_eq!(h.len(), t.h.len());
    }
}
