//! The work behind engine actions: synthesis and finalize on the CPU pool, GPU stages and
//! parameter loads on blocking threads. Each task reports back exactly once, even if it
//! panics.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use blstrs::Scalar;
use cuzk_circuits::CircuitKind;
use cuzk_circuits_filecoin::{FilCircuitId, PartitionCircuit};
use cuzk_core::backend::Backend;
use cuzk_core::domain::Domain;
use cuzk_core::engine::{CircuitId, Location, PartitionId, Stage};
use cuzk_core::params::{Parameters, Validation, VerifyingKey};
use cuzk_core::pce::ConstraintMatrices;
use cuzk_core::proof::{verify, Proof};
use cuzk_core::prover::{compute_h, finalize, msms, upload, MsmResults, ProvingKey, Uploaded, Witness};
use cuzk_core::synth::{synthesize, SizeHint, Synthesized};
use ff::Field;
use tokio::sync::mpsc::UnboundedSender;

/// A partition's data between stages (moved, never copied, so variant sizes do not matter).
#[allow(clippy::large_enum_variant)]
pub enum PartData<B: Backend> {
    /// After synthesis.
    Synth {
        /// The record.
        synth: Synthesized,
        /// Public inputs (without `ONE`).
        public: Vec<Scalar>,
    },
    /// After upload.
    Uploaded(Uploaded<B>),
    /// After the NTT stage.
    H {
        /// Coefficients of `h`.
        h: B::Scalars,
        /// The domain.
        domain: Domain,
        /// Assignments.
        witness: Witness<B>,
    },
    /// After the MSMs.
    Msm(MsmResults),
    /// After finalize.
    Proof(Proof),
}

impl<B: Backend> PartData<B> {
    fn name(&self) -> &'static str {
        match self {
            PartData::Synth { .. } => "synthesized",
            PartData::Uploaded(_) => "uploaded",
            PartData::H { .. } => "h",
            PartData::Msm(_) => "msm results",
            PartData::Proof(_) => "proof",
        }
    }
}

/// Parameters loaded somewhere.
pub enum Loaded<B: Backend> {
    /// A warm host copy.
    Host(Arc<Parameters>),
    /// Resident on a device.
    Device(Arc<ProvingKey<B>>),
}

/// A finished task.
#[allow(clippy::large_enum_variant)]
pub enum Completion<B: Backend> {
    /// A stage ended.
    Stage {
        /// Which partition.
        partition: PartitionId,
        /// Which stage.
        stage: Stage,
        /// When it started.
        started: Instant,
        /// When it ended.
        ended: Instant,
        /// Its output, or why it failed.
        result: Result<PartData<B>, String>,
    },
    /// A parameter load ended.
    Params {
        /// Which circuit.
        circuit: CircuitId,
        /// Where to.
        at: Location,
        /// When it ended.
        ended: Instant,
        /// The parameters, or why not.
        result: Result<Loaded<B>, String>,
    },
}

/// The circuit a partition's synthesis runs.
#[derive(Clone)]
pub enum Work {
    /// A built-in circuit: kind, log size, witness seed.
    Builtin(CircuitKind, u32, u64),
    /// A partition of a checked Filecoin request.
    Filecoin(FilCircuitId, PartitionCircuit),
}

/// Everything a stage needs besides its input.
pub struct StageInput<B: Backend> {
    /// The partition.
    pub partition: PartitionId,
    /// The stage.
    pub stage: Stage,
    /// Output of the previous stage (none for synthesis).
    pub data: Option<PartData<B>>,
    /// The backend of the device (the first one for host stages).
    pub backend: Arc<B>,
    /// The proving key on that device (upload and MSM).
    pub key: Option<Arc<ProvingKey<B>>>,
    /// The verifying key (finalize).
    pub vk: Option<Arc<VerifyingKey>>,
    /// What synthesis runs.
    pub circuit: Work,
    /// Public inputs for verification in finalize, when enabled.
    pub verify_with: Option<Vec<Scalar>>,
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = p.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".into()
    }
}

