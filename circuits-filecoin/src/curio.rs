//! The C1 output encodings of Curio (filecoin-project/curio), rebuilt from a filecoin-proofs C1
//! output: the wrapper its Go client puts around PoRep vanilla proofs (`lib/ffi/cuzk_funcs.go`),
//! the JSON its Go code writes for supraseal batches (`json.Marshal` of `Commit1OutRaw`,
//! `lib/proof/porep_vproof_types.go`), and filecoin-ffi's (filecoin-proofs-api's
//! `SealCommitPhase1Output`). For building requests exactly as Curio sends them.

use std::collections::BTreeMap;

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::decode::{c1_parts, with_tree};
use crate::error::FilError;
use crate::ids::{porep_config, seal_proof_name, vanilla_seal_proof_key};

/// `vanilla_proof` as Curio's Go client sends a PoRep C2: `json.Marshal` of its
/// `c1OutputWrapper{SectorNum int64, Phase1Out []byte, SectorSize uint64}`, byte for byte
/// (`{"SectorNum":42,"Phase1Out":"<standard padded base64>","SectorSize":2048}`).
pub fn wrap_c1_like_curio(c1_json: &[u8], sector_number: u64, sector_size: u64) -> Vec<u8> {
    // Go converts with int64(sectorNumber); base64 needs none of Go's string escapes.
    let b64 = base64::engine::general_purpose::STANDARD.encode(c1_json);
    format!("{{\"SectorNum\":{},\"Phase1Out\":\"{b64}\",\"SectorSize\":{sector_size}}}", sector_number as i64).into_bytes()
}

// Curio's Go types, in their field order (Go's encoding/json writes struct fields in
// declaration order and map keys sorted; `[32]byte` as an array of numbers).

type Hash = [u8; 32];

#[derive(Serialize, Deserialize)]
struct GoPathElement {
    hashes: Vec<Hash>,
    index: u64,
}

#[derive(Serialize, Deserialize)]
struct GoInclusionPath {
    path: Vec<GoPathElement>,
}

#[derive(Serialize, Deserialize)]
struct GoSingleProof {
    root: Hash,
    leaf: Hash,
    path: GoInclusionPath,
}

#[derive(Serialize, Deserialize)]
struct GoSubProof {
    base_proof: GoInclusionPath,
    sub_proof: GoInclusionPath,
    root: Hash,
    leaf: Hash,
}

#[derive(Serialize, Deserialize)]
struct GoTopProof {
    base_proof: GoInclusionPath,
    sub_proof: GoInclusionPath,
    top_proof: GoInclusionPath,
    root: Hash,
    leaf: Hash,
}

/// Go's `ProofData`: three pointers with `omitempty`, so one key as serde writes the enum.
#[derive(Serialize, Deserialize)]
struct GoProofData {
    #[serde(rename = "Single", default, skip_serializing_if = "Option::is_none")]
    single: Option<GoSingleProof>,
    #[serde(rename = "Sub", default, skip_serializing_if = "Option::is_none")]
    sub: Option<GoSubProof>,
    #[serde(rename = "Top", default, skip_serializing_if = "Option::is_none")]
    top: Option<GoTopProof>,
}

#[derive(Serialize, Deserialize)]
struct GoMerkleProof {
    data: GoProofData,
}

#[derive(Serialize, Deserialize)]
struct GoColumn {
    index: u32,
    rows: Vec<Hash>,
    /// Go's `H any` field: always `null`.
    #[serde(rename = "_h")]
    h: (),
}

#[derive(Serialize, Deserialize)]
struct GoColumnProof {
    column: GoColumn,
    inclusion_proof: GoMerkleProof,
}

#[derive(Serialize, Deserialize)]
struct GoReplicaColumnProof {
    c_x: GoColumnProof,
    drg_parents: Vec<GoColumnProof>,
    exp_parents: Vec<GoColumnProof>,
}

#[derive(Serialize, Deserialize)]
struct GoLabelingProof {
    parents: Vec<Hash>,
    layer_index: u32,
    node: u64,
}

#[derive(Serialize, Deserialize)]
struct GoVanillaStackedProof {
    comm_d_proofs: GoMerkleProof,
    comm_r_last_proof: GoMerkleProof,
    replica_column_proofs: GoReplicaColumnProof,
    labeling_proofs: Vec<GoLabelingProof>,
    encoding_proof: GoLabelingProof,
}

#[derive(Serialize)]
struct GoCommit1OutRaw {
    comm_d: Hash,
    comm_r: Hash,
    registered_proof: String,
    replica_id: Hash,
    seed: Hash,
    ticket: Hash,
    vanilla_proofs: BTreeMap<String, Vec<Vec<GoVanillaStackedProof>>>,
}

