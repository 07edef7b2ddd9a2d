//! Differential checks of the field and curve WGSL against blstrs, one operation per
//! invocation with a per-invocation operation code (so invocations of one workgroup diverge),
//! on whatever adapter is present (lavapipe in CI). Skips visibly without an adapter.
//!
//! These found why the compact kernels failed on lavapipe: llvmpipe ends every loop of an
//! invocation once all its loops together have run 65535 iterations, and the rolled limb
//! loops spent about 3,300 of them per G1 doubling (operation 12 below, k doublings in one
//! invocation, went wrong from k ≈ 17). Operation 12 with hundreds of doublings guards that.
//!
//! To bisect a failure, call [`check`] with other operation codes (see `OPS`), another number
//! of invocations per dispatch, or another range of k.

use std::borrow::Cow;

use blstrs::{Fp, Fp2, G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::device::{AdapterSelector, Batch, Gpu, Kernel};

const KERNEL: &str = r#"
@group(0) @binding(0) var<storage, read> bases: array<u32>;
@group(0) @binding(1) var<storage, read> pin: array<u32>;
@group(0) @binding(2) var<storage, read_write> pout: array<u32>;
@group(0) @binding(3) var<uniform> prm: Params;

fn dbg_ld(i: u32) -> $CXyzz {
    let o = i * (4u * $FWu);
    return $CXyzz(pin_$F(o), pin_$F(o + $FWu), pin_$F(o + 2u * $FWu), pin_$F(o + 3u * $FWu));
}

// prm.a = invocations; bases[t] = operation, bases[prm.a + t] = small multiplier.
@compute @workgroup_size($WG)
fn dbg_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = linear_id(gid, nwg);
    if (t >= prm.a) {
        return;
    }
    let op = bases[t];
    let p = dbg_ld(2u * t);
    let q = dbg_ld(2u * t + 1u);
    var r = p;
$OPS
    let o = t * (4u * $FWu);
    pout_$F(o, r.X);
    pout_$F(o + $FWu, r.Y);
    pout_$F(o + 2u * $FWu, r.ZZ);
    pout_$F(o + 3u * $FWu, r.ZZZ);
}
"#;

const OPS: &[(u32, &str)] = &[
    (
        16,
        r#"        for (var i = 0u; i < bases[prm.a + t]; i++) {
            $C_load_p(r);
            $C_run($C_DBL);
            r = $C_result();
        }
"#,
    ),
    (
        0,
        r#"        r.X = $F_mul(p.X, q.X);
"#,
    ),
    (
        1,
        r#"        r.X = $F_add(p.X, q.X);
"#,
    ),
    (
        2,
        r#"        r.X = $F_sub(p.X, q.X);
"#,
    ),
    (
        3,
        r#"        r.X = $F_neg(p.X);
"#,
    ),
    (
        4,
        r#"        r = $C_add(p, q);
"#,
    ),
    (
        5,
        r#"        r = $C_add_affine(p, $CAff(q.X, q.Y));
"#,
    ),
    (
        6,
        r#"        r = $C_dbl(p);
"#,
    ),
    (
        7,
        r#"        r = $C_mul_small(p, bases[prm.a + t]);
"#,
    ),
    (
        8,
        r#"        r = $C_dbl($C_dbl(p));
"#,
    ),
    (
        9,
        r#"        r = $C_add($C_dbl(p), p);
"#,
    ),
    (
        10,
        r#"        r = $C_add($C_add(p, q), p);
"#,
    ),
    (
        11,
        r#"        r = $C_inf();
        for (var i = 0u; i < bases[prm.a + t]; i++) {
            r = $C_add(r, p);
        }
"#,
    ),
    (
        12,
        r#"        for (var i = 0u; i < bases[prm.a + t]; i++) {
            r = $C_dbl(r);
        }
"#,
    ),
    (
        13,
        r#"        for (var i = 0u; i < bases[prm.a + t]; i++) {
            r.X = $F_mul(r.X, q.X);
        }
"#,
    ),
    (
        14,
        r#"        for (var i = 0u; i < bases[prm.a + t]; i++) {
            r.X = $F_sub(r.X, q.X);
        }
"#,
    ),
    (
        15,
        r#"        for (var i = 0u; i < bases[prm.a + t]; i++) {
            r.X = $F_add(r.X, q.X);
        }
"#,
    ),
];

