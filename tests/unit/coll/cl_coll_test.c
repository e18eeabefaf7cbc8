/*  cl_coll_test.c - selftest of the reductions and the barrier without
    failures: allreduce (one-round and butterfly), reduce, reduce_scatter_
    block and barrier, for many datatypes and ops, user op included, in
    place, with ranks absent and weights (DESIGN §2), client-mode members,
    compression.  N members run in one process (test_coll_harness.c) with
    messages delivered in shuffled orders; every result is compared with a
    plain-loop reference (test_coll_ref.c) bit for bit, or within the
    codec's tolerance and bit for bit between members when compressing.
*/
#include "cl_coll_impl.h" /* cl_coll_split_bw */
#include "test_coll_harness.h"
#include "test_coll_ref.h"
#include "util/cl_selftest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 16

typedef struct {
    cl_coll_kind_t kind;
    int n, size;     /* members, comm size */
    int ranks[MAXN]; /* member ranks, ascending; all zero = 0..n-1 */
    collab_dtype_t dt;
    collab_op_kind_t op;
    size_t count;
    int root;
    bool inplace;
    bool weighted;
    unsigned clients; /* bit i: member i in client mode */
    bool triple;      /* user op on 3-element user datatypes (tr_triple) */
    int codec;
    size_t chunk, small;
    bool verify; /* COLLAB_VERIFY, each member checking the next one's part */
    const uint32_t *bw; /* per member: bandwidth figure (kbit/s), or NULL */
} rcase_t;

static const char *s_kind(cl_coll_kind_t k)
{
    static const char *names[] = {"barrier",    "bcast",   "allreduce", "reduce",  "rsb",
                                  "allgatherv", "gatherv", "scatterv",  "alltoall"};
    return names[k];
}

