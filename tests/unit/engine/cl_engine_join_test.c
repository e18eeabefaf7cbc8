/*  cl_engine_join_test.c - selftest of the join (cl_engine_join.c) on a
    fake context: no sockets, no engine.  The membership records and the
    timer set are real; the clock, the engine's state, the transport's
    links, sends, replies and connects, and what the join hands back
    (founded, fail, commit) are this test's, recorded.

    A joiner connects to every initial peer and sends JOIN to each one
    whose link comes up, again every second (ENG_JOIN_RETRY); a REDIRECT
    sends it to the coordinator named; STANDBY moves it to the standby's
    retry (2 s) and deadline; CONFLICT ends the join with
    COLLAB_ERR_CONFIG; with no answer it gives up after max(30 s,
    4 x COLLAB_TIMEOUT), and when every initial peer refused it, at its
    next try.  Founding again: an initial peer lost for the grace and
    every other one answering NOT_MEMBER, this peer founds when its key
    is the lowest of those waiting, and not otherwise.  Without initial
    peers it founds at start (a client cannot).  The coordinator side:
    a JOIN admitted with a rank (the view change handed back), a JOIN
    with another world size answered CONFLICT, a full world STANDBY, and
    a JOIN whose address is not its sender's ignored.
*/
#include "engine/cl_engine_join.h"
#include "engine/cl_engine_timer.h"
#include "engine/cl_transport.h"
#include "util/cl_identity.h"

#include "ctx_fixture.h" /* s_keys, key_index, address_of, CTX_FAKE_FREE */
#include "mpi_collab.h"
#include "selftest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXLOG 256

typedef struct {
    int type;   /* CL_MSG_* */
    int status; /* a JOIN_REPLY's */
    uint8_t to[32];
} sent_t;

/* The fake engine: the context's argument, struct cl_engine, which the
   component sees only as an incomplete type (docs/architecture.md). */
typedef struct cl_engine {
    cl_config_t cfg;
    cl_timer_t *timers;
    cl_member_t *mb;
    double now;
    eng_state_t state;
    uint8_t link[8][32]; /* links up */
    int nlink;
    sent_t sent[MAXLOG];
    int nsent;
    int connects[8]; /* per key index (s_keys) */
    int founded, failed, fail_status, commits, admitted, views;
    bool client_set;
} fake_t;

static void record(fake_t *f, const uint8_t key[32], const cl_wire_msg_t *m)
{
    CHECK(f->nsent < MAXLOG);
    if (f->nsent >= MAXLOG)
        return;
    sent_t *x = &f->sent[f->nsent++];
    x->type = m->hdr.type;
    x->status = m->hdr.type == CL_MSG_JOIN_REPLY ? m->u.join_reply.status : -1;
    memcpy(x->to, key, 32);
}

/* Messages of type sent to s_keys[to] (any key when to < 0). */
static int sent(const fake_t *f, int type, int to)
{
    int n = 0;
    for (int i = 0; i < f->nsent; i++)
        n += f->sent[i].type == type && (to < 0 || memcmp(f->sent[i].to, s_keys[to], 32) == 0);
    return n;
}

static double f_now(fake_t *f)
{
    return f->now;
}

static eng_state_t f_state(fake_t *f)
{
    return f->state;
}

static void f_set_state(fake_t *f, eng_state_t state)
{
    CHECK(state == ENG_JOINING || state == ENG_STANDBY);
    f->state = state;
}

static double f_member_since(fake_t *f)
{
    (void)f;
    return 0;
}

static int f_rank(fake_t *f)
{
    (void)f;
    return -1;
}

static const char *f_address(fake_t *f)
{
    (void)f;
    static char a[256];
    address_of(0, a, sizeof a);
    return a;
}

static int f_send(fake_t *f, const uint8_t key[32], cl_wire_msg_t *m)
{
    record(f, key, m);
    return COLLAB_OK;
}

