/*  cl_dtype.c - extents, names and MPI's op/datatype table.

    The table of valid (op, datatype) pairs is written from the standard
    (MPI-4.0 section 6.9.2), independently of the kernels in cl_reduce_*.c;
    the selftest checks that the two agree.  MPI_REPLACE and MPI_NO_OP are
    defined only for the accumulate functions of one-sided communication,
    which is out of scope, so they are invalid here: a collective given
    them fails with MPI_ERR_OP, as the standard asks.
*/
#include "cl_dtype.h"
#include "cl_reduce_impl.h"

/* Extents are those of the C types the kernels use; the static asserts in
   cl_reduce_impl.h pin the pair layouts to MPI's. */
static const size_t s_extent[COLLAB_DTYPE_COUNT] = {
    [COLLAB_INT8] = 1,
    [COLLAB_INT16] = 2,
    [COLLAB_INT32] = 4,
    [COLLAB_INT64] = 8,
    [COLLAB_UINT8] = 1,
    [COLLAB_UINT16] = 2,
    [COLLAB_UINT32] = 4,
    [COLLAB_UINT64] = 8,
    [COLLAB_FLOAT16] = 2,
    [COLLAB_FLOAT] = sizeof(float),
    [COLLAB_DOUBLE] = sizeof(double),
    [COLLAB_LONG_DOUBLE] = sizeof(long double),
    [COLLAB_C_BOOL] = 1,
    [COLLAB_C_FLOAT_COMPLEX] = sizeof(float _Complex),
    [COLLAB_C_DOUBLE_COMPLEX] = sizeof(double _Complex),
    [COLLAB_C_LONG_DOUBLE_COMPLEX] = sizeof(long double _Complex),
    [COLLAB_FLOAT_INT] = sizeof(cl_float_int_t),
    [COLLAB_DOUBLE_INT] = sizeof(cl_double_int_t),
    [COLLAB_LONG_INT] = sizeof(cl_long_int_t),
    [COLLAB_SHORT_INT] = sizeof(cl_short_int_t),
    [COLLAB_2INT] = sizeof(cl_2int_t),
    [COLLAB_LONG_DOUBLE_INT] = sizeof(cl_long_double_int_t),
    [COLLAB_BYTE] = 1,
};

static const char *const s_dtype_name[COLLAB_DTYPE_COUNT] = {
    [COLLAB_INT8] = "int8",
    [COLLAB_INT16] = "int16",
    [COLLAB_INT32] = "int32",
    [COLLAB_INT64] = "int64",
    [COLLAB_UINT8] = "uint8",
    [COLLAB_UINT16] = "uint16",
    [COLLAB_UINT32] = "uint32",
    [COLLAB_UINT64] = "uint64",
    [COLLAB_FLOAT16] = "float16",
    [COLLAB_FLOAT] = "float",
    [COLLAB_DOUBLE] = "double",
    [COLLAB_LONG_DOUBLE] = "long_double",
    [COLLAB_C_BOOL] = "c_bool",
    [COLLAB_C_FLOAT_COMPLEX] = "c_float_complex",
    [COLLAB_C_DOUBLE_COMPLEX] = "c_double_complex",
    [COLLAB_C_LONG_DOUBLE_COMPLEX] = "c_long_double_complex",
    [COLLAB_FLOAT_INT] = "float_int",
    [COLLAB_DOUBLE_INT] = "double_int",
    [COLLAB_LONG_INT] = "long_int",
    [COLLAB_SHORT_INT] = "short_int",
    [COLLAB_2INT] = "2int",
    [COLLAB_LONG_DOUBLE_INT] = "long_double_int",
    [COLLAB_BYTE] = "byte",
};

static const char *const s_op_name[COLLAB_OP_COUNT] = {
    [COLLAB_OP_SUM] = "sum",         [COLLAB_OP_PROD] = "prod",     [COLLAB_OP_MAX] = "max",
    [COLLAB_OP_MIN] = "min",         [COLLAB_OP_LAND] = "land",     [COLLAB_OP_LOR] = "lor",
    [COLLAB_OP_LXOR] = "lxor",       [COLLAB_OP_BAND] = "band",     [COLLAB_OP_BOR] = "bor",
    [COLLAB_OP_BXOR] = "bxor",       [COLLAB_OP_MAXLOC] = "maxloc", [COLLAB_OP_MINLOC] = "minloc",
    [COLLAB_OP_REPLACE] = "replace", [COLLAB_OP_NO_OP] = "no_op",   [COLLAB_OP_USER] = "user",
};

