/*  p_join.c - a training loop whose only collective is a persistent
    all-reduce (MPI_Allreduce_init once, MPI_Start/MPI_Wait every step),
    run through a kill and a join (collab-run --chaos).

    At start every rank broadcasts the parameters and the step counter
    from rank 0 (a joiner gets the swarm's current ones this way).  Each
    step all-reduces a gradient of ones (SUM: size x the mean of those
    present = size, whoever is absent) and subtracts sum / size from every
    parameter, so after step k every parameter is exactly its initial
    value minus k.  Every rank checks that at every step, and prints the
    step range it ran.  Built with mpicc.mpich.

    usage: p_join STEPS SLEEP_MS
*/
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NPARAM 1024

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 100, sleep_ms = argc > 2 ? atoi(argv[2]) : 10;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    static float param[NPARAM], grad[NPARAM], sum[NPARAM];
    int step = 0;
    for (int i = 0; i < NPARAM; i++)
        param[i] = (float)(1000000 + i);
    MPI_Bcast(param, NPARAM, MPI_FLOAT, 0, MPI_COMM_WORLD);
    MPI_Bcast(&step, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int first = step, bad = 0;
    MPI_Request req;
    MPI_Allreduce_init(grad, sum, NPARAM, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    struct timespec ts = {sleep_ms / 1000, (sleep_ms % 1000) * 1000000L};
    while (step < steps) {
        for (int i = 0; i < NPARAM; i++)
            grad[i] = 1.0f;
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        step++;
        for (int i = 0; i < NPARAM; i++) {
            param[i] -= sum[i] / (float)size;
            if (param[i] != (float)(1000000 + i - step) && bad++ == 0)
                fprintf(stderr, "p_join: rank %d step %d: param[%d] = %.1f, expected %d\n", rank,
                        step, i, param[i], 1000000 + i - step);
        }
        if (rank == 0 && step % 20 == 0) {
            printf("p_join: step %d\n", step);
            fflush(stdout);
        }
        nanosleep(&ts, NULL);
    }
    MPI_Request_free(&req);
    printf("p_join: rank %d ran steps %d..%d, %s\n", rank, first, step, bad ? "FAIL" : "ok");
    fflush(stdout);
    MPI_Finalize();
    return bad ? 1 : 0;
}
