// Short Weierstrass points y^2 = x^3 + b over $F ($C), a = 0.
//
// Affine points use blst's layout {x, y}; the identity is x = y = 0 (not on the curve since
// b != 0). Accumulators are extended Jacobian "XYZZ" (x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2) with
// the identity ZZ = 0; formulas add-2008-s, madd-2008-s, dbl-2008-s-1, mdbl-2008-s-1.

struct $CAff {
    x: $FE,
    y: $FE,
}

struct $CXyzz {
    X: $FE,
    Y: $FE,
    ZZ: $FE,
    ZZZ: $FE,
}

fn $C_inf() -> $CXyzz {
    return $CXyzz($F_zero(), $F_zero(), $F_zero(), $F_zero());
}

fn $C_is_inf(p: $CXyzz) -> bool {
    return $F_is_zero(p.ZZ);
}

fn $C_aff_is_inf(a: $CAff) -> bool {
    return $F_is_zero(a.x) && $F_is_zero(a.y);
}

// 2·P for an affine P != identity.
fn $C_dbl_affine(q: $CAff) -> $CXyzz {
    let U = $F_dbl(q.y);
    let V = $F_sqr(U);
    let W = $F_mul(U, V);
    let S = $F_mul(q.x, V);
    let xx = $F_sqr(q.x);
    let M = $F_add($F_dbl(xx), xx);
    let X3 = $F_sub($F_sub($F_sqr(M), S), S);
    let Y3 = $F_sub($F_mul(M, $F_sub(S, X3)), $F_mul(W, q.y));
    return $CXyzz(X3, Y3, V, W);
}

fn $C_dbl(p: $CXyzz) -> $CXyzz {
    if ($C_is_inf(p)) {
        return p;
    }
    let U = $F_dbl(p.Y);
    let V = $F_sqr(U);
    let W = $F_mul(U, V);
    let S = $F_mul(p.X, V);
    let xx = $F_sqr(p.X);
    let M = $F_add($F_dbl(xx), xx);
    let X3 = $F_sub($F_sub($F_sqr(M), S), S);
    let Y3 = $F_sub($F_mul(M, $F_sub(S, X3)), $F_mul(W, p.Y));
    return $CXyzz(X3, Y3, $F_mul(V, p.ZZ), $F_mul(W, p.ZZZ));
}

// P + Q with Q affine.
fn $C_add_affine(p: $CXyzz, q: $CAff) -> $CXyzz {
    if ($C_aff_is_inf(q)) {
        return p;
    }
    if ($C_is_inf(p)) {
        return $CXyzz(q.x, q.y, $F_one(), $F_one());
    }
    let U2 = $F_mul(q.x, p.ZZ);
    let S2 = $F_mul(q.y, p.ZZZ);
    let P = $F_sub(U2, p.X);
    let R = $F_sub(S2, p.Y);
    if ($F_is_zero(P)) {
        if ($F_is_zero(R)) {
            return $C_dbl_affine(q);
        }
        return $C_inf();
    }
    let PP = $F_sqr(P);
    let PPP = $F_mul(P, PP);
    let Q = $F_mul(p.X, PP);
    let X3 = $F_sub($F_sub($F_sub($F_sqr(R), PPP), Q), Q);
    let Y3 = $F_sub($F_mul(R, $F_sub(Q, X3)), $F_mul(p.Y, PPP));
    return $CXyzz(X3, Y3, $F_mul(p.ZZ, PP), $F_mul(p.ZZZ, PPP));
}

// P + Q, both XYZZ.
fn $C_add(p: $CXyzz, q: $CXyzz) -> $CXyzz {
    if ($C_is_inf(q)) {
        return p;
    }
    if ($C_is_inf(p)) {
        return q;
    }
    let U1 = $F_mul(p.X, q.ZZ);
    let U2 = $F_mul(q.X, p.ZZ);
    let S1 = $F_mul(p.Y, q.ZZZ);
    let S2 = $F_mul(q.Y, p.ZZZ);
    let P = $F_sub(U2, U1);
    let R = $F_sub(S2, S1);
    if ($F_is_zero(P)) {
        if ($F_is_zero(R)) {
            return $C_dbl(p);
        }
        return $C_inf();
    }
    let PP = $F_sqr(P);
    let PPP = $F_mul(P, PP);
    let Q = $F_mul(U1, PP);
    let X3 = $F_sub($F_sub($F_sub($F_sqr(R), PPP), Q), Q);
    let Y3 = $F_sub($F_mul(R, $F_sub(Q, X3)), $F_mul(S1, PPP));
    return $CXyzz(X3, Y3, $F_mul($F_mul(p.ZZ, q.ZZ), PP), $F_mul($F_mul(p.ZZZ, q.ZZZ), PPP));
}

// k·P for a small k (double and add, most significant bit first).
fn $C_mul_small(p: $CXyzz, k: u32) -> $CXyzz {
    if (k == 0u || $C_is_inf(p)) {
        return $C_inf();
    }
    var acc = p;
    let top = 31u - countLeadingZeros(k);
    for (var b = i32(top) - 1; b >= 0; b--) {
        acc = $C_dbl(acc);
        if (((k >> u32(b)) & 1u) != 0u) {
            acc = $C_add(acc, p);
        }
    }
    return acc;
}
