//! cuzk-setup's generator for the built-in circuits, compiled here once: a crate above calls
//! this instead of instantiating the circuits' synthesis again (their recording and synthesis
//! are compiled in their own crates, [`cuzk_core::compiled::CompiledSynthesis`]).

use cuzk_circuits::BuiltinCircuit;
use cuzk_core::params::Parameters;
use cuzk_setup::SetupError;
use rand::RngCore;

/// Groth16 parameters of a built-in circuit ([`cuzk_setup::generate_parameters`]).
pub fn builtin_parameters(circuit: BuiltinCircuit, mut rng: &mut dyn RngCore) -> Result<Parameters, SetupError> {
    cuzk_setup::generate_parameters(circuit, &mut rng)
}
