/*  abi.h - the MPICH-ABI translation for the common glue.

    Every MPICH handle is a 32-bit int: bits 31-30 its kind (00 null,
    01 predefined, 10 direct, 11 indirect), bits 29-26 the object type,
    the rest an index.  Objects created at run time get DIRECT handles, as
    MPICH's own do (MPI_Comm_dup(WORLD) -> 0x84000000), so that programs
    that print or compare handles see familiar values.  The contract this
    file fulfils is docs/abi.md section 3; the common glue includes it
    after <mpi.h> (include/mpi.h of this face).
*/
#ifndef CLI_ABI_H_INCLUDED
#define CLI_ABI_H_INCLUDED

#include "cli_ids.h"
#include <mpi.h>

/* ---------------------------------------------------------------------- */
/* Constants (docs/abi.md 3.2). */

#define CLI_ABI_NAME "mpich"
#define CLI_ABI_ERR_PROC_FAILED MPIX_ERR_PROC_FAILED /* 101 */
#define CLI_ABI_ERR_REVOKED MPIX_ERR_REVOKED         /* 103 */
#define CLI_ABI_ERR_LASTCLASS MPICH_ERR_LAST_MPIX    /* 105 */
#define CLI_ABI_FIRST_USER_CLASS 128
#define CLI_ABI_TAG_UB 268435455
#define CLI_ABI_T_ERR_NOT_SUPPORTED MPI_T_ERR_NOT_SUPPORTED
#define CLI_ABI_LIBRARY_VERSION                                                                    \
    "mpicollab (MPICH ABI, compatible with MPICH 4.0.2, MPICH ABI 14:2:2)"
/* Largest table index a handle can carry (26 index bits; keyvals 22). */
#define CLI_ABI_MAX_INDEX 0x3fffff
/* MPI_Type_create_f90_*, as MPICH 4.0.2 answers (docs/abi.md 4): reals up
   to 8 bytes, MPI_UNDEFINED for both p and r accepted, no match is
   MPI_ERR_OTHER, and MPI_Type_free on such a type succeeds (the type stays). */
#define CLI_ABI_F90_MAX_REAL 8
#define CLI_ABI_F90_BOTH_UNDEFINED_OK 1
#define CLI_ABI_F90_ERR MPI_ERR_OTHER
#define CLI_ABI_F90_FREE_OK 1
/* MPI_Type_match_size: MPICH answers MPI_INTEGER4, MPI_REAL4, MPI_COMPLEX8 for 4 and 8 bytes. */
#define CLI_ABI_MATCH_DEFAULT_KINDS 0

/* ---------------------------------------------------------------------- */
/* Handles (docs/abi.md 3.1).  Dynamic handles: DIRECT kind | type | index. */

#define CLI_MPICH_KIND_MASK 0xfc000000u
#define CLI_MPICH_INDEX_MASK 0x03ffffffu

static inline int cli_mpich_direct_decode(unsigned h, unsigned base, unsigned offset, int *id)
{
    if ((h & CLI_MPICH_KIND_MASK) != base)
        return CLI_H_BAD;
    unsigned idx = h & CLI_MPICH_INDEX_MASK;
    if (idx < offset || idx - offset > CLI_ABI_MAX_INDEX)
        return CLI_H_BAD;
    *id = (int)(idx - offset);
    return CLI_H_DYN;
}

/* Communicators. */
static inline int cli_abi_comm_decode(MPI_Comm h, int *id)
{
    if (h == MPI_COMM_NULL)
        return CLI_H_NULL;
    if (h == MPI_COMM_WORLD || h == MPI_COMM_SELF) {
        *id = h == MPI_COMM_WORLD ? CLI_COMM_WORLD : CLI_COMM_SELF;
        return CLI_H_PREDEF;
    }
    return cli_mpich_direct_decode((unsigned)h, 0x84000000u, 0, id);
}
static inline MPI_Comm cli_abi_comm_predef(int id)
{
    return id == CLI_COMM_WORLD ? MPI_COMM_WORLD : MPI_COMM_SELF;
}
static inline MPI_Comm cli_abi_comm_dyn(int index)
{
    return (MPI_Comm)(0x84000000u | (unsigned)index);
}
static inline MPI_Comm cli_abi_comm_null(void)
{
    return MPI_COMM_NULL;
}

