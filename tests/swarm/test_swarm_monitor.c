/*  test_swarm_monitor.c - scenario "monitor" of test_swarm: a monitor
    (cl_config_t.monitor, the engine of collab-monitor) founds a swarm of
    world size 3, and three trainers join it with its address only.

    Peer 0 is the monitor: it must hold no rank, see the three joins, get
    reports from each trainer carrying its rank, its group size (3: the
    monitor counts in no collective), its collectives and the value it
    reported with collab_report, and see the three leave.  Peers 1..3 are
    trainers of ranks 0..2: every all-reduce has 3 contributors and the
    right sum, and collab_report refuses bad names and non-finite values.
*/
#include "test_swarm.h"

#include "engine/cl_engine.h"
#include "util/cl_config.h"
#include "util/cl_identity.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TRAINERS 3
#define ROUNDS 30

static pthread_mutex_t s_mu = PTHREAD_MUTEX_INITIALIZER;
static int s_joined, s_left, s_failed;
static int s_reports[TRAINERS];
static double s_loss[TRAINERS];
static uint32_t s_group[TRAINERS];
static uint64_t s_colls[TRAINERS];
static int s_bad_reports;
static uint32_t s_view_count, s_view_monitors;

static void on_report(void *arg, const uint8_t key[32], const char *id, const char *address,
                      bool client, const cl_wire_report_t *r)
{
    (void)arg, (void)key, (void)id, (void)address, (void)client;
    pthread_mutex_lock(&s_mu);
    if (r->rank < 0 || r->rank >= TRAINERS) {
        s_bad_reports++;
    } else {
        s_reports[r->rank]++;
        s_group[r->rank] = r->group_size;
        s_colls[r->rank] = r->collectives;
        for (int k = 0; k < r->nvalues; k++)
            if (strcmp(r->values[k].name, "loss") == 0)
                s_loss[r->rank] = r->values[k].value;
    }
    pthread_mutex_unlock(&s_mu);
}

static void on_event(void *arg, int kind, int rank, bool monitor, const char *id,
                     const char *address, const char *why)
{
    (void)arg, (void)rank, (void)id, (void)address, (void)why;
    if (monitor)
        return;
    pthread_mutex_lock(&s_mu);
    s_joined += kind == CL_EVENT_JOINED;
    s_left += kind == CL_EVENT_LEFT;
    s_failed += kind == CL_EVENT_FAILED;
    pthread_mutex_unlock(&s_mu);
}

static void on_view(void *arg, const cl_wire_view_t *v)
{
    (void)arg;
    uint32_t mons = 0;
    for (uint32_t i = 0; i < v->count; i++)
        mons += (v->members[i].flags & CL_MEMBER_MONITOR) != 0;
    pthread_mutex_lock(&s_mu);
    if (v->count > s_view_count) {
        s_view_count = v->count;
        s_view_monitors = mons;
    }
    pthread_mutex_unlock(&s_mu);
}

static void nap(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    nanosleep(&ts, NULL);
}

/* A monitor's engine (cl_config_t.monitor) from the environment, with
   hooks; NULL, said, when it cannot start. */
static cl_engine_t *monitor_start(const cl_engine_hooks_t *hooks)
{
    cl_config_t cfg;
    char err[600];
    if (cl_config_load(&cfg, err, sizeof err) != 0) {
        fprintf(stderr, "[test] monitor: %s\n", err);
        return NULL;
    }
    cl_identity_t *id = cl_identity_new(cfg.identity, err, sizeof err);
    if (id == NULL) {
        fprintf(stderr, "[test] monitor: %s\n", err);
        cl_config_clear(&cfg);
        return NULL;
    }
    cfg.monitor = true;
    cl_engine_t *eng = NULL;
    int rc = cl_engine_start_hooks(&cfg, &id, hooks, &eng);
    cl_identity_destroy(&id);
    cl_config_clear(&cfg);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[test] monitor: start: %s\n", collab_strerror(rc));
        return NULL;
    }
    return eng;
}

