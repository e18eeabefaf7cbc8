/*  cl_stream_test.c - selftest of the step learner.

    Synthetic streams: every period 1..50 with every start-up prefix
    0..10 (identical signatures told apart by addresses), layers of one
    size, explicit marks (regular and irregular), a configured number of
    collectives per step, noise in the prefix, glitches after a lock, a
    lasting change of pattern, random streams, start-up phases longer than
    the history, and the log lines each case must (and must not) print.
*/
#include "elastic/cl_stream.h"
#include "mpi_collab.h"
#include "util/cl_selftest.h"

#include "el_testlog.h"

#include <stdint.h>
#include <stdlib.h>

#define NONE CL_STREAM_NONE

/* A start-up entry: unique signature and address. */
static void rec_prefix(cl_stream_t *s, uint64_t k)
{
    cl_stream_record(s, 0x1000u + (uint32_t)k, (void *)(uintptr_t)(0x7000000u + k * 64), NULL);
}

/* Entry j of a step: the same signature for every entry (layers of one
   size), told apart by the buffer addresses. */
static void rec_step(cl_stream_t *s, uint64_t j)
{
    cl_stream_record(s, 42, (void *)(uintptr_t)(0x100000u + j * 0x1000),
                     (void *)(uintptr_t)(0x200000u + j * 0x1000));
}

static uint64_t max_u(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* Every period 1..50 after every prefix 0..10: the lock comes exactly
   when two repetitions confirm it, with the right P and T, boundaries
   exactly at P + m·T, and the ambiguity warning once when 64 collectives
   pass without a lock. */
static void test_sweep(void)
{
    int bad = 0;
    for (uint64_t t = 1; t <= 50; t++) {
        for (uint64_t p = 0; p <= 10; p++) {
            el_log_start(CL_LOG_WARN);
            cl_stream_t *s = cl_stream_new("sweep", 0);
            CL_CHECK(s != NULL);
            uint64_t lock_at = p + max_u(3 * t, CL_STREAM_MIN_CONFIRM);
            uint64_t total = lock_at + 3 * t + 5;
            for (uint64_t i = 0; i < total; i++) {
                if (i < p)
                    rec_prefix(s, i);
                else
                    rec_step(s, (i - p) % t);
                uint64_t c = i + 1;
                cl_stream_state_t want = c >= lock_at                     ? CL_STREAM_LOCKED
                                         : c >= CL_STREAM_AMBIGUOUS_AFTER ? CL_STREAM_AMBIGUOUS
                                                                          : CL_STREAM_LEARNING;
                if (cl_stream_state(s) != want) {
                    if (bad++ < 5)
                        fprintf(stderr, "T=%llu P=%llu count %llu: state %s, expected %s\n",
                                (unsigned long long)t, (unsigned long long)p, (unsigned long long)c,
                                cl_stream_state_name(cl_stream_state(s)),
                                cl_stream_state_name(want));
                }
                if (c < lock_at && cl_stream_next_boundary(s, i) != NONE)
                    bad++;
            }
            CL_CHECK(cl_stream_prefix(s) == p);
            CL_CHECK(cl_stream_period(s) == t);
            CL_CHECK(cl_stream_changes(s) == 0);
            uint64_t n = cl_stream_count(s);
            CL_CHECK(n == total);
            for (uint64_t i = 0; i < n + 2 * t; i++) {
                bool want = i >= p && (i - p) % t == 0;
                uint64_t next = i <= p ? p : p + ((i - p + t - 1) / t) * t;
                if (cl_stream_is_boundary(s, i) != want || cl_stream_next_boundary(s, i) != next) {
                    if (bad++ < 5)
                        fprintf(stderr, "T=%llu P=%llu index %llu: boundary %d next %llu\n",
                                (unsigned long long)t, (unsigned long long)p, (unsigned long long)i,
                                (int)cl_stream_is_boundary(s, i),
                                (unsigned long long)cl_stream_next_boundary(s, i));
                }
            }
            uint32_t sig = 0;
            CL_CHECK(cl_stream_signature(s, 0, &sig) == 0 && sig == (p > 0 ? 0x1000u : 42u));
            CL_CHECK(cl_stream_signature(s, n, &sig) == COLLAB_ERR_ARG);
            cl_stream_destroy(&s);
            CL_CHECK(s == NULL);
            char *log = el_log_take();
            int warnings = el_count(log, "could not learn the training step on sweep");
            CL_CHECK(warnings == (lock_at > CL_STREAM_AMBIGUOUS_AFTER ? 1 : 0));
            CL_CHECK(el_count(log, "COLLAB_COLLECTIVES_PER_STEP") == warnings);
            free(log);
        }
    }
    CL_CHECK(bad == 0);
}

/* Four gradients of one size: addresses make the period 4, not 1.  The
   same buffer reused for every layer does look like period 1. */
static void test_layers(void)
{
    cl_stream_t *s = cl_stream_new("layers", 0);
    cl_stream_record(s, 7, (void *)0x5000, NULL); /* bcast of the parameters */
    static char grads[4][64];
    for (int step = 0; step < 4; step++)
        for (int l = 0; l < 4; l++)
            cl_stream_record(s, 99, grads[l], grads[l]);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_LOCKED);
    CL_CHECK(cl_stream_period(s) == 4);
    CL_CHECK(cl_stream_prefix(s) == 1);
    CL_CHECK(cl_stream_is_boundary(s, 1) && cl_stream_is_boundary(s, 5));
    CL_CHECK(!cl_stream_is_boundary(s, 2) && !cl_stream_is_boundary(s, 4));
    cl_stream_destroy(&s);

    /* Only the second address differs (send buffer shared, outputs apart). */
    s = cl_stream_new("outputs", 0);
    static char out[3][8];
    for (int i = 0; i < 12; i++)
        cl_stream_record(s, 5, (void *)0x9000, out[i % 3]);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_LOCKED && cl_stream_period(s) == 3);
    cl_stream_destroy(&s);

    s = cl_stream_new("reused", 0);
    for (int i = 0; i < 8; i++)
        cl_stream_record(s, 99, grads[0], grads[0]);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_LOCKED && cl_stream_period(s) == 1);
    cl_stream_destroy(&s);
}

