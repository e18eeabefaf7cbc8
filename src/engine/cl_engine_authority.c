/*  cl_engine_authority.c - who may send what: the one gate every message
    passes before the engine acts on it.

    docs/security.md §3 is the table this file implements.  The transport
    guarantees the sender's key (CurveZMQ plus the handshake); this file
    decides whether that key, in the role the receiver's own view gives
    it, may send this message type in the receiver's state.  The roles:

      stranger      no rank in the receiver's view, never held one that the
                    receiver knows of
      former member no rank now, but held one (prev_rank): a peer that was
                    removed while alive, or left
      asked         a peer this peer sent JOIN to (an initial peer, or the
                    coordinator a REDIRECT named)
      member        holds a rank in the receiver's view (client mode or not)
      coordinator   the member the receiver itself computes as coordinator
                    (lowest-ranked live public member, its own suspicions
                    counted)
      admitter      the member the receiver computes as admitter
                    (docs/elastic.md)

    A message that fails its rule is dropped and counted per type.  Its
    sender is banned (cl_transport_ban, for COLLAB_BAN_TIME) by one rule,
    whatever the type and the sender's role: only when the content breaks
    a bound that every honest peer keeps in every state (enum refusal).
    A role or a state that does not allow the message is never enough:
    views in flight make honest peers send such messages (a peer admitted
    by a coordinator that died, a late answer to an earlier incarnation).
    The first drop of each type is logged as a warning naming the sender
    and the rule, later ones at debug level, with the count.

    Views: a member installs a view only from its coordinator, or, when
    two coordinators claim one swarm (a coordinator that suspects the one
    before it while others do not), from the coordinator of a view that
    outranks its own: more members, ties to the lower coordinator key,
    listing only peers the receiver knows as members.  Back from a pause,
    a member's view counts once a majority of the last view answered a
    PROBE with it (cl_viewack; docs/security.md §4), or, when no
    majority can answer, one that lists this peer from the member whose
    answer without it said the swarm went on (eng_auth_went_on_by: taken
    back, it resyncs as a straggler).  Every epoch step is
    bounded (EPOCH_STEP), so no message can push an epoch near the ceiling
    (CL_EPOCH_MAX) where it would wrap.

    A component (cl_engine_auth.h): it sees the engine only through the
    context eng_auth_ctx_t that cl_engine_fanout.c builds (the
    configuration, this peer's key, the peer records read only, the
    clock, the timer set, whether this peer is a member and coordinates,
    the joiners admitted, the copies expected for monitors, the outbid
    of a smaller group, the delivery of kept messages, the ban, PROBE
    and JOIN).  It computes the coordinator, its successor and the
    admitter from the records itself.  Its state, struct eng_auth
    (cl_engine_auth_int.h), is shared with cl_engine_auth_probe.c only,
    each field written by one of the two files.
*/
#include "engine/cl_engine_auth_int.h"

#include "engine/cl_elmsg.h"
#include "util/cl_addr.h"
#include "util/cl_identity.h"
#include "util/cl_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WEIGHT_MAX 1e9    /* largest weight (COLLAB_WEIGHT's bound) */
#define SUCC_KEPT_FOR 4.0 /* × COLLAB_TIMEOUT they are kept at most */

static const char *type_name(const cl_wire_msg_t *m);

static void succ_clear(struct eng_auth *a)
{
    for (size_t i = 0; i < a->nsucc; i++)
        free(a->succ[i].body);
    a->nsucc = 0;
}

eng_auth_t *eng_auth_new(const eng_auth_ctx_t *ctx)
{
    eng_auth_t *a = calloc(1, sizeof *a);
    if (a == NULL)
        return NULL;
    a->ctx = *ctx;
    if (eng_auth_probe_init(a) != COLLAB_OK) {
        eng_auth_destroy(&a);
        return NULL;
    }
    return a;
}

void eng_auth_destroy(eng_auth_t **a_p)
{
    eng_auth_t *a = a_p != NULL ? *a_p : NULL;
    if (a == NULL)
        return;
    succ_clear(a);
    eng_auth_probe_fini(a);
    free(a);
    *a_p = NULL;
}

/* The engine's clock. */
static double now_of(const eng_auth_t *a)
{
    return a->ctx.now(a->ctx.arg);
}

