// NTT family over Fr on a buffer of n Montgomery-form elements (8 words each), natural order:
// bit reversal, then radix-2 decimation-in-time stages (one dispatch per stage, or the first
// stages fused in workgroup memory by ntt_local), then scaling by powers (cosets, 1/n).

@group(0) @binding(0) var<storage, read_write> d: array<u32>;
@group(0) @binding(1) var<storage, read> t1: array<u32>;
@group(0) @binding(2) var<storage, read> t2: array<u32>;
@group(0) @binding(3) var<storage, read> t3: array<u32>;
@group(0) @binding(4) var<uniform> prm: Params;

fn ld_d(i: u32) -> frE {
    var r: frE;
    for (var k = 0u; k < 8u; k++) {
        r[k] = d[i * 8u + k];
    }
    return r;
}

fn st_d(i: u32, v_in: frE) {
    var v = v_in;
    for (var k = 0u; k < 8u; k++) {
        d[i * 8u + k] = v[k];
    }
}

fn ld_t1(i: u32) -> frE {
    var r: frE;
    for (var k = 0u; k < 8u; k++) {
        r[k] = t1[i * 8u + k];
    }
    return r;
}

fn ld_t2(i: u32) -> frE {
    var r: frE;
    for (var k = 0u; k < 8u; k++) {
        r[k] = t2[i * 8u + k];
    }
    return r;
}

fn ld_t3(i: u32) -> frE {
    var r: frE;
    for (var k = 0u; k < 8u; k++) {
        r[k] = t3[i * 8u + k];
    }
    return r;
}

// prm.a = n, prm.b = log n (>= 1).
@compute @workgroup_size($WG)
fn ntt_bitrev(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= prm.a) {
        return;
    }
    let j = reverseBits(i) >> (32u - prm.b);
    if (i < j) {
        let x = ld_d(i);
        st_d(i, ld_d(j));
        st_d(j, x);
    }
}

// One stage of half-size m = 2^prm.b: prm.a = n/2 butterflies, prm.c = log2(n/(2m)) (twiddle
// stride); t1[k] = omega^k for k < n/2.
@compute @workgroup_size($WG)
fn ntt_stage(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = linear_id(gid, nwg);
    if (t >= prm.a) {
        return;
    }
    let m = 1u << prm.b;
    let j = t & (m - 1u);
    let i0 = ((t >> prm.b) << (prm.b + 1u)) + j;
    let i1 = i0 + m;
    let u = ld_d(i0);
    let v = fr_mul(ld_d(i1), ld_t1(j << prm.c));
    st_d(i0, fr_add(u, v));
    st_d(i1, fr_sub(u, v));
}

// The first prm.b stages (half-sizes 1 .. 2^(prm.b-1)) of blocks of 2^prm.b = 2·$WG elements
// in workgroup memory: one workgroup per block. prm.a = n/2, prm.c = log2(n) - 1 (twiddle
// shift of the first stage).
var<workgroup> sh: array<frE, $WG2>;

@compute @workgroup_size($WG)
fn ntt_local(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let block = wid.x + wid.y * nwg.x;
    let base = block * $WG2u;
    let l = lid.x;
    let valid = base < 2u * prm.a;
    if (valid) {
        sh[l] = ld_d(base + l);
        sh[l + $WGu] = ld_d(base + l + $WGu);
    }
    workgroupBarrier();
    for (var s = 0u; s < prm.b; s++) {
        let m = 1u << s;
        let j = l & (m - 1u);
        let i0 = ((l >> s) << (s + 1u)) + j;
        let i1 = i0 + m;
        if (valid) {
            let u = sh[i0];
            let v = fr_mul(sh[i1], ld_t1(j << (prm.c - s)));
            sh[i0] = fr_add(u, v);
            sh[i1] = fr_sub(u, v);
        }
        workgroupBarrier();
    }
    if (valid) {
        st_d(base + l, sh[l]);
        st_d(base + l + $WGu, sh[l + $WGu]);
    }
}

// d[i] *= t1[i & (2^prm.b - 1)] · t2[i >> prm.b] for i < prm.a (powers of the coset shift,
// 1/n, from two small tables).
@compute @workgroup_size($WG)
fn ntt_scale(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= prm.a) {
        return;
    }
    let mask = (1u << prm.b) - 1u;
    let f = fr_mul(ld_t1(i & mask), ld_t2(i >> prm.b));
    st_d(i, fr_mul(ld_d(i), f));
}

// On the coset: d[i] = (d[i]·t1[i] - t2[i]) · t3[0] (t3[0] = 1/Z), i < prm.a.
@compute @workgroup_size($WG)
fn ntt_quotient(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= prm.a) {
        return;
    }
    let z = ld_t3(0u);
    st_d(i, fr_mul(fr_sub(fr_mul(ld_d(i), ld_t1(i)), ld_t2(i)), z));
}

// compute_h, A·B on the coset: d[i] = d[i]·t1[i], i < prm.a.
@compute @workgroup_size($WG)
fn ntt_mul(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= prm.a) {
        return;
    }
    st_d(i, fr_mul(ld_d(i), ld_t1(i)));
}

// compute_h, the coefficients of (A·B - C)/Z from A·B's and C's: d[i] = (d[i] - t2[i]) · t3[0]
// (t3[0] = 1/Z), i < prm.a.
@compute @workgroup_size($WG)
fn ntt_sub_over_z(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= prm.a) {
        return;
    }
    st_d(i, fr_mul(fr_sub(ld_d(i), ld_t2(i)), ld_t3(0u)));
}
