/*  cl_coll_fail_test.c - selftest of the failure protocol (relay rule).

    For each algorithm a run without failures counts the events E; then a
    member is killed after every k-th event, k = 0 .. E, every member in
    turn, with several interleavings, and twice per run in random pairs
    (cascading failures, the stand-in reducer included).  Survivors learn
    of each failure at random moments.  Checked on every run: no hang, no
    honest message refused, every survivor complete; all survivors hold
    bit-identical results (allreduce, bcast, allgatherv, compression too);
    every piece of a result is valid: with BOR over bit r = rank r, each
    element holds every survivor's bit and nothing but members' bits (and
    its own position tag); SUM matches size x mean of some contributor set
    between the survivors and all members; moved data is the sender's or
    zeros (bcast: the root's, or the stand-in's own).  Strict mode: every
    survivor completes with COLLAB_ERR_PROC_FAILED, or with the complete
    result if it finished before it learned of the failure.
*/
#include "cl_coll_fail_fx.h"
#include "test_coll_harness.h"
#include "test_coll_ref.h"
#include "coll/cl_coll_impl.h"
#include "util/cl_selftest.h"
#include "util/cl_xsign.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Figures that make the parts unequal (cl_coll_layout.c). */
static const uint32_t s_skew[MAXN] = {100000, 25000, 100000, 400000, 100000, 1, 100000, 100000};

/* Checks that the bytes moved to member i are the sender's or zeros. */
static void s_check_moved(fx_t *fx, th_t *h, int i)
{
    const fcase_t *tc = fx->tc;
    const uint8_t *out = fx->out[i];
    int me = fx->ranks[i];
    (void)h;
    for (int r = 0; r < tc->size; r++) {
        int src = fx_index(fx, r);
        size_t off, len;
        if (tc->kind == CL_COLL_ALLTOALL) {
            off = (size_t)r * tc->count;
            len = tc->count;
        } else if (tc->kind == CL_COLL_SCATTERV) {
            if (r != me)
                continue;
            off = 0;
            len = fx->counts[me];
            src = fx_index(fx, tc->root);
        } else {
            off = fx->displs[r];
            len = fx->counts[r];
        }
        for (size_t k = 0; k < len; k++) {
            uint8_t want = tc->kind == CL_COLL_ALLTOALL   ? fx_byte(r * 100 + me, k)
                           : tc->kind == CL_COLL_SCATTERV ? fx_byte(me, k)
                                                          : fx_byte(r, k);
            uint8_t got = out[off + k];
            bool ok =
                got == want || (got == 0 && src >= 0 && !th_alive(h, src)) || (got == 0 && src < 0);
            if (!ok) {
                CL_CHECK(ok);
                fprintf(stderr, "  member %d slot of rank %d byte %zu: %02x want %02x\n", i, r, k,
                        got, want);
                return;
            }
        }
    }
}

/* Runs the plan; returns the number of failed checks. */
/* Failures so far, the fixture's checks (fx_check_reduction) included. */
static int s_failures(void)
{
    int checks, failures;
    fx_counts(&checks, &failures);
    return cl_selftest_failures + failures;
}

