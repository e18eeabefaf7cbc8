/*  test_peers.h - set-up shared by the multi-process engine tests
    (tests/swarm, tests/attack): what collab-run does for local peers.
*/
#ifndef TEST_PEERS_H_INCLUDED
#define TEST_PEERS_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Creates a private folder /tmp/collab-<tag>-XXXXXX (written to dir) with
   an identity file id<i> for each of n peers, picks a free loopback port
   for each (ports[i]; distinct, outside the kernel's ephemeral range) and
   writes its full address
   /ip4/127.0.0.1/tcp/<port>/p2p/<peer id> to addrs[i].  Exits the process
   with status 3 on failure (a broken test set-up, not a test failure). */
void test_peers_prepare(const char *tag, int n, char *dir, size_t dirlen, char (*addrs)[256],
                        int *ports);

/* Sets the environment collab-run gives peer i of n of run `run`:
   COLLAB_IDENTITY (<dir>/id<i>), COLLAB_LISTEN (loopback, `port`),
   COLLAB_RANK, COLLAB_WORLD_SIZE and COLLAB_RUN_ID. */
void test_peers_env(const char *dir, int i, int port, int n, const char *run);

/* Sets COLLAB_INITIAL_PEERS to the addresses of the peers in `mask` (bit
   j: addrs[j], j < n), or unsets it when the mask is empty. */
void test_peers_initial(char (*addrs)[256], int n, unsigned mask);

/* Resident set of process pid in KiB (from /proc), or -1 once it is
   gone. */
long test_peers_rss_kib(pid_t pid);

/* Waits up to timeout seconds (in naps of 10 ms) for a file at path,
   which one process of a test leaves for another once an event happened
   (a marker); true when it is there. */
bool test_peers_wait_file(const char *path, double timeout);

/* Whether a line of the file at path (a peer's log: COLLAB_LOG_FILE)
   holds text; false when there is no such file. */
bool test_peers_file_holds(const char *path, const char *text);

/* Lines of the file at path that hold `what` (and `also`, when not
   NULL); 0 when there is no such file. */
int test_peers_log_lines(const char *path, const char *what, const char *also);

/* Copies the file at path to stderr between two marker lines (a peer's
   log, when a check of it failed). */
void test_peers_show_file(const char *path);

/* FNV-1a (64 bits) of n bytes at p: a fingerprint of a peer's parameters,
   compared across peers for bitwise agreement. */
uint64_t test_peers_fnv(const void *p, size_t n);

#endif
