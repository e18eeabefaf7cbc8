/*  cl_engine_member_test.c - selftest of membership's deadlines
    (cl_engine_member.c, cl_engine_join.c, with the failure detector of
    cl_engine_suspect.c) on a fake engine: real membership records and a
    real timer set that the test runs as the loop would; the engine's
    clock, send, log description and the rest of the engine stubbed here,
    the transport's calls recorded (linked with --wrap).

    The join's timer: armed at start by the next JOIN, again by its
    callback while this peer joins, the join's deadline (a joiner gives
    up), the end of the grace after an initial peer was lost (a joiner
    founds the swarm again then, not at its next JOIN); the events
    founding again depends on (a NOT_MEMBER answer, a refused link) looked
    at when they come; a member a view leaves out joins again at once.
    The matchmaking window: its end armed when the group is asked for
    (eng_request_match, a MATCH), the group formed then.  The
    coordinator's tenure ends with the view that admits a lower rank.  A
    coordinator outside the group adopts an admission whose view came
    after its own epoch had gone past it.
*/
#include "engine/cl_engine_elastic.h"
#include "engine/cl_engine_loop_int.h"

#define ENGINE_FAKE_SERVICES /* eng_now, eng_peer_desc, eng_set_state, eng_on_type */
#include "ctx_fixture.h"
#include "engine_fake.h"
#include "selftest.h"
#include "util/cl_identity.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the stubbed rest of the engine ---------------------------------- */

#define MAXSENT 64
static struct {
    int type;
    uint8_t to[32];
} s_sent[MAXSENT]; /* every message sent, replied or sent by key */
static int s_nsent;
static int s_connects;     /* cl_transport_connect calls */
static bool s_link[4];     /* whether this peer has a link to s_keys[i] */
static int s_members_told; /* eng_fan_out_member: this peer became a member */

static void record(int type, const uint8_t to[32])
{
    if (s_nsent < MAXSENT) {
        s_sent[s_nsent].type = type;
        memcpy(s_sent[s_nsent].to, to, 32);
        s_nsent++;
    }
}

/* Messages of type sent to s_keys[to] (any key when to < 0). */
static int sent(int type, int to)
{
    int n = 0;
    for (int i = 0; i < s_nsent; i++)
        n += s_sent[i].type == type && (to < 0 || memcmp(s_sent[i].to, s_keys[to], 32) == 0);
    return n;
}

int eng_send(struct cl_engine *e, const cl_peer_t *to, cl_wire_msg_t *m)
{
    (void)e;
    record(m->hdr.type, to->key);
    return COLLAB_OK;
}

void eng_fan_out_peers(struct cl_engine *e, const cl_member_delta_t *d)
{
    (void)e, (void)d;
}

void eng_fan_out_view(struct cl_engine *e)
{
    (void)e;
}

void eng_fan_out_member(struct cl_engine *e)
{
    (void)e;
    s_members_told++;
}

void eng_fan_out_weight(struct cl_engine *e)
{
    (void)e;
}

bool eng_auth_epoch_step_ok(uint64_t own, uint64_t epoch)
{
    return epoch <= own || epoch - own <= 1024;
}

bool eng_auth_member_ahead(eng_auth_t *a, bool ahead, double patience)
{
    (void)a, (void)patience;
    return ahead;
}

bool eng_auth_straggler_vote(eng_auth_t *a, const uint8_t subject[32], const uint8_t reporter[32],
                             size_t group_size)
{
    (void)a, (void)subject, (void)reporter, (void)group_size;
    return true;
}

void eng_auth_note_join_sent(eng_auth_t *a, const uint8_t key[32])
{
    (void)a, (void)key;
}

/* No pause's round of probes runs here: a REDIRECT to a member is not
   followed (the member's own coordinator stays). */
bool eng_auth_probing(const eng_auth_t *a)
{
    (void)a;
    return false;
}

/* No pause here: a JOIN is always answered. */
bool eng_el_in_doubt(struct cl_engine *e)
{
    (void)e;
    return false;
}

void eng_auth_redirected(eng_auth_t *a, const uint8_t from[32], const uint8_t to[32])
{
    (void)a, (void)from, (void)to;
}

int eng_dialback_check(eng_dialback_t *d, const uint8_t key[32], const cl_wire_join_t *j)
{
    (void)d, (void)key, (void)j;
    return 1; /* reachable */
}

