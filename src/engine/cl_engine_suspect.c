/*  cl_engine_suspect.c - suspicion, the coordinator's side: from a
    report to a view without the suspect.

    A member that suspects a peer (eng_suspect in cl_engine_member.c: it
    went silent for COLLAB_TIMEOUT, its connection closed, or it said
    goodbye) tells the coordinator (SUSPECT); the coordinator confirms a
    report against what it sees itself and removes the suspects in its
    next view (eng_remove_suspects; a departed peer only once its GOODBYE
    could reach everyone).  A member that is alive but late in a
    collective is a straggler: taken out of the group, never the swarm,
    and only when a step boundary is known at which it can be
    re-admitted, on two reports (eng_auth_straggler_vote).  COLLAB_VERIFY
    verdicts (docs/security.md §6c) end here too: the coordinator removes
    and bans a member it convicts itself, and checks the part of one a
    member reports.  What this file and cl_engine_member.c share is
    declared in cl_engine_member_int.h.
*/
#include "engine/cl_engine_elastic.h" /* step boundaries */
#include "engine/cl_engine_member_int.h"

#include "util/cl_log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether a view may drop p yet.  A peer that said goodbye is dropped once
   its connection closed (it collected its acknowledgements and went) or
   COLLAB_TIMEOUT after the goodbye: until then members may still be
   receiving the GOODBYE that tells them which collectives count it, and a
   view that dropped it first would make them count it as absent
   (cl_engine_leave.c). */
static bool may_remove(struct cl_engine *e, const cl_peer_t *p, double now)
{
    if (p->state != CL_PEER_SUSPECT || memcmp(p->key, e->self_key, 32) == 0)
        return false;
    return p->suspect_reason != REASON_LEFT || p->link_closed ||
           now - p->suspect_since >= e->cfg.timeout;
}

/* Coordinator: removes every member this peer suspects. */
void eng_remove_suspects(struct cl_engine *e)
{
    size_t n, nm;
    cl_peer_t *const *list = cl_member_list(e->mb, &n);
    cl_peer_t *const *mons = cl_member_monitors(e->mb, &nm);
    uint8_t(*keys)[32] = malloc((n + nm > 0 ? n + nm : 1) * 32);
    if (keys == NULL)
        return;
    size_t k = 0;
    double now = eng_now();
    for (size_t i = 0; i < nm + n; i++) {
        cl_peer_t *p = i < nm ? mons[i] : list[i - nm];
        if (may_remove(e, p, now))
            memcpy(keys[k++], p->key, 32);
    }
    if (k > 0) {
        cl_member_delta_t d;
        if (cl_member_remove(e->mb, (const uint8_t(*)[32])keys, k, eng_now(), &d) == 1)
            eng_coordinator_commit(e, &d);
        else
            cl_member_delta_clear(&d);
    }
    free(keys);
}

/* A member's suspicion of p, for the coordinator to confirm. */
void eng_tell_coordinator(struct cl_engine *e, const cl_peer_t *p, int reason)
{
    cl_peer_t *c = cl_member_coordinator(e->mb);
    if (c == NULL)
        return;
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_SUSPECT;
    memcpy(m.u.suspect.key, p->key, 32);
    m.u.suspect.reason = (uint8_t)reason;
    (void)eng_send(e, c, &m);
}

/* The coordinator takes p out of the group and publishes the view. */
static void ungroup(struct cl_engine *e, const cl_peer_t *p)
{
    cl_member_delta_t d;
    if (cl_member_ungroup(e->mb, (const uint8_t(*)[32])p->key, 1, &d) == 1)
        eng_coordinator_commit(e, &d);
    else
        cl_member_delta_clear(&d);
}

/* Takes p out of the group for reason: at once when this peer
   coordinates, else by a SUSPECT report to the coordinator. */
static void take_out(struct cl_engine *e, cl_peer_t *p, int reason)
{
    p->suspect_reason = reason;
    if (eng_self_coordinates(e)) {
        eng_take_over(e);
        cl_peer_t *one[1];
        if (reason == CL_SUSPECT_STRAGGLER &&
            !eng_auth_straggler_vote(e, p->key, e->self_key, cl_member_group(e->mb, one, 1)))
            return;
        ungroup(e, p);
        return;
    }
    eng_tell_coordinator(e, p, reason);
}

