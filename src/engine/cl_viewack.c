/*  cl_viewack.c - the majority-acknowledgement tally (cl_viewack.h,
    docs/security.md §4).

    One round per pause.  Each member asked has one slot: its key and its
    latest answer (epoch and a digest of the whole view).  An answer
    replaces the member's earlier one, so a member counts once however
    often it answers, and a member whose view moved on counts for its new
    view only.  The count for a view is a scan of the slots (one per
    member asked), done once per answer.
*/
#include "engine/cl_viewack.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint8_t key[32];
    bool answered;
    uint64_t epoch;     /* of its latest answer */
    uint8_t digest[32]; /* of its latest answer */
} slot_t;

struct cl_viewack {
    bool open;
    size_t view_size; /* members of the last view, the receiver included */
    size_t n, cap;
    slot_t *slot; /* one per member asked (cap: the last view's size) */
};

cl_viewack_t *cl_viewack_new(void)
{
    return calloc(1, sizeof(cl_viewack_t));
}

void cl_viewack_destroy(cl_viewack_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    free((*self_p)->slot);
    free(*self_p);
    *self_p = NULL;
}

int cl_viewack_start(cl_viewack_t *self, size_t view_size)
{
    if (view_size > self->cap) {
        slot_t *s = realloc(self->slot, view_size * sizeof *s);
        if (s == NULL) {
            self->open = false;
            return -1;
        }
        self->slot = s;
        self->cap = view_size;
    }
    self->open = true;
    self->view_size = view_size;
    self->n = 0;
    return 0;
}

void cl_viewack_close(cl_viewack_t *self)
{
    self->open = false;
    self->n = 0;
}

bool cl_viewack_open(const cl_viewack_t *self)
{
    return self != NULL && self->open;
}

static slot_t *find(const cl_viewack_t *self, const uint8_t key[32])
{
    for (size_t i = 0; i < self->n; i++)
        if (memcmp(self->slot[i].key, key, 32) == 0)
            return (slot_t *)&self->slot[i];
    return NULL;
}

void cl_viewack_asked(cl_viewack_t *self, const uint8_t key[32])
{
    if (!self->open || find(self, key) != NULL || self->n == self->cap)
        return;
    slot_t *s = &self->slot[self->n++];
    memset(s, 0, sizeof *s);
    memcpy(s->key, key, 32);
}

bool cl_viewack_was_asked(const cl_viewack_t *self, const uint8_t key[32])
{
    return cl_viewack_open(self) && find(self, key) != NULL;
}

size_t cl_viewack_answer(cl_viewack_t *self, const uint8_t key[32], uint64_t epoch,
                         const uint8_t digest[32])
{
    slot_t *s = self->open ? find(self, key) : NULL;
    if (s == NULL)
        return 0;
    s->answered = true;
    s->epoch = epoch;
    memcpy(s->digest, digest, 32);
    size_t same = 0;
    for (size_t i = 0; i < self->n; i++)
        if (self->slot[i].answered && self->slot[i].epoch == epoch &&
            memcmp(self->slot[i].digest, digest, 32) == 0)
            same++;
    return same;
}

size_t cl_viewack_need(const cl_viewack_t *self)
{
    return self->view_size / 2 + 1;
}

size_t cl_viewack_nasked(const cl_viewack_t *self)
{
    return self->open ? self->n : 0;
}

size_t cl_viewack_nanswered(const cl_viewack_t *self)
{
    size_t k = 0;
    for (size_t i = 0; self->open && i < self->n; i++)
        k += self->slot[i].answered;
    return k;
}

const uint8_t *cl_viewack_key(const cl_viewack_t *self, size_t i, uint64_t *epoch)
{
    *epoch = self->slot[i].answered ? self->slot[i].epoch : 0;
    return self->slot[i].key;
}

bool cl_viewack_digest(const cl_wire_msg_t *m, uint8_t out[32])
{
    uint8_t *body = NULL;
    size_t blen = 0;
    if (cl_wire_encode_body(m, &body, &blen) != CL_WIRE_OK)
        return false;
    crypto_generichash(out, 32, body, blen, NULL, 0);
    free(body);
    return true;
}
