// Pippenger multi-scalar multiplication for G1 (F = Fp) and G2 (F = Fp2).
//
// 1. msm_prepare: gathers the scalars that take part (density bitmap: the i-th set bit is the
//    i-th compact scalar, its rank from density_popcounts and a scan) and converts them from
//    Montgomery form to canonical integers.
// 2. Signed c-bit windows: digits in [-2^(c-1), 2^(c-1)], W = ceil(256 / c) windows. A nonzero
//    digit d of window w goes to bucket key w·2^(c-1) + |d| - 1 with the point negated when
//    d < 0. Zero digits are skipped, so 0 scalars cost nothing and 1 scalars one bucket entry.
// 3. Counting sort by key: msm_histogram (atomic counts), an exclusive scan, msm_scatter
//    (atomic cursors; for large MSMs msm_window_keys + msm_scatter_range, see there) ->
//    entries = point index | sign bit, grouped by bucket. The atomics are aggregated per warp
//    and key (warp_add), so many equal digits cost one atomic per warp.
// 4. Bucket sums in rounds. Large dense MSMs first run batch-affine rounds (see "Batch-affine
//    rounds" below), each halving every bucket, possibly down to one point per bucket. Then
//    (or from the start) the first XYZZ round cuts the sorted entries into equal segments of S,
//    one thread per segment (mixed additions from affine points, see accumulate_segments);
//    later rounds cut each bucket's partial sums into chunks of at most S, one thread per chunk
//    (XYZZ additions), until every bucket has one. Heavy buckets (many equal scalars) thus
//    still run in parallel.
// 5. Window sums: each window's buckets are cut into segments; a thread computes
//    sum_k k·B_k over its segment with the running-sum trick (over XYZZ or affine buckets),
//    then segments are added in a tree. The host combines the W window sums with doublings.

#define SIGN_BIT 0x80000000u

// Set bits of each density word; an exclusive scan of these gives msm_prepare's word_prefix.
extern "C" __global__ void density_popcounts(const u64* words, u32 n, u32* out) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __popcll(words[i]);
}

// Scalars in, canonical scalars out (8 limbs each).
extern "C" __global__ void msm_prepare(const Fr* scalars, u32 len, const u64* words, const u32* word_prefix,
                                       u32 use_density, Fr* out) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= len) return;
    u32 rank = i;
    if (use_density) {
        u64 w = words[i >> 6];
        u32 b = i & 63;
        if (!((w >> b) & 1)) return;
        u64 below = b == 0 ? 0ull : (w & ((1ull << b) - 1));
        rank = word_prefix[i >> 6] + __popcll(below);
    }
    store_elem<Fr>(out + rank, from_mont(load_elem<Fr>(scalars + i)));
}

DEV u32 scalar_bits(const Fr& s, u32 pos, u32 c) {
    // bits [pos, pos + c) of the 256-bit integer (zero above bit 255)
    u32 word = pos >> 5, sh = pos & 31;
    u32 v = 0;
    if (word < 8) {
        v = s.v[word] >> sh;
        if (sh + c > 32 && word + 1 < 8) v |= s.v[word + 1] << (32 - sh);
    }
    return v & ((1u << c) - 1);
}

// The signed digit of window w, visiting the windows in order from 0 ('carry' is 0 before
// window 0): |digit| in [0, 2^(c-1)] and its sign.
DEV u32 next_digit(const Fr& s, u32 w, u32 c, u32& carry, bool& neg) {
    const u32 half = 1u << (c - 1);
    u32 d = scalar_bits(s, w * c, c) + carry;
    neg = d > half;
    if (neg) {
        d = (1u << c) - d;
        carry = 1;
    } else {
        carry = 0;
    }
    return d;
}

// Warp-aggregated counter update: the lanes of a warp that hold the same key (and 'valid') add
// their count with one atomic, so 0/1 scalars, which all land in one bucket, do not serialize on
// a single address (that cost ~5 ms per 2^23 entries). Returns each valid lane's slot: the
// counter's old value plus the lane's rank among its peers. Every lane of the warp must call
// this together.
DEV u32 warp_add(u32* counter, u32 key, bool valid) {
    const u32 lane = threadIdx.x & 31;
    const u32 peers = __match_any_sync(__activemask(), valid ? key : 0xffffffffu);
    const u32 leader = __ffs(peers) - 1;
    u32 base = 0;
    if (valid && lane == leader) base = atomicAdd(counter + key, __popc(peers));
    base = __shfl_sync(peers, base, leader);
    return base + __popc(peers & ((1u << lane) - 1));
}

