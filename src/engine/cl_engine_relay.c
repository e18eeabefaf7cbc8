/*  cl_engine_relay.c - messages between two client-mode members, through a
    relaying monitor (docs/monitor.md §8, docs/wire.md §11).

    Neither of two client-mode members accepts connections, so neither can
    reach the other.  A monitor started with --relay announces relaying
    (CL_MEMBER_RELAY in its view entry); then a message one client member
    sends another leaves eng_send as a RELAY to that monitor: the message
    as it would have gone directly (header frame and body), sealed by
    cl_seal from the sender's identity key to the destination's.  The
    monitor checks that sender and destination are client members of its
    view and forwards the box unopened, through one token bucket of
    COLLAB_RELAY_MBIT for all of its relaying: what waits beyond the
    bucket waits in order in a bounded queue; what would overflow the
    queue is dropped and counted.  The destination checks that the RELAY
    came from a relaying monitor of its view and is for itself, opens the
    box (refusing forgeries and replays), decodes the message with the
    codec and hands it to the engine exactly as if it had arrived from
    the sender: the authority gate judges it as the sender's.

    Every refusal is dropped with a log line (the first of each kind and
    then at every power of two), never acted on.

    The component sees the engine only through its context
    (eng_relay_ctx_t, cl_engine_relay.h), which the loop fills
    (cl_engine_fanout.c); it registers one timer in the loop's set.
*/
#include "engine/cl_engine_relay.h"
#include "engine/cl_seal.h"

#include "util/cl_identity.h"
#include "util/cl_log.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The monitor's queue holds this many seconds at the rate, at least
   RELAY_QUEUE_MIN and at most RELAY_QUEUE_MAX bytes; the bucket at most
   RELAY_BURST seconds. */
#define RELAY_QUEUE_SECONDS 2.0
#define RELAY_QUEUE_MIN (16.0 * (1 << 20))
#define RELAY_QUEUE_MAX (256.0 * (1 << 20))
#define RELAY_BURST 0.05
/* A message between peers the monitor's view does not list yet waits for
   the view (polled every RELAY_WAIT_POLL s) at most max(2 s,
   COLLAB_TIMEOUT); at most RELAY_WAIT_MAX messages wait. */
#define RELAY_WAIT_MAX 256
#define RELAY_WAIT_POLL 0.02

/* Kinds of refusal, each logged at its first time and every power of 2. */
enum {
    REF_NOT_CLIENT_SRC, /* monitor: the sender is not a client member */
    REF_SPOOFED_SRC,    /* monitor: the src field is not the sender */
    REF_BAD_DST,        /* monitor: the destination is not a client member */
    REF_WRONG_DST,      /* member: not for this peer */
    REF_NOT_CLIENT_ME,  /* member: this peer is public and reached directly */
    REF_PUBLIC_SRC,     /* member: the sender is a public member */
    REF_SEAL,           /* member: the box does not open or is a replay */
    REF_INNER,          /* member: the opened message does not decode or is a
                           type that never travels relayed */
    REF_NKINDS
};

typedef struct relay_item {
    struct relay_item *next;
    uint8_t dst[32];
    cl_wire_relay_t hdr;
    double since; /* when it arrived */
    size_t len;   /* of box */
    uint8_t box[];
} relay_item_t;

struct eng_relay {
    eng_relay_ctx_t ctx;
    cl_seal_t *seal;
    uint64_t run;  /* run hash of the inner header */
    bool serving;  /* this peer is a relaying monitor */
    double rate;   /* bytes/s */
    double tokens; /* may go below 0: the last message borrowed */
    double filled; /* when tokens were last refilled */
    size_t queue_max;
    relay_item_t *head, *tail; /* the bucket's queue */
    size_t queued;
    relay_item_t *wait_head, *wait_tail; /* waiting for the view */
    size_t waiting;
    int nwait;
    double wait_max;
    int timer; /* in ctx.timers: armed while anything waits (bucket or view) */
    uint64_t refused[REF_NKINDS];
    uint64_t no_path; /* sends that found no relaying monitor */
    /* Read by collab-monitor's thread. */
    atomic_uint_fast64_t fwd_msgs, fwd_bytes, drop_msgs, drop_bytes, refused_total;
};

