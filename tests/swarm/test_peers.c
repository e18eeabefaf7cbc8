/*  test_peers.c - identity files, ports and addresses for the peers of the
    multi-process engine tests, as collab-run prepares them.
*/
#include "test_peers.h"
#include "util/cl_identity.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* A loopback TCP port that was free a moment ago. */
static int s_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        perror("free_port");
        exit(3);
    }
    close(fd);
    return ntohs(a.sin_port);
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
        ports[i] = s_free_port();
        snprintf(addrs[i], 256, "/ip4/127.0.0.1/tcp/%d/p2p/%s", ports[i],
                 cl_identity_peer_id(id));
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
