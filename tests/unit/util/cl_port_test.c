/*  cl_port_test.c - selftest of cl_port: the ephemeral range read from
    good and bad files, candidates never inside it and covering both
    stretches around it, binding refusing a port that is held, and
    picking (cl_port_pick): never a port the caller says is taken, the
    kernel's choice when no candidate is left, none when all are taken. */
#include "util/cl_port.h"
#include "util/cl_selftest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Writes text to a fresh file under /tmp and reads the range from it. */
static void s_range_of(const char *text, int *lo, int *hi)
{
    char path[] = "/tmp/cl_port_test-XXXXXX";
    int fd = mkstemp(path);
    CL_CHECK(fd >= 0);
    if (fd < 0)
        return;
    CL_CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    cl_port_ephemeral(path, lo, hi);
    unlink(path);
}

static void s_check_ranges(void)
{
    int lo, hi;
    s_range_of("40000\t50000\n", &lo, &hi);
    CL_CHECK(lo == 40000 && hi == 50000);
    /* Anything else gives Linux's default. */
    const char *bad[] = {"", "junk", "50000 40000", "0 100", "1024 70000", "-5 10", "12"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        s_range_of(bad[i], &lo, &hi);
        CL_CHECK(lo == 32768 && hi == 60999);
    }
    cl_port_ephemeral("/nonexistent/ip_local_port_range", &lo, &hi);
    CL_CHECK(lo == 32768 && hi == 60999);
    /* This machine's: whatever it is, a valid range. */
    cl_port_ephemeral(NULL, &lo, &hi);
    CL_CHECK(lo >= 1 && lo <= hi && hi <= 65535);
}

/* r = 0 .. want - 1 map one to one onto [floor, 65535] less the range
   (want ports in all), both stretches and their ends are reached, and r
   = want starts over. */
static void s_check_candidates(int floor, int elo, int ehi, int want)
{
    static bool seen[65536];
    memset(seen, 0, sizeof seen);
    int first = floor < 1024 ? 1024 : floor, lowest = 65536, highest = -1;
    bool below = false, above = false;
    for (int r = 0; r < want; r++) {
        int p = cl_port_candidate((uint32_t)r, floor, elo, ehi);
        if (p < first || p > 65535 || (p >= elo && p <= ehi) || seen[p]) {
            fprintf(stderr, "candidate %d for r=%d, floor %d, range %d-%d\n", p, r, floor, elo,
                    ehi);
            CL_CHECK(false);
            return;
        }
        seen[p] = true;
        lowest = p < lowest ? p : lowest;
        highest = p > highest ? p : highest;
        below |= p < elo;
        above |= p > ehi;
    }
    CL_CHECK(lowest == (elo > first ? first : ehi + 1 > first ? ehi + 1 : first));
    CL_CHECK(highest == (ehi < 65535 ? 65535 : elo - 1));
    CL_CHECK(below == (elo > first));
    CL_CHECK(above == (ehi < 65535));
    CL_CHECK(cl_port_candidate((uint32_t)want, floor, elo, ehi) ==
             cl_port_candidate(0, floor, elo, ehi));
    CL_CHECK(cl_port_candidate(UINT32_MAX, floor, elo, ehi) >= first);
}

/* For cl_port_pick: ports [lo, hi] of arg are taken. */
static bool s_taken_range(void *arg, int port)
{
    const int *r = arg;
    return port >= r[0] && port <= r[1];
}

static bool s_taken_outside(void *arg, int port)
{
    return !s_taken_range(arg, port);
}

static bool s_taken_all(void *arg, int port)
{
    (void)arg;
    (void)port;
    return true;
}

/* The port fd is bound to on 127.0.0.1, or -1. */
static int s_port_of(int fd)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    if (fd < 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    return ntohs(a.sin_port);
}

/* Picking: random candidates outside the range and not taken, each bound;
   the kernel's choice when none is left; -1 when every port is taken. */
static void s_check_pick(void)
{
    int lo, hi, port = -1;
    cl_port_ephemeral(NULL, &lo, &hi);
    int fd = cl_port_pick(20000, lo, hi, 100, NULL, NULL, &port);
    CL_CHECK(fd >= 0 && s_port_of(fd) == port && port >= 20000 && (port < lo || port > hi));
    if (fd >= 0)
        close(fd);
    /* Six candidates, five of them taken: the sixth (if nobody holds it). */
    int five[2] = {65530, 65534};
    fd = cl_port_pick(65530, 32768, 60999, 200, s_taken_range, five, &port);
    CL_CHECK(fd >= 0 && s_port_of(fd) == port && !s_taken_range(five, port));
    CL_CHECK(port < 65530 || port == 65535);
    /* Held by someone, and the rest taken: the kernel's choice. */
    int held_port = -1, held = cl_port_bind(65535, &held_port);
    int fd2 = cl_port_pick(65530, 32768, 60999, 50, s_taken_range, five, &port);
    CL_CHECK(fd2 >= 0 && s_port_of(fd2) == port && port != 65535 && !s_taken_range(five, port));
    if (fd2 >= 0)
        close(fd2);
    if (held >= 0)
        close(held);
    if (fd >= 0)
        close(fd);
    /* Every candidate taken: the kernel's choice, which the caller has not
       handed out (ports outside this machine's range count as taken). */
    int range[2] = {lo, hi};
    fd = cl_port_pick(20000, lo, hi, 50, s_taken_outside, range, &port);
    CL_CHECK(fd >= 0 && s_port_of(fd) == port && port >= lo && port <= hi);
    if (fd >= 0)
        close(fd);
    /* Every port taken: none. */
    port = -7;
    errno = 0;
    CL_CHECK(cl_port_pick(20000, lo, hi, 50, s_taken_all, NULL, &port) == -1);
    CL_CHECK(port == -7 && errno == EADDRINUSE);
}

int main(void)
{
    s_check_ranges();
    s_check_candidates(20000, 32768, 60999, (32768 - 20000) + (65536 - 61000));
    s_check_candidates(10000, 32768, 60999, (32768 - 10000) + (65536 - 61000));
    s_check_candidates(20000, 10000, 30000, 65536 - 30001); /* the range starts below floor */
    s_check_candidates(20000, 1024, 5000, 65536 - 20000);   /* ... and ends below it */
    s_check_candidates(20000, 25000, 30000, (25000 - 20000) + (65536 - 30001));
    s_check_candidates(20000, 40000, 65535, 40000 - 20000); /* ... and reaches the top */
    s_check_candidates(100, 32768, 60999, (32768 - 1024) + (65536 - 61000)); /* floor raised */
    CL_CHECK(cl_port_candidate(7, 20000, 1024, 65535) == -1);                /* nothing left */
    CL_CHECK(cl_port_candidate(7, 70000, 32768, 60999) == -1);

    /* Binding: the kernel's choice, then that port again while it is held
       (refused), and ports that do not exist. */
    int got = -1;
    int fd = cl_port_bind(0, &got);
    CL_CHECK(fd >= 0 && got > 0 && got <= 65535);
    int again = -1, fd2 = cl_port_bind(got, &again);
    CL_CHECK(fd2 < 0);
    if (fd2 >= 0)
        close(fd2);
    if (fd >= 0)
        close(fd);
    CL_CHECK(cl_port_bind(-1, &again) < 0);
    CL_CHECK(cl_port_bind(65536, &again) < 0);
    s_check_pick();
    return cl_selftest_end("cl_port");
}
