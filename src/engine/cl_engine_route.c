/*  cl_engine_route.c - where an incoming collective message goes.

    By (communicator, sequence number): to the running collective, to the
    last completed one (kept for relay requests of members still inside
    it), or into a buffer when the local program has not called that
    collective yet; older ones are dropped.  The group generation in the
    header must match the collective's: an older one restarts the running
    collective under it, a newer one is answered with a notice (docs/wire.md
    section 6).  A message whose signature differs from the local
    collective's is not delivered and its sender is excluded from it.

    Flow control (docs/wire.md section 10, class EARLY, links of version
    8): every message from a member counts against its grant as it
    arrives, before anything else, and holds it only while it waits in
    the early buffer (what of each sender waits there is its
    consumption, eng_coll_early_queued).  A message within its grant is
    kept past the bounds below.
    Bounds (docs/security.md section 5): early messages count, with their
    fixed overhead, against their sender and against the whole buffer
    (COLLAB_MAX_UNEXPECTED_PER_PEER, COLLAB_MAX_UNEXPECTED_MSGS,
    COLLAB_MAX_UNEXPECTED); a message for a communicator this program has
    not created opens a stream only within COLLAB_MAX_STREAMS_PER_PEER
    such streams of its sender and COLLAB_MAX_STREAMS in all.  What passes
    a bound is dropped, counted and its sender named in the log; it is
    not banned, since on a link without flow control a member whose
    program runs far ahead can pass them too.  One past its grant is
    named as such, and is the group's matter: the bounds first drop that
    sender's messages furthest ahead in the stream (so that a flood far
    ahead does not push out its messages for the next collectives, which
    the others take), and each drop is reported to the coordinator
    (eng_suspect_overdrawn), whose vote takes the sender out of the
    group for every member: a receiver that left its messages out alone
    would disagree with the others about its part (docs/security-bounds.md
    section 5).
*/
#include "engine/cl_engine_coll_int.h"

#include "util/cl_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUB_NOTICE 0 /* engine-level generation notice */
/* What one early message costs besides its payload. */
#define BUFFERED_COST(len) (sizeof(buffered_t) + 32 + (len))

/* The quota of world rank w, grown on demand; NULL when out of memory. */
static eng_quota_t *early_quota(eng_cs_t *cs, int w)
{
    if (w < 0)
        return NULL;
    if (w >= cs->nearly) {
        int n = w + 1 > 2 * cs->nearly ? w + 1 : 2 * cs->nearly;
        eng_quota_t *a = realloc(cs->early, (size_t)n * sizeof *a);
        if (a == NULL)
            return NULL;
        memset(a + cs->nearly, 0, (size_t)(n - cs->nearly) * sizeof *a);
        cs->early = a;
        cs->nearly = n;
    }
    return &cs->early[w];
}

/* Forgets the accounting of one early message taken off a stream's list
   (the caller frees it). */
static void release_buffered(eng_cs_t *cs, const buffered_t *b)
{
    cs->buffered_bytes -= BUFFERED_COST(b->len);
    cs->buffered_msgs--;
    if (b->limited && b->from_world >= 0 && b->from_world < cs->nearly) {
        cs->early[b->from_world].msgs--;
        cs->early[b->from_world].bytes -= BUFFERED_COST(b->len);
    }
}

/* Names a sender whose messages a bound refused: at the first drop and
   at every power of two after it, so a flood costs a few log lines. */
static void log_refused(eng_cs_t *cs, int w, uint64_t dropped, const char *what, const char *bound)
{
    if ((dropped & (dropped - 1)) != 0)
        return;
    char desc[160];
    const cl_peer_t *p = cl_member_at_rank(cs->ctx.mb, w);
    if (p != NULL)
        cs->ctx.desc(p, desc, sizeof desc);
    else
        snprintf(desc, sizeof desc, "rank %d", w);
    cl_warn("dropped %s from %s: it would hold more than %s allows (%llu of its messages "
            "dropped so far)",
            what, desc, bound, (unsigned long long)dropped);
}

static void route_message(eng_cs_t *cs, const cl_peer_t *from, const cl_wire_msg_t *m);

