//! The encodings Curio sends, decoded against independent references: bincode elements against
//! filecoin-proofs' own `bincode::serialize` and a WindowPoSt element from Curio's test data,
//! the C1 output in its three layouts and Curio's wrapper, and every malformed variant refused
//! with an error naming what is wrong. None of this needs parameters.

use crate::common::{fixture, fixtures};
use cuzk_circuits_filecoin::{
    commitment_cid, decode_request_parts, ffi_layout, prepare, supraseal_layout, wrap_c1_like_curio, CommitmentKind, FilError, FilKind, FilRequest,
};
use filecoin_hashers::Domain;
use filecoin_proofs::{FallbackPoStSectorProof, SectorShape2KiB, SectorShape32GiB};
use storage_proofs_update::PartitionProof;

fn err(req: &FilRequest) -> String {
    let e = decode_request_parts(req).expect_err("accepted").to_string();
    // `prepare` decodes the same way before it verifies anything.
    assert_eq!(prepare(req).expect_err("prepare accepted").to_string(), e);
    e
}

fn with_elements(kind: FilKind, elements: Vec<Vec<u8>>) -> FilRequest {
    let mut r = fixture(kind);
    r.vanilla_proofs = elements;
    r
}

#[test]
fn fixtures_decode_and_verify() {
    for r in fixtures() {
        decode_request_parts(&r).unwrap_or_else(|e| panic!("{:?}: {e}", r.kind));
        let p = prepare(&r).unwrap_or_else(|e| panic!("{:?}: {e}", r.kind));
        assert_eq!(p.partitions(), 1, "{:?}", r.kind);
    }
}

#[test]
fn post_elements_are_filecoin_proofs_bincode() {
    // The size of a 2 KiB element, from the layout: sector id 8, comm_r 32, sector proofs 8 + 1 ×
    // (inclusion proofs 8 + n × (tag 4, root 32, leaf 32, path 8 + 2 × (hashes 8 + 7 × 32,
    // index 8)), comm_c 32, comm_r_last 32).
    let len = |challenges: usize| 8 + 32 + 8 + 8 + challenges * (4 + 64 + 8 + 2 * (8 + 7 * 32 + 8)) + 64;
    for (kind, challenges) in [(FilKind::WindowPoSt, 10), (FilKind::WinningPoSt, 66)] {
        let r = fixture(kind);
        assert_eq!(r.vanilla_proofs.len(), 1);
        let e = &r.vanilla_proofs[0];
        assert_eq!(e.len(), len(challenges), "{kind:?}");
        // filecoin-proofs-api decodes elements with `bincode::deserialize`.
        let p: FallbackPoStSectorProof<SectorShape2KiB> = bincode::deserialize(e).expect("Filecoin's decoder");
        assert_eq!(&bincode::serialize(&p).unwrap(), e);
        assert_eq!(u64::from(p.sector_id), 42);
    }
    assert_eq!(fixture(FilKind::WindowPoSt).vanilla_proofs[0].len(), 5680);

    let r = fixture(FilKind::SnapDeals);
    assert_eq!(r.vanilla_proofs.len(), 1);
    let p: PartitionProof<SectorShape2KiB> = bincode::deserialize(&r.vanilla_proofs[0]).expect("Filecoin's decoder");
    assert_eq!(bincode::serialize(&p).unwrap(), r.vanilla_proofs[0]);
    assert_eq!(p.challenge_proofs.len(), 10);
    for c in [&r.comm_r_old, &r.comm_r_new, &r.comm_d_new] {
        assert_eq!(c.len(), 32, "raw commitments");
    }
}

