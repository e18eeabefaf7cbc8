/*  cl_engine_leave_test.c - selftest of the departures (cl_engine_leave.c)
    on a fake context: real membership records (el_fixture.h) and a real
    timer set; the clock, sending, replying and the communicators this
    peer entered are this test's.

    This peer is rank 0 of a group of three.  It starts its departure: a
    GOODBYE naming the collectives it entered to each of the other two
    and to the monitors, and the departure's deadline (COLLAB_TIMEOUT
    later) armed in the loop's set, so that the loop wakes then even when
    nothing else would wake it.  Both acknowledgements cancel it; without
    them the turn the deadline wakes ends the departure; a member the view
    dropped is not waited for.  The other way round, a GOODBYE from a
    member is acknowledged and recorded: the departed peer counts in the
    collectives below `entered`, as absent from the others, until another
    peer holds its rank.
*/
#include "engine/cl_engine_leave.h"

#include "ctx_fixture.h" /* s_keys, CTX_FAKE_FREE */
#include "el_fixture.h"
#include "engine_fake.h" /* fake_peer_desc */
#include "mpi_collab.h"
#include "selftest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXSENT 16
#define WORLD 1u /* the world communicator's id */
#define OTHER 9u /* a derived communicator's */

typedef struct {
    uint8_t to[32];
    uint8_t type;
    uint32_t count;             /* a GOODBYE's communicators */
    cl_wire_bye_comm_t comm[2]; /* ... its first two */
    bool replied;               /* sent back on the connection (no record) */
} sent_t;

/* The fake engine: the context's argument, struct cl_engine, which the
   component sees only as an incomplete type (docs/architecture.md). */
typedef struct cl_engine {
    cl_config_t cfg;
    cl_timer_t *timers;
    cl_member_t *mb;
    double now;
    sent_t sent[MAXSENT];
    int nsent;
    int send_rc;                   /* what send returns */
    size_t nentered;               /* communicators this peer entered */
    cl_wire_bye_comm_t entered[2]; /* ... the first two of them */
} fake_t;

static sent_t *log_sent(fake_t *f, const uint8_t key[32], const cl_wire_msg_t *m)
{
    CHECK(f->nsent < MAXSENT);
    sent_t *x = &f->sent[f->nsent < MAXSENT ? f->nsent++ : MAXSENT - 1];
    memset(x, 0, sizeof *x);
    memcpy(x->to, key, 32);
    x->type = m->hdr.type;
    if (m->hdr.type == CL_MSG_GOODBYE) {
        x->count = m->u.goodbye.count;
        for (uint32_t i = 0; i < m->u.goodbye.count && i < 2; i++)
            x->comm[i] = m->u.goodbye.comms[i];
    }
    return x;
}

static double f_now(fake_t *f)
{
    return f->now;
}

static int f_send(fake_t *f, const cl_peer_t *to, cl_wire_msg_t *m)
{
    (void)log_sent(f, to->key, m);
    return f->send_rc;
}

static int f_reply(fake_t *f, const uint8_t key[32], cl_wire_msg_t *m)
{
    log_sent(f, key, m)->replied = true;
    return COLLAB_OK;
}

static size_t f_entered(fake_t *f, cl_wire_bye_comm_t *comms, size_t max)
{
    for (size_t i = 0; i < f->nentered && i < max; i++)
        comms[i] = f->entered[i < 2 ? i : 1];
    return f->nentered;
}

