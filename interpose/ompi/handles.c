/*  handles.c - handle translation of the Open MPI face.

    Predefined handles are the addresses of the objects of objects.c and
    map to the ABI-neutral ids of cli_ids.h through the tables below.
    Handles of objects created at run time are addresses in a range of
    address space reserved per handle kind with mmap(PROT_NONE): entry i of
    the common glue's table of that kind has the handle base + 8 * i.
    Nothing is ever mapped there, so the handles are distinct, stable,
    8-byte aligned pointers that no other object can share, and decoding
    one is a range check that never dereferences the program's value.

    The ranges are reserved on first use (MPI_Init reserves them all, see
    cli_abi_foreign_check) and never released: a handle stays decodable
    after MPI_Finalize.  Each takes (CLI_ABI_MAX_INDEX + 1) * 8 bytes of
    address space (32 MiB) and no memory.
*/
#define _GNU_SOURCE
#include "abi.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

char *cl_ompi_dyn_base[CL_OMPI_DYN_COUNT];

static pthread_mutex_t dyn_lock = PTHREAD_MUTEX_INITIALIZER;
static int dyn_failed_logged;

#define DYN_RANGE_BYTES (((size_t)CLI_ABI_MAX_INDEX + 1) * 8)

int cl_ompi_dyn_reserve(void)
{
    int rc = 0, err = 0;
    pthread_mutex_lock(&dyn_lock);
    for (int k = 0; k < CL_OMPI_DYN_COUNT; k++) {
        if (cl_ompi_dyn_base[k] != NULL)
            continue;
        void *p = mmap(NULL, DYN_RANGE_BYTES, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            err = errno;
            rc = -1;
            break;
        }
        __atomic_store_n(&cl_ompi_dyn_base[k], (char *)p, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&dyn_lock);
    if (rc != 0)
        errno = err;
    return rc;
}

void *cl_ompi_dyn_handle(cl_ompi_dyn_kind_t k, int index)
{
    if ((int)k < 0 || k >= CL_OMPI_DYN_COUNT || index < 0 || index > CLI_ABI_MAX_INDEX)
        return NULL;
    char *base = __atomic_load_n(&cl_ompi_dyn_base[k], __ATOMIC_ACQUIRE);
    if (base == NULL) {
        if (cl_ompi_dyn_reserve() != 0) {
            int e = errno;
            if (__atomic_exchange_n(&dyn_failed_logged, 1, __ATOMIC_SEQ_CST) == 0) {
                char line[200];
                int n = snprintf(line, sizeof line,
                                 "[collab] cannot reserve %zu MiB of address space for MPI "
                                 "handles: %s\n",
                                 DYN_RANGE_BYTES >> 20, strerror(e));
                if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0)
                    n = 0; /* nothing more to do about a failed diagnostic */
            }
            return NULL;
        }
        base = __atomic_load_n(&cl_ompi_dyn_base[k], __ATOMIC_ACQUIRE);
    }
    return base + (size_t)index * 8;
}

/* ---------------------------------------------------------------------- */
/* Predefined datatypes and ops <-> ABI-neutral ids. */

#define TYPE_TO_CLI_(sym, idx, name, cli, fortran) [idx] = (short)(cli),
const short cl_ompi_type_to_cli[CL_OMPI_DATATYPE_COUNT] = {CL_OMPI_FOREACH_DATATYPE(TYPE_TO_CLI_)};

#define OP_TO_CLI_(sym, idx, name, core) [idx] = (signed char)(core),
const signed char cl_ompi_op_to_cli[CL_OMPI_OP_COUNT] = {CL_OMPI_FOREACH_OP(OP_TO_CLI_)};

/* The reverse maps, built once: for ids that several objects decode to
   (MPI_C_COMPLEX and MPI_C_FLOAT_COMPLEX), the first object of the table
   with that id wins, except that the C name is preferred. */
/* Number of CLI_T_ ids, counted from the X-macro of cli_ids.h. */
#define COUNT_TYPE_(name) +1
enum { NTYPES = 0 CLI_PREDEF_TYPES(COUNT_TYPE_) };

static short cli_to_type[NTYPES];
static signed char cli_to_op[COLLAB_OP_COUNT];
static pthread_once_t reverse_once = PTHREAD_ONCE_INIT;

static void reverse_build(void)
{
    for (int t = 0; t < NTYPES; t++)
        cli_to_type[t] = -1;
    for (int i = 0; i < CL_OMPI_DATATYPE_COUNT; i++) {
        int t = cl_ompi_type_to_cli[i];
        if (t >= 0 && cli_to_type[t] < 0)
            cli_to_type[t] = (short)i;
    }
    /* ompi_mpi_c_complex and ompi_mpi_ldblcplex come first in the table
       but programs name the C objects. */
    cli_to_type[CLI_T_C_FLOAT_COMPLEX] = CL_OMPI_DT_C_FLOAT_COMPLEX;
    cli_to_type[CLI_T_C_LONG_DOUBLE_COMPLEX] = CL_OMPI_DT_C_LONG_DOUBLE_COMPLEX;
    for (int o = 0; o < COLLAB_OP_COUNT; o++)
        cli_to_op[o] = -1;
    for (int i = 0; i < CL_OMPI_OP_COUNT; i++)
        if (cl_ompi_op_to_cli[i] >= 0)
            cli_to_op[(int)cl_ompi_op_to_cli[i]] = (signed char)i;
}

MPI_Datatype cli_abi_type_predef(int id)
{
    pthread_once(&reverse_once, reverse_build);
    if (id < 0 || id >= NTYPES || cli_to_type[id] < 0)
        return MPI_DATATYPE_NULL;
    return (MPI_Datatype)cl_ompi_predefined_addr(CL_OMPI_KIND_DATATYPE, cli_to_type[id]);
}

MPI_Op cli_abi_op_predef(int id)
{
    pthread_once(&reverse_once, reverse_build);
    if (id < 0 || id >= COLLAB_OP_COUNT || cli_to_op[id] < 0)
        return MPI_OP_NULL;
    return (MPI_Op)cl_ompi_predefined_addr(CL_OMPI_KIND_OP, cli_to_op[id]);
}
