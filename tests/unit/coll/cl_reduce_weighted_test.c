/*  cl_reduce_weighted_test.c - selftest of cl_reduce_weighted_sum and
    cl_reduce_is_plain_sum (DESIGN section 2, MPI_SUM with ranks absent or
    weights set).

    Floating types are checked bit for bit against the documented order
    (double accumulator, rank order, one final rounding); integers for
    rounding to nearest with ties away from zero, saturation at both ends,
    exactness of 64-bit values; complex for scaling both parts; and every
    argument error.
*/
#include "cl_reduce.h"
#include "cl_reduce_testutil.h"
#include <complex.h>
#include <float.h>
#include <limits.h>
#include <string.h>

#define N_MAX 5
#define COUNT 3001 /* several accumulator blocks plus a tail */

static void random_weights(double *w, int n, int size, double *scale)
{
    double sum = 0;
    for (int i = 0; i < n; i++) {
        w[i] = rng_uniform(0.1, 10.0);
        sum += w[i];
    }
    *scale = size / sum;
}

static void test_float_types(void)
{
    static float f[N_MAX][COUNT], fout[COUNT];
    static double d[N_MAX][COUNT], dout[COUNT];
    static uint16_t h[N_MAX][COUNT], hout[COUNT];
    static float cf[N_MAX][2 * COUNT], cfout[2 * COUNT];
    for (int n = 1; n <= N_MAX; n++) {
        double w[N_MAX], scale;
        random_weights(w, n, n + 2, &scale);
        const void *fi[N_MAX], *di[N_MAX], *hi[N_MAX], *ci[N_MAX];
        for (int i = 0; i < n; i++) {
            for (int k = 0; k < COUNT; k++) {
                f[i][k] = (float)rng_uniform(-100, 100);
                d[i][k] = rng_uniform(-1e6, 1e6);
                h[i][k] = ref_half_from_double(rng_uniform(-1000, 1000));
                cf[i][2 * k] = (float)rng_uniform(-5, 5);
                cf[i][2 * k + 1] = (float)rng_uniform(-5, 5);
            }
            fi[i] = f[i];
            di[i] = d[i];
            hi[i] = h[i];
            ci[i] = cf[i];
        }
        CHECK(cl_reduce_weighted_sum(COLLAB_FLOAT, fout, fi, w, n, COUNT, scale) == 0, "float");
        CHECK(cl_reduce_weighted_sum(COLLAB_DOUBLE, dout, di, w, n, COUNT, scale) == 0, "double");
        CHECK(cl_reduce_weighted_sum(COLLAB_FLOAT16, hout, hi, w, n, COUNT, scale) == 0, "half");
        CHECK(cl_reduce_weighted_sum(COLLAB_C_FLOAT_COMPLEX, cfout, ci, w, n, COUNT, scale) == 0,
              "complex");
        int bad_f = 0, bad_d = 0, bad_h = 0, bad_c = 0;
        for (int k = 0; k < COUNT; k++) {
            double af = w[0] * f[0][k], ad = w[0] * d[0][k];
            double ah = w[0] * ref_half_to_double(h[0][k]);
            double are = w[0] * cf[0][2 * k], aim = w[0] * cf[0][2 * k + 1];
            for (int i = 1; i < n; i++) {
                af += w[i] * f[i][k];
                ad += w[i] * d[i][k];
                ah += w[i] * ref_half_to_double(h[i][k]);
                are += w[i] * cf[i][2 * k];
                aim += w[i] * cf[i][2 * k + 1];
            }
            bad_f += fout[k] != (float)(af * scale);
            bad_d += dout[k] != ad * scale;
            bad_h += hout[k] != ref_half_from_double(ah * scale);
            bad_c +=
                cfout[2 * k] != (float)(are * scale) || cfout[2 * k + 1] != (float)(aim * scale);
        }
        CHECK(bad_f == 0, "float weighted sum, n=%d: %d elements differ", n, bad_f);
        CHECK(bad_d == 0, "double weighted sum, n=%d: %d elements differ", n, bad_d);
        CHECK(bad_h == 0, "float16 weighted sum, n=%d: %d elements differ", n, bad_h);
        CHECK(bad_c == 0, "complex weighted sum, n=%d: %d elements differ", n, bad_c);
    }
    /* Long double: the mean of 1, 2 and 4 with size 4 is exact. */
    long double l0[2] = {1, -1}, l1[2] = {2, -2}, l2[2] = {4, -4}, lo[2];
    const void *li[3] = {l0, l1, l2};
    CHECK(cl_reduce_weighted_sum(COLLAB_LONG_DOUBLE, lo, li, NULL, 3, 2, 4.0 / 3.0) == 0 &&
              fabsl(lo[0] - 28.0L / 3.0L) < 1e-15L && fabsl(lo[1] + 28.0L / 3.0L) < 1e-15L,
          "long double");
    long double _Complex c0 = 1.0L + 2.0L * _Complex_I, co;
    const void *lci[1] = {&c0};
    CHECK(cl_reduce_weighted_sum(COLLAB_C_LONG_DOUBLE_COMPLEX, &co, lci, NULL, 1, 1, 3.0) == 0 &&
              creall(co) == 3.0L && cimagl(co) == 6.0L,
          "long double complex scales both parts");
}

