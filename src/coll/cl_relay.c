/*  cl_relay.c - the relay rule (see cl_relay.h and docs/collectives.md §3).

    Why views: a member's STATUS is a snapshot of what it held when it
    learned of the failures named in the status (its view).  From then on
    it drops every message from those members, so the only way it can
    still acquire an old value of a chunk is from a live member whose own
    status of the same view said "held".  Hence if every live member's
    status of view V says "not held" for a chunk, no live member holds
    that chunk's old value or ever will, and all who decide at V decide
    the same.  A producer that reports a chunk as not held stops working
    on it until a decision names it producer again, so it cannot create
    the old value behind the decision's back.  Members whose views differ
    wait: views only grow and converge, since the engine reports every
    failure to every survivor.

    Memory: a part in repair keeps, per member, the latest status (view
    bitmap and held bitmap) and the chunks relayed to it at this view.
*/
#include "cl_relay.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t nchunks;
    size_t cbytes; /* chunk size hint, for deadlines */
    size_t cb;     /* bytes of a chunk bitmap */
    int consumer;  /* -1: every member */
    cl_fallback_t fb;
    uint8_t *held;      /* chunks this member holds */
    uint8_t *producing; /* chunks this member may finish */
    uint8_t *silent;    /* held chunks never reported held nor relayed (NULL: none) */
    int *up;            /* per chunk: expected from (member index) or -1 */
    size_t missing;     /* chunks not held */
    bool repair;        /* in repair: statuses sent at every view */
    int sent_serial;    /* view (nfailed) of the last status sent, -1 none */
    /* allocated when the part enters repair */
    uint8_t *st_have; /* members whose status is stored */
    uint8_t *st_tag;  /* n x nb: view of each member's latest status */
    size_t *st_pop;   /* n: popcount of that view */
    uint8_t *st_held; /* n x cb: chunks held per that status */
    uint8_t *relayed; /* n x cb: chunks relayed to each member at relayed_serial */
    int relayed_serial;
    int *decided; /* per chunk: view of the last decision, -1 none */
} cl_rpart_t;

struct cl_relay {
    cl_coll_t *coll;
    cl_relay_ops_t ops;
    int nparts;
    cl_rpart_t *parts;
    int busy; /* inside poke: nested pokes only mark `again` */
    bool again;
};

cl_relay_t *cl_relay_new(cl_coll_t *coll, int nparts, const cl_relay_ops_t *ops)
{
    cl_relay_t *self = calloc(1, sizeof *self);
    if (self == NULL)
        return NULL;
    self->coll = coll;
    self->ops = *ops;
    self->nparts = nparts;
    self->parts = calloc((size_t)(nparts > 0 ? nparts : 1), sizeof *self->parts);
    if (self->parts == NULL) {
        free(self);
        return NULL;
    }
    return self;
}

static void s_part_free(cl_rpart_t *p)
{
    free(p->held);
    free(p->producing);
    free(p->silent);
    free(p->up);
    free(p->st_have);
    free(p->st_tag);
    free(p->st_pop);
    free(p->st_held);
    free(p->relayed);
    free(p->decided);
}

void cl_relay_destroy(cl_relay_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    cl_relay_t *self = *self_p;
    for (int j = 0; j < self->nparts; j++)
        s_part_free(&self->parts[j]);
    free(self->parts);
    free(self);
    *self_p = NULL;
}

int cl_relay_part(cl_relay_t *self, int part, size_t nchunks, size_t chunk_bytes, int consumer,
                  cl_fallback_t fb, int up)
{
    if (part < 0 || part >= self->nparts || nchunks == 0)
        return COLLAB_ERR_ARG;
    cl_rpart_t *p = &self->parts[part];
    s_part_free(p);
    memset(p, 0, sizeof *p);
    p->nchunks = nchunks;
    p->cbytes = chunk_bytes;
    p->cb = cl_bm_bytes(nchunks);
    p->consumer = consumer;
    p->fb = fb;
    p->held = calloc(p->cb, 1);
    p->producing = calloc(p->cb, 1);
    p->up = malloc(nchunks * sizeof *p->up);
    if (p->held == NULL || p->producing == NULL || p->up == NULL)
        return COLLAB_ERR_NO_MEM;
    for (size_t c = 0; c < nchunks; c++)
        p->up[c] = up;
    p->missing = nchunks;
    p->sent_serial = -1;
    p->relayed_serial = -1;
    return COLLAB_OK;
}

size_t cl_relay_nchunks(const cl_relay_t *self, int part)
{
    return self->parts[part].nchunks;
}

