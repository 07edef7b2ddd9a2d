//! Parallel witnesses of Filecoin partitions ([`ParallelWitness`]).
//!
//! A PoRep partition (`StackedCircuit`) synthesizes a header (the replica id and its bits, the
//! commitments, `comm_r = H(comm_c, comm_r_last)`) and then one proof per challenge that uses
//! only the header's variables; a SnapDeals partition likewise (its header ends where the first
//! challenge's `get_challenge_high_bits` starts). Their variables are therefore the header's,
//! then one run per challenge, each as long as the others. A PoRep header is written by
//! Filecoin's own gadgets in a [`SegmentCs`], stopped at the first challenge's namespace; a
//! SnapDeals header (its apex tree's SHA-256 hashes: most of the partition's single-threaded
//! work through the gadgets) natively, each hash on its own thread; each challenge is written
//! natively on its own thread (`porep::witness`, `snap::witness`), so the assignment is the
//! sequential one index for index. A layout that does not divide so (or a part that does not
//! fill its window exactly) is written sequentially by the gadgets instead. The PoSt kinds are
//! written sequentially.

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use cuzk_core::witness::{windows, SegmentCs, WitnessError};
use cuzk_gadget_witness::Assignment;
use rayon::prelude::*;

/// What a circuit allocates and enforces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CircuitSize {
    /// Constraints.
    pub constraints: usize,
    /// Inputs, with `ONE`.
    pub inputs: usize,
    /// Aux variables.
    pub aux: usize,
}

/// The size of `circuit`, counted by running its gadgets without values.
pub(crate) fn count<C: Circuit<Scalar>>(circuit: C) -> Result<CircuitSize, SynthesisError> {
    let mut c = HeaderCs::default();
    circuit.synthesize(&mut c)?;
    Ok(CircuitSize { constraints: c.constraints, inputs: c.inputs + 1, aux: c.aux })
}

/// Runs a circuit, counting what it allocates and enforces, up to a root-level namespace
/// (`stop_at`: where the circuit starts its first challenge; `None`: to its end) and stops it
/// there; over a [`SegmentCs`], also writes the values.
#[derive(Debug, Default)]
struct HeaderCs<'a> {
    stop_at: Option<&'a str>,
    writer: Option<SegmentCs<'a>>,
    aux: usize,
    inputs: usize,
    constraints: usize,
    depth: usize,
    header: Option<(usize, usize)>,
}

impl ConstraintSystem<Scalar> for HeaderCs<'_> {
    type Root = Self;
    fn alloc<F, A, AR>(&mut self, name: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if self.header.is_some() {
            return Err(SynthesisError::Unsatisfiable); // past the header: stop
        }
        self.aux += 1;
        match &mut self.writer {
            Some(w) => w.alloc(name, f),
            None => Ok(Variable::new_unchecked(Index::Aux(self.aux - 1))),
        }
    }
    fn alloc_input<F, A, AR>(&mut self, name: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if self.header.is_some() {
            return Err(SynthesisError::Unsatisfiable);
        }
        self.inputs += 1;
        match &mut self.writer {
            Some(w) => w.alloc_input(name, f),
            None => Ok(Variable::new_unchecked(Index::Input(self.inputs))),
        }
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
    fn push_namespace<NR, N>(&mut self, name: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        if self.depth == 0 && self.header.is_none() && self.stop_at.is_some_and(|stop| name().into() == stop) {
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

/// The aux variables and inputs (without `ONE`) a circuit allocates before the root-level
/// namespace `stop_at` (where it starts its first challenge), measured without computing any
/// value; `None` when it never reaches it.
pub(crate) fn header<C: Circuit<Scalar>>(circuit: C, stop_at: &str) -> Option<(usize, usize)> {
    let mut probe = HeaderCs { stop_at: Some(stop_at), ..HeaderCs::default() };
    let _ = circuit.synthesize(&mut probe); // stopped past the header
    probe.header
}

/// The parallel witness of a partition with native challenges: the header (`header` aux
/// variables and inputs without `ONE`) written by `write_header` into its windows, then `n`
/// equal runs, run `i` written by `challenge(i, window)` on its own thread. `Ok(false)` when the
/// shape does not split so (nothing is written then).
pub(crate) fn native_challenges(
    header: (usize, usize),
    write_header: impl FnOnce(&mut [Scalar], &mut [Scalar]) -> Result<(), WitnessError>,
    n: usize,
    challenge: impl Fn(usize, &mut Assignment<'_>) -> Result<(), WitnessError> + Sync,
    input: &mut [Scalar],
    aux: &mut [Scalar],
) -> Result<bool, WitnessError> {
    let (h_aux, h_in) = header;
    let inputs = input.len().saturating_sub(1);
    if n < 1 || aux.len() < h_aux || inputs < h_in || !(aux.len() - h_aux).is_multiple_of(n) || !(inputs - h_in).is_multiple_of(n) {
        return Ok(false);
    }
    let (c_aux, c_in) = ((aux.len() - h_aux) / n, (inputs - h_in) / n);
    let lens = |h: usize, c: usize| std::iter::once(h).chain(std::iter::repeat_n(c, n)).collect::<Vec<_>>();
    let mut aux_windows = windows(aux, &lens(h_aux, c_aux));
    let mut input_windows = windows(&mut input[1..], &lens(h_in, c_in));
    let (header_aux, header_input) = (aux_windows.remove(0), input_windows.remove(0));
    write_header(header_aux, header_input)?;
    aux_windows.into_par_iter().zip(input_windows).enumerate().try_for_each(|(i, (aux, input))| {
        let mut a = Assignment::new(aux, input);
        challenge(i, &mut a)?;
        a.finish().map_err(|e| WitnessError::Layout { part: i + 1, detail: e.to_string() })
    })?;
    Ok(true)
}

/// A header writer for [`native_challenges`]: `circuit`'s own gadgets, stopped at the
/// root-level namespace `stop_at` where its first challenge starts, which must allocate exactly
/// `header` (aux, inputs without `ONE`).
pub(crate) fn gadget_header<'a, C: Circuit<Scalar> + 'a>(
    circuit: C,
    stop_at: &'a str,
    header: (usize, usize),
) -> impl FnOnce(&mut [Scalar], &mut [Scalar]) -> Result<(), WitnessError> + 'a {
    move |aux, input| {
        let mut cs = HeaderCs { stop_at: Some(stop_at), writer: Some(SegmentCs::new(aux, 0, input, 1)), ..HeaderCs::default() };
        let ran = circuit.synthesize(&mut cs);
        if cs.header != Some(header) {
            return Err(WitnessError::Layout { part: 0, detail: format!("the header allocated {:?}, the shape says {header:?}", cs.header) });
        }
        drop(ran); // stopped at the first challenge, as intended
        match cs.writer.take() {
            Some(writer) => writer.finish(0),
            None => Ok(()),
        }
    }
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