static int s_run(const fcase_t *tc, const th_plan_t *plan, long *events)
{
    int before = s_failures();
    fx_t fx;
    fx_setup(&fx, tc);
    int n = tc->n;
    /* Every other interleaving, a butterfly all-reduce member completes
       as soon as it holds everything (the harness's clock does not run
       during a transfer), so the kills also hit members that completed
       early and relay from their copy; one in four lets it complete
       early only 5 s (simulated) after the transfer began, which the
       harness's timer reaches when no message is left (cl_coll_recheck). */
    for (int i = 0; i < n; i++) {
        double bytes = (double)fx.args[i].count * (double)collab_dtype_extent(fx.args[i].dtype);
        fx.args[i].early_rate = (plan->seed & 1) ? INFINITY : (plan->seed & 3) == 2 ? bytes / 5.0 : 0;
    }
    th_t *h = th_new(n, fx.args);
    CL_CHECK(h != NULL);
    if (h == NULL) {
        fx_teardown(&fx);
        return 1;
    }
    CL_CHECK(th_run(h, plan) == 0);
    CL_CHECK(th_refused(h) == 0);
    CL_CHECK(th_suspects(h) == 0);
    if (events != NULL)
        *events = th_events(h);
    int first = -1;
    bool shared = tc->kind == CL_COLL_ALLREDUCE || tc->kind == CL_COLL_BCAST ||
                  tc->kind == CL_COLL_ALLGATHERV;
    int dead = 0;
    for (int i = 0; i < n; i++)
        dead += !th_alive(h, i);
    for (int i = 0; i < n; i++) {
        if (!th_alive(h, i))
            continue;
        cl_coll_t *c = th_coll(h, i);
        CL_CHECK(cl_coll_done(c));
        int st = cl_coll_status(c);
        if (tc->strict && dead > 0) {
            CL_CHECK(st == COLLAB_OK || st == COLLAB_ERR_PROC_FAILED);
            if (st != COLLAB_OK)
                continue;
            /* finished before it learned of the failure: the full result */
            int nc = 0;
            cl_coll_contributors(c, &nc);
            CL_CHECK(nc == n || !fx_reduction(tc->kind));
        } else {
            CL_CHECK(st == COLLAB_OK);
        }
        int me = fx.ranks[i];
        size_t bytes = fx.cap;
        switch (tc->kind) {
        case CL_COLL_ALLREDUCE:
            fx_check_reduction(&fx, h, i, fx.out[i], tc->count, 0);
            break;
        case CL_COLL_REDUCE:
            if (me == tc->root)
                fx_check_reduction(&fx, h, i, fx.out[i], tc->count, 0);
            break;
        case CL_COLL_REDUCE_SCATTER_BLOCK:
            fx_check_reduction(&fx, h, i, fx.out[i], tc->count, (size_t)me);
            break;
        case CL_COLL_BCAST: {
            /* each chunk is the root's data or a stand-in root's own */
            int root = fx_index(&fx, tc->root);
            for (size_t k = 0; k < bytes; k++) {
                uint8_t v = fx.out[i][k];
                bool ok = v == fx.in[root][k];
                for (int m = 0; m < n && !ok; m++) /* a stand-in, maybe dead since */
                    ok = v == fx.in[m][k];
                if (!ok) {
                    CL_CHECK(ok);
                    break;
                }
            }
            break;
        }
        case CL_COLL_BARRIER:
            break;
        default:
            if (tc->kind != CL_COLL_GATHERV || me == tc->root)
                s_check_moved(&fx, h, i);
            break;
        }
        if (shared && cl_coll_status(c) == COLLAB_OK) {
            if (first < 0)
                first = i;
            else if (memcmp(fx.out[i], fx.out[first], bytes) != 0) {
                CL_CHECK(memcmp(fx.out[i], fx.out[first], bytes) == 0);
                fprintf(stderr, "  members %d and %d disagree\n", first, i);
            }
        }
    }
    if (s_failures() > before) {
        fprintf(stderr, "  in case %s, seed %llu, kills:", tc->name,
                (unsigned long long)plan->seed);
        for (int k = 0; k < plan->nkill; k++)
            fprintf(stderr, " member %d at event %ld", plan->kill_who[k], plan->kill_at[k]);
        fprintf(stderr, "%s%s\n", plan->drop_all_inflight ? " (in-flight dropped)" : "",
                plan->no_fail_to_done ? " (no notices to completed members)" : "");
    }
    th_destroy(&h);
    fx_teardown(&fx);
    return s_failures() - before;
}

/* Kills every member at every point (k = 0 .. E), several interleavings,
   then random pairs of kills. */
