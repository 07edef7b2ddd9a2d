//! Assembles the WGSL kernels under `kernels/wgsl/` into shader modules: the field template
//! is instantiated for Fr and Fp (limb count, modulus, Montgomery constants) and the curve and
//! bucket templates for G1 (over Fp) and G2 (over Fp2).

use blstrs::{Fp, Scalar};
use ff::Field;

use crate::error::WgpuError;

const COMMON: &str = include_str!("../../kernels/wgsl/field/common.wgsl");
const MONT: &str = include_str!("../../kernels/wgsl/field/mont.wgsl");
const FP2: &str = include_str!("../../kernels/wgsl/field/fp2.wgsl");
const XYZZ_COMPACT: &str = include_str!("../../kernels/wgsl/curve/xyzz_compact.wgsl");
const NTT: &str = include_str!("../../kernels/wgsl/ntt/ntt.wgsl");
const PREPARE: &str = include_str!("../../kernels/wgsl/msm/prepare.wgsl");
const BUCKETS: &str = include_str!("../../kernels/wgsl/msm/buckets.wgsl");

/// The scalar field modulus r, big-endian hex.
const R_HEX: &str = "73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001";
/// The base field modulus p, big-endian hex.
const P_HEX: &str = "1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab";

const _: () = assert!(std::mem::size_of::<Scalar>() == 32);
const _: () = assert!(std::mem::size_of::<Fp>() == 48);

/// Little-endian 32-bit limbs of a big-endian hex number.
fn limbs_from_hex(hex: &str) -> Vec<u32> {
    let b = hex.as_bytes();
    b.rchunks(8).map(|c| u32::from_str_radix(std::str::from_utf8(c).unwrap_or("0"), 16).unwrap_or(0)).collect()
}

/// `-p^-1 mod 2^32` by Newton's iteration.
fn mont_inv(p0: u32) -> u32 {
    let mut x: u32 = 1;
    for _ in 0..5 {
        x = x.wrapping_mul(2u32.wrapping_sub(p0.wrapping_mul(x)));
    }
    x.wrapping_neg()
}

fn list(v: &[u32]) -> String {
    v.iter().map(|x| format!("{x}u")).collect::<Vec<_>>().join(", ")
}

/// Replaces template tokens in order (longer tokens sharing a prefix must come first).
fn fill(src: &str, subs: &[(&str, String)]) -> String {
    subs.iter().fold(src.to_string(), |s, (k, v)| s.replace(k, v))
}

