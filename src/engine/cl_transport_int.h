/*  cl_transport_int.h - what the transport's two source files share.

    cl_transport.c keeps the links, sends, connects and polls;
    cl_transport_recv.c reads what arrives (handshake included).  Engine
    thread only, like the transport itself.
*/
#ifndef CL_TRANSPORT_INT_H_INCLUDED
#define CL_TRANSPORT_INT_H_INCLUDED

#include "engine/cl_shm.h"
#include "engine/cl_stripe_probe.h"
#include "engine/cl_transport.h"

#include <czmq.h>
#include <poll.h>

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define PENDING_LIMIT ((size_t)256 << 20) /* bytes queued on a link still handshaking */
#define RECV_BUDGET 256          /* messages read from one socket per poll round */
/* Seconds an unfinished inbound handshake is kept by default (an honest
   one takes one round trip; cl_transport_config_t.handshake_keep). */
#define DEFAULT_HANDSHAKE_KEEP 10.0
/* The sweep's period, seconds. */
#define SWEEP_EVERY 2.0
#define DEFAULT_MAX_MESSAGE ((size_t)1 << 30)
#define DEFAULT_MAX_HANDSHAKES 1024
#define DEFAULT_MAX_HANDSHAKES_HOST 64
#define DEFAULT_LINK_IDLE 300.0

typedef struct pending_msg {
    struct pending_msg *next;
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    uint8_t *body; /* malloc'ed */
    size_t blen;
} pending_msg_t;

typedef enum { OL_HELLO = 0, OL_UP = 1, OL_DEAD = 2 } ol_state_t;

/* Striped links (docs/wire.md section 1.1): COLL messages of at least
   STRIPE_MIN bytes spread over a link's connections; a receiver holds at
   most this much behind one FENCE, and this much behind all of them. */
#define STRIPE_MIN ((size_t)16 << 10)
#define HOLD_BYTES ((size_t)256 << 20)
#define HOLD_MSGS 65536
#define HOLD_BYTES_ALL ((size_t)1 << 30)

