/*  cl_reduce_test.c - selftest of the reduction kernels.

    Every datatype x op: the table of collab_op_valid() against MPI's table
    and against the kernels present; every valid pair against a scalar
    reference written here (random data with edge values: INT_MIN, NaN,
    infinities, signed zeros, subnormals, ties), in place and through
    cl_reduce_fold, on aligned and misaligned buffers and on lengths that
    cover vector tails and fold blocks; hand-checked edge cases (wrapping,
    NaN in MAX, MAXLOC ties, binary16 rounding, complex infinities); user
    ops in MPI's order; argument errors.  The weighted sum is tested in
    cl_reduce_weighted_test.c.
*/
#include "cl_dtype.h"
#include "cl_reduce.h"
#include "cl_reduce_impl.h"
#include "cl_reduce_testutil.h"
#include <float.h>
#include <limits.h>
#include <string.h>

/* ---- scalar reference -------------------------------------------------- */

static int is_signed_int(collab_dtype_t t)
{
    return t == COLLAB_INT8 || t == COLLAB_INT16 || t == COLLAB_INT32 || t == COLLAB_INT64;
}

/* Integer element as 64 bits (sign- or zero-extended). */
static uint64_t load_int(collab_dtype_t t, const void *p)
{
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (t) {
    case COLLAB_INT8:
        memcpy(&i8, p, 1);
        return (uint64_t)(int64_t)i8;
    case COLLAB_INT16:
        memcpy(&i16, p, 2);
        return (uint64_t)(int64_t)i16;
    case COLLAB_INT32:
        memcpy(&i32, p, 4);
        return (uint64_t)(int64_t)i32;
    case COLLAB_INT64:
        memcpy(&i64, p, 8);
        return (uint64_t)i64;
    case COLLAB_UINT16:
        memcpy(&u16, p, 2);
        return u16;
    case COLLAB_UINT32:
        memcpy(&u32, p, 4);
        return u32;
    case COLLAB_UINT64:
        memcpy(&u64, p, 8);
        return u64;
    default:
        memcpy(&u8, p, 1);
        return u8; /* UINT8, C_BOOL, BYTE */
    }
}

/* Stores the low bytes of v (two's complement truncation, little-endian). */
static void store_int(collab_dtype_t t, void *p, uint64_t v)
{
    memcpy(p, &v, collab_dtype_extent(t));
}

static int int_greater(collab_dtype_t t, uint64_t x, uint64_t y)
{
    return is_signed_int(t) ? (int64_t)x > (int64_t)y : x > y;
}

#define REF_REAL(T, a, b, r)                                                                       \
    do {                                                                                           \
        T x_, y_, z_;                                                                              \
        memcpy(&x_, a, sizeof x_);                                                                 \
        memcpy(&y_, b, sizeof y_);                                                                 \
        if (op == COLLAB_OP_SUM)                                                                   \
            z_ = y_ + x_;                                                                          \
        else if (op == COLLAB_OP_PROD)                                                             \
            z_ = y_ * x_;                                                                          \
        else if (op == COLLAB_OP_MAX)                                                              \
            z_ = y_ > x_ ? y_ : x_;                                                                \
        else                                                                                       \
            z_ = y_ < x_ ? y_ : x_;                                                                \
        memcpy(r, &z_, sizeof z_);                                                                 \
    } while (0)

/* Complex SUM component-wise; PROD by the textbook formula, which is what
   C's multiplication computes whenever the result is not NaN + NaN i. */
#define REF_COMPLEX(T, a, b, r)                                                                    \
    do {                                                                                           \
        T x_[2], y_[2], z_[2];                                                                     \
        memcpy(x_, a, sizeof x_);                                                                  \
        memcpy(y_, b, sizeof y_);                                                                  \
        if (op == COLLAB_OP_SUM) {                                                                 \
            z_[0] = y_[0] + x_[0];                                                                 \
            z_[1] = y_[1] + x_[1];                                                                 \
        } else {                                                                                   \
            z_[0] = y_[0] * x_[0] - y_[1] * x_[1];                                                 \
            z_[1] = y_[0] * x_[1] + y_[1] * x_[0];                                                 \
        }                                                                                          \
        memcpy(r, z_, sizeof z_);                                                                  \
    } while (0)

/* MPICH's MAXLOC/MINLOC: u = inout element, v = in element. */
#define REF_PAIR(P, a, b, r)                                                                       \
    do {                                                                                           \
        P u_, v_;                                                                                  \
        memcpy(&v_, a, sizeof v_);                                                                 \
        memcpy(&u_, b, sizeof u_);                                                                 \
        if (u_.v == v_.v) {                                                                        \
            if (v_.i < u_.i)                                                                       \
                u_.i = v_.i;                                                                       \
        } else if (op == COLLAB_OP_MAXLOC ? u_.v < v_.v : u_.v > v_.v) {                           \
            u_.v = v_.v;                                                                           \
            u_.i = v_.i;                                                                           \
        }                                                                                          \
        memcpy(r, &u_, sizeof u_);                                                                 \
    } while (0)

