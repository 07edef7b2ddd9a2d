//! `cuzk-params-load`: reading and fully validating a parameter file, with the curve and
//! subgroup checks on the first CUDA device (`Backend::first_invalid_g1/g2`, the path a load
//! validated in full takes on a GPU backend) and, for comparison, on the host (blst while
//! decoding, the path of backends without the checks). The target: a 32 GiB PoRep file (47 GB,
//! about half a billion points) in at most two minutes on one H200 with 16 host cores.
//!
//! It sits with the benches of cuzk-tests, above the worker and the backends
//! (`tests/tests/it/layers.rs`).
//!
//! ```sh
//! cargo bench -p cuzk-tests --bench cuzk-params-load -- --log 27 --dir /data --drop-caches --load
//! ```
//!
//! Arguments (cargo's own `--bench` is ignored; defaults shown):
//! - `--file PATH`: an existing parameter file (e.g. Filecoin's 32 GiB PoRep `.params`);
//!   otherwise `--log 22` writes one of valid points with the section proportions of a 32 GiB
//!   PoRep (`h` of 2^LOG points; LOG 27 is the real size, 47 GB) under `--dir` (default the
//!   system's temporary directory), removed after unless `--keep`.
//! - `--checks cuda`: where the curve and subgroup checks run: `cuda`, `host`, or `both` (the
//!   host's are about a hundred times slower: keep LOG small), or `none`: decoded as trusted,
//!   the read and the decoding alone.
//! - `--load`: also the worker's whole device load as the daemon runs it (the checksum read for
//!   the validation record, decoding, the checks on the device, the upload), timed.
//! - `--drop-caches`: `sync` and drop the page cache (root only) before each timed read, so the
//!   file comes from the disk and not from memory.
//!
//! Prints each section's points, seconds and GB/s, then the whole file's; the worker's log
//! (`RUST_LOG`, default `info`) adds where each section's time went (read, decode, checks) and
//! each query's upload.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use cuzk_backend_cuda::CudaBackend;
use cuzk_core::backend::Backend;
use cuzk_core::engine::{CircuitId, DeviceId, Location};
use cuzk_core::params::{ParamsLayout, Section, Validation, VerifyingKey, G1_UNCOMPRESSED, G2_UNCOMPRESSED};
use cuzk_core::test_points;
use cuzk_worker::params::{point_checks, read_layout, ParamsFile, PointChecks};
use cuzk_worker::{BackendWorker, LoadTask, ParamSource, Worker};
use group::prime::PrimeCurve;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const USAGE: &str = "usage: cuzk-params-load [--file PATH | --log LOG [--dir DIR] [--keep]] [--checks cuda|host|both|none] [--load] [--drop-caches]
  --file PATH      an existing parameter file
  --log LOG        write one of valid points, h = 2^LOG points, a 32 GiB PoRep's proportions (27: 47 GB; default 22)
  --dir DIR        where to write it (default: the temporary directory)
  --keep           keep the written file
  --checks WHERE   curve and subgroup checks on the CUDA device, on the host, both, or none (trusted:
                   the read and the decoding alone; default cuda)
  --load           also time the worker's whole device load (checksum, decode, checks, upload)
  --drop-caches    drop the page cache before each timed read (root only)";

struct Args {
    file: Option<PathBuf>,
    log: u32,
    dir: PathBuf,
    keep: bool,
    cuda: bool,
    host: bool,
    /// `--checks none`: decoded as trusted.
    trusted: bool,
    load: bool,
    drop_caches: bool,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut a = Args { file: None, log: 22, dir: std::env::temp_dir(), keep: false, cuda: true, host: false, trusted: false, load: false, drop_caches: false };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().cloned().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--file" => a.file = Some(value("--file")?.into()),
            "--log" => {
                let v = value("--log")?;
                a.log = v.parse().ok().filter(|l| (4..=28).contains(l)).ok_or_else(|| format!("--log takes 4 … 28, not {v:?}"))?;
            }
            "--dir" => a.dir = value("--dir")?.into(),
            "--keep" => a.keep = true,
            "--checks" => {
                (a.cuda, a.host, a.trusted) = match value("--checks")?.as_str() {
                    "cuda" => (true, false, false),
                    "host" => (false, true, false),
                    "both" => (true, true, false),
                    "none" => (false, false, true),
                    o => return Err(format!("--checks takes cuda, host, both or none, not {o:?}")),
                }
            }
            "--load" => a.load = true,
            "--drop-caches" => a.drop_caches = true,
            o => return Err(format!("unknown argument {o:?}")),
        }
    }
    Ok(a)
}

