/*  cl_half.h - IEEE binary16 <-> binary32/binary64 conversions (internal).

    Branch-free bit manipulation, so that loops calling these functions are
    vectorised by GCC without F16C or AVX512-FP16 (a _Float16 conversion
    there is a library call per element).  Conversions to half round to
    nearest, ties to even, in a single rounding (also from double); values
    at or above 65520 in magnitude become infinity; NaNs stay NaNs (made
    quiet, upper payload bits kept); infinities and signed zeros are kept;
    subnormal halves are produced and read exactly.  The subnormal paths
    use one float (double) addition and assume the default rounding mode.
*/
#ifndef CL_HALF_H_INCLUDED
#define CL_HALF_H_INCLUDED

#include <stdint.h>
#include <string.h>

/* The device kernels (cuda/) compile these same functions for the GPU by
   defining CL_HALF_FN as `static inline __host__ __device__`, so host and
   device conversions are one code. */
#ifndef CL_HALF_FN
#define CL_HALF_FN static inline
#endif

CL_HALF_FN uint32_t cl_half_f32_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

CL_HALF_FN float cl_half_bits_f32(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

CL_HALF_FN uint64_t cl_half_f64_bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

CL_HALF_FN double cl_half_bits_f64(uint64_t b)
{
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

/* cond ? a : b for cond in {0, 1}, written with masks: a ternary whose arms
   hold floating-point arithmetic is kept as a branch by GCC (the arithmetic
   may trap), which stops vectorisation. */
CL_HALF_FN uint32_t cl_half_sel32(uint32_t cond, uint32_t a, uint32_t b)
{
    uint32_t m = 0u - cond;
    return (a & m) | (b & ~m);
}

/* Exact conversion of a binary16 bit pattern (low 16 bits of h) to float. */
CL_HALF_FN float cl_half_to_float(uint32_t h)
{
    uint32_t em = h & 0x7fffu; /* exponent and mantissa */
    uint32_t sign = (h & 0x8000u) << 16;
    uint32_t norm = (em << 13) + (112u << 23); /* rebias 15 -> 127 */
    uint32_t special = (em << 13) | 0x7f800000u;
    /* Subnormal halves are em * 2^-24, exact in float. */
    uint32_t sub = cl_half_f32_bits((float)(int32_t)em * 0x1p-24f);
    uint32_t b = cl_half_sel32(em >= 0x7c00u, special, norm);
    b = cl_half_sel32(em < 0x0400u, sub, b);
    return cl_half_bits_f32(b | sign);
}

/* float -> binary16 bit pattern, round to nearest even. */
CL_HALF_FN uint32_t cl_half_from_float(float f)
{
    uint32_t x = cl_half_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t a = x & 0x7fffffffu;
    uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
    uint32_t odd = (a >> 13) & 1u;
    /* Normal range: rebias, add half an ulp minus one plus the parity bit
       (ties to even), drop 13 bits; a carry moves into the exponent. */
    uint32_t norm = (a - (112u << 23) + 0xfffu + odd) >> 13;
    /* Below 2^-14: adding 0.5 puts the half's ulp 2^-24 at float's ulp in
       [0.5, 1), so the FPU does the rounding; 0x400 is the smallest normal. */
    uint32_t sub = cl_half_f32_bits(cl_half_bits_f32(a) + 0.5f) - 0x3f000000u;
    uint32_t r = cl_half_sel32(a >= 0x38800000u, norm, sub);
    r = cl_half_sel32(a >= 0x477ff000u, 0x7c00u, r); /* >= 65520: inf */
    r = cl_half_sel32(a > 0x7f800000u, nan, r);
    return r | sign;
}

/* double -> binary16 bit pattern, round to nearest even (one rounding). */
CL_HALF_FN uint32_t cl_half_from_double(double d)
{
    uint64_t x = cl_half_f64_bits(d);
    uint32_t sign = (uint32_t)(x >> 48) & 0x8000u;
    uint64_t a = x & 0x7fffffffffffffffull;
    uint32_t nan = 0x7e00u | (uint32_t)((a >> 42) & 0x3ffu);
    uint64_t odd = (a >> 42) & 1u;
    uint32_t norm = (uint32_t)((a - (1008ull << 52) + ((1ull << 41) - 1u) + odd) >> 42);
    /* Below 2^-14: in [2^28, 2^29) a double's ulp is 2^-24. */
    uint32_t sub =
        (uint32_t)(cl_half_f64_bits(cl_half_bits_f64(a) + 0x1p28) - cl_half_f64_bits(0x1p28));
    uint32_t r = cl_half_sel32(a >= 0x3f10000000000000ull, norm, sub);
    r = cl_half_sel32(a >= 0x40effe0000000000ull, 0x7c00u, r); /* >= 65520 */
    r = cl_half_sel32(a > 0x7ff0000000000000ull, nan, r);
    return r | sign;
}

#endif
