/*  cl_p2p_test.c - selftest of point-to-point matching.

    Checks MPI's ordering rules: posted receives match in posting order,
    unexpected messages in arrival order, wildcards, communicator
    separation, probes that look and probes that take, cancellation and
    removal of receives waiting on a failed source; the per-sender and
    total limits on unexpected messages.
*/
#include "engine/cl_p2p.h"

#include "mpi_collab.h"

#include <stdio.h>
#include <string.h>

#include "selftest.h"

static bool from_src2(void *ctx, const cl_p2p_posted_t *e)
{
    (void)ctx;
    return e->src == 2;
}

static void count_fn(void *ctx, const cl_p2p_posted_t *e)
{
    (void)e;
    (*(int *)ctx)++;
}

/* Limits: per sender and in all, in messages and in bytes (with the
   fixed overhead); taking, withdrawing and dropping give the room back;
   a peer's messages to itself count against nothing. */
static void test_limits(void)
{
    cl_p2p_t *q = cl_p2p_new();
    CHECK(q != NULL);
    if (q == NULL)
        return;
    cl_p2p_limits_t lim = {.peer_bytes = 3 * (CL_P2P_MSG_COST + 10),
                           .peer_msgs = 4,
                           .total_bytes = 5 * (CL_P2P_MSG_COST + 10),
                           .total_msgs = 100};
    cl_p2p_set_limits(q, &lim);
    char data[4 * (CL_P2P_MSG_COST + 10)];
    memset(data, 0, sizeof data);
    for (int i = 0; i < 3; i++)
        CHECK(cl_p2p_store_from(q, 1, 0, i, data, 10, 0, 7) == 0);
    /* A fourth of 10 bytes passes rank 7's bytes, an empty one does not. */
    CHECK(cl_p2p_store_from(q, 1, 0, 3, data, 10, 0, 7) == CL_P2P_OVER_PEER);
    CHECK(cl_p2p_dropped(q, 7) == 1);
    CHECK(cl_p2p_store_from(q, 1, 0, 3, data, 0, 0, 7) == CL_P2P_OVER_PEER);
    CHECK(cl_p2p_dropped(q, 7) == 2);
    size_t bytes = 0;
    CHECK(cl_p2p_queued_from(q, 7, &bytes) == 3 && bytes == 3 * (CL_P2P_MSG_COST + 10));
    /* Another sender still has room, up to the total. */
    CHECK(cl_p2p_store_from(q, 1, 1, 0, data, 10, 0, 8) == 0);
    CHECK(cl_p2p_store_from(q, 1, 1, 0, data, 10, 0, 8) == 0);
    CHECK(cl_p2p_store_from(q, 1, 1, 0, data, 10, 0, 8) == CL_P2P_OVER_TOTAL);
    CHECK(cl_p2p_dropped(q, 8) == 1 && cl_p2p_dropped(q, 9) == 0);
    /* A message larger than the whole per-peer limit: rank 9 holds
       nothing, but the whole queue is full. */
    CHECK(cl_p2p_store_from(q, 1, 1, 0, data, 3 * (CL_P2P_MSG_COST + 10), 0, 9) ==
          CL_P2P_OVER_TOTAL);
    /* A peer's own messages pass whatever the limits. */
    for (int i = 0; i < 10; i++)
        CHECK(cl_p2p_store_sync(q, 1, 2, 0, data, 50, 0, 2) == 0);
    CHECK(cl_p2p_queued_from(q, -1, &bytes) == 5 && bytes == 5 * (CL_P2P_MSG_COST + 10));
    /* Taking one of rank 7's makes room for one more of it. */
    cl_p2p_msg_t *m = cl_p2p_find(q, 1, 0, 1, true);
    CHECK(m != NULL && m->tag == 1);
    cl_p2p_msg_free(m);
    CHECK(cl_p2p_queued_from(q, 7, NULL) == 2);
    CHECK(cl_p2p_store_from(q, 1, 0, 5, data, 10, 0, 7) == 0);
    /* Count limit: four messages of rank 3 at most. */
    lim.peer_bytes = lim.total_bytes = 0;
    cl_p2p_set_limits(q, &lim);
    for (int i = 0; i < 4; i++)
        CHECK(cl_p2p_store_from(q, 2, 0, i, NULL, 0, (uint64_t)i + 1, 3) == 0);
    CHECK(cl_p2p_store_from(q, 2, 0, 9, NULL, 0, 0, 3) == CL_P2P_OVER_PEER);
    CHECK(cl_p2p_withdraw(q, 2, 3, 2));
    CHECK(cl_p2p_store_from(q, 2, 0, 9, NULL, 0, 0, 3) == 0);
    cl_p2p_drop_comm(q, 2);
    CHECK(cl_p2p_queued_from(q, 3, &bytes) == 0 && bytes == 0);
    CHECK(cl_p2p_queued_from(q, -1, NULL) == 5);
    /* One message larger than the per-peer byte limit waits when its
       sender holds nothing else; a second one does not. */
    lim.peer_bytes = 3 * (CL_P2P_MSG_COST + 10);
    lim.total_bytes = 100 * (CL_P2P_MSG_COST + 10);
    cl_p2p_set_limits(q, &lim);
    CHECK(cl_p2p_store_from(q, 3, 0, 0, data, 4 * (CL_P2P_MSG_COST + 10), 0, 4) == 0);
    CHECK(cl_p2p_store_from(q, 3, 0, 1, data, 0, 0, 4) == CL_P2P_OVER_PEER);
    cl_p2p_msg_t *big = cl_p2p_find(q, 3, 0, 0, true);
    CHECK(big != NULL && big->len == 4 * (CL_P2P_MSG_COST + 10));
    cl_p2p_msg_free(big);
    CHECK(cl_p2p_store_from(q, 3, 0, 1, data, 0, 0, 4) == 0);
    cl_p2p_destroy(&q);
}

