//! Validation records: a parameter file validated in full once is later decoded without the
//! point checks while its length and checksum match its record; a changed file, or a garbled
//! record, means a full validation again.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use cuzk_backend_cpu::CpuBackend;
use cuzk_circuits::{BuiltinShape, CircuitKind};
use cuzk_core::backend::BackendError;
use cuzk_core::engine::{CircuitId, Location};
use cuzk_core::params::PointFailure;
use cuzk_core::params::{Parameters, ParamsError, ParamsLayout, PointError, Section, Validation};
use cuzk_worker::params::{checksum, record_path, PointChecks};
use cuzk_worker::{
    read_params, read_params_trusting, read_params_with_records, BackendWorker, Checked, LoadTask, ParamSource, PublishedDigest, WorkError, Worker,
};
use rand::SeedableRng;

/// A small parameter file in `dir`, and its parameters.
fn params_file(dir: &Path) -> (PathBuf, Parameters) {
    let shape = BuiltinShape::new(CircuitKind::SquaringChain, 10).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let params = cuzk_setup::generate_parameters(shape.kind.instance(shape.log_size, 0).unwrap(), &mut rng).unwrap();
    let path = dir.join("params");
    std::fs::write(&path, params.to_bytes()).unwrap();
    (path, params)
}

fn record_of(records: &Path, path: &Path) -> PathBuf {
    record_path(records, &std::fs::canonicalize(path).unwrap())
}

#[test]
fn first_load_validates_and_records_second_uses_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let (path, params) = params_file(dir.path());
    let records = dir.path().join("validated");
    let (first, how) = read_params_with_records(&path, Validation::Full, Some(&records)).unwrap();
    assert_eq!(how, Checked::Full);
    assert_eq!(first, params);
    let record = std::fs::read_to_string(record_of(&records, &path)).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert!(record.contains(&format!("\nlen {}\n", bytes.len())), "{record}");
    assert!(record.contains(&format!("\nxxh3 {:016x}\n", checksum(&bytes))), "{record}");
    let (second, how) = read_params_with_records(&path, Validation::Full, Some(&records)).unwrap();
    assert_eq!(how, Checked::Record);
    assert_eq!(second, params);
    // Without a record directory, or trusted, nothing is recorded or consulted.
    assert_eq!(read_params_with_records(&path, Validation::Full, None).unwrap().1, Checked::Full);
    assert_eq!(read_params_with_records(&path, Validation::Trusted, Some(&records)).unwrap().1, Checked::Trusted);
}

#[test]
fn checksum_is_deterministic_and_sees_one_byte() {
    let mut bytes: Vec<u8> = (0..(150u32 << 20) / 4).flat_map(|i| i.to_le_bytes()).collect();
    let sum = checksum(&bytes);
    assert_eq!(checksum(&bytes), sum);
    bytes[100 << 20] ^= 1;
    assert_ne!(checksum(&bytes), sum);
    assert_ne!(checksum(&bytes[..bytes.len() - 1]), checksum(&bytes));
}

#[test]
fn a_changed_file_is_validated_in_full_and_fails_as_without_records() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = params_file(dir.path());
    let records = dir.path().join("validated");
    assert_eq!(read_params_with_records(&path, Validation::Full, Some(&records)).unwrap().1, Checked::Full);
    let recorded = std::fs::read(record_of(&records, &path)).unwrap();

    // One byte in the middle of the x coordinate of the first `h` point: same length, no longer
    // on the curve.
    let mut bytes = std::fs::read(&path).unwrap();
    let at = ParamsLayout::parse(&bytes).unwrap().h.start + 24;
    bytes[at] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();
    let without = read_params(&path, Validation::Full).unwrap_err();
    let with = read_params_with_records(&path, Validation::Full, Some(&records)).unwrap_err();
    assert_eq!(with.to_string(), without.to_string());
    match with {
        WorkError::Params { source, .. } => {
            assert_eq!(source, ParamsError::InvalidPoint { section: Section::H, index: 0, reason: PointError::NotOnCurveOrSubgroup })
        }
        e => panic!("{e}"),
    }
    // The failed validation leaves the old record, which keeps not matching.
    assert_eq!(std::fs::read(record_of(&records, &path)).unwrap(), recorded);
    assert!(read_params_with_records(&path, Validation::Full, Some(&records)).is_err());
}

