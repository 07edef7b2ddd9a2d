//! One job per proof kind, generic over the sector's tree shape: verifying the decoded vanilla
//! proofs (`decode`), and building each partition's circuit with Filecoin's constructors.

use std::sync::OnceLock;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use cuzk_core::witness::WitnessError;
use filecoin_hashers::Hasher;
use filecoin_proofs::parameters::{setup_params, window_post_setup_params, winning_post_setup_params};
use filecoin_proofs::{DefaultPieceDomain, DefaultPieceHasher, PoStType, SectorUpdateConfig, TreeRHasher};
use storage_proofs_core::compound_proof::{CompoundProof, SetupParams};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{self, StackedCompound, StackedDrg};
use storage_proofs_post::fallback::{self, FallbackPoStCompound, PublicSector};
use storage_proofs_update::{EmptySectorUpdate, EmptySectorUpdateCompound, PartitionProof};

use cuzk_core::matrices::Repeats;

use crate::decode;
use crate::error::FilError;
use crate::ids::{porep_config, post_config, update_porep_config, FilKind};
use crate::porep::witness::ChallengeInputs;
use crate::request::FilRequest;

/// What the shape-generic jobs have in common.
pub(crate) trait Job: Send + Sync + Sized {
    /// Partition circuits.
    fn partitions(&self) -> usize;
    /// Public inputs of partition `k` (without `ONE`).
    fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>, FilError>;
    /// Synthesizes partition `k` (or the blank circuit, for parameter generation) into `cs`.
    fn synthesize<CS: ConstraintSystem<Scalar>>(&self, k: Option<usize>, cs: &mut CS) -> Result<(), SynthesisError>;
    /// The parameter cache identifier (`filecoin-proofs`' `cache_identifier`).
    fn cache_id(&self) -> String;
    /// Writes the assignment of partition `k` into `input` (`input[0]` is `ONE`) and `aux` (as
    /// long as the recorded shape says) in parallel parts: `Ok(false)` when the kind or the
    /// shape does not split (the buffers may then hold part of the assignment).
    fn witness_in_parts(&self, k: usize, input: &mut [Scalar], aux: &mut [Scalar]) -> Result<bool, WitnessError> {
        let _ = (k, input, aux);
        Ok(false)
    }
    /// Where partition `k`'s circuit repeats one block (its challenges, its sectors).
    fn repeats(&self, k: usize) -> Option<Repeats> {
        let _ = k;
        None
    }
    /// [`Job::witness_in_parts`], else sequentially (also when a part does not fit its window).
    fn witness_into(&self, k: usize, input: &mut [Scalar], aux: &mut [Scalar]) -> Result<(), WitnessError> {
        match self.witness_in_parts(k, input, aux) {
            Ok(true) => Ok(()),
            Ok(false) | Err(WitnessError::Layout { .. }) => crate::parallel::sequential(JobCircuit { job: self, k }, input, aux),
            Err(e) => Err(e),
        }
    }
}

/// Partition `k` of a job as a circuit (by reference).
struct JobCircuit<'a, J> {
    job: &'a J,
    k: usize,
}

impl<J: Job> Circuit<Scalar> for JobCircuit<'_, J> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        self.job.synthesize(Some(self.k), cs)
    }
}

/// What building a job from a request checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Checks {
    /// The request's form (decoding, lengths, counts) and its vanilla proofs against its public
    /// data: what the daemon accepts.
    Full,
    /// The form only: the vanilla proofs are not verified (synthetic requests, benchmarks).
    FormOnly,
}

fn unsat(e: impl std::fmt::Display) -> SynthesisError {
    SynthesisError::IoError(std::io::Error::other(format!("building the circuit: {e:#}")))
}

/// Runs a Filecoin check that may panic on malformed input, turning a panic into an error.
fn guarded<T>(what: &str, f: impl FnOnce() -> anyhow::Result<T>) -> Result<T, FilError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(|e| FilError::VanillaInvalid(format!("{what}: {e:#}"))),
        Err(_) => Err(FilError::VanillaInvalid(format!("{what}: malformed proof (the checker panicked)"))),
    }
}

