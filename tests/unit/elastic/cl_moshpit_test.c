/*  cl_moshpit_test.c - selftest of the split of a large group.

    One group up to the target size; beyond it ceil(n/T) groups of
    balanced size, none above T; the same split for the same inputs and a
    different one from collective to collective (also every other one, as
    a trainer with two all-reduces per step sees); every pair of members
    shares a group within a few dozen collectives; groups without a
    weighted member or without a non-client are merged; one pinned split
    so that a change of the rule (which would make peers of two versions
    disagree) cannot go unnoticed.
*/
#include "elastic/cl_moshpit.h"
#include "util/cl_selftest.h"

#include <stdbool.h>
#include <string.h>

#define NMAX 128

static void sizes(int n, const int *grp, int k, int *sz)
{
    for (int b = 0; b < k; b++)
        sz[b] = 0;
    for (int i = 0; i < n; i++)
        if (grp[i] >= 0 && grp[i] < k)
            sz[grp[i]]++;
}

static void test_small(void)
{
    int grp[NMAX];
    CL_CHECK(cl_moshpit_ngroups(4, 4) == 1);
    CL_CHECK(cl_moshpit_ngroups(5, 4) == 2);
    CL_CHECK(cl_moshpit_ngroups(9, 4) == 3);
    CL_CHECK(cl_moshpit_ngroups(9, 0) == 1);
    for (uint64_t seq = 0; seq < 50; seq++) {
        memset(grp, 0x55, sizeof grp);
        CL_CHECK(cl_moshpit_split(4, 4, seq, NULL, NULL, grp) == 1);
        for (int i = 0; i < 4; i++)
            CL_CHECK(grp[i] == 0);
        CL_CHECK(cl_moshpit_split(1, 1, seq, NULL, NULL, grp) == 1 && grp[0] == 0);
    }
}

static void test_balanced(void)
{
    static const int cases[][2] = {{5, 2}, {4, 2}, {5, 3}, {7, 3}, {100, 8}, {128, 64}, {65, 64}};
    int grp[NMAX], sz[NMAX];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int n = cases[c][0], t = cases[c][1];
        int k = cl_moshpit_ngroups(n, t);
        for (uint64_t seq = 0; seq < 200; seq++) {
            CL_CHECK(cl_moshpit_split(n, t, seq * 7919u, NULL, NULL, grp) == k);
            sizes(n, grp, k, sz);
            int lo = n, hi = 0, total = 0;
            for (int b = 0; b < k; b++) {
                lo = sz[b] < lo ? sz[b] : lo;
                hi = sz[b] > hi ? sz[b] : hi;
                total += sz[b];
            }
            CL_CHECK(total == n && hi <= t && hi - lo <= 1 && lo >= 1);
        }
    }
}

static void test_regroups(void)
{
    int a[NMAX], b[NMAX];
    /* Deterministic. */
    cl_moshpit_split(16, 4, 12345, NULL, NULL, a);
    cl_moshpit_split(16, 4, 12345, NULL, NULL, b);
    CL_CHECK(memcmp(a, b, 16 * sizeof a[0]) == 0);
    /* Different splits for seq and seq + 2 (two all-reduces per step). */
    int differ = 0;
    for (uint64_t seq = 0; seq < 100; seq++) {
        cl_moshpit_split(16, 4, seq, NULL, NULL, a);
        cl_moshpit_split(16, 4, seq + 2, NULL, NULL, b);
        bool same = true;
        for (int i = 0; i < 16 && same; i++)
            for (int j = 0; j < 16 && same; j++)
                same = (a[i] == a[j]) == (b[i] == b[j]);
        differ += !same;
    }
    CL_CHECK(differ >= 90);
    /* Every pair meets within 64 collectives, also on even sequence
       numbers only. */
    for (int stride = 1; stride <= 2; stride++) {
        bool met[16][16];
        memset(met, 0, sizeof met);
        for (uint64_t k = 0; k < 64; k++) {
            cl_moshpit_split(16, 4, k * (uint64_t)stride, NULL, NULL, a);
            for (int i = 0; i < 16; i++)
                for (int j = 0; j < 16; j++)
                    met[i][j] = met[i][j] || a[i] == a[j];
        }
        int missing = 0;
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 16; j++)
                missing += !met[i][j];
        CL_CHECK(missing == 0);
    }
}

static void test_merge(void)
{
    int grp[NMAX], sz[NMAX];
    /* Two weight-0 members (re-admitted stragglers) never form a group of
       their own. */
    const double w[4] = {0.0, 1.0, 0.0, 1.0};
    int merged = 0;
    for (uint64_t seq = 0; seq < 200; seq++) {
        int k = cl_moshpit_split(4, 2, seq, w, NULL, grp);
        CL_CHECK(k == 1 || k == 2);
        merged += k == 1;
        for (int b = 0; b < k; b++) {
            bool weighted = false;
            for (int i = 0; i < 4; i++)
                weighted = weighted || (grp[i] == b && w[i] > 0);
            CL_CHECK(weighted);
        }
    }
    CL_CHECK(merged > 0 && merged < 200); /* {0,2} together: about a third */
    /* Clients need a member that reduces. */
    const int cl[5] = {1, 1, 1, 0, 0};
    for (uint64_t seq = 0; seq < 200; seq++) {
        int k = cl_moshpit_split(5, 2, seq, NULL, cl, grp);
        sizes(5, grp, k, sz);
        for (int b = 0; b < k; b++) {
            bool reducer = false;
            for (int i = 0; i < 5; i++)
                reducer = reducer || (grp[i] == b && cl[i] == 0);
            CL_CHECK(reducer && sz[b] >= 1);
        }
    }
    /* Clients only (a swarm through a relaying monitor): they reduce, so
       the split is the same as without client flags. */
    const int all[6] = {1, 1, 1, 1, 1, 1};
    int g2[NMAX];
    for (uint64_t seq = 0; seq < 50; seq++) {
        int k = cl_moshpit_split(6, 2, seq, NULL, all, grp);
        CL_CHECK(k == 3 && cl_moshpit_split(6, 2, seq, NULL, NULL, g2) == 3);
        CL_CHECK(memcmp(grp, g2, 6 * sizeof *grp) == 0);
    }
    /* Nobody weighted: one group, as without a split. */
    const double z[6] = {0, 0, 0, 0, 0, 0};
    CL_CHECK(cl_moshpit_split(6, 2, 3, z, NULL, grp) == 1);
    for (int i = 0; i < 6; i++)
        CL_CHECK(grp[i] == 0);
}

static void test_pinned(void)
{
    /* The split is part of the protocol: peers of one swarm must compute
       the same one.  These values pin the rule. */
    int grp[8];
    CL_CHECK(cl_moshpit_split(8, 3, 0, NULL, NULL, grp) == 3);
    static const int want0[8] = {1, 0, 0, 1, 1, 2, 0, 2};
    CL_CHECK(memcmp(grp, want0, sizeof want0) == 0);
    CL_CHECK(cl_moshpit_split(8, 3, 1000003, NULL, NULL, grp) == 3);
    static const int want1[8] = {1, 2, 0, 2, 1, 0, 0, 1};
    CL_CHECK(memcmp(grp, want1, sizeof want1) == 0);
}

int main(void)
{
    test_small();
    test_balanced();
    test_regroups();
    test_merge();
    test_pinned();
    return cl_selftest_end("cl_moshpit_test");
}