/* Runs one case with `seed`; returns the number of failed checks. */
static int s_run(const rcase_t *tc, uint64_t seed)
{
    int before = cl_selftest_failures;
    int n = tc->n;
    int ranks[MAXN];
    bool given = false;
    for (int i = 0; i < n; i++)
        given = given || tc->ranks[i] != 0;
    for (int i = 0; i < n; i++)
        ranks[i] = given ? tc->ranks[i] : i;
    size_t e = collab_dtype_extent(tc->dt);
    bool rsb = tc->kind == CL_COLL_REDUCE_SCATTER_BLOCK;
    size_t vec = rsb ? (size_t)tc->size * tc->count : tc->count; /* input elements */
    double w[MAXN];
    int clients[MAXN];
    uint8_t *in[MAXN], *out[MAXN];
    cl_coll_args_t args[MAXN];
    collab_op_t op = {.kind = tc->op};
    if (tc->op == COLLAB_OP_USER)
        op.user_fn = tc->triple ? tr_triple : tr_affine;
    tr_triple_split = 0;
    for (int i = 0; i < n; i++) {
        w[i] = tc->weighted ? 0.5 + (double)((seed + (uint64_t)i * 7) % 5) : 1.0;
        clients[i] = (tc->clients >> i) & 1;
        in[i] = malloc(vec * e + 1);
        out[i] = malloc(vec * e + 1);
        tr_fill(tc->dt, tc->op, in[i], vec, seed * 131 + (uint64_t)ranks[i]);
        memset(out[i], 0xa5, vec * e + 1);
        bool at_root = ranks[i] == tc->root;
        bool inplace = tc->inplace && (tc->kind != CL_COLL_REDUCE || at_root);
        if (inplace)
            memcpy(out[i], in[i], vec * e);
        args[i] = (cl_coll_args_t){.kind = tc->kind,
                                   .comm_id = 7,
                                   .seq = seed,
                                   .comm_size = tc->size,
                                   .nmembers = n,
                                   .members = ranks,
                                   .weights = w,
                                   .clients = tc->clients ? clients : NULL,
                                   .bandwidths = tc->bw,
                                   .self = ranks[i],
                                   .root = tc->kind == CL_COLL_REDUCE ? tc->root : -1,
                                   .dtype = tc->dt,
                                   .op = op,
                                   .count = tc->count,
                                   .sendbuf = inplace ? NULL : in[i],
                                   .recvbuf = out[i],
                                   .compression = tc->codec,
                                   .chunk_bytes = tc->chunk,
                                   .small_bytes = tc->small,
                                   .verify = tc->verify,
                                   .verify_target = tc->verify ? 1 + ranks[(i + 1) % n] : 0};
    }
    th_t *h = th_new(n, args);
    CL_CHECK(h != NULL);
    if (h == NULL)
        goto out;
    th_plan_t plan = {.seed = seed};
    CL_CHECK(th_run(h, &plan) == 0);
    CL_CHECK(th_convictions(h) == 0); /* honest reducers pass every check */
    CL_CHECK(th_refused(h) == 0);
    CL_CHECK(th_suspects(h) == 0);
    CL_CHECK(tr_triple_split == 0); /* no user element was cut */
    /* Reference: every member contributes. */
    uint8_t *ref = malloc(vec * e + 1);
    const void *ins[MAXN];
    size_t blocks = rsb ? (size_t)tc->size : 1;
    for (size_t b = 0; b < blocks; b++) {
        for (int i = 0; i < n; i++)
            ins[i] = in[i] + b * tc->count * e;
        if (tc->count > 0)
            tr_expect(tc->dt, &op, ref + b * tc->count * e, ins, w, n, tc->size, tc->count);
    }
    bool approx = tc->codec != 0 && tc->op == COLLAB_OP_SUM &&
                  (tc->dt == COLLAB_FLOAT || tc->dt == COLLAB_DOUBLE);
    /* adaptive: the strongest codec a member may use, int8 */
    int worst = tc->codec == CL_COLL_COMPRESSION_ADAPTIVE ? 2 : tc->codec;
    double tol = approx ? tr_tolerance(worst, n) * tc->size / n : 0;
    int first = -1;
    for (int i = 0; i < n; i++) {
        cl_coll_t *c = th_coll(h, i);
        CL_CHECK(cl_coll_done(c));
        CL_CHECK(cl_coll_status(c) == COLLAB_OK);
        bool has = tc->kind == CL_COLL_ALLREDUCE || rsb ||
                   (tc->kind == CL_COLL_REDUCE && ranks[i] == tc->root);
        if (tc->kind == CL_COLL_BARRIER) {
            int nc = 0;
            const int *contrib = cl_coll_contributors(c, &nc);
            CL_CHECK(nc == n);
            for (int k = 0; k < nc && k < n; k++)
                CL_CHECK(contrib[k] == ranks[k]);
        }
        if (!has || tc->count == 0)
            continue;
        const uint8_t *want = ref + (rsb ? (size_t)ranks[i] * tc->count * e : 0);
        size_t bytes = tc->count * e;
        if (!approx) {
            CL_CHECK(memcmp(out[i], want, bytes) == 0);
        } else {
            for (size_t k = 0; k < tc->count; k++) {
                double got = tc->dt == COLLAB_FLOAT ? ((float *)out[i])[k] : ((double *)out[i])[k];
                double exp = tc->dt == COLLAB_FLOAT ? ((float *)want)[k] : ((double *)want)[k];
                if (!(fabs(got - exp) <= tol)) {
                    CL_CHECK(fabs(got - exp) <= tol);
                    fprintf(stderr, "  element %zu: %g vs %g (tol %g)\n", k, got, exp, tol);
                    break;
                }
            }
            /* every member holds the same bits */
            if (tc->kind == CL_COLL_ALLREDUCE) {
                if (first < 0)
                    first = i;
                else
                    CL_CHECK(memcmp(out[i], out[first], bytes) == 0);
            }
        }
        int nc = 0;
        const int *contrib = cl_coll_contributors(c, &nc);
        CL_CHECK(nc == n);
        for (int k = 0; k < nc && k < n; k++)
            CL_CHECK(contrib[k] == ranks[k]);
    }
    /* Butterfly traffic: each member moves 2(n-1)/n x size. */
    if (tc->kind == CL_COLL_ALLREDUCE && tc->count * e >= tc->small && n > 1 && !approx &&
        tc->op != COLLAB_OP_USER && !tc->clients && !tc->verify && tc->count * e >= 4096) {
        double want = 2.0 * (n - 1) / n * (double)(tc->count * e);
        size_t plo[MAXN], plen[MAXN];
        cl_coll_split_bw(tc->count, (size_t)n, n, tc->bw, plo, plen);
        for (int i = 0; i < n; i++) {
            uint64_t sent = 0, recv = 0;
            cl_coll_traffic(th_coll(h, i), &sent, &recv);
            /* parts sized by bandwidth: C + (n - 2) L_i elements each way */
            if (tc->bw != NULL)
                want = (double)(tc->count - plen[i] + (size_t)(n - 1) * plen[i]) * (double)e;
            CL_CHECK(sent > 0.9 * want && sent < 1.1 * want + 4096);
            CL_CHECK(recv > 0.9 * want && recv < 1.1 * want + 4096);
        }
    }
    /* Adaptive compression: a member sends its part's results and its
       contributions with its own codec, a contribution to a reducer with a
       stronger codec with that one; payload bytes each way, computed chunk
       by chunk from the layout (RESULT: bitmap and signed proof besides). */
    if (tc->codec == CL_COLL_COMPRESSION_ADAPTIVE && tc->kind == CL_COLL_ALLREDUCE &&
        tc->bw != NULL && approx && tc->count * e >= tc->small && n > 2 && !tc->clients &&
        !tc->verify && (size_t)n <= tc->count) {
        cl_compress_t cod[MAXN];
        CL_CHECK(cl_coll_adaptive_codecs(tc->bw, n, cod) == COLLAB_OK);
        size_t plo[MAXN], plen[MAXN];
        cl_coll_split_bw(tc->count, (size_t)n, n, tc->bw, plo, plen);
        /* n > 2 and every member signs (th_unsigned 0): one signed proof */
        size_t ce = tc->chunk / e, ovh = CL_COLL_SIG + (size_t)(n + 7) / 8;
        for (int i = 0; i < n; i++) {
            uint64_t sent = 0, recv = 0, want_sent = 0, want_recv = 0;
            cl_coll_traffic(th_coll(h, i), &sent, &recv);
            for (int p = 0; p < n; p++)
                for (size_t at = 0; at < plen[p]; at += ce) {
                    size_t cnt = plen[p] - at < ce ? plen[p] - at : ce;
                    if (p != i) {
                        cl_compress_t to = cod[p] > cod[i] ? cod[p] : cod[i];
                        want_sent += cl_compress_bound(to, tc->dt, cnt);
                        want_recv += ovh + cl_compress_bound(cod[p], tc->dt, cnt);
                    } else {
                        want_sent += (uint64_t)(n - 1) *
                                     (ovh + cl_compress_bound(cod[i], tc->dt, cnt));
                        for (int m = 0; m < n; m++)
                            if (m != i)
                                want_recv += cl_compress_bound(cod[m] > cod[i] ? cod[m] : cod[i],
                                                               tc->dt, cnt);
                    }
                }
            CL_CHECK(sent == want_sent);
            CL_CHECK(recv == want_recv);
            if (sent != want_sent || recv != want_recv)
                fprintf(stderr,
                        "  member %d (codec %d): sent %llu (want %llu), received %llu "
                        "(want %llu)\n",
                        i, (int)cod[i], (unsigned long long)sent, (unsigned long long)want_sent,
                        (unsigned long long)recv, (unsigned long long)want_recv);
        }
    }
    free(ref);
out:
    if (cl_selftest_failures > before)
        fprintf(stderr,
                "  in case %s n=%d size=%d dt=%d op=%d count=%zu root=%d inplace=%d "
                "weighted=%d clients=%x codec=%d chunk=%zu small=%zu seed=%llu\n",
                s_kind(tc->kind), n, tc->size, tc->dt, tc->op, tc->count, tc->root, tc->inplace,
                tc->weighted, tc->clients, tc->codec, tc->chunk, tc->small,
                (unsigned long long)seed);
    th_destroy(&h);
    for (int i = 0; i < n; i++) {
        free(in[i]);
        free(out[i]);
    }
    return cl_selftest_failures - before;
}

