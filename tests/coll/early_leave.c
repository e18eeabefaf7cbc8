/*  early_leave.c - ranks that finalize while another rank is still busy.

    MPI lets a rank leave a collective as soon as its own part is done: the
    non-root ranks of MPI_Reduce and MPI_Gatherv return once their data is
    sent, and may then call MPI_Finalize while the root still computes.
    Their contributions must still count.  This program runs a few rounds
    of rooted and all-to-all collectives with a slow root (so that the
    others run ahead), then a last collective --last KIND before which the
    rank --slow R sleeps; every other rank finalizes right after that
    collective, and R checks its result afterwards.  Every rank checks
    every result it gets and exits 1 on a wrong one.

      early_leave [--last KIND] [--slow R] [--rounds N] [--sleep-ms MS] [--free-dup 1]
                  [--strict 1]

    With --free-dup 1 the last collective runs on a duplicate of
    MPI_COMM_WORLD that every rank frees right after it, before
    MPI_Finalize: a rank that freed the communicator still counts in the
    collectives it entered on it.  --strict 1 sets COLLAB_STRICT=1 before
    MPI_Init (mpicollab's strict mode: a collective that would miss a rank
    fails instead).

    KIND: reduce (MAXLOC, root 0), gatherv (root 0), rsb (in-place
    MPI_Reduce_scatter_block), allreduce, bcast (root 0), scatterv (root 0),
    reduce_big (a reduction large enough to be cut in parts).  Output:
    "early_leave: ..." lines, the same on MPICH and on mpicollab.
*/
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NRED 8         /* elements of the MAXLOC reduction */
#define NBIG (1 << 17) /* doubles of the large reduction (1 MiB) */
#define RSB_COUNT 4    /* elements per block of the reduce-scatter */

static int s_rank, s_size, s_errors;
static MPI_Comm s_comm; /* MPI_COMM_WORLD, or with --free-dup a duplicate for the last one */

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void fail(const char *what, int round, long got, long want)
{
    if (s_errors++ < 10)
        fprintf(stderr, "early_leave: rank %d: %s round %d: got %ld, expected %ld\n", s_rank, what,
                round, got, want);
}

static void do_reduce(int round)
{
    struct {
        double v;
        int i;
    } in[NRED], out[NRED];
    for (int k = 0; k < NRED; k++) {
        in[k].v = (double)((s_rank * 7 + k * 3 + round) % s_size);
        in[k].i = s_rank;
    }
    MPI_Reduce(in, out, NRED, MPI_DOUBLE_INT, MPI_MAXLOC, 0, s_comm);
    if (s_rank != 0)
        return;
    for (int k = 0; k < NRED; k++) {
        double best = -1;
        int at = -1;
        for (int r = 0; r < s_size; r++) {
            double v = (double)((r * 7 + k * 3 + round) % s_size);
            if (v > best) {
                best = v;
                at = r;
            }
        }
        if (out[k].v != best || out[k].i != at)
            fail("reduce maxloc index", round, out[k].i, at);
    }
}

static void do_reduce_big(int round)
{
    double *in = malloc(NBIG * sizeof *in), *out = malloc(NBIG * sizeof *out);
    for (int k = 0; k < NBIG; k++)
        in[k] = (double)((s_rank + k + round) % (s_size + 3));
    MPI_Reduce(in, out, NBIG, MPI_DOUBLE, MPI_MAX, 0, s_comm);
    if (s_rank == 0)
        for (int k = 0; k < NBIG; k++) {
            double best = 0;
            for (int r = 0; r < s_size; r++) {
                double v = (double)((r + k + round) % (s_size + 3));
                best = v > best ? v : best;
            }
            if (out[k] != best) {
                fail("reduce_big element", round, k, (long)best);
                break;
            }
        }
    free(in);
    free(out);
}

static void do_gatherv(int round, int root)
{
    int *counts = malloc(s_size * sizeof *counts), *displs = malloc(s_size * sizeof *displs);
    int total = 0;
    for (int r = 0; r < s_size; r++) {
        counts[r] = r + 1;
        displs[r] = total;
        total += r + 1;
    }
    int *send = malloc((s_rank + 1) * sizeof *send), *recv = malloc(total * sizeof *recv);
    for (int k = 0; k <= s_rank; k++)
        send[k] = 1000 * s_rank + k + round;
    for (int k = 0; k < total; k++)
        recv[k] = -1;
    MPI_Gatherv(send, s_rank + 1, MPI_INT, recv, counts, displs, MPI_INT, root, s_comm);
    if (s_rank == root)
        for (int r = 0; r < s_size; r++)
            for (int k = 0; k <= r; k++)
                if (recv[displs[r] + k] != 1000 * r + k + round)
                    fail("gatherv", round, recv[displs[r] + k], 1000 * r + k + round);
    free(counts);
    free(displs);
    free(send);
    free(recv);
}

