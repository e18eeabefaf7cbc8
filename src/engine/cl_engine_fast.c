/*  cl_engine_fast.c - the engine's side of the same-host fast path
    (cl_fast.h, docs/collectives.md §5): the engine stays the authority on
    membership and sequence numbers.

    Grant.  At every turn of the loop, and when a stream falls idle, each
    communicator's fast path is granted, from the stream's next sequence
    number, only while nothing is changing: COLLAB_SHM_FAST on; a
    communicator of nominal size 2 whose other member is a live, unsuspected
    member of the closed world group with weight 1 (as this peer), reached
    through an up same-host link, or of nominal size 3 .. 8 whose every
    other member is (a group: update_group, docs/collectives.md §5b); no compression, robust
   aggregation or validation; no collective of it queued, running or submitted; no early message
   waiting for it; this peer not leaving; and on the world communicator the elastic layer quiet
   (eng_el_fast_ok: no admission in progress or waiting, no monitor's checkpoint or state check
   due, waiting for its boundary or running, start-up over).  Anything else revokes it.

    Lease.  A grant on the world communicator lapses after FAST_LEASE
    seconds, at the program's next call (cl_fast_lapse: a call under way
    is not cut short), and is given again only after the program posted one full
    step (the stream's period, plus one) on the engine path, so that the
    admitter's work at step boundaries (admissions, state audits,
    checkpoints) still finds boundaries there.  When that stretch on the
    engine path took long (big all-reduces of a group oversubscribing its
    cores), the next lease lasts 9 times as long, up to FAST_LEASE_MAX:
    the engine path then takes at most a tenth of the time.

    Reports.  The application thread reports every completed fast
    sequence; the engine takes the reports before it numbers a new
    submission, at every turn of the loop and before it grants: the
    stream's next sequence, its started count, its early buffer, the
    elastic records (eng_el_on_fast, through the streams' context) and
    the streams' progress counter follow.

    A group's grant is one decision for all its members (update_group,
    cl_fast_agree): each engine publishes whether it would grant, comm
    rank 0 decides "fast from sequence N", each member is granted at
    exactly N, and the first member to number a sequence at or past N for
    the engine path aborts it for all (eng_fast_on_post), so that all
    fall back at the same sequence.

    Revocation by messages.  A collective message for a sequence at or
    after the stream's next one means the other member runs it on the
    engine path: the grant is revoked at once (the other member also
    releases this one's wait itself, cl_fast_before_engine).
*/
#define _GNU_SOURCE
#include "engine/cl_engine_coll_int.h"
#include "engine/cl_fast.h"
#include "engine/cl_shm.h"

#include "util/cl_log.h"

#include <fcntl.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FAST_LEASE 1.0 /* seconds a world grant lasts at least before steps on the engine path */
#define FAST_LEASE_MAX 30.0  /* ... and at most */
#define FAST_LEASE_RATIO 9.0 /* ... else 9 x the last stretch on the engine path took */

/* Applies the reports of s's fast path. */
void eng_fast_drain(eng_cs_t *cs, stream_t *s)
{
    cl_fast_t *f = s->comm != NULL ? atomic_load(&s->comm->fast) : NULL;
    if (f == NULL)
        return;
    cl_fast_report_t rep[64];
    size_t n;
    uint64_t upto = 0; /* one past the last sequence reported */
    while ((n = cl_fast_take(f, rep, 64)) > 0) {
        for (size_t i = 0; i < n; i++) {
            const cl_fast_report_t *r = &rep[i];
            for (uint64_t k = 0; k < r->n; k++) {
                uint64_t seq = r->first + k;
                collab_request_t req;
                memset(&req, 0, sizeof req);
                req.op = CL_OP_COLL;
                req.comm = s->comm;
                req.coll.kind = (cl_coll_kind_t)r->kind;
                req.coll.comm_id = s->comm_id;
                req.coll.seq = seq;
                req.coll.root = r->root;
                req.coll.count = r->count;
                req.coll.dtype = r->dtype;
                req.coll.op.kind = r->op;
                req.coll.sendbuf = r->sendbuf;
                req.coll.recvbuf = r->recvbuf;
                eng_coll_skip_to(s, seq);
                upto = seq + 1 > upto ? seq + 1 : upto;
                if (seq + 1 > s->started)
                    s->started = seq + 1;
                cs->ctx.el_on_fast(cs->ctx.arg, s, &req); /* elastic hook: records */
                cs->progress++;
                s->fast_done++;
            }
            cs->last_done = cs_now(cs);
        }
    }
    /* Early messages of sequences done here are stale; only those: a
       message buffered below s->started for a collective of the engine
       path may still be needed (a window of nonblocking collectives on
       several communicators hung when they were dropped at every turn). */
    if (upto > 0)
        eng_cs_drop_buffered_below(cs, s, upto);
}

