/*  cl_robust.c - robust aggregation of float SUM contributions.

    All arithmetic is in double, in a fixed order (inputs in member order,
    elements in index order), compiled without FMA contraction, so that
    every member that aggregates the same inputs gets the same bits.

      trimmed mean   per element: sort the kept values (ties by member
                     order), drop the ceil(n/10) lowest and highest (none
                     when fewer than 3 are kept), weighted mean of the rest.
      centered clip  v = the coordinate-wise (lower) median; tau = the
                     lower median of |x_i - v|; then CL_ROBUST_CLIP_ITERS
                     times v += sum_i w_i min(1, tau/|x_i - v|) (x_i - v) /
                     sum_i w_i (Karimireddy et al., ICML 2021; the
                     aggregator BTARD-SGD runs on each part).  A member
                     that sends c x its gradient moves v by at most
                     w_i tau / sum w per iteration, whatever c is.

    Cost: trimmed mean O(count x n log n) with an insertion sort per
    element; centered clip O(count x n x (iterations + 2)) and one vector
    of doubles.
*/
#include "cl_robust.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static double s_get(collab_dtype_t t, const void *p, size_t k)
{
    if (t == COLLAB_FLOAT) {
        float f;
        memcpy(&f, (const uint8_t *)p + k * sizeof f, sizeof f);
        return f;
    }
    double d;
    memcpy(&d, (const uint8_t *)p + k * sizeof d, sizeof d);
    return d;
}

static void s_put(collab_dtype_t t, void *p, size_t k, double v)
{
    if (t == COLLAB_FLOAT) {
        float f = (float)v;
        memcpy((uint8_t *)p + k * sizeof f, &f, sizeof f);
    } else {
        memcpy((uint8_t *)p + k * sizeof v, &v, sizeof v);
    }
}

static int s_finite(collab_dtype_t t, const void *p, size_t count)
{
    for (size_t k = 0; k < count; k++)
        if (!isfinite(s_get(t, p, k)))
            return 0;
    return 1;
}

/* Sorts idx[0..m) by (v[idx], idx): insertion sort, m is the group size. */
static void s_sort(const double *v, int *idx, int m)
{
    for (int a = 1; a < m; a++) {
        int x = idx[a];
        int b = a - 1;
        while (b >= 0 && (v[idx[b]] > v[x] || (v[idx[b]] == v[x] && idx[b] > x))) {
            idx[b + 1] = idx[b];
            b--;
        }
        idx[b + 1] = x;
    }
}

int cl_robust_trim(int n)
{
    return n < 3 ? 0 : (n + 9) / 10;
}

/* The lower median of v[0..m), m >= 1, by the same order as s_sort. */
static double s_lower_median(const double *v, int *idx, int m)
{
    for (int i = 0; i < m; i++)
        idx[i] = i;
    s_sort(v, idx, m);
    return v[idx[(m - 1) / 2]];
}

