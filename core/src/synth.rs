//! Our `bellpepper_core::ConstraintSystem`: records what the prover needs, straight into
//! allocator buffers.

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use crate::alloc::{heap, AllocError, PinnedVec, SharedAllocator};
use crate::density::DensityBitmap;

/// Expected sizes of a circuit, so buffers are allocated once instead of grown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SizeHint {
    /// Constraints, including one per public input.
    pub constraints: usize,
    /// Public inputs, including `ONE`.
    pub inputs: usize,
    /// Private (auxiliary) variables.
    pub aux: usize,
}

/// The record of one synthesized circuit: everything the rest of the proof needs.
///
/// Mirrors bellperson's `ProvingAssignment`: `a, b, c` are the evaluations of the three linear
/// combinations per constraint (the last `inputs` constraints are the `input_i · 0 = 0`
/// constraints bellperson appends), and the density bitmaps mark the variables that appear
/// with a non-zero coefficient in A (aux only; inputs are always present) and in B.
#[derive(Debug)]
pub struct Synthesized {
    /// A-evaluations, one per constraint.
    pub a: PinnedVec<Scalar>,
    /// B-evaluations.
    pub b: PinnedVec<Scalar>,
    /// C-evaluations.
    pub c: PinnedVec<Scalar>,
    /// Public input assignment; `input[0] == 1`.
    pub input: PinnedVec<Scalar>,
    /// Auxiliary assignment.
    pub aux: PinnedVec<Scalar>,
    /// Aux variables present in the A query.
    pub a_aux_density: DensityBitmap,
    /// Inputs present in the B query.
    pub b_input_density: DensityBitmap,
    /// Aux variables present in the B query.
    pub b_aux_density: DensityBitmap,
}

impl Synthesized {
    /// Number of constraints (including the input constraints).
    pub fn num_constraints(&self) -> usize {
        self.a.len()
    }

    /// The sizes, to pass as a [`SizeHint`] to the next synthesis of the same circuit.
    pub fn size_hint(&self) -> SizeHint {
        SizeHint { constraints: self.a.len(), inputs: self.input.len(), aux: self.aux.len() }
    }
}

/// A `ConstraintSystem` that records evaluations, assignments and densities.
///
/// Allocation failures during synthesis cannot be reported through the trait's methods that
/// return nothing (`enforce`); they are remembered and reported by [`RecordingCs::finish`].
#[derive(Debug)]
pub struct RecordingCs {
    rec: Synthesized,
    alloc_error: Option<AllocError>,
}

impl RecordingCs {
    /// An empty recorder whose buffers come from `alloc`, pre-sized by `hint`.
    pub fn new_in(alloc: SharedAllocator, hint: SizeHint) -> Result<Self, AllocError> {
        let v = |n: usize| PinnedVec::with_capacity_in(n, alloc.clone());
        Ok(RecordingCs {
            rec: Synthesized {
                a: v(hint.constraints)?,
                b: v(hint.constraints)?,
                c: v(hint.constraints)?,
                input: v(hint.inputs)?,
                aux: v(hint.aux)?,
                a_aux_density: DensityBitmap::new_in(alloc.clone()),
                b_input_density: DensityBitmap::new_in(alloc.clone()),
                b_aux_density: DensityBitmap::new_in(alloc),
            },
            alloc_error: None,
        })
    }

    /// Number of constraints recorded so far.
    pub fn num_constraints(&self) -> usize {
        self.rec.a.len()
    }

    /// Ends recording and hands out the buffers.
    pub fn finish(self) -> Result<Synthesized, AllocError> {
        match self.alloc_error {
            Some(e) => Err(e),
            None => Ok(self.rec),
        }
    }

    fn note(&mut self, r: Result<(), AllocError>) {
        if let Err(e) = r {
            self.alloc_error.get_or_insert(e);
        }
    }
}

/// Evaluates `lc`, marking present variables in the given trackers (as bellperson does).
#[inline]
fn eval(
    lc: &LinearCombination<Scalar>,
    mut input_density: Option<&mut DensityBitmap>,
    mut aux_density: Option<&mut DensityBitmap>,
    input: &[Scalar],
    aux: &[Scalar],
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (&i, coeff) in lc.iter_inputs() {
        if coeff.is_zero_vartime() {
            continue;
        }
        acc += if *coeff == Scalar::ONE { input[i] } else { input[i] * coeff };
        if let Some(d) = input_density.as_deref_mut() {
            d.set(i);
        }
    }
    for (&i, coeff) in lc.iter_aux() {
        if coeff.is_zero_vartime() {
            continue;
        }
        acc += if *coeff == Scalar::ONE { aux[i] } else { aux[i] * coeff };
        if let Some(d) = aux_density.as_deref_mut() {
            d.set(i);
        }
    }
    acc
}

impl ConstraintSystem<Scalar> for RecordingCs {
    type Root = Self;

