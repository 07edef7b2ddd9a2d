//! Parallel evaluation of cached constraint matrices (see `cuzk_core::pce`).

use bellpepper_core::Circuit;
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use cuzk_core::alloc::{PinnedVec, SharedAllocator};
use cuzk_core::pce::ConstraintMatrices;
use cuzk_core::synth::{SynthesizeError, Synthesized};

/// Rows per parallel task.
const ROWS_PER_TASK: usize = 1 << 13;

/// Witness generation on the calling thread, then `a, b, c` as sparse products on all threads.
/// Produces exactly what `cuzk_core::synth::synthesize` produces.
pub fn synthesize<C: Circuit<Scalar>>(m: &ConstraintMatrices, circuit: C, alloc: SharedAllocator) -> Result<Synthesized, SynthesizeError> {
    let w = m.witness(circuit, alloc.clone())?;
    let rows = m.num_constraints();
    let mut a = PinnedVec::from_elem_in(Scalar::ZERO, rows, alloc.clone())?;
    let mut b = PinnedVec::from_elem_in(Scalar::ZERO, rows, alloc.clone())?;
    let mut c = PinnedVec::from_elem_in(Scalar::ZERO, rows, alloc)?;
    a.par_chunks_mut(ROWS_PER_TASK).zip(b.par_chunks_mut(ROWS_PER_TASK)).zip(c.par_chunks_mut(ROWS_PER_TASK)).enumerate().for_each(|(t, ((a, b), c))| {
        let lo = t * ROWS_PER_TASK;
        m.evaluate_rows(lo..lo + a.len(), &w.input, &w.aux, a, b, c);
    });
    Ok(m.assemble(w, a, b, c))
}
