//! The evaluation domain of a circuit: size, roots of unity and the coset every backend uses.

use blstrs::Scalar;
use ff::{Field, PrimeField};

/// Largest supported domain: 2^[`MAX_LOG_N`] (the two-adicity of the BLS12-381 scalar field).
pub const MAX_LOG_N: u32 = Scalar::S;

/// A radix-2 domain of size `n = 2^log_n` with the constants the NTT and the quotient need.
///
/// Conventions match bellperson's `EvaluationDomain`, so every backend produces the same `h`:
/// `omega = ROOT_OF_UNITY^(2^(S - log_n))`, the coset is `g·<omega>` with
/// `g = MULTIPLICATIVE_GENERATOR` (7), and on that coset `Z(x) = x^n - 1 = g^n - 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Domain {
    /// log2 of the size.
    pub log_n: u32,
    /// Primitive `n`-th root of unity.
    pub omega: Scalar,
    /// Its inverse.
    pub omega_inv: Scalar,
    /// `1/n`.
    pub n_inv: Scalar,
    /// Coset shift `g`.
    pub coset: Scalar,
    /// `1/g`.
    pub coset_inv: Scalar,
    /// `1/(g^n - 1)`: dividing by the vanishing polynomial on the coset.
    pub z_inv_on_coset: Scalar,
}

/// The domain would exceed the field's two-adicity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a domain of 2^{log_n} exceeds the largest supported size 2^{MAX_LOG_N}")]
pub struct DomainTooLarge {
    /// The requested log2 size.
    pub log_n: u32,
}

impl Domain {
    /// The domain of size `2^log_n`.
    pub fn new(log_n: u32) -> Result<Self, DomainTooLarge> {
        if log_n > MAX_LOG_N {
            return Err(DomainTooLarge { log_n });
        }
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in log_n..MAX_LOG_N {
            omega = omega.square();
        }
        let n = Scalar::from(1u64 << log_n);
        let coset = Scalar::MULTIPLICATIVE_GENERATOR;
        let z = coset.pow_vartime([1u64 << log_n]) - Scalar::ONE;
        Ok(Domain {
            log_n,
            omega,
            omega_inv: omega.invert().unwrap(),
            n_inv: n.invert().unwrap(),
            coset,
            coset_inv: coset.invert().unwrap(),
            z_inv_on_coset: z.invert().unwrap(),
        })
    }

    /// The smallest domain holding `len` evaluations (at least 1), as bellperson picks it.
    pub fn for_len(len: usize) -> Result<Self, DomainTooLarge> {
        let log_n = len.max(1).next_power_of_two().trailing_zeros();
        Self::new(log_n)
    }

    /// Size `n`.
    pub fn size(&self) -> usize {
        1usize << self.log_n
    }
}

/// Fills `out[i]` with `root^(first + i)`: one exponentiation, then one product per element.
/// The backends split a table into chunks and fill them in parallel.
pub fn fill_powers(root: Scalar, first: u64, out: &mut [Scalar]) {
    let mut w = root.pow_vartime([first]);
    for x in out {
        *x = w;
        w *= root;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_match_repeated_multiplication() {
        let root = Domain::new(10).unwrap().omega;
        let mut naive = vec![Scalar::ONE];
        for i in 1..3000 {
            naive.push(naive[i - 1] * root);
        }
        for (first, len) in [(0usize, 0usize), (0, 1), (0, 3000), (1, 7), (1023, 1024), (2999, 1)] {
            let mut out = vec![Scalar::ZERO; len];
            fill_powers(root, first as u64, &mut out);
            assert_eq!(out, naive[first..first + len], "first {first}, len {len}");
        }
        let mut wrap = [Scalar::ZERO; 2];
        fill_powers(root, 1024 + 5, &mut wrap);
        assert_eq!(wrap, naive[5..7], "root has order 1024");
    }

    #[test]
    fn roots_have_exact_order() {
        for log_n in [0u32, 1, 5, 20, 32] {
            let d = Domain::new(log_n).unwrap();
            assert_eq!(d.omega.pow_vartime([1u64 << log_n]), Scalar::ONE);
            if log_n > 0 {
                assert_ne!(d.omega.pow_vartime([1u64 << (log_n - 1)]), Scalar::ONE);
            }
            assert_eq!(d.omega * d.omega_inv, Scalar::ONE);
        }
        assert!(Domain::new(33).is_err());
        assert_eq!(Domain::for_len(0).unwrap().size(), 1);
        assert_eq!(Domain::for_len(5).unwrap().size(), 8);
        assert_eq!(Domain::for_len(8).unwrap().size(), 8);
    }
}
