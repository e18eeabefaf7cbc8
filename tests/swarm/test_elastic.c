/*  test_elastic.c - admission at step boundaries and state sync, with real
    processes over loopback (docs/elastic.md, docs/state-sync.md).

    Usage: test_elastic <scenario>.  The parent prepares identities and
    ports as collab-run would, forks the peers (calling the collab_* API
    directly), fails them for real (SIGSTOP/SIGCONT) and compares what each
    peer wrote to its result file.

    The program every peer runs has start-up collectives of every sort:
    a broadcast of the parameters (5000 floats from rank 0) and of a 3 MiB
    table (updated in place while training; served in stripes), an allreduce
    of a seed, a barrier, an allgatherv, a broadcast of a scratch buffer
    that each veteran then overwrites with its own rank (so the peers'
    copies differ), a broadcast of the step counter, and a scatterv.  Then
    it trains: per step one allreduce of a gradient computed from the
    parameters and the rank, and one allreduce of a counter.

    Scenarios:
      join_marks   3 veterans in a world of 4; the program calls
                   collab_step() at the top of each step; a 4th peer joins
                   at ~1.5 s, once rank 0 marked step 5 (on a loaded
                   machine the group forms late, and a peer started during
                   matchmaking would be one of it, starting at step 0).
                   Its start-up results equal the veterans' (seed,
                   allgatherv with the absent slot zero-filled), its
                   scratch buffer keeps its own value (the veterans' copies
                   differ, so it is dropped), its scatterv slot is
                   zero-filled, it starts at the swarm's step (not 0) and
                   every peer ends with bitwise equal parameters.
      join_config  the same without collab_step(), with
                   COLLAB_COLLECTIVES_PER_STEP=2.
      join_learned the same, the steps learned from the stream.
      straggler    3 peers; rank 2 stops itself (SIGSTOP) at step 15 for
                   6 s (COLLAB_TIMEOUT 2 s): the others go on, and once it
                   runs again it is re-admitted and ends bitwise equal.
      diverge      3 peers; rank 1 changes its own parameters at step 30;
                   the state check at step 64 finds it and resyncs it, so
                   every peer still ends bitwise equal.
      fast_readmit 2 peers of one host, the per-step counter all-reduce on
                   the same-host fast path; rank 1 stops itself at step 15
                   for 6 s, is re-admitted and resynced at a step boundary
                   while fast all-reduces run, and ends bitwise equal.
      diverge_end  5 peers; ranks 3 and 4 change their parameters alike at
                   step 30 and are taken out of the group to be resynced
                   at the check of step 64, and ranks 0 to 2 finish with
                   step 64, before the two are re-admitted: rank 3 forms
                   the group again (its log says so) and the two go on as
                   a group of two and end bitwise equal, ranks 0 to 2
                   too.
      diverge_kill the same, ranks 0 to 2 SIGKILLed instead of leaving:
                   ranks 3 and 4 end bitwise equal.
      rank_required  a peer requiring a held rank waits as a standby and
                   takes that rank once its holder is gone
      join_groups  COLLAB_TARGET_GROUP=2: 3 peers start (the group closes
                   at 2, the third is admitted at a step boundary) and a
                   4th joins at ~1.5 s, so every admission happens while
                   all-reduces run in several groups and the admitter
                   (rank 0) alone serves the state, from a copy taken when
                   its program posted the admission's collective.  Every
                   peer records a hash of its parameters and table at the
                   top of each step; each peer admitted late starts
                   bitwise equal to rank 0 at that step (the peers'
                   final states differ by design: groups average apart).
*/
#include "engine/cl_comm.h"
#include "engine/cl_fast.h"
#include "mpi_collab.h"
#include "test_peers.h"
#include "util/cl_identity.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXP 5
#define NPARAM 5000
#define SCRATCH 64
#define NTABLE (3 * 1024 * 1024 / 4) /* a 3 MiB table: striped over the donors */

static char s_dir[256];
static char s_addr[MAXP][256];
static int s_port[MAXP];
static const char *s_scenario;
static const collab_op_t SUM = {COLLAB_OP_SUM, NULL, NULL, 1};

