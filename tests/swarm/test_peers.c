/*  test_peers.c - identity files, ports and addresses for the peers of the
    multi-process engine tests, as collab-run prepares them.
*/
#include "test_peers.h"
#include "util/cl_identity.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
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
