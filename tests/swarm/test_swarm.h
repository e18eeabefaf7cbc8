/*  test_swarm.h - what the scenarios of test_swarm share (test_swarm.c
    and the test_swarm_*.c files): their entry points, and the harness
    (test_swarm_util.h). */
#ifndef TEST_SWARM_H
#define TEST_SWARM_H

#include "mpi_collab.h"
#include "test_swarm_util.h"

static const collab_op_t SUM = {COLLAB_OP_SUM, NULL, NULL, 1};
static const collab_op_t MAX = {COLLAB_OP_MAX, NULL, NULL, 1};
static const collab_op_t MIN = {COLLAB_OP_MIN, NULL, NULL, 1};

/* Scenarios "errors", "passphrase", "unreachable" (test_swarm_join.c):
   each runs its processes from the parent; the test's status. */
int scenario_errors(const char *sc);
int scenario_passphrase(const char *sc);
int scenario_unreachable(const char *sc);
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
int child_adaptive(int i, int n);

/* Scenario "monitor" (test_swarm_monitor.c): peer i of n. */
int child_monitor(int i, int n);
int child_monitor_fast(int i, int n);

/* Scenario "shm_kill" (test_swarm_shm.c): peer i of n. */
int child_shm_kill(int i, int n);
/* Scenarios "shm_p2p", "shm_p2p_kill" (test_swarm_shm_p2p.c): peer i of n. */
int child_shm_p2p(int i, int n);
int child_shm_p2p_kill(int i, int n);

/* Scenarios "fast_bits", "fast_kill", "fast_stop", "engine_stop",
   "fast_big_kill", "fast_big_stop"
   (test_swarm_fast.c):
   peer i of n. */
int child_fast_bits(int i, int n);
int child_fast_kill(int i, int n);
int child_fast_stop(int i, int n);
int child_engine_stop(int i, int n);
int child_fast_big_kill(int i, int n);
int child_fast_big_stop(int i, int n);

/* Scenarios "fast_group3_kill", "fast_group4_kill", "fast_group4_stop"
   (test_swarm_fastgroup.c): peer i of n. */
int child_fast_group_kill(int i, int n);
int child_fast_group_stop(int i, int n);
int child_fast_group_rooted(int i, int n);

/* Scenario "unexpected" (test_swarm_unexpected.c): peer i of n. */
int child_unexpected(int i, int n);
/* Scenario "streams" (test_swarm_streams.c): peer i of n. */
int child_streams(int i, int n);
/* Scenario "flow" (test_swarm_flow.c): peer i of n. */
int child_flow(int i, int n);
int child_flow_v5(int i, int n);
int child_flow_net(int i, int n);
/* Scenarios "early" and "early_comms" (test_swarm_early.c): peer i of n. */
int child_early(int i, int n);
int child_early_comms(int i, int n);

#endif
