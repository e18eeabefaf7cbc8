/*  mpich_ops.c - the op/datatype pairs MPICH 4.0 accepts beyond the standard.

    The standard leaves some pairs of predefined ops and datatypes
    undefined; MPICH 4.0.2 accepts these of them in reductions (measured
    by tests/abi/op_table.c on 1 process with MPI_ERRORS_RETURN; the test
    abi_op_table compares the whole table with this face's): MPI_CHAR and
    MPI_CHARACTER with every arithmetic, logical and bitwise op, and the
    logical ops on Fortran integers, multi-language integers and reals.
    It refuses MPI_SUM and MPI_PROD on MPI_COMPLEX32, which the standard
    defines.  docs/abi.md lists them.
*/
#include "cli.h"

int cli_abi_op_extension(int op_kind, int type_id)
{
    if ((op_kind == COLLAB_OP_SUM || op_kind == COLLAB_OP_PROD) && type_id == CLI_T_COMPLEX32)
        return -1;
    switch (op_kind) {
    case COLLAB_OP_SUM:
    case COLLAB_OP_PROD:
    case COLLAB_OP_MAX:
    case COLLAB_OP_MIN:
    case COLLAB_OP_BAND:
    case COLLAB_OP_BOR:
    case COLLAB_OP_BXOR:
        return type_id == CLI_T_CHAR || type_id == CLI_T_CHARACTER;
    case COLLAB_OP_LAND:
    case COLLAB_OP_LOR:
    case COLLAB_OP_LXOR:
        switch (type_id) {
        case CLI_T_CHAR:
        case CLI_T_CHARACTER:
        case CLI_T_INTEGER:
        case CLI_T_INTEGER1:
        case CLI_T_INTEGER2:
        case CLI_T_INTEGER4:
        case CLI_T_INTEGER8:
        case CLI_T_AINT:
        case CLI_T_OFFSET:
        case CLI_T_COUNT:
        case CLI_T_FLOAT:
        case CLI_T_DOUBLE:
        case CLI_T_LONG_DOUBLE:
        case CLI_T_REAL:
        case CLI_T_DOUBLE_PRECISION:
        case CLI_T_REAL4:
        case CLI_T_REAL8:
        case CLI_T_REAL16:
            return 1;
        default:
            return 0;
        }
    default:
        return 0;
    }
}
