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

// Karatsuba: three Fp products (a real call, to keep G2 code size and compile time in check).
__device__ __noinline__ Fp2 operator*(Fp2 a, Fp2 b) {
    Fp t0 = a.c0 * b.c0;
    Fp t1 = a.c1 * b.c1;
    Fp t2 = (a.c0 + a.c1) * (b.c0 + b.c1);
    return Fp2{t0 - t1, t2 - t0 - t1};
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