/// `n` valid points `p + i·q` ([`test_points::valid`]), encoded.
fn encoded<G: PrimeCurve>(n: usize, seed: u64, encode: impl Fn(&G::Affine) -> Vec<u8>) -> Vec<u8> {
    test_points::valid::<G>(n, &mut ChaCha8Rng::seed_from_u64(seed)).iter().flat_map(encode).collect()
}

/// Writes a parameter file of valid points: `h` of 2^`log` points and the other sections in
/// the proportions of a 32 GiB PoRep, each section `2^16` distinct points repeated.
fn write_file(path: &Path, log: u32) -> std::io::Result<u64> {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let g1 = |rng: &mut ChaCha8Rng| G1Projective::random(rng).to_affine();
    let g2 = |rng: &mut ChaCha8Rng| G2Projective::random(rng).to_affine();
    let vk = VerifyingKey {
        alpha_g1: g1(&mut rng),
        beta_g1: g1(&mut rng),
        beta_g2: g2(&mut rng),
        gamma_g2: g2(&mut rng),
        delta_g1: g1(&mut rng),
        delta_g2: g2(&mut rng),
        ic: (0..3).map(|_| g1(&mut rng)).collect(),
    };
    let h = 1usize << log;
    let b = h * 27 / 100;
    let lens = [h, h * 97 / 100, h * 90 / 100, b, b];
    let distinct = 1 << 16;
    let g1_block = encoded::<G1Projective>(distinct, 2, |p: &G1Affine| p.to_uncompressed().to_vec());
    let g2_block = encoded::<G2Projective>(distinct, 3, |p: &G2Affine| p.to_uncompressed().to_vec());
    let mut w = std::io::BufWriter::with_capacity(16 << 20, std::fs::File::create(path)?);
    w.write_all(&vk.to_bytes())?;
    for (i, len) in lens.into_iter().enumerate() {
        let (block, size) = if i == 4 { (&g2_block, G2_UNCOMPRESSED) } else { (&g1_block, G1_UNCOMPRESSED) };
        w.write_all(&(len as u32).to_be_bytes())?;
        let mut left = len;
        while left > 0 {
            let n = left.min(distinct);
            w.write_all(&block[..n * size])?;
            left -= n;
        }
    }
    w.flush()?;
    w.get_ref().sync_all()?;
    Ok(std::fs::metadata(path)?.len())
}

fn drop_caches() {
    let ok = std::process::Command::new("sync").status().is_ok_and(|s| s.success()) && std::fs::write("/proc/sys/vm/drop_caches", "3\n").is_ok();
    if !ok {
        eprintln!("# could not drop the page cache (root only): the read may come from memory");
    }
}

