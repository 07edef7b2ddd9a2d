//! `por::por_no_challenge_input_*` and `por::select_num` against storage-proofs-core's
//! `por_no_challenge_input` and `insertion::select` (the gadgets SnapDeals' circuit runs per
//! challenge) in a witness-only constraint system: the same aux values, index for index.

use bellpepper::util_cs::witness_cs::WitnessCS;
use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::ConstraintSystem;
use blstrs::Scalar as Fr;
use cuzk_gadget_witness::por::{por_no_challenge_input_poseidon, por_no_challenge_input_sha256, select_num};
use cuzk_gadget_witness::Assignment;
use ff::Field;
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::sha256::Sha256Hasher;
use generic_array::typenum::{U0, U2, U8};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use storage_proofs_core::merkle::{DiskTree, MerkleTreeTrait};

/// A random path of the given arities per level, its index bits (least significant first).
fn random_path(rng: &mut ChaCha8Rng, levels: &[usize]) -> (Vec<Vec<Fr>>, Vec<bool>) {
    let mut bits = Vec::new();
    let path = levels
        .iter()
        .map(|&n| {
            let i = rng.gen_range(0..n);
            bits.extend((0..n.trailing_zeros()).map(|b| (i >> b) & 1 == 1));
            (0..n - 1).map(|_| Fr::random(&mut *rng)).collect()
        })
        .collect();
    (path, bits)
}

/// The gadget's aux values after the caller's allocations (leaf, root, siblings, bits).
fn reference<Tree: MerkleTreeTrait>(leaf: Fr, path: &[Vec<Fr>], bits: &[bool]) -> Vec<Fr> {
    let mut cs = WitnessCS::<Fr>::new();
    let leaf = AllocatedNum::alloc(cs.namespace(|| "leaf"), || Ok(leaf)).unwrap();
    let root = AllocatedNum::alloc(cs.namespace(|| "root"), || Ok(Fr::ONE)).unwrap();
    let bits: Vec<AllocatedBit> = bits.iter().enumerate().map(|(i, b)| AllocatedBit::alloc(cs.namespace(|| format!("bit {i}")), Some(*b)).unwrap()).collect();
    let path: Vec<Vec<AllocatedNum<Fr>>> = path
        .iter()
        .enumerate()
        .map(|(l, s)| s.iter().enumerate().map(|(j, v)| AllocatedNum::alloc(cs.namespace(|| format!("sibling {l} {j}")), || Ok(*v)).unwrap()).collect())
        .collect();
    let prefix = cs.scalar_aux().len();
    storage_proofs_core::gadgets::por::por_no_challenge_input::<Tree, _>(cs.namespace(|| "por"), bits, leaf, path, root).unwrap();
    assert_eq!(cs.scalar_inputs().len(), 1, "the gadget allocates no inputs");
    cs.scalar_aux()[prefix..].to_vec()
}

fn compare(what: &str, got: &[Fr], want: &[Fr]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
        panic!("{what}: aux {i} of {} differs", want.len());
    }
}

fn check_poseidon<Tree: MerkleTreeTrait>(arities: (usize, usize, usize), levels: &[usize], seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for case in 0..4 {
        let (path, bits) = random_path(&mut rng, levels);
        let leaf = Fr::random(&mut rng);
        let want = reference::<Tree>(leaf, &path, &bits);
        let mut aux = vec![Fr::ZERO; want.len()];
        let mut a = Assignment::new(&mut aux, &mut []);
        por_no_challenge_input_poseidon(&mut a, leaf, &path, &bits, arities).expect("a well-shaped path");
        a.finish().expect("the writer fills exactly the gadget's window");
        compare(&format!("{arities:?} case {case}"), &aux, &want);
    }
}

/// SnapDeals' 2 KiB replica trees: octal, depth 2 (64 nodes).
#[test]
fn poseidon_8_0_0() {
    check_poseidon::<DiskTree<PoseidonHasher, U8, U0, U0>>((8, 0, 0), &[8, 8], 1);
}

/// 32 GiB replica trees' shape: base levels, then a sub-tree level of 8.
#[test]
fn poseidon_8_8_0() {
    check_poseidon::<DiskTree<PoseidonHasher, U8, U8, U0>>((8, 8, 0), &[8, 8, 8, 8], 2);
}

