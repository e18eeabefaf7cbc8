/*  cl_engine_p2p.c - point-to-point on the engine thread: the component
    eng_p2p_t (cl_engine_p2p.h).

    It owns every piece of point-to-point state (struct eng_p2p below and
    the credit in cl_engine_flow.c, its helper file) and sees the engine
    only through the context it got at creation: the clock, the
    configuration, this peer's rank, the member holding a world rank,
    sending a message, a communicator's ranks, a link's version and bans.
    The engine forwards requests, messages, view changes, departures and
    its timer to it.

    Sends are eager: the payload is copied into one P2P message (header
    part = sender's comm rank, aux = tag) and a standard send completes
    at once.
    Receives and probes match through cl_p2p (MPI's ordering rules).  A
    rank that is absent fails sends and receives with
    COLLAB_ERR_PROC_FAILED, except during a short start-up grace
    (max(COLLAB_MATCHMAKING_TIME, COLLAB_TIMEOUT) after this peer joined),
    when peers started together may still be joining: sends to a rank that
    no member has held yet wait, receives from it stay posted, and both
    fail if the rank is still absent at the end of the grace.  A receive
    waiting on a rank that fails completes with COLLAB_ERR_PROC_FAILED.

    Synchronous sends (docs/wire.md section 8) carry an id; they stay in
    p2p_ssends until the receiver's engine answers MATCHED (a receive or a
    matched probe took the message) or CANCELLED (a cancel withdrew it
    from the receiver's unexpected queue).  This engine answers for the
    messages it receives the same way, and completes sends to itself
    directly.  A pending synchronous send to a rank that fails completes
    with COLLAB_ERR_PROC_FAILED.

    Unexpected messages from other peers are bounded per sender and in
    all (COLLAB_MAX_UNEXPECTED_PER_PEER, COLLAB_MAX_UNEXPECTED_MSGS,
    COLLAB_MAX_UNEXPECTED; docs/security.md section 5): one past a bound
    is dropped, counted, and its sender named in the log (at the first
    drop and every power of two after).  It is not banned: without flow
    control an honest program that sends far ahead of its receiver passes
    the bounds too.  A synchronous send dropped this way gets no answer
    (CANCELLED would tell its sender the send succeeded as cancelled).
*/
#include "engine/cl_engine_p2p_int.h"

#include "engine/cl_comm.h"
#include "engine/cl_engine_timer.h"
#include "util/cl_log.h"

#include <czmq.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct eng_p2p {
    eng_p2p_ctx_t ctx;  /* what it may ask of the engine */
    cl_p2p_t *q;        /* matching: posted receives, unexpected messages */
    zlist_t *waiting;   /* sends waiting for their peer to appear */
    zlist_t *ssends;    /* synchronous sends sent, waiting to be matched */
    eng_flow_t *flow;   /* credit per member (cl_engine_flow.c) */
    uint64_t sync_next; /* last synchronous-send id given out */
    bool grace_over;    /* absent ranks now fail at once */
    int timer;          /* in ctx.timers: grace, CREDIT round, versions */
    uint8_t *seen;      /* per world rank: 1 once a member held it */
    int nseen;
};

static double now_of(const eng_p2p_t *self)
{
    return self->ctx.now(self->ctx.arg);
}

static int self_rank(const eng_p2p_t *self)
{
    return self->ctx.self_rank(self->ctx.arg);
}

static cl_peer_t *member_at(const eng_p2p_t *self, int w)
{
    return self->ctx.member_at(self->ctx.arg, w);
}

static int send_to(const eng_p2p_t *self, const cl_peer_t *to, cl_wire_msg_t *m)
{
    return self->ctx.send(self->ctx.arg, to, m);
}

/* The end of the start-up grace: max(COLLAB_MATCHMAKING_TIME,
   COLLAB_TIMEOUT) after this peer got its rank. */
static double grace_end(const eng_p2p_t *self)
{
    const cl_config_t *cfg = self->ctx.cfg;
    return self->ctx.member_since(self->ctx.arg) + fmax(cfg->matchmaking_time, cfg->timeout);
}

static void on_timer(void *arg, double now);

