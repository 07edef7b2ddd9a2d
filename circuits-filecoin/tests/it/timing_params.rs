//! Timing-only parameter files (`params::write_timing_only`) have the names, the layout and the
//! query lengths of the real parameters `cuzk-setup` generates for the same circuit, so a
//! daemon that reads the Filecoin cache (ours or Curio's) loads them as it loads real ones.

use cuzk_circuits_filecoin::{params, FilKind, FilShape};
use cuzk_core::matrices::ConstraintMatrices;
use cuzk_core::params::{ParamsLayout, Validation, VerifyingKey};
use cuzk_setup::timing::TimingQueries;

use crate::common::{cache, ensure_params, KIB2};

#[test]
fn timing_only_files_have_the_names_layout_and_lengths_of_real_parameters() {
    let slow = std::env::var_os("CUZK_SLOW_TESTS").is_some_and(|v| v != "0");
    for kind in FilKind::ALL {
        if !slow && matches!(kind, FilKind::PoRep | FilKind::SnapDeals) {
            println!("SKIPPED: {kind:?} (2 KiB): its real parameters take minutes to generate; runs with CUZK_SLOW_TESTS=1");
            continue;
        }
        let id = FilShape::new(kind, KIB2).unwrap();
        ensure_params(kind);
        let real = params::files(&cache(), id).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let t = params::write_timing_only(dir.path(), id, false, |blank| {
            let m = ConstraintMatrices::record(blank).map_err(|e| e.to_string())?;
            TimingQueries::of(&m).map_err(|e| e.to_string())
        })
        .unwrap();
        for (ours, theirs) in [(&t.params, &real.params), (&t.vk, &real.vk), (&t.meta, &real.meta)] {
            assert_eq!(ours.file_name(), theirs.file_name(), "{kind:?}: file name");
        }
        assert_eq!(std::fs::read(&t.meta).unwrap(), std::fs::read(&real.meta).unwrap(), "{kind:?}: .meta");
        let (ours, theirs) = (std::fs::read(&t.params).unwrap(), std::fs::read(&real.params).unwrap());
        assert_eq!(ours.len(), theirs.len(), "{kind:?}: file size");
        let (a, b) = (ParamsLayout::parse(&ours).unwrap(), ParamsLayout::parse(&theirs).unwrap());
        assert_eq!([a.h, a.l, a.a, a.b_g1, a.b_g2], [b.h, b.l, b.a, b.b_g1, b.b_g2], "{kind:?}: sections");
        assert_eq!(a.vk.ic.len(), b.vk.ic.len(), "{kind:?}: ic");
        // Every point is a valid one (a full validation accepts the file), and the `.vk` is the file's own.
        cuzk_core::params::Parameters::from_bytes(&ours, Validation::Full).unwrap();
        let vk = std::fs::read(&t.vk).unwrap();
        assert_eq!(VerifyingKey::from_bytes(&vk).unwrap(), (a.vk, vk.len()), "{kind:?}: .vk");
        // Files present and no --force: nothing is rewritten.
        let again = params::write_timing_only(dir.path(), id, false, |_| panic!("{kind:?}: rewritten without --force")).unwrap();
        assert_eq!(again.params, t.params);
    }
}

/// The names cuzk gives Filecoin's parameter files are the names Filecoin publishes digests
/// for (`parameters.json`), at the production sizes; the digest is blake2b-512's first 32 hex
/// digits, checked against coreutils' `b2sum`.
#[test]
fn published_digests_by_our_file_names() {
    let dir = std::path::Path::new("/cache");
    for size in [32u64 << 30, 64 << 30] {
        for id in FilShape::all_at(size).unwrap() {
            let f = params::files(dir, id).unwrap();
            for p in [&f.params, &f.vk] {
                let name = p.file_name().unwrap().to_str().unwrap();
                let d = params::published_digest(name).unwrap_or_else(|| panic!("{}: {name} is not in Filecoin's parameters.json", id.id()));
                assert!(d.len() == 32 && d.bytes().all(|b| b.is_ascii_hexdigit()), "{name}: {d}");
            }
        }
    }
    // 32 GiB PoRep: the file Curio's own daemon names (its srs_manager).
    let porep = params::files(dir, FilShape::new(FilKind::PoRep, 32 << 30).unwrap()).unwrap();
    assert_eq!(
        porep.params.file_name().unwrap().to_str().unwrap(),
        "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0-sha256_hasher-82a357d2f2ca81dc61bb45f4a762807aedee1b0a53fd6c4e77b46a01bfef7820.params"
    );
    assert_eq!(params::published_digest("v28-not-a-filecoin-file.params"), None);

    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("v28-not-listed.params");
    std::fs::write(&file, (0..100_000u32).flat_map(|i| i.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    let go = std::sync::atomic::AtomicBool::new(false);
    let b2sum = std::process::Command::new("b2sum").arg(&file).output();
    match b2sum {
        Ok(out) if out.status.success() => {
            let want = String::from_utf8(out.stdout).unwrap()[..32].to_string();
            assert_eq!(params::file_digest(&file, &go).unwrap(), want, "blake2b-512 as b2sum computes it");
        }
        _ => println!("SKIPPED: the digest against b2sum (coreutils' b2sum not found)"),
    }
    assert_eq!(params::matches_published_digest(&file, &go).unwrap(), None, "a name Filecoin does not list");
    // A listed name with other contents: listed, and not matching.
    let listed = tmp.path().join(porep.vk.file_name().unwrap());
    std::fs::write(&listed, b"not the verifying key").unwrap();
    assert_eq!(params::matches_published_digest(&listed, &go).unwrap(), Some(false));
    // Told to stop, it gives up instead of reading on.
    let e = params::matches_published_digest(&listed, &std::sync::atomic::AtomicBool::new(true)).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "{e}");
}
