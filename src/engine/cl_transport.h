/*  cl_transport.h - authenticated, ordered message links between peers.

    Owns every socket of a peer: one ROUTER (CurveZMQ server) unless in
    client mode, one DEALER (CurveZMQ client) per remote public peer, a
    socket monitor per DEALER, and the process's ZAP handler, which accepts
    any CURVE client and tags each of its messages with the client's key
    (the ZeroMQ User-Id), so that the ROUTER knows who sent what.  On top
    of CurveZMQ it runs the handshake of docs/wire.md (versions, run id,
    swarm-key proof) on every link, and delivers to its user only decoded
    messages from peers that passed it.  A malformed message is dropped,
    counted, and its sender banned for a while.

    Path rule: to a public peer, always over our DEALER to it; to a client
    peer, over our ROUTER to its connection; so two peers never reorder
    messages between them.  With shared memory on (cl_shm.h), COLL, P2P
    and P2P_CTL messages to a verified peer of the same host go through a
    ring instead, and the order between the two paths is kept there.  Sends
    never block (HWM 0).  Engine thread only.
*/
#ifndef CL_TRANSPORT_H_INCLUDED
#define CL_TRANSPORT_H_INCLUDED

#include "engine/cl_wire.h"
#include "util/cl_identity.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

typedef struct {
    const cl_identity_t *identity; /* this peer's keys (borrowed, must outlive) */
    const char *listen;            /* COLLAB_LISTEN multiaddr, NULL = /ip4/0.0.0.0/tcp/0 */
    const char *announce;          /* COLLAB_ANNOUNCE multiaddr, NULL = from listen */
    bool client_mode;              /* bind nothing */
    const char *run_id;            /* COLLAB_RUN_ID */
    const uint8_t *swarm_secret;   /* 32-byte swarm secret (cl_secret.h), NULL = open swarm */
    double ban_seconds;            /* how long a malformed sender is ignored (0 = 60) */
    size_t max_message;            /* largest frame accepted or sent, bytes (0 = 1 GiB) */
    size_t rcv_hwm;                /* messages one connection may queue unread (0 = no limit) */
    int max_version;               /* highest wire version spoken (0 = CL_WIRE_VERSION) */
    int min_version;               /* lowest one (0 = CL_WIRE_MIN_VERSION); see also
                                      cl_transport_set_min_version */
    const char *min_why;           /* why min_version is raised (NULL: it is not), for
                                      the refusals (copied) */
    size_t max_handshakes;         /* unfinished inbound handshakes kept (0 = 1024) */
    size_t max_handshakes_host;    /* of them from one IP address (0 = 64) */
    double link_idle;              /* seconds after which a silent inbound link is
                                      forgotten (0 = 300) */
    double handshake_keep;         /* seconds an unfinished inbound handshake is kept
                                      (0 = 10); a WELCOME that reaches this peer later
                                      than half of it after it connected starts its
                                      handshake over (the server may have forgotten it) */
    bool shm;                      /* COLL payloads to peers of this host through
                                      shared memory (cl_shm.h) */
    int stripes;                   /* connections per outbound link, 1..CL_TP_STRIPES_MAX
                                      (0 = 1): large COLL messages spread over them */
    bool stripes_auto;             /* stripes is the most: the count in use is measured
                                      (cl_stripe_probe.h) */
} cl_transport_config_t;

/* The most connections one outbound link has (COLLAB_STRIPES). */
#define CL_TP_STRIPES_MAX 16

typedef enum {
    CL_TP_MESSAGE = 1, /* msg from key (handshake done) */
    CL_TP_UP = 2,      /* handshake with key done (inbound: they connected to us) */
    CL_TP_DOWN = 3,    /* our DEALER to key lost its connection; the link is gone */
    CL_TP_REFUSED = 4, /* key refused our HELLO, or its WELCOME proof was wrong */
} cl_tp_event_kind_t;

typedef struct {
    cl_tp_event_kind_t kind;
    uint8_t key[32];          /* the remote peer */
    bool inbound;             /* UP: the link is their DEALER to our ROUTER */
    bool client;              /* UP inbound: the peer said it is in client mode */
    const char *address;      /* UP inbound: its announced address ("" for clients) */
    const cl_wire_msg_t *msg; /* MESSAGE: decoded; payload valid during the callback */
    int reason;               /* REFUSED: CL_REFUSE_* */
    const char *text;         /* REFUSED: one line for the log */
} cl_tp_event_t;

/* Called for every event, on the thread that runs cl_transport_poll. */
typedef void(cl_tp_handler_fn)(void *ctx, const cl_tp_event_t *ev);

typedef struct cl_transport cl_transport_t;

/* With stripes above 1 (COLLAB_STRIPES) and ZSYS_IO_THREADS unset,
   gives ZeroMQ's context as many I/O threads as stripes, at most 4 and at
   most the CPUs online, so that the connections' encryption spreads over
   cores.  Takes effect only before the process's first ZeroMQ socket:
   call it before anything creates one. */
void cl_transport_io_threads(int stripes);

/* Creates the sockets and binds (unless client mode).  Returns NULL with a
   one-line reason in err (bad address, port in use, ...).  Caller owns. */
cl_transport_t *cl_transport_new(const cl_transport_config_t *cfg, char *err, size_t errlen);

/* Closes every socket after waiting up to linger_ms for queued messages
   to leave; nulls *self_p; accepts NULL. */
