/*  test_swarm_groups.c - the "groups" scenario of test_swarm: world
    all-reduces in several groups beyond COLLAB_TARGET_GROUP (see the
    scenario list at the top of test_swarm.c). */
#include "test_swarm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GROUP_ROUNDS 48

/* One peer's record of the all-reduce rounds of the groups scenario. */
typedef struct {
    double x[GROUP_ROUNDS + 1];  /* its value before round 0, after each round */
    unsigned mask[GROUP_ROUNDS]; /* ranks of its group in each round */
    int size[GROUP_ROUNDS];      /* group size MPIX_Collab_last_info gave */
} group_rec_t;

int child_groups(int i, int n)
{
    const int target = 2;
    char log[512];
    snprintf(log, sizeof log, "%s/log%d", s_dir, i);
    unlink(log);
    /* The founder fixes the swarm's value; peer 1 gives the same one, the
       others none: they adopt it. */
    if (i <= 1)
        setenv("COLLAB_TARGET_GROUP", "2", 1);
    else
        setenv("COLLAB_LOG_FILE", log, 1);
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[test] rank %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    collab_comm_t *w = collab_comm_world();
    /* Matchmaking closes the group at COLLAB_TARGET_GROUP peers: make sure
       every peer is a member before the first collective (sends to a rank
       that has not joined yet wait for it). */
    if (i == 0) {
        for (int r = 1; r < n; r++) {
            int v = -1;
            CHECK(collab_recv(w, &v, sizeof v, r, 1, NULL, NULL) == COLLAB_OK && v == r);
        }
        for (int r = 1; r < n; r++)
            CHECK(collab_send(w, &r, sizeof r, r, 2, NULL) == COLLAB_OK);
    } else {
        int v = -1;
        CHECK(collab_send(w, &i, sizeof i, 0, 1, NULL) == COLLAB_OK);
        CHECK(collab_recv(w, &v, sizeof v, 0, 2, NULL, NULL) == COLLAB_OK && v == i);
    }
    group_rec_t me;
    memset(&me, 0, sizeof me);
    me.x[0] = (double)(i * i) + 0.25 * i;
    collab_info_t info;
    for (int c = 0; c < GROUP_ROUNDS; c++) {
        double y = 0;
        CHECK(collab_allreduce(w, &me.x[c], &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
        me.x[c + 1] = y / n;
        CHECK(collab_last_info(&info) == COLLAB_OK);
        me.size[c] = info.group_size;
        for (int k = 0; k < info.nranks; k++)
            me.mask[c] |= 1u << info.ranks[k];
    }
    /* Other collectives run with every member: gather every record. */
    group_rec_t all[MAXP];
    size_t counts[MAXP], displs[MAXP];
    for (int r = 0; r < n; r++) {
        counts[r] = sizeof me;
        displs[r] = (size_t)r * sizeof me;
    }
    CHECK(collab_allgatherv(w, &me, sizeof me, all, counts, displs, NULL) == COLLAB_OK);
    CHECK(collab_last_info(&info) == COLLAB_OK && info.group_size == n);
    CHECK(memcmp(&all[i], &me, sizeof me) == 0);

    double sum0 = 0, mean, spread0;
    double lo = all[0].x[0], hi = all[0].x[0];
    for (int r = 0; r < n; r++) {
        sum0 += all[r].x[0];
        lo = fmin(lo, all[r].x[0]);
        hi = fmax(hi, all[r].x[0]);
    }
    mean = sum0 / n;
    spread0 = hi - lo;
    unsigned met[MAXP] = {0};
    int split = 0;
    double prev = spread0;
    for (int c = 0; c < GROUP_ROUNDS; c++) {
        double sum = 0;
        lo = hi = all[0].x[c + 1];
        for (int r = 0; r < n; r++) {
            const group_rec_t *a = &all[r];
            /* Groups of at most COLLAB_TARGET_GROUP that contain their peer. */
            CHECK(a->size[c] >= 1 && a->size[c] <= target);
            CHECK(__builtin_popcount(a->mask[c]) == a->size[c]);
            CHECK(a->mask[c] & (1u << r));
            met[r] |= a->mask[c];
            /* Every member of a group reports the same group and holds
               bit-identical results. */
            for (int q = 0; q < n; q++)
                if (a->mask[c] & (1u << q)) {
                    CHECK(all[q].mask[c] == a->mask[c]);
                    CHECK(memcmp(&all[q].x[c + 1], &a->x[c + 1], sizeof(double)) == 0);
                }
            sum += a->x[c + 1];
            lo = fmin(lo, a->x[c + 1]);
            hi = fmax(hi, a->x[c + 1]);
        }
        split += all[0].size[c] < n;
        /* Averaging inside groups keeps the sum and never widens the
           spread. */
        CHECK(fabs(sum - sum0) <= 1e-9 * fabs(sum0));
        CHECK(hi - lo <= prev * (1 + 1e-12));
        prev = hi - lo;
    }
    CHECK(split == GROUP_ROUNDS);
    for (int r = 0; r < n; r++)
        CHECK(met[r] == (1u << n) - 1); /* every pair shared a group */
    CHECK(prev <= 1e-4 * spread0);
    CHECK(fabs(me.x[GROUP_ROUNDS] - mean) <= 1e-4 * spread0);
    if (i >= 2) {
        char line[128];
        snprintf(line, sizeof line,
                 "%d members over COLLAB_TARGET_GROUP=%d: all-reduces run in %d groups", n, target,
                 (n + target - 1) / target);
        const char *want[] = {line};
        CHECK(file_has(log, want, 1));
        unlink(log);
    }
    if (i == 0)
        fprintf(stderr, "[test] spread %.3g -> %.3g after %d rounds (mean %.6f)\n", spread0, prev,
                GROUP_ROUNDS, mean);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}
