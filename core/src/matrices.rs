//! Recorded constraint matrices: a synthesis cache.
//!
//! The constraint matrices of a circuit are the same for every proof of that circuit; only the
//! witness changes. [`ConstraintMatrices::record`] runs the circuit once and keeps `A, B, C`
//! in compressed sparse rows (with a table of distinct coefficients, so an entry is 8 bytes)
//! together with the density bitmaps, which depend only on the structure. Later proofs run
//! the circuit in a [`WitnessCs`], which only stores assignments and never builds the linear
//! combinations passed to `enforce`, then compute `a, b, c` as sparse matrix–vector products
//! ([`ConstraintMatrices::evaluate_rows`]) that a caller can split across threads.
//! `cuzk-worker`'s `record_parallel` records on several threads, with the same result.
//!
//! The result is exactly what [`crate::synth::synthesize`] produces.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::{Field, PrimeField};

use crate::alloc::{heap, AllocError, PinnedVec, SharedAllocator};
use crate::density::DensityBitmap;
use crate::synth::{ShapeChanged, SizeHint, SynthesizeError, Synthesized};
use crate::witness::ParallelWitness;

mod file;
mod record;
mod repeat;
pub use file::MatricesFileError;
pub use record::{RecordedShare, DEFAULT_CHUNK_ROWS};
pub use repeat::RepeatedShare;
// Declared beside `ParallelWitness`, which names it; kept here under its old path too.
pub use crate::witness::Repeats;

/// Flag marking an aux variable in a column index (inputs have it clear).
pub const AUX: u32 = 1 << 31;
/// Coefficient-table index of `1` (a fast path: no multiplication).
pub const COEFF_ONE: u32 = 0;
/// Coefficient-table index of `−1` (a fast path: a subtraction).
pub const COEFF_MINUS_ONE: u32 = 1;

/// One sparse matrix in compressed rows.
#[derive(Debug, Clone, Default)]
struct Csr {
    /// `row_start[r]..row_start[r + 1]` are row `r`'s entries.
    row_start: Vec<u64>,
    /// Column: input index, or aux index with [`AUX`] set.
    cols: Vec<u32>,
    /// Index into the coefficient table.
    coeffs: Vec<u32>,
}

impl Csr {
    fn push_row(&mut self, lc: &LinearCombination<Scalar>, table: &mut CoeffTable, mut mark: impl FnMut(bool, usize)) {
        if self.row_start.is_empty() {
            self.row_start.push(0);
        }
        for (&i, c) in lc.iter_inputs() {
            if !c.is_zero_vartime() {
                self.cols.push(i as u32);
                self.coeffs.push(table.index(c));
                mark(false, i);
            }
        }
        for (&i, c) in lc.iter_aux() {
            if !c.is_zero_vartime() {
                self.cols.push(i as u32 | AUX);
                self.coeffs.push(table.index(c));
                mark(true, i);
            }
        }
        self.row_start.push(self.cols.len() as u64);
    }

    fn view(&self) -> CsrView<'_> {
        CsrView { row_start: &self.row_start, cols: &self.cols, coeffs: &self.coeffs }
    }
}

/// Bytes a matrix can be read from in place: a file's image (a read-only map of it, in the
/// worker), shared by the matrices that point into it and kept alive by them.
#[derive(Clone)]
pub struct FileImage(pub Arc<dyn AsRef<[u8]> + Send + Sync>);

impl FileImage {
    fn bytes(&self) -> &[u8] {
        (*self.0).as_ref()
    }
}

impl std::fmt::Debug for FileImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FileImage({} bytes)", self.bytes().len())
    }
}

/// Where one matrix's arrays live.
#[derive(Debug, Clone)]
enum Matrix {
    /// Built in memory: recorded, or decoded from bytes that cannot be read in place.
    Owned(Csr),
    /// In place in a checked file image (little-endian arrays, each 8-byte aligned): the
    /// byte ranges of the row offsets (u64), the columns and the coefficient indices (u32).
    InImage { image: FileImage, row_start: Range<usize>, cols: Range<usize>, coeffs: Range<usize> },
}

