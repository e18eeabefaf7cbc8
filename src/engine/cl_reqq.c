/*  cl_reqq.c - the engine's request queue (cl_reqq.h): a list under a
    mutex, and an eventfd counting wake-ups. */
#include "engine/cl_reqq.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct cl_reqq {
    pthread_mutex_t mu; /* guards head, tail, open */
    collab_request_t *head, *tail;
    bool open;
    int fd; /* eventfd: requests (or a wake-up) wait */
};

cl_reqq_t *cl_reqq_new(void)
{
    cl_reqq_t *self = calloc(1, sizeof *self);
    if (self == NULL)
        return NULL;
    self->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (self->fd < 0) {
        int err = errno;
        free(self);
        errno = err;
        return NULL;
    }
    pthread_mutex_init(&self->mu, NULL);
    self->open = true;
    return self;
}

void cl_reqq_destroy(cl_reqq_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    cl_reqq_t *self = *self_p;
    close(self->fd);
    pthread_mutex_destroy(&self->mu);
    free(self);
    *self_p = NULL;
}

void cl_reqq_wake(cl_reqq_t *self)
{
    uint64_t one = 1;
    ssize_t w;
    do
        w = write(self->fd, &one, sizeof one);
    while (w < 0 && errno == EINTR);
}

int cl_reqq_push(cl_reqq_t *self, collab_request_t *req)
{
    pthread_mutex_lock(&self->mu);
    if (!self->open) {
        pthread_mutex_unlock(&self->mu);
        return COLLAB_ERR_NOT_INIT;
    }
    req->next = NULL;
    if (self->tail != NULL)
        self->tail->next = req;
    else
        self->head = req;
    self->tail = req;
    pthread_mutex_unlock(&self->mu);
    cl_reqq_wake(self);
    return COLLAB_OK;
}

collab_request_t *cl_reqq_take_all(cl_reqq_t *self)
{
    /* Cleared first: a push after this read wakes the consumer again. */
    uint64_t v;
    while (read(self->fd, &v, sizeof v) < 0 && errno == EINTR)
        ;
    pthread_mutex_lock(&self->mu);
    collab_request_t *r = self->head;
    self->head = self->tail = NULL;
    pthread_mutex_unlock(&self->mu);
    return r;
}

void cl_reqq_close(cl_reqq_t *self)
{
    pthread_mutex_lock(&self->mu);
    self->open = false;
    pthread_mutex_unlock(&self->mu);
}

int cl_reqq_fd(const cl_reqq_t *self)
{
    return self->fd;
}