void eng_report_late(struct cl_engine *e, cl_peer_t *p, int reason)
{
    char desc[CL_WIRE_STR_MAX + 64];
    double now = eng_now();
    if (memcmp(p->key, e->self_key, 32) == 0 || p->state != CL_PEER_ALIVE)
        return;
    if (p->link_closed) {
        eng_suspect(e, p, CL_SUSPECT_CLOSED);
        return;
    }
    if (now - p->last_heard > e->cfg.timeout) {
        eng_suspect(e, p, CL_SUSPECT_SILENT);
        return;
    }
    /* Alive by its heartbeats: a straggler (or it called something else).
       A member taken out of the group comes back only at a step boundary:
       while this peer knows none (a program without a regular step),
       taking it out would end a live peer, so the group waits for it,
       as MPI would. */
    double allow = fmax(e->cfg.timeout, 3.0 * e->step_gap);
    bool can_return = eng_el_boundaries_known(e);
    if (p->suspect_since <= 0) {
        p->suspect_since = now;
        eng_report_late_seen(e, now);
        if (can_return || reason == CL_SUSPECT_MISMATCH)
            cl_info("%s is late; waiting up to %.1f s more", eng_peer_desc(p, desc, sizeof desc),
                    allow);
        else
            cl_info("%s is late but alive; the group waits for it (no step boundary is known "
                    "at which it could be re-admitted)",
                    eng_peer_desc(p, desc, sizeof desc));
        return;
    }
    if (reason != CL_SUSPECT_MISMATCH && !can_return)
        return;
    if (reason != CL_SUSPECT_MISMATCH && now - p->suspect_since < allow)
        return;
    take_out(e, p, reason);
}

/* Seconds a convicted reducer's key stays banned at the coordinator, so
   that it cannot rejoin at once (docs/security.md §6c). */
#define CONVICT_BAN 600.0

void eng_report_corrupt(struct cl_engine *e, cl_peer_t *p)
{
    char desc[CL_WIRE_STR_MAX + 64];
    if (memcmp(p->key, e->self_key, 32) == 0 || p->state == CL_PEER_GONE || e->state != ENG_MEMBER)
        return;
    if (eng_self_coordinates(e)) {
        eng_take_over(e);
        cl_warn("%s returned a wrong result (COLLAB_VERIFY: recomputed by this peer, the "
                "coordinator): removing it from the swarm; its key is banned for %.0f s",
                eng_peer_desc(p, desc, sizeof desc), CONVICT_BAN);
        cl_transport_ban(e->tp, p->key, CONVICT_BAN);
        if (p->state == CL_PEER_ALIVE)
            eng_suspect(e, p, CL_SUSPECT_CORRUPT);
        else
            eng_remove_suspects(e);
        return;
    }
    eng_tell_coordinator(e, p, CL_SUSPECT_CORRUPT);
}

int eng_verify_target(struct cl_engine *e, const int *ranks, int n, const collab_comm_t *comm)
{
    if (!eng_self_coordinates(e))
        return 0;
    for (size_t i = 0; i < sizeof e->vtarget / sizeof e->vtarget[0]; i++) {
        if (e->vtarget[i].left <= 0)
            continue;
        cl_peer_t *p = cl_member_find(e->mb, e->vtarget[i].key);
        if (p == NULL || p->state == CL_PEER_GONE || p->rank < 0) {
            e->vtarget[i].left = 0;
            continue;
        }
        int r = cl_comm_rank_of_world(comm, p->rank);
        for (int k = 0; k < n && r >= 0; k++)
            if (ranks[k] == r) {
                e->vtarget[i].left--;
                return r + 1;
            }
    }
    return 0;
}

/* Coordinator: a member reports that p returned a wrong result.  One
   report removes nobody (its sender may lie); the coordinator checks p's
   part itself in its next 8 butterfly all-reduces with p. */
