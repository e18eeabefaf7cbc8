/*  abi.h - the Open MPI 4.1 ABI translation for the common glue.

    Open MPI handles are pointers.  A predefined handle is the address of
    one of the ompi_* objects of objects.c (recognised by address, never
    dereferenced).  A handle of an object created at run time is an
    address inside a range of address space this face reserves per kind
    (PROT_NONE, never touched): entry i of the common code's table of that
    kind is base + 8 * i.  Decoding is a range check, so any pointer value
    a program passes is classified safely.  Keyvals are ints, as in Open
    MPI: the predefined keys are 0..6 and created ones start at 12.

    The contract this file fulfils is docs/abi.md section 3; the common
    glue includes it after <mpi.h> (interpose/ompi/mpi.h).
*/
#ifndef CLI_ABI_H_INCLUDED
#define CLI_ABI_H_INCLUDED

#include "cli_ids.h"
#include "objects.h"
#include <mpi.h>

/* ---------------------------------------------------------------------- */
/* Constants (docs/abi.md 3.2). */

#define CLI_ABI_NAME "ompi"
#define CLI_ABI_ERR_PROC_FAILED MPIX_ERR_PROC_FAILED /* 75, as Open MPI 5 */
#define CLI_ABI_ERR_REVOKED MPIX_ERR_REVOKED         /* 77 */
#define CLI_ABI_ERR_LASTCLASS MPIX_ERR_REVOKED       /* 77 */
/* Open MPI hands out user classes after MPI_ERR_LASTCODE (92). */
#define CLI_ABI_FIRST_USER_CLASS (MPI_ERR_LASTCODE + 1)
#define CLI_ABI_TAG_UB 2147483647
/* Open MPI 4.1 predates MPI_T_ERR_NOT_SUPPORTED. */
#define CLI_ABI_T_ERR_NOT_SUPPORTED MPI_T_ERR_INVALID
#define CLI_ABI_LIBRARY_VERSION "mpicollab (Open MPI ABI, compatible with Open MPI v4.1.4)"
/* Largest table index a handle can carry: entries per reserved range. */
#define CLI_ABI_MAX_INDEX 0x3fffff
/* MPI_Type_create_f90_*, as Open MPI 4.1.4 answers (docs/abi.md 4): reals
   up to 16 bytes (long double), p and r both MPI_UNDEFINED refused, no
   match is MPI_ERR_ARG, and MPI_Type_free on such a type is MPI_ERR_TYPE. */
#define CLI_ABI_F90_MAX_REAL 16
#define CLI_ABI_F90_BOTH_UNDEFINED_OK 0
#define CLI_ABI_F90_ERR MPI_ERR_ARG
#define CLI_ABI_F90_FREE_OK 0
/* MPI_Type_match_size: Open MPI answers MPI_INTEGER, MPI_REAL, MPI_COMPLEX for 4 and 8 bytes. */
#define CLI_ABI_MATCH_DEFAULT_KINDS 1

/* ---------------------------------------------------------------------- */
/* Handles of objects created at run time (handles.c). */

/* Handle kinds with a reserved range. */
typedef enum {
    CL_OMPI_DYN_COMM,
    CL_OMPI_DYN_GROUP,
    CL_OMPI_DYN_TYPE,
    CL_OMPI_DYN_OP,
    CL_OMPI_DYN_ERRH,
    CL_OMPI_DYN_REQ,
    CL_OMPI_DYN_MSG,
    CL_OMPI_DYN_INFO,
    CL_OMPI_DYN_COUNT
} cl_ompi_dyn_kind_t;

/* Bases of the reserved ranges (NULL until reserved).  Read with acquire
   semantics by cl_ompi_dyn_index. */
extern char *cl_ompi_dyn_base[CL_OMPI_DYN_COUNT];

/* Reserves every range (idempotent, thread-safe).  Returns 0, or -1 with
   errno set when the address space cannot be reserved. */
int cl_ompi_dyn_reserve(void);

/* Handle of entry `index` of kind k; NULL when index is out of range or
   the range cannot be reserved (logged once). */
void *cl_ompi_dyn_handle(cl_ompi_dyn_kind_t k, int index);

