/*  cl_shm.c - collective payloads between peers of one host (see cl_shm.h).

    Setting up a link (docs/wire.md §9):
      1. The peer with the lower key connects to the other's abstract unix
         socket "\0mpicollab/<run hash>/<key hex>" (SOCK_SEQPACKET) and
         checks SO_PEERCRED: the same user.
      2. It creates a sealed memfd (a segment header, then two rings),
         writes a fresh nonce, both keys and the run into the header, and
         sends HELLO (magic, run, both keys, boot id, network namespace,
         ring size, nonce) with the memfd attached (SCM_RIGHTS).
      3. The other side checks SO_PEERCRED, every HELLO field, that the
         proposer is a peer the transport authenticated, that the memfd
         cannot shrink and has the right size; maps it, compares the
         header with HELLO, marks it acknowledged and answers OK with the
         nonce.  The proposer checks both and the link is up.
    A segment exists only as long as the two mappings and the memfd in
    flight: nothing is ever named in /dev/shm.

    A ring is a single-producer single-consumer byte queue.  head and tail
    are byte positions that only grow (the consumer owns head, the producer
    tail); entries are 16-byte aligned: a 16-byte header (length, flags,
    total message size) and the data.  An entry never wraps: a PAD entry
    fills the end of the buffer when the next one does not fit.  A message
    larger than a quarter of the ring travels as several fragments (FIRST
    ... LAST) and is assembled on the other side; one that fits in one
    entry is handed on from the ring itself, without a copy, and its room
    is released when the handler returns.

    Sleeping and waking: before the engine sleeps in poll it sets
    `sleeping` in every ring it reads, then looks at the ring once more (a
    producer that published just before sees the flag after its store, by
    the sequentially consistent order of the two sides); a producer that
    finds the flag set clears it and writes one byte to the socket.  A
    producer that finds no room sets `want_space` and looks again; the
    consumer that frees room and finds the flag writes one byte.  No side
    ever spins.

    Cost per message on the ring: one copy in (the sender's payload into
    the ring), none out for messages up to a quarter of the ring, one
    for larger ones; one socket write per wake-up, none while the
    receiver is awake.
*/
#define _GNU_SOURCE
#include "engine/cl_shm.h"

#include "mpi_collab.h"
#include "util/cl_log.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

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
#define VERSION 1u

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
    uint8_t *asm_buf; /* a fragmented message being assembled */
    size_t asm_len, asm_total;
    bool draining;
    /* Order of CurveZMQ messages before ring ones: the fingerprint of the
       last CurveZMQ message sent to the peer, and whether the peer may not
       have handed it on yet (then COLL messages go on CurveZMQ too). */
    uint64_t net_last;
    bool net_dirty;
    uint64_t net_got; /* fingerprint of the last CurveZMQ message from the peer */
} link_t;

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
    bool announced; /* the first link was logged at info level */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static size_t round16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

static void short_id(const uint8_t key[32], char out[17])
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 8; i++) {
        out[2 * i] = hx[key[i] >> 4];
        out[2 * i + 1] = hx[key[i] & 15];
    }
    out[16] = '\0';
}

/* "\0mpicollab/<run>/<key>" into sa; returns the address length. */
static socklen_t sock_name(uint64_t run, const uint8_t key[32], struct sockaddr_un *sa)
{
    static const char hx[] = "0123456789abcdef";
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    char name[100];
    int n = snprintf(name, sizeof name, "mpicollab/%016llx/", (unsigned long long)run);
    for (int i = 0; i < 32; i++) {
        name[n++] = hx[key[i] >> 4];
        name[n++] = hx[key[i] & 15];
    }
    memcpy(sa->sun_path + 1, name, (size_t)n);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static bool peer_uid_ok(int fd, uid_t uid)
{
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || len != sizeof cr)
        return false;
    return cr.uid == uid;
}

