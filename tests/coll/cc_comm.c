/*  cc_comm.c - communicators: MPI_Comm_dup, MPI_Comm_split, MPI_Comm_free.

    New communicators must have the expected size, rank order (split keys)
    and inherited error handler, carry collectives of their own with
    results computed over their members only, and keep their collective
    streams apart from the parent's when operations on both are in
    flight at once.
*/
#include "coll_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Checks size, rank and the world ranks of comm's members, in order. */
static void check_members(cc_ctx_t *c, MPI_Comm comm, const int *expect, int n, const char *what)
{
    int size = -1, rank = -1;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    int pos = -1;
    for (int k = 0; k < n; k++)
        if (expect[k] == c->rank)
            pos = k;
    cc_check(c, size == n && rank == pos, "%s: size %d rank %d (expected %d and %d)", what, size,
             rank, n, pos);
    int *got = cc_alloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    int rc = MPI_Allgather(&c->rank, 1, MPI_INT, got, 1, MPI_INT, comm);
    if (!cc_call_failed(c, rc, "Allgather of world ranks")) {
        int ok = memcmp(got, expect, sizeof(int) * (size_t)n) == 0;
        cc_check(c, ok, "%s: members in key order", what);
    }
    free(got);
}

static void check_errhandler(cc_ctx_t *c, MPI_Comm comm, const char *what)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    if (cc_call_failed(c, MPI_Comm_get_errhandler(comm, &eh), "Comm_get_errhandler"))
        return;
    cc_check(c, eh == MPI_ERRORS_RETURN, "%s inherits MPI_ERRORS_RETURN", what);
    if (eh != MPI_ERRORS_RETURN && eh != MPI_ERRORS_ARE_FATAL && eh != MPI_ERRHANDLER_NULL)
        MPI_Errhandler_free(&eh);
}

static void collectives_on(cc_ctx_t *c, MPI_Comm comm, const char *what)
{
    int size;
    MPI_Comm_size(comm, &size);
    cc_reduce_case(c, comm, cc_type("MPI_INT"), CC_OP_SUM, 1000, -1, 0, 0);
    cc_reduce_case(c, comm, cc_type("MPI_FLOAT"), CC_OP_SUM, 7, -1, 1, 0);
    cc_reduce_case(c, comm, cc_type("MPI_DOUBLE_INT"), CC_OP_MAXLOC, 33, -1, 0, 0);
    cc_reduce_case(c, comm, cc_type("MPI_INT"), CC_OP_SUM, 100, size - 1, 0, 0);
    cc_reduce_case(c, comm, cc_type("MPI_DOUBLE"), CC_OP_MAX, 10, -1, 0, 1);
    /* Bcast from the last member of comm. */
    const cc_type_t *t = cc_type("MPI_INT");
    int *buf = cc_alloc(sizeof(int) * 257);
    int rank;
    MPI_Comm_rank(comm, &rank);
    long who = 5000 + size;
    if (rank == size - 1)
        cc_fill_move(t, who, buf, 0, 257);
    char msg[320] = "";
    if (!cc_call_failed(c, MPI_Bcast(buf, 257, MPI_INT, size - 1, comm), "Bcast")) {
        int ok = cc_verify_move(t, who, buf, 0, 257, msg, sizeof msg) == 0;
        cc_check(c, ok, "Bcast on %s: %s", what, ok ? "ok" : msg);
    }
    free(buf);
    if (!cc_call_failed(c, MPI_Barrier(comm), "Barrier"))
        cc_check(c, 1, "Barrier on %s", what);
}

