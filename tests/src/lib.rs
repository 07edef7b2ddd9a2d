//! Shared helpers for cuzk's tests, and the backend conformance suite: generic functions that
//! run any [`Backend`] against the CPU oracle, naive references and the external vectors.
//! GPU backends call the same functions from their own tests.

#![warn(missing_docs)]

use std::path::PathBuf;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_backend_cpu::{ntt::naive_dft, CpuBackend};
use cuzk_core::alloc::PinnedVec;
use cuzk_core::backend::{Backend, MsmScalars, NttDirection};
use cuzk_core::compiled::CompiledSynthesis;
use cuzk_core::density::DensityBitmap;
use cuzk_core::domain::Domain;
use cuzk_core::matrices::{Column, ConstraintMatrices};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// EIP-2537's MSM vectors (CC0), kept in the repository (`tests/data/eip2537`, source and
/// commit in `tests/data/README.md`) and built into the test binaries, so that a plain clone
/// runs them wherever its binaries run.
pub mod eip2537 {
    /// `msm_G1_bls.json`: 163 G1 MSMs of 1 to 149 pairs.
    pub const MSM_G1: &str = include_str!("../data/eip2537/msm_G1_bls.json");
    /// `mul_G1_bls.json`: 11 G1 scalar multiplications (MSMs of one pair).
    pub const MUL_G1: &str = include_str!("../data/eip2537/mul_G1_bls.json");
    /// `mul_G2_bls.json`: 11 G2 scalar multiplications (MSMs of one pair).
    pub const MUL_G2: &str = include_str!("../data/eip2537/mul_G2_bls.json");
}

