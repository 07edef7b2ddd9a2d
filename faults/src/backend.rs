//! The wrapper: every [`Backend`] call asks the plan first.

use std::sync::{Arc, Mutex, MutexGuard};

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_core::alloc::{PinnedVec, SharedAllocator};
use cuzk_core::backend::{Backend, BackendError, MsmScalars, NttDirection};
use cuzk_core::domain::Domain;
use cuzk_core::matrices::ConstraintMatrices;
use cuzk_core::params::PointFailure;
use group::Group;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::plan::{FaultAction, FaultPlan, FaultStage, Trigger};

/// Faults injected so far, per stage and action.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Injected {
    /// Calls failed with a device error.
    pub errors: u64,
    /// Calls failed with out-of-memory.
    pub oom: u64,
    /// Calls whose result was corrupted.
    pub corrupted: u64,
    /// Calls delayed.
    pub delayed: u64,
}

impl Injected {
    /// All faults injected.
    pub fn total(&self) -> u64 {
        self.errors + self.oom + self.corrupted + self.delayed
    }
}

struct State {
    rng: ChaCha8Rng,
    /// Matching calls seen per rule.
    calls: Vec<u64>,
    injected: Vec<(FaultStage, Injected)>,
}

/// A handle on a [`FaultyBackend`]'s counts that outlives moving the backend away.
#[derive(Clone)]
pub struct FaultProbe(Arc<Mutex<State>>);

