/*  cl_stage.c - staging of device buffers through pinned host memory (see
    cl_stage.h).

    Which bytes a call reads and writes, per kind (N = communicator size):
      send        sbuf[0, bytes) in          recv      buf[0, bytes) out
      bcast       recvbuf[0, count): in at the root, out elsewhere
      allreduce   sendbuf count*ext in, recvbuf count*ext out
      reduce      the same at the root; elsewhere sendbuf in only
      reduce_scatter_block  sendbuf N*count*ext in, recvbuf count*ext out
      allgatherv  sendbuf sbytes in, recvbuf max(displs+counts) out
      gatherv     sendbuf sbytes in; root: recvbuf max(displs+counts) out
      scatterv    root: sendbuf max(displs+counts) in; recvbuf rbytes out
      alltoall    sendbuf N*count in, recvbuf N*count out
    In place (sendbuf NULL, scatterv's recvbuf NULL at the root) the
    remaining buffer is both in and out, with the input's size.
*/
#include "engine/cl_stage.h"

#include "engine/cl_comm.h"
#include "util/cl_device.h"
#include "util/cl_log.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CL_STAGE_BUFS 2

typedef struct {
    void *user;     /* the program's device buffer */
    void *host;     /* pinned copy from the pool */
    size_t cap;     /* its capacity */
    size_t len;     /* bytes staged */
    bool out;       /* copied back at completion */
    cl_devattr_t a; /* the device allocation */
} cl_stage_buf_t;

struct cl_stage {
    int n;                           /* buffers staged */
    cl_stage_buf_t b[CL_STAGE_BUFS]; /* each */
    bool copied;                     /* outputs copied back (or nothing to copy) */
};

/* One buffer a call touches. */
typedef struct {
    void **slot;  /* where the request points at it */
    size_t len;   /* bytes */
    bool in, out; /* read, written */
} cl_stage_use_t;

static size_t v_extent(const size_t *counts, const size_t *displs, int n)
{
    size_t m = 0;
    for (int r = 0; counts != NULL && displs != NULL && r < n; r++)
        if (counts[r] > 0 && displs[r] + counts[r] > m)
            m = displs[r] + counts[r];
    return m;
}

/* Fills use[] with the buffers req touches; returns how many. */
static int uses(collab_request_t *req, cl_stage_use_t use[CL_STAGE_BUFS])
{
    int k = 0;
    if (req->op == CL_OP_SEND) {
        use[k++] = (cl_stage_use_t){(void **)&req->sbuf, req->bytes, true, false};
        return k;
    }
    if (req->op == CL_OP_RECV) {
        use[k++] = (cl_stage_use_t){&req->buf, req->bytes, false, true};
        return k;
    }
    if (req->op != CL_OP_COLL || req->comm == NULL)
        return 0;
    cl_coll_args_t *a = &req->coll;
    const int n = req->comm->size, me = req->comm->rank;
    const bool root = a->root == me;
    const size_t ext = collab_dtype_extent(a->dtype);
    void **s = (void **)&a->sendbuf, **r = &a->recvbuf;
    const bool inplace = a->sendbuf == NULL;
    size_t sl = 0, rl = 0;
    bool rin = false, rout = true;
    switch (a->kind) {
    case CL_COLL_BARRIER:
        return 0;
    case CL_COLL_BCAST:
        /* Copied in everywhere: a joiner whose start-up broadcast is not
           served keeps its own value (docs/state-sync.md §4), and the
           copy back must then carry that value, not the pool's bytes. */
        use[k++] = (cl_stage_use_t){r, a->count, true, !root};
        return k;
    case CL_COLL_ALLREDUCE:
    case CL_COLL_REDUCE:
        sl = rl = a->count * ext;
        if (a->kind == CL_COLL_REDUCE && !root)
            rl = 0, rout = false;
        break;
    case CL_COLL_REDUCE_SCATTER_BLOCK:
        sl = a->count * ext * (size_t)n;
        rl = inplace ? sl : a->count * ext;
        break;
    case CL_COLL_ALLGATHERV:
        sl = a->sbytes;
        rl = v_extent(a->counts, a->displs, n);
        break;
    case CL_COLL_GATHERV:
        sl = a->sbytes;
        rl = root ? v_extent(a->counts, a->displs, n) : 0;
        rout = root;
        break;
    case CL_COLL_SCATTERV:
        sl = root ? v_extent(a->counts, a->displs, n) : 0;
        rl = a->rbytes;
        if (root && a->recvbuf == NULL) /* in place at the root: nothing received */
            rl = 0, rout = false;
        if (sl > 0)
            use[k++] = (cl_stage_use_t){s, sl, true, false};
        if (rl > 0)
            use[k++] = (cl_stage_use_t){r, rl, false, true};
        return k;
    case CL_COLL_ALLTOALL:
        sl = rl = a->count * (size_t)n;
        break;
    default:
        return 0;
    }
    if (inplace) {
        rin = true;
        if (a->kind == CL_COLL_REDUCE && !root) /* no in place away from the root */
            rin = false;
    } else if (sl > 0) {
        use[k++] = (cl_stage_use_t){s, sl, true, false};
    }
    if (rl > 0 && (rin || rout))
        use[k++] = (cl_stage_use_t){r, rl, rin, rout};
    return k;
}

