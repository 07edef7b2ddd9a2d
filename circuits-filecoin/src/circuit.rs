//! Prepared jobs and their partition circuits.

use std::sync::Arc;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use filecoin_proofs::{SectorShape2KiB, SectorShape32GiB, SectorShape64GiB};

use crate::error::FilError;
use crate::ids::{circuit_of, FilKind, FilShape};
use crate::jobs::{Checks, Job, PoRepJob, PostJob, SnapJob};
use crate::request::FilRequest;

/// A job of one kind at one of the three tree shapes (2 KiB, 8 MiB and 512 MiB sectors share
/// the first).
pub(crate) enum AnyJob {
    PoRep8(PoRepJob<SectorShape2KiB>),
    PoRep88(PoRepJob<SectorShape32GiB>),
    PoRep882(PoRepJob<SectorShape64GiB>),
    Snap8(SnapJob<SectorShape2KiB>),
    Snap88(SnapJob<SectorShape32GiB>),
    Snap882(SnapJob<SectorShape64GiB>),
    Post8(PostJob<SectorShape2KiB>),
    Post88(PostJob<SectorShape32GiB>),
    Post882(PostJob<SectorShape64GiB>),
}

macro_rules! dispatch {
    ($job:expr, $j:ident => $e:expr) => {
        match $job {
            AnyJob::PoRep8($j) => $e,
            AnyJob::PoRep88($j) => $e,
            AnyJob::PoRep882($j) => $e,
            AnyJob::Snap8($j) => $e,
            AnyJob::Snap88($j) => $e,
            AnyJob::Snap882($j) => $e,
            AnyJob::Post8($j) => $e,
            AnyJob::Post88($j) => $e,
            AnyJob::Post882($j) => $e,
        }
    };
}

/// Builds the job of `kind` at the tree shape of `sector_size` from a request checked as the
/// [`Checks`] say; `req: None` builds the blank job.
fn build(kind: FilKind, sector_size: u64, registered_proof: u64, req: Option<(&FilRequest, Checks)>) -> Result<AnyJob, FilError> {
    let shape = match sector_size {
        s if s <= 1 << 29 => 0,
        s if s == 1 << 35 => 1,
        _ => 2,
    };
    Ok(match (kind, shape, req) {
        (FilKind::PoRep, 0, Some((r, c))) => AnyJob::PoRep8(PoRepJob::new(r, c)?),
        (FilKind::PoRep, 1, Some((r, c))) => AnyJob::PoRep88(PoRepJob::new(r, c)?),
        (FilKind::PoRep, _, Some((r, c))) => AnyJob::PoRep882(PoRepJob::new(r, c)?),
        (FilKind::PoRep, 0, None) => AnyJob::PoRep8(PoRepJob::blank(registered_proof)?),
        (FilKind::PoRep, 1, None) => AnyJob::PoRep88(PoRepJob::blank(registered_proof)?),
        (FilKind::PoRep, _, None) => AnyJob::PoRep882(PoRepJob::blank(registered_proof)?),
        (FilKind::SnapDeals, 0, Some((r, c))) => AnyJob::Snap8(SnapJob::new(r, c)?),
        (FilKind::SnapDeals, 1, Some((r, c))) => AnyJob::Snap88(SnapJob::new(r, c)?),
        (FilKind::SnapDeals, _, Some((r, c))) => AnyJob::Snap882(SnapJob::new(r, c)?),
        (FilKind::SnapDeals, 0, None) => AnyJob::Snap8(SnapJob::blank(registered_proof)?),
        (FilKind::SnapDeals, 1, None) => AnyJob::Snap88(SnapJob::blank(registered_proof)?),
        (FilKind::SnapDeals, _, None) => AnyJob::Snap882(SnapJob::blank(registered_proof)?),
        (k, 0, Some((r, c))) => AnyJob::Post8(PostJob::new(r, k, c)?),
        (k, 1, Some((r, c))) => AnyJob::Post88(PostJob::new(r, k, c)?),
        (k, _, Some((r, c))) => AnyJob::Post882(PostJob::new(r, k, c)?),
        (k, 0, None) => AnyJob::Post8(PostJob::blank(registered_proof, k)?),
        (k, 1, None) => AnyJob::Post88(PostJob::blank(registered_proof, k)?),
        (k, _, None) => AnyJob::Post882(PostJob::blank(registered_proof, k)?),
    })
}

