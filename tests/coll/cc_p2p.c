/*  cc_p2p.c - point-to-point: Send/Recv, Sendrecv, Isend/Irecv, probes.

    Every message's payload is a function of (sender, receiver), and every
    receive checks the payload and the status (source, tag, count), so a
    message matched to the wrong receive is caught.  Covers blocking and
    nonblocking sends, MPI_ANY_SOURCE, MPI_ANY_TAG, Probe/Iprobe with
    Get_count, Mprobe/Mrecv, Request_free on a send, MPI_PROC_NULL, and
    synchronous mode with Waitsome/Testsome and MPI_Cancel.
*/
#include "coll_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long blk(int from, int to)
{
    return 7000L + (long)from * 1000 + to;
}

static int next_of(cc_ctx_t *c)
{
    return (c->rank + 1) % c->size;
}
static int prev_of(cc_ctx_t *c)
{
    return (c->rank + c->size - 1) % c->size;
}

/* Checks a received message: payload from `src`, status fields. */
static void check_msg(cc_ctx_t *c, const int *buf, int n, const MPI_Status *st, int src, int tag,
                      const char *what)
{
    const cc_type_t *t = cc_type("MPI_INT");
    char msg[320] = "";
    int count = -1;
    MPI_Get_count(st, MPI_INT, &count);
    int ok = 1;
    if (st->MPI_SOURCE != src || st->MPI_TAG != tag || count != n) {
        ok = 0;
        snprintf(msg, sizeof msg, "status source %d tag %d count %d, expected %d %d %d",
                 st->MPI_SOURCE, st->MPI_TAG, count, src, tag, n);
    } else if (cc_verify_move(t, blk(src, c->rank), buf, 0, (size_t)n, msg, sizeof msg)) {
        ok = 0;
    }
    cc_check(c, ok, "%s: %s", what, ok ? "ok" : msg);
}

static int *payload(int from, int to, int n)
{
    int *buf = cc_alloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    cc_fill_move(cc_type("MPI_INT"), blk(from, to), buf, 0, (size_t)n);
    return buf;
}

static void ring_sendrecv(cc_ctx_t *c, int n, int tag)
{
    int to = next_of(c), from = prev_of(c);
    int *out = payload(c->rank, to, n), *in = cc_alloc(sizeof(int) * (size_t)(n + 1));
    MPI_Status st;
    char what[64];
    snprintf(what, sizeof what, "Sendrecv ring of %d ints", n);
    int rc = MPI_Sendrecv(out, n, MPI_INT, to, tag, in, n, MPI_INT, from, tag, MPI_COMM_WORLD, &st);
    if (!cc_call_failed(c, rc, what))
        check_msg(c, in, n, &st, from, tag, what);
    free(out);
    free(in);
}

