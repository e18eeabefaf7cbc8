/*  cli_stage.h - dense staging buffers for non-contiguous datatypes.

    The core moves bytes from one dense buffer.  When a call's datatype
    has a type map (cli_tmap.h), the face packs the program's data into a
    stage before a send and unpacks a stage into the program's buffer
    after a receive.  A stage lists blocks: count elements of its type at
    a byte offset of the program's buffer, and where they lie, packed, in
    the stage.  It holds a reference on the type, so a program may free
    the datatype while the operation runs, as MPI allows.
*/
#ifndef CLI_STAGE_H_INCLUDED
#define CLI_STAGE_H_INCLUDED

#include "cli.h"

typedef struct {
    MPI_Count toff;  /* bytes from the program's buffer to the block's first element */
    MPI_Count poff;  /* bytes from the stage's start to the block, packed */
    MPI_Count count; /* elements of the type */
} cli_stage_block_t;

typedef struct cli_stage {
    cli_type_t *type;          /* holds a reference */
    char *buf;                 /* the program's buffer (not owned) */
    char *tmp;                 /* the packed data (owned) */
    MPI_Count bytes;           /* size of tmp */
    int nblk;                  /* blocks */
    cli_stage_block_t *blk;    /* owned */
    struct cli_stage *next;    /* a second stage released with this one */
    cli_req_finish_fn chained; /* the request's own hook, run first */
    void *chained_aux;
    int unpack; /* unpack at completion */
} cli_stage_t;

/* A stage of nblk blocks (blk copied) of type t over buf, with `bytes`
   of packed room: caller owns it (cli_stage_destroy); NULL when out of
   memory. */
cli_stage_t *cli_stage_new(cli_type_t *t, void *buf, int nblk, const cli_stage_block_t *blk,
                           MPI_Count bytes);
/* One block of count elements at the buffer's start. */
cli_stage_t *cli_stage_one(cli_type_t *t, const void *buf, MPI_Count count);
/* The error for a stage that could not be made: MPI_ERR_BUFFER when the
   buffer is device memory (non-contiguous types are packed on the host,
   which cannot read it), else MPI_ERR_NO_MEM with `what`. */
int cli_stage_fail(cli_call_t *call, const char *what);
void cli_stage_pack(cli_stage_t *s);
void cli_stage_unpack(cli_stage_t *s);
/* Unpacks only the first `bytes` packed bytes of a one-block stage. */
void cli_stage_unpack_part(cli_stage_t *s, MPI_Count bytes);
void cli_stage_destroy(cli_stage_t **self_p);

/* Attaches stage s to the request h that a binding just created: when
   the request completes, its own hook runs first, then s is unpacked
   (if s->unpack and the operation succeeded) and destroyed.  A request
   already complete is finished at once.  Takes ownership of s. */
void cli_stage_attach(MPI_Request h, cli_stage_t *s);
/* The request hook of a stage used directly with cli_req_start. */
int cli_stage_finish(cli_req_t *r, int status, collab_status_info_t *st);

#endif