/* A pattern like [a a a b] must not lock on period 1 after three entries:
   at least CL_STREAM_MIN_CONFIRM entries confirm a lock. */
static void test_confirm_floor(void)
{
    el_log_start(CL_LOG_WARN);
    cl_stream_t *s = cl_stream_new("floor", 0);
    for (int i = 0; i < 20; i++) {
        cl_stream_record(s, i % 4 == 3 ? 2 : 1, (void *)0x10, NULL);
        if (i < 11)
            CL_CHECK(cl_stream_state(s) == CL_STREAM_LEARNING);
    }
    CL_CHECK(cl_stream_state(s) == CL_STREAM_LOCKED);
    CL_CHECK(cl_stream_period(s) == 4 && cl_stream_prefix(s) == 0);
    CL_CHECK(cl_stream_changes(s) == 0);
    cl_stream_destroy(&s);
    char *log = el_log_take();
    CL_CHECK(log[0] == '\0');
    free(log);
}

/* MPIX_Collab_step: boundaries are exactly the marked collectives, the
   prefix is the index of the first one, and marks win over learning. */
static void test_marks(void)
{
    cl_stream_t *s = cl_stream_new("marked", 0);
    for (int i = 0; i < 3; i++)
        rec_prefix(s, (uint64_t)i);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_LEARNING);
    static const int lens[] = {3, 5, 4, 6, 2, 7};
    uint64_t marks[6];
    int nm = 0;
    uint64_t j = 0;
    for (int k = 0; k < 6; k++) {
        cl_stream_mark_step(s);
        cl_stream_mark_step(s); /* twice without a collective: still one mark */
        for (int i = 0; i < lens[k]; i++) {
            uint64_t idx = cl_stream_record(s, 11, (void *)(uintptr_t)(0x4000 + 64 * j++), NULL);
            if (i == 0)
                marks[nm++] = idx;
        }
        CL_CHECK(cl_stream_state(s) == CL_STREAM_LOCKED);
    }
    CL_CHECK(cl_stream_prefix(s) == 3);
    CL_CHECK(cl_stream_period(s) == 0); /* irregular */
    uint64_t n = cl_stream_count(s);
    int k = 0, bad = 0;
    for (uint64_t i = 0; i < n; i++) {
        bool want = k < nm && marks[k] == i;
        if (want)
            k++;
        if (cl_stream_is_boundary(s, i) != want)
            bad++;
        uint64_t next = k < nm ? marks[k] : NONE;
        if (!want && cl_stream_next_boundary(s, i) != next)
            bad++;
    }
    CL_CHECK(bad == 0);
    CL_CHECK(cl_stream_next_boundary(s, n) == NONE); /* cannot predict irregular steps */
    cl_stream_destroy(&s);

    /* Regular marks every 4: period 4 after three marks, and predicted. */
    s = cl_stream_new("regular", 0);
    rec_prefix(s, 0);
    for (int step = 0; step < 3; step++) {
        cl_stream_mark_step(s);
        for (int i = 0; i < 4; i++)
            cl_stream_record(s, 3, (void *)(uintptr_t)(0x100 * (step * 4 + i + 1)), NULL);
        CL_CHECK(cl_stream_period(s) == (step == 2 ? 4u : 0u));
    }
    CL_CHECK(cl_stream_prefix(s) == 1);
    CL_CHECK(cl_stream_next_boundary(s, 10) == 13);
    CL_CHECK(cl_stream_is_boundary(s, 13) && !cl_stream_is_boundary(s, 14));
    CL_CHECK(cl_stream_next_boundary(s, 14) == 17);
    cl_stream_destroy(&s);

    /* Marks win: a stream locked on period 2 then marked every 4. */
    s = cl_stream_new("win", 0);
    for (int i = 0; i < 8; i++)
        cl_stream_record(s, 1, (void *)(uintptr_t)(i % 2 ? 0x20 : 0x10), NULL);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_LOCKED && cl_stream_period(s) == 2);
    CL_CHECK(cl_stream_is_boundary(s, 10));
    for (int i = 8; i < 20; i++) {
        if (i % 4 == 0)
            cl_stream_mark_step(s);
        cl_stream_record(s, 1, (void *)(uintptr_t)(i % 2 ? 0x20 : 0x10), NULL);
    }
    CL_CHECK(cl_stream_prefix(s) == 0); /* the learned prefix stays */
    CL_CHECK(cl_stream_is_boundary(s, 12) && cl_stream_is_boundary(s, 16));
    CL_CHECK(!cl_stream_is_boundary(s, 10) && !cl_stream_is_boundary(s, 14));
    CL_CHECK(cl_stream_period(s) == 4);
    CL_CHECK(cl_stream_next_boundary(s, 21) == 24);
    cl_stream_destroy(&s);
}

