/*  cl_engine_join.c - how a peer gets a rank.

    A joiner connects to every COLLAB_INITIAL_PEERS entry at once and sends
    JOIN to each one whose handshake completes, again every second: a peer
    that is not a member yet answers NOT_MEMBER (collab-run starts peers
    that list each other before any of them is in), a member that does not
    coordinate answers REDIRECT with the coordinator's address, and the
    coordinator assigns a rank (COLLAB_RANK if free, else the rank this key
    held before, else the lowest free) and publishes a view that includes
    the joiner, or answers STANDBY (no free rank: retry every 2 s, for as
    long as the swarm keeps answering STANDBY; when it stops answering for
    max(30 s, 4 x COLLAB_TIMEOUT) the standby gives up with
    COLLAB_ERR_NETWORK) or CONFLICT (settings that differ from the
    founder's).  With
    no answer by max(30 s, 4 x COLLAB_TIMEOUT) the joiner gives up with
    COLLAB_ERR_NETWORK; it never founds a second swarm on its own.

    Founding again.  The founder may die while the others join it, before
    the views that admit them leave it: then nobody is a member and each
    joiner hears only NOT_MEMBER from the others.  A joiner that saw the
    link to an initial peer go down (after it was up) and stay down for
    max(1 s, COLLAB_TIMEOUT / 2), and since then heard NOT_MEMBER from every
    other initial peer that has not refused it (at least one), founds the
    swarm again if its key is the lowest among them; the others go on sending JOIN and
    are admitted by it.  Every joiner decides from the same facts (who
    is gone, who is waiting, their keys), never from clocks, so one of them
    founds; the others keep COLLAB_INITIAL_PEERS as the way in.

    A restarted collab-monitor (docs/monitor.md §3, "Restart") lists the
    peers of its history, not peers that wait for it: when none of them
    completed a handshake within cfg.monitor_found_after seconds (and none
    redirected it), nobody of its last run is left, and it founds the
    swarm again then rather than at the join deadline.

    Deadlines.  While this peer joins (or waits as a standby) one timer in
    the loop's set (e->join_timer) is armed at the earliest of the next
    JOIN (next_join_try), the join's deadline and the moment founding
    again becomes due by the clock (the grace after the last initial peer
    was lost; a monitor's monitor_found_after); its callback acts and arms
    it again while this peer joins.  What events change (a link up, down
    or refused, a JOIN_REPLY) is looked at when they come
    (eng_join_changed): a joiner may found again then.
*/
#include "engine/cl_engine_elastic.h" /* checkpoints: a resuming rank */
#include "engine/cl_engine_int.h"

#include "util/cl_log.h"
#include "util/cl_text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int eng_initial_index(struct cl_engine *e, const uint8_t key[32])
{
    for (size_t i = 0; i < e->ninitial; i++)
        if (memcmp(e->initial[i].key, key, 32) == 0)
            return (int)i;
    return -1;
}

void eng_send_join(struct cl_engine *e, const uint8_t key[32])
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_JOIN;
    cl_wire_join_t *j = &m.u.join;
    j->rank =
        e->cfg.rank >= 0 && e->cfg.rank < CL_WIRE_WORLD_MAX && !e->cfg.monitor ? e->cfg.rank : -1;
    /* Rejoining (removed while alive): the program holds its rank, so the
       peer takes that one back or waits as a standby until it frees. */
    bool rejoin = e->member_since > 0 && !e->cfg.monitor && atomic_load(&e->rank) >= 0;
    if (rejoin)
        j->rank = atomic_load(&e->rank);
    /* COLLAB_RANK_REQUIRED: a program whose rank is given to it (a
       launcher's, NCCL's ncclCommInitRank) holds that one or none. */
    bool required = rejoin || (e->cfg.rank_required && j->rank >= 0);
    j->weight = e->cfg.weight;
    /* COLLAB_BANDWIDTH_MBIT: the coordinator puts it in this peer's view
       entry (written only on links of wire version 7). */
    j->bandwidth = e->cfg.monitor ? 0 : e->cfg.bandwidth_kbit;
    j->flags = (uint8_t)((e->cfg.client_mode ? CL_JOIN_CLIENT : 0) |
                         (e->cfg.monitor ? CL_JOIN_MONITOR : 0) |
                         (e->cfg.monitor && e->cfg.relay ? CL_JOIN_RELAY : 0) |
                         (required ? CL_JOIN_RANK_REQUIRED : 0) |
                         (e->cfg.world_size_set ? CL_JOIN_WORLD_SET : 0) |
                         (e->cfg.strict_set ? CL_JOIN_STRICT_SET : 0) |
                         (e->cfg.compression_set ? CL_JOIN_COMPRESSION_SET : 0) |
                         (e->cfg.target_group_set ? CL_JOIN_TARGET_GROUP_SET : 0));
    cl_wire_settings_t *js = &j->settings;
    js->world_size = e->cfg.world_size;
    js->strict = e->cfg.strict ? 1 : 0;
    js->compression = (uint8_t)e->cfg.compression;
    js->target_group = e->cfg.target_group;
    js->aggregation = e->cfg.aggregation_set ? (uint8_t)(e->cfg.aggregation + 1) : 0;
    js->robust_min = e->cfg.robust_min_set ? (uint32_t)e->cfg.robust_min : 0;
    js->max_weight_ratio = e->cfg.max_weight_ratio_set ? (uint32_t)e->cfg.max_weight_ratio : 0;
    js->verify = e->cfg.verify_set ? (uint8_t)(e->cfg.verify ? 2 : 1) : 0;
    j->incarnation = e->incarnation;
    snprintf(j->address, sizeof j->address, "%s", cl_transport_address(e->tp));
    eng_auth_note_join_sent(e, key);
    (void)cl_transport_send(e->tp, key, &m);
}