/// `(4, y)` on `y² = x³ + 4` over the base field, uncompressed: on the curve, outside the
/// prime-order subgroup.
const OFF_SUBGROUP_G1: &str = "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000040a989badd40d6212b33cffc3f3763e9bc760f988c9926b26da9dd85e928483446346b8ed00e1de5d5ea93e354abe706c";

/// `bytes` with the H query's first point replaced by one outside the subgroup.
fn with_bad_point(mut bytes: Vec<u8>) -> Vec<u8> {
    let at = ParamsLayout::parse(&bytes).unwrap().h.start;
    let point: Vec<u8> = (0..OFF_SUBGROUP_G1.len()).step_by(2).map(|i| u8::from_str_radix(&OFF_SUBGROUP_G1[i..i + 2], 16).unwrap()).collect();
    bytes[at..at + point.len()].copy_from_slice(&point);
    bytes
}

#[test]
fn a_point_only_the_subgroup_check_rejects_is_caught_by_the_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = params_file(dir.path());
    let records = dir.path().join("validated");
    assert_eq!(read_params_with_records(&path, Validation::Full, Some(&records)).unwrap().1, Checked::Full);

    let bytes = with_bad_point(std::fs::read(&path).unwrap());
    std::fs::write(&path, &bytes).unwrap();
    // Decoded as trusted the file loads: only comparing the checksum finds the change.
    cuzk_worker::params::load_parameters(&bytes, Validation::Trusted).expect("trusted decoding skips the subgroup check");

    let err = read_params_with_records(&path, Validation::Full, Some(&records)).unwrap_err();
    assert_eq!(err.to_string(), read_params(&path, Validation::Full).unwrap_err().to_string());
    match err {
        WorkError::Params { source, .. } => {
            assert_eq!(source, ParamsError::InvalidPoint { section: Section::H, index: 0, reason: PointError::NotOnCurveOrSubgroup })
        }
        e => panic!("{e}"),
    }
}

#[test]
fn a_garbled_record_is_ignored_and_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let (path, params) = params_file(dir.path());
    let records = dir.path().join("validated");
    read_params_with_records(&path, Validation::Full, Some(&records)).unwrap();
    let record = record_of(&records, &path);
    let good = std::fs::read_to_string(&record).unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    let garbled = [
        String::new(),
        "garbage".into(),
        good[..good.len() - 1].into(),
        format!("{good}\n"),
        good.replace(&format!("len {len}"), &format!("len {}", len + 1)),
        good.replace("xxh3 ", "xxh3  "),
        good.replace(&format!("xxh3 {:016x}", checksum(&std::fs::read(&path).unwrap())), &format!("xxh3 {:016x}", checksum(b"other"))),
        good.to_uppercase(),
    ];
    for g in garbled {
        std::fs::write(&record, &g).unwrap();
        let (p, how) = read_params_with_records(&path, Validation::Full, Some(&records)).unwrap();
        assert_eq!(how, Checked::Full, "{g:?}");
        assert_eq!(p, params);
        assert_eq!(std::fs::read_to_string(&record).unwrap(), good, "{g:?}");
        assert_eq!(read_params_with_records(&path, Validation::Full, Some(&records)).unwrap().1, Checked::Record);
    }
    // A record that is not a file at all (unreadable) means a full validation too.
    std::fs::remove_file(&record).unwrap();
    std::fs::create_dir(&record).unwrap();
    assert_eq!(read_params_with_records(&path, Validation::Full, Some(&records)).unwrap().1, Checked::Full);
}