void eng_coll_free_buffered(eng_cs_t *cs, stream_t *s)
{
    buffered_t *b = s->buf_head;
    while (b != NULL) {
        buffered_t *next = b->next;
        release_buffered(cs, b);
        free(b->data);
        free(b);
        b = next;
    }
    s->buf_head = s->buf_tail = NULL;
}

void eng_coll_unlink_buffered(eng_cs_t *cs, stream_t *s, buffered_t *prev, buffered_t *b)
{
    if (prev != NULL)
        prev->next = b->next;
    else
        s->buf_head = b->next;
    if (s->buf_tail == b)
        s->buf_tail = prev;
    release_buffered(cs, b);
}

void eng_cs_drop_buffered_below(eng_cs_t *cs, stream_t *s, uint64_t below)
{
    buffered_t *prev = NULL, *b = s->buf_head;
    while (b != NULL) {
        buffered_t *next = b->next;
        if (b->seq < below) {
            eng_coll_unlink_buffered(cs, s, prev, b);
            free(b->data);
            free(b);
        } else {
            prev = b;
        }
        b = next;
    }
}

size_t eng_coll_drop_buffered_from(eng_cs_t *cs, stream_t *s, int w)
{
    size_t left = 0;
    buffered_t *prev = NULL, *b = s->buf_head;
    while (b != NULL) {
        buffered_t *next = b->next;
        if (b->from_world != w) {
            left++;
            prev = b;
            b = next;
            continue;
        }
        eng_coll_unlink_buffered(cs, s, prev, b);
        free(b->data);
        free(b);
        b = next;
    }
    return left;
}

/* Tells world rank w that this peer runs (or ran) seq under generation
   gen, once per collective. */
static void notify(eng_cs_t *cs, stream_t *s, coll_ctx_t *ctx, int w)
{
    for (int i = 0; i < ctx->nnotified; i++)
        if (ctx->notified[i] == w)
            return;
    int *a = realloc(ctx->notified, (size_t)(ctx->nnotified + 1) * sizeof *a);
    if (a == NULL)
        return;
    ctx->notified = a;
    ctx->notified[ctx->nnotified++] = w;
    const cl_peer_t *p = cl_member_at_rank(cs->ctx.mb, w);
    if (p == NULL)
        return;
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_COLL;
    m.hdr.sub = SUB_NOTICE;
    m.hdr.comm = s->comm_id;
    m.hdr.epoch = ctx->gen;
    m.hdr.seq = ctx->seq;
    m.hdr.signature = ctx->signature;
    /* Its members, for a peer that never saw the view that formed it. */
    uint8_t *body = NULL;
    m.payload_len = eng_coll_gen_encode(cs, ctx->gen, &body);
    m.payload = body;
    (void)cs->ctx.send(cs->ctx.arg, p, &m);
    free(body);
}

/* A message of generation gen, older than cur, that this peer is not in
   as far as it knows: a notice may teach it the generation (the view
   that formed it was lost with its coordinator); data from a member of
   the group is kept, and its sender told this peer's generation, so that
   its notice comes back. */
static bool learn_or_ask(eng_cs_t *cs, stream_t *s, int from_world, const cl_wire_hdr_t *h,
                         const void *data, size_t len)
{
    uint64_t cur = s->active_ctx->gen;
    if (eng_cs_gen(cs, h->epoch) != NULL || !eng_coll_in_group(cs, from_world))
        return false;
    if (h->sub == SUB_NOTICE)
        return eng_coll_learn_gen(cs, h->epoch, cur, from_world, data, len);
    notify(cs, s, s->active_ctx, from_world);
    return false;
}

bool eng_coll_may_pull(eng_cs_t *cs, const stream_t *s, int w, uint64_t seq)
{
    /* A peer that said goodbye after taking part in seq ran it with the
       group it knew, and counts there (cl_engine_leave.c). */
    return eng_coll_in_group(cs, w) || eng_leave_status(cs->ctx.leave, w, s->comm_id, seq) == 1;
}