/* Waits until `trainers` trainers left or failed, at most `limit` s. */
static void monitor_wait(int trainers, double limit)
{
    double t0 = now_s();
    for (;;) {
        pthread_mutex_lock(&s_mu);
        bool done = s_left + s_failed >= trainers;
        pthread_mutex_unlock(&s_mu);
        if (done || now_s() - t0 > limit)
            break;
        nap(0.05);
    }
}

static int monitor(void)
{
    cl_engine_hooks_t hooks = {NULL, on_report, on_event, on_view};
    cl_engine_t *eng = monitor_start(&hooks);
    if (eng == NULL)
        return 2;
    CHECK(cl_engine_rank(eng) == -1);
    /* Until the three trainers joined and left again (they finalize). */
    monitor_wait(TRAINERS, 60);
    pthread_mutex_lock(&s_mu);
    CHECK(s_joined == TRAINERS);
    CHECK(s_left == TRAINERS && s_failed == 0);
    CHECK(s_bad_reports == 0);
    CHECK(s_view_count == TRAINERS + 1 && s_view_monitors == 1);
    for (int r = 0; r < TRAINERS; r++) {
        CHECK(s_reports[r] >= 2);
        CHECK(s_loss[r] == r + 0.5);
        CHECK(s_group[r] == TRAINERS);
        CHECK(s_colls[r] >= ROUNDS);
        if (s_reports[r] < 2 || s_loss[r] != r + 0.5 || s_group[r] != TRAINERS)
            fprintf(stderr, "[test] monitor: rank %d: %d reports, loss %g, group %u\n", r,
                    s_reports[r], s_loss[r], s_group[r]);
    }
    pthread_mutex_unlock(&s_mu);
    CHECK(cl_engine_stop(&eng) == COLLAB_OK);
    return 0;
}

/* The world of a trainer of rank `rank` among `size` (NULL, said, when
   collab_init fails). */
static collab_comm_t *trainer_init(int rank, int size)
{
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[test] trainer %d: collab_init: %s\n", rank, collab_strerror(rc));
        return NULL;
    }
    collab_comm_t *w = collab_comm_world();
    CHECK(collab_comm_rank(w) == rank && collab_comm_size(w) == size);
    return w;
}

