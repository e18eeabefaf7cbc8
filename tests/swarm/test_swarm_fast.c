/*  test_swarm_fast.c - scenarios "fast_bits", "fast_kill", "fast_stop"
    and "engine_stop" of test_swarm: small collectives of two peers of one
    host done by the calling thread (src/engine/cl_fast.c,
    docs/collectives.md §5), and the same stop on the engine path.

    fast_bits  2 peers.  On the world and on a duplicate of it, thousands
               of small all-reduces (float and double SUM with values of
               very different magnitudes, int MIN and BXOR, in place),
               broadcasts from either rank and barriers.  Every
               blocking result equals, bit for bit, the result of the
               same call made nonblocking (which always takes the engine
               path) and the sum computed here in rank order; most
               blocking calls took the fast path.  Then big all-reduces
               (16 KiB to 2 MiB, odd counts, in place; double, float
               and int32 SUM, MIN, MAX, PROD over NaNs of different
               payloads, signed zeros and magnitudes 2^-20 .. 2^20) on
               the duplicate: each blocking result (fast path, in
               chunks) equals bit for bit the same call made nonblocking
               (the butterfly); a loop of 1 MiB float sums on the world
               equals the sum in rank order; then reductions to a root
               and broadcasts from either root, small and big, each equal
               bit for bit to the same call made nonblocking, a
               reduction leaving the other rank's receive buffer
               untouched; most took the fast path.
    fast_kill  2 peers; rank 1 SIGKILLs itself from a second thread in the
               middle of a run of fast all-reduces.  Rank 0 finishes
               every call without hanging, each result with both inputs
               or with its own alone (counted as the mean, DESIGN §2).
    fast_stop  2 peers; rank 1 SIGSTOPs itself the same way; a helper
               process continues it once rank 0 left a marker (40 calls
               completed alone over 1.5 s at least; COLLAB_TIMEOUT is
               2 s; 30 s bound on each wait, past which the test fails).
               Both finish their loops without hanging; every result of
               either holds both inputs or one alone (a re-admitted
               straggler's first step back weighs 0), and every sequence
               that either completed on the fast path both completed
               there with the same result: the victim never completes a
               fast call with inputs the other abandoned.
    fast_big_kill, fast_big_stop  the same with all-reduces of 2 MiB
               (the big fast path, 32 chunks per call), the signal
               raised once 150 calls ran on the fast path, so that it
               lands mid-transfer, the victim continued the same way;
               loops 4 s longer:
               every result whole in all its elements, and for
               fast_big_stop every sequence completed on the fast path
               by either was completed there by both with the same bits.
    Inputs of all five harm scenarios change with the call: each rank's
    call index stands in a field of its own of every element, so that a
    result names the calls whose inputs it holds.  Each result holds this
    call's own input (or none: a straggler's step back), the other's from
    a later call than any it held before, and, until the rank first
    completes without both, the other's call of the same index: a result
    left over from an earlier call fails.  Rank 0's loop, time-bound,
    goes on until 3 s after it left its marker at least, so that the
    victim, continued, finds it still calling.
    engine_stop  2 peers, COLLAB_SHM_FAST=0: every all-reduce runs on the
               engine path (the exchange).  Rank 1 stops itself between
               two calls, after 50 ms of "computing", and the helper
               continues it on rank 0's marker; rank 0 meanwhile
               completes the next sequence without it, and its input
               for that sequence waits at rank 1.  Every sequence that
               either completed in a group of two, both completed in
               that group with the same bits:
               the continued rank never folds in an input of a sequence
               that the other completed without it (docs/collectives.md
               §3, "Members that were stopped"); it learns that it was
               taken out and is re-admitted like any straggler.
*/
#include "test_swarm.h"

#include "engine/cl_comm.h"
#include "engine/cl_fast.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NF 16         /* elements per small all-reduce */
#define NB (1u << 18) /* elements (doubles: 2 MiB) of a big all-reduce at most */

