/*  cl_stripe_test.c - selftest of striped links (docs/wire.md section 1.1)
    over loopback.

    A sender with four connections per link sends large COLL messages
    interleaved with heartbeats and a GOODBYE: every COLL message arrives
    once, the stripes carry some, and no heartbeat or GOODBYE arrives
    before the COLL messages sent before it (the FENCE holds it).  A peer
    that speaks version 11 gets no stripes and everything on one
    connection.  Hostile senders, through real sockets and handshakes: a
    stripe that carries a heartbeat, a stripe's HELLO below version 12,
    and a FENCE that counts more than ever comes followed by a flood; each
    is banned, and what the receiver holds stays bounded.  Every wait has
    a deadline.
*/
#include "engine/cl_transport.h"

#include "engine/cl_transport_int.h" /* links, stripes and what they hold */
#include "mpi_collab.h"
#include "util/cl_identity.h"
#include "util/cl_secret.h"

#include <czmq.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "selftest.h"

#define NCOLL 400             /* large COLL messages in the ordered stream */
#define COLL_BYTES (64 << 10) /* each one's payload */
#define HB_EVERY 7            /* a heartbeat after every this many */

typedef struct {
    cl_identity_t *id;
    cl_transport_t *tp;
    uint8_t secret[32];
    int up, down, msgs;
    /* What arrived: COLL messages by their seq, how many in all, and the
       first heartbeat or GOODBYE that overtook COLL messages sent before
       it (how many had arrived then, and how many it said were sent). */
    uint8_t seen[NCOLL];
    int colls, dups, hbs, goodbyes;
    long overtaken_at, overtaken_sent;
} peer_t;

static void on_event(void *ctx, const cl_tp_event_t *ev)
{
    peer_t *p = ctx;
    if (ev->kind == CL_TP_UP)
        p->up++;
    if (ev->kind == CL_TP_DOWN)
        p->down++;
    if (ev->kind != CL_TP_MESSAGE)
        return;
    p->msgs++;
    const cl_wire_msg_t *m = ev->msg;
    if (m->hdr.type == CL_MSG_COLL && m->hdr.seq < NCOLL) {
        p->dups += p->seen[m->hdr.seq]++ > 0;
        p->colls++;
    }
    long sent = -1;
    if (m->hdr.type == CL_MSG_HEARTBEAT) {
        p->hbs++;
        sent = (long)m->u.heartbeat.progress;
    } else if (m->hdr.type == CL_MSG_GOODBYE) {
        p->goodbyes++;
        sent = NCOLL;
    }
    if (sent > p->colls && p->overtaken_sent == 0) {
        p->overtaken_at = p->colls;
        p->overtaken_sent = sent;
    }
}

static peer_t *s_peers[16];
static int s_npeers;

static bool peer_init(peer_t *p, int stripes, int max_version)
{
    if (s_npeers >= (int)(sizeof s_peers / sizeof s_peers[0]))
        return false;
    memset(p, 0, sizeof *p);
    cl_secret_from_key("secret", 6, p->secret);
    char err[256];
    p->id = cl_identity_new(NULL, err, sizeof err);
    if (p->id == NULL)
        return false;
    cl_transport_config_t cfg = {.identity = p->id,
                                 .listen = "/ip4/127.0.0.1/tcp/0",
                                 .run_id = "run1",
                                 .swarm_secret = p->secret,
                                 .ban_seconds = 30,
                                 .max_version = max_version,
                                 .stripes = stripes};
    p->tp = cl_transport_new(&cfg, err, sizeof err);
    if (p->tp == NULL) {
        fprintf(stderr, "transport: %s\n", err);
        return false;
    }
    s_peers[s_npeers++] = p;
    return true;
}

static void pump(void)
{
    for (int i = 0; i < s_npeers; i++)
        cl_transport_poll(s_peers[i]->tp, NULL, 0, 2, on_event, s_peers[i]);
}

/* Polls every peer until *v >= want or 10 s pass. */
static bool wait_for(const int *v, int want)
{
    int64_t end = zclock_mono() + 10000;
    while (*v < want && zclock_mono() < end)
        pump();
    return *v >= want;
}

static const uint8_t *key_of(const peer_t *p)
{
    return cl_identity_public_key(p->id);
}

static int send_coll(peer_t *from, peer_t *to, uint64_t seq, const uint8_t *data, size_t len)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_COLL;
    m.hdr.comm = 1;
    m.hdr.seq = seq;
    m.payload = data;
    m.payload_len = len;
    return cl_transport_send(from->tp, key_of(to), &m);
}

static int send_hb(peer_t *from, peer_t *to, uint64_t progress)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_HEARTBEAT;
    m.u.heartbeat.epoch = 1;
    m.u.heartbeat.progress = progress;
    return cl_transport_send(from->tp, key_of(to), &m);
}

