/*  cc_reduce.c - reductions: Allreduce, Reduce, Reduce_scatter_block (and
    an in-place Reduce_scatter).

    Allreduce runs every (datatype, op) pair the standard allows with
    1 and 1000 elements and 7 in place, and each type's first op also with
    0, 7, 1000 in place and 65537 elements; a separate group moves 1M
    elements for a few pairs.  Reduce runs a representative set of pairs at every root.
    Each case checks the result against the exact expected values, that
    nothing was written past the result, and that the send buffer was left
    unchanged.
*/
#include "coll_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t small_counts[] = {0, 1, 7, 1000};
#define NSMALL (sizeof small_counts / sizeof small_counts[0])
#define BIG_COUNT 65537
#define HUGE_COUNT (1u << 20)

/* Perturbs element 0 of buf once per run (--corrupt). */
static void maybe_corrupt(cc_ctx_t *c, const cc_type_t *t, void *buf, size_t count, int rank,
                          int size)
{
    static int done;
    if (!c->corrupt || done || count == 0 || rank != size - 1)
        return;
    cc_val_t v;
    cc_load(t, buf, 0, &v);
    v.u[0] ^= 1;
    v.f[0] += 1;
    v.idx += 1;
    cc_store(t, buf, 0, &v);
    done = 1;
}

static void describe(char *out, size_t len, const char *call, int root, const cc_type_t *t,
                     cc_op_t op, size_t count, int inplace, int nonblocking)
{
    char r[24] = "";
    if (root >= 0)
        snprintf(r, sizeof r, " root %d", root);
    snprintf(out, len, "%s%s%s %s %s count %zu%s", nonblocking ? "I" : "", call, r, t->name,
             cc_op_name(op), count, inplace ? " in place" : "");
}

void cc_reduce_case(cc_ctx_t *c, MPI_Comm comm, const cc_type_t *t, cc_op_t op, size_t count,
                    int root, int inplace, int nonblocking)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    size_t ext = t->extent;
    int is_root = root < 0 || rank == root;
    int use_inplace = inplace && is_root;
    unsigned char *in = cc_alloc(count * ext);
    unsigned char *ref = cc_alloc(count * ext);
    unsigned char *out = cc_alloc((count + 1) * ext);
    char what[160], msg[320] = "";
    describe(what, sizeof what, root < 0 ? "Allreduce" : "Reduce", root, t, op, count, inplace,
             nonblocking);

    cc_fill_reduce(t, op, rank, in, count);
    maybe_corrupt(c, t, in, count, rank, size);
    memcpy(ref, in, count * ext);
    cc_poison(out, (count + 1) * ext);
    const void *sbuf = in;
    if (use_inplace) {
        memcpy(out, in, count * ext);
        sbuf = MPI_IN_PLACE;
    }

    MPI_Request req = MPI_REQUEST_NULL;
    int rc;
    if (root < 0 && nonblocking)
        rc = MPI_Iallreduce(sbuf, out, (int)count, t->dt, cc_op_handle(op), comm, &req);
    else if (root < 0)
        rc = MPI_Allreduce(sbuf, out, (int)count, t->dt, cc_op_handle(op), comm);
    else
        rc = MPI_Reduce(sbuf, out, (int)count, t->dt, cc_op_handle(op), root, comm);
    if (rc == MPI_SUCCESS && req != MPI_REQUEST_NULL)
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (cc_call_failed(c, rc, what))
        goto out;

    int ok = 1;
    if (is_root) {
        size_t bad = cc_verify_reduce(t, op, size, out, 0, count, msg, sizeof msg);
        if (bad) {
            ok = 0;
        } else if (!cc_poison_intact(out + count * ext, ext)) {
            ok = 0;
            snprintf(msg, sizeof msg, "wrote past the end of the result");
        }
    }
    if (ok && !use_inplace && memcmp(in, ref, count * ext) != 0) {
        ok = 0;
        snprintf(msg, sizeof msg, "modified the send buffer");
    }
    cc_check(c, ok, "%s: %s", what, ok ? "ok" : msg);
out:
    free(in);
    free(ref);
    free(out);
}

/* ---------------------------------------------------------------------- */

