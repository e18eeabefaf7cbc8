/*  fuzz_handshake.c - fuzz target for the transport's handshake
    (docs/wire.md section 4: HELLO, WELCOME, AUTH, REFUSE; the connection
    caps of docs/security.md section 5).

    One real transport (cl_transport_new: a ROUTER listening on loopback,
    the ZAP handler) lives for the whole process; each input plays a
    sequence of steps against it, then every link, ban and counter is
    reset, so that an input means the same thing whenever it runs.

    Byte 0 chooses the swarm: odd bytes make it closed, with a key derived
    from a passphrase (the next 8..39 input bytes) by cl_secret with
    Argon2id stubbed (cl_secret_stub_kdf_for_fuzzing: the real one costs
    64 MiB and a quarter of a second per derivation); even bytes leave it
    open.  Then each step is an opcode byte and its arguments:

      0 HELLO on inbound connection c (0..7; connections c and c + 4 use
        one key, 6 and 7 come from a second address), built with the
        codec from fuzzed versions, flags, nonce, run and key choice;
      1 AUTH on connection c, with the right MAC or fuzzed bytes;
      2 a message on connection c: header fields and body from the input,
        encoded by cl_wire_hdr_encode (run and length right or fuzzed);
      3 the same with the 64 header bytes taken raw from the input;
      4 open outbound link j (0..3) to a server key (its HELLO goes to
        a closed loopback port, and stays queued); 8 per input at most;
      5 WELCOME on link j, with the right MAC or fuzzed bytes;
      6 a message on link j (header fields and body from the input);
      7 a sweep, the clock moved 0..255 s ahead (unfinished handshakes
        and silent links expire).

    The frames go through tp_router_frames and tp_dealer_frames, the
    functions that tp_on_router and tp_on_dealer hand every message of
    the ROUTER and of a DEALER to.  Checked after every step: unfinished
    handshakes are counted right and within their caps (in all and per
    address); every authenticated link is listed by key and by routing
    id; a link comes up, and a message is handed on, only for a
    connection whose AUTH (or link whose WELCOME) carried the right MAC.
*/
#include "engine/cl_handshake.h"
#include "engine/cl_transport_int.h"
#include "engine/cl_wire.h"
#include "util/cl_identity.h"
#include "util/cl_log.h"
#include "util/cl_secret.h"

#include <dirent.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NCONN 8
#define NKEYS 4
#define NSERVERS 4
#define MAX_HANDSHAKES 5
#define MAX_HANDSHAKES_HOST 3
#define BODY_MAX 2048
#define MAX_CONNECTS 8
#define RUN_ID "fuzz-run"

typedef struct {
    const uint8_t *p;
    size_t n;
} input_t;

static cl_transport_t *s_tp;
static cl_identity_t *s_self;
static cl_identity_t *s_client[NKEYS];    /* keys of inbound connections */
static cl_identity_t *s_server[NSERVERS]; /* keys outbound links go to */
static bool s_proved[NCONN];              /* a right AUTH went over connection c */
static bool s_welcomed[NSERVERS];         /* a right WELCOME went over link j */
static int s_connects;                    /* links opened by this input */

static uint8_t take8(input_t *in)
{
    if (in->n == 0)
        return 0;
    in->n--;
    return *in->p++;
}

static uint16_t take16(input_t *in)
{
    uint16_t lo = take8(in);
    return (uint16_t)(lo | (uint16_t)take8(in) << 8);
}

static void take_bytes(input_t *in, uint8_t *out, size_t len)
{
    for (size_t i = 0; i < len; i++)
        out[i] = take8(in);
}

static const uint8_t *conn_key(int c)
{
    return cl_identity_public_key(s_client[c % NKEYS]);
}

static void conn_rid(int c, uint8_t rid[5])
{
    memcpy(rid, "conn", 4);
    rid[4] = (uint8_t)c;
}

static const char *conn_host(int c)
{
    return c >= 6 ? "127.0.0.2" : "127.0.0.1";
}

