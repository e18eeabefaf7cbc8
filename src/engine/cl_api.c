/*  cl_api.c - the collab_* life cycle, communicators, requests,
    point-to-point and extensions (include/mpi_collab.h).

    These run on application threads.  They validate what the core needs
    to stay safe (NULL pointers, ranks, tags), build a request and hand it
    to the engine thread (cl_api_run); blocking calls wait on the request.
    Nothing here touches a socket.  The collectives are in cl_api_coll.c.
*/
#include "engine/cl_api_int.h"

#include "engine/cl_comm.h"
#include "engine/cl_fast.h"
#include "engine/cl_stage.h"
#include "util/cl_config.h"
#include "util/cl_device.h"
#include "util/cl_identity.h"
#include "util/cl_log.h"

#include <czmq.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t s_life = PTHREAD_MUTEX_INITIALIZER; /* init/finalize */
static cl_engine_t *_Atomic s_engine = NULL;
static atomic_int s_initialized = 0;
static atomic_int s_finalized = 0;
static collab_comm_t *s_world = NULL;
static collab_comm_t *s_self = NULL;
static bool s_atexit_set = false;
static pid_t s_pid = 0; /* the process that called collab_init */
static int s_holds = 0;  /* collab_init and collab_retain not yet given back (s_life) */

cl_engine_t *cl_api_engine(void)
{
    return atomic_load(&s_engine);
}

int cl_api_run(collab_request_t *req, collab_request_t **req_out)
{
    cl_engine_t *e = cl_api_engine();
    int rc = e != NULL ? cl_stage_in(req, cl_engine_wake_fd(e)) : COLLAB_ERR_NOT_INIT;
    if (rc == COLLAB_OK && req->op == CL_OP_COLL && req->comm != NULL) {
        /* Counted first, so that the engine grants no fast path while it
           is outstanding (cl_fast_grant), then the grant is dropped. */
        req->counted = true;
        atomic_fetch_add(&req->comm->coll_pending, 1);
        cl_fast_before_engine(atomic_load(&req->comm->fast));
    }
    if (rc == COLLAB_OK)
        rc = cl_engine_submit(e, req);
    if (rc != COLLAB_OK) {
        if (req->counted)
            atomic_fetch_sub(&req->comm->coll_pending, 1);
        req->counted = false;
        cl_request_destroy(&req);
        return rc;
    }
    if (req_out != NULL) {
        *req_out = req;
        return COLLAB_OK;
    }
    cl_request_wait(req);
    rc = cl_stage_out(req);
    cl_request_destroy(&req);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Life cycle. */

static void at_exit(void)
{
    /* A program that returns from main without MPI_Finalize still leaves
       the swarm gracefully (and stops the engine before ZeroMQ's own exit
       handler tears the context down under it). */
    if (atomic_load(&s_initialized) && !atomic_load(&s_finalized) && getpid() == s_pid) {
        pthread_mutex_lock(&s_life);
        s_holds = 1; /* the process ends: every face's hold goes with it */
        pthread_mutex_unlock(&s_life);
        (void)collab_finalize(); /* not in a forked child: it has no engine thread */
    }
}

/* COLLAB_LEAVE_ON=SIGTERM: the handler installed at init and the
   disposition it replaced. */
static struct sigaction s_old_term;
static atomic_int s_term_installed = 0;

static void on_leave_signal(int sig)
{
    int saved = errno;
    (void)collab_leave();
    /* End as the program asked before us: the previous handler, or the
       default action (the signal is blocked in here, so it is delivered
       once this handler returns). */
    (void)sigaction(sig, &s_old_term, NULL);
    atomic_store(&s_term_installed, 0);
    (void)raise(sig);
    errno = saved;
}

static void install_leave_signal(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_leave_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(SIGTERM, &sa, &s_old_term) != 0) {
        cl_warn("COLLAB_LEAVE_ON=SIGTERM: cannot install the handler: %s", strerror(errno));
        return;
    }
    atomic_store(&s_term_installed, 1);
    cl_debug("COLLAB_LEAVE_ON=SIGTERM: SIGTERM makes this peer leave the swarm gracefully");
}

