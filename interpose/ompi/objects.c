/*  objects.c - the predefined objects of the Open MPI 4.1 ABI.

    In Open MPI a predefined handle is the address of a global object:
    MPI_COMM_WORLD is (MPI_Comm)&ompi_mpi_comm_world, MPI_DOUBLE is
    &ompi_mpi_double, and so on.  Executables built with mpicc.openmpi reach
    these objects through copy relocations: the linker reserves st_size
    bytes in the executable, ld.so copies our initial bytes there at start-
    up, and from then on the executable's copy is the one address that
    every default-visibility reference (ours included, through the GOT)
    resolves to.  Hence the rules this file follows (docs/ompi-abi.md):

    - every object has exactly Open MPI's size (512 for communicators and
      datatypes, 2048 for ops, ...), so ld.so neither warns nor truncates;
    - default visibility, defined in the shared library that must be linked
      without -Bsymbolic and without protected visibility;
    - the face never caches an address before relocation; the table below
      holds addresses in initialised data, which ld.so relocates against
      the canonical (possibly copied) object before any code runs.

    The bytes of an object are opaque to programs.  We store a small tag
    (magic, kind, index, MPI name) so that a debugger shows what a handle
    is; the face itself recognises predefined handles by address only.
*/
#include "objects.h"

#include <string.h>

/* The tag stored at the start of every predefined object. */
#define OBJ_TAG(kind_, index_, name_)                                                              \
    {                                                                                              \
        .u.tag = {.magic = CL_OMPI_OBJ_MAGIC, .kind = (kind_), .index = (index_), .name = name_ }  \
    }

/* One struct per Open MPI predefined type: a tag padded to the exact size
   of Open MPI's struct ompi_predefined_*_t. */