static eng_leave_t *fake_leave(fake_t *f)
{
    memset(f, 0, sizeof *f);
    f->now = 100.0;
    f->cfg.timeout = 6.0;
    f->timers = cl_timer_new(8);
    f->mb = el_member_of_three(s_keys, 0, f->now);
    CHECK(f->timers != NULL && f->mb != NULL);
    f->nentered = 2;
    f->entered[0] = (cl_wire_bye_comm_t){.comm = WORLD, .entered = 7};
    f->entered[1] = (cl_wire_bye_comm_t){.comm = OTHER, .entered = 3};
    eng_leave_ctx_t ctx = {.arg = f,
                           .cfg = &f->cfg,
                           .members = f->mb,
                           .timers = f->timers,
                           .now = f_now,
                           .send = f_send,
                           .reply = f_reply,
                           .desc = fake_peer_desc,
                           .entered = f_entered};
    memcpy(ctx.self_key, s_keys[0], 32);
    eng_leave_t *l = eng_leave_new(&ctx);
    CHECK(l != NULL);
    return l;
}

static void fake_free(fake_t *f, eng_leave_t **l)
{
    CTX_FAKE_FREE(eng_leave_destroy, l, &f->timers, &f->mb);
}

static int count_type(const fake_t *f, uint8_t type)
{
    int n = 0;
    for (int i = 0; i < f->nsent; i++)
        n += f->sent[i].type == type;
    return n;
}

/* The deadline is armed; the two acknowledgements disarm it.  The
   GOODBYE names the communicators entered, and goes to the monitors
   too, who are not waited for. */
static void test_acked(void)
{
    fake_t f;
    eng_leave_t *l = fake_leave(&f);
    uint8_t mon[32];
    memset(mon, 0x77, 32);
    cl_member_delta_t d;
    CHECK(cl_member_admit_monitor(f.mb, mon, "/ip4/127.0.0.1/tcp/9/p2p/m", false, f.now, &d) ==
          COLLAB_OK);
    cl_member_delta_clear(&d);
    CHECK(isinf(cl_timer_next(f.timers))); /* nothing before the departure */
    CHECK(eng_leave_done(l, f.now));       /* not started: nothing to wait for */
    CHECK(!eng_leave_started(l));
    eng_leave_start(l);
    CHECK(eng_leave_started(l));
    CHECK(count_type(&f, CL_MSG_GOODBYE) == 3); /* two members, one monitor */
    CHECK(f.sent[0].count == 2 && f.sent[0].comm[0].comm == WORLD &&
          f.sent[0].comm[0].entered == 7 && f.sent[0].comm[1].comm == OTHER &&
          f.sent[0].comm[1].entered == 3);
    CHECK(memcmp(f.sent[2].to, mon, 32) == 0);
    /* The loop sleeps at most until COLLAB_TIMEOUT from now. */
    CHECK(fabs(cl_timer_next(f.timers) - (f.now + f.cfg.timeout)) < 1e-9);
    CHECK(!eng_leave_done(l, f.now + 1.0));
    eng_leave_on_ack(l, mon); /* nobody waits for a monitor's */
    eng_leave_on_ack(l, s_keys[1]);
    CHECK(!isinf(cl_timer_next(f.timers))); /* one is still missing */
    CHECK(!eng_leave_done(l, f.now + 1.0));
    eng_leave_on_ack(l, s_keys[2]);
    CHECK(isinf(cl_timer_next(f.timers))); /* the last one cancels it */
    CHECK(eng_leave_done(l, f.now + 1.0));
    fake_free(&f, &l);
}

/* Nobody acknowledges: the deadline fires, and the turn it wakes ends
   the departure. */
static void test_deadline(void)
{
    fake_t f;
    eng_leave_t *l = fake_leave(&f);
    eng_leave_start(l);
    double when = cl_timer_next(f.timers);
    CHECK(fabs(when - (f.now + f.cfg.timeout)) < 1e-9);
    CHECK(cl_timer_run(f.timers, when - 0.5) == 0);
    CHECK(!eng_leave_done(l, when - 0.5));
    CHECK(cl_timer_run(f.timers, when) == 1); /* it wakes the loop */
    CHECK(eng_leave_done(l, when));
    CHECK(isinf(cl_timer_next(f.timers)));
    fake_free(&f, &l);
}

/* Members not waited for: one the view dropped, one whose GOODBYE says
   it leaves too, one the send failed for.  More communicators than a
   GOODBYE holds: the first CL_WIRE_GOODBYE_MAX. */
