//! Synthetic requests (`synthetic_request`) built without vanilla verification
//! (`prepare_unchecked`), each against an independent reference:
//! - at 2 KiB, the real fixture requests of every kind (a sealed sector, `prepare`): the same
//!   partition count and, per partition, the same constraints, inputs and aux variables;
//! - at 32 GiB, Filecoin's own blank circuit of the registered proof
//!   (`CompoundProof::blank_circuit` of `StackedCompound`, `EmptySectorUpdateCompound`,
//!   `FallbackPoStCompound`, from filecoin-proofs' configurations): the partition count and
//!   partition 0's size (the slow ones are `#[ignore]`d: 80–130 M constraints counted twice);
//! - the checked path (`prepare`) refuses them all with an error, form errors are the checked
//!   path's, and they round-trip through JSON as `cuzk gen-vanilla` writes them.
//!
//! Sizes are counted by `cuzk_core::synth::ShapeCounter`, the same way for both sides.

use std::time::Instant;

use crate::common::{fixture, KIB2};
use bellpepper_core::Circuit;
use blstrs::Scalar;
use cuzk_circuits_filecoin::{decode_request_parts, prepare, prepare_unchecked, synthetic_request, wrap_c1_like_curio, FilError, FilKind, FilRequest};
use cuzk_core::synth::ShapeCounter;
use filecoin_proofs::parameters::{setup_params, window_post_setup_params, winning_post_setup_params};
use filecoin_proofs::{DefaultPieceHasher, PoRepConfig, PoStConfig, PoStType, SectorShape32GiB, SectorUpdateConfig};
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::compound_proof::{CompoundProof, SetupParams};
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};
use storage_proofs_post::fallback::FallbackPoStCompound;
use storage_proofs_update::EmptySectorUpdateCompound;

const GIB32: u64 = 32 << 30;

/// Constraints (with the input constraints), inputs (with `ONE`) and aux variables.
type Size = (usize, usize, usize);

/// The size the prover sees (`cuzk_core::synth::ShapeCounter`: `ONE`, the circuit, one
/// constraint per public input), counted the same way for both sides of every comparison.
fn count<C: Circuit<Scalar>>(c: C) -> Size {
    let cs = ShapeCounter::of(c).expect("synthesize");
    (cs.constraints, cs.inputs, cs.aux)
}

/// The request as `cuzk gen-vanilla` writes it: PoRep's C1 output in Curio's wrapper.
fn as_written(mut r: FilRequest, sector_size: u64) -> FilRequest {
    if r.kind == FilKind::PoRep {
        r.vanilla_proof = wrap_c1_like_curio(&r.vanilla_proof, r.sector_number, sector_size);
    }
    r
}

/// Pretty JSON (as gen-vanilla writes) and back: equal.
fn round_trips(r: &FilRequest) -> usize {
    let text = serde_json::to_vec_pretty(r).expect("to JSON");
    let back: FilRequest = serde_json::from_slice(&text).expect("from JSON");
    assert!(back == *r, "{:?}: the request changed through JSON", r.kind);
    text.len()
}

#[test]
fn synthetic_requests_have_the_real_structure_at_2_kib() {
    for kind in FilKind::ALL {
        let real = prepare(&fixture(kind)).expect("the fixture prepares");
        let req = synthetic_request(kind, KIB2, 1).expect("synthetic request");
        decode_request_parts(&req).expect("decodes");
        let synthetic = prepare_unchecked(&req).expect("prepare_unchecked");
        assert_eq!(synthetic.circuit, real.circuit, "{kind:?}");
        assert_eq!(synthetic.cache_id, real.cache_id, "{kind:?}");
        assert_eq!(synthetic.partitions(), real.partitions(), "{kind:?}: partitions");
        for k in 0..real.partitions() {
            let (s, r) = (count(synthetic.partition(k)), count(real.partition(k)));
            assert_eq!(s, r, "{kind:?} partition {k}: (constraints, inputs, aux)");
            assert_eq!(synthetic.partition(k).public_inputs().expect("public inputs").len() + 1, s.1, "{kind:?}: public inputs");
            eprintln!("{kind:?} 2 KiB partition {k}: {s:?} (constraints, inputs, aux), as the sealed sector's");
        }
        // In Curio's wrapper, as gen-vanilla writes it, and through JSON.
        let written = as_written(req, KIB2);
        round_trips(&written);
        assert_eq!(prepare_unchecked(&written).expect("wrapped").partitions(), real.partitions(), "{kind:?}: wrapped");
    }
}

