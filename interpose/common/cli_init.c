/*  cli_init.c - start-up, shut-down and process-level calls.

    The face does nothing until MPI_Init (DESIGN 1.6): no constructors,
    threads or sockets, so a preloaded library is inert in processes that
    never call MPI.  MPI_Init first checks that the program uses this
    face's ABI (cli_abi_foreign_check), then starts the core
    (collab_init: configuration, engine thread, joining the swarm).  The
    face always provides MPI_THREAD_MULTIPLE.  MPI_Finalize deletes the
    attributes of MPI_COMM_SELF first (their callbacks may call MPI), then
    completes requests the program freed while active, then leaves the
    swarm.  Also here: versions, clocks, processor name, memory, address
    arithmetic, MPI_Dims_create and the minimal tool-interface calls.
*/
#include "cli.h"
#include "cli_impl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cli_start(cli_call_t *call, int *argc, char ***argv, int required)
{
    int state = __atomic_load_n(&cli.state, __ATOMIC_ACQUIRE);
    if (state != CLI_STATE_PRE)
        return cli_err(call, MPI_ERR_OTHER, NULL, "%s",
                       state == CLI_STATE_INIT
                           ? "MPI is already initialized"
                           : "MPI cannot be initialized again after MPI_Finalize");
    const char *foreign = cli_abi_foreign_check();
    if (foreign != NULL)
        cli_abi_fatal(MPI_ERR_OTHER, call->name, "MPI_COMM_WORLD", foreign);
    collab_init_args_t args = {.requested_thread_level = required, .abi_name = CLI_ABI_NAME};
    /* The NCCL face may have started the core already: one engine, one
       rank; MPI_Finalize then gives back this face's hold only. */
    int st = collab_retain();
    if (st != COLLAB_OK)
        st = collab_init(&args);
    /* These the core has already reported in one line (the variable, the
       unreachable peers): stop without a second line. */
    if (st == COLLAB_ERR_CONFIG || st == COLLAB_ERR_NETWORK || st == COLLAB_ERR_TIMEOUT)
        cli_abi_fatal(cli_class_of_status(st), call->name, "MPI_COMM_WORLD", NULL);
    if (st != COLLAB_OK)
        return cli_err(call, cli_class_of_status(st), NULL, "could not start mpicollab: %s",
                       collab_strerror(st));
    cli_world.core = collab_comm_world();
    cli_self.core = collab_comm_self();
    if (cli_world.core == NULL || cli_self.core == NULL)
        return cli_err(call, MPI_ERR_INTERN, NULL, "the core has no world communicator");
    cli.main_thread = pthread_self();
    cli.provided = MPI_THREAD_MULTIPLE;
    cli_info_env_fill(argc ? *argc : 0, argv ? *argv : NULL, cli.provided);
    __atomic_store_n(&cli.state, CLI_STATE_INIT, __ATOMIC_RELEASE);
    return MPI_SUCCESS;
}

int cli_impl_Init(cli_call_t *call, int *argc, char ***argv)
{
    return cli_start(call, argc, argv, MPI_THREAD_SINGLE);
}

int cli_impl_Init_thread(cli_call_t *call, int *argc, char ***argv, int required, int *provided)
{
    if (required < MPI_THREAD_SINGLE || required > MPI_THREAD_MULTIPLE)
        return cli_err(call, MPI_ERR_ARG, "required", "%d is not an MPI_THREAD_* level", required);
    if (provided == NULL)
        return cli_err(call, MPI_ERR_ARG, "provided", "must not be NULL");
    int rc = cli_start(call, argc, argv, required);
    if (rc == MPI_SUCCESS)
        *provided = cli.provided;
    return rc;
}

int cli_impl_Initialized(cli_call_t *call, int *flag)
{
    if (flag == NULL)
        return cli_err(call, MPI_ERR_ARG, "flag", "must not be NULL");
    *flag = __atomic_load_n(&cli.state, __ATOMIC_ACQUIRE) != CLI_STATE_PRE;
    return MPI_SUCCESS;
}

int cli_impl_Finalized(cli_call_t *call, int *flag)
{
    if (flag == NULL)
        return cli_err(call, MPI_ERR_ARG, "flag", "must not be NULL");
    *flag = __atomic_load_n(&cli.state, __ATOMIC_ACQUIRE) == CLI_STATE_FINAL;
    return MPI_SUCCESS;
}

int cli_impl_Finalize(cli_call_t *call)
{
    int rc = cli_attr_delete_all_comm(call, &cli_self);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_req_sweep(1);
    int st = collab_finalize();
    __atomic_store_n(&cli.state, CLI_STATE_FINAL, __ATOMIC_RELEASE);
    if (st != COLLAB_OK)
        return cli_err_core(call, st, "leaving the swarm");
    return MPI_SUCCESS;
}

