//! Recording a circuit whose constraints repeat one block (a Filecoin partition's challenges,
//! a WindowPoSt partition's sectors): the header and the first two blocks are recorded, and
//! when the second block is the first shifted by its own variables, the remaining blocks are
//! written as further shifted copies instead of being synthesized.
//!
//! A block starts where the circuit opens the namespace [`Repeats::marker`] names for it, at
//! [`Repeats::depth`], and ends where the next one starts; the last block ends with the
//! circuit (nothing may follow it). Within a block, a column is the block's own (an aux
//! variable or input allocated since the block started, which the next block has shifted by
//! the block's allocation counts) or an earlier one (the header's, or `ONE`), which every block
//! shares, or which [`Repeats::header_aux`] maps to the header variable block `k` reads instead
//! (the map is the circuit's promise, checked on block 1). The second block must be exactly
//! the first with its own columns shifted and the same coefficients, row for row, or nothing
//! is built: [`ConstraintMatrices::record_repeated`]
//! answers `None` and the caller records the whole circuit. Byte-identical to
//! [`ConstraintMatrices::record`] for circuits that keep the contract: blocks after the second
//! add no coefficient, so the table's first-seen order is the sequential one.

use std::sync::{Arc, Mutex};

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;

use super::{ConstraintMatrices, Csr, CsrView, Matrix, RecordedShare, AUX, COEFF_ONE};
use crate::alloc::heap;
use crate::density::DensityBitmap;
use crate::synth::SynthesizeError;
use crate::witness::Repeats;

/// Row, next aux index and next input index where a block starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Mark {
    row: usize,
    aux: usize,
    input: usize,
}

/// What the probe saw: the starts of blocks 0, 1 and 2 (the end of block 1).
#[derive(Debug, Default)]
struct Marks {
    starts: Vec<Mark>,
    stopped: bool,
}

/// Forwards to the recorder, marking the block starts; stops the circuit at block 2's start.
struct Probe<'a, CS: ConstraintSystem<Scalar>> {
    cs: &'a mut CS,
    repeats: &'a Repeats,
    marks: &'a Mutex<Marks>,
    depth: usize,
    at: Mark,
}

impl<CS: ConstraintSystem<Scalar>> Probe<'_, CS> {
    fn stopped(&self) -> bool {
        self.marks.lock().unwrap_or_else(|e| e.into_inner()).stopped
    }
}

