// Number-theoretic transforms over Fr.
//
// A transform of size n = 2^K runs as a few passes (at most 10 radix-2 stages each, in shared
// memory). Decimation in frequency (DIF: natural order in, bit-reversed order out) runs its
// passes from the largest stride to stride 1; each pass does a size-2^B DFT on the groups
// {x2 + j·2^(L-B)} of a sub-problem of size 2^L and then multiplies slot j by
// w_(2^L)^(x2·brev_B(j)) (the "four-step" twiddle). Decimation in time (DIT: bit-reversed in,
// natural out) is its transpose: the same passes in reverse order, each multiplying by the same
// twiddles first and then running the transposed (Cooley-Tukey) butterflies.
//
// Roots: tw_lo[j] = w^j and tw_hi[j] = w^(j·2^16) for j < 2^16, w a primitive 2^32-th root of
// unity (blstrs' ROOT_OF_UNITY), so a product by w_(2^L)^e = w^(e·2^(32-L)) is at most two
// products by table entries, and the inverse root uses the negated exponent (mod 2^32) on the
// same tables. Coset powers come from the same kind of tables for g and 1/g.
//
// Measured on the H200 (docs/perf-cuda.md, "Decisions"): holding the tables as the FP64
// product's limbs (no conversion of the twiddle operand) and taking two stages per shared-memory
// round trip (radix 4 in registers) each changed a 2^24 transform by under 1%; the passes are
// not bound by the products' instruction count alone.

#define NTT_LOG_ELEMS 10  // elements per block: 2^10 Fr = 32 KiB of shared memory

DEV u32 brev_bits(u32 x, u32 bits) { return bits == 0 ? 0 : (__brev(x) >> (32 - bits)); }

// Products by twiddles and scaling constants. With CUZK_NTT_FP64 they run on the FP64 units
// (field/fp64_mont.cuh), whose Montgomery radix is 2^260 rather than 2^256: every table entry
// and scaling constant is then stored times 2^4 (ntt_pow_table with scale16, and the host for
// the constants), which that product divides out again. Products of two table entries stay
// scaled, products with data come out unscaled.
// The backend builds sm_90 images this way (device::kernel_defines): on the H200, 2^24
// transforms took 6.85 against 7.10 ms (docs/perf-cuda.md, "Decisions"). The FP64 product
// alone needs 72 registers, and is then no faster (7.05 ms): the FP64 build caps ntt_pass at 64
// registers, as many as the IMAD build uses (60), for 8 blocks of 128 threads per
// multiprocessor (shared memory allows 7). Other GPUs have far fewer FP64 units and keep the
// IMAD build.
// (Macros, so that the IMAD build compiles exactly the expressions it always has.)
#ifdef CUZK_NTT_FP64
#define TW_MUL(x, t) mont_mul_fp64((x), (t))
#define NTT_BOUNDS __launch_bounds__(128, 8)
#else
#define TW_MUL(x, t) ((x) * (t))
#define NTT_BOUNDS
#endif

// x·t[i], t a root table.
DEV Fr tw_mul(const Fr& x, const Fr* table, u32 i) { return TW_MUL(x, load_elem<Fr>(table + i)); }

// x·w^E, w the 2^32-th root of unity (E taken mod 2^32), as x·w^(E_hi·2^16)·w^(E_lo): one
// product per nonzero half of E.
DEV Fr mul_root_pow(Fr x, const Fr* tw_lo, const Fr* tw_hi, u32 E) {
    if (E >> 16) x = tw_mul(x, tw_hi, E >> 16);
    if (E & 0xffffu) x = tw_mul(x, tw_lo, E & 0xffffu);
    return x;
}

// Scaling applied on load / store: bit 0: multiply by the constant c; bit 1: multiply by
// gen^e with gen's tables (g_lo, g_hi), where e is the position, or (bit 2) the K-bit reversal
// of the position.
#define SCALE_CONST 1u
#define SCALE_POW 2u
#define SCALE_BREV 4u

DEV Fr apply_scale(Fr x, u32 mode, u32 pos, u32 K, const Fr& c, const Fr* g_lo, const Fr* g_hi) {
    if (mode & SCALE_POW) {
        u32 e = (mode & SCALE_BREV) ? brev_bits(pos, K) : pos;
        Fr gp = load_elem<Fr>(g_lo + (e & 0xffffu));
        if (e >> 16) gp = TW_MUL(gp, load_elem<Fr>(g_hi + (e >> 16)));
        x = TW_MUL(x, gp);
    }
    if (mode & SCALE_CONST) x = TW_MUL(x, c);
    return x;
}

struct FrArg {
    u32 v[8];
};

DEV Fr fr_from_arg(const FrArg& a) {
    Fr r;
#pragma unroll
    for (int i = 0; i < 8; i++) r.v[i] = a.v[i];
    return r;
}

// x·w_(2^(lh+1))^t = x·w^(t·2^(31-lh)), w the 2^32-th root; lh <= 15, so the exponent's low 16
// bits are 0 and tw_hi alone holds the root.
DEV Fr mul_stage_twiddle(const Fr& x, const Fr* tw_hi, u32 t, u32 lh, u32 dir_inv) {
    u32 E = t << (31 - lh);
    if (dir_inv) E = 0u - E;
    return tw_mul(x, tw_hi, E >> 16);
}