/// The folder of the optional vectors whose licence keeps them out of the repository
/// (go-ethereum's BLS precompile files, LGPL): `CUZK_VECTORS`, else `../shared/vectors` beside
/// the repository when it holds them. `Err` says why they are absent.
pub fn optional_vectors_dir() -> Result<PathBuf, String> {
    let (dir, from) = match std::env::var("CUZK_VECTORS") {
        Ok(p) => (PathBuf::from(p), "CUZK_VECTORS"),
        Err(_) => (PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/vectors"), "the default place beside the repository"),
    };
    if dir.join(GETH_DIR).is_dir() {
        Ok(dir)
    } else {
        Err(format!("no {GETH_DIR}/ in {} ({from}; set CUZK_VECTORS to a folder holding go-ethereum's precompile vectors)", dir.display()))
    }
}

const GETH_DIR: &str = "geth-bls-precompiles";

/// A benchmark flag's on/off value (`on`, `1`, `true` / `off`, `0`, `false`).
pub fn on_off(name: &str, v: &str) -> Result<bool, String> {
    match v {
        "on" | "1" | "true" => Ok(true),
        "off" | "0" | "false" => Ok(false),
        _ => Err(format!("{name} takes on or off, not {v:?}")),
    }
}

/// Random scalars with a share of zeros and ones, as real circuits have.
pub fn random_scalars(n: usize, rng: &mut ChaCha8Rng) -> Vec<Scalar> {
    (0..n)
        .map(|_| match rng.gen_range(0..8) {
            0 => Scalar::ZERO,
            1 => Scalar::ONE,
            _ => Scalar::random(&mut *rng),
        })
        .collect()
}

fn upload<B: Backend>(b: &B, v: &[Scalar]) -> B::Scalars {
    b.upload_scalars(PinnedVec::from_slice_in(v, b.host_allocator()).expect("host memory")).expect("upload")
}

/// NTT (plain and coset, both directions) equals the CPU oracle for every size in `logs`,
/// equals a naive DFT up to 2^8, and round-trips.
pub fn check_ntt<B: Backend>(backend: &B, logs: impl IntoIterator<Item = u32>, seed: u64) {
    let oracle = CpuBackend::new();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for log_n in logs {
        let domain = Domain::new(log_n).unwrap();
        let n = domain.size();
        let input: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        for coset in [false, true] {
            let mut expect = input.clone();
            oracle.ntt_slice(&mut expect, &domain, NttDirection::Forward, coset).unwrap();
            if log_n <= 8 {
                let shifted: Vec<Scalar> =
                    if coset { input.iter().enumerate().map(|(i, x)| *x * domain.coset.pow_vartime([i as u64])).collect() } else { input.clone() };
                assert_eq!(expect, naive_dft(&shifted, domain.omega), "oracle vs naive DFT, 2^{log_n} coset={coset}");
            }
            let mut buf = upload(backend, &input);
            backend.ntt(&mut buf, &domain, NttDirection::Forward, coset).unwrap();
            let got = backend.download_scalars(&buf).unwrap();
            assert!(got == expect, "{}: forward NTT 2^{log_n} coset={coset} differs from the oracle", backend.name());
            backend.ntt(&mut buf, &domain, NttDirection::Inverse, coset).unwrap();
            let back = backend.download_scalars(&buf).unwrap();
            assert!(back == input, "{}: inverse NTT 2^{log_n} coset={coset} does not round-trip", backend.name());
        }
    }
}

/// The quotient `(a·b − c)/Z` and the whole `h` pipeline equal the oracle.
pub fn check_compute_h<B: Backend>(backend: &B, logs: impl IntoIterator<Item = u32>, seed: u64) {
    let oracle = CpuBackend::new();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for log_n in logs {
        let domain = Domain::new(log_n).unwrap();
        let n = domain.size();
        let v: Vec<Vec<Scalar>> = (0..3).map(|_| (0..n).map(|_| Scalar::random(&mut rng)).collect()).collect();
        let expect = oracle.compute_h(upload(&oracle, &v[0]), upload(&oracle, &v[1]), upload(&oracle, &v[2]), &domain).unwrap();
        let got = backend.compute_h(upload(backend, &v[0]), upload(backend, &v[1]), upload(backend, &v[2]), &domain).unwrap();
        assert!(backend.download_scalars(&got).unwrap() == expect.to_vec(), "{}: h differs at 2^{log_n}", backend.name());
    }
}

fn naive_g1(bases: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
    bases.iter().zip(scalars).map(|(p, s)| *p * s).sum()
}

/// G1 and G2 MSMs (dense and density-filtered, with offsets) equal the oracle for each size;
/// sizes up to 2^10 are also checked against a naive sum.
pub fn check_msm<B: Backend>(backend: &B, sizes: impl IntoIterator<Item = usize>, with_g2: bool, seed: u64) {
    let oracle = CpuBackend::new();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for n in sizes {
        let scalars = random_scalars(n, &mut rng);
        let bits: Vec<bool> = (0..n).map(|_| rng.gen_bool(0.7)).collect();
        let density = DensityBitmap::from_bools(&bits, cuzk_core::alloc::heap()).unwrap();
        let offset = 3usize;
        let g1: Vec<G1Affine> = random_points::<G1Projective>(n + offset, &mut rng);
        let buf = upload(backend, &scalars);
        let obuf = upload(&oracle, &scalars);
        let bases = backend.load_g1(g1.clone()).unwrap();
        let obases = oracle.load_g1(g1.clone()).unwrap();
        let dense = MsmScalars { buf: &buf, len: n, density: None };
        let got = backend.msm_g1(&bases, offset, dense).unwrap();
        let want = oracle.msm_g1(&obases, offset, MsmScalars { buf: &obuf, len: n, density: None }).unwrap();
        assert_eq!(got, want, "{}: dense G1 MSM of {n} differs", backend.name());
        if n <= 1024 {
            assert_eq!(want, naive_g1(&g1[offset..], &scalars), "oracle G1 MSM of {n} differs from the naive sum");
        }
        let got = backend.msm_g1(&bases, 0, MsmScalars { buf: &buf, len: n, density: Some(&density) }).unwrap();
        let want = oracle.msm_g1(&obases, 0, MsmScalars { buf: &obuf, len: n, density: Some(&density) }).unwrap();
        assert_eq!(got, want, "{}: sparse G1 MSM of {n} differs", backend.name());
        if with_g2 {
            let g2: Vec<G2Affine> = random_points::<G2Projective>(n, &mut rng);
            let b2 = backend.load_g2(g2.clone()).unwrap();
            let o2 = oracle.load_g2(g2).unwrap();
            let got = backend.msm_g2(&b2, 0, MsmScalars { buf: &buf, len: n, density: Some(&density) }).unwrap();
            let want = oracle.msm_g2(&o2, 0, MsmScalars { buf: &obuf, len: n, density: Some(&density) }).unwrap();
            assert_eq!(got, want, "{}: sparse G2 MSM of {n} differs", backend.name());
        }
    }
}

/// A scalar of exactly `bits` bits (1..=255): the top bit set and the bits below it from `low`
/// (all set when `all_ones`); a 255-bit value at or above r becomes r − 1.
pub fn scalar_of_bit_length(bits: u32, low: [u64; 4], all_ones: bool) -> Scalar {
    assert!((1..=255).contains(&bits), "a scalar has 1 to 255 bits");
    let mut limbs = [0u64; 4];
    for (j, l) in limbs.iter_mut().enumerate() {
        let lo = 64 * j as u32;
        if bits > lo {
            let mask = if bits - lo >= 64 { u64::MAX } else { (1u64 << (bits - lo)) - 1 };
            *l = if all_ones { mask } else { low[j] & mask };
        }
    }
    limbs[((bits - 1) / 64) as usize] |= 1u64 << ((bits - 1) % 64);
    let mut repr = [0u8; 32];
    for (j, l) in limbs.iter().enumerate() {
        repr[8 * j..8 * j + 8].copy_from_slice(&l.to_le_bytes());
    }
    Option::from(<Scalar as ff::PrimeField>::from_repr(repr)).unwrap_or(-Scalar::ONE)
}

/// Runs of 32 scalars (a GPU warp each) of one bit length, 0 … 255: each run holds 2^L − 1 (a
/// carry through every window), 2^(L−1) and random L-bit scalars. Then a run of 0s and 1s and
/// one of 0s with a single 1. MSM digit passes that stop at the last window a scalar can reach
/// are checked with these at every window count, the carry into that window included.
pub fn scalars_by_bit_length(rng: &mut impl Rng) -> Vec<Scalar> {
    let mut out: Vec<Scalar> = (0..256u32 * 32)
        .map(|i| match (i / 32, i % 32) {
            (0, _) => Scalar::ZERO,
            (bits, 0) => scalar_of_bit_length(bits, [0; 4], true),
            (bits, 1) => scalar_of_bit_length(bits, [0; 4], false),
            (bits, _) => scalar_of_bit_length(bits, rng.gen(), false),
        })
        .collect();
    out.extend((0..32).map(|i| if i % 3 == 0 { Scalar::ONE } else { Scalar::ZERO }));
    out.extend((0..32).map(|i| Scalar::from(u64::from(i == 17))));
    out
}

/// G1 (and G2) MSMs over [`scalars_by_bit_length`] equal the oracle, whose G1 result equals the
/// naive sum.
pub fn check_msm_bit_lengths<B: Backend>(backend: &B, with_g2: bool, seed: u64) {
    let oracle = CpuBackend::new();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let scalars = scalars_by_bit_length(&mut rng);
    let n = scalars.len();
    let (buf, obuf) = (upload(backend, &scalars), upload(&oracle, &scalars));
    let (sc, osc) = (MsmScalars { buf: &buf, len: n, density: None }, MsmScalars { buf: &obuf, len: n, density: None });
    let g1: Vec<G1Affine> = random_points::<G1Projective>(n, &mut rng);
    let want = oracle.msm_g1(&oracle.load_g1(g1.clone()).unwrap(), 0, osc).unwrap();
    assert_eq!(want, naive_g1(&g1, &scalars), "oracle G1 MSM over every bit length differs from the naive sum");
    let got = backend.msm_g1(&backend.load_g1(g1).unwrap(), 0, sc).unwrap();
    assert_eq!(got, want, "{}: G1 MSM over every bit length differs", backend.name());
    if with_g2 {
        let g2: Vec<G2Affine> = random_points::<G2Projective>(n, &mut rng);
        let want = oracle.msm_g2(&oracle.load_g2(g2.clone()).unwrap(), 0, osc).unwrap();
        let got = backend.msm_g2(&backend.load_g2(g2).unwrap(), 0, sc).unwrap();
        assert_eq!(got, want, "{}: G2 MSM over every bit length differs", backend.name());
    }
}

/// `v` with `pct`% of its entries, at places drawn from `rng`, made 0 or 1 in equal shares, as
/// Filecoin's witnesses are (tests and benchmarks of mostly-bit MSMs).
pub fn with_bits(mut v: Vec<Scalar>, pct: u32, rng: &mut impl Rng) -> Vec<Scalar> {
    for x in v.iter_mut() {
        if rng.gen_range(0..100) < pct {
            *x = Scalar::from(u64::from(rng.gen::<bool>()));
        }
    }
    v
}

/// G1 (and G2) MSMs of `n` scalars of which 98% are bits (0 and 1) and the rest random, and of
/// `n` bits, equal the oracle; the oracle's G1 results equal the naive sum. From 2^16 scalars
/// the GPU backends size their windows from the scalars above 1, so `n` should reach that.
pub fn check_msm_mostly_bits<B: Backend>(backend: &B, n: usize, with_g2: bool, seed: u64) {
    let oracle = CpuBackend::new();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let random: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let mostly = with_bits(random, 98, &mut rng);
    let all = with_bits(vec![Scalar::ZERO; n], 100, &mut rng);
    let g1: Vec<G1Affine> = random_points::<G1Projective>(n, &mut rng);
    let g2: Vec<G2Affine> = if with_g2 { random_points::<G2Projective>(n, &mut rng) } else { Vec::new() };
    let (b1, o1) = (backend.load_g1(g1.clone()).unwrap(), oracle.load_g1(g1.clone()).unwrap());
    let b2o2 = with_g2.then(|| (backend.load_g2(g2.clone()).unwrap(), oracle.load_g2(g2).unwrap()));
    for (what, scalars) in [("98% bits", &mostly), ("all bits", &all)] {
        let (buf, obuf) = (upload(backend, scalars), upload(&oracle, scalars));
        let (sc, osc) = (MsmScalars { buf: &buf, len: n, density: None }, MsmScalars { buf: &obuf, len: n, density: None });
        let want = oracle.msm_g1(&o1, 0, osc).unwrap();
        assert_eq!(want, naive_g1(&g1, scalars), "oracle G1 MSM of {n} scalars, {what}, differs from the naive sum");
        assert_eq!(backend.msm_g1(&b1, 0, sc).unwrap(), want, "{}: G1 MSM of {n} scalars, {what}, differs", backend.name());
        if let Some((b2, o2)) = &b2o2 {
            let want = oracle.msm_g2(o2, 0, osc).unwrap();
            assert_eq!(backend.msm_g2(b2, 0, sc).unwrap(), want, "{}: G2 MSM of {n} scalars, {what}, differs", backend.name());
        }
    }
}

/// `n` distinct pseudo-random points `P + i·Q` (`P, Q` drawn from `rng`), built in parallel
/// chunks: cheap even at 2^24.
pub fn random_points<G>(n: usize, rng: &mut ChaCha8Rng) -> Vec<G::AffineRepr>
where
    G: Curve + Group<Scalar = Scalar> + Send + Sync,
    G::AffineRepr: Copy + Send + Sync,
{
    const CHUNK: usize = 1 << 14;
    let p = G::random(&mut *rng);
    let q = G::random(&mut *rng);
    let mut out = vec![G::identity().to_affine(); n];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(c, o)| {
        let mut acc = p + q * Scalar::from((c * CHUNK) as u64);
        let proj: Vec<G> = (0..o.len())
            .map(|_| {
                acc += q;
                acc
            })
            .collect();
        G::batch_normalize(&proj, o);
    });
    out
}

