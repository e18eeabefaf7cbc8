/*  interpose/ompi/mpi.h - the Open MPI 4.1 ABI as the Open MPI face sees it.

    The Open MPI face (libmpicollab-ompi.so, lib/mpicollab/libmpi.so.40) is
    compiled against this header.  It is NOT installed for users: programs
    built for Open MPI keep using Open MPI's own mpi.h, and this header
    reproduces the binary interface that theirs compiles to:

    - handles are pointers; each predefined handle is the address of a
      global object `ompi_mpi_*` (or `ompi_request_null`, ...) that the
      face defines in objects.c with exactly Open MPI's size, so that the
      copy relocations of executables keep working (docs/ompi-abi.md);
    - MPI_Status is 24 bytes: MPI_SOURCE, MPI_TAG, MPI_ERROR, _cancelled
      and _ucount (a byte count);
    - constants, error classes and string limits have Open MPI 4.1.4's
      values; the two ULFM classes use Open MPI 5's numbers.

    Every value here is checked against the installed Open MPI header by
    the test ompi_constcheck (tests/ompi/constcheck.py).  Keep the order of
    sections: types, status, callbacks, constants, predefined objects,
    functions.
*/
#ifndef MPICOLLAB_OMPI_MPI_H_INCLUDED
#define MPICOLLAB_OMPI_MPI_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

/* Which ABI this header describes; the ABI-generic glue may test it. */
#define MPICOLLAB_ABI_OMPI 1
#define MPICOLLAB_ABI_NAME "ompi"

/* What Open MPI's header announces, so that code testing for it (for
   example an MPIX header shared by both faces) sees the same thing. */
#define OPEN_MPI 1
#define OMPI_MAJOR_VERSION 4
#define OMPI_MINOR_VERSION 1
#define OMPI_RELEASE_VERSION 4

#define MPI_VERSION 3
#define MPI_SUBVERSION 1

/* Configuration facts of Debian's Open MPI 4.1 build that programs may
   test: which optional Fortran types exist, argument checking on. */
#define OMPI_HAVE_FORTRAN_LOGICAL1 1
#define OMPI_HAVE_FORTRAN_LOGICAL2 1
#define OMPI_HAVE_FORTRAN_LOGICAL4 1
#define OMPI_HAVE_FORTRAN_LOGICAL8 1
#define OMPI_HAVE_FORTRAN_INTEGER1 1
#define OMPI_HAVE_FORTRAN_INTEGER16 0
#define OMPI_HAVE_FORTRAN_INTEGER2 1
#define OMPI_HAVE_FORTRAN_INTEGER4 1
#define OMPI_HAVE_FORTRAN_INTEGER8 1
#define OMPI_HAVE_FORTRAN_REAL16 1
#define OMPI_HAVE_FORTRAN_REAL2 0
#define OMPI_HAVE_FORTRAN_REAL4 1
#define OMPI_HAVE_FORTRAN_REAL8 1
#define OMPI_PARAM_CHECK 1
#define OMPI_MPI_OFFSET_SIZE 8
#define OMPI_OFFSET_DATATYPE MPI_LONG_LONG

#if defined(__GNUC__)
#define OMPI_DECLSPEC __attribute__((visibility("default")))
#else
#define OMPI_DECLSPEC
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------- */
/* Types.  Every handle is an opaque pointer (8 bytes). */

typedef ptrdiff_t MPI_Aint;
typedef long long MPI_Offset;
typedef long long MPI_Count;
typedef int MPI_Fint;

typedef struct ompi_communicator_t *MPI_Comm;
typedef struct ompi_datatype_t *MPI_Datatype;
typedef struct ompi_errhandler_t *MPI_Errhandler;
typedef struct ompi_file_t *MPI_File;
typedef struct ompi_group_t *MPI_Group;
typedef struct ompi_info_t *MPI_Info;
typedef struct ompi_op_t *MPI_Op;
typedef struct ompi_request_t *MPI_Request;
typedef struct ompi_message_t *MPI_Message;
typedef struct ompi_win_t *MPI_Win;
typedef struct mca_base_var_enum_t *MPI_T_enum;
typedef struct ompi_mpit_cvar_handle_t *MPI_T_cvar_handle;
typedef struct mca_base_pvar_handle_t *MPI_T_pvar_handle;
typedef struct mca_base_pvar_session_t *MPI_T_pvar_session;

/* ---------------------------------------------------------------------- */
/* MPI_Status: 24 bytes.  _ucount counts bytes, not elements. */

struct ompi_status_public_t {
    int MPI_SOURCE; /* offset 0 */
    int MPI_TAG;    /* offset 4 */
    int MPI_ERROR;  /* offset 8 */
    int _cancelled; /* offset 12: 1 if the operation was cancelled */
    size_t _ucount; /* offset 16: bytes received */
};
typedef struct ompi_status_public_t ompi_status_public_t;
typedef struct ompi_status_public_t MPI_Status;

/* ---------------------------------------------------------------------- */
/* User callbacks. */