/* A copy of a message the running collective took.  Around an admission
   whose admitter dies, a collective may restart under the admission's
   generation and then again under the one before (docs/elastic.md §3);
   members that completed it under that one meanwhile never send their
   messages again, and without these copies the restarted collective
   waited for them for ever.  Up to SEEN_MAX bytes per collective: a
   larger one restarts with what was kept. */
#define SEEN_MAX ((size_t)1 << 20)

/* A copy of message h (data, len) from world rank from_world, or NULL
   when out of memory. */
static buffered_t *buffered_new(int from_world, const cl_wire_hdr_t *h, const void *data,
                                size_t len)
{
    buffered_t *b = calloc(1, sizeof *b);
    if (b == NULL || (len > 0 && (b->data = malloc(len)) == NULL)) {
        free(b);
        return NULL;
    }
    if (len > 0)
        memcpy(b->data, data, len);
    b->seq = h->seq;
    b->gen = h->epoch;
    b->signature = h->signature;
    b->from_world = from_world;
    b->type = h->sub;
    b->part = h->part;
    b->chunk = h->chunk;
    b->aux = h->aux;
    b->len = len;
    return b;
}

static void record_seen(coll_ctx_t *ctx, int from_world, const cl_wire_hdr_t *h, const void *data,
                        size_t len)
{
    if (ctx->seen_full || ctx->seen_bytes + BUFFERED_COST(len) > SEEN_MAX) {
        ctx->seen_full = true;
        return;
    }
    buffered_t *b = buffered_new(from_world, h, data, len);
    if (b == NULL) {
        ctx->seen_full = true;
        return;
    }
    if (ctx->seen_tail != NULL)
        ctx->seen_tail->next = b;
    else
        ctx->seen_head = b;
    ctx->seen_tail = b;
    ctx->seen_bytes += BUFFERED_COST(len);
}

void eng_coll_free_seen(coll_ctx_t *ctx)
{
    buffered_t *b = ctx->seen_head;
    while (b != NULL) {
        buffered_t *next = b->next;
        free(b->data);
        free(b);
        b = next;
    }
    ctx->seen_head = ctx->seen_tail = NULL;
    ctx->seen_bytes = 0;
}

void eng_coll_requeue_seen(eng_cs_t *cs, stream_t *s)
{
    coll_ctx_t *ctx = s->active_ctx;
    if (ctx == NULL || ctx->seen_head == NULL)
        return;
    /* Not counted against their senders (they arrived in order, were
       taken, and are bounded by SEEN_MAX). */
    for (buffered_t *b = ctx->seen_head; b != NULL; b = b->next) {
        b->limited = false;
        cs->buffered_bytes += BUFFERED_COST(b->len);
        cs->buffered_msgs++;
    }
    ctx->seen_tail->next = s->buf_head;
    if (s->buf_tail == NULL)
        s->buf_tail = ctx->seen_tail;
    s->buf_head = ctx->seen_head;
    ctx->seen_head = ctx->seen_tail = NULL;
    ctx->seen_bytes = 0;
}

/* Hands one message to the running (active) or retained collective. */
static void deliver(eng_cs_t *cs, stream_t *s, bool active, int from_world, const cl_wire_hdr_t *h,
                    const void *data, size_t len)
{
    cl_coll_t *c = active ? s->active : s->retained;
    coll_ctx_t *ctx = active ? s->active_ctx : s->retained_ctx;
    int from = cl_comm_rank_of_world(s->comm, from_world);
    if (c == NULL || from < 0 || h->sub == SUB_NOTICE)
        return;
    if (active)
        s->last_delivery = cs_now(cs);
    if (h->signature != ctx->signature) {
        const cl_peer_t *p = cl_member_at_rank(cs->ctx.mb, from_world);
        cl_warn("rank %d called a different collective than this peer's %s #%llu (signature "
                "%08x, ours %08x); excluding it from this one",
                from_world, eng_coll_kind_name(ctx->kind), (unsigned long long)h->seq, h->signature,
                ctx->signature);
        if (active) {
            bool known = false;
            for (int i = 0; i < ctx->nfailed && !known; i++)
                known = ctx->failed[i] == from;
            if (!known)
                ctx->nmismatch++;
            eng_coll_fail_member(s, from, false);
            if (p != NULL)
                eng_coll_defer_late(cs, p, CL_SUSPECT_MISMATCH);
        }
    } else {
        cl_coll_msg_t msg = {h->sub, h->part, h->chunk, h->aux, from, data, len};
        int rc = cl_coll_on_msg(c, &msg);
        if (active && rc != COLLAB_ERR_ARG && from_world != cs->ctx.rank(cs->ctx.arg))
            record_seen(ctx, from_world, h, data, len);
        if (rc == COLLAB_ERR_ARG) {
            /* The algorithm refused it: a RESULT for a part its sender
               does not produce, or a message that does not fit the
               collective.  Dropped, counted, named in the log. */
            const cl_peer_t *p = cl_member_at_rank(cs->ctx.mb, from_world);
            if (p != NULL)
                eng_auth_refused_data(cs->ctx.auth, p, h->sub, h->part);
        }
    }
    if (active && s->active == c) {
        (void)cl_coll_on_tick(c);
        eng_coll_check_done(cs, s);
    }
}

