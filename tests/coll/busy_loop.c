/*  busy_loop.c - a long loop of collectives with uneven computation, for
    runs with more peers than cores.

      busy_loop [--iters N] [--seed S] [--spin-ms MS] [--stall-at I --stall-ms MS]

    Every iteration: each rank computes (spins) for a pseudo-random time
    up to MS milliseconds (seeded by S, rank and iteration, so ranks drift
    apart), then MPI_Allgatherv with counts that vary by rank, MPI_Reduce
    to a rotating root, MPI_Allreduce and MPI_Bcast from a rotating root.
    With --stall-at, rank 1 sleeps --stall-ms before iteration I (a live
    peer that computes for long: MPI waits for it, and so must the swarm).
    Every rank checks every result and exits 1 on a wrong one.  Prints
    "busy_loop: N iterations on P ranks" at rank 0 at the end.
*/
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void spin_ms(double ms)
{
    double t0 = MPI_Wtime();
    volatile double acc = 0;
    while ((MPI_Wtime() - t0) * 1000.0 < ms)
        for (int k = 0; k < 1000; k++)
            acc += k * 1e-9;
}

int main(int argc, char **argv)
{
    int iters = 200, seed = 1, spin = 20, stall_at = -1, stall_ms = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--iters") == 0)
            iters = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seed") == 0)
            seed = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--spin-ms") == 0)
            spin = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--stall-at") == 0)
            stall_at = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--stall-ms") == 0)
            stall_ms = atoi(argv[i + 1]);
    }
    MPI_Init(&argc, &argv);
    int rank, size, errors = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *counts = malloc(size * sizeof *counts), *displs = malloc(size * sizeof *displs);
    int total = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = 1 + (r * 7) % 13;
        displs[r] = total;
        total += counts[r];
    }
    int *mine = malloc(counts[rank] * sizeof *mine), *all = malloc(total * sizeof *all);
    for (int it = 0; it < iters; it++) {
        uint64_t h = mix(((uint64_t)seed << 40) ^ ((uint64_t)rank << 20) ^ (uint64_t)it);
        if (spin > 0)
            spin_ms((double)(h % (uint64_t)(spin + 1)));
        if (it == stall_at && rank == 1 % size) {
            struct timespec ts = {stall_ms / 1000, (long)(stall_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        for (int k = 0; k < counts[rank]; k++)
            mine[k] = rank * 1000 + k + it;
        MPI_Allgatherv(mine, counts[rank], MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
        for (int r = 0; r < size; r++)
            for (int k = 0; k < counts[r]; k++)
                if (all[displs[r] + k] != r * 1000 + k + it && errors++ < 5)
                    fprintf(stderr, "busy_loop: rank %d: allgatherv %d: wrong value\n", rank, it);
        long in = rank + it, out = -1;
        int root = it % size;
        MPI_Reduce(&in, &out, 1, MPI_LONG, MPI_SUM, root, MPI_COMM_WORLD);
        if (rank == root && out != (long)size * (size - 1) / 2 + (long)size * it && errors++ < 5)
            fprintf(stderr, "busy_loop: rank %d: reduce %d: got %ld\n", rank, it, out);
        double x = rank + 1, y = 0;
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (y != size && errors++ < 5)
            fprintf(stderr, "busy_loop: rank %d: allreduce %d: got %g\n", rank, it, y);
        int b = rank == (it * 3) % size ? it : -1;
        MPI_Bcast(&b, 1, MPI_INT, (it * 3) % size, MPI_COMM_WORLD);
        if (b != it && errors++ < 5)
            fprintf(stderr, "busy_loop: rank %d: bcast %d: got %d\n", rank, it, b);
    }
    if (rank == 0 && errors == 0)
        printf("busy_loop: %d iterations on %d ranks\n", iters, size);
    free(counts);
    free(displs);
    free(mine);
    free(all);
    MPI_Finalize();
    return errors != 0;
}
