/*  cl_engine_relay_test.c - selftest of a relaying monitor's deadline
    (cl_engine_relay.c) on a fake engine: real membership records, a real
    timer set and a real identity; the engine's clock, send and log
    description stubbed here (no sockets).

    This peer is a monitor that relays at 1 Mbit/s (125000 bytes/s, a
    bucket of 50 ms: 6250 bytes).  Client member A sends client member B
    boxes: what the bucket allows is forwarded at once, the rest waits
    and the relay's timer is armed when the tokens the next one needs
    have come.  A box for a client member the view does not list yet
    waits for the view: the timer looks again every RELAY_WAIT_POLL, and
    at once when the view changes (eng_relay_view).
*/
#include "engine/cl_engine_int.h"

#define ENGINE_FAKE_SERVICES /* eng_now, eng_peer_desc, eng_on_type */
#include "engine_fake.h"
#include "selftest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the stubbed rest of the engine ---------------------------------- */

static int s_forwarded; /* RELAYED messages sent on */
static uint8_t s_last_to[32];

int eng_send(struct cl_engine *e, const cl_peer_t *to, cl_wire_msg_t *m)
{
    (void)e;
    s_forwarded += m->hdr.type == CL_MSG_RELAYED;
    memcpy(s_last_to, to->key, 32);
    return COLLAB_OK;
}

void eng_on_message(struct cl_engine *e, const uint8_t key[32], const cl_wire_msg_t *m)
{
    (void)e, (void)key, (void)m;
}

/* --------------------------------------------------------------------- */

static uint8_t s_a[32], s_b[32], s_c[32];

static void admit_client(struct cl_engine *e, const uint8_t key[32], int rank)
{
    cl_member_delta_t d;
    CHECK(cl_member_admit(e->mb, key, rank, "", true, 1.0, s_now, &d) == 0);
    cl_member_delta_clear(&d);
}

static struct cl_engine *fake_monitor(void)
{
    char err[256];
    cl_identity_t *id = cl_identity_new(NULL, err, sizeof err);
    CHECK(id != NULL);
    struct cl_engine *e = fake_engine_alloc(cl_identity_public_key(id), NULL);
    e->id = id;
    e->cfg.monitor = true;
    e->cfg.relay = true;
    e->cfg.relay_mbit = 1;
    e->cfg.timeout = 5.0;
    cl_settings_t set = {4, false, 0, 3, 0, 1, 16, false};
    CHECK(cl_member_found_monitor(e->mb, "/ip4/127.0.0.1/tcp/9/p2p/m", true, &set) == 0);
    admit_client(e, s_a, 0);
    admit_client(e, s_b, 1);
    CHECK(eng_relay_init(e) == COLLAB_OK);
    return e;
}

static void fake_free(struct cl_engine *e)
{
    eng_relay_fini(e);
    cl_identity_destroy(&e->id);
    fake_engine_release(e); /* its timer went with it */
}

/* A RELAY of `len` box bytes from A to dst, as A's link hands it. */
static void relay(struct cl_engine *e, const uint8_t dst[32], size_t len)
{
    static uint8_t box[8000];
    static uint64_t counter;
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_RELAYED;
    memcpy(m.u.relay.src, s_a, 32);
    memcpy(m.u.relay.dst, dst, 32);
    m.u.relay.counter = ++counter;
    m.payload = box;
    m.payload_len = len;
    eng_relay_on_message(e, cl_member_find(e->mb, s_a), s_a, &m);
}

/* The bucket: three boxes go at once (the last one borrows), the fourth
   waits for its tokens and the timer is due then. */
static void test_bucket(void)
{
    struct cl_engine *e = fake_monitor();
    CHECK(isinf(cl_timer_next(e->timers))); /* nothing waits */
    s_forwarded = 0;
    for (int i = 0; i < 3; i++)
        relay(e, s_b, 3000);
    CHECK(s_forwarded == 3);
    CHECK(isinf(cl_timer_next(e->timers))); /* the tokens went below 0, nothing waits */
    relay(e, s_b, 3000);
    CHECK(s_forwarded == 3); /* waits for tokens */
    double when = cl_timer_next(e->timers);
    /* The bucket held 6250 bytes; three boxes took 3 * 3072. */
    double need = (3.0 * (3000 + CL_WIRE_RELAY_FIXED) - 6250.0) / 125000.0;
    CHECK(fabs(when - (s_now + need)) < 1e-6);
    CHECK(cl_timer_run(e->timers, when - 1e-3) == 0);
    CHECK(s_forwarded == 3);
    s_now = when + 1e-6;
    CHECK(cl_timer_run(e->timers, s_now) == 1);
    CHECK(s_forwarded == 4 && memcmp(s_last_to, s_b, 32) == 0);
    CHECK(isinf(cl_timer_next(e->timers))); /* nothing waits any more */
    fake_free(e);
}

/* A box for C, which the monitor's view does not list yet: it waits,
   the timer looks again every RELAY_WAIT_POLL (20 ms); the view that
   admits C wakes it at once. */
static void test_view(void)
{
    struct cl_engine *e = fake_monitor();
    s_forwarded = 0;
    relay(e, s_c, 100);
    CHECK(s_forwarded == 0);
    double when = cl_timer_next(e->timers);
    CHECK(fabs(when - (s_now + 0.02)) < 1e-9);
    s_now = when;
    CHECK(cl_timer_run(e->timers, s_now) == 1); /* still unknown: looks again */
    CHECK(s_forwarded == 0);
    CHECK(fabs(cl_timer_next(e->timers) - (s_now + 0.02)) < 1e-9);
    s_now += 0.005;
    admit_client(e, s_c, 2);
    eng_relay_view(e);
    CHECK(cl_timer_next(e->timers) <= s_now); /* at once, not at the next poll */
    CHECK(cl_timer_run(e->timers, s_now) == 1);
    CHECK(s_forwarded == 1 && memcmp(s_last_to, s_c, 32) == 0);
    CHECK(isinf(cl_timer_next(e->timers)));
    fake_free(e);
}

int main(void)
{
    memset(s_a, 0xa1, 32);
    memset(s_b, 0xb2, 32);
    memset(s_c, 0xc3, 32);
    test_bucket();
    test_view();
    printf("cl_engine_relay_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
