//! Decoding a request's vanilla proofs and public data, without verifying the proofs: the
//! bincode elements of SnapDeals and PoSt, the C1 output JSON of PoRep (three layouts, optionally
//! inside Curio's wrapper) and the commitments. Everything here is cheap and never panics on
//! malformed input; the (slow) vanilla verification is in `jobs`.

use std::fmt;
use std::marker::PhantomData;

use base64::Engine;
use bincode::Options;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{as_safe_commitment, DefaultPieceDomain, FallbackPoStSectorProof, PoStConfig, PoStType, SectorUpdateConfig, TreeRHasher};
use serde::de::{DeserializeOwned, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use storage_proofs_core::merkle::{base_path_length, MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_porep::stacked::generate_replica_id;
use storage_proofs_update::PartitionProof;
use typenum::Unsigned;

use crate::error::FilError;
use crate::ids::{circuit_of, porep_config, post_config, seal_proof_name, size_name, update_porep_config, vanilla_seal_proof_key, FilKind};
use crate::request::{bytes32, parse_commitment, prover_id, CommitmentKind, FilRequest};

/// Runs `$e` with `$t` the tree shape of a sector size (2 KiB, 8 MiB and 512 MiB sectors share
/// one).
macro_rules! with_tree {
    ($size:expr, $t:ident => $e:expr) => {
        match $size {
            s if s <= 1 << 29 => {
                type $t = filecoin_proofs::SectorShape2KiB;
                $e
            }
            s if s == 1 << 35 => {
                type $t = filecoin_proofs::SectorShape32GiB;
                $e
            }
            _ => {
                type $t = filecoin_proofs::SectorShape64GiB;
                $e
            }
        }
    };
}
pub(crate) use with_tree;

/// Decodes every part of a request that [`crate::prepare`] reads (the vanilla proofs in the API
/// field of its kind, the commitments, the randomness, Curio's C1 wrapper) and checks their
/// shape against the registered proof, without verifying the vanilla proofs and without
/// parameters. The errors are those [`crate::prepare`] gives for the same input; it never panics.
pub fn decode_request_parts(req: &FilRequest) -> Result<(), FilError> {
    let size = circuit_of(req.kind, req.registered_proof)?.sector_size;
    with_tree!(size, T => match req.kind {
        FilKind::PoRep => porep::<T>(req).map(drop),
        FilKind::SnapDeals => snap::<T>(req).map(drop),
        FilKind::WindowPoSt | FilKind::WinningPoSt => post::<T>(req).map(drop),
    })
}

// ---------------------------------------------------------------- bincode elements

const FIELD_10: &str = "field 10 (vanilla_proof)";
const FIELD_11: &str = "field 11 (vanilla_proofs)";

fn bincode_options(limit: usize) -> impl Options {
    // `bincode::serialize`/`deserialize`'s encoding (fixed-width little-endian integers, u64
    // lengths, u32 enum tags), bounded by the element and with nothing left over.
    bincode::DefaultOptions::new().with_fixint_encoding().with_little_endian().with_limit(limit as u64).reject_trailing_bytes()
}

/// Decodes one bincode element as `what`, with the reason it does not decode.
fn bincode_element<T: DeserializeOwned + Serialize>(bytes: &[u8], what: &str) -> Result<T, String> {
    let opts = bincode_options(bytes.len());
    match opts.deserialize::<T>(bytes) {
        Ok(v) => Ok(v),
        Err(e) => Err(match *e {
            bincode::ErrorKind::SizeLimit => format!("truncated bincode (a {what} does not fit in the element's {} bytes)", bytes.len()),
            bincode::ErrorKind::Io(ref io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
                format!("truncated bincode (a {what} does not fit in the element's {} bytes)", bytes.len())
            }
            bincode::ErrorKind::Custom(ref m) if m.contains("bytes remaining") => {
                // Decode again allowing the rest, to say how much is left over.
                let lenient = bincode::DefaultOptions::new().with_fixint_encoding().with_little_endian().with_limit(bytes.len() as u64).allow_trailing_bytes();
                match lenient.deserialize::<T>(bytes).ok().and_then(|v| lenient.serialized_size(&v).ok()) {
                    Some(used) => format!("trailing bytes ({} after a {used}-byte {what})", bytes.len() as u64 - used.min(bytes.len() as u64)),
                    None => format!("trailing bytes after a {what}"),
                }
            }
            bincode::ErrorKind::InvalidTagEncoding(t) => format!("invalid bincode in a {what}: enum tag {t} (a Merkle proof is tagged 0, 1 or 2)"),
            // serde's derived enums check the tag themselves.
            bincode::ErrorKind::Custom(ref m) if m.contains("expected variant index") => {
                let tag = m.split('`').nth(1).unwrap_or("?");
                format!("invalid bincode in a {what}: enum tag {tag} (a Merkle proof is tagged 0, 1 or 2)")
            }
            ref other => format!("invalid bincode in a {what}: {other}"),
        }),
    }
}

/// Checks that a Merkle inclusion proof has the path of the tree of `P`'s shape over `leaves`
/// leaves: the number of levels, the hashes per level and the index within each level.
fn check_path<P: MerkleProofTrait>(p: &P, leaves: usize, sector_size: u64) -> Result<(), String> {
    let (a, b, c) = (P::Arity::to_usize(), P::SubTreeArity::to_usize(), P::TopTreeArity::to_usize());
    let mut arities = vec![a; base_path_length::<P::Arity, P::SubTreeArity, P::TopTreeArity>(leaves)];
    arities.extend([b, c].into_iter().filter(|&x| x > 0));
    let path = p.path();
    if path.len() != arities.len() {
        return Err(format!(
            "a Merkle path of {} levels, a {} sector's tree has {} (a proof for another sector size?)",
            path.len(),
            size_name(sector_size),
            arities.len()
        ));
    }
    for (level, ((hashes, index), arity)) in path.iter().zip(&arities).enumerate() {
        if hashes.len() + 1 != *arity {
            return Err(format!("Merkle path level {level} has {} hashes, the tree's arity there is {arity}", hashes.len()));
        }
        if index >= arity {
            return Err(format!("Merkle path level {level} has index {index}, the tree's arity there is {arity}"));
        }
    }
    Ok(())
}

fn checked_paths<'a, P: MerkleProofTrait + 'a>(
    proofs: impl IntoIterator<Item = &'a P>,
    leaves: usize,
    sector_size: u64,
    what: impl Fn(usize) -> String,
) -> Result<(), String> {
    for (j, p) in proofs.into_iter().enumerate() {
        check_path(p, leaves, sector_size).map_err(|r| format!("{}: {r}", what(j)))?;
    }
    Ok(())
}

/// Element `index` decoded as `T` (`want`: its proof kind and type name); when it does not
/// decode but reads as the other kind's element `O` (`other`), the error says so.
fn element_of_kind<T: DeserializeOwned + Serialize, O: DeserializeOwned + Serialize>(
    index: usize,
    bytes: &[u8],
    want: (&str, &str),
    other: (&str, &str),
) -> Result<T, FilError> {
    bincode_element(bytes, want.1).map_err(|reason| {
        if bincode_element::<O>(bytes, other.1).is_ok() {
            FilError::element(index, format!("a {} {}, not a {} {} ({reason})", other.0, other.1, want.0, want.1))
        } else {
            FilError::element(index, reason)
        }
    })
}

/// One PoSt element: a `FallbackPoStSectorProof` of one sector, with `config`'s challenges.
pub(crate) fn post_element<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    index: usize,
    bytes: &[u8],
    config: &PoStConfig,
) -> Result<FallbackPoStSectorProof<Tree>, FilError> {
    let p: FallbackPoStSectorProof<Tree> =
        element_of_kind::<_, PartitionProof<Tree>>(index, bytes, ("PoSt", "FallbackPoStSectorProof"), ("SnapDeals", "PartitionProof"))?;
    let size = u64::from(config.sector_size);
    let sectors = &p.vanilla_proof.sectors;
    let [sector] = &sectors[..] else {
        return Err(FilError::element(index, format!("holds {} sector proofs, expected 1 (one element per sector)", sectors.len())));
    };
    let n = sector.inclusion_proofs.len();
    if n != config.challenge_count {
        let kind = if config.typ == PoStType::Winning { "WinningPoSt" } else { "WindowPoSt" };
        return Err(FilError::element(index, format!("{n} inclusion proofs, a {kind} sector proof answers {} challenges", config.challenge_count)));
    }
    checked_paths(&sector.inclusion_proofs, (size / 32) as usize, size, |j| format!("inclusion proof {j}")).map_err(|r| FilError::element(index, r))?;
    Ok(p)
}

/// One SnapDeals element: the `PartitionProof` of one partition.
pub(crate) fn snap_element<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    index: usize,
    bytes: &[u8],
    config: &SectorUpdateConfig,
) -> Result<PartitionProof<Tree>, FilError> {
    let p: PartitionProof<Tree> =
        element_of_kind::<_, FallbackPoStSectorProof<Tree>>(index, bytes, ("SnapDeals", "PartitionProof"), ("PoSt", "FallbackPoStSectorProof"))?;
    let (size, nodes) = (u64::from(config.sector_size), config.nodes_count);
    let apex = storage_proofs_update::constants::apex_leaf_count(nodes);
    if p.apex_leafs.len() != apex {
        return Err(FilError::element(index, format!("{} apex leaves, a {} sector's partition proof has {apex}", p.apex_leafs.len(), size_name(size))));
    }
    let challenges = storage_proofs_update::constants::challenge_count(nodes);
    if p.challenge_proofs.len() != challenges {
        return Err(FilError::element(
            index,
            format!("{} challenge proofs, a {} sector's partition proof has {challenges}", p.challenge_proofs.len(), size_name(size)),
        ));
    }
    for (j, c) in p.challenge_proofs.iter().enumerate() {
        let at = |name: &'static str| move |r: String| FilError::element(index, format!("challenge proof {j}, {name}: {r}"));
        check_path(&c.proof_r_old, nodes, size).map_err(at("proof_r_old"))?;
        check_path(&c.proof_d_new, nodes, size).map_err(at("proof_d_new"))?;
        check_path(&c.proof_r_new, nodes, size).map_err(at("proof_r_new"))?;
    }
    Ok(p)
}

