//! Groth16 proofs: bellperson's 192-byte compressed encoding, and verification.

use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Prepared, Scalar};
use group::{Curve, Group};
use pairing::{MillerLoopResult, MultiMillerLoop};

use crate::params::VerifyingKey;

/// Bytes of a compressed proof: `A` (48) | `B` (96) | `C` (48).
pub const PROOF_BYTES: usize = 192;

/// A Groth16 proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proof {
    /// `A` in G1.
    pub a: G1Affine,
    /// `B` in G2.
    pub b: G2Affine,
    /// `C` in G1.
    pub c: G1Affine,
}

/// Why proof bytes were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    /// Not exactly [`PROOF_BYTES`] bytes (or a multiple, for a batch).
    #[error("a proof is {PROOF_BYTES} bytes, got {0}")]
    WrongLength(usize),
    /// A component is not a valid compressed point in the prime-order subgroup.
    #[error("proof element {0} is not a valid compressed point in the subgroup")]
    InvalidPoint(&'static str),
}

impl Proof {
    /// Compressed encoding, identical to bellperson's `Proof::write`.
    pub fn to_bytes(&self) -> [u8; PROOF_BYTES] {
        let mut out = [0u8; PROOF_BYTES];
        out[..48].copy_from_slice(&self.a.to_compressed());
        out[48..144].copy_from_slice(&self.b.to_compressed());
        out[144..].copy_from_slice(&self.c.to_compressed());
        out
    }

    /// Decodes and subgroup-checks a compressed proof (bellperson's `Proof::read`).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ProofError> {
        if bytes.len() != PROOF_BYTES {
            return Err(ProofError::WrongLength(bytes.len()));
        }
        let a = Option::from(G1Affine::from_compressed(bytes[..48].try_into().expect("48"))).ok_or(ProofError::InvalidPoint("A"))?;
        let b = Option::from(G2Affine::from_compressed(bytes[48..144].try_into().expect("96"))).ok_or(ProofError::InvalidPoint("B"))?;
        let c = Option::from(G1Affine::from_compressed(bytes[144..].try_into().expect("48"))).ok_or(ProofError::InvalidPoint("C"))?;
        Ok(Proof { a, b, c })
    }

    /// Decodes concatenated proofs (a multi-partition proof).
    pub fn many_from_bytes(bytes: &[u8]) -> Result<Vec<Self>, ProofError> {
        if !bytes.len().is_multiple_of(PROOF_BYTES) || bytes.is_empty() {
            return Err(ProofError::WrongLength(bytes.len()));
        }
        bytes.chunks_exact(PROOF_BYTES).map(Self::from_bytes).collect()
    }
}

/// Why verification could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The number of public inputs does not match the verifying key.
    #[error("the verifying key expects {expected} public inputs, got {got}")]
    InputCount {
        /// Inputs the key expects (excluding `ONE`).
        expected: usize,
        /// Inputs given.
        got: usize,
    },
}

/// Checks `e(A,B) = e(α,β)·e(Σ xᵢ·ICᵢ, γ)·e(C, δ)`. `inputs` excludes the leading `ONE`.
pub fn verify(vk: &VerifyingKey, proof: &Proof, inputs: &[Scalar]) -> Result<bool, VerifyError> {
    if inputs.len() + 1 != vk.ic.len() {
        return Err(VerifyError::InputCount { expected: vk.ic.len().saturating_sub(1), got: inputs.len() });
    }
    let mut acc = G1Projective::from(vk.ic[0]);
    for (x, ic) in inputs.iter().zip(&vk.ic[1..]) {
        acc += ic * x;
    }
    let acc = acc.to_affine();
    // e(A,B) · e(-acc,γ) · e(-C,δ) · e(-α,β) == 1
    let terms = [
        (proof.a, G2Prepared::from(proof.b)),
        (-acc, G2Prepared::from(vk.gamma_g2)),
        (-proof.c, G2Prepared::from(vk.delta_g2)),
        (-vk.alpha_g1, G2Prepared::from(vk.beta_g2)),
    ];
    let refs: Vec<(&G1Affine, &G2Prepared)> = terms.iter().map(|(g, h)| (g, h)).collect();
    let result = Bls12::multi_miller_loop(&refs).final_exponentiation();
    Ok(bool::from(result.is_identity()))
}
