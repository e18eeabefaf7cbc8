/*  cl_moshpit.c - the split of a large group for one collective
    (cl_moshpit.h, docs/elastic.md §9).

    For collective seq with n members and target size T, k = ceil(n / T)
    groups.  A Fisher-Yates shuffle of the positions 0..n-1 driven by
    splitmix64 seeded with seq gives a permutation; position p of the
    shuffled list goes to block floor(p * k / n), so block sizes differ by
    at most one and none exceeds T.  A fresh permutation per sequence
    number regroups the members from one collective to the next, also for
    a trainer whose steps hold an even number of all-reduces (a rule such
    as "the parity of seq" would give one tensor the same split forever),
    and any two members share a group with probability about (T-1)/(n-1)
    per collective, so information spreads over the whole swarm in a few
    steps.  Only integer arithmetic: the split is the same on every
    platform.

    A group must be able to average: it needs a member with weight > 0 (a
    re-admitted straggler weighs 0 for its first step) and a member that is
    not a client (clients reduce no parts while a public member is in the
    group).  A block that lacks either is merged into the next block
    (cyclically) until every block has both or a single block is left.
    When every member is a client (a swarm whose only public peer is a
    relaying monitor, docs/monitor.md §8), clients reduce and only the
    weight rule applies.
*/
#include "elastic/cl_moshpit.h"

#include <stdbool.h>
#include <stdlib.h>

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int cl_moshpit_ngroups(int n, int target)
{
    if (target < 1 || n <= target)
        return 1;
    return (n + target - 1) / target;
}

/* Can block b of grp (n members) average on its own? */
static bool block_ok(int n, const int *grp, int b, const double *weight, const int *client)
{
    bool weighted = false, reducer = false;
    for (int i = 0; i < n; i++) {
        if (grp[i] != b)
            continue;
        weighted = weighted || weight == NULL || weight[i] > 0.0;
        reducer = reducer || client == NULL || client[i] == 0;
    }
    return weighted && reducer;
}

int cl_moshpit_split(int n, int target, uint64_t seq, const double *weight, const int *client,
                     int *grp)
{
    int k = cl_moshpit_ngroups(n, target);
    for (int i = 0; i < n; i++)
        grp[i] = 0;
    if (k <= 1)
        return 1;
    /* With no public member, clients reduce (through a relay). */
    bool public = client == NULL;
    for (int i = 0; i < n && !public; i++)
        public = client[i] == 0;
    if (!public)
        client = NULL;
    int *perm = malloc((size_t)n * sizeof *perm);
    if (perm == NULL)
        return -1;
    uint64_t state = seq ^ 0x6d6f736870697421ULL;
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(splitmix64(&state) % (uint64_t)(i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int p = 0; p < n; p++)
        grp[perm[p]] = (int)((int64_t)p * k / n);
    free(perm);
    /* Merge blocks that cannot average into their successor. */
    int left = k;
    for (bool merged = true; merged && left > 1;) {
        merged = false;
        for (int b = 0; b < k && left > 1; b++) {
            bool present = false;
            for (int i = 0; i < n && !present; i++)
                present = grp[i] == b;
            if (!present || block_ok(n, grp, b, weight, client))
                continue;
            int next = b;
            for (int step = 1; step < k; step++) {
                int c = (b + step) % k;
                bool used = false;
                for (int i = 0; i < n && !used; i++)
                    used = grp[i] == c;
                if (used) {
                    next = c;
                    break;
                }
            }
            for (int i = 0; i < n; i++)
                if (grp[i] == b)
                    grp[i] = next;
            left--;
            merged = true;
        }
    }
    /* Number the remaining blocks 0..left-1 in order (negative while
       renumbering, so that a new number never meets an old one). */
    int next = 0;
    for (int b = 0; b < k; b++) {
        bool used = false;
        for (int i = 0; i < n; i++)
            if (grp[i] == b) {
                grp[i] = -1 - next;
                used = true;
            }
        next += used;
    }
    for (int i = 0; i < n; i++)
        grp[i] = -1 - grp[i];
    return next;
}
