/*  test_swarm_join.c - the scenarios of test_swarm about joining a swarm
    that are not plain runs of n peers: joiners refused for conflicting
    settings (errors), the swarm passphrase (passphrase), a first peer
    that never answers (unreachable).  Each runs its own processes from
    the parent (scenario_*); the children are below.
*/
#include "test_swarm.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int s_pipe[2];

/* Peer i joins with the right key and var=value, which conflicts with a
   swarm-wide setting of the founder's: collab_init fails with
   COLLAB_ERR_CONFIG and its log names the conflict (`want`). */
static void expect_conflict(int i, const char *var, const char *value, const char *want)
{
    char log[512];
    snprintf(log, sizeof log, "%s/log%d", s_dir, i);
    unlink(log);
    setenv("COLLAB_LOG_FILE", log, 1);
    setenv("COLLAB_SWARM_KEY", "the right swarm key, 32 bytes long", 1);
    setenv(var, value, 1);
    CHECK(collab_init(NULL) == COLLAB_ERR_CONFIG);
    const char *wants[] = {want};
    CHECK(file_has(log, wants, 1));
    unlink(log);
}

static int child_errors(int i, int n)
{
    (void)n;
    if (i == 0) {
        setenv("COLLAB_SWARM_KEY", "the right swarm key, 32 bytes long", 1);
        setenv("COLLAB_TARGET_GROUP", "2", 1);
        int rc = collab_init(NULL);
        if (rc != COLLAB_OK)
            return 2;
        close(s_pipe[1]);
        char c;
        /* Wait until the parent says the joiners are done. */
        while (read(s_pipe[0], &c, 1) < 0 && errno == EINTR)
            ;
        CHECK(collab_finalize() == COLLAB_OK);
        return 0;
    }
    close(s_pipe[0]);
    close(s_pipe[1]);
    if (i == 1) {
        setenv("COLLAB_SWARM_KEY", "the right swarm key, 32 bytes long", 1);
        setenv("COLLAB_WORLD_SIZE", "5", 1); /* the founder said 3 */
        CHECK(collab_init(NULL) == COLLAB_ERR_CONFIG);
    } else if (i == 3) {
        /* the founder said 2 */
        expect_conflict(i, "COLLAB_TARGET_GROUP", "3",
                        "COLLAB_TARGET_GROUP=3 conflicts with the swarm's setting 2");
    } else if (i == 4) {
        /* the founder kept mean */
        expect_conflict(i, "COLLAB_AGGREGATION", "centered_clip",
                        "COLLAB_AGGREGATION=centered_clip conflicts with the swarm's setting mean");
    } else {
        setenv("COLLAB_SWARM_KEY", "the wrong swarm key, 32 bytes long", 1);
        double t0 = now_s();
        CHECK(collab_init(NULL) == COLLAB_ERR_NETWORK);
        CHECK(now_s() - t0 < 20); /* refused, not timed out */
    }
    return 0;
}

/* Peer 0 founds, peer 1 joins with the same passphrase, peer 2 (no rank)
   tries another one.  Peer 0 waits on s_pipe until the parent says the
   others are done. */
