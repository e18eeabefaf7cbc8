/*  test_peers.c - identity files, ports and addresses for the peers of the
    multi-process engine tests, as collab-run prepares them.
*/
#include "test_peers.h"
#include "util/cl_identity.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Binds a socket to 127.0.0.1:port (0: the kernel's choice) and closes
   it.  Returns the port it got, or -1. */
static int s_try_port(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int got = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        got = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return got;
}

void test_peers_ephemeral(int *lo, int *hi)
{
    *lo = 32768;
    *hi = 60999;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f != NULL) {
        if (fscanf(f, "%d %d", lo, hi) != 2) {
            *lo = 32768;
            *hi = 60999;
        }
        fclose(f);
    }
}

static bool s_taken(const int *taken, int ntaken, int port)
{
    for (int i = 0; i < ntaken; i++)
        if (taken[i] == port)
            return true;
    return false;
}

/* A loopback TCP port that was free a moment ago, outside the kernel's
   ephemeral range (ip_local_port_range), as collab-run picks its peers'
   ports (cr_swarm_pick_port).  A port in that range may be handed to an
   outbound connection before the peer binds it: a peer that dials
   another's address before that one listens may even connect to itself
   there (TCP's simultaneous open), and the owner's bind then fails
   (EADDRINUSE).  Never one of the `ntaken` ports in `taken`: the kernel
   may hand out the same port twice in a row once the first socket is
   closed, and two peers of one test were once given one port
   (swarm_fast_group3_kill in CI: the second could not listen).  Falls
   back to the kernel's choice on a crowded machine. */
static int s_free_port(const int *taken, int ntaken)
{
    int lo, hi;
    test_peers_ephemeral(&lo, &hi);
    for (int t = 0; t < 256; t++) {
        uint32_t r;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
            r = (uint32_t)rand();
        int cand = 10000 + (int)(r % 55536u); /* 10000 .. 65535 */
        if ((cand >= lo && cand <= hi) || s_taken(taken, ntaken, cand))
            continue;
        if (s_try_port(cand) == cand)
            return cand;
    }
    for (int t = 0; t < 64; t++) {
        int port = s_try_port(0);
        if (port > 0 && !s_taken(taken, ntaken, port))
            return port;
    }
    perror("free_port");
    exit(3);
}

void test_peers_prepare(const char *tag, int n, char *dir, size_t dirlen, char (*addrs)[256],
                        int *ports)
{
    snprintf(dir, dirlen, "/tmp/collab-%s-XXXXXX", tag);
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        exit(3);
    }
    for (int i = 0; i < n; i++) {
        char path[512], err[256];
        snprintf(path, sizeof path, "%s/id%d", dir, i);
        cl_identity_t *id = cl_identity_new(path, err, sizeof err);
        if (id == NULL) {
            fprintf(stderr, "identity: %s\n", err);
            exit(3);
        }
        ports[i] = s_free_port(ports, i);
        snprintf(addrs[i], 256, "/ip4/127.0.0.1/tcp/%d/p2p/%s", ports[i], cl_identity_peer_id(id));
        cl_identity_destroy(&id);
    }
}

void test_peers_env(const char *dir, int i, int port, int n, const char *run)
{
    char v[512];
    snprintf(v, sizeof v, "%s/id%d", dir, i);
    setenv("COLLAB_IDENTITY", v, 1);
    snprintf(v, sizeof v, "/ip4/127.0.0.1/tcp/%d", port);
    setenv("COLLAB_LISTEN", v, 1);
    snprintf(v, sizeof v, "%d", i);
    setenv("COLLAB_RANK", v, 1);
    snprintf(v, sizeof v, "%d", n);
    setenv("COLLAB_WORLD_SIZE", v, 1);
    setenv("COLLAB_RUN_ID", run, 1);
}

void test_peers_initial(char (*addrs)[256], int n, unsigned mask)
{
    char v[4096] = "";
    for (int j = 0; j < n; j++)
        if (mask & (1u << j)) {
            strncat(v, addrs[j], sizeof v - strlen(v) - 2);
            strcat(v, " ");
        }
    if (v[0] != '\0')
        setenv("COLLAB_INITIAL_PEERS", v, 1);
    else
        unsetenv("COLLAB_INITIAL_PEERS");
}

long test_peers_rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    long kb = -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = strtol(line + 6, NULL, 10);
    fclose(f);
    return kb;
}

bool test_peers_wait_file(const char *path, double timeout)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (access(path, F_OK) == 0)
            return true;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) * 1e-9 >= timeout)
            return false;
        struct timespec nap = {0, 10 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
}
