// Montgomery arithmetic over the BLS12-381 fields with 32-bit limbs and PTX carry chains.
//
// Elements are little-endian arrays of 32-bit limbs in Montgomery form. Because
// R = 2^(32N) equals blst's R = 2^(64 N/2), the limbs are exactly the bytes of blstrs'
// `Scalar` (N = 8) and `Fp` (N = 12): no conversion on upload or download.
//
// A product is the full 2N-limb a·b (mont_mul; mont_sqr computes the cross products once),
// then a Montgomery reduction (mont_redc_wide for Fp, mont_redc for Fr), then one conditional
// subtraction (the reduction's result is below 2p < 2^(32N)). See "Products with pair-aligned
// accumulators" below for why the chains are laid out as they are.
//
// The file also compiles as host C++ with field/host_emulation.h included first
// (CUZK_HOST_EMULATION): backend-cuda/tests/host_field.rs checks the arithmetic that way
// without a GPU.

typedef unsigned int u32;
typedef unsigned long long u64;
typedef int i32;

#ifndef CUZK_HOST_EMULATION
#define DEV __device__ __forceinline__

// ---- PTX carry-chain primitives. They are volatile so the compiler keeps their order: the
// carry flag lives between consecutive statements.
DEV u32 add_cc(u32 a, u32 b) { u32 r; asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
DEV u32 addc_cc(u32 a, u32 b) { u32 r; asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
DEV u32 addc(u32 a, u32 b) { u32 r; asm volatile("addc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
DEV u32 sub_cc(u32 a, u32 b) { u32 r; asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
DEV u32 subc_cc(u32 a, u32 b) { u32 r; asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
DEV u32 subc(u32 a, u32 b) { u32 r; asm volatile("subc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
DEV u32 mad_lo_cc(u32 a, u32 b, u32 c) { u32 r; asm volatile("mad.lo.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r; }
DEV u32 madc_lo_cc(u32 a, u32 b, u32 c) { u32 r; asm volatile("madc.lo.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r; }
DEV u32 mad_hi_cc(u32 a, u32 b, u32 c) { u32 r; asm volatile("mad.hi.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r; }
DEV u32 madc_hi_cc(u32 a, u32 b, u32 c) { u32 r; asm volatile("madc.hi.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r; }
#endif

// ---- Field parameters.
struct FpParams {
    static constexpr int N = 12;
    static constexpr u32 INV = 0xfffcfffdu;
    static constexpr bool LOW_ONE_MINUS = false;
    static constexpr bool WIDE_REDC = true;
    static DEV u32 mod(int i) {
        constexpr u32 M[12] = {0xffffaaabu, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu, 0xf6b0f624u, 0x6730d2a0u,
                               0xf38512bfu, 0x64774b84u, 0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau};
        return M[i];
    }
    static DEV u32 one(int i) {
        constexpr u32 M[12] = {0x0002fffdu, 0x76090000u, 0xc40c0002u, 0xebf4000bu, 0x53c758bau, 0x5f489857u,
                               0x70525745u, 0x77ce5853u, 0xa256ec6du, 0x5c071a97u, 0xfa80e493u, 0x15f65ec3u};
        return M[i];
    }
    // R^3 mod p (R = 2^384): field_inv's way back to Montgomery form.
    static DEV u32 r3(int i) {
        constexpr u32 M[12] = {0xd94ca1e0u, 0xed48ac6bu, 0x03a7adf8u, 0x315f831eu, 0x615e29ddu, 0x9a53352au,
                               0x921e1761u, 0x34c04e5eu, 0x65724728u, 0x2512d435u, 0x91755d4du, 0x0aa63460u};
        return M[i];
    }
};

struct FrParams {
    static constexpr int N = 8;
    static constexpr u32 INV = 0xffffffffu;
    // r's low limbs are 1 and 2^32 - 1 (and INV = -1): see mont_mul's reduction.
    static constexpr bool LOW_ONE_MINUS = true;
    static constexpr bool WIDE_REDC = false;
    static DEV u32 mod(int i) {
        constexpr u32 M[8] = {0x00000001u, 0xffffffffu, 0xfffe5bfeu, 0x53bda402u,
                              0x09a1d805u, 0x3339d808u, 0x299d7d48u, 0x73eda753u};
        return M[i];
    }
    static DEV u32 one(int i) {
        constexpr u32 M[8] = {0xfffffffeu, 0x00000001u, 0x00034802u, 0x5884b7fau,
                              0xecbc4ff5u, 0x998c4fefu, 0xacc5056fu, 0x1824b159u};
        return M[i];
    }
    // R^3 mod r (R = 2^256).
    static DEV u32 r3(int i) {
        constexpr u32 M[8] = {0x439b73afu, 0xc62c1807u, 0x8cf06990u, 0x1b3e0d18u,
                              0xc7b5f418u, 0x73d13c71u, 0xc8db33e9u, 0x6e2a5bb9u};
        return M[i];
    }
};

// ---- A prime field element.
template <class P>
struct Mont {
    static constexpr int N = P::N;
    u32 v[N];

    static DEV Mont zero() {
        Mont r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = 0;
        return r;
    }
    static DEV Mont one() {
        Mont r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = P::one(i);
        return r;
    }
    DEV bool is_zero() const {
        u32 acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i];
        return acc == 0;
    }
    DEV bool eq(const Mont& o) const {
        u32 acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i] ^ o.v[i];
        return acc == 0;
    }
};

// r (< 2p) -> r mod p.
template <class P>
DEV void mont_reduce_once(u32* r) {
    constexpr int N = P::N;
    u32 s[N];
    s[0] = sub_cc(r[0], P::mod(0));
#pragma unroll
    for (int j = 1; j < N; j++) s[j] = subc_cc(r[j], P::mod(j));
    u32 borrow = subc(0, 0);  // all ones when r < p
#pragma unroll
    for (int j = 0; j < N; j++) r[j] = borrow ? r[j] : s[j];
}

template <class P>
DEV Mont<P> operator+(const Mont<P>& a, const Mont<P>& b) {
    constexpr int N = P::N;
    Mont<P> r;
    r.v[0] = add_cc(a.v[0], b.v[0]);
#pragma unroll
    for (int j = 1; j < N - 1; j++) r.v[j] = addc_cc(a.v[j], b.v[j]);
    r.v[N - 1] = addc(a.v[N - 1], b.v[N - 1]);
    mont_reduce_once<P>(r.v);
    return r;
}

template <class P>
DEV Mont<P> operator-(const Mont<P>& a, const Mont<P>& b) {
    constexpr int N = P::N;
    Mont<P> r;
    r.v[0] = sub_cc(a.v[0], b.v[0]);
#pragma unroll
    for (int j = 1; j < N; j++) r.v[j] = subc_cc(a.v[j], b.v[j]);
    u32 mask = subc(0, 0);
    r.v[0] = add_cc(r.v[0], P::mod(0) & mask);
#pragma unroll
    for (int j = 1; j < N - 1; j++) r.v[j] = addc_cc(r.v[j], P::mod(j) & mask);
    r.v[N - 1] = addc(r.v[N - 1], P::mod(N - 1) & mask);
    return r;
}

template <class P>
DEV Mont<P> operator-(const Mont<P>& a) {
    return Mont<P>::zero() - a;
}

template <class P>
DEV Mont<P> dbl(const Mont<P>& a) {
    return a + a;
}

// Montgomery reduction of a 2N-limb value below p·2^(32N): E/R mod p (E is clobbered). Row i
// adds m·p·2^(32i) as a chain of low halves and a chain of high halves.
template <class P>
DEV Mont<P> mont_redc(u32* E) {
    constexpr int N = P::N;
    // One limb per row.
    u32 pend = 0;  // carry waiting at position i + N
    if (P::LOW_ONE_MINUS) {
        // Fr: m = -t (INV = -1), and the first two limbs of m·r need no multiplier:
        // m·1 = m, and m·(2^32 - 1) = (m - [t != 0])·2^32 + t. Five fewer IMADs per row.
#pragma unroll
        for (int i = 0; i < N; i++) {
            u32 t = E[i];
            u32 m = 0u - t;
            u32 h1 = m - (t != 0u ? 1u : 0u);
            E[i] = add_cc(E[i], m);
            E[i + 1] = addc_cc(E[i + 1], t);
#pragma unroll
            for (int j = 2; j < N; j++) E[i + j] = madc_lo_cc(m, P::mod(j), E[i + j]);
            E[i + N] = addc_cc(E[i + N], pend);
            u32 c1 = addc(0, 0);
            E[i + 2] = add_cc(E[i + 2], h1);
#pragma unroll
            for (int j = 2; j < N; j++) E[i + j + 1] = madc_hi_cc(m, P::mod(j), E[i + j + 1]);
            pend = addc(c1, 0);
        }
        Mont<P> r;
#pragma unroll
        for (int j = 0; j < N; j++) r.v[j] = E[N + j];
        mont_reduce_once<P>(r.v);
        return r;
    }
#pragma unroll
    for (int i = 0; i < N; i++) {
        u32 m = E[i] * P::INV;
        E[i] = mad_lo_cc(m, P::mod(0), E[i]);
#pragma unroll
        for (int j = 1; j < N; j++) E[i + j] = madc_lo_cc(m, P::mod(j), E[i + j]);
        E[i + N] = addc_cc(E[i + N], pend);
        u32 c1 = addc(0, 0);
        E[i + 1] = mad_hi_cc(m, P::mod(0), E[i + 1]);
#pragma unroll
        for (int j = 1; j < N; j++) E[i + j + 1] = madc_hi_cc(m, P::mod(j), E[i + j + 1]);
        pend = addc(c1, 0);
    }
    Mont<P> r;
#pragma unroll
    for (int j = 0; j < N; j++) r.v[j] = E[N + j];
    mont_reduce_once<P>(r.v);
    return r;
}

// ---- Products with pair-aligned accumulators (default).
//
// On sm_80 and later, ptxas fuses a mad.lo.cc / madc.hi.cc pair that adds a_i·b_j into limbs
// (k, k+1) into one IMAD.WIDE.U32 with carry in and out, but only when the two limbs form an
// aligned register pair: limbs that start pairs at both parities cost register moves. So the
// product's chains add into two arrays whose pairs all start at even limbs (X) or all at odd
// limbs (Y): row i sends a_i·b_j to X when i + j is even and to Y when it is odd. The
// reduction rows do the same (mont_redc_wide). ptxas overlaps independent chains freely, and
// with more than seven in flight it spills their carry predicates through registers (P2R), so
// the reduction waits for the whole product and each reduction row for the row two before it.
// An Fp product went from about 1080 SASS instructions to 560, a square from 800 to 520
// (cuobjdump of the sm_90 image from NVRTC 11.8).

// Adds u·v_j·2^(32(i+j)) for every j ≡ j0 (mod 2), j < N, into A as one carry chain; the
// chain's carry goes into the limb above its last pair (dropped if beyond 'len' limbs). That
// limb must not be a full limb of an earlier row (it holds at most a carry): true for all
// callers, whose rows' last limbs never decrease. With Z, also returns the carry out of that
// limb, which is therefore always 0 (mont_redc_wide uses it to order rows).
template <int N, bool Z = false>
DEV u32 mad_chain(u32* A, int len, u32 u, const u32* v, int i, int j0) {
    if (j0 >= N) return 0;
    A[i + j0] = mad_lo_cc(u, v[j0], A[i + j0]);
    A[i + j0 + 1] = madc_hi_cc(u, v[j0], A[i + j0 + 1]);
    int top = i + j0 + 2;
#pragma unroll
    for (int j = j0 + 2; j < N; j += 2) {
        A[i + j] = madc_lo_cc(u, v[j], A[i + j]);
        A[i + j + 1] = madc_hi_cc(u, v[j], A[i + j + 1]);
        top = i + j + 2;
    }
    if (!Z) {
        if (top < len) A[top] = addc(A[top], 0);
        return 0;
    }
    if (top < len) A[top] = addc_cc(A[top], 0);
    return addc(0, 0);
}

// Reduction with pair-aligned rows (Fp).
// Row i adds m_i·p·2^(32i) into two fresh arrays, pairs at even limbs (X) and at odd limbs (Y);
// the low limb row i needs is T[i] + X[i] + Y[i] plus the carry c from the limbs below. Each
// chain's top carry-out z is always 0; row i + LAG takes it as an input so that ptxas cannot
// overlap more than LAG rows' chains (each holds a carry predicate).
template <class P>
DEV Mont<P> mont_redc_wide(const u32* T) {
    constexpr int N = P::N;
    constexpr int LAG = 2;
    u32 mod[N];
#pragma unroll
    for (int j = 0; j < N; j++) mod[j] = P::mod(j);
    u32 X[2 * N], Y[2 * N];
#pragma unroll
    for (int k = 0; k < 2 * N; k++) {
        X[k] = 0;
        Y[k] = 0;
    }
    u32 z[N];
    u32 c = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        u32 t = T[i] + X[i] + Y[i] + c;
        if (i >= LAG) t += z[i - LAG];
        u32 m = t * P::INV;
        u32 zx = mad_chain<N, true>(X, 2 * N, m, mod, i, i & 1);
        u32 zy = mad_chain<N, true>(Y, 2 * N, m, mod, i, 1 - (i & 1));
        z[i] = zx | zy;
        u64 s = (u64)T[i] + X[i] + Y[i] + c;
        c = (u32)(s >> 32);
    }
    Mont<P> r;
    u64 acc = c;
#pragma unroll
    for (int k = 0; k < N; k++) {
        acc += (u64)T[N + k] + X[N + k] + Y[N + k];
        r.v[k] = (u32)acc;
        acc >>= 32;
    }
    mont_reduce_once<P>(r.v);
    return r;
}
// The reduction each field uses: on the H200, Fp products are faster with the wide rows (G1
// MSM 2^24: 148 against 168 ms), Fr products with mont_redc's rows, which skip the multiplies
// for r's low limbs (NTT 2^24: 7.11 against 7.28 ms).
template <class P>
DEV Mont<P> mont_redc_prod(u32* T) {
    if (P::WIDE_REDC) return mont_redc_wide<P>(T);
    return mont_redc<P>(T);
}

// T[1..2N) = X[1..2N) + Y[1..2N) as one carry chain (T[0] is the caller's; the sum must fit in
// 2N limbs). With Z, returns the carry out of the top, which is therefore always 0.
template <int N, bool Z = false>
DEV u32 add_halves(const u32* X, const u32* Y, u32* T) {
    T[1] = add_cc(X[1], Y[1]);
#pragma unroll
    for (int k = 2; k < 2 * N - 1; k++) T[k] = addc_cc(X[k], Y[k]);
    if (!Z) {
        T[2 * N - 1] = addc(X[2 * N - 1], Y[2 * N - 1]);
        return 0;
    }
    T[2 * N - 1] = addc_cc(X[2 * N - 1], Y[2 * N - 1]);
    return addc(0, 0);
}

// r <- x + y over K limbs as one carry chain (the sum must fit).
template <int K>
DEV void limbs_add(u32* r, const u32* x, const u32* y) {
    r[0] = add_cc(x[0], y[0]);
#pragma unroll
    for (int i = 1; i < K - 1; i++) r[i] = addc_cc(x[i], y[i]);
    r[K - 1] = addc(x[K - 1], y[K - 1]);
}

// r <- x - y over K limbs as one borrow chain; returns the borrow (1 when x < y).
template <int K>
DEV u32 limbs_sub(u32* r, const u32* x, const u32* y) {
    r[0] = sub_cc(x[0], y[0]);
#pragma unroll
    for (int i = 1; i < K; i++) r[i] = subc_cc(x[i], y[i]);
    return subc(0, 0) & 1;
}

// The full product T = a·b (2N limbs, no reduction) of a, b < 2^(32N).
template <int N>
DEV void limbs_mul_wide(const u32* a, const u32* b, u32* T) {
    u32 X[2 * N], Y[2 * N];
#pragma unroll
    for (int k = 0; k < 2 * N; k++) {
        X[k] = 0;
        Y[k] = 0;
    }
#pragma unroll
    for (int i = 0; i < N; i++) {
        u32 ai = a[i];
        mad_chain<N>(X, 2 * N, ai, b, i, i & 1);
        mad_chain<N>(Y, 2 * N, ai, b, i, 1 - (i & 1));
    }
    // T = X + Y (Y[0] is 0; the product is below 2^(64N)). The carry out of the top is always
    // 0; adding it to T[0] makes the reduction wait for the whole product (otherwise ptxas
    // overlaps them and spills carry predicates).
    T[0] = X[0];
    T[0] += add_halves<N, true>(X, Y, T);
}

// Montgomery product a*b/R mod p.
template <class P>
DEV Mont<P> mont_mul(const Mont<P>& a, const Mont<P>& b) {
    u32 T[2 * P::N];
    limbs_mul_wide<P::N>(a.v, b.v, T);
    return mont_redc_prod<P>(T);
}

// Montgomery square a^2/R mod p: the cross products a_i·a_j (i < j) once, doubled by a
// one-bit shift, plus the squares a_i^2 (pairs at even limbs): 156 instead of 288 multiplies
// for Fp.
template <class P>
DEV Mont<P> mont_sqr(const Mont<P>& a) {
    constexpr int N = P::N;
    u32 X[2 * N], Y[2 * N];
#pragma unroll
    for (int k = 0; k < 2 * N; k++) {
        X[k] = 0;
        Y[k] = 0;
    }
    // Row i, j > i: limb i + j is even for j = i + 2, i + 4, ... and odd for j = i + 1, i + 3, ...
#pragma unroll
    for (int i = 0; i + 1 < N; i++) {
        u32 ai = a.v[i];
        mad_chain<N>(X, 2 * N, ai, a.v, i, i + 2);
        mad_chain<N>(Y, 2 * N, ai, a.v, i, i + 1);
    }
    u32 T[2 * N];
    T[0] = 0;
    add_halves<N>(X, Y, T);
#pragma unroll
    for (int k = 2 * N - 1; k > 0; k--) T[k] = __funnelshift_l(T[k - 1], T[k], 1);
    T[0] = mad_lo_cc(a.v[0], a.v[0], 0u);
    T[1] = madc_hi_cc(a.v[0], a.v[0], T[1]);
#pragma unroll
    for (int i = 1; i < N; i++) {
        T[2 * i] = madc_lo_cc(a.v[i], a.v[i], T[2 * i]);
        T[2 * i + 1] = madc_hi_cc(a.v[i], a.v[i], T[2 * i + 1]);
    }
    T[0] += addc(0, 0);  // 0; the reduction waits for the whole square (see mont_mul)
    return mont_redc_prod<P>(T);
}

// Fr products are inlined (the NTT's inner loop); Fp products are real calls: a 12-limb
// product is ~560 instructions, so the call is cheap, and inlining every one of them into
// the curve formulas makes NVRTC's compile time explode.
// Operands by value: a non-inlined call then passes them in registers, not through the stack.
template <class P>
DEV Mont<P> operator*(Mont<P> a, Mont<P> b) {
    return mont_mul<P>(a, b);
}

template <>
__device__ __noinline__ Mont<FpParams> operator*<FpParams>(Mont<FpParams> a, Mont<FpParams> b) {
    return mont_mul<FpParams>(a, b);
}

template <class P>
DEV Mont<P> sqr(Mont<P> a) {
    return mont_sqr<P>(a);
}

template <>
__device__ __noinline__ Mont<FpParams> sqr<FpParams>(Mont<FpParams> a) {
    return mont_sqr<FpParams>(a);
}

// Montgomery form -> canonical integer (multiply by 1, i.e. divide by R).
template <class P>
DEV Mont<P> from_mont(const Mont<P>& a) {
    Mont<P> one_int = Mont<P>::zero();
    one_int.v[0] = 1;
    return a * one_int;
}

// ---- Inversion, one per thread (variable time): the MSM's batch inversions end in a few
// thousand of these, one round's latency each, where a Fermat power's ~570 dependent products
// would be pure latency. field_inv (below) is the binary GCD on approximations; the binary
// extended Euclid here (each step subtracts the smaller of U, V from the larger and strips all
// factors of 2 at once, dividing its coefficient by 2^k mod p in one go) is its fallback.

template <int N>
DEV bool limbs_is_one(const u32* x) {
    u32 acc = x[0] ^ 1u;
#pragma unroll
    for (int i = 1; i < N; i++) acc |= x[i];
    return acc == 0;
}

// x <- x / 2^k mod p for x < p and 0 < k < 32: m = -x·p^(-1) mod 2^k makes x + m·p divisible
// by 2^k, and (x + m·p) / 2^k < 2p.
template <class P>
DEV void div2k_mod(Mont<P>& xm, u32 k) {
    constexpr int N = P::N;
    u32* x = xm.v;
    u32 m = (x[0] * P::INV) & ((1u << k) - 1);
    u32 t[N + 1];
    u64 carry = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        u64 s = (u64)m * P::mod(i) + x[i] + carry;
        t[i] = (u32)s;
        carry = s >> 32;
    }
    t[N] = (u32)carry;
#pragma unroll
    for (int i = 0; i < N; i++) x[i] = (t[i] >> k) | (t[i + 1] << (32 - k));
    mont_reduce_once<P>(x);
}

// Strips the factors of 2 of u (u != 0), dividing x by the same power of 2 mod p.
template <class P>
DEV void strip_twos(u32* u, Mont<P>& x) {
    constexpr int N = P::N;
    while (!(u[0] & 1)) {
        u32 k = u[0] ? (u32)__ffs(u[0]) - 1 : 31;
#pragma unroll
        for (int i = 0; i < N - 1; i++) u[i] = (u[i] >> k) | (u[i + 1] << (32 - k));
        u[N - 1] >>= k;
        div2k_mod<P>(x, k);
    }
}

// a^(-1) in Montgomery form from r = (aR)^(-1) mod p, the inverse of the integer the limbs of
// a hold: r·R^3 / R.
template <class P>
DEV Mont<P> inverse_to_mont(const Mont<P>& r) {
    Mont<P> r3;
#pragma unroll
    for (int i = 0; i < P::N; i++) r3.v[i] = P::r3(i);
    return r * r3;
}

// (aR)^(-1) mod p for the integer aR the limbs hold (0 for 0): the loop keeps x1·u = U and
// x2·u = V (mod p) while U and V shrink to 1. field_inv's fallback, should its loop not end.
template <class P>
DEV Mont<P> field_inv_euclid(const Mont<P>& a) {
    constexpr int N = P::N;
    if (a.is_zero()) return a;
    u32 U[N], V[N], d[N];
    Mont<P> x1 = Mont<P>::zero(), x2 = Mont<P>::zero();
#pragma unroll
    for (int i = 0; i < N; i++) {
        U[i] = a.v[i];
        V[i] = P::mod(i);
    }
    x1.v[0] = 1;
    strip_twos<P>(U, x1);
    // U and V are odd here and at the top of every step; gcd(U, V) = 1, so U = V only at 1.
    // x1 and x2 are plain integers below p, so the field's subtraction is theirs mod p.
    while (!limbs_is_one<N>(U) && !limbs_is_one<N>(V)) {
        if (!limbs_sub<N>(d, U, V)) {
#pragma unroll
            for (int i = 0; i < N; i++) U[i] = d[i];
            x1 = x1 - x2;
            strip_twos<P>(U, x1);
        } else {
            limbs_sub<N>(V, V, U);
            x2 = x2 - x1;
            strip_twos<P>(V, x2);
        }
    }
    return limbs_is_one<N>(U) ? x1 : x2;
}

// ---- The inversion the MSM uses: the binary GCD with approximations (T. Pornin, "Optimized
// Binary GCD for Modular Inversion", 2020, Algorithm 2), variable time. Each outer step runs
// INV_STEPS binary-GCD steps on 62-bit approximations of a and b (their low INV_STEPS bits and
// their top 32 bits), collecting the steps as factors f, g (|f| + |g| <= 2^INV_STEPS), then
// applies them to the full a, b and to their coefficients u, v: a few hundred instructions an
// outer step instead of a pass over all N limbs for every bit. With y the integer inverted,
// a = u·y and b = v·y (mod p) throughout (u and v are divided by 2^INV_STEPS mod p at each
// outer step, as a and b are exactly), so once a reaches 0, b = gcd = 1 and v = y^(-1).
#define INV_STEPS 30

// f·x + g·y for x, y < 2^(32N), as N + 1 two's-complement limbs (|f| + |g| <= 2^30).
template <int N>
DEV void limbs_lin_comb(u32* t, const u32* x, const u32* y, i32 f, i32 g) {
    long long carry = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        long long s = (long long)f * x[i] + (long long)g * y[i] + carry;
        t[i] = (u32)s;
        carry = s >> 32;
    }
    t[N] = (u32)carry;
}

// out <- |f·x + g·y| / 2^INV_STEPS (the division is exact); returns whether f·x + g·y < 0.
template <int N>
DEV bool limbs_lin_comb_shift(u32* out, const u32* x, const u32* y, i32 f, i32 g) {
    u32 t[N + 1];
    limbs_lin_comb<N>(t, x, y, f, g);
    bool neg = (i32)t[N] < 0;
    if (neg) {
        u32 borrow = 0;
#pragma unroll
        for (int i = 0; i <= N; i++) {
            u64 d = (u64)0 - t[i] - borrow;
            t[i] = (u32)d;
            borrow = (u32)(d >> 63);
        }
    }
#pragma unroll
    for (int i = 0; i < N; i++) out[i] = (t[i] >> INV_STEPS) | (t[i + 1] << (32 - INV_STEPS));
    return neg;
}

// (f·x + g·y) / 2^INV_STEPS mod p for x, y < p.
template <class P>
DEV void mod_lin_comb(u32* out, const u32* x, const u32* y, i32 f, i32 g) {
    constexpr int N = P::N;
    u32 t[N + 1];
    limbs_lin_comb<N>(t, x, y, f, g);
    // |t| < 2^30·p (|f| + |g| <= 2^30): adding 2^30·p when negative leaves it in [0, 2^30·p).
    u32 add = (i32)t[N] < 0 ? 0xffffffffu : 0u;
    u32 carry = 0;
#pragma unroll
    for (int i = 0; i <= N; i++) {
        u32 lo = i < N ? P::mod(i) << INV_STEPS : 0u;
        u32 hi = i > 0 ? P::mod(i - 1) >> (32 - INV_STEPS) : 0u;
        u64 s = (u64)t[i] + ((lo | hi) & add) + carry;
        t[i] = (u32)s;
        carry = (u32)(s >> 32);
    }
    // Montgomery's division by 2^INV_STEPS: m·p clears the low bits; (t + m·p) / 2^30 < 2p.
    u32 m = (t[0] * P::INV) & ((1u << INV_STEPS) - 1);
    u64 c = 0;
#pragma unroll
    for (int i = 0; i <= N; i++) {
        u64 s = (u64)t[i] + (i < N ? (u64)m * P::mod(i) : 0ull) + c;
        t[i] = (u32)s;
        c = s >> 32;
    }
#pragma unroll
    for (int i = 0; i < N; i++) out[i] = (t[i] >> INV_STEPS) | (t[i + 1] << (32 - INV_STEPS));
    mont_reduce_once<P>(out);
}

// a^(-1) in Montgomery form (0 for 0): the inverse of the integer aR, times R^3 (mod p).
template <class P>
DEV Mont<P> field_inv(const Mont<P>& a) {
    constexpr int N = P::N;
    if (a.is_zero()) return a;
    u32 A[N], B[N], U[N], V[N];
#pragma unroll
    for (int i = 0; i < N; i++) {
        A[i] = a.v[i];
        B[i] = P::mod(i);
        U[i] = i == 0;
        V[i] = 0;
    }
    // Every outer step takes len(a) + len(b) down by about INV_STEPS bits from 2·len(p): the
    // most seen in 400,000 inverses each were 26 steps for Fp and 17 for Fr, the binary GCD's
    // ceil((2·len(p) - 1) / INV_STEPS). The fallback after 4N is a guard, not a path any input
    // is known to take.
    for (int outer = 0; outer < 4 * N; outer++) {
        u32 any = 0;
#pragma unroll
        for (int i = 0; i < N; i++) any |= A[i];
        if (!any) {
            Mont<P> r;
#pragma unroll
            for (int i = 0; i < N; i++) r.v[i] = V[i];
            return inverse_to_mont<P>(r);
        }
        // Approximations: the low 30 bits, then bits [n - 32, n) for n = max(len(a), len(b),
        // 62) (exact once a, b < 2^62). The top nonzero limb of a | b and the one below it by
        // selects, not by indexing (which would put A and B in local memory).
        u32 top = 0, ab = 0, a1 = 0, a0 = 0, b1 = 0, b0 = 0;
#pragma unroll
        for (int i = 1; i < N; i++) {
            bool nz = (A[i] | B[i]) != 0;
            top = nz ? i : top;
            ab = nz ? A[i] | B[i] : ab;
            a1 = nz ? A[i] : a1;
            a0 = nz ? A[i - 1] : a0;
            b1 = nz ? B[i] : b1;
            b0 = nz ? B[i - 1] : b0;
        }
        u32 sh = __clz(ab), ta, tb;
        if (top == 0 || (top == 1 && sh >= 2)) {
            ta = (A[1] << (32 - INV_STEPS)) | (A[0] >> INV_STEPS);  // n <= 62: bits [30, 62)
            tb = (B[1] << (32 - INV_STEPS)) | (B[0] >> INV_STEPS);
        } else {
            ta = sh ? (a1 << sh) | (a0 >> (32 - sh)) : a1;
            tb = sh ? (b1 << sh) | (b0 >> (32 - sh)) : b1;
        }
        u64 xa = ((u64)ta << INV_STEPS) | (A[0] & ((1u << INV_STEPS) - 1));
        u64 xb = ((u64)tb << INV_STEPS) | (B[0] & ((1u << INV_STEPS) - 1));
        i32 f0 = 1, g0 = 0, f1 = 0, g1 = 1;
        // The steps as selects, so the lanes of a warp do not diverge.
#pragma unroll
        for (int j = 0; j < INV_STEPS; j++) {
            bool odd = xa & 1, swap = odd && xa < xb;
            u64 sa = swap ? xb : xa, sb = swap ? xa : xb;
            i32 tf0 = swap ? f1 : f0, tg0 = swap ? g1 : g0, tf1 = swap ? f0 : f1, tg1 = swap ? g0 : g1;
            xa = (odd ? sa - sb : sa) >> 1;
            xb = sb;
            f0 = odd ? tf0 - tf1 : tf0;
            g0 = odd ? tg0 - tg1 : tg0;
            f1 = tf1 << 1;
            g1 = tg1 << 1;
        }
        u32 na[N], nb[N];
        if (limbs_lin_comb_shift<N>(na, A, B, f0, g0)) {
            f0 = -f0;
            g0 = -g0;
        }
        if (limbs_lin_comb_shift<N>(nb, A, B, f1, g1)) {
            f1 = -f1;
            g1 = -g1;
        }
        u32 nu[N], nv[N];
        mod_lin_comb<P>(nu, U, V, f0, g0);
        mod_lin_comb<P>(nv, U, V, f1, g1);
#pragma unroll
        for (int i = 0; i < N; i++) {
            A[i] = na[i];
            B[i] = nb[i];
            U[i] = nu[i];
            V[i] = nv[i];
        }
    }
#ifdef CUZK_HOST_EMULATION
    return Mont<P>::zero();  // the host tests (host_field.rs) fail should any input get here
#else
    return inverse_to_mont<P>(field_inv_euclid<P>(a));
#endif
}

typedef Mont<FpParams> Fp;
typedef Mont<FrParams> Fr;

// ---- Loads and stores of whole elements through 128-bit accesses.
template <class F>
DEV F load_elem(const F* p) {
    F r;
    const uint4* q = reinterpret_cast<const uint4*>(p);
#pragma unroll
    for (int i = 0; i < F::N / 4; i++) {
        uint4 t = q[i];
        r.v[4 * i] = t.x;
        r.v[4 * i + 1] = t.y;
        r.v[4 * i + 2] = t.z;
        r.v[4 * i + 3] = t.w;
    }
    return r;
}

template <class F>
DEV void store_elem(F* p, const F& a) {
    uint4* q = reinterpret_cast<uint4*>(p);
#pragma unroll
    for (int i = 0; i < F::N / 4; i++) q[i] = make_uint4(a.v[4 * i], a.v[4 * i + 1], a.v[4 * i + 2], a.v[4 * i + 3]);
}