static in_link_t *conn_link(int c)
{
    uint8_t rid[5];
    char hex[11];
    conn_rid(c, rid);
    tp_hex(rid, 5, hex);
    return zhashx_lookup(s_tp->in_by_rid, hex);
}

/* Which inbound connections carry key's authenticated link. */
static bool key_proved(const uint8_t key[32])
{
    for (int c = 0; c < NCONN; c++)
        if (s_proved[c] && memcmp(conn_key(c), key, 32) == 0)
            return true;
    return false;
}

static bool server_welcomed(const uint8_t key[32])
{
    for (int j = 0; j < NSERVERS; j++)
        if (s_welcomed[j] && memcmp(cl_identity_public_key(s_server[j]), key, 32) == 0)
            return true;
    return false;
}

static void on_event(void *ctx, const cl_tp_event_t *ev)
{
    (void)ctx;
    if (ev->kind == CL_TP_UP && ev->inbound && !key_proved(ev->key))
        abort(); /* an inbound link came up without a right AUTH */
    if (ev->kind == CL_TP_UP && !ev->inbound && !server_welcomed(ev->key))
        abort(); /* an outbound link came up without a right WELCOME */
    if (ev->kind == CL_TP_MESSAGE) {
        const in_link_t *in = tp_inbound_of(s_tp, ev->key);
        const out_link_t *out = tp_outbound_of(s_tp, ev->key);
        bool up = (in != NULL && in->state == IL_UP) || (out != NULL && out->state == OL_UP);
        if (!up || ev->msg == NULL || ev->msg->hdr.type <= CL_MSG_AUTH)
            abort(); /* handed on before the handshake, or a handshake message */
    }
}

static void check(void)
{
    size_t pending = 0;
    size_t host[2] = {0, 0};
    for (in_link_t *l = zhashx_first(s_tp->in_by_rid); l != NULL;
         l = zhashx_next(s_tp->in_by_rid)) {
        if (l->state == IL_AUTH_WAIT) {
            pending++;
            host[strcmp(l->host, "127.0.0.2") == 0]++;
        } else if (!key_proved(l->key)) {
            abort();
        }
    }
    if (pending != s_tp->npending || pending > MAX_HANDSHAKES || host[0] > MAX_HANDSHAKES_HOST ||
        host[1] > MAX_HANDSHAKES_HOST)
        abort();
    for (in_link_t *l = zhashx_first(s_tp->in_by_key); l != NULL;
         l = zhashx_next(s_tp->in_by_key)) {
        char khex[65];
        tp_hex(l->key, 32, khex);
        if (l->state != IL_UP || zhashx_lookup(s_tp->in_by_rid, l->rid_hex) != l ||
            strcmp(zhashx_cursor(s_tp->in_by_key), khex) != 0)
            abort();
    }
    for (out_link_t *l = zhashx_first(s_tp->out_by_key); l != NULL;
         l = zhashx_next(s_tp->out_by_key))
        if (l->state == OL_DEAD || (l->state == OL_UP && !server_welcomed(l->key)))
            abort();
}

static void send_in(int c, const uint8_t *hdr, const uint8_t *body, size_t blen)
{
    uint8_t rid[5];
    conn_rid(c, rid);
    if (tp_is_banned(s_tp, conn_key(c)))
        return; /* as tp_on_router does */
    tp_router_frames(s_tp, on_event, NULL, conn_key(c), rid, sizeof rid, conn_host(c), hdr,
                     CL_WIRE_HDR_SIZE, body, blen);
}

/* Encodes m (version and run as the input says) and hands it to side:
   an inbound connection c >= 0, or outbound link j = -1 - c. */
