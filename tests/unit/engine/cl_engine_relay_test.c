/*  cl_engine_relay_test.c - selftest of the relay (cl_engine_relay.c) on a
    fake context: real membership records, a real timer set and real
    identities; the clock, the links, send and delivery are the test's
    (no sockets, no engine).

    A monitor that relays at 1 Mbit/s (125000 bytes/s, a bucket of 50 ms:
    6250 bytes): client member A sends client member B boxes; what the
    bucket allows is forwarded at once, the rest waits and the relay's
    timer is armed when the tokens the next one needs have come.  A box
    for a client member the view does not list yet waits for the view:
    the timer looks again every RELAY_WAIT_POLL, and at once when the
    view changes (eng_relay_view).  End to end: A seals a message for B
    and sends it to the relaying monitor of its view, the monitor
    forwards it, B opens it and delivers it as A's; a replay, a box for
    another peer and a forged box are refused.
*/
#include "engine/cl_engine_relay.h"

#include "engine_fake.h" /* fake_peer_desc */
#include "selftest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the fake context ------------------------------------------------- */

static double s_now = 100.0;

/* What went out last, as a copy: every send of every node lands here. */
static struct {
    int count;       /* RELAYED messages sent */
    void *from;      /* the node that sent it */
    uint8_t to[32];  /* its destination */
    cl_wire_msg_t m; /* the message (payload copied) */
    uint8_t payload[8192];
} s_out;

/* What was delivered last. */
static struct {
    int count;
    uint8_t from[32];
    int type;
    uint64_t step;
} s_in;

/* A fake engine (one per node): the context's argument, struct cl_engine,
   which the component sees only as an incomplete type. */
typedef struct cl_engine {
    cl_identity_t *id;
    cl_member_t *mb;
    cl_timer_t *timers;
    cl_config_t cfg;
    eng_relay_t *relay;
    bool link; /* has a link to every peer */
} node_t;

static double ctx_now(node_t *n)
{
    (void)n;
    return s_now;
}

static bool ctx_has_link(node_t *n, const uint8_t key[32])
{
    (void)key;
    return n->link;
}

static int ctx_send(node_t *n, const cl_peer_t *to, cl_wire_msg_t *m)
{
    s_out.count += m->hdr.type == CL_MSG_RELAYED;
    s_out.from = n;
    memcpy(s_out.to, to->key, 32);
    s_out.m = *m;
    CHECK(m->payload_len <= sizeof s_out.payload);
    if (m->payload_len <= sizeof s_out.payload)
        memcpy(s_out.payload, m->payload, m->payload_len);
    s_out.m.payload = s_out.payload;
    return COLLAB_OK;
}

static void ctx_deliver(node_t *n, const uint8_t key[32], const cl_wire_msg_t *m)
{
    (void)n;
    s_in.count++;
    memcpy(s_in.from, key, 32);
    s_in.type = m->hdr.type;
    s_in.step = m->hdr.type == CL_MSG_HEARTBEAT ? m->u.heartbeat.progress : 0;
}

/* A node: a new identity, its own records and timer set; its relay is
   made by node_start once the records are set up. */
static node_t *node_new(void)
{
    node_t *n = calloc(1, sizeof *n);
    CHECK(n != NULL);
    char err[256];
    n->id = cl_identity_new(NULL, err, sizeof err);
    CHECK(n->id != NULL);
    n->mb = cl_member_new(cl_identity_public_key(n->id));
    n->timers = cl_timer_new(8);
    CHECK(n->mb != NULL && n->timers != NULL);
    n->cfg.run_id = "relay-test";
    n->cfg.timeout = 5.0;
    n->cfg.max_message_mib = 1;
    n->link = true;
    return n;
}

static void node_start(node_t *n)
{
    eng_relay_ctx_t ctx = {.arg = n,
                           .cfg = &n->cfg,
                           .self_key = cl_identity_public_key(n->id),
                           .secret_key = cl_identity_secret_key(n->id),
                           .timers = n->timers,
                           .mb = n->mb,
                           .now = ctx_now,
                           .has_link = ctx_has_link,
                           .send = ctx_send,
                           .deliver = ctx_deliver,
                           .desc = fake_peer_desc};
    n->relay = eng_relay_new(&ctx);
    CHECK(n->relay != NULL);
}

static void node_free(node_t *n)
{
    eng_relay_destroy(&n->relay);
    CHECK(n->relay == NULL);
    CHECK(isinf(cl_timer_next(n->timers))); /* its timer went with it */
    cl_timer_destroy(&n->timers);
    cl_member_destroy(&n->mb);
    cl_identity_destroy(&n->id);
    free(n);
}

