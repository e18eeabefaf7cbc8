/*  abi_probe.c - built with mpicc.mpich and mpicc.openmpi, so that its
    DT_NEEDED entries name the real MPI libraries; collab-run's tests read
    its ABI from them.  It calls MPI only when asked ("init"), so that the
    detection tests run without any working MPI. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "init") == 0) {
        MPI_Init(&argc, &argv);
        MPI_Finalize();
    }
    const char *pre = getenv("LD_PRELOAD");
    const char *lib = getenv("LD_LIBRARY_PATH");
    printf("abi-probe ran\nLD_PRELOAD=%s\nLD_LIBRARY_PATH=%s\n", pre ? pre : "", lib ? lib : "");
    return 0;
}
