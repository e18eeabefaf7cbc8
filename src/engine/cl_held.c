/*  cl_held.c - data messages kept until their sender is a member here
    (cl_held.h).  A singly linked list, oldest first: the bounds keep it
    short (each put walks it once to count). */
#include "engine/cl_held.h"

#include <stdlib.h>
#include <string.h>

typedef struct held_msg {
    struct held_msg *next;
    uint8_t key[32];
    double t;          /* when it arrived */
    cl_wire_msg_t msg; /* header fields; payload points at data */
    size_t len;
    uint8_t data[];
} held_msg_t;

struct cl_held {
    cl_held_limits_t lim;
    held_msg_t *head, *tail;
    size_t bytes;
    uint64_t refused;
};

size_t cl_held_cost(size_t len)
{
    return sizeof(held_msg_t) + len; /* an empty message is not free */
}

cl_held_t *cl_held_new(const cl_held_limits_t *limits)
{
    cl_held_t *self = calloc(1, sizeof *self);
    if (self != NULL)
        self->lim = *limits;
    return self;
}

static void free_list(held_msg_t *h)
{
    while (h != NULL) {
        held_msg_t *next = h->next;
        free(h);
        h = next;
    }
}

void cl_held_destroy(cl_held_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    free_list((*self_p)->head);
    free(*self_p);
    *self_p = NULL;
}

size_t cl_held_count_from(const cl_held_t *self, const uint8_t key[32])
{
    size_t n = 0;
    for (const held_msg_t *h = self->head; h != NULL; h = h->next)
        n += memcmp(h->key, key, 32) == 0;
    return n;
}

size_t cl_held_count(const cl_held_t *self)
{
    size_t n = 0;
    for (const held_msg_t *h = self->head; h != NULL; h = h->next)
        n++;
    return n;
}

bool cl_held_from(const cl_held_t *self, const uint8_t key[32])
{
    for (const held_msg_t *h = self->head; h != NULL; h = h->next)
        if (memcmp(h->key, key, 32) == 0)
            return true;
    return false;
}

size_t cl_held_bytes(const cl_held_t *self)
{
    return self->bytes;
}

uint64_t cl_held_refused(const cl_held_t *self)
{
    return self->refused;
}

/* Appends h to the list *head .. *tail. */
static void append(held_msg_t **head, held_msg_t **tail, held_msg_t *h)
{
    h->next = NULL;
    if (*tail != NULL)
        (*tail)->next = h;
    else
        *head = h;
    *tail = h;
}

cl_held_put_t cl_held_put(cl_held_t *self, const uint8_t key[32], const cl_wire_msg_t *m,
                          double now)
{
    size_t n = 0, mine = 0;
    for (const held_msg_t *x = self->head; x != NULL; x = x->next) {
        n++;
        mine += memcmp(x->key, key, 32) == 0;
    }
    if (n >= self->lim.max_msgs || mine >= self->lim.max_per_peer) {
        self->refused++;
        return CL_HELD_FULL_MSGS;
    }
    size_t cost = cl_held_cost(m->payload_len);
    if (cost < m->payload_len || self->bytes + cost > self->lim.max_bytes) {
        self->refused++;
        return CL_HELD_FULL_BYTES;
    }
    held_msg_t *h = malloc(cost);
    if (h == NULL) {
        self->refused++;
        return CL_HELD_NO_MEM;
    }
    memcpy(h->key, key, 32);
    h->t = now;
    h->msg = *m;
    h->len = m->payload_len;
    if (h->len > 0)
        memcpy(h->data, m->payload, h->len);
    h->msg.payload = h->data;
    append(&self->head, &self->tail, h);
    self->bytes += cost;
    return CL_HELD_KEPT;
}

void cl_held_replay(cl_held_t *self, cl_held_visit_fn *fn, void *arg)
{
    held_msg_t *h = self->head, *kept = NULL, *kept_tail = NULL;
    self->head = self->tail = NULL; /* what fn holds goes here */
    while (h != NULL) {
        held_msg_t *next = h->next;
        if (fn(arg, h->key, &h->msg, h->t)) {
            append(&kept, &kept_tail, h);
        } else {
            self->bytes -= cl_held_cost(h->len);
            free(h);
        }
        h = next;
    }
    if (kept != NULL) { /* the kept ones first, then those held meanwhile */
        kept_tail->next = self->head;
        self->head = kept;
        if (self->tail == NULL)
            self->tail = kept_tail;
    }
}
