//! The circuits the daemon can prove: a family of GENERIC jobs at a domain size
//! ([`crate::families`]) and Filecoin circuits at a sector size, each with where its parameters
//! come from, registered with the engine on first use.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use cuzk_circuits_filecoin::FilShape;
use cuzk_core::circuit::ShapeKey;
use cuzk_core::engine::{CircuitId, CircuitProfile, Footprint};
use cuzk_worker::ParamSource;

pub use crate::families::GenericShape;
use crate::setup::params_path;

/// Any circuit the daemon proves: the unit of parameters, of recorded matrices and of the
/// engine's circuit ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CircuitShape {
    /// A family of GENERIC jobs at a domain size.
    Generic(GenericShape),
    /// A Filecoin circuit at a sector size.
    Filecoin(FilShape),
}

impl CircuitShape {
    /// The id in the API and on the status page (`squaring-chain-2^10`, `wpost-2k`).
    pub fn id(&self) -> String {
        match self {
            CircuitShape::Generic(s) => s.id(),
            CircuitShape::Filecoin(f) => f.id(),
        }
    }

    /// Parses [`CircuitShape::id`].
    pub fn parse(id: &str) -> Result<CircuitShape, crate::families::GenericError> {
        match FilShape::parse(id) {
            Some(f) => Ok(CircuitShape::Filecoin(f)),
            None => GenericShape::parse(id).map(CircuitShape::Generic),
        }
    }

    /// The key of its parameters and recorded matrices.
    pub fn key(&self) -> ShapeKey {
        ShapeKey::new(self.id())
    }
}

impl From<GenericShape> for CircuitShape {
    fn from(s: GenericShape) -> CircuitShape {
        CircuitShape::Generic(s)
    }
}

/// The memory profile of a circuit at a `2^log_size` domain.
///
/// With `witness_only`, synthesis hands on only the assignments and the upload evaluates
/// `a, b, c` from the constraint matrices, so the profile has two footprints: the witness
/// alone on the host (`witness_footprint`), for partitions the engine sends to a device whose
/// copy of the circuit includes the matrices (`Action::MatricesReserved`: there `a, b, c` are
/// evaluated on the device), and the host path's `a, b, c` besides (`footprint`), for
/// partitions synthesized while no device that may take them holds such a copy (the first job
/// of a circuit, a small GPU): their upload evaluates `a, b, c` on the host. The engine picks
/// one when it starts a partition's synthesis; the worker's upload takes the device path
/// exactly where the engine reserved the matrices, which is where it sends witness-footprint
/// partitions. At 2^27 that is ~4.3 GB of witness a partition instead of 17.2 GB.
///
/// Parameters that, with one partition's device footprint, do not fit `device_budget` (what
/// non-CRITICAL work may use on the largest device, [`stream_budget`]) are streamed: a device
/// copy keeps the bases in page-locked host memory (`params_device_host_bytes`, the file's
/// size) and takes only the streamed MSMs' staging on the device ([`STREAM_DEVICE_BYTES`]).
///
/// A device load holds `largest_query_bytes` of host memory in flight (one decoded query:
/// [`CircuitProfile::load_host_bytes`]).
pub fn profile(log_size: u32, params_file_bytes: u64, largest_query_bytes: u64, witness_only: bool, device_budget: u64) -> CircuitProfile {
    // Besides a, b, c: input and aux assignments, h and MSM scratch, about two vectors.
    let n = 1u64 << log_size;
    let mut footprint = Footprint::for_domain(log_size, 2 * 32 * n);
    let mut witness_footprint = None;
    if witness_only {
        // The assignments: about one scalar per domain element.
        footprint.host_rest = 32 * n;
        witness_footprint = Some(Footprint { host_abc: 0, ..footprint });
    }
    let resident = params_file_bytes.saturating_add(footprint.device());
    if resident <= device_budget {
        return CircuitProfile {
            params_host_bytes: params_file_bytes,
            params_device_bytes: params_file_bytes,
            params_device_host_bytes: 0,
            footprint,
            witness_footprint,
            load_host_bytes: largest_query_bytes,
        };
    }
    tracing::info!(
        log_size,
        params_bytes = params_file_bytes,
        partition_device_bytes = footprint.device(),
        device_budget,
        device_bytes = STREAM_DEVICE_BYTES.min(params_file_bytes),
        "parameters will be streamed: with one partition they exceed the device budget, so the bases stay in page-locked host memory and pass through the device during MSMs"
    );
    CircuitProfile {
        params_host_bytes: params_file_bytes,
        // Staging never holds more than the bases themselves.
        params_device_bytes: STREAM_DEVICE_BYTES.min(params_file_bytes),
        params_device_host_bytes: params_file_bytes,
        footprint,
        witness_footprint,
        load_host_bytes: largest_query_bytes,
    }
}