/* A message for the running collective: settle the generation first. */
static void buffer(eng_cs_t *cs, stream_t *s, int from_world, const cl_wire_hdr_t *h,
                   const void *data, size_t len);

static void to_active(eng_cs_t *cs, stream_t *s, int from_world, const cl_wire_hdr_t *h,
                      const void *data, size_t len)
{
    coll_ctx_t *ctx = s->active_ctx;
    /* Elastic hook: around an admission the generation that takes effect
       at this sequence wins, not the oldest (docs/elastic.md §3). */
    switch (cs->ctx.el_route(cs->ctx.arg, s, ctx->seq, ctx->gen, h->epoch)) {
    case ENG_CS_ROUTE_RESTART:
        eng_cs_restart(cs, s, h->epoch);
        if (s->active != NULL && s->active_ctx->seq == h->seq)
            deliver(cs, s, true, from_world, h, data, len);
        return;
    case ENG_CS_ROUTE_NOTIFY:
        /* Kept too: should the admission be lost (its admitter died
           before the whole group got its view), the older generation runs
           again and its sender, which may have completed the collective
           meanwhile, will not send it again. */
        notify(cs, s, ctx, from_world);
        buffer(cs, s, from_world, h, data, len);
        return;
    case ENG_CS_ROUTE_KEEP:
        notify(cs, s, ctx, from_world);
        buffer(cs, s, from_world, h, data, len);
        return;
    case ENG_CS_ROUTE_DEFAULT:
        break;
    }
    if (h->epoch > ctx->gen) {
        notify(cs, s, ctx, from_world); /* it restarts under ours */
        return;
    }
    if (h->epoch < ctx->gen) {
        bool unknown = eng_cs_gen(cs, h->epoch) == NULL;
        if (unknown && !learn_or_ask(cs, s, from_world, h, data, len) && h->sub != SUB_NOTICE &&
            eng_coll_in_group(cs, from_world)) {
            buffer(cs, s, from_world, h, data, len); /* until its notice teaches it */
            return;
        }
        if (!eng_cs_in_gen(cs, h->epoch) || !eng_coll_may_pull(cs, s, from_world, h->seq)) {
            cl_debug("dropped a collective message of a generation this peer is not in");
            return;
        }
        eng_cs_restart(cs, s, h->epoch);
        if (s->active == NULL || s->active_ctx->seq != h->seq)
            return; /* it completed at once, or failed */
    }
    deliver(cs, s, true, from_world, h, data, len);
}

/* The early buffer's bound that one more message of `cost` from the
   sender whose quota is q would pass, or NULL. */
static const char *over_bound(const eng_cs_t *cs, const eng_quota_t *q, size_t cost)
{
    size_t peer_max = (size_t)cs->ctx.cfg->max_unexpected_peer_mib << 20;
    size_t total_max = (size_t)cs->ctx.cfg->max_unexpected_mib << 20;
    size_t msgs_max = (size_t)cs->ctx.cfg->max_unexpected_msgs;
    /* (0: not configured, no bound; the config table never gives 0) */
    if (msgs_max > 0 && q->msgs >= msgs_max)
        return "COLLAB_MAX_UNEXPECTED_MSGS";
    if (peer_max > 0 && q->msgs > 0 && q->bytes + cost > peer_max)
        return "COLLAB_MAX_UNEXPECTED_PER_PEER"; /* (one larger message may wait alone) */
    if ((total_max > 0 && cs->buffered_msgs > 0 && cs->buffered_bytes + cost > total_max) ||
        (msgs_max > 0 && cs->buffered_msgs >= 4 * msgs_max))
        return "COLLAB_MAX_UNEXPECTED";
    return NULL;
}

