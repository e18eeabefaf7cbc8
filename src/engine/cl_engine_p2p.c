/*  cl_engine_p2p.c - point-to-point on the engine thread.

    Sends are eager: the payload is copied into one P2P message (header
    part = sender's comm rank, aux = tag) and the send completes at once.
    Receives and probes match through cl_p2p (MPI's ordering rules).  A
    rank that is absent fails sends and receives with
    COLLAB_ERR_PROC_FAILED, except during a short start-up grace
    (max(COLLAB_MATCHMAKING_TIME, COLLAB_TIMEOUT) after this peer joined),
    when peers started together may still be joining: sends to a rank that
    no member has held yet wait, receives from it stay posted, and both
    fail if the rank is still absent at the end of the grace.  A receive waiting on a rank that fails completes
    with COLLAB_ERR_PROC_FAILED.
*/
#include "engine/cl_engine_int.h"

#include "util/cl_log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void eng_p2p_mark_seen(struct cl_engine *e, int w)
{
    if (w < 0)
        return;
    if (w >= e->nseen) {
        int n = w + 1 > 2 * e->nseen ? w + 1 : 2 * e->nseen;
        uint8_t *a = realloc(e->seen, (size_t)n);
        if (a == NULL)
            return;
        memset(a + e->nseen, 0, (size_t)(n - e->nseen));
        e->seen = a;
        e->nseen = n;
    }
    e->seen[w] = 1;
}

/* May a call on an absent comm rank r still wait for it to appear? */
static bool may_wait(struct cl_engine *e, collab_comm_t *comm, int r)
{
    if (e->p2p_grace_over ||
        eng_now() >= e->member_since + fmax(e->cfg.matchmaking_time, e->cfg.timeout))
        return false;
    int w = cl_comm_world_of(comm, r);
    return w >= 0 && (w >= e->nseen || e->seen[w] == 0);
}

/* Is comm rank r of comm a live member (or this peer)? */
static bool present(struct cl_engine *e, collab_comm_t *comm, int r)
{
    int w = cl_comm_world_of(comm, r);
    return w >= 0 && (w == atomic_load(&e->rank) || cl_member_at_rank(e->mb, w) != NULL);
}

/* Gives an arriving message (comm, src, tag, data) to the waiting
   receives and probes, or queues it. */
static void arrive(struct cl_engine *e, uint64_t comm, int src, int tag, const void *data,
                   size_t len)
{
    cl_p2p_posted_t p;
    while (cl_p2p_match_posted(e->p2p, comm, src, tag, &p)) {
        collab_request_t *req = p.req;
        req->info.source = src;
        req->info.tag = tag;
        req->info.bytes = len;
        if (p.kind == CL_P2P_PROBE) {
            req->found = true;
            cl_request_complete(req, COLLAB_OK);
            continue;
        }
        if (p.kind == CL_P2P_MPROBE) {
            cl_p2p_msg_t *m = calloc(1, sizeof *m);
            if (m != NULL && len > 0 && (m->data = malloc(len)) == NULL) {
                free(m);
                m = NULL;
            }
            if (m == NULL) {
                cl_request_complete(req, COLLAB_ERR_NO_MEM);
                return;
            }
            if (len > 0)
                memcpy(m->data, data, len);
            m->comm = comm;
            m->src = src;
            m->tag = tag;
            m->len = len;
            req->msg = m;
            req->found = true;
            cl_request_complete(req, COLLAB_OK);
            return;
        }
        size_t n = len <= req->bytes ? len : req->bytes;
        if (n > 0)
            memcpy(req->buf, data, n);
        req->info.bytes = n;
        cl_request_complete(req, len <= req->bytes ? COLLAB_OK : COLLAB_ERR_TRUNCATE);
        return;
    }
    if (cl_p2p_store(e->p2p, comm, src, tag, data, len) != COLLAB_OK)
        cl_error("out of memory queueing a message from rank %d; it is lost", src);
}

