/*  cl_engine_leave.c - a graceful departure keeps its contributions.

    MPI lets a rank return from a collective as soon as its own part is
    done (the non-root ranks of a reduce or a gather) and then call
    MPI_Finalize while others still compute.  Its data is already on its
    way, on the same ordered connection as the GOODBYE that follows it, so
    nothing is lost as long as every member counts it in exactly the
    collectives it entered (docs/elastic.md §10):

    - The leaving peer.  Once its own collectives are done (or their
      deadline passed), it sends every member a GOODBYE naming, per
      communicator, how many collectives it entered, and waits until every
      member that still answers acknowledges it (BYE_ACK), at most
      COLLAB_TIMEOUT.  While it waits, its engine keeps answering relay
      requests for the collectives it completed.
    - A member that gets the GOODBYE already holds every message its sender
      sent it.  It records the departure, answers BYE_ACK and counts the
      sender in every collective below `entered` on that communicator (its
      messages may pull such a collective back to the generation it ran
      under, as a group member's would) and as absent from the next one
      on.  Should a collective it entered still wait for something from
      it, that never comes: it is counted as failed there at once.
      A member that leaves too, or that the view drops, is not waited
      for.
    - The coordinator removes it from the view once its connection closed
      (it got its acknowledgements and went) or COLLAB_TIMEOUT after the
      GOODBYE, so that every member learned `entered` before the view that
      drops it (cl_engine_member.c).

    The records of departed peers and this peer's own departure are the
    component's state; the rest of the engine asks through eng_leave_*
    (cl_engine_leave.h).  It sees the records, the clock, sending and the
    communicators this peer entered only through its context, built by
    the loop (cl_engine_fanout.c, which also hands it BYE_ACK).
*/
#include "engine/cl_engine_leave.h"

#include "util/cl_log.h"

#include "mpi_collab.h"

#include <stdlib.h>
#include <string.h>

#define DEPARTED_MAX 1024 /* departures remembered; the oldest is forgotten first */

typedef struct {
    uint8_t key[32];
    int world; /* the rank it held */
    uint32_t ncomms;
    cl_wire_bye_comm_t *comms; /* from its GOODBYE */
} departed_t;

struct eng_leave {
    eng_leave_ctx_t ctx;
    departed_t *dep; /* oldest first */
    size_t ndep, capdep;
    /* This peer's own departure. */
    bool started;
    double deadline;
    int timer;            /* in ctx.timers: deadline, while acknowledgements are missing */
    uint8_t (*await)[32]; /* members that have not acknowledged yet */
    size_t nawait;
};

/* The departure's deadline came: the loop's turn it wakes ends the
   departure (eng_leave_done, from the loop's progress of the leave). */
static void on_deadline(void *arg, double now)
{
    (void)arg;
    (void)now;
}

eng_leave_t *eng_leave_new(const eng_leave_ctx_t *ctx)
{
    eng_leave_t *l = calloc(1, sizeof *l);
    if (l == NULL)
        return NULL;
    l->ctx = *ctx;
    l->timer = cl_timer_add(ctx->timers, on_deadline, l);
    if (l->timer < 0) {
        free(l);
        return NULL;
    }
    return l;
}

void eng_leave_destroy(eng_leave_t **l_p)
{
    eng_leave_t *l = l_p != NULL ? *l_p : NULL;
    if (l == NULL)
        return;
    cl_timer_remove(l->ctx.timers, l->timer);
    for (size_t i = 0; i < l->ndep; i++)
        free(l->dep[i].comms);
    free(l->dep);
    free(l->await);
    free(l);
    *l_p = NULL;
}

/* A GOODBYE can reach a peer that has not installed its first view yet
   (it joined as the sender left): its record waits for the rank the
   view gives the sender. */
static void resolve(eng_leave_t *l)
{
    for (size_t i = 0; i < l->ndep; i++) {
        departed_t *d = &l->dep[i];
        if (d->world >= 0)
            continue;
        const cl_peer_t *p = cl_member_find(l->ctx.members, d->key);
        if (p != NULL)
            d->world = p->rank >= 0 ? p->rank : p->prev_rank;
    }
}

/* The record of the peer that held world rank w, if it is still the one
   that left (a later holder of the rank is someone else). */
static departed_t *find_world(eng_leave_t *l, int w)
{
    if (l == NULL || w < 0)
        return NULL;
    resolve(l);
    const cl_peer_t *holder = cl_member_at_rank(l->ctx.members, w);
    for (size_t i = l->ndep; i-- > 0;) {
        departed_t *d = &l->dep[i];
        if (d->world != w)
            continue;
        if (holder != NULL && memcmp(holder->key, d->key, 32) != 0)
            return NULL;
        return d;
    }
    return NULL;
}