void eng_send_join_relinked(struct cl_engine *e, const uint8_t key[32])
{
    const cl_peer_t *q = cl_member_find(e->mb, key);
    if (q != NULL && q->address[0] != '\0' && !cl_transport_has_link(e->tp, key))
        (void)cl_transport_connect(e->tp, key, q->address);
    eng_send_join(e, key);
}

void eng_join_link_up(struct cl_engine *e, const uint8_t key[32])
{
    int idx = eng_initial_index(e, key);
    if (idx >= 0) {
        e->initial_state[idx] = 1;
        e->initial_lost[idx] = 0;
    }
    if ((e->state == ENG_JOINING || e->state == ENG_STANDBY) &&
        (idx >= 0 || (e->have_redirect && memcmp(key, e->redirect_key, 32) == 0)))
        eng_send_join(e, key);
}

void eng_join_link_down(struct cl_engine *e, const uint8_t key[32])
{
    int idx = eng_initial_index(e, key);
    if (idx >= 0 && e->initial_state[idx] == 1) {
        e->initial_state[idx] = 0;
        e->initial_lost[idx] = eng_now();
    }
}

void eng_join_link_refused(struct cl_engine *e, const uint8_t key[32], int reason,
                           const char *text)
{
    int idx = eng_initial_index(e, key);
    if (idx >= 0 && reason != CL_REFUSE_BUSY) {
        e->initial_state[idx] = 2;
        e->refused_reason = reason;
        char addr[CL_ADDR_TEXT_MAX];
        if (cl_addr_format(&e->initial[idx], addr, sizeof addr) == 0)
            cl_warn("cannot join through initial peer %s: %s", addr,
                    text != NULL ? text : "refused");
    }
    /* The member a JOIN was sent on to (the coordinator) speaks no
       version this peer speaks (a swarm that signs needs 9): no retry
       can change that. */
    if (e->state == ENG_JOINING && reason == CL_REFUSE_VERSION && e->have_redirect &&
        memcmp(key, e->redirect_key, 32) == 0) {
        cl_error("the swarm's coordinator refused this peer's protocol version: %s",
                 text != NULL ? text : "refused");
        eng_fail_init(e, COLLAB_ERR_NETWORK);
    }
}

/* The bandwidth figure a founder puts in its own view entry: none when
   it speaks no version that carries figures (COLLAB_WIRE_VERSION < 7). */
static uint32_t s_own_bandwidth(const struct cl_engine *e)
{
    return e->cfg.wire_version >= 7 ? e->cfg.bandwidth_kbit : 0;
}

/* The swarm-wide settings a founder gives the swarm: its own. */
static cl_settings_t s_own_settings(const struct cl_engine *e)
{
    return (cl_settings_t){e->cfg.world_size,
                           e->cfg.strict,
                           e->cfg.compression,
                           e->cfg.target_group,
                           e->cfg.aggregation,
                           (uint32_t)e->cfg.robust_min,
                           (uint32_t)e->cfg.max_weight_ratio,
                           e->cfg.verify};
}

static void on_join_timer(void *arg, double now);

static bool joining(const struct cl_engine *e)
{
    return e->state == ENG_JOINING || e->state == ENG_STANDBY;
}

/* When founding again becomes due by the clock alone (see "Founding
   again" and "A restarted collab-monitor" above); infinity when only
   events can change the answer now. */
static double found_deadline(const struct cl_engine *e, double now)
{
    if (e->state != ENG_JOINING || e->ninitial == 0)
        return INFINITY;
    double t = INFINITY;
    if (e->cfg.monitor) {
        if (e->cfg.monitor_found_after > 0 && !e->have_redirect)
            t = e->join_started + e->cfg.monitor_found_after;
    } else if (!e->cfg.client_mode) {
        double lost = 0;
        for (size_t i = 0; i < e->ninitial; i++)
            if (e->initial_state[i] != 2 && e->initial_lost[i] > 0)
                lost = fmax(lost, e->initial_lost[i]);
        if (lost > 0)
            t = lost + eng_found_grace(e->cfg.timeout);
    }
    return t > now ? t : INFINITY;
}

