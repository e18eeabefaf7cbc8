/*  cl_engine_views_test.c - selftest of membership's views
    (cl_engine_member.c, the component eng_member_t) on a fake context: no
    sockets, no engine.  The membership records are real (this peer's and,
    for the views it gets, a coordinator's table); the clock, the engine's
    state, rank and world size, the sends, and every call into the other
    components and the loop's fan-out are this test's, recorded.

    Becoming a member completes collab_init once (the fan-out of
    membership, the failure detector started, the settings adopted),
    not again at later views; a view is applied only when its sender is
    in it, this peer is in it or a member, and this peer has not left;
    one with settings this peer must not adopt fails collab_init and says
    GOODBYE to its sender; a view that leaves this member out starts a
    rejoin.  The coordinator's commit acts on the change and publishes
    the view to every other member and monitor, once each.  UPDATE
    changes a weight at the coordinator only, and only a member's; a
    member that does not coordinate sends its own weight to the
    coordinator.  JOIN: NOT_MEMBER from a non-member, REDIRECT to the
    coordinator from a member, the join's admission at the coordinator.
    (Whether a VIEW comes from the coordinator is the authority gate's
    rule, checked by cl_auth_test before _member sees it.)
*/
#include "engine/cl_engine_member.h"

#include "mpi_collab.h"
#include "selftest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXSENT 64

/* The fake engine: the context's argument, struct cl_engine, which the
   component sees only as an incomplete type (docs/architecture.md). */
typedef struct cl_engine {
    cl_config_t cfg;
    cl_member_t *mb;
    eng_member_t *m;
    double now;
    eng_state_t state;
    int rank, world_size;
    int fails, fail_status;
    struct {
        int type;
        int to;  /* key index */
        int how; /* 0 send, 1 send_key, 2 reply */
        int join_status;
        uint8_t redirect[32];
    } sent[MAXSENT];
    int nsent;
    int takeovers, tenures, started, founder, forgets, suspect_msgs, lefts;
    int on_joins, on_join_replies, join_agains, adopted;
    int joined[8], njoined;
    int match_checks, match_requests, match_requests_member, views_from;
    int fan_peers, fan_views, fan_members, fan_weights;
} fake_t;

/* s_keys[0] is this peer's; 1..4 the others. */
static uint8_t s_keys[5][32];

static int key_index(const uint8_t key[32])
{
    for (int i = 0; i < 5; i++)
        if (memcmp(key, s_keys[i], 32) == 0)
            return i;
    return -1;
}

/* The stubbed authority's epoch rule (cl_engine_authority.c). */
bool eng_auth_epoch_step_ok(uint64_t own, uint64_t epoch)
{
    return epoch <= own || epoch - own <= 1024;
}

static double f_now(fake_t *f)
{
    return f->now;
}

static eng_state_t f_state(fake_t *f)
{
    return f->state;
}

static void f_set_state(fake_t *f, eng_state_t s)
{
    f->state = s;
}

static void f_set_rank(fake_t *f, int r)
{
    f->rank = r;
}

static void f_set_world_size(fake_t *f, int ws)
{
    f->world_size = ws;
}

static void f_fail(fake_t *f, int status)
{
    f->fails++;
    f->fail_status = status;
    f->state = ENG_LEFT;
}

static const char *f_address(fake_t *f)
{
    (void)f;
    return "/ip4/127.0.0.1/tcp/9000/p2p/self";
}

static void record(fake_t *f, const uint8_t key[32], const cl_wire_msg_t *m, int how)
{
    if (f->nsent >= MAXSENT)
        return;
    f->sent[f->nsent].type = m->hdr.type;
    f->sent[f->nsent].to = key_index(key);
    f->sent[f->nsent].how = how;
    if (m->hdr.type == CL_MSG_JOIN_REPLY) {
        f->sent[f->nsent].join_status = m->u.join_reply.status;
        memcpy(f->sent[f->nsent].redirect, m->u.join_reply.key, 32);
    }
    f->nsent++;
}

static int f_send(fake_t *f, const cl_peer_t *p, cl_wire_msg_t *m)
{
    record(f, p->key, m, 0);
    return 0;
}

static int f_send_key(fake_t *f, const uint8_t key[32], cl_wire_msg_t *m)
{
    record(f, key, m, 1);
    return 0;
}

static int f_reply(fake_t *f, const uint8_t key[32], cl_wire_msg_t *m)
{
    record(f, key, m, 2);
    return 0;
}

static const char *f_desc(const cl_peer_t *p, char *out, size_t len)
{
    snprintf(out, len, "rank %d", p != NULL ? p->rank : -1);
    return out;
}