#[test]
fn the_worker_records_validations_in_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = params_file(dir.path());
    let records = dir.path().join("validated");
    let w = BackendWorker::new(vec![Arc::new(CpuBackend::new())]).with_validation_records(records.clone());
    w.load_params(LoadTask {
        circuit: CircuitId(0),
        at: Location::Host,
        source: ParamSource::File(path.clone()),
        validation: Validation::Full,
        from_host: false,
        streamed: false,
    })
    .unwrap();
    assert!(record_of(&records, &path).is_file());
    assert_eq!(read_params_with_records(&path, Validation::Full, Some(&records)).unwrap().1, Checked::Record);
}

/// A device load decodes the file one query at a time: it records a full validation as a host
/// load does; a bad point in the last query (`b_g2`, decoded after the other four are on the
/// device) fails the load, writes no record and leaves no key; the loads from the file and from
/// a warm host copy prove the bytes a key made from the whole decoded set proves.
#[test]
fn device_loads_take_one_query_at_a_time_and_record_or_fail_as_host_loads() {
    use crate::work;
    use blstrs::Scalar;
    use cuzk_core::engine::DeviceId;
    use cuzk_worker::prove_one;
    use ff::Field;

    let dir = tempfile::tempdir().unwrap();
    let (path, params) = params_file(dir.path());
    let records = dir.path().join("validated");
    let shape = BuiltinShape::new(CircuitKind::SquaringChain, 10).unwrap();
    let device = Location::Device(DeviceId(0));
    let task = |at, from_host| LoadTask {
        circuit: CircuitId(0),
        at,
        source: ParamSource::File(path.clone()),
        validation: Validation::Full,
        from_host,
        streamed: false,
    };
    let worker = || BackendWorker::new(vec![Arc::new(CpuBackend::new())]).with_validation_records(records.clone());

    let reference = worker();
    reference.load_key(CircuitId(0), 0, params.clone()).unwrap();
    let from_file = worker();
    from_file.load_params(task(device, false)).unwrap();
    assert!(record_of(&records, &path).is_file(), "a full validation by a device load is recorded");
    let from_host = worker();
    from_host.load_params(task(Location::Host, false)).unwrap();
    from_host.load_params(task(device, true)).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    for seed in [1u64, 2] {
        let rs = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let prove = |w: &BackendWorker<CpuBackend>| prove_one(w, CircuitId(0), 0, work(shape, seed), Some(rs), true, |_, _, _| {}).expect("proof").0.to_bytes();
        let want = prove(&reference);
        assert_eq!(prove(&from_file), want, "seed {seed}: the load from the file proves otherwise");
        assert_eq!(prove(&from_host), want, "seed {seed}: the load from the warm host copy proves otherwise");
    }

    // The first `b_g2` point, no longer on the curve: the record must not be trusted (it is
    // removed), the device load fails on b_g2 and writes none.
    std::fs::remove_file(record_of(&records, &path)).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let at = ParamsLayout::parse(&bytes).unwrap().b_g2.start + 24;
    bytes[at] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();
    let w = worker();
    match w.load_params(task(device, false)).unwrap_err() {
        WorkError::Params { source: ParamsError::InvalidPoint { section, index, .. }, .. } => assert_eq!((section, index), (Section::BG2, 0)),
        e => panic!("{e}"),
    }
    assert!(!record_of(&records, &path).exists(), "a failed validation wrote a record");
    let rs = (Scalar::ZERO, Scalar::ZERO);
    assert!(prove_one(&w, CircuitId(0), 0, work(shape, 1), Some(rs), true, |_, _, _| {}).is_err(), "a failed load left a key");
}

