/*  cl_reduce_weighted.c - the weighted sum of DESIGN section 2:
    out[k] = scale * sum_i w[i] * in[i][k], summed in rank order.

    How it works: the vector is walked in blocks of CL_WS_BLOCK elements; a
    block's sums live in a small accumulator array on the stack (in L1), and
    each input is added to it with a vectorised loop.  Accumulators are
    double for float16, float, double and the 8/16/32-bit integers (an int32
    times a weight is exact enough in 53 bits), and long double for the
    64-bit integers (64 significant bits hold every int64 exactly) and long
    double itself.  Integers are rounded to nearest with ties away from zero
    and saturated to the type's range (NaN, possible only when sums overflow
    to infinities of both signs, gives 0).  Complex types are pairs of reals
    scaled by real weights.  Built with -ffp-contract=off, so the bits do
    not depend on whether the CPU has FMA.
*/
#include "cl_half.h"
#include "cl_reduce.h"
#include "cl_reduce_impl.h"
#include <math.h>

#define CL_WS_BLOCK 1024

/* Defines static void name(void *out, const void *const *in, const double
   *w, int n, size_t count, double scale) for element type T with
   accumulator type A; LOAD(x) converts an element to A, STORE(v) converts
   the scaled value v (type A) back to the element's value. */
#define CL_WS_DEFINE(name, T, A, LOAD, STORE)                                                      \
    static void name(void *out_, const void *const *in_, const double *w, int n, size_t count,     \
                     double scale)                                                                 \
    {                                                                                              \
        A acc[CL_WS_BLOCK];                                                                        \
        T *out = (T *)out_;                                                                        \
        for (size_t base = 0; base < count; base += CL_WS_BLOCK) {                                 \
            size_t m = count - base < CL_WS_BLOCK ? count - base : CL_WS_BLOCK;                    \
            const T *restrict x0 = (const T *)in_[0] + base;                                       \
            const A w0 = (A)(w != NULL ? w[0] : 1.0);                                              \
            for (size_t k = 0; k < m; k++)                                                         \
                acc[k] = w0 * LOAD(x0[k]);                                                         \
            for (int i = 1; i < n; i++) {                                                          \
                const T *restrict xi = (const T *)in_[i] + base;                                   \
                const A wi = (A)(w != NULL ? w[i] : 1.0);                                          \
                for (size_t k = 0; k < m; k++)                                                     \
                    acc[k] += wi * LOAD(xi[k]);                                                    \
            }                                                                                      \
            const A s = (A)scale;                                                                  \
            T *restrict o = out + base;                                                            \
            for (size_t k = 0; k < m; k++)                                                         \
                o[k] = STORE(acc[k] * s);                                                          \
        }                                                                                          \
    }

#define CL_IDENT(x) (x)
#define CL_HALF_LOAD(x) ((double)cl_half_to_float(x))
#define CL_HALF_STORE(v) ((uint16_t)cl_half_from_double(v))

/* Round half away from zero and saturate, in double (8..32-bit types). */
#define CL_WS_INT_STORE_D(NAME, T, LO, HI)                                                         \
    static inline T NAME(double v)                                                                 \
    {                                                                                              \
        if (v != v)                                                                                \
            return 0;                                                                              \
        if (v <= (double)(LO))                                                                     \
            return (LO);                                                                           \
        if (v >= (double)(HI))                                                                     \
            return (HI);                                                                           \
        return (T)round(v);                                                                        \
    }
/* The same in long double (64-bit types: LO and HI are exact there). */
#define CL_WS_INT_STORE_LD(NAME, T, LO, HI)                                                        \
    static inline T NAME(long double v)                                                            \
    {                                                                                              \
        if (v != v)                                                                                \
            return 0;                                                                              \
        if (v <= (long double)(LO))                                                                \
            return (LO);                                                                           \
        if (v >= (long double)(HI))                                                                \
            return (HI);                                                                           \
        return (T)roundl(v);                                                                       \
    }

CL_WS_INT_STORE_D(st_i8, int8_t, INT8_MIN, INT8_MAX)
CL_WS_INT_STORE_D(st_i16, int16_t, INT16_MIN, INT16_MAX)
CL_WS_INT_STORE_D(st_i32, int32_t, INT32_MIN, INT32_MAX)
CL_WS_INT_STORE_LD(st_i64, int64_t, INT64_MIN, INT64_MAX)
CL_WS_INT_STORE_D(st_u8, uint8_t, 0, UINT8_MAX)
CL_WS_INT_STORE_D(st_u16, uint16_t, 0, UINT16_MAX)
CL_WS_INT_STORE_D(st_u32, uint32_t, 0, UINT32_MAX)
CL_WS_INT_STORE_LD(st_u64, uint64_t, 0, UINT64_MAX)

