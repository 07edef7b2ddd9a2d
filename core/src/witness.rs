//! Witness generation in parallel parts.
//!
//! Once a circuit's matrices are recorded, a proof needs only its assignment. Many circuits are
//! chains or lists of independent pieces (a SHA-256 chain's blocks, a PoRep partition's
//! challenges) whose variables occupy contiguous index ranges that do not depend on the
//! witness. Such a circuit implements [`ParallelWitness`]: it computes the values that cross
//! from one piece to the next natively, then writes each piece into its own window of the
//! assignment on its own thread (natively, `cuzk-gadget-witness`, or by running the piece's
//! gadgets in a [`SegmentCs`]). The result is exactly the assignment sequential synthesis
//! produces, index for index.

use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;

/// A circuit that can write its assignment in parallel parts.
pub trait ParallelWitness {
    /// Writes the whole assignment into `input` (whose `input[0]` is `ONE` already) and `aux`,
    /// each exactly as long as the recorded shape says, with the values sequential synthesis
    /// assigns.
    fn witness_into(&self, input: &mut [Scalar], aux: &mut [Scalar]) -> Result<(), WitnessError>;

    /// Where the circuit repeats one block of constraints, if it does: its matrices are then
    /// recorded from two blocks ([`crate::matrices::ConstraintMatrices::record_repeated`]).
    fn repeats(&self) -> Option<Repeats> {
        None
    }
}

/// Where a circuit repeats a block of constraints (see
/// [`crate::matrices::ConstraintMatrices::record_repeated`]; also `cuzk_core::matrices::Repeats`).
#[derive(Clone)]
pub struct Repeats {
    /// Namespace depth of the markers (0: the circuit's root).
    pub depth: usize,
    /// The name of the namespace that starts block `k`.
    pub marker: fn(usize) -> String,
    /// Blocks in the circuit.
    pub count: usize,
    /// Where blocks read header variables of their own (a SnapDeals challenge its bits, which
    /// the header allocates for every challenge): given block `k` and an aux index of the header
    /// that block 0 reads, the one block `k` reads in its place. `None`: every block reads the
    /// header variables block 0 reads.
    pub header_aux: Option<HeaderAux>,
}

/// [`Repeats::header_aux`]: `(k, i)` → the header aux index block `k` reads where block 0 reads
/// `i` (`i` itself for the variables every block shares).
pub type HeaderAux = std::sync::Arc<dyn Fn(usize, usize) -> usize + Send + Sync>;

impl std::fmt::Debug for Repeats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repeats").field("depth", &self.depth).field("count", &self.count).field("header_aux", &self.header_aux.is_some()).finish()
    }
}

/// Why a parallel witness could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WitnessError {
    /// The circuit's own gadgets failed.
    #[error("circuit synthesis failed: {0}")]
    Circuit(#[from] SynthesisError),
    /// A part allocated more or fewer variables than its window holds: the circuit's layout
    /// does not match the recorded shape.
    #[error("witness part {part} does not fit its window: {detail}")]
    Layout {
        /// Which part.
        part: usize,
        /// What did not fit.
        detail: String,
    },
}

/// A witness-only constraint system for one part of a circuit: allocations write into a window
/// of the assignment (`aux` from index `aux_base`, `input` from `input_base`); `enforce`
/// closures never run. Circuits run their own gadgets in it where no native writer
/// (`cuzk-gadget-witness`) replaces them, e.g. a Filecoin partition's header.
#[derive(Debug)]
pub struct SegmentCs<'a> {
    aux: &'a mut [Scalar],
    aux_base: usize,
    aux_used: usize,
    input: &'a mut [Scalar],
    input_base: usize,
    input_used: usize,
    overflow: Option<String>,
}

impl<'a> SegmentCs<'a> {
    /// A part owning `aux` (aux indices `aux_base..aux_base + aux.len()`) and `input` (input
    /// indices `input_base..`).
    pub fn new(aux: &'a mut [Scalar], aux_base: usize, input: &'a mut [Scalar], input_base: usize) -> Self {
        SegmentCs { aux, aux_base, aux_used: 0, input, input_base, input_used: 0, overflow: None }
    }