typedef int(MPI_Datarep_extent_function)(MPI_Datatype, MPI_Aint *, void *);
typedef int(MPI_Datarep_conversion_function)(void *, MPI_Datatype, int, void *, MPI_Offset, void *);
typedef void(MPI_Comm_errhandler_function)(MPI_Comm *, int *, ...);
typedef void(ompi_file_errhandler_fn)(MPI_File *, int *, ...);
typedef void(MPI_Win_errhandler_function)(MPI_Win *, int *, ...);
typedef void(MPI_User_function)(void *, void *, int *, MPI_Datatype *);
typedef int(MPI_Comm_copy_attr_function)(MPI_Comm, int, void *, void *, void *, int *);
typedef int(MPI_Comm_delete_attr_function)(MPI_Comm, int, void *, void *);
typedef int(MPI_Type_copy_attr_function)(MPI_Datatype, int, void *, void *, void *, int *);
typedef int(MPI_Type_delete_attr_function)(MPI_Datatype, int, void *, void *);
typedef int(MPI_Win_copy_attr_function)(MPI_Win, int, void *, void *, void *, int *);
typedef int(MPI_Win_delete_attr_function)(MPI_Win, int, void *, void *);
typedef int(MPI_Grequest_query_function)(void *, MPI_Status *);
typedef int(MPI_Grequest_free_function)(void *);
typedef int(MPI_Grequest_cancel_function)(void *, int);

/* Older spellings, still accepted by Open MPI 4.1. */
typedef MPI_Comm_errhandler_function MPI_Comm_errhandler_fn;
typedef ompi_file_errhandler_fn MPI_File_errhandler_fn;
typedef ompi_file_errhandler_fn MPI_File_errhandler_function;
typedef MPI_Win_errhandler_function MPI_Win_errhandler_fn;
typedef int(MPI_Copy_function)(MPI_Comm, int, void *, void *, void *, int *);
typedef int(MPI_Delete_function)(MPI_Comm, int, void *, void *);
typedef void(MPI_Handler_function)(MPI_Comm *, int *, ...);

/* Types that Open MPI 4.1 lacks but the shared prototype file
   (mpicollab/mpi_proto.h, one list for both faces) names in declarations
   of MPI-4 and MPICH functions.  This face never defines or exports those
   functions; the types only let the declarations compile. */
typedef struct cl_ompi_absent_session_t *MPI_Session;
typedef struct cl_ompi_absent_grequest_class_t *MPIX_Grequest_class;
typedef struct cl_ompi_absent_event_instance_t *MPI_T_event_instance;
typedef struct cl_ompi_absent_event_registration_t *MPI_T_event_registration;
typedef enum { CL_OMPI_ABSENT_CB_SAFETY } MPI_T_cb_safety;
typedef enum { CL_OMPI_ABSENT_SOURCE_ORDER } MPI_T_source_order;
typedef void(MPI_Session_errhandler_function)(MPI_Session *, int *, ...);
typedef int(MPIX_Grequest_poll_function)(void *, MPI_Status *);
typedef int(MPIX_Grequest_wait_function)(int, void **, double, MPI_Status *);
typedef void(MPI_User_function_c)(void *, void *, MPI_Count *, MPI_Datatype *);
typedef int(MPI_Datarep_conversion_function_c)(void *, MPI_Datatype, MPI_Count, void *, MPI_Offset,
                                               void *);
typedef void(MPI_T_event_cb_function)(MPI_T_event_instance, MPI_T_event_registration,
                                      MPI_T_cb_safety, void *);
typedef void(MPI_T_event_free_cb_function)(MPI_T_event_registration, MPI_T_cb_safety, void *);
typedef void(MPI_T_event_dropped_cb_function)(MPI_Count, MPI_T_event_registration, int,
                                              MPI_T_cb_safety, void *);

/* ---------------------------------------------------------------------- */
/* Scalar constants. */

#define MPI_ANY_SOURCE (-1)
#define MPI_PROC_NULL (-2)
#define MPI_ROOT (-4)
#define MPI_ANY_TAG (-1)
#define MPI_UNDEFINED (-32766)
#define MPI_KEYVAL_INVALID (-1)

#define MPI_CART 1
#define MPI_GRAPH 2
#define MPI_DIST_GRAPH 3

#define MPI_MAX_PROCESSOR_NAME 256
#define MPI_MAX_ERROR_STRING 256
#define MPI_MAX_OBJECT_NAME 64
#define MPI_MAX_LIBRARY_VERSION_STRING 256
#define MPI_MAX_INFO_KEY 36
#define MPI_MAX_INFO_VAL 256
#define MPI_MAX_PORT_NAME 1024
#define MPI_MAX_DATAREP_STRING 128
#define MPI_BSEND_OVERHEAD 128

#define MPI_UNWEIGHTED ((int *)2)
#define MPI_WEIGHTS_EMPTY ((int *)3)
#define MPI_BOTTOM ((void *)0)
#define MPI_IN_PLACE ((void *)1)
#define MPI_ARGV_NULL ((char **)0)
#define MPI_ARGVS_NULL ((char ***)0)
#define MPI_ERRCODES_IGNORE ((int *)0)
#define MPI_STATUS_IGNORE ((MPI_Status *)0)
#define MPI_STATUSES_IGNORE ((MPI_Status *)0)

#define MPI_ORDER_C 0
#define MPI_ORDER_FORTRAN 1
#define MPI_DISTRIBUTE_BLOCK 0
#define MPI_DISTRIBUTE_CYCLIC 1
#define MPI_DISTRIBUTE_NONE 2
#define MPI_DISTRIBUTE_DFLT_DARG (-1)

