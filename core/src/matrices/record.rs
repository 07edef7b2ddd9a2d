//! Recording: the constraint system that keeps `A, B, C`, run on one thread or on several.
//!
//! A parallel recording runs the whole circuit once per part ([`ConstraintMatrices::record_share`];
//! the caller gives each its own thread: `cuzk-worker`'s `record_parallel`). The rows
//! (constraints, in the order `enforce` is called, the input constraints last) are cut into
//! chunks of a fixed number of rows, dealt out in turn: chunk `j` belongs to part
//! `j mod parts`. A part builds the linear combinations of its own rows only; for every other
//! row it only advances the row counter, without running the `enforce` closures, and an
//! allocation only counts (as in a sequential recording, value closures never run). Variable
//! indices come from counters every part advances alike, so a part's columns are already the
//! final ones. The merge concatenates the chunks in row order, remaps each part's coefficient
//! indices into one table and ORs the density bitmaps, which reproduces a sequential recording
//! byte for byte (see [`merge`]).
//!
//! Dealing chunks in turn, rather than giving each part one contiguous range of rows, needs no
//! count of the rows beforehand (a counting pass would cost as much as the skipping every part
//! does anyway), balances the parts whatever the circuit's rows cost, and never stops a circuit
//! half way, so an error a part returns is always the circuit's own.

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use super::{CoeffTable, ConstraintMatrices, Csr, Matrix};
use crate::alloc::{heap, AllocError};
use crate::density::DensityBitmap;
use crate::synth::{ShapeChanged, SynthesizeError};
use crate::witness::WitnessError;

/// Rows per chunk of a parallel recording: small enough to balance the parts, large enough
/// that a chunk's buffers are few, large allocations.
pub const DEFAULT_CHUNK_ROWS: usize = 1 << 14;

/// Which rows a recorder keeps: those of chunks `part`, `part + parts`, … of `chunk_rows` rows.
#[derive(Debug, Clone, Copy)]
struct Selection {
    part: usize,
    parts: usize,
    chunk_rows: usize,
}

impl Selection {
    /// Every row, in one chunk: a sequential recording.
    const ALL: Selection = Selection { part: 0, parts: 1, chunk_rows: usize::MAX };

    /// The chunk of `row` when this part keeps it.
    #[inline]
    fn keeps(&self, row: usize) -> Option<usize> {
        let chunk = row / self.chunk_rows;
        (chunk % self.parts == self.part).then_some(chunk)
    }
}

/// Consecutive recorded rows: rows `index * chunk_rows ..` of `A, B, C`.
#[derive(Debug)]
struct Chunk {
    /// Its index among all chunks.
    index: usize,
    a: Csr,
    b: Csr,
    c: Csr,
    /// Entries of the part's coefficient table once this chunk's rows are recorded.
    table_end: usize,
}

impl Chunk {
    /// An empty chunk with room for `like`'s entries (the previous chunk of the same part).
    fn new(index: usize, like: Option<&Chunk>) -> Self {
        let csr = |m: Option<&Csr>| {
            let n = m.map_or(0, |m| m.cols.len());
            Csr { row_start: Vec::with_capacity(m.map_or(0, |m| m.row_start.len())), cols: Vec::with_capacity(n), coeffs: Vec::with_capacity(n) }
        };
        Chunk { index, a: csr(like.map(|c| &c.a)), b: csr(like.map(|c| &c.b)), c: csr(like.map(|c| &c.c)), table_end: 0 }
    }
}

/// What one part recorded.
/// One share of a parallel recording ([`ConstraintMatrices::record_share`]), to be merged
/// with the others ([`ConstraintMatrices::merge_shares`]).
#[derive(Debug)]
pub struct RecordedShare {
    chunks: Vec<Chunk>,
    /// The part's coefficient table, in the order it first met each value.
    table: Vec<Scalar>,
    rows: usize,
    inputs: usize,
    aux: usize,
    densities: [DensityBitmap; 3],
}

