/*  gpu_allreduce.c - device buffers through the MPI ABI (scripts/gpu-check.sh
    stage `mpi`).  Built with mpicc.mpich and the CUDA runtime (static);
    run on N peers sharing the GPU(s), device chosen by the local rank.

    1. Correctness: MPI_Allreduce on cudaMalloc buffers for every type and
       op pair MPI allows among the types below, compared bit for bit with
       the same call on host buffers (which the project's own tests check)
       and, for SUM/MAX/MIN, with the exact result; in place, nonblocking,
       Reduce, Bcast, Allgather, Sendrecv, Sendrecv_replace, Scan and
       Reduce_scatter on device buffers too.  The staging pipeline (large
       all-reduces, copied chunk by chunk): float and double values whose
       sums round, so that the order of every addition shows, at 1 and
       16 MiB, device to device, in place, nonblocking, device input with
       host output and the reverse, each compared bit for bit with host
       buffers.
    2. The GPU's own copy bandwidth between device and pinned host memory
       (64 MiB, cudaMemcpy, on rank 0).
    3. Latency and bus bandwidth of MPI_Allreduce (float SUM) from 8 B to
       64 MiB, device buffers against host buffers, interleaved: 5 rounds,
       each timing host then device, medians and spread.
    MPI_Reduce_local and datatype packing are not device-aware yet and are
    not called here (docs/cuda.md).
    Prints "RESULT key value" lines (read by gpu-check.sh) and exits 0 when
    every correctness check passed.  `gpu_allreduce BYTES pipe` (stage
    `pipe`) checks the pipeline's bits at 16 MiB and times 1..64 MiB only,
    run once with COLLAB_CUDA_PIPELINE=1 and once with 0.
*/
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int s_rank, s_size, s_fail;

#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "rank %d: %s: %s\n", s_rank, #call, cudaGetErrorString(e_));           \
            MPI_Abort(MPI_COMM_WORLD, 3);                                                          \
        }                                                                                          \
    } while (0)

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            s_fail++;                                                                              \
            fprintf(stderr, "rank %d: FAILED: ", s_rank);                                          \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

typedef struct {
    const char *name;
    MPI_Datatype t;
    int size;
    int kind; /* 0 integer, 1 float, 2 binary16 */
} type_t;

typedef struct {
    const char *name;
    MPI_Op op;
    int ints_only;
} op_t;

/* Element i of rank r: a small value so that every result is exact. */
static double value(int r, size_t i)
{
    return (double)((i * 7 + (size_t)r * 3) % 5 + 1);
}

static uint16_t to_half(double v) /* small integers only: exact */
{
    if (v == 0)
        return 0;
    int e = 0;
    double m = v;
    while (m >= 2) {
        m /= 2;
        e++;
    }
    return (uint16_t)(((e + 15) << 10) | (uint16_t)((m - 1) * 1024));
}

static void store(const type_t *t, void *p, size_t i, double v)
{
    char *c = (char *)p + i * (size_t)t->size;
    if (t->kind == 2) {
        uint16_t h = to_half(v);
        memcpy(c, &h, 2);
    } else if (t->kind == 1) {
        if (t->size == 4) {
            float f = (float)v;
            memcpy(c, &f, 4);
        } else {
            memcpy(c, &v, 8);
        }
    } else {
        int64_t x = (int64_t)v;
        memcpy(c, &x, (size_t)t->size); /* little-endian low bytes */
    }
}

