/*  mpich_abi.c - the MPICH-ABI parts of the translation (abi.h): the
    predefined-datatype table, the fatal-error and MPI_Abort conventions,
    the check for programs of the other ABI, and the Fortran status
    conversions (MPICH's Fortran status is the C struct as 5 integers).
*/
#define _GNU_SOURCE
#include "cli.h"
#include "cli_impl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Every predefined datatype handle of MPICH 4.0.2 and its neutral id. */
#define CLI_MPICH_TYPES(X)                                                                         \
    X(MPI_CHAR, CHAR)                                                                              \
    X(MPI_SIGNED_CHAR, SIGNED_CHAR) X(MPI_UNSIGNED_CHAR, UNSIGNED_CHAR) X(MPI_BYTE, BYTE) X(       \
        MPI_WCHAR, WCHAR) X(MPI_SHORT, SHORT) X(MPI_UNSIGNED_SHORT, UNSIGNED_SHORT)                \
        X(MPI_INT, INT) X(MPI_UNSIGNED, UNSIGNED) X(MPI_LONG, LONG) X(                             \
            MPI_UNSIGNED_LONG, UNSIGNED_LONG) X(MPI_FLOAT, FLOAT) X(MPI_DOUBLE, DOUBLE)            \
            X(MPI_LONG_DOUBLE, LONG_DOUBLE) X(MPI_LONG_LONG_INT, LONG_LONG_INT) X(                 \
                MPI_UNSIGNED_LONG_LONG, UNSIGNED_LONG_LONG) X(MPI_PACKED, PACKED) X(MPI_LB, LB)    \
                X(MPI_UB, UB) X(MPI_FLOAT_INT, FLOAT_INT) X(MPI_DOUBLE_INT, DOUBLE_INT) X(         \
                    MPI_LONG_INT, LONG_INT) X(MPI_SHORT_INT,                                       \
                                              SHORT_INT) X(MPI_2INT, 2INT) X(MPI_LONG_DOUBLE_INT,  \
                                                                             LONG_DOUBLE_INT)      \
                    X(MPI_COMPLEX, COMPLEX) X(MPI_DOUBLE_COMPLEX, DOUBLE_COMPLEX) X(               \
                        MPI_LOGICAL,                                                               \
                        LOGICAL) X(MPI_REAL,                                                       \
                                   REAL) X(MPI_DOUBLE_PRECISION,                                   \
                                           DOUBLE_PRECISION) X(MPI_INTEGER, INTEGER)               \
                        X(MPI_2INTEGER, 2INTEGER) X(MPI_2REAL, 2REAL) X(                           \
                            MPI_2DOUBLE_PRECISION,                                                 \
                            2DOUBLE_PRECISION) X(MPI_CHARACTER,                                    \
                                                 CHARACTER) X(MPI_REAL4, REAL4)                    \
                            X(MPI_REAL8, REAL8)                                                    \
                                X(MPI_REAL16, REAL16) X(MPI_COMPLEX8, COMPLEX8) X(                 \
                                    MPI_COMPLEX16, COMPLEX16) X(MPI_COMPLEX32, COMPLEX32)          \
                                    X(MPI_INTEGER1, INTEGER1) X(MPI_INTEGER2, INTEGER2) X(         \
                                        MPI_INTEGER4,                                              \
                                        INTEGER4) X(MPI_INTEGER8, INTEGER8)                        \
                                        X(MPI_INT8_T, INT8_T) X(MPI_INT16_T, INT16_T) X(           \
                                            MPI_INT32_T,                                           \
                                            INT32_T) X(MPI_INT64_T,                                \
                                                       INT64_T) X(MPI_UINT8_T, UINT8_T)            \
                                            X(MPI_UINT16_T, UINT16_T) X(MPI_UINT32_T, UINT32_T)    \
                                                X(MPI_UINT64_T, UINT64_T) X(MPI_C_BOOL, C_BOOL) X( \
                                                    MPI_C_FLOAT_COMPLEX, C_FLOAT_COMPLEX)          \
                                                    X(MPI_C_DOUBLE_COMPLEX, C_DOUBLE_COMPLEX) X(   \
                                                        MPI_C_LONG_DOUBLE_COMPLEX,                 \
                                                        C_LONG_DOUBLE_COMPLEX) X(MPIX_C_FLOAT16,   \
                                                                                 C_FLOAT16)        \
                                                        X(MPI_AINT, AINT) X(MPI_OFFSET, OFFSET) X( \
                                                            MPI_COUNT,                             \
                                                            COUNT) X(MPI_CXX_BOOL, CXX_BOOL)       \
                                                            X(MPI_CXX_FLOAT_COMPLEX,               \
                                                              CXX_FLOAT_COMPLEX)                   \
                                                                X(MPI_CXX_DOUBLE_COMPLEX,          \
                                                                  CXX_DOUBLE_COMPLEX)              \
                                                                    X(MPI_CXX_LONG_DOUBLE_COMPLEX, \
                                                                      CXX_LONG_DOUBLE_COMPLEX)

