/*  cl_reduce_testutil.h - helpers shared by the selftests of the reduction
    kernels and of compression: a failure counter, a seeded generator and
    a slow, obviously correct binary16 reference (frexp/ldexp/nearbyint),
    written independently of cl_half.h.  Test code only.
*/
#ifndef CL_REDUCE_TESTUTIL_H_INCLUDED
#define CL_REDUCE_TESTUTIL_H_INCLUDED

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int s_failures;

/* Records a failure; prints only the first 50 so a broken kernel cannot
   flood the log. */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (s_failures++ < 50) {                                                               \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                               \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fputc('\n', stderr);                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static uint64_t s_rng_state;

/* Seed from CL_TEST_SEED (decimal) or a fixed default; printed so that a
   failing run can be repeated. */
static inline void rng_seed(const char *test)
{
    const char *env = getenv("CL_TEST_SEED");
    s_rng_state = 0x9e3779b97f4a7c15ull;
    if (env != NULL && *env != '\0')
        s_rng_state = strtoull(env, NULL, 10) | 1u;
    printf("%s: seed %llu (set CL_TEST_SEED to repeat)\n", test, (unsigned long long)s_rng_state);
}

static inline uint64_t rng_next(void)
{
    /* xorshift64* */
    s_rng_state ^= s_rng_state >> 12;
    s_rng_state ^= s_rng_state << 25;
    s_rng_state ^= s_rng_state >> 27;
    return s_rng_state * 0x2545f4914f6cdd1dull;
}

/* Uniform double in [lo, hi). */
static inline double rng_uniform(double lo, double hi)
{
    return lo + (hi - lo) * (double)(rng_next() >> 11) * 0x1p-53;
}

static inline double ref_half_to_double(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 0x3ff;
    double v;
    if (e == 0)
        v = ldexp(m, -24);
    else if (e == 31)
        v = m != 0 ? NAN : INFINITY;
    else
        v = ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

static inline int ref_half_is_nan(uint16_t h)
{
    return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
}

/* Correctly rounded (to nearest even) binary16 of d; NaN -> 0x7e00. */
static inline uint16_t ref_half_from_double(double d)
{
    uint16_t sign = signbit(d) ? 0x8000 : 0;
    double a = fabs(d);
    if (isnan(d))
        return 0x7e00 | sign;
    if (a >= 65520.0)
        return 0x7c00 | sign;
    if (a < 0x1p-14) /* subnormal range: multiples of 2^-24 */
        return (uint16_t)(sign | (uint16_t)nearbyint(a * 0x1p24));
    int e;
    frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
    int E = e - 1;
    double m = nearbyint(ldexp(a, 10 - E)); /* 1024 .. 2048 */
    return (uint16_t)(sign | (((E + 15) << 10) + (int)m - 1024));
}

/* Same bits, or both NaN. */
static inline int half_same(uint16_t x, uint16_t y)
{
    return x == y || (ref_half_is_nan(x) && ref_half_is_nan(y));
}

#endif
