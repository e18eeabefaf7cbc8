/*  cl_engine_flow.c - flow control of point-to-point messages on the
    engine thread (docs/wire.md section 10, wire version 6): the helper
    file of the point-to-point component (cl_engine_p2p.c), whose context
    and matching queues it uses (cl_engine_p2p_int.h).

    Each peer keeps, per other member (by world rank, reset when another
    key holds the rank), both sides of the credit accounting of cl_flow:
    - as a sender, what it sent that member and what the member granted,
      and its own FIFO of P2P messages that wait for credit.  A message
      goes out at once only when the FIFO is empty and the credit allows;
      otherwise it waits in the FIFO (a copy: a standard send has
      completed), and every later one waits behind it, so MPI's order
      holds.  A CREDIT lets the FIFO move.
    - as a receiver, what the member sent and what this peer granted it.
      A message past the grant can only come from a sender that ignored
      the protocol: it is dropped, counted, and its sender banned as a
      malformed one.  What waits unreceived in cl_p2p from that member
      tells what it consumed; a CREDIT goes out when a quarter of the
      window was consumed since the last one, when the member sent its
      first message (the grant grows from the protocol's initial limit to
      the window), when a receive waits and the member is near its
      grant, and every COLLAB_TIMEOUT/4 while anything is unreported.  A
      receive that waits for a member whose messages fill its grant here
      gives it one message more per round trip (the overdraft), so a
      program that receives out of order deeper than the bound goes on.
    Counts for a member begin anew when its holder fails, leaves or is
    removed (both sides forget them), when another key holds its rank,
    and, for every member, when this peer is a member again after it was
    removed.  Where this side may have begun anew before the other (the
    member is back after a removal, this peer rejoined, or this process
    restarted under its key less than 2 x COLLAB_TIMEOUT ago), a message
    past the grant within 2 x COLLAB_TIMEOUT meets the bounds of cl_p2p
    (dropped past them, without a ban) instead of the ban.
    The window of one sender is the per-peer bound (COLLAB_MAX_UNEXPECTED_
    PER_PEER, _MSGS; at least the protocol's initial limit); what all
    senders hold granted together stays within COLLAB_MAX_UNEXPECTED (and
    four times _MSGS): a sender whose share is short gets less, down to
    none beyond what it has, and then sends one message each time
    everything it sent was consumed.
    A link negotiated at version 5 keeps the behaviour of before: no
    credit, no FIFO, the bounds drop without a ban.  Until the version of
    a link is known (its handshake is under way), a sender keeps to the
    initial limit, which a version 6 receiver admits; the FIFO empties
    without credit once the link turns out to be version 5.
*/
#include "engine/cl_engine_p2p_int.h"

#include "engine/cl_engine_timer.h"
#include "engine/cl_flow.h"
#include "util/cl_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Seconds a sender that ignored its grant stays banned (as a malformed
   sender, docs/security.md section 5). */
#define FLOW_BAN_SECONDS 60.0

typedef struct flow_item {
    struct flow_item *next;
    uint64_t comm;
    uint32_t part, aux;
    uint8_t sub;
    uint64_t seq;
    size_t len;
    uint8_t data[]; /* the payload */
} flow_item_t;

typedef struct {
    bool used;
    uint8_t key[32];          /* the member holding this rank */
    int version;              /* negotiated wire version, 0 until known */
    cl_flow_tx_t tx;          /* to it */
    flow_item_t *head, *tail; /* waiting for credit, in order */
    size_t nitems;
    size_t item_bytes;
    cl_flow_rx_t rx;    /* from it */
    uint64_t refused;   /* its messages past the grant */
    bool gone;          /* its holder failed or left; counts forgotten */
    double grace_until; /* no ban before (docs/wire.md section 10) */
} flow_peer_t;

struct eng_flow {
    const eng_p2p_ctx_t *ctx; /* the component's (cl_engine_p2p.h) */
    cl_p2p_t *q;              /* its matching queues: what waits unreceived */
    eng_p2p_t *owner;         /* the component (eng_p2p_waits_for) */
    flow_peer_t *peers;       /* by world rank */
    size_t npeers;
    uint64_t incarnation;   /* this peer's, in its CREDITs */
    size_t waiting;         /* messages in every FIFO */
    double next_report;     /* the periodic CREDIT round */
    cl_flow_count_t window; /* per sender */
    cl_flow_count_t total;  /* all senders together */
    bool member;            /* this peer was a member at the last round */
    bool been_member;       /* ... at some round */
};