static int first_valid_op(const cc_type_t *t)
{
    for (int op = 0; op < CC_OP_COUNT; op++)
        if (cc_op_valid(t, (cc_op_t)op))
            return op;
    return -1;
}

typedef struct {
    const char *name;
    cc_family_t fam;
    int cats; /* bit set of cc_cat_t; 0 = every reducible category */
} ar_group_t;

#define CAT(x) (1 << (x))

static const ar_group_t ar_groups[] = {
    {"allreduce-int", CC_FAM_C, CAT(CC_CAT_CINT) | CAT(CC_CAT_MULTI)},
    {"allreduce-float", CC_FAM_C, CAT(CC_CAT_FLOAT)},
    {"allreduce-complex", CC_FAM_C, CAT(CC_CAT_COMPLEX)},
    {"allreduce-logical", CC_FAM_C, CAT(CC_CAT_LOGICAL)},
    {"allreduce-byte", CC_FAM_C, CAT(CC_CAT_BYTE)},
    {"allreduce-pair", CC_FAM_C, CAT(CC_CAT_PAIR)},
    {"allreduce-fortran", CC_FAM_FORTRAN, 0},
    {"allreduce-cxx", CC_FAM_CXX, 0},
};

void cc_run_allreduce(cc_ctx_t *c)
{
    size_t nt;
    const cc_type_t *types = cc_types(&nt);
    for (size_t g = 0; g < sizeof ar_groups / sizeof ar_groups[0]; g++) {
        const ar_group_t *grp = &ar_groups[g];
        cc_group_begin(c, grp->name);
        for (size_t k = 0; k < nt; k++) {
            const cc_type_t *t = &types[k];
            if (t->fam != grp->fam || t->cat == CC_CAT_OTHER || (t->std_only && !c->std))
                continue;
            if (grp->cats != 0 && !(grp->cats & CAT(t->cat)))
                continue;
            /* Every op: one element, a vector, and in place. */
            for (int op = 0; op < CC_OP_COUNT; op++) {
                if (!cc_op_valid(t, (cc_op_t)op))
                    continue;
                cc_reduce_case(c, MPI_COMM_WORLD, t, (cc_op_t)op, 1, -1, 0, 0);
                cc_reduce_case(c, MPI_COMM_WORLD, t, (cc_op_t)op, 1000, -1, 0, 0);
                cc_reduce_case(c, MPI_COMM_WORLD, t, (cc_op_t)op, 7, -1, 1, 0);
            }
            /* The other counts with the type's first op. */
            int op = first_valid_op(t);
            cc_reduce_case(c, MPI_COMM_WORLD, t, (cc_op_t)op, 0, -1, 0, 0);
            cc_reduce_case(c, MPI_COMM_WORLD, t, (cc_op_t)op, 7, -1, 0, 0);
            cc_reduce_case(c, MPI_COMM_WORLD, t, (cc_op_t)op, 1000, -1, 1, 0);
            if (!c->quick)
                cc_reduce_case(c, MPI_COMM_WORLD, t, (cc_op_t)op, BIG_COUNT, -1, 0, 0);
        }
        cc_group_end(c);
    }
}

void cc_run_allreduce_large(cc_ctx_t *c)
{
    cc_group_begin(c, "allreduce-large");
    cc_reduce_case(c, MPI_COMM_WORLD, cc_type("MPI_FLOAT"), CC_OP_SUM, HUGE_COUNT, -1, 1, 0);
    cc_reduce_case(c, MPI_COMM_WORLD, cc_type("MPI_DOUBLE"), CC_OP_SUM, HUGE_COUNT, -1, 0, 0);
    cc_reduce_case(c, MPI_COMM_WORLD, cc_type("MPI_INT"), CC_OP_MAX, HUGE_COUNT, -1, 0, 0);
    cc_reduce_case(c, MPI_COMM_WORLD, cc_type("MPI_UINT8_T"), CC_OP_BXOR, HUGE_COUNT, -1, 0, 0);
    cc_group_end(c);
}