int main(void)
{
    test_limits();
    cl_p2p_t *q = cl_p2p_new();
    CHECK(q != NULL);
    int r1, r2, r3, r4;

    /* Posted order wins among matching receives. */
    CHECK(cl_p2p_post(q, &(cl_p2p_posted_t){1, COLLAB_ANY_SOURCE, 5, CL_P2P_RECV, &r1}) == 0);
    CHECK(cl_p2p_post(q, &(cl_p2p_posted_t){1, 3, COLLAB_ANY_TAG, CL_P2P_RECV, &r2}) == 0);
    CHECK(cl_p2p_post(q, &(cl_p2p_posted_t){2, 3, 5, CL_P2P_RECV, &r3}) == 0);
    cl_p2p_posted_t e;
    CHECK(cl_p2p_match_posted(q, 1, 3, 5, &e) && e.req == &r1);
    CHECK(cl_p2p_match_posted(q, 1, 3, 5, &e) && e.req == &r2);
    CHECK(!cl_p2p_match_posted(q, 1, 3, 5, &e)); /* r3 is on another comm */
    CHECK(cl_p2p_match_posted(q, 2, 3, 5, &e) && e.req == &r3);
    CHECK(!cl_p2p_match_posted(q, 2, 3, 5, &e));

    /* Unexpected messages: arrival order, wildcards, payload copied. */
    char a[] = "first", b[] = "second", c[] = "third";
    CHECK(cl_p2p_store(q, 1, 0, 7, a, sizeof a) == 0);
    CHECK(cl_p2p_store(q, 1, 1, 7, b, sizeof b) == 0);
    CHECK(cl_p2p_store(q, 1, 0, 8, c, sizeof c) == 0);
    CHECK(cl_p2p_store(q, 1, 4, 9, NULL, 0) == 0);
    a[0] = 'X';
    size_t bytes;
    CHECK(cl_p2p_unexpected(q, &bytes) == 4 && bytes == sizeof a + sizeof b + sizeof c);
    cl_p2p_msg_t *m = cl_p2p_find(q, 1, COLLAB_ANY_SOURCE, 8, false);
    CHECK(m != NULL && m->src == 0 && strcmp((char *)m->data, "third") == 0);
    m = cl_p2p_find(q, 1, 0, COLLAB_ANY_TAG, true);
    CHECK(m != NULL && strcmp((char *)m->data, "first") == 0);
    cl_p2p_msg_free(m);
    m = cl_p2p_find(q, 1, 0, COLLAB_ANY_TAG, true);
    CHECK(m != NULL && strcmp((char *)m->data, "third") == 0);
    cl_p2p_msg_free(m);
    CHECK(cl_p2p_find(q, 1, 0, COLLAB_ANY_TAG, true) == NULL);
    CHECK(cl_p2p_find(q, 2, COLLAB_ANY_SOURCE, COLLAB_ANY_TAG, false) == NULL);
    m = cl_p2p_find(q, 1, 4, 9, true);
    CHECK(m != NULL && m->len == 0 && m->data == NULL);
    cl_p2p_msg_free(m);
    /* The tail is right after removing the last element. */
    CHECK(cl_p2p_store(q, 1, 5, 1, c, sizeof c) == 0);
    m = cl_p2p_find(q, 1, COLLAB_ANY_SOURCE, COLLAB_ANY_TAG, true);
    CHECK(m != NULL && m->src == 1);
    cl_p2p_msg_free(m);
    m = cl_p2p_find(q, 1, COLLAB_ANY_SOURCE, COLLAB_ANY_TAG, true);
    CHECK(m != NULL && m->src == 5);
    cl_p2p_msg_free(m);
    CHECK(cl_p2p_unexpected(q, &bytes) == 0 && bytes == 0);

    /* Probes wait in line with receives. */
    CHECK(cl_p2p_post(q, &(cl_p2p_posted_t){1, 2, 1, CL_P2P_PROBE, &r1}) == 0);
    CHECK(cl_p2p_post(q, &(cl_p2p_posted_t){1, 2, 1, CL_P2P_MPROBE, &r2}) == 0);
    CHECK(cl_p2p_post(q, &(cl_p2p_posted_t){1, 2, 1, CL_P2P_RECV, &r3}) == 0);
    CHECK(cl_p2p_match_posted(q, 1, 2, 1, &e) && e.kind == CL_P2P_PROBE);
    CHECK(cl_p2p_match_posted(q, 1, 2, 1, &e) && e.kind == CL_P2P_MPROBE);

    /* Cancel and failure removal. */
    CHECK(cl_p2p_post(q, &(cl_p2p_posted_t){1, 2, COLLAB_ANY_TAG, CL_P2P_RECV, &r4}) == 0);
    CHECK(cl_p2p_post(q, &(cl_p2p_posted_t){1, 0, COLLAB_ANY_TAG, CL_P2P_RECV, &r1}) == 0);
    CHECK(cl_p2p_cancel(q, &r3));
    CHECK(!cl_p2p_cancel(q, &r3));
    int failed = 0;
    CHECK(cl_p2p_remove_posted_if(q, from_src2, count_fn, &failed) == 1 && failed == 1);
    CHECK(cl_p2p_match_posted(q, 1, 0, 3, &e) && e.req == &r1);
    CHECK(!cl_p2p_match_posted(q, 1, 2, 3, &e));

    /* Dropping a communicator's messages. */
    CHECK(cl_p2p_store(q, 7, 0, 0, a, 3) == 0);
    CHECK(cl_p2p_store(q, 8, 0, 0, a, 3) == 0);
    CHECK(cl_p2p_store(q, 7, 0, 0, a, 3) == 0);
    cl_p2p_drop_comm(q, 7);
    CHECK(cl_p2p_unexpected(q, &bytes) == 1 && bytes == 3);
    CHECK(cl_p2p_store(q, 9, 0, 0, a, 3) == 0);
    CHECK(cl_p2p_find(q, 9, 0, 0, false) != NULL);

    /* Synchronous messages: a sender withdraws its own unmatched one only. */
    {
        cl_p2p_t *w = cl_p2p_new();
        CHECK(w != NULL);
        CHECK(cl_p2p_store_sync(w, 4, 0, 1, "ab", 2, 7, 3) == 0);
        CHECK(cl_p2p_store_sync(w, 4, 0, 1, "cd", 2, 8, 3) == 0);
        CHECK(!cl_p2p_withdraw(w, 4, 2, 7)); /* another sender */
        CHECK(!cl_p2p_withdraw(w, 5, 3, 7)); /* another communicator */
        CHECK(cl_p2p_withdraw(w, 4, 3, 7));
        CHECK(!cl_p2p_withdraw(w, 4, 3, 7)); /* gone already */
        cl_p2p_msg_t *m = cl_p2p_find(w, 4, 0, 1, true);
        CHECK(m != NULL && m->sync == 8 && m->from == 3 && memcmp(m->data, "cd", 2) == 0);
        cl_p2p_msg_free(m);
        CHECK(cl_p2p_unexpected(w, NULL) == 0);
        CHECK(!cl_p2p_withdraw(w, 4, 3, 8)); /* taken by a receive: matched */
        cl_p2p_destroy(&w);
    }
    cl_p2p_destroy(&q);
    CHECK(q == NULL);
    if (s_failures > 0) {
        fprintf(stderr, "cl_p2p_test: %d failures\n", s_failures);
        return 1;
    }
    printf("cl_p2p_test: ok\n");
    return 0;
}