#[test]
fn curios_golden_windowpost_element_decodes_and_verifies() {
    // lib/proof/testgolden/post.vproof and postpub.json in filecoin-project/curio: a 32 GiB
    // WindowPoSt (abi 8, V1) element of sector 1 of miner 1000, zero randomness.
    let e = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/curio-wpost-32g.vproof")).unwrap();
    assert_eq!(e.len(), 24960);
    let p: FallbackPoStSectorProof<SectorShape32GiB> = bincode::deserialize(&e).unwrap();
    assert_eq!(bincode::serialize(&p).unwrap(), e);
    // Its SealedCID, bagboea4b5abcbx3jccdohrttzfneleehcpkmle4oltwuh4q3rcf5tpdodaoj6mtl, decoded.
    let comm_r: [u8; 32] = p.comm_r.into_bytes().try_into().unwrap();
    let cid = commitment_cid(&comm_r, CommitmentKind::Sealed);
    assert_eq!(hex::encode(&cid), "0182e20381e80220df691086e3c673c95a45908713d4c5938e5ced43f21b888bd9bc6e181c9f326b");
    let req = FilRequest {
        kind: FilKind::WindowPoSt,
        registered_proof: 8,
        vanilla_proof: Vec::new(),
        vanilla_proofs: vec![e.clone()],
        sector_number: 0,
        miner_id: 1000,
        randomness: vec![0; 32],
        partition_index: 0,
        comm_r_old: Vec::new(),
        comm_r_new: Vec::new(),
        comm_d_new: Vec::new(),
    };
    decode_request_parts(&req).unwrap();
    let p = prepare(&req).expect("Curio's vanilla proof verifies");
    assert_eq!((p.circuit.id(), p.partitions()), ("wpost-32g".to_string(), 1));
    // As a 2 KiB element it has the wrong tree.
    let mut small = req.clone();
    small.registered_proof = 5;
    let m = err(&small);
    assert!(m.starts_with("vanilla_proofs[0]: inclusion proof 0: a Merkle path of 10 levels, a 2 KiB sector's tree has 2"), "{m}");
    // Other randomness: other challenges.
    let mut r = req.clone();
    r.randomness[0] = 1;
    assert!(matches!(prepare(&r), Err(FilError::VanillaInvalid(_))));
}

#[test]
fn truncated_elements_are_refused() {
    for kind in [FilKind::WindowPoSt, FilKind::SnapDeals] {
        let e = fixture(kind).vanilla_proofs[0].clone();
        let what = if kind == FilKind::SnapDeals { "PartitionProof" } else { "FallbackPoStSectorProof" };
        // Every prefix of the PoSt element, every 7th of the (longer) SnapDeals one.
        let step = if kind == FilKind::SnapDeals { 7 } else { 1 };
        for n in (0..e.len()).step_by(step) {
            let r = with_elements(kind, vec![e[..n].to_vec()]);
            let m = decode_request_parts(&r).expect_err("a prefix decoded").to_string();
            assert_eq!(m, format!("vanilla_proofs[0]: truncated bincode (a {what} does not fit in the element's {n} bytes)"), "{kind:?}");
        }
    }
}