void eng_p2p_send(struct cl_engine *e, collab_request_t *req)
{
    collab_comm_t *comm = req->comm;
    int w = cl_comm_world_of(comm, req->peer);
    if (w < 0) {
        cl_request_complete(req, COLLAB_ERR_RANK);
        return;
    }
    if (w == atomic_load(&e->rank)) {
        arrive(e, comm->id, comm->rank, req->tag, req->sbuf, req->bytes);
        cl_request_complete(req, COLLAB_OK);
        return;
    }
    cl_peer_t *p = cl_member_at_rank(e->mb, w);
    if (p == NULL) {
        if (may_wait(e, comm, req->peer)) {
            if (zlist_append(e->p2p_waiting, req) != 0)
                cl_request_complete(req, COLLAB_ERR_NO_MEM);
            return;
        }
        cl_request_complete(req, COLLAB_ERR_PROC_FAILED);
        return;
    }
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_P2P;
    m.hdr.comm = comm->id;
    m.hdr.part = (uint32_t)comm->rank;
    m.hdr.aux = (uint32_t)req->tag;
    m.payload = req->sbuf;
    m.payload_len = req->bytes;
    cl_request_complete(req, eng_send(e, p, &m));
}

void eng_p2p_recv(struct cl_engine *e, collab_request_t *req)
{
    collab_comm_t *comm = req->comm;
    cl_p2p_msg_t *m = cl_p2p_find(e->p2p, comm->id, req->peer, req->tag, true);
    if (m != NULL) {
        size_t n = m->len <= req->bytes ? m->len : req->bytes;
        if (n > 0)
            memcpy(req->buf, m->data, n);
        req->info.source = m->src;
        req->info.tag = m->tag;
        req->info.bytes = n;
        int status = m->len <= req->bytes ? COLLAB_OK : COLLAB_ERR_TRUNCATE;
        cl_p2p_msg_free(m);
        cl_request_complete(req, status);
        return;
    }
    if (req->peer != COLLAB_ANY_SOURCE && !present(e, comm, req->peer) &&
        !may_wait(e, comm, req->peer)) {
        cl_request_complete(req, COLLAB_ERR_PROC_FAILED);
        return;
    }
    cl_p2p_posted_t p = {comm->id, req->peer, req->tag, CL_P2P_RECV, req};
    if (cl_p2p_post(e->p2p, &p) != COLLAB_OK)
        cl_request_complete(req, COLLAB_ERR_NO_MEM);
}

void eng_p2p_probe(struct cl_engine *e, collab_request_t *req)
{
    collab_comm_t *comm = req->comm;
    cl_p2p_msg_t *m = cl_p2p_find(e->p2p, comm->id, req->peer, req->tag, req->take);
    if (m != NULL) {
        req->info.source = m->src;
        req->info.tag = m->tag;
        req->info.bytes = m->len;
        req->found = true;
        if (req->take)
            req->msg = m;
        cl_request_complete(req, COLLAB_OK);
        return;
    }
    if (!req->blocking) {
        req->found = false;
        cl_request_complete(req, COLLAB_OK);
        return;
    }
    if (req->peer != COLLAB_ANY_SOURCE && !present(e, comm, req->peer) &&
        !may_wait(e, comm, req->peer)) {
        cl_request_complete(req, COLLAB_ERR_PROC_FAILED);
        return;
    }
    cl_p2p_posted_t p = {comm->id, req->peer, req->tag, req->take ? CL_P2P_MPROBE : CL_P2P_PROBE,
                         req};
    if (cl_p2p_post(e->p2p, &p) != COLLAB_OK)
        cl_request_complete(req, COLLAB_ERR_NO_MEM);
}

void eng_p2p_cancel(struct cl_engine *e, collab_request_t *req)
{
    collab_request_t *t = req->target;
    if (t != NULL && cl_p2p_cancel(e->p2p, t)) {
        t->info.cancelled = 1;
        cl_request_complete(t, COLLAB_OK);
    }
    cl_request_complete(req, COLLAB_OK);
}

