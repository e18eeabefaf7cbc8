/*  cl_coll_layout_test.c - selftest of the butterfly's parts sized by
    bandwidth (cl_coll_split_bw): equal or unknown figures give exactly the
    equal layout; skewed figures fill every link for the same time (the
    optimum of docs/collectives.md §2.2b, checked against its conditions);
    every part stays within 1/16 .. 2 equal shares whatever a member
    claims; the parts always tile the vector.
*/
#include "cl_coll_impl.h"
#include "util/cl_selftest.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXK 64

/* The parts tile [0, count) in order, none empty. */
static bool s_tiles(size_t count, size_t k, const size_t *lo, const size_t *len)
{
    size_t at = 0;
    for (size_t i = 0; i < k; i++) {
        if (lo[i] != at || (len[i] == 0 && count >= k))
            return false;
        at += len[i];
    }
    return at == count;
}

static bool s_equal_layout(size_t count, size_t k, const size_t *lo, const size_t *len)
{
    for (size_t i = 0; i < k; i++) {
        size_t l, n;
        cl_coll_split(count, k, i, &l, &n);
        if (lo[i] != l || len[i] != n)
            return false;
    }
    return true;
}

static void test_equal(void)
{
    size_t lo[MAXK], len[MAXK];
    uint32_t fig[MAXK];
    size_t counts[] = {0, 1, 3, 100, 4095, 65536, 4194304, 4194307};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
        for (size_t k = 1; k <= 9; k++)
            for (int n = (int)k; n <= (int)k + 2; n++) {
                for (size_t i = 0; i < k; i++)
                    fig[i] = 100000;
                cl_coll_split_bw(counts[c], k, n, fig, lo, len);
                CL_CHECK(s_equal_layout(counts[c], k, lo, len));
                cl_coll_split_bw(counts[c], k, n, NULL, lo, len);
                CL_CHECK(s_equal_layout(counts[c], k, lo, len));
                CL_CHECK(!cl_coll_split_weighted(counts[c], k, n, fig));
                /* one figure unknown: equal as well */
                fig[k - 1] = 25000;
                fig[0] = 0;
                cl_coll_split_bw(counts[c], k, n, fig, lo, len);
                CL_CHECK(s_equal_layout(counts[c], k, lo, len));
            }
    /* two members carry the whole vector each whatever the split */
    fig[0] = 1000;
    fig[1] = 100000;
    cl_coll_split_bw(1 << 20, 2, 2, fig, lo, len);
    CL_CHECK(s_equal_layout(1 << 20, 2, lo, len));
    /* too few elements per part */
    fig[2] = 50;
    cl_coll_split_bw(3 * 63, 3, 3, fig, lo, len);
    CL_CHECK(s_equal_layout(3 * 63, 3, lo, len));
    CL_CHECK(cl_coll_split_weighted(3 * 64, 3, 3, fig));
}

/* Checks the optimum's conditions for figures fig: every part strictly
   inside its bounds takes the same time T (within one element and 2^-16),
   a part at the upper bound takes no longer, a part at the lower bound
   no less (it would shrink if it could), and no part takes longer than T
   unless it is at the lower bound. */
static void s_check_optimal(size_t count, size_t k, int n, const uint32_t *fig)
{
    size_t lo[MAXK], len[MAXK];
    cl_coll_split_bw(count, k, n, fig, lo, len);
    CL_CHECK(s_tiles(count, k, lo, len));
    size_t lmin = count / k / 16, lmax = (2 * count + k - 1) / k;
    double t = 0;
    for (size_t i = 0; i < k; i++) {
        CL_CHECK(len[i] >= lmin && len[i] <= lmax);
        if (len[i] > lmin && len[i] < lmax) {
            double ti = ((double)count + (n - 2) * (double)len[i]) / fig[i];
            t = ti > t ? ti : t;
        }
    }
    double slack = (double)(n - 2) * 2.0 / 1.0; /* two elements of one part */
    for (size_t i = 0; i < k; i++) {
        double ti = ((double)count + (n - 2) * (double)len[i]) / fig[i];
        double tol = t * 1e-5 + slack / fig[i];
        if (t == 0)
            continue;
        if (len[i] > lmin && len[i] < lmax)
            CL_CHECK(ti >= t - tol);
        else if (len[i] == lmax)
            CL_CHECK(ti <= t + tol);
        else
            CL_CHECK(ti >= t - tol);
    }
}