/* Groups. */
static inline int cli_abi_group_decode(MPI_Group h, int *id)
{
    if (h == MPI_GROUP_NULL)
        return CLI_H_NULL;
    if (h == MPI_GROUP_EMPTY) {
        *id = CLI_GROUP_EMPTY;
        return CLI_H_PREDEF;
    }
    return cli_mpich_direct_decode((unsigned)h, 0x88000000u, 0, id);
}
static inline MPI_Group cli_abi_group_predef(int id)
{
    (void)id;
    return MPI_GROUP_EMPTY;
}
static inline MPI_Group cli_abi_group_dyn(int index)
{
    return (MPI_Group)(0x88000000u | (unsigned)index);
}
static inline MPI_Group cli_abi_group_null(void)
{
    return MPI_GROUP_NULL;
}

/* Datatypes: predefined handles are decoded by a table (mpich_abi.c);
   the 5 pair types are DIRECT 0x8c000000-4, so run-time types start at
   direct index 5 (as in MPICH: Type_contiguous -> 0x8c000005). */
int cli_abi_type_decode(MPI_Datatype h, int *id);
MPI_Datatype cli_abi_type_predef(int id);
static inline MPI_Datatype cli_abi_type_dyn(int index)
{
    return (MPI_Datatype)(0x8c000000u | (unsigned)(index + 5));
}
static inline MPI_Datatype cli_abi_type_null(void)
{
    return MPI_DATATYPE_NULL;
}

/* Ops: MPI_MAX .. MPI_NO_OP are 0x58000001 .. 0x5800000e. */
static inline int cli_abi_op_decode(MPI_Op h, int *id)
{
    static const int kinds[] = {
        COLLAB_OP_MAX,    COLLAB_OP_MIN,    COLLAB_OP_SUM,     COLLAB_OP_PROD, COLLAB_OP_LAND,
        COLLAB_OP_BAND,   COLLAB_OP_LOR,    COLLAB_OP_BOR,     COLLAB_OP_LXOR, COLLAB_OP_BXOR,
        COLLAB_OP_MINLOC, COLLAB_OP_MAXLOC, COLLAB_OP_REPLACE, COLLAB_OP_NO_OP};
    if (h == MPI_OP_NULL)
        return CLI_H_NULL;
    if (h >= MPI_MAX && h <= MPI_NO_OP) {
        *id = kinds[h - MPI_MAX];
        return CLI_H_PREDEF;
    }
    return cli_mpich_direct_decode((unsigned)h, 0x98000000u, 0, id);
}
MPI_Op cli_abi_op_predef(int id);
static inline MPI_Op cli_abi_op_dyn(int index)
{
    return (MPI_Op)(0x98000000u | (unsigned)index);
}
static inline MPI_Op cli_abi_op_null(void)
{
    return MPI_OP_NULL;
}

/* Error handlers. */
static inline int cli_abi_errh_decode(MPI_Errhandler h, int *id)
{
    if (h == MPI_ERRHANDLER_NULL)
        return CLI_H_NULL;
    if (h == MPI_ERRORS_ARE_FATAL || h == MPI_ERRORS_RETURN || h == MPI_ERRORS_ABORT ||
        h == MPIR_ERRORS_THROW_EXCEPTIONS) {
        *id = h == MPI_ERRORS_ARE_FATAL ? CLI_ERRH_FATAL
              : h == MPI_ERRORS_ABORT   ? CLI_ERRH_ABORT
                                        : CLI_ERRH_RETURN;
        return CLI_H_PREDEF;
    }
    return cli_mpich_direct_decode((unsigned)h, 0x94000000u, 0, id);
}
static inline MPI_Errhandler cli_abi_errh_predef(int id)
{
    return id == CLI_ERRH_FATAL   ? MPI_ERRORS_ARE_FATAL
           : id == CLI_ERRH_ABORT ? MPI_ERRORS_ABORT
                                  : MPI_ERRORS_RETURN;
}
static inline MPI_Errhandler cli_abi_errh_dyn(int index)
{
    return (MPI_Errhandler)(0x94000000u | (unsigned)index);
}
static inline MPI_Errhandler cli_abi_errh_null(void)
{
    return MPI_ERRHANDLER_NULL;
}

/* Requests (direct requests 0xac000000 | i). */
static inline int cli_abi_req_decode(MPI_Request h, int *id)
{
    if (h == MPI_REQUEST_NULL)
        return CLI_H_NULL;
    return cli_mpich_direct_decode((unsigned)h, 0xac000000u, 0, id);
}
static inline MPI_Request cli_abi_req_dyn(int index)
{
    return (MPI_Request)(0xac000000u | (unsigned)index);
}
static inline MPI_Request cli_abi_req_null(void)
{
    return MPI_REQUEST_NULL;
}

