/*  cl_coll_layout.c - the butterfly all-reduce's parts sized by bandwidth.

    Model (docs/collectives.md §2.2b).  n members, k of them reducers (not
    in client mode), a vector of C elements, reducer i's part L_i elements
    (sum C).  Member i sends its input for every other part (C - L_i) and
    the result of its own part to the n - 1 others ((n - 1) L_i); it
    receives as much.  So each way its link carries

        load_i = C + (n - 2) L_i

    and, with b_i the rate of its link (the slower of its two directions),
    the all-reduce takes at least max_i load_i / b_i.  The L_i that
    minimise that maximum fill every link to the same time T:
    L_i = (T b_i - C) / (n - 2), clamped to [Lmin, Lmax]; T is the least
    time at which the clamped lengths cover the vector.  Every length is
    non-decreasing in T, so T is found by bisection (in steps of 2^-20 of
    an element per kbit/s).  With n = 2 every
    member carries C whatever the split, and the split stays equal.

    Bounds (docs/security-bounds.md §5).  A member's figure is its own claim, so
    a part never falls below 1/16 of the equal share C/k (claiming a slow
    link sheds at most 15/16 of one's work) nor rises above twice it
    (claiming a fast link takes at most one extra share, never the whole
    vector while k > 2).

    Agreement.  Every member computes the layout from the same agreed
    figures; the arithmetic is integer (128-bit) so that no two machines
    round differently.  Equal figures, an unknown figure (0), or fewer
    than 64 elements per part give cl_coll_split's equal layout exactly.
*/
#include "cl_coll_impl.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BW_MIN_DIV 16             /* a part holds at least 1/BW_MIN_DIV of the equal share */
#define BW_MAX_MUL 2              /* and at most BW_MAX_MUL equal shares */
#define BW_MIN_ELEMS 64           /* elements per part below which parts stay equal */
#define BW_SCALE 1048576u         /* resolution of T: one step moves a part by < 2^-20 C b/b_max */
#define BW_MAX_COUNT (1ULL << 48) /* larger vectors (not reachable today) stay equal */
#define BW_MAX_MEMBERS (1 << 20)

__extension__ typedef unsigned __int128 bw_u128;

/* L_i at time T: (T f - C SCALE) / ((n - 2) SCALE), clamped. */
static size_t s_len_at(bw_u128 t, uint32_t f, size_t count, unsigned d, size_t lmin, size_t lmax)
{
    bw_u128 a = t * f, c = (bw_u128)count * BW_SCALE;
    bw_u128 q = a <= c ? 0 : (a - c) / ((bw_u128)d * BW_SCALE);
    if (q < lmin)
        return lmin;
    return q > lmax ? lmax : (size_t)q;
}

static size_t s_sum_at(bw_u128 t, const uint32_t *fig, size_t k, size_t count, unsigned d,
                       size_t lmin, size_t lmax, size_t *len)
{
    size_t sum = 0;
    for (size_t i = 0; i < k; i++) {
        size_t l = s_len_at(t, fig[i], count, d, lmin, lmax);
        if (len != NULL)
            len[i] = l;
        sum += l; /* k * lmax <= 2 C + k: no overflow below BW_MAX_COUNT */
    }
    return sum;
}

/* True when every one of the k figures is known (> 0) and they are not
   all equal; *fmin (when not NULL) is then the smallest. */
static bool s_known_unequal(const uint32_t *fig, size_t k, uint32_t *fmin)
{
    uint32_t lo = UINT32_MAX;
    bool differ = false;
    for (size_t i = 0; i < k; i++) {
        if (fig[i] == 0)
            return false;
        lo = fig[i] < lo ? fig[i] : lo;
        differ = differ || fig[i] != fig[0];
    }
    if (fmin != NULL)
        *fmin = lo;
    return differ;
}

/* cl_coll_split_weighted, with the smallest figure in *fmin when true. */
static bool s_weighted(size_t count, size_t k, int n, const uint32_t *fig, uint32_t *fmin)
{
    if (fig == NULL || k < 2 || n < 3 || n > BW_MAX_MEMBERS || count > BW_MAX_COUNT ||
        count / k < BW_MIN_ELEMS)
        return false;
    return s_known_unequal(fig, k, fmin);
}

bool cl_coll_split_weighted(size_t count, size_t k, int n, const uint32_t *fig)
{
    return s_weighted(count, k, n, fig, NULL);
}

