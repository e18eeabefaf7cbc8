/*  cl_reqq_test.c - selftest of cl_reqq: requests taken in the order they
    were pushed, the eventfd readable exactly while something waits (a
    request or a wake-up) and cleared by taking, pushes refused once
    closed while what was queued stays to be taken, and four producer
    threads against one consumer that sleeps in poll: every request taken
    once, each producer's in its order. */
#include "engine/cl_reqq.h"
#include "util/cl_selftest.h"

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Whether the queue's fd is readable now. */
static bool readable(const cl_reqq_t *q)
{
    struct pollfd p = {cl_reqq_fd(q), POLLIN, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

/* Requests numbered by their tag field. */
static collab_request_t *req_of(int producer, int n)
{
    collab_request_t *r = calloc(1, sizeof *r);
    if (r != NULL) {
        r->peer = producer;
        r->tag = n;
    }
    return r;
}

static int count_free(collab_request_t *r, int *first_tag)
{
    int n = 0;
    if (first_tag != NULL)
        *first_tag = r != NULL ? r->tag : -1;
    while (r != NULL) {
        collab_request_t *next = r->next;
        free(r);
        r = next;
        n++;
    }
    return n;
}

static void test_order(void)
{
    cl_reqq_t *q = cl_reqq_new();
    CL_CHECK(q != NULL && cl_reqq_fd(q) >= 0);
    if (q == NULL)
        return;
    CL_CHECK(!readable(q));
    CL_CHECK(cl_reqq_take_all(q) == NULL);
    for (int i = 0; i < 5; i++)
        CL_CHECK(cl_reqq_push(q, req_of(0, i)) == COLLAB_OK);
    CL_CHECK(readable(q));
    collab_request_t *r = cl_reqq_take_all(q);
    CL_CHECK(!readable(q)); /* cleared by the take */
    int i = 0;
    for (collab_request_t *p = r; p != NULL; p = p->next, i++)
        CL_CHECK(p->tag == i);
    CL_CHECK(i == 5);
    count_free(r, NULL);
    /* A wake-up without a request. */
    cl_reqq_wake(q);
    CL_CHECK(readable(q));
    CL_CHECK(cl_reqq_take_all(q) == NULL);
    CL_CHECK(!readable(q));
    /* Closed: pushes refused, what was queued still taken. */
    CL_CHECK(cl_reqq_push(q, req_of(0, 7)) == COLLAB_OK);
    cl_reqq_close(q);
    collab_request_t *late = req_of(0, 8);
    CL_CHECK(cl_reqq_push(q, late) == COLLAB_ERR_NOT_INIT);
    free(late);
    int first;
    CL_CHECK(count_free(cl_reqq_take_all(q), &first) == 1 && first == 7);
    cl_reqq_destroy(&q);
    CL_CHECK(q == NULL);
    cl_reqq_destroy(&q);
    cl_reqq_destroy(NULL);
}

#define PRODUCERS 4
#define PER 5000

typedef struct {
    cl_reqq_t *q;
    int me;
} producer_t;

static void *produce(void *arg)
{
    producer_t *p = arg;
    for (int i = 0; i < PER; i++) {
        collab_request_t *r = req_of(p->me, i);
        if (r == NULL || cl_reqq_push(p->q, r) != COLLAB_OK)
            free(r);
    }
    return NULL;
}

static void test_threads(void)
{
    cl_reqq_t *q = cl_reqq_new();
    CL_CHECK(q != NULL);
    if (q == NULL)
        return;
    pthread_t t[PRODUCERS];
    producer_t p[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++) {
        p[i] = (producer_t){q, i};
        pthread_create(&t[i], NULL, produce, &p[i]);
    }
    int next[PRODUCERS] = {0}, taken = 0, wrong = 0, sleeps = 0;
    while (taken < PRODUCERS * PER) {
        struct pollfd pf = {cl_reqq_fd(q), POLLIN, 0};
        if (poll(&pf, 1, 5000) != 1) /* a lost wake-up hangs here */
            break;
        sleeps++;
        collab_request_t *r = cl_reqq_take_all(q);
        while (r != NULL) {
            collab_request_t *n = r->next;
            if (r->peer < 0 || r->peer >= PRODUCERS || r->tag != next[r->peer])
                wrong++;
            else
                next[r->peer]++;
            free(r);
            taken++;
            r = n;
        }
    }
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(t[i], NULL);
    CL_CHECK(taken == PRODUCERS * PER && wrong == 0);
    CL_CHECK(sleeps > 0);
    CL_CHECK(cl_reqq_take_all(q) == NULL);
    cl_reqq_destroy(&q);
}

int main(void)
{
    test_order();
    test_threads();
    return cl_selftest_end("cl_reqq");
}