#define MPI_MODE_CREATE 1
#define MPI_MODE_RDONLY 2
#define MPI_MODE_WRONLY 4
#define MPI_MODE_RDWR 8
#define MPI_MODE_DELETE_ON_CLOSE 16
#define MPI_MODE_UNIQUE_OPEN 32
#define MPI_MODE_EXCL 64
#define MPI_MODE_APPEND 128
#define MPI_MODE_SEQUENTIAL 256
#define MPI_DISPLACEMENT_CURRENT (-54278278)
#define MPI_SEEK_SET 600
#define MPI_SEEK_CUR 602
#define MPI_SEEK_END 604

#define MPI_MODE_NOCHECK 1
#define MPI_MODE_NOPRECEDE 2
#define MPI_MODE_NOPUT 4
#define MPI_MODE_NOSTORE 8
#define MPI_MODE_NOSUCCEED 16
#define MPI_LOCK_EXCLUSIVE 1
#define MPI_LOCK_SHARED 2
#define MPI_WIN_FLAVOR_CREATE 1
#define MPI_WIN_FLAVOR_ALLOCATE 2
#define MPI_WIN_FLAVOR_DYNAMIC 3
#define MPI_WIN_FLAVOR_SHARED 4
#define MPI_WIN_UNIFIED 0
#define MPI_WIN_SEPARATE 1

#define MPI_TYPECLASS_INTEGER 1
#define MPI_TYPECLASS_REAL 2
#define MPI_TYPECLASS_COMPLEX 3

/* Predefined attribute keys (an enum in Open MPI, values 0..15). */
enum {
    MPI_TAG_UB = 0,
    MPI_HOST = 1,
    MPI_IO = 2,
    MPI_WTIME_IS_GLOBAL = 3,
    MPI_APPNUM = 4,
    MPI_LASTUSEDCODE = 5,
    MPI_UNIVERSE_SIZE = 6,
    MPI_WIN_BASE = 7,
    MPI_WIN_SIZE = 8,
    MPI_WIN_DISP_UNIT = 9,
    MPI_WIN_CREATE_FLAVOR = 10,
    MPI_WIN_MODEL = 11,
    IMPI_CLIENT_SIZE = 12,
    IMPI_CLIENT_COLOR = 13,
    IMPI_HOST_SIZE = 14,
    IMPI_HOST_COLOR = 15
};

/* Error classes of Open MPI 4.1. */
#define MPI_SUCCESS 0
#define MPI_ERR_BUFFER 1
#define MPI_ERR_COUNT 2
#define MPI_ERR_TYPE 3
#define MPI_ERR_TAG 4
#define MPI_ERR_COMM 5
#define MPI_ERR_RANK 6
#define MPI_ERR_REQUEST 7
#define MPI_ERR_ROOT 8
#define MPI_ERR_GROUP 9
#define MPI_ERR_OP 10
#define MPI_ERR_TOPOLOGY 11
#define MPI_ERR_DIMS 12
#define MPI_ERR_ARG 13
#define MPI_ERR_UNKNOWN 14
#define MPI_ERR_TRUNCATE 15
#define MPI_ERR_OTHER 16
#define MPI_ERR_INTERN 17
#define MPI_ERR_IN_STATUS 18
#define MPI_ERR_PENDING 19
#define MPI_ERR_ACCESS 20
#define MPI_ERR_AMODE 21
#define MPI_ERR_ASSERT 22
#define MPI_ERR_BAD_FILE 23
#define MPI_ERR_BASE 24
#define MPI_ERR_CONVERSION 25
#define MPI_ERR_DISP 26
#define MPI_ERR_DUP_DATAREP 27
#define MPI_ERR_FILE_EXISTS 28
#define MPI_ERR_FILE_IN_USE 29
#define MPI_ERR_FILE 30
#define MPI_ERR_INFO_KEY 31
#define MPI_ERR_INFO_NOKEY 32
#define MPI_ERR_INFO_VALUE 33
#define MPI_ERR_INFO 34
#define MPI_ERR_IO 35
#define MPI_ERR_KEYVAL 36
#define MPI_ERR_LOCKTYPE 37
#define MPI_ERR_NAME 38
#define MPI_ERR_NO_MEM 39
#define MPI_ERR_NOT_SAME 40
#define MPI_ERR_NO_SPACE 41
#define MPI_ERR_NO_SUCH_FILE 42
#define MPI_ERR_PORT 43
#define MPI_ERR_QUOTA 44
#define MPI_ERR_READ_ONLY 45
#define MPI_ERR_RMA_CONFLICT 46
#define MPI_ERR_RMA_SYNC 47
#define MPI_ERR_SERVICE 48
#define MPI_ERR_SIZE 49
#define MPI_ERR_SPAWN 50
#define MPI_ERR_UNSUPPORTED_DATAREP 51
#define MPI_ERR_UNSUPPORTED_OPERATION 52
#define MPI_ERR_WIN 53
#define MPI_T_ERR_MEMORY 54
#define MPI_T_ERR_NOT_INITIALIZED 55
#define MPI_T_ERR_CANNOT_INIT 56
#define MPI_T_ERR_INVALID_INDEX 57
#define MPI_T_ERR_INVALID_ITEM 58
#define MPI_T_ERR_INVALID_HANDLE 59
#define MPI_T_ERR_OUT_OF_HANDLES 60
#define MPI_T_ERR_OUT_OF_SESSIONS 61
#define MPI_T_ERR_INVALID_SESSION 62
#define MPI_T_ERR_CVAR_SET_NOT_NOW 63
#define MPI_T_ERR_CVAR_SET_NEVER 64
#define MPI_T_ERR_PVAR_NO_STARTSTOP 65
#define MPI_T_ERR_PVAR_NO_WRITE 66
#define MPI_T_ERR_PVAR_NO_ATOMIC 67
#define MPI_ERR_RMA_RANGE 68
#define MPI_ERR_RMA_ATTACH 69
#define MPI_ERR_RMA_FLAVOR 70
#define MPI_ERR_RMA_SHARED 71
#define MPI_T_ERR_INVALID 72
#define MPI_T_ERR_INVALID_NAME 73
/* ULFM classes with Open MPI 5's numbers (4.1 has no ULFM). */
#define MPIX_ERR_PROC_FAILED 75
#define MPIX_ERR_PROC_FAILED_PENDING 76
#define MPIX_ERR_REVOKED 77
#define MPI_ERR_LASTCODE 92