/// The synthesis cache: constraint matrices per circuit shape, recorded by the first job of
/// that shape. Later jobs only generate their witness and evaluate `a, b, c` as sparse
/// products on all cores (`cuzk_core::pce`); the record is identical to plain synthesis.
/// Built-in shapes are few (two circuits × log sizes), so entries are kept for the life of
/// the daemon.
fn matrices<C: bellpepper_core::Circuit<Scalar> + Clone>(key: MatrixKey, c: &C) -> Option<Arc<ConstraintMatrices>> {
    type Cache = Mutex<HashMap<MatrixKey, Arc<ConstraintMatrices>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(m) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Some(m.clone());
    }
    // Recorded outside the lock; if two jobs race, both record and the first insert wins.
    let m = Arc::new(ConstraintMatrices::record(c.clone()).ok()?);
    tracing::info!(circuit = ?key, entries = m.num_entries(), bytes = m.heap_bytes(), "constraint matrices recorded");
    Some(cache.lock().unwrap_or_else(|e| e.into_inner()).entry(key).or_insert(m).clone())
}

/// What a cached constraint structure belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum MatrixKey {
    Builtin(CircuitKind, u32),
    Filecoin(FilCircuitId),
}

/// Synthesizes through the matrix cache when it has (or can record) the structure.
fn synthesize_cached<C: bellpepper_core::Circuit<Scalar> + Clone, B: Backend>(key: MatrixKey, c: C, backend: &B) -> Result<Synthesized, String> {
    match matrices(key, &c) {
        Some(m) => cuzk_backend_cpu::pce::synthesize(&m, c, backend.host_allocator()),
        None => synthesize(c, backend.host_allocator(), SizeHint::default()),
    }
    .map_err(|e| e.to_string())
}

/// The first constraint `a·b = c` the record violates, if any: an unsatisfied circuit (a bad
/// witness) must fail the job, never yield a proof that does not verify.
fn first_unsatisfied(s: &Synthesized) -> Option<usize> {
    use rayon::prelude::*;
    (0..s.a.len()).into_par_iter().with_min_len(1 << 14).find_first(|&i| s.a[i] * s.b[i] != s.c[i])
}

/// Runs one stage on the calling thread.
pub fn run_stage<B: Backend>(input: StageInput<B>) -> Result<PartData<B>, String> {
    let StageInput { partition, stage, data, backend, key, vk, circuit, verify_with } = input;
    let _span = tracing::info_span!("stage", job = partition.job.0, partition = partition.index, stage = stage.name()).entered();
    let wrong = |d: &Option<PartData<B>>| format!("internal: {} has no input ({})", stage.name(), d.as_ref().map_or("none", |d| d.name()));
    let need_key = || key.clone().ok_or_else(|| format!("internal: no parameters resident for {}", stage.name()));
    let out = match stage {
        Stage::Synthesize => match circuit {
            Work::Builtin(kind, log_size, seed) => {
                let c = kind.instance(log_size, seed).map_err(|e| e.to_string())?;
                let public = c.public_inputs();
                let synth = synthesize_cached(MatrixKey::Builtin(kind, log_size), c, &*backend)?;
                PartData::Synth { synth, public }
            }
            Work::Filecoin(id, c) => {
                let public = c.public_inputs().map_err(|e| e.to_string())?;
                let synth = synthesize_cached(MatrixKey::Filecoin(id), c, &*backend)?;
                if let Some(i) = first_unsatisfied(&synth) {
                    return Err(format!("the circuit is not satisfied (constraint {i}): the witness does not match the public inputs"));
                }
                if synth.input.get(1..) != Some(&public[..]) {
                    return Err("the synthesized public inputs differ from Filecoin's".into());
                }
                PartData::Synth { synth, public }
            }
        },
        Stage::Upload => match data {
            Some(PartData::Synth { synth, .. }) => PartData::Uploaded(upload(&*backend, &*need_key()?, synth).map_err(|e| e.to_string())?),
            d => return Err(wrong(&d)),
        },
        Stage::Ntt => match data {
            Some(PartData::Uploaded(up)) => {
                let (h, domain, witness) = compute_h(&*backend, up).map_err(|e| e.to_string())?;
                PartData::H { h, domain, witness }
            }
            d => return Err(wrong(&d)),
        },
        Stage::Msm => match data {
            Some(PartData::H { h, domain, witness }) => PartData::Msm(msms(&*backend, &*need_key()?, &h, &domain, &witness).map_err(|e| e.to_string())?),
            d => return Err(wrong(&d)),
        },
        Stage::Finalize => match data {
            Some(PartData::Msm(m)) => {
                let vk = vk.ok_or("internal: no verifying key")?;
                let mut rng = rand::thread_rng();
                let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
                let proof = finalize(&vk, &m, r, s);
                if let Some(public) = verify_with {
                    if !verify(&vk, &proof, &public).map_err(|e| e.to_string())? {
                        return Err("the proof does not verify".into());
                    }
                }
                PartData::Proof(proof)
            }
            d => return Err(wrong(&d)),
        },
    };
    Ok(out)
}

