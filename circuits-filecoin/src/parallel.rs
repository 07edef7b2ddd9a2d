//! Parallel witnesses of Filecoin partitions ([`ParallelWitness`]).
//!
//! A PoRep partition (`StackedCircuit`) synthesizes a header (the replica id and its bits, the
//! commitments, `comm_r = H(comm_c, comm_r_last)`) and then one proof per challenge that uses
//! only the header's variables. Its variables are therefore the header's, then one run per
//! challenge, each as long as the others. Each challenge is written on its own thread by
//! Filecoin's circuit of that challenge alone: in a [`SegmentCs`] that imports the header (every
//! header allocation returns the header's variable; the first part owns the header and writes
//! it), so the assignment is the sequential one index for index. A layout that does not divide
//! so (or a part that does not fill its window exactly) is written sequentially instead.
//! The other kinds are written sequentially into the assignment.

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use cuzk_core::witness::{windows, SegmentCs, WitnessError};
use rayon::prelude::*;

/// Counts the variables a circuit allocates before it enters the root-level namespace
/// `challenge_0` (where `StackedCircuit` starts its first challenge), then stops it.
#[derive(Debug, Default)]
struct HeaderProbe {
    aux: usize,
    inputs: usize,
    depth: usize,
    header: Option<(usize, usize)>,
}

impl ConstraintSystem<Scalar> for HeaderProbe {
    type Root = Self;
    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if self.header.is_some() {
            return Err(SynthesisError::Unsatisfiable); // past the header: stop
        }
        self.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }
    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if self.header.is_some() {
            return Err(SynthesisError::Unsatisfiable);
        }
        self.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.inputs)))
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
    fn push_namespace<NR, N>(&mut self, name: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        if self.depth == 0 && self.header.is_none() && name().into() == "challenge_0" {
            self.header = Some((self.aux, self.inputs));
        }
        self.depth += 1;
    }
    fn pop_namespace(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }
    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// The aux variables and inputs (without `ONE`) a PoRep circuit allocates before its first
/// challenge, measured without computing any value; `None` when it never reaches one.
pub(crate) fn porep_header<C: Circuit<Scalar>>(one_challenge: C) -> Option<(usize, usize)> {
    let mut probe = HeaderProbe::default();
    let _ = one_challenge.synthesize(&mut probe); // stopped past the header
    probe.header
}

/// Writes the assignment of `circuit` into `input` (`input[0]` is `ONE`) and `aux` on the
/// calling thread, through a [`SegmentCs`] over all of it: the values sequential synthesis
/// assigns, with the windows checked to be filled exactly.
pub(crate) fn sequential<C: Circuit<Scalar>>(circuit: C, input: &mut [Scalar], aux: &mut [Scalar]) -> Result<(), WitnessError> {
    let Some((_, rest)) = input.split_first_mut() else {
        return Err(WitnessError::Layout { part: 0, detail: "no room for ONE".into() });
    };
    let mut cs = SegmentCs::new(aux, 0, rest, 1);
    let ran = circuit.synthesize(&mut cs);
    cs.finish_after(0, ran)
}

/// The parallel witness of a circuit made of a header and `n` challenges: `challenge(i)` is the
/// circuit of the header and challenge `i` alone, `header` what the header allocates (aux,
/// inputs without `ONE`). `Ok(false)` when the shape does not split into equal runs (nothing
/// is written then).
pub(crate) fn by_challenges<C: Circuit<Scalar>>(
    n: usize,
    header: (usize, usize),
    challenge: impl Fn(usize) -> Result<C, SynthesisError> + Sync,
    input: &mut [Scalar],
    aux: &mut [Scalar],
) -> Result<bool, WitnessError> {
    let (h_aux, h_in) = header;
    let inputs = input.len().saturating_sub(1);
    if n < 2 || aux.len() < h_aux || inputs < h_in || !(aux.len() - h_aux).is_multiple_of(n) || !(inputs - h_in).is_multiple_of(n) {
        return Ok(false);
    }
    let (c_aux, c_in) = ((aux.len() - h_aux) / n, (inputs - h_in) / n);
    let lens = |h: usize, c: usize| (0..n).map(|i| if i == 0 { h + c } else { c }).collect::<Vec<_>>();
    let aux_windows = windows(aux, &lens(h_aux, c_aux));
    let input_windows = windows(&mut input[1..], &lens(h_in, c_in));
    aux_windows.into_par_iter().zip(input_windows).enumerate().try_for_each(|(i, (aux, input))| {
        let (aux_base, input_base) = if i == 0 { (0, 1) } else { (h_aux + i * c_aux, 1 + h_in + i * c_in) };
        let mut cs = SegmentCs::new(aux, aux_base, input, input_base);
        if i > 0 {
            cs.import((0..h_aux).map(|v| Variable::new_unchecked(Index::Aux(v))));
            cs.import_inputs((1..=h_in).map(|v| Variable::new_unchecked(Index::Input(v))));
        }
        let ran = challenge(i).and_then(|c| c.synthesize(&mut cs));
        cs.finish_after(i, ran)
    })?;
    Ok(true)
}