/* r = a (op) b for one element: a from `in`, b from `inout`.  r may be b. */
static void ref_op(collab_dtype_t t, collab_op_kind_t op, const void *a, const void *b, void *r)
{
    switch (t) {
    case COLLAB_FLOAT:
        REF_REAL(float, a, b, r);
        return;
    case COLLAB_DOUBLE:
        REF_REAL(double, a, b, r);
        return;
    case COLLAB_LONG_DOUBLE:
        REF_REAL(long double, a, b, r);
        return;
    case COLLAB_C_FLOAT_COMPLEX:
        REF_COMPLEX(float, a, b, r);
        return;
    case COLLAB_C_DOUBLE_COMPLEX:
        REF_COMPLEX(double, a, b, r);
        return;
    case COLLAB_C_LONG_DOUBLE_COMPLEX:
        REF_COMPLEX(long double, a, b, r);
        return;
    case COLLAB_FLOAT_INT:
        REF_PAIR(cl_float_int_t, a, b, r);
        return;
    case COLLAB_DOUBLE_INT:
        REF_PAIR(cl_double_int_t, a, b, r);
        return;
    case COLLAB_LONG_INT:
        REF_PAIR(cl_long_int_t, a, b, r);
        return;
    case COLLAB_SHORT_INT:
        REF_PAIR(cl_short_int_t, a, b, r);
        return;
    case COLLAB_2INT:
        REF_PAIR(cl_2int_t, a, b, r);
        return;
    case COLLAB_LONG_DOUBLE_INT:
        REF_PAIR(cl_long_double_int_t, a, b, r);
        return;
    case COLLAB_FLOAT16: {
        uint16_t x, y, z;
        memcpy(&x, a, 2);
        memcpy(&y, b, 2);
        double dx = ref_half_to_double(x), dy = ref_half_to_double(y);
        if (op == COLLAB_OP_SUM)
            z = ref_half_from_double(dy + dx); /* exact in double */
        else if (op == COLLAB_OP_PROD)
            z = ref_half_from_double(dy * dx);
        else if (op == COLLAB_OP_MAX)
            z = dy > dx ? y : x;
        else
            z = dy < dx ? y : x;
        memcpy(r, &z, 2);
        return;
    }
    default:
        break;
    }
    /* integers, C_BOOL, BYTE */
    uint64_t x = load_int(t, a), y = load_int(t, b), z = 0;
    switch (op) {
    case COLLAB_OP_SUM:
        z = x + y;
        break;
    case COLLAB_OP_PROD:
        z = x * y;
        break;
    case COLLAB_OP_MAX:
        z = int_greater(t, y, x) ? y : x;
        break;
    case COLLAB_OP_MIN:
        z = int_greater(t, x, y) ? y : x;
        break;
    case COLLAB_OP_LAND:
        z = x != 0 && y != 0;
        break;
    case COLLAB_OP_LOR:
        z = x != 0 || y != 0;
        break;
    case COLLAB_OP_LXOR:
        z = (x != 0) != (y != 0);
        break;
    case COLLAB_OP_BAND:
        z = x & y;
        break;
    case COLLAB_OP_BOR:
        z = x | y;
        break;
    case COLLAB_OP_BXOR:
        z = x ^ y;
        break;
    default:
        break;
    }
    store_int(t, r, z);
}

/* ---- comparison ---------------------------------------------------------- */

static int real_same(collab_dtype_t rt, const void *x, const void *y)
{
    if (rt == COLLAB_FLOAT) {
        float a, b;
        memcpy(&a, x, 4);
        memcpy(&b, y, 4);
        return memcmp(&a, &b, 4) == 0 || (isnan(a) && isnan(b));
    }
    if (rt == COLLAB_DOUBLE) {
        double a, b;
        memcpy(&a, x, 8);
        memcpy(&b, y, 8);
        return memcmp(&a, &b, 8) == 0 || (isnan(a) && isnan(b));
    }
    long double a, b; /* only the 10 bytes of the x87 format are data */
    memcpy(&a, x, sizeof a);
    memcpy(&b, y, sizeof b);
    return memcmp(&a, &b, 10) == 0 || (isnan(a) && isnan(b));
}

#define PAIR_SAME(P, RT, x, y)                                                                     \
    do {                                                                                           \
        P p_, q_;                                                                                  \
        memcpy(&p_, x, sizeof p_);                                                                 \
        memcpy(&q_, y, sizeof q_);                                                                 \
        if (p_.i != q_.i)                                                                          \
            return 0;                                                                              \
        if ((RT) == COLLAB_INT64)                                                                  \
            return p_.v == q_.v;                                                                   \
        return real_same((RT), &p_.v, &q_.v);                                                      \
    } while (0)

/* Same result element (NaN matches NaN: its payload may depend on operand
   order inside a vector unit; padding bytes are ignored). */