/* Blocking Send/Recv around the ring, ordered so that it cannot deadlock. */
static void ring_blocking(cc_ctx_t *c, int n)
{
    int to = next_of(c), from = prev_of(c), tag = 11;
    int *out = payload(c->rank, to, n), *in = cc_alloc(sizeof(int) * (size_t)(n + 1));
    MPI_Status st;
    int rc;
    if (c->size == 1) {
        MPI_Request req;
        rc = MPI_Isend(out, n, MPI_INT, to, tag, MPI_COMM_WORLD, &req);
        if (rc == MPI_SUCCESS)
            rc = MPI_Recv(in, n, MPI_INT, from, tag, MPI_COMM_WORLD, &st);
        if (rc == MPI_SUCCESS)
            rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else if (c->rank == 0) {
        rc = MPI_Send(out, n, MPI_INT, to, tag, MPI_COMM_WORLD);
        if (rc == MPI_SUCCESS)
            rc = MPI_Recv(in, n, MPI_INT, from, tag, MPI_COMM_WORLD, &st);
    } else {
        rc = MPI_Recv(in, n, MPI_INT, from, tag, MPI_COMM_WORLD, &st);
        if (rc == MPI_SUCCESS)
            rc = MPI_Send(out, n, MPI_INT, to, tag, MPI_COMM_WORLD);
    }
    char what[64];
    snprintf(what, sizeof what, "Send/Recv ring of %d ints", n);
    if (!cc_call_failed(c, rc, what))
        check_msg(c, in, n, &st, from, tag, what);
    free(out);
    free(in);
}

/* Every rank sends to every rank (itself included) with Isend/Irecv. */
static void all_pairs(cc_ctx_t *c)
{
    int size = c->size, n = 33;
    MPI_Request *reqs = cc_alloc(sizeof(MPI_Request) * 2 * (size_t)size);
    MPI_Status *st = cc_alloc(sizeof(MPI_Status) * 2 * (size_t)size);
    int **in = cc_alloc(sizeof(int *) * (size_t)size),
        **out = cc_alloc(sizeof(int *) * (size_t)size);
    int rc = MPI_SUCCESS;
    for (int r = 0; r < size && rc == MPI_SUCCESS; r++) {
        in[r] = cc_alloc(sizeof(int) * (size_t)n);
        rc = MPI_Irecv(in[r], n, MPI_INT, r, 100 + r, MPI_COMM_WORLD, &reqs[r]);
    }
    for (int r = 0; r < size && rc == MPI_SUCCESS; r++) {
        out[r] = payload(c->rank, r, n);
        rc = MPI_Isend(out[r], n, MPI_INT, r, 100 + c->rank, MPI_COMM_WORLD, &reqs[size + r]);
    }
    if (rc == MPI_SUCCESS)
        rc = MPI_Waitall(2 * size, reqs, st);
    if (!cc_call_failed(c, rc, "Isend/Irecv between all pairs"))
        for (int r = 0; r < size; r++)
            check_msg(c, in[r], n, &st[r], r, 100 + r, "Irecv from each rank");
    for (int r = 0; r < size; r++) {
        free(in[r]);
        free(out[r]);
    }
    free(in);
    free(out);
    free(reqs);
    free(st);
}

/* Rank 0 receives one message from every other rank with MPI_ANY_SOURCE. */
static void any_source(cc_ctx_t *c)
{
    int tag = 7, n = 5;
    if (c->rank != 0) {
        int *out = payload(c->rank, 0, n);
        cc_call_failed(c, MPI_Send(out, n, MPI_INT, 0, tag, MPI_COMM_WORLD), "Send to rank 0");
        free(out);
        return;
    }
    int *seen = cc_alloc(sizeof(int) * (size_t)c->size), in[5];
    for (int k = 1; k < c->size; k++) {
        MPI_Status st;
        int rc = MPI_Recv(in, n, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st);
        if (cc_call_failed(c, rc, "Recv from MPI_ANY_SOURCE"))
            break;
        int src = st.MPI_SOURCE;
        if (!cc_check(c, src > 0 && src < c->size && !seen[src],
                      "MPI_ANY_SOURCE gives a new sender (%d)", src))
            break;
        seen[src] = 1;
        check_msg(c, in, n, &st, src, tag, "Recv from MPI_ANY_SOURCE");
    }
    free(seen);
}

/* Receives with MPI_ANY_TAG: the status tells the sender's tag. */
static void any_tag(cc_ctx_t *c)
{
    int to = next_of(c), from = prev_of(c), n = 3;
    int *out = payload(c->rank, to, n), in[3];
    MPI_Request req;
    MPI_Status st;
    int rc = MPI_Isend(out, n, MPI_INT, to, 200 + c->rank, MPI_COMM_WORLD, &req);
    if (rc == MPI_SUCCESS)
        rc = MPI_Recv(in, n, MPI_INT, from, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (!cc_call_failed(c, rc, "Recv with MPI_ANY_TAG"))
        check_msg(c, in, n, &st, from, 200 + from, "Recv with MPI_ANY_TAG");
    free(out);
}

/* Probe (blocking, then polling Iprobe, then Mprobe) for a message whose
   size the receiver does not know, then receive it. */
static void probes(cc_ctx_t *c, int kind)
{
    static const char *const names[] = {"Probe", "Iprobe", "Mprobe/Mrecv"};
    int to = next_of(c), from = prev_of(c), tag = 300 + kind;
    int n = (c->rank % 4 + 1) * 13 + kind, expect_n = (from % 4 + 1) * 13 + kind;
    int *out = payload(c->rank, to, n);
    MPI_Request req;
    MPI_Status st;
    MPI_Message m = MPI_MESSAGE_NULL;
    int rc = MPI_Isend(out, n, MPI_INT, to, tag, MPI_COMM_WORLD, &req);
    if (rc == MPI_SUCCESS) {
        if (kind == 0) {
            rc = MPI_Probe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st);
        } else if (kind == 1) {
            int flag = 0;
            double t0 = MPI_Wtime();
            while (rc == MPI_SUCCESS && !flag && MPI_Wtime() - t0 < 120) {
                rc = MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &st);
                if (rc == MPI_SUCCESS && !flag)
                    cc_sleep_ms(1);
            }
            if (!flag && rc == MPI_SUCCESS) {
                fprintf(stderr, "coll_check: rank %d: Iprobe found nothing in 120 s\n", c->rank);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        } else {
            rc = MPI_Mprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &m, &st);
        }
    }
    int count = -1;
    if (rc == MPI_SUCCESS)
        MPI_Get_count(&st, MPI_INT, &count);
    if (!cc_call_failed(c, rc, names[kind])) {
        cc_check(c, st.MPI_SOURCE == from && count == expect_n,
                 "%s: source %d count %d (expected %d, %d)", names[kind], st.MPI_SOURCE, count,
                 from, expect_n);
        int len = count > 0 ? count : 1;
        int *in = cc_alloc(sizeof(int) * (size_t)len);
        MPI_Status rst;
        if (kind == 2)
            rc = MPI_Mrecv(in, count, MPI_INT, &m, &rst);
        else
            rc = MPI_Recv(in, count, MPI_INT, st.MPI_SOURCE, tag, MPI_COMM_WORLD, &rst);
        if (!cc_call_failed(c, rc, "receive of the probed message"))
            check_msg(c, in, expect_n, &rst, from, tag, names[kind]);
        free(in);
    }
    if (cc_call_failed(c, MPI_Wait(&req, MPI_STATUS_IGNORE), "Wait for the Isend"))
        MPI_Abort(MPI_COMM_WORLD, 1);
    free(out);
}

