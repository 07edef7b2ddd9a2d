//! Full validation through a backend's point checks (`Backend::checks_points`, the path a GPU
//! takes; the CPU backend offers it too): the host decodes with the cheap checks, the backend
//! checks curve and subgroup, and a load accepts or refuses a file exactly as the host's own
//! full validation does, with the same section, index and reason, writing a validation record
//! only when every point passed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use blstrs::{Fp, Fp2, G1Affine, G2Affine};
use cuzk_backend_cpu::CpuBackend;
use cuzk_circuits::{BuiltinShape, CircuitKind};
use cuzk_core::backend::{Backend, BackendError};
use cuzk_core::engine::{CircuitId, DeviceId, Location};
use cuzk_core::params::{Parameters, ParamsError, ParamsLayout, PointError, PointFailure, Section, Validation, G1_UNCOMPRESSED, G2_UNCOMPRESSED};
use cuzk_worker::params::{point_checks, record_path, ParamsFile, PointChecks};
use cuzk_worker::{read_params, read_params_checked, BackendWorker, Checked, LoadTask, ParamSource, WorkError, Worker};
use ff::Field;
use rand::SeedableRng;

fn params(dir: &Path) -> (PathBuf, Parameters) {
    let shape = BuiltinShape::new(CircuitKind::SquaringChain, 10).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let params = cuzk_setup::generate_parameters(shape.kind.instance(shape.log_size, 0).unwrap(), &mut rng).unwrap();
    let path = dir.join("params");
    std::fs::write(&path, params.to_bytes()).unwrap();
    (path, params)
}

/// `(4, y)` on `y² = x³ + 4`: on the curve, outside the subgroup.
fn off_subgroup_g1() -> G1Affine {
    let x = Fp::from(4u64);
    let y = Option::<Fp>::from((x.square() * x + Fp::from(4u64)).sqrt()).expect("68 is a square");
    G1Affine::from_raw_unchecked(x, y, false)
}

/// The first `x = (k, 1)` on `y² = x³ + 4(1 + u)`: on the curve, outside the subgroup.
fn off_subgroup_g2() -> G2Affine {
    let b = Fp2::new(Fp::from(4u64), Fp::from(4u64));
    (1u64..)
        .find_map(|k| {
            let x = Fp2::new(Fp::from(k), Fp::ONE);
            Option::<Fp2>::from((x.square() * x + b).sqrt()).map(|y| G2Affine::from_raw_unchecked(x, y, false))
        })
        .unwrap()
}

/// The point checks of a CPU backend, counting the points each group was handed.
#[derive(Default)]
struct Counting {
    cpu: CpuBackend,
    g1: AtomicUsize,
    g2: AtomicUsize,
}

impl PointChecks for Counting {
    fn check_g1(&self, points: &[G1Affine]) -> Result<Option<PointFailure>, BackendError> {
        self.g1.fetch_add(points.len(), Ordering::Relaxed);
        self.cpu.first_invalid_g1(points)
    }
    fn check_g2(&self, points: &[G2Affine]) -> Result<Option<PointFailure>, BackendError> {
        self.g2.fetch_add(points.len(), Ordering::Relaxed);
        self.cpu.first_invalid_g2(points)
    }
}

/// `bytes` with point `index` of `section` replaced by `point`.
fn with_point(bytes: &[u8], section: Section, index: usize, point: &[u8]) -> Vec<u8> {
    let layout = ParamsLayout::parse(bytes).unwrap();
    let (range, size) = match section {
        Section::H => (layout.h, G1_UNCOMPRESSED),
        Section::L => (layout.l, G1_UNCOMPRESSED),
        Section::A => (layout.a, G1_UNCOMPRESSED),
        Section::BG1 => (layout.b_g1, G1_UNCOMPRESSED),
        Section::BG2 => (layout.b_g2, G2_UNCOMPRESSED),
        Section::Ic => unreachable!(),
    };
    assert!(index * size < range.len());
    let mut out = bytes.to_vec();
    out[range.start + index * size..][..size].copy_from_slice(point);
    out
}

fn invalid(e: WorkError) -> (Section, usize, PointError) {
    match e {
        WorkError::Params { source: ParamsError::InvalidPoint { section, index, reason }, .. } => (section, index, reason),
        e => panic!("{e}"),
    }
}

