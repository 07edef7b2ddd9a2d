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
