/*  cl_startup.c - results of start-up collectives, kept for joiners.

    Entries sit in an array sorted by index (results arrive in order, so
    a put is an append in practice; binary search finds the rest).  Each
    result is one malloc'ed copy.  The cap counts result bytes only.
*/
#include "elastic/cl_startup.h"
#include "elastic/cl_sorted.h"

#include "mpi_collab.h"
#include "util/cl_log.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t index;     /* start-up index */
    uint32_t signature; /* signature of the collective */
    uint8_t *data;      /* copy of the result, NULL when len is 0 */
    size_t len;         /* result size */
} st_entry_t;
_Static_assert(offsetof(st_entry_t, index) == 0, "cl_sorted keys on the first member");

struct cl_startup {
    st_entry_t *v;     /* sorted by index */
    size_t n, cap;     /* entries used, room */
    size_t bytes;      /* sum of len */
    size_t cap_bytes;  /* bound on bytes */
    uint64_t overflow; /* lowest refused index, CL_STARTUP_NONE = none */
    bool warned;       /* the overflow warning was given */
};

cl_startup_t *cl_startup_new(size_t cap_bytes)
{
    cl_startup_t *self = calloc(1, sizeof *self);
    if (self == NULL)
        return NULL;
    self->cap_bytes = cap_bytes > 0 ? cap_bytes : CL_STARTUP_DEFAULT_CAP;
    self->overflow = CL_STARTUP_NONE;
    return self;
}

void cl_startup_destroy(cl_startup_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    cl_startup_t *self = *self_p;
    for (size_t i = 0; i < self->n; i++)
        free(self->v[i].data);
    free(self->v);
    free(self);
    *self_p = NULL;
}

/* Position of index in v, or where it would be inserted (*found false). */
static size_t locate(const cl_startup_t *self, uint64_t index, bool *found)
{
    return cl_sorted_locate(self->v, self->n, sizeof *self->v, index, found);
}

static void to_public(const st_entry_t *e, cl_startup_entry_t *out)
{
    out->index = e->index;
    out->signature = e->signature;
    out->data = e->data;
    out->len = e->len;
}

int cl_startup_put(cl_startup_t *self, uint64_t index, uint32_t signature, const void *data,
                   size_t len)
{
    if (self == NULL || (data == NULL && len > 0))
        return COLLAB_ERR_ARG;
    bool found;
    size_t pos = locate(self, index, &found);
    if (found)
        return COLLAB_ERR_ARG;
    if (len > self->cap_bytes - self->bytes) {
        if (index < self->overflow)
            self->overflow = index;
        if (!self->warned) {
            bool mib = self->cap_bytes % ((size_t)1 << 20) == 0;
            cl_warn("the results of start-up collectives pass %zu %s at collective #%llu (%zu "
                    "bytes); unless training starts before it, joiners cannot be admitted",
                    mib ? self->cap_bytes >> 20 : self->cap_bytes, mib ? "MiB" : "bytes",
                    (unsigned long long)index, len);
        }
        self->warned = true;
        return COLLAB_ERR_NO_MEM;
    }
    st_entry_t *v = cl_sorted_grow(self->v, self->n, &self->cap, sizeof *v);
    if (v == NULL)
        return COLLAB_ERR_NO_MEM;
    self->v = v;
    uint8_t *copy = NULL;
    if (len > 0) {
        copy = malloc(len);
        if (copy == NULL)
            return COLLAB_ERR_NO_MEM;
        memcpy(copy, data, len);
    }
    cl_sorted_open(self->v, self->n, sizeof *self->v, pos);
    self->v[pos] = (st_entry_t){.index = index, .signature = signature, .data = copy, .len = len};
    self->n++;
    self->bytes += len;
    return COLLAB_OK;
}

int cl_startup_get(const cl_startup_t *self, uint64_t index, cl_startup_entry_t *out)
{
    if (self == NULL || out == NULL)
        return COLLAB_ERR_ARG;
    bool found;
    size_t i = locate(self, index, &found);
    if (!found)
        return COLLAB_ERR_ARG;
    to_public(&self->v[i], out);
    return COLLAB_OK;
}

int cl_startup_answer(const cl_startup_t *self, uint64_t index, uint32_t signature, void *dst,
                      size_t len)
{
    cl_startup_entry_t e;
    if (self == NULL || (dst == NULL && len > 0) || cl_startup_get(self, index, &e) != COLLAB_OK)
        return COLLAB_ERR_ARG;
    if (e.signature != signature || e.len != len) {
        cl_error("start-up collective #%llu of this peer (signature %08x, %zu bytes of result) "
                 "differs from the swarm's (signature %08x, %zu bytes): is every peer running "
                 "the same program?",
                 (unsigned long long)index, signature, len, e.signature, e.len);
        return COLLAB_ERR_ARG;
    }
    if (len > 0)
        memcpy(dst, e.data, len);
    return COLLAB_OK;
}

size_t cl_startup_trim(cl_startup_t *self, uint64_t prefix)
{
    if (self == NULL)
        return 0;
    bool found;
    size_t i = locate(self, prefix, &found);
    size_t gone = self->n - i;
    for (size_t k = i; k < self->n; k++) {
        self->bytes -= self->v[k].len;
        free(self->v[k].data);
    }
    self->n = i;
    if (self->overflow != CL_STARTUP_NONE && self->overflow >= prefix)
        self->overflow = CL_STARTUP_NONE;
    return gone;
}

uint64_t cl_startup_overflow(const cl_startup_t *self)
{
    return self != NULL ? self->overflow : CL_STARTUP_NONE;
}

size_t cl_startup_count(const cl_startup_t *self)
{
    return self != NULL ? self->n : 0;
}

size_t cl_startup_bytes(const cl_startup_t *self)
{
    return self != NULL ? self->bytes : 0;
}

bool cl_startup_complete(const cl_startup_t *self, uint64_t prefix,
                         bool (*is_bcast)(uint64_t index, void *ctx), void *ctx)
{
    if (self == NULL || prefix > CL_STARTUP_MAX_PREFIX)
        return false;
    if (self->overflow < prefix)
        return false;
    size_t j = 0;
    for (uint64_t i = 0; i < prefix; i++) {
        while (j < self->n && self->v[j].index < i)
            j++;
        bool kept = j < self->n && self->v[j].index == i;
        if (!kept && (is_bcast == NULL || !is_bcast(i, ctx)))
            return false;
    }
    return true;
}

bool cl_startup_first(const cl_startup_t *self, cl_startup_entry_t *out)
{
    if (self == NULL || out == NULL || self->n == 0)
        return false;
    to_public(&self->v[0], out);
    return true;
}

bool cl_startup_next(const cl_startup_t *self, uint64_t after, cl_startup_entry_t *out)
{
    if (self == NULL || out == NULL || after == CL_STARTUP_NONE)
        return false;
    bool found;
    size_t i = locate(self, after + 1, &found);
    if (i >= self->n)
        return false;
    to_public(&self->v[i], out);
    return true;
}