static void on_timer(void *arg, double now);
static void arm(struct eng_relay *r, double now, bool sooner_only);

eng_relay_t *eng_relay_new(const eng_relay_ctx_t *ctx)
{
    const cl_config_t *cfg = ctx->cfg;
    struct eng_relay *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->ctx = *ctx;
    r->seal = cl_seal_new(ctx->self_key, ctx->secret_key, cfg->run_id);
    if (r->seal == NULL) {
        free(r);
        return NULL;
    }
    r->run = cl_wire_run_hash(cfg->run_id);
    r->serving = cfg->monitor && cfg->relay;
    r->rate = (double)(cfg->relay_mbit > 0 ? cfg->relay_mbit : 100) * 1e6 / 8.0;
    r->queue_max =
        (size_t)fmin(RELAY_QUEUE_MAX, fmax(RELAY_QUEUE_MIN, RELAY_QUEUE_SECONDS * r->rate));
    r->tokens = RELAY_BURST * r->rate;
    r->filled = ctx->now(ctx->arg);
    r->wait_max = cfg->timeout > 2.0 ? cfg->timeout : 2.0;
    r->timer = cl_timer_add(ctx->timers, on_timer, r);
    if (r->timer < 0) {
        cl_seal_destroy(&r->seal);
        free(r);
        return NULL;
    }
    if (cfg->relay && !cfg->monitor)
        cl_warn("COLLAB_RELAY=1 is for collab-monitor (--relay); this peer relays nothing");
    if (r->serving)
        cl_info("relaying between client-mode members at up to %d Mbit/s (--relay-mbit)",
                cfg->relay_mbit);
    return r;
}

void eng_relay_destroy(eng_relay_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    struct eng_relay *r = *self_p;
    *self_p = NULL;
    for (int q = 0; q < 2; q++) {
        relay_item_t *it = q == 0 ? r->head : r->wait_head;
        while (it != NULL) {
            relay_item_t *next = it->next;
            free(it);
            it = next;
        }
    }
    cl_timer_remove(r->ctx.timers, r->timer);
    cl_seal_destroy(&r->seal);
    free(r);
}

static void refuse(struct eng_relay *r, int kind, const char *fmt, const char *a, const char *b)
{
    uint64_t n = ++r->refused[kind];
    atomic_fetch_add(&r->refused_total, 1);
    if ((n & (n - 1)) != 0)
        return;
    char line[2 * (CL_WIRE_STR_MAX + 64) + 256]; /* the format, and both texts whole */
    snprintf(line, sizeof line, fmt, a, b);
    cl_warn("dropped a RELAY: %s (%llu such drops)", line, (unsigned long long)n);
}

bool eng_relay_needed(const eng_relay_t *r, const cl_peer_t *to)
{
    return r != NULL && r->ctx.cfg->client_mode && to->client && !to->monitor && to->rank >= 0 &&
           memcmp(to->key, r->ctx.self_key, 32) != 0;
}

/* The relaying monitor of the view this peer reaches: in the view (a
   suspected one too: a late heartbeat is no lost link), with a link (one
   whose handshake is under way keeps what is sent in order); the lowest
   key first. */
static const cl_peer_t *pick_relay(struct eng_relay *r)
{
    size_t nm;
    cl_peer_t *const *mons = cl_member_monitors(r->ctx.mb, &nm);
    for (size_t i = 0; i < nm; i++) {
        const cl_peer_t *p = mons[i];
        if (p->relay && p->state != CL_PEER_GONE && r->ctx.has_link(r->ctx.arg, p->key))
            return p;
    }
    return NULL;
}

