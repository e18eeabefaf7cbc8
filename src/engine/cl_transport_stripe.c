/*  cl_transport_stripe.c - striped links (docs/wire.md section 1.1).

    With COLLAB_STRIPES above 1, an outbound link that came up at version
    12 or later opens more connections to its peer, its stripes, when it
    first sends a large COLL message.  Each stripe runs its own CurveZMQ
    and swarm-key handshake, with CL_HELLO_STRIPE in its HELLO, and then
    carries COLL messages of STRIPE_MIN bytes or more only.  Such a
    message goes over the connection, the link's own included, with the
    fewest bytes not yet acknowledged by the peer's kernel, so a slower
    connection gets less.

    Collective messages need no order among themselves (each names its
    part and chunk), but everything else does: a GOODBYE must not overtake
    the data it follows.  So before the link's own connection carries any
    other message after stripe traffic, it carries a FENCE that counts the
    messages sent over the stripes so far.  The receiver holds what
    follows a FENCE on that connection until its stripes delivered that
    many, then hands it on in order.

    On the receiving side a stripe is an inbound connection of its own
    (in_link_t.stripe): it does not replace the sender's link, raises no
    UP event, and anything on it but a COLL message is malformed.  What a
    link holds is bounded (HOLD_BYTES, HOLD_MSGS, HOLD_BYTES_ALL); a
    sender that goes past the bounds is banned.
*/
#include "engine/cl_transport_int.h"

#include "engine/cl_tcpinfo.h"
#include "mpi_collab.h"
#include "util/cl_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ZMTP framing and the CurveZMQ box around one message's two frames,
   about: what the peer's kernel acknowledges beyond the bytes handed over. */
#define FRAME_COST (CL_WIRE_HDR_SIZE + 64)

/* COLLAB_STRIPES=auto: seconds at least between two samples of the
   upload, and at most for an interval between them to be measured. */
#define PROBE_EVERY 0.05
#define PROBE_GAP 0.25
/* Seconds a stripe beyond the count in use stays idle before it closes. */
#define DROP_IDLE 1.0
/* Seconds after its last hand-over a drained connection's count of
   bytes handed over is set to what its peer acknowledged. */
#define REBASE_AFTER 0.02

/* ---------------------------------------------------------------------- */
/* Sending. */

void cl_transport_io_threads(int stripes)
{
    if (stripes <= 1 || getenv("ZSYS_IO_THREADS") != NULL)
        return;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int n = stripes < TP_IO_THREADS_MAX ? stripes : TP_IO_THREADS_MAX;
    if (cpus > 0 && n > cpus)
        n = (int)cpus;
    void *ctx = zsys_init();
    if (ctx != NULL && n > zmq_ctx_get(ctx, ZMQ_IO_THREADS))
        zmq_ctx_set(ctx, ZMQ_IO_THREADS, n); /* no effect once a socket exists */
}

out_link_t *tp_stripe_open(cl_transport_t *self, out_link_t *l)
{
    int rc;
    out_link_t *s =
        tp_dealer_open(self, l->key, l->address, CL_HELLO_STRIPE, CL_WIRE_STRIPE_VERSION, &rc);
    if (s == NULL) {
        /* Out of sockets, say: the link goes on with what it has. */
        l->stripes_refused = true;
        return NULL;
    }
    s->primary = l;
    return s;
}

void tp_stripe_drop(cl_transport_t *self, out_link_t *s)
{
    out_link_t *l = s->primary;
    for (int i = 0; l != NULL && i < CL_TP_STRIPES_MAX - 1; i++)
        if (l->stripe[i] == s)
            l->stripe[i] = NULL;
    s->state = OL_DEAD;
    zlist_append(self->dead, s);
}

/* Connection c's kernel figures into *ti; false when the kernel cannot
   say (no socket, or one closed under us and perhaps reused: forgotten). */
static bool kernel_info(out_link_t *c, cl_tcpinfo_t *ti)
{
    if (c->bfd < 0)
        return false;
    if (cl_tcpinfo_read(c->bfd, ti) != 0 || ti->cookie != c->bcookie) {
        c->bfd = -1;
        return false;
    }
    return true;
}

/* Bytes handed to connection c that its peer's kernel has not
   acknowledged yet, when the kernel says (else -1).  `assigned` counts
   FRAME_COST per message, near but not exactly what goes out: when the
   kernel holds nothing unsent or unacknowledged and nothing was handed
   over for REBASE_AFTER s before `now` (libzmq's queue is empty then
   too), it is set to what was acknowledged, so that the error of many
   small messages does not add up. */