static int elem_same(collab_dtype_t t, const void *x, const void *y)
{
    size_t half;
    switch (t) {
    case COLLAB_FLOAT:
    case COLLAB_DOUBLE:
    case COLLAB_LONG_DOUBLE:
        return real_same(t, x, y);
    case COLLAB_C_FLOAT_COMPLEX:
    case COLLAB_C_DOUBLE_COMPLEX:
    case COLLAB_C_LONG_DOUBLE_COMPLEX: {
        collab_dtype_t rt = t == COLLAB_C_FLOAT_COMPLEX    ? COLLAB_FLOAT
                            : t == COLLAB_C_DOUBLE_COMPLEX ? COLLAB_DOUBLE
                                                           : COLLAB_LONG_DOUBLE;
        half = collab_dtype_extent(t) / 2;
        return real_same(rt, x, y) && real_same(rt, (const char *)x + half, (const char *)y + half);
    }
    case COLLAB_FLOAT16: {
        uint16_t a, b;
        memcpy(&a, x, 2);
        memcpy(&b, y, 2);
        return half_same(a, b);
    }
    case COLLAB_FLOAT_INT:
        PAIR_SAME(cl_float_int_t, COLLAB_FLOAT, x, y);
    case COLLAB_DOUBLE_INT:
        PAIR_SAME(cl_double_int_t, COLLAB_DOUBLE, x, y);
    case COLLAB_LONG_DOUBLE_INT:
        PAIR_SAME(cl_long_double_int_t, COLLAB_LONG_DOUBLE, x, y);
    case COLLAB_LONG_INT:
        PAIR_SAME(cl_long_int_t, COLLAB_INT64, x, y);
    case COLLAB_SHORT_INT:
        PAIR_SAME(cl_short_int_t, COLLAB_INT64, x, y);
    case COLLAB_2INT:
        PAIR_SAME(cl_2int_t, COLLAB_INT64, x, y);
    default:
        return memcmp(x, y, collab_dtype_extent(t)) == 0;
    }
}

/* ---- random data ---------------------------------------------------------- */

static double rand_real(int allow_special)
{
    static const double special[] = {0.0,  -0.0,    INFINITY, -INFINITY, NAN, 1.0,
                                     -1.0, DBL_MIN, 1e-310,   FLT_MAX,   3.0, 3.0};
    uint64_t r = rng_next() % 16;
    if (allow_special && r < 2)
        return special[rng_next() % (sizeof special / sizeof special[0])];
    if (r < 6) /* small integers: many ties and exact sums */
        return (double)((int)(rng_next() % 9) - 4);
    return rng_uniform(-1e3, 1e3);
}

#define PUT(T, p, i, v) ((T *)(p))[i] = (T)(v)

/* Fills n elements of t at p (any alignment: written with memcpy). */
static void fill(collab_dtype_t t, collab_op_kind_t op, void *p, size_t n)
{
    const size_t ext = collab_dtype_extent(t);
    /* Complex PROD stays finite: infinities are tested by hand. */
    const int special = !(op == COLLAB_OP_PROD && cl_dtype_category(t) == CL_DTYPE_CAT_COMPLEX);
    for (size_t i = 0; i < n; i++) {
        unsigned char e[32];
        memset(e, 0, sizeof e);
        double v = rand_real(special), v2 = rand_real(special);
        int idx = (int)(rng_next() % 5);
        switch (t) {
        case COLLAB_FLOAT: {
            float f = (float)v;
            memcpy(e, &f, 4);
            break;
        }
        case COLLAB_DOUBLE:
            memcpy(e, &v, 8);
            break;
        case COLLAB_LONG_DOUBLE: {
            long double l = v;
            memcpy(e, &l, sizeof l);
            break;
        }
        case COLLAB_C_FLOAT_COMPLEX: {
            float f[2] = {(float)v, (float)v2};
            memcpy(e, f, 8);
            break;
        }
        case COLLAB_C_DOUBLE_COMPLEX: {
            double d[2] = {v, v2};
            memcpy(e, d, 16);
            break;
        }
        case COLLAB_C_LONG_DOUBLE_COMPLEX: {
            long double l[2] = {v, v2};
            memcpy(e, l, sizeof l);
            break;
        }
        case COLLAB_FLOAT16: {
            uint16_t h = (uint16_t)rng_next();
            memcpy(e, &h, 2);
            break;
        }
        case COLLAB_FLOAT_INT: {
            cl_float_int_t q = {(float)v, idx};
            memcpy(e, &q, sizeof q);
            break;
        }
        case COLLAB_DOUBLE_INT: {
            cl_double_int_t q = {v, idx};
            memcpy(e, &q, sizeof q);
            break;
        }
        case COLLAB_LONG_DOUBLE_INT: {
            cl_long_double_int_t q = {v, idx};
            memcpy(e, &q, sizeof q);
            break;
        }
        case COLLAB_LONG_INT: {
            cl_long_int_t q = {(long)(rng_next() % 4) - 2, idx};
            memcpy(e, &q, sizeof q);
            break;
        }
        case COLLAB_SHORT_INT: {
            cl_short_int_t q = {(short)((int)(rng_next() % 4) - 2), idx};
            memcpy(e, &q, sizeof q);
            break;
        }
        case COLLAB_2INT: {
            cl_2int_t q = {(int)(rng_next() % 4) - 2, idx};
            memcpy(e, &q, sizeof q);
            break;
        }
        case COLLAB_C_BOOL:
            e[0] = (uint8_t[]){0, 1, 1, 2, 255}[rng_next() % 5];
            break;
        default: { /* integers, BYTE: random bits, edge values, small values */
            uint64_t r = rng_next(), k = rng_next() % 8;
            if (k == 0)
                r = 0;
            else if (k == 1)
                r = (uint64_t)-1;
            else if (k == 2)
                r = (uint64_t)1 << (ext * 8 - 1); /* INT_MIN pattern */
            else if (k == 3)
                r = ((uint64_t)1 << (ext * 8 - 1)) - 1; /* INT_MAX */
            else if (k == 4)
                r %= 3;
            memcpy(e, &r, ext);
            break;
        }
        }
        memcpy((char *)p + i * ext, e, ext);
    }
}