/// A checked request: its circuit id and its partitions.
pub struct Prepared {
    /// The circuit (kind and sector size): selects the parameters.
    pub circuit: FilShape,
    /// `filecoin-proofs`' parameter cache identifier (file stem without the `v28-` prefix).
    pub cache_id: String,
    job: Arc<AnyJob>,
    partitions: usize,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared").field("circuit", &self.circuit.id()).field("partitions", &self.partitions).finish()
    }
}

impl Prepared {
    /// Number of partition proofs.
    pub fn partitions(&self) -> usize {
        self.partitions
    }

    /// The circuit of partition `k` (`k < partitions()`).
    pub fn partition(&self, k: usize) -> PartitionCircuit {
        PartitionCircuit { job: self.job.clone(), k: Some(k) }
    }

    /// The blank circuit (no witness), for parameter generation.
    pub fn blank(&self) -> PartitionCircuit {
        PartitionCircuit { job: self.job.clone(), k: None }
    }

    /// A prepared job of `circuit` with `partitions` partitions.
    pub(crate) fn from_job(circuit: FilShape, job: Arc<AnyJob>, partitions: usize) -> Prepared {
        let cache_id = dispatch!(&*job, j => j.cache_id());
        Prepared { circuit, cache_id, job, partitions }
    }

    /// The blank job of a circuit, for parameter generation and file names.
    pub fn blank_of(circuit: FilShape) -> Result<Prepared, FilError> {
        let job = build(circuit.kind, circuit.sector_size, circuit.default_registered_proof(), None)?;
        let cache_id = dispatch!(&job, j => j.cache_id());
        Ok(Prepared { circuit, cache_id, job: Arc::new(job), partitions: 0 })
    }
}

/// Parses a request, verifies its vanilla proofs against its public data and builds its
/// partitions. CPU-heavy for PoRep (run it off the async runtime).
pub fn prepare(req: &FilRequest) -> Result<Prepared, FilError> {
    prepare_checked(req, Checks::Full)
}

/// For benchmarks only: [`prepare`] without the verification of the vanilla proofs, so that
/// synthetic requests ([`crate::synthetic_request`]) build the circuits of production sector sizes.
///
/// It checks everything [`prepare`] checks about a request's form, with the same errors: the
/// registered proof, the API field the vanilla proofs are in, their decoding
/// (bincode elements, the C1 output JSON and Curio's wrapper), the partition, challenge and
/// sector counts, every Merkle path's length and arities, the commitments, the randomness, and
/// PoRep's replica id recomputed from the miner id, sector number, ticket and `comm_d`. It skips
/// what needs the proofs to be true: `StackedDrg::verify_all_partitions` (PoRep),
/// `EmptySectorUpdate::verify_all_partitions` (SnapDeals) and the verification in Filecoin's
/// PoSt partitioning (the challenges the randomness selects, the inclusion proofs against each
/// sector's `comm_r`); PoSt sector proofs are partitioned as Filecoin partitions them. A job
/// built from proofs that do not verify yields an unsatisfied circuit: nothing proved from it is
/// a valid proof, and the daemon accepts such requests only in its bench mode.
pub fn prepare_unchecked(req: &FilRequest) -> Result<Prepared, FilError> {
    prepare_checked(req, Checks::FormOnly)
}

