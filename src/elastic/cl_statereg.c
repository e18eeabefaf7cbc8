/*  cl_statereg.c - the registry of state buffers and the stripe planner.

    Entries sit in an array sorted by start-up index (start-up broadcasts
    are few, at most CL_STATEREG_MAX), found by binary search.

    Safe access.  The program's memory is never touched directly: reads
    and writes go through process_vm_readv / process_vm_writev on our own
    pid, which the kernel answers with EFAULT (or a short count) when a
    page is not mapped or not writable, instead of delivering SIGSEGV.
    Transfers are cut at 1 GiB so that counts stay well inside ssize_t.
    When the kernel refuses those calls (ENOSYS, EPERM: seccomp filters,
    some sandboxes), the registry switches for good to a non-blocking
    pipe: write(2) from the program's memory into the pipe, or read(2)
    from the pipe into it, fails with EFAULT in the same cases.  After a
    failed read into the program's memory, what is left in the pipe is
    drained so the next transfer starts clean.

    Followed copies.  A buffer's bytes may have been copied elsewhere by
    the program right after its broadcast (a bucket copied into the
    parameters, docs/nccl.md §5).  Each entry then keeps its moves: pieces
    (offset, length, destination), sorted by offset and disjoint, merged
    where they continue each other.  Every transfer walks the requested
    range, taking each covered part at its destination and each gap at
    the buffer's own address, so a fully followed buffer's own address is
    never touched again (the program may have reused that memory).

    Hashing reads each buffer in CL_STATEREG_CHUNK pieces into a bounce
    buffer (allocated on first use) and feeds BLAKE2b (libsodium's
    crypto_generichash), preceded by the buffer's size.
*/
#define _GNU_SOURCE
#include "elastic/cl_statereg.h"
#include "elastic/cl_sorted.h"

#include "mpi_collab.h"
#include "util/cl_device.h"
#include "util/cl_log.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define VM_STEP ((size_t)1 << 30)   /* bytes per process_vm_* call at most */
#define PIPE_STEP ((size_t)1 << 16) /* bytes per pipe round at most */
#define USE_PIPE 1                  /* vm_copy: the kernel refused; use the pipe */

typedef struct {
    size_t off;     /* first byte of the buffer this piece covers */
    size_t len;     /* bytes covered */
    uintptr_t dst;  /* where they were copied */
} reg_move_t;

typedef struct {
    uint64_t index;  /* start-up index */
    uintptr_t addr;  /* the program's buffer */
    size_t bytes;    /* its size */
    reg_move_t *mv;  /* followed copies, sorted by off, disjoint (NULL: none) */
    uint32_t nmv, cap_mv;
    size_t moved;    /* bytes the moves cover */
} reg_entry_t;
_Static_assert(offsetof(reg_entry_t, index) == 0, "cl_sorted keys on the first member");

struct cl_statereg {
    reg_entry_t *v;   /* sorted by index */
    size_t n, cap;    /* entries used, room */
    uint64_t total;   /* sum of bytes */
    bool pipe_mode;   /* process_vm_* refused: use the pipe */
    int pfd[2];       /* the pipe, -1 until needed */
    uint8_t *bounce;  /* CL_STATEREG_CHUNK bytes for hashing, NULL until needed */
    bool warned_full; /* the registry-full warning was given */
    size_t nmoves;    /* moves kept, all entries */
    bool warned_moves; /* the too-many-moves warning was given */
};

cl_statereg_t *cl_statereg_new(void)
{
    if (sodium_init() < 0)
        return NULL;
    cl_statereg_t *self = calloc(1, sizeof *self);
    if (self == NULL)
        return NULL;
    self->pfd[0] = self->pfd[1] = -1;
    return self;
}

void cl_statereg_destroy(cl_statereg_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    cl_statereg_t *self = *self_p;
    if (self->pfd[0] >= 0)
        close(self->pfd[0]);
    if (self->pfd[1] >= 0)
        close(self->pfd[1]);
    free(self->bounce);
    for (size_t i = 0; i < self->n; i++)
        free(self->v[i].mv);
    free(self->v);
    free(self);
    *self_p = NULL;
}

/* Position of index in v, or where it would be inserted (*found false). */
static size_t locate(const cl_statereg_t *self, uint64_t index, bool *found)
{
    return cl_sorted_locate(self->v, self->n, sizeof *self->v, index, found);
}