/* ---------------------------------------------------------------------- */
/* Parent: set-up. */

static void prepare(int n)
{
    test_peers_prepare("elastic", n, s_dir, sizeof s_dir, s_addr, s_port);
}

static void cleanup(int n)
{
    char path[512];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/id%d", s_dir, i);
        unlink(path);
        snprintf(path, sizeof path, "%s/out%d", s_dir, i);
        unlink(path);
        snprintf(path, sizeof path, "%s/steps%d", s_dir, i);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/training", s_dir);
    unlink(path);
    rmdir(s_dir);
}

/* The environment of peer i: world size `world`, initial peers the
   `nveterans` first peers other than itself. */
static void child_env(int i, int world, int nveterans)
{
    char run[256];
    snprintf(run, sizeof run, "test-elastic-%s-%d", s_scenario, (int)getppid());
    test_peers_env(s_dir, i, s_port[i], world, run);
    setenv("COLLAB_MATCHMAKING_TIME", "1", 1);
    setenv("COLLAB_TIMEOUT", "2", 1);
    if (getenv("COLLAB_LOG") == NULL)
        setenv("COLLAB_LOG", "info", 1);
    test_peers_initial(s_addr, nveterans, i > 0 ? ((1u << nveterans) - 1) & ~(1u << i) : 0u);
}

/* ---------------------------------------------------------------------- */
/* Child: the program. */

typedef struct {
    int steps;     /* train until the step counter reaches this */
    int sleep_ms;  /* per step */
    bool marks;    /* call collab_step() at the top of each step */
    int stop_rank; /* raises SIGSTOP at stop_step (-1: nobody) */
    int stop_step;
    int bend_rank; /* changes its own parameters at bend_step (-1: nobody) */
    int bend_step;
    bool hashes;     /* writes "step N HASH" for the top of each step to steps<i> */
    bool fast;       /* the small all-reduces must have taken the same-host fast path */
    int bend_rank2;  /* a second rank that bends at bend_step (0: nobody) */
    int short_steps; /* ranks below short_below train only until this step (0: all steps) */
    int short_below;
    bool short_kill; /* those ranks then stop (SIGSTOP) and the parent SIGKILLs them */
    bool logs;       /* each peer logs to <dir>/log<i> (COLLAB_LOG_FILE) instead of stderr */
} prog_t;


