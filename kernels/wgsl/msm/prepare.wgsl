// MSM, scalar side (Fr): gather the scalars that take part (a density bitmap keeps the i-th
// set bit's scalar at compact rank i), convert them from Montgomery form to canonical
// integers, then split each into signed c-bit digits and counting-sort (point index, sign)
// entries by bucket: msm_histogram counts, the host scans, msm_scatter places.
//
// Digits are in [-2^(c-1), 2^(c-1)]; a nonzero digit d of window w goes to bucket key
// w·2^(c-1) + |d| - 1, with the point negated when d < 0; zero digits are skipped, and so are
// the windows above the last one a scalar can reach (windows_needed).

@group(0) @binding(0) var<storage, read> scal: array<u32>;
@group(0) @binding(1) var<storage, read> words: array<u32>;
@group(0) @binding(2) var<storage, read> prefix: array<u32>;
@group(0) @binding(3) var<storage, read_write> outp: array<u32>;
@group(0) @binding(4) var<uniform> prm: Params;
@group(0) @binding(5) var<storage, read> sc: array<u32>;
@group(0) @binding(6) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> entries: array<u32>;

// prm.a = len (indices in this chunk), prm.b = 1 when filtered by the density words
// (2 u32 per 64-bit word; prefix[w] = set bits before word w).
@compute @workgroup_size($WG)
fn msm_prepare(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= prm.a) {
        return;
    }
    var rank = i;
    if (prm.b == 1u) {
        let w = i >> 6u;
        let bit = i & 63u;
        let lo = words[2u * w];
        let hi = words[2u * w + 1u];
        var present = 0u;
        var below = 0u;
        if (bit < 32u) {
            present = (lo >> bit) & 1u;
            below = countOneBits(lo & ((1u << bit) - 1u));
        } else {
            present = (hi >> (bit - 32u)) & 1u;
            below = countOneBits(lo) + countOneBits(hi & ((1u << (bit - 32u)) - 1u));
        }
        if (present == 0u) {
            return;
        }
        rank = prefix[w] + below;
    }
    var s: frE;
    for (var k = 0u; k < 8u; k++) {
        s[k] = scal[i * 8u + k];
    }
    var c = fr_from_mont(s);
    for (var k = 0u; k < 8u; k++) {
        outp[rank * 8u + k] = c[k];
    }
}

// Bits [pos, pos + c) of the scalar at word offset o (zero above bit 255).
fn scalar_bits(o: u32, pos: u32, c: u32) -> u32 {
    let word = pos >> 5u;
    let sh = pos & 31u;
    var v = 0u;
    if (word < 8u) {
        v = sc[o + word] >> sh;
        if (sh + c > 32u && word + 1u < 8u) {
            v |= sc[o + word + 1u] << (32u - sh);
        }
    }
    return v & ((1u << c) - 1u);
}

// The windows that can hold a nonzero digit of the scalar at word offset o, of at most nw:
// none for 0; for L > 0 bits the first ceil((L + 1) / c). Then the scalar is below
// 2^(k·c - 1), so window k - 1's digit (its bits, below 2^(c-1), plus the carry) is at most
// 2^(c-1) and not negative, no carry reaches window k, and every later digit is 0. A 0/1
// scalar needs one window.
fn windows_needed(o: u32, c: u32, nw: u32) -> u32 {
    var bits = 0u;
    for (var k = 8u; k > 0u; k--) {
        if (bits == 0u && sc[o + k - 1u] != 0u) {
            bits = 32u * k - countLeadingZeros(sc[o + k - 1u]);
        }
    }
    if (bits == 0u) {
        return 0u;
    }
    return min((bits + c) / c, nw);
}

var<workgroup> dense_in_group: atomic<u32>;

// counts[0] += the scalars above 1 (prm.a = m), one atomic per workgroup: they size the
// windows (backend-wgpu/src/msm.rs).
@compute @workgroup_size($WG)
fn msm_count_dense(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) li: u32) {
    let i = linear_id(gid, nwg);
    if (i < prm.a) {
        var high = 0u;
        for (var k = 1u; k < 8u; k++) {
            high |= sc[i * 8u + k];
        }
        if (high != 0u || sc[i * 8u] > 1u) {
            atomicAdd(&dense_in_group, 1u);
        }
    }
    workgroupBarrier();
    if (li == 0u) {
        let n = atomicLoad(&dense_in_group);
        if (n != 0u) {
            atomicAdd(&counts[0], n);
        }
    }
}

// prm.a = m, prm.b = c, prm.c = number of windows W.
@compute @workgroup_size($WG)
fn msm_histogram(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= prm.a) {
        return;
    }
    let c = prm.b;
    let half = 1u << (c - 1u);
    var carry = 0u;
    let nw = windows_needed(i * 8u, c, prm.c);
    for (var w = 0u; w < nw; w++) {
        var d = scalar_bits(i * 8u, w * c, c) + carry;
        if (d > half) {
            d = (1u << c) - d;
            carry = 1u;
        } else {
            carry = 0u;
        }
        if (d != 0u) {
            atomicAdd(&counts[w * half + d - 1u], 1u);
        }
    }
}

// Same digits; counts holds each bucket's next free slot (the scanned offsets).
@compute @workgroup_size($WG)
fn msm_scatter(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= prm.a) {
        return;
    }
    let c = prm.b;
    let half = 1u << (c - 1u);
    var carry = 0u;
    let nw = windows_needed(i * 8u, c, prm.c);
    for (var w = 0u; w < nw; w++) {
        var d = scalar_bits(i * 8u, w * c, c) + carry;
        var neg = 0u;
        if (d > half) {
            d = (1u << c) - d;
            carry = 1u;
            neg = 0x80000000u;
        } else {
            carry = 0u;
        }
        if (d != 0u) {
            let pos = atomicAdd(&counts[w * half + d - 1u], 1u);
            entries[pos] = i | neg;
        }
    }
}