eng_flow_t *eng_flow_new(const eng_p2p_ctx_t *ctx, cl_p2p_t *q, eng_p2p_t *owner)
{
    struct eng_flow *f = calloc(1, sizeof *f);
    if (f == NULL)
        return NULL;
    f->ctx = ctx;
    f->q = q;
    f->owner = owner;
    f->incarnation = ctx->incarnation != 0 ? ctx->incarnation : 1;
    uint64_t per_bytes = (uint64_t)ctx->cfg->max_unexpected_peer_mib << 20;
    uint64_t per_msgs = (uint64_t)ctx->cfg->max_unexpected_msgs;
    f->window.msgs = per_msgs > CL_FLOW_INIT_MSGS ? per_msgs : CL_FLOW_INIT_MSGS;
    f->window.bytes = per_bytes > CL_FLOW_INIT_BYTES ? per_bytes : CL_FLOW_INIT_BYTES;
    f->total.msgs = 4 * per_msgs;
    f->total.bytes = (uint64_t)ctx->cfg->max_unexpected_mib << 20;
    return f;
}

static void drop_items(struct eng_flow *f, flow_peer_t *fp)
{
    flow_item_t *it = fp->head;
    while (it != NULL) {
        flow_item_t *next = it->next;
        free(it);
        it = next;
    }
    f->waiting -= fp->nitems;
    fp->head = fp->tail = NULL;
    fp->nitems = 0;
    fp->item_bytes = 0;
}

void eng_flow_destroy(eng_flow_t **self_p)
{
    struct eng_flow *f = self_p != NULL ? *self_p : NULL;
    if (f == NULL)
        return;
    for (size_t i = 0; i < f->npeers; i++)
        drop_items(f, &f->peers[i]);
    free(f->peers);
    free(f);
    *self_p = NULL;
}

static void reset_peer(struct eng_flow *f, flow_peer_t *fp, const uint8_t key[32])
{
    drop_items(f, fp);
    memset(fp, 0, sizeof *fp);
    fp->used = true;
    memcpy(fp->key, key, 32);
    cl_flow_tx_init(&fp->tx);
    cl_flow_rx_init(&fp->rx);
}

/* The entry of member p (its world rank), reset when another key holds
   the rank; NULL without a rank or memory. */
static flow_peer_t *peer_of(eng_flow_t *f, const cl_peer_t *p)
{
    if (f == NULL || p->rank < 0)
        return NULL;
    size_t w = (size_t)p->rank;
    if (w >= f->npeers) {
        size_t n = w + 1 > 2 * f->npeers ? w + 1 : 2 * f->npeers;
        flow_peer_t *a = realloc(f->peers, n * sizeof *a);
        if (a == NULL)
            return NULL;
        memset(a + f->npeers, 0, (n - f->npeers) * sizeof *a);
        f->peers = a;
        f->npeers = n;
    }
    flow_peer_t *fp = &f->peers[w];
    bool back = fp->used && fp->gone && memcmp(fp->key, p->key, 32) == 0;
    if (!fp->used || fp->gone || memcmp(fp->key, p->key, 32) != 0) {
        reset_peer(f, fp, p->key);
        /* Counts begin anew on this side only: the other may still count
           on the old ones for a moment (it was removed while alive and
           is back, or this process restarted under its key). */
        double now = f->ctx->now(f->ctx->arg), grace = 2 * f->ctx->cfg->timeout;
        fp->grace_until = back ? now + grace : f->ctx->t0 + grace;
    }
    return fp;
}

/* The link's version, once known. */
static int version_of(eng_flow_t *f, flow_peer_t *fp)
{
    if (fp->version == 0)
        fp->version = f->ctx->link_version(f->ctx->arg, fp->key);
    return fp->version;
}

static int send_item(eng_flow_t *f, const cl_peer_t *p, const flow_item_t *it)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_P2P;
    m.hdr.comm = it->comm;
    m.hdr.part = it->part;
    m.hdr.aux = it->aux;
    m.hdr.sub = it->sub;
    m.hdr.seq = it->seq;
    m.payload = it->data;
    m.payload_len = it->len;
    return f->ctx->send(f->ctx->arg, p, &m);
}

