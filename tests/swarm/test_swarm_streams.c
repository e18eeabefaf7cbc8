/*  test_swarm_streams.c - scenario "streams" of test_swarm: the stream a
    failed peer opened for a communicator this program never created is
    freed, and gives its place back (docs/security-bounds.md §5).

    Three peers, COLLAB_MAX_STREAMS=1 (one such stream at a time).  Rank 2
    duplicates the world communicator, starts an all-reduce on the copy
    (its messages open a stream at ranks 0 and 1, which never create that
    copy), meets them at a barrier (behind which those messages arrived:
    a peer's messages travel in order) and SIGKILLs itself.  Ranks 0 and 1 all-reduce on the world
    until the swarm has taken rank 2 out.  Then rank 1 duplicates the
    world twice (a communicator id rank 2's stream does not have) and
    starts an all-reduce (max of rank + 1) on the second copy, then meets
    rank 0 at a barrier; only then does rank 0 create its own two copies
    and join: rank 1's messages reached rank 0 early and needed a new
    stream there.
    Asserted: both get 2 from a group of 2, and rank 0's log never says it dropped a
    message for a communicator it has not created.  With rank 2's stream
    kept, rank 0 refused rank 1's messages (one stream too many) and the
    all-reduce could not complete with both.
*/
#include "test_swarm.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int child_streams(int i, int n)
{
    (void)n;
    setenv("COLLAB_MAX_STREAMS", "1", 1);
    setenv("COLLAB_MAX_STREAMS_PER_PEER", "1", 1);
    char log[512];
    collab_comm_t *w = test_join(i, "streams", log, sizeof log);
    if (w == NULL)
        return 2;
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    if (i == 2) {
        collab_comm_t *d = NULL;
        CHECK(collab_comm_dup(w, &d) == COLLAB_OK);
        double x = 1, y = 0;
        collab_request_t *req = NULL;
        CHECK(collab_allreduce(d, &x, &y, 1, COLLAB_DOUBLE, &SUM, &req) == COLLAB_OK);
        /* Its messages to a peer travel in order: once the barrier is
           through, those of the all-reduce reached ranks 0 and 1. */
        CHECK(collab_barrier(w, NULL) == COLLAB_OK);
        raise(SIGKILL);
    }
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    /* Until the swarm goes on without rank 2. */
    double t0 = now_s();
    collab_info_t info = {0};
    do {
        double one = 1, sum = 0;
        CHECK(collab_allreduce(w, &one, &sum, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
        CHECK(collab_last_info(&info) == COLLAB_OK);
    } while (info.group_size > 2 && now_s() - t0 < 30);
    CHECK(info.group_size == 2);
    collab_comm_t *d[2] = {NULL, NULL};
    double x = i + 1, y = 0;
    collab_request_t *req = NULL;
    if (i == 1) {
        /* Its all-reduce starts before rank 0 creates the copy; the
           barrier after it, in order behind its messages, tells rank 0
           that they are there. */
        CHECK(collab_comm_dup(w, &d[0]) == COLLAB_OK);
        CHECK(collab_comm_dup(w, &d[1]) == COLLAB_OK);
        CHECK(collab_allreduce(d[1], &x, &y, 1, COLLAB_DOUBLE, &MAX, &req) == COLLAB_OK);
        CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    } else {
        CHECK(collab_barrier(w, NULL) == COLLAB_OK);
        CHECK(collab_comm_dup(w, &d[0]) == COLLAB_OK);
        CHECK(collab_comm_dup(w, &d[1]) == COLLAB_OK);
        CHECK(collab_allreduce(d[1], &x, &y, 1, COLLAB_DOUBLE, &MAX, &req) == COLLAB_OK);
    }
    CHECK(collab_wait(&req, NULL) == COLLAB_OK);
    CHECK(collab_last_info(&info) == COLLAB_OK);
    fprintf(stderr,
            "[test] rank %d: all-reduce (max) on a new copy of the world: %g from %d peers\n", i, y,
            info.group_size);
    CHECK(y == 2 && info.group_size == 2);
    const char *dropped[] = {"for a communicator this program has not created"};
    CHECK(!file_has(log, dropped, 1));
    for (int k = 0; k < 2; k++)
        CHECK(collab_comm_free(&d[k]) == COLLAB_OK);
    CHECK(collab_finalize() == COLLAB_OK);
    return s_failures > 0;
}
