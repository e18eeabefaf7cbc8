/*  cl_coll_bad_test.c - selftest of bad input: invalid arguments are
    refused with the right status, malformed messages (non-members, unknown
    types, parts/chunks/lengths out of range, broken bitmaps, duplicates)
    are dropped with COLLAB_ERR_ARG and leave the collective able to finish
    with the right result, and random messages injected into every
    algorithm never crash it or make it write out of bounds (run under
    ASan in CI).
*/
#include "cl_coll_impl.h" /* the message types */
#include "test_coll_harness.h"
#include "util/cl_selftest.h"
#include "util/cl_xsign.h"
#include <sodium.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int ranks3[3] = {0, 1, 2};

static cl_coll_args_t s_base(cl_coll_kind_t kind, void *sb, void *rb)
{
    return (cl_coll_args_t){.kind = kind,
                            .comm_id = 1,
                            .comm_size = 3,
                            .nmembers = 3,
                            .members = ranks3,
                            .self = 0,
                            .root = -1,
                            .dtype = COLLAB_INT32,
                            .op = {.kind = COLLAB_OP_SUM},
                            .count = 4,
                            .sendbuf = sb,
                            .recvbuf = rb,
                            .chunk_bytes = 64,
                            .small_bytes = 0};
}

static double s_now(void *e)
{
    (void)e;
    return 0;
}
static double s_deadline(void *e, int f, size_t b)
{
    (void)e, (void)f, (void)b;
    return 1;
}
static void s_suspect(void *e, int r)
{
    (void)e, (void)r;
}
static int s_send(void *e, int to, const cl_coll_msg_t *m)
{
    (void)e, (void)to, (void)m;
    return 0;
}