#[test]
fn malformed_post_elements_are_refused() {
    let e = fixture(FilKind::WindowPoSt).vanilla_proofs[0].clone();
    let set = |at: usize, v: &[u8]| {
        let mut b = e.clone();
        b[at..at + v.len()].copy_from_slice(v);
        err(&with_elements(FilKind::WindowPoSt, vec![e.clone(), b]))
    };
    // The sector-proof count (at 40) and inclusion-proof count (at 48).
    assert_eq!(set(40, &0u64.to_le_bytes()), "vanilla_proofs[1]: trailing bytes (5632 after a 48-byte FallbackPoStSectorProof)");
    // Two sector proofs: the second one is read from what follows the first.
    let m = set(40, &2u64.to_le_bytes());
    assert!(m.starts_with("vanilla_proofs[1]: ") && (m.contains("truncated bincode") || m.contains("enum tag")), "{m}");
    let m = set(48, &u64::MAX.to_le_bytes());
    assert!(m.starts_with("vanilla_proofs[1]: ") && (m.contains("truncated bincode") || m.contains("enum tag")), "{m}");
    // The path length of the last inclusion proof (each is 556 bytes from 56, its path length
    // 68 bytes in): only path elements and two hashes follow, so it runs past the end.
    for n in [3u64, 1000, u64::MAX] {
        assert_eq!(
            set(56 + 9 * 556 + 68, &n.to_le_bytes()),
            "vanilla_proofs[1]: truncated bincode (a FallbackPoStSectorProof does not fit in the element's 5680 bytes)"
        );
    }
    assert_eq!(set(56 + 9 * 556 + 68, &1u64.to_le_bytes()), "vanilla_proofs[1]: trailing bytes (240 after a 5440-byte FallbackPoStSectorProof)");
    // The first Merkle proof's tag (at 56): Sub and Top read the bytes differently, 3 is none.
    assert_eq!(
        set(56, &3u32.to_le_bytes()),
        "vanilla_proofs[1]: invalid bincode in a FallbackPoStSectorProof: enum tag 3 (a Merkle proof is tagged 0, 1 or 2)"
    );
    // The first path element's hash count (at 132) one less: a 6-hash level, and everything after
    // it shifted by 32 bytes.
    let m = set(132, &6u64.to_le_bytes());
    assert!(m.starts_with("vanilla_proofs[1]: "), "{m}");
    // The sector id of the second element made the first's.
    let mut dup = e.clone();
    dup[88] ^= 1; // a different leaf, the same sector
    assert_eq!(err(&with_elements(FilKind::WindowPoSt, vec![e.clone(), dup])), "vanilla_proofs[1]: sector 42 again (also vanilla_proofs[0])");

    // Trailing bytes.
    let mut long = e.clone();
    long.push(0);
    assert_eq!(err(&with_elements(FilKind::WindowPoSt, vec![long])), "vanilla_proofs[0]: trailing bytes (1 after a 5680-byte FallbackPoStSectorProof)");
    let mut long = fixture(FilKind::SnapDeals).vanilla_proofs[0].clone();
    long.extend_from_slice(&[1, 2, 3]);
    let n = long.len() - 3;
    assert_eq!(err(&with_elements(FilKind::SnapDeals, vec![long])), format!("vanilla_proofs[0]: trailing bytes (3 after a {n}-byte PartitionProof)"));
}

#[test]
fn element_counts_are_checked() {
    let w = fixture(FilKind::WindowPoSt).vanilla_proofs[0].clone();
    assert_eq!(err(&with_elements(FilKind::WindowPoSt, vec![])), "vanilla_proofs: expected 1 to 2 sector proofs, got 0");
    assert_eq!(err(&with_elements(FilKind::WindowPoSt, vec![w.clone(); 3])), "vanilla_proofs: expected 1 to 2 sector proofs, got 3");
    let g = fixture(FilKind::WinningPoSt).vanilla_proofs[0].clone();
    assert_eq!(err(&with_elements(FilKind::WinningPoSt, vec![])), "vanilla_proofs: expected 1 sector proof, got 0");
    assert_eq!(err(&with_elements(FilKind::WinningPoSt, vec![g.clone(), g])), "vanilla_proofs: expected 1 sector proof, got 2");
    let s = fixture(FilKind::SnapDeals).vanilla_proofs[0].clone();
    assert_eq!(err(&with_elements(FilKind::SnapDeals, vec![])), "vanilla_proofs: expected 1 partition proof, got 0");
    assert_eq!(err(&with_elements(FilKind::SnapDeals, vec![s.clone(), s])), "vanilla_proofs: expected 1 partition proof, got 2");
}

#[test]
fn elements_of_another_kind_are_named() {
    let w = fixture(FilKind::WindowPoSt).vanilla_proofs[0].clone();
    let g = fixture(FilKind::WinningPoSt).vanilla_proofs[0].clone();
    let s = fixture(FilKind::SnapDeals).vanilla_proofs[0].clone();
    let m = err(&with_elements(FilKind::WindowPoSt, vec![s.clone()]));
    assert!(m.starts_with("vanilla_proofs[0]: a SnapDeals PartitionProof, not a PoSt FallbackPoStSectorProof ("), "{m}");
    let m = err(&with_elements(FilKind::WinningPoSt, vec![s]));
    assert!(m.starts_with("vanilla_proofs[0]: a SnapDeals PartitionProof, not a PoSt FallbackPoStSectorProof"), "{m}");
    let m = err(&with_elements(FilKind::SnapDeals, vec![w.clone()]));
    assert!(m.starts_with("vanilla_proofs[0]: a PoSt FallbackPoStSectorProof, not a SnapDeals PartitionProof ("), "{m}");
    // A WinningPoSt element is a FallbackPoStSectorProof too, with 66 challenges.
    assert_eq!(
        err(&with_elements(FilKind::WindowPoSt, vec![g.clone()])),
        "vanilla_proofs[0]: 66 inclusion proofs, a WindowPoSt sector proof answers 10 challenges"
    );
    assert_eq!(err(&with_elements(FilKind::WinningPoSt, vec![w])), "vanilla_proofs[0]: 10 inclusion proofs, a WinningPoSt sector proof answers 66 challenges");
}

