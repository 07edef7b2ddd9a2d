//! The assignments of circuit gadgets, computed natively.
//!
//! Once a circuit's constraint matrices are recorded, a proof needs only the circuit's
//! assignment: the value of every variable, in allocation order. Running the gadgets in a
//! witness-only constraint system still pays for everything the gadgets do besides computing
//! values (linear combinations built eagerly, `Boolean` bookkeeping, namespaces). The writers
//! here compute the same values directly and push them into an [`Assignment`] in exactly the
//! order the gadgets allocate them, so the result is the gadgets' assignment index for index.
//! Each writer is tested against its gadget run in a witness-only constraint system.

pub mod bits;
pub mod column;
pub mod por;
pub mod poseidon;
pub mod sha256;
pub mod uint32;

use blstrs::Scalar;
use ff::Field;

/// A window of a circuit's assignment that a writer fills in allocation order: aux variables
/// and inputs (without `ONE`). Writes past the end are counted, not stored, and make
/// [`Assignment::finish`] fail.
#[derive(Debug)]
pub struct Assignment<'a> {
    aux: &'a mut [Scalar],
    aux_used: usize,
    inputs: &'a mut [Scalar],
    inputs_used: usize,
}

/// The writer did not fill its window exactly: the circuit's layout is not the one the writer
/// reproduces.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("wrote {aux_written} aux values and {inputs_written} inputs into a window of {aux_len} and {inputs_len}")]
pub struct LayoutError {
    /// Aux values written.
    pub aux_written: usize,
    /// Size of the aux window.
    pub aux_len: usize,
    /// Inputs written.
    pub inputs_written: usize,
    /// Size of the input window.
    pub inputs_len: usize,
}

impl<'a> Assignment<'a> {
    /// A window over `aux` and `inputs`, filled from their starts.
    pub fn new(aux: &'a mut [Scalar], inputs: &'a mut [Scalar]) -> Self {
        Assignment { aux, aux_used: 0, inputs, inputs_used: 0 }
    }

    /// Appends an aux value.
    #[inline]
    pub fn aux(&mut self, v: Scalar) {
        if let Some(slot) = self.aux.get_mut(self.aux_used) {
            *slot = v;
        }
        self.aux_used += 1;
    }

    /// Appends an aux bit (`0` or `1`).
    #[inline]
    pub fn bit(&mut self, b: bool) {
        self.aux(if b { Scalar::ONE } else { Scalar::ZERO });
    }

    /// Appends an input.
    #[inline]
    pub fn input(&mut self, v: Scalar) {
        if let Some(slot) = self.inputs.get_mut(self.inputs_used) {
            *slot = v;
        }
        self.inputs_used += 1;
    }

    /// Aux values written so far.
    pub fn aux_used(&self) -> usize {
        self.aux_used
    }

    /// Inputs written so far.
    pub fn inputs_used(&self) -> usize {
        self.inputs_used
    }

    /// Checks that both windows were filled exactly.
    pub fn finish(self) -> Result<(), LayoutError> {
        if self.aux_used == self.aux.len() && self.inputs_used == self.inputs.len() {
            Ok(())
        } else {
            Err(LayoutError { aux_written: self.aux_used, aux_len: self.aux.len(), inputs_written: self.inputs_used, inputs_len: self.inputs.len() })
        }
    }
}