static void test_args(void)
{
    int32_t sb[64] = {0}, rb[64] = {0};
    size_t counts[3] = {4, 4, 4}, displs[3] = {0, 4, 8}, huge[3] = {4, SIZE_MAX, 8};
    cl_coll_args_t a;
    cl_coll_env_t env = {
        .send = s_send, .now = s_now, .deadline = s_deadline, .suspect = s_suspect};

    a = s_base(CL_COLL_ALLREDUCE, sb, rb);
    CL_CHECK(cl_coll_args_check(&a) == COLLAB_OK);
    cl_coll_t *c = cl_coll_new(&a, &env);
    CL_CHECK(c != NULL);
    cl_coll_destroy(&c);
    CL_CHECK(c == NULL);
    cl_coll_destroy(NULL);
    cl_coll_destroy(&c);
    CL_CHECK(cl_coll_args_check(NULL) == COLLAB_ERR_ARG);
    cl_coll_env_t noenv = env;
    noenv.send = NULL;
    CL_CHECK(cl_coll_new(&a, &noenv) == NULL);
    CL_CHECK(cl_coll_new(&a, NULL) == NULL);

#define BAD(field_change, status)                                                                  \
    do {                                                                                           \
        a = s_base(CL_COLL_ALLREDUCE, sb, rb);                                                     \
        field_change;                                                                              \
        CL_CHECK(cl_coll_args_check(&a) == (status));                                              \
        CL_CHECK(cl_coll_new(&a, &env) == NULL);                                                   \
    } while (0)
    BAD(a.kind = CL_COLL_KIND_COUNT, COLLAB_ERR_ARG);
    BAD(a.kind = (cl_coll_kind_t)-1, COLLAB_ERR_ARG);
    BAD(a.nmembers = 0, COLLAB_ERR_ARG);
    BAD(a.nmembers = 4, COLLAB_ERR_ARG);
    BAD(a.members = NULL, COLLAB_ERR_ARG);
    BAD(a.comm_size = 0, COLLAB_ERR_ARG);
    int unsorted[3] = {0, 2, 1}, dup[3] = {0, 1, 1}, outside[3] = {0, 1, 3}, neg[3] = {-1, 0, 1};
    BAD(a.members = unsorted, COLLAB_ERR_RANK);
    BAD(a.members = dup, COLLAB_ERR_RANK);
    BAD(a.members = outside, COLLAB_ERR_RANK);
    BAD(a.members = neg, COLLAB_ERR_RANK);
    BAD(a.self = 5, COLLAB_ERR_RANK);
    double wneg[3] = {1, -1, 1}, wnan[3] = {1, NAN, 1}, winf[3] = {1, INFINITY, 1};
    BAD(a.weights = wneg, COLLAB_ERR_ARG);
    BAD(a.weights = wnan, COLLAB_ERR_ARG);
    BAD(a.weights = winf, COLLAB_ERR_ARG);
    int cl2[3] = {0, 2, 0};
    BAD(a.clients = cl2, COLLAB_ERR_ARG);
    BAD(a.compression = 4, COLLAB_ERR_ARG);
    BAD(a.compression = -1, COLLAB_ERR_ARG);
    BAD(a.dtype = COLLAB_DTYPE_COUNT, COLLAB_ERR_TYPE);
    BAD(a.op.kind = COLLAB_OP_REPLACE, COLLAB_ERR_OP);
    BAD(a.op.kind = COLLAB_OP_NO_OP, COLLAB_ERR_OP);
    BAD(a.op.kind = COLLAB_OP_COUNT, COLLAB_ERR_OP);
    BAD(a.op.kind = COLLAB_OP_USER, COLLAB_ERR_OP); /* no function */
    BAD((a.op.kind = COLLAB_OP_MAXLOC, a.dtype = COLLAB_DOUBLE), COLLAB_ERR_OP);
    BAD((a.op.kind = COLLAB_OP_SUM, a.dtype = COLLAB_BYTE), COLLAB_ERR_OP);
    BAD((a.op.kind = COLLAB_OP_BAND, a.dtype = COLLAB_FLOAT), COLLAB_ERR_OP);
    BAD(a.count = SIZE_MAX / 2, COLLAB_ERR_COUNT);
    BAD(a.recvbuf = NULL, COLLAB_ERR_ARG);
    BAD((a.kind = CL_COLL_REDUCE, a.root = 3), COLLAB_ERR_ROOT);
    BAD((a.kind = CL_COLL_REDUCE, a.root = -1), COLLAB_ERR_ROOT);
    BAD((a.kind = CL_COLL_REDUCE, a.root = 1, a.sendbuf = NULL), COLLAB_ERR_ARG);
    BAD((a.kind = CL_COLL_REDUCE_SCATTER_BLOCK, a.count = SIZE_MAX / 8), COLLAB_ERR_COUNT);
    BAD((a.kind = CL_COLL_BCAST, a.root = 7), COLLAB_ERR_ROOT);
    BAD((a.kind = CL_COLL_BCAST, a.root = 0, a.recvbuf = NULL), COLLAB_ERR_ARG);
    BAD((a.kind = CL_COLL_ALLTOALL, a.count = SIZE_MAX / 2), COLLAB_ERR_COUNT);
    BAD((a.kind = CL_COLL_ALLGATHERV, a.counts = NULL), COLLAB_ERR_ARG);
    BAD((a.kind = CL_COLL_ALLGATHERV, a.counts = huge, a.displs = displs), COLLAB_ERR_COUNT);
    BAD((a.kind = CL_COLL_ALLGATHERV, a.counts = counts, a.displs = displs, a.recvbuf = NULL),
        COLLAB_ERR_ARG);
    BAD((a.kind = CL_COLL_GATHERV, a.root = 1, a.sbytes = 4, a.sendbuf = NULL), COLLAB_ERR_ARG);
    BAD((a.kind = CL_COLL_GATHERV, a.root = 0), COLLAB_ERR_ARG); /* root without counts */
    BAD((a.kind = CL_COLL_SCATTERV, a.root = 0, a.counts = counts), COLLAB_ERR_ARG);
    BAD((a.kind = CL_COLL_SCATTERV, a.root = 0, a.counts = counts, a.displs = displs,
         a.sendbuf = NULL),
        COLLAB_ERR_ARG);
    BAD((a.kind = CL_COLL_SCATTERV, a.root = 1, a.rbytes = 4, a.recvbuf = NULL), COLLAB_ERR_ARG);
#undef BAD
    /* valid corner cases */
    a = s_base(CL_COLL_BARRIER, NULL, NULL);
    CL_CHECK(cl_coll_args_check(&a) == COLLAB_OK);
    a = s_base(CL_COLL_ALLREDUCE, NULL, NULL);
    a.count = 0;
    CL_CHECK(cl_coll_args_check(&a) == COLLAB_OK);
    double w0[3] = {0, 0, 0}; /* re-admitted stragglers contribute with weight 0 */
    a = s_base(CL_COLL_ALLREDUCE, sb, rb);
    a.weights = w0;
    CL_CHECK(cl_coll_args_check(&a) == COLLAB_OK);

    /* signatures: equal for equal calls, different when a field differs */
    a = s_base(CL_COLL_ALLREDUCE, sb, rb);
    cl_coll_args_t b = a;
    b.self = 2;
    b.sendbuf = NULL;
    CL_CHECK(cl_coll_signature(&a) == cl_coll_signature(&b));
    b.count = 5;
    CL_CHECK(cl_coll_signature(&a) != cl_coll_signature(&b));
    b = a;
    b.op.kind = COLLAB_OP_MAX;
    CL_CHECK(cl_coll_signature(&a) != cl_coll_signature(&b));
    b = a;
    b.small_bytes = 99;
    CL_CHECK(cl_coll_signature(&a) != cl_coll_signature(&b));
    CL_CHECK(cl_coll_signature(NULL) == 0);

    /* the other entry points refuse NULL and strangers */
    CL_CHECK(cl_coll_start(NULL) == COLLAB_ERR_ARG);
    CL_CHECK(cl_coll_on_msg(NULL, NULL) == COLLAB_ERR_ARG);
    CL_CHECK(cl_coll_on_fail(NULL, 1) == COLLAB_ERR_ARG);
    CL_CHECK(cl_coll_on_tick(NULL) == COLLAB_ERR_ARG);
    CL_CHECK(!cl_coll_done(NULL));
    CL_CHECK(cl_coll_release_user_buffers(NULL) == COLLAB_ERR_ARG);
    a = s_base(CL_COLL_ALLREDUCE, sb, rb);
    c = cl_coll_new(&a, &env);
    CL_CHECK(cl_coll_on_fail(c, 0) == COLLAB_ERR_ARG); /* itself */
    CL_CHECK(cl_coll_on_fail(c, 9) == COLLAB_ERR_ARG); /* not a member */
    CL_CHECK(cl_coll_on_msg(c, NULL) == COLLAB_ERR_ARG);
    int n = -1;
    CL_CHECK(cl_coll_contributors(c, &n) == NULL && n == 0); /* not done */
    uint64_t s = 1, r = 1;
    cl_coll_traffic(c, &s, &r);
    CL_CHECK(s == 0 && r == 0);
    cl_coll_destroy(&c);
}