static void nap(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Rank 0, a veteran, leaves this file at the top of step
   TRAINING_MARK_STEP: the group has formed and trains, so that a peer
   started now is a joiner, admitted at a later step boundary. */
#define TRAINING_MARK_STEP 5
static void training_mark_path(char *path, size_t size)
{
    snprintf(path, size, "%s/training", s_dir);
}

static void mark_training(void)
{
    char path[512];
    training_mark_path(path, sizeof path);
    FILE *f = fopen(path, "w");
    if (f != NULL)
        fclose(f);
}

static int program(int i, const prog_t *pg)
{
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[test] peer %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    collab_comm_t *w = collab_comm_world();
    int n = collab_comm_size(w), me = collab_comm_rank(w);
    float *params = calloc(NPARAM, sizeof(float)), *grad = calloc(NPARAM, sizeof(float));
    unsigned char *scratch = malloc(SCRATCH);
    float *table = calloc(NTABLE, sizeof(float));
    int bad = 0;
#define OK(call)                                                                                   \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != COLLAB_OK) {                                                                    \
            fprintf(stderr, "[test] peer %d: %s failed: %s\n", i, #call, collab_strerror(rc_));    \
            bad++;                                                                                 \
        }                                                                                          \
    } while (0)
    /* Start-up. */
    if (me == 0)
        for (int k = 0; k < NPARAM; k++)
            params[k] = (float)sin(k * 0.01);
    OK(collab_bcast(w, params, NPARAM * sizeof(float), 0, NULL));
    if (me == 0)
        for (int k = 0; k < NTABLE; k++)
            table[k] = (float)cos(k * 0.001);
    OK(collab_bcast(w, table, NTABLE * sizeof(float), 0, NULL));
    int seed = me + 1, seed_out = 0;
    OK(collab_allreduce(w, &seed, &seed_out, 1, COLLAB_INT32, &SUM, NULL));
    OK(collab_barrier(w, NULL));
    size_t counts[MAXP], displs[MAXP];
    for (int r = 0; r < n; r++) {
        counts[r] = sizeof(int);
        displs[r] = (size_t)r * sizeof(int);
    }
    int mine = 100 + me, all[MAXP] = {-1, -1, -1, -1, -1};
    OK(collab_allgatherv(w, &mine, sizeof mine, all, counts, displs, NULL));
    memset(scratch, 0xab, SCRATCH);
    OK(collab_bcast(w, scratch, SCRATCH, 0, NULL));
    int step = 0;
    OK(collab_bcast(w, &step, sizeof step, 0, NULL));
    int first = step;
    int sc[MAXP] = {200, 201, 202, 203, 204}, got = -1;
    OK(collab_scatterv(w, sc, counts, displs, &got, sizeof got, 0, NULL));
    /* A veteran overwrites its scratch copy: the peers' copies differ. */
    if (first == 0)
        memset(scratch, me, SCRATCH);
    /* Training. */
    FILE *steps = NULL;
    if (pg->hashes) {
        char spath[512];
        snprintf(spath, sizeof spath, "%s/steps%d", s_dir, i);
        steps = fopen(spath, "w");
        if (steps != NULL)
            setvbuf(steps, NULL, _IOLBF, 0); /* the parent may wait for a step */
    }
    int last = pg->short_steps > 0 && me < pg->short_below ? pg->short_steps : pg->steps;
    for (; step < last; step++) {
        if (me == 0 && first == 0 && step == TRAINING_MARK_STEP)
            mark_training();
        if (steps != NULL)
            fprintf(steps, "step %d %016llx\n", step,
                    (unsigned long long)(test_peers_fnv(params, NPARAM * sizeof(float)) ^
                                         test_peers_fnv(table, NTABLE * sizeof(float))));
        if (pg->marks)
            OK(collab_step());
        if (me == pg->stop_rank && step == pg->stop_step && first == 0)
            raise(SIGSTOP);
        if ((me == pg->bend_rank || (pg->bend_rank2 > 0 && me == pg->bend_rank2)) &&
            step == pg->bend_step)
            params[17] += 1.0f; /* silent divergence */
        for (int k = 0; k < NPARAM; k++)
            grad[k] = (float)sin(params[k] * (float)(me + 1) + (float)step * 0.1f);
        nap(pg->sleep_ms);
        if (last < pg->steps && step == last - 1)
            nap(1000); /* the state check of this step reaches its verdict first */
        OK(collab_allreduce(w, NULL, grad, NPARAM, COLLAB_FLOAT, &SUM, NULL));
        int one = 1, cnt = 0;
        OK(collab_allreduce(w, &one, &cnt, 1, COLLAB_INT32, &SUM, NULL));
        for (int k = 0; k < NPARAM; k++)
            params[k] -= 0.01f * grad[k] / (float)n;
        table[((size_t)step * 7919u) % NTABLE] += grad[step % NPARAM]; /* updated in place */
    }
    if (steps != NULL)
        fclose(steps);
    if (last < pg->steps)
        nap(1000); /* the others' next step must begin without this peer */
    if (last < pg->steps && pg->short_kill)
        raise(SIGSTOP); /* the parent kills it */
    if (pg->fast) {
        cl_fast_t *fp = atomic_load(&w->fast);
        uint64_t nf = fp != NULL ? cl_fast_completed(fp) : 0;
        fprintf(stderr, "[test] peer %d: %llu calls on the fast path\n", i, (unsigned long long)nf);
        if (nf < (uint64_t)pg->steps / 4)
            bad++;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/out%d", s_dir, i);
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        fprintf(f,
                "first %d\nseed %d\nall %d %d %d %d\nscatter %d\nscratch %02x%02x\n"
                "checksum %016llx\nbad %d\nrank %d\n",
                first, seed_out, all[0], all[1], all[2], n > 3 ? all[3] : 0, got, scratch[0],
                scratch[SCRATCH - 1],
                (unsigned long long)(test_peers_fnv(params, NPARAM * sizeof(float)) ^
                                     test_peers_fnv(table, NTABLE * sizeof(float))),
                bad, me);
        fclose(f);
    }
    rc = collab_finalize();
    free(params);
    free(grad);
    free(scratch);
    free(table);
    return bad > 0 || rc != COLLAB_OK ? 1 : 0;
}