/* ---- the big table test ----------------------------------------------------- */

static const size_t s_lengths[] = {0, 1, 2, 3, 7, 16, 17, 63, 100, 1031, 4099};
#define FOLD_COUNT 20011 /* > one CL_FOLD_BLOCK for every extent */
#define MAX_INPUTS 5

static void test_pair(collab_dtype_t t, collab_op_kind_t k, unsigned char *bufs[],
                      unsigned char *ref)
{
    const size_t ext = collab_dtype_extent(t);
    collab_op_t op = {.kind = k};
    /* cl_reduce in place, aligned (offset 0) and misaligned (offset 1). */
    for (size_t li = 0; li < sizeof s_lengths / sizeof s_lengths[0]; li++) {
        size_t n = s_lengths[li];
        size_t off = li % 2;
        unsigned char *in = bufs[0] + off, *io = bufs[1] + off;
        fill(t, k, in, n);
        fill(t, k, io, n);
        for (size_t i = 0; i < n; i++)
            ref_op(t, k, in + i * ext, io + i * ext, ref + i * ext);
        int rc = cl_reduce(&op, t, in, io, n);
        CHECK(rc == COLLAB_OK, "%s %s: cl_reduce rc %d", cl_dtype_name(t), cl_op_name(k), rc);
        for (size_t i = 0; i < n; i++) {
            if (!elem_same(t, io + i * ext, ref + i * ext)) {
                CHECK(0, "%s %s n=%zu off=%zu: element %zu differs from the reference",
                      cl_dtype_name(t), cl_op_name(k), n, off, i);
                break;
            }
        }
    }
    /* Fold of 2..MAX_INPUTS inputs against acc = in[0]; acc = in[i] op acc. */
    for (int nin = 2; nin <= MAX_INPUTS; nin++) {
        size_t off = (size_t)nin % 2;
        const void *in[MAX_INPUTS];
        for (int i = 0; i < nin; i++) {
            fill(t, k, bufs[i] + off, FOLD_COUNT);
            in[i] = bufs[i] + off;
        }
        memcpy(ref, in[0], FOLD_COUNT * ext);
        for (int i = 1; i < nin; i++)
            for (size_t e = 0; e < FOLD_COUNT; e++)
                ref_op(t, k, (const char *)in[i] + e * ext, ref + e * ext, ref + e * ext);
        unsigned char *out = bufs[MAX_INPUTS] + off;
        int rc = cl_reduce_fold(&op, t, out, in, nin, FOLD_COUNT);
        CHECK(rc == COLLAB_OK, "%s %s: fold rc %d", cl_dtype_name(t), cl_op_name(k), rc);
        for (size_t e = 0; e < FOLD_COUNT; e++) {
            if (!elem_same(t, out + e * ext, ref + e * ext)) {
                CHECK(0, "%s %s fold n=%d: element %zu differs", cl_dtype_name(t), cl_op_name(k),
                      nin, e);
                break;
            }
        }
    }
}

/* MPI-4.0 6.9.2, written out as (op, category) pairs. */
static int mpi_table(collab_op_kind_t k, cl_dtype_cat_t c)
{
    const int in = c == CL_DTYPE_CAT_INTEGER, fp = c == CL_DTYPE_CAT_FLOAT,
              cx = c == CL_DTYPE_CAT_COMPLEX, lg = c == CL_DTYPE_CAT_LOGICAL,
              by = c == CL_DTYPE_CAT_BYTE, pr = c == CL_DTYPE_CAT_PAIR;
    switch (k) {
    case COLLAB_OP_MAX:
    case COLLAB_OP_MIN:
        return in || fp;
    case COLLAB_OP_SUM:
    case COLLAB_OP_PROD:
        return in || fp || cx;
    case COLLAB_OP_LAND:
    case COLLAB_OP_LOR:
    case COLLAB_OP_LXOR:
        return in || lg;
    case COLLAB_OP_BAND:
    case COLLAB_OP_BOR:
    case COLLAB_OP_BXOR:
        return in || by;
    case COLLAB_OP_MAXLOC:
    case COLLAB_OP_MINLOC:
        return pr;
    case COLLAB_OP_USER:
        return in || fp || cx || lg || by || pr;
    default:
        return 0;
    }
}

