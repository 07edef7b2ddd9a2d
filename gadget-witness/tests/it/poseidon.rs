//! `poseidon::poseidon_hash` against `neptune::circuit::poseidon_hash` run in a witness-only
//! constraint system: the same aux values, index for index, and the same hash.

use bellpepper::util_cs::witness_cs::WitnessCS;
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::ConstraintSystem;
use blstrs::Scalar as Fr;
use cuzk_gadget_witness::poseidon::{self, poseidon_aux_count, poseidon_hash, poseidon_value};
use cuzk_gadget_witness::Assignment;
use ff::Field;
use generic_array::typenum::{U11, U16, U2, U4, U8};
use neptune::hash_type::{CType, HashType};
use neptune::poseidon::{Arity, PoseidonConstants};
use neptune::Strength;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The gadget's aux values after the preimage's own allocations, and its hash.
fn reference<A: Arity<Fr>>(preimage: &[Fr], c: &PoseidonConstants<Fr, A>) -> (Vec<Fr>, Fr) {
    let mut cs = WitnessCS::<Fr>::new();
    let nums = preimage.iter().enumerate().map(|(i, v)| AllocatedNum::alloc(cs.namespace(|| format!("x {i}")), || Ok(*v)).unwrap()).collect();
    let h = neptune::circuit::poseidon_hash(cs.namespace(|| "hash"), nums, c).unwrap();
    assert_eq!(cs.scalar_inputs(), vec![Fr::ONE], "the gadget allocates no inputs");
    let aux = cs.scalar_aux();
    assert_eq!(&aux[..preimage.len()], preimage);
    (aux[preimage.len()..].to_vec(), h.get_value().unwrap())
}

fn check<A: Arity<Fr>>(c: &PoseidonConstants<Fr, A>, seed: u64, cases: usize) -> usize {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut count = 0;
    for case in 0..cases {
        let preimage: Vec<Fr> = (0..A::to_usize())
            .map(|i| match (case, i % 3) {
                // A few structured preimages too: zeros and small values.
                (0, _) => Fr::ZERO,
                (1, 0) => Fr::ONE,
                _ => Fr::random(&mut rng),
            })
            .collect();
        let (want, want_hash) = reference(&preimage, c);
        let mut aux = vec![Fr::ZERO; want.len()];
        let mut inputs = [];
        let mut a = Assignment::new(&mut aux, &mut inputs);
        let got_hash = poseidon_hash(&mut a, &preimage, c);
        a.finish().expect("the writer fills exactly the gadget's aux window");
        for (i, (g, w)) in aux.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "arity {} case {case}: aux {i} differs", A::to_usize());
        }
        assert_eq!(got_hash, want_hash);
        assert_eq!(*want.last().unwrap(), want_hash, "the hash is the last allocation");
        assert_eq!(poseidon_aux_count(c), want.len());
        count = want.len();
    }
    count
}

#[test]
fn arity_2() {
    let n = check(&*filecoin_hashers::POSEIDON_CONSTANTS_2, 2, 8);
    assert_eq!(n, poseidon_aux_count(poseidon::constants_2()));
}

#[test]
fn arity_4() {
    check(&*filecoin_hashers::POSEIDON_CONSTANTS_4, 4, 4);
}

#[test]
fn arity_8() {
    check(&*filecoin_hashers::POSEIDON_CONSTANTS_8, 8, 8);
}

#[test]
fn arity_11() {
    check(&*filecoin_hashers::POSEIDON_CONSTANTS_11, 11, 8);
}

#[test]
fn arity_16() {
    check(&*filecoin_hashers::POSEIDON_CONSTANTS_16, 16, 3);
}

/// storage-proofs-update's `POSEIDON_CONSTANTS_GEN_RANDOMNESS`: arity 2 with a custom domain tag.
#[test]
fn gen_randomness_constants() {
    let c = PoseidonConstants::<Fr, U2>::new_with_strength_and_type(Strength::Standard, HashType::Custom(CType::Arbitrary(1)));
    check(&c, 20, 8);
}

/// The writer's own constants are filecoin-hashers' and the hash is the native one.
#[test]
fn filecoin_constants_and_native_hash() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    fn same<A: Arity<Fr>>(ours: &PoseidonConstants<Fr, A>, theirs: &PoseidonConstants<Fr, A>, rng: &mut ChaCha8Rng) {
        assert!(ours.compressed_round_constants == theirs.compressed_round_constants);
        assert!(ours.domain_tag == theirs.domain_tag);
        let preimage: Vec<Fr> = (0..A::to_usize()).map(|_| Fr::random(&mut *rng)).collect();
        let mut aux = vec![Fr::ZERO; poseidon_aux_count(ours)];
        let mut a = Assignment::new(&mut aux, &mut []);
        let h = poseidon_hash(&mut a, &preimage, ours);
        a.finish().unwrap();
        assert_eq!(h, poseidon_value(&preimage, theirs));
    }
    same::<U2>(poseidon::constants_2(), &filecoin_hashers::POSEIDON_CONSTANTS_2, &mut rng);
    same::<U4>(poseidon::constants_4(), &filecoin_hashers::POSEIDON_CONSTANTS_4, &mut rng);
    same::<U8>(poseidon::constants_8(), &filecoin_hashers::POSEIDON_CONSTANTS_8, &mut rng);
    same::<U11>(poseidon::constants_11(), &filecoin_hashers::POSEIDON_CONSTANTS_11, &mut rng);
    same::<U16>(poseidon::constants_16(), &filecoin_hashers::POSEIDON_CONSTANTS_16, &mut rng);
}

/// `hash_multi_leaf` picks the constants by arity, as filecoin-hashers does.
#[test]
fn hash_multi_leaf_by_arity() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    for n in [2, 4, 8, 16] {
        let leaves: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
        let mut aux = vec![Fr::ZERO; 2000];
        let mut a = Assignment::new(&mut aux, &mut []);
        let h = poseidon::hash_multi_leaf(&mut a, &leaves);
        let want = match n {
            2 => poseidon_value(&leaves, &*filecoin_hashers::POSEIDON_CONSTANTS_2),
            4 => poseidon_value(&leaves, &*filecoin_hashers::POSEIDON_CONSTANTS_4),
            8 => poseidon_value(&leaves, &*filecoin_hashers::POSEIDON_CONSTANTS_8),
            _ => poseidon_value(&leaves, &*filecoin_hashers::POSEIDON_CONSTANTS_16),
        };
        assert_eq!(h, want);
    }
}
