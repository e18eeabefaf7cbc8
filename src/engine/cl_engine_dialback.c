/*  cl_engine_dialback.c - the coordinator checks that a joiner can be
    reached before it admits it as a public member (docs/membership.md,
    "Reachability").

    Every member of a view dials every public member.  A joiner behind a
    firewall or NAT reaches the swarm (it dials out), but nobody reaches
    it: admitted, it would look silent to every member and be removed.  So
    the coordinator, on a JOIN from a public peer that is not a member,
    opens its own connection to the joiner's announced address first (the
    one it would use as a member anyway) and admits the joiner once that
    connection's handshake completes.  When it does not complete within
    the dial-back time, the coordinator answers JOIN_REPLY UNREACHABLE
    naming the address: a joiner with COLLAB_CLIENT_MODE=auto joins again
    as a client, one with COLLAB_CLIENT_MODE=0 stops with both remedies.

    At most DIALBACK_MAX dial-backs run at once (the addresses are the
    joiners' choice: a flood of JOINs cannot make the coordinator dial
    more than that); a JOIN beyond them is left for its sender's next try.
    A verdict is kept for DIALBACK_KEEP seconds.  One timer of the loop's
    set (cl_timer.h) is armed at the earliest end of a running dial-back.

    The component sees the transport, the records and the join protocol
    only through its context (cl_engine_dialback.h), built by the loop
    (cl_engine_fanout.c).
*/
#include "engine/cl_engine_dialback.h"

#include "util/cl_log.h"
#include "util/cl_text.h"

#include "mpi_collab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIALBACK_MAX 16
#define DIALBACK_KEEP 60.0

typedef enum { DB_FREE = 0, DB_PENDING, DB_REACHED, DB_UNREACHABLE } db_state_t;

typedef struct {
    uint8_t key[32];
    db_state_t state;
    double since;        /* when the dial-back started, or its verdict */
    cl_wire_join_t join; /* the latest JOIN, answered when the verdict comes */
} db_entry_t;

struct eng_dialback {
    eng_dialback_ctx_t ctx;
    db_entry_t e[DIALBACK_MAX];
    int timer; /* in ctx.timers: the earliest end of a running dial-back */
};

static void on_timer(void *arg, double now);

eng_dialback_t *eng_dialback_new(const eng_dialback_ctx_t *ctx)
{
    eng_dialback_t *d = calloc(1, sizeof *d);
    if (d == NULL)
        return NULL;
    d->ctx = *ctx;
    d->timer = cl_timer_add(ctx->timers, on_timer, d);
    if (d->timer < 0) {
        free(d);
        return NULL;
    }
    return d;
}

void eng_dialback_destroy(eng_dialback_t **d_p)
{
    if (d_p == NULL || *d_p == NULL)
        return;
    cl_timer_remove((*d_p)->ctx.timers, (*d_p)->timer);
    free(*d_p);
    *d_p = NULL;
}

/* How long the coordinator waits for the joiner's handshake. */
static double dialback_time(const eng_dialback_t *d)
{
    return fmax(3.0, fmin(10.0, 2.0 * d->ctx.cfg->timeout));
}

static db_entry_t *find(eng_dialback_t *d, const uint8_t key[32])
{
    for (int i = 0; i < DIALBACK_MAX; i++)
        if (d->e[i].state != DB_FREE && memcmp(d->e[i].key, key, 32) == 0)
            return &d->e[i];
    return NULL;
}

static db_entry_t *slot(eng_dialback_t *d, double now)
{
    db_entry_t *oldest = NULL;
    for (int i = 0; i < DIALBACK_MAX; i++) {
        db_entry_t *x = &d->e[i];
        if (x->state == DB_FREE)
            return x;
        if (x->state != DB_PENDING && (oldest == NULL || x->since < oldest->since))
            oldest = x;
    }
    (void)now;
    return oldest; /* a verdict may give way, a running dial-back never */
}

