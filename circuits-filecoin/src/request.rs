//! A Filecoin proof request as the API carries it, and its small fields.

use serde::{Deserialize, Serialize};

use crate::error::FilError;
use crate::ids::FilKind;

/// A proof request: the fields of `cuzk.v1.SubmitProofRequest` a Filecoin kind uses, in the
/// encodings Curio's Go client sends (`lib/ffi/cuzk_funcs.go`).
///
/// Vanilla proof encodings:
/// - PoRep (`vanilla_proof`, API field 10): the JSON of a C1 output, either filecoin-proofs-api's
///   `SealCommitPhase1Output` (what filecoin-ffi returns: `registered_proof` as a name,
///   `vanilla_proofs` in a one-key object naming the sector size), filecoin-proofs' own (no
///   `registered_proof`, `vanilla_proofs` a plain array) or the layout Curio's Go code writes for
///   supraseal batches (`json.Marshal` of its `Commit1OutRaw`); optionally inside Curio's
///   `{"SectorNum", "Phase1Out": base64, "SectorSize"}` wrapper, as Curio sends it;
/// - SnapDeals (`vanilla_proofs`, API field 11): one `bincode` `PartitionProof` per partition;
/// - WindowPoSt, WinningPoSt (`vanilla_proofs`): one `bincode` `FallbackPoStSectorProof` per
///   challenged sector.
///
/// In JSON (request files), byte fields are hex strings and `vanilla_proofs` a list of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilRequest {
    /// The kind.
    #[serde(with = "kind_serde")]
    pub kind: FilKind,
    /// Go's `abi.RegisteredSealProof` (PoRep), `RegisteredUpdateProof` (SnapDeals) or
    /// `RegisteredPoStProof` (PoSt) number.
    pub registered_proof: u64,
    /// PoRep: the C1 output JSON (optionally in Curio's wrapper) — API field 10.
    #[serde(default, with = "hex_serde")]
    pub vanilla_proof: Vec<u8>,
    /// SnapDeals / PoSt: bincode elements — API field 11.
    #[serde(default, with = "hex_list_serde")]
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// Sector number (PoRep, SnapDeals).
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
    /// SnapDeals: raw 32-byte commitments (or a CID of the right codec) — API fields 30, 31, 32.
    #[serde(default, with = "hex_serde")]
    pub comm_r_old: Vec<u8>,
    /// SnapDeals: the new sealed commitment (API field 31).
    #[serde(default, with = "hex_serde")]
    pub comm_r_new: Vec<u8>,
    /// SnapDeals: the new unsealed commitment (API field 32).
    #[serde(default, with = "hex_serde")]
    pub comm_d_new: Vec<u8>,
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

mod hex_list_serde {
    use serde::ser::SerializeSeq;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(list: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(list.len()))?;
        for b in list {
            seq.serialize_element(&hex::encode(b))?;
        }
        seq.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        Vec::<String>::deserialize(d)?.into_iter().map(|h| hex::decode(h).map_err(serde::de::Error::custom)).collect()
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

/// An unsigned varint as multiformats encodes them (at most 9 bytes, minimally encoded, as
/// go-cid requires).
fn varint(bytes: &[u8], pos: &mut usize) -> Result<u64, &'static str> {
    let mut v = 0u64;
    for i in 0..9 {
        let b = *bytes.get(*pos).ok_or("truncated")?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return if b == 0 && i > 0 { Err("not minimally encoded") } else { Ok(v) };
        }
    }
    Err("longer than 9 bytes")
}

/// Which commitment a field holds: it selects the CID codec and multihash Filecoin uses for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitmentKind {
    /// A replica commitment (`comm_r`): codec `fil-commitment-sealed` (0xf102), multihash
    /// `poseidon-bls12_381-a2-fc1` (0xb401).
    Sealed,
    /// A data commitment (`comm_d`): codec `fil-commitment-unsealed` (0xf101), multihash
    /// `sha2-256-trunc254-padded` (0x1012).
    Unsealed,
}

impl CommitmentKind {
    /// The multicodec and multihash codes, and their names.
    fn codes(self) -> (u64, u64, &'static str, &'static str) {
        match self {
            CommitmentKind::Sealed => (0xf102, 0xb401, "fil-commitment-sealed", "poseidon-bls12_381-a2-fc1"),
            CommitmentKind::Unsealed => (0xf101, 0x1012, "fil-commitment-unsealed", "sha2-256-trunc254-padded"),
        }
    }
}