typedef struct out_link {
    uint8_t key[32];
    char hex[65];
    char address[CL_WIRE_STR_MAX + 1];
    struct out_link *primary; /* a stripe: the link it belongs to; NULL: a link */
    struct out_link *stripe[CL_TP_STRIPES_MAX - 1]; /* a link: its other connections (or NULL) */
    bool stripes_refused; /* a link: the peer refused a stripe; no more are opened */
    uint64_t stripe_sent; /* a link: COLL messages sent on its stripes */
    uint64_t fenced;      /* a link: stripe_sent at its last FENCE */
    uint64_t assigned;    /* bytes handed to this connection's socket */
    double handed_at;     /* when it was last handed one (local monotonic s) */
    int bfd;              /* its TCP socket for balancing (loopback too), -1: none */
    uint64_t bcookie;     /* that socket's SO_COOKIE */
    zsock_t *dealer;
    zsock_t *monitor;
    ol_state_t state;
    uint8_t nonce[32];             /* our HELLO nonce, wiped at UP */
    pending_msg_t *head, *tail;    /* waiting for UP */
    size_t pending_bytes;          /* their bodies */
    bool handshake_warned;
    int version;                   /* chosen by the peer's WELCOME (at UP) */
    double started;                /* when its HELLO was queued (local monotonic seconds) */
    double last_tx;                /* its last message sent while up (0: none yet) */
    int fd;                        /* its TCP socket once connected, -1: none or not measured
                                      (a loopback link; cl_transport_upload) */
    uint64_t cookie;               /* that socket's SO_COOKIE */
    uint64_t acked;                /* its bytes acknowledged at the last sample */
    uint64_t sent;                 /* its bytes sent then */
    uint64_t rwnd_us;              /* its receiver-window-limited time then */
    uint64_t pcookie;              /* COLLAB_STRIPES=auto: bfd's cookie at its last sample */
    uint64_t packed;               /* its bytes acknowledged then */
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
    double last;   /* last message on it (local monotonic seconds) */
    char host[64]; /* the remote IP address (ZeroMQ's Peer-Address) */
    int version;   /* chosen for its HELLO */
    uint64_t serial;       /* order in which connections said HELLO */
    bool stripe;           /* one more connection of its sender's link (CL_HELLO_STRIPE) */
    uint64_t colls;        /* a stripe: COLL messages it delivered */
    uint64_t stripes_gone; /* a link: what its stripes that were forgotten delivered */
    uint64_t hold; /* a link: FENCE count its stripes must reach before what follows (0: none) */
    pending_msg_t *held, *held_tail; /* a link: what arrived behind that FENCE, in order */
    size_t held_bytes, held_msgs;
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
    size_t max_message;                /* largest frame, both ways */
    int rcv_hwm;                       /* ZMQ_RCVHWM of every socket, messages (0 = none) */
    int max_version;                   /* highest wire version spoken */
    int min_version;                   /* lowest one, for handshakes from now on */
    char min_why[160];                 /* why it is raised ("": it is not) */
    size_t max_handshakes;             /* IL_AUTH_WAIT links kept at most */
    size_t npending;                   /* IL_AUTH_WAIT links now */
    size_t max_handshakes_host;        /* IL_AUTH_WAIT links of one remote address at most */
    double link_idle;                  /* silent IL_UP links are forgotten after this */
    double handshake_keep;             /* IL_AUTH_WAIT links are forgotten after this */
    char address[CL_WIRE_STR_MAX + 1]; /* announced multiaddr with /p2p */
    zsock_t *router;                   /* NULL in client mode */
    zsock_t *zap;                      /* NULL when another transport serves ZAP */
    zhashx_t *out_by_key;              /* hex key -> out_link_t (owned) */
    zhashx_t *in_by_rid;               /* hex rid -> in_link_t (owned) */
    zhashx_t *in_by_key;               /* hex key -> in_link_t (latest UP) */
    zhashx_t *bans;                    /* hex key -> double* until */
    zhashx_t *versions;                /* hex key -> int*: the version of the last link that came
                                          up with it (cl_transport_peer_version), at most
                                          TP_VERSIONS_MAX keys */
    zlist_t *dead;                     /* out_link_t waiting to be freed */
    int stripes;                       /* connections per outbound link (COLLAB_STRIPES): the
                                          most, with stripes_auto */
    bool stripes_auto;                 /* COLLAB_STRIPES=auto: probe chooses how many */
    cl_stripe_probe_t probe;           /* its state */
    double probe_last;                 /* its last sample (local monotonic s, 0: none) */
    bool probe_waiting;                /* the upload was backlogged then */
    uint64_t in_serial;                /* the last in_link_t.serial given */
    size_t held_bytes;                 /* held behind FENCEs on all inbound links */
    uint64_t malformed;
    uint64_t up_acked;                 /* bytes acknowledged on measured links, in all */
    uint64_t up_sent;                  /* bytes sent on them, in all */
    double up_last;                    /* the last cl_transport_upload (local monotonic s) */
    zmq_pollitem_t *items;             /* poll arrays, grown as needed */
    poll_ref_t *refs;
    struct pollfd *pfds;               /* what poll() is given for items */
    bool *fired;                       /* per item: its socket's descriptor fired */
    size_t capitems;
    bool zmq_touched;                  /* a ZeroMQ socket was sent or read on since the last
                                          poll: ask every socket for its events (cl_transport_poll) */
    bool zmq_idle;                     /* the last poll slept its whole time: ask them too */
    double last_sweep;
    cl_shm_t *shm;                     /* same-host links, NULL when off */
    double fd_warned;                  /* when the file-descriptor limit was last logged */
    cl_tp_handler_fn *poll_fn;         /* the handler during cl_transport_poll */
    void *poll_ctx;
};

/* Point-to-point messages (P2P, P2P_CTL): they go through a same-host
   ring as COLL messages do, and flow control (docs/wire.md §10), not
   the ring's queue bound, limits what a sender has in flight. */
static inline bool tp_is_p2p(uint8_t type)
{
    return type == CL_MSG_P2P || type == CL_MSG_P2P_CTL;
}

