/*  cli_request.c - requests, the Wait/Test families and status queries.

    A face request wraps a core collab_request_t.  When the core operation
    completes, its result is cached in the face request (done = 1) and the
    optional finish hook runs (nonblocking collectives use it to copy a
    result block and free their arrays); the handle stays valid until a
    Wait/Test reports the completion.  Caching lets MPI_Testall and
    MPI_Request_get_status look at requests without consuming them.
    Requests freed by MPI_Request_free while active are kept on the side
    and released by cli_req_sweep() once they complete.

    Status fields: receives report source, tag and byte count; sends and
    collectives report the empty status (MPI_ANY_SOURCE, MPI_ANY_TAG,
    count 0).  Counts are derived from bytes with the datatype's extent.
*/
#include "cli.h"
#include "cli_impl.h"
#include "cli_tmap.h"

#include <stdlib.h>
#include <string.h>

static const collab_status_info_t cli_empty_info = {.source = -1, .tag = -1};

static cli_req_t *cli_req_alloc(int kind, cli_comm_t *comm)
{
    cli_req_t *r = calloc(1, sizeof *r);
    if (r != NULL) {
        r->kind = kind;
        r->comm = comm;
    }
    return r;
}

int cli_req_start(cli_call_t *call, int kind, cli_comm_t *comm, collab_request_t *core,
                  cli_req_finish_fn finish, void *aux, MPI_Request *out)
{
    cli_req_sweep(0);
    cli_req_t *r = cli_req_alloc(kind, comm);
    if (r == NULL || cli_req_register(r, out) != MPI_SUCCESS) {
        free(r);
        /* The operation is already under way: complete it here so that
           its buffers and hook state are released. */
        if (finish == NULL) {
            collab_request_free(&core);
        } else {
            cli_req_t tmp = {.kind = kind, .comm = comm, .aux = aux};
            collab_status_info_t st = cli_empty_info;
            finish(&tmp, collab_wait(&core, &st), &st);
        }
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of request handles");
    }
    r->core = core;
    r->finish = finish;
    r->aux = aux;
    return MPI_SUCCESS;
}

int cli_req_done(cli_call_t *call, int kind, cli_comm_t *comm, int status,
                 const collab_status_info_t *st, MPI_Request *out)
{
    cli_req_t *r = cli_req_alloc(kind, comm);
    if (r == NULL || cli_req_register(r, out) != MPI_SUCCESS) {
        free(r);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of request handles");
    }
    r->done = 1;
    r->status = status;
    r->st = st ? *st : cli_empty_info;
    return MPI_SUCCESS;
}

int cli_req_adopt(cli_req_t *r, MPI_Request inner)
{
    int why = 0;
    cli_req_t *i = cli_req_lookup(inner, &why);
    if (i == NULL)
        return COLLAB_ERR_INTERNAL;
    r->kind = i->kind;
    r->core = i->core;
    r->finish = i->finish;
    r->aux = i->aux;
    r->done = i->done;
    r->status = i->status;
    r->st = i->st;
    cli_lock();
    cli_table_remove(&cli.reqs, i->index);
    cli_unlock();
    free(i);
    return COLLAB_OK;
}

/* Brings r up to date: returns 1 when its result is cached. */
static int cli_req_poll(cli_req_t *r, int blocking)
{
    if (!r->done && r->core == NULL && r->pers != NULL)
        cli_persist_flush(); /* started by another thread meanwhile */
    if (r->done)
        return 1;
    if (r->kind == CLI_REQ_GREQ)
        return cli_greq_poll(r, blocking);
    collab_status_info_t st = cli_empty_info;
    int status;
    if (blocking) {
        status = collab_wait(&r->core, &st);
    } else {
        int flag = 0;
        status = collab_test(&r->core, &flag, &st);
        if (!flag && status == COLLAB_OK)
            return 0;
    }
    r->core = NULL;
    if (status == COLLAB_OK && st.error != COLLAB_OK)
        status = st.error;
    if (r->finish != NULL)
        status = r->finish(r, status, &st);
    r->finish = NULL;
    r->status = status;
    r->st = st;
    r->done = 1;
    return 1;
}