static void test_not_waited(void)
{
    fake_t f;
    eng_leave_t *l = fake_leave(&f);
    f.nentered = CL_WIRE_GOODBYE_MAX + 5;
    eng_leave_start(l);
    CHECK(f.sent[0].type == CL_MSG_GOODBYE && f.sent[0].count == CL_WIRE_GOODBYE_MAX);
    cl_member_delta_t d;
    CHECK(cl_member_remove(f.mb, &s_keys[2], 1, f.now, &d) >= 0);
    cl_member_delta_clear(&d);
    CHECK(!eng_leave_done(l, f.now + 1.0)); /* rank 1 still */
    cl_wire_goodbye_t g = {.count = 0, .comms = NULL};
    f.nsent = 0;
    eng_leave_on_goodbye(l, cl_member_find(f.mb, s_keys[1]), s_keys[1], &g);
    CHECK(f.nsent == 1 && f.sent[0].type == CL_MSG_BYE_ACK && !f.sent[0].replied);
    CHECK(isinf(cl_timer_next(f.timers)));
    CHECK(eng_leave_done(l, f.now + 1.0));
    fake_free(&f, &l);

    l = fake_leave(&f);
    f.send_rc = COLLAB_ERR_PROC_FAILED;
    eng_leave_start(l);
    CHECK(count_type(&f, CL_MSG_GOODBYE) == 2);
    CHECK(isinf(cl_timer_next(f.timers))); /* nobody to wait for */
    CHECK(eng_leave_done(l, f.now));
    fake_free(&f, &l);
}

/* GOODBYEs of others: acknowledged and recorded. */
static void test_records(void)
{
    fake_t f;
    eng_leave_t *l = fake_leave(&f);
    CHECK(eng_leave_status(l, 1, WORLD, 0) == -1);
    CHECK(eng_leave_status(NULL, 1, WORLD, 0) == -1);
    cl_wire_bye_comm_t comms[1] = {{.comm = WORLD, .entered = 5}};
    cl_wire_goodbye_t g = {.count = 1, .comms = comms};
    eng_leave_on_goodbye(l, cl_member_find(f.mb, s_keys[1]), s_keys[1], &g);
    CHECK(f.nsent == 1 && f.sent[0].type == CL_MSG_BYE_ACK && !f.sent[0].replied &&
          memcmp(f.sent[0].to, s_keys[1], 32) == 0);
    CHECK(!eng_leave_started(l));                  /* another's goodbye starts nothing here */
    CHECK(eng_leave_status(l, 1, WORLD, 4) == 1);  /* it took part */
    CHECK(eng_leave_status(l, 1, WORLD, 5) == 0);  /* absent from the next */
    CHECK(eng_leave_status(l, 1, OTHER, 0) == 0);  /* named no other communicator */
    CHECK(eng_leave_status(l, 2, WORLD, 0) == -1); /* did not leave */
    int out[4];
    CHECK(eng_leave_contributors(l, WORLD, 4, out, 4) == 1 && out[0] == 1);
    CHECK(eng_leave_contributors(l, WORLD, 5, out, 4) == 0);
    uint8_t key[32];
    CHECK(eng_leave_key(l, 1, key) && memcmp(key, s_keys[1], 32) == 0);
    CHECK(!eng_leave_key(l, 2, key));
    CHECK(eng_leave_world_of(l, s_keys[1]) == 1);
    CHECK(eng_leave_world_of(l, s_keys[2]) == -1);
    /* A second GOODBYE of the same peer replaces the first. */
    comms[0].entered = 9;
    eng_leave_on_goodbye(l, cl_member_find(f.mb, s_keys[1]), s_keys[1], &g);
    CHECK(eng_leave_status(l, 1, WORLD, 8) == 1);
    /* A GOODBYE from a peer without a record here: answered on its
       connection; its rank is resolved once the records know it. */
    f.nsent = 0;
    eng_leave_on_goodbye(l, NULL, s_keys[2], &g);
    CHECK(f.nsent == 1 && f.sent[0].replied && f.sent[0].type == CL_MSG_BYE_ACK);
    CHECK(eng_leave_world_of(l, s_keys[2]) == 2); /* its record says rank 2 */
    CHECK(eng_leave_status(l, 2, WORLD, 8) == 1);
    CHECK(eng_leave_contributors(l, WORLD, 0, out, 4) == 2);
    CHECK(eng_leave_contributors(l, WORLD, 0, out, 1) == 1); /* at most max */
    uint8_t stranger[32];
    memset(stranger, 0x99, 32);
    eng_leave_on_goodbye(l, NULL, stranger, &g);
    CHECK(eng_leave_world_of(l, stranger) == -1);
    /* Another peer holds rank 1 now: the departed one's record no longer
       answers for the rank. */
    cl_member_delta_t d;
    CHECK(cl_member_remove(f.mb, &s_keys[1], 1, f.now, &d) >= 0);
    cl_member_delta_clear(&d);
    CHECK(eng_leave_status(l, 1, WORLD, 0) == 1); /* nobody else holds it yet */
    uint8_t newcomer[32];
    memset(newcomer, 0x55, 32);
    CHECK(cl_member_admit(f.mb, newcomer, 1, "/ip4/127.0.0.1/tcp/8/p2p/n", false, 1.0, f.now, &d) ==
          COLLAB_OK);
    cl_member_delta_clear(&d);
    CHECK(eng_leave_status(l, 1, WORLD, 0) == -1);
    CHECK(!eng_leave_key(l, 1, key));
    CHECK(eng_leave_world_of(l, s_keys[1]) == 1); /* by key it still is */
    fake_free(&f, &l);
}

