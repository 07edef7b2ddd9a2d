//! Entry points for the circuits cuzk runs (the built-in circuits and Filecoin's partitions)
//! that a crate above calls instead of instantiating their synthesis again: cuzk-setup's
//! generator compiled here once, and the circuits' own compiled synthesis
//! ([`cuzk_core::compiled::CompiledSynthesis`]).

use cuzk_circuits::BuiltinCircuit;
use cuzk_circuits_filecoin::PartitionCircuit;
use cuzk_core::alloc::heap;
use cuzk_core::compiled::CompiledSynthesis;
use cuzk_core::matrices::ConstraintMatrices;
use cuzk_core::params::Parameters;
use cuzk_core::synth::{SizeHint, SynthesizeError, Synthesized};
use cuzk_setup::SetupError;
use rand::RngCore;

/// Groth16 parameters of a built-in circuit ([`cuzk_setup::generate_parameters`]).
pub fn builtin_parameters(circuit: BuiltinCircuit, mut rng: &mut dyn RngCore) -> Result<Parameters, SetupError> {
    cuzk_setup::generate_parameters(circuit, &mut rng)
}

/// A partition synthesized in full, constraint by constraint ([`cuzk_core::synth::synthesize`]),
/// into heap memory.
pub fn synthesize_in_full(c: &PartitionCircuit) -> Result<Synthesized, SynthesizeError> {
    c.synthesize_in_full(heap(), SizeHint::default())
}

/// A partition's constraint matrices, recorded on one thread ([`ConstraintMatrices::record`]).
pub fn record_matrices(c: &PartitionCircuit) -> Result<ConstraintMatrices, SynthesizeError> {
    c.record()
}

/// A partition synthesized from its recorded matrices ([`crate::matrices::synthesize`]): its
/// witness, then the sparse products.
pub fn synthesize_from_matrices(m: &ConstraintMatrices, c: &PartitionCircuit) -> Result<Synthesized, SynthesizeError> {
    crate::matrices::synthesize(m, c.clone(), heap())
}
