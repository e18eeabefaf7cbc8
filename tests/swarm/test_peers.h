/*  test_peers.h - set-up shared by the multi-process engine tests
    (test_swarm.c, test_elastic.c): what collab-run does for local peers.
*/
#ifndef TEST_PEERS_H_INCLUDED
#define TEST_PEERS_H_INCLUDED

#include <stddef.h>

/* Creates a private folder /tmp/collab-<tag>-XXXXXX (written to dir) with
   an identity file id<i> for each of n peers, picks a free loopback port
   for each (ports[i]) and writes its full address
   /ip4/127.0.0.1/tcp/<port>/p2p/<peer id> to addrs[i].  Exits the process
   with status 3 on failure (a broken test set-up, not a test failure). */
void test_peers_prepare(const char *tag, int n, char *dir, size_t dirlen, char (*addrs)[256],
                        int *ports);

#endif
