/*  nf_comm.c - the NCCL face's communicators, unique ids, errors and
    memory (docs/nccl.md).

    The process's first ncclCommInitRank joins the swarm: nranks becomes
    the nominal world size (COLLAB_WORLD_SIZE) and rank the rank asked of
    the swarm (COLLAB_RANK), unless the variables say otherwise (then the
    call fails naming both) or an MPI face already joined (then the
    arguments must match MPI's world).  Later inits over the whole world
    duplicate the world communicator (collective over the world, as in
    NCCL); ncclCommSplit is the core's split.  Communicators live in a
    registry, so a handle that is not one is answered with
    ncclInvalidArgument instead of being read.  The face leaves the swarm
    when its last communicator goes and MPI, if used, has finalized: each
    face holds the core (collab_init or collab_retain) and gives its hold
    back with collab_finalize.
*/
#include "nf.h"

#include "nf_impl.h"
#include "util/cl_config.h"
#include "util/cl_device.h"
#include "util/cl_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static pthread_mutex_t s_mu = PTHREAD_MUTEX_INITIALIZER; /* guards all s_* below */
static ncclComm_t s_live = NULL;                         /* live communicators */
static ncclComm_t s_retired = NULL;                      /* released ones, kept (see comm_unlink) */
static int s_nlive = 0;                                  /* their number */
static bool s_holding = false;      /* this face holds the core (collab_init/retain) */
static bool s_config_read = false;  /* s_strict and s_cuda are set */
static bool s_strict = false;       /* COLLAB_STRICT */
static bool s_async = false;        /* COLLAB_NCCL_ASYNC */
static int s_cuda = CL_DEVICE_AUTO; /* COLLAB_CUDA */
static char s_last_error[256];      /* ncclGetLastError(NULL) */

/* ---------------------------------------------------------------------- */
/* Errors and logging. */

void nf_out_of_scope(const char *call, const char *reason)
{
    /* One line per call name (the generated bindings pass literals). */
    static const char *logged[64];
    bool seen = false;
    pthread_mutex_lock(&s_mu);
    int i = 0;
    for (; i < 64 && logged[i] != NULL && !seen; i++)
        seen = logged[i] == call;
    if (!seen && i < 64)
        logged[i] = call;
    pthread_mutex_unlock(&s_mu);
    if (!seen)
        cl_error("%s: outside the NCCL face's scope (%s); returning ncclInvalidUsage", call,
                 reason);
    pthread_mutex_lock(&s_mu);
    snprintf(s_last_error, sizeof s_last_error, "%s: outside mpicollab's scope (%s)", call, reason);
    pthread_mutex_unlock(&s_mu);
}

ncclResult_t nf_fail(ncclComm_t comm, ncclResult_t rc, const char *call, const char *fmt, ...)
{
    char why[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    cl_error("%s: %s", call, why);
    pthread_mutex_lock(&s_mu);
    snprintf(s_last_error, sizeof s_last_error, "%s: %s", call, why);
    pthread_mutex_unlock(&s_mu);
    if (comm != NULL) {
        pthread_mutex_lock(&comm->mu);
        snprintf(comm->last_error, sizeof comm->last_error, "%s: %s", call, why);
        pthread_mutex_unlock(&comm->mu);
    }
    return rc;
}

ncclResult_t nf_result_of(int status)
{
    switch (status) {
    case COLLAB_OK:
        return ncclSuccess;
    case COLLAB_ERR_NO_MEM:
    case COLLAB_ERR_INTERNAL:
        return ncclSystemError;
    case COLLAB_ERR_PROC_FAILED:
    case COLLAB_ERR_REVOKED:
    case COLLAB_ERR_NETWORK:
    case COLLAB_ERR_TIMEOUT:
    case COLLAB_ERR_MISMATCH:
        return ncclRemoteError;
    case COLLAB_ERR_NOT_INIT:
    case COLLAB_ERR_LEFT:
    case COLLAB_ERR_UNSUPPORTED:
    case COLLAB_ERR_CONFIG:
        return ncclInvalidUsage;
    default:
        return ncclInvalidArgument;
    }
}

/* Reads COLLAB_STRICT and COLLAB_CUDA once (the core validates them all
   again at collab_init; a bad value is reported there). */
static void config_once(void)
{
    if (s_config_read)
        return;
    cl_config_t cfg;
    char err[256];
    if (cl_config_load(&cfg, err, sizeof err) == 0) {
        s_strict = cfg.strict;
        s_async = cfg.nccl_async;
        s_cuda = cfg.cuda;
        /* This face's own lines follow COLLAB_LOG and COLLAB_LOG_FILE too
           when another face's library runs the core. */
        (void)cl_log_configure((cl_log_level_t)cfg.log_level, cfg.log_file);
    }
    cl_config_clear(&cfg);
    s_config_read = true;
}

const cl_devops_t *nf_devops(void)
{
    if (!cl_device_active()) {
        pthread_mutex_lock(&s_mu);
        config_once();
        int mode = s_cuda;
        pthread_mutex_unlock(&s_mu);
        (void)cl_device_init(mode);
    }
    return atomic_load(&cl_device_ops_p);
}

size_t nf_dtype_size(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
        return 1;
    case ncclFloat16:
    case ncclBfloat16:
        return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
        return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
        return 8;
    default:
        return 0;
    }
}

