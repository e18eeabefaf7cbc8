/*  hier_check.c - all-reduces across hosts in strict mode (through host
    leaders, docs/collectives.md §5c), checked against values every rank
    computes alone.  Built with mpicc.mpich; run by tests/e2e/host_leader.sh.

    hier_check ITERS [KILL_RANK KILL_AT]
      Each iteration runs, on MPI_COMM_WORLD and then on a duplicate made
      after the first iteration and on the parts of a split (world ranks
      0-3 and the rest):
        - an int64 SUM of 40000 elements (320 KB), out of place;
        - a double SUM of 24000 elements (small integers: exact in any
          order), in place;
        - a float MAX of 100000 elements;
        - a float SUM of 20000 elements of inexact values, whose bits
          every rank hashes (the script compares the hashes);
        - an int SUM of 16 elements (below the leaders' threshold).
      Prints "hier_check rank R ok hash H" and exits 0, or, when a call
      fails (MPI_ERRORS_RETURN), "hier_check rank R failed at I code C"
      and exits 3 ("failed at I in CHECK code C": the check under way); a wrong value prints "hier_check rank R WRONG ..." and
      exits 1.  With KILL_RANK, that rank SIGKILLs itself at iteration
      KILL_AT, in the middle of the float MAX's input.
*/
#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N_I64 40000
#define N_DBL 24000
#define N_MAX 100000
#define N_INEXACT 20000
#define N_SMALL 16

static int s_rank;

static void wrong(const char *what, int it, long idx, double got, double want)
{
    printf("hier_check rank %d WRONG %s at iteration %d index %ld: %.17g, not %.17g\n", s_rank,
           what, it, idx, got, want);
    fflush(stdout);
    exit(1);
}

static const char *s_where = "setup"; /* the check under way */

