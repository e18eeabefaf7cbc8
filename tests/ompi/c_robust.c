/*  c_robust.c - bad handles and out-of-scope calls on the Open MPI face.

    Built with mpicc.openmpi and run on mpicollab only (Open MPI itself
    crashes on most of these).  With MPI_ERRORS_RETURN on MPI_COMM_WORLD,
    every call below must return the right Open MPI error class instead of
    crashing or hanging: garbage pointers, a handle of another kind, a
    freed handle, NULL handles, and calls that are out of scope (one-sided,
    Open MPI's persistent collectives) must name themselves.  Prints one
    line per check; exits 1 if any failed.
*/
#include <mpi.h>
#include <mpi-ext.h>
#include <stdint.h>
#include <stdio.h>

static int failures;

static void expect(const char *what, int rc, int want_class)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    printf("%-52s class %2d %s\n", what, cls, cls == want_class ? "ok" : "WRONG");
    if (cls != want_class)
        failures++;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    double x = 1, y = 0;
    static char junk[64];

    /* Pointers that are not handles: never dereferenced. */
    expect("garbage communicator",
           MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, (MPI_Comm)(void *)junk), MPI_ERR_COMM);
    expect("wild communicator pointer",
           MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, (MPI_Comm)(uintptr_t)0x10), MPI_ERR_COMM);
    expect("garbage datatype",
           MPI_Allreduce(&x, &y, 1, (MPI_Datatype)(void *)junk, MPI_SUM, MPI_COMM_WORLD),
           MPI_ERR_TYPE);
    expect("garbage op", MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, (MPI_Op)(void *)junk, MPI_COMM_WORLD),
           MPI_ERR_OP);
    /* A predefined object of another kind. */
    expect("MPI_DOUBLE passed as communicator",
           MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, (MPI_Comm)(void *)MPI_DOUBLE),
           MPI_ERR_COMM);
    expect("MPI_COMM_WORLD passed as op",
           MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, (MPI_Op)(void *)MPI_COMM_WORLD, MPI_COMM_WORLD),
           MPI_ERR_OP);
    /* A run-time handle of another kind, and a freed one. */
    MPI_Comm dup, saved;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    expect("a communicator passed as datatype",
           MPI_Allreduce(&x, &y, 1, (MPI_Datatype)(void *)dup, MPI_SUM, MPI_COMM_WORLD),
           MPI_ERR_TYPE);
    saved = dup;
    MPI_Comm_free(&dup);
    expect("freed communicator", MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, saved), MPI_ERR_COMM);
    expect("MPI_COMM_NULL", MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM);
    expect("MPI_DATATYPE_NULL",
           MPI_Allreduce(&x, &y, 1, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_TYPE);
    expect("negative count", MPI_Allreduce(&x, &y, -1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
           MPI_ERR_COUNT);
    MPI_Request req = (MPI_Request)(void *)junk;
    expect("garbage request", MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_ERR_REQUEST);

    /* Out of scope: a clean MPI_ERR_UNSUPPORTED_OPERATION (52). */
    MPI_Win win = MPI_WIN_NULL;
    expect("MPI_Win_create (one-sided)",
           MPI_Win_create(&x, sizeof x, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win),
           MPI_ERR_UNSUPPORTED_OPERATION);
    MPI_Request preq = MPI_REQUEST_NULL;
    expect("MPIX_Allreduce_init (persistent collective)",
           MPIX_Allreduce_init(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                               &preq),
           MPI_ERR_UNSUPPORTED_OPERATION);

    /* Fortran conversions of bad handles do not crash either. */
    MPI_Fint f = MPI_Comm_c2f((MPI_Comm)(void *)junk);
    MPI_Comm back = MPI_Comm_f2c(123456);
    int conv_ok = f == -1 && back == MPI_COMM_NULL && MPI_Comm_c2f(MPI_COMM_WORLD) == 0 &&
                  MPI_Type_c2f(MPI_DOUBLE) == 46 && MPI_Type_f2c(46) == MPI_DOUBLE &&
                  MPI_Op_f2c(3) == MPI_SUM;
    printf("%-52s %s\n", "c2f/f2c of bad and predefined handles", conv_ok ? "ok" : "WRONG");
    failures += !conv_ok;

    MPI_Finalize();
    printf("failures: %d\n", failures);
    return failures != 0;
}
