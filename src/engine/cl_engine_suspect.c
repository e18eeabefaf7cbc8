/*  cl_engine_suspect.c - the failure detector: heartbeats, suspicion, the
    coordinator's side of it, and the coordinator's tenure.

    Members heartbeat every COLLAB_TIMEOUT/4; one that is silent for
    COLLAB_TIMEOUT, or whose connection closed, is suspected
    (eng_suspect_peer) and reported to the coordinator (SUSPECT); the
    coordinator confirms a report against what it sees itself and removes
    the suspects in its next view (eng_suspect_remove; a departed peer
    only once its GOODBYE could reach everyone).  When the coordinator
    itself is suspected, the next member in rank order takes over: every
    peer computes that locally from the view and its own suspicions,
    without clocks (eng_suspect_coordinates, eng_suspect_take_over).  A
    member that is alive but late in a collective is a straggler: taken
    out of the group, never the swarm, and only when a step boundary is
    known at which it can be re-admitted, on two reports (the authority's
    straggler vote).  COLLAB_VERIFY verdicts (docs/security.md §6c) end
    here too: the coordinator removes a member it convicts itself and
    bans it for 10 × COLLAB_BAN_TIME, and checks the part of one a member
    reports.  A member whose
    early collective messages passed their credit and were dropped here
    (eng_suspect_overdrawn) is reported as a straggler, so that the
    group, not this peer alone, leaves it out.

    The component sees the engine only through eng_suspect_ctx_t
    (cl_engine_suspect.h), built by cl_engine_member.c.
*/
#include "engine/cl_engine_suspect.h"

#include "engine/cl_engine_timer.h"
#include "util/cl_log.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REASON_LEFT ENG_SUSPECT_LEFT

#define PURGE_KEEP 3600.0 /* seconds a departed peer's record (and rank) is remembered */

/* Epochs a new coordinator skips (see eng_suspect_take_over). */
#define TAKEOVER_EPOCHS 64

/* A convicted reducer's key stays banned at the coordinator this many
   times COLLAB_BAN_TIME (600 s by default), so that it cannot rejoin at
   once (docs/security.md §6c). */
#define CONVICT_BAN_FACTOR 10.0

#define DESC_MAX (CL_WIRE_STR_MAX + 64)

struct eng_suspect {
    eng_suspect_ctx_t ctx;
    int timer; /* in ctx.timers: the next heartbeat or check */
    double next_heartbeat;
    double next_check;
    double next_purge;
    bool coordinating;        /* a tenure as coordinator began (take_over) */
    uint64_t tenure_end;      /* epoch of the view that ended this peer's last tenure (0: none) */
    uint64_t max_epoch_heard; /* highest view epoch in a heartbeat */
    struct {
        uint8_t key[32]; /* a member reported for a wrong result (COLLAB_VERIFY) */
        int left;        /* butterfly all-reduces in which this coordinator checks its part */
    } vtarget[4];
};

static void on_timer(void *arg, double now);

eng_suspect_t *eng_suspect_new(const eng_suspect_ctx_t *ctx)
{
    eng_suspect_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->ctx = *ctx;
    s->timer = cl_timer_add(ctx->timers, on_timer, s);
    if (s->timer < 0) {
        free(s);
        return NULL;
    }
    return s;
}

void eng_suspect_destroy(eng_suspect_t **s_p)
{
    if (s_p == NULL || *s_p == NULL)
        return;
    cl_timer_remove((*s_p)->ctx.timers, (*s_p)->timer);
    free(*s_p);
    *s_p = NULL;
}

const char *eng_suspect_reason_text(int reason)
{
    switch (reason) {
    case CL_SUSPECT_SILENT:
        return "it went silent";
    case CL_SUSPECT_CLOSED:
        return "its connection closed";
    case CL_SUSPECT_STRAGGLER:
        return "it fell behind the group";
    case CL_SUSPECT_MISMATCH:
        return "it called a different collective";
    case CL_SUSPECT_CORRUPT:
        return "it returned a wrong result (COLLAB_VERIFY)";
    case REASON_LEFT:
        return "it left";
    default:
        return "it is no longer reachable";
    }
}

static double now_of(const eng_suspect_t *s)
{
    return s->ctx.now(s->ctx.arg);
}

