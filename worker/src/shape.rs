//! Circuit shapes: a circuit kind at a size, the unit of parameter files and of recorded
//! constraint matrices. A *kind* is a family (`CircuitKind`, `FilKind`); a *shape* is one of
//! its sizes ([`BuiltinShape`], `FilShape`, either as [`CircuitShape`]); the engine numbers the
//! shapes it has registered (`CircuitId`).

use cuzk_circuits::{CircuitError, CircuitKind};
use cuzk_circuits_filecoin::FilShape;

/// A built-in circuit at a domain size: the unit of parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BuiltinShape {
    /// Which circuit.
    pub kind: CircuitKind,
    /// log2 of its domain.
    pub log_size: u32,
}

impl BuiltinShape {
    /// Checks the name and size.
    pub fn new(kind: CircuitKind, log_size: u32) -> Result<BuiltinShape, CircuitError> {
        let (min, max) = (kind.min_log_size(), cuzk_circuits::MAX_LOG_SIZE);
        if log_size < min || log_size > max {
            return Err(CircuitError::BadSize { name: kind.name(), min, max, got: log_size });
        }
        Ok(BuiltinShape { kind, log_size })
    }

    /// The id used in the API and on the status page: `squaring-chain-2^10`.
    pub fn id(&self) -> String {
        format!("{}-2^{}", self.kind.name(), self.log_size)
    }

    /// Parses [`BuiltinShape::id`].
    pub fn parse(id: &str) -> Result<BuiltinShape, CircuitError> {
        let unknown = || CircuitError::Unknown(id.to_string());
        let (name, k) = id.rsplit_once("-2^").ok_or_else(unknown)?;
        let k: u32 = k.parse().map_err(|_| unknown())?;
        BuiltinShape::new(CircuitKind::from_name(name)?, k)
    }
}

/// Any circuit cuzk proves: the unit of parameters, of recorded matrices and of the engine's circuit ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CircuitShape {
    /// A built-in circuit at a domain size.
    Builtin(BuiltinShape),
    /// A Filecoin circuit at a sector size.
    Filecoin(FilShape),
}

impl CircuitShape {
    /// The id in the API and on the status page (`squaring-chain-2^10`, `wpost-2k`).
    pub fn id(&self) -> String {
        match self {
            CircuitShape::Builtin(s) => s.id(),
            CircuitShape::Filecoin(f) => f.id(),
        }
    }

    /// Parses [`CircuitShape::id`].
    pub fn parse(id: &str) -> Result<CircuitShape, CircuitError> {
        match FilShape::parse(id) {
            Some(f) => Ok(CircuitShape::Filecoin(f)),
            None => BuiltinShape::parse(id).map(CircuitShape::Builtin),
        }
    }
}

impl From<BuiltinShape> for CircuitShape {
    fn from(s: BuiltinShape) -> CircuitShape {
        CircuitShape::Builtin(s)
    }
}