#[test]
fn vanilla_proofs_in_the_wrong_field_are_refused() {
    for kind in [FilKind::SnapDeals, FilKind::WindowPoSt, FilKind::WinningPoSt] {
        let mut r = fixture(kind);
        r.vanilla_proof = std::mem::take(&mut r.vanilla_proofs).concat();
        let e = decode_request_parts(&r).unwrap_err();
        assert!(matches!(e, FilError::WrongField { .. }), "{kind:?}: {e}");
        assert_eq!(e.to_string(), format!("{kind:?} reads its vanilla proofs from field 11 (vanilla_proofs), but field 10 (vanilla_proof) is set"));
        // Both set: still refused.
        r.vanilla_proofs = fixture(kind).vanilla_proofs;
        assert!(matches!(decode_request_parts(&r), Err(FilError::WrongField { .. })));
    }
    let mut r = fixture(FilKind::PoRep);
    r.vanilla_proofs = vec![std::mem::take(&mut r.vanilla_proof)];
    assert_eq!(err(&r), "PoRep reads its vanilla proofs from field 10 (vanilla_proof), but field 11 (vanilla_proofs) is set");
    r.vanilla_proofs.clear();
    assert_eq!(err(&r), "vanilla_proof: missing (PoRep needs the C1 output JSON)");
}

#[test]
fn snap_commitments_are_checked() {
    let r = fixture(FilKind::SnapDeals);
    // CIDs of the right codec are accepted as well as raw bytes.
    let mut c = r.clone();
    c.comm_r_old = commitment_cid(&r.comm_r_old.clone().try_into().unwrap(), CommitmentKind::Sealed);
    c.comm_d_new = commitment_cid(&r.comm_d_new.clone().try_into().unwrap(), CommitmentKind::Unsealed);
    decode_request_parts(&c).unwrap();
    // The sealed codec on comm_d_new and the unsealed one on comm_r_new are refused.
    let mut c = r.clone();
    c.comm_d_new = commitment_cid(&r.comm_d_new.clone().try_into().unwrap(), CommitmentKind::Sealed);
    let m = err(&c);
    assert!(m.starts_with("comm_d_new: 40-byte CID: codec 0xf102 (fil-commitment-sealed), expected 0xf101"), "{m}");
    let mut c = r.clone();
    c.comm_r_new = commitment_cid(&r.comm_r_new.clone().try_into().unwrap(), CommitmentKind::Unsealed);
    let m = err(&c);
    assert!(m.starts_with("comm_r_new: 39-byte CID: codec 0xf101 (fil-commitment-unsealed), expected 0xf102"), "{m}");
    let mut c = r.clone();
    c.comm_r_old.pop();
    assert_eq!(err(&c), "comm_r_old: 31 bytes: expected the 32-byte commitment or its CIDv1");
    let mut c = r.clone();
    c.comm_d_new.clear();
    assert_eq!(err(&c), "comm_d_new: missing (expected the 32-byte commitment)");
    // Swapped commitments decode but do not verify.
    let mut c = r.clone();
    std::mem::swap(&mut c.comm_r_old, &mut c.comm_r_new);
    decode_request_parts(&c).unwrap();
    assert!(matches!(prepare(&c), Err(FilError::VanillaInvalid(_))));
}

