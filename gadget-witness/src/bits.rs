//! Bits as bellpepper's `Boolean` sees them: a constant, or an allocated bit used as it is or
//! negated. Whether a bit is constant, and whether it is negated, decides what the gadgets
//! allocate, so the writers track both along with the value.

use blstrs::Scalar;
use ff::{Field, PrimeField};

use crate::Assignment;

/// The witness view of `bellpepper_core::boolean::Boolean`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bit {
    /// `Boolean::Constant`: allocates nothing.
    Constant(bool),
    /// `Boolean::Is`: an allocated bit holding this value.
    Is(bool),
    /// `Boolean::Not`: the negation of an allocated bit holding this value.
    Not(bool),
}

impl Bit {
    /// `AllocatedBit::alloc` wrapped as `Boolean::Is`: one aux bit.
    #[inline]
    pub fn alloc(a: &mut Assignment<'_>, value: bool) -> Bit {
        a.bit(value);
        Bit::Is(value)
    }

    /// The bit's value.
    #[inline]
    pub fn value(self) -> bool {
        match self {
            Bit::Constant(b) | Bit::Is(b) => b,
            Bit::Not(b) => !b,
        }
    }

    /// `Boolean::not`.
    #[inline]
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Bit {
        match self {
            Bit::Constant(b) => Bit::Constant(!b),
            Bit::Is(b) => Bit::Not(b),
            Bit::Not(b) => Bit::Is(b),
        }
    }
}

impl Bit {
    /// `Boolean::constant`.
    #[inline]
    pub fn constant(value: bool) -> Bit {
        Bit::Constant(value)
    }

    /// `Boolean::is_constant`.
    #[inline]
    pub fn is_constant(self) -> bool {
        matches!(self, Bit::Constant(_))
    }

    /// `Boolean::xor`: allocates one bit unless either operand is a constant. The allocated
    /// bit is the xor of the underlying allocated bits; the result is `Not` of it when exactly
    /// one operand is negated.
    #[inline]
    pub fn xor(a: &mut Assignment<'_>, x: Bit, y: Bit) -> Bit {
        match (x, y) {
            (Bit::Constant(false), o) | (o, Bit::Constant(false)) => o,
            (Bit::Constant(true), o) | (o, Bit::Constant(true)) => o.not(),
            (Bit::Is(u), Bit::Not(v)) | (Bit::Not(u), Bit::Is(v)) => {
                a.bit(u ^ v);
                Bit::Not(u ^ v)
            }
            (Bit::Is(u), Bit::Is(v)) | (Bit::Not(u), Bit::Not(v)) => {
                a.bit(u ^ v);
                Bit::Is(u ^ v)
            }
        }
    }

    /// `Boolean::and`: allocates one bit (`and`, `and_not` or `nor` of the underlying bits,
    /// which is always the and of the two values) unless either operand is a constant.
    #[inline]
    pub fn and(a: &mut Assignment<'_>, x: Bit, y: Bit) -> Bit {
        match (x, y) {
            (Bit::Constant(false), _) | (_, Bit::Constant(false)) => Bit::Constant(false),
            (Bit::Constant(true), o) | (o, Bit::Constant(true)) => o,
            _ => {
                let v = x.value() & y.value();
                a.bit(v);
                Bit::Is(v)
            }
        }
    }

    /// `Boolean::sha256_ch`: `(x and y) xor (not x and z)`, with the gadget's special cases
    /// for constant operands.
    pub fn sha256_ch(a: &mut Assignment<'_>, x: Bit, y: Bit, z: Bit) -> Bit {
        let ch = (x.value() & y.value()) ^ (!x.value() & z.value());
        match (x, y, z) {
            (Bit::Constant(_), Bit::Constant(_), Bit::Constant(_)) => Bit::Constant(ch),
            (Bit::Constant(false), _, z) => z,
            (x, Bit::Constant(false), z) => Bit::and(a, x.not(), z),
            (x, y, Bit::Constant(false)) => Bit::and(a, x, y),
            (x, y, Bit::Constant(true)) => Bit::and(a, x, y.not()).not(),
            (x, Bit::Constant(true), z) => Bit::and(a, x.not(), z.not()).not(),
            // `Constant(true)` with two allocated operands falls through to the general case.
            _ => {
                a.bit(ch);
                Bit::Is(ch)
            }
        }
    }

