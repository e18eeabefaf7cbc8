/*  cl_transport_limits.c - whether one more outbound link fits this
    process's limits of ZeroMQ sockets and file descriptors
    (docs/security-bounds.md §5, "Sockets and descriptors").  CZMQ aborts the
    process when a socket cannot be created and libzmq when a mailbox
    cannot, so the transport asks before it opens a link.
*/
#include "engine/cl_transport_int.h"

#include "util/cl_log.h"
#include "util/cl_text.h"

#include <czmq.h>
#include <dirent.h>
#include <stdio.h>
#include <sys/resource.h>

/* File descriptors an outbound link takes: its DEALER's and its event
   monitor's two mailboxes, and the TCP connection; ZeroMQ sockets: the
   DEALER, the monitor's PAIR inside libzmq and ours.  The reserves stay
   free for the program, the engine and libzmq: CZMQ aborts the process
   when a socket cannot be created, libzmq when a mailbox cannot
   (docs/security-bounds.md §5). */
#define LINK_FDS 4
#define LINK_FD_RESERVE 32
#define LINK_SOCKETS 3
#define LINK_SOCKET_RESERVE 64

/* Open file descriptors of this process, or -1 when they cannot be
   counted (the count itself needs one). */
static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    long n = 0;
    struct dirent *x;
    while ((x = readdir(d)) != NULL)
        n += x->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own */
}

/* True when one more link leaves the reserves of descriptors (under
   RLIMIT_NOFILE) and of ZeroMQ sockets free; otherwise logs why (once a
   minute) and returns false. */
bool tp_limits_allow_link(cl_transport_t *self, const char *address)
{
    char why[160] = "";
    size_t links = zhashx_size(self->out_by_key) + zlist_size(self->dead);
    int max_sockets = zmq_ctx_get(zsys_init(), ZMQ_MAX_SOCKETS);
    struct rlimit rl;
    if (max_sockets > 0 && (links + 1) * LINK_SOCKETS + LINK_SOCKET_RESERVE > (size_t)max_sockets) {
        snprintf(why, sizeof why,
                 "%zu links reach this process's limit of %d ZeroMQ sockets (ZSYS_MAX_SOCKETS)",
                 links, max_sockets);
    } else if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        long open = open_fds();
        if (open < 0 || (rlim_t)open + LINK_FDS + LINK_FD_RESERVE > rl.rlim_cur)
            snprintf(why, sizeof why,
                     "this process has %ld of its %llu file descriptors open "
                     "(ulimit -n)",
                     open < 0 ? (long)rl.rlim_cur : open, (unsigned long long)rl.rlim_cur);
    }
    if (why[0] == '\0')
        return true;
    double now = tp_now();
    if (self->fd_warned == 0 || now - self->fd_warned >= 60.0) {
        self->fd_warned = now;
        char q[128];
        cl_warn("cannot open a link to %s: %s; the peer counts as unreachable until links close "
                "or the limit is raised",
                cl_text_quote(address, 100, q, sizeof q), why);
    }
    return false;
}