static void test_all_pairs(void)
{
    const size_t bytes = FOLD_COUNT * 32 + 64;
    unsigned char *bufs[MAX_INPUTS + 1];
    unsigned char *ref = malloc(bytes);
    for (int i = 0; i <= MAX_INPUTS; i++)
        bufs[i] = malloc(bytes);
    int tested = 0;
    for (int ti = 0; ti < COLLAB_DTYPE_COUNT; ti++) {
        collab_dtype_t t = (collab_dtype_t)ti;
        for (int ki = 0; ki < COLLAB_OP_COUNT; ki++) {
            collab_op_kind_t k = (collab_op_kind_t)ki;
            int valid = collab_op_valid(k, t);
            CHECK(valid == mpi_table(k, cl_dtype_category(t)), "collab_op_valid(%s, %s) = %d",
                  cl_op_name(k), cl_dtype_name(t), valid);
            if (k == COLLAB_OP_USER)
                continue;
            CHECK(valid == (cl_reduce_kernel(t, k) != NULL), "kernel presence for %s %s",
                  cl_dtype_name(t), cl_op_name(k));
            collab_op_t op = {.kind = k};
            if (!valid) {
                CHECK(cl_reduce(&op, t, bufs[0], bufs[1], 1) == COLLAB_ERR_OP,
                      "%s %s must be COLLAB_ERR_OP", cl_dtype_name(t), cl_op_name(k));
                CHECK(collab_reduce_local(bufs[0], bufs[1], 1, t, &op) == COLLAB_ERR_OP,
                      "collab_reduce_local %s %s", cl_dtype_name(t), cl_op_name(k));
                const void *in[2] = {bufs[0], bufs[1]};
                CHECK(cl_reduce_fold(&op, t, bufs[2], in, 2, 1) == COLLAB_ERR_OP, "fold %s %s",
                      cl_dtype_name(t), cl_op_name(k));
                continue;
            }
            test_pair(t, k, bufs, ref);
            tested++;
        }
    }
    /* 8 int types x 10 ops + bool 3 + byte 3 + 4 reals x 4 + 3 complex x 2 + 6 pairs x 2 */
    CHECK(tested == 80 + 3 + 3 + 16 + 6 + 12, "tested %d pairs", tested);
    printf("  %d datatype x op pairs match the reference\n", tested);
    for (int i = 0; i <= MAX_INPUTS; i++)
        free(bufs[i]);
    free(ref);
}

/* ---- hand-checked cases -------------------------------------------------- */

static void test_int_edges(void)
{
    collab_op_t sum = {.kind = COLLAB_OP_SUM}, prod = {.kind = COLLAB_OP_PROD};
    int32_t a32[2] = {1, INT32_MIN}, b32[2] = {INT32_MAX, -1};
    CHECK(cl_reduce(&sum, COLLAB_INT32, a32, b32, 2) == 0, "int32 sum");
    CHECK(b32[0] == INT32_MIN && b32[1] == INT32_MAX, "int32 SUM wraps: %d %d", b32[0], b32[1]);
    int8_t a8 = 127, b8 = 1;
    cl_reduce(&sum, COLLAB_INT8, &a8, &b8, 1);
    CHECK(b8 == -128, "int8 127 + 1 = %d", b8);
    uint16_t a16 = 65535, b16 = 65535;
    cl_reduce(&prod, COLLAB_UINT16, &a16, &b16, 1);
    CHECK(b16 == 1, "uint16 65535 * 65535 = %u", b16);
    int64_t a64 = INT64_MIN, b64 = -1;
    cl_reduce(&prod, COLLAB_INT64, &a64, &b64, 1);
    CHECK(b64 == INT64_MIN, "int64 INT64_MIN * -1 wraps to INT64_MIN");
    collab_op_t mx = {.kind = COLLAB_OP_MAX}, mn = {.kind = COLLAB_OP_MIN};
    int32_t m1[3] = {INT32_MIN, -1, 5}, m2[3] = {INT32_MAX, INT32_MIN, 5};
    cl_reduce(&mx, COLLAB_INT32, m1, m2, 3);
    CHECK(m2[0] == INT32_MAX && m2[1] == -1 && m2[2] == 5, "int32 MAX");
    uint32_t u1 = 0x80000000u, u2 = 1;
    cl_reduce(&mn, COLLAB_UINT32, &u1, &u2, 1);
    CHECK(u2 == 1, "uint32 MIN compares unsigned");
    /* Logical ops read any non-zero byte as true and give 0/1. */
    collab_op_t land = {.kind = COLLAB_OP_LAND}, lxor = {.kind = COLLAB_OP_LXOR};
    uint8_t bo1[4] = {2, 255, 0, 1}, bo2[4] = {1, 2, 0, 0};
    cl_reduce(&land, COLLAB_C_BOOL, bo1, bo2, 4);
    CHECK(bo2[0] == 1 && bo2[1] == 1 && bo2[2] == 0 && bo2[3] == 0, "C_BOOL LAND");
    int16_t l1[3] = {-7, 0, 4}, l2[3] = {3, 0, 0};
    cl_reduce(&lxor, COLLAB_INT16, l1, l2, 3);
    CHECK(l2[0] == 0 && l2[1] == 0 && l2[2] == 1, "int16 LXOR");
    collab_op_t bxor = {.kind = COLLAB_OP_BXOR};
    uint8_t by1[2] = {0xf0, 0xff}, by2[2] = {0x3c, 0x0f};
    cl_reduce(&bxor, COLLAB_BYTE, by1, by2, 2);
    CHECK(by2[0] == 0xcc && by2[1] == 0xf0, "BYTE BXOR");
}