int cli_abi_type_decode(MPI_Datatype h, int *id)
{
    switch (h) {
#define CASE_(handle, name)                                                                        \
    case handle:                                                                                   \
        *id = CLI_T_##name;                                                                        \
        return CLI_H_PREDEF;
        CLI_MPICH_TYPES(CASE_)
#undef CASE_
    case MPI_DATATYPE_NULL:
        return CLI_H_NULL;
    default:
        break;
    }
    return cli_mpich_direct_decode((unsigned)h, 0x8c000000u, 5, id);
}

MPI_Datatype cli_abi_type_predef(int id)
{
    static const MPI_Datatype handles[CLI_NTYPES] = {
#define ENTRY_(handle, name) [CLI_T_##name] = handle,
        CLI_MPICH_TYPES(ENTRY_)
#undef ENTRY_
    };
    if (id < 0 || id >= CLI_NTYPES || handles[id] == 0)
        return MPI_DATATYPE_NULL;
    return handles[id];
}

MPI_Op cli_abi_op_predef(int id)
{
    static const MPI_Op handles[COLLAB_OP_COUNT] = {
        [COLLAB_OP_SUM] = MPI_SUM,         [COLLAB_OP_PROD] = MPI_PROD,
        [COLLAB_OP_MAX] = MPI_MAX,         [COLLAB_OP_MIN] = MPI_MIN,
        [COLLAB_OP_LAND] = MPI_LAND,       [COLLAB_OP_LOR] = MPI_LOR,
        [COLLAB_OP_LXOR] = MPI_LXOR,       [COLLAB_OP_BAND] = MPI_BAND,
        [COLLAB_OP_BOR] = MPI_BOR,         [COLLAB_OP_BXOR] = MPI_BXOR,
        [COLLAB_OP_MAXLOC] = MPI_MAXLOC,   [COLLAB_OP_MINLOC] = MPI_MINLOC,
        [COLLAB_OP_REPLACE] = MPI_REPLACE, [COLLAB_OP_NO_OP] = MPI_NO_OP,
    };
    if (id < 0 || id >= COLLAB_OP_USER)
        return MPI_OP_NULL;
    return handles[id];
}

/* Ends this peer: the swarm is told when the core runs, then the process
   exits with MPICH's status for an error code (code & 0xff). */
__attribute__((noreturn)) static void cli_mpich_exit(int status)
{
    fflush(stdout);
    fflush(stderr);
    if (collab_initialized() && !collab_finalized())
        collab_abort(status);
    _exit(status);
}

void cli_abi_fatal(int code, const char *call, const char *comm_name, const char *line)
{
    (void)call; /* both are in the line already */
    (void)comm_name;
    if (line != NULL) /* NULL: the cause was already reported */
        cli_log_line("%s", line);
    int status = code & 0xff;
    cli_mpich_exit(status != 0 ? status : 1);
}

void cli_abi_abort(int errorcode, const char *comm_name, int rank)
{
    char line[512];
    int n = snprintf(line, sizeof line,
                     "Abort(%d) on node %d (rank %d in comm 0): application called "
                     "MPI_Abort(%s, %d) - process %d\n",
                     errorcode, rank, rank, comm_name, errorcode, rank);
    if (n > 0) {
        ssize_t w = write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        (void)w;
    }
    cli_mpich_exit(errorcode & 0xff);
}

const char *cli_abi_foreign_check(void)
{
    /* An Open MPI program references ompi_mpi_comm_world (a copy
       relocation in the executable, or through libmpi.so.40). */
    if (dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world") != NULL)
        return "this program was built for Open MPI (it uses ompi_mpi_comm_world), but the "
               "MPICH-ABI library libmpicollab.so is preloaded; preload libmpicollab-ompi.so "
               "instead (or put <prefix>/lib/mpicollab first in LD_LIBRARY_PATH)";
    return NULL;
}

/* ---------------------------------------------------------------------- */
/* Fortran status conversions. */

extern MPI_Fint *MPI_F_STATUS_IGNORE;

int cli_impl_Status_c2f(cli_call_t *call, const MPI_Status *c_status, MPI_Fint *f_status)
{
    if (c_status == MPI_STATUS_IGNORE || c_status == NULL)
        return cli_err(call, MPI_ERR_ARG, "c_status", "MPI_STATUS_IGNORE cannot be converted");
    if (f_status == NULL || f_status == MPI_F_STATUS_IGNORE)
        return cli_err(call, MPI_ERR_ARG, "f_status", "must be a Fortran status array");
    memcpy(f_status, c_status, sizeof *c_status);
    return MPI_SUCCESS;
}

int cli_impl_Status_f2c(cli_call_t *call, const MPI_Fint *f_status, MPI_Status *c_status)
{
    if (f_status == NULL || f_status == MPI_F_STATUS_IGNORE)
        return cli_err(call, MPI_ERR_ARG, "f_status", "MPI_F_STATUS_IGNORE cannot be converted");
    if (c_status == MPI_STATUS_IGNORE || c_status == NULL)
        return cli_err(call, MPI_ERR_ARG, "c_status", "must be a status");
    memcpy(c_status, f_status, sizeof *c_status);
    return MPI_SUCCESS;
}
