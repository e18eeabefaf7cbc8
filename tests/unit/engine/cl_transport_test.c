/*  cl_transport_test.c - selftest of links, handshake and paths over loopback.

    Several transports in one process (the first one serves ZAP for all):
    public-to-public links both ways, a client-mode peer reached through
    the ROUTER, a peer with the wrong swarm key, a peer of another run, a
    raw client of protocol version 1 (refused with VERSION), a raw
    CurveZMQ client sending garbage (dropped, counted, banned), one sending
    well-formed messages without a handshake (dropped, counted, not
    banned), a
    closed connection reported at once, and a client whose WELCOME came
    after the server forgot the handshake (it was not polled: stopped)
    starting it over on a new connection, and one that sent nothing on its
    link for longer than the server keeps a silent one starting a new
    handshake before it sends, and a server whose sweep came late keeping
    an unfinished handshake.  Every wait has a deadline.
*/
#include "engine/cl_transport.h"

#include "engine/cl_handshake.h"
#include "engine/cl_transport_int.h" /* the sockets' options */
#include "mpi_collab.h"
#include "util/cl_identity.h"
#include "util/cl_secret.h"

#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "selftest.h"

typedef struct {
    const char *name;
    cl_identity_t *id;
    cl_transport_t *tp;
    int up_in, up_out, down, refused, refuse_reason, msgs;
    char refuse_text[1200]; /* the last REFUSED event's text */
    uint64_t last_progress;
    uint8_t last_from[32];
    uint8_t secret[32]; /* the swarm secret of its key */
    bool last_client;
} node_t;

static void handler(void *ctx, const cl_tp_event_t *ev)
{
    node_t *n = ctx;
    switch (ev->kind) {
    case CL_TP_UP:
        if (ev->inbound) {
            n->up_in++;
            n->last_client = ev->client;
        } else {
            n->up_out++;
        }
        memcpy(n->last_from, ev->key, 32);
        break;
    case CL_TP_DOWN:
        n->down++;
        memcpy(n->last_from, ev->key, 32);
        break;
    case CL_TP_REFUSED:
        n->refused++;
        n->refuse_reason = ev->reason;
        snprintf(n->refuse_text, sizeof n->refuse_text, "%s", ev->text != NULL ? ev->text : "");
        break;
    case CL_TP_MESSAGE:
        n->msgs++;
        memcpy(n->last_from, ev->key, 32);
        if (ev->msg->hdr.type == CL_MSG_HEARTBEAT)
            n->last_progress = ev->msg->u.heartbeat.progress;
        break;
    }
}

static node_t *s_nodes[16];
static int s_nnodes = 0;

static void pump_once(void)
{
    for (int i = 0; i < s_nnodes; i++)
        if (s_nodes[i]->tp != NULL)
            cl_transport_poll(s_nodes[i]->tp, NULL, 0, 5, handler, s_nodes[i]);
}

/* Polls every node until *flag >= want or 5 s pass. */
static bool pump_until(int *flag, int want)
{
    int64_t end = zclock_mono() + 5000;
    while (*flag < want && zclock_mono() < end)
        pump_once();
    return *flag >= want;
}

/* Polls only zap (the node serving ZAP) and server, every other node
   standing still as if stopped, until server holds an unfinished
   handshake (it answered a HELLO) or 5 s pass. */
static bool serve_hello(node_t *zap, node_t *server)
{
    int64_t end = zclock_mono() + 5000;
    while (server->tp->npending == 0 && zclock_mono() < end) {
        cl_transport_poll(zap->tp, NULL, 0, 5, handler, zap);
        cl_transport_poll(server->tp, NULL, 0, 5, handler, server);
    }
    return server->tp->npending > 0;
}

static int s_max_version; /* of the next node_init (0: this code's) */
static size_t s_rcv_hwm;  /* of the next node_init (0: none) */
static double s_keep;     /* handshake_keep of the next node_init (0: the default) */
static double s_idle;     /* link_idle of the next node_init (0: the default) */

