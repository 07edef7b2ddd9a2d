//! Parallel recording of constraint matrices (`cuzk_worker::matrices::record_parallel`; here its shares one after another, `ConstraintMatrices::record_in_shares`) is
//! byte-identical to sequential recording: for random circuits (allocations, inputs allocated
//! between constraints, constraints over random linear combinations with repeated
//! coefficients), any number of parts and chunk sizes down to one row, more parts than rows, a
//! circuit without constraints of its own; and a circuit's own error is returned as such.

use bellpepper_core::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use cuzk_core::matrices::ConstraintMatrices;
use cuzk_core::synth::SynthesizeError;
use ff::Field;
use proptest::prelude::*;

/// One step of a random circuit.
#[derive(Debug, Clone)]
enum Op {
    Alloc,
    Input,
    /// `A · B = C`, each a list of (variable pick, coefficient pick).
    Enforce([Vec<(usize, usize)>; 3]),
    /// The circuit fails here.
    Fail,
}

/// A circuit that runs its ops in order.
#[derive(Debug, Clone)]
struct Random {
    ops: Vec<Op>,
}

/// Coefficients picked from: zero, ±1, repeated small values, and a few larger ones.
fn coefficient(pick: usize) -> Scalar {
    match pick % 9 {
        0 => Scalar::ZERO,
        1 => Scalar::ONE,
        2 => -Scalar::ONE,
        3 => Scalar::from(2u64),
        4 => -Scalar::from(2u64),
        5 => Scalar::from(7u64),
        n => Scalar::from(pick as u64 * 0x9e37_79b9_7f4a_7c15 + n as u64).square(),
    }
}

impl Circuit<Scalar> for Random {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut vars: Vec<Variable> = vec![CS::one()];
        for (i, op) in self.ops.into_iter().enumerate() {
            match op {
                Op::Alloc => vars.push(cs.alloc(|| format!("a{i}"), || Ok(Scalar::from(i as u64)))?),
                Op::Input => vars.push(cs.alloc_input(|| format!("x{i}"), || Ok(Scalar::from(i as u64)))?),
                Op::Fail => return Err(SynthesisError::Unsatisfiable),
                Op::Enforce(lcs) => {
                    let lc = |terms: &[(usize, usize)]| terms.iter().fold(LinearCombination::zero(), |lc, &(v, k)| lc + (coefficient(k), vars[v % vars.len()]));
                    let (a, b, c) = (lc(&lcs[0]), lc(&lcs[1]), lc(&lcs[2]));
                    cs.enforce(|| format!("c{i}"), |_| a, |_| b, |_| c);
                }
            }
        }
        Ok(())
    }
}

fn op() -> impl Strategy<Value = Op> {
    let terms = || prop::collection::vec((any::<usize>(), 0usize..40), 0..5);
    prop_oneof![
        3 => Just(Op::Alloc),
        1 => Just(Op::Input),
        5 => (terms(), terms(), terms()).prop_map(|(a, b, c)| Op::Enforce([a, b, c])),
    ]
}

fn bytes(m: &ConstraintMatrices) -> Vec<u8> {
    m.to_file_bytes("test")
}

/// Records `c` sequentially and in parallel with every combination of `parts` and `chunks`.
fn check_all(c: &Random, parts: &[usize], chunks: &[usize]) -> Result<(), TestCaseError> {
    let want = bytes(&ConstraintMatrices::record(c.clone()).unwrap());
    for &k in parts {
        for &rows in chunks {
            let got = ConstraintMatrices::record_in_shares(c, k, rows).unwrap();
            prop_assert!(bytes(&got) == want, "{k} parts of {rows}-row chunks differ from sequential recording");
        }
        prop_assert!(
            bytes(&ConstraintMatrices::record_in_shares(c, k, cuzk_core::matrices::DEFAULT_CHUNK_ROWS).unwrap()) == want,
            "{k} parts of default chunks differ"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn parallel_recording_is_sequential_recording(ops in prop::collection::vec(op(), 0..120), chunk in 1usize..9) {
        check_all(&Random { ops }, &[1, 2, 3, 7], &[1, chunk, 64])?;
    }
}

#[test]
fn more_parts_than_rows_and_no_constraints() {
    // Two inputs, no constraints of its own: three rows (the input constraints), 16 parts.
    let inputs_only = Random { ops: vec![Op::Input, Op::Alloc, Op::Input] };
    let m = ConstraintMatrices::record_in_shares(&inputs_only, 16, 1).unwrap();
    assert_eq!((m.num_constraints(), m.num_inputs, m.num_aux), (3, 3, 1));
    check_all(&inputs_only, &[2, 5, 16], &[1, 2]).unwrap();
    // Nothing at all: `ONE` and its input constraint.
    check_all(&Random { ops: vec![] }, &[1, 2, 9], &[1, 4]).unwrap();
    // Five constraints, 12 parts of one row.
    let mut ops: Vec<Op> = std::iter::repeat_n([Op::Alloc, Op::Enforce([vec![(1, 1)], vec![(1, 3)], vec![(0, 7)]])], 5).flatten().collect();
    ops.push(Op::Alloc);
    check_all(&Random { ops }, &[12], &[1, 1000]).unwrap();
}

#[test]
fn a_circuit_error_is_returned_as_such() {
    let enforce = Op::Enforce([vec![(1, 1)], vec![(2, 3)], vec![(0, 8)]]);
    let mut ops = vec![Op::Alloc, Op::Input];
    ops.extend(std::iter::repeat_n(enforce, 40));
    ops.push(Op::Fail);
    ops.push(Op::Alloc);
    let failing = Random { ops };
    for (parts, chunk) in [(1, 1), (2, 1), (3, 7), (8, 4), (64, 1)] {
        match ConstraintMatrices::record_in_shares(&failing, parts, chunk) {
            Err(SynthesizeError::Circuit(SynthesisError::Unsatisfiable)) => {}
            other => panic!("{parts} parts: {other:?}"),
        }
    }
    assert!(matches!(ConstraintMatrices::record(failing), Err(SynthesizeError::Circuit(SynthesisError::Unsatisfiable))));
}
