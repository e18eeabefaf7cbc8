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
#include "engine/cl_transport_int.h"

#include "engine/cl_handshake.h"
#include "mpi_collab.h"
#include "util/cl_addr.h"
#include "util/cl_log.h"
#include "util/cl_text.h"

#include <czmq.h>
#include <errno.h>
#include <limits.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

double tp_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void tp_hex(const uint8_t *b, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

const char *tp_short_id(const uint8_t key[32], char out[16])
{
    char id[CL_PEER_ID_MAX];
    if (cl_base58_encode(key, 32, id, sizeof id) != 0)
        strcpy(id, "?");
    snprintf(out, 16, "%.8s", id);
    return out;
}

/* ---------------------------------------------------------------------- */
/* Bans. */

bool tp_is_banned(cl_transport_t *self, const uint8_t key[32])
{
    char hex[65];
    tp_hex(key, 32, hex);
    double *until = zhashx_lookup(self->bans, hex);
    if (until == NULL)
        return false;
    if (*until > tp_now())
        return true;
    zhashx_delete(self->bans, hex);
    return false;
}

void cl_transport_ban(cl_transport_t *self, const uint8_t key[32], double seconds)
{
    char hex[65];
    tp_hex(key, 32, hex);
    double *until = malloc(sizeof *until);
    if (until == NULL)
        return;
    *until = tp_now() + seconds;
    zhashx_update(self->bans, hex, until);
}

void tp_malformed(cl_transport_t *self, const uint8_t key[32], const char *what)
{
    char sid[16];
    self->malformed++;
    if (!tp_is_banned(self, key))
        cl_warn("dropped a malformed message from peer %s… (%s); ignoring it for %.0f s",
                tp_short_id(key, sid), what, self->ban_seconds);
    cl_transport_ban(self, key, self->ban_seconds);
}

/* ---------------------------------------------------------------------- */
/* Links. */

void tp_pending_free(pending_msg_t *p)
{
    while (p != NULL) {
        pending_msg_t *next = p->next;
        free(p->body);
        free(p);
        p = next;
    }
}

static void pending_free_all(out_link_t *l)
{
    tp_pending_free(l->head);
    l->head = l->tail = NULL;
    l->pending_bytes = 0;
}

void tp_out_link_free(void **item)
{
    out_link_t *l = *item;
    if (l == NULL)
        return;
    for (int i = 0; i < CL_TP_STRIPES_MAX - 1; i++) {
        void *s = l->stripe[i];
        tp_out_link_free(&s);
    }
    /* Stop the monitor while its reader still exists: libzmq sends
       monitor events from its I/O thread with a blocking send, which would
       never return (holding the socket's monitor lock) once the reader is
       gone. */
    if (l->dealer != NULL)
        zmq_socket_monitor(zsock_resolve(l->dealer), NULL, 0);
    if (l->monitor != NULL)
        zsock_destroy(&l->monitor);
    if (l->dealer != NULL)
        zsock_destroy(&l->dealer);
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
    tp_pending_free(l->held);
    sodium_memzero(l, sizeof *l);
    free(l);
    *item = NULL;
}

/* Marks an outbound link dead: it stops sending and receiving now and is
   freed after the current dispatch. */
void tp_out_link_kill(cl_transport_t *self, out_link_t *l)
{
    if (l->primary != NULL)
        l = l->primary; /* what went over a stripe is lost with it: the whole link goes */
    if (l->state == OL_DEAD)
        return;
    for (int i = 0; i < CL_TP_STRIPES_MAX - 1; i++)
        if (l->stripe[i] != NULL)
            tp_stripe_drop(self, l->stripe[i]);
    l->state = OL_DEAD;
    pending_free_all(l);
    zhashx_delete(self->out_by_key, l->hex); /* no destructor: freed when reaped */
    zlist_append(self->dead, l);
}

out_link_t *tp_out_link_again(cl_transport_t *self, out_link_t *l)
{
    pending_msg_t *head = l->head, *tail = l->tail;
    size_t bytes = l->pending_bytes;
    l->head = l->tail = NULL;
    l->pending_bytes = 0;
    uint8_t key[32];
    char address[sizeof l->address];
    memcpy(key, l->key, 32);
    memcpy(address, l->address, sizeof address);
    tp_out_link_kill(self, l);
    out_link_t *again =
        cl_transport_connect(self, key, address) == COLLAB_OK ? tp_outbound_of(self, key) : NULL;
    if (again == NULL) {
        /* Back to the dead link, freed with it when it is reaped. */
        l->head = head;
        l->tail = tail;
        l->pending_bytes = bytes;
        return NULL;
    }
    if (head != NULL) {
        tail->next = again->head;
        if (again->tail == NULL)
            again->tail = tail;
        again->head = head;
        again->pending_bytes += bytes;
    }
    return again;
}

void tp_in_link_delete(cl_transport_t *self, in_link_t *l)
{
    if (l->state == IL_AUTH_WAIT && self->npending > 0)
        self->npending--;
    char khex[65];
    tp_hex(l->key, 32, khex);
    in_link_t *link = zhashx_lookup(self->in_by_key, khex);
    if (link == l)
        zhashx_delete(self->in_by_key, khex);
    else if (l->stripe && link != NULL && link->serial < l->serial)
        link->stripes_gone += l->colls; /* a FENCE of its link still counts them */
    tp_in_held_free(self, l);
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
int tp_send_raw(cl_transport_t *self, void *sock, const uint8_t *rid, size_t rid_len,
                const uint8_t *hdr, uint8_t *body, size_t blen)
{
    self->zmq_touched = true; /* a send may take in the socket's commands (cl_transport_poll) */
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
int tp_encode(cl_transport_t *self, cl_wire_msg_t *m, int link, uint8_t hdr[CL_WIRE_HDR_SIZE],
              uint8_t **body, size_t *blen)
{
    m->hdr.version = (uint8_t)cl_wire_msg_version(&m->hdr, link);
    m->hdr.run = self->run;
    int rc = cl_wire_encode_body(m, body, blen);
    if (rc == CL_WIRE_ENOMEM)
        return COLLAB_ERR_NO_MEM;
    if (rc != CL_WIRE_OK) {
        cl_error("internal: refusing to send a malformed %s message",
                 cl_wire_type_name(m->hdr.type));
        return COLLAB_ERR_ARG;
    }
    if (*blen > self->max_message) {
        cl_error("cannot send a %s message of %zu bytes: peers accept at most %zu "
                 "(COLLAB_MAX_MESSAGE)",
                 cl_wire_type_name(m->hdr.type), *blen, self->max_message);
        free(*body);
        *body = NULL;
        return COLLAB_ERR_ARG;
    }
    m->hdr.length = *blen;
    cl_wire_hdr_encode(&m->hdr, hdr);
    return COLLAB_OK;
}

int tp_out_link_send(cl_transport_t *self, out_link_t *l, const uint8_t *hdr, uint8_t *body,
                     size_t blen)
{
    double now = tp_now();
    if (l->state == OL_UP && l->last_tx > 0 && now - l->last_tx > self->link_idle / 2) {
        /* Nothing sent on it for half of link_idle (this peer was
           stopped, say): the peer may have forgotten the connection
           (tp_sweep, with its own COLLAB_LINK_IDLE, the same by default),
           and would drop what comes on it.  A new handshake first. */
        cl_debug("nothing sent to %s for %.0f s: starting a new handshake before sending",
                 l->address, now - l->last_tx);
        l = tp_out_link_again(self, l);
        if (l == NULL) {
            free(body);
            return COLLAB_ERR_PROC_FAILED;
        }
    }
    if (l->state == OL_UP) {
        if (tp_stripe_send(self, l, hdr, body, blen) != 0) {
            cl_debug("send to %s failed: %s", l->address, zmq_strerror(errno));
            return COLLAB_ERR_PROC_FAILED;
        }
        l->last_tx = now;
        return COLLAB_OK;
    }
    if (l->pending_bytes + blen > PENDING_LIMIT) {
        /* The peer never answered our handshake: do not hoard for it. */
        if (!l->handshake_warned)
            cl_warn("%s does not answer; dropping what was queued for it", l->address);
        l->handshake_warned = true;
        free(body);
        return COLLAB_ERR_PROC_FAILED;
    }
    pending_msg_t *p = calloc(1, sizeof *p);
    if (p == NULL) {
        free(body);
        return COLLAB_ERR_NO_MEM;
    }
    memcpy(p->hdr, hdr, CL_WIRE_HDR_SIZE);
    p->body = body;
    p->blen = blen;
    l->pending_bytes += blen;
    if (l->tail != NULL)
        l->tail->next = p;
    else
        l->head = p;
    l->tail = p;
    return COLLAB_OK;
}

int tp_router_send(cl_transport_t *self, in_link_t *l, const uint8_t *hdr, uint8_t *body,
                   size_t blen)
{
    if (self->router == NULL) {
        free(body);
        return COLLAB_ERR_PROC_FAILED;
    }
    if (tp_send_raw(self, zsock_resolve(self->router), l->rid, l->rid_len, hdr, body, blen) != 0) {
        /* ROUTER_MANDATORY: the connection is gone. */
        cl_debug("send on inbound connection failed: %s", zmq_strerror(errno));
        tp_in_link_delete(self, l);
        return COLLAB_ERR_PROC_FAILED;
    }
    return COLLAB_OK;
}

in_link_t *tp_inbound_of(cl_transport_t *self, const uint8_t key[32])
{
    char hex[65];
    tp_hex(key, 32, hex);
    return zhashx_lookup(self->in_by_key, hex);
}

out_link_t *tp_outbound_of(const cl_transport_t *self, const uint8_t key[32])
{
    char hex[65];
    tp_hex(key, 32, hex);
    return zhashx_lookup(self->out_by_key, hex);
}

int tp_send_encoded(cl_transport_t *self, const uint8_t key[32], const uint8_t *hdr, uint8_t *body,
                    size_t blen)
{
    out_link_t *out = tp_outbound_of(self, key);
    in_link_t *in = tp_inbound_of(self, key);
    if (in != NULL && in->state == IL_UP && in->client)
        out = NULL; /* a client is only reachable on its own connection */
    if (out == NULL && in != NULL && in->state == IL_UP && !in->client && in->address[0] != '\0') {
        if (cl_transport_connect(self, key, in->address) == COLLAB_OK)
            out = tp_outbound_of(self, key);
    }
    if (out == NULL && (in == NULL || in->state != IL_UP)) {
        free(body);
        return COLLAB_ERR_PROC_FAILED;
    }
    if (out != NULL)
        return tp_out_link_send(self, out, hdr, body, blen);
    return tp_router_send(self, in, hdr, body, blen);
}

/* A COLL message to a peer on a same-host link: the header through the
   codec, the payload straight into the ring.  Returns 1 when taken, 0
   when it must go over the network, or a negative status. */
static int send_shm_coll(cl_transport_t *self, const uint8_t key[32], cl_wire_msg_t *m)
{
    if (m->payload == NULL && m->payload_len > 0) {
        cl_error("internal: refusing to send a malformed COLL message");
        return COLLAB_ERR_ARG;
    }
    if (m->payload_len > self->max_message) {
        cl_error("cannot send a COLL message of %zu bytes: peers accept at most %zu "
                 "(COLLAB_MAX_MESSAGE)",
                 m->payload_len, self->max_message);
        return COLLAB_ERR_ARG;
    }
    m->hdr.version = (uint8_t)cl_wire_msg_version(&m->hdr, 0);
    m->hdr.run = self->run;
    m->hdr.length = m->payload_len;
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    cl_wire_hdr_encode(&m->hdr, hdr);
    return cl_shm_send(self->shm, key, hdr, m->payload, m->payload_len, CL_SHM_RING);
}

int cl_transport_send(cl_transport_t *self, const uint8_t key[32], cl_wire_msg_t *m)
{
    if (self->shm != NULL && m->hdr.type == CL_MSG_COLL && cl_shm_up(self->shm, key)) {
        int rc = send_shm_coll(self, key, m);
        if (rc != 0)
            return rc < 0 ? rc : COLLAB_OK;
    }
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    uint8_t *body;
    size_t blen;
    int rc = tp_encode(self, m, cl_transport_link_version(self, key), hdr, &body, &blen);
    if (rc != COLLAB_OK)
        return rc;
    if (self->shm != NULL) {
        /* Point-to-point messages through the ring of a same-host link
           (cl_shm.h); everything else, or one that must not overtake a
           CurveZMQ message the peer may not have yet, behind ring
           messages still queued for key, if any. */
        bool p2p = tp_is_p2p(m->hdr.type);
        unsigned flow = p2p ? CL_SHM_FLOW : 0;
        rc = p2p ? cl_shm_send(self->shm, key, hdr, body, blen, CL_SHM_RING | flow) : 0;
        if (rc == 0)
            rc = cl_shm_send(self->shm, key, hdr, body, blen, flow);
        if (rc != 0) {
            free(body);
            return rc < 0 ? rc : COLLAB_OK;
        }
    }
    return tp_send_encoded(self, key, hdr, body, blen);
}

int cl_transport_reply(cl_transport_t *self, const uint8_t key[32], cl_wire_msg_t *m)
{
    in_link_t *in = tp_inbound_of(self, key);
    if (in == NULL || in->state != IL_UP)
        return cl_transport_send(self, key, m);
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    uint8_t *body;
    size_t blen;
    int rc = tp_encode(self, m, in->version, hdr, &body, &blen);
    if (rc != COLLAB_OK)
        return rc;
    if (self->shm != NULL && cl_shm_up(self->shm, key)) {
        /* Behind ring messages still queued for key, if any (then on
           the path rule, which reaches the same peer). */
        rc = cl_shm_send(self->shm, key, hdr, body, blen, tp_is_p2p(m->hdr.type) ? CL_SHM_FLOW : 0);
        if (rc != 0) {
            free(body);
            return rc < 0 ? rc : COLLAB_OK;
        }
    }
    return tp_router_send(self, in, hdr, body, blen);
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
    self->max_message = cfg->max_message > 0 ? cfg->max_message : DEFAULT_MAX_MESSAGE;
    self->rcv_hwm = cfg->rcv_hwm <= INT_MAX ? (int)cfg->rcv_hwm : INT_MAX;
    self->max_version =
        cfg->max_version >= CL_WIRE_MIN_VERSION && cfg->max_version <= CL_WIRE_VERSION
            ? cfg->max_version
            : CL_WIRE_VERSION;
    self->min_version = CL_WIRE_MIN_VERSION;
    self->zmq_touched = true; /* the first round asks every socket */
    cl_transport_set_min_version(self, cfg->min_version, cfg->min_why);
    self->max_handshakes = cfg->max_handshakes > 0 ? cfg->max_handshakes : DEFAULT_MAX_HANDSHAKES;
    self->link_idle = cfg->link_idle > 0 ? cfg->link_idle : DEFAULT_LINK_IDLE;
    self->handshake_keep = cfg->handshake_keep > 0 ? cfg->handshake_keep : DEFAULT_HANDSHAKE_KEEP;
    self->stripes = cfg->stripes < 1                   ? 1
                    : cfg->stripes > CL_TP_STRIPES_MAX ? CL_TP_STRIPES_MAX
                                                       : cfg->stripes;
    self->stripes_auto = cfg->stripes_auto && self->stripes > 1;
    cl_stripe_probe_init(&self->probe, self->stripes_auto ? self->stripes : 1);
    self->max_handshakes_host =
        cfg->max_handshakes_host > 0 ? cfg->max_handshakes_host : DEFAULT_MAX_HANDSHAKES_HOST;
    cl_transport_io_threads(self->stripes); /* too late if the engine made a socket already */
    cl_hs_derive(cfg->swarm_secret, cfg->run_id, self->k);
    self->out_by_key = zhashx_new();
    self->in_by_rid = zhashx_new();
    self->in_by_key = zhashx_new();
    self->bans = zhashx_new();
    self->versions = zhashx_new();
    self->dead = zlist_new();
    if (self->out_by_key == NULL || self->in_by_rid == NULL || self->in_by_key == NULL ||
        self->bans == NULL || self->versions == NULL || self->dead == NULL) {
        snprintf(err, errlen, "out of memory");
        goto err_destroy;
    }
    zhashx_set_destructor(self->in_by_rid, in_link_free);
    zhashx_set_destructor(self->bans, free_item);
    zhashx_set_destructor(self->versions, free_item);

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
        tp_sock_common(self, self->router);
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
        bool open = cfg->swarm_secret == NULL;
        if (open && !is_loopback(&la))
            cl_warn("this open swarm listens beyond loopback (%s): anyone who can reach it "
                    "may join; set COLLAB_SWARM_KEY_FILE to close it",
                    listen);
    }
    if (cfg->shm)
        tp_shm_start(self, cfg);
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
    /* Messages still queued behind a full ring go out on the network. */
    cl_shm_destroy(&self->shm);
    /* Let queued messages (GOODBYE) leave, then close everything. */
    if (self->out_by_key != NULL) {
        for (out_link_t *l = zhashx_first(self->out_by_key); l != NULL;
             l = zhashx_next(self->out_by_key)) {
            if (l->dealer != NULL)
                zsock_set_linger(l->dealer, linger_ms);
            for (int i = 0; i < CL_TP_STRIPES_MAX - 1; i++)
                if (l->stripe[i] != NULL)
                    zsock_set_linger(l->stripe[i]->dealer, linger_ms); /* what a GOODBYE follows */
            void *item = l;
            tp_out_link_free(&item);
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
    zhashx_destroy(&self->versions);
    if (self->dead != NULL) {
        out_link_t *l;
        while ((l = zlist_pop(self->dead)) != NULL) {
            void *item = l;
            tp_out_link_free(&item);
        }
        zlist_destroy(&self->dead);
    }
    if (self->zap != NULL)
        zsock_destroy(&self->zap);
    sodium_memzero(self->k, sizeof self->k);
    free(self->items);
    free(self->refs);
    free(self->pfds);
    free(self->fired);
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

struct cl_shm *cl_transport_shm(cl_transport_t *self)
{
    return self != NULL ? self->shm : NULL;
}