/* Pairs that Reduce and Reduce_scatter_block run at every root. */
static const struct {
    const char *type;
    cc_op_t op;
    int big; /* also with 65537 elements */
} rooted[] = {
    {"MPI_INT", CC_OP_SUM, 1},
    {"MPI_FLOAT", CC_OP_SUM, 1},
    {"MPI_DOUBLE", CC_OP_MAX, 0},
    {"MPI_DOUBLE_INT", CC_OP_MAXLOC, 0},
    {"MPI_2INT", CC_OP_MINLOC, 0},
    {"MPI_C_BOOL", CC_OP_LOR, 0},
    {"MPI_UINT8_T", CC_OP_BXOR, 0},
    {"MPI_LONG_DOUBLE", CC_OP_PROD, 0},
    {"MPI_C_DOUBLE_COMPLEX", CC_OP_PROD, 0},
    {"MPI_INT64_T", CC_OP_BAND, 0},
};
#define NROOTED (sizeof rooted / sizeof rooted[0])

/* Op/datatype pairs outside the standard's table that the real libraries
   accept (docs/abi.md section 4.1), reduced over every rank: MPI_CHAR with
   MPI_SUM and MPI_BXOR, which MPICH computes too; in --std runs also the
   pairs the face computes itself (Debian's MPICH accepts logical ops on
   reals but stops on an assertion when it reduces them): MPI_LAND and
   MPI_LOR on MPI_FLOAT, MPI_SUM on MPI_REAL16 (a C long double). */
static void beyond_std_ops(cc_ctx_t *c)
{
    int n = c->size, r = c->rank;
    char ch = (char)(r + 1), sum = 0, x = 0;
    int rc = MPI_Allreduce(&ch, &sum, 1, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD);
    if (!cc_call_failed(c, rc, "Allreduce MPI_CHAR MPI_SUM"))
        cc_check(c, sum == (char)(n * (n + 1) / 2), "Allreduce MPI_CHAR MPI_SUM: %d", sum);
    char want = 0;
    for (int k = 1; k <= n; k++)
        want = (char)(want ^ k);
    rc = MPI_Allreduce(&ch, &x, 1, MPI_CHAR, MPI_BXOR, MPI_COMM_WORLD);
    if (!cc_call_failed(c, rc, "Allreduce MPI_CHAR MPI_BXOR"))
        cc_check(c, x == want, "Allreduce MPI_CHAR MPI_BXOR: %d", x);
    if (!c->std)
        return;
    float f = r == 0 ? 0.0f : 2.5f, land = -1, lor = -1;
    rc = MPI_Allreduce(&f, &land, 1, MPI_FLOAT, MPI_LAND, MPI_COMM_WORLD);
    if (!cc_call_failed(c, rc, "Allreduce MPI_FLOAT MPI_LAND"))
        cc_check(c, land == 0.0f, "Allreduce MPI_FLOAT MPI_LAND: %g", land);
    rc = MPI_Allreduce(&f, &lor, 1, MPI_FLOAT, MPI_LOR, MPI_COMM_WORLD);
    if (!cc_call_failed(c, rc, "Allreduce MPI_FLOAT MPI_LOR"))
        cc_check(c, lor == (n > 1 ? 1.0f : 0.0f), "Allreduce MPI_FLOAT MPI_LOR: %g", lor);
    long double q = (long double)r + 0.25L, qs = 0;
    rc = MPI_Allreduce(&q, &qs, 1, MPI_REAL16, MPI_SUM, MPI_COMM_WORLD);
    long double qwant = (long double)n * (n - 1) / 2 + 0.25L * n;
    if (!cc_call_failed(c, rc, "Allreduce MPI_REAL16 MPI_SUM"))
        cc_check(c, qs == qwant, "Allreduce MPI_REAL16 MPI_SUM: %Lg", qs);
}

void cc_run_reduce(cc_ctx_t *c)
{
    cc_group_begin(c, "reduce");
    beyond_std_ops(c);
    for (int root = 0; root < c->size; root++) {
        for (size_t k = 0; k < NROOTED; k++) {
            const cc_type_t *t = cc_type(rooted[k].type);
            for (size_t n = 0; n < NSMALL; n++)
                cc_reduce_case(c, MPI_COMM_WORLD, t, rooted[k].op, small_counts[n], root, 0, 0);
            cc_reduce_case(c, MPI_COMM_WORLD, t, rooted[k].op, 7, root, 1, 0);
            if (rooted[k].big && !c->quick)
                cc_reduce_case(c, MPI_COMM_WORLD, t, rooted[k].op, BIG_COUNT, root, 0, 0);
        }
    }
    cc_group_end(c);
}