static int64_t unacked(out_link_t *c, double now)
{
    cl_tcpinfo_t ti;
    if (!kernel_info(c, &ti))
        return -1;
    if (ti.drained && now - c->handed_at > REBASE_AFTER)
        c->assigned = ti.acked;
    return (int64_t)c->assigned - (int64_t)ti.acked;
}

/* Whether connection c's socket holds nothing unsent or unacknowledged
   (true when the kernel cannot say). */
static bool drained(out_link_t *c)
{
    cl_tcpinfo_t ti;
    return !kernel_info(c, &ti) || ti.drained;
}

/* The connection of link l a large COLL message goes over: the one with
   the fewest unacknowledged bytes, or with the fewest bytes handed over
   when the kernel cannot say for one of them.  Opens missing stripes, and
   makes again one that was silent so long that the peer may have
   forgotten its connection. */
static out_link_t *pick(cl_transport_t *self, out_link_t *l, double now)
{
    out_link_t *c[CL_TP_STRIPES_MAX];
    int n = 0, use = tp_stripes_in_use(self);
    c[n++] = l;
    for (int i = use - 1; i < self->stripes - 1; i++) {
        /* Beyond the count in use (COLLAB_STRIPES=auto): closed once
           idle, the peer's kernel holding all it carried. */
        out_link_t *s = l->stripe[i];
        if (s != NULL && (s->state != OL_UP || (now - s->last_tx > DROP_IDLE && drained(s))))
            tp_stripe_drop(self, s);
    }
    for (int i = 0; i < use - 1 && !l->stripes_refused; i++) {
        out_link_t *s = l->stripe[i];
        if (s != NULL && s->state == OL_UP && now - s->last_tx > self->link_idle / 2) {
            tp_stripe_drop(self, s);
            s = NULL;
        }
        if (s == NULL)
            s = l->stripe[i] = tp_stripe_open(self, l);
        if (s != NULL && s->state == OL_UP)
            c[n++] = s;
    }
    int64_t u[CL_TP_STRIPES_MAX];
    bool kernel = true;
    for (int i = 0; i < n; i++)
        kernel = kernel && (u[i] = unacked(c[i], now)) >= 0;
    out_link_t *best = l;
    int64_t least = kernel ? u[0] : (int64_t)l->assigned;
    for (int i = 1; i < n; i++) {
        int64_t v = kernel ? u[i] : (int64_t)c[i]->assigned;
        if (v < least) {
            least = v;
            best = c[i];
        }
    }
    return best;
}

/* ---------------------------------------------------------------------- */
/* COLLAB_STRIPES=auto: the count in use, measured (cl_stripe_probe.h). */

int tp_stripes_in_use(const cl_transport_t *self)
{
    return self->stripes_auto ? cl_stripe_probe_count(&self->probe) : self->stripes;
}

/* Connection c's bytes acknowledged since its last sample, into *bytes;
   returns whether bytes wait in its socket. */
static bool probe_conn(out_link_t *c, uint64_t *bytes)
{
    cl_tcpinfo_t ti;
    if (c == NULL || c->state == OL_DEAD || !kernel_info(c, &ti))
        return false;
    if (c->pcookie == ti.cookie && ti.acked > c->packed)
        *bytes += ti.acked - c->packed;
    c->pcookie = ti.cookie; /* a connection seen first counts from here */
    c->packed = ti.acked;
    return ti.waiting;
}