/* What every fast path needs but the moment: the path on, nothing of the
   engine changing, no compression, robust aggregation or validation (they
   must see each member's contribution), this peer a member of weight 1. */
static bool steady(eng_cs_t *cs, stream_t *s)
{
    collab_comm_t *c = s->comm;
    if (!cs->ctx.cfg->shm_fast || cl_transport_shm(cs->ctx.tp) == NULL || c == NULL ||
        !cs->ctx.is_member(cs->ctx.arg) || cs->ctx.stopping(cs->ctx.arg))
        return false;
    if (!cl_member_group_closed(cs->ctx.mb) || cs->ctx.cfg->compression != 0)
        return false;
    const cl_settings_t *set = cl_member_settings(cs->ctx.mb);
    if (set->compression != 0 || set->aggregation != 0 || set->verify)
        return false;
    const cl_peer_t *me = cl_member_self(cs->ctx.mb);
    return me != NULL && me->in_group && me->weight == 1.0;
}

/* ... and the moment: nothing of s queued, running or submitted, no early
   message waiting for it. */
static bool idle(stream_t *s)
{
    return s->active == NULL && zlist_size(s->queue) == 0 &&
           atomic_load(&s->comm->coll_pending) == 0 && s->buf_head == NULL;
}

static bool quiet(eng_cs_t *cs, stream_t *s)
{
    return steady(cs, s) && idle(s);
}

/* The record of comm rank r of c when it may take part: a live,
   unsuspected group member of weight 1 linked through shared memory. */
static const cl_peer_t *partner(eng_cs_t *cs, const collab_comm_t *c, int r)
{
    const cl_peer_t *me = cl_member_self(cs->ctx.mb);
    const cl_peer_t *p = cl_member_at_rank(cs->ctx.mb, cl_comm_world_of(c, r));
    if (p == NULL || p == me || !p->in_group || p->state != CL_PEER_ALIVE || p->suspect_since > 0 ||
        p->link_closed || p->client || p->weight != 1.0 ||
        !cl_shm_up(cl_transport_shm(cs->ctx.tp), p->key))
        return NULL;
    return p;
}

/* The other member's record when s (two members) may run on the fast
   path now. */
static const cl_peer_t *allowed(eng_cs_t *cs, stream_t *s)
{
    collab_comm_t *c = s->comm;
    if (c == NULL || c->size != 2 || !quiet(cs, s))
        return NULL;
    const cl_peer_t *p = partner(cs, c, 1 - c->rank);
    if (p == NULL || !cs->ctx.el_fast_ok(cs->ctx.arg, s))
        return NULL;
    return p;
}

/* The world's lease (see the top): true when the grant stands or must
   wait for the steps on the engine path. */