#[test]
fn the_cpu_backend_offers_its_checks_and_a_valid_file_passes_them() {
    assert!(point_checks(&CpuBackend::new()).is_some());
    let dir = tempfile::tempdir().unwrap();
    let (path, params) = params(dir.path());
    let counting = Counting::default();
    let records = dir.path().join("validated");
    let (got, how) = read_params_checked(&path, Validation::Full, Some(&records), Some(&counting)).unwrap();
    assert_eq!((got, how), (params.clone(), Checked::Full));
    assert_eq!(counting.g1.load(Ordering::Relaxed), params.h.len() + params.l.len() + params.a.len() + params.b_g1.len(), "every G1 point checked once");
    assert_eq!(counting.g2.load(Ordering::Relaxed), params.b_g2.len());
    assert!(record_path(&records, &std::fs::canonicalize(&path).unwrap()).is_file());
    // Trusted, or matching its record: nothing is checked.
    let counting = Counting::default();
    assert_eq!(read_params_checked(&path, Validation::Full, Some(&records), Some(&counting)).unwrap().1, Checked::Record);
    assert_eq!(read_params_checked(&path, Validation::Trusted, None, Some(&counting)).unwrap().1, Checked::Trusted);
    assert_eq!(counting.g1.load(Ordering::Relaxed) + counting.g2.load(Ordering::Relaxed), 0);
}

/// One bad point in the middle of `l` or `b_g2`, of each kind: the backend's checks (or, for a
/// point off the curve and the identity, the host's cheap ones) refuse it with the section,
/// index and reason of the host's full validation; the device load through the worker fails the
/// same way, writes no record and leaves no key.
#[test]
fn a_bad_point_in_l_or_b_g2_is_refused_with_its_section_and_index() {
    let dir = tempfile::tempdir().unwrap();
    let (path, params) = params(dir.path());
    let good = std::fs::read(&path).unwrap();
    let records = dir.path().join("validated");
    let record = || record_path(&records, &std::fs::canonicalize(&path).unwrap());
    let off_curve_g1 = {
        let mut b = params.l[0].to_uncompressed();
        b[40] ^= 1;
        b
    };
    let off_curve_g2 = {
        let mut b = params.b_g2[0].to_uncompressed();
        b[100] ^= 1;
        b
    };
    let cases: Vec<(Section, Vec<u8>, PointError)> = vec![
        (Section::L, off_subgroup_g1().to_uncompressed().to_vec(), PointError::NotOnCurveOrSubgroup),
        (Section::L, off_curve_g1.to_vec(), PointError::NotOnCurveOrSubgroup),
        (Section::L, G1Affine::default().to_uncompressed().to_vec(), PointError::Identity),
        (Section::BG2, off_subgroup_g2().to_uncompressed().to_vec(), PointError::NotOnCurveOrSubgroup),
        (Section::BG2, off_curve_g2.to_vec(), PointError::NotOnCurveOrSubgroup),
        (Section::BG2, G2Affine::default().to_uncompressed().to_vec(), PointError::Identity),
    ];
    for (section, point, reason) in cases {
        let len = if section == Section::L { params.l.len() } else { params.b_g2.len() };
        let index = len / 2;
        assert!(index > 0);
        std::fs::write(&path, with_point(&good, section, index, &point)).unwrap();
        let want = (section, index, reason);
        let host = read_params(&path, Validation::Full).unwrap_err();
        assert_eq!(invalid(read_params(&path, Validation::Full).unwrap_err()), want, "the host's own full validation");
        let counting = Counting::default();
        let e = read_params_checked(&path, Validation::Full, Some(&records), Some(&counting)).unwrap_err();
        assert_eq!(e.to_string(), host.to_string());
        assert_eq!(invalid(e), want, "through the point checks");
        assert!(counting.g1.load(Ordering::Relaxed) > 0, "the point checks ran");
        assert!(!record().exists(), "a refused file was recorded");

        let w = BackendWorker::new(vec![Arc::new(CpuBackend::new())]).with_validation_records(records.clone());
        for at in [Location::Device(DeviceId(0)), Location::Host] {
            let task = LoadTask {
                circuit: CircuitId(0),
                at,
                source: ParamSource::File(path.clone()),
                validation: Validation::Full,
                from_host: false,
                streamed: false,
            };
            let e = w.load_params(task).unwrap_err();
            assert_eq!(e.to_string(), host.to_string(), "{at:?}");
            assert_eq!(invalid(e), want, "{at:?}");
            assert!(!record().exists(), "{at:?}: a refused file was recorded");
        }
        assert!(w.verifying_key(CircuitId(0)).is_none(), "a refused load left a key");
    }
    // The file restored: the worker's device load checks it through the backend and records it.
    std::fs::write(&path, &good).unwrap();
    let w = BackendWorker::new(vec![Arc::new(CpuBackend::new())]).with_validation_records(records.clone());
    let task = LoadTask {
        circuit: CircuitId(0),
        at: Location::Device(DeviceId(0)),
        source: ParamSource::File(path.clone()),
        validation: Validation::Full,
        from_host: false,
        streamed: false,
    };
    w.load_params(task).unwrap();
    assert!(record().is_file());
}

/// Point checks that pass every point but `marker` (the identity, `G1Affine::default()`, when none), recording the runs they were handed.
struct Marker {
    marker: G1Affine,
    runs: Mutex<Vec<(usize, usize)>>,
}