static void send_msg(int c, cl_wire_msg_t *m, bool right_run, uint8_t version)
{
    uint8_t *body = NULL;
    size_t blen = 0;
    if (cl_wire_encode_body(m, &body, &blen) != CL_WIRE_OK)
        return;
    m->hdr.version = version;
    m->hdr.run = right_run ? s_tp->run : cl_wire_run_hash("another run");
    m->hdr.length = blen;
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    cl_wire_hdr_encode(&m->hdr, hdr);
    if (c >= 0) {
        send_in(c, hdr, body, blen);
    } else {
        out_link_t *l = tp_outbound_of(s_tp, cl_identity_public_key(s_server[-1 - c]));
        if (l != NULL && !tp_is_banned(s_tp, l->key)) /* as tp_on_dealer does */
            (void)tp_dealer_frames(s_tp, l, on_event, NULL, hdr, CL_WIRE_HDR_SIZE, body, blen);
    }
    free(body);
}

static uint8_t pick_version(uint8_t b)
{
    return (b & 3) != 0 ? CL_WIRE_VERSION : b >> 2; /* mostly right */
}

static void op_hello(input_t *in)
{
    int c = take8(in) % NCONN;
    uint8_t flags = take8(in);
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_HELLO;
    m.u.hello.min_version = (flags & 1) != 0 ? take16(in) : CL_WIRE_MIN_VERSION;
    m.u.hello.max_version = (flags & 2) != 0 ? take16(in) : CL_WIRE_VERSION;
    if ((flags & 4) != 0)
        take_bytes(in, m.u.hello.key, 32);
    else
        memcpy(m.u.hello.key, conn_key(c), 32);
    take_bytes(in, m.u.hello.nonce, 8);
    m.u.hello.flags = (flags & 8) != 0 ? CL_HELLO_CLIENT : 0;
    size_t alen = take8(in) % 24;
    for (size_t i = 0; i < alen; i++)
        m.u.hello.address[i] = (char)(take8(in) | 1);
    send_msg(c, &m, (flags & 16) == 0, pick_version(take8(in)));
}

static void op_auth(input_t *in)
{
    int c = take8(in) % NCONN;
    uint8_t flags = take8(in);
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_AUTH;
    in_link_t *l = conn_link(c);
    bool right = (flags & 1) != 0 && l != NULL && l->state == IL_AUTH_WAIT &&
                 memcmp(l->key, conn_key(c), 32) == 0;
    if (right)
        cl_hs_mac(s_tp->k, "AUTH", conn_key(c), s_tp->self_key, l->cnonce, l->snonce, m.u.auth.mac);
    else
        take_bytes(in, m.u.auth.mac, 32);
    bool right_run = (flags & 2) == 0;
    uint8_t version = pick_version(take8(in));
    /* A right MAC brings the link up when the message decodes (the
       version is one this code reads) and belongs to this run. */
    if (right && right_run && version >= CL_WIRE_MIN_VERSION && version <= CL_WIRE_VERSION &&
        !tp_is_banned(s_tp, conn_key(c)))
        s_proved[c] = true;
    send_msg(c, &m, right_run, version);
}

/* Header fields from the input; body of up to BODY_MAX input bytes. */
static void fuzzed_msg(input_t *in, uint8_t hdr[CL_WIRE_HDR_SIZE], uint8_t *body, size_t *blen,
                       const uint8_t flags)
{
    size_t n = take16(in) % (BODY_MAX + 1);
    if (n > in->n)
        n = in->n;
    cl_wire_hdr_t h;
    memset(&h, 0, sizeof h);
    h.version = pick_version(take8(in));
    h.type = take8(in) % 32;
    h.sub = take8(in);
    h.flags = (flags & 4) != 0 ? take8(in) : 0;
    h.run = (flags & 1) == 0 ? s_tp->run : (uint64_t)take16(in);
    h.comm = take8(in);
    h.epoch = take16(in);
    h.seq = take16(in);
    h.part = take8(in);
    h.aux = take8(in);
    h.length = (flags & 2) == 0 ? n : (uint64_t)take16(in);
    cl_wire_hdr_encode(&h, hdr);
    if (n > in->n)
        n = in->n;
    take_bytes(in, body, n);
    *blen = n;
}