/* At finalize: puts the previous disposition back, unless the program
   replaced our handler since (then it is the program's business). */
static void remove_leave_signal(void)
{
    if (!atomic_load(&s_term_installed))
        return;
    struct sigaction cur;
    if (sigaction(SIGTERM, NULL, &cur) == 0 && cur.sa_handler == on_leave_signal)
        (void)sigaction(SIGTERM, &s_old_term, NULL);
    atomic_store(&s_term_installed, 0);
}

int collab_leave(void)
{
    cl_engine_t *e = atomic_load(&s_engine);
    if (!atomic_load(&s_initialized) || atomic_load(&s_finalized) || e == NULL)
        return COLLAB_ERR_NOT_INIT;
    cl_engine_request_leave(e);
    return cl_engine_wait_left(e, cl_engine_leave_bound_ms(e)) ? COLLAB_OK : COLLAB_ERR_TIMEOUT;
}

int collab_init(const collab_init_args_t *args)
{
    pthread_mutex_lock(&s_life);
    if (atomic_load(&s_initialized) || atomic_load(&s_finalized)) {
        pthread_mutex_unlock(&s_life);
        return atomic_load(&s_finalized) ? COLLAB_ERR_NOT_INIT : COLLAB_ERR_ARG;
    }
    cl_config_t cfg;
    char err[512];
    if (cl_config_load(&cfg, err, sizeof err) != 0) {
        cl_error("%s", err);
        cl_config_clear(&cfg);
        pthread_mutex_unlock(&s_life);
        return COLLAB_ERR_CONFIG;
    }
    (void)cl_log_configure((cl_log_level_t)cfg.log_level, cfg.log_file);
    if (cl_device_init(cfg.cuda) != COLLAB_OK) {
        cl_config_clear(&cfg);
        pthread_mutex_unlock(&s_life);
        return COLLAB_ERR_CONFIG;
    }
    cl_device_set_pipeline(cfg.cuda_pipeline);
    if (args != NULL && args->abi_name != NULL)
        cl_debug("starting (%s face, thread level %d)", args->abi_name,
                 args->requested_thread_level);
    /* A library inside someone else's program: CZMQ must not take over
       SIGINT/SIGTERM. */
    zsys_handler_set(NULL);
    cl_identity_t *id = cl_identity_new(cfg.identity, err, sizeof err);
    if (id == NULL) {
        cl_error("%s", err);
        cl_config_clear(&cfg);
        pthread_mutex_unlock(&s_life);
        return COLLAB_ERR_CONFIG;
    }
    cl_engine_t *e = NULL;
    bool leave_on_sigterm = cfg.leave_on_sigterm;
    int rc = cl_engine_start(&cfg, &id, &e);
    cl_config_clear(&cfg);
    cl_identity_destroy(&id);
    if (rc != COLLAB_OK) {
        pthread_mutex_unlock(&s_life);
        return rc;
    }
    int rank = cl_engine_rank(e);
    s_world = cl_comm_new_world(cl_engine_world_size(e), rank);
    s_self = cl_comm_new_self(rank);
    if (s_world == NULL || s_self == NULL) {
        cl_error("out of memory creating the world communicator");
        cl_comm_destroy(&s_world);
        cl_comm_destroy(&s_self);
        cl_engine_stop(&e);
        pthread_mutex_unlock(&s_life);
        return COLLAB_ERR_NO_MEM;
    }
    atomic_store(&s_engine, e);
    s_holds = 1;
    s_pid = getpid();
    atomic_store(&s_initialized, 1);
    if (leave_on_sigterm)
        install_leave_signal();
    if (!s_atexit_set) {
        s_atexit_set = atexit(at_exit) == 0;
    }
    pthread_mutex_unlock(&s_life);
    return COLLAB_OK;
}

int collab_initialized(void)
{
    return atomic_load(&s_initialized);
}

int collab_finalized(void)
{
    return atomic_load(&s_finalized);
}

int collab_retain(void)
{
    pthread_mutex_lock(&s_life);
    bool running = atomic_load(&s_initialized) && !atomic_load(&s_finalized) &&
                   atomic_load(&s_engine) != NULL;
    if (running)
        s_holds++;
    pthread_mutex_unlock(&s_life);
    return running ? COLLAB_OK : COLLAB_ERR_NOT_INIT;
}