/* Three members of `kind`; member 0 gets `msgs` injected before the run;
   then the run must finish with the expected results. */
typedef struct {
    cl_coll_kind_t kind;
    int root;
    int codec;
    size_t small;
} bcase_t;

typedef struct {
    int32_t in[3][64], out[3][64];
    size_t counts[3], displs[3];
    cl_coll_args_t args[3];
} bfix_t;

static void s_fix(bfix_t *f, const bcase_t *bc, size_t count)
{
    memset(f, 0, sizeof *f);
    for (int r = 0; r < 3; r++) {
        f->counts[r] = count * 4;
        f->displs[r] = (size_t)r * count * 4;
    }
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < 64; k++)
            f->in[i][k] = (int32_t)((1u << i) | ((uint32_t)k << 8));
        bool red = bc->kind == CL_COLL_ALLREDUCE || bc->kind == CL_COLL_REDUCE ||
                   bc->kind == CL_COLL_REDUCE_SCATTER_BLOCK;
        f->args[i] =
            (cl_coll_args_t){.kind = bc->kind,
                             .comm_id = 5,
                             .comm_size = 3,
                             .nmembers = 3,
                             .members = ranks3,
                             .self = i,
                             .root = bc->root,
                             .dtype = red ? (bc->codec ? COLLAB_FLOAT : COLLAB_INT32) : COLLAB_BYTE,
                             .op = {.kind = red && !bc->codec ? COLLAB_OP_BOR : COLLAB_OP_SUM},
                             .count = red ? count : count * 4,
                             .sendbuf = f->in[i],
                             .recvbuf = f->out[i],
                             .sbytes = count * 4,
                             .rbytes = count * 4,
                             .counts = f->counts,
                             .displs = f->displs,
                             .compression = bc->codec,
                             .chunk_bytes = 16,
                             .small_bytes = bc->small};
        if (bc->kind == CL_COLL_BCAST)
            memcpy(f->out[i], f->in[i], sizeof f->in[i]);
        if (bc->codec)
            for (int k = 0; k < 64; k++)
                ((float *)f->in[i])[k] = (float)(i + 1);
    }
}

static int s_inject(th_t *h, int type, uint32_t part, uint32_t chunk, uint32_t aux, int from,
                    const void *data, size_t len)
{
    cl_coll_msg_t m = {.type = (uint8_t)type,
                       .part = part,
                       .chunk = chunk,
                       .aux = aux,
                       .from = from,
                       .data = data,
                       .len = len};
    return th_inject(h, 0, &m);
}

