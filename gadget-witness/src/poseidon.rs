//! Neptune's legacy Poseidon circuit (`neptune::circuit::poseidon_hash`), the one Filecoin's
//! circuits use.
//!
//! The circuit runs the optimized permutation: the compressed round constants, the dense MDS
//! matrix for the full rounds, a pre-sparse matrix before the partial rounds and one sparse
//! matrix per partial round. The state is tracked as linear combinations and allocated only as
//! an S-box input, so the assignment holds values of that representation:
//!
//! - first full round: the domain tag's S-box is a constant; for each preimage element `x`
//!   (already allocated by the caller) `(x + k)^2`, `(x + k)^4` and `(x + k)^5 + k'`;
//! - every other full round, per state element `l`: `l`, `l^2`, `l^4`, `l^5 (+ k)` (the
//!   terminal round adds no constant);
//! - every partial round: the same four for the first state element only;
//! - the hash, state element 1 after the terminal round's MDS product.
//!
//! For arity `a` (width `w = a + 1`), `R_F` full and `R_P` partial rounds that is
//! `3a + 4w(R_F - 1) + 4 R_P + 1` aux values and no inputs: with Filecoin's constants
//! (`R_F = 8`; `R_P` = 55, 56, 57, 57, 59) 311 for arity 2, 377 for 4, 505 for 8, 598 for 11
//! and 761 for 16.

use blstrs::Scalar;
use ff::Field;
use neptune::hash_type::HashType;
use neptune::poseidon::{Arity, PoseidonConstants};
use std::sync::OnceLock;

use crate::Assignment;

/// The widest state the writers keep on the stack (arity 36, neptune's largest).
const MAX_WIDTH: usize = 37;

/// The values `neptune::circuit::poseidon_hash` allocates for `preimage` (whose elements the
/// caller has allocated already), pushed in its order; returns the hash.
///
/// `constants` are the ones the gadget is given (Filecoin's are `PoseidonConstants::new()`,
/// e.g. `filecoin_hashers::POSEIDON_CONSTANTS_8`; see [`constants_2`] and friends). Panics if
/// `preimage` is not `A` elements long (the legacy circuit has no padding).
pub fn poseidon_hash<A: Arity<Scalar>>(a: &mut Assignment<'_>, preimage: &[Scalar], constants: &PoseidonConstants<Scalar, A>) -> Scalar {
    let arity = A::to_usize();
    assert_eq!(preimage.len(), arity, "the legacy Poseidon circuit hashes exactly `arity` elements");
    if let HashType::ConstantLength(length) = constants.hash_type {
        assert_eq!(length, arity, "the legacy Poseidon circuit has no padding");
    }
    let width = arity + 1;
    assert!(width <= MAX_WIDTH);
    let mut state = [Scalar::ZERO; MAX_WIDTH];
    permute(a, preimage, constants, &mut state[..width])
}

#[inline(always)]
fn pow5(x: Scalar) -> Scalar {
    let x2 = x.square();
    x2.square() * x
}

/// An S-box on an element the circuit holds as a linear combination: allocates it, its square,
/// its fourth power and its fifth power plus `key`.
#[inline(always)]
fn sbox(a: &mut Assignment<'_>, l: Scalar, key: Option<Scalar>) -> Scalar {
    a.aux(l);
    let l2 = l.square();
    a.aux(l2);
    let l4 = l2.square();
    a.aux(l4);
    let mut l5 = l4 * l;
    if let Some(k) = key {
        l5 += k;
    }
    a.aux(l5);
    l5
}

/// `state <- state · matrix` (element `j` is the scalar product with column `j`).
#[inline(always)]
fn mul_dense(state: &mut [Scalar], matrix: &[Vec<Scalar>]) {
    let width = state.len();
    let mut out = [Scalar::ZERO; MAX_WIDTH];
    for (j, o) in out[..width].iter_mut().enumerate() {
        let mut acc = Scalar::ZERO;
        for (i, s) in state.iter().enumerate() {
            acc += *s * matrix[i][j];
        }
        *o = acc;
    }
    state.copy_from_slice(&out[..width]);
}

/// The product with a sparse matrix `M''`: dense first column `w_hat`, first row `v_rest`,
/// identity elsewhere.
#[inline(always)]
fn mul_sparse(state: &mut [Scalar], w_hat: &[Scalar], v_rest: &[Scalar]) {
    let s0 = state[0];
    let mut first = Scalar::ZERO;
    for (s, w) in state.iter().zip(w_hat) {
        first += *s * w;
    }
    for (s, v) in state[1..].iter_mut().zip(v_rest) {
        *s += s0 * v;
    }
    state[0] = first;
}

/// The circuit's `product_mds` after round `round` (counting every round from 0).
#[inline(always)]
fn mix<A: Arity<Scalar>>(state: &mut [Scalar], c: &PoseidonConstants<Scalar, A>, round: usize) {
    let sparse_offset = c.half_full_rounds - 1;
    if round == sparse_offset {
        mul_dense(state, &c.pre_sparse_matrix);
    } else if round > sparse_offset && round < c.half_full_rounds + c.partial_rounds {
        let m = &c.sparse_matrixes[round - sparse_offset - 1];
        mul_sparse(state, &m.w_hat, &m.v_rest);
    } else {
        mul_dense(state, &c.mds_matrices.m);
    }
}