int collab_finalize(void)
{
    pthread_mutex_lock(&s_life);
    cl_engine_t *e = atomic_load(&s_engine);
    if (!atomic_load(&s_initialized) || atomic_load(&s_finalized) || e == NULL) {
        pthread_mutex_unlock(&s_life);
        return COLLAB_ERR_NOT_INIT;
    }
    if (s_holds > 1) { /* another face still uses the core */
        s_holds--;
        pthread_mutex_unlock(&s_life);
        return COLLAB_OK;
    }
    remove_leave_signal();
    int rc = cl_engine_stop(&e);
    /* The engine closed its sockets, but ZeroMQ writes what they still
       hold (the last sends, GOODBYE) from its own I/O thread: a process
       that ends right after finalize without exit handlers (_exit, a
       launcher's kill) would lose it, and a peer waiting on it would see
       a failure instead.  Ending ZeroMQ here waits until it is on the
       wire, at most the sockets' linger. */
    zsys_shutdown();
    atomic_store(&s_engine, NULL);
    atomic_store(&s_finalized, 1);
    /* The communicators stay readable (size, rank) after finalize, as MPI
       allows a few calls then; they are freed with the process. */
    pthread_mutex_unlock(&s_life);
    return rc;
}

void collab_abort(int code)
{
    cl_engine_t *e = atomic_load(&s_engine);
    if (e != NULL && !atomic_load(&s_finalized)) {
        cl_engine_goodbye_now(e, 300);
        /* Give ZeroMQ's I/O thread a moment to put the goodbyes on the wire. */
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    _exit(code);
}

int collab_world_size(void)
{
    cl_engine_t *e = atomic_load(&s_engine);
    return s_world != NULL ? s_world->size : e != NULL ? cl_engine_world_size(e)
                                                       : COLLAB_ERR_NOT_INIT;
}

int collab_world_rank(void)
{
    return s_world != NULL ? s_world->rank : COLLAB_ERR_NOT_INIT;
}

double collab_wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double collab_wtick(void)
{
    struct timespec ts;
    if (clock_getres(CLOCK_MONOTONIC, &ts) != 0)
        return 1e-9;
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int collab_processor_name(char *name, size_t len)
{
    if (name == NULL || len == 0)
        return COLLAB_ERR_ARG;
    if (gethostname(name, len) != 0) {
        strncpy(name, "unknown", len);
    }
    name[len - 1] = '\0';
    return COLLAB_OK;
}

/* ---------------------------------------------------------------------- */
/* Communicators. */

collab_comm_t *collab_comm_world(void)
{
    return atomic_load(&s_initialized) ? s_world : NULL;
}

collab_comm_t *collab_comm_self(void)
{
    return atomic_load(&s_initialized) ? s_self : NULL;
}

int collab_comm_size(const collab_comm_t *comm)
{
    return comm != NULL ? comm->size : COLLAB_ERR_COMM;
}

int collab_comm_rank(const collab_comm_t *comm)
{
    return comm != NULL ? comm->rank : COLLAB_ERR_COMM;
}

int collab_comm_world_rank_of(const collab_comm_t *comm, int r)
{
    return comm != NULL ? cl_comm_world_of(comm, r) : -1;
}

uint64_t collab_comm_id(const collab_comm_t *comm)
{
    return comm != NULL ? comm->id : 0;
}

int collab_comm_dup(collab_comm_t *comm, collab_comm_t **out)
{
    if (comm == NULL || out == NULL)
        return COLLAB_ERR_COMM;
    if (cl_api_engine() == NULL)
        return COLLAB_ERR_NOT_INIT;
    uint32_t idx = atomic_fetch_add(&comm->children, 1);
    uint64_t id = cl_comm_child_id(comm->id, idx, -1);
    int *map = malloc((size_t)comm->size * sizeof(int));
    if (map == NULL)
        return COLLAB_ERR_NO_MEM;
    for (int r = 0; r < comm->size; r++)
        map[r] = cl_comm_world_of(comm, r);
    collab_comm_t *c = cl_comm_new_derived(id, comm->size, comm->rank, map);
    free(map);
    if (c == NULL)
        return COLLAB_ERR_NO_MEM;
    *out = c;
    return COLLAB_OK;
}

typedef struct {
    int32_t present; /* 1; absent ranks' slots are zero-filled */
    int32_t colour;
    int32_t key;
} split_entry_t;

typedef struct {
    int key;
    int rank; /* parent comm rank */
} split_sort_t;

static int cmp_split(const void *a, const void *b)
{
    const split_sort_t *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    return (x->rank > y->rank) - (x->rank < y->rank);
}

int collab_comm_split(collab_comm_t *comm, int color, int key, collab_comm_t **out)
{
    if (comm == NULL || out == NULL)
        return COLLAB_ERR_COMM;
    if (cl_api_engine() == NULL)
        return COLLAB_ERR_NOT_INIT;
    *out = NULL;
    int n = comm->size;
    uint32_t idx = atomic_fetch_add(&comm->children, 1);
    split_entry_t mine = {1, color < 0 ? -1 : color, key};
    split_entry_t *all = calloc((size_t)n, sizeof *all);
    size_t *counts = malloc((size_t)n * sizeof(size_t));
    size_t *displs = malloc((size_t)n * sizeof(size_t));
    split_sort_t *sel = malloc((size_t)n * sizeof *sel);
    int rc = COLLAB_ERR_NO_MEM;
    if (all == NULL || counts == NULL || displs == NULL || sel == NULL)
        goto done;
    for (int r = 0; r < n; r++) {
        counts[r] = sizeof(split_entry_t);
        displs[r] = (size_t)r * sizeof(split_entry_t);
    }
    rc = collab_allgatherv(comm, &mine, sizeof mine, all, counts, displs, NULL);
    if (rc != COLLAB_OK || color < 0)
        goto done;
    /* The new communicator: the ranks that took part with this colour,
       ordered by (key, parent rank). */
    int k = 0;
    for (int r = 0; r < n; r++)
        if (all[r].present == 1 && all[r].colour == color)
            sel[k++] = (split_sort_t){all[r].key, r};
    qsort(sel, (size_t)k, sizeof *sel, cmp_split);
    int me = -1;
    int *map = malloc((size_t)(k > 0 ? k : 1) * sizeof(int));
    if (map == NULL) {
        rc = COLLAB_ERR_NO_MEM;
        goto done;
    }
    for (int i = 0; i < k; i++) {
        map[i] = cl_comm_world_of(comm, sel[i].rank);
        if (sel[i].rank == comm->rank)
            me = i;
    }
    if (me < 0) {
        free(map);
        cl_error("internal: this peer is missing from its own communicator split");
        rc = COLLAB_ERR_INTERNAL;
        goto done;
    }
    *out = cl_comm_new_derived(cl_comm_child_id(comm->id, idx, color), k, me, map);
    free(map);
    rc = *out != NULL ? COLLAB_OK : COLLAB_ERR_NO_MEM;
done:
    free(all);
    free(counts);
    free(displs);
    free(sel);
    return rc;
}

int collab_comm_create_group(collab_comm_t *comm, const int *ranks, int n, int tag,
                             collab_comm_t **out)
{
    if (comm == NULL || out == NULL)
        return COLLAB_ERR_COMM;
    if (cl_api_engine() == NULL)
        return COLLAB_ERR_NOT_INIT;
    if (n < 1 || n > comm->size || ranks == NULL)
        return COLLAB_ERR_ARG;
    int *map = malloc((size_t)n * sizeof(int));
    unsigned char *seen = calloc((size_t)comm->size, 1);
    int rc = COLLAB_ERR_NO_MEM, me = -1;
    if (map == NULL || seen == NULL)
        goto done;
    rc = COLLAB_ERR_ARG;
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= comm->size || seen[ranks[i]])
            goto done;
        seen[ranks[i]] = 1;
        map[i] = cl_comm_world_of(comm, ranks[i]);
        if (ranks[i] == comm->rank)
            me = i;
    }
    if (me < 0)
        goto done;
    rc = COLLAB_ERR_NO_MEM;
    uint64_t id = cl_comm_group_id(comm, map, n, tag);
    if (id == 0)
        goto done;
    *out = cl_comm_new_derived(id, n, me, map);
    rc = *out != NULL ? COLLAB_OK : COLLAB_ERR_NO_MEM;
done:
    free(map);
    free(seen);
    return rc;
}

