/*  cl_coll_fail_fx.c - the fixture of cl_coll_fail_test (cl_coll_fail_fx.h).
*/
#include "cl_coll_fail_fx.h"
#include "test_coll_ref.h"
#include "util/cl_selftest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint8_t fx_byte(int rank, size_t k)
{
    uint64_t s = (uint64_t)rank * 7919u + k * 31u + 5;
    return (uint8_t)(th_rand(&s) | 1);
}

bool fx_reduction(cl_coll_kind_t k)
{
    return k == CL_COLL_ALLREDUCE || k == CL_COLL_REDUCE || k == CL_COLL_REDUCE_SCATTER_BLOCK;
}

void fx_setup(fx_t *fx, const fcase_t *tc)
{
    memset(fx, 0, sizeof *fx);
    fx->tc = tc;
    int n = tc->n;
    for (int i = 0; i < n; i++)
        fx->ranks[i] = i + (tc->size - n); /* absent ranks, if any, are the lowest */
    bool red = fx_reduction(tc->kind);
    fx->e = red ? collab_dtype_extent(tc->dt) : 1;
    fx->vec = tc->kind == CL_COLL_REDUCE_SCATTER_BLOCK ? (size_t)tc->size * tc->count : tc->count;
    size_t total = 0;
    for (int r = 0; r < tc->size; r++) {
        fx->counts[r] = tc->count / 2 + (size_t)r;
        fx->displs[r] = total;
        total += fx->counts[r];
    }
    fx->cap = tc->kind == CL_COLL_ALLGATHERV || tc->kind == CL_COLL_GATHERV ||
                      tc->kind == CL_COLL_SCATTERV
                  ? total
              : tc->kind == CL_COLL_ALLTOALL ? (size_t)tc->size * tc->count
                                             : fx->vec * fx->e;
    for (int i = 0; i < n; i++) {
        int me = fx->ranks[i];
        fx->clients[i] = (tc->clients >> i) & 1;
        fx->in[i] = calloc(fx->cap + 1, 1);
        fx->out[i] = calloc(fx->cap + 1, 1);
        if (red && tc->op == COLLAB_OP_BOR) {
            for (size_t k = 0; k < fx->vec; k++)
                ((int32_t *)fx->in[i])[k] = (int32_t)((1u << me) | ((uint32_t)k << 12));
        } else if (red) {
            tr_fill(tc->dt, tc->op, fx->in[i], fx->vec, (uint64_t)me + 1);
        } else if (tc->kind == CL_COLL_ALLTOALL) {
            for (int r = 0; r < tc->size; r++)
                for (size_t k = 0; k < tc->count; k++)
                    fx->in[i][(size_t)r * tc->count + k] = fx_byte(me * 100 + r, k);
        } else if (tc->kind == CL_COLL_SCATTERV) {
            for (int r = 0; r < tc->size; r++)
                for (size_t k = 0; k < fx->counts[r]; k++)
                    fx->in[i][fx->displs[r] + k] = fx_byte(r, k);
        } else {
            for (size_t k = 0; k < fx->cap; k++)
                fx->in[i][k] = fx_byte(me, k);
        }
        cl_coll_args_t *a = &fx->args[i];
        *a = (cl_coll_args_t){.kind = tc->kind,
                              .comm_id = 3,
                              .comm_size = tc->size,
                              .nmembers = n,
                              .members = fx->ranks,
                              .clients = tc->clients ? fx->clients : NULL,
                              .bandwidths = tc->bw,
                              .self = me,
                              .root = -1,
                              .dtype = red ? tc->dt : COLLAB_BYTE,
                              .op = {.kind = tc->op},
                              .count = tc->count,
                              .sendbuf = fx->in[i],
                              .recvbuf = fx->out[i],
                              .strict = tc->strict,
                              .compression = tc->codec,
                              .chunk_bytes = tc->chunk,
                              .small_bytes = tc->small};
        switch (tc->kind) {
        case CL_COLL_BCAST:
            memcpy(fx->out[i], fx->in[i], fx->cap);
            a->root = tc->root;
            break;
        case CL_COLL_REDUCE:
        case CL_COLL_GATHERV:
        case CL_COLL_SCATTERV:
            a->root = tc->root;
            break;
        default:
            break;
        }
        if (tc->kind == CL_COLL_ALLGATHERV || tc->kind == CL_COLL_GATHERV) {
            a->sbytes = fx->counts[me];
            a->counts = fx->counts;
            a->displs = fx->displs;
        }
        if (tc->kind == CL_COLL_SCATTERV) {
            a->rbytes = fx->counts[me];
            a->counts = fx->counts;
            a->displs = fx->displs;
        }
        if (tc->inplace && tc->kind == CL_COLL_ALLREDUCE) {
            memcpy(fx->out[i], fx->in[i], fx->cap);
            a->sendbuf = NULL;
        }
    }
}