void cli_req_release(cli_req_t *r)
{
    cli_persist_destroy(&r->pers);
    cli_lock();
    cli_table_remove(&cli.reqs, r->index);
    cli_unlock();
    free(r);
}

/* Requests freed while active, with a finish hook to run. */
static cli_req_t **cli_orphans;
static int cli_norphans, cli_orphan_cap;

void cli_req_sweep(int blocking)
{
    /* Take the whole list, so that two threads never poll one request. */
    cli_lock();
    int n = cli_norphans;
    cli_req_t **mine = n > 0 ? malloc((size_t)n * sizeof *mine) : NULL;
    if (mine != NULL) {
        for (int i = 0; i < n; i++)
            mine[i] = cli_orphans[i];
        cli_norphans = 0;
    }
    cli_unlock();
    if (mine == NULL)
        return;
    for (int i = 0; i < n; i++) {
        if (cli_req_poll(mine[i], blocking)) {
            cli_req_release(mine[i]);
            mine[i] = NULL;
        }
    }
    cli_lock();
    for (int i = 0; i < n; i++) /* capacity is at least n: they were there */
        if (mine[i] != NULL)
            cli_orphans[cli_norphans++] = mine[i];
    cli_unlock();
    free(mine);
}

void cli_status_fill(MPI_Status *st, int kind, int status, const collab_status_info_t *info)
{
    (void)status;
    if (st == MPI_STATUS_IGNORE || st == NULL)
        return;
    int err = st->MPI_ERROR; /* set only by the multiple-completion calls */
    if (kind == CLI_REQ_RECV)
        cli_abi_status_set(st, info->source, info->tag, err, (MPI_Count)info->bytes,
                           info->cancelled);
    else
        cli_abi_status_set(st, MPI_ANY_SOURCE, MPI_ANY_TAG, err, 0, info->cancelled);
}

void cli_status_proc_null(MPI_Status *st)
{
    if (st == MPI_STATUS_IGNORE || st == NULL)
        return;
    cli_abi_status_set(st, MPI_PROC_NULL, MPI_ANY_TAG, st->MPI_ERROR, 0, 0);
}

static void cli_status_empty(MPI_Status *st)
{
    if (st == MPI_STATUS_IGNORE || st == NULL)
        return;
    cli_abi_status_set(st, MPI_ANY_SOURCE, MPI_ANY_TAG, st->MPI_ERROR, 0, 0);
}

/* Resolves one request handle; *r = NULL for MPI_REQUEST_NULL. */
static int cli_req_arg(cli_call_t *call, MPI_Request h, const char *arg, cli_req_t **r)
{
    int why = 0;
    *r = cli_req_lookup(h, &why);
    if (*r == NULL && why != CLI_H_NULL)
        return cli_err(call, MPI_ERR_REQUEST, arg, "not a request handle (or already completed)");
    return MPI_SUCCESS;
}

/* The records behind reqs[0..count) (NULL entries for MPI_REQUEST_NULL),
   in an array the caller frees.  On a bad argument returns NULL and sets
   *rc to the MPI error already raised through the error handler. */
static cli_req_t **cli_req_array(cli_call_t *call, int count, MPI_Request reqs[], int *rc)
{
    if (count > 0 && reqs == NULL) {
        *rc = cli_err(call, MPI_ERR_ARG, "array_of_requests", "must not be NULL");
        return NULL;
    }
    cli_req_t **rs = calloc((size_t)(count > 0 ? count : 1), sizeof *rs);
    if (rs == NULL) {
        *rc = cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
        return NULL;
    }
    for (int i = 0; i < count; i++) {
        int st = cli_req_arg(call, reqs[i], "array_of_requests", &rs[i]);
        if (st != MPI_SUCCESS) {
            free(rs);
            *rc = st;
            return NULL;
        }
        if (rs[i] != NULL && rs[i]->pers != NULL && !cli_persist_active(rs[i]->pers))
            rs[i] = NULL; /* an inactive persistent request counts as a null one */
    }
    return rs;
}