/* COLLAB_COLLECTIVES_PER_STEP: the period is given and buffers may move
   (fresh arrays every step); only the prefix is learned, from signatures. */
static void test_configured(void)
{
    static const uint32_t sigs[3] = {10, 11, 12};
    uintptr_t fresh = 0x800000;

    cl_stream_t *s = cl_stream_new("configured", 3);
    rec_prefix(s, 0);
    rec_prefix(s, 1);
    for (int i = 0; i < 30; i++) {
        cl_stream_record(s, sigs[i % 3], (void *)(fresh += 64), NULL);
        if (i + 3 < 10)
            CL_CHECK(cl_stream_state(s) == CL_STREAM_LEARNING);
    }
    CL_CHECK(cl_stream_state(s) == CL_STREAM_LOCKED);
    CL_CHECK(cl_stream_prefix(s) == 2 && cl_stream_period(s) == 3);
    CL_CHECK(cl_stream_is_boundary(s, 2) && cl_stream_is_boundary(s, 29));
    CL_CHECK(!cl_stream_is_boundary(s, 30));
    cl_stream_destroy(&s);

    /* The same stream without the setting cannot be learned. */
    el_log_start(CL_LOG_WARN);
    s = cl_stream_new("unlearnable", 0);
    rec_prefix(s, 0);
    rec_prefix(s, 1);
    for (int i = 0; i < 200; i++)
        cl_stream_record(s, sigs[i % 3], (void *)(fresh += 64), NULL);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_AMBIGUOUS);
    CL_CHECK(cl_stream_next_boundary(s, 0) == NONE);
    cl_stream_destroy(&s);
    char *log = el_log_take();
    CL_CHECK(el_count(log, "warning: could not learn the training step on unlearnable after 64 "
                           "collectives") == 1);
    CL_CHECK_CONTAINS(log, "set COLLAB_COLLECTIVES_PER_STEP");
    free(log);

    /* A wrong setting: never locks, says so once. */
    el_log_start(CL_LOG_WARN);
    s = cl_stream_new("wrong", 4);
    for (int i = 0; i < 300; i++)
        cl_stream_record(s, sigs[i % 3], (void *)(fresh += 64), NULL);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_AMBIGUOUS);
    cl_stream_destroy(&s);
    log = el_log_take();
    CL_CHECK(el_count(log, "do not repeat every 4 (COLLAB_COLLECTIVES_PER_STEP)") == 1);
    free(log);

    /* A setting longer than the history cannot be checked. */
    el_log_start(CL_LOG_WARN);
    s = cl_stream_new("huge", 5000);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_AMBIGUOUS);
    for (int i = 0; i < 100; i++)
        cl_stream_record(s, 1, NULL, NULL);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_AMBIGUOUS);
    cl_stream_mark_step(s); /* explicit marks still work */
    cl_stream_record(s, 1, NULL, NULL);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_LOCKED && cl_stream_is_boundary(s, 100));
    cl_stream_destroy(&s);
    log = el_log_take();
    CL_CHECK(el_count(log, "COLLAB_COLLECTIVES_PER_STEP=5000 is more than") == 1);
    free(log);

    /* A lasting change under a setting: warned, then lines up again. */
    el_log_start(CL_LOG_WARN);
    s = cl_stream_new("shifted", 3);
    for (int i = 0; i < 20; i++)
        cl_stream_record(s, sigs[i % 3], NULL, NULL);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_LOCKED && cl_stream_prefix(s) == 0);
    cl_stream_record(s, 77, NULL, NULL); /* index 20: an extra collective */
    CL_CHECK(cl_stream_state(s) == CL_STREAM_AMBIGUOUS);
    for (int i = 20; i < 40; i++)
        cl_stream_record(s, sigs[i % 3], NULL, NULL);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_LOCKED);
    CL_CHECK(cl_stream_prefix(s) == 0 && cl_stream_changes(s) == 1);
    /* After the shift, entries 22 + 3m hold sigs[0], the head of a step. */
    CL_CHECK(cl_stream_is_boundary(s, 40) && !cl_stream_is_boundary(s, 39));
    CL_CHECK(cl_stream_next_boundary(s, 41) == 43);
    cl_stream_destroy(&s);
    log = el_log_take();
    CL_CHECK(el_count(log, "collective #20 on shifted does not repeat collective #17") == 1);
    free(log);
}

