//! Timing-only parameters: the exact query lengths of a circuit's parameters, filled with
//! pseudo-random points. Proofs made with them take the time real ones take and prove
//! nothing: no SRS stands behind the points, and the verifying key is the group generators.
//! For benchmarks of circuits whose real parameters are not at hand (a 32 GiB PoRep's are
//! 47 GiB); never write them where real parameters are looked for.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::{Curve, Group};
use rayon::prelude::*;

use cuzk_core::domain::{Domain, DomainTooLarge};
use cuzk_core::matrices::ConstraintMatrices;
use cuzk_core::params::{Parameters, Section, VerifyingKey, G1_UNCOMPRESSED, G2_UNCOMPRESSED};

/// Distinct points per query: longer queries repeat them (an MSM's time does not depend on
/// the points being distinct).
const DISTINCT: usize = 1 << 20;

/// Points made per parallel task.
const CHUNK: usize = 1 << 14;

/// The query lengths of a circuit's parameters, from its recorded matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryLengths {
    /// log2 of the evaluation domain.
    pub log_domain: u32,
    /// `ic`: one point per public input, `ONE` included.
    pub ic: usize,
    /// `h`: domain size less one.
    pub h: usize,
    /// `l`: one per aux variable.
    pub l: usize,
    /// `a`: inputs and the aux variables `A` uses.
    pub a: usize,
    /// `b_g1` and `b_g2`: the inputs and aux variables `B` uses.
    pub b: usize,
}

impl QueryLengths {
    /// The lengths parameters for `m` have (bellperson's filtering of unused variables).
    pub fn of(m: &ConstraintMatrices) -> Result<QueryLengths, DomainTooLarge> {
        let domain = Domain::for_len(m.num_constraints())?;
        let [a_aux, b_input, b_aux] = m.densities();
        Ok(QueryLengths {
            log_domain: domain.size().trailing_zeros(),
            ic: m.num_inputs,
            h: domain.size() - 1,
            l: m.num_aux,
            a: m.num_inputs + a_aux.count(),
            b: b_input.count() + b_aux.count(),
        })
    }

    /// Host bytes of the largest query (what a device load moving one query at a time holds).
    pub fn largest_query_bytes(&self) -> u64 {
        let g1 = [self.h, self.l, self.a, self.b].into_iter().max().unwrap_or(0) as u64 * G1_UNCOMPRESSED as u64;
        g1.max(self.b as u64 * G2_UNCOMPRESSED as u64)
    }

    /// The size of a parameter file with these queries (uncompressed points, as bellperson
    /// writes them), which is what the points take in memory too.
    pub fn file_bytes(&self) -> u64 {
        let g1 = (self.ic + self.h + self.l + self.a + self.b) as u64 * G1_UNCOMPRESSED as u64;
        // alpha, beta, delta in G1; beta, gamma, delta in G2; a length word per query.
        let vk = 3 * G1_UNCOMPRESSED as u64 + 3 * G2_UNCOMPRESSED as u64 + 6 * 4;
        g1 + self.b as u64 * G2_UNCOMPRESSED as u64 + vk
    }
}

/// `len` points: `DISTINCT` of them `p + k·q` for random `p, q`, repeated.
fn points<G>(len: usize, seed: u64) -> Vec<G::AffineRepr>
where
    G: Curve + Group<Scalar = Scalar> + Send + Sync,
    G::AffineRepr: Copy + Send + Sync,
{
    use rand_core::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let (p, q) = (G::random(&mut rng), G::random(&mut rng));
    let distinct = len.min(DISTINCT);
    let mut base = vec![G::identity().to_affine(); distinct];
    base.par_chunks_mut(CHUNK).enumerate().for_each(|(c, out)| {
        let mut acc = p + q * Scalar::from((c * CHUNK) as u64);
        let proj: Vec<G> = (0..out.len())
            .map(|_| {
                acc += q;
                acc
            })
            .collect();
        G::batch_normalize(&proj, out);
    });
    if len == distinct {
        return base;
    }
    // Written in parallel straight into the new vector: tens of GB, so not zeroed first.
    (0..len).into_par_iter().map(|i| base[i % distinct]).collect()
}

/// Timing-only parameters made one query at a time ([`timing_params`] is all of them at once,
/// the same points): a device load holds one query beside its device copy, not the whole set.
#[derive(Debug, Clone, Copy)]
pub struct TimingQueries {
    /// The query lengths.
    pub lengths: QueryLengths,
    seed: u64,
}

impl TimingQueries {
    /// The timing-only queries of the circuit `m` records.
    pub fn of(m: &ConstraintMatrices) -> Result<TimingQueries, DomainTooLarge> {
        let q = QueryLengths::of(m)?;
        Ok(TimingQueries { lengths: q, seed: u64::from(q.log_domain) << 48 ^ q.l as u64 })
    }

    /// The verifying key: the generators, and pseudo-random `ic` points.
    pub fn vk(&self) -> VerifyingKey {
        let g = G1Projective::generator().to_affine();
        let h = G2Projective::generator().to_affine();
        VerifyingKey { alpha_g1: g, beta_g1: g, beta_g2: h, gamma_g2: h, delta_g1: g, delta_g2: h, ic: points::<G1Projective>(self.lengths.ic, self.seed) }
    }

    /// A G1 query (`Section::Ic` is the verifying key's `ic`; `Section::BG2` has no G1 points:
    /// empty).
    pub fn g1(&self, section: Section) -> Vec<G1Affine> {
        let q = &self.lengths;
        let (len, k) = match section {
            Section::Ic => (q.ic, 0),
            Section::H => (q.h, 1),
            Section::L => (q.l, 2),
            Section::A => (q.a, 3),
            Section::BG1 => (q.b, 4),
            Section::BG2 => return Vec::new(),
        };
        points::<G1Projective>(len, self.seed + k)
    }

    /// The `b_g2` query.
    pub fn b_g2(&self) -> Vec<G2Affine> {
        points::<G2Projective>(self.lengths.b, self.seed + 5)
    }

    /// Every query at once.
    pub fn params(&self) -> Parameters {
        Parameters { vk: self.vk(), h: self.g1(Section::H), l: self.g1(Section::L), a: self.g1(Section::A), b_g1: self.g1(Section::BG1), b_g2: self.b_g2() }
    }
}

/// Timing-only parameters for the circuit `m` records: every query as long as the real
/// parameters', pseudo-random points (seeded from the lengths), the generators as the
/// verifying key. See the module's documentation: they are not a real SRS.
pub fn timing_params(m: &ConstraintMatrices) -> Result<Parameters, DomainTooLarge> {
    Ok(TimingQueries::of(m)?.params())
}