impl PointChecks for Marker {
    fn check_g1(&self, points: &[G1Affine]) -> Result<Option<PointFailure>, BackendError> {
        self.runs.lock().unwrap().push((points.len(), points.iter().filter(|p| **p == self.marker).count()));
        Ok(points.iter().position(|p| *p == self.marker).map(|index| PointFailure { index, reason: PointError::NotOnCurveOrSubgroup }))
    }
    fn check_g2(&self, _: &[G2Affine]) -> Result<Option<PointFailure>, BackendError> {
        Ok(None)
    }
}

/// A section of several 64 MiB read blocks: each block is checked once, in order, with the
/// index of its first point, so a failure in the third block names its index in the section;
/// a device error is the load's error.
#[test]
fn checks_follow_the_blocks_of_a_large_section() {
    let dir = tempfile::tempdir().unwrap();
    let (_, mut p) = params(dir.path());
    let per_block = (64 << 20) / G1_UNCOMPRESSED;
    let n = 2 * per_block + 1000;
    p.h = vec![p.h[0]; n];
    let marker = p.h.len() - 7;
    let other = p.l[0];
    p.h[marker] = other;
    let path = dir.path().join("large");
    std::fs::write(&path, p.to_bytes()).unwrap();
    let file = ParamsFile::open(&path, Validation::Full, None).unwrap();

    let checks = Marker { marker: other, runs: Mutex::default() };
    match file.g1_checked(Section::H, Some(&checks)).unwrap_err() {
        WorkError::Params { source: ParamsError::InvalidPoint { section, index, .. }, .. } => assert_eq!((section, index), (Section::H, marker)),
        e => panic!("{e}"),
    }
    assert_eq!(*checks.runs.lock().unwrap(), vec![(per_block, 0), (per_block, 0), (1000, 1)]);

    let checks = Marker { marker: G1Affine::default(), runs: Mutex::default() };
    assert_eq!(file.g1_checked(Section::H, Some(&checks)).unwrap(), p.h);
    assert_eq!(checks.runs.lock().unwrap().len(), 3);

    struct Broken;
    impl PointChecks for Broken {
        fn check_g1(&self, _: &[G1Affine]) -> Result<Option<PointFailure>, BackendError> {
            Err(BackendError::Device("injected".into()))
        }
        fn check_g2(&self, _: &[G2Affine]) -> Result<Option<PointFailure>, BackendError> {
            Err(BackendError::Device("injected".into()))
        }
    }
    assert!(matches!(file.g1_checked(Section::H, Some(&Broken)), Err(WorkError::Backend(BackendError::Device(_)))));
    // Trusted files are not checked.
    let trusted = ParamsFile::open(&path, Validation::Trusted, None).unwrap();
    assert_eq!(trusted.g1_checked(Section::H, Some(&Broken)).unwrap().len(), n);
}

/// Two points off the curve in one read block, in different decoding tasks (which run in
/// parallel): every load names the earlier one, as the sequential decoder of the core does,
/// whichever task fails first; with the later one alone, that one.
#[test]
fn of_two_bad_points_in_one_block_the_earlier_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (_, mut p) = params(dir.path());
    p.h = vec![p.h[0]; 5 << 12];
    let good = p.to_bytes();
    let off_curve = {
        let mut b = p.h[0].to_uncompressed();
        b[90] ^= 1;
        b
    };
    let (early, late) = ((1 << 12) + 2, (3 << 12) + 1);
    let both = with_point(&with_point(&good, Section::H, late, &off_curve), Section::H, early, &off_curve);
    let path = dir.path().join("two-bad");
    for (bytes, index) in [(both, early), (with_point(&good, Section::H, late, &off_curve), late)] {
        let want = (Section::H, index, PointError::NotOnCurveOrSubgroup);
        assert_eq!(invalid_params(Parameters::from_bytes(&bytes, Validation::Full).unwrap_err()), want, "the core's sequential decoder");
        std::fs::write(&path, &bytes).unwrap();
        for _ in 0..4 {
            assert_eq!(invalid(read_params(&path, Validation::Full).unwrap_err()), want, "the host's full validation");
            assert_eq!(invalid(read_params(&path, Validation::Trusted).unwrap_err()), want, "trusted: the cheap checks still refuse a point off the curve");
            assert_eq!(invalid(read_params_checked(&path, Validation::Full, None, Some(&Counting::default())).unwrap_err()), want, "through the point checks");
            assert_eq!(invalid_params(cuzk_worker::params::load_parameters(&bytes, Validation::Full).unwrap_err()), want, "from memory");
        }
    }
}

fn invalid_params(e: ParamsError) -> (Section, usize, PointError) {
    match e {
        ParamsError::InvalidPoint { section, index, reason } => (section, index, reason),
        e => panic!("{e}"),
    }
}
