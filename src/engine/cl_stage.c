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

    The chunk pipeline (docs/cuda.md).  An all-reduce of at least
    CL_STAGE_PIPE_MIN bytes on a communicator of several ranks, where the
    table has queued copies and events, is not copied here: the request
    gets the pinned buffers at once (an in-place call gets two, so that on
    the host it runs out of place and a restart still finds its input) and
    the collective drives the copies through the hooks of cl_coll_stage_t:
    in_need queues one device-to-host copy and an event per range, in the
    order asked (the butterfly asks chunk by chunk, in its sending order);
    in_ready queries the events, oldest first, never waiting (the copies
    run on one stream, so they complete in queue order), and the device
    wakes the engine after the first copy and then every
    CL_STAGE_WAKE_BYTES (host_wake; the engine's timer covers the rest);
    out_done queues
    the host-to-device copy of a final output chunk at once.  Completion
    (cl_stage_out) copies what no hook reported (collectives that are not
    stage-aware report nothing), then waits for the library streams before
    the call returns; freeing the stage waits for them too, so a pinned
    buffer never returns to the pool with a copy in flight.
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

/* The chunk pipeline: starting at CL_STAGE_PIPE_MIN bytes (the butterfly's
   threshold: smaller all-reduces run in one round). */
#define CL_STAGE_PIPE_MIN ((size_t)64 * 1024)
/* The device wakes the engine after the first copy and then after at
   least this many bytes: a host function stalls the stream for a few
   microseconds, and the network needs far longer than PCIe for them. */
#define CL_STAGE_WAKE_BYTES ((size_t)2 << 20)

/* An input range whose copy from the device is queued. */
typedef struct {
    size_t off, len; /* bytes of the input */
    size_t q;        /* its place in the stream's order */
} cl_stage_seg_t;

/* An output range reported final (out_done). */
typedef struct {
    size_t off, len;
} cl_stage_range_t;

struct cl_stage {
    int n;                           /* buffers staged */
    cl_stage_buf_t b[CL_STAGE_BUFS]; /* each */
    bool copied;                     /* outputs copied back (or nothing to copy) */
    /* The chunk pipeline (see the top comment). */
    bool pipe;              /* this request's copies run chunk by chunk */
    int in, out;            /* b[] index of the staged input and output, -1: host memory */
    cl_stage_seg_t *seg;    /* input ranges queued, sorted by offset, disjoint */
    void **ev;              /* per queued copy, in queue order: its event (NULL once seen) */
    size_t nseg, capseg;    /* queued copies (one per range), capacity of seg and ev */
    size_t doneq;           /* copies seen completed: a prefix of the queue */
    cl_stage_range_t *outr; /* output ranges reported since the collective began */
    size_t nout, capout;
    int wake_fd;           /* the engine's wake-up, written by the device after copies */
    size_t unwoken;        /* bytes queued since the last wake-up was */
    int err;               /* first device failure, else 0 */
    bool synced;           /* the library streams were waited for */
    bool keep_input;       /* the result is the input (cl_stage_keep_input) */
    void *user_recv;       /* the user's recvbuf (host or device) */
    cl_coll_stage_t hooks; /* what the collective calls */
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

/* ---------------------------------------------------------------------- */
/* The chunk pipeline's hooks (cl_coll_stage_t), engine thread. */

/* First range that ends after x. */
static size_t seg_find(const cl_stage_t *st, size_t x)
{
    size_t lo = 0, hi = st->nseg;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->seg[mid].off + st->seg[mid].len <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Queues the copy of input [off, off + len) and an event, as range i. */
static int seg_queue(cl_stage_t *st, size_t i, size_t off, size_t len)
{
    if (st->nseg == st->capseg) {
        size_t cap = st->capseg > 0 ? 2 * st->capseg : 64;
        cl_stage_seg_t *seg = realloc(st->seg, cap * sizeof *seg);
        if (seg != NULL)
            st->seg = seg;
        void **ev = seg != NULL ? realloc(st->ev, cap * sizeof *ev) : NULL;
        if (ev == NULL)
            return COLLAB_ERR_NO_MEM;
        st->ev = ev;
        st->capseg = cap;
    }
    cl_stage_buf_t *b = &st->b[st->in];
    void *ev = NULL;
    int rc = cl_device_copy_async(&b->a, (uint8_t *)b->host + off, (uint8_t *)b->user + off, len,
                                  true, &ev);
    if (rc != COLLAB_OK)
        return st->err = rc;
    /* The engine looks again as soon as the copy has landed (and on its
       timer where the device cannot call back). */
    st->unwoken += len;
    if (st->wake_fd >= 0 && (st->nseg == 0 || st->unwoken >= CL_STAGE_WAKE_BYTES)) {
        st->unwoken = 0;
        if (cl_device_host_wake(&b->a, st->wake_fd) != COLLAB_OK)
            st->wake_fd = -1;
    }
    memmove(&st->seg[i + 1], &st->seg[i], (st->nseg - i) * sizeof *st->seg);
    st->seg[i] = (cl_stage_seg_t){off, len, st->nseg};
    st->ev[st->nseg++] = ev;
    return COLLAB_OK;
}

static void h_begin(void *arg)
{
    cl_stage_t *st = arg;
    st->nout = 0;
}

static int h_in_need(void *arg, size_t off, size_t len)
{
    cl_stage_t *st = arg;
    if (st->err != COLLAB_OK)
        return st->err;
    if (st->in < 0 || len == 0)
        return COLLAB_OK;
    if (off > st->b[st->in].len || len > st->b[st->in].len - off)
        return COLLAB_ERR_ARG;
    size_t at = off, end = off + len, i = seg_find(st, off);
    while (at < end) {
        if (i < st->nseg && st->seg[i].off <= at) {
            at = st->seg[i].off + st->seg[i].len;
            i++;
            continue;
        }
        size_t stop = i < st->nseg && st->seg[i].off < end ? st->seg[i].off : end;
        int rc = seg_queue(st, i, at, stop - at);
        if (rc != COLLAB_OK)
            return rc;
        at = stop;
        i++;
    }
    return COLLAB_OK;
}

static int h_in_ready(void *arg, size_t off, size_t len)
{
    cl_stage_t *st = arg;
    if (st->in < 0 || len == 0)
        return 1;
    int rc = h_in_need(arg, off, len);
    if (rc != COLLAB_OK)
        return rc;
    size_t qmax = 0, end = off + len;
    for (size_t i = seg_find(st, off); i < st->nseg && st->seg[i].off < end; i++)
        qmax = st->seg[i].q > qmax ? st->seg[i].q : qmax;
    const cl_devattr_t *a = &st->b[st->in].a;
    while (st->doneq <= qmax) {
        int r = cl_device_event_done(a, st->ev[st->doneq]);
        if (r < 0)
            return st->err = COLLAB_ERR_INTERNAL;
        if (r == 0)
            return 0;
        cl_device_event_free(a, st->ev[st->doneq]);
        st->ev[st->doneq++] = NULL;
    }
    return 1;
}

/* Queues the copy of output [off, off + len) back to the device. */
static int out_copy(cl_stage_t *st, size_t off, size_t len)
{
    cl_stage_buf_t *b = &st->b[st->out];
    if (off > b->len || len > b->len - off)
        return COLLAB_ERR_ARG;
    /* In place: the input's copy of these bytes goes first on the stream. */
    int rc = COLLAB_OK;
    if (st->in >= 0 && st->b[st->in].user == b->user && (rc = h_in_need(st, off, len)) != 0)
        return rc;
    rc = cl_device_copy_async(&b->a, (uint8_t *)b->host + off, (uint8_t *)b->user + off, len, false,
                              NULL);
    return rc != COLLAB_OK ? (st->err = rc) : COLLAB_OK;
}

static int h_out_done(void *arg, size_t off, size_t len)
{
    cl_stage_t *st = arg;
    if (st->err != COLLAB_OK)
        return st->err;
    if (st->out < 0 || len == 0)
        return COLLAB_OK;
    if (st->nout == st->capout) {
        size_t cap = st->capout > 0 ? 2 * st->capout : 64;
        cl_stage_range_t *r = realloc(st->outr, cap * sizeof *r);
        if (r == NULL)
            return COLLAB_ERR_NO_MEM;
        st->outr = r;
        st->capout = cap;
    }
    int rc = out_copy(st, off, len);
    if (rc == COLLAB_OK)
        st->outr[st->nout++] = (cl_stage_range_t){off, len};
    return rc;
}

static int range_cmp(const void *x, const void *y)
{
    const cl_stage_range_t *a = x, *b = y;
    return a->off < b->off ? -1 : a->off > b->off;
}

/* Waits for the library streams (once) and frees the events. */
static int pipe_sync(cl_stage_t *st)
{
    if (st->synced)
        return st->err;
    st->synced = true;
    for (int k = 0; k < 2; k++) {
        int i = k == 0 ? st->in : st->out;
        if (i >= 0 && cl_device_stream_sync(&st->b[i].a) != COLLAB_OK && st->err == COLLAB_OK)
            st->err = COLLAB_ERR_INTERNAL;
    }
    for (size_t q = st->doneq; q < st->nseg && st->in >= 0; q++)
        cl_device_event_free(&st->b[st->in].a, st->ev[q]);
    st->doneq = st->nseg;
    return st->err;
}

/* Completion: copies the output ranges nobody reported, then waits. */
static int pipe_finish(cl_stage_t *st)
{
    if (st->keep_input) {
        int rc = pipe_sync(st);
        cl_stage_buf_t *in = &st->b[st->in];
        if (rc == COLLAB_OK && st->user_recv != in->user)
            rc = collab_memcpy(st->user_recv, in->user, in->len);
        return rc;
    }
    if (st->out >= 0 && st->err == COLLAB_OK) {
        cl_stage_buf_t *b = &st->b[st->out];
        qsort(st->outr, st->nout, sizeof *st->outr, range_cmp);
        size_t at = 0;
        for (size_t i = 0; i <= st->nout && st->err == COLLAB_OK; i++) {
            size_t stop = i < st->nout ? st->outr[i].off : b->len;
            if (stop > at && out_copy(st, at, stop - at) != COLLAB_OK) {
                st->err = st->err != COLLAB_OK ? st->err : COLLAB_ERR_INTERNAL;
                break;
            }
            if (i < st->nout && st->outr[i].off + st->outr[i].len > at)
                at = st->outr[i].off + st->outr[i].len;
        }
    }
    return pipe_sync(st);
}

/* Sets the pipeline up for an all-reduce (see the top comment): *done
   true when it did (or failed), false when the call is not for it. */
static int pipe_in(collab_request_t *req, int wake_fd, bool *done)
{
    cl_coll_args_t *a = &req->coll;
    size_t bytes = a->count * collab_dtype_extent(a->dtype);
    *done = false;
    if (req->op != CL_OP_COLL || req->comm == NULL || req->comm->size < 2 ||
        a->kind != CL_COLL_ALLREDUCE || bytes < CL_STAGE_PIPE_MIN || !cl_device_can_pipeline())
        return COLLAB_OK;
    bool inplace = a->sendbuf == NULL;
    void *src = inplace ? a->recvbuf : (void *)a->sendbuf;
    cl_devattr_t as, ar;
    int ks = cl_device_kind(src, bytes, &as);
    int kr = inplace ? ks : cl_device_kind(a->recvbuf, bytes, &ar);
    if (inplace)
        ar = as;
    if (ks == CL_DEVQ_ERR || kr == CL_DEVQ_ERR) {
        *done = true;
        return COLLAB_ERR_ARG;
    }
    if (ks != CL_DEVQ_DEVICE && kr != CL_DEVQ_DEVICE)
        return COLLAB_OK;
    *done = true;
    cl_stage_t *st = calloc(1, sizeof *st);
    if (st == NULL)
        return COLLAB_ERR_NO_MEM;
    st->pipe = true;
    st->in = st->out = -1;
    st->wake_fd = wake_fd;
    st->hooks = (cl_coll_stage_t){st, h_begin, h_in_need, h_in_ready, h_out_done};
    st->user_recv = a->recvbuf;
    for (int k = 0; k < 2; k++) {
        bool in = k == 0;
        if ((in ? ks : kr) != CL_DEVQ_DEVICE)
            continue;
        cl_stage_buf_t *b = &st->b[st->n];
        if ((b->host = cl_device_pinned_get(bytes, &b->cap)) == NULL) {
            cl_stage_free(&st);
            return COLLAB_ERR_NO_MEM;
        }
        b->user = in ? src : a->recvbuf;
        b->len = bytes;
        b->out = !in;
        b->a = in ? as : ar;
        *(in ? &st->in : &st->out) = st->n++;
    }
    /* The program's kernels may still be writing the input: they finish
       before the first copy is queued.  Waiting for the library streams
       here also creates them in the program's thread, not the engine's. */
    bool bad = st->in >= 0 && cl_device_sync(&st->b[st->in].a) != COLLAB_OK;
    for (int i = 0; i < st->n && !bad; i++)
        bad = cl_device_stream_sync(&st->b[i].a) != COLLAB_OK;
    if (bad) {
        cl_stage_free(&st);
        return COLLAB_ERR_INTERNAL;
    }
    if (st->in >= 0)
        a->sendbuf = st->b[st->in].host;
    if (st->out >= 0)
        a->recvbuf = st->b[st->out].host;
    req->stage = st;
    return COLLAB_OK;
}

const cl_coll_stage_t *cl_stage_hooks(const collab_request_t *req)
{
    const cl_stage_t *st = req->stage;
    return st != NULL && st->pipe ? &st->hooks : NULL;
}

bool cl_stage_keep_input(collab_request_t *req)
{
    cl_stage_t *st = req->stage;
    if (st == NULL || !st->pipe || st->in < 0)
        return false;
    st->keep_input = true;
    return true;
}

int cl_stage_in_whole(collab_request_t *req)
{
    cl_stage_t *st = req->stage;
    if (st == NULL || !st->pipe || st->in < 0)
        return 1;
    return h_in_ready(st, 0, st->b[st->in].len);
}

/* ---------------------------------------------------------------------- */

int cl_stage_in(collab_request_t *req, int wake_fd)
{
    if (!cl_device_active())
        return COLLAB_OK;
    bool piped = false;
    int prc = pipe_in(req, wake_fd, &piped);
    if (piped)
        return prc;
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
    if (st->pipe)
        return pipe_finish(st) == COLLAB_OK ? rc : COLLAB_ERR_INTERNAL;
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
    if (st->pipe) {
        (void)pipe_sync(st); /* no copy may still use a pinned buffer */
        free(st->seg);
        free(st->ev);
        free(st->outr);
    }
    for (int i = 0; i < st->n; i++)
        cl_device_pinned_put(st->b[i].host, st->b[i].cap);
    free(st);
    *self_p = NULL;
}
