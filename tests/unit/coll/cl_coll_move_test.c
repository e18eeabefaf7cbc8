/*  cl_coll_move_test.c - selftest of the data-movement collectives without
    failures: bcast (tree and chain, root absent), allgatherv, gatherv,
    scatterv and alltoall (in place, ranks absent, zero-sized pieces, a
    piece longer than its slot).  Results are compared byte for byte with
    what a plain loop expects; bytes outside every slot must stay untouched.
*/
#include "test_coll_harness.h"
#include "util/cl_selftest.h"

#include <stdlib.h>
#include <string.h>

#define MAXN 12
#define GUARD 0xa5

typedef struct {
    cl_coll_kind_t kind;
    int n, size;
    int ranks[MAXN]; /* all zero: 0..n-1 */
    int root;
    size_t count; /* bcast bytes, alltoall block bytes, v-kinds: max slot */
    bool inplace;
    size_t chunk;
    bool mismatch; /* member 1 sends one byte more than its slot */
} mcase_t;

static uint8_t s_byte(int rank, size_t k, uint64_t seed)
{
    uint64_t s = seed * 1000003u + (uint64_t)rank * 7919u + k;
    return (uint8_t)(th_rand(&s) | 1); /* never 0: absent slots are */
}

static bool s_member(const int *ranks, int n, int r)
{
    for (int i = 0; i < n; i++)
        if (ranks[i] == r)
            return true;
    return false;
}