static bool s_consumer(const cl_rpart_t *p, int idx)
{
    return p->consumer < 0 || p->consumer == idx;
}

void cl_relay_hold(cl_relay_t *self, int part, size_t chunk)
{
    cl_rpart_t *p = &self->parts[part];
    if (!cl_bit(p->held, chunk)) {
        cl_bit_set(p->held, chunk);
        p->missing--;
    }
}

int cl_relay_hold_silent(cl_relay_t *self, int part, size_t chunk)
{
    cl_rpart_t *p = &self->parts[part];
    if (p->silent == NULL && (p->silent = calloc(p->cb, 1)) == NULL)
        return COLLAB_ERR_NO_MEM;
    cl_bit_set(p->silent, chunk);
    cl_relay_hold(self, part, chunk);
    return COLLAB_OK;
}

bool cl_relay_held(const cl_relay_t *self, int part, size_t chunk)
{
    return cl_bit(self->parts[part].held, chunk);
}

size_t cl_relay_missing(const cl_relay_t *self, int part)
{
    return self->parts[part].missing;
}

int cl_relay_up(const cl_relay_t *self, int part, size_t chunk)
{
    return self->parts[part].up[chunk];
}

void cl_relay_set_up(cl_relay_t *self, int part, size_t chunk, int up)
{
    self->parts[part].up[chunk] = up;
}

void cl_relay_set_producing(cl_relay_t *self, int part, size_t chunk, bool on)
{
    if (on)
        cl_bit_set(self->parts[part].producing, chunk);
    else
        cl_bit_clr(self->parts[part].producing, chunk);
}

bool cl_relay_producing(const cl_relay_t *self, int part, size_t chunk)
{
    return cl_bit(self->parts[part].producing, chunk);
}

bool cl_relay_repairing(const cl_relay_t *self, int part)
{
    return self->parts[part].repair;
}

/* True when member m's latest status of part p names this member's view.
   Failures it names that this member's engine does not confirm (members
   it sees alive) are not part of it: a member cannot declare another one
   failed (docs/security.md §3), nor hold a repair back by naming a view
   nobody else will reach.  Nor does a member this one disowned
   (cl_coll_disown), which the others still count alive. */
static bool s_at_view(const cl_relay_t *self, const cl_rpart_t *p, int m)
{
    const cl_coll_t *c = self->coll;
    if (!cl_bit(p->st_have, (size_t)m))
        return false;
    const uint8_t *tag = p->st_tag + (size_t)m * c->nb;
    if (c->env.confirms_failed == NULL)
        return p->st_pop[m] == (size_t)c->nfailed && memcmp(tag, c->failed, c->nb) == 0;
    for (int i = 0; i < c->n; i++) {
        bool mine = cl_bit(c->failed, (size_t)i), theirs = cl_bit(tag, (size_t)i);
        if (mine && !theirs && !cl_coll_disowned(c, i))
            return false; /* (a member only this one disowned: nobody else names it) */
        if (theirs && !mine && c->env.confirms_failed(c->env.eng, c->members[i]))
            return false; /* a failure this member will learn of: wait for it */
    }
    return true;
}

/* Sends this member's status of part j at its current view to every live
   member, and gives up production of every chunk it reports as not held. */
static int s_send_status(cl_relay_t *self, int j)
{
    cl_coll_t *c = self->coll;
    cl_rpart_t *p = &self->parts[j];
    p->sent_serial = c->nfailed;
    for (size_t k = 0; k < p->cb; k++)
        p->producing[k] &= p->held[k];
    uint8_t *held = p->held;
    if (p->silent != NULL) {
        /* Silent chunks (decided absent where absences are not relayed)
           are reported as not held: every member decides them itself. */
        if ((held = malloc(p->cb)) == NULL)
            return COLLAB_ERR_NO_MEM;
        for (size_t k = 0; k < p->cb; k++)
            held[k] = p->held[k] & (uint8_t)~p->silent[k];
    }
    int rc = COLLAB_OK;
    for (int m = 0; m < c->n; m++) {
        if (m == c->me || !cl_coll_alive(c, m))
            continue;
        int r = cl_coll_send(c, m, CL_MSG_STATUS, (uint32_t)j, 0, 0, c->failed, c->nb, held, p->cb);
        if (r == COLLAB_ERR_NO_MEM)
            rc = r;
    }
    if (held != p->held)
        free(held);
    return rc;
}