#[test]
fn c1_layouts_decode_to_the_same_proofs() {
    let r = fixture(FilKind::PoRep);
    let plain = r.vanilla_proof.clone();
    assert!(plain.starts_with(b"{\"vanilla_proofs\":[["), "filecoin-proofs' own layout");
    let ffi = ffi_layout(&plain, r.registered_proof).unwrap();
    assert!(ffi.starts_with(
        b"{\"registered_proof\":\"StackedDrg2KiBV1_1\",\"vanilla_proofs\":{\"StackedDrg2KiBV1\":[[{\"comm_d_proofs\":{\"data\":{\"Single\":{\"root\":["
    ));
    let supra = supraseal_layout(&plain).unwrap();
    let text = String::from_utf8(supra.clone()).unwrap();
    assert!(text.starts_with("{\"comm_d\":["), "{}", &text[..40]);
    let order = [
        "\"comm_d\":",
        "\"comm_r\":",
        "\"registered_proof\":\"StackedDrg2KiBV1_1\"",
        "\"replica_id\":",
        "\"seed\":",
        "\"ticket\":",
        "\"vanilla_proofs\":{\"StackedDrg2KiBV1\":[[{\"comm_d_proofs\":{\"data\":{\"Single\":{\"root\":[",
    ];
    let at: Vec<usize> = order.iter().map(|k| text.find(k).unwrap_or_else(|| panic!("{k}"))).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "Go's field order: {at:?}");
    assert!(text.contains("\"_h\":null}"), "Column's `_h`");
    assert!(text.contains("\"replica_column_proofs\":{\"c_x\":{\"column\":{\"index\":"));
    assert!(!text.contains(' ') && !text.contains('\n'));
    // Each layout re-emitted through filecoin-proofs' types gives the same bytes: the same proofs.
    for (name, c1) in [("ffi", &ffi), ("supraseal", &supra)] {
        assert_eq!(ffi_layout(c1, r.registered_proof).unwrap(), ffi, "{name}");
        assert_eq!(supraseal_layout(c1).unwrap(), supra, "{name}");
    }
    // Each decodes and verifies, bare and in Curio's wrapper.
    for c1 in [&plain, &ffi, &supra] {
        for v in [c1.clone(), wrap_c1_like_curio(c1, 42, 2048)] {
            let mut q = r.clone();
            q.vanilla_proof = v;
            decode_request_parts(&q).unwrap();
            assert_eq!(prepare(&q).unwrap().partitions(), 1);
        }
    }
    // A wrapped wrapper is not.
    let mut q = r.clone();
    q.vanilla_proof = wrap_c1_like_curio(&wrap_c1_like_curio(&ffi, 42, 2048), 42, 2048);
    assert_eq!(err(&q), "vanilla_proof: Curio's wrapper inside Curio's wrapper");
}