/* Sends what the credit (or a version 5 link) lets out of p's FIFO. */
static void flush(eng_flow_t *f, const cl_peer_t *p, flow_peer_t *fp)
{
    bool free_run = version_of(f, fp) != 0 && fp->version < 6;
    while (fp->head != NULL) {
        flow_item_t *it = fp->head;
        if (!free_run && !cl_flow_tx_may_send(&fp->tx, it->len))
            return;
        if (!free_run)
            cl_flow_tx_sent(&fp->tx, it->len);
        fp->head = it->next;
        if (fp->head == NULL)
            fp->tail = NULL;
        fp->nitems--;
        fp->item_bytes -= it->len;
        f->waiting--;
        (void)send_item(f, p, it); /* a failed link: as a failed eager send */
        free(it);
    }
}

int eng_flow_p2p_send(eng_flow_t *f, const cl_peer_t *p, cl_wire_msg_t *m)
{
    flow_peer_t *fp = peer_of(f, p);
    if (fp == NULL)
        return f->ctx->send(f->ctx->arg, p, m);
    int v = version_of(f, fp);
    if (v != 0 && v < 6) {
        if (fp->head != NULL)
            flush(f, p, fp);
        return f->ctx->send(f->ctx->arg, p, m);
    }
    if (fp->head == NULL && cl_flow_tx_may_send(&fp->tx, m->payload_len)) {
        cl_flow_tx_sent(&fp->tx, m->payload_len);
        return f->ctx->send(f->ctx->arg, p, m);
    }
    flow_item_t *it = malloc(sizeof *it + m->payload_len);
    if (it == NULL)
        return COLLAB_ERR_NO_MEM;
    it->next = NULL;
    it->comm = m->hdr.comm;
    it->part = m->hdr.part;
    it->aux = m->hdr.aux;
    it->sub = m->hdr.sub;
    it->seq = m->hdr.seq;
    it->len = m->payload_len;
    if (m->payload_len > 0)
        memcpy(it->data, m->payload, m->payload_len);
    if (fp->tail != NULL)
        fp->tail->next = it;
    else
        fp->head = it;
    fp->tail = it;
    fp->nitems++;
    fp->item_bytes += it->len;
    f->waiting++;
    return COLLAB_OK;
}

bool eng_flow_cancel(eng_flow_t *f, int w, uint64_t comm, uint64_t sync)
{
    if (f == NULL || w < 0 || (size_t)w >= f->npeers)
        return false;
    flow_peer_t *fp = &f->peers[w];
    flow_item_t *prev = NULL;
    for (flow_item_t *it = fp->head; it != NULL; prev = it, it = it->next) {
        if (it->sub == CL_P2P_SYNC && it->seq == sync && it->comm == comm) {
            if (prev != NULL)
                prev->next = it->next;
            else
                fp->head = it->next;
            if (fp->tail == it)
                fp->tail = prev;
            fp->nitems--;
            fp->item_bytes -= it->len;
            f->waiting--;
            free(it);
            return true;
        }
    }
    return false;
}

size_t eng_flow_waiting(const eng_flow_t *f, int w, size_t *bytes)
{
    if (bytes != NULL)
        *bytes = 0;
    if (f == NULL)
        return 0;
    if (w < 0) {
        size_t b = 0;
        for (size_t i = 0; i < f->npeers; i++)
            b += f->peers[i].item_bytes;
        if (bytes != NULL)
            *bytes = b;
        return f->waiting;
    }
    if ((size_t)w >= f->npeers)
        return 0;
    if (bytes != NULL)
        *bytes = f->peers[w].item_bytes;
    return f->peers[w].nitems;
}

void eng_flow_peer_gone(eng_flow_t *f, int w)
{
    if (f == NULL || w < 0 || (size_t)w >= f->npeers)
        return;
    flow_peer_t *fp = &f->peers[w];
    drop_items(f, fp);
    fp->gone = true;
}

/* ---------------------------------------------------------------------- */
/* The receiver's side. */

/* What of p's admitted messages still waits here, in flow units. */
static cl_flow_count_t queued_of(eng_flow_t *f, int w)
{
    size_t bytes = 0;
    size_t msgs = cl_p2p_queued_from(f->q, w, &bytes);
    cl_flow_count_t q;
    q.msgs = msgs;
    q.bytes = bytes - msgs * CL_P2P_MSG_COST + msgs * (uint64_t)CL_FLOW_MSG_COST;
    return q;
}