// One radix-2 butterfly stage of half-size h = 2^lh on the groups of 2^B elements held in shared
// memory: DIF (Gentleman-Sande) multiplies the difference by the twiddle, DIT (Cooley-Tukey)
// multiplies the upper input first. Ends with __syncthreads().
template <bool DIT>
DEV void butterfly_stage(Fr* sm, u32 lh, u32 B, u32 nbfly, u32 dir_inv, const Fr* tw_hi) {
    const u32 h = 1u << lh, half = 1u << (B - 1);
    for (u32 q = threadIdx.x; q < nbfly; q += blockDim.x) {
        u32 g = q >> (B - 1), r = q & (half - 1);
        u32 t = r & (h - 1);
        u32 i0 = (g << B) + ((r >> lh) << (lh + 1)) + t;
        u32 i1 = i0 + h;
        Fr u = load_elem<Fr>(sm + i0), v = load_elem<Fr>(sm + i1);
        if (DIT) {
            if (t) v = mul_stage_twiddle(v, tw_hi, t, lh, dir_inv);
            store_elem<Fr>(sm + i0, u + v);
            store_elem<Fr>(sm + i1, u - v);
        } else {
            store_elem<Fr>(sm + i0, u + v);
            Fr d = u - v;
            if (t) d = mul_stage_twiddle(d, tw_hi, t, lh, dir_inv);
            store_elem<Fr>(sm + i1, d);
        }
    }
    __syncthreads();
}

// One pass. Launch: blocks = n / 2^EB with EB = min(NTT_LOG_ELEMS, K); threads = max(1, 2^EB / 8).
// dir_inv selects the inverse root; dit selects decimation in time.
extern "C" __global__ void NTT_BOUNDS ntt_pass(Fr* data, u32 K, u32 L, u32 B, u32 dir_inv, u32 dit, const Fr* tw_lo,
                                               const Fr* tw_hi, u32 load_mode, u32 store_mode, FrArg c_load,
                                               FrArg c_store, const Fr* g_lo, const Fr* g_hi) {
    extern __shared__ uint4 smem_raw[];
    Fr* sm = reinterpret_cast<Fr*>(smem_raw);
    const u32 EB = K < NTT_LOG_ELEMS ? K : NTT_LOG_ELEMS;
    const u32 elems = 1u << EB;
    const u32 G = elems >> B;  // groups per block
    const u32 gsize = 1u << B;
    const u32 ls = L - B;  // log stride
    const u32 stride_mask = (1u << ls) - 1;
    const u32 tid = threadIdx.x;
    const u32 nthreads = blockDim.x;
    const Fr cl = fr_from_arg(c_load);
    const Fr cs = fr_from_arg(c_store);

    // Load: element e of the block is slot j = e / G of group g = e % G, so consecutive
    // threads read consecutive x2 (coalesced when the stride is large).
    for (u32 e = tid; e < elems; e += nthreads) {
        u32 g = e % G, j = e / G;
        u32 gid = blockIdx.x * G + g;
        u32 x2 = gid & stride_mask;
        u32 hb = gid >> ls;
        u32 idx = (hb << L) + x2 + (j << ls);
        Fr x = load_elem<Fr>(data + idx);
        if (load_mode) x = apply_scale(x, load_mode, idx, K, cl, g_lo, g_hi);
        if (dit && ls > 0) {
            u32 ex = x2 * brev_bits(j, B);
            if (ex) {
                u32 E = ex << (32 - L);
                if (dir_inv) E = 0u - E;
                x = mul_root_pow(x, tw_lo, tw_hi, E);
            }
        }
        store_elem<Fr>(sm + g * gsize + j, x);
    }
    __syncthreads();

    const u32 half = gsize >> 1;
    const u32 nbfly = G * half;
    if (!dit) {
        for (u32 lh = B; lh-- > 0;) butterfly_stage<false>(sm, lh, B, nbfly, dir_inv, tw_hi);
    } else {
        for (u32 lh = 0; lh < B; lh++) butterfly_stage<true>(sm, lh, B, nbfly, dir_inv, tw_hi);
    }

    for (u32 e = tid; e < elems; e += nthreads) {
        u32 g = e % G, j = e / G;
        u32 gid = blockIdx.x * G + g;
        u32 x2 = gid & stride_mask;
        u32 hb = gid >> ls;
        u32 idx = (hb << L) + x2 + (j << ls);
        Fr x = load_elem<Fr>(sm + g * gsize + j);
        if (!dit && ls > 0) {
            u32 ex = x2 * brev_bits(j, B);
            if (ex) {
                u32 E = ex << (32 - L);
                if (dir_inv) E = 0u - E;
                x = mul_root_pow(x, tw_lo, tw_hi, E);
            }
        }
        if (store_mode) x = apply_scale(x, store_mode, idx, K, cs, g_lo, g_hi);
        store_elem<Fr>(data + idx, x);
    }
}