static const collab_op_t BXOR = {COLLAB_OP_BXOR, NULL, NULL, 1};
static const collab_op_t PROD = {COLLAB_OP_PROD, NULL, NULL, 1};

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Input element k of rank r at iteration it: magnitudes 2^-30 .. 2^30. */
static double val(int r, int it, int k)
{
    uint64_t h = mix(((uint64_t)r << 40) ^ ((uint64_t)it << 8) ^ (uint64_t)k);
    double m = (double)(h % 1000003) / 1000003.0;
    return ldexp(h & 1 ? -m : m, (int)((h >> 8) % 61) - 30);
}

/* One round of checks on comm c at iteration it; *engine_calls counts the
   nonblocking ones. */
static void bits_round(collab_comm_t *c, int i, int it)
{
    float fin[NF], fout[NF], feng[NF];
    double din[NF], dout[NF], deng[NF];
    int32_t iin[NF], iout[NF], ieng[NF];
    for (int k = 0; k < NF; k++) {
        fin[k] = (float)val(i, it, k);
        din[k] = val(i, it, k + NF);
        iin[k] = (int32_t)mix((uint64_t)(i * 100000 + it * 64 + k));
    }
    collab_request_t *r = NULL;
    /* float SUM: blocking (fast), nonblocking (engine), and by hand. */
    CHECK(collab_allreduce(c, fin, fout, NF, COLLAB_FLOAT, &SUM, NULL) == COLLAB_OK);
    CHECK(collab_allreduce(c, fin, feng, NF, COLLAB_FLOAT, &SUM, &r) == COLLAB_OK);
    CHECK(collab_wait(&r, NULL) == COLLAB_OK);
    CHECK(memcmp(fout, feng, sizeof fout) == 0);
    for (int k = 0; k < NF; k++) {
        float want = (float)val(0, it, k) + (float)val(1, it, k);
        CHECK(memcmp(&fout[k], &want, sizeof want) == 0);
    }
    /* double SUM in place. */
    memcpy(dout, din, sizeof din);
    CHECK(collab_allreduce(c, NULL, dout, NF, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    CHECK(collab_allreduce(c, din, deng, NF, COLLAB_DOUBLE, &SUM, &r) == COLLAB_OK);
    CHECK(collab_wait(&r, NULL) == COLLAB_OK);
    CHECK(memcmp(dout, deng, sizeof dout) == 0);
    for (int k = 0; k < NF; k++) {
        double want = val(0, it, k + NF) + val(1, it, k + NF);
        CHECK(memcmp(&dout[k], &want, sizeof want) == 0);
    }
    /* int MIN and BXOR. */
    CHECK(collab_allreduce(c, iin, iout, NF, COLLAB_INT32, &MIN, NULL) == COLLAB_OK);
    CHECK(collab_allreduce(c, iin, ieng, NF, COLLAB_INT32, &MIN, &r) == COLLAB_OK);
    CHECK(collab_wait(&r, NULL) == COLLAB_OK);
    CHECK(memcmp(iout, ieng, sizeof iout) == 0);
    CHECK(collab_allreduce(c, iin, iout, NF, COLLAB_INT32, &BXOR, NULL) == COLLAB_OK);
    for (int k = 0; k < NF; k++)
        CHECK(iout[k] == ((int32_t)mix((uint64_t)(it * 64 + k)) ^
                          (int32_t)mix((uint64_t)(100000 + it * 64 + k))));
    /* A broadcast of 37 bytes from either rank. */
    uint8_t bb[37], beng[37];
    int root = it % 2;
    for (int k = 0; k < 37; k++)
        bb[k] = i == root ? (uint8_t)mix((uint64_t)(it * 37 + k)) : 0xee;
    memcpy(beng, bb, sizeof bb);
    CHECK(collab_bcast(c, bb, sizeof bb, root, NULL) == COLLAB_OK);
    CHECK(collab_bcast(c, beng, sizeof beng, root, &r) == COLLAB_OK);
    CHECK(collab_wait(&r, NULL) == COLLAB_OK);
    CHECK(memcmp(bb, beng, sizeof bb) == 0);
    for (int k = 0; k < 37; k++)
        CHECK(bb[k] == (uint8_t)mix((uint64_t)(it * 37 + k)));
    CHECK(collab_barrier(c, NULL) == COLLAB_OK);
}

/* Member r's big input of round it: NaNs whose payload names the member,
   signed zeros in both orders, and magnitudes where rounding shows. */
static void big_input(int r, int it, collab_dtype_t t, void *buf, size_t count)
{
    for (size_t k = 0; k < count; k++) {
        uint64_t h = mix(((uint64_t)r << 50) ^ ((uint64_t)it << 32) ^ k);
        double v = ldexp((double)(h % 2001) - 1000.0, (int)((h >> 12) % 41) - 20);
        unsigned sel = (unsigned)((h >> 20) % 8);
        if (sel == 0)
            v = r == 0 ? nan("1") : nan("2");
        else if (sel == 1 || sel == 2)
            v = (r == 0) == (sel == 1) ? 0.0 : -0.0;
        if (t == COLLAB_DOUBLE)
            ((double *)buf)[k] = v;
        else if (t == COLLAB_FLOAT)
            ((float *)buf)[k] = (float)v;
        else
            ((int32_t *)buf)[k] = (int32_t)(h >> 3);
    }
}

/* One big all-reduce on comm c: blocking (the fast path in chunks) and
   nonblocking (the butterfly), compared bit for bit; *fast counts the
   blocking ones that took the fast path. */
static void big_round(collab_comm_t *c, int i, int it, void *x, void *y, void *e, int *fast)
{
    static const size_t counts[4] = {2049, 65536 + 3, 131072, NB - 5};
    static const collab_dtype_t types[3] = {COLLAB_DOUBLE, COLLAB_FLOAT, COLLAB_INT32};
    static const collab_op_t *ops[4] = {&SUM, &MIN, &MAX, &PROD};
    collab_dtype_t t = types[it % 3];
    const collab_op_t *op = ops[(it / 3) % 4];
    size_t n = counts[it % 4], bytes = n * collab_dtype_extent(t);
    big_input(i, it, t, x, n);
    uint64_t f0 = test_fast_done(c);
    if (it % 5 == 4) { /* in place */
        memcpy(y, x, bytes);
        CHECK(collab_allreduce(c, NULL, y, n, t, op, NULL) == COLLAB_OK);
    } else {
        CHECK(collab_allreduce(c, x, y, n, t, op, NULL) == COLLAB_OK);
    }
    *fast += test_fast_done(c) != f0;
    collab_request_t *r = NULL;
    CHECK(collab_allreduce(c, x, e, n, t, op, &r) == COLLAB_OK);
    CHECK(collab_wait(&r, NULL) == COLLAB_OK);
    if (memcmp(y, e, bytes) != 0) {
        size_t k = 0;
        while (k < bytes && ((uint8_t *)y)[k] == ((uint8_t *)e)[k])
            k++;
        fprintf(stderr, "[test] big round %d (type %d, op %d, %zu elements): byte %zu differs\n",
                it, (int)t, (int)op->kind, n, k);
        CHECK(false);
    }
}

/* One reduction to a root or broadcast on comm c, small or big, from
   either root: blocking (the fast path) and nonblocking (the engine
   path), compared bit for bit at the root (a reduction) or everywhere
   (a broadcast); a reduction leaves the other rank's receive buffer
   untouched.  *fast counts the blocking ones that took the fast path. */
static void rooted_round(collab_comm_t *c, int i, int it, void *x, void *y, void *e, int *fast)
{
    static const size_t counts[5] = {5, 2048, 2049, 65536 + 3, NB - 5};
    static const collab_dtype_t types[3] = {COLLAB_DOUBLE, COLLAB_FLOAT, COLLAB_INT32};
    static const collab_op_t *ops[4] = {&SUM, &MIN, &MAX, &PROD};
    collab_dtype_t t = types[it % 3];
    const collab_op_t *op = ops[(it / 3) % 4];
    int root = (it / 2) % 2;
    size_t n = counts[(it / 4) % 5], bytes = n * collab_dtype_extent(t);
    big_input(i, it, t, x, n);
    uint64_t f0 = test_fast_done(c);
    collab_request_t *r = NULL;
    if (it % 2 == 0) { /* a reduction, in place at the root now and then */
        memset(y, 0xa5, bytes);
        if (i == root && it % 3 == 0) {
            memcpy(y, x, bytes);
            CHECK(collab_reduce(c, NULL, y, n, t, op, root, NULL) == COLLAB_OK);
        } else {
            CHECK(collab_reduce(c, x, y, n, t, op, root, NULL) == COLLAB_OK);
        }
        *fast += test_fast_done(c) != f0;
        CHECK(collab_reduce(c, x, e, n, t, op, root, &r) == COLLAB_OK);
        CHECK(collab_wait(&r, NULL) == COLLAB_OK);
        size_t bad = 0;
        for (size_t k = 0; k < bytes; k++)
            bad += ((uint8_t *)y)[k] != (i == root ? ((uint8_t *)e)[k] : 0xa5);
        if (bad != 0)
            fprintf(stderr, "[test] reduce %d (root %d, type %d, op %d, %zu elements): %zu bytes "
                            "differ\n", it, root, (int)t, (int)op->kind, n, bad);
        CHECK(bad == 0);
    } else { /* a broadcast of the root's bytes */
        if (i != root)
            memset(x, 0xee, bytes);
        memcpy(y, x, bytes);
        memcpy(e, x, bytes);
        CHECK(collab_bcast(c, y, bytes, root, NULL) == COLLAB_OK);
        *fast += test_fast_done(c) != f0;
        CHECK(collab_bcast(c, e, bytes, root, &r) == COLLAB_OK);
        CHECK(collab_wait(&r, NULL) == COLLAB_OK);
        big_input(root, it, t, x, n); /* the root's bytes, here too */
        CHECK(memcmp(y, e, bytes) == 0 && memcmp(y, x, bytes) == 0);
    }
}

int child_fast_bits(int i, int n)
{
    (void)n;
    setenv("COLLAB_SHM", "auto", 1);
    if (collab_init(NULL) != COLLAB_OK)
        return 2;
    collab_comm_t *w = collab_comm_world(), *d = NULL;
    CHECK(collab_comm_dup(w, &d) == COLLAB_OK && d != NULL);
    const int iters = 400;
    for (int it = 0; it < iters; it++) {
        bits_round(w, i, it);
        bits_round(d, i, it + iters);
    }
    /* A plain loop on the world, as a training step would run it. */
    float fin[NF], fout[NF];
    for (int it = 0; it < 3000; it++) {
        for (int k = 0; k < NF; k++)
            fin[k] = (float)val(i, it, k);
        CHECK(collab_allreduce(w, fin, fout, NF, COLLAB_FLOAT, &SUM, NULL) == COLLAB_OK);
        for (int k = 0; k < NF; k++) {
            float want = (float)val(0, it, k) + (float)val(1, it, k);
            CHECK(memcmp(&fout[k], &want, sizeof want) == 0);
        }
    }
    /* Big all-reduces of every kind on the duplicate (the world's
       stream would stop being periodic: no fast path there meanwhile). */
    void *x = malloc(NB * 8), *y = malloc(NB * 8), *e = malloc(NB * 8);
    CHECK(x != NULL && y != NULL && e != NULL);
    int bigfast = 0, wfast = 0;
    const int bigs = 96, wbigs = 60;
    for (int it = 0; it < bigs && x != NULL && y != NULL && e != NULL; it++)
        big_round(d, i, it, x, y, e, &bigfast);
    /* Reductions to a root and broadcasts, small and big, on the
       duplicate. */
    int rfast = 0;
    const int rooted = 80;
    for (int it = 0; it < rooted && x != NULL && y != NULL && e != NULL; it++)
        rooted_round(d, i, it, x, y, e, &rfast);
    /* A training loop of 1 MiB float sums on the world: the sum in rank
       order, element by element. */
    for (int it = 0; it < wbigs && x != NULL && y != NULL; it++) {
        const size_t nb = 1u << 18;
        float *fx = x, *fy = y;
        for (size_t k = 0; k < nb; k++)
            fx[k] = (float)val(i, it, (int)(k % 4099));
        uint64_t f0 = test_fast_done(w);
        CHECK(collab_allreduce(w, fx, fy, nb, COLLAB_FLOAT, &SUM, NULL) == COLLAB_OK);
        wfast += test_fast_done(w) != f0;
        int bad = 0;
        for (size_t k = 0; k < nb; k++) {
            float want = (float)val(0, it, (int)(k % 4099)) + (float)val(1, it, (int)(k % 4099));
            bad += memcmp(&fy[k], &want, sizeof want) != 0;
        }
        CHECK(bad == 0);
    }
    free(x);
    free(y);
    free(e);
    fprintf(stderr,
            "[test] rank %d: big all-reduces on the fast path: %d of %d on the duplicate, "
            "%d of %d on the world; reductions to a root and broadcasts: %d of %d\n",
            i, bigfast, bigs, wfast, wbigs, rfast, rooted);
    /* Under load a call now and then comes before the engine granted the
       path again after a nonblocking one (5 busy runs: 70 of 80 at least). */
    CHECK(bigfast >= bigs * 9 / 10 && wfast >= wbigs / 2 && rfast >= rooted / 2);
    collab_info_t info;
    CHECK(collab_last_info(&info) == COLLAB_OK && info.group_size == 2);
    uint64_t fw = test_fast_done(w), fd = test_fast_done(d);
    fprintf(stderr, "[test] rank %d: fast path: %llu calls on the world, %llu on its duplicate\n",
            i, (unsigned long long)fw, (unsigned long long)fd);
    /* Blocking calls are 6 of the 10 per round, plus the loop's 3000. */
    CHECK(fw >= 2000 && fd >= (uint64_t)iters);
    CHECK(collab_comm_free(&d) == COLLAB_OK);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

/* fast_kill and fast_stop: a thread harms this process after `delay_us`. */
static atomic_int s_harm_sig;
static collab_comm_t *s_harm_comm; /* big: harm once this many fast calls ran here */
static uint64_t s_harm_after;
static void *harm_soon(void *arg)
{
    usleep((useconds_t)(intptr_t)arg);
    /* Big: the first calls run on the engine path (slowly on a loaded
       machine) until the step is learned; harm amid fast ones. */
    for (int k = 0; s_harm_comm != NULL && k < 8000 && test_fast_done(s_harm_comm) < s_harm_after; k++)
        usleep(1000);
    raise(atomic_load(&s_harm_sig));
    return NULL;
}

/* fast_stop, fast_big_stop, engine_stop: rank 0 leaves marker
   ALONE_MARK_NAME once it has completed ALONE_MARK calls without the
   stopped rank, over ALONE_MARK_S seconds at least; the helper continues
   the victim then (the other has gone on alone for a while, and is still
   calling), or fails after ALONE_WAIT_S seconds. */
#define ALONE_MARK 40
#define ALONE_MARK_S 1.5
#define ALONE_MARK_NAME "fast_alone"
#define ALONE_WAIT_S 30.0

/* Element k of rank r's input at its call `it`: the call index in a field
   of its own (rank 0's times 2^6, rank 1's times 2^30) above a small base,
   so that every sum of two inputs, and every input counted twice, is an
   exact integer that names the calls it came from.  A result left over
   from an earlier call names an earlier index. */
#define IN_W0 64.0             /* 2^6 */
#define IN_W1 1073741824.0     /* 2^30 */
#define IN_MAX_CALLS (1 << 22) /* sums stay exact below 2^53 */
static double in_base(int r, int k)
{
    return r == 0 ? (double)(1 + k % 5) : (double)(10 + k % 7);
}
static double input(int r, int it, int k)
{
    return (double)(it + 1) * (r == 0 ? IN_W0 : IN_W1) + in_base(r, k);
}

/* What a result element holds: the call index of either rank's input,
   -1 where that rank's input is absent (the other's counted twice: the
   absent rank as the mean; a re-admitted straggler's first step back
   weighs 0). */
typedef struct {
    int64_t it[2];
} held_t;

/* Decodes y (element k); false where it is no valid result. */
static bool decode(double y, int k, held_t *h)
{
    if (!(y >= 0 && y < 9007199254740992.0) || y != floor(y))
        return false;
    double q1 = floor(y / IN_W1), rem = y - q1 * IN_W1;
    double q0 = floor(rem / IN_W0), b = rem - q0 * IN_W0;
    if (q0 > 0 && q1 > 0 && b == in_base(0, k) + in_base(1, k)) {
        h->it[0] = (int64_t)q0 - 1;
        h->it[1] = (int64_t)q1 - 1;
        return true;
    }
    int r = q1 == 0 ? 0 : q0 == 0 ? 1 : -1;
    double q = r == 0 ? q0 : q1;
    if (r < 0 || q == 0 || fmod(q, 2) != 0 || b != 2 * in_base(r, k))
        return false;
    h->it[r] = (int64_t)q / 2 - 1;
    h->it[1 - r] = -1;
    return true;
}

typedef struct {
    uint64_t seq;
    double y0;
    uint64_t h; /* a hash of every element of the result */
    int fast;   /* the call took the fast path */
    int group;
} rec_t;

static int rec_cmp(const void *a, const void *b)
{
    const rec_t *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* fast_stop: rank 1 leaves the sequence numbers and results of its calls
   in a file; rank 0 compares them with its own: a sequence both completed
   has the same result on both. */
static void cross_check(int i, rec_t *rec, size_t n, bool engine, size_t min_common)
{
    char path[600];
    snprintf(path, sizeof path, "%s/fastseq", s_dir);
    if (i == 1) {
        test_write_records(path, rec, sizeof *rec, n);
        return;
    }
    size_t m;
    rec_t *o = test_read_records(path, sizeof *o, &m);
    if (o == NULL)
        return;
    qsort(rec, n, sizeof *rec, rec_cmp);
    qsort(o, m, sizeof *o, rec_cmp);
    size_t a = 0, b = 0, common = 0, fast = 0, differ = 0;
    while (a < n && b < m) {
        if (rec[a].seq < o[b].seq) {
            a++;
        } else if (rec[a].seq > o[b].seq) {
            b++;
        } else {
            common++;
            /* A sequence that either completed on the fast path was
               completed there by both, with the same bits.  On the
               engine path, one that either completed in a group was
               completed in that group by both, with the same bits. */
            if (engine ? (rec[a].group > 1 || o[b].group > 1) : (rec[a].fast || o[b].fast)) {
                fast++;
                if ((!engine && (!rec[a].fast || !o[b].fast)) ||
                    (engine && rec[a].group != o[b].group) ||
                    memcmp(&rec[a].y0, &o[b].y0, sizeof(double)) != 0 || rec[a].h != o[b].h) {
                    if (differ++ < 5)
                        fprintf(stderr,
                                "[test] sequence %llu: %g here (fast %d, group %d), %g at rank 1 "
                                "(fast %d, group %d)\n",
                                (unsigned long long)rec[a].seq, rec[a].y0, rec[a].fast,
                                rec[a].group, o[b].y0, o[b].fast, o[b].group);
                }
            }
            a++;
            b++;
        }
    }
    fprintf(stderr, "[test] %zu sequences completed by both, %zu of them %s, %zu of those differ\n",
            common, fast, engine ? "in a group" : "on the fast path", differ);
    CHECK(fast > min_common && differ == 0);
    free(o);
}

/* nel: elements per all-reduce (NF small, NB big). */
static int harm_loop(int i, int sig, bool engine, size_t nel)
{
    const bool big = nel > NF;
    setenv("COLLAB_SHM", "auto", 1);
    if (engine)
        setenv("COLLAB_SHM_FAST", "0", 1);
    if (collab_init(NULL) != COLLAB_OK)
        return 2;
    collab_comm_t *w = collab_comm_world();
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    pid_t helper = -1;
    if (i == 1 && sig == SIGSTOP)
        helper = test_fork_cont_on_mark(ALONE_MARK_NAME, ALONE_WAIT_S, ALONE_WAIT_S);
    pthread_t t;
    bool stop_between = false; /* engine_stop: the victim stops itself between calls */
    if (i == 1 && engine) {
        stop_between = true;
    } else if (i == 1) {
        atomic_store(&s_harm_sig, sig);
        /* Big: once 150 calls ran on the fast path here (the step is
           learned after some 2 MiB calls on the engine path), amid calls
           that spend their time in the transfer. */
        s_harm_comm = big ? w : NULL;
        s_harm_after = 150;
        CHECK(pthread_create(&t, NULL, harm_soon, (void *)(intptr_t)(big ? 0 : 300000)) == 0);
    }
    /* Time-bound, so that the victim, continued, finds the other still
       calling. */
    double t0 = now_s(), slowest = 0;
    int it = 0, alone = 0, both_n = 0;
    size_t nrec = 0, caprec = 1 << 16;
    rec_t *rec = malloc(caprec * sizeof *rec);
    double *x = malloc(nel * sizeof *x), *y = malloc(nel * sizeof *y);
    CHECK(rec != NULL && x != NULL && y != NULL);
    uint64_t fast0 = 0;
    int64_t last_theirs = -1; /* the other's latest call held in a result */
    bool lined_up = true;     /* every result so far held both, of one index */
    int wrong = 0;
    test_count_mark_t alone_mark = {
        .name = ALONE_MARK_NAME, .need = ALONE_MARK, .min_s = ALONE_MARK_S};
    const bool mark_alone = i == 0 && sig == SIGSTOP;
    const double dur = (sig == SIGSTOP ? 12.0 : 4.0) + (big ? 4.0 : 0.0);
    while (now_s() - t0 < dur ||
           (mark_alone && (alone_mark.marked ? now_s() < alone_mark.at + 3
                                             : now_s() - t0 < dur + ALONE_WAIT_S))) {
        if (stop_between && now_s() - t0 >= 0.3) {
            /* A trainer is mostly stopped while it computes: after 50 ms
               of "computing" (its messages of the last call long out),
               the rank stops between two calls; the helper continues it
               on rank 0's marker.  The other rank meanwhile completes the next call
               without it, and its input for that call waits here. */
            stop_between = false;
            usleep(50000);
            raise(SIGSTOP);
        }
        CHECK(it < IN_MAX_CALLS);
        for (size_t k = 0; k < nel; k++)
            x[k] = input(i, it, (int)(k % 35));
        double c0 = now_s();
        uint64_t f0 = test_fast_done(w);
        CHECK(collab_allreduce(w, x, y, nel, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
        int was_fast = test_fast_done(w) != f0;
        double dt = now_s() - c0;
        slowest = dt > slowest ? dt : slowest;
        /* Whole, and one call's elements all hold the same calls' inputs. */
        held_t held = {{-2, -2}}, e;
        uint64_t h = 0;
        int bad = 0;
        for (size_t k = 0; k < nel; k++) {
            bool ok = decode(y[k], (int)(k % 35), &e);
            if (ok && k == 0)
                held = e;
            bad += !ok || e.it[0] != held.it[0] || e.it[1] != held.it[1];
            uint64_t b;
            memcpy(&b, &y[k], 8);
            h = mix(h ^ b);
        }
        /* This call's result: its own input is this call's (or absent, a
           straggler's step back); the other's input, where present, is
           from a call later than any it held before, and the very call of
           the same index until this rank first completed without both. */
        const int64_t mine = held.it[i], theirs = held.it[1 - i];
        bool all_both = bad == 0 && mine >= 0 && theirs >= 0;
        bool right = bad == 0 && (mine == it || mine == -1) && (mine >= 0 || theirs >= 0) &&
                     (theirs == -1 || theirs > last_theirs) &&
                     (!lined_up || !all_both || theirs == it);
        if (!right && wrong++ < 5)
            fprintf(stderr,
                    "[test] rank %d call %d: %s (own input of call %lld, other's of call %lld, "
                    "the other's last %lld)\n",
                    i, it, bad != 0 ? "not a valid sum" : "wrong calls", (long long)mine,
                    (long long)theirs, (long long)last_theirs);
        if (theirs >= 0)
            last_theirs = theirs;
        lined_up = lined_up && all_both;
        bad += !right;
        if (mark_alone) /* tell the helper once this rank went on alone */
            test_count_mark(&alone_mark, !all_both);
        CHECK(bad == 0);
        both_n += all_both;
        alone += !all_both;
        collab_info_t info;
        CHECK(collab_last_info(&info) == COLLAB_OK);
        if (nrec == caprec) {
            rec_t *r2 = realloc(rec, 2 * caprec * sizeof *rec);
            CHECK(r2 != NULL);
            if (r2 != NULL)
                rec = r2, caprec *= 2;
        }
        if (nrec < caprec)
            rec[nrec++] = (rec_t){info.sequence, y[0], h, was_fast, info.group_size};
        it++;
    }
    fast0 = test_fast_done(w); /* rank 0: all before the harm (it is alone after) */
    fprintf(stderr,
            "[test] rank %d: %d all-reduces (%d with both, %d alone), slowest %.2f s, "
            "%llu on the fast path\n",
            i, it, both_n, alone, slowest, (unsigned long long)fast0);
    if (!engine)
        CHECK(fast0 >= (big ? 100u : 1000u)); /* the harm came amid fast all-reduces */
    else
        CHECK(fast0 == 0);
    if (i == 0)
        CHECK(alone > 0); /* it went on without the victim */
    CHECK(slowest < 15.0);
    test_reap_cont_helper(helper); /* fails when the stop or the marker did not come */
    CHECK(collab_finalize() == COLLAB_OK);
    if (sig == SIGSTOP)
        cross_check(i, rec, nrec, engine, engine ? 100 : big ? 100 : 1000);
    free(rec);
    free(x);
    free(y);
    return 0;
}

int child_fast_kill(int i, int n)
{
    (void)n;
    return harm_loop(i, SIGKILL, false, NF);
}

int child_fast_big_kill(int i, int n)
{
    (void)n;
    return harm_loop(i, SIGKILL, false, NB);
}

int child_fast_big_stop(int i, int n)
{
    (void)n;
    return harm_loop(i, SIGSTOP, false, NB);
}

int child_fast_stop(int i, int n)
{
    (void)n;
    return harm_loop(i, SIGSTOP, false, NF);
}

int child_engine_stop(int i, int n)
{
    (void)n;
    return harm_loop(i, SIGSTOP, true, NF);
}