static int f_connect(fake_t *f, const uint8_t key[32], const char *address)
{
    (void)address;
    int i = key_index(key);
    CHECK(i > 0);
    if (i > 0)
        f->connects[i]++;
    return COLLAB_OK;
}

static bool f_has_link(fake_t *f, const uint8_t key[32])
{
    for (int i = 0; i < f->nlink; i++)
        if (memcmp(f->link[i], key, 32) == 0)
            return true;
    return false;
}

static int f_link_version(fake_t *f, const uint8_t key[32])
{
    (void)f, (void)key;
    return 0;
}

static void f_set_client(fake_t *f)
{
    f->cfg.client_mode = true;
    f->client_set = true;
}

static void f_join_sent(fake_t *f, const uint8_t key[32])
{
    (void)f, (void)key;
}

static bool s_probing; /* back from a pause, asking to be taken back (eng_auth_probing) */

static bool f_probing(fake_t *f)
{
    (void)f;
    return s_probing;
}

static bool s_in_doubt; /* back from a pause, its collectives held (eng_el_in_doubt) */

static bool f_in_doubt(fake_t *f)
{
    (void)f;
    return s_in_doubt;
}

static int f_reachable(fake_t *f, const uint8_t key[32], const cl_wire_join_t *j)
{
    (void)f, (void)key, (void)j;
    return 1;
}

static void f_founded(fake_t *f)
{
    CHECK(cl_member_self(f->mb) != NULL); /* the records hold it first */
    f->founded++;
    f->state = ENG_MEMBER;
}

static void f_fail(fake_t *f, int status)
{
    f->failed++;
    f->fail_status = status;
    f->state = ENG_LEFT;
}

static void f_send_view(fake_t *f, const cl_peer_t *p)
{
    (void)p;
    f->views++;
}

static void f_commit(fake_t *f, cl_member_delta_t *d)
{
    f->commits++;
    cl_member_delta_clear(d);
}

static void f_admit_rank(fake_t *f, const uint8_t key[32])
{
    (void)key;
    f->admitted++;
}

static const char *f_desc(const cl_peer_t *p, char *out, size_t len)
{
    snprintf(out, len, "peer %d", key_index(p->key));
    return out;
}

/* A joiner (this peer s_keys[0], world size 4, COLLAB_TIMEOUT `timeout`)
   listing initial peers s_keys[1..ninitial]; it is started at f->now. */
static eng_join_t *fake_join(fake_t *f, int ninitial, double timeout)
{
    memset(f, 0, sizeof *f);
    f->now = 100.0;
    f->state = ENG_JOINING;
    f->cfg.timeout = timeout;
    f->cfg.world_size = 4;
    f->cfg.target_group = 4;
    f->cfg.weight = 1.0;
    f->cfg.rank = -1;
    f->cfg.wire_version = CL_WIRE_VERSION;
    static char list[1024];
    list[0] = '\0';
    for (int i = 1; i <= ninitial; i++) {
        char a[256];
        address_of(i, a, sizeof a);
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i > 1 ? "," : "", a);
    }
    f->cfg.initial_peers = ninitial > 0 ? list : NULL;
    f->timers = cl_timer_new(8);
    f->mb = cl_member_new(s_keys[0]);
    CHECK(f->timers != NULL && f->mb != NULL);
    eng_join_ctx_t ctx = {.arg = f,
                          .cfg = &f->cfg,
                          .incarnation = 7,
                          .members = f->mb,
                          .timers = f->timers,
                          .now = f_now,
                          .state = f_state,
                          .set_state = f_set_state,
                          .member_since = f_member_since,
                          .rank = f_rank,
                          .address = f_address,
                          .send = f_send,
                          .reply = f_send,
                          .connect = f_connect,
                          .has_link = f_has_link,
                          .link_version = f_link_version,
                          .set_client = f_set_client,
                          .join_sent = f_join_sent,
                          .probing = f_probing,
                          .in_doubt = f_in_doubt,
                          .reachable = f_reachable,
                          .founded = f_founded,
                          .fail = f_fail,
                          .send_view = f_send_view,
                          .commit = f_commit,
                          .admit_rank = f_admit_rank,
                          .desc = f_desc};
    memcpy(ctx.self_key, s_keys[0], 32);
    eng_join_t *j = eng_join_new(&ctx);
    CHECK(j != NULL);
    return j;
}