static bool is_self(const eng_suspect_t *s, const cl_peer_t *p)
{
    return memcmp(p->key, s->ctx.self_key, 32) == 0;
}

static const char *desc(const eng_suspect_t *s, const cl_peer_t *p, char *out, size_t len)
{
    return s->ctx.desc(s->ctx.arg, p, out, len);
}

/* ---------------------------------------------------------------------- */
/* The coordinator's tenure. */

bool eng_suspect_coordinates(const eng_suspect_t *s)
{
    const cl_peer_t *c = cl_member_coordinator(s->ctx.mb);
    return s->ctx.is_member(s->ctx.arg) && c != NULL && is_self(s, c);
}

void eng_suspect_take_over(eng_suspect_t *s)
{
    assert(eng_suspect_coordinates(s));
    if (s->coordinating)
        return;
    /* Taking over: the views this peer makes from now on get epochs above
       any view the coordinator before it may have sent to some peers only
       (those never collide with ours). */
    uint64_t base = cl_member_epoch(s->ctx.mb);
    if (s->max_epoch_heard > base)
        base = s->max_epoch_heard;
    cl_member_raise_epoch(s->ctx.mb, base + TAKEOVER_EPOCHS);
    s->coordinating = true;
}

void eng_suspect_tenure(eng_suspect_t *s)
{
    /* A tenure as coordinator ends when this peer no longer coordinates;
       eng_suspect_take_over begins the next one.  Asked where that can
       change: a view installed (_member), a suspect revived (revive). */
    if (s->coordinating && !eng_suspect_coordinates(s)) {
        s->coordinating = false;
        s->tenure_end = cl_member_epoch(s->ctx.mb);
    }
}

void eng_suspect_started(eng_suspect_t *s, bool founder)
{
    double now = now_of(s);
    s->next_heartbeat = now;
    s->next_check = now + s->ctx.hb_interval;
    cl_timer_arm(s->ctx.timers, s->timer, now);
    /* A membership begins a tenure only for a founder (no coordinator
       before it: nothing to take over); one that was a member before
       coordinated nothing while it was out. */
    s->coordinating = founder;
    s->tenure_end = 0; /* a tenure of an earlier membership left nothing to answer for */
}

/* ---------------------------------------------------------------------- */
/* Suspicion. */

/* A member's suspicion of p, for the coordinator to confirm. */
static void tell_coordinator(eng_suspect_t *s, const cl_peer_t *p, int reason)
{
    cl_peer_t *c = cl_member_coordinator(s->ctx.mb);
    if (c == NULL)
        return;
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_SUSPECT;
    memcpy(m.u.suspect.key, p->key, 32);
    m.u.suspect.reason = (uint8_t)reason;
    (void)s->ctx.send(s->ctx.arg, c, &m);
}

void eng_suspect_peer(eng_suspect_t *s, cl_peer_t *p, int reason)
{
    char d[DESC_MAX];
    if (is_self(s, p) || p->state != CL_PEER_ALIVE)
        return;
    p->state = CL_PEER_SUSPECT;
    p->suspect_reason = reason;
    p->suspect_since = now_of(s);
    if (reason == REASON_LEFT)
        cl_debug("%s said goodbye", desc(s, p, d, sizeof d));
    else if (reason != CL_SUSPECT_CORRUPT) /* named by eng_suspect_corrupt */
        cl_warn("%s seems dead: %s%s", desc(s, p, d, sizeof d), eng_suspect_reason_text(reason),
                reason == CL_SUSPECT_SILENT ? " (no message for COLLAB_TIMEOUT)" : "");
    if (!s->ctx.is_member(s->ctx.arg))
        return;
    if (eng_suspect_coordinates(s)) {
        eng_suspect_take_over(s);
        eng_suspect_remove(s);
        return;
    }
    if (reason != REASON_LEFT)
        tell_coordinator(s, p, reason);
}

/* Whether a view may drop p yet.  A peer that said goodbye is dropped once
   its connection closed (it collected its acknowledgements and went) or
   COLLAB_TIMEOUT after the goodbye: until then members may still be
   receiving the GOODBYE that tells them which collectives count it, and a
   view that dropped it first would make them count it as absent
   (cl_engine_leave.c). */
