/*  cl_transport_connect.c - the transport's outbound links: making one
    (sockets, monitor, HELLO), making it again, dropping it, and what is
    known of each peer's link and version.  Engine thread only, like the
    rest of the transport (cl_transport_int.h).
*/
#include "engine/cl_transport_int.h"

#include "mpi_collab.h"
#include "util/cl_addr.h"
#include "util/cl_log.h"
#include "util/cl_text.h"

#include <czmq.h>
#include <errno.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

void tp_sock_common(const cl_transport_t *self, zsock_t *s)
{
    /* No frame larger than the largest message this peer accepts is even
       read into memory: libzmq drops the connection at its size field. */
    int64_t max = (int64_t)self->max_message;
    zmq_setsockopt(zsock_resolve(s), ZMQ_MAXMSGSIZE, &max, sizeof max);
    /* The sender's own queue is its program's memory; what one connection
       may bring in is bounded by flow control (docs/wire.md section 10):
       past rcv_hwm ZeroMQ stops reading that connection. */
    zsock_set_sndhwm(s, 0);
    zsock_set_rcvhwm(s, self->rcv_hwm);
    zsock_set_linger(s, 0);
    zsock_set_tcp_keepalive(s, 1);
    zsock_set_tcp_keepalive_idle(s, 30);
    zsock_set_tcp_keepalive_intvl(s, 5);
    zsock_set_tcp_keepalive_cnt(s, 4);
}