static bool node_init(node_t *n, const char *name, bool client, const char *run, const char *key)
{
    memset(n, 0, sizeof *n);
    n->name = name;
    if (key != NULL)
        cl_secret_from_key(key, strlen(key), n->secret);
    char err[256];
    n->id = cl_identity_new(NULL, err, sizeof err);
    if (n->id == NULL) {
        fprintf(stderr, "identity: %s\n", err);
        return false;
    }
    cl_transport_config_t cfg = {.identity = n->id,
                                 .listen = "/ip4/127.0.0.1/tcp/0",
                                 .client_mode = client,
                                 .run_id = run,
                                 .swarm_secret = key != NULL ? n->secret : NULL,
                                 .ban_seconds = 30,
                                 .max_version = s_max_version,
                                 .rcv_hwm = s_rcv_hwm,
                                 .handshake_keep = s_keep,
                                 .link_idle = s_idle};
    n->tp = cl_transport_new(&cfg, err, sizeof err);
    if (n->tp == NULL) {
        fprintf(stderr, "transport %s: %s\n", name, err);
        return false;
    }
    s_nodes[s_nnodes++] = n;
    return true;
}

/* A server and a client of run1, both with handshake_keep keep and
   link_idle idle (0: the defaults), the client's link to the server
   opened. */
static void connected_pair(node_t *srv, const char *sname, node_t *cli, const char *cname,
                           double keep, double idle)
{
    s_keep = keep;
    s_idle = idle;
    CHECK(node_init(srv, sname, false, "run1", "secret"));
    CHECK(node_init(cli, cname, false, "run1", "secret"));
    s_keep = 0;
    s_idle = 0;
    CHECK(cl_transport_connect(cli->tp, cl_identity_public_key(srv->id),
                               cl_transport_address(srv->tp)) == 0);
}

static int send_hb(node_t *from, node_t *to, uint64_t progress)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_HEARTBEAT;
    m.u.heartbeat.epoch = 1;
    m.u.heartbeat.progress = progress;
    return cl_transport_send(from->tp, cl_identity_public_key(to->id), &m);
}

/* A raw CurveZMQ DEALER (its own throw-away key) connected to n's
   listening port: a client that does not run our handshake. */
static zsock_t *raw_client(node_t *n, zcert_t **cert)
{
    *cert = zcert_new();
    zsock_t *z = zsock_new(ZMQ_DEALER);
    zcert_apply(*cert, z);
    zsock_set_curve_serverkey_bin(z, cl_identity_public_key(n->id));
    const char *addr = cl_transport_address(n->tp);
    zsock_connect(z, "tcp://127.0.0.1:%d", atoi(strstr(addr, "/tcp/") + 5));
    return z;
}

/* Encodes m as given (version and run included) and sends it on z. */
static bool send_raw(zsock_t *z, cl_wire_msg_t *m)
{
    uint8_t *body = NULL;
    size_t blen = 0;
    if (cl_wire_encode_body(m, &body, &blen) != CL_WIRE_OK)
        return false;
    m->hdr.length = blen;
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    cl_wire_hdr_encode(&m->hdr, hdr);
    zmsg_t *zm = zmsg_new();
    zmsg_addmem(zm, hdr, sizeof hdr);
    zmsg_addmem(zm, body, blen);
    int rc = zmsg_send(&zm, z);
    free(body);
    return rc == 0;
}