/* cl_transport.c */
/* Frees a chain of pending messages, bodies included. */
void tp_pending_free(pending_msg_t *p);
/* Records v as the version of key's link that just came up. */
void tp_note_version(cl_transport_t *self, const uint8_t key[32], int v);
/* Monotonic seconds. */
double tp_now(void);
/* Lower-case hex of n bytes into out (2n+1 chars). */
void tp_hex(const uint8_t *b, size_t n, char *out);
/* The first 8 characters of the peer id of key, for logs; returns out. */
const char *tp_short_id(const uint8_t key[32], char out[16]);
/* True while key is banned (expired bans are forgotten here). */
bool tp_is_banned(cl_transport_t *self, const uint8_t key[32]);
/* Counts a malformed message, logs it once per ban, bans key. */
void tp_malformed(cl_transport_t *self, const uint8_t key[32], const char *what);
/* Stops an outbound link now (pending messages dropped); it is freed
   after the current poll round. */
void tp_out_link_kill(cl_transport_t *self, out_link_t *l);
/* cl_transport_rate.c: the monitor saw l connect on socket fd; measures
   its upload from now on unless it leads to this host's loopback. */
void tp_measure_link(out_link_t *l, int fd);
/* Kills l and opens a new link to its peer, with a new handshake, which
   takes what waited in l.  Returns the new link, or NULL (what waited is
   dropped then). */
out_link_t *tp_out_link_again(cl_transport_t *self, out_link_t *l);
/* Forgets (and frees) an inbound link. */
void tp_in_link_delete(cl_transport_t *self, in_link_t *l);
/* Sends [rid] hdr body without blocking; takes ownership of body.
   Returns 0 or -1 with errno set. */
int tp_send_raw(cl_transport_t *self, void *sock, const uint8_t *rid, size_t rid_len,
                const uint8_t *hdr, uint8_t *body, size_t blen);
/* Encodes m (version and run filled in) into a header and a malloc'ed
   body, in the layout of a link negotiated at version `link` (0 unknown:
   the oldest layout, cl_wire_msg_version).  Returns 0, COLLAB_ERR_NO_MEM
   or COLLAB_ERR_ARG (logged). */
int tp_encode(cl_transport_t *self, cl_wire_msg_t *m, int link, uint8_t hdr[CL_WIRE_HDR_SIZE],
              uint8_t **body, size_t *blen);
/* Sends on an outbound link, or queues until its handshake is done;
   takes ownership of body.  Returns 0 or a negative status. */
/* Frees an outbound link (a zhashx destructor's shape). */
void tp_out_link_free(void **item);
int tp_out_link_send(cl_transport_t *self, out_link_t *l, const uint8_t *hdr, uint8_t *body,
                     size_t blen);

/* Sends [hdr body] on the ROUTER to inbound link l; takes ownership of
   body.  Returns 0 or COLLAB_ERR_PROC_FAILED (the connection is gone and
   the link forgotten). */
int tp_router_send(cl_transport_t *self, in_link_t *l, const uint8_t *hdr, uint8_t *body,
                   size_t blen);
/* The latest authenticated inbound link of key, or NULL. */
in_link_t *tp_inbound_of(cl_transport_t *self, const uint8_t key[32]);
/* The outbound link to key (any state but dead), or NULL. */
out_link_t *tp_outbound_of(const cl_transport_t *self, const uint8_t key[32]);

/* Sends an encoded message to key along the path rule; takes ownership of
   body.  Returns as cl_transport_send. */
int tp_send_encoded(cl_transport_t *self, const uint8_t key[32], const uint8_t *hdr,
                    uint8_t *body, size_t blen);
/* Creates self->shm when cfg asks for it (NULL when the host offers no
   way to verify peers; logged at debug level). */
void tp_shm_start(cl_transport_t *self, const cl_transport_config_t *cfg);

/* cl_transport_stripe.c: sends an encoded message on link l (up), over
   one of its stripes when it is a large COLL message, with a FENCE first
   when it must not overtake what went over the stripes.  Returns 0 or -1
   (errno set; body taken either way). */
int tp_stripe_send(cl_transport_t *self, out_link_t *l, const uint8_t *hdr, uint8_t *body,
                   size_t blen);