/* Arms the join's timer at its earliest deadline while this peer joins,
   cancels it otherwise. */
static void join_arm(struct cl_engine *e, double now)
{
    if (e->join_timer < 0)
        return;
    if (!joining(e)) {
        cl_timer_cancel(e->timers, e->join_timer);
        return;
    }
    double t = fmin(e->next_join_try, found_deadline(e, now));
    if (e->join_deadline > 0)
        t = fmin(t, e->join_deadline);
    cl_timer_arm(e->timers, e->join_timer, t);
}

void eng_join_fini(struct cl_engine *e)
{
    if (e->join_timer >= 0)
        cl_timer_remove(e->timers, e->join_timer);
    e->join_timer = -1;
    free(e->initial);
    e->initial = NULL;
    e->ninitial = 0;
    free(e->initial_state);
    e->initial_state = NULL;
    free(e->initial_lost);
    e->initial_lost = NULL;
    free(e->initial_not_member);
    e->initial_not_member = NULL;
}

int eng_join_start(struct cl_engine *e)
{
    const char *text = e->cfg.initial_peers;
    char err[512];
    e->join_timer = cl_timer_add(e->timers, on_join_timer, e);
    if (e->join_timer < 0)
        return COLLAB_ERR_NO_MEM;
    if (text != NULL && text[0] != '\0') {
        if (cl_addr_parse_list(text, true, &e->initial, &e->ninitial, err, sizeof err) != 0) {
            cl_error("COLLAB_INITIAL_PEERS: %s", err);
            return COLLAB_ERR_CONFIG;
        }
        /* collab-run may list this peer among the others: skip it. */
        size_t k = 0;
        for (size_t i = 0; i < e->ninitial; i++)
            if (memcmp(e->initial[i].key, e->self_key, 32) != 0)
                e->initial[k++] = e->initial[i];
        e->ninitial = k;
    }
    if (e->ninitial == 0) {
        if (e->cfg.client_mode) {
            cl_error("COLLAB_CLIENT_MODE=1 needs COLLAB_INITIAL_PEERS: a peer that accepts no "
                     "connections cannot found a swarm");
            return COLLAB_ERR_CONFIG;
        }
        cl_settings_t s = s_own_settings(e);
        int rc = e->cfg.monitor
                     ? cl_member_found_monitor(e->mb, cl_transport_address(e->tp), e->cfg.relay, &s)
                     : cl_member_found_bw(e->mb, e->cfg.rank, cl_transport_address(e->tp), false,
                                          e->cfg.weight, s_own_bandwidth(e), &s);
        if (rc != COLLAB_OK)
            return COLLAB_ERR_NO_MEM;
        eng_become_member(e, true);
        return COLLAB_OK;
    }
    e->initial_state = calloc(e->ninitial, sizeof(int));
    e->initial_lost = calloc(e->ninitial, sizeof(double));
    e->initial_not_member = calloc(e->ninitial, sizeof(double));
    if (e->initial_state == NULL || e->initial_lost == NULL || e->initial_not_member == NULL)
        return COLLAB_ERR_NO_MEM;
    double now = eng_now();
    e->state = ENG_JOINING;
    e->join_started = now;
    e->join_deadline = now + eng_join_limit(e->cfg.timeout);
    e->next_join_try = now + ENG_JOIN_RETRY;
    for (size_t i = 0; i < e->ninitial; i++) {
        char addr[CL_ADDR_TEXT_MAX];
        if (cl_addr_format(&e->initial[i], addr, sizeof addr) != 0 ||
            cl_transport_connect(e->tp, e->initial[i].key, addr) != COLLAB_OK)
            e->initial_state[i] = 2;
    }
    join_arm(e, now);
    return COLLAB_OK;
}

void eng_join_again(struct cl_engine *e)
{
    /* The coordinator lost contact with us; ask to come back. */
    cl_peer_t *c = cl_member_coordinator(e->mb);
    cl_error("this peer was removed from the swarm (the others lost contact with it); "
             "rejoining");
    e->state = ENG_JOINING;
    if (c != NULL) {
        memcpy(e->redirect_key, c->key, 32);
        e->have_redirect = true;
        (void)cl_transport_connect(e->tp, c->key, c->address);
    }
    e->next_join_try = eng_now();
    e->join_deadline = 0; /* no deadline for a rejoin */
    join_arm(e, e->next_join_try);
}

/* See "A restarted collab-monitor" above.  True when this monitor
   founded. */