enum { MPI_IDENT, MPI_CONGRUENT, MPI_SIMILAR, MPI_UNEQUAL };

enum { MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE };

/* Datatype combiners.  The three MPI-1 *_INTEGER combiners keep their
   slots (4, 7, 10) so that the values after them match Open MPI. */
enum {
    MPI_COMBINER_NAMED,
    MPI_COMBINER_DUP,
    MPI_COMBINER_CONTIGUOUS,
    MPI_COMBINER_VECTOR,
    OMPI_WAS_MPI_COMBINER_HVECTOR_INTEGER,
    MPI_COMBINER_HVECTOR,
    MPI_COMBINER_INDEXED,
    OMPI_WAS_MPI_COMBINER_HINDEXED_INTEGER,
    MPI_COMBINER_HINDEXED,
    MPI_COMBINER_INDEXED_BLOCK,
    OMPI_WAS_MPI_COMBINER_STRUCT_INTEGER,
    MPI_COMBINER_STRUCT,
    MPI_COMBINER_SUBARRAY,
    MPI_COMBINER_DARRAY,
    MPI_COMBINER_F90_REAL,
    MPI_COMBINER_F90_COMPLEX,
    MPI_COMBINER_F90_INTEGER,
    MPI_COMBINER_RESIZED,
    MPI_COMBINER_HINDEXED_BLOCK
};

enum {
    MPI_COMM_TYPE_SHARED,
    OMPI_COMM_TYPE_HWTHREAD,
    OMPI_COMM_TYPE_CORE,
    OMPI_COMM_TYPE_L1CACHE,
    OMPI_COMM_TYPE_L2CACHE,
    OMPI_COMM_TYPE_L3CACHE,
    OMPI_COMM_TYPE_SOCKET,
    OMPI_COMM_TYPE_NUMA,
    OMPI_COMM_TYPE_BOARD,
    OMPI_COMM_TYPE_HOST,
    OMPI_COMM_TYPE_CU,
    OMPI_COMM_TYPE_CLUSTER
};
#define OMPI_COMM_TYPE_NODE MPI_COMM_TYPE_SHARED

enum {
    MPI_T_VERBOSITY_USER_BASIC,
    MPI_T_VERBOSITY_USER_DETAIL,
    MPI_T_VERBOSITY_USER_ALL,
    MPI_T_VERBOSITY_TUNER_BASIC,
    MPI_T_VERBOSITY_TUNER_DETAIL,
    MPI_T_VERBOSITY_TUNER_ALL,
    MPI_T_VERBOSITY_MPIDEV_BASIC,
    MPI_T_VERBOSITY_MPIDEV_DETAIL,
    MPI_T_VERBOSITY_MPIDEV_ALL
};

enum {
    MPI_T_SCOPE_CONSTANT,
    MPI_T_SCOPE_READONLY,
    MPI_T_SCOPE_LOCAL,
    MPI_T_SCOPE_GROUP,
    MPI_T_SCOPE_GROUP_EQ,
    MPI_T_SCOPE_ALL,
    MPI_T_SCOPE_ALL_EQ
};

enum {
    MPI_T_BIND_NO_OBJECT,
    MPI_T_BIND_MPI_COMM,
    MPI_T_BIND_MPI_DATATYPE,
    MPI_T_BIND_MPI_ERRHANDLER,
    MPI_T_BIND_MPI_FILE,
    MPI_T_BIND_MPI_GROUP,
    MPI_T_BIND_MPI_OP,
    MPI_T_BIND_MPI_REQUEST,
    MPI_T_BIND_MPI_WIN,
    MPI_T_BIND_MPI_MESSAGE,
    MPI_T_BIND_MPI_INFO
};

enum {
    MPI_T_PVAR_CLASS_STATE,
    MPI_T_PVAR_CLASS_LEVEL,
    MPI_T_PVAR_CLASS_SIZE,
    MPI_T_PVAR_CLASS_PERCENTAGE,
    MPI_T_PVAR_CLASS_HIGHWATERMARK,
    MPI_T_PVAR_CLASS_LOWWATERMARK,
    MPI_T_PVAR_CLASS_COUNTER,
    MPI_T_PVAR_CLASS_AGGREGATE,
    MPI_T_PVAR_CLASS_TIMER,
    MPI_T_PVAR_CLASS_GENERIC
};

