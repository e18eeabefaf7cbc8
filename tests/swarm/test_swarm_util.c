/*  test_swarm_util.c - the harness of the swarm scenarios (test_swarm.c
    and the test_swarm_*.c files it names).

    The parent prepares what collab-run would (an identity file and a
    fixed loopback port per peer), forks the peers with their environment
    and waits for them under a deadline, killing them for real (SIGKILL)
    when it passes (run, fork_child).  In the children: joining, the bytes
    a point-to-point scenario sends, this process's memory, and checks of
    a log file.
*/
#include "test_swarm_util.h"

#include "test_peers.h"

#include "engine/cl_comm.h"
#include "engine/cl_fast.h"

#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int s_failures = 0;
bool s_keep_logs = false;
int s_rank = -1;
char s_dir[256];
char s_addr[MAXP][256];
int s_port[MAXP];

/* ---------------------------------------------------------------------- */
/* Set-up done by the parent. */

void prepare(int n)
{
    test_peers_prepare("swarm", n, s_dir, sizeof s_dir, s_addr, s_port);
}

void cleanup_dir(int n)
{
    if (s_keep_logs) {
        fprintf(stderr, "[test] logs kept in %s\n", s_dir);
        return;
    }
    for (int i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/id%d", s_dir, i);
        unlink(path);
        snprintf(path, sizeof path, "%s/log%d", s_dir, i);
        unlink(path);
    }
    rmdir(s_dir);
}

/* The environment collab-run gives peer i of n: peer 0 founds, the
   others list every other peer. */
void child_env(int i, int n, const char *extra_run)
{
    char run[256];
    snprintf(run, sizeof run, "test-%s-%d", extra_run, (int)getppid());
    test_peers_env(s_dir, i, s_port[i], n, run);
    if (getenv("COLLAB_MATCHMAKING_TIME") == NULL)
        setenv("COLLAB_MATCHMAKING_TIME", "10", 1);
    if (getenv("COLLAB_TIMEOUT") == NULL)
        setenv("COLLAB_TIMEOUT", "2", 1);
    if (getenv("COLLAB_LOG") == NULL)
        setenv("COLLAB_LOG", "info", 1);
    test_peers_initial(s_addr, n, i > 0 ? ((1u << n) - 1) & ~(1u << i) : 0u);
}

/* Forks n children running fn; waits up to deadline seconds.  Children in
   `expect_killed` may die of a signal.  Returns 0 when every other child
   exited 0. */
int run(int n, child_fn fn, const char *name, double deadline, unsigned expect_killed)
{
    pid_t pids[MAXP];
    int status[MAXP];
    bool done[MAXP] = {false};
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    for (int i = 0; i < n; i++) {
        pids[i] = fork();
        if (pids[i] < 0) {
            perror("fork");
            return 3;
        }
        if (pids[i] == 0) {
            sigprocmask(SIG_UNBLOCK, &set, NULL);
            s_rank = i;
            child_env(i, n, name);
            int rc = fn(i, n);
            fflush(stdout);
            fflush(stderr);
            _exit(rc != 0 ? rc : s_failures > 0 ? 1 : 0);
        }
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int left = n;
    while (left > 0) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double el = (now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) * 1e-9;
        /* Stopped children that were meant to be killed: once the others
           are done, end them. */
        int others = 0;
        for (int i = 0; i < n; i++)
            others += !done[i] && !(expect_killed & (1u << i));
        if (others == 0)
            for (int i = 0; i < n; i++)
                if (!done[i])
                    kill(pids[i], SIGKILL);
        if (el >= deadline) {
            fprintf(stderr, "[test] deadline of %.0f s passed; killing the peers\n", deadline);
            s_keep_logs = true; /* the peers' logs say where they were */
            for (int i = 0; i < n; i++)
                if (!done[i])
                    kill(pids[i], SIGKILL);
            while (left > 0) {
                for (int i = 0; i < n; i++)
                    if (!done[i] && waitpid(pids[i], &status[i], 0) == pids[i]) {
                        done[i] = true;
                        left--;
                    }
            }
            return 1;
        }
        double wait = fmin(deadline - el, 1.0);
        struct timespec ts = {(time_t)wait, (long)((wait - (time_t)wait) * 1e9)};
        (void)sigtimedwait(&set, NULL, &ts);
        for (int i = 0; i < n; i++) {
            if (done[i])
                continue;
            pid_t r = waitpid(pids[i], &status[i], WNOHANG);
            if (r == pids[i]) {
                done[i] = true;
                left--;
            }
        }
    }
    int bad = 0;
    for (int i = 0; i < n; i++) {
        if (WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0)
            continue;
        if (WIFSIGNALED(status[i]) && (expect_killed & (1u << i)))
            continue;
        s_keep_logs = true;
        fprintf(stderr, "[test] peer %d: %s %d\n", i,
                WIFEXITED(status[i]) ? "exited with" : "killed by signal",
                WIFEXITED(status[i]) ? WEXITSTATUS(status[i]) : WTERMSIG(status[i]));
        bad++;
    }
    return bad == 0 ? 0 : 1;
}

