/*  c_fatal.c - an error under the default MPI_ERRORS_ARE_FATAL handler.

    Built with mpicc.openmpi.  Open MPI prints its "*** An error occurred
    in MPI_Allreduce" banner and exits with the error class (10,
    MPI_ERR_OP); the Open MPI face must end the peer the same way.
*/
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    double x = 1, y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_OP_NULL, MPI_COMM_WORLD);
    printf("not reached\n");
    MPI_Finalize();
    return 0;
}