void eng_dialback_on_up(eng_dialback_t *d, const uint8_t key[32])
{
    (void)d, (void)key;
}

bool eng_el_boundaries_known(struct cl_engine *e)
{
    (void)e;
    return true;
}

void eng_el_on_admit_rank(struct cl_engine *e, const uint8_t key[32])
{
    (void)e, (void)key;
}

void eng_el_view_from(struct cl_engine *e, const uint8_t key[32])
{
    (void)e, (void)key;
}

/* The elastic layer's answer: whether this peer holds the sender's ADMIT
   of that generation (and its own admission of it still stands). */
static bool s_adoptable;
bool eng_el_adoptable(struct cl_engine *e, const uint8_t from[32], uint64_t gen)
{
    (void)e, (void)from, (void)gen;
    return s_adoptable;
}

void eng_report_late_seen(eng_report_t *r, double now)
{
    (void)r, (void)now;
}

/* The loop's: collab_init fails (the fake engine has no request), and
   the one writer of the configuration. */
void eng_fail_init(struct cl_engine *e, int status)
{
    (void)status;
    eng_set_state(e, ENG_LEFT);
}

void eng_set_cfg_weight(struct cl_engine *e, double weight)
{
    e->cfg.weight = weight;
}

void eng_set_cfg_client_mode(struct cl_engine *e)
{
    e->cfg.client_mode = true;
}

/* The collective streams (cl_engine_coll.h): none here, nothing done. */
uint64_t eng_coll_completed(const eng_cs_t *cs)
{
    (void)cs;
    return 0;
}

double eng_coll_step_gap(const eng_cs_t *cs)
{
    (void)cs;
    return 0;
}

bool eng_coll_waiting_for_group(const eng_cs_t *cs)
{
    (void)cs;
    return false;
}

/* collab_init's request: the fake engine has none (init_req is NULL). */
bool cl_request_done(collab_request_t *r)
{
    (void)r;
    return true;
}

void cl_request_complete(collab_request_t *r, int status)
{
    (void)r, (void)status;
}

int cl_comm_rank_of_world(const collab_comm_t *comm, int world)
{
    (void)comm;
    return world;
}

/* The transport, recorded. */

int __wrap_cl_transport_send(cl_transport_t *tp, const uint8_t key[32], cl_wire_msg_t *m);
int __wrap_cl_transport_send(cl_transport_t *tp, const uint8_t key[32], cl_wire_msg_t *m)
{
    (void)tp;
    record(m->hdr.type, key);
    return COLLAB_OK;
}

int __wrap_cl_transport_reply(cl_transport_t *tp, const uint8_t key[32], cl_wire_msg_t *m);
int __wrap_cl_transport_reply(cl_transport_t *tp, const uint8_t key[32], cl_wire_msg_t *m)
{
    (void)tp;
    record(m->hdr.type, key);
    return COLLAB_OK;
}

int __wrap_cl_transport_connect(cl_transport_t *tp, const uint8_t key[32], const char *addr);
int __wrap_cl_transport_connect(cl_transport_t *tp, const uint8_t key[32], const char *addr)
{
    (void)tp, (void)key, (void)addr;
    s_connects++;
    return COLLAB_OK;
}

bool __wrap_cl_transport_has_link(cl_transport_t *tp, const uint8_t key[32]);
bool __wrap_cl_transport_has_link(cl_transport_t *tp, const uint8_t key[32])
{
    (void)tp;
    int i = key_index(key);
    return i >= 0 && s_link[i];
}

const char *__wrap_cl_transport_address(const cl_transport_t *tp);
const char *__wrap_cl_transport_address(const cl_transport_t *tp)
{
    (void)tp;
    return "/ip4/127.0.0.1/tcp/9000/p2p/self";
}

int __wrap_cl_transport_link_version(cl_transport_t *tp, const uint8_t key[32]);
int __wrap_cl_transport_link_version(cl_transport_t *tp, const uint8_t key[32])
{
    (void)tp, (void)key;
    return 0;
}

void __wrap_cl_transport_ban(cl_transport_t *tp, const uint8_t key[32], double seconds);
void __wrap_cl_transport_ban(cl_transport_t *tp, const uint8_t key[32], double seconds)
{
    (void)tp, (void)key, (void)seconds;
}

