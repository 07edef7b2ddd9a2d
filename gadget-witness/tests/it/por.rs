//! `por::por_poseidon` (and the insertion gadgets) against storage-proofs-core's
//! `PoRCircuit::synthesize` run in a witness-only constraint system: the same aux values and
//! inputs, index for index, over random paths.

use bellpepper::util_cs::witness_cs::WitnessCS;
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::ConstraintSystem;
use blstrs::Scalar as Fr;
use cuzk_gadget_witness::por::{self, por_poseidon, por_poseidon_count, por_sha256, Root};
use cuzk_gadget_witness::poseidon::poseidon_value;
use cuzk_gadget_witness::Assignment;
use ff::Field;
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::sha256::{Sha256Domain, Sha256Function, Sha256Hasher};
use filecoin_hashers::HashFunction;
use generic_array::typenum::{U0, U2, U4, U8};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use storage_proofs_core::gadgets::por::{AuthPath, PoRCircuit};
use storage_proofs_core::gadgets::variables::Root as GadgetRoot;
use storage_proofs_core::merkle::{DiskTree, MerkleTreeTrait};

type Path = Vec<(Vec<Fr>, usize)>;

/// The gadget's aux values and inputs (without `ONE`), after the allocations of the leaf and
/// root the caller makes for `Root::Var`.
fn reference<Tree: MerkleTreeTrait>(leaf: Root, path: &Path, root: Root, private: bool) -> (Vec<Fr>, Vec<Fr>) {
    let mut cs = WitnessCS::<Fr>::new();
    let mut enter = |r: Root, name: &str| match r {
        Root::Var(v) => GadgetRoot::Var(AllocatedNum::alloc(cs.namespace(|| name.to_string()), || Ok(v)).unwrap()),
        Root::Val(v) => GadgetRoot::Val(Some(v)),
    };
    let gadget_leaf = enter(leaf, "leaf");
    let gadget_root = enter(root, "root");
    let prefix = usize::from(matches!(leaf, Root::Var(_))) + usize::from(matches!(root, Root::Var(_)));
    let opts: Vec<(Vec<Option<Fr>>, Option<usize>)> = path.iter().map(|(s, i)| (s.iter().copied().map(Some).collect(), Some(*i))).collect();
    let auth_path: AuthPath<Tree::Hasher, Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity> = opts.into();
    PoRCircuit::<Tree>::synthesize(cs.namespace(|| "por"), gadget_leaf, auth_path, gadget_root, private).unwrap();
    let inputs = cs.scalar_inputs();
    assert_eq!(inputs[0], Fr::ONE);
    (cs.scalar_aux()[prefix..].to_vec(), inputs[1..].to_vec())
}

/// The root of `path` computed natively with Filecoin's Poseidon constants.
fn native_root(leaf: Fr, path: &Path) -> Fr {
    let mut cur = leaf;
    for (siblings, index) in path {
        let mut nodes = siblings.clone();
        nodes.insert(*index, cur);
        cur = match nodes.len() {
            2 => poseidon_value(&nodes, &*filecoin_hashers::POSEIDON_CONSTANTS_2),
            4 => poseidon_value(&nodes, &*filecoin_hashers::POSEIDON_CONSTANTS_4),
            8 => poseidon_value(&nodes, &*filecoin_hashers::POSEIDON_CONSTANTS_8),
            n => panic!("arity {n}"),
        };
    }
    cur
}

fn random_path(rng: &mut ChaCha8Rng, levels: &[usize]) -> Path {
    levels.iter().map(|&n| ((0..n - 1).map(|_| Fr::random(&mut *rng)).collect(), rng.gen_range(0..n))).collect()
}

