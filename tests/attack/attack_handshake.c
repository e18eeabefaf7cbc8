/*  attack_handshake.c - raw CurveZMQ clients against a peer's handshake
    resources.  Scenarios of the attack program (attack.c):
      prehs       a CurveZMQ client that never sends HELLO sends 100
                  messages of 3 frames x 1 MiB.  Old: the victim's RSS grew
                  by ~200 MiB and kept it.  Now: < 16 MiB.
      conntable   4100 fresh keys complete the handshake and disconnect.
                  Old: the victim refused every new peer with BUSY for
                  good.  Now: a real peer joins afterwards.
      hellos      4100 fresh keys from 127.0.0.2 send HELLO and leave
                  without AUTH.  Old: the table of unfinished handshakes
                  was full for 60 s and a real joiner from 127.0.0.1 gave
                  up after 30 s.  Now: it joins at once.
*/
#include "attack.h"
#include "engine/cl_handshake.h"

#include <czmq.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

/* A raw CurveZMQ DEALER with a fresh key, connected to peer i from the
   loopback address `from` (NULL: the default): a client that runs the
   encryption but not (yet) our handshake. */
static zsock_t *raw_client_from(int i, zcert_t **cert, const char *from);
static zsock_t *raw_client(int i, zcert_t **cert)
{
    return raw_client_from(i, cert, NULL);
}

static zsock_t *raw_client_from(int i, zcert_t **cert, const char *from)
{
    *cert = zcert_new();
    zsock_t *z = zsock_new(ZMQ_DEALER);
    if (z == NULL)
        return NULL;
    zcert_apply(*cert, z);
    uint8_t key[32];
    peer_key(i, key);
    zsock_set_curve_serverkey_bin(z, key);
    zsock_set_linger(z, 0);
    if (from != NULL)
        zsock_connect(z, "tcp://%s:0;127.0.0.1:%d", from, s_port[i]);
    else
        zsock_connect(z, "tcp://127.0.0.1:%d", s_port[i]);
    return z;
}