static void test_float_edges(void)
{
    collab_op_t mx = {.kind = COLLAB_OP_MAX}, mn = {.kind = COLLAB_OP_MIN};
    /* MPICH's rule: inout = inout > in ? inout : in. */
    double in[4] = {1.0, NAN, 0.0, -INFINITY}, io[4] = {NAN, 2.0, -0.0, -1.0};
    cl_reduce(&mx, COLLAB_DOUBLE, in, io, 4);
    CHECK(io[0] == 1.0, "MAX(inout NaN, in 1) = in");
    CHECK(isnan(io[1]), "MAX(inout 2, in NaN) = NaN");
    CHECK(io[2] == 0.0 && !signbit(io[2]), "MAX(inout -0, in +0) = +0 (in)");
    CHECK(io[3] == -1.0, "MAX(-1, -inf)");
    float fi[2] = {NAN, -3.0f}, fo[2] = {5.0f, NAN};
    cl_reduce(&mn, COLLAB_FLOAT, fi, fo, 2);
    CHECK(isnan(fo[0]) && fo[1] == -3.0f, "float MIN with NaN");

    /* binary16: 65504 + 16 = 65520 is a tie, rounds to even = infinity;
       1 + 2^-11 is a tie that stays 1; subnormals add exactly. */
    collab_op_t sum = {.kind = COLLAB_OP_SUM}, prod = {.kind = COLLAB_OP_PROD};
    uint16_t hi[4] = {0x4c00 /* 16 */, 0x1000 /* 2^-11 */, 0x0001, 0x3c00},
             ho[4] = {0x7bff /* 65504 */, 0x3c00 /* 1 */, 0x0001, 0x7e00};
    cl_reduce(&sum, COLLAB_FLOAT16, hi, ho, 4);
    CHECK(ho[0] == 0x7c00, "65504 + 16 in binary16 = %#x, want inf", ho[0]);
    CHECK(ho[1] == 0x3c00, "1 + 2^-11 = %#x, want 1", ho[1]);
    CHECK(ho[2] == 0x0002, "min subnormal doubled = %#x", ho[2]);
    CHECK(ref_half_is_nan(ho[3]), "NaN + 1 = NaN");
    /* MAX/MIN return an operand bit for bit: a signalling NaN stays one. */
    uint16_t mi[2] = {0x7c01 /* sNaN */, 0xfd55 /* -qNaN, payload */}, mo[2] = {0x3c00, 0x3c00};
    cl_reduce(&mn, COLLAB_FLOAT16, mi, mo, 2);
    CHECK(mo[0] == 0x7c01 && mo[1] == 0xfd55, "half MIN keeps NaN bits: %#x %#x", mo[0], mo[1]);
    uint16_t xi[2] = {0x3c00, 0x3c00}, xo[2] = {0x7c01, 0x0001};
    cl_reduce(&mx, COLLAB_FLOAT16, xi, xo, 2);
    CHECK(xo[0] == 0x3c00 && xo[1] == 0x3c00, "half MAX(inout sNaN, 1) = 1");
    uint16_t pi = 0x3555 /* ~1/3 */, po = 0x4200 /* 3 */;
    cl_reduce(&prod, COLLAB_FLOAT16, &pi, &po, 1);
    CHECK(po == ref_half_from_double(ref_half_to_double(0x3555) * 3.0), "half 1/3 * 3 = %#x", po);

    /* Complex PROD is C's: (inf + NaN i) * (1 + 1i) is an infinity, where
       the textbook formula would give NaN + NaN i. */
    /* C11 lays a complex out as {real, imaginary} (CMPLX is GCC-only). */
    double ci[2] = {INFINITY, NAN}, co[2] = {1.0, 1.0};
    collab_op_t cprod = {.kind = COLLAB_OP_PROD};
    cl_reduce(&cprod, COLLAB_C_DOUBLE_COMPLEX, ci, co, 1);
    CHECK(isinf(co[0]) || isinf(co[1]), "complex inf * finite = %g %g", co[0], co[1]);
    float fci[2] = {2.0f, 3.0f}, fco[2] = {4.0f, -5.0f};
    cl_reduce(&cprod, COLLAB_C_FLOAT_COMPLEX, fci, fco, 1);
    CHECK(fco[0] == 23.0f && fco[1] == 2.0f, "(4-5i)(2+3i) = 23+2i");
}

static void test_loc_ties(void)
{
    collab_op_t maxloc = {.kind = COLLAB_OP_MAXLOC}, minloc = {.kind = COLLAB_OP_MINLOC};
    cl_double_int_t in[4] = {{1.0, 7}, {1.0, 2}, {2.0, 9}, {NAN, 0}};
    cl_double_int_t io[4] = {{1.0, 3}, {1.0, 5}, {1.0, 1}, {1.0, 4}};
    memset((char *)io + 0, 0, 0);
    cl_reduce(&maxloc, COLLAB_DOUBLE_INT, in, io, 4);
    CHECK(io[0].v == 1.0 && io[0].i == 3, "MAXLOC tie keeps smaller index (inout)");
    CHECK(io[1].v == 1.0 && io[1].i == 2, "MAXLOC tie keeps smaller index (in)");
    CHECK(io[2].v == 2.0 && io[2].i == 9, "MAXLOC larger value wins");
    CHECK(io[3].v == 1.0 && io[3].i == 4, "MAXLOC NaN in in: inout kept");
    cl_2int_t a[3] = {{5, 1}, {5, 0}, {-1, 8}}, b[3] = {{5, 2}, {4, 6}, {0, 3}};
    cl_reduce(&minloc, COLLAB_2INT, a, b, 3);
    CHECK(b[0].v == 5 && b[0].i == 1, "MINLOC tie");
    CHECK(b[1].v == 4 && b[1].i == 6, "MINLOC keeps smaller value");
    CHECK(b[2].v == -1 && b[2].i == 8, "MINLOC takes smaller value");
    /* Padding is never written. */
    cl_short_int_t s_in, s_io;
    memset(&s_in, 0xaa, sizeof s_in);
    memset(&s_io, 0x55, sizeof s_io);
    s_in.v = 3;
    s_in.i = 1;
    s_io.v = 2;
    s_io.i = 0;
    cl_reduce(&maxloc, COLLAB_SHORT_INT, &s_in, &s_io, 1);
    CHECK(s_io.v == 3 && s_io.i == 1 && ((unsigned char *)&s_io)[2] == 0x55 &&
              ((unsigned char *)&s_io)[3] == 0x55,
          "SHORT_INT MAXLOC leaves padding alone");
}