static void s_cases(rcase_t tc, int seeds)
{
    for (int s = 1; s <= seeds; s++)
        if (s_run(&tc, (uint64_t)s) > 0)
            return; /* one report per case is enough */
}

/* Every datatype/op pair of the reference, small and butterfly. */
static void test_types_ops(void)
{
    static const struct {
        collab_dtype_t t;
        collab_op_kind_t op;
    } pairs[] = {
        {COLLAB_DOUBLE, COLLAB_OP_SUM},       {COLLAB_DOUBLE, COLLAB_OP_MAX},
        {COLLAB_DOUBLE, COLLAB_OP_MIN},       {COLLAB_DOUBLE, COLLAB_OP_PROD},
        {COLLAB_FLOAT, COLLAB_OP_SUM},        {COLLAB_INT32, COLLAB_OP_SUM},
        {COLLAB_INT32, COLLAB_OP_PROD},       {COLLAB_INT32, COLLAB_OP_BAND},
        {COLLAB_INT32, COLLAB_OP_BOR},        {COLLAB_INT32, COLLAB_OP_BXOR},
        {COLLAB_INT32, COLLAB_OP_LAND},       {COLLAB_INT32, COLLAB_OP_LOR},
        {COLLAB_INT32, COLLAB_OP_LXOR},       {COLLAB_INT32, COLLAB_OP_MAX},
        {COLLAB_INT64, COLLAB_OP_SUM},        {COLLAB_INT64, COLLAB_OP_MIN},
        {COLLAB_INT8, COLLAB_OP_SUM},         {COLLAB_UINT8, COLLAB_OP_BXOR},
        {COLLAB_C_BOOL, COLLAB_OP_LOR},       {COLLAB_FLOAT_INT, COLLAB_OP_MAXLOC},
        {COLLAB_FLOAT_INT, COLLAB_OP_MINLOC}, {COLLAB_2INT, COLLAB_OP_MAXLOC},
        {COLLAB_UINT64, COLLAB_OP_USER},
    };
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++)
        for (int n = 2; n <= 5; n += 3)
            for (int big = 0; big < 2; big++) {
                rcase_t tc = {.kind = CL_COLL_ALLREDUCE,
                              .n = n,
                              .size = n,
                              .dt = pairs[p].t,
                              .op = pairs[p].op,
                              .count = big ? 777 : 37,
                              .chunk = 256,
                              .small = big ? 0 : 1 << 20};
                s_cases(tc, 2);
            }
}