int cli_impl_Abort(cli_call_t *call, MPI_Comm comm, int errorcode)
{
    (void)call;
    int why = 0;
    cli_comm_t *c = cli_comm_lookup(comm, &why);
    char name[MPI_MAX_OBJECT_NAME + 32];
    if (c == NULL) {
        snprintf(name, sizeof name, "%s", why == CLI_H_NULL ? "MPI_COMM_NULL" : "comm=invalid");
    } else {
        cli_lock();
        if (c->name[0] != '\0')
            snprintf(name, sizeof name, "%s", c->name);
        else
            snprintf(name, sizeof name, "comm=%d", c->index);
        cli_unlock();
    }
    int live = collab_initialized() && !collab_finalized();
    cli_abi_abort(errorcode, name, live ? collab_world_rank() : 0);
}

int cli_impl_Query_thread(cli_call_t *call, int *provided)
{
    if (provided == NULL)
        return cli_err(call, MPI_ERR_ARG, "provided", "must not be NULL");
    *provided = cli.provided;
    return MPI_SUCCESS;
}

int cli_impl_Is_thread_main(cli_call_t *call, int *flag)
{
    if (flag == NULL)
        return cli_err(call, MPI_ERR_ARG, "flag", "must not be NULL");
    *flag = pthread_equal(pthread_self(), cli.main_thread) != 0;
    return MPI_SUCCESS;
}

int cli_impl_Get_version(cli_call_t *call, int *version, int *subversion)
{
    if (version == NULL || subversion == NULL)
        return cli_err(call, MPI_ERR_ARG, version ? "subversion" : "version", "must not be NULL");
    *version = MPI_VERSION;
    *subversion = MPI_SUBVERSION;
    return MPI_SUCCESS;
}

int cli_impl_Get_library_version(cli_call_t *call, char *version, int *resultlen)
{
    if (version == NULL || resultlen == NULL)
        return cli_err(call, MPI_ERR_ARG, version ? "resultlen" : "version", "must not be NULL");
    const char *core = collab_version_string();
    int n = snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING, "%s; core: %s",
                     CLI_ABI_LIBRARY_VERSION, core ? core : "unknown");
    *resultlen = n < MPI_MAX_LIBRARY_VERSION_STRING ? n : MPI_MAX_LIBRARY_VERSION_STRING - 1;
    return MPI_SUCCESS;
}

int cli_impl_Get_processor_name(cli_call_t *call, char *name, int *resultlen)
{
    int st = collab_processor_name(name, MPI_MAX_PROCESSOR_NAME);
    if (st != COLLAB_OK)
        return cli_err_core(call, st, "reading the host name");
    *resultlen = (int)strnlen(name, MPI_MAX_PROCESSOR_NAME - 1);
    name[*resultlen] = '\0';
    return MPI_SUCCESS;
}

double cli_impl_Wtime(cli_call_t *call)
{
    (void)call;
    return collab_wtime();
}

double cli_impl_Wtick(cli_call_t *call)
{
    (void)call;
    return collab_wtick();
}

int cli_impl_Pcontrol(cli_call_t *call, const int level)
{
    (void)call;
    (void)level; /* no profiling levels */
    return MPI_SUCCESS;
}

int cli_impl_Alloc_mem(cli_call_t *call, MPI_Aint size, MPI_Info info, void *baseptr)
{
    (void)info;
    if (size < 0)
        return cli_err(call, MPI_ERR_ARG, "size", "%lld is negative", (long long)size);
    if (baseptr == NULL)
        return cli_err(call, MPI_ERR_ARG, "baseptr", "must not be NULL");
    void *p = malloc(size > 0 ? (size_t)size : 1);
    if (p == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, "size", "cannot allocate %lld bytes", (long long)size);
    *(void **)baseptr = p;
    return MPI_SUCCESS;
}

int cli_impl_Free_mem(cli_call_t *call, void *base)
{
    (void)call;
    free(base);
    return MPI_SUCCESS;
}

int cli_impl_Get_address(cli_call_t *call, const void *location, MPI_Aint *address)
{
    if (address == NULL)
        return cli_err(call, MPI_ERR_ARG, "address", "must not be NULL");
    *address = (MPI_Aint)(uintptr_t)location;
    return MPI_SUCCESS;
}

int cli_impl_Address(cli_call_t *call, void *location, MPI_Aint *address)
{
    return cli_impl_Get_address(call, location, address);
}

MPI_Aint cli_impl_Aint_add(cli_call_t *call, MPI_Aint base, MPI_Aint disp)
{
    (void)call;
    return (MPI_Aint)((uintptr_t)base + (uintptr_t)disp);
}

MPI_Aint cli_impl_Aint_diff(cli_call_t *call, MPI_Aint addr1, MPI_Aint addr2)
{
    (void)call;
    return (MPI_Aint)((uintptr_t)addr1 - (uintptr_t)addr2);
}