static const reg_entry_t *lookup(const cl_statereg_t *self, uint64_t index)
{
    bool found;
    size_t i = locate(self, index, &found);
    return found ? &self->v[i] : NULL;
}

static void to_public(const reg_entry_t *e, cl_statereg_entry_t *out)
{
    out->index = e->index;
    out->addr = (void *)e->addr;
    out->bytes = e->bytes;
    out->moved = e->moved;
}

int cl_statereg_add(cl_statereg_t *self, uint64_t index, void *addr, size_t bytes)
{
    if (self == NULL || (addr == NULL && bytes > 0) ||
        (bytes > 0 && (uintptr_t)addr > UINTPTR_MAX - (bytes - 1)))
        return COLLAB_ERR_ARG;
    bool found;
    size_t pos = locate(self, index, &found);
    if (found)
        return COLLAB_ERR_ARG;
    if (self->n == CL_STATEREG_MAX) {
        if (!self->warned_full)
            cl_warn("more than %d start-up broadcasts; #%llu and later ones are not served to "
                    "joiners, who keep their own values for them",
                    CL_STATEREG_MAX, (unsigned long long)index);
        self->warned_full = true;
        return COLLAB_ERR_ARG;
    }
    reg_entry_t *v = cl_sorted_grow(self->v, self->n, &self->cap, sizeof *v);
    if (v == NULL)
        return COLLAB_ERR_NO_MEM;
    self->v = v;
    cl_sorted_open(self->v, self->n, sizeof *self->v, pos);
    self->v[pos] = (reg_entry_t){.index = index, .addr = (uintptr_t)addr, .bytes = bytes};
    self->n++;
    self->total += bytes;
    return COLLAB_OK;
}

int cl_statereg_find(const cl_statereg_t *self, uint64_t index, cl_statereg_entry_t *out)
{
    if (self == NULL || out == NULL)
        return COLLAB_ERR_ARG;
    const reg_entry_t *e = lookup(self, index);
    if (e == NULL)
        return COLLAB_ERR_ARG;
    to_public(e, out);
    return COLLAB_OK;
}

size_t cl_statereg_count(const cl_statereg_t *self)
{
    return self != NULL ? self->n : 0;
}

uint64_t cl_statereg_total(const cl_statereg_t *self)
{
    return self != NULL ? self->total : 0;
}

bool cl_statereg_first(const cl_statereg_t *self, cl_statereg_entry_t *out)
{
    if (self == NULL || out == NULL || self->n == 0)
        return false;
    to_public(&self->v[0], out);
    return true;
}

bool cl_statereg_next(const cl_statereg_t *self, uint64_t after, cl_statereg_entry_t *out)
{
    if (self == NULL || out == NULL || after == UINT64_MAX)
        return false;
    bool found;
    size_t i = locate(self, after + 1, &found);
    if (i >= self->n)
        return false;
    to_public(&self->v[i], out);
    return true;
}

/* ---------------------------------------------------------------------- */
/* Safe transfers between our own memory (local) and the program's buffers
   (remote). */

/* process_vm_readv/writev.  Returns 0, USE_PIPE when the kernel refuses
   the calls, COLLAB_ERR_ARG when the remote range is not accessible. */
static int vm_copy(void *local, uintptr_t remote, size_t len, bool to_remote)
{
    pid_t pid = getpid();
    size_t done = 0;
    while (done < len) {
        size_t step = len - done < VM_STEP ? len - done : VM_STEP;
        struct iovec l = {.iov_base = (char *)local + done, .iov_len = step};
        struct iovec r = {.iov_base = (void *)(remote + done), .iov_len = step};
        ssize_t n = to_remote ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                              : process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == ENOSYS || errno == EPERM)
                return USE_PIPE;
            return errno == ENOMEM ? COLLAB_ERR_NO_MEM : COLLAB_ERR_ARG;
        }
        if (n == 0)
            return COLLAB_ERR_ARG;
        done += (size_t)n; /* a short count: the next call reports the fault */
    }
    return COLLAB_OK;
}

static void pipe_drain(cl_statereg_t *self)
{
    char scratch[4096];
    while (read(self->pfd[0], scratch, sizeof scratch) > 0) {
    }
}