static bool may_remove(const eng_suspect_t *s, const cl_peer_t *p, double now)
{
    if (p->state != CL_PEER_SUSPECT || is_self(s, p))
        return false;
    return p->suspect_reason != REASON_LEFT || p->link_closed ||
           now - p->suspect_since >= s->ctx.cfg->timeout;
}

void eng_suspect_remove(eng_suspect_t *s)
{
    size_t n, nm;
    cl_peer_t *const *list = cl_member_list(s->ctx.mb, &n);
    cl_peer_t *const *mons = cl_member_monitors(s->ctx.mb, &nm);
    uint8_t(*keys)[32] = malloc((n + nm > 0 ? n + nm : 1) * 32);
    if (keys == NULL)
        return;
    size_t k = 0;
    double now = now_of(s);
    for (size_t i = 0; i < nm + n; i++) {
        cl_peer_t *p = i < nm ? mons[i] : list[i - nm];
        if (may_remove(s, p, now))
            memcpy(keys[k++], p->key, 32);
    }
    if (k > 0) {
        eng_suspect_take_over(s); /* its first action may be this one */
        cl_member_delta_t d;
        if (cl_member_remove(s->ctx.mb, (const uint8_t(*)[32])keys, k, now_of(s), &d) == 1)
            s->ctx.commit(s->ctx.arg, &d);
        else
            cl_member_delta_clear(&d);
    }
    free(keys);
}

void eng_suspect_closed(eng_suspect_t *s, cl_peer_t *p)
{
    p->link_closed = true;
    bool departed = s->ctx.is_member(s->ctx.arg) && p->state == CL_PEER_SUSPECT &&
                    p->suspect_reason == REASON_LEFT && eng_suspect_coordinates(s);
    if (departed) {
        eng_suspect_take_over(s);
        eng_suspect_remove(s); /* a departed peer went */
    } else if (s->ctx.is_member(s->ctx.arg)) {
        eng_suspect_peer(s, p, CL_SUSPECT_CLOSED);
    }
}

/* The coordinator takes p out of the group and publishes the view. */
static void ungroup(eng_suspect_t *s, const cl_peer_t *p)
{
    cl_member_delta_t d;
    if (cl_member_ungroup(s->ctx.mb, (const uint8_t(*)[32])p->key, 1, &d) == 1)
        s->ctx.commit(s->ctx.arg, &d);
    else
        cl_member_delta_clear(&d);
}

/* Takes p out of the group for reason: at once when this peer
   coordinates, else by a SUSPECT report to the coordinator. */
static void take_out(eng_suspect_t *s, cl_peer_t *p, int reason)
{
    p->suspect_reason = reason;
    if (eng_suspect_coordinates(s)) {
        eng_suspect_take_over(s);
        cl_peer_t *one[1];
        if (reason == CL_SUSPECT_STRAGGLER &&
            !s->ctx.straggler_vote(s->ctx.arg, p->key, s->ctx.self_key,
                                   cl_member_group(s->ctx.mb, one, 1)))
            return;
        ungroup(s, p);
        return;
    }
    tell_coordinator(s, p, reason);
}

void eng_suspect_late(eng_suspect_t *s, cl_peer_t *p, int reason)
{
    char d[DESC_MAX];
    double now = now_of(s);
    if (is_self(s, p) || p->state != CL_PEER_ALIVE)
        return;
    if (p->link_closed) {
        eng_suspect_peer(s, p, CL_SUSPECT_CLOSED);
        return;
    }
    if (now - p->last_heard > s->ctx.cfg->timeout) {
        eng_suspect_peer(s, p, CL_SUSPECT_SILENT);
        return;
    }
    /* Alive by its heartbeats: a straggler (or it called something else).
       A member taken out of the group comes back only at a step boundary:
       while this peer knows none (a program without a regular step),
       taking it out would end a live peer, so the group waits for it,
       as MPI would. */
    double allow = fmax(s->ctx.cfg->timeout, 3.0 * s->ctx.step_gap(s->ctx.arg));
    bool can_return = s->ctx.boundaries_known(s->ctx.arg);
    if (p->suspect_since <= 0) {
        p->suspect_since = now;
        s->ctx.late_seen(s->ctx.arg, now);
        if (can_return || reason == CL_SUSPECT_MISMATCH)
            cl_info("%s is late; waiting up to %.1f s more", desc(s, p, d, sizeof d), allow);
        else
            cl_info("%s is late but alive; the group waits for it (no step boundary is known "
                    "at which it could be re-admitted)",
                    desc(s, p, d, sizeof d));
        return;
    }
    if (reason != CL_SUSPECT_MISMATCH && !can_return)
        return;
    if (reason != CL_SUSPECT_MISMATCH && now - p->suspect_since < allow)
        return;
    take_out(s, p, reason);
}