/* Table index of handle h of kind k, or -1 when h is not in k's range. */
static inline int cl_ompi_dyn_index(cl_ompi_dyn_kind_t k, const void *h)
{
    uintptr_t base = (uintptr_t)__atomic_load_n(&cl_ompi_dyn_base[k], __ATOMIC_ACQUIRE);
    if (base == 0 || (uintptr_t)h < base)
        return -1;
    uintptr_t off = (uintptr_t)h - base;
    if (off % 8 != 0 || off / 8 > CLI_ABI_MAX_INDEX)
        return -1;
    return (int)(off / 8);
}

/* Decodes h: the null handle, dynamic (by range), predefined (by
   address).  Never dereferences h. */
static inline int cl_ompi_decode(const void *h, const void *null_h, cl_ompi_kind_t kind,
                                 cl_ompi_dyn_kind_t dk, int *index)
{
    cl_ompi_kind_t k;
    if (h == null_h)
        return CLI_H_NULL;
    if ((*index = cl_ompi_dyn_index(dk, h)) >= 0)
        return CLI_H_DYN;
    if (cl_ompi_predefined_lookup(h, &k, index) && k == kind)
        return CLI_H_PREDEF;
    return CLI_H_BAD;
}

/* ---------------------------------------------------------------------- */
/* Handles (docs/abi.md 3.1). */

/* Communicators. */
static inline int cli_abi_comm_decode(MPI_Comm h, int *id)
{
    int rc = cl_ompi_decode(h, MPI_COMM_NULL, CL_OMPI_KIND_COMM, CL_OMPI_DYN_COMM, id);
    if (rc == CLI_H_PREDEF)
        *id = *id == CL_OMPI_COMM_WORLD ? CLI_COMM_WORLD : CLI_COMM_SELF;
    return rc;
}
static inline MPI_Comm cli_abi_comm_predef(int id)
{
    return id == CLI_COMM_WORLD ? MPI_COMM_WORLD : MPI_COMM_SELF;
}
static inline MPI_Comm cli_abi_comm_dyn(int index)
{
    MPI_Comm h = (MPI_Comm)cl_ompi_dyn_handle(CL_OMPI_DYN_COMM, index);
    return h != NULL ? h : MPI_COMM_NULL;
}
static inline MPI_Comm cli_abi_comm_null(void)
{
    return MPI_COMM_NULL;
}

/* Groups. */
static inline int cli_abi_group_decode(MPI_Group h, int *id)
{
    int rc = cl_ompi_decode(h, MPI_GROUP_NULL, CL_OMPI_KIND_GROUP, CL_OMPI_DYN_GROUP, id);
    if (rc == CLI_H_PREDEF)
        *id = CLI_GROUP_EMPTY;
    return rc;
}
static inline MPI_Group cli_abi_group_predef(int id)
{
    (void)id;
    return MPI_GROUP_EMPTY;
}
static inline MPI_Group cli_abi_group_dyn(int index)
{
    MPI_Group h = (MPI_Group)cl_ompi_dyn_handle(CL_OMPI_DYN_GROUP, index);
    return h != NULL ? h : MPI_GROUP_NULL;
}
static inline MPI_Group cli_abi_group_null(void)
{
    return MPI_GROUP_NULL;
}

/* Datatypes: the object -> CLI_T_* id table is in handles.c. */
extern const short cl_ompi_type_to_cli[CL_OMPI_DATATYPE_COUNT]; /* -1: decodes as NULL */
MPI_Datatype cli_abi_type_predef(int id);
static inline int cli_abi_type_decode(MPI_Datatype h, int *id)
{
    int rc = cl_ompi_decode(h, MPI_DATATYPE_NULL, CL_OMPI_KIND_DATATYPE, CL_OMPI_DYN_TYPE, id);
    if (rc == CLI_H_PREDEF) {
        int t = cl_ompi_type_to_cli[*id];
        if (t < 0)
            return CLI_H_NULL;
        *id = t;
    }
    return rc;
}
static inline MPI_Datatype cli_abi_type_dyn(int index)
{
    MPI_Datatype h = (MPI_Datatype)cl_ompi_dyn_handle(CL_OMPI_DYN_TYPE, index);
    return h != NULL ? h : MPI_DATATYPE_NULL;
}
static inline MPI_Datatype cli_abi_type_null(void)
{
    return MPI_DATATYPE_NULL;
}