static int s_run(const mcase_t *tc, uint64_t seed)
{
    int before = cl_selftest_failures;
    int n = tc->n, size = tc->size;
    int ranks[MAXN];
    bool given = false;
    for (int i = 0; i < n; i++)
        given = given || tc->ranks[i] != 0;
    for (int i = 0; i < n; i++)
        ranks[i] = given ? tc->ranks[i] : i;
    size_t counts[MAXN + 4], displs[MAXN + 4], total = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = (tc->count * (size_t)(r + 1) + seed) % (tc->count + 1);
        displs[r] = total + (size_t)(r % 2); /* gaps between slots */
        total = displs[r] + counts[r];
    }
    size_t cap = tc->kind == CL_COLL_ALLTOALL ? (size_t)size * tc->count
                 : tc->kind == CL_COLL_BCAST  ? tc->count
                                              : total;
    uint8_t *send[MAXN], *recv[MAXN];
    cl_coll_args_t args[MAXN];
    int effroot = s_member(ranks, n, tc->root) ? tc->root : ranks[0];
    for (int i = 0; i < n; i++) {
        int me = ranks[i];
        bool at_root = me == tc->root;
        send[i] = malloc(cap + 2);
        recv[i] = malloc(cap + 2);
        memset(recv[i], GUARD, cap + 2);
        memset(send[i], 0, cap + 2);
        args[i] = (cl_coll_args_t){.kind = tc->kind,
                                   .comm_id = 9,
                                   .seq = seed,
                                   .comm_size = size,
                                   .nmembers = n,
                                   .members = ranks,
                                   .self = me,
                                   .root = -1,
                                   .dtype = COLLAB_BYTE,
                                   .op = {.kind = COLLAB_OP_SUM},
                                   .chunk_bytes = tc->chunk,
                                   .small_bytes = 1 << 20};
        cl_coll_args_t *a = &args[i];
        switch (tc->kind) {
        case CL_COLL_BCAST:
            a->root = tc->root;
            a->count = tc->count;
            for (size_t k = 0; k < tc->count; k++)
                recv[i][k] = s_byte(me, k, seed);
            a->recvbuf = recv[i];
            break;
        case CL_COLL_ALLGATHERV:
        case CL_COLL_GATHERV:
            a->root = tc->kind == CL_COLL_GATHERV ? tc->root : -1;
            a->sbytes = counts[me] + (tc->mismatch && i == 1 ? 1 : 0);
            for (size_t k = 0; k < a->sbytes; k++)
                send[i][k] = s_byte(me, k, seed);
            a->sendbuf = send[i];
            a->recvbuf = recv[i];
            a->counts = counts;
            a->displs = displs;
            if (tc->inplace && (tc->kind == CL_COLL_ALLGATHERV || at_root)) {
                memcpy(recv[i] + displs[me], send[i], counts[me]);
                a->sendbuf = NULL;
            }
            break;
        case CL_COLL_SCATTERV:
            a->root = tc->root;
            a->rbytes = counts[me];
            a->recvbuf = recv[i];
            if (at_root) {
                for (int r = 0; r < size; r++)
                    for (size_t k = 0; k < counts[r]; k++)
                        send[i][displs[r] + k] = s_byte(r, k, seed);
                a->sendbuf = send[i];
                a->counts = counts;
                a->displs = displs;
                if (tc->inplace)
                    a->recvbuf = NULL;
            }
            break;
        default: /* alltoall */
            a->count = tc->count;
            for (int r = 0; r < size; r++)
                for (size_t k = 0; k < tc->count; k++)
                    send[i][(size_t)r * tc->count + k] = s_byte(me * 100 + r, k, seed);
            a->sendbuf = send[i];
            a->recvbuf = recv[i];
            if (tc->inplace) {
                memcpy(recv[i], send[i], cap);
                a->sendbuf = NULL;
            }
            break;
        }
    }
    th_t *h = th_new(n, args);
    CL_CHECK(h != NULL);
    if (h == NULL)
        goto out;
    th_plan_t plan = {.seed = seed};
    CL_CHECK(th_run(h, &plan) == 0);
    CL_CHECK(th_refused(h) == 0);
    CL_CHECK(th_suspects(h) == 0);
    for (int i = 0; i < n; i++) {
        int me = ranks[i];
        cl_coll_t *c = th_coll(h, i);
        CL_CHECK(cl_coll_done(c));
        int st = cl_coll_status(c);
        bool receives = tc->kind == CL_COLL_ALLGATHERV || tc->kind == CL_COLL_ALLTOALL ||
                        tc->kind == CL_COLL_BCAST ||
                        (tc->kind == CL_COLL_GATHERV && me == tc->root) ||
                        (tc->kind == CL_COLL_SCATTERV && !(tc->inplace && me == tc->root));
        if (tc->mismatch && receives && tc->kind != CL_COLL_SCATTERV)
            CL_CHECK(st == COLLAB_ERR_TRUNCATE);
        else
            CL_CHECK(st == COLLAB_OK);
        uint8_t *want = malloc(cap + 2);
        memset(want, GUARD, cap + 2);
        switch (tc->kind) {
        case CL_COLL_BCAST:
            for (size_t k = 0; k < tc->count; k++)
                want[k] = s_byte(effroot, k, seed);
            break;
        case CL_COLL_ALLGATHERV:
        case CL_COLL_GATHERV:
            if (!receives) {
                memcpy(want, recv[i], cap + 2); /* untouched (checked below) */
                memset(want, GUARD, cap + 2);
                break;
            }
            for (int r = 0; r < size; r++)
                for (size_t k = 0; k < counts[r]; k++)
                    want[displs[r] + k] = !s_member(ranks, n, r) || (tc->mismatch && r == ranks[1])
                                              ? 0
                                              : s_byte(r, k, seed);
            break;
        case CL_COLL_SCATTERV:
            if (!receives)
                break;
            for (size_t k = 0; k < counts[me]; k++)
                want[k] = s_member(ranks, n, tc->root) ? s_byte(me, k, seed) : 0;
            break;
        default:
            for (int r = 0; r < size; r++)
                for (size_t k = 0; k < tc->count; k++)
                    want[(size_t)r * tc->count + k] =
                        s_member(ranks, n, r) ? s_byte(r * 100 + me, k, seed) : 0;
            break;
        }
        if (memcmp(recv[i], want, cap + 2) != 0) {
            CL_CHECK(memcmp(recv[i], want, cap + 2) == 0);
            for (size_t k = 0; k < cap + 2; k++)
                if (recv[i][k] != want[k]) {
                    fprintf(stderr, "  member %d byte %zu: %02x, want %02x\n", i, k, recv[i][k],
                            want[k]);
                    break;
                }
        }
        free(want);
        if (tc->kind == CL_COLL_BCAST) {
            int nc = 0;
            const int *contrib = cl_coll_contributors(c, &nc);
            CL_CHECK(tc->count == 0 || (nc == 1 && contrib[0] == effroot));
        }
    }