/// One success case of an EIP-2537 MSM vector file.
#[derive(Debug)]
pub struct MsmCase<P> {
    /// Case name.
    pub name: String,
    /// Bases.
    pub points: Vec<P>,
    /// Scalars reduced mod r (the vectors' scalars may be ≥ r; points are in the
    /// prime-order subgroup, so reduction does not change the result).
    pub scalars: Vec<Scalar>,
    /// The expected result.
    pub expected: P,
}

fn fp_bytes(b: &[u8]) -> [u8; 48] {
    assert!(b[..16].iter().all(|&x| x == 0), "EIP-2537 Fp padding is not zero");
    b[16..64].try_into().unwrap()
}

fn eip_g1(b: &[u8]) -> G1Affine {
    if b.iter().all(|&x| x == 0) {
        return G1Affine::identity();
    }
    let mut raw = [0u8; 96];
    raw[..48].copy_from_slice(&fp_bytes(&b[..64]));
    raw[48..].copy_from_slice(&fp_bytes(&b[64..128]));
    Option::from(G1Affine::from_uncompressed(&raw)).expect("valid G1 point in vector")
}

fn eip_g2(b: &[u8]) -> G2Affine {
    if b.iter().all(|&x| x == 0) {
        return G2Affine::identity();
    }
    // EIP order x.c0 | x.c1 | y.c0 | y.c1; ZCash order is c1 first.
    let mut raw = [0u8; 192];
    raw[..48].copy_from_slice(&fp_bytes(&b[64..128]));
    raw[48..96].copy_from_slice(&fp_bytes(&b[..64]));
    raw[96..144].copy_from_slice(&fp_bytes(&b[192..256]));
    raw[144..].copy_from_slice(&fp_bytes(&b[128..192]));
    Option::from(G2Affine::from_uncompressed(&raw)).expect("valid G2 point in vector")
}

