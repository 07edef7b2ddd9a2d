// The formulas are written once as inlinable templates (*_impl). For G1 they are inlined into
// the kernels (the accumulator stays in registers); for G2, whose Fp2 formulas are several
// times larger, they are real calls (explicit specializations below), which keeps NVRTC's
// compile time in check at no measurable cost.
#define CURVE_FN __device__ __forceinline__

// Short Weierstrass points y^2 = x^3 + b over F (Fp for G1, Fp2 for G2).
//
// Affine points use blst's layout {x, y}; the identity is encoded as x = y = 0 (not on the
// curve, since b != 0). Accumulators use extended Jacobian "XYZZ" coordinates
// (x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2) with the identity encoded as ZZ = 0; the formulas are
// the add-2008-s / madd-2008-s / dbl-2008-s-1 / mdbl-2008-s-1 family for a = 0.

template <class F>
struct Affine {
    F x, y;
    DEV bool is_inf() const { return x.is_zero() && y.is_zero(); }
};

template <class F>
struct Xyzz {
    F X, Y, ZZ, ZZZ;

    static DEV Xyzz inf() { return Xyzz{F::zero(), F::zero(), F::zero(), F::zero()}; }
    DEV bool is_inf() const { return ZZ.is_zero(); }
    static DEV Xyzz from_affine(const Affine<F>& a) {
        if (a.is_inf()) return inf();
        return Xyzz{a.x, a.y, F::one(), F::one()};
    }
};

template <class F>
DEV Affine<F> load_affine(const Affine<F>* p) {
    const F* q = reinterpret_cast<const F*>(p);
    return Affine<F>{load_elem<F>(q), load_elem<F>(q + 1)};
}

template <class F>
DEV Xyzz<F> load_xyzz(const Xyzz<F>* p) {
    const F* q = reinterpret_cast<const F*>(p);
    return Xyzz<F>{load_elem<F>(q), load_elem<F>(q + 1), load_elem<F>(q + 2), load_elem<F>(q + 3)};
}

template <class F>
DEV void store_xyzz(Xyzz<F>* p, const Xyzz<F>& a) {
    F* q = reinterpret_cast<F*>(p);
    store_elem<F>(q, a.X);
    store_elem<F>(q + 1, a.Y);
    store_elem<F>(q + 2, a.ZZ);
    store_elem<F>(q + 3, a.ZZZ);
}

// 2·P for an affine P (not the identity, y != 0 in a prime-order group).
template <class F>
CURVE_FN Xyzz<F> xyzz_dbl_affine_impl(const Affine<F>& p) {
    F U = dbl(p.y);
    F V = sqr(U);
    F W = U * V;
    F S = p.x * V;
    F xx = sqr(p.x);
    F M = xx + xx + xx;
    F X3 = sqr(M) - S - S;
    F Y3 = M * (S - X3) - W * p.y;
    return Xyzz<F>{X3, Y3, V, W};
}

// 2·P in place.
template <class F>
CURVE_FN void xyzz_dbl_impl(Xyzz<F>& p) {
    if (p.is_inf()) return;
    F U = dbl(p.Y);
    F V = sqr(U);
    F W = U * V;
    F S = p.X * V;
    F xx = sqr(p.X);
    F M = xx + xx + xx;
    F X3 = sqr(M) - S - S;
    F Y3 = M * (S - X3) - W * p.Y;
    p.ZZ = V * p.ZZ;
    p.ZZZ = W * p.ZZZ;
    p.X = X3;
    p.Y = Y3;
}

// P += Q with Q affine.
template <class F>
CURVE_FN void xyzz_add_affine_impl(Xyzz<F>& p, const Affine<F>& q) {
    if (q.is_inf()) return;
    if (p.is_inf()) {
        p = Xyzz<F>{q.x, q.y, F::one(), F::one()};
        return;
    }
    F U2 = q.x * p.ZZ;
    F S2 = q.y * p.ZZZ;
    F P = U2 - p.X;
    F R = S2 - p.Y;
    if (P.is_zero()) {
        if (R.is_zero()) {
            p = xyzz_dbl_affine(q);
        } else {
            p = Xyzz<F>::inf();
        }
        return;
    }
    F PP = sqr(P);
    F PPP = P * PP;
    F Q = p.X * PP;
    F X3 = sqr(R) - PPP - Q - Q;
    F Y3 = R * (Q - X3) - p.Y * PPP;
    p.ZZ = p.ZZ * PP;
    p.ZZZ = p.ZZZ * PPP;
    p.X = X3;
    p.Y = Y3;
}