#define MPI_T_ENUM_NULL ((MPI_T_enum)NULL)
#define MPI_T_PVAR_ALL_HANDLES ((MPI_T_pvar_handle)-1)
#define MPI_T_PVAR_HANDLE_NULL ((MPI_T_pvar_handle)0)
#define MPI_T_PVAR_SESSION_NULL ((MPI_T_pvar_session)0)
#define MPI_T_CVAR_HANDLE_NULL ((MPI_T_cvar_handle)0)
#define MPI_CONVERSION_FN_NULL ((MPI_Datarep_conversion_function *)0)

/* ---------------------------------------------------------------------- */
/* Predefined objects (defined in objects.c, exact Open MPI sizes). */

#define OMPI_PREDEFINED_GLOBAL(type, global) ((type)((void *)&(global)))

/* Object sizes of Open MPI 4.1's struct ompi_predefined_*_t. */
#define OMPI_PREDEFINED_COMMUNICATOR_SIZE 512
#define OMPI_PREDEFINED_DATATYPE_SIZE 512
#define OMPI_PREDEFINED_OP_SIZE 2048
#define OMPI_PREDEFINED_ERRHANDLER_SIZE 1024
#define OMPI_PREDEFINED_GROUP_SIZE 256
#define OMPI_PREDEFINED_INFO_SIZE 256
#define OMPI_PREDEFINED_REQUEST_SIZE 256
#define OMPI_PREDEFINED_MESSAGE_SIZE 256
#define OMPI_PREDEFINED_WIN_SIZE 512
#define OMPI_PREDEFINED_FILE_SIZE 1536

/* Expands X(symbol) once for every predefined datatype object that
   Open MPI 4.1's libmpi.so.40 exports (80 of them). */
#define OMPI_FOREACH_PREDEFINED_DATATYPE(X)                                                        \
    X(ompi_mpi_datatype_null)                                                                      \
    X(ompi_mpi_char) X(ompi_mpi_signed_char) X(ompi_mpi_unsigned_char) X(ompi_mpi_byte) X(         \
        ompi_mpi_short) X(ompi_mpi_unsigned_short) X(ompi_mpi_int) X(ompi_mpi_unsigned)            \
        X(ompi_mpi_long) X(ompi_mpi_unsigned_long) X(ompi_mpi_long_long_int) X(                    \
            ompi_mpi_unsigned_long_long) X(ompi_mpi_float) X(ompi_mpi_double)                      \
            X(ompi_mpi_long_double) X(ompi_mpi_wchar) X(ompi_mpi_packed) X(ompi_mpi_cxx_bool) X(   \
                ompi_mpi_cxx_cplex) X(ompi_mpi_cxx_dblcplex) X(ompi_mpi_cxx_ldblcplex)             \
                X(ompi_mpi_logical) X(ompi_mpi_character) X(ompi_mpi_integer) X(ompi_mpi_real) X(  \
                    ompi_mpi_dblprec) X(ompi_mpi_cplex) X(ompi_mpi_dblcplex) X(ompi_mpi_ldblcplex) \
                    X(ompi_mpi_2int) X(ompi_mpi_2integer) X(ompi_mpi_2real) X(ompi_mpi_2dblprec)   \
                        X(ompi_mpi_2cplex) X(ompi_mpi_2dblcplex) X(ompi_mpi_float_int) X(          \
                            ompi_mpi_double_int) X(ompi_mpi_longdbl_int) X(ompi_mpi_short_int)     \
                            X(ompi_mpi_long_int) X(ompi_mpi_logical1) X(ompi_mpi_logical2) X(      \
                                ompi_mpi_logical4) X(ompi_mpi_logical8) X(ompi_mpi_integer1)       \
                                X(ompi_mpi_integer2) X(ompi_mpi_integer4) X(ompi_mpi_integer8) X(  \
                                    ompi_mpi_integer16) X(ompi_mpi_real2) X(ompi_mpi_real4)        \
                                    X(ompi_mpi_real8) X(ompi_mpi_real16) X(ompi_mpi_complex8) X(   \
                                        ompi_mpi_complex16) X(ompi_mpi_complex32)                  \
                                        X(ompi_mpi_int8_t) X(ompi_mpi_uint8_t) X(ompi_mpi_int16_t) \
                                            X(ompi_mpi_uint16_t) X(ompi_mpi_int32_t)               \
                                                X(ompi_mpi_uint32_t) X(ompi_mpi_int64_t)           \
                                                    X(ompi_mpi_uint64_t) X(ompi_mpi_aint)          \
                                                        X(ompi_mpi_offset) X(ompi_mpi_count) X(    \
                                                            ompi_mpi_c_bool) X(ompi_mpi_c_complex) \
                                                            X(ompi_mpi_c_float_complex) X(         \
                                                                ompi_mpi_c_double_complex)         \
                                                                X(ompi_mpi_c_long_double_complex)  \
                                                                    X(ompi_mpi_lb) X(ompi_mpi_ub)  \
                                                                        X(ompi_mpi_unavailable)

#define OMPI_FOREACH_PREDEFINED_OP(X)                                                              \
    X(ompi_mpi_op_null)                                                                            \
    X(ompi_mpi_op_max) X(ompi_mpi_op_min) X(ompi_mpi_op_sum) X(ompi_mpi_op_prod)                   \
        X(ompi_mpi_op_land) X(ompi_mpi_op_band) X(ompi_mpi_op_lor) X(ompi_mpi_op_bor)              \
            X(ompi_mpi_op_lxor) X(ompi_mpi_op_bxor) X(ompi_mpi_op_maxloc) X(ompi_mpi_op_minloc)    \
                X(ompi_mpi_op_replace) X(ompi_mpi_op_no_op)