eng_p2p_t *eng_p2p_new(const eng_p2p_ctx_t *ctx)
{
    eng_p2p_t *self = calloc(1, sizeof *self);
    if (self == NULL)
        return NULL;
    self->ctx = *ctx;
    self->q = cl_p2p_new();
    if (self == NULL)
        goto err_free;
    size_t per = (size_t)ctx->cfg->max_unexpected_msgs;
    cl_p2p_limits_t lim = {.peer_bytes = (size_t)ctx->cfg->max_unexpected_peer_mib << 20,
                           .peer_msgs = per,
                           .total_bytes = (size_t)ctx->cfg->max_unexpected_mib << 20,
                           .total_msgs = 4 * per};
    cl_p2p_set_limits(self->q, &lim);
    self->waiting = zlist_new();
    self->ssends = zlist_new();
    if (self->waiting == NULL || self->ssends == NULL)
        goto err_lists;
    self->flow = eng_flow_new(&self->ctx, self->q, self);
    if (self->flow == NULL)
        goto err_lists;
    self->timer = cl_timer_add(ctx->timers, on_timer, self);
    if (self->timer < 0) {
        eng_flow_destroy(&self->flow);
        goto err_lists;
    }
    return self;
err_lists:
    zlist_destroy(&self->ssends);
    zlist_destroy(&self->waiting);
    cl_p2p_destroy(&self->q);
err_free:
    free(self);
    return NULL;
}

void eng_p2p_destroy(eng_p2p_t **self_p)
{
    eng_p2p_t *self = self_p != NULL ? *self_p : NULL;
    if (self == NULL)
        return;
    collab_request_t *r;
    while ((r = zlist_pop(self->waiting)) != NULL)
        cl_request_complete(r, COLLAB_ERR_NOT_INIT);
    zlist_destroy(&self->waiting);
    eng_p2p_cancel_all(self);
    eng_flow_destroy(&self->flow);
    cl_timer_remove(self->ctx.timers, self->timer);
    zlist_destroy(&self->ssends);
    cl_p2p_destroy(&self->q);
    free(self->seen);
    free(self);
    *self_p = NULL;
}

void eng_p2p_mark_seen(eng_p2p_t *self, int w)
{
    if (w < 0)
        return;
    if (w >= self->nseen) {
        int n = w + 1 > 2 * self->nseen ? w + 1 : 2 * self->nseen;
        uint8_t *a = realloc(self->seen, (size_t)n);
        if (a == NULL)
            return;
        memset(a + self->nseen, 0, (size_t)(n - self->nseen));
        self->seen = a;
        self->nseen = n;
    }
    self->seen[w] = 1;
}

/* May a call on an absent comm rank r still wait for it to appear? */
static bool may_wait(eng_p2p_t *self, collab_comm_t *comm, int r)
{
    if (self->grace_over || now_of(self) >= grace_end(self))
        return false;
    int w = cl_comm_world_of(comm, r);
    return w >= 0 && (w >= self->nseen || self->seen[w] == 0);
}

typedef struct {
    int world;
    bool found;
} waits_ctx_t;

/* Never removes: looks for an entry world rank `world` could match. */
static bool waits_pred(void *ctx, const cl_p2p_posted_t *p)
{
    waits_ctx_t *c = ctx;
    collab_request_t *req = p->req;
    if (!c->found &&
        (p->src == COLLAB_ANY_SOURCE || cl_comm_world_of(req->comm, p->src) == c->world))
        c->found = true;
    return false;
}

static void waits_none(void *ctx, const cl_p2p_posted_t *p)
{
    (void)ctx;
    (void)p;
}

bool eng_p2p_waits_for(eng_p2p_t *self, int w)
{
    waits_ctx_t c = {w, false};
    (void)cl_p2p_remove_posted_if(self->q, waits_pred, waits_none, &c);
    return c.found;
}

/* Is comm rank r of comm a live member (or this peer)? */
static bool present(eng_p2p_t *self, collab_comm_t *comm, int r)
{
    int w = cl_comm_world_of(comm, r);
    return w >= 0 && (w == self_rank(self) || member_at(self, w) != NULL);
}

static int send_ctl(eng_p2p_t *self, cl_peer_t *p, uint64_t comm, int sub, uint64_t id)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_P2P_CTL;
    m.hdr.sub = (uint8_t)sub;
    m.hdr.comm = comm;
    m.hdr.seq = id;
    return send_to(self, p, &m);
}

/* Completes the pending synchronous send `id` on comm to world rank w
   (cancelled or matched); a late or unknown answer is ignored. */
