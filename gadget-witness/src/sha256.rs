//! `bellpepper::gadgets::sha256`, values only.
//!
//! All allocations are aux bits. A 512-bit block whose input bits and current hash words are
//! all allocated costs 26,166: the message schedule 48 * 149 (two xors of 32 bits and one with
//! a `shr` word, whose constant high bits allocate nothing: 29 or 22; then a 4-operand
//! `addmany`, 34), the rounds 64 * 224 (four xors of 32, `ch` 32, `maj` 64) plus 63 * 70 (the
//! deferred `addmany`s of `e` and `a`, 6 and 7 operands, 35 bits each), and the final
//! additions 268 (`h0`, `h4`: 35; the others: 33). The first block of [`sha256`], from the
//! constant IV, costs 352 less (rounds 0 to 2 see constant words).

use crate::bits::Bit;
use crate::uint32::{Sum, U32};
use crate::Assignment;

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74,
    0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d,
    0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e,
    0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5,
    0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

const IV: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// SHA-256's initial hash value, as constant words.
pub fn sha256_iv() -> [U32; 8] {
    IV.map(U32::constant)
}

/// A working variable the gadget either holds or defers as the operands of an `addmany`.
#[derive(Clone, Copy)]
enum Maybe {
    Concrete(U32),
    Deferred(Sum),
}

impl Maybe {
    /// The gadget's `Maybe::compute`: a concrete word ignores `others`.
    #[inline]
    fn compute(self, a: &mut Assignment<'_>, others: &[U32]) -> U32 {
        match self {
            Maybe::Concrete(w) => w,
            Maybe::Deferred(mut sum) => {
                for o in others {
                    sum.add(o);
                }
                sum.finish(a)
            }
        }
    }
}

/// `sha256::sha256_compression_function`: one 512-bit block (most significant bit of each word
/// first) compressed into `current` (8 words).
pub fn sha256_compression_function(a: &mut Assignment<'_>, input: &[Bit], current: &[U32]) -> [U32; 8] {
    assert_eq!(input.len(), 512);
    assert_eq!(current.len(), 8);
    let mut w = [U32::constant(0); 64];
    for (wi, chunk) in w.iter_mut().zip(input.chunks(32)) {
        *wi = U32::from_bits_be(chunk);
    }
    for i in 16..64 {
        let s0 = w[i - 15].rotr(7).xor(a, &w[i - 15].rotr(18)).xor(a, &w[i - 15].shr(3));
        let s1 = w[i - 2].rotr(17).xor(a, &w[i - 2].rotr(19)).xor(a, &w[i - 2].shr(10));
        w[i] = U32::addmany(a, &[w[i - 16], s0, w[i - 7], s1]);
    }

    let mut wa = Maybe::Concrete(current[0]);
    let mut b = current[1];
    let mut c = current[2];
    let mut d = current[3];
    let mut we = Maybe::Concrete(current[4]);
    let mut f = current[5];
    let mut g = current[6];
    let mut h = current[7];

    for i in 0..64 {
        let new_e = we.compute(a, &[]);
        let s1 = new_e.rotr(6).xor(a, &new_e.rotr(11)).xor(a, &new_e.rotr(25));
        let ch = U32::sha256_ch(a, &new_e, &f, &g);
        let mut temp1 = Sum::default();
        for op in [h, s1, ch, U32::constant(ROUND_CONSTANTS[i]), w[i]] {
            temp1.add(&op);
        }

        let new_a = wa.compute(a, &[]);
        let s0 = new_a.rotr(2).xor(a, &new_a.rotr(13)).xor(a, &new_a.rotr(22));
        let maj = U32::sha256_maj(a, &new_a, &b, &c);

        h = g;
        g = f;
        f = new_e;
        let mut e_sum = temp1;
        e_sum.add(&d);
        we = Maybe::Deferred(e_sum);
        d = c;
        c = b;
        b = new_a;
        let mut a_sum = temp1;
        a_sum.add(&s0);
        a_sum.add(&maj);
        wa = Maybe::Deferred(a_sum);
    }

    let h0 = wa.compute(a, &[current[0]]);
    let h1 = U32::addmany(a, &[current[1], b]);
    let h2 = U32::addmany(a, &[current[2], c]);
    let h3 = U32::addmany(a, &[current[3], d]);
    let h4 = we.compute(a, &[current[4]]);
    let h5 = U32::addmany(a, &[current[5], f]);
    let h6 = U32::addmany(a, &[current[6], g]);
    let h7 = U32::addmany(a, &[current[7], h]);
    [h0, h1, h2, h3, h4, h5, h6, h7]
}

/// `sha256::sha256_block_no_padding`: one 512-bit block from the IV, no padding; the 256
/// result bits, most significant first within each word.
pub fn sha256_block_no_padding(a: &mut Assignment<'_>, input: &[Bit]) -> Vec<Bit> {
    words_to_bits_be(&sha256_compression_function(a, input, &sha256_iv()))
}

/// The words' bits as the gadget returns them: each word's `into_bits_be`, in order.
pub fn words_to_bits_be(words: &[U32]) -> Vec<Bit> {
    words.iter().flat_map(|w| w.bits_be()).collect()
}

/// `sha256::sha256`: the SHA-256 of `input` (a whole number of bytes, most significant bit of
/// each byte first), padded with constant bits; returns the 256 result bits as the gadget does
/// (most significant first; each `Is`, `Not` or `Constant` as the gadget has it).
pub fn sha256(a: &mut Assignment<'_>, input: &[Bit]) -> Vec<Bit> {
    assert!(input.len().is_multiple_of(8));
    let len = input.len();
    let plen = len as u64;
    let total = (len + 1 + 64).div_ceil(512) * 512;
    let padded = |j: usize| -> Bit {
        if j < len {
            input[j]
        } else if j == len {
            Bit::Constant(true)
        } else if j >= total - 64 {
            Bit::Constant((plen >> (63 - (j - (total - 64)))) & 1 == 1)
        } else {
            Bit::Constant(false)
        }
    };
    let mut cur = sha256_iv();
    let mut block = [Bit::Constant(false); 512];
    for start in (0..total).step_by(512) {
        for (k, slot) in block.iter_mut().enumerate() {
            *slot = padded(start + k);
        }
        cur = sha256_compression_function(a, &block, &cur);
    }
    words_to_bits_be(&cur)
}