/// 64 GiB replica trees' shape: also a top level of 2.
#[test]
fn poseidon_8_8_2() {
    check_poseidon::<DiskTree<PoseidonHasher, U8, U8, U2>>((8, 8, 2), &[8, 8, 8, 2], 3);
}

/// The data tree (binary SHA-256) up to an apex leaf.
#[test]
fn sha256_binary() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    for depth in [0, 1, 3] {
        let (path, bits) = random_path(&mut rng, &vec![2; depth]);
        let leaf = Fr::random(&mut rng);
        let want = reference::<DiskTree<Sha256Hasher, U2, U0, U0>>(leaf, &path, &bits);
        let mut aux = vec![Fr::ZERO; want.len()];
        let mut a = Assignment::new(&mut aux, &mut []);
        por_no_challenge_input_sha256(&mut a, leaf, &path, &bits).expect("a well-shaped path");
        a.finish().expect("the writer fills exactly the gadget's window");
        compare(&format!("sha256 depth {depth}"), &aux, &want);
    }
}

/// Malformed paths are errors, not panics.
#[test]
fn malformed_paths_are_errors() {
    let mut a = Assignment::new(&mut [], &mut []);
    let s7 = vec![Fr::ONE; 7];
    assert!(por_no_challenge_input_poseidon(&mut a, Fr::ONE, std::slice::from_ref(&s7), &[true; 2], (8, 0, 0)).is_err(), "too few bits");
    assert!(por_no_challenge_input_poseidon(&mut a, Fr::ONE, std::slice::from_ref(&s7), &[true; 4], (8, 0, 0)).is_err(), "too many bits");
    assert!(por_no_challenge_input_poseidon(&mut a, Fr::ONE, &[vec![Fr::ONE; 6]], &[true; 3], (8, 0, 0)).is_err(), "too few siblings");
    assert!(por_no_challenge_input_poseidon(&mut a, Fr::ONE, &[], &[], (8, 8, 0)).is_err(), "no sub-tree level");
    assert!(por_no_challenge_input_poseidon(&mut a, Fr::ONE, &[s7], &[true; 3], (3, 0, 0)).is_err(), "arity 3");
    assert!(select_num(&mut a, &[Fr::ONE; 3], &[true; 2]).is_err(), "3 of 4");
    assert!(select_num(&mut a, &[Fr::ONE; 4], &[true; 64]).is_err(), "64 bits");
}

/// `select_num` against `insertion::select`, 1 to 128 elements (SnapDeals' apex leaves: 8 or
/// 128), at several indices.
#[test]
fn select_every_size() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for log in 0..=7usize {
        let n = 1 << log;
        for _ in 0..3 {
            let from: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
            let index = rng.gen_range(0..n);
            let bits: Vec<bool> = (0..log).map(|b| (index >> b) & 1 == 1).collect();

            let mut cs = WitnessCS::<Fr>::new();
            let nums: Vec<_> = from.iter().enumerate().map(|(i, v)| AllocatedNum::alloc(cs.namespace(|| format!("e{i}")), || Ok(*v)).unwrap()).collect();
            let gbits: Vec<Boolean> =
                bits.iter().enumerate().map(|(i, b)| Boolean::from(AllocatedBit::alloc(cs.namespace(|| format!("b{i}")), Some(*b)).unwrap())).collect();
            let prefix = cs.scalar_aux().len();
            let picked = storage_proofs_core::gadgets::insertion::select(cs.namespace(|| "select"), &nums, &gbits).unwrap();
            let want = cs.scalar_aux()[prefix..].to_vec();

            let mut aux = vec![Fr::ZERO; want.len()];
            let mut a = Assignment::new(&mut aux, &mut []);
            let got = select_num(&mut a, &from, &bits).expect("2^bits elements");
            a.finish().expect("the writer fills exactly the gadget's window");
            compare(&format!("select of {n}"), &aux, &want);
            assert_eq!(got, picked.get_value().unwrap());
            assert_eq!(got, from[index]);
        }
    }
}