out:
    if (cl_selftest_failures > before)
        fprintf(stderr,
                "  in case kind=%d n=%d size=%d root=%d count=%zu inplace=%d chunk=%zu "
                "mismatch=%d seed=%llu\n",
                tc->kind, n, size, tc->root, tc->count, tc->inplace, tc->chunk, tc->mismatch,
                (unsigned long long)seed);
    th_destroy(&h);
    for (int i = 0; i < n; i++) {
        free(send[i]);
        free(recv[i]);
    }
    return cl_selftest_failures - before;
}

static void s_cases(mcase_t tc, int seeds)
{
    for (int s = 1; s <= seeds; s++)
        if (s_run(&tc, (uint64_t)s) > 0)
            return;
}

static void test_bcast(void)
{
    static const size_t sizes[] = {0, 1, 63, 64, 65, 1000};
    for (int n = 1; n <= 9; n += 2)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int root = 0; root < n; root += 2) {
                mcase_t tc = {.kind = CL_COLL_BCAST,
                              .n = n,
                              .size = n,
                              .root = root,
                              .count = sizes[s],
                              .chunk = 64};
                s_cases(tc, 2);
                tc.chunk = 4096; /* one chunk: binomial tree */
                s_cases(tc, 1);
            }
    /* root absent: the lowest member acts as root */
    mcase_t abs = {.kind = CL_COLL_BCAST,
                   .n = 4,
                   .size = 6,
                   .ranks = {1, 2, 4, 5},
                   .root = 3,
                   .count = 500,
                   .chunk = 32};
    s_cases(abs, 2);
    abs.chunk = 0;
    s_cases(abs, 1);
}

static void test_gathers(void)
{
    static const cl_coll_kind_t kinds[] = {CL_COLL_ALLGATHERV, CL_COLL_GATHERV, CL_COLL_SCATTERV,
                                           CL_COLL_ALLTOALL};
    for (size_t k = 0; k < 4; k++)
        for (int n = 1; n <= 6; n++)
            for (int inplace = 0; inplace < 2; inplace++) {
                mcase_t tc = {.kind = kinds[k],
                              .n = n,
                              .size = n,
                              .root = n / 2,
                              .count = 90,
                              .inplace = inplace,
                              .chunk = 32};
                s_cases(tc, 2);
                tc.count = 0;
                s_cases(tc, 1);
            }
    for (size_t k = 0; k < 4; k++) {
        /* ranks absent (zero slots), root present and absent */
        mcase_t tc = {.kind = kinds[k],
                      .n = 4,
                      .size = 7,
                      .ranks = {0, 2, 3, 6},
                      .root = 3,
                      .count = 50,
                      .chunk = 16};
        s_cases(tc, 2);
        tc.root = 4;
        s_cases(tc, 2);
        tc.inplace = true;
        tc.root = 6;
        s_cases(tc, 1);
    }
    /* a piece longer than its slot: zeros and COLLAB_ERR_TRUNCATE */
    for (size_t k = 0; k < 2; k++) {
        mcase_t tc = {.kind = kinds[k],
                      .n = 3,
                      .size = 3,
                      .root = 0,
                      .count = 40,
                      .chunk = 16,
                      .mismatch = true};
        s_cases(tc, 2);
    }
}

int main(void)
{
    test_bcast();
    test_gathers();
    return cl_selftest_end("cl_coll_move_test");
}