/* A message of member p that the early buffer drops because p passed its
   grant of class EARLY: counted, named, and reported to the group (the
   coordinator takes p out of the group, so that no receiver leaves p's
   messages out alone; docs/security-bounds.md section 5). */
static void refuse_overdrawn(eng_cs_t *cs, const cl_peer_t *p, eng_quota_t *q, size_t len,
                             const char *bound)
{
    if (p != NULL && eng_p2p_coll_refuse(cs->ctx.p2p, p, len))
        eng_suspect_overdrawn(cs->ctx.susp, p);
    q->dropped++;
    log_refused(cs, p != NULL ? p->rank : -1, q->dropped,
                "an early collective message (for a collective this peer has not called)", bound);
}

/* Takes message b (after prev, or the head) out of stream t, as refused. */
static void evict(eng_cs_t *cs, stream_t *t, buffered_t *b, buffered_t *prev, const cl_peer_t *p,
                  eng_quota_t *q, const char *bound)
{
    if (prev != NULL)
        prev->next = b->next;
    else
        t->buf_head = b->next;
    if (t->buf_tail == b)
        t->buf_tail = prev;
    release_buffered(cs, b);
    refuse_overdrawn(cs, p, q, b->len, bound);
    free(b->data);
    free(b);
}

/* Takes out of stream t the message of world rank w that is furthest
   ahead (the highest sequence, above `above`); false when t holds none. */
static bool evict_last(eng_cs_t *cs, stream_t *t, int w, uint64_t above, bool any,
                       const cl_peer_t *p, eng_quota_t *q, const char *bound)
{
    buffered_t *victim = NULL, *victim_prev = NULL, *prev = NULL;
    for (buffered_t *b = t->buf_head; b != NULL; prev = b, b = b->next)
        if (b->limited && b->from_world == w && (any || b->seq > above) &&
            (victim == NULL || b->seq >= victim->seq)) {
            victim = b;
            victim_prev = prev;
        }
    if (victim == NULL)
        return false;
    evict(cs, t, victim, victim_prev, p, q, bound);
    return true;
}

/* Makes room for a message of world rank w (past its grant) for sequence
   seq of stream s by dropping one of w's messages that is less likely to
   be needed: its furthest ahead in s, or else, for a communicator this
   program created, one of its messages for a communicator it has not
   created (a stream in the table or retired).  False when none is left. */
static bool evict_ahead(eng_cs_t *cs, stream_t *s, int w, uint64_t seq, const cl_peer_t *p,
                        eng_quota_t *q, const char *bound)
{
    if (evict_last(cs, s, w, seq, false, p, q, bound))
        return true;
    if (s->comm == NULL)
        return false;
    for (size_t i = 0; i < cs->nstreams; i++)
        if (cs->streams[i] != s && cs->streams[i]->comm == NULL &&
            evict_last(cs, cs->streams[i], w, 0, true, p, q, bound))
            return true;
    for (size_t i = 0; i < cs->nretired; i++)
        if (cs->retired[i] != s && evict_last(cs, cs->retired[i], w, 0, true, p, q, bound))
            return true;
    return false;
}