static void test_allreduce(void)
{
    for (int n = 1; n <= 7; n++)
        for (int inplace = 0; inplace < 2; inplace++)
            for (int big = 0; big < 2; big++) {
                rcase_t tc = {.kind = CL_COLL_ALLREDUCE,
                              .n = n,
                              .size = n,
                              .dt = COLLAB_DOUBLE,
                              .op = COLLAB_OP_SUM,
                              .count = big ? 3001 : 100,
                              .inplace = inplace,
                              .chunk = 512,
                              .small = big ? 1024 : 1 << 20};
                s_cases(tc, 3);
            }
    /* fewer elements than members, a single element, zero elements */
    for (size_t count = 0; count < 4; count++) {
        rcase_t tc = {.kind = CL_COLL_ALLREDUCE,
                      .n = 6,
                      .size = 6,
                      .dt = COLLAB_INT32,
                      .op = COLLAB_OP_SUM,
                      .count = count,
                      .chunk = 8,
                      .small = 0};
        s_cases(tc, 2);
        tc.small = 1 << 20;
        s_cases(tc, 2);
    }
    /* a chunk of the default size and an odd element count */
    rcase_t big = {.kind = CL_COLL_ALLREDUCE,
                   .n = 4,
                   .size = 4,
                   .dt = COLLAB_FLOAT,
                   .op = COLLAB_OP_SUM,
                   .count = 300001,
                   .chunk = 0,
                   .small = 4096};
    s_cases(big, 1);
    /* the user op is not commutative: the order must be rank order */
    rcase_t user = {.kind = CL_COLL_ALLREDUCE,
                    .n = 7,
                    .size = 7,
                    .dt = COLLAB_UINT64,
                    .op = COLLAB_OP_USER,
                    .count = 1000,
                    .chunk = 64,
                    .small = 0};
    s_cases(user, 3);
    /* a user op on a derived type of three elements: never cut one */
    for (int big = 0; big < 2; big++) {
        rcase_t tri = {.kind = CL_COLL_ALLREDUCE,
                       .n = 5,
                       .size = 5,
                       .dt = COLLAB_UINT64,
                       .op = COLLAB_OP_USER,
                       .count = 3 * 333,
                       .chunk = 64,
                       .small = big ? 0 : 1 << 20,
                       .triple = true};
        s_cases(tri, 2);
        tri.kind = CL_COLL_REDUCE;
        tri.root = 3;
        s_cases(tri, 2);
        tri.kind = CL_COLL_REDUCE_SCATTER_BLOCK;
        tri.count = 3 * 7;
        s_cases(tri, 2);
    }
}