impl Matrix {
    fn view(&self) -> CsrView<'_> {
        match self {
            Matrix::Owned(m) => m.view(),
            Matrix::InImage { image, row_start, cols, coeffs } => {
                let b = image.bytes();
                // The ranges were checked aligned and in bounds when the image was read.
                CsrView {
                    row_start: bytemuck::cast_slice(&b[row_start.clone()]),
                    cols: bytemuck::cast_slice(&b[cols.clone()]),
                    coeffs: bytemuck::cast_slice(&b[coeffs.clone()]),
                }
            }
        }
    }
}

impl CsrView<'_> {
    #[inline]
    fn eval(&self, row: usize, table: &[Scalar], input: &[Scalar], aux: &[Scalar]) -> Scalar {
        let (lo, hi) = (self.row_start[row] as usize, self.row_start[row + 1] as usize);
        let mut acc = Scalar::ZERO;
        for (&col, &k) in self.cols[lo..hi].iter().zip(&self.coeffs[lo..hi]) {
            let x = if col & AUX != 0 { aux[(col & !AUX) as usize] } else { input[col as usize] };
            match k {
                COEFF_ONE => acc += x,
                COEFF_MINUS_ONE => acc -= x,
                _ => acc += x * table[k as usize],
            }
        }
        acc
    }
}

/// One of `A, B, C` as a backend uploads it: row `r`'s entries are
/// `row_start[r]..row_start[r + 1]`; an entry is a column (an input index, or an aux index with
/// [`AUX`] set) and an index into [`ConstraintMatrices::coefficients`] ([`COEFF_ONE`] and
/// [`COEFF_MINUS_ONE`] are `1` and `−1`). A matrix without constraints has an empty
/// `row_start`.
#[derive(Debug, Clone, Copy)]
pub struct CsrView<'a> {
    /// Row offsets, one more than the rows.
    pub row_start: &'a [u64],
    /// Column of each entry.
    pub cols: &'a [u32],
    /// Coefficient-table index of each entry.
    pub coeffs: &'a [u32],
}

/// Checks one matrix of `rows` rows over `inputs` inputs and `aux` aux variables with a table of
/// `table` coefficients: offsets start at 0, never decrease and end at the entries; every column
/// and coefficient index is in range. Returns the entries.
pub fn check_csr(v: &CsrView<'_>, rows: usize, inputs: usize, aux: usize, table: usize) -> Result<usize, String> {
    let entries = v.cols.len();
    if v.coeffs.len() != entries {
        return Err(format!("{entries} columns but {} coefficient indices", v.coeffs.len()));
    }
    if rows == 0 {
        if entries != 0 || v.row_start.len() > 1 || v.row_start.first().is_some_and(|&o| o != 0) {
            return Err(format!("no rows but {} offsets and {entries} entries", v.row_start.len()));
        }
        return Ok(0);
    }
    if v.row_start.len() != rows + 1 {
        return Err(format!("{} offsets for {rows} rows", v.row_start.len()));
    }
    if v.row_start[0] != 0 || v.row_start[rows] != entries as u64 {
        return Err(format!("offsets run from {} to {}, entries from 0 to {entries}", v.row_start[0], v.row_start[rows]));
    }
    if let Some(r) = v.row_start.windows(2).position(|w| w[1] < w[0]) {
        return Err(format!("offsets decrease at row {r}"));
    }
    if let Some(e) = v.cols.iter().position(|&c| if c & AUX != 0 { (c & !AUX) as usize >= aux } else { c as usize >= inputs }) {
        return Err(format!("entry {e}: column {:#x} out of range ({inputs} inputs, {aux} aux)", v.cols[e]));
    }
    if let Some(e) = v.coeffs.iter().position(|&k| k as usize >= table) {
        return Err(format!("entry {e}: coefficient {} of a table of {table}", v.coeffs[e]));
    }
    Ok(entries)
}

/// A variable of a constraint: a public input (`Input(0)` is `ONE`) or an aux variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// Public input `i`.
    Input(usize),
    /// Aux variable `i`.
    Aux(usize),
}

