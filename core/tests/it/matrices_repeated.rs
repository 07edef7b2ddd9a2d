//! Recording a repeating circuit from its first two blocks equals recording it whole, byte for
//! byte; a circuit that does not repeat as promised is refused (`None`), never mis-recorded.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError, Variable};
use blstrs::Scalar;
use cuzk_core::matrices::{ConstraintMatrices, Repeats};
use ff::Field;

/// A header (aux and an input), then `blocks` blocks in namespaces `block_k` inside the
/// root-level namespace `outer` (depth 1, as WindowPoSt's sectors): each
/// allocates its own aux and input and enforces rows over its own variables, the header's and
/// `ONE`. `odd` makes block `odd` use another header variable (no longer a repeat).
#[derive(Clone)]
struct Blocks {
    blocks: usize,
    odd: Option<usize>,
}

impl Circuit<Scalar> for Blocks {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let one = CS::one();
        let h: Vec<Variable> = (0..3).map(|i| cs.alloc(|| format!("h{i}"), || Ok(Scalar::from(i as u64 + 2)))).collect::<Result<_, _>>()?;
        let hi = cs.alloc_input(|| "hi", || Ok(Scalar::from(9)))?;
        cs.enforce(|| "header", |lc| lc + h[0] + (Scalar::from(3), h[1]), |lc| lc + CS::one(), |lc| lc + h[2] + hi);
        let outer = &mut cs.namespace(|| "outer");
        for k in 0..self.blocks {
            let cs = &mut outer.namespace(|| format!("block_{k}"));
            let x = cs.alloc(|| "x", || Ok(Scalar::from(k as u64)))?;
            let y = cs.alloc(|| "y", || Ok(Scalar::from(k as u64 + 1)))?;
            let i = cs.alloc_input(|| "i", || Ok(Scalar::ONE))?;
            let hv = if Some(k) == self.odd { h[2] } else { h[1] };
            cs.enforce(|| "a", |lc| lc + x + (Scalar::from(5), hv), |lc| lc + y, |lc| lc + i);
            cs.enforce(|| "b", |lc| lc + (Scalar::from(7), x), |lc| lc + one + hi, |lc| lc + (-Scalar::ONE, y) + h[0]);
            let z = cs.alloc(|| "z", || Ok(Scalar::ZERO))?;
            cs.enforce(|| "c", |lc| lc + z, |lc| lc + (Scalar::ZERO, x) + y, |lc| lc);
        }
        Ok(())
    }
}

fn marker(k: usize) -> String {
    format!("block_{k}")
}

fn repeats(count: usize) -> Repeats {
    // The blocks sit inside the root-level namespace "outer" (depth 1), as WindowPoSt's sectors.
    Repeats { depth: 1, marker, count, header_aux: None }
}

#[test]
fn a_repeating_circuit_records_as_a_whole_recording_does() {
    for blocks in [3, 4, 17] {
        let c = Blocks { blocks, odd: None };
        let whole = ConstraintMatrices::record(c.clone()).unwrap();
        let repeated = ConstraintMatrices::record_repeated(c, &repeats(blocks)).unwrap().expect("repeats");
        assert_eq!(repeated.to_file_bytes("k"), whole.to_file_bytes("k"), "{blocks} blocks");
    }
}

#[test]
fn circuits_that_do_not_repeat_as_promised_are_refused() {
    // Block 1 uses another header variable than block 0.
    let odd = Blocks { blocks: 5, odd: Some(1) };
    assert!(ConstraintMatrices::record_repeated(odd, &repeats(5)).unwrap().is_none());
    // Fewer blocks than promised: the third never starts.
    let short = Blocks { blocks: 2, odd: None };
    assert!(ConstraintMatrices::record_repeated(short, &repeats(3)).unwrap().is_none());
    // Markers at another depth are not blocks.
    let c = Blocks { blocks: 4, odd: None };
    assert!(ConstraintMatrices::record_repeated(c, &Repeats { depth: 0, marker, count: 4, header_aux: None }).unwrap().is_none());
    // Fewer than three blocks: nothing to gain, recorded whole by the caller.
    let c = Blocks { blocks: 2, odd: None };
    assert!(ConstraintMatrices::record_repeated(c, &repeats(2)).unwrap().is_none());
}

#[test]
fn a_later_odd_block_is_the_callers_contract() {
    // The check sees blocks 0 and 1 only: a circuit that breaks the contract later (an odd
    // block 3, rows after the last block) is recorded differently from the whole. This is why
    // callers promise the repeat only for circuits whose blocks are one loop's iterations
    // (Filecoin's challenges and sectors), checked against whole recordings in their tests.
    let odd = Blocks { blocks: 5, odd: Some(3) };
    let whole = ConstraintMatrices::record(odd.clone()).unwrap();
    let repeated = ConstraintMatrices::record_repeated(odd, &repeats(5)).unwrap().expect("blocks 0 and 1 repeat");
    assert_ne!(repeated.to_file_bytes("k"), whole.to_file_bytes("k"));
}

/// A header that allocates one variable per block (`p_k`, after `h0..h2`), then blocks as
/// [`Blocks`] where block `k` also reads `p_k`: SnapDeals' shape (each challenge reads its own
/// bits, which the header allocates for every challenge).
#[derive(Clone)]
struct OwnHeaderVariables {
    blocks: usize,
}

