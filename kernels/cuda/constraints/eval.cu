// Constraint evaluation: a = A·w, b = B·w, c = C·w for the witness w = (input, aux), the three
// matrices in compressed sparse rows (backend-cuda/src/constraints.rs uploads them).
//
// Per matrix: row offsets (u32 when the matrix has fewer than 2^32 entries, else u64: the two
// kernels below), the column of each entry (an input index, or an aux index with EVAL_AUX set)
// and its coefficient-table index. The table holds the distinct coefficients in Montgomery
// form; index 0 is 1 and index 1 is -1 (cuzk_core::matrices::COEFF_ONE / COEFF_MINUS_ONE),
// so those entries take no product: 1 adds the value, -1 adds its negation.
//
// One launch covers the rows of all three matrices: blocks [0, start1) are A's, [start1,
// start2) B's, the rest C's. Each row gets 2^log_lanes consecutive lanes of a warp (per
// matrix; 1 lane is a thread per row): lane j sums entries j, j + lanes, ... of the row and the
// lanes' sums are added by shuffles. Rows of more than `long_row` entries (a few in circuits
// like SHA-256, whose additions sum hundreds of bits) would hold their warp for hundreds of
// iterations: this kernel skips them and eval_long_rows gives each a whole warp. Every sum is a field sum of fully reduced values, so the
// result is the canonical value, bit-identical to blstrs. Rows from `rows` to the domain's size
// are zeroed by the host (a memset), not here.

#define EVAL_AUX 0x80000000u
#define EVAL_BLOCK 256

// Field sum of `acc` over the 2^log_lanes lanes of each group (the result in the group's first
// lane). Every lane of the warp calls it.
DEV Fr eval_lane_sum(Fr acc, u32 log_lanes) {
    for (u32 d = (1u << log_lanes) >> 1; d > 0; d >>= 1) {
        Fr o;
#pragma unroll
        for (int i = 0; i < 8; i++) o.v[i] = __shfl_down_sync(0xffffffffu, acc.v[i], d, 1u << log_lanes);
        acc = acc + o;
    }
    return acc;
}

// The kernels' parameters: per matrix A, B, C its offsets, columns, coefficient indices, output
// and log2 of the lanes per row; the first blocks of B and C; the table, the witness, the rows.
#define EVAL_PARAMS(Off)                                                                                             \
    const Off *__restrict__ off_a, const Off *__restrict__ off_b, const Off *__restrict__ off_c,                    \
        const u32 *__restrict__ col_a, const u32 *__restrict__ col_b, const u32 *__restrict__ col_c,                 \
        const u32 *__restrict__ k_a, const u32 *__restrict__ k_b, const u32 *__restrict__ k_c, Fr *out_a, Fr *out_b, \
        Fr *out_c, u32 ll_a, u32 ll_b, u32 ll_c, u32 start1, u32 start2, const Fr *__restrict__ table,              \
        const Fr *__restrict__ input, const Fr *__restrict__ aux, u32 rows, u32 long_row

template <class Off>
DEV void eval_rows(EVAL_PARAMS(Off)) {
    // The matrix of this block (uniform per block, so the selects below do not diverge).
    const u32 m = blockIdx.x >= start2 ? 2 : (blockIdx.x >= start1 ? 1 : 0);
    const u32 first = m == 2 ? start2 : (m == 1 ? start1 : 0);
    const u32 ll = m == 2 ? ll_c : (m == 1 ? ll_b : ll_a);
    const Off* off = m == 2 ? off_c : (m == 1 ? off_b : off_a);
    const u32* col = m == 2 ? col_c : (m == 1 ? col_b : col_a);
    const u32* coeff = m == 2 ? k_c : (m == 1 ? k_b : k_a);
    Fr* out = m == 2 ? out_c : (m == 1 ? out_b : out_a);
    const u64 t = (u64)(blockIdx.x - first) * EVAL_BLOCK + threadIdx.x;
    const u64 row = t >> ll;
    const u32 lane = (u32)t & ((1u << ll) - 1);
    Fr acc = Fr::zero();
    bool mine = row < rows;
    if (mine) {
        // Entry positions in 64 bits: with u32 offsets, e + lanes must not wrap.
        const u64 lo = off[row], hi = off[row + 1];
        mine = hi - lo <= long_row;
        for (u64 e = lo + lane; mine && e < hi; e += 1u << ll) {
            const u32 c = col[e], k = coeff[e];
            Fr x = load_elem<Fr>((c & EVAL_AUX) ? aux + (c ^ EVAL_AUX) : input + c);
            if (k > 1u) x = x * load_elem<Fr>(table + k);
            if (k == 1u) x = -x;
            acc = acc + x;
        }
    }
    if (ll) acc = eval_lane_sum(acc, ll);
    if (mine && lane == 0) store_elem<Fr>(out + row, acc);
}

// The long rows of one matrix (`list`, `n` row indices): a warp per row, lanes strided over
// its entries, the sums added by shuffles.
template <class Off>
DEV void eval_long(const Off *__restrict__ off, const u32 *__restrict__ col, const u32 *__restrict__ coeff, Fr *out,
                   const u32 *__restrict__ list, u32 n, const Fr *__restrict__ table, const Fr *__restrict__ input,
                   const Fr *__restrict__ aux) {
    const u64 t = (u64)blockIdx.x * EVAL_BLOCK + threadIdx.x;
    const u64 w = t >> 5;
    const u32 lane = (u32)t & 31u;
    Fr acc = Fr::zero();
    if (w < n) {
        const u32 row = list[w];
        const u64 hi = off[row + 1];
        for (u64 e = (u64)off[row] + lane; e < hi; e += 32) {
            const u32 c = col[e], k = coeff[e];
            Fr x = load_elem<Fr>((c & EVAL_AUX) ? aux + (c ^ EVAL_AUX) : input + c);
            if (k > 1u) x = x * load_elem<Fr>(table + k);
            if (k == 1u) x = -x;
            acc = acc + x;
        }
    }
    acc = eval_lane_sum(acc, 5);
    if (w < n && lane == 0) store_elem<Fr>(out + list[w], acc);
}

#define EVAL_ARGS off_a, off_b, off_c, col_a, col_b, col_c, k_a, k_b, k_c, out_a, out_b, out_c, ll_a, ll_b, ll_c, start1, start2, table, input, aux, rows, long_row

extern "C" __global__ void __launch_bounds__(EVAL_BLOCK) eval_constraints_u32(EVAL_PARAMS(u32)) { eval_rows<u32>(EVAL_ARGS); }

extern "C" __global__ void __launch_bounds__(EVAL_BLOCK) eval_constraints_u64(EVAL_PARAMS(u64)) { eval_rows<u64>(EVAL_ARGS); }

#define EVAL_LONG_PARAMS(Off)                                                                                     \
    const Off *__restrict__ off, const u32 *__restrict__ col, const u32 *__restrict__ coeff, Fr *out,            \
        const u32 *__restrict__ list, u32 n, const Fr *__restrict__ table, const Fr *__restrict__ input,          \
        const Fr *__restrict__ aux

extern "C" __global__ void __launch_bounds__(EVAL_BLOCK) eval_long_rows_u32(EVAL_LONG_PARAMS(u32)) {
    eval_long<u32>(off, col, coeff, out, list, n, table, input, aux);
}

extern "C" __global__ void __launch_bounds__(EVAL_BLOCK) eval_long_rows_u64(EVAL_LONG_PARAMS(u64)) {
    eval_long<u64>(off, col, coeff, out, list, n, table, input, aux);
}
