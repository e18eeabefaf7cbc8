/*  cl_dtype.h - facts about the basic datatypes and ops of mpi_collab.h.

    Extents, names for log lines, and MPI's table of which predefined op is
    defined for which datatype (MPI-4.0 section 6.9.2).  collab_op_valid()
    and collab_dtype_extent() (declared in mpi_collab.h) are implemented
    here.  Everything is a pure function of its arguments.
*/
#ifndef CL_DTYPE_H_INCLUDED
#define CL_DTYPE_H_INCLUDED

#include "mpi_collab.h"
#include <stdbool.h>

/* Categories of MPI's op table ("C integer", "Floating point", ...). */
typedef enum {
    CL_DTYPE_CAT_INVALID = 0,
    CL_DTYPE_CAT_INTEGER, /* C integer: INT8..UINT64 */
    CL_DTYPE_CAT_FLOAT,   /* floating point: FLOAT16, FLOAT, DOUBLE, LONG_DOUBLE */
    CL_DTYPE_CAT_COMPLEX, /* C_*_COMPLEX */
    CL_DTYPE_CAT_LOGICAL, /* C_BOOL */
    CL_DTYPE_CAT_BYTE,    /* BYTE */
    CL_DTYPE_CAT_PAIR     /* FLOAT_INT ... LONG_DOUBLE_INT (MAXLOC/MINLOC) */
} cl_dtype_cat_t;

/* Category of t; CL_DTYPE_CAT_INVALID when t is out of range. */
cl_dtype_cat_t cl_dtype_category(collab_dtype_t t);

/* Short static name of t for log lines ("int32", "double_int", ...);
   "invalid" when t is out of range. */
const char *cl_dtype_name(collab_dtype_t t);

/* Short static name of op ("sum", "maxloc", "user", ...); "invalid" when
   op is out of range. */
const char *cl_op_name(collab_op_kind_t op);

/* True for the datatypes whose SUM payloads may be compressed on the wire
   (COLLAB_FLOAT and COLLAB_DOUBLE; see cl_compress_* in cl_reduce.h). */
bool cl_dtype_compressible(collab_dtype_t t);

#endif
