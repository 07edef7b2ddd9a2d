//! The built-in benchmark circuits of cuzk, each sized by its domain `2^log_size`:
//!
//! - [`Sha256Chain`]: bellpepper's `sha256_block_no_padding` applied repeatedly to witness
//!   bits, each 256-bit output doubled into the next 512-bit block; the final digest is packed
//!   into public inputs. Boolean-heavy, like Filecoin's circuits.
//! - [`SquaringChain`]: `x_{i+1} = x_i² + i` from a random `x_0`; `x_0` and the last value are
//!   public. Dense random scalars.

#![warn(missing_docs)]

mod parallel;

use std::sync::OnceLock;

use bellpepper::gadgets::multipack;
use bellpepper::gadgets::sha256::sha256_block_no_padding;
use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use rand_chacha::rand_core::{RngCore, SeedableRng};

/// Largest supported domain.
pub const MAX_LOG_SIZE: u32 = 27;

/// Why a built-in circuit cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CircuitError {
    /// No circuit of that name.
    #[error("unknown circuit {0:?}; built-in circuits are: sha256-chain, squaring-chain")]
    Unknown(String),
    /// The domain is too small or too large for the circuit.
    #[error("circuit {name} supports log sizes {min}..={max}, got {got}")]
    BadSize {
        /// Circuit name.
        name: &'static str,
        /// Smallest log size.
        min: u32,
        /// Largest log size.
        max: u32,
        /// Requested.
        got: u32,
    },
}

/// The built-in circuit shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CircuitKind {
    /// See [`Sha256Chain`].
    Sha256Chain,
    /// See [`SquaringChain`].
    SquaringChain,
}

impl CircuitKind {
    /// All built-in circuits.
    pub const ALL: [CircuitKind; 2] = [CircuitKind::Sha256Chain, CircuitKind::SquaringChain];

    /// Parses a circuit name.
    pub fn from_name(name: &str) -> Result<Self, CircuitError> {
        match name {
            "sha256-chain" | "sha256" => Ok(CircuitKind::Sha256Chain),
            "squaring-chain" | "squaring" => Ok(CircuitKind::SquaringChain),
            _ => Err(CircuitError::Unknown(name.to_string())),
        }
    }

    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            CircuitKind::Sha256Chain => "sha256-chain",
            CircuitKind::SquaringChain => "squaring-chain",
        }
    }

    /// Smallest supported log size.
    pub fn min_log_size(self) -> u32 {
        match self {
            CircuitKind::Sha256Chain => 15,
            CircuitKind::SquaringChain => 2,
        }
    }

    /// An instance filling the domain `2^log_size`, with a witness derived from `seed`.
    pub fn instance(self, log_size: u32, seed: u64) -> Result<BuiltinCircuit, CircuitError> {
        let (min, max) = (self.min_log_size(), MAX_LOG_SIZE);
        if log_size < min || log_size > max {
            return Err(CircuitError::BadSize { name: self.name(), min, max, got: log_size });
        }
        Ok(match self {
            CircuitKind::Sha256Chain => BuiltinCircuit::Sha256(Sha256Chain::for_log_size(log_size, seed)),
            CircuitKind::SquaringChain => BuiltinCircuit::Squaring(SquaringChain::for_log_size(log_size, seed)),
        })
    }
}

/// A built-in circuit at a domain size: the unit of parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BuiltinShape {
    /// Which circuit.
    pub kind: CircuitKind,
    /// log2 of its domain.
    pub log_size: u32,
}

impl BuiltinShape {
    /// Checks the name and size.
    pub fn new(kind: CircuitKind, log_size: u32) -> Result<BuiltinShape, CircuitError> {
        let (min, max) = (kind.min_log_size(), MAX_LOG_SIZE);
        if log_size < min || log_size > max {
            return Err(CircuitError::BadSize { name: kind.name(), min, max, got: log_size });
        }
        Ok(BuiltinShape { kind, log_size })
    }

    /// The id used in the API and on the status page: `squaring-chain-2^10`.
    pub fn id(&self) -> String {
        format!("{}-2^{}", self.kind.name(), self.log_size)
    }

    /// Parses [`BuiltinShape::id`].
    pub fn parse(id: &str) -> Result<BuiltinShape, CircuitError> {
        let unknown = || CircuitError::Unknown(id.to_string());
        let (name, k) = id.rsplit_once("-2^").ok_or_else(unknown)?;
        let k: u32 = k.parse().map_err(|_| unknown())?;
        BuiltinShape::new(CircuitKind::from_name(name)?, k)
    }