static bool connect_up(peer_t *from, peer_t *to)
{
    if (cl_transport_connect(from->tp, key_of(to), cl_transport_address(to->tp)) != 0)
        return false;
    int64_t end = zclock_mono() + 10000;
    while (!cl_transport_link_up(from->tp, key_of(to)) && zclock_mono() < end)
        pump();
    return cl_transport_link_up(from->tp, key_of(to));
}

/* The stripes of from's link to `to` that are up. */
static int stripes_up(peer_t *from, peer_t *to)
{
    out_link_t *l = tp_outbound_of(from->tp, key_of(to));
    int n = 0;
    for (int i = 0; l != NULL && i < CL_TP_STRIPES_MAX - 1; i++)
        n += l->stripe[i] != NULL && l->stripe[i]->state == OL_UP;
    return n;
}

/* COLL messages that reached `at` over stripe connections of from. */
static uint64_t stripe_colls(peer_t *at, peer_t *from)
{
    uint64_t n = 0;
    for (in_link_t *l = zhashx_first(at->tp->in_by_rid); l != NULL;
         l = zhashx_next(at->tp->in_by_rid))
        if (l->stripe && memcmp(l->key, key_of(from), 32) == 0)
            n += l->colls;
    return n;
}

/* The ordered stream: NCOLL large COLL messages, a heartbeat saying how
   many went before it after every HB_EVERY, a GOODBYE at the end. */
static void test_order(void)
{
    static peer_t a, b;
    CHECK(peer_init(&a, 1, 0) && peer_init(&b, 4, 0));
    CHECK(connect_up(&b, &a));
    uint8_t *data = malloc(COLL_BYTES);
    CHECK(data != NULL);
    if (data == NULL)
        return;
    for (size_t i = 0; i < COLL_BYTES; i++)
        data[i] = (uint8_t)(i * 7);
    int hbs = 0;
    for (int i = 0; i < NCOLL; i++) {
        CHECK(send_coll(&b, &a, (uint64_t)i, data, COLL_BYTES) == 0);
        if ((i + 1) % HB_EVERY == 0) {
            CHECK(send_hb(&b, &a, (uint64_t)i + 1) == 0);
            hbs++;
        }
        if (i % 16 == 0)
            pump(); /* the stripes' handshakes go on meanwhile */
    }
    cl_wire_msg_t bye;
    memset(&bye, 0, sizeof bye);
    bye.hdr.type = CL_MSG_GOODBYE;
    CHECK(cl_transport_send(b.tp, key_of(&a), &bye) == 0);
    CHECK(wait_for(&a.goodbyes, 1));
    CHECK(wait_for(&a.colls, NCOLL));
    CHECK(a.colls == NCOLL && a.dups == 0 && a.hbs == hbs);
    for (int i = 0; i < NCOLL; i++)
        CHECK(a.seen[i] == 1);
    if (a.overtaken_sent != 0)
        fprintf(stderr, "a heartbeat or GOODBYE saying %ld sent arrived after %ld\n",
                a.overtaken_sent, a.overtaken_at);
    CHECK(a.overtaken_sent == 0);
    /* The stripes came up and carried part of the stream. */
    CHECK(stripes_up(&b, &a) == 3);
    out_link_t *l = tp_outbound_of(b.tp, key_of(&a));
    CHECK(l != NULL && l->stripe_sent > 0 && l->stripe_sent < NCOLL);
    CHECK(l != NULL && stripe_colls(&a, &b) == l->stripe_sent);
    CHECK(a.tp->held_bytes == 0);
    /* The stripes said nothing to the engine: one UP, that of the link. */
    CHECK(a.up == 1 && a.down == 0 && b.down == 0);
    free(data);
}

/* A peer of version 11 gets no stripes: everything on one connection. */
static void test_old_peer(void)
{
    static peer_t o, s;
    CHECK(peer_init(&o, 1, 11) && peer_init(&s, 4, 0));
    CHECK(connect_up(&s, &o));
    CHECK(cl_transport_link_version(s.tp, key_of(&o)) == 11);
    static uint8_t data[COLL_BYTES];
    for (int i = 0; i < 20; i++)
        CHECK(send_coll(&s, &o, (uint64_t)i, data, sizeof data) == 0);
    CHECK(send_hb(&s, &o, 20) == 0);
    CHECK(wait_for(&o.hbs, 1));
    CHECK(o.colls == 20 && o.overtaken_sent == 0);
    out_link_t *l = tp_outbound_of(s.tp, key_of(&o));
    CHECK(stripes_up(&s, &o) == 0 && l != NULL && l->stripe_sent == 0);
}

/* Sends hdr/body raw on connection c (a real link's socket, after its
   handshake), as a hostile sender would. */
static bool raw_on(peer_t *from, out_link_t *c, cl_wire_msg_t *m)
{
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    uint8_t *body;
    size_t blen;
    if (tp_encode(from->tp, m, CL_WIRE_VERSION, hdr, &body, &blen) != COLLAB_OK)
        return false;
    return tp_send_raw(from->tp, zsock_resolve(c->dealer), NULL, 0, hdr, body, blen) == 0;
}

