/*  cl_request.c - request completion and waiting.

    One mutex guards the completion fields of every request; each request
    has its own condition variable, and wait_any uses a shared one that is
    broadcast on every completion.  Waiting threads hold the mutex only
    inside pthread_cond_wait.
*/
#include "engine/cl_request.h"

#include "engine/cl_comm.h"
#include "engine/cl_stage.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t s_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t s_any = PTHREAD_COND_INITIALIZER;

collab_request_t *cl_request_new(cl_op_t op)
{
    collab_request_t *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    if (pthread_cond_init(&r->cv, NULL) != 0) {
        free(r);
        return NULL;
    }
    r->op = op;
    r->info.source = -1;
    r->info.tag = -1;
    return r;
}

void cl_request_destroy(collab_request_t **req_p)
{
    if (req_p == NULL || *req_p == NULL)
        return;
    collab_request_t *r = *req_p;
    pthread_cond_destroy(&r->cv);
    free(r->counts_copy);
    free(r->displs_copy);
    free(r->snapshot);
    cl_stage_free(&r->stage);
    cl_p2p_msg_free(r->msg);
    free(r);
    *req_p = NULL;
}

void cl_request_complete(collab_request_t *req, int status)
{
    if (req->counted) {
        req->counted = false;
        atomic_fetch_sub(&req->comm->coll_pending, 1);
    }
    pthread_mutex_lock(&s_mu);
    req->status = status;
    req->info.error = status;
    req->done = true;
    bool detached = req->detached;
    pthread_cond_broadcast(&req->cv);
    pthread_cond_broadcast(&s_any);
    pthread_mutex_unlock(&s_mu);
    if (detached)
        cl_request_destroy(&req);
}

void cl_request_wait(collab_request_t *req)
{
    pthread_mutex_lock(&s_mu);
    while (!req->done)
        pthread_cond_wait(&req->cv, &s_mu);
    pthread_mutex_unlock(&s_mu);
}

void cl_request_taken(collab_request_t *req)
{
    pthread_mutex_lock(&s_mu);
    req->taken = true;
    pthread_cond_broadcast(&req->cv);
    pthread_mutex_unlock(&s_mu);
}

void cl_request_wait_taken(collab_request_t *req)
{
    pthread_mutex_lock(&s_mu);
    while (!req->done && !req->taken)
        pthread_cond_wait(&req->cv, &s_mu);
    pthread_mutex_unlock(&s_mu);
}

bool cl_request_wait_for(collab_request_t *req, double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long ns = (long long)ts.tv_nsec + (long long)(seconds * 1e9);
    ts.tv_sec += (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    pthread_mutex_lock(&s_mu);
    while (!req->done)
        if (pthread_cond_timedwait(&req->cv, &s_mu, &ts) != 0)
            break;
    bool done = req->done;
    pthread_mutex_unlock(&s_mu);
    return done;
}

bool cl_request_done(collab_request_t *req)
{
    pthread_mutex_lock(&s_mu);
    bool d = req->done;
    pthread_mutex_unlock(&s_mu);
    return d;
}

int cl_request_wait_any(collab_request_t *const *reqs, int n)
{
    int index = -1;
    pthread_mutex_lock(&s_mu);
    for (;;) {
        bool any = false;
        for (int i = 0; i < n; i++) {
            if (reqs[i] == NULL)
                continue;
            any = true;
            if (reqs[i]->done) {
                index = i;
                break;
            }
        }
        if (index >= 0 || !any)
            break;
        pthread_cond_wait(&s_any, &s_mu);
    }
    pthread_mutex_unlock(&s_mu);
    return index;
}

void cl_request_detach(collab_request_t *req)
{
    pthread_mutex_lock(&s_mu);
    bool done = req->done;
    if (!done)
        req->detached = true;
    pthread_mutex_unlock(&s_mu);
    if (done)
        cl_request_destroy(&req);
}
