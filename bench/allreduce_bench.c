/*  allreduce_bench.c - MPI_Allreduce latency and bus bandwidth per size.

    An ordinary MPI program (built with MPICH's mpicc), so the same binary
    measures real MPICH and mpicollab.  For each message size it runs a
    few warm-up all-reduces of floats (MPI_SUM, --warmup, 20 by default:
    mpicollab's world takes its first collectives to learn the training
    step before the same-host fast path may start), lets rank 0 pick from
    the last two an iteration count that fills about --time seconds and
    broadcasts it,
    then times that many all-reduces between two barriers.  The time of
    a size is the slowest rank's; from it:

        latency  = time / iterations
        algbw    = bytes / latency
        busbw    = algbw * 2(n-1)/n      (what each link carries in a
                                          bandwidth-optimal all-reduce)

    The result of every size is checked (inputs are small integers, so
    the sum is exact); a wrong result is reported in the table.

    usage: allreduce_bench [--min-bytes B] [--max-bytes B] [--factor F]
                           [--time S] [--max-iters N] [--warmup N] [--in-place]
                           [--bcast | --reduce | --barrier]
    --bcast times MPI_Bcast of the floats from rank 0 instead (busbw is
    then meaningless; the check is that every rank got rank 0's values).
    --reduce times MPI_Reduce (float sum) to rank 0 instead (in place at
    rank 0 with --in-place; busbw is then meaningless; the check is rank
    0's sum).  --barrier times MPI_Barrier instead (the size only names
    the row: one size is enough; busbw is meaningless, nothing to check).
    Output (rank 0): lines starting with "bench:", one per size:
        bench: <bytes> <iterations> <latency us> <algbw MB/s> <busbw MB/s> ok|WRONG
*/
#include <mpi.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    long min_bytes, max_bytes, factor, max_iters, warmup;
    double time;
    int in_place;
    int bcast;  /* time MPI_Bcast from rank 0 instead of MPI_Allreduce */
    int reduce; /* time MPI_Reduce to rank 0 instead */
    int barrier; /* time MPI_Barrier instead */
} opts_t;

static int s_bcast, s_reduce, s_barrier, s_rank;

static int parse(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){8, 64L << 20, 4, 1000, 20, 0.5, 0, 0, 0, 0};
    for (int k = 1; k < argc; k++) {
        const char *a = argv[k];
        if (strcmp(a, "--in-place") == 0) {
            o->in_place = 1;
            continue;
        }
        if (strcmp(a, "--bcast") == 0) {
            o->bcast = 1;
            continue;
        }
        if (strcmp(a, "--reduce") == 0) {
            o->reduce = 1;
            continue;
        }
        if (strcmp(a, "--barrier") == 0) {
            o->barrier = 1;
            continue;
        }
        if (k + 1 >= argc) {
            fprintf(stderr, "allreduce_bench: %s needs a value\n", a);
            return -1;
        }
        const char *v = argv[++k];
        char *end;
        errno = 0;
        if (strcmp(a, "--time") == 0) {
            o->time = strtod(v, &end);
            if (*end != '\0' || !(o->time > 0 && o->time <= 3600))
                goto bad;
            continue;
        }
        long x = strtol(v, &end, 10);
        if (errno != 0 || *end != '\0' || x < 1)
            goto bad;
        if (strcmp(a, "--min-bytes") == 0)
            o->min_bytes = x;
        else if (strcmp(a, "--max-bytes") == 0)
            o->max_bytes = x;
        else if (strcmp(a, "--factor") == 0 && x >= 2)
            o->factor = x;
        else if (strcmp(a, "--max-iters") == 0)
            o->max_iters = x;
        else if (strcmp(a, "--warmup") == 0 && x >= 2 && x <= 100000)
            o->warmup = x;
        else {
            fprintf(stderr, "allreduce_bench: unknown option %s\n", a);
            return -1;
        }
        continue;
    bad:
        fprintf(stderr, "allreduce_bench: bad value for %s: '%s'\n", a, v);
        return -1;
    }
    if (o->min_bytes < 4 || o->max_bytes < o->min_bytes || o->max_bytes > (1L << 30)) {
        fprintf(stderr, "allreduce_bench: sizes must satisfy 4 <= min <= max <= 1 GiB\n");
        return -1;
    }
    return 0;
}

