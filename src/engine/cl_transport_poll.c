/*  cl_transport_poll.c - one round of the transport: every socket and
    descriptor polled at once (one poll(), a ZeroMQ socket asked for its
    events only when it may have some), then the events dispatched to the
    handshake and message paths, the shared-memory rings drained, dead
    links reaped.
*/
#include "engine/cl_transport_int.h"

#include "util/cl_log.h"

#include <czmq.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>

static int grow_items(cl_transport_t *self, size_t n)
{
    if (n <= self->capitems)
        return 0;
    size_t cap = self->capitems > 0 ? self->capitems : 16;
    while (cap < n)
        cap *= 2;
    zmq_pollitem_t *it = realloc(self->items, cap * sizeof *it);
    if (it == NULL)
        return -1;
    self->items = it;
    poll_ref_t *r = realloc(self->refs, cap * sizeof *r);
    if (r == NULL)
        return -1;
    self->refs = r;
    struct pollfd *p = realloc(self->pfds, cap * sizeof *p);
    if (p == NULL)
        return -1;
    self->pfds = p;
    bool *f = realloc(self->fired, cap * sizeof *f);
    if (f == NULL)
        return -1;
    self->fired = f;
    self->capitems = cap;
    return 0;
}

/* The ZeroMQ sockets' events (ZMQ_EVENTS, which also takes in the
   socket's pending commands), into items[i].revents; the number ready. */
static int s_zmq_events(zmq_pollitem_t *items, size_t n, const bool *only)
{
    int ready = 0;
    for (size_t i = 0; i < n; i++) {
        if (items[i].socket == NULL || (only != NULL && !only[i]))
            continue;
        int ev = 0;
        size_t len = sizeof ev;
        if (zmq_getsockopt(items[i].socket, ZMQ_EVENTS, &ev, &len) != 0)
            ev = errno == ETERM ? -1 : 0;
        if (ev < 0)
            return -1;
        items[i].revents = (short)(ev & items[i].events);
        ready += items[i].revents != 0;
    }
    return ready;
}

/* zmq_poll without its cost on the paths that never touch ZeroMQ.
   zmq_poll asks every ZeroMQ socket for its events before and after it
   sleeps, and each question is two system calls (libzmq's check of the
   process id and a poll of the socket's mailbox), so one round with the
   engine's five or more sockets took some twenty system calls even when
   only a raw descriptor (a request, a shared-memory ring) was ready.
   Here one poll() covers every descriptor, a socket's mailbox descriptor
   included (readable whenever commands reached the socket since it last
   took them in), and a socket is asked for its events only when that
   descriptor fired, or when this peer sent or read on a ZeroMQ socket
   since the last round (a send or a read may have taken in the commands
   that announce a message, and a handler may have left messages behind:
   libzmq's descriptor would not fire for those).  As a safeguard against
   an announcement this rule would miss, a round never sleeps longer than
   TP_SWEEP_MS, and a round that slept its whole time asks every socket
   the next time (a debug line says when that found anything).  Returns
   the number of items ready, or -1 when the context is terminated. */
#define TP_SWEEP_MS 50

static int s_poll(cl_transport_t *self, zmq_pollitem_t *items, size_t n, long timeout_ms)
{
    int ready = 0;
    for (size_t i = 0; i < n; i++)
        items[i].revents = 0;
    if (self->zmq_touched || self->zmq_idle) {
        if ((ready = s_zmq_events(items, n, NULL)) < 0) {
            errno = ETERM;
            return -1;
        }
        if (ready > 0 && self->zmq_idle && !self->zmq_touched)
            cl_debug("a ZeroMQ socket had messages that its descriptor did not announce");
        self->zmq_touched = false;
        self->zmq_idle = false;
        if (ready > 0)
            timeout_ms = 0;
    }
    if (timeout_ms < 0 || timeout_ms > TP_SWEEP_MS)
        timeout_ms = TP_SWEEP_MS;
    for (size_t i = 0; i < n; i++) {
        struct pollfd *p = &self->pfds[i];
        p->events = 0;
        p->revents = 0;
        if (items[i].socket != NULL) {
            zmq_fd_t fd = -1;
            size_t len = sizeof fd;
            if (zmq_getsockopt(items[i].socket, ZMQ_FD, &fd, &len) != 0) {
                if (errno == ETERM)
                    return -1;
                fd = -1;
            }
            p->fd = fd;
            p->events = POLLIN;
        } else {
            p->fd = items[i].fd;
            p->events = (short)((items[i].events & ZMQ_POLLIN ? POLLIN : 0) |
                                (items[i].events & ZMQ_POLLOUT ? POLLOUT : 0) |
                                (items[i].events & ZMQ_POLLPRI ? POLLPRI : 0));
        }
    }
    int timeout = timeout_ms < 0 ? -1 : timeout_ms > INT_MAX ? INT_MAX : (int)timeout_ms;
    int rc = poll(self->pfds, (nfds_t)n, timeout);
    if (rc < 0)
        return ready; /* EINTR: what the events said, if anything */
    self->zmq_idle = rc == 0 && timeout > 0;
    bool *fired = self->fired;
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        short re = self->pfds[i].revents;
        fired[i] = false;
        if (items[i].socket != NULL) {
            /* The mailbox descriptor says only "look": ask for the events,
               unless this round did already. */
            fired[i] = re != 0 && items[i].revents == 0;
            any = any || fired[i];
        } else if (re != 0) {
            if (items[i].revents == 0)
                ready++;
            items[i].revents = (short)((re & POLLIN ? ZMQ_POLLIN : 0) |
                                       (re & POLLOUT ? ZMQ_POLLOUT : 0) |
                                       (re & POLLPRI ? ZMQ_POLLPRI : 0) |
                                       (re & ~(POLLIN | POLLOUT | POLLPRI) ? ZMQ_POLLERR : 0));
        }
    }
    if (any) {
        int more = s_zmq_events(items, n, fired);
        if (more < 0) {
            errno = ETERM;
            return -1;
        }
        ready += more;
    }
    return ready;
}

