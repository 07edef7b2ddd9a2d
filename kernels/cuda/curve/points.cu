// Curve and subgroup checks of decoded affine points: what a parameter file validated in full
// asks of every point (backend-cuda/src/points.rs, `Backend::first_invalid_g1/g2`), one thread
// a point. The answers are blst's (blst_p1_affine_on_curve, blst_p1_affine_in_g1 and their G2
// counterparts), which backend-cuda/tests/points.rs checks on the host (this file compiles as
// host C++ under CUZK_HOST_EMULATION) and on the GPU.
//
// G1 (Scott, "A note on group membership tests for G1, G2 and GT on BLS pairing-friendly
// curves", eprint 2021/1130, as blst): with z = -0xd201000000010000 the curve's seed and
// φ(x, y) = (γ·x, y) for the cube root of unity γ below, a point P of E(Fp) lies in G1 iff
// φ(P) = [-z²]P. Sound for every point of the curve: φ² + φ + 1 = 0, so φ(P) = [λ]P with
// λ = -z² gives [λ² + λ + 1]P = [z⁴ - z² + 1]P = [r]P = 0. Computed as [z²]P (128 bits,
// double-and-add with P added in affine form) against (γ·x, -y).
//
// G2 (the same paper; El Housni, Guillevic, Piellard, eprint 2022/352, prove it for BLS12): with
// ψ the untwist-Frobenius-twist endomorphism, P ∈ G2 iff ψ(P) = [z]P, computed as [|z|]P
// against (ψ(P).x, -ψ(P).y).
//
// Every point is also checked on the curve (y² = x³ + b; G1: b = 4, G2: b = 4(1 + u)) and not
// the identity (x = y = 0, blst's affine encoding of it). Coordinates are reduced Montgomery
// limbs, as blstrs keeps them.

#define POINTS_BLOCK 128

// A point's status: valid, the identity, or off the curve or outside the subgroup.
#define POINT_VALID 0u
#define POINT_IDENTITY 1u
#define POINT_INVALID 2u

// z² = 0xac45a4010001a402_0000000100000000 (128 bits) and |z|.
#define Z2_HI 0xac45a4010001a402ull
#define Z2_LO 0x0000000100000000ull
#define Z_ABS 0xd201000000010000ull

DEV Fp fp_from_limbs(const u32* c) {
    Fp r;
#pragma unroll
    for (int i = 0; i < 12; i++) r.v[i] = c[i];
    return r;
}

// γ, a primitive cube root of unity in Fp with [z²]P = (γ·x, -y) on G1, in Montgomery form.
DEV Fp g1_gamma() {
    constexpr u32 C[12] = {0x798a64e8u, 0x30f1361bu, 0x7ece5a2au, 0xf3b8ddabu, 0xc61577f7u, 0x16a8ca3au,
                           0x74fd029bu, 0xc26a2ff8u, 0x60701c6eu, 0x3636b766u, 0x241b6160u, 0x051ba4abu};
    return fp_from_limbs(C);
}

// ψ(x, y) = (conj(x)·ψx, conj(y)·ψy), with ψx = 1/(1 + u)^((p-1)/3) and ψy = 1/(1 + u)^((p-1)/2)
// (blst's psi, Montgomery form).
DEV Fp2 g2_psi_x() {
    constexpr u32 C1[12] = {0x867545c3u, 0x890dc9e4u, 0x3285a5d5u, 0x2af32253u, 0x309b7e2cu, 0x50880866u,
                            0x7e881024u, 0xa20d1b8cu, 0xe2db9068u, 0x14e4f04fu, 0x1564853au, 0x14e56d3fu};
    return Fp2{Fp::zero(), fp_from_limbs(C1)};
}

DEV Fp2 g2_psi_y() {
    constexpr u32 C0[12] = {0xa55c9ad1u, 0x3e2f585du, 0x86c18183u, 0x4294213du, 0x8b623732u, 0x382844c8u,
                            0x19103e18u, 0x92ad2afdu, 0xac7cf0b9u, 0x1d794e4fu, 0x7d825ec8u, 0x0bd592fcu};
    constexpr u32 C1[12] = {0x5aa30fdau, 0x7bcfa7a2u, 0x2a927e7cu, 0xdc17dec1u, 0x6b4ebef1u, 0x2f088dd8u,
                            0xda74d4a7u, 0xd1ca2087u, 0x96cebc1du, 0x2da25966u, 0xbbfd87d2u, 0x0e2b7eedu};
    return Fp2{fp_from_limbs(C0), fp_from_limbs(C1)};
}