    /// The key of its parameters and recorded matrices ([`BuiltinShape::id`]).
    pub fn key(&self) -> cuzk_core::circuit::ShapeKey {
        cuzk_core::circuit::ShapeKey::new(self.id())
    }

    /// Partition `seed`'s circuit, as the worker proves it (its witness is built here from
    /// the seed, so it is trusted).
    pub fn partition(&self, seed: u64) -> Result<cuzk_core::circuit::Partition<BuiltinCircuit>, CircuitError> {
        let circuit = self.kind.instance(self.log_size, seed)?;
        Ok(cuzk_core::circuit::Partition { shape: self.key(), check: cuzk_core::circuit::WitnessCheck::Trusted, circuit })
    }
}

/// One instance of a built-in circuit.
#[derive(Debug, Clone)]
pub enum BuiltinCircuit {
    /// A SHA-256 chain.
    Sha256(Sha256Chain),
    /// A squaring chain.
    Squaring(SquaringChain),
}

impl BuiltinCircuit {
    /// The public inputs (without the leading `ONE`), computed natively.
    pub fn public_inputs(&self) -> Vec<Scalar> {
        match self {
            BuiltinCircuit::Sha256(c) => c.public_inputs(),
            BuiltinCircuit::Squaring(c) => c.public_inputs(),
        }
    }
}

impl cuzk_core::circuit::PublicInputs for BuiltinCircuit {
    fn public_inputs(&self) -> Result<Vec<Scalar>, cuzk_core::circuit::CircuitError> {
        Ok(BuiltinCircuit::public_inputs(self))
    }
}

impl Circuit<Scalar> for BuiltinCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            BuiltinCircuit::Sha256(c) => c.synthesize(cs),
            BuiltinCircuit::Squaring(c) => c.synthesize(cs),
        }
    }
}

// Recording, synthesis and witnesses of the built-in circuits, compiled here once.
cuzk_core::compiled_synthesis!(BuiltinCircuit);

pub use cuzk_core::synth::ShapeCounter;

/// Total constraints the prover will see for `circuit` (its own plus one per public input,
/// `ONE` included).
pub fn prover_constraints<C: Circuit<Scalar>>(circuit: C) -> Result<usize, SynthesisError> {
    Ok(ShapeCounter::of(circuit)?.constraints)
}

/// SHA-256 compression chain.
#[derive(Debug, Clone)]
pub struct Sha256Chain {
    /// The 512 witness bits of the first block (boxed: they dwarf the other circuits).
    pub preimage: Box<[bool; 512]>,
    /// Number of compressions.
    pub blocks: usize,
}

impl Sha256Chain {
    /// The longest chain whose prover constraint count fits in `2^log_size`.
    pub fn for_log_size(log_size: u32, seed: u64) -> Self {
        // Constraints = fixed + blocks * per_block; measured once.
        static SHAPE: OnceLock<(usize, usize)> = OnceLock::new();
        let &(fixed, per_block) = SHAPE.get_or_init(|| {
            let one = prover_constraints(Sha256Chain { preimage: Box::new([false; 512]), blocks: 1 }).expect("counting cannot fail");
            let two = prover_constraints(Sha256Chain { preimage: Box::new([false; 512]), blocks: 2 }).expect("counting cannot fail");
            (2 * one - two, two - one)
        });
        let blocks = ((1usize << log_size).saturating_sub(fixed) / per_block).max(1);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut preimage = Box::new([false; 512]);
        for b in preimage.iter_mut() {
            *b = rng.next_u32() & 1 == 1;
        }
        Sha256Chain { preimage, blocks }
    }

    /// The final digest's bits (big-endian), computed natively.
    pub fn digest_bits(&self) -> Vec<bool> {
        let mut block = first_block(&self.preimage);
        let mut out = [0u8; 32];
        for _ in 0..self.blocks {
            out = compress(&block);
            block = double(&out);
        }
        multipack::bytes_to_bits(&out)
    }

    /// Public inputs: the digest packed by `multipack`.
    pub fn public_inputs(&self) -> Vec<Scalar> {
        multipack::compute_multipacking(&self.digest_bits())
    }
}

const SHA256_IV: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// The first 64-byte block: the preimage bits, big-endian within each byte.
fn first_block(bits: &[bool; 512]) -> [u8; 64] {
    let mut out = [0u8; 64];
    for (o, c) in out.iter_mut().zip(bits.chunks(8)) {
        *o = c.iter().fold(0u8, |acc, &b| (acc << 1) | u8::from(b));
    }
    out
}

