/*  cl_p2p.c - point-to-point matching queues.

    Posted entries sit in an array kept in posting order (few are posted at
    once; removal shifts); unexpected messages sit in a singly linked FIFO
    with a tail pointer.  Both scans are linear, which is what MPI
    libraries do for these queues too: the common case is a short queue.
*/
#include "engine/cl_p2p.h"

#include "mpi_collab.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t msgs, bytes; /* limited messages queued now (bytes with overheads) */
    uint64_t dropped;   /* refused by the limits */
} sender_t;

struct cl_p2p {
    cl_p2p_posted_t *posted; /* posting order */
    size_t nposted, capposted;
    cl_p2p_msg_t *head, *tail; /* unexpected, arrival order */
    size_t nmsgs;
    size_t bytes;
    cl_p2p_limits_t limits;
    sender_t *senders; /* by world rank */
    size_t nsenders;
    size_t lim_msgs, lim_bytes; /* limited messages queued, in all */
};

#define COST(len) (CL_P2P_MSG_COST + (len))

cl_p2p_t *cl_p2p_new(void)
{
    return calloc(1, sizeof(cl_p2p_t));
}

void cl_p2p_msg_free(cl_p2p_msg_t *msg)
{
    if (msg == NULL)
        return;
    free(msg->data);
    free(msg);
}

void cl_p2p_destroy(cl_p2p_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    cl_p2p_t *self = *self_p;
    cl_p2p_msg_t *m = self->head;
    while (m != NULL) {
        cl_p2p_msg_t *next = m->next;
        cl_p2p_msg_free(m);
        m = next;
    }
    free(self->posted);
    free(self->senders);
    free(self);
    *self_p = NULL;
}

bool cl_p2p_matches(uint64_t comm, int src, int tag, uint64_t pcomm, int psrc, int ptag)
{
    return comm == pcomm && (psrc == COLLAB_ANY_SOURCE || psrc == src) &&
           (ptag == COLLAB_ANY_TAG || ptag == tag);
}

static void posted_remove_at(cl_p2p_t *self, size_t i)
{
    memmove(&self->posted[i], &self->posted[i + 1],
            (self->nposted - i - 1) * sizeof self->posted[0]);
    self->nposted--;
}

bool cl_p2p_match_posted(cl_p2p_t *self, uint64_t comm, int src, int tag, cl_p2p_posted_t *out)
{
    for (size_t i = 0; i < self->nposted; i++) {
        const cl_p2p_posted_t *e = &self->posted[i];
        if (cl_p2p_matches(comm, src, tag, e->comm, e->src, e->tag)) {
            *out = *e;
            posted_remove_at(self, i);
            return true;
        }
    }
    return false;
}

int cl_p2p_post(cl_p2p_t *self, const cl_p2p_posted_t *entry)
{
    if (self->nposted == self->capposted) {
        size_t cap = self->capposted > 0 ? self->capposted * 2 : 8;
        cl_p2p_posted_t *p = realloc(self->posted, cap * sizeof *p);
        if (p == NULL)
            return COLLAB_ERR_NO_MEM;
        self->posted = p;
        self->capposted = cap;
    }
    self->posted[self->nposted++] = *entry;
    return COLLAB_OK;
}

bool cl_p2p_cancel(cl_p2p_t *self, const void *req)
{
    for (size_t i = 0; i < self->nposted; i++)
        if (self->posted[i].req == req) {
            posted_remove_at(self, i);
            return true;
        }
    return false;
}

size_t cl_p2p_remove_posted_if(cl_p2p_t *self, bool (*pred)(void *ctx, const cl_p2p_posted_t *e),
                               void (*fn)(void *ctx, const cl_p2p_posted_t *e), void *ctx)
{
    size_t removed = 0, n = 0;
    /* Collect first, call fn after the array is consistent again, so fn
       may post or cancel. */
    cl_p2p_posted_t *gone = NULL;
    size_t ngone = 0;
    for (size_t i = 0; i < self->nposted; i++) {
        cl_p2p_posted_t e = self->posted[i];
        if (pred(ctx, &e)) {
            cl_p2p_posted_t *g = realloc(gone, (ngone + 1) * sizeof *g);
            if (g != NULL) {
                gone = g;
                gone[ngone++] = e;
                removed++;
                continue;
            }
        }
        self->posted[n++] = e;
    }
    self->nposted = n;
    for (size_t i = 0; i < ngone; i++)
        fn(ctx, &gone[i]);
    free(gone);
    return removed;
}

int cl_p2p_store(cl_p2p_t *self, uint64_t comm, int src, int tag, const void *data, size_t len)
{
    return cl_p2p_store_sync(self, comm, src, tag, data, len, 0, -1);
}

static sender_t *sender(cl_p2p_t *self, int from)
{
    if (from < 0)
        return NULL;
    if ((size_t)from >= self->nsenders) {
        size_t n = (size_t)from + 1 > 2 * self->nsenders ? (size_t)from + 1 : 2 * self->nsenders;
        sender_t *a = realloc(self->senders, n * sizeof *a);
        if (a == NULL)
            return NULL;
        memset(a + self->nsenders, 0, (n - self->nsenders) * sizeof *a);
        self->senders = a;
        self->nsenders = n;
    }
    return &self->senders[from];
}