/* User op: affine maps x -> a x + b modulo 2^32, stored as 2INT pairs.
   (l op r) = "apply l, then r": associative, not commutative, so only MPI's
   order in[0] op in[1] op ... op in[n-1] gives the expected map. */
typedef struct {
    uint32_t a, b;
} affine_t;

static affine_t affine_then(affine_t l, affine_t r)
{
    affine_t o = {r.a * l.a, r.a * l.b + r.b};
    return o;
}

static int s_user_calls;

static void user_affine(const void *in, void *inout, size_t count, void *ctx)
{
    CHECK(ctx == &s_user_calls, "user ctx passed through");
    s_user_calls++;
    for (size_t i = 0; i < count; i++) {
        affine_t l, r;
        memcpy(&l, (const char *)in + i * sizeof l, sizeof l);
        memcpy(&r, (char *)inout + i * sizeof r, sizeof r);
        r = affine_then(l, r);
        memcpy((char *)inout + i * sizeof r, &r, sizeof r);
    }
}

/* (l op r) = 2 l + r: not associative, so it shows the parenthesisation
   of the fold (left to right, as the butterfly's reducer folds). */
static void user_twice(const void *in, void *inout, size_t count, void *ctx)
{
    (void)ctx;
    for (size_t i = 0; i < count; i++)
        ((uint32_t *)inout)[i] = 2u * ((const uint32_t *)in)[i] + ((uint32_t *)inout)[i];
}

static void test_user_left_fold(void)
{
    enum { COUNT = 17 };
    uint32_t x[5][COUNT], out[COUNT];
    const void *in[5];
    for (int i = 0; i < 5; i++) {
        for (int e = 0; e < COUNT; e++)
            x[i][e] = (uint32_t)rng_next() % 1000;
        in[i] = x[i];
    }
    collab_op_t op = {.kind = COLLAB_OP_USER, .user_fn = user_twice};
    for (int n = 1; n <= 5; n++) {
        memset(out, 0xee, sizeof out);
        CHECK(cl_reduce_fold(&op, COLLAB_UINT32, out, in, n, COUNT) == 0, "fold n=%d", n);
        int bad = 0;
        for (int e = 0; e < COUNT; e++) {
            uint32_t acc = x[0][e];
            for (int i = 1; i < n; i++)
                acc = 2u * acc + x[i][e];
            bad += out[e] != acc;
        }
        CHECK(bad == 0, "user fold of %d inputs is not ((x0 op x1) op x2) ...", n);
    }
}

static void test_user(void)
{
    enum { N = 6, COUNT = 333 };
    affine_t x[N][COUNT], out[COUNT], want[COUNT];
    const void *in[N];
    for (int i = 0; i < N; i++) {
        for (int e = 0; e < COUNT; e++) {
            x[i][e].a = (uint32_t)rng_next() | 1u;
            x[i][e].b = (uint32_t)rng_next();
        }
        in[i] = x[i];
    }
    for (int e = 0; e < COUNT; e++) {
        want[e] = x[0][e];
        for (int i = 1; i < N; i++)
            want[e] = affine_then(want[e], x[i][e]);
    }
    collab_op_t op = {.kind = COLLAB_OP_USER, .user_fn = user_affine, .user_ctx = &s_user_calls};
    s_user_calls = 0;
    CHECK(cl_reduce_fold(&op, COLLAB_2INT, out, in, N, COUNT) == 0, "user fold");
    CHECK(memcmp(out, want, sizeof out) == 0, "user op folded in MPI's order");
    CHECK(s_user_calls == N - 1, "user fn called %d times, want %d", s_user_calls, N - 1);
    /* cl_reduce: inout = in op inout. */
    affine_t io[COUNT];
    memcpy(io, x[1], sizeof io);
    CHECK(collab_reduce_local(x[0], io, COUNT, COLLAB_2INT, &op) == 0, "reduce_local user");
    for (int e = 0; e < COUNT; e++) {
        affine_t w = affine_then(x[0][e], x[1][e]);
        if (io[e].a != w.a || io[e].b != w.b) {
            CHECK(0, "user cl_reduce element %d", e);
            break;
        }
    }
    /* One input: a copy, the function is not called. */
    s_user_calls = 0;
    CHECK(cl_reduce_fold(&op, COLLAB_2INT, out, in, 1, COUNT) == 0 &&
              memcmp(out, x[0], sizeof out) == 0 && s_user_calls == 0,
          "user fold of one input");
    collab_op_t nofn = {.kind = COLLAB_OP_USER};
    CHECK(cl_reduce(&nofn, COLLAB_2INT, x[0], io, 1) == COLLAB_ERR_OP, "user op without fn");
}