#define DEFINE_PREDEFINED_STRUCT(tagname, size)                                                    \
    struct tagname {                                                                               \
        union {                                                                                    \
            cl_ompi_obj_tag_t tag;                                                                 \
            unsigned char bytes[size];                                                             \
        } u;                                                                                       \
    };                                                                                             \
    _Static_assert(sizeof(struct tagname) == (size), #tagname " must have Open MPI's size")

DEFINE_PREDEFINED_STRUCT(ompi_predefined_communicator_t, OMPI_PREDEFINED_COMMUNICATOR_SIZE);
DEFINE_PREDEFINED_STRUCT(ompi_predefined_datatype_t, OMPI_PREDEFINED_DATATYPE_SIZE);
DEFINE_PREDEFINED_STRUCT(ompi_predefined_op_t, OMPI_PREDEFINED_OP_SIZE);
DEFINE_PREDEFINED_STRUCT(ompi_predefined_errhandler_t, OMPI_PREDEFINED_ERRHANDLER_SIZE);
DEFINE_PREDEFINED_STRUCT(ompi_predefined_group_t, OMPI_PREDEFINED_GROUP_SIZE);
DEFINE_PREDEFINED_STRUCT(ompi_predefined_info_t, OMPI_PREDEFINED_INFO_SIZE);
DEFINE_PREDEFINED_STRUCT(ompi_predefined_request_t, OMPI_PREDEFINED_REQUEST_SIZE);
DEFINE_PREDEFINED_STRUCT(ompi_predefined_message_t, OMPI_PREDEFINED_MESSAGE_SIZE);
DEFINE_PREDEFINED_STRUCT(ompi_predefined_win_t, OMPI_PREDEFINED_WIN_SIZE);
DEFINE_PREDEFINED_STRUCT(ompi_predefined_file_t, OMPI_PREDEFINED_FILE_SIZE);

/* ---------------------------------------------------------------------- */
/* The objects.  Indices are the CL_OMPI_* enums of objects.h. */

struct ompi_predefined_communicator_t ompi_mpi_comm_world =
    OBJ_TAG(CL_OMPI_KIND_COMM, CL_OMPI_COMM_WORLD, "MPI_COMM_WORLD");
struct ompi_predefined_communicator_t ompi_mpi_comm_self =
    OBJ_TAG(CL_OMPI_KIND_COMM, CL_OMPI_COMM_SELF, "MPI_COMM_SELF");
struct ompi_predefined_communicator_t ompi_mpi_comm_null =
    OBJ_TAG(CL_OMPI_KIND_COMM, CL_OMPI_COMM_NULL, "MPI_COMM_NULL");

struct ompi_predefined_group_t ompi_mpi_group_null =
    OBJ_TAG(CL_OMPI_KIND_GROUP, CL_OMPI_GROUP_NULL, "MPI_GROUP_NULL");
struct ompi_predefined_group_t ompi_mpi_group_empty =
    OBJ_TAG(CL_OMPI_KIND_GROUP, CL_OMPI_GROUP_EMPTY, "MPI_GROUP_EMPTY");

struct ompi_predefined_request_t ompi_request_null =
    OBJ_TAG(CL_OMPI_KIND_REQUEST, 0, "MPI_REQUEST_NULL");

struct ompi_predefined_message_t ompi_message_null =
    OBJ_TAG(CL_OMPI_KIND_MESSAGE, CL_OMPI_MESSAGE_NULL, "MPI_MESSAGE_NULL");
struct ompi_predefined_message_t ompi_message_no_proc =
    OBJ_TAG(CL_OMPI_KIND_MESSAGE, CL_OMPI_MESSAGE_NO_PROC, "MPI_MESSAGE_NO_PROC");

struct ompi_predefined_errhandler_t ompi_mpi_errhandler_null =
    OBJ_TAG(CL_OMPI_KIND_ERRHANDLER, CL_OMPI_ERRHANDLER_NULL, "MPI_ERRHANDLER_NULL");
struct ompi_predefined_errhandler_t ompi_mpi_errors_are_fatal =
    OBJ_TAG(CL_OMPI_KIND_ERRHANDLER, CL_OMPI_ERRORS_ARE_FATAL, "MPI_ERRORS_ARE_FATAL");
struct ompi_predefined_errhandler_t ompi_mpi_errors_return =
    OBJ_TAG(CL_OMPI_KIND_ERRHANDLER, CL_OMPI_ERRORS_RETURN, "MPI_ERRORS_RETURN");
struct ompi_predefined_errhandler_t ompi_mpi_errors_throw_exceptions = OBJ_TAG(
    CL_OMPI_KIND_ERRHANDLER, CL_OMPI_ERRORS_THROW_EXCEPTIONS, "MPI::ERRORS_THROW_EXCEPTIONS");

struct ompi_predefined_win_t ompi_mpi_win_null = OBJ_TAG(CL_OMPI_KIND_WIN, 0, "MPI_WIN_NULL");
struct ompi_predefined_file_t ompi_mpi_file_null = OBJ_TAG(CL_OMPI_KIND_FILE, 0, "MPI_FILE_NULL");

struct ompi_predefined_info_t ompi_mpi_info_null =
    OBJ_TAG(CL_OMPI_KIND_INFO, CL_OMPI_INFO_NULL, "MPI_INFO_NULL");
struct ompi_predefined_info_t ompi_mpi_info_env =
    OBJ_TAG(CL_OMPI_KIND_INFO, CL_OMPI_INFO_ENV, "MPI_INFO_ENV");

#define DEFINE_OP_(sym, idx, mpiname, ...)                                                         \
    struct ompi_predefined_op_t sym = OBJ_TAG(CL_OMPI_KIND_OP, idx, mpiname);
CL_OMPI_FOREACH_OP(DEFINE_OP_)

#define DEFINE_DATATYPE_(sym, idx, mpiname, ...)                                                   \
    struct ompi_predefined_datatype_t sym = OBJ_TAG(CL_OMPI_KIND_DATATYPE, idx, mpiname);
CL_OMPI_FOREACH_DATATYPE(DEFINE_DATATYPE_)

/* MPI_F_STATUS(ES)_IGNORE are pointer variables in Open MPI, pointing at
   Fortran sentinels; a C program compares a MPI_Fint* against them. */
static MPI_Fint f_status_ignore_sentinel[6];
static MPI_Fint f_statuses_ignore_sentinel[6];
MPI_Fint *MPI_F_STATUS_IGNORE = f_status_ignore_sentinel;
MPI_Fint *MPI_F_STATUSES_IGNORE = f_statuses_ignore_sentinel;

/* ---------------------------------------------------------------------- */
/* Address tables.  Initialised data: ld.so relocates each entry against
   the canonical object (the executable's copy when there is one). */

static void *const comm_addr[CL_OMPI_COMM_COUNT] = {
    [CL_OMPI_COMM_NULL] = &ompi_mpi_comm_null,
    [CL_OMPI_COMM_WORLD] = &ompi_mpi_comm_world,
    [CL_OMPI_COMM_SELF] = &ompi_mpi_comm_self,
};
static void *const group_addr[CL_OMPI_GROUP_COUNT] = {
    [CL_OMPI_GROUP_NULL] = &ompi_mpi_group_null,
    [CL_OMPI_GROUP_EMPTY] = &ompi_mpi_group_empty,
};
static void *const message_addr[CL_OMPI_MESSAGE_COUNT] = {
    [CL_OMPI_MESSAGE_NULL] = &ompi_message_null,
    [CL_OMPI_MESSAGE_NO_PROC] = &ompi_message_no_proc,
};
static void *const errhandler_addr[CL_OMPI_ERRHANDLER_COUNT] = {
    [CL_OMPI_ERRHANDLER_NULL] = &ompi_mpi_errhandler_null,
    [CL_OMPI_ERRORS_ARE_FATAL] = &ompi_mpi_errors_are_fatal,
    [CL_OMPI_ERRORS_RETURN] = &ompi_mpi_errors_return,
    [CL_OMPI_ERRORS_THROW_EXCEPTIONS] = &ompi_mpi_errors_throw_exceptions,
};
static void *const info_addr[CL_OMPI_INFO_COUNT] = {
    [CL_OMPI_INFO_NULL] = &ompi_mpi_info_null,
    [CL_OMPI_INFO_ENV] = &ompi_mpi_info_env,
};
static void *const request_addr[1] = {&ompi_request_null};
static void *const win_addr[1] = {&ompi_mpi_win_null};
static void *const file_addr[1] = {&ompi_mpi_file_null};

#define OP_ADDR_(sym, idx, ...) [idx] = &sym,
static void *const op_addr[CL_OMPI_OP_COUNT] = {CL_OMPI_FOREACH_OP(OP_ADDR_)};

#define DATATYPE_ADDR_(sym, idx, ...) [idx] = &sym,
static void *const datatype_addr[CL_OMPI_DATATYPE_COUNT] = {
    CL_OMPI_FOREACH_DATATYPE(DATATYPE_ADDR_)};

static const struct {
    void *const *addr; /* addresses of this kind's objects, by index */
    int count;         /* entries in addr */
} kind_table[CL_OMPI_KIND_COUNT] = {
    [CL_OMPI_KIND_COMM] = {comm_addr, CL_OMPI_COMM_COUNT},
    [CL_OMPI_KIND_DATATYPE] = {datatype_addr, CL_OMPI_DATATYPE_COUNT},
    [CL_OMPI_KIND_OP] = {op_addr, CL_OMPI_OP_COUNT},
    [CL_OMPI_KIND_ERRHANDLER] = {errhandler_addr, CL_OMPI_ERRHANDLER_COUNT},
    [CL_OMPI_KIND_GROUP] = {group_addr, CL_OMPI_GROUP_COUNT},
    [CL_OMPI_KIND_INFO] = {info_addr, CL_OMPI_INFO_COUNT},
    [CL_OMPI_KIND_REQUEST] = {request_addr, 1},
    [CL_OMPI_KIND_MESSAGE] = {message_addr, CL_OMPI_MESSAGE_COUNT},
    [CL_OMPI_KIND_WIN] = {win_addr, 1},
    [CL_OMPI_KIND_FILE] = {file_addr, 1},
};

void *cl_ompi_predefined_addr(cl_ompi_kind_t kind, int index)
{
    if ((int)kind < 0 || kind >= CL_OMPI_KIND_COUNT)
        return NULL;
    if (index < 0 || index >= kind_table[kind].count)
        return NULL;
    return kind_table[kind].addr[index];
}

int cl_ompi_predefined_count(cl_ompi_kind_t kind)
{
    if ((int)kind < 0 || kind >= CL_OMPI_KIND_COUNT)
        return 0;
    return kind_table[kind].count;
}

/* A small open-addressing hash from address to (kind, index), built once.
   Lookups read it without a lock after pthread_once. */
#define PREDEF_SLOTS 512 /* power of two, > 2x the ~115 objects */

typedef struct {
    const void *addr;
    short kind;
    short index;
} predef_slot_t;

static predef_slot_t predef_hash[PREDEF_SLOTS];
static pthread_once_t predef_once = PTHREAD_ONCE_INIT;

static size_t addr_hash(const void *p)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 17;
    x *= (uintptr_t)0xed5ad4bbU;
    x ^= x >> 11;
    return (size_t)x & (PREDEF_SLOTS - 1);
}

