/*  cli_coll_fold.c - reductions with user-defined ops on elements the
    core cannot carry: non-contiguous datatypes, and elements of sizes
    other than 1, 2, 4, 8, 16 or 32 bytes (24-, 36-, 400-byte structs).

    The core reduces vectors of fixed-size elements and cuts them where it
    likes, so such elements cannot go through it.  Instead every rank's
    contribution is packed and gathered (all-gather for Allreduce,
    gather to the root for Reduce), then folded locally in rank order,
    x0 op (x1 op (... op x_last)), so non-commutative ops are honoured
    (prefix reductions fold ranks 0..me, and need every rank; a
    reduce-scatter folds the whole vector and keeps this rank's block):
    each contribution is unpacked into the datatype's own layout and the
    program's function is called on whole elements, with its datatype
    handle.  Each member moves (n-1) x count x size bytes (all-gather) or
    the root receives as much (gather): fine for the small, structured
    values such ops carry.  Absent ranks are left out of the fold (their
    slots are not contributions); MPIX_Collab_group tells which ranks
    took part.
*/
#include "cli_coll.h"
#include "cli_impl.h"
#include "cli_tmap.h"

#include <stdlib.h>
#include <string.h>

/* 1 when a user op on t must take this path. */
int cli_fold_needed(MPI_Op op, MPI_Datatype datatype)
{
    int why = 0;
    cli_op_t *o = cli_op_lookup(op, &why);
    cli_type_t *t = cli_type_lookup(datatype, &why);
    if (o == NULL || t == NULL || o->predef >= 0)
        return 0;
    if (t->map != NULL)
        return 1;
    if (t->mult <= 1)
        return 0;
    switch (t->extent) {
    case 1:
    case 2:
    case 4:
    case 8:
    case 16:
    case 32:
        return 0;
    default:
        return 1;
    }
}

/* Each contribution travels behind a header whose first byte is 1, so
   an absent rank's zero-filled slot is seen in the data itself. */
#define CLI_FOLD_HDR 16

enum {
    CLI_FOLD_REDUCE, /* Allreduce (root -1) or Reduce */
    CLI_FOLD_SCAN,   /* inclusive prefix: ranks 0..me */
    CLI_FOLD_EXSCAN, /* exclusive prefix: ranks 0..me-1 */
    CLI_FOLD_RS      /* reduce-scatter: the whole vector, then this rank's block */
};

typedef struct {
    cli_comm_t *comm;
    cli_type_t *type; /* holds a reference */
    MPI_Datatype dtype;
    MPI_User_function *fn;
    MPI_User_function_c *fn_c;
    MPI_Count count;
    size_t packed;          /* bytes of one contribution */
    size_t slot;            /* CLI_FOLD_HDR + packed: one flagged contribution */
    int n, me, root;        /* root -1: all ranks get the result */
    int mode;               /* CLI_FOLD_* */
    MPI_Count before, mine; /* reduce-scatter: this rank's block, in elements */
    char *mine_buf;         /* packed contribution */
    char *all;              /* n x packed */
    size_t *counts, *displs;
    void *recvbuf;
} cli_fold_t;

static void cli_fold_free(cli_fold_t *f)
{
    if (f == NULL)
        return;
    if (f->type != NULL) {
        cli_lock();
        cli_type_unref(f->type);
        cli_unlock();
    }
    free(f->mine_buf), free(f->all), free(f->counts), free(f->displs), free(f);
}

/* A buffer holding count elements of t in its own layout: *base is the
   address the program's element 0 would have. */
static char *cli_typed_alloc(const cli_type_t *t, MPI_Count count, char **base)
{
    MPI_Count span = (count - 1) * t->extent + t->true_extent;
    char *p = calloc(1, (size_t)(span > 0 ? span : 1));
    *base = p != NULL ? p - t->true_lb : NULL;
    return p;
}

static void cli_fold_call(cli_fold_t *f, void *in, void *inout)
{
    MPI_Datatype dt = f->dtype;
    if (f->fn_c != NULL) {
        MPI_Count c = f->count;
        f->fn_c(in, inout, &c, &dt);
    } else {
        int c = (int)f->count;
        f->fn(in, inout, &c, &dt);
    }
}