static int store(cl_p2p_t *self, uint64_t comm, int src, int tag, const void *data, size_t len,
                 uint64_t sync, int from, sender_t *who)
{
    cl_p2p_msg_t *m = calloc(1, sizeof *m);
    if (m == NULL)
        return COLLAB_ERR_NO_MEM;
    if (len > 0) {
        m->data = malloc(len);
        if (m->data == NULL) {
            free(m);
            return COLLAB_ERR_NO_MEM;
        }
        memcpy(m->data, data, len);
    }
    m->comm = comm;
    m->src = src;
    m->tag = tag;
    m->len = len;
    m->sync = sync;
    m->from = from;
    if (who != NULL) {
        m->limited = true;
        who->msgs++;
        who->bytes += COST(len);
        self->lim_msgs++;
        self->lim_bytes += COST(len);
    }
    if (self->tail != NULL)
        self->tail->next = m;
    else
        self->head = m;
    self->tail = m;
    self->nmsgs++;
    self->bytes += len;
    return COLLAB_OK;
}

int cl_p2p_store_sync(cl_p2p_t *self, uint64_t comm, int src, int tag, const void *data, size_t len,
                      uint64_t sync, int from)
{
    return store(self, comm, src, tag, data, len, sync, from, NULL);
}

void cl_p2p_set_limits(cl_p2p_t *self, const cl_p2p_limits_t *limits)
{
    self->limits = *limits;
}

int cl_p2p_store_from(cl_p2p_t *self, uint64_t comm, int src, int tag, const void *data, size_t len,
                      uint64_t sync, int from)
{
    sender_t *who = sender(self, from);
    if (who == NULL)
        return COLLAB_ERR_NO_MEM;
    const cl_p2p_limits_t *l = &self->limits;
    size_t cost = len > SIZE_MAX - CL_P2P_MSG_COST ? SIZE_MAX : COST(len);
    int over = 0;
    /* A message larger than a byte bound is kept when nothing is held
       against that bound: every legal message can wait. */
    if ((l->peer_msgs > 0 && who->msgs >= l->peer_msgs) ||
        (l->peer_bytes > 0 && who->msgs > 0 &&
         (cost > l->peer_bytes || who->bytes > l->peer_bytes - cost)))
        over = CL_P2P_OVER_PEER;
    else if ((l->total_msgs > 0 && self->lim_msgs >= l->total_msgs) ||
             (l->total_bytes > 0 && self->lim_msgs > 0 &&
              (cost > l->total_bytes || self->lim_bytes > l->total_bytes - cost)))
        over = CL_P2P_OVER_TOTAL;
    if (over != 0) {
        who->dropped++;
        return over;
    }
    return store(self, comm, src, tag, data, len, sync, from, who);
}

int cl_p2p_store_granted(cl_p2p_t *self, uint64_t comm, int src, int tag, const void *data,
                         size_t len, uint64_t sync, int from)
{
    sender_t *who = sender(self, from);
    if (who == NULL)
        return COLLAB_ERR_NO_MEM;
    return store(self, comm, src, tag, data, len, sync, from, who);
}

size_t cl_p2p_posted(const cl_p2p_t *self)
{
    return self->nposted;
}

uint64_t cl_p2p_dropped(const cl_p2p_t *self, int from)
{
    return from >= 0 && (size_t)from < self->nsenders ? self->senders[from].dropped : 0;
}

size_t cl_p2p_queued_from(const cl_p2p_t *self, int from, size_t *bytes)
{
    if (from < 0) {
        if (bytes != NULL)
            *bytes = self->lim_bytes;
        return self->lim_msgs;
    }
    const sender_t *w = (size_t)from < self->nsenders ? &self->senders[from] : NULL;
    if (bytes != NULL)
        *bytes = w != NULL ? w->bytes : 0;
    return w != NULL ? w->msgs : 0;
}

static void unlink_msg(cl_p2p_t *self, cl_p2p_msg_t *prev, cl_p2p_msg_t *m)
{
    if (prev != NULL)
        prev->next = m->next;
    else
        self->head = m->next;
    if (self->tail == m)
        self->tail = prev;
    m->next = NULL;
    self->nmsgs--;
    self->bytes -= m->len;
    if (m->limited) {
        sender_t *w = &self->senders[m->from]; /* exists: it was counted */
        w->msgs--;
        w->bytes -= COST(m->len);
        self->lim_msgs--;
        self->lim_bytes -= COST(m->len);
        m->limited = false;
    }
}

cl_p2p_msg_t *cl_p2p_find(cl_p2p_t *self, uint64_t comm, int src, int tag, bool take)
{
    cl_p2p_msg_t *prev = NULL;
    for (cl_p2p_msg_t *m = self->head; m != NULL; prev = m, m = m->next) {
        if (cl_p2p_matches(m->comm, m->src, m->tag, comm, src, tag)) {
            if (take)
                unlink_msg(self, prev, m);
            return m;
        }
    }
    return NULL;
}

bool cl_p2p_withdraw(cl_p2p_t *self, uint64_t comm, int from, uint64_t sync)
{
    cl_p2p_msg_t *prev = NULL;
    for (cl_p2p_msg_t *m = self->head; m != NULL; prev = m, m = m->next) {
        if (m->sync == sync && m->from == from && m->comm == comm) {
            unlink_msg(self, prev, m);
            cl_p2p_msg_free(m);
            return true;
        }
    }
    return false;
}

void cl_p2p_drop_comm(cl_p2p_t *self, uint64_t comm)
{
    cl_p2p_msg_t *prev = NULL, *m = self->head;
    while (m != NULL) {
        cl_p2p_msg_t *next = m->next;
        if (m->comm == comm) {
            unlink_msg(self, prev, m);
            cl_p2p_msg_free(m);
        } else {
            prev = m;
        }
        m = next;
    }
}

size_t cl_p2p_unexpected(const cl_p2p_t *self, size_t *bytes)
{
    if (bytes != NULL)
        *bytes = self->bytes;
    return self->nmsgs;
}