static void predef_build(void)
{
    for (int k = 0; k < CL_OMPI_KIND_COUNT; k++) {
        for (int i = 0; i < kind_table[k].count; i++) {
            const void *a = kind_table[k].addr[i];
            size_t h = addr_hash(a);
            while (predef_hash[h].addr != NULL)
                h = (h + 1) & (PREDEF_SLOTS - 1);
            predef_hash[h].addr = a;
            predef_hash[h].kind = (short)k;
            predef_hash[h].index = (short)i;
        }
    }
}

int cl_ompi_predefined_lookup(const void *handle, cl_ompi_kind_t *kind, int *index)
{
    if (handle == NULL)
        return 0;
    pthread_once(&predef_once, predef_build);
    size_t h = addr_hash(handle);
    while (predef_hash[h].addr != NULL) {
        if (predef_hash[h].addr == handle) {
            if (kind != NULL)
                *kind = (cl_ompi_kind_t)predef_hash[h].kind;
            if (index != NULL)
                *index = predef_hash[h].index;
            return 1;
        }
        h = (h + 1) & (PREDEF_SLOTS - 1);
    }
    return 0;
}

const char *cl_ompi_predefined_name(cl_ompi_kind_t kind, int index)
{
    const cl_ompi_obj_tag_t *tag = cl_ompi_predefined_addr(kind, index);
    if (tag == NULL || tag->magic != CL_OMPI_OBJ_MAGIC)
        return NULL;
    return tag->name;
}