/* Ops. */
extern const signed char cl_ompi_op_to_cli[CL_OMPI_OP_COUNT];
MPI_Op cli_abi_op_predef(int id);
static inline int cli_abi_op_decode(MPI_Op h, int *id)
{
    int rc = cl_ompi_decode(h, MPI_OP_NULL, CL_OMPI_KIND_OP, CL_OMPI_DYN_OP, id);
    if (rc == CLI_H_PREDEF)
        *id = cl_ompi_op_to_cli[*id];
    return rc;
}
static inline MPI_Op cli_abi_op_dyn(int index)
{
    MPI_Op h = (MPI_Op)cl_ompi_dyn_handle(CL_OMPI_DYN_OP, index);
    return h != NULL ? h : MPI_OP_NULL;
}
static inline MPI_Op cli_abi_op_null(void)
{
    return MPI_OP_NULL;
}

/* Error handlers.  Open MPI 4.1 has no MPI_ERRORS_ABORT; the C++
   MPI::ERRORS_THROW_EXCEPTIONS object behaves as MPI_ERRORS_RETURN for C
   callers. */
static inline int cli_abi_errh_decode(MPI_Errhandler h, int *id)
{
    int rc = cl_ompi_decode(h, MPI_ERRHANDLER_NULL, CL_OMPI_KIND_ERRHANDLER, CL_OMPI_DYN_ERRH, id);
    if (rc == CLI_H_PREDEF)
        *id = *id == CL_OMPI_ERRORS_ARE_FATAL ? CLI_ERRH_FATAL : CLI_ERRH_RETURN;
    return rc;
}
static inline MPI_Errhandler cli_abi_errh_predef(int id)
{
    return id == CLI_ERRH_RETURN ? MPI_ERRORS_RETURN : MPI_ERRORS_ARE_FATAL;
}
static inline MPI_Errhandler cli_abi_errh_dyn(int index)
{
    MPI_Errhandler h = (MPI_Errhandler)cl_ompi_dyn_handle(CL_OMPI_DYN_ERRH, index);
    return h != NULL ? h : MPI_ERRHANDLER_NULL;
}
static inline MPI_Errhandler cli_abi_errh_null(void)
{
    return MPI_ERRHANDLER_NULL;
}

/* Requests: only MPI_REQUEST_NULL is predefined. */
static inline int cli_abi_req_decode(MPI_Request h, int *id)
{
    if (h == MPI_REQUEST_NULL)
        return CLI_H_NULL;
    *id = cl_ompi_dyn_index(CL_OMPI_DYN_REQ, h);
    return *id >= 0 ? CLI_H_DYN : CLI_H_BAD;
}
static inline MPI_Request cli_abi_req_dyn(int index)
{
    MPI_Request h = (MPI_Request)cl_ompi_dyn_handle(CL_OMPI_DYN_REQ, index);
    return h != NULL ? h : MPI_REQUEST_NULL;
}
static inline MPI_Request cli_abi_req_null(void)
{
    return MPI_REQUEST_NULL;
}

/* Messages. */
static inline int cli_abi_msg_decode(MPI_Message h, int *id)
{
    int rc = cl_ompi_decode(h, MPI_MESSAGE_NULL, CL_OMPI_KIND_MESSAGE, CL_OMPI_DYN_MSG, id);
    if (rc == CLI_H_PREDEF)
        *id = CLI_MSG_NO_PROC;
    return rc;
}
static inline MPI_Message cli_abi_msg_predef(int id)
{
    (void)id;
    return MPI_MESSAGE_NO_PROC;
}
static inline MPI_Message cli_abi_msg_dyn(int index)
{
    MPI_Message h = (MPI_Message)cl_ompi_dyn_handle(CL_OMPI_DYN_MSG, index);
    return h != NULL ? h : MPI_MESSAGE_NULL;
}
static inline MPI_Message cli_abi_msg_null(void)
{
    return MPI_MESSAGE_NULL;
}

