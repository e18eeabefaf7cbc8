/*  test_swarm_util.h - the harness of the swarm scenarios
    (test_swarm_util.c): the parent's set-up and its wait for the peers,
    and helpers the peers share.
*/
#ifndef TEST_SWARM_UTIL_H
#define TEST_SWARM_UTIL_H

#include "mpi_collab.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define MAXP 8

extern int s_failures;  /* failed CHECKs in this process */
extern bool s_keep_logs; /* a peer failed: cleanup_dir keeps the logs and names them */
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

extern char s_addr[MAXP][256]; /* peer i's full address (after prepare) */
extern int s_port[MAXP];       /* peer i's loopback port (after prepare) */

/* What a peer of a scenario runs: peer i of n; 0 when its checks passed. */
typedef int (*child_fn)(int i, int n);

/* The parent: identities and a port for n peers in a new s_dir. */
void prepare(int n);
/* The parent: removes s_dir with the identities and logs of n peers. */
void cleanup_dir(int n);
/* The environment collab-run gives peer i of n: peer 0 founds, the
   others list every other peer; extra_run names the run. */
void child_env(int i, int n, const char *extra_run);
/* Forks n children running fn; waits up to deadline seconds.  Children in
   `expect_killed` may die of a signal.  Returns 0 when every other child
   exited 0. */
int run(int n, child_fn fn, const char *name, double deadline, unsigned expect_killed);
/* Forks peer k of n with child_env, then env(k) when not NULL, running
   fn; the child exits 1 when fn or a CHECK failed. */
pid_t fork_child(int k, int n, const char *sc, child_fn fn, void (*env)(int k));
/* 1 when any of the n wait statuses is not a clean exit 0 (each named). */
int failed(const int *st, int n, const char *what);

/* collab_wtime(). */
double now_s(void);

/* Collectives comm completed on the same-host fast path so far (0 with
   no fast path; comm NULL: 0). */
uint64_t test_fast_done(collab_comm_t *comm);
/* True when the file at path contains every one of the n strings. */
bool file_has(const char *path, const char *const *want, int n);

/* Checks that the log at path exists and that no line of it holds
   `dropped` or bans a peer ("ignoring the peer"); prints every line that
   names a drop or a ban (for the reader of a failure). */
void test_clean_log(const char *path, const char *dropped);
/* Joins the swarm as peer i, logging to <dir>/<log><i> when log is not
   NULL (that path in path[len], when path is not NULL); the world
   communicator, or NULL (said on stderr). */
collab_comm_t *test_join(int i, const char *log, char *path, size_t len);
/* This process's resident set in KiB, or -1. */
long test_self_rss_kib(void);
/* The bytes a point-to-point scenario sends from src with tag. */
void test_fill(uint8_t *buf, size_t len, int src, int tag);

/* True when process pid is stopped (state T in /proc/<pid>/stat). */
bool test_proc_stopped(pid_t pid);
/* Writes the n records of size bytes at rec to path (whole: through
   path.tmp, then a rename). */
void test_write_records(const char *path, const void *rec, size_t size, size_t n);
/* The records of size bytes at path, waiting up to 30 s for the file
   (malloc'd, room for one more; *n their count), or NULL. */
void *test_read_records(const char *path, size_t size, size_t *n);

/* Markers: an empty file s_dir/<name> that one process of a scenario
   leaves once an event happened, for another that waits for it (instead
   of a fixed sleep). */
void test_marker_path(const char *name, char *path, size_t size);
/* Leaves marker name (a CHECK fails when it cannot). */
void test_mark(const char *name);
/* True when marker name exists. */
bool test_marked(const char *name);
/* Waits up to timeout seconds for marker name; false, said on stderr
   with what it stands for, when it did not come. */
bool test_wait_mark(const char *name, double timeout, const char *what);

/* An event counted in one process and marked once it happened `need`
   times over `min_s` seconds at least (from its first time): rank 0's
   calls completed without a stopped peer, say. */
typedef struct {
    const char *name; /* the marker */
    int need;
    double min_s;
    int count;    /* so far */
    double first; /* now_s() of the first */
    bool marked;
    double at; /* now_s() when marked */
} test_count_mark_t;
/* Counts one event (when `happened`) and leaves the marker once due. */
void test_count_mark(test_count_mark_t *m, bool happened);

/* What the helper process of a peer that is stopped (SIGSTOP) runs:
   waits up to stop_timeout seconds for pid to stop, then up to
   mark_timeout seconds for marker name, and continues pid in every case.
   Returns the helper's exit status: 0 when both came in time, 1 (said on
   stderr) otherwise. */
int test_cont_on_mark(pid_t pid, const char *name, double stop_timeout, double mark_timeout);
/* Forks that helper for the calling process; -1 on failure. */
pid_t test_fork_cont_on_mark(const char *name, double stop_timeout, double mark_timeout);
/* Waits for that helper (pid > 0): a CHECK fails when it did not exit 0,
   that is when the stop or the marker did not come in time. */
void test_reap_cont_helper(pid_t helper);

/* The full address of peer i (after the parent prepared the run). */
const char *test_swarm_addr(int i);

#endif