/* ---------------------------------------------------------------------- */
/* The registry. */

ncclComm_t nf_comm_live(ncclComm_t comm)
{
    if (comm == NULL)
        return NULL;
    pthread_mutex_lock(&s_mu);
    ncclComm_t c = s_live;
    while (c != NULL && c != comm)
        c = c->next_live;
    pthread_mutex_unlock(&s_mu);
    return c;
}

static ncclComm_t comm_new(collab_comm_t *core, bool owns)
{
    ncclComm_t c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->magic = NF_COMM_MAGIC;
    c->core = core;
    c->owns_core = owns;
    c->nranks = collab_comm_size(core);
    c->rank = collab_comm_rank(core);
    const cl_devops_t *ops = nf_devops();
    c->device = ops != NULL && ops->current_device != NULL ? ops->current_device() : -1;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    pthread_mutex_lock(&s_mu);
    config_once();
    c->strict = s_strict;
    /* Unless asked, a call returns once its operation completed: see
       docs/nccl.md §3 for why the stream-ordered mode can deadlock. */
    c->host_wait = !s_async;
    c->next_live = s_live;
    s_live = c;
    s_nlive++;
    pthread_mutex_unlock(&s_mu);
    return c;
}

/* Unlinks c from the live communicators and keeps it among the retired
   ones: a thread that looked it up just before (ncclCommAbort from a
   watchdog thread while another thread queues a call) still reads valid
   memory and is refused by the stopped proxy.  Returns false when c was
   not live (another thread released it first); *left: communicators left. */
static bool comm_unlink(ncclComm_t c, int *left)
{
    bool found = false;
    pthread_mutex_lock(&s_mu);
    for (ncclComm_t *pp = &s_live; *pp != NULL; pp = &(*pp)->next_live)
        if (*pp == c) {
            *pp = c->next_live;
            s_nlive--;
            found = true;
            break;
        }
    if (found) {
        c->next_live = s_retired;
        s_retired = c;
    }
    *left = s_nlive;
    pthread_mutex_unlock(&s_mu);
    return found;
}

/* ---------------------------------------------------------------------- */
/* Versions, ids, errors. */

