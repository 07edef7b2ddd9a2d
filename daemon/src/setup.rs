//! Parameter generation for the GENERIC families (`crate::families`), cached in the data directory. Shared by the
//! server (`service.rs`) and the command line: its errors are its own ([`SetupError`]), not the
//! command line's `CliError`, which wraps the client's errors.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::families::{GenericError, GenericShape};
use rand::SeedableRng;

/// Why a family's parameters could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// Bad circuit name or size.
    #[error(transparent)]
    Circuit(#[from] GenericError),
    /// File system trouble.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Parameter generation failed.
    #[error("parameter generation failed: {0}")]
    Generate(String),
}

/// Where the validation records of parameter files live in a data directory (the daemon's and
/// `cuzk prove`'s: a file validated in full by either is trusted by both while unchanged).
pub fn validation_records(data_dir: &Path) -> PathBuf {
    data_dir.join("validated")
}

/// Where the parameters of `shape` live.
pub fn params_path(dir: &Path, shape: GenericShape) -> PathBuf {
    dir.join("params").join(format!("{}.params", shape.id()))
}

/// Returns the cached parameter file, generating it first if needed (or if `force`).
///
/// One generator per file at a time, threads and processes alike (an advisory lock on
/// `<file>.lock`): the others wait and then find the file made. The generator writes a
/// temporary file of its own, syncs it to disk and renames it into place, so no reader ever
/// sees a partial file or one mixed from two generations.
pub fn ensure_params(dir: &Path, shape: GenericShape, force: bool) -> Result<PathBuf, SetupError> {
    let path = params_path(dir, shape);
    if path.exists() && !force {
        return Ok(path);
    }
    let parent = path.parent().expect("params path has a parent");
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SetupError::Io { path, source }
    };
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    let lock_path = path.with_extension("params.lock");
    let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path).map_err(io(&lock_path))?;
    lock.lock().map_err(io(&lock_path))?;
    if path.exists() && !force {
        return Ok(path);
    }
    eprintln!("generating parameters for {} (once; cached in {})", shape.id(), path.display());
    let t = Instant::now();
    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
    let params = shape.parameters(&mut rng).map_err(|e| SetupError::Generate(e.to_string()))?;
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let tmp = path.with_extension(format!("params.partial.{}.{}", std::process::id(), WRITES.fetch_add(1, Ordering::Relaxed)));
    let written = (|| {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        params.write_to(&mut w)?;
        w.into_inner().map_err(std::io::IntoInnerError::into_error)?.sync_all()?;
        std::fs::rename(&tmp, &path)
    })();
    if let Err(source) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(SetupError::Io { path: tmp, source });
    }
    drop(lock);
    eprintln!("parameters written in {:.1} s", t.elapsed().as_secs_f64());
    Ok(path)
}
