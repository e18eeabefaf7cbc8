/*  cli_greq.c - generalized requests (MPI_Grequest_start/_complete).

    A generalized request is a face request of kind CLI_REQ_GREQ with no
    core request: the program's own work completes it by calling
    MPI_Grequest_complete.  Its state (the program's three callbacks,
    their extra_state and the completed flag) lives in r->aux.  The wait
    and test calls of cli_request.c ask this file:
    - cli_greq_poll: complete yet?  A blocking poll sleeps on a condition
      variable that MPI_Grequest_complete signals (another thread of the
      program completes it; a program that waits for a request only it
      could complete waits forever, as with MPICH);
    - cli_greq_finish: the completion a wait or test reports: query_fn
      fills the status, then free_fn runs and the handle goes; an error
      returned by either is the call's error (query's first);
    - cli_greq_status: MPI_Request_get_status calls query_fn only;
    - MPI_Cancel calls cancel_fn(extra_state, completed);
    - MPI_Request_free runs free_fn at once when the request has
      completed, otherwise when MPI_Grequest_complete comes (the handle
      stays valid for that call, as the standard requires).
    A wait over several requests of which some are generalized and some
    are core requests cannot sleep on both: it tests the core requests
    and naps on the condition variable for a millisecond in turn
    (cli_greq_nap); sets of generalized requests alone sleep.
*/
#include "cli.h"
#include "cli_impl.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

typedef struct {
    MPI_Grequest_query_function *query_fn;
    MPI_Grequest_free_function *free_fn;
    MPI_Grequest_cancel_function *cancel_fn;
    void *extra_state;
    int completed; /* MPI_Grequest_complete was called (under cli_greq_mu) */
} cli_greq_t;

static pthread_mutex_t cli_greq_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cli_greq_cv = PTHREAD_COND_INITIALIZER;

int cli_impl_Grequest_start(cli_call_t *call, MPI_Grequest_query_function *query_fn,
                            MPI_Grequest_free_function *free_fn,
                            MPI_Grequest_cancel_function *cancel_fn, void *extra_state,
                            MPI_Request *request)
{
    cli_greq_t *g = calloc(1, sizeof *g);
    if (g == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    *g = (cli_greq_t){query_fn, free_fn, cancel_fn, extra_state, 0};
    collab_status_info_t st = {.source = -1, .tag = -1};
    int rc = cli_req_done(call, CLI_REQ_GREQ, NULL, COLLAB_OK, &st, request);
    if (rc != MPI_SUCCESS) {
        free(g);
        return rc;
    }
    int why = 0;
    cli_req_t *r = cli_req_lookup(*request, &why);
    r->done = 0; /* until MPI_Grequest_complete */
    r->aux = g;
    return MPI_SUCCESS;
}

/* Runs free_fn and forgets the request; returns free_fn's code. */
static int cli_greq_release(cli_req_t *r)
{
    cli_greq_t *g = r->aux;
    int code = g->free_fn != NULL ? g->free_fn(g->extra_state) : MPI_SUCCESS;
    r->aux = NULL;
    free(g);
    cli_req_release(r);
    return code;
}

int cli_impl_Grequest_complete(cli_call_t *call, MPI_Request request)
{
    int why = 0;
    cli_req_t *r = cli_req_lookup(request, &why);
    if (r == NULL || r->kind != CLI_REQ_GREQ)
        return cli_err(call, MPI_ERR_REQUEST, "request", "%s",
                       r == NULL && why == CLI_H_NULL
                           ? "MPI_REQUEST_NULL is not a generalized request"
                           : "not a generalized request");
    cli_greq_t *g = r->aux;
    /* Once completed, a waiting thread may release r at any moment: read
       everything needed before, under the lock. */
    pthread_mutex_lock(&cli_greq_mu);
    int again = g->completed, freed = r->freed;
    g->completed = 1;
    pthread_cond_broadcast(&cli_greq_cv);
    pthread_mutex_unlock(&cli_greq_mu);
    if (again)
        return cli_err(call, MPI_ERR_REQUEST, "request", "the request was completed already");
    if (freed) {
        int code = cli_greq_release(r);
        if (code != MPI_SUCCESS)
            return cli_err(call, code, NULL, "the request's free function returned an error");
    }
    return MPI_SUCCESS;
}

int cli_greq_poll(cli_req_t *r, int blocking)
{
    cli_greq_t *g = r->aux;
    pthread_mutex_lock(&cli_greq_mu);
    while (blocking && !g->completed)
        pthread_cond_wait(&cli_greq_cv, &cli_greq_mu);
    int done = g->completed;
    pthread_mutex_unlock(&cli_greq_mu);
    if (done) {
        r->done = 1;
        r->status = COLLAB_OK;
    }
    return done;
}

void cli_greq_nap(void)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&cli_greq_mu);
    pthread_cond_timedwait(&cli_greq_cv, &cli_greq_mu, &until);
    pthread_mutex_unlock(&cli_greq_mu);
}

/* query_fn into st (a scratch status when the caller ignores it), which
   starts as the empty status; returns query_fn's code. */
static int cli_greq_query(cli_greq_t *g, MPI_Status *st)
{
    MPI_Status scratch;
    if (st == MPI_STATUS_IGNORE || st == NULL)
        st = &scratch;
    int err = st == &scratch ? MPI_SUCCESS : st->MPI_ERROR;
    cli_abi_status_set(st, MPI_ANY_SOURCE, MPI_ANY_TAG, err, 0, 0);
    return g->query_fn != NULL ? g->query_fn(g->extra_state, st) : MPI_SUCCESS;
}

void cli_greq_status(cli_req_t *r, MPI_Status *st)
{
    cli_greq_query(r->aux, st);
}

int cli_greq_finish(cli_call_t *call, cli_req_t *r, MPI_Request *h, MPI_Status *st, int report)
{
    int code = cli_greq_query(r->aux, st);
    int fcode = cli_greq_release(r);
    *h = cli_abi_req_null();
    if (code == MPI_SUCCESS)
        code = fcode;
    if (code == MPI_SUCCESS || !report)
        return code;
    return cli_err(call, code, NULL, "the generalized request's query or free function failed");
}

int cli_greq_cancel(cli_call_t *call, cli_req_t *r)
{
    cli_greq_t *g = r->aux;
    pthread_mutex_lock(&cli_greq_mu);
    int completed = g->completed;
    pthread_mutex_unlock(&cli_greq_mu);
    int code = g->cancel_fn != NULL ? g->cancel_fn(g->extra_state, completed) : MPI_SUCCESS;
    if (code != MPI_SUCCESS)
        return cli_err(call, code, NULL, "the request's cancel function returned an error");
    return MPI_SUCCESS;
}

int cli_greq_free(cli_call_t *call, cli_req_t *r)
{
    pthread_mutex_lock(&cli_greq_mu);
    int completed = ((cli_greq_t *)r->aux)->completed;
    if (!completed)
        r->freed = 1; /* MPI_Grequest_complete releases it */
    pthread_mutex_unlock(&cli_greq_mu);
    if (!completed)
        return MPI_SUCCESS;
    int code = cli_greq_release(r);
    if (code != MPI_SUCCESS)
        return cli_err(call, code, NULL, "the request's free function returned an error");
    return MPI_SUCCESS;
}