static bool leased(eng_cs_t *cs, stream_t *s, cl_fast_t *f, double now)
{
    bool world = s->comm->kind == CL_COMM_WORLD;
    if (f != NULL && cl_fast_granted(f)) {
        double lease = s->fast_lease > FAST_LEASE ? s->fast_lease : FAST_LEASE;
        if (world && now - s->fast_since > lease && !cl_fast_lapsing(f)) {
            cl_fast_lapse(f); /* at the next call: a call under way finishes */
            s->fast_hold =
                cs->ctx.el_period(cs->ctx.arg) + 2; /* the call under way may still be fast */
            s->fast_hold_from = s->next_seq;
            s->fast_hold_at = now;
        }
        return true;
    }
    if (world && s->fast_hold > 0 && s->next_seq < s->fast_hold_from + s->fast_hold)
        return true;
    if (s->fast_hold > 0) {
        /* The steps on the engine path take at most a tenth of the time
           (slow calls: big all-reduces of a group on two cores). */
        double l = FAST_LEASE_RATIO * (now - s->fast_hold_at);
        s->fast_lease = l < FAST_LEASE ? FAST_LEASE : l > FAST_LEASE_MAX ? FAST_LEASE_MAX : l;
    }
    s->fast_hold = 0;
    return false;
}

/* Grants f from s's next sequence once nothing is inside. */
static void grant(eng_cs_t *cs, stream_t *s, cl_fast_t *f, double now)
{
    if (!cl_fast_idle(f))
        return;
    eng_fast_drain(cs, s);
    if (cl_fast_grant(f, s->next_seq, &s->comm->coll_pending)) {
        s->fast_since = now;
        cl_debug("fast path on communicator %016llx from collective #%llu",
                 (unsigned long long)s->comm->id, (unsigned long long)s->next_seq);
    }
}

/* The communicator's fast record, created on first use (NULL when out of
   memory). */
static cl_fast_t *fast_record(collab_comm_t *c)
{
    cl_fast_t *f = atomic_load(&c->fast);
    if (f == NULL && (f = cl_fast_new()) != NULL)
        atomic_store(&c->fast, f);
    return f;
}

/* The pair's grant: when s may not run fast (!ok) a grant is revoked;
   the lease may keep the grant or the engine path as it is; otherwise
   the communicator's (c, s's) fast record, created on first use.  NULL
   when nothing more is to be done now. */
static cl_fast_t *fast_for_grant(eng_cs_t *cs, stream_t *s, collab_comm_t *c, bool ok, double now)
{
    cl_fast_t *f = atomic_load(&c->fast);
    if (!ok) {
        if (f != NULL && cl_fast_granted(f))
            cl_fast_revoke(f);
        return NULL;
    }
    if (leased(cs, s, f, now))
        return NULL;
    return fast_record(c);
}

/* Comm rank 0's group area: a sealed memfd of `bytes`, mapped here and
   offered under a fresh tag over the link of every other member p[j]
   (whose link ids are kept in s->fast_glinks); NULL when it cannot be. */
static void *group_area_create(cl_shm_t *shm, stream_t *s, const cl_peer_t *const *p, size_t bytes,
                               uint64_t *tag)
{
    collab_comm_t *c = s->comm;
    const int k = c->size;
    *tag = 0;
    while (*tag == 0)
        randombytes_buf(tag, sizeof *tag);
    void *area = NULL;
    int mfd = memfd_create("mpicollab-group", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (mfd < 0 || ftruncate(mfd, (off_t)bytes) != 0 ||
        fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
        (area = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0)) == MAP_FAILED) {
        cl_debug("no group area for communicator %016llx: %m", (unsigned long long)c->id);
        area = NULL;
    }
    for (int j = 1; area != NULL && j < k; j++) {
        s->fast_glinks[j] = cl_shm_link_id(shm, p[j]->key);
        if (!cl_shm_group_offer(shm, p[j]->key, c->id, (uint32_t)k, *tag, mfd, bytes)) {
            munmap(area, bytes);
            area = NULL;
        }
    }
    if (mfd >= 0)
        close(mfd);
    return area;
}

/* Another member's group area: the latest one comm rank 0 (at rank0)
   offered, mapped; NULL when none is there. */