static int pipe_copy(cl_statereg_t *self, void *local, uintptr_t remote, size_t len, bool to_remote)
{
    if (self->pfd[0] < 0 && pipe2(self->pfd, O_CLOEXEC | O_NONBLOCK) != 0) {
        cl_error("cannot create a pipe to copy state buffers: %m");
        self->pfd[0] = self->pfd[1] = -1;
        return COLLAB_ERR_INTERNAL;
    }
    size_t done = 0;
    while (done < len) {
        size_t step = len - done < PIPE_STEP ? len - done : PIPE_STEP;
        const void *from = to_remote ? (const char *)local + done : (const void *)(remote + done);
        ssize_t in = write(self->pfd[1], from, step);
        if (in < 0 && errno == EINTR)
            continue;
        if (in <= 0)
            return COLLAB_ERR_ARG; /* EFAULT: the program's range is not readable */
        size_t got = 0;
        while (got < (size_t)in) {
            void *to = to_remote ? (void *)(remote + done + got) : (char *)local + done + got;
            ssize_t out = read(self->pfd[0], to, (size_t)in - got);
            if (out < 0 && errno == EINTR)
                continue;
            if (out <= 0) {
                pipe_drain(self); /* EFAULT: not writable; leave the pipe empty */
                return COLLAB_ERR_ARG;
            }
            got += (size_t)out;
        }
        done += (size_t)in;
    }
    return COLLAB_OK;
}

static int safe_copy(cl_statereg_t *self, void *local, uintptr_t remote, size_t len, bool to_remote)
{
    if (len == 0)
        return COLLAB_OK;
    /* A device buffer (docs/cuda.md) goes through the device plugin, after
       the device is synchronised: queued kernels may still be writing it. */
    int kind = cl_device_kind((const void *)remote, len, NULL);
    if (kind == CL_DEVQ_DEVICE)
        return to_remote ? cl_device_write((void *)remote, local, len)
                         : cl_device_read(local, (const void *)remote, len);
    if (kind != CL_DEVQ_HOST)
        return COLLAB_ERR_ARG;
    if (!self->pipe_mode) {
        int rc = vm_copy(local, remote, len, to_remote);
        if (rc != USE_PIPE)
            return rc;
        cl_debug("process_vm_%sv is not permitted here (%m); state buffers are copied "
                 "through a pipe",
                 to_remote ? "write" : "read");
        self->pipe_mode = true;
    }
    return pipe_copy(self, local, remote, len, to_remote);
}

void cl_statereg_use_pipe(cl_statereg_t *self)
{
    if (self != NULL)
        self->pipe_mode = true;
}