static void buffer(eng_cs_t *cs, stream_t *s, int from_world, const cl_wire_hdr_t *h,
                   const void *data, size_t len)
{
    /* A peer's own messages (its local deliveries) are its own memory. */
    bool limited = from_world != cs->ctx.rank(cs->ctx.arg);
    size_t cost = BUFFERED_COST(len);
    eng_quota_t *q = limited ? early_quota(cs, from_world) : NULL;
    if (limited && q == NULL)
        return; /* out of memory */
    if (q != NULL && cs->coll_credit <= 0) {
        /* (A message under class EARLY's credit is kept past them: the
           grants already respect them, docs/wire.md section 10.  One past
           its grant meets them, as on a link without flow control.) */
        const char *bound = over_bound(cs, q, cost);
        if (bound != NULL && cs->coll_credit < 0) {
            /* Past its sender's grant of class EARLY too: only a sender
               that ignores the protocol gets here (docs/wire.md section
               10); named as such and reported to the group.  Its
               messages furthest ahead in this stream give way to this
               one (and, for a communicator this program created, its
               messages for communicators it has not), so that a flood
               for collectives far ahead does not push out its messages
               for the next ones: those the others take too, and this
               peer's collective would wait for them until the group
               takes the sender out. */
            const cl_peer_t *p = cl_member_at_rank(cs->ctx.mb, from_world);
            while (bound != NULL && evict_ahead(cs, s, from_world, h->seq, p, q, bound))
                bound = over_bound(cs, q, cost);
            if (bound != NULL) {
                refuse_overdrawn(cs, p, q, len, bound);
                return;
            }
        } else if (bound != NULL) {
            q->dropped++;
            log_refused(cs, from_world, q->dropped,
                        "an early collective message (for a collective this peer has not called)",
                        bound);
            return;
        }
    }
    buffered_t *b = buffered_new(from_world, h, data, len);
    if (b == NULL)
        return;
    b->limited = q != NULL;
    if (s->buf_tail != NULL)
        s->buf_tail->next = b;
    else
        s->buf_head = b;
    s->buf_tail = b;
    cs->buffered_bytes += cost;
    cs->buffered_msgs++;
    if (q != NULL) {
        q->msgs++;
        q->bytes += cost;
    }
}

void eng_coll_route(eng_cs_t *cs, stream_t *s, int from_world, const cl_wire_hdr_t *h,
                    const void *data, size_t len)
{
    cl_debug("coll recv #%llu/%llu type %u part %u chunk %u aux %u len %zu from rank %d "
             "(active %lld, started %llu)",
             (unsigned long long)h->seq, (unsigned long long)h->epoch, h->sub, h->part, h->chunk,
             h->aux, len, from_world, s->active != NULL ? (long long)s->active_ctx->seq : -1LL,
             (unsigned long long)s->started);
    eng_fast_on_message(cs, s, h->seq);
    if (s->comm != NULL && s->active != NULL && h->seq == s->active_ctx->seq) {
        to_active(cs, s, from_world, h, data, len);
    } else if (s->comm != NULL && s->retained != NULL && h->seq == s->retained_ctx->seq) {
        coll_ctx_t *ctx = s->retained_ctx;
        if (h->epoch == ctx->gen)
            deliver(cs, s, false, from_world, h, data, len);
        else if (h->epoch > ctx->gen)
            notify(cs, s, ctx, from_world); /* finish it under ours and ask us for relays */
    } else if (h->seq >= s->started) {
        buffer(cs, s, from_world, h, data, len);
    }
    /* else: a collective this peer finished long ago; nobody needs it. */
}

/* One pass of eng_coll_take_buffered for the collective running now.  A
   delivery may complete it and start the next one (whose own pass is
   then deferred to the caller), so the pass stops as soon as the stream
   runs another start: entries after the delivered one may be gone. */