static void test_skewed(void)
{
    size_t lo[MAXK], len[MAXK];
    /* bench/wan.sh's set: one peer at 25 Mbit/s, three at 100 */
    uint32_t wan[4] = {100000, 100000, 100000, 25000};
    size_t count = 4194304; /* 16 MiB of floats */
    CL_CHECK(cl_coll_split_weighted(count, 4, 4, wan));
    cl_coll_split_bw(count, 4, 4, wan, lo, len);
    CL_CHECK(s_tiles(count, 4, lo, len));
    CL_CHECK(len[3] == count / 4 / 16); /* the slow one at its floor */
    for (int i = 0; i < 3; i++)        /* the others share the rest */
        CL_CHECK(len[i] + 1 >= (count - len[3]) / 3 && len[i] <= (count - len[3]) / 3 + 1);
    /* the slow link now carries C (1 + 2/64) instead of C (1 + 2/4) */
    s_check_optimal(count, 4, 4, wan);
    /* the slow one in the middle, and a client among the members (n > k) */
    uint32_t mid[4] = {100000, 25000, 100000, 100000};
    cl_coll_split_bw(count, 4, 5, mid, lo, len);
    CL_CHECK(len[1] == count / 4 / 16);
    s_check_optimal(count, 4, 5, mid);
    /* moderately skewed: nobody at a bound, every link busy equally long */
    uint32_t mod[3] = {100000, 80000, 120000};
    cl_coll_split_bw(999983, 3, 3, mod, lo, len);
    CL_CHECK(len[1] < len[0] && len[0] < len[2]);
    CL_CHECK(len[1] > 999983 / 3 / 16 && len[2] < 2 * 999983 / 3);
    s_check_optimal(999983, 3, 3, mod);
    /* a faster link takes a larger part, never a smaller one */
    uint32_t f[6] = {1000, 2000, 3000, 4000, 5000, 6000};
    cl_coll_split_bw(600000, 6, 6, f, lo, len);
    for (int i = 1; i < 6; i++)
        CL_CHECK(len[i] >= len[i - 1]);
    s_check_optimal(600000, 6, 6, f);
    /* random figures, sizes and member counts */
    uint64_t x = 88172645463325252ULL;
    for (int r = 0; r < 300; r++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t k = 2 + x % 31;
        int n = (int)k + (int)(x >> 8) % 3;
        size_t c = k * 64 + (x >> 16) % 5000000;
        uint32_t g[MAXK];
        for (size_t i = 0; i < k; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            g[i] = 1 + (uint32_t)(x % 10000000);
        }
        if (n < 3)
            n = 3;
        s_check_optimal(c, k, n, g);
        /* the same figures always give the same layout */
        size_t lo2[MAXK], len2[MAXK];
        cl_coll_split_bw(c, k, n, g, lo, len);
        cl_coll_split_bw(c, k, n, g, lo2, len2);
        CL_CHECK(memcmp(lo, lo2, k * sizeof *lo) == 0 && memcmp(len, len2, k * sizeof *len) == 0);
    }
}

/* A member claiming an absurd figure takes at most two shares, one
   claiming the least sheds at most 15/16 of its own. */
static void test_hostile(void)
{
    size_t lo[MAXK], len[MAXK];
    size_t count = 1 << 22;
    for (size_t k = 3; k <= 8; k++) {
        uint32_t g[MAXK];
        for (size_t i = 0; i < k; i++)
            g[i] = 100000;
        g[1] = UINT32_MAX;
        cl_coll_split_bw(count, k, (int)k, g, lo, len);
        CL_CHECK(s_tiles(count, k, lo, len));
        CL_CHECK(len[1] == (2 * count + k - 1) / k);
        g[1] = 1;
        cl_coll_split_bw(count, k, (int)k, g, lo, len);
        CL_CHECK(s_tiles(count, k, lo, len));
        CL_CHECK(len[1] == count / k / 16);
        /* everybody claims the extremes at once */
        for (size_t i = 0; i < k; i++)
            g[i] = i % 2 ? UINT32_MAX : 1;
        cl_coll_split_bw(count, k, (int)k + 1, g, lo, len);
        CL_CHECK(s_tiles(count, k, lo, len));
        for (size_t i = 0; i < k; i++)
            CL_CHECK(len[i] >= count / k / 16 && len[i] <= (2 * count + k - 1) / k);
    }
    /* the largest vector sized by bandwidth, the widest spread */
    uint32_t g2[4] = {1, UINT32_MAX, 1, UINT32_MAX};
    size_t big = (size_t)1 << 48;
    CL_CHECK(cl_coll_split_weighted(big, 4, 4, g2));
    cl_coll_split_bw(big, 4, 4, g2, lo, len);
    CL_CHECK(s_tiles(big, 4, lo, len));
    CL_CHECK(!cl_coll_split_weighted(big + 1, 4, 4, g2));
}