void __wrap_cl_transport_set_client(cl_transport_t *tp);
void __wrap_cl_transport_set_client(cl_transport_t *tp)
{
    (void)tp;
}

void __wrap_cl_transport_set_min_version(cl_transport_t *tp, int version, const char *why);
void __wrap_cl_transport_set_min_version(cl_transport_t *tp, int version, const char *why)
{
    (void)tp, (void)version, (void)why;
}

/* --------------------------------------------------------------------- */

/* A fake engine whose key is s_keys[0], world size 4, COLLAB_TIMEOUT 2 s
   (the founding grace: 1 s), listing initial peers s_keys[1..ninitial]
   (none: it founds, as rank `rank`). */
static struct cl_engine *fake_engine(int ninitial, int rank)
{
    struct cl_engine *e = fake_engine_alloc(s_keys[0], NULL);
    e->cfg.timeout = 2.0;
    e->cfg.world_size = 4;
    e->cfg.target_group = 4;
    e->cfg.min_group = 1;
    e->cfg.matchmaking_time = 5.0;
    e->cfg.weight = 1.0;
    e->cfg.rank = rank;
    e->cfg.wire_version = CL_WIRE_VERSION;
    e->parts.hb_interval = 0.5;
    static char list[1024];
    list[0] = '\0';
    for (int i = 1; i <= ninitial; i++) {
        char a[256];
        address_of(i, a, sizeof a);
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i > 1 ? "," : "", a);
    }
    e->cfg.initial_peers = ninitial > 0 ? list : NULL;
    e->parts.susp = eng_suspect_create(e);
    CHECK(e->parts.susp != NULL);
    e->parts.member = eng_member_create(e);
    CHECK(e->parts.member != NULL);
    e->parts.match = eng_match_create(e);
    CHECK(e->parts.match != NULL);
    memset(s_link, 0, sizeof s_link);
    s_nsent = s_connects = s_members_told = 0;
    e->parts.join = eng_join_create(e);
    CHECK(e->parts.join != NULL);
    CHECK(eng_join_start(e->parts.join) == COLLAB_OK);
    return e;
}

static void fake_free(struct cl_engine *e)
{
    eng_join_destroy(&e->parts.join);
    eng_match_destroy(&e->parts.match);
    eng_member_destroy(&e->parts.member);
    eng_suspect_destroy(&e->parts.susp);
    e->cfg.initial_peers = NULL;
    fake_engine_release(e);
}

static double join_due(const struct cl_engine *e)
{
    return eng_join_due(e->parts.join);
}

static void link_event(struct cl_engine *e, int i, cl_tp_event_kind_t kind)
{
    cl_tp_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    memcpy(ev.key, s_keys[i], 32);
    ev.reason = CL_REFUSE_AUTH;
    s_link[i] = kind == CL_TP_UP;
    eng_member_on_event(e, &ev);
}

static void join_reply(struct cl_engine *e, int i, int status)
{
    cl_wire_join_reply_t r;
    memset(&r, 0, sizeof r);
    r.status = (uint8_t)status;
    r.settings.world_size = 4;
    eng_join_on_reply(e->parts.join, s_keys[i], &r);
}

/* A joiner sends JOIN at start (as each link comes up) and again every
   ENG_JOIN_RETRY: its timer, armed at start, arms itself again; at the
   join's deadline it gives up, and its timer stops. */
static void test_retry_and_deadline(void)
{
    s_now = 100.0;
    struct cl_engine *e = fake_engine(2, -1);
    CHECK(e->state == ENG_JOINING && s_connects == 2);
    CHECK(join_due(e) == 101.0); /* armed at start */
    link_event(e, 1, CL_TP_UP);
    CHECK(sent(CL_MSG_JOIN, 1) == 1);
    fake_run_until(e->parts.timers, 101.0);
    CHECK(sent(CL_MSG_JOIN, 1) == 2); /* again; peer 2 is connected to again */
    CHECK(s_connects == 3);
    CHECK(join_due(e) == 102.0); /* armed again by its callback */
    fake_run_until(e->parts.timers, 104.0);
    CHECK(sent(CL_MSG_JOIN, 1) == 5);
    /* The deadline: max(30 s, 4 x COLLAB_TIMEOUT) after start. */
    fake_run_until(e->parts.timers, 129.5);
    CHECK(e->state == ENG_JOINING);
    fake_run_until(e->parts.timers, 130.0);
    CHECK(e->state == ENG_LEFT);
    CHECK(isinf(join_due(e))); /* not joining: it stopped */
    fake_free(e);
}