// Whether some lanes of the warp that are 1, 2 or 4 apart hold the same valid key: then warp_add
// aggregates, otherwise (random digits) one plain atomic per lane is cheaper than its
// __match_any_sync. A cheap test, not an exact one; either way the counts are right.
DEV bool keys_clash(u32 key, bool valid) {
    u32 k = valid ? key : 0xffffffffu;
    bool clash = false;
#pragma unroll
    for (u32 x = 1; x <= 4; x <<= 1) {
        u32 other = __shfl_xor_sync(0xffffffffu, k, x);
        clash |= valid && other == k;
    }
    return __any_sync(0xffffffffu, clash);
}

// The windows that can hold a nonzero digit of s: none for 0; for s of bit length L > 0, the
// first k = ceil((L + 1) / c). Then s < 2^(k·c - 1), so window k - 1's bits are below 2^(c-1),
// its digit (those bits plus the carry) is at most 2^(c-1) and not negative, and no carry
// reaches window k: every later digit is 0. A 0/1 scalar needs one window; a 255-bit one all W.
DEV u32 windows_needed(const Fr& s, u32 c, u32 W) {
    u32 bits = 0;
#pragma unroll
    for (int j = 7; j >= 0; j--) {
        if (bits == 0 && s.v[j] != 0) bits = 32 * j + 32 - __clz(s.v[j]);
    }
    return bits == 0 ? 0 : min((bits + c) / c, W);
}

// The largest v of the warp's lanes (all 32 must call this together).
DEV u32 warp_max(u32 v) {
#pragma unroll
    for (u32 x = 16; x >= 1; x >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, x));
    return v;
}

// One pass over the scalars' digits, counting them per bucket (histogram) or placing them
// (scatter). Every lane of a warp runs through the same windows, those that some lane's scalar
// needs (windows_needed), so keys_clash and warp_add see whole warps and a warp of 0/1 scalars
// (most of Filecoin's witness MSMs) visits one window instead of W; lanes past the end or with
// a zero scalar contribute nothing.
template <bool SCATTER>
DEV void digit_pass(const Fr* s, u32 m, u32 c, u32 W, u32* counter, u32* entries) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    Fr x = i < m ? load_elem<Fr>(s + i) : Fr::zero();
    u32 carry = 0;
    const u32 half = 1u << (c - 1);
    const u32 windows = warp_max(windows_needed(x, c, W));
    for (u32 w = 0; w < windows; w++) {
        bool neg;
        u32 d = next_digit(x, w, c, carry, neg);
        u32 key = w * half + d - 1;
        u32 pos = 0;
        if (keys_clash(key, d != 0)) {
            pos = warp_add(counter, key, d != 0);
        } else if (d != 0) {
            pos = atomicAdd(counter + key, 1u);
        }
        if (SCATTER && d != 0) entries[pos] = i | (neg ? SIGN_BIT : 0u);
    }
}

// counter += the number of scalars above 1: those that need more than bucket 1 of window 0,
// from which the host sizes the windows (one atomic per warp).
extern "C" __global__ void msm_count_dense(const Fr* s, u32 m, u32* counter) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    bool dense = false;
    if (i < m) {
        Fr x = load_elem<Fr>(s + i);
        u32 high = 0;
#pragma unroll
        for (int j = 1; j < 8; j++) high |= x.v[j];
        dense = high != 0 || x.v[0] > 1;
    }
    u32 votes = __ballot_sync(0xffffffffu, dense);
    if ((threadIdx.x & 31) == 0 && votes != 0) atomicAdd(counter, __popc(votes));
}

extern "C" __global__ void msm_histogram(const Fr* s, u32 m, u32 c, u32 W, u32* counts) {
    digit_pass<false>(s, m, c, W, counts, nullptr);
}

extern "C" __global__ void msm_scatter(const Fr* s, u32 m, u32 c, u32 W, u32* cursor, u32* entries) {
    digit_pass<true>(s, m, c, W, cursor, entries);
}

// The scatter for large MSMs. msm_scatter writes 4-byte entries all over the entries array;
// once that is far larger than L2, most of them cost a read-modify-write of a DRAM sector
// (18 ms at 2^24 scalars, c = 20, with the warps waiting on memory). Instead, one window at a
// time: msm_window_keys writes each scalar's bucket keys (coalesced, for several windows per
// pass over the scalars), then msm_scatter_range places the keys of one window and bucket range
// [lo, hi) per launch, chosen so that the entries it writes fit in L2 and reach DRAM as whole
// sectors.
#define NO_KEY 0xffffffffu
// keys[(w - w_lo)·m + i] = scalar i's key in window w, for w in [w_lo, w_hi).
extern "C" __global__ void msm_window_keys(const Fr* s, u32 m, u32 c, u32 w_lo, u32 w_hi, u32* keys) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    Fr x = load_elem<Fr>(s + i);
    u32 carry = 0;
    for (u32 w = 0; w < w_hi; w++) {
        bool neg;
        u32 d = next_digit(x, w, c, carry, neg);
        if (w >= w_lo) keys[(size_t)(w - w_lo) * m + i] = d != 0 ? (w << (c - 1)) + d - 1 + (neg ? SIGN_BIT : 0u) : NO_KEY;
    }
}