static const uint8_t *key_of(const node_t *n)
{
    return cl_identity_public_key(n->id);
}

/* --------------------------------------------------------------------- */

static uint8_t s_a[32], s_b[32], s_c[32];

static void admit_client(cl_member_t *mb, const uint8_t key[32], int rank)
{
    cl_member_delta_t d;
    CHECK(cl_member_admit(mb, key, rank, "", true, 1.0, s_now, &d) == 0);
    cl_member_delta_clear(&d);
}

static const cl_settings_t s_set = {4, false, 0, 3, 0, 1, 16, false};

/* A relaying monitor whose view lists client members A and B. */
static node_t *fake_monitor(void)
{
    node_t *n = node_new();
    n->cfg.monitor = true;
    n->cfg.relay = true;
    n->cfg.relay_mbit = 1;
    CHECK(cl_member_found_monitor(n->mb, "/ip4/127.0.0.1/tcp/9/p2p/m", true, &s_set) == 0);
    admit_client(n->mb, s_a, 0);
    admit_client(n->mb, s_b, 1);
    node_start(n);
    return n;
}

/* A RELAY of `len` box bytes from A to dst, as A's link hands it. */
static void relay(node_t *mon, const uint8_t dst[32], size_t len)
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
    eng_relay_on_message(mon->relay, cl_member_find(mon->mb, s_a), s_a, &m);
}

/* The bucket: three boxes go at once (the last one borrows), the fourth
   waits for its tokens and the timer is due then. */
static void test_bucket(void)
{
    node_t *mon = fake_monitor();
    CHECK(isinf(cl_timer_next(mon->timers))); /* nothing waits */
    s_out.count = 0;
    for (int i = 0; i < 3; i++)
        relay(mon, s_b, 3000);
    CHECK(s_out.count == 3);
    CHECK(isinf(cl_timer_next(mon->timers))); /* the tokens went below 0, nothing waits */
    relay(mon, s_b, 3000);
    CHECK(s_out.count == 3); /* waits for tokens */
    double when = cl_timer_next(mon->timers);
    /* The bucket held 6250 bytes; three boxes took 3 * 3072. */
    double need = (3.0 * (3000 + CL_WIRE_RELAY_FIXED) - 6250.0) / 125000.0;
    CHECK(fabs(when - (s_now + need)) < 1e-6);
    CHECK(cl_timer_run(mon->timers, when - 1e-3) == 0);
    CHECK(s_out.count == 3);
    s_now = when + 1e-6;
    CHECK(cl_timer_run(mon->timers, s_now) == 1);
    CHECK(s_out.count == 4 && memcmp(s_out.to, s_b, 32) == 0);
    CHECK(isinf(cl_timer_next(mon->timers))); /* nothing waits any more */
    cl_relay_stats_t st;
    eng_relay_stats(mon->relay, &st);
    CHECK(st.serving && st.mbit == 1 && st.forwarded_msgs == 4 && st.dropped_msgs == 0);
    CHECK(st.forwarded_bytes == 4 * (3000 + CL_WIRE_RELAY_FIXED));
    node_free(mon);
}

/* A box for C, which the monitor's view does not list yet: it waits,
   the timer looks again every RELAY_WAIT_POLL (20 ms); the view that
   admits C wakes it at once. */
static void test_view(void)
{
    node_t *mon = fake_monitor();
    s_out.count = 0;
    relay(mon, s_c, 100);
    CHECK(s_out.count == 0);
    double when = cl_timer_next(mon->timers);
    CHECK(fabs(when - (s_now + 0.02)) < 1e-9);
    s_now = when;
    CHECK(cl_timer_run(mon->timers, s_now) == 1); /* still unknown: looks again */
    CHECK(s_out.count == 0);
    CHECK(fabs(cl_timer_next(mon->timers) - (s_now + 0.02)) < 1e-9);
    s_now += 0.005;
    admit_client(mon->mb, s_c, 2);
    eng_relay_view(mon->relay);
    CHECK(cl_timer_next(mon->timers) <= s_now); /* at once, not at the next poll */
    CHECK(cl_timer_run(mon->timers, s_now) == 1);
    CHECK(s_out.count == 1 && memcmp(s_out.to, s_c, 32) == 0);
    CHECK(isinf(cl_timer_next(mon->timers)));
    node_free(mon);
}

/* A client member's records: this client at `rank`, the other client,
   and the relaying monitor; then its relay. */
static void start_client(node_t *n, int rank, const node_t *other, int other_rank,
                         const node_t *mon)
{
    n->cfg.client_mode = true;
    CHECK(cl_member_found(n->mb, rank, "", true, 1.0, &s_set) == 0);
    admit_client(n->mb, key_of(other), other_rank);
    cl_member_delta_t d;
    CHECK(cl_member_admit_monitor(n->mb, key_of(mon), "/ip4/127.0.0.1/tcp/9/p2p/m", true, s_now,
                                  &d) == 0);
    cl_member_delta_clear(&d);
    node_start(n);
}

