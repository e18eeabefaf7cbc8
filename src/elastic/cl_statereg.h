/*  cl_statereg.h - the registry of state buffers (docs/elastic.md §4,
    docs/state-sync.md).

    Every buffer this peer passed to a start-up MPI_Bcast is registered by
    its start-up index: address and size, never a copy.  When a joiner is
    admitted, donors hash and read the buffers' CURRENT contents (their
    program is then blocked inside a collective, so the contents are
    consistent); when a straggler is resynced, its buffers are overwritten
    with the group's contents.  Every access to the program's memory goes
    through process_vm_readv / process_vm_writev on this process, so a
    buffer the program has freed, unmapped or shortened gives
    COLLAB_ERR_ARG, never a crash.  (Where the kernel refuses those calls,
    e.g. under a seccomp filter, a pipe carries the bytes instead, with the
    same guarantee.)

    The registry holds addresses only: buffers belong to the program.
    Pure logic, no sockets; one thread at a time (the engine thread).
*/
#ifndef CL_STATEREG_H_INCLUDED
#define CL_STATEREG_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_STATEREG_MAX 4096                /* buffers registered at most */
#define CL_STATEREG_HASH_BYTES 32           /* BLAKE2b-256 */
#define CL_STATEREG_CHUNK ((size_t)1 << 20) /* bytes hashed per read */
#define CL_STATEREG_MAX_MOVES (1u << 20)    /* followed copies kept at most, all buffers */

typedef struct cl_statereg cl_statereg_t;

/* One registered buffer, as the iterator reports it. */
typedef struct {
    uint64_t index; /* start-up index of the broadcast */
    void *addr;     /* the program's buffer (never dereferenced directly) */
    size_t bytes;   /* its size */
    size_t moved;   /* bytes read and written at followed copies instead (cl_statereg_follow) */
} cl_statereg_entry_t;

/* Creates an empty registry.  Returns NULL on allocation failure or when
   libsodium cannot be initialised.  Caller owns the result. */
cl_statereg_t *cl_statereg_new(void);

/* Destroys the registry (the buffers are the program's) and nulls
 *self_p; accepts NULL. */
void cl_statereg_destroy(cl_statereg_t **self_p);

/* Registers the buffer of start-up broadcast `index`.  bytes may be 0.
   Returns 0; COLLAB_ERR_ARG when index is already registered, addr is
   NULL with bytes > 0, the range wraps around the address space, or the
   registry is full (CL_STATEREG_MAX); COLLAB_ERR_NO_MEM. */
int cl_statereg_add(cl_statereg_t *self, uint64_t index, void *addr, size_t bytes);

/* Looks up entry `index`.  Returns 0 and fills *out, or COLLAB_ERR_ARG. */
int cl_statereg_find(const cl_statereg_t *self, uint64_t index, cl_statereg_entry_t *out);

/* Number of registered buffers and their total size in bytes. */
size_t cl_statereg_count(const cl_statereg_t *self);
uint64_t cl_statereg_total(const cl_statereg_t *self);

/* Iteration in ascending index: first fills *out with the lowest entry,
   next with the lowest entry above `after`.  Both return false when there
   is none.  Dropping entries while iterating is safe. */
bool cl_statereg_first(const cl_statereg_t *self, cl_statereg_entry_t *out);
bool cl_statereg_next(const cl_statereg_t *self, uint64_t after, cl_statereg_entry_t *out);

/* Copies len bytes at offset of buffer `index`, as they are now, into dst
   (the caller's memory).  Returns 0; COLLAB_ERR_ARG when index is not
   registered, offset + len exceeds the registered size, or any of the
   bytes cannot be read (unmapped); dst may then be partly written. */
int cl_statereg_read(cl_statereg_t *self, uint64_t index, size_t offset, size_t len, void *dst);

/* Hash of buffer `index` as it is now: BLAKE2b-256 over the size as 8
   little-endian bytes followed by the contents, read in chunks of
   CL_STATEREG_CHUNK.  Returns 0 and fills out; COLLAB_ERR_ARG when not
   registered or unreadable; COLLAB_ERR_NO_MEM. */
int cl_statereg_hash(cl_statereg_t *self, uint64_t index, uint8_t out[CL_STATEREG_HASH_BYTES]);

/* Overwrites len bytes at offset of buffer `index` with src (resync of a
   straggler).  Returns 0; COLLAB_ERR_ARG as for read, or when the memory
   is not writable; the buffer may then be partly written. */
int cl_statereg_write(cl_statereg_t *self, uint64_t index, size_t offset, const void *src,
                      size_t len);

/* Forgets buffer `index` and logs a warning naming it and the reason
   (e.g. "its contents differ between peers"): joiners then keep their own
   value for that broadcast.  Returns 0 or COLLAB_ERR_ARG (not registered). */
int cl_statereg_drop(cl_statereg_t *self, uint64_t index, const char *reason);

/* Forgets, without a warning, every buffer at index >= prefix: once the
   stream's start-up prefix is known, later broadcasts are not start-up
   state.  Returns the number forgotten. */
size_t cl_statereg_trim(cl_statereg_t *self, uint64_t prefix);

/* Records that len bytes at src, inside a registered buffer, were copied
   to dst by the program (a trainer that broadcasts a temporary bucket and
   copies it into its parameters, docs/nccl.md §5).  The buffer is the
   registered one with the highest index whose range holds src; a copy that
   runs past its end is cut there and the rest attributed again.  From then
   on every read, write and hash of those bytes of the buffer uses dst
   instead of the buffer's own address; bytes already followed keep their
   first destination.  Returns the number of bytes attributed (0 when src
   lies in no registered buffer), or COLLAB_ERR_ARG (NULL pointers with
   len > 0, a range that wraps), COLLAB_ERR_NO_MEM.  Past
   CL_STATEREG_MAX_MOVES followed copies (one warning) nothing more is
   recorded and 0 is returned. */
long long cl_statereg_follow(cl_statereg_t *self, const void *src, void *dst, size_t len);

/* For tests: carry bytes through a pipe instead of process_vm_readv/writev
   (the path taken when the kernel refuses those calls). */
void cl_statereg_use_pipe(cl_statereg_t *self);

/* ---------------------------------------------------------------------- */
/* Striping: a joiner pulls each buffer in stripes from several donors. */

#define CL_STRIPE_MAX 4    /* donors per buffer at most */
#define CL_STRIPE_ALIGN 64 /* stripe offsets are multiples of this */

typedef struct {
    int donor;       /* index of the donor, 0 .. ndonors-1 */
    uint64_t offset; /* first byte of the stripe */
    uint64_t len;    /* bytes in the stripe (> 0) */
} cl_stripe_t;

/* Cuts a buffer of total_bytes into at most min(ndonors, CL_STRIPE_MAX)
   contiguous stripes, each at least min_stripe bytes (a buffer smaller
   than that is one stripe), offsets aligned to CL_STRIPE_ALIGN, the last
   stripe taking the remainder.  Stripe k goes to donor (rotation + k) %
   ndonors: pass e.g. the buffer's index plus the joiner's rank so that
   load spreads over every donor.  Fills out[] and returns the number of
   stripes (0 when total_bytes is 0), or COLLAB_ERR_ARG when ndonors < 1,
   min_stripe is 0 or out is NULL. */
int cl_stripe_plan(uint64_t total_bytes, int ndonors, uint64_t min_stripe, unsigned rotation,
                   cl_stripe_t out[CL_STRIPE_MAX]);

#endif