static void check_pair(const type_t *t, const op_t *o, size_t n)
{
    size_t bytes = n * (size_t)t->size;
    char *in = malloc(bytes), *host_out = malloc(bytes), *dev_out = malloc(bytes);
    void *din, *dout;
    CU(cudaMalloc(&din, bytes));
    CU(cudaMalloc(&dout, bytes));
    for (size_t i = 0; i < n; i++)
        store(t, in, i, value(s_rank, i));
    CU(cudaMemcpy(din, in, bytes, cudaMemcpyHostToDevice));
    CU(cudaMemset(dout, 0xab, bytes));
    MPI_Allreduce(in, host_out, (int)n, t->t, o->op, MPI_COMM_WORLD);
    MPI_Allreduce(din, dout, (int)n, t->t, o->op, MPI_COMM_WORLD);
    CU(cudaMemcpy(dev_out, dout, bytes, cudaMemcpyDeviceToHost));
    CHECK(memcmp(host_out, dev_out, bytes) == 0, "Allreduce %s %s: device result differs from host",
          t->name, o->name);
    if (o->op == MPI_SUM || o->op == MPI_MAX || o->op == MPI_MIN) {
        char *want = malloc(bytes);
        for (size_t i = 0; i < n; i++) {
            double acc = value(0, i);
            for (int r = 1; r < s_size; r++) {
                double v = value(r, i);
                acc = o->op == MPI_SUM   ? acc + v
                      : o->op == MPI_MAX ? (v > acc ? v : acc)
                                         : (v < acc ? v : acc);
            }
            store(t, want, i, acc);
        }
        if (!(t->kind == 0 && t->size == 1 && o->op == MPI_SUM)) /* uint8 sums stay < 256 */
            CHECK(memcmp(want, dev_out, bytes) == 0, "Allreduce %s %s: not the exact result",
                  t->name, o->name);
        free(want);
    }
    /* In place and nonblocking, on the device. */
    CU(cudaMemcpy(dout, in, bytes, cudaMemcpyHostToDevice));
    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, dout, (int)n, t->t, o->op, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CU(cudaMemcpy(dev_out, dout, bytes, cudaMemcpyDeviceToHost));
    CHECK(memcmp(host_out, dev_out, bytes) == 0, "Iallreduce in place %s %s differs", t->name,
          o->name);
    CU(cudaFree(din));
    CU(cudaFree(dout));
    free(in);
    free(host_out);
    free(dev_out);
}