/* Initial peer 1 goes down, peer 2 answers NOT_MEMBER: once peer 1 has
   been gone for the grace (1 s), this peer (the lowest key of those
   waiting) founds the swarm again, at the grace's end, not at its next
   JOIN. */
static void test_found_at_grace(void)
{
    s_now = 100.0;
    struct cl_engine *e = fake_engine(2, -1);
    link_event(e, 1, CL_TP_UP);
    link_event(e, 2, CL_TP_UP);
    s_now = 100.5;
    link_event(e, 1, CL_TP_DOWN);
    CHECK(join_due(e) == 101.0);
    s_now = 100.6;
    join_reply(e, 2, CL_JOIN_NOT_MEMBER);
    CHECK(e->state == ENG_JOINING); /* not yet gone for the grace */
    fake_run_until(e->parts.timers, 101.0);
    CHECK(e->state == ENG_JOINING);
    CHECK(join_due(e) == 101.5); /* the grace's end, before the next JOIN */
    fake_run_until(e->parts.timers, 101.5);
    CHECK(e->state == ENG_MEMBER && s_members_told == 1);
    CHECK(isinf(join_due(e)));
    fake_free(e);
}

/* The grace is over but peer 2 was not heard since: its NOT_MEMBER, when
   it comes, founds at once.  With a third peer that never answered,
   founding waits for it; its refusal founds at once. */
static void test_found_on_events(void)
{
    s_now = 100.0;
    struct cl_engine *e = fake_engine(2, -1);
    link_event(e, 1, CL_TP_UP);
    link_event(e, 2, CL_TP_UP);
    s_now = 100.2;
    link_event(e, 1, CL_TP_DOWN);
    fake_run_until(e->parts.timers, 101.4); /* the grace ended at 101.2 */
    CHECK(e->state == ENG_JOINING);
    CHECK(join_due(e) == 102.0);
    join_reply(e, 2, CL_JOIN_NOT_MEMBER);
    CHECK(e->state == ENG_MEMBER);
    fake_free(e);

    s_now = 100.0;
    e = fake_engine(3, -1);
    link_event(e, 1, CL_TP_UP);
    link_event(e, 2, CL_TP_UP);
    s_now = 100.2;
    link_event(e, 1, CL_TP_DOWN);
    s_now = 100.3;
    join_reply(e, 2, CL_JOIN_NOT_MEMBER);
    fake_run_until(e->parts.timers, 101.4);
    CHECK(e->state == ENG_JOINING); /* peer 3 may be a member */
    link_event(e, 3, CL_TP_REFUSED);
    CHECK(e->state == ENG_MEMBER);
    fake_free(e);
}

/* The view of the coordinator's table ct (s_keys[1]), as its VIEW. */
static void view_from(struct cl_engine *e, cl_member_t *ct)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_VIEW;
    CHECK(cl_member_view(ct, &m.u.view) == 0);
    eng_member_on_message(e, cl_member_find(e->parts.mb, s_keys[1]), s_keys[1], &m);
    free(m.u.view.members);
}

/* A member that a view leaves out joins again at once through the
   coordinator: the join's timer, stopped while it was a member, is
   armed by the rejoin. */
static void test_rejoin(void)
{
    s_now = 100.0;
    struct cl_engine *e = fake_engine(1, -1);
    link_event(e, 1, CL_TP_UP);
    cl_settings_t set = {4, false, 0, 4, 0, 0, 0, false};
    cl_member_t *ct = cl_member_new(s_keys[1]);
    CHECK(cl_member_found(ct, 0, "/ip4/127.0.0.1/tcp/9002/p2p/c", false, 1.0, &set) == 0);
    cl_member_delta_t d;
    char a[256];
    address_of(0, a, sizeof a);
    CHECK(cl_member_admit(ct, s_keys[0], 1, a, false, 1.0, s_now, &d) == 0);
    cl_member_delta_clear(&d);
    s_now = 100.5;
    view_from(e, ct);
    CHECK(e->state == ENG_MEMBER);
    fake_run_until(e->parts.timers, 101.5); /* the join's timer found it a member: stopped */
    CHECK(isinf(join_due(e)));
    CHECK(cl_member_remove(ct, (const uint8_t(*)[32])s_keys[0], 1, s_now, &d) == 1);
    cl_member_delta_clear(&d);
    int joins = sent(CL_MSG_JOIN, 1);
    view_from(e, ct);
    CHECK(e->state == ENG_JOINING);
    CHECK(join_due(e) == s_now); /* at once */
    fake_run_until(e->parts.timers, s_now);
    CHECK(sent(CL_MSG_JOIN, 1) > joins);
    cl_member_destroy(&ct);
    fake_free(e);
}

