/*  cli_ids.h - ABI-neutral ids of predefined MPI objects.

    Both faces' translation headers (interpose/<abi>/abi.h) map their
    handles to these ids and back; the common glue only ever sees the ids.
    See docs/abi.md section 3.1.
*/
#ifndef CLI_IDS_H_INCLUDED
#define CLI_IDS_H_INCLUDED

#include "mpi_collab.h"

/* What cli_abi_<kind>_decode() says about a handle. */
enum {
    CLI_H_BAD = -2,   /* not a handle of this kind */
    CLI_H_NULL = -1,  /* the kind's null handle */
    CLI_H_PREDEF = 0, /* predefined object; *id is one of the ids below */
    CLI_H_DYN = 1     /* object created at run time; *id is its table index */
};

enum { CLI_COMM_WORLD, CLI_COMM_SELF, CLI_COMM_PREDEF_COUNT };
enum { CLI_GROUP_EMPTY, CLI_GROUP_PREDEF_COUNT };
enum { CLI_ERRH_FATAL, CLI_ERRH_RETURN, CLI_ERRH_ABORT, CLI_ERRH_PREDEF_COUNT };
enum { CLI_MSG_NO_PROC, CLI_MSG_PREDEF_COUNT };
enum { CLI_INFO_ENV, CLI_INFO_PREDEF_COUNT };
/* Predefined ops are the collab_op_kind_t values COLLAB_OP_SUM ... COLLAB_OP_NO_OP. */

/* Predefined attribute keys (communicator attributes). */
enum {
    CLI_KEY_TAG_UB,
    CLI_KEY_HOST,
    CLI_KEY_IO,
    CLI_KEY_WTIME_IS_GLOBAL,
    CLI_KEY_UNIVERSE_SIZE,
    CLI_KEY_LASTUSEDCODE,
    CLI_KEY_APPNUM,
    CLI_KEY_PREDEF_COUNT
};

/* Every predefined datatype of either ABI.  An ABI that lacks one simply
   never decodes a handle to it (and cli_abi_type_predef() returns its
   MPI_DATATYPE_NULL). */
#define CLI_PREDEF_TYPES(X)                                                                        \
    X(CHAR)                                                                                        \
    X(SIGNED_CHAR)                                                                                 \
    X(UNSIGNED_CHAR)                                                                               \
    X(BYTE)                                                                                        \
    X(WCHAR)                                                                                       \
    X(SHORT)                                                                                       \
    X(UNSIGNED_SHORT)                                                                              \
    X(INT)                                                                                         \
    X(UNSIGNED)                                                                                    \
    X(LONG)                                                                                        \
    X(UNSIGNED_LONG)                                                                               \
    X(FLOAT)                                                                                       \
    X(DOUBLE)                                                                                      \
    X(LONG_DOUBLE)                                                                                 \
    X(LONG_LONG_INT)                                                                               \
    X(UNSIGNED_LONG_LONG)                                                                          \
    X(PACKED)                                                                                      \
    X(LB)                                                                                          \
    X(UB)                                                                                          \
    X(FLOAT_INT)                                                                                   \
    X(DOUBLE_INT)                                                                                  \
    X(LONG_INT)                                                                                    \
    X(SHORT_INT)                                                                                   \
    X(2INT)                                                                                        \
    X(LONG_DOUBLE_INT)                                                                             \
    X(COMPLEX)                                                                                     \
    X(DOUBLE_COMPLEX)                                                                              \
    X(LOGICAL)                                                                                     \
    X(REAL)                                                                                        \
    X(DOUBLE_PRECISION)                                                                            \
    X(INTEGER)                                                                                     \
    X(2INTEGER)                                                                                    \
    X(2REAL)                                                                                       \
    X(2DOUBLE_PRECISION)                                                                           \
    X(2COMPLEX)                                                                                    \
    X(2DOUBLE_COMPLEX)                                                                             \
    X(CHARACTER)                                                                                   \
    X(REAL2)                                                                                       \
    X(REAL4)                                                                                       \
    X(REAL8)                                                                                       \
    X(REAL16)                                                                                      \
    X(COMPLEX4)                                                                                    \
    X(COMPLEX8)                                                                                    \
    X(COMPLEX16)                                                                                   \
    X(COMPLEX32)                                                                                   \
    X(INTEGER1)                                                                                    \
    X(INTEGER2)                                                                                    \
    X(INTEGER4)                                                                                    \
    X(INTEGER8)                                                                                    \
    X(INTEGER16)                                                                                   \
    X(LOGICAL1)                                                                                    \
    X(LOGICAL2)                                                                                    \
    X(LOGICAL4)                                                                                    \
    X(LOGICAL8)                                                                                    \
    X(INT8_T)                                                                                      \
    X(INT16_T)                                                                                     \
    X(INT32_T)                                                                                     \
    X(INT64_T)                                                                                     \
    X(UINT8_T)                                                                                     \
    X(UINT16_T)                                                                                    \
    X(UINT32_T)                                                                                    \
    X(UINT64_T)                                                                                    \
    X(C_BOOL)                                                                                      \
    X(C_FLOAT_COMPLEX)                                                                             \
    X(C_DOUBLE_COMPLEX)                                                                            \
    X(C_LONG_DOUBLE_COMPLEX)                                                                       \
    X(C_FLOAT16)                                                                                   \
    X(AINT)                                                                                        \
    X(OFFSET)                                                                                      \
    X(COUNT)                                                                                       \
    X(CXX_BOOL)                                                                                    \
    X(CXX_FLOAT_COMPLEX)                                                                           \
    X(CXX_DOUBLE_COMPLEX)                                                                          \
    X(CXX_LONG_DOUBLE_COMPLEX)

#define CLI_T_ENUM_(name) CLI_T_##name,
enum { CLI_PREDEF_TYPES(CLI_T_ENUM_) CLI_NTYPES };
#undef CLI_T_ENUM_

#endif