static void ssend_done(eng_p2p_t *self, int w, uint64_t comm, uint64_t id, bool cancelled)
{
    for (collab_request_t *r = zlist_first(self->ssends); r != NULL; r = zlist_next(self->ssends)) {
        if (r->sync_id == id && r->sync_world == w && r->comm->id == comm) {
            zlist_remove(self->ssends, r);
            r->info.cancelled = cancelled ? 1 : 0;
            cl_request_complete(r, COLLAB_OK);
            return;
        }
    }
    cl_debug("an answer for synchronous send %llu from rank %d matches no pending send",
             (unsigned long long)id, w);
}

/* A receive (or matched probe) took a message: tells a synchronous
   sender (world rank `from`) that its send matched. */
static void matched(eng_p2p_t *self, uint64_t comm, uint64_t sync, int from)
{
    if (sync == 0)
        return;
    if (from == self_rank(self)) {
        ssend_done(self, from, comm, sync, false);
        return;
    }
    cl_peer_t *p = member_at(self, from);
    if (p != NULL) /* else the sender is gone: nobody waits */
        send_ctl(self, p, comm, CL_P2P_MATCHED, sync);
}

/* Gives an arriving message (comm, src, tag, data) to the waiting
   receives and probes, or queues it.  sync: the sender's synchronous-send
   id (0 for a standard send), from its world rank. */
static void arrive(eng_p2p_t *self, uint64_t comm, int src, int tag, const void *data, size_t len,
                   uint64_t sync, int from, bool granted)
{
    cl_p2p_posted_t p;
    while (cl_p2p_match_posted(self->q, comm, src, tag, &p)) {
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
            matched(self, comm, sync, from);
            return;
        }
        size_t n = len <= req->bytes ? len : req->bytes;
        if (n > 0)
            memcpy(req->buf, data, n);
        req->info.bytes = n;
        cl_request_complete(req, len <= req->bytes ? COLLAB_OK : COLLAB_ERR_TRUNCATE);
        matched(self, comm, sync, from);
        return;
    }
    int rc = from == self_rank(self)
                 ? cl_p2p_store_sync(self->q, comm, src, tag, data, len, sync, from)
             : granted ? cl_p2p_store_granted(self->q, comm, src, tag, data, len, sync, from)
                       : cl_p2p_store_from(self->q, comm, src, tag, data, len, sync, from);
    if (rc == CL_P2P_OVER_PEER || rc == CL_P2P_OVER_TOTAL) {
        uint64_t n = cl_p2p_dropped(self->q, from);
        if ((n & (n - 1)) == 0) {
            char desc[160];
            const cl_peer_t *p = member_at(self, from);
            if (p != NULL)
                self->ctx.desc(p, desc, sizeof desc);
            else
                snprintf(desc, sizeof desc, "rank %d", from);
            size_t bytes = 0, msgs = cl_p2p_queued_from(self->q, from, &bytes);
            cl_warn("dropped a point-to-point message (tag %d, %zu bytes) from %s: %zu of its "
                    "messages (%zu bytes) wait unreceived, more than %s allows (%llu of its "
                    "messages dropped so far)",
                    tag, len, desc, msgs, bytes,
                    rc == CL_P2P_OVER_TOTAL ? "COLLAB_MAX_UNEXPECTED"
                    : msgs >= (size_t)self->ctx.cfg->max_unexpected_msgs
                        ? "COLLAB_MAX_UNEXPECTED_MSGS"
                        : "COLLAB_MAX_UNEXPECTED_PER_PEER",
                    (unsigned long long)n);
        }
    } else if (rc != COLLAB_OK) {
        cl_error("out of memory queueing a message from rank %d; it is lost", src);
    }
}