static bool monitor_found_again(struct cl_engine *e, double now)
{
    if (e->state != ENG_JOINING || e->cfg.monitor_found_after <= 0 || e->ninitial == 0 ||
        e->have_redirect)
        return false;
    if (now < e->join_started + e->cfg.monitor_found_after) /* as found_deadline arms it */
        return false;
    for (size_t i = 0; i < e->ninitial; i++)
        if (e->initial_state[i] == 1 || e->initial_lost[i] > 0)
            return false; /* one answered: the join goes on */
    cl_settings_t s = s_own_settings(e);
    if (cl_member_found_monitor(e->mb, cl_transport_address(e->tp), e->cfg.relay, &s) !=
        COLLAB_OK) {
        cl_error("out of memory founding the swarm again");
        eng_fail_init(e, COLLAB_ERR_NO_MEM);
        return true;
    }
    cl_warn("none of the %zu peers of this monitor's last run answered within %.0f s; founding "
            "the swarm again",
            e->ninitial, e->cfg.monitor_found_after);
    eng_become_member(e, true);
    return true;
}

/* See "Founding again" above.  True when this peer founded. */
static bool maybe_found_again(struct cl_engine *e, double now)
{
    if (e->cfg.monitor)
        return monitor_found_again(e, now);
    if (e->state != ENG_JOINING || e->cfg.client_mode || e->ninitial == 0)
        return false;
    if (e->have_redirect && cl_transport_has_link(e->tp, e->redirect_key))
        return false; /* a member named a coordinator that is up */
    double grace = eng_found_grace(e->cfg.timeout);
    double lost = 0;
    size_t gone = 0, waiting = 0;
    for (size_t i = 0; i < e->ninitial; i++) {
        if (e->initial_state[i] == 2)
            continue;
        if (e->initial_lost[i] > 0) { /* down since (an UP clears it) */
            /* Compared as found_deadline arms the join's timer. */
            if (now < e->initial_lost[i] + grace)
                return false;
            lost = fmax(lost, e->initial_lost[i]);
            gone++;
        }
    }
    if (gone == 0)
        return false;
    for (size_t i = 0; i < e->ninitial; i++) {
        if (e->initial_state[i] == 2 || e->initial_lost[i] > 0)
            continue;
        if (e->initial_not_member[i] <= lost)
            return false; /* not heard since: it may be a member, or not reached yet */
        if (memcmp(e->initial[i].key, e->self_key, 32) < 0)
            return false; /* it founds */
        waiting++;
    }
    /* Only with another peer that waits too: a joiner whose only contact
       died does not found a swarm of its own (the swarm it wanted may
       still run elsewhere); it gives up at the deadline. */
    if (waiting == 0)
        return false;
    cl_settings_t s = s_own_settings(e);
    if (cl_member_found_bw(e->mb, e->cfg.rank, cl_transport_address(e->tp), false, e->cfg.weight,
                           s_own_bandwidth(e), &s) != COLLAB_OK) {
        cl_error("out of memory founding the swarm again");
        eng_fail_init(e, COLLAB_ERR_NO_MEM);
        return true;
    }
    cl_warn("%zu initial peer%s went away before any peer became a member of the swarm; this "
            "peer, the lowest of the %zu waiting to join, founds it again",
            gone, gone == 1 ? "" : "s", waiting + 1);
    eng_become_member(e, true);
    return true;
}