static void on_corrupt_report(struct cl_engine *e, const cl_peer_t *from, cl_peer_t *p)
{
    char desc[CL_WIRE_STR_MAX + 64], d2[CL_WIRE_STR_MAX + 64];
    if (!from->in_group || !p->in_group || from == p)
        return;
    size_t n = sizeof e->vtarget / sizeof e->vtarget[0], slot = n;
    for (size_t i = 0; i < n; i++) {
        if (memcmp(e->vtarget[i].key, p->key, 32) == 0 && e->vtarget[i].left > 0)
            return; /* being checked already */
        if (slot == n && e->vtarget[i].left <= 0)
            slot = i;
    }
    if (slot == n) {
        cl_debug("%s reports %s for a wrong result; %zu checks are running already",
                 eng_peer_desc(from, desc, sizeof desc), eng_peer_desc(p, d2, sizeof d2), n);
        return;
    }
    memcpy(e->vtarget[slot].key, p->key, 32);
    e->vtarget[slot].left = 8;
    cl_warn("%s reports that %s returned a wrong result (COLLAB_VERIFY); the coordinator checks "
            "its part in its next all-reduces",
            eng_peer_desc(from, desc, sizeof desc), eng_peer_desc(p, d2, sizeof d2));
}

void eng_report_self_out(struct cl_engine *e)
{
    cl_peer_t *me = cl_member_self(e->mb);
    if (e->state != ENG_MEMBER || me == NULL || !me->in_group)
        return;
    take_out(e, me, CL_SUSPECT_STRAGGLER); /* what this peer's own log says */
}

/* Coordinator: a member reports another one (or itself: eng_report_self_out). */
void eng_on_suspect(struct cl_engine *e, const cl_peer_t *from, const cl_wire_suspect_t *s)
{
    cl_peer_t *p = cl_member_find(e->mb, s->key);
    if (p == NULL || p->state == CL_PEER_GONE || memcmp(p->key, e->self_key, 32) == 0)
        return;
    /* A signature mismatch is symmetric: a peer running another program
       sees every correct member as the one that "called a different
       collective".  So the coordinator never acts on a mismatch report of
       another peer; it takes out only peers whose collectives differ from
       its own, which it sees itself (eng_report_late from deliver()). */
    if (s->reason == CL_SUSPECT_MISMATCH)
        return;
    if (s->reason == CL_SUSPECT_CORRUPT) {
        on_corrupt_report(e, from, p);
        return;
    }
    if (s->reason == CL_SUSPECT_STRAGGLER) {
        /* Only a member of the group can tell that another one lags
           behind it: a peer outside the group (waiting to be admitted,
           or taken out and finishing its step alone) runs no collective
           with the group. */
        if (!p->in_group || !from->in_group)
            return;
        /* Nor is a live member taken out while the coordinator knows no
           step boundary to re-admit it at (eng_report_late); a member
           that reports itself knows what it does. */
        if (from != p && !eng_el_boundaries_known(e)) {
            char desc[CL_WIRE_STR_MAX + 64];
            cl_debug("not taking %s out of the group: no step boundary is known to re-admit it",
                     eng_peer_desc(p, desc, sizeof desc));
            return;
        }
        cl_peer_t *one[1];
        if (!eng_auth_straggler_vote(e, p->key, from->key, cl_member_group(e->mb, one, 1))) {
            char desc[CL_WIRE_STR_MAX + 64];
            cl_debug("%s reports %s as a straggler; waiting for a second report",
                     eng_peer_desc(from, desc, sizeof desc), p->id);
            return;
        }
        p->suspect_reason = s->reason;
        ungroup(e, p);
        return;
    }
    /* Confirm with what this peer sees itself. */
    double now = eng_now();
    if (p->state == CL_PEER_SUSPECT || p->link_closed || now - p->last_heard > e->cfg.timeout / 2) {
        if (p->state == CL_PEER_ALIVE)
            eng_suspect(e, p, s->reason); /* removes it, we coordinate */
        else
            eng_remove_suspects(e);
    } else {
        char desc[CL_WIRE_STR_MAX + 64];
        cl_debug("not confirming a report about %s: heard from it %.1f s ago",
                 eng_peer_desc(p, desc, sizeof desc), now - p->last_heard);
    }
}