#define TP_IO_THREADS_MAX 4 /* cl_transport_io_threads */

/* Connections per link in use now: COLLAB_STRIPES, or with auto what the
   probe chose (cl_stripe_probe.h). */
int tp_stripes_in_use(const cl_transport_t *self);
/* COLLAB_STRIPES=auto: samples the upload for the probe (at most every
   PROBE_EVERY s) and applies what it decides; every turn of the poll. */
void tp_stripe_probe(cl_transport_t *self, double now);
/* Opens a stripe of link l (sockets and HELLO); NULL when it cannot. */
out_link_t *tp_stripe_open(cl_transport_t *self, out_link_t *l);
/* Removes stripe s from its link: dead now, freed with the dead links. */
void tp_stripe_drop(cl_transport_t *self, out_link_t *s);
/* A message from inbound link l of key (up), decoded in m: delivered, or
   held behind a FENCE, or taken as a FENCE; a stripe's COLL may release
   what its link holds.  Raw frames are kept for holding. */
void tp_in_message(cl_transport_t *self, cl_tp_handler_fn *fn, void *ctx, in_link_t *l,
                   const cl_wire_msg_t *m, const uint8_t *hdr, const uint8_t *body, size_t blen);
/* Frees what inbound link l holds. */
void tp_in_held_free(cl_transport_t *self, in_link_t *l);
/* Hands over emit_message (cl_transport_recv.c). */
void tp_emit(cl_transport_t *self, cl_tp_handler_fn *fn, void *ctx, const uint8_t key[32],
             const cl_wire_msg_t *m, const uint8_t *hdr, const uint8_t *body, size_t blen);
/* Creates an outbound connection's sockets to key at address and queues
   its HELLO (flags: CL_HELLO_*); NULL when it cannot (logged), with
   *rc COLLAB_ERR_ARG, COLLAB_ERR_NETWORK (out of sockets) or
   COLLAB_ERR_NO_MEM. */
out_link_t *tp_dealer_open(cl_transport_t *self, const uint8_t key[32], const char *address,
                           unsigned flags, int min_version, int *rc);

/* cl_transport_connect.c: the options every socket of the transport
   gets (frame size, queues, linger, keepalive). */
void tp_sock_common(const cl_transport_t *self, zsock_t *s);

/* cl_transport_limits.c: true when one more outbound link leaves the
   reserves of ZeroMQ sockets and file descriptors free; otherwise logs
   why (once a minute) and returns false. */
bool tp_limits_allow_link(cl_transport_t *self, const char *address);

/* cl_transport_recv.c: handle what is waiting on one socket. */
void tp_on_router(cl_transport_t *self, cl_tp_handler_fn *fn, void *ctx);
/* One message read from the ROUTER: the routing id rid (1..255 bytes) of
   the connection, the key that CurveZMQ proved for it, the remote IP
   address ("" if unknown), and its header and body frames.  Runs the
   inbound handshake or hands the decoded message on.  tp_on_router calls
   it; the handshake fuzz target (tests/fuzz/handshake) calls it directly. */
void tp_router_frames(cl_transport_t *self, cl_tp_handler_fn *fn, void *ctx, const uint8_t key[32],
                      const uint8_t *rid, size_t rid_len, const char *host, const uint8_t *hdr,
                      size_t hlen, const uint8_t *body, size_t blen);
/* One message read from the DEALER of outbound link l (header and body
   frames): runs the outbound handshake or hands the message on.  Returns
   false once l is dead (stop reading it). */
bool tp_dealer_frames(cl_transport_t *self, out_link_t *l, cl_tp_handler_fn *fn, void *ctx,
                      const uint8_t *hdr, size_t hlen, const uint8_t *body, size_t blen);
void tp_on_dealer(cl_transport_t *self, out_link_t *l, cl_tp_handler_fn *fn, void *ctx);
void tp_on_monitor(cl_transport_t *self, out_link_t *l, cl_tp_handler_fn *fn, void *ctx);
void tp_on_zap(cl_transport_t *self);
void tp_sweep(cl_transport_t *self, double now);

#endif
