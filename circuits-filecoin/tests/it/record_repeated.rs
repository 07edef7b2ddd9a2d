//! Recording a Filecoin partition from its header and two repeated blocks
//! (`ConstraintMatrices::record_repeated`, the blocks `ParallelWitness::repeats` names: PoRep's
//! and SnapDeals' challenges, PoSt's sectors) gives the same file bytes as recording it whole:
//! the 2 KiB partitions of every kind, SnapDeals partitions at 32 and 64 GiB of ten challenges
//! (each challenge reads its own bits from the header; the tenth takes them from a second
//! digest), a 32 GiB PoRep partition of three challenges and a 32 GiB WinningPoSt partition
//! (synthetic). So do the same recordings made in shares on two and three threads
//! (`record_repeated_share`, merged by `from_repeated_shares`), as the worker makes them.

use std::time::Instant;

use crate::common::fixtures;
use cuzk_circuits_filecoin::{prepare, prepare_unchecked, synthetic_request, FilKind, PartitionCircuit};
use cuzk_core::compiled::CompiledSynthesis;
use cuzk_core::matrices::{ConstraintMatrices, Repeats, DEFAULT_CHUNK_ROWS};
use cuzk_core::witness::ParallelWitness;

/// `c` recorded from its blocks in `parts` shares, each on a thread of its own, and the wall time.
fn in_shares(c: &PartitionCircuit, r: &Repeats, parts: usize) -> (ConstraintMatrices, f64) {
    let t = Instant::now();
    let shares = std::thread::scope(|s| {
        let threads: Vec<_> = (0..parts).map(|p| s.spawn(move || c.record_repeated_share(r, p, parts, DEFAULT_CHUNK_ROWS).expect("share"))).collect();
        threads.into_iter().map(|t| t.join().expect("share thread")).collect()
    });
    let m = ConstraintMatrices::from_repeated_shares(shares, r).expect("merge").expect("repeats in shares");
    (m, t.elapsed().as_secs_f64())
}

/// Records `c` whole, from its blocks, and from its blocks in two and three shares; compares
/// the bytes; returns the first two times.
fn repeated_equals_whole(c: &PartitionCircuit, what: &str) -> (f64, f64) {
    let t = Instant::now();
    let want = c.record().expect("record").to_file_bytes(what);
    let whole = t.elapsed().as_secs_f64();
    let r = c.repeats().unwrap_or_else(|| panic!("{what}: names no repeated blocks"));
    let t = Instant::now();
    let got = c.record_repeated(&r).expect("record_repeated").unwrap_or_else(|| panic!("{what}: does not repeat"));
    let repeated = t.elapsed().as_secs_f64();
    assert!(got.to_file_bytes(what) == want, "{what}: recorded from {} blocks, differs from the whole recording", r.count);
    drop(got);
    let (two, shared) = in_shares(c, &r, 2);
    assert!(two.to_file_bytes(what) == want, "{what}: recorded from its blocks in two shares, differs from the whole recording");
    drop(two);
    assert!(in_shares(c, &r, 3).0.to_file_bytes(what) == want, "{what}: in three shares, differs from the whole recording");
    eprintln!(
        "{what}: {} blocks, {} bytes; whole {whole:.2} s, from two blocks {repeated:.2} s, the same in two shares on two threads {shared:.2} s",
        r.count,
        want.len()
    );
    (whole, repeated)
}

#[test]
fn repeated_recording_equals_whole_on_2_kib_partitions() {
    for req in fixtures() {
        let c = prepare(&req).expect("prepare").partition(0);
        match (req.kind, c.repeats()) {
            // Fewer than three blocks: nothing to copy, recorded whole.
            (k, Some(r)) if r.count < 3 => {
                assert!(c.record_repeated(&r).expect("record_repeated").is_none(), "{k:?}: {} blocks", r.count)
            }
            (k, _) => {
                repeated_equals_whole(&c, &format!("{k:?} 2 KiB"));
            }
        }
    }
    // A 2 KiB PoRep partition of five challenges (synthetic).
    let job = cuzk_circuits_filecoin::synthetic::porep::porep(2048, Some(1), Some(5), 7).expect("synthetic job");
    repeated_equals_whole(&job.partition(0), "PoRep 2 KiB, 5 challenges");
}

/// SnapDeals at the production shapes with ten challenges a partition: nine take their bits
/// from the first digest, the tenth from the second, so the header map is checked across a
/// digest (the recorder itself checks it on the second challenge only).
#[test]
fn repeated_recording_equals_whole_on_snapdeals_production_shapes() {
    for sector_size in [32u64 << 30, 64 << 30] {
        let job = cuzk_circuits_filecoin::synthetic::snap::snap(sector_size, Some(10), 5).expect("synthetic job");
        repeated_equals_whole(&job.partition(0), &format!("SnapDeals {} GiB, 10 challenges", sector_size >> 30));
    }
}

#[test]
#[ignore = "slow: a 32 GiB PoRep partition of three challenges (about 22 M constraints), a 32 GiB WinningPoSt, a whole 32 GiB SnapDeals partition (81 M)"]
fn repeated_recording_equals_whole_at_32_gib() {
    let job = cuzk_circuits_filecoin::synthetic::snap::snap(32 << 30, None, 13).expect("synthetic job");
    repeated_equals_whole(&job.partition(0), "SnapDeals 32 GiB, 86 challenges");
    let job = cuzk_circuits_filecoin::synthetic::porep::porep(32 << 30, Some(1), Some(3), 11).expect("synthetic job");
    repeated_equals_whole(&job.partition(0), "PoRep 32 GiB, 3 challenges");
    let req = synthetic_request(FilKind::WinningPoSt, 32 << 30, 3).expect("synthetic request");
    repeated_equals_whole(&prepare_unchecked(&req).expect("prepare").partition(0), "WinningPoSt 32 GiB");
}
