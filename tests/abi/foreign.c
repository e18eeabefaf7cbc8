/*  foreign.c - an Open MPI program.  Run with the MPICH face preloaded
    (test abi_foreign), MPI_Init must say that the program uses the other
    ABI and stop, before the program prints anything.
*/
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("foreign: rank %d\n", rank);
    MPI_Finalize();
    return 0;
}
