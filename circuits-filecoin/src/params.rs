//! Filecoin parameter files: the cache directory, file names, and random test parameters.
//!
//! Files are named as `filecoin-proofs` names them (`v28-<cache id>.params`, `.vk`, `.meta`),
//! so its own verifiers read the verifying keys cuzk generated. The `.params` layout is
//! bellperson's, which `cuzk-core` reads.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use rand_core::RngCore;

use crate::circuit::Prepared;
use crate::error::FilError;
use crate::ids::FilShape;

/// `filecoin-proofs`' parameter file version prefix.
pub const VERSION: usize = storage_proofs_core::parameter_cache::VERSION;

/// The parameter cache directory: `$FIL_PROOFS_PARAMETER_CACHE`, else
/// `/var/tmp/filecoin-proof-parameters` (filecoin-proofs' default).
pub fn cache_dir() -> PathBuf {
    std::env::var_os("FIL_PROOFS_PARAMETER_CACHE").map_or_else(|| PathBuf::from("/var/tmp/filecoin-proof-parameters"), PathBuf::from)
}

/// The three files of a circuit in `dir`.
#[derive(Debug, Clone)]
pub struct ParamFiles {
    /// Groth16 parameters (bellperson layout).
    pub params: PathBuf,
    /// Verifying key.
    pub vk: PathBuf,
    /// `{"sector_size": N}`.
    pub meta: PathBuf,
}

/// `filecoin-proofs`' cache identifier of a circuit (computed once per process).
pub fn cache_id(circuit: FilShape) -> Result<String, FilError> {
    static IDS: OnceLock<Mutex<HashMap<FilShape, String>>> = OnceLock::new();
    let ids = IDS.get_or_init(Default::default);
    if let Some(id) = ids.lock().unwrap_or_else(|e| e.into_inner()).get(&circuit) {
        return Ok(id.clone());
    }
    let id = Prepared::blank_of(circuit)?.cache_id;
    ids.lock().unwrap_or_else(|e| e.into_inner()).insert(circuit, id.clone());
    Ok(id)
}

/// The file names of `circuit` in `dir`.
pub fn files(dir: &Path, circuit: FilShape) -> Result<ParamFiles, FilError> {
    let id = cache_id(circuit)?;
    Ok(ParamFiles {
        params: dir.join(format!("v{VERSION}-{id}.params")),
        vk: dir.join(format!("v{VERSION}-{id}.vk")),
        meta: dir.join(format!("v{VERSION}-{id}.meta")),
    })
}

/// The digest Filecoin publishes for a file of its parameter cache (`parameters.json`, which
/// filecoin-proofs ships and `paramfetch` checks downloads against), by file name; `None` for a
/// name it does not list (generated or timing-only parameters, another version).
pub fn published_digest(file_name: &str) -> Option<&'static str> {
    storage_proofs_core::parameter_cache::PARAMETERS.get(file_name).map(|d| d.digest.as_str())
}

