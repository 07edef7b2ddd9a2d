//! Witnesses through recorded matrices on 2 KiB partitions of every kind: the parallel witness
//! (a PoRep or SnapDeals partition's challenges, a PoSt partition's sectors, each on its own
//! thread) equals `ConstraintMatrices::witness`, sequential synthesis, index for index; every
//! kind's partitions do split.

use crate::common::fixtures;
use cuzk_circuits_filecoin::{prepare, prepare_unchecked, synthetic_request, FilKind};
use cuzk_core::alloc::heap;
use cuzk_core::compiled::CompiledSynthesis;
use ff::Field;

#[test]
fn parallel_witnesses_equal_sequential_synthesis() {
    for req in fixtures() {
        let c = prepare(&req).expect("prepare").partition(0);
        let m = c.record().expect("record");
        let sequential = c.witness_through(&m, heap()).expect("sequential witness");
        let parallel = m.witness_parallel(&c, heap()).expect("parallel witness");
        assert!(parallel.input[..] == sequential.input[..], "{:?}: inputs differ", req.kind);
        if let Some(i) = (0..m.num_aux).find(|&i| parallel.aux[i] != sequential.aux[i]) {
            panic!("{:?}: aux {i} of {} differs", req.kind, m.num_aux);
        }
        let (mut input, mut aux) = (vec![blstrs::Scalar::ZERO; m.num_inputs], vec![blstrs::Scalar::ZERO; m.num_aux]);
        input[0] = blstrs::Scalar::ONE;
        let split = c.witness_in_parts(&mut input, &mut aux).expect("witness in parts");
        eprintln!("{:?}: {} constraints, {} inputs, {} aux; in parts: {split}", req.kind, m.num_constraints(), m.num_inputs, m.num_aux);
        assert!(split, "{:?}: not split into parts", req.kind);
        assert!(input == sequential.input[..] && aux == sequential.aux[..], "{:?}: the parts differ from sequential synthesis", req.kind);
    }
}

/// Writes partition `c`'s witness natively (it must split) and through Filecoin's gadgets run
/// sequentially, and checks the two are equal index for index.
fn native_equals_sequential(c: &cuzk_circuits_filecoin::PartitionCircuit, what: &str) {
    let n = c.size().expect("count");
    let fresh = || {
        let mut input = vec![blstrs::Scalar::ZERO; n.inputs];
        input[0] = blstrs::Scalar::ONE;
        (input, vec![blstrs::Scalar::ZERO; n.aux])
    };
    let (mut input, mut aux) = fresh();
    assert!(c.witness_in_parts(&mut input, &mut aux).expect("native witness"), "{what}: not written natively");
    let (mut seq_input, mut seq_aux) = fresh();
    c.witness_sequential(&mut seq_input, &mut seq_aux).expect("sequential witness");
    assert!(input == seq_input, "{what}: inputs differ");
    if let Some(i) = (0..n.aux).find(|&i| aux[i] != seq_aux[i]) {
        panic!("{what}: aux {i} of {} differs", n.aux);
    }
    eprintln!("{what}: {} constraints, {} aux, {} inputs equal", n.constraints, n.aux, n.inputs);
}

/// The native PoRep witness on the production tree shapes (32 GiB: base arity 8 with a sub-tree
/// level of 8; 64 GiB: also a top level of 2) and 11 layers, from synthetic vanilla proofs of
/// one partition of two challenges: equal index for index to Filecoin's gadgets run
/// sequentially.
#[test]
fn native_porep_witness_equals_the_gadgets_at_production_shapes() {
    for sector_size in [32u64 << 30, 64 << 30] {
        let p = cuzk_circuits_filecoin::synthetic::porep::porep(sector_size, Some(1), Some(2), 11).expect("synthetic job");
        native_equals_sequential(&p.partition(0), &format!("porep, {sector_size} bytes"));
    }
}

/// The native SnapDeals witness of a synthetic partition of `sector_size` with `challenges`
/// challenges (`None`: the real count) equals Filecoin's gadgets run sequentially, index for
/// index.
fn native_snap_witness_equals_the_gadgets(sector_size: u64, challenges: Option<usize>) {
    let p = cuzk_circuits_filecoin::synthetic::snap::snap(sector_size, challenges, 3).expect("synthetic job");
    native_equals_sequential(&p.partition(0), &format!("snap, {sector_size} bytes, {challenges:?} challenges"));
}