impl FaultProbe {
    /// Faults injected into every stage so far.
    pub fn injected(&self) -> Injected {
        sum(&self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

fn sum(st: &State) -> Injected {
    st.injected.iter().fold(Injected::default(), |a, (_, i)| Injected {
        errors: a.errors + i.errors,
        oom: a.oom + i.oom,
        corrupted: a.corrupted + i.corrupted,
        delayed: a.delayed + i.delayed,
    })
}

/// A backend that injects the faults of a [`FaultPlan`] into the calls of another.
pub struct FaultyBackend<B> {
    inner: B,
    plan: FaultPlan,
    state: Arc<Mutex<State>>,
}

/// What one call must do.
#[derive(Default)]
struct Decision {
    corrupt: bool,
}

impl<B: Backend> FaultyBackend<B> {
    /// Wraps `inner`; with an empty plan it behaves exactly as `inner`.
    pub fn new(inner: B, plan: FaultPlan) -> Self {
        let state = State {
            rng: ChaCha8Rng::seed_from_u64(plan.seed),
            calls: vec![0; plan.rules.len()],
            injected: FaultStage::ALL.iter().map(|s| (*s, Injected::default())).collect(),
        };
        FaultyBackend { inner, plan, state: Arc::new(Mutex::new(state)) }
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// The plan.
    pub fn plan(&self) -> &FaultPlan {
        &self.plan
    }

    /// Faults injected into `stage` so far.
    pub fn injected(&self, stage: FaultStage) -> Injected {
        self.lock().injected.iter().find(|(s, _)| *s == stage).map(|(_, i)| *i).unwrap_or_default()
    }

    /// Faults injected into every stage so far.
    pub fn injected_total(&self) -> Injected {
        sum(&self.lock())
    }

    /// A handle on the counts, for after the backend has been handed to a daemon.
    pub fn probe(&self) -> FaultProbe {
        FaultProbe(self.state.clone())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies the first rule that fires for a call of `stage`: fails, sleeps, or asks the
    /// caller to corrupt the result.
    fn check(&self, stage: FaultStage) -> Result<Decision, BackendError> {
        let fired = {
            let mut st = self.lock();
            let mut fired = None;
            for (i, rule) in self.plan.rules.iter().enumerate() {
                if rule.stage != stage {
                    continue;
                }
                st.calls[i] += 1;
                let n = st.calls[i];
                let fire = match rule.trigger {
                    Trigger::Always => true,
                    Trigger::Nth(k) => n == k,
                    Trigger::Probability(p) => st.rng.gen_bool(p),
                };
                if fire && fired.is_none() {
                    fired = Some(rule.action);
                }
            }
            if let Some(action) = fired {
                if let Some((_, inj)) = st.injected.iter_mut().find(|(s, _)| *s == stage) {
                    match action {
                        FaultAction::DeviceError => inj.errors += 1,
                        FaultAction::OutOfMemory => inj.oom += 1,
                        FaultAction::Corrupt => inj.corrupted += 1,
                        FaultAction::Delay(_) => inj.delayed += 1,
                    }
                }
            }
            fired
        };
        let Some(action) = fired else { return Ok(Decision::default()) };
        tracing::warn!(stage = stage.name(), ?action, backend = %self.inner.name(), "fault injected");
        match action {
            FaultAction::DeviceError => Err(BackendError::Device(format!("injected fault in {}", stage.name()))),
            FaultAction::OutOfMemory => Err(BackendError::OutOfMemory(format!("injected fault in {}", stage.name()))),
            FaultAction::Corrupt => Ok(Decision { corrupt: true }),
            FaultAction::Delay(d) => {
                std::thread::sleep(d);
                Ok(Decision::default())
            }
        }
    }
}

impl<B: Backend> Backend for FaultyBackend<B> {
    type Scalars = B::Scalars;
    type G1Bases = B::G1Bases;
    type G2Bases = B::G2Bases;
    type Matrices = B::Matrices;

    /// The inner backend's name, so that what depends on it (the CPU backend's buffer
    /// release rule) is unchanged, with a marker after it.
    fn name(&self) -> String {
        format!("{} [faults injected]", self.inner.name())
    }

    fn host_allocator(&self) -> SharedAllocator {
        self.inner.host_allocator()
    }

    fn wait_idle(&self) -> Result<(), BackendError> {
        self.inner.wait_idle()
    }

    fn free_memory(&self) -> Option<u64> {
        self.inner.free_memory()
    }

    fn upload_scalars(&self, mut host: PinnedVec<Scalar>) -> Result<Self::Scalars, BackendError> {
        if self.check(FaultStage::Upload)?.corrupt {
            if let Some(x) = host.first_mut() {
                *x += Scalar::from(1u64);
            }
        }
        self.inner.upload_scalars(host)
    }

    fn download_scalars(&self, buf: &Self::Scalars) -> Result<Vec<Scalar>, BackendError> {
        let corrupt = self.check(FaultStage::Download)?.corrupt;
        let mut v = self.inner.download_scalars(buf)?;
        if corrupt {
            if let Some(x) = v.first_mut() {
                *x += Scalar::from(1u64);
            }
        }
        Ok(v)
    }

    fn ntt(&self, buf: &mut Self::Scalars, domain: &Domain, direction: NttDirection, coset: bool) -> Result<(), BackendError> {
        let corrupt = self.check(FaultStage::Ntt)?.corrupt;
        self.inner.ntt(buf, domain, direction, coset)?;
        if corrupt {
            self.inner.ntt(buf, domain, direction, coset)?;
        }
        Ok(())
    }

    fn quotient_on_coset(&self, a: &mut Self::Scalars, b: &Self::Scalars, c: &Self::Scalars, domain: &Domain) -> Result<(), BackendError> {
        let corrupt = self.check(FaultStage::Ntt)?.corrupt;
        self.inner.quotient_on_coset(a, b, c, domain)?;
        if corrupt {
            self.inner.quotient_on_coset(a, b, c, domain)?;
        }
        Ok(())
    }

    fn compute_h(&self, a: Self::Scalars, b: Self::Scalars, c: Self::Scalars, domain: &Domain) -> Result<Self::Scalars, BackendError> {
        let corrupt = self.check(FaultStage::Ntt)?.corrupt;
        let mut h = self.inner.compute_h(a, b, c, domain)?;
        if corrupt {
            self.inner.ntt(&mut h, domain, NttDirection::Forward, false)?;
        }
        Ok(h)
    }

    fn load_matrices(&self, m: &Arc<ConstraintMatrices>) -> Result<Self::Matrices, BackendError> {
        self.check(FaultStage::Load)?;
        self.inner.load_matrices(m)
    }

    fn matrices_bytes(&self, m: &Self::Matrices) -> u64 {
        self.inner.matrices_bytes(m)
    }

    fn evaluate_constraints(
        &self,
        m: &Self::Matrices,
        input: &Self::Scalars,
        aux: &Self::Scalars,
        domain: &Domain,
    ) -> Result<[Self::Scalars; 3], BackendError> {
        self.check(FaultStage::Evaluate)?;
        self.inner.evaluate_constraints(m, input, aux, domain)
    }

    fn first_unsatisfied(&self, a: &Self::Scalars, b: &Self::Scalars, c: &Self::Scalars, rows: usize) -> Result<Option<usize>, BackendError> {
        self.inner.first_unsatisfied(a, b, c, rows)
    }

    fn evaluates_constraints_on_device(&self) -> bool {
        self.inner.evaluates_constraints_on_device()
    }

    fn checks_points(&self) -> bool {
        self.inner.checks_points()
    }

    fn first_invalid_g1(&self, points: &[G1Affine]) -> Result<Option<PointFailure>, BackendError> {
        self.inner.first_invalid_g1(points)
    }

    fn first_invalid_g2(&self, points: &[G2Affine]) -> Result<Option<PointFailure>, BackendError> {
        self.inner.first_invalid_g2(points)
    }

    fn load_g1(&self, points: Vec<G1Affine>) -> Result<Self::G1Bases, BackendError> {
        self.check(FaultStage::Load)?;
        self.inner.load_g1(points)
    }

    fn load_g2(&self, points: Vec<G2Affine>) -> Result<Self::G2Bases, BackendError> {
        self.check(FaultStage::Load)?;
        self.inner.load_g2(points)
    }

    /// Forwards the placement to the inner backend, faults as for [`Backend::load_g1`].
    fn load_g1_placed(&self, points: Vec<G1Affine>, streamed: bool) -> Result<Self::G1Bases, BackendError> {
        self.check(FaultStage::Load)?;
        self.inner.load_g1_placed(points, streamed)
    }

    /// Forwards the placement to the inner backend, faults as for [`Backend::load_g2`].
    fn load_g2_placed(&self, points: Vec<G2Affine>, streamed: bool) -> Result<Self::G2Bases, BackendError> {
        self.check(FaultStage::Load)?;
        self.inner.load_g2_placed(points, streamed)
    }

    fn g1_len(&self, bases: &Self::G1Bases) -> usize {
        self.inner.g1_len(bases)
    }

    fn g2_len(&self, bases: &Self::G2Bases) -> usize {
        self.inner.g2_len(bases)
    }

    fn msm_g1(&self, bases: &Self::G1Bases, bases_offset: usize, scalars: MsmScalars<'_, Self::Scalars>) -> Result<G1Projective, BackendError> {
        let corrupt = self.check(FaultStage::Msm)?.corrupt;
        let r = self.inner.msm_g1(bases, bases_offset, scalars)?;
        Ok(if corrupt { r + G1Projective::generator() } else { r })
    }

    fn msm_g2(&self, bases: &Self::G2Bases, bases_offset: usize, scalars: MsmScalars<'_, Self::Scalars>) -> Result<G2Projective, BackendError> {
        let corrupt = self.check(FaultStage::Msm)?.corrupt;
        let r = self.inner.msm_g2(bases, bases_offset, scalars)?;
        Ok(if corrupt { r + G2Projective::generator() } else { r })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::FaultRule;
    use cuzk_backend_cpu::CpuBackend;
    use cuzk_core::alloc::heap;

    fn scalars(n: usize) -> PinnedVec<Scalar> {
        let mut v = PinnedVec::from_elem_in(Scalar::from(0u64), n, heap()).unwrap();
        for (i, x) in v.iter_mut().enumerate() {
            *x = Scalar::from(i as u64 + 3);
        }
        v
    }

    fn msm(b: &impl Backend<Scalars = PinnedVec<Scalar>, G1Bases = Vec<G1Affine>>) -> Result<G1Projective, BackendError> {
        let n = 8;
        let bases = b.load_g1((1..=n as u64).map(|k| G1Affine::from(G1Projective::generator() * Scalar::from(k))).collect())?;
        let s = b.upload_scalars(scalars(n))?;
        b.msm_g1(&bases, 0, MsmScalars { buf: &s, len: n, density: None })
    }

    #[test]
    fn an_empty_plan_changes_nothing() {
        let f = FaultyBackend::new(CpuBackend::new(), FaultPlan::default());
        assert_eq!(msm(&f).unwrap(), msm(&CpuBackend::new()).unwrap());
        assert_eq!(f.injected_total().total(), 0);
    }

    #[test]
    fn nth_call_corruption_hits_only_that_call() {
        let f = FaultyBackend::new(CpuBackend::new(), FaultPlan::one(FaultRule::parse("msm:corrupt:nth=2").unwrap()));
        let good = msm(&CpuBackend::new()).unwrap();
        assert_eq!(msm(&f).unwrap(), good);
        assert_eq!(msm(&f).unwrap(), good + G1Projective::generator());
        assert_eq!(msm(&f).unwrap(), good);
        assert_eq!(f.injected(FaultStage::Msm).corrupted, 1);
    }

    #[test]
    fn errors_and_oom_are_backend_errors_of_their_kind() {
        let f = FaultyBackend::new(CpuBackend::new(), FaultPlan::one(FaultRule::parse("msm:error").unwrap()));
        assert!(matches!(msm(&f), Err(BackendError::Device(_))));
        let f = FaultyBackend::new(CpuBackend::new(), FaultPlan::one(FaultRule::parse("upload:oom").unwrap()));
        assert!(matches!(msm(&f), Err(BackendError::OutOfMemory(_))));
        assert_eq!(f.injected(FaultStage::Upload).oom, 1);
    }

    #[test]
    fn random_triggers_repeat_with_the_seed() {
        let run = |seed| {
            let plan = FaultPlan { rules: vec![FaultRule::parse("msm:error:p=0.5").unwrap()], seed };
            let f = FaultyBackend::new(CpuBackend::new(), plan);
            (0..40).map(|_| msm(&f).is_err()).collect::<Vec<_>>()
        };
        let a = run(7);
        assert_eq!(a, run(7));
        let fails = a.iter().filter(|x| **x).count();
        assert!((5..=35).contains(&fails), "{fails} of 40 failed at p = 0.5");
    }

    #[test]
    fn corrupted_transforms_differ_from_the_oracle() {
        let d = Domain::new(8).unwrap();
        let f = FaultyBackend::new(CpuBackend::new(), FaultPlan::one(FaultRule::parse("ntt:corrupt:nth=1").unwrap()));
        let cpu = CpuBackend::new();
        let (mut x, mut y) = (scalars(256), scalars(256));
        f.ntt(&mut x, &d, NttDirection::Forward, false).unwrap();
        cpu.ntt(&mut y, &d, NttDirection::Forward, false).unwrap();
        assert_ne!(x[..], y[..]);
    }
}