/* Polls until `at` bans from, or 10 s pass. */
static bool banned(peer_t *at, peer_t *from)
{
    int64_t end = zclock_mono() + 10000;
    while (!tp_is_banned(at->tp, key_of(from)) && zclock_mono() < end)
        pump();
    return tp_is_banned(at->tp, key_of(from));
}

static void test_hostile(void)
{
    static uint8_t data[COLL_BYTES];

    /* A heartbeat on a stripe: banned. */
    static peer_t r1, h1;
    CHECK(peer_init(&r1, 1, 0) && peer_init(&h1, 2, 0));
    CHECK(connect_up(&h1, &r1));
    CHECK(send_coll(&h1, &r1, 0, data, sizeof data) == 0); /* opens the stripe */
    int64_t end = zclock_mono() + 10000;
    while (stripes_up(&h1, &r1) < 1 && zclock_mono() < end)
        pump();
    CHECK(stripes_up(&h1, &r1) == 1);
    out_link_t *l = tp_outbound_of(h1.tp, key_of(&r1));
    if (l != NULL && l->stripe[0] != NULL) {
        cl_wire_msg_t m;
        memset(&m, 0, sizeof m);
        m.hdr.type = CL_MSG_HEARTBEAT;
        m.u.heartbeat.epoch = 1;
        CHECK(raw_on(&h1, l->stripe[0], &m));
    }
    CHECK(banned(&r1, &h1));
    CHECK(r1.hbs == 0);

    /* A stripe's HELLO below version 12: banned. */
    static peer_t r2, h2;
    CHECK(peer_init(&r2, 1, 0) && peer_init(&h2, 1, 11));
    int rc;
    out_link_t *s =
        tp_dealer_open(h2.tp, key_of(&r2), cl_transport_address(r2.tp), CL_HELLO_STRIPE, 5, &rc);
    CHECK(s != NULL);
    CHECK(banned(&r2, &h2));
    if (s != NULL) {
        void *item = s;
        tp_out_link_free(&item);
    }

    /* A FENCE that counts what never comes, then a flood behind it: held
       up to HOLD_MSGS messages, then banned and the hold freed. */
    static peer_t r3, h3;
    CHECK(peer_init(&r3, 1, 0) && peer_init(&h3, 1, 0));
    CHECK(connect_up(&h3, &r3));
    l = tp_outbound_of(h3.tp, key_of(&r3));
    if (l != NULL) {
        cl_wire_msg_t f;
        memset(&f, 0, sizeof f);
        f.hdr.type = CL_MSG_FENCE;
        f.hdr.seq = 1000000;
        CHECK(raw_on(&h3, l, &f));
        for (int i = 0; i <= HOLD_MSGS && r3.tp->held_bytes < HOLD_BYTES; i++) {
            cl_wire_msg_t m;
            memset(&m, 0, sizeof m);
            m.hdr.type = CL_MSG_HEARTBEAT;
            m.u.heartbeat.epoch = 1;
            CHECK(raw_on(&h3, l, &m));
            if (i % 1024 == 0)
                pump();
        }
    }
    CHECK(banned(&r3, &h3));
    CHECK(r3.hbs == 0); /* nothing behind the FENCE was handed on */
    CHECK(r3.tp->held_bytes == 0);
    for (in_link_t *in = zhashx_first(r3.tp->in_by_rid); in != NULL;
         in = zhashx_next(r3.tp->in_by_rid))
        CHECK(in->held == NULL && in->held_msgs == 0);
}

/* ZeroMQ's I/O threads of this process (named ZMQbg/IO/<n>). */
static int io_threads(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e = d != NULL ? readdir(d) : NULL; e != NULL; e = readdir(d)) {
        char path[300], comm[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fgets(comm, sizeof comm, f) != NULL && strncmp(comm, "ZMQbg/IO/", 9) == 0)
            n++;
        fclose(f);
    }
    if (d != NULL)
        closedir(d);
    return n;
}

int main(void)
{
    zsys_handler_set(NULL);
    /* Striping spreads encryption over cores: set before the first
       socket, as the engine does, the process gets as many I/O threads
       as stripes, within 4 and its CPUs. */
    unsetenv("ZSYS_IO_THREADS");
    cl_transport_io_threads(4);
    test_order();
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int want = cpus > 0 && cpus < TP_IO_THREADS_MAX ? (int)cpus : TP_IO_THREADS_MAX;
    fprintf(stderr, "[test] %d ZeroMQ I/O threads (%ld CPUs)\n", io_threads(), cpus);
    CHECK(io_threads() == want);
    test_old_peer();
    test_hostile();
    for (int i = 0; i < s_npeers; i++) {
        cl_transport_destroy(&s_peers[i]->tp, 0);
        cl_identity_destroy(&s_peers[i]->id);
    }
    if (s_failures > 0) {
        fprintf(stderr, "cl_stripe_test: %d failures\n", s_failures);
        return 1;
    }
    printf("cl_stripe_test: ok\n");
    return 0;
}