fn check_poseidon<Tree: MerkleTreeTrait>(arities: (usize, usize, usize), base_levels: usize, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (base, sub, top) = arities;
    let mut levels = vec![base; base_levels];
    levels.extend([sub, top].into_iter().filter(|&n| n > 0));
    let mut cases = 0;
    for private in [true, false] {
        for (leaf_var, root_var) in [(true, true), (false, false), (true, false), (false, true)] {
            let path = random_path(&mut rng, &levels);
            let (l, r) = (Fr::random(&mut rng), Fr::random(&mut rng));
            let leaf = if leaf_var { Root::Var(l) } else { Root::Val(l) };
            let root = if root_var { Root::Var(r) } else { Root::Val(r) };
            let (want_aux, want_inputs) = reference::<Tree>(leaf, &path, root, private);

            let mut aux = vec![Fr::ZERO; want_aux.len()];
            let mut inputs = vec![Fr::ZERO; want_inputs.len()];
            let mut a = Assignment::new(&mut aux, &mut inputs);
            let computed = por_poseidon(&mut a, leaf, &path, arities, root, private).expect("a path of the tree's shape");
            a.finish().expect("the writer fills exactly the gadget's windows");
            for (i, (g, w)) in aux.iter().zip(&want_aux).enumerate() {
                assert_eq!(g, w, "{arities:?} private {private}: aux {i} of {} differs", want_aux.len());
            }
            assert_eq!(inputs, want_inputs, "{arities:?} private {private}: inputs differ");
            assert_eq!(computed, native_root(l, &path));
            assert_eq!(por_poseidon_count(levels.len(), arities, leaf, root, private), (want_aux.len(), want_inputs.len()));
            cases += 1;
        }
    }
    assert_eq!(cases, 8);
}

/// 2 KiB sectors: an octal tree of depth 3.
#[test]
fn poseidon_8_0_0() {
    check_poseidon::<DiskTree<PoseidonHasher, U8, U0, U0>>((8, 0, 0), 3, 1);
}

/// 32 GiB sectors' shape (fewer base levels).
#[test]
fn poseidon_8_8_0() {
    check_poseidon::<DiskTree<PoseidonHasher, U8, U8, U0>>((8, 8, 0), 3, 2);
}

/// 64 GiB sectors' shape.
#[test]
fn poseidon_8_8_2() {
    check_poseidon::<DiskTree<PoseidonHasher, U8, U8, U2>>((8, 8, 2), 2, 3);
}

#[test]
fn poseidon_2_0_0() {
    check_poseidon::<DiskTree<PoseidonHasher, U2, U0, U0>>((2, 0, 0), 6, 4);
}

#[test]
fn poseidon_4_2_0() {
    check_poseidon::<DiskTree<PoseidonHasher, U4, U2, U0>>((4, 2, 0), 3, 5);
}

/// 32 GiB sectors' full depth: 9 base levels, a sub-tree level (30 index bits).
#[test]
fn poseidon_8_8_0_full_depth() {
    check_poseidon::<DiskTree<PoseidonHasher, U8, U8, U0>>((8, 8, 0), 9, 6);
}

/// More than 254 index bits: two packed inputs.
#[test]
fn poseidon_binary_two_packed_inputs() {
    check_poseidon::<DiskTree<PoseidonHasher, U2, U0, U0>>((2, 0, 0), 260, 7);
}

/// `insert` of every size against storage-proofs-core's gadget, at every index.
#[test]
fn insert_every_index() {
    use bellpepper_core::boolean::{AllocatedBit, Boolean};
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for size in [2usize, 4, 8, 16] {
        for index in 0..size {
            let element = Fr::random(&mut rng);
            let elements: Vec<Fr> = (0..size - 1).map(|_| Fr::random(&mut rng)).collect();
            let bits: Vec<bool> = (0..size.trailing_zeros()).map(|i| (index >> i) & 1 == 1).collect();

            let mut cs = WitnessCS::<Fr>::new();
            let el = AllocatedNum::alloc(cs.namespace(|| "el"), || Ok(element)).unwrap();
            let els: Vec<_> = elements.iter().enumerate().map(|(i, v)| AllocatedNum::alloc(cs.namespace(|| format!("e{i}")), || Ok(*v)).unwrap()).collect();
            let gbits: Vec<Boolean> =
                bits.iter().enumerate().map(|(i, b)| Boolean::from(AllocatedBit::alloc(cs.namespace(|| format!("b{i}")), Some(*b)).unwrap())).collect();
            let prefix = cs.scalar_aux().len();
            let res = storage_proofs_core::gadgets::insertion::insert(&mut cs, &el, &gbits, &els).unwrap();
            let want = cs.scalar_aux()[prefix..].to_vec();

            let mut aux = vec![Fr::ZERO; want.len()];
            let mut out = vec![Fr::ZERO; size];
            let mut a = Assignment::new(&mut aux, &mut []);
            por::insert(&mut a, element, &bits, &elements, &mut out);
            a.finish().unwrap();
            assert_eq!(aux, want, "size {size} index {index}");
            let res: Vec<Fr> = res.iter().map(|n| n.get_value().unwrap()).collect();
            assert_eq!(out, res);
            let mut expected = elements.clone();
            expected.insert(index, element);
            assert_eq!(out, expected);
        }
    }
}

