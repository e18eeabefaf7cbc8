/*  dt_check.c - derived datatypes, Alltoallv/w, nonblocking prefix
    reductions and user ops on odd-sized elements, compared with MPICH.

    Built with mpicc.mpich and run unchanged on real MPICH and on
    mpicollab (testlist mode "compare"): rank 0 prints one
    "dt_check: " line per check with what every rank computed (a hash of
    its result buffer and the queried values), so any difference from
    MPICH's answers fails the test.  Rank 0 also checks a few results
    against values computed here and prints FAIL: when they differ.
*/
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_NAME "dt_check"
#include "compare_report.h"

static void fill(void *p, size_t n, int seed)
{
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(i * 7 + seed * 31 + 1);
}

/* Queries, envelope and a pack/unpack round trip of t. */
static void describe(const char *name, MPI_Datatype t, int count)
{
    MPI_Aint lb, ext, tlb, text;
    int sz, ni, na, nd, comb;
    MPI_Type_size(t, &sz);
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    if (rank == 0)
        printf("dt_check: %-28s size %d lb %ld extent %ld true_lb %ld true_extent %ld "
               "envelope %d %d %d combiner %d\n",
               name, sz, (long)lb, (long)ext, (long)tlb, (long)text, ni, na, nd, comb);
    if (comb != MPI_COMBINER_NAMED) {
        int *ints = malloc(sizeof(int) * (size_t)(ni + 1));
        MPI_Aint *addrs = malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
        MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)(nd + 1));
        MPI_Type_get_contents(t, ni, na, nd, ints, addrs, types);
        uint64_t h =
            fnv(ints, sizeof(int) * (size_t)ni) ^ fnv(addrs, sizeof(MPI_Aint) * (size_t)na);
        for (int k = 0; k < nd; k++) {
            int a, b, c, cb;
            MPI_Type_get_envelope(types[k], &a, &b, &c, &cb);
            h = h * 31 + (uint64_t)cb;
            if (cb != MPI_COMBINER_NAMED)
                MPI_Type_free(&types[k]);
        }
        if (rank == 0)
            printf("dt_check: %-28s contents %016llx\n", name, (unsigned long long)h);
        free(ints), free(addrs), free(types);
    }
    /* pack / unpack */
    size_t span = (size_t)((count - 1) * ext + tlb + text) + 64;
    char *in = malloc(span), *out = calloc(1, span);
    fill(in, span, 3);
    int psz, pos = 0;
    MPI_Pack_size(count, t, MPI_COMM_WORLD, &psz);
    char *packed = calloc(1, (size_t)psz + 1);
    MPI_Pack(in, count, t, packed, psz, &pos, MPI_COMM_WORLD);
    uint64_t hp = fnv(packed, (size_t)pos);
    int upos = 0;
    MPI_Unpack(packed, psz, &upos, out, count, t, MPI_COMM_WORLD);
    if (rank == 0)
        printf("dt_check: %-28s pack_size %d packed %d hash %016llx unpacked %016llx\n", name, psz,
               pos, (unsigned long long)hp, (unsigned long long)fnv(out, span));
    free(in), free(out), free(packed);
}

/* Sends count elements of t around a ring, then broadcasts, gathers and
   all-to-alls them; reports a hash of each receive buffer. */
