//! `bellpepper::gadgets::uint32::UInt32` and storage-proofs' `UInt64`, values only.
//!
//! A [`U32`] keeps its 32 bits as three masks (value, which bits are constants, which are
//! negated allocated bits), so word operations are a few native instructions; only the bits a
//! gadget allocates are pushed, in the gadget's order (least significant first).

use crate::bits::{pack_into_inputs, Bit};
use crate::Assignment;

/// The witness view of `UInt32`: bit `i` (least significant first) is
/// `Constant(value_i)` if `constant_i`, else `Not(!value_i)` if `negated_i`, else
/// `Is(value_i)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct U32 {
    value: u32,
    constant: u32,
    negated: u32,
}

/// Pushes the bits of `values` selected by `mask`, least significant first.
#[inline]
fn push_masked(a: &mut Assignment<'_>, values: u32, mask: u32) {
    if mask == u32::MAX {
        for i in 0..32 {
            a.bit((values >> i) & 1 == 1);
        }
    } else {
        let mut m = mask;
        while m != 0 {
            let i = m.trailing_zeros();
            a.bit((values >> i) & 1 == 1);
            m &= m - 1;
        }
    }
}

impl U32 {
    /// `UInt32::constant`: 32 constant bits, allocates nothing.
    #[inline]
    pub fn constant(value: u32) -> U32 {
        U32 { value, constant: u32::MAX, negated: 0 }
    }

    /// `UInt32::alloc`: allocates the 32 bits, least significant first.
    #[inline]
    pub fn alloc(a: &mut Assignment<'_>, value: u32) -> U32 {
        push_masked(a, value, u32::MAX);
        U32 { value, constant: 0, negated: 0 }
    }

    /// The word's value.
    #[inline]
    pub fn value(&self) -> u32 {
        self.value
    }

    /// Whether every bit is a constant.
    #[inline]
    pub fn is_constant(&self) -> bool {
        self.constant == u32::MAX
    }

    /// Bit `i`, least significant first.
    #[inline]
    pub fn bit(&self, i: usize) -> Bit {
        let v = (self.value >> i) & 1 == 1;
        if (self.constant >> i) & 1 == 1 {
            Bit::Constant(v)
        } else if (self.negated >> i) & 1 == 1 {
            Bit::Not(!v)
        } else {
            Bit::Is(v)
        }
    }

    /// `UInt32::from_bits`: 32 bits, least significant first.
    pub fn from_bits(bits: &[Bit]) -> U32 {
        assert_eq!(bits.len(), 32);
        let mut w = U32 { value: 0, constant: 0, negated: 0 };
        for (i, b) in bits.iter().enumerate() {
            w.value |= (b.value() as u32) << i;
            match b {
                Bit::Constant(_) => w.constant |= 1 << i,
                Bit::Not(_) => w.negated |= 1 << i,
                Bit::Is(_) => {}
            }
        }
        w
    }

    /// `UInt32::from_bits_be`: 32 bits, most significant first.
    pub fn from_bits_be(bits: &[Bit]) -> U32 {
        assert_eq!(bits.len(), 32);
        let mut w = U32 { value: 0, constant: 0, negated: 0 };
        for (j, b) in bits.iter().enumerate() {
            let i = 31 - j;
            w.value |= (b.value() as u32) << i;
            match b {
                Bit::Constant(_) => w.constant |= 1 << i,
                Bit::Not(_) => w.negated |= 1 << i,
                Bit::Is(_) => {}
            }
        }
        w
    }

    /// `UInt32::into_bits`: the bits, least significant first.
    pub fn bits(&self) -> [Bit; 32] {
        std::array::from_fn(|i| self.bit(i))
    }

    /// `UInt32::into_bits_be`: the bits, most significant first.
    pub fn bits_be(&self) -> [Bit; 32] {
        std::array::from_fn(|j| self.bit(31 - j))
    }

    /// `UInt32::rotr`.
    #[inline]
    pub fn rotr(&self, by: usize) -> U32 {
        let by = (by % 32) as u32;
        U32 { value: self.value.rotate_right(by), constant: self.constant.rotate_right(by), negated: self.negated.rotate_right(by) }
    }

    /// `UInt32::shr`: the vacated high bits are `Constant(false)`.
    #[inline]
    pub fn shr(&self, by: usize) -> U32 {
        let by = (by % 32) as u32;
        let fill = if by == 0 { 0 } else { u32::MAX << (32 - by) };
        U32 { value: self.value >> by, constant: (self.constant >> by) | fill, negated: self.negated >> by }
    }

    /// `UInt32::xor`: bit by bit `Boolean::xor`, allocating (least significant first) the
    /// bits where neither operand is a constant.
    #[inline]
    pub fn xor(&self, a: &mut Assignment<'_>, other: &U32) -> U32 {
        let (x, y) = (self, other);
        let both_alloc = !(x.constant | y.constant);
        // The allocated bit is the xor of the two underlying allocated bits.
        push_masked(a, x.value ^ y.value ^ x.negated ^ y.negated, both_alloc);
        let constant = x.constant & y.constant;
        // xor with constant `true` negates the other operand.
        let negated = (x.negated ^ y.negated ^ (x.constant & x.value) ^ (y.constant & y.value)) & !constant;
        U32 { value: x.value ^ y.value, constant, negated }
    }