static int child_passphrase(int i, int n)
{
    (void)n;
    const char *pass = i == 2 ? "a wrong horse battery staple" : "correct horse battery staple";
    setenv("COLLAB_SWARM_PASSPHRASE", pass, 1);
    char *value = getenv("COLLAB_SWARM_PASSPHRASE");
    if (i == 2) {
        close(s_pipe[0]);
        close(s_pipe[1]);
        double t0 = now_s();
        CHECK(collab_init(NULL) == COLLAB_ERR_NETWORK);
        CHECK(now_s() - t0 < 20); /* refused, not timed out */
        return 0;
    }
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[test] rank %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    /* Gone from the environment, and its text overwritten. */
    CHECK(getenv("COLLAB_SWARM_PASSPHRASE") == NULL);
    CHECK(value != NULL && value[0] == '\0' && value[strlen(pass) - 1] == '\0');
    collab_comm_t *w = collab_comm_world();
    double x = i + 1, y = 0;
    CHECK(collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    CHECK(y == 3.0);
    /* Robust aggregation, set by the founder only (a joiner that had not
       adopted it would run another signature): peer 1's NaN is left out,
       the result is size x peer 0's 5. */
    double v[4] = {5, 5, 5, 5}, r[4] = {0};
    if (i == 1)
        v[2] = NAN;
    CHECK(collab_allreduce(w, v, r, 4, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    CHECK(r[0] == 10.0 && r[1] == 10.0 && r[2] == 10.0 && r[3] == 10.0);
    if (i == 0) {
        close(s_pipe[1]);
        char c;
        while (read(s_pipe[0], &c, 1) < 0 && errno == EINTR)
            ;
    } else {
        close(s_pipe[0]);
        close(s_pipe[1]);
    }
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

static int child_unreachable(int i, int n)
{
    (void)i;
    (void)n;
    /* Nothing listens on the port of peer 1 (it is never started). */
    double t0 = now_s();
    setenv("COLLAB_TIMEOUT", "1", 1);
    CHECK(collab_init(NULL) == COLLAB_ERR_NETWORK);
    double el = now_s() - t0;
    CHECK(el >= 29.0 && el < 45.0);
    CHECK(!collab_initialized());
    return 0;
}

/* Scenario errors: peers 1 to 4 list peer 0 only and name no world size. */
static void env_errors(int k)
{
    (void)k;
    setenv("COLLAB_INITIAL_PEERS", s_addr[0], 1);
    unsetenv("COLLAB_WORLD_SIZE");
}

/* Scenario passphrase: the joiners list peer 0 only; peer 2 names no rank
   or world size; the founder sets the aggregation the others adopt. */
static void env_passphrase(int k)
{
    if (k > 0)
        setenv("COLLAB_INITIAL_PEERS", s_addr[0], 1);
    if (k == 2) {
        unsetenv("COLLAB_RANK");
        unsetenv("COLLAB_WORLD_SIZE");
    }
    if (k == 0)
        setenv("COLLAB_AGGREGATION", "centered_clip", 1);
}

/* Scenario errors: the founder first, then peers 1 to 4 against it. */
int scenario_errors(const char *sc)
{
    prepare(5);
    if (pipe(s_pipe) != 0)
        return 3;
    /* Run the founder alone first so that the joiners find it. */
    pid_t founder = fork_child(0, 3, sc, child_errors, NULL);
    close(s_pipe[0]);
    /* Peers 1 to 4 list peer 0 only. */
    pid_t j[4];
    for (int k = 1; k <= 4; k++)
        j[k - 1] = fork_child(k, 3, sc, child_errors, env_errors);
    int st[5];
    for (int k = 1; k <= 4; k++)
        waitpid(j[k - 1], &st[k], 0);
    close(s_pipe[1]);
    waitpid(founder, &st[0], 0);
    int rc = failed(st, 5, "peer");
    cleanup_dir(5);
    return rc;
}

/* Scenario passphrase: peer 0 waits on s_pipe until the others are done. */
int scenario_passphrase(const char *sc)
{
    prepare(3);
    if (pipe(s_pipe) != 0)
        return 3;
    pid_t p[3];
    for (int k = 0; k < 3; k++)
        p[k] = fork_child(k, 2, sc, child_passphrase, env_passphrase);
    close(s_pipe[0]);
    int st[3];
    waitpid(p[1], &st[1], 0);
    waitpid(p[2], &st[2], 0);
    close(s_pipe[1]);
    waitpid(p[0], &st[0], 0);
    int rc = failed(st, 3, "peer");
    cleanup_dir(3);
    return rc;
}

/* Scenario unreachable: only peer 1 runs. */
int scenario_unreachable(const char *sc)
{
    prepare(2);
    /* Only peer 1's process runs; it lists peer 0, which never starts. */
    pid_t p = fork_child(1, 2, sc, child_unreachable, NULL);
    int st;
    waitpid(p, &st, 0);
    int rc = WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
    cleanup_dir(2);
    return rc;
}