static void s_sweep(const fcase_t *tc, int seeds, int pairs)
{
    for (int s = 1; s <= seeds; s++) {
        th_plan_t plan = {.seed = (uint64_t)s};
        long events = 0;
        if (s_run(tc, &plan, &events) > 0)
            return;
        long step = events > 120 ? events / 120 : 1;
        for (long at = 0; at <= events; at += step)
            for (int who = 0; who < tc->n; who++) {
                th_plan_t p = {.seed = (uint64_t)s * 1000 + (uint64_t)at,
                               .nkill = 1,
                               .kill_at = {at},
                               .kill_who = {who},
                               .drop_all_inflight = (at + who + s) % 3 == 0,
                               .no_fail_to_done = (at + who + s) % 2 == 0};
                if (s_run(tc, &p, NULL) > 0)
                    return;
            }
        uint64_t rng = (uint64_t)s * 77;
        for (int k = 0; k < pairs && tc->n > 2; k++) {
            th_plan_t p = {.seed = th_rand(&rng),
                           .nkill = tc->n > 4 && k % 2 ? 3 : 2,
                           .no_fail_to_done = k % 4 == 3};
            p.kill_who[0] = (int)(th_rand(&rng) % (uint64_t)tc->n);
            p.kill_who[1] =
                (p.kill_who[0] + 1 + (int)(th_rand(&rng) % (uint64_t)(tc->n - 1))) % tc->n;
            if (k % 3 == 0)
                p.kill_who[1] = p.kill_who[0] == 0 ? 1 : 0; /* the stand-in reducer */
            p.kill_at[0] = (long)(th_rand(&rng) % (uint64_t)(events + 1));
            p.kill_at[1] = p.kill_at[0] + (long)(th_rand(&rng) % (uint64_t)(events / 2 + 2));
            /* a third one, often the next stand-in */
            p.kill_who[2] = k % 4 == 1 ? 2 : (int)(th_rand(&rng) % (uint64_t)tc->n);
            p.kill_at[2] = p.kill_at[1] + (long)(th_rand(&rng) % (uint64_t)(events / 2 + 2));
            if (s_run(tc, &p, NULL) > 0)
                return;
        }
    }
}