static void op_raw_in(input_t *in, bool raw_header)
{
    static uint8_t body[BODY_MAX];
    int c = take8(in) % NCONN;
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    size_t blen = 0;
    if (raw_header) {
        take_bytes(in, hdr, sizeof hdr);
        blen = take16(in) % (BODY_MAX + 1);
        if (blen > in->n)
            blen = in->n;
        take_bytes(in, body, blen);
    } else {
        fuzzed_msg(in, hdr, body, &blen, take8(in));
    }
    send_in(c, hdr, body, blen);
}

static void op_connect(input_t *in)
{
    int j = take8(in) % NSERVERS;
    /* Each link is two sockets, closed by libzmq's reaper thread some
       time after the input: a few per input keep far below libzmq's
       limit of 1023 sockets, past which CZMQ aborts. */
    if (++s_connects > MAX_CONNECTS)
        return;
    char addr[160];
    /* Port 9 on loopback: nothing listens, ZeroMQ keeps retrying. */
    snprintf(addr, sizeof addr, "/ip4/127.0.0.1/tcp/9/p2p/%s", cl_identity_peer_id(s_server[j]));
    (void)cl_transport_connect(s_tp, cl_identity_public_key(s_server[j]), addr);
}

static void op_welcome(input_t *in)
{
    int j = take8(in) % NSERVERS;
    uint8_t flags = take8(in);
    const uint8_t *skey = cl_identity_public_key(s_server[j]);
    out_link_t *l = tp_outbound_of(s_tp, skey);
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_WELCOME;
    m.u.welcome.version = (flags & 1) != 0 ? take16(in) : CL_WIRE_VERSION;
    take_bytes(in, m.u.welcome.nonce, 8);
    bool right = (flags & 2) != 0 && l != NULL && l->state == OL_HELLO;
    if (right)
        cl_hs_mac(s_tp->k, "WELCOME", s_tp->self_key, skey, l->nonce, m.u.welcome.nonce,
                  m.u.welcome.mac);
    else
        take_bytes(in, m.u.welcome.mac, 32);
    bool right_run = (flags & 4) == 0;
    uint8_t version = pick_version(take8(in));
    if (right && right_run && version >= CL_WIRE_MIN_VERSION && version <= CL_WIRE_VERSION &&
        !tp_is_banned(s_tp, skey) && m.u.welcome.version >= CL_WIRE_MIN_VERSION &&
        m.u.welcome.version <= CL_WIRE_VERSION)
        s_welcomed[j] = true;
    send_msg(-1 - j, &m, right_run, version);
}

static void op_raw_out(input_t *in)
{
    static uint8_t body[BODY_MAX];
    int j = take8(in) % NSERVERS;
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    size_t blen = 0;
    fuzzed_msg(in, hdr, body, &blen, take8(in));
    out_link_t *l = tp_outbound_of(s_tp, cl_identity_public_key(s_server[j]));
    if (l != NULL && !tp_is_banned(s_tp, l->key))
        (void)tp_dealer_frames(s_tp, l, on_event, NULL, hdr, sizeof hdr, body, blen);
}

static void op_sweep(input_t *in)
{
    s_tp->last_sweep = 0;
    tp_sweep(s_tp, tp_now() + take8(in));
}

static void teardown(void)
{
    cl_transport_destroy(&s_tp, 0);
    cl_identity_destroy(&s_self);
    for (int i = 0; i < NKEYS; i++)
        cl_identity_destroy(&s_client[i]);
    for (int i = 0; i < NSERVERS; i++)
        cl_identity_destroy(&s_server[i]);
}