// In-place bit-reversal permutation of 2^K elements.
extern "C" __global__ void ntt_bitrev(Fr* data, u32 K) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >> K) return;
    u32 j = brev_bits(i, K);
    if (i < j) {
        Fr a = load_elem<Fr>(data + i), b = load_elem<Fr>(data + j);
        store_elem<Fr>(data + i, b);
        store_elem<Fr>(data + j, a);
    }
}

// In-place bit-reversal permutation of 2^K elements, K >= 2·BR_BITS, by tiles: write a position
// as (a, b, c) with a and c of BR_BITS bits; it goes to (brev c, brev b, brev a). The 2^(2·BR_BITS)
// elements with middle bits b form a tile, read and written in runs of 2^BR_BITS consecutive
// elements; block b swaps tile b with tile brev(b) (or permutes tile b within itself). Launch:
// 2^(K - 2·BR_BITS) blocks of 2^(2·BR_BITS) threads; blocks with b > brev(b) have nothing to do.
#define BR_BITS 4
#define BR_SIDE (1u << BR_BITS)
extern "C" __global__ void __launch_bounds__(BR_SIDE* BR_SIDE) ntt_bitrev_tiled(Fr* data, u32 K) {
    // Rows padded by one element, so a column walk does not fall on the same banks.
    __shared__ uint4 tiles[2][BR_SIDE][BR_SIDE + 1][2];
    const u32 mb = K - 2 * BR_BITS;
    const u32 b = blockIdx.x, b2 = brev_bits(b, mb);
    if (b > b2) return;
    const u32 t = threadIdx.x, row = t >> BR_BITS, col = t & (BR_SIDE - 1);
    const u32 src[2] = {b, b2};
    const u32 ntiles = b == b2 ? 1 : 2;
    for (u32 k = 0; k < ntiles; k++) {
        const uint4* p = reinterpret_cast<const uint4*>(data + ((row << (K - BR_BITS)) | (src[k] << BR_BITS) | col));
        tiles[k][row][col][0] = p[0];
        tiles[k][row][col][1] = p[1];
    }
    __syncthreads();
    // Thread (row, col) writes position (row, b', col) of tile b' = brev(src): its source is
    // (brev col, src, brev row).
    const u32 sr = brev_bits(col, BR_BITS), sc = brev_bits(row, BR_BITS);
    for (u32 k = 0; k < ntiles; k++) {
        uint4* p = reinterpret_cast<uint4*>(data + ((row << (K - BR_BITS)) | (src[ntiles - 1 - k] << BR_BITS) | col));
        p[0] = tiles[k][sr][sc][0];
        p[1] = tiles[k][sr][sc][1];
    }
}

// a[i] <- (a[i]·b[i] - c[i])·zinv.
extern "C" __global__ void ntt_quotient(Fr* a, const Fr* b, const Fr* c, FrArg zinv, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fr z = fr_from_arg(zinv);
    Fr r = (load_elem<Fr>(a + i) * load_elem<Fr>(b + i) - load_elem<Fr>(c + i)) * z;
    store_elem<Fr>(a + i, r);
}

// a[i] <- a[i]·b[i] (compute_h: A·B on the coset).
extern "C" __global__ void ntt_mul(Fr* a, const Fr* b, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    store_elem<Fr>(a + i, load_elem<Fr>(a + i) * load_elem<Fr>(b + i));
}

// a[i] <- a[i] - b[i] (compute_h: A·B's coefficients minus C's, both over Z).
extern "C" __global__ void ntt_sub(Fr* a, const Fr* b, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    store_elem<Fr>(a + i, load_elem<Fr>(a + i) - load_elem<Fr>(b + i));
}

// out[i] = base^i for i < 2^16 and out2[i] = base^(i·2^16), from base^(2^16) given: computed
// on the device by repeated squaring trees (one thread per entry, log-depth products).
// tab[0..16] holds base^(2^k) for k = 0..15 and tab[16..32] base^(2^(16+k)). With scale16 the
// entries are stored times 2^4, for twiddle products on the FP64 units (TW_MUL).
extern "C" __global__ void ntt_pow_table(Fr* out_lo, Fr* out_hi, const Fr* pow2, u32 scale16) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (1u << 16)) return;
    Fr lo = Fr::one(), hi = Fr::one();
    for (int k = 0; k < 16; k++) {
        if ((i >> k) & 1) {
            lo = lo * load_elem<Fr>(pow2 + k);
            hi = hi * load_elem<Fr>(pow2 + 16 + k);
        }
    }
    if (scale16) {
        // 16 in Montgomery form.
        Fr sixteen;
        constexpr u32 S[8] = {0xffffffddu, 0x00000022u, 0x00396c23u, 0x8d129397u, 0xaedf7745u, 0xff1776e6u, 0x4f77df20u, 0x26821fa1u};
#pragma unroll
        for (int k = 0; k < 8; k++) sixteen.v[k] = S[k];
        lo = lo * sixteen;
        hi = hi * sixteen;
    }
    store_elem<Fr>(out_lo + i, lo);
    store_elem<Fr>(out_hi + i, hi);
}
