/*  objects.h - tables of the Open MPI 4.1 predefined objects.

    objects.c defines every predefined object Open MPI's libmpi.so.40
    exports (ompi_mpi_comm_world, ompi_mpi_double, ompi_mpi_op_sum, ...) at
    Open MPI's exact sizes, and recognises a handle as one of them by its
    address.  The X-macro tables here are the single list of those objects,
    with the ABI-neutral id (docs/abi.md 3.1) and the Fortran handle of
    each predefined datatype and op; handles.c and f2c.c build on them.  Nothing here allocates;
   everything is safe to call from any thread.
*/
#ifndef CL_OMPI_OBJECTS_H_INCLUDED
#define CL_OMPI_OBJECTS_H_INCLUDED

#include "cli_ids.h"
#include "mpi.h"
#include "mpi_collab.h"

#include <pthread.h>
#include <stdint.h>

/* Kinds of predefined objects. */
typedef enum {
    CL_OMPI_KIND_COMM,
    CL_OMPI_KIND_DATATYPE,
    CL_OMPI_KIND_OP,
    CL_OMPI_KIND_ERRHANDLER,
    CL_OMPI_KIND_GROUP,
    CL_OMPI_KIND_INFO,
    CL_OMPI_KIND_REQUEST,
    CL_OMPI_KIND_MESSAGE,
    CL_OMPI_KIND_WIN,
    CL_OMPI_KIND_FILE,
    CL_OMPI_KIND_COUNT
} cl_ompi_kind_t;

enum { CL_OMPI_COMM_NULL, CL_OMPI_COMM_WORLD, CL_OMPI_COMM_SELF, CL_OMPI_COMM_COUNT };
enum { CL_OMPI_GROUP_NULL, CL_OMPI_GROUP_EMPTY, CL_OMPI_GROUP_COUNT };
enum { CL_OMPI_MESSAGE_NULL, CL_OMPI_MESSAGE_NO_PROC, CL_OMPI_MESSAGE_COUNT };
enum {
    CL_OMPI_ERRHANDLER_NULL,
    CL_OMPI_ERRORS_ARE_FATAL,
    CL_OMPI_ERRORS_RETURN,
    CL_OMPI_ERRORS_THROW_EXCEPTIONS,
    CL_OMPI_ERRHANDLER_COUNT
};
enum { CL_OMPI_INFO_NULL, CL_OMPI_INFO_ENV, CL_OMPI_INFO_COUNT };

/* The tag at the start of each predefined object (debugging aid). */
#define CL_OMPI_OBJ_MAGIC 0x494d4f43u /* "COMI" */
typedef struct {
    uint32_t magic; /* CL_OMPI_OBJ_MAGIC */
    uint16_t kind;  /* cl_ompi_kind_t */
    uint16_t index; /* index within the kind */
    char name[48];  /* the MPI name, e.g. "MPI_COMM_WORLD" */
} cl_ompi_obj_tag_t;

/* X(symbol, index, "MPI name", core op or -1) for every predefined op.
   The index is also the op's Fortran handle in Open MPI (mpif-handles.h). */