/* Reports and releases one completed request; returns its MPI code. */
static int cli_req_finish_one(cli_call_t *call, cli_req_t *r, MPI_Request *h, MPI_Status *st,
                              int report)
{
    if (r->kind == CLI_REQ_GREQ)
        return cli_greq_finish(call, r, h, st, report);
    cli_status_fill(st, r->kind, r->status, &r->st);
    int status = r->status;
    cli_comm_t *comm = r->comm;
    if (r->pers != NULL) {      /* a persistent request becomes inactive and stays */
        r->kind = CLI_REQ_COLL; /* an inactive request has the empty status */
        cli_persist_set_active(r->pers, 0);
        r->status = COLLAB_OK;
        r->st = cli_empty_info;
    } else {
        cli_req_release(r);
        *h = cli_abi_req_null();
    }
    if (status == COLLAB_OK)
        return MPI_SUCCESS;
    call->comm = comm;
    if (!report)
        return cli_class_of_status(status);
    return cli_err_core(call, status, "the operation");
}

int cli_impl_Wait(cli_call_t *call, MPI_Request *request, MPI_Status *status)
{
    cli_req_t *r;
    int rc = cli_req_arg(call, *request, "request", &r);
    if (rc != MPI_SUCCESS)
        return rc;
    if (r == NULL) {
        cli_status_empty(status);
        return MPI_SUCCESS;
    }
    cli_req_poll(r, 1);
    return cli_req_finish_one(call, r, request, status, 1);
}

int cli_impl_Test(cli_call_t *call, MPI_Request *request, int *flag, MPI_Status *status)
{
    cli_req_t *r;
    int rc = cli_req_arg(call, *request, "request", &r);
    if (rc != MPI_SUCCESS)
        return rc;
    if (r == NULL) {
        *flag = 1;
        cli_status_empty(status);
        return MPI_SUCCESS;
    }
    *flag = cli_req_poll(r, 0);
    if (!*flag)
        return MPI_SUCCESS;
    return cli_req_finish_one(call, r, request, status, 1);
}

int cli_impl_Request_get_status(cli_call_t *call, MPI_Request request, int *flag,
                                MPI_Status *status)
{
    cli_req_t *r;
    int rc = cli_req_arg(call, request, "request", &r);
    if (rc != MPI_SUCCESS)
        return rc;
    if (r == NULL) {
        *flag = 1;
        cli_status_empty(status);
        return MPI_SUCCESS;
    }
    *flag = cli_req_poll(r, 0);
    if (*flag && r->kind == CLI_REQ_GREQ)
        cli_greq_status(r, status);
    else if (*flag)
        cli_status_fill(status, r->kind, r->status, &r->st);
    return MPI_SUCCESS;
}

int cli_impl_Request_free(cli_call_t *call, MPI_Request *request)
{
    cli_req_t *r;
    int rc = cli_req_arg(call, *request, "request", &r);
    if (rc != MPI_SUCCESS)
        return rc;
    if (r == NULL)
        return cli_err(call, MPI_ERR_REQUEST, "request", "MPI_REQUEST_NULL cannot be freed");
    *request = cli_abi_req_null();
    if (r->kind == CLI_REQ_GREQ)
        return cli_greq_free(call, r);
    if (r->done) {
        cli_req_release(r);
        return MPI_SUCCESS;
    }
    if (r->finish == NULL) {
        collab_request_free(&r->core);
        cli_req_release(r);
        return MPI_SUCCESS;
    }
    cli_lock();
    if (cli_norphans == cli_orphan_cap) {
        int ncap = cli_orphan_cap ? 2 * cli_orphan_cap : 16;
        cli_req_t **n = realloc(cli_orphans, (size_t)ncap * sizeof *n);
        if (n == NULL) {
            cli_unlock();
            cli_req_poll(r, 1); /* cannot track it: complete it now */
            cli_req_release(r);
            return MPI_SUCCESS;
        }
        cli_orphans = n;
        cli_orphan_cap = ncap;
    }
    r->freed = 1;
    cli_orphans[cli_norphans++] = r;
    cli_unlock();
    return MPI_SUCCESS;
}