/// One compression from the IV, as `sha256_block_no_padding` computes it.
fn compress(block: &[u8; 64]) -> [u8; 32] {
    let mut state = SHA256_IV;
    sha2::compress256(&mut state, &[(*block).into()]);
    let mut out = [0u8; 32];
    for (o, w) in out.chunks_mut(4).zip(state) {
        o.copy_from_slice(&w.to_be_bytes());
    }
    out
}

/// The next block of the chain: the digest twice.
fn double(digest: &[u8; 32]) -> [u8; 64] {
    let mut out = [0u8; 64];
    out[..32].copy_from_slice(digest);
    out[32..].copy_from_slice(digest);
    out
}

impl Circuit<Scalar> for Sha256Chain {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut input: Vec<Boolean> = self
            .preimage
            .iter()
            .enumerate()
            .map(|(i, &b)| AllocatedBit::alloc(cs.namespace(|| format!("preimage {i}")), Some(b)).map(Boolean::from))
            .collect::<Result<_, _>>()?;
        let mut out = Vec::new();
        for i in 0..self.blocks {
            out = sha256_block_no_padding(cs.namespace(|| format!("block {i}")), &input)?;
            input = [out.clone(), out.clone()].concat();
        }
        multipack::pack_into_inputs(cs.namespace(|| "digest"), &out)
    }
}

/// Squaring chain `x_{i+1} = x_i² + i`.
#[derive(Debug, Clone)]
pub struct SquaringChain {
    /// Starting value (public).
    pub x0: Scalar,
    /// Number of squarings.
    pub steps: usize,
}

impl SquaringChain {
    /// A chain filling `2^log_size` exactly: `steps` constraints plus three public inputs
    /// (`ONE`, `x_0`, the result).
    pub fn for_log_size(log_size: u32, seed: u64) -> Self {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        SquaringChain { x0: Scalar::random(&mut rng), steps: (1usize << log_size) - 3 }
    }

    /// The chain's values, natively.
    pub fn result(&self) -> Scalar {
        let mut x = self.x0;
        for i in 0..self.steps {
            x = x.square() + Scalar::from(i as u64);
        }
        x
    }

    /// Public inputs `[x_0, x_steps]`.
    pub fn public_inputs(&self) -> Vec<Scalar> {
        vec![self.x0, self.result()]
    }
}

impl Circuit<Scalar> for SquaringChain {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut x = self.x0;
        let mut var = cs.alloc_input(|| "start", || Ok(x))?;
        for i in 0..self.steps {
            let next = x.square() + Scalar::from(i as u64);
            let last = i + 1 == self.steps;
            let nvar = if last { cs.alloc_input(|| "result", || Ok(next))? } else { cs.alloc(|| format!("step {i}"), || Ok(next))? };
            let k = Scalar::from(i as u64);
            cs.enforce(|| format!("square {i}"), |lc| lc + var, |lc| lc + var, |lc| lc + nvar - (k, CS::one()));
            x = next;
            var = nvar;
        }
        if self.steps == 0 {
            // Keep two public inputs even for an empty chain: the result equals x0.
            let out = cs.alloc_input(|| "result", || Ok(x))?;
            cs.enforce(|| "result", |lc| lc + var, |lc| lc + CS::one(), |lc| lc + out);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper_core::test_cs::TestConstraintSystem;

    #[test]
    fn circuits_fill_their_domain_and_are_satisfied() {
        for (kind, k) in [(CircuitKind::SquaringChain, 4), (CircuitKind::SquaringChain, 10), (CircuitKind::Sha256Chain, 16)] {
            let c = kind.instance(k, 7).unwrap();
            let n = prover_constraints(c.clone()).unwrap();
            assert!(n <= 1 << k && n > (1 << k) / 2, "{kind:?} {k}: {n}");
            let mut cs = TestConstraintSystem::<Scalar>::new();
            let expected = c.public_inputs();
            c.synthesize(&mut cs).unwrap();
            assert!(cs.is_satisfied(), "{kind:?} unsatisfied: {:?}", cs.which_is_unsatisfied());
            assert!(cs.verify(&expected), "{kind:?}: native public inputs differ from the circuit's");
        }
        assert!(CircuitKind::Sha256Chain.instance(10, 0).is_err());
        assert!(CircuitKind::from_name("nope").is_err());
    }
}
