// Shared helpers: 32x32 -> 64-bit products from 16-bit halves (WGSL has no 64-bit integers),
// and the linear invocation index of a 2-D dispatch.

// a * b as (lo, hi).
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    // p01 + (p00 >> 16) + (p10 & 0xffff) <= (2^16 - 1)^2 + 2 (2^16 - 1) < 2^32: no overflow.
    let mid = p01 + (p00 >> 16u) + (p10 & 0xffffu);
    return vec2<u32>((mid << 16u) | (p00 & 0xffffu), p11 + (mid >> 16u) + (p10 >> 16u));
}

// a * b + c + d as (lo, hi); never overflows 64 bits.
fn mac(a: u32, b: u32, c: u32, d: u32) -> vec2<u32> {
    let p = mul_wide(a, b);
    let s1 = p.x + c;
    let s2 = s1 + d;
    return vec2<u32>(s2, p.y + select(0u, 1u, s1 < c) + select(0u, 1u, s2 < d));
}

// Invocation index for a dispatch of (x, y) workgroups of $WG invocations each.
fn linear_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * $WGu;
}

// Kernel arguments (one uniform block per dispatch; meaning documented at each kernel).
struct Params {
    a: u32, b: u32, c: u32, d: u32, e: u32, f: u32, g: u32, h: u32,
}
