/*  cl_reqq.h - the queue of requests from application threads to the
    engine thread.

    Application threads push requests (collab_* calls, finalize, abort);
    the engine thread polls the queue's eventfd and takes every request
    queued so far, in the order they were pushed.  The eventfd also wakes
    the engine without a request (cl_reqq_wake: a leave asked from a
    signal handler; a device writes it directly when a staged chunk is
    ready, cl_stage.h).  Once closed (the engine stops) the queue refuses
    pushes; what is still queued stays to be taken (and completed).

    Thread-safe: any number of producers, one consumer.
*/
#ifndef CL_REQQ_H_INCLUDED
#define CL_REQQ_H_INCLUDED

#include "engine/cl_request.h"

typedef struct cl_reqq cl_reqq_t;

/* An open, empty queue with its eventfd; NULL (errno set) when the
   eventfd or memory cannot be had.  Caller owns. */
cl_reqq_t *cl_reqq_new(void);

/* Frees *self_p (accepts NULL, nulls it); requests still queued are not
   touched (close it first). */
void cl_reqq_destroy(cl_reqq_t **self_p);

/* Appends req (its `next` link is the queue's until taken) and wakes the
   consumer.  COLLAB_OK, or COLLAB_ERR_NOT_INIT once the queue is closed
   (req untouched). */
int cl_reqq_push(cl_reqq_t *self, collab_request_t *req);

/* Wakes the consumer without a request (async-signal-safe). */
void cl_reqq_wake(cl_reqq_t *self);

/* The consumer: clears the wake-up and takes every queued request, the
   first pushed first, linked by `next` (NULL when none). */
collab_request_t *cl_reqq_take_all(cl_reqq_t *self);

/* Refuses every later push (they return COLLAB_ERR_NOT_INIT); what is
   queued stays to be taken. */
void cl_reqq_close(cl_reqq_t *self);

/* The eventfd the consumer polls for input. */
int cl_reqq_fd(const cl_reqq_t *self);

#endif
