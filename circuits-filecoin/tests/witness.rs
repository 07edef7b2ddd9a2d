//! Witnesses through recorded matrices on 2 KiB partitions of every kind: the parallel witness
//! (a PoRep partition's challenges on their own threads, the other kinds in one part) equals
//! `ConstraintMatrices::witness`, sequential synthesis, index for index; a PoRep partition
//! does split.

mod common;

use common::fixtures;
use cuzk_circuits_filecoin::{prepare, FilKind};
use cuzk_core::alloc::heap;
use cuzk_core::matrices::ConstraintMatrices;
use ff::Field;

#[test]
fn parallel_witnesses_equal_sequential_synthesis() {
    for req in fixtures() {
        let c = prepare(&req).expect("prepare").partition(0);
        let m = ConstraintMatrices::record(c.clone()).expect("record");
        let sequential = m.witness(c.clone(), heap()).expect("sequential witness");
        let parallel = m.witness_parallel(&c, heap()).expect("parallel witness");
        assert!(parallel.input[..] == sequential.input[..], "{:?}: inputs differ", req.kind);
        if let Some(i) = (0..m.num_aux).find(|&i| parallel.aux[i] != sequential.aux[i]) {
            panic!("{:?}: aux {i} of {} differs", req.kind, m.num_aux);
        }
        let (mut input, mut aux) = (vec![blstrs::Scalar::ZERO; m.num_inputs], vec![blstrs::Scalar::ZERO; m.num_aux]);
        input[0] = blstrs::Scalar::ONE;
        let split = c.witness_in_parts(&mut input, &mut aux).expect("witness in parts");
        eprintln!("{:?}: {} constraints, {} inputs, {} aux; in parts: {split}", req.kind, m.num_constraints(), m.num_inputs, m.num_aux);
        assert_eq!(split, req.kind == FilKind::PoRep, "{:?}: split into parts", req.kind);
        if split {
            assert!(input == sequential.input[..] && aux == sequential.aux[..], "{:?}: the parts differ from sequential synthesis", req.kind);
        }
    }
}