void eng_suspect_overdrawn(eng_suspect_t *s, const cl_peer_t *held)
{
    char d[DESC_MAX];
    /* The streams hold the records read only: the one to change is found
       in membership's own table. */
    cl_peer_t *p = held != NULL ? cl_member_find(s->ctx.mb, held->key) : NULL;
    if (p == NULL || is_self(s, p) || p->state != CL_PEER_ALIVE || !p->in_group ||
        !s->ctx.is_member(s->ctx.arg))
        return;
    /* Its dropped message leaves this peer's collective waiting for it,
       while the others may have theirs: only a view that takes it out
       of the group makes every member run without it.  The report of a
       straggler, so that no wire change is needed and one report alone
       takes nobody out (the coordinator's vote: a hostile member cannot
       take an honest one out by reporting it). */
    cl_warn("%s passed its credit for early collective messages; reporting it to the "
            "coordinator to take it out of the group",
            desc(s, p, d, sizeof d));
    take_out(s, p, CL_SUSPECT_STRAGGLER);
}

void eng_suspect_corrupt(eng_suspect_t *s, cl_peer_t *p)
{
    char d[DESC_MAX];
    if (is_self(s, p) || p->state == CL_PEER_GONE || !s->ctx.is_member(s->ctx.arg))
        return;
    if (eng_suspect_coordinates(s)) {
        double ban_time = CONVICT_BAN_FACTOR * s->ctx.cfg->ban_time;
        eng_suspect_take_over(s);
        cl_warn("%s returned a wrong result (COLLAB_VERIFY: recomputed by this peer, the "
                "coordinator): removing it from the swarm; its key is banned for %.0f s",
                desc(s, p, d, sizeof d), ban_time);
        s->ctx.ban(s->ctx.arg, p->key, ban_time);
        if (p->state == CL_PEER_ALIVE)
            eng_suspect_peer(s, p, CL_SUSPECT_CORRUPT);
        else
            eng_suspect_remove(s);
        return;
    }
    tell_coordinator(s, p, CL_SUSPECT_CORRUPT);
}

int eng_suspect_verify_target(eng_suspect_t *s, const int *ranks, int n,
                              int (*rank_of)(const void *comm, int world), const void *comm)
{
    if (!eng_suspect_coordinates(s))
        return 0;
    for (size_t i = 0; i < sizeof s->vtarget / sizeof s->vtarget[0]; i++) {
        if (s->vtarget[i].left <= 0)
            continue;
        cl_peer_t *p = cl_member_find(s->ctx.mb, s->vtarget[i].key);
        if (p == NULL || p->state == CL_PEER_GONE || p->rank < 0) {
            s->vtarget[i].left = 0;
            continue;
        }
        int r = rank_of(comm, p->rank);
        for (int k = 0; k < n && r >= 0; k++)
            if (ranks[k] == r) {
                s->vtarget[i].left--;
                return r + 1;
            }
    }
    return 0;
}

/* Coordinator: a member reports that p returned a wrong result.  One
   report removes nobody (its sender may lie); the coordinator checks p's
   part itself in its next 8 butterfly all-reduces with p. */
static void on_corrupt_report(eng_suspect_t *s, const cl_peer_t *from, cl_peer_t *p)
{
    char d[DESC_MAX], d2[DESC_MAX];
    if (!from->in_group || !p->in_group || from == p)
        return;
    size_t n = sizeof s->vtarget / sizeof s->vtarget[0], slot = n;
    for (size_t i = 0; i < n; i++) {
        if (memcmp(s->vtarget[i].key, p->key, 32) == 0 && s->vtarget[i].left > 0)
            return; /* being checked already */
        if (slot == n && s->vtarget[i].left <= 0)
            slot = i;
    }
    if (slot == n) {
        cl_debug("%s reports %s for a wrong result; %zu checks are running already",
                 desc(s, from, d, sizeof d), desc(s, p, d2, sizeof d2), n);
        return;
    }
    memcpy(s->vtarget[slot].key, p->key, 32);
    s->vtarget[slot].left = 8;
    cl_warn("%s reports that %s returned a wrong result (COLLAB_VERIFY); the coordinator checks "
            "its part in its next all-reduces",
            desc(s, from, d, sizeof d), desc(s, p, d2, sizeof d2));
}