/// The decoded parts of a PoSt request.
pub(crate) struct PostParts<Tree: MerkleTreeTrait> {
    pub(crate) config: PoStConfig,
    pub(crate) randomness: <TreeRHasher as Hasher>::Domain,
    pub(crate) prover: <TreeRHasher as Hasher>::Domain,
    pub(crate) proofs: Vec<FallbackPoStSectorProof<Tree>>,
}

/// The vanilla proof elements of a SnapDeals or PoSt request, refusing field 10.
fn elements(req: &FilRequest) -> Result<&[Vec<u8>], FilError> {
    if !req.vanilla_proof.is_empty() {
        return Err(FilError::WrongField { kind: req.kind, expected: FIELD_11, got: FIELD_10 });
    }
    Ok(&req.vanilla_proofs)
}

/// Decodes a WindowPoSt or WinningPoSt request.
pub(crate) fn post<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(req: &FilRequest) -> Result<PostParts<Tree>, FilError> {
    let config = post_config(req.registered_proof, req.kind)?;
    let elements = elements(req)?;
    let max = config.sector_count;
    if elements.is_empty() || elements.len() > max {
        let expected = if max == 1 { "1 sector proof".to_string() } else { format!("1 to {max} sector proofs") };
        return Err(FilError::field("vanilla_proofs", format!("expected {expected}, got {}", elements.len())));
    }
    let randomness = bytes32(&req.randomness, "randomness")?;
    let randomness = as_safe_commitment(&randomness, "randomness").map_err(|e| FilError::field("randomness", format!("{e:#}")))?;
    let prover = as_safe_commitment(&prover_id(req.miner_id), "prover_id").map_err(|e| FilError::field("miner_id", format!("{e:#}")))?;
    let mut proofs: Vec<FallbackPoStSectorProof<Tree>> = Vec::with_capacity(elements.len());
    for (i, e) in elements.iter().enumerate() {
        let p = post_element::<Tree>(i, e, &config)?;
        if let Some(j) = proofs.iter().position(|q| q.sector_id == p.sector_id) {
            return Err(FilError::element(i, format!("sector {} again (also vanilla_proofs[{j}])", u64::from(p.sector_id))));
        }
        proofs.push(p);
    }
    Ok(PostParts { config, randomness, prover, proofs })
}

