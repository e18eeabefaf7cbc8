/*  test_swarm_weight.c - scenario "weight" of test_swarm: every rank
    changes its averaging weight in the middle of an all-reduce loop.

    Three peers run 240 all-reduces of x = rank + 1 with MPI_SUM.  Rank i
    calls collab_set_weight(2 + i) before step 60 + 30 i.  Every call must
    succeed (the weight takes effect at a later collective, with no
    error); every result must be the weighted sum size x sum(w x) / sum(w)
    for one combination of old and new weights (each member's change takes
    effect at some collective, the same on every member); once all have
    changed and a barrier passed, the result is the one with every new
    weight, and the members agree bitwise.
*/
#include "test_swarm.h"

#include <math.h>

#define STEPS 240

/* Weighted sum of x = r + 1 over n ranks, rank r with weight w[r]. */
static double weighted(int n, const double *w)
{
    double num = 0, den = 0;
    for (int r = 0; r < n; r++) {
        num += w[r] * (r + 1);
        den += w[r];
    }
    return n * num / den;
}

/* True when y is the weighted sum for some combination of old (1) and new
   (2 + r) weights. */
static bool some_combination(int n, double y)
{
    for (unsigned mask = 0; mask < (1u << n); mask++) {
        double w[MAXP];
        for (int r = 0; r < n; r++)
            w[r] = (mask >> r) & 1u ? 2.0 + r : 1.0;
        if (fabs(y - weighted(n, w)) <= 1e-12 * fabs(y))
            return true;
    }
    return false;
}

int child_weight(int i, int n)
{
    if (collab_init(NULL) != COLLAB_OK)
        return 2;
    collab_comm_t *w = collab_comm_world();
    int bad = 0;
    for (int step = 0; step < STEPS; step++) {
        if (step == 60 + 30 * i)
            CHECK(collab_set_weight(2.0 + i) == COLLAB_OK);
        double x = i + 1, y = 0;
        int rc = collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL);
        CHECK(rc == COLLAB_OK);
        if (rc != COLLAB_OK)
            break;
        if (!some_combination(n, y) && bad++ < 3)
            fprintf(stderr, "[test] rank %d: step %d: %.17g is no weighted sum\n", i, step, y);
    }
    CHECK(bad == 0);
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    /* A second barrier: every member's weight change has been published
       once every member passed the first one. */
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    double x = i + 1, y = 0, hi = 0, lo = 0;
    CHECK(collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    double nw[MAXP];
    for (int r = 0; r < n; r++)
        nw[r] = 2.0 + r;
    CHECK(fabs(y - weighted(n, nw)) <= 1e-12 * y);
    CHECK(collab_allreduce(w, &y, &hi, 1, COLLAB_DOUBLE, &MAX, NULL) == COLLAB_OK);
    CHECK(collab_allreduce(w, &y, &lo, 1, COLLAB_DOUBLE, &MIN, NULL) == COLLAB_OK);
    CHECK(hi == lo && hi == y);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}