/* One Reduce_scatter_block of recvcount elements per rank. */
static void rsb_case(cc_ctx_t *c, const cc_type_t *t, cc_op_t op, size_t rcount, int inplace)
{
    int rank = c->rank, size = c->size;
    size_t ext = t->extent, total = rcount * (size_t)size;
    unsigned char *in = cc_alloc(total * ext);
    unsigned char *ref = cc_alloc(total * ext);
    size_t outn = inplace ? total : rcount;
    unsigned char *out = cc_alloc((outn + 1) * ext);
    char what[160], msg[320] = "";
    snprintf(what, sizeof what, "Reduce_scatter_block %s %s recvcount %zu%s", t->name,
             cc_op_name(op), rcount, inplace ? " in place" : "");

    cc_fill_reduce(t, op, rank, in, total);
    memcpy(ref, in, total * ext);
    cc_poison(out, (outn + 1) * ext);
    const void *sbuf = in;
    if (inplace) {
        memcpy(out, in, total * ext);
        sbuf = MPI_IN_PLACE;
    }
    int rc =
        MPI_Reduce_scatter_block(sbuf, out, (int)rcount, t->dt, cc_op_handle(op), MPI_COMM_WORLD);
    if (cc_call_failed(c, rc, what))
        goto out;
    int ok = 1;
    /* Element j of this rank's block is element rank*rcount + j of the
       reduced vector. */
    if (cc_verify_reduce(t, op, size, out, (size_t)rank * rcount, rcount, msg, sizeof msg)) {
        ok = 0;
    } else if (!cc_poison_intact(out + outn * ext, ext)) {
        ok = 0;
        snprintf(msg, sizeof msg, "wrote past the end of the receive buffer");
    } else if (!inplace && memcmp(in, ref, total * ext) != 0) {
        ok = 0;
        snprintf(msg, sizeof msg, "modified the send buffer");
    }
    cc_check(c, ok, "%s: %s", what, ok ? "ok" : msg);
out:
    free(in);
    free(ref);
    free(out);
}

/* MPI_Reduce_scatter with varying counts (rank k gets k + 1 ints), in
   place: this rank's block lands at the start of recvbuf and the rest of
   recvbuf stays as it was. */
static void rs_inplace_case(cc_ctx_t *c)
{
    int size = c->size, rank = c->rank, total = size * (size + 1) / 2,
        before = rank * (rank + 1) / 2;
    int mine = rank + 1;
    int *counts = cc_alloc(sizeof(int) * (size_t)size),
        *buf = cc_alloc(sizeof(int) * (size_t)total);
    for (int k = 0; k < size; k++)
        counts[k] = k + 1;
    for (int i = 0; i < total; i++)
        buf[i] = rank * 1000 + i;
    int rc = MPI_Reduce_scatter(MPI_IN_PLACE, buf, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (!cc_call_failed(c, rc, "Reduce_scatter in place")) {
        int bad = -1;
        for (int j = 0; j < mine && bad < 0; j++)
            if (buf[j] != 1000 * (size * (size - 1) / 2) + size * (before + j))
                bad = j;
        int touched = -1;
        for (int i = mine; i < total && touched < 0; i++)
            if (buf[i] != rank * 1000 + i)
                touched = i;
        cc_check(c, bad < 0 && touched < 0, "Reduce_scatter in place MPI_INT MPI_SUM: %s",
                 bad >= 0       ? "wrong result"
                 : touched >= 0 ? "wrote past its own block"
                                : "ok");
    }
    free(counts);
    free(buf);
}

void cc_run_reduce_scatter_block(cc_ctx_t *c)
{
    cc_group_begin(c, "reduce-scatter-block");
    rs_inplace_case(c);
    for (size_t k = 0; k < NROOTED; k++) {
        const cc_type_t *t = cc_type(rooted[k].type);
        for (size_t n = 0; n < NSMALL; n++)
            rsb_case(c, t, rooted[k].op, small_counts[n], 0);
        rsb_case(c, t, rooted[k].op, 7, 1);
        if (rooted[k].big && !c->quick)
            rsb_case(c, t, rooted[k].op, BIG_COUNT, 0);
    }
    cc_group_end(c);
}