int collab_comm_free(collab_comm_t **comm_p)
{
    if (comm_p == NULL || *comm_p == NULL)
        return COLLAB_ERR_COMM;
    collab_comm_t *c = *comm_p;
    if (c->kind != CL_COMM_DERIVED)
        return COLLAB_ERR_COMM;
    *comm_p = NULL;
    (void)cl_hier_free(c); /* its host communicators first */
    if (cl_api_engine() == NULL) {
        cl_comm_destroy(&c);
        return COLLAB_OK;
    }
    collab_request_t *req = cl_request_new(CL_OP_COMM_FREE);
    if (req == NULL)
        return COLLAB_ERR_NO_MEM;
    req->comm = c; /* the engine frees it after dropping its state */
    return cl_api_run(req, NULL);
}

/* ---------------------------------------------------------------------- */
/* Requests. */

static void fill_status(const collab_request_t *req, collab_status_info_t *st)
{
    if (st != NULL)
        *st = req->info;
}

int collab_wait(collab_request_t **req_p, collab_status_info_t *st)
{
    if (req_p == NULL)
        return COLLAB_ERR_REQUEST;
    if (*req_p == NULL) {
        if (st != NULL)
            *st = (collab_status_info_t){-1, -1, 0, 0, 0};
        return COLLAB_OK;
    }
    collab_request_t *req = *req_p;
    cl_request_wait(req);
    fill_status(req, st);
    int rc = cl_stage_out(req);
    cl_request_destroy(req_p);
    return rc;
}