/* ---------------------------------------------------------------------- */
/* The predefined attribute callbacks.  Open MPI exports them as
   functions; programs pass their addresses to Comm_create_keyval and the
   like.  They behave as the standard says: NULL_COPY does not copy,
   DUP copies the value, NULL_DELETE does nothing. */

static int null_copy(int *flag)
{
    if (flag != NULL)
        *flag = 0;
    return MPI_SUCCESS;
}

static int dup_copy(void *attribute_val_in, void *attribute_val_out, int *flag)
{
    if (attribute_val_out != NULL)
        memcpy(attribute_val_out, &attribute_val_in, sizeof(void *));
    if (flag != NULL)
        *flag = 1;
    return MPI_SUCCESS;
}

int OMPI_C_MPI_TYPE_NULL_DELETE_FN(MPI_Datatype datatype, int type_keyval, void *attribute_val_out,
                                   void *extra_state)
{
    (void)datatype, (void)type_keyval, (void)attribute_val_out, (void)extra_state;
    return MPI_SUCCESS;
}

int OMPI_C_MPI_TYPE_NULL_COPY_FN(MPI_Datatype datatype, int type_keyval, void *extra_state,
                                 void *attribute_val_in, void *attribute_val_out, int *flag)
{
    (void)datatype, (void)type_keyval, (void)extra_state, (void)attribute_val_in;
    (void)attribute_val_out;
    return null_copy(flag);
}