out_link_t *tp_dealer_open(cl_transport_t *self, const uint8_t key[32], const char *address,
                           unsigned flags, int min_version, int *rc)
{
    *rc = COLLAB_ERR_ARG;
    cl_addr_t a;
    char err[256], ep[CL_ADDR_TEXT_MAX + 16];
    if (address == NULL || cl_addr_parse(address, &a, err, sizeof err) != 0) {
        cl_warn("cannot connect to peer address: %s", address == NULL ? "(none)" : err);
        return NULL;
    }
    if (a.port == 0 || cl_addr_endpoint(&a, ep, sizeof ep) != 0) {
        char q[128];
        cl_warn("cannot connect to %s: it names no port", cl_text_quote(address, 100, q, sizeof q));
        return NULL;
    }
    *rc = COLLAB_ERR_NETWORK;
    if (!tp_limits_allow_link(self, address))
        return NULL;
    *rc = COLLAB_ERR_NO_MEM;
    out_link_t *l = calloc(1, sizeof *l);
    if (l == NULL)
        return NULL;
    memcpy(l->key, key, 32);
    tp_hex(key, 32, l->hex);
    snprintf(l->address, sizeof l->address, "%s", address);
    l->fd = -1;
    l->bfd = -1;
    l->dealer = zsock_new(ZMQ_DEALER);
    if (l->dealer == NULL)
        goto err_free;
    tp_sock_common(self, l->dealer);
    if (a.family == CL_ADDR_IP6 || (a.family == CL_ADDR_DNS && a.dns_version != 4))
        zsock_set_ipv6(l->dealer, 1);
    zsock_set_curve_publickey_bin(l->dealer, cl_identity_public_key(self->id));
    zsock_set_curve_secretkey_bin(l->dealer, cl_identity_secret_key(self->id));
    zsock_set_curve_serverkey_bin(l->dealer, key);
    zsock_set_reconnect_ivl(l->dealer, 200);
    zsock_set_reconnect_ivl_max(l->dealer, 2000);
    char mon[64];
    /* One name per monitor in the process: a transport made after another
       was destroyed may sit at its address, and the inproc endpoints of
       the old one's monitors go away only later, on ZeroMQ's reaper. */
    static atomic_uint_fast64_t monitor_seq;
    snprintf(mon, sizeof mon, "inproc://collab-mon-%llu",
             (unsigned long long)atomic_fetch_add(&monitor_seq, 1) + 1);
    if (zmq_socket_monitor(
            zsock_resolve(l->dealer), mon,
            ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0)
        goto err_free;
    l->monitor = zsock_new(ZMQ_PAIR);
    if (l->monitor == NULL || zsock_connect(l->monitor, "%s", mon) != 0)
        goto err_free;
    if (zsock_connect(l->dealer, "%s", ep) != 0) {
        cl_warn("cannot connect to %s: %s", address, zmq_strerror(errno));
        void *item = l;
        tp_out_link_free(&item);
        *rc = COLLAB_ERR_ARG;
        return NULL;
    }
    /* HELLO goes first; ZeroMQ queues it until the connection is up. */
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_HELLO;
    m.u.hello.max_version = (uint16_t)self->max_version;
    m.u.hello.min_version = (uint16_t)min_version;
    memcpy(m.u.hello.key, self->self_key, 32);
    randombytes_buf(l->nonce, sizeof l->nonce);
    memcpy(m.u.hello.nonce, l->nonce, 32);
    m.u.hello.flags = (uint8_t)((self->client_mode ? CL_HELLO_CLIENT : 0) | flags);
    snprintf(m.u.hello.address, sizeof m.u.hello.address, "%s", self->address);
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    uint8_t *body;
    size_t blen;
    if (tp_encode(self, &m, 0, hdr, &body, &blen) != COLLAB_OK)
        goto err_free;
    if (tp_send_raw(self, zsock_resolve(l->dealer), NULL, 0, hdr, body, blen) != 0)
        goto err_free;
    l->assigned = blen;
    l->state = OL_HELLO;
    l->started = tp_now();
    *rc = COLLAB_OK;
    return l;
err_free:
    cl_error("cannot create a connection to %s: %s", address, zmq_strerror(errno));
    void *item = l;
    tp_out_link_free(&item);
    return NULL;
}

int cl_transport_connect(cl_transport_t *self, const uint8_t key[32], const char *address)
{
    if (memcmp(key, self->self_key, 32) == 0)
        return COLLAB_ERR_ARG;
    if (tp_outbound_of(self, key) != NULL)
        return COLLAB_OK;
    int rc;
    out_link_t *l = tp_dealer_open(self, key, address, 0, self->min_version, &rc);
    if (l == NULL)
        return rc;
    zhashx_insert(self->out_by_key, l->hex, l);
    return COLLAB_OK;
}

bool cl_transport_has_link(const cl_transport_t *self, const uint8_t key[32])
{
    return tp_outbound_of(self, key) != NULL;
}

int cl_transport_expect_client(cl_transport_t *self, const uint8_t key[32])
{
    if (self->client_mode || memcmp(key, self->self_key, 32) == 0 ||
        tp_outbound_of(self, key) != NULL)
        return COLLAB_OK;
    const in_link_t *in = tp_inbound_of(self, key);
    if (in != NULL && in->state == IL_UP)
        return COLLAB_OK;
    /* A link without a socket: it only queues, until the client's own
       connection comes up and takes what waits (tp_on_router). */
    out_link_t *l = calloc(1, sizeof *l);
    if (l == NULL)
        return COLLAB_ERR_NO_MEM;
    memcpy(l->key, key, 32);
    tp_hex(key, 32, l->hex);
    snprintf(l->address, sizeof l->address, "client %.8s", l->hex);
    l->state = OL_HELLO;
    zhashx_insert(self->out_by_key, l->hex, l);
    return COLLAB_OK;
}

bool cl_transport_link_up(const cl_transport_t *self, const uint8_t key[32])
{
    const out_link_t *l = tp_outbound_of(self, key);
    return l != NULL && l->state == OL_UP;
}

int cl_transport_link_version(cl_transport_t *self, const uint8_t key[32])
{
    const out_link_t *l = tp_outbound_of(self, key);
    if (l != NULL && l->state == OL_UP && l->version > 0)
        return l->version;
    const in_link_t *in = tp_inbound_of(self, key);
    return in != NULL && in->state == IL_UP ? in->version : 0;
}

/* Keys whose last version is kept; past it the record starts again (only
   keys that completed a handshake enter it, and a peer whose record went
   is asked through its live link). */
#define TP_VERSIONS_MAX 4096

void tp_note_version(cl_transport_t *self, const uint8_t key[32], int v)
{
    char hex[65];
    tp_hex(key, 32, hex);
    int *at = zhashx_lookup(self->versions, hex);
    if (at != NULL) {
        *at = v;
        return;
    }
    if (zhashx_size(self->versions) >= TP_VERSIONS_MAX)
        zhashx_purge(self->versions);
    int *nv = malloc(sizeof *nv);
    if (nv == NULL)
        return;
    *nv = v;
    zhashx_update(self->versions, hex, nv);
}

int cl_transport_peer_version(cl_transport_t *self, const uint8_t key[32])
{
    int v = cl_transport_link_version(self, key);
    if (v > 0)
        return v;
    char hex[65];
    tp_hex(key, 32, hex);
    const int *at = zhashx_lookup(self->versions, hex);
    return at != NULL ? *at : 0;
}

void cl_transport_set_client(cl_transport_t *self)
{
    self->client_mode = true;
    self->address[0] = '\0'; /* nobody can reach it there */
    /* Our links said "public, at this address" in their HELLO, and the
       others would dial that address back: make each one again. */
    size_t n = zhashx_size(self->out_by_key), k = 0;
    struct {
        uint8_t key[32];
        char address[CL_WIRE_STR_MAX + 1];
    } *redo = calloc(n > 0 ? n : 1, sizeof *redo);
    if (redo == NULL)
        return; /* the links stay; the next reconnection says client */
    for (out_link_t *l = zhashx_first(self->out_by_key); l != NULL && k < n;
         l = zhashx_next(self->out_by_key)) {
        if (l->state == OL_DEAD)
            continue;
        memcpy(redo[k].key, l->key, 32);
        snprintf(redo[k].address, sizeof redo[k].address, "%s", l->address);
        k++;
    }
    for (size_t i = 0; i < k; i++)
        (void)cl_transport_reconnect(self, redo[i].key, redo[i].address);
    free(redo);
}

void cl_transport_set_min_version(cl_transport_t *self, int version, const char *why)
{
    if (self == NULL)
        return;
    if (version > self->max_version)
        version = self->max_version;
    if (version > self->min_version) {
        self->min_version = version;
        snprintf(self->min_why, sizeof self->min_why, "%s", why != NULL ? why : "");
    }
}

int cl_transport_reconnect(cl_transport_t *self, const uint8_t key[32], const char *address)
{
    out_link_t *out = tp_outbound_of(self, key);
    if (out != NULL)
        tp_out_link_kill(self, out); /* reaped after the current dispatch */
    return cl_transport_connect(self, key, address);
}

void cl_transport_drop(cl_transport_t *self, const uint8_t key[32])
{
    out_link_t *out = tp_outbound_of(self, key);
    if (out != NULL)
        tp_out_link_kill(self, out);
    /* Its inbound connections stay until they close: a peer dropped while
       it is alive after all (the views of a failed coordinator reached
       only some peers) must still be heard, to learn that it was removed
       and to join again on the same connection.  Forgetting them would
       make its next message one "before the handshake". */
}