static int trainer(int i)
{
    int rank = i - 1;
    collab_comm_t *w = trainer_init(rank, TRAINERS);
    if (w == NULL)
        return 2;
    CHECK(collab_report("bad name", 1.0) == COLLAB_ERR_ARG);
    CHECK(collab_report("", 1.0) == COLLAB_ERR_ARG);
    CHECK(collab_report("loss", NAN) == COLLAB_ERR_ARG);
    CHECK(collab_report("loss", INFINITY) == COLLAB_ERR_ARG);
    for (int k = 0; k < ROUNDS; k++) {
        double x = rank + 1, y = 0;
        CHECK(collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
        CHECK(y == TRAINERS * (TRAINERS + 1) / 2.0);
        collab_info_t info;
        CHECK(collab_last_info(&info) == COLLAB_OK && info.group_size == TRAINERS);
        CHECK(collab_report("loss", rank + 0.5) == COLLAB_OK);
        nap(0.02);
    }
    nap(1.0); /* two more report intervals */
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

/* Peer i's environment: peer 0 the monitor, founding a swarm of world
   size `trainers`; peer i > 0 the trainer of rank i - 1, given the
   monitor's address only. */
static void monitor_env(int i, int trainers)
{
    char v[64];
    snprintf(v, sizeof v, "%d", trainers);
    setenv("COLLAB_WORLD_SIZE", v, 1);
    setenv("COLLAB_MATCHMAKING_TIME", "2", 1);
    if (i == 0) {
        unsetenv("COLLAB_RANK");
        unsetenv("COLLAB_INITIAL_PEERS");
        return;
    }
    snprintf(v, sizeof v, "%d", i - 1);
    setenv("COLLAB_RANK", v, 1);
    setenv("COLLAB_INITIAL_PEERS", test_swarm_addr(0), 1); /* the monitor only */
}

int child_monitor(int i, int n)
{
    (void)n;
    setenv("COLLAB_REPORT_INTERVAL", "0.2", 1);
    monitor_env(i, TRAINERS);
    return i == 0 ? monitor() : trainer(i);
}

/* ---------------------------------------------------------------------- */
/* Scenario "monitor_fast": a monitor that takes checkpoints (every
   CK_EVERY steps, at most one a second) and two trainers of one host,
   whose world all-reduces may take the same-host fast path.  Between two
   checkpoints the fast path goes on: the engine path is due only a few
   steps before each checkpoint's boundary (eng_ckpt_due,
   docs/collectives.md §5).  Before, the monitor's request for the next
   checkpoint, sent as soon as it fetched the last, kept every call on
   the engine path until that checkpoint: most calls, not a few per
   checkpoint.  Checked: every sum exact, at least half of the calls on
   the fast path, and the monitor wrote at least two checkpoints, the
   newest at least a third of the way through the loop (checkpoints went
   on while the trainers ran fast). */

#define CK_TRAINERS 2
#define CK_STEPS 800
#define CK_EVERY "20"

static void ck_dir(char *out, size_t n)
{
    snprintf(out, n, "%s/ckpt", s_dir);
}

static int ck_monitor(void)
{
    char dir[300];
    ck_dir(dir, sizeof dir);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "[test] monitor: %s: %s\n", dir, strerror(errno));
        return 2;
    }
    setenv("COLLAB_CHECKPOINT_DIR", dir, 1);
    setenv("COLLAB_CHECKPOINT_EVERY", CK_EVERY, 1);
    cl_engine_hooks_t hooks = {NULL, NULL, on_event, NULL};
    cl_engine_t *eng = monitor_start(&hooks);
    if (eng == NULL)
        return 2;
    monitor_wait(CK_TRAINERS, 80);
    CHECK(cl_engine_stop(&eng) == COLLAB_OK);
    pthread_mutex_lock(&s_mu);
    CHECK(s_left == CK_TRAINERS && s_failed == 0);
    pthread_mutex_unlock(&s_mu);
    /* The files it kept (the newest three), named by step. */
    int files = 0;
    unsigned long long newest = 0;
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    for (struct dirent *e = d != NULL ? readdir(d) : NULL; e != NULL; e = readdir(d)) {
        unsigned long long step;
        char tail[8];
        if (sscanf(e->d_name, "checkpoint-%llu.%7s", &step, tail) == 2 &&
            strcmp(tail, "ckpt") == 0) {
            files++;
            newest = step > newest ? step : newest;
        }
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            char path[600];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    }
    if (d != NULL)
        closedir(d);
    rmdir(dir);
    fprintf(stderr, "[test] monitor: %d checkpoints kept, the newest of step %llu\n", files,
            newest);
    CHECK(files >= 2);
    CHECK(newest >= CK_STEPS / 3);
    return 0;
}

static int ck_trainer(int i)
{
    int rank = i - 1;
    collab_comm_t *w = trainer_init(rank, CK_TRAINERS);
    if (w == NULL)
        return 2;
    /* The state a checkpoint holds: a start-up broadcast's buffer, the
       same on both (the step last done). */
    double state[16];
    for (int k = 0; k < 16; k++)
        state[k] = rank == 0 ? k : -1;
    CHECK(collab_bcast(w, state, sizeof state, 0, NULL) == COLLAB_OK);
    CHECK(state[15] == 15);
    uint64_t f0 = test_fast_done(w);
    int bad = 0;
    for (int k = 0; k < CK_STEPS; k++) {
        double x = rank + 1 + k, y = 0;
        CHECK(collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
        bad += y != 2.0 * k + 3;
        state[0] = k;
        nap(0.005);
    }
    uint64_t fast = test_fast_done(w) - f0;
    fprintf(stderr, "[test] trainer %d: %llu of %d all-reduces on the fast path, %d wrong\n", rank,
            (unsigned long long)fast, CK_STEPS, bad);
    CHECK(bad == 0);
    CHECK(fast >= CK_STEPS / 2);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

int child_monitor_fast(int i, int n)
{
    (void)n;
    monitor_env(i, CK_TRAINERS);
    return i == 0 ? ck_monitor() : ck_trainer(i);
}
