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
    points_with::<G>(len, seed, DISTINCT)
}

/// The first `len.min(distinct)` points of a query: `p + k·q` for random `p, q`.
fn distinct_points<G>(len: usize, seed: u64, distinct: usize) -> Vec<G::AffineRepr>
where
    G: Curve + Group<Scalar = Scalar> + Send + Sync,
    G::AffineRepr: Copy + Send + Sync,
{
    use rand_core::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let (p, q) = (G::random(&mut rng), G::random(&mut rng));
    let distinct = len.min(distinct);
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
    base
}

/// `len` points: `distinct` of them, repeated.
fn points_with<G>(len: usize, seed: u64, distinct: usize) -> Vec<G::AffineRepr>
where
    G: Curve + Group<Scalar = Scalar> + Send + Sync,
    G::AffineRepr: Copy + Send + Sync,
{
    let base = distinct_points::<G>(len, seed, distinct);
    if len == base.len() {
        return base;
    }
    // Written in parallel straight into the new vector: tens of GB, so not zeroed first.
    (0..len).into_par_iter().map(|i| base[i % base.len()]).collect()
}

/// Writes a query as a parameter file holds it (a big-endian `u32` length, then the points
/// uncompressed) without holding it: its distinct points are encoded once and written again
/// until the query is complete, so a 47 GB file is written at disk speed in bounded memory.
fn write_query<G>(w: &mut impl std::io::Write, len: usize, seed: u64, distinct: usize, encode: impl Fn(&G::AffineRepr) -> Vec<u8> + Sync) -> std::io::Result<()>
where
    G: Curve + Group<Scalar = Scalar> + Send + Sync,
    G::AffineRepr: Copy + Send + Sync,
{
    let len32 = u32::try_from(len).map_err(|_| std::io::Error::other(format!("a query of {len} points does not fit the file's u32 length")))?;
    w.write_all(&len32.to_be_bytes())?;
    let base = distinct_points::<G>(len, seed, distinct);
    let bytes: Vec<u8> = base.par_iter().flat_map_iter(&encode).collect();
    let point = bytes.len().checked_div(base.len()).unwrap_or(0);
    let mut left = len;
    while left > 0 {
        let n = left.min(base.len());
        w.write_all(&bytes[..n * point])?;
        left -= n;
    }
    Ok(())
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

    /// Streams the parameter file (bellperson's layout, what [`Parameters::write_to`] writes
    /// for [`Self::params`], byte for byte) into `w`, holding only the distinct points of one
    /// query at a time.
    pub fn write_to(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        self.write_with(w, DISTINCT)
    }

    fn write_with(&self, w: &mut impl std::io::Write, distinct: usize) -> std::io::Result<()> {
        let q = &self.lengths;
        let mut vk = self.vk();
        vk.ic = points_with::<G1Projective>(q.ic, self.seed, distinct);
        w.write_all(&vk.to_bytes())?;
        let g1 = |p: &G1Affine| p.to_uncompressed().to_vec();
        for (len, k) in [(q.h, 1), (q.l, 2), (q.a, 3), (q.b, 4)] {
            write_query::<G1Projective>(w, len, self.seed + k, distinct, g1)?;
        }
        write_query::<G2Projective>(w, q.b, self.seed + 5, distinct, |p: &G2Affine| p.to_uncompressed().to_vec())
    }
}

/// Timing-only parameters for the circuit `m` records: every query as long as the real
/// parameters', pseudo-random points (seeded from the lengths), the generators as the
/// verifying key. See the module's documentation: they are not a real SRS.
pub fn timing_params(m: &ConstraintMatrices) -> Result<Parameters, DomainTooLarge> {
    Ok(TimingQueries::of(m)?.params())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lengths() -> QueryLengths {
        QueryLengths { log_domain: 4, ic: 3, h: 15, l: 13, a: 7, b: 11 }
    }

    /// The streamed file is the in-memory parameters' encoding, also where queries repeat
    /// their distinct points (the real files repeat past 2^20 points).
    #[test]
    fn the_streamed_file_is_the_parameters_encoding() {
        let t = TimingQueries { lengths: lengths(), seed: 9 };
        for distinct in [1, 4, 5, 16] {
            let mut streamed = Vec::new();
            t.write_with(&mut streamed, distinct).unwrap();
            let q = &t.lengths;
            let mut vk = t.vk();
            vk.ic = points_with::<G1Projective>(q.ic, t.seed, distinct);
            let g1 = |len, k| points_with::<G1Projective>(len, t.seed + k, distinct);
            let p =
                Parameters { vk, h: g1(q.h, 1), l: g1(q.l, 2), a: g1(q.a, 3), b_g1: g1(q.b, 4), b_g2: points_with::<G2Projective>(q.b, t.seed + 5, distinct) };
            assert_eq!(streamed, p.to_bytes(), "distinct {distinct}");
            assert_eq!(streamed.len() as u64, q.file_bytes(), "distinct {distinct}");
            let back = Parameters::from_bytes(&streamed, cuzk_core::params::Validation::Full).unwrap();
            assert_eq!(back.l[q.l - 1], back.l[(q.l - 1) % distinct.min(q.l)], "distinct {distinct}: repeats");
        }
        let mut full = Vec::new();
        t.write_to(&mut full).unwrap();
        assert_eq!(full, t.params().to_bytes());
    }
}