int eng_leave_status(eng_leave_t *l, int w, uint64_t comm, uint64_t seq)
{
    const departed_t *d = find_world(l, w);
    if (d == NULL)
        return -1;
    for (uint32_t i = 0; i < d->ncomms; i++)
        if (d->comms[i].comm == comm)
            return seq < d->comms[i].entered ? 1 : 0;
    return 0;
}

bool eng_leave_cut(eng_leave_t *l, int w, uint64_t comm, uint64_t seq)
{
    departed_t *d = find_world(l, w);
    if (d == NULL)
        return false;
    for (uint32_t i = 0; i < d->ncomms; i++) {
        if (d->comms[i].comm != comm || d->comms[i].entered <= seq + 1)
            continue;
        cl_warn("rank %d, which left, sent nothing for collective #%llu of communicator %llu "
                "although it named %llu collectives entered: it ran them in a group without this "
                "peer; it counts as absent here from #%llu on",
                w, (unsigned long long)seq, (unsigned long long)comm,
                (unsigned long long)d->comms[i].entered, (unsigned long long)(seq + 1));
        d->comms[i].entered = seq + 1;
        return true;
    }
    return false;
}

int eng_leave_contributors(eng_leave_t *l, uint64_t comm, uint64_t seq, int *out, int max)
{
    int n = 0;
    if (l != NULL)
        resolve(l);
    for (size_t i = 0; l != NULL && i < l->ndep && n < max; i++) {
        const departed_t *d = &l->dep[i];
        if (find_world(l, d->world) == d && eng_leave_status(l, d->world, comm, seq) == 1)
            out[n++] = d->world;
    }
    return n;
}

bool eng_leave_key(eng_leave_t *l, int w, uint8_t key[32])
{
    const departed_t *d = find_world(l, w);
    if (d == NULL)
        return false;
    memcpy(key, d->key, 32);
    return true;
}

int eng_leave_world_of(eng_leave_t *l, const uint8_t key[32])
{
    if (l != NULL)
        resolve(l);
    for (size_t i = l != NULL ? l->ndep : 0; i-- > 0;)
        if (memcmp(l->dep[i].key, key, 32) == 0)
            return l->dep[i].world;
    return -1;
}

void eng_leave_on_goodbye(eng_leave_t *l, const cl_peer_t *from, const uint8_t key[32],
                          const cl_wire_goodbye_t *g)
{
    if (l == NULL)
        return;
    /* Acknowledged whatever happens below: everything the sender sent
       this engine before the GOODBYE has arrived. */
    cl_wire_msg_t ack;
    memset(&ack, 0, sizeof ack);
    ack.hdr.type = CL_MSG_BYE_ACK;
    if (from != NULL)
        (void)l->ctx.send(l->ctx.arg, from, &ack);
    else
        (void)l->ctx.reply(l->ctx.arg, key, &ack);
    /* A member that leaves too needs nothing from this peer any more (its
       own collectives are done), and may be gone before our GOODBYE
       reaches it. */
    eng_leave_on_ack(l, key);
    int w = from != NULL ? (from->rank >= 0 ? from->rank : from->prev_rank) : -1;
    cl_wire_bye_comm_t *comms = NULL;
    if (g->count > 0) {
        comms = malloc(g->count * sizeof *comms);
        if (comms == NULL) {
            cl_error("out of memory recording the departure of rank %d; it counts as absent "
                     "from the collectives it had entered",
                     w);
            return;
        }
        memcpy(comms, g->comms, g->count * sizeof *comms);
    }
    /* A second GOODBYE of the same peer replaces the first. */
    for (size_t i = 0; i < l->ndep; i++)
        if (memcmp(l->dep[i].key, key, 32) == 0) {
            free(l->dep[i].comms);
            l->dep[i].comms = comms;
            l->dep[i].ncomms = g->count;
            l->dep[i].world = w;
            return;
        }
    if (l->ndep == DEPARTED_MAX) {
        free(l->dep[0].comms);
        memmove(&l->dep[0], &l->dep[1], (l->ndep - 1) * sizeof l->dep[0]);
        l->ndep--;
    }
    if (l->ndep == l->capdep) {
        size_t cap = l->capdep > 0 ? 2 * l->capdep : 8;
        departed_t *a = realloc(l->dep, cap * sizeof *a);
        if (a == NULL) {
            free(comms);
            cl_error("out of memory recording the departure of rank %d; it counts as absent "
                     "from the collectives it had entered",
                     w);
            return;
        }
        l->dep = a;
        l->capdep = cap;
    }
    departed_t *d = &l->dep[l->ndep++];
    memcpy(d->key, key, 32);
    d->world = w;
    d->ncomms = g->count;
    d->comms = comms;
    for (uint32_t i = 0; i < g->count; i++)
        cl_debug("rank %d leaves after %llu collective%s on communicator %llu", w,
                 (unsigned long long)comms[i].entered, comms[i].entered == 1 ? "" : "s",
                 (unsigned long long)comms[i].comm);
}

