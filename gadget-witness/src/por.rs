//! storage-proofs-core's Merkle inclusion proof circuit (`gadgets::por::PoRCircuit`) and the
//! `insertion` gadgets it uses.
//!
//! `PoRCircuit::synthesize` allocates, in order:
//!
//! - the leaf, if it enters as `Root::Val` (PoRep passes `Root::Var`: nothing);
//! - per path level (base levels, then the sub-tree level, then the top-tree level), with the
//!   level's arity `n` and index `i < n`: the `log2 n` bits of `i`, least significant first
//!   (`AllocatedBit`s); the `n - 1` siblings (`AllocatedNum`s); the [`insert`] of the current
//!   node among the siblings; the hash of the `n` inserted nodes (Poseidon:
//!   [`crate::poseidon::hash_multi_leaf`]; SHA-256: see [`por_sha256`]);
//! - one input per 254 index bits (`multipack::pack_into_inputs` of all levels' bits);
//! - the root, if it enters as `Root::Val`; the root again as an input unless `private`.
//!
//! Per Poseidon level that is `3 + 7 + 22 + 505 = 537` aux values for arity 8,
//! `2 + 3 + 8 + 377 = 390` for arity 4 and `1 + 1 + 2 + 311 = 315` for arity 2 (e.g. 1,611 for
//! a 2 KiB sector's 3 octal levels, 5,370 for a 32 GiB sector's 9 + 1).

use blstrs::Scalar;
use ff::{Field, PrimeField};

use crate::bits::{num_to_bits_le, pack_bits, pack_into_inputs, Bit};
use crate::sha256::sha256;
use crate::Assignment;

/// How a number enters `PoRCircuit` (storage-proofs-core's `gadgets::variables::Root`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    /// `Root::Var`: a number the caller allocated already; the circuit allocates nothing for it.
    Var(Scalar),
    /// `Root::Val`: the circuit allocates it (one aux value).
    Val(Scalar),
}

impl Root {
    /// The number's value.
    pub fn value(self) -> Scalar {
        match self {
            Root::Var(v) | Root::Val(v) => v,
        }
    }

    /// `Root::allocated`: pushes the value if the circuit allocates it.
    fn allocate(self, a: &mut Assignment<'_>) -> Scalar {
        if let Root::Val(v) = self {
            a.aux(v);
        }
        self.value()
    }
}

/// `insertion::pick`: allocates and returns `if condition { x } else { y }`.
#[inline(always)]
pub fn pick(a: &mut Assignment<'_>, condition: bool, x: Scalar, y: Scalar) -> Scalar {
    let c = if condition { x } else { y };
    a.aux(c);
    c
}

/// `insertion::insert`: `element` inserted among `elements` at the position whose bits
/// (allocated, least significant first) are `bits`, written to `out` (`elements.len() + 1`
/// long). Sizes 2, 4 and 8 use the gadget's dedicated layouts (2, 8 and 2 + 20 allocations);
/// other powers of two its generic `select` per position.
pub fn insert(a: &mut Assignment<'_>, element: Scalar, bits: &[bool], elements: &[Scalar], out: &mut [Scalar]) {
    let size = elements.len() + 1;
    assert_eq!(1 << bits.len(), size, "one index bit per halving");
    assert_eq!(out.len(), size);
    match size {
        2 => insert_2(a, element, bits, elements, out),
        4 => insert_4(a, element, bits, elements, out),
        8 => insert_8(a, element, bits, elements, out),
        _ => {
            let mut choices = vec![Scalar::ZERO; size];
            for (pos, o) in out.iter_mut().enumerate() {
                // The candidate at `pos` when inserting at `index`.
                for (index, c) in choices.iter_mut().enumerate() {
                    *c = match pos.cmp(&index) {
                        std::cmp::Ordering::Less => elements[pos],
                        std::cmp::Ordering::Equal => element,
                        std::cmp::Ordering::Greater => elements[pos - 1],
                    };
                }
                *o = select(a, &mut choices, bits);
            }
        }
    }
}

/// `insertion::select`: picks `from[index]` by halving, most significant bit first; `from` is
/// used as scratch.
fn select(a: &mut Assignment<'_>, from: &mut [Scalar], bits: &[bool]) -> Scalar {
    let mut half = from.len() / 2;
    for &bit in bits.iter().rev() {
        for j in 0..half {
            from[j] = pick(a, bit, from[half + j], from[j]);
        }
        half /= 2;
    }
    from[0]
}

fn insert_2(a: &mut Assignment<'_>, element: Scalar, bits: &[bool], elements: &[Scalar], out: &mut [Scalar]) {
    let b0 = bits[0];
    out[0] = pick(a, b0, elements[0], element);
    out[1] = pick(a, b0, element, elements[0]);
}