static void test_messages(void)
{
    static const bcase_t cases[] = {
        {CL_COLL_ALLREDUCE, -1, 0, 0},       /* butterfly */
        {CL_COLL_ALLREDUCE, -1, 0, 1 << 20}, /* exchange */
        {CL_COLL_ALLREDUCE, -1, 2, 0},       /* butterfly, int8 */
        {CL_COLL_REDUCE, 1, 0, 0},           /* butterfly, member 0 not the root */
        {CL_COLL_BCAST, 2, 0, 0},            /* chain */
        {CL_COLL_GATHERV, 0, 0, 0},          /* direct */
        {CL_COLL_ALLGATHERV, -1, 0, 0},      /* exchange */
    };
    const size_t count = 10; /* 40 bytes: 3 chunks of 16 per piece */
    uint8_t junk[200];
    for (size_t k = 0; k < sizeof junk; k++)
        junk[k] = (uint8_t)(k * 37 + 1);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const bcase_t *bc = &cases[ci];
        int before = cl_selftest_failures;
        bfix_t f;
        s_fix(&f, bc, count);
        /* The exchange and the broadcast as a swarm that does not sign
           sends them (no proof before the value); what one that signs
           refuses is cl_coll_xproof_test's. */
        bool plain = (bc->kind == CL_COLL_ALLREDUCE && bc->small != 0) ||
                     bc->kind == CL_COLL_BCAST || bc->kind == CL_COLL_ALLGATHERV;
        th_unsigned = plain ? ~(uint64_t)0 : 0;
        th_t *h = th_new(3, f.args);
        CL_CHECK(h != NULL);
        if (h == NULL)
            continue;
        /* refused by the common checks */
        CL_CHECK(s_inject(h, CL_MSG_DATA, 0, 0, 0, 7, junk, 8) == COLLAB_ERR_ARG);
        CL_CHECK(s_inject(h, CL_MSG_DATA, 0, 0, 0, 0, junk, 8) == COLLAB_ERR_ARG);
        CL_CHECK(s_inject(h, CL_MSG_DATA, 0, 0, 0, -3, junk, 8) == COLLAB_ERR_ARG);
        CL_CHECK(s_inject(h, 0, 0, 0, 0, 1, junk, 8) == COLLAB_ERR_ARG);
        CL_CHECK(s_inject(h, 6, 0, 0, 0, 1, junk, 8) == COLLAB_ERR_ARG);
        CL_CHECK(s_inject(h, 255, 0, 0, 0, 1, junk, 8) == COLLAB_ERR_ARG);
        CL_CHECK(s_inject(h, CL_MSG_RESULT, 0, 0, 0, 1, NULL, 8) == COLLAB_ERR_ARG);
        CL_CHECK(s_inject(h, CL_MSG_DONE, 0, 0, 0, 1, junk, 1) == COLLAB_ERR_ARG);
        CL_CHECK(s_inject(h, CL_MSG_DONE, 1, 0, 0, 1, NULL, 0) == COLLAB_ERR_ARG);
        /* out of range for every algorithm */
        for (int type = 1; type <= 4; type++) {
            CL_CHECK(s_inject(h, type, 3, 0, 0, 1, junk, 16) == COLLAB_ERR_ARG);
            CL_CHECK(s_inject(h, type, 0xffffffffu, 0, 0, 1, junk, 16) == COLLAB_ERR_ARG);
            CL_CHECK(s_inject(h, type, 0, 0xffffffffu, 0, 1, junk, 16) == COLLAB_ERR_ARG);
            CL_CHECK(s_inject(h, type, 1, 99, 0, 1, junk, 16) == COLLAB_ERR_ARG);
        }
        /* lengths that fit nothing */
        CL_CHECK(s_inject(h, CL_MSG_RESULT, 1, 0, 0, 1, junk, 15) == COLLAB_ERR_ARG);
        CL_CHECK(s_inject(h, CL_MSG_RESULT, 1, 0, 0, 1, junk, 199) == COLLAB_ERR_ARG);
        CL_CHECK(s_inject(h, CL_MSG_RELAY, 1, 0, 0, 1, junk, 3) == COLLAB_ERR_ARG);
        CL_CHECK(s_inject(h, CL_MSG_DATA, 0, 0, 0, 1, junk, 5) == COLLAB_ERR_ARG);
        /* statuses: wrong length, the sender in its own failed set,
           bits past the last member */
        uint8_t st[2] = {0x02, 0x01};
        CL_CHECK(s_inject(h, CL_MSG_STATUS, 0, 0, 0, 1, st, 2) == COLLAB_ERR_ARG);
        uint8_t st2[2] = {0x08, 0x00};
        CL_CHECK(s_inject(h, CL_MSG_STATUS, 0, 0, 0, 1, st2, 2) == COLLAB_ERR_ARG);
        CL_CHECK(s_inject(h, CL_MSG_STATUS, 0, 0, 0, 1, st, 7) == COLLAB_ERR_ARG);
        CL_CHECK(s_inject(h, CL_MSG_STATUS, 0, 1, 0, 1, st, 2) == COLLAB_ERR_ARG);
        /* butterfly results: bitmap empty or naming non-members */
        if (bc->kind == CL_COLL_ALLREDUCE && bc->small == 0) {
            uint8_t v[1 + 16] = {0};
            CL_CHECK(s_inject(h, CL_MSG_RESULT, 1, 0, 0, 1, v, sizeof v) == COLLAB_ERR_ARG);
            v[0] = 0x10;
            CL_CHECK(s_inject(h, CL_MSG_RESULT, 1, 0, 0, 1, v, sizeof v) == COLLAB_ERR_ARG);
            CL_CHECK(s_inject(h, CL_MSG_RESULT, 1, 0, 7, 1, v, sizeof v) == COLLAB_ERR_ARG);
            if (bc->codec) /* an int8 block shorter than its header */
                CL_CHECK(s_inject(h, CL_MSG_DATA, 0, 0, 0, 1, junk, 3) == COLLAB_ERR_ARG);
            if (!bc->codec) {
                /* A relayed copy of member 2's part (3 floats) from member
                   1, well formed but without member 2's tag for member 0,
                   or naming member 1 as its producer: refused. */
                uint8_t r[1 + 3 * 16 + 12] = {0x07};
                memcpy(r + 1 + 3 * 16, junk, 12);
                CL_CHECK(s_inject(h, CL_MSG_RELAY, 2, 0, 2, 1, r, sizeof r) == COLLAB_ERR_ARG);
                CL_CHECK(s_inject(h, CL_MSG_RELAY, 2, 0, 1, 1, r, sizeof r) == COLLAB_ERR_ARG);
                CL_CHECK(s_inject(h, CL_MSG_RELAY, 2, 0, 3, 1, r, sizeof r) == COLLAB_ERR_ARG);
            }
        }
        if (bc->kind == CL_COLL_ALLREDUCE && bc->small != 0) {
            /* member 2's part sent by member 1 */
            CL_CHECK(s_inject(h, CL_MSG_RESULT, 2, 0, 0, 1, junk, 16) == COLLAB_ERR_ARG);
            CL_CHECK(s_inject(h, CL_MSG_RELAY, 2, 0, 0x80, 1, junk, 16) == COLLAB_ERR_ARG);
            CL_CHECK(s_inject(h, CL_MSG_RELAY, 2, 0, 1, 1, junk, 16) == COLLAB_ERR_ARG);
        }
        if (bc->kind == CL_COLL_REDUCE) /* results go to the root only */
            CL_CHECK(s_inject(h, CL_MSG_RESULT, 0, 0, 0, 2, junk, 17) == COLLAB_ERR_ARG);
        if (bc->kind == CL_COLL_BCAST) {
            CL_CHECK(s_inject(h, CL_MSG_RESULT, 0, 0, 3, 1, junk, 16) == COLLAB_ERR_ARG);
            CL_CHECK(s_inject(h, CL_MSG_RESULT, 0, 0, 2, 1, junk, 17) == COLLAB_ERR_ARG);
        }
        if (bc->kind == CL_COLL_GATHERV) {
            CL_CHECK(s_inject(h, CL_MSG_DATA, 1, 0, 40, 1, junk, 16) == COLLAB_ERR_ARG);
            CL_CHECK(s_inject(h, CL_MSG_RESULT, 2, 0, 40, 1, junk, 16) == COLLAB_ERR_ARG);
        }
        /* then the honest run must still give the right answer */
        th_plan_t plan = {.seed = ci + 1};
        CL_CHECK(th_run(h, &plan) == 0);
        CL_CHECK(th_refused(h) == 0);
        for (int i = 0; i < 3; i++) {
            CL_CHECK(cl_coll_done(th_coll(h, i)));
            CL_CHECK(cl_coll_status(th_coll(h, i)) == COLLAB_OK);
            bool check = bc->kind == CL_COLL_ALLREDUCE || bc->kind == CL_COLL_BCAST ||
                         bc->kind == CL_COLL_ALLGATHERV || i == bc->root;
            bool gather = bc->kind == CL_COLL_GATHERV || bc->kind == CL_COLL_ALLGATHERV;
            for (size_t k = 0; k < (gather ? 3 : 1) * count && check; k++) {
                int32_t want;
                if (bc->kind == CL_COLL_ALLREDUCE || bc->kind == CL_COLL_REDUCE)
                    want = bc->codec ? 0 : (int32_t)(7u | ((uint32_t)k << 8));
                else if (bc->kind == CL_COLL_BCAST)
                    want = f.in[2][k];
                else
                    want = f.in[k / count][k % count];
                if (bc->codec) {
                    float v = ((float *)f.out[i])[k];
                    CL_CHECK(fabsf(v - 6.0f) < 0.1f);
                } else {
                    CL_CHECK(f.out[i][k] == want);
                }
            }
        }
        if (cl_selftest_failures > before)
            fprintf(stderr, "  in message case %zu\n", ci);
        th_destroy(&h);
        th_unsigned = 0;
    }
}