/* Whether this peer holds a rank in its own view. */
static bool is_member(const eng_auth_t *a)
{
    return a->ctx.member(a->ctx.arg);
}

/* Whether this peer is a member and its own coordinator. */
static bool coordinates(const eng_auth_t *a)
{
    return a->ctx.coordinates(a->ctx.arg);
}

/* An ADMIT refused because its sender is not (yet) this peer's admitter,
   from the member the coordinator rule names next: the coordinator may
   have died mid-admission, and its successor, which saw it first, hands
   the admission on (eng_elastic_hand_on).  Kept (at most SUCC_KEPT_MAX,
   newest kept) and run through this gate again once this peer sees the
   coordinator fail (docs/security.md §4).  A VIEW of the successor is not
   kept: one made before the successor learned of the last admissions
   would undo them here, and the heartbeats bring its later views.
   Returns true when kept. */
static bool keep_for_successor(eng_auth_t *a, const cl_peer_t *p, const uint8_t key[32],
                               const cl_wire_msg_t *m)
{
    if (a->replaying || p == NULL || !is_member(a) || cl_member_successor(a->ctx.mb) != p)
        return false;
    if (a->nsucc > 0 && memcmp(a->succ_key, key, 32) != 0)
        succ_clear(a); /* another successor now: the older one's are stale */
    uint8_t *body = NULL;
    size_t blen = 0;
    if (cl_wire_encode_body(m, &body, &blen) != CL_WIRE_OK)
        return false;
    if (a->nsucc == SUCC_KEPT_MAX) {
        free(a->succ[0].body);
        memmove(&a->succ[0], &a->succ[1], (SUCC_KEPT_MAX - 1) * sizeof a->succ[0]);
        a->nsucc--;
    }
    cl_wire_hdr_t h = m->hdr;
    h.length = blen;
    cl_wire_hdr_encode(&h, a->succ[a->nsucc].hdr);
    a->succ[a->nsucc].body = body;
    a->succ[a->nsucc].blen = blen;
    a->succ[a->nsucc].t = now_of(a);
    memcpy(a->succ_key, key, 32);
    a->nsucc++;
    cl_debug("kept a %s of %.8s…, the member that coordinates should the coordinator fail, "
             "until this peer sees it fail",
             type_name(m), p->id);
    return true;
}

void eng_auth_successor_check(eng_auth_t *a)
{
    if (a == NULL || a->nsucc == 0 || a->replaying)
        return;
    const cl_peer_t *c = cl_member_coordinator(a->ctx.mb);
    const cl_peer_t *p = cl_member_find(a->ctx.mb, a->succ_key);
    if (!is_member(a) || p == NULL || p->state == CL_PEER_GONE ||
        now_of(a) - a->succ[a->nsucc - 1].t > SUCC_KEPT_FOR * a->ctx.cfg->timeout) {
        cl_debug("forgot %zu message%s kept for a coordinator's successor that did not take over",
                 a->nsucc, a->nsucc == 1 ? "" : "s");
        succ_clear(a);
        return;
    }
    if (c != p)
        return;
    /* The coordinator failed here, and the successor took over: its
       messages now pass the gate (or are refused by it, as any). */
    size_t n = a->nsucc;
    a->nsucc = 0;
    a->replaying = true;
    for (size_t i = 0; i < n; i++) {
        cl_wire_msg_t m;
        if (cl_wire_decode(a->succ[i].hdr, CL_WIRE_HDR_SIZE, a->succ[i].body, a->succ[i].blen,
                           &m) == CL_WIRE_OK) {
            cl_debug("applying a kept %s of the new coordinator", type_name(&m));
            a->ctx.deliver(a->ctx.arg, a->succ_key, &m);
            cl_wire_msg_clear(&m);
        }
        free(a->succ[i].body);
    }
    a->replaying = false;
}

void eng_auth_note_join_sent(eng_auth_t *a, const uint8_t key[32])
{
    if (a == NULL)
        return;
    for (size_t i = 0; i < a->nasked; i++)
        if (memcmp(a->asked[i], key, 32) == 0)
            return;
    memcpy(a->asked[a->next_asked], key, 32);
    a->next_asked = (a->next_asked + 1) % ASKED_MAX;
    if (a->nasked < ASKED_MAX)
        a->nasked++;
}