// entries[cursor[key]++] = entry where 'valid'. 'aggregate' 0 (the host knows no bucket is
// heavy): one plain atomic per entry, skipping warp_add's __match_any_sync, which finds no peers
// among random digits; otherwise every lane of the warp must call this together.
DEV void place_entry(u32* cursor, u32* entries, u32 key, bool valid, u32 entry, u32 aggregate) {
    if (!aggregate) {
        if (valid) entries[atomicAdd(cursor + key, 1u)] = entry;
        return;
    }
    u32 slot = warp_add(cursor, key, valid);
    if (valid) entries[slot] = entry;
}

extern "C" __global__ void msm_scatter_range(const u32* keys, u32 m, u32 lo, u32 hi, u32* cursor, u32* entries,
                                             u32 aggregate) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    u32 k = i < m ? keys[i] : NO_KEY;  // lanes past the end still take part in warp_add
    u32 key = k & ~SIGN_BIT;
    bool valid = k != NO_KEY && key >= lo && key < hi;
    place_entry(cursor, entries, key, valid, i | (k & SIGN_BIT), aggregate);
}

// For windows whose entries span many L2-sized ranges, re-reading the window's keys once per
// range costs more than sorting them once by range: msm_bin_starts places each range ("bin": 2^shift
// consecutive buckets) in a window-sized buffer from the buckets' offsets, msm_bin_keys writes
// every key there (entry | bucket << 32, each block reserving its share of every bin with one
// atomic), and msm_scatter_binned places the binned entries in one launch: the blocks in flight
// read about one bin at a time, so their writes stay within L2 as with one launch per range.
#define BIN_MAX 1024
#define BIN_KEYS_PER_THREAD 8
// bcursor[p] = the first slot of bin p (p ≤ bins; bcursor[bins] = the window's entry count).
extern "C" __global__ void msm_bin_starts(const u32* offsets, u32 first, u32 shift, u32 bins, u32* bcursor) {
    u32 p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p <= bins) bcursor[p] = offsets[first + (p << shift)] - offsets[first];
}

// One block: BIN_KEYS_PER_THREAD · blockDim.x keys, counted per bin in shared memory (the rank
// of each), then one atomic per nonempty bin reserves the block's slots.
extern "C" __global__ void msm_bin_keys(const u32* keys, u32 m, u32 first, u32 shift, u32 bins, u32* bcursor,
                                        u64* binned) {
    __shared__ u32 slots[BIN_MAX];
    for (u32 p = threadIdx.x; p < bins; p += blockDim.x) slots[p] = 0;
    __syncthreads();
    const u32 base = blockIdx.x * blockDim.x * BIN_KEYS_PER_THREAD + threadIdx.x;
    u32 k[BIN_KEYS_PER_THREAD], rank[BIN_KEYS_PER_THREAD];
#pragma unroll
    for (u32 j = 0; j < BIN_KEYS_PER_THREAD; j++) {
        u32 i = base + j * blockDim.x;
        k[j] = i < m ? keys[i] : NO_KEY;
        if (k[j] != NO_KEY) rank[j] = atomicAdd(&slots[((k[j] & ~SIGN_BIT) - first) >> shift], 1u);
    }
    __syncthreads();
    for (u32 p = threadIdx.x; p < bins; p += blockDim.x) {
        if (slots[p] != 0) slots[p] = atomicAdd(bcursor + p, slots[p]);
    }
    __syncthreads();
#pragma unroll
    for (u32 j = 0; j < BIN_KEYS_PER_THREAD; j++) {
        if (k[j] == NO_KEY) continue;
        u32 key = k[j] & ~SIGN_BIT;
        u32 i = base + j * blockDim.x;
        binned[slots[(key - first) >> shift] + rank[j]] = ((u64)key << 32) | i | (k[j] & SIGN_BIT);
    }
}

