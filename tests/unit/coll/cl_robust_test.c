/*  cl_robust_test.c - selftest of cl_robust_aggregate.

    Honest inputs close to a common value and one hostile input (scaled by
    1000, or NaN, or with a huge weight): the robust modes stay close to
    the honest mean where the plain mean does not; non-finite inputs are
    left out; weights are capped; the results are deterministic; nothing
    finite gives the plain mean (Inf propagates); argument errors.
*/
#include "cl_reduce_testutil.h"
#include "cl_robust.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#define N 8
#define COUNT 1000

static float s_in[N][COUNT];
static const void *s_ptr[N];
static float s_honest[COUNT]; /* mean of the honest inputs */

/* Honest members: a common vector plus small noise; member 7 hostile. */
static void make_inputs(double scale7)
{
    static float base[COUNT];
    for (size_t k = 0; k < COUNT; k++)
        base[k] = (float)rng_uniform(-1, 1);
    for (int i = 0; i < N; i++) {
        for (size_t k = 0; k < COUNT; k++)
            s_in[i][k] = base[k] + (float)rng_uniform(-0.05, 0.05);
        s_ptr[i] = s_in[i];
    }
    for (size_t k = 0; k < COUNT; k++) {
        double s = 0;
        for (int i = 0; i < N - 1; i++)
            s += s_in[i][k];
        s_honest[k] = (float)(s / (N - 1));
        s_in[N - 1][k] = (float)(s_in[N - 1][k] * scale7);
    }
}

/* Relative distance of out / size from the honest mean. */
static double rel_err(const float *out, double size)
{
    double d = 0, h = 0;
    for (size_t k = 0; k < COUNT; k++) {
        double e = out[k] / size - s_honest[k];
        d += e * e;
        h += (double)s_honest[k] * s_honest[k];
    }
    return sqrt(d / h);
}

static void test_scaled_member(void)
{
    make_inputs(1000.0);
    static float out[COUNT], again[COUNT];
    uint8_t kept[N];
    /* The plain mean is ruined: off by about 1000 / 8. */
    double s = 0, h = 0;
    for (size_t k = 0; k < COUNT; k++) {
        double m = 0;
        for (int i = 0; i < N; i++)
            m += s_in[i][k];
        m /= N;
        s += (m - s_honest[k]) * (m - s_honest[k]);
        h += (double)s_honest[k] * s_honest[k];
    }
    CHECK(sqrt(s / h) > 50, "the plain mean should be ruined (%g)", sqrt(s / h));
    const cl_agg_t modes[] = {CL_AGG_TRIMMED_MEAN, CL_AGG_CENTERED_CLIP};
    for (int m = 0; m < 2; m++) {
        CHECK(cl_robust_aggregate(modes[m], COLLAB_FLOAT, out, s_ptr, NULL, N, COUNT, N, 16,
                                  kept) == COLLAB_OK,
              "mode %d", (int)modes[m]);
        double e = rel_err(out, N);
        CHECK(e < 0.05, "mode %d: relative error %g", (int)modes[m], e);
        for (int i = 0; i < N; i++)
            CHECK(kept[i] == 1, "mode %d: member %d left out", (int)modes[m], i);
        /* The same inputs give the same bits. */
        CHECK(cl_robust_aggregate(modes[m], COLLAB_FLOAT, again, s_ptr, NULL, N, COUNT, N, 16,
                                  kept) == COLLAB_OK,
              "again");
        CHECK(memcmp(out, again, sizeof out) == 0, "mode %d: not deterministic", (int)modes[m]);
    }
}

static void test_non_finite(void)
{
    make_inputs(1.0);
    static float out[COUNT];
    uint8_t kept[N];
    s_in[3][17] = NAN;
    s_in[5][999] = INFINITY;
    for (cl_agg_t m = CL_AGG_TRIMMED_MEAN; m <= CL_AGG_CENTERED_CLIP; m++) {
        CHECK(cl_robust_aggregate(m, COLLAB_FLOAT, out, s_ptr, NULL, N, COUNT, N, 16, kept) ==
                  COLLAB_OK,
              "mode %d", (int)m);
        CHECK(kept[3] == 0 && kept[5] == 0 && kept[0] == 1 && kept[7] == 1, "mode %d: kept",
              (int)m);
        bool finite = true;
        for (size_t k = 0; k < COUNT; k++)
            finite = finite && isfinite(out[k]);
        CHECK(finite, "mode %d: a non-finite value got through", (int)m);
    }
    /* Nothing finite (every member overflowed, as a loss-scaling trainer
       does): the plain mean, so Inf reaches everyone and all skip the step. */
    for (int i = 0; i < N; i++)
        s_in[i][3] = INFINITY;
    CHECK(cl_robust_aggregate(CL_AGG_CENTERED_CLIP, COLLAB_FLOAT, out, s_ptr, NULL, N, COUNT, N, 16,
                              kept) == COLLAB_OK,
          "all infinite");
    CHECK(isinf(out[3]) && kept[0] == 1 && kept[3] == 1,
          "Inf must propagate when nothing is finite");
}