static void *group_area_take(cl_shm_t *shm, const collab_comm_t *c, const cl_peer_t *rank0,
                             size_t bytes, uint64_t *tag)
{
    *tag = cl_shm_group_offered(shm, rank0->key, c->id, (uint32_t)c->size, bytes);
    int fd =
        *tag != 0 ? cl_shm_group_take(shm, rank0->key, c->id, (uint32_t)c->size, *tag, bytes) : -1;
    if (fd < 0)
        return NULL;
    void *area = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return area == MAP_FAILED ? NULL : area;
}

/* A group (3 .. CL_FAST_GROUP_MAX members, all of this host; cl_fast.h,
   docs/collectives.md §5b).  Comm rank 0 creates the area (a sealed
   memfd) and offers it over its link to every other member, again with a
   fresh tag whenever one of those links changed (a member restarted); the
   others attach the latest area rank 0 offered.  The grant is one
   decision for the whole group (cl_fast_agree): each member publishes
   whether it would run fast, comm rank 0 decides "fast from sequence N",
   and each member is granted at exactly N, or leaves the decision (and
   every member falls back at the same sequence). */
static void update_group(eng_cs_t *cs, stream_t *s, double now)
{
    collab_comm_t *c = s->comm;
    cl_shm_t *shm = cl_transport_shm(cs->ctx.tp);
    const int k = c->size;
    const cl_peer_t *p[CL_FAST_GROUP_MAX];
    bool ok = steady(cs, s);
    for (int j = 0; ok && j < k; j++)
        ok = j == c->rank || (p[j] = partner(cs, c, j)) != NULL;
    ok = ok && cs->ctx.el_fast_ok(cs->ctx.arg, s);
    cl_fast_t *f = atomic_load(&c->fast);
    if (!ok) {
        if (f != NULL && cl_fast_granted(f))
            cl_fast_revoke(f);
        if (f != NULL) /* unwilling: no new decision; at the agreed sequence it leaves */
            (void)cl_fast_agree(f, s->next_seq, false, false, &c->coll_pending);
        return;
    }
    if ((f = fast_record(c)) == NULL)
        return;
    const size_t bytes = cl_fast_group_bytes(k);
    bool fresh = cl_fast_link(f) != 0;
    if (c->rank == 0) {
        for (int j = 1; fresh && j < k; j++)
            fresh = s->fast_glinks[j] == cl_shm_link_id(shm, p[j]->key);
    } else {
        uint64_t t = cl_shm_group_offered(shm, p[0]->key, c->id, (uint32_t)k, bytes);
        fresh = fresh && (t == 0 || t == cl_fast_link(f));
    }
    if (!fresh) {
        if (!cl_fast_detach(f))
            return;
        uint64_t tag;
        void *area = c->rank == 0 ? group_area_create(shm, s, p, bytes, &tag)
                                  : group_area_take(shm, c, p[0], bytes, &tag);
        if (area == NULL || !cl_fast_attach_group(f, area, bytes, c->id, c->rank, k, tag))
            return;
    }
    /* The world's lease: a grant that lapses, or steps to post on the
       engine path first (unwilling meanwhile). */
    bool granted = cl_fast_granted(f);
    bool held = leased(cs, s, f, now) && !granted;
    int r = cl_fast_agree(f, s->next_seq, !held, idle(s) && cl_fast_idle(f), &c->coll_pending);
    if (r == CL_FAST_AGREE_ENGAGED) {
        s->fast_since = now;
        cl_debug("group fast path on communicator %016llx from collective #%llu",
                 (unsigned long long)c->id, (unsigned long long)s->next_seq);
    }
}