/* COLLAB_COMPRESSION=adaptive: a member's codec from its figure against
   the (upper) median of all; nobody compresses when a figure is unknown. */
static void test_codecs(void)
{
    cl_compress_t c[MAXK];
    uint32_t f[MAXK] = {25000, 100000, 100000, 100000};
    CL_CHECK(cl_coll_adaptive_codecs(f, 4, c) == COLLAB_OK);
    CL_CHECK(c[0] == CL_COMPRESS_INT8 && c[1] == CL_COMPRESS_NONE && c[2] == CL_COMPRESS_NONE &&
             c[3] == CL_COMPRESS_NONE);
    f[0] = 25001; /* just above a quarter: fp16 */
    CL_CHECK(cl_coll_adaptive_codecs(f, 4, c) == COLLAB_OK && c[0] == CL_COMPRESS_FP16);
    f[0] = 50000; /* half: fp16 */
    CL_CHECK(cl_coll_adaptive_codecs(f, 4, c) == COLLAB_OK && c[0] == CL_COMPRESS_FP16);
    f[0] = 50001; /* just above half: none */
    CL_CHECK(cl_coll_adaptive_codecs(f, 4, c) == COLLAB_OK && c[0] == CL_COMPRESS_NONE);
    f[0] = 0; /* unknown: nobody compresses */
    f[1] = 1;
    CL_CHECK(cl_coll_adaptive_codecs(f, 4, c) == COLLAB_OK);
    for (int i = 0; i < 4; i++)
        CL_CHECK(c[i] == CL_COMPRESS_NONE);
    /* two members: the slower one against the faster (the upper median) */
    uint32_t two[2] = {100000, 20000};
    CL_CHECK(cl_coll_adaptive_codecs(two, 2, c) == COLLAB_OK);
    CL_CHECK(c[0] == CL_COMPRESS_NONE && c[1] == CL_COMPRESS_INT8);
    /* one member, or equal figures: nobody */
    CL_CHECK(cl_coll_adaptive_codecs(two, 1, c) == COLLAB_OK && c[0] == CL_COMPRESS_NONE);
    for (int i = 0; i < MAXK; i++)
        f[i] = 7;
    CL_CHECK(cl_coll_adaptive_codecs(f, MAXK, c) == COLLAB_OK);
    for (int i = 0; i < MAXK; i++)
        CL_CHECK(c[i] == CL_COMPRESS_NONE);
    /* extreme claims stay exact (64-bit comparisons), and a majority of
       slow members is the median itself: nobody compresses */
    uint32_t ext[5] = {UINT32_MAX, UINT32_MAX, UINT32_MAX, 1, UINT32_MAX / 4};
    CL_CHECK(cl_coll_adaptive_codecs(ext, 5, c) == COLLAB_OK);
    CL_CHECK(c[0] == CL_COMPRESS_NONE && c[3] == CL_COMPRESS_INT8 && c[4] == CL_COMPRESS_INT8);
    uint32_t most[5] = {10, 10, 10, 1000, 1000};
    CL_CHECK(cl_coll_adaptive_codecs(most, 5, c) == COLLAB_OK);
    for (int i = 0; i < 5; i++)
        CL_CHECK(c[i] == CL_COMPRESS_NONE);
    /* large groups (sorted on the heap) give what small ones give */
    enum { BIG = 1000 };
    uint32_t *big = malloc(BIG * sizeof *big);
    cl_compress_t *bc = malloc(BIG * sizeof *bc);
    CL_CHECK(big != NULL && bc != NULL);
    if (big != NULL && bc != NULL) {
        for (int i = 0; i < BIG; i++)
            big[i] = i % 10 == 0 ? 20000 : i % 10 == 1 ? 40000 : 100000 + (uint32_t)i;
        CL_CHECK(cl_coll_adaptive_codecs(big, BIG, bc) == COLLAB_OK);
        for (int i = 0; i < BIG; i++)
            CL_CHECK(bc[i] == (i % 10 == 0   ? CL_COMPRESS_INT8
                               : i % 10 == 1 ? CL_COMPRESS_FP16
                                             : CL_COMPRESS_NONE));
    }
    free(big);
    free(bc);
}