int cli_impl_Cancel(cli_call_t *call, MPI_Request *request)
{
    cli_req_t *r;
    int rc = cli_req_arg(call, *request, "request", &r);
    if (rc != MPI_SUCCESS)
        return rc;
    if (r == NULL)
        return cli_err(call, MPI_ERR_REQUEST, "request", "MPI_REQUEST_NULL cannot be cancelled");
    if (r->kind == CLI_REQ_COLL)
        return cli_err(call, MPI_ERR_REQUEST, "request",
                       "a nonblocking collective cannot be cancelled");
    if (r->kind == CLI_REQ_GREQ)
        return cli_greq_cancel(call, r);
    /* A receive not yet matched and a synchronous send whose receiver has
       not matched it are cancelled; other sends have completed already
       and complete normally (Test_cancelled then says false), which the
       standard allows. */
    if ((r->kind == CLI_REQ_RECV || r->kind == CLI_REQ_SEND) && !r->done && r->core != NULL) {
        int st = collab_cancel(r->core);
        if (st != COLLAB_OK)
            return cli_err_core(call, st, "cancelling the request");
    }
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Multiple completion. */

/* Fills the statuses of completed entries and returns MPI_SUCCESS or
   MPI_ERR_IN_STATUS / the first error (reported through a handler). */
static int cli_multi_result(cli_call_t *call, int n, const int *idx, cli_req_t **rs,
                            MPI_Request reqs[], MPI_Status statuses[])
{
    int first_err = MPI_SUCCESS;
    cli_comm_t *err_comm = NULL;
    for (int k = 0; k < n; k++) {
        int i = idx[k];
        MPI_Status *st = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[k];
        cli_comm_t *comm = rs[i]->comm;
        int code = cli_req_finish_one(call, rs[i], &reqs[i], st, 0);
        if (st != MPI_STATUS_IGNORE)
            st->MPI_ERROR = code;
        if (code != MPI_SUCCESS && first_err == MPI_SUCCESS) {
            first_err = code;
            err_comm = comm;
        }
    }
    if (first_err == MPI_SUCCESS)
        return MPI_SUCCESS;
    call->comm = err_comm;
    if (statuses == MPI_STATUSES_IGNORE)
        return cli_err(call, first_err, NULL, "a request completed with an error");
    return cli_err(call, MPI_ERR_IN_STATUS, NULL,
                   "a request completed with an error (see the MPI_ERROR fields)");
}

int cli_impl_Waitall(cli_call_t *call, int count, MPI_Request array_of_requests[],
                     MPI_Status array_of_statuses[])
{
    int rc = MPI_SUCCESS;
    cli_req_t **rs = cli_req_array(call, count, array_of_requests, &rc);
    if (rs == NULL)
        return rc;
    for (int i = 0; i < count; i++)
        if (rs[i] != NULL)
            cli_req_poll(rs[i], 1);
    /* Statuses are indexed like the requests: finish entry by entry. */
    int first = MPI_SUCCESS;
    cli_comm_t *err_comm = NULL;
    for (int i = 0; i < count; i++) {
        MPI_Status *st =
            array_of_statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &array_of_statuses[i];
        if (rs[i] == NULL) {
            cli_status_empty(st);
            if (st != MPI_STATUS_IGNORE)
                st->MPI_ERROR = MPI_SUCCESS;
            continue;
        }
        cli_comm_t *comm = rs[i]->comm;
        int code = cli_req_finish_one(call, rs[i], &array_of_requests[i], st, 0);
        if (st != MPI_STATUS_IGNORE)
            st->MPI_ERROR = code;
        if (code != MPI_SUCCESS && first == MPI_SUCCESS) {
            first = code;
            err_comm = comm;
        }
    }
    free(rs);
    if (first == MPI_SUCCESS)
        return MPI_SUCCESS;
    call->comm = err_comm;
    if (array_of_statuses == MPI_STATUSES_IGNORE)
        return cli_err(call, first, NULL, "a request completed with an error");
    return cli_err(call, MPI_ERR_IN_STATUS, NULL,
                   "a request completed with an error (see the MPI_ERROR fields)");
}

int cli_impl_Testall(cli_call_t *call, int count, MPI_Request array_of_requests[], int *flag,
                     MPI_Status array_of_statuses[])
{
    int rc = MPI_SUCCESS;
    cli_req_t **rs = cli_req_array(call, count, array_of_requests, &rc);
    if (rs == NULL)
        return rc;
    int all = 1;
    for (int i = 0; i < count; i++)
        if (rs[i] != NULL && !cli_req_poll(rs[i], 0))
            all = 0;
    *flag = all;
    free(rs);
    if (!all)
        return MPI_SUCCESS;
    return cli_impl_Waitall(call, count, array_of_requests, array_of_statuses);
}

/* Index of a completed (or completable now) entry, -1 if none, -2 if
   every entry is null. */
static int cli_find_done(cli_req_t **rs, int count, int poll)
{
    int active = 0;
    for (int i = 0; i < count; i++) {
        if (rs[i] == NULL)
            continue;
        active = 1;
        if (rs[i]->done || (poll && cli_req_poll(rs[i], 0)))
            return i;
    }
    return active ? -1 : -2;
}

/* With a generalized request among them, the core cannot wait for the
   set: test everything and nap until an entry completes (cli_greq.c). */
static int cli_wait_with_greq(cli_req_t **rs, int count)
{
    int greq = 0;
    for (int i = 0; i < count; i++)
        greq |= rs[i] != NULL && rs[i]->kind == CLI_REQ_GREQ;
    if (!greq)
        return -1;
    int i;
    while ((i = cli_find_done(rs, count, 1)) == -1)
        cli_greq_nap();
    return i;
}

int cli_impl_Waitany(cli_call_t *call, int count, MPI_Request array_of_requests[], int *indx,
                     MPI_Status *status)
{
    int rc = MPI_SUCCESS;
    cli_req_t **rs = cli_req_array(call, count, array_of_requests, &rc);
    if (rs == NULL)
        return rc;
    int i = cli_find_done(rs, count, 0);
    if (i == -1)
        i = cli_wait_with_greq(rs, count);
    if (i == -1) {
        collab_request_t **cores = calloc((size_t)count, sizeof *cores);
        if (cores == NULL) {
            free(rs);
            return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
        }
        for (int k = 0; k < count; k++)
            cores[k] = rs[k] ? rs[k]->core : NULL;
        int st = collab_wait_any(cores, count, &i);
        free(cores);
        if (st != COLLAB_OK || i < 0 || i >= count || rs[i] == NULL) {
            free(rs);
            return cli_err_core(call, st != COLLAB_OK ? st : COLLAB_ERR_INTERNAL,
                                "waiting for any request");
        }
        cli_req_poll(rs[i], 1);
    }
    if (i == -2) {
        free(rs);
        *indx = MPI_UNDEFINED;
        cli_status_empty(status);
        return MPI_SUCCESS;
    }
    *indx = i;
    rc = cli_req_finish_one(call, rs[i], &array_of_requests[i], status, 1);
    free(rs);
    return rc;
}

int cli_impl_Testany(cli_call_t *call, int count, MPI_Request array_of_requests[], int *indx,
                     int *flag, MPI_Status *status)
{
    int rc = MPI_SUCCESS;
    cli_req_t **rs = cli_req_array(call, count, array_of_requests, &rc);
    if (rs == NULL)
        return rc;
    int i = cli_find_done(rs, count, 1);
    if (i < 0) {
        free(rs);
        *indx = MPI_UNDEFINED;
        *flag = i == -2;
        if (i == -2)
            cli_status_empty(status);
        return MPI_SUCCESS;
    }
    *flag = 1;
    *indx = i;
    rc = cli_req_finish_one(call, rs[i], &array_of_requests[i], status, 1);
    free(rs);
    return rc;
}

static int cli_some(cli_call_t *call, int incount, MPI_Request reqs[], int *outcount, int indices[],
                    MPI_Status statuses[], int blocking)
{
    int rc = MPI_SUCCESS;
    cli_req_t **rs = cli_req_array(call, incount, reqs, &rc);
    if (rs == NULL)
        return rc;
    int first = cli_find_done(rs, incount, 1);
    if (first == -2) {
        free(rs);
        *outcount = MPI_UNDEFINED;
        return MPI_SUCCESS;
    }
    if (first == -1 && blocking)
        first = cli_wait_with_greq(rs, incount);
    if (first == -1 && blocking) {
        /* Wait for any entry without consuming it: it is reported below
           with the others that completed meanwhile. */
        collab_request_t **cores = calloc((size_t)incount, sizeof *cores);
        if (cores == NULL) {
            free(rs);
            return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
        }
        for (int k = 0; k < incount; k++)
            cores[k] = rs[k] != NULL && !rs[k]->done ? rs[k]->core : NULL;
        int i = -1;
        int st = collab_wait_any(cores, incount, &i);
        free(cores);
        if (st != COLLAB_OK || i < 0 || i >= incount || rs[i] == NULL) {
            free(rs);
            return cli_err_core(call, st != COLLAB_OK ? st : COLLAB_ERR_INTERNAL,
                                "waiting for some requests");
        }
        cli_req_poll(rs[i], 1);
    }
    int n = 0;
    for (int i = 0; i < incount; i++)
        if (rs[i] != NULL && (rs[i]->done || cli_req_poll(rs[i], 0)))
            indices[n++] = i;
    *outcount = n;
    rc = n > 0 ? cli_multi_result(call, n, indices, rs, reqs, statuses) : MPI_SUCCESS;
    free(rs);
    return rc;
}

int cli_impl_Waitsome(cli_call_t *call, int incount, MPI_Request array_of_requests[], int *outcount,
                      int array_of_indices[], MPI_Status array_of_statuses[])
{
    return cli_some(call, incount, array_of_requests, outcount, array_of_indices, array_of_statuses,
                    1);
}

int cli_impl_Testsome(cli_call_t *call, int incount, MPI_Request array_of_requests[], int *outcount,
                      int array_of_indices[], MPI_Status array_of_statuses[])
{
    return cli_some(call, incount, array_of_requests, outcount, array_of_indices, array_of_statuses,
                    0);
}

/* ---------------------------------------------------------------------- */
/* Status queries. */

static cli_type_t *cli_dt(MPI_Datatype h)
{
    int why = 0;
    return cli_type_lookup(h, &why);
}

static int cli_is_pair(const cli_type_t *t)
{
    return t->basic == COLLAB_FLOAT_INT || t->basic == COLLAB_DOUBLE_INT ||
           t->basic == COLLAB_LONG_INT || t->basic == COLLAB_SHORT_INT || t->basic == COLLAB_2INT ||
           t->basic == COLLAB_LONG_DOUBLE_INT;
}

static int cli_status_arg(cli_call_t *call, const MPI_Status *st)
{
    if (st == MPI_STATUS_IGNORE)
        return cli_err(call, MPI_ERR_ARG, "status", "MPI_STATUS_IGNORE cannot be queried");
    return MPI_SUCCESS;
}

static MPI_Count cli_count_of(const MPI_Status *st, const cli_type_t *t)
{
    MPI_Count bytes = cli_abi_status_bytes(st);
    MPI_Count unit = t->map != NULL ? t->size : t->extent; /* mapped types travel packed */
    if (unit == 0)
        return bytes == 0 ? 0 : MPI_UNDEFINED;
    return bytes % unit ? MPI_UNDEFINED : bytes / unit;
}

static MPI_Count cli_elements_of(const MPI_Status *st, const cli_type_t *t)
{
    MPI_Count bytes = cli_abi_status_bytes(st);
    if (t->mult == 0 || t->extent == 0)
        return bytes == 0 ? 0 : MPI_UNDEFINED;
    if (t->map != NULL) /* whole elements of a mapped type: its basic elements */
        return t->size > 0 && bytes % t->size == 0 ? bytes / t->size * t->map->nbasic
                                                   : MPI_UNDEFINED;
    MPI_Count ce = t->extent / t->mult;
    if (bytes % ce)
        return MPI_UNDEFINED;
    return bytes / ce * (cli_is_pair(t) ? 2 : 1);
}

/* Get_count and Get_elements: checks the status, then counts with fn
   (cli_count_of or cli_elements_of) in datatype's elements. */
typedef MPI_Count(cli_count_fn)(const MPI_Status *st, const cli_type_t *t);

static int cli_status_count(cli_call_t *call, const MPI_Status *status, MPI_Datatype datatype,
                            cli_count_fn *fn, MPI_Count *count)
{
    int rc = cli_status_arg(call, status);
    if (rc == MPI_SUCCESS)
        *count = fn(status, cli_dt(datatype));
    return rc;
}

/* The same for the int versions: MPI_UNDEFINED when the count does not fit. */
static int cli_status_count_int(cli_call_t *call, const MPI_Status *status, MPI_Datatype datatype,
                                cli_count_fn *fn, int *count)
{
    MPI_Count c = 0;
    int rc = cli_status_count(call, status, datatype, fn, &c);
    if (rc == MPI_SUCCESS)
        *count = cli_int_count(c);
    return rc;
}

int cli_impl_Get_count_c(cli_call_t *call, const MPI_Status *status, MPI_Datatype datatype,
                         MPI_Count *count)
{
    return cli_status_count(call, status, datatype, cli_count_of, count);
}

int cli_impl_Get_count(cli_call_t *call, const MPI_Status *status, MPI_Datatype datatype,
                       int *count)
{
    return cli_status_count_int(call, status, datatype, cli_count_of, count);
}

int cli_impl_Get_elements(cli_call_t *call, const MPI_Status *status, MPI_Datatype datatype,
                          int *count)
{
    return cli_status_count_int(call, status, datatype, cli_elements_of, count);
}

int cli_impl_Get_elements_x(cli_call_t *call, const MPI_Status *status, MPI_Datatype datatype,
                            MPI_Count *count)
{
    return cli_status_count(call, status, datatype, cli_elements_of, count);
}

int cli_impl_Get_elements_c(cli_call_t *call, const MPI_Status *status, MPI_Datatype datatype,
                            MPI_Count *count)
{
    return cli_impl_Get_elements_x(call, status, datatype, count);
}

int cli_impl_Status_set_elements_x(cli_call_t *call, MPI_Status *status, MPI_Datatype datatype,
                                   MPI_Count count)
{
    int rc = cli_status_arg(call, status);
    if (rc != MPI_SUCCESS)
        return rc;
    if (count < 0)
        return cli_err(call, MPI_ERR_COUNT, "count", "%lld is negative", (long long)count);
    cli_type_t *t = cli_dt(datatype);
    MPI_Count ce = t->mult > 0 ? t->extent / t->mult : 0;
    cli_abi_status_set_bytes(status, (cli_is_pair(t) ? count / 2 : count) * ce);
    return MPI_SUCCESS;
}

int cli_impl_Status_set_elements(cli_call_t *call, MPI_Status *status, MPI_Datatype datatype,
                                 int count)
{
    return cli_impl_Status_set_elements_x(call, status, datatype, count);
}

int cli_impl_Status_set_cancelled(cli_call_t *call, MPI_Status *status, int flag)
{
    int rc = cli_status_arg(call, status);
    if (rc == MPI_SUCCESS)
        cli_abi_status_set_cancelled(status, flag != 0);
    return rc;
}

int cli_impl_Test_cancelled(cli_call_t *call, const MPI_Status *status, int *flag)
{
    int rc = cli_status_arg(call, status);
    if (rc == MPI_SUCCESS)
        *flag = cli_abi_status_cancelled(status);
    return rc;
}