fn permute<A: Arity<Scalar>>(a: &mut Assignment<'_>, preimage: &[Scalar], c: &PoseidonConstants<Scalar, A>, state: &mut [Scalar]) -> Scalar {
    let width = state.len();
    let rc = &c.compressed_round_constants;
    let tag = c.domain_tag;
    let mut round = 0;

    // First full round: pre- and post-round keys; the tag's S-box is a constant, the preimage
    // elements are allocated already (no S-box input allocation).
    state[0] = pow5(tag + rc[0]) + rc[width];
    for i in 1..width {
        let l = preimage[i - 1] + rc[i];
        let l2 = l.square();
        a.aux(l2);
        let l4 = l2.square();
        a.aux(l4);
        let l5 = l4 * l + rc[width + i];
        a.aux(l5);
        state[i] = l5;
    }
    let mut k = 2 * width;
    mix(state, c, round);
    round += 1;

    for _ in 1..c.full_rounds / 2 {
        for (i, s) in state.iter_mut().enumerate() {
            *s = sbox(a, *s, Some(rc[k + i]));
        }
        k += width;
        mix(state, c, round);
        round += 1;
    }

    for _ in 0..c.partial_rounds {
        state[0] = sbox(a, state[0], Some(rc[k]));
        k += 1;
        mix(state, c, round);
        round += 1;
    }

    for _ in 0..c.full_rounds / 2 - 1 {
        for (i, s) in state.iter_mut().enumerate() {
            *s = sbox(a, *s, Some(rc[k + i]));
        }
        k += width;
        mix(state, c, round);
        round += 1;
    }

    // Terminal full round: no round keys.
    for s in state.iter_mut() {
        *s = sbox(a, *s, None);
    }
    mix(state, c, round);

    // "hash result": state element 1 allocated.
    a.aux(state[1]);
    state[1]
}

/// The number of aux values [`poseidon_hash`] pushes for `constants`.
pub fn poseidon_aux_count<A: Arity<Scalar>>(constants: &PoseidonConstants<Scalar, A>) -> usize {
    let arity = A::to_usize();
    let width = arity + 1;
    3 * arity + 4 * width * (constants.full_rounds - 1) + 4 * constants.partial_rounds + 1
}

macro_rules! filecoin_constants {
    ($($(#[$doc:meta])* $name:ident, $arity:ident;)*) => {
        $(
            $(#[$doc])*
            pub fn $name() -> &'static PoseidonConstants<Scalar, generic_array::typenum::$arity> {
                static C: OnceLock<PoseidonConstants<Scalar, generic_array::typenum::$arity>> = OnceLock::new();
                C.get_or_init(PoseidonConstants::new)
            }
        )*
    };
}

filecoin_constants! {
    /// `PoseidonConstants::<Scalar, U2>::new()`: filecoin-hashers' `POSEIDON_CONSTANTS_2`
    /// (binary Poseidon trees, 2-layer columns).
    constants_2, U2;
    /// `PoseidonConstants::<Scalar, U4>::new()`: filecoin-hashers' `POSEIDON_CONSTANTS_4`.
    constants_4, U4;
    /// `PoseidonConstants::<Scalar, U8>::new()`: filecoin-hashers' `POSEIDON_CONSTANTS_8`
    /// (octal trees).
    constants_8, U8;
    /// `PoseidonConstants::<Scalar, U11>::new()`: filecoin-hashers' `POSEIDON_CONSTANTS_11`
    /// (11-layer PoRep columns).
    constants_11, U11;
    /// `PoseidonConstants::<Scalar, U16>::new()`: filecoin-hashers' `POSEIDON_CONSTANTS_16`.
    constants_16, U16;
}

/// filecoin-hashers' `PoseidonFunction::hash_multi_leaf_circuit` (and `hash2_circuit`,
/// `hash_leaf_circuit` for two leaves) for `leaves.len()` of 2, 4, 8 or 16: [`poseidon_hash`]
/// with that arity's Filecoin constants. Panics on other lengths.
pub fn hash_multi_leaf(a: &mut Assignment<'_>, leaves: &[Scalar]) -> Scalar {
    match leaves.len() {
        2 => poseidon_hash(a, leaves, constants_2()),
        4 => poseidon_hash(a, leaves, constants_4()),
        8 => poseidon_hash(a, leaves, constants_8()),
        16 => poseidon_hash(a, leaves, constants_16()),
        n => panic!("no Filecoin Poseidon constants for arity {n}"),
    }
}

/// The native Poseidon hash of `preimage` (neptune's `Poseidon::hash` with `constants`), for
/// callers that need a value the circuit recomputes without writing its assignment.
pub fn poseidon_value<A: Arity<Scalar>>(preimage: &[Scalar], constants: &PoseidonConstants<Scalar, A>) -> Scalar {
    let mut p = neptune::Poseidon::<Scalar, A>::new_with_preimage(preimage, constants);
    p.hash()
}