int collab_test(collab_request_t **req_p, int *flag, collab_status_info_t *st)
{
    if (req_p == NULL || flag == NULL)
        return COLLAB_ERR_REQUEST;
    if (*req_p == NULL) {
        *flag = 1;
        if (st != NULL)
            *st = (collab_status_info_t){-1, -1, 0, 0, 0};
        return COLLAB_OK;
    }
    if (!cl_request_done(*req_p)) {
        *flag = 0;
        return COLLAB_OK;
    }
    *flag = 1;
    return collab_wait(req_p, st);
}

int collab_wait_any(collab_request_t *const *reqs, int n, int *index)
{
    if (index == NULL || n < 0 || (n > 0 && reqs == NULL))
        return COLLAB_ERR_ARG;
    *index = cl_request_wait_any(reqs, n);
    return COLLAB_OK;
}

int collab_request_free(collab_request_t **req_p)
{
    if (req_p == NULL || *req_p == NULL)
        return COLLAB_ERR_REQUEST;
    if (cl_stage_pending(*req_p)) {
        /* Results still to be copied into device memory: only this thread
           can do it, so freeing such a request waits for it. */
        cl_request_wait(*req_p);
        (void)cl_stage_out(*req_p);
        cl_request_destroy(req_p);
        return COLLAB_OK;
    }
    cl_request_detach(*req_p);
    *req_p = NULL;
    return COLLAB_OK;
}

int collab_cancel(collab_request_t *req)
{
    if (req == NULL)
        return COLLAB_ERR_REQUEST;
    if (req->op != CL_OP_RECV && req->op != CL_OP_PROBE && req->op != CL_OP_SEND)
        return COLLAB_OK; /* collectives run to completion */
    if (cl_request_done(req))
        return COLLAB_OK;
    collab_request_t *c = cl_request_new(CL_OP_CANCEL);
    if (c == NULL)
        return COLLAB_ERR_NO_MEM;
    c->target = req;
    return cl_api_run(c, NULL);
}

/* ---------------------------------------------------------------------- */
/* Point-to-point. */

static int check_peer(const collab_comm_t *comm, int peer, bool any_ok)
{
    if (comm == NULL)
        return COLLAB_ERR_COMM;
    if (peer == COLLAB_ANY_SOURCE && any_ok)
        return COLLAB_OK;
    if (peer < 0 || peer >= comm->size)
        return COLLAB_ERR_RANK;
    return COLLAB_OK;
}