static int s_enter(cl_relay_t *self, int j)
{
    cl_coll_t *c = self->coll;
    cl_rpart_t *p = &self->parts[j];
    if (!p->repair) {
        size_t n = (size_t)c->n;
        p->st_have = calloc(c->nb, 1);
        p->st_tag = calloc(n, c->nb);
        p->st_pop = calloc(n, sizeof *p->st_pop);
        p->st_held = calloc(n, p->cb);
        p->relayed = calloc(n, p->cb);
        p->decided = malloc(p->nchunks * sizeof *p->decided);
        if (p->st_have == NULL || p->st_tag == NULL || p->st_pop == NULL || p->st_held == NULL ||
            p->relayed == NULL || p->decided == NULL)
            return COLLAB_ERR_NO_MEM;
        for (size_t k = 0; k < p->nchunks; k++)
            p->decided[k] = -1;
        p->repair = true;
    }
    if (p->sent_serial != c->nfailed)
        return s_send_status(self, j);
    return COLLAB_OK;
}

/* Relays every chunk this member owes: to each consumer whose status of
   this view lacks a chunk that this member holds, when no lower member's
   status of this view holds it.  In a collective that signs, a lower
   member the consumer's status names failed does not count: the consumer
   may have disowned it for a forgery (cl_coll_disown), and would wait
   for ever for its relay; a copy too many is dropped as a duplicate. */
static int s_serve(cl_relay_t *self, int j)
{
    cl_coll_t *c = self->coll;
    cl_rpart_t *p = &self->parts[j];
    if (!p->repair || p->missing == p->nchunks)
        return COLLAB_OK;
    if (p->relayed_serial != c->nfailed) {
        memset(p->relayed, 0, (size_t)c->n * p->cb);
        p->relayed_serial = c->nfailed;
    }
    int rc = COLLAB_OK;
    for (int m = 0; m < c->n; m++) {
        if (m == c->me || (!cl_coll_alive(c, m) && !cl_coll_disowned(c, m)) ||
            !s_consumer(p, m) || cl_bit(c->done_from, (size_t)m) || !s_at_view(self, p, m))
            continue;
        const uint8_t *theirs = p->st_held + (size_t)m * p->cb;
        uint8_t *sent = p->relayed + (size_t)m * p->cb;
        for (size_t k = 0; k < p->nchunks; k++) {
            if (!cl_bit(p->held, k) || cl_bit(theirs, k) || cl_bit(sent, k) ||
                (p->silent != NULL && cl_bit(p->silent, k)))
                continue;
            const uint8_t *view = p->st_tag + (size_t)m * c->nb;
            bool lower = false;
            for (int h = 0; h < c->me && !lower; h++)
                lower = h != m && cl_coll_alive(c, h) && !(c->sig && cl_bit(view, (size_t)h)) &&
                        s_at_view(self, p, h) && cl_bit(p->st_held + (size_t)h * p->cb, k);
            if (lower)
                continue;
            cl_bit_set(sent, k);
            int r = self->ops.relay(c, j, (int)k, m);
            if (r == COLLAB_ERR_NO_MEM)
                rc = r;
        }
    }
    return rc;
}

/* Takes the decisions possible at this view: every chunk this member does
   not hold and that no live member's status of this view holds. */
static int s_evaluate(cl_relay_t *self, int j)
{
    cl_coll_t *c = self->coll;
    cl_rpart_t *p = &self->parts[j];
    if (!p->repair || p->missing == 0 || p->sent_serial != c->nfailed)
        return COLLAB_OK;
    /* A member this one disowned for a forgery still counts here: the
       others hear its status, so deciding without it could differ. */
    for (int m = 0; m < c->n; m++)
        if (m != c->me && (cl_coll_alive(c, m) || cl_coll_disowned(c, m)) &&
            !s_at_view(self, p, m))
            return COLLAB_OK;
    int producer = -1;
    if (p->fb == CL_FB_SELF)
        producer = cl_coll_lowest_alive(c);
    else if (p->fb == CL_FB_REDUCE)
        producer = cl_coll_lowest_producer(c);
    int rc = COLLAB_OK;
    for (size_t k = 0; k < p->nchunks; k++) {
        if (cl_bit(p->held, k) || p->decided[k] == c->nfailed)
            continue;
        bool someone = false;
        for (int m = 0; m < c->n && !someone; m++)
            someone = m != c->me && (cl_coll_alive(c, m) || cl_coll_disowned(c, m)) &&
                      cl_bit(p->st_held + (size_t)m * p->cb, k);
        if (someone)
            continue;
        p->decided[k] = c->nfailed;
        int r = self->ops.decide(c, j, (int)k, producer);
        if (r != COLLAB_OK && rc == COLLAB_OK)
            rc = r;
    }
    return rc;
}