/* ---------------------------------------------------------------------- */
/* Parent: running and checking. */

typedef struct {
    int first, seed, all[4], scatter, rank;
    char scratch[8];
    char checksum[32];
    int bad;
} out_t;

static bool read_out(int i, out_t *o)
{
    char path[512];
    snprintf(path, sizeof path, "%s/out%d", s_dir, i);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    int k = fscanf(f,
                   "first %d\nseed %d\nall %d %d %d %d\nscatter %d\nscratch %7s\n"
                   "checksum %31s\nbad %d\nrank %d\n",
                   &o->first, &o->seed, &o->all[0], &o->all[1], &o->all[2], &o->all[3], &o->scatter,
                   o->scratch, o->checksum, &o->bad, &o->rank);
    fclose(f);
    return k == 11;
}

static int s_fail = 0;
#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "[test] %s:%d: expected %s\n", __FILE__, __LINE__, #cond);             \
            s_fail++;                                                                              \
        }                                                                                          \
    } while (0)

static pid_t spawn(int i, int world, int nveterans, const prog_t *pg)
{
    pid_t p = fork();
    if (p < 0) {
        perror("fork");
        exit(3);
    }
    if (p == 0) {
        child_env(i, world, nveterans);
        if (pg->logs) {
            char log[512];
            snprintf(log, sizeof log, "%s/log%d", s_dir, i);
            setenv("COLLAB_LOG_FILE", log, 1);
        }
        int rc = program(i, pg);
        fflush(stdout);
        fflush(stderr);
        _exit(rc);
    }
    return p;
}

/* Waits for the n children until deadline (seconds from now), continuing
   a stopped child after cont_after seconds, or (cont_after < 0) killing it
   at once with SIGKILL, which does not count.  Returns the number that did
   not exit 0 (killed at the deadline counts). */
static int wait_all(pid_t *pids, int n, double deadline, double cont_after)
{
    bool killed[MAXP] = {false};
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool done[MAXP] = {false};
    double stopped_at[MAXP] = {0};
    int left = n, bad = 0;
    while (left > 0) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        double el = (double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) * 1e-9;
        for (int i = 0; i < n; i++) {
            if (done[i])
                continue;
            int st;
            pid_t r = waitpid(pids[i], &st, WNOHANG | WUNTRACED | WCONTINUED);
            if (r != pids[i])
                continue;
            if (WIFSTOPPED(st)) {
                fprintf(stderr, "[test] peer %d stopped itself at %.1f s\n", i, el);
                stopped_at[i] = el;
                if (cont_after < 0) {
                    fprintf(stderr, "[test] killing peer %d\n", i);
                    kill(pids[i], SIGKILL);
                    killed[i] = true;
                    stopped_at[i] = 0;
                }
            } else if (WIFEXITED(st) || WIFSIGNALED(st)) {
                done[i] = true;
                left--;
                if (killed[i] && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
                    continue;
                if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                    fprintf(stderr, "[test] peer %d: %s %d\n", i,
                            WIFEXITED(st) ? "exited with" : "killed by signal",
                            WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
                    bad++;
                }
            }
        }
        for (int i = 0; i < n; i++)
            if (!done[i] && stopped_at[i] > 0 && el - stopped_at[i] >= cont_after) {
                fprintf(stderr, "[test] continuing peer %d at %.1f s\n", i, el);
                kill(pids[i], SIGCONT);
                stopped_at[i] = 0;
            }
        if (el >= deadline) {
            fprintf(stderr, "[test] deadline of %.0f s passed; killing the peers\n", deadline);
            for (int i = 0; i < n; i++)
                if (!done[i]) {
                    kill(pids[i], SIGKILL);
                    waitpid(pids[i], NULL, 0);
                    bad++;
                }
            return bad;
        }
        nap(50);
    }
    return bad;
}