static bool asked(const struct eng_auth *a, const uint8_t key[32])
{
    for (size_t i = 0; i < a->nasked; i++)
        if (memcmp(a->asked[i], key, 32) == 0)
            return true;
    return false;
}

void eng_auth_refused_data(eng_auth_t *a, const cl_peer_t *p, int sub, uint32_t part)
{
    if (a == NULL)
        return;
    a->dropped[CL_MSG_COLL]++;
    bool first = true;
    for (size_t i = 0; i < a->nwarned; i++)
        first = first && memcmp(a->warned[i], p->key, 32) != 0;
    char desc[CL_WIRE_STR_MAX + 64];
    if (first && a->nwarned < WARNED_MAX) {
        memcpy(a->warned[a->nwarned++], p->key, 32);
        cl_warn("dropped a collective message (type %d, part %u) from %s: %s (%llu such drops)",
                sub, part, a->ctx.desc(p, desc, sizeof desc),
                sub == 2 ? "a RESULT for a part it does not produce"
                         : "it does not fit the collective",
                (unsigned long long)a->dropped[CL_MSG_COLL]);
    } else {
        cl_debug("dropped a collective message (type %d, part %u) from %s", sub, part,
                 a->ctx.desc(p, desc, sizeof desc));
    }
}

bool eng_auth_straggler_vote(eng_auth_t *a, const uint8_t subject[32], const uint8_t reporter[32],
                             size_t group_size)
{
    if (a == NULL || memcmp(subject, reporter, 32) == 0)
        return true; /* a member that reports itself is believed */
    double now = now_of(a), window = a->ctx.cfg->timeout * 4 > 10 ? a->ctx.cfg->timeout * 4 : 10;
    bool have = false;
    for (size_t i = 0; i < VOTES_MAX && !have; i++)
        if (a->votes[i].t > 0 && memcmp(a->votes[i].subject, subject, 32) == 0 &&
            memcmp(a->votes[i].reporter, reporter, 32) == 0) {
            a->votes[i].t = now;
            have = true;
        }
    if (!have) {
        size_t k = a->next_vote;
        memcpy(a->votes[k].subject, subject, 32);
        memcpy(a->votes[k].reporter, reporter, 32);
        a->votes[k].t = now;
        a->next_vote = (k + 1) % VOTES_MAX;
    }
    size_t need = group_size > 2 ? 2 : 1, got = 0;
    for (size_t i = 0; i < VOTES_MAX; i++)
        if (a->votes[i].t > 0 && now - a->votes[i].t <= window &&
            memcmp(a->votes[i].subject, subject, 32) == 0)
            got++;
    if (got >= need) {
        for (size_t i = 0; i < VOTES_MAX; i++)
            if (memcmp(a->votes[i].subject, subject, 32) == 0)
                a->votes[i].t = 0; /* acted on */
        return true;
    }
    return false;
}

bool eng_auth_member_ahead(eng_auth_t *a, bool ahead, double patience)
{
    if (a == NULL)
        return ahead;
    if (!ahead) {
        a->ahead_since = 0;
        return false;
    }
    double now = now_of(a);
    if (a->ahead_since <= 0)
        a->ahead_since = now;
    if (now - a->ahead_since < patience)
        return false;
    a->ahead_since = 0;
    return true;
}

bool eng_auth_epoch_step_ok(uint64_t own, uint64_t epoch)
{
    return epoch <= CL_EPOCH_MAX && (epoch <= own || epoch - own <= EPOCH_STEP);
}

static const char *type_name(const cl_wire_msg_t *m)
{
    return m->hdr.type == CL_MSG_ELASTIC ? cl_elmsg_name(m->hdr.sub)
                                         : cl_wire_type_name(m->hdr.type);
}

/* Why a message is refused.  The ban follows from this alone. */
enum refusal {
    REFUSE_ROLE,  /* the sender's role or the receiver's state does not allow
                     it: dropped (honest peers send these while views travel) */
    REFUSE_BOUND, /* its content breaks a bound every honest peer keeps in
                     every state: dropped and the sender banned */
};

/* A view or heartbeat epoch no honest peer announces to a receiver at
   `own`: past the ceiling, or more than the bounded step ahead (a peer
   with no epoch yet, own 0, takes any epoch below the ceiling). */
static bool epoch_out_of_bounds(uint64_t own, uint64_t epoch)
{
    return epoch > CL_EPOCH_MAX || (own > 0 && !eng_auth_epoch_step_ok(own, epoch));
}