void tp_stripe_probe(cl_transport_t *self, double now)
{
    if (self->probe_last > 0 && now - self->probe_last < PROBE_EVERY)
        return;
    uint64_t bytes = 0;
    bool waiting = false;
    int use = tp_stripes_in_use(self);
    for (out_link_t *l = zhashx_first(self->out_by_key); l != NULL;
         l = zhashx_next(self->out_by_key)) {
        /* A link is full when every connection it uses has bytes waiting:
           one connection still draining while the others are done (the
           tail of a transfer) says nothing of what the count gives. */
        int conns = 0, full = 0;
        for (int i = -1; i < CL_TP_STRIPES_MAX - 1; i++) {
            out_link_t *c = i < 0 ? l : l->stripe[i];
            bool w = probe_conn(c, &bytes);
            if (c != NULL && c->state == OL_UP && i < use - 1) {
                conns++;
                full += w;
            }
        }
        waiting = waiting || (conns > 0 && full == conns);
    }
    /* The interval counts when the upload was backlogged at its start and
       at its end, and the samples came close enough together to say it
       stayed so between. */
    double dt = self->probe_last > 0 ? now - self->probe_last : 0;
    bool counts = self->probe_waiting && waiting && dt > 0 && dt <= PROBE_GAP;
    cl_stripe_probe_t *p = &self->probe;
    int kept_before = p->now;
    int after = cl_stripe_probe_feed(p, now, counts ? dt : 0, counts ? (double)bytes : 0);
    self->probe_last = now;
    self->probe_waiting = waiting;
    if (after != use) {
        /* What the connections hold drains before the new count shows. */
        double queued = 0;
        for (out_link_t *l = zhashx_first(self->out_by_key); l != NULL;
             l = zhashx_next(self->out_by_key))
            for (int i = -1; i < CL_TP_STRIPES_MAX - 1; i++) {
                out_link_t *c = i < 0 ? l : l->stripe[i];
                int64_t u = c != NULL && c->state == OL_UP ? unacked(c, now) : -1;
                queued += u > 0 ? (double)u : 0;
            }
        cl_stripe_probe_queued(p, queued);
    }
    if (p->decided) {
        p->decided = false;
        char trying[32] = "";
        if (p->trial > 0)
            snprintf(trying, sizeof trying, ", trying %d", p->trial);
        /* At info: what the first round found, and later what changes
           the count kept; each later round's trials at debug. */
        cl_log(p->now != kept_before || (p->first_round && after != use) ? CL_LOG_INFO
                                                                          : CL_LOG_DEBUG,
               "stripes: %.1f Mbit/s uploaded with %d connection%s per link (%.1f with %d); "
               "%d kept%s",
               p->rate * 8e-6, p->from, p->from == 1 ? "" : "s", p->base_rate * 8e-6, p->base_n,
               p->now, trying);
    }
}

static int send_on(cl_transport_t *self, out_link_t *c, const uint8_t *hdr, uint8_t *body,
                   size_t blen)
{
    if (tp_send_raw(self, zsock_resolve(c->dealer), NULL, 0, hdr, body, blen) != 0)
        return -1;
    c->assigned += blen + FRAME_COST;
    c->handed_at = tp_now();
    return 0;
}

int tp_stripe_send(cl_transport_t *self, out_link_t *l, const uint8_t *hdr, uint8_t *body,
                   size_t blen)
{
    bool large = hdr[5] == CL_MSG_COLL && blen >= STRIPE_MIN;
    if (large && self->stripes > 1 && l->version >= CL_WIRE_STRIPE_VERSION && l->dealer != NULL &&
        !cl_shm_known(self->shm, l->key)) {
        double now = tp_now();
        out_link_t *c = pick(self, l, now);
        if (c != l) {
            if (send_on(self, c, hdr, body, blen) != 0)
                return -1;
            c->last_tx = now;
            l->stripe_sent++;
            return 0;
        }
    } else if (!large && l->stripe_sent != l->fenced) {
        cl_wire_msg_t f;
        memset(&f, 0, sizeof f);
        f.hdr.type = CL_MSG_FENCE;
        f.hdr.seq = l->stripe_sent;
        uint8_t fh[CL_WIRE_HDR_SIZE];
        uint8_t *fb;
        size_t fl;
        if (tp_encode(self, &f, l->version, fh, &fb, &fl) != COLLAB_OK ||
            send_on(self, l, fh, fb, fl) != 0) {
            free(body);
            errno = ENOMEM;
            return -1;
        }
        l->fenced = l->stripe_sent;
    }
    return send_on(self, l, hdr, body, blen);
}

/* ---------------------------------------------------------------------- */
/* Receiving. */

/* What the stripes of inbound link l delivered so far: those forgotten,
   and those still open that said HELLO after it. */
static uint64_t stripes_delivered(cl_transport_t *self, const in_link_t *l)
{
    uint64_t n = l->stripes_gone;
    for (const in_link_t *o = zhashx_first(self->in_by_rid); o != NULL;
         o = zhashx_next(self->in_by_rid))
        if (o->stripe && o->serial > l->serial && memcmp(o->key, l->key, 32) == 0)
            n += o->colls;
    return n;
}

void tp_in_held_free(cl_transport_t *self, in_link_t *l)
{
    tp_pending_free(l->held);
    self->held_bytes -= l->held_bytes < self->held_bytes ? l->held_bytes : self->held_bytes;
    l->held = l->held_tail = NULL;
    l->held_bytes = l->held_msgs = 0;
    l->hold = 0;
}