/* Peers 0..2 of a world of 4 start at once and peer 3 1.5 s later (after
   COLLAB_MATCHMAKING_TIME) at the earliest, once rank 0 marked that the
   group trains (at step TRAINING_MARK_STEP; on a loaded machine the
   group forms late, and a peer started during matchmaking is one of the
   group, not a joiner); all must end well.  Fills o[0..3] with their
   outputs; false when one is missing. */
static bool three_then_joiner(const prog_t *pg, out_t o[4])
{
    prepare(4);
    pid_t pids[4];
    for (int i = 0; i < 3; i++)
        pids[i] = spawn(i, 4, 3, pg);
    nap(1500);
    char mark[512];
    training_mark_path(mark, sizeof mark);
    bool trains = test_peers_wait_file(mark, 40.0);
    if (!trains)
        fprintf(stderr,
                "[test] rank 0 did not reach step %d within 41.5 s; starting the joiner "
                "anyway\n",
                TRAINING_MARK_STEP);
    EXPECT(trains);
    pids[3] = spawn(3, 4, 3, pg);
    int bad = wait_all(pids, 4, 60.0, 0);
    EXPECT(bad == 0);
    bool have = true;
    for (int i = 0; i < 4; i++)
        have = read_out(i, &o[i]) && have;
    EXPECT(have);
    return have;
}

static int scenario_join(bool marks, const char *per_step)
{
    prog_t pg = {.steps = 150, .sleep_ms = 20, .marks = marks, .stop_rank = -1, .bend_rank = -1};
    if (per_step != NULL)
        setenv("COLLAB_COLLECTIVES_PER_STEP", per_step, 1);
    out_t o[4];
    bool have = three_then_joiner(&pg, o); /* the group of 3 forms meanwhile */
    if (have) {
        for (int i = 0; i < 4; i++) {
            EXPECT(o[i].bad == 0);
            EXPECT(strcmp(o[i].checksum, o[0].checksum) == 0);
            EXPECT(o[i].seed == o[0].seed);
            for (int k = 0; k < 4; k++)
                EXPECT(o[i].all[k] == o[0].all[k]);
        }
        /* Veterans: 3 of 4 ranks present. */
        EXPECT(o[0].seed == 8); /* 4 x mean(1, 2, 3) */
        EXPECT(o[0].all[0] == 100 && o[0].all[1] == 101 && o[0].all[2] == 102 && o[0].all[3] == 0);
        for (int i = 0; i < 3; i++) {
            EXPECT(o[i].first == 0);
            EXPECT(o[i].scatter == 200 + i);
        }
        /* The joiner. */
        EXPECT(o[3].first > 0 && o[3].first < pg.steps);
        EXPECT(o[3].scatter == 0);
        EXPECT(strcmp(o[3].scratch, "abab") == 0);
        fprintf(stderr, "[test] joiner started at step %d; checksum %s\n", o[3].first,
                o[3].checksum);
    }
    cleanup(4);
    return s_fail == 0 ? 0 : 1;
}

/* The hash peer i recorded at the top of `step`, or false. */
static bool step_hash(int i, int step, char *hash, size_t len)
{
    char path[512], h[32];
    snprintf(path, sizeof path, "%s/steps%d", s_dir, i);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    int st;
    bool found = false;
    while (!found && fscanf(f, "step %d %31s\n", &st, h) == 2)
        found = st == step;
    fclose(f);
    if (found)
        snprintf(hash, len, "%s", h);
    return found;
}

/* Runs n peers of pg from the start (wait_all with `deadline` and
   `stop_after`): every one must exit 0 and write its output, with no
   failed call.  Fills o[0..n); false when an output is missing. */