static void wake(int fd)
{
    char b = 1;
    (void)send(fd, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* ---------------------------------------------------------------------- */
/* Links. */

static link_t *find(const cl_shm_t *self, const uint8_t key[32], bool up_only)
{
    for (size_t i = 0; i < self->nlinks; i++) {
        link_t *l = self->links[i];
        if (l->state == L_ACCEPTED || l->state == L_DEAD)
            continue;
        if (memcmp(l->key, key, 32) == 0 && (!up_only || l->state == L_UP))
            return l;
    }
    return NULL;
}

static link_t *link_add(cl_shm_t *self, int fd, lstate_t st)
{
    if (self->nlinks == self->caplinks) {
        size_t cap = self->caplinks > 0 ? 2 * self->caplinks : 8;
        link_t **a = realloc(self->links, cap * sizeof *a);
        if (a == NULL)
            return NULL;
        self->links = a;
        self->caplinks = cap;
    }
    link_t *l = calloc(1, sizeof *l);
    if (l == NULL)
        return NULL;
    l->fd = fd;
    l->mfd = -1;
    l->state = st;
    l->deadline = now_s() + SETUP_SECONDS;
    self->links[self->nlinks++] = l;
    return l;
}

static void deliver_one(cl_shm_t *self, link_t *l, const uint8_t *msg, size_t total)
{
    self->received++;
    self->cfg.deliver(self->cfg.ctx, l->key, msg, msg + HDR, total - HDR);
}

static void link_kill(cl_shm_t *self, link_t *l, const char *why);
static void try_accept(cl_shm_t *self, link_t *l);

/* Delivers every complete message in l's receiving ring. */
static void drain(cl_shm_t *self, link_t *l)
{
    if (l->state != L_UP || l->draining)
        return;
    l->draining = true;
    ring_hdr_t *r = l->rx;
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    const char *bad = NULL;
    for (;;) {
        uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (tail == head)
            break;
        if (tail - head > l->cap || (tail & 15) != 0) {
            bad = "its ring's tail is out of range";
            break;
        }
        size_t off = (size_t)(head & l->mask), to_end = l->cap - off;
        ent_t e;
        memcpy(&e, l->rxd + off, sizeof e); /* read once, then checked */
        size_t size = ENT + round16(e.len);
        if (e.flags == F_PAD) {
            if ((size_t)e.len + ENT != to_end || to_end > tail - head) {
                bad = "a malformed filler entry";
                break;
            }
            size = to_end;
        } else if ((e.flags & ~(F_FIRST | F_LAST)) != 0 || e.len == 0 || e.len > l->cap / 4 ||
                   size > to_end || size > tail - head) {
            bad = "a malformed entry";
            break;
        } else {
            const uint8_t *data = l->rxd + off + ENT;
            if (e.flags & F_FIRST) {
                if (l->asm_buf != NULL || e.total < HDR || e.total > HDR + self->cfg.max_message ||
                    e.len > e.total || ((e.flags & F_LAST) != 0) != (e.len == e.total)) {
                    bad = "a malformed first fragment";
                    break;
                }
                if (e.flags & F_LAST) {
                    deliver_one(self, l, data, e.len);
                    if (l->state != L_UP)
                        break;
                } else {
                    l->asm_buf = malloc(e.total);
                    if (l->asm_buf == NULL) {
                        bad = "no memory for a message";
                        break;
                    }
                    l->asm_total = e.total;
                    memcpy(l->asm_buf, data, e.len);
                    l->asm_len = e.len;
                }
            } else {
                if (l->asm_buf == NULL || e.len > l->asm_total - l->asm_len ||
                    ((e.flags & F_LAST) != 0) != (l->asm_len + e.len == l->asm_total)) {
                    bad = "a fragment out of order";
                    break;
                }
                memcpy(l->asm_buf + l->asm_len, data, e.len);
                l->asm_len += e.len;
                if (e.flags & F_LAST) {
                    uint8_t *m = l->asm_buf;
                    size_t total = l->asm_total;
                    l->asm_buf = NULL;
                    l->asm_len = l->asm_total = 0;
                    deliver_one(self, l, m, total);
                    free(m);
                    if (l->state != L_UP)
                        break;
                }
            }
        }
        head += size;
        atomic_store_explicit(&r->head, head, memory_order_release);
        atomic_thread_fence(memory_order_seq_cst);
        if (atomic_exchange(&r->want_space, 0) != 0)
            wake(l->fd);
    }
    l->draining = false;
    if (bad != NULL)
        link_kill(self, l, bad);
}

/* Writes as much of q as fits; true when all of it is in the ring. */
static bool put(link_t *l, qent_t *q, const uint8_t *body)
{
    ring_hdr_t *r = l->tx;
    size_t total = HDR + q->blen;
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    bool published = false, done = false;
    while (!done) {
        size_t frag = total - q->off;
        if (frag > l->cap / 4)
            frag = l->cap / 4;
        size_t size = ENT + round16(frag);
        size_t off = (size_t)(tail & l->mask), to_end = l->cap - off;
        uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
        /* An entry never wraps.  And an empty ring starts again at the
           front, so that small messages keep to a few pages instead of
           walking through all of it (every page walked stays resident). */
        bool wrap = size > to_end || (head == tail && off >= REWIND && size <= off);
        size_t need = wrap ? to_end + size : size;
        if (l->cap - (size_t)(tail - head) < need) {
            atomic_store(&r->want_space, 1);
            head = atomic_load(&r->head);
            if (l->cap - (size_t)(tail - head) < need)
                break;
            atomic_store(&r->want_space, 0);
        }
        if (wrap) {
            ent_t pad = {(uint32_t)(to_end - ENT), F_PAD, 0};
            memcpy(l->txd + off, &pad, sizeof pad);
            tail += to_end;
            off = 0;
        }
        ent_t e = {(uint32_t)frag, (q->off == 0 ? F_FIRST : 0u), total};
        if (q->off + frag == total)
            e.flags |= F_LAST;
        uint8_t *dst = l->txd + off;
        memcpy(dst, &e, sizeof e);
        dst += ENT;
        size_t pos = q->off, left = frag;
        if (pos < HDR) {
            size_t n = HDR - pos < left ? HDR - pos : left;
            memcpy(dst, q->hdr + pos, n);
            dst += n;
            pos += n;
            left -= n;
        }
        if (left > 0)
            memcpy(dst, body + (pos - HDR), left);
        q->off += frag;
        tail += size;
        atomic_store_explicit(&r->tail, tail, memory_order_release);
        published = true;
        done = q->off == total;
    }
    if (published) {
        atomic_thread_fence(memory_order_seq_cst);
        if (atomic_exchange(&r->sleeping, 0) != 0)
            wake(l->fd);
    }
    return done;
}

/* A CurveZMQ message's fingerprint: its header and the start of its body
   (the header holds the body's length).  Never 0. */
static uint64_t fingerprint(const uint8_t *hdr, const uint8_t *body, size_t blen)
{
    crypto_generichash_state st;
    uint8_t out[8];
    crypto_generichash_init(&st, NULL, 0, sizeof out);
    crypto_generichash_update(&st, hdr, HDR);
    if (blen > 0 && body != NULL)
        crypto_generichash_update(&st, body, blen < 256 ? blen : 256);
    crypto_generichash_final(&st, out, sizeof out);
    uint64_t v;
    memcpy(&v, out, sizeof v);
    return v != 0 ? v : 1;
}

/* May a COLL message go into l's ring now?  Only once the peer handed on
   the last CurveZMQ message this peer sent it: a ring message must not
   overtake one sent before it on the other path. */
static bool net_clean(link_t *l)
{
    if (!l->net_dirty)
        return true;
    if (l->tx != NULL &&
        atomic_load_explicit(&l->tx->net_seen, memory_order_acquire) == l->net_last)
        l->net_dirty = false;
    return !l->net_dirty;
}

static void net_sent(link_t *l, const uint8_t *hdr, const uint8_t *body, size_t blen)
{
    l->net_last = fingerprint(hdr, body, blen);
    l->net_dirty = true;
}

/* Moves queued messages: ring ones into the ring, CurveZMQ ones out,
   in order, until the ring is full. */
static void flush(cl_shm_t *self, link_t *l)
{
    while (l->qhead != NULL) {
        qent_t *q = l->qhead;
        if (q->ring && l->state == L_UP && (q->off > 0 || net_clean(l))) {
            if (!put(l, q, q->body))
                return;
            self->sent++;
        } else {
            /* A CurveZMQ message, a ring one behind a CurveZMQ one the
               peer may not have yet, or a ring one of a link now closed
               (the whole message again: the receiver dropped any part). */
            if (l->state == L_UP)
                net_sent(l, q->hdr, q->body, q->blen);
            (void)self->cfg.send(self->cfg.ctx, l->key, q->hdr, q->body, q->blen);
            q->body = NULL;
        }
        l->qhead = q->next;
        if (l->qhead == NULL)
            l->qtail = NULL;
        l->qbytes -= q->blen;
        free(q->body);
        free(q);
    }
}

static void unmap(link_t *l)
{
    if (l->map != NULL)
        munmap(l->map, l->maplen);
    l->map = NULL;
    l->tx = l->rx = NULL;
    l->txd = l->rxd = NULL;
}

/* Closes l: delivers what its peer completed, sends what was queued on
   CurveZMQ, frees the rest (the struct goes at the next reap). */
static void link_kill(cl_shm_t *self, link_t *l, const char *why)
{
    if (l->state == L_DEAD)
        return;
    char sid[17];
    short_id(l->key, sid);
    if (l->state == L_UP) {
        if (why != NULL)
            cl_warn("same-host link to peer %s… closed: %s; its messages go over the network", sid,
                    why);
        else
            cl_debug("same-host link to peer %s… closed", sid);
        if (why == NULL)
            drain(self, l); /* a clean close: it finished what it wrote */
    } else if (why != NULL) {
        cl_debug("same-host link setup with %s… abandoned: %s",
                 l->state == L_ACCEPTED ? "a peer" : sid, why);
    }
    if (l->state == L_UP || l->state == L_PROPOSED) {
        /* A peer that restarts with the same key gets a new proposal. */
        for (size_t i = 0; i < self->ntried; i++)
            if (memcmp(self->tried[i], l->key, 32) == 0) {
                memcpy(self->tried[i], self->tried[--self->ntried], 32);
                break;
            }
    }
    l->state = L_DEAD;
    flush(self, l);
    free(l->asm_buf);
    l->asm_buf = NULL;
    if (!l->draining)
        unmap(l); /* else at the reap: a message in the ring is being handled */
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
    if (l->mfd >= 0)
        close(l->mfd);
    l->mfd = -1;
}

static void reap(cl_shm_t *self)
{
    size_t k = 0;
    for (size_t i = 0; i < self->nlinks; i++) {
        link_t *l = self->links[i];
        if (l->state == L_DEAD && !l->draining) {
            unmap(l);
            free(l);
        } else
            self->links[k++] = l;
    }
    self->nlinks = k;
}

static int map_rings(link_t *l, int mfd, size_t cap, bool proposer)
{
    size_t len = SEG_HDR + 2 * (RING_HDR + cap);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    if (p == MAP_FAILED)
        return -1;
    l->map = p;
    l->maplen = len;
    l->cap = cap;
    l->mask = cap - 1;
    uint8_t *r0 = l->map + SEG_HDR, *r1 = r0 + RING_HDR + cap;
    l->tx = (ring_hdr_t *)(proposer ? r0 : r1);
    l->rx = (ring_hdr_t *)(proposer ? r1 : r0);
    l->txd = (uint8_t *)l->tx + RING_HDR;
    l->rxd = (uint8_t *)l->rx + RING_HDR;
    return 0;
}

static void link_up_log(cl_shm_t *self, const link_t *l)
{
    char sid[17];
    short_id(l->key, sid);
    if (!self->announced)
        cl_info("peers of this host exchange collective payloads through shared memory "
                "(COLLAB_SHM=0: over the network)");
    self->announced = true;
    cl_debug("peer %s… is on this host: collective payloads go through shared memory", sid);
}

/* ---------------------------------------------------------------------- */
/* Proposing (the lower key). */

void cl_shm_offer(cl_shm_t *self, const uint8_t key[32])
{
    if (self == NULL)
        return;
    if (memcmp(self->self_key, key, 32) > 0) {
        link_t *w = find(self, key, false);
        if (w != NULL)
            try_accept(self, w);
        return;
    }
    if (memcmp(self->self_key, key, 32) == 0)
        return;
    for (size_t i = 0; i < self->ntried; i++)
        if (memcmp(self->tried[i], key, 32) == 0)
            return;
    if (self->ntried == self->captried) {
        size_t cap = self->captried > 0 ? 2 * self->captried : 16;
        uint8_t(*a)[32] = realloc(self->tried, cap * sizeof *a);
        if (a == NULL)
            return;
        self->tried = a;
        self->captried = cap;
    }
    memcpy(self->tried[self->ntried++], key, 32);
    char sid[17];
    short_id(key, sid);
    struct sockaddr_un sa;
    socklen_t salen = sock_name(self->cfg.run, key, &sa);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    if (connect(fd, (struct sockaddr *)&sa, salen) != 0) {
        /* Another host or namespace, or a peer with COLLAB_SHM=0. */
        cl_debug("peer %s… is not reachable through shared memory: %m", sid);
        close(fd);
        return;
    }
    if (!peer_uid_ok(fd, self->uid)) {
        cl_debug("peer %s… runs as another user: no shared memory with it", sid);
        close(fd);
        return;
    }
    size_t cap = self->cfg.ring_bytes, len = SEG_HDR + 2 * (RING_HDR + cap);
    int mfd = memfd_create("mpicollab-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    link_t *l = NULL;
    if (mfd < 0 || ftruncate(mfd, (off_t)len) != 0 ||
        fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        cl_debug("no shared-memory segment for peer %s…: %m", sid);
        goto fail;
    }
    l = link_add(self, fd, L_PROPOSED);
    if (l == NULL)
        goto fail;
    memcpy(l->key, key, 32);
    if (map_rings(l, mfd, cap, true) != 0) {
        cl_debug("cannot map a shared-memory segment for peer %s…: %m", sid);
        goto fail_link;
    }
    seg_hdr_t *sh = (seg_hdr_t *)l->map;
    randombytes_buf(l->nonce, 32);
    memcpy(sh->magic, SEG_MAGIC, 8);
    sh->version = VERSION;
    sh->ring_bytes = (uint32_t)cap;
    sh->run = self->cfg.run;
    memcpy(sh->nonce, l->nonce, 32);
    memcpy(sh->key_c, self->self_key, 32);
    memcpy(sh->key_a, key, 32);
    hello_t h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, HELLO_MAGIC, 8);
    h.version = VERSION;
    h.ring_bytes = (uint32_t)cap;
    h.run = self->cfg.run;
    memcpy(h.from, self->self_key, 32);
    memcpy(h.to, key, 32);
    memcpy(h.boot, self->boot, sizeof h.boot);
    h.ns_dev = self->ns_dev;
    h.ns_ino = self->ns_ino;
    memcpy(h.nonce, l->nonce, 32);
    struct iovec iov = {&h, sizeof h};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } c;
    memset(&c, 0, sizeof c);
    struct msghdr mh = {0};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = c.buf;
    mh.msg_controllen = sizeof c.buf;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &mfd, sizeof mfd);
    if (sendmsg(fd, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof h) {
        cl_debug("cannot propose shared memory to peer %s…: %m", sid);
        goto fail_link;
    }
    close(mfd);
    return;
fail_link:
    link_kill(self, l, NULL);
    fd = -1; /* closed with the link */
fail:
    if (mfd >= 0)
        close(mfd);
    if (fd >= 0)
        close(fd);
}

static void on_ok(cl_shm_t *self, link_t *l)
{
    ok_t ok;
    ssize_t n = recv(l->fd, &ok, sizeof ok, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    seg_hdr_t *sh = (seg_hdr_t *)l->map;
    if (n != (ssize_t)sizeof ok || memcmp(ok.magic, OK_MAGIC, 8) != 0 ||
        sodium_memcmp(ok.nonce, l->nonce, 32) != 0 ||
        atomic_load_explicit(&sh->acked, memory_order_acquire) != 1) {
        link_kill(self, l, n == 0 ? "refused" : "a wrong answer");
        return;
    }
    l->state = L_UP;
    atomic_store_explicit(&l->rx->net_seen, l->net_got, memory_order_release);
    link_up_log(self, l);
}

/* ---------------------------------------------------------------------- */
/* Accepting (the higher key). */

static void on_accept(cl_shm_t *self)
{
    size_t pending = 0;
    for (size_t i = 0; i < self->nlinks; i++)
        pending += self->links[i]->state == L_ACCEPTED;
    for (;;) {
        int fd = accept4(self->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        if (!peer_uid_ok(fd, self->uid) || pending >= MAX_SETUPS ||
            link_add(self, fd, L_ACCEPTED) == NULL) {
            close(fd);
            continue;
        }
        pending++;
    }
}

/* Finishes a valid proposal once its proposer is a peer the transport
   authenticated: maps the segment, checks it, acknowledges. */
static void try_accept(cl_shm_t *self, link_t *l)
{
    if (l->state != L_WAITKEY || !self->cfg.known(self->cfg.ctx, l->key))
        return;
    const char *why = NULL;
    struct stat st;
    size_t cap = l->cap;
    if (fstat(l->mfd, &st) != 0 || (size_t)st.st_size != SEG_HDR + 2 * (RING_HDR + cap) ||
        (fcntl(l->mfd, F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_SEAL)) !=
            (F_SEAL_SHRINK | F_SEAL_SEAL))
        why = "a segment that is not sealed or has the wrong size";
    else if (map_rings(l, l->mfd, cap, false) != 0)
        why = "a segment that cannot be mapped";
    if (why == NULL) {
        seg_hdr_t *sh = (seg_hdr_t *)l->map;
        if (memcmp(sh->magic, SEG_MAGIC, 8) != 0 || sh->version != VERSION ||
            sh->ring_bytes != cap || sh->run != self->cfg.run ||
            sodium_memcmp(sh->nonce, l->nonce, 32) != 0 || memcmp(sh->key_c, l->key, 32) != 0 ||
            memcmp(sh->key_a, self->self_key, 32) != 0)
            why = "a segment that does not hold what the proposal says";
    }
    close(l->mfd);
    l->mfd = -1;
    if (why != NULL) {
        link_kill(self, l, why);
        return;
    }
    seg_hdr_t *sh = (seg_hdr_t *)l->map;
    atomic_store_explicit(&sh->acked, 1, memory_order_release);
    ok_t ok;
    memcpy(ok.magic, OK_MAGIC, 8);
    memcpy(ok.nonce, l->nonce, 32);
    l->state = L_UP; /* link_kill below logs it as a link that was up */
    atomic_store_explicit(&l->rx->net_seen, l->net_got, memory_order_release);
    if (send(l->fd, &ok, sizeof ok, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof ok) {
        link_kill(self, l, "cannot answer");
        return;
    }
    link_up_log(self, l);
}

static void on_hello(cl_shm_t *self, link_t *l)
{
    hello_t h;
    memset(&h, 0, sizeof h);
    struct iovec iov = {&h, sizeof h};
    union {
        char buf[CMSG_SPACE(4 * sizeof(int))];
        struct cmsghdr align;
    } c;
    struct msghdr mh = {0};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = c.buf;
    mh.msg_controllen = sizeof c.buf;
    ssize_t n = recvmsg(l->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    int mfd = -1, extra = 0;
    for (struct cmsghdr *cm = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm != NULL;
         cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
            if (mfd < 0)
                mfd = fd;
            else {
                close(fd);
                extra++;
            }
        }
    }
    const char *why = NULL;
    size_t cap = h.ring_bytes;
    if (n != (ssize_t)sizeof h || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 || mfd < 0 ||
        extra > 0)
        why = "a malformed proposal";
    else if (memcmp(h.magic, HELLO_MAGIC, 8) != 0 || h.version != VERSION)
        why = "an unknown proposal version";
    else if (h.run != self->cfg.run)
        why = "another run";
    else if (memcmp(h.to, self->self_key, 32) != 0 || memcmp(h.from, self->self_key, 32) >= 0)
        why = "keys that do not fit";
    else if (memcmp(h.boot, self->boot, sizeof h.boot) != 0)
        why = "another boot id";
    else if (h.ns_dev != self->ns_dev || h.ns_ino != self->ns_ino)
        why = "another network namespace";
    else if (cap < MIN_RING || cap > MAX_RING || (cap & (cap - 1)) != 0)
        why = "a ring size out of range";
    else if (find(self, h.from, false) != NULL)
        why = "a second link";
    if (why != NULL) {
        if (mfd >= 0)
            close(mfd);
        link_kill(self, l, n == 0 ? NULL : why);
        return;
    }
    memcpy(l->key, h.from, 32);
    memcpy(l->nonce, h.nonce, 32);
    l->cap = cap;
    l->mfd = mfd;
    l->state = L_WAITKEY;
    l->deadline = now_s() + SETUP_SECONDS;
    try_accept(self, l);
}

/* ---------------------------------------------------------------------- */
/* The class. */

static int read_boot_id(char out[40])
{
    memset(out, 0, 40);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f == NULL)
        return -1;
    char *ok = fgets(out, 40, f);
    fclose(f);
    if (ok == NULL || strlen(out) < 32)
        return -1;
    out[strcspn(out, "\n")] = '\0';
    return 0;
}

cl_shm_t *cl_shm_new(const cl_shm_config_t *cfg)
{
    size_t ring = cfg->ring_bytes != 0 ? cfg->ring_bytes : DEFAULT_RING;
    if (ring < MIN_RING || ring > MAX_RING || (ring & (ring - 1)) != 0 || cfg->deliver == NULL ||
        cfg->send == NULL || cfg->known == NULL)
        return NULL;
    cl_shm_t *self = calloc(1, sizeof *self);
    if (self == NULL)
        return NULL;
    self->cfg = *cfg;
    self->cfg.ring_bytes = ring;
    memcpy(self->self_key, cfg->self_key, 32);
    self->cfg.self_key = self->self_key;
    self->uid = geteuid();
    self->lfd = -1;
    struct stat st;
    if (read_boot_id(self->boot) != 0) {
        cl_debug("no boot id (/proc/sys/kernel/random/boot_id): shared memory off");
        goto fail;
    }
    if (stat("/proc/self/ns/net", &st) != 0) {
        cl_debug("no network namespace (/proc/self/ns/net: %m): shared memory off");
        goto fail;
    }
    self->ns_dev = (uint64_t)st.st_dev;
    self->ns_ino = (uint64_t)st.st_ino;
    struct sockaddr_un sa;
    socklen_t salen = sock_name(cfg->run, self->self_key, &sa);
    self->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (self->lfd < 0 || bind(self->lfd, (struct sockaddr *)&sa, salen) != 0 ||
        listen(self->lfd, 64) != 0) {
        cl_debug("no same-host socket (%m): shared memory off");
        goto fail;
    }
    return self;
fail:
    if (self->lfd >= 0)
        close(self->lfd);
    free(self);
    return NULL;
}

void cl_shm_destroy(cl_shm_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    cl_shm_t *self = *self_p;
    for (size_t i = 0; i < self->nlinks; i++) {
        link_t *l = self->links[i];
        if (l->state == L_UP)
            drain(self, l);
        link_kill(self, l, NULL);
        unmap(l);
        free(l);
    }
    free(self->links);
    free(self->polled);
    free(self->tried);
    if (self->lfd >= 0)
        close(self->lfd);
    free(self);
    *self_p = NULL;
}

void cl_shm_net_received(cl_shm_t *self, const uint8_t key[32], const uint8_t *hdr,
                         const uint8_t *body, size_t blen)
{
    link_t *l = self != NULL ? find(self, key, false) : NULL;
    if (l == NULL)
        return;
    l->net_got = fingerprint(hdr, body, blen);
    if (l->state == L_UP && l->rx != NULL)
        atomic_store_explicit(&l->rx->net_seen, l->net_got, memory_order_release);
}

bool cl_shm_up(const cl_shm_t *self, const uint8_t key[32])
{
    return self != NULL && find(self, key, true) != NULL;
}

int cl_shm_send(cl_shm_t *self, const uint8_t key[32], const uint8_t *hdr, const uint8_t *body,
                size_t blen, bool ring)
{
    if (self != NULL && !ring) {
        /* Tracked before the link is up too: its first ring message must
           not overtake a CurveZMQ one still on the way. */
        link_t *any = find(self, key, false);
        if (any != NULL && (any->state != L_UP || any->qhead == NULL))
            net_sent(any, hdr, body, blen);
    }
    link_t *l = self != NULL ? find(self, key, true) : NULL;
    if (l == NULL || (!ring && l->qhead == NULL))
        return 0;
    if (ring && l->qhead == NULL && !net_clean(l))
        return 0; /* behind a CurveZMQ message the peer may not have yet: CurveZMQ too */
    qent_t tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.ring = ring;
    tmp.blen = blen;
    memcpy(tmp.hdr, hdr, HDR);
    if (ring && l->qhead == NULL && put(l, &tmp, body)) {
        self->sent++;
        return 1;
    }
    /* Once part of it is in the ring the rest must follow, whatever the
       queue holds. */
    if (tmp.off == 0 && l->qbytes + blen > QUEUE_LIMIT)
        return COLLAB_ERR_PROC_FAILED;
    qent_t *q = malloc(sizeof *q);
    uint8_t *copy = blen > 0 ? malloc(blen) : NULL;
    if (q == NULL || (blen > 0 && copy == NULL)) {
        free(q);
        free(copy);
        if (tmp.off > 0)
            link_kill(self, l, "no memory to queue a message");
        return COLLAB_ERR_NO_MEM;
    }
    if (blen > 0)
        memcpy(copy, body, blen);
    *q = tmp;
    q->body = copy;
    l->qbytes += blen;
    if (l->qtail != NULL)
        l->qtail->next = q;
    else
        l->qhead = q;
    l->qtail = q;
    return 1;
}

size_t cl_shm_nfds(const cl_shm_t *self)
{
    return self != NULL ? 1 + self->nlinks : 0;
}

size_t cl_shm_poll_items(cl_shm_t *self, zmq_pollitem_t *items, size_t cap, bool *busy)
{
    *busy = false;
    if (self == NULL || cap == 0)
        return 0;
    if (self->cappolled < self->nlinks) {
        link_t **a = realloc(self->polled, self->nlinks * sizeof *a);
        if (a == NULL)
            return 0;
        self->polled = a;
        self->cappolled = self->nlinks;
    }
    size_t n = 0;
    items[n++] = (zmq_pollitem_t){NULL, self->lfd, ZMQ_POLLIN, 0};
    self->npolled = 0;
    for (size_t i = 0; i < self->nlinks && n < cap; i++) {
        link_t *l = self->links[i];
        if (l->state == L_DEAD)
            continue;
        if (l->state == L_UP) {
            atomic_store(&l->rx->sleeping, 1);
            if (atomic_load(&l->rx->tail) !=
                atomic_load_explicit(&l->rx->head, memory_order_relaxed))
                *busy = true;
            if (l->qhead != NULL && l->qhead->ring) {
                atomic_store(&l->tx->want_space, 1);
                uint64_t used = atomic_load(&l->tx->tail) - atomic_load(&l->tx->head);
                if (used <= l->cap / 2)
                    *busy = true;
            }
        }
        items[n++] = (zmq_pollitem_t){NULL, l->fd, ZMQ_POLLIN, 0};
        self->polled[self->npolled++] = l;
    }
    return n;
}

void cl_shm_after_poll(cl_shm_t *self, const zmq_pollitem_t *items, size_t n)
{
    if (self == NULL || n == 0)
        return;
    double now = now_s();
    for (size_t i = 0; i + 1 < n && i < self->npolled; i++) {
        link_t *l = self->polled[i];
        short rev = items[i + 1].revents;
        if (l->state == L_DEAD)
            continue;
        if (l->state == L_UP)
            atomic_store(&l->rx->sleeping, 0);
        if (l->state == L_WAITKEY)
            try_accept(self, l);
        if (rev == 0 || l->state == L_WAITKEY) {
            if (l->state != L_UP && l->state != L_DEAD && now > l->deadline)
                link_kill(self, l,
                          l->state == L_WAITKEY ? "a peer without an authenticated link"
                                                : "no answer");
            if (rev == 0 || l->state == L_DEAD)
                continue;
        }
        if (l->state == L_PROPOSED) {
            on_ok(self, l);
        } else if (l->state == L_ACCEPTED) {
            on_hello(self, l);
        } else {
            /* Wake-ups carry no data; an end of file is a closed link. */
            char buf[64];
            bool eof = false;
            for (;;) {
                ssize_t r = recv(l->fd, buf, sizeof buf, MSG_DONTWAIT);
                if (r > 0)
                    continue;
                if (r < 0 && errno == EINTR)
                    continue;
                eof = r == 0 || errno != EAGAIN;
                break;
            }
            if (eof) {
                link_kill(self, l, NULL);
                continue;
            }
        }
    }
    if (items[0].revents & ZMQ_POLLIN)
        on_accept(self);
    for (size_t i = 0; i < self->nlinks; i++) {
        link_t *l = self->links[i];
        if (l->state != L_UP)
            continue;
        drain(self, l);
        flush(self, l);
    }
    reap(self);
}

void cl_shm_drain_from(cl_shm_t *self, const uint8_t key[32])
{
    link_t *l = self != NULL ? find(self, key, true) : NULL;
    if (l != NULL)
        drain(self, l);
}

void cl_shm_stats(const cl_shm_t *self, size_t *links, uint64_t *sent, uint64_t *received)
{
    size_t k = 0;
    for (size_t i = 0; self != NULL && i < self->nlinks; i++)
        k += self->links[i]->state == L_UP;
    *links = k;
    *sent = self != NULL ? self->sent : 0;
    *received = self != NULL ? self->received : 0;
}