/// The curve module of G1 or G2 plus the debug kernel (only operations `ops`).
fn debug_source(g2: bool, wg: u32, ops: &[u32]) -> String {
    let chain: String = OPS.iter().filter(|(o, _)| ops.contains(o)).map(|(o, code)| format!("    if (op == {o}u) {{\n{code}    }}\n")).collect();
    let mut s = COMMON.to_string();
    s += &field("fp");
    if g2 {
        s += FP2;
    }
    let (c, f, fw) = if g2 { ("g2", "fp2", "24") } else { ("g1", "fp", "12") };
    let curve = XYZZ_COMPACT.replace("$PROGRAM", &programs(g2));
    s += &loaders(g2);
    s += &fill(&format!("{curve}{}", KERNEL.replace("$OPS", &chain)), &[("$C", c.to_string()), ("$FW", fw.to_string()), ("$F", f.to_string())]);
    let s = fill(&s, &[("$WG2", (2 * wg).to_string()), ("$WG", wg.to_string())]);
    assert!(!s.contains('$'));
    s
}

fn fp_words(v: &Fp) -> [u32; 12] {
    // SAFETY: Fp is 48 bytes of little-endian Montgomery limbs.
    let b: [u8; 48] = unsafe { std::mem::transmute(*v) };
    std::array::from_fn(|i| u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]))
}

fn fp_from(w: &[u32]) -> Fp {
    let mut b = [0u8; 48];
    for (i, x) in w.iter().enumerate() {
        b[4 * i..4 * i + 4].copy_from_slice(&x.to_le_bytes());
    }
    // SAFETY: as above; the kernels return reduced Montgomery limbs.
    unsafe { std::mem::transmute(b) }
}

/// A field of the curve (Fp or Fp2) as far as these checks need it.
trait F: Copy + PartialEq + std::fmt::Debug + Field {
    const W: usize;
    fn words(&self) -> Vec<u32>;
    fn from_words(w: &[u32]) -> Self;
}

impl F for Fp {
    const W: usize = 12;
    fn words(&self) -> Vec<u32> {
        fp_words(self).to_vec()
    }
    fn from_words(w: &[u32]) -> Self {
        fp_from(w)
    }
}

impl F for Fp2 {
    const W: usize = 24;
    fn words(&self) -> Vec<u32> {
        let mut v = fp_words(&self.c0()).to_vec();
        v.extend(fp_words(&self.c1()));
        v
    }
    fn from_words(w: &[u32]) -> Self {
        Fp2::new(fp_from(&w[..12]), fp_from(&w[12..24]))
    }
}

/// XYZZ point as four field elements.
type Xyzz<T> = [T; 4];

/// A curve with affine coordinates in `T`.
trait C {
    type T: F;
    type P: Group<Scalar = Scalar> + Copy;
    const G2: bool;
    fn aff(p: &Self::P) -> (Self::T, Self::T);
    fn from_xyzz(v: &Xyzz<Self::T>) -> Self::P;
}

struct G1;
struct G2;

impl C for G1 {
    type T = Fp;
    type P = G1Projective;
    const G2: bool = false;
    fn aff(p: &G1Projective) -> (Fp, Fp) {
        let a = p.to_affine();
        (a.x(), a.y())
    }
    fn from_xyzz(v: &Xyzz<Fp>) -> G1Projective {
        if v[2].is_zero().into() {
            return G1Projective::identity();
        }
        let z = v[2] * v[3];
        G1Projective::from_raw_unchecked(v[0] * v[3] * z, v[1] * v[2] * z.square(), z)
    }
}

impl C for G2 {
    type T = Fp2;
    type P = G2Projective;
    const G2: bool = true;
    fn aff(p: &G2Projective) -> (Fp2, Fp2) {
        let a = p.to_affine();
        (a.x(), a.y())
    }
    fn from_xyzz(v: &Xyzz<Fp2>) -> G2Projective {
        if v[2].is_zero().into() {
            return G2Projective::identity();
        }
        let z = v[2] * v[3];
        G2Projective::from_raw_unchecked(v[0] * v[3] * z, v[1] * v[2] * z.square(), z)
    }
}

/// `p` in XYZZ coordinates scaled by a random λ (identity: all zero).
fn to_xyzz<K: C>(p: &K::P, rng: &mut ChaCha8Rng) -> Xyzz<K::T> {
    if bool::from(p.is_identity()) {
        return [K::T::ZERO; 4];
    }
    let (x, y) = K::aff(p);
    let l = K::T::random(&mut *rng);
    let l2 = l.square();
    let l3 = l2 * l;
    [x * l2, y * l3, l2, l3]
}

