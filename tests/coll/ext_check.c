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

static uint64_t fnv(const void *p, size_t n)
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

/* ---------------------------------------------------------------------- */
/* MPI_Type_create_f90_*: the predefined type of a range and precision. */

/* One line: size, envelope, contents, or the error class. */
static void f90_line(const char *what, int p, int r, int rc, MPI_Datatype t)
{
    if (rank != 0)
        return;
    if (rc != MPI_SUCCESS) {
        int cls;
        MPI_Error_class(rc, &cls);
        printf("ext_check: f90 %-8s p %6d r %6d error class %d\n", what, p, r, cls);
        return;
    }
    int sz, ni, na, nd, comb, ints[2] = {-9, -9};
    MPI_Aint lb, ext;
    MPI_Type_size(t, &sz);
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    MPI_Type_get_contents(t, 2, 0, 0, ints, NULL, NULL);
    int combclass = comb == MPI_COMBINER_F90_INTEGER ? 1
                    : comb == MPI_COMBINER_F90_REAL  ? 2
                    : comb == MPI_COMBINER_F90_COMPLEX ? 3
                                                       : -comb;
    printf("ext_check: f90 %-8s p %6d r %6d size %d extent %ld envelope %d %d %d %d contents %d "
           "%d\n",
           what, p, r, sz, (long)ext, ni, na, nd, combclass, ints[0], ints[1]);
}

static void check_f90(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int rs[] = {1, 2, 3, 4, 5, 9, 10, 18, 19, -1};
    for (unsigned i = 0; i < sizeof rs / sizeof *rs; i++) {
        MPI_Datatype t = MPI_DATATYPE_NULL;
        int rc = MPI_Type_create_f90_integer(rs[i], &t);
        f90_line("integer", 0, rs[i], rc, t);
    }
    /* Pairs both libraries answer alike (Open MPI also has 16-byte reals). */
    const int ps[][2] = {{1, 1},   {6, 37},   {7, 37},  {6, 38},
                         {15, 307}, {0, 0},   {-1, 5},  {MPI_UNDEFINED, 37},
                         {6, MPI_UNDEFINED},  {19, 4931}, {34, 4931}};
    for (unsigned i = 0; i < sizeof ps / sizeof *ps; i++) {
        MPI_Datatype t = MPI_DATATYPE_NULL;
        int rc = MPI_Type_create_f90_real(ps[i][0], ps[i][1], &t);
        f90_line("real", ps[i][0], ps[i][1], rc, t);
        rc = MPI_Type_create_f90_complex(ps[i][0], ps[i][1], &t);
        f90_line("complex", ps[i][0], ps[i][1], rc, t);
    }
    /* They are predefined: reductions with predefined ops accept them,
       and the same arguments name the same type. */
    MPI_Datatype ti, ti2, tr, tc;
    MPI_Type_create_f90_integer(9, &ti);
    MPI_Type_create_f90_integer(9, &ti2);
    MPI_Type_create_f90_real(15, 300, &tr);
    MPI_Type_create_f90_complex(6, 30, &tc);
    int32_t iv[3] = {rank + 1, -rank, 7}, io[3] = {0, 0, 0};
    double dv[2] = {rank * 0.5, 1.0}, dout[2] = {0, 0};
    float cv[4] = {1.0f * rank, 2.0f, 0.5f, -1.0f * rank}, cout[4] = {0, 0, 0, 0};
    int rc1 = MPI_Allreduce(iv, io, 3, ti, MPI_MAX, MPI_COMM_WORLD);
    int rc2 = MPI_Allreduce(dv, dout, 2, tr, MPI_SUM, MPI_COMM_WORLD);
    int rc3 = MPI_Allreduce(cv, cout, 2, tc, MPI_SUM, MPI_COMM_WORLD);
    expect(rc1 == MPI_SUCCESS && io[0] == size && io[1] == 0 && io[2] == 7,
           "f90: MPI_MAX on an f90 integer");
    expect(rc2 == MPI_SUCCESS && dout[1] == (double)size, "f90: MPI_SUM on an f90 real");
    expect(rc3 == MPI_SUCCESS && cout[1] == 2.0f * size, "f90: MPI_SUM on an f90 complex");
    expect(ti == ti2, "f90: the same arguments give the same type");
    report("f90_reductions",
           fnv(io, sizeof io) ^ fnv(dout, sizeof dout) * 3 ^ fnv(cout, sizeof cout) * 5);
    /* Match_size: the named type of each class and size. */
    const int cls[3] = {MPI_TYPECLASS_INTEGER, MPI_TYPECLASS_REAL, MPI_TYPECLASS_COMPLEX};
    const int szs[] = {1, 2, 4, 8, 16, 3};
    for (int c = 0; c < 3; c++)
        for (unsigned k = 0; k < sizeof szs / sizeof *szs; k++) {
            MPI_Datatype t = MPI_DATATYPE_NULL;
            int rc = MPI_Type_match_size(cls[c], szs[k], &t), got = -1, ecls = 0, len = 0;
            char name[MPI_MAX_OBJECT_NAME] = "";
            if (rc == MPI_SUCCESS) {
                MPI_Type_size(t, &got);
                MPI_Type_get_name(t, name, &len);
            } else {
                MPI_Error_class(rc, &ecls);
            }
            if (rank == 0)
                printf("ext_check: match_size class %d size %2d -> size %d %s error class %d\n",
                       c, szs[k], got, name, ecls);
        }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_create_group();
    check_f90();
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("ext_check: %s\n", all == 0 ? "done" : "FAIL: see stderr");
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}