/// A file's digest as Filecoin computes it for `parameters.json`: blake2b-512, the first 32 hex
/// digits. Reads the whole file (at disk speed: about 1 GB/s on one core); gives up (an
/// `Interrupted` error) once `stop` is set.
pub fn file_digest(path: &Path, stop: &AtomicBool) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut state = blake2b_simd::State::new();
    let mut buf = vec![0u8; 8 << 20];
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(std::io::Error::new(std::io::ErrorKind::Interrupted, "the digest was no longer needed"));
        }
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                state.update(&buf[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(state.finalize().to_hex()[..32].to_string())
}

/// Whether `path` is a Filecoin parameter file with the digest Filecoin publishes for its name:
/// `None` when the name is not listed, else whether the digest matches (`stop` as in
/// [`file_digest`]).
pub fn matches_published_digest(path: &Path, stop: &AtomicBool) -> std::io::Result<Option<bool>> {
    let Some(want) = path.file_name().and_then(|n| n.to_str()).and_then(published_digest) else {
        return Ok(None);
    };
    Ok(Some(file_digest(path, stop)? == want))
}

/// Writes timing-only parameters of `circuit` into `dir` under the names Filecoin's cache uses
/// (`.params`, `.vk`, `.meta`), unless both files are there and `force` is off.
/// `queries_of` sizes them from the blank circuit (by recording its constraint matrices).
///
/// The points are pseudo-random (see `cuzk_setup::timing`): proofs made with them take the
/// time real ones take and verify against nothing. For benchmarks on hosts without the real
/// files; never write them into a cache real proofs are made from.
pub fn write_timing_only(
    dir: &Path,
    circuit: FilShape,
    force: bool,
    queries_of: impl FnOnce(crate::circuit::PartitionCircuit) -> Result<cuzk_setup::timing::TimingQueries, String>,
) -> Result<ParamFiles, FilError> {
    write_files(dir, circuit, force, |blank, path| queries_of(blank).map_err(|reason| FilError::Params { path: path.to_path_buf(), reason }))
}

/// What [`write_files`] writes: the parameter file's bytes and the verifying key's.
trait ParamsOut {
    fn write_params(&self, w: &mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>;
    fn vk_bytes(&self) -> Vec<u8>;
}

impl ParamsOut for cuzk_core::params::Parameters {
    fn write_params(&self, w: &mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()> {
        self.write_to(w)
    }
    fn vk_bytes(&self) -> Vec<u8> {
        self.vk.to_bytes()
    }
}

impl ParamsOut for cuzk_setup::timing::TimingQueries {
    fn write_params(&self, w: &mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()> {
        self.write_to(w)
    }
    fn vk_bytes(&self) -> Vec<u8> {
        self.vk().to_bytes()
    }
}

/// Writes `circuit`'s `.params`, `.vk` and `.meta` into `dir` from what `make` gives for its
/// blank circuit (and the `.params` path, for errors), unless both `.params` and `.vk` are
/// there and `force` is off; under the directory's lock, each file written whole or not at all.
fn write_files<P: ParamsOut>(
    dir: &Path,
    circuit: FilShape,
    force: bool,
    make: impl FnOnce(crate::circuit::PartitionCircuit, &Path) -> Result<P, FilError>,
) -> Result<ParamFiles, FilError> {
    let f = files(dir, circuit)?;
    if f.params.exists() && f.vk.exists() && !force {
        return Ok(f);
    }
    std::fs::create_dir_all(dir).map_err(|e| FilError::Params { path: dir.to_path_buf(), reason: e.to_string() })?;
    let lock = lock_dir(dir)?;
    if f.params.exists() && f.vk.exists() && !force {
        return Ok(f);
    }
    let out = make(Prepared::blank_of(circuit)?.blank(), &f.params)?;
    write_atomic(&f.params, |w| out.write_params(w))?;
    write_atomic(&f.vk, |w| std::io::Write::write_all(w, &out.vk_bytes()))?;
    write_atomic(&f.meta, |w| std::io::Write::write_all(w, format!("{{\"sector_size\":{}}}", circuit.sector_size).as_bytes()))?;
    drop(lock);
    Ok(f)
}

/// One generator at a time per directory (threads and processes alike): two at once would
/// leave the parameters of one beside the verifying key of the other.
fn lock_dir(dir: &Path) -> Result<std::fs::File, FilError> {
    let lock_path = dir.join(".generate.lock");
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .and_then(|l| l.lock().map(|()| l))
        .map_err(|e| FilError::Params { path: lock_path, reason: e.to_string() })
}

fn write_atomic(path: &Path, write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>) -> Result<(), FilError> {
    let err = |e: std::io::Error| FilError::Params { path: path.to_path_buf(), reason: e.to_string() };
    let tmp = path.with_extension("partial");
    let f = std::fs::File::create(&tmp).map_err(err)?;
    let mut w = std::io::BufWriter::new(f);
    write(&mut w).and_then(|_| std::io::Write::flush(&mut w)).map_err(err)?;
    drop(w);
    std::fs::rename(&tmp, path).map_err(err)
}

/// Generates random (test) parameters for `circuit` with `cuzk-setup` and writes the
/// `.params`, `.vk` and `.meta` files into `dir` (skipped when the `.params` and `.vk` files exist and
/// `force` is off). Returns the files. The random source is dynamic so that the generator is
/// compiled once, here, not in every crate that calls it.
pub fn generate(dir: &Path, circuit: FilShape, force: bool, mut rng: &mut dyn RngCore) -> Result<ParamFiles, FilError> {
    write_files(dir, circuit, force, |blank, path| {
        cuzk_setup::generate_parameters(blank, &mut rng).map_err(|e| FilError::Params { path: path.to_path_buf(), reason: format!("generation failed: {e}") })
    })
}