#define CL_OMPI_FOREACH_OP(X)                                                                      \
    X(ompi_mpi_op_null, CL_OMPI_OP_NULL, "MPI_OP_NULL", -1)                                        \
    X(ompi_mpi_op_max, CL_OMPI_OP_MAX, "MPI_MAX", COLLAB_OP_MAX)                                   \
    X(ompi_mpi_op_min, CL_OMPI_OP_MIN, "MPI_MIN", COLLAB_OP_MIN)                                   \
    X(ompi_mpi_op_sum, CL_OMPI_OP_SUM, "MPI_SUM", COLLAB_OP_SUM)                                   \
    X(ompi_mpi_op_prod, CL_OMPI_OP_PROD, "MPI_PROD", COLLAB_OP_PROD)                               \
    X(ompi_mpi_op_land, CL_OMPI_OP_LAND, "MPI_LAND", COLLAB_OP_LAND)                               \
    X(ompi_mpi_op_band, CL_OMPI_OP_BAND, "MPI_BAND", COLLAB_OP_BAND)                               \
    X(ompi_mpi_op_lor, CL_OMPI_OP_LOR, "MPI_LOR", COLLAB_OP_LOR)                                   \
    X(ompi_mpi_op_bor, CL_OMPI_OP_BOR, "MPI_BOR", COLLAB_OP_BOR)                                   \
    X(ompi_mpi_op_lxor, CL_OMPI_OP_LXOR, "MPI_LXOR", COLLAB_OP_LXOR)                               \
    X(ompi_mpi_op_bxor, CL_OMPI_OP_BXOR, "MPI_BXOR", COLLAB_OP_BXOR)                               \
    X(ompi_mpi_op_maxloc, CL_OMPI_OP_MAXLOC, "MPI_MAXLOC", COLLAB_OP_MAXLOC)                       \
    X(ompi_mpi_op_minloc, CL_OMPI_OP_MINLOC, "MPI_MINLOC", COLLAB_OP_MINLOC)                       \
    X(ompi_mpi_op_replace, CL_OMPI_OP_REPLACE, "MPI_REPLACE", COLLAB_OP_REPLACE)                   \
    X(ompi_mpi_op_no_op, CL_OMPI_OP_NO_OP, "MPI_NO_OP", COLLAB_OP_NO_OP)

#define CL_OMPI_OP_ENUM_(sym, idx, ...) idx,
enum { CL_OMPI_FOREACH_OP(CL_OMPI_OP_ENUM_) CL_OMPI_OP_COUNT };

/* X(symbol, index, "MPI name", CLI_T_ id or -1, Fortran handle or -1)
   for every predefined datatype object of Open MPI 4.1.  Where several
   names share one object the table uses the first name of Open MPI's
   header.  -1 as CLI id: the type decodes as MPI_DATATYPE_NULL (the types
   Debian's Open MPI was built without, and the internal placeholder).
   The Fortran handles are those of Open MPI's mpif-handles.h; the two
   objects it gives none get 73 and 74, and ompi_mpi_c_complex (which no
   macro of Open MPI's header names) shares MPI_C_FLOAT_COMPLEX's. */