void fx_teardown(fx_t *fx)
{
    for (int i = 0; i < fx->tc->n; i++) {
        free(fx->in[i]);
        free(fx->out[i]);
    }
}

int fx_index(const fx_t *fx, int rank)
{
    for (int i = 0; i < fx->tc->n; i++)
        if (fx->ranks[i] == rank)
            return i;
    return -1;
}

/* Checks a reduction result at member i against the survivors. */
void fx_check_reduction(fx_t *fx, th_t *h, int i, const uint8_t *res, size_t count,
                              size_t block)
{
    const fcase_t *tc = fx->tc;
    int n = tc->n;
    if (tc->op == COLLAB_OP_BOR) {
        uint32_t must = 0, may = 0;
        for (int m = 0; m < n; m++) {
            may |= 1u << fx->ranks[m];
            if (th_alive(h, m))
                must |= 1u << fx->ranks[m];
        }
        for (size_t k = 0; k < count; k++) {
            uint32_t v = (uint32_t)((const int32_t *)res)[k];
            uint32_t tag = (uint32_t)(block * tc->count + k) << 12;
            bool ok = (v & must) == must && (v & 0xfffu & ~may) == 0 && (v & ~0xfffu) == tag;
            if (!ok) {
                CL_CHECK(ok);
                fprintf(stderr, "  member %d element %zu: %x (must %x may %x tag %x)\n", i, k, v,
                        must, may, tag);
                return;
            }
        }
        return;
    }
    /* SUM (double or float): size x mean over a contributor set holding
       every survivor and any of the dead (they may have made it in). */
    int dead[MAXN], nd = 0;
    for (int m = 0; m < n; m++)
        if (!th_alive(h, m))
            dead[nd++] = m;
    collab_op_t op = {.kind = tc->op};
    /* adaptive: the strongest codec a member may use, int8 */
    double tol = tc->codec ? tr_tolerance(tc->codec == CL_COLL_COMPRESSION_ADAPTIVE ? 2 : tc->codec,
                                          n) * tc->size
                           : 1e-9;
    uint8_t *ref = malloc(count * fx->e + 1);
    bool *ok = calloc(count + 1, sizeof *ok);
    for (unsigned sub = 0; sub < (1u << nd); sub++) {
        const void *ins[MAXN];
        int k = 0;
        for (int m = 0; m < n; m++) {
            bool in = th_alive(h, m);
            for (int d = 0; d < nd; d++)
                if (dead[d] == m && ((sub >> d) & 1))
                    in = true;
            if (in)
                ins[k++] = fx->in[m] + block * tc->count * fx->e;
        }
        tr_expect(tc->dt, &op, ref, ins, NULL, k, tc->size, count);
        for (size_t j = 0; j < count; j++) {
            double v = tc->dt == COLLAB_FLOAT ? ((const float *)res)[j] : ((const double *)res)[j];
            double x = tc->dt == COLLAB_FLOAT ? ((float *)ref)[j] : ((double *)ref)[j];
            ok[j] = ok[j] || fabs(v - x) <= tol;
        }
    }
    for (size_t j = 0; j < count; j++)
        if (!ok[j]) {
            CL_CHECK(ok[j]);
            fprintf(stderr, "  member %d element %zu: %.17g matches no contributor set\n", i, j,
                    tc->dt == COLLAB_FLOAT ? ((const float *)res)[j] : ((const double *)res)[j]);
            break;
        }
    free(ref);
    free(ok);
}

void fx_counts(int *checks, int *failures)
{
    *checks = cl_selftest_checks;
    *failures = cl_selftest_failures;
}
