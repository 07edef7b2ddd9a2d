// Fp2 = Fp[u] / (u^2 + 1), as blst: c0 then c1, each 12 limbs.

struct Fp2 {
    c0: fpE,
    c1: fpE,
}

alias fp2E = Fp2;

fn fp2_zero() -> Fp2 {
    return Fp2(fp_zero(), fp_zero());
}

fn fp2_one() -> Fp2 {
    return Fp2(fp_one(), fp_zero());
}

fn fp2_is_zero(a: Fp2) -> bool {
    return fp_is_zero(a.c0) && fp_is_zero(a.c1);
}

fn fp2_add(a: Fp2, b: Fp2) -> Fp2 {
    return Fp2(fp_add(a.c0, b.c0), fp_add(a.c1, b.c1));
}

fn fp2_dbl(a: Fp2) -> Fp2 {
    return fp2_add(a, a);
}

fn fp2_sub(a: Fp2, b: Fp2) -> Fp2 {
    return Fp2(fp_sub(a.c0, b.c0), fp_sub(a.c1, b.c1));
}

fn fp2_neg(a: Fp2) -> Fp2 {
    return Fp2(fp_neg(a.c0), fp_neg(a.c1));
}

// Karatsuba: (a0 + a1 u)(b0 + b1 u) = a0 b0 - a1 b1 + ((a0 + a1)(b0 + b1) - a0 b0 - a1 b1) u.
fn fp2_mul(a: Fp2, b: Fp2) -> Fp2 {
    let t0 = fp_mul(a.c0, b.c0);
    let t1 = fp_mul(a.c1, b.c1);
    let t2 = fp_mul(fp_add(a.c0, a.c1), fp_add(b.c0, b.c1));
    return Fp2(fp_sub(t0, t1), fp_sub(fp_sub(t2, t0), t1));
}

// (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u.
fn fp2_sqr(a: Fp2) -> Fp2 {
    let c0 = fp_mul(fp_add(a.c0, a.c1), fp_sub(a.c0, a.c1));
    let c1 = fp_mul(a.c0, a.c1);
    return Fp2(c0, fp_add(c1, c1));
}