/* A JOIN to this peer, the coordinator, from s_keys[i] asking for rank. */
static void join_from(struct cl_engine *e, int i, int rank)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_JOIN;
    m.u.join.rank = rank;
    m.u.join.weight = 1.0;
    address_of(i, m.u.join.address, sizeof m.u.join.address);
    eng_member_on_message(e, cl_member_find(e->parts.mb, s_keys[i]), s_keys[i], &m);
}

/* The founder (rank 0) coordinates; peer 1 joins.  The group is asked
   for (by this peer, or by a MATCH of peer 1): the window's end is armed
   and forms the group then (2 of 4 ranks, COLLAB_MIN_GROUP=1), not at
   the next check of silent members. */
static void test_matchmaking(void)
{
    for (int by_match = 0; by_match < 2; by_match++) {
        s_now = 100.0;
        struct cl_engine *e = fake_engine(0, 0);
        e->cfg.timeout = 10.0; /* peer 1 stays a member without heartbeats */
        CHECK(e->state == ENG_MEMBER && eng_self_coordinates(e));
        join_from(e, 1, -1);
        cl_peer_t *p = cl_member_find(e->parts.mb, s_keys[1]);
        CHECK(p != NULL && p->state == CL_PEER_ALIVE && p->rank == 1);
        CHECK(isinf(eng_match_due(e->parts.match)));
        /* Off the grid of the checks of silent members (every 0.5 s from
           100), which look at the group too. */
        fake_run_until(e->parts.timers, 100.7);
        if (by_match) {
            cl_wire_msg_t m;
            memset(&m, 0, sizeof m);
            m.hdr.type = CL_MSG_MATCH;
            eng_member_on_message(e, p, s_keys[1], &m);
        } else {
            eng_request_match(e);
        }
        double end = eng_match_due(e->parts.match);
        CHECK(fabs(end - 105.7) < 1e-9);
        fake_run_until(e->parts.timers, 105.6);
        CHECK(!cl_member_group_closed(e->parts.mb));
        s_nsent = 0;
        fake_run_until(e->parts.timers, fmin(end, 105.8)); /* the next check is at 106 */
        CHECK(cl_member_group_closed(e->parts.mb));
        CHECK(sent(CL_MSG_VIEW, 1) == 1); /* the view that forms it */
        fake_free(e);
    }
}

/* This peer founded as rank 1 and coordinates; a joiner takes rank 0:
   the view that admits it ends this peer's tenure, so that when rank 0
   fails this peer's next tenure raises the epoch above every view of
   rank 0's. */
static void test_tenure(void)
{
    s_now = 100.0;
    struct cl_engine *e = fake_engine(0, 1);
    CHECK(eng_self_coordinates(e));
    join_from(e, 1, 0);
    cl_peer_t *p = cl_member_find(e->parts.mb, s_keys[1]);
    CHECK(p != NULL && p->rank == 0 && !eng_self_coordinates(e));
    uint64_t epoch = cl_member_epoch(e->parts.mb);
    p->state = CL_PEER_SUSPECT; /* rank 0 fails */
    p->suspect_reason = CL_SUSPECT_SILENT;
    CHECK(eng_self_coordinates(e));
    eng_take_over(e);
    CHECK(cl_member_epoch(e->parts.mb) >= epoch + 64);
    fake_free(e);
}

/* This peer joins as rank 0 (a newcomer: the group was formed before
   it), so it coordinates, and takes over (its epoch raised); rank 1,
   which admits, installs the view that puts it into the group, *v, with
   a lower epoch.  Returns the engine; *ct holds rank 1's records. */