// The binned entries of one window (*count of them) into their buckets.
extern "C" __global__ void msm_scatter_binned(const u64* binned, const u32* count, u32* cursor, u32* entries,
                                              u32 aggregate) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    bool valid = i < *count;
    u64 e = valid ? binned[i] : 0;
    place_entry(cursor, entries, (u32)(e >> 32), valid, (u32)e, aggregate);
}

// out[i] = the u32 at device address addr[i] (many scattered reads for the host in one copy).
extern "C" __global__ void read_u32s(const u64* addr, u32 n, u32* out) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = *reinterpret_cast<const u32*>(addr[i]);
}

// ---- Exclusive scan of u32 (three kernels: per-block scan, scan of block sums, add back).
#define SCAN_BLOCK 1024

// out[i] = sum of in[0..i) within each block of SCAN_BLOCK; block_sums[b] = block total.
// 'ceil_div' > 0 scans ceil(in[i] / ceil_div) instead of in[i] (chunk counts), and values
// in[i] <= 'drop_upto' count as 0 (buckets that have left the batch-affine rounds).
extern "C" __global__ void scan_block(const u32* in, u32* out, u32 n, u32* block_sums, u32 ceil_div, u32 drop_upto) {
    __shared__ u32 sh[SCAN_BLOCK];
    u32 i = blockIdx.x * SCAN_BLOCK + threadIdx.x;
    u32 v = 0;
    if (i < n) {
        v = in[i];
        if (v <= drop_upto) v = 0;
        if (ceil_div) v = (u32)(((u64)v + ceil_div - 1) / ceil_div);
    }
    sh[threadIdx.x] = v;
    __syncthreads();
    for (u32 off = 1; off < SCAN_BLOCK; off <<= 1) {
        u32 t = threadIdx.x >= off ? sh[threadIdx.x - off] : 0;
        __syncthreads();
        sh[threadIdx.x] += t;
        __syncthreads();
    }
    if (i < n) out[i] = sh[threadIdx.x] - v;
    if (threadIdx.x == SCAN_BLOCK - 1) block_sums[blockIdx.x] = sh[threadIdx.x];
}

extern "C" __global__ void scan_add(u32* out, u32 n, const u32* block_offsets) {
    u32 i = blockIdx.x * SCAN_BLOCK + threadIdx.x;
    if (i < n) out[i] += block_offsets[blockIdx.x];
}

// ---- Chunk tasks: bucket b (count[b] entries from offset[b]) -> ceil(count/S) tasks at
// task_base[b]; new_count[b] = that number of tasks. Also records the largest chunk count.
extern "C" __global__ void msm_make_tasks(const u32* count, const u32* offset, const u32* task_base, u32 nb, u32 S,
                                          u32* task_start, u32* task_len, u32* max_chunks, u32* new_count) {
    u32 b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nb) return;
    u32 cnt = count[b];
    u32 k = (cnt + S - 1) / S;
    if (k > 1) atomicMax(max_chunks, k);
    new_count[b] = k;
    u32 base = task_base[b], off = offset[b];
    for (u32 t = 0; t < k; t++) {
        task_start[base + t] = off + t * S;
        u32 rem = cnt - t * S;
        task_len[base + t] = rem < S ? rem : S;
    }
}

// ---- Bucket accumulation, templated over the base field.
// ---- Balanced round 1 ("segments"): the sorted entries are cut into segments of exactly S
// consecutive entries regardless of bucket boundaries, one thread per segment, so every thread
// does the same number of additions (chunks per bucket leave warps partly idle when a bucket
// ends in a short chunk). A thread flushes its accumulator whenever the bucket changes. Bucket b
// (entries [off[b], off[b+1])) touches segments off[b]/S .. (off[b+1]-1)/S, and its partial sum
// from segment t goes to out[part_base[b] + t - off[b]/S]: each bucket's partials are contiguous,
// as the later rounds expect.
extern "C" __global__ void msm_seg_counts(const u32* off, u32 nb, u32 S, u32* new_count, u32* max_chunks) {
    u32 b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nb) return;
    u32 lo = off[b], hi = off[b + 1];
    u32 k = hi > lo ? (hi - 1) / S - lo / S + 1 : 0;
    if (k > 1) atomicMax(max_chunks, k);
    new_count[b] = k;
}