/// A parameter file truncated or rewritten after it was opened (and its record checked), while
/// its sections are still to be read: the section read fails with the reason, where a map of the
/// file faulted the process (SIGBUS) or decoded the new bytes unchecked.
#[test]
fn a_file_changed_while_it_loads_is_an_error_not_a_fault() {
    use cuzk_worker::params::ParamsFile;
    let dir = tempfile::tempdir().unwrap();
    let (path, params) = params_file(dir.path());
    let len = std::fs::metadata(&path).unwrap().len();

    let file = ParamsFile::open(&path, Validation::Trusted, None).unwrap();
    assert_eq!(file.g1(Section::H).unwrap(), params.h);
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(len / 2).unwrap();
    let e = file.g1(Section::BG1).expect_err("read past the new end").to_string();
    assert!(e.contains("shorter than when it was opened"), "{e}");

    let (path, params) = params_file(dir.path());
    let file = ParamsFile::open(&path, Validation::Trusted, None).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    // L's first point replaced by H's: a valid point, so only the file's change can tell.
    let bytes = std::fs::read(&path).unwrap();
    let layout = ParamsLayout::parse(&bytes).unwrap();
    {
        use std::os::unix::fs::FileExt;
        let h0 = &bytes[layout.h.start..layout.h.start + 96];
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().write_all_at(h0, layout.l.start as u64).unwrap();
    }
    let e = file.g1(Section::L).expect_err("a rewritten file decoded").to_string();
    assert!(e.contains("changed while it was read"), "{e}");
    assert_ne!(params.l.len(), 0);
}

/// A publisher's list as the worker takes it.
fn list(f: impl Fn(&Path, &AtomicBool) -> std::io::Result<Option<bool>> + Send + Sync + 'static) -> Arc<PublishedDigest> {
    Arc::new(f)
}

/// A list that names `path`'s file with the checksum of `bytes` as its digest.
fn listing(bytes: &[u8]) -> Arc<PublishedDigest> {
    let digest = checksum(bytes);
    list(move |p, _| Ok(Some(checksum(&std::fs::read(p)?) == digest)))
}

/// A file whose digest is the one published for its name is read without the point checks and
/// recorded; a listed file with another digest, an unlisted one, or a digest that cannot be
/// computed means a full validation, with the same outcome as without the list.
#[test]
fn a_file_with_its_published_digest_skips_the_point_checks() {
    let dir = tempfile::tempdir().unwrap();
    let (path, params) = params_file(dir.path());
    let records = dir.path().join("validated");
    let listed = listing(&std::fs::read(&path).unwrap());
    let unlisted = list(|_, _| Ok(None));
    let failing = list(|_, _| Err(std::io::Error::other("no digest")));
    let panicking = list(|_, _| panic!("a digest that panics"));

    for f in [&unlisted, &failing, &panicking] {
        let (p, how) = read_params_trusting(&path, Validation::Full, None, None, Some(f)).unwrap();
        assert_eq!((p == params, how), (true, Checked::Full));
    }
    // A small file decodes before the digest's thread answers, so its checks run until then;
    // the digest, once it has matched, counts the load as published.
    let (p, how) = read_params_trusting(&path, Validation::Full, Some(&records), None, Some(&listed)).unwrap();
    assert!(p == params && matches!(how, Checked::Published | Checked::Full), "{how:?}");
    assert!(record_of(&records, &path).exists(), "a file with its published digest is recorded");
    assert_eq!(read_params_trusting(&path, Validation::Full, Some(&records), None, Some(&listed)).unwrap().1, Checked::Record);

    // A point outside the subgroup: the digest no longer matches, so the full validation runs and refuses it.
    let bytes = with_bad_point(std::fs::read(&path).unwrap());
    std::fs::write(&path, &bytes).unwrap();
    let e = read_params_trusting(&path, Validation::Full, Some(&records), None, Some(&listed)).unwrap_err();
    assert!(matches!(e, WorkError::Params { source: ParamsError::InvalidPoint { section: Section::H, index: 0, .. }, .. }), "{e}");
    // Were the list to name that file's digest, it would be trusted: the list is the authority.
    // The failed check waits for the digest, however late it answers.
    let relisted = listing(&bytes);
    let late = {
        let l = relisted.clone();
        list(move |p, stop| {
            std::thread::sleep(std::time::Duration::from_millis(300));
            l(p, stop)
        })
    };
    for f in [&relisted, &late] {
        assert_eq!(read_params_trusting(&path, Validation::Full, None, None, Some(f)).unwrap().1, Checked::Published);
    }
    // Trusted files are not hashed at all.
    assert_eq!(read_params_trusting(&path, Validation::Trusted, None, None, Some(&failing)).unwrap().1, Checked::Trusted);
}