/// The decoded parts of a SnapDeals request.
pub(crate) struct SnapParts<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    pub(crate) comm_r_old: [u8; 32],
    pub(crate) comm_r_new: [u8; 32],
    pub(crate) comm_d_new: [u8; 32],
    pub(crate) inputs: storage_proofs_update::PublicInputs,
    pub(crate) proofs: Vec<PartitionProof<Tree>>,
}

/// Decodes a SnapDeals request.
pub(crate) fn snap<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(req: &FilRequest) -> Result<SnapParts<Tree>, FilError> {
    let config = SectorUpdateConfig::from_porep_config(&update_porep_config(req.registered_proof)?);
    let elements = elements(req)?;
    let partitions = usize::from(config.update_partitions);
    if elements.len() != partitions {
        let s = if partitions == 1 { "" } else { "s" };
        return Err(FilError::field("vanilla_proofs", format!("expected {partitions} partition proof{s}, got {}", elements.len())));
    }
    let comm_r_old = parse_commitment(&req.comm_r_old, "comm_r_old", CommitmentKind::Sealed)?;
    let comm_r_new = parse_commitment(&req.comm_r_new, "comm_r_new", CommitmentKind::Sealed)?;
    let comm_d_new = parse_commitment(&req.comm_d_new, "comm_d_new", CommitmentKind::Unsealed)?;
    let safe_r = |c: &[u8; 32], f: &'static str| <TreeRHasher as Hasher>::Domain::try_from_bytes(c).map_err(|e| FilError::field(f, format!("{e:#}")));
    let inputs = storage_proofs_update::PublicInputs {
        k: partitions,
        comm_r_old: safe_r(&comm_r_old, "comm_r_old")?,
        comm_d_new: DefaultPieceDomain::try_from_bytes(&comm_d_new).map_err(|e| FilError::field("comm_d_new", format!("{e:#}")))?,
        comm_r_new: safe_r(&comm_r_new, "comm_r_new")?,
        h: config.h,
    };
    let proofs = elements.iter().enumerate().map(|(i, e)| snap_element::<Tree>(i, e, &config)).collect::<Result<Vec<_>, _>>()?;
    Ok(SnapParts { comm_r_old, comm_r_new, comm_d_new, inputs, proofs })
}