#[test]
fn c1_mismatches_are_refused() {
    let r = fixture(FilKind::PoRep);
    let ffi = ffi_layout(&r.vanilla_proof, r.registered_proof).unwrap();
    let with = |v: Vec<u8>| {
        let mut q = r.clone();
        q.vanilla_proof = v;
        err(&q)
    };
    assert_eq!(with(wrap_c1_like_curio(&ffi, 43, 2048)), "vanilla_proof: Curio's wrapper is for sector 43, the request's sector_number is 42");
    assert_eq!(
        with(wrap_c1_like_curio(&ffi, 42, 32 << 30)),
        "vanilla_proof: Curio's wrapper says SectorSize 34359738368, registered proof 5 (StackedDrg2KiBV1_1) seals 2048-byte sectors"
    );
    // The same C1 named as another proof of the same sector size (V1, synthetic, NI).
    for (abi, name) in [(0, "StackedDrg2KiBV1"), (10, "StackedDrg2KiBV1_1_Feat_SyntheticPoRep"), (15, "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep")] {
        let v = ffi_layout(&r.vanilla_proof, abi).unwrap();
        assert_eq!(
            with(wrap_c1_like_curio(&v, 42, 2048)),
            format!("vanilla_proof: the C1 output is for {name:?}, the request's registered_proof 5 is \"StackedDrg2KiBV1_1\"")
        );
    }
    let text = String::from_utf8(ffi.clone()).unwrap();
    assert_eq!(
        with(text.replacen("\"StackedDrg2KiBV1\":", "\"StackedDrg32GiBV1\":", 1).into_bytes()),
        "vanilla_proof: vanilla_proofs are keyed \"StackedDrg32GiBV1\", a 2 KiB sector's are keyed \"StackedDrg2KiBV1\""
    );
    assert_eq!(
        with(text.replacen("{\"StackedDrg2KiBV1\":[[", "{\"StackedDrg2KiBV1\":[[],[", 1).into_bytes()),
        "vanilla_proof: 2 partitions of vanilla proofs, registered proof 5 (StackedDrg2KiBV1_1) has 1"
    );
    let m = with(text.replacen("{\"StackedDrg2KiBV1\":", "{\"StackedDrg8MiBV1\":[],\"StackedDrg2KiBV1\":", 1).into_bytes());
    assert!(m.contains("more than one key"), "{m}");
    // Other sector and miner: another replica id.
    let mut q = r.clone();
    q.miner_id += 1;
    assert!(matches!(decode_request_parts(&q), Err(FilError::VanillaInvalid(m)) if m.contains("replica_id")));
    // Broken wrappers.
    let b64 = |s: &str| s.as_bytes().to_vec();
    assert_eq!(with(b64(r#"{"SectorNum":42,"Phase1Out":"e30="}"#)), "vanilla_proof: Curio's wrapper without SectorSize");
    assert_eq!(with(b64(r#"{"SectorNum":42,"SectorSize":2048}"#)), "vanilla_proof: Curio's wrapper without Phase1Out");
    assert_eq!(with(b64(r#"{"SectorNum":42,"Phase1Out":null,"SectorSize":2048}"#)), "vanilla_proof: Curio's wrapper without Phase1Out");
    let m = with(b64(r#"{"SectorNum":42,"Phase1Out":"e30","SectorSize":2048}"#));
    assert!(m.starts_with("vanilla proof does not decode: Curio's wrapper: Phase1Out is not standard base64"), "{m}");
    assert_eq!(with(b64(r#"{"SectorNum":42,"Phase1Out":"e30=","SectorSize":2048}"#)), "vanilla proof does not decode: C1 output: missing `vanilla_proofs`");
    let m = with(b64(r#"{"SectorNum":42,"Phase1Out":"e30=","SectorSize":2048,"comm_r":[]}"#));
    assert!(m.starts_with("vanilla proof does not decode: C1 output JSON: invalid length 0"), "{m}");
    let m = with(b64("[1,2,3]"));
    assert!(m.starts_with("vanilla proof does not decode: C1 output JSON: invalid type"), "{m}");
    let m = with(b64("\"hello\""));
    assert!(m.starts_with("vanilla proof does not decode: C1 output JSON: invalid type: string"), "{m}");
}

/// Writes the fixtures' elements and C1 outputs as seed inputs of the fuzz targets
/// (`CUZK_FUZZ_SEEDS=fuzz/corpus cargo test --release -p cuzk-circuits-filecoin --test encodings -- --ignored`).
#[test]
#[ignore]
fn write_fuzz_seeds() {
    let Some(dir) = std::env::var_os("CUZK_FUZZ_SEEDS") else { return };
    let dir = std::path::PathBuf::from(dir);
    let put = |target: &str, name: &str, bytes: &[u8]| {
        let d = dir.join(target);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(name), bytes).unwrap();
    };
    for r in fixtures() {
        match r.kind {
            // vanilla_element: the element.
            FilKind::WindowPoSt | FilKind::WinningPoSt | FilKind::SnapDeals => put("vanilla_element", r.kind.short(), &r.vanilla_proofs[0]),
            // c1_wrapper: selector byte, then field 10.
            FilKind::PoRep => {
                let ffi = ffi_layout(&r.vanilla_proof, r.registered_proof).unwrap();
                let supra = supraseal_layout(&r.vanilla_proof).unwrap();
                for (name, v) in [("plain", r.vanilla_proof.clone()), ("ffi", ffi.clone()), ("supra", supra), ("wrapped", wrap_c1_like_curio(&ffi, 42, 2048))] {
                    put("c1_wrapper", &format!("porep-{name}"), &[&[1u8][..], &v].concat());
                }
                put("commitment", "sealed", &[&[0u8][..], &commitment_cid(&[1; 32], CommitmentKind::Sealed)].concat());
                put("commitment", "unsealed", &[&[1u8][..], &commitment_cid(&[1; 32], CommitmentKind::Unsealed)].concat());
            }
        }
    }
}
