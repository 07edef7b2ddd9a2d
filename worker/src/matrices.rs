//! Synthesis through recorded constraint matrices (`cuzk_core::matrices`): a witness, then `a, b, c` as sparse products on all threads; and the cache of
//! matrices per circuit shape.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

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

/// One shape's entry: filled once, by the first synthesis of the shape; the others wait for
/// it instead of recording the same matrices again.
type Slot = Arc<OnceLock<Option<Arc<ConstraintMatrices>>>>;

/// Constraint matrices per circuit shape, recorded by the first synthesis of that shape. Later
/// syntheses only generate their witness and evaluate `a, b, c` from the matrices.
#[derive(Debug, Default)]
pub struct MatrixCache {
    entries: Mutex<HashMap<CircuitShape, Slot>>,
}

impl MatrixCache {
    /// The matrices of `shape`, recording them from `circuit` when absent (once: concurrent
    /// callers wait for the one recording); `None` when the circuit cannot be recorded (then
    /// plain synthesis reports why, and a later call tries again).
    pub fn get_or_record<C: Circuit<Scalar> + Clone>(&self, shape: CircuitShape, circuit: &C) -> Option<Arc<ConstraintMatrices>> {
        let slot = self.lock().entry(shape).or_default().clone();
        let recorded = slot
            .get_or_init(|| {
                let m = Arc::new(ConstraintMatrices::record(circuit.clone()).ok()?);
                tracing::info!(circuit = %shape.id(), entries = m.num_entries(), bytes = m.heap_bytes(), "constraint matrices recorded");
                Some(m)
            })
            .clone();
        if recorded.is_none() {
            // Forget the failure so that a later job (another witness) records again.
            let mut entries = self.lock();
            if entries.get(&shape).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
                entries.remove(&shape);
            }
        }
        recorded
    }

    /// Keeps `m` as the matrices of `shape` (recorded elsewhere), unless some are already.
    pub fn insert(&self, shape: CircuitShape, m: Arc<ConstraintMatrices>) -> Arc<ConstraintMatrices> {
        let slot = self.lock().entry(shape).or_default().clone();
        slot.get_or_init(|| Some(m.clone())).clone().unwrap_or(m)
    }

    /// The recorded matrices of `shape`, if any (`None` while they are being recorded).
    pub fn get(&self, shape: CircuitShape) -> Option<Arc<ConstraintMatrices>> {
        self.lock().get(&shape).and_then(|s| s.get().cloned().flatten())
    }

    /// Number of recorded shapes.
    pub fn len(&self) -> usize {
        self.lock().values().filter(|s| matches!(s.get(), Some(Some(_)))).count()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CircuitShape, Slot>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use bellpepper_core::{ConstraintSystem, SynthesisError};
    use cuzk_circuits::CircuitKind;

    use crate::shape::BuiltinShape;

    /// A circuit that counts how often it is synthesized and can be made to fail.
    #[derive(Clone)]
    struct Counted<'a> {
        runs: &'a AtomicUsize,
        fail: bool,
    }

    impl Circuit<Scalar> for Counted<'_> {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(20));
            if self.fail {
                return Err(SynthesisError::Unsatisfiable);
            }
            let x = cs.alloc(|| "x", || Ok(Scalar::ONE))?;
            cs.enforce(|| "x", |lc| lc + x, |lc| lc + x, |lc| lc + x);
            Ok(())
        }
    }

    #[test]
    fn concurrent_first_syntheses_record_once_and_failures_are_retried() {
        let shape: CircuitShape = BuiltinShape::new(CircuitKind::SquaringChain, 4).unwrap().into();
        let cache = MatrixCache::default();
        let runs = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| assert!(cache.get_or_record(shape, &Counted { runs: &runs, fail: false }).is_some()));
            }
        });
        assert_eq!(runs.load(Ordering::SeqCst), 1, "six concurrent first syntheses recorded more than once");
        assert_eq!(cache.len(), 1);

        let other: CircuitShape = BuiltinShape::new(CircuitKind::SquaringChain, 5).unwrap().into();
        let fails = AtomicUsize::new(0);
        assert!(cache.get_or_record(other, &Counted { runs: &fails, fail: true }).is_none());
        assert!(cache.get(other).is_none());
        assert!(cache.get_or_record(other, &Counted { runs: &fails, fail: false }).is_some(), "a failed recording is retried");
        assert_eq!((fails.load(Ordering::SeqCst), cache.len()), (2, 2));
    }
}
