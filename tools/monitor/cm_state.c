/*  cm_state.c - collab-monitor's live picture of the swarm (cm_state.h).

    Peers are kept in a flat array searched by id: a swarm has at most a
    few thousand, and every lookup happens once per report or view.  A
    peer that leaves the view stays in the table (alive = false) so that
    the dashboard shows whom the swarm lost; when the table is full the
    oldest departed peer makes room.
*/
#include "cm_state.h"

#include "util/cl_log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

double cm_wall(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

int cm_state_init(cm_state_t *st)
{
    memset(st, 0, sizeof *st);
    st->peers = calloc(CM_PEERS_MAX, sizeof *st->peers);
    st->events = calloc(CM_EVENTS_MAX, sizeof *st->events);
    if (st->peers == NULL || st->events == NULL) {
        free(st->peers);
        free(st->events);
        return -1;
    }
    pthread_mutex_init(&st->mu, NULL);
    st->started = cm_wall();
    return 0;
}

void cm_state_fini(cm_state_t *st)
{
    pthread_mutex_destroy(&st->mu);
    free(st->peers);
    free(st->events);
    memset(st, 0, sizeof *st);
}

/* The record of id, created if missing (NULL when the table is full of
   live peers).  Called locked. */
static cm_peer_t *peer_get(cm_state_t *st, const char *id)
{
    for (int i = 0; i < st->npeers; i++)
        if (strcmp(st->peers[i].id, id) == 0)
            return &st->peers[i];
    cm_peer_t *p = NULL;
    if (st->npeers < CM_PEERS_MAX) {
        p = &st->peers[st->npeers++];
    } else {
        double oldest = INFINITY;
        for (int i = 0; i < st->npeers; i++)
            if (!st->peers[i].alive && st->peers[i].first_seen < oldest) {
                oldest = st->peers[i].first_seen;
                p = &st->peers[i];
            }
        if (p == NULL)
            return NULL;
    }
    memset(p, 0, sizeof *p);
    snprintf(p->id, sizeof p->id, "%s", id);
    p->rank = -1;
    p->first_seen = cm_wall();
    return p;
}

static void push_event(cm_state_t *st, const char *kind, int rank, const char *id,
                       const char *address, const char *detail)
{
    if (st->nevents == CM_EVENTS_MAX) { /* the store fell behind: keep the newest */
        memmove(&st->events[0], &st->events[1], (CM_EVENTS_MAX - 1) * sizeof st->events[0]);
        st->nevents--;
    }
    cm_event_t *e = &st->events[st->nevents++];
    memset(e, 0, sizeof *e);
    e->t = cm_wall();
    snprintf(e->kind, sizeof e->kind, "%s", kind);
    e->rank = rank;
    snprintf(e->peer, sizeof e->peer, "%s", id);
    snprintf(e->address, sizeof e->address, "%s", address);
    snprintf(e->detail, sizeof e->detail, "%s", detail);
}

/* ---------------------------------------------------------------------- */
/* Hooks (engine thread). */

static void on_report(void *arg, const uint8_t key[32], const char *id, const char *address,
                      bool client, const cl_wire_report_t *r)
{
    (void)key;
    cm_state_t *st = arg;
    pthread_mutex_lock(&st->mu);
    cm_peer_t *p = peer_get(st, id);
    if (p != NULL) {
        if (p->has_report && r->collectives >= p->rep.collectives) {
            p->prev = p->rep;
            p->prev_t = p->rep_t;
        } else {
            p->prev_t = 0; /* first report, or the peer restarted */
        }
        p->rep = *r;
        p->rep_t = cm_wall();
        p->has_report = true;
        p->last_seen = p->rep_t;
        p->rank = r->rank;
        p->client = client;
        snprintf(p->address, sizeof p->address, "%s", address);
        st->reports_total++;
    }
    pthread_mutex_unlock(&st->mu);
}

static void on_event(void *arg, int kind, int rank, bool monitor, const char *id,
                     const char *address, const char *why)
{
    static const char *const names[] = {"joined", "failed", "left", "ungrouped"};
    cm_state_t *st = arg;
    if (kind < 0 || kind > 3)
        return;
    pthread_mutex_lock(&st->mu);
    st->events_total[kind]++;
    cm_peer_t *p = peer_get(st, id);
    if (p != NULL) {
        p->monitor = monitor;
        if (rank >= 0)
            p->rank = rank;
        if (kind == CL_EVENT_UNGROUPED && strstr(why, "behind") != NULL)
            p->straggler = true;
        if (kind == CL_EVENT_JOINED)
            p->straggler = false;
    }
    push_event(st, names[kind], monitor ? -1 : rank, id, address, why);
    pthread_mutex_unlock(&st->mu);
    /* The lines users know from collaborative training. */
    const char *where = address[0] != '\0' ? address : "client mode";
    if (monitor)
        cl_info("monitor %.8s… %s (%s)", id, names[kind], where);
    else if (kind == CL_EVENT_FAILED)
        cl_warn("rank %d failed: %s (%.8s…, %s)", rank, why, id, where);
    else if (kind == CL_EVENT_JOINED)
        cl_info("rank %d joined (%.8s…, %s)", rank, id, where);
    else if (kind == CL_EVENT_LEFT)
        cl_info("rank %d left (%.8s…, %s)", rank, id, where);
    else
        cl_info("rank %d left the group: %s", rank, why);
}

static void on_view(void *arg, const cl_wire_view_t *v)
{
    cm_state_t *st = arg;
    pthread_mutex_lock(&st->mu);
    st->epoch = v->epoch;
    st->world_size = v->settings.world_size;
    st->target_group = v->settings.target_group;
    st->compression = v->settings.compression;
    st->strict = v->settings.strict != 0;
    for (int i = 0; i < st->npeers; i++)
        st->peers[i].alive = false;
    for (uint32_t i = 0; i < v->count; i++) {
        const cl_wire_member_t *m = &v->members[i];
        char id[64];
        if (cl_base58_encode(m->key, 32, id, sizeof id) != 0)
            continue;
        cm_peer_t *p = peer_get(st, id);
        if (p == NULL)
            continue;
        p->alive = true;
        p->monitor = (m->flags & CL_MEMBER_MONITOR) != 0;
        p->client = (m->flags & CL_MEMBER_CLIENT) != 0;
        p->in_group = (m->flags & CL_MEMBER_IN_GROUP) != 0;
        if (p->in_group)
            p->straggler = false;
        p->rank = m->rank;
        snprintf(p->address, sizeof p->address, "%s", m->address);
    }
    pthread_mutex_unlock(&st->mu);
}

cl_engine_hooks_t cm_state_hooks(cm_state_t *st)
{
    cl_engine_hooks_t h = {st, on_report, on_event, on_view};
    return h;
}

/* ---------------------------------------------------------------------- */
/* Sampling (main loop). */

/* A report counts for rates while fresh: three report intervals at most. */
#define FRESH 15.0

void cm_state_sample(cm_state_t *st, double now, cm_sample_t *out)
{
    memset(out, 0, sizeof *out);
    out->t = now;
    double loss_sum = 0;
    int loss_n = 0;
    pthread_mutex_lock(&st->mu);
    for (int i = 0; i < st->npeers; i++) {
        cm_peer_t *p = &st->peers[i];
        if (!p->alive || p->monitor)
            continue;
        out->alive++;
        if (!p->has_report || now - p->rep_t > FRESH)
            continue;
        if (p->rep.steps > out->step)
            out->step = p->rep.steps;
        if ((int)p->rep.group_size > out->group_size)
            out->group_size = (int)p->rep.group_size;
        for (int k = 0; k < p->rep.nvalues; k++)
            if (strcmp(p->rep.values[k].name, "loss") == 0) {
                loss_sum += p->rep.values[k].value;
                loss_n++;
            }
        double dt = p->rep_t - p->prev_t;
        if (p->prev_t > 0 && dt > 0.05) {
            double ds = (double)(p->rep.steps - p->prev.steps) / dt;
            double db = (double)(p->rep.bytes_sent - p->prev.bytes_sent) / dt;
            if (ds > out->steps_per_s)
                out->steps_per_s = ds; /* the swarm's pace: its fastest member's */
            out->samples_per_s += ds * p->rep.weight;
            out->mbit_s += db * 8.0 / 1e6;
        }
    }
    pthread_mutex_unlock(&st->mu);
    if (loss_n > 0) {
        out->has_loss = true;
        out->loss = loss_sum / loss_n;
    }
}

int cm_state_take_events(cm_state_t *st, cm_event_t *out, int cap)
{
    pthread_mutex_lock(&st->mu);
    int n = st->nevents < cap ? st->nevents : cap;
    memcpy(out, st->events, (size_t)n * sizeof *out);
    memmove(&st->events[0], &st->events[n], (size_t)(st->nevents - n) * sizeof *out);
    st->nevents -= n;
    pthread_mutex_unlock(&st->mu);
    return n;
}