/* Slowest rank's time for `iters` all-reduces of n floats. */
static double timed(float *in, float *out, int n, int iters, int in_place)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters && s_bcast; i++)
        MPI_Bcast(in, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < iters && s_reduce; i++)
        MPI_Reduce(in_place && s_rank == 0 ? MPI_IN_PLACE : in, in_place ? in : out, n, MPI_FLOAT,
                   MPI_SUM, 0, MPI_COMM_WORLD);
    for (int i = 0; i < iters && s_barrier; i++)
        MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters && !s_bcast && !s_reduce && !s_barrier; i++)
        MPI_Allreduce(in_place ? MPI_IN_PLACE : in, in_place ? in : out, n, MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0, tmax = 0;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return tmax;
}

int main(int argc, char **argv)
{
    opts_t o;
    if (parse(argc, argv, &o) != 0)
        return 2;
    if (o.bcast + o.reduce + o.barrier > 1) {
        fprintf(stderr, "allreduce_bench: --bcast, --reduce and --barrier exclude each other\n");
        return 2;
    }
    s_bcast = o.bcast;
    s_reduce = o.reduce;
    s_barrier = o.barrier;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    s_rank = rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t maxn = (size_t)o.max_bytes / sizeof(float);
    float *in = malloc(maxn * sizeof(float)), *out = malloc(maxn * sizeof(float));
    if (in == NULL || out == NULL) {
        fprintf(stderr, "allreduce_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
        printf("bench: # %s%s on %d ranks\n",
               o.bcast     ? "MPI_Bcast floats"
               : o.reduce  ? "MPI_Reduce float sum to rank 0"
               : o.barrier ? "MPI_Barrier"
                           : "MPI_Allreduce float sum",
               o.in_place ? " in place" : "", size);
        printf("bench: # bytes iterations latency_us algbw_MBps busbw_MBps check\n");
        fflush(stdout);
    }
    int wrong_any = 0;
    for (long bytes = o.min_bytes; bytes <= o.max_bytes;) {
        int n = (int)(bytes / (long)sizeof(float));
        float *res = o.in_place || o.bcast ? in : out;
        /* Correctness: in = rank + 1 everywhere, sum = n(n+1)/2 (bcast:
           rank 0's 1). */
        for (int i = 0; i < n; i++)
            in[i] = (float)(rank + 1);
        timed(in, out, n, 1, o.in_place);
        float want = o.bcast ? 1.0f : (float)size * (float)(size + 1) / 2.0f;
        int wrong = res[0] != want || res[n / 2] != want || res[n - 1] != want, any = 0;
        if ((o.reduce && rank != 0) || o.barrier)
            wrong = 0; /* only the root has the sum; a barrier has none */
        MPI_Allreduce(&wrong, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
        wrong_any |= any;

        /* Warm-up, then an iteration count that fills about o.time, from
           the last two warm-up calls. */
        if (o.warmup > 2)
            timed(in, out, n, (int)o.warmup - 2, o.in_place);
        double tw = timed(in, out, n, 2, o.in_place) / 2;
        int iters = tw > 0 ? (int)(o.time / tw) : (int)o.max_iters;
        if (iters < 3)
            iters = 3;
        if (iters > o.max_iters)
            iters = (int)o.max_iters;
        MPI_Bcast(&iters, 1, MPI_INT, 0, MPI_COMM_WORLD);
        double t = timed(in, out, n, iters, o.in_place);
        double lat = t / iters;
        double algbw = (double)bytes / lat / 1e6;
        double busbw = algbw * 2.0 * (size - 1) / size;
        if (rank == 0) {
            printf("bench: %ld %d %.2f %.3f %.3f %s\n", bytes, iters, lat * 1e6, algbw, busbw,
                   any ? "WRONG" : "ok");
            fflush(stdout);
        }
        if (bytes == o.max_bytes)
            break;
        bytes = bytes * o.factor > o.max_bytes ? o.max_bytes : bytes * o.factor;
    }
    free(in);
    free(out);
    MPI_Finalize();
    return wrong_any ? 1 : 0;
}