#define OMPI_DECLARE_PREDEFINED_DATATYPE_(sym)                                                     \
    OMPI_DECLSPEC extern struct ompi_predefined_datatype_t sym;
#define OMPI_DECLARE_PREDEFINED_OP_(sym) OMPI_DECLSPEC extern struct ompi_predefined_op_t sym;
OMPI_FOREACH_PREDEFINED_DATATYPE(OMPI_DECLARE_PREDEFINED_DATATYPE_)
OMPI_FOREACH_PREDEFINED_OP(OMPI_DECLARE_PREDEFINED_OP_)

OMPI_DECLSPEC extern struct ompi_predefined_communicator_t ompi_mpi_comm_world;
OMPI_DECLSPEC extern struct ompi_predefined_communicator_t ompi_mpi_comm_self;
OMPI_DECLSPEC extern struct ompi_predefined_communicator_t ompi_mpi_comm_null;
OMPI_DECLSPEC extern struct ompi_predefined_group_t ompi_mpi_group_empty;
OMPI_DECLSPEC extern struct ompi_predefined_group_t ompi_mpi_group_null;
OMPI_DECLSPEC extern struct ompi_predefined_request_t ompi_request_null;
OMPI_DECLSPEC extern struct ompi_predefined_message_t ompi_message_null;
OMPI_DECLSPEC extern struct ompi_predefined_message_t ompi_message_no_proc;
OMPI_DECLSPEC extern struct ompi_predefined_errhandler_t ompi_mpi_errhandler_null;
OMPI_DECLSPEC extern struct ompi_predefined_errhandler_t ompi_mpi_errors_are_fatal;
OMPI_DECLSPEC extern struct ompi_predefined_errhandler_t ompi_mpi_errors_return;
OMPI_DECLSPEC extern struct ompi_predefined_errhandler_t ompi_mpi_errors_throw_exceptions;
OMPI_DECLSPEC extern struct ompi_predefined_win_t ompi_mpi_win_null;
OMPI_DECLSPEC extern struct ompi_predefined_file_t ompi_mpi_file_null;
OMPI_DECLSPEC extern struct ompi_predefined_info_t ompi_mpi_info_null;
OMPI_DECLSPEC extern struct ompi_predefined_info_t ompi_mpi_info_env;

OMPI_DECLSPEC extern MPI_Fint *MPI_F_STATUS_IGNORE;
OMPI_DECLSPEC extern MPI_Fint *MPI_F_STATUSES_IGNORE;

#define MPI_COMM_WORLD OMPI_PREDEFINED_GLOBAL(MPI_Comm, ompi_mpi_comm_world)
#define MPI_COMM_SELF OMPI_PREDEFINED_GLOBAL(MPI_Comm, ompi_mpi_comm_self)
#define MPI_COMM_NULL OMPI_PREDEFINED_GLOBAL(MPI_Comm, ompi_mpi_comm_null)
#define MPI_GROUP_EMPTY OMPI_PREDEFINED_GLOBAL(MPI_Group, ompi_mpi_group_empty)
#define MPI_GROUP_NULL OMPI_PREDEFINED_GLOBAL(MPI_Group, ompi_mpi_group_null)
#define MPI_REQUEST_NULL OMPI_PREDEFINED_GLOBAL(MPI_Request, ompi_request_null)
#define MPI_MESSAGE_NULL OMPI_PREDEFINED_GLOBAL(MPI_Message, ompi_message_null)
#define MPI_MESSAGE_NO_PROC OMPI_PREDEFINED_GLOBAL(MPI_Message, ompi_message_no_proc)
#define MPI_ERRHANDLER_NULL OMPI_PREDEFINED_GLOBAL(MPI_Errhandler, ompi_mpi_errhandler_null)
#define MPI_ERRORS_ARE_FATAL OMPI_PREDEFINED_GLOBAL(MPI_Errhandler, ompi_mpi_errors_are_fatal)
#define MPI_ERRORS_RETURN OMPI_PREDEFINED_GLOBAL(MPI_Errhandler, ompi_mpi_errors_return)
#define MPI_WIN_NULL OMPI_PREDEFINED_GLOBAL(MPI_Win, ompi_mpi_win_null)
#define MPI_FILE_NULL OMPI_PREDEFINED_GLOBAL(MPI_File, ompi_mpi_file_null)
#define MPI_INFO_NULL OMPI_PREDEFINED_GLOBAL(MPI_Info, ompi_mpi_info_null)
#define MPI_INFO_ENV OMPI_PREDEFINED_GLOBAL(MPI_Info, ompi_mpi_info_env)

