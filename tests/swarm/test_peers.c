/*  test_peers.c - identity files, ports and addresses for the peers of the
    multi-process engine tests, as collab-run prepares them.
*/
#include "test_peers.h"
#include "util/cl_identity.h"
#include "util/cl_port.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Binds a socket to 127.0.0.1:port (0: the kernel's choice) and closes
   it.  Returns the port it got, or -1. */
typedef struct {
    const int *ports;
    int n;
} taken_t;

static bool s_taken(void *arg, int port)
{
    const taken_t *t = arg;
    for (int i = 0; i < t->n; i++)
        if (t->ports[i] == port)
            return true;
    return false;
}

/* A loopback TCP port that was free a moment ago, outside the kernel's
   ephemeral range, as collab-run picks its peers' ports (cl_port.h says
   why).  Never one of the `ntaken` ports in `taken`: the kernel may hand
   out the same port twice in a row once the first socket is closed, and
   two peers of one test were once given one port (swarm_fast_group3_kill
   in CI: the second could not listen).  Falls back to the kernel's
   choice on a crowded machine. */
static int s_free_port(const int *taken, int ntaken)
{
    int lo, hi, port;
    cl_port_ephemeral(NULL, &lo, &hi);
    taken_t t = {taken, ntaken};
    int fd = cl_port_pick(10000, lo, hi, 256, s_taken, &t, &port);
    if (fd < 0) {
        perror("free_port");
        exit(3);
    }
    close(fd); /* free again until the peer binds it */
    return port;
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

bool test_peers_file_holds(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    char line[2048];
    bool found = false;
    while (!found && fgets(line, sizeof line, f) != NULL)
        found = strstr(line, text) != NULL;
    fclose(f);
    return found;
}

int test_peers_log_lines(const char *path, const char *what, const char *also)
{
    char line[4096];
    FILE *f = fopen(path, "r");
    int n = 0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        n += strstr(line, what) != NULL && (also == NULL || strstr(line, also) != NULL);
    if (f != NULL)
        fclose(f);
    return n;
}

void test_peers_show_file(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[2048];
    fprintf(stderr, "[test] --- %s\n", path);
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        fputs(line, stderr);
    if (f != NULL)
        fclose(f);
    fprintf(stderr, "[test] --- end of %s\n", path);
}

uint64_t test_peers_fnv(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