// P += Q, both XYZZ.
template <class F>
CURVE_FN void xyzz_add_impl(Xyzz<F>& p, const Xyzz<F>& q) {
    if (q.is_inf()) return;
    if (p.is_inf()) {
        p = q;
        return;
    }
    F U1 = p.X * q.ZZ;
    F U2 = q.X * p.ZZ;
    F S1 = p.Y * q.ZZZ;
    F S2 = q.Y * p.ZZZ;
    F P = U2 - U1;
    F R = S2 - S1;
    if (P.is_zero()) {
        if (R.is_zero()) {
            xyzz_dbl(p);
        } else {
            p = Xyzz<F>::inf();
        }
        return;
    }
    F PP = sqr(P);
    F PPP = P * PP;
    F Q = U1 * PP;
    F X3 = sqr(R) - PPP - Q - Q;
    F Y3 = R * (Q - X3) - S1 * PPP;
    p.ZZ = p.ZZ * q.ZZ * PP;
    p.ZZZ = p.ZZZ * q.ZZZ * PPP;
    p.X = X3;
    p.Y = Y3;
}

// k·P for a small non-negative k (double-and-add, most significant bit first).
template <class F>
CURVE_FN Xyzz<F> xyzz_mul_small_impl(const Xyzz<F>& p, u32 k) {
    Xyzz<F> acc = Xyzz<F>::inf();
    if (k == 0 || p.is_inf()) return acc;
    int top = 31 - __clz(k);
    acc = p;
    for (int b = top - 1; b >= 0; b--) {
        xyzz_dbl(acc);
        if ((k >> b) & 1) xyzz_add(acc, p);
    }
    return acc;
}

// Public entry points: inlined for G1 (F = Fp), out-of-line for G2 (F = Fp2).
template <class F>
DEV Xyzz<F> xyzz_dbl_affine(const Affine<F>& p) { return xyzz_dbl_affine_impl(p); }
template <class F>
DEV void xyzz_dbl(Xyzz<F>& p) { xyzz_dbl_impl(p); }
template <class F>
DEV void xyzz_add_affine(Xyzz<F>& p, const Affine<F>& q) { xyzz_add_affine_impl(p, q); }
template <class F>
DEV void xyzz_add(Xyzz<F>& p, const Xyzz<F>& q) { xyzz_add_impl(p, q); }
template <class F>
DEV Xyzz<F> xyzz_mul_small(const Xyzz<F>& p, u32 k) { return xyzz_mul_small_impl(p, k); }

template <>
__device__ __noinline__ Xyzz<Fp2> xyzz_dbl_affine<Fp2>(const Affine<Fp2>& p) { return xyzz_dbl_affine_impl(p); }
template <>
__device__ __noinline__ void xyzz_dbl<Fp2>(Xyzz<Fp2>& p) { xyzz_dbl_impl(p); }
template <>
__device__ __noinline__ void xyzz_add_affine<Fp2>(Xyzz<Fp2>& p, const Affine<Fp2>& q) { xyzz_add_affine_impl(p, q); }
template <>
__device__ __noinline__ void xyzz_add<Fp2>(Xyzz<Fp2>& p, const Xyzz<Fp2>& q) { xyzz_add_impl(p, q); }
template <>
__device__ __noinline__ Xyzz<Fp2> xyzz_mul_small<Fp2>(const Xyzz<Fp2>& p, u32 k) { return xyzz_mul_small_impl(p, k); }

// XYZZ -> Jacobian (X', Y', Z') with x = X'/Z'^2, y = Y'/Z'^3 and no inversion:
// Z' = ZZ·ZZZ, X' = X·ZZZ·Z', Y' = Y·ZZ·Z'^2. The identity (ZZ = 0) maps to Z' = 0, as blst
// expects.
template <class F>
CURVE_FN void xyzz_to_jacobian(const Xyzz<F>& p, F& X, F& Y, F& Z) {
    Z = p.ZZ * p.ZZZ;
    X = p.X * p.ZZZ * Z;
    Y = p.Y * p.ZZ * sqr(Z);
}