/* The staging pipeline against host buffers, bit for bit (see the top). */
static void check_pipeline(MPI_Datatype t, size_t esize, const char *name, size_t bytes)
{
    size_t n = bytes / esize;
    char *in = malloc(bytes), *ref = malloc(bytes), *got = malloc(bytes);
    void *din, *dout;
    CU(cudaMalloc(&din, bytes));
    CU(cudaMalloc(&dout, bytes));
    for (size_t i = 0; i < n; i++) {
        double v = (double)(s_rank + 1) / 3.0 * (double)(i % 977) + 1e-3 * (double)i;
        if (esize == 4) {
            float f = (float)v;
            memcpy(in + i * 4, &f, 4);
        } else {
            memcpy(in + i * 8, &v, 8);
        }
    }
    CU(cudaMemcpy(din, in, bytes, cudaMemcpyHostToDevice));
    MPI_Allreduce(in, ref, (int)n, t, MPI_SUM, MPI_COMM_WORLD);
    const char *what[] = {"device to device", "in place", "nonblocking", "device in, host out",
                          "host in, device out"};
    for (int k = 0; k < 5; k++) {
        memset(got, 0, bytes);
        CU(cudaMemset(dout, 0xab, bytes));
        if (k == 1)
            CU(cudaMemcpy(dout, in, bytes, cudaMemcpyHostToDevice));
        MPI_Request req;
        switch (k) {
        case 0:
            MPI_Allreduce(din, dout, (int)n, t, MPI_SUM, MPI_COMM_WORLD);
            break;
        case 1:
            MPI_Allreduce(MPI_IN_PLACE, dout, (int)n, t, MPI_SUM, MPI_COMM_WORLD);
            break;
        case 2:
            MPI_Iallreduce(din, dout, (int)n, t, MPI_SUM, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            break;
        case 3:
            MPI_Allreduce(din, got, (int)n, t, MPI_SUM, MPI_COMM_WORLD);
            break;
        default:
            MPI_Allreduce(in, dout, (int)n, t, MPI_SUM, MPI_COMM_WORLD);
            break;
        }
        if (k != 3)
            CU(cudaMemcpy(got, dout, bytes, cudaMemcpyDeviceToHost));
        CHECK(memcmp(got, ref, bytes) == 0, "pipelined Allreduce %s %zu bytes %s differs from host",
              name, bytes, what[k]);
    }
    CU(cudaFree(din));
    CU(cudaFree(dout));
    free(in);
    free(ref);
    free(got);
}

static void check_others(void)
{
    const size_t n = 1 << 20;
    float *h = malloc(n * 4), *g = malloc(n * 4 * (size_t)s_size);
    float *d, *dg;
    CU(cudaMalloc((void **)&d, n * 4));
    CU(cudaMalloc((void **)&dg, n * 4 * (size_t)s_size));
    for (size_t i = 0; i < n; i++)
        h[i] = (float)(s_rank * 1000 + (int)(i % 1000));
    CU(cudaMemcpy(d, h, n * 4, cudaMemcpyHostToDevice));
    MPI_Bcast(d, (int)n, MPI_FLOAT, 1 % s_size, MPI_COMM_WORLD);
    CU(cudaMemcpy(h, d, n * 4, cudaMemcpyDeviceToHost));
    CHECK(h[5] == (float)((1 % s_size) * 1000 + 5), "Bcast of a device buffer");
    CU(cudaMemcpy(d, h, n * 4, cudaMemcpyHostToDevice));
    MPI_Allgather(d, (int)n, MPI_FLOAT, dg, (int)n, MPI_FLOAT, MPI_COMM_WORLD);
    CU(cudaMemcpy(g, dg, n * 4 * (size_t)s_size, cudaMemcpyDeviceToHost));
    CHECK(g[(size_t)(s_size - 1) * n + 7] == h[7], "Allgather of device buffers");
    MPI_Reduce(d, dg, (int)n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (s_rank == 0) {
        CU(cudaMemcpy(g, dg, n * 4, cudaMemcpyDeviceToHost));
        CHECK(g[9] == (float)s_size * h[9], "Reduce of device buffers");
    }
    if (s_size >= 2 && s_rank < 2) { /* Send/Recv between ranks 0 and 1, device to device */
        int other = 1 - s_rank;
        for (size_t i = 0; i < 1000; i++)
            h[i] = (float)(s_rank + 1) * (float)i;
        CU(cudaMemcpy(d, h, 1000 * 4, cudaMemcpyHostToDevice));
        MPI_Sendrecv(d, 1000, MPI_FLOAT, other, 5, dg, 1000, MPI_FLOAT, other, 5, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        CU(cudaMemcpy(h, dg, 1000 * 4, cudaMemcpyDeviceToHost));
        CHECK(h[10] == (float)(other + 1) * 10.0f, "Sendrecv of device buffers");
        for (size_t i = 0; i < 1000; i++)
            h[i] = (float)(s_rank + 1) * (float)i;
        CU(cudaMemcpy(d, h, 1000 * 4, cudaMemcpyHostToDevice));
        MPI_Sendrecv_replace(d, 1000, MPI_FLOAT, other, 6, other, 6, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
        CU(cudaMemcpy(h, d, 1000 * 4, cudaMemcpyDeviceToHost));
        CHECK(h[10] == (float)(other + 1) * 10.0f, "Sendrecv_replace of a device buffer");
    }
    /* Scan and Reduce_scatter (varying counts) end in the face's own copy
       into the device buffer. */
    int one = s_rank + 1, *dv;
    CU(cudaMalloc((void **)&dv, sizeof(int) * (size_t)s_size * 2));
    CU(cudaMemcpy(dv, &one, sizeof one, cudaMemcpyHostToDevice));
    MPI_Scan(MPI_IN_PLACE, dv, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int got = 0;
    CU(cudaMemcpy(&got, dv, sizeof got, cudaMemcpyDeviceToHost));
    CHECK(got == (s_rank + 1) * (s_rank + 2) / 2, "Scan in place on a device buffer");
    int *rin = malloc(sizeof(int) * (size_t)s_size * 2), *rc = malloc(sizeof(int) * (size_t)s_size);
    for (int r = 0; r < s_size; r++)
        rc[r] = r % 2 + 1; /* varying counts: 1, 2, 1, 2 ... */
    for (int i = 0; i < s_size * 2; i++)
        rin[i] = i;
    int *din;
    CU(cudaMalloc((void **)&din, sizeof(int) * (size_t)s_size * 2));
    CU(cudaMemcpy(din, rin, sizeof(int) * (size_t)s_size * 2, cudaMemcpyHostToDevice));
    MPI_Reduce_scatter(din, dv, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int first = 0;
    for (int r = 0; r < s_rank; r++)
        first += rc[r];
    int out[2] = {-1, -1};
    CU(cudaMemcpy(out, dv, sizeof(int) * (size_t)rc[s_rank], cudaMemcpyDeviceToHost));
    CHECK(out[0] == first * s_size, "Reduce_scatter into a device buffer");
    /* A strided datatype over device memory: the face packs such types on
       the host, so it must refuse them with an error class, not crash. */
    MPI_Datatype vec;
    MPI_Type_vector(4, 1, 2, MPI_FLOAT, &vec);
    MPI_Type_commit(&vec);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int vrc = MPI_Bcast(d, 1, vec, 0, MPI_COMM_WORLD), vcls = MPI_SUCCESS;
    MPI_Error_class(vrc, &vcls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Type_free(&vec);
#ifdef CUDA_RUNTIME_API_STUB_H /* "device" buffers are host memory here */
    CHECK(vcls == MPI_SUCCESS, "Bcast of a strided type (stand-in host memory)");
#else
    CHECK(vcls == MPI_ERR_BUFFER,
          "a strided type on a device buffer gave class %d, not MPI_ERR_BUFFER", vcls);
#endif
    CU(cudaFree(din));
    CU(cudaFree(dv));
    free(rin);
    free(rc);
    CU(cudaFree(d));
    CU(cudaFree(dg));
    free(h);
    free(g);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Seconds per MPI_Allreduce of n floats in buffers s/r, iters times. */
static double time_allreduce(void *s, void *r, size_t n, int iters)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
        MPI_Allreduce(s, r, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double t = (MPI_Wtime() - t0) / iters, worst;
    MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

static void copy_bandwidth(void)
{
    const size_t bytes = 64u << 20;
    void *d, *p;
    CU(cudaMalloc(&d, bytes));
    CU(cudaMallocHost(&p, bytes));
    memset(p, 1, bytes);
    double best_d2h = 1e9, best_h2d = 1e9;
    for (int i = 0; i < 5; i++) {
        double t0 = MPI_Wtime();
        CU(cudaMemcpy(d, p, bytes, cudaMemcpyHostToDevice));
        double t1 = MPI_Wtime();
        CU(cudaMemcpy(p, d, bytes, cudaMemcpyDeviceToHost));
        double t2 = MPI_Wtime();
        best_h2d = t1 - t0 < best_h2d ? t1 - t0 : best_h2d;
        best_d2h = t2 - t1 < best_d2h ? t2 - t1 : best_d2h;
    }
    printf("RESULT copy_h2d_GBps %.2f\nRESULT copy_d2h_GBps %.2f\n", bytes / best_h2d / 1e9,
           bytes / best_d2h / 1e9);
    CU(cudaFree(d));
    CU(cudaFreeHost(p));
}

static void perf(size_t max_bytes, bool large)
{
    float *hs = malloc(max_bytes), *hr = malloc(max_bytes), *ds, *dr;
    CU(cudaMalloc((void **)&ds, max_bytes));
    CU(cudaMalloc((void **)&dr, max_bytes));
    memset(hs, 0, max_bytes);
    CU(cudaMemset(ds, 0, max_bytes));
    static const size_t all[] = {8, 64, 512, 4096, 32768, 262144, 2097152, 16777216, 67108864};
    static const size_t big[] = {1 << 20, 4 << 20, 16 << 20, 64 << 20}; /* `pipe`: 1..64 MiB */
    const size_t *sizes = large ? big : all;
    size_t nsizes = large ? sizeof big / sizeof *big : sizeof all / sizeof *all;
    for (size_t k = 0; k < nsizes && sizes[k] <= max_bytes; k++) {
        size_t bytes = sizes[k];
        size_t n = bytes / 4 > 0 ? bytes / 4 : 1;
        int iters = bytes <= (1 << 16) ? 50 : bytes <= (1 << 22) ? 10 : 3;
        double th[5], td[5];
        (void)time_allreduce(hs, hr, n, 1); /* warm up both */
        (void)time_allreduce(ds, dr, n, 1);
        for (int round = 0; round < 5; round++) {
            th[round] = time_allreduce(hs, hr, n, iters);
            td[round] = time_allreduce(ds, dr, n, iters);
        }
        qsort(th, 5, sizeof *th, cmp);
        qsort(td, 5, sizeof *td, cmp);
        double bus = 2.0 * (s_size - 1) / s_size * (double)(n * 4);
        if (s_rank == 0)
            printf("RESULT allreduce %zu host_us %.1f (%.1f..%.1f) dev_us %.1f (%.1f..%.1f) "
                   "host_GBps %.3f dev_GBps %.3f ratio %.3f\n",
                   n * 4, th[2] * 1e6, th[0] * 1e6, th[4] * 1e6, td[2] * 1e6, td[0] * 1e6,
                   td[4] * 1e6, bus / th[2] / 1e9, bus / td[2] / 1e9, td[2] / th[2]);
    }
    CU(cudaFree(ds));
    CU(cudaFree(dr));
    free(hs);
    free(hr);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &s_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &s_size);
    size_t max_bytes = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : (size_t)64 << 20;
    bool pipe = argc > 2 && strcmp(argv[2], "pipe") == 0;
    int ndev = 0;
    CU(cudaGetDeviceCount(&ndev));
    const char *lr = getenv("MPI_LOCALRANKID");
    int local = lr != NULL ? atoi(lr) : s_rank;
    CU(cudaSetDevice(local % ndev));
    CU(cudaFree(NULL)); /* the context exists from here on */

    /* Local rank from MPI itself: the peers of this host. */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int node_size = 0;
    MPI_Comm_size(node, &node_size);
    CHECK(node_size == s_size, "MPI_COMM_TYPE_SHARED gave %d peers, expected %d", node_size,
          s_size);
    MPI_Comm_free(&node);

    const type_t types[] = {
        {"MPI_FLOAT", MPI_FLOAT, 4, 1},
        {"MPI_DOUBLE", MPI_DOUBLE, 8, 1},
        {"MPIX_C_FLOAT16", MPIX_C_FLOAT16, 2, 2},
        {"MPI_INT", MPI_INT, 4, 0},
        {"MPI_LONG", MPI_LONG, 8, 0},
        {"MPI_SHORT", MPI_SHORT, 2, 0},
        {"MPI_UNSIGNED", MPI_UNSIGNED, 4, 0},
        {"MPI_UINT8_T", MPI_UINT8_T, 1, 0},
        {"MPI_INT64_T", MPI_INT64_T, 8, 0},
    };
    const op_t ops[] = {
        {"MPI_SUM", MPI_SUM, 0},   {"MPI_PROD", MPI_PROD, 0}, {"MPI_MAX", MPI_MAX, 0},
        {"MPI_MIN", MPI_MIN, 0},   {"MPI_LAND", MPI_LAND, 1}, {"MPI_LOR", MPI_LOR, 1},
        {"MPI_LXOR", MPI_LXOR, 1}, {"MPI_BAND", MPI_BAND, 1}, {"MPI_BOR", MPI_BOR, 1},
        {"MPI_BXOR", MPI_BXOR, 1},
    };
    if (pipe) { /* stage `pipe`: the staging pipeline's bits, then its timings only */
        check_pipeline(MPI_FLOAT, 4, "MPI_FLOAT", (size_t)16 << 20);
        int fails = 0;
        MPI_Allreduce(&s_fail, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (s_rank == 0)
            printf("RESULT correctness_failures %d\n", fails);
        fflush(stdout);
        perf(max_bytes, true);
        MPI_Finalize();
        return fails == 0 ? 0 : 1;
    }
    int pairs = 0;
    for (size_t t = 0; t < sizeof types / sizeof *types; t++)
        for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
            if (ops[o].ints_only && types[t].kind != 0)
                continue;
            check_pair(&types[t], &ops[o], 1003);
            pairs++;
        }
    check_pair(&types[0], &ops[0], (size_t)4 << 20); /* 16 MiB through staging */
    for (size_t mib = 1; mib <= 16 && (mib << 20) <= max_bytes; mib *= 16) {
        check_pipeline(MPI_FLOAT, 4, "MPI_FLOAT", mib << 20);
        check_pipeline(MPI_DOUBLE, 8, "MPI_DOUBLE", mib << 20);
    }
    check_others();
    int fails = 0;
    MPI_Allreduce(&s_fail, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (s_rank == 0)
        printf("RESULT correctness_pairs %d\nRESULT correctness_failures %d\n", pairs, fails);
    fflush(stdout);
    if (s_rank == 0)
        copy_bandwidth();
    fflush(stdout);
    perf(max_bytes, false);
    MPI_Finalize();
    return fails == 0 ? 0 : 1;
}