static int failed(int it, int code)
{
    printf("hier_check rank %d failed at %d in %s code %d\n", s_rank, it, s_where, code);
    fflush(stdout);
    MPI_Finalize();
    exit(3);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* One round of the checks on comm; returns h with the float sum's bits. */
static uint64_t round_on(MPI_Comm comm, int it, int kill_rank, int kill_at, uint64_t h)
{
    fprintf(stderr, "hier_check rank %d: iteration %d on %s\n", s_rank, it,
            comm == MPI_COMM_WORLD ? "the world"
            : kill_rank < -1       ? "the split"
                                   : "a copy");
    int rank, size, rc;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    static int64_t a[N_I64], b[N_I64];
    static double d[N_DBL];
    static float f[N_MAX], g[N_MAX], x[N_INEXACT], y[N_INEXACT];
    for (long i = 0; i < N_I64; i++)
        a[i] = (int64_t)(rank + 1) * (i + it) - 7;
    s_where = "int64 sum";
    if ((rc = MPI_Allreduce(a, b, N_I64, MPI_INT64_T, MPI_SUM, comm)) != MPI_SUCCESS)
        failed(it, rc);
    for (long i = 0; i < N_I64; i++) {
        int64_t want = (int64_t)size * (size + 1) / 2 * (i + it) - 7 * (int64_t)size;
        if (b[i] != want)
            wrong("int64 sum", it, i, (double)b[i], (double)want);
    }
    for (long i = 0; i < N_DBL; i++)
        d[i] = (double)((rank * 3 + i) % 11) - 5.0;
    s_where = "double sum";
    if ((rc = MPI_Allreduce(MPI_IN_PLACE, d, N_DBL, MPI_DOUBLE, MPI_SUM, comm)) != MPI_SUCCESS)
        failed(it, rc);
    for (long i = 0; i < N_DBL; i++) {
        double want = 0;
        for (int r = 0; r < size; r++)
            want += (double)((r * 3 + i) % 11) - 5.0;
        if (d[i] != want)
            wrong("double sum in place", it, i, d[i], want);
    }
    for (long i = 0; i < N_MAX; i++)
        f[i] = (float)((rank * 7919 + i * 31) % 1000);
    if (it == kill_at && comm == MPI_COMM_WORLD) {
        int w;
        MPI_Comm_rank(MPI_COMM_WORLD, &w);
        if (w == kill_rank) {
            printf("hier_check rank %d kills itself at %d\n", s_rank, it);
            fflush(stdout);
            /* Dies once the others are inside the float maximum: what
               it sent in the previous calls has reached them (a root
               that returned from a broadcast may still have bytes in
               its library's queues). */
            struct timespec nap = {0, 300 * 1000 * 1000};
            nanosleep(&nap, NULL);
            raise(SIGKILL);
        }
    }
    s_where = "float max";
    if ((rc = MPI_Allreduce(f, g, N_MAX, MPI_FLOAT, MPI_MAX, comm)) != MPI_SUCCESS)
        failed(it, rc);
    for (long i = 0; i < N_MAX; i++) {
        float want = 0;
        for (int r = 0; r < size; r++) {
            float v = (float)((r * 7919 + i * 31) % 1000);
            want = v > want ? v : want;
        }
        if (g[i] != want)
            wrong("float max", it, i, g[i], want);
    }
    for (long i = 0; i < N_INEXACT; i++)
        x[i] = sinf((float)(rank + 1) * 0.37f + (float)i * 0.013f + (float)it) / 3.0f;
    s_where = "float sum";
    if ((rc = MPI_Allreduce(x, y, N_INEXACT, MPI_FLOAT, MPI_SUM, comm)) != MPI_SUCCESS)
        failed(it, rc);
    for (long i = 0; i < N_INEXACT; i++) {
        double want = 0;
        for (int r = 0; r < size; r++)
            want += sinf((float)(r + 1) * 0.37f + (float)i * 0.013f + (float)it) / 3.0f;
        if (fabs(y[i] - want) > 1e-5 * size)
            wrong("float sum", it, i, y[i], want);
    }
    h = fnv(h, y, sizeof y);
    int s[N_SMALL], t[N_SMALL];
    for (int i = 0; i < N_SMALL; i++)
        s[i] = rank * i;
    s_where = "small int sum";
    if ((rc = MPI_Allreduce(s, t, N_SMALL, MPI_INT, MPI_SUM, comm)) != MPI_SUCCESS)
        failed(it, rc);
    for (int i = 0; i < N_SMALL; i++)
        if (t[i] != size * (size - 1) / 2 * i)
            wrong("small int sum", it, i, t[i], size * (size - 1) / 2 * i);
    return h;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &s_rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int iters = argc > 1 ? atoi(argv[1]) : 10;
    int kill_rank = argc > 3 ? atoi(argv[2]) : -1;
    int kill_at = argc > 3 ? atoi(argv[3]) : -1;
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm dup = MPI_COMM_NULL, half = MPI_COMM_NULL;
    uint64_t h = 1469598103934665603ull;
    for (int it = 0; it < iters; it++) {
        h = round_on(MPI_COMM_WORLD, it, kill_rank, kill_at, h);
        if (it == 0) { /* made after the world decided: ids must still agree */
            s_where = "duplicate and split";
            int rc = MPI_Comm_dup(MPI_COMM_WORLD, &dup);
            if (rc == MPI_SUCCESS)
                rc = MPI_Comm_split(MPI_COMM_WORLD, s_rank < 4 ? 0 : 1, s_rank, &half);
            if (rc != MPI_SUCCESS)
                failed(it, rc);
            MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
            MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
        }
        if (kill_rank < 0) {
            h = round_on(dup, it, -1, -1, h);
            (void)round_on(half, it, -2, -1, h); /* the halves' results differ */
        }
    }
    if (half != MPI_COMM_NULL)
        MPI_Comm_free(&half);
    if (dup != MPI_COMM_NULL)
        MPI_Comm_free(&dup);
    printf("hier_check rank %d ok hash %016llx\n", s_rank, (unsigned long long)h);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