int eng_flow_p2p_admit(eng_flow_t *f, const cl_peer_t *from, size_t len)
{
    flow_peer_t *fp = peer_of(f, from);
    if (fp == NULL)
        return 0;
    if (version_of(f, fp) < 6)
        return 0;
    if (cl_flow_rx_admit(&fp->rx, len, queued_of(f, from->rank)))
        return 1;
    if (f->ctx->now(f->ctx->arg) < fp->grace_until) {
        /* Within the grace the bounds decide, without a ban. */
        cl_flow_rx_count(&fp->rx, len);
        cl_debug("a point-to-point message from rank %d passed its grant within the grace of "
                 "new counts; the bounds apply",
                 from->rank);
        return 0;
    }
    fp->refused++;
    char desc[CL_WIRE_STR_MAX + 64];
    cl_warn("dropped a point-to-point message (%zu bytes) from %s: it passed the credit this "
            "peer granted (%llu messages, %llu bytes; it sent %llu, %llu); ignoring the peer "
            "for %.0f s",
            len, f->ctx->desc(from, desc, sizeof desc), (unsigned long long)fp->rx.limit.msgs,
            (unsigned long long)fp->rx.limit.bytes, (unsigned long long)fp->rx.arrived.msgs + 1,
            (unsigned long long)(fp->rx.arrived.bytes + cl_flow_cost(len)), FLOW_BAN_SECONDS);
    f->ctx->ban(f->ctx->arg, from->key, FLOW_BAN_SECONDS);
    return -1;
}

uint64_t eng_flow_refused(const eng_flow_t *f, int w)
{
    return f != NULL && w >= 0 && (size_t)w < f->npeers ? f->peers[w].refused : 0;
}

void eng_flow_on_credit(eng_flow_t *f, const cl_peer_t *from, const cl_wire_msg_t *m)
{
    flow_peer_t *fp = peer_of(f, from);
    if (fp == NULL)
        return;
    const cl_wire_credit_t *c = &m->u.credit;
    if (!cl_flow_tx_credit(&fp->tx, c->incarnation, &c->cls[CL_CREDIT_P2P])) {
        char desc[CL_WIRE_STR_MAX + 64];
        cl_debug("ignored a CREDIT from %s: it reports %llu messages consumed, of %llu sent",
                 f->ctx->desc(from, desc, sizeof desc),
                 (unsigned long long)c->cls[CL_CREDIT_P2P].consumed_msgs,
                 (unsigned long long)fp->tx.sent.msgs);
        return;
    }
    flush(f, from, fp);
}

/* The window this peer can grant sender w now: its per-peer window,
   less what the total lacks. */
static cl_flow_count_t window_for(eng_flow_t *f, size_t w)
{
    cl_flow_count_t others = {0, 0};
    for (size_t i = 0; i < f->npeers; i++) {
        if (i == w || !f->peers[i].used || f->peers[i].version < 6)
            continue;
        cl_flow_count_t o = cl_flow_rx_outstanding(
            &f->peers[i].rx, cl_flow_rx_consumed(&f->peers[i].rx, queued_of(f, (int)i)));
        others.msgs += o.msgs;
        others.bytes += o.bytes;
    }
    cl_flow_count_t win = f->window;
    uint64_t room_m = f->total.msgs > others.msgs ? f->total.msgs - others.msgs : 0;
    uint64_t room_b = f->total.bytes > others.bytes ? f->total.bytes - others.bytes : 0;
    if (room_m < win.msgs)
        win.msgs = room_m;
    if (room_b < win.bytes)
        win.bytes = room_b;
    return win;
}

static void send_credit(eng_flow_t *f, const cl_peer_t *p, flow_peer_t *fp,
                        cl_flow_count_t consumed, size_t w, bool overdraft)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_P2P_CTL;
    m.hdr.sub = CL_P2P_CREDIT;
    m.u.credit.incarnation = f->incarnation;
    if (overdraft)
        cl_flow_rx_overdraft(&fp->rx, consumed, (size_t)f->ctx->cfg->max_message_mib << 20,
                             &m.u.credit.cls[CL_CREDIT_P2P]);
    else
        cl_flow_rx_grant(&fp->rx, consumed, window_for(f, w), &m.u.credit.cls[CL_CREDIT_P2P]);
    /* Class EARLY is not limited yet (docs/wire.md section 10). */
    m.u.credit.cls[CL_CREDIT_EARLY].limit_msgs = UINT64_MAX;
    m.u.credit.cls[CL_CREDIT_EARLY].limit_bytes = UINT64_MAX;
    (void)f->ctx->send(f->ctx->arg, p, &m);
}

