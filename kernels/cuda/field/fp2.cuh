// Fp2 = Fp[u] / (u^2 + 1), laid out as blst's blst_fp2: c0 then c1, each 12 limbs.

struct Fp2 {
    static constexpr int N = 24;  // limbs in total (for 128-bit loads and stores)
    Fp c0, c1;

    static DEV Fp2 zero() { return Fp2{Fp::zero(), Fp::zero()}; }
    static DEV Fp2 one() { return Fp2{Fp::one(), Fp::zero()}; }
    DEV bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    DEV bool eq(const Fp2& o) const { return c0.eq(o.c0) && c1.eq(o.c1); }
};

DEV Fp2 operator+(const Fp2& a, const Fp2& b) { return Fp2{a.c0 + b.c0, a.c1 + b.c1}; }
DEV Fp2 operator-(const Fp2& a, const Fp2& b) { return Fp2{a.c0 - b.c0, a.c1 - b.c1}; }
DEV Fp2 operator-(const Fp2& a) { return Fp2{-a.c0, -a.c1}; }
DEV Fp2 dbl(const Fp2& a) { return a + a; }

// p^2, 24 limbs.
DEV u32 fp_mod_squared(int i) {
    constexpr u32 M[24] = {0x1c718e39u, 0x26aa0000u, 0x76382eabu, 0x7ced6b1du, 0x62113cfdu, 0x162c3383u,
                           0x3e71b743u, 0x66bf91edu, 0x7091a049u, 0x292e85a8u, 0x86185c7bu, 0x1d68619cu,
                           0x0978ef01u, 0xf5314933u, 0x16ddca6eu, 0x50a62cfdu, 0x349e8bd0u, 0x66e59e49u,
                           0x0e7046b4u, 0xe2dc90e5u, 0xa22f25e9u, 0x4bd278eau, 0xb8c35fc7u, 0x02a437a4u};
    return M[i];
}

// Karatsuba with the reductions deferred (a real call, to keep G2 code size and compile time
// in check): the three 24-limb products a0·b0, a1·b1 and (a0 + a1)(b0 + b1) (plain sums below
// 2p), then c0 = a0·b0 - a1·b1 (plus p^2 when negative, so in [0, p^2)) and c1 = (a0 + a1)(b0
// + b1) - a0·b0 - a1·b1 (in [0, 4p^2)) reduced once each: both are below p·2^384, so each
// Montgomery reduction returns a value below 2p, reduced once more to below p. Two reductions
// instead of three, and no modular additions between them.
__device__ __noinline__ Fp2 operator*(Fp2 a, Fp2 b) {
    constexpr int N = FpParams::N;
    u32 t0[2 * N], t1[2 * N], t2[2 * N], sa[N], sb[N];
    limbs_mul_wide<N>(a.c0.v, b.c0.v, t0);
    limbs_mul_wide<N>(a.c1.v, b.c1.v, t1);
    limbs_add<N>(sa, a.c0.v, a.c1.v);
    limbs_add<N>(sb, b.c0.v, b.c1.v);
    limbs_mul_wide<N>(sa, sb, t2);
    limbs_sub<2 * N>(t2, t2, t0);
    limbs_sub<2 * N>(t2, t2, t1);
    u32 neg = 0u - limbs_sub<2 * N>(t0, t0, t1);
    t0[0] = add_cc(t0[0], fp_mod_squared(0) & neg);
#pragma unroll
    for (int i = 1; i < 2 * N; i++) t0[i] = addc_cc(t0[i], fp_mod_squared(i) & neg);
    return Fp2{mont_redc_wide<FpParams>(t0), mont_redc_wide<FpParams>(t2)};
}

// (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u: two Fp products.
__device__ __noinline__ Fp2 sqr(Fp2 a) {
    Fp t = a.c0 * a.c1;
    return Fp2{(a.c0 + a.c1) * (a.c0 - a.c1), t + t};
}

// (c0 + c1 u)^(-1) = (c0 - c1 u) / (c0^2 + c1^2); 0 for 0.
DEV Fp2 field_inv(const Fp2& a) {
    Fp n = sqr(a.c0) + sqr(a.c1);
    Fp i = field_inv(n);
    return Fp2{a.c0 * i, -(a.c1 * i)};
}

template <>
DEV Fp2 load_elem<Fp2>(const Fp2* p) {
    const Fp* q = reinterpret_cast<const Fp*>(p);
    return Fp2{load_elem<Fp>(q), load_elem<Fp>(q + 1)};
}

template <>
DEV void store_elem<Fp2>(Fp2* p, const Fp2& a) {
    Fp* q = reinterpret_cast<Fp*>(p);
    store_elem<Fp>(q, a.c0);
    store_elem<Fp>(q + 1, a.c1);
}