/// A 256-bit big-endian integer reduced mod r.
pub fn scalar_from_be_unreduced(b: &[u8]) -> Scalar {
    let base = Scalar::from(256u64);
    b.iter().fold(Scalar::ZERO, |acc, &x| acc * base + Scalar::from(x as u64))
}

fn parse_cases<P>(text: &str, point_len: usize, decode: fn(&[u8]) -> P) -> Vec<MsmCase<P>> {
    let json: serde_json::Value = serde_json::from_str(text).expect("vector JSON");
    json.as_array()
        .expect("array of cases")
        .iter()
        .map(|case| {
            let input = hex::decode(case["Input"].as_str().unwrap()).unwrap();
            let expected = hex::decode(case["Expected"].as_str().unwrap()).unwrap();
            let pair = point_len + 32;
            assert_eq!(input.len() % pair, 0);
            let (points, scalars) = input.chunks_exact(pair).map(|c| (decode(&c[..point_len]), scalar_from_be_unreduced(&c[point_len..]))).unzip();
            MsmCase { name: case["Name"].as_str().unwrap_or("").to_string(), points, scalars, expected: decode(&expected) }
        })
        .collect()
}

/// MSM success cases of both groups.
#[derive(Debug)]
pub struct MsmCases {
    /// G1 cases.
    pub g1: Vec<MsmCase<G1Affine>>,
    /// G2 cases.
    pub g2: Vec<MsmCase<G2Affine>>,
}