impl Circuit<Scalar> for OwnHeaderVariables {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let h: Vec<Variable> = (0..3).map(|i| cs.alloc(|| format!("h{i}"), || Ok(Scalar::from(i as u64 + 2)))).collect::<Result<_, _>>()?;
        let p: Vec<Variable> = (0..self.blocks).map(|k| cs.alloc(|| format!("p{k}"), || Ok(Scalar::from(k as u64)))).collect::<Result<_, _>>()?;
        for (k, &own) in p.iter().enumerate() {
            let cs = &mut cs.namespace(|| format!("block_{k}"));
            let x = cs.alloc(|| "x", || Ok(Scalar::from(k as u64)))?;
            cs.enforce(|| "a", |lc| lc + x + (Scalar::from(5), own), |lc| lc + h[1], |lc| lc + x);
            cs.enforce(|| "b", |lc| lc + own + h[0], |lc| lc + CS::one(), |lc| lc + x);
        }
        Ok(())
    }
}

/// Block `k` reads `p_k` (aux 3 + k) where block 0 reads `p_0` (aux 3); the rest is shared.
fn own_header(blocks: usize, map: fn(usize, usize) -> usize) -> Repeats {
    Repeats { depth: 0, marker, count: blocks, header_aux: Some(std::sync::Arc::new(map)) }
}

#[test]
fn blocks_reading_header_variables_of_their_own_record_as_a_whole_recording_does() {
    for blocks in [3, 5, 12] {
        let c = OwnHeaderVariables { blocks };
        let whole = ConstraintMatrices::record(c.clone()).unwrap();
        let map = own_header(blocks, |k, i| if i == 3 { 3 + k } else { i });
        let repeated = ConstraintMatrices::record_repeated(c.clone(), &map).unwrap().expect("repeats under the map");
        assert_eq!(repeated.to_file_bytes("k"), whole.to_file_bytes("k"), "{blocks} blocks");
        // Without the map, block 1 is not block 0 shifted.
        assert!(ConstraintMatrices::record_repeated(c.clone(), &Repeats { depth: 0, marker, count: blocks, header_aux: None }).unwrap().is_none());
        // A map that names another variable for block 1, or a variable past the header.
        assert!(ConstraintMatrices::record_repeated(c.clone(), &own_header(blocks, |k, i| if i == 3 { 2 + k } else { i })).unwrap().is_none());
        assert!(ConstraintMatrices::record_repeated(
            c,
            &own_header(blocks, |k, i| if i == 3 && k >= 2 {
                1 << 20
            } else if i == 3 {
                3 + k
            } else {
                i
            })
        )
        .unwrap()
        .is_none());
    }
}

/// [`ConstraintMatrices::record_repeated`] in `parts` shares of `chunk_rows`-row chunks, the
/// shares handed over last first.
fn in_shares<C: Circuit<Scalar> + Clone>(c: &C, r: &Repeats, parts: usize, chunk_rows: usize) -> Option<ConstraintMatrices> {
    let shares = (0..parts).rev().map(|p| ConstraintMatrices::record_repeated_share(c.clone(), r, p, parts, chunk_rows).unwrap()).collect();
    ConstraintMatrices::from_repeated_shares(shares, r).unwrap()
}

#[test]
fn a_repeated_recording_in_shares_is_the_same_recording() {
    for (parts, chunk_rows) in [(1, 1 << 14), (2, 1), (3, 2), (4, 1), (7, 3)] {
        for blocks in [3, 4, 17] {
            let c = Blocks { blocks, odd: None };
            let whole = ConstraintMatrices::record(c.clone()).unwrap().to_file_bytes("k");
            let got = in_shares(&c, &repeats(blocks), parts, chunk_rows).expect("repeats");
            assert_eq!(got.to_file_bytes("k"), whole, "{blocks} blocks in {parts} shares of {chunk_rows} rows");
            let c = OwnHeaderVariables { blocks };
            let map = own_header(blocks, |k, i| if i == 3 { 3 + k } else { i });
            let got = in_shares(&c, &map, parts, chunk_rows).expect("repeats under the map");
            assert_eq!(got.to_file_bytes("k"), ConstraintMatrices::record(c).unwrap().to_file_bytes("k"), "own header, {blocks} blocks, {parts} shares");
        }
        // Refused in shares as it is whole: an odd block 1, too few blocks, no shares at all.
        assert!(in_shares(&Blocks { blocks: 5, odd: Some(1) }, &repeats(5), parts, chunk_rows).is_none());
        assert!(in_shares(&Blocks { blocks: 2, odd: None }, &repeats(3), parts, chunk_rows).is_none());
        assert!(in_shares(&Blocks { blocks: 2, odd: None }, &repeats(2), parts, chunk_rows).is_none());
    }
    assert!(ConstraintMatrices::from_repeated_shares(Vec::new(), &repeats(4)).unwrap().is_none());
    // A share missing is an error, never matrices without its rows.
    let c = Blocks { blocks: 4, odd: None };
    let two_of_three = [0, 2].map(|p| ConstraintMatrices::record_repeated_share(c.clone(), &repeats(4), p, 3, 1).unwrap()).into();
    assert!(ConstraintMatrices::from_repeated_shares(two_of_three, &repeats(4)).is_err());
}