static void fake_free(fake_t *f, eng_join_t **j)
{
    CTX_FAKE_FREE(eng_join_destroy, j, &f->timers, &f->mb);
    f->cfg.initial_peers = NULL;
}

/* Runs the timer set as the loop would, up to t. */
static void run_until(fake_t *f, double t)
{
    while (cl_timer_next(f->timers) <= t) {
        f->now = fmax(f->now, cl_timer_next(f->timers));
        (void)cl_timer_run(f->timers, f->now);
    }
    f->now = t;
}

static void link_up(fake_t *f, eng_join_t *j, int i)
{
    memcpy(f->link[f->nlink++], s_keys[i], 32);
    eng_join_link_up(j, s_keys[i]);
    eng_join_changed(j);
}

static void link_down(fake_t *f, eng_join_t *j, int i)
{
    for (int k = 0; k < f->nlink; k++)
        if (memcmp(f->link[k], s_keys[i], 32) == 0)
            memcpy(f->link[k], f->link[--f->nlink], 32);
    eng_join_link_down(j, s_keys[i]);
    eng_join_changed(j);
}

static void reply(eng_join_t *j, int i, int status)
{
    cl_wire_join_reply_t r;
    memset(&r, 0, sizeof r);
    r.status = (uint8_t)status;
    r.settings.world_size = 4;
    eng_join_on_reply(j, s_keys[i], &r);
}

/* JOIN to every initial peer whose link is up, at once and each second;
   a peer without a link is connected to again each second. */
static void test_retry(void)
{
    fake_t f;
    eng_join_t *j = fake_join(&f, 2, 2.0);
    CHECK(eng_join_start(j) == COLLAB_OK);
    CHECK(f.state == ENG_JOINING && f.connects[1] == 1 && f.connects[2] == 1);
    CHECK(eng_join_due(j) == 101.0);
    link_up(&f, j, 1);
    CHECK(sent(&f, CL_MSG_JOIN, 1) == 1 && sent(&f, CL_MSG_JOIN, 2) == 0);
    run_until(&f, 101.0);
    CHECK(sent(&f, CL_MSG_JOIN, 1) == 2);
    CHECK(f.connects[2] == 2); /* no link: connected to again */
    CHECK(eng_join_due(j) == 102.0);
    link_up(&f, j, 2);
    CHECK(sent(&f, CL_MSG_JOIN, 2) == 1);
    run_until(&f, 105.0);
    CHECK(sent(&f, CL_MSG_JOIN, 1) == 6 && sent(&f, CL_MSG_JOIN, 2) == 5);
    CHECK(f.failed == 0 && f.founded == 0);
    fake_free(&f, &j);
}

/* No answer: it gives up after max(30 s, 4 x COLLAB_TIMEOUT), and its
   timer stops. */
static void test_deadline(void)
{
    for (int k = 0; k < 2; k++) {
        double timeout = k == 0 ? 2.0 : 10.0, limit = k == 0 ? 30.0 : 40.0;
        fake_t f;
        eng_join_t *j = fake_join(&f, 2, timeout);
        CHECK(eng_join_start(j) == COLLAB_OK);
        link_up(&f, j, 1);
        run_until(&f, 100.0 + limit - 0.5);
        CHECK(f.failed == 0 && f.state == ENG_JOINING);
        run_until(&f, 100.0 + limit);
        CHECK(f.failed == 1 && f.fail_status == COLLAB_ERR_NETWORK);
        CHECK(isinf(eng_join_due(j)));
        fake_free(&f, &j);
    }
}