/* The join's timer: the deadline, founding again, the next JOIN. */
static void join_step(struct cl_engine *e, double now)
{
    if (e->join_deadline > 0 && now >= e->join_deadline && e->state == ENG_STANDBY) {
        /* Every STANDBY answer moves the deadline: the swarm went away
           (its run ended, or it is unreachable now). */
        cl_error("the swarm this peer waited for as a standby has not answered for %.0f s (its "
                 "run ended, or it cannot be reached); giving up",
                 eng_join_limit(e->cfg.timeout));
        eng_fail_init(e, COLLAB_ERR_NETWORK);
        return;
    }
    if (e->join_deadline > 0 && now >= e->join_deadline && e->state == ENG_JOINING) {
        size_t reached = 0;
        for (size_t i = 0; i < e->ninitial; i++)
            reached += e->initial_state[i] == 1;
        if (reached == 0)
            cl_error("could not reach any of the %zu COLLAB_INITIAL_PEERS within %.0f s; not "
                     "founding a second swarm",
                     e->ninitial, eng_join_limit(e->cfg.timeout));
        else
            cl_error("reached %zu of the %zu COLLAB_INITIAL_PEERS within %.0f s, but none of "
                     "them is a member of a swarm",
                     reached, e->ninitial, eng_join_limit(e->cfg.timeout));
        eng_fail_init(e, COLLAB_ERR_NETWORK);
        return;
    }
    if (maybe_found_again(e, now))
        return;
    if (now < e->next_join_try)
        return;
    e->next_join_try = now + (e->state == ENG_STANDBY ? ENG_STANDBY_RETRY : ENG_JOIN_RETRY);
    bool any_pending = false;
    for (size_t i = 0; i < e->ninitial; i++) {
        if (e->initial_state[i] == 2)
            continue;
        any_pending = true;
        if (!cl_transport_has_link(e->tp, e->initial[i].key)) {
            char addr[CL_ADDR_TEXT_MAX];
            e->initial_state[i] = 0;
            if (cl_addr_format(&e->initial[i], addr, sizeof addr) == 0)
                (void)cl_transport_connect(e->tp, e->initial[i].key, addr);
        } else if (e->initial_state[i] == 1) {
            eng_send_join(e, e->initial[i].key);
        }
    }
    if (e->have_redirect) {
        any_pending = true;
        cl_peer_t *c = cl_member_find(e->mb, e->redirect_key);
        if (!cl_transport_has_link(e->tp, e->redirect_key) && c != NULL)
            (void)cl_transport_connect(e->tp, e->redirect_key, c->address);
        else
            eng_send_join(e, e->redirect_key);
    }
    if (!any_pending && e->state == ENG_JOINING && e->join_deadline > 0) {
        cl_error("every one of the %zu COLLAB_INITIAL_PEERS refused this peer (%s); check "
                 "COLLAB_SWARM_KEY, COLLAB_RUN_ID and the versions",
                 e->ninitial,
                 e->refused_reason == CL_REFUSE_AUTH      ? "swarm key"
                 : e->refused_reason == CL_REFUSE_RUN     ? "run id"
                 : e->refused_reason == CL_REFUSE_VERSION ? "protocol version"
                                                          : "refused");
        eng_fail_init(e, COLLAB_ERR_NETWORK);
    }
}

static void on_join_timer(void *arg, double now)
{
    struct cl_engine *e = arg;
    if (joining(e))
        join_step(e, now);
    join_arm(e, now);
}

void eng_join_changed(struct cl_engine *e)
{
    if (!joining(e))
        return;
    double now = eng_now();
    (void)maybe_found_again(e, now);
    join_arm(e, now);
}

bool eng_settings_conflict(struct cl_engine *e, const cl_settings_t *s)
{
    static const char *const comp[] = {"none", "fp16", "int8", "adaptive"};
    static const char *const agg[] = {"mean", "trimmed_mean", "centered_clip"};
    int ws = s->world_size, strict = s->strict ? 1 : 0, compression = s->compression;
    int target_group = s->target_group;
    if (e->cfg.aggregation_set && e->cfg.aggregation != s->aggregation) {
        cl_error("COLLAB_AGGREGATION=%s conflicts with the swarm's setting %s (fixed by the "
                 "peer that founded it)",
                 agg[e->cfg.aggregation % 3], agg[(unsigned)s->aggregation % 3]);
        return true;
    }
    if (e->cfg.robust_min_set && (uint32_t)e->cfg.robust_min != s->robust_min) {
        cl_error("COLLAB_ROBUST_MIN=%ld conflicts with the swarm's setting %u (fixed by the "
                 "peer that founded it)",
                 e->cfg.robust_min, (unsigned)s->robust_min);
        return true;
    }
    if (e->cfg.max_weight_ratio_set && (uint32_t)e->cfg.max_weight_ratio != s->max_weight_ratio) {
        cl_error("COLLAB_MAX_WEIGHT_RATIO=%d conflicts with the swarm's setting %u (fixed by the "
                 "peer that founded it)",
                 e->cfg.max_weight_ratio, (unsigned)s->max_weight_ratio);
        return true;
    }
    if (e->cfg.verify_set && e->cfg.verify != s->verify) {
        cl_error("COLLAB_VERIFY=%d conflicts with the swarm's setting %d (fixed by the peer "
                 "that founded it)",
                 e->cfg.verify ? 1 : 0, s->verify ? 1 : 0);
        return true;
    }
    if (e->cfg.world_size_set && e->cfg.world_size != ws) {
        cl_error("COLLAB_WORLD_SIZE=%d conflicts with the swarm's world size %d (fixed by the "
                 "peer that founded it)",
                 e->cfg.world_size, ws);
        return true;
    }
    if (e->cfg.strict_set && (e->cfg.strict ? 1 : 0) != strict) {
        cl_error("COLLAB_STRICT=%d conflicts with the swarm's setting %d (fixed by the peer "
                 "that founded it)",
                 e->cfg.strict ? 1 : 0, strict);
        return true;
    }
    if (e->cfg.compression_set && e->cfg.compression != compression) {
        cl_error("COLLAB_COMPRESSION=%s conflicts with the swarm's setting %s (fixed by the "
                 "peer that founded it)",
                 comp[e->cfg.compression % 4], comp[compression % 4]);
        return true;
    }
    if (e->cfg.target_group_set && e->cfg.target_group != target_group) {
        cl_error("COLLAB_TARGET_GROUP=%d conflicts with the swarm's setting %d (fixed by the "
                 "peer that founded it)",
                 e->cfg.target_group, target_group);
        return true;
    }
    return false;
}