/// Runs a stage, catching panics, and reports it.
pub fn run_and_report<B: Backend + 'static>(input: StageInput<B>, tx: &UnboundedSender<Completion<B>>) {
    let (partition, stage) = (input.partition, input.stage);
    let started = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| run_stage(input))).unwrap_or_else(|p| Err(panic_message(p)));
    let ended = Instant::now();
    match &result {
        Ok(_) => {
            tracing::debug!(job = partition.job.0, partition = partition.index, stage = stage.name(), ms = (ended - started).as_secs_f64() * 1e3, "stage done")
        }
        Err(e) => {
            tracing::warn!(job = partition.job.0, partition = partition.index, stage = stage.name(), error = %e, "stage failed")
        }
    }
    let _ = tx.send(Completion::Stage { partition, stage, started, ended, result });
}

/// What a parameter load reads.
pub struct LoadInput<B: Backend> {
    /// The circuit.
    pub circuit: CircuitId,
    /// Where to.
    pub at: Location,
    /// The file.
    pub path: PathBuf,
    /// How carefully to check it.
    pub validation: Validation,
    /// A warm host copy, if any.
    pub host: Option<Arc<Parameters>>,
    /// The device's backend.
    pub backend: Arc<B>,
}

fn load<B: Backend>(l: &LoadInput<B>) -> Result<Loaded<B>, String> {
    let read = || crate::read_params(&l.path, l.validation).map_err(|e| e.to_string());
    match l.at {
        Location::Host => Ok(Loaded::Host(Arc::new(read()?))),
        Location::Device(_) => {
            let params = match &l.host {
                Some(p) => (**p).clone(),
                None => read()?,
            };
            let key = ProvingKey::load(&*l.backend, params).map_err(|e| e.to_string())?;
            Ok(Loaded::Device(Arc::new(key)))
        }
    }
}

/// Loads parameters, catching panics, and reports it.
pub fn load_and_report<B: Backend + 'static>(l: LoadInput<B>, tx: &UnboundedSender<Completion<B>>) {
    let _span = tracing::info_span!("load_params", circuit = l.circuit.0, at = ?l.at).entered();
    let t = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| load(&l))).unwrap_or_else(|p| Err(panic_message(p)));
    match &result {
        Ok(_) => {
            tracing::info!(path = %l.path.display(), ms = t.elapsed().as_secs_f64() * 1e3, "parameters loaded")
        }
        Err(e) => tracing::warn!(path = %l.path.display(), error = %e, "parameter load failed"),
    }
    let _ = tx.send(Completion::Params { circuit: l.circuit, at: l.at, ended: Instant::now(), result });
}
