/*  errors.c - error paths of the MPICH face, seen by a program built with
    MPICH's own mpicc and run on mpicollab (one peer).

    errors return       MPI_ERRORS_RETURN on MPI_COMM_WORLD, then every bad
                        argument below must return its class (MPI standard
                        numbering of the MPICH ABI); prints "ok ..." lines and
                        exits 0 only if every check passed
    errors fatal        default handler: MPI_Allreduce with MPI_OP_NULL must
                        print one line and exit with status 9 (MPI_ERR_OP)
    errors unsupported  default handler: MPI_Win_create must end the program
                        with status 44 (MPI_ERR_UNSUPPORTED_OPERATION)
    errors preinit      MPI_Comm_rank before MPI_Init: status 15 (MPI_ERR_OTHER)
    errors abort        MPI_Abort(MPI_COMM_WORLD, 7): status 7
*/
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void expect(const char *what, int rc, int want)
{
    int cls = -1;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    else
        cls = MPI_SUCCESS;
    if (cls == want) {
        printf("ok %s\n", what);
    } else {
        printf("FAIL %s: class %d, expected %d\n", what, cls, want);
        failures++;
    }
}

static int handler_calls, handler_code;
static MPI_Comm handler_comm;

static void user_handler(MPI_Comm *comm, int *code, ...)
{
    handler_calls++;
    handler_code = *code;
    handler_comm = *comm;
}