/// Records the matrices while synthesizing: the rows `select` keeps, every allocation.
struct Recorder {
    select: Selection,
    /// Rows seen so far, kept or not.
    row: usize,
    chunks: Vec<Chunk>,
    table: CoeffTable,
    inputs: usize,
    aux: usize,
    a_aux_density: DensityBitmap,
    b_input_density: DensityBitmap,
    b_aux_density: DensityBitmap,
    error: Option<AllocError>,
}

impl Recorder {
    fn new(select: Selection) -> Self {
        let alloc = heap();
        Recorder {
            select,
            row: 0,
            chunks: Vec::new(),
            table: CoeffTable::new(),
            inputs: 0,
            aux: 0,
            a_aux_density: DensityBitmap::new_in(alloc.clone()),
            b_input_density: DensityBitmap::new_in(alloc.clone()),
            b_aux_density: DensityBitmap::new_in(alloc),
            error: None,
        }
    }

    fn note(&mut self, r: Result<(), AllocError>) {
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
    }

    /// Runs `circuit` as the prover would: `ONE`, the circuit, an input constraint per input.
    fn run<C: Circuit<Scalar>>(mut self, circuit: C) -> Result<RecordedShare, SynthesizeError> {
        self.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut self)?;
        for i in 0..self.inputs {
            self.enforce(|| "", |lc| lc + Variable::new_unchecked(Index::Input(i)), |lc| lc, |lc| lc);
        }
        if let Some(e) = self.error {
            return Err(e.into());
        }
        Ok(RecordedShare {
            chunks: self.chunks,
            table: self.table.values,
            rows: self.row,
            inputs: self.inputs,
            aux: self.aux,
            densities: [self.a_aux_density, self.b_input_density, self.b_aux_density],
        })
    }
}

impl ConstraintSystem<Scalar> for Recorder {
    type Root = Self;
    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        let r = self.a_aux_density.push().and_then(|_| self.b_aux_density.push());
        self.note(r);
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }
    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        let r = self.b_input_density.push();
        self.note(r);
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
    }
    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let row = self.row;
        self.row += 1;
        let Some(index) = self.select.keeps(row) else { return };
        if self.chunks.last().is_none_or(|c| c.index != index) {
            let chunk = Chunk::new(index, self.chunks.last());
            self.chunks.push(chunk);
        }
        let (la, lb, lc) = (a(LinearCombination::zero()), b(LinearCombination::zero()), c(LinearCombination::zero()));
        let Recorder { chunks, table, a_aux_density, b_input_density, b_aux_density, .. } = self;
        let Some(chunk) = chunks.last_mut() else { return };
        chunk.a.push_row(&la, table, |is_aux, i| {
            if is_aux {
                a_aux_density.set(i)
            }
        });
        chunk.b.push_row(&lb, table, |is_aux, i| if is_aux { b_aux_density.set(i) } else { b_input_density.set(i) });
        chunk.c.push_row(&lc, table, |_, _| {});
        chunk.table_end = table.values.len();
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

/// Parts that disagree on the circuit's structure: the circuit is not deterministic.
fn disagree(part: usize, detail: String) -> SynthesizeError {
    WitnessError::Layout { part, detail: format!("parallel recording: {detail}") }.into()
}

