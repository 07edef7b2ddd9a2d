//! Synthesis through recorded constraint matrices (`cuzk_core::matrices`): a witness, then `a, b, c` as sparse products on all threads; and the cache of
//! matrices per circuit shape.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bellpepper_core::Circuit;
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use cuzk_core::alloc::{PinnedVec, SharedAllocator};
use cuzk_core::matrices::{ConstraintMatrices, WitnessCs};
use cuzk_core::synth::{SynthesizeError, Synthesized};

use crate::shape::CircuitShape;

/// Rows per parallel task.
const ROWS_PER_TASK: usize = 1 << 13;

/// Witness generation on the calling thread, then `a, b, c` as sparse products on all threads.
/// Produces exactly what `cuzk_core::synth::synthesize` produces.
pub fn synthesize<C: Circuit<Scalar>>(m: &ConstraintMatrices, circuit: C, alloc: SharedAllocator) -> Result<Synthesized, SynthesizeError> {
    let w = m.witness(circuit, alloc.clone())?;
    evaluate(m, w, alloc)
}

/// `a, b, c` of a witness as sparse products on all threads, assembled into the record
/// synthesis would have produced.
pub fn evaluate(m: &ConstraintMatrices, w: WitnessCs, alloc: SharedAllocator) -> Result<Synthesized, SynthesizeError> {
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

/// Constraint matrices per circuit shape, recorded by the first synthesis of that shape. Later
/// syntheses only generate their witness and evaluate `a, b, c` from the matrices.
#[derive(Debug, Default)]
pub struct MatrixCache {
    entries: Mutex<HashMap<CircuitShape, Arc<ConstraintMatrices>>>,
}

impl MatrixCache {
    /// The matrices of `shape`, recording them from `circuit` when absent; `None` when the
    /// circuit cannot be recorded (then plain synthesis reports why).
    pub fn get_or_record<C: Circuit<Scalar> + Clone>(&self, shape: CircuitShape, circuit: &C) -> Option<Arc<ConstraintMatrices>> {
        if let Some(m) = self.get(shape) {
            return Some(m);
        }
        // Recorded outside the lock; if two syntheses race, both record and the first insert wins.
        let m = Arc::new(ConstraintMatrices::record(circuit.clone()).ok()?);
        tracing::info!(circuit = %shape.id(), entries = m.num_entries(), bytes = m.heap_bytes(), "constraint matrices recorded");
        Some(self.lock().entry(shape).or_insert(m).clone())
    }

    /// Keeps `m` as the matrices of `shape` (recorded elsewhere), unless some are already.
    pub fn insert(&self, shape: CircuitShape, m: Arc<ConstraintMatrices>) -> Arc<ConstraintMatrices> {
        self.lock().entry(shape).or_insert(m).clone()
    }

    /// The recorded matrices of `shape`, if any.
    pub fn get(&self, shape: CircuitShape) -> Option<Arc<ConstraintMatrices>> {
        self.lock().get(&shape).cloned()
    }

    /// Number of recorded shapes.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CircuitShape, Arc<ConstraintMatrices>>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}
