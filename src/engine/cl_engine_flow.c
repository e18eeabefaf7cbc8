/*  cl_engine_flow.c - flow control of point-to-point messages (class
    P2P, wire version 6) and of collective messages (class EARLY, wire
    version 8) on the engine thread (docs/wire.md section 10): the helper
    file of the point-to-point component (cl_engine_p2p.c), whose context
    and matching queues it uses (cl_engine_p2p_int.h).

    Class EARLY works as class P2P below, with these differences: it
    counts every COLL message to or from another member (eng_send and
    eng_coll_on_message call in here), with its own FIFO per receiver;
    the receiver's unconsumed messages are those waiting in the early
    buffer (the context's early_queued); the overdraft goes to a sender
    while a stalled running collective has it (coll_waits_for); and a
    message past the grant is not refused here: it goes on to the route,
    delivered if its collective runs, kept early only within the bounds,
    and what they drop is named (eng_flow_coll_refuse), without a ban,
    and reported to the group (the caller: cl_engine_route.c).  The
    overdraft's bytes are only the room left under the caps (twice the
    sender's window held here, the total from all), not one message of
    the largest size: while the count granted before is not used up,
    those bytes would carry many small messages.

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
      malformed one (for COLLAB_BAN_TIME).  What waits unreceived in
      cl_p2p from that member tells what it consumed; a CREDIT goes out
      when a quarter of the window was consumed since the last one, when
      the member sent its first message (the grant grows from the
      protocol's initial limit to the window), when a receive waits and
      the member is near its grant, and every COLLAB_TIMEOUT/4 while
      anything is unreported.  A receive that waits for a member whose
      messages fill its grant here gives it one message more per round
      trip (the overdraft), so a program that receives out of order
      deeper than the bound goes on.
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

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct flow_item {
    struct flow_item *next;
    cl_wire_hdr_t hdr; /* as the message would have gone out (P2P or COLL) */
    size_t len;
    uint8_t data[]; /* the payload */
} flow_item_t;

/* One FIFO of messages waiting for credit. */
typedef struct {
    flow_item_t *head, *tail; /* in order */
    size_t nitems;
    size_t item_bytes;
} flow_fifo_t;

