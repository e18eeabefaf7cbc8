/*  op_table.c - which op/datatype pairs does this MPI library accept?

    Built unchanged with mpicc.mpich and with mpicc.openmpi.  On one
    process, with MPI_ERRORS_RETURN, it calls MPI_Allreduce with every
    predefined op on one element of every predefined datatype and prints
    one line per pair: "<op> <datatype> accept|reject".  A datatype that
    this library's header defines as MPI_DATATYPE_NULL (an optional type
    it does not support) prints "absent" once instead.  Run on the real
    library and on the matching mpicollab face, the outputs must be
    identical (tests/abi/abi.cmake, tests/ompi/ompi.cmake; docs/abi.md).
*/
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define N_(x)                                                                                      \
    {                                                                                              \
        x, #x                                                                                      \
    }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const struct {
        MPI_Op op;
        const char *name;
    } ops[] = {
        N_(MPI_SUM),    N_(MPI_PROD),   N_(MPI_MAX),     N_(MPI_MIN),   N_(MPI_LAND),
        N_(MPI_LOR),    N_(MPI_LXOR),   N_(MPI_BAND),    N_(MPI_BOR),   N_(MPI_BXOR),
        N_(MPI_MAXLOC), N_(MPI_MINLOC), N_(MPI_REPLACE), N_(MPI_NO_OP),
    };
    const struct {
        MPI_Datatype t;
        const char *name;
    } types[] = {
        N_(MPI_CHAR),
        N_(MPI_SIGNED_CHAR),
        N_(MPI_UNSIGNED_CHAR),
        N_(MPI_BYTE),
        N_(MPI_WCHAR),
        N_(MPI_SHORT),
        N_(MPI_UNSIGNED_SHORT),
        N_(MPI_INT),
        N_(MPI_UNSIGNED),
        N_(MPI_LONG),
        N_(MPI_UNSIGNED_LONG),
        N_(MPI_FLOAT),
        N_(MPI_DOUBLE),
        N_(MPI_LONG_DOUBLE),
        N_(MPI_LONG_LONG_INT),
        N_(MPI_LONG_LONG),
        N_(MPI_UNSIGNED_LONG_LONG),
        N_(MPI_PACKED),
        N_(MPI_FLOAT_INT),
        N_(MPI_DOUBLE_INT),
        N_(MPI_LONG_INT),
        N_(MPI_SHORT_INT),
        N_(MPI_2INT),
        N_(MPI_LONG_DOUBLE_INT),
        N_(MPI_COMPLEX),
        N_(MPI_DOUBLE_COMPLEX),
        N_(MPI_LOGICAL),
        N_(MPI_REAL),
        N_(MPI_DOUBLE_PRECISION),
        N_(MPI_INTEGER),
        N_(MPI_2INTEGER),
        N_(MPI_2REAL),
        N_(MPI_2DOUBLE_PRECISION),
        N_(MPI_CHARACTER),
        N_(MPI_REAL4),
        N_(MPI_REAL8),
        N_(MPI_REAL16),
        N_(MPI_COMPLEX8),
        N_(MPI_COMPLEX16),
        N_(MPI_COMPLEX32),
        N_(MPI_INTEGER1),
        N_(MPI_INTEGER2),
        N_(MPI_INTEGER4),
        N_(MPI_INTEGER8),
#ifdef MPI_INTEGER16 /* not in Open MPI 4.1's header */
        N_(MPI_INTEGER16),
#endif
        N_(MPI_INT8_T),
        N_(MPI_INT16_T),
        N_(MPI_INT32_T),
        N_(MPI_INT64_T),
        N_(MPI_UINT8_T),
        N_(MPI_UINT16_T),
        N_(MPI_UINT32_T),
        N_(MPI_UINT64_T),
        N_(MPI_C_BOOL),
        N_(MPI_C_FLOAT_COMPLEX),
        N_(MPI_C_COMPLEX),
        N_(MPI_C_DOUBLE_COMPLEX),
        N_(MPI_C_LONG_DOUBLE_COMPLEX),
        N_(MPI_AINT),
        N_(MPI_OFFSET),
        N_(MPI_COUNT),
        N_(MPI_CXX_BOOL),
        N_(MPI_CXX_FLOAT_COMPLEX),
        N_(MPI_CXX_DOUBLE_COMPLEX),
        N_(MPI_CXX_LONG_DOUBLE_COMPLEX),
    };
    /* Large enough and aligned for one element of any type above. */
    static long double in[8], out[8];
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        if (types[t].t == MPI_DATATYPE_NULL) {
            printf("%s absent\n", types[t].name);
            continue;
        }
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            memset(in, 0, sizeof in);
            memset(out, 0, sizeof out);
            int rc = MPI_Allreduce(in, out, 1, types[t].t, ops[o].op, MPI_COMM_WORLD);
            printf("%s %s %s\n", ops[o].name, types[t].name,
                   rc == MPI_SUCCESS ? "accept" : "reject");
        }
    }
    MPI_Finalize();
    return 0;
}