#define MPI_OP_NULL OMPI_PREDEFINED_GLOBAL(MPI_Op, ompi_mpi_op_null)
#define MPI_MAX OMPI_PREDEFINED_GLOBAL(MPI_Op, ompi_mpi_op_max)
#define MPI_MIN OMPI_PREDEFINED_GLOBAL(MPI_Op, ompi_mpi_op_min)
#define MPI_SUM OMPI_PREDEFINED_GLOBAL(MPI_Op, ompi_mpi_op_sum)
#define MPI_PROD OMPI_PREDEFINED_GLOBAL(MPI_Op, ompi_mpi_op_prod)
#define MPI_LAND OMPI_PREDEFINED_GLOBAL(MPI_Op, ompi_mpi_op_land)
#define MPI_BAND OMPI_PREDEFINED_GLOBAL(MPI_Op, ompi_mpi_op_band)
#define MPI_LOR OMPI_PREDEFINED_GLOBAL(MPI_Op, ompi_mpi_op_lor)
#define MPI_BOR OMPI_PREDEFINED_GLOBAL(MPI_Op, ompi_mpi_op_bor)
#define MPI_LXOR OMPI_PREDEFINED_GLOBAL(MPI_Op, ompi_mpi_op_lxor)
#define MPI_BXOR OMPI_PREDEFINED_GLOBAL(MPI_Op, ompi_mpi_op_bxor)
#define MPI_MAXLOC OMPI_PREDEFINED_GLOBAL(MPI_Op, ompi_mpi_op_maxloc)
#define MPI_MINLOC OMPI_PREDEFINED_GLOBAL(MPI_Op, ompi_mpi_op_minloc)
#define MPI_REPLACE OMPI_PREDEFINED_GLOBAL(MPI_Op, ompi_mpi_op_replace)
#define MPI_NO_OP OMPI_PREDEFINED_GLOBAL(MPI_Op, ompi_mpi_op_no_op)

#define MPI_DATATYPE_NULL OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_datatype_null)
#define MPI_BYTE OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_byte)
#define MPI_PACKED OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_packed)
#define MPI_CHAR OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_char)
#define MPI_SHORT OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_short)
#define MPI_INT OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_int)
#define MPI_LONG OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_long)
#define MPI_FLOAT OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_float)
#define MPI_DOUBLE OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_double)
#define MPI_LONG_DOUBLE OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_long_double)
#define MPI_UNSIGNED_CHAR OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_unsigned_char)
#define MPI_SIGNED_CHAR OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_signed_char)
#define MPI_UNSIGNED_SHORT OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_unsigned_short)
#define MPI_UNSIGNED_LONG OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_unsigned_long)
#define MPI_UNSIGNED OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_unsigned)
#define MPI_FLOAT_INT OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_float_int)
#define MPI_DOUBLE_INT OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_double_int)
#define MPI_LONG_DOUBLE_INT OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_longdbl_int)
#define MPI_LONG_INT OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_long_int)
#define MPI_SHORT_INT OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_short_int)
#define MPI_2INT OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_2int)
#define MPI_WCHAR OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_wchar)
#define MPI_LONG_LONG_INT OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_long_long_int)
#define MPI_LONG_LONG OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_long_long_int)
#define MPI_UNSIGNED_LONG_LONG OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_unsigned_long_long)
#define MPI_2COMPLEX OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_2cplex)
#define MPI_2DOUBLE_COMPLEX OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_2dblcplex)
#define MPI_CHARACTER OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_character)
#define MPI_LOGICAL OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_logical)
#define MPI_LOGICAL1 OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_logical1)
#define MPI_LOGICAL2 OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_logical2)
#define MPI_LOGICAL4 OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_logical4)
#define MPI_LOGICAL8 OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_logical8)
#define MPI_INTEGER OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_integer)
#define MPI_INTEGER1 OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_integer1)
#define MPI_INTEGER2 OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_integer2)
#define MPI_INTEGER4 OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_integer4)
#define MPI_INTEGER8 OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_integer8)
#define MPI_INTEGER16 OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_integer16)
#define MPI_REAL OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_real)
#define MPI_REAL4 OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_real4)
#define MPI_REAL8 OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_real8)
#define MPI_REAL16 OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_real16)
#define MPI_DOUBLE_PRECISION OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_dblprec)
#define MPI_COMPLEX OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_cplex)
#define MPI_COMPLEX8 OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_complex8)
#define MPI_COMPLEX16 OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_complex16)
#define MPI_COMPLEX32 OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_complex32)
#define MPI_DOUBLE_COMPLEX OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_dblcplex)
#define MPI_2REAL OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_2real)
#define MPI_2DOUBLE_PRECISION OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_2dblprec)
#define MPI_2INTEGER OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_2integer)
#define MPI_INT8_T OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_int8_t)
#define MPI_UINT8_T OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_uint8_t)
#define MPI_INT16_T OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_int16_t)
#define MPI_UINT16_T OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_uint16_t)
#define MPI_INT32_T OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_int32_t)
#define MPI_UINT32_T OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_uint32_t)
#define MPI_INT64_T OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_int64_t)
#define MPI_UINT64_T OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_uint64_t)
#define MPI_AINT OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_aint)
#define MPI_OFFSET OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_offset)
#define MPI_COUNT OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_count)
#define MPI_C_BOOL OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_c_bool)
#define MPI_C_COMPLEX OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_c_float_complex)
#define MPI_C_FLOAT_COMPLEX OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_c_float_complex)
#define MPI_C_DOUBLE_COMPLEX OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_c_double_complex)
#define MPI_C_LONG_DOUBLE_COMPLEX                                                                  \
    OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_c_long_double_complex)
#define MPI_CXX_BOOL OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_cxx_bool)
#define MPI_CXX_COMPLEX OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_cxx_cplex)
#define MPI_CXX_FLOAT_COMPLEX OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_cxx_cplex)
#define MPI_CXX_DOUBLE_COMPLEX OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_cxx_dblcplex)
#define MPI_CXX_LONG_DOUBLE_COMPLEX OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_cxx_ldblcplex)
/* Removed in MPI-3.0; Open MPI still exports the objects for old binaries. */
#define MPI_UB OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_ub)
#define MPI_LB OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_lb)