static void move(const char *name, MPI_Datatype t, int count)
{
    MPI_Aint lb, ext, tlb, text;
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    size_t span = (size_t)((count - 1) * ext + tlb + text);
    size_t all = (size_t)size * (size_t)count * (size_t)ext + (size_t)(tlb + text) + 64;
    char *sb = malloc(all), *rb = malloc(all);
    char label[64];
    /* ring */
    fill(sb, all, rank);
    memset(rb, 0xee, all);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    MPI_Status st;
    MPI_Sendrecv(sb, count, t, to, 5, rb, count, t, from, 5, MPI_COMM_WORLD, &st);
    int got;
    MPI_Get_count(&st, t, &got);
    snprintf(label, sizeof label, "%s.sendrecv", name);
    report(label, fnv(rb, span) ^ (uint64_t)got);
    /* nonblocking ring */
    memset(rb, 0xee, all);
    MPI_Request rq[2];
    MPI_Irecv(rb, count, t, from, 6, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(sb, count, t, to, 6, MPI_COMM_WORLD, &rq[1]);
    MPI_Status sts[2];
    MPI_Waitall(2, rq, sts);
    snprintf(label, sizeof label, "%s.isend", name);
    report(label, fnv(rb, span));
    /* bcast */
    memcpy(rb, sb, all);
    MPI_Bcast(rb, count, t, size - 1, MPI_COMM_WORLD);
    snprintf(label, sizeof label, "%s.bcast", name);
    report(label, fnv(rb, span));
    /* allgather */
    memset(rb, 0xee, all);
    MPI_Allgather(sb, count, t, rb, count, t, MPI_COMM_WORLD);
    snprintf(label, sizeof label, "%s.allgather", name);
    report(label, fnv(rb, (size_t)((size * count - 1) * ext + tlb + text)));
    /* gather to 0, then scatter from 0 */
    memset(rb, 0xee, all);
    MPI_Gather(sb, count, t, rb, count, t, 0, MPI_COMM_WORLD);
    snprintf(label, sizeof label, "%s.gather", name);
    report(label, rank == 0 ? fnv(rb, (size_t)((size * count - 1) * ext + tlb + text)) : 0);
    memset(rb, 0xee, all);
    MPI_Scatter(sb, count, t, rb, count, t, 0, MPI_COMM_WORLD);
    snprintf(label, sizeof label, "%s.scatter", name);
    report(label, fnv(rb, span));
    /* alltoall, blocking and not */
    memset(rb, 0xee, all);
    MPI_Alltoall(sb, count, t, rb, count, t, MPI_COMM_WORLD);
    snprintf(label, sizeof label, "%s.alltoall", name);
    report(label, fnv(rb, (size_t)((size * count - 1) * ext + tlb + text)));
    memset(rb, 0xee, all);
    MPI_Request r;
    MPI_Iallgather(sb, count, t, rb, count, t, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    snprintf(label, sizeof label, "%s.iallgather", name);
    report(label, fnv(rb, (size_t)((size * count - 1) * ext + tlb + text)));
    free(sb), free(rb);
}

/* ---------------------------------------------------------------------- */

typedef struct {
    double x[3];
} vec3_t; /* 24 bytes */
typedef struct {
    int v[9];
} i9_t; /* 36 bytes */
typedef struct {
    double m[50];
} big_t; /* 400 bytes */

static void add3(void *in, void *io, int *len, MPI_Datatype *dt)
{
    (void)dt;
    vec3_t *a = in, *b = io;
    for (int i = 0; i < *len; i++)
        for (int k = 0; k < 3; k++)
            b[i].x[k] += a[i].x[k];
}

/* Non-commutative: 3x3 integer matrix product, io = in x io. */
static void matmul(void *in, void *io, int *len, MPI_Datatype *dt)
{
    (void)dt;
    i9_t *a = in, *b = io;
    for (int i = 0; i < *len; i++) {
        i9_t c;
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++) {
                long s = 0;
                for (int j = 0; j < 3; j++)
                    s += (long)a[i].v[r * 3 + j] * b[i].v[j * 3 + k];
                c.v[r * 3 + k] = (int)(s % 1000003);
            }
        b[i] = c;
    }
}

static void maxbig(void *in, void *io, int *len, MPI_Datatype *dt)
{
    (void)dt;
    big_t *a = in, *b = io;
    for (int i = 0; i < *len; i++)
        for (int k = 0; k < 50; k++)
            if (a[i].m[k] > b[i].m[k])
                b[i].m[k] = a[i].m[k];
}

/* Sums every other int of a strided vector type. */
static void sum_strided(void *in, void *io, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int *a = in, *b = io;
    for (int i = 0; i < *len; i++)
        for (int k = 0; k < 4; k++)
            b[i * 8 + 2 * k] += a[i * 8 + 2 * k];
}

static void user_ops(void)
{
    MPI_Op op;
    MPI_Datatype t;
    /* 24 bytes: contiguous doubles */
    MPI_Type_contiguous(3, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    MPI_Op_create(add3, 1, &op);
    vec3_t s[5], r[5];
    for (int i = 0; i < 5; i++)
        for (int k = 0; k < 3; k++)
            s[i].x[k] = rank * 10 + i + k * 0.5;
    MPI_Allreduce(s, r, 5, t, op, MPI_COMM_WORLD);
    report("op24.allreduce", fnv(r, sizeof r));
    double want = 0;
    for (int q = 0; q < size; q++)
        want += q * 10 + 4 + 1.0;
    expect(r[4].x[2] == want, "24-byte user op sum");
    memset(r, 0, sizeof r);
    MPI_Reduce(s, r, 5, t, op, size - 1, MPI_COMM_WORLD);
    report("op24.reduce", fnv(r, sizeof r));
    MPI_Request q;
    memset(r, 0, sizeof r);
    MPI_Iallreduce(s, r, 5, t, op, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    report("op24.iallreduce", fnv(r, sizeof r));
    MPI_Op_free(&op);
    MPI_Type_free(&t);
    /* 36 bytes, non-commutative */
    MPI_Type_contiguous(9, MPI_INT, &t);
    MPI_Type_commit(&t);
    MPI_Op_create(matmul, 0, &op);
    i9_t m[2], mr[2];
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 9; k++)
            m[i].v[k] = (rank + 1) * (k + 1 + i) % 17;
    MPI_Allreduce(m, mr, 2, t, op, MPI_COMM_WORLD);
    report("op36.allreduce", fnv(mr, sizeof mr));
    memset(mr, 0, sizeof mr);
    MPI_Reduce(m, mr, 2, t, op, 0, MPI_COMM_WORLD);
    report("op36.reduce", fnv(mr, sizeof mr));
    MPI_Op_free(&op);
    MPI_Type_free(&t);
    /* 400 bytes */
    MPI_Type_contiguous(50, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    MPI_Op_create(maxbig, 1, &op);
    big_t b[3], br[3];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 50; k++)
            b[i].m[k] = (double)((rank * 13 + k * 7 + i) % 23);
    MPI_Allreduce(b, br, 3, t, op, MPI_COMM_WORLD);
    report("op400.allreduce", fnv(br, sizeof br));
    MPI_Op_free(&op);
    MPI_Type_free(&t);
    /* strided vector with a user op: only the vector's ints change */
    MPI_Type_vector(4, 1, 2, MPI_INT, &t);
    MPI_Type_commit(&t);
    MPI_Datatype rt;
    MPI_Type_create_resized(t, 0, 8 * sizeof(int), &rt);
    MPI_Type_commit(&rt);
    MPI_Op_create(sum_strided, 1, &op);
    int vs[16], vr[16];
    for (int k = 0; k < 16; k++)
        vs[k] = rank * 100 + k, vr[k] = -1;
    MPI_Allreduce(vs, vr, 2, rt, op, MPI_COMM_WORLD);
    report("opvec.allreduce", fnv(vr, sizeof vr));
    expect(vr[1] == -1, "strided user op leaves the gaps alone");
    /* the same op and type in a reduce-scatter, a scan and an Iexscan */
    int *big = malloc(sizeof(int) * 8 * (size_t)size), rsb[8];
    for (int k = 0; k < 8 * size; k++)
        big[k] = rank * 7 + k;
    for (int k = 0; k < 8; k++)
        rsb[k] = -1;
    MPI_Reduce_scatter_block(big, rsb, 1, rt, op, MPI_COMM_WORLD);
    report("opvec.reduce_scatter_block", fnv(rsb, sizeof rsb));
    for (int k = 0; k < 16; k++)
        vr[k] = -1;
    MPI_Scan(vs, vr, 2, rt, op, MPI_COMM_WORLD);
    report("opvec.scan", fnv(vr, sizeof vr));
    for (int k = 0; k < 16; k++)
        vr[k] = -1;
    MPI_Request xq;
    MPI_Iexscan(vs, vr, 2, rt, op, MPI_COMM_WORLD, &xq);
    MPI_Wait(&xq, MPI_STATUS_IGNORE);
    report("opvec.iexscan", rank == 0 ? 0 : fnv(vr, sizeof vr));
    free(big);
    MPI_Op_free(&op);
    MPI_Type_free(&rt);
    MPI_Type_free(&t);
}

static void alltoallv(void)
{
    int n = size;
    int *sc = malloc(sizeof(int) * n), *sd = malloc(sizeof(int) * n);
    int *rc = malloc(sizeof(int) * n), *rd = malloc(sizeof(int) * n);
    int stot = 0, rtot = 0;
    for (int j = 0; j < n; j++) {
        sc[j] = (rank + 2 * j) % 4 + 1; /* what I send to j */
        rc[j] = (j + 2 * rank) % 4 + 1; /* what j sends to me */
        sd[j] = stot;                   /* a gap of one after each block */
        rd[j] = rtot;                   /* a gap of two */
        stot += sc[j] + 1;
        rtot += rc[j] + 2;
    }
    int *sb = malloc(sizeof(int) * (size_t)stot), *rb = malloc(sizeof(int) * (size_t)rtot);
    for (int k = 0; k < stot; k++)
        sb[k] = rank * 1000 + k;
    for (int k = 0; k < rtot; k++)
        rb[k] = -7;
    MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD);
    report("alltoallv.int", fnv(rb, sizeof(int) * (size_t)rtot));
    MPI_Request q;
    for (int k = 0; k < rtot; k++)
        rb[k] = -7;
    MPI_Ialltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    report("ialltoallv.int", fnv(rb, sizeof(int) * (size_t)rtot));
    /* a strided vector type with Alltoallv */
    MPI_Datatype v, vr;
    MPI_Type_vector(2, 1, 3, MPI_INT, &v);
    MPI_Type_create_resized(v, 0, 2 * sizeof(int), &vr);
    MPI_Type_commit(&vr);
    int *big = malloc(sizeof(int) * (size_t)(rtot * 2 + 8));
    for (int k = 0; k < rtot * 2 + 8; k++)
        big[k] = -3;
    int *sb2 = malloc(sizeof(int) * (size_t)(stot * 2 + 8));
    for (int k = 0; k < stot * 2 + 8; k++)
        sb2[k] = rank * 1000 + k;
    int *sc2 = malloc(sizeof(int) * n), *rc2 = malloc(sizeof(int) * n);
    for (int j = 0; j < n; j++)
        sc2[j] = sc[j] / 2 + 1, rc2[j] = rc[j] / 2 + 1;
    MPI_Alltoallv(sb2, sc2, sd, vr, big, rc2, rd, vr, MPI_COMM_WORLD);
    report("alltoallv.vector", fnv(big, sizeof(int) * (size_t)(rtot * 2 + 8)));
    /* Alltoallw: ints to even ranks, doubles-as-2-ints to odd, byte displacements */
    MPI_Datatype *st = malloc(sizeof(MPI_Datatype) * n), *rt = malloc(sizeof(MPI_Datatype) * n);
    int *sdb = malloc(sizeof(int) * n), *rdb = malloc(sizeof(int) * n);
    for (int j = 0; j < n; j++) {
        st[j] = j % 2 ? vr : MPI_INT;
        rt[j] = rank % 2 ? vr : MPI_INT;
        sdb[j] = sd[j] * (int)sizeof(int);
        rdb[j] = rd[j] * 2 * (int)sizeof(int); /* receive blocks must not overlap */
    }
    for (int j = 0; j < n; j++) {
        sc2[j] = j % 2 ? (sc[j] + 1) / 2 : sc[j];
        rc2[j] = rank % 2 ? (rc[j] + 1) / 2 : rc[j];
    }
    /* Counts must match in size: ints and vr (2 ints) */
    for (int j = 0; j < n; j++) {
        sc2[j] = j % 2 ? 1 : 2;
        rc2[j] = rank % 2 ? 1 : 2;
    }
    for (int k = 0; k < rtot * 2 + 8; k++)
        big[k] = -3;
    MPI_Alltoallw(sb2, sc2, sdb, st, big, rc2, rdb, rt, MPI_COMM_WORLD);
    report("alltoallw.mixed", fnv(big, sizeof(int) * (size_t)(rtot * 2 + 8)));
    for (int k = 0; k < rtot * 2 + 8; k++)
        big[k] = -3;
    MPI_Ialltoallw(sb2, sc2, sdb, st, big, rc2, rdb, rt, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    report("ialltoallw.mixed", fnv(big, sizeof(int) * (size_t)(rtot * 2 + 8)));
    MPI_Type_free(&v);
    MPI_Type_free(&vr);
    free(sc), free(sd), free(rc), free(rd), free(sb), free(rb), free(big), free(sb2), free(sc2),
        free(rc2), free(st), free(rt), free(sdb), free(rdb);
}

static void scans(void)
{
    int v[3] = {rank + 1, 2 * rank, 7}, r[3] = {-1, -1, -1};
    MPI_Request q;
    MPI_Iscan(v, r, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    report("iscan.sum", fnv(r, sizeof r));
    expect(r[0] == (rank + 1) * (rank + 2) / 2, "iscan sum");
    r[0] = r[1] = r[2] = -1;
    MPI_Iexscan(v, r, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    report("iexscan.sum", rank == 0 ? 0 : fnv(r, sizeof r)); /* rank 0: undefined */
    int m = rank * 3 % 5, mr = -1;
    MPI_Iscan(&m, &mr, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    report("iscan.max", (uint64_t)mr);
}

/* Persistent collectives: each started several times with new data. */
static void persistent(void)
{
    int v[4], r[4], b[3];
    MPI_Request q[3];
    MPI_Allreduce_init(v, r, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]);
    MPI_Bcast_init(b, 3, MPI_INT, size - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &q[1]);
    int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size);
    int *ab = malloc(sizeof(int) * 2 * size), *ar = malloc(sizeof(int) * 2 * size);
    for (int j = 0; j < size; j++)
        sc[j] = (rank + j) % 2 + 1, sd[j] = 2 * j;
    int *rc = malloc(sizeof(int) * size);
    for (int j = 0; j < size; j++)
        rc[j] = (j + rank) % 2 + 1;
    MPI_Alltoallv_init(ab, sc, sd, MPI_INT, ar, rc, sd, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL,
                       &q[2]);
    uint64_t h = 0;
    for (int round = 0; round < 3; round++) {
        for (int k = 0; k < 4; k++)
            v[k] = rank * 10 + k + round * 100, r[k] = -1;
        for (int k = 0; k < 3; k++)
            b[k] = rank == size - 1 ? round * 7 + k : -1;
        for (int k = 0; k < 2 * size; k++)
            ab[k] = rank * 1000 + round * 10 + k, ar[k] = -1;
        if (round == 1) {
            MPI_Startall(3, q);
        } else {
            for (int k = 0; k < 3; k++)
                MPI_Start(&q[k]);
        }
        MPI_Status st[3];
        MPI_Waitall(3, q, st);
        expect(q[0] != MPI_REQUEST_NULL, "a persistent request stays after completion");
        int want = 0;
        for (int p = 0; p < size; p++)
            want += p * 10 + 3 + round * 100;
        expect(r[3] == want, "persistent allreduce sum");
        h = h * 31 + fnv(r, sizeof r);
        h = h * 31 + fnv(b, sizeof b);
        h = h * 31 + fnv(ar, sizeof(int) * 2 * (size_t)size);
    }
    report("persistent.rounds", h);
    /* Wait on an inactive persistent request returns at once. */
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    for (int k = 0; k < 3; k++)
        MPI_Request_free(&q[k]);
    expect(q[0] == MPI_REQUEST_NULL, "freed persistent request is null");
    free(sc), free(sd), free(ab), free(ar), free(rc);
    /* Persistent point-to-point around a ring, with a strided vector. */
    MPI_Datatype vt;
    MPI_Type_vector(3, 1, 2, MPI_INT, &vt);
    MPI_Type_commit(&vt);
    int ps[6], pr[6];
    MPI_Request pq[2];
    MPI_Send_init(ps, 1, vt, (rank + 1) % size, 9, MPI_COMM_WORLD, &pq[0]);
    MPI_Recv_init(pr, 1, vt, (rank + size - 1) % size, 9, MPI_COMM_WORLD, &pq[1]);
    MPI_Type_free(&vt); /* the requests keep it */
    uint64_t hp = 0;
    for (int round = 0; round < 2; round++) {
        for (int k = 0; k < 6; k++)
            ps[k] = rank * 10 + k + round, pr[k] = -1;
        MPI_Startall(2, pq);
        int idx, seen = 0;
        for (int k = 0; k < 2; k++) {
            MPI_Waitany(2, pq, &idx, MPI_STATUS_IGNORE);
            seen |= 1 << idx;
        }
        MPI_Waitany(2, pq, &idx, MPI_STATUS_IGNORE);
        expect(seen == 3 && idx == MPI_UNDEFINED, "Waitany over persistent requests");
        hp = hp * 31 + fnv(pr, sizeof pr);
    }
    report("persistent.p2p", hp);
    MPI_Request_free(&pq[0]);
    MPI_Request_free(&pq[1]);
}

/* Misused constructors: an error (the class may differ between
   libraries, so only success or failure is printed), never a crash. */
static void misuse(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype t = MPI_DATATYPE_NULL;
    int sz[2] = {4, 4}, sub[2] = {2, 3}, st[2] = {1, 2}, bl[2] = {1, -2}, di[2] = {0, 4};
    int r[6];
    st[1] = -1;
    r[0] = MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &t); /* start < 0 */
    st[1] = 2;
    r[1] = MPI_Type_indexed(2, bl, di, MPI_INT, &t); /* negative */
    /* (MPICH 4.0.2 divides by zero on a darray whose grid does not match
       the size, so darray misuse is left out of this comparison.) */
    MPI_Aint hd[2] = {0, 16};
    MPI_Datatype nt[2] = {MPI_INT, MPI_DATATYPE_NULL};
    int one[2] = {1, 1};
    r[2] = MPI_Type_create_struct(2, one, hd, nt, &t);                /* a null member type */
    r[3] = MPI_Type_create_subarray(2, sz, sub, st, 77, MPI_INT, &t); /* bad order */
    r[4] = MPI_Type_create_hindexed_block(2, -1, hd, MPI_INT, &t);    /* negative */
    sz[1] = 5;
    sub[1] = 3;
    r[5] = MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &t); /* valid */
    if (r[5] == MPI_SUCCESS)
        MPI_Type_free(&t);
    if (rank == 0) {
        printf("dt_check: misuse                      ");
        for (int k = 0; k < 6; k++)
            printf(" %s", r[k] == MPI_SUCCESS ? "ok" : "error");
        printf("\n");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Datatype t[16];
    int nt = 0;
    const char *names[16];
#define ADD(nm, expr)                                                                              \
    do {                                                                                           \
        expr;                                                                                      \
        MPI_Type_commit(&t[nt]);                                                                   \
        names[nt++] = nm;                                                                          \
    } while (0)
    ADD("vector", MPI_Type_vector(3, 2, 5, MPI_INT, &t[nt]));
    ADD("hvector", MPI_Type_create_hvector(2, 3, 40, MPI_DOUBLE, &t[nt]));
    int bl[3] = {2, 1, 3}, di[3] = {0, 4, 9};
    ADD("indexed", MPI_Type_indexed(3, bl, di, MPI_INT, &t[nt]));
    MPI_Aint hd[3] = {4, 24, 48};
    ADD("hindexed", MPI_Type_create_hindexed(3, bl, hd, MPI_SHORT, &t[nt]));
    ADD("indexed_block", MPI_Type_create_indexed_block(3, 2, di, MPI_FLOAT, &t[nt]));
    ADD("hindexed_block", MPI_Type_create_hindexed_block(3, 1, hd, MPI_DOUBLE, &t[nt]));
    {
        struct {
            char c;
            double d;
            int i[2];
        } s;
        int sbl[3] = {1, 1, 2};
        MPI_Aint sd[3] = {(char *)&s.c - (char *)&s, (char *)&s.d - (char *)&s,
                          (char *)&s.i - (char *)&s};
        MPI_Datatype sty[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT};
        ADD("struct", MPI_Type_create_struct(3, sbl, sd, sty, &t[nt]));
        MPI_Aint sd2[2] = {0, 9};
        MPI_Datatype sty2[2] = {MPI_DOUBLE, MPI_CHAR};
        int sbl2[2] = {1, 1};
        ADD("struct_pad", MPI_Type_create_struct(2, sbl2, sd2, sty2, &t[nt]));
    }
    ADD("resized", MPI_Type_create_resized(MPI_INT, -4, 16, &t[nt]));
    int gs[3] = {4, 5, 6}, ss[3] = {2, 3, 2}, st[3] = {1, 1, 3};
    ADD("subarray_c", MPI_Type_create_subarray(3, gs, ss, st, MPI_ORDER_C, MPI_INT, &t[nt]));
    ADD("subarray_f", MPI_Type_create_subarray(3, gs, ss, st, MPI_ORDER_FORTRAN, MPI_INT, &t[nt]));
    {
        int g[2] = {7, 6}, dist[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
            darg[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[2] = {2, 2};
        ADD("darray",
            MPI_Type_create_darray(4, 3, 2, g, dist, darg, ps, MPI_ORDER_C, MPI_DOUBLE, &t[nt]));
    }
    ADD("vector_of_struct", MPI_Type_vector(2, 1, 2, t[6], &t[nt]));
    ADD("contig_of_vector", MPI_Type_contiguous(2, t[0], &t[nt]));
    ADD("dense_vector", MPI_Type_vector(2, 3, 3, MPI_INT, &t[nt]));

    for (int k = 0; k < nt; k++)
        describe(names[k], t[k], 3);
    for (int k = 0; k < nt; k++)
        if (strcmp(names[k], "darray") != 0)
            move(names[k], t[k], 2);
    user_ops();
    alltoallv();
    scans();
    persistent();
    misuse();
    for (int k = 0; k < nt; k++)
        MPI_Type_free(&t[k]);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("dt_check: %s\n", all ? "FAILED" : "done");
    MPI_Finalize();
    return all ? 1 : 0;
}