static bool send_msg(zsock_t *z, cl_wire_msg_t *m)
{
    uint8_t *body = NULL;
    size_t blen = 0;
    m->hdr.version = CL_WIRE_VERSION;
    m->hdr.run = cl_wire_run_hash(s_run);
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

int sc_prehs(void)
{
    s_alive_after = 0x1u;
    prepare("prehs", 1);
    spawn(0, 1, 0u, harness_peer_main);
    CHECK(wait_ready(1, 60));
    long before = rss_kib(s_pid[0]);
    zcert_t *cert;
    zsock_t *z = raw_client(0, &cert);
    size_t big = (size_t)1 << 20;
    uint8_t *buf = calloc(1, big);
    for (int k = 0; k < 100 && buf != NULL; k++) {
        zmsg_t *zm = zmsg_new();
        for (int f = 0; f < 3; f++)
            zmsg_addmem(zm, buf, big);
        zmsg_send(&zm, z);
    }
    free(buf);
    /* A HELLO on the same connection: its WELCOME comes back only once
       the victim has read everything before it. */
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_HELLO;
    m.u.hello.max_version = CL_WIRE_VERSION;
    m.u.hello.min_version = CL_WIRE_MIN_VERSION;
    memcpy(m.u.hello.key, zcert_public_key(cert), 32);
    randombytes_buf(m.u.hello.nonce, 32);
    m.u.hello.flags = CL_HELLO_CLIENT;
    CHECK(send_msg(z, &m));
    zsock_set_rcvtimeo(z, 60000);
    zmsg_t *r = zmsg_recv(z);
    CHECK(r != NULL);
    zmsg_destroy(&r);
    zsock_destroy(&z);
    zcert_destroy(&cert);
    long after = rss_kib(s_pid[0]);
    fprintf(stderr,
            "[attack] victim RSS %ld KiB before, %ld KiB after 100 x 3 x 1 MiB "
            "without HELLO (+%ld KiB)\n",
            before, after, after - before);
#if defined(__SANITIZE_ADDRESS__)
    /* ASan's quarantine keeps freed memory resident: the bound means
       nothing here; the run still checks that nothing leaks or overflows. */
    fprintf(stderr, "[attack] (built with ASan: the RSS bound is not checked)\n");
#else
    CHECK(before > 0 && after > 0 && after - before < 16 * 1024);
#endif
    go(1);
    return reap(0x1u, 30);
}

/* One raw client that completes the handshake of docs/wire.md with a
   fresh key; true when the server accepted its AUTH (no REFUSE). */
typedef struct {
    zsock_t *z;
    zcert_t *cert;
    uint8_t nonce[32];
    int state; /* 0 HELLO sent, 1 AUTH sent, 2 refused */
} hs_client_t;

int sc_conntable(void)
{
    int nkeys = getenv("ATTACK_KEYS") != NULL ? atoi(getenv("ATTACK_KEYS")) : 4100;
    s_alive_after = 0x3u;
    prepare("conntable", 2);
    spawn(0, 2, 0u, harness_peer_main);
    spawn_held(1, 2, 0x1u, harness_peer_main); /* before this process uses ZeroMQ */
    uint8_t k[32], server[32];
    cl_hs_derive(NULL, s_run, k);
    peer_key(0, server);
    int done = 0, refused = 0, batch = 50;
    double t0 = now_s();
    while (done + refused < nkeys) {
        hs_client_t c[100];
        int nb = nkeys - done - refused < batch ? nkeys - done - refused : batch;
        for (int j = 0; j < nb; j++) {
            c[j].z = raw_client(0, &c[j].cert);
            c[j].state = 0;
            cl_wire_msg_t m;
            memset(&m, 0, sizeof m);
            m.hdr.type = CL_MSG_HELLO;
            m.u.hello.max_version = CL_WIRE_VERSION;
            m.u.hello.min_version = CL_WIRE_MIN_VERSION;
            memcpy(m.u.hello.key, zcert_public_key(c[j].cert), 32);
            randombytes_buf(c[j].nonce, 32);
            memcpy(m.u.hello.nonce, c[j].nonce, 32);
            m.u.hello.flags = CL_HELLO_CLIENT;
            CHECK(send_msg(c[j].z, &m));
        }
        for (int j = 0; j < nb; j++) {
            zsock_set_rcvtimeo(c[j].z, 10000);
            zmsg_t *r = zmsg_recv(c[j].z);
            cl_wire_msg_t w;
            if (r == NULL || zmsg_size(r) != 2) {
                zmsg_destroy(&r);
                c[j].state = 2;
                continue;
            }
            zframe_t *h = zmsg_first(r), *b = zmsg_next(r);
            if (cl_wire_decode(zframe_data(h), zframe_size(h), zframe_data(b), zframe_size(b),
                               &w) != CL_WIRE_OK ||
                w.hdr.type != CL_MSG_WELCOME) {
                zmsg_destroy(&r);
                c[j].state = 2;
                continue;
            }
            cl_wire_msg_t au;
            memset(&au, 0, sizeof au);
            au.hdr.type = CL_MSG_AUTH;
            cl_hs_mac(k, "AUTH", zcert_public_key(c[j].cert), server, c[j].nonce, w.u.welcome.nonce,
                      au.u.auth.mac);
            cl_wire_msg_clear(&w);
            zmsg_destroy(&r);
            CHECK(send_msg(c[j].z, &au));
            c[j].state = 1;
        }
        for (int j = 0; j < nb; j++) {
            if (c[j].state == 1)
                done++;
            else
                refused++;
            zsock_destroy(&c[j].z);
            zcert_destroy(&c[j].cert);
        }
    }
    fprintf(stderr,
            "[attack] %d keys completed the handshake and disconnected, %d refused "
            "(%.1f s)\n",
            done, refused, now_s() - t0);
    /* Now a real peer joins through the victim. */
    release(1);
    CHECK(wait_ready(2, 60));
    go(2);
    return reap(0x3u, 60);
}

/* HELLO-only flood from 127.0.0.2: 4100 fresh keys send HELLO, read the
   WELCOME and leave without AUTH; then a real peer (from 127.0.0.1) joins
   through the victim. */
int sc_hellos(void)
{
    s_alive_after = 0x3u;
    prepare("hellos", 2);
    spawn(0, 2, 0u, harness_peer_main);
    spawn_held(1, 2, 0x1u, harness_peer_main); /* before this process uses ZeroMQ */
    int nkeys = getenv("ATTACK_KEYS") != NULL ? atoi(getenv("ATTACK_KEYS")) : 4100;
    int welcomed = 0, busy = 0;
    double t0 = now_s();
    for (int done = 0; done < nkeys;) {
        zsock_t *z[100];
        zcert_t *c[100];
        int nb = nkeys - done < 100 ? nkeys - done : 100;
        for (int j = 0; j < nb; j++) {
            z[j] = raw_client_from(0, &c[j], "127.0.0.2");
            cl_wire_msg_t m;
            memset(&m, 0, sizeof m);
            m.hdr.type = CL_MSG_HELLO;
            m.u.hello.max_version = CL_WIRE_VERSION;
            m.u.hello.min_version = CL_WIRE_MIN_VERSION;
            memcpy(m.u.hello.key, zcert_public_key(c[j]), 32);
            randombytes_buf(m.u.hello.nonce, 32);
            m.u.hello.flags = CL_HELLO_CLIENT;
            CHECK(send_msg(z[j], &m));
        }
        for (int j = 0; j < nb; j++) {
            zsock_set_rcvtimeo(z[j], 10000);
            zmsg_t *r = zmsg_recv(z[j]);
            cl_wire_msg_t w;
            if (r != NULL && zmsg_size(r) == 2) {
                zframe_t *h = zmsg_first(r), *b = zmsg_next(r);
                if (cl_wire_decode(zframe_data(h), zframe_size(h), zframe_data(b), zframe_size(b),
                                   &w) == CL_WIRE_OK) {
                    welcomed += w.hdr.type == CL_MSG_WELCOME;
                    busy += w.hdr.type == CL_MSG_REFUSE;
                    cl_wire_msg_clear(&w);
                }
            }
            zmsg_destroy(&r);
            zsock_destroy(&z[j]);
            zcert_destroy(&c[j]);
        }
        done += nb;
    }
    fprintf(stderr,
            "[attack] %d HELLO-only keys from 127.0.0.2: %d welcomed, %d refused "
            "(%.1f s)\n",
            nkeys, welcomed, busy, now_s() - t0);
    CHECK(welcomed + busy == nkeys); /* the flood reached the victim */
    release(1);
    CHECK(wait_ready(2, 60));
    go(2);
    return reap(0x3u, 60);
}
