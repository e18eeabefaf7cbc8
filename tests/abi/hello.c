/*  hello.c - an ordinary MPI program, run on mpicollab with one peer.

    Built with MPICH's mpicc (tests abi_run_preload, abi_run_replace) and
    against mpicollab's own mpi.h (abi_run_own_header; abi_own_header_on_mpich
    runs that build on real MPICH with --any); it exercises the calls
    common programs make and prints "hello ok" if every result is right,
    else the first mismatch (exit status 1).
*/
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("hello FAIL line %d: %s\n", __LINE__, #cond);                                   \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static int deletes;
static int any_library; /* --any: the program may run on another MPI library */

static int delete_fn(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)keyval;
    (void)value;
    (void)extra;
    int rank; /* callbacks may call MPI */
    MPI_Comm_rank(comm, &rank);
    deletes++;
    return MPI_SUCCESS;
}

static void complex_mul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    double *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        double re = a[2 * i] * b[2 * i] - a[2 * i + 1] * b[2 * i + 1];
        double im = a[2 * i] * b[2 * i + 1] + a[2 * i + 1] * b[2 * i];
        b[2 * i] = re;
        b[2 * i + 1] = im;
    }
}

/* The handles MPICH itself returns first (ABI-NOTES 1.2), so that
   programs that print or compare handles see familiar values. */
static int first_handles(void)
{
    MPI_Comm c;
    MPI_Datatype t;
    MPI_Errhandler e;
    CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &c) == MPI_SUCCESS && c == (MPI_Comm)0x84000000);
    CHECK(MPI_Comm_free(&c) == MPI_SUCCESS);
    CHECK(MPI_Type_contiguous(3, MPI_DOUBLE, &t) == MPI_SUCCESS && t == (MPI_Datatype)0x8c000005);
    CHECK(MPI_Type_free(&t) == MPI_SUCCESS);
    CHECK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &e) == MPI_SUCCESS && e == MPI_ERRORS_ARE_FATAL);
    return 0;
}