// ---------------------------------------------------------------- PoRep C2

type PoRepPub<Tree> = stacked::PublicInputs<<<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain, DefaultPieceDomain>;

/// PoRep commit phase 2.
pub(crate) struct PoRepJob<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    params: stacked::PublicParams<Tree>,
    inputs: PoRepPub<Tree>,
    proofs: Vec<Vec<filecoin_proofs::VanillaSealProof<Tree>>>,
    /// What a partition's header allocates (the same for every partition), measured once.
    header: OnceLock<Option<(usize, usize)>>,
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> PoRepJob<Tree> {
    pub(crate) fn compound(registered_proof: u64) -> Result<(stacked::PublicParams<Tree>, usize), FilError> {
        let config = porep_config(registered_proof)?;
        let partitions = usize::from(config.partitions);
        let sp = SetupParams { vanilla_params: setup_params(&config).map_err(FilError::fil)?, partitions: Some(partitions), priority: false };
        let pp =
            <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::setup(&sp).map_err(FilError::fil)?;
        Ok((pp.vanilla_params, partitions))
    }

    /// Decodes a request and checks it as `checks` says.
    pub(crate) fn new(req: &FilRequest, checks: Checks) -> Result<Self, FilError> {
        let (params, _) = Self::compound(req.registered_proof)?;
        let parts = decode::porep::<Tree>(req)?;
        let inputs = stacked::PublicInputs {
            replica_id: parts.replica_id,
            tau: Some(stacked::Tau { comm_d: parts.comm_d, comm_r: parts.comm_r }),
            k: None,
            seed: Some(parts.c1.seed),
        };
        let proofs = parts.c1.proofs;
        if checks == Checks::FormOnly {
            return Ok(Self::unchecked(params, inputs, proofs));
        }
        let ok = guarded("PoRep vanilla proofs", || StackedDrg::<Tree, DefaultPieceHasher>::verify_all_partitions(&params, &inputs, &proofs))?;
        if !ok {
            return Err(FilError::VanillaInvalid("the PoRep vanilla proofs do not verify against comm_r, comm_d, the replica id and the seed".into()));
        }
        Ok(PoRepJob { params, inputs, proofs, header: OnceLock::new() })
    }

    /// A job from vanilla proofs that were not checked (synthetic jobs, `crate::synthetic::porep`, and
    /// [`Checks::FormOnly`]).
    pub(crate) fn unchecked(params: stacked::PublicParams<Tree>, inputs: PoRepPub<Tree>, proofs: Vec<Vec<filecoin_proofs::VanillaSealProof<Tree>>>) -> Self {
        PoRepJob { params, inputs, proofs, header: OnceLock::new() }
    }

    /// The blank job of a registered proof (parameter generation).
    pub(crate) fn blank(registered_proof: u64) -> Result<Self, FilError> {
        let (params, _) = Self::compound(registered_proof)?;
        let d = <Tree::Hasher as Hasher>::Domain::default();
        let inputs = stacked::PublicInputs { replica_id: d, tau: None, k: None, seed: None };
        Ok(PoRepJob { params, inputs, proofs: Vec::new(), header: OnceLock::new() })
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Job for PoRepJob<Tree> {
    fn partitions(&self) -> usize {
        self.proofs.len()
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>, FilError> {
        StackedCompound::<Tree, DefaultPieceHasher>::generate_public_inputs(&self.inputs, &self.params, Some(k)).map_err(FilError::fil)
    }

    fn synthesize<CS: ConstraintSystem<Scalar>>(&self, k: Option<usize>, cs: &mut CS) -> Result<(), SynthesisError> {
        match k {
            None => StackedCompound::<Tree, DefaultPieceHasher>::blank_circuit(&self.params).synthesize(cs),
            Some(k) => {
                let proof = self.proofs.get(k).ok_or_else(|| unsat("no such partition"))?;
                StackedCompound::<Tree, DefaultPieceHasher>::circuit(&self.inputs, (), proof, &self.params, Some(k)).map_err(unsat)?.synthesize(cs)
            }
        }
    }

    fn cache_id(&self) -> String {
        <StackedCompound<Tree, DefaultPieceHasher> as CacheableParameters<stacked::StackedCircuit<Tree, DefaultPieceHasher>, _>>::cache_identifier(&self.params)
    }

    fn repeats(&self, k: usize) -> Option<Repeats> {
        // StackedCircuit: the header, then `challenge_{i}` at the root, each using only the
        // header's variables and its own (checked on two blocks by `record_repeated`).
        Some(Repeats { depth: 0, marker: |i| format!("challenge_{i}"), count: self.proofs.get(k)?.len(), header_aux: None })
    }

    fn witness_in_parts(&self, k: usize, input: &mut [Scalar], aux: &mut [Scalar]) -> Result<bool, WitnessError> {
        let proofs = self.proofs.get(k).ok_or_else(|| WitnessError::Circuit(unsat("no such partition")))?;
        let Some(first) = proofs.first() else { return Ok(false) };
        let header_of = || {
            let one = vec![first.clone()];
            StackedCompound::<Tree, DefaultPieceHasher>::circuit(&self.inputs, (), &one, &self.params, Some(k)).map_err(unsat).map_err(WitnessError::Circuit)
        };
        let header = match self.header.get() {
            Some(h) => *h,
            None => *self.header.get_or_init(|| header_of().ok().and_then(|c| crate::parallel::header(c, "challenge_0"))),
        };
        let Some(header) = header else { return Ok(false) };
        let Ok(challenges) = proofs.iter().map(ChallengeInputs::of::<Tree>).collect::<Result<Vec<_>, _>>() else { return Ok(false) };
        let replica_id = crate::porep::witness::replica_id_bits(self.inputs.replica_id.into());
        let arities = crate::porep::witness::arities::<Tree>();
        let Some(tau) = &self.inputs.tau else { return Ok(false) };
        let roots = crate::porep::witness::Roots { comm_d: tau.comm_d.into(), comm_c: first.comm_c().into(), comm_r_last: first.comm_r_last().into() };
        let write = |i: usize, a: &mut cuzk_gadget_witness::Assignment<'_>| {
            crate::porep::witness::write_challenge(a, &replica_id, roots, &challenges[i], arities)
                .map_err(|e| WitnessError::Layout { part: i + 1, detail: e.to_string() })
        };
        crate::parallel::native_challenges(header, crate::parallel::gadget_header(header_of()?, "challenge_0", header), challenges.len(), write, input, aux)
    }
}

// ---------------------------------------------------------------- SnapDeals

/// SnapDeals (empty sector update).
pub(crate) struct SnapJob<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    params: storage_proofs_update::PublicParams,
    inputs: storage_proofs_update::PublicInputs,
    proofs: Vec<PartitionProof<Tree>>,
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> SnapJob<Tree> {
    pub(crate) fn compound(registered_proof: u64) -> Result<(storage_proofs_update::PublicParams, SectorUpdateConfig), FilError> {
        let config = SectorUpdateConfig::from_porep_config(&update_porep_config(registered_proof)?);
        let sp = SetupParams {
            vanilla_params: storage_proofs_update::SetupParams { sector_bytes: u64::from(config.sector_size) },
            partitions: Some(usize::from(config.update_partitions)),
            priority: false,
        };
        let pp = EmptySectorUpdateCompound::<Tree>::setup(&sp).map_err(FilError::fil)?;
        Ok((pp.vanilla_params, config))
    }

    /// Decodes a request and checks it as `checks` says.
    pub(crate) fn new(req: &FilRequest, checks: Checks) -> Result<Self, FilError> {
        let (params, _) = Self::compound(req.registered_proof)?;
        let decode::SnapParts { inputs, proofs, .. } = decode::snap::<Tree>(req)?;
        if checks == Checks::FormOnly {
            return Ok(Self::unchecked(params, inputs, proofs));
        }
        let ok = guarded("SnapDeals vanilla proofs", || EmptySectorUpdate::<Tree>::verify_all_partitions(&params, &inputs, &proofs))?;
        if !ok {
            return Err(FilError::VanillaInvalid("the SnapDeals vanilla proofs do not verify against comm_r_old, comm_r_new and comm_d_new".into()));
        }
        Ok(SnapJob { params, inputs, proofs })
    }

    /// A job from partition proofs that were not checked (synthetic jobs, `crate::synthetic::snap`,
    /// and [`Checks::FormOnly`]).
    pub(crate) fn unchecked(
        params: storage_proofs_update::PublicParams,
        inputs: storage_proofs_update::PublicInputs,
        proofs: Vec<PartitionProof<Tree>>,
    ) -> Self {
        SnapJob { params, inputs, proofs }
    }

    /// The blank job of a registered proof (parameter generation).
    pub(crate) fn blank(registered_proof: u64) -> Result<Self, FilError> {
        let (params, config) = Self::compound(registered_proof)?;
        let d = <TreeRHasher as Hasher>::Domain::default();
        let inputs = storage_proofs_update::PublicInputs { k: 0, comm_r_old: d, comm_d_new: DefaultPieceDomain::default(), comm_r_new: d, h: config.h };
        Ok(SnapJob { params, inputs, proofs: Vec::new() })
    }

    /// Partition `k` as the native witness reads it. Filecoin's constructor asserts on
    /// malformed proofs: a panic is an error, as is a partition its circuit asserts against.
    fn partition(&self, k: usize) -> Result<crate::snap::witness::SnapPartition, WitnessError> {
        let proof = self.proofs.get(k).ok_or_else(|| WitnessError::Circuit(unsat("no such partition")))?;
        let circuit = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            EmptySectorUpdateCompound::<Tree>::circuit(&self.inputs, (), proof, &self.params, Some(k))
        }))
        .unwrap_or_else(|_| Err(anyhow::anyhow!("malformed partition proof (the constructor panicked)")))
        .map_err(|e| WitnessError::Circuit(unsat(e)))?;
        crate::snap::witness::SnapPartition::of(&circuit).map_err(|e| WitnessError::Circuit(unsat(e)))
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Job for SnapJob<Tree> {
    fn partitions(&self) -> usize {
        self.proofs.len()
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>, FilError> {
        EmptySectorUpdateCompound::<Tree>::generate_public_inputs(&self.inputs, &self.params, Some(k)).map_err(FilError::fil)
    }

    fn synthesize<CS: ConstraintSystem<Scalar>>(&self, k: Option<usize>, cs: &mut CS) -> Result<(), SynthesisError> {
        match k {
            None => EmptySectorUpdateCompound::<Tree>::blank_circuit(&self.params).synthesize(cs),
            Some(k) => {
                let proof = self.proofs.get(k).ok_or_else(|| unsat("no such partition"))?;
                EmptySectorUpdateCompound::<Tree>::circuit(&self.inputs, (), proof, &self.params, Some(k)).map_err(unsat)?.synthesize(cs)
            }
        }
    }

    fn cache_id(&self) -> String {
        <EmptySectorUpdateCompound<Tree> as CacheableParameters<storage_proofs_update::EmptySectorUpdateCircuit<Tree>, _>>::cache_identifier(&self.params)
    }

    /// The challenges repeat one block; each reads its own generated bits from the header
    /// ([`crate::snap::witness::SnapPartition::challenge_bits_map`]).
    fn repeats(&self, k: usize) -> Option<Repeats> {
        let partition = self.partition(k).ok()?;
        let map = partition.challenge_bits_map();
        Some(Repeats { depth: 0, marker: crate::snap::witness::challenge_marker, count: partition.challenges(), header_aux: Some(std::sync::Arc::new(map)) })
    }

    /// The header natively, then each challenge natively on its own thread
    /// (`crate::snap::witness`). A partition Filecoin's circuit asserts against is refused.
    fn witness_in_parts(&self, k: usize, input: &mut [Scalar], aux: &mut [Scalar]) -> Result<bool, WitnessError> {
        let proof = self.proofs.get(k).ok_or_else(|| WitnessError::Circuit(unsat("no such partition")))?;
        if proof.challenge_proofs.is_empty() {
            return Ok(false);
        }
        let partition = self.partition(k)?;
        let header = partition.header_len();
        let write = |i: usize, a: &mut cuzk_gadget_witness::Assignment<'_>| {
            partition.write_challenge(i, a).map_err(|e| WitnessError::Layout { part: i + 1, detail: e.to_string() })
        };
        let write_header =
            |aux: &mut [Scalar], input: &mut [Scalar]| partition.write_header(aux, input).map_err(|e| WitnessError::Layout { part: 0, detail: e.to_string() });
        crate::parallel::native_challenges(header, write_header, partition.challenges(), write, input, aux)
    }
}

// ---------------------------------------------------------------- PoSt

/// One WindowPoSt partition, or a WinningPoSt.
pub(crate) struct PostJob<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    params: fallback::PublicParams,
    inputs: fallback::PublicInputs<<TreeRHasher as Hasher>::Domain>,
    proof: Option<fallback::Proof<<Tree as MerkleTreeTrait>::Proof>>,
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> PostJob<Tree> {
    fn compound(registered_proof: u64, kind: FilKind) -> Result<(fallback::PublicParams, filecoin_proofs::PoStConfig), FilError> {
        let config = post_config(registered_proof, kind)?;
        let vanilla_params = match config.typ {
            PoStType::Winning => winning_post_setup_params(&config).map_err(FilError::fil)?,
            PoStType::Window => window_post_setup_params(&config),
        };
        let sp = SetupParams { vanilla_params, partitions: None, priority: false };
        let pp = FallbackPoStCompound::<Tree>::setup(&sp).map_err(FilError::fil)?;
        Ok((pp.vanilla_params, config))
    }

    /// Decodes a request and checks it as `checks` says.
    pub(crate) fn new(req: &FilRequest, kind: FilKind, checks: Checks) -> Result<Self, FilError> {
        let (params, _) = Self::compound(req.registered_proof, kind)?;
        let decode::PostParts { config, randomness, prover, proofs: vanilla } = decode::post::<Tree>(req)?;
        let sectors = vanilla.iter().map(|p| PublicSector { id: p.sector_id, comm_r: p.comm_r }).collect();
        let k = match config.typ {
            PoStType::Window => Some(req.partition_index as usize),
            PoStType::Winning => None,
        };
        let inputs = fallback::PublicInputs { randomness, prover_id: prover, sectors, k };
        let winning = matches!(config.typ, PoStType::Winning);
        let proof = match (winning, checks) {
            (_, Checks::FormOnly) => partition_unchecked(winning, params.sector_count, &vanilla)?,
            (false, Checks::Full) => {
                guarded("WindowPoSt vanilla proofs", || filecoin_proofs::single_partition_vanilla_proofs(&config, &params, &inputs, &vanilla))?
            }
            (true, Checks::Full) => {
                guarded("WinningPoSt vanilla proofs", || filecoin_proofs::partition_vanilla_proofs(&config, &params, &inputs, 1, &vanilla))?
                    .pop()
                    .ok_or_else(|| FilError::VanillaInvalid("no partition".into()))?
            }
        };
        let inputs = if winning {
            // The circuit proves one challenge per "sector": the verifier lists the sector
            // once per challenge, and so must the public inputs.
            let sectors = inputs.sectors.iter().cloned().cycle().take(params.sector_count * inputs.sectors.len()).collect();
            fallback::PublicInputs { sectors, ..inputs }
        } else {
            inputs
        };
        Ok(PostJob { params, inputs, proof: Some(proof) })
    }

    /// The blank job of a registered proof (parameter generation).
    pub(crate) fn blank(registered_proof: u64, kind: FilKind) -> Result<Self, FilError> {
        let (params, _) = Self::compound(registered_proof, kind)?;
        let d = <TreeRHasher as Hasher>::Domain::default();
        Ok(PostJob { params, inputs: fallback::PublicInputs { randomness: d, prover_id: d, sectors: Vec::new(), k: None }, proof: None })
    }
}

/// The one partition proof of a PoSt job's decoded sector proofs, shaped as Filecoin's
/// partitioning (`single_partition_vanilla_proofs`) shapes it but without verifying it:
/// WindowPoSt, the sectors' proofs in order; WinningPoSt, each inclusion proof of its one sector
/// as a "sector" of one challenge; both padded to `sector_count` with copies of the last.
fn partition_unchecked<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    winning: bool,
    sector_count: usize,
    vanilla: &[filecoin_proofs::FallbackPoStSectorProof<Tree>],
) -> Result<fallback::Proof<Tree::Proof>, FilError> {
    let mut sectors: Vec<fallback::SectorProof<Tree::Proof>> = if !winning {
        vanilla.iter().flat_map(|p| p.vanilla_proof.sectors.iter().cloned()).collect()
    } else {
        vanilla
            .iter()
            .flat_map(|p| &p.vanilla_proof.sectors)
            .flat_map(|s| {
                s.inclusion_proofs.iter().map(|i| fallback::SectorProof { inclusion_proofs: vec![i.clone()], comm_c: s.comm_c, comm_r_last: s.comm_r_last })
            })
            .collect()
    };
    if sectors.len() > sector_count {
        return Err(FilError::field("vanilla_proofs", format!("{} sector proofs for a partition of {sector_count}", sectors.len())));
    }
    let last = sectors.last().cloned().ok_or_else(|| FilError::field("vanilla_proofs", "no sector proofs"))?;
    sectors.resize(sector_count, last);
    Ok(fallback::Proof { sectors })
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Job for PostJob<Tree> {
    fn partitions(&self) -> usize {
        usize::from(self.proof.is_some())
    }

    fn public_inputs(&self, _k: usize) -> Result<Vec<Scalar>, FilError> {
        // A job is one partition; its sectors are the first (and only) chunk.
        FallbackPoStCompound::<Tree>::generate_public_inputs(&self.inputs, &self.params, Some(0)).map_err(FilError::fil)
    }

    fn synthesize<CS: ConstraintSystem<Scalar>>(&self, k: Option<usize>, cs: &mut CS) -> Result<(), SynthesisError> {
        match (k, &self.proof) {
            (Some(_), Some(p)) => {
                FallbackPoStCompound::<Tree>::circuit(&self.inputs, Default::default(), p, &self.params, Some(0)).map_err(unsat)?.synthesize(cs)
            }
            _ => FallbackPoStCompound::<Tree>::blank_circuit(&self.params).synthesize(cs),
        }
    }

    fn witness_in_parts(&self, _k: usize, input: &mut [Scalar], aux: &mut [Scalar]) -> Result<bool, WitnessError> {
        use crate::post::witness::{write_sector, SectorInputs};
        let Some(proof) = &self.proof else { return Ok(false) };
        let circuit = FallbackPoStCompound::<Tree>::circuit(&self.inputs, Default::default(), proof, &self.params, Some(0))
            .map_err(unsat)
            .map_err(WitnessError::Circuit)?;
        let Ok(sectors) = SectorInputs::of(&circuit, &proof.sectors) else { return Ok(false) };
        let arities = crate::porep::witness::arities::<Tree>();
        let write = |i: usize, a: &mut cuzk_gadget_witness::Assignment<'_>| {
            write_sector(a, &sectors[i], arities).map_err(|e| WitnessError::Layout { part: i + 1, detail: e.to_string() })
        };
        // Nothing precedes the sectors: the header ends where "outer namespace" starts.
        crate::parallel::native_challenges((0, 0), crate::parallel::gadget_header(circuit, "outer namespace", (0, 0)), sectors.len(), write, input, aux)
    }

    fn repeats(&self, _k: usize) -> Option<Repeats> {
        // FallbackPoStCircuit (not extensible): `sector_{i}` inside "outer namespace", each
        // sector's variables its own (checked on two blocks by `record_repeated`).
        Some(Repeats { depth: 1, marker: |i| format!("sector_{i}"), count: self.proof.as_ref()?.sectors.len(), header_aux: None })
    }

    fn cache_id(&self) -> String {
        <FallbackPoStCompound<Tree> as CacheableParameters<storage_proofs_post::fallback::FallbackPoStCircuit<Tree>, _>>::cache_identifier(&self.params)
    }
}
