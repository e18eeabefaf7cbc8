/*  cl_engine_match_test.c - selftest of matchmaking (cl_engine_match.c)
    on a fake context: no sockets, no engine.  The membership records and
    the timer set are real; the clock, whether this peer is a member and
    coordinates, whether the program waits for the group, the sends, and
    what matchmaking hands back (close_group, commit) are this test's,
    recorded.

    The coordinator (this peer, rank 0 of a world of 4) forms the group
    when the window (5 s from the first request, not from a later one)
    ends with COLLAB_MIN_GROUP members, at once when the target size is
    present or every rank of the world was a member, never at the
    window's end under COLLAB_STRICT, and never before someone asked.  A
    member that does not coordinate sends MATCH to the coordinator once,
    again at a check of silent members while the program waits; a MATCH
    it gets starts its window, one from a non-member does not.  The
    commit's call back into matchmaking while it forms the group is
    deferred to the commit's return, not run inside it.
*/
#include "engine/cl_engine_match.h"
#include "engine/cl_timer.h"

#include "ctx_fixture.h" /* s_keys, key_index, CTX_FAKE_FREE */
#include "mpi_collab.h"
#include "selftest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fake engine: the context's argument, struct cl_engine, which the
   component sees only as an incomplete type (docs/architecture.md). */
typedef struct cl_engine {
    cl_config_t cfg;
    cl_timer_t *timers;
    cl_member_t *mb;
    eng_match_t *m;
    double now;
    bool member, coord, waiting;
    int takeovers;
    int matches[8]; /* MATCH sent, per key index */
    int closes;     /* close_group calls that formed the group */
    int commits;
    bool in_commit;
    int inside; /* coordinates or close_group called while commit ran */
} fake_t;

static double f_now(fake_t *f)
{
    return f->now;
}

static bool f_is_member(fake_t *f)
{
    return f->member;
}

static bool f_coordinates(fake_t *f)
{
    if (f->in_commit)
        f->inside++;
    return f->member && f->coord;
}

static void f_take_over(fake_t *f)
{
    f->takeovers++;
}

static bool f_waiting(fake_t *f)
{
    return f->waiting;
}

static int f_send(fake_t *f, const cl_peer_t *p, cl_wire_msg_t *m)
{
    CHECK(m->hdr.type == CL_MSG_MATCH);
    int i = key_index(p->key);
    CHECK(i >= 0);
    if (i >= 0)
        f->matches[i]++;
    return COLLAB_OK;
}

static int f_close_group(fake_t *f, cl_member_delta_t *d)
{
    if (f->in_commit)
        f->inside++;
    int rc = cl_member_close_group(f->mb, d);
    if (rc == 1)
        f->closes++;
    return rc;
}

/* As the engine's eng_member_commit: clears d, then tells
   matchmaking again. */
static void f_commit(fake_t *f, cl_member_delta_t *d)
{
    f->commits++;
    cl_member_delta_clear(d);
    f->in_commit = true;
    eng_match_check(f->m, f->now);
    f->in_commit = false;
}

/* This peer (s_keys[0]) founded a world of 4 as rank `rank`, with
   members s_keys[1..nothers] at the lowest free ranks; it coordinates
   when rank is 0.  Target group 4, COLLAB_MIN_GROUP min_group, window
   5 s; the clock at 100. */
static void fake_init(fake_t *f, int rank, int nothers, int min_group, bool strict)
{
    memset(f, 0, sizeof *f);
    f->now = 100.0;
    f->cfg.world_size = 4;
    f->cfg.target_group = 4;
    f->cfg.min_group = min_group;
    f->cfg.matchmaking_time = 5.0;
    f->timers = cl_timer_new(8);
    f->mb = cl_member_new(s_keys[0]);
    CHECK(f->timers != NULL && f->mb != NULL);
    cl_settings_t s;
    memset(&s, 0, sizeof s);
    s.world_size = 4;
    s.target_group = 4;
    s.strict = strict;
    CHECK(cl_member_found(f->mb, rank, "/ip4/127.0.0.1/tcp/9001", false, 1.0, &s) == 0);
    for (int i = 1; i <= nothers; i++) {
        cl_member_delta_t d;
        char a[64];
        snprintf(a, sizeof a, "/ip4/127.0.0.1/tcp/%d", 9001 + i);
        int r = cl_member_pick_rank(f->mb, s_keys[i], -1, false);
        CHECK(cl_member_admit(f->mb, s_keys[i], r, a, false, 1.0, f->now, &d) == 0);
        cl_member_delta_clear(&d);
    }
    f->member = true;
    f->coord = rank == 0;
    eng_match_ctx_t ctx = {.arg = f,
                           .cfg = &f->cfg,
                           .members = f->mb,
                           .timers = f->timers,
                           .now = f_now,
                           .is_member = f_is_member,
                           .coordinates = f_coordinates,
                           .take_over = f_take_over,
                           .waiting = f_waiting,
                           .send = f_send,
                           .close_group = f_close_group,
                           .commit = f_commit};
    f->m = eng_match_new(&ctx);
    CHECK(f->m != NULL);
}

