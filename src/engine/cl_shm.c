/*  cl_shm.c - collective payloads between peers of one host (see cl_shm.h):
    the rings, the data path and the class; setting a link up is in
    cl_shm_link.c, the types both share in cl_shm_int.h.

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
#include "engine/cl_shm_int.h"

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

double shm_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static size_t round16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

void shm_short_id(const uint8_t key[32], char out[17])
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 8; i++) {
        out[2 * i] = hx[key[i] >> 4];
        out[2 * i + 1] = hx[key[i] & 15];
    }
    out[16] = '\0';
}

static void wake(int fd)
{
    char b = 1;
    (void)send(fd, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* ---------------------------------------------------------------------- */
/* Links. */

link_t *shm_find(const cl_shm_t *self, const uint8_t key[32], bool up_only)
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

link_t *shm_link_add(cl_shm_t *self, int fd, lstate_t st)
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
    l->seg_fd = -1;
    l->grp_fd = -1;
    l->id = ++self->next_id;
    l->state = st;
    l->deadline = shm_now() + SETUP_SECONDS;
    self->links[self->nlinks++] = l;
    return l;
}

static void deliver_one(cl_shm_t *self, link_t *l, const uint8_t *msg, size_t total)
{
    self->received++;
    self->cfg.deliver(self->cfg.ctx, l->key, msg, msg + HDR, total - HDR);
}

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
        shm_link_kill(self, l, bad);
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
   (the header holds the body's length).  Never 0 or NET_UNSEEN. */
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
    return v != 0 && v != NET_UNSEEN ? v : 1;
}