void cl_transport_destroy(cl_transport_t **self_p, int linger_ms);

/* This peer's full announced multiaddr with /p2p/<id> ("" in client mode). */
const char *cl_transport_address(const cl_transport_t *self);

/* Opens (if not open yet) our DEALER link to the peer with this key at
   multiaddr `address` and starts the handshake.  Returns 0, or
   COLLAB_ERR_ARG when the address cannot be used (logged). */
int cl_transport_connect(cl_transport_t *self, const uint8_t key[32], const char *address);

/* True when an outbound link to key exists (in any state). */
bool cl_transport_has_link(const cl_transport_t *self, const uint8_t key[32]);

/* key is a client-mode member: it binds nothing and reaches us over its
   own connection, which may come up after our first messages to it.
   Until then those wait in order (bounded like a link's handshake queue)
   instead of failing.  Nothing happens when a link to key exists or this
   peer is a client itself.  Returns 0 or COLLAB_ERR_NO_MEM. */
int cl_transport_expect_client(cl_transport_t *self, const uint8_t key[32]);

/* True when our outbound link to key has completed its handshake. */
bool cl_transport_link_up(const cl_transport_t *self, const uint8_t key[32]);

/* The wire version negotiated with key: that of our link to it once up,
   else that of its link to us once up, else 0 (not known yet). */
int cl_transport_link_version(cl_transport_t *self, const uint8_t key[32]);

/* As cl_transport_link_version, and once no link is up, the version of
   the last link with key that came up (0: none known).  What a peer
   speaks does not change while it runs, so a link down for a moment does
   not change what this peer expects of it.  (Relay proofs no longer ask
   it: a swarm that signs has no link below version 9, docs/security.md
   §6.) */
int cl_transport_peer_version(cl_transport_t *self, const uint8_t key[32]);

/* From now on this peer says it is in client mode in its handshakes and
   announces no address (COLLAB_CLIENT_MODE=auto, once the swarm could not
   connect back to it).  Its listening socket stays open; its outbound
   links are made again, so that their handshakes say so. */
void cl_transport_set_client(cl_transport_t *self);

/* Raises the lowest wire version this peer speaks in handshakes from now
   on (links up or under way keep theirs), within [CL_WIRE_MIN_VERSION,
   its highest]; a lower value than the current one is ignored.  Used when
   a swarm-wide setting needs a version (COLLAB_COMPRESSION=adaptive, a
   swarm that signs).  `why` (copied; NULL: none) says which, in the log
   line and the REFUSE text a peer that speaks only older versions gets. */
void cl_transport_set_min_version(cl_transport_t *self, int version, const char *why);

/* Closes our link to key; its connections to us stay until they close. */
void cl_transport_drop(cl_transport_t *self, const uint8_t key[32]);

/* Replaces our DEALER link to key by a fresh one to `address` (a new
   connection and handshake); connections key opened to us stay.  For a
   peer that was stopped for a while: the others may have forgotten its
   old connection and would take what arrives on it for a stranger's.
   Returns as cl_transport_connect. */
int cl_transport_reconnect(cl_transport_t *self, const uint8_t key[32], const char *address);

/* Sends m (header fields as given; run, version and length are filled in)
   to key along the path rule.  While our link's handshake is in progress
   the message waits in order.  Returns 0, COLLAB_ERR_PROC_FAILED when no
   path to key exists, COLLAB_ERR_NO_MEM, or COLLAB_ERR_ARG when the
   encoder refuses m. */
int cl_transport_send(cl_transport_t *self, const uint8_t key[32], cl_wire_msg_t *m);

/* Sends m back on the connection on which key's latest message arrived at
   our ROUTER (answers to JOIN from peers that are not members).  Falls
   back to cl_transport_send.  Same returns. */
int cl_transport_reply(cl_transport_t *self, const uint8_t key[32], cl_wire_msg_t *m);

/* Polls the transport's sockets together with the caller's extra items
   for up to timeout_ms (-1 = forever), handles what is ready, calling fn
   for every event, and leaves the extra items' revents set.  Returns the
   number of ready extra items, or -1 when the ZeroMQ context is being
   terminated. */
int cl_transport_poll(cl_transport_t *self, zmq_pollitem_t *extra, int nextra, long timeout_ms,
                      cl_tp_handler_fn *fn, void *ctx);

/* Ignores every message of key (and refuses its connections) for
   `seconds`. */
void cl_transport_ban(cl_transport_t *self, const uint8_t key[32], double seconds);

/* The same-host links (cl_shm.h), or NULL when shared memory is off.
   Engine thread only. */
struct cl_shm *cl_transport_shm(cl_transport_t *self);

/* Malformed messages dropped so far. */
uint64_t cl_transport_malformed(const cl_transport_t *self);

/* This peer's upload, from the kernel's figures of its outbound links'
   TCP connections, stripes included (links to loopback addresses left
   out): *acked is the total of bytes their receivers acknowledged since
   the transport started and *sent of those handed to the network
   (neither ever goes down), *backlogged whether two links or more have
   bytes waiting to be sent on a connection that their receivers' windows
   did not hold back for most of the time since the last call (now: local
   monotonic seconds): one link alone may be held back by its path.  For
   cl_linkrate.h. */
void cl_transport_upload(cl_transport_t *self, double now, uint64_t *acked, uint64_t *sent,
                         bool *backlogged);

#endif