/// EIP-2537's cases, from the repository: every G1 MSM and the G1 and G2 multiplications
/// (EIP-2537's G2 MSM file is larger than its snapshot kept; geth's holds G2 MSMs).
pub fn eip2537_cases() -> MsmCases {
    let mut g1 = parse_cases(eip2537::MSM_G1, 128, eip_g1);
    g1.extend(parse_cases(eip2537::MUL_G1, 128, eip_g1));
    MsmCases { g1, g2: parse_cases(eip2537::MUL_G2, 256, eip_g2) }
}

/// go-ethereum's G1 and G2 MSM cases (`blsG1MultiExp.json`, `blsG2MultiExp.json`) from
/// [`optional_vectors_dir`]; `Err` says why they are absent.
pub fn geth_cases() -> Result<MsmCases, String> {
    let dir = optional_vectors_dir()?.join(GETH_DIR);
    let read = |f: &str| {
        let path = dir.join(f);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    Ok(MsmCases { g1: parse_cases(&read("blsG1MultiExp.json"), 128, eip_g1), g2: parse_cases(&read("blsG2MultiExp.json"), 256, eip_g2) })
}

/// Runs every case of `cases` through `backend` (G2 only `with_g2`); returns how many ran.
pub fn check_msm_cases<B: Backend>(backend: &B, cases: &MsmCases, with_g2: bool) -> usize {
    let mut count = 0;
    for case in &cases.g1 {
        let bases = backend.load_g1(case.points.clone()).unwrap();
        let buf = upload(backend, &case.scalars);
        let got = backend.msm_g1(&bases, 0, MsmScalars { buf: &buf, len: case.scalars.len(), density: None }).unwrap();
        assert_eq!(got.to_affine(), case.expected, "{}: G1 case {}", backend.name(), case.name);
        count += 1;
    }
    if with_g2 {
        for case in &cases.g2 {
            let bases = backend.load_g2(case.points.clone()).unwrap();
            let buf = upload(backend, &case.scalars);
            let got = backend.msm_g2(&bases, 0, MsmScalars { buf: &buf, len: case.scalars.len(), density: None }).unwrap();
            assert_eq!(got.to_affine(), case.expected, "{}: G2 case {}", backend.name(), case.name);
            count += 1;
        }
    }
    count
}

/// Runs EIP-2537's cases, and go-ethereum's when present (else prints `SKIPPED` and why),
/// through `backend`; returns how many ran.
pub fn check_eip2537<B: Backend>(backend: &B, with_g2: bool) -> usize {
    let mut count = check_msm_cases(backend, &eip2537_cases(), with_g2);
    match geth_cases() {
        Ok(geth) => count += check_msm_cases(backend, &geth, with_g2),
        Err(why) => skipped(&format!("go-ethereum's MSM vectors: {why}")),
    }
    count
}

/// Prints `SKIPPED: <what>` where the test harness does not capture it (on stderr directly),
/// so that a run shows what it left out.
pub fn skipped(what: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {what}");
}

/// A coefficient as real circuits have them: zero, ±1, small (±2..±16), or random.
fn coefficient(rng: &mut ChaCha8Rng) -> Scalar {
    match rng.gen_range(0..10) {
        0 => Scalar::ZERO,
        1 | 2 => Scalar::ONE,
        3 => -Scalar::ONE,
        4 | 5 => Scalar::from(rng.gen_range(2u64..17)),
        6 => -Scalar::from(rng.gen_range(2u64..17)),
        _ => Scalar::random(&mut *rng),
    }
}

/// Random matrices of `rows` rows over `inputs` inputs and `aux` aux variables: empty rows,
/// long rows (a few of hundreds of entries), duplicate columns, and every kind of [`coefficient`].
pub fn random_matrices(rows: usize, inputs: usize, aux: usize, rng: &mut ChaCha8Rng) -> ConstraintMatrices {
    let mut matrix = || -> Vec<Vec<(Column, Scalar)>> {
        (0..rows)
            .map(|_| {
                let len = match rng.gen_range(0..200) {
                    0..20 => 0,
                    20..40 => rng.gen_range(8..40),
                    // Rows past the CUDA backend's long-row limit (64), as SHA-256's additions.
                    40 => rng.gen_range(65..600),
                    _ => rng.gen_range(1..5),
                };
                let mut row: Vec<(Column, Scalar)> = Vec::with_capacity(len);
                for _ in 0..len {
                    let col = if let (true, Some(&(c, _))) = (rng.gen_range(0..6) == 0, row.last()) {
                        c // a duplicate column
                    } else if aux == 0 || rng.gen_range(0..4) == 0 {
                        Column::Input(rng.gen_range(0..inputs))
                    } else {
                        Column::Aux(rng.gen_range(0..aux))
                    };
                    row.push((col, coefficient(rng)));
                }
                row
            })
            .collect()
    };
    let (a, b, c) = (matrix(), matrix(), matrix());
    ConstraintMatrices::from_rows(inputs, aux, &a, &b, &c).expect("valid rows")
}

/// `Σ coefficient · w[column]` per row, the naive way (an independent reference).
fn naive_rows(rows: &[Vec<(Column, Scalar)>], input: &[Scalar], aux: &[Scalar]) -> Vec<Scalar> {
    rows.iter()
        .map(|row| {
            row.iter().fold(Scalar::ZERO, |acc, &(col, k)| {
                acc + k * match col {
                    Column::Input(i) => input[i],
                    Column::Aux(i) => aux[i],
                }
            })
        })
        .collect()
}

/// Rebuilds the rows of `A, B, C` from their compressed form (checks the view, too).
fn rows_of(m: &ConstraintMatrices) -> [Vec<Vec<(Column, Scalar)>>; 3] {
    let table = m.coefficients();
    m.views().map(|v| {
        (0..v.row_start.len().saturating_sub(1))
            .map(|r| {
                (v.row_start[r] as usize..v.row_start[r + 1] as usize)
                    .map(|e| {
                        let col = v.cols[e];
                        let col = if col & cuzk_core::matrices::AUX != 0 {
                            Column::Aux((col & !cuzk_core::matrices::AUX) as usize)
                        } else {
                            Column::Input(col as usize)
                        };
                        (col, table[v.coeffs[e] as usize])
                    })
                    .collect()
            })
            .collect()
    })
}

/// `evaluate_constraints` of `backend` on `m` at a random witness equals the naive products,
/// zero-padded to `domain` (and to a domain twice as large).
pub fn check_evaluation_of<B: Backend>(backend: &B, m: &std::sync::Arc<ConstraintMatrices>, rng: &mut ChaCha8Rng) {
    let mut input = random_scalars(m.num_inputs, rng);
    if let Some(one) = input.first_mut() {
        *one = Scalar::ONE;
    }
    let aux = random_scalars(m.num_aux, rng);
    let want = rows_of(m).map(|rows| naive_rows(&rows, &input, &aux));
    let resident = backend.load_matrices(m).expect("load matrices");
    let (input_buf, aux_buf) = (upload(backend, &input), upload(backend, &aux));
    let rows = m.num_constraints();
    let smallest = Domain::for_len(rows).expect("domain");
    for domain in [smallest, Domain::new(smallest.log_n + 1).expect("domain")] {
        let got = backend.evaluate_constraints(&resident, &input_buf, &aux_buf, &domain).expect("evaluate");
        for (which, (got, want)) in ["a", "b", "c"].iter().zip(got.iter().zip(&want)) {
            let got = backend.download_scalars(got).expect("download");
            assert_eq!(got.len(), domain.size(), "{which}: not padded to the domain");
            if let Some(r) = (0..rows).find(|&r| got[r] != want[r]) {
                panic!("{}: {which}[{r}] differs from the naive product ({rows} rows, {} inputs, {} aux)", backend.name(), m.num_inputs, m.num_aux);
            }
            assert!(got[rows..].iter().all(|x| x.is_zero_vartime()), "{which}: padding is not zero");
        }
    }
}

/// Constraint evaluation on random matrices of each size in `rows` (plus a matrix of empty rows
/// and one without constraints) against the naive products.
pub fn check_constraint_evaluation<B: Backend>(backend: &B, rows: impl IntoIterator<Item = usize>, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for n in rows {
        let inputs = 1 + n % 5;
        let aux = n / 2 + 1;
        let m = std::sync::Arc::new(random_matrices(n, inputs, aux, &mut rng));
        check_evaluation_of(backend, &m, &mut rng);
    }
    let empty_rows = vec![Vec::new(); 9];
    let m = ConstraintMatrices::from_rows(2, 3, &empty_rows, &empty_rows, &empty_rows).unwrap();
    check_evaluation_of(backend, &std::sync::Arc::new(m), &mut rng);
    let none: Vec<Vec<(Column, Scalar)>> = Vec::new();
    let m = ConstraintMatrices::from_rows(1, 0, &none, &none, &none).unwrap();
    check_evaluation_of(backend, &std::sync::Arc::new(m), &mut rng);
}

/// The host oracle of [`Backend::first_unsatisfied`]: the first of `rows` rows with
/// `a·b ≠ c`, written out independently of the backends.
pub fn naive_first_unsatisfied(a: &[Scalar], b: &[Scalar], c: &[Scalar], rows: usize) -> Option<usize> {
    (0..rows).find(|&r| a[r] * b[r] != c[r])
}

/// `first_unsatisfied` of `backend` on `a, b, c` over `rows` rows equals the host oracle.
fn check_first_unsatisfied_of<B: Backend>(backend: &B, a: &[Scalar], b: &[Scalar], c: &[Scalar], rows: usize, what: &str) {
    let got = backend.first_unsatisfied(&upload(backend, a), &upload(backend, b), &upload(backend, c), rows).expect("satisfaction check");
    assert_eq!(got, naive_first_unsatisfied(a, b, c, rows), "{}: {what} ({rows} of {} rows)", backend.name(), a.len());
}

/// The satisfaction check on random `a, b, c = a·b` of each length in `lens` (satisfied), then
/// with violations (one row: first, middle, last; several rows, the lowest in a later chunk
/// than others; only in the padding beyond `rows`, which must not count), against the host
/// oracle; and `rows` beyond a buffer is refused.
pub fn check_satisfaction<B: Backend>(backend: &B, lens: impl IntoIterator<Item = usize>, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for n in lens {
        let a = random_scalars(n, &mut rng);
        let b = random_scalars(n, &mut rng);
        let c: Vec<Scalar> = a.iter().zip(&b).map(|(a, b)| a * b).collect();
        check_first_unsatisfied_of(backend, &a, &b, &c, n, "satisfied");
        check_first_unsatisfied_of(backend, &a, &b, &c, 0, "no rows");
        if n == 0 {
            continue;
        }
        let spoil = |rows: &[usize]| {
            let mut c = c.clone();
            for &r in rows {
                c[r] += Scalar::ONE;
            }
            c
        };
        for r in [0, n / 2, n - 1, rng.gen_range(0..n)] {
            check_first_unsatisfied_of(backend, &a, &b, &spoil(&[r]), n, &format!("row {r} violated"));
        }
        let many: Vec<usize> = (0..1 + n / 1000).map(|_| rng.gen_range(0..n)).collect();
        check_first_unsatisfied_of(backend, &a, &b, &spoil(&many), n, "several rows violated");
        // A violation only past the rows checked (the domain's padding) is not one.
        let rows = n - 1;
        check_first_unsatisfied_of(backend, &a, &b, &spoil(&[n - 1]), rows, "violation past the rows");
        // A zero product against a non-zero c, and a non-zero product against zero.
        let mut c0 = c.clone();
        c0[n - 1] = Scalar::ZERO;
        let nonzero = a[n - 1] * b[n - 1] != Scalar::ZERO;
        check_first_unsatisfied_of(backend, &a, &b, &c0, n, if nonzero { "non-zero product, zero c" } else { "zero row" });
        let (ua, ub, uc) = (upload(backend, &a), upload(backend, &b), upload(backend, &c));
        assert!(backend.first_unsatisfied(&ua, &ub, &uc, n + 1).is_err(), "{}: {} rows of buffers of {n} accepted", backend.name(), n + 1);
    }
}

/// Constraint evaluation on the recorded matrices of `circuit` equals what full synthesis
/// records as `a, b, c`, zero-padded to the domain. The circuit is recorded and synthesized
/// through its [`CompiledSynthesis`] methods, compiled in its own crate.
pub fn check_circuit_matrices<B: Backend, C: CompiledSynthesis>(backend: &B, name: &str, circuit: &C) {
    let m = std::sync::Arc::new(circuit.record().expect("record"));
    let full = circuit.synthesize_in_full(cuzk_core::alloc::heap(), cuzk_core::synth::SizeHint::default()).expect("synthesize");
    let w = circuit.witness_through(&m, cuzk_core::alloc::heap()).expect("witness");
    let resident = backend.load_matrices(&m).expect("load matrices");
    let domain = Domain::for_len(m.num_constraints()).expect("domain");
    let got = backend.evaluate_constraints(&resident, &upload(backend, &w.input), &upload(backend, &w.aux), &domain).expect("evaluate");
    for (which, (got, want)) in ["a", "b", "c"].iter().zip(got.iter().zip([&full.a, &full.b, &full.c])) {
        let got = backend.download_scalars(got).expect("download");
        assert!(got[..want.len()] == want[..], "{} {name}: {which} differs from full synthesis", backend.name());
        assert!(got[want.len()..].iter().all(|x| x.is_zero_vartime()), "{name}: {which}: padding is not zero");
    }
    let rows = m.num_constraints();
    let check = |[a, b, c]: &[B::Scalars; 3]| backend.first_unsatisfied(a, b, c, rows).expect("satisfaction check");
    assert_eq!(check(&got), None, "{} {name}: the circuit's own witness is not satisfied", backend.name());
    // A corrupted witness: the device check names the row the host check of full products does.
    let mut aux = w.aux.to_vec();
    let third = aux.len() / 3;
    if let Some(v) = aux.get_mut(third) {
        *v += Scalar::ONE;
        let bad = backend.evaluate_constraints(&resident, &upload(backend, &w.input), &upload(backend, &aux), &domain).expect("evaluate");
        let zeros = || vec![Scalar::ZERO; rows];
        let (mut a, mut b, mut c) = (zeros(), zeros(), zeros());
        m.evaluate_rows(0..rows, &w.input, &aux, &mut a, &mut b, &mut c);
        let want = naive_first_unsatisfied(&a, &b, &c, rows);
        assert!(want.is_some(), "{name}: the corrupted witness still satisfies every constraint");
        assert_eq!(check(&bad), want, "{} {name}: corrupted witness", backend.name());
    }
}

/// [`check_circuit_matrices`] on the built-in circuits, each kind at each log size.
pub fn check_builtin_matrices<B: Backend>(backend: &B, logs: impl IntoIterator<Item = u32> + Clone, seed: u64) {
    for kind in cuzk_circuits::CircuitKind::ALL {
        for k in logs.clone() {
            if k >= kind.min_log_size() {
                check_circuit_matrices(backend, &format!("{}-2^{k}", kind.name()), &kind.instance(k, seed).expect("circuit"));
            }
        }
    }
}

/// [`check_circuit_matrices`] on partition 0 of each Filecoin proof kind at 2 KiB, from a
/// sector sealed for the test (PoRep, SnapDeals, WindowPoSt, WinningPoSt). Returns the kinds run.
pub fn check_filecoin_matrices<B: Backend>(backend: &B) -> usize {
    let work = std::env::temp_dir().join(format!("cuzk-filecoin-matrices-{}", std::process::id()));
    std::fs::create_dir_all(&work).expect("work dir");
    let requests = cuzk_circuits_filecoin::fixtures::generate(&work, 2048, 7).expect("2 KiB fixtures");
    for r in &requests {
        let prepared = cuzk_circuits_filecoin::prepare(r).unwrap_or_else(|e| panic!("{:?}: {e}", r.kind));
        check_circuit_matrices(backend, &format!("{:?} 2 KiB", r.kind), &prepared.partition(0));
    }
    let _ = std::fs::remove_dir_all(&work);
    requests.len()
}

/// `B` with the trait's default [`Backend::first_unsatisfied`] (download, check on the host)
/// instead of its own: every other method is `B`'s.
pub struct DefaultCheck<B>(pub B);

impl<B: Backend> Backend for DefaultCheck<B> {
    type Scalars = B::Scalars;
    type G1Bases = B::G1Bases;
    type G2Bases = B::G2Bases;
    type Matrices = B::Matrices;
    fn name(&self) -> String {
        format!("{} (default satisfaction check)", self.0.name())
    }
    fn host_allocator(&self) -> cuzk_core::alloc::SharedAllocator {
        self.0.host_allocator()
    }
    fn upload_scalars(&self, host: PinnedVec<Scalar>) -> Result<Self::Scalars, cuzk_core::backend::BackendError> {
        self.0.upload_scalars(host)
    }
    fn download_scalars(&self, buf: &Self::Scalars) -> Result<Vec<Scalar>, cuzk_core::backend::BackendError> {
        self.0.download_scalars(buf)
    }
    fn ntt(&self, buf: &mut Self::Scalars, domain: &Domain, direction: NttDirection, coset: bool) -> Result<(), cuzk_core::backend::BackendError> {
        self.0.ntt(buf, domain, direction, coset)
    }
    fn quotient_on_coset(&self, a: &mut Self::Scalars, b: &Self::Scalars, c: &Self::Scalars, domain: &Domain) -> Result<(), cuzk_core::backend::BackendError> {
        self.0.quotient_on_coset(a, b, c, domain)
    }
    fn load_matrices(&self, m: &std::sync::Arc<ConstraintMatrices>) -> Result<Self::Matrices, cuzk_core::backend::BackendError> {
        self.0.load_matrices(m)
    }
    fn matrices_bytes(&self, m: &Self::Matrices) -> u64 {
        self.0.matrices_bytes(m)
    }
    fn evaluate_constraints(
        &self,
        m: &Self::Matrices,
        input: &Self::Scalars,
        aux: &Self::Scalars,
        domain: &Domain,
    ) -> Result<[Self::Scalars; 3], cuzk_core::backend::BackendError> {
        self.0.evaluate_constraints(m, input, aux, domain)
    }
    fn load_g1(&self, points: Vec<G1Affine>) -> Result<Self::G1Bases, cuzk_core::backend::BackendError> {
        self.0.load_g1(points)
    }
    fn load_g2(&self, points: Vec<G2Affine>) -> Result<Self::G2Bases, cuzk_core::backend::BackendError> {
        self.0.load_g2(points)
    }
    fn g1_len(&self, bases: &Self::G1Bases) -> usize {
        self.0.g1_len(bases)
    }
    fn g2_len(&self, bases: &Self::G2Bases) -> usize {
        self.0.g2_len(bases)
    }
    fn msm_g1(&self, bases: &Self::G1Bases, offset: usize, scalars: MsmScalars<'_, Self::Scalars>) -> Result<G1Projective, cuzk_core::backend::BackendError> {
        self.0.msm_g1(bases, offset, scalars)
    }
    fn msm_g2(&self, bases: &Self::G2Bases, offset: usize, scalars: MsmScalars<'_, Self::Scalars>) -> Result<G2Projective, cuzk_core::backend::BackendError> {
        self.0.msm_g2(bases, offset, scalars)
    }
}