// Entries null: entry e is point e itself (the batch-affine rounds' output, already in bucket order).
template <class F>
DEV void accumulate_segments(const Affine<F>* bases, const u32* entries, const u32* off, u32 nb, u32 total, u32 S,
                             const u32* part_base, Xyzz<F>* out) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    u32 start = t * S;
    if (start >= total) return;
    u32 end = total - start < S ? total : start + S;
    // Bucket holding entry 'start': the largest b with off[b] <= start (off[nb] = total > start).
    u32 lo = 0, hi = nb;
    while (hi - lo > 1) {
        u32 mid = (lo + hi) >> 1;
        if (off[mid] <= start) lo = mid; else hi = mid;
    }
    u32 b = lo;
    u32 bend = off[b + 1];
    Xyzz<F> acc = Xyzz<F>::inf();
    u32 v = entries ? entries[start] : start;
    Affine<F> q = load_affine<F>(bases + (v & ~SIGN_BIT));
    for (u32 e = start; e < end; e++) {
        if (e == bend) {
            store_xyzz(out + part_base[b] + t - off[b] / S, acc);
            acc = Xyzz<F>::inf();
            b++;
            while (off[b + 1] <= e) b++;
            bend = off[b + 1];
        }
        u32 vn = v;
        Affine<F> qn = q;
        if (e + 1 < end) {
            vn = entries ? entries[e + 1] : e + 1;
            qn = load_affine<F>(bases + (vn & ~SIGN_BIT));
        }
        if (v & SIGN_BIT) q.y = -q.y;
        xyzz_add_affine(acc, q);
        v = vn;
        q = qn;
    }
    store_xyzz(out + part_base[b] + t - off[b] / S, acc);
}

template <class F>
DEV void accumulate_xyzz(const Xyzz<F>* in, const u32* task_start, const u32* task_len, u32 ntasks, Xyzz<F>* out) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= ntasks) return;
    u32 s = task_start[t], len = task_len[t];
    Xyzz<F> acc = load_xyzz<F>(in + s);
    for (u32 e = 1; e < len; e++) xyzz_add(acc, load_xyzz<F>(in + s + e));
    store_xyzz(out + t, acc);
}

// ---- Batch-affine rounds (large dense MSMs; msm.rs `affine_rounds`). Before the XYZZ rounds,
// each round halves every bucket: its points are added in pairs (2j, 2j + 1) in affine
// coordinates, an odd last point passes through. An affine addition costs 3 products once the
// slope's denominator is inverted, and the inversions of a whole round share one field
// inversion (Montgomery's trick, in levels: each thread multiplies B denominators and keeps
// the prefix products, the threads' totals form the next level, the last level is inverted
// element by element). With the trick's 3 products per element that is ~6 products per
// addition against ~10 for an XYZZ mixed addition.
//
// A round's outputs o = t + k·T (thread t, k = 0, 1, ...) are interleaved so that a warp reads
// consecutive pairs; pairs[o] is the position of the pair's first point, with PAIR_SINGLE set
// when it has no second one, and dest[o] where the sum goes: the next round's input, or with
// DEST_FINAL set the rounds' final points. A bucket leaves the rounds as soon as it is down to
// one point, so the late rounds only touch the few buckets still holding several.
#define PAIR_SINGLE 0x80000000u
#define DEST_FINAL 0x80000000u

// pairs and dest for round 'shift' over nb buckets. Bucket b holds n = ceil(count[b] / 2^shift)
// points and takes part when n >= 2 (round 0: n >= 1), with its points from in_off[b] - in_base.
// Its ceil(n / 2) outputs take slots from slot_off[b] - slot_base. They are final when there is
// one of them or no next round (next_off null): they then go to fin_off[b] - fin_base + j,
// otherwise to the next round's next_off[b] - next_base + j. Each warp takes 32 buckets and
// writes them one after the other with all its lanes, so a heavy bucket (equal scalars, or the
// top window's carries) costs 1/32 of its length in steps.
extern "C" __global__ void msm_pair_index(const u32* count, u32 nb, u32 shift, const u32* in_off, u32 in_base,
                                          const u32* slot_off, u32 slot_base, const u32* next_off, u32 next_base,
                                          const u32* fin_off, u32 fin_base, u32* pairs, u32* dest) {
    const u32 lane = threadIdx.x & 31;
    const u32 b = blockIdx.x * blockDim.x + threadIdx.x;
    u32 n = 0, in = 0, slot = 0, to = 0;
    if (b < nb) {
        u32 cnt = count[b];
        if (cnt > (shift ? 1u << shift : 0u)) {
            n = (u32)(((u64)cnt + (1ull << shift) - 1) >> shift);
            in = in_off[b] - in_base;
            slot = slot_off[b] - slot_base;
            to = n <= 2 || !next_off ? DEST_FINAL | (fin_off[b] - fin_base) : next_off[b] - next_base;
        }
    }
    for (u32 k = 0; k < 32; k++) {
        u32 nk = __shfl_sync(0xffffffffu, n, k);
        u32 ink = __shfl_sync(0xffffffffu, in, k);
        u32 slotk = __shfl_sync(0xffffffffu, slot, k);
        u32 tok = __shfl_sync(0xffffffffu, to, k);
        for (u32 j = lane; 2 * j < nk; j += 32) {
            pairs[slotk + j] = (ink + 2 * j) | (2 * j + 1 < nk ? 0u : PAIR_SINGLE);
            dest[slotk + j] = tok + j;
        }
    }
}