#[test]
fn the_checked_path_refuses_synthetic_requests() {
    for kind in FilKind::ALL {
        let req = synthetic_request(kind, KIB2, 2).expect("synthetic request");
        match prepare(&req) {
            Err(FilError::VanillaInvalid(why)) => eprintln!("{kind:?}: refused: {why}"),
            other => panic!("{kind:?}: expected the vanilla proofs to be refused, got {other:?}"),
        }
    }
}

#[test]
fn form_errors_are_the_checked_paths() {
    for kind in FilKind::ALL {
        let good = synthetic_request(kind, KIB2, 3).expect("synthetic request");
        let mut bad = vec![];
        let mut r = good.clone();
        r.registered_proof = 99;
        bad.push(r);
        let mut r = good.clone();
        if kind == FilKind::PoRep {
            r.vanilla_proof.pop();
            bad.push(r);
            let mut r = good.clone();
            r.sector_number += 1; // another replica id
            bad.push(r);
        } else {
            r.vanilla_proofs[0].pop();
            bad.push(r);
            let mut r = good.clone();
            r.vanilla_proofs.push(r.vanilla_proofs[0].clone()); // one element too many, or a sector twice
            bad.push(r);
            let mut r = good.clone();
            std::mem::swap(&mut r.vanilla_proof, &mut r.vanilla_proofs[0]); // the other field
            bad.push(r);
        }
        for (i, b) in bad.iter().enumerate() {
            let e = prepare_unchecked(b).expect_err("a malformed request");
            assert_eq!(Some(&e), prepare(b).err().as_ref(), "{kind:?} case {i}: the same error as prepare");
            assert_eq!(Some(&e), decode_request_parts(b).err().as_ref(), "{kind:?} case {i}: the same error as decoding");
        }
    }
}

/// Partition count and partition 0's size of the synthetic request of `kind` at 32 GiB, against
/// those of Filecoin's blank circuit (`reference`: its partition count and blank circuit's
/// size); both counted at once on two threads. Also: `prepare` refuses the request, and it
/// round-trips through JSON as gen-vanilla writes it.
fn against_blank_at_32_gib(kind: FilKind, reference: impl FnOnce() -> (usize, Size) + Send) {
    let t = Instant::now();
    let req = synthetic_request(kind, GIB32, 5).expect("synthetic request");
    let made = t.elapsed().as_secs_f64();
    let bytes = req.vanilla_proof.len() + req.vanilla_proofs.iter().map(Vec::len).sum::<usize>();
    let t = Instant::now();
    let p = prepare_unchecked(&req).expect("prepare_unchecked");
    let prepared = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let ((partitions, blank), synthetic) = std::thread::scope(|s| {
        let r = s.spawn(reference);
        let synthetic = count(p.partition(0));
        (r.join().expect("reference"), synthetic)
    });
    let counted = t.elapsed().as_secs_f64();
    assert_eq!(p.partitions(), partitions, "{kind:?}: partitions");
    assert_eq!(synthetic, blank, "{kind:?}: partition 0 (constraints, inputs, aux) against Filecoin's blank circuit");
    let t = Instant::now();
    assert!(matches!(prepare(&req), Err(FilError::VanillaInvalid(_))), "{kind:?}: the checked path must refuse it");
    let refused = t.elapsed().as_secs_f64();
    let json = round_trips(&as_written(req, GIB32));
    eprintln!(
        "{kind:?} 32 GiB: {partitions} partitions, {synthetic:?} (constraints, inputs, aux) as Filecoin's blank circuit; vanilla proofs {bytes} bytes, JSON {json} bytes; made in {made:.1} s, prepared (unchecked) in {prepared:.1} s, counted in {counted:.1} s, refused by prepare in {refused:.1} s"
    );
}

