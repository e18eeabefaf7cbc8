/*  cl_transport.c - sockets, handshake and message paths of a peer.

    Outbound links (our DEALER to a public peer's ROUTER) are kept by key;
    each has a monitor socket so that a closed connection is known at once.
    Inbound links (a remote DEALER connected to our ROUTER) are kept by
    ZeroMQ routing id; the ZAP handler makes the client's CurveZMQ key the
    User-Id of every message, so each inbound message is tied to a key that
    the client proved it holds.  The handshake of docs/wire.md runs on each
    link; until it completes only handshake messages are read from it.

    Links are never freed while cl_transport_poll dispatches events (the
    handler may drop or open links); dead links are reaped afterwards.
*/
#include "engine/cl_transport.h"

#include "engine/cl_handshake.h"
#include "mpi_collab.h"
#include "util/cl_addr.h"
#include "util/cl_log.h"
#include "util/cl_text.h"

#include <czmq.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define RECV_BUDGET 256          /* messages read from one socket per poll round */
#define HANDSHAKE_KEEP 60.0      /* seconds an unfinished inbound handshake is kept */
#define MAX_PENDING_INBOUND 4096 /* unfinished inbound handshakes kept at most */

typedef struct pending_msg {
    struct pending_msg *next;
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    uint8_t *body; /* malloc'ed */
    size_t blen;
} pending_msg_t;

typedef enum { OL_HELLO = 0, OL_UP = 1, OL_DEAD = 2 } ol_state_t;

typedef struct {
    uint8_t key[32];
    char hex[65];
    char address[CL_WIRE_STR_MAX + 1];
    zsock_t *dealer;
    zsock_t *monitor;
    ol_state_t state;
    uint8_t nonce[32];             /* our HELLO nonce, wiped at UP */
    pending_msg_t *head, *tail;    /* waiting for UP */
    bool handshake_warned;
} out_link_t;

typedef enum { IL_AUTH_WAIT = 0, IL_UP = 1 } il_state_t;

typedef struct {
    uint8_t rid[256];
    size_t rid_len;
    char rid_hex[513];
    uint8_t key[32];
    il_state_t state;
    uint8_t cnonce[32], snonce[32]; /* wiped at UP */
    bool client;
    char address[CL_WIRE_STR_MAX + 1];
    double created;
} in_link_t;

typedef enum { REF_ROUTER, REF_ZAP, REF_DEALER, REF_MONITOR } ref_kind_t;

typedef struct {
    ref_kind_t kind;
    out_link_t *link;
} poll_ref_t;