static void do_rsb(int round)
{
    int *buf = malloc(s_size * RSB_COUNT * sizeof *buf);
    for (int b = 0; b < s_size; b++)
        for (int j = 0; j < RSB_COUNT; j++)
            buf[b * RSB_COUNT + j] = s_rank + 3 * b + j + round;
    MPI_Reduce_scatter_block(MPI_IN_PLACE, buf, RSB_COUNT, MPI_INT, MPI_SUM, s_comm);
    for (int j = 0; j < RSB_COUNT; j++) {
        long want = 0;
        for (int r = 0; r < s_size; r++)
            want += r + 3 * s_rank + j + round;
        if (buf[j] != want)
            fail("reduce_scatter_block", round, buf[j], want);
    }
    free(buf);
}

static void do_allreduce(int round)
{
    long in[5], out[5];
    for (int k = 0; k < 5; k++)
        in[k] = s_rank * 10 + k + round;
    MPI_Allreduce(in, out, 5, MPI_LONG, MPI_SUM, s_comm);
    for (int k = 0; k < 5; k++) {
        long want = 10L * s_size * (s_size - 1) / 2 + (long)s_size * (k + round);
        if (out[k] != want)
            fail("allreduce", round, out[k], want);
    }
}

static void do_bcast(int round)
{
    int v[16];
    for (int k = 0; k < 16; k++)
        v[k] = s_rank == 0 ? 77 * k + round : -1;
    MPI_Bcast(v, 16, MPI_INT, 0, s_comm);
    for (int k = 0; k < 16; k++)
        if (v[k] != 77 * k + round)
            fail("bcast", round, v[k], 77 * k + round);
}

static void do_scatterv(int round)
{
    int *counts = malloc(s_size * sizeof *counts), *displs = malloc(s_size * sizeof *displs);
    int total = 0;
    for (int r = 0; r < s_size; r++) {
        counts[r] = r + 1;
        displs[r] = total;
        total += r + 1;
    }
    int *send = malloc(total * sizeof *send), *recv = malloc((s_rank + 1) * sizeof *recv);
    for (int r = 0; r < s_size; r++)
        for (int k = 0; k <= r; k++)
            send[displs[r] + k] = 100 * r + k + round;
    MPI_Scatterv(send, counts, displs, MPI_INT, recv, s_rank + 1, MPI_INT, 0, s_comm);
    for (int k = 0; k <= s_rank; k++)
        if (recv[k] != 100 * s_rank + k + round)
            fail("scatterv", round, recv[k], 100 * s_rank + k + round);
    free(counts);
    free(displs);
    free(send);
    free(recv);
}

static int run_kind(const char *kind, int round)
{
    if (strcmp(kind, "reduce") == 0)
        do_reduce(round);
    else if (strcmp(kind, "reduce_big") == 0)
        do_reduce_big(round);
    else if (strcmp(kind, "gatherv") == 0)
        do_gatherv(round, 0);
    else if (strcmp(kind, "rsb") == 0)
        do_rsb(round);
    else if (strcmp(kind, "allreduce") == 0)
        do_allreduce(round);
    else if (strcmp(kind, "bcast") == 0)
        do_bcast(round);
    else if (strcmp(kind, "scatterv") == 0)
        do_scatterv(round);
    else
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    const char *last = "reduce";
    int slow = 0, rounds = 3, nap = 200, free_dup = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--free-dup") == 0)
            free_dup = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--strict") == 0 && atoi(argv[i + 1]) == 1)
            setenv("COLLAB_STRICT", "1", 1); /* read by mpicollab's MPI_Init; MPICH ignores it */
        else if (strcmp(argv[i], "--last") == 0)
            last = argv[i + 1];
        else if (strcmp(argv[i], "--slow") == 0)
            slow = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--rounds") == 0)
            rounds = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--sleep-ms") == 0)
            nap = atoi(argv[i + 1]);
    }
    MPI_Init(&argc, &argv);
    s_comm = MPI_COMM_WORLD;
    MPI_Comm_rank(MPI_COMM_WORLD, &s_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &s_size);
    if (slow < 0 || slow >= s_size)
        slow = s_size - 1;
    /* Rounds: the root is slow, so the others run ahead through the
       rooted collectives and wait in the others. */
    for (int round = 0; round < rounds; round++) {
        if (s_rank == 0)
            sleep_ms(nap / 4);
        do_reduce(round);
        for (int root = 0; root < s_size; root++) {
            if (s_rank == root)
                sleep_ms(nap / 8);
            do_gatherv(round, root);
        }
        do_rsb(round);
        do_allreduce(round);
    }
    /* The last collective: every rank but the slow one finalizes at once
       (with --free-dup 1, after freeing the duplicate it ran on). */
    if (free_dup)
        MPI_Comm_dup(MPI_COMM_WORLD, &s_comm);
    if (s_rank == slow)
        sleep_ms(5 * nap);
    if (run_kind(last, rounds) != 0) {
        if (s_rank == 0)
            fprintf(stderr, "early_leave: unknown --last %s\n", last);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (s_rank == slow) {
        /* Still busy after the others left: the result must be complete. */
        sleep_ms(nap);
        if (s_errors == 0)
            printf("early_leave: %s with %d ranks, the slow rank's result is complete\n", last,
                   s_size);
    }
    if (free_dup)
        MPI_Comm_free(&s_comm);
    int errors = s_errors;
    MPI_Finalize();
    if (errors != 0) {
        fprintf(stderr, "early_leave: rank %d: %d wrong results\n", s_rank, errors);
        return 1;
    }
    return 0;
}