MPI_Fint cli_impl_File_c2f(cli_call_t *call, MPI_File file)
{
    (void)call;
    (void)file; /* no file can be open: every handle maps to the null one */
    return 0;
}

MPI_File cli_impl_File_f2c(cli_call_t *call, MPI_Fint file)
{
    (void)call;
    (void)file;
    return MPI_FILE_NULL;
}

/* MPI_Dims_create: balanced factorisation, free dimensions non-increasing. */
int cli_impl_Dims_create(cli_call_t *call, int nnodes, int ndims, int dims[])
{
    if (nnodes <= 0)
        return cli_err(call, MPI_ERR_DIMS, "nnodes", "%d is not positive", nnodes);
    if (ndims < 0)
        return cli_err(call, MPI_ERR_DIMS, "ndims", "%d is negative", ndims);
    long fixed = 1;
    int nfree = 0;
    for (int i = 0; i < ndims; i++) {
        if (dims[i] < 0)
            return cli_err(call, MPI_ERR_DIMS, "dims", "dims[%d] = %d is negative", i, dims[i]);
        if (dims[i] > 0)
            fixed *= dims[i];
        else
            nfree++;
        if (fixed > nnodes)
            break;
    }
    if (fixed > nnodes || nnodes % fixed != 0)
        return cli_err(call, MPI_ERR_DIMS, "dims",
                       "the fixed dimensions (product %ld) do not divide nnodes = %d", fixed,
                       nnodes);
    int rem = (int)(nnodes / fixed);
    if (nfree == 0)
        return rem == 1 ? MPI_SUCCESS
                        : cli_err(call, MPI_ERR_DIMS, "dims",
                                  "no free dimension, but the product is not nnodes = %d", nnodes);
    int *f = calloc((size_t)nfree, sizeof(int));
    int factors[64], nf = 0;
    if (f == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    for (int p = 2; (long)p * p <= rem; p++)
        while (rem % p == 0 && nf < 64) {
            factors[nf++] = p;
            rem /= p;
        }
    if (rem > 1)
        factors[nf++] = rem;
    for (int i = 0; i < nfree; i++)
        f[i] = 1;
    for (int k = nf - 1; k >= 0; k--) { /* largest factor to the smallest dimension */
        int m = 0;
        for (int i = 1; i < nfree; i++)
            if (f[i] < f[m])
                m = i;
        f[m] *= factors[k];
    }
    for (int i = 0; i < nfree; i++) /* sort non-increasing */
        for (int j = i + 1; j < nfree; j++)
            if (f[j] > f[i]) {
                int t = f[i];
                f[i] = f[j];
                f[j] = t;
            }
    for (int i = 0, k = 0; i < ndims; i++)
        if (dims[i] == 0)
            dims[i] = f[k++];
    free(f);
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* The tool interface: no control or performance variables. */

int cli_impl_T_init_thread(cli_call_t *call, int required, int *provided)
{
    (void)call;
    (void)required;
    if (provided != NULL)
        *provided = MPI_THREAD_MULTIPLE;
    return MPI_SUCCESS;
}

int cli_impl_T_finalize(cli_call_t *call)
{
    (void)call;
    return MPI_SUCCESS;
}

static int cli_t_zero(int *num)
{
    if (num == NULL)
        return MPI_ERR_ARG;
    *num = 0;
    return MPI_SUCCESS;
}

int cli_impl_T_cvar_get_num(cli_call_t *call, int *num_cvar)
{
    (void)call;
    return cli_t_zero(num_cvar);
}

int cli_impl_T_pvar_get_num(cli_call_t *call, int *num_pvar)
{
    (void)call;
    return cli_t_zero(num_pvar);
}

int cli_impl_T_category_get_num(cli_call_t *call, int *num_cat)
{
    (void)call;
    return cli_t_zero(num_cat);
}

int cli_impl_T_source_get_num(cli_call_t *call, int *num_sources)
{
    (void)call;
    return cli_t_zero(num_sources);
}

int cli_impl_T_event_get_num(cli_call_t *call, int *num_events)
{
    (void)call;
    return cli_t_zero(num_events);
}

/* ---------------------------------------------------------------------- */
/* Accelerator queries: CUDA buffers are accepted where the core loaded
   its device plugin (docs/cuda.md); other accelerators are not. */

int cli_impl_Query_cuda_support(cli_call_t *call)
{
    (void)call;
    return collab_device_support();
}

int cli_impl_Query_ze_support(cli_call_t *call)
{
    (void)call;
    return 0;
}

int cli_impl_Query_hip_support(cli_call_t *call)
{
    (void)call;
    return 0;
}

int cli_impl_GPU_query_support(cli_call_t *call, int gpu_type, int *is_supported)
{
    (void)call;
    (void)gpu_type;
    *is_supported = 0;
    return MPI_SUCCESS;
}
