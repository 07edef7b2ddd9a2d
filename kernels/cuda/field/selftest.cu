// Small kernels that expose single operations, so tests can compare each one with blstrs.

// out[5i + k] for k = 0..4: a·b, a + b, a - b, -a, a^2.
template <class F>
DEV void field_ops(const F* a, const F* b, F* out, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    F x = load_elem<F>(a + i), y = load_elem<F>(b + i);
    store_elem<F>(out + 5 * i, x * y);
    store_elem<F>(out + 5 * i + 1, x + y);
    store_elem<F>(out + 5 * i + 2, x - y);
    store_elem<F>(out + 5 * i + 3, -x);
    store_elem<F>(out + 5 * i + 4, sqr(x));
}

extern "C" __global__ void selftest_fr_ops(const Fr* a, const Fr* b, Fr* out, u32 n) { field_ops<Fr>(a, b, out, n); }
extern "C" __global__ void selftest_fp_ops(const Fp* a, const Fp* b, Fp* out, u32 n) { field_ops<Fp>(a, b, out, n); }
extern "C" __global__ void selftest_fp2_ops(const Fp2* a, const Fp2* b, Fp2* out, u32 n) {
    field_ops<Fp2>(a, b, out, n);
}

// For affine P, Q: out (Jacobian, 3 coordinates each) = [P + Q (mixed), 2P (affine doubling),
// P + Q (XYZZ + XYZZ), 2·(P + Q) (XYZZ doubling), 5·P (small multiple), P + P (mixed, equal)].
template <class F>
DEV void curve_ops(const Affine<F>* p, const Affine<F>* q, F* out, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Affine<F> P = load_affine<F>(p + i), Q = load_affine<F>(q + i);
    Xyzz<F> r[6];
    r[0] = Xyzz<F>::from_affine(P);
    xyzz_add_affine(r[0], Q);
    r[1] = P.is_inf() ? Xyzz<F>::inf() : xyzz_dbl_affine(P);
    r[2] = Xyzz<F>::from_affine(P);
    xyzz_add(r[2], Xyzz<F>::from_affine(Q));
    r[3] = r[2];
    xyzz_dbl(r[3]);
    r[4] = xyzz_mul_small(Xyzz<F>::from_affine(P), 5);
    r[5] = Xyzz<F>::from_affine(P);
    xyzz_add_affine(r[5], P);
    for (int k = 0; k < 6; k++) {
        F X, Y, Z;
        xyzz_to_jacobian(r[k], X, Y, Z);
        F* o = out + (size_t)(6 * i + k) * 3;
        store_elem<F>(o, X);
        store_elem<F>(o + 1, Y);
        store_elem<F>(o + 2, Z);
    }
}

extern "C" __global__ void selftest_g1_ops(const Affine<Fp>* p, const Affine<Fp>* q, Fp* out, u32 n) {
    curve_ops<Fp>(p, q, out, n);
}
extern "C" __global__ void selftest_g2_ops(const Affine<Fp2>* p, const Affine<Fp2>* q, Fp2* out, u32 n) {
    curve_ops<Fp2>(p, q, out, n);
}

// Product throughput (for `cuzk-cuda-kernels field`): every thread runs four independent chains
// x_k <- x_k · y for `iters` steps and stores their sum, so the products cannot be elided.
// 4 · iters products per thread.
template <class F, bool FP64 = false>
DEV void mul_throughput(const F* in, F* out, u32 iters) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    F y = load_elem<F>(in + (i & 1023));
    F x0 = load_elem<F>(in + ((i + 1) & 1023)), x1 = load_elem<F>(in + ((i + 2) & 1023));
    F x2 = load_elem<F>(in + ((i + 3) & 1023)), x3 = load_elem<F>(in + ((i + 4) & 1023));
    for (u32 k = 0; k < iters; k++) {
        if (FP64) {
            x0 = mont_mul_fp64(x0, y);
            x1 = mont_mul_fp64(x1, y);
            x2 = mont_mul_fp64(x2, y);
            x3 = mont_mul_fp64(x3, y);
        } else {
            x0 = x0 * y;
            x1 = x1 * y;
            x2 = x2 * y;
            x3 = x3 * y;
        }
    }
    store_elem<F>(out + i, (x0 + x1) + (x2 + x3));
}

extern "C" __global__ void bench_fr_mul(const Fr* in, Fr* out, u32 iters) { mul_throughput<Fr>(in, out, iters); }
extern "C" __global__ void bench_fp_mul(const Fp* in, Fp* out, u32 iters) { mul_throughput<Fp>(in, out, iters); }
extern "C" __global__ void bench_fr_mul_fp64(const Fr* in, Fr* out, u32 iters) { mul_throughput<Fr, true>(in, out, iters); }
extern "C" __global__ void bench_fp_mul_fp64(const Fp* in, Fp* out, u32 iters) { mul_throughput<Fp, true>(in, out, iters); }

// The FP64-unit product (field/fp64_mont.cuh) on pairs: out[i] = a[i]·b[i]·2^(-52L) mod p.
template <class F>
DEV void fp64_products(const F* a, const F* b, F* out, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    store_elem<F>(out + i, mont_mul_fp64(load_elem<F>(a + i), load_elem<F>(b + i)));
}

extern "C" __global__ void selftest_fr_mul_fp64(const Fr* a, const Fr* b, Fr* out, u32 n) { fp64_products<Fr>(a, b, out, n); }
extern "C" __global__ void selftest_fp_mul_fp64(const Fp* a, const Fp* b, Fp* out, u32 n) { fp64_products<Fp>(a, b, out, n); }