int cl_robust_aggregate(cl_agg_t mode, collab_dtype_t t, void *out, const void *const *in,
                        const double *w, int n, size_t count, double size, double max_ratio,
                        uint8_t *kept)
{
    if (t != COLLAB_FLOAT && t != COLLAB_DOUBLE)
        return COLLAB_ERR_TYPE;
    if (n < 1 || (mode != CL_AGG_TRIMMED_MEAN && mode != CL_AGG_CENTERED_CLIP))
        return COLLAB_ERR_ARG;
    int *g = malloc((size_t)n * sizeof *g);     /* kept members, in member order */
    int *idx = malloc((size_t)n * sizeof *idx); /* sort scratch */
    double *cw = malloc((size_t)n * sizeof *cw);
    double *col = malloc((size_t)n * sizeof *col);
    double *v = NULL;
    int rc = COLLAB_ERR_NO_MEM;
    if (g == NULL || idx == NULL || cw == NULL || col == NULL)
        goto out;
    int m = 0;
    for (int i = 0; i < n; i++) {
        kept[i] = (uint8_t)s_finite(t, in[i], count);
        if (kept[i])
            g[m++] = i;
    }
    bool all = m == 0; /* nothing finite: a plain weighted mean of everything */
    if (all) {
        for (int i = 0; i < n; i++) {
            kept[i] = 1;
            g[m++] = i;
        }
    }
    /* Weights: capped at max_ratio x the lower median of the kept positive
       ones (a weight of 0 does not lower the cap). */
    int np = 0;
    for (int a = 0; a < m; a++) {
        double x = w != NULL ? w[g[a]] : 1.0;
        if (x > 0)
            col[np++] = x;
    }
    double med = np > 0 ? s_lower_median(col, idx, np) : 0.0;
    for (int a = 0; a < m; a++)
        col[a] = w != NULL ? w[g[a]] : 1.0;
    double wsum = 0;
    for (int a = 0; a < m; a++) {
        cw[a] = col[a];
        if (max_ratio > 0 && np > 0 && cw[a] > max_ratio * med)
            cw[a] = max_ratio * med;
        wsum += cw[a];
    }
    if (!(wsum > 0) || !isfinite(wsum)) {
        for (int a = 0; a < m; a++)
            cw[a] = 1.0;
        wsum = m;
    }
    if (all || m <= 2) { /* two contributions cannot outvote each other */
        for (size_t k = 0; k < count; k++) {
            double s = 0;
            for (int a = 0; a < m; a++)
                s += cw[a] * s_get(t, in[g[a]], k);
            s_put(t, out, k, size * (s / wsum));
        }
        rc = COLLAB_OK;
        goto out;
    }
    if (mode == CL_AGG_TRIMMED_MEAN) {
        int b = cl_robust_trim(m);
        for (size_t k = 0; k < count; k++) {
            for (int a = 0; a < m; a++) {
                col[a] = s_get(t, in[g[a]], k);
                idx[a] = a;
            }
            s_sort(col, idx, m);
            double s = 0, ws = 0;
            for (int a = b; a < m - b; a++) {
                s += cw[idx[a]] * col[idx[a]];
                ws += cw[idx[a]];
            }
            s_put(t, out, k, ws > 0 ? size * (s / ws) : 0.0);
        }
        rc = COLLAB_OK;
        goto out;
    }
    /* Centered clip. */
    v = malloc((count > 0 ? count : 1) * sizeof *v);
    double *dist = malloc((size_t)m * sizeof *dist);
    double *clip = malloc((size_t)m * sizeof *clip);
    if (v == NULL || dist == NULL || clip == NULL) {
        free(dist);
        free(clip);
        goto out;
    }
    for (size_t k = 0; k < count; k++) {
        for (int a = 0; a < m; a++)
            col[a] = s_get(t, in[g[a]], k);
        v[k] = s_lower_median(col, idx, m);
    }
    double tau = 0;
    for (int it = 0; it <= CL_ROBUST_CLIP_ITERS; it++) {
        for (int a = 0; a < m; a++) {
            double s = 0;
            for (size_t k = 0; k < count; k++) {
                double d = s_get(t, in[g[a]], k) - v[k];
                s += d * d;
            }
            dist[a] = sqrt(s);
        }
        if (it == 0) {
            tau = s_lower_median(dist, idx, m);
            continue;
        }
        for (int a = 0; a < m; a++)
            clip[a] = cw[a] * (dist[a] > tau ? tau / dist[a] : 1.0) / wsum;
        for (size_t k = 0; k < count; k++) {
            double s = 0;
            for (int a = 0; a < m; a++)
                s += clip[a] * (s_get(t, in[g[a]], k) - v[k]);
            v[k] += s;
        }
    }
    for (size_t k = 0; k < count; k++)
        s_put(t, out, k, size * v[k]);
    free(dist);
    free(clip);
    rc = COLLAB_OK;
out:
    free(v);
    free(g);
    free(idx);
    free(cw);
    free(col);
    return rc;
}