/* Drops (and counts) m; bans its sender for a REFUSE_BOUND. */
static bool refuse(eng_auth_t *a, const cl_peer_t *p, const uint8_t key[32], const cl_wire_msg_t *m,
                   const char *rule, enum refusal why)
{
    bool ban = why == REFUSE_BOUND;
    /* Stale messages of honest peers (a heartbeat of a peer just removed,
       an update that reached the coordinator before last) are routine:
       only forgeries are warned about. */
    bool loud =
        m->hdr.type == CL_MSG_VIEW || m->hdr.type == CL_MSG_JOIN_REPLY ||
        m->hdr.type == CL_MSG_SUSPECT || m->hdr.type == CL_MSG_UPDATE ||
        m->hdr.type == CL_MSG_RELAYED ||
        (m->hdr.type == CL_MSG_ELASTIC &&
         (m->hdr.sub == CL_EL_ADMIT || m->hdr.sub == CL_EL_FETCH || m->hdr.sub == CL_EL_DROP));
    unsigned slot = m->hdr.type == CL_MSG_ELASTIC ? 128u + (m->hdr.sub & 127u) : m->hdr.type;
    a->dropped[slot]++;
    char sid[CL_PEER_ID_MAX];
    if (p != NULL)
        snprintf(sid, sizeof sid, "%.8s", p->id);
    else if (cl_base58_encode(key, 32, sid, sizeof sid) == 0)
        sid[8] = '\0';
    else
        snprintf(sid, sizeof sid, "?");
    /* A sender of a hostile-only message is ignored for COLLAB_BAN_TIME. */
    double ban_time = a->ctx.cfg->ban_time;
    if (ban)
        cl_warn("dropped a message of type %s from peer %s…: %s (%llu such drops); ignoring the "
                "peer for %.0f s",
                type_name(m), sid, rule, (unsigned long long)a->dropped[slot], ban_time);
    else if (a->dropped[slot] == 1 && loud)
        cl_warn("dropped a message of type %s from peer %s…: %s (%llu such drops)", type_name(m),
                sid, rule, (unsigned long long)a->dropped[slot]);
    else
        cl_debug("dropped a message of type %s from peer %s…: %s (%llu such drops)", type_name(m),
                 sid, rule, (unsigned long long)a->dropped[slot]);
    if (ban) {
        a->banned++;
        a->ctx.ban(a->ctx.arg, key, ban_time);
    }
    return false;
}

static int cmp_key(const void *a, const void *b)
{
    return memcmp(a, b, 32);
}

/* The lowest-ranked public member of v, or NULL. */
static const cl_wire_member_t *view_coordinator(const cl_wire_view_t *v)
{
    for (uint32_t i = 0; i < v->count; i++)
        if (!(v->members[i].flags & CL_MEMBER_CLIENT))
            return &v->members[i];
    return NULL;
}

static bool in_view(const cl_wire_view_t *v, const uint8_t key[32])
{
    for (uint32_t i = 0; i < v->count; i++)
        if (memcmp(v->members[i].key, key, 32) == 0)
            return true;
    return false;
}

/* The merge rule: v, from p (a member here that coordinates v), outranks
   this peer's view and lists only peers known here as members. */
static bool outranks(eng_auth_t *a, const cl_peer_t *p, const cl_wire_view_t *v)
{
    const cl_wire_member_t *vc = view_coordinator(v);
    if (vc == NULL || memcmp(vc->key, p->key, 32) != 0)
        return false;
    for (uint32_t i = 0; i < v->count; i++) {
        const cl_peer_t *q = cl_member_find(a->ctx.mb, v->members[i].key);
        if (q == NULL || (q->rank < 0 && q->prev_rank < 0))
            return false;
    }
    size_t n;
    (void)cl_member_list(a->ctx.mb, &n);
    if (v->count != n)
        return v->count > n;
    const cl_peer_t *c = cl_member_coordinator(a->ctx.mb);
    return c != NULL && memcmp(p->key, c->key, 32) < 0;
}

/* The member of v with this key, or NULL. */
static const cl_wire_member_t *view_member(const cl_wire_view_t *v, const uint8_t key[32])
{
    for (uint32_t i = 0; i < v->count; i++)
        if (memcmp(v->members[i].key, key, 32) == 0)
            return &v->members[i];
    return NULL;
}