void eng_leave_on_ack(eng_leave_t *l, const uint8_t key[32])
{
    if (l == NULL || !l->started)
        return;
    for (size_t i = 0; i < l->nawait; i++)
        if (memcmp(l->await[i], key, 32) == 0) {
            cl_debug("left: %zu acknowledgement%s still missing", l->nawait - 1,
                     l->nawait == 2 ? "" : "s");
            memmove(l->await[i], l->await[l->nawait - 1], 32);
            l->nawait--;
            if (l->nawait == 0)
                cl_timer_cancel(l->ctx.timers, l->timer);
            return;
        }
}

/* Fills g with the communicators this peer entered collectives on. */
static void fill_goodbye(eng_leave_t *l, cl_wire_goodbye_t *g, cl_wire_bye_comm_t *comms)
{
    size_t n = l->ctx.entered(l->ctx.arg, comms, CL_WIRE_GOODBYE_MAX);
    if (n > CL_WIRE_GOODBYE_MAX) {
        cl_warn("this peer leaves with collectives on more than %d communicators; the "
                "others count it as absent from the ones its goodbye does not name",
                CL_WIRE_GOODBYE_MAX);
        n = CL_WIRE_GOODBYE_MAX;
    }
    g->count = (uint32_t)n;
    g->comms = comms;
}

void eng_leave_start(eng_leave_t *l)
{
    if (l == NULL)
        return;
    cl_wire_bye_comm_t comms[CL_WIRE_GOODBYE_MAX];
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_GOODBYE;
    fill_goodbye(l, &m.u.goodbye, comms);
    size_t n;
    cl_peer_t *const *list = cl_member_list(l->ctx.members, &n);
    l->started = true;
    l->deadline = l->ctx.now(l->ctx.arg) + l->ctx.cfg->timeout;
    l->nawait = 0;
    free(l->await);
    l->await = malloc((n > 0 ? n : 1) * 32);
    for (size_t i = 0; i < n; i++) {
        const cl_peer_t *p = list[i];
        if (memcmp(p->key, l->ctx.self_key, 32) == 0)
            continue;
        int rc = l->ctx.send(l->ctx.arg, p, &m);
        /* One that left already needs nothing; one that failed is
           dropped by the view, and one that went silent gets
           COLLAB_TIMEOUT. */
        if (rc == COLLAB_OK && l->await != NULL && p->state != CL_PEER_GONE &&
            eng_leave_world_of(l, p->key) < 0)
            memcpy(l->await[l->nawait++], p->key, 32);
    }
    /* The monitors learn of the departure too (docs/monitor.md); they
       hold no collective, so nothing waits for their acknowledgement. */
    cl_peer_t *const *mons = cl_member_monitors(l->ctx.members, &n);
    for (size_t i = 0; i < n; i++)
        if (memcmp(mons[i]->key, l->ctx.self_key, 32) != 0)
            (void)l->ctx.send(l->ctx.arg, mons[i], &m);
    if (l->nawait > 0) {
        cl_timer_arm(l->ctx.timers, l->timer, l->deadline);
        cl_debug("left: waiting for %zu member%s to acknowledge the goodbye", l->nawait,
                 l->nawait == 1 ? "" : "s");
    }
}

bool eng_leave_started(const eng_leave_t *l)
{
    return l != NULL && l->started;
}

bool eng_leave_done(eng_leave_t *l, double now)
{
    if (l == NULL || !l->started)
        return true;
    /* A member the view dropped (it failed) needs nothing any more.  A
       closed connection alone is no reason to stop waiting: a connection
       still being set up reports that too, and the GOODBYE waits in its
       queue. */
    for (size_t i = 0; i < l->nawait;) {
        const cl_peer_t *p = cl_member_find(l->ctx.members, l->await[i]);
        if (p == NULL || p->state == CL_PEER_GONE || p->rank < 0) {
            cl_debug("left: no acknowledgement needed from a peer the view dropped");
            memmove(l->await[i], l->await[l->nawait - 1], 32);
            l->nawait--;
        } else {
            i++;
        }
    }
    if (l->nawait == 0) {
        cl_timer_cancel(l->ctx.timers, l->timer);
        return true;
    }
    if (now >= l->deadline) {
        char desc[CL_WIRE_STR_MAX + 64];
        for (size_t i = 0; i < l->nawait; i++) {
            cl_peer_t *p = cl_member_find(l->ctx.members, l->await[i]);
            if (p != NULL)
                cl_warn("%s did not acknowledge this peer's goodbye within COLLAB_TIMEOUT "
                        "(%.1f s); leaving without it",
                        l->ctx.desc(p, desc, sizeof desc), l->ctx.cfg->timeout);
        }
        l->nawait = 0;
        cl_timer_cancel(l->ctx.timers, l->timer);
        return true;
    }
    return false;
}
