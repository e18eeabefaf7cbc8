/*  cl_transport_recv.c - what arrives on the transport's sockets.

    The ROUTER's messages are tied to the key their sender proved with
    CurveZMQ (the ZAP handler below makes it the User-Id); the DEALERs'
    messages come from the server whose key the link pinned.  Each link
    runs the handshake of docs/wire.md before any other message of it is
    read; anything malformed is dropped, counted and its sender banned.
*/
#include "engine/cl_transport_int.h"

#include "engine/cl_handshake.h"
#include "mpi_collab.h"
#include "util/cl_log.h"
#include "util/cl_text.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
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

void tp_emit(cl_transport_t *self, cl_tp_handler_fn *fn, void *ctx, const uint8_t key[32],
             const cl_wire_msg_t *m, const uint8_t *hdr, const uint8_t *body, size_t blen)
{
    /* What key put into shared memory before this message comes first;
       and key learns that this one arrived (its header and body). */
    cl_shm_drain_from(self->shm, key);
    cl_shm_net_received(self->shm, key, hdr, body, blen);
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
    m.u.refuse.max_version = (uint16_t)self->max_version;
    m.u.refuse.min_version = (uint16_t)self->min_version;
    snprintf(m.u.refuse.text, sizeof m.u.refuse.text, "%s", text);
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    uint8_t *body;
    size_t blen;
    if (tp_encode(self, &m, 0, hdr, &body, &blen) == COLLAB_OK)
        (void)tp_send_raw(self, zsock_resolve(self->router), tmp->rid, tmp->rid_len, hdr, body, blen);
}