void eng_p2p_on_message(struct cl_engine *e, cl_peer_t *from, const cl_wire_msg_t *m)
{
    int src = (int)m->hdr.part;
    int tag = (int)m->hdr.aux;
    /* The sender's comm rank must be the sender's: checked wherever this
       peer knows the communicator. */
    if (m->hdr.comm == CL_COMM_SELF_ID)
        return;
    if (m->hdr.comm == CL_COMM_WORLD_ID && src != from->rank) {
        cl_warn("dropped a message claiming world rank %d from rank %d", src, from->rank);
        return;
    }
    for (size_t i = 0; i < e->nstreams; i++) {
        stream_t *s = e->streams[i];
        if (s->comm_id == m->hdr.comm && s->comm != NULL &&
            cl_comm_world_of(s->comm, src) != from->rank) {
            cl_warn("dropped a message claiming rank %d of a communicator from rank %d", src,
                    from->rank);
            return;
        }
    }
    arrive(e, m->hdr.comm, src, tag, m->payload, m->payload_len);
}

typedef struct {
    struct cl_engine *e;
    int world;  /* the rank that failed, or -1: every absent rank */
    int status; /* completion status of removed entries */
    bool cancelled;
} fail_ctx_t;

static bool fail_pred(void *ctx, const cl_p2p_posted_t *p)
{
    fail_ctx_t *f = ctx;
    collab_request_t *req = p->req;
    if (p->src == COLLAB_ANY_SOURCE)
        return f->cancelled;
    if (f->cancelled)
        return true;
    int w = cl_comm_world_of(req->comm, p->src);
    if (f->world >= 0)
        return w == f->world;
    return !present(f->e, req->comm, p->src);
}

static void fail_fn(void *ctx, const cl_p2p_posted_t *p)
{
    fail_ctx_t *f = ctx;
    collab_request_t *req = p->req;
    if (f->cancelled)
        req->info.cancelled = 1;
    cl_request_complete(req, f->status);
}

void eng_p2p_peer_gone(struct cl_engine *e, const cl_peer_t *p)
{
    int w = p->rank >= 0 ? p->rank : p->prev_rank;
    if (w < 0)
        return;
    fail_ctx_t f = {e, w, COLLAB_ERR_PROC_FAILED, false};
    cl_p2p_remove_posted_if(e->p2p, fail_pred, fail_fn, &f);
}

/* Retries sends that waited for their peer. */
static void retry_waiting(struct cl_engine *e)
{
    size_t n = zlist_size(e->p2p_waiting);
    for (size_t i = 0; i < n; i++) {
        collab_request_t *req = zlist_pop(e->p2p_waiting);
        eng_p2p_send(e, req); /* completes it or queues it again */
    }
}

void eng_p2p_view_changed(struct cl_engine *e)
{
    retry_waiting(e);
}

double eng_p2p_timer(struct cl_engine *e, double now)
{
    if (e->p2p_grace_over)
        return now + 5.0;
    double end = e->member_since + fmax(e->cfg.matchmaking_time, e->cfg.timeout);
    if (now < end)
        return end;
    e->p2p_grace_over = true;
    retry_waiting(e);
    fail_ctx_t f = {e, -1, COLLAB_ERR_PROC_FAILED, false};
    cl_p2p_remove_posted_if(e->p2p, fail_pred, fail_fn, &f);
    return now + 5.0;
}

void eng_p2p_fail_all(struct cl_engine *e, int status)
{
    if (e->p2p == NULL)
        return;
    fail_ctx_t f = {e, -1, status, false};
    cl_p2p_remove_posted_if(e->p2p, fail_pred, fail_fn, &f);
    collab_request_t *r;
    while (e->p2p_waiting != NULL && (r = zlist_pop(e->p2p_waiting)) != NULL)
        cl_request_complete(r, status);
}

void eng_p2p_cancel_all(struct cl_engine *e)
{
    if (e->p2p == NULL)
        return;
    fail_ctx_t f = {e, -1, COLLAB_OK, true};
    cl_p2p_remove_posted_if(e->p2p, fail_pred, fail_fn, &f);
}