static void reply_unreachable(eng_dialback_t *d, const db_entry_t *x)
{
    cl_wire_msg_t r;
    memset(&r, 0, sizeof r);
    r.hdr.type = CL_MSG_JOIN_REPLY;
    r.u.join_reply.status = CL_JOIN_UNREACHABLE;
    d->ctx.reply_settings(d->ctx.arg, &r.u.join_reply);
    memcpy(r.u.join_reply.key, x->key, 32);
    snprintf(r.u.join_reply.address, sizeof r.u.join_reply.address, "%s", x->join.address);
    (void)d->ctx.reply(d->ctx.arg, x->key, &r);
}

int eng_dialback_check(eng_dialback_t *d, const uint8_t key[32], const cl_wire_join_t *j)
{
    if (d == NULL || d->ctx.link_up(d->ctx.arg, key))
        return 1;
    double now = d->ctx.now(d->ctx.arg);
    db_entry_t *x = find(d, key);
    if (x != NULL && x->state != DB_PENDING && now - x->since >= DIALBACK_KEEP) {
        x->state = DB_FREE; /* an old verdict: dial again */
        x = NULL;
    }
    if (x != NULL) {
        if (x->state == DB_UNREACHABLE && strcmp(x->join.address, j->address) == 0) {
            reply_unreachable(d, x);
            return -1;
        }
        if (x->state == DB_REACHED)
            return 1; /* its link dropped since; the members will dial it */
        if (x->state == DB_PENDING) {
            /* The latest JOIN for the address being dialed is the one
               admitted (its figures may have changed since); one from
               another address waits for this dial-back's verdict. */
            if (strcmp(x->join.address, j->address) == 0)
                x->join = *j;
            return 0;
        }
        x->state = DB_FREE; /* unreachable at another address: try that one */
    }
    if ((x = slot(d, now)) == NULL)
        return 0; /* too many at once: its next JOIN comes in a second */
    memset(x, 0, sizeof *x);
    memcpy(x->key, key, 32);
    x->join = *j;
    x->since = now;
    x->state = DB_PENDING;
    if (d->ctx.connect(d->ctx.arg, key, j->address) != COLLAB_OK) {
        x->state = DB_UNREACHABLE;
        reply_unreachable(d, x);
        return -1;
    }
    cl_timer_arm_by(d->ctx.timers, d->timer, now + dialback_time(d));
    cl_debug("checking that %.64s can be reached before admitting it", j->address);
    return 0;
}

void eng_dialback_on_up(eng_dialback_t *d, const uint8_t key[32])
{
    db_entry_t *x = d != NULL ? find(d, key) : NULL;
    if (x == NULL || x->state != DB_PENDING)
        return;
    x->state = DB_REACHED;
    x->since = d->ctx.now(d->ctx.arg);
    if (d->ctx.coordinates(d->ctx.arg)) {
        cl_wire_join_t j = x->join;
        d->ctx.admit(d->ctx.arg, key, &j); /* admitted now, not at its next try */
    }
}

/* Ends the dial-backs that took too long; armed again at the earliest
   end of those still running. */
static void on_timer(void *arg, double now)
{
    eng_dialback_t *d = arg;
    double next = INFINITY;
    double limit = dialback_time(d);
    for (int i = 0; i < DIALBACK_MAX; i++) {
        db_entry_t *x = &d->e[i];
        if (x->state != DB_PENDING)
            continue;
        if (now - x->since < limit) {
            next = fmin(next, x->since + limit);
            continue;
        }
        char q[CL_WIRE_STR_MAX + 8];
        cl_warn("could not connect back to joiner %s within %.0f s: it accepts no "
                "connections there (a firewall or NAT); it may join in client mode",
                cl_text_quote(x->join.address, 120, q, sizeof q), limit);
        /* Unless it became a member meanwhile (through another path), the
           link to a place nobody answers goes. */
        if (!d->ctx.is_member(d->ctx.arg, x->key))
            d->ctx.drop(d->ctx.arg, x->key);
        x->state = DB_UNREACHABLE;
        x->since = now;
        if (d->ctx.coordinates(d->ctx.arg))
            reply_unreachable(d, x);
    }
    if (next < INFINITY)
        cl_timer_arm(d->ctx.timers, d->timer, next);
}