_Static_assert(CL_CONFIG_SIGNED_WIRE_VERSION == CL_WIRE_SIGNED_VERSION,
               "a swarm that signs needs the version that carries signed proofs");

int eng_settings_wire_floor(const cl_settings_t *s, const char **why)
{
    /* A swarm that signs its relay proofs keeps every peer below version
       10 out: one member that spoke 8 would make each collective it is in
       fall back to tags, which a hostile member could choose that way,
       members that disagree on the kind refuse each other's results, and
       one of 9 would not read the signed exchange pieces and broadcast
       chunks (docs/security.md §6). */
    if (s->verify || s->aggregation != 0) {
        *why = "this swarm signs its relay proofs (COLLAB_VERIFY=1 or a robust "
               "COLLAB_AGGREGATION) and needs wire version 10 on every link";
        return CL_CONFIG_SIGNED_WIRE_VERSION;
    }
    /* Peers of older releases could not read the views' figures. */
    if (s->compression == CL_CONFIG_COMPRESSION_ADAPTIVE) {
        *why = "this swarm's COLLAB_COMPRESSION=adaptive needs wire version 8 on every link";
        return CL_CONFIG_ADAPTIVE_WIRE_VERSION;
    }
    *why = NULL;
    return 0;
}

int eng_own_wire_floor(const struct cl_engine *e, const char **why)
{
    cl_settings_t s = s_own_settings(e);
    return eng_settings_wire_floor(&s, why);
}

void eng_settings_adopted(struct cl_engine *e, const cl_settings_t *s)
{
    /* A setting that needs a wire version keeps peers of older releases
       out of this peer's handshakes from now on. */
    const char *why;
    int floor = eng_settings_wire_floor(s, &why);
    if (floor > 0)
        cl_transport_set_min_version(e->tp, floor, why);
}

void eng_join_reply_settings(struct cl_engine *e, cl_wire_join_reply_t *r)
{
    cl_settings_to_wire(cl_member_settings(e->mb), true, &r->settings);
}

/* Could a client joiner reach the members it must exchange data with?
   Yes when a public member or a relaying monitor lives, or when no other
   client member does (it would be alone with the monitors). */
static bool client_has_path(struct cl_engine *e, const uint8_t key[32])
{
    size_t n, nm;
    cl_peer_t *const *list = cl_member_list(e->mb, &n);
    cl_peer_t *const *mons = cl_member_monitors(e->mb, &nm);
    for (size_t i = 0; i < nm; i++)
        if (mons[i]->relay && mons[i]->state != CL_PEER_GONE)
            return true;
    bool other_client = false;
    for (size_t i = 0; i < n; i++) {
        const cl_peer_t *p = list[i];
        if (p->state == CL_PEER_GONE || memcmp(p->key, key, 32) == 0)
            continue;
        if (!p->client)
            return true;
        other_client = true;
    }
    return !other_client;
}

