//! Synthesis entry points that a circuit type compiles once, in its own crate.
//!
//! cuzk-core's constraint systems (recording, full synthesis, the witness through recorded
//! matrices) are generic over the circuit, so every crate and test binary that runs them on a
//! circuit type compiles that circuit's gadgets again, once per constraint system. A circuit
//! type implements [`CompiledSynthesis`] with [`compiled_synthesis!`] in its own crate: the
//! methods are then ordinary functions compiled there, and generic code above (the worker's
//! matrix cache, the tests) calls them instead of instantiating the gadgets itself.

use bellpepper_core::Circuit;
use blstrs::Scalar;

use crate::alloc::SharedAllocator;
use crate::matrices::{ConstraintMatrices, RecordedShare, RepeatedShare, Repeats, WitnessCs, DEFAULT_CHUNK_ROWS};
use crate::synth::{SizeHint, SynthesizeError, Synthesized};

/// A circuit whose runs through cuzk-core's constraint systems are compiled in its own crate
/// (implemented by [`compiled_synthesis!`]).
pub trait CompiledSynthesis: Circuit<Scalar> + Clone + Send {
    /// [`crate::synth::synthesize`] of a copy of the circuit.
    fn synthesize_in_full(&self, alloc: SharedAllocator, hint: SizeHint) -> Result<Synthesized, SynthesizeError>;
    /// [`ConstraintMatrices::record`] of a copy of the circuit.
    fn record(&self) -> Result<ConstraintMatrices, SynthesizeError>;
    /// [`ConstraintMatrices::record_share`] of a copy of the circuit.
    fn record_share(&self, part: usize, parts: usize, chunk_rows: usize) -> Result<RecordedShare, SynthesizeError>;
    /// [`ConstraintMatrices::record_repeated_share`] of a copy of the circuit.
    fn record_repeated_share(&self, repeats: &Repeats, part: usize, parts: usize, chunk_rows: usize) -> Result<RepeatedShare, SynthesizeError>;
    /// [`ConstraintMatrices::record_repeated`] of a copy of the circuit (one share of one).
    fn record_repeated(&self, repeats: &Repeats) -> Result<Option<ConstraintMatrices>, SynthesizeError> {
        ConstraintMatrices::record_repeated_from(repeats, || Ok(vec![self.record_repeated_share(repeats, 0, 1, DEFAULT_CHUNK_ROWS)?]))
    }
    /// [`ConstraintMatrices::witness`] of a copy of the circuit, through `matrices`.
    fn witness_through(&self, matrices: &ConstraintMatrices, alloc: SharedAllocator) -> Result<WitnessCs, SynthesizeError>;
}

/// Implements [`CompiledSynthesis`] for a circuit type (`Clone + Send`), in the crate that
/// names it: `cuzk_core::compiled_synthesis!(MyCircuit);`. The methods are `#[inline(never)]`
/// so that no caller compiles the gadgets again.
#[macro_export]
macro_rules! compiled_synthesis {
    ($t:ty) => {
        impl $crate::compiled::CompiledSynthesis for $t {
            #[inline(never)]
            fn synthesize_in_full(
                &self,
                alloc: $crate::alloc::SharedAllocator,
                hint: $crate::synth::SizeHint,
            ) -> ::core::result::Result<$crate::synth::Synthesized, $crate::synth::SynthesizeError> {
                $crate::synth::synthesize(::core::clone::Clone::clone(self), alloc, hint)
            }

            #[inline(never)]
            fn record(&self) -> ::core::result::Result<$crate::matrices::ConstraintMatrices, $crate::synth::SynthesizeError> {
                $crate::matrices::ConstraintMatrices::record(::core::clone::Clone::clone(self))
            }

            #[inline(never)]
            fn record_share(
                &self,
                part: usize,
                parts: usize,
                chunk_rows: usize,
            ) -> ::core::result::Result<$crate::matrices::RecordedShare, $crate::synth::SynthesizeError> {
                $crate::matrices::ConstraintMatrices::record_share(::core::clone::Clone::clone(self), part, parts, chunk_rows)
            }

            #[inline(never)]
            fn record_repeated_share(
                &self,
                repeats: &$crate::matrices::Repeats,
                part: usize,
                parts: usize,
                chunk_rows: usize,
            ) -> ::core::result::Result<$crate::matrices::RepeatedShare, $crate::synth::SynthesizeError> {
                $crate::matrices::ConstraintMatrices::record_repeated_share(::core::clone::Clone::clone(self), repeats, part, parts, chunk_rows)
            }

            #[inline(never)]
            fn witness_through(
                &self,
                matrices: &$crate::matrices::ConstraintMatrices,
                alloc: $crate::alloc::SharedAllocator,
            ) -> ::core::result::Result<$crate::matrices::WitnessCs, $crate::synth::SynthesizeError> {
                matrices.witness(::core::clone::Clone::clone(self), alloc)
            }
        }
    };
}

/// The shares `0..parts` of a recording, one after the other on the calling thread, merged:
/// what a parallel recording computes ([`ConstraintMatrices::record_in_shares`] through
/// [`CompiledSynthesis::record_share`]).
pub fn record_in_shares<C: CompiledSynthesis>(circuit: &C, parts: usize, chunk_rows: usize) -> Result<ConstraintMatrices, SynthesizeError> {
    ConstraintMatrices::merge_shares_one_by_one(parts, |p, parts| circuit.record_share(p, parts, chunk_rows))
}