static const fcase_t cases[] = {
    {.name = "small allreduce BOR",
     .kind = CL_COLL_ALLREDUCE,
     .n = 4,
     .size = 4,
     .dt = COLLAB_INT32,
     .op = COLLAB_OP_BOR,
     .count = 40,
     .chunk = 64,
     .small = 1 << 20},
    {.name = "small allreduce SUM absent",
     .kind = CL_COLL_ALLREDUCE,
     .n = 4,
     .size = 6,
     .dt = COLLAB_DOUBLE,
     .op = COLLAB_OP_SUM,
     .count = 20,
     .chunk = 48,
     .small = 1 << 20},
    {.name = "butterfly BOR",
     .kind = CL_COLL_ALLREDUCE,
     .n = 4,
     .size = 4,
     .dt = COLLAB_INT32,
     .op = COLLAB_OP_BOR,
     .count = 96,
     .chunk = 32,
     .small = 0},
    {.name = "butterfly BOR 5 in place",
     .kind = CL_COLL_ALLREDUCE,
     .n = 5,
     .size = 5,
     .dt = COLLAB_INT32,
     .op = COLLAB_OP_BOR,
     .count = 60,
     .chunk = 24,
     .small = 0,
     .inplace = true},
    {.name = "butterfly SUM plain",
     .kind = CL_COLL_ALLREDUCE,
     .n = 4,
     .size = 4,
     .dt = COLLAB_DOUBLE,
     .op = COLLAB_OP_SUM,
     .count = 48,
     .chunk = 64,
     .small = 0},
    {.name = "butterfly SUM absent",
     .kind = CL_COLL_ALLREDUCE,
     .n = 4,
     .size = 5,
     .dt = COLLAB_DOUBLE,
     .op = COLLAB_OP_SUM,
     .count = 48,
     .chunk = 64,
     .small = 0},
    {.name = "butterfly BOR bandwidth",
     .kind = CL_COLL_ALLREDUCE,
     .n = 5,
     .size = 5,
     .dt = COLLAB_INT32,
     .op = COLLAB_OP_BOR,
     .count = 400,
     .chunk = 256,
     .small = 0,
     .bw = s_skew},
    {.name = "butterfly SUM bandwidth clients",
     .kind = CL_COLL_ALLREDUCE,
     .n = 5,
     .size = 5,
     .dt = COLLAB_DOUBLE,
     .op = COLLAB_OP_SUM,
     .count = 300,
     .chunk = 512,
     .small = 0,
     .clients = 0x4,
     .bw = s_skew},
    {.name = "butterfly clients",
     .kind = CL_COLL_ALLREDUCE,
     .n = 5,
     .size = 5,
     .dt = COLLAB_INT32,
     .op = COLLAB_OP_BOR,
     .count = 64,
     .chunk = 32,
     .small = 0,
     .clients = 0x5},
    {.name = "butterfly fp16",
     .kind = CL_COLL_ALLREDUCE,
     .n = 4,
     .size = 4,
     .dt = COLLAB_FLOAT,
     .op = COLLAB_OP_SUM,
     .count = 64,
     .chunk = 64,
     .small = 0,
     .codec = 1},
    {.name = "small int8",
     .kind = CL_COLL_ALLREDUCE,
     .n = 4,
     .size = 4,
     .dt = COLLAB_DOUBLE,
     .op = COLLAB_OP_SUM,
     .count = 40,
     .chunk = 128,
     .small = 1 << 20,
     .codec = 2},
    {.name = "butterfly adaptive",
     .kind = CL_COLL_ALLREDUCE,
     .n = 5,
     .size = 5,
     .dt = COLLAB_FLOAT,
     .op = COLLAB_OP_SUM,
     .count = 400,
     .chunk = 256,
     .small = 0,
     .codec = CL_COLL_COMPRESSION_ADAPTIVE,
     .bw = s_skew},
    {.name = "small adaptive",
     .kind = CL_COLL_ALLREDUCE,
     .n = 5,
     .size = 5,
     .dt = COLLAB_DOUBLE,
     .op = COLLAB_OP_SUM,
     .count = 40,
     .chunk = 128,
     .small = 1 << 20,
     .codec = CL_COLL_COMPRESSION_ADAPTIVE,
     .bw = s_skew},
    {.name = "reduce butterfly",
     .kind = CL_COLL_REDUCE,
     .n = 4,
     .size = 4,
     .dt = COLLAB_INT32,
     .op = COLLAB_OP_BOR,
     .count = 64,
     .chunk = 32,
     .small = 0,
     .root = 2},
    {.name = "reduce small",
     .kind = CL_COLL_REDUCE,
     .n = 4,
     .size = 4,
     .dt = COLLAB_INT32,
     .op = COLLAB_OP_BOR,
     .count = 30,
     .chunk = 32,
     .small = 1 << 20,
     .root = 1},
    {.name = "rsb clients",
     .kind = CL_COLL_REDUCE_SCATTER_BLOCK,
     .n = 4,
     .size = 4,
     .dt = COLLAB_INT32,
     .op = COLLAB_OP_BOR,
     .count = 20,
     .chunk = 32,
     .small = 0,
     .clients = 0x2},
    {.name = "bcast chain",
     .kind = CL_COLL_BCAST,
     .n = 5,
     .size = 5,
     .dt = COLLAB_BYTE,
     .op = COLLAB_OP_SUM,
     .count = 300,
     .chunk = 64,
     .small = 0,
     .root = 1},
    {.name = "bcast tree",
     .kind = CL_COLL_BCAST,
     .n = 6,
     .size = 6,
     .dt = COLLAB_BYTE,
     .op = COLLAB_OP_SUM,
     .count = 50,
     .chunk = 64,
     .small = 0,
     .root = 0},
    {.name = "allgatherv",
     .kind = CL_COLL_ALLGATHERV,
     .n = 4,
     .size = 4,
     .dt = COLLAB_BYTE,
     .op = COLLAB_OP_SUM,
     .count = 40,
     .chunk = 16,
     .small = 0},
    {.name = "gatherv",
     .kind = CL_COLL_GATHERV,
     .n = 4,
     .size = 4,
     .dt = COLLAB_BYTE,
     .op = COLLAB_OP_SUM,
     .count = 40,
     .chunk = 16,
     .small = 0,
     .root = 3},
    {.name = "scatterv",
     .kind = CL_COLL_SCATTERV,
     .n = 4,
     .size = 4,
     .dt = COLLAB_BYTE,
     .op = COLLAB_OP_SUM,
     .count = 40,
     .chunk = 16,
     .small = 0,
     .root = 0},
    {.name = "alltoall",
     .kind = CL_COLL_ALLTOALL,
     .n = 4,
     .size = 4,
     .dt = COLLAB_BYTE,
     .op = COLLAB_OP_SUM,
     .count = 30,
     .chunk = 16,
     .small = 0},
    {.name = "butterfly 7 SUM",
     .kind = CL_COLL_ALLREDUCE,
     .n = 7,
     .size = 8,
     .dt = COLLAB_DOUBLE,
     .op = COLLAB_OP_SUM,
     .count = 70,
     .chunk = 40,
     .small = 0},
    {.name = "bcast chain 8",
     .kind = CL_COLL_BCAST,
     .n = 8,
     .size = 8,
     .dt = COLLAB_BYTE,
     .op = COLLAB_OP_SUM,
     .count = 200,
     .chunk = 50,
     .small = 0,
     .root = 5},
    {.name = "reduce butterfly clients",
     .kind = CL_COLL_REDUCE,
     .n = 6,
     .size = 6,
     .dt = COLLAB_INT32,
     .op = COLLAB_OP_BOR,
     .count = 64,
     .chunk = 32,
     .small = 0,
     .root = 0,
     .clients = 0x12},
    {.name = "barrier",
     .kind = CL_COLL_BARRIER,
     .n = 5,
     .size = 5,
     .dt = COLLAB_BYTE,
     .op = COLLAB_OP_SUM,
     .count = 0,
     .chunk = 16,
     .small = 0},
    {.name = "strict butterfly",
     .kind = CL_COLL_ALLREDUCE,
     .n = 4,
     .size = 4,
     .dt = COLLAB_INT32,
     .op = COLLAB_OP_BOR,
     .count = 64,
     .chunk = 32,
     .small = 0,
     .strict = true},
    {.name = "strict bcast",
     .kind = CL_COLL_BCAST,
     .n = 4,
     .size = 4,
     .dt = COLLAB_BYTE,
     .op = COLLAB_OP_SUM,
     .count = 200,
     .chunk = 64,
     .small = 0,
     .root = 2,
     .strict = true},
};