/* Isend whose request is freed at once; the message still arrives. */
static void request_free(cc_ctx_t *c)
{
    int to = next_of(c), from = prev_of(c), n = 100, in[100];
    int *out = payload(c->rank, to, n);
    MPI_Request req;
    MPI_Status st;
    int rc = MPI_Isend(out, n, MPI_INT, to, 400, MPI_COMM_WORLD, &req);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Request_free(&req);
        cc_check(c, rc != MPI_SUCCESS || req == MPI_REQUEST_NULL,
                 "Request_free sets MPI_REQUEST_NULL");
    }
    if (rc == MPI_SUCCESS)
        rc = MPI_Recv(in, n, MPI_INT, from, 400, MPI_COMM_WORLD, &st);
    if (!cc_call_failed(c, rc, "Isend + Request_free, then Recv"))
        check_msg(c, in, n, &st, from, 400, "message of a freed Isend");
    /* Once every receiver has its message, the send buffers are free. */
    MPI_Barrier(MPI_COMM_WORLD);
    free(out);
}

static void proc_null(cc_ctx_t *c)
{
    int buf[4] = {1, 2, 3, 4};
    MPI_Status st;
    int count = -1;
    if (!cc_call_failed(c, MPI_Send(buf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD),
                        "Send to MPI_PROC_NULL"))
        cc_check(c, 1, "Send to MPI_PROC_NULL");
    if (!cc_call_failed(c, MPI_Recv(buf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st),
                        "Recv from MPI_PROC_NULL")) {
        MPI_Get_count(&st, MPI_INT, &count);
        cc_check(c, st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && count == 0,
                 "Recv from MPI_PROC_NULL: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG,
                 count);
    }
}

/* Synchronous mode and the request calls around it: an Issend completes
   only once its receive has matched; Waitsome/Testsome report exactly the
   send requests that completed; in --std runs, MPI_Cancel of an unmatched
   Issend (to this rank and to another) lets Wait return with the request
   cancelled. */