void eng_suspect_self_out(eng_suspect_t *s)
{
    cl_peer_t *me = cl_member_self(s->ctx.mb);
    if (!s->ctx.is_member(s->ctx.arg) || me == NULL || !me->in_group)
        return;
    take_out(s, me, CL_SUSPECT_STRAGGLER); /* what this peer's own log says */
}

/* Coordinator: a member reports another one (or itself: eng_suspect_self_out). */
static void on_suspect(eng_suspect_t *s, const cl_peer_t *from, const cl_wire_suspect_t *r)
{
    cl_peer_t *p = cl_member_find(s->ctx.mb, r->key);
    if (p == NULL || p->state == CL_PEER_GONE || is_self(s, p))
        return;
    /* A signature mismatch is symmetric: a peer running another program
       sees every correct member as the one that "called a different
       collective".  So the coordinator never acts on a mismatch report of
       another peer; it takes out only peers whose collectives differ from
       its own, which it sees itself (eng_suspect_late from deliver()). */
    if (r->reason == CL_SUSPECT_MISMATCH)
        return;
    if (r->reason == CL_SUSPECT_CORRUPT) {
        on_corrupt_report(s, from, p);
        return;
    }
    if (r->reason == CL_SUSPECT_STRAGGLER) {
        /* Only a member of the group can tell that another one lags
           behind it: a peer outside the group (waiting to be admitted,
           or taken out and finishing its step alone) runs no collective
           with the group. */
        if (!p->in_group || !from->in_group)
            return;
        /* Nor is a live member taken out while the coordinator knows no
           step boundary to re-admit it at (eng_suspect_late); a member
           that reports itself knows what it does. */
        if (from != p && !s->ctx.boundaries_known(s->ctx.arg)) {
            char d[DESC_MAX];
            cl_debug("not taking %s out of the group: no step boundary is known to re-admit it",
                     desc(s, p, d, sizeof d));
            return;
        }
        cl_peer_t *one[1];
        if (!s->ctx.straggler_vote(s->ctx.arg, p->key, from->key,
                                   cl_member_group(s->ctx.mb, one, 1))) {
            char d[DESC_MAX];
            cl_debug("%s reports %s as a straggler; waiting for a second report",
                     desc(s, from, d, sizeof d), p->id);
            return;
        }
        p->suspect_reason = r->reason;
        ungroup(s, p);
        return;
    }
    /* Confirm with what this peer sees itself. */
    double now = now_of(s);
    if (p->state == CL_PEER_SUSPECT || p->link_closed ||
        now - p->last_heard > s->ctx.cfg->timeout / 2) {
        if (p->state == CL_PEER_ALIVE)
            eng_suspect_peer(s, p, r->reason); /* removes it, we coordinate */
        else
            eng_suspect_remove(s);
    } else {
        char d[DESC_MAX];
        cl_debug("not confirming a report about %s: heard from it %.1f s ago",
                 desc(s, p, d, sizeof d), now - p->last_heard);
    }
}

/* ---------------------------------------------------------------------- */
/* Heartbeats. */

/* A heartbeat tells the epoch of the sender's view.  A coordinator that
   dies may leave its last views with only some peers, so survivors can
   hold different views; only views of the coordinator each member
   computes count (docs/security.md §4).  The coordinator sends its view
   to a member that is behind, and answers a member that is ahead by
   raising its own epoch above it (by a bounded step) and sending its view
   with that epoch.  A member that is behind answers a member that is
   ahead with its own heartbeat, so that the coordinator among them learns
   it.  The coordinator also answers a former member that believes it is
   still one: with a view above its epoch, in which it finds itself
   missing and joins again (§4, removed while alive).  A member whose
   tenure as coordinator ended answers a member still behind the view
   that ended it with its own view: that member may have refused the
   views of the tenure (it did not suspect the coordinator before this
   peer yet) and, once it does, recognises this peer as its coordinator
   and takes the view (rule 1), while the member that coordinates now
   (a newcomer that took the lowest rank) may be one it never heard of;
   without this it would never learn the views since, be removed as
   silent by a coordinator it does not know, and train on with the
   members left in its old view as a second swarm (soak seed 6, round 1;
   docs/membership.md §4).  Epochs heard count
   only from members, and only by a bounded step (epoch_step_ok), so
   nobody can push them near the ceiling. */
