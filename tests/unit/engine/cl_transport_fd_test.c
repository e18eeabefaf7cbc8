/* cl_transport_fd_test - a peer at its file-descriptor limit refuses new
   links with an error and a log line; it never aborts inside libzmq
   (docs/security-bounds.md §5).

   A child lowers RLIMIT_NOFILE to what it has open plus 120, starts a
   transport and connects to 400 peers (random keys at a loopback port
   where nothing listens, so each link keeps retrying its connection).
   Asserted: the first links are accepted, later ones are refused with
   COLLAB_ERR_NETWORK, the child still has descriptors to spare (it opens
   a file), the transport is destroyed cleanly, and the child exits 0 (not
   killed by SIGABRT, which is what libzmq does when a socket cannot get
   its mailbox).  Then, with the limit raised again, links open until the
   ZeroMQ socket limit, where they are refused too (CZMQ would abort). */
#define _GNU_SOURCE
#include "engine/cl_transport.h"
#include "mpi_collab.h"
#include "util/cl_identity.h"

#include <czmq.h>
#include <dirent.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static long count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    long n = 0;
    struct dirent *x;
    while ((x = readdir(d)) != NULL)
        n += x->d_name[0] != '.';
    closedir(d);
    return n - 1;
}

static void handler(void *ctx, const cl_tp_event_t *ev)
{
    (void)ctx;
    (void)ev;
}

/* Connects to up to `tries` peers that do not listen; returns how many
   were accepted before the first refusal (*refused set), or -1. */
static int connect_many(cl_transport_t *tp, int tries, bool *refused)
{
    *refused = false;
    for (int i = 0; i < tries; i++) {
        uint8_t key[32];
        randombytes_buf(key, sizeof key);
        char id[CL_PEER_ID_MAX], addr[256];
        if (cl_base58_encode(key, sizeof key, id, sizeof id) != 0)
            return -1;
        snprintf(addr, sizeof addr, "/ip4/127.0.0.1/tcp/9/p2p/%s", id);
        int rc = cl_transport_connect(tp, key, addr);
        if (rc == COLLAB_ERR_NETWORK) {
            *refused = true;
            return i;
        }
        if (rc != COLLAB_OK)
            return -1;
        if (i % 16 == 0)
            (void)cl_transport_poll(tp, NULL, 0, 0, handler, NULL);
    }
    return tries;
}

static int child(void)
{
    zsys_handler_set(NULL);
    char err[256];
    cl_identity_t *id = cl_identity_new(NULL, err, sizeof err);
    CHECK(id != NULL);
    long nopen = count_fds();
    CHECK(nopen > 0);
    struct rlimit rl, low;
    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    low = rl;
    low.rlim_cur = (rlim_t)nopen + 120;
    CHECK(low.rlim_cur <= rl.rlim_max);
    CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
    cl_transport_config_t cfg = {
        .identity = id, .listen = "/ip4/127.0.0.1/tcp/0", .run_id = "fd-test", .ban_seconds = 30};
    cl_transport_t *tp = cl_transport_new(&cfg, err, sizeof err);
    CHECK(tp != NULL);
    bool refused;
    int ok = connect_many(tp, 400, &refused);
    fprintf(stderr, "[test] limit %llu: %d links opened, then %s; %ld descriptors open\n",
            (unsigned long long)low.rlim_cur, ok, refused ? "refused" : "no refusal", count_fds());
    CHECK(ok >= 5);
    CHECK(refused);
    (void)cl_transport_poll(tp, NULL, 0, 50, handler, NULL);
    int fd = open("/dev/null", O_RDONLY);
    CHECK(fd >= 0); /* the reserve is there */
    close(fd);
    cl_transport_destroy(&tp, 0);
    /* The limit raised again: links open, up to the ZeroMQ socket limit
       (1024 unless ZSYS_MAX_SOCKETS says otherwise), where they are
       refused as well. */
    CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
    tp = cl_transport_new(&cfg, err, sizeof err);
    CHECK(tp != NULL);
    int again = connect_many(tp, 40, &refused);
    CHECK(again == 40 && !refused);
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= 4096) {
        int more = connect_many(tp, 2000, &refused);
        fprintf(stderr, "[test] %d more links opened, then %s\n", more,
                refused ? "refused" : "no refusal");
        CHECK(refused && more >= 100);
    } else {
        fprintf(stderr, "[test] the socket limit is not tried: ulimit -n is below 4096\n");
    }
    cl_transport_destroy(&tp, 0);
    cl_identity_destroy(&id);
    return 0;
}

int main(void)
{
    pid_t p = fork();
    if (p < 0) {
        perror("fork");
        return 3;
    }
    if (p == 0)
        _exit(child());
    int st = 0;
    if (waitpid(p, &st, 0) != p)
        return 3;
    if (WIFSIGNALED(st)) {
        fprintf(stderr, "[test] the peer was killed by signal %d (%s)\n", WTERMSIG(st),
                strsignal(WTERMSIG(st)));
        return 1;
    }
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
