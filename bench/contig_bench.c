/*  contig_bench.c - the face's per-call cost on contiguous data, and the
    price of a strided datatype.

    Built with mpicc.mpich.  Times MPI_Allreduce (float sum) at 8 B,
    64 KiB and 1 MiB, MPI_Bcast and MPI_Allgather at 64 KiB, a ping-pong
    of 8 B between ranks 0 and 1, and MPI_Bcast of 64 KiB of doubles as a
    strided vector (every other double) against the same bytes
    contiguous.  Prints "contig: <name> <microseconds per call>" on rank
    0: the median of 5 timed batches of each.  Run by bench/contig.sh,
    which interleaves builds and repetitions.
*/
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef void (*op_fn)(void *ctx);

/* Median over 5 batches of `iters` calls of fn, in microseconds per call. */
static double timeit(op_fn fn, void *ctx, int iters)
{
    double t[5];
    for (int w = 0; w < 3; w++)
        fn(ctx);
    for (int b = 0; b < 5; b++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            fn(ctx);
        double dt = (MPI_Wtime() - t0) / iters * 1e6;
        MPI_Allreduce(&dt, &t[b], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    qsort(t, 5, sizeof t[0], cmp);
    return t[2];
}

typedef struct {
    float *a, *b;
    int n;
    MPI_Datatype t;
} ctx_t;

static void allreduce(void *p)
{
    ctx_t *c = p;
    MPI_Allreduce(c->a, c->b, c->n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static void bcast(void *p)
{
    ctx_t *c = p;
    MPI_Bcast(c->a, c->n, c->t, 0, MPI_COMM_WORLD);
}

static void allgather(void *p)
{
    ctx_t *c = p;
    MPI_Allgather(c->a, c->n, MPI_FLOAT, c->b, c->n, MPI_FLOAT, MPI_COMM_WORLD);
}

static void pingpong(void *p)
{
    ctx_t *c = p;
    if (rank == 0) {
        MPI_Send(c->a, c->n, MPI_FLOAT, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(c->b, c->n, MPI_FLOAT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        MPI_Recv(c->b, c->n, MPI_FLOAT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(c->a, c->n, MPI_FLOAT, 0, 1, MPI_COMM_WORLD);
    }
}

static void line(const char *name, double us)
{
    if (rank == 0)
        printf("contig: %-24s %10.2f\n", name, us);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t max = (size_t)1 << 20;
    ctx_t c = {malloc(max * (size_t)size * 2), malloc(max * (size_t)size * 2), 0, MPI_FLOAT};
    memset(c.a, 1, max * (size_t)size * 2);
    c.n = 2;
    line("allreduce_8B", timeit(allreduce, &c, 200));
    c.n = 16384;
    line("allreduce_64KiB", timeit(allreduce, &c, 50));
    c.n = 262144;
    line("allreduce_1MiB", timeit(allreduce, &c, 10));
    c.n = 16384;
    line("bcast_64KiB", timeit(bcast, &c, 50));
    line("allgather_64KiB", timeit(allgather, &c, 50));
    if (size > 1) {
        c.n = 2;
        line("pingpong_8B", timeit(pingpong, &c, 200));
    }
    /* the same 64 KiB of doubles, contiguous and as every other double */
    c.n = 8192;
    c.t = MPI_DOUBLE;
    line("bcast_64KiB_doubles", timeit(bcast, &c, 50));
    MPI_Datatype v;
    MPI_Type_vector(8192, 1, 2, MPI_DOUBLE, &v);
    MPI_Type_commit(&v);
    c.n = 1;
    c.t = v;
    line("bcast_64KiB_strided", timeit(bcast, &c, 50));
    MPI_Type_free(&v);
    free(c.a);
    free(c.b);
    MPI_Finalize();
    return 0;
}
