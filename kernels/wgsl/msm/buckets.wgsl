// MSM, point side for $C: bucket sums and window sums (host side: backend-wgpu/src/msm.rs).
//
// Bucket sums run in rounds over the entries sorted by bucket (offsets off[0..nb+1]): the
// entries are cut into segments of exactly S, one invocation per segment, so every invocation
// does the same number of additions however unequal the buckets are; an invocation flushes
// its accumulator whenever the bucket changes. Bucket b's partial sum from segment t goes to
// pout[pbase[b] + t - off[b]/S], so each bucket's partials are contiguous. Later rounds cut
// each bucket's partials into tasks of at most S (never crossing buckets) until every bucket
// has one partial. Round 1 adds affine bases (mixed additions, negated for negative digits).
//
// Window sums: invocation (w, j) sums k·B_k over a segment of window w's buckets with the
// running-sum trick; segments are then added pairwise. The host adds windows by doubling.

@group(0) @binding(0) var<storage, read> bases: array<u32>;
@group(0) @binding(1) var<storage, read> entries: array<u32>;
@group(0) @binding(2) var<storage, read> off: array<u32>;
@group(0) @binding(3) var<storage, read> pbase: array<u32>;
@group(0) @binding(4) var<storage, read> pin: array<u32>;
@group(0) @binding(5) var<storage, read_write> pout: array<u32>;
@group(0) @binding(6) var<storage, read> bidx: array<u32>;
@group(0) @binding(7) var<uniform> prm: Params;

const NONE: u32 = 0xffffffffu;

fn ld_aff(i: u32) -> $CAff {
    let o = prm.g + i * (2u * $FWu); // prm.g: word offset of the first base in the binding
    return $CAff(bases_$F(o), bases_$F(o + $FWu));
}

fn ld_pin(i: u32) -> $CXyzz {
    let o = i * (4u * $FWu);
    return $CXyzz(pin_$F(o), pin_$F(o + $FWu), pin_$F(o + 2u * $FWu), pin_$F(o + 3u * $FWu));
}

fn st_pout(i: u32, p: $CXyzz) {
    let o = i * (4u * $FWu);
    pout_$F(o, p.X);
    pout_$F(o + $FWu, p.Y);
    pout_$F(o + 2u * $FWu, p.ZZ);
    pout_$F(o + 3u * $FWu, p.ZZZ);
}

// The bucket holding entry e: the largest b < nb with off[b] <= e.
fn find_bucket(e: u32, nb: u32) -> u32 {
    var lo = 0u;
    var hi = nb;
    while (hi - lo > 1u) {
        let mid = (lo + hi) >> 1u;
        if (off[mid] <= e) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// Round 1: prm.a = total entries, prm.b = S, prm.c = nb, prm.g = word offset of base 0.
@compute @workgroup_size($WG)
fn $C_round_affine(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = linear_id(gid, nwg);
    let S = prm.b;
    let start = t * S;
    if (start >= prm.a) {
        return;
    }
    let end = min(start + S, prm.a);
    var b = find_bucket(start, prm.c);
    var bend = off[b + 1u];
    var acc = $C_inf();
    for (var e = start; e < end; e++) {
        if (e == bend) {
            st_pout(pbase[b] + t - off[b] / S, acc);
            acc = $C_inf();
            // The next non-empty bucket: usually b + 1, else a binary search (a linear skip
            // over many empty buckets could exhaust llvmpipe's loop budget, see shaders.rs).
            b++;
            if (off[b + 1u] <= e) {
                b = find_bucket(e, prm.c);
            }
            bend = off[b + 1u];
        }
        let v = entries[e];
        var q = ld_aff(v & 0x7fffffffu);
        if ((v >> 31u) != 0u) {
            q.y = $F_neg(q.y);
        }
        acc = $C_add_affine(acc, q);
    }
    st_pout(pbase[b] + t - off[b] / S, acc);
}

// Later rounds: task t adds the pbase[t] partials of one bucket from pin[entries[t]] (tasks
// never cross buckets, so every round shrinks each bucket's run by a factor S).
@compute @workgroup_size($WG)
fn $C_round_tasks(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = linear_id(gid, nwg);
    if (t >= prm.a) {
        return;
    }
    let start = entries[t];
    var acc = $C_inf();
    for (var e = start; e < start + pbase[t]; e++) {
        acc = $C_add(acc, ld_pin(e));
    }
    st_pout(t, acc);
}

// prm.a = half = 2^(c-1) buckets per window, prm.b = W, prm.c = seg (buckets per
// invocation), prm.d = segments per window; bucket b is pin[bidx[b]] (NONE: empty).
@compute @workgroup_size($WG)
fn $C_window_segments(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = linear_id(gid, nwg);
    if (t >= prm.b * prm.d) {
        return;
    }
    let w = t / prm.d;
    let j = t % prm.d;
    let lo = j * prm.c + 1u;
    var run = $C_inf();
    var tot = $C_inf();
    for (var k = lo + prm.c; k > lo; k--) {
        let idx = bidx[w * prm.a + k - 2u];
        if (idx != NONE) {
            run = $C_add(run, ld_pin(idx));
        }
        tot = $C_add(tot, run);
    }
    // tot = sum (k - lo + 1)·B_k; add (lo - 1)·run.
    tot = $C_add(tot, $C_mul_small(run, lo - 1u));
    st_pout(t, tot);
}

// pin has prm.a rows of 2·prm.b points; pout[w·prm.b + i] = pin[w·2prm.b + 2i] + pin[.. + 1].
@compute @workgroup_size($WG)
fn $C_pair_sums(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = linear_id(gid, nwg);
    if (t >= prm.a * prm.b) {
        return;
    }
    let w = t / prm.b;
    let i = t % prm.b;
    let base = w * 2u * prm.b + 2u * i;
    st_pout(t, $C_add(ld_pin(base), ld_pin(base + 1u)));
}
