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
    COLLAB_ERR_NETWORK; it never founds a second swarm on its own.  A
    coordinator back from a pause answers no JOIN while its collectives
    are held until the others answered (ctx.in_doubt; the joiner asks
    again); a member back from a pause follows a REDIRECT and tells
    the authority who named whom (ctx.redirected, docs/security.md §4).

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
    the loop's set (join_timer) is armed at the earliest of the next
    JOIN (next_join_try), the join's deadline and the moment founding
    again becomes due by the clock (the grace after the last initial peer
    was lost; a monitor's monitor_found_after); its callback acts and arms
    it again while this peer joins.  What events change (a link up, down
    or refused, a JOIN_REPLY) is looked at when they come
    (eng_join_changed): a joiner may found again then.

    The component eng_join_t (cl_engine_join.h) owns all of this state and
    sees the engine only through its context eng_join_ctx_t, built by the
    loop (cl_engine_join_ctx.c): the membership records, the transport's
    calls, the engine's state (read; moved between ENG_JOINING and
    ENG_STANDBY only), and what a founder, a failed join and a
    coordinator's admission hand back (founded, fail, commit).
*/
#include "engine/cl_engine_join.h"

#include "engine/cl_engine_timer.h"
#include "engine/cl_transport.h" /* CL_REFUSE_* */
#include "util/cl_addr.h"
#include "util/cl_log.h"
#include "util/cl_text.h"

#include "mpi_collab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The join: its context, and the state nothing else writes. */
struct eng_join {
    eng_join_ctx_t ctx;
    cl_addr_t *initial; /* COLLAB_INITIAL_PEERS, without this peer */
    size_t ninitial;
    int *initial_state;         /* per initial peer: 0 trying, 1 up, 2 refused */
    double *initial_lost;       /* per initial peer: when its link went down after it
                                   was up (0: it was not lost) */
    double *initial_not_member; /* per initial peer: when it last answered NOT_MEMBER */
    int refused_reason;         /* last definitive refusal (CL_REFUSE_*) */
    int join_timer;             /* its timer in ctx.timers */
    double join_started;        /* when eng_join_start began the join (its only writer) */
    double join_deadline;       /* it gives up then (0: none, a rejoin) */
    double next_join_try;       /* the next JOIN to the initial peers */
    bool standby_logged;
    uint8_t redirect_key[32]; /* coordinator named by a REDIRECT */
    bool have_redirect;
};

static int initial_index(const eng_join_t *j, const uint8_t key[32])
{
    for (size_t i = 0; i < j->ninitial; i++)
        if (memcmp(j->initial[i].key, key, 32) == 0)
            return (int)i;
    return -1;
}

static eng_state_t state(const eng_join_t *j)
{
    return j->ctx.state(j->ctx.arg);
}

static double now_of(const eng_join_t *j)
{
    return j->ctx.now(j->ctx.arg);
}

void eng_join_send(eng_join_t *j, const uint8_t key[32])
{
    const cl_config_t *cfg = j->ctx.cfg;
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_JOIN;
    cl_wire_join_t *w = &m.u.join;
    w->rank = cfg->rank >= 0 && cfg->rank < CL_WIRE_WORLD_MAX && !cfg->monitor ? cfg->rank : -1;
    /* Rejoining (removed while alive): the program holds its rank, so the
       peer takes that one back or waits as a standby until it frees. */
    bool rejoin =
        j->ctx.member_since(j->ctx.arg) > 0 && !cfg->monitor && j->ctx.rank(j->ctx.arg) >= 0;
    if (rejoin)
        w->rank = j->ctx.rank(j->ctx.arg);
    /* COLLAB_RANK_REQUIRED: a program whose rank is given to it (a
       launcher's, NCCL's ncclCommInitRank) holds that one or none. */
    bool required = rejoin || (cfg->rank_required && w->rank >= 0);
    w->weight = cfg->weight;
    /* COLLAB_BANDWIDTH_MBIT: the coordinator puts it in this peer's view
       entry (written only on links of wire version 7). */
    w->bandwidth = cfg->monitor ? 0 : cfg->bandwidth_kbit;
    w->flags =
        (uint8_t)((cfg->client_mode ? CL_JOIN_CLIENT : 0) | (cfg->monitor ? CL_JOIN_MONITOR : 0) |
                  (cfg->monitor && cfg->relay ? CL_JOIN_RELAY : 0) |
                  (required ? CL_JOIN_RANK_REQUIRED : 0) |
                  (cfg->world_size_set ? CL_JOIN_WORLD_SET : 0) |
                  (cfg->strict_set ? CL_JOIN_STRICT_SET : 0) |
                  (cfg->compression_set ? CL_JOIN_COMPRESSION_SET : 0) |
                  (cfg->target_group_set ? CL_JOIN_TARGET_GROUP_SET : 0));
    cl_wire_settings_t *js = &w->settings;
    js->world_size = cfg->world_size;
    js->strict = cfg->strict ? 1 : 0;
    js->compression = (uint8_t)cfg->compression;
    js->target_group = cfg->target_group;
    js->aggregation = cfg->aggregation_set ? (uint8_t)(cfg->aggregation + 1) : 0;
    js->robust_min = cfg->robust_min_set ? (uint32_t)cfg->robust_min : 0;
    js->max_weight_ratio = cfg->max_weight_ratio_set ? (uint32_t)cfg->max_weight_ratio : 0;
    js->verify = cfg->verify_set ? (uint8_t)(cfg->verify ? 2 : 1) : 0;
    w->incarnation = j->ctx.incarnation;
    snprintf(w->address, sizeof w->address, "%s", j->ctx.address(j->ctx.arg));
    j->ctx.join_sent(j->ctx.arg, key);
    (void)j->ctx.send(j->ctx.arg, key, &m);
}