/// Montgomery-form one of Fr and Fp, as 32-bit limbs.
fn one_limbs(field: &str) -> Vec<u32> {
    let bytes: Vec<u8> = if field == "fr" {
        // SAFETY: Scalar is 32 bytes of little-endian Montgomery limbs (blst layout).
        unsafe { std::mem::transmute::<Scalar, [u8; 32]>(Scalar::ONE) }.to_vec()
    } else {
        // SAFETY: Fp is 48 bytes of little-endian Montgomery limbs (blst layout).
        unsafe { std::mem::transmute::<Fp, [u8; 48]>(Fp::ONE) }.to_vec()
    };
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Expands every loop `for (var X = A; X < $LN; X++) { BODY }` of `src` (A a literal such as
/// `0u` or `1u`) into `{ let X = Au; BODY } { let X = (A+1)u; BODY } ...` up to `n`, nested
/// loops included.
fn unroll(src: &str, n: usize) -> String {
    const HEAD: &str = "for (var ";
    let mut out = String::new();
    let mut rest = src;
    while let Some(pos) = rest.find(HEAD) {
        let after = &rest[pos + HEAD.len()..];
        // `X = A; X < $LN; X++) {`
        let Some(close) = after.find(") {") else { break };
        let head = &after[..close];
        let parts: Vec<&str> = head.split(';').map(str::trim).collect();
        let parsed = (parts.len() == 3)
            .then(|| {
                let (x, a) = parts[0].split_once('=')?;
                let (x, a) = (x.trim(), a.trim().trim_end_matches('u'));
                (parts[1] == format!("{x} < $LN") && parts[2] == format!("{x}++")).then_some(())?;
                Some((x.to_string(), a.parse::<usize>().ok()?))
            })
            .flatten();
        let Some((x, a)) = parsed else {
            out += &rest[..pos + HEAD.len()];
            rest = after;
            continue;
        };
        // The body: up to the matching brace.
        let body_start = pos + HEAD.len() + close + 3;
        let mut depth = 1;
        let mut end = body_start;
        for (i, ch) in rest[body_start..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = body_start + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let body = &rest[body_start..end];
        let inner = unroll(body, n);
        out += &rest[..pos];
        for k in a..n {
            out += &format!("{{ let {x} = {k}u;{inner}}}\n");
        }
        rest = &rest[end + 1..];
    }
    out + rest
}

/// The field template for `fr` (8 limbs) or `fp` (12 limbs), its limb loops expanded on the host
/// (llvmpipe's loop budget, see docs/wgpu.md).
fn field(prefix: &str) -> String {
    let (hex, n) = if prefix == "fr" { (R_HEX, 8usize) } else { (P_HEX, 12) };
    let p = limbs_from_hex(hex);
    debug_assert_eq!(p.len(), n);
    let src = unroll(MONT, n);
    fill(
        &src,
        &[
            ("$LN", format!("{n}u")),
            ("$N2", (n + 2).to_string()),
            ("$N1", (n + 1).to_string()),
            ("$N", n.to_string()),
            ("$P", list(&p)),
            ("$R1", list(&one_limbs(prefix))),
            ("$INV", mont_inv(p[0]).to_string()),
            ("$F", prefix.to_string()),
        ],
    )
}

/// Loaders for the bucket kernels' buffers (`bases`, `pin`) and the store to `pout`, written
/// out limb by limb (no loop: see `unroll`).
fn loaders(g2: bool) -> String {
    let mut s = String::new();
    for buf in ["bases", "pin"] {
        let limbs: Vec<String> = (0..12).map(|k| format!("{buf}[o + {k}u]")).collect();
        s += &format!("fn {buf}_fp(o: u32) -> fpE {{\n    return fpE({});\n}}\n\n", limbs.join(", "));
        if g2 {
            s += &format!("fn {buf}_fp2(o: u32) -> Fp2 {{\n    return Fp2({buf}_fp(o), {buf}_fp(o + 12u));\n}}\n\n");
        }
    }
    s += "fn pout_fp(o: u32, v: fpE) {\n";
    for k in 0..12 {
        s += &format!("    pout[o + {k}u] = v[{k}];\n");
    }
    s += "}\n\n";
    if g2 {
        s += "fn pout_fp2(o: u32, v: Fp2) {\n    pout_fp(o, v.c0);\n    pout_fp(o + 12u, v.c1);\n}\n\n";
    }
    s
}

/// One instruction of the compact curve programs: `r_d = r_a (op) r_b`.
type Ins = (u32, u32, u32, u32);
const MUL: u32 = 0;
const ADD: u32 = 1;
const SUB: u32 = 2;
const MOV: u32 = 3;

/// XYZZ formulas (a = 0) as register programs: P in r0..r3 (result there too), Q in r4..r7.
const PROGRAMS: &[(&str, &[Ins])] = &[
    // U1 = X1·ZZ2, U2 = X2·ZZ1, S1 = Y1·ZZZ2, S2 = Y2·ZZZ1, P = U2 − U1, R = S2 − S1.
    ("ADD_A", &[(MUL, 8, 0, 6), (MUL, 9, 4, 2), (MUL, 10, 1, 7), (MUL, 11, 5, 3), (SUB, 12, 9, 8), (SUB, 13, 11, 10)]),
    // PP, PPP, Q = U1·PP, ZZ3 = ZZ1·ZZ2·PP, ZZZ3 = ZZZ1·ZZZ2·PPP, X3 = R² − PPP − 2Q,
    // Y3 = R·(Q − X3) − S1·PPP.
    (
        "ADD_B",
        &[
            (MUL, 14, 12, 12),
            (MUL, 15, 12, 14),
            (MUL, 9, 8, 14),
            (MUL, 2, 2, 6),
            (MUL, 2, 2, 14),
            (MUL, 3, 3, 7),
            (MUL, 3, 3, 15),
            (MUL, 0, 13, 13),
            (SUB, 0, 0, 15),
            (SUB, 0, 0, 9),
            (SUB, 0, 0, 9),
            (SUB, 11, 9, 0),
            (MUL, 11, 13, 11),
            (MUL, 10, 10, 15),
            (SUB, 1, 11, 10),
        ],
    ),
    // Q affine (x2 in r4, y2 in r5): U2 = x2·ZZ1, S2 = y2·ZZZ1, P = U2 − X1, R = S2 − Y1.
    ("MADD_A", &[(MUL, 9, 4, 2), (MUL, 11, 5, 3), (SUB, 12, 9, 0), (SUB, 13, 11, 1)]),
    (
        "MADD_B",
        &[
            (MUL, 14, 12, 12),
            (MUL, 15, 12, 14),
            (MUL, 9, 0, 14),
            (MUL, 2, 2, 14),
            (MUL, 3, 3, 15),
            (MUL, 0, 13, 13),
            (SUB, 0, 0, 15),
            (SUB, 0, 0, 9),
            (SUB, 0, 0, 9),
            (SUB, 11, 9, 0),
            (MUL, 11, 13, 11),
            (MUL, 10, 1, 15),
            (SUB, 1, 11, 10),
        ],
    ),
    // U = 2Y, V = U², W = U·V, S = X·V, M = 3X², X3 = M² − 2S, Y3 = M·(S − X3) − W·Y,
    // ZZ3 = V·ZZ, ZZZ3 = W·ZZZ.
    (
        "DBL",
        &[
            (ADD, 8, 1, 1),
            (MUL, 9, 8, 8),
            (MUL, 10, 8, 9),
            (MUL, 11, 0, 9),
            (MUL, 12, 0, 0),
            (ADD, 13, 12, 12),
            (ADD, 13, 13, 12),
            (MUL, 14, 13, 13),
            (SUB, 14, 14, 11),
            (SUB, 14, 14, 11),
            (SUB, 15, 11, 14),
            (MUL, 15, 13, 15),
            (MUL, 8, 10, 1),
            (SUB, 1, 15, 8),
            (MOV, 0, 14, 14),
            (MUL, 2, 9, 2),
            (MUL, 3, 10, 3),
        ],
    ),
];

/// Expands a program over Fp2 registers into Fp instructions: curve register i is Fp
/// registers 2i, 2i+1; Fp registers 32..36 are scratch for Karatsuba products.
fn expand_fp2(prog: &[Ins]) -> Vec<Ins> {
    const T: u32 = 32;
    let mut out = Vec::new();
    for &(op, d, a, b) in prog {
        let (d0, d1, a0, a1, b0, b1) = (2 * d, 2 * d + 1, 2 * a, 2 * a + 1, 2 * b, 2 * b + 1);
        if op == MUL {
            // (a0 + a1 u)(b0 + b1 u) = a0 b0 − a1 b1 + ((a0 + a1)(b0 + b1) − a0 b0 − a1 b1) u
            out.extend([
                (MUL, T, a0, b0),
                (MUL, T + 1, a1, b1),
                (ADD, T + 2, a0, a1),
                (ADD, T + 3, b0, b1),
                (MUL, T + 4, T + 2, T + 3),
                (SUB, d0, T, T + 1),
                (SUB, T + 4, T + 4, T),
                (SUB, d1, T + 4, T + 1),
            ]);
        } else {
            out.extend([(op, d0, a0, b0), (op, d1, a1, b1)]);
        }
    }
    out
}

/// The programs as WGSL for G1 or G2: the Fp register file, the curve-register accessors, one
/// instruction array and a (start, length) constant per program.
fn programs(g2: bool) -> String {
    let mut words = Vec::new();
    let mut consts = String::new();
    for (name, prog) in PROGRAMS {
        let prog = if g2 { expand_fp2(prog) } else { prog.to_vec() };
        consts += &format!("const $C_{name} = vec2<u32>({}u, {}u);\n", words.len(), prog.len());
        words.extend(prog.iter().map(|&(op, d, a, b)| op << 18 | d << 12 | a << 6 | b));
    }
    let access = if g2 {
        "var<private> $C_RF: array<fpE, 37>;\n\nfn $C_get(i: u32) -> Fp2 {\n    return Fp2($C_RF[2u * i], $C_RF[2u * i + 1u]);\n}\n\nfn $C_set(i: u32, v: Fp2) {\n    $C_RF[2u * i] = v.c0;\n    $C_RF[2u * i + 1u] = v.c1;\n}\n"
    } else {
        "var<private> $C_RF: array<fpE, 16>;\n\nfn $C_get(i: u32) -> fpE {\n    return $C_RF[i];\n}\n\nfn $C_set(i: u32, v: fpE) {\n    $C_RF[i] = v;\n}\n"
    };
    format!("{access}\nvar<private> $C_PROG: array<u32, {}> = array<u32, {}>({});\n{consts}", words.len(), words.len(), list(&words))
}

/// Which shader module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// NTT family and quotient over Fr.
    Ntt,
    /// MSM scalar side: gather, histogram, scatter.
    Prepare,
    /// G1 bucket and window kernels.
    G1,
    /// G2 bucket and window kernels.
    G2,
}

impl Program {
    /// A label for logs and errors.
    pub fn name(self) -> &'static str {
        match self {
            Program::Ntt => "ntt",
            Program::Prepare => "msm-prepare",
            Program::G1 => "msm-g1",
            Program::G2 => "msm-g2",
        }
    }
}

/// The complete WGSL source of `program` for workgroups of `wg` invocations.
pub fn source(program: Program, wg: u32) -> Result<String, WgpuError> {
    let mut s = COMMON.to_string();
    match program {
        Program::Ntt => {
            s += &field("fr");
            s += NTT;
        }
        Program::Prepare => {
            s += &field("fr");
            s += PREPARE;
        }
        Program::G1 | Program::G2 => {
            let g2 = program == Program::G2;
            s += &field("fp");
            if g2 {
                s += FP2;
            }
            let (c, f, fw) = if g2 { ("g2", "fp2", "24") } else { ("g1", "fp", "12") };
            let curve = XYZZ_COMPACT.replace("$PROGRAM", &programs(g2));
            let body = format!("{curve}{BUCKETS}");
            s += &loaders(g2);
            s += &fill(&body, &[("$C", c.to_string()), ("$FW", fw.to_string()), ("$F", f.to_string())]);
        }
    }
    let s = fill(&s, &[("$WG2", (2 * wg).to_string()), ("$WG", wg.to_string())]);
    if let Some(pos) = s.find('$') {
        let line = s[..pos].lines().count();
        return Err(WgpuError::Shader(program.name().into(), format!("unfilled template token at line {line}")));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_are_consistent() {
        let r = limbs_from_hex(R_HEX);
        assert_eq!(r.len(), 8);
        assert_eq!(r[0], 1);
        assert_eq!(r[0].wrapping_mul(mont_inv(r[0]).wrapping_neg()), 1);
        let p = limbs_from_hex(P_HEX);
        assert_eq!(p.len(), 12);
        assert_eq!(p[0].wrapping_mul(mont_inv(p[0])), u32::MAX);
    }

    #[test]
    fn unrolled_field_has_no_limb_loops() {
        let f = field("fp");
        assert!(!f.contains("for (var") && !f.contains("prm.h"), "{f}");
        assert!(f.contains("{ let i = 11u;"));
        assert!(f.contains("{ let j = 1u;") && !f.contains("{ let j = 0u; let r = mac(m"));
    }

    #[test]
    fn every_program_assembles_and_parses() {
        for p in [Program::Ntt, Program::Prepare, Program::G1, Program::G2] {
            let src = source(p, 64).unwrap();
            assert!(!src.contains('$'), "{}", p.name());
        }
    }
}

#[cfg(test)]
pub(crate) mod program_tests {
    use super::*;
    use blstrs::{Fp2, G2Projective};
    use group::{Curve, Group};

    /// Runs a register program on the host over Fp registers, as the compact kernels do.
    pub(crate) fn run(regs: &mut [Fp], prog: &[Ins]) {
        for &(op, d, a, b) in prog {
            let (x, y) = (regs[a as usize], regs[b as usize]);
            regs[d as usize] = match op {
                MUL => x * y,
                ADD => x + y,
                SUB => x - y,
                _ => x,
            };
        }
    }

    fn prog(name: &str) -> &'static [Ins] {
        PROGRAMS.iter().find(|p| p.0 == name).unwrap().1
    }

    /// llvmpipe (lavapipe) ends every loop of an invocation once all its loops together have
    /// run 65535 iterations (the results are then silently wrong). With the limb loops
    /// expanded, an interpreted instruction costs one iteration; the bucket kernels' own loops
    /// are bounded by the host's segment sizes. Upper bounds over every window size (taking
    /// the longer branch everywhere); G2's worst case, round 1 with 256 entries per
    /// invocation, is about half the budget.
    #[test]
    fn bucket_kernels_stay_within_the_llvmpipe_loop_budget() {
        const BUDGET: u64 = 65535;
        for g2 in [false, true] {
            let len = |name: &str| {
                let p = prog(name);
                (if g2 { expand_fp2(p).len() } else { p.len() }) as u64
            };
            let dbl = len("DBL");
            let add = len("ADD_A") + len("ADD_B").max(dbl);
            let madd = len("MADD_A") + len("MADD_B").max(dbl);
            let s = cuzk_core::msm::MAX_SEGMENT as u64;
            let mut worst = [0u64; 3];
            for c in 4..=16u32 {
                let (nw, nb) = (cuzk_core::msm::windows(c), u64::from(cuzk_core::msm::buckets(c)));
                let search = u64::from(64 - nb.leading_zeros()) + 1;
                let (_, seg) = crate::msm::window_split(c, nw);
                let round1 = search + s * (1 + search + madd);
                let later = s * (1 + add);
                let window = u64::from(seg) * (1 + 2 * add) + u64::from(c - 1) * (1 + dbl + add) + add;
                for (w, n) in worst.iter_mut().zip([round1, later, window]) {
                    *w = (*w).max(n);
                }
            }
            eprintln!("g2 {g2}: worst loop iterations per invocation (round 1, later rounds, window sums): {worst:?}");
            assert!(worst.iter().all(|&n| n < BUDGET), "g2 {g2}: {worst:?}");
        }
    }

    /// The expanded G2 programs compute P + Q and 2P (checked through the Jacobian map).
    #[test]
    fn expanded_g2_programs_add_and_double() {
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::from_seed([7; 32]);
        let p = G2Projective::random(&mut rng).to_affine();
        let q = G2Projective::random(&mut rng).to_affine();
        let mut regs = vec![Fp::ZERO; 37];
        let set = |r: &mut Vec<Fp>, i: usize, v: Fp2| {
            r[2 * i] = v.c0();
            r[2 * i + 1] = v.c1();
        };
        for (i, v) in [p.x(), p.y(), Fp2::ONE, Fp2::ONE, q.x(), q.y(), Fp2::ONE, Fp2::ONE].into_iter().enumerate() {
            set(&mut regs, i, v);
        }
        let mut r2 = regs.clone();
        run(&mut regs, &expand_fp2(prog("ADD_A")));
        run(&mut regs, &expand_fp2(prog("ADD_B")));
        let get = |r: &Vec<Fp>, i: usize| Fp2::new(r[2 * i], r[2 * i + 1]);
        let to_proj = |r: &Vec<Fp>| {
            let (x, y, zz, zzz) = (get(r, 0), get(r, 1), get(r, 2), get(r, 3));
            let z = zz * zzz;
            G2Projective::from_raw_unchecked(x * zzz * z, y * zz * z.square(), z)
        };
        assert_eq!(to_proj(&regs), G2Projective::from(p) + G2Projective::from(q));
        run(&mut r2, &expand_fp2(prog("MADD_A")));
        run(&mut r2, &expand_fp2(prog("MADD_B")));
        assert_eq!(to_proj(&r2), G2Projective::from(p) + G2Projective::from(q));
        let mut r3 = vec![Fp::ZERO; 37];
        for (i, v) in [p.x(), p.y(), Fp2::ONE, Fp2::ONE].into_iter().enumerate() {
            set(&mut r3, i, v);
        }
        run(&mut r3, &expand_fp2(prog("DBL")));
        assert_eq!(to_proj(&r3), G2Projective::from(p).double());
        // General XYZZ inputs: 7P by double-and-add, then P + 7P (the digit-8 window).
        let xyzz = |r: &Vec<Fp>| [get(r, 0), get(r, 1), get(r, 2), get(r, 3)];
        let dbl = |v: [Fp2; 4]| {
            let mut r = vec![Fp::ZERO; 37];
            for (i, x) in v.into_iter().enumerate() {
                set(&mut r, i, x);
            }
            run(&mut r, &expand_fp2(prog("DBL")));
            xyzz(&r)
        };
        let add = |v: [Fp2; 4], w: [Fp2; 4]| {
            let mut r = vec![Fp::ZERO; 37];
            for (i, x) in v.into_iter().chain(w).enumerate() {
                set(&mut r, i, x);
            }
            run(&mut r, &expand_fp2(prog("ADD_A")));
            run(&mut r, &expand_fp2(prog("ADD_B")));
            xyzz(&r)
        };
        let pp = [p.x(), p.y(), Fp2::ONE, Fp2::ONE];
        let p7 = add(dbl(add(dbl(pp), pp)), pp);
        let p8 = add(pp, p7);
        let proj = |v: [Fp2; 4]| {
            let z = v[2] * v[3];
            G2Projective::from_raw_unchecked(v[0] * v[3] * z, v[1] * v[2] * z.square(), z)
        };
        assert_eq!(proj(p7), G2Projective::from(p) * Scalar::from(7u64));
        assert_eq!(proj(p8), G2Projective::from(p) * Scalar::from(8u64));
        let p10 = add(p7, add(dbl(pp), pp));
        assert_eq!(proj(p10), G2Projective::from(p) * Scalar::from(10u64));
    }
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod diff_tests;