static struct cl_engine *newcomer_admitted(cl_member_t **ct_out, cl_wire_view_t *v)
{
    s_now = 100.0;
    struct cl_engine *e = fake_engine(1, -1);
    e->cfg.timeout = 10.0;
    link_event(e, 1, CL_TP_UP);
    cl_settings_t set = {4, false, 0, 4, 0, 0, 0, false};
    cl_member_t *ct = cl_member_new(s_keys[1]);
    char a[256];
    address_of(1, a, sizeof a);
    CHECK(cl_member_found(ct, 1, a, false, 1.0, &set) == 0);
    cl_member_delta_t d;
    address_of(2, a, sizeof a);
    CHECK(cl_member_admit(ct, s_keys[2], 2, a, false, 1.0, s_now, &d) == 0);
    cl_member_delta_clear(&d);
    CHECK(cl_member_close_group(ct, &d) == 1);
    cl_member_delta_clear(&d);
    address_of(0, a, sizeof a);
    CHECK(cl_member_admit(ct, s_keys[0], 0, a, false, 1.0, s_now, &d) == 0);
    cl_member_delta_clear(&d);
    uint64_t joined = cl_member_epoch(ct);
    view_from(e, ct);
    CHECK(e->state == ENG_MEMBER && eng_self_coordinates(e));
    CHECK(!cl_member_self(e->parts.mb)->in_group);
    /* Nothing to do as the coordinator of a formed group: no takeover
       yet (the view's handlers looked at the group). */
    CHECK(cl_member_epoch(e->parts.mb) == joined);
    eng_take_over(e);
    CHECK(cl_member_epoch(e->parts.mb) >= joined + 64);
    /* Rank 1 admits this peer (publish, cl_engine_admitter.c). */
    CHECK(cl_member_view(ct, v) == COLLAB_OK);
    for (uint32_t i = 0; i < v->count; i++)
        if (memcmp(v->members[i].key, s_keys[0], 32) == 0)
            v->members[i].flags |= CL_MEMBER_IN_GROUP;
    v->epoch++;
    v->group_epoch = v->epoch;
    CHECK(cl_member_apply_view(ct, v, s_now, &d) == 1);
    cl_member_delta_clear(&d);
    CHECK(v->epoch < cl_member_epoch(e->parts.mb));
    *ct_out = ct;
    return e;
}

/* The admitter's view reaches the coordinator after its takeover raised
   its epoch: without the ADMIT of that generation it is old news; with
   it, this peer adopts the admission and publishes a view above its own
   epoch under the admission's generation, itself in the group.  Not
   once a view of its raised epoch went out (a member may have run the
   admission's collective under the generation before). */
static void test_adopt_admission(void)
{
    for (int sent_first = 0; sent_first < 2; sent_first++) {
        cl_member_t *ct;
        cl_wire_view_t v;
        struct cl_engine *e = newcomer_admitted(&ct, &v);
        uint64_t raised = cl_member_epoch(e->parts.mb);
        if (sent_first)
            eng_member_reply_view(e->parts.member, s_keys[2]); /* a heartbeat answered */
        s_nsent = 0;
        s_adoptable = false;
        view_from(e, ct);
        CHECK(cl_member_epoch(e->parts.mb) == raised && !cl_member_self(e->parts.mb)->in_group);
        CHECK(sent(CL_MSG_VIEW, -1) == 0);
        s_adoptable = true;
        view_from(e, ct);
        if (sent_first) {
            CHECK(cl_member_epoch(e->parts.mb) == raised);
            CHECK(!cl_member_self(e->parts.mb)->in_group && sent(CL_MSG_VIEW, -1) == 0);
        } else {
            CHECK(cl_member_epoch(e->parts.mb) == raised + 1);
            CHECK(cl_member_group_epoch(e->parts.mb) == v.epoch);
            CHECK(cl_member_self(e->parts.mb)->in_group);
            CHECK(sent(CL_MSG_VIEW, 1) == 1 && sent(CL_MSG_VIEW, 2) == 1);
        }
        s_adoptable = false;
        free(v.members);
        cl_member_destroy(&ct);
        fake_free(e);
    }
}

int main(void)
{
    ctx_keys_init(0x11); /* s_keys[0], this peer's, is the lowest */
    test_retry_and_deadline();
    test_found_at_grace();
    test_found_on_events();
    test_rejoin();
    test_matchmaking();
    test_tenure();
    test_adopt_admission();
    printf("cl_engine_member_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