/* Members of this peer's view that are not gone, and those of them it
   believes alive (itself included). */
static void count_members(eng_auth_t *a, size_t *present, size_t *alive)
{
    size_t n;
    cl_peer_t *const *list = cl_member_list(a->ctx.mb, &n);
    *present = *alive = 0;
    for (size_t i = 0; i < n; i++) {
        if (list[i]->state == CL_PEER_GONE)
            continue;
        (*present)++;
        if (list[i]->state == CL_PEER_ALIVE || memcmp(list[i]->key, a->ctx.self_key, 32) == 0)
            (*alive)++;
    }
}

/* A coordinator that died with its views in flight leaves two groups: the
   peers that got its last view (which admitted `key`) and those that did
   not.  The larger group wins (docs/security.md §4).  v, from a stranger,
   is that larger view when its sender coordinates it and it extends this
   peer's view: every member it lists that is a member here holds the same
   rank, the others (the sender, and peers admitted by views this peer
   never got) hold ranks no live member holds here, and every member this
   peer believes alive is in it.  Such a view renumbers and drops nobody;
   its sender, the lowest rank in it, gains what a JOIN naming that free
   rank would give it: coordinating. */
static bool adds_only_sender(eng_auth_t *a, const uint8_t key[32], const cl_wire_view_t *v)
{
    const cl_wire_member_t *vc = view_coordinator(v);
    if (vc == NULL || memcmp(vc->key, key, 32) != 0 || vc->rank < 0)
        return false;
    for (uint32_t i = 0; i < v->count; i++) {
        const cl_wire_member_t *x = &v->members[i];
        const cl_peer_t *q = cl_member_find(a->ctx.mb, x->key);
        bool known = q != NULL && q->state != CL_PEER_GONE && (q->rank >= 0 || q->monitor);
        if (known ? q->rank != x->rank || q->monitor != (x->rank < 0)
                  : x->rank < 0 || cl_member_rank_live(a->ctx.mb, x->rank, a->ctx.self_key))
            return false;
    }
    /* Every member believed alive here is in v: over v's keys sorted once
       (a stranger's view may list thousands; no quadratic scan). */
    uint8_t *keys = malloc((size_t)v->count * 32 + 1);
    if (keys == NULL)
        return false;
    for (uint32_t i = 0; i < v->count; i++)
        memcpy(keys + (size_t)i * 32, v->members[i].key, 32);
    qsort(keys, v->count, 32, cmp_key);
    size_t n;
    cl_peer_t *const *list = cl_member_list(a->ctx.mb, &n);
    bool all = true;
    for (size_t i = 0; i < n && all; i++) {
        const cl_peer_t *q = list[i];
        bool self = memcmp(q->key, a->ctx.self_key, 32) == 0;
        if (q->state == CL_PEER_GONE || q->monitor)
            continue;
        if (self || q->state == CL_PEER_ALIVE)
            all = bsearch(q->key, keys, v->count, 32, cmp_key) != NULL;
    }
    free(keys);
    return all;
}

/* The other side of adds_only_sender: v, from member p that coordinates
   it, is a smaller group of this peer's members that does not know this
   peer (they never got the view that admitted it).  This peer, their
   coordinator in its own view, outbids v's epoch and sends them its view,
   which they take by adds_only_sender. */
static bool smaller_group_without_me(eng_auth_t *a, const cl_peer_t *p, const cl_wire_view_t *v)
{
    const cl_wire_member_t *vc = view_coordinator(v);
    if (vc == NULL || memcmp(vc->key, p->key, 32) != 0 || view_member(v, a->ctx.self_key) != NULL ||
        !coordinates(a))
        return false;
    for (uint32_t i = 0; i < v->count; i++) {
        const cl_peer_t *q = cl_member_find(a->ctx.mb, v->members[i].key);
        if (q == NULL || q->state == CL_PEER_GONE || q->rank != v->members[i].rank)
            return false;
    }
    size_t present, alive;
    count_members(a, &present, &alive);
    return v->count < alive;
}