/* Noise: random start-up collectives, glitches after a lock, random
   streams. */
static void test_noise(void)
{
    srand(12345);
    /* A noisy prefix of 7 random collectives, then period 5. */
    cl_stream_t *s = cl_stream_new("noisy prefix", 0);
    for (int i = 0; i < 7; i++)
        cl_stream_record(s, (uint32_t)rand(), (void *)(uintptr_t)rand(), NULL);
    for (int i = 0; i < 15; i++)
        rec_step(s, (uint64_t)(i % 5));
    CL_CHECK(cl_stream_state(s) == CL_STREAM_LOCKED);
    CL_CHECK(cl_stream_prefix(s) == 7 && cl_stream_period(s) == 5);
    cl_stream_destroy(&s);

    /* A glitch inside a step after the lock: warned once, learned again with
       steps still beginning at their first collective ('a'). */
    el_log_start(CL_LOG_INFO);
    s = cl_stream_new("glitch", 0);
    rec_prefix(s, 0);
    rec_prefix(s, 1);
    static char a[4][16];
    uint64_t i = 2;
    for (int step = 0; step < 6; step++)
        for (int l = 0; l < 4; l++, i++)
            cl_stream_record(s, (uint32_t)(20 + l), a[l], NULL);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_LOCKED && cl_stream_period(s) == 4);
    CL_CHECK(cl_stream_is_boundary(s, 22) && cl_stream_is_boundary(s, 26));
    /* Step 6: a, b, then a stray barrier, then c, d. */
    cl_stream_record(s, 20, a[0], NULL);
    cl_stream_record(s, 21, a[1], NULL);
    uint64_t g = cl_stream_record(s, 1, NULL, NULL);
    CL_CHECK(g == 28);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_AMBIGUOUS);
    CL_CHECK(cl_stream_changes(s) == 1);
    CL_CHECK(cl_stream_next_boundary(s, 29) == NONE);
    cl_stream_record(s, 22, a[2], NULL);
    cl_stream_record(s, 23, a[3], NULL);
    uint64_t first_a = cl_stream_count(s); /* 31 */
    for (int step = 0; step < 4; step++)
        for (int l = 0; l < 4; l++)
            cl_stream_record(s, (uint32_t)(20 + l), a[l], NULL);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_LOCKED && cl_stream_period(s) == 4);
    CL_CHECK(cl_stream_prefix(s) == 2);
    CL_CHECK(cl_stream_is_boundary(s, first_a + 12) && cl_stream_is_boundary(s, first_a + 16));
    CL_CHECK(!cl_stream_is_boundary(s, first_a + 13));
    /* A second glitch: no second warning. */
    cl_stream_record(s, 1, NULL, NULL);
    CL_CHECK(cl_stream_changes(s) == 2 && cl_stream_state(s) == CL_STREAM_AMBIGUOUS);
    for (int step = 0; step < 4; step++)
        for (int l = 0; l < 4; l++)
            cl_stream_record(s, (uint32_t)(20 + l), a[l], NULL);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_LOCKED);
    uint64_t n = cl_stream_count(s);
    CL_CHECK(cl_stream_is_boundary(s, n - 4) && cl_stream_next_boundary(s, n - 3) == n);
    cl_stream_destroy(&s);
    char *log = el_log_take();
    CL_CHECK(el_count(log, "warning: the pattern of collectives on glitch changed at collective "
                           "#28 (it repeated every 4)") == 1);
    CL_CHECK(el_count(log, "changed at collective") == 1);
    CL_CHECK(el_count(log, "learned the training step on glitch: 4 collectives per step after 2 "
                           "start-up collectives") == 1);
    CL_CHECK(el_count(log, "learned the training step on glitch again") == 1);
    free(log);

    /* Random streams never lock; one warning. */
    el_log_start(CL_LOG_WARN);
    s = cl_stream_new("random", 0);
    int boundaries = 0;
    for (int k = 0; k < 600; k++) {
        uint64_t idx =
            cl_stream_record(s, (uint32_t)(rand() % 3), (void *)(uintptr_t)(rand() % 4), NULL);
        boundaries += cl_stream_is_boundary(s, idx);
    }
    CL_CHECK(boundaries == 0);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_AMBIGUOUS);
    CL_CHECK(cl_stream_prefix(s) == NONE && cl_stream_period(s) == 0);
    cl_stream_destroy(&s);
    log = el_log_take();
    CL_CHECK(el_count(log, "warning:") == 1);
    CL_CHECK(el_count(log, "could not learn the training step on random after 64") == 1);
    free(log);
}