/* COLLAB_VERIFY with honest reducers: every member checks the next one's
   part (recomputed with the reducer's own fold, bit for bit), nobody is
   convicted, and the results stay right: plain and weighted SUM (the
   eager and the buffered fold), MAX, a non-commutative user op, in place,
   ranks absent. */
static void test_verify(void)
{
    static const collab_op_kind_t ops[] = {COLLAB_OP_SUM, COLLAB_OP_MAX, COLLAB_OP_USER};
    for (int n = 3; n <= 6; n += 3)
        for (size_t o = 0; o < 3; o++)
            for (int variant = 0; variant < 3; variant++) {
                rcase_t tc = {.kind = CL_COLL_ALLREDUCE,
                              .n = n,
                              .size = variant == 2 ? n + 2 : n,
                              .dt = ops[o] == COLLAB_OP_USER ? COLLAB_UINT64 : COLLAB_DOUBLE,
                              .op = ops[o],
                              .count = 3001,
                              .inplace = variant == 1,
                              .weighted = variant == 1 && ops[o] == COLLAB_OP_SUM,
                              .chunk = 512,
                              .small = 1024,
                              .verify = true};
                s_cases(tc, 2);
            }
}

/* DESIGN §2: with ranks absent or weights set, SUM is size x weighted mean. */
static void test_weighted(void)
{
    static const collab_dtype_t types[] = {COLLAB_DOUBLE, COLLAB_FLOAT, COLLAB_INT32, COLLAB_INT64};
    for (size_t t = 0; t < 4; t++)
        for (int big = 0; big < 2; big++) {
            rcase_t tc = {.kind = CL_COLL_ALLREDUCE,
                          .n = 4,
                          .size = 7,
                          .ranks = {0, 2, 3, 6},
                          .dt = types[t],
                          .op = COLLAB_OP_SUM,
                          .count = 501,
                          .chunk = 128,
                          .small = big ? 0 : 1 << 20};
            s_cases(tc, 2);
            tc.weighted = true;
            s_cases(tc, 2);
            tc.size = 4;
            memset(tc.ranks, 0, sizeof tc.ranks);
            s_cases(tc, 2); /* every rank present, weights differ */
        }
    /* other ops ignore absent ranks */
    rcase_t mx = {.kind = CL_COLL_ALLREDUCE,
                  .n = 3,
                  .size = 9,
                  .ranks = {1, 4, 8},
                  .dt = COLLAB_INT32,
                  .op = COLLAB_OP_MAX,
                  .count = 99,
                  .chunk = 16,
                  .small = 0};
    s_cases(mx, 2);
}

static void test_clients_codec(void)
{
    /* client-mode members never reduce */
    for (unsigned cm = 1; cm < 16; cm += 5) {
        rcase_t tc = {.kind = CL_COLL_ALLREDUCE,
                      .n = 4,
                      .size = 4,
                      .dt = COLLAB_DOUBLE,
                      .op = COLLAB_OP_SUM,
                      .count = 1234,
                      .chunk = 200,
                      .small = 0,
                      .clients = cm};
        s_cases(tc, 2);
        tc.kind = CL_COLL_REDUCE_SCATTER_BLOCK;
        tc.count = 99;
        s_cases(tc, 2);
    }
    for (int codec = 1; codec <= 2; codec++)
        for (int dt = 0; dt < 2; dt++)
            for (int big = 0; big < 2; big++) {
                rcase_t tc = {.kind = CL_COLL_ALLREDUCE,
                              .n = 5,
                              .size = 5,
                              .dt = dt ? COLLAB_DOUBLE : COLLAB_FLOAT,
                              .op = COLLAB_OP_SUM,
                              .count = 2000,
                              .codec = codec,
                              .chunk = 1024,
                              .small = big ? 0 : 1 << 20};
                s_cases(tc, 2);
                tc.kind = CL_COLL_REDUCE;
                tc.root = 2;
                s_cases(tc, 1);
                tc.kind = CL_COLL_ALLREDUCE;
                tc.size = 8;
                tc.ranks[0] = 1, tc.ranks[1] = 2, tc.ranks[2] = 4, tc.ranks[3] = 5, tc.ranks[4] = 7;
                tc.weighted = true;
                s_cases(tc, 1);
            }
    /* compression does not apply to integers or other ops: exact results */
    rcase_t ti = {.kind = CL_COLL_ALLREDUCE,
                  .n = 3,
                  .size = 3,
                  .dt = COLLAB_INT32,
                  .op = COLLAB_OP_SUM,
                  .count = 300,
                  .codec = 1,
                  .chunk = 64,
                  .small = 0};
    s_cases(ti, 1);
    ti.dt = COLLAB_DOUBLE;
    ti.op = COLLAB_OP_MAX;
    ti.codec = 2;
    s_cases(ti, 1);
}