void eng_p2p_send(eng_p2p_t *self, collab_request_t *req)
{
    collab_comm_t *comm = req->comm;
    int w = cl_comm_world_of(comm, req->peer);
    if (w < 0) {
        cl_request_complete(req, COLLAB_ERR_RANK);
        return;
    }
    if (req->sync && req->sync_id == 0)
        req->sync_id = ++self->sync_next;
    req->sync_world = w;
    if (w == self_rank(self)) {
        if (!req->sync) {
            arrive(self, comm->id, comm->rank, req->tag, req->sbuf, req->bytes, 0, w, false);
            cl_request_complete(req, COLLAB_OK);
            return;
        }
        /* Pending first: a posted receive matches it inside arrive. */
        if (zlist_append(self->ssends, req) != 0) {
            cl_request_complete(req, COLLAB_ERR_NO_MEM);
            return;
        }
        cl_request_taken(req);
        arrive(self, comm->id, comm->rank, req->tag, req->sbuf, req->bytes, req->sync_id, w, false);
        return;
    }
    cl_peer_t *p = member_at(self, w);
    if (p == NULL) {
        if (may_wait(self, comm, req->peer)) {
            if (zlist_append(self->waiting, req) != 0)
                cl_request_complete(req, COLLAB_ERR_NO_MEM);
            else
                cl_request_taken(req);
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
    m.hdr.sub = req->sync ? CL_P2P_SYNC : CL_P2P_STANDARD;
    m.hdr.seq = req->sync ? req->sync_id : 0;
    m.payload = req->sbuf;
    m.payload_len = req->bytes;
    int rc = eng_flow_p2p_send(self->flow, p, &m);
    if (rc != COLLAB_OK || !req->sync) {
        cl_request_complete(req, rc);
        return;
    }
    if (zlist_append(self->ssends, req) != 0)
        cl_request_complete(req, COLLAB_ERR_NO_MEM);
    else
        cl_request_taken(req);
}

void eng_p2p_recv(eng_p2p_t *self, collab_request_t *req)
{
    collab_comm_t *comm = req->comm;
    cl_p2p_msg_t *m = cl_p2p_find(self->q, comm->id, req->peer, req->tag, true);
    if (m != NULL) {
        size_t n = m->len <= req->bytes ? m->len : req->bytes;
        if (n > 0)
            memcpy(req->buf, m->data, n);
        req->info.source = m->src;
        req->info.tag = m->tag;
        req->info.bytes = n;
        int status = m->len <= req->bytes ? COLLAB_OK : COLLAB_ERR_TRUNCATE;
        matched(self, m->comm, m->sync, m->from);
        cl_p2p_msg_free(m);
        cl_request_complete(req, status);
        return;
    }
    if (req->peer != COLLAB_ANY_SOURCE && !present(self, comm, req->peer) &&
        !may_wait(self, comm, req->peer)) {
        cl_request_complete(req, COLLAB_ERR_PROC_FAILED);
        return;
    }
    cl_p2p_posted_t p = {comm->id, req->peer, req->tag, CL_P2P_RECV, req};
    if (cl_p2p_post(self->q, &p) != COLLAB_OK)
        cl_request_complete(req, COLLAB_ERR_NO_MEM);
}

void eng_p2p_probe(eng_p2p_t *self, collab_request_t *req)
{
    collab_comm_t *comm = req->comm;
    cl_p2p_msg_t *m = cl_p2p_find(self->q, comm->id, req->peer, req->tag, req->take);
    if (m != NULL) {
        req->info.source = m->src;
        req->info.tag = m->tag;
        req->info.bytes = m->len;
        req->found = true;
        if (req->take) {
            req->msg = m;
            matched(self, m->comm, m->sync, m->from);
        }
        cl_request_complete(req, COLLAB_OK);
        return;
    }
    if (!req->blocking) {
        req->found = false;
        cl_request_complete(req, COLLAB_OK);
        return;
    }
    if (req->peer != COLLAB_ANY_SOURCE && !present(self, comm, req->peer) &&
        !may_wait(self, comm, req->peer)) {
        cl_request_complete(req, COLLAB_ERR_PROC_FAILED);
        return;
    }
    cl_p2p_posted_t p = {comm->id, req->peer, req->tag, req->take ? CL_P2P_MPROBE : CL_P2P_PROBE,
                         req};
    if (cl_p2p_post(self->q, &p) != COLLAB_OK)
        cl_request_complete(req, COLLAB_ERR_NO_MEM);
}

/* MPI_Cancel of a send: one that has not left yet is cancelled here; a
   pending synchronous send asks its receiver to withdraw the message
   (the answer completes it); a standard send that has left completed. */
static void cancel_send(eng_p2p_t *self, collab_request_t *t)
{
    if (zlist_exists(self->waiting, t)) {
        zlist_remove(self->waiting, t);
        t->info.cancelled = 1;
        cl_request_complete(t, COLLAB_OK);
        return;
    }
    if (!zlist_exists(self->ssends, t))
        return;
    int me = self_rank(self);
    if (t->sync_world == me) {
        if (cl_p2p_withdraw(self->q, t->comm->id, me, t->sync_id))
            ssend_done(self, me, t->comm->id, t->sync_id, true);
        return;
    }
    if (eng_flow_cancel(self->flow, t->sync_world, t->comm->id, t->sync_id)) {
        /* Still waiting for credit here: it never left. */
        ssend_done(self, t->sync_world, t->comm->id, t->sync_id, true);
        return;
    }
    cl_peer_t *p = member_at(self, t->sync_world);
    if (p != NULL)
        send_ctl(self, p, t->comm->id, CL_P2P_CANCEL, t->sync_id);
}

void eng_p2p_cancel(eng_p2p_t *self, collab_request_t *req)
{
    collab_request_t *t = req->target;
    if (t != NULL && t->op == CL_OP_SEND) {
        cancel_send(self, t);
    } else if (t != NULL && cl_p2p_cancel(self->q, t)) {
        t->info.cancelled = 1;
        cl_request_complete(t, COLLAB_OK);
    }
    cl_request_complete(req, COLLAB_OK);
}

static void on_ctl(eng_p2p_t *self, cl_peer_t *from, const cl_wire_msg_t *m)
{
    switch (m->hdr.sub) {
    case CL_P2P_MATCHED:
    case CL_P2P_CANCELLED:
        ssend_done(self, from->rank, m->hdr.comm, m->hdr.seq, m->hdr.sub == CL_P2P_CANCELLED);
        break;
    case CL_P2P_CANCEL:
        if (cl_p2p_withdraw(self->q, m->hdr.comm, from->rank, m->hdr.seq))
            send_ctl(self, from, m->hdr.comm, CL_P2P_CANCELLED, m->hdr.seq);
        break;
    case CL_P2P_CREDIT:
        eng_flow_on_credit(self->flow, from, m);
        break;
    default: /* the codec lets no other value through */
        break;
    }
}

void eng_p2p_on_message(eng_p2p_t *self, cl_peer_t *from, const cl_wire_msg_t *m)
{
    if (m->hdr.type == CL_MSG_P2P_CTL) {
        on_ctl(self, from, m);
        return;
    }
    /* Flow control counts every message its sender sent, before any
       check of this peer's own could drop it. */
    int granted = eng_flow_p2p_admit(self->flow, from, m->payload_len);
    if (granted < 0)
        return;
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
    if (!self->ctx.comm_rank_is(self->ctx.arg, m->hdr.comm, src, from->rank)) {
        cl_warn("dropped a message claiming rank %d of a communicator from rank %d", src,
                from->rank);
        return;
    }
    arrive(self, m->hdr.comm, src, tag, m->payload, m->payload_len,
           m->hdr.sub == CL_P2P_SYNC ? m->hdr.seq : 0, from->rank, granted > 0);
}

typedef struct {
    eng_p2p_t *self;
    int world;  /* the rank that failed, or -1: every absent rank */
    int status; /* completion status of removed entries */
    bool cancelled;
    bool every; /* every posted entry, any source included (this peer left) */
} fail_ctx_t;

static bool fail_pred(void *ctx, const cl_p2p_posted_t *p)
{
    fail_ctx_t *f = ctx;
    collab_request_t *req = p->req;
    if (f->every)
        return true;
    if (p->src == COLLAB_ANY_SOURCE)
        return f->cancelled;
    if (f->cancelled)
        return true;
    int w = cl_comm_world_of(req->comm, p->src);
    if (f->world >= 0)
        return w == f->world;
    return !present(f->self, req->comm, p->src);
}

static void fail_fn(void *ctx, const cl_p2p_posted_t *p)
{
    fail_ctx_t *f = ctx;
    collab_request_t *req = p->req;
    if (f->cancelled)
        req->info.cancelled = 1;
    cl_request_complete(req, f->status);
}

/* Completes the pending synchronous sends to world rank w (every one
   when w < 0) with status; cancelled marks them cancelled. */
static void ssends_end(eng_p2p_t *self, int w, int status, bool cancelled)
{
    if (self->ssends == NULL)
        return;
    size_t n = zlist_size(self->ssends);
    for (size_t i = 0; i < n; i++) {
        collab_request_t *r = zlist_pop(self->ssends);
        if (w >= 0 && r->sync_world != w) {
            zlist_append(self->ssends, r); /* room: it was just there */
            continue;
        }
        r->info.cancelled = cancelled ? 1 : 0;
        cl_request_complete(r, status);
    }
}

void eng_p2p_peer_gone(eng_p2p_t *self, const cl_peer_t *p)
{
    int w = p->rank >= 0 ? p->rank : p->prev_rank;
    if (w < 0)
        return;
    fail_ctx_t f = {self, w, COLLAB_ERR_PROC_FAILED, false, false};
    cl_p2p_remove_posted_if(self->q, fail_pred, fail_fn, &f);
    ssends_end(self, w, COLLAB_ERR_PROC_FAILED, false);
    eng_flow_peer_gone(self->flow, w);
}

/* Retries sends that waited for their peer. */
static void retry_waiting(eng_p2p_t *self)
{
    size_t n = zlist_size(self->waiting);
    for (size_t i = 0; i < n; i++) {
        collab_request_t *req = zlist_pop(self->waiting);
        eng_p2p_send(self, req); /* completes it or queues it again */
    }
}

void eng_p2p_view_changed(eng_p2p_t *self)
{
    retry_waiting(self);
}

/* The end of the start-up grace; returns the next deadline (INFINITY
   once it ended). */
static double grace_timer(eng_p2p_t *self, double now)
{
    if (self->grace_over)
        return INFINITY;
    double end = grace_end(self);
    if (now < end)
        return end;
    self->grace_over = true;
    retry_waiting(self);
    fail_ctx_t f = {self, -1, COLLAB_ERR_PROC_FAILED, false, false};
    cl_p2p_remove_posted_if(self->q, fail_pred, fail_fn, &f);
    return INFINITY;
}

/* The component's deadline in the loop's set, while this peer is a
   member: the grace, the CREDIT round; re-armed at the next one.  Found
   no member, it stops until eng_p2p_member. */
static void on_timer(void *arg, double now)
{
    eng_p2p_t *self = arg;
    if (!self->ctx.is_member(self->ctx.arg))
        return;
    double next = grace_timer(self, now);
    next = fmin(next, eng_flow_timer(self->flow, now));
    if (!isinf(next))
        cl_timer_arm(self->ctx.timers, self->timer, next);
}

void eng_p2p_member(eng_p2p_t *self)
{
    if (self != NULL) /* the grace and the first CREDIT round are due from now */
        cl_timer_arm(self->ctx.timers, self->timer, now_of(self));
}

void eng_p2p_progress(eng_p2p_t *self)
{
    if (self == NULL)
        return;
    double poll = eng_flow_progress(self->flow); /* a FIFO waits for a link's version */
    if (!isinf(poll))
        cl_timer_arm_by(self->ctx.timers, self->timer, poll);
}

void eng_p2p_comm_free(eng_p2p_t *self, uint64_t comm)
{
    cl_p2p_drop_comm(self->q, comm);
}

int eng_p2p_coll_send(eng_p2p_t *self, const cl_peer_t *to, cl_wire_msg_t *m)
{
    return eng_flow_coll_send(self->flow, to, m);
}

int eng_p2p_coll_admit(eng_p2p_t *self, const cl_peer_t *from, size_t len)
{
    return eng_flow_coll_admit(self->flow, from, len);
}

bool eng_p2p_coll_refuse(eng_p2p_t *self, const cl_peer_t *from, size_t len)
{
    return eng_flow_coll_refuse(self->flow, from, len);
}

size_t eng_p2p_flow_waiting(const eng_p2p_t *self, int w, size_t *bytes)
{
    return eng_flow_waiting(self->flow, w, bytes);
}

size_t eng_p2p_coll_waiting(const eng_p2p_t *self, int w)
{
    return self != NULL ? eng_flow_coll_waiting(self->flow, w) : 0;
}

uint64_t eng_p2p_flow_refused(const eng_p2p_t *self, int w)
{
    return eng_flow_refused(self->flow, w);
}

void eng_p2p_fail_all(eng_p2p_t *self, int status)
{
    if (self == NULL)
        return;
    /* This peer left: nothing can arrive any more, so every posted receive
       and probe fails, whatever its source (a receive from a live rank or
       from any source would otherwise wait for ever). */
    fail_ctx_t f = {self, -1, status, false, true};
    cl_p2p_remove_posted_if(self->q, fail_pred, fail_fn, &f);
    collab_request_t *r;
    while (self->waiting != NULL && (r = zlist_pop(self->waiting)) != NULL)
        cl_request_complete(r, status);
    ssends_end(self, -1, status, false);
}

void eng_p2p_cancel_all(eng_p2p_t *self)
{
    if (self == NULL)
        return;
    fail_ctx_t f = {self, -1, COLLAB_OK, true, false};
    cl_p2p_remove_posted_if(self->q, fail_pred, fail_fn, &f);
    ssends_end(self, -1, COLLAB_OK, true);
}