static void on_hello(cl_transport_t *self, const uint8_t *rid, size_t rid_len, const char *rhex,
                     const uint8_t key[32], const cl_wire_msg_t *m, const char *host)
{
    char sid[16];
    const cl_wire_hello_t *h = &m->u.hello;
    in_link_t tmp;
    memset(&tmp, 0, sizeof tmp);
    memcpy(tmp.rid, rid, rid_len);
    tmp.rid_len = rid_len;
    if (zhashx_lookup(self->in_by_rid, rhex) != NULL) {
        tp_malformed(self, key, "second HELLO on one connection");
        return;
    }
    if (memcmp(h->key, key, 32) != 0) {
        tp_malformed(self, key, "HELLO names a key other than its CurveZMQ key");
        return;
    }
    int v =
        cl_hs_pick_version(self->min_version, self->max_version, h->min_version, h->max_version);
    if (v == 0) {
        char text[400];
        snprintf(text, sizeof text,
                 "protocol versions %u..%u are not compatible with this peer's %d..%d%s%s%s",
                 h->min_version, h->max_version, self->min_version, self->max_version,
                 self->min_why[0] != '\0' ? " (" : "", self->min_why,
                 self->min_why[0] != '\0' ? ")" : "");
        cl_warn("refused peer %s…: its %s", tp_short_id(key, sid), text);
        send_refuse(self, &tmp, CL_REFUSE_VERSION, text);
        return;
    }
    if (m->hdr.run != self->run) {
        cl_warn("refused peer %s…: it belongs to another run (COLLAB_RUN_ID differs)",
                tp_short_id(key, sid));
        send_refuse(self, &tmp, CL_REFUSE_RUN, "COLLAB_RUN_ID differs");
        return;
    }
    /* Only unfinished handshakes count: a completed link costs a key that
       passed the handshake, and expires when silent (tp_sweep). */
    if (self->npending >= self->max_handshakes) {
        send_refuse(self, &tmp, CL_REFUSE_BUSY, "too many connections");
        return;
    }
    /* One address may not hold the whole table: a flood of fresh keys from
       one host leaves room for everyone else. */
    size_t same = 0;
    for (in_link_t *o = zhashx_first(self->in_by_rid); o != NULL && host[0] != '\0';
         o = zhashx_next(self->in_by_rid))
        same += o->state == IL_AUTH_WAIT && strcmp(o->host, host) == 0;
    if (same >= self->max_handshakes_host) {
        send_refuse(self, &tmp, CL_REFUSE_BUSY, "too many connections from this address");
        return;
    }
    if ((h->flags & CL_HELLO_STRIPE) != 0 && v < CL_WIRE_STRIPE_VERSION) {
        tp_malformed(self, key, "a stripe's HELLO below version 12");
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
    l->stripe = (h->flags & CL_HELLO_STRIPE) != 0;
    l->serial = ++self->in_serial;
    l->version = v;
    snprintf(l->address, sizeof l->address, "%s", h->address);
    l->created = l->last = tp_now();
    snprintf(l->host, sizeof l->host, "%s", host);
    zhashx_update(self->in_by_rid, l->rid_hex, l);
    self->npending++;

    cl_wire_msg_t w;
    memset(&w, 0, sizeof w);
    w.hdr.type = CL_MSG_WELCOME;
    w.u.welcome.version = (uint16_t)v;
    memcpy(w.u.welcome.nonce, l->snonce, 32);
    cl_hs_mac(self->k, "WELCOME", key, self->self_key, l->cnonce, l->snonce, w.u.welcome.mac);
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    uint8_t *body;
    size_t blen;
    if (tp_encode(self, &w, 0, hdr, &body, &blen) == COLLAB_OK)
        (void)tp_send_raw(self, zsock_resolve(self->router), rid, rid_len, hdr, body, blen);
}

void tp_router_frames(cl_transport_t *self, cl_tp_handler_fn *fn, void *ctx, const uint8_t key[32],
                      const uint8_t *rid, size_t rid_len, const char *host, const uint8_t *hdr,
                      size_t hlen, const uint8_t *body, size_t blen)
{
    if (rid_len == 0 || rid_len > 255)
        return; /* the caller checked: ZeroMQ's routing ids are 1..255 bytes */
    char rhex[513];
    tp_hex(rid, rid_len, rhex);
    cl_wire_msg_t m;
    int rc = cl_wire_decode(hdr, hlen, body, blen, &m);
    if (rc != CL_WIRE_OK) {
        if (rc != CL_WIRE_ENOMEM)
            tp_malformed(self, key, cl_wire_strerror(rc));
        return;
    }
    in_link_t *l = zhashx_lookup(self->in_by_rid, rhex);
    if (l != NULL && memcmp(l->key, key, 32) == 0)
        l->last = tp_now();
    if (m.hdr.type == CL_MSG_HELLO) {
        on_hello(self, rid, rid_len, rhex, key, &m, host);
    } else if (m.hdr.run != self->run) {
        self->malformed++; /* another run: drop, no ban */
    } else if (l == NULL || memcmp(l->key, key, 32) != 0) {
        /* A well-formed message of this run on a connection this side
           forgot (it closed the link of a peer it took out, and the
           peer's socket still sends): dropped, but the sender is not
           banned, so that it can handshake again at once. */
        char sid[16];
        self->malformed++;
        cl_debug("dropped a message from peer %s… on a connection without a handshake",
                 tp_short_id(key, sid));
    } else if (m.hdr.type == CL_MSG_AUTH && l->state == IL_AUTH_WAIT) {
        if (cl_hs_verify(self->k, "AUTH", l->key, self->self_key, l->cnonce, l->snonce,
                         m.u.auth.mac)) {
            l->state = IL_UP;
            tp_note_version(self, key, l->version);
            if (self->npending > 0)
                self->npending--;
            sodium_memzero(l->cnonce, 32);
            sodium_memzero(l->snonce, 32);
            if (l->stripe) {
                /* One more connection of the sender's link: it replaces
                   nothing and is not news to the engine. */
                char sid[16];
                cl_debug("peer %s… opened a stripe of its link", tp_short_id(key, sid));
                cl_wire_msg_clear(&m);
                return;
            }
            char khex[65];
            tp_hex(key, 32, khex);
            /* Older connections of the same key (it reconnected, or
               restarted) are dead: forget them. */
            zlist_t *old = zlist_new();
            for (in_link_t *o = zhashx_first(self->in_by_rid); o != NULL && old != NULL;
                 o = zhashx_next(self->in_by_rid))
                if (o != l && memcmp(o->key, key, 32) == 0 && o->serial < l->serial)
                    zlist_append(old, o);
            for (in_link_t *o = old != NULL ? zlist_first(old) : NULL; o != NULL;
                 o = zlist_next(old))
                tp_in_link_delete(self, o);
            zlist_destroy(&old);
            zhashx_update(self->in_by_key, khex, l);
            /* A client binds nothing: a link we opened to an address
               someone gave for it can never come up.  What waits in it
               goes over this connection instead, in order. */
            out_link_t *out = tp_outbound_of(self, key);
            bool gone = false;
            if (l->client && out != NULL && out->state != OL_UP) {
                pending_msg_t *p = out->head;
                out->head = out->tail = NULL;
                out->pending_bytes = 0;
                while (p != NULL) {
                    pending_msg_t *next = p->next;
                    if (gone)
                        free(p->body);
                    else if (tp_router_send(self, l, p->hdr, p->body, p->blen) != COLLAB_OK)
                        gone = true; /* l is forgotten already */
                    free(p);
                    p = next;
                }
                tp_out_link_kill(self, out);
            }
            if (gone) {
                cl_wire_msg_clear(&m);
                return;
            }
            cl_tp_event_t ev;
            memset(&ev, 0, sizeof ev);
            ev.kind = CL_TP_UP;
            memcpy(ev.key, key, 32);
            ev.inbound = true;
            ev.client = l->client;
            ev.address = l->address;
            fn(ctx, &ev);
            cl_shm_offer(self->shm, key);
        } else {
            char sid[16];
            cl_warn("refused peer %s…: it could not prove it knows the swarm key",
                    tp_short_id(key, sid));
            send_refuse(self, l, CL_REFUSE_AUTH, "wrong swarm key");
            cl_transport_ban(self, key, self->ban_seconds);
            tp_in_link_delete(self, l);
        }
    } else if (l->state != IL_UP || m.hdr.type == CL_MSG_AUTH || m.hdr.type == CL_MSG_WELCOME ||
               m.hdr.type == CL_MSG_REFUSE) {
        tp_malformed(self, key, "handshake message out of order");
    } else {
        tp_in_message(self, fn, ctx, l, &m, hdr, body, blen);
    }
    cl_wire_msg_clear(&m);
}

void tp_on_router(cl_transport_t *self, cl_tp_handler_fn *fn, void *ctx)
{
    void *sock = zsock_resolve(self->router);
    for (int budget = 0; budget < RECV_BUDGET; budget++) {
        zmq_msg_t parts[3];
        int n = recv_parts(sock, parts, 3);
        if (n <= 0)
            return;
        if (n > 3) {
            /* More frames than any message has: the first three are still
               ours to close (the rest were closed as they arrived). */
            self->malformed++;
            close_parts(parts, 3);
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
        if (tp_is_banned(self, key)) {
            close_parts(parts, n);
            continue;
        }
        if (n != 3 || zmq_msg_size(&parts[0]) == 0 || zmq_msg_size(&parts[0]) > 255) {
            tp_malformed(self, key, "wrong number of frames");
            close_parts(parts, n);
            continue;
        }
        const char *host = zmq_msg_gets(&parts[1], "Peer-Address");
        tp_router_frames(self, fn, ctx, key, zmq_msg_data(&parts[0]), zmq_msg_size(&parts[0]),
                         host != NULL ? host : "", zmq_msg_data(&parts[1]), zmq_msg_size(&parts[1]),
                         zmq_msg_data(&parts[2]), zmq_msg_size(&parts[2]));
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

/* A WELCOME that came late: this peer did not run for a while (stopped,
   or starved of the CPU), or the network held it.  The server forgets an
   unfinished handshake after handshake_keep, and an AUTH it no longer
   expects would leave this link up on this side only: every message this
   peer sends on it would be dropped there, for as long as the connection
   lasts.  So the handshake starts over on a new connection, which takes
   what waits to be sent.  Half of handshake_keep leaves the AUTH that
   much time to arrive. */
static bool welcome_late(const cl_transport_t *self, const out_link_t *l)
{
    return tp_now() - l->started > self->handshake_keep / 2;
}

static void handshake_again(cl_transport_t *self, out_link_t *l, cl_tp_handler_fn *fn, void *ctx)
{
    cl_debug("the handshake with %s took %.1f s, and the peer forgets one after %.0f s: "
             "starting it again on a new connection",
             l->address, tp_now() - l->started, self->handshake_keep);
    if (tp_out_link_again(self, l) == NULL)
        emit_down(l, fn, ctx);
}

static void on_welcome(cl_transport_t *self, out_link_t *l, const cl_wire_msg_t *m,
                       cl_tp_handler_fn *fn, void *ctx)
{
    const cl_wire_welcome_t *w = &m->u.welcome;
    if (w->version < self->min_version || w->version > self->max_version) {
        tp_malformed(self, l->key, "WELCOME chose a version this peer does not speak");
        tp_out_link_kill(self, l);
        emit_refused(l, CL_REFUSE_VERSION, "chose an unknown protocol version", fn, ctx);
        return;
    }
    if (!cl_hs_verify(self->k, "WELCOME", self->self_key, l->key, l->nonce, w->nonce, w->mac)) {
        cl_debug("peer at %s could not prove it knows the swarm key", l->address);
        cl_transport_ban(self, l->key, self->ban_seconds);
        tp_out_link_kill(self, l);
        emit_refused(l, CL_REFUSE_AUTH,
                     "it could not prove it knows the swarm key (another COLLAB_SWARM_KEY?)", fn,
                     ctx);
        return;
    }
    if (welcome_late(self, l)) {
        if (l->primary != NULL)
            tp_stripe_drop(self, l); /* opened again when needed */
        else
            handshake_again(self, l, fn, ctx);
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
    if (tp_encode(self, &a, 0, hdr, &body, &blen) != COLLAB_OK ||
        tp_send_raw(self, zsock_resolve(l->dealer), NULL, 0, hdr, body, blen) != 0) {
        tp_out_link_kill(self, l);
        emit_down(l, fn, ctx);
        return;
    }
    l->version = w->version;
    l->state = OL_UP;
    l->last_tx = tp_now();
    if (l->primary != NULL)
        return; /* a stripe: nothing waited for it, and the link is up already */
    tp_note_version(self, l->key, l->version);
    /* Flush what waited for the handshake, in order. */
    pending_msg_t *p = l->head;
    l->head = l->tail = NULL;
    l->pending_bytes = 0;
    while (p != NULL) {
        pending_msg_t *next = p->next;
        (void)tp_out_link_send(self, l, p->hdr, p->body, p->blen);
        free(p);
        p = next;
    }
    cl_tp_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = CL_TP_UP;
    memcpy(ev.key, l->key, 32);
    fn(ctx, &ev);
    cl_shm_offer(self->shm, l->key);
}

bool tp_dealer_frames(cl_transport_t *self, out_link_t *l, cl_tp_handler_fn *fn, void *ctx,
                      const uint8_t *hdr, size_t hlen, const uint8_t *body, size_t blen)
{
    cl_wire_msg_t m;
    int rc = cl_wire_decode(hdr, hlen, body, blen, &m);
    if (rc != CL_WIRE_OK) {
        if (rc == CL_WIRE_ENOMEM)
            return true;
        tp_malformed(self, l->key, cl_wire_strerror(rc));
        tp_out_link_kill(self, l);
        emit_down(l, fn, ctx);
        return false;
    }
    if (m.hdr.type == CL_MSG_REFUSE && l->state == OL_HELLO) {
        char text[CL_WIRE_STR_MAX * 4 + 8];
        cl_text_quote(m.u.refuse.text, 200, text, sizeof text);
        if (m.u.refuse.reason == CL_REFUSE_VERSION)
            cl_error("peer at %s refused this peer: it speaks protocol versions %u..%u, "
                     "this peer %d..%d",
                     l->address, m.u.refuse.min_version, m.u.refuse.max_version,
                     self->min_version, self->max_version);
        char line[CL_WIRE_STR_MAX * 4 + 64];
        snprintf(line, sizeof line, "it refused this peer: %s", text);
        if (l->primary != NULL) {
            /* A stripe: the link goes on over the connections it has. */
            cl_debug("%s refused a stripe: %s", l->address, text);
            l->primary->stripes_refused = true;
            tp_stripe_drop(self, l);
        } else {
            tp_out_link_kill(self, l);
            emit_refused(l, m.u.refuse.reason, line, fn, ctx);
        }
    } else if (m.hdr.run != self->run) {
        self->malformed++;
    } else if (l->state == OL_HELLO && m.hdr.type == CL_MSG_WELCOME) {
        on_welcome(self, l, &m, fn, ctx);
    } else if (l->state != OL_UP || m.hdr.type == CL_MSG_HELLO || m.hdr.type == CL_MSG_WELCOME ||
               m.hdr.type == CL_MSG_AUTH || m.hdr.type == CL_MSG_REFUSE) {
        tp_malformed(self, l->key, "handshake message out of order");
        tp_out_link_kill(self, l);
        emit_down(l, fn, ctx);
    } else {
        tp_emit(self, fn, ctx, l->key, &m, hdr, body, blen);
    }
    cl_wire_msg_clear(&m);
    return l->state != OL_DEAD;
}

void tp_on_dealer(cl_transport_t *self, out_link_t *l, cl_tp_handler_fn *fn, void *ctx)
{
    void *sock = zsock_resolve(l->dealer);
    for (int budget = 0; budget < RECV_BUDGET && l->state != OL_DEAD; budget++) {
        zmq_msg_t parts[2];
        int n = recv_parts(sock, parts, 2);
        if (n <= 0)
            return;
        if (tp_is_banned(self, l->key)) {
            close_parts(parts, n > 2 ? 2 : n);
            continue;
        }
        if (n != 2) {
            close_parts(parts, n > 2 ? 2 : n);
            tp_malformed(self, l->key, "wrong number of frames");
            tp_out_link_kill(self, l);
            emit_down(l, fn, ctx);
            return;
        }
        bool go_on =
            tp_dealer_frames(self, l, fn, ctx, zmq_msg_data(&parts[0]), zmq_msg_size(&parts[0]),
                             zmq_msg_data(&parts[1]), zmq_msg_size(&parts[1]));
        close_parts(parts, 2);
        if (!go_on)
            return;
    }
}

void tp_on_monitor(cl_transport_t *self, out_link_t *l, cl_tp_handler_fn *fn, void *ctx)
{
    void *sock = zsock_resolve(l->monitor);
    for (;;) {
        zmq_msg_t parts[2];
        int n = recv_parts(sock, parts, 2);
        if (n <= 0)
            return;
        uint16_t event = 0;
        uint32_t value = 0;
        if (n >= 1 && zmq_msg_size(&parts[0]) >= 6) {
            const uint8_t *d = zmq_msg_data(&parts[0]);
            event = (uint16_t)(d[0] | (d[1] << 8));
            memcpy(&value, d + 2, sizeof value); /* libzmq writes it in host order */
        }
        close_parts(parts, n > 2 ? 2 : n);
        if (l->state == OL_DEAD)
            continue;
        if (event == ZMQ_EVENT_CONNECTED) {
            tp_measure_link(l, (int)value);
        } else if (event == ZMQ_EVENT_DISCONNECTED) {
            l->fd = -1;
            cl_debug("connection to %s closed", l->address);
            tp_out_link_kill(self, l);
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
void tp_on_zap(cl_transport_t *self)
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
            if (!tp_is_banned(self, key) && zmq_z85_encode(user, key, 32) != NULL)
                status = "200";
        }
        /* Reply: version, request id, status, text, user id, metadata. */
        zmq_send(sock, "1.0", 3, ZMQ_SNDMORE);
        if (n >= 2)
            zmq_send(sock, zmq_msg_data(&parts[1]), zmq_msg_size(&parts[1]), ZMQ_SNDMORE);
        else
            zmq_send(sock, "", 0, ZMQ_SNDMORE);
        zmq_send(sock, status, 3, ZMQ_SNDMORE);
        zmq_send(sock, status[0] == '2' ? "OK" : "refused", status[0] == '2' ? 2 : 7, ZMQ_SNDMORE);
        zmq_send(sock, user, strlen(user), ZMQ_SNDMORE);
        zmq_send(sock, "", 0, 0);
        close_parts(parts, nn);
    }
}

/* Forgets inbound handshakes that never finished, inbound links that
   have been silent for link_idle (their peer closed them: every honest
   peer sends at least a heartbeat or a JOIN every few seconds on a link
   it uses), and bans that expired.  Time this peer did not run (stopped,
   or starved of the CPU: the sweep came late) does not count against the
   links: an AUTH or a message waiting in the socket since would find its
   connection forgotten the moment this peer runs again, and its sender's
   link would stay up on that side only. */
void tp_sweep(cl_transport_t *self, double now)
{
    if (now - self->last_sweep < SWEEP_EVERY)
        return;
    double stalled = self->last_sweep > 0 ? now - self->last_sweep - SWEEP_EVERY : 0.0;
    self->last_sweep = now;
    zlist_t *old = zlist_new();
    if (old == NULL)
        return;
    for (in_link_t *l = zhashx_first(self->in_by_rid); l != NULL;
         l = zhashx_next(self->in_by_rid)) {
        if (stalled > SWEEP_EVERY) {
            l->created += stalled;
            l->last += stalled;
        }
        if ((l->state == IL_AUTH_WAIT && now - l->created > self->handshake_keep) ||
            (l->state == IL_UP && now - l->last > self->link_idle))
            zlist_append(old, l);
    }
    for (in_link_t *l = zlist_first(old); l != NULL; l = zlist_next(old))
        tp_in_link_delete(self, l);
    zlist_destroy(&old);
    zlist_t *expired = zlist_new();
    if (expired == NULL)
        return;
    zlist_autofree(expired); /* copies of the keys */
    for (double *until = zhashx_first(self->bans); until != NULL; until = zhashx_next(self->bans))
        if (*until <= now)
            zlist_append(expired, (void *)zhashx_cursor(self->bans));
    for (const char *k = zlist_first(expired); k != NULL; k = zlist_next(expired))
        zhashx_delete(self->bans, k);
    zlist_destroy(&expired);
}

/* ---------------------------------------------------------------------- */
/* Same-host links (cl_shm.c): what arrives on a ring. */

static void shm_deliver(void *ctx, const uint8_t key[32], const uint8_t *hdr, const uint8_t *body,
                        size_t blen)
{
    cl_transport_t *self = ctx;
    if (self->poll_fn == NULL || tp_is_banned(self, key))
        return;
    cl_wire_msg_t m;
    int rc = cl_wire_decode(hdr, CL_WIRE_HDR_SIZE, body, blen, &m);
    if (rc != CL_WIRE_OK) {
        tp_malformed(self, key, cl_wire_strerror(rc));
        return;
    }
    if (!(m.hdr.type == CL_MSG_COLL || tp_is_p2p(m.hdr.type)) || m.hdr.run != self->run) {
        /* Everything else travels over CurveZMQ only. */
        tp_malformed(self, key, "a message other than COLL or P2P through shared memory");
    } else {
        cl_tp_event_t ev;
        memset(&ev, 0, sizeof ev);
        ev.kind = CL_TP_MESSAGE;
        memcpy(ev.key, key, 32);
        ev.msg = &m;
        self->poll_fn(self->poll_ctx, &ev);
    }
    cl_wire_msg_clear(&m);
}

static int shm_send(void *ctx, const uint8_t key[32], const uint8_t *hdr, uint8_t *body,
                    size_t blen)
{
    return tp_send_encoded(ctx, key, hdr, body, blen);
}

static bool shm_known(void *ctx, const uint8_t key[32])
{
    cl_transport_t *self = ctx;
    if (tp_is_banned(self, key))
        return false;
    const out_link_t *out = tp_outbound_of(self, key);
    return (out != NULL && out->state == OL_UP) || tp_inbound_of(self, key) != NULL;
}

void tp_shm_start(cl_transport_t *self, const cl_transport_config_t *cfg)
{
    (void)cfg;
    cl_shm_config_t sc = {.self_key = self->self_key,
                          .run = self->run,
                          .max_message = self->max_message,
                          .deliver = shm_deliver,
                          .send = shm_send,
                          .known = shm_known,
                          .ctx = self};
    self->shm = cl_shm_new(&sc);
}
