/*  test_swarm_leave.c - scenarios "sigterm" and "leave" of test_swarm: a
    peer leaves gracefully while its program still runs.

    Three peers.  Rank 0 is slow to enter a reduce to itself; rank 2 enters
    it (a non-root returns at once) and then leaves:
      sigterm  COLLAB_LEAVE_ON=SIGTERM; rank 2's program installed its own
               SIGTERM handler before collab_init, and sends itself SIGTERM:
               the library's handler leaves the swarm, then hands the
               signal to the program's handler (which writes a marker file
               and exits 0)
      leave    rank 2 calls collab_leave(): it returns once the others
               acknowledged; later calls fail with COLLAB_ERR_LEFT and
               finalize succeeds
      strict_leave  COLLAB_STRICT=1, rank 2 finalizes: the reduce keeps its
               contribution, the next collective fails with
               COLLAB_ERR_PROC_FAILED
    Either way rank 0's reduce holds rank 2's contribution, and ranks 0 and
    1 go on as a group of two without waiting for any timeout.
*/
#include "test_swarm.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char s_marker[300];

/* The program's own SIGTERM handler, called after the library left. */
static void program_handler(int sig)
{
    (void)sig;
    int fd = open(s_marker, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0)
        close(fd);
    _exit(0);
}

const char *leave_marker_path(void)
{
    snprintf(s_marker, sizeof s_marker, "%s/sigterm-handled", s_dir);
    return s_marker;
}

static void nap(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

int child_leave(int i, int n, bool by_signal)
{
    (void)leave_marker_path();
    if (i == n - 1 && by_signal) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = program_handler;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        setenv("COLLAB_LEAVE_ON", "SIGTERM", 1);
    }
    if (collab_init(NULL) != COLLAB_OK)
        return 2;
    collab_comm_t *w = collab_comm_world();
    double x = i + 1, y = 0;
    CHECK(collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    CHECK(y == n * (n + 1) / 2.0);
    if (i == 0)
        nap(1.0); /* the others run ahead into the reduce */
    double in = 10.0 * (i + 1), out = 0;
    CHECK(collab_reduce(w, &in, &out, 1, COLLAB_DOUBLE, &SUM, 0, NULL) == COLLAB_OK);
    if (i == n - 1) {
        if (by_signal) {
            kill(getpid(), SIGTERM);
            fprintf(stderr, "[test] rank %d: still running after SIGTERM\n", i);
            return 1;
        }
        double t0 = now_s();
        CHECK(collab_leave() == COLLAB_OK);
        CHECK(now_s() - t0 < 4.0); /* acknowledged, not timed out (COLLAB_TIMEOUT 5) */
        CHECK(collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_ERR_LEFT);
        CHECK(collab_leave() == COLLAB_OK); /* already left */
        CHECK(collab_finalize() == COLLAB_OK);
        return 0;
    }
    if (i == 0)
        CHECK(out == 10.0 * n * (n + 1) / 2.0); /* rank 2's contribution is in */
    /* The others go on without rank n-1, at once. */
    double t0 = now_s();
    collab_info_t info = {0};
    int iters = 0;
    do {
        x = i + 1;
        CHECK(collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
        CHECK(collab_last_info(&info) == COLLAB_OK);
        iters++;
    } while (info.group_size == n && now_s() - t0 < 30 && iters < 100000);
    CHECK(info.group_size == n - 1);
    CHECK(now_s() - t0 < 4.0);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

/* Strict mode: rank n-1 finalizes right after the reduce it entered; its
   contribution counts there, and the next collective, which needs it,
   fails with COLLAB_ERR_PROC_FAILED at once instead of waiting. */
int child_strict_leave(int i, int n)
{
    setenv("COLLAB_STRICT", "1", 1);
    if (collab_init(NULL) != COLLAB_OK)
        return 2;
    collab_comm_t *w = collab_comm_world();
    if (i == 0)
        nap(1.0);
    double in = 10.0 * (i + 1), out = 0;
    CHECK(collab_reduce(w, &in, &out, 1, COLLAB_DOUBLE, &SUM, 0, NULL) == COLLAB_OK);
    if (i == n - 1) {
        CHECK(collab_finalize() == COLLAB_OK);
        return 0;
    }
    if (i == 0)
        CHECK(out == 10.0 * n * (n + 1) / 2.0);
    double t0 = now_s(), x = 1, y = 0;
    int rc;
    do /* until this peer got the goodbye */
        rc = collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL);
    while (rc == COLLAB_OK && now_s() - t0 < 10);
    CHECK(rc == COLLAB_ERR_PROC_FAILED);
    CHECK(now_s() - t0 < 4.0);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

int child_sigterm_leave(int i, int n)
{
    return child_leave(i, n, true);
}

int child_call_leave(int i, int n)
{
    return child_leave(i, n, false);
}
