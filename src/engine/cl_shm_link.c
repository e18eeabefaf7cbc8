/*  cl_shm_link.c - setting up a shared-memory link between two peers of
    one host (cl_shm.c's comment, steps 1 to 3; docs/wire.md §9): the
    lower key proposes (cl_shm_offer), the higher accepts and checks
    everything before it maps anything, the proposer checks the answer.
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

/* "\0mpicollab/<run>/<key>" into sa; returns the address length. */
socklen_t shm_sock_name(uint64_t run, const uint8_t key[32], struct sockaddr_un *sa)
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

/* Sends len bytes of buf on sock with fd attached (SCM_RIGHTS). */
static ssize_t send_with_fd(int sock, const void *buf, size_t len, int fd, int flags)
{
    struct iovec iov = {(void *)buf, len};
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
    memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    return sendmsg(sock, &mh, flags);
}

/* Receives one message of at most len bytes into buf without blocking;
   keeps the first descriptor it carries in *fd (-1: none), closes the
   others and counts them in *extra, and gives recvmsg's msg_flags in
   *msg_flags. Returns what recvmsg returns (errno kept when < 0). */
static ssize_t recv_with_fd(int sock, void *buf, size_t len, int *fd, int *extra, int *msg_flags)
{
    struct iovec iov = {buf, len};
    union {
        char buf[CMSG_SPACE(4 * sizeof(int))];
        struct cmsghdr align;
    } c;
    struct msghdr mh = {0};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = c.buf;
    mh.msg_controllen = sizeof c.buf;
    ssize_t n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    *fd = -1;
    *extra = 0;
    *msg_flags = mh.msg_flags;
    for (struct cmsghdr *cm = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm != NULL;
         cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int one;
            memcpy(&one, CMSG_DATA(cm) + i * sizeof(int), sizeof one);
            if (*fd < 0)
                *fd = one;
            else {
                close(one);
                (*extra)++;
            }
        }
    }
    return n;
}

static int map_rings(link_t *l, int mfd, size_t cap, bool proposer)
{
    size_t len = SEG_BYTES(cap);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    if (p == MAP_FAILED)
        return -1;
    l->map = p;
    l->maplen = len;
    l->cap = cap;
    l->mask = cap - 1;
    uint8_t *r0 = l->map + RINGS_OFF, *r1 = r0 + RING_HDR + cap;
    l->tx = (ring_hdr_t *)(proposer ? r0 : r1);
    l->rx = (ring_hdr_t *)(proposer ? r1 : r0);
    l->txd = (uint8_t *)l->tx + RING_HDR;
    l->rxd = (uint8_t *)l->rx + RING_HDR;
    return 0;
}

static void link_up_log(cl_shm_t *self, const link_t *l)
{
    char sid[17];
    shm_short_id(l->key, sid);
    if (!self->announced)
        cl_info("peers of this host exchange collective payloads through shared memory "
                "(COLLAB_SHM=0: over the network)");
    self->announced = true;
    cl_debug("peer %s… is on this host: collective payloads go through shared memory", sid);
}

