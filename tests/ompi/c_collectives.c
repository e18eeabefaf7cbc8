/*  c_collectives.c - an ordinary MPI program, built with mpicc.openmpi.

    The Open MPI face tests run this binary unchanged on Debian's Open MPI
    (the reference) and on mpicollab (LD_PRELOAD=libmpicollab-ompi.so, or
    LD_LIBRARY_PATH=<build>/lib/mpicollab), and compare what rank 0
    prints.  It exercises what executables reach through copy relocations
    (predefined communicators, datatypes, ops, MPI_IN_PLACE = 1,
    MPI_STATUS_IGNORE = 0), the collectives on every common datatype,
    point-to-point with status, communicator creation, attributes, and the
    error path with MPI_ERRORS_RETURN.  Every rank checks its own results
    and rank 0 prints one line per check with the number of ranks that
    passed it, so the output is the same on any MPI for a given size.
*/
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static int failures;

/* Counts on rank 0 how many ranks passed a check, and prints it. */
static void report(const char *what, int ok)
{
    int passed = 0;
    MPI_Reduce(&ok, &passed, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%-44s %d/%d\n", what, passed, size);
        fflush(stdout);
        if (passed != size)
            failures++;
    }
}

static void check_reductions(void)
{
    double d = rank + 1.5, dsum = 0, dmax = 0;
    MPI_Allreduce(&d, &dsum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&d, &dmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    report("allreduce double sum/max", dsum == size * (size + 2) / 2.0 && dmax == size + 0.5);

    int iv[3] = {rank, 1, -rank}, ires[3];
    MPI_Allreduce(iv, ires, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    report("allreduce int sum", ires[0] == size * (size - 1) / 2 && ires[1] == size &&
                                    ires[2] == -size * (size - 1) / 2);

    long lv[4];
    for (int i = 0; i < 4; i++)
        lv[i] = (long)(rank + 1) << (8 * i);
    MPI_Allreduce(MPI_IN_PLACE, lv, 4, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    long want = (long)size * (size + 1) / 2;
    report("allreduce long in place", lv[0] == want && lv[3] == want << 24);

    float fv = (float)rank, fmin = -1;
    MPI_Allreduce(&fv, &fmin, 1, MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD);
    report("allreduce float min", fmin == 0.0f);

    unsigned char bits = (unsigned char)(1u << (rank % 8)), bor = 0;
    MPI_Allreduce(&bits, &bor, 1, MPI_UNSIGNED_CHAR, MPI_BOR, MPI_COMM_WORLD);
    unsigned char want_bor = 0;
    for (int r = 0; r < size; r++)
        want_bor |= (unsigned char)(1u << (r % 8));
    report("allreduce unsigned char bor", bor == want_bor);

    struct {
        double v;
        int i;
    } in = {(double)((rank * 7) % size), rank}, out = {0, -1};
    MPI_Allreduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    report("allreduce double_int maxloc", out.v == size - 1 && out.i >= 0 && out.i < size);

    double r = rank, rsum = -1;
    MPI_Reduce(&r, &rsum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    report("reduce to root 0", rank != 0 || rsum == size * (size - 1) / 2.0);

    double acc = 1.0;
    if (rank == 0)
        MPI_Reduce(MPI_IN_PLACE, &acc, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    else
        MPI_Reduce(&acc, NULL, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    report("reduce in place at root", rank != 0 || acc == size);

    double nb_in = 2.0, nb_out = 0;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Iallreduce(&nb_in, &nb_out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    report("iallreduce + wait", nb_out == 2.0 * size && req == MPI_REQUEST_NULL);
}

static void check_movement(void)
{
    int params[5] = {0};
    if (rank == 0)
        for (int i = 0; i < 5; i++)
            params[i] = 100 + i;
    MPI_Bcast(params, 5, MPI_INT, 0, MPI_COMM_WORLD);
    report("bcast int[5] from 0", params[0] == 100 && params[4] == 104);

    int *all = calloc((size_t)size, sizeof(int));
    int mine = rank * rank;
    MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    int ok = 1;
    for (int i = 0; i < size; i++)
        ok &= all[i] == i * i;
    report("allgather int", ok);

    memset(all, 0, (size_t)size * sizeof(int));
    MPI_Gather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    ok = 1;
    for (int i = 0; rank == 0 && i < size; i++)
        ok &= all[i] == i * i;
    report("gather int to 0", ok);

    for (int i = 0; i < size; i++)
        all[i] = 10 * i;
    int got = -1;
    MPI_Scatter(all, 1, MPI_INT, &got, 1, MPI_INT, 0, MPI_COMM_WORLD);
    report("scatter int from 0", got == 10 * rank);
    free(all);

    MPI_Barrier(MPI_COMM_WORLD);
    report("barrier", 1);
}

static void check_p2p(void)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    double out[3] = {rank, rank, rank}, in[3] = {-1, -1, -1};
    MPI_Status st;
    memset(&st, 0xff, sizeof st);
    MPI_Sendrecv(out, 3, MPI_DOUBLE, next, 7, in, 3, MPI_DOUBLE, prev, 7, MPI_COMM_WORLD, &st);
    int count = -1;
    MPI_Get_count(&st, MPI_DOUBLE, &count);
    report("sendrecv ring with status",
           in[2] == prev && st.MPI_SOURCE == prev && st.MPI_TAG == 7 && count == 3);

    MPI_Status pst;
    MPI_Recv(NULL, 0, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &pst);
    report("recv from MPI_PROC_NULL",
           pst.MPI_SOURCE == MPI_PROC_NULL && pst.MPI_TAG == MPI_ANY_TAG);
}

static int deleted;
static int delete_fn(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm, (void)keyval, (void)extra;
    deleted += (int)(long)value;
    return MPI_SUCCESS;
}

static void check_comms(void)
{
    MPI_Comm dup = MPI_COMM_NULL, half = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int cmp = -1, dsize = 0;
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &cmp);
    MPI_Comm_size(dup, &dsize);
    report("comm_dup congruent", cmp == MPI_CONGRUENT && dsize == size && dup != MPI_COMM_WORLD);

    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    int hsize = 0, hrank = -1;
    MPI_Comm_size(half, &hsize);
    MPI_Comm_rank(half, &hrank);
    int want_size = size / 2 + (rank % 2 == 0 ? size % 2 : 0);
    report("comm_split by parity", hsize == want_size && hrank == (hsize - 1) - rank / 2);
    double one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, half);
    report("allreduce on split comm", sum == hsize);

    int kv = MPI_KEYVAL_INVALID, flag = 0;
    void *val = NULL;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &kv, NULL);
    MPI_Comm_set_attr(dup, kv, (void *)5L);
    MPI_Comm_get_attr(dup, kv, &val, &flag);
    int *tag_ub = NULL, tflag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &tflag);
    MPI_Comm_free(&dup);
    MPI_Comm_free_keyval(&kv);
    report("attributes, TAG_UB, delete on free",
           flag && val == (void *)5L && tflag && *tag_ub >= 32767 && deleted == 5 &&
               dup == MPI_COMM_NULL && kv == MPI_KEYVAL_INVALID);
    MPI_Comm_free(&half);
}

static void check_types_and_errors(void)
{
    int s_int, s_dbl, s_dint, s_ldi;
    MPI_Aint lb, ext_dint;
    MPI_Type_size(MPI_INT, &s_int);
    MPI_Type_size(MPI_DOUBLE, &s_dbl);
    MPI_Type_size(MPI_DOUBLE_INT, &s_dint);
    MPI_Type_size(MPI_LONG_DOUBLE_INT, &s_ldi);
    MPI_Type_get_extent(MPI_DOUBLE_INT, &lb, &ext_dint);
    report("type sizes and extent",
           s_int == 4 && s_dbl == 8 && s_dint == 12 && s_ldi == 20 && ext_dint == 16);

    MPI_Datatype vec3;
    MPI_Type_contiguous(3, MPI_DOUBLE, &vec3);
    MPI_Type_commit(&vec3);
    double v[6] = {rank, rank, rank, rank, rank, rank};
    if (rank == 0)
        for (int i = 0; i < 6; i++)
            v[i] = 10 + i;
    MPI_Bcast(v, 2, vec3, 0, MPI_COMM_WORLD);
    MPI_Type_free(&vec3);
    report("bcast of a contiguous type", v[0] == 10 && v[5] == 15 && vec3 == MPI_DATATYPE_NULL);

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    double x = 1, y = 0;
    int rc = MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_OP_NULL, MPI_COMM_WORLD);
    int cls = -1, len = 0;
    char msg[MPI_MAX_ERROR_STRING];
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, msg, &len);
    report("MPI_OP_NULL -> MPI_ERR_OP, returned", cls == MPI_ERR_OP && len > 0);
    if (rank == 0)
        printf("  error string: %s\n", msg);

    rc = MPI_Bcast(&x, 1, MPI_DOUBLE, size, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    report("bcast root out of range -> MPI_ERR_ROOT", cls == MPI_ERR_ROOT);

    rc = MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_NULL);
    MPI_Error_class(rc, &cls);
    report("MPI_COMM_NULL -> MPI_ERR_COMM", cls == MPI_ERR_COMM);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    int provided = -1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0)
        printf("size %d\n", size);
    report("init_thread multiple", provided == MPI_THREAD_MULTIPLE);
    check_reductions();
    check_movement();
    check_p2p();
    check_comms();
    check_types_and_errors();
    int fin = 1;
    MPI_Finalized(&fin);
    MPI_Finalize();
    int fin2 = 0;
    MPI_Finalized(&fin2);
    if (rank == 0)
        printf("finalized %d -> %d\n", fin, fin2);
    return failures != 0;
}