/* A HEARTBEAT from A to B through the monitor: sealed by A, forwarded
   unopened, opened by B and delivered as A's.  The same box again is a
   replay; a box under another counter does not open; a box for another
   peer and a spoofed sender are refused; without a link to the relaying
   monitor there is no path. */
static void test_end_to_end(void)
{
    node_t *mon = node_new(), *ca = node_new(), *cb = node_new();
    mon->cfg.monitor = mon->cfg.relay = true;
    mon->cfg.relay_mbit = 100;
    CHECK(cl_member_found_monitor(mon->mb, "/ip4/127.0.0.1/tcp/9/p2p/m", true, &s_set) == 0);
    admit_client(mon->mb, key_of(ca), 0);
    admit_client(mon->mb, key_of(cb), 1);
    node_start(mon);
    start_client(ca, 0, cb, 1, mon);
    start_client(cb, 1, ca, 0, mon);

    const cl_peer_t *to_b = cl_member_find(ca->mb, key_of(cb));
    CHECK(to_b != NULL && eng_relay_needed(ca->relay, to_b));
    CHECK(!eng_relay_needed(NULL, to_b));
    CHECK(!eng_relay_needed(mon->relay, cl_member_find(mon->mb, key_of(cb)))); /* no client */

    cl_wire_msg_t hb;
    memset(&hb, 0, sizeof hb);
    hb.hdr.type = CL_MSG_HEARTBEAT;
    hb.u.heartbeat.progress = 42;
    s_out.count = 0;
    CHECK(eng_relay_send(ca->relay, to_b, &hb) == COLLAB_OK);
    CHECK(s_out.count == 1 && s_out.from == ca && memcmp(s_out.to, key_of(mon), 32) == 0);
    cl_wire_msg_t boxed = s_out.m; /* the RELAY as the monitor's link hands it */
    static uint8_t copy[8192];
    memcpy(copy, s_out.payload, boxed.payload_len);
    boxed.payload = copy;

    eng_relay_on_message(mon->relay, cl_member_find(mon->mb, key_of(ca)), key_of(ca), &boxed);
    CHECK(s_out.count == 2 && s_out.from == mon && memcmp(s_out.to, key_of(cb), 32) == 0);
    CHECK(s_out.m.payload_len == boxed.payload_len); /* forwarded unopened */

    s_in.count = 0;
    const cl_peer_t *via = cl_member_find(cb->mb, key_of(mon));
    CHECK(via != NULL);
    eng_relay_on_message(cb->relay, via, key_of(mon), &s_out.m);
    CHECK(s_in.count == 1 && memcmp(s_in.from, key_of(ca), 32) == 0);
    CHECK(s_in.type == CL_MSG_HEARTBEAT && s_in.step == 42);

    eng_relay_on_message(cb->relay, via, key_of(mon), &boxed); /* the same box again */
    CHECK(s_in.count == 1);
    boxed.u.relay.counter++; /* a counter the box was not sealed under */
    eng_relay_on_message(cb->relay, via, key_of(mon), &boxed);
    CHECK(s_in.count == 1);
    eng_relay_on_message(ca->relay, via, key_of(mon), &boxed); /* not for A */
    CHECK(s_in.count == 1);
    cl_relay_stats_t st;
    eng_relay_stats(cb->relay, &st);
    CHECK(!st.serving && st.refused == 2);
    eng_relay_stats(ca->relay, &st);
    CHECK(st.refused == 1);

    /* A spoofed sender at the monitor: A's link claims B's box. */
    boxed.u.relay.counter--;
    memcpy(boxed.u.relay.src, key_of(cb), 32);
    s_out.count = 0;
    eng_relay_on_message(mon->relay, cl_member_find(mon->mb, key_of(ca)), key_of(ca), &boxed);
    CHECK(s_out.count == 0);

    ca->link = false; /* no link to the relaying monitor: no path */
    CHECK(eng_relay_send(ca->relay, to_b, &hb) == COLLAB_ERR_PROC_FAILED);
    CHECK(s_out.count == 0);
    node_free(ca), node_free(cb), node_free(mon);
}

int main(void)
{
    memset(s_a, 0xa1, 32);
    memset(s_b, 0xb2, 32);
    memset(s_c, 0xc3, 32);
    test_bucket();
    test_view();
    test_end_to_end();
    eng_relay_destroy(NULL);
    printf("cl_engine_relay_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