fn codec_name(code: u64) -> &'static str {
    match code {
        0xf101 => " (fil-commitment-unsealed)",
        0xf102 => " (fil-commitment-sealed)",
        0x55 => " (raw)",
        0x70 => " (dag-pb)",
        0x71 => " (dag-cbor)",
        _ => "",
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A commitment from the 32 raw bytes (as Curio sends them) or from its binary CID (CIDv1 with
/// the codec and multihash of `kind`, 32-byte digest). A CID of another codec or multihash, or
/// any other length, is refused with an error naming `field`.
pub fn parse_commitment(bytes: &[u8], field: &'static str, kind: CommitmentKind) -> Result<[u8; 32], FilError> {
    if let Ok(raw) = <[u8; 32]>::try_from(bytes) {
        return Ok(raw);
    }
    let (codec, mh, codec_str, mh_str) = kind.codes();
    if bytes.is_empty() {
        return Err(FilError::field(field, "missing (expected the 32-byte commitment)"));
    }
    if bytes[0] != 0x01 {
        return Err(FilError::field(field, format!("{} bytes: expected the 32-byte commitment or its CIDv1", bytes.len())));
    }
    let bad = |r: String| FilError::field(field, format!("{}-byte CID: {r}", bytes.len()));
    let mut pos = 1;
    let got_codec = varint(bytes, &mut pos).map_err(|e| bad(format!("codec varint {e}")))?;
    if got_codec != codec {
        return Err(bad(format!("codec {got_codec:#x}{}, expected {codec:#x} ({codec_str})", codec_name(got_codec))));
    }
    let got_mh = varint(bytes, &mut pos).map_err(|e| bad(format!("multihash code varint {e}")))?;
    if got_mh != mh {
        return Err(bad(format!("multihash {got_mh:#x}, expected {mh:#x} ({mh_str})")));
    }
    let len = varint(bytes, &mut pos).map_err(|e| bad(format!("digest length varint {e}")))?;
    if len != 32 || bytes.len() != pos + 32 {
        return Err(bad(format!("digest of {len} bytes in {} remaining, expected 32", bytes.len() - pos)));
    }
    Ok(bytes[pos..].try_into().expect("32 bytes"))
}

/// The binary CID (CIDv1) of a commitment, as go-fil-commcid writes it: codec
/// `fil-commitment-sealed` and multihash `poseidon-bls12_381-a2-fc1` for [`CommitmentKind::Sealed`],
/// `fil-commitment-unsealed` and `sha2-256-trunc254-padded` for [`CommitmentKind::Unsealed`].
pub fn commitment_cid(comm: &[u8; 32], kind: CommitmentKind) -> Vec<u8> {
    let (codec, mh, _, _) = kind.codes();
    let mut out = vec![0x01];
    put_varint(&mut out, codec);
    put_varint(&mut out, mh);
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

    /// The multibase base32 (RFC 4648, lower case, no padding) text of a CID, decoded: an
    /// independent reading of CID strings.
    fn base32_cid(s: &str) -> Vec<u8> {
        let s = s.strip_prefix('b').expect("multibase base32");
        let (mut acc, mut bits, mut out) = (0u32, 0, Vec::new());
        for c in s.bytes() {
            let v = match c {
                b'a'..=b'z' => c - b'a',
                b'2'..=b'7' => c - b'2' + 26,
                _ => panic!("not base32: {c}"),
            };
            acc = (acc << 5) | u32::from(v);
            bits += 5;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
                acc &= (1 << bits) - 1;
            }
        }
        out
    }

    #[test]
    fn commitment_cids_use_filecoins_codecs() {
        let c: [u8; 32] = std::array::from_fn(|i| i as u8);
        // Varints written out by hand: 0xf102 = 82 e2 03, 0xb401 = 81 e8 02, 0xf101 = 81 e2 03,
        // 0x1012 = 92 20.
        let sealed = commitment_cid(&c, CommitmentKind::Sealed);
        assert_eq!(&sealed[..8], &[0x01, 0x82, 0xe2, 0x03, 0x81, 0xe8, 0x02, 0x20]);
        assert_eq!(sealed.len(), 40);
        let unsealed = commitment_cid(&c, CommitmentKind::Unsealed);
        assert_eq!(&unsealed[..7], &[0x01, 0x81, 0xe2, 0x03, 0x92, 0x20, 0x20]);
        assert_eq!(unsealed.len(), 39);
        assert_eq!(&sealed[8..], &c);
        assert_eq!(&unsealed[7..], &c);
        for kind in [CommitmentKind::Sealed, CommitmentKind::Unsealed] {
            assert_eq!(parse_commitment(&commitment_cid(&c, kind), "x", kind).unwrap(), c);
            assert_eq!(parse_commitment(&c, "x", kind).unwrap(), c);
        }
    }

    #[test]
    fn real_filecoin_cids_parse() {
        // A replica commitment from Curio's test data (lib/proof/testgolden/postpub.json) and a
        // piece commitment (CommP, same codec as comm_d) from lib/proof/merkle_sha254_memtree_test.go.
        let sealed = base32_cid("bagboea4b5abcbx3jccdohrttzfneleehcpkmle4oltwuh4q3rcf5tpdodaoj6mtl");
        assert_eq!(&sealed[..8], &[0x01, 0x82, 0xe2, 0x03, 0x81, 0xe8, 0x02, 0x20]);
        let comm_r = parse_commitment(&sealed, "comm_r_old", CommitmentKind::Sealed).unwrap();
        assert_eq!(commitment_cid(&comm_r, CommitmentKind::Sealed), sealed);
        let unsealed = base32_cid("baga6ea4seaqhx2zkltpeqwlnkvxfu2auzwv6xeqk35gd2keih65iocpjnrsqeoi");
        assert_eq!(&unsealed[..7], &[0x01, 0x81, 0xe2, 0x03, 0x92, 0x20, 0x20]);
        let comm_d = parse_commitment(&unsealed, "comm_d_new", CommitmentKind::Unsealed).unwrap();
        assert_eq!(commitment_cid(&comm_d, CommitmentKind::Unsealed), unsealed);

        // Each refused as the other kind, naming the field and both codecs.
        let e = parse_commitment(&sealed, "comm_d_new", CommitmentKind::Unsealed).unwrap_err().to_string();
        assert!(e.starts_with("comm_d_new: ") && e.contains("codec 0xf102 (fil-commitment-sealed), expected 0xf101"), "{e}");
        let e = parse_commitment(&unsealed, "comm_r_new", CommitmentKind::Sealed).unwrap_err().to_string();
        assert!(e.starts_with("comm_r_new: ") && e.contains("codec 0xf101 (fil-commitment-unsealed), expected 0xf102"), "{e}");
    }

    #[test]
    fn malformed_commitments_are_refused() {
        let c = [9u8; 32];
        let k = CommitmentKind::Sealed;
        let msg = |b: &[u8]| parse_commitment(b, "comm_r_old", k).unwrap_err().to_string();
        assert_eq!(msg(&[]), "comm_r_old: missing (expected the 32-byte commitment)");
        assert_eq!(msg(&[7; 31]), "comm_r_old: 31 bytes: expected the 32-byte commitment or its CIDv1");
        assert_eq!(msg(&[7; 33]), "comm_r_old: 33 bytes: expected the 32-byte commitment or its CIDv1");
        // Right codec, wrong multihash (sha2-256-trunc254-padded on a sealed CID).
        let mut cid = vec![0x01, 0x82, 0xe2, 0x03, 0x92, 0x20, 0x20];
        cid.extend_from_slice(&c);
        assert!(msg(&cid).contains("multihash 0x1012, expected 0xb401"), "{}", msg(&cid));
        // A dag-cbor CID.
        let mut cid = vec![0x01, 0x71, 0x12, 0x20];
        cid.extend_from_slice(&c);
        assert!(msg(&cid).contains("codec 0x71 (dag-cbor), expected 0xf102"), "{}", msg(&cid));
        // Truncated and extended CIDs.
        let good = commitment_cid(&c, k);
        for n in 1..good.len() {
            if n != 32 {
                assert!(parse_commitment(&good[..n], "comm_r_old", k).is_err(), "{n}");
            }
        }
        let mut long = good.clone();
        long.push(0);
        assert!(msg(&long).contains("digest of 32 bytes in 33 remaining"), "{}", msg(&long));
        // Unterminated, overlong and non-minimal varints (go-cid refuses the last as well).
        assert!(msg(&[0x01, 0xff, 0xff]).contains("codec varint truncated"), "{}", msg(&[0x01, 0xff, 0xff]));
        assert!(msg(&[0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]).contains("codec varint longer than 9 bytes"));
        let mut cid = vec![0x01, 0x82, 0xe2, 0x83, 0x00, 0x81, 0xe8, 0x02, 0x20];
        cid.extend_from_slice(&c);
        assert!(msg(&cid).contains("codec varint not minimally encoded"), "{}", msg(&cid));
    }
}
