//! Circuit families that GENERIC jobs name: the built-in circuits and any `bellpepper-core`
//! circuit a program embedding the daemon registers ([`register_family`]). A family builds a
//! partition's circuit at a domain size from a seed; the worker proves it like any other.

use std::ops::RangeInclusive;
use std::sync::{Arc, LazyLock, RwLock};

use cuzk_circuits::CircuitKind;
use cuzk_core::circuit::{CircuitError, ShapeKey};
use cuzk_core::params::Parameters;
use cuzk_worker::Work;
use rand::RngCore;

/// A family of circuits proved by name, at a domain size, from a seed.
pub trait CircuitFamily: Send + Sync + 'static {
    /// The name GENERIC jobs give (`GenericJob.circuit`): letters, digits and `-`.
    fn name(&self) -> &str;
    /// The domain sizes (log2) it can be built at.
    fn log_sizes(&self) -> RangeInclusive<u32>;
    /// Partition `seed`'s circuit at `2^log_size` (its shape key is [`GenericShape::key`]).
    fn partition(&self, shape: ShapeKey, log_size: u32, seed: u64) -> Result<Work, CircuitError>;
    /// Random Groth16 parameters at `2^log_size` (for `params.generate_missing` and
    /// `cuzk setup`; a test SRS, not a ceremony's).
    fn parameters(&self, log_size: u32, rng: &mut dyn RngCore) -> Result<Parameters, CircuitError>;
}

/// A built-in circuit as a family.
struct Builtin(CircuitKind);

impl CircuitFamily for Builtin {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn log_sizes(&self) -> RangeInclusive<u32> {
        self.0.min_log_size()..=cuzk_circuits::MAX_LOG_SIZE
    }
    fn partition(&self, shape: ShapeKey, log_size: u32, seed: u64) -> Result<Work, CircuitError> {
        let mut p = cuzk_circuits::BuiltinShape::new(self.0, log_size)?.partition(seed)?;
        p.shape = shape;
        Ok(Arc::new(p))
    }
    fn parameters(&self, log_size: u32, rng: &mut dyn RngCore) -> Result<Parameters, CircuitError> {
        Ok(cuzk_setup::generate_parameters(self.0.instance(log_size, 0)?, &mut &mut *rng)?)
    }
}

/// The registered families, the built-ins first; a family is never removed.
static FAMILIES: LazyLock<RwLock<Vec<Arc<dyn CircuitFamily>>>> =
    LazyLock::new(|| RwLock::new(CircuitKind::ALL.iter().map(|k| Arc::new(Builtin(*k)) as Arc<dyn CircuitFamily>).collect()));

fn families() -> std::sync::RwLockReadGuard<'static, Vec<Arc<dyn CircuitFamily>>> {
    FAMILIES.read().unwrap_or_else(|e| e.into_inner())
}

/// A registered family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Family(u16);

impl Family {
    /// The family named `name`.
    pub fn by_name(name: &str) -> Option<Family> {
        families().iter().position(|f| f.name() == name).map(|i| Family(i as u16))
    }

    /// The family itself.
    pub fn get(self) -> Arc<dyn CircuitFamily> {
        families()[self.0 as usize].clone()
    }
}

/// Why a family could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FamilyError {
    /// The name is taken (by a built-in circuit or an earlier registration).
    #[error("a circuit family named {0:?} is registered already")]
    Taken(String),
    /// The name is empty, holds other characters than letters, digits and `-`, or reads as a
    /// Filecoin circuit's id.
    #[error("{0:?} is not a usable family name (letters, digits and '-', not a Filecoin circuit id)")]
    BadName(String),
    /// No domain size is allowed.
    #[error("family {0:?} allows no domain size")]
    NoSizes(String),
}

/// Registers `family` so that GENERIC jobs can name it; process-wide, for every daemon the
/// process runs.
pub fn register_family(family: Arc<dyn CircuitFamily>) -> Result<Family, FamilyError> {
    let name = family.name().to_string();
    let usable = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    if !usable || cuzk_circuits_filecoin::FilShape::parse(&format!("{name}-2k")).is_some() {
        return Err(FamilyError::BadName(name));
    }
    if family.log_sizes().is_empty() {
        return Err(FamilyError::NoSizes(name));
    }
    let mut all = FAMILIES.write().unwrap_or_else(|e| e.into_inner());
    if all.iter().any(|f| f.name() == name) {
        return Err(FamilyError::Taken(name));
    }
    all.push(family);
    Ok(Family(all.len() as u16 - 1))
}

/// Why a GENERIC job's circuit cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GenericError {
    /// No family has that name.
    #[error("unknown circuit {0:?}")]
    Unknown(String),
    /// The family is not built at that size.
    #[error("{name} needs log_size in {min}..={max}, got {got}")]
    BadSize {
        /// The family.
        name: String,
        /// Smallest size.
        min: u32,
        /// Largest size.
        max: u32,
        /// The size asked for.
        got: u32,
    },
}

/// A family at a domain size: the unit of parameters of GENERIC jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GenericShape {
    /// The family.
    pub family: Family,
    /// log2 of the domain.
    pub log_size: u32,
}

impl GenericShape {
    /// Checks the name and size.
    pub fn new(name: &str, log_size: u32) -> Result<GenericShape, GenericError> {
        let family = Family::by_name(name).ok_or_else(|| GenericError::Unknown(name.to_string()))?;
        let sizes = family.get().log_sizes();
        if !sizes.contains(&log_size) {
            return Err(GenericError::BadSize { name: name.to_string(), min: *sizes.start(), max: *sizes.end(), got: log_size });
        }
        Ok(GenericShape { family, log_size })
    }

    /// The family's name.
    pub fn name(&self) -> String {
        self.family.get().name().to_string()
    }

    /// The id in the API, on the status page and of the parameter file: `squaring-chain-2^10`.
    pub fn id(&self) -> String {
        format!("{}-2^{}", self.name(), self.log_size)
    }

    /// Parses [`GenericShape::id`].
    pub fn parse(id: &str) -> Result<GenericShape, GenericError> {
        let unknown = || GenericError::Unknown(id.to_string());
        let (name, k) = id.rsplit_once("-2^").ok_or_else(unknown)?;
        GenericShape::new(name, k.parse().map_err(|_| unknown())?)
    }

    /// The key of its parameters and recorded matrices.
    pub fn key(&self) -> ShapeKey {
        ShapeKey::new(self.id())
    }

    /// Partition `seed`'s circuit.
    pub fn partition(&self, seed: u64) -> Result<Work, CircuitError> {
        self.family.get().partition(self.key(), self.log_size, seed)
    }

    /// Random parameters for it ([`CircuitFamily::parameters`]).
    pub fn parameters(&self, rng: &mut dyn RngCore) -> Result<Parameters, CircuitError> {
        self.family.get().parameters(self.log_size, rng)
    }
}