typedef struct {
    bool used;
    uint8_t key[32];          /* the member holding this rank */
    int version;              /* negotiated wire version, 0 until known */
    cl_flow_tx_t tx;    /* to it, class P2P */
    flow_fifo_t fifo;   /* P2P messages waiting for credit */
    cl_flow_tx_t etx;   /* to it, class EARLY (every COLL message) */
    flow_fifo_t efifo;  /* COLL messages waiting for credit */
    cl_flow_rx_t rx;    /* from it, class P2P */
    cl_flow_rx_t erx;   /* from it, class EARLY */
    uint64_t refused;   /* its messages past the grant (both classes) */
    double reported_at; /* its last report for early messages past the grant */
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
    cl_flow_count_t window; /* per sender (both classes) */
    cl_flow_count_t total;  /* all senders together (per class) */
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

static void drop_fifo(struct eng_flow *f, flow_fifo_t *q)
{
    flow_item_t *it = q->head;
    while (it != NULL) {
        flow_item_t *next = it->next;
        free(it);
        it = next;
    }
    f->waiting -= q->nitems;
    memset(q, 0, sizeof *q);
}

static void drop_items(struct eng_flow *f, flow_peer_t *fp)
{
    drop_fifo(f, &fp->fifo);
    drop_fifo(f, &fp->efifo);
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
    cl_flow_tx_init(&fp->etx);
    cl_flow_rx_init(&fp->erx);
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
    m.hdr = it->hdr;
    m.payload = it->data;
    m.payload_len = it->len;
    return f->ctx->send(f->ctx->arg, p, &m);
}

/* Sends what the credit tx (or, free_run, a link without it) lets out of
   FIFO q, counting it. */
static void flush_fifo(eng_flow_t *f, const cl_peer_t *p, flow_fifo_t *q, cl_flow_tx_t *tx,
                       bool free_run)
{
    while (q->head != NULL) {
        flow_item_t *it = q->head;
        if (!free_run && !cl_flow_tx_may_send(tx, it->len))
            return;
        if (!free_run)
            cl_flow_tx_sent(tx, it->len);
        q->head = it->next;
        if (q->head == NULL)
            q->tail = NULL;
        q->nitems--;
        q->item_bytes -= it->len;
        f->waiting--;
        (void)send_item(f, p, it); /* a failed link: as a failed eager send */
        free(it);
    }
}

/* Sends what the credit (or a link without flow control) lets out of p's
   FIFOs. */
static void flush(eng_flow_t *f, const cl_peer_t *p, flow_peer_t *fp)
{
    int v = version_of(f, fp);
    flush_fifo(f, p, &fp->fifo, &fp->tx, v != 0 && v < 6);
    flush_fifo(f, p, &fp->efifo, &fp->etx, v != 0 && v < ENG_FLOW_EARLY_VERSION);
}

/* Appends a copy of m to q; COLLAB_ERR_NO_MEM without memory. */
static int enqueue(eng_flow_t *f, flow_fifo_t *q, const cl_wire_msg_t *m)
{
    flow_item_t *it = malloc(sizeof *it + m->payload_len);
    if (it == NULL)
        return COLLAB_ERR_NO_MEM;
    it->next = NULL;
    it->hdr = m->hdr;
    it->len = m->payload_len;
    if (m->payload_len > 0)
        memcpy(it->data, m->payload, m->payload_len);
    if (q->tail != NULL)
        q->tail->next = it;
    else
        q->head = it;
    q->tail = it;
    q->nitems++;
    q->item_bytes += it->len;
    f->waiting++;
    return COLLAB_OK;
}

/* Sends m to p in one class (its FIFO q, its credit tx): at once on a
   link older than min_version (after what still waits there), at once
   when nothing waits and the credit allows it, else queued behind the
   rest.  The program goes on either way: a standard send's payload is
   copied, and a rooted collective's part that only sends completes while
   its message waits (MPI allows it). */
static int class_send(eng_flow_t *f, const cl_peer_t *p, flow_peer_t *fp, cl_wire_msg_t *m,
                      flow_fifo_t *q, cl_flow_tx_t *tx, int min_version)
{
    int v = version_of(f, fp);
    if (v != 0 && v < min_version) {
        if (q->head != NULL)
            flush(f, p, fp);
        return f->ctx->send(f->ctx->arg, p, m);
    }
    if (q->head == NULL && cl_flow_tx_may_send(tx, m->payload_len)) {
        cl_flow_tx_sent(tx, m->payload_len);
        return f->ctx->send(f->ctx->arg, p, m);
    }
    return enqueue(f, q, m);
}

int eng_flow_p2p_send(eng_flow_t *f, const cl_peer_t *p, cl_wire_msg_t *m)
{
    flow_peer_t *fp = peer_of(f, p);
    if (fp == NULL)
        return f->ctx->send(f->ctx->arg, p, m);
    return class_send(f, p, fp, m, &fp->fifo, &fp->tx, 6);
}

int eng_flow_coll_send(eng_flow_t *f, const cl_peer_t *p, cl_wire_msg_t *m)
{
    flow_peer_t *fp = peer_of(f, p);
    if (fp == NULL)
        return f->ctx->send(f->ctx->arg, p, m);
    return class_send(f, p, fp, m, &fp->efifo, &fp->etx, ENG_FLOW_EARLY_VERSION);
}

bool eng_flow_cancel(eng_flow_t *f, int w, uint64_t comm, uint64_t sync)
{
    if (f == NULL || w < 0 || (size_t)w >= f->npeers)
        return false;
    flow_fifo_t *q = &f->peers[w].fifo;
    flow_item_t *prev = NULL;
    for (flow_item_t *it = q->head; it != NULL; prev = it, it = it->next) {
        if (it->hdr.sub == CL_P2P_SYNC && it->hdr.seq == sync && it->hdr.comm == comm) {
            if (prev != NULL)
                prev->next = it->next;
            else
                q->head = it->next;
            if (q->tail == it)
                q->tail = prev;
            q->nitems--;
            q->item_bytes -= it->len;
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
            b += f->peers[i].fifo.item_bytes + f->peers[i].efifo.item_bytes;
        if (bytes != NULL)
            *bytes = b;
        return f->waiting;
    }
    if ((size_t)w >= f->npeers)
        return 0;
    const flow_peer_t *fp = &f->peers[w];
    if (bytes != NULL)
        *bytes = fp->fifo.item_bytes + fp->efifo.item_bytes;
    return fp->fifo.nitems + fp->efifo.nitems;
}

size_t eng_flow_coll_waiting(const eng_flow_t *f, int w)
{
    if (f == NULL || w < 0 || (size_t)w >= f->npeers)
        return 0;
    return f->peers[w].efifo.nitems;
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

/* What of w's admitted messages of one class still waits here, in flow
   units: class P2P in cl_p2p's unexpected queue, class EARLY in the
   collectives' early buffer. */
static cl_flow_count_t queued_of(eng_flow_t *f, int w, bool early)
{
    size_t bytes = 0;
    cl_flow_count_t q;
    if (early) {
        size_t msgs =
            f->ctx->early_queued != NULL ? f->ctx->early_queued(f->ctx->arg, w, &bytes) : 0;
        q.msgs = msgs;
        q.bytes = bytes + msgs * (uint64_t)CL_FLOW_MSG_COST;
        return q;
    }
    size_t msgs = cl_p2p_queued_from(f->q, w, &bytes);
    q.msgs = msgs;
    q.bytes = bytes - msgs * CL_P2P_MSG_COST + msgs * (uint64_t)CL_FLOW_MSG_COST;
    return q;
}

/* A message of one class and len bytes from `from`: see eng_flow_p2p_admit. */
static int admit(eng_flow_t *f, const cl_peer_t *from, size_t len, bool early)
{
    flow_peer_t *fp = peer_of(f, from);
    if (fp == NULL)
        return 0;
    if (version_of(f, fp) < (early ? ENG_FLOW_EARLY_VERSION : 6))
        return 0;
    cl_flow_rx_t *rx = early ? &fp->erx : &fp->rx;
    if (cl_flow_rx_admit(rx, len, queued_of(f, from->rank, early)))
        return 1;
    const char *what = early ? "collective" : "point-to-point";
    if (f->ctx->now(f->ctx->arg) < fp->grace_until) {
        /* Within the grace the bounds decide, without a ban. */
        cl_flow_rx_count(rx, len);
        cl_debug("a %s message from rank %d passed its grant within the grace of new counts; "
                 "the bounds apply",
                 what, from->rank);
        return 0;
    }
    if (early) {
        /* Counted, and delivered if its collective runs (it holds nothing
           then); kept in the early buffer only within its bounds
           (eng_flow_coll_refuse names what they drop). */
        cl_flow_rx_count(rx, len);
        return -1;
    }
    fp->refused++;
    char desc[CL_WIRE_STR_MAX + 64];
    cl_warn("dropped a %s message (%zu bytes) from %s: it passed the credit this peer granted "
            "(%llu messages, %llu bytes; it sent %llu, %llu); ignoring the peer for %.0f s",
            what, len, f->ctx->desc(from, desc, sizeof desc), (unsigned long long)rx->limit.msgs,
            (unsigned long long)rx->limit.bytes, (unsigned long long)rx->arrived.msgs + 1,
            (unsigned long long)(rx->arrived.bytes + cl_flow_cost(len)), f->ctx->cfg->ban_time);
    /* As long as a malformed sender (COLLAB_BAN_TIME, docs/wire.md section 10). */
    f->ctx->ban(f->ctx->arg, from->key, f->ctx->cfg->ban_time);
    return -1;
}

int eng_flow_p2p_admit(eng_flow_t *f, const cl_peer_t *from, size_t len)
{
    return admit(f, from, len, false);
}

int eng_flow_coll_admit(eng_flow_t *f, const cl_peer_t *from, size_t len)
{
    return admit(f, from, len, true);
}

bool eng_flow_coll_refuse(eng_flow_t *f, const cl_peer_t *from, size_t len)
{
    flow_peer_t *fp = peer_of(f, from);
    if (fp == NULL)
        return false;
    /* Dropped and named, not banned, and reported to the group.  A
       sender past its grant meets the early buffer's bounds (as on a
       link without flow control), and only a message they drop is
       refused here.  An honest sender never passes its grant (outside
       the grace of new counts, where nothing comes here), so only one
       that ignores the protocol loses messages.  But a message of a
       member that this receiver alone drops makes it disagree with the
       others about that member's part in the collective the message is
       for: this receiver would wait for it while the others have it
       (tried: with the overdraft's bytes held within the caps, a victim
       of attack_early dropped the flooder's own collective messages and
       the honest all-reduces came out wrong).  So the drop is reported
       (the caller takes the sender out of the group through the
       coordinator, whose view every member applies, and every member
       runs the collective again without it), never decided here alone.
       Not a ban either: by one receiver alone that takes the sender out
       of this receiver's view only (tried: the others' all-reduces of
       attack_flood came out wrong).  Named at the first drop and every
       power of two after it; reported at the first and at most once
       every COLLAB_TIMEOUT / 4 after it. */
    fp->refused++;
    double now = f->ctx->now(f->ctx->arg);
    bool report = fp->refused == 1 || now >= fp->reported_at + f->ctx->cfg->timeout / 4;
    if (report)
        fp->reported_at = now;
    if ((fp->refused & (fp->refused - 1)) != 0)
        return report;
    char desc[CL_WIRE_STR_MAX + 64];
    cl_warn("dropped a collective message (%zu bytes) from %s: it passed the credit this peer "
            "granted for early collective messages (%llu messages, %llu bytes; it sent %llu, "
            "%llu; %llu of its messages dropped so far); asking to take it out of the group",
            len, f->ctx->desc(from, desc, sizeof desc), (unsigned long long)fp->erx.limit.msgs,
            (unsigned long long)fp->erx.limit.bytes, (unsigned long long)fp->erx.arrived.msgs,
            (unsigned long long)fp->erx.arrived.bytes, (unsigned long long)fp->refused);
    return report;
}

uint64_t eng_flow_refused(const eng_flow_t *f, int w)
{
    return f != NULL && w >= 0 && (size_t)w < f->npeers ? f->peers[w].refused : 0;
}

/* Applies one class of a CREDIT from `from` to tx. */
static void apply_credit(eng_flow_t *f, const cl_peer_t *from, cl_flow_tx_t *tx,
                         const cl_wire_credit_t *c, int cls)
{
    uint64_t before = tx->sent.msgs;
    /* Class EARLY's receivers never ban: counts out of step are set right
       from the receiver's (cl_flow_tx_credit_resync); class P2P's ban a
       sender past its grant, so an impossible CREDIT is ignored there. */
    if (cls == CL_CREDIT_EARLY ? cl_flow_tx_credit_resync(tx, c->incarnation, &c->cls[cls])
                               : cl_flow_tx_credit(tx, c->incarnation, &c->cls[cls])) {
        if (tx->sent.msgs != before && cls == CL_CREDIT_EARLY) {
            char desc[CL_WIRE_STR_MAX + 64];
            cl_debug("class %d counts to %s set from its CREDIT: %llu messages consumed, %llu "
                     "sent here",
                     cls, f->ctx->desc(from, desc, sizeof desc),
                     (unsigned long long)c->cls[cls].consumed_msgs, (unsigned long long)before);
        }
        return;
    }
    char desc[CL_WIRE_STR_MAX + 64];
    cl_debug("ignored class %d of a CREDIT from %s: it reports %llu messages consumed, of %llu "
             "sent",
             cls, f->ctx->desc(from, desc, sizeof desc),
             (unsigned long long)c->cls[cls].consumed_msgs, (unsigned long long)tx->sent.msgs);
}

void eng_flow_on_credit(eng_flow_t *f, const cl_peer_t *from, const cl_wire_msg_t *m)
{
    flow_peer_t *fp = peer_of(f, from);
    if (fp == NULL)
        return;
    const cl_wire_credit_t *c = &m->u.credit;
    apply_credit(f, from, &fp->tx, c, CL_CREDIT_P2P);
    /* Class EARLY means something only on a link of version 8 or later:
       an older receiver sends consumed 0 and limits 2^64 - 1. */
    if (version_of(f, fp) >= ENG_FLOW_EARLY_VERSION)
        apply_credit(f, from, &fp->etx, c, CL_CREDIT_EARLY);
    flush(f, from, fp);
}

/* The window this peer can grant sender w now in one class: its per-peer
   window, less what the class's total lacks.  Each class has its own
   buffer here (the unexpected queue, the early buffer), each within the
   bounds of docs/security.md section 5. */
static cl_flow_count_t early_window(eng_flow_t *f, size_t w);

static cl_flow_count_t window_for(eng_flow_t *f, size_t w, bool early)
{
    if (early)
        return early_window(f, w);
    cl_flow_count_t others = {0, 0};
    int min_version = early ? ENG_FLOW_EARLY_VERSION : 6;
    for (size_t i = 0; i < f->npeers; i++) {
        if (i == w || !f->peers[i].used || f->peers[i].version < min_version)
            continue;
        const cl_flow_rx_t *rx = early ? &f->peers[i].erx : &f->peers[i].rx;
        cl_flow_count_t o =
            cl_flow_rx_outstanding(rx, cl_flow_rx_consumed(rx, queued_of(f, (int)i, early)));
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

/* Class EARLY's window for sender w: the per-peer window, or its even
   share of the total among the senders of this class, whichever is
   smaller.  Not what the others leave, as class P2P: every member of a
   group sends collective messages to every other, so with more than
   total / per-peer senders (three at the defaults) the first ones would
   hold the total and the others wait for a CREDIT at every message.  A
   grant never shrinks, so while a new sender's arrival shrinks the
   shares, the grants outstanding may pass the total by the shares given
   before it, until those are consumed. */
static cl_flow_count_t early_window(eng_flow_t *f, size_t w)
{
    uint64_t n = 1;
    for (size_t i = 0; i < f->npeers; i++) {
        const flow_peer_t *fp = &f->peers[i];
        if (i != w && fp->used && fp->version >= ENG_FLOW_EARLY_VERSION &&
            (fp->erx.told || fp->erx.arrived.msgs > 0))
            n++;
    }
    cl_flow_count_t win = f->window;
    if (f->total.msgs / n < win.msgs)
        win.msgs = f->total.msgs / n;
    if (f->total.bytes / n < win.bytes)
        win.bytes = f->total.bytes / n;
    return win;
}

/* What one class of a CREDIT to sender w says: a grant of the window, or
   (overdraft) one message beyond the bound, of up to `bytes`. */
static void fill_class(eng_flow_t *f, flow_peer_t *fp, size_t w, bool early, bool overdraft,
                       uint64_t bytes, cl_wire_credit_class_t *out)
{
    cl_flow_rx_t *rx = early ? &fp->erx : &fp->rx;
    cl_flow_count_t consumed = cl_flow_rx_consumed(rx, queued_of(f, (int)w, early));
    if (!rx->told && rx->arrived.msgs == 0) {
        /* Nothing of this class came yet: the initial limit stands, and
           no window is held for it (the total is for senders that send). */
        memset(out, 0, sizeof *out);
        out->limit_msgs = rx->limit.msgs;
        out->limit_bytes = rx->limit.bytes;
        return;
    }
    if (overdraft)
        cl_flow_rx_overdraft(rx, consumed, bytes, out);
    else
        cl_flow_rx_grant(rx, consumed, window_for(f, w, early), out);
}

static void send_credit(eng_flow_t *f, const cl_peer_t *p, flow_peer_t *fp, size_t w,
                        bool overdraft, bool early_overdraft, uint64_t early_bytes)
{
    uint64_t biggest = cl_flow_cost((size_t)f->ctx->cfg->max_message_mib << 20);
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_P2P_CTL;
    m.hdr.sub = CL_P2P_CREDIT;
    m.u.credit.incarnation = f->incarnation;
    fill_class(f, fp, w, false, overdraft, biggest, &m.u.credit.cls[CL_CREDIT_P2P]);
    if (fp->version >= ENG_FLOW_EARLY_VERSION) {
        fill_class(f, fp, w, true, early_overdraft, early_bytes, &m.u.credit.cls[CL_CREDIT_EARLY]);
    } else {
        /* Class EARLY is not limited on this link (docs/wire.md section 10). */
        m.u.credit.cls[CL_CREDIT_EARLY].limit_msgs = UINT64_MAX;
        m.u.credit.cls[CL_CREDIT_EARLY].limit_bytes = UINT64_MAX;
    }
    (void)f->ctx->send(f->ctx->arg, p, &m);
}

/* Is sender fp near its grant in class rx (within a quarter of the
   window)? */
static bool near_grant(const eng_flow_t *f, const cl_flow_rx_t *rx)
{
    return rx->limit.msgs - rx->arrived.msgs < f->window.msgs / 4 + 1 ||
           rx->limit.bytes - rx->arrived.bytes < f->window.bytes / 4 + 1;
}

/* Sends the CREDITs that are due.  periodic: every unreported
   consumption; otherwise a quarter of the window, or any when a receive
   of this peer waits and the sender is near its grant (it may hold the
   message that receive waits for).  A sender whose messages wait here
   unreceived while a receive waits for one of its others gets one
   message beyond the bound per round trip (the overdraft): a program
   that takes its messages in another order than they were sent, deeper
   than the bound, goes on as with eager buffering, its memory growing
   only as far as its own receives ask.  Class EARLY alike, where a
   running collective on a communicator of the sender is the waiting
   receive: the message it waits for may sit in the sender's FIFO behind
   early messages of other collectives that fill the window. */
static void report(eng_flow_t *f, bool periodic)
{
    bool waits = cl_p2p_posted(f->q) > 0;
    /* What all senders hold in the early buffer: the overdraft of class
       EARLY stops at the total, and at twice a sender's window, so that
       a sender that ignores the protocol holds no more while a
       collective here is stalled. */
    cl_flow_count_t eall = {0, 0};
    for (size_t i = 0; i < f->npeers; i++) {
        if (f->peers[i].used && f->peers[i].version >= ENG_FLOW_EARLY_VERSION) {
            cl_flow_count_t q = queued_of(f, (int)i, true);
            eall.msgs += q.msgs;
            eall.bytes += q.bytes;
        }
    }
    bool eroom = eall.msgs < f->total.msgs && eall.bytes < f->total.bytes;
    for (size_t i = 0; i < f->npeers; i++) {
        flow_peer_t *fp = &f->peers[i];
        if (!fp->used || (fp->rx.arrived.msgs == 0 && fp->erx.arrived.msgs == 0) ||
            fp->version < 6)
            continue;
        cl_flow_count_t queued = queued_of(f, (int)i, false);
        cl_flow_count_t consumed = cl_flow_rx_consumed(&fp->rx, queued);
        const cl_flow_rx_t *rx = &fp->rx;
        bool near = near_grant(f, rx);
        bool due = cl_flow_rx_due(rx, consumed, f->window, periodic || (waits && near));
        bool overdraft = !due && waits && near && cl_flow_rx_overdraft_due(rx, queued, periodic) &&
                         eng_p2p_waits_for(f->owner, (int)i);
        bool edue = false, eoverdraft = false;
        uint64_t ebytes = 0;
        if (fp->version >= ENG_FLOW_EARLY_VERSION) {
            const cl_flow_rx_t *erx = &fp->erx;
            cl_flow_count_t equeued = queued_of(f, (int)i, true);
            cl_flow_count_t econsumed = cl_flow_rx_consumed(erx, equeued);
            bool ewaits = f->ctx->coll_waits_for != NULL &&
                          f->ctx->coll_waits_for(f->ctx->arg, (int)i);
            /* Near also when a message of the largest size would not
               fit: a collective's part may be that large. */
            uint64_t big = cl_flow_cost((size_t)f->ctx->cfg->max_message_mib << 20);
            bool enear = near_grant(f, erx) || erx->limit.bytes - erx->arrived.bytes < big;
            edue = cl_flow_rx_due(erx, econsumed, f->window, periodic || (ewaits && enear));
            bool capped = equeued.msgs >= 2 * f->window.msgs ||
                          equeued.bytes >= 2 * f->window.bytes || !eroom;
            eoverdraft = !edue && ewaits && enear && !capped &&
                         cl_flow_rx_overdraft_due(erx, equeued, periodic);
            /* Its bytes stay within the caps too (twice the window held
               from this sender, the total from all): while the count
               granted earlier is not used up, the bytes of one message
               of the largest size would let in many small ones. */
            uint64_t room = 2 * f->window.bytes - equeued.bytes;
            if (f->total.bytes - eall.bytes < room)
                room = f->total.bytes - eall.bytes;
            ebytes = eoverdraft ? (room < big ? room : big) : 0;
        }
        if (!due && !overdraft && !edue && !eoverdraft)
            continue;
        cl_peer_t *p = f->ctx->member_at(f->ctx->arg, (int)i);
        if (p == NULL || memcmp(p->key, fp->key, 32) != 0)
            continue;
        send_credit(f, p, fp, i, overdraft, eoverdraft, ebytes);
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
        cl_flow_tx_init(&fp->etx);
        cl_flow_rx_init(&fp->erx);
        fp->version = 0;
        fp->gone = false;
        fp->grace_until = until;
    }
}

static bool flush_waiting(eng_flow_t *f);

double eng_flow_progress(eng_flow_t *f)
{
    if (f == NULL)
        return INFINITY;
    bool member = f->ctx->is_member(f->ctx->arg);
    if (member && !f->member && f->been_member)
        rejoined(f);
    f->member = member;
    f->been_member |= member;
    if (!member)
        return INFINITY;
    report(f, false);
    /* Also after every poll round, as when the loop asked the timer
       each turn: what the credit lets out goes. */
    return flush_waiting(f) ? f->ctx->now(f->ctx->arg) + ENG_FLOW_VERSION_POLL : INFINITY;
}

/* Sends what the credit lets out of every FIFO whose link's version is
   known; true when a FIFO waits for its link's version (it empties at
   once when that turns out to be older than its class). */
static bool flush_waiting(eng_flow_t *f)
{
    bool unknown = false;
    for (size_t i = 0; i < f->npeers && f->waiting > 0; i++) {
        flow_peer_t *fp = &f->peers[i];
        if (fp->fifo.head == NULL && fp->efifo.head == NULL)
            continue;
        cl_peer_t *p = f->ctx->member_at(f->ctx->arg, (int)i);
        if (p == NULL || memcmp(p->key, fp->key, 32) != 0)
            continue;
        if (version_of(f, fp) == 0)
            unknown = true;
        else
            flush(f, p, fp);
    }
    return unknown;
}

double eng_flow_timer(eng_flow_t *f, double now)
{
    if (f == NULL)
        return INFINITY;
    if (now >= f->next_report) {
        f->next_report = now + f->ctx->cfg->timeout / 4;
        if (f->ctx->is_member(f->ctx->arg))
            report(f, true);
    }
    /* A FIFO whose link's version is not known yet empties at once when
       it turns out to be older than its class; look again soon. */
    bool unknown = flush_waiting(f);
    return unknown && now + ENG_FLOW_VERSION_POLL < f->next_report ? now + ENG_FLOW_VERSION_POLL
                                                                   : f->next_report;
}