/// Distinct coefficients, deduplicated by their canonical bytes.
#[derive(Debug)]
struct CoeffTable {
    values: Vec<Scalar>,
    index: HashMap<[u8; 32], u32>,
}

impl CoeffTable {
    fn new() -> Self {
        let mut t = CoeffTable { values: Vec::new(), index: HashMap::new() };
        t.index(&Scalar::ONE);
        t.index(&-Scalar::ONE);
        t
    }

    fn index(&mut self, c: &Scalar) -> u32 {
        let key = c.to_repr();
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.values.len() as u32;
        self.values.push(*c);
        self.index.insert(key, i);
        i
    }
}

/// The recorded structure of one circuit shape.
#[derive(Debug, Clone)]
pub struct ConstraintMatrices {
    a: Matrix,
    b: Matrix,
    c: Matrix,
    coeffs: Vec<Scalar>,
    /// Public inputs, `ONE` included.
    pub num_inputs: usize,
    /// Aux variables.
    pub num_aux: usize,
    a_aux_density: DensityBitmap,
    b_input_density: DensityBitmap,
    b_aux_density: DensityBitmap,
}

/// A constraint system that only records assignments; `enforce` closures are never run.
#[derive(Debug)]
pub struct WitnessCs {
    /// Public inputs (with `ONE`).
    pub input: PinnedVec<Scalar>,
    /// Aux assignment.
    pub aux: PinnedVec<Scalar>,
    error: Option<AllocError>,
}

impl WitnessCs {
    /// An empty witness recorder pre-sized by `hint`.
    pub fn new_in(alloc: SharedAllocator, hint: SizeHint) -> Result<Self, AllocError> {
        Ok(WitnessCs { input: PinnedVec::with_capacity_in(hint.inputs, alloc.clone())?, aux: PinnedVec::with_capacity_in(hint.aux, alloc)?, error: None })
    }
}

impl ConstraintSystem<Scalar> for WitnessCs {
    type Root = Self;
    fn new() -> Self {
        WitnessCs::new_in(heap(), SizeHint::default()).expect("empty buffers need no memory")
    }
    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let v = f()?;
        if let Err(e) = self.aux.try_push(v) {
            self.error.get_or_insert(e);
        }
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }
    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let v = f()?;
        if let Err(e) = self.input.try_push(v) {
            self.error.get_or_insert(e);
        }
        Ok(Variable::new_unchecked(Index::Input(self.input.len() - 1)))
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