/// Device bytes of a streamed device copy: the CUDA backend's two staging buffers of 384 MiB
/// (a chunk of 2^22 G1 or 2^21 G2 points each). The prepared scalars and the per-chunk sort
/// and bucket buffers of a streamed MSM are no larger than a resident MSM's, which the
/// partition's footprint counts.
pub const STREAM_DEVICE_BYTES: u64 = 2 * (384 << 20);

/// The device budget [`profile`] decides streaming against: what non-CRITICAL work may use on
/// the largest non-fallback device of `engine` (its `memory_bytes` less the CRITICAL reserve).
pub fn stream_budget(engine: &cuzk_core::engine::EngineConfig) -> u64 {
    let usable = |d: &cuzk_core::engine::DeviceConfig| d.memory_bytes.saturating_sub(engine.critical_device_reserve);
    engine.devices.iter().filter(|d| !d.fallback).map(usable).max().unwrap_or(0)
}

/// The parameter file of `key`: `data_dir/params/…` for GENERIC families, the Filecoin
/// parameter cache `fil_dir` for Filecoin circuits.
pub fn shape_params_path(data_dir: &Path, fil_dir: &Path, key: CircuitShape) -> Option<PathBuf> {
    match key {
        CircuitShape::Generic(s) => Some(params_path(data_dir, s)),
        CircuitShape::Filecoin(f) => cuzk_circuits_filecoin::params::files(fil_dir, f).ok().map(|f| f.params),
    }
}

/// The layout of a parameter file (its query lengths), without decoding any query point.
pub fn params_layout(path: &Path) -> Option<cuzk_core::params::ParamsLayout> {
    cuzk_worker::params::read_layout(path).ok()
}

/// log2 of the domain parameters with this layout were made for (from the `h` query length).
pub fn params_log_size(layout: &cuzk_core::params::ParamsLayout) -> Option<u32> {
    let n = layout.h.len() / cuzk_core::params::G1_UNCOMPRESSED + 1;
    n.is_power_of_two().then(|| n.trailing_zeros())
}

/// A registered circuit.
#[derive(Debug, Clone)]
pub struct Registered {
    /// Its key.
    pub spec: CircuitShape,
    /// Where its parameters come from.
    pub source: ParamSource,
    /// The parameter file's size (timing-only parameters: the size they would have as one).
    pub file_bytes: u64,
}

/// Circuit specs and the engine ids they were registered under.
#[derive(Debug, Default)]
pub struct Registry {
    by_spec: HashMap<CircuitShape, CircuitId>,
    entries: Vec<Registered>,
}

impl Registry {
    /// The id of a registered spec.
    pub fn get(&self, spec: &CircuitShape) -> Option<CircuitId> {
        self.by_spec.get(spec).copied()
    }

    /// A registered circuit.
    pub fn entry(&self, id: CircuitId) -> Option<&Registered> {
        self.entries.get(id.0 as usize)
    }

    /// All registered circuits with their ids.
    pub fn iter(&self) -> impl Iterator<Item = (CircuitId, &Registered)> {
        self.entries.iter().enumerate().map(|(i, r)| (CircuitId(i as u32), r))
    }

    /// The id the next added circuit gets.
    pub fn next_id(&self) -> CircuitId {
        CircuitId(self.entries.len() as u32)
    }

    /// Adds a circuit under [`Registry::next_id`].
    pub fn add(&mut self, reg: Registered) -> CircuitId {
        let id = self.next_id();
        self.by_spec.insert(reg.spec, id);
        self.entries.push(reg);
        id
    }
}

/// The parameter file of `spec` in `data_dir` (GENERIC families) or `fil_dir` (Filecoin) and
/// its size; `None` when it is missing.
fn locate(data_dir: &Path, fil_dir: &Path, spec: CircuitShape) -> Option<(PathBuf, u64)> {
    let path = shape_params_path(data_dir, fil_dir, spec)?;
    let file_bytes = std::fs::metadata(&path).ok().filter(|m| m.is_file())?.len();
    Some((path, file_bytes))
}