void eng_join_send_relinked(eng_join_t *j, const uint8_t key[32])
{
    const cl_peer_t *q = cl_member_find(j->ctx.members, key);
    if (q != NULL && q->address[0] != '\0' && !j->ctx.has_link(j->ctx.arg, key))
        (void)j->ctx.connect(j->ctx.arg, key, q->address);
    eng_join_send(j, key);
}

void eng_join_link_up(eng_join_t *j, const uint8_t key[32])
{
    if (j == NULL)
        return;
    int idx = initial_index(j, key);
    if (idx >= 0) {
        j->initial_state[idx] = 1;
        j->initial_lost[idx] = 0;
    }
    bool redirected = j->have_redirect && memcmp(key, j->redirect_key, 32) == 0;
    if ((state(j) == ENG_JOINING || state(j) == ENG_STANDBY) && (idx >= 0 || redirected))
        eng_join_send(j, key);
    /* A member back from a pause that a member redirected to the
       coordinator it had no link to (eng_join_on_reply): the JOIN goes
       once that link is up, or nobody would take it back. */
    else if (state(j) == ENG_MEMBER && redirected && j->ctx.probing(j->ctx.arg))
        eng_join_send(j, key);
}

void eng_join_link_down(eng_join_t *j, const uint8_t key[32])
{
    if (j == NULL)
        return;
    int idx = initial_index(j, key);
    if (idx >= 0 && j->initial_state[idx] == 1) {
        j->initial_state[idx] = 0;
        j->initial_lost[idx] = now_of(j);
    }
}

void eng_join_link_refused(eng_join_t *j, const uint8_t key[32], int reason, const char *text)
{
    if (j == NULL)
        return;
    int idx = initial_index(j, key);
    if (idx >= 0 && reason != CL_REFUSE_BUSY) {
        j->initial_state[idx] = 2;
        j->refused_reason = reason;
        char addr[CL_ADDR_TEXT_MAX];
        if (cl_addr_format(&j->initial[idx], addr, sizeof addr) == 0)
            cl_warn("cannot join through initial peer %s: %s", addr,
                    text != NULL ? text : "refused");
    }
    /* The member a JOIN was sent on to (the coordinator) speaks no
       version this peer speaks (a swarm that signs needs 9): no retry
       can change that. */
    if (state(j) == ENG_JOINING && reason == CL_REFUSE_VERSION && j->have_redirect &&
        memcmp(key, j->redirect_key, 32) == 0) {
        cl_error("the swarm's coordinator refused this peer's protocol version: %s",
                 text != NULL ? text : "refused");
        j->ctx.fail(j->ctx.arg, COLLAB_ERR_NETWORK);
    }
}

/* The bandwidth figure a founder puts in its own view entry: none when
   it speaks no version that carries figures (COLLAB_WIRE_VERSION < 7). */
static uint32_t s_own_bandwidth(const cl_config_t *cfg)
{
    return cfg->wire_version >= 7 ? cfg->bandwidth_kbit : 0;
}

/* The swarm-wide settings a founder gives the swarm: its own. */
static cl_settings_t s_own_settings(const cl_config_t *cfg)
{
    return (cl_settings_t){cfg->world_size,
                           cfg->strict,
                           cfg->compression,
                           cfg->target_group,
                           cfg->aggregation,
                           (uint32_t)cfg->robust_min,
                           (uint32_t)cfg->max_weight_ratio,
                           cfg->verify};
}

static void on_join_timer(void *arg, double now);

static bool joining(const eng_join_t *j)
{
    return state(j) == ENG_JOINING || state(j) == ENG_STANDBY;
}

/* When founding again becomes due by the clock alone (see "Founding
   again" and "A restarted collab-monitor" above); infinity when only
   events can change the answer now. */