static void fake_free(fake_t *f)
{
    CTX_FAKE_FREE(eng_match_destroy, &f->m, &f->timers, &f->mb);
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

/* The coordinator with one other member: nothing before someone asks;
   the window runs from the first request (a later one does not move
   it), the group formed at its end, once; asking afterwards does
   nothing. */
static void test_window(void)
{
    fake_t f;
    fake_init(&f, 0, 1, 1, false);
    CHECK(isinf(eng_match_due(f.m)));
    f.now = 200.0;
    eng_match_check(f.m, f.now); /* nobody asked: no group */
    eng_match_checked(f.m, true, f.now);
    CHECK(f.closes == 0 && isinf(eng_match_due(f.m)));
    f.now = 100.7;
    eng_match_request(f.m);
    CHECK(eng_match_due(f.m) == 105.7);
    CHECK(f.takeovers >= 1); /* acts as the coordinator: takes over first */
    f.now = 102.0;
    eng_match_on_request(f.m, true);
    CHECK(eng_match_due(f.m) == 105.7);
    run_until(&f, 105.6);
    CHECK(f.closes == 0 && !cl_member_group_closed(f.mb));
    run_until(&f, 105.7);
    CHECK(f.closes == 1 && f.commits == 1 && cl_member_group_closed(f.mb));
    eng_match_request(f.m);
    eng_match_check(f.m, 110.0);
    CHECK(f.closes == 1 && f.commits == 1);
    fake_free(&f);
}

/* COLLAB_MIN_GROUP=3 with 2 members: the window's end forms nothing; a
   third member afterwards forms the group at the next look.  Under
   COLLAB_STRICT the window's end never does. */
static void test_min_group_strict(void)
{
    fake_t f;
    fake_init(&f, 0, 1, 3, false);
    eng_match_request(f.m);
    run_until(&f, 106.0);
    CHECK(f.closes == 0);
    cl_member_delta_t d;
    CHECK(cl_member_admit(f.mb, s_keys[2], 2, "/ip4/127.0.0.1/tcp/9003", false, 1.0, f.now, &d) ==
          0);
    cl_member_delta_clear(&d);
    eng_match_check(f.m, f.now);
    CHECK(f.closes == 1);
    fake_free(&f);

    fake_init(&f, 0, 2, 1, true);
    eng_match_request(f.m);
    run_until(&f, 200.0);
    eng_match_checked(f.m, true, f.now);
    CHECK(f.closes == 0 && !cl_member_group_closed(f.mb));
    fake_free(&f);
}

/* The group forms at once, without waiting for the window: when the
   target size is present, and when every rank of the world was a member
   at some time (ranks 2 and 3 came and went); ranks outside the world
   and a rank noted twice count for nothing. */
static void test_at_once(void)
{
    fake_t f;
    fake_init(&f, 0, 3, 1, true); /* 4 present, the target: even strict */
    eng_match_request(f.m);
    CHECK(f.closes == 1);
    fake_free(&f);

    fake_init(&f, 0, 1, 1, true);
    eng_match_joined(f.m, 1);
    eng_match_joined(f.m, 1);
    eng_match_joined(f.m, 2);
    eng_match_joined(f.m, 4);
    eng_match_joined(f.m, -1);
    CHECK(eng_match_njoined(f.m) == 2);
    eng_match_request(f.m);
    CHECK(f.closes == 0 && eng_match_njoined(f.m) == 3); /* and this peer's rank 0 */
    eng_match_joined(f.m, 3);
    eng_match_check(f.m, f.now);
    CHECK(f.closes == 1 && eng_match_njoined(f.m) == 4);
    fake_free(&f);
}

/* A member that does not coordinate (rank 1; s_keys[1] holds rank 0):
   MATCH to the coordinator once, again at a check of silent members
   while the program waits, not when it does not; nothing when it is not
   a member, or once the group is formed.  A MATCH from a member starts
   its window (it may coordinate later), one from a non-member does not;
   it forms the group only once it coordinates. */
static void test_member(void)
{
    fake_t f;
    fake_init(&f, 1, 1, 1, false);
    CHECK(!f.coord);
    f.member = false;
    eng_match_request(f.m);
    CHECK(f.matches[1] == 0);
    f.member = true;
    eng_match_request(f.m);
    eng_match_request(f.m);
    CHECK(f.matches[1] == 1);
    eng_match_checked(f.m, false, f.now);
    CHECK(f.matches[1] == 1);
    f.waiting = true;
    eng_match_checked(f.m, false, f.now);
    CHECK(f.matches[1] == 2);
    CHECK(f.takeovers == 0 && isinf(eng_match_due(f.m)));

    eng_match_on_request(f.m, false);
    CHECK(isinf(eng_match_due(f.m)));
    f.now = 101.0;
    eng_match_on_request(f.m, true);
    CHECK(eng_match_due(f.m) == 106.0);
    run_until(&f, 107.0);
    CHECK(f.closes == 0);
    f.coord = true; /* rank 0 failed: this peer coordinates */
    eng_match_checked(f.m, true, f.now);
    CHECK(f.closes == 1 && f.takeovers >= 1);
    f.coord = false;
    f.waiting = true;
    eng_match_checked(f.m, false, f.now);
    CHECK(f.matches[1] == 2);
    fake_free(&f);
}

/* The commit tells matchmaking again (as eng_member_commit does):
   that call runs after the commit returns, not inside it, and forms
   nothing more. */
static void test_deferred(void)
{
    fake_t f;
    fake_init(&f, 0, 3, 1, false);
    eng_match_request(f.m);
    CHECK(f.closes == 1 && f.commits == 1);
    CHECK(f.inside == 0);
    /* Outside a commit it runs at once, and finds the group formed:
       nothing to do, so no takeover (a coordinator takes over to act;
       one that took over on every look raised its epoch above an
       admitter's view on its way to it, docs/elastic.md). */
    int takeovers = f.takeovers;
    eng_match_check(f.m, f.now);
    CHECK(f.takeovers == takeovers && f.closes == 1);
    fake_free(&f);
}

int main(void)
{
    ctx_keys_init(0x01);
    test_window();
    test_min_group_strict();
    test_at_once();
    test_member();
    test_deferred();
    printf("cl_engine_match_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