    /// Checks that the part filled its windows exactly.
    pub fn finish(self, part: usize) -> Result<(), WitnessError> {
        self.finish_after(part, Ok(()))
    }

    /// [`SegmentCs::finish`] after the part's gadgets returned `ran`: a window overflow is
    /// reported as such even when it made a gadget fail.
    pub fn finish_after(self, part: usize, ran: Result<(), SynthesisError>) -> Result<(), WitnessError> {
        let layout = |detail: String| Err(WitnessError::Layout { part, detail });
        if let Some(detail) = self.overflow {
            return layout(detail);
        }
        ran?;
        if let Some(detail) = self.overflow {
            return layout(detail);
        }
        if self.aux_used != self.aux.len() || self.input_used != self.input.len() {
            return layout(format!(
                "allocated {} aux and {} inputs, the window holds {} and {}",
                self.aux_used,
                self.input_used,
                self.aux.len(),
                self.input.len()
            ));
        }
        Ok(())
    }
}

impl ConstraintSystem<Scalar> for SegmentCs<'_> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let Some(slot) = self.aux.get_mut(self.aux_used) else {
            self.overflow.get_or_insert_with(|| format!("more than {} aux variables", self.aux.len()));
            return Err(SynthesisError::Unsatisfiable);
        };
        *slot = f()?;
        self.aux_used += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.aux_base + self.aux_used - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let Some(slot) = self.input.get_mut(self.input_used) else {
            self.overflow.get_or_insert_with(|| format!("more than {} inputs", self.input.len()));
            return Err(SynthesisError::Unsatisfiable);
        };
        *slot = f()?;
        self.input_used += 1;
        Ok(Variable::new_unchecked(Index::Input(self.input_base + self.input_used - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// Splits `buf` into consecutive windows of the given lengths (which must sum to at most its
/// length; the last window takes the rest).
pub fn windows<'a>(mut buf: &'a mut [Scalar], lens: &[usize]) -> Vec<&'a mut [Scalar]> {
    let mut out = Vec::with_capacity(lens.len());
    for (i, &n) in lens.iter().enumerate() {
        if i + 1 == lens.len() {
            out.push(std::mem::take(&mut buf));
        } else {
            let rest = std::mem::take(&mut buf);
            let (head, tail) = rest.split_at_mut(n.min(rest.len()));
            out.push(head);
            buf = tail;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;

    #[test]
    fn segment_windows_and_overflow() {
        let mut aux = vec![Scalar::ZERO; 3];
        let mut input = vec![Scalar::ZERO; 1];
        let mut cs = SegmentCs::new(&mut aux, 10, &mut input, 1);
        let v = cs.alloc(|| "", || Ok(Scalar::from(7))).unwrap();
        assert_eq!(v.get_unchecked(), Index::Aux(10), "aux indices start at the window's base");
        let v = cs.alloc_input(|| "", || Ok(Scalar::from(5))).unwrap();
        assert_eq!(v.get_unchecked(), Index::Input(1));
        assert!(cs.alloc(|| "", || Err(SynthesisError::AssignmentMissing)).is_err(), "an allocation fails with its closure");
        assert!(matches!(cs.finish(0), Err(WitnessError::Layout { .. })), "two aux slots unfilled");
        assert_eq!((aux[0], input[0]), (Scalar::from(7), Scalar::from(5)));

        let mut aux = vec![Scalar::ZERO; 1];
        let mut cs = SegmentCs::new(&mut aux, 0, &mut [], 0);
        cs.alloc(|| "", || Ok(Scalar::ONE)).unwrap();
        assert!(cs.alloc(|| "", || Ok(Scalar::ONE)).is_err());
        assert!(cs.alloc_input(|| "", || Ok(Scalar::ONE)).is_err());
        assert!(matches!(cs.finish(3), Err(WitnessError::Layout { part: 3, .. })));
    }

    #[test]
    fn windows_split_in_order() {
        let mut buf: Vec<Scalar> = (0..10u64).map(Scalar::from).collect();
        let w = windows(&mut buf, &[3, 0, 4, 1]);
        assert_eq!(w.iter().map(|w| w.len()).collect::<Vec<_>>(), vec![3, 0, 4, 3]);
        assert_eq!(w[2][0], Scalar::from(3));
    }
}
