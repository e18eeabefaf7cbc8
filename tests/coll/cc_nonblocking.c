/*  cc_nonblocking.c - Iallreduce, Ibcast, Ibarrier and the completion calls.

    "nonblocking" checks each I-form on its own (results as for the
    blocking forms; an Ibarrier cannot complete before the last rank has
    entered it).  "requests" keeps several operations in flight at once
    and completes them with MPI_Waitall, MPI_Waitany, MPI_Test and
    MPI_Testall, in orders other than the order of issue, and checks the
    empty-request rules (MPI_REQUEST_NULL).
*/
#include "coll_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLL_MS 1
#define POLL_DEADLINE_S 120.0

/* An operation that never completes leaves the ranks' collective streams
   out of step: nothing meaningful can follow, so end the run. */
static void give_up(cc_ctx_t *c)
{
    fprintf(stderr, "coll_check: rank %d: %s: an operation did not start or complete; aborting\n",
            c->rank, c->group);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* MPI_STATUSES_IGNORE, hidden from the compiler: MPICH defines it as
   (MPI_Status *)1, which GCC's array-bounds analysis rejects. */
static MPI_Status *statuses_ignore(void)
{
    MPI_Status *volatile p = MPI_STATUSES_IGNORE;
    return p;
}

/* An Iallreduce in flight, with what is needed to check it. */
typedef struct {
    const cc_type_t *t;
    cc_op_t op;
    size_t count;
    unsigned char *in, *out;
} pending_t;

static int start_iallreduce(cc_ctx_t *c, pending_t *p, const char *type, cc_op_t op, size_t count,
                            MPI_Request *req)
{
    p->t = cc_type(type);
    p->op = op;
    p->count = count;
    p->in = cc_alloc(count * p->t->extent);
    p->out = cc_alloc((count + 1) * p->t->extent);
    cc_fill_reduce(p->t, op, c->rank, p->in, count);
    cc_poison(p->out, (count + 1) * p->t->extent);
    char what[128];
    snprintf(what, sizeof what, "Iallreduce %s %s count %zu", type, cc_op_name(op), count);
    int rc =
        MPI_Iallreduce(p->in, p->out, (int)count, p->t->dt, cc_op_handle(op), MPI_COMM_WORLD, req);
    return !cc_call_failed(c, rc, what);
}

/* Checks and frees a completed pending operation; counts one check. */
static void finish_iallreduce(cc_ctx_t *c, pending_t *p, const char *how)
{
    char msg[320] = "";
    size_t ext = p->t->extent;
    int ok = cc_verify_reduce(p->t, p->op, c->size, p->out, 0, p->count, msg, sizeof msg) == 0;
    if (ok && !cc_poison_intact(p->out + p->count * ext, ext)) {
        ok = 0;
        snprintf(msg, sizeof msg, "wrote past the end of the result");
    }
    cc_check(c, ok, "Iallreduce %s %s count %zu completed by %s: %s", p->t->name, cc_op_name(p->op),
             p->count, how, ok ? "ok" : msg);
    free(p->in);
    free(p->out);
    memset(p, 0, sizeof *p);
}

/* ---------------------------------------------------------------------- */

static void ibcast_case(cc_ctx_t *c, const cc_type_t *t, size_t n, int root)
{
    size_t ext = t->extent;
    unsigned char *buf = cc_alloc((n + 1) * ext);
    char what[128], msg[320] = "";
    snprintf(what, sizeof what, "Ibcast root %d %s count %zu", root, t->name, n);
    cc_poison(buf, (n + 1) * ext);
    if (c->rank == root)
        cc_fill_move(t, root, buf, 0, n);
    MPI_Request req;
    int rc = MPI_Ibcast(buf, (int)n, t->dt, root, MPI_COMM_WORLD, &req);
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (!cc_call_failed(c, rc, what)) {
        int ok = cc_verify_move(t, root, buf, 0, n, msg, sizeof msg) == 0;
        if (ok && !cc_poison_intact(buf + n * ext, ext)) {
            ok = 0;
            snprintf(msg, sizeof msg, "wrote past the end of the buffer");
        }
        cc_check(c, ok, "%s: %s", what, ok ? "ok" : msg);
    }
    free(buf);
}

static void ibarrier_case(cc_ctx_t *c, int late)
{
    const int delay_ms = 150;
    MPI_Request req;
    int flag = 0;
    if (c->rank == late)
        cc_sleep_ms(delay_ms);
    double t0 = MPI_Wtime();
    int rc = MPI_Ibarrier(MPI_COMM_WORLD, &req);
    if (rc == MPI_SUCCESS)
        rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    int early = flag;
    if (rc == MPI_SUCCESS && !flag)
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    double waited = MPI_Wtime() - t0;
    if (cc_call_failed(c, rc, "Ibarrier"))
        return;
    int ok = c->rank == late || c->size == 1 || (!early && waited >= delay_ms / 3 / 1000.0);
    cc_check(c, ok, "Ibarrier with rank %d late by %d ms: %s, waited %.0f ms", late, delay_ms,
             early ? "complete at once" : "pending at first", waited * 1000);
}

void cc_run_nonblocking(cc_ctx_t *c)
{
    static const struct {
        const char *type;
        cc_op_t op;
    } pairs[] = {
        {"MPI_INT", CC_OP_SUM},     {"MPI_FLOAT", CC_OP_SUM},   {"MPI_DOUBLE", CC_OP_MAX},
        {"MPI_2INT", CC_OP_MAXLOC}, {"MPI_C_BOOL", CC_OP_LAND}, {"MPI_UINT64_T", CC_OP_BOR},
    };
    static const size_t counts[] = {0, 1, 7, 1000};
    static const char *const btypes[] = {"MPI_BYTE", "MPI_INT", "MPI_DOUBLE_INT"};

    cc_group_begin(c, "nonblocking");
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
        const cc_type_t *t = cc_type(pairs[k].type);
        for (size_t n = 0; n < sizeof counts / sizeof counts[0]; n++)
            cc_reduce_case(c, MPI_COMM_WORLD, t, pairs[k].op, counts[n], -1, 0, 1);
        cc_reduce_case(c, MPI_COMM_WORLD, t, pairs[k].op, 7, -1, 1, 1);
    }
    if (!c->quick)
        cc_reduce_case(c, MPI_COMM_WORLD, cc_type("MPI_FLOAT"), CC_OP_SUM, 65537, -1, 1, 1);
    for (int root = 0; root < c->size; root++)
        for (size_t k = 0; k < sizeof btypes / sizeof btypes[0]; k++)
            for (size_t n = 0; n < sizeof counts / sizeof counts[0]; n++)
                ibcast_case(c, cc_type(btypes[k]), counts[n], root);
    if (!c->quick)
        ibcast_case(c, cc_type("MPI_BYTE"), 65537, c->size - 1);
    ibarrier_case(c, 0);
    ibarrier_case(c, c->size - 1);
    cc_group_end(c);
}

