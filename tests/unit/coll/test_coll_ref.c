/*  test_coll_ref.c - plain-loop references of the collective selftests
    (see test_coll_ref.h).  Built with -ffp-contract=off like the kernels.
*/
#include "test_coll_ref.h"
#include "test_coll_harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    float v;
    int i;
} tr_fi_t;
typedef struct {
    int v;
    int i;
} tr_ii_t;

static double s_unit(uint64_t *s)
{
    return (double)(th_rand(s) >> 11) / 9007199254740992.0; /* [0, 1) */
}

void tr_fill(collab_dtype_t t, collab_op_kind_t op, void *buf, size_t count, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 7;
    for (size_t k = 0; k < count; k++) {
        uint64_t r = th_rand(&s);
        bool logical = op == COLLAB_OP_LAND || op == COLLAB_OP_LOR || op == COLLAB_OP_LXOR;
        switch (t) {
        case COLLAB_INT8:
            ((int8_t *)buf)[k] = logical ? (int8_t)(r & 1) : (int8_t)r;
            break;
        case COLLAB_UINT8:
            ((uint8_t *)buf)[k] = logical ? (uint8_t)(r & 1) : (uint8_t)r;
            break;
        case COLLAB_C_BOOL:
            ((uint8_t *)buf)[k] = (uint8_t)(r & 1);
            break;
        case COLLAB_INT32:
            ((int32_t *)buf)[k] = logical                ? (int32_t)(r % 3)
                                  : op == COLLAB_OP_PROD ? (int32_t)(r % 5) - 2
                                                         : (int32_t)(r % 2000001) - 1000000;
            break;
        case COLLAB_INT64:
            ((int64_t *)buf)[k] = op == COLLAB_OP_PROD ? (int64_t)(r % 7) - 3 : (int64_t)r >> 3;
            break;
        case COLLAB_UINT64:
            /* affine maps: odd a keeps them invertible; any b */
            ((uint64_t *)buf)[k] = ((r | (1ULL << 32)) & 0xffffffff00000000ULL) | (r & 0xffff);
            break;
        case COLLAB_FLOAT:
            ((float *)buf)[k] = op == COLLAB_OP_PROD ? (float)(0.9 + 0.2 * s_unit(&s))
                                                     : (float)(2 * s_unit(&s) - 1);
            break;
        case COLLAB_DOUBLE:
            ((double *)buf)[k] = op == COLLAB_OP_PROD ? 0.9 + 0.2 * s_unit(&s) : 2 * s_unit(&s) - 1;
            break;
        case COLLAB_FLOAT_INT:
            ((tr_fi_t *)buf)[k].v = (float)(r % 4); /* ties on purpose */
            ((tr_fi_t *)buf)[k].i = (int)((r >> 8) % 100);
            break;
        case COLLAB_2INT:
            ((tr_ii_t *)buf)[k].v = (int)(r % 4);
            ((tr_ii_t *)buf)[k].i = (int)((r >> 8) % 100);
            break;
        default:
            abort();
        }
    }
}

static uint64_t s_compose(uint64_t f, uint64_t g)
{
    uint32_t af = (uint32_t)(f >> 32), bf = (uint32_t)f;
    uint32_t ag = (uint32_t)(g >> 32), bg = (uint32_t)g;
    uint32_t a = af * ag, b = af * bg + bf;
    return ((uint64_t)a << 32) | b;
}

void tr_affine(const void *in, void *inout, size_t count, void *ctx)
{
    (void)ctx;
    const uint64_t *x = in;
    uint64_t *y = inout;
    for (size_t k = 0; k < count; k++)
        y[k] = s_compose(x[k], y[k]);
}

long tr_triple_split;

void tr_triple(const void *in, void *inout, size_t count, void *ctx)
{
    (void)ctx;
    if (count % 3 != 0) {
        tr_triple_split++;
        return;
    }
    const uint64_t *a = in;
    uint64_t *b = inout;
    for (size_t k = 0; k < count; k += 3) {
        b[k + 2] = a[k + 2] + b[k + 2] + a[k] * b[k + 1];
        b[k] += a[k];
        b[k + 1] += a[k + 1];
    }
}

