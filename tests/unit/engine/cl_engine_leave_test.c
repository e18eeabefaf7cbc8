/*  cl_engine_leave_test.c - selftest of a graceful departure's deadline
    (cl_engine_leave.c) on a fake engine: real membership records and a
    real timer set, the engine's clock, send and log description stubbed
    here.

    This peer is rank 0 of a group of three.  It starts its departure: a
    GOODBYE to each of the other two, and the departure's deadline
    (COLLAB_TIMEOUT later) armed in the loop's set, so that the loop wakes
    then even when nothing else would wake it (no heartbeat, no message).
    Both acknowledgements cancel it; without them the turn the deadline
    wakes ends the departure.
*/
#include "engine/cl_engine_int.h"

#define ENGINE_FAKE_SERVICES /* eng_now, eng_peer_desc, eng_on_type */
#include "el_fixture.h"
#include "engine_fake.h"
#include "selftest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the stubbed rest of the engine ---------------------------------- */

static int s_goodbyes; /* GOODBYEs sent */

int eng_send(struct cl_engine *e, const cl_peer_t *to, cl_wire_msg_t *m)
{
    (void)e, (void)to;
    s_goodbyes += m->hdr.type == CL_MSG_GOODBYE;
    return COLLAB_OK;
}

/* --------------------------------------------------------------------- */

static uint8_t s_keys[3][32];

static struct cl_engine *fake_engine(void)
{
    struct cl_engine *e = fake_engine_alloc(s_keys[0], el_member_of_three(s_keys, 0, s_now));
    e->cfg.timeout = 6.0;
    CHECK(eng_leave_init(e) == COLLAB_OK);
    CHECK(e->on_type[CL_MSG_BYE_ACK] != NULL);
    return e;
}

static void fake_free(struct cl_engine *e)
{
    eng_leave_fini(e);
    fake_engine_release(e); /* its timer went with it */
}

/* The deadline is armed; the two acknowledgements disarm it. */
static void test_acked(void)
{
    struct cl_engine *e = fake_engine();
    CHECK(isinf(cl_timer_next(e->timers))); /* nothing before the departure */
    CHECK(eng_leave_done(e, s_now));        /* not started: nothing to wait for */
    s_goodbyes = 0;
    eng_leave_start(e);
    CHECK(eng_leave_started(e));
    CHECK(s_goodbyes == 2);
    /* The loop sleeps at most until COLLAB_TIMEOUT from now. */
    CHECK(fabs(cl_timer_next(e->timers) - (s_now + e->cfg.timeout)) < 1e-9);
    CHECK(!eng_leave_done(e, s_now + 1.0));
    eng_leave_on_ack(e, s_keys[1]);
    CHECK(!isinf(cl_timer_next(e->timers))); /* one is still missing */
    CHECK(!eng_leave_done(e, s_now + 1.0));
    eng_leave_on_ack(e, s_keys[2]);
    CHECK(isinf(cl_timer_next(e->timers))); /* the last one cancels it */
    CHECK(eng_leave_done(e, s_now + 1.0));
    fake_free(e);
}

/* Nobody acknowledges: the deadline fires, and the turn it wakes ends
   the departure. */
static void test_deadline(void)
{
    struct cl_engine *e = fake_engine();
    eng_leave_start(e);
    double when = cl_timer_next(e->timers);
    CHECK(fabs(when - (s_now + e->cfg.timeout)) < 1e-9);
    CHECK(cl_timer_run(e->timers, when - 0.5) == 0);
    CHECK(!eng_leave_done(e, when - 0.5));
    CHECK(cl_timer_run(e->timers, when) == 1); /* it wakes the loop */
    CHECK(eng_leave_done(e, when));
    CHECK(isinf(cl_timer_next(e->timers)));
    fake_free(e);
}

int main(void)
{
    for (int i = 0; i < 3; i++)
        memset(s_keys[i], 0x11 * (i + 1), 32);
    test_acked();
    test_deadline();
    printf("cl_engine_leave_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
