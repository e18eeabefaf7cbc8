/*  cl_fast_mix_test.c - selftest of a group's fast path and engine path
    interleaved at random (cl_fast_agree, cl_fast_agree_post,
    cl_fast_before_engine, docs/collectives.md §5b): four members, each a
    cl_fast_t on its own mapping of one memfd, each with an application
    thread and a fake engine thread running at once.

    The program (the same on every member) is a random list of calls:
    all-reduces (the fast path is tried first), collectives that need
    every member on the engine path, and ones that complete on the engine
    path without the others (a broadcast's root, a reduction's non-root).
    Each fake engine numbers what its program submits, takes the fast
    reports, engages and leaves as cl_engine_fast.c does, is unwilling,
    revokes or lets the grant lapse now and then, and completes an engine
    collective once every member numbered that sequence (a member's
    sequence numbered for another call is a mismatch).

    Checks: every member runs every call under the same sequence number,
    on the same path (fast on all or on none); every fast result is the
    sum of the four inputs; no engine collective waits for ever.
*/
#define _GNU_SOURCE
#include "engine/cl_fast.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cl_fast_fixture.h"
#include "selftest.h"

#define K 4
#define COMM 78u
#define CALLS 1500
#define KIND_FAST 0  /* an all-reduce: the fast path first */
#define KIND_ALL 1   /* engine path, completes with every member */
#define KIND_SOLO 2  /* engine path, completes without the others */
#define BIG 150000   /* elements of a big all-reduce: three chunks */
#define STUCK_S 20.0 /* an engine collective waiting this long: a mismatch */

static int s_kind[CALLS];
static _Atomic int s_posted[2 * CALLS][K]; /* engine path: 1 + the call numbered seq by member j */
static _Atomic int s_stop;
static _Atomic int64_t s_sent[K]; /* the last sequence member j's engine sent messages for */

typedef struct {
    cl_fast_t *f;
    int me;
    unsigned seed;
    _Atomic int pending;    /* submitted and not complete (coll_pending) */
    _Atomic int sub;        /* 1 + the call submitted to the engine, 0: none */
    _Atomic int64_t done;   /* the sequence the engine ran it as, -1 while running */
    _Atomic int app_done;   /* the program ended */
    uint64_t next;          /* the engine's next sequence (engine thread) */
    int64_t seq_of[CALLS];  /* the sequence each call ran as */
    uint8_t fast_of[CALLS]; /* ran on the fast path */
    int wrong;              /* fast results not the sum */
    int32_t x[BIG], y[BIG]; /* the program's buffers */
} member_t;

static member_t s_m[K];

static unsigned rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 16) & 0x7fff;
}

static void nap(unsigned *s)
{
    unsigned r = rnd(s) % 100;
    if (r < 3)
        usleep(2000 + rnd(s) % 3000); /* now and then descheduled */
    else if (r < 20)
        usleep(rnd(s) % 200);
}

/* The engine's reports: every fast sequence, as eng_fast_drain. */
static void drain(member_t *m)
{
    cl_fast_report_t rep[64];
    size_t n;
    while ((n = cl_fast_take(m->f, rep, 64)) > 0)
        for (size_t i = 0; i < n; i++)
            if (rep[i].first + rep[i].n > m->next)
                m->next = rep[i].first + rep[i].n;
}

/* One turn of the engine's grant (update_group), willing most times;
   first the messages of the others' engine paths (eng_fast_on_message:
   one for a sequence not run here yet revokes the grant). */
static void turn(member_t *m, bool idle)
{
    drain(m);
    for (int j = 0; j < K; j++)
        if (j != m->me && cl_fast_granted(m->f) && atomic_load(&s_sent[j]) >= (int64_t)m->next)
            cl_fast_revoke(m->f);
    bool willing = rnd(&m->seed) % 1000 < 995;
    if (!willing && cl_fast_granted(m->f))
        cl_fast_revoke(m->f);
    if (rnd(&m->seed) % 2000 == 0 && cl_fast_granted(m->f))
        cl_fast_lapse(m->f); /* the world's lease */
    (void)cl_fast_agree(m->f, m->next, willing, idle && atomic_load(&m->sub) == 0, &m->pending);
}