/* Sends the CREDITs that are due.  periodic: every unreported
   consumption; otherwise a quarter of the window, or any when a receive
   of this peer waits and the sender is near its grant (it may hold the
   message that receive waits for).  A sender whose messages wait here
   unreceived while a receive waits for one of its others gets one
   message beyond the bound per round trip (the overdraft): a program
   that takes its messages in another order than they were sent, deeper
   than the bound, goes on as with eager buffering, its memory growing
   only as far as its own receives ask. */
static void report(eng_flow_t *f, bool periodic)
{
    bool waits = cl_p2p_posted(f->q) > 0;
    for (size_t i = 0; i < f->npeers; i++) {
        flow_peer_t *fp = &f->peers[i];
        if (!fp->used || fp->rx.arrived.msgs == 0 || fp->version < 6)
            continue;
        cl_flow_count_t queued = queued_of(f, (int)i);
        cl_flow_count_t consumed = cl_flow_rx_consumed(&fp->rx, queued);
        const cl_flow_rx_t *rx = &fp->rx;
        bool near = rx->limit.msgs - rx->arrived.msgs < f->window.msgs / 4 + 1 ||
                    rx->limit.bytes - rx->arrived.bytes < f->window.bytes / 4 + 1;
        bool due = cl_flow_rx_due(rx, consumed, f->window, periodic || (waits && near));
        bool overdraft = !due && waits && near && cl_flow_rx_overdraft_due(rx, queued, periodic) &&
                         eng_p2p_waits_for(f->owner, (int)i);
        if (!due && !overdraft)
            continue;
        cl_peer_t *p = f->ctx->member_at(f->ctx->arg, (int)i);
        if (p == NULL || memcmp(p->key, fp->key, 32) != 0)
            continue;
        send_credit(f, p, fp, consumed, i, overdraft);
    }
}

/* This peer is a member again after it was removed while alive: every
   other member forgot its counts for it (eng_flow_peer_gone), so it
   forgets its own, both ways.  What waits in its FIFOs goes out under the
   new counts; the grace covers messages of the old ones still arriving. */
static void rejoined(eng_flow_t *f)
{
    double until = f->ctx->now(f->ctx->arg) + 2 * f->ctx->cfg->timeout;
    for (size_t i = 0; i < f->npeers; i++) {
        flow_peer_t *fp = &f->peers[i];
        if (!fp->used)
            continue;
        cl_flow_tx_init(&fp->tx);
        cl_flow_rx_init(&fp->rx);
        fp->version = 0;
        fp->gone = false;
        fp->grace_until = until;
    }
}

void eng_flow_progress(eng_flow_t *f)
{
    if (f == NULL)
        return;
    bool member = f->ctx->is_member(f->ctx->arg);
    if (member && !f->member && f->been_member)
        rejoined(f);
    f->member = member;
    f->been_member |= member;
    if (member)
        report(f, false);
}

double eng_flow_timer(eng_flow_t *f, double now)
{
    if (f == NULL)
        return now + ENG_IDLE_WAKE;
    if (now >= f->next_report) {
        f->next_report = now + f->ctx->cfg->timeout / 4;
        if (f->ctx->is_member(f->ctx->arg))
            report(f, true);
    }
    /* A FIFO whose link's version is not known yet empties at once when
       it turns out to be 5; look again soon. */
    bool unknown = false;
    for (size_t i = 0; i < f->npeers && f->waiting > 0; i++) {
        flow_peer_t *fp = &f->peers[i];
        if (fp->head == NULL)
            continue;
        cl_peer_t *p = f->ctx->member_at(f->ctx->arg, (int)i);
        if (p == NULL || memcmp(p->key, fp->key, 32) != 0)
            continue;
        if (version_of(f, fp) == 0)
            unknown = true;
        else
            flush(f, p, fp);
    }
    return unknown && now + ENG_FLOW_VERSION_POLL < f->next_report ? now + ENG_FLOW_VERSION_POLL
                                                                   : f->next_report;
}