    /// `Boolean::sha256_maj`: `(x and y) xor (x and z) xor (y and z)`, with the gadget's
    /// special cases for constant operands; the general case allocates the result, then
    /// `y and z`.
    pub fn sha256_maj(a: &mut Assignment<'_>, x: Bit, y: Bit, z: Bit) -> Bit {
        let (xv, yv, zv) = (x.value(), y.value(), z.value());
        let maj = (xv & yv) ^ (xv & zv) ^ (yv & zv);
        match (x, y, z) {
            (Bit::Constant(_), Bit::Constant(_), Bit::Constant(_)) => Bit::Constant(maj),
            (Bit::Constant(false), y, z) => Bit::and(a, y, z),
            (x, Bit::Constant(false), z) => Bit::and(a, x, z),
            (x, y, Bit::Constant(false)) => Bit::and(a, x, y),
            (x, y, Bit::Constant(true)) => Bit::and(a, x.not(), y.not()).not(),
            (x, Bit::Constant(true), z) => Bit::and(a, x.not(), z.not()).not(),
            (Bit::Constant(true), y, z) => Bit::and(a, y.not(), z.not()).not(),
            _ => {
                a.bit(maj);
                Bit::and(a, y, z);
                Bit::Is(maj)
            }
        }
    }
}

/// The little-endian bits of a scalar's canonical representation (256, the top one zero).
#[inline]
fn scalar_bit(repr: &[u8; 32], i: usize) -> bool {
    (repr[i / 8] >> (i % 8)) & 1 == 1
}

/// `AllocatedNum::to_bits_le` (`field_into_allocated_bits_le`): allocates the scalar's 255
/// bits, least significant first, and nothing else; returns them as `Is`.
pub fn num_to_bits_le(a: &mut Assignment<'_>, value: Scalar) -> Vec<Bit> {
    let repr = value.to_repr();
    (0..Scalar::NUM_BITS as usize)
        .map(|i| {
            let b = scalar_bit(&repr, i);
            Bit::alloc(a, b)
        })
        .collect()
}

/// `AllocatedNum::to_bits_le_strict`: walks the bits of `r - 1` from the most significant
/// one, allocating the scalar's bit for each; where a run of ones in `r - 1` ends, the and of
/// that run's bits (and of the previous runs' and) is allocated one step at a time before the
/// next bit. Returns the 255 bits, least significant first, as `Is`.
pub fn num_to_bits_le_strict(a: &mut Assignment<'_>, value: Scalar) -> Vec<Bit> {
    let repr = value.to_repr();
    let modulus_minus_one = (-Scalar::ONE).to_repr();
    let mut result = Vec::with_capacity(Scalar::NUM_BITS as usize);
    let mut last_run: Option<bool> = None;
    let mut current_run: Vec<bool> = Vec::with_capacity(64);
    let mut found_one = false;
    for i in (0..256).rev() {
        let r_bit = scalar_bit(&modulus_minus_one, i);
        let a_bit = scalar_bit(&repr, i);
        found_one |= r_bit;
        if !found_one {
            continue;
        }
        if r_bit {
            a.bit(a_bit);
            current_run.push(a_bit);
        } else {
            if !current_run.is_empty() {
                if let Some(last) = last_run {
                    current_run.push(last);
                }
                // kary_and: `and` of the running value with each next bit.
                let mut cur = current_run[0];
                for &b in &current_run[1..] {
                    cur &= b;
                    a.bit(cur);
                }
                last_run = Some(cur);
                current_run.clear();
            }
            // alloc_conditionally
            a.bit(a_bit);
        }
        result.push(Bit::Is(a_bit));
    }
    result.reverse();
    result
}

/// storage-proofs-core's `util::reverse_bit_numbering`: pads `bits` with `Constant(false)` to
/// whole bytes, then reverses the bit order within each byte. Allocates nothing.
pub fn reverse_bit_numbering(bits: &[Bit]) -> Vec<Bit> {
    let mut out = Vec::with_capacity(bits.len().div_ceil(8) * 8);
    for chunk in bits.chunks(8) {
        out.extend(std::iter::repeat_n(Bit::Constant(false), 8 - chunk.len()));
        out.extend(chunk.iter().rev());
    }
    out
}

/// The value `bits` (least significant first) represent, up to `Scalar::CAPACITY` of them.
fn pack_value(bits: &[Bit]) -> Scalar {
    let mut limbs = [0u64; 4];
    for (i, b) in bits.iter().take(Scalar::CAPACITY as usize).enumerate() {
        limbs[i / 64] |= (b.value() as u64) << (i % 64);
    }
    Scalar::from_u64s_le(&limbs).expect("fewer than 255 bits are below the modulus")
}

/// `multipack::pack_bits`: allocates one aux num, the value of the first `Scalar::CAPACITY`
/// (254) bits, least significant first; returns it.
pub fn pack_bits(a: &mut Assignment<'_>, bits: &[Bit]) -> Scalar {
    let v = pack_value(bits);
    a.aux(v);
    v
}

/// `multipack::pack_into_inputs`: allocates one input per chunk of `Scalar::CAPACITY` (254)
/// bits, the chunk's value (least significant first), and no aux.
pub fn pack_into_inputs(a: &mut Assignment<'_>, bits: &[Bit]) {
    for chunk in bits.chunks(Scalar::CAPACITY as usize) {
        a.input(pack_value(chunk));
    }
}