static int run(void)
{
    int rank, size, provided, flag;
    if (first_handles() != 0)
        return 1;
    MPI_Query_thread(&provided);
    CHECK(provided == MPI_THREAD_MULTIPLE);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(rank == 0 && size == 1);

    double x[3] = {1.5, 2.5, -3}, y[3];
    CHECK(MPI_Allreduce(x, y, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(y[0] == 1.5 && y[2] == -3);
    CHECK(MPI_Allreduce(MPI_IN_PLACE, x, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD) == MPI_SUCCESS);
    int iv = 42;
    CHECK(MPI_Bcast(&iv, 1, MPI_INT, 0, MPI_COMM_WORLD) == MPI_SUCCESS && iv == 42);
    CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS);

    struct {
        double v;
        int i;
    } in = {3.0, 7}, out;
    CHECK(MPI_Allreduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(out.v == 3.0 && out.i == 7);

    int all[1];
    CHECK(MPI_Allgather(&iv, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(all[0] == 42);

    MPI_Request req;
    float f = 2, g = 0;
    CHECK(MPI_Iallreduce(&f, &g, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req) == MPI_SUCCESS);
    CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS && g == 2 && req == MPI_REQUEST_NULL);

    MPI_Comm dup, split;
    CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup) == MPI_SUCCESS);
    int result;
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &result);
    CHECK(result == MPI_CONGRUENT);
    CHECK(MPI_Comm_split(dup, 0, rank, &split) == MPI_SUCCESS && split != MPI_COMM_NULL);

    int *tag_ub;
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag) == MPI_SUCCESS && flag);
    CHECK(*tag_ub >= 32767);
    int kv;
    CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &kv, NULL) == MPI_SUCCESS);
    CHECK(MPI_Comm_set_attr(dup, kv, &iv) == MPI_SUCCESS);
    int *back;
    CHECK(MPI_Comm_get_attr(dup, kv, &back, &flag) == MPI_SUCCESS && flag && back == &iv);
    CHECK(MPI_Comm_free(&dup) == MPI_SUCCESS && deletes == 1);
    CHECK(MPI_Comm_free_keyval(&kv) == MPI_SUCCESS);
    CHECK(MPI_Comm_free(&split) == MPI_SUCCESS);

    /* Point-to-point with oneself. */
    int msg = 5, got = 0, count;
    MPI_Status st;
    CHECK(MPI_Isend(&msg, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, &req) == MPI_SUCCESS);
    CHECK(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st) ==
          MPI_SUCCESS);
    CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(got == 5 && st.MPI_SOURCE == 0 && st.MPI_TAG == 3 && count == 1);
    CHECK(MPI_Recv(&got, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);

    /* Prefix reductions, a vector type, packing, reduce-scatter. */
    long lv = 9, lsum = 0;
    CHECK(MPI_Scan(&lv, &lsum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS && lsum == 9);
    lsum = -1;
    CHECK(MPI_Exscan(&lv, &lsum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(lsum == -1); /* undefined at rank 0: left alone */
    MPI_Datatype hv;
    CHECK(MPI_Type_create_hvector(2, 3, 3 * sizeof(double), MPI_DOUBLE, &hv) == MPI_SUCCESS);
    MPI_Count hsize;
    CHECK(MPI_Type_commit(&hv) == MPI_SUCCESS && MPI_Type_size_x(hv, &hsize) == MPI_SUCCESS);
    CHECK(hsize == 6 * (MPI_Count)sizeof(double));
    double six[6] = {1, 2, 3, 4, 5, 6};
    CHECK(MPI_Bcast(six, 1, hv, 0, MPI_COMM_WORLD) == MPI_SUCCESS && six[5] == 6);
    CHECK(MPI_Type_free(&hv) == MPI_SUCCESS && hv == MPI_DATATYPE_NULL);
    /* A user op on a derived type: complex products of (re, im) pairs. */
    MPI_Datatype cplx;
    MPI_Op cmul;
    CHECK(MPI_Type_contiguous(2, MPI_DOUBLE, &cplx) == MPI_SUCCESS && MPI_Type_commit(&cplx) == 0);
    CHECK(MPI_Op_create(complex_mul, 1, &cmul) == MPI_SUCCESS);
    double z[4] = {1, 2, 3, 4}, zr[4];
    CHECK(MPI_Allreduce(z, zr, 2, cplx, cmul, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(zr[0] == 1 && zr[1] == 2 && zr[2] == 3 && zr[3] == 4);
    double zin[2] = {0, 1}, zio[2] = {0, 1}; /* i * i = -1 */
    CHECK(MPI_Reduce_local(zin, zio, 1, cplx, cmul) == MPI_SUCCESS && zio[0] == -1 && zio[1] == 0);
    CHECK(MPI_Op_free(&cmul) == MPI_SUCCESS && MPI_Type_free(&cplx) == MPI_SUCCESS);
    struct {
        double v;
        int i;
    } pairs[2] = {{1.5, 1}, {2.5, 2}}, back2[2];
    char packed[64];
    int pos = 0, psize;
    CHECK(MPI_Pack_size(2, MPI_DOUBLE_INT, MPI_COMM_WORLD, &psize) == MPI_SUCCESS && psize == 24);
    CHECK(MPI_Pack(pairs, 2, MPI_DOUBLE_INT, packed, 64, &pos, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(pos == 24);
    pos = 0;
    CHECK(MPI_Unpack(packed, 64, &pos, back2, 2, MPI_DOUBLE_INT, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(back2[1].v == 2.5 && back2[1].i == 2);
    int rcounts[1] = {2}, rs_in[2] = {3, 4}, rs_out[2];
    CHECK(MPI_Reduce_scatter(rs_in, rs_out, rcounts, MPI_INT, MPI_SUM, MPI_COMM_WORLD) ==
          MPI_SUCCESS);
    CHECK(rs_out[0] == 3 && rs_out[1] == 4);

    /* Groups, info, topology helper. */
    MPI_Group wg, g2;
    int grank, t_in[1] = {0}, t_out[1];
    CHECK(MPI_Comm_group(MPI_COMM_WORLD, &wg) == MPI_SUCCESS);
    CHECK(MPI_Group_rank(wg, &grank) == MPI_SUCCESS && grank == 0);
    CHECK(MPI_Group_incl(wg, 1, t_in, &g2) == MPI_SUCCESS);
    CHECK(MPI_Group_translate_ranks(g2, 1, t_in, wg, t_out) == MPI_SUCCESS && t_out[0] == 0);
    CHECK(MPI_Group_free(&g2) == MPI_SUCCESS && MPI_Group_free(&wg) == MPI_SUCCESS);
    MPI_Info info;
    char val[16];
    CHECK(MPI_Info_create(&info) == MPI_SUCCESS && MPI_Info_set(info, "k", "v1") == MPI_SUCCESS);
    CHECK(MPI_Info_get(info, "k", 15, val, &flag) == MPI_SUCCESS && flag && strcmp(val, "v1") == 0);
    CHECK(MPI_Info_free(&info) == MPI_SUCCESS && info == MPI_INFO_NULL);
    int dims[2] = {0, 0};
    CHECK(MPI_Dims_create(12, 2, dims) == MPI_SUCCESS && dims[0] == 4 && dims[1] == 3);
    MPI_Comm node;
    CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
          MPI_SUCCESS);
    CHECK(MPI_Comm_free(&node) == MPI_SUCCESS);

    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(version, &len);
    CHECK(any_library || strstr(version, "mpicollab") != NULL);
    char host[MPI_MAX_PROCESSOR_NAME];
    CHECK(MPI_Get_processor_name(host, &len) == MPI_SUCCESS && len > 0);
    CHECK(MPI_Wtime() > 0 || MPI_Wtime() <= 0);
    return 0;
}

int main(int argc, char **argv)
{
    int provided;
    any_library = argc > 1 && strcmp(argv[1], "--any") == 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        return 2;
    int rc = run();
    int flag;
    MPI_Finalize();
    MPI_Finalized(&flag);
    if (rc == 0 && flag)
        printf("hello ok\n");
    return rc;
}