fn insert_4(a: &mut Assignment<'_>, x: Scalar, bits: &[bool], e: &[Scalar], out: &mut [Scalar]) {
    let (b0, b1) = (bits[0], bits[1]);
    let (b, c, d) = (e[0], e[1], e[2]);
    let p0_x0 = pick(a, b0, b, x);
    out[0] = pick(a, b1, b, p0_x0);
    let p1_x0 = pick(a, b0, x, b);
    out[1] = pick(a, b1, c, p1_x0);
    let p2_x1 = pick(a, b0, d, x);
    out[2] = pick(a, b1, p2_x1, c);
    let p3_x1 = pick(a, b0, x, d);
    out[3] = pick(a, b1, p3_x1, d);
}

fn insert_8(a: &mut Assignment<'_>, x: Scalar, bits: &[bool], e: &[Scalar], out: &mut [Scalar]) {
    let (b0, b1, b2) = (bits[0], bits[1], bits[2]);
    let (b, c, d, e_, f, g, h) = (e[0], e[1], e[2], e[3], e[4], e[5], e[6]);
    // `AllocatedBit::nor` and `AllocatedBit::and` of the two low bits.
    let nor = !b0 && !b1;
    a.bit(nor);
    let and = b0 && b1;
    a.bit(and);

    let p0_xx0 = pick(a, nor, x, b);
    out[0] = pick(a, b2, b, p0_xx0);

    let p1_x00 = pick(a, b0, x, b);
    let p1_xx0 = pick(a, b1, c, p1_x00);
    out[1] = pick(a, b2, c, p1_xx0);

    let p2_x10 = pick(a, b0, d, x);
    let p2_xx0 = pick(a, b1, p2_x10, c);
    out[2] = pick(a, b2, d, p2_xx0);

    let p3_xx0 = pick(a, and, x, d);
    out[3] = pick(a, b2, e_, p3_xx0);

    let p4_xx1 = pick(a, nor, x, f);
    out[4] = pick(a, b2, p4_xx1, e_);

    let p5_x01 = pick(a, b0, x, f);
    let p5_xx1 = pick(a, b1, g, p5_x01);
    out[5] = pick(a, b2, p5_xx1, f);

    let p6_x11 = pick(a, b0, h, x);
    let p6_xx1 = pick(a, b1, p6_x11, g);
    out[6] = pick(a, b2, p6_xx1, g);

    let p7_xx1 = pick(a, and, x, h);
    out[7] = pick(a, b2, p7_xx1, h);
}

/// The arity of each level of a `levels`-level path in a tree of arities `(base, sub, top)`
/// (sub and top 0 for none): the base levels, then one sub level and one top level where those
/// are not 0, from the leaf up. Fails for arities that are not powers of two (base at least 2,
/// at most 64), a top level without a sub level, or a path too short for the sub and top levels.
pub fn level_arities(arities: (usize, usize, usize), levels: usize) -> Result<Vec<usize>, ShapeError> {
    let (base, sub, top) = arities;
    let shape = |detail: String| Err(ShapeError(format!("arities {arities:?}: {detail}")));
    if !base.is_power_of_two() || base < 2 || [sub, top].iter().any(|&n| n != 0 && !n.is_power_of_two()) || (top > 0 && sub == 0) {
        return shape("not a tree of power-of-two arities".into());
    }
    if base.max(sub).max(top) > 64 {
        return shape("an arity above 64".into());
    }
    let Some(base_levels) = levels.checked_sub(usize::from(sub > 0) + usize::from(top > 0)) else {
        return shape(format!("a path of {levels} levels"));
    };
    Ok(std::iter::repeat_n(base, base_levels).chain([sub, top].into_iter().filter(|&n| n > 0)).collect())
}

/// Fails unless every arity has Filecoin Poseidon constants (2, 4, 8 or 16; 0 for no level).
fn poseidon_arities(arities: (usize, usize, usize)) -> Result<(), ShapeError> {
    let (base, sub, top) = arities;
    if !matches!(base, 2 | 4 | 8 | 16) || !matches!(sub, 0 | 2 | 4 | 8 | 16) || !matches!(top, 0 | 2 | 4 | 8 | 16) {
        return Err(ShapeError(format!("no Filecoin Poseidon constants for arities {arities:?}")));
    }
    Ok(())
}