static void on_heartbeat_epoch(eng_suspect_t *s, cl_peer_t *from, const uint8_t key[32],
                               uint64_t epoch)
{
    bool member = from != NULL && from->state != CL_PEER_GONE;
    uint64_t own = cl_member_epoch(s->ctx.mb);
    bool step_ok = s->ctx.epoch_step_ok(s->ctx.arg, own, epoch);
    if (member && epoch == own)
        s->ctx.member_ahead(s->ctx.arg, false, 0);
    if (member && step_ok && epoch > s->max_epoch_heard)
        s->max_epoch_heard = epoch;
    /* Whether this peer coordinates, without taking over yet: a takeover
       raises the epoch, and doing that on any heartbeat would put this
       peer's epoch above views still on their way to it (an admitter's,
       right after a newcomer took the lowest rank). */
    bool coord = eng_suspect_coordinates(s);
    if (member && epoch > own) {
        /* A member is ahead of its coordinator.  Usually a view of the
           admitter is on its way to the coordinator too: wait for it.  A
           member still ahead after two heartbeats holds a view the
           coordinator will never get (its predecessor sent it before it
           died): then the coordinator outbids it. */
        if (coord && step_ok && s->ctx.member_ahead(s->ctx.arg, true, 2.0 * s->ctx.hb_interval)) {
            eng_suspect_take_over(s);
            cl_member_raise_epoch(s->ctx.mb, epoch + 1);
            s->ctx.reply_view(s->ctx.arg, key);
            return;
        }
        cl_wire_msg_t m;
        memset(&m, 0, sizeof m);
        m.hdr.type = CL_MSG_HEARTBEAT;
        m.hdr.epoch = own;
        m.u.heartbeat.epoch = own;
        m.u.heartbeat.progress = s->ctx.progress(s->ctx.arg);
        (void)s->ctx.reply(s->ctx.arg, key, &m);
    } else if (member && epoch < own && coord) {
        s->ctx.member_ahead(s->ctx.arg, false, 0);
        s->ctx.reply_view(s->ctx.arg, key);
    } else if (member && epoch < own && epoch < s->tenure_end) {
        s->ctx.reply_view(s->ctx.arg, key); /* a view of this peer's tenure may be missing there */
    } else if (!member && coord) {
        eng_suspect_take_over(s);
        if (from == NULL || from->suspect_reason != REASON_LEFT) {
            if (step_ok)
                cl_member_raise_epoch(s->ctx.mb, epoch + 1);
            s->ctx.reply_view(s->ctx.arg, key);
        }
    }
}

/* A suspect whose connection still works, and that did not say goodbye,
   was only slow.  Alive again, it may coordinate again, which ends this
   peer's tenure. */
static void revive(eng_suspect_t *s, cl_peer_t *p)
{
    if (p->state == CL_PEER_SUSPECT && !p->link_closed && p->suspect_reason != REASON_LEFT) {
        p->state = CL_PEER_ALIVE;
        eng_suspect_tenure(s);
    }
}

void eng_suspect_heard(eng_suspect_t *s, cl_peer_t *p)
{
    p->last_heard = now_of(s);
}

void eng_suspect_answered(eng_suspect_t *s, cl_peer_t *p)
{
    (void)s;
    if (p->state == CL_PEER_ALIVE)
        p->suspect_since = 0;
}

void eng_suspect_link_up(eng_suspect_t *s, cl_peer_t *p)
{
    (void)s;
    p->link_closed = false;
}

void eng_suspect_refused(eng_suspect_t *s, cl_peer_t *p)
{
    p->link_closed = true;
    eng_suspect_peer(s, p, CL_SUSPECT_CLOSED);
}

void eng_suspect_forget(eng_suspect_t *s, cl_peer_t *p)
{
    (void)s;
    p->suspect_since = 0;
    p->suspect_reason = 0;
    p->link_closed = false;
}