void shm_link_keyed(link_t *l, const uint8_t key[32])
{
    memcpy(l->key, key, 32);
    l->net_last = NET_UNSEEN;
    l->net_dirty = true;
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
void shm_link_kill(cl_shm_t *self, link_t *l, const char *why)
{
    if (l->state == L_DEAD)
        return;
    char sid[17];
    shm_short_id(l->key, sid);
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
    if (l->seg_fd >= 0)
        close(l->seg_fd);
    l->seg_fd = -1;
    if (l->grp_fd >= 0)
        close(l->grp_fd);
    l->grp_fd = -1;
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

/* ---------------------------------------------------------------------- */
/* The class. */

/* What makes this process's host, as shared memory needs it (besides the
   effective user): the boot id and the network namespace.  NULL, or why
   not (errno says more where a call failed). */
static const char *read_host(char boot[40], uint64_t *ns_dev, uint64_t *ns_ino)
{
    if (shm_read_boot_id(boot) != 0)
        return "no boot id (/proc/sys/kernel/random/boot_id)";
    struct stat st;
    if (stat("/proc/self/ns/net", &st) != 0)
        return "no network namespace (/proc/self/ns/net)";
    *ns_dev = (uint64_t)st.st_dev;
    *ns_ino = (uint64_t)st.st_ino;
    return NULL;
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
    const char *why = read_host(self->boot, &self->ns_dev, &self->ns_ino);
    if (why != NULL) {
        cl_debug("%s: shared memory off", why);
        goto fail;
    }
    struct sockaddr_un sa;
    socklen_t salen = shm_sock_name(cfg->run, self->self_key, &sa);
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

int cl_shm_host_key(uint64_t *out)
{
    char boot[40];
    uint64_t parts[3] = {(uint64_t)geteuid(), 0, 0};
    if (read_host(boot, &parts[1], &parts[2]) != NULL)
        return -1;
    unsigned char digest[crypto_generichash_BYTES_MIN];
    crypto_generichash_state h;
    if (crypto_generichash_init(&h, NULL, 0, sizeof digest) != 0 ||
        crypto_generichash_update(&h, (const unsigned char *)boot, strlen(boot)) != 0 ||
        crypto_generichash_update(&h, (const unsigned char *)parts, sizeof parts) != 0 ||
        crypto_generichash_final(&h, digest, sizeof digest) != 0)
        return -1;
    memcpy(out, digest, sizeof *out);
    return 0;
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
        shm_link_kill(self, l, NULL);
        unmap(l);
        free(l);
    }
    if (self->sent > 0 || self->received > 0)
        cl_debug("shared memory: %llu messages sent and %llu received through rings",
                 (unsigned long long)self->sent, (unsigned long long)self->received);
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
    link_t *l = self != NULL ? shm_find(self, key, false) : NULL;
    if (l == NULL)
        return;
    l->net_got = fingerprint(hdr, body, blen);
    if (l->state == L_UP && l->rx != NULL)
        atomic_store_explicit(&l->rx->net_seen, l->net_got, memory_order_release);
}

bool cl_shm_known(const cl_shm_t *self, const uint8_t key[32])
{
    return self != NULL && shm_find(self, key, false) != NULL;
}

bool cl_shm_up(const cl_shm_t *self, const uint8_t key[32])
{
    return self != NULL && shm_find(self, key, true) != NULL;
}

size_t cl_shm_queued(const cl_shm_t *self, const uint8_t key[32])
{
    const link_t *l = self != NULL ? shm_find(self, key, false) : NULL;
    size_t n = 0;
    for (const qent_t *q = l != NULL ? l->qhead : NULL; q != NULL; q = q->next)
        n++;
    return n;
}

int cl_shm_send(cl_shm_t *self, const uint8_t key[32], const uint8_t *hdr, const uint8_t *body,
                size_t blen, unsigned how)
{
    bool ring = (how & CL_SHM_RING) != 0;
    if (self != NULL && !ring) {
        /* Tracked before the link is up too: its first ring message must
           not overtake a CurveZMQ one still on the way. */
        link_t *any = shm_find(self, key, false);
        if (any != NULL && (any->state != L_UP || any->qhead == NULL))
            net_sent(any, hdr, body, blen);
    }
    link_t *l = self != NULL ? shm_find(self, key, true) : NULL;
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
    if (tmp.off == 0 && (how & CL_SHM_FLOW) == 0 && l->qbytes + blen > QUEUE_LIMIT)
        return COLLAB_ERR_PROC_FAILED;
    qent_t *q = malloc(sizeof *q);
    uint8_t *copy = blen > 0 ? malloc(blen) : NULL;
    if (q == NULL || (blen > 0 && copy == NULL)) {
        free(q);
        free(copy);
        if (tmp.off > 0)
            shm_link_kill(self, l, "no memory to queue a message");
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
    double now = shm_now();
    for (size_t i = 0; i + 1 < n && i < self->npolled; i++) {
        link_t *l = self->polled[i];
        short rev = items[i + 1].revents;
        if (l->state == L_DEAD)
            continue;
        if (l->state == L_UP)
            atomic_store(&l->rx->sleeping, 0);
        if (l->state == L_WAITKEY)
            shm_try_accept(self, l);
        if (rev == 0 || l->state == L_WAITKEY) {
            if (l->state != L_UP && l->state != L_DEAD && now > l->deadline)
                shm_link_kill(self, l,
                              l->state == L_WAITKEY ? "a peer without an authenticated link"
                                                    : "no answer");
            if (rev == 0 || l->state == L_DEAD)
                continue;
        }
        if (l->state == L_PROPOSED) {
            shm_on_ok(self, l);
        } else if (l->state == L_ACCEPTED) {
            shm_on_hello(self, l);
        } else {
            /* Wake-ups carry no data; an end of file is a closed link. */
            if (!shm_on_up_read(self, l)) {
                shm_link_kill(self, l, NULL);
                continue;
            }
        }
    }
    if (items[0].revents & ZMQ_POLLIN)
        shm_on_accept(self);
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
    link_t *l = self != NULL ? shm_find(self, key, true) : NULL;
    if (l != NULL)
        drain(self, l);
}

uint64_t cl_shm_link_id(const cl_shm_t *self, const uint8_t key[32])
{
    link_t *l = self != NULL ? shm_find(self, key, true) : NULL;
    return l != NULL ? l->id : 0;
}

void *cl_shm_fast_map(cl_shm_t *self, const uint8_t key[32], bool *low)
{
    link_t *l = self != NULL ? shm_find(self, key, true) : NULL;
    if (l == NULL || l->seg_fd < 0)
        return NULL;
    void *p = mmap(NULL, CL_SHM_FAST_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, l->seg_fd,
                   (off_t)FAST_OFF);
    if (p == MAP_FAILED)
        return NULL;
    *low = memcmp(self->self_key, key, 32) < 0;
    return p;
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