/* Grants or revokes s's fast path as allowed() says. */
static void update(eng_cs_t *cs, stream_t *s, double now)
{
    collab_comm_t *c = s->comm;
    if (c == NULL)
        return;
    eng_fast_drain(cs, s);
    if (c->size >= 3 && c->size <= CL_FAST_GROUP_MAX) {
        if (cs->ctx.cfg->shm_group) /* COLLAB_SHM_GROUP (on by default): docs/collectives.md §5b */
            update_group(cs, s, now);
        return;
    }
    cl_fast_t *f = atomic_load(&c->fast);
    cl_shm_t *shm = cl_transport_shm(cs->ctx.tp);
    /* An area whose link closed (or was replaced) is given up. */
    if (f != NULL && cl_fast_link(f) != 0 &&
        cl_shm_link_id(shm, cl_fast_peer_key(f)) != cl_fast_link(f))
        (void)cl_fast_detach(f);
    const cl_peer_t *p = allowed(cs, s);
    if ((f = fast_for_grant(cs, s, c, p != NULL, now)) == NULL)
        return;
    uint64_t link = cl_shm_link_id(shm, p->key);
    if (cl_fast_link(f) != link) {
        if (!cl_fast_detach(f))
            return;
        bool low;
        void *area = cl_shm_fast_map(shm, p->key, &low);
        if (area == NULL || !cl_fast_attach(f, area, c->id, c->rank, link, p->key))
            return;
    }
    /* Numbered after every sequence the program completed here. */
    grant(cs, s, f, now);
}

/* The settings all-reduces through host leaders need (eng_coll_hier_ok). */
static bool hier_ok(eng_cs_t *cs)
{
    if (!cs->ctx.cfg->host_leader || !cs->ctx.cfg->shm || cl_transport_shm(cs->ctx.tp) == NULL ||
        !cs->ctx.is_member(cs->ctx.arg) || cs->ctx.stopping(cs->ctx.arg) ||
        !cl_member_group_closed(cs->ctx.mb) || cs->ctx.cfg->compression != 0)
        return false;
    const cl_settings_t *set = cl_member_settings(cs->ctx.mb);
    if (!set->strict || set->compression != 0 || set->aggregation != 0 || set->verify)
        return false;
    const cl_peer_t *me = cl_member_self(cs->ctx.mb);
    return me != NULL && me->in_group && me->weight == 1.0;
}

void eng_fast_hier_update(eng_cs_t *cs)
{
    atomic_store(&cs->hier_ok, hier_ok(cs) ? 1 : 0);
}

bool eng_coll_hier_ok(const eng_cs_t *cs)
{
    return atomic_load(&cs->hier_ok) != 0;
}

void eng_fast_update(eng_cs_t *cs)
{
    double now = cs_now(cs);
    for (size_t i = 0; i < cs->nstreams; i++)
        update(cs, cs->streams[i], now);
}

void eng_fast_update_stream(eng_cs_t *cs, stream_t *s)
{
    update(cs, s, cs_now(cs));
}

void eng_fast_on_post(stream_t *s, uint64_t seq)
{
    cl_fast_t *f = s->comm != NULL ? atomic_load(&s->comm->fast) : NULL;
    if (f != NULL && cl_fast_agree_post(f, seq))
        cl_debug("group fast path on communicator %016llx: collective #%llu on the engine path",
                 (unsigned long long)s->comm->id, (unsigned long long)seq);
}

void eng_fast_on_message(eng_cs_t *cs, stream_t *s, uint64_t seq)
{
    cl_fast_t *f = s->comm != NULL ? atomic_load(&s->comm->fast) : NULL;
    if (f == NULL || !cl_fast_granted(f))
        return;
    eng_fast_drain(cs, s);
    if (seq >= s->next_seq)
        cl_fast_revoke(f);
}

void eng_fast_release(eng_cs_t *cs, stream_t *s)
{
    if (s->comm == NULL)
        return;
    cl_fast_t *f = atomic_load(&s->comm->fast);
    if (f == NULL)
        return;
    eng_fast_drain(cs, s);
    atomic_store(&s->comm->fast, NULL);
    cl_fast_destroy(&f);
}