// ---------------------------------------------------------------- PoRep C1 output

/// A C1 output's `vanilla_proofs`: a plain array of partitions (filecoin-proofs) or a one-key
/// object naming the sector size (filecoin-proofs-api's `VanillaSealProof` enum, and Curio's
/// `Commit1OutRaw`).
pub(crate) struct VanillaField<T> {
    pub(crate) key: Option<String>,
    pub(crate) proofs: Vec<Vec<T>>,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for VanillaField<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = VanillaField<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of partitions or a one-key object {\"StackedDrg…V1\": [partitions]}")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut proofs = Vec::new();
                while let Some(p) = seq.next_element()? {
                    proofs.push(p);
                }
                Ok(VanillaField { key: None, proofs })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let Some(key) = map.next_key::<String>()? else {
                    return Err(serde::de::Error::custom("an empty object, expected one key naming the proof's sector size"));
                };
                let proofs = map.next_value()?;
                if map.next_key::<IgnoredAny>()?.is_some() {
                    return Err(serde::de::Error::custom(format!("more than one key (after {key:?}), expected one naming the proof's sector size")));
                }
                Ok(VanillaField { key: Some(key), proofs })
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// The keys of Curio's wrapper and of the three C1 layouts; which are present tells them apart.
#[derive(Deserialize)]
#[serde(bound(deserialize = "T: Deserialize<'de>"))]
struct C1Doc<T> {
    #[serde(rename = "SectorNum")]
    sector_num: Option<i64>,
    #[serde(rename = "Phase1Out")]
    phase1_out: Option<String>,
    #[serde(rename = "SectorSize")]
    sector_size: Option<u64>,
    registered_proof: Option<String>,
    vanilla_proofs: Option<VanillaField<T>>,
    comm_r: Option<[u8; 32]>,
    comm_d: Option<[u8; 32]>,
    replica_id: Option<[u8; 32]>,
    seed: Option<[u8; 32]>,
    ticket: Option<[u8; 32]>,
}

impl<T> C1Doc<T> {
    fn has_c1_keys(&self) -> bool {
        self.registered_proof.is_some()
            || self.vanilla_proofs.is_some()
            || self.comm_r.is_some()
            || self.comm_d.is_some()
            || self.replica_id.is_some()
            || self.seed.is_some()
            || self.ticket.is_some()
    }
}

/// Curio's wrapper: `{"SectorNum": int64, "Phase1Out": base64 of the C1 JSON, "SectorSize": u64}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CurioWrapper {
    pub(crate) sector_num: i64,
    pub(crate) sector_size: u64,
}