int OMPI_C_MPI_TYPE_DUP_FN(MPI_Datatype datatype, int type_keyval, void *extra_state,
                           void *attribute_val_in, void *attribute_val_out, int *flag)
{
    (void)datatype, (void)type_keyval, (void)extra_state;
    return dup_copy(attribute_val_in, attribute_val_out, flag);
}

int OMPI_C_MPI_COMM_NULL_DELETE_FN(MPI_Comm comm, int comm_keyval, void *attribute_val_out,
                                   void *extra_state)
{
    (void)comm, (void)comm_keyval, (void)attribute_val_out, (void)extra_state;
    return MPI_SUCCESS;
}

int OMPI_C_MPI_COMM_NULL_COPY_FN(MPI_Comm comm, int comm_keyval, void *extra_state,
                                 void *attribute_val_in, void *attribute_val_out, int *flag)
{
    (void)comm, (void)comm_keyval, (void)extra_state, (void)attribute_val_in;
    (void)attribute_val_out;
    return null_copy(flag);
}

int OMPI_C_MPI_COMM_DUP_FN(MPI_Comm comm, int comm_keyval, void *extra_state,
                           void *attribute_val_in, void *attribute_val_out, int *flag)
{
    (void)comm, (void)comm_keyval, (void)extra_state;
    return dup_copy(attribute_val_in, attribute_val_out, flag);
}

int OMPI_C_MPI_WIN_NULL_DELETE_FN(MPI_Win window, int win_keyval, void *attribute_val_out,
                                  void *extra_state)
{
    (void)window, (void)win_keyval, (void)attribute_val_out, (void)extra_state;
    return MPI_SUCCESS;
}

int OMPI_C_MPI_WIN_NULL_COPY_FN(MPI_Win window, int win_keyval, void *extra_state,
                                void *attribute_val_in, void *attribute_val_out, int *flag)
{
    (void)window, (void)win_keyval, (void)extra_state, (void)attribute_val_in;
    (void)attribute_val_out;
    return null_copy(flag);
}

int OMPI_C_MPI_WIN_DUP_FN(MPI_Win window, int win_keyval, void *extra_state, void *attribute_val_in,
                          void *attribute_val_out, int *flag)
{
    (void)window, (void)win_keyval, (void)extra_state;
    return dup_copy(attribute_val_in, attribute_val_out, flag);
}

int OMPI_C_MPI_NULL_DELETE_FN(MPI_Comm comm, int comm_keyval, void *attribute_val_out,
                              void *extra_state)
{
    return OMPI_C_MPI_COMM_NULL_DELETE_FN(comm, comm_keyval, attribute_val_out, extra_state);
}

int OMPI_C_MPI_NULL_COPY_FN(MPI_Comm comm, int comm_keyval, void *extra_state,
                            void *attribute_val_in, void *attribute_val_out, int *flag)
{
    return OMPI_C_MPI_COMM_NULL_COPY_FN(comm, comm_keyval, extra_state, attribute_val_in,
                                        attribute_val_out, flag);
}

int OMPI_C_MPI_DUP_FN(MPI_Comm comm, int comm_keyval, void *extra_state, void *attribute_val_in,
                      void *attribute_val_out, int *flag)
{
    return OMPI_C_MPI_COMM_DUP_FN(comm, comm_keyval, extra_state, attribute_val_in,
                                  attribute_val_out, flag);
}
