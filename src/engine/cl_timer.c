/*  cl_timer.c - a set of deadlines with callbacks (cl_timer.h).

    A binary min-heap of handles, ordered by (deadline, arming order), over
    a table of timers allocated once at creation: a timer's slot in the
    table is its handle and it remembers its position in the heap, so
    that re-arming or cancelling it is O(log n) without a search and
    without allocation.  cl_timer_run first takes every due timer out of
    the heap into a list (also allocated at creation), then calls them in
    order; a timer a callback cancels or re-arms meanwhile is no longer
    marked due and is skipped, and one armed at or before now during the
    run waits in the heap for the next run, so a run always ends.
*/
#include "engine/cl_timer.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

enum { T_FREE, T_IDLE, T_ARMED, T_DUE };

typedef struct {
    double when;    /* the deadline, while armed */
    uint64_t seq;   /* arming order: equal deadlines run in it */
    cl_timer_fn *fn;
    void *arg;
    size_t pos;     /* index in heap, while armed */
    int state;      /* T_FREE, T_IDLE, T_ARMED or T_DUE */
} entry_t;

struct cl_timer {
    size_t cap;     /* timers at most */
    entry_t *t;     /* cap timers, indexed by handle */
    int *heap;      /* the armed handles, a min-heap of n */
    size_t n;
    int *due;       /* the run under way: handles taken out of the heap */
    uint64_t seq;   /* the next arming's number */
    bool running;   /* inside cl_timer_run */
};

cl_timer_t *cl_timer_new(size_t capacity)
{
    if (capacity == 0 || capacity > INT32_MAX)
        return NULL;
    cl_timer_t *self = calloc(1, sizeof *self);
    if (self == NULL)
        return NULL;
    self->cap = capacity;
    self->t = calloc(capacity, sizeof *self->t);
    self->heap = calloc(capacity, sizeof *self->heap);
    self->due = calloc(capacity, sizeof *self->due);
    if (self->t == NULL || self->heap == NULL || self->due == NULL) {
        cl_timer_destroy(&self);
        return NULL;
    }
    return self;
}

void cl_timer_destroy(cl_timer_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    cl_timer_t *self = *self_p;
    free(self->t);
    free(self->heap);
    free(self->due);
    free(self);
    *self_p = NULL;
}

static bool valid(const cl_timer_t *self, int id)
{
    return self != NULL && id >= 0 && (size_t)id < self->cap && self->t[id].state != T_FREE;
}

static bool before(const cl_timer_t *self, int a, int b)
{
    const entry_t *x = &self->t[a], *y = &self->t[b];
    return x->when < y->when || (x->when == y->when && x->seq < y->seq);
}

static void place(cl_timer_t *self, size_t i, int id)
{
    self->heap[i] = id;
    self->t[id].pos = i;
}

static void sift_up(cl_timer_t *self, size_t i)
{
    int id = self->heap[i];
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!before(self, id, self->heap[up]))
            break;
        place(self, i, self->heap[up]);
        i = up;
    }
    place(self, i, id);
}

static void sift_down(cl_timer_t *self, size_t i)
{
    int id = self->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= self->n)
            break;
        if (c + 1 < self->n && before(self, self->heap[c + 1], self->heap[c]))
            c++;
        if (!before(self, self->heap[c], id))
            break;
        place(self, i, self->heap[c]);
        i = c;
    }
    place(self, i, id);
}

/* Takes an armed timer out of the heap. */
static void unlink_armed(cl_timer_t *self, int id)
{
    size_t i = self->t[id].pos;
    assert(self->t[id].state == T_ARMED && i < self->n && self->heap[i] == id);
    self->n--;
    if (i == self->n)
        return;
    int moved = self->heap[self->n]; /* the last one fills the hole */
    place(self, i, moved);
    sift_down(self, i);
    sift_up(self, self->t[moved].pos);
}

int cl_timer_add(cl_timer_t *self, cl_timer_fn *fn, void *arg)
{
    if (self == NULL || fn == NULL)
        return -1;
    for (size_t i = 0; i < self->cap; i++) {
        if (self->t[i].state != T_FREE)
            continue;
        self->t[i] = (entry_t){.fn = fn, .arg = arg, .state = T_IDLE};
        return (int)i;
    }
    return -1;
}

void cl_timer_cancel(cl_timer_t *self, int id)
{
    if (!valid(self, id))
        return;
    if (self->t[id].state == T_ARMED)
        unlink_armed(self, id);
    self->t[id].state = T_IDLE;
}

void cl_timer_remove(cl_timer_t *self, int id)
{
    if (!valid(self, id))
        return;
    cl_timer_cancel(self, id);
    self->t[id].state = T_FREE;
}

void cl_timer_arm(cl_timer_t *self, int id, double when)
{
    if (!valid(self, id))
        return;
    cl_timer_cancel(self, id);
    entry_t *x = &self->t[id];
    x->when = when;
    x->seq = self->seq++;
    x->state = T_ARMED;
    self->heap[self->n] = id;
    x->pos = self->n++;
    sift_up(self, x->pos);
}

void cl_timer_arm_by(cl_timer_t *self, int id, double when)
{
    if (valid(self, id) && !(self->t[id].state == T_ARMED && self->t[id].when <= when))
        cl_timer_arm(self, id, when);
}

double cl_timer_when(const cl_timer_t *self, int id)
{
    return valid(self, id) && self->t[id].state == T_ARMED ? self->t[id].when : INFINITY;
}

double cl_timer_next(const cl_timer_t *self)
{
    return self != NULL && self->n > 0 ? self->t[self->heap[0]].when : INFINITY;
}

size_t cl_timer_run(cl_timer_t *self, double now)
{
    if (self == NULL || self->running)
        return 0;
    /* Every due timer leaves the heap first: what the callbacks arm goes
       back into it and waits for the next run. */
    size_t ndue = 0;
    while (self->n > 0 && self->t[self->heap[0]].when <= now) {
        int id = self->heap[0];
        unlink_armed(self, id);
        self->t[id].state = T_DUE;
        self->due[ndue++] = id;
    }
    self->running = true;
    size_t ran = 0;
    for (size_t i = 0; i < ndue; i++) {
        entry_t *x = &self->t[self->due[i]];
        if (x->state != T_DUE) /* cancelled, re-armed or removed meanwhile */
            continue;
        x->state = T_IDLE;
        x->fn(x->arg, now);
        ran++;
    }
    self->running = false;
    return ran;
}