/* Every initial peer refused this peer: it gives up at its next try. */
static void test_refused(void)
{
    fake_t f;
    eng_join_t *j = fake_join(&f, 2, 2.0);
    CHECK(eng_join_start(j) == COLLAB_OK);
    eng_join_link_refused(j, s_keys[1], CL_REFUSE_AUTH, "swarm key");
    eng_join_link_refused(j, s_keys[2], CL_REFUSE_BUSY, "busy"); /* not definitive */
    eng_join_changed(j);
    run_until(&f, 101.0);
    CHECK(f.failed == 0 && f.connects[2] == 2);
    eng_join_link_refused(j, s_keys[2], CL_REFUSE_RUN, "run id");
    run_until(&f, 101.9);
    CHECK(f.failed == 0);
    run_until(&f, 102.0);
    CHECK(f.failed == 1 && f.fail_status == COLLAB_ERR_NETWORK);
    fake_free(&f, &j);
}

/* NOT_MEMBER: peer 1 was lost and peer 2 answers NOT_MEMBER after it:
   at the grace's end (max(1 s, COLLAB_TIMEOUT / 2)) this peer, the
   lowest key of those waiting, founds.  When peer 2's key is lower, it
   does not: peer 2 founds and this peer goes on sending JOIN. */
static void test_found_again(void)
{
    for (int lower = 0; lower < 2; lower++) {
        if (lower)
            memset(s_keys[0], 0x33, 32); /* above s_keys[1] and s_keys[2] */
        fake_t f;
        eng_join_t *j = fake_join(&f, 2, 4.0); /* grace 2 s */
        CHECK(eng_join_start(j) == COLLAB_OK);
        link_up(&f, j, 1);
        link_up(&f, j, 2);
        f.now = 100.5;
        link_down(&f, j, 1);
        f.now = 100.7;
        reply(j, 2, CL_JOIN_NOT_MEMBER);
        CHECK(f.founded == 0);
        CHECK(eng_join_due(j) == 101.0); /* the next JOIN first */
        run_until(&f, 102.4);
        CHECK(f.founded == 0);
        if (!lower)
            CHECK(eng_join_due(j) == 102.5); /* the grace's end, before the next JOIN */
        int joins = sent(&f, CL_MSG_JOIN, 2);
        run_until(&f, 102.5);
        if (!lower) {
            CHECK(f.founded == 1 && f.state == ENG_MEMBER);
            CHECK(cl_member_self(f.mb) != NULL && cl_member_self(f.mb)->rank == 0);
            CHECK(isinf(eng_join_due(j)));
        } else {
            CHECK(f.founded == 0 && f.state == ENG_JOINING);
            run_until(&f, 103.0);
            CHECK(sent(&f, CL_MSG_JOIN, 2) == joins + 1);
        }
        fake_free(&f, &j);
        memset(s_keys[0], 0x01, 32);
    }
}

/* REDIRECT: the coordinator named (peer 3) is connected to, then sent
   JOIN when its link is up, and each second; one naming this peer, or
   with an address that is not the named key's, is ignored. */
static void test_redirect(void)
{
    fake_t f;
    eng_join_t *j = fake_join(&f, 1, 2.0);
    CHECK(eng_join_start(j) == COLLAB_OK);
    link_up(&f, j, 1);
    cl_wire_join_reply_t r;
    memset(&r, 0, sizeof r);
    r.status = CL_JOIN_REDIRECT;
    memcpy(r.key, s_keys[0], 32); /* this peer */
    address_of(0, r.address, sizeof r.address);
    eng_join_on_reply(j, s_keys[1], &r);
    memcpy(r.key, s_keys[3], 32);
    address_of(4, r.address, sizeof r.address); /* another key's address */
    eng_join_on_reply(j, s_keys[1], &r);
    CHECK(f.connects[3] == 0 && cl_member_find(f.mb, s_keys[3]) == NULL);
    address_of(3, r.address, sizeof r.address);
    eng_join_on_reply(j, s_keys[1], &r);
    CHECK(f.connects[3] == 1 && sent(&f, CL_MSG_JOIN, 3) == 0);
    CHECK(cl_member_find(f.mb, s_keys[3]) != NULL); /* its address recorded */
    link_up(&f, j, 3);
    CHECK(sent(&f, CL_MSG_JOIN, 3) == 1);
    run_until(&f, 102.0);
    CHECK(sent(&f, CL_MSG_JOIN, 3) == 3);
    fake_free(&f, &j);
}