/* Messages (MPICH keeps them among requests: indirect requests here). */
static inline int cli_abi_msg_decode(MPI_Message h, int *id)
{
    if (h == MPI_MESSAGE_NULL)
        return CLI_H_NULL;
    if (h == MPI_MESSAGE_NO_PROC) {
        *id = CLI_MSG_NO_PROC;
        return CLI_H_PREDEF;
    }
    return cli_mpich_direct_decode((unsigned)h, 0xec000000u, 0, id);
}
static inline MPI_Message cli_abi_msg_predef(int id)
{
    (void)id;
    return MPI_MESSAGE_NO_PROC;
}
static inline MPI_Message cli_abi_msg_dyn(int index)
{
    return (MPI_Message)(0xec000000u | (unsigned)index);
}
static inline MPI_Message cli_abi_msg_null(void)
{
    return MPI_MESSAGE_NULL;
}

/* Info objects. */
static inline int cli_abi_info_decode(MPI_Info h, int *id)
{
    if (h == MPI_INFO_NULL)
        return CLI_H_NULL;
    if (h == MPI_INFO_ENV) {
        *id = CLI_INFO_ENV;
        return CLI_H_PREDEF;
    }
    return cli_mpich_direct_decode((unsigned)h, 0x9c000000u, 0, id);
}
static inline MPI_Info cli_abi_info_predef(int id)
{
    (void)id;
    return MPI_INFO_ENV;
}
static inline MPI_Info cli_abi_info_dyn(int index)
{
    return (MPI_Info)(0x9c000000u | (unsigned)index);
}
static inline MPI_Info cli_abi_info_null(void)
{
    return MPI_INFO_NULL;
}

/* Keyvals: predefined keys MPI_TAG_UB ... MPI_APPNUM (odd values from
   0x64400001 by 2; the Fortran form is the key + 1); created keyvals are
   0xa4400000 | i. */
static inline int cli_abi_keyval_decode(int h, int *id, int *fortran)
{
    *fortran = 0;
    if (h == MPI_KEYVAL_INVALID)
        return CLI_H_NULL;
    if (h >= MPI_TAG_UB && h <= MPI_APPNUM + 1) {
        int off = h - MPI_TAG_UB;
        *fortran = off & 1;
        *id = off / 2; /* TAG_UB, HOST, IO, WTIME_IS_GLOBAL, UNIVERSE_SIZE, LASTUSEDCODE, APPNUM */
        return CLI_H_PREDEF;
    }
    if (((unsigned)h & 0xffc00000u) != 0xa4400000u)
        return CLI_H_BAD;
    *id = (int)((unsigned)h & 0x003fffffu);
    return CLI_H_DYN;
}
static inline int cli_abi_keyval_dyn(int index)
{
    return (int)(0xa4400000u | (unsigned)index);
}
static inline int cli_abi_keyval_null(void)
{
    return MPI_KEYVAL_INVALID;
}

/* ---------------------------------------------------------------------- */
/* Status (docs/abi.md 3.3). */

static inline void cli_abi_status_set_bytes(MPI_Status *st, MPI_Count bytes)
{
    unsigned long long b = (unsigned long long)bytes;
    st->count_lo = (int)(unsigned)(b & 0xffffffffu);
    st->count_hi_and_cancelled =
        (int)(((unsigned)(b >> 32) << 1) | ((unsigned)st->count_hi_and_cancelled & 1u));
}
static inline MPI_Count cli_abi_status_bytes(const MPI_Status *st)
{
    return (MPI_Count)((unsigned long long)(unsigned)st->count_lo |
                       ((unsigned long long)((unsigned)st->count_hi_and_cancelled >> 1) << 32));
}
static inline void cli_abi_status_set_cancelled(MPI_Status *st, int flag)
{
    st->count_hi_and_cancelled =
        (int)(((unsigned)st->count_hi_and_cancelled & ~1u) | (flag ? 1u : 0u));
}
static inline int cli_abi_status_cancelled(const MPI_Status *st)
{
    return st->count_hi_and_cancelled & 1;
}
static inline void cli_abi_status_set(MPI_Status *st, int source, int tag, int error,
                                      MPI_Count bytes, int cancelled)
{
    st->MPI_SOURCE = source;
    st->MPI_TAG = tag;
    st->MPI_ERROR = error;
    st->count_hi_and_cancelled = 0;
    cli_abi_status_set_bytes(st, bytes);
    cli_abi_status_set_cancelled(st, cancelled);
}

/* ---------------------------------------------------------------------- */
/* Process-level conventions (docs/abi.md 3.4), in mpich_abi.c. */

void cli_abi_fatal(int code, const char *call, const char *comm_name, const char *line)
    __attribute__((noreturn));
void cli_abi_abort(int errorcode, const char *comm_name, int rank) __attribute__((noreturn));
const char *cli_abi_foreign_check(void);

#endif
