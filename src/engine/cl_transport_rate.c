/*  cl_transport_rate.c - the transport's view of this peer's upload
    (cl_transport_upload): the kernel's figures for the TCP connection of
    every outbound link (cl_tcpinfo.h).

    libzmq names a connection's socket in the monitor's CONNECTED event
    (tp_measure_link); the socket belongs to libzmq's I/O thread, which
    may close it and reuse the number at any time, so every read checks
    the socket's SO_COOKIE against the one seen at CONNECTED and forgets
    the descriptor at the first mismatch.  Only reads happen here
    (getsockopt), never anything that changes the socket.  Links to a
    loopback address are not measured: every byte on them stays in this
    host.
*/
#include "engine/cl_transport_int.h"

#include "engine/cl_tcpinfo.h"

#include <czmq.h>

/* A receiver's window that held sending back for more than this share
   of the time since the last sample makes that connection's backlog
   the receiver's doing, not the link's. */
#define RWND_SHARE 0.1

/* The upload is the limit only while at least this many links have
   bytes waiting on one of their connections: one alone may be held back
   by its path (a slower member's download that several senders share),
   and its rate would be that path's, while this peer's other links had
   nothing to send.  Two or more that wait at once share what this peer's
   link gives. */
#define BUSY_MIN 2

void tp_measure_link(out_link_t *l, int fd)
{
    l->fd = -1;
    l->bfd = -1;
    cl_tcpinfo_t ti;
    if (cl_tcpinfo_read(fd, &ti) != 0)
        return;
    l->bfd = fd; /* for striping (cl_transport_stripe.c), loopback too */
    l->bcookie = ti.cookie;
    if (cl_tcpinfo_loopback(fd))
        return;
    l->fd = fd;
    l->cookie = ti.cookie;
    l->acked = ti.acked;
    l->sent = ti.sent;
    l->rwnd_us = ti.rwnd_us;
}

/* Takes connection l's figures into the totals; returns whether it has
   bytes waiting that its receiver's window did not hold back (dt_us: the
   time since the last sample). */
static bool sample(cl_transport_t *self, out_link_t *l, double dt_us)
{
    cl_tcpinfo_t ti;
    if (l == NULL || l->fd < 0 || l->state == OL_DEAD)
        return false;
    if (cl_tcpinfo_read(l->fd, &ti) != 0 || ti.cookie != l->cookie) {
        l->fd = -1; /* closed under us, perhaps reused: no longer this link's */
        return false;
    }
    if (ti.acked > l->acked)
        self->up_acked += ti.acked - l->acked;
    if (ti.sent > l->sent)
        self->up_sent += ti.sent - l->sent;
    uint64_t rwnd = ti.rwnd_us > l->rwnd_us ? ti.rwnd_us - l->rwnd_us : 0;
    l->acked = ti.acked;
    l->sent = ti.sent;
    l->rwnd_us = ti.rwnd_us;
    return ti.waiting && dt_us > 0 && (double)rwnd < RWND_SHARE * dt_us;
}

void cl_transport_upload(cl_transport_t *self, double now, uint64_t *acked, uint64_t *sent,
                         bool *backlogged)
{
    double dt_us = self->up_last > 0 ? (now - self->up_last) * 1e6 : 0;
    self->up_last = now;
    int busy = 0;
    for (out_link_t *link = zhashx_first(self->out_by_key); link != NULL;
         link = zhashx_next(self->out_by_key)) {
        /* A link counts once however many of its connections wait: its
           stripes all lead to the same peer, whose path may hold them
           back together. */
        bool waits = sample(self, link, dt_us);
        for (int i = 0; i < CL_TP_STRIPES_MAX - 1; i++)
            waits = sample(self, link->stripe[i], dt_us) || waits;
        busy += waits;
    }
    *acked = self->up_acked;
    *sent = self->up_sent;
    *backlogged = busy >= BUSY_MIN;
}