/* The chunk by bandwidth: the default when a figure is unknown or all
   are equal; else the largest power of two in [32 KiB, cb] at which the
   slowest link carries one chunk from each other member within 20 ms. */
static void test_chunk(void)
{
    const size_t cb = 256 * 1024, kib = 1024;
    uint32_t f[MAXK] = {100000, 100000, 100000, 25000};
    CL_CHECK(cl_coll_chunk_bw(cb, 4, NULL) == cb);
    CL_CHECK(cl_coll_chunk_bw(cb, 4, f) == 32 * kib); /* 25 Mbit/s: 20833 B per member */
    f[3] = 100000; /* equal figures: the default */
    CL_CHECK(cl_coll_chunk_bw(cb, 4, f) == cb);
    f[0] = 100001;
    CL_CHECK(cl_coll_chunk_bw(cb, 4, f) == 64 * kib); /* 100 Mbit/s: 83333 B */
    CL_CHECK(cl_coll_chunk_bw(cb, 2, f) == 128 * kib); /* one other: 250000 B */
    f[2] = 0; /* a rate unknown: the default, whatever the others */
    CL_CHECK(cl_coll_chunk_bw(cb, 4, f) == cb);
    for (int i = 0; i < 4; i++)
        f[i] = 1000000 + (uint32_t)i; /* 1 Gbit/s: 833333 B, more than the default */
    CL_CHECK(cl_coll_chunk_bw(cb, 4, f) == cb);
    CL_CHECK(cl_coll_chunk_bw(200 * kib, 4, f) == 128 * kib); /* never above cb */
    CL_CHECK(cl_coll_chunk_bw(16 * kib, 4, f) == 16 * kib);   /* cb at or below the floor */
    CL_CHECK(cl_coll_chunk_bw(cb, 1, f) == cb);
    for (int i = 0; i < 4; i++)
        f[i] = 1000; /* equal slow links: the default too */
    CL_CHECK(cl_coll_chunk_bw(cb, 4, f) == cb);
    /* extreme claims: no overflow, the floor and the default bound it */
    uint32_t ext[MAXK];
    for (int i = 0; i < MAXK; i++)
        ext[i] = UINT32_MAX - (uint32_t)(i % 2);
    CL_CHECK(cl_coll_chunk_bw(cb, MAXK, ext) == cb);
    ext[7] = 1;
    CL_CHECK(cl_coll_chunk_bw(cb, MAXK, ext) == CL_CHUNK_BW_MIN);
    /* the rule at every rate and size: a power of two within the bounds,
       the largest whose tail fits (or the floor) */
    for (int n = 2; n <= MAXK; n += 5)
        for (uint32_t r = 1000; r <= 4000000; r = r * 3 / 2) {
            for (int i = 0; i < n; i++)
                f[i] = r + (uint32_t)i;
            size_t c = cl_coll_chunk_bw(cb, n, f);
            uint64_t per = (uint64_t)r * 20 / 8 / (uint64_t)(n - 1);
            CL_CHECK(c >= CL_CHUNK_BW_MIN && c <= cb && (c & (c - 1)) == 0);
            CL_CHECK(c == CL_CHUNK_BW_MIN || c <= per);
            CL_CHECK(c == cb || 2 * c > per);
        }
}

int main(void)
{
    test_chunk();
    test_codecs();
    test_equal();
    test_skewed();
    test_hostile();
    return cl_selftest_end("cl_coll_layout_test");
}