/* Random messages among honest traffic: no crash, no write outside. */
static void test_fuzz(void)
{
    static const bcase_t cases[] = {
        {CL_COLL_ALLREDUCE, -1, 0, 0},
        {CL_COLL_ALLREDUCE, -1, 0, 1 << 20},
        {CL_COLL_ALLREDUCE, -1, 1, 0},
        {CL_COLL_REDUCE, 1, 0, 0},
        {CL_COLL_REDUCE, 1, 0, 1 << 20},
        {CL_COLL_BCAST, 2, 0, 0},
        {CL_COLL_GATHERV, 0, 0, 0},
        {CL_COLL_SCATTERV, 1, 0, 0},
        {CL_COLL_ALLGATHERV, -1, 0, 0},
        {CL_COLL_ALLTOALL, -1, 0, 0},
        {CL_COLL_REDUCE_SCATTER_BLOCK, -1, 0, 0},
        {CL_COLL_BARRIER, -1, 0, 0},
    };
    long fuzzed = 0, accepted = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (uint64_t seed = 1; seed <= 200; seed++) {
            bfix_t f;
            s_fix(&f, &cases[ci], 5);
            th_t *h = th_new(3, f.args);
            CL_CHECK(h != NULL);
            if (h == NULL)
                continue;
            th_plan_t plan = {.seed = seed, .fuzz_every = 1 + (int)(seed % 3)};
            if (seed % 4 == 0) {
                plan.nkill = 1;
                plan.kill_at[0] = (long)(seed % 9);
                plan.kill_who[0] = (int)(seed % 3);
            }
            (void)th_run(h, &plan); /* forged messages may stall it: allowed */
            fuzzed += th_fuzzed(h);
            accepted += th_fuzz_accepted(h);
            th_destroy(&h);
        }
    CL_CHECK(fuzzed > 1000);
    CL_CHECK(accepted < fuzzed);
    printf("fuzz: %ld random messages, %ld accepted\n", fuzzed, accepted);
}