ncclResult_t nf_impl_GetVersion(int *version)
{
    if (version == NULL)
        return nf_fail(NULL, ncclInvalidArgument, "ncclGetVersion", "version is NULL");
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

ncclResult_t nf_impl_GetUniqueId(ncclUniqueId *uniqueId)
{
    if (uniqueId == NULL)
        return nf_fail(NULL, ncclInvalidArgument, "ncclGetUniqueId", "uniqueId is NULL");
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    memcpy(id.internal, NF_ID_MAGIC, 16);
    if (getrandom(id.internal + 16, 16, 0) != 16)
        return nf_fail(NULL, ncclSystemError, "ncclGetUniqueId", "getrandom: %m");
    *uniqueId = id;
    return ncclSuccess;
}

const char *nf_impl_GetErrorString(ncclResult_t result)
{
    switch (result) {
    case ncclSuccess:
        return "no error";
    case ncclUnhandledCudaError:
        return "unhandled cuda error (run with COLLAB_LOG=debug for details)";
    case ncclSystemError:
        return "unhandled system error (run with COLLAB_LOG=debug for details)";
    case ncclInternalError:
        return "internal error - please report this issue to the mpicollab developers";
    case ncclInvalidArgument:
        return "invalid argument (see the [collab] log line for details)";
    case ncclInvalidUsage:
        return "invalid usage (see the [collab] log line for details)";
    case ncclRemoteError:
        return "remote process exited or there was a network error";
    case ncclInProgress:
        return "NCCL operation in progress";
    default:
        return "unknown result code";
    }
}

const char *nf_impl_GetLastError(ncclComm_t comm)
{
    static __thread char copy[256];
    ncclComm_t c = nf_comm_live(comm);
    if (c != NULL) {
        pthread_mutex_lock(&c->mu);
        snprintf(copy, sizeof copy, "%s", c->last_error);
        pthread_mutex_unlock(&c->mu);
        if (copy[0] != '\0')
            return copy;
    }
    pthread_mutex_lock(&s_mu);
    snprintf(copy, sizeof copy, "%s", s_last_error);
    pthread_mutex_unlock(&s_mu);
    return copy;
}

void nf_impl_ResetDebugInit(void) {}

void nf_impl_ResetDebugInitInternal(void) {}

/* ---------------------------------------------------------------------- */
/* Creation. */

/* Checks the arguments every init form shares. */
static ncclResult_t init_checks(const char *call, ncclComm_t *comm, int nranks, int rank,
                                const ncclUniqueId *id, const ncclConfig_t *config)
{
    if (comm == NULL)
        return nf_fail(NULL, ncclInvalidArgument, call, "comm is NULL");
    if (nranks < 1)
        return nf_fail(NULL, ncclInvalidArgument, call, "nranks is %d, expected at least 1",
                       nranks);
    if (rank < 0 || rank >= nranks)
        return nf_fail(NULL, ncclInvalidArgument, call, "rank %d is outside 0..%d", rank,
                       nranks - 1);
    if (id != NULL && memcmp(id->internal, NF_ID_MAGIC, 16) != 0)
        return nf_fail(NULL, ncclInvalidArgument, call,
                       "the unique id was not made by mpicollab's ncclGetUniqueId (does the rank "
                       "that made it load the real NCCL?)");
    if (config != NULL && (config->magic != 0xcafebeef || config->size < 3 * sizeof(int)))
        return nf_fail(NULL, ncclInvalidArgument, call,
                       "config was not initialised with NCCL_CONFIG_INITIALIZER");
    if (nf_devops() == NULL)
        return nf_fail(NULL, ncclInvalidUsage, call,
                       "no device support: the NCCL face needs the CUDA driver and "
                       "libmpicollab-cuda.so (COLLAB_CUDA, docs/cuda.md)");
    return ncclSuccess;
}

/* Sets name=value unless the program set it; fails when it set another. */
static ncclResult_t env_claim(const char *call, const char *name, int value)
{
    char text[32];
    snprintf(text, sizeof text, "%d", value);
    const char *cur = getenv(name);
    if (cur != NULL && strcmp(cur, text) != 0)
        return nf_fail(NULL, ncclInvalidUsage, call, "%s='%s' but the program asks for %s", name,
                       cur, text);
    if (cur == NULL && setenv(name, text, 1) != 0)
        return nf_fail(NULL, ncclSystemError, call, "setenv(%s): %m", name);
    return ncclSuccess;
}

/* Makes the world (joining the swarm if nobody did) or derives from it. */
static ncclResult_t init_rank(const char *call, ncclComm_t *out, int nranks, int rank)
{
    pthread_mutex_lock(&s_mu);
    int live = s_nlive;
    pthread_mutex_unlock(&s_mu);
    pthread_mutex_lock(&s_mu);
    bool holding = s_holding;
    pthread_mutex_unlock(&s_mu);
    if (!holding && collab_finalized())
        return nf_fail(NULL, ncclInvalidUsage, call, "mpicollab has already left the swarm");
    if (!holding && collab_retain() != COLLAB_OK) {
        /* Nobody joined yet (an MPI face that did is retained above). */
        ncclResult_t rc = env_claim(call, "COLLAB_WORLD_SIZE", nranks);
        if (rc == ncclSuccess)
            rc = env_claim(call, "COLLAB_RANK", rank);
        if (rc != ncclSuccess)
            return rc;
        /* The rank is the program's: while another peer holds it (a
           restarted process whose old self is not yet taken out), wait as
           a standby rather than take another (docs/nccl.md §2). */
        if (getenv("COLLAB_RANK_REQUIRED") == NULL && setenv("COLLAB_RANK_REQUIRED", "1", 1) != 0)
            return nf_fail(NULL, ncclSystemError, call, "setenv(COLLAB_RANK_REQUIRED): %m");
        collab_init_args_t args = {.requested_thread_level = 3, .abi_name = "nccl"};
        int st = collab_init(&args);
        if (st != COLLAB_OK)
            return nf_fail(NULL, nf_result_of(st), call, "could not join the swarm: %s",
                           collab_strerror(st));
    }
    if (!holding) {
        pthread_mutex_lock(&s_mu);
        s_holding = true;
        pthread_mutex_unlock(&s_mu);
    }
    /* The program's streams wait on our flags: a whole-context
       synchronisation inside the core would wait for them forever. */
    collab_device_ordered();
    collab_comm_t *world = collab_comm_world();
    if (world == NULL)
        return nf_fail(NULL, ncclInternalError, call, "the core has no world communicator");
    int wsize = collab_comm_size(world), wrank = collab_comm_rank(world);
    if (nranks != wsize)
        return nf_fail(NULL, ncclInvalidUsage, call,
                       "nranks %d differs from the swarm's world size %d; communicators over "
                       "part of the world come from ncclCommSplit",
                       nranks, wsize);
    if (rank != wrank)
        return nf_fail(NULL, ncclInvalidUsage, call,
                       "rank %d was asked for, but this peer holds rank %d of the swarm", rank,
                       wrank);
    collab_comm_t *core = world;
    bool owns = false;
    bool world_in_use = false;
    pthread_mutex_lock(&s_mu);
    for (ncclComm_t c = s_live; c != NULL; c = c->next_live)
        world_in_use |= c->core == world;
    pthread_mutex_unlock(&s_mu);
    if (live > 0 && world_in_use) {
        int st = collab_comm_dup(world, &core);
        if (st != COLLAB_OK)
            return nf_fail(NULL, nf_result_of(st), call, "collab_comm_dup: %s",
                           collab_strerror(st));
        owns = true;
    }
    ncclComm_t c = comm_new(core, owns);
    if (c == NULL) {
        if (owns)
            (void)collab_comm_free(&core);
        return nf_fail(NULL, ncclSystemError, call, "out of memory");
    }
    *out = c;
    return ncclSuccess;
}

ncclResult_t nf_impl_CommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    ncclResult_t rc = init_checks("ncclCommInitRank", comm, nranks, rank, &commId, NULL);
    return rc != ncclSuccess ? rc : init_rank("ncclCommInitRank", comm, nranks, rank);
}