CL_WS_DEFINE(ws_i8, cl_ua_i8, double, (double), st_i8)
CL_WS_DEFINE(ws_i16, cl_ua_i16, double, (double), st_i16)
CL_WS_DEFINE(ws_i32, cl_ua_i32, double, (double), st_i32)
CL_WS_DEFINE(ws_i64, cl_ua_i64, long double, (long double), st_i64)
CL_WS_DEFINE(ws_u8, cl_ua_u8, double, (double), st_u8)
CL_WS_DEFINE(ws_u16, cl_ua_u16, double, (double), st_u16)
CL_WS_DEFINE(ws_u32, cl_ua_u32, double, (double), st_u32)
CL_WS_DEFINE(ws_u64, cl_ua_u64, long double, (long double), st_u64)
CL_WS_DEFINE(ws_f16, cl_ua_u16, double, CL_HALF_LOAD, CL_HALF_STORE)
CL_WS_DEFINE(ws_f32, cl_ua_f32, double, (double), (float))
CL_WS_DEFINE(ws_f64, cl_ua_f64, double, CL_IDENT, CL_IDENT)
CL_WS_DEFINE(ws_ld, cl_ua_ld, long double, CL_IDENT, CL_IDENT)

typedef void(cl_ws_fn)(void *out, const void *const *in, const double *w, int n, size_t count,
                       double scale);

int cl_reduce_weighted_sum(collab_dtype_t t, void *out, const void *const *in, const double *w,
                           int n, size_t count, double scale)
{
    cl_ws_fn *fn = NULL;
    size_t reals = count; /* complex: two reals per element */
    switch (t) {
    case COLLAB_INT8:
        fn = ws_i8;
        break;
    case COLLAB_INT16:
        fn = ws_i16;
        break;
    case COLLAB_INT32:
        fn = ws_i32;
        break;
    case COLLAB_INT64:
        fn = ws_i64;
        break;
    case COLLAB_UINT8:
        fn = ws_u8;
        break;
    case COLLAB_UINT16:
        fn = ws_u16;
        break;
    case COLLAB_UINT32:
        fn = ws_u32;
        break;
    case COLLAB_UINT64:
        fn = ws_u64;
        break;
    case COLLAB_FLOAT16:
        fn = ws_f16;
        break;
    case COLLAB_FLOAT:
        fn = ws_f32;
        break;
    case COLLAB_DOUBLE:
        fn = ws_f64;
        break;
    case COLLAB_LONG_DOUBLE:
        fn = ws_ld;
        break;
    case COLLAB_C_FLOAT_COMPLEX:
        fn = ws_f32;
        reals = 2 * count;
        break;
    case COLLAB_C_DOUBLE_COMPLEX:
        fn = ws_f64;
        reals = 2 * count;
        break;
    case COLLAB_C_LONG_DOUBLE_COMPLEX:
        fn = ws_ld;
        reals = 2 * count;
        break;
    default:
        if ((unsigned)t >= COLLAB_DTYPE_COUNT)
            return COLLAB_ERR_TYPE;
        return COLLAB_ERR_OP; /* pair types, C_BOOL, BYTE: no SUM */
    }
    if (n < 1 || in == NULL || !isfinite(scale) || scale < 0)
        return COLLAB_ERR_ARG;
    if (reals < count) /* 2 * count overflowed */
        return COLLAB_ERR_ARG;
    if (w != NULL) {
        for (int i = 0; i < n; i++)
            if (!isfinite(w[i]) || w[i] < 0)
                return COLLAB_ERR_ARG;
    }
    if (count == 0)
        return COLLAB_OK;
    if (cl_reduce_check_bufs(out, in, n) != COLLAB_OK)
        return COLLAB_ERR_ARG;
    fn(out, in, w, n, reals, scale);
    return COLLAB_OK;
}

int cl_reduce_is_plain_sum(int n, int size, const double *w)
{
    if (n != size)
        return 0;
    if (w == NULL)
        return 1;
    for (int i = 1; i < n; i++)
        if (w[i] != w[0])
            return 0;
    return 1;
}