template <class F>
DEV Affine<F> load_point(const Affine<F>* src, const u32* entries, u32 pos) {
    if (!entries) return load_affine<F>(src + pos);
    u32 v = entries[pos];
    Affine<F> p = load_affine<F>(src + (v & ~SIGN_BIT));
    if (v & SIGN_BIT) p.y = -p.y;
    return p;
}

enum { PAIR_ADD, PAIR_DBL, PAIR_FIRST, PAIR_SECOND, PAIR_INF };

// How p + q is formed: the slope's denominator d (1 when there is no slope) and, with NUM,
// its numerator. Exceptional pairs (an identity, q = p, q = -p) are rare but possible: equal
// bases, or 1 and -1 scalars on one base.
template <class F, bool NUM>
DEV int pair_case(const Affine<F>& p, const Affine<F>& q, F& d, F& num) {
    d = F::one();
    if (q.is_inf()) return PAIR_FIRST;
    if (p.is_inf()) return PAIR_SECOND;
    F dx = q.x - p.x;
    if (!dx.is_zero()) {
        d = dx;
        if (NUM) num = q.y - p.y;
        return PAIR_ADD;
    }
    if (!p.y.eq(q.y) || p.y.is_zero()) return PAIR_INF;
    d = dbl(p.y);
    if (NUM) {
        F xx = sqr(p.x);
        num = xx + xx + xx;
    }
    return PAIR_DBL;
}

// One level of the trick: thread t's elements are d(o) for o = t, t + T, ... < n;
// prefix[o] = d_o·d_(o-T)·..., totals[t] = all of them.
template <class F, class Elem>
DEV void prefix_products(Elem d_of, u32 n, u32 T, F* prefix, F* totals) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    F acc = F::one();
    for (u32 o = t; o < n; o += T) {
        F d = d_of(o);
        acc = o == t ? d : acc * d;
        store_elem<F>(prefix + o, acc);
    }
    store_elem<F>(totals + t, acc);
}

// Level 0: the elements are the pairs' slope denominators.
template <class F>
DEV void affine_prefix(const Affine<F>* src, const u32* entries, const u32* pairs, u32 n, u32 T, F* prefix, F* totals) {
    prefix_products<F>(
        [&](u32 o) {
            u32 pr = pairs[o];
            F d = F::one();
            if (!(pr & PAIR_SINGLE)) {
                u32 pos = pr & ~PAIR_SINGLE;
                // Most pairs need only the x coordinates.
                F x1, x2;
                if (entries) {
                    x1 = load_elem<F>(&src[entries[pos] & ~SIGN_BIT].x);
                    x2 = load_elem<F>(&src[entries[pos + 1] & ~SIGN_BIT].x);
                } else {
                    x1 = load_elem<F>(&src[pos].x);
                    x2 = load_elem<F>(&src[pos + 1].x);
                }
                if (!x1.is_zero() && !x2.is_zero() && !x1.eq(x2)) {
                    d = x2 - x1;
                } else {
                    F num;
                    pair_case<F, false>(load_point(src, entries, pos), load_point(src, entries, pos + 1), d, num);
                }
            }
            return d;
        },
        n, T, prefix, totals);
}

// Level 0 back down, fused with the additions: with inv = (this thread's total)^(-1), walks
// the outputs backwards; 1/d_o = inv·prefix[o - T], then inv·d_o is the inverse for the rest.
template <class F>
DEV void affine_finish(const Affine<F>* src, const u32* entries, const u32* pairs, const u32* dest, u32 n, u32 T,
                       const F* prefix, const F* inv_totals, Affine<F>* next, Affine<F>* fin) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T || t >= n) return;
    F inv = load_elem<F>(inv_totals + t);
    u32 last = t + (n - 1 - t) / T * T;
    for (u32 o = last;; o -= T) {
        u32 pr = pairs[o], pos = pr & ~PAIR_SINGLE;
        Affine<F> p = load_point(src, entries, pos);
        Affine<F> r = p;
        if (!(pr & PAIR_SINGLE)) {
            Affine<F> q = load_point(src, entries, pos + 1);
            F d, num;
            int kind = pair_case<F, true>(p, q, d, num);
            F inv_d = o >= T ? inv * load_elem<F>(prefix + o - T) : inv;
            if (o >= T) inv = inv * d;
            if (kind == PAIR_ADD || kind == PAIR_DBL) {
                F l = num * inv_d;
                r.x = sqr(l) - p.x - q.x;
                r.y = l * (p.x - r.x) - p.y;
            } else if (kind == PAIR_SECOND) {
                r = q;
            } else if (kind == PAIR_INF) {
                r.x = F::zero();
                r.y = F::zero();
            }
        }
        u32 to = dest[o];
        Affine<F>* out = to & DEST_FINAL ? fin + (to & ~DEST_FINAL) : next + to;
        store_elem<F>(&out->x, r.x);
        store_elem<F>(&out->y, r.y);
        if (o < T) break;
    }
}