const char *test_swarm_addr(int i)
{
    return s_addr[i];
}

double now_s(void)
{
    return collab_wtime();
}

collab_comm_t *test_join(int i, const char *log, char *path, size_t len)
{
    if (log != NULL) {
        char own[512];
        if (path == NULL) {
            path = own;
            len = sizeof own;
        }
        snprintf(path, len, "%s/%s%d", s_dir, log, i);
        unlink(path);
        setenv("COLLAB_LOG_FILE", path, 1);
    }
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[test] rank %d: collab_init: %s\n", i, collab_strerror(rc));
        return NULL;
    }
    return collab_comm_world();
}

long test_self_rss_kib(void)
{
    return test_peers_rss_kib(getpid());
}

void test_fill(uint8_t *buf, size_t len, int src, int tag)
{
    for (size_t k = 0; k < len; k++)
        buf[k] = (uint8_t)(src * 31 + tag * 7 + (int)k);
}

/* True when the file at path contains every one of the n strings. */
bool file_has(const char *path, const char *const *want, int n)
{
    char buf[16384];
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    for (int i = 0; i < n; i++)
        if (strstr(buf, want[i]) == NULL) {
            fprintf(stderr, "[test] rank %d: %s lacks \"%s\"\n", s_rank, path, want[i]);
            return false;
        }
    return true;
}

void test_clean_log(const char *path, const char *dropped)
{
    /* One pass over the whole log (file_has reads its first 16 KiB). */
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    char line[4096];
    int drops = 0, bans = 0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        bool drop = strstr(line, dropped) != NULL, ban = strstr(line, "ignoring the peer") != NULL;
        drops += drop;
        bans += ban;
        if (drop || ban || strstr(line, "dropped") != NULL)
            fprintf(stderr, "[test] rank %d's log: %s", s_rank, line);
    }
    if (f != NULL)
        fclose(f);
    CHECK(drops == 0);
    CHECK(bans == 0);
}

/* Forks peer k of n with child_env, then env(k) when not NULL, running
   fn; the child exits 1 when fn or a CHECK failed. */
pid_t fork_child(int k, int n, const char *sc, child_fn fn, void (*env)(int k))
{
    pid_t p = fork();
    if (p == 0) {
        s_rank = k;
        child_env(k, n, sc);
        if (env != NULL)
            env(k);
        _exit(fn(k, n) != 0 || s_failures > 0 ? 1 : 0);
    }
    return p;
}

/* 1 when any of the n wait statuses is not a clean exit 0 (each named). */
int failed(const int *st, int n, const char *what)
{
    int rc = 0;
    for (int k = 0; k < n; k++)
        if (!(WIFEXITED(st[k]) && WEXITSTATUS(st[k]) == 0)) {
            fprintf(stderr, "[test] %s %d failed\n", what, k);
            s_keep_logs = true;
            rc = 1;
        }
    return rc;
}

void test_write_records(const char *path, const void *rec, size_t size, size_t n)
{
    char tmp[620];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    CHECK(f != NULL && fwrite(rec, size, n, f) == n);
    if (f != NULL)
        fclose(f);
    CHECK(rename(tmp, path) == 0);
}