int main(int argc, char **argv)
{
    /* argv[1]: run only the cases whose name contains it ("" for all);
       argv[2]: interleavings per case (a longer soak than CTest's 2) */
    int seeds = argc > 2 ? atoi(argv[2]) : 2;
    if (argc <= 1 || strstr("hostile producer", argv[1]) != NULL)
        fx_hostile_producer();
    if (argc <= 1 || strstr("early completion", argv[1]) != NULL)
        fx_early_completion();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (argc > 1 && strstr(cases[c].name, argv[1]) == NULL)
            continue;
        s_sweep(&cases[c], seeds > 0 ? seeds : 2, 60);
        /* The same with member 1 at wire version 8: the butterfly's
           proofs are tags, and every failure is repaired as before. */
        if (strcmp(cases[c].name, "butterfly BOR") == 0 ||
            strcmp(cases[c].name, "butterfly SUM absent") == 0) {
            th_unsigned = 1u << 1;
            s_sweep(&cases[c], 1, 30);
            th_unsigned = 0;
        }
    }
    int checks, failures;
    fx_counts(&checks, &failures);
    cl_selftest_checks += checks;
    cl_selftest_failures += failures;
    fx_staged_counts(&checks, &failures);
    cl_selftest_checks += checks;
    cl_selftest_failures += failures;
    return cl_selftest_end("cl_coll_fail_test");
}