/* Nobody speaks for a live member (docs/security.md §6).  Exchange: no
   relay of a live member's part, neither its bytes nor a claim that they
   are absent; once it failed, a relay completes the repair.  Broadcast:
   no member passes its own bytes for the root's while the root lives. */
static void test_forged_relays(void)
{
    /* The layout of a swarm that does not sign (signed: cl_coll_xproof_test). */
    th_unsigned = ~(uint64_t)0;
    const size_t count = 10; /* exchange: 40 bytes in chunks of 16; bcast: 40 bytes */
    uint8_t data[16];
    for (size_t k = 0; k < sizeof data; k++)
        data[k] = (uint8_t)(k * 3 + 1);
    {
        bcase_t bc = {CL_COLL_ALLREDUCE, -1, 0, 1 << 20}; /* exchange */
        bfix_t f;
        s_fix(&f, &bc, count);
        th_t *h = th_new(3, f.args);
        CL_CHECK(h != NULL);
        if (h == NULL)
            return;
        cl_coll_t *c0 = th_coll(h, 0);
        CL_CHECK(cl_coll_start(c0) == COLLAB_OK);
        /* member 2 alive: nobody relays its part */
        CL_CHECK(s_inject(h, CL_MSG_RELAY, 2, 0, 0, 1, data, sizeof data) == COLLAB_ERR_ARG);
        CL_CHECK(s_inject(h, CL_MSG_RELAY, 2, 0, CL_AUX_ABSENT, 1, NULL, 0) == COLLAB_ERR_ARG);
        /* failed: a holder's relay repairs it */
        cl_coll_on_fail(c0, 2);
        CL_CHECK(s_inject(h, CL_MSG_RELAY, 2, 0, 0, 1, data, sizeof data) == COLLAB_OK);
        th_destroy(&h);
    }
    {
        bcase_t bc = {CL_COLL_BCAST, 1, 0, 0}; /* chain 1 -> 2 -> 0 */
        bfix_t f;
        s_fix(&f, &bc, count);
        th_t *h = th_new(3, f.args);
        CL_CHECK(h != NULL);
        if (h == NULL)
            return;
        CL_CHECK(cl_coll_start(th_coll(h, 0)) == COLLAB_OK);
        /* member 2, member 0's parent, passes its own bytes as a
           stand-in's while the root (member 1) lives */
        CL_CHECK(s_inject(h, CL_MSG_RESULT, 0, 0, 2, 2, data, sizeof data) == COLLAB_ERR_ARG);
        CL_CHECK(s_inject(h, CL_MSG_RELAY, 0, 0, 2, 2, data, sizeof data) == COLLAB_ERR_ARG);
        /* the root's chunk forwarded by the parent: taken */
        CL_CHECK(s_inject(h, CL_MSG_RESULT, 0, 0, 1, 2, data, sizeof data) == COLLAB_OK);
        th_destroy(&h);
    }
    th_unsigned = 0;
}