static double found_deadline(const eng_join_t *j, double now)
{
    if (state(j) != ENG_JOINING || j->ninitial == 0)
        return INFINITY;
    double t = INFINITY;
    if (j->ctx.cfg->monitor) {
        if (j->ctx.cfg->monitor_found_after > 0 && !j->have_redirect)
            t = j->join_started + j->ctx.cfg->monitor_found_after;
    } else if (!j->ctx.cfg->client_mode) {
        double lost = 0;
        for (size_t i = 0; i < j->ninitial; i++)
            if (j->initial_state[i] != 2 && j->initial_lost[i] > 0)
                lost = fmax(lost, j->initial_lost[i]);
        if (lost > 0)
            t = lost + eng_found_grace(j->ctx.cfg->timeout);
    }
    return t > now ? t : INFINITY;
}

/* Arms the join's timer at its earliest deadline while this peer joins,
   cancels it otherwise. */
static void join_arm(eng_join_t *j, double now)
{
    if (j->join_timer < 0)
        return;
    if (!joining(j)) {
        cl_timer_cancel(j->ctx.timers, j->join_timer);
        return;
    }
    double t = fmin(j->next_join_try, found_deadline(j, now));
    if (j->join_deadline > 0)
        t = fmin(t, j->join_deadline);
    cl_timer_arm(j->ctx.timers, j->join_timer, t);
}

eng_join_t *eng_join_new(const eng_join_ctx_t *ctx)
{
    eng_join_t *j = calloc(1, sizeof *j);
    if (j == NULL)
        return NULL;
    j->ctx = *ctx;
    j->join_timer = cl_timer_add(j->ctx.timers, on_join_timer, j);
    if (j->join_timer < 0) {
        free(j);
        return NULL;
    }
    return j;
}

void eng_join_destroy(eng_join_t **j_p)
{
    eng_join_t *j = *j_p;
    if (j == NULL)
        return;
    cl_timer_remove(j->ctx.timers, j->join_timer);
    free(j->initial);
    free(j->initial_state);
    free(j->initial_lost);
    free(j->initial_not_member);
    free(j);
    *j_p = NULL;
}

double eng_join_due(const eng_join_t *j)
{
    return cl_timer_when(j->ctx.timers, j->join_timer);
}

int eng_join_start(eng_join_t *j)
{
    const char *text = j->ctx.cfg->initial_peers;
    char err[512];
    if (text != NULL && text[0] != '\0') {
        if (cl_addr_parse_list(text, true, &j->initial, &j->ninitial, err, sizeof err) != 0) {
            cl_error("COLLAB_INITIAL_PEERS: %s", err);
            return COLLAB_ERR_CONFIG;
        }
        /* collab-run may list this peer among the others: skip it. */
        size_t k = 0;
        for (size_t i = 0; i < j->ninitial; i++)
            if (memcmp(j->initial[i].key, j->ctx.self_key, 32) != 0)
                j->initial[k++] = j->initial[i];
        j->ninitial = k;
    }
    if (j->ninitial == 0) {
        if (j->ctx.cfg->client_mode) {
            cl_error("COLLAB_CLIENT_MODE=1 needs COLLAB_INITIAL_PEERS: a peer that accepts no "
                     "connections cannot found a swarm");
            return COLLAB_ERR_CONFIG;
        }
        cl_settings_t s = s_own_settings(j->ctx.cfg);
        int rc =
            j->ctx.cfg->monitor
                ? cl_member_found_monitor(j->ctx.members, j->ctx.address(j->ctx.arg),
                                          j->ctx.cfg->relay, &s)
                : cl_member_found_bw(j->ctx.members, j->ctx.cfg->rank, j->ctx.address(j->ctx.arg),
                                     false, j->ctx.cfg->weight, s_own_bandwidth(j->ctx.cfg), &s);
        if (rc != COLLAB_OK)
            return COLLAB_ERR_NO_MEM;
        j->ctx.founded(j->ctx.arg);
        return COLLAB_OK;
    }
    j->initial_state = calloc(j->ninitial, sizeof(int));
    j->initial_lost = calloc(j->ninitial, sizeof(double));
    j->initial_not_member = calloc(j->ninitial, sizeof(double));
    if (j->initial_state == NULL || j->initial_lost == NULL || j->initial_not_member == NULL)
        return COLLAB_ERR_NO_MEM;
    double now = now_of(j);
    j->ctx.set_state(j->ctx.arg, ENG_JOINING);
    j->join_started = now;
    j->join_deadline = now + eng_join_limit(j->ctx.cfg->timeout);
    j->next_join_try = now + ENG_JOIN_RETRY;
    for (size_t i = 0; i < j->ninitial; i++) {
        char addr[CL_ADDR_TEXT_MAX];
        if (cl_addr_format(&j->initial[i], addr, sizeof addr) != 0 ||
            j->ctx.connect(j->ctx.arg, j->initial[i].key, addr) != COLLAB_OK)
            j->initial_state[i] = 2;
    }
    join_arm(j, now);
    return COLLAB_OK;
}