/// Where a job's circuit takes its parameters from (chosen with the job's witness check,
/// `crate::server::service`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamChoice {
    /// Its parameter file.
    File,
    /// Timing-only parameters of these query lengths ([`ParamSource::TimingOnly`]).
    TimingOnly(cuzk_setup::timing::QueryLengths),
}

/// Why a circuit could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// Its parameter file is missing (the message says how to make it).
    #[error("{0}")]
    MissingParams(String),
    /// Its parameter file is not a parameter file.
    #[error("{}: not a valid parameter file", .0.display())]
    BadParams(PathBuf),
}

/// Where a circuit's parameters come from, and its memory profile: its file in `data_dir`
/// (GENERIC families) or `fil_dir` (Filecoin), or timing-only parameters of the lengths given.
pub fn registration(
    data_dir: &Path,
    fil_dir: &Path,
    spec: CircuitShape,
    params: ParamChoice,
    witness_only: bool,
    device_budget: u64,
) -> Result<(Registered, CircuitProfile), RegisterError> {
    if let ParamChoice::TimingOnly(q) = params {
        let profile = profile(q.log_domain, q.file_bytes(), q.largest_query_bytes(), witness_only, device_budget);
        return Ok((Registered { spec, source: ParamSource::TimingOnly(spec.key()), file_bytes: q.file_bytes() }, profile));
    }
    let Some((path, file_bytes)) = locate(data_dir, fil_dir, spec) else {
        return Err(RegisterError::MissingParams(match spec {
            CircuitShape::Generic(s) => format!(
                "no parameter file for {} at {}; run `cuzk setup --circuit {} --log-size {}` or set params.generate_missing",
                s.id(),
                params_path(data_dir, s).display(),
                s.name(),
                s.log_size
            ),
            CircuitShape::Filecoin(f) => format!(
                "no parameter file for {} in the Filecoin parameter cache {}; run `cuzk setup --filecoin {}` or set params.generate_missing",
                f.id(),
                fil_dir.display(),
                f.id()
            ),
        }));
    };
    let layout = params_layout(&path).ok_or_else(|| RegisterError::BadParams(path.clone()))?;
    let log_size = match spec {
        CircuitShape::Generic(s) => s.log_size,
        CircuitShape::Filecoin(_) => params_log_size(&layout).ok_or_else(|| RegisterError::BadParams(path.clone()))?,
    };
    let profile = profile(log_size, file_bytes, layout.largest_query_bytes(), witness_only, device_budget);
    Ok((Registered { spec, source: ParamSource::File(path), file_bytes }, profile))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_over_the_device_budget_are_streamed() {
        const GIB: u64 = 1 << 30;
        // A 32 GiB PoRep: 2^27 domain, ~47 GiB of parameters.
        let params = 47 * GIB;
        let resident = profile(27, params, 13 * GIB, true, 120 * GIB);
        assert_eq!((resident.params_device_bytes, resident.params_device_host_bytes), (params, 0));
        assert_eq!(resident.load_host_bytes, 13 * GIB, "a device load holds its largest query");
        // A 24 GiB budget: the bases stay on the host, the device holds the staging.
        let streamed = profile(27, params, 13 * GIB, true, 24 * GIB);
        assert_eq!((streamed.params_device_bytes, streamed.params_device_host_bytes, streamed.params_host_bytes), (STREAM_DEVICE_BYTES, params, params));
        assert!(streamed.params_device_bytes + streamed.footprint.device() <= 24 * GIB, "a partition and the staging fit the budget");
        // Parameters smaller than the staging: a streamed copy never claims more than them.
        let small = profile(10, 1 << 20, 0, false, 1 << 20);
        assert_eq!((small.params_device_bytes, small.params_device_host_bytes), (1 << 20, 1 << 20));
        // Exactly fitting stays resident.
        let f = profile(20, GIB, 0, false, u64::MAX).footprint.device();
        assert_eq!(profile(20, GIB, 0, false, GIB + f).params_device_host_bytes, 0);
        assert_eq!(profile(20, GIB, 0, false, GIB + f - 1).params_device_host_bytes, GIB);
    }
}