/* A lasting change (period 3 becomes period 5): warned, learned again, and
   the start-up prefix told to joiners stays. */
static void test_pattern_change(void)
{
    el_log_start(CL_LOG_WARN);
    cl_stream_t *s = cl_stream_new("change", 0);
    rec_prefix(s, 0);
    for (int i = 0; i < 30; i++)
        cl_stream_record(s, 3, (void *)(uintptr_t)(0x100 + 0x10 * (i % 3)), NULL);
    CL_CHECK(cl_stream_period(s) == 3 && cl_stream_prefix(s) == 1);
    uint64_t start = cl_stream_count(s); /* 31 */
    for (int i = 0; i < 40; i++)
        cl_stream_record(s, 5, (void *)(uintptr_t)(0x900 + 0x10 * (i % 5)), NULL);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_LOCKED);
    CL_CHECK(cl_stream_period(s) == 5);
    CL_CHECK(cl_stream_prefix(s) == 1);
    CL_CHECK(cl_stream_changes(s) == 1);
    CL_CHECK(cl_stream_is_boundary(s, start + 35) && !cl_stream_is_boundary(s, start + 36));
    cl_stream_destroy(&s);
    char *log = el_log_take();
    CL_CHECK(el_count(log, "changed at collective #31 (it repeated every 3)") == 1);
    CL_CHECK(el_count(log, "warning:") == 1);
    free(log);

    /* An evaluation pass every 10 steps: period 3 breaks at each one until
       the true period (10 steps and the pass, 32) is confirmed; the start-up
       prefix never moves and steps begin at the first weight buffer. */
    el_log_start(CL_LOG_WARN);
    s = cl_stream_new("eval", 0);
    rec_prefix(s, 0);
    rec_prefix(s, 1);
    static char w[3][8], ev[2][8];
    for (int step = 1; step <= 60; step++) {
        for (int l = 0; l < 3; l++)
            cl_stream_record(s, 8, w[l], NULL);
        if (step % 10 == 0) {
            cl_stream_record(s, 9, ev[0], NULL);
            cl_stream_record(s, 9, ev[1], NULL);
        }
    }
    CL_CHECK(cl_stream_state(s) == CL_STREAM_LOCKED);
    CL_CHECK(cl_stream_prefix(s) == 2);
    CL_CHECK(cl_stream_period(s) == 32);
    CL_CHECK(cl_stream_changes(s) == 3);
    uint64_t n = cl_stream_count(s);
    CL_CHECK(n == 194);
    CL_CHECK(cl_stream_is_boundary(s, 2 + 32 * 5) && cl_stream_is_boundary(s, 194));
    CL_CHECK(!cl_stream_is_boundary(s, 165) && cl_stream_next_boundary(s, 195) == 226);
    cl_stream_destroy(&s);
    log = el_log_take();
    CL_CHECK(el_count(log, "warning:") == 1);
    CL_CHECK(el_count(log, "changed at collective #32 (it repeated every 3)") == 1);
    free(log);
}