void *test_read_records(const char *path, size_t size, size_t *n)
{
    *n = 0;
    double end = now_s() + 30;
    FILE *f = NULL;
    while ((f = fopen(path, "rb")) == NULL && now_s() < end)
        usleep(20000);
    CHECK(f != NULL);
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    size_t m = (size_t)ftell(f) / size;
    fseek(f, 0, SEEK_SET);
    void *o = malloc((m + 1) * size);
    CHECK(o != NULL && fread(o, size, m, f) == m);
    fclose(f);
    *n = m;
    return o;
}

bool test_proc_stopped(pid_t pid)
{
    char path[64], st[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    size_t n = f != NULL ? fread(st, 1, sizeof st - 1, f) : 0;
    if (f != NULL)
        fclose(f);
    st[n] = 0;
    const char *p = strrchr(st, ')');
    return p != NULL && p[1] == ' ' && p[2] == 'T';
}

/* ---------------------------------------------------------------------- */
/* Markers. */

void test_marker_path(const char *name, char *path, size_t size)
{
    snprintf(path, size, "%s/mark.%s", s_dir, name);
}

void test_mark(const char *name)
{
    char path[600];
    test_marker_path(name, path, sizeof path);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f != NULL)
        fclose(f);
}

bool test_marked(const char *name)
{
    char path[600];
    test_marker_path(name, path, sizeof path);
    return access(path, F_OK) == 0;
}

bool test_wait_mark(const char *name, double timeout, const char *what)
{
    char path[600];
    test_marker_path(name, path, sizeof path);
    if (test_peers_wait_file(path, timeout))
        return true;
    fprintf(stderr, "[test] rank %d: no marker \"%s\" (%s) within %.0f s\n", s_rank, name, what,
            timeout);
    return false;
}

void test_count_mark(test_count_mark_t *m, bool happened)
{
    if (m->marked || !happened)
        return;
    if (m->count++ == 0)
        m->first = now_s();
    if (m->count >= m->need && now_s() - m->first >= m->min_s) {
        test_mark(m->name);
        m->marked = true;
        m->at = now_s();
        fprintf(stderr, "[test] rank %d: marker \"%s\" left after %d events over %.2f s\n", s_rank,
                m->name, m->count, now_s() - m->first);
    }
}

int test_cont_on_mark(pid_t pid, const char *name, double stop_timeout, double mark_timeout)
{
    double t0 = now_s();
    while (!test_proc_stopped(pid) && now_s() - t0 < stop_timeout)
        usleep(10000);
    bool stopped = test_proc_stopped(pid);
    double at = now_s();
    if (!stopped)
        fprintf(stderr, "[test] helper: process %d did not stop within %.0f s\n", (int)pid,
                stop_timeout);
    bool marked = stopped && test_wait_mark(name, mark_timeout, "the event its continue waits for");
    if (marked)
        fprintf(stderr, "[test] helper: marker \"%s\" seen %.2f s after the stop; continuing\n",
                name, now_s() - at);
    kill(pid, SIGCONT); /* in every case: a stopped peer would hang the run */
    return stopped && marked ? 0 : 1;
}

pid_t test_fork_cont_on_mark(const char *name, double stop_timeout, double mark_timeout)
{
    pid_t me = getpid(), p = fork();
    if (p == 0)
        _exit(test_cont_on_mark(me, name, stop_timeout, mark_timeout));
    CHECK(p > 0);
    return p;
}

void test_reap_cont_helper(pid_t helper)
{
    if (helper <= 0)
        return;
    int st = 0;
    CHECK(waitpid(helper, &st, 0) == helper);
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
        fprintf(stderr, "[test] rank %d: the helper that continues it failed (see above)\n",
                s_rank);
        CHECK(false);
    }
}

uint64_t test_fast_done(collab_comm_t *comm)
{
    cl_fast_t *f = comm != NULL ? atomic_load(&comm->fast) : NULL;
    return f != NULL ? cl_fast_completed(f) : 0;
}