/* The message member `producer` (comm rank) signs for chunk (part,
   chunk) of collective (comm 5, seq 0), as cl_coll.c builds it. */
static size_t s_sig_msg(uint8_t *m, uint32_t part, uint32_t chunk, uint32_t producer,
                        uint8_t bitmap, const void *val, size_t bytes)
{
    static const char domain[] = "mpicollab chunk v1";
    size_t d = sizeof domain - 1;
    memcpy(m, domain, d);
    memset(m + d, 0, 28);
    m[d] = 5; /* comm id; seq 0 */
    for (int k = 0; k < 4; k++) {
        m[d + 16 + k] = (uint8_t)(part >> (8 * k));
        m[d + 20 + k] = (uint8_t)(chunk >> (8 * k));
        m[d + 24 + k] = (uint8_t)(producer >> (8 * k));
    }
    m[d + 28] = bitmap;
    crypto_generichash(m + d + 29, 32, val, bytes, NULL, 0);
    return d + 29 + 32;
}

/* The harness's identity key of comm rank r (test_coll_harness.c). */
static void s_identity(int r, uint8_t pk[32], uint8_t sk[32])
{
    uint8_t seed[32] = {0};
    memcpy(seed, &r, sizeof r);
    seed[31] = 0x17;
    crypto_box_seed_keypair(pk, sk, seed);
}

/* Signed relay proofs (docs/security.md §6): a relayed copy of member 2's
   part counts only with member 2's valid signature of exactly that value
   and contributor set; a proof of tags is refused in a collective that
   signs; a RESULT from the producer is checked too. */