/* Coordinator: a JOIN. */
void eng_on_join(struct cl_engine *e, const uint8_t key[32], const cl_wire_join_t *j)
{
    char sid[CL_PEER_ID_MAX];
    cl_base58_encode(key, 32, sid, sizeof sid);
    cl_wire_msg_t r;
    memset(&r, 0, sizeof r);
    r.hdr.type = CL_MSG_JOIN_REPLY;
    const cl_settings_t *s = cl_member_settings(e->mb);
    bool client = (j->flags & CL_JOIN_CLIENT) != 0;
    bool monitor = (j->flags & CL_JOIN_MONITOR) != 0;
    if (!client) {
        cl_addr_t a;
        if (cl_addr_parse(j->address, &a, NULL, 0) != 0 || !a.has_key ||
            memcmp(a.key, key, 32) != 0 || a.port == 0) {
            char q[128];
            cl_warn("ignoring a JOIN from %.8s…: its address %s is not its own", sid,
                    cl_text_quote(j->address, 100, q, sizeof q));
            return;
        }
    }
    const cl_wire_settings_t *js = &j->settings;
    bool conflict =
        ((j->flags & CL_JOIN_WORLD_SET) && js->world_size != s->world_size) ||
        ((j->flags & CL_JOIN_STRICT_SET) && (js->strict != 0) != s->strict) ||
        ((j->flags & CL_JOIN_COMPRESSION_SET) && js->compression != s->compression) ||
        ((j->flags & CL_JOIN_TARGET_GROUP_SET) && js->target_group != s->target_group) ||
        (js->aggregation != 0 && js->aggregation - 1 != s->aggregation) ||
        (js->robust_min != 0 && js->robust_min != s->robust_min) ||
        (js->max_weight_ratio != 0 && js->max_weight_ratio != s->max_weight_ratio) ||
        (js->verify != 0 && (js->verify == 2) != s->verify);
    /* Every link of the swarm speaks at least what its settings need (the
       handshake refuses older peers): one made before this peer adopted
       them is refused here. */
    const char *why;
    int floor = eng_settings_wire_floor(s, &why);
    int v = cl_transport_link_version(e->tp, key);
    if (!conflict && floor > 0 && v > 0 && v < floor) {
        cl_warn("refusing peer %.8s…: it speaks wire version %d with this peer; %s", sid, v, why);
        conflict = true;
    }
    cl_peer_t *old = cl_member_find(e->mb, key);
    if (!conflict && old != NULL && old->state != CL_PEER_GONE) {
        if (old->incarnation == 0 || old->incarnation == j->incarnation) {
            /* The same process asking again: its view is on the way. */
            old->incarnation = j->incarnation;
            eng_send_view_to(e, old);
            return;
        }
        /* The same identity restarted: the old process is gone.  Drop it
           first (its collectives fail over), then admit the new one. */
        char desc[CL_WIRE_STR_MAX + 64];
        cl_info("%s restarted; replacing it", eng_peer_desc(old, desc, sizeof desc));
        old->suspect_reason = CL_SUSPECT_CLOSED;
        cl_member_delta_t d;
        if (cl_member_remove(e->mb, (const uint8_t(*)[32])key, 1, eng_now(), &d) == 1)
            eng_coordinator_commit(e, &d);
        else
            cl_member_delta_clear(&d);
    }
    /* Two client members reach each other only through a relaying
       monitor; a swarm with neither that nor a public member to carry
       the collectives would take the joiner in and hang. */
    if (!conflict && client && !monitor && !client_has_path(e, key)) {
        cl_warn("refusing client-mode peer %.8s…: no member of the swarm accepts connections "
                "and no monitor relays, so it could not reach the other client-mode members "
                "(start collab-monitor with --relay)",
                sid);
        r.u.join_reply.status = CL_JOIN_NO_PATH;
        eng_join_reply_settings(e, &r.u.join_reply);
        (void)cl_transport_reply(e->tp, key, &r);
        return;
    }
    /* A public joiner is admitted once this peer could connect to it
       (cl_engine_dialback.c): every member will have to. */
    if (!conflict && !client && eng_dialback_check(e->dialback, key, j) != 1)
        return;
    if (conflict) {
        r.u.join_reply.status = CL_JOIN_CONFLICT;
    } else if (monitor) {
        /* A monitor gets a seat without a rank (docs/monitor.md). */
        cl_member_delta_t d;
        int rc = cl_member_admit_monitor(e->mb, key, j->address, (j->flags & CL_JOIN_RELAY) != 0,
                                         eng_now(), &d);
        if (rc == COLLAB_OK) {
            cl_peer_t *p = cl_member_find(e->mb, key);
            if (p != NULL)
                p->incarnation = j->incarnation;
            eng_coordinator_commit(e, &d);
            return;
        }
        cl_member_delta_clear(&d);
        if (rc != COLLAB_ERR_RANK)
            return;
        cl_warn("refusing monitor %.8s…: the view holds %d monitors already", sid,
                CL_WIRE_MONITORS_MAX);
        r.u.join_reply.status = CL_JOIN_STANDBY;
    } else {
        int rank =
            cl_member_pick_rank(e->mb, key, j->rank, (j->flags & CL_JOIN_RANK_REQUIRED) != 0);
        if (rank < 0) {
            r.u.join_reply.status = CL_JOIN_STANDBY;
        } else {
            cl_member_delta_t d;
            if (cl_member_admit_bw(e->mb, key, rank, client ? "" : j->address, client, j->weight,
                                   j->bandwidth, eng_now(), &d) == COLLAB_OK) {
                cl_peer_t *p = cl_member_find(e->mb, key);
                if (p != NULL)
                    p->incarnation = j->incarnation;
                eng_el_on_admit_rank(e, key); /* before its view, on the same link */
                eng_coordinator_commit(e, &d);
            } else {
                cl_member_delta_clear(&d);
            }
            return;
        }
    }
    eng_join_reply_settings(e, &r.u.join_reply);
    (void)cl_transport_reply(e->tp, key, &r);
}