/* Start-up phases: one within the history is served, a longer one makes
   the stream ambiguous with one warning; memory stays bounded. */
static void test_long_prefix(void)
{
    cl_stream_t *s = cl_stream_new("long but fine", 0);
    for (uint64_t k = 0; k < 4000; k++)
        rec_prefix(s, k);
    for (uint64_t k = 0; k < 9; k++)
        rec_step(s, k % 3);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_LOCKED);
    CL_CHECK(cl_stream_prefix(s) == 4000 && cl_stream_period(s) == 3);
    uint32_t sig = 0;
    CL_CHECK(cl_stream_signature(s, 3999, &sig) == 0 && sig == 0x1000u + 3999);
    CL_CHECK(cl_stream_signature(s, 4000, &sig) == 0 && sig == 42);
    cl_stream_destroy(&s);

    el_log_start(CL_LOG_WARN);
    s = cl_stream_new("too long", 0);
    for (uint64_t k = 0; k < 5000; k++)
        rec_prefix(s, k);
    for (uint64_t k = 0; k < 200; k++)
        rec_step(s, k % 2);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_AMBIGUOUS);
    CL_CHECK(cl_stream_prefix(s) == NONE);
    CL_CHECK(cl_stream_next_boundary(s, 5100) == NONE);
    CL_CHECK(cl_stream_signature(s, 4095, &sig) == 0 && sig == 0x1000u + 4095);
    CL_CHECK(cl_stream_signature(s, 4096, &sig) == COLLAB_ERR_ARG);
    cl_stream_destroy(&s);
    char *log = el_log_take();
    CL_CHECK(el_count(log, "start-up phase on too long is longer than 4096 collectives") == 1);
    free(log);

    /* Explicit marks after a start-up that is too long. */
    el_log_start(CL_LOG_WARN);
    s = cl_stream_new("marked late", 0);
    for (uint64_t k = 0; k < 4200; k++)
        rec_prefix(s, k);
    cl_stream_mark_step(s);
    rec_step(s, 0);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_AMBIGUOUS);
    CL_CHECK(!cl_stream_is_boundary(s, 4200));
    cl_stream_destroy(&s);
    log = el_log_take();
    CL_CHECK(el_count(log, "longer than 4096 collectives") == 1);
    free(log);
}