static bool run_peers(const prog_t *pg, int n, double deadline, double stop_after, out_t *o)
{
    prepare(n);
    pid_t pids[MAXP];
    for (int i = 0; i < n; i++)
        pids[i] = spawn(i, n, n, pg);
    int bad = wait_all(pids, n, deadline, stop_after);
    EXPECT(bad == 0);
    bool have = true;
    for (int i = 0; i < n; i++)
        have = read_out(i, &o[i]) && have;
    EXPECT(have);
    for (int i = 0; have && i < n; i++)
        EXPECT(o[i].bad == 0);
    return have;
}

/* Runs n peers of pg (wait_all with `deadline` and `stop_after`): every
   one must finish with no bad step and the same checksum, and when
   same_at > 0 (pg->hashes) hold the same state at the top of step
   same_at already. */
static int run_agree_n(const prog_t *pg, int n, double deadline, double stop_after, int same_at)
{
    out_t o[MAXP];
    bool have = run_peers(pg, n, deadline, stop_after, o);
    for (int i = 0; have && i < n; i++) {
        EXPECT(strcmp(o[i].checksum, o[0].checksum) == 0);
    }
    for (int i = 1; same_at > 0 && i < n; i++) {
        char h0[32] = "", hi[32] = "";
        EXPECT(step_hash(0, same_at, h0, sizeof h0) && step_hash(i, same_at, hi, sizeof hi));
        if (strcmp(h0, hi) != 0)
            fprintf(stderr, "[test] peer %d holds state %s at step %d, peer 0 %s\n", i, hi, same_at,
                    h0);
        EXPECT(strcmp(h0, hi) == 0);
    }
    cleanup(n);
    return s_fail == 0 ? 0 : 1;
}

static int run_agree(const prog_t *pg, double deadline, double stop_after)
{
    return run_agree_n(pg, 3, deadline, stop_after, 0);
}

static int scenario_straggler(void)
{
    prog_t pg = {.steps = 300,
                 .sleep_ms = 30,
                 .marks = true,
                 .stop_rank = 2,
                 .stop_step = 15,
                 .bend_rank = -1};
    return run_agree(&pg, 80.0, 6.0);
}

/* Two peers of one host: the per-step counter all-reduce runs on the
   same-host fast path (docs/collectives.md §5).  Rank 1 stops itself at
   step 15 for 6 s; rank 0 goes on alone, and rank 1 is re-admitted at a
   step boundary (as a joiner is) and resynced while fast all-reduces
   run: both end bitwise equal. */
static int scenario_fast_readmit(void)
{
    setenv("COLLAB_SHM", "auto", 1);
    prog_t pg = {.steps = 300,
                 .sleep_ms = 30,
                 .marks = false,
                 .stop_rank = 1,
                 .stop_step = 15,
                 .bend_rank = -1,
                 .fast = true};
    return run_agree_n(&pg, 2, 80.0, 6.0, 0);
}

/* Rank 1 changes its parameters at step 30; the check at step 64 finds
   it and resyncs it. */
static int scenario_diverge(void)
{
    prog_t pg = {.steps = 110,
                 .sleep_ms = 20,
                 .marks = false,
                 .stop_rank = -1,
                 .bend_rank = 1,
                 .bend_step = 30,
                 .hashes = true};
    /* The check runs every 64 steps (docs/state-sync.md §3), on the fast
       path too: rank 1 is resynced before step 78. */
    return run_agree_n(&pg, 3, 60.0, 0, 78);
}

/* Ranks 3 and 4 of 5 change their parameters alike at step 30; the check
   at step 64 takes them out of the group to be resynced (the other three
   are a majority; ranks 0 to 2 wait 1 s at the top of step 64 for its
   verdict), and ranks 0 to 2 finish with step 64 (and leave 1 s later),
   before the two are re-admitted.  Nobody
   is left in the group to admit them: the two go on as a group of two
   (they end bitwise equal) instead of waiting out the admission's limit
   and failing (attack_sync_liar, when its trainers ended while the
   liar and the joiner were out of the group). */