/// The sector size of a C1 output from the shape of its first `comm_r_last_proof`: one level
/// per factor of 8 below 2 KiB..512 MiB (single tree), 32 GiB (sub tree), 64 GiB (top tree).
fn inferred_sector_size(proofs: &[Vec<GoVanillaStackedProof>]) -> Option<u64> {
    let d = &proofs.first()?.first()?.comm_r_last_proof.data;
    match (&d.single, &d.sub, &d.top) {
        (Some(s), None, None) => 32u64.checked_mul(8u64.checked_pow(u32::try_from(s.path.path.len()).ok()?)?),
        (None, Some(_), None) => Some(1 << 35),
        (None, None, Some(_)) => Some(1 << 36),
        _ => None,
    }
}

/// Re-emits a C1 output (any layout, bare or in Curio's wrapper) as Curio's Go code writes the
/// C1 output of a supraseal batch: `json.Marshal` of `Commit1OutRaw` (keys in Go's field order,
/// `_h: null` in columns, the proofs under one key naming the sector size). Without a
/// `registered_proof` in the input (filecoin-proofs' own layout), the V1_1 proof of the sector
/// size is named, as supraseal does.
pub fn supraseal_layout(c1_json: &[u8]) -> Result<Vec<u8>, FilError> {
    let c1 = c1_parts::<GoVanillaStackedProof>(c1_json)?;
    let size = inferred_sector_size(&c1.proofs);
    let size_of = || size.ok_or_else(|| FilError::field("vanilla_proof", "cannot tell the sector size of the C1 output"));
    let registered_proof = match c1.registered_proof {
        Some(r) => r,
        None => format!("{}_1", vanilla_seal_proof_key(size_of()?).unwrap_or("?")),
    };
    let key = match c1.key {
        Some(k) => k,
        None => vanilla_seal_proof_key(size_of()?).unwrap_or("?").to_string(),
    };
    let out = GoCommit1OutRaw {
        comm_d: c1.comm_d,
        comm_r: c1.comm_r,
        registered_proof,
        replica_id: c1.replica_id,
        seed: c1.seed,
        ticket: c1.ticket,
        vanilla_proofs: BTreeMap::from([(key, c1.proofs)]),
    };
    serde_json::to_vec(&out).map_err(|e| FilError::Decode(e.to_string()))
}

/// filecoin-proofs-api's `SealCommitPhase1Output`, in its field order.
#[derive(Serialize)]
struct ApiC1<'a, P: Serialize> {
    registered_proof: &'a str,
    vanilla_proofs: BTreeMap<&'a str, &'a P>,
    comm_r: [u8; 32],
    comm_d: [u8; 32],
    replica_id: [u8; 32],
    seed: [u8; 32],
    ticket: [u8; 32],
}

/// Re-emits a C1 output (any layout, bare or in Curio's wrapper) as filecoin-ffi returns it to
/// Curio (serde JSON of filecoin-proofs-api's `SealCommitPhase1Output`): `registered_proof`
/// named after `registered_proof` (Go's abi number), the proofs under the `VanillaSealProof`
/// variant of its sector size, serialized by filecoin-proofs' own types.
pub fn ffi_layout(c1_json: &[u8], registered_proof: u64) -> Result<Vec<u8>, FilError> {
    let size = u64::from(porep_config(registered_proof)?.sector_size);
    let name = seal_proof_name(registered_proof).unwrap_or("?");
    let key = vanilla_seal_proof_key(size).unwrap_or("?");
    with_tree!(size, T => {
        let c1 = c1_parts::<filecoin_proofs::VanillaSealProof<T>>(c1_json)?;
        let out = ApiC1 {
            registered_proof: name,
            vanilla_proofs: BTreeMap::from([(key, &c1.proofs)]),
            comm_r: c1.comm_r,
            comm_d: c1.comm_d,
            replica_id: c1.replica_id,
            seed: c1.seed,
            ticket: c1.ticket,
        };
        serde_json::to_vec(&out).map_err(|e| FilError::Decode(e.to_string()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wrapper_is_what_go_marshals() {
        // Go: json.Marshal(c1OutputWrapper{SectorNum: 42, Phase1Out: []byte("{\"a\":1}"), SectorSize: 2048})
        assert_eq!(wrap_c1_like_curio(b"{\"a\":1}", 42, 2048), br#"{"SectorNum":42,"Phase1Out":"eyJhIjoxfQ==","SectorSize":2048}"#);
        assert_eq!(wrap_c1_like_curio(b"", 0, 34359738368), br#"{"SectorNum":0,"Phase1Out":"","SectorSize":34359738368}"#);
        // Go's int64(sectorNumber) of a number past 2^63.
        assert!(String::from_utf8(wrap_c1_like_curio(b"x", u64::MAX, 1)).unwrap().starts_with(r#"{"SectorNum":-1,"#));
    }
}