// Upper levels: the same trick over plain elements.
template <class F>
DEV void inv_prefix(const F* e, u32 n, u32 T, F* prefix, F* totals) {
    prefix_products<F>([&](u32 o) { return load_elem<F>(e + o); }, n, T, prefix, totals);
}

// e[o] <- e[o]^(-1), given the inverses of the threads' totals.
template <class F>
DEV void inv_down(F* e, const F* prefix, u32 n, u32 T, const F* inv_totals) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T || t >= n) return;
    F inv = load_elem<F>(inv_totals + t);
    u32 last = t + (n - 1 - t) / T * T;
    for (u32 o = last;; o -= T) {
        F d = load_elem<F>(e + o);
        F r = o >= T ? inv * load_elem<F>(prefix + o - T) : inv;
        if (o >= T) inv = inv * d;
        store_elem<F>(e + o, r);
        if (o < T) break;
    }
}

template <class F>
DEV void inv_each(F* e, u32 n) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    store_elem<F>(e + t, field_inv(load_elem<F>(e + t)));
}

// Window sums, stage 1: thread (w, j) handles buckets k in [lo, lo + seg) of window w
// (k = 1..2^(c-1), key w·2^(c-1) + k - 1) and writes sum (k)·B_k over its segment.
// add_bucket(run, b) adds bucket b to run (nothing when it is empty).
template <class F, class AddBucket>
DEV void window_segments_with(AddBucket add_bucket, u32 half, u32 W, u32 seg, Xyzz<F>* out) {
    u32 nseg = half / seg;
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= W * nseg) return;
    u32 w = t / nseg, j = t % nseg;
    u32 lo = j * seg + 1;
    const u32 b0 = w * half - 1;  // key of bucket k is b0 + k (mod 2^32: b0 wraps for w = 0)
    Xyzz<F> run = Xyzz<F>::inf(), tot = Xyzz<F>::inf();
    for (u32 k = lo + seg; k-- > lo;) {
        add_bucket(run, b0 + k);
        xyzz_add(tot, run);
    }
    // tot = sum (k - lo + 1)·B_k; add (lo - 1)·run.
    xyzz_add(tot, xyzz_mul_small(run, lo - 1));
    store_xyzz(out + t, tot);
}

// Over XYZZ buckets: bucket b is the last round's partial sum at partial[base[b]] when count[b]
// is 1, else the identity (read in place: gathering the 2^(c-1)·W buckets into one array first
// cost 2.9 ms at G1 2^24).
template <class F>
DEV void window_segments(const Xyzz<F>* partial, const u32* count, const u32* base, u32 half, u32 W, u32 seg,
                         Xyzz<F>* out) {
    window_segments_with<F>(
        [&](Xyzz<F>& run, u32 b) {
            if (count[b]) xyzz_add(run, load_xyzz<F>(partial + base[b]));
        },
        half, W, seg, out);
}

// Over affine buckets (after batch-affine rounds run to one point per bucket): bucket b is
// points[base[b]] when base[b + 1] > base[b], else the identity; run += B_k is then a mixed
// addition.
template <class F>
DEV void window_segments_affine(const Affine<F>* points, const u32* base, u32 half, u32 W, u32 seg, Xyzz<F>* out) {
    window_segments_with<F>(
        [&](Xyzz<F>& run, u32 b) {
            u32 at = base[b];
            if (base[b + 1] != at) xyzz_add_affine(run, load_affine<F>(points + at));
        },
        half, W, seg, out);
}

// Window sums, stage 2: in has W rows of 2·m points; out[w·m + i] = in[w·2m + 2i] + in[w·2m + 2i + 1].
template <class F>
DEV void pair_sums(const Xyzz<F>* in, u32 W, u32 m, Xyzz<F>* out) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= W * m) return;
    u32 w = t / m, i = t % m;
    Xyzz<F> a = load_xyzz<F>(in + (size_t)w * 2 * m + 2 * i);
    xyzz_add(a, load_xyzz<F>(in + (size_t)w * 2 * m + 2 * i + 1));
    store_xyzz(out + t, a);
}