int cl_relay_poke(cl_relay_t *self, int part)
{
    if (self->busy) {
        self->again = true;
        return COLLAB_OK;
    }
    self->busy = 1;
    int rc = COLLAB_OK;
    int rounds = 0;
    do {
        self->again = false;
        int lo = part < 0 ? 0 : part, hi = part < 0 ? self->nparts : part + 1;
        for (int j = lo; j < hi; j++) {
            int r = s_evaluate(self, j);
            if (r != COLLAB_OK && rc == COLLAB_OK)
                rc = r;
            r = s_serve(self, j);
            if (r != COLLAB_OK && rc == COLLAB_OK)
                rc = r;
        }
        /* A decision may have acquired chunks (absent, own production):
           look again, a bounded number of times. */
    } while (self->again && ++rounds < 4);
    self->busy = 0;
    return rc;
}

int cl_relay_on_status(cl_relay_t *self, int from, const cl_coll_msg_t *msg)
{
    cl_coll_t *c = self->coll;
    if (msg->part >= (uint32_t)self->nparts)
        return COLLAB_ERR_ARG;
    int j = (int)msg->part;
    cl_rpart_t *p = &self->parts[j];
    if (p->nchunks == 0 || msg->chunk != 0 || msg->len != c->nb + p->cb || msg->data == NULL)
        return COLLAB_ERR_ARG;
    const uint8_t *tag = msg->data;
    const uint8_t *held = tag + c->nb;
    /* Bits past the last member / chunk must be clear, and nobody counts
       itself as failed. */
    if (cl_bm_count(tag, c->nb * 8) != cl_bm_count(tag, (size_t)c->n) ||
        cl_bm_count(held, p->cb * 8) != cl_bm_count(held, p->nchunks) || cl_bit(tag, (size_t)from))
        return COLLAB_ERR_ARG;
    int rc = s_enter(self, j);
    if (rc != COLLAB_OK)
        return rc;
    size_t pop = cl_bm_count(tag, (size_t)c->n);
    /* A member's views only grow: an older status arriving late is stale. */
    if (cl_bit(p->st_have, (size_t)from) && pop < p->st_pop[from])
        return COLLAB_OK;
    cl_bit_set(p->st_have, (size_t)from);
    p->st_pop[from] = pop;
    memcpy(p->st_tag + (size_t)from * c->nb, tag, c->nb);
    memcpy(p->st_held + (size_t)from * p->cb, held, p->cb);
    return cl_relay_poke(self, j);
}

int cl_relay_on_fail(cl_relay_t *self, int idx)
{
    cl_coll_t *c = self->coll;
    int rc = COLLAB_OK;
    for (int j = 0; j < self->nparts; j++) {
        cl_rpart_t *p = &self->parts[j];
        if (p->nchunks == 0)
            continue;
        bool enter = p->repair;
        for (size_t k = 0; k < p->nchunks && !enter; k++) {
            int up = p->up[k];
            enter = !cl_bit(p->held, k) && up >= 0 && up != c->me && !cl_coll_alive(c, up);
        }
        (void)idx;
        if (enter) {
            int r = s_enter(self, j);
            if (r != COLLAB_OK && rc == COLLAB_OK)
                rc = r;
        }
    }
    int r = cl_relay_poke(self, -1);
    return rc != COLLAB_OK ? rc : r;
}

void cl_relay_expect(const cl_relay_t *self, size_t *bytes)
{
    const cl_coll_t *c = self->coll;
    for (int j = 0; j < self->nparts; j++) {
        const cl_rpart_t *p = &self->parts[j];
        if (!p->repair)
            continue;
        bool complete = true;
        for (int m = 0; m < c->n; m++)
            if (m != c->me && cl_coll_alive(c, m) && !s_at_view(self, p, m)) {
                bytes[m] += 64;
                complete = false;
            }
        if (!complete || !s_consumer(p, c->me) || p->missing == 0)
            continue;
        for (size_t k = 0; k < p->nchunks; k++) {
            if (cl_bit(p->held, k))
                continue;
            for (int m = 0; m < c->n; m++)
                if (m != c->me && cl_coll_alive(c, m) &&
                    cl_bit(p->st_held + (size_t)m * p->cb, k)) {
                    bytes[m] += p->cbytes;
                    break;
                }
        }
    }
}