/* Folds the gathered contributions and writes the result; core status. */
static int cli_fold_run(cli_fold_t *f, int st)
{
    if (st != COLLAB_OK)
        return st;
    cli_collab_note(f->comm);
    if (f->all == NULL)
        return COLLAB_OK; /* Reduce at a rank that is not the root */
    /* A present rank's slot starts with 1; an absent rank's is zero-filled. */
    int *present = malloc((size_t)f->n * sizeof *present);
    if (present == NULL)
        return COLLAB_ERR_NO_MEM;
    int np = 0, all_here = 1;
    for (int k = 0; k < f->n; k++) {
        if (f->all[(size_t)k * f->slot] == 1)
            present[np++] = k;
        else
            all_here = 0;
    }
    int scan = f->mode == CLI_FOLD_SCAN || f->mode == CLI_FOLD_EXSCAN;
    if (scan && !all_here) {
        free(present);
        return COLLAB_ERR_PROC_FAILED; /* a prefix needs every rank */
    }
    if (scan) /* ranks 0 .. me (inclusive) or 0 .. me - 1 */
        np = f->mode == CLI_FOLD_SCAN ? f->me + 1 : f->me;
    if (np == 0) {
        free(present);
        return COLLAB_OK; /* MPI_Exscan at rank 0: the receive buffer is undefined */
    }
    char *accb, *tmpb;
    char *acc = cli_typed_alloc(f->type, f->count, &accb);
    char *tmp = cli_typed_alloc(f->type, f->count, &tmpb);
    if (acc == NULL || tmp == NULL) {
        free(acc), free(tmp), free(present);
        return COLLAB_ERR_NO_MEM;
    }
    cli_tmap_unpack(f->type, f->count, f->all + (size_t)present[np - 1] * f->slot + CLI_FOLD_HDR,
                    accb);
    for (int k = np - 2; k >= 0; k--) {
        cli_tmap_unpack(f->type, f->count, f->all + (size_t)present[k] * f->slot + CLI_FOLD_HDR,
                        tmpb);
        cli_fold_call(f, tmpb, accb);
    }
    /* Only the type's data bytes of the program's buffer are written. */
    if (f->mode == CLI_FOLD_RS) {
        char *packed = f->mine_buf + CLI_FOLD_HDR; /* room for count elements, packed */
        cli_tmap_pack(f->type, f->mine, accb + f->before * f->type->extent, packed);
        cli_tmap_unpack(f->type, f->mine, packed, f->recvbuf);
    } else {
        char *packed = f->mine_buf + CLI_FOLD_HDR;
        cli_tmap_pack(f->type, f->count, accb, packed);
        cli_tmap_unpack(f->type, f->count, packed, f->recvbuf);
    }
    free(acc), free(tmp), free(present);
    return COLLAB_OK;
}

static int cli_fold_finish(cli_req_t *r, int status, collab_status_info_t *st)
{
    (void)st;
    cli_fold_t *f = r->aux;
    r->aux = NULL;
    status = cli_fold_run(f, status);
    cli_fold_free(f);
    return status;
}