static int run_return(void)
{
    double a[4] = {1, 2, 3, 4}, b[4] = {0};
    char c[4] = "abc";
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    expect("allreduce ok", MPI_Allreduce(a, b, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
           MPI_SUCCESS);
    expect("allreduce result", b[3] == 4.0 ? MPI_SUCCESS : MPI_ERR_OTHER, MPI_SUCCESS);
    expect("allreduce in place",
           MPI_Allreduce(MPI_IN_PLACE, b, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), MPI_SUCCESS);
    expect("count 0", MPI_Allreduce(a, b, 0, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    expect("negative count", MPI_Allreduce(a, b, -1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
           MPI_ERR_COUNT);
    expect("MPI_COMM_NULL", MPI_Allreduce(a, b, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_NULL),
           MPI_ERR_COMM);
    expect("invalid comm handle", MPI_Barrier((MPI_Comm)0x84001234), MPI_ERR_COMM);
    expect("bad root", MPI_Bcast(a, 1, MPI_DOUBLE, 5, MPI_COMM_WORLD), MPI_ERR_ROOT);
    expect("negative root", MPI_Bcast(a, 1, MPI_DOUBLE, -1, MPI_COMM_WORLD), MPI_ERR_ROOT);
    expect("MPI_OP_NULL", MPI_Allreduce(a, b, 1, MPI_DOUBLE, MPI_OP_NULL, MPI_COMM_WORLD),
           MPI_ERR_OP);
    expect("op undefined for type", MPI_Allreduce(a, b, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD),
           MPI_ERR_OP);
    /* Outside the standard's table, but MPICH accepts it (docs/abi.md). */
    expect("MPI_CHAR with MPI_SUM, as MPICH",
           MPI_Allreduce(c, c + 2, 1, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    expect("MPI_REPLACE in a reduction",
           MPI_Allreduce(a, b, 1, MPI_DOUBLE, MPI_REPLACE, MPI_COMM_WORLD), MPI_ERR_OP);
    expect("MPI_DATATYPE_NULL", MPI_Allreduce(a, b, 1, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD),
           MPI_ERR_TYPE);
    expect("aliased buffers", MPI_Allreduce(a, a, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
           MPI_ERR_BUFFER);
    expect("NULL recvbuf", MPI_Allreduce(a, NULL, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
           MPI_ERR_BUFFER);
    expect("NULL buffer with count", MPI_Bcast(NULL, 3, MPI_INT, 0, MPI_COMM_WORLD),
           MPI_ERR_BUFFER);
    expect("bad tag", MPI_Send(a, 1, MPI_DOUBLE, 0, -5, MPI_COMM_WORLD), MPI_ERR_TAG);
    expect("bad dest", MPI_Send(a, 1, MPI_DOUBLE, 3, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    expect("send to MPI_PROC_NULL", MPI_Send(a, 1, MPI_DOUBLE, MPI_PROC_NULL, 0, MPI_COMM_WORLD),
           MPI_SUCCESS);

    MPI_Datatype t3;
    MPI_Type_contiguous(3, MPI_DOUBLE, &t3);
    expect("uncommitted type", MPI_Allreduce(a, b, 1, t3, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_TYPE);
    MPI_Type_commit(&t3);
    expect("predefined op on a derived type", MPI_Allreduce(a, b, 1, t3, MPI_SUM, MPI_COMM_WORLD),
           MPI_ERR_OP);
    expect("derived type in a broadcast", MPI_Bcast(a, 1, t3, 0, MPI_COMM_WORLD), MPI_SUCCESS);
    MPI_Type_free(&t3);
    MPI_Datatype strided;
    expect("strided vector", MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &strided), MPI_SUCCESS);
    MPI_Type_free(&strided);

    /* Out-of-scope calls. */
    MPI_Win win;
    expect("MPI_Win_create", MPI_Win_create(a, 32, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &win),
           MPI_ERR_UNSUPPORTED_OPERATION);
    MPI_File fh;
    expect("MPI_File_open", MPI_File_open(MPI_COMM_WORLD, "x", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh),
           MPI_ERR_UNSUPPORTED_OPERATION);
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(MPI_ERR_UNSUPPORTED_OPERATION, msg, &len);
    expect("error string", strstr(msg, "MPI_ERR_UNSUPPORTED_OPERATION") ? 0 : MPI_ERR_OTHER, 0);

    /* Handlers: inherited by a duplicate; user handlers see the code. */
    MPI_Comm dup;
    expect("dup", MPI_Comm_dup(MPI_COMM_WORLD, &dup), MPI_SUCCESS);
    expect("dup inherits RETURN", MPI_Allreduce(a, b, 1, MPI_DOUBLE, MPI_OP_NULL, dup), MPI_ERR_OP);
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(user_handler, &eh);
    MPI_Comm_set_errhandler(dup, eh);
    MPI_Errhandler_free(&eh);
    expect("user handler returns the code", MPI_Bcast(a, 1, MPI_DOUBLE, 9, dup), MPI_ERR_ROOT);
    expect("user handler called",
           handler_calls == 1 && handler_code == MPI_ERR_ROOT && handler_comm == dup
               ? 0
               : MPI_ERR_OTHER,
           0);
    expect("comm free", MPI_Comm_free(&dup), MPI_SUCCESS);
    expect("dup is null", dup == MPI_COMM_NULL ? 0 : MPI_ERR_OTHER, 0);
    expect("free MPI_COMM_WORLD", MPI_Comm_free(&(MPI_Comm){MPI_COMM_WORLD}), MPI_ERR_COMM);

    /* User error classes. */
    int cls, code, got;
    MPI_Add_error_class(&cls);
    MPI_Add_error_code(cls, &code);
    MPI_Add_error_string(code, "my error");
    MPI_Error_class(code, &got);
    expect("added class", got == cls ? 0 : MPI_ERR_OTHER, 0);
    MPI_Error_string(code, msg, &len);
    expect("added string", strcmp(msg, "my error") == 0 ? 0 : MPI_ERR_OTHER, 0);

    /* Requests. */
    MPI_Request req = (MPI_Request)0xac00abcd;
    expect("bad request", MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_ERR_REQUEST);
    req = MPI_REQUEST_NULL;
    expect("wait on MPI_REQUEST_NULL", MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "return";
    if (strcmp(mode, "preinit") == 0) {
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        printf("MPI_Comm_rank before MPI_Init returned\n");
        return 0;
    }
    MPI_Init(&argc, &argv);
    int rc = 0;
    if (strcmp(mode, "return") == 0) {
        rc = run_return();
    } else if (strcmp(mode, "fatal") == 0) {
        double a = 1, b;
        MPI_Allreduce(&a, &b, 1, MPI_DOUBLE, MPI_OP_NULL, MPI_COMM_WORLD);
        printf("MPI_Allreduce returned under MPI_ERRORS_ARE_FATAL\n");
    } else if (strcmp(mode, "unsupported") == 0) {
        MPI_Win win;
        double a[4];
        MPI_Win_create(a, 32, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        printf("MPI_Win_create returned under MPI_ERRORS_ARE_FATAL\n");
    } else if (strcmp(mode, "abort") == 0) {
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 7);
        printf("MPI_Abort returned\n");
    }
    fflush(stdout);
    MPI_Finalize();
    return rc;
}