// XYZZ -> Jacobian (X, Y, Z consecutive), as blst's blst_p1 / blst_p2.
template <class F>
DEV void to_jacobian(const Xyzz<F>* in, u32 n, F* out) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    F X, Y, Z;
    xyzz_to_jacobian(load_xyzz<F>(in + t), X, Y, Z);
    store_elem<F>(out + 3 * t, X);
    store_elem<F>(out + 3 * t + 1, Y);
    store_elem<F>(out + 3 * t + 2, Z);
}

// FINISH_BOUNDS: the launch bounds of the batch-affine rounds' finish pass (below).
#define MSM_INSTANTIATE(SUF, F, FINISH_BOUNDS)                                                                       \
    extern "C" __global__ void msm_accumulate_seg_##SUF(const Affine<F>* bases, const u32* entries, const u32* off,  \
                                                        u32 nb, u32 total, u32 S, const u32* pb, Xyzz<F>* out) {     \
        accumulate_segments<F>(bases, entries, off, nb, total, S, pb, out);                                           \
    }                                                                                                                 \
    extern "C" __global__ void msm_accumulate_xyzz_##SUF(const Xyzz<F>* in, const u32* ts, const u32* tl, u32 nt,    \
                                                         Xyzz<F>* out) {                                              \
        accumulate_xyzz<F>(in, ts, tl, nt, out);                                                                      \
    }                                                                                                                 \
    extern "C" __global__ void msm_window_segments_##SUF(const Xyzz<F>* p, const u32* cnt, const u32* base,          \
                                                         u32 half, u32 W, u32 seg, Xyzz<F>* out) {                    \
        window_segments<F>(p, cnt, base, half, W, seg, out);                                                          \
    }                                                                                                                 \
    extern "C" __global__ void msm_window_segments_affine_##SUF(const Affine<F>* p, const u32* base, u32 half,       \
                                                                u32 W, u32 seg, Xyzz<F>* out) {                       \
        window_segments_affine<F>(p, base, half, W, seg, out);                                                        \
    }                                                                                                                 \
    extern "C" __global__ void msm_pair_sums_##SUF(const Xyzz<F>* in, u32 W, u32 m, Xyzz<F>* out) {                \
        pair_sums<F>(in, W, m, out);                                                                                  \
    }                                                                                                                 \
    extern "C" __global__ void msm_to_jacobian_##SUF(const Xyzz<F>* in, u32 n, F* out) { to_jacobian<F>(in, n, out); } \
    extern "C" __global__ void msm_affine_prefix_##SUF(const Affine<F>* src, const u32* entries, const u32* pairs,    \
                                                       u32 n, u32 T, F* prefix, F* totals) {                          \
        affine_prefix<F>(src, entries, pairs, n, T, prefix, totals);                                                  \
    }                                                                                                                 \
    extern "C" __global__ void FINISH_BOUNDS msm_affine_finish_##SUF(                                                 \
        const Affine<F>* src, const u32* entries, const u32* pairs, const u32* dest, u32 n, u32 T, const F* prefix,     \
        const F* inv, Affine<F>* next, Affine<F>* fin) {                                                              \
        affine_finish<F>(src, entries, pairs, dest, n, T, prefix, inv, next, fin);                                    \
    }                                                                                                                 \
    extern "C" __global__ void msm_inv_prefix_##SUF(const F* e, u32 n, u32 T, F* prefix, F* totals) {                \
        inv_prefix<F>(e, n, T, prefix, totals);                                                                       \
    }                                                                                                                 \
    extern "C" __global__ void msm_inv_down_##SUF(F* e, const F* prefix, u32 n, u32 T, const F* inv) {               \
        inv_down<F>(e, prefix, n, T, inv);                                                                            \
    }                                                                                                                 \
    extern "C" __global__ void msm_inv_each_##SUF(F* e, u32 n) { inv_each<F>(e, n); }

// The G1 finish pass runs 4 blocks of 128 threads per SM (128 registers, a few spilled) instead
// of 3 (168 registers unbounded): G1 2^24 100.7 against 104.0 ms on the H200. G2's would spill
// ~1 KB per thread and took G2 2^24 from ~300 to 798 ms, so G2's has no bounds.
MSM_INSTANTIATE(g1, Fp, __launch_bounds__(128, 4))
MSM_INSTANTIATE(g2, Fp2, /* no bounds */)
