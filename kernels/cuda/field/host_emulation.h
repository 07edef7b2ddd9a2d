// Host build of the field kernels, for tests without a GPU (not part of the NVRTC source).
// Include this before field/mont.cuh: it defines the CUDA qualifiers away and emulates the PTX
// carry-chain primitives with one carry flag, as PTX specifies them (.cc sets the flag, the
// c forms consume it). The same source then runs as plain C++.
#pragma once
#define CUZK_HOST_EMULATION 1

typedef unsigned int u32;
typedef unsigned long long u64;

#define DEV inline
#define __device__
#define __noinline__
#define __forceinline__
#define __global__

struct uint4 {
    u32 x, y, z, w;
};
inline uint4 make_uint4(u32 x, u32 y, u32 z, u32 w) { return uint4{x, y, z, w}; }
inline int __ffs(u32 x) { return x ? __builtin_ctz(x) + 1 : 0; }
inline int __clz(u32 x) { return x ? __builtin_clz(x) : 32; }
inline u32 __funnelshift_l(u32 lo, u32 hi, u32 shift) {
    return (u32)(((((u64)hi << 32) | lo) << (shift & 31)) >> 32);
}

static thread_local u32 carry_flag = 0;

inline u32 add_cc(u32 a, u32 b) { u64 r = (u64)a + b; carry_flag = (u32)(r >> 32); return (u32)r; }
inline u32 addc_cc(u32 a, u32 b) { u64 r = (u64)a + b + carry_flag; carry_flag = (u32)(r >> 32); return (u32)r; }
inline u32 addc(u32 a, u32 b) { return a + b + carry_flag; }
// Subtraction: the flag is the borrow.
inline u32 sub_cc(u32 a, u32 b) { u64 r = (u64)a - b; carry_flag = (u32)(r >> 63); return (u32)r; }
inline u32 subc_cc(u32 a, u32 b) { u64 r = (u64)a - b - carry_flag; carry_flag = (u32)(r >> 63); return (u32)r; }
inline u32 subc(u32 a, u32 b) { return a - b - carry_flag; }
inline u32 mad_lo_cc(u32 a, u32 b, u32 c) { u64 r = (u64)(u32)(a * b) + c; carry_flag = (u32)(r >> 32); return (u32)r; }
inline u32 madc_lo_cc(u32 a, u32 b, u32 c) { u64 r = (u64)(u32)(a * b) + c + carry_flag; carry_flag = (u32)(r >> 32); return (u32)r; }
inline u32 mad_hi_cc(u32 a, u32 b, u32 c) { u64 r = (((u64)a * b) >> 32) + c; carry_flag = (u32)(r >> 32); return (u32)r; }
inline u32 madc_hi_cc(u32 a, u32 b, u32 c) { u64 r = (((u64)a * b) >> 32) + c + carry_flag; carry_flag = (u32)(r >> 32); return (u32)r; }

// FP64 primitives of field/fp64_mont.cuh: IEEE double FMAs in the named rounding mode (the
// harness is built with -frounding-math so the mode switch is not optimised away).
#include <cfenv>
#include <cmath>
#include <cstring>
inline double fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline double fma_rz(double a, double b, double c) {
    int old = std::fegetround();
    std::fesetround(FE_TOWARDZERO);
    volatile double va = a;
    volatile double r = std::fma(va, b, c);
    std::fesetround(old);
    return r;
}
inline u64 double_bits(double x) { u64 r; std::memcpy(&r, &x, 8); return r; }
inline double bits_double(u64 x) { double r; std::memcpy(&r, &x, 8); return r; }