static void *engine(void *arg)
{
    member_t *m = arg;
    int call = -1;    /* the call running on the engine path */
    uint64_t seq = 0; /* ... as this sequence */
    double since = 0;
    while (!atomic_load(&s_stop)) {
        if (call < 0 && atomic_load(&m->sub) != 0) {
            call = atomic_load(&m->sub) - 1;
            drain(m); /* before numbering, as submit() */
            seq = m->next++;
            if (seq >= 2 * CALLS) {
                fprintf(stderr, "member %d: call %d numbered #%llu\n", m->me, call,
                        (unsigned long long)seq);
                CHECK(seq < 2 * CALLS);
                atomic_store(&s_stop, 1);
                break;
            }
            (void)cl_fast_agree_post(m->f, seq);
            atomic_store(&s_posted[seq][m->me], call + 1);
            atomic_store(&s_sent[m->me], (int64_t)seq);
            since = now_s();
        }
        if (call >= 0) {
            bool ready = s_kind[call] == KIND_SOLO;
            int same = 0;
            for (int j = 0; !ready && j < K; j++)
                same += atomic_load(&s_posted[seq][j]) == call + 1;
            ready = ready || same == K;
            for (int j = 0; j < K; j++) {
                int o = atomic_load(&s_posted[seq][j]);
                if (o != 0 && o != call + 1) {
                    fprintf(stderr,
                            "member %d: sequence %llu is call %d here, call %d at member %d\n",
                            m->me, (unsigned long long)seq, call, o - 1, j);
                    CHECK(o == call + 1);
                    atomic_store(&s_stop, 1);
                }
            }
            if (!ready && now_s() - since > STUCK_S) {
                fprintf(stderr, "member %d: sequence %llu (call %d) waits for ever\n", m->me,
                        (unsigned long long)seq, call);
                CHECK(ready);
                atomic_store(&s_stop, 1);
            }
            if (ready) {
                /* Completed: granted again before the program is woken. */
                atomic_fetch_sub(&m->pending, 1);
                atomic_store(&m->sub, 0);
                turn(m, true);
                atomic_store(&m->done, (int64_t)seq);
                call = -1;
                continue;
            }
        }
        turn(m, call < 0);
        if (atomic_load(&m->app_done) && call < 0)
            break;
        nap(&m->seed);
    }
    return NULL;
}

static void *program(void *arg)
{
    member_t *m = arg;
    static const collab_op_t sum = {COLLAB_OP_SUM, NULL, NULL, 1};
    for (int i = 0; i < CALLS && !atomic_load(&s_stop); i++) {
        nap(&m->seed);
        if (s_kind[i] == KIND_FAST) {
            size_t n = i % 16 == 5 ? BIG : 5; /* now and then several chunks */
            for (size_t e = 0; e < n; e++)
                m->x[e] = (m->me + 1) * (i + 1) + (int32_t)e;
            if (cl_fast_allreduce(m->f, m->x, m->y, n, COLLAB_INT32, &sum) == 1) {
                m->seq_of[i] = (int64_t)cl_fast_next_seq(m->f) - 1;
                m->fast_of[i] = 1;
                for (size_t e = 0; e < n; e++)
                    m->wrong += m->y[e] != 10 * (i + 1) + K * (int32_t)e;
                continue;
            }
        }
        /* The engine path, as cl_api_run: counted, the grant dropped. */
        atomic_fetch_add(&m->pending, 1);
        cl_fast_before_engine(m->f);
        atomic_store(&m->done, -1);
        atomic_store(&m->sub, i + 1);
        while (atomic_load(&m->done) < 0 && !atomic_load(&s_stop))
            usleep(50);
        m->seq_of[i] = atomic_load(&m->done);
    }
    atomic_store(&m->app_done, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    unsigned seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : (unsigned)time(NULL);
    printf("cl_fast_mix_test: seed %u\n", seed);
    unsigned s = seed;
    for (int i = 0; i < CALLS; i++) {
        unsigned r = rnd(&s) % 100;
        s_kind[i] = r < 92 ? KIND_FAST : r < 96 ? KIND_ALL : KIND_SOLO;
    }
    size_t bytes = cl_fast_group_bytes(K);
    int fd = memfd_create("cl_fast_mix_test", MFD_CLOEXEC);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)bytes) == 0);
    for (int j = 0; j < K; j++) {
        member_t *m = &s_m[j];
        m->me = j;
        m->seed = seed * 7919u + (unsigned)j;
        m->f = cl_fast_new();
        void *a = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        CHECK(m->f != NULL && a != MAP_FAILED);
        CHECK(cl_fast_attach_group(m->f, a, bytes, COMM, j, K, 9));
        for (int i = 0; i < CALLS; i++)
            m->seq_of[i] = -1;
    }
    pthread_t te[K], tp[K];
    for (int j = 0; j < K; j++) {
        pthread_create(&te[j], NULL, engine, &s_m[j]);
        pthread_create(&tp[j], NULL, program, &s_m[j]);
    }
    for (int j = 0; j < K; j++)
        pthread_join(tp[j], NULL);
    atomic_store(&s_stop, 1);
    for (int j = 0; j < K; j++)
        pthread_join(te[j], NULL);
    int fast = 0, bad = 0;
    for (int i = 0; i < CALLS; i++) {
        for (int j = 1; j < K; j++)
            if (s_m[j].seq_of[i] != s_m[0].seq_of[i] || s_m[j].fast_of[i] != s_m[0].fast_of[i]) {
                if (bad++ < 5)
                    fprintf(stderr,
                            "call %d: member 0 ran it as #%lld (%s), member %d as #%lld (%s)\n", i,
                            (long long)s_m[0].seq_of[i], s_m[0].fast_of[i] ? "fast" : "engine", j,
                            (long long)s_m[j].seq_of[i], s_m[j].fast_of[i] ? "fast" : "engine");
            }
        fast += s_m[0].fast_of[i];
    }
    CHECK(bad == 0);
    for (int j = 0; j < K; j++) {
        CHECK(s_m[j].wrong == 0);
        cl_fast_destroy(&s_m[j].f);
    }
    close(fd);
    printf("cl_fast_mix_test: %d of %d calls on the fast path\n", fast, CALLS);
    if (s_failures == 0)
        printf("cl_fast_mix_test: all checks passed\n");
    return s_failures != 0;
}