/// `PoRCircuit::synthesize` with the levels hashed by `hash`: returns the computed root. Fails,
/// having written part of the assignment, on a path whose shape the gadget would reject (it
/// asserts): a level with other than `arity - 1` siblings, or an index past its arity.
fn por(
    a: &mut Assignment<'_>,
    leaf: Root,
    path: &[(Vec<Scalar>, usize)],
    arities: (usize, usize, usize),
    root: Root,
    private: bool,
    mut hash: impl FnMut(&mut Assignment<'_>, &[Scalar]) -> Scalar,
) -> Result<Scalar, ShapeError> {
    let level_arities = level_arities(arities, path.len())?;
    let mut cur = leaf.allocate(a);
    let mut index_bits = Vec::with_capacity(path.len() * 4);
    let mut inserted = [Scalar::ZERO; 64];
    for (level, ((siblings, index), arity)) in path.iter().zip(level_arities).enumerate() {
        if siblings.len() + 1 != arity || *index >= arity {
            return Err(ShapeError(format!("level {level} has {} siblings and index {index}, arity {arity}", siblings.len())));
        }
        let bit_count = arity.trailing_zeros() as usize;
        let mut bits = [false; 6];
        for (i, bit) in bits[..bit_count].iter_mut().enumerate() {
            *bit = (index >> i) & 1 == 1;
            index_bits.push(Bit::alloc(a, *bit));
        }
        for s in siblings {
            a.aux(*s);
        }
        let out = &mut inserted[..arity];
        insert(a, cur, &bits[..bit_count], siblings, out);
        cur = hash(a, out);
    }

    pack_into_inputs(a, &index_bits);
    let rt = root.allocate(a);
    if !private {
        a.input(rt);
    }
    Ok(cur)
}

/// `PoRCircuit::<Tree>::synthesize` for a Poseidon tree of arities `(base, sub, top)` (0 for
/// no sub or top tree: `(8, 0, 0)`, `(8, 8, 0)`, `(8, 8, 2)`, `(2, 0, 0)`, ...), the path given
/// as `MerkleProof::as_options()` gives it: per level from the leaf up, the siblings and the
/// node's index among its siblings. Returns the root the circuit computes (the circuit only
/// constrains it equal to `root`, whose value is what it allocates or inputizes). Fails on a
/// path of the wrong shape (see [`level_arities`]) or arities without Poseidon constants.
pub fn por_poseidon(
    a: &mut Assignment<'_>,
    leaf: Root,
    path: &[(Vec<Scalar>, usize)],
    arities: (usize, usize, usize),
    root: Root,
    private: bool,
) -> Result<Scalar, ShapeError> {
    poseidon_arities(arities)?;
    por(a, leaf, path, arities, root, private, crate::poseidon::hash_multi_leaf)
}

/// The aux values and inputs [`por_poseidon`] pushes for a path of `levels` levels.
pub fn por_poseidon_count(levels: usize, arities: (usize, usize, usize), leaf: Root, root: Root, private: bool) -> (usize, usize) {
    let (base, sub, top) = arities;
    let extra = usize::from(sub > 0) + usize::from(top > 0);
    let level = |n: usize| {
        let insert = match n {
            2 => 2,
            4 => 8,
            8 => 22,
            // `select` per position: n - 1 picks each.
            _ => n * (n - 1),
        };
        let hash = 3 * n + 4 * (n + 1) * 7 + 4 * partial_rounds(n) + 1;
        n.trailing_zeros() as usize + (n - 1) + insert + hash
    };
    let mut aux = (levels - extra) * level(base);
    let mut bits = (levels - extra) * base.trailing_zeros() as usize;
    for n in [sub, top] {
        if n > 0 {
            aux += level(n);
            bits += n.trailing_zeros() as usize;
        }
    }
    aux += usize::from(matches!(leaf, Root::Val(_))) + usize::from(matches!(root, Root::Val(_)));
    let inputs = bits.div_ceil(254) + usize::from(!private);
    (aux, inputs)
}

/// `PoRCircuit::<Tree>::synthesize` for filecoin-hashers' binary SHA-256 trees (`2-0-0`, the
/// data tree of `comm_d`), the path as for [`por_poseidon`] (one sibling per level). Each
/// level hashes with `Sha256Function::hash_multi_leaf_circuit`: see [`sha256_multi_leaf`].
/// Fails on a path of the wrong shape.
pub fn por_sha256(a: &mut Assignment<'_>, leaf: Root, path: &[(Vec<Scalar>, usize)], root: Root, private: bool) -> Result<Scalar, ShapeError> {
    por(a, leaf, path, (2, 0, 0), root, private, sha256_multi_leaf)
}

/// filecoin-hashers' `Sha256Function::hash_multi_leaf_circuit` (and `hash2_circuit` for two
/// leaves): each leaf's 255 bits (`AllocatedNum::to_bits_le`), padded to whole bytes with
/// constant zeros, each byte most significant bit first; the SHA-256 of them all; its first
/// 254 bits, each byte least significant bit first, packed (`multipack::pack_bits`: one aux).
/// Returns the packed hash.
pub fn sha256_multi_leaf(a: &mut Assignment<'_>, leaves: &[Scalar]) -> Scalar {
    let mut preimage = Vec::with_capacity(leaves.len() * 256);
    for leaf in leaves {
        let mut bits = num_to_bits_le(a, *leaf);
        bits.resize(bits.len().next_multiple_of(8), Bit::Constant(false));
        preimage.extend(bits.chunks_exact(8).flat_map(|byte| byte.iter().rev()));
    }
    let digest = sha256(a, &preimage);
    let le: Vec<Bit> = digest.chunks(8).flat_map(|byte| byte.iter().rev()).take(Scalar::CAPACITY as usize).copied().collect();
    pack_bits(a, &le)
}

/// Neptune's partial round counts (128-bit strength) for Filecoin's tree arities.
fn partial_rounds(arity: usize) -> usize {
    match arity {
        2 => crate::poseidon::constants_2().partial_rounds,
        4 => crate::poseidon::constants_4().partial_rounds,
        8 => crate::poseidon::constants_8().partial_rounds,
        16 => crate::poseidon::constants_16().partial_rounds,
        n => panic!("no Filecoin Poseidon constants for arity {n}"),
    }
}

/// A path, index or tree shape that storage-proofs-core's gadgets would reject (they assert):
/// nothing is written past the point where it was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ShapeError(pub String);

/// storage-proofs-core's `insertion::select`: `from[index]`, `index` given by its bits
/// (allocated, least significant first), picked by halving from the most significant bit:
/// `from.len() - 1` aux values ([`pick`]s). Fails unless `from` has `2^bits.len()` elements.
pub fn select_num(a: &mut Assignment<'_>, from: &[Scalar], bits: &[bool]) -> Result<Scalar, ShapeError> {
    if bits.len() >= usize::BITS as usize || from.len() != 1 << bits.len() {
        return Err(ShapeError(format!("select of {} elements by {} bits", from.len(), bits.len())));
    }
    let mut scratch = from.to_vec();
    Ok(select(a, &mut scratch, bits))
}

/// storage-proofs-core's `gadgets::por::por_no_challenge_input` with the levels hashed by
/// `hash`: the leaf, the siblings (per level, allocated by the caller already) and the index
/// bits (allocated by the caller: the challenge's bits, least significant first, consumed
/// `log2 arity` per level) enter allocated; per level it writes the [`insert`] of the current
/// node among the siblings and the level's hash. The computed root is only constrained equal
/// to the given root: nothing else is allocated. Returns the computed root.
fn por_no_challenge_input(
    a: &mut Assignment<'_>,
    leaf: Scalar,
    path: &[Vec<Scalar>],
    index_bits: &[bool],
    arities: (usize, usize, usize),
    mut hash: impl FnMut(&mut Assignment<'_>, &[Scalar]) -> Scalar,
) -> Result<Scalar, ShapeError> {
    let level_arities = level_arities(arities, path.len())?;
    let needed: usize = level_arities.iter().map(|n| n.trailing_zeros() as usize).sum();
    if needed != index_bits.len() {
        return Err(ShapeError(format!("arities {arities:?}: {} index bits for a path of {} levels, which takes {needed}", index_bits.len(), path.len())));
    }
    let mut cur = leaf;
    let mut bits = index_bits;
    let mut inserted = [Scalar::ZERO; 64];
    for (level, (siblings, arity)) in path.iter().zip(level_arities).enumerate() {
        if siblings.len() != arity - 1 {
            return Err(ShapeError(format!("arities {arities:?}: level {level} has {} siblings", siblings.len())));
        }
        let (index, rest) = bits.split_at(arity.trailing_zeros() as usize);
        bits = rest;
        let out = &mut inserted[..arity];
        insert(a, cur, index, siblings, out);
        cur = hash(a, out);
    }
    Ok(cur)
}

/// [`por_no_challenge_input`] for a Poseidon tree of arities `(base, sub, top)` (each 2, 4, 8
/// or 16; sub and top 0 for none): SnapDeals' proofs into its replica trees. `path` holds the
/// siblings per level from the leaf up.
pub fn por_no_challenge_input_poseidon(
    a: &mut Assignment<'_>,
    leaf: Scalar,
    path: &[Vec<Scalar>],
    index_bits: &[bool],
    arities: (usize, usize, usize),
) -> Result<Scalar, ShapeError> {
    poseidon_arities(arities)?;
    por_no_challenge_input(a, leaf, path, index_bits, arities, crate::poseidon::hash_multi_leaf)
}

/// [`por_no_challenge_input`] for filecoin-hashers' binary SHA-256 trees (one sibling per
/// level, hashed as [`sha256_multi_leaf`]): SnapDeals' proofs into its data tree.
pub fn por_no_challenge_input_sha256(a: &mut Assignment<'_>, leaf: Scalar, path: &[Vec<Scalar>], index_bits: &[bool]) -> Result<Scalar, ShapeError> {
    por_no_challenge_input(a, leaf, path, index_bits, (2, 0, 0), sha256_multi_leaf)
}