ncclResult_t nf_impl_CommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                        ncclConfig_t *config)
{
    ncclResult_t rc = init_checks("ncclCommInitRankConfig", comm, nranks, rank, &commId, config);
    return rc != ncclSuccess ? rc : init_rank("ncclCommInitRankConfig", comm, nranks, rank);
}

ncclResult_t nf_impl_CommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                          ncclUniqueId *commIds, ncclConfig_t *config)
{
    const char *call = "ncclCommInitRankScalable";
    if (nId < 1 || commIds == NULL)
        return nf_fail(NULL, ncclInvalidArgument, call, "nId %d with commIds %p", nId,
                       (void *)commIds);
    ncclResult_t rc = init_checks(call, newcomm, nranks, myrank, &commIds[0], config);
    return rc != ncclSuccess ? rc : init_rank(call, newcomm, nranks, myrank);
}

ncclResult_t nf_impl_CommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                               ncclConfig_t *config)
{
    const char *call = "ncclCommSplit";
    ncclComm_t c = nf_comm_live(comm);
    if (c == NULL)
        return nf_fail(NULL, ncclInvalidArgument, call, "invalid communicator %p", (void *)comm);
    if (newcomm == NULL)
        return nf_fail(c, ncclInvalidArgument, call, "newcomm is NULL");
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
        return nf_fail(c, ncclInvalidArgument, call, "color %d is negative", color);
    if (config != NULL && config->magic != 0xcafebeef)
        return nf_fail(c, ncclInvalidArgument, call,
                       "config was not initialised with NCCL_CONFIG_INITIALIZER");
    collab_comm_t *core = NULL;
    int st = collab_comm_split(c->core, color < 0 ? -1 : color, key, &core);
    if (st != COLLAB_OK)
        return nf_fail(c, nf_result_of(st), call, "%s", collab_strerror(st));
    if (core == NULL) {
        *newcomm = NULL;
        return ncclSuccess;
    }
    ncclComm_t n = comm_new(core, true);
    if (n == NULL) {
        (void)collab_comm_free(&core);
        return nf_fail(c, ncclSystemError, call, "out of memory");
    }
    *newcomm = n;
    return ncclSuccess;
}