fn prepare_checked(req: &FilRequest, checks: Checks) -> Result<Prepared, FilError> {
    let circuit = circuit_of(req.kind, req.registered_proof)?;
    let job = build(req.kind, circuit.sector_size, req.registered_proof, Some((req, checks)))?;
    let cache_id = dispatch!(&job, j => j.cache_id());
    let partitions = dispatch!(&job, j => j.partitions());
    Ok(Prepared { circuit, cache_id, job: Arc::new(job), partitions })
}

/// One partition of a prepared job (or its blank circuit): a cheap handle that builds
/// Filecoin's circuit when synthesized.
#[derive(Clone)]
pub struct PartitionCircuit {
    job: Arc<AnyJob>,
    k: Option<usize>,
}

impl PartitionCircuit {
    /// The partition's public inputs (without `ONE`), as Filecoin's verifier computes them.
    pub fn public_inputs(&self) -> Result<Vec<Scalar>, FilError> {
        let k = self.k.ok_or_else(|| FilError::Filecoin("a blank circuit has no public inputs".into()))?;
        dispatch!(&*self.job, j => j.public_inputs(k))
    }
}

impl Circuit<Scalar> for PartitionCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        dispatch!(&*self.job, j => j.synthesize(self.k, cs))
    }
}

impl cuzk_core::circuit::PublicInputs for PartitionCircuit {
    fn public_inputs(&self) -> Result<Vec<Scalar>, cuzk_core::circuit::CircuitError> {
        Ok(PartitionCircuit::public_inputs(self)?)
    }
}

// Recording, synthesis and witnesses of Filecoin's partitions (every kind at every tree shape),
// compiled here once rather than in every crate and test binary that runs them.
cuzk_core::compiled_synthesis!(PartitionCircuit);

impl PartitionCircuit {
    /// Writes the assignment into `input` (`input[0]` is `ONE`) and `aux`, each as long as the
    /// recorded shape says, in parallel parts (a PoRep partition: one per challenge); `Ok(false)`
    /// when the kind or the shape does not split so (the buffers may then hold part of it).
    /// [`cuzk_core::witness::ParallelWitness::witness_into`] falls back to one part.
    pub fn witness_in_parts(&self, input: &mut [Scalar], aux: &mut [Scalar]) -> Result<bool, cuzk_core::witness::WitnessError> {
        let k = self.k.ok_or(cuzk_core::witness::WitnessError::Circuit(SynthesisError::AssignmentMissing))?;
        dispatch!(&*self.job, j => j.witness_in_parts(k, input, aux))
    }
}

impl PartitionCircuit {
    /// The circuit's size (constraints, inputs with `ONE`, aux), counted by running its gadgets
    /// without values.
    pub fn size(&self) -> Result<crate::parallel::CircuitSize, SynthesisError> {
        crate::parallel::count(self.clone())
    }

    /// Writes the assignment by running Filecoin's gadgets on the calling thread (the reference
    /// the native writers are checked and measured against).
    pub fn witness_sequential(&self, input: &mut [Scalar], aux: &mut [Scalar]) -> Result<(), cuzk_core::witness::WitnessError> {
        crate::parallel::sequential(self.clone(), input, aux)
    }
}

impl cuzk_core::witness::ParallelWitness for PartitionCircuit {
    /// The partition's assignment: a PoRep partition's challenges on one thread each, the other
    /// kinds sequentially (see `parallel`).
    fn witness_into(&self, input: &mut [Scalar], aux: &mut [Scalar]) -> Result<(), cuzk_core::witness::WitnessError> {
        let k = self.k.ok_or(cuzk_core::witness::WitnessError::Circuit(SynthesisError::AssignmentMissing))?;
        dispatch!(&*self.job, j => j.witness_into(k, input, aux))
    }

    /// PoRep partitions repeat their challenges, PoSt partitions their sectors.
    fn repeats(&self) -> Option<cuzk_core::matrices::Repeats> {
        dispatch!(&*self.job, j => j.repeats(self.k?))
    }
}