/* As eng_self_coordinates: a member that is its view's coordinator. */
static bool f_coordinates(fake_t *f)
{
    return f->state == ENG_MEMBER && cl_member_self(f->mb) != NULL &&
           cl_member_coordinator(f->mb) == cl_member_self(f->mb);
}

static void f_take_over(fake_t *f)
{
    f->takeovers++;
}

static void f_tenure(fake_t *f)
{
    f->tenures++;
}

static void f_started(fake_t *f, bool founder)
{
    f->started++;
    f->founder += founder;
}

static void f_forget(fake_t *f, cl_peer_t *p)
{
    (void)p;
    f->forgets++;
}

static void f_suspect_message(fake_t *f, cl_peer_t *from, const uint8_t key[32],
                              const cl_wire_msg_t *m)
{
    (void)from, (void)key, (void)m;
    f->suspect_msgs++;
}

static void f_left(fake_t *f, cl_peer_t *p)
{
    (void)p;
    f->lefts++;
}

static void f_on_join(fake_t *f, const uint8_t key[32], const cl_wire_join_t *j)
{
    (void)key, (void)j;
    f->on_joins++;
}

static void f_on_join_reply(fake_t *f, const uint8_t key[32], const cl_wire_join_reply_t *r)
{
    (void)key, (void)r;
    f->on_join_replies++;
}

static void f_join_again(fake_t *f)
{
    f->join_agains++;
}

static void f_settings_adopted(fake_t *f, const cl_settings_t *s)
{
    (void)s;
    f->adopted++;
}

static void f_joined(fake_t *f, int rank)
{
    if (f->njoined < 8)
        f->joined[f->njoined++] = rank;
}

static void f_match_check(fake_t *f, double now)
{
    (void)now;
    f->match_checks++;
}

static void f_match_request(fake_t *f, bool from_member)
{
    f->match_requests++;
    f->match_requests_member += from_member;
}

static void f_view_from(fake_t *f, const uint8_t key[32])
{
    (void)key;
    f->views_from++;
}

static void f_fan_out_peers(fake_t *f, const cl_member_delta_t *d)
{
    (void)d;
    f->fan_peers++;
}

static void f_fan_out_view(fake_t *f)
{
    f->fan_views++;
}

static void f_fan_out_member(fake_t *f)
{
    f->fan_members++;
}

static void f_fan_out_weight(fake_t *f)
{
    f->fan_weights++;
}

/* A fresh fake: this peer s_keys[0], world size 4, joining. */
static fake_t *fake_new(void)
{
    fake_t *f = calloc(1, sizeof *f);
    CHECK(f != NULL);
    f->now = 100.0;
    f->state = ENG_JOINING;
    f->rank = -1;
    f->cfg.world_size = 4;
    f->cfg.rank = -1;
    f->cfg.weight = 1.0;
    f->mb = cl_member_new(s_keys[0]);
    CHECK(f->mb != NULL);
    eng_member_ctx_t ctx = {.arg = f,
                            .cfg = &f->cfg,
                            .members = f->mb,
                            .now = f_now,
                            .state = f_state,
                            .set_state = f_set_state,
                            .set_rank = f_set_rank,
                            .set_world_size = f_set_world_size,
                            .fail = f_fail,
                            .address = f_address,
                            .send = f_send,
                            .send_key = f_send_key,
                            .reply = f_reply,
                            .desc = f_desc,
                            .coordinates = f_coordinates,
                            .take_over = f_take_over,
                            .tenure = f_tenure,
                            .started = f_started,
                            .forget = f_forget,
                            .suspect_message = f_suspect_message,
                            .left = f_left,
                            .on_join = f_on_join,
                            .on_join_reply = f_on_join_reply,
                            .join_again = f_join_again,
                            .settings_adopted = f_settings_adopted,
                            .joined = f_joined,
                            .match_check = f_match_check,
                            .match_request = f_match_request,
                            .view_from = f_view_from,
                            .fan_out_peers = f_fan_out_peers,
                            .fan_out_view = f_fan_out_view,
                            .fan_out_member = f_fan_out_member,
                            .fan_out_weight = f_fan_out_weight};
    memcpy(ctx.self_key, s_keys[0], 32);
    snprintf(ctx.self_id, sizeof ctx.self_id, "self");
    f->m = eng_member_new(&ctx);
    CHECK(f->m != NULL);
    return f;
}

static void fake_free(fake_t *f)
{
    eng_member_destroy(&f->m);
    CHECK(f->m == NULL);
    eng_member_destroy(&f->m); /* accepts NULL */
    cl_member_destroy(&f->mb);
    free(f);
}

