/*  e2e_allreduce.c - the optional end-to-end check of collab-run: every
    rank contributes rank+1 to an MPI_Allreduce(SUM); with all N ranks
    present the result is N(N+1)/2, printed by every rank. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long in = rank + 1, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    printf("e2e rank %d of %d sum %ld expected %ld\n", rank, size, out,
           (long)size * (size + 1) / 2);
    MPI_Finalize();
    return out == (long)size * (size + 1) / 2 ? 0 : 1;
}