impl ConstraintMatrices {
    /// Matrices from explicit rows (`a[r]` is row `r` of `A`, entries in order, duplicates and
    /// zero coefficients kept as given): for tests and tools that need shapes recording never
    /// produces. Densities are set for the non-zero entries, as recording sets them.
    pub fn from_rows(
        num_inputs: usize,
        num_aux: usize,
        a: &[Vec<(Column, Scalar)>],
        b: &[Vec<(Column, Scalar)>],
        c: &[Vec<(Column, Scalar)>],
    ) -> Result<Self, String> {
        if a.len() != b.len() || a.len() != c.len() {
            return Err(format!("A, B, C have {}, {} and {} rows", a.len(), b.len(), c.len()));
        }
        let alloc = heap();
        let (mut a_aux, mut b_in, mut b_aux) = (DensityBitmap::new_in(alloc.clone()), DensityBitmap::new_in(alloc.clone()), DensityBitmap::new_in(alloc));
        for _ in 0..num_aux {
            a_aux.push().and_then(|_| b_aux.push()).map_err(|e| e.to_string())?;
        }
        for _ in 0..num_inputs {
            b_in.push().map_err(|e| e.to_string())?;
        }
        let mut table = CoeffTable::new();
        let mut build = |rows: &[Vec<(Column, Scalar)>], mut mark: Box<dyn FnMut(Column) + '_>| -> Result<Csr, String> {
            let mut m = Csr { row_start: vec![0], ..Csr::default() };
            for row in rows {
                for &(col, k) in row {
                    let code = match col {
                        Column::Input(i) if i < num_inputs => i as u32,
                        Column::Aux(i) if i < num_aux && (i as u32) < AUX => i as u32 | AUX,
                        _ => return Err(format!("column {col:?} out of range ({num_inputs} inputs, {num_aux} aux)")),
                    };
                    m.cols.push(code);
                    m.coeffs.push(table.index(&k));
                    if !k.is_zero_vartime() {
                        mark(col);
                    }
                }
                m.row_start.push(m.cols.len() as u64);
            }
            Ok(m)
        };
        let ma = build(
            a,
            Box::new(|col| {
                if let Column::Aux(i) = col {
                    a_aux.set(i)
                }
            }),
        )?;
        let mb = build(
            b,
            Box::new(|col| match col {
                Column::Aux(i) => b_aux.set(i),
                Column::Input(i) => b_in.set(i),
            }),
        )?;
        let mc = build(c, Box::new(|_| {}))?;
        Ok(ConstraintMatrices {
            a: Matrix::Owned(ma),
            b: Matrix::Owned(mb),
            c: Matrix::Owned(mc),
            coeffs: table.values,
            num_inputs,
            num_aux,
            a_aux_density: a_aux,
            b_input_density: b_in,
            b_aux_density: b_aux,
        })
    }

    /// `A`, `B` and `C` for uploading.
    pub fn views(&self) -> [CsrView<'_>; 3] {
        [self.a.view(), self.b.view(), self.c.view()]
    }

    /// The distinct coefficients the entries index (`1` and `−1` first).
    pub fn coefficients(&self) -> &[Scalar] {
        &self.coeffs
    }

    /// The density bitmaps of the A query (aux), the B query (inputs) and the B query (aux).
    pub fn densities(&self) -> [&DensityBitmap; 3] {
        [&self.a_aux_density, &self.b_input_density, &self.b_aux_density]
    }

    /// Constraints, input constraints included.
    pub fn num_constraints(&self) -> usize {
        self.a.view().row_start.len().saturating_sub(1)
    }

    /// Non-zero entries of `A, B, C` together.
    pub fn num_entries(&self) -> usize {
        self.views().iter().map(|v| v.cols.len()).sum()
    }

    /// Approximate size of the matrices in bytes, in memory or in a file image.
    pub fn heap_bytes(&self) -> usize {
        self.num_entries() * 8 + 3 * 8 * (self.num_constraints() + 1) + self.coeffs.len() * 32
    }

    /// Whether `A, B, C` are read in place from a file image
    /// ([`ConstraintMatrices::from_file_image`]) rather than held in memory of their own: then
    /// their pages are the file's, which the system can drop and read again.
    pub fn in_file_image(&self) -> bool {
        matches!(self.a, Matrix::InImage { .. })
    }

    /// Runs the circuit for its witness only.
    pub fn witness<C: Circuit<Scalar>>(&self, circuit: C, alloc: SharedAllocator) -> Result<WitnessCs, SynthesizeError> {
        let mut w = WitnessCs::new_in(alloc, SizeHint { constraints: 0, inputs: self.num_inputs, aux: self.num_aux })?;
        w.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut w)?;
        if let Some(e) = w.error.take() {
            return Err(e.into());
        }
        if w.input.len() != self.num_inputs || w.aux.len() != self.num_aux {
            return Err(ShapeChanged { want_inputs: self.num_inputs, want_aux: self.num_aux, got_inputs: w.input.len(), got_aux: w.aux.len() }.into());
        }
        Ok(w)
    }

    /// The witness of a circuit that writes it in parallel parts ([`ParallelWitness`]): the
    /// same assignment [`ConstraintMatrices::witness`] produces, on all threads.
    pub fn witness_parallel<C: ParallelWitness + ?Sized>(&self, circuit: &C, alloc: SharedAllocator) -> Result<WitnessCs, SynthesizeError> {
        let mut input = PinnedVec::from_elem_in(Scalar::ZERO, self.num_inputs, alloc.clone())?;
        let mut aux = PinnedVec::from_elem_in(Scalar::ZERO, self.num_aux, alloc)?;
        if let Some(one) = input.first_mut() {
            *one = Scalar::ONE;
        }
        circuit.witness_into(&mut input, &mut aux)?;
        Ok(WitnessCs { input, aux, error: None })
    }

    /// Evaluates rows `rows` of `A, B, C` at the witness into `a, b, c` (each
    /// `rows.len()` long). Disjoint row ranges can run on different threads.
    pub fn evaluate_rows(&self, rows: Range<usize>, input: &[Scalar], aux: &[Scalar], a: &mut [Scalar], b: &mut [Scalar], c: &mut [Scalar]) {
        let [va, vb, vc] = self.views();
        for (k, r) in rows.enumerate() {
            a[k] = va.eval(r, &self.coeffs, input, aux);
            b[k] = vb.eval(r, &self.coeffs, input, aux);
            c[k] = vc.eval(r, &self.coeffs, input, aux);
        }
    }

    /// Assembles a [`Synthesized`] from a witness and evaluated `a, b, c`.
    pub fn assemble(&self, w: WitnessCs, a: PinnedVec<Scalar>, b: PinnedVec<Scalar>, c: PinnedVec<Scalar>) -> Synthesized {
        Synthesized {
            a,
            b,
            c,
            input: w.input,
            aux: w.aux,
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
        }
    }

    /// Witness generation plus a single-threaded evaluation (backends offer parallel ones).
    pub fn synthesize<C: Circuit<Scalar>>(&self, circuit: C, alloc: SharedAllocator) -> Result<Synthesized, SynthesizeError> {
        let w = self.witness(circuit, alloc.clone())?;
        let m = self.num_constraints();
        let mut a = PinnedVec::from_elem_in(Scalar::ZERO, m, alloc.clone())?;
        let mut b = PinnedVec::from_elem_in(Scalar::ZERO, m, alloc.clone())?;
        let mut c = PinnedVec::from_elem_in(Scalar::ZERO, m, alloc)?;
        self.evaluate_rows(0..m, &w.input, &w.aux, &mut a, &mut b, &mut c);
        Ok(self.assemble(w, a, b, c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view<'a>(row_start: &'a [u64], cols: &'a [u32], coeffs: &'a [u32]) -> CsrView<'a> {
        CsrView { row_start, cols, coeffs }
    }

    #[test]
    fn malformed_matrices_are_refused() {
        // Two rows, 2 inputs, 3 aux, a table of 3.
        let ok = |rs: &[u64], cols: &[u32], k: &[u32]| check_csr(&view(rs, cols, k), 2, 2, 3, 3);
        assert_eq!(ok(&[0, 1, 3], &[1, AUX | 2, 0], &[0, 1, 2]), Ok(3));
        assert_eq!(ok(&[0, 0, 0], &[], &[]), Ok(0));
        assert!(ok(&[0, 1, 3], &[2, 0, 0], &[0, 0, 0]).unwrap_err().contains("column 0x2"), "input column out of range");
        assert!(ok(&[0, 1, 3], &[0, AUX | 3, 0], &[0, 0, 0]).unwrap_err().contains("out of range"), "aux column out of range");
        assert!(ok(&[0, 1, 3], &[0, 0, 0], &[0, 3, 0]).unwrap_err().contains("coefficient 3"));
        assert!(ok(&[0, 2, 1], &[0], &[0]).is_err(), "end is not the entries");
        assert!(ok(&[0, 2, 1, 1], &[0], &[0]).is_err(), "offsets for 3 rows");
        assert!(ok(&[0, 3, 2], &[0, 0], &[0, 0]).unwrap_err().contains("decrease"));
        assert!(ok(&[1, 1, 2], &[0, 0], &[0, 0]).is_err(), "does not start at 0");
        assert!(ok(&[0, 1, 2], &[0, 0], &[0]).is_err(), "fewer coefficient indices than columns");
        // No rows: no offsets or just [0], no entries.
        assert_eq!(check_csr(&view(&[], &[], &[]), 0, 1, 0, 2), Ok(0));
        assert_eq!(check_csr(&view(&[0], &[], &[]), 0, 1, 0, 2), Ok(0));
        assert!(check_csr(&view(&[0, 0], &[], &[]), 0, 1, 0, 2).is_err());
    }
}