/// The matrices of the parts of one recording (in part order).
///
/// Byte-identical to a sequential recording: the rows are the chunks in index order, each
/// chunk's columns are already global. The coefficient table is the one sequential recording
/// builds, the values in the order of their first use (rows in order; in a row `A`, `B`, `C`,
/// each inputs before aux). Going through the chunks in order and appending each part's values
/// in the part's own first-use order, skipping values already in the table, reproduces it: a
/// value's first use overall lies in some chunk of some part, and no earlier chunk of that part
/// uses it, so the part met it first in that very chunk, after exactly the values it met
/// first there before it, which are also first uses overall or already in the table. Density
/// bits are set by the rows that use a variable, so the OR of the parts' bitmaps is the
/// sequential one. Each part is dropped once copied, so the merge needs the whole matrices once
/// plus the parts not yet copied, as far as the allocator returns freed memory to the system
/// (glibc's malloc keeps the parts' chunk buffers: about twice the matrices at peak).
fn merge(parts: Vec<RecordedShare>) -> Result<ConstraintMatrices, SynthesizeError> {
    let Some(first) = parts.first() else { return Err(disagree(0, "no parts".into())) };
    let (rows, inputs, aux) = (first.rows, first.inputs, first.aux);
    for (p, part) in parts.iter().enumerate() {
        if (part.inputs, part.aux) != (inputs, aux) {
            return Err(ShapeChanged { want_inputs: inputs, want_aux: aux, got_inputs: part.inputs, got_aux: part.aux }.into());
        }
        if part.rows != rows {
            return Err(disagree(p, format!("{} constraints where part 0 saw {rows}", part.rows)));
        }
    }
    let mut densities = Vec::with_capacity(3);
    for d in 0..3 {
        let len = first.densities[d].len();
        let mut words = first.densities[d].words().to_vec();
        for part in &parts[1..] {
            for (w, o) in words.iter_mut().zip(part.densities[d].words()) {
                *w |= o;
            }
        }
        densities.push(DensityBitmap::from_words(&words, len, heap())?.ok_or_else(|| disagree(0, "density bitmaps of different lengths".into()))?);
    }
    let [a_aux_density, b_input_density, b_aux_density]: [DensityBitmap; 3] = densities.try_into().map_err(|_| disagree(0, "densities".into()))?;

    let n_parts = parts.len();
    let chunks: usize = parts.iter().map(|p| p.chunks.len()).sum();
    let (mut a, mut b, mut c, coeffs) = if n_parts == 1 && chunks <= 1 {
        // A sequential recording: its one chunk is the matrices.
        let Some(part) = parts.into_iter().next() else { return Err(disagree(0, "no parts".into())) };
        match part.chunks.into_iter().next() {
            Some(ch) => (ch.a, ch.b, ch.c, part.table),
            None => (Csr::default(), Csr::default(), Csr::default(), part.table),
        }
    } else {
        // First the chunks in row order: where each one goes, and the coefficient table.
        let mut table = CoeffTable::new();
        let mut maps: Vec<Vec<u32>> = vec![Vec::new(); n_parts];
        let mut at = Vec::with_capacity(chunks);
        let (mut row, mut ends) = (0usize, [0usize; 3]);
        for j in 0..chunks {
            let p = j % n_parts;
            let Some(ch) = parts[p].chunks.get(j / n_parts) else { return Err(disagree(p, format!("chunk {j} is missing"))) };
            if ch.index != j {
                return Err(disagree(p, format!("chunk {} where chunk {j} was expected", ch.index)));
            }
            let map = &mut maps[p];
            for local in map.len()..ch.table_end {
                map.push(table.index(&parts[p].table[local]));
            }
            at.push((row, ends));
            row += ch.a.row_start.len().saturating_sub(1);
            for (e, m) in ends.iter_mut().zip([&ch.a, &ch.b, &ch.c]) {
                *e += m.cols.len();
            }
        }
        if row != rows {
            return Err(disagree(0, format!("chunks of {row} rows for {rows} constraints")));
        }
        // Then part after part, each dropped once copied: the destination is zeroed memory,
        // which the system maps only as it is written, so the whole matrices and the parts not
        // yet copied are all that is held.
        let offsets = if rows == 0 { 0 } else { rows + 1 };
        let mut dest: Vec<Csr> = ends.iter().map(|&n| Csr { row_start: vec![0; offsets], cols: vec![0; n], coeffs: vec![0; n] }).collect();
        for (p, part) in parts.into_iter().enumerate() {
            for (i, ch) in part.chunks.into_iter().enumerate() {
                let (row, bases) = at[i * n_parts + p];
                for ((d, m), base) in dest.iter_mut().zip([&ch.a, &ch.b, &ch.c]).zip(bases) {
                    let (n, local_rows) = (m.cols.len(), m.row_start.len().saturating_sub(1));
                    for (o, &l) in d.row_start[row + 1..row + 1 + local_rows].iter_mut().zip(&m.row_start[1..]) {
                        *o = l + base as u64;
                    }
                    d.cols[base..base + n].copy_from_slice(&m.cols);
                    for (o, &k) in d.coeffs[base..base + n].iter_mut().zip(&m.coeffs) {
                        *o = maps[p][k as usize];
                    }
                }
            }
        }
        let mut dest = dest.into_iter();
        let mut next = || dest.next().unwrap_or_default();
        (next(), next(), next(), table.values)
    };
    // Sequential recording leaves a matrix without rows without offsets.
    for m in [&mut a, &mut b, &mut c] {
        if rows == 0 {
            m.row_start.clear();
        }
    }
    let (a, b, c) = (Matrix::Owned(a), Matrix::Owned(b), Matrix::Owned(c));
    Ok(ConstraintMatrices { a, b, c, coeffs, num_inputs: inputs, num_aux: aux, a_aux_density, b_input_density, b_aux_density })
}

