/*  cl_api_test.c - selftest of the collab_* API on a single peer.

    One process founds a swarm of nominal size 2 and, after matchmaking
    finds nobody else, runs every collective as a group of one (SUM gives
    size x own value), point-to-point to itself (matching order, wildcards,
    probe/mprobe, truncation, cancel), nonblocking requests, communicator
    dup/split/free, errors for bad arguments and absent ranks, and a clean
    finalize.  A bad configuration is refused first with COLLAB_ERR_CONFIG.
*/
#include "mpi_collab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "selftest.h"

static const collab_op_t SUM = {COLLAB_OP_SUM, NULL, NULL, 1};
static const collab_op_t MAX = {COLLAB_OP_MAX, NULL, NULL, 1};

static void test_collectives(collab_comm_t *w)
{
    /* Group of one in a world of 2: SUM is size x own value. */
    double x[3] = {1.5, -2.0, 0.25}, y[3] = {0};
    CHECK(collab_allreduce(w, x, y, 3, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    CHECK(y[0] == 3.0 && y[1] == -4.0 && y[2] == 0.5);
    collab_info_t info;
    CHECK(collab_last_info(&info) == COLLAB_OK);
    CHECK(info.group_size == 1 && info.world_size == 2 && info.nranks == 1 && info.ranks[0] == 0);
    CHECK(info.sequence == 0);
    int v[2] = {7, -3}, m[2] = {0};
    CHECK(collab_allreduce(w, v, m, 2, COLLAB_INT32, &MAX, NULL) == COLLAB_OK);
    CHECK(m[0] == 7 && m[1] == -3);
    CHECK(collab_last_info(&info) == COLLAB_OK && info.sequence == 1);
    /* In place. */
    CHECK(collab_allreduce(w, NULL, x, 3, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    CHECK(x[0] == 3.0);
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    char buf[16] = "hello";
    CHECK(collab_bcast(w, buf, sizeof buf, 0, NULL) == COLLAB_OK);
    CHECK(strcmp(buf, "hello") == 0);
    /* Root absent: rank 1 is not here. */
    CHECK(collab_bcast(w, buf, sizeof buf, 1, NULL) == COLLAB_OK);

    /* Gather-type: the absent rank's slot is zero-filled. */
    int mine = 42, all[2] = {-1, -1};
    size_t counts[2] = {sizeof(int), sizeof(int)}, displs[2] = {0, sizeof(int)};
    CHECK(collab_allgatherv(w, &mine, sizeof mine, all, counts, displs, NULL) == COLLAB_OK);
    CHECK(all[0] == 42 && all[1] == 0);
    int g[2] = {-1, -1};
    CHECK(collab_gatherv(w, &mine, sizeof mine, g, counts, displs, 0, NULL) == COLLAB_OK);
    CHECK(g[0] == 42 && g[1] == 0);
    int sc[2] = {5, 6}, r = 0;
    CHECK(collab_scatterv(w, sc, counts, displs, &r, sizeof r, 0, NULL) == COLLAB_OK);
    CHECK(r == 5);
    int a2a_in[2] = {1, 2}, a2a_out[2] = {-1, -1};
    CHECK(collab_alltoall(w, a2a_in, a2a_out, sizeof(int), NULL) == COLLAB_OK);
    CHECK(a2a_out[0] == 1 && a2a_out[1] == 0);
    double rs_in[2] = {1.0, 2.0}, rs_out = 0;
    CHECK(collab_reduce_scatter_block(w, rs_in, &rs_out, 1, COLLAB_DOUBLE, &SUM, NULL) ==
          COLLAB_OK);
    CHECK(rs_out == 2.0);
    double red = 0;
    CHECK(collab_reduce(w, &rs_in[1], &red, 1, COLLAB_DOUBLE, &SUM, 0, NULL) == COLLAB_OK);
    CHECK(red == 4.0);

    /* Nonblocking: two outstanding on one communicator, waited out of order. */
    double a = 1, b = 2, ra = 0, rb = 0;
    collab_request_t *q1 = NULL, *q2 = NULL;
    CHECK(collab_allreduce(w, &a, &ra, 1, COLLAB_DOUBLE, &SUM, &q1) == COLLAB_OK);
    CHECK(collab_allreduce(w, &b, &rb, 1, COLLAB_DOUBLE, &SUM, &q2) == COLLAB_OK);
    CHECK(q1 != NULL && q2 != NULL);
    CHECK(collab_wait(&q2, NULL) == COLLAB_OK && q2 == NULL);
    int flag = 0;
    while (!flag)
        CHECK(collab_test(&q1, &flag, NULL) == COLLAB_OK);
    CHECK(q1 == NULL && ra == 2.0 && rb == 4.0);

    /* Self communicator: plain values. */
    collab_comm_t *self = collab_comm_self();
    CHECK(collab_comm_size(self) == 1 && collab_comm_rank(self) == 0);
    double s = 2.5, so = 0;
    CHECK(collab_allreduce(self, &s, &so, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    CHECK(so == 2.5);

    /* Bad arguments. */
    collab_op_t bad = {COLLAB_OP_BAND, NULL, NULL, 1};
    CHECK(collab_allreduce(w, x, y, 3, COLLAB_DOUBLE, &bad, NULL) == COLLAB_ERR_OP);
    CHECK(collab_allreduce(w, x, y, 3, COLLAB_DTYPE_COUNT, &SUM, NULL) == COLLAB_ERR_TYPE);
    CHECK(collab_allreduce(NULL, x, y, 3, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_ERR_COMM);
    CHECK(collab_allreduce(w, x, NULL, 3, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_ERR_ARG);
    CHECK(collab_bcast(w, buf, 1, 2, NULL) == COLLAB_ERR_ROOT);
    CHECK(collab_bcast(w, buf, 1, -1, NULL) == COLLAB_ERR_ROOT);
    CHECK(collab_allreduce(w, x, y, SIZE_MAX / 2, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_ERR_COUNT);
}

static void test_p2p(collab_comm_t *w)
{
    /* To itself: order, wildcards, status. */
    int a = 1, b = 2, c = 3, got = 0;
    CHECK(collab_send(w, &a, sizeof a, 0, 5, NULL) == COLLAB_OK);
    CHECK(collab_send(w, &b, sizeof b, 0, 6, NULL) == COLLAB_OK);
    CHECK(collab_send(w, &c, sizeof c, 0, 5, NULL) == COLLAB_OK);
    collab_status_info_t st;
    CHECK(collab_recv(w, &got, sizeof got, 0, 6, &st, NULL) == COLLAB_OK);
    CHECK(got == 2 && st.source == 0 && st.tag == 6 && st.bytes == sizeof(int));
    CHECK(collab_recv(w, &got, sizeof got, COLLAB_ANY_SOURCE, COLLAB_ANY_TAG, &st, NULL) ==
          COLLAB_OK);
    CHECK(got == 1 && st.tag == 5);
    /* Probe, then mprobe + mrecv. */
    int flag = 0;
    CHECK(collab_probe(w, COLLAB_ANY_SOURCE, 5, 0, &flag, &st, NULL) == COLLAB_OK);
    CHECK(flag == 1 && st.bytes == sizeof(int));
    collab_message_t *msg = NULL;
    CHECK(collab_probe(w, 0, COLLAB_ANY_TAG, 1, &flag, &st, &msg) == COLLAB_OK);
    CHECK(flag == 1 && msg != NULL);
    CHECK(collab_mrecv(&msg, &got, sizeof got, &st) == COLLAB_OK && got == 3 && msg == NULL);
    CHECK(collab_probe(w, 0, COLLAB_ANY_TAG, 0, &flag, &st, NULL) == COLLAB_OK && flag == 0);
    /* A receive posted before the send. */
    collab_request_t *rq = NULL;
    CHECK(collab_recv(w, &got, sizeof got, 0, 9, NULL, &rq) == COLLAB_OK);
    CHECK(collab_send(w, &b, sizeof b, 0, 9, NULL) == COLLAB_OK);
    CHECK(collab_wait(&rq, &st) == COLLAB_OK && got == 2 && st.tag == 9);
    /* Truncation. */
    double big = 1.0;
    char small;
    CHECK(collab_send(w, &big, sizeof big, 0, 1, NULL) == COLLAB_OK);
    CHECK(collab_recv(w, &small, 1, 0, 1, &st, NULL) == COLLAB_ERR_TRUNCATE);
    /* Cancel a pending receive. */
    CHECK(collab_recv(w, &got, sizeof got, 0, 77, NULL, &rq) == COLLAB_OK);
    CHECK(collab_cancel(rq) == COLLAB_OK);
    CHECK(collab_wait(&rq, &st) == COLLAB_OK && st.cancelled == 1);
    /* Rank 1 never joined: after the start-up grace it counts as absent. */
    CHECK(collab_send(w, &a, sizeof a, 1, 0, NULL) == COLLAB_ERR_PROC_FAILED);
    CHECK(collab_recv(w, &got, sizeof got, 1, 0, &st, NULL) == COLLAB_ERR_PROC_FAILED);
    /* Bad arguments. */
    CHECK(collab_send(w, &a, sizeof a, 2, 0, NULL) == COLLAB_ERR_RANK);
    CHECK(collab_send(w, &a, sizeof a, 0, -5, NULL) == COLLAB_ERR_TAG);
    CHECK(collab_send(w, NULL, 4, 0, 0, NULL) == COLLAB_ERR_ARG);
    /* wait_any over NULL entries. */
    collab_request_t *none[2] = {NULL, NULL};
    int idx = 7;
    CHECK(collab_wait_any(none, 2, &idx) == COLLAB_OK && idx == -1);
}

static void test_comms(collab_comm_t *w)
{
    collab_comm_t *d = NULL, *s = NULL, *u = (collab_comm_t *)1;
    CHECK(collab_comm_dup(w, &d) == COLLAB_OK && d != NULL);
    CHECK(collab_comm_size(d) == 2 && collab_comm_rank(d) == 0);
    CHECK(collab_comm_id(d) != collab_comm_id(w));
    collab_comm_t *d2 = NULL;
    CHECK(collab_comm_dup(w, &d2) == COLLAB_OK);
    CHECK(collab_comm_id(d2) != collab_comm_id(d));
    /* Messages on one communicator do not match receives on another. */
    int v = 9, got = 0, flag = 1;
    collab_status_info_t st;
    CHECK(collab_send(d, &v, sizeof v, 0, 3, NULL) == COLLAB_OK);
    CHECK(collab_probe(w, 0, 3, 0, &flag, &st, NULL) == COLLAB_OK && flag == 0);
    CHECK(collab_recv(d, &got, sizeof got, 0, 3, &st, NULL) == COLLAB_OK && got == 9);
    double x = 1, y = 0;
    CHECK(collab_allreduce(d, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK && y == 2.0);
    CHECK(collab_comm_split(w, 3, 0, &s) == COLLAB_OK && s != NULL);
    CHECK(collab_comm_size(s) == 1 && collab_comm_rank(s) == 0);
    CHECK(collab_comm_world_rank_of(s, 0) == 0 && collab_comm_world_rank_of(s, 1) == -1);
    CHECK(collab_allreduce(s, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK && y == 1.0);
    CHECK(collab_comm_split(w, -1, 0, &u) == COLLAB_OK && u == NULL);
    /* Communicators over a group: local, a new id each time, members only. */
    int me = collab_comm_rank(w), bad[2] = {me, me};
    collab_comm_t *g1 = NULL, *g2 = NULL, *g3 = NULL;
    CHECK(collab_comm_create_group(w, &me, 1, 7, &g1) == COLLAB_OK && g1 != NULL);
    CHECK(collab_comm_create_group(w, &me, 1, 7, &g2) == COLLAB_OK && g2 != NULL);
    CHECK(collab_comm_size(g1) == 1 && collab_comm_rank(g1) == 0);
    CHECK(collab_comm_id(g1) != collab_comm_id(g2) && collab_comm_id(g1) != collab_comm_id(w));
    CHECK(collab_comm_create_group(w, bad, 2, 7, &g3) == COLLAB_ERR_ARG && g3 == NULL);
    int other = 1 - me;
    CHECK(collab_comm_create_group(w, &other, 1, 7, &g3) == COLLAB_ERR_ARG && g3 == NULL);
    CHECK(collab_allreduce(g1, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK && y == 1.0);
    CHECK(collab_comm_free(&g1) == COLLAB_OK);
    CHECK(collab_comm_free(&g2) == COLLAB_OK);
    CHECK(collab_comm_free(&d) == COLLAB_OK && d == NULL);
    CHECK(collab_comm_free(&d2) == COLLAB_OK);
    CHECK(collab_comm_free(&s) == COLLAB_OK);
    collab_comm_t *wc = w;
    CHECK(collab_comm_free(&wc) == COLLAB_ERR_COMM && wc == w);
}

int main(void)
{
    /* A bad value is refused with one line and COLLAB_ERR_CONFIG. */
    setenv("COLLAB_TIMEOUT", "soon", 1);
    CHECK(collab_init(NULL) == COLLAB_ERR_CONFIG);
    CHECK(!collab_initialized());
    setenv("COLLAB_TIMEOUT", "1", 1);
    setenv("COLLAB_WORLD_SIZE", "2", 1);
    setenv("COLLAB_MATCHMAKING_TIME", "0.2", 1);
    setenv("COLLAB_LISTEN", "/ip4/127.0.0.1/tcp/0", 1);
    setenv("COLLAB_RUN_ID", "cl_api_test", 1);
    collab_init_args_t args = {3, "test"};
    int rc = collab_init(&args);
    CHECK(rc == COLLAB_OK);
    if (rc != COLLAB_OK)
        return 1;
    CHECK(collab_initialized() && !collab_finalized());
    CHECK(collab_world_size() == 2 && collab_world_rank() == 0);
    collab_comm_t *w = collab_comm_world();
    CHECK(w != NULL && collab_comm_size(w) == 2 && collab_comm_rank(w) == 0);
    CHECK(collab_init(&args) != COLLAB_OK); /* twice */
    double t0 = collab_wtime();
    CHECK(collab_wtick() > 0 && collab_wtick() < 0.01);
    char host[64];
    CHECK(collab_processor_name(host, sizeof host) == COLLAB_OK && host[0] != '\0');
    test_collectives(w);
    test_p2p(w);
    test_comms(w);
    CHECK(collab_set_weight(2.0) == COLLAB_OK);
    CHECK(collab_set_weight(-1.0) == COLLAB_ERR_ARG);
    CHECK(collab_set_weight(2e9) == COLLAB_ERR_ARG); /* above COLLAB_WEIGHT's bound */
    CHECK(collab_step() == COLLAB_OK);
    CHECK(collab_wtime() >= t0);
    CHECK(collab_finalize() == COLLAB_OK);
    CHECK(collab_finalized());
    CHECK(collab_finalize() == COLLAB_ERR_NOT_INIT);
    CHECK(collab_barrier(w, NULL) == COLLAB_ERR_NOT_INIT);
    if (s_failures > 0) {
        fprintf(stderr, "cl_api_test: %d failures\n", s_failures);
        return 1;
    }
    printf("cl_api_test: ok\n");
    return 0;
}
