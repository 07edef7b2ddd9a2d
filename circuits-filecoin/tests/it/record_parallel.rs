//! Parallel recording of constraint matrices (`cuzk_worker::matrices::record_parallel`; here its shares one after another, `cuzk_core::compiled::record_in_shares`) gives the
//! same file bytes as sequential recording on Filecoin partitions: the 2 KiB partitions of
//! every kind and a synthetic 32 GiB PoRep partition of two challenges.

use crate::common::fixtures;
use cuzk_circuits_filecoin::{prepare, FilKind, PartitionCircuit};
use cuzk_core::compiled::{record_in_shares, CompiledSynthesis};

/// Records `c` sequentially, then in `parts` parts for each of `parts`, and compares the bytes.
fn parallel_equals_sequential(c: &PartitionCircuit, parts: &[usize], what: &str) {
    let want = c.record().expect("record").to_file_bytes(what);
    for &k in parts {
        let got = record_in_shares(c, k, cuzk_core::matrices::DEFAULT_CHUNK_ROWS).expect("record_in_shares").to_file_bytes(what);
        assert!(got == want, "{what}: {k} parts differ from sequential recording");
    }
    eprintln!("{what}: {} bytes, equal in {parts:?} parts", want.len());
}

#[test]
fn parallel_recording_equals_sequential_on_2_kib_partitions() {
    for req in fixtures() {
        let c = prepare(&req).expect("prepare").partition(0);
        let parts: &[usize] = match req.kind {
            FilKind::PoRep | FilKind::SnapDeals => &[2, 3],
            _ => &[2, 3, 7],
        };
        parallel_equals_sequential(&c, parts, &format!("{:?} 2 KiB", req.kind));
    }
}

/// About 15 M constraints: a minute on two cores.
#[test]
#[ignore = "slow: a 32 GiB PoRep partition of two challenges"]
fn parallel_recording_equals_sequential_on_a_32_gib_porep_partition() {
    let job = cuzk_circuits_filecoin::synthetic::porep::porep(32 << 30, Some(1), Some(2), 11).expect("synthetic job");
    parallel_equals_sequential(&job.partition(0), &[4], "PoRep 32 GiB, 2 challenges");
}