int main(void)
{
    zsys_handler_set(NULL);
    static node_t a, b, c, d, e;
    CHECK(node_init(&a, "a", false, "run1", "secret"));
    CHECK(node_init(&b, "b", false, "run1", "secret"));
    CHECK(node_init(&c, "c", true, "run1", "secret"));
    CHECK(s_failures == 0);
    if (s_failures > 0)
        return 1;
    CHECK(strstr(cl_transport_address(a.tp), "/ip4/127.0.0.1/tcp/") != NULL);
    CHECK(strstr(cl_transport_address(a.tp), cl_identity_peer_id(a.id)) != NULL);
    CHECK(strcmp(cl_transport_address(c.tp), "") == 0);

    /* b -> a: messages sent before the handshake wait, in order. */
    CHECK(cl_transport_connect(b.tp, cl_identity_public_key(a.id), cl_transport_address(a.tp)) ==
          0);
    CHECK(send_hb(&b, &a, 1) == 0);
    CHECK(send_hb(&b, &a, 2) == 0);
    CHECK(pump_until(&a.msgs, 2));
    CHECK(a.up_in == 1 && b.up_out == 1 && !a.last_client);
    CHECK(a.last_progress == 2);
    CHECK(memcmp(a.last_from, cl_identity_public_key(b.id), 32) == 0);

    /* a -> b: a learnt b's address from its HELLO and opens its own link. */
    CHECK(send_hb(&a, &b, 7) == 0);
    CHECK(pump_until(&b.msgs, 1));
    CHECK(b.last_progress == 7 && a.up_out == 1 && b.up_in == 1);

    /* Client mode: c reaches a over its DEALER, a answers over its ROUTER. */
    CHECK(send_hb(&a, &c, 1) == COLLAB_ERR_PROC_FAILED); /* no path yet */
    CHECK(cl_transport_connect(c.tp, cl_identity_public_key(a.id), cl_transport_address(a.tp)) ==
          0);
    CHECK(send_hb(&c, &a, 3) == 0);
    CHECK(pump_until(&a.msgs, 3));
    CHECK(a.last_client && a.last_progress == 3);
    CHECK(send_hb(&a, &c, 9) == 0);
    CHECK(pump_until(&c.msgs, 1));
    CHECK(c.last_progress == 9);
    CHECK(!cl_transport_has_link(a.tp, cl_identity_public_key(c.id)));

    /* Wrong swarm key: a refuses d's proof; d refuses a's first. */
    CHECK(node_init(&d, "d", false, "run1", "other"));
    CHECK(cl_transport_connect(d.tp, cl_identity_public_key(a.id), cl_transport_address(a.tp)) ==
          0);
    CHECK(send_hb(&d, &a, 5) == 0);
    CHECK(pump_until(&d.refused, 1));
    CHECK(d.refuse_reason == CL_REFUSE_AUTH);
    for (int i = 0; i < 20; i++)
        pump_once();
    CHECK(a.last_progress != 5);

    /* Another run: refused with reason RUN. */
    CHECK(node_init(&e, "e", false, "run2", "secret"));
    CHECK(cl_transport_connect(e.tp, cl_identity_public_key(a.id), cl_transport_address(a.tp)) ==
          0);
    CHECK(pump_until(&e.refused, 1));
    CHECK(e.refuse_reason == CL_REFUSE_RUN);

    /* A well-formed message of this run on a connection without a
       handshake (one this side forgot while the sender's socket stayed
       connected) is dropped and counted, but its sender is not banned:
       the second one is counted too. */
    {
        uint64_t stale0 = cl_transport_malformed(a.tp);
        zcert_t *scert;
        zsock_t *stale = raw_client(&a, &scert);
        int am = a.msgs;
        for (int k = 0; k < 2; k++) {
            cl_wire_msg_t hb;
            memset(&hb, 0, sizeof hb);
            hb.hdr.type = CL_MSG_HEARTBEAT;
            hb.hdr.version = CL_WIRE_VERSION;
            hb.hdr.run = cl_wire_run_hash("run1");
            hb.u.heartbeat.epoch = 1;
            hb.u.heartbeat.progress = 40 + (uint64_t)k;
            CHECK(send_raw(stale, &hb));
            int64_t until = zclock_mono() + 5000;
            while (cl_transport_malformed(a.tp) < stale0 + (uint64_t)k + 1 &&
                   zclock_mono() < until)
                pump_once();
        }
        CHECK(cl_transport_malformed(a.tp) == stale0 + 2);
        CHECK(a.msgs == am);
        zsock_destroy(&stale);
        zcert_destroy(&scert);
    }

    /* A raw client that speaks only version 1 (older JOIN and VIEW
       layouts) gets REFUSE VERSION with this peer's range, and is not
       counted as malformed. */
    uint64_t bad0 = cl_transport_malformed(a.tp);
    {
        zcert_t *old;
        zsock_t *v1 = raw_client(&a, &old);
        zsock_set_rcvtimeo(v1, 5);
        cl_wire_msg_t hm;
        memset(&hm, 0, sizeof hm);
        hm.hdr.version = 1;
        hm.hdr.type = CL_MSG_HELLO;
        hm.hdr.run = cl_wire_run_hash("run1");
        hm.u.hello.max_version = 1;
        hm.u.hello.min_version = 1;
        memcpy(hm.u.hello.key, zcert_public_key(old), 32);
        CHECK(send_raw(v1, &hm));
        zmsg_t *in = NULL;
        int64_t end = zclock_mono() + 5000;
        while (in == NULL && zclock_mono() < end) {
            pump_once();
            in = zmsg_recv(v1);
        }
        CHECK(in != NULL && zmsg_size(in) == 2);
        if (in != NULL && zmsg_size(in) == 2) {
            zframe_t *f1 = zmsg_first(in), *f2 = zmsg_next(in);
            cl_wire_msg_t r;
            CHECK(cl_wire_decode(zframe_data(f1), zframe_size(f1), zframe_data(f2),
                                 zframe_size(f2), &r) == CL_WIRE_OK);
            CHECK(r.hdr.type == CL_MSG_REFUSE && r.u.refuse.reason == CL_REFUSE_VERSION);
            CHECK(r.u.refuse.min_version == CL_WIRE_MIN_VERSION &&
                  r.u.refuse.max_version == CL_WIRE_VERSION);
            cl_wire_msg_clear(&r);
        }
        zmsg_destroy(&in);
        CHECK(cl_transport_malformed(a.tp) == bad0);
        zsock_destroy(&v1);
        zcert_destroy(&old);
    }

    /* Garbage from a raw CurveZMQ client: dropped, counted, sender banned. */
    zcert_t *cert;
    zsock_t *raw = raw_client(&a, &cert);
    zstr_sendx(raw, "garbage", "more", NULL);
    int64_t end = zclock_mono() + 5000;
    while (cl_transport_malformed(a.tp) == bad0 && zclock_mono() < end)
        pump_once();
    CHECK(cl_transport_malformed(a.tp) == bad0 + 1);
    /* A valid-looking header with a bad body is malformed too, but the
       sender is banned now: nothing more is counted from it. */
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    cl_wire_hdr_t h = {.version = CL_WIRE_VERSION, .type = CL_MSG_HEARTBEAT, .length = 3};
    cl_wire_hdr_encode(&h, hdr);
    zmsg_t *zm = zmsg_new();
    zmsg_addmem(zm, hdr, sizeof hdr);
    zmsg_addmem(zm, "abc", 3);
    zmsg_send(&zm, raw);
    for (int i = 0; i < 20; i++)
        pump_once();
    CHECK(cl_transport_malformed(a.tp) == bad0 + 1);
    zsock_destroy(&raw);
    zcert_destroy(&cert);

    /* A closed connection is reported at once: destroy b; a's link to b
       goes down. */
    int down0 = a.down;
    cl_transport_destroy(&b.tp, 0);
    CHECK(pump_until(&a.down, down0 + 1));
    CHECK(memcmp(a.last_from, cl_identity_public_key(b.id), 32) == 0);
    CHECK(!cl_transport_has_link(a.tp, cl_identity_public_key(b.id)));

    /* Banning by hand drops messages. */
    cl_transport_ban(a.tp, cl_identity_public_key(c.id), 30);
    int m0 = a.msgs;
    CHECK(send_hb(&c, &a, 11) == 0);
    for (int i = 0; i < 20; i++)
        pump_once();
    CHECK(a.msgs == m0);

    /* Handshake helpers. */
    uint8_t k1[32], k2[32], k3[32], mac[32], ck[32] = {1}, sk[32] = {2}, cn[32] = {3},
                                                sn[32] = {4};
    uint8_t sx[32], sy[32], k0[32];
    cl_secret_from_key("x", 1, sx);
    cl_secret_from_key("y", 1, sy);
    cl_hs_derive(sx, "run", k1);
    cl_hs_derive(sy, "run", k2);
    cl_hs_derive(sx, "other", k3);
    cl_hs_derive(NULL, "run", k0);
    CHECK(memcmp(k1, k2, 32) != 0 && memcmp(k1, k3, 32) != 0 && memcmp(k0, k1, 32) != 0);
    cl_hs_mac(k1, "AUTH", ck, sk, cn, sn, mac);
    CHECK(cl_hs_verify(k1, "AUTH", ck, sk, cn, sn, mac));
    CHECK(!cl_hs_verify(k2, "AUTH", ck, sk, cn, sn, mac));
    CHECK(!cl_hs_verify(k1, "WELCOME", ck, sk, cn, sn, mac));
    sn[0] ^= 1;
    CHECK(!cl_hs_verify(k1, "AUTH", ck, sk, cn, sn, mac));
    CHECK(cl_hs_pick_version(1, 1, 1, 3) == 1);
    CHECK(cl_hs_pick_version(1, 4, 2, 3) == 3);
    CHECK(cl_hs_pick_version(1, 1, 2, 3) == 0);

    /* The version of a link (docs/wire.md section 5): the highest both
       offer.  a and c speak 6 (c reaches a over its own connection);
       f offers at most 5 (COLLAB_WIRE_VERSION=5) and a link with it is
       version 5, both ways. */
    static node_t f;
    CHECK(cl_transport_link_version(a.tp, cl_identity_public_key(c.id)) == CL_WIRE_VERSION);
    CHECK(cl_transport_link_version(c.tp, cl_identity_public_key(a.id)) == CL_WIRE_VERSION);
    /* The upload (cl_transport_upload) is not measured on loopback: c's
       link to a carried messages, and nothing is counted. */
    uint64_t up_acked = 1, up_sent = 1;
    bool up_busy = true;
    cl_transport_upload(c.tp, 1.0, &up_acked, &up_sent, &up_busy);
    cl_transport_upload(c.tp, 1.1, &up_acked, &up_sent, &up_busy);
    CHECK(up_acked == 0 && up_sent == 0 && !up_busy);
    s_max_version = 5;
    s_rcv_hwm = 1234;
    CHECK(node_init(&f, "f", false, "run1", "secret"));
    s_max_version = 0;
    s_rcv_hwm = 0;
    /* The receive high-water mark (docs/wire.md section 10) is on every
       socket: the listening one and each outbound link. */
    CHECK(zsock_rcvhwm(f.tp->router) == 1234 && zsock_sndhwm(f.tp->router) == 0);
    CHECK(zsock_rcvhwm(a.tp->router) == 0);
    CHECK(cl_transport_link_version(f.tp, cl_identity_public_key(a.id)) == 0); /* no link yet */
    CHECK(cl_transport_connect(f.tp, cl_identity_public_key(a.id), cl_transport_address(a.tp)) ==
          0);
    int amsgs = a.msgs;
    CHECK(send_hb(&f, &a, 11) == 0);
    CHECK(pump_until(&a.msgs, amsgs + 1));
    CHECK(a.last_progress == 11);
    CHECK(cl_transport_link_version(f.tp, cl_identity_public_key(a.id)) == 5);
    {
        out_link_t *l = tp_outbound_of(f.tp, cl_identity_public_key(a.id));
        CHECK(l != NULL && zsock_rcvhwm(l->dealer) == 1234);
    }
    CHECK(cl_transport_link_version(a.tp, cl_identity_public_key(f.id)) == 5);

    /* A swarm setting that needs a version (adaptive compression, wire
       version 8) raises a's lowest version for handshakes from then on:
       g, which speaks at most 7, is refused with VERSION; the link with f,
       made before, stays; a lower minimum later changes nothing. */
    static node_t g;
    cl_transport_set_min_version(a.tp, 8, "adaptive compression");
    cl_transport_set_min_version(a.tp, 6, NULL);
    s_max_version = 7;
    CHECK(node_init(&g, "g", false, "run1", "secret"));
    s_max_version = 0;
    CHECK(cl_transport_connect(g.tp, cl_identity_public_key(a.id), cl_transport_address(a.tp)) ==
          0);
    CHECK(pump_until(&g.refused, 1));
    CHECK(g.refuse_reason == CL_REFUSE_VERSION);
    /* the refusal says which setting needs the version */
    char range[32];
    snprintf(range, sizeof range, "8..%d", CL_WIRE_VERSION);
    CHECK(strstr(g.refuse_text, range) != NULL &&
          strstr(g.refuse_text, "adaptive compression") != NULL);
    CHECK(cl_transport_link_version(g.tp, cl_identity_public_key(a.id)) == 0);
    amsgs = a.msgs;
    CHECK(send_hb(&f, &a, 12) == 0);
    CHECK(pump_until(&a.msgs, amsgs + 1) && a.last_progress == 12);

    /* What a peer speaks is remembered once its links are gone: f drops
       its only link to a. */
    CHECK(cl_transport_peer_version(f.tp, cl_identity_public_key(a.id)) == 5);
    CHECK(cl_transport_peer_version(a.tp, cl_identity_public_key(c.id)) == CL_WIRE_VERSION);
    cl_transport_drop(f.tp, cl_identity_public_key(a.id));
    CHECK(cl_transport_link_version(f.tp, cl_identity_public_key(a.id)) == 0);
    CHECK(cl_transport_peer_version(f.tp, cl_identity_public_key(a.id)) == 5);
    CHECK(cl_transport_peer_version(g.tp, cl_identity_public_key(a.id)) == 0); /* refused */

    /* A peer that did not run between its HELLO and the server's WELCOME
       for longer than the server keeps an unfinished handshake (stopped
       by SIGSTOP, say): the server forgot it, so an AUTH now would leave
       the link up on the client's side only, and every message on it
       dropped at the server.  The client starts the handshake over on a
       new connection instead; what it queued arrives.  hs keeps
       handshakes 1 s: it answers the HELLO while hc (the client) is not
       polled, then a sweep 2 s on forgets the handshake, and hc's link
       dates from 1 s before (more than half the keep) when hc runs. */
    static node_t hs, hc;
    connected_pair(&hs, "hs", &hc, "hc", 1.0, 0);
    CHECK(send_hb(&hc, &hs, 21) == 0);
    CHECK(serve_hello(&a, &hs));
    hs.tp->last_sweep = 0;
    tp_sweep(hs.tp, tp_now() + 2.0);
    CHECK(hs.tp->npending == 0);
    tp_outbound_of(hc.tp, cl_identity_public_key(hs.id))->started -= 1.0;
    CHECK(hs.msgs == 0 && hs.up_in == 0);
    CHECK(send_hb(&hc, &hs, 22) == 0);
    CHECK(pump_until(&hs.msgs, 2));
    CHECK(hs.last_progress == 22 && hs.up_in == 1 && hc.up_out == 1 && hc.down == 0);

    /* The same after the handshake: a client that sent nothing on its
       link for longer than the server keeps a silent inbound link
       (link_idle, 1 s here) starts a new handshake before it sends, since
       the server forgot the connection (a sweep 2 s on; the client's last
       send dates from 1 s before, more than half of link_idle). */
    static node_t js, jc;
    connected_pair(&js, "js", &jc, "jc", 0, 1.0);
    CHECK(send_hb(&jc, &js, 31) == 0);
    CHECK(pump_until(&js.msgs, 1));
    js.tp->last_sweep = 0;
    tp_sweep(js.tp, tp_now() + 2.0);
    CHECK(tp_inbound_of(js.tp, cl_identity_public_key(jc.id)) == NULL);
    tp_outbound_of(jc.tp, cl_identity_public_key(js.id))->last_tx -= 1.0;
    CHECK(send_hb(&jc, &js, 32) == 0);
    CHECK(pump_until(&js.msgs, 2));
    CHECK(js.last_progress == 32 && js.up_in == 2 && jc.down == 0);

    /* The server's side: time it did not run does not count against an
       unfinished handshake.  A raw client's HELLO is answered; the
       handshake then dates from 1.3 s before, longer than the server
       keeps one (1 s), as after a stop, and the next sweep comes 3 s
       late: the handshake is kept (its AUTH may be waiting in the
       socket).  A sweep that is not late forgets it once it is older than
       1 s of running time. */
    static node_t ks;
    s_keep = 1.0;
    CHECK(node_init(&ks, "ks", false, "run1", "secret"));
    s_keep = 0;
    {
        zcert_t *kcert;
        zsock_t *kraw = raw_client(&ks, &kcert);
        cl_wire_msg_t hm;
        memset(&hm, 0, sizeof hm);
        hm.hdr.version = CL_WIRE_VERSION;
        hm.hdr.type = CL_MSG_HELLO;
        hm.hdr.run = cl_wire_run_hash("run1");
        hm.u.hello.max_version = CL_WIRE_VERSION;
        hm.u.hello.min_version = CL_WIRE_MIN_VERSION;
        memcpy(hm.u.hello.key, zcert_public_key(kcert), 32);
        CHECK(send_raw(kraw, &hm));
        CHECK(serve_hello(&a, &ks));
        in_link_t *held = zhashx_first(ks.tp->in_by_rid);
        CHECK(held != NULL && held->state == IL_AUTH_WAIT);
        if (held != NULL)
            held->created -= 1.3;
        double t = tp_now();
        ks.tp->last_sweep = t - SWEEP_EVERY - 3.0;
        tp_sweep(ks.tp, t);
        CHECK(ks.tp->npending == 1);
        t += 10.0;
        ks.tp->last_sweep = t - SWEEP_EVERY - 0.5;
        tp_sweep(ks.tp, t);
        CHECK(ks.tp->npending == 0);
        zsock_destroy(&kraw);
        zcert_destroy(&kcert);
    }

    node_t *all[] = {&a, &b, &c, &d, &e, &f, &g, &hs, &hc, &js, &jc, &ks};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        cl_transport_destroy(&all[i]->tp, 0);
        cl_identity_destroy(&all[i]->id);
    }
    if (s_failures > 0) {
        fprintf(stderr, "cl_transport_test: %d failures\n", s_failures);
        return 1;
    }
    printf("cl_transport_test: ok\n");
    return 0;
}