void eng_join_again(eng_join_t *j)
{
    /* The coordinator lost contact with us; ask to come back. */
    cl_peer_t *c = cl_member_coordinator(j->ctx.members);
    cl_error("this peer was removed from the swarm (the others lost contact with it); "
             "rejoining");
    j->ctx.set_state(j->ctx.arg, ENG_JOINING);
    if (c != NULL) {
        memcpy(j->redirect_key, c->key, 32);
        j->have_redirect = true;
        (void)j->ctx.connect(j->ctx.arg, c->key, c->address);
    }
    j->next_join_try = now_of(j);
    j->join_deadline = 0; /* no deadline for a rejoin */
    join_arm(j, j->next_join_try);
}

/* See "A restarted collab-monitor" above.  True when this monitor
   founded. */
static bool monitor_found_again(eng_join_t *j, double now)
{
    if (state(j) != ENG_JOINING || j->ctx.cfg->monitor_found_after <= 0 || j->ninitial == 0 ||
        j->have_redirect)
        return false;
    if (now < j->join_started + j->ctx.cfg->monitor_found_after) /* as found_deadline arms it */
        return false;
    for (size_t i = 0; i < j->ninitial; i++)
        if (j->initial_state[i] == 1 || j->initial_lost[i] > 0)
            return false; /* one answered: the join goes on */
    cl_settings_t s = s_own_settings(j->ctx.cfg);
    if (cl_member_found_monitor(j->ctx.members, j->ctx.address(j->ctx.arg), j->ctx.cfg->relay,
                                &s) != COLLAB_OK) {
        cl_error("out of memory founding the swarm again");
        j->ctx.fail(j->ctx.arg, COLLAB_ERR_NO_MEM);
        return true;
    }
    cl_warn("none of the %zu peers of this monitor's last run answered within %.0f s; founding "
            "the swarm again",
            j->ninitial, j->ctx.cfg->monitor_found_after);
    j->ctx.founded(j->ctx.arg);
    return true;
}

/* See "Founding again" above.  True when this peer founded. */
static bool maybe_found_again(eng_join_t *j, double now)
{
    if (j->ctx.cfg->monitor)
        return monitor_found_again(j, now);
    if (state(j) != ENG_JOINING || j->ctx.cfg->client_mode || j->ninitial == 0)
        return false;
    if (j->have_redirect && j->ctx.has_link(j->ctx.arg, j->redirect_key))
        return false; /* a member named a coordinator that is up */
    double grace = eng_found_grace(j->ctx.cfg->timeout);
    double lost = 0;
    size_t gone = 0, waiting = 0;
    for (size_t i = 0; i < j->ninitial; i++) {
        if (j->initial_state[i] == 2)
            continue;
        if (j->initial_lost[i] > 0) { /* down since (an UP clears it) */
            /* Compared as found_deadline arms the join's timer. */
            if (now < j->initial_lost[i] + grace)
                return false;
            lost = fmax(lost, j->initial_lost[i]);
            gone++;
        }
    }
    if (gone == 0)
        return false;
    for (size_t i = 0; i < j->ninitial; i++) {
        if (j->initial_state[i] == 2 || j->initial_lost[i] > 0)
            continue;
        if (j->initial_not_member[i] <= lost)
            return false; /* not heard since: it may be a member, or not reached yet */
        if (memcmp(j->initial[i].key, j->ctx.self_key, 32) < 0)
            return false; /* it founds */
        waiting++;
    }
    /* Only with another peer that waits too: a joiner whose only contact
       died does not found a swarm of its own (the swarm it wanted may
       still run elsewhere); it gives up at the deadline. */
    if (waiting == 0)
        return false;
    cl_settings_t s = s_own_settings(j->ctx.cfg);
    if (cl_member_found_bw(j->ctx.members, j->ctx.cfg->rank, j->ctx.address(j->ctx.arg), false,
                           j->ctx.cfg->weight, s_own_bandwidth(j->ctx.cfg), &s) != COLLAB_OK) {
        cl_error("out of memory founding the swarm again");
        j->ctx.fail(j->ctx.arg, COLLAB_ERR_NO_MEM);
        return true;
    }
    cl_warn("%zu initial peer%s went away before any peer became a member of the swarm; this "
            "peer, the lowest of the %zu waiting to join, founds it again",
            gone, gone == 1 ? "" : "s", waiting + 1);
    j->ctx.founded(j->ctx.arg);
    return true;
}