static void test_int_rounding(void)
{
    /* (x0 + x1) * 1.5 with ties: 4.5 -> 5, -4.5 -> -5, 10.5 -> 11, 0.5 -> 1. */
    int32_t a[6] = {1, -1, 2, 3, 0, 0}, b[6] = {2, -2, 2, 4, 0, 1}, o[6];
    int32_t want[6] = {5, -5, 6, 11, 0, 2};
    const void *in[2] = {a, b};
    CHECK(cl_reduce_weighted_sum(COLLAB_INT32, o, in, NULL, 2, 6, 1.5) == 0, "int32");
    CHECK(memcmp(o, want, sizeof o) == 0, "int32 ties away from zero: %d %d %d %d %d %d", o[0],
          o[1], o[2], o[3], o[4], o[5]);
    int32_t half_a[3] = {1, -1, 1}, half_o[3];
    const void *hin[1] = {half_a};
    cl_reduce_weighted_sum(COLLAB_INT32, half_o, hin, NULL, 1, 3, 0.5);
    CHECK(half_o[0] == 1 && half_o[1] == -1, "0.5 -> 1, -0.5 -> -1");
    cl_reduce_weighted_sum(COLLAB_INT32, half_o, hin, NULL, 1, 3, 0.49999);
    CHECK(half_o[2] == 0, "0.49999 -> 0");

    /* Saturation at both ends. */
    int8_t s8a[2] = {100, -100}, s8b[2] = {100, -100}, s8o[2];
    const void *s8[2] = {s8a, s8b};
    cl_reduce_weighted_sum(COLLAB_INT8, s8o, s8, NULL, 2, 2, 1.0);
    CHECK(s8o[0] == 127 && s8o[1] == -128, "int8 saturates: %d %d", s8o[0], s8o[1]);
    uint8_t u8a = 200, u8b = 200, u8o;
    const void *u8[2] = {&u8a, &u8b};
    cl_reduce_weighted_sum(COLLAB_UINT8, &u8o, u8, NULL, 2, 1, 1.0);
    CHECK(u8o == 255, "uint8 saturates: %u", u8o);
    uint16_t u16a = 3, u16o;
    const void *u16[1] = {&u16a};
    cl_reduce_weighted_sum(COLLAB_UINT16, &u16o, u16, NULL, 1, 1, 0.1);
    CHECK(u16o == 0, "uint16 0.3 -> 0");
    int32_t i32a = INT32_MAX, i32b = INT32_MAX, i32o;
    const void *i32[2] = {&i32a, &i32b};
    cl_reduce_weighted_sum(COLLAB_INT32, &i32o, i32, NULL, 2, 1, 1.0);
    CHECK(i32o == INT32_MAX, "int32 saturates");
    uint32_t u32a = UINT32_MAX, u32o;
    const void *u32[1] = {&u32a};
    cl_reduce_weighted_sum(COLLAB_UINT32, &u32o, u32, NULL, 1, 1, 1.0);
    CHECK(u32o == UINT32_MAX, "uint32 max stays");

    /* 64-bit: exact beyond 2^53, saturated at both ends. */
    int64_t big = ((int64_t)1 << 62) + 1, i64o[3];
    int64_t x0[3] = {big, INT64_MAX, INT64_MIN}, x1[3] = {big, 1, -1};
    const void *i64[2] = {x0, x1};
    CHECK(cl_reduce_weighted_sum(COLLAB_INT64, i64o, i64, NULL, 2, 3, 0.5) == 0, "int64");
    CHECK(i64o[0] == big, "int64 (2^62+1) mean is exact: %lld", (long long)i64o[0]);
    cl_reduce_weighted_sum(COLLAB_INT64, i64o, i64, NULL, 2, 3, 1.0);
    CHECK(i64o[1] == INT64_MAX && i64o[2] == INT64_MIN, "int64 saturates");
    uint64_t ux[1] = {(uint64_t)1 << 63}, uo;
    const void *u64[2] = {ux, ux};
    cl_reduce_weighted_sum(COLLAB_UINT64, &uo, u64, NULL, 2, 1, 1.0);
    CHECK(uo == UINT64_MAX, "uint64 saturates");
    uint64_t odd = UINT64_MAX - 2;
    const void *u64b[1] = {&odd};
    cl_reduce_weighted_sum(COLLAB_UINT64, &uo, u64b, NULL, 1, 1, 1.0);
    CHECK(uo == UINT64_MAX - 2, "uint64 near max is exact");

    /* Every rank present, weights 1, scale 1: equals the plain sum. */
    int16_t p[3][400], po[400];
    const void *pin[3] = {p[0], p[1], p[2]};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 400; k++)
            p[i][k] = (int16_t)((int)(rng_next() % 20000) - 10000);
    double ones[3] = {1, 1, 1};
    CHECK(cl_reduce_is_plain_sum(3, 3, ones), "plain sum when all present");
    cl_reduce_weighted_sum(COLLAB_INT16, po, pin, ones, 3, 400, 1.0);
    int bad = 0;
    for (int k = 0; k < 400; k++) {
        int s = p[0][k] + p[1][k] + p[2][k];
        s = s > INT16_MAX ? INT16_MAX : s < INT16_MIN ? INT16_MIN : s;
        bad += po[k] != s;
    }
    CHECK(bad == 0, "int16 weighted with unit weights = saturated sum (%d differ)", bad);

    /* Random int32 data and weights against a long double reference:
       equal, or off by one only where the value is within 1e-6 of a tie. */
    static int32_t r[3][COUNT], ro[COUNT];
    const void *rin[3] = {r[0], r[1], r[2]};
    double w[3], scale;
    random_weights(w, 3, 7, &scale);
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < COUNT; k++)
            r[i][k] = (int32_t)(rng_next() % 2000001) - 1000000;
    cl_reduce_weighted_sum(COLLAB_INT32, ro, rin, w, 3, COUNT, scale);
    bad = 0;
    for (int k = 0; k < COUNT; k++) {
        long double v = ((long double)w[0] * r[0][k] + (long double)w[1] * r[1][k] +
                         (long double)w[2] * r[2][k]) *
                        scale;
        long double want_v = roundl(v);
        if (ro[k] != (int32_t)want_v &&
            !(fabsl(v - truncl(v)) - 0.5L < 1e-6L && fabsl((long double)ro[k] - want_v) <= 1))
            bad++;
    }
    CHECK(bad == 0, "int32 random weighted sums: %d elements off", bad);
}