void eng_suspect_excuse(eng_suspect_t *s, cl_peer_t *p, double now)
{
    p->last_heard = now;
    revive(s, p);
}

void eng_suspect_on_message(eng_suspect_t *s, cl_peer_t *from, const uint8_t key[32],
                            const cl_wire_msg_t *m)
{
    bool member = from != NULL && from->state != CL_PEER_GONE;
    bool self_member = s->ctx.is_member(s->ctx.arg);
    switch (m->hdr.type) {
    case CL_MSG_HEARTBEAT:
        if (member && self_member)
            revive(s, from); /* it was only slow */
        if (self_member)
            on_heartbeat_epoch(s, from, key, m->u.heartbeat.epoch);
        break;
    case CL_MSG_SUSPECT:
        if (member && eng_suspect_coordinates(s)) {
            eng_suspect_take_over(s);
            on_suspect(s, from, &m->u.suspect);
        }
        break;
    default:
        break;
    }
}

/* ---------------------------------------------------------------------- */
/* Timers. */

/* A heartbeat to every live member and monitor of the view but this peer. */
static void heartbeat(eng_suspect_t *s)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_HEARTBEAT;
    m.u.heartbeat.epoch = cl_member_epoch(s->ctx.mb);
    m.u.heartbeat.progress = s->ctx.progress(s->ctx.arg);
    size_t n, nm;
    cl_peer_t *const *list = cl_member_list(s->ctx.mb, &n);
    cl_peer_t *const *mons = cl_member_monitors(s->ctx.mb, &nm);
    for (size_t i = 0; i < nm + n; i++) {
        cl_peer_t *p = i < nm ? mons[i] : list[i - nm];
        if (!is_self(s, p) && p->state != CL_PEER_GONE)
            (void)s->ctx.send(s->ctx.arg, p, &m);
    }
}

static void check(eng_suspect_t *s, double now)
{
    cl_peer_t *silent[64];
    size_t n;
    while ((n = cl_member_silent(s->ctx.mb, now, s->ctx.cfg->timeout, silent, 64)) > 0) {
        for (size_t i = 0; i < n; i++)
            eng_suspect_peer(s, silent[i], CL_SUSPECT_SILENT);
        if (!s->ctx.is_member(s->ctx.arg))
            return;
    }
    if (!s->ctx.is_member(s->ctx.arg))
        return;
    /* Remind the coordinator of what this peer still suspects (a report
       can be lost with a coordinator that fails), or act as it. */
    if (eng_suspect_coordinates(s)) {
        /* Takes over only if there is someone to remove (a check with
           nothing to do raised the epoch of a newcomer that took the
           lowest rank above the admitter's view that admits it). */
        eng_suspect_remove(s);
        s->ctx.checked(s->ctx.arg, true, now);
        return;
    }
    cl_peer_t *c = cl_member_coordinator(s->ctx.mb);
    size_t nl, nm;
    cl_peer_t *const *list = cl_member_list(s->ctx.mb, &nl);
    cl_peer_t *const *mons = cl_member_monitors(s->ctx.mb, &nm);
    for (size_t i = 0; i < nm + nl && c != NULL; i++) {
        cl_peer_t *p = i < nm ? mons[i] : list[i - nm];
        if (p->state != CL_PEER_SUSPECT || p->suspect_reason == REASON_LEFT)
            continue;
        tell_coordinator(s, p, p->suspect_reason);
    }
    s->ctx.checked(s->ctx.arg, false, now);
}

/* Heartbeats, the check of silent members, the purge of old records,
   while this peer is a member (eng_suspect_started arms the timer again
   when it becomes one). */
static void on_timer(void *arg, double now)
{
    eng_suspect_t *s = arg;
    if (!s->ctx.is_member(s->ctx.arg))
        return;
    if (now >= s->next_heartbeat) {
        heartbeat(s);
        s->next_heartbeat = now + s->ctx.hb_interval;
    }
    if (now >= s->next_check) {
        check(s, now);
        s->next_check = now + s->ctx.hb_interval;
    }
    if (now >= s->next_purge) {
        cl_member_purge(s->ctx.mb, now, PURGE_KEEP);
        s->next_purge = now + ENG_PURGE_EVERY;
    }
    cl_timer_arm(s->ctx.timers, s->timer, fmin(s->next_heartbeat, s->next_check));
}