static int cli_fold_start(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                          MPI_Datatype datatype, MPI_Op op, int root, int mode, MPI_Count before,
                          MPI_Count mine, MPI_Request *request)
{
    int rc = cli_comm_check_live(call, call->comm);
    if (rc != MPI_SUCCESS)
        return rc;
    int why = 0;
    cli_type_t *t = cli_type_lookup(datatype, &why);
    cli_op_t *o = cli_op_lookup(op, &why);
    int n = collab_comm_size(call->comm->core), me = collab_comm_rank(call->comm->core);
    int at_root = root < 0 || me == root || mode != CLI_FOLD_REDUCE;
    if (sendbuf == MPI_IN_PLACE && !at_root)
        return cli_err(call, MPI_ERR_BUFFER, "sendbuf", "MPI_IN_PLACE is allowed only at the root");
    if (t->extent <= 0 && count > 1)
        return cli_err(call, MPI_ERR_UNSUPPORTED_OPERATION, "datatype",
                       "user-defined ops on a datatype with a non-positive extent");
    MPI_Count pb;
    if (__builtin_mul_overflow(count, t->size, &pb) || (uint64_t)pb > SIZE_MAX / (size_t)n / 2)
        return cli_err(call, MPI_ERR_COUNT, "count", "%lld elements overflow", (long long)count);
    if (count > 0 && at_root && recvbuf == NULL)
        return cli_err(call, MPI_ERR_BUFFER, "recvbuf", "NULL buffer");
    if (count > 0 && sendbuf == NULL)
        return cli_err(call, MPI_ERR_BUFFER, "sendbuf", "NULL buffer");
    if (pb == 0) {
        if (request != NULL)
            return cli_req_done(call, CLI_REQ_COLL, call->comm, COLLAB_OK, NULL, request);
        return MPI_SUCCESS;
    }
    cli_fold_t *f = calloc(1, sizeof *f);
    if (f == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    *f = (cli_fold_t){.comm = call->comm,
                      .dtype = datatype,
                      .fn = o->fn,
                      .fn_c = o->fn_c,
                      .count = count,
                      .packed = (size_t)pb,
                      .n = n,
                      .me = me,
                      .root = root,
                      .mode = mode,
                      .before = before,
                      .mine = mine,
                      .recvbuf = recvbuf};
    f->slot = (size_t)pb + CLI_FOLD_HDR;
    f->mine_buf = calloc(1, f->slot);
    f->all = at_root ? malloc(f->slot * (size_t)n) : NULL;
    f->counts = malloc((size_t)n * sizeof(size_t));
    f->displs = malloc((size_t)n * sizeof(size_t));
    if (f->mine_buf == NULL || (at_root && f->all == NULL) || f->counts == NULL ||
        f->displs == NULL) {
        cli_fold_free(f);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory for %d x %lld bytes", n,
                       (long long)pb);
    }
    cli_lock();
    t->refs++;
    cli_unlock();
    f->type = t;
    for (int k = 0; k < n; k++) {
        f->counts[k] = f->slot;
        f->displs[k] = (size_t)k * f->slot;
    }
    f->mine_buf[0] = 1;
    cli_tmap_pack(t, count, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf,
                  f->mine_buf + CLI_FOLD_HDR);
    collab_request_t *req = NULL;
    int st = root < 0 || mode != CLI_FOLD_REDUCE
                 ? collab_allgatherv(call->comm->core, f->mine_buf, f->slot, f->all, f->counts,
                                     f->displs, request ? &req : NULL)
                 : collab_gatherv(call->comm->core, f->mine_buf, f->slot, f->all, f->counts,
                                  f->displs, root, request ? &req : NULL);
    if (st == COLLAB_OK && request != NULL)
        return cli_req_start(call, CLI_REQ_COLL, call->comm, req, cli_fold_finish, f, request);
    if (st == COLLAB_OK)
        st = cli_fold_run(f, st);
    cli_fold_free(f);
    if (st == COLLAB_ERR_PROC_FAILED && mode != CLI_FOLD_REDUCE && mode != CLI_FOLD_RS)
        return cli_err(call, CLI_ABI_ERR_PROC_FAILED, NULL,
                       "a prefix reduction needs every rank, but not all took part");
    if (st != COLLAB_OK)
        return cli_err_core(call, st, "the reduction");
    return MPI_SUCCESS;
}

int cli_fold_reduce(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                    MPI_Datatype datatype, MPI_Op op, int root, MPI_Request *request)
{
    return cli_fold_start(call, sendbuf, recvbuf, count, datatype, op, root, CLI_FOLD_REDUCE, 0, 0,
                          request);
}

int cli_fold_scan(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                  MPI_Datatype datatype, MPI_Op op, int exclusive, MPI_Request *request)
{
    return cli_fold_start(call, sendbuf, recvbuf, count, datatype, op, -1,
                          exclusive ? CLI_FOLD_EXSCAN : CLI_FOLD_SCAN, 0, 0, request);
}

int cli_fold_rs(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count total,
                MPI_Count before, MPI_Count mine, MPI_Datatype datatype, MPI_Op op,
                MPI_Request *request)
{
    return cli_fold_start(call, sendbuf, recvbuf, total, datatype, op, -1, CLI_FOLD_RS, before,
                          mine, request);
}