int cl_stage_in(collab_request_t *req)
{
    if (!cl_device_active())
        return COLLAB_OK;
    cl_stage_use_t use[CL_STAGE_BUFS];
    int nu = uses(req, use);
    cl_stage_t *st = NULL;
    for (int i = 0; i < nu; i++) {
        void *user = *use[i].slot;
        cl_devattr_t a;
        int kind = cl_device_kind(user, use[i].len, &a);
        if (kind == CL_DEVQ_HOST)
            continue;
        if (kind != CL_DEVQ_DEVICE)
            goto err_arg;
        if (st == NULL && (st = calloc(1, sizeof *st)) == NULL)
            goto err_mem;
        cl_stage_buf_t *b = &st->b[st->n];
        b->host = cl_device_pinned_get(use[i].len, &b->cap);
        if (b->host == NULL)
            goto err_mem;
        st->n++;
        b->user = user;
        b->len = use[i].len;
        b->out = use[i].out;
        b->a = a;
        if (use[i].in && (cl_device_sync(&a) != COLLAB_OK ||
                          cl_device_d2h(&a, b->host, user, b->len) != COLLAB_OK))
            goto err_copy;
    }
    if (st == NULL)
        return COLLAB_OK;
    /* All copies done: point the request at the pinned buffers. */
    for (int i = 0, j = 0; i < nu; i++)
        if (j < st->n && *use[i].slot == st->b[j].user)
            *use[i].slot = st->b[j++].host;
    req->stage = st;
    return COLLAB_OK;

err_copy:
    cl_stage_free(&st);
    return COLLAB_ERR_INTERNAL;
err_mem:
    cl_stage_free(&st);
    return COLLAB_ERR_NO_MEM;
err_arg:
    cl_stage_free(&st);
    return COLLAB_ERR_ARG;
}

bool cl_stage_pending(const collab_request_t *req)
{
    const cl_stage_t *st = req->stage;
    if (st == NULL || st->copied)
        return false;
    for (int i = 0; i < st->n; i++)
        if (st->b[i].out)
            return true;
    return false;
}

int cl_stage_out(collab_request_t *req)
{
    cl_stage_t *st = req->stage;
    int rc = req->status;
    if (st == NULL || st->copied)
        return rc;
    st->copied = true;
    if (rc != COLLAB_OK && rc != COLLAB_ERR_TRUNCATE)
        return rc;
    for (int i = 0; i < st->n; i++) {
        cl_stage_buf_t *b = &st->b[i];
        size_t len = b->len;
        if (req->op == CL_OP_RECV && req->info.bytes < len)
            len = req->info.bytes; /* bytes actually received */
        if (b->out && cl_device_h2d(&b->a, b->user, b->host, len) != COLLAB_OK)
            return COLLAB_ERR_INTERNAL;
    }
    return rc;
}

void *cl_stage_user(const collab_request_t *req, const void *p, bool *device)
{
    const cl_stage_t *st = req->stage;
    *device = false;
    for (int i = 0; st != NULL && p != NULL && i < st->n; i++)
        if (st->b[i].host == p) {
            *device = true;
            return st->b[i].user;
        }
    return (void *)p;
}

void cl_stage_free(cl_stage_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    cl_stage_t *st = *self_p;
    for (int i = 0; i < st->n; i++)
        cl_device_pinned_put(st->b[i].host, st->b[i].cap);
    free(st);
    *self_p = NULL;
}
