/*  c_mpich_hello.c - a program built with mpicc.mpich (the MPICH ABI).

    Started with the Open MPI face preloaded by mistake, it must be told so
    at MPI_Init and stop, instead of running with mismatched handles.
*/
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("rank %d\n", rank);
    MPI_Finalize();
    return 0;
}