/// The digest runs beside the checks: once it has matched, the blocks after skip their checks
/// (the load counts as published); a validation that ends first tells it to stop.
#[test]
fn the_published_digest_runs_beside_the_checks() {
    let dir = tempfile::tempdir().unwrap();
    let (path, params) = params_file(dir.path());
    let digest = checksum(&std::fs::read(&path).unwrap());
    let cpu = CpuBackend::new();

    /// The CPU's checks, counted; the first call lets the digest answer and waits until it has.
    struct Counted<'a> {
        cpu: &'a CpuBackend,
        calls: AtomicUsize,
        go: Mutex<Option<(mpsc::Sender<()>, mpsc::Receiver<()>)>>,
    }
    impl Counted<'_> {
        fn count(&self) {
            if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
                if let Some((go, answered)) = self.go.lock().unwrap().take() {
                    go.send(()).unwrap();
                    answered.recv().unwrap();
                    // The answer is stored as the digest's function returns.
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
            }
        }
    }
    impl PointChecks for Counted<'_> {
        fn check_g1(&self, p: &[blstrs::G1Affine]) -> Result<Option<PointFailure>, BackendError> {
            self.count();
            self.cpu.check_g1(p)
        }
        fn check_g2(&self, p: &[blstrs::G2Affine]) -> Result<Option<PointFailure>, BackendError> {
            self.count();
            self.cpu.check_g2(p)
        }
    }

    // The digest answers after the first block's check: the other four sections skip theirs.
    let (go, wait) = mpsc::channel();
    let (answer, answered) = mpsc::channel();
    let (wait, answer) = (Mutex::new(wait), Mutex::new(answer));
    let answers = list(move |p, _| {
        wait.lock().unwrap().recv().unwrap();
        let matched = checksum(&std::fs::read(p)?) == digest;
        answer.lock().unwrap().send(()).unwrap();
        Ok(Some(matched))
    });
    let checks = Counted { cpu: &cpu, calls: AtomicUsize::new(0), go: Mutex::new(Some((go, answered))) };
    let (p, how) = read_params_trusting(&path, Validation::Full, None, Some(&checks), Some(&answers)).unwrap();
    assert_eq!((p == params, how), (true, Checked::Published));
    assert_eq!(checks.calls.load(Ordering::SeqCst), 1, "sections after the digest matched were checked");

    // A digest that has not answered when the checks end is told to stop, and the load is a full one.
    let (saw, seen) = mpsc::channel();
    let saw = Mutex::new(saw);
    let slow = list(move |_, stop| {
        let t = std::time::Instant::now();
        while !stop.load(Ordering::Relaxed) && t.elapsed().as_secs() < 20 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        saw.lock().unwrap().send(stop.load(Ordering::Relaxed)).unwrap();
        Err(std::io::Error::new(std::io::ErrorKind::Interrupted, "stopped"))
    });
    let checks = Counted { cpu: &cpu, calls: AtomicUsize::new(0), go: Mutex::new(None) };
    let (p, how) = read_params_trusting(&path, Validation::Full, None, Some(&checks), Some(&slow)).unwrap();
    assert_eq!((p == params, how), (true, Checked::Full));
    assert_eq!(checks.calls.load(Ordering::SeqCst), 5, "one check per section");
    assert!(seen.recv_timeout(std::time::Duration::from_secs(30)).unwrap(), "the digest was told to stop");
}