fn porep_config_32g() -> PoRepConfig {
    // Go's abi.RegisteredSealProof_StackedDrg32GiBV1_1 = 8; filecoin-proofs-api's porep id.
    let mut porep_id = [0u8; 32];
    porep_id[..8].copy_from_slice(&8u64.to_le_bytes());
    PoRepConfig::new_groth16(GIB32, porep_id, ApiVersion::V1_1_0)
}

fn post_config_32g(typ: PoStType) -> PoStConfig {
    let (challenge_count, sector_count, api_version) = match typ {
        PoStType::Winning => (filecoin_proofs::WINNING_POST_CHALLENGE_COUNT, filecoin_proofs::WINNING_POST_SECTOR_COUNT, ApiVersion::V1_0_0),
        PoStType::Window => {
            (filecoin_proofs::WINDOW_POST_CHALLENGE_COUNT, filecoin_proofs::WINDOW_POST_SECTOR_COUNT.read().expect("counts")[&GIB32], ApiVersion::V1_2_0)
        }
    };
    PoStConfig { sector_size: GIB32.into(), challenge_count, sector_count, typ, priority: false, api_version }
}

fn post_reference(typ: PoStType) -> (usize, Size) {
    let config = post_config_32g(typ);
    let vanilla_params = match config.typ {
        PoStType::Winning => winning_post_setup_params(&config).expect("setup params"),
        PoStType::Window => window_post_setup_params(&config),
    };
    // One full partition of sectors.
    let partitions = filecoin_proofs::get_num_partition_for_fallback_post(&config, config.sector_count);
    let pp = FallbackPoStCompound::<SectorShape32GiB>::setup(&SetupParams { vanilla_params, partitions: None, priority: false }).expect("setup");
    (partitions, count(FallbackPoStCompound::<SectorShape32GiB>::blank_circuit(&pp.vanilla_params)))
}

#[test]
#[ignore = "130 M constraints counted twice: minutes on 2 cores"]
fn porep_32_gib_is_filecoins_blank_circuit() {
    against_blank_at_32_gib(FilKind::PoRep, || {
        let config = porep_config_32g();
        let sp =
            SetupParams { vanilla_params: setup_params(&config).expect("setup params"), partitions: Some(usize::from(config.partitions)), priority: false };
        let pp = <StackedCompound<SectorShape32GiB, DefaultPieceHasher> as CompoundProof<StackedDrg<'_, SectorShape32GiB, DefaultPieceHasher>, _>>::setup(&sp)
            .expect("setup");
        (usize::from(config.partitions), count(StackedCompound::<SectorShape32GiB, DefaultPieceHasher>::blank_circuit(&pp.vanilla_params)))
    });
}

#[test]
#[ignore = "81 M constraints counted twice: minutes on 2 cores"]
fn snap_32_gib_is_filecoins_blank_circuit() {
    against_blank_at_32_gib(FilKind::SnapDeals, || {
        let config = SectorUpdateConfig::from_porep_config(&porep_config_32g());
        let partitions = usize::from(config.update_partitions);
        let sp = SetupParams {
            vanilla_params: storage_proofs_update::SetupParams { sector_bytes: u64::from(config.sector_size) },
            partitions: Some(partitions),
            priority: false,
        };
        let pp = EmptySectorUpdateCompound::<SectorShape32GiB>::setup(&sp).expect("setup");
        (partitions, count(EmptySectorUpdateCompound::<SectorShape32GiB>::blank_circuit(&pp.vanilla_params)))
    });
}

#[test]
#[ignore = "125 M constraints counted twice: minutes on 2 cores"]
fn window_post_32_gib_is_filecoins_blank_circuit() {
    against_blank_at_32_gib(FilKind::WindowPoSt, || post_reference(PoStType::Window));
}

#[test]
fn winning_post_32_gib_is_filecoins_blank_circuit() {
    against_blank_at_32_gib(FilKind::WinningPoSt, || post_reference(PoStType::Winning));
}