struct cl_transport {
    const cl_identity_t *id;
    uint8_t self_key[32];
    bool client_mode;
    uint64_t run;
    uint8_t k[32];                     /* handshake key, wiped at destroy */
    double ban_seconds;
    char address[CL_WIRE_STR_MAX + 1]; /* announced multiaddr with /p2p */
    zsock_t *router;                   /* NULL in client mode */
    zsock_t *zap;                      /* NULL when another transport serves ZAP */
    zhashx_t *out_by_key;              /* hex key -> out_link_t (owned) */
    zhashx_t *in_by_rid;               /* hex rid -> in_link_t (owned) */
    zhashx_t *in_by_key;               /* hex key -> in_link_t (latest UP) */
    zhashx_t *bans;                    /* hex key -> double* until */
    zlist_t *dead;                     /* out_link_t waiting to be freed */
    uint64_t monitor_seq;
    uint64_t malformed;
    zmq_pollitem_t *items;             /* poll arrays, grown as needed */
    poll_ref_t *refs;
    size_t capitems;
    double last_sweep;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void hex_of(const uint8_t *b, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

static const char *short_id(const uint8_t key[32], char out[16])
{
    char id[CL_PEER_ID_MAX];
    if (cl_base58_encode(key, 32, id, sizeof id) != 0)
        strcpy(id, "?");
    snprintf(out, 16, "%.8s", id);
    return out;
}

/* ---------------------------------------------------------------------- */
/* Bans. */

static bool is_banned(cl_transport_t *self, const uint8_t key[32])
{
    char hex[65];
    hex_of(key, 32, hex);
    double *until = zhashx_lookup(self->bans, hex);
    if (until == NULL)
        return false;
    if (*until > now_s())
        return true;
    zhashx_delete(self->bans, hex);
    return false;
}

void cl_transport_ban(cl_transport_t *self, const uint8_t key[32], double seconds)
{
    char hex[65];
    hex_of(key, 32, hex);
    double *until = malloc(sizeof *until);
    if (until == NULL)
        return;
    *until = now_s() + seconds;
    zhashx_update(self->bans, hex, until);
}

static void malformed(cl_transport_t *self, const uint8_t key[32], const char *what)
{
    char sid[16];
    self->malformed++;
    if (!is_banned(self, key))
        cl_warn("dropped a malformed message from peer %s… (%s); ignoring it for %.0f s",
                short_id(key, sid), what, self->ban_seconds);
    cl_transport_ban(self, key, self->ban_seconds);
}

/* ---------------------------------------------------------------------- */
/* Links. */

static void pending_free_all(out_link_t *l)
{
    pending_msg_t *p = l->head;
    while (p != NULL) {
        pending_msg_t *next = p->next;
        free(p->body);
        free(p);
        p = next;
    }
    l->head = l->tail = NULL;
}

static void out_link_free(void **item)
{
    out_link_t *l = *item;
    if (l == NULL)
        return;
    if (l->monitor != NULL)
        zsock_destroy(&l->monitor);
    if (l->dealer != NULL) {
        zmq_socket_monitor(zsock_resolve(l->dealer), NULL, 0);
        zsock_destroy(&l->dealer);
    }
    pending_free_all(l);
    sodium_memzero(l->nonce, sizeof l->nonce);
    free(l);
    *item = NULL;
}

static void free_item(void **item)
{
    free(*item);
    *item = NULL;
}

static void in_link_free(void **item)
{
    in_link_t *l = *item;
    if (l == NULL)
        return;
    sodium_memzero(l, sizeof *l);
    free(l);
    *item = NULL;
}

/* Marks an outbound link dead: it stops sending and receiving now and is
   freed after the current dispatch. */
static void out_link_kill(cl_transport_t *self, out_link_t *l)
{
    if (l->state == OL_DEAD)
        return;
    l->state = OL_DEAD;
    pending_free_all(l);
    zhashx_delete(self->out_by_key, l->hex); /* no destructor: freed when reaped */
    zlist_append(self->dead, l);
}

static void in_link_delete(cl_transport_t *self, in_link_t *l)
{
    char khex[65];
    hex_of(l->key, 32, khex);
    if (zhashx_lookup(self->in_by_key, khex) == l)
        zhashx_delete(self->in_by_key, khex);
    zhashx_delete(self->in_by_rid, l->rid_hex);
}

/* ---------------------------------------------------------------------- */
/* Sending. */

static void free_body(void *data, void *hint)
{
    (void)hint;
    free(data);
}

/* Sends [rid] hdr body on sock; takes ownership of body.  Returns 0 or -1
   (errno set). */
static int send_raw(void *sock, const uint8_t *rid, size_t rid_len, const uint8_t *hdr,
                    uint8_t *body, size_t blen)
{
    if (rid != NULL && zmq_send(sock, rid, rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
        free(body);
        return -1;
    }
    if (zmq_send(sock, hdr, CL_WIRE_HDR_SIZE, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
        free(body);
        return -1;
    }
    zmq_msg_t m;
    int rc;
    if (blen > 0) {
        if (zmq_msg_init_data(&m, body, blen, free_body, NULL) != 0) {
            free(body);
            return -1;
        }
    } else {
        free(body);
        zmq_msg_init(&m);
    }
    rc = zmq_msg_send(&m, sock, ZMQ_DONTWAIT);
    if (rc < 0)
        zmq_msg_close(&m);
    return rc < 0 ? -1 : 0;
}

/* Encodes m into a header and a body (owned by the caller). */
static int encode(cl_transport_t *self, cl_wire_msg_t *m, uint8_t hdr[CL_WIRE_HDR_SIZE],
                  uint8_t **body, size_t *blen)
{
    m->hdr.version = CL_WIRE_VERSION;
    m->hdr.run = self->run;
    int rc = cl_wire_encode_body(m, body, blen);
    if (rc == CL_WIRE_ENOMEM)
        return COLLAB_ERR_NO_MEM;
    if (rc != CL_WIRE_OK) {
        cl_error("internal: refusing to send a malformed %s message",
                 cl_wire_type_name(m->hdr.type));
        return COLLAB_ERR_ARG;
    }
    m->hdr.length = *blen;
    cl_wire_hdr_encode(&m->hdr, hdr);
    return COLLAB_OK;
}

static int out_link_send(out_link_t *l, const uint8_t *hdr, uint8_t *body, size_t blen)
{
    if (l->state == OL_UP) {
        if (send_raw(zsock_resolve(l->dealer), NULL, 0, hdr, body, blen) != 0) {
            cl_debug("send to %s failed: %s", l->address, zmq_strerror(errno));
            return COLLAB_ERR_PROC_FAILED;
        }
        return COLLAB_OK;
    }
    pending_msg_t *p = calloc(1, sizeof *p);
    if (p == NULL) {
        free(body);
        return COLLAB_ERR_NO_MEM;
    }
    memcpy(p->hdr, hdr, CL_WIRE_HDR_SIZE);
    p->body = body;
    p->blen = blen;
    if (l->tail != NULL)
        l->tail->next = p;
    else
        l->head = p;
    l->tail = p;
    return COLLAB_OK;
}

static int router_send(cl_transport_t *self, in_link_t *l, const uint8_t *hdr, uint8_t *body,
                       size_t blen)
{
    if (self->router == NULL) {
        free(body);
        return COLLAB_ERR_PROC_FAILED;
    }
    if (send_raw(zsock_resolve(self->router), l->rid, l->rid_len, hdr, body, blen) != 0) {
        /* ROUTER_MANDATORY: the connection is gone. */
        cl_debug("send on inbound connection failed: %s", zmq_strerror(errno));
        in_link_delete(self, l);
        return COLLAB_ERR_PROC_FAILED;
    }
    return COLLAB_OK;
}

static in_link_t *inbound_of(cl_transport_t *self, const uint8_t key[32])
{
    char hex[65];
    hex_of(key, 32, hex);
    return zhashx_lookup(self->in_by_key, hex);
}

static out_link_t *outbound_of(const cl_transport_t *self, const uint8_t key[32])
{
    char hex[65];
    hex_of(key, 32, hex);
    return zhashx_lookup(self->out_by_key, hex);
}

int cl_transport_send(cl_transport_t *self, const uint8_t key[32], cl_wire_msg_t *m)
{
    out_link_t *out = outbound_of(self, key);
    in_link_t *in = inbound_of(self, key);
    if (out == NULL && in != NULL && in->state == IL_UP && !in->client && in->address[0] != '\0') {
        if (cl_transport_connect(self, key, in->address) == COLLAB_OK)
            out = outbound_of(self, key);
    }
    if (out == NULL && (in == NULL || in->state != IL_UP))
        return COLLAB_ERR_PROC_FAILED;
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    uint8_t *body;
    size_t blen;
    int rc = encode(self, m, hdr, &body, &blen);
    if (rc != COLLAB_OK)
        return rc;
    if (out != NULL)
        return out_link_send(out, hdr, body, blen);
    return router_send(self, in, hdr, body, blen);
}

int cl_transport_reply(cl_transport_t *self, const uint8_t key[32], cl_wire_msg_t *m)
{
    in_link_t *in = inbound_of(self, key);
    if (in == NULL || in->state != IL_UP)
        return cl_transport_send(self, key, m);
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    uint8_t *body;
    size_t blen;
    int rc = encode(self, m, hdr, &body, &blen);
    if (rc != COLLAB_OK)
        return rc;
    return router_send(self, in, hdr, body, blen);
}

/* ---------------------------------------------------------------------- */
/* Connecting. */

static void sock_common(zsock_t *s)
{
    zsock_set_sndhwm(s, 0);
    zsock_set_rcvhwm(s, 0);
    zsock_set_linger(s, 0);
    zsock_set_tcp_keepalive(s, 1);
    zsock_set_tcp_keepalive_idle(s, 30);
    zsock_set_tcp_keepalive_intvl(s, 5);
    zsock_set_tcp_keepalive_cnt(s, 4);
}

int cl_transport_connect(cl_transport_t *self, const uint8_t key[32], const char *address)
{
    if (memcmp(key, self->self_key, 32) == 0)
        return COLLAB_ERR_ARG;
    if (outbound_of(self, key) != NULL)
        return COLLAB_OK;
    cl_addr_t a;
    char err[256], ep[CL_ADDR_TEXT_MAX + 16];
    if (address == NULL || cl_addr_parse(address, &a, err, sizeof err) != 0) {
        cl_warn("cannot connect to peer address: %s", address == NULL ? "(none)" : err);
        return COLLAB_ERR_ARG;
    }
    if (a.port == 0 || cl_addr_endpoint(&a, ep, sizeof ep) != 0) {
        char q[128];
        cl_warn("cannot connect to %s: it names no port",
                cl_text_quote(address, 100, q, sizeof q));
        return COLLAB_ERR_ARG;
    }
    out_link_t *l = calloc(1, sizeof *l);
    if (l == NULL)
        return COLLAB_ERR_NO_MEM;
    memcpy(l->key, key, 32);
    hex_of(key, 32, l->hex);
    snprintf(l->address, sizeof l->address, "%s", address);
    l->dealer = zsock_new(ZMQ_DEALER);
    if (l->dealer == NULL)
        goto err_free;
    sock_common(l->dealer);
    if (a.family == CL_ADDR_IP6 || (a.family == CL_ADDR_DNS && a.dns_version != 4))
        zsock_set_ipv6(l->dealer, 1);
    zsock_set_curve_publickey_bin(l->dealer, cl_identity_public_key(self->id));
    zsock_set_curve_secretkey_bin(l->dealer, cl_identity_secret_key(self->id));
    zsock_set_curve_serverkey_bin(l->dealer, key);
    zsock_set_reconnect_ivl(l->dealer, 200);
    zsock_set_reconnect_ivl_max(l->dealer, 2000);
    char mon[64];
    snprintf(mon, sizeof mon, "inproc://collab-mon-%p-%llu", (void *)self,
             (unsigned long long)++self->monitor_seq);
    if (zmq_socket_monitor(zsock_resolve(l->dealer), mon,
                           ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED |
                               ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0)
        goto err_free;
    l->monitor = zsock_new(ZMQ_PAIR);
    if (l->monitor == NULL || zsock_connect(l->monitor, "%s", mon) != 0)
        goto err_free;
    if (zsock_connect(l->dealer, "%s", ep) != 0) {
        cl_warn("cannot connect to %s: %s", address, zmq_strerror(errno));
        void *item = l;
        out_link_free(&item);
        return COLLAB_ERR_ARG;
    }
    /* HELLO goes first; ZeroMQ queues it until the connection is up. */
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_HELLO;
    m.u.hello.max_version = CL_WIRE_VERSION;
    m.u.hello.min_version = CL_WIRE_MIN_VERSION;
    memcpy(m.u.hello.key, self->self_key, 32);
    randombytes_buf(l->nonce, sizeof l->nonce);
    memcpy(m.u.hello.nonce, l->nonce, 32);
    m.u.hello.flags = self->client_mode ? CL_HELLO_CLIENT : 0;
    snprintf(m.u.hello.address, sizeof m.u.hello.address, "%s", self->address);
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    uint8_t *body;
    size_t blen;
    if (encode(self, &m, hdr, &body, &blen) != COLLAB_OK)
        goto err_free;
    if (send_raw(zsock_resolve(l->dealer), NULL, 0, hdr, body, blen) != 0)
        goto err_free;
    l->state = OL_HELLO;
    zhashx_insert(self->out_by_key, l->hex, l);
    return COLLAB_OK;
err_free:
    cl_error("cannot create a connection to %s: %s", address, zmq_strerror(errno));
    void *item = l;
    out_link_free(&item);
    return COLLAB_ERR_NO_MEM;
}

bool cl_transport_has_link(const cl_transport_t *self, const uint8_t key[32])
{
    return outbound_of(self, key) != NULL;
}

void cl_transport_drop(cl_transport_t *self, const uint8_t key[32])
{
    out_link_t *out = outbound_of(self, key);
    if (out != NULL)
        out_link_kill(self, out);
    /* Forget every inbound connection of that key. */
    zlist_t *gone = zlist_new();
    if (gone == NULL)
        return;
    for (in_link_t *l = zhashx_first(self->in_by_rid); l != NULL;
         l = zhashx_next(self->in_by_rid))
        if (memcmp(l->key, key, 32) == 0)
            zlist_append(gone, l);
    for (in_link_t *l = zlist_first(gone); l != NULL; l = zlist_next(gone))
        in_link_delete(self, l);
    zlist_destroy(&gone);
}

/* ---------------------------------------------------------------------- */
/* Receiving. */

/* Receives one multipart message into parts[0..cap).  Returns the number
   of parts, cap + 1 when there were more (the rest is discarded), 0 when
   nothing was waiting, or -1 on a socket error. */
static int recv_parts(void *sock, zmq_msg_t *parts, int cap)
{
    int n = 0;
    bool more = true, overflow = false;
    while (more) {
        zmq_msg_t tmp;
        zmq_msg_t *m = n < cap ? &parts[n] : &tmp;
        zmq_msg_init(m);
        if (zmq_msg_recv(m, sock, n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
            int e = errno;
            zmq_msg_close(m);
            for (int i = 0; i < n && i < cap; i++)
                zmq_msg_close(&parts[i]);
            errno = e;
            return e == EAGAIN && n == 0 ? 0 : -1;
        }
        more = zmq_msg_more(m) != 0;
        if (n >= cap) {
            overflow = true;
            zmq_msg_close(m);
        } else {
            n++;
        }
    }
    return overflow ? cap + 1 : n;
}

static void close_parts(zmq_msg_t *parts, int n)
{
    for (int i = 0; i < n; i++)
        zmq_msg_close(&parts[i]);
}

static void emit_message(cl_tp_handler_fn *fn, void *ctx, const uint8_t key[32],
                         const cl_wire_msg_t *m)
{
    cl_tp_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = CL_TP_MESSAGE;
    memcpy(ev.key, key, 32);
    ev.msg = m;
    fn(ctx, &ev);
}

static void send_refuse(cl_transport_t *self, in_link_t *tmp, int reason, const char *text)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_REFUSE;
    m.u.refuse.reason = (uint16_t)reason;
    m.u.refuse.max_version = CL_WIRE_VERSION;
    m.u.refuse.min_version = CL_WIRE_MIN_VERSION;
    snprintf(m.u.refuse.text, sizeof m.u.refuse.text, "%s", text);
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    uint8_t *body;
    size_t blen;
    if (encode(self, &m, hdr, &body, &blen) == COLLAB_OK)
        (void)send_raw(zsock_resolve(self->router), tmp->rid, tmp->rid_len, hdr, body, blen);
}

static void on_hello(cl_transport_t *self, const uint8_t *rid, size_t rid_len, const char *rhex,
                     const uint8_t key[32], const cl_wire_msg_t *m)
{
    char sid[16];
    const cl_wire_hello_t *h = &m->u.hello;
    in_link_t tmp;
    memset(&tmp, 0, sizeof tmp);
    memcpy(tmp.rid, rid, rid_len);
    tmp.rid_len = rid_len;
    if (zhashx_lookup(self->in_by_rid, rhex) != NULL) {
        malformed(self, key, "second HELLO on one connection");
        return;
    }
    if (memcmp(h->key, key, 32) != 0) {
        malformed(self, key, "HELLO names a key other than its CurveZMQ key");
        return;
    }
    int v = cl_hs_pick_version(CL_WIRE_MIN_VERSION, CL_WIRE_VERSION, h->min_version,
                               h->max_version);
    if (v == 0) {
        char text[160];
        snprintf(text, sizeof text,
                 "protocol versions %u..%u are not compatible with this peer's %d..%d",
                 h->min_version, h->max_version, CL_WIRE_MIN_VERSION, CL_WIRE_VERSION);
        cl_warn("refused peer %s…: its %s", short_id(key, sid), text);
        send_refuse(self, &tmp, CL_REFUSE_VERSION, text);
        return;
    }
    if (m->hdr.run != self->run) {
        cl_warn("refused peer %s…: it belongs to another run (COLLAB_RUN_ID differs)",
                short_id(key, sid));
        send_refuse(self, &tmp, CL_REFUSE_RUN, "COLLAB_RUN_ID differs");
        return;
    }
    if (zhashx_size(self->in_by_rid) >= MAX_PENDING_INBOUND) {
        send_refuse(self, &tmp, CL_REFUSE_BUSY, "too many connections");
        return;
    }
    in_link_t *l = malloc(sizeof *l);
    if (l == NULL)
        return;
    *l = tmp;
    memcpy(l->rid_hex, rhex, strlen(rhex) + 1);
    memcpy(l->key, key, 32);
    l->state = IL_AUTH_WAIT;
    memcpy(l->cnonce, h->nonce, 32);
    randombytes_buf(l->snonce, 32);
    l->client = (h->flags & CL_HELLO_CLIENT) != 0;
    snprintf(l->address, sizeof l->address, "%s", h->address);
    l->created = now_s();
    zhashx_update(self->in_by_rid, l->rid_hex, l);

    cl_wire_msg_t w;
    memset(&w, 0, sizeof w);
    w.hdr.type = CL_MSG_WELCOME;
    w.u.welcome.version = (uint16_t)v;
    memcpy(w.u.welcome.nonce, l->snonce, 32);
    cl_hs_mac(self->k, "WELCOME", key, self->self_key, l->cnonce, l->snonce, w.u.welcome.mac);
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    uint8_t *body;
    size_t blen;
    if (encode(self, &w, hdr, &body, &blen) == COLLAB_OK)
        (void)send_raw(zsock_resolve(self->router), rid, rid_len, hdr, body, blen);
}

static void on_router(cl_transport_t *self, cl_tp_handler_fn *fn, void *ctx)
{
    void *sock = zsock_resolve(self->router);
    for (int budget = 0; budget < RECV_BUDGET; budget++) {
        zmq_msg_t parts[3];
        int n = recv_parts(sock, parts, 3);
        if (n <= 0)
            return;
        if (n > 3) {
            self->malformed++;
            continue;
        }
        uint8_t key[32];
        const char *uid = n >= 2 ? zmq_msg_gets(&parts[1], "User-Id") : NULL;
        if (uid == NULL || strlen(uid) != 40 || zmq_z85_decode(key, uid) == NULL) {
            /* Without a key we cannot even ban: ZAP is not ours. */
            self->malformed++;
            close_parts(parts, n);
            continue;
        }
        if (is_banned(self, key)) {
            close_parts(parts, n);
            continue;
        }
        if (n != 3 || zmq_msg_size(&parts[0]) == 0 || zmq_msg_size(&parts[0]) > 255) {
            malformed(self, key, "wrong number of frames");
            close_parts(parts, n);
            continue;
        }
        const uint8_t *rid = zmq_msg_data(&parts[0]);
        size_t rid_len = zmq_msg_size(&parts[0]);
        char rhex[513];
        hex_of(rid, rid_len, rhex);
        cl_wire_msg_t m;
        int rc = cl_wire_decode(zmq_msg_data(&parts[1]), zmq_msg_size(&parts[1]),
                                zmq_msg_data(&parts[2]), zmq_msg_size(&parts[2]), &m);
        if (rc != CL_WIRE_OK) {
            if (rc != CL_WIRE_ENOMEM)
                malformed(self, key, cl_wire_strerror(rc));
            close_parts(parts, n);
            continue;
        }
        in_link_t *l = zhashx_lookup(self->in_by_rid, rhex);
        if (m.hdr.type == CL_MSG_HELLO) {
            on_hello(self, rid, rid_len, rhex, key, &m);
        } else if (m.hdr.run != self->run) {
            self->malformed++; /* another run: drop, no ban */
        } else if (l == NULL || memcmp(l->key, key, 32) != 0) {
            malformed(self, key, "message before the handshake");
        } else if (m.hdr.type == CL_MSG_AUTH && l->state == IL_AUTH_WAIT) {
            if (cl_hs_verify(self->k, "AUTH", l->key, self->self_key, l->cnonce, l->snonce,
                             m.u.auth.mac)) {
                l->state = IL_UP;
                sodium_memzero(l->cnonce, 32);
                sodium_memzero(l->snonce, 32);
                char khex[65];
                hex_of(key, 32, khex);
                zhashx_update(self->in_by_key, khex, l);
                cl_tp_event_t ev;
                memset(&ev, 0, sizeof ev);
                ev.kind = CL_TP_UP;
                memcpy(ev.key, key, 32);
                ev.inbound = true;
                ev.client = l->client;
                ev.address = l->address;
                fn(ctx, &ev);
            } else {
                char sid[16];
                cl_warn("refused peer %s…: it could not prove it knows the swarm key",
                        short_id(key, sid));
                send_refuse(self, l, CL_REFUSE_AUTH, "wrong swarm key");
                cl_transport_ban(self, key, self->ban_seconds);
                in_link_delete(self, l);
            }
        } else if (l->state != IL_UP || m.hdr.type == CL_MSG_AUTH ||
                   m.hdr.type == CL_MSG_WELCOME || m.hdr.type == CL_MSG_REFUSE) {
            malformed(self, key, "handshake message out of order");
        } else {
            emit_message(fn, ctx, key, &m);
        }
        cl_wire_msg_clear(&m);
        close_parts(parts, n);
    }
}

static void emit_down(out_link_t *l, cl_tp_handler_fn *fn, void *ctx)
{
    cl_tp_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = CL_TP_DOWN;
    memcpy(ev.key, l->key, 32);
    fn(ctx, &ev);
}

static void emit_refused(out_link_t *l, int reason, const char *text, cl_tp_handler_fn *fn,
                         void *ctx)
{
    cl_tp_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = CL_TP_REFUSED;
    memcpy(ev.key, l->key, 32);
    ev.reason = reason;
    ev.text = text;
    fn(ctx, &ev);
}

static void on_welcome(cl_transport_t *self, out_link_t *l, const cl_wire_msg_t *m,
                       cl_tp_handler_fn *fn, void *ctx)
{
    const cl_wire_welcome_t *w = &m->u.welcome;
    if (w->version < CL_WIRE_MIN_VERSION || w->version > CL_WIRE_VERSION) {
        malformed(self, l->key, "WELCOME chose a version this peer does not speak");
        out_link_kill(self, l);
        emit_refused(l, CL_REFUSE_VERSION, "chose an unknown protocol version", fn, ctx);
        return;
    }
    if (!cl_hs_verify(self->k, "WELCOME", self->self_key, l->key, l->nonce, w->nonce, w->mac)) {
        cl_debug("peer at %s could not prove it knows the swarm key", l->address);
        cl_transport_ban(self, l->key, self->ban_seconds);
        out_link_kill(self, l);
        emit_refused(l, CL_REFUSE_AUTH,
                     "it could not prove it knows the swarm key (another COLLAB_SWARM_KEY?)", fn,
                     ctx);
        return;
    }
    cl_wire_msg_t a;
    memset(&a, 0, sizeof a);
    a.hdr.type = CL_MSG_AUTH;
    cl_hs_mac(self->k, "AUTH", self->self_key, l->key, l->nonce, w->nonce, a.u.auth.mac);
    sodium_memzero(l->nonce, sizeof l->nonce);
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    uint8_t *body;
    size_t blen;
    if (encode(self, &a, hdr, &body, &blen) != COLLAB_OK ||
        send_raw(zsock_resolve(l->dealer), NULL, 0, hdr, body, blen) != 0) {
        out_link_kill(self, l);
        emit_down(l, fn, ctx);
        return;
    }
    l->state = OL_UP;
    /* Flush what waited for the handshake, in order. */
    pending_msg_t *p = l->head;
    l->head = l->tail = NULL;
    while (p != NULL) {
        pending_msg_t *next = p->next;
        (void)out_link_send(l, p->hdr, p->body, p->blen);
        free(p);
        p = next;
    }
    cl_tp_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = CL_TP_UP;
    memcpy(ev.key, l->key, 32);
    fn(ctx, &ev);
}

static void on_dealer(cl_transport_t *self, out_link_t *l, cl_tp_handler_fn *fn, void *ctx)
{
    void *sock = zsock_resolve(l->dealer);
    for (int budget = 0; budget < RECV_BUDGET && l->state != OL_DEAD; budget++) {
        zmq_msg_t parts[2];
        int n = recv_parts(sock, parts, 2);
        if (n <= 0)
            return;
        if (is_banned(self, l->key)) {
            close_parts(parts, n > 2 ? 2 : n);
            continue;
        }
        if (n != 2) {
            close_parts(parts, n > 2 ? 2 : n);
            malformed(self, l->key, "wrong number of frames");
            out_link_kill(self, l);
            emit_down(l, fn, ctx);
            return;
        }
        cl_wire_msg_t m;
        int rc = cl_wire_decode(zmq_msg_data(&parts[0]), zmq_msg_size(&parts[0]),
                                zmq_msg_data(&parts[1]), zmq_msg_size(&parts[1]), &m);
        if (rc != CL_WIRE_OK) {
            close_parts(parts, 2);
            if (rc == CL_WIRE_ENOMEM)
                continue;
            malformed(self, l->key, cl_wire_strerror(rc));
            out_link_kill(self, l);
            emit_down(l, fn, ctx);
            return;
        }
        if (m.hdr.type == CL_MSG_REFUSE && l->state == OL_HELLO) {
            char text[CL_WIRE_STR_MAX * 4 + 8];
            cl_text_quote(m.u.refuse.text, 200, text, sizeof text);
            if (m.u.refuse.reason == CL_REFUSE_VERSION)
                cl_error("peer at %s refused this peer: it speaks protocol versions %u..%u, "
                         "this peer %d..%d",
                         l->address, m.u.refuse.min_version, m.u.refuse.max_version,
                         CL_WIRE_MIN_VERSION, CL_WIRE_VERSION);
            char line[CL_WIRE_STR_MAX * 4 + 64];
            snprintf(line, sizeof line, "it refused this peer: %s", text);
            out_link_kill(self, l);
            emit_refused(l, m.u.refuse.reason, line, fn, ctx);
        } else if (m.hdr.run != self->run) {
            self->malformed++;
        } else if (l->state == OL_HELLO && m.hdr.type == CL_MSG_WELCOME) {
            on_welcome(self, l, &m, fn, ctx);
        } else if (l->state != OL_UP || m.hdr.type == CL_MSG_HELLO ||
                   m.hdr.type == CL_MSG_WELCOME || m.hdr.type == CL_MSG_AUTH ||
                   m.hdr.type == CL_MSG_REFUSE) {
            malformed(self, l->key, "handshake message out of order");
            out_link_kill(self, l);
            emit_down(l, fn, ctx);
        } else {
            emit_message(fn, ctx, l->key, &m);
        }
        cl_wire_msg_clear(&m);
        close_parts(parts, 2);
    }
}

static void on_monitor(cl_transport_t *self, out_link_t *l, cl_tp_handler_fn *fn, void *ctx)
{
    void *sock = zsock_resolve(l->monitor);
    for (;;) {
        zmq_msg_t parts[2];
        int n = recv_parts(sock, parts, 2);
        if (n <= 0)
            return;
        uint16_t event = 0;
        if (n >= 1 && zmq_msg_size(&parts[0]) >= 6) {
            const uint8_t *d = zmq_msg_data(&parts[0]);
            event = (uint16_t)(d[0] | (d[1] << 8));
        }
        close_parts(parts, n > 2 ? 2 : n);
        if (l->state == OL_DEAD)
            continue;
        if (event == ZMQ_EVENT_DISCONNECTED) {
            cl_debug("connection to %s closed", l->address);
            out_link_kill(self, l);
            emit_down(l, fn, ctx);
        } else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH ||
                   event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ||
                   event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) {
            if (!l->handshake_warned)
                cl_warn("encrypted handshake with %s failed (wrong peer id in the address, "
                        "or the peer refuses this one); retrying",
                        l->address);
            l->handshake_warned = true;
        }
    }
}

/* ZAP: accept every CURVE client that is not banned, and name it by its
   key so that each of its messages carries the key as User-Id. */
static void on_zap(cl_transport_t *self)
{
    void *sock = zsock_resolve(self->zap);
    for (;;) {
        zmq_msg_t parts[8];
        int n = recv_parts(sock, parts, 8);
        if (n <= 0)
            return;
        int nn = n > 8 ? 8 : n;
        const char *status = "400";
        char user[41] = "";
        if (n == 7 && zmq_msg_size(&parts[5]) == 5 &&
            memcmp(zmq_msg_data(&parts[5]), "CURVE", 5) == 0 && zmq_msg_size(&parts[6]) == 32) {
            const uint8_t *key = zmq_msg_data(&parts[6]);
            if (!is_banned(self, key) && zmq_z85_encode(user, key, 32) != NULL)
                status = "200";
        }
        /* Reply: version, request id, status, text, user id, metadata. */
        zmq_send(sock, "1.0", 3, ZMQ_SNDMORE);
        if (n >= 2)
            zmq_send(sock, zmq_msg_data(&parts[1]), zmq_msg_size(&parts[1]), ZMQ_SNDMORE);
        else
            zmq_send(sock, "", 0, ZMQ_SNDMORE);
        zmq_send(sock, status, 3, ZMQ_SNDMORE);
        zmq_send(sock, status[0] == '2' ? "OK" : "refused", status[0] == '2' ? 2 : 7,
                 ZMQ_SNDMORE);
        zmq_send(sock, user, strlen(user), ZMQ_SNDMORE);
        zmq_send(sock, "", 0, 0);
        close_parts(parts, nn);
    }
}

/* Forgets inbound handshakes that never finished. */
static void sweep(cl_transport_t *self, double now)
{
    if (now - self->last_sweep < 5.0)
        return;
    self->last_sweep = now;
    zlist_t *old = zlist_new();
    if (old == NULL)
        return;
    for (in_link_t *l = zhashx_first(self->in_by_rid); l != NULL;
         l = zhashx_next(self->in_by_rid))
        if (l->state == IL_AUTH_WAIT && now - l->created > HANDSHAKE_KEEP)
            zlist_append(old, l);
    for (in_link_t *l = zlist_first(old); l != NULL; l = zlist_next(old))
        in_link_delete(self, l);
    zlist_destroy(&old);
}

static int grow_items(cl_transport_t *self, size_t n)
{
    if (n <= self->capitems)
        return 0;
    size_t cap = self->capitems > 0 ? self->capitems : 16;
    while (cap < n)
        cap *= 2;
    zmq_pollitem_t *it = realloc(self->items, cap * sizeof *it);
    if (it == NULL)
        return -1;
    self->items = it;
    poll_ref_t *r = realloc(self->refs, cap * sizeof *r);
    if (r == NULL)
        return -1;
    self->refs = r;
    self->capitems = cap;
    return 0;
}

int cl_transport_poll(cl_transport_t *self, zmq_pollitem_t *extra, int nextra, long timeout_ms,
                      cl_tp_handler_fn *fn, void *ctx)
{
    size_t need = (size_t)nextra + 2 + 2 * zhashx_size(self->out_by_key);
    if (grow_items(self, need) != 0) {
        cl_error("out of memory polling sockets");
        return -1;
    }
    size_t n = 0;
    for (int i = 0; i < nextra; i++)
        self->items[n++] = extra[i];
    if (self->router != NULL) {
        self->items[n] = (zmq_pollitem_t){zsock_resolve(self->router), 0, ZMQ_POLLIN, 0};
        self->refs[n++] = (poll_ref_t){REF_ROUTER, NULL};
    }
    if (self->zap != NULL) {
        self->items[n] = (zmq_pollitem_t){zsock_resolve(self->zap), 0, ZMQ_POLLIN, 0};
        self->refs[n++] = (poll_ref_t){REF_ZAP, NULL};
    }
    for (out_link_t *l = zhashx_first(self->out_by_key); l != NULL;
         l = zhashx_next(self->out_by_key)) {
        self->items[n] = (zmq_pollitem_t){zsock_resolve(l->dealer), 0, ZMQ_POLLIN, 0};
        self->refs[n++] = (poll_ref_t){REF_DEALER, l};
        self->items[n] = (zmq_pollitem_t){zsock_resolve(l->monitor), 0, ZMQ_POLLIN, 0};
        self->refs[n++] = (poll_ref_t){REF_MONITOR, l};
    }
    int rc = zmq_poll(self->items, (int)n, timeout_ms);
    if (rc < 0) {
        if (errno == ETERM)
            return -1;
        rc = 0; /* EINTR: nothing ready */
        for (size_t i = 0; i < n; i++)
            self->items[i].revents = 0;
    }
    int ready = 0;
    for (int i = 0; i < nextra; i++) {
        extra[i].revents = self->items[i].revents;
        if (extra[i].revents != 0)
            ready++;
    }
    for (size_t i = (size_t)nextra; i < n && rc > 0; i++) {
        if ((self->items[i].revents & ZMQ_POLLIN) == 0)
            continue;
        poll_ref_t *r = &self->refs[i];
        switch (r->kind) {
        case REF_ROUTER:
            on_router(self, fn, ctx);
            break;
        case REF_ZAP:
            on_zap(self);
            break;
        case REF_DEALER:
            if (r->link->state != OL_DEAD)
                on_dealer(self, r->link, fn, ctx);
            break;
        case REF_MONITOR:
            on_monitor(self, r->link, fn, ctx);
            break;
        }
    }
    /* Reap links killed during dispatch. */
    out_link_t *l;
    while ((l = zlist_pop(self->dead)) != NULL) {
        void *item = l;
        out_link_free(&item);
    }
    sweep(self, now_s());
    return ready;
}

/* ---------------------------------------------------------------------- */
/* Construction. */

static int make_address(cl_transport_t *self, const cl_transport_config_t *cfg, cl_addr_t *la,
                        int port, char *err, size_t errlen)
{
    cl_addr_t a;
    if (cfg->announce != NULL && cfg->announce[0] != '\0') {
        char e2[256];
        if (cl_addr_parse(cfg->announce, &a, e2, sizeof e2) != 0) {
            snprintf(err, errlen, "COLLAB_ANNOUNCE: %s", e2);
            return -1;
        }
        if (a.has_key && memcmp(a.key, self->self_key, 32) != 0) {
            snprintf(err, errlen, "COLLAB_ANNOUNCE names another peer id than this peer's");
            return -1;
        }
        if (a.port == 0)
            a.port = (uint16_t)port;
    } else {
        a = *la;
        a.port = (uint16_t)port;
        if (a.family == CL_ADDR_IP4 && strcmp(a.host, "0.0.0.0") == 0)
            strcpy(a.host, "127.0.0.1");
        else if (a.family == CL_ADDR_IP6 && strcmp(a.host, "::") == 0)
            strcpy(a.host, "::1");
    }
    a.has_key = true;
    memcpy(a.key, self->self_key, 32);
    char text[CL_ADDR_TEXT_MAX];
    if (cl_addr_format(&a, text, sizeof text) != 0 || strlen(text) > CL_WIRE_STR_MAX) {
        snprintf(err, errlen, "the announced address is too long");
        return -1;
    }
    memcpy(self->address, text, strlen(text) + 1);
    return 0;
}

static bool is_loopback(const cl_addr_t *a)
{
    if (a->family == CL_ADDR_IP4)
        return strncmp(a->host, "127.", 4) == 0;
    if (a->family == CL_ADDR_IP6)
        return strcmp(a->host, "::1") == 0;
    return strcmp(a->host, "localhost") == 0;
}

cl_transport_t *cl_transport_new(const cl_transport_config_t *cfg, char *err, size_t errlen)
{
    cl_transport_t *self = calloc(1, sizeof *self);
    if (self == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    self->id = cfg->identity;
    memcpy(self->self_key, cl_identity_public_key(cfg->identity), 32);
    self->client_mode = cfg->client_mode;
    self->run = cl_wire_run_hash(cfg->run_id);
    self->ban_seconds = cfg->ban_seconds > 0 ? cfg->ban_seconds : 60.0;
    cl_hs_derive(cfg->swarm_key, cfg->run_id, self->k);
    self->out_by_key = zhashx_new();
    self->in_by_rid = zhashx_new();
    self->in_by_key = zhashx_new();
    self->bans = zhashx_new();
    self->dead = zlist_new();
    if (self->out_by_key == NULL || self->in_by_rid == NULL || self->in_by_key == NULL ||
        self->bans == NULL || self->dead == NULL) {
        snprintf(err, errlen, "out of memory");
        goto err_destroy;
    }
    zhashx_set_destructor(self->in_by_rid, in_link_free);
    zhashx_set_destructor(self->bans, free_item);

    /* The ZAP handler is per ZeroMQ context, i.e. per process: the first
       transport serves it (several transports share a process in tests). */
    self->zap = zsock_new(ZMQ_REP);
    if (self->zap != NULL && zsock_bind(self->zap, ZAP_ENDPOINT) != 0)
        zsock_destroy(&self->zap);

    if (!cfg->client_mode) {
        const char *listen =
            cfg->listen != NULL && cfg->listen[0] != '\0' ? cfg->listen : "/ip4/0.0.0.0/tcp/0";
        cl_addr_t la;
        char e2[256], ep[CL_ADDR_TEXT_MAX + 16];
        if (cl_addr_parse(listen, &la, e2, sizeof e2) != 0) {
            snprintf(err, errlen, "COLLAB_LISTEN: %s", e2);
            goto err_destroy;
        }
        if (cl_addr_endpoint(&la, ep, sizeof ep) != 0) {
            snprintf(err, errlen, "COLLAB_LISTEN: cannot listen on that address");
            goto err_destroy;
        }
        self->router = zsock_new(ZMQ_ROUTER);
        if (self->router == NULL) {
            snprintf(err, errlen, "cannot create a socket: %s", zmq_strerror(errno));
            goto err_destroy;
        }
        sock_common(self->router);
        zsock_set_router_mandatory(self->router, 1);
        if (la.family == CL_ADDR_IP6 || (la.family == CL_ADDR_DNS && la.dns_version != 4))
            zsock_set_ipv6(self->router, 1);
        zsock_set_curve_server(self->router, 1);
        zsock_set_curve_publickey_bin(self->router, cl_identity_public_key(cfg->identity));
        zsock_set_curve_secretkey_bin(self->router, cl_identity_secret_key(cfg->identity));
        int port = zsock_bind(self->router, "%s", ep);
        if (port < 0) {
            char q[128];
            snprintf(err, errlen, "COLLAB_LISTEN=%s: cannot listen there: %s",
                     cl_text_quote(listen, 100, q, sizeof q), zmq_strerror(errno));
            goto err_destroy;
        }
        if (la.port != 0)
            port = la.port;
        if (make_address(self, cfg, &la, port, err, errlen) != 0)
            goto err_destroy;
        bool open = cfg->swarm_key == NULL || cfg->swarm_key[0] == '\0';
        if (open && !is_loopback(&la))
            cl_warn("this open swarm listens beyond loopback (%s): anyone who can reach it "
                    "may join; set COLLAB_SWARM_KEY to close it",
                    listen);
    }
    return self;
err_destroy:
    cl_transport_destroy(&self, 0);
    return NULL;
}

void cl_transport_destroy(cl_transport_t **self_p, int linger_ms)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    cl_transport_t *self = *self_p;
    /* Let queued messages (GOODBYE) leave, then close everything. */
    if (self->out_by_key != NULL) {
        for (out_link_t *l = zhashx_first(self->out_by_key); l != NULL;
             l = zhashx_next(self->out_by_key)) {
            zsock_set_linger(l->dealer, linger_ms);
            void *item = l;
            out_link_free(&item);
        }
        zhashx_destroy(&self->out_by_key);
    }
    if (self->router != NULL) {
        zsock_set_linger(self->router, linger_ms);
        zsock_destroy(&self->router);
    }
    zhashx_destroy(&self->in_by_key);
    zhashx_destroy(&self->in_by_rid);
    zhashx_destroy(&self->bans);
    if (self->dead != NULL) {
        out_link_t *l;
        while ((l = zlist_pop(self->dead)) != NULL) {
            void *item = l;
            out_link_free(&item);
        }
        zlist_destroy(&self->dead);
    }
    if (self->zap != NULL)
        zsock_destroy(&self->zap);
    sodium_memzero(self->k, sizeof self->k);
    free(self->items);
    free(self->refs);
    free(self);
    *self_p = NULL;
}

const char *cl_transport_address(const cl_transport_t *self)
{
    return self->address;
}

uint64_t cl_transport_malformed(const cl_transport_t *self)
{
    return self->malformed;
}
