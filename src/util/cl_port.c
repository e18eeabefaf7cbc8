/*  cl_port.c - loopback ports for local peers (cl_port.h). */
#include "cl_port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#define CL_PORT_EPH_LO 32768 /* Linux's defaults */
#define CL_PORT_EPH_HI 60999

void cl_port_ephemeral(const char *path, int *lo, int *hi)
{
    *lo = CL_PORT_EPH_LO;
    *hi = CL_PORT_EPH_HI;
    FILE *f = fopen(path != NULL ? path : "/proc/sys/net/ipv4/ip_local_port_range", "re");
    if (f == NULL)
        return;
    int a, b;
    if (fscanf(f, "%d %d", &a, &b) == 2 && a >= 1 && a <= b && b <= 65535) {
        *lo = a;
        *hi = b;
    }
    fclose(f);
}

int cl_port_candidate(uint32_t r, int floor, int eph_lo, int eph_hi)
{
    if (floor < 1024)
        floor = 1024;
    if (floor > 65535)
        return -1;
    /* Two stretches: [floor, eph_lo - 1] and [max(eph_hi + 1, floor), 65535]. */
    int below = eph_lo > floor ? eph_lo - floor : 0;
    int hi_start = eph_hi + 1 > floor ? eph_hi + 1 : floor;
    int above = hi_start <= 65535 ? 65536 - hi_start : 0;
    if (eph_lo > eph_hi) { /* no range: one stretch */
        below = 0;
        hi_start = floor;
        above = 65536 - floor;
    }
    int total = below + above;
    if (total <= 0)
        return -1;
    int k = (int)(r % (uint32_t)total);
    return k < below ? floor + k : hi_start + (k - below);
}

int cl_port_bind(int port, int *bound)
{
    if (port < 0 || port > 65535)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    socklen_t alen = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
        close(fd);
        return -1;
    }
    *bound = ntohs(a.sin_port);
    return fd;
}

int cl_port_pick(int floor, int eph_lo, int eph_hi, int tries, cl_port_taken_fn taken, void *arg,
                 int *port)
{
    int bound;
    for (int t = 0; t < tries; t++) {
        uint32_t r;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
            r = (uint32_t)rand();
        int cand = cl_port_candidate(r, floor, eph_lo, eph_hi);
        if (cand < 0)
            break;
        if (taken != NULL && taken(arg, cand))
            continue;
        int fd = cl_port_bind(cand, &bound);
        if (fd >= 0) {
            *port = bound;
            return fd;
        }
    }
    /* Crowded machine: let the kernel choose. */
    for (int t = 0; t < CL_PORT_KERNEL_TRIES; t++) {
        int fd = cl_port_bind(0, &bound);
        if (fd < 0)
            return -1;
        if (taken == NULL || !taken(arg, bound)) {
            *port = bound;
            return fd;
        }
        close(fd);
    }
    errno = EADDRINUSE;
    return -1;
}