/* Long runs wrap the ring; boundaries stay right, and so do old marks. */
static void test_long_run(void)
{
    cl_stream_t *s = cl_stream_new("long run", 0);
    rec_prefix(s, 0);
    for (uint64_t i = 0; i < 20000; i++)
        rec_step(s, i % 7);
    CL_CHECK(cl_stream_state(s) == CL_STREAM_LOCKED && cl_stream_changes(s) == 0);
    CL_CHECK(cl_stream_is_boundary(s, 1 + 7 * 2800));
    CL_CHECK(!cl_stream_is_boundary(s, 2 + 7 * 2800));
    CL_CHECK(cl_stream_next_boundary(s, NONE - 1) == NONE); /* no overflow */
    CL_CHECK(!cl_stream_is_boundary(s, NONE));
    cl_stream_destroy(&s);

    s = cl_stream_new("long marks", 0);
    for (uint64_t i = 0; i < 10000; i++) {
        if (i % 10 == 3)
            cl_stream_mark_step(s);
        cl_stream_record(s, 1, NULL, NULL);
    }
    CL_CHECK(cl_stream_prefix(s) == 3 && cl_stream_period(s) == 10);
    CL_CHECK(cl_stream_is_boundary(s, 9993) && !cl_stream_is_boundary(s, 9994));
    CL_CHECK(cl_stream_next_boundary(s, 9994) == 10003);
    /* Marks older than the history are forgotten, not guessed. */
    CL_CHECK(cl_stream_next_boundary(s, 100) == NONE);
    CL_CHECK(cl_stream_next_boundary(s, 10000 - CL_STREAM_HISTORY) == 5913);
    cl_stream_destroy(&s);
}

static void test_bad_args(void)
{
    CL_CHECK(cl_stream_new("x", -1) == NULL);
    cl_stream_t *s = NULL;
    cl_stream_destroy(&s);
    cl_stream_destroy(NULL);
    CL_CHECK(cl_stream_record(NULL, 1, NULL, NULL) == NONE);
    cl_stream_mark_step(NULL);
    CL_CHECK(cl_stream_state(NULL) == CL_STREAM_AMBIGUOUS);
    CL_CHECK(cl_stream_count(NULL) == 0 && cl_stream_prefix(NULL) == NONE);
    CL_CHECK(cl_stream_period(NULL) == 0 && cl_stream_changes(NULL) == 0);
    CL_CHECK(cl_stream_next_boundary(NULL, 0) == NONE && !cl_stream_is_boundary(NULL, 0));
    uint32_t sig;
    CL_CHECK(cl_stream_signature(NULL, 0, &sig) == COLLAB_ERR_ARG);
    CL_CHECK_STREQ(cl_stream_state_name(CL_STREAM_LOCKED), "locked");
    CL_CHECK_STREQ(cl_stream_state_name((cl_stream_state_t)9), "invalid");
    s = cl_stream_new(NULL, 0);
    CL_CHECK(s != NULL);
    CL_CHECK(cl_stream_signature(s, 0, NULL) == COLLAB_ERR_ARG);
    cl_stream_destroy(&s);
}

int main(void)
{
    test_bad_args();
    test_sweep();
    test_layers();
    test_confirm_floor();
    test_marks();
    test_configured();
    test_noise();
    test_pattern_change();
    test_long_prefix();
    test_long_run();
    el_log_cleanup();
    return cl_selftest_end("cl_stream_test");
}