/* ---------------------------------------------------------------------- */
/* Queries. */

ncclResult_t nf_impl_CommCount(const ncclComm_t comm, int *count)
{
    ncclComm_t c = nf_comm_live(comm);
    if (c == NULL)
        return nf_fail(NULL, ncclInvalidArgument, "ncclCommCount", "invalid communicator %p",
                       (void *)comm);
    if (count == NULL)
        return nf_fail(c, ncclInvalidArgument, "ncclCommCount", "count is NULL");
    *count = c->nranks;
    return ncclSuccess;
}

ncclResult_t nf_impl_CommUserRank(const ncclComm_t comm, int *rank)
{
    ncclComm_t c = nf_comm_live(comm);
    if (c == NULL)
        return nf_fail(NULL, ncclInvalidArgument, "ncclCommUserRank", "invalid communicator %p",
                       (void *)comm);
    if (rank == NULL)
        return nf_fail(c, ncclInvalidArgument, "ncclCommUserRank", "rank is NULL");
    *rank = c->rank;
    return ncclSuccess;
}

ncclResult_t nf_impl_CommCuDevice(const ncclComm_t comm, int *device)
{
    ncclComm_t c = nf_comm_live(comm);
    if (c == NULL)
        return nf_fail(NULL, ncclInvalidArgument, "ncclCommCuDevice", "invalid communicator %p",
                       (void *)comm);
    if (device == NULL)
        return nf_fail(c, ncclInvalidArgument, "ncclCommCuDevice", "device is NULL");
    *device = c->device < 0 ? 0 : c->device;
    return ncclSuccess;
}

ncclResult_t nf_impl_CommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    ncclComm_t c = nf_comm_live(comm);
    if (c == NULL)
        return nf_fail(NULL, ncclInvalidArgument, "ncclCommGetAsyncError",
                       "invalid communicator %p", (void *)comm);
    if (asyncError == NULL)
        return nf_fail(c, ncclInvalidArgument, "ncclCommGetAsyncError", "asyncError is NULL");
    pthread_mutex_lock(&c->mu);
    *asyncError = c->async_error;
    pthread_mutex_unlock(&c->mu);
    return ncclSuccess;
}

/* ---------------------------------------------------------------------- */
/* Release. */