static void sync_modes(cc_ctx_t *c)
{
    int to = next_of(c), from = prev_of(c), me = c->rank, n = 10, in[10];
    int *out = payload(me, to, n), *self = payload(me, me, n);
    MPI_Request req, rs[3];
    MPI_Status st, sts[3];
    int flag = -1, rc;
    /* Nobody receives before the barrier, which this rank enters after
       its Test: the Issend cannot be complete then. */
    rc = MPI_Issend(out, n, MPI_INT, to, 500, MPI_COMM_WORLD, &req);
    if (!cc_call_failed(c, rc, "Issend")) {
        MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        cc_check(c, flag == 0, "Issend incomplete before its receive is posted: flag %d", flag);
        MPI_Barrier(MPI_COMM_WORLD);
        rc = MPI_Recv(in, n, MPI_INT, from, 500, MPI_COMM_WORLD, &st);
        if (!cc_call_failed(c, rc, "Recv of an Issend"))
            check_msg(c, in, n, &st, from, 500, "message of an Issend");
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        cc_check(c, rc == MPI_SUCCESS && req == MPI_REQUEST_NULL, "Issend completes once matched");
    }
    /* Three Issends to this rank, one received: exactly that one completes. */
    int idx[3] = {-1, -1, -1}, outc = -1;
    for (int k = 0; k < 3; k++)
        MPI_Issend(self, n, MPI_INT, me, 510 + k, MPI_COMM_WORLD, &rs[k]);
    MPI_Recv(in, n, MPI_INT, me, 511, MPI_COMM_WORLD, &st);
    rc = MPI_Waitsome(3, rs, &outc, idx, sts);
    cc_check(c, rc == MPI_SUCCESS && outc == 1 && idx[0] == 1,
             "Waitsome on 3 Issends to self, 1 received: outcount %d index %d", outc, idx[0]);
    rc = MPI_Testsome(3, rs, &outc, idx, sts);
    cc_check(c, rc == MPI_SUCCESS && outc == 0, "Testsome before the other receives: outcount %d",
             outc);
    MPI_Recv(in, n, MPI_INT, me, 510, MPI_COMM_WORLD, &st);
    MPI_Recv(in, n, MPI_INT, me, 512, MPI_COMM_WORLD, &st);
    int total = 0;
    while (total < 2 && MPI_Waitsome(3, rs, &outc, idx, sts) == MPI_SUCCESS &&
           outc != MPI_UNDEFINED)
        total += outc;
    rc = MPI_Testsome(3, rs, &outc, idx, sts);
    cc_check(c, total == 2 && outc == MPI_UNDEFINED,
             "Waitsome then Testsome on the rest: %d completed, then %s", total,
             outc == MPI_UNDEFINED ? "MPI_UNDEFINED" : "more");
    /* A blocking Waitsome whose message arrives while it waits. */
    MPI_Irecv(in, n, MPI_INT, from, 540, MPI_COMM_WORLD, &rs[0]);
    MPI_Irecv(in, n, MPI_INT, from, 541, MPI_COMM_WORLD, &rs[1]);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Send(out, n, MPI_INT, to, 541, MPI_COMM_WORLD);
    outc = -1;
    rc = MPI_Waitsome(2, rs, &outc, idx, sts);
    cc_check(c, rc == MPI_SUCCESS && outc == 1 && idx[0] == 1,
             "Waitsome on 2 receives, 1 sent: outcount %d index %d", outc, idx[0]);
    MPI_Barrier(MPI_COMM_WORLD); /* the other message leaves after every Waitsome */
    MPI_Send(out, n, MPI_INT, to, 540, MPI_COMM_WORLD);
    MPI_Waitall(2, rs, sts);
    /* Cancel of an Issend to this rank that nobody received (Debian's
       MPICH 4.0.2 does not cancel it, and its Wait never returns: --std). */
    int cancelled = -1;
    if (!c->std)
        goto done;
    rc = MPI_Issend(self, n, MPI_INT, me, 520, MPI_COMM_WORLD, &req);
    if (rc == MPI_SUCCESS)
        rc = MPI_Cancel(&req);
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&req, &st);
    if (!cc_call_failed(c, rc, "Issend to self, Cancel, Wait")) {
        MPI_Test_cancelled(&st, &cancelled);
        if (!cancelled)
            MPI_Recv(in, n, MPI_INT, me, 520, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        cc_check(c, cancelled == 1, "Cancel of an unmatched Issend to self: cancelled %d",
                 cancelled);
    }
    if (c->size > 1) {
        /* To another rank, which posts nothing for it: cancelled, and the
           message is gone from its queue. */
        cancelled = -1;
        rc = MPI_Issend(out, n, MPI_INT, to, 530, MPI_COMM_WORLD, &req);
        if (rc == MPI_SUCCESS)
            rc = MPI_Cancel(&req);
        if (rc == MPI_SUCCESS)
            rc = MPI_Wait(&req, &st);
        if (!cc_call_failed(c, rc, "Issend, Cancel, Wait")) {
            MPI_Test_cancelled(&st, &cancelled);
            cc_check(c, cancelled == 1, "Cancel of an unmatched Issend: cancelled %d", cancelled);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        flag = -1;
        MPI_Iprobe(from, 530, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        cc_check(c, flag == 0, "a cancelled Issend's message is withdrawn: Iprobe flag %d", flag);
        if (flag)
            MPI_Recv(in, n, MPI_INT, from, 530, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
done:
    MPI_Barrier(MPI_COMM_WORLD);
    free(out);
    free(self);
}

void cc_run_p2p(cc_ctx_t *c)
{
    cc_group_begin(c, "p2p");
    static const int ns[] = {0, 1, 1000, 65537};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        if (ns[k] > 1000 && c->quick)
            continue;
        ring_sendrecv(c, ns[k], 20 + (int)k);
        ring_blocking(c, ns[k]);
    }
    all_pairs(c);
    any_source(c);
    any_tag(c);
    for (int kind = 0; kind < 3; kind++)
        probes(c, kind);
    request_free(c);
    proc_null(c);
    sync_modes(c);
    cc_group_end(c);
}
