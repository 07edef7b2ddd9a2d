// The satisfaction check of evaluated constraints: the lowest row r < rows with
// a[r]·b[r] != c[r] (backend-cuda/src/constraints.rs, `first_unsatisfied`). a, b, c hold fully
// reduced Montgomery-form values, as uploads and eval.cu leave them, so a row holds exactly when
// the limbs of the product equal those of c.
//
// A thread a row; a violated row lowers *first by atomicMin (the host sets it to 0xffffffff, so
// it stays there when every row holds). A block whose rows all lie above a violation already
// found skips its products.

#define CHECK_BLOCK 256

// Whether row r violates its constraint.
DEV bool check_row_violated(const Fr* a, const Fr* b, const Fr* c, u64 r) {
    return !(load_elem<Fr>(a + r) * load_elem<Fr>(b + r)).eq(load_elem<Fr>(c + r));
}

#ifndef CUZK_HOST_EMULATION
extern "C" __global__ void __launch_bounds__(CHECK_BLOCK)
    check_constraints(const Fr* __restrict__ a, const Fr* __restrict__ b, const Fr* __restrict__ c, u32 rows, u32* first) {
    const u64 r = (u64)blockIdx.x * CHECK_BLOCK + threadIdx.x;
    if (r >= rows) return;
    if ((u64)*(volatile u32*)first < (u64)blockIdx.x * CHECK_BLOCK) return;
    if (check_row_violated(a, b, c, r)) atomicMin(first, (u32)r);
}
#endif
