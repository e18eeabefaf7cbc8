/*  a2a_absent.c - Alltoallv/w and a persistent all-reduce across a kill.

    Built with mpicc.mpich, run on 4 peers by collab-run with
    --chaos kill:2@line:2:ready (a real SIGKILL of rank 2 once it says it
    is ready).  Before the kill every rank checks Alltoallv and a
    persistent MPI_Allreduce_init (started each round) with everyone
    present.  After it, the survivors check the swarm's rules: the blocks
    rank 2 would have sent arrive zero-filled, every other block is
    right, MPIX_Collab_group (looked up at run time: MPICH has no such
    call) lists 0, 1, 3, and the persistent request keeps working (SUM
    of ones = size x the mean of the present ranks = 4).  Each survivor
    prints "a2a_absent: rank R ok"; any failed check prints FAIL.
*/
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size, bad;

static void check(int ok, const char *what, int round)
{
    if (!ok) {
        bad++;
        fprintf(stderr, "a2a_absent: rank %d: FAIL: %s (round %d)\n", rank, what, round);
    }
}

/* Rank j sends j + k + 1 ints, valued 1000 j + 10 k + i, to rank k. */
static int a2av(int round, int absent)
{
    int sc[64], sd[64], rc[64], rd[64], st = 0, rt = 0;
    for (int j = 0; j < size; j++) {
        sc[j] = rank + j + 1, sd[j] = st, st += sc[j];
        rc[j] = j + rank + 1, rd[j] = rt, rt += rc[j];
    }
    int *sb = malloc(sizeof(int) * (size_t)st), *rb = malloc(sizeof(int) * (size_t)rt);
    for (int j = 0; j < size; j++)
        for (int i = 0; i < sc[j]; i++)
            sb[sd[j] + i] = 1000 * rank + 10 * j + i;
    for (int i = 0; i < rt; i++)
        rb[i] = -1;
    int rc_ = MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD);
    check(rc_ == MPI_SUCCESS, "Alltoallv returned an error", round);
    for (int j = 0; j < size; j++)
        for (int i = 0; i < rc[j]; i++) {
            int want = j == absent ? 0 : 1000 * j + 10 * rank + i;
            if (rb[rd[j] + i] != want) {
                check(0,
                      j == absent ? "an absent rank's block is not zero-filled"
                                  : "a present rank's block is wrong",
                      round);
                j = size;
                break;
            }
        }
    free(sb);
    free(rb);
    return rc_;
}

/* Alltoallw: one int from each rank, at byte displacements in reverse order. */
static void a2aw(int round, int absent)
{
    int sb[64], rb[64], c[64], sd[64], rd[64];
    MPI_Datatype t[64];
    for (int j = 0; j < size; j++) {
        sb[size - 1 - j] = 100 * rank + j;
        rb[j] = -1;
        c[j] = 1;
        sd[j] = (size - 1 - j) * (int)sizeof(int);
        rd[j] = j * (int)sizeof(int);
        t[j] = MPI_INT;
    }
    MPI_Alltoallw(sb, c, sd, t, rb, c, rd, t, MPI_COMM_WORLD);
    for (int j = 0; j < size; j++)
        check(rb[j] == (j == absent ? 0 : 100 * j + rank), "Alltoallw block", round);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4 || size > 64) {
        fprintf(stderr, "a2a_absent: needs 4 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int one = 1, sum = 0;
    MPI_Request p;
    MPI_Allreduce_init(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &p);
    for (int round = 0; round < 3; round++) {
        a2av(round, -1);
        a2aw(round, -1);
        sum = 0;
        MPI_Start(&p);
        MPI_Wait(&p, MPI_STATUS_IGNORE);
        check(sum == size, "persistent all-reduce with everyone", round);
    }
    if (rank == 2) {
        printf("a2a_absent: rank 2 ready\n");
        fflush(stdout);
        for (;;)
            pause(); /* the SIGKILL comes */
    }
    typedef int (*group_fn)(MPI_Comm, int, int *, int *);
    group_fn group = (group_fn)dlsym(RTLD_DEFAULT, "MPIX_Collab_group");
    check(group != NULL, "MPIX_Collab_group is exported", 0);
    for (int round = 3; round < 6; round++) {
        a2av(round, 2);
        if (group != NULL) {
            int ranks[8], n = 0;
            group(MPI_COMM_WORLD, 8, ranks, &n);
            check(n == 3 && ranks[0] == 0 && ranks[1] == 1 && ranks[2] == 3,
                  "MPIX_Collab_group after Alltoallv lists 0 1 3", round);
        }
        a2aw(round, 2);
        sum = 0;
        MPI_Start(&p);
        MPI_Wait(&p, MPI_STATUS_IGNORE);
        check(sum == size, "persistent all-reduce after the kill (size x mean)", round);
    }
    MPI_Request_free(&p);
    if (!bad)
        printf("a2a_absent: rank %d ok\n", rank);
    fflush(stdout);
    MPI_Finalize();
    return bad ? 1 : 0;
}