/* Info objects. */
static inline int cli_abi_info_decode(MPI_Info h, int *id)
{
    int rc = cl_ompi_decode(h, MPI_INFO_NULL, CL_OMPI_KIND_INFO, CL_OMPI_DYN_INFO, id);
    if (rc == CLI_H_PREDEF)
        *id = CLI_INFO_ENV;
    return rc;
}
static inline MPI_Info cli_abi_info_predef(int id)
{
    (void)id;
    return MPI_INFO_ENV;
}
static inline MPI_Info cli_abi_info_dyn(int index)
{
    MPI_Info h = (MPI_Info)cl_ompi_dyn_handle(CL_OMPI_DYN_INFO, index);
    return h != NULL ? h : MPI_INFO_NULL;
}
static inline MPI_Info cli_abi_info_null(void)
{
    return MPI_INFO_NULL;
}

/* Keyvals: Open MPI's predefined keys MPI_TAG_UB (0) .. MPI_UNIVERSE_SIZE
   (6); the window keys 7..11 are not communicator keys; keyvals created
   at run time are 12, 13, ... as in Open MPI. */
#define CL_OMPI_FIRST_KEYVAL 12
static inline int cli_abi_keyval_decode(int h, int *id, int *fortran)
{
    *fortran = 0;
    if (h == MPI_KEYVAL_INVALID)
        return CLI_H_NULL;
    switch (h) {
    case MPI_TAG_UB:
        *id = CLI_KEY_TAG_UB;
        return CLI_H_PREDEF;
    case MPI_HOST:
        *id = CLI_KEY_HOST;
        return CLI_H_PREDEF;
    case MPI_IO:
        *id = CLI_KEY_IO;
        return CLI_H_PREDEF;
    case MPI_WTIME_IS_GLOBAL:
        *id = CLI_KEY_WTIME_IS_GLOBAL;
        return CLI_H_PREDEF;
    case MPI_APPNUM:
        *id = CLI_KEY_APPNUM;
        return CLI_H_PREDEF;
    case MPI_LASTUSEDCODE:
        *id = CLI_KEY_LASTUSEDCODE;
        return CLI_H_PREDEF;
    case MPI_UNIVERSE_SIZE:
        *id = CLI_KEY_UNIVERSE_SIZE;
        return CLI_H_PREDEF;
    default:
        break;
    }
    if (h < CL_OMPI_FIRST_KEYVAL || h - CL_OMPI_FIRST_KEYVAL > CLI_ABI_MAX_INDEX)
        return CLI_H_BAD;
    *id = h - CL_OMPI_FIRST_KEYVAL;
    return CLI_H_DYN;
}
static inline int cli_abi_keyval_dyn(int index)
{
    return CL_OMPI_FIRST_KEYVAL + index;
}
static inline int cli_abi_keyval_null(void)
{
    return MPI_KEYVAL_INVALID;
}

/* ---------------------------------------------------------------------- */
/* Status (docs/abi.md 3.3): _ucount holds bytes, _cancelled a flag. */

static inline void cli_abi_status_set_bytes(MPI_Status *st, MPI_Count bytes)
{
    st->_ucount = bytes < 0 ? 0 : (size_t)bytes;
}
static inline MPI_Count cli_abi_status_bytes(const MPI_Status *st)
{
    return (MPI_Count)st->_ucount;
}
static inline void cli_abi_status_set_cancelled(MPI_Status *st, int flag)
{
    st->_cancelled = flag ? 1 : 0;
}
static inline int cli_abi_status_cancelled(const MPI_Status *st)
{
    return st->_cancelled;
}
static inline void cli_abi_status_set(MPI_Status *st, int source, int tag, int error,
                                      MPI_Count bytes, int cancelled)
{
    st->MPI_SOURCE = source;
    st->MPI_TAG = tag;
    st->MPI_ERROR = error;
    cli_abi_status_set_cancelled(st, cancelled);
    cli_abi_status_set_bytes(st, bytes);
}

/* ---------------------------------------------------------------------- */
/* Process-level conventions (docs/abi.md 3.4), in process.c. */

void cli_abi_fatal(int code, const char *call, const char *comm_name, const char *line)
    __attribute__((noreturn));
void cli_abi_abort(int errorcode, const char *comm_name, int rank) __attribute__((noreturn));
const char *cli_abi_foreign_check(void);

#endif