/* Messages of type sent (any way) to s_keys[to]. */
static int sent(const fake_t *f, int type, int to)
{
    int n = 0;
    for (int i = 0; i < f->nsent; i++)
        n += f->sent[i].type == type && f->sent[i].to == to;
    return n;
}

static const cl_settings_t s_set = {4, false, 0, 4, 0, 0, 0, false};

static void address_of(int i, char *out, size_t len)
{
    snprintf(out, len, "/ip4/127.0.0.1/tcp/%d/p2p/k%d", 9001 + i, i);
}

/* A coordinator's table: s_keys[1] founded it as rank 0. */
static cl_member_t *coordinator_table(void)
{
    cl_member_t *ct = cl_member_new(s_keys[1]);
    char a[64];
    address_of(1, a, sizeof a);
    CHECK(ct != NULL && cl_member_found(ct, 0, a, false, 1.0, &s_set) == 0);
    return ct;
}

static void admit(cl_member_t *ct, int i, int rank)
{
    cl_member_delta_t d;
    char a[64];
    address_of(i, a, sizeof a);
    CHECK(cl_member_admit(ct, s_keys[i], rank, a, false, 1.0, 100.0, &d) == 0);
    cl_member_delta_clear(&d);
}

/* ct's view as a VIEW from s_keys[from]. */
static void view_from(fake_t *f, cl_member_t *ct, int from)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_VIEW;
    CHECK(cl_member_view(ct, &m.u.view) == 0);
    eng_member_message(f->m, cl_member_find(f->mb, s_keys[from]), s_keys[from], &m);
    free(m.u.view.members);
}

/* The view that admits this peer makes it a member once: its state, rank
   and world size, the failure detector started (not as a founder), the
   settings adopted, the fan-out of membership (collab_init completes).
   Later views change the records but none of that again; a stale one
   changes nothing. */
static void test_become_once(void)
{
    fake_t *f = fake_new();
    cl_member_t *ct = coordinator_table();
    admit(ct, 0, 1);
    f->now = 101.0;
    view_from(f, ct, 1);
    CHECK(f->state == ENG_MEMBER && f->rank == 1 && f->world_size == 4);
    CHECK(f->fan_members == 1 && f->started == 1 && f->founder == 0);
    CHECK(f->adopted == 1);
    CHECK(eng_member_since(f->m) == 101.0);
    CHECK(f->fan_peers == 1 && f->fan_views == 1 && f->match_checks == 1);
    CHECK(f->njoined == 2); /* ranks 0 and 1 are new here */
    CHECK(f->views_from == 1);
    admit(ct, 2, 2);
    f->now = 102.0;
    view_from(f, ct, 1);
    CHECK(cl_member_find(f->mb, s_keys[2]) != NULL);
    CHECK(f->fan_members == 1 && f->started == 1 && f->adopted == 1);
    CHECK(eng_member_since(f->m) == 101.0);
    CHECK(f->fan_views == 2 && f->match_checks == 2);
    CHECK(f->njoined == 3 && f->joined[2] == 2);
    view_from(f, ct, 1); /* the same epoch again: stale */
    CHECK(f->fan_views == 2 && f->match_checks == 2 && f->views_from == 3);
    CHECK(f->nsent == 0); /* a member that does not coordinate publishes nothing */
    cl_member_destroy(&ct);
    fake_free(f);
}

/* A view whose sender it does not list, one that does not list this
   joiner, and any view once this peer left, are not applied. */
static void test_view_refused(void)
{
    fake_t *f = fake_new();
    cl_member_t *ct = coordinator_table();
    admit(ct, 0, 1);
    view_from(f, ct, 3); /* s_keys[3] is not in it */
    CHECK(f->state == ENG_JOINING && cl_member_self(f->mb) == NULL);
    CHECK(f->fan_views == 0 && f->fan_members == 0 && f->match_checks == 0);
    CHECK(f->views_from == 1); /* the elastic hook hears of every VIEW */
    f->state = ENG_LEFT;
    view_from(f, ct, 1);
    CHECK(f->state == ENG_LEFT && cl_member_self(f->mb) == NULL && f->fan_views == 0);
    cl_member_destroy(&ct);
    fake_free(f);

    f = fake_new();
    ct = coordinator_table();
    admit(ct, 2, 1); /* not this peer */
    view_from(f, ct, 1);
    CHECK(f->state == ENG_JOINING && cl_member_find(f->mb, s_keys[1]) == NULL);
    CHECK(f->fan_views == 0);
    cl_member_destroy(&ct);
    fake_free(f);
}