DEV Fp fp_four() {
    Fp two = dbl(Fp::one());
    return dbl(two);
}

template <class F>
DEV bool affine_on_curve(const Affine<F>& p, const F& b) {
    return sqr(p.y).eq(sqr(p.x) * p.x + b);
}

// Whether the XYZZ point q (x = X/ZZ, y = Y/ZZZ) equals the affine (x, -y): q is not the
// identity, X = x·ZZ and Y + y·ZZZ = 0.
template <class F>
DEV bool xyzz_is_neg_of(const Xyzz<F>& q, const F& x, const F& y) {
    return !q.is_inf() && q.X.eq(x * q.ZZ) && (q.Y + y * q.ZZZ).is_zero();
}

DEV u32 point_status(const Affine<Fp>& p) {
    if (p.is_inf()) return POINT_IDENTITY;
    if (!affine_on_curve(p, fp_four())) return POINT_INVALID;
    // [z²]P, the top bit (127) set by starting from P.
    Xyzz<Fp> q = Xyzz<Fp>::from_affine(p);
#pragma unroll 1
    for (int i = 126; i >= 0; i--) {
        xyzz_dbl(q);
        u64 w = i >= 64 ? Z2_HI : Z2_LO;
        if ((w >> (i & 63)) & 1) xyzz_add_affine(q, p);
    }
    return xyzz_is_neg_of(q, p.x * g1_gamma(), p.y) ? POINT_VALID : POINT_INVALID;
}

DEV Fp2 fp2_conj(const Fp2& a) { return Fp2{a.c0, -a.c1}; }

DEV u32 point_status(const Affine<Fp2>& p) {
    if (p.is_inf()) return POINT_IDENTITY;
    Fp four = fp_four();
    if (!affine_on_curve(p, Fp2{four, four})) return POINT_INVALID;
    // [|z|]P, the top bit (63) set by starting from P.
    Xyzz<Fp2> q = Xyzz<Fp2>::from_affine(p);
#pragma unroll 1
    for (int i = 62; i >= 0; i--) {
        xyzz_dbl(q);
        if ((Z_ABS >> i) & 1) xyzz_add_affine(q, p);
    }
    return xyzz_is_neg_of(q, fp2_conj(p.x) * g2_psi_x(), fp2_conj(p.y) * g2_psi_y()) ? POINT_VALID : POINT_INVALID;
}

#ifndef CUZK_HOST_EMULATION
// Points base + i for i < n (pts[i]); the lowest failing one lowers *first to
// (base + i)·2 + (1 if off the curve or outside the subgroup, 0 if the identity) by atomicMin
// (the host sets it to all ones, so it stays there when every point passes). A block whose
// points all lie above a failure already found skips its checks.
template <class F>
DEV void check_points(const Affine<F>* __restrict__ pts, u32 n, u64 base, u64* first) {
    const u32 i = blockIdx.x * POINTS_BLOCK + threadIdx.x;
    if (i >= n) return;
    if (*(volatile u64*)first < ((base + (u64)blockIdx.x * POINTS_BLOCK) << 1)) return;
    u32 s = point_status(load_affine<F>(pts + i));
    if (s != POINT_VALID) atomicMin(first, ((base + i) << 1) | (s == POINT_INVALID ? 1ull : 0ull));
}

extern "C" __global__ void __launch_bounds__(POINTS_BLOCK) check_points_g1(const Affine<Fp>* __restrict__ pts, u32 n, u64 base, u64* first) {
    check_points<Fp>(pts, n, base, first);
}

extern "C" __global__ void __launch_bounds__(POINTS_BLOCK) check_points_g2(const Affine<Fp2>* __restrict__ pts, u32 n, u64 base, u64* first) {
    check_points<Fp2>(pts, n, base, first);
}
#endif