/// SnapDeals on the production tree shapes (32 GiB: replica trees 8-8-0, 30 challenge bits, 16
/// partitions, 128 apex leaves; 64 GiB: 8-8-2, the top level's insert and hash) with ten
/// challenges a partition, one past the nine a digest's bits give, so challenge generation
/// takes a second digest: every part of the circuit (challenge bits, both replica paths, the
/// data path, apex leaves, the encoding) and the stride between challenges, in 9 M constraints
/// each.
#[test]
fn native_snap_witness_equals_the_gadgets_at_production_shapes() {
    for sector_size in [32u64 << 30, 64 << 30] {
        native_snap_witness_equals_the_gadgets(sector_size, Some(10));
    }
}

/// Whole SnapDeals partitions at 32 GiB and 64 GiB (86 challenges: 81 M and 85 M constraints).
/// The gadgets take about 70 s and 75 s on two cores, so this runs with `--ignored` (on the
/// GPU host).
#[test]
#[ignore = "81 M- and 85 M-constraint partitions through the gadgets: run with --ignored"]
fn native_snap_witness_equals_the_gadgets_on_whole_production_partitions() {
    for sector_size in [32u64 << 30, 64 << 30] {
        native_snap_witness_equals_the_gadgets(sector_size, None);
    }
}

/// The native PoSt witness on the production tree shapes (32 GiB: 8-8-0; 64 GiB: 8-8-2), from
/// synthetic WinningPoSt requests (66 one-challenge sectors): equal index for index to
/// Filecoin's gadgets run sequentially. WindowPoSt shares the sector writer; its 2 KiB fixture
/// is checked above with real proofs.
#[test]
fn native_post_witness_equals_the_gadgets_at_production_shapes() {
    for sector_size in [32u64 << 30, 64 << 30] {
        let req = synthetic_request(FilKind::WinningPoSt, sector_size, 7).expect("synthetic request");
        let p = prepare_unchecked(&req).expect("prepare");
        native_equals_sequential(&p.partition(0), &format!("winning post, {sector_size} bytes"));
    }
}

/// Synthetic partitions (fabricated values; what the production-size benchmarks and the peer
/// run prove) have the witness statistics of real ones, kind by kind at 2 KiB: the shares of
/// 0, 1, small and dense scalars in the A, B and L MSMs of a real fixture's partition and of its
/// synthetic twin (same circuit, same matrices) differ by at most `TOLERANCE` each, so the
/// kernels are tuned on honest data.
#[test]
fn synthetic_witnesses_have_the_scalar_shares_of_real_ones() {
    const TOLERANCE: f64 = 0.01;
    let mut worst = 0f64;
    for real in fixtures() {
        let twin = synthetic_request(real.kind, crate::common::KIB2, 11).expect("synthetic twin");
        let (real_c, twin_c) = (prepare(&real).expect("prepare").partition(0), prepare_unchecked(&twin).expect("prepare twin").partition(0));
        let m = real_c.record().expect("record");
        let shares = |c: &cuzk_circuits_filecoin::PartitionCircuit| {
            let w = c.witness_through(&m, heap()).expect("witness");
            cuzk_core::msm::WitnessShares::of(&w.input, &w.aux, m.densities())
        };
        let (r, t) = (shares(&real_c), shares(&twin_c));
        for (msm, r, t) in [("A", r.a, t.a), ("B", r.b, t.b), ("L", r.l, t.l)] {
            eprintln!("{:?} {msm}: real {r}; synthetic {t}", real.kind);
            assert_eq!(r.total(), t.total(), "{:?} {msm}: scalar counts differ", real.kind);
            for (class, (x, y)) in ["0", "1", "small", "dense"].iter().zip(r.fractions().into_iter().zip(t.fractions())) {
                worst = worst.max((x - y).abs());
                assert!((x - y).abs() <= TOLERANCE, "{:?} {msm}: the share of {class} is {x:.4} real against {y:.4} synthetic", real.kind);
            }
        }
    }
    eprintln!("largest difference of a share: {:.4}", worst);
}
