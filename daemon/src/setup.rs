//! Parameter generation for the built-in circuits, cached in the data directory.

use std::path::{Path, PathBuf};
use std::time::Instant;

use cuzk_circuits::CircuitKind;
use rand::SeedableRng;

use crate::CliError;

/// Where the parameters of `kind` at `2^log_size` live.
pub fn params_path(dir: &Path, kind: CircuitKind, log_size: u32) -> PathBuf {
    dir.join("params").join(format!("{}-2^{log_size}.params", kind.name()))
}

/// Returns the cached parameter file, generating it first if needed (or if `force`).
pub fn ensure_params(dir: &Path, kind: CircuitKind, log_size: u32, force: bool) -> Result<PathBuf, CliError> {
    let path = params_path(dir, kind, log_size);
    if path.exists() && !force {
        return Ok(path);
    }
    let circuit = kind.instance(log_size, 0)?;
    eprintln!("generating parameters for {} at 2^{log_size} (once; cached in {})", kind.name(), path.display());
    let t = Instant::now();
    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
    let params = cuzk_worker::compiled::builtin_parameters(circuit, &mut rng).map_err(|e| CliError::Setup(e.to_string()))?;
    let parent = path.parent().expect("params path has a parent");
    std::fs::create_dir_all(parent).map_err(|source| CliError::Io { path: parent.into(), source })?;
    // Write to a temporary name and rename, so an interrupted setup never leaves a partial file.
    let tmp = path.with_extension("params.partial");
    let file = std::fs::File::create(&tmp).map_err(|source| CliError::Io { path: tmp.clone(), source })?;
    let mut w = std::io::BufWriter::new(file);
    params.write_to(&mut w).and_then(|_| std::io::Write::flush(&mut w)).map_err(|source| CliError::Io { path: tmp.clone(), source })?;
    drop(w);
    std::fs::rename(&tmp, &path).map_err(|source| CliError::Io { path: path.clone(), source })?;
    eprintln!("parameters written in {:.1} s", t.elapsed().as_secs_f64());
    Ok(path)
}