void cl_shm_offer(cl_shm_t *self, const uint8_t key[32])
{
    if (self == NULL)
        return;
    if (memcmp(self->self_key, key, 32) > 0) {
        link_t *w = shm_find(self, key, false);
        if (w != NULL)
            shm_try_accept(self, w);
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
    shm_short_id(key, sid);
    struct sockaddr_un sa;
    socklen_t salen = shm_sock_name(self->cfg.run, key, &sa);
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
    size_t cap = self->cfg.ring_bytes, len = SEG_BYTES(cap);
    int mfd = memfd_create("mpicollab-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    link_t *l = NULL;
    if (mfd < 0 || ftruncate(mfd, (off_t)len) != 0 ||
        fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        cl_debug("no shared-memory segment for peer %s…: %m", sid);
        goto fail;
    }
    l = shm_link_add(self, fd, L_PROPOSED);
    if (l == NULL)
        goto fail;
    shm_link_keyed(l, key);
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
    if (send_with_fd(fd, &h, sizeof h, mfd, MSG_NOSIGNAL) != (ssize_t)sizeof h) {
        cl_debug("cannot propose shared memory to peer %s…: %m", sid);
        goto fail_link;
    }
    l->seg_fd = mfd; /* kept: the fast path maps its area (cl_shm_fast_map) */
    return;
fail_link:
    shm_link_kill(self, l, NULL);
    fd = -1; /* closed with the link */
fail:
    if (mfd >= 0)
        close(mfd);
    if (fd >= 0)
        close(fd);
}

void shm_on_ok(cl_shm_t *self, link_t *l)
{
    ok_t ok;
    ssize_t n = recv(l->fd, &ok, sizeof ok, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    seg_hdr_t *sh = (seg_hdr_t *)l->map;
    if (n != (ssize_t)sizeof ok || memcmp(ok.magic, OK_MAGIC, 8) != 0 ||
        sodium_memcmp(ok.nonce, l->nonce, 32) != 0 ||
        atomic_load_explicit(&sh->acked, memory_order_acquire) != 1) {
        shm_link_kill(self, l, n == 0 ? "refused" : "a wrong answer");
        return;
    }
    l->state = L_UP;
    atomic_store_explicit(&l->rx->net_seen, l->net_got, memory_order_release);
    link_up_log(self, l);
}

void shm_on_accept(cl_shm_t *self)
{
    size_t pending = 0;
    for (size_t i = 0; i < self->nlinks; i++)
        pending += self->links[i]->state == L_ACCEPTED;
    for (;;) {
        int fd = accept4(self->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        if (!peer_uid_ok(fd, self->uid) || pending >= MAX_SETUPS ||
            shm_link_add(self, fd, L_ACCEPTED) == NULL) {
            close(fd);
            continue;
        }
        pending++;
    }
}

/* Finishes a valid proposal once its proposer is a peer the transport
   authenticated: maps the segment, checks it, acknowledges. */
void shm_try_accept(cl_shm_t *self, link_t *l)
{
    if (l->state != L_WAITKEY || !self->cfg.known(self->cfg.ctx, l->key))
        return;
    const char *why = NULL;
    struct stat st;
    size_t cap = l->cap;
    if (fstat(l->mfd, &st) != 0 || (size_t)st.st_size != SEG_BYTES(cap) ||
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
    if (why == NULL)
        l->seg_fd = l->mfd; /* kept: the fast path maps its area (cl_shm_fast_map) */
    else
        close(l->mfd);
    l->mfd = -1;
    if (why != NULL) {
        shm_link_kill(self, l, why);
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
        shm_link_kill(self, l, "cannot answer");
        return;
    }
    link_up_log(self, l);
}

void shm_on_hello(cl_shm_t *self, link_t *l)
{
    hello_t h;
    memset(&h, 0, sizeof h);
    int mfd, extra, flags;
    ssize_t n = recv_with_fd(l->fd, &h, sizeof h, &mfd, &extra, &flags);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    const char *why = NULL;
    size_t cap = h.ring_bytes;
    if (n != (ssize_t)sizeof h || (flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 || mfd < 0 || extra > 0)
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
    else if (shm_find(self, h.from, false) != NULL)
        why = "a second link";
    if (why != NULL) {
        if (mfd >= 0)
            close(mfd);
        shm_link_kill(self, l, n == 0 ? NULL : why);
        return;
    }
    shm_link_keyed(l, h.from);
    memcpy(l->nonce, h.nonce, 32);
    l->cap = cap;
    l->mfd = mfd;
    l->state = L_WAITKEY;
    l->deadline = shm_now() + SETUP_SECONDS;
    shm_try_accept(self, l);
}

int shm_read_boot_id(char out[40])
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

bool shm_on_up_read(cl_shm_t *self, link_t *l)
{
    (void)self;
    for (;;) {
        group_msg_t m;
        int gfd, extra, flags;
        ssize_t r = recv_with_fd(l->fd, &m, sizeof m, &gfd, &extra, &flags);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (gfd >= 0)
                close(gfd);
            return r < 0 && errno == EAGAIN;
        }
        /* A one-byte wake-up, or a group offer (anything else is dropped). */
        if (r == (ssize_t)sizeof m && gfd >= 0 && (flags & MSG_CTRUNC) == 0 &&
            memcmp(m.magic, GROUP_MAGIC, 8) == 0 && m.version == VERSION) {
            if (l->grp_fd >= 0)
                close(l->grp_fd);
            l->grp_fd = gfd;
            l->grp = m;
        } else if (gfd >= 0) {
            close(gfd);
        }
    }
}

bool cl_shm_group_offer(cl_shm_t *self, const uint8_t key[32], uint64_t comm_id, uint32_t k,
                        uint64_t tag, int mfd, size_t bytes)
{
    link_t *l = self != NULL ? shm_find(self, key, true) : NULL;
    if (l == NULL || mfd < 0)
        return false;
    group_msg_t m;
    memset(&m, 0, sizeof m);
    memcpy(m.magic, GROUP_MAGIC, 8);
    m.version = VERSION;
    m.k = k;
    m.comm_id = comm_id;
    m.tag = tag;
    m.bytes = bytes;
    return send_with_fd(l->fd, &m, sizeof m, mfd, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof m;
}

uint64_t cl_shm_group_offered(const cl_shm_t *self, const uint8_t key[32], uint64_t comm_id,
                              uint32_t k, size_t bytes)
{
    link_t *l = self != NULL ? shm_find(self, key, true) : NULL;
    if (l == NULL || l->grp_fd < 0 || l->grp.comm_id != comm_id || l->grp.k != k ||
        l->grp.bytes != bytes)
        return 0;
    return l->grp.tag;
}

int cl_shm_group_take(cl_shm_t *self, const uint8_t key[32], uint64_t comm_id, uint32_t k,
                      uint64_t tag, size_t bytes)
{
    link_t *l = self != NULL ? shm_find(self, key, true) : NULL;
    if (l == NULL || l->grp_fd < 0 || l->grp.comm_id != comm_id || l->grp.k != k ||
        l->grp.tag != tag || l->grp.bytes != bytes)
        return -1;
    int fd = l->grp_fd;
    l->grp_fd = -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size != bytes ||
        (fcntl(fd, F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_SEAL)) != (F_SEAL_SHRINK | F_SEAL_SEAL)) {
        close(fd);
        return -1;
    }
    return fd;
}
