// Montgomery products on the FP64 units. The NTT's twiddle products use them in the sm_90 build
// (CUZK_NTT_FP64, ntt.cu); the MSM does not: on the H200 the Fr product is 1.18× faster than the
// IMAD one and the Fp product 0.93× (`cuzk-cuda-kernels field`; docs/perf-cuda.md, "Decisions").
//
// The H200 has as many FP64 FMA lanes as 32-bit integer multiply lanes, and the IMAD products
// of mont.cuh leave them idle. Here the operands are cut into L limbs of 52 bits held in
// doubles, and each limb product a·b (< 2^104) is split exactly into its high and low 52 bits
// by two FMAs:
//
//   hi = fma_rz(a, b, 2^104)          = 2^104 + H·2^52,  H = floor(a·b / 2^52)
//   lo = fma(a, b, (2^104 + 2^52) - hi) = 2^52 + L,        L = a·b - H·2^52 < 2^52
//
// (a·b + 2^104 lies in [2^104, 2^105), where doubles are spaced 2^52 apart, so rounding toward
// zero floors it; the subtraction is exact, and lo lies in [2^52, 2^53), where doubles are the
// integers.) H and L are then the low 52 bits of the doubles' bit patterns, and the column
// sums, the Montgomery reduction's multiplier and the carries run in 64-bit integers.
//
// mont_mul_fp64 returns a·b·2^(-52L) mod p: the Montgomery radix is 2^260 for Fr and 2^416
// for Fp instead of the 2^256 and 2^384 of the 32-bit limbs, so a caller mixing the two must
// scale one operand (by 2^4 or 2^32 in Montgomery form) once, e.g. in a twiddle table.

#ifndef CUZK_HOST_EMULATION
DEV double fma_rz(double a, double b, double c) { return __fma_rz(a, b, c); }
DEV double fma_rn(double a, double b, double c) { return __fma_rn(a, b, c); }
DEV u64 double_bits(double x) { return (u64)__double_as_longlong(x); }
DEV double bits_double(u64 x) { return __longlong_as_double((long long)x); }
#endif

// 52-bit limbs of the moduli, and -p^(-1) mod 2^52.
template <class P>
struct Fp64Params;

template <>
struct Fp64Params<FrParams> {
    static constexpr int L = 5;
    static constexpr u64 PINV = 0xffffeffffffffull;
    static DEV double mod(int k) {
        constexpr u64 M[5] = {0xfffff00000001ull, 0x2fffe5bfefffull, 0x9a1d80553bda4ull, 0x7d483339d8080ull, 0x73eda753299dull};
        return (double)M[k];
    }
};

template <>
struct Fp64Params<FpParams> {
    static constexpr int L = 8;
    static constexpr u64 PINV = 0x3fffcfffcfffdull;
    static DEV double mod(int k) {
        constexpr u64 M[8] = {0xeffffffffaaabull, 0xfeb153ffffb9full, 0x6b0f6241eabffull, 0x12bf6730d2a0full,
                              0x764774b84f385ull, 0x1ba7b6434bacdull, 0x1ea397fe69a4bull, 0x1a011ull};
        return (double)M[k];
    }
};

#define FP64_M52 0xfffffffffffffull
// The bit patterns of 2^52 and 2^104: lo's pattern is 2^52's plus L, hi's is 2^104's plus H.
#define FP64_LO_BITS 0x4330000000000000ull
#define FP64_HI_BITS 0x4670000000000000ull

// The 52 bits of v (N 32-bit limbs) starting at bit pos, as an exact double.
template <int N>
DEV double limb52(const u32* v, int pos) {
    int w = pos >> 5, s = pos & 31;
    u64 x = (u64)v[w] >> s;
    if (w + 1 < N) x |= (u64)v[w + 1] << (32 - s);
    if (w + 2 < N && s > 12) x |= (u64)v[w + 2] << (64 - s);
    // 2^52 + x, minus 2^52: exact for x < 2^52.
    return bits_double(FP64_LO_BITS | (x & FP64_M52)) - 0x1.0p52;
}

// Adds a·b (a, b < 2^52 integers) into the columns: the low 52 bits to t[k], the high to
// t[k+1]. The doubles' whole bit patterns are added (no masking) and their constant parts are
// counted in corr (the same index arithmetic, folded to constants when unrolled), to be
// subtracted before a column is read; the sums wrap modulo 2^64, the differences are exact.
DEV void fma_split_add(double a, double b, u64* t, u64* corr, int k) {
    double hi = fma_rz(a, b, 0x1.0p104);
    double lo = fma_rn(a, b, (0x1.0p104 + 0x1.0p52) - hi);
    t[k] += double_bits(lo);
    corr[k] += FP64_LO_BITS;
    t[k + 1] += double_bits(hi);
    corr[k + 1] += FP64_HI_BITS;
}

// a·b·2^(-52L) mod p, for a, b < p.
template <class P>
DEV Mont<P> mont_mul_fp64(const Mont<P>& a, const Mont<P>& b) {
    constexpr int N = P::N;
    constexpr int L = Fp64Params<P>::L;
    double A[L], B[L];
#pragma unroll
    for (int k = 0; k < L; k++) {
        A[k] = limb52<N>(a.v, 52 * k);
        B[k] = limb52<N>(b.v, 52 * k);
    }
    u64 t[2 * L], corr[2 * L];
#pragma unroll
    for (int k = 0; k < 2 * L; k++) {
        t[k] = 0;
        corr[k] = 0;
    }
#pragma unroll
    for (int i = 0; i < L; i++) {
#pragma unroll
        for (int j = 0; j < L; j++) fma_split_add(A[i], B[j], t, corr, i + j);
    }
    // Reduction: row k adds m·p·2^(52k) with m making limb k zero, then carries limb k up.
#pragma unroll
    for (int k = 0; k < L; k++) {
        t[k] -= corr[k];
        corr[k] = 0;
        u64 m = ((t[k] & FP64_M52) * Fp64Params<P>::PINV) & FP64_M52;
        double md = bits_double(FP64_LO_BITS | m) - 0x1.0p52;
#pragma unroll
        for (int j = 0; j < L; j++) fma_split_add(md, Fp64Params<P>::mod(j), t, corr, k + j);
        t[k + 1] += (t[k] - corr[k]) >> 52;
    }
#pragma unroll
    for (int k = L; k < 2 * L; k++) t[k] -= corr[k];
#pragma unroll
    for (int k = L; k < 2 * L - 1; k++) {
        t[k + 1] += t[k] >> 52;
        t[k] &= FP64_M52;
    }
    // Limbs t[L..2L) (52 bits each) back to 32-bit limbs; the value is below 2p < 2^(32N).
    Mont<P> r;
#pragma unroll
    for (int i = 0; i < N; i++) r.v[i] = 0;
#pragma unroll
    for (int k = 0; k < L; k++) {
        u64 x = t[L + k];
        int pos = 52 * k, w = pos >> 5, s = pos & 31;
        if (w < N) r.v[w] |= (u32)(x << s);
        if (w + 1 < N) r.v[w + 1] |= (u32)(x >> (32 - s));
        if (w + 2 < N && s > 12) r.v[w + 2] |= (u32)(x >> (64 - s));
    }
    mont_reduce_once<P>(r.v);
    return r;
}