void cl_coll_split_bw(size_t count, size_t k, int n, const uint32_t *fig, size_t *lo, size_t *len)
{
    uint32_t fmin;
    if (!s_weighted(count, k, n, fig, &fmin)) {
        for (size_t i = 0; i < k; i++)
            cl_coll_split(count, k, i, &lo[i], &len[i]);
        return;
    }
    unsigned d = (unsigned)(n - 2);
    size_t lmin = count / k / BW_MIN_DIV;
    size_t lmax = (BW_MAX_MUL * count + k - 1) / k;
    if (lmax > count)
        lmax = count;
    /* At hi every part is at lmax (k lmax >= 2 C >= C); at 0 at lmin
       (k lmin <= C / 16 < C). */
    bw_u128 lo_t = 0;
    bw_u128 hi_t = ((bw_u128)lmax * d + count) * BW_SCALE / fmin + 1;
    while (hi_t - lo_t > 1) {
        bw_u128 mid = lo_t + (hi_t - lo_t) / 2;
        if (s_sum_at(mid, fig, k, count, d, lmin, lmax, NULL) >= count)
            hi_t = mid;
        else
            lo_t = mid;
    }
    /* At lo_t the parts fall short of C, at hi_t they cover it: start
       from lo_t's and hand the shortfall out in part order, each part at
       most what the last step of T added to it (about f_i / ((n - 2) 2^20)
       elements), so that no part's time is off by more than that step. */
    size_t sum = s_sum_at(lo_t, fig, k, count, d, lmin, lmax, len);
    size_t deficit = count - sum;
    for (size_t i = 0; i < k && deficit > 0; i++) {
        size_t up = s_len_at(hi_t, fig[i], count, d, lmin, lmax) - len[i];
        up = up < deficit ? up : deficit;
        len[i] += up;
        deficit -= up;
    }
    size_t at = 0;
    for (size_t i = 0; i < k; i++) {
        lo[i] = at;
        at += len[i];
    }
}

/* Adaptive compression (docs/collectives.md §2.2c).  The median is the
   upper one of the sorted figures; the comparisons are exact in 64 bits. */
static int s_fig_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

int cl_coll_adaptive_codecs(const uint32_t *fig, int n, cl_compress_t *out)
{
    for (int i = 0; i < n; i++)
        out[i] = CL_COMPRESS_NONE;
    if (n < 2 || fig == NULL)
        return COLLAB_OK;
    for (int i = 0; i < n; i++)
        if (fig[i] == 0)
            return COLLAB_OK;
    uint32_t small[64], *sorted = n <= 64 ? small : malloc((size_t)n * sizeof *sorted);
    if (sorted == NULL)
        return COLLAB_ERR_NO_MEM; /* never a guess: other members decide from the figures */
    memcpy(sorted, fig, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, s_fig_cmp);
    uint64_t median = sorted[n / 2];
    if (sorted != small)
        free(sorted);
    for (int i = 0; i < n; i++) {
        if ((uint64_t)fig[i] * 4 <= median)
            out[i] = CL_COMPRESS_INT8;
        else if ((uint64_t)fig[i] * 2 <= median)
            out[i] = CL_COMPRESS_FP16;
    }
    return COLLAB_OK;
}

/* The pipelining chunk by bandwidth (docs/collectives.md §2.2b, "Chunks").
   The slowest link's last chunks come down after its last upload (one
   from each other member, each reducing its part): (n - 1) chunks at its
   rate.  When the figures differ, the chunk is the largest power of two,
   within [CL_CHUNK_BW_MIN, cb], at which those chunks take at most
   BW_TAIL_MS.  Equal figures keep cb: on equal links of 100 Mbit/s,
   where 64 KiB chunks would make that tail 16 ms instead of 63, four
   peers on two cores ran slower with them (more messages, docs/
   benchmarks.md).  Integer arithmetic on the agreed figures: every member
   computes the same chunk. */
#define BW_TAIL_MS 20

size_t cl_coll_chunk_bw(size_t cb, int n, const uint32_t *fig)
{
    uint32_t fmin;
    if (fig == NULL || n < 2 || cb <= CL_CHUNK_BW_MIN || !s_known_unequal(fig, (size_t)n, &fmin))
        return cb; /* a rate unknown, or all equal: the default */
    /* fmin kbit/s carries fmin * BW_TAIL_MS / 8 bytes in BW_TAIL_MS. */
    uint64_t per = (uint64_t)fmin * BW_TAIL_MS / 8 / (uint64_t)(n - 1);
    size_t c = CL_CHUNK_BW_MIN;
    while (c * 2 <= cb && (uint64_t)c * 2 <= per)
        c *= 2;
    return c;
}