/// A C1 output in any layout, with the proofs as `T`.
pub(crate) struct C1Parts<T> {
    pub(crate) wrapper: Option<CurioWrapper>,
    pub(crate) registered_proof: Option<String>,
    pub(crate) key: Option<String>,
    pub(crate) proofs: Vec<Vec<T>>,
    pub(crate) comm_r: [u8; 32],
    pub(crate) comm_d: [u8; 32],
    pub(crate) replica_id: [u8; 32],
    pub(crate) seed: [u8; 32],
    pub(crate) ticket: [u8; 32],
}

fn json_error(what: &str, e: serde_json::Error) -> FilError {
    FilError::Decode(format!("{what}: {e}"))
}

/// Parses a C1 output (filecoin-proofs', filecoin-proofs-api's or Curio's supraseal layout),
/// bare or in Curio's wrapper, without checking it against a request.
pub(crate) fn c1_parts<T: DeserializeOwned>(bytes: &[u8]) -> Result<C1Parts<T>, FilError> {
    if bytes.is_empty() {
        return Err(FilError::field("vanilla_proof", "missing (PoRep needs the C1 output JSON)"));
    }
    let outer: C1Doc<T> = serde_json::from_slice(bytes).map_err(|e| json_error("C1 output JSON", e))?;
    let (doc, wrapper) = match (outer.phase1_out.as_deref(), outer.sector_num, outer.sector_size) {
        (Some(b64), Some(sector_num), Some(sector_size)) => {
            if outer.has_c1_keys() {
                return Err(FilError::field("vanilla_proof", "Curio's wrapper with C1 output keys beside Phase1Out"));
            }
            let inner = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| FilError::Decode(format!("Curio's wrapper: Phase1Out is not standard base64: {e}")))?;
            let doc: C1Doc<T> = serde_json::from_slice(&inner).map_err(|e| json_error("Curio's wrapper: Phase1Out JSON", e))?;
            if doc.phase1_out.is_some() || doc.sector_num.is_some() || doc.sector_size.is_some() {
                return Err(FilError::field("vanilla_proof", "Curio's wrapper inside Curio's wrapper"));
            }
            (doc, Some(CurioWrapper { sector_num, sector_size }))
        }
        (None, None, None) => (outer, None),
        (p, n, s) => {
            let missing: Vec<&str> =
                [(p.is_none(), "Phase1Out"), (n.is_none(), "SectorNum"), (s.is_none(), "SectorSize")].into_iter().filter_map(|(m, k)| m.then_some(k)).collect();
            return Err(FilError::field("vanilla_proof", format!("Curio's wrapper without {}", missing.join(", "))));
        }
    };
    let need = |v: Option<[u8; 32]>, k: &str| v.ok_or_else(|| FilError::Decode(format!("C1 output: missing `{k}`")));
    let vanilla = doc.vanilla_proofs.ok_or_else(|| FilError::Decode("C1 output: missing `vanilla_proofs`".into()))?;
    Ok(C1Parts {
        wrapper,
        registered_proof: doc.registered_proof,
        key: vanilla.key,
        proofs: vanilla.proofs,
        comm_r: need(doc.comm_r, "comm_r")?,
        comm_d: need(doc.comm_d, "comm_d")?,
        replica_id: need(doc.replica_id, "replica_id")?,
        seed: need(doc.seed, "seed")?,
        ticket: need(doc.ticket, "ticket")?,
    })
}

/// The decoded parts of a PoRep request.
pub(crate) struct PoRepParts<Tree: 'static + MerkleTreeTrait> {
    pub(crate) c1: C1Parts<filecoin_proofs::VanillaSealProof<Tree>>,
    pub(crate) replica_id: <Tree::Hasher as Hasher>::Domain,
    pub(crate) comm_r: <Tree::Hasher as Hasher>::Domain,
    pub(crate) comm_d: DefaultPieceDomain,
}