int eng_relay_send(eng_relay_t *r, const cl_peer_t *to, cl_wire_msg_t *m)
{
    const cl_peer_t *via = pick_relay(r);
    if (via == NULL) {
        uint64_t n = ++r->no_path;
        if ((n & (n - 1)) == 0) {
            char desc[CL_WIRE_STR_MAX + 64];
            cl_error("no path to %s: it is in client mode like this peer, and no monitor of the "
                     "view relays (start collab-monitor with --relay, or run a trainer that "
                     "accepts connections) (%llu messages not sent)",
                     r->ctx.desc(to, desc, sizeof desc), (unsigned long long)n);
        }
        return COLLAB_ERR_PROC_FAILED;
    }
    /* The message as the transport would have framed it. */
    /* The lowest version with its layout (7 for JOIN and VIEW, whose
       layout changed there): the destination's version is not known
       here, and every layout a relayed message has is read alike by
       versions 7 and later. */
    m->hdr.version = (uint8_t)cl_wire_msg_version(&m->hdr, 7);
    m->hdr.run = r->run;
    uint8_t *body = NULL;
    size_t blen = 0;
    int rc = cl_wire_encode_body(m, &body, &blen);
    if (rc != CL_WIRE_OK) {
        if (rc == CL_WIRE_ENOMEM)
            return COLLAB_ERR_NO_MEM;
        cl_error("internal: refusing to send a malformed %s message",
                 cl_wire_type_name(m->hdr.type));
        return COLLAB_ERR_ARG;
    }
    size_t max = (size_t)r->ctx.cfg->max_message_mib << 20;
    size_t plain_len = CL_WIRE_HDR_SIZE + blen;
    if (plain_len + CL_SEAL_OVERHEAD + CL_WIRE_RELAY_FIXED > max) {
        cl_error("cannot relay a %s message of %zu bytes: with its seal it exceeds "
                 "COLLAB_MAX_MESSAGE (%zu bytes)",
                 cl_wire_type_name(m->hdr.type), blen, max);
        free(body);
        return COLLAB_ERR_ARG;
    }
    m->hdr.length = blen;
    uint8_t *plain = malloc(plain_len);
    if (plain == NULL) {
        free(body);
        return COLLAB_ERR_NO_MEM;
    }
    cl_wire_hdr_encode(&m->hdr, plain);
    if (blen > 0)
        memcpy(plain + CL_WIRE_HDR_SIZE, body, blen);
    free(body);
    cl_wire_msg_t o;
    memset(&o, 0, sizeof o);
    o.hdr.type = CL_MSG_RELAYED;
    memcpy(o.u.relay.dst, to->key, 32);
    memcpy(o.u.relay.src, r->ctx.self_key, 32);
    uint8_t *box = NULL;
    size_t boxlen = 0;
    rc = cl_seal_box(r->seal, to->key, plain, plain_len, &o.u.relay.counter, &box, &boxlen);
    free(plain);
    if (rc != 0)
        return rc == CL_SEAL_ENOMEM ? COLLAB_ERR_NO_MEM : COLLAB_ERR_ARG;
    o.payload = box;
    o.payload_len = boxlen;
    rc = r->ctx.send(r->ctx.arg, via, &o);
    free(box);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* The monitor: forwarding through the token bucket. */

static void refill(struct eng_relay *r, double now)
{
    double cap = RELAY_BURST * r->rate;
    if (now > r->filled) {
        r->tokens = fmin(cap, r->tokens + (now - r->filled) * r->rate);
        r->filled = now;
    }
}

static void forward(struct eng_relay *r, relay_item_t *it)
{
    cl_peer_t *to = cl_member_find(r->ctx.mb, it->dst);
    size_t bytes = CL_WIRE_RELAY_FIXED + it->len;
    r->tokens -= (double)bytes;
    if (to == NULL || to->state == CL_PEER_GONE || to->rank < 0) {
        atomic_fetch_add(&r->drop_msgs, 1);
        atomic_fetch_add(&r->drop_bytes, bytes);
        return; /* it left while the message waited */
    }
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_RELAYED;
    m.u.relay = it->hdr;
    m.payload = it->box;
    m.payload_len = it->len;
    if (r->ctx.send(r->ctx.arg, to, &m) == COLLAB_OK) {
        atomic_fetch_add(&r->fwd_msgs, 1);
        atomic_fetch_add(&r->fwd_bytes, bytes);
    } else {
        atomic_fetch_add(&r->drop_msgs, 1);
        atomic_fetch_add(&r->drop_bytes, bytes);
    }
}

/* Forwards what the bucket allows, in order. */
static void drain(struct eng_relay *r, double now)
{
    refill(r, now);
    while (r->head != NULL && r->tokens >= 0) {
        relay_item_t *it = r->head;
        r->head = it->next;
        if (r->head == NULL)
            r->tail = NULL;
        r->queued -= it->len;
        forward(r, it);
        free(it);
    }
}

/* Are both ends client members of this view?  1 yes, -1 no (refused
   and logged: one end is a public member or a monitor, or `final` and
   one end is still unknown), 0 not yet: an end this view does not list
   yet (a member's view can be ahead of the monitor's). */
static int check_ends(struct eng_relay *r, const uint8_t src[32], const uint8_t dst[32], bool final)
{
    const cl_peer_t *ends[2] = {cl_member_find(r->ctx.mb, src), cl_member_find(r->ctx.mb, dst)};
    int rc = 1;
    for (int k = 0; k < 2; k++) {
        const cl_peer_t *p = ends[k];
        bool client = p != NULL && p->state != CL_PEER_GONE && p->rank >= 0 && p->client;
        bool other = p != NULL && p->state != CL_PEER_GONE && !client;
        if (client)
            continue;
        if (!other && !final) {
            rc = 0;
            continue;
        }
        char a[CL_WIRE_STR_MAX + 64], b[CL_WIRE_STR_MAX + 64];
        if (ends[0] != NULL)
            r->ctx.desc(ends[0], a, sizeof a);
        else
            snprintf(a, sizeof a, "a peer that is no member");
        if (ends[1] != NULL)
            r->ctx.desc(ends[1], b, sizeof b);
        else
            snprintf(b, sizeof b, "a peer that is no member");
        if (k == 0)
            refuse(r, REF_NOT_CLIENT_SRC,
                   "%s is not a client-mode member of this view (only those may relay; to %s)", a,
                   b);
        else
            refuse(r, REF_BAD_DST,
                   "%s asked for %s, which is not a client-mode member (only those are relayed "
                   "to)",
                   a, b);
        return -1;
    }
    return rc;
}

/* Into the bucket's queue, or dropped (counted) when it is full. */
static void enqueue(struct eng_relay *r, relay_item_t *it)
{
    size_t bytes = CL_WIRE_RELAY_FIXED + it->len;
    if (r->queued + it->len > r->queue_max) {
        uint64_t n = atomic_fetch_add(&r->drop_msgs, 1) + 1;
        atomic_fetch_add(&r->drop_bytes, bytes);
        if ((n & (n - 1)) == 0) {
            const cl_peer_t *p = cl_member_find(r->ctx.mb, it->hdr.src);
            char a[CL_WIRE_STR_MAX + 64];
            if (p != NULL)
                r->ctx.desc(p, a, sizeof a);
            else
                snprintf(a, sizeof a, "a peer that is no member");
            cl_warn("relay: dropped a message of %zu bytes from %s: %zu bytes wait already, "
                    "the most --relay-mbit %d lets wait (%llu dropped so far)",
                    bytes, a, r->queued, r->ctx.cfg->relay_mbit, (unsigned long long)n);
        }
        free(it);
        return;
    }
    it->next = NULL;
    if (r->tail != NULL)
        r->tail->next = it;
    else
        r->head = it;
    r->tail = it;
    r->queued += it->len;
}

/* Moves what the view now allows from the waiting list to the queue, in
   each sender's order; refuses what waited too long. */
static void settle(struct eng_relay *r, double now)
{
    relay_item_t **pp = &r->wait_head, *prev = NULL;
    uint8_t blocked[RELAY_WAIT_MAX][32];
    int nblocked = 0;
    while (*pp != NULL) {
        relay_item_t *it = *pp;
        bool behind = false;
        for (int k = 0; k < nblocked && !behind; k++)
            behind = memcmp(blocked[k], it->hdr.src, 32) == 0;
        int ok = behind ? 0 : check_ends(r, it->hdr.src, it->dst, now - it->since > r->wait_max);
        if (ok == 0) {
            if (!behind && nblocked < RELAY_WAIT_MAX)
                memcpy(blocked[nblocked++], it->hdr.src, 32);
            prev = it;
            pp = &it->next;
            continue;
        }
        *pp = it->next;
        if (r->wait_tail == it)
            r->wait_tail = prev;
        r->nwait--;
        r->waiting -= it->len;
        if (ok > 0)
            enqueue(r, it);
        else
            free(it);
    }
}

static bool waits_from(const struct eng_relay *r, const uint8_t src[32])
{
    for (const relay_item_t *it = r->wait_head; it != NULL; it = it->next)
        if (memcmp(it->hdr.src, src, 32) == 0)
            return true;
    return false;
}

static void serve(struct eng_relay *r, const cl_peer_t *p, const uint8_t key[32],
                  const cl_wire_msg_t *m)
{
    const cl_wire_relay_t *h = &m->u.relay;
    if (memcmp(h->src, key, 32) != 0) {
        char a[CL_WIRE_STR_MAX + 64], sid[CL_PEER_ID_MAX];
        if (p != NULL)
            r->ctx.desc(p, a, sizeof a);
        else if (cl_base58_encode(key, 32, sid, sizeof sid) == 0)
            snprintf(a, sizeof a, "peer %.8s…", sid);
        else
            snprintf(a, sizeof a, "a peer");
        refuse(r, REF_SPOOFED_SRC, "%s named another peer as its sender%s", a, "");
        return;
    }
    bool wait = waits_from(r, h->src);
    int ok = wait ? 0 : check_ends(r, h->src, h->dst, false);
    if (ok < 0)
        return;
    if (ok == 0 && (r->nwait >= RELAY_WAIT_MAX || r->waiting + m->payload_len > r->queue_max / 4)) {
        refuse(r, REF_NOT_CLIENT_SRC,
               "too many messages between peers this view does not list "
               "wait already%s%s",
               "", "");
        return;
    }
    relay_item_t *it = malloc(sizeof *it + m->payload_len);
    if (it == NULL)
        return;
    it->next = NULL;
    memcpy(it->dst, h->dst, 32);
    it->hdr = *h;
    it->len = m->payload_len;
    it->since = r->ctx.now(r->ctx.arg);
    memcpy(it->box, m->payload, m->payload_len);
    if (ok > 0) {
        double now = it->since; /* drain may forward and free it */
        enqueue(r, it);
        drain(r, now);
        arm(r, now, true); /* what the bucket holds back */
        return;
    }
    if (r->wait_tail != NULL)
        r->wait_tail->next = it;
    else
        r->wait_head = it;
    r->wait_tail = it;
    r->nwait++;
    r->waiting += it->len;
    arm(r, it->since, true); /* it waits for the view */
}

/* When what waits is due next: the tokens the bucket's head needs, and
   every RELAY_WAIT_POLL s while a message waits for the view; INFINITY
   when nothing waits. */
static double next_due(const struct eng_relay *r, double now)
{
    double next = INFINITY;
    if (r->wait_head != NULL)
        next = now + RELAY_WAIT_POLL;
    if (r->head != NULL)
        next = fmin(next, now + fmax(1e-4, -r->tokens / r->rate));
    return next;
}

/* Arms the timer by what waits (nothing armed when nothing does);
   sooner_only keeps an earlier deadline (a new message must not put off
   the look at those that waited before it). */
static void arm(struct eng_relay *r, double now, bool sooner_only)
{
    double next = next_due(r, now);
    if (sooner_only) {
        if (!isinf(next))
            cl_timer_arm_by(r->ctx.timers, r->timer, next);
    } else if (isinf(next))
        cl_timer_cancel(r->ctx.timers, r->timer);
    else
        cl_timer_arm(r->ctx.timers, r->timer, next);
}

/* The relay's deadline: a monitor forwards what its rate allows and what
   the view now lets through, then re-arms while anything still waits. */
static void on_timer(void *arg, double now)
{
    struct eng_relay *r = arg;
    if (r->wait_head != NULL)
        settle(r, now);
    drain(r, now);
    arm(r, now, false);
}

void eng_relay_view(eng_relay_t *r)
{
    if (r != NULL && r->wait_head != NULL)
        cl_timer_arm(r->ctx.timers, r->timer, r->ctx.now(r->ctx.arg));
}

/* ---------------------------------------------------------------------- */
/* The destination. */

/* Types that travel relayed: what one member sends another.  The
   handshake is the link's own, and RELAY is never nested. */
static bool relayable(int type)
{
    switch (type) {
    case CL_MSG_HELLO:
    case CL_MSG_WELCOME:
    case CL_MSG_REFUSE:
    case CL_MSG_AUTH:
    case CL_MSG_RELAYED:
        return false;
    default:
        return true;
    }
}

static void receive(struct eng_relay *r, const cl_peer_t *via, const cl_wire_msg_t *m)
{
    const cl_wire_relay_t *h = &m->u.relay;
    char a[CL_WIRE_STR_MAX + 64], b[CL_PEER_ID_MAX];
    r->ctx.desc(via, a, sizeof a);
    if (cl_base58_encode(h->src, 32, b, sizeof b) != 0)
        snprintf(b, sizeof b, "?");
    b[8 < sizeof b ? 8 : sizeof b - 1] = '\0';
    if (memcmp(h->dst, r->ctx.self_key, 32) != 0) {
        refuse(r, REF_WRONG_DST, "monitor %s forwarded a message for another peer (from %.8s…)", a,
               b);
        return;
    }
    if (!r->ctx.cfg->client_mode) {
        refuse(r, REF_NOT_CLIENT_ME,
               "monitor %s forwarded a message from %.8s… to this public peer, which is reached "
               "directly",
               a, b);
        return;
    }
    const cl_peer_t *src = cl_member_find(r->ctx.mb, h->src);
    if (src != NULL && src->state != CL_PEER_GONE && (src->monitor || !src->client)) {
        refuse(r, REF_PUBLIC_SRC,
               "monitor %s forwarded a message from %.8s…, a public peer that reaches this peer "
               "directly",
               a, b);
        return;
    }
    uint8_t *plain = NULL;
    size_t len = 0;
    int rc = cl_seal_open(r->seal, h->src, h->counter, m->payload, m->payload_len, &plain, &len);
    if (rc != 0) {
        char who[CL_WIRE_STR_MAX + 128];
        snprintf(who, sizeof who, "%.8s… (through monitor %s)", b, a);
        refuse(r, REF_SEAL, "the message from %s was refused: %s", who, cl_seal_strerror(rc));
        return;
    }
    cl_wire_msg_t in;
    int drc = len >= CL_WIRE_HDR_SIZE
                  ? cl_wire_decode(plain, CL_WIRE_HDR_SIZE, plain + CL_WIRE_HDR_SIZE,
                                   len - CL_WIRE_HDR_SIZE, &in)
                  : CL_WIRE_ESIZE;
    if (drc != CL_WIRE_OK || in.hdr.run != r->run || !relayable(in.hdr.type)) {
        refuse(r, REF_INNER,
               "the sealed message from %.8s… does not decode, is of another run or of a type "
               "that is never relayed (%s)",
               b, drc != CL_WIRE_OK ? cl_wire_strerror(drc) : cl_wire_type_name(in.hdr.type));
        if (drc == CL_WIRE_OK)
            cl_wire_msg_clear(&in);
        free(plain);
        return;
    }
    r->ctx.deliver(r->ctx.arg, h->src, &in);
    cl_wire_msg_clear(&in);
    free(plain);
}

void eng_relay_on_message(eng_relay_t *r, const cl_peer_t *p, const uint8_t key[32],
                          const cl_wire_msg_t *m)
{
    if (r == NULL)
        return;
    if (r->serving)
        serve(r, p, key, m);
    else if (p != NULL)
        receive(r, p, m);
}

void eng_relay_stats(const eng_relay_t *r, cl_relay_stats_t *out)
{
    memset(out, 0, sizeof *out);
    if (r == NULL)
        return;
    out->serving = r->serving;
    out->mbit = r->ctx.cfg->relay_mbit;
    out->forwarded_msgs = atomic_load(&r->fwd_msgs);
    out->forwarded_bytes = atomic_load(&r->fwd_bytes);
    out->dropped_msgs = atomic_load(&r->drop_msgs);
    out->dropped_bytes = atomic_load(&r->drop_bytes);
    out->refused = atomic_load(&r->refused_total);
}