/* A departed peer whose GOODBYE names collectives it ran in a group
   without this peer (a fragment that went on after taking it out): the
   first collective that waited for it in vain cuts what it entered, so
   that no later one waits for it again (soak seed 2, round 40). */
static void test_cut(void)
{
    fake_t f;
    eng_leave_t *l = fake_leave(&f);
    CHECK(!eng_leave_cut(l, 1, WORLD, 3)); /* no record */
    cl_wire_bye_comm_t comms[2] = {{.comm = WORLD, .entered = 1807},
                                   {.comm = OTHER, .entered = 40}};
    cl_wire_goodbye_t g = {.count = 2, .comms = comms};
    eng_leave_on_goodbye(l, cl_member_find(f.mb, s_keys[1]), s_keys[1], &g);
    CHECK(eng_leave_status(l, 1, WORLD, 900) == 1);
    CHECK(eng_leave_cut(l, 1, WORLD, 843));
    CHECK(eng_leave_status(l, 1, WORLD, 843) == 1); /* the one that waited: failed there */
    CHECK(eng_leave_status(l, 1, WORLD, 844) == 0); /* absent from the next on */
    CHECK(eng_leave_status(l, 1, WORLD, 900) == 0);
    int out[4];
    CHECK(eng_leave_contributors(l, WORLD, 844, out, 4) == 0);
    CHECK(eng_leave_status(l, 1, OTHER, 39) == 1); /* another communicator: untouched */
    CHECK(!eng_leave_cut(l, 1, WORLD, 843));       /* nothing left to cut */
    CHECK(!eng_leave_cut(l, 1, WORLD, 2000));      /* past what it entered */
    CHECK(eng_leave_status(l, 1, WORLD, 843) == 1);
    CHECK(!eng_leave_cut(l, 2, WORLD, 10)); /* another rank: no record */
    CHECK(!eng_leave_cut(NULL, 1, WORLD, 10));
    fake_free(&f, &l);
}

int main(void)
{
    ctx_keys_init(0x11);
    test_acked();
    test_deadline();
    test_not_waited();
    test_records();
    test_cut();
    printf("cl_engine_leave_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