/* The first move of e that ends after off (e->nmv when none). */
static uint32_t move_at(const reg_entry_t *e, size_t off)
{
    uint32_t lo = 0, hi = e->nmv;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (e->mv[mid].off + e->mv[mid].len <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Transfers [off, off + len) of entry e: each followed part at its
   destination, each gap at the buffer's own address. */
static int entry_copy(cl_statereg_t *self, const reg_entry_t *e, size_t off, void *local,
                      size_t len, bool to_remote)
{
    char *l = local;
    while (len > 0) {
        uint32_t i = move_at(e, off);
        uintptr_t remote;
        size_t step;
        if (i < e->nmv && e->mv[i].off <= off) {
            remote = e->mv[i].dst + (off - e->mv[i].off);
            step = e->mv[i].off + e->mv[i].len - off;
        } else {
            remote = e->addr + off;
            step = (i < e->nmv ? e->mv[i].off : e->bytes) - off;
        }
        if (step > len)
            step = len;
        int rc = safe_copy(self, l, remote, step, to_remote);
        if (rc != COLLAB_OK)
            return rc;
        off += step;
        l += step;
        len -= step;
    }
    return COLLAB_OK;
}

/* The entry of index when [offset, offset + len) lies inside it. */
static const reg_entry_t *range_of(const cl_statereg_t *self, uint64_t index, size_t offset,
                                   size_t len)
{
    const reg_entry_t *e = lookup(self, index);
    if (e == NULL || offset > e->bytes || len > e->bytes - offset)
        return NULL;
    return e;
}

int cl_statereg_read(cl_statereg_t *self, uint64_t index, size_t offset, size_t len, void *dst)
{
    if (self == NULL || (dst == NULL && len > 0))
        return COLLAB_ERR_ARG;
    const reg_entry_t *e = range_of(self, index, offset, len);
    if (e == NULL)
        return COLLAB_ERR_ARG;
    return entry_copy(self, e, offset, dst, len, false);
}

int cl_statereg_write(cl_statereg_t *self, uint64_t index, size_t offset, const void *src,
                      size_t len)
{
    if (self == NULL || (src == NULL && len > 0))
        return COLLAB_ERR_ARG;
    const reg_entry_t *e = range_of(self, index, offset, len);
    if (e == NULL)
        return COLLAB_ERR_ARG;
    return entry_copy(self, e, offset, (void *)src, len, true);
}

int cl_statereg_hash(cl_statereg_t *self, uint64_t index, uint8_t out[CL_STATEREG_HASH_BYTES])
{
    if (self == NULL || out == NULL)
        return COLLAB_ERR_ARG;
    const reg_entry_t *e = lookup(self, index);
    if (e == NULL)
        return COLLAB_ERR_ARG;
    if (self->bounce == NULL && e->bytes > 0) {
        self->bounce = malloc(CL_STATEREG_CHUNK);
        if (self->bounce == NULL)
            return COLLAB_ERR_NO_MEM;
    }
    crypto_generichash_state st;
    if (crypto_generichash_init(&st, NULL, 0, CL_STATEREG_HASH_BYTES) != 0)
        return COLLAB_ERR_INTERNAL;
    uint8_t size_le[8];
    for (int i = 0; i < 8; i++)
        size_le[i] = (uint8_t)((uint64_t)e->bytes >> (8 * i));
    crypto_generichash_update(&st, size_le, sizeof size_le);
    for (size_t off = 0; off < e->bytes; off += CL_STATEREG_CHUNK) {
        size_t step = e->bytes - off < CL_STATEREG_CHUNK ? e->bytes - off : CL_STATEREG_CHUNK;
        int rc = entry_copy(self, e, off, self->bounce, step, false);
        if (rc != COLLAB_OK)
            return rc;
        crypto_generichash_update(&st, self->bounce, step);
    }
    crypto_generichash_final(&st, out, CL_STATEREG_HASH_BYTES);
    return COLLAB_OK;
}

static void remove_at(cl_statereg_t *self, size_t i)
{
    self->total -= self->v[i].bytes;
    self->nmoves -= self->v[i].nmv;
    free(self->v[i].mv);
    memmove(&self->v[i], &self->v[i + 1], (self->n - i - 1) * sizeof *self->v);
    self->n--;
}

int cl_statereg_drop(cl_statereg_t *self, uint64_t index, const char *reason)
{
    if (self == NULL)
        return COLLAB_ERR_ARG;
    bool found;
    size_t i = locate(self, index, &found);
    if (!found)
        return COLLAB_ERR_ARG;
    cl_warn("start-up broadcast #%llu (%zu bytes at %p) is no longer served to joiners: %s; a "
            "joiner keeps its own value for it",
            (unsigned long long)index, self->v[i].bytes, (void *)self->v[i].addr,
            reason != NULL && reason[0] != '\0' ? reason : "dropped");
    remove_at(self, i);
    return COLLAB_OK;
}

size_t cl_statereg_trim(cl_statereg_t *self, uint64_t prefix)
{
    if (self == NULL)
        return 0;
    bool found;
    size_t i = locate(self, prefix, &found);
    size_t gone = self->n - i;
    while (self->n > i)
        remove_at(self, self->n - 1);
    if (gone > 0)
        cl_debug("forgot %zu broadcast buffer%s posted after the %llu start-up collectives", gone,
                 gone == 1 ? "" : "s", (unsigned long long)prefix);
    return gone;
}

/* ---------------------------------------------------------------------- */
/* Followed copies. */

/* Inserts the move {off, len, dst} at position i of e, merged with the
   move before it when both continue each other. */
static int move_insert(cl_statereg_t *self, reg_entry_t *e, uint32_t i, size_t off, size_t len,
                       uintptr_t dst)
{
    if (i > 0 && e->mv[i - 1].off + e->mv[i - 1].len == off &&
        e->mv[i - 1].dst + e->mv[i - 1].len == dst) {
        e->mv[i - 1].len += len;
        e->moved += len;
        return COLLAB_OK;
    }
    if (self->nmoves >= CL_STATEREG_MAX_MOVES) {
        if (!self->warned_moves)
            cl_warn("more than %u copies out of start-up broadcast buffers; later ones are not "
                    "followed, and joiners are served those bytes from the broadcast buffers",
                    CL_STATEREG_MAX_MOVES);
        self->warned_moves = true;
        return COLLAB_ERR_NO_MEM;
    }
    if (e->nmv == e->cap_mv) {
        uint32_t cap = e->cap_mv != 0 ? 2 * e->cap_mv : 8;
        reg_move_t *mv = realloc(e->mv, cap * sizeof *mv);
        if (mv == NULL)
            return COLLAB_ERR_NO_MEM;
        e->mv = mv;
        e->cap_mv = cap;
    }
    memmove(&e->mv[i + 1], &e->mv[i], (e->nmv - i) * sizeof *e->mv);
    e->mv[i] = (reg_move_t){.off = off, .len = len, .dst = dst};
    e->nmv++;
    e->moved += len;
    self->nmoves++;
    return COLLAB_OK;
}

/* Records the bytes [off, off + len) of e as copied to dst, leaving the
   parts already followed as they are.  Returns the bytes recorded. */
static long long follow_entry(cl_statereg_t *self, reg_entry_t *e, size_t off, size_t len,
                              uintptr_t dst)
{
    long long got = 0;
    size_t o = off, end = off + len;
    while (o < end) {
        uint32_t i = move_at(e, o);
        if (i < e->nmv && e->mv[i].off <= o) {
            o = e->mv[i].off + e->mv[i].len; /* followed already: first copy wins */
            continue;
        }
        size_t stop = i < e->nmv && e->mv[i].off < end ? e->mv[i].off : end;
        int rc = move_insert(self, e, i, o, stop - o, dst + (o - off));
        if (rc != COLLAB_OK)
            return got > 0 ? got : rc;
        got += (long long)(stop - o);
        o = stop;
    }
    if (got > 0 && e->moved == e->bytes)
        cl_debug("start-up broadcast #%llu (%zu bytes): every byte was copied elsewhere by the "
                 "program (%u places); those are read and written from now on",
                 (unsigned long long)e->index, e->bytes, e->nmv);
    return got;
}

long long cl_statereg_follow(cl_statereg_t *self, const void *src, void *dst, size_t len)
{
    uintptr_t s = (uintptr_t)src, d = (uintptr_t)dst;
    if (self == NULL || ((src == NULL || dst == NULL) && len > 0) ||
        (len > 0 && (s > UINTPTR_MAX - (len - 1) || d > UINTPTR_MAX - (len - 1))))
        return COLLAB_ERR_ARG;
    long long total = 0;
    while (len > 0) {
        reg_entry_t *e = NULL; /* the latest buffer holding s */
        for (size_t i = self->n; i-- > 0;)
            if (self->v[i].bytes > 0 && s >= self->v[i].addr &&
                s - self->v[i].addr < self->v[i].bytes) {
                e = &self->v[i];
                break;
            }
        if (e == NULL)
            break;
        size_t off = s - e->addr;
        size_t step = e->bytes - off < len ? e->bytes - off : len;
        long long got = follow_entry(self, e, off, step, d);
        if (got < 0)
            return total > 0 ? total : got;
        total += got;
        s += step;
        d += step;
        len -= step;
    }
    return total;
}

/* ---------------------------------------------------------------------- */

int cl_stripe_plan(uint64_t total_bytes, int ndonors, uint64_t min_stripe, unsigned rotation,
                   cl_stripe_t out[CL_STRIPE_MAX])
{
    if (ndonors < 1 || min_stripe == 0 || out == NULL)
        return COLLAB_ERR_ARG;
    if (total_bytes == 0)
        return 0;
    uint64_t n = ndonors < CL_STRIPE_MAX ? (uint64_t)ndonors : CL_STRIPE_MAX;
    uint64_t base = total_bytes;
    for (; n > 1; n--) {
        base = total_bytes / n / CL_STRIPE_ALIGN * CL_STRIPE_ALIGN;
        if (base > 0 && base >= min_stripe)
            break;
    }
    if (n == 1)
        base = total_bytes;
    for (uint64_t k = 0; k < n; k++) {
        out[k].donor = (int)(((uint64_t)rotation + k) % (uint64_t)ndonors);
        out[k].offset = k * base;
        out[k].len = k + 1 < n ? base : total_bytes - (n - 1) * base;
    }
    return (int)n;
}
