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