#define TR_ARITH(T, acc, x, op)                                                                    \
    do {                                                                                           \
        T a_ = (acc), b_ = (x);                                                                    \
        switch (op) {                                                                              \
        case COLLAB_OP_SUM:                                                                        \
            (acc) = (T)(b_ + a_);                                                                  \
            break;                                                                                 \
        case COLLAB_OP_PROD:                                                                       \
            (acc) = (T)(b_ * a_);                                                                  \
            break;                                                                                 \
        case COLLAB_OP_MAX:                                                                        \
            (acc) = a_ > b_ ? a_ : b_;                                                             \
            break;                                                                                 \
        case COLLAB_OP_MIN:                                                                        \
            (acc) = a_ < b_ ? a_ : b_;                                                             \
            break;                                                                                 \
        case COLLAB_OP_LAND:                                                                       \
            (acc) = (T)((a_ != 0) && (b_ != 0));                                                   \
            break;                                                                                 \
        case COLLAB_OP_LOR:                                                                        \
            (acc) = (T)((a_ != 0) || (b_ != 0));                                                   \
            break;                                                                                 \
        case COLLAB_OP_LXOR:                                                                       \
            (acc) = (T)((a_ != 0) != (b_ != 0));                                                   \
            break;                                                                                 \
        default:                                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define TR_BITS(T, acc, x, op)                                                                     \
    do {                                                                                           \
        if ((op) == COLLAB_OP_BAND)                                                                \
            (acc) = (T)((acc) & (x));                                                              \
        else if ((op) == COLLAB_OP_BOR)                                                            \
            (acc) = (T)((acc) | (x));                                                              \
        else if ((op) == COLLAB_OP_BXOR)                                                           \
            (acc) = (T)((acc) ^ (x));                                                              \
        else                                                                                       \
            TR_ARITH(T, acc, x, op);                                                               \
    } while (0)

#define TR_LOC(T, acc, x, op)                                                                      \
    do {                                                                                           \
        bool better = (op) == COLLAB_OP_MAXLOC ? (x).v > (acc).v : (x).v < (acc).v;                \
        if (better || ((x).v == (acc).v && (x).i < (acc).i))                                       \
            (acc) = (x);                                                                           \
    } while (0)

void tr_reduce(collab_dtype_t t, const collab_op_t *op, void *out, const void *const *in, int k,
               size_t count)
{
    size_t e = collab_dtype_extent(t);
    memcpy(out, in[0], count * e);
    collab_op_kind_t o = op->kind;
    for (int i = 1; i < k; i++) {
        if (o == COLLAB_OP_USER && op->user_fn == tr_triple) {
            uint64_t *acc = out;
            const uint64_t *x = in[i];
            for (size_t j = 0; j + 2 < count; j += 3) {
                acc[j + 2] = acc[j + 2] + x[j + 2] + acc[j] * x[j + 1];
                acc[j] += x[j];
                acc[j + 1] += x[j + 1];
            }
            continue;
        }
        if (o == COLLAB_OP_USER) {
            /* x0 o x1 o ...: acc = acc o x_i */
            uint64_t *acc = out;
            const uint64_t *x = in[i];
            for (size_t j = 0; j < count; j++)
                acc[j] = s_compose(acc[j], x[j]);
            continue;
        }
        for (size_t j = 0; j < count; j++) {
            switch (t) {
            case COLLAB_INT8:
                TR_BITS(int8_t, ((int8_t *)out)[j], ((const int8_t *)in[i])[j], o);
                break;
            case COLLAB_UINT8:
            case COLLAB_C_BOOL:
                TR_BITS(uint8_t, ((uint8_t *)out)[j], ((const uint8_t *)in[i])[j], o);
                break;
            case COLLAB_INT32:
                if (o == COLLAB_OP_SUM || o == COLLAB_OP_PROD) {
                    /* wrap like the kernels, without signed overflow */
                    uint32_t a = (uint32_t)((int32_t *)out)[j];
                    uint32_t b = (uint32_t)((const int32_t *)in[i])[j];
                    ((int32_t *)out)[j] = (int32_t)(o == COLLAB_OP_SUM ? a + b : a * b);
                } else {
                    TR_BITS(int32_t, ((int32_t *)out)[j], ((const int32_t *)in[i])[j], o);
                }
                break;
            case COLLAB_INT64:
                if (o == COLLAB_OP_SUM || o == COLLAB_OP_PROD) {
                    uint64_t a = (uint64_t)((int64_t *)out)[j];
                    uint64_t b = (uint64_t)((const int64_t *)in[i])[j];
                    ((int64_t *)out)[j] = (int64_t)(o == COLLAB_OP_SUM ? a + b : a * b);
                } else {
                    TR_BITS(int64_t, ((int64_t *)out)[j], ((const int64_t *)in[i])[j], o);
                }
                break;
            case COLLAB_UINT64:
                TR_BITS(uint64_t, ((uint64_t *)out)[j], ((const uint64_t *)in[i])[j], o);
                break;
            case COLLAB_FLOAT:
                TR_ARITH(float, ((float *)out)[j], ((const float *)in[i])[j], o);
                break;
            case COLLAB_DOUBLE:
                TR_ARITH(double, ((double *)out)[j], ((const double *)in[i])[j], o);
                break;
            case COLLAB_FLOAT_INT:
                TR_LOC(tr_fi_t, ((tr_fi_t *)out)[j], ((const tr_fi_t *)in[i])[j], o);
                break;
            case COLLAB_2INT:
                TR_LOC(tr_ii_t, ((tr_ii_t *)out)[j], ((const tr_ii_t *)in[i])[j], o);
                break;
            default:
                abort();
            }
        }
    }
}

void tr_weighted(collab_dtype_t t, void *out, const void *const *in, const double *w, int k,
                 size_t count, double scale)
{
    for (size_t j = 0; j < count; j++) {
        if (t == COLLAB_INT64) {
            long double acc = 0;
            for (int i = 0; i < k; i++) {
                long double wi = (long double)(w != NULL ? w[i] : 1.0);
                long double x = (long double)((const int64_t *)in[i])[j];
                acc = i == 0 ? wi * x : acc + wi * x;
            }
            long double v = acc * (long double)scale;
            ((int64_t *)out)[j] = v >= (long double)INT64_MAX   ? INT64_MAX
                                  : v <= (long double)INT64_MIN ? INT64_MIN
                                                                : (int64_t)roundl(v);
            continue;
        }
        double acc = 0;
        for (int i = 0; i < k; i++) {
            double wi = w != NULL ? w[i] : 1.0;
            double x = t == COLLAB_DOUBLE  ? ((const double *)in[i])[j]
                       : t == COLLAB_FLOAT ? (double)((const float *)in[i])[j]
                                           : (double)((const int32_t *)in[i])[j];
            acc = i == 0 ? wi * x : acc + wi * x;
        }
        double v = acc * scale;
        if (t == COLLAB_DOUBLE)
            ((double *)out)[j] = v;
        else if (t == COLLAB_FLOAT)
            ((float *)out)[j] = (float)v;
        else if (t == COLLAB_INT32)
            ((int32_t *)out)[j] = v >= 2147483647.0    ? INT32_MAX
                                  : v <= -2147483648.0 ? INT32_MIN
                                                       : (int32_t)round(v);
        else
            abort();
    }
}

void tr_expect(collab_dtype_t t, const collab_op_t *op, void *out, const void *const *in,
               const double *weights, int k, int size, size_t count)
{
    bool plain = k == size;
    double sum = 0;
    for (int i = 0; i < k; i++) {
        sum += weights != NULL ? weights[i] : 1.0;
        if (weights != NULL && weights[i] != weights[0])
            plain = false;
    }
    if (op->kind != COLLAB_OP_SUM || plain)
        tr_reduce(t, op, out, in, k, count);
    else
        tr_weighted(t, out, in, weights, k, count, (double)size / sum);
}

double tr_tolerance(int codec, int n)
{
    /* inputs in [-1, 1): fp16 rounds each value to 2^-11 relative, int8
       to max/254 per block; the reducer's result is encoded once more. */
    return codec == 1 ? (n + 4) * 1e-3 : (n + 4) * 1.2e-2;
}
