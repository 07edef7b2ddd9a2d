//! One job per proof kind, generic over the sector's tree shape: parsing and checking the
//! vanilla proofs, and building each partition's circuit with Filecoin's constructors.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::parameters::{setup_params, window_post_setup_params, winning_post_setup_params};
use filecoin_proofs::{as_safe_commitment, DefaultPieceDomain, DefaultPieceHasher, FallbackPoStSectorProof, PoStType, SectorUpdateConfig, TreeRHasher};
use storage_proofs_core::compound_proof::{CompoundProof, SetupParams};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{self, generate_replica_id, StackedCompound, StackedDrg};
use storage_proofs_post::fallback::{self, FallbackPoStCompound, PublicSector};
use storage_proofs_update::{EmptySectorUpdate, EmptySectorUpdateCompound, PartitionProof};

use crate::error::FilError;
use crate::ids::{porep_config, post_config, update_porep_config, FilKind};
use crate::request::{bytes32, parse_commitment, prover_id, FilRequest};

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
}

fn unsat(e: impl std::fmt::Display) -> SynthesisError {
    SynthesisError::IoError(std::io::Error::other(format!("building the circuit: {e:#}")))
}

fn json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, FilError> {
    serde_json::from_slice(bytes).map_err(|e| FilError::Decode(e.to_string()))
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
}

/// The C1 output fields we need, whichever crate wrote them.
#[derive(serde::Deserialize)]
pub(crate) struct C1Json {
    vanilla_proofs: serde_json::Value,
    pub(crate) comm_r: [u8; 32],
    pub(crate) comm_d: [u8; 32],
    replica_id: serde_json::Value,
    pub(crate) seed: [u8; 32],
    pub(crate) ticket: [u8; 32],
}

/// Curio's wrapper around the C1 output.
#[derive(serde::Deserialize)]
struct CurioC1 {
    #[serde(rename = "Phase1Out")]
    phase1_out: String,
}