/* Admitted with settings this peer must not adopt (COLLAB_WORLD_SIZE=8
   against the swarm's 4): collab_init fails with a config error, GOODBYE
   to the sender, nothing installed. */
static void test_conflict(void)
{
    fake_t *f = fake_new();
    f->cfg.world_size = 8;
    f->cfg.world_size_set = true;
    cl_member_t *ct = coordinator_table();
    admit(ct, 0, 1);
    view_from(f, ct, 1);
    CHECK(f->fails == 1 && f->fail_status == COLLAB_ERR_CONFIG && f->state == ENG_LEFT);
    CHECK(sent(f, CL_MSG_GOODBYE, 1) == 1);
    CHECK(cl_member_self(f->mb) == NULL && f->fan_members == 0 && f->adopted == 0);
    cl_member_destroy(&ct);
    fake_free(f);
}

/* A view that leaves this member out: the suspicion of nobody else is
   forgotten, the join starts again. */
static void test_left_out(void)
{
    fake_t *f = fake_new();
    cl_member_t *ct = coordinator_table();
    admit(ct, 0, 1);
    view_from(f, ct, 1);
    CHECK(f->state == ENG_MEMBER && f->join_agains == 0);
    cl_member_delta_t d;
    CHECK(cl_member_remove(ct, (const uint8_t(*)[32])s_keys[0], 1, 103.0, &d) == 1);
    cl_member_delta_clear(&d);
    view_from(f, ct, 1);
    CHECK(f->join_agains == 1 && f->forgets == 0);
    cl_member_destroy(&ct);
    fake_free(f);
}

/* This peer founds (rank 0) and coordinates; two joiners and a monitor
   are admitted: the commit acts on the change (the ranks to
   matchmaking, the fan-out) and publishes the view to each other member
   and the monitor once, never to this peer, then looks at the group. */
static void test_commit_publishes(void)
{
    fake_t *f = fake_new();
    char a[64];
    address_of(0, a, sizeof a);
    CHECK(cl_member_found(f->mb, 0, a, false, 1.0, &s_set) == 0);
    eng_member_become(f->m, true);
    CHECK(f->state == ENG_MEMBER && f->rank == 0 && f->fan_members == 1);
    CHECK(f->started == 1 && f->founder == 1);
    CHECK(f_coordinates(f));
    cl_member_delta_t d, d2;
    address_of(1, a, sizeof a);
    CHECK(cl_member_admit(f->mb, s_keys[1], 1, a, false, 1.0, f->now, &d) == 0);
    eng_member_commit(f->m, &d);
    CHECK(d.nadded == 0 && d.added == NULL); /* taken */
    CHECK(sent(f, CL_MSG_VIEW, 1) == 1 && sent(f, CL_MSG_VIEW, 0) == 0);
    CHECK(f->njoined == 1 && f->joined[0] == 1);
    CHECK(f->fan_peers == 1 && f->fan_views == 1 && f->match_checks == 1);
    CHECK(f->fan_members == 1); /* a member already */
    f->nsent = 0;
    address_of(2, a, sizeof a);
    CHECK(cl_member_admit(f->mb, s_keys[2], 2, a, false, 1.0, f->now, &d) == 0);
    address_of(3, a, sizeof a);
    CHECK(cl_member_admit_monitor(f->mb, s_keys[3], a, false, f->now, &d2) == 0);
    cl_member_delta_clear(&d2);
    eng_member_commit(f->m, &d);
    CHECK(sent(f, CL_MSG_VIEW, 1) == 1 && sent(f, CL_MSG_VIEW, 2) == 1);
    CHECK(sent(f, CL_MSG_VIEW, 3) == 1 && sent(f, CL_MSG_VIEW, 0) == 0);
    CHECK(f->nsent == 3);
    CHECK(f->fan_views == 2 && f->match_checks == 2);
    /* GOODBYE to all: the same peers. */
    f->nsent = 0;
    eng_member_goodbye_all(f->m);
    CHECK(sent(f, CL_MSG_GOODBYE, 1) == 1 && sent(f, CL_MSG_GOODBYE, 2) == 1);
    CHECK(sent(f, CL_MSG_GOODBYE, 3) == 1 && f->nsent == 3);
    fake_free(f);
}

/* UPDATE at the coordinator from a member: its weight, a new generation
   (the fan-out of weights) and the view published; from a peer without
   a record, nothing.  A member that does not coordinate sends its own
   weight to the coordinator; a non-member nothing. */