/* Keeps a copy of the message behind l's FENCE.  Returns false when the
   bounds do not allow it (the sender is banned, l forgotten). */
static bool hold(cl_transport_t *self, in_link_t *l, const uint8_t *hdr, const uint8_t *body,
                 size_t blen)
{
    if (l->held_msgs >= HOLD_MSGS || l->held_bytes + blen > HOLD_BYTES ||
        self->held_bytes + blen > HOLD_BYTES_ALL) {
        tp_malformed(self, l->key, "more sent behind a FENCE than a receiver holds");
        tp_in_link_delete(self, l);
        return false;
    }
    pending_msg_t *p = calloc(1, sizeof *p);
    uint8_t *copy = blen > 0 ? malloc(blen) : NULL;
    if (p == NULL || (blen > 0 && copy == NULL)) {
        free(p);
        free(copy);
        cl_error("out of memory holding a message behind a FENCE; dropping the link");
        tp_in_link_delete(self, l);
        return false;
    }
    memcpy(p->hdr, hdr, CL_WIRE_HDR_SIZE);
    if (blen > 0)
        memcpy(copy, body, blen);
    p->body = copy;
    p->blen = blen;
    if (l->held_tail != NULL)
        l->held_tail->next = p;
    else
        l->held = p;
    l->held_tail = p;
    l->held_bytes += blen;
    l->held_msgs++;
    self->held_bytes += blen;
    return true;
}

/* A message on link l (not a stripe) that nothing holds back. */
static void on_link(cl_transport_t *self, cl_tp_handler_fn *fn, void *ctx, in_link_t *l,
                    const cl_wire_msg_t *m, const uint8_t *hdr, const uint8_t *body, size_t blen)
{
    if (m->hdr.type == CL_MSG_FENCE) {
        if (stripes_delivered(self, l) < m->hdr.seq)
            l->hold = m->hdr.seq;
        return;
    }
    tp_emit(self, fn, ctx, l->key, m, hdr, body, blen);
}

/* Hands on what l holds, in order, while its stripes delivered what its
   FENCEs count.  l may be forgotten by a handler meanwhile. */
static void release(cl_transport_t *self, cl_tp_handler_fn *fn, void *ctx, in_link_t *l)
{
    char rhex[sizeof l->rid_hex];
    memcpy(rhex, l->rid_hex, sizeof rhex);
    while (l->hold > 0 && stripes_delivered(self, l) >= l->hold) {
        l->hold = 0;
        while (l->hold == 0 && l->held != NULL) {
            pending_msg_t *p = l->held;
            l->held = p->next;
            if (l->held == NULL)
                l->held_tail = NULL;
            l->held_bytes -= p->blen;
            l->held_msgs--;
            self->held_bytes -= p->blen < self->held_bytes ? p->blen : self->held_bytes;
            cl_wire_msg_t m;
            if (cl_wire_decode(p->hdr, CL_WIRE_HDR_SIZE, p->body, p->blen, &m) == CL_WIRE_OK) {
                on_link(self, fn, ctx, l, &m, p->hdr, p->body, p->blen);
                cl_wire_msg_clear(&m);
            }
            free(p->body);
            free(p);
            if (zhashx_lookup(self->in_by_rid, rhex) != l)
                return; /* forgotten (its held messages with it) */
        }
    }
}

void tp_in_message(cl_transport_t *self, cl_tp_handler_fn *fn, void *ctx, in_link_t *l,
                   const cl_wire_msg_t *m, const uint8_t *hdr, const uint8_t *body, size_t blen)
{
    if (l->stripe) {
        if (m->hdr.type != CL_MSG_COLL) {
            tp_malformed(self, l->key, "a message other than COLL on a stripe");
            tp_in_link_delete(self, l);
            return;
        }
        uint8_t key[32];
        memcpy(key, l->key, 32);
        uint64_t serial = l->serial;
        l->colls++;
        tp_emit(self, fn, ctx, key, m, hdr, body, blen);
        in_link_t *link = tp_inbound_of(self, key);
        if (link != NULL && link->hold > 0 && link->serial < serial)
            release(self, fn, ctx, link);
        return;
    }
    if (l->hold > 0) {
        (void)hold(self, l, hdr, body, blen);
        return;
    }
    on_link(self, fn, ctx, l, m, hdr, body, blen);
}