static void test_weights(void)
{
    make_inputs(1.0);
    /* Member 7 sends another vector with a weight of 1e300: capped at 16 x
       the median weight (1), its pull is at most 16/23 of the way. */
    for (size_t k = 0; k < COUNT; k++)
        s_in[7][k] = 100.0f;
    double w[N] = {1, 1, 1, 1, 1, 1, 1, 1e300};
    static double dout[COUNT];
    static double din[N][COUNT];
    const void *dp[N];
    for (int i = 0; i < N; i++) {
        for (size_t k = 0; k < COUNT; k++)
            din[i][k] = s_in[i][k];
        dp[i] = din[i];
    }
    uint8_t kept[N];
    CHECK(cl_robust_aggregate(CL_AGG_TRIMMED_MEAN, COLLAB_DOUBLE, dout, dp, w, N, COUNT, 1.0, 16,
                              kept) == COLLAB_OK,
          "double");
    for (size_t k = 0; k < COUNT; k++)
        CHECK(isfinite(dout[k]) && dout[k] < 2.0, "element %zu: %g", k, dout[k]);
    CHECK(cl_robust_aggregate(CL_AGG_CENTERED_CLIP, COLLAB_DOUBLE, dout, dp, w, N, COUNT, 1.0, 16,
                              kept) == COLLAB_OK,
          "double clip");
    double worst = 0;
    for (size_t k = 0; k < COUNT; k++)
        worst = fmax(worst, fabs(dout[k] - s_honest[k]));
    CHECK(worst < 20.0, "centered clip moved by %g", worst);
    /* Without a cap (ratio 0 = none) the huge weight wins. */
    CHECK(cl_robust_aggregate(CL_AGG_CENTERED_CLIP, COLLAB_DOUBLE, dout, dp, w, N, COUNT, 1.0, 0,
                              kept) == COLLAB_OK,
          "no cap");
}

static void test_trim_and_errors(void)
{
    CHECK(cl_robust_trim(1) == 0 && cl_robust_trim(2) == 0 && cl_robust_trim(3) == 1 &&
              cl_robust_trim(8) == 1 && cl_robust_trim(10) == 1 && cl_robust_trim(11) == 2,
          "trim");
    float a[2] = {1, 2}, b[2] = {3, 4}, out[2];
    const void *in[2] = {a, b};
    uint8_t kept[2];
    CHECK(cl_robust_aggregate(CL_AGG_TRIMMED_MEAN, COLLAB_INT32, out, in, NULL, 2, 2, 2, 16,
                              kept) == COLLAB_ERR_TYPE,
          "int");
    CHECK(cl_robust_aggregate(CL_AGG_MEAN, COLLAB_FLOAT, out, in, NULL, 2, 2, 2, 16, kept) ==
              COLLAB_ERR_ARG,
          "mean is not robust");
    CHECK(cl_robust_aggregate(CL_AGG_CENTERED_CLIP, COLLAB_FLOAT, out, in, NULL, 0, 2, 2, 16,
                              kept) == COLLAB_ERR_ARG,
          "n = 0");
    /* Two members: both modes give their mean, times size. */
    for (cl_agg_t m = CL_AGG_TRIMMED_MEAN; m <= CL_AGG_CENTERED_CLIP; m++)
        CHECK(cl_robust_aggregate(m, COLLAB_FLOAT, out, in, NULL, 2, 2, 2, 16, kept) == COLLAB_OK &&
                  out[0] == 4 && out[1] == 6,
              "two members, mode %d: %g %g", (int)m, out[0], out[1]);
}

int main(void)
{
    rng_seed("cl_robust_test");
    test_scaled_member();
    test_non_finite();
    test_weights();
    test_trim_and_errors();
    if (s_failures != 0) {
        fprintf(stderr, "cl_robust_test: %d failure(s)\n", s_failures);
        return 1;
    }
    printf("cl_robust_test: OK\n");
    return 0;
}