static ncclResult_t comm_release(const char *call, ncclComm_t comm, bool drain)
{
    int left = 0;
    if (comm == NULL || !comm_unlink(comm, &left))
        return nf_fail(NULL, ncclInvalidArgument, call, "invalid communicator %p", (void *)comm);
    ncclComm_t c = comm;
    nf_follow_forget(c);
    nf_proxy_stop(c, drain);
    if (c->owns_core)
        (void)collab_comm_free(&c->core);
    c->magic = 0;
    pthread_mutex_lock(&s_mu);
    bool leave = left == 0 && s_holding;
    if (leave)
        s_holding = false;
    pthread_mutex_unlock(&s_mu);
    /* The last communicator gives this face's hold back: the peer leaves
       the swarm then, unless an MPI face still holds the core (it leaves
       at MPI_Finalize). */
    if (leave && collab_initialized() && !collab_finalized()) {
        int st = collab_finalize();
        if (st != COLLAB_OK)
            return nf_fail(NULL, nf_result_of(st), call, "leaving the swarm: %s",
                           collab_strerror(st));
    }
    return ncclSuccess;
}

ncclResult_t nf_impl_CommFinalize(ncclComm_t comm)
{
    ncclComm_t c = nf_comm_live(comm);
    if (c == NULL)
        return nf_fail(NULL, ncclInvalidArgument, "ncclCommFinalize", "invalid communicator %p",
                       (void *)comm);
    /* Waits for the queued operations; the communicator stays valid. */
    pthread_mutex_lock(&c->mu);
    while (c->done != c->issued)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    return ncclSuccess;
}

ncclResult_t nf_impl_CommDestroy(ncclComm_t comm)
{
    return comm_release("ncclCommDestroy", comm, true);
}

ncclResult_t nf_impl_CommAbort(ncclComm_t comm)
{
    return comm_release("ncclCommAbort", comm, false);
}

/* ---------------------------------------------------------------------- */
/* Memory. */

ncclResult_t nf_impl_MemAlloc(void **ptr, size_t size)
{
    if (ptr == NULL)
        return nf_fail(NULL, ncclInvalidArgument, "ncclMemAlloc", "ptr is NULL");
    const cl_devops_t *ops = nf_devops();
    if (ops == NULL || ops->dev_alloc == NULL)
        return nf_fail(NULL, ncclInvalidUsage, "ncclMemAlloc", "no device support");
    if (size == 0) {
        *ptr = NULL;
        return ncclSuccess;
    }
    void *p = NULL;
    if (ops->dev_alloc(&p, size) != 0)
        return nf_fail(NULL, ncclUnhandledCudaError, "ncclMemAlloc", "%zu bytes: %s", size,
                       ops->last_error());
    *ptr = p;
    return ncclSuccess;
}

ncclResult_t nf_impl_MemFree(void *ptr)
{
    if (ptr == NULL)
        return ncclSuccess;
    const cl_devops_t *ops = nf_devops();
    if (ops == NULL || ops->dev_free == NULL)
        return nf_fail(NULL, ncclInvalidUsage, "ncclMemFree", "no device support");
    if (ops->dev_free(ptr) != 0)
        return nf_fail(NULL, ncclUnhandledCudaError, "ncclMemFree", "%s", ops->last_error());
    return ncclSuccess;
}

/* Registration only speeds NCCL's own transports up: accepted, no effect. */
ncclResult_t nf_impl_CommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
    ncclComm_t c = nf_comm_live(comm);
    if (c == NULL)
        return nf_fail(NULL, ncclInvalidArgument, "ncclCommRegister", "invalid communicator %p",
                       (void *)comm);
    if (handle == NULL || (buff == NULL && size > 0))
        return nf_fail(c, ncclInvalidArgument, "ncclCommRegister", "NULL buffer or handle");
    *handle = buff != NULL ? buff : (void *)c;
    return ncclSuccess;
}

ncclResult_t nf_impl_CommDeregister(const ncclComm_t comm, void *handle)
{
    ncclComm_t c = nf_comm_live(comm);
    if (c == NULL)
        return nf_fail(NULL, ncclInvalidArgument, "ncclCommDeregister", "invalid communicator %p",
                       (void *)comm);
    if (handle == NULL)
        return nf_fail(c, ncclInvalidArgument, "ncclCommDeregister", "handle is NULL");
    return ncclSuccess;
}