cl_dtype_cat_t cl_dtype_category(collab_dtype_t t)
{
    switch (t) {
    case COLLAB_INT8:
    case COLLAB_INT16:
    case COLLAB_INT32:
    case COLLAB_INT64:
    case COLLAB_UINT8:
    case COLLAB_UINT16:
    case COLLAB_UINT32:
    case COLLAB_UINT64:
        return CL_DTYPE_CAT_INTEGER;
    case COLLAB_FLOAT16:
    case COLLAB_FLOAT:
    case COLLAB_DOUBLE:
    case COLLAB_LONG_DOUBLE:
        return CL_DTYPE_CAT_FLOAT;
    case COLLAB_C_FLOAT_COMPLEX:
    case COLLAB_C_DOUBLE_COMPLEX:
    case COLLAB_C_LONG_DOUBLE_COMPLEX:
        return CL_DTYPE_CAT_COMPLEX;
    case COLLAB_C_BOOL:
        return CL_DTYPE_CAT_LOGICAL;
    case COLLAB_BYTE:
        return CL_DTYPE_CAT_BYTE;
    case COLLAB_FLOAT_INT:
    case COLLAB_DOUBLE_INT:
    case COLLAB_LONG_INT:
    case COLLAB_SHORT_INT:
    case COLLAB_2INT:
    case COLLAB_LONG_DOUBLE_INT:
        return CL_DTYPE_CAT_PAIR;
    case COLLAB_DTYPE_COUNT:
        break;
    }
    return CL_DTYPE_CAT_INVALID;
}

size_t collab_dtype_extent(collab_dtype_t t)
{
    if ((unsigned)t >= COLLAB_DTYPE_COUNT)
        return 0;
    return s_extent[t];
}

const char *cl_dtype_name(collab_dtype_t t)
{
    if ((unsigned)t >= COLLAB_DTYPE_COUNT)
        return "invalid";
    return s_dtype_name[t];
}

const char *cl_op_name(collab_op_kind_t op)
{
    if ((unsigned)op >= COLLAB_OP_COUNT)
        return "invalid";
    return s_op_name[op];
}

bool cl_dtype_compressible(collab_dtype_t t)
{
    return t == COLLAB_FLOAT || t == COLLAB_DOUBLE;
}

int collab_op_valid(collab_op_kind_t op, collab_dtype_t t)
{
    cl_dtype_cat_t cat = cl_dtype_category(t);
    if (cat == CL_DTYPE_CAT_INVALID)
        return 0;
    switch (op) {
    case COLLAB_OP_SUM:
    case COLLAB_OP_PROD:
        return cat == CL_DTYPE_CAT_INTEGER || cat == CL_DTYPE_CAT_FLOAT ||
               cat == CL_DTYPE_CAT_COMPLEX;
    case COLLAB_OP_MAX:
    case COLLAB_OP_MIN:
        return cat == CL_DTYPE_CAT_INTEGER || cat == CL_DTYPE_CAT_FLOAT;
    case COLLAB_OP_LAND:
    case COLLAB_OP_LOR:
    case COLLAB_OP_LXOR:
        return cat == CL_DTYPE_CAT_INTEGER || cat == CL_DTYPE_CAT_LOGICAL;
    case COLLAB_OP_BAND:
    case COLLAB_OP_BOR:
    case COLLAB_OP_BXOR:
        return cat == CL_DTYPE_CAT_INTEGER || cat == CL_DTYPE_CAT_BYTE;
    case COLLAB_OP_MAXLOC:
    case COLLAB_OP_MINLOC:
        return cat == CL_DTYPE_CAT_PAIR;
    case COLLAB_OP_USER:
        return 1;
    case COLLAB_OP_REPLACE: /* accumulate (RMA) only */
    case COLLAB_OP_NO_OP:
    case COLLAB_OP_COUNT:
        break;
    }
    return 0;
}