static void take_pass(eng_cs_t *cs, stream_t *s)
{
    uint64_t start = s->nstarts;
    uint64_t seq = s->active_ctx->seq;
    uint64_t restart = UINT64_MAX;
    buffered_t *prev = NULL, *b = s->buf_head;
    while (b != NULL && s->nstarts == start && s->active != NULL) {
        buffered_t *next = b->next;
        uint64_t cur = s->active_ctx->gen;
        bool stays = b->seq != seq, tell = false;
        if (!stays && b->gen > cur) {
            /* Elastic hook: a newer generation whose view admits someone
               at this sequence (known: restart under it below; not known
               yet: its view is on the way) keeps its message, since its
               sender will not send it again.  Otherwise the sender
               restarts under ours. */
            int r = cs->ctx.el_route(cs->ctx.arg, s, seq, cur, b->gen);
            stays = r == ENG_CS_ROUTE_RESTART || r == ENG_CS_ROUTE_KEEP;
            if (r == ENG_CS_ROUTE_RESTART && b->gen < restart)
                restart = b->gen;
            tell = r != ENG_CS_ROUTE_RESTART;
        } else if (!stays && b->gen < cur) {
            /* The older generation wins when this peer is in it (as in
               to_active); one an admission made obsolete restarts under
               ours (elastic hook). */
            if (!cs->ctx.el_gen_ok(cs->ctx.arg, s, seq, b->gen)) {
                tell = true;
                stays = true; /* kept for a lost admission, as in to_active */
            } else if (eng_cs_gen(cs, b->gen) == NULL && eng_coll_in_group(cs, b->from_world)) {
                /* A generation this peer never saw: a notice among these
                   may teach it; data waits for that (learn_or_ask). */
                cl_wire_hdr_t h = {.sub = b->type, .epoch = b->gen, .seq = b->seq};
                bool learned = learn_or_ask(cs, s, b->from_world, &h, b->data, b->len);
                stays = true;
                if (learned && eng_cs_in_gen(cs, b->gen) && b->gen < restart)
                    restart = b->gen;
            } else if (eng_cs_in_gen(cs, b->gen) && eng_coll_may_pull(cs, s, b->from_world, seq)) {
                stays = true;
                if (b->gen < restart)
                    restart = b->gen;
            }
        }
        if (tell)
            notify(cs, s, s->active_ctx, b->from_world);
        if (stays) {
            prev = b;
            b = next;
            continue;
        }
        eng_coll_unlink_buffered(cs, s, prev, b);
        if (b->gen == cur) {
            cl_wire_hdr_t h;
            memset(&h, 0, sizeof h);
            h.seq = b->seq;
            h.epoch = b->gen;
            h.signature = b->signature;
            h.sub = b->type;
            h.part = b->part;
            h.chunk = b->chunk;
            h.aux = b->aux;
            deliver(cs, s, true, b->from_world, &h, b->data, b->len);
        }
        free(b->data);
        free(b);
        b = next;
    }
    if (restart != UINT64_MAX && s->nstarts == start && s->active != NULL)
        eng_cs_restart(cs, s, restart); /* takes the messages kept above */
}

/* After a start: delivers the early messages of the new collective that
   carry its generation, answers newer ones with a notice, drops the rest.
   Re-entry (a delivered message completes the collective and the next one
   starts) only asks the running call for another pass. */
void eng_coll_take_buffered(eng_cs_t *cs, stream_t *s)
{
    if (s->taking) {
        s->take_again = true;
        return;
    }
    s->taking = true;
    s->last_delivery = cs_now(cs); /* a start */
    do {
        s->take_again = false;
        if (s->active != NULL && s->active_ctx != NULL)
            take_pass(cs, s);
    } while (s->take_again);
    s->taking = false;
}

/* May a message of `from` open a stream for a communicator this program
   has not created?  Within COLLAB_MAX_STREAMS_PER_PEER streams opened by
   it and COLLAB_MAX_STREAMS in all, among those this program has not
   created since.  First, streams older than ENG_STREAM_RETIRE_AFTER leave
   the table (eng_coll_retire_streams): their early messages stay,
   counted against their senders as before, so no message within a
   sender's grant is lost, and hostile members that stay alive hold a
   place only for that long; to take it again they must send more, which
   their early-buffer share caps (docs/security-bounds.md §5). */
static bool may_open_stream(eng_cs_t *cs, const cl_peer_t *from)
{
    eng_coll_retire_streams(cs, cs_now(cs), ENG_STREAM_RETIRE_AFTER(cs->ctx.cfg->timeout));
    int mine = 0, all = 0;
    for (size_t i = 0; i < cs->nstreams; i++) {
        const stream_t *s = cs->streams[i];
        if (s->comm == NULL && s->opened_by > 0) {
            all++;
            mine += s->opened_by == from->rank + 1;
        }
    }
    const char *bound = NULL;
    if (cs->ctx.cfg->max_streams_peer > 0 && mine >= cs->ctx.cfg->max_streams_peer)
        bound = "COLLAB_MAX_STREAMS_PER_PEER";
    else if (cs->ctx.cfg->max_streams > 0 && all >= cs->ctx.cfg->max_streams)
        bound = "COLLAB_MAX_STREAMS";
    if (bound == NULL)
        return true;
    cs->streams_refused++;
    eng_quota_t *q = early_quota(cs, from->rank);
    if (q != NULL) {
        q->streams_refused++;
        log_refused(cs, from->rank, q->streams_refused,
                    "a collective message for a communicator this program has not created", bound);
    }
    return false;
}