/* ---------------------------------------------------------------------- */

static void check_empty_status(cc_ctx_t *c, const MPI_Status *st, const char *what)
{
    int count = -1;
    MPI_Get_count(st, MPI_BYTE, &count);
    cc_check(c, st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && count == 0,
             "%s: empty status (source %d, tag %d, count %d)", what, st->MPI_SOURCE, st->MPI_TAG,
             count);
}

static void null_requests(cc_ctx_t *c)
{
    MPI_Request req = MPI_REQUEST_NULL,
                reqs[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status st;
    int flag = 0, index = 0;
    if (!cc_call_failed(c, MPI_Wait(&req, &st), "Wait on MPI_REQUEST_NULL"))
        check_empty_status(c, &st, "Wait on MPI_REQUEST_NULL");
    flag = 0;
    if (!cc_call_failed(c, MPI_Test(&req, &flag, &st), "Test on MPI_REQUEST_NULL")) {
        cc_check(c, flag == 1, "Test on MPI_REQUEST_NULL sets flag (%d)", flag);
        check_empty_status(c, &st, "Test on MPI_REQUEST_NULL");
    }
    if (!cc_call_failed(c, MPI_Waitall(3, reqs, statuses_ignore()), "Waitall on nulls"))
        cc_check(c, 1, "Waitall on MPI_REQUEST_NULLs");
    if (!cc_call_failed(c, MPI_Waitany(3, reqs, &index, &st), "Waitany on nulls"))
        cc_check(c, index == MPI_UNDEFINED, "Waitany on nulls gives MPI_UNDEFINED (%d)", index);
    flag = 0;
    if (!cc_call_failed(c, MPI_Testall(3, reqs, &flag, statuses_ignore()), "Testall on nulls"))
        cc_check(c, flag == 1, "Testall on MPI_REQUEST_NULLs sets flag (%d)", flag);
}

/* Several operations in flight, completed together by MPI_Waitall. */
static void waitall_mix(cc_ctx_t *c)
{
    pending_t p[4];
    MPI_Request reqs[6];
    MPI_Status st[6];
    memset(p, 0, sizeof p);
    int n = 0, ok = 1;
    ok &= start_iallreduce(c, &p[0], "MPI_INT", CC_OP_SUM, 1000, &reqs[n++]);
    ok &= start_iallreduce(c, &p[1], "MPI_FLOAT", CC_OP_SUM, 7, &reqs[n++]);
    ok &= start_iallreduce(c, &p[2], "MPI_DOUBLE", CC_OP_MIN, 1, &reqs[n++]);
    ok &= start_iallreduce(c, &p[3], "MPI_UINT8_T", CC_OP_BXOR, 4099, &reqs[n++]);
    const cc_type_t *bt = cc_type("MPI_INT");
    int *bbuf = cc_alloc(100 * sizeof(int));
    int root = c->size - 1;
    if (c->rank == root)
        cc_fill_move(bt, root, bbuf, 0, 100);
    ok &= !cc_call_failed(c, MPI_Ibcast(bbuf, 100, MPI_INT, root, MPI_COMM_WORLD, &reqs[n++]),
                          "Ibcast");
    ok &= !cc_call_failed(c, MPI_Ibarrier(MPI_COMM_WORLD, &reqs[n++]), "Ibarrier");
    if (!ok)
        give_up(c);
    if (!cc_call_failed(c, MPI_Waitall(n, reqs, st), "Waitall of 6 operations")) {
        int nulls = 1;
        for (int k = 0; k < n; k++)
            nulls &= reqs[k] == MPI_REQUEST_NULL;
        cc_check(c, nulls, "Waitall sets every request to MPI_REQUEST_NULL");
        for (int k = 0; k < 4; k++)
            finish_iallreduce(c, &p[k], "Waitall");
        char msg[320] = "";
        int bok = cc_verify_move(bt, root, bbuf, 0, 100, msg, sizeof msg) == 0;
        cc_check(c, bok, "Ibcast completed by Waitall: %s", bok ? "ok" : msg);
    }
    free(bbuf);
}

/* Completes 5 Iallreduces with MPI_Waitany: each index comes back once. */
static void waitany_loop(cc_ctx_t *c)
{
    enum { N = 5 };
    pending_t p[N];
    MPI_Request reqs[N];
    int seen[N] = {0};
    memset(p, 0, sizeof p);
    static const char *const types[N] = {"MPI_INT", "MPI_DOUBLE", "MPI_SHORT", "MPI_FLOAT",
                                         "MPI_INT64_T"};
    for (int k = 0; k < N; k++)
        if (!start_iallreduce(c, &p[k], types[k], CC_OP_SUM, (size_t)(1 + 300 * k), &reqs[k]))
            give_up(c);
    int done = 0, ok = 1;
    for (int iter = 0; iter <= N; iter++) {
        int index = -1;
        MPI_Status st;
        if (cc_call_failed(c, MPI_Waitany(N, reqs, &index, &st), "Waitany")) {
            ok = 0;
            break;
        }
        if (index == MPI_UNDEFINED)
            break;
        if (index < 0 || index >= N || seen[index]) {
            ok = 0;
            break;
        }
        seen[index] = 1;
        done++;
        finish_iallreduce(c, &p[index], "Waitany");
    }
    cc_check(c, ok && done == N, "Waitany returned each of %d requests once (%d)", N, done);
    for (int k = 0; k < N; k++)
        if (p[k].in != NULL) {
            free(p[k].in);
            free(p[k].out);
        }
}

/* Polls with MPI_Test (sleeping between polls) until completion. */
static void test_loop(cc_ctx_t *c)
{
    pending_t p;
    MPI_Request req;
    memset(&p, 0, sizeof p);
    if (!start_iallreduce(c, &p, "MPI_FLOAT", CC_OP_SUM, 1000, &req))
        give_up(c);
    int flag = 0, rc = MPI_SUCCESS;
    double t0 = MPI_Wtime();
    while (!flag && MPI_Wtime() - t0 < POLL_DEADLINE_S) {
        rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            break;
        if (!flag)
            cc_sleep_ms(POLL_MS);
    }
    if (cc_call_failed(c, rc, "Test"))
        return;
    if (!cc_check(c, flag, "Test loop completed the Iallreduce within %.0f s", POLL_DEADLINE_S))
        give_up(c);
    cc_check(c, req == MPI_REQUEST_NULL, "Test sets a completed request to MPI_REQUEST_NULL");
    finish_iallreduce(c, &p, "Test");
}

/* Polls three operations with MPI_Testall. */
static void testall_loop(cc_ctx_t *c)
{
    pending_t p[3];
    MPI_Request reqs[3];
    memset(p, 0, sizeof p);
    if (!start_iallreduce(c, &p[0], "MPI_INT", CC_OP_MAX, 17, &reqs[0]) ||
        !start_iallreduce(c, &p[1], "MPI_DOUBLE_INT", CC_OP_MINLOC, 33, &reqs[1]) ||
        !start_iallreduce(c, &p[2], "MPI_C_BOOL", CC_OP_LXOR, 65, &reqs[2]))
        give_up(c);
    int flag = 0, rc = MPI_SUCCESS;
    double t0 = MPI_Wtime();
    while (!flag && MPI_Wtime() - t0 < POLL_DEADLINE_S) {
        rc = MPI_Testall(3, reqs, &flag, statuses_ignore());
        if (rc != MPI_SUCCESS)
            break;
        if (!flag)
            cc_sleep_ms(POLL_MS);
    }
    if (cc_call_failed(c, rc, "Testall"))
        return;
    if (!cc_check(c, flag, "Testall completed 3 Iallreduces within %.0f s", POLL_DEADLINE_S))
        give_up(c);
    for (int k = 0; k < 3; k++)
        finish_iallreduce(c, &p[k], "Testall");
}

/* Two operations in flight, waited for in reverse order of issue. */
static void reverse_wait(cc_ctx_t *c)
{
    pending_t a, b;
    MPI_Request ra, rb;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    if (!start_iallreduce(c, &a, "MPI_LONG", CC_OP_SUM, 2000, &ra) ||
        !start_iallreduce(c, &b, "MPI_FLOAT", CC_OP_MAX, 3, &rb))
        give_up(c);
    if (!cc_call_failed(c, MPI_Wait(&rb, MPI_STATUS_IGNORE), "Wait (second issued)"))
        finish_iallreduce(c, &b, "Wait before the earlier one");
    if (!cc_call_failed(c, MPI_Wait(&ra, MPI_STATUS_IGNORE), "Wait (first issued)"))
        finish_iallreduce(c, &a, "Wait after the later one");
}

/* A sliding window of nonblocking collectives of different kinds (as
   MPICH's nonblocking3 keeps one): a new one starts as soon as any
   completes, and the last rank falls behind now and then, so the others
   send data for collectives it has not started yet, and completing one of
   those at its start runs the next. */
enum { BURST_WINDOW = 12, BURST_OPS = 240, BURST_N = 16 };

typedef struct {
    int op, kind, root;
    int in[BURST_N], out[BURST_N];
    int blocks[64 * BURST_N]; /* a scatter root's send buffer (at most 64 ranks) */
} burst_slot_t;

static void burst_start(cc_ctx_t *c, MPI_Comm comm, burst_slot_t *b, int op, MPI_Request *req)
{
    b->op = op;
    b->kind = op % 5 == 4 && c->size > 64 ? 3 : op % 5; /* scatters: up to 64 ranks */
    b->root = op % c->size;
    for (int i = 0; i < BURST_N; i++) {
        b->in[i] = (c->rank + 1) * (op % 97 + 1) + i;
        b->out[i] = -1;
    }
    if (c->rank == c->size - 1 && c->size > 1 && op % 16 == 0)
        cc_sleep_ms(5);
    switch (b->kind) {
    case 0:
        MPI_Iallreduce(b->in, b->out, BURST_N, MPI_INT, MPI_SUM, comm, req);
        break;
    case 1:
        if (c->rank == b->root)
            memcpy(b->out, b->in, sizeof b->in);
        MPI_Ibcast(b->out, BURST_N, MPI_INT, b->root, comm, req);
        break;
    case 2:
        MPI_Ireduce(b->in, b->out, BURST_N, MPI_INT, MPI_SUM, b->root, comm, req);
        break;
    case 3:
        MPI_Ibarrier(comm, req);
        break;
    default: { /* each rank gets the root's block i (its in[] repeated) */
        if (c->rank == b->root)
            for (int r = 0; r < c->size; r++)
                memcpy(b->blocks + r * BURST_N, b->in, sizeof b->in);
        MPI_Iscatter(b->blocks, BURST_N, MPI_INT, b->out, BURST_N, MPI_INT, b->root, comm, req);
        break;
    }
    }
}

static int burst_check(cc_ctx_t *c, const burst_slot_t *b)
{
    long ranks = (long)c->size * (c->size + 1) / 2;
    for (int i = 0; i < BURST_N; i++) {
        long sum = ranks * (b->op % 97 + 1) + (long)c->size * i, want = -1;
        if (b->kind == 0 || (b->kind == 2 && c->rank == b->root))
            want = sum;
        else if (b->kind == 1 || b->kind == 4)
            want = (long)(b->root + 1) * (b->op % 97 + 1) + i;
        if (b->out[i] != want)
            return cc_check(c, 0, "window: op %d (kind %d, root %d) element %d: %d, expected %ld",
                            b->op, b->kind, b->root, i, b->out[i], want);
    }
    return 1;
}

static void burst(cc_ctx_t *c)
{
    burst_slot_t *slots = calloc(BURST_WINDOW, sizeof *slots);
    MPI_Request reqs[BURST_WINDOW];
    if (slots == NULL) {
        cc_check(c, 0, "window: out of memory");
        return;
    }
    MPI_Comm comms[3] = {MPI_COMM_WORLD, MPI_COMM_NULL, MPI_COMM_NULL};
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[2]);
    int posted = 0, done = 0, ok = 1;
    for (; posted < BURST_WINDOW; posted++)
        burst_start(c, comms[posted % 3], &slots[posted], posted, &reqs[posted]);
    while (done < BURST_OPS && ok) {
        int idx = MPI_UNDEFINED;
        if (cc_call_failed(c, MPI_Waitany(BURST_WINDOW, reqs, &idx, MPI_STATUS_IGNORE),
                           "window: Waitany") ||
            idx == MPI_UNDEFINED)
            give_up(c);
        ok = burst_check(c, &slots[idx]);
        done++;
        if (posted < BURST_OPS) {
            burst_start(c, comms[posted % 3], &slots[idx], posted, &reqs[idx]);
            posted++;
        }
    }
    if (ok)
        cc_check(c, 1, "window of %d nonblocking collectives, %d in all", BURST_WINDOW, BURST_OPS);
    else
        give_up(c); /* the ranks' streams are out of step now */
    MPI_Comm_free(&comms[1]);
    MPI_Comm_free(&comms[2]);
    free(slots);
}

void cc_run_requests(cc_ctx_t *c)
{
    cc_group_begin(c, "requests");
    null_requests(c);
    waitall_mix(c);
    waitany_loop(c);
    test_loop(c);
    testall_loop(c);
    reverse_wait(c);
    burst(c);
    cc_group_end(c);
}