impl<CS: ConstraintSystem<Scalar>> ConstraintSystem<Scalar> for Probe<'_, CS> {
    type Root = Self;
    fn alloc<F, A, AR>(&mut self, name: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if self.stopped() {
            return Err(SynthesisError::Unsatisfiable);
        }
        let v = self.cs.alloc(name, f)?;
        if let Index::Aux(i) = v.get_unchecked() {
            self.at.aux = i + 1;
        }
        Ok(v)
    }
    fn alloc_input<F, A, AR>(&mut self, name: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if self.stopped() {
            return Err(SynthesisError::Unsatisfiable);
        }
        let v = self.cs.alloc_input(name, f)?;
        if let Index::Input(i) = v.get_unchecked() {
            self.at.input = i + 1;
        }
        Ok(v)
    }
    fn enforce<A, AR, LA, LB, LC>(&mut self, name: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        if self.stopped() {
            return;
        }
        self.cs.enforce(name, a, b, c);
        self.at.row += 1;
    }
    fn push_namespace<NR, N>(&mut self, name: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        if self.depth == self.repeats.depth {
            let mut marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
            let k = marks.starts.len();
            if !marks.stopped && k < 3 && name().into() == (self.repeats.marker)(k) {
                marks.starts.push(self.at);
                marks.stopped = k == 2;
            }
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

/// The circuit up to the start of its third block.
struct Truncated<'a, C> {
    circuit: C,
    repeats: &'a Repeats,
    marks: Arc<Mutex<Marks>>,
}

impl<C: Circuit<Scalar>> Circuit<Scalar> for Truncated<'_, C> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        // `ONE` is input 0, allocated before the circuit runs.
        let mut probe = Probe { cs, repeats: self.repeats, marks: &self.marks, depth: 0, at: Mark { row: 0, aux: 0, input: 1 } };
        let result = self.circuit.synthesize(&mut probe);
        let marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
        match result {
            Err(_) if marks.stopped => Ok(()),
            // Ended before its third block: fewer blocks than promised (the caller sees that
            // not all three starts were marked).
            Ok(()) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// A column of block 1 from the same column of block 0: its own columns shifted by `step`, a
/// header aux column as `header` maps it (`None`: a column past the header, which makes the
/// block no repeat), the header's inputs and `ONE` as they are.
#[inline]
fn shifted(col: u32, first: Mark, step: Mark, header: impl Fn(usize) -> usize) -> Option<u32> {
    if col & AUX != 0 {
        let i = (col & !AUX) as usize;
        if i >= first.aux {
            return Some(col + step.aux as u32);
        }
        let to = header(i);
        return (to < first.aux).then_some(AUX | to as u32);
    } else if col as usize >= first.input {
        return Some(col + step.input as u32);
    }
    Some(col)
}

/// Block `k`'s header aux column where block 0 reads `i`.
fn header_of(repeats: &Repeats, k: usize) -> impl Fn(usize) -> usize + '_ {
    move |i| repeats.header_aux.as_ref().map_or(i, |map| map(k, i))
}

/// Whether rows `block0 + j` and `block1 + j` (`j < len`) of `m` are the same up to the shift.
fn repeats_in(m: &CsrView<'_>, block0: usize, block1: usize, len: usize, first: Mark, step: Mark, repeats: &Repeats) -> bool {
    (0..len).all(|j| {
        let (r0, r1) = (block0 + j, block1 + j);
        let e0 = m.row_start[r0] as usize..m.row_start[r0 + 1] as usize;
        let e1 = m.row_start[r1] as usize..m.row_start[r1 + 1] as usize;
        e0.len() == e1.len()
            && m.coeffs[e0.clone()] == m.coeffs[e1.clone()]
            && m.cols[e0].iter().zip(&m.cols[e1]).all(|(&c0, &c1)| shifted(c0, first, step, header_of(repeats, 1)) == Some(c1))
    })
}

/// Where the blocks are: the header's rows, one block's rows, the blocks, the first block's
/// start and the step from one block to the next.
#[derive(Debug, Clone, Copy)]
struct Layout {
    header: usize,
    block: usize,
    count: usize,
    first: Mark,
    step: Mark,
}

/// `m`'s header rows, then `count` copies of its first block, copy `k` shifted `k` times (its
/// header columns as `repeats` maps them), then one row per input as `input_row` gives it (its
/// coefficient index on the input, or none). `None` when a mapped column is not the header's.
fn expand(m: &CsrView<'_>, l: Layout, repeats: &Repeats, inputs: usize, input_row: impl Fn(usize) -> Option<u32>) -> Option<Csr> {
    let Layout { header, block, count, first, step } = l;
    let entries = |r: std::ops::Range<usize>| m.row_start[r.end] as usize - m.row_start[r.start] as usize;
    let (head, body) = (entries(0..header), entries(header..header + block));
    let total = head + count * body + inputs;
    let mut out =
        Csr { row_start: Vec::with_capacity(header + count * block + inputs + 1), cols: Vec::with_capacity(total), coeffs: Vec::with_capacity(total) };
    out.row_start.extend_from_slice(&m.row_start[..=header]);
    out.cols.extend_from_slice(&m.cols[..head]);
    out.coeffs.extend_from_slice(&m.coeffs[..head]);
    let base = m.row_start[header] as usize;
    let block_cols = &m.cols[base..base + body];
    let block_coeffs = &m.coeffs[base..base + body];
    for k in 0..count {
        let by = Mark { row: 0, aux: k * step.aux, input: k * step.input };
        let start = out.cols.len() as u64 - base as u64;
        let reads = header_of(repeats, k);
        for &c in block_cols {
            out.cols.push(shifted(c, first, by, &reads)?);
        }
        out.coeffs.extend_from_slice(block_coeffs);
        out.row_start.extend(m.row_start[header + 1..=header + block].iter().map(|&o| o + start));
    }
    for i in 0..inputs {
        if let Some(coeff) = input_row(i) {
            out.cols.push(i as u32);
            out.coeffs.push(coeff);
        }
        out.row_start.push(out.cols.len() as u64);
    }
    Some(out)
}

/// One share of the recording of a repeating circuit's header and first two blocks
/// ([`ConstraintMatrices::record_repeated_share`]), with where the blocks started.
#[derive(Debug)]
pub struct RepeatedShare {
    share: RecordedShare,
    starts: Vec<Mark>,
}

impl ConstraintMatrices {
    /// Records a circuit that repeats one block `repeats.count` times (see the module
    /// documentation for the contract): the header and two blocks are synthesized, the rest
    /// copied. `None` when the circuit does not repeat as described (markers missing, the
    /// second block not the first shifted, or fewer than three blocks): record it whole then.
    /// [`ConstraintMatrices::record_repeated_share`] and
    /// [`ConstraintMatrices::from_repeated_shares`] do the same on several threads.
    pub fn record_repeated<C: Circuit<Scalar>>(circuit: C, repeats: &Repeats) -> Result<Option<Self>, SynthesizeError> {
        Self::record_repeated_from(repeats, || Ok(vec![Self::record_repeated_share(circuit, repeats, 0, 1, super::DEFAULT_CHUNK_ROWS)?]))
    }

    /// [`ConstraintMatrices::record_repeated`] from the shares `shares` records (every share of
    /// one circuit, [`ConstraintMatrices::record_repeated_share`]); with fewer than three blocks
    /// there is nothing to copy, and `None` comes without recording anything.
    pub fn record_repeated_from(
        repeats: &Repeats,
        shares: impl FnOnce() -> Result<Vec<RepeatedShare>, SynthesizeError>,
    ) -> Result<Option<Self>, SynthesizeError> {
        if repeats.count < 3 {
            return Ok(None);
        }
        Self::from_repeated_shares(shares()?, repeats)
    }

    /// Share `part` of `parts` of the recording [`ConstraintMatrices::record_repeated`] makes
    /// (the header and the first two blocks; chunks of `chunk_rows` rows, as
    /// [`ConstraintMatrices::record_share`] takes them): each share runs the circuit that far
    /// and keeps its own rows, so `parts` threads share the recording.
    pub fn record_repeated_share<C: Circuit<Scalar>>(
        circuit: C,
        repeats: &Repeats,
        part: usize,
        parts: usize,
        chunk_rows: usize,
    ) -> Result<RepeatedShare, SynthesizeError> {
        let marks = Arc::new(Mutex::new(Marks::default()));
        let share = ConstraintMatrices::record_share(Truncated { circuit, repeats, marks: marks.clone() }, part, parts, chunk_rows)?;
        let starts = std::mem::take(&mut marks.lock().unwrap_or_else(|e| e.into_inner()).starts);
        Ok(RepeatedShare { share, starts })
    }

    /// The matrices from every share `0..parts` of [`ConstraintMatrices::record_repeated_share`]
    /// (in any order): what [`ConstraintMatrices::record_repeated`] gives, byte for byte, and
    /// `None` as it answers `None` (also when the shares saw different block starts).
    pub fn from_repeated_shares(shares: Vec<RepeatedShare>, repeats: &Repeats) -> Result<Option<Self>, SynthesizeError> {
        let Some(starts) = shares.first().map(|s| s.starts.clone()) else { return Ok(None) };
        if repeats.count < 3 || shares.iter().any(|s| s.starts != starts) {
            return Ok(None);
        }
        let part = ConstraintMatrices::merge_shares(shares.into_iter().map(|s| s.share).collect())?;
        let [first, second, third] = starts[..] else { return Ok(None) };
        let step = Mark { row: second.row - first.row, aux: second.aux - first.aux, input: second.input - first.input };
        if third != (Mark { row: second.row + step.row, aux: second.aux + step.aux, input: second.input + step.input }) || step.row == 0 {
            return Ok(None);
        }
        if !part.views().iter().all(|m| repeats_in(m, first.row, second.row, step.row, first, step, repeats)) {
            return Ok(None);
        }
        let inputs = first.input + repeats.count * step.input;
        let aux = first.aux + repeats.count * step.aux;
        let layout = Layout { header: first.row, block: step.row, count: repeats.count, first, step };
        let [pa, pb, pc] = part.views();
        let (Some(a), Some(b), Some(c)) = (
            expand(&pa, layout, repeats, inputs, |_| Some(COEFF_ONE)),
            expand(&pb, layout, repeats, inputs, |_| None),
            expand(&pc, layout, repeats, inputs, |_| None),
        ) else {
            return Ok(None);
        };
        let alloc = heap();
        let (mut a_aux, mut b_input, mut b_aux) = (DensityBitmap::new_in(alloc.clone()), DensityBitmap::new_in(alloc.clone()), DensityBitmap::new_in(alloc));
        for _ in 0..aux {
            a_aux.push()?;
            b_aux.push()?;
        }
        for _ in 0..inputs {
            b_input.push()?;
        }
        for &col in &a.cols {
            if col & AUX != 0 {
                a_aux.set((col & !AUX) as usize);
            }
        }
        for &col in &b.cols {
            if col & AUX != 0 {
                b_aux.set((col & !AUX) as usize);
            } else {
                b_input.set(col as usize);
            }
        }
        Ok(Some(ConstraintMatrices {
            a: Matrix::Owned(a),
            b: Matrix::Owned(b),
            c: Matrix::Owned(c),
            coeffs: part.coeffs,
            num_inputs: inputs,
            num_aux: aux,
            a_aux_density: a_aux,
            b_input_density: b_input,
            b_aux_density: b_aux,
        }))
    }
}
