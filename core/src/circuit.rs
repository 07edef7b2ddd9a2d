//! One partition's circuit as the prover runs it, whatever family it comes from (the built-in
//! circuits, Filecoin's kinds, a user's `bellpepper-core` circuit): the worker sees only
//! [`PartitionCircuit`], so a new family registers from the layer above without touching it.

use std::fmt;
use std::sync::Arc;

use blstrs::Scalar;

use crate::alloc::SharedAllocator;
use crate::compiled::CompiledSynthesis;
use crate::matrices::{ConstraintMatrices, RecordedShare, RepeatedShare, Repeats};
use crate::synth::{SizeHint, SynthesizeError, Synthesized};
use crate::witness::{ParallelWitness, WitnessError};

/// A circuit at one size: partitions with the same key share parameters and recorded
/// constraint matrices (`squaring-chain-2^10`, `porep-32g`). The key is also the circuit's name
/// in the API, on the status page and in the matrix store's file names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShapeKey(Arc<str>);

impl ShapeKey {
    /// The key named `id`.
    pub fn new(id: impl Into<Arc<str>>) -> ShapeKey {
        ShapeKey(id.into())
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ShapeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What happens to a partition's witness checks (its constraints hold, its public inputs are
/// the ones the job's data gives).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WitnessCheck {
    /// The witness was built here and holds by construction: no check runs.
    Trusted,
    /// The witness comes from a request: checked, and a failure fails the job.
    Enforce,
    /// The checks run (so they take their time) and their verdict is ignored: for timing
    /// circuits whose witness is fabricated. Nothing proved so is valid.
    Ignore,
}

impl WitnessCheck {
    /// Whether the checks run.
    pub fn runs(self) -> bool {
        self != WitnessCheck::Trusted
    }

    /// Whether a failed check fails the job.
    pub fn decides(self) -> bool {
        self == WitnessCheck::Enforce
    }
}

/// Why a circuit could not give its public inputs (a request it cannot be built from).
pub type CircuitError = Box<dyn std::error::Error + Send + Sync>;

/// One partition's circuit: its shape, its public inputs, its witness writer and the entry
/// points of synthesis, object-safe so that the worker holds any family behind one pointer.
/// [`Partition`] implements it for any circuit type with [`CompiledSynthesis`],
/// [`ParallelWitness`] and [`PublicInputs`].
pub trait PartitionCircuit: Send + Sync {
    /// The shape: the key of its parameters and recorded matrices.
    fn shape(&self) -> &ShapeKey;
    /// The public inputs (without `ONE`) the witness must produce.
    fn public_inputs(&self) -> Result<Vec<Scalar>, CircuitError>;
    /// What happens to the witness checks.
    fn witness_check(&self) -> WitnessCheck;
    /// [`ParallelWitness::witness_into`].
    fn witness_into(&self, input: &mut [Scalar], aux: &mut [Scalar]) -> Result<(), WitnessError>;
    /// [`ParallelWitness::repeats`].
    fn repeats(&self) -> Option<Repeats>;
    /// [`CompiledSynthesis::synthesize_in_full`].
    fn synthesize_in_full(&self, alloc: SharedAllocator, hint: SizeHint) -> Result<Synthesized, SynthesizeError>;
    /// [`CompiledSynthesis::record`].
    fn record(&self) -> Result<ConstraintMatrices, SynthesizeError>;
    /// [`CompiledSynthesis::record_share`].
    fn record_share(&self, part: usize, parts: usize, chunk_rows: usize) -> Result<RecordedShare, SynthesizeError>;
    /// [`CompiledSynthesis::record_repeated_share`].
    fn record_repeated_share(&self, repeats: &Repeats, part: usize, parts: usize, chunk_rows: usize) -> Result<RepeatedShare, SynthesizeError>;
    /// [`CompiledSynthesis::record_repeated`]: one share of one.
    fn record_repeated(&self, repeats: &Repeats) -> Result<Option<ConstraintMatrices>, SynthesizeError> {
        ConstraintMatrices::record_repeated_from(repeats, || Ok(vec![self.record_repeated_share(repeats, 0, 1, crate::matrices::DEFAULT_CHUNK_ROWS)?]))
    }
}

/// A circuit type's public inputs, computed natively (what [`Partition`] needs besides
/// synthesis).
pub trait PublicInputs {
    /// The public inputs without `ONE`.
    fn public_inputs(&self) -> Result<Vec<Scalar>, CircuitError>;
}

/// A circuit of any type with its shape and witness check: the [`PartitionCircuit`] a family
/// hands to the worker.
#[derive(Debug, Clone)]
pub struct Partition<C> {
    /// Its shape.
    pub shape: ShapeKey,
    /// What happens to its witness checks.
    pub check: WitnessCheck,
    /// The circuit.
    pub circuit: C,
}

impl<C> PartitionCircuit for Partition<C>
where
    C: CompiledSynthesis + ParallelWitness + PublicInputs + Sync,
{
    fn shape(&self) -> &ShapeKey {
        &self.shape
    }
    fn public_inputs(&self) -> Result<Vec<Scalar>, CircuitError> {
        self.circuit.public_inputs()
    }
    fn witness_check(&self) -> WitnessCheck {
        self.check
    }
    fn witness_into(&self, input: &mut [Scalar], aux: &mut [Scalar]) -> Result<(), WitnessError> {
        self.circuit.witness_into(input, aux)
    }
    fn repeats(&self) -> Option<Repeats> {
        self.circuit.repeats()
    }
    fn synthesize_in_full(&self, alloc: SharedAllocator, hint: SizeHint) -> Result<Synthesized, SynthesizeError> {
        self.circuit.synthesize_in_full(alloc, hint)
    }
    fn record(&self) -> Result<ConstraintMatrices, SynthesizeError> {
        self.circuit.record()
    }
    fn record_share(&self, part: usize, parts: usize, chunk_rows: usize) -> Result<RecordedShare, SynthesizeError> {
        self.circuit.record_share(part, parts, chunk_rows)
    }
    fn record_repeated_share(&self, repeats: &Repeats, part: usize, parts: usize, chunk_rows: usize) -> Result<RepeatedShare, SynthesizeError> {
        self.circuit.record_repeated_share(repeats, part, parts, chunk_rows)
    }
}

/// Lets the matrices' witness writer ([`ConstraintMatrices::witness_parallel`]) take any
/// partition circuit.
impl ParallelWitness for dyn PartitionCircuit + '_ {
    fn witness_into(&self, input: &mut [Scalar], aux: &mut [Scalar]) -> Result<(), WitnessError> {
        PartitionCircuit::witness_into(self, input, aux)
    }
    fn repeats(&self) -> Option<Repeats> {
        PartitionCircuit::repeats(self)
    }
}