impl ConstraintMatrices {
    /// Runs `circuit` once (as the prover would, with `ONE` and the input constraints) and
    /// keeps its structure, on the calling thread.
    pub fn record<C: Circuit<Scalar>>(circuit: C) -> Result<Self, SynthesizeError> {
        merge(vec![Recorder::new(Selection::ALL).run(circuit)?])
    }

    /// Share `part` of `parts` of a parallel recording: runs the whole circuit and builds only
    /// the constraints of chunks `part`, `part + parts`, … of `chunk_rows` rows (at least 1).
    /// The caller runs the shares where it likes (one thread each: `cuzk-worker`'s
    /// `record_parallel`) and merges them; an error is the circuit's own, as `record` returns it.
    pub fn record_share<C: Circuit<Scalar>>(circuit: C, part: usize, parts: usize, chunk_rows: usize) -> Result<RecordedShare, SynthesizeError> {
        Recorder::new(Selection { part, parts: parts.max(1), chunk_rows: chunk_rows.max(1) }).run(circuit)
    }

    /// The matrices from all `parts` shares of one circuit ([`ConstraintMatrices::record_share`]
    /// `0..parts`, in any order): byte-identical to [`ConstraintMatrices::record`].
    pub fn merge_shares(mut shares: Vec<RecordedShare>) -> Result<Self, SynthesizeError> {
        shares.sort_by_key(|p| p.chunks.first().map_or(usize::MAX, |c| c.index));
        merge(shares)
    }

    /// [`ConstraintMatrices::record_share`] for every share, one after the other on the calling
    /// thread, merged: what a parallel recording computes (for tests of the merge).
    pub fn record_in_shares<C: Circuit<Scalar> + Clone>(circuit: &C, parts: usize, chunk_rows: usize) -> Result<Self, SynthesizeError> {
        Self::merge_shares_one_by_one(parts, |p, parts| Self::record_share(circuit.clone(), p, parts, chunk_rows))
    }

    /// `share(p, parts)` for every share `p` of `parts` (at least 1), one after the other,
    /// merged.
    pub(crate) fn merge_shares_one_by_one(
        parts: usize,
        mut share: impl FnMut(usize, usize) -> Result<RecordedShare, SynthesizeError>,
    ) -> Result<Self, SynthesizeError> {
        let parts = parts.max(1);
        let shares = (0..parts).map(|p| share(p, parts)).collect::<Result<Vec<_>, _>>()?;
        Self::merge_shares(shares)
    }
}