/* Parts sized by the members' bandwidth figures (cl_coll_layout.c): the
   results stay those of the reference, bit for bit on every member (or
   within the codec's tolerance and equal between members), and each
   member carries what its part's size makes it (checked in s_run). */
static void test_bandwidth(void)
{
    static const uint32_t skew[MAXN] = {100000, 100000, 25000, 100000, 400000, 5000, 100000};
    static const uint32_t hostile[MAXN] = {UINT32_MAX, 1, 100000, 100000, 1, UINT32_MAX, 100000};
    const uint32_t *sets[] = {skew, hostile};
    static const collab_dtype_t types[] = {COLLAB_FLOAT, COLLAB_DOUBLE, COLLAB_INT64};
    for (int set = 0; set < 2; set++)
        for (int n = 3; n <= 7; n += 2)
            for (size_t t = 0; t < 3; t++) {
                rcase_t tc = {.kind = CL_COLL_ALLREDUCE,
                              .n = n,
                              .size = n,
                              .dt = types[t],
                              .op = COLLAB_OP_SUM,
                              .count = 20011,
                              .chunk = 4096,
                              .small = 0,
                              .bw = sets[set]};
                s_cases(tc, 2);
                tc.inplace = true;
                tc.weighted = true;
                s_cases(tc, 1);
                tc.op = COLLAB_OP_MAX;
                s_cases(tc, 1);
            }
    rcase_t tc = {.kind = CL_COLL_ALLREDUCE,
                  .n = 5,
                  .size = 8,
                  .ranks = {0, 2, 3, 5, 7},
                  .dt = COLLAB_FLOAT,
                  .op = COLLAB_OP_SUM,
                  .count = 30000,
                  .chunk = 2048,
                  .small = 0,
                  .bw = skew};
    for (int codec = 1; codec <= 2; codec++) { /* compression: equal bits on all */
        tc.codec = codec;
        s_cases(tc, 1);
    }
    tc.codec = 0;
    tc.clients = 0x5; /* clients reduce nothing: the others' figures size the parts */
    s_cases(tc, 2);
    tc.clients = 0;
    tc.verify = true; /* every member checks the next one's (unequal) part */
    s_cases(tc, 2);
    tc.verify = false;
    tc.kind = CL_COLL_REDUCE; /* reduce keeps equal parts */
    tc.root = 3;
    s_cases(tc, 1);
    tc.kind = CL_COLL_REDUCE_SCATTER_BLOCK;
    tc.count = 300;
    s_cases(tc, 1);
}

/* COLLAB_COMPRESSION=adaptive: each member's codec from the figures
   (int8 at a quarter of the median or below, fp16 at half), the results
   equal on every member and within int8's tolerance, exact when nobody
   compresses, and each member's uploads as small as its codec makes them
   (checked in s_run). */
static void test_adaptive(void)
{
    static const uint32_t slow8[MAXN] = {25000, 100000, 100000, 100000, 100000, 100000, 100000};
    static const uint32_t slow16[MAXN] = {100000, 100000, 50000, 100000, 100000, 100000, 100000};
    static const uint32_t mixed[MAXN] = {100000, 20000, 100000, 45000, 100000, 100000, 400000};
    static const uint32_t equal[MAXN] = {100000, 100000, 100000, 100000, 100000, 100000, 100000};
    const uint32_t *sets[] = {slow8, slow16, mixed, equal};
    static const collab_dtype_t types[] = {COLLAB_FLOAT, COLLAB_DOUBLE};
    for (size_t set = 0; set < 4; set++)
        for (int n = 2; n <= 7; n += (n == 2 ? 2 : 3))
            for (size_t t = 0; t < 2; t++) {
                rcase_t tc = {.kind = CL_COLL_ALLREDUCE,
                              .n = n,
                              .size = n,
                              .dt = types[t],
                              .op = COLLAB_OP_SUM,
                              .count = 20011,
                              .chunk = 4096,
                              .small = 0,
                              .codec = CL_COLL_COMPRESSION_ADAPTIVE,
                              .bw = sets[set]};
                s_cases(tc, 2); /* butterfly */
                tc.small = 1 << 30; /* the one-round exchange */
                tc.count = 333;
                s_cases(tc, 1);
                tc.kind = CL_COLL_REDUCE; /* direct to the root, and the butterfly's reduce */
                tc.root = n - 1;
                s_cases(tc, 1);
                tc.small = 0;
                tc.count = 20011;
                s_cases(tc, 1);
                tc.kind = CL_COLL_REDUCE_SCATTER_BLOCK;
                tc.count = 300;
                s_cases(tc, 1);
            }
    /* Other ops and integer types are never encoded: exact. */
    rcase_t ti = {.kind = CL_COLL_ALLREDUCE,
                  .n = 5,
                  .size = 5,
                  .dt = COLLAB_INT64,
                  .op = COLLAB_OP_SUM,
                  .count = 20011,
                  .chunk = 4096,
                  .codec = CL_COLL_COMPRESSION_ADAPTIVE,
                  .bw = slow8};
    s_cases(ti, 1);
    ti.dt = COLLAB_FLOAT;
    ti.op = COLLAB_OP_MAX;
    s_cases(ti, 1);
}