/* The join's timer: the deadline, founding again, the next JOIN. */
static void join_step(eng_join_t *j, double now)
{
    if (j->join_deadline > 0 && now >= j->join_deadline && state(j) == ENG_STANDBY) {
        /* Every STANDBY answer moves the deadline: the swarm went away
           (its run ended, or it is unreachable now). */
        cl_error("the swarm this peer waited for as a standby has not answered for %.0f s (its "
                 "run ended, or it cannot be reached); giving up",
                 eng_join_limit(j->ctx.cfg->timeout));
        j->ctx.fail(j->ctx.arg, COLLAB_ERR_NETWORK);
        return;
    }
    if (j->join_deadline > 0 && now >= j->join_deadline && state(j) == ENG_JOINING) {
        size_t reached = 0;
        for (size_t i = 0; i < j->ninitial; i++)
            reached += j->initial_state[i] == 1;
        if (reached == 0)
            cl_error("could not reach any of the %zu COLLAB_INITIAL_PEERS within %.0f s; not "
                     "founding a second swarm",
                     j->ninitial, eng_join_limit(j->ctx.cfg->timeout));
        else
            cl_error("reached %zu of the %zu COLLAB_INITIAL_PEERS within %.0f s, but none of "
                     "them is a member of a swarm",
                     reached, j->ninitial, eng_join_limit(j->ctx.cfg->timeout));
        j->ctx.fail(j->ctx.arg, COLLAB_ERR_NETWORK);
        return;
    }
    if (maybe_found_again(j, now))
        return;
    if (now < j->next_join_try)
        return;
    j->next_join_try = now + (state(j) == ENG_STANDBY ? ENG_STANDBY_RETRY : ENG_JOIN_RETRY);
    bool any_pending = false;
    for (size_t i = 0; i < j->ninitial; i++) {
        if (j->initial_state[i] == 2)
            continue;
        any_pending = true;
        if (!j->ctx.has_link(j->ctx.arg, j->initial[i].key)) {
            char addr[CL_ADDR_TEXT_MAX];
            j->initial_state[i] = 0;
            if (cl_addr_format(&j->initial[i], addr, sizeof addr) == 0)
                (void)j->ctx.connect(j->ctx.arg, j->initial[i].key, addr);
        } else if (j->initial_state[i] == 1) {
            eng_join_send(j, j->initial[i].key);
        }
    }
    if (j->have_redirect) {
        any_pending = true;
        cl_peer_t *c = cl_member_find(j->ctx.members, j->redirect_key);
        if (!j->ctx.has_link(j->ctx.arg, j->redirect_key) && c != NULL)
            (void)j->ctx.connect(j->ctx.arg, j->redirect_key, c->address);
        else
            eng_join_send(j, j->redirect_key);
    }
    if (!any_pending && state(j) == ENG_JOINING && j->join_deadline > 0) {
        cl_error("every one of the %zu COLLAB_INITIAL_PEERS refused this peer (%s); check "
                 "COLLAB_SWARM_KEY, COLLAB_RUN_ID and the versions",
                 j->ninitial,
                 j->refused_reason == CL_REFUSE_AUTH      ? "swarm key"
                 : j->refused_reason == CL_REFUSE_RUN     ? "run id"
                 : j->refused_reason == CL_REFUSE_VERSION ? "protocol version"
                                                          : "refused");
        j->ctx.fail(j->ctx.arg, COLLAB_ERR_NETWORK);
    }
}

static void on_join_timer(void *arg, double now)
{
    eng_join_t *j = arg;
    if (joining(j))
        join_step(j, now);
    join_arm(j, now);
}

void eng_join_changed(eng_join_t *j)
{
    if (j == NULL || !joining(j))
        return;
    double now = now_of(j);
    (void)maybe_found_again(j, now);
    join_arm(j, now);
}