int cl_transport_poll(cl_transport_t *self, zmq_pollitem_t *extra, int nextra, long timeout_ms,
                      cl_tp_handler_fn *fn, void *ctx)
{
    if (self->stripes_auto)
        tp_stripe_probe(self, tp_now());
    size_t need = (size_t)nextra + 2 + 2 * zhashx_size(self->out_by_key) * (size_t)self->stripes +
                  cl_shm_nfds(self->shm);
    if (grow_items(self, need) != 0) {
        cl_error("out of memory polling sockets");
        return -1;
    }
    size_t n = 0;
    for (int i = 0; i < nextra; i++)
        self->items[n++] = extra[i];
    if (self->router != NULL) {
        self->items[n] = (zmq_pollitem_t){zsock_resolve(self->router), 0, ZMQ_POLLIN, 0};
        self->refs[n++] = (poll_ref_t){REF_ROUTER, NULL};
    }
    if (self->zap != NULL) {
        self->items[n] = (zmq_pollitem_t){zsock_resolve(self->zap), 0, ZMQ_POLLIN, 0};
        self->refs[n++] = (poll_ref_t){REF_ZAP, NULL};
    }
    for (out_link_t *l = zhashx_first(self->out_by_key); l != NULL;
         l = zhashx_next(self->out_by_key)) {
        if (l->dealer == NULL)
            continue; /* a client's queue (cl_transport_expect_client) */
        for (int c = 0; c < self->stripes; c++) {
            out_link_t *s = c == 0 ? l : l->stripe[c - 1];
            if (s == NULL)
                continue;
            self->items[n] = (zmq_pollitem_t){zsock_resolve(s->dealer), 0, ZMQ_POLLIN, 0};
            self->refs[n++] = (poll_ref_t){REF_DEALER, s};
            self->items[n] = (zmq_pollitem_t){zsock_resolve(s->monitor), 0, ZMQ_POLLIN, 0};
            self->refs[n++] = (poll_ref_t){REF_MONITOR, s};
        }
    }
    bool shm_busy = false;
    size_t shm_at = n;
    n += cl_shm_poll_items(self->shm, self->items + n, self->capitems - n, &shm_busy);
    if (shm_busy)
        timeout_ms = 0; /* a ring holds messages already */
    self->poll_fn = fn;
    self->poll_ctx = ctx;
    int rc = s_poll(self, self->items, n, timeout_ms);
    if (rc < 0) {
        if (errno == ETERM)
            return -1;
        rc = 0; /* EINTR: nothing ready */
        for (size_t i = 0; i < n; i++)
            self->items[i].revents = 0;
    }
    int ready = 0;
    for (int i = 0; i < nextra; i++) {
        extra[i].revents = self->items[i].revents;
        if (extra[i].revents != 0)
            ready++;
    }
    for (size_t i = (size_t)nextra; i < shm_at && rc > 0; i++) {
        if ((self->items[i].revents & ZMQ_POLLIN) == 0)
            continue;
        poll_ref_t *r = &self->refs[i];
        self->zmq_touched = true; /* what a handler read, and what it left behind */
        switch (r->kind) {
        case REF_ROUTER:
            tp_on_router(self, fn, ctx);
            break;
        case REF_ZAP:
            tp_on_zap(self);
            break;
        case REF_DEALER:
            if (r->link->state != OL_DEAD)
                tp_on_dealer(self, r->link, fn, ctx);
            break;
        case REF_MONITOR:
            tp_on_monitor(self, r->link, fn, ctx);
            break;
        }
    }
    /* After the sockets: their messages drained each sender's ring before
       they were handed on. */
    cl_shm_after_poll(self->shm, self->items + shm_at, n - shm_at);
    self->poll_fn = NULL;
    self->poll_ctx = NULL;
    /* Reap links killed during dispatch. */
    out_link_t *l;
    while ((l = zlist_pop(self->dead)) != NULL) {
        void *item = l;
        tp_out_link_free(&item);
    }
    tp_sweep(self, tp_now());
    return ready;
}