/* ---------------------------------------------------------------------- */
/* Predefined attribute callbacks.  In Open MPI these are real functions
   (not 0), so a program passes their addresses; the face recognises
   them and treats them as the standard says. */

#define MPI_TYPE_NULL_DELETE_FN OMPI_C_MPI_TYPE_NULL_DELETE_FN
#define MPI_TYPE_NULL_COPY_FN OMPI_C_MPI_TYPE_NULL_COPY_FN
#define MPI_TYPE_DUP_FN OMPI_C_MPI_TYPE_DUP_FN
#define MPI_COMM_NULL_DELETE_FN OMPI_C_MPI_COMM_NULL_DELETE_FN
#define MPI_COMM_NULL_COPY_FN OMPI_C_MPI_COMM_NULL_COPY_FN
#define MPI_COMM_DUP_FN OMPI_C_MPI_COMM_DUP_FN
#define MPI_WIN_NULL_DELETE_FN OMPI_C_MPI_WIN_NULL_DELETE_FN
#define MPI_WIN_NULL_COPY_FN OMPI_C_MPI_WIN_NULL_COPY_FN
#define MPI_WIN_DUP_FN OMPI_C_MPI_WIN_DUP_FN
#define MPI_NULL_DELETE_FN OMPI_C_MPI_NULL_DELETE_FN
#define MPI_NULL_COPY_FN OMPI_C_MPI_NULL_COPY_FN
#define MPI_DUP_FN OMPI_C_MPI_DUP_FN

OMPI_DECLSPEC int OMPI_C_MPI_TYPE_NULL_DELETE_FN(MPI_Datatype datatype, int type_keyval,
                                                 void *attribute_val_out, void *extra_state);
OMPI_DECLSPEC int OMPI_C_MPI_TYPE_NULL_COPY_FN(MPI_Datatype datatype, int type_keyval,
                                               void *extra_state, void *attribute_val_in,
                                               void *attribute_val_out, int *flag);
OMPI_DECLSPEC int OMPI_C_MPI_TYPE_DUP_FN(MPI_Datatype datatype, int type_keyval, void *extra_state,
                                         void *attribute_val_in, void *attribute_val_out,
                                         int *flag);
OMPI_DECLSPEC int OMPI_C_MPI_COMM_NULL_DELETE_FN(MPI_Comm comm, int comm_keyval,
                                                 void *attribute_val_out, void *extra_state);
OMPI_DECLSPEC int OMPI_C_MPI_COMM_NULL_COPY_FN(MPI_Comm comm, int comm_keyval, void *extra_state,
                                               void *attribute_val_in, void *attribute_val_out,
                                               int *flag);
OMPI_DECLSPEC int OMPI_C_MPI_COMM_DUP_FN(MPI_Comm comm, int comm_keyval, void *extra_state,
                                         void *attribute_val_in, void *attribute_val_out,
                                         int *flag);
OMPI_DECLSPEC int OMPI_C_MPI_WIN_NULL_DELETE_FN(MPI_Win window, int win_keyval,
                                                void *attribute_val_out, void *extra_state);
OMPI_DECLSPEC int OMPI_C_MPI_WIN_NULL_COPY_FN(MPI_Win window, int win_keyval, void *extra_state,
                                              void *attribute_val_in, void *attribute_val_out,
                                              int *flag);
OMPI_DECLSPEC int OMPI_C_MPI_WIN_DUP_FN(MPI_Win window, int win_keyval, void *extra_state,
                                        void *attribute_val_in, void *attribute_val_out, int *flag);
OMPI_DECLSPEC int OMPI_C_MPI_NULL_DELETE_FN(MPI_Comm comm, int comm_keyval, void *attribute_val_out,
                                            void *extra_state);
OMPI_DECLSPEC int OMPI_C_MPI_NULL_COPY_FN(MPI_Comm comm, int comm_keyval, void *extra_state,
                                          void *attribute_val_in, void *attribute_val_out,
                                          int *flag);
OMPI_DECLSPEC int OMPI_C_MPI_DUP_FN(MPI_Comm comm, int comm_keyval, void *extra_state,
                                    void *attribute_val_in, void *attribute_val_out, int *flag);

/* ---------------------------------------------------------------------- */
/* Functions.  Open MPI's MPI_Aint_add / MPI_Aint_diff are macros that
   compile into the program, so this face neither exports nor defines
   them; the shared prototype file declares them as functions (MPICH). */

#define MPIO_Request MPI_Request

#ifdef __cplusplus
}
#endif

/* The prototypes of every MPI_ and PMPI_ function this face exports, in
   the types above: generated into the build tree by face.cmake with
   gen_bindings.py --abi ompi --proto (interpose/gen/mpi_functions.txt
   plus mpi_functions_ompi.txt, restricted to exports.txt). */
#ifndef MPICOLLAB_API
#define MPICOLLAB_API OMPI_DECLSPEC
#endif
#ifdef __cplusplus
extern "C" {
#endif
#include "mpi_ompi_proto.h"
#ifdef __cplusplus
}
#endif

/* MPIX_Collab_* and the ULFM calls (MPIX_ERR_* are defined above). */
#include "mpicollab/mpix_collab.h"

#endif