pub(crate) fn c1_json(bytes: &[u8]) -> Result<C1Json, FilError> {
    if let Ok(w) = serde_json::from_slice::<CurioC1>(bytes) {
        use base64::Engine;
        let inner = base64::engine::general_purpose::STANDARD.decode(w.phase1_out).map_err(|e| FilError::Decode(format!("Phase1Out: {e}")))?;
        return json(&inner);
    }
    json(bytes)
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> PoRepJob<Tree> {
    fn compound(registered_proof: u64) -> Result<(stacked::PublicParams<Tree>, usize), FilError> {
        let config = porep_config(registered_proof)?;
        let partitions = usize::from(config.partitions);
        let sp = SetupParams { vanilla_params: setup_params(&config).map_err(FilError::fil)?, partitions: Some(partitions), priority: false };
        let pp =
            <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::setup(&sp).map_err(FilError::fil)?;
        Ok((pp.vanilla_params, partitions))
    }

    /// Parses and checks a request.
    pub(crate) fn new(req: &FilRequest) -> Result<Self, FilError> {
        let config = porep_config(req.registered_proof)?;
        let (params, partitions) = Self::compound(req.registered_proof)?;
        let c1 = c1_json(&req.vanilla_proof)?;
        // filecoin-proofs-api wraps the proofs in a one-key object naming the proof type.
        let raw = match c1.vanilla_proofs {
            serde_json::Value::Object(m) if m.len() == 1 => m.into_iter().next().map(|(_, v)| v).unwrap_or_default(),
            v => v,
        };
        let proofs: Vec<Vec<filecoin_proofs::VanillaSealProof<Tree>>> =
            serde_json::from_value(raw).map_err(|e| FilError::Decode(format!("vanilla_proofs: {e}")))?;
        if proofs.len() != partitions || proofs.iter().any(Vec::is_empty) {
            return Err(FilError::VanillaInvalid(format!("expected {partitions} partitions of challenge proofs, got {}", proofs.len())));
        }
        if c1.comm_r == [0; 32] || c1.comm_d == [0; 32] || c1.seed == [0; 32] {
            return Err(FilError::VanillaInvalid("zero comm_r, comm_d or seed".into()));
        }
        let comm_r = as_safe_commitment(&c1.comm_r, "comm_r").map_err(|e| FilError::VanillaInvalid(format!("{e:#}")))?;
        let comm_d: DefaultPieceDomain = as_safe_commitment(&c1.comm_d, "comm_d").map_err(|e| FilError::VanillaInvalid(format!("{e:#}")))?;
        // The replica id binds the proof to this miner, sector and ticket.
        let replica_id = generate_replica_id::<Tree::Hasher, _>(&prover_id(req.miner_id), req.sector_number, &c1.ticket, comm_d, &config.porep_id);
        let sent: <Tree::Hasher as Hasher>::Domain = serde_json::from_value(c1.replica_id).map_err(|e| FilError::Decode(format!("replica_id: {e}")))?;
        if sent != replica_id {
            return Err(FilError::VanillaInvalid("replica_id does not match the miner id, sector number, ticket and comm_d".into()));
        }
        let inputs = stacked::PublicInputs { replica_id, tau: Some(stacked::Tau { comm_d, comm_r }), k: None, seed: Some(c1.seed) };
        let ok = guarded("PoRep vanilla proofs", || StackedDrg::<Tree, DefaultPieceHasher>::verify_all_partitions(&params, &inputs, &proofs))?;
        if !ok {
            return Err(FilError::VanillaInvalid("the PoRep vanilla proofs do not verify against comm_r, comm_d, the replica id and the seed".into()));
        }
        Ok(PoRepJob { params, inputs, proofs })
    }

    /// The blank job of a registered proof (parameter generation).
    pub(crate) fn blank(registered_proof: u64) -> Result<Self, FilError> {
        let (params, _) = Self::compound(registered_proof)?;
        let d = <Tree::Hasher as Hasher>::Domain::default();
        let inputs = stacked::PublicInputs { replica_id: d, tau: None, k: None, seed: None };
        Ok(PoRepJob { params, inputs, proofs: Vec::new() })
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
}

// ---------------------------------------------------------------- SnapDeals

/// SnapDeals (empty sector update).
pub(crate) struct SnapJob<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    params: storage_proofs_update::PublicParams,
    inputs: storage_proofs_update::PublicInputs,
    proofs: Vec<PartitionProof<Tree>>,
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> SnapJob<Tree> {
    fn compound(registered_proof: u64) -> Result<(storage_proofs_update::PublicParams, SectorUpdateConfig), FilError> {
        let config = SectorUpdateConfig::from_porep_config(&update_porep_config(registered_proof)?);
        let sp = SetupParams {
            vanilla_params: storage_proofs_update::SetupParams { sector_bytes: u64::from(config.sector_size) },
            partitions: Some(usize::from(config.update_partitions)),
            priority: false,
        };
        let pp = EmptySectorUpdateCompound::<Tree>::setup(&sp).map_err(FilError::fil)?;
        Ok((pp.vanilla_params, config))
    }

    /// Parses and checks a request.
    pub(crate) fn new(req: &FilRequest) -> Result<Self, FilError> {
        let (params, config) = Self::compound(req.registered_proof)?;
        let safe = |b: &[u8], f: &'static str| -> Result<<TreeRHasher as Hasher>::Domain, FilError> {
            <TreeRHasher as Hasher>::Domain::try_from_bytes(&parse_commitment(b, f)?).map_err(|e| FilError::field(f, format!("{e:#}")))
        };
        let comm_r_old = safe(&req.sector_key_cid, "sector_key_cid")?;
        let comm_r_new = safe(&req.new_sealed_cid, "new_sealed_cid")?;
        let comm_d_new = DefaultPieceDomain::try_from_bytes(&parse_commitment(&req.new_unsealed_cid, "new_unsealed_cid")?)
            .map_err(|e| FilError::field("new_unsealed_cid", format!("{e:#}")))?;
        let partitions = usize::from(config.update_partitions);
        let inputs = storage_proofs_update::PublicInputs { k: partitions, comm_r_old, comm_d_new, comm_r_new, h: config.h };
        let proofs: Vec<PartitionProof<Tree>> = json(&req.vanilla_proof)?;
        if proofs.len() != partitions {
            return Err(FilError::VanillaInvalid(format!("expected {partitions} partition proofs, got {}", proofs.len())));
        }
        let ok = guarded("SnapDeals vanilla proofs", || EmptySectorUpdate::<Tree>::verify_all_partitions(&params, &inputs, &proofs))?;
        if !ok {
            return Err(FilError::VanillaInvalid("the SnapDeals vanilla proofs do not verify against comm_r_old, comm_r_new and comm_d_new".into()));
        }
        Ok(SnapJob { params, inputs, proofs })
    }

    /// The blank job of a registered proof (parameter generation).
    pub(crate) fn blank(registered_proof: u64) -> Result<Self, FilError> {
        let (params, config) = Self::compound(registered_proof)?;
        let d = <TreeRHasher as Hasher>::Domain::default();
        let inputs = storage_proofs_update::PublicInputs { k: 0, comm_r_old: d, comm_d_new: DefaultPieceDomain::default(), comm_r_new: d, h: config.h };
        Ok(SnapJob { params, inputs, proofs: Vec::new() })
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

    /// Parses and checks a request.
    pub(crate) fn new(req: &FilRequest, kind: FilKind) -> Result<Self, FilError> {
        let (params, config) = Self::compound(req.registered_proof, kind)?;
        let randomness = bytes32(&req.randomness, "randomness")?;
        let randomness = as_safe_commitment(&randomness, "randomness").map_err(|e| FilError::field("randomness", format!("{e:#}")))?;
        let prover = as_safe_commitment(&prover_id(req.miner_id), "prover_id").map_err(|e| FilError::field("miner_id", format!("{e:#}")))?;
        let vanilla: Vec<FallbackPoStSectorProof<Tree>> = json(&req.vanilla_proof)?;
        if vanilla.is_empty() || vanilla.len() > config.sector_count {
            return Err(FilError::VanillaInvalid(format!("expected 1 to {} sector proofs, got {}", config.sector_count, vanilla.len())));
        }
        let sectors = vanilla.iter().map(|p| PublicSector { id: p.sector_id, comm_r: p.comm_r }).collect();
        let k = match config.typ {
            PoStType::Window => Some(req.partition_index as usize),
            PoStType::Winning => None,
        };
        let inputs = fallback::PublicInputs { randomness, prover_id: prover, sectors, k };
        let (proof, inputs) = match config.typ {
            PoStType::Window => {
                (guarded("WindowPoSt vanilla proofs", || filecoin_proofs::single_partition_vanilla_proofs(&config, &params, &inputs, &vanilla))?, inputs)
            }
            PoStType::Winning => {
                let mut parts = guarded("WinningPoSt vanilla proofs", || filecoin_proofs::partition_vanilla_proofs(&config, &params, &inputs, 1, &vanilla))?;
                let proof = parts.pop().ok_or_else(|| FilError::VanillaInvalid("no partition".into()))?;
                // The circuit proves one challenge per "sector": the verifier lists the sector
                // once per challenge, and so must the public inputs.
                let sectors = inputs.sectors.iter().cloned().cycle().take(params.sector_count * inputs.sectors.len()).collect();
                (proof, fallback::PublicInputs { sectors, ..inputs })
            }
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

    fn cache_id(&self) -> String {
        <FallbackPoStCompound<Tree> as CacheableParameters<storage_proofs_post::fallback::FallbackPoStCircuit<Tree>, _>>::cache_identifier(&self.params)
    }
}