size_t eng_coll_early_queued(const eng_cs_t *cs, int w, size_t *bytes)
{
    *bytes = 0;
    if (cs == NULL || w < 0 || w >= cs->nearly)
        return 0;
    const eng_quota_t *q = &cs->early[w];
    *bytes = q->bytes - q->msgs * BUFFERED_COST(0);
    return q->msgs;
}

bool eng_coll_waits_for(const eng_cs_t *cs, int w)
{
    if (cs == NULL)
        return false;
    double now = cs_now(cs);
    for (size_t i = 0; i < cs->nstreams; i++) {
        const stream_t *s = cs->streams[i];
        /* Stalled: a collective that takes messages is not held up by a
           FIFO, and a sender whose early messages fill its grant gets no
           more while the collectives here move (a flood meets its grant). */
        if (s->active != NULL && s->comm != NULL && now - s->last_delivery >= ENG_EARLY_STALL &&
            cl_comm_rank_of_world(s->comm, w) >= 0)
            return true;
    }
    return false;
}

void eng_coll_on_message(eng_cs_t *cs, const cl_peer_t *from, const cl_wire_msg_t *m)
{
    if (from->rank < 0)
        return;
    /* Class EARLY's credit, before any other check: every message counts
       as arrived, and as consumed at once unless it waits in the early
       buffer (only that holds credit, and only that is refused past the
       grant: a message its collective takes at once costs nothing). */
    cs->coll_credit =
        cs->ctx.p2p != NULL ? eng_p2p_coll_admit(cs->ctx.p2p, from, m->payload_len) : 0;
    route_message(cs, from, m);
    cs->coll_credit = 0;
}

static void route_message(eng_cs_t *cs, const cl_peer_t *from, const cl_wire_msg_t *m)
{
    if (m->payload_len >= 65536) /* bandwidth seen from this peer, for data deadlines */
        cs->ctx.data_seen(cs->ctx.arg, from, m->payload_len, cs_now(cs));
    if (m->hdr.comm == CL_COMM_SELF_ID)
        return; /* nobody else speaks on our self communicator */
    stream_t *s = eng_cs_stream(cs, m->hdr.comm, false);
    if (s == NULL)
        s = eng_coll_retired(cs, m->hdr.comm); /* waits there, outside the table */
    if (s == NULL) {
        if (!may_open_stream(cs, from) || (s = eng_cs_stream(cs, m->hdr.comm, true)) == NULL)
            return;
        s->opened_by = from->rank + 1;
        s->opened_at = cs_now(cs);
    }
    eng_coll_route(cs, s, from->rank, &m->hdr, m->payload, m->payload_len);
}

void eng_coll_deliver_local(eng_cs_t *cs)
{
    while (cs->local_head != NULL) {
        local_msg_t *l = cs->local_head;
        cs->local_head = l->next;
        if (cs->local_head == NULL)
            cs->local_tail = NULL;
        stream_t *s = eng_cs_stream(cs, l->comm, false);
        if (s != NULL && s->comm != NULL) {
            cl_wire_hdr_t h;
            memset(&h, 0, sizeof h);
            h.seq = l->seq;
            h.epoch = s->active != NULL && s->active_ctx->seq == l->seq ? s->active_ctx->gen : 0;
            h.signature = l->signature;
            h.sub = l->msg.type;
            h.part = l->msg.part;
            h.chunk = l->msg.chunk;
            h.aux = l->msg.aux;
            int w = cl_comm_world_of(s->comm, l->msg.from);
            eng_coll_route(cs, s, w, &h, l->msg.data, l->msg.len);
        }
        free(l);
    }
}
