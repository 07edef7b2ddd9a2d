//! The worker over real backends: one per device, the resident parameters of each, and the
//! recorded constraint matrices.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use blstrs::Scalar;
use cuzk_core::alloc::SharedAllocator;
use cuzk_core::backend::Backend;
use cuzk_core::circuit::{PartitionCircuit, ShapeKey, WitnessCheck};
use cuzk_core::domain::Domain;
use cuzk_core::engine::{CircuitId, Location, Stage};
use cuzk_core::matrices::{ConstraintMatrices, WitnessCs};
use cuzk_core::params::{Parameters, Section, VerifyingKey};
use cuzk_core::proof::verify;
use cuzk_core::prover::{compute_h, finalize, msms, upload, upload_witness, MsmResults, ProveError, ProvingKey, Uploaded, Witness};
use cuzk_core::synth::{SizeHint, Synthesized};
use cuzk_setup::timing::TimingQueries;
use ff::Field;

use crate::matrices::MatrixCache;
use crate::params::{point_checks, read_params_trusting, ParamsFile, PointChecks};
use crate::{LoadTask, MatricesInfo, ParamSource, StageInput, StageOutput, StageTask, Work, WorkError, Worker};

/// A partition's data between stages (moved, never copied, so variant sizes do not matter).
#[allow(clippy::large_enum_variant)]
pub enum PartData<B: Backend> {
    /// After synthesis.
    Synthesized(Synthesized),
    /// After witness-only synthesis: the upload moves the witness and the device evaluates
    /// `a, b, c` from the shape's resident matrices.
    Witness {
        /// The assignments.
        witness: WitnessCs,
        /// The shape's recorded matrices.
        matrices: Arc<ConstraintMatrices>,
        /// The shape (the key of the resident copies).
        shape: ShapeKey,
        /// What happens to the witness checks.
        check: WitnessCheck,
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
}

impl<B: Backend> PartData<B> {
    fn name(&self) -> &'static str {
        match self {
            PartData::Synthesized(_) => "synthesized",
            PartData::Witness { .. } => "witness",
            PartData::Uploaded(_) => "uploaded",
            PartData::H { .. } => "h",
            PartData::Msm(_) => "msm results",
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What is resident per key and device index.
type PerDevice<K, V> = HashMap<(K, usize), Arc<V>>;

/// Runs stages and loads on one backend per device.
pub struct BackendWorker<B: Backend> {
    backends: Vec<Arc<B>>,
    matrices: Option<MatrixCache>,
    device_evaluation: bool,
    sync_stages: bool,
    host_params: Mutex<HashMap<CircuitId, Arc<Parameters>>>,
    keys: Mutex<PerDevice<CircuitId, ProvingKey<B>>>,
    vks: Mutex<HashMap<CircuitId, Arc<VerifyingKey>>>,
    /// Matrices resident per shape and device (for backends that evaluate on the device).
    device_matrices: Mutex<PerDevice<ShapeKey, B::Matrices>>,
    /// One gate per shape and device: the first use uploads, concurrent first uses wait for
    /// it instead of each uploading a copy (7.3 GB for a 32 GiB PoRep partition).
    matrix_uploads: Mutex<PerDevice<ShapeKey, Mutex<()>>>,
    /// Device copies of matrices only where the engine reserved them (`reserved`), dropped
    /// with the parameters; otherwise uploaded on first use and kept.
    budgeted: bool,
    /// Per circuit and device: the engine reserved its matrices there, and the shape whose
    /// matrices were made resident for it (once the first upload did).
    reserved: Mutex<HashMap<(CircuitId, usize), Option<ShapeKey>>>,
    /// Where full validations of parameter files are recorded
    /// ([`read_params_with_records`](crate::read_params_with_records)).
    validation_records: Option<std::path::PathBuf>,
    /// Which parameter files have published digests ([`BackendWorker::with_published_digests`]).
    published: Option<Arc<crate::PublishedDigest>>,
}

impl<B: Backend> BackendWorker<B> {
    /// A worker over `backends` (device `i` is `backends[i]`; host stages allocate through the
    /// first), recording constraint matrices for every circuit shape it synthesizes.
    pub fn new(backends: Vec<Arc<B>>) -> Self {
        BackendWorker {
            backends,
            matrices: Some(MatrixCache::default()),
            device_evaluation: true,
            sync_stages: false,
            host_params: Mutex::default(),
            keys: Mutex::default(),
            vks: Mutex::default(),
            device_matrices: Mutex::default(),
            matrix_uploads: Mutex::default(),
            budgeted: false,
            reserved: Mutex::default(),
            validation_records: None,
            published: None,
        }
    }

    /// Device copies of the recorded matrices follow the engine's reservations, as parameters
    /// do: a device holds a circuit's matrices only after [`Worker::matrices_reserved`] (made
    /// resident by the first upload that uses them) and drops them with the parameters
    /// ([`Worker::evict_params`]); elsewhere a witness-only partition has `a, b, c` evaluated
    /// on the host at its upload (the host path). Without this (the default, for single proofs
    /// and timing runs) matrices are made resident on first use and stay.
    pub fn with_budgeted_matrices(mut self) -> Self {
        self.budgeted = true;
        self
    }

    /// Keeps recorded constraint matrices in `dir` across restarts ([`MatrixCache::persistent`]).
    pub fn with_matrix_store(mut self, dir: std::path::PathBuf) -> Self {
        if self.matrices.is_some() {
            self.matrices = Some(MatrixCache::persistent(dir));
        }
        self
    }

    /// Records full validations of parameter files in `dir` and trusts a file whose length
    /// and checksum match its record ([`read_params_with_records`](crate::read_params_with_records)): a later
    /// [`Validation::Full`](cuzk_core::params::Validation::Full) load skips the point checks.
    pub fn with_validation_records(mut self, dir: std::path::PathBuf) -> Self {
        self.validation_records = Some(dir);
        self
    }

    /// Trusts a parameter file that would be validated in full when `published` says its
    /// contents have the digest published for its name (Filecoin's `parameters.json`): read at
    /// disk speed instead of checking every point ([`crate::params::ParamsFile::open_with`]).
    pub fn with_published_digests(mut self, published: Arc<crate::PublishedDigest>) -> Self {
        self.published = Some(published);
        self
    }

    /// The matrices of `circuit`'s shape, recorded from it (or loaded) when absent: what
    /// timing-only parameters are generated from ([`ParamSource::TimingOnly`]), so their
    /// registration can size them.
    pub fn record_matrices(&self, circuit: &dyn PartitionCircuit) -> Result<Arc<ConstraintMatrices>, WorkError> {
        let cache = self.matrices.as_ref().ok_or_else(|| WorkError::Internal("recording matrices needs the matrix cache".into()))?;
        cache.get_or_record_partition(circuit).ok_or_else(|| WorkError::Internal(format!("{}: recording the constraint matrices failed", circuit.shape())))
    }

    /// Synthesizes every circuit in full instead of recording matrices (a single proof, where
    /// recording would cost a second synthesis).
    pub fn without_matrix_cache(mut self) -> Self {
        self.matrices = None;
        self
    }

    /// With `false`, `a, b, c` are evaluated on the host and copied even when the backend could
    /// evaluate the recorded matrices on the device (which then need no device memory).
    pub fn with_device_evaluation(mut self, on: bool) -> Self {
        self.device_evaluation = on;
        self
    }

    /// Waits for the device at the end of every device stage, so a stage's wall time is its
    /// own (timing runs); by default an asynchronous backend lets a stage's work overlap the
    /// next one, as in production.
    pub fn with_stage_sync(mut self, on: bool) -> Self {
        self.sync_stages = on;
        self
    }

    /// The timing-only points of `shape` ([`ParamSource::TimingOnly`]), from its recorded matrices.
    fn timing_queries(&self, shape: &ShapeKey) -> Result<TimingQueries, WorkError> {
        let m = self.matrices.as_ref().and_then(|c| c.get(shape));
        let m = m.ok_or_else(|| WorkError::Internal(format!("{shape}: timing-only parameters need the recorded matrices")))?;
        let q = TimingQueries::of(&m).map_err(|e| WorkError::Internal(format!("{shape}: {e}")))?;
        tracing::warn!(circuit = %shape, "TIMING-ONLY parameters (not a real SRS; no proof made with them is valid)");
        Ok(q)
    }

    /// The whole parameter set of a host load; a full validation's curve and subgroup checks
    /// run on the first device where its backend offers them ([`Backend::checks_points`]).
    fn read_params(&self, task: &LoadTask) -> Result<Parameters, WorkError> {
        match &task.source {
            ParamSource::File(path) => {
                let checks = self.backends.first().and_then(|b| point_checks(&**b));
                read_params_trusting(path, task.validation, self.validation_records.as_deref(), checks, self.published.as_ref()).map(|(p, _)| p)
            }
            ParamSource::TimingOnly(shape) => Ok(self.timing_queries(shape)?.params()),
        }
    }

    /// The backend of device `d`.
    pub fn backend(&self, d: usize) -> Option<&Arc<B>> {
        self.backends.get(d)
    }

    /// The recorded constraint matrices, when the cache is on.
    pub fn matrices(&self) -> Option<&MatrixCache> {
        self.matrices.as_ref()
    }

    /// The verifying key of a loaded circuit.
    pub fn verifying_key(&self, circuit: CircuitId) -> Option<Arc<VerifyingKey>> {
        lock(&self.vks).get(&circuit).cloned()
    }

    /// Makes `params` resident on device `d` for `circuit` without a parameter file (what a
    /// device load does after reading one).
    pub fn load_key(&self, circuit: CircuitId, d: usize, params: Parameters) -> Result<(), WorkError> {
        self.load_key_placed(circuit, d, params, false)
    }

    /// Loads the queries of `q` onto device `d` one at a time (each dropped once on the device).
    fn load_key_from(&self, circuit: CircuitId, d: usize, q: &impl Queries, streamed: bool) -> Result<(), WorkError> {
        let backend = self.backends.get(d).ok_or_else(|| WorkError::Internal(format!("no device {d}")))?;
        // A query's upload is the time from its decoding's end to the next query's start.
        let decoded: Cell<Option<(Section, usize, Instant)>> = Cell::new(None);
        let uploaded = || {
            if let Some((section, points, at)) = decoded.take() {
                let took = at.elapsed();
                progress!(took, circuit = circuit.0, device = d, ?section, points, seconds = took.as_secs_f64(), "parameter query uploaded");
            }
        };
        let key = ProvingKey::load_by_query(
            &**backend,
            q.vk(),
            Some(streamed),
            |s| {
                uploaded();
                let points = q.g1(s)?;
                decoded.set(Some((s, points.len(), Instant::now())));
                Ok::<_, WorkError>(points)
            },
            || {
                uploaded();
                let points = q.b_g2()?;
                decoded.set(Some((Section::BG2, points.len(), Instant::now())));
                Ok(points)
            },
        )?;
        uploaded();
        self.store_key(circuit, d, key);
        Ok(())
    }

    /// [`BackendWorker::load_key`], with `streamed`: the bases stay in page-locked host memory
    /// and are streamed through the device during MSMs ([`ProvingKey::load_placed`]; the CPU
    /// and wgpu backends load them resident).
    pub fn load_key_placed(&self, circuit: CircuitId, d: usize, params: Parameters, streamed: bool) -> Result<(), WorkError> {
        let backend = self.backends.get(d).ok_or_else(|| WorkError::Internal(format!("no device {d}")))?;
        self.store_key(circuit, d, ProvingKey::load_placed(&**backend, params, streamed)?);
        Ok(())
    }

    fn store_key(&self, circuit: CircuitId, d: usize, key: ProvingKey<B>) {
        lock(&self.vks).insert(circuit, Arc::new(key.vk.clone()));
        lock(&self.keys).insert((circuit, d), Arc::new(key));
    }

    fn backend_at(&self, at: Location) -> Result<&Arc<B>, WorkError> {
        let d = match at {
            Location::Host => 0,
            Location::Device(d) => d.0 as usize,
        };
        self.backends.get(d).ok_or_else(|| WorkError::Internal(format!("no device {d}")))
    }

    fn key(&self, circuit: CircuitId, at: Location, stage: Stage) -> Result<Arc<ProvingKey<B>>, WorkError> {
        let Location::Device(d) = at else { return Err(WorkError::Internal(format!("{} runs on a device", stage.name()))) };
        lock(&self.keys).get(&(circuit, d.0 as usize)).cloned().ok_or_else(|| WorkError::Internal(format!("no parameters resident for {}", stage.name())))
    }

    /// The shape's matrices on device `d`, uploaded on first use (a caller may upload them
    /// ahead of the first job).
    pub fn resident_matrices(&self, shape: &ShapeKey, m: &Arc<ConstraintMatrices>, d: usize) -> Result<Arc<B::Matrices>, WorkError> {
        let key = (shape.clone(), d);
        if let Some(r) = lock(&self.device_matrices).get(&key) {
            return Ok(r.clone());
        }
        let backend = self.backends.get(d).ok_or_else(|| WorkError::Internal(format!("no device {d}")))?;
        let gate = lock(&self.matrix_uploads).entry(key.clone()).or_default().clone();
        let _uploading = lock(&gate);
        if let Some(r) = lock(&self.device_matrices).get(&key) {
            return Ok(r.clone()); // uploaded while this call waited at the gate
        }
        let r = Arc::new(backend.load_matrices(m)?);
        tracing::info!(circuit = %shape, device = d, bytes = backend.matrices_bytes(&r), "constraint matrices resident");
        Ok(lock(&self.device_matrices).entry(key).or_insert(r).clone())
    }

    /// The matrices an upload of `circuit` on device `d` evaluates `a, b, c` with: made
    /// resident on first use, where the engine reserved them when budgeted; `None` when the
    /// upload takes the host path.
    fn usable_matrices(&self, circuit: CircuitId, shape: &ShapeKey, m: &Arc<ConstraintMatrices>, d: usize) -> Result<Option<Arc<B::Matrices>>, WorkError> {
        if !self.budgeted {
            return self.resident_matrices(shape, m, d).map(Some);
        }
        match lock(&self.reserved).get_mut(&(circuit, d)) {
            Some(entry) => *entry = Some(shape.clone()),
            None => return Ok(None),
        }
        // The engine evicts a copy only while no partition uses it, so none interleaves here.
        self.resident_matrices(shape, m, d).map(Some)
    }

    /// Whether `shape`'s matrices are resident on device `d`.
    pub fn has_device_matrices(&self, shape: &ShapeKey, d: usize) -> bool {
        lock(&self.device_matrices).contains_key(&(shape.clone(), d))
    }

    fn synthesize(&self, work: Work, backend: &B) -> Result<StageOutput<PartData<B>>, WorkError> {
        let witness_only = self.device_evaluation && backend.evaluates_constraints_on_device();
        let (synth, public) = synthesize_work(&*work, self.matrices.as_ref(), backend.host_allocator(), witness_only)?;
        let data = match synth {
            Synthesis::Witness(witness, matrices) => PartData::Witness { witness, matrices, shape: work.shape().clone(), check: work.witness_check() },
            Synthesis::Record(synth) => PartData::Synthesized(*synth),
        };
        Ok(StageOutput::Synthesized { data, public })
    }
}

// Synthesis is the same for every backend. It lives in these free functions, not in
// `BackendWorker<B>`, so that it is compiled once, in this crate, instead of once per backend
// in every crate and test that names a `BackendWorker<B>`.

/// Synthesizes one partition: the witness alone (`witness_only`: the backend evaluates
/// `a, b, c` on the device) or the whole record, and its public inputs. A witness that is not
/// trusted ([`WitnessCheck`]) has its public inputs checked here, and its constraints here on
/// a record (else at the upload).
fn synthesize_work(
    work: &dyn PartitionCircuit,
    matrices: Option<&MatrixCache>,
    alloc: SharedAllocator,
    witness_only: bool,
) -> Result<(Synthesis, Vec<Scalar>), WorkError> {
    let public = work.public_inputs().map_err(WorkError::Circuit)?;
    let synth = synthesize_circuit(matrices, work, alloc, witness_only)?;
    let check = work.witness_check();
    if check.runs() {
        let input = match &synth {
            Synthesis::Witness(witness, _) => &witness.input,
            Synthesis::Record(synth) => {
                if let Some(constraint) = first_unsatisfied(synth).filter(|_| check.decides()) {
                    return Err(WorkError::Unsatisfied { constraint });
                }
                &synth.input
            }
        };
        if input.get(1..) != Some(&public[..]) && check.decides() {
            return Err(WorkError::PublicInputsDiffer);
        }
    }
    Ok((synth, public))
}

/// Synthesizes `c`. With recorded matrices (or ones it can record) the witness is written in
/// parallel parts where the circuit allows; with `witness_only` that is all, else `a, b, c`
/// are the host's sparse products.
fn synthesize_circuit(matrices: Option<&MatrixCache>, c: &dyn PartitionCircuit, alloc: SharedAllocator, witness_only: bool) -> Result<Synthesis, WorkError> {
    Ok(match matrices.and_then(|cache| cache.get_or_record_partition(c)) {
        Some(matrices) => {
            let witness = matrices.witness_parallel(c, alloc.clone())?;
            if witness_only {
                Synthesis::Witness(witness, matrices)
            } else {
                Synthesis::Record(Box::new(crate::matrices::evaluate(&matrices, witness, alloc)?))
            }
        }
        None => Synthesis::Record(Box::new(c.synthesize_in_full(alloc, SizeHint::default())?)),
    })
}

/// What synthesis produced: the witness alone (for evaluation on the device), or the record.
enum Synthesis {
    Witness(WitnessCs, Arc<ConstraintMatrices>),
    Record(Box<Synthesized>),
}

/// The first constraint `a·b = c` the record violates, if any: an unsatisfied circuit (a bad
/// witness) must fail the job, never yield a proof that does not verify.
fn first_unsatisfied(s: &Synthesized) -> Option<usize> {
    use rayon::prelude::*;
    (0..s.a.len()).into_par_iter().with_min_len(1 << 14).find_first(|&i| s.a[i] * s.b[i] != s.c[i])
}

impl<B: Backend + 'static> Worker for BackendWorker<B> {
    type Data = PartData<B>;

    fn devices(&self) -> usize {
        self.backends.len()
    }

    fn device_name(&self, d: usize) -> String {
        self.backends.get(d).map(|b| b.name()).unwrap_or_default()
    }

    fn run_stage(&self, task: StageTask<PartData<B>>) -> Result<StageOutput<PartData<B>>, WorkError> {
        let StageTask { partition, stage, location, circuit, input, verify_with, randomness } = task;
        let _span = tracing::info_span!("stage", job = partition.job.0, partition = partition.index, stage = stage.name()).entered();
        let backend = self.backend_at(location)?;
        let data = match input {
            StageInput::Circuit(work) if stage == Stage::Synthesize => return self.synthesize(work, backend),
            StageInput::Circuit(_) => return Err(WorkError::Internal(format!("{} has no input data", stage.name()))),
            StageInput::Data(d) => d,
        };
        let out = match (stage, data) {
            (Stage::Upload, PartData::Synthesized(synth)) => PartData::Uploaded(upload(&**backend, &*self.key(circuit, location, stage)?, synth)?),
            (Stage::Upload, PartData::Witness { witness, matrices, shape, check }) => {
                let Location::Device(d) = location else { return Err(WorkError::Internal("upload runs on a device".into())) };
                let Some(resident) = self.usable_matrices(circuit, &shape, &matrices, d.0 as usize)? else {
                    // No copy of the matrices here: the host path (products and check on the host).
                    let synth = crate::matrices::evaluate(&matrices, witness, backend.host_allocator())?;
                    if check.runs() {
                        if let Some(constraint) = first_unsatisfied(&synth).filter(|_| check.decides()) {
                            return Err(WorkError::Unsatisfied { constraint });
                        }
                    }
                    let up = upload(&**backend, &*self.key(circuit, location, stage)?, synth)?;
                    if self.sync_stages {
                        backend.wait_idle()?;
                    }
                    return Ok(StageOutput::Data(PartData::Uploaded(up)));
                };
                let up = upload_witness(&**backend, &*self.key(circuit, location, stage)?, &matrices, &resident, witness)?;
                // A witness from a request may be wrong: checked on the device exactly as
                // synthesis checks a host record (a trusted one holds by construction).
                if check.runs() {
                    let found = backend.first_unsatisfied(&up.a, &up.b, &up.c, matrices.num_constraints());
                    if let Some(constraint) = found.map_err(|source| ProveError::Backend { stage: Stage::Upload, source })?.filter(|_| check.decides()) {
                        return Err(WorkError::Unsatisfied { constraint });
                    }
                }
                PartData::Uploaded(up)
            }
            (Stage::Ntt, PartData::Uploaded(up)) => {
                let (h, domain, witness) = compute_h(&**backend, up)?;
                PartData::H { h, domain, witness }
            }
            (Stage::Msm, PartData::H { h, domain, witness }) => PartData::Msm(msms(&**backend, &*self.key(circuit, location, stage)?, &h, &domain, &witness)?),
            (Stage::Finalize, PartData::Msm(m)) => {
                let vk = self.verifying_key(circuit).ok_or_else(|| WorkError::Internal("no verifying key".into()))?;
                let (r, s) = randomness.unwrap_or_else(|| {
                    let mut rng = rand::thread_rng();
                    (Scalar::random(&mut rng), Scalar::random(&mut rng))
                });
                let proof = finalize(&vk, &m, r, s);
                if let Some(public) = verify_with {
                    if !verify(&vk, &proof, &public)? {
                        return Err(WorkError::ProofInvalid);
                    }
                }
                return Ok(StageOutput::Proof(proof));
            }
            (stage, d) => return Err(WorkError::Internal(format!("{} cannot consume {} data", stage.name(), d.name()))),
        };
        if self.sync_stages {
            backend.wait_idle()?;
        }
        Ok(StageOutput::Data(out))
    }

    fn load_params(&self, task: LoadTask) -> Result<(), WorkError> {
        let _span = tracing::info_span!("load_params", circuit = task.circuit.0, at = ?task.at).entered();
        self.backend_at(task.at)?;
        let host = if task.from_host { lock(&self.host_params).get(&task.circuit).cloned() } else { None };
        match task.at {
            Location::Host => {
                let p = Arc::new(self.read_params(&task)?);
                lock(&self.vks).insert(task.circuit, Arc::new(p.vk.clone()));
                lock(&self.host_params).insert(task.circuit, p);
            }
            // One query at a time, from the warm host copy, the file or timing-only points:
            // besides the device copy the load holds one decoded query (at most the `h` or `l`
            // query, 12.9 GB of a 32 GiB PoRep's 47.4 GB), not a second whole set.
            Location::Device(d) => {
                let (d, streamed) = (d.0 as usize, task.streamed);
                match (host, &task.source) {
                    (Some(p), _) => self.load_key_from(task.circuit, d, &*p, streamed)?,
                    (None, ParamSource::TimingOnly(shape)) => self.load_key_from(task.circuit, d, &self.timing_queries(shape)?, streamed)?,
                    // A full validation's curve and subgroup checks run on the device when its
                    // backend offers them, while the host decodes the next block.
                    (None, ParamSource::File(path)) => {
                        let file = ParamsFile::open_with(path, task.validation, self.validation_records.as_deref(), self.published.as_ref())?;
                        let checks = self.backends.get(d).and_then(|b| point_checks(&**b));
                        self.load_key_from(task.circuit, d, &CheckedFile { file: &file, checks }, streamed)?;
                        file.finish();
                    }
                }
            }
        }
        Ok(())
    }

    fn matrices_info(&self) -> Vec<MatricesInfo> {
        let Some(cache) = &self.matrices else { return Vec::new() };
        let resident = lock(&self.device_matrices);
        let mut out: Vec<MatricesInfo> = cache
            .recorded()
            .into_iter()
            .map(|(shape, m)| MatricesInfo {
                circuit: shape.to_string(),
                entries: m.num_entries() as u64,
                host_bytes: m.heap_bytes() as u64,
                device_bytes: self.backends.iter().enumerate().map(|(d, b)| resident.get(&(shape.clone(), d)).map_or(0, |r| b.matrices_bytes(r))).collect(),
            })
            .collect();
        out.sort_by(|a, b| a.circuit.cmp(&b.circuit));
        out
    }

    fn witness_only(&self) -> bool {
        self.matrices.is_some() && self.device_evaluation && self.backends.first().is_some_and(|b| b.evaluates_constraints_on_device())
    }

    fn matrices_device_bytes(&self, shape: &ShapeKey) -> Option<u64> {
        if !self.witness_only() {
            return None;
        }
        let m = self.matrices.as_ref()?.get(shape)?;
        // The host form (offsets as u64, 8 bytes an entry, the coefficient table) bounds the
        // device form (the same arrays, offsets as u32 where they fit), plus the long-row
        // index (at most a u32 per row and matrix).
        Some(m.heap_bytes() as u64 + 12 * (m.num_constraints() as u64 + 1))
    }

    fn matrices_reserved(&self, circuit: CircuitId, device: cuzk_core::engine::DeviceId) {
        if self.budgeted {
            lock(&self.reserved).entry((circuit, device.0 as usize)).or_insert(None);
        }
    }

    fn evict_params(&self, circuit: CircuitId, from: Location) {
        match from {
            Location::Host => {
                lock(&self.host_params).remove(&circuit);
            }
            Location::Device(d) => {
                let d = d.0 as usize;
                lock(&self.keys).remove(&(circuit, d));
                if self.budgeted {
                    let mut reserved = lock(&self.reserved);
                    if let Some(Some(shape)) = reserved.remove(&(circuit, d)) {
                        // Another circuit of the same shape reserved there keeps the copy.
                        let shared = reserved.iter().any(|((_, e), s)| *e == d && s.as_ref() == Some(&shape));
                        if !shared && lock(&self.device_matrices).remove(&(shape.clone(), d)).is_some() {
                            tracing::info!(circuit = %shape, device = d, "constraint matrices evicted");
                        }
                    }
                }
            }
        }
    }
}

/// A parameter set a device load takes one query at a time.
trait Queries {
    /// The verifying key.
    fn vk(&self) -> VerifyingKey;
    /// A G1 query (`H`, `L`, `A` or `BG1`).
    fn g1(&self, section: Section) -> Result<Vec<blstrs::G1Affine>, WorkError>;
    /// The `b_g2` query.
    fn b_g2(&self) -> Result<Vec<blstrs::G2Affine>, WorkError>;
}

/// A warm host copy: each query copied when the load takes it.
impl Queries for Parameters {
    fn vk(&self) -> VerifyingKey {
        self.vk.clone()
    }
    fn g1(&self, section: Section) -> Result<Vec<blstrs::G1Affine>, WorkError> {
        Ok(match section {
            Section::H => self.h.clone(),
            Section::L => self.l.clone(),
            Section::A => self.a.clone(),
            Section::BG1 => self.b_g1.clone(),
            Section::Ic | Section::BG2 => Vec::new(),
        })
    }
    fn b_g2(&self) -> Result<Vec<blstrs::G2Affine>, WorkError> {
        Ok(self.b_g2.clone())
    }
}

/// A parameter file and the point checks of the device it loads onto (`None` where its
/// backend offers none: the host validates while it decodes).
struct CheckedFile<'a> {
    file: &'a ParamsFile,
    checks: Option<&'a dyn PointChecks>,
}

/// A parameter file: each query decoded (and checked) when the load takes it.
impl Queries for CheckedFile<'_> {
    fn vk(&self) -> VerifyingKey {
        self.file.vk().clone()
    }
    fn g1(&self, section: Section) -> Result<Vec<blstrs::G1Affine>, WorkError> {
        self.file.g1_checked(section, self.checks)
    }
    fn b_g2(&self) -> Result<Vec<blstrs::G2Affine>, WorkError> {
        self.file.b_g2_checked(self.checks)
    }
}

/// Timing-only points: each query generated when the load takes it.
impl Queries for TimingQueries {
    fn vk(&self) -> VerifyingKey {
        TimingQueries::vk(self)
    }
    fn g1(&self, section: Section) -> Result<Vec<blstrs::G1Affine>, WorkError> {
        Ok(TimingQueries::g1(self, section))
    }
    fn b_g2(&self) -> Result<Vec<blstrs::G2Affine>, WorkError> {
        Ok(TimingQueries::b_g2(self))
    }
}