void cc_run_comms(cc_ctx_t *c)
{
    cc_group_begin(c, "comms");
    int size = c->size, rank = c->rank;
    int *expect = cc_alloc(sizeof(int) * (size_t)size);

    /* Dup of the world. */
    MPI_Comm dup = MPI_COMM_NULL;
    if (!cc_call_failed(c, MPI_Comm_dup(MPI_COMM_WORLD, &dup), "Comm_dup")) {
        int cmp = -1;
        MPI_Comm_compare(dup, MPI_COMM_WORLD, &cmp);
        cc_check(c, cmp == MPI_CONGRUENT, "Comm_dup is congruent to the world (%d)", cmp);
        for (int k = 0; k < size; k++)
            expect[k] = k;
        check_members(c, dup, expect, size, "Comm_dup");
        check_errhandler(c, dup, "Comm_dup");
        collectives_on(c, dup, "Comm_dup");
    }

    /* Split by parity, keys reversing the order. */
    MPI_Comm half = MPI_COMM_NULL;
    int rc = MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half);
    if (!cc_call_failed(c, rc, "Comm_split by parity")) {
        int n = 0;
        for (int r = size - 1; r >= 0; r--)
            if (r % 2 == rank % 2)
                expect[n++] = r;
        check_members(c, half, expect, n, "Comm_split by parity");
        check_errhandler(c, half, "Comm_split");
        collectives_on(c, half, "Comm_split");
    }

    /* The last rank opts out with MPI_UNDEFINED. */
    MPI_Comm most = MPI_COMM_NULL;
    int color = (size > 1 && rank == size - 1) ? MPI_UNDEFINED : 3;
    rc = MPI_Comm_split(MPI_COMM_WORLD, color, 0, &most);
    if (!cc_call_failed(c, rc, "Comm_split with MPI_UNDEFINED")) {
        if (color == MPI_UNDEFINED) {
            cc_check(c, most == MPI_COMM_NULL, "MPI_UNDEFINED colour gives MPI_COMM_NULL");
        } else {
            int n = size > 1 ? size - 1 : 1;
            for (int k = 0; k < n; k++)
                expect[k] = k;
            cc_check(c, most != MPI_COMM_NULL, "Comm_split gives a communicator");
            if (most != MPI_COMM_NULL) {
                int sum = -1, one = 1;
                rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, most);
                if (!cc_call_failed(c, rc, "Allreduce on the split"))
                    cc_check(c, sum == n, "Allreduce counts %d members (%d)", n, sum);
            }
        }
    }

    /* Collectives on two communicators in flight at once. */
    if (dup != MPI_COMM_NULL) {
        long a = rank + 1, b = 2 * rank + 1, ra = 0, rb = 0;
        MPI_Request req[2];
        int ok =
            MPI_Iallreduce(&a, &ra, 1, MPI_LONG, MPI_SUM, dup, &req[0]) == MPI_SUCCESS &&
            MPI_Iallreduce(&b, &rb, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &req[1]) == MPI_SUCCESS &&
            MPI_Wait(&req[1], MPI_STATUS_IGNORE) == MPI_SUCCESS &&
            MPI_Wait(&req[0], MPI_STATUS_IGNORE) == MPI_SUCCESS;
        long n = size;
        cc_check(c, ok && ra == n * (n + 1) / 2 && rb == n * n,
                 "Iallreduce on dup and world in flight together: %ld %ld", ra, rb);
    }

    /* A dup of the split, and a split that keeps the world's order. */
    if (half != MPI_COMM_NULL) {
        MPI_Comm hdup = MPI_COMM_NULL;
        if (!cc_call_failed(c, MPI_Comm_dup(half, &hdup), "Comm_dup of a split")) {
            cc_reduce_case(c, hdup, cc_type("MPI_SHORT"), CC_OP_MIN, 50, -1, 0, 0);
            MPI_Comm_free(&hdup);
            cc_check(c, hdup == MPI_COMM_NULL, "Comm_free sets MPI_COMM_NULL");
        }
    }
    MPI_Comm same = MPI_COMM_NULL;
    if (!cc_call_failed(c, MPI_Comm_split(MPI_COMM_WORLD, 0, 0, &same), "Comm_split one colour")) {
        int cmp = -1;
        MPI_Comm_compare(same, MPI_COMM_WORLD, &cmp);
        cc_check(c, cmp == MPI_CONGRUENT, "split with one colour and equal keys is congruent (%d)",
                 cmp);
        cc_reduce_case(c, same, cc_type("MPI_UNSIGNED"), CC_OP_BOR, 64, -1, 0, 0);
        MPI_Comm_free(&same);
    }

    if (most != MPI_COMM_NULL)
        MPI_Comm_free(&most);
    if (half != MPI_COMM_NULL)
        MPI_Comm_free(&half);
    if (dup != MPI_COMM_NULL) {
        MPI_Comm_free(&dup);
        cc_check(c, dup == MPI_COMM_NULL, "Comm_free sets MPI_COMM_NULL");
    }
    free(expect);
    cc_group_end(c);
}