#define CL_OMPI_FOREACH_DATATYPE(X)                                                                \
    X(ompi_mpi_datatype_null, CL_OMPI_DT_DATATYPE_NULL, "MPI_DATATYPE_NULL", -1, 0)                \
    X(ompi_mpi_char, CL_OMPI_DT_CHAR, "MPI_CHAR", CLI_T_CHAR, 34)                                  \
    X(ompi_mpi_signed_char, CL_OMPI_DT_SIGNED_CHAR, "MPI_SIGNED_CHAR", CLI_T_SIGNED_CHAR, 36)      \
    X(ompi_mpi_unsigned_char, CL_OMPI_DT_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", CLI_T_UNSIGNED_CHAR,  \
      35)                                                                                          \
    X(ompi_mpi_byte, CL_OMPI_DT_BYTE, "MPI_BYTE", CLI_T_BYTE, 1)                                   \
    X(ompi_mpi_short, CL_OMPI_DT_SHORT, "MPI_SHORT", CLI_T_SHORT, 37)                              \
    X(ompi_mpi_unsigned_short, CL_OMPI_DT_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT",                    \
      CLI_T_UNSIGNED_SHORT, 38)                                                                    \
    X(ompi_mpi_int, CL_OMPI_DT_INT, "MPI_INT", CLI_T_INT, 39)                                      \
    X(ompi_mpi_unsigned, CL_OMPI_DT_UNSIGNED, "MPI_UNSIGNED", CLI_T_UNSIGNED, 40)                  \
    X(ompi_mpi_long, CL_OMPI_DT_LONG, "MPI_LONG", CLI_T_LONG, 41)                                  \
    X(ompi_mpi_unsigned_long, CL_OMPI_DT_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", CLI_T_UNSIGNED_LONG,  \
      42)                                                                                          \
    X(ompi_mpi_long_long_int, CL_OMPI_DT_LONG_LONG_INT, "MPI_LONG_LONG_INT", CLI_T_LONG_LONG_INT,  \
      43)                                                                                          \
    X(ompi_mpi_unsigned_long_long, CL_OMPI_DT_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG",        \
      CLI_T_UNSIGNED_LONG_LONG, 44)                                                                \
    X(ompi_mpi_float, CL_OMPI_DT_FLOAT, "MPI_FLOAT", CLI_T_FLOAT, 45)                              \
    X(ompi_mpi_double, CL_OMPI_DT_DOUBLE, "MPI_DOUBLE", CLI_T_DOUBLE, 46)                          \
    X(ompi_mpi_long_double, CL_OMPI_DT_LONG_DOUBLE, "MPI_LONG_DOUBLE", CLI_T_LONG_DOUBLE, 47)      \
    X(ompi_mpi_wchar, CL_OMPI_DT_WCHAR, "MPI_WCHAR", CLI_T_WCHAR, 33)                              \
    X(ompi_mpi_packed, CL_OMPI_DT_PACKED, "MPI_PACKED", CLI_T_PACKED, 2)                           \
    X(ompi_mpi_cxx_bool, CL_OMPI_DT_CXX_BOOL, "MPI_CXX_BOOL", CLI_T_CXX_BOOL, 54)                  \
    X(ompi_mpi_cxx_cplex, CL_OMPI_DT_CXX_CPLEX, "MPI_CXX_FLOAT_COMPLEX", CLI_T_CXX_FLOAT_COMPLEX,  \
      55)                                                                                          \
    X(ompi_mpi_cxx_dblcplex, CL_OMPI_DT_CXX_DBLCPLEX, "MPI_CXX_DOUBLE_COMPLEX",                    \
      CLI_T_CXX_DOUBLE_COMPLEX, 56)                                                                \
    X(ompi_mpi_cxx_ldblcplex, CL_OMPI_DT_CXX_LDBLCPLEX, "MPI_CXX_LONG_DOUBLE_COMPLEX",             \
      CLI_T_CXX_LONG_DOUBLE_COMPLEX, 57)                                                           \
    X(ompi_mpi_logical, CL_OMPI_DT_LOGICAL, "MPI_LOGICAL", CLI_T_LOGICAL, 6)                       \
    X(ompi_mpi_character, CL_OMPI_DT_CHARACTER, "MPI_CHARACTER", CLI_T_CHARACTER, 5)               \
    X(ompi_mpi_integer, CL_OMPI_DT_INTEGER, "MPI_INTEGER", CLI_T_INTEGER, 7)                       \
    X(ompi_mpi_real, CL_OMPI_DT_REAL, "MPI_REAL", CLI_T_REAL, 13)                                  \
    X(ompi_mpi_dblprec, CL_OMPI_DT_DBLPREC, "MPI_DOUBLE_PRECISION", CLI_T_DOUBLE_PRECISION, 17)    \
    X(ompi_mpi_cplex, CL_OMPI_DT_CPLEX, "MPI_COMPLEX", CLI_T_COMPLEX, 18)                          \
    X(ompi_mpi_dblcplex, CL_OMPI_DT_DBLCPLEX, "MPI_DOUBLE_COMPLEX", CLI_T_DOUBLE_COMPLEX, 22)      \
    X(ompi_mpi_ldblcplex, CL_OMPI_DT_LDBLCPLEX, "MPI_LONG_DOUBLE_COMPLEX",                         \
      CLI_T_C_LONG_DOUBLE_COMPLEX, 73)                                                             \
    X(ompi_mpi_2int, CL_OMPI_DT_2INT, "MPI_2INT", CLI_T_2INT, 52)                                  \
    X(ompi_mpi_2integer, CL_OMPI_DT_2INTEGER, "MPI_2INTEGER", CLI_T_2INTEGER, 25)                  \
    X(ompi_mpi_2real, CL_OMPI_DT_2REAL, "MPI_2REAL", CLI_T_2REAL, 23)                              \
    X(ompi_mpi_2dblprec, CL_OMPI_DT_2DBLPREC, "MPI_2DOUBLE_PRECISION", CLI_T_2DOUBLE_PRECISION,    \
      24)                                                                                          \
    X(ompi_mpi_2cplex, CL_OMPI_DT_2CPLEX, "MPI_2COMPLEX", CLI_T_2COMPLEX, 26)                      \
    X(ompi_mpi_2dblcplex, CL_OMPI_DT_2DBLCPLEX, "MPI_2DOUBLE_COMPLEX", CLI_T_2DOUBLE_COMPLEX, 27)  \
    X(ompi_mpi_float_int, CL_OMPI_DT_FLOAT_INT, "MPI_FLOAT_INT", CLI_T_FLOAT_INT, 48)              \
    X(ompi_mpi_double_int, CL_OMPI_DT_DOUBLE_INT, "MPI_DOUBLE_INT", CLI_T_DOUBLE_INT, 49)          \
    X(ompi_mpi_longdbl_int, CL_OMPI_DT_LONGDBL_INT, "MPI_LONG_DOUBLE_INT", CLI_T_LONG_DOUBLE_INT,  \
      50)                                                                                          \
    X(ompi_mpi_short_int, CL_OMPI_DT_SHORT_INT, "MPI_SHORT_INT", CLI_T_SHORT_INT, 53)              \
    X(ompi_mpi_long_int, CL_OMPI_DT_LONG_INT, "MPI_LONG_INT", CLI_T_LONG_INT, 51)                  \
    X(ompi_mpi_logical1, CL_OMPI_DT_LOGICAL1, "MPI_LOGICAL1", CLI_T_LOGICAL1, 29)                  \
    X(ompi_mpi_logical2, CL_OMPI_DT_LOGICAL2, "MPI_LOGICAL2", CLI_T_LOGICAL2, 30)                  \
    X(ompi_mpi_logical4, CL_OMPI_DT_LOGICAL4, "MPI_LOGICAL4", CLI_T_LOGICAL4, 31)                  \
    X(ompi_mpi_logical8, CL_OMPI_DT_LOGICAL8, "MPI_LOGICAL8", CLI_T_LOGICAL8, 32)                  \
    X(ompi_mpi_integer1, CL_OMPI_DT_INTEGER1, "MPI_INTEGER1", CLI_T_INTEGER1, 8)                   \
    X(ompi_mpi_integer2, CL_OMPI_DT_INTEGER2, "MPI_INTEGER2", CLI_T_INTEGER2, 9)                   \
    X(ompi_mpi_integer4, CL_OMPI_DT_INTEGER4, "MPI_INTEGER4", CLI_T_INTEGER4, 10)                  \
    X(ompi_mpi_integer8, CL_OMPI_DT_INTEGER8, "MPI_INTEGER8", CLI_T_INTEGER8, 11)                  \
    X(ompi_mpi_integer16, CL_OMPI_DT_INTEGER16, "MPI_INTEGER16", -1, 12)                           \
    X(ompi_mpi_real2, CL_OMPI_DT_REAL2, "MPI_REAL2", -1, 28)                                       \
    X(ompi_mpi_real4, CL_OMPI_DT_REAL4, "MPI_REAL4", CLI_T_REAL4, 14)                              \
    X(ompi_mpi_real8, CL_OMPI_DT_REAL8, "MPI_REAL8", CLI_T_REAL8, 15)                              \
    X(ompi_mpi_real16, CL_OMPI_DT_REAL16, "MPI_REAL16", CLI_T_REAL16, 16)                          \
    X(ompi_mpi_complex8, CL_OMPI_DT_COMPLEX8, "MPI_COMPLEX8", CLI_T_COMPLEX8, 19)                  \
    X(ompi_mpi_complex16, CL_OMPI_DT_COMPLEX16, "MPI_COMPLEX16", CLI_T_COMPLEX16, 20)              \
    X(ompi_mpi_complex32, CL_OMPI_DT_COMPLEX32, "MPI_COMPLEX32", CLI_T_COMPLEX32, 21)              \
    X(ompi_mpi_int8_t, CL_OMPI_DT_INT8_T, "MPI_INT8_T", CLI_T_INT8_T, 58)                          \
    X(ompi_mpi_uint8_t, CL_OMPI_DT_UINT8_T, "MPI_UINT8_T", CLI_T_UINT8_T, 59)                      \
    X(ompi_mpi_int16_t, CL_OMPI_DT_INT16_T, "MPI_INT16_T", CLI_T_INT16_T, 60)                      \
    X(ompi_mpi_uint16_t, CL_OMPI_DT_UINT16_T, "MPI_UINT16_T", CLI_T_UINT16_T, 61)                  \
    X(ompi_mpi_int32_t, CL_OMPI_DT_INT32_T, "MPI_INT32_T", CLI_T_INT32_T, 62)                      \
    X(ompi_mpi_uint32_t, CL_OMPI_DT_UINT32_T, "MPI_UINT32_T", CLI_T_UINT32_T, 63)                  \
    X(ompi_mpi_int64_t, CL_OMPI_DT_INT64_T, "MPI_INT64_T", CLI_T_INT64_T, 64)                      \
    X(ompi_mpi_uint64_t, CL_OMPI_DT_UINT64_T, "MPI_UINT64_T", CLI_T_UINT64_T, 65)                  \
    X(ompi_mpi_aint, CL_OMPI_DT_AINT, "MPI_AINT", CLI_T_AINT, 66)                                  \
    X(ompi_mpi_offset, CL_OMPI_DT_OFFSET, "MPI_OFFSET", CLI_T_OFFSET, 67)                          \
    X(ompi_mpi_count, CL_OMPI_DT_COUNT, "MPI_COUNT", CLI_T_COUNT, 72)                              \
    X(ompi_mpi_c_bool, CL_OMPI_DT_C_BOOL, "MPI_C_BOOL", CLI_T_C_BOOL, 68)                          \
    X(ompi_mpi_c_complex, CL_OMPI_DT_C_COMPLEX, "MPI_C_COMPLEX", CLI_T_C_FLOAT_COMPLEX, -1)        \
    X(ompi_mpi_c_float_complex, CL_OMPI_DT_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX",                 \
      CLI_T_C_FLOAT_COMPLEX, 69)                                                                   \
    X(ompi_mpi_c_double_complex, CL_OMPI_DT_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX",              \
      CLI_T_C_DOUBLE_COMPLEX, 70)                                                                  \
    X(ompi_mpi_c_long_double_complex, CL_OMPI_DT_C_LONG_DOUBLE_COMPLEX,                            \
      "MPI_C_LONG_DOUBLE_COMPLEX", CLI_T_C_LONG_DOUBLE_COMPLEX, 71)                                \
    X(ompi_mpi_lb, CL_OMPI_DT_LB, "MPI_LB", CLI_T_LB, 4)                                           \
    X(ompi_mpi_ub, CL_OMPI_DT_UB, "MPI_UB", CLI_T_UB, 3)                                           \
    X(ompi_mpi_unavailable, CL_OMPI_DT_UNAVAILABLE, "MPI_DATATYPE_UNAVAILABLE", -1, 74)

#define CL_OMPI_DT_ENUM_(sym, idx, ...) idx,
enum { CL_OMPI_FOREACH_DATATYPE(CL_OMPI_DT_ENUM_) CL_OMPI_DATATYPE_COUNT };

/* Address of predefined object `index` of `kind` (the canonical one: the
   executable's copy when it has one), or NULL when out of range. */
void *cl_ompi_predefined_addr(cl_ompi_kind_t kind, int index);

/* Number of predefined objects of `kind`. */
int cl_ompi_predefined_count(cl_ompi_kind_t kind);

/* Returns 1 and fills *kind / *index (either may be NULL) when handle is
   the address of a predefined object, else 0.  Never dereferences the
   handle, so any pointer value is safe to pass. */
int cl_ompi_predefined_lookup(const void *handle, cl_ompi_kind_t *kind, int *index);

/* The MPI name of a predefined object ("MPI_DOUBLE"), static, or NULL. */
const char *cl_ompi_predefined_name(cl_ompi_kind_t kind, int index);

#endif
