// Montgomery arithmetic modulo $F_P on $N little-endian 32-bit limbs (R = 2^(32·$N)), the
// exact limb layout of blst (and so of blstrs) on little-endian hosts. Instantiated by the
// host for Fr ($F = fr, 8 limbs) and Fp ($F = fp, 12 limbs). Both moduli leave the top bits
// of the last limb free, so sums of two reduced values never overflow $N limbs.
//
// Limb loops are bounded by the limb-count token. On GPUs the bound is the literal
// limb count and the driver unrolls them. For CPU adapters (lavapipe) the host expands them
// into straight code itself: llvmpipe caps the loop iterations of one shader invocation at
// 65535, all loops together, and ends every loop early past that (docs/wgpu.md), so limb loops
// must not count against that budget.

alias $FE = array<u32, $N>;

const $F_P = $FE($P);
const $F_R1 = $FE($R1);
const $F_INV: u32 = $INVu; // -p^-1 mod 2^32

fn $F_zero() -> $FE {
    return $FE();
}

fn $F_one() -> $FE {
    return $F_R1;
}

fn $F_is_zero(a_in: $FE) -> bool {
    var a = a_in;
    var acc = 0u;
    for (var i = 0u; i < $LN; i++) {
        acc |= a[i];
    }
    return acc == 0u;
}

fn $F_eq(a_in: $FE, b_in: $FE) -> bool {
    var a = a_in;
    var b = b_in;
    var acc = 0u;
    for (var i = 0u; i < $LN; i++) {
        acc |= a[i] ^ b[i];
    }
    return acc == 0u;
}

// a - p if a >= p, else a.
fn $F_reduce(a_in: $FE) -> $FE {
    var a = a_in;
    var p = $F_P;
    var d: $FE;
    var borrow = 0u;
    for (var i = 0u; i < $LN; i++) {
        let s = a[i] - p[i];
        let b1 = select(0u, 1u, a[i] < p[i]);
        d[i] = s - borrow;
        borrow = b1 | select(0u, 1u, s < borrow);
    }
    if (borrow == 0u) {
        return d;
    }
    return a;
}

fn $F_add(a_in: $FE, b_in: $FE) -> $FE {
    var a = a_in;
    var b = b_in;
    var r: $FE;
    var carry = 0u;
    for (var i = 0u; i < $LN; i++) {
        let s = a[i] + b[i];
        let s2 = s + carry;
        carry = select(0u, 1u, s < a[i]) + select(0u, 1u, s2 < s);
        r[i] = s2;
    }
    return $F_reduce(r);
}

fn $F_dbl(a: $FE) -> $FE {
    return $F_add(a, a);
}

fn $F_sub(a_in: $FE, b_in: $FE) -> $FE {
    var a = a_in;
    var b = b_in;
    var p = $F_P;
    var r: $FE;
    var borrow = 0u;
    for (var i = 0u; i < $LN; i++) {
        let s = a[i] - b[i];
        let b1 = select(0u, 1u, a[i] < b[i]);
        r[i] = s - borrow;
        borrow = b1 | select(0u, 1u, s < borrow);
    }
    if (borrow != 0u) {
        var carry = 0u;
        for (var i = 0u; i < $LN; i++) {
            let s = r[i] + p[i];
            let s2 = s + carry;
            carry = select(0u, 1u, s < r[i]) + select(0u, 1u, s2 < s);
            r[i] = s2;
        }
    }
    return r;
}

fn $F_neg(a: $FE) -> $FE {
    if ($F_is_zero(a)) {
        return a;
    }
    return $F_sub($F_zero(), a);
}

// a·b·R^-1 (CIOS).
fn $F_mul(a_in: $FE, b_in: $FE) -> $FE {
    var a = a_in;
    var b = b_in;
    var p = $F_P;
    var t: array<u32, $N2>;
    for (var i = 0u; i < $LN; i++) {
        let bi = b[i];
        var c = 0u;
        for (var j = 0u; j < $LN; j++) {
            let r = mac(a[j], bi, t[j], c);
            t[j] = r.x;
            c = r.y;
        }
        let s = t[$N] + c;
        t[$N] = s;
        t[$N1] = select(0u, 1u, s < c);
        let m = t[0] * $F_INV;
        var r = mac(m, p[0], t[0], 0u);
        c = r.y;
        for (var j = 1u; j < $LN; j++) {
            r = mac(m, p[j], t[j], c);
            t[j - 1u] = r.x;
            c = r.y;
        }
        let s2 = t[$N] + c;
        t[$N - 1] = s2;
        t[$N] = t[$N1] + select(0u, 1u, s2 < c);
    }
    var res: $FE;
    for (var i = 0u; i < $LN; i++) {
        res[i] = t[i];
    }
    return $F_reduce(res);
}

fn $F_sqr(a: $FE) -> $FE {
    return $F_mul(a, a);
}

// Montgomery form -> canonical integer.
fn $F_from_mont(a: $FE) -> $FE {
    var one: $FE;
    one[0] = 1u;
    return $F_mul(a, one);
}