static bool check_view(eng_auth_t *a, const cl_peer_t *p, const uint8_t key[32],
                       const cl_wire_msg_t *m)
{
    const cl_wire_view_t *v = &m->u.view;
    /* A monitor entry coordinates while no ranked public member lives
       (docs/monitor.md §3): its views count as a member's. */
    bool member = p != NULL && p->state != CL_PEER_GONE && (p->rank >= 0 || p->monitor);
    uint64_t own = cl_member_epoch(a->ctx.mb);
    if (!in_view(v, key))
        return refuse(a, p, key, m, "its sender is not in it", REFUSE_ROLE);
    /* Every address a view lists is dialled: it must be a multiaddr that
       names the member's own key (a client's is empty). */
    for (uint32_t i = 0; i < v->count; i++) {
        const cl_wire_member_t *x = &v->members[i];
        const char *addr = x->address != NULL ? x->address : "";
        cl_addr_t parsed;
        bool ok = (x->flags & CL_MEMBER_CLIENT)
                      ? addr[0] == '\0'
                      : cl_addr_parse(addr, &parsed, NULL, 0) == 0 && parsed.has_key &&
                            memcmp(parsed.key, x->key, 32) == 0;
        if (!ok)
            return refuse(a, p, key, m, "it lists an address that is not its member's own",
                          REFUSE_BOUND);
    }
    if (epoch_out_of_bounds(own, v->epoch))
        return refuse(a, p, key, m, "its epoch jumps too far ahead", REFUSE_BOUND);
    if (!is_member(a)) {
        /* Joining, a standby, or rejoining after a removal: a view from a
           peer it asked for a rank, or one that lists it from a member of
           its last view (the admitter that publishes its admission).  A
           view without it cannot throw it out again. */
        if (asked(a, key))
            return true;
        if (p != NULL && (p->rank >= 0 || p->prev_rank >= 0 || p->monitor) &&
            in_view(v, a->ctx.self_key))
            return true;
        return refuse(a, p, key, m,
                      in_view(v, a->ctx.self_key)
                          ? "this peer never asked it to join"
                          : "a view without this rejoining peer from a peer "
                            "it did not ask",
                      REFUSE_ROLE);
    }
    /* Not banned: after a coordinator died with its views in flight, a
       member this peer never saw admitted may hold the newer view, and
       its heartbeats must reach this peer's coordinator, which answers
       with a view that shows it what this peer's group is. */
    if (!member) {
        if (v->epoch > own && adds_only_sender(a, key, v))
            return true;
        return refuse(a, p, key, m, "its sender is not a member of this peer's view", REFUSE_ROLE);
    }
    /* Back from a pause: every answer of a member asked is tallied (an
       old view too: a majority that still holds this peer's view ends the
       round). */
    bool acked = member && eng_auth_acknowledged(a, key, m);
    if (v->epoch <= own)
        return true; /* old news: the member code ignores it (no count) */
    const cl_peer_t *c = cl_member_coordinator(a->ctx.mb);
    if (c != NULL && c == p)
        return true;
    /* The admitter publishes the views that admit peers into the group
       (it is not the coordinator while a newcomer holds a lower rank). */
    if (cl_member_admitter(a->ctx.mb) == p)
        return true;
    if (outranks(a, p, v))
        return true;
    /* This peer was stopped and asked the members whether the swarm went
       on without it: a view of a member that is not its coordinator
       counts once a majority of its last view answered with it (the
       others may have removed it and moved on under another
       coordinator; one hostile member must not move it alone). */
    if (acked)
        return true;
    /* No majority answered in time: a peer it then asked to take it back
       answers with a view that lists it. */
    if (eng_auth_rejoining(a) && asked(a, key) && in_view(v, a->ctx.self_key))
        return true;
    /* A member whose answer, a newer view without this peer, said the
       swarm went on now lists it, and no majority can answer any more:
       that member took it back (the window would trust this same view;
       taking it before grants no more).  It resyncs as a straggler
       (eng_auth_taken_back). */
    if (eng_auth_went_on_by(a, key) && in_view(v, a->ctx.self_key))
        return true;
    if (eng_auth_was_probed(a, key)) {
        /* Not counted, but an answer: its sender is alive (it sends this
           peer no heartbeats while this peer is not in its view). */
        a->ctx.answered(a->ctx.arg, key);
        /* Newer than this peer's (old news passed above).  Only a view
           without this peer says the swarm went on without it: one that
           still lists it is the same swarm with this peer in it (a
           member removed or added meanwhile), whose collectives wait for
           it, so holding them and stopping would lose it for nothing. */
        if (!in_view(v, a->ctx.self_key))
            eng_auth_refused_newer(a, key);
        return refuse(a, p, key, m,
                      "after a pause a view of a member that is not the coordinator counts only "
                      "once a majority of this peer's last view answered with it",
                      REFUSE_ROLE);
    }
    if (smaller_group_without_me(a, p, v)) {
        a->ctx.outbid(a->ctx.arg, v);
        return refuse(a, p, key, m, "a smaller group's view (answered with this peer's view)",
                      REFUSE_ROLE);
    }
    return refuse(a, p, key, m, "its sender is not this peer's coordinator", REFUSE_ROLE);
}