/// The root of a binary SHA-256 path computed natively (filecoin-hashers' `hash2`).
fn native_sha256_root(leaf: Fr, path: &Path) -> Fr {
    let mut cur = leaf;
    for (siblings, index) in path {
        let (l, r) = if *index == 0 { (cur, siblings[0]) } else { (siblings[0], cur) };
        let h: Sha256Domain = <Sha256Function as HashFunction<Sha256Domain>>::hash2(&Sha256Domain::from(l), &Sha256Domain::from(r));
        cur = h.into();
    }
    cur
}

/// The data tree of `comm_d`: binary SHA-256, every leaf/root entry and privacy.
#[test]
fn sha256_2_0_0() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let mut level_aux = None;
    for private in [true, false] {
        for (leaf_var, root_var) in [(true, true), (false, false), (true, false), (false, true)] {
            let depth = 3;
            let path = random_path(&mut rng, &vec![2; depth]);
            let (l, r) = (Fr::random(&mut rng), Fr::random(&mut rng));
            let leaf = if leaf_var { Root::Var(l) } else { Root::Val(l) };
            let root = if root_var { Root::Var(r) } else { Root::Val(r) };
            let (want_aux, want_inputs) = reference::<DiskTree<Sha256Hasher, U2, U0, U0>>(leaf, &path, root, private);

            let mut aux = vec![Fr::ZERO; want_aux.len()];
            let mut inputs = vec![Fr::ZERO; want_inputs.len()];
            let mut a = Assignment::new(&mut aux, &mut inputs);
            let computed = por_sha256(&mut a, leaf, &path, root, private).expect("a path of the tree's shape");
            a.finish().expect("the writer fills exactly the gadget's windows");
            for (i, (g, w)) in aux.iter().zip(&want_aux).enumerate() {
                assert_eq!(g, w, "sha256 private {private}: aux {i} of {} differs", want_aux.len());
            }
            assert_eq!(inputs, want_inputs, "sha256 private {private}: inputs differ");
            assert_eq!(computed, native_sha256_root(l, &path));
            let fixed = usize::from(!leaf_var) + usize::from(!root_var);
            assert_eq!((want_aux.len() - fixed) % depth, 0);
            let per_level = (want_aux.len() - fixed) / depth;
            assert_eq!(*level_aux.get_or_insert(per_level), per_level);
        }
    }
    println!("SHA-256 PoR: {} aux per level", level_aux.unwrap());
}

/// Paths of the wrong shape are refused with an error, not a panic: the same cases the gadget
/// asserts on (wrong sibling count, index past the arity, no room for the sub and top levels).
#[test]
fn paths_of_the_wrong_shape_are_refused() {
    let level = |siblings: usize, index: usize| (vec![Fr::ZERO; siblings], index);
    let run = |path: &Path, arities| {
        let mut a = Assignment::new(&mut [], &mut []);
        por_poseidon(&mut a, Root::Var(Fr::ONE), path, arities, Root::Var(Fr::ONE), true)
    };
    let ok: Path = vec![level(7, 3), level(7, 0), level(7, 7), level(1, 1)];
    assert!(run(&ok, (8, 8, 2)).is_ok());
    assert!(run(&ok[..3].to_vec(), (8, 8, 0)).is_ok());
    assert!(run(&ok[..3].to_vec(), (8, 0, 0)).is_ok());
    assert!(run(&ok, (8, 8, 0)).is_err(), "a binary level where the sub level of 8 belongs");
    assert!(run(&vec![level(7, 8)], (8, 0, 0)).is_err(), "index past the arity");
    assert!(run(&vec![level(6, 0)], (8, 0, 0)).is_err(), "too few siblings");
    assert!(run(&vec![], (8, 8, 2)).is_err(), "no room for the sub and top levels");
    assert!(run(&ok[..3].to_vec(), (8, 0, 2)).is_err(), "a top level without a sub level");
    assert!(run(&ok[..3].to_vec(), (11, 0, 0)).is_err(), "no Poseidon constants for arity 11");
    let mut a = Assignment::new(&mut [], &mut []);
    assert!(por_sha256(&mut a, Root::Var(Fr::ONE), &[level(1, 1), level(1, 2)], Root::Var(Fr::ONE), true).is_err(), "index past a binary arity");
    assert_eq!(por::level_arities((8, 8, 2), 4), Ok(vec![8, 8, 8, 2]));
    assert_eq!(por::level_arities((8, 8, 0), 3), Ok(vec![8, 8, 8]));
}