    /// `UInt32::sha256_ch`: bit by bit `Boolean::sha256_ch`.
    pub fn sha256_ch(a: &mut Assignment<'_>, x: &U32, y: &U32, z: &U32) -> U32 {
        let value = (x.value & y.value) ^ (!x.value & z.value);
        if (x.constant | y.constant | z.constant) == 0 {
            push_masked(a, value, u32::MAX);
            return U32 { value, constant: 0, negated: 0 };
        }
        let bits: [Bit; 32] = std::array::from_fn(|i| Bit::sha256_ch(a, x.bit(i), y.bit(i), z.bit(i)));
        U32::from_bits(&bits)
    }

    /// `UInt32::sha256_maj`: bit by bit `Boolean::sha256_maj` (two allocations per bit when no
    /// operand bit is a constant: the result, then `y and z`).
    pub fn sha256_maj(a: &mut Assignment<'_>, x: &U32, y: &U32, z: &U32) -> U32 {
        let value = (x.value & y.value) ^ (x.value & z.value) ^ (y.value & z.value);
        if (x.constant | y.constant | z.constant) == 0 {
            let yz = y.value & z.value;
            for i in 0..32 {
                a.bit((value >> i) & 1 == 1);
                a.bit((yz >> i) & 1 == 1);
            }
            return U32 { value, constant: 0, negated: 0 };
        }
        let bits: [Bit; 32] = std::array::from_fn(|i| Bit::sha256_maj(a, x.bit(i), y.bit(i), z.bit(i)));
        U32::from_bits(&bits)
    }

    /// `UInt32::addmany` (2 to 10 operands): a constant if every operand bit is a constant;
    /// else allocates the bits of the full (unreduced) sum, least significant first, as many
    /// as `operands.len() * (2^32 - 1)` has (33 for 2 operands, 34 for 3-4, 35 for 5-8, 36 for
    /// 9-10), and returns the low 32 as `Is`.
    pub fn addmany(a: &mut Assignment<'_>, operands: &[U32]) -> U32 {
        let mut sum = Sum::default();
        for op in operands {
            sum.add(op);
        }
        sum.finish(a)
    }
}

/// The operands of a `UInt32::addmany` as far as it depends on them: their sum, how many, and
/// whether all are constants.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sum {
    total: u64,
    count: u64,
    all_constant: bool,
}

impl Default for Sum {
    fn default() -> Self {
        Sum { total: 0, count: 0, all_constant: true }
    }
}

impl Sum {
    /// Adds an operand.
    #[inline]
    pub(crate) fn add(&mut self, op: &U32) {
        self.total += u64::from(op.value);
        self.count += 1;
        self.all_constant &= op.is_constant();
    }

    /// The `addmany` of the operands added.
    #[inline]
    pub(crate) fn finish(self, a: &mut Assignment<'_>) -> U32 {
        assert!((2..=10).contains(&self.count), "addmany takes 2 to 10 operands");
        let value = self.total as u32;
        if self.all_constant {
            return U32::constant(value);
        }
        let max_value = self.count * u64::from(u32::MAX);
        let nbits = 64 - max_value.leading_zeros();
        for i in 0..nbits {
            a.bit((self.total >> i) & 1 == 1);
        }
        U32 { value, constant: 0, negated: 0 }
    }
}

/// storage-proofs-core's `UInt64`: 64 bits, least significant first, either all allocated
/// (`alloc`) or all constants (`constant`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct U64 {
    value: u64,
    constant: bool,
}

impl U64 {
    /// `UInt64::constant`: allocates nothing.
    pub fn constant(value: u64) -> U64 {
        U64 { value, constant: true }
    }

    /// `UInt64::alloc`: allocates the 64 bits, least significant first.
    pub fn alloc(a: &mut Assignment<'_>, value: u64) -> U64 {
        for i in 0..64 {
            a.bit((value >> i) & 1 == 1);
        }
        U64 { value, constant: false }
    }

    /// The value.
    pub fn value(&self) -> u64 {
        self.value
    }

    /// `UInt64::to_bits_le`: least significant first.
    pub fn to_bits_le(&self) -> [Bit; 64] {
        std::array::from_fn(|i| {
            let v = (self.value >> i) & 1 == 1;
            if self.constant {
                Bit::Constant(v)
            } else {
                Bit::Is(v)
            }
        })
    }

    /// `UInt64::to_bits_be`: most significant first.
    pub fn to_bits_be(&self) -> [Bit; 64] {
        let mut bits = self.to_bits_le();
        bits.reverse();
        bits
    }

    /// `UInt64::pack_into_input` (`multipack::pack_into_inputs` of its 64 bits): allocates
    /// one input, the value, and no aux.
    pub fn pack_into_input(&self, a: &mut Assignment<'_>) {
        pack_into_inputs(a, &self.to_bits_le());
    }
}
