/*  cl_shm_int.h - what cl_shm.c (rings, the data path, the class) and
    cl_shm_link.c (setting a link up: proposing, accepting, checking) share.
    Internal to those two files; the design is in cl_shm.c's comment and
    docs/wire.md §9.
*/
#ifndef CL_SHM_INT_H_INCLUDED
#define CL_SHM_INT_H_INCLUDED

#include "engine/cl_shm.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#define HDR 64                          /* wire header (CL_WIRE_HDR_SIZE) */
#define SEG_HDR 4096                    /* segment header, a page */
#define RING_HDR 256                    /* ring header: four cache lines */
#define ENT 16                          /* entry header */
#define F_FIRST 1u                      /* first fragment of a message */
#define F_LAST 2u                       /* last fragment of a message */
#define F_PAD 4u                        /* filler up to the end of the buffer */
#define DEFAULT_RING ((size_t)16 << 20) /* bytes per direction */
#define MIN_RING ((size_t)64 << 10)
#define MAX_RING ((size_t)256 << 20)
#define REWIND ((size_t)64 << 10)       /* an empty ring past this offset rewinds */
#define QUEUE_LIMIT ((size_t)256 << 20) /* bytes queued for one peer at most */
#define SETUP_SECONDS 5.0               /* an unfinished proposal is dropped after this */
#define MAX_SETUPS 64                   /* unfinished accepted proposals kept at most */
#define VERSION 5u /* 2: the fast-path area; 3: its big rings; 4: outcome words for groups;
                      5: point-to-point messages on the rings */
#define FAST_OFF SEG_HDR                /* the fast-path area (cl_fast.c) */
#define RINGS_OFF (SEG_HDR + CL_SHM_FAST_BYTES)
#define SEG_BYTES(cap) (RINGS_OFF + 2 * (RING_HDR + (cap)))

static const char SEG_MAGIC[8] = {'C', 'L', 'S', 'H', 'M', 'S', 'G', '1'};
static const char HELLO_MAGIC[8] = {'C', 'L', 'S', 'H', 'M', 'H', 'I', '1'};
static const char OK_MAGIC[8] = {'C', 'L', 'S', 'H', 'M', 'O', 'K', '1'};

typedef struct {
    _Atomic uint64_t head; /* consumer's position */
    char pad0[56];
    _Atomic uint64_t tail; /* producer's position */
    char pad1[56];
    _Atomic uint32_t sleeping; /* consumer may sleep: wake it after publishing */
    char pad2[60];
    _Atomic uint32_t want_space; /* producer waits for room: wake it after consuming */
    uint32_t pad3;
    /* Written by the consumer: the fingerprint of the last CurveZMQ
       message it handed on from this ring's producer (see "Order"). */
    _Atomic uint64_t net_seen;
    char pad4[48];
} ring_hdr_t;

_Static_assert(sizeof(ring_hdr_t) == RING_HDR, "a ring header is four cache lines");

typedef struct {
    char magic[8];
    uint32_t version;
    uint32_t ring_bytes;
    uint64_t run;
    uint8_t nonce[32];
    uint8_t key_c[32];      /* the proposer (ring 0 is its sending ring) */
    uint8_t key_a[32];      /* the other side (ring 1) */
    _Atomic uint32_t acked; /* set by the other side once it mapped and checked */
} seg_hdr_t;

typedef struct {
    char magic[8];
    uint32_t version;
    uint32_t ring_bytes;
    uint64_t run;
    uint8_t from[32];
    uint8_t to[32];
    char boot[40];           /* /proc/sys/kernel/random/boot_id */
    uint64_t ns_dev, ns_ino; /* /proc/self/ns/net */
    uint8_t nonce[32];
} hello_t;

typedef struct {
    char magic[8];
    uint8_t nonce[32];
} ok_t;

/* A group area offered on an up link (docs/wire.md §9), with its memfd. */
#define GROUP_MAGIC "CLSHMGR1"
typedef struct {
    char magic[8];
    uint32_t version;
    uint32_t k;       /* members */
    uint64_t comm_id; /* the communicator */
    uint64_t tag;     /* the members it is for (the engine's hash of their keys) */
    uint64_t bytes;   /* the area's length */
} group_msg_t;

typedef struct {
    uint32_t len;   /* data bytes of this entry */
    uint32_t flags; /* F_* */
    uint64_t total; /* bytes of the whole message (header + body) */
} ent_t;