bool eng_settings_conflict(const cl_config_t *cfg, const cl_settings_t *s)
{
    static const char *const comp[] = {"none", "fp16", "int8", "adaptive"};
    static const char *const agg[] = {"mean", "trimmed_mean", "centered_clip"};
    int ws = s->world_size, strict = s->strict ? 1 : 0, compression = s->compression;
    int target_group = s->target_group;
    if (cfg->aggregation_set && cfg->aggregation != s->aggregation) {
        cl_error("COLLAB_AGGREGATION=%s conflicts with the swarm's setting %s (fixed by the "
                 "peer that founded it)",
                 agg[cfg->aggregation % 3], agg[(unsigned)s->aggregation % 3]);
        return true;
    }
    if (cfg->robust_min_set && (uint32_t)cfg->robust_min != s->robust_min) {
        cl_error("COLLAB_ROBUST_MIN=%ld conflicts with the swarm's setting %u (fixed by the "
                 "peer that founded it)",
                 cfg->robust_min, (unsigned)s->robust_min);
        return true;
    }
    if (cfg->max_weight_ratio_set && (uint32_t)cfg->max_weight_ratio != s->max_weight_ratio) {
        cl_error("COLLAB_MAX_WEIGHT_RATIO=%d conflicts with the swarm's setting %u (fixed by the "
                 "peer that founded it)",
                 cfg->max_weight_ratio, (unsigned)s->max_weight_ratio);
        return true;
    }
    if (cfg->verify_set && cfg->verify != s->verify) {
        cl_error("COLLAB_VERIFY=%d conflicts with the swarm's setting %d (fixed by the peer "
                 "that founded it)",
                 cfg->verify ? 1 : 0, s->verify ? 1 : 0);
        return true;
    }
    if (cfg->world_size_set && cfg->world_size != ws) {
        cl_error("COLLAB_WORLD_SIZE=%d conflicts with the swarm's world size %d (fixed by the "
                 "peer that founded it)",
                 cfg->world_size, ws);
        return true;
    }
    if (cfg->strict_set && (cfg->strict ? 1 : 0) != strict) {
        cl_error("COLLAB_STRICT=%d conflicts with the swarm's setting %d (fixed by the peer "
                 "that founded it)",
                 cfg->strict ? 1 : 0, strict);
        return true;
    }
    if (cfg->compression_set && cfg->compression != compression) {
        cl_error("COLLAB_COMPRESSION=%s conflicts with the swarm's setting %s (fixed by the "
                 "peer that founded it)",
                 comp[cfg->compression % 4], comp[compression % 4]);
        return true;
    }
    if (cfg->target_group_set && cfg->target_group != target_group) {
        cl_error("COLLAB_TARGET_GROUP=%d conflicts with the swarm's setting %d (fixed by the "
                 "peer that founded it)",
                 cfg->target_group, target_group);
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

int eng_own_wire_floor(const cl_config_t *cfg, const char **why)
{
    cl_settings_t s = s_own_settings(cfg);
    return eng_settings_wire_floor(&s, why);
}

void eng_join_reply_settings(eng_join_t *j, cl_wire_join_reply_t *r)
{
    cl_settings_to_wire(cl_member_settings(j->ctx.members), true, &r->settings);
}

/* Could a client joiner reach the members it must exchange data with?
   Yes when a public member or a relaying monitor lives, or when no other
   client member does (it would be alone with the monitors). */
static bool client_has_path(eng_join_t *j, const uint8_t key[32])
{
    size_t n, nm;
    cl_peer_t *const *list = cl_member_list(j->ctx.members, &n);
    cl_peer_t *const *mons = cl_member_monitors(j->ctx.members, &nm);
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

/* Coordinator: a JOIN m from key. */
void eng_join_on_join(eng_join_t *j, const uint8_t key[32], const cl_wire_join_t *m)
{
    char sid[CL_PEER_ID_MAX];
    cl_base58_encode(key, 32, sid, sizeof sid);
    /* Back from a pause, its collectives held until the others answered
       (docs/security.md §4, rule 5), this peer admits nobody: its view
       may be stale, and a view it published would put it back into the
       group of those that went on at its own stale sequence (soak seed
       4, round 5).  The joiner asks again. */
    if (j->ctx.in_doubt != NULL && j->ctx.in_doubt(j->ctx.arg)) {
        cl_debug("not answering a JOIN from %.8s… while this peer, back from a pause, asks the "
                 "others whether the swarm went on without it",
                 sid);
        return;
    }
    cl_wire_msg_t r;
    memset(&r, 0, sizeof r);
    r.hdr.type = CL_MSG_JOIN_REPLY;
    const cl_settings_t *s = cl_member_settings(j->ctx.members);
    bool client = (m->flags & CL_JOIN_CLIENT) != 0;
    bool monitor = (m->flags & CL_JOIN_MONITOR) != 0;
    if (!client) {
        cl_addr_t a;
        if (cl_addr_parse(m->address, &a, NULL, 0) != 0 || !a.has_key ||
            memcmp(a.key, key, 32) != 0 || a.port == 0) {
            char q[128];
            cl_warn("ignoring a JOIN from %.8s…: its address %s is not its own", sid,
                    cl_text_quote(m->address, 100, q, sizeof q));
            return;
        }
    }
    const cl_wire_settings_t *js = &m->settings;
    bool conflict =
        ((m->flags & CL_JOIN_WORLD_SET) && js->world_size != s->world_size) ||
        ((m->flags & CL_JOIN_STRICT_SET) && (js->strict != 0) != s->strict) ||
        ((m->flags & CL_JOIN_COMPRESSION_SET) && js->compression != s->compression) ||
        ((m->flags & CL_JOIN_TARGET_GROUP_SET) && js->target_group != s->target_group) ||
        (js->aggregation != 0 && js->aggregation - 1 != s->aggregation) ||
        (js->robust_min != 0 && js->robust_min != s->robust_min) ||
        (js->max_weight_ratio != 0 && js->max_weight_ratio != s->max_weight_ratio) ||
        (js->verify != 0 && (js->verify == 2) != s->verify);
    /* Every link of the swarm speaks at least what its settings need (the
       handshake refuses older peers): one made before this peer adopted
       them is refused here. */
    const char *why;
    int floor = eng_settings_wire_floor(s, &why);
    int v = j->ctx.link_version(j->ctx.arg, key);
    if (!conflict && floor > 0 && v > 0 && v < floor) {
        cl_warn("refusing peer %.8s…: it speaks wire version %d with this peer; %s", sid, v, why);
        conflict = true;
    }
    cl_peer_t *old = cl_member_find(j->ctx.members, key);
    if (!conflict && old != NULL && old->state != CL_PEER_GONE) {
        if (old->incarnation == 0 || old->incarnation == m->incarnation) {
            /* The same process asking again: its view is on the way. */
            old->incarnation = m->incarnation;
            j->ctx.send_view(j->ctx.arg, old);
            return;
        }
        /* The same identity restarted: the old process is gone.  Drop it
           first (its collectives fail over), then admit the new one. */
        char desc[CL_WIRE_STR_MAX + 64];
        cl_info("%s restarted; replacing it", j->ctx.desc(old, desc, sizeof desc));
        old->suspect_reason = CL_SUSPECT_CLOSED;
        cl_member_delta_t d;
        if (cl_member_remove(j->ctx.members, (const uint8_t(*)[32])key, 1, now_of(j), &d) == 1)
            j->ctx.commit(j->ctx.arg, &d);
        else
            cl_member_delta_clear(&d);
    }
    /* Two client members reach each other only through a relaying
       monitor; a swarm with neither that nor a public member to carry
       the collectives would take the joiner in and hang. */
    if (!conflict && client && !monitor && !client_has_path(j, key)) {
        cl_warn("refusing client-mode peer %.8s…: no member of the swarm accepts connections "
                "and no monitor relays, so it could not reach the other client-mode members "
                "(start collab-monitor with --relay)",
                sid);
        r.u.join_reply.status = CL_JOIN_NO_PATH;
        eng_join_reply_settings(j, &r.u.join_reply);
        (void)j->ctx.reply(j->ctx.arg, key, &r);
        return;
    }
    /* A public joiner is admitted once this peer could connect to it
       (cl_engine_dialback.c): every member will have to. */
    if (!conflict && !client && j->ctx.reachable(j->ctx.arg, key, m) != 1)
        return;
    if (conflict) {
        r.u.join_reply.status = CL_JOIN_CONFLICT;
    } else if (monitor) {
        /* A monitor gets a seat without a rank (docs/monitor.md). */
        cl_member_delta_t d;
        int rc = cl_member_admit_monitor(j->ctx.members, key, m->address,
                                         (m->flags & CL_JOIN_RELAY) != 0, now_of(j), &d);
        if (rc == COLLAB_OK) {
            cl_peer_t *p = cl_member_find(j->ctx.members, key);
            if (p != NULL)
                p->incarnation = m->incarnation;
            j->ctx.commit(j->ctx.arg, &d);
            return;
        }
        cl_member_delta_clear(&d);
        if (rc != COLLAB_ERR_RANK)
            return;
        cl_warn("refusing monitor %.8s…: the view holds %d monitors already", sid,
                CL_WIRE_MONITORS_MAX);
        r.u.join_reply.status = CL_JOIN_STANDBY;
    } else {
        int rank = cl_member_pick_rank(j->ctx.members, key, m->rank,
                                       (m->flags & CL_JOIN_RANK_REQUIRED) != 0);
        if (rank < 0) {
            r.u.join_reply.status = CL_JOIN_STANDBY;
        } else {
            cl_member_delta_t d;
            if (cl_member_admit_bw(j->ctx.members, key, rank, client ? "" : m->address, client,
                                   m->weight, m->bandwidth, now_of(j), &d) == COLLAB_OK) {
                cl_peer_t *p = cl_member_find(j->ctx.members, key);
                if (p != NULL)
                    p->incarnation = m->incarnation;
                j->ctx.admit_rank(j->ctx.arg, key); /* before its view, on the same link */
                j->ctx.commit(j->ctx.arg, &d);
            } else {
                cl_member_delta_clear(&d);
            }
            return;
        }
    }
    eng_join_reply_settings(j, &r.u.join_reply);
    (void)j->ctx.reply(j->ctx.arg, key, &r);
}

void eng_join_on_reply(eng_join_t *j, const uint8_t key[32], const cl_wire_join_reply_t *r)
{
    /* A member back from a pause that found no majority asks to be taken
       back (docs/security.md §4): a redirect to the coordinator helps it. */
    bool probing =
        state(j) == ENG_MEMBER && r->status == CL_JOIN_REDIRECT && j->ctx.probing(j->ctx.arg);
    if (state(j) != ENG_JOINING && state(j) != ENG_STANDBY && !probing)
        return;
    int idx = initial_index(j, key);
    switch (r->status) {
    case CL_JOIN_NOT_MEMBER:
        if (idx >= 0)
            j->initial_not_member[idx] = now_of(j);
        break;
    case CL_JOIN_STANDBY:
        j->ctx.set_state(j->ctx.arg, ENG_STANDBY);
        j->join_deadline = now_of(j) + eng_join_limit(j->ctx.cfg->timeout);
        if (!j->standby_logged && j->ctx.member_since(j->ctx.arg) > 0)
            cl_warn("rank %d, which this program holds, went to another peer while this peer "
                    "was out of the swarm; waiting as a standby until it frees up",
                    j->ctx.rank(j->ctx.arg));
        else if (!j->standby_logged && j->ctx.cfg->rank_required && j->ctx.cfg->rank >= 0)
            cl_warn("rank %d, which this peer requires (COLLAB_RANK_REQUIRED=1), is held by "
                    "another peer; waiting as a standby until it frees up",
                    j->ctx.cfg->rank);
        else if (!j->standby_logged)
            cl_warn("the swarm is full (world size %d, every rank held); waiting as a standby "
                    "until a rank frees up",
                    r->settings.world_size);
        j->standby_logged = true;
        break;
    case CL_JOIN_REDIRECT: {
        if (memcmp(r->key, j->ctx.self_key, 32) == 0 || memcmp(r->key, key, 32) == 0)
            break;
        cl_addr_t a;
        if (cl_addr_parse(r->address, &a, NULL, 0) != 0 || !a.has_key ||
            memcmp(a.key, r->key, 32) != 0)
            break;
        cl_peer_t *c = cl_member_touch(j->ctx.members, r->key);
        if (c == NULL)
            break;
        snprintf(c->address, sizeof c->address, "%s", r->address);
        memcpy(j->redirect_key, r->key, 32);
        j->have_redirect = true;
        if (probing && j->ctx.redirected != NULL)
            j->ctx.redirected(j->ctx.arg, key, r->key);
        if (j->ctx.has_link(j->ctx.arg, r->key))
            eng_join_send(j, r->key);
        else
            (void)j->ctx.connect(j->ctx.arg, r->key, r->address);
        break;
    }
    case CL_JOIN_UNREACHABLE: {
        char q[CL_WIRE_STR_MAX + 8];
        cl_text_quote(r->address, 120, q, sizeof q);
        if (j->ctx.cfg->client_auto && !j->ctx.cfg->client_mode && !j->ctx.cfg->monitor) {
            cl_warn("the swarm could not connect back to this peer at %s (a firewall or NAT "
                    "drops inbound connections): joining as a client, which only connects out "
                    "(COLLAB_CLIENT_MODE=auto)",
                    q);
            j->ctx.set_client(j->ctx.arg); /* cfg->client_mode is true from now on */
            eng_join_send(j, key);
            break;
        }
        if (j->ctx.cfg->client_mode)
            break; /* an answer to a JOIN sent before it became a client */
        if (j->ctx.cfg->monitor) {
            cl_error("the swarm could not connect back to this monitor at %s: a monitor must "
                     "accept connections (open that TCP port, or give --announce an address "
                     "that reaches it)",
                     q);
            j->ctx.fail(j->ctx.arg, COLLAB_ERR_NETWORK);
            break;
        }
        cl_error("the swarm could not connect back to this peer at %s, so it cannot be a member "
                 "that accepts connections: open that TCP port to inbound connections (or set "
                 "COLLAB_ANNOUNCE to an address that reaches this peer), or set "
                 "COLLAB_CLIENT_MODE=1 or auto to join as a client that only connects out",
                 q);
        j->ctx.fail(j->ctx.arg, COLLAB_ERR_NETWORK);
        break;
    }
    case CL_JOIN_NO_PATH:
        if (!j->ctx.cfg->client_mode)
            break; /* an answer to a JOIN sent as a client before */
        cl_error("the swarm refused this client-mode peer: none of its members accepts "
                 "connections and no monitor relays, so this peer could not reach the other "
                 "client-mode members; start the monitor with collab-monitor --relay, or run at "
                 "least one trainer that accepts connections (without COLLAB_CLIENT_MODE=1)");
        j->ctx.fail(j->ctx.arg, COLLAB_ERR_NETWORK);
        break;
    case CL_JOIN_CONFLICT: {
        cl_settings_t theirs;
        cl_settings_from_wire(&r->settings, true, &theirs);
        if (!eng_settings_conflict(j->ctx.cfg, &theirs))
            cl_error("the swarm refused this peer's settings (its world size %d, strict %d, "
                     "compression %d, target group %d)",
                     theirs.world_size, theirs.strict, theirs.compression, theirs.target_group);
        j->ctx.fail(j->ctx.arg, COLLAB_ERR_CONFIG);
        break;
    }
    }
    eng_join_changed(j); /* e.g. the last initial peer not lost answered NOT_MEMBER */
}
