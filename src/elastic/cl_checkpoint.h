/*  cl_checkpoint.h - a swarm's registered state on disk (docs/monitor.md §7).

    A checkpoint holds what a joiner receives at admission: the start-up
    prefix P and the signatures of the start-up collectives, the contents
    of every registered start-up broadcast and the kept results of the
    other start-up collectives, all as they were at the step boundary s
    (the group's collective sequence) that begins step `step`.  The file
    carries a BLAKE2b-256 hash of each item and of the whole file; a file
    whose hashes do not match, that is cut short, or whose counts exceed
    the bounds below is refused with a message naming what is wrong.
    Files are written atomically (a temporary file, fsync, rename) and
    named by step, so that the newest sorts last.  Pure file I/O: no
    sockets, no clock.
*/
#ifndef CL_CHECKPOINT_H_INCLUDED
#define CL_CHECKPOINT_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_CKPT_HASH 32         /* BLAKE2b-256 */
#define CL_CKPT_MAX_ITEMS 8192  /* 4096 buffers and 4096 results (docs/state-sync.md §7) */
#define CL_CKPT_MAX_PREFIX 4096 /* start-up collectives */
#define CL_CKPT_RUN_ID_MAX 128  /* as COLLAB_RUN_ID */
#define CL_CKPT_KEEP 3          /* checkpoints kept in a directory by cl_checkpoint_prune */
#define CL_CKPT_ERR_MAX 8448    /* room for an error message (a path and why) */

enum { CL_CKPT_BUFFER = 0, CL_CKPT_RESULT = 1 };

/* One item: a start-up broadcast buffer or a start-up result. */
typedef struct {
    uint8_t what;               /* CL_CKPT_BUFFER or CL_CKPT_RESULT */
    uint32_t signature;         /* a result's stream signature (0 for buffers) */
    uint64_t index;             /* start-up index */
    uint64_t size;              /* bytes */
    uint8_t hash[CL_CKPT_HASH]; /* BLAKE2b-256 of size (u64 LE) || data, as in state sync */
    uint8_t *data;              /* size bytes (NULL when 0) */
} cl_ckpt_item_t;

typedef struct {
    char run_id[CL_CKPT_RUN_ID_MAX + 1]; /* the swarm's COLLAB_RUN_ID */
    uint64_t step;                       /* the step the state begins (steps completed before it) */
    uint64_t seq;    /* the group's collective sequence s of that step boundary */
    uint64_t prefix; /* start-up collectives P */
    uint32_t *sigs;  /* their stream signatures, prefix of them */
    cl_ckpt_item_t *items;
    uint32_t nitems;
} cl_ckpt_t;

/* BLAKE2b-256 over len (u64 LE) || data: the state-sync hash of an item. */
void cl_checkpoint_item_hash(const void *data, uint64_t len, uint8_t out[CL_CKPT_HASH]);

/* Writes c to DIR/checkpoint-<step>.ckpt through DIR/.checkpoint-<step>.tmp,
   fsync and rename.  Returns 0, or -1 with a message in err (errno's
   text and the path).  Items must be sorted by (what, index), unique. */
int cl_checkpoint_write(const char *dir, const cl_ckpt_t *c, char *path_out, size_t path_cap,
                        char err[CL_CKPT_ERR_MAX]);

/* Reads and verifies path into *c (free with cl_checkpoint_clear).
   Returns 0, or -1 with err saying why the file is refused (not a
   checkpoint, another version, cut short, a count beyond the bounds, a
   hash that does not match).  Never allocates more than the file's size
   plus the bounded tables. */
int cl_checkpoint_read(const char *path, cl_ckpt_t *c, char err[CL_CKPT_ERR_MAX]);

/* Frees what cl_checkpoint_read allocated and zeroes *c. */
void cl_checkpoint_clear(cl_ckpt_t *c);

/* The newest checkpoint of dir that reads and verifies: 0 with *c and
   path_out filled; 1 when there is none (each refused file is logged as
   a warning with its reason, and the next older one is tried); -1 when
   dir cannot be read (err). */
int cl_checkpoint_latest(const char *dir, cl_ckpt_t *c, char *path_out, size_t path_cap,
                         char err[CL_CKPT_ERR_MAX]);

/* Deletes all but the `keep` newest checkpoints of dir (and leftover
   temporary files).  Returns how many files it removed, or -1. */
int cl_checkpoint_prune(const char *dir, int keep);

#endif