bool eng_auth_message(eng_auth_t *a, const cl_peer_t *p, const uint8_t key[32],
                      const cl_wire_msg_t *m)
{
    if (a == NULL)
        return true;
    bool member = p != NULL && p->state != CL_PEER_GONE && p->rank >= 0;
    bool monitor = p != NULL && p->state != CL_PEER_GONE && p->monitor; /* docs/monitor.md §3 */
    bool former = p != NULL && p->prev_rank >= 0;
    switch (m->hdr.type) {
    case CL_MSG_JOIN:
        if (!(m->u.join.weight <= WEIGHT_MAX))
            return refuse(a, p, key, m, "a weight above 1e9 (the most COLLAB_WEIGHT allows)",
                          REFUSE_BOUND);
        return true; /* anyone may ask; the coordinator decides */
    case CL_MSG_JOIN_REPLY:
        if (asked(a, key))
            return true;
        /* Not banned: a late answer to an earlier incarnation of this key. */
        return refuse(a, p, key, m, "this peer never asked it to join", REFUSE_ROLE);
    case CL_MSG_VIEW:
        if (!check_view(a, p, key, m))
            return false;
        /* A view that lists this peer from a member of the swarm that
           went on without it ends a rejoin window after a pause. */
        if (in_view(&m->u.view, a->ctx.self_key))
            eng_auth_taken_back(a, key);
        return true;
    case CL_MSG_HEARTBEAT:
        if (epoch_out_of_bounds(cl_member_epoch(a->ctx.mb), m->u.heartbeat.epoch))
            return refuse(a, p, key, m, "a heartbeat with an epoch far ahead", REFUSE_BOUND);
        if (member || monitor)
            return true;
        /* A peer that believes it is a member (it was removed, or a view
           of a coordinator that died listed it): its coordinator answers
           with a view that shows it is not.  The epoch it raises its own
           by is bounded (above); the view tells nothing that the members'
           join lines do not. */
        if (is_member(a) && coordinates(a))
            return true;
        return refuse(a, p, key, m, "its sender is not a member", REFUSE_ROLE);
    case CL_MSG_SUSPECT:
    case CL_MSG_UPDATE:
        /* No peer may claim over the network a weight its own
           COLLAB_WEIGHT could not hold. */
        if (m->hdr.type == CL_MSG_UPDATE && !(m->u.update.weight <= WEIGHT_MAX))
            return refuse(a, p, key, m, "a weight above 1e9 (the most COLLAB_WEIGHT allows)",
                          REFUSE_BOUND);
        /* A monitor reports the members it lost; it has no weight.  A
           stranger is not banned: a peer admitted by a coordinator that
           died with its view in flight believes it is a member, and its
           heartbeats must still reach this peer's coordinator, whose
           answer shows it that it is not (check_view). */
        if (!member && !(monitor && m->hdr.type == CL_MSG_SUSPECT))
            return refuse(a, p, key, m, "its sender is not a member", REFUSE_ROLE);
        if (!is_member(a) || !coordinates(a))
            return refuse(a, p, key, m, "it goes to the coordinator only", REFUSE_ROLE);
        return true;
    case CL_MSG_GOODBYE:
        if (member || monitor)
            return true;
        return refuse(a, p, key, m, "its sender is not a member", REFUSE_ROLE);
    case CL_MSG_MATCH:
        if (member)
            return true;
        return refuse(a, p, key, m, "its sender is not a member", REFUSE_ROLE);
    case CL_MSG_BYE_ACK:
        /* Answers this peer's GOODBYE: only from peers of its view. */
        if (member || monitor || former)
            return true;
        return refuse(a, p, key, m, "its sender is not a member", REFUSE_ROLE);
    case CL_MSG_REPORT:
        /* Statistics go to monitors only, from ranked members (the report
           code checks the rank field against the view). */
        if (!a->ctx.cfg->monitor)
            return refuse(a, p, key, m, "this peer is not a monitor", REFUSE_ROLE);
        if (member)
            return true;
        return refuse(a, p, key, m, "its sender is not a ranked member", REFUSE_ROLE);
    case CL_MSG_COLL:
    case CL_MSG_P2P:
        return true; /* members' data; early data waits in the bounded held queue */
    case CL_MSG_RELAYED:
        /* To a relaying monitor: the relay code checks that both ends are
           client members of its view.  To a member only from a monitor of
           its view that announced relaying (docs/monitor.md §8). */
        if (a->ctx.cfg->monitor && a->ctx.cfg->relay)
            return true; /* a member this view does not list yet waits for it there */
        if (monitor && p->relay)
            return true;
        return refuse(a, p, key, m, "RELAY from a peer that is not a relaying monitor of the view",
                      REFUSE_ROLE);
    case CL_MSG_P2P_CTL:
        /* A receiver's match or cancellation of a synchronous send: it
           names only this peer's own sends, and only members receive. */
        if (member || former)
            return true;
        return refuse(a, p, key, m, "its sender is not a member", REFUSE_ROLE);
    case CL_MSG_ELASTIC:
        switch (m->hdr.sub) {
        case CL_EL_PROBE: /* the view goes only to members, past or present */
            if (member || former)
                return true;
            return refuse(a, p, key, m, "PROBE from a peer that was never a member", REFUSE_ROLE);
        case CL_EL_ADMIT: /* only the admitter decides admissions */
            if (!member)  /* not banned: the same race as SUSPECT */
                return refuse(a, p, key, m, "ADMIT from a non-member", REFUSE_ROLE);
            if (cl_member_admitter(a->ctx.mb) != p) {
                if (keep_for_successor(a, p, key, m))
                    return false;
                return refuse(a, p, key, m, "ADMIT from a member that is not the admitter",
                              REFUSE_ROLE);
            }
            return true;
        case CL_EL_FETCH:
        case CL_EL_DROP:
            /* Reading a donor's state, or making it forget an item, is for
               the joiners an ADMIT named. */
            if (member && a->ctx.entrant(a->ctx.arg, key))
                return true;
            /* A monitor reads a copy the admitter told the members to take
               for it (a checkpoint), never makes anyone forget; a monitor
               serves its checkpoint to the peers it told to resume from it
               (docs/monitor.md §7). */
            if (m->hdr.sub == CL_EL_FETCH && monitor && a->ctx.copy_expected(a->ctx.arg, key))
                return true;
            if (m->hdr.sub == CL_EL_FETCH && a->ctx.cfg->monitor && member)
                return true;
            /* Not banned: a monitor admitted by a view still on its way
               here looks like a stranger for a moment. */
            return refuse(a, p, key, m, "state requests are for admitted joiners only",
                          REFUSE_ROLE);
        case CL_EL_QUERY:
            if (member)
                return true;
            if (monitor && a->ctx.copy_expected(a->ctx.arg, key))
                return true;
            return refuse(a, p, key, m, "a state query from a peer that is no member", REFUSE_ROLE);
        case CL_EL_HASHES:
        case CL_EL_DATA:
        case CL_EL_NACK:
            /* A donor's answers: a member's, or a monitor's that serves
               its checkpoint (the sync code checks it is this peer's
               donor). */
            if (member || monitor)
                return true;
            return refuse(a, p, key, m, "its sender is not a member", REFUSE_ROLE);
        case CL_EL_CKPT:
            /* Checkpoints: a monitor's request or resume, the admitter's
               notice; the checkpoint code checks the roles further. */
            if (member || monitor || asked(a, key))
                return true;
            return refuse(a, p, key, m, "a checkpoint message from a stranger",
                          REFUSE_ROLE); /* as for FETCH */
        default:
            if (member)
                return true;
            return refuse(a, p, key, m, "its sender is not a member", REFUSE_ROLE);
        }
    default:
        return refuse(a, p, key, m, "a message type the engine does not take", REFUSE_BOUND);
    }
}
