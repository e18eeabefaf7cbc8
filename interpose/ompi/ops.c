/*  ops.c - the op/datatype pairs Open MPI 4.1 accepts beyond the standard.

    The standard leaves some pairs of predefined ops and datatypes
    undefined; Open MPI 4.1.4 accepts these of them in reductions
    (measured by tests/abi/op_table.c on 1 process with MPI_ERRORS_RETURN;
    the test ompi_op_table compares the whole table with this face's):
    MPI_CHAR and MPI_CHARACTER with every arithmetic, logical and bitwise
    op, arithmetic and logical ops on MPI_BYTE, and the logical ops on
    MPI_INTEGER1/2/8 and the multi-language integers (but not on
    MPI_INTEGER or MPI_INTEGER4, nor on reals).  docs/abi.md lists them.
*/
#include "cli.h"

int cli_abi_op_extension(int op_kind, int type_id)
{
    switch (op_kind) {
    case COLLAB_OP_SUM:
    case COLLAB_OP_PROD:
    case COLLAB_OP_MAX:
    case COLLAB_OP_MIN:
        return type_id == CLI_T_CHAR || type_id == CLI_T_CHARACTER || type_id == CLI_T_BYTE;
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
        case CLI_T_BYTE:
        case CLI_T_INTEGER1:
        case CLI_T_INTEGER2:
        case CLI_T_INTEGER8:
        case CLI_T_AINT:
        case CLI_T_OFFSET:
        case CLI_T_COUNT:
            return 1;
        default:
            return 0;
        }
    default:
        return 0;
    }
}