void eng_on_join_reply(struct cl_engine *e, const uint8_t key[32], const cl_wire_join_reply_t *j)
{
    /* A member back from a pause that found no majority asks to be taken
       back (docs/security.md §4): a redirect to the coordinator helps it. */
    bool probing = e->state == ENG_MEMBER && j->status == CL_JOIN_REDIRECT && eng_auth_probing(e);
    if (e->state != ENG_JOINING && e->state != ENG_STANDBY && !probing)
        return;
    int idx = eng_initial_index(e, key);
    switch (j->status) {
    case CL_JOIN_NOT_MEMBER:
        if (idx >= 0)
            e->initial_not_member[idx] = eng_now();
        break;
    case CL_JOIN_STANDBY:
        e->state = ENG_STANDBY;
        e->join_deadline = eng_now() + eng_join_limit(e->cfg.timeout);
        if (!e->standby_logged && e->member_since > 0)
            cl_warn("rank %d, which this program holds, went to another peer while this peer "
                    "was out of the swarm; waiting as a standby until it frees up",
                    atomic_load(&e->rank));
        else if (!e->standby_logged && e->cfg.rank_required && e->cfg.rank >= 0)
            cl_warn("rank %d, which this peer requires (COLLAB_RANK_REQUIRED=1), is held by "
                    "another peer; waiting as a standby until it frees up",
                    e->cfg.rank);
        else if (!e->standby_logged)
            cl_warn("the swarm is full (world size %d, every rank held); waiting as a standby "
                    "until a rank frees up",
                    j->settings.world_size);
        e->standby_logged = true;
        break;
    case CL_JOIN_REDIRECT: {
        if (memcmp(j->key, e->self_key, 32) == 0 || memcmp(j->key, key, 32) == 0)
            break;
        cl_addr_t a;
        if (cl_addr_parse(j->address, &a, NULL, 0) != 0 || !a.has_key ||
            memcmp(a.key, j->key, 32) != 0)
            break;
        cl_peer_t *c = cl_member_touch(e->mb, j->key);
        if (c == NULL)
            break;
        snprintf(c->address, sizeof c->address, "%s", j->address);
        memcpy(e->redirect_key, j->key, 32);
        e->have_redirect = true;
        if (cl_transport_has_link(e->tp, j->key))
            eng_send_join(e, j->key);
        else
            (void)cl_transport_connect(e->tp, j->key, j->address);
        break;
    }
    case CL_JOIN_UNREACHABLE: {
        char q[CL_WIRE_STR_MAX + 8];
        cl_text_quote(j->address, 120, q, sizeof q);
        if (e->cfg.client_auto && !e->cfg.client_mode && !e->cfg.monitor) {
            cl_warn("the swarm could not connect back to this peer at %s (a firewall or NAT "
                    "drops inbound connections): joining as a client, which only connects out "
                    "(COLLAB_CLIENT_MODE=auto)",
                    q);
            e->cfg.client_mode = true;
            cl_transport_set_client(e->tp);
            eng_send_join(e, key);
            break;
        }
        if (e->cfg.client_mode)
            break; /* an answer to a JOIN sent before it became a client */
        if (e->cfg.monitor) {
            cl_error("the swarm could not connect back to this monitor at %s: a monitor must "
                     "accept connections (open that TCP port, or give --announce an address "
                     "that reaches it)",
                     q);
            eng_fail_init(e, COLLAB_ERR_NETWORK);
            break;
        }
        cl_error("the swarm could not connect back to this peer at %s, so it cannot be a member "
                 "that accepts connections: open that TCP port to inbound connections (or set "
                 "COLLAB_ANNOUNCE to an address that reaches this peer), or set "
                 "COLLAB_CLIENT_MODE=1 or auto to join as a client that only connects out",
                 q);
        eng_fail_init(e, COLLAB_ERR_NETWORK);
        break;
    }
    case CL_JOIN_NO_PATH:
        if (!e->cfg.client_mode)
            break; /* an answer to a JOIN sent as a client before */
        cl_error("the swarm refused this client-mode peer: none of its members accepts "
                 "connections and no monitor relays, so this peer could not reach the other "
                 "client-mode members; start the monitor with collab-monitor --relay, or run at "
                 "least one trainer that accepts connections (without COLLAB_CLIENT_MODE=1)");
        eng_fail_init(e, COLLAB_ERR_NETWORK);
        break;
    case CL_JOIN_CONFLICT: {
        cl_settings_t theirs;
        cl_settings_from_wire(&j->settings, true, &theirs);
        if (!eng_settings_conflict(e, &theirs))
            cl_error("the swarm refused this peer's settings (its world size %d, strict %d, "
                     "compression %d, target group %d)",
                     theirs.world_size, theirs.strict, theirs.compression, theirs.target_group);
        eng_fail_init(e, COLLAB_ERR_CONFIG);
        break;
    }
    }
    eng_join_changed(e); /* e.g. the last initial peer not lost answered NOT_MEMBER */
}