/* A member back from a pause whose JOIN a member answered with a
   REDIRECT to a coordinator it has no link to (a newcomer that took a
   lower rank while it was stopped): the JOIN goes once that link is up
   (e2e.stop_taken_back: it used to be connected to only, and the peer
   stopped after the rejoin window).  A member that is not asking to be
   taken back ignores a REDIRECT. */
static void test_redirect_probing(void)
{
    fake_t f;
    eng_join_t *j = fake_join(&f, 1, 2.0);
    CHECK(eng_join_start(j) == COLLAB_OK);
    link_up(&f, j, 1);
    f.state = ENG_MEMBER;
    cl_wire_join_reply_t r;
    memset(&r, 0, sizeof r);
    r.status = CL_JOIN_REDIRECT;
    memcpy(r.key, s_keys[3], 32);
    address_of(3, r.address, sizeof r.address);
    s_probing = false;
    eng_join_on_reply(j, s_keys[1], &r);
    CHECK(f.connects[3] == 0); /* not asking: ignored */
    s_probing = true;
    eng_join_on_reply(j, s_keys[1], &r);
    CHECK(f.connects[3] == 1 && sent(&f, CL_MSG_JOIN, 3) == 0);
    link_up(&f, j, 3);
    CHECK(sent(&f, CL_MSG_JOIN, 3) == 1);
    s_probing = false;
    link_up(&f, j, 3); /* no longer asking: no JOIN */
    CHECK(sent(&f, CL_MSG_JOIN, 3) == 1);
    fake_free(&f, &j);
}

/* STANDBY: JOIN every 2 s; each STANDBY moves the deadline; when the
   swarm stops answering for the join's limit, the standby gives up. */
static void test_standby(void)
{
    fake_t f;
    eng_join_t *j = fake_join(&f, 1, 2.0);
    CHECK(eng_join_start(j) == COLLAB_OK);
    link_up(&f, j, 1);
    f.now = 100.5;
    reply(j, 1, CL_JOIN_STANDBY);
    CHECK(f.state == ENG_STANDBY);
    run_until(&f, 101.0);
    int joins = sent(&f, CL_MSG_JOIN, 1);
    run_until(&f, 102.9);
    CHECK(sent(&f, CL_MSG_JOIN, 1) == joins); /* not every second */
    run_until(&f, 103.0);
    CHECK(sent(&f, CL_MSG_JOIN, 1) == joins + 1);
    f.now = 120.0;
    reply(j, 1, CL_JOIN_STANDBY); /* the deadline moves to 150 */
    run_until(&f, 149.9);
    CHECK(f.failed == 0 && f.state == ENG_STANDBY);
    run_until(&f, 150.0);
    CHECK(f.failed == 1 && f.fail_status == COLLAB_ERR_NETWORK);
    fake_free(&f, &j);
}

/* CONFLICT: the join ends with COLLAB_ERR_CONFIG; no JOIN after it. */
static void test_conflict(void)
{
    fake_t f;
    eng_join_t *j = fake_join(&f, 1, 2.0);
    CHECK(eng_join_start(j) == COLLAB_OK);
    link_up(&f, j, 1);
    reply(j, 1, CL_JOIN_CONFLICT);
    CHECK(f.failed == 1 && f.fail_status == COLLAB_ERR_CONFIG && f.state == ENG_LEFT);
    int joins = sent(&f, CL_MSG_JOIN, 1);
    run_until(&f, 101.0); /* its timer, due then, finds no join and stops */
    CHECK(isinf(eng_join_due(j)) && sent(&f, CL_MSG_JOIN, 1) == joins);
    fake_free(&f, &j);
}