    fn new() -> Self {
        RecordingCs::new_in(heap(), SizeHint::default()).expect("empty buffers need no memory")
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let value = f()?;
        let r = self.rec.aux.try_push(value).and_then(|_| self.rec.a_aux_density.push()).and_then(|_| self.rec.b_aux_density.push());
        self.note(r);
        Ok(Variable(Index::Aux(self.rec.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let value = f()?;
        let r = self.rec.input.try_push(value).and_then(|_| self.rec.b_input_density.push());
        self.note(r);
        Ok(Variable(Index::Input(self.rec.input.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let a = a(LinearCombination::zero());
        let b = b(LinearCombination::zero());
        let c = c(LinearCombination::zero());
        let rec = &mut self.rec;
        // Inputs are always present in A (there is an `input · 0 = 0` constraint for each).
        let va = eval(&a, None, Some(&mut rec.a_aux_density), &rec.input, &rec.aux);
        let vb = eval(&b, Some(&mut rec.b_input_density), Some(&mut rec.b_aux_density), &rec.input, &rec.aux);
        let vc = eval(&c, None, None, &rec.input, &rec.aux);
        let r = rec.a.try_push(va).and_then(|_| rec.b.try_push(vb)).and_then(|_| rec.c.try_push(vc));
        self.note(r);
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

    fn is_extensible() -> bool {
        true
    }

    fn extend(&mut self, other: &Self) {
        let o = &other.rec;
        let rec = &mut self.rec;
        let r = (|| {
            rec.a_aux_density.extend(&o.a_aux_density, false)?;
            rec.b_input_density.extend(&o.b_input_density, true)?;
            // The other system's ONE is ours: its use in B marks our ONE (as bellperson's
            // `DensityTracker::extend` coalesces the first input).
            if !o.b_input_density.is_empty() && o.b_input_density.get(0) && !rec.b_input_density.is_empty() {
                rec.b_input_density.set(0);
            }
            rec.b_aux_density.extend(&o.b_aux_density, false)?;
            rec.a.try_extend_from_slice(&o.a)?;
            rec.b.try_extend_from_slice(&o.b)?;
            rec.c.try_extend_from_slice(&o.c)?;
            // The other system's first input is its own ONE.
            rec.input.try_extend_from_slice(o.input.get(1..).unwrap_or(&[]))?;
            rec.aux.try_extend_from_slice(&o.aux)
        })();
        self.note(r);
        if let Some(e) = &other.alloc_error {
            self.alloc_error.get_or_insert(AllocError::OutOfMemory { bytes: 0, reason: e.to_string() });
        }
    }
}

/// Counts constraints and variables without evaluating anything.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ShapeCounter {
    /// Constraints so far.
    pub constraints: usize,
    /// Public inputs so far.
    pub inputs: usize,
    /// Aux variables so far.
    pub aux: usize,
}

impl ShapeCounter {
    /// The shape the prover sees: `ONE`, the circuit, and one constraint per public input.
    pub fn of<C: Circuit<Scalar>>(circuit: C) -> Result<Self, SynthesisError> {
        let mut cs = ShapeCounter { inputs: 1, ..Default::default() };
        circuit.synthesize(&mut cs)?;
        cs.constraints += cs.inputs;
        Ok(cs)
    }
}

impl ConstraintSystem<Scalar> for ShapeCounter {
    type Root = Self;
    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        Ok(Variable(Index::Aux(self.aux - 1)))
    }
    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        Ok(Variable(Index::Input(self.inputs - 1)))
    }
    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.constraints += 1;
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

/// The witness does not fit the recorded shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the circuit's shape changed: recorded {want_inputs} inputs and {want_aux} aux variables, the witness has {got_inputs} and {got_aux}")]
pub struct ShapeChanged {
    /// Recorded inputs.
    pub want_inputs: usize,
    /// Recorded aux variables.
    pub want_aux: usize,
    /// Witness inputs.
    pub got_inputs: usize,
    /// Witness aux variables.
    pub got_aux: usize,
}

/// Failure to synthesize a circuit.
#[derive(Debug, thiserror::Error)]
pub enum SynthesizeError {
    /// The circuit itself failed (missing assignment, unsatisfiable gadget input, …).
    #[error("circuit synthesis failed: {0}")]
    Circuit(#[from] SynthesisError),
    /// Host memory for the record could not be obtained.
    #[error(transparent)]
    Alloc(#[from] AllocError),
    /// A cached constraint structure does not fit this circuit.
    #[error(transparent)]
    ShapeChanged(#[from] ShapeChanged),
    /// A witness written in parallel parts failed or did not fit its layout.
    #[error(transparent)]
    Witness(#[from] crate::witness::WitnessError),
}

/// Synthesizes `circuit` the way bellperson's prover does: allocate `ONE`, run the circuit,
/// then add `input_i · 0 = 0` for every public input.
pub fn synthesize<C: Circuit<Scalar>>(circuit: C, alloc: SharedAllocator, hint: SizeHint) -> Result<Synthesized, SynthesizeError> {
    let mut cs = RecordingCs::new_in(alloc, hint)?;
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    for i in 0..cs.rec.input.len() {
        cs.enforce(|| "", |lc| lc + Variable(Index::Input(i)), |lc| lc, |lc| lc);
    }
    Ok(cs.finish()?)
}