static void test_weight(void)
{
    fake_t *f = fake_new();
    char a[64];
    address_of(0, a, sizeof a);
    CHECK(cl_member_found(f->mb, 0, a, false, 1.0, &s_set) == 0);
    eng_member_become(f->m, true);
    cl_member_delta_t d;
    address_of(1, a, sizeof a);
    CHECK(cl_member_admit(f->mb, s_keys[1], 1, a, false, 1.0, f->now, &d) == 0);
    eng_member_commit(f->m, &d);
    f->nsent = 0;
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_UPDATE;
    m.u.update.weight = 3.0;
    eng_member_message(f->m, NULL, s_keys[2], &m);
    CHECK(f->fan_weights == 0 && f->nsent == 0);
    eng_member_message(f->m, cl_member_find(f->mb, s_keys[1]), s_keys[1], &m);
    CHECK(f->fan_weights == 1 && sent(f, CL_MSG_VIEW, 1) == 1 && f->takeovers >= 1);
    CHECK(cl_member_find(f->mb, s_keys[1])->weight == 3.0);
    eng_member_set_weight(f->m, 2.0);
    CHECK(f->fan_weights == 2 && cl_member_self(f->mb)->weight == 2.0);
    fake_free(f);

    f = fake_new();
    eng_member_set_weight(f->m, 2.0); /* no member */
    CHECK(f->nsent == 0);
    cl_member_t *ct = coordinator_table();
    admit(ct, 0, 1);
    view_from(f, ct, 1);
    eng_member_set_weight(f->m, 2.0);
    CHECK(sent(f, CL_MSG_UPDATE, 1) == 1 && f->fan_weights == 0);
    cl_member_destroy(&ct);
    fake_free(f);
}

/* JOIN: a non-member answers NOT_MEMBER, a member that does not
   coordinate REDIRECTs to the coordinator, the coordinator takes over
   and hands it to the join.  The other messages go where they belong. */
static void test_dispatch(void)
{
    fake_t *f = fake_new();
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_JOIN;
    eng_member_message(f->m, NULL, s_keys[4], &m);
    CHECK(f->nsent == 1 && f->sent[0].type == CL_MSG_JOIN_REPLY && f->sent[0].how == 2);
    CHECK(f->sent[0].to == 4 && f->sent[0].join_status == CL_JOIN_NOT_MEMBER);
    cl_member_t *ct = coordinator_table();
    admit(ct, 0, 1);
    view_from(f, ct, 1);
    f->nsent = 0;
    eng_member_message(f->m, NULL, s_keys[4], &m);
    CHECK(f->nsent == 1 && f->sent[0].join_status == CL_JOIN_REDIRECT);
    CHECK(memcmp(f->sent[0].redirect, s_keys[1], 32) == 0 && f->on_joins == 0);
    cl_member_destroy(&ct);

    memset(&m, 0, sizeof m);
    cl_peer_t *c = cl_member_find(f->mb, s_keys[1]);
    m.hdr.type = CL_MSG_HEARTBEAT;
    eng_member_message(f->m, c, s_keys[1], &m);
    m.hdr.type = CL_MSG_SUSPECT;
    eng_member_message(f->m, c, s_keys[1], &m);
    CHECK(f->suspect_msgs == 2);
    m.hdr.type = CL_MSG_GOODBYE;
    eng_member_message(f->m, NULL, s_keys[4], &m); /* no member: nothing */
    CHECK(f->lefts == 0);
    eng_member_message(f->m, c, s_keys[1], &m);
    CHECK(f->lefts == 1);
    m.hdr.type = CL_MSG_MATCH;
    eng_member_message(f->m, c, s_keys[1], &m);
    eng_member_message(f->m, NULL, s_keys[4], &m);
    CHECK(f->match_requests == 2 && f->match_requests_member == 1);
    m.hdr.type = CL_MSG_JOIN_REPLY;
    eng_member_message(f->m, NULL, s_keys[4], &m);
    CHECK(f->on_join_replies == 1);
    fake_free(f);

    /* The coordinator hands a JOIN to the join, after the takeover. */
    f = fake_new();
    char a[64];
    address_of(0, a, sizeof a);
    CHECK(cl_member_found(f->mb, 0, a, false, 1.0, &s_set) == 0);
    eng_member_become(f->m, true);
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_JOIN;
    eng_member_message(f->m, NULL, s_keys[4], &m);
    CHECK(f->on_joins == 1 && f->takeovers == 1 && f->nsent == 0);
    fake_free(f);
}

int main(void)
{
    for (int i = 0; i < 5; i++)
        memset(s_keys[i], 0x11 * (i + 1), 32); /* s_keys[0], this peer's, is the lowest */
    test_become_once();
    test_view_refused();
    test_conflict();
    test_left_out();
    test_commit_publishes();
    test_weight();
    test_dispatch();
    printf("cl_engine_views_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