/* No initial peers: it founds at start as rank COLLAB_RANK (0 here); a
   client cannot found. */
static void test_found_at_start(void)
{
    fake_t f;
    eng_join_t *j = fake_join(&f, 0, 2.0);
    f.cfg.rank = 0;
    CHECK(eng_join_start(j) == COLLAB_OK);
    CHECK(f.founded == 1 && cl_member_self(f.mb) != NULL && cl_member_self(f.mb)->rank == 0);
    CHECK(isinf(eng_join_due(j)));
    fake_free(&f, &j);

    j = fake_join(&f, 0, 2.0);
    f.cfg.client_mode = true;
    CHECK(eng_join_start(j) == COLLAB_ERR_CONFIG);
    CHECK(f.founded == 0);
    fake_free(&f, &j);
}

/* A JOIN from s_keys[i] asking for world size ws (0: not set). */
static void join_from(eng_join_t *j, int i, int ws, int addr_of)
{
    cl_wire_join_t m;
    memset(&m, 0, sizeof m);
    m.rank = -1;
    m.weight = 1.0;
    m.incarnation = 5;
    if (ws > 0) {
        m.flags |= CL_JOIN_WORLD_SET;
        m.settings.world_size = (uint32_t)ws;
    }
    address_of(addr_of, m.address, sizeof m.address);
    eng_join_on_join(j, s_keys[i], &m);
}

/* The coordinator (this peer, founded alone with world size 4): joiners
   admitted with ranks 1..3; then the world is full (STANDBY); another
   world size is a CONFLICT; a JOIN whose address is another key's is
   ignored; the same process asking again gets its view; back from a pause
   and in doubt, a JOIN is not answered. */
static void test_coordinator(void)
{
    fake_t f;
    eng_join_t *j = fake_join(&f, 0, 2.0);
    f.cfg.rank = 0;
    CHECK(eng_join_start(j) == COLLAB_OK && f.founded == 1);
    join_from(j, 1, 0, 2); /* not its own address */
    CHECK(f.commits == 0 && f.nsent == 0);
    join_from(j, 1, 0, 1);
    CHECK(f.commits == 1 && f.admitted == 1);
    /* Back from a pause and still asking the others: no JOIN answered
       (its view may be stale; the joiner asks again). */
    s_in_doubt = true;
    join_from(j, 2, 0, 2);
    CHECK(f.commits == 1 && f.nsent == 0 && f.views == 0);
    s_in_doubt = false;
    cl_peer_t *p = cl_member_find(f.mb, s_keys[1]);
    CHECK(p != NULL && p->rank == 1 && p->incarnation == 5);
    join_from(j, 1, 0, 1); /* again: its view */
    CHECK(f.commits == 1 && f.views == 1);
    join_from(j, 2, 8, 2);
    CHECK(f.nsent == 1 && f.sent[0].type == CL_MSG_JOIN_REPLY &&
          f.sent[0].status == CL_JOIN_CONFLICT);
    join_from(j, 2, 4, 2);
    join_from(j, 3, 0, 3);
    CHECK(f.commits == 3 && f.admitted == 3);
    join_from(j, 4, 0, 4);
    CHECK(f.nsent == 2 && f.sent[1].status == CL_JOIN_STANDBY);
    CHECK(memcmp(f.sent[1].to, s_keys[4], 32) == 0);
    fake_free(&f, &j);
}

int main(void)
{
    ctx_keys_init(0x01); /* s_keys[0], this peer's, is the lowest */
    test_retry();
    test_deadline();
    test_refused();
    test_found_again();
    test_redirect();
    test_redirect_probing();
    test_standby();
    test_conflict();
    test_found_at_start();
    test_coordinator();
    printf("cl_engine_join_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