static void test_errors(void)
{
    double a[2] = {1, 2}, b[2] = {3, 4};
    const void *in[2] = {a, b};
    collab_op_t sum = {.kind = COLLAB_OP_SUM};
    CHECK(cl_reduce(NULL, COLLAB_DOUBLE, a, b, 2) == COLLAB_ERR_OP, "NULL op");
    CHECK(cl_reduce(&sum, COLLAB_DTYPE_COUNT, a, b, 2) == COLLAB_ERR_TYPE, "dtype out of range");
    CHECK(cl_reduce(&sum, (collab_dtype_t)-1, a, b, 2) == COLLAB_ERR_TYPE, "negative dtype");
    collab_op_t bad = {.kind = COLLAB_OP_COUNT};
    CHECK(cl_reduce(&bad, COLLAB_DOUBLE, a, b, 2) == COLLAB_ERR_OP, "op kind out of range");
    bad.kind = (collab_op_kind_t)-5;
    CHECK(cl_reduce(&bad, COLLAB_DOUBLE, a, b, 2) == COLLAB_ERR_OP, "negative op kind");
    collab_op_t rep = {.kind = COLLAB_OP_REPLACE}, noop = {.kind = COLLAB_OP_NO_OP};
    CHECK(cl_reduce(&rep, COLLAB_DOUBLE, a, b, 2) == COLLAB_ERR_OP, "REPLACE is accumulate-only");
    CHECK(cl_reduce(&noop, COLLAB_INT32, a, b, 1) == COLLAB_ERR_OP, "NO_OP is accumulate-only");
    CHECK(cl_reduce(&sum, COLLAB_DOUBLE, NULL, b, 2) == COLLAB_ERR_ARG, "NULL in");
    CHECK(cl_reduce(&sum, COLLAB_DOUBLE, a, NULL, 2) == COLLAB_ERR_ARG, "NULL inout");
    CHECK(cl_reduce(&sum, COLLAB_DOUBLE, NULL, NULL, 0) == COLLAB_OK, "count 0");
    CHECK(b[0] == 3 && b[1] == 4, "errors leave inout alone");
    double out[2];
    CHECK(cl_reduce_fold(&sum, COLLAB_DOUBLE, out, in, 0, 2) == COLLAB_ERR_ARG, "fold n = 0");
    CHECK(cl_reduce_fold(&sum, COLLAB_DOUBLE, out, in, -1, 2) == COLLAB_ERR_ARG, "fold n < 0");
    CHECK(cl_reduce_fold(&sum, COLLAB_DOUBLE, NULL, in, 2, 2) == COLLAB_ERR_ARG, "fold out NULL");
    CHECK(cl_reduce_fold(&sum, COLLAB_DOUBLE, out, NULL, 2, 2) == COLLAB_ERR_ARG, "fold in NULL");
    const void *holes[2] = {a, NULL};
    CHECK(cl_reduce_fold(&sum, COLLAB_DOUBLE, out, holes, 2, 2) == COLLAB_ERR_ARG,
          "fold NULL input");
    CHECK(cl_reduce_fold(&sum, COLLAB_DOUBLE, out, in, 2, 2) == 0 && out[0] == 4 && out[1] == 6,
          "fold of two doubles");
    CHECK(cl_reduce_fold(&sum, COLLAB_DOUBLE, out, in, 2, SIZE_MAX / 4) == COLLAB_ERR_ARG,
          "fold size overflow");
}

static void test_extents_names(void)
{
    static const size_t want[COLLAB_DTYPE_COUNT] = {1, 2, 4,  8,  1, 2,  4,  8, 2, 4,  8, 16,
                                                    1, 8, 16, 32, 8, 16, 16, 8, 8, 32, 1};
    for (int t = 0; t < COLLAB_DTYPE_COUNT; t++) {
        CHECK(collab_dtype_extent((collab_dtype_t)t) == want[t], "extent of %s",
              cl_dtype_name((collab_dtype_t)t));
        CHECK(strcmp(cl_dtype_name((collab_dtype_t)t), "invalid") != 0, "name of %d", t);
    }
    CHECK(collab_dtype_extent(COLLAB_DTYPE_COUNT) == 0, "extent of invalid type");
    CHECK(collab_dtype_extent((collab_dtype_t)-1) == 0, "extent of negative type");
    CHECK(strcmp(cl_dtype_name(COLLAB_DTYPE_COUNT), "invalid") == 0, "invalid name");
    for (int k = 0; k < COLLAB_OP_COUNT; k++)
        CHECK(strcmp(cl_op_name((collab_op_kind_t)k), "invalid") != 0, "op name %d", k);
    CHECK(strcmp(cl_op_name(COLLAB_OP_MAXLOC), "maxloc") == 0, "maxloc name");
    CHECK(collab_op_valid(COLLAB_OP_SUM, COLLAB_DTYPE_COUNT) == 0, "valid with bad type");
    CHECK(collab_op_valid(COLLAB_OP_COUNT, COLLAB_INT32) == 0, "valid with bad op");
    CHECK(cl_dtype_compressible(COLLAB_FLOAT) && cl_dtype_compressible(COLLAB_DOUBLE) &&
              !cl_dtype_compressible(COLLAB_FLOAT16) && !cl_dtype_compressible(COLLAB_INT32),
          "compressible types");
}

int main(void)
{
    rng_seed("cl_reduce_test");
    test_extents_names();
    test_errors();
    test_int_edges();
    test_float_edges();
    test_loc_ties();
    test_user();
    test_user_left_fold();
    test_all_pairs();
    if (s_failures != 0) {
        fprintf(stderr, "cl_reduce_test: %d failure(s)\n", s_failures);
        return 1;
    }
    printf("cl_reduce_test: OK\n");
    return 0;
}