static void test_reduce(void)
{
    for (int big = 0; big < 2; big++)
        for (int root = 0; root < 5; root += 2)
            for (int inplace = 0; inplace < 2; inplace++) {
                rcase_t tc = {.kind = CL_COLL_REDUCE,
                              .n = 5,
                              .size = 5,
                              .dt = COLLAB_INT64,
                              .op = COLLAB_OP_SUM,
                              .count = 333,
                              .root = root,
                              .inplace = inplace,
                              .chunk = 96,
                              .small = big ? 0 : 1 << 20};
                s_cases(tc, 2);
            }
    /* root absent: completes everywhere, nothing delivered */
    for (int big = 0; big < 2; big++) {
        rcase_t tc = {.kind = CL_COLL_REDUCE,
                      .n = 3,
                      .size = 4,
                      .ranks = {0, 1, 3},
                      .dt = COLLAB_INT32,
                      .op = COLLAB_OP_SUM,
                      .count = 50,
                      .root = 2,
                      .chunk = 16,
                      .small = big ? 0 : 1 << 20};
        s_cases(tc, 2);
    }
    rcase_t user = {.kind = CL_COLL_REDUCE,
                    .n = 6,
                    .size = 6,
                    .dt = COLLAB_UINT64,
                    .op = COLLAB_OP_USER,
                    .count = 200,
                    .root = 3,
                    .chunk = 40,
                    .small = 0};
    s_cases(user, 2);
}

static void test_rsb(void)
{
    for (int n = 1; n <= 6; n++)
        for (int inplace = 0; inplace < 2; inplace++) {
            rcase_t tc = {.kind = CL_COLL_REDUCE_SCATTER_BLOCK,
                          .n = n,
                          .size = n,
                          .dt = COLLAB_DOUBLE,
                          .op = COLLAB_OP_SUM,
                          .count = 45,
                          .inplace = inplace,
                          .chunk = 64};
            s_cases(tc, 2);
        }
    rcase_t abs = {.kind = CL_COLL_REDUCE_SCATTER_BLOCK,
                   .n = 3,
                   .size = 5,
                   .ranks = {0, 3, 4},
                   .dt = COLLAB_INT32,
                   .op = COLLAB_OP_SUM,
                   .count = 30,
                   .chunk = 32};
    s_cases(abs, 2);
    abs.op = COLLAB_OP_BXOR;
    s_cases(abs, 2);
    rcase_t zero = {.kind = CL_COLL_REDUCE_SCATTER_BLOCK,
                    .n = 3,
                    .size = 3,
                    .dt = COLLAB_INT32,
                    .op = COLLAB_OP_SUM,
                    .count = 0,
                    .chunk = 32};
    s_cases(zero, 1);
}

static void test_barrier(void)
{
    for (int n = 1; n <= 8; n++) {
        rcase_t tc = {.kind = CL_COLL_BARRIER, .n = n, .size = n + 1, .dt = COLLAB_BYTE};
        s_cases(tc, 3);
    }
}

int main(void)
{
    test_types_ops();
    test_allreduce();
    test_verify();
    test_weighted();
    test_clients_codec();
    test_bandwidth();
    test_adaptive();
    test_reduce();
    test_rsb();
    test_barrier();
    return cl_selftest_end("cl_coll_test");
}