typedef struct qent {
    struct qent *next;
    bool ring; /* for the ring (else for CurveZMQ) */
    uint8_t hdr[HDR];
    uint8_t *body; /* owned */
    size_t blen;
    size_t off; /* bytes of hdr + body already in the ring */
} qent_t;

/* L_WAITKEY: a valid proposal from a key the transport has not reported
   up yet (its handshake on our side may finish a moment later). */
typedef enum { L_PROPOSED, L_ACCEPTED, L_WAITKEY, L_UP, L_DEAD } lstate_t;

typedef struct {
    uint8_t key[32]; /* the peer (L_ACCEPTED: not known yet) */
    int fd;
    lstate_t state;
    double deadline; /* L_PROPOSED, L_ACCEPTED */
    uint8_t nonce[32];
    uint8_t *map;
    size_t maplen;
    size_t cap, mask;
    ring_hdr_t *tx, *rx;
    uint8_t *txd, *rxd;
    qent_t *qhead, *qtail;
    size_t qbytes;
    int mfd;          /* L_WAITKEY: the proposed segment */
    int seg_fd;       /* L_UP: the segment, kept to map its fast-path area again */
    int grp_fd;       /* the last group area the peer offered, -1: none */
    group_msg_t grp;  /* its offer */
    uint64_t id;      /* unique in this process (cl_shm_link_id) */
    uint8_t *asm_buf; /* a fragmented message being assembled */
    size_t asm_len, asm_total;
    bool draining;
    /* Order of CurveZMQ messages before ring ones: the fingerprint of the
       last CurveZMQ message sent to the peer, and whether the peer may not
       have handed it on yet (then COLL messages go on CurveZMQ too). */
    uint64_t net_last; /* NET_UNSEEN until a CurveZMQ message is tracked */
    bool net_dirty;
    uint64_t net_got; /* fingerprint of the last CurveZMQ message from the peer */
} link_t;

/* A link's net_last from the moment its peer's key is known: CurveZMQ
   messages sent to that peer before (no link record then) went untracked,
   so the ring waits until the peer has handed on one sent after.  No
   fingerprint takes this value (nor 0, a ring's net_seen at first). */
#define NET_UNSEEN UINT64_MAX

/* Sets l's key, with the order rule's state it starts with. */
void shm_link_keyed(link_t *l, const uint8_t key[32]);

struct cl_shm {
    cl_shm_config_t cfg;
    uint8_t self_key[32];
    int lfd;
    char boot[40];
    uint64_t ns_dev, ns_ino;
    uid_t uid;
    link_t **links;
    size_t nlinks, caplinks;
    link_t **polled; /* links in the order of the last poll items */
    size_t npolled, cappolled;
    uint8_t (*tried)[32]; /* keys proposed to (never twice) */
    size_t ntried, captried;
    uint64_t sent, received;
    uint64_t next_id; /* ids of links */
    bool announced; /* the first link was logged at info level */
};

/* cl_shm.c */
double shm_now(void);
void shm_short_id(const uint8_t key[32], char out[17]);
/* The link to key (not one being accepted or dead; up_only: only up). */
link_t *shm_find(const cl_shm_t *self, const uint8_t key[32], bool up_only);
/* A new link on socket fd in state st, or NULL. */
link_t *shm_link_add(cl_shm_t *self, int fd, lstate_t st);
/* Ends link l (why: for the log), delivering what it completed and
   sending what was queued for it over the network. */
void shm_link_kill(cl_shm_t *self, link_t *l, const char *why);

/* cl_shm_link.c */
/* "\0mpicollab/<run>/<key>" into sa; returns the address length. */
socklen_t shm_sock_name(uint64_t run, const uint8_t key[32], struct sockaddr_un *sa);
int shm_read_boot_id(char out[40]);
/* The listening socket is readable: a proposer connects. */
void shm_on_accept(cl_shm_t *self);
/* l's socket is readable: the proposer's HELLO (accepting side) ... */
void shm_on_hello(cl_shm_t *self, link_t *l);
/* ... or the other side's OK (proposing side). */
void shm_on_ok(cl_shm_t *self, link_t *l);
/* Finishes a valid proposal once the transport authenticated its key. */
void shm_try_accept(cl_shm_t *self, link_t *l);
/* An up link's socket is readable: wake-ups and group offers.  Returns
   false when the peer closed it. */
bool shm_on_up_read(cl_shm_t *self, link_t *l);

#endif