static void test_signed_relays(void)
{
    const bcase_t bc = {CL_COLL_ALLREDUCE, -1, 0, 0};
    bfix_t f;
    s_fix(&f, &bc, 10); /* part 2: 3 int32, one chunk */
    th_t *h = th_new(3, f.args);
    CL_CHECK(h != NULL);
    if (h == NULL)
        return;
    uint8_t pk2[32], sk2[32], pk1[32], sk1[32];
    s_identity(2, pk2, sk2);
    s_identity(1, pk1, sk1);
    int32_t val[3] = {7, 0x107, 0x207};
    uint8_t m[128], r[1 + CL_COLL_SIG + 12];
    size_t mlen = s_sig_msg(m, 2, 0, 2, 0x07, val, sizeof val);
    r[0] = 0x07;
    memcpy(r + 1 + CL_COLL_SIG, val, sizeof val);
    uint32_t from2 = 2 | CL_AUX_SIGNED;
    /* a garbage proof */
    memset(r + 1, 0x33, CL_COLL_SIG);
    CL_CHECK(s_inject(h, CL_MSG_RELAY, 2, 0, from2, 1, r, sizeof r) == COLLAB_ERR_ARG);
    /* member 1's own key and signature, claiming member 2's chunk */
    CL_CHECK(cl_xsign_sign(sk1, m, mlen, r + 1 + CL_XSIGN_PK, r + 1) == 0);
    CL_CHECK(s_inject(h, CL_MSG_RELAY, 2, 0, from2, 1, r, sizeof r) == COLLAB_ERR_ARG);
    /* ... or naming itself its producer, which it may not be */
    mlen = s_sig_msg(m, 2, 0, 1, 0x07, val, sizeof val);
    CL_CHECK(cl_xsign_sign(sk1, m, mlen, r + 1 + CL_XSIGN_PK, r + 1) == 0);
    CL_CHECK(s_inject(h, CL_MSG_RELAY, 2, 0, 1 | CL_AUX_SIGNED, 1, r, sizeof r) == COLLAB_ERR_ARG);
    /* member 2's signature of another value, of another chunk, of another
       contributor set, or altered */
    int32_t other[3] = {7, 7, 7};
    mlen = s_sig_msg(m, 2, 0, 2, 0x07, other, sizeof other);
    CL_CHECK(cl_xsign_sign(sk2, m, mlen, r + 1 + CL_XSIGN_PK, r + 1) == 0);
    CL_CHECK(s_inject(h, CL_MSG_RELAY, 2, 0, from2, 1, r, sizeof r) == COLLAB_ERR_ARG);
    mlen = s_sig_msg(m, 1, 0, 2, 0x07, val, sizeof val);
    CL_CHECK(cl_xsign_sign(sk2, m, mlen, r + 1 + CL_XSIGN_PK, r + 1) == 0);
    CL_CHECK(s_inject(h, CL_MSG_RELAY, 2, 0, from2, 1, r, sizeof r) == COLLAB_ERR_ARG);
    mlen = s_sig_msg(m, 2, 0, 2, 0x03, val, sizeof val);
    CL_CHECK(cl_xsign_sign(sk2, m, mlen, r + 1 + CL_XSIGN_PK, r + 1) == 0);
    CL_CHECK(s_inject(h, CL_MSG_RELAY, 2, 0, from2, 1, r, sizeof r) == COLLAB_ERR_ARG);
    mlen = s_sig_msg(m, 2, 0, 2, 0x07, val, sizeof val);
    CL_CHECK(cl_xsign_sign(sk2, m, mlen, r + 1 + CL_XSIGN_PK, r + 1) == 0);
    r[1 + CL_XSIGN_PK + 40] ^= 1;
    CL_CHECK(s_inject(h, CL_MSG_RELAY, 2, 0, from2, 1, r, sizeof r) == COLLAB_ERR_ARG);
    CL_CHECK(s_inject(h, CL_MSG_RESULT, 2, 0, CL_AUX_SIGNED, 2, r, sizeof r) == COLLAB_ERR_ARG);
    r[1 + CL_XSIGN_PK + 40] ^= 1;
    /* tags where the collective signs, even well formed */
    uint8_t t[1 + 3 * CL_COLL_TAG + 12] = {0x07};
    memcpy(t + 1 + 3 * CL_COLL_TAG, val, sizeof val);
    CL_CHECK(s_inject(h, CL_MSG_RELAY, 2, 0, 2, 1, t, sizeof t) == COLLAB_ERR_ARG);
    CL_CHECK(s_inject(h, CL_MSG_RESULT, 2, 0, 0, 2, t, sizeof t) == COLLAB_ERR_ARG);
    /* member 2's valid signature, relayed by member 1: taken */
    CL_CHECK(s_inject(h, CL_MSG_RELAY, 2, 0, from2, 1, r, sizeof r) == COLLAB_OK);
    CL_CHECK(memcmp(f.out[0] + 7, val, sizeof val) == 0);
    th_destroy(&h);

    /* A member of wire version 8 in the group: tags (checked as before),
       and a signed proof still counts when it verifies. */
    th_unsigned = 1u << 1;
    s_fix(&f, &bc, 10);
    h = th_new(3, f.args);
    CL_CHECK(h != NULL);
    if (h != NULL) {
        CL_CHECK(s_inject(h, CL_MSG_RELAY, 2, 0, 2, 1, t, sizeof t) == COLLAB_ERR_ARG);
        CL_CHECK(s_inject(h, CL_MSG_RELAY, 2, 0, from2, 1, r, sizeof r) == COLLAB_OK);
        th_destroy(&h);
    }
    s_fix(&f, &bc, 10);
    h = th_new(3, f.args);
    CL_CHECK(h != NULL);
    if (h != NULL) {
        th_plan_t plan = {.seed = 3};
        CL_CHECK(th_run(h, &plan) == 0 && th_suspects(h) == 0);
        for (int i = 0; i < 3; i++)
            CL_CHECK(memcmp(f.out[i], f.out[0], 40) == 0);
        th_destroy(&h);
    }
    th_unsigned = 0;
}

int main(void)
{
    test_args();
    test_messages();
    test_forged_relays();
    test_signed_relays();
    test_fuzz();
    return cl_selftest_end("cl_coll_bad_test");
}
