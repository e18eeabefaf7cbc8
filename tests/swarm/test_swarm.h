/*  test_swarm.h - what the scenarios of test_swarm share (test_swarm.c,
    test_swarm_groups.c). */
#ifndef TEST_SWARM_H
#define TEST_SWARM_H

#include "mpi_collab.h"

#include <stdbool.h>
#include <stdio.h>

#define MAXP 8

extern int s_failures;  /* failed CHECKs in this process */
extern int s_rank;      /* the peer this process runs, -1 in the parent */
extern char s_dir[256]; /* identities and logs of the run */

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "[test] rank %d: %s:%d: check failed: %s\n", s_rank, __FILE__,         \
                    __LINE__, #cond);                                                              \
            s_failures++;                                                                          \
        }                                                                                          \
    } while (0)

static const collab_op_t SUM = {COLLAB_OP_SUM, NULL, NULL, 1};
static const collab_op_t MAX = {COLLAB_OP_MAX, NULL, NULL, 1};
static const collab_op_t MIN = {COLLAB_OP_MIN, NULL, NULL, 1};

/* collab_wtime(). */
double now_s(void);
/* True when the file at path contains every one of the n strings. */
bool file_has(const char *path, const char *const *want, int n);
/* Joins the swarm as peer i, logging to <dir>/<log><i> when log is not
   NULL (that path in path[len], when path is not NULL); the world
   communicator, or NULL (said on stderr). */
collab_comm_t *test_join(int i, const char *log, char *path, size_t len);
/* This process's resident set in KiB, or -1. */
long test_self_rss_kib(void);
/* The bytes a point-to-point scenario sends from src with tag. */
void test_fill(uint8_t *buf, size_t len, int src, int tag);

/* Scenario "groups" (test_swarm_groups.c): peer i of n. */
int child_groups(int i, int n);
/* Scenarios "sigterm" and "leave" (test_swarm_leave.c): peer i of n. */
int child_sigterm_leave(int i, int n);
int child_call_leave(int i, int n);
int child_strict_leave(int i, int n);
/* The file the program's own SIGTERM handler creates in scenario sigterm. */
const char *leave_marker_path(void);
/* Scenario "weight" (test_swarm_weight.c): peer i of n. */
int child_weight(int i, int n);
/* Scenario "bandwidth" (test_swarm_bw.c): peer i of n. */
int child_bandwidth(int i, int n);
int child_bandwidth_v6(int i, int n);
int child_bandwidth_claims(int i, int n);

/* Scenario "monitor" (test_swarm_monitor.c): peer i of n. */
int child_monitor(int i, int n);

/* Scenario "shm_kill" (test_swarm_shm.c): peer i of n. */
int child_shm_kill(int i, int n);

/* Scenario "unexpected" (test_swarm_unexpected.c): peer i of n. */
int child_unexpected(int i, int n);
/* Scenario "flow" (test_swarm_flow.c): peer i of n. */
int child_flow(int i, int n);
int child_flow_v5(int i, int n);

/* The full address of peer i (after the parent prepared the run). */
const char *test_swarm_addr(int i);

#endif