fn open() -> Option<Gpu> {
    let sel = AdapterSelector::from_env().ok()?;
    match Gpu::open(&sel) {
        Ok(g) => Some(g),
        Err(e) => {
            eprintln!("SKIPPED: no wgpu adapter ({e})");
            None
        }
    }
}

/// One case: operation, P, Q (XYZZ), small multiplier.
struct Case<K: C> {
    op: u32,
    p: Xyzz<K::T>,
    q: Xyzz<K::T>,
    pp: K::P,
    qp: K::P,
    k: u32,
}

/// A random case of operation `op`, with k drawn from `ks`.
fn random_case<K: C>(op: u32, rng: &mut ChaCha8Rng, base: &K::P, ks: std::ops::Range<u32>) -> Case<K> {
    // Points: random, the identity, equal to or opposite of each other.
    let pick = |rng: &mut ChaCha8Rng| -> K::P {
        match rng.gen_range(0..10) {
            0 => K::P::identity(),
            _ => *base * Scalar::from(rng.gen::<u64>()),
        }
    };
    let pp = pick(rng);
    let qp = match rng.gen_range(0..8) {
        0 => pp,
        1 => -pp,
        _ => pick(rng),
    };
    let mut p = to_xyzz::<K>(&pp, rng);
    let mut q = to_xyzz::<K>(&qp, rng);
    if op == 5 {
        // Q affine (the identity is x = y = 0).
        let (x, y) = if bool::from(qp.is_identity()) { (K::T::ZERO, K::T::ZERO) } else { K::aff(&qp) };
        q = [x, y, K::T::ONE, K::T::ONE];
    }
    if op < 4 || (13..=15).contains(&op) {
        // Field operations on random elements (and a few zeros).
        for v in p.iter_mut().chain(q.iter_mut()) {
            *v = if rng.gen_range(0..8) == 0 { K::T::ZERO } else { K::T::random(&mut *rng) };
        }
    }
    Case { op, p, q, pp, qp, k: rng.gen_range(ks) }
}

/// The k of operation `op`'s cases: small multipliers (operation 7), or up to 400 (G1) / 120
/// (G2) repetitions in one invocation (operations 11 and up: llvmpipe's loop budget).
fn k_range<K: C>(op: u32) -> std::ops::Range<u32> {
    let long = if K::G2 { 120 } else { 400 };
    0..if op >= 11 { long } else { 64 }
}

/// Runs `cases` in one dispatch and returns the indices that differ from blstrs.
fn run_cases<K: C>(gpu: &Gpu, kernel: &Kernel, cases: &[Case<K>]) -> Vec<(usize, String)> {
    let n = cases.len();
    let w = K::T::W;
    let mut ops: Vec<u32> = cases.iter().map(|c| c.op).collect();
    ops.extend(cases.iter().map(|c| c.k));
    let mut pin = Vec::with_capacity(n * 8 * w);
    for c in cases {
        for v in c.p.iter().chain(c.q.iter()) {
            pin.extend(v.words());
        }
    }
    let bytes = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let bases = gpu.storage_init(&bytes(&ops), "ops").unwrap();
    let pinb = gpu.storage_init(&bytes(&pin), "pin").unwrap();
    let out = gpu.storage((n * 4 * w * 4) as u64, "out").unwrap();
    let mut b = Batch::new(gpu);
    b.dispatch(kernel, &[(0, (&bases).into()), (1, (&pinb).into()), (2, (&out).into())], 3, [n as u32, 0, 0, 0, 0, 0, 0, 0], n as u64, false).unwrap();
    b.submit().unwrap();
    let raw = gpu.read(&out, 0, (n * 4 * w * 4) as u64).unwrap();
    let words: Vec<u32> = raw.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let mut bad = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let o = &words[i * 4 * w..(i + 1) * 4 * w];
        let got: Xyzz<K::T> = std::array::from_fn(|j| K::T::from_words(&o[j * w..(j + 1) * w]));
        let ok = match c.op {
            0..=3 | 13..=15 => {
                let want = match c.op {
                    0 => c.p[0] * c.q[0],
                    1 => c.p[0] + c.q[0],
                    2 => c.p[0] - c.q[0],
                    13 => (0..c.k).fold(c.p[0], |a, _| a * c.q[0]),
                    14 => (0..c.k).fold(c.p[0], |a, _| a - c.q[0]),
                    15 => (0..c.k).fold(c.p[0], |a, _| a + c.q[0]),
                    _ => -c.p[0],
                };
                // Exact limbs (the kernels keep values reduced).
                o[..w] == want.words()[..]
            }
            _ => {
                let want = match c.op {
                    4 | 5 => c.pp + c.qp,
                    6 => c.pp.double(),
                    8 => c.pp.double().double(),
                    9 => c.pp.double() + c.pp,
                    10 => c.pp + c.qp + c.pp,
                    12 | 16 => (0..c.k).fold(c.pp, |a, _| a.double()),
                    _ => c.pp * Scalar::from(u64::from(c.k)),
                };
                K::from_xyzz(&got) == want
            }
        };
        if !ok {
            bad.push((i, format!("op {} k {} p_inf {} q==p {} q==-p {}", c.op, c.k, bool::from(c.pp.is_identity()), c.pp == c.qp, c.pp == -c.qp)));
        }
    }
    bad
}