/// Decodes every section of `path` under `validation`, a full one's curve and subgroup checks
/// by `checks` (on the host while decoding when `None`), dropping each section once decoded;
/// prints per-section times.
fn validate(path: &Path, layout: &ParamsLayout, validation: Validation, checks: Option<&dyn PointChecks>, label: &str) -> Result<f64, String> {
    let file = ParamsFile::open(path, validation, None).map_err(|e| e.to_string())?;
    let start = Instant::now();
    let sections = [(Section::H, &layout.h), (Section::L, &layout.l), (Section::A, &layout.a), (Section::BG1, &layout.b_g1), (Section::BG2, &layout.b_g2)];
    for (section, range) in sections {
        let t = Instant::now();
        let n = if section == Section::BG2 {
            file.b_g2_checked(checks).map_err(|e| e.to_string())?.len()
        } else {
            file.g1_checked(section, checks).map_err(|e| e.to_string())?.len()
        };
        let s = t.elapsed().as_secs_f64();
        println!("{label} {section:?}: {n} points in {s:.2} s ({:.2} GB/s, {:.1} M points/s)", range.len() as f64 / s / 1e9, n as f64 / s / 1e6);
    }
    Ok(start.elapsed().as_secs_f64())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return;
    }
    let a = match parse(&args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("cuzk-params-load: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    // The worker's own log of each section (read, decode and check seconds) and each upload.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).init();
    let cuda = if a.cuda || a.load {
        match CudaBackend::first() {
            Ok(b) => Some(b),
            Err(e) if !a.host && !a.trusted => {
                eprintln!("SKIPPED: no CUDA device: {e}");
                return;
            }
            Err(e) => {
                eprintln!("# no CUDA device ({e}): host checks only");
                None
            }
        }
    } else {
        None
    };
    if let Some(b) = &cuda {
        println!("# device: {}, host threads: {}", b.name(), rayon::current_num_threads());
    }
    let (path, written) = match &a.file {
        Some(p) => (p.clone(), false),
        None => {
            let p = a.dir.join(format!("cuzk-params-load-{}-2^{}.params", std::process::id(), a.log));
            let t = Instant::now();
            let bytes = write_file(&p, a.log).unwrap_or_else(|e| panic!("writing {}: {e}", p.display()));
            println!("# wrote {} ({:.2} GB) in {:.1} s", p.display(), bytes as f64 / 1e9, t.elapsed().as_secs_f64());
            (p, true)
        }
    };
    let layout = read_layout(&path).unwrap_or_else(|e| panic!("{e}"));
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0) as f64;
    let points = (layout.h.len() + layout.l.len() + layout.a.len() + layout.b_g1.len()) / G1_UNCOMPRESSED + layout.b_g2.len() / G2_UNCOMPRESSED;
    println!("# {}: {:.2} GB, {points} points", path.display(), bytes / 1e9);
    let run = |label: &str, validation: Validation, checks: Option<&dyn PointChecks>| {
        if a.drop_caches {
            drop_caches();
        }
        let how = if validation == Validation::Full { "validated in full" } else { "decoded (trusted)" };
        match validate(&path, &layout, validation, checks, label) {
            Ok(s) => println!("{label}: read and {how} in {s:.1} s ({:.2} GB/s, {:.1} M points/s)", bytes / s / 1e9, points as f64 / s / 1e6),
            Err(e) => println!("{label}: refused: {e}"),
        }
    };
    if let Some(b) = cuda.as_ref().filter(|_| a.cuda) {
        run("device checks", Validation::Full, point_checks(b));
    }
    if a.host {
        run("host checks", Validation::Full, None);
    }
    if a.trusted {
        run("no checks", Validation::Trusted, None);
    }
    if let (true, Some(b)) = (a.load, &cuda) {
        if a.drop_caches {
            drop_caches();
        }
        let records = tempfile_dir(&a.dir);
        let w = BackendWorker::new(vec![Arc::new(b.clone())]).with_validation_records(records.clone());
        let t = Instant::now();
        let task = LoadTask {
            circuit: CircuitId(0),
            at: Location::Device(DeviceId(0)),
            source: ParamSource::File(path.clone()),
            validation: Validation::Full,
            from_host: false,
            streamed: false,
        };
        match w.load_params(task) {
            Ok(()) => println!("device load (checksum, decode, device checks, upload): {:.1} s", t.elapsed().as_secs_f64()),
            Err(e) => println!("device load: refused: {e}"),
        }
        let _ = std::fs::remove_dir_all(records);
    }
    if written && !a.keep {
        let _ = std::fs::remove_file(&path);
    }
}

/// A fresh directory for the load's validation record.
fn tempfile_dir(dir: &Path) -> PathBuf {
    let d = dir.join(format!("cuzk-params-load-{}-records", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}