static int check_tag(int tag, bool any_ok)
{
    if (tag == COLLAB_ANY_TAG && any_ok)
        return COLLAB_OK;
    return tag < 0 ? COLLAB_ERR_TAG : COLLAB_OK;
}

/* Checks the arguments every point-to-point call shares: the peer rank
   (wildcard allowed for receives), the tag, and a buffer for a non-empty
   message. */
static int check_p2p(const collab_comm_t *comm, int peer, int tag, bool any_ok, const void *buf,
                     size_t bytes)
{
    int rc = check_peer(comm, peer, any_ok);
    if (rc == COLLAB_OK)
        rc = check_tag(tag, any_ok);
    if (rc == COLLAB_OK && bytes > 0 && buf == NULL)
        rc = COLLAB_ERR_ARG;
    return rc;
}

static int send_mode(collab_comm_t *comm, const void *buf, size_t bytes, int dest, int tag,
                     bool sync, collab_request_t **req)
{
    int rc = check_p2p(comm, dest, tag, false, buf, bytes);
    if (rc != COLLAB_OK)
        return rc;
    collab_request_t *r = cl_request_new(CL_OP_SEND);
    if (r == NULL)
        return COLLAB_ERR_NO_MEM;
    r->comm = comm;
    r->sbuf = buf;
    r->bytes = bytes;
    r->peer = dest;
    r->tag = tag;
    r->sync = sync;
    rc = cl_api_run(r, req);
    /* A nonblocking send returns once the engine has handled it, so that
       a standard send that left is complete when MPI_Test looks (as an
       eager send is in MPI libraries), and requests complete in order. */
    if (rc == COLLAB_OK && req != NULL)
        cl_request_wait_taken(*req);
    return rc;
}

int collab_send(collab_comm_t *comm, const void *buf, size_t bytes, int dest, int tag,
                collab_request_t **req)
{
    return send_mode(comm, buf, bytes, dest, tag, false, req);
}

int collab_ssend(collab_comm_t *comm, const void *buf, size_t bytes, int dest, int tag,
                 collab_request_t **req)
{
    return send_mode(comm, buf, bytes, dest, tag, true, req);
}

int collab_recv(collab_comm_t *comm, void *buf, size_t bytes, int src, int tag,
                collab_status_info_t *st, collab_request_t **req)
{
    int rc = check_p2p(comm, src, tag, true, buf, bytes);
    if (rc != COLLAB_OK)
        return rc;
    collab_request_t *r = cl_request_new(CL_OP_RECV);
    if (r == NULL)
        return COLLAB_ERR_NO_MEM;
    r->comm = comm;
    r->buf = buf;
    r->bytes = bytes;
    r->peer = src;
    r->tag = tag;
    if (req != NULL)
        return cl_api_run(r, req);
    cl_engine_t *e = cl_api_engine();
    rc = e != NULL ? cl_stage_in(r, cl_engine_wake_fd(e)) : COLLAB_ERR_NOT_INIT;
    if (rc == COLLAB_OK)
        rc = cl_engine_submit(e, r);
    if (rc != COLLAB_OK) {
        cl_request_destroy(&r);
        return rc;
    }
    cl_request_wait(r);
    fill_status(r, st);
    rc = cl_stage_out(r);
    cl_request_destroy(&r);
    return rc;
}