/// The DBL program on the host over Fp registers (G2: Fp2 expansion), exactly as the kernel.
fn host_dbl<K: C>(v: Xyzz<K::T>) -> Xyzz<K::T> {
    let prog = PROGRAMS.iter().find(|p| p.0 == "DBL").unwrap().1;
    let prog = if K::G2 { expand_fp2(prog) } else { prog.to_vec() };
    let w = K::T::W / 12;
    let mut regs = vec![Fp::ZERO; 40];
    for (i, x) in v.iter().enumerate() {
        let words = x.words();
        for c in 0..w {
            regs[w * i + c] = fp_from(&words[12 * c..12 * c + 12]);
        }
    }
    crate::shaders::program_tests::run(&mut regs, &prog);
    std::array::from_fn(|i| {
        let mut words = Vec::new();
        for c in 0..w {
            words.extend(fp_words(&regs[w * i + c]));
        }
        K::T::from_words(&words)
    })
}

/// Runs `n` cases of each operation of `ops` in one dispatch each (uniform control flow), then
/// `n` cases of them mixed, against blstrs.
fn check<K: C>(ops: &[u32], n: usize) {
    let Some(gpu) = open() else { return };
    let t = std::time::Instant::now();
    let src = debug_source(K::G2, gpu.wg, ops);
    let m = gpu.device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("dbg"), source: wgpu::ShaderSource::Wgsl(Cow::Owned(src)) });
    let kernel = Kernel::new(&gpu, &m, "dbg_main");
    gpu.check().unwrap();
    eprintln!("{} g2={}: compiled in {:.1} s", gpu.describe(), K::G2, t.elapsed().as_secs_f64());
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let base = K::P::random(&mut rng);
    let mut fails = 0;
    // Each operation alone (uniform control flow), then all mixed.
    for &op in ops {
        let cases: Vec<Case<K>> = (0..n).map(|_| random_case::<K>(op, &mut rng, &base, k_range::<K>(op))).collect();
        let bad = run_cases(&gpu, &kernel, &cases);
        eprintln!("  op {op} uniform: {} of {n} differ {:?}", bad.len(), bad.iter().take(4).collect::<Vec<_>>());
        fails += bad.len();
    }
    let cases: Vec<Case<K>> = (0..n)
        .map(|_| {
            let op = ops[rng.gen_range(0..ops.len())];
            random_case::<K>(op, &mut rng, &base, k_range::<K>(op))
        })
        .collect();
    let bad = run_cases(&gpu, &kernel, &cases);
    eprintln!("  mixed: {} of {n} differ {:?}", bad.len(), bad.iter().take(8).collect::<Vec<_>>());
    fails += bad.len();
    assert_eq!(fails, 0, "{fails} cases differ from blstrs");
}

#[test]
fn g1_ops_equal_blstrs() {
    check::<G1>(&[0, 1, 2, 3, 4, 5, 6, 7, 12], 64);
}

/// G2 compiles slowly on lavapipe: a smaller set (the conformance suite runs every G2 kernel).
#[test]
fn g2_ops_equal_blstrs() {
    check::<G2>(&[0, 4, 12], 64);
}

#[test]
fn host_dbl_program_iterates() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let p = G1Projective::random(&mut rng);
    let mut v = to_xyzz::<G1>(&p, &mut rng);
    let mut want = p;
    for k in 1..64 {
        v = host_dbl::<G1>(v);
        want = want.double();
        assert_eq!(G1::from_xyzz(&v), want, "k = {k}");
    }
}