/// Decodes a PoRep request: the C1 output in field 10, checked against the request's registered
/// proof, sector number and miner id.
pub(crate) fn porep<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(req: &FilRequest) -> Result<PoRepParts<Tree>, FilError> {
    if !req.vanilla_proofs.is_empty() {
        return Err(FilError::WrongField { kind: req.kind, expected: FIELD_10, got: FIELD_11 });
    }
    let config = porep_config(req.registered_proof)?;
    let size = u64::from(config.sector_size);
    let name = seal_proof_name(req.registered_proof).unwrap_or("?");
    let c1 = c1_parts::<filecoin_proofs::VanillaSealProof<Tree>>(&req.vanilla_proof)?;
    let bad = |r: String| FilError::field("vanilla_proof", r);
    if let Some(w) = c1.wrapper {
        if u64::try_from(w.sector_num).ok() != Some(req.sector_number) {
            return Err(bad(format!("Curio's wrapper is for sector {}, the request's sector_number is {}", w.sector_num, req.sector_number)));
        }
        if w.sector_size != size {
            return Err(bad(format!(
                "Curio's wrapper says SectorSize {}, registered proof {} ({name}) seals {size}-byte sectors",
                w.sector_size, req.registered_proof
            )));
        }
    }
    if let Some(rp) = &c1.registered_proof {
        if rp != name {
            return Err(bad(format!("the C1 output is for {rp:?}, the request's registered_proof {} is {name:?}", req.registered_proof)));
        }
    }
    if let Some(key) = &c1.key {
        let want = vanilla_seal_proof_key(size).unwrap_or("?");
        if key != want {
            return Err(bad(format!("vanilla_proofs are keyed {key:?}, a {} sector's are keyed {want:?}", size_name(size))));
        }
    }
    let sp = filecoin_proofs::parameters::setup_params(&config).map_err(FilError::fil)?;
    let (partitions, challenges) = (usize::from(config.partitions), sp.challenges.num_challenges_per_partition());
    if c1.proofs.len() != partitions {
        return Err(bad(format!("{} partitions of vanilla proofs, registered proof {} ({name}) has {partitions}", c1.proofs.len(), req.registered_proof)));
    }
    let nodes = (size / 32) as usize;
    for (k, part) in c1.proofs.iter().enumerate() {
        if part.len() != challenges {
            return Err(bad(format!("partition {k} has {} challenge proofs, expected {challenges}", part.len())));
        }
        for (j, p) in part.iter().enumerate() {
            check_path(&p.comm_d_proofs, nodes, size).map_err(|r| bad(format!("partition {k}, challenge {j}, comm_d_proofs: {r}")))?;
            check_path(&p.comm_r_last_proof, nodes, size).map_err(|r| bad(format!("partition {k}, challenge {j}, comm_r_last_proof: {r}")))?;
        }
    }
    if c1.comm_r == [0; 32] || c1.comm_d == [0; 32] || c1.seed == [0; 32] {
        return Err(FilError::VanillaInvalid("zero comm_r, comm_d or seed".into()));
    }
    let comm_r = as_safe_commitment(&c1.comm_r, "comm_r").map_err(|e| FilError::VanillaInvalid(format!("{e:#}")))?;
    let comm_d: DefaultPieceDomain = as_safe_commitment(&c1.comm_d, "comm_d").map_err(|e| FilError::VanillaInvalid(format!("{e:#}")))?;
    // The replica id binds the proof to this miner, sector and ticket.
    let replica_id = generate_replica_id::<Tree::Hasher, _>(&prover_id(req.miner_id), req.sector_number, &c1.ticket, comm_d, &config.porep_id);
    if replica_id.into_bytes() != c1.replica_id {
        return Err(FilError::VanillaInvalid("replica_id does not match the miner id, sector number, ticket and comm_d".into()));
    }
    Ok(PoRepParts { c1, replica_id, comm_r, comm_d })
}

/// The sector ids and `comm_r`s of a PoSt request's elements (for Filecoin's verifiers).
pub(crate) fn post_sectors(req: &FilRequest) -> Result<Vec<(u64, [u8; 32])>, FilError> {
    let size = circuit_of(req.kind, req.registered_proof)?.sector_size;
    with_tree!(size, T => {
        let parts = post::<T>(req)?;
        Ok(parts.proofs.iter().map(|p| (u64::from(p.sector_id), p.comm_r.into_bytes().try_into().unwrap_or([0; 32]))).collect())
    })
}