static int setup(void)
{
    char err[256];
    cl_log_configure(CL_LOG_ERROR, NULL); /* a warning per refused input is noise */
    cl_secret_stub_kdf_for_fuzzing(true);
    s_self = cl_identity_new(NULL, err, sizeof err);
    for (int i = 0; i < NKEYS; i++)
        s_client[i] = cl_identity_new(NULL, err, sizeof err);
    for (int i = 0; i < NSERVERS; i++)
        s_server[i] = cl_identity_new(NULL, err, sizeof err);
    if (s_self == NULL)
        return -1;
    for (int i = 0; i < NKEYS; i++)
        if (s_client[i] == NULL)
            return -1;
    for (int i = 0; i < NSERVERS; i++)
        if (s_server[i] == NULL)
            return -1;
    cl_transport_config_t cfg = {.identity = s_self,
                                 .listen = "/ip4/127.0.0.1/tcp/0",
                                 .run_id = RUN_ID,
                                 .max_handshakes = MAX_HANDSHAKES,
                                 .max_handshakes_host = MAX_HANDSHAKES_HOST};
    s_tp = cl_transport_new(&cfg, err, sizeof err);
    if (s_tp == NULL) {
        fprintf(stderr, "fuzz_handshake: %s\n", err);
        return -1;
    }
    /* After the sockets: CZMQ's own exit handler, registered by the first
       socket, must run after this one. */
    atexit(teardown);
    return 0;
}

/* Open file descriptors of this process. */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (d == NULL)
        return 0;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n;
}

/* Forgets every link, ban and count: the next input starts afresh. */
static void reset(void)
{
    in_link_t *l;
    while ((l = zhashx_first(s_tp->in_by_rid)) != NULL)
        tp_in_link_delete(s_tp, l);
    out_link_t *o;
    while ((o = zhashx_first(s_tp->out_by_key)) != NULL)
        tp_out_link_kill(s_tp, o);
    zhashx_purge(s_tp->bans);
    s_tp->last_sweep = tp_now();                               /* no sweep in the poll below */
    (void)cl_transport_poll(s_tp, NULL, 0, 0, on_event, NULL); /* reaps the dead links */
    s_tp->npending = 0;
    s_tp->malformed = 0;
    s_tp->last_sweep = 0;
    memset(s_proved, 0, sizeof s_proved);
    memset(s_welcomed, 0, sizeof s_welcomed);
    s_connects = 0;
    /* libzmq's reaper thread closes the sockets of dead links some time
       later; at a thousand inputs a second they pile up past the limit on
       open files, and CZMQ aborts when a socket cannot be created (a
       limit of the process, not of the code under test: docs/testing.md).
       Wait for the reaper instead. */
    for (int k = 0; k < 1000 && open_fds() > 256; k++)
        usleep(1000);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready = 0;
    if (ready == 0)
        ready = setup() == 0 ? 1 : -1;
    if (ready < 0)
        abort();
    input_t in = {data, size};
    /* The swarm: open, or closed with a key from a passphrase. */
    uint8_t mode = take8(&in);
    uint8_t secret[CL_SECRET_BYTES];
    bool closed = (mode & 1) != 0;
    if (closed) {
        char pass[CL_PASSPHRASE_MIN + 32];
        size_t plen = CL_PASSPHRASE_MIN + (mode >> 1) % 32;
        take_bytes(&in, (uint8_t *)pass, plen);
        if (cl_secret_from_passphrase(pass, plen, RUN_ID, secret) != 0)
            abort();
        sodium_memzero(pass, sizeof pass);
    }
    cl_hs_derive(closed ? secret : NULL, RUN_ID, s_tp->k);
    sodium_memzero(secret, sizeof secret);

    for (int steps = 0; in.n > 0 && steps < 256; steps++) {
        switch (take8(&in) % 8) {
        case 0:
            op_hello(&in);
            break;
        case 1:
            op_auth(&in);
            break;
        case 2:
            op_raw_in(&in, false);
            break;
        case 3:
            op_raw_in(&in, true);
            break;
        case 4:
            op_connect(&in);
            break;
        case 5:
            op_welcome(&in);
            break;
        case 6:
            op_raw_out(&in);
            break;
        default:
            op_sweep(&in);
            break;
        }
        check();
    }
    reset();
    return 0;
}