int collab_probe(collab_comm_t *comm, int src, int tag, int blocking, int *flag,
                 collab_status_info_t *st, collab_message_t **msg_p)
{
    int rc = check_peer(comm, src, true);
    if (rc == COLLAB_OK)
        rc = check_tag(tag, true);
    if (rc == COLLAB_OK && flag == NULL)
        rc = COLLAB_ERR_ARG;
    if (rc != COLLAB_OK)
        return rc;
    collab_request_t *r = cl_request_new(CL_OP_PROBE);
    if (r == NULL)
        return COLLAB_ERR_NO_MEM;
    r->comm = comm;
    r->peer = src;
    r->tag = tag;
    r->blocking = blocking != 0;
    r->take = msg_p != NULL;
    cl_engine_t *e = cl_api_engine();
    rc = e != NULL ? cl_engine_submit(e, r) : COLLAB_ERR_NOT_INIT;
    if (rc != COLLAB_OK) {
        cl_request_destroy(&r);
        return rc;
    }
    cl_request_wait(r);
    rc = r->status;
    *flag = r->found ? 1 : 0;
    if (rc == COLLAB_OK && r->found) {
        fill_status(r, st);
        if (msg_p != NULL) {
            *msg_p = (collab_message_t *)r->msg;
            r->msg = NULL;
        }
    }
    cl_request_destroy(&r);
    return rc;
}

int collab_mrecv(collab_message_t **msg_p, void *buf, size_t bytes, collab_status_info_t *st)
{
    if (msg_p == NULL || *msg_p == NULL)
        return COLLAB_ERR_REQUEST;
    cl_p2p_msg_t *m = (cl_p2p_msg_t *)*msg_p;
    if (bytes > 0 && buf == NULL)
        return COLLAB_ERR_ARG;
    size_t n = m->len <= bytes ? m->len : bytes;
    cl_devattr_t dev;
    int kind = n > 0 ? cl_device_kind(buf, n, &dev) : CL_DEVQ_HOST;
    int rc = m->len <= bytes ? COLLAB_OK : COLLAB_ERR_TRUNCATE;
    if (kind == CL_DEVQ_DEVICE)
        rc = cl_device_h2d(&dev, buf, m->data, n) == COLLAB_OK ? rc : COLLAB_ERR_INTERNAL;
    else if (kind != CL_DEVQ_HOST)
        rc = COLLAB_ERR_ARG;
    else if (n > 0)
        memcpy(buf, m->data, n);
    if (st != NULL)
        *st = (collab_status_info_t){m->src, m->tag, rc, 0, n};
    cl_p2p_msg_free(m);
    *msg_p = NULL;
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Extensions. */

int collab_step(void)
{
    collab_request_t *r = cl_request_new(CL_OP_STEP);
    if (r == NULL)
        return COLLAB_ERR_NO_MEM;
    return cl_api_run(r, NULL);
}

int collab_state_follow(const collab_follow_t *v, size_t n)
{
    if (v == NULL && n > 0)
        return COLLAB_ERR_ARG;
    if (n == 0)
        return COLLAB_OK;
    collab_request_t *r = cl_request_new(CL_OP_FOLLOW);
    if (r == NULL)
        return COLLAB_ERR_NO_MEM;
    r->follow = v;
    r->nfollow = n;
    return cl_api_run(r, NULL);
}

int collab_set_weight(double weight)
{
    /* The bound of COLLAB_WEIGHT: a larger weight on the wire is refused
       by every peer as hostile (docs/security.md §3). */
    if (!(weight > 0) || weight > 1e9)
        return COLLAB_ERR_ARG;
    /* All-reduces through host leaders add hosts' sums unweighted: the
       members decided on them with every weight 1, for good. */
    if (weight != 1.0 && cl_hier_in_use()) {
        cl_error("MPIX_Collab_set_weight(%g): all-reduces go through host leaders, which count "
                 "every rank once; run with COLLAB_HOST_LEADER=0 to use weights",
                 weight);
        return COLLAB_ERR_ARG;
    }
    collab_request_t *r = cl_request_new(CL_OP_WEIGHT);
    if (r == NULL)
        return COLLAB_ERR_NO_MEM;
    r->weight = weight;
    return cl_api_run(r, NULL);
}

int collab_report(const char *name, double value)
{
    cl_engine_t *e = cl_api_engine();
    if (e == NULL)
        return COLLAB_ERR_NOT_INIT;
    return cl_engine_report_value(e, name, value);
}

int collab_last_info(collab_info_t *info)
{
    if (info == NULL)
        return COLLAB_ERR_ARG;
    cl_engine_t *e = cl_api_engine();
    if (e == NULL)
        return COLLAB_ERR_NOT_INIT;
    cl_engine_last_info(e, info);
    return COLLAB_OK;
}