static int scenario_diverge_end(bool kill)
{
    prog_t pg = {.steps = 160,
                 .sleep_ms = 20,
                 .stop_rank = -1,
                 .bend_rank = 3,
                 .bend_rank2 = 4,
                 .bend_step = 30,
                 .short_steps = 65,
                 .short_below = 3,
                 .short_kill = kill,
                 .logs = true};
    const int n = 5;
    out_t o[MAXP];
    if (!kill) {
        if (run_peers(&pg, n, 90.0, 0, o)) {
            EXPECT(strcmp(o[1].checksum, o[0].checksum) == 0);
            EXPECT(strcmp(o[2].checksum, o[0].checksum) == 0);
            EXPECT(strcmp(o[4].checksum, o[3].checksum) == 0);
        }
    } else {
        /* Ranks 0 to 2 SIGKILLed: the two out of the group find them
           failed (COLLAB_TIMEOUT 2 s) instead of reading a GOODBYE. */
        prepare(n);
        pid_t pids[MAXP];
        for (int i = 0; i < n; i++)
            pids[i] = spawn(i, n, n, &pg);
        EXPECT(wait_all(pids, n, 90.0, -1) == 0);
        bool have = read_out(3, &o[3]) && read_out(4, &o[4]);
        EXPECT(have);
        if (have) {
            EXPECT(o[3].bad == 0 && o[4].bad == 0);
            EXPECT(strcmp(o[4].checksum, o[3].checksum) == 0);
        }
    }
    /* Rank 3, the lowest live rank, coordinated: it formed the group
       again (without that the two would have waited out the admission's
       limit, or been admitted by ranks 0 to 2 while they still ran,
       and this test would not test the regroup). */
    char log[512];
    snprintf(log, sizeof log, "%s/log3", s_dir);
    EXPECT(test_peers_file_holds(log, "forms the group again"));
    for (int i = 0; s_fail != 0 && i < n; i++) { /* the peers logged to files */
        snprintf(log, sizeof log, "%s/log%d", s_dir, i);
        test_peers_show_file(log);
    }
    cleanup(n);
    return s_fail == 0 ? 0 : 1;
}

/* Admissions while all-reduces run in several groups: each peer admitted
   late starts bitwise equal to the admitter (rank 0) at its first step. */
static int scenario_join_groups(void)
{
    prog_t pg = {.steps = 150, .sleep_ms = 20, .stop_rank = -1, .bend_rank = -1, .hashes = true};
    setenv("COLLAB_TARGET_GROUP", "2", 1);
    out_t o[4];
    bool have = three_then_joiner(&pg, o); /* the group closes at 2; the third is admitted */
    int late = 0;
    for (int i = 0; have && i < 4; i++) {
        EXPECT(o[i].bad == 0);
        EXPECT(o[i].seed == o[0].seed);
        for (int k = 0; k < 4; k++)
            EXPECT(o[i].all[k] == o[0].all[k]);
        if (o[i].first == 0)
            continue;
        late++;
        EXPECT(i != 0);
        EXPECT(o[i].first < pg.steps);
        /* The admitter alone served it: rank 0's scratch, not dropped. */
        EXPECT(strcmp(o[i].scratch, "0000") == 0);
        char mine[32] = "", donor[32] = "";
        EXPECT(step_hash(i, o[i].first, mine, sizeof mine));
        EXPECT(step_hash(0, o[i].first, donor, sizeof donor));
        EXPECT(strcmp(mine, donor) == 0);
        fprintf(stderr, "[test] rank %d started at step %d with state %s; rank 0 held %s there\n",
                i, o[i].first, mine, donor);
    }
    /* The group closed at 2 of the 3 first peers: the third and the 4th
       were admitted. */
    EXPECT(late == 2);
    cleanup(4);
    return s_fail == 0 ? 0 : 1;
}

/* Waits until peer i has written the top of step `step` to steps<i>. */
static bool wait_step(int i, int step, double seconds)
{
    char path[512], want[32], line[128];
    snprintf(path, sizeof path, "%s/steps%d", s_dir, i);
    snprintf(want, sizeof want, "step %d ", step);
    for (int waited = 0; waited < (int)(seconds * 20); waited++) {
        FILE *f = fopen(path, "r");
        bool found = false;
        while (f != NULL && !found && fgets(line, sizeof line, f) != NULL)
            found = strncmp(line, want, strlen(want)) == 0;
        if (f != NULL)
            fclose(f);
        if (found)
            return true;
        nap(50);
    }
    return false;
}