static void test_errors(void)
{
    double a[2] = {1, 2}, o[2] = {7, 7};
    const void *in[2] = {a, a};
    double w[2] = {1, 1};
    CHECK(cl_reduce_weighted_sum(COLLAB_DOUBLE_INT, o, in, w, 2, 1, 1) == COLLAB_ERR_OP, "pair");
    CHECK(cl_reduce_weighted_sum(COLLAB_C_BOOL, o, in, w, 2, 1, 1) == COLLAB_ERR_OP, "bool");
    CHECK(cl_reduce_weighted_sum(COLLAB_BYTE, o, in, w, 2, 1, 1) == COLLAB_ERR_OP, "byte");
    CHECK(cl_reduce_weighted_sum(COLLAB_DTYPE_COUNT, o, in, w, 2, 1, 1) == COLLAB_ERR_TYPE, "type");
    CHECK(cl_reduce_weighted_sum(COLLAB_DOUBLE, o, in, w, 0, 1, 1) == COLLAB_ERR_ARG, "n = 0");
    CHECK(cl_reduce_weighted_sum(COLLAB_DOUBLE, o, NULL, w, 2, 1, 1) == COLLAB_ERR_ARG, "in NULL");
    CHECK(cl_reduce_weighted_sum(COLLAB_DOUBLE, NULL, in, w, 2, 1, 1) == COLLAB_ERR_ARG, "out");
    const void *holes[2] = {a, NULL};
    CHECK(cl_reduce_weighted_sum(COLLAB_DOUBLE, o, holes, w, 2, 1, 1) == COLLAB_ERR_ARG, "hole");
    double wn[2] = {1, NAN}, wneg[2] = {1, -1}, winf[2] = {INFINITY, 1};
    CHECK(cl_reduce_weighted_sum(COLLAB_DOUBLE, o, in, wn, 2, 1, 1) == COLLAB_ERR_ARG, "NaN w");
    CHECK(cl_reduce_weighted_sum(COLLAB_DOUBLE, o, in, wneg, 2, 1, 1) == COLLAB_ERR_ARG, "w < 0");
    CHECK(cl_reduce_weighted_sum(COLLAB_DOUBLE, o, in, winf, 2, 1, 1) == COLLAB_ERR_ARG, "inf w");
    CHECK(cl_reduce_weighted_sum(COLLAB_DOUBLE, o, in, w, 2, 1, INFINITY) == COLLAB_ERR_ARG,
          "inf scale");
    CHECK(cl_reduce_weighted_sum(COLLAB_DOUBLE, o, in, w, 2, 1, NAN) == COLLAB_ERR_ARG,
          "NaN scale");
    CHECK(cl_reduce_weighted_sum(COLLAB_DOUBLE, o, in, w, 2, 1, -1) == COLLAB_ERR_ARG, "scale < 0");
    CHECK(cl_reduce_weighted_sum(COLLAB_C_DOUBLE_COMPLEX, o, in, w, 2, SIZE_MAX / 2 + 1, 1) ==
              COLLAB_ERR_ARG,
          "complex count overflow");
    CHECK(o[0] == 7 && o[1] == 7, "errors leave out alone");
    CHECK(cl_reduce_weighted_sum(COLLAB_DOUBLE, NULL, in, w, 2, 0, 1) == 0, "count 0");

    CHECK(cl_reduce_is_plain_sum(4, 4, NULL) == 1, "all present, no weights");
    CHECK(cl_reduce_is_plain_sum(3, 4, NULL) == 0, "rank absent");
    double w4[4] = {2, 2, 2, 2}, w4b[4] = {1, 1, 3, 1};
    CHECK(cl_reduce_is_plain_sum(4, 4, w4) == 1, "equal weights");
    CHECK(cl_reduce_is_plain_sum(4, 4, w4b) == 0, "unequal weights");
    CHECK(cl_reduce_is_plain_sum(3, 4, w4) == 0, "equal weights, rank absent");
}

int main(void)
{
    rng_seed("cl_reduce_weighted_test");
    test_float_types();
    test_int_rounding();
    test_errors();
    if (s_failures != 0) {
        fprintf(stderr, "cl_reduce_weighted_test: %d failure(s)\n", s_failures);
        return 1;
    }
    printf("cl_reduce_weighted_test: OK\n");
    return 0;
}
