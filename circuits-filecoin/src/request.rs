//! A Filecoin proof request as the API carries it, and its small fields.

use serde::{Deserialize, Serialize};

use crate::error::FilError;
use crate::ids::FilKind;

/// A proof request: the fields of `cuzk.v1.SubmitProofRequest` a Filecoin kind uses.
///
/// Vanilla proof encodings (`vanilla_proof`):
/// - PoRep: the JSON of a `SealCommitPhase1Output` (filecoin-proofs' or filecoin-proofs-api's,
///   whose `vanilla_proofs` are wrapped in a one-key object), optionally inside Curio's
///   `{"SectorNum", "Phase1Out": base64, "SectorSize"}` wrapper;
/// - SnapDeals: a JSON array of the partitions' `PartitionProof`s;
/// - WindowPoSt, WinningPoSt: a JSON array of `FallbackPoStSectorProof`s (one per sector).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilRequest {
    /// The kind.
    #[serde(with = "kind_serde")]
    pub kind: FilKind,
    /// Go's `abi.RegisteredSealProof` (PoRep), `RegisteredUpdateProof` (SnapDeals) or
    /// `RegisteredPoStProof` (PoSt) number.
    pub registered_proof: u64,
    /// The vanilla proof bytes.
    #[serde(with = "hex_serde")]
    pub vanilla_proof: Vec<u8>,
    /// Sector number (PoRep).
    #[serde(default)]
    pub sector_number: u64,
    /// Miner actor id (PoRep, PoSt).
    #[serde(default)]
    pub miner_id: u64,
    /// PoSt randomness (32 bytes).
    #[serde(default, with = "hex_serde")]
    pub randomness: Vec<u8>,
    /// WindowPoSt partition index.
    #[serde(default)]
    pub partition_index: u32,
    /// SnapDeals: CID (or raw 32 bytes) of the old sealed commitment.
    #[serde(default, with = "hex_serde")]
    pub sector_key_cid: Vec<u8>,
    /// SnapDeals: CID (or raw 32 bytes) of the new sealed commitment.
    #[serde(default, with = "hex_serde")]
    pub new_sealed_cid: Vec<u8>,
    /// SnapDeals: CID (or raw 32 bytes) of the new unsealed commitment.
    #[serde(default, with = "hex_serde")]
    pub new_unsealed_cid: Vec<u8>,
}

mod kind_serde {
    use super::FilKind;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(k: &FilKind, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(k.short())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<FilKind, D::Error> {
        let s = String::deserialize(d)?;
        FilKind::from_short(&s).ok_or_else(|| serde::de::Error::custom(format!("unknown kind {s:?} (porep, snap, wpost, winning)")))
    }
}

mod hex_serde {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(b))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        hex::decode(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// Filecoin's prover id of a miner actor: the actor id as an unsigned varint (the payload of
/// its ID address), left-aligned in 32 bytes.
pub fn prover_id(miner_id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut v = miner_id;
    for b in out.iter_mut() {
        let low = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            *b = low;
            break;
        }
        *b = low | 0x80;
    }
    out
}

fn varint(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// A commitment from its CID bytes (CIDv1: version, codec, multihash code, length 32, digest)
/// or from the raw 32 bytes.
pub fn parse_commitment(bytes: &[u8], field: &'static str) -> Result<[u8; 32], FilError> {
    if bytes.len() == 32 {
        return Ok(bytes.try_into().expect("32 bytes"));
    }
    let bad = |r: &str| FilError::field(field, format!("{r} (expected a commitment CID or 32 raw bytes, got {} bytes)", bytes.len()));
    let mut pos = 0;
    if varint(bytes, &mut pos) != Some(1) {
        return Err(bad("not a CIDv1"));
    }
    let _codec = varint(bytes, &mut pos).ok_or_else(|| bad("truncated codec"))?;
    let _hash = varint(bytes, &mut pos).ok_or_else(|| bad("truncated multihash code"))?;
    if varint(bytes, &mut pos) != Some(32) || bytes.len() != pos + 32 {
        return Err(bad("digest is not 32 bytes"));
    }
    Ok(bytes[pos..].try_into().expect("32 bytes"))
}

/// The CID bytes of a commitment (`fil-commitment-sealed` with Poseidon, or
/// `fil-commitment-unsealed` with SHA-256-trunc254-padded).
pub fn commitment_cid(comm: &[u8; 32], sealed: bool) -> Vec<u8> {
    // codec 0xf101 / 0xf102, multihash 0xb401 (poseidon-bls12_381-a2-fc1) / 0x1012.
    let (codec, mh): (&[u8], &[u8]) = if sealed { (&[0x81, 0xe2, 0x03], &[0x81, 0xe8, 0x02]) } else { (&[0x82, 0xe2, 0x03], &[0x92, 0x20]) };
    let mut out = vec![0x01];
    out.extend_from_slice(codec);
    out.extend_from_slice(mh);
    out.push(0x20);
    out.extend_from_slice(comm);
    out
}

pub(crate) fn bytes32(b: &[u8], field: &'static str) -> Result<[u8; 32], FilError> {
    b.try_into().map_err(|_| FilError::field(field, format!("must be 32 bytes, got {}", b.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prover_ids_are_varints() {
        assert_eq!(&prover_id(1000)[..3], &[0xe8, 0x07, 0]);
        assert_eq!(&prover_id(127)[..2], &[0x7f, 0]);
        assert_eq!(&prover_id(128)[..2], &[0x80, 0x01]);
    }

    #[test]
    fn commitments_round_trip_through_cids() {
        let c = [7u8; 32];
        for sealed in [true, false] {
            assert_eq!(parse_commitment(&commitment_cid(&c, sealed), "x").unwrap(), c);
        }
        assert_eq!(parse_commitment(&c, "x").unwrap(), c);
        assert!(parse_commitment(&[1, 2, 3], "x").is_err());
    }
}
