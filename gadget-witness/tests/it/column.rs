//! `column::alloc_column` and `column::hash_single_column` against storage-proofs-porep's
//! `Column::alloc` and `hash_single_column` (private to porep: reproduced here from its two
//! lines, `AllocatedNum::alloc` per row, then `neptune::circuit::poseidon_hash` with
//! filecoin-hashers' constants for 2 or 11 rows) run in a witness-only constraint system.

use bellpepper::util_cs::witness_cs::WitnessCS;
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::ConstraintSystem;
use blstrs::Scalar as Fr;
use cuzk_gadget_witness::column::{alloc_column, hash_single_column};
use cuzk_gadget_witness::Assignment;
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn reference(rows: &[Fr]) -> (Vec<Fr>, Fr) {
    let mut cs = WitnessCS::<Fr>::new();
    let nums: Vec<_> = rows.iter().enumerate().map(|(i, v)| AllocatedNum::alloc(cs.namespace(|| format!("column_num_row_{i}")), || Ok(*v)).unwrap()).collect();
    let h = match rows.len() {
        2 => neptune::circuit::poseidon_hash(cs.namespace(|| "column hash"), nums, &*filecoin_hashers::POSEIDON_CONSTANTS_2),
        11 => neptune::circuit::poseidon_hash(cs.namespace(|| "column hash"), nums, &*filecoin_hashers::POSEIDON_CONSTANTS_11),
        n => panic!("{n}"),
    }
    .unwrap();
    assert_eq!(cs.scalar_inputs(), vec![Fr::ONE]);
    (cs.scalar_aux(), h.get_value().unwrap())
}

#[test]
fn columns_of_2_and_11_layers() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for layers in [2, 11] {
        for _ in 0..4 {
            let rows: Vec<Fr> = (0..layers).map(|_| Fr::random(&mut rng)).collect();
            let (want, want_hash) = reference(&rows);
            let mut aux = vec![Fr::ZERO; want.len()];
            let mut a = Assignment::new(&mut aux, &mut []);
            alloc_column(&mut a, &rows);
            let h = hash_single_column(&mut a, &rows);
            a.finish().expect("the writer fills exactly the gadgets' window");
            for (i, (g, w)) in aux.iter().zip(&want).enumerate() {
                assert_eq!(g, w, "{layers} layers: aux {i} differs");
            }
            assert_eq!(h, want_hash);
        }
    }
}
