//! Bits as bellpepper's `Boolean` sees them: a constant, or an allocated bit used as it is or
//! negated. Whether a bit is constant, and whether it is negated, decides what the gadgets
//! allocate, so the writers track both along with the value.

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
    pub fn not(self) -> Bit {
        match self {
            Bit::Constant(b) => Bit::Constant(!b),
            Bit::Is(b) => Bit::Not(b),
            Bit::Not(b) => Bit::Is(b),
        }
    }
}
