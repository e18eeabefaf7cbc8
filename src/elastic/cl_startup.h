/*  cl_startup.h - results of start-up collectives, kept for joiners
    (docs/elastic.md §3 step 4).

    A joiner does not run its start-up collectives 0..P-1 in the group.
    Its start-up broadcasts are answered from the registered state buffers
    (cl_statereg); every other start-up collective is answered with the
    result the veterans obtained at the time.  Every member therefore
    keeps, by start-up index, the signature and result bytes of each
    non-broadcast collective it completed before the start-up prefix was
    known, and forgets those at or after P once it is (cl_startup_trim).
    A joiner fills its own store with the answers it receives and serves
    its start-up collectives from it, checking signatures.

    The store is bounded (64 MiB by default): a result that does not fit
    is refused, the lowest refused index is remembered, and a warning is
    logged once.  Pure logic; one thread at a time (the engine thread).
*/
#ifndef CL_STARTUP_H_INCLUDED
#define CL_STARTUP_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_STARTUP_DEFAULT_CAP ((size_t)64 << 20) /* bytes of results kept at most */
#define CL_STARTUP_NONE UINT64_MAX                /* no index */
#define CL_STARTUP_MAX_PREFIX 65536               /* see cl_startup_complete */

typedef struct cl_startup cl_startup_t;

/* One kept result, as the iterator and cl_startup_get report it.  data
   points into the store: valid until the entry is trimmed or the store
   destroyed. */
typedef struct {
    uint64_t index;     /* start-up index of the collective */
    uint32_t signature; /* its signature */
    const void *data;   /* result bytes (NULL when len is 0) */
    size_t len;         /* result size */
} cl_startup_entry_t;

/* Creates an empty store keeping at most cap_bytes of results (0: the
   default, CL_STARTUP_DEFAULT_CAP).  Returns NULL on allocation failure.
   Caller owns the result. */
cl_startup_t *cl_startup_new(size_t cap_bytes);

/* Destroys the store and nulls *self_p; accepts NULL. */
void cl_startup_destroy(cl_startup_t **self_p);

/* Keeps a copy of the result of start-up collective `index`.  Returns 0;
   COLLAB_ERR_ARG when index is already kept or data is NULL with len > 0;
   COLLAB_ERR_NO_MEM when the result would pass the cap (the index is then
   remembered, see cl_startup_overflow; warned once) or allocation fails. */
int cl_startup_put(cl_startup_t *self, uint64_t index, uint32_t signature, const void *data,
                   size_t len);

/* Looks up the result of `index`.  Returns 0 and fills *out, or
   COLLAB_ERR_ARG when none is kept. */
int cl_startup_get(const cl_startup_t *self, uint64_t index, cl_startup_entry_t *out);

/* Serves a joiner's own start-up collective `index`: copies the kept
   result into dst when the signature and length match the joiner's call.
   Returns 0; COLLAB_ERR_ARG when no result is kept for index, or when the
   signature or length differ (the joiner runs a different program; logged
   as an error naming both signatures). */
int cl_startup_answer(const cl_startup_t *self, uint64_t index, uint32_t signature, void *dst,
                      size_t len);

/* Forgets every result at index >= prefix (they were not start-up
   collectives) and clears the overflow mark when it lay there.  Returns
   the number forgotten. */
size_t cl_startup_trim(cl_startup_t *self, uint64_t prefix);

/* The lowest index whose result was refused for lack of room, or
   CL_STARTUP_NONE.  When it is below the start-up prefix, joiners cannot
   be answered and must not be admitted. */
uint64_t cl_startup_overflow(const cl_startup_t *self);

/* Results kept and their total size in bytes. */
size_t cl_startup_count(const cl_startup_t *self);
size_t cl_startup_bytes(const cl_startup_t *self);

/* True when every index in [0, prefix) that is not a broadcast has a
   result and none was refused: is_bcast(index, ctx) (may be NULL) tells
   which are broadcasts.  A convenience for deciding whether joiners can
   be admitted.  A prefix above CL_STARTUP_MAX_PREFIX gives false. */
bool cl_startup_complete(const cl_startup_t *self, uint64_t prefix,
                         bool (*is_bcast)(uint64_t index, void *ctx), void *ctx);

/* Iteration in ascending index, as in cl_statereg: first, then next above
   `after`; false when there is none. */
bool cl_startup_first(const cl_startup_t *self, cl_startup_entry_t *out);
bool cl_startup_next(const cl_startup_t *self, uint64_t after, cl_startup_entry_t *out);

#endif