/* COLLAB_RANK_REQUIRED (docs/config.md): peers 0..2 of a world of 4 train
   (rank 3 is free); peer 3, requiring rank 1, starts once step 5 is under
   way, while rank 1's peer is alive.  It waits as a standby (without the requirement it
   would take rank 3).  Rank 1 stops itself at step 200 and is killed;
   once the swarm takes it out, peer 3 is admitted with rank 1, starts at
   the swarm's step, and the three peers that finish agree bitwise. */
static int scenario_rank_required(void)
{
    prog_t pg = {.steps = 400,
                 .sleep_ms = 20,
                 .marks = true,
                 .stop_rank = 1,
                 .stop_step = 200,
                 .bend_rank = -1,
                 .hashes = true};
    prepare(4);
    pid_t pids[4];
    for (int i = 0; i < 3; i++)
        pids[i] = spawn(i, 4, 3, &pg);
    EXPECT(wait_step(0, 5, 60.0)); /* rank 1's peer trains */
    char log[512];
    snprintf(log, sizeof log, "%s/log3", s_dir);
    unlink(log);
    pids[3] = fork();
    if (pids[3] < 0) {
        perror("fork");
        exit(3);
    }
    if (pids[3] == 0) {
        child_env(3, 4, 3);
        setenv("COLLAB_RANK", "1", 1);
        setenv("COLLAB_RANK_REQUIRED", "1", 1);
        setenv("COLLAB_LOG_FILE", log, 1);
        int rc = program(3, &pg);
        fflush(stdout);
        fflush(stderr);
        _exit(rc);
    }
    int bad = wait_all(pids, 4, 80.0, -1);
    EXPECT(bad == 0);
    EXPECT(test_peers_file_holds(
        log, "rank 1, which this peer requires (COLLAB_RANK_REQUIRED=1), is held"));
    out_t o[4];
    bool have = read_out(0, &o[0]) && read_out(2, &o[2]) && read_out(3, &o[3]);
    EXPECT(have);
    if (have) {
        EXPECT(o[3].rank == 1);
        EXPECT(o[3].first > pg.stop_step && o[3].first < pg.steps);
        for (int i = 0; i < 4; i++)
            if (i != 1) {
                EXPECT(o[i].bad == 0);
                EXPECT(strcmp(o[i].checksum, o[0].checksum) == 0);
            }
        fprintf(stderr, "[test] the peer requiring rank 1 got it at step %d\n", o[3].first);
    }
    unlink(log);
    cleanup(4);
    return s_fail == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    s_scenario = argc > 1 ? argv[1] : "join_marks";
    if (strcmp(s_scenario, "join_marks") == 0)
        return scenario_join(true, NULL);
    if (strcmp(s_scenario, "join_config") == 0)
        return scenario_join(false, "2");
    if (strcmp(s_scenario, "join_learned") == 0)
        return scenario_join(false, NULL);
    if (strcmp(s_scenario, "straggler") == 0)
        return scenario_straggler();
    if (strcmp(s_scenario, "diverge_end") == 0)
        return scenario_diverge_end(false);
    if (strcmp(s_scenario, "diverge_kill") == 0)
        return scenario_diverge_end(true);
    if (strcmp(s_scenario, "diverge") == 0)
        return scenario_diverge();
    if (strcmp(s_scenario, "join_groups") == 0)
        return scenario_join_groups();
    if (strcmp(s_scenario, "rank_required") == 0)
        return scenario_rank_required();
    if (strcmp(s_scenario, "fast_readmit") == 0)
        return scenario_fast_readmit();
    fprintf(stderr, "usage: test_elastic join_marks|join_config|join_learned|straggler|diverge|"
                    "join_groups|rank_required|fast_readmit|diverge_end|diverge_kill\n");
    return 2;
}
