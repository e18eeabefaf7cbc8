/*  cli_tmap.h - type maps of non-contiguous derived datatypes.

    A type map lists, for one element of a datatype, the byte runs that
    hold data, in the type's order (adjacent runs merged), with the
    element's bounds.  Every derived datatype that is not one dense run
    starting at its buffer (strided vectors, indexed, struct, resized,
    subarray, darray and anything built on them) carries one; the face
    packs such data into a dense buffer before the core sees it and
    unpacks it after.  Datatypes without a map keep the old fast path:
    count x extent bytes straight from the caller's buffer.
*/
#ifndef CLI_TMAP_H_INCLUDED
#define CLI_TMAP_H_INCLUDED

#include "cli.h"

typedef struct {
    MPI_Count disp; /* bytes from the element's origin (may be negative) */
    MPI_Count len;  /* bytes of data */
} cli_seg_t;

struct cli_tmap {
    MPI_Count nseg;    /* runs in segs */
    cli_seg_t *segs;   /* owned */
    MPI_Count size;    /* sum of the run lengths */
    MPI_Count lb, ub;  /* bounds: extent = ub - lb */
    MPI_Count true_lb; /* first byte of data (0 when size is 0) */
    MPI_Count true_ub; /* one past the last byte of data */
    MPI_Count align;   /* largest alignment of the basic types in it */
    int homog;         /* predefined id of the only basic type, or -1 */
    MPI_Count nbasic;  /* basic elements in one element (for Get_elements) */
};

/* A map under construction: children appended one block at a time. */
typedef struct {
    cli_tmap_t *m; /* the map being built (owned until cli_tmap_finish) */
    MPI_Count cap; /* capacity of m->segs */
    int any;       /* a child has been appended (bounds valid) */
    int err;       /* MPI_ERR_NO_MEM or MPI_ERR_COUNT once something failed */
} cli_tmap_builder_t;

/* Starts a map; returns MPI_SUCCESS or MPI_ERR_NO_MEM. */
int cli_tmap_begin(cli_tmap_builder_t *b);
/* Appends `count` consecutive elements of child (each child extent
   apart), the first with its origin at byte `disp`. */
void cli_tmap_add(cli_tmap_builder_t *b, const cli_type_t *child, MPI_Count disp, MPI_Count count);
/* Ends the map: caller owns the result, or gets NULL and *err set (the
   builder is released either way). */
cli_tmap_t *cli_tmap_finish(cli_tmap_builder_t *b, int *err);
void cli_tmap_destroy(cli_tmap_t **self_p);
/* The map of n consecutive elements of old (contiguous, dup): caller
   owns it; NULL and *err on failure. */
cli_tmap_t *cli_tmap_repeat(const cli_type_t *old, MPI_Count n, int *err);

/* Packs count elements of t from buf into out (count x t->size bytes),
   or unpacks them back.  Types without a map copy count x size bytes
   (pair types dropping their padding). */
void cli_tmap_pack(const cli_type_t *t, MPI_Count count, const void *buf, void *out);
void cli_tmap_unpack(const cli_type_t *t, MPI_Count count, const void *in, void *buf);
/* Unpacks only the first `bytes` packed bytes (a short message). */
void cli_tmap_unpack_part(const cli_type_t *t, MPI_Count bytes, const void *in, void *buf);

/* 1 when count elements of t are not count x extent bytes at buf (the
   data must go through pack and unpack). */
static inline int cli_type_sparse(const cli_type_t *t)
{
    return t->map != NULL;
}

/* Constructors (cli_type_derived.c).  cli_type_vector makes a vector
   (bytes 0: stride in old extents) or hvector (bytes 1), int or large
   form, as the bindings do. */
int cli_type_vector(cli_call_t *call, MPI_Count count, MPI_Count bl, MPI_Count stride,
                    MPI_Datatype old, int bytes, int large, MPI_Datatype *newtype);
/* The recorded constructor arguments: 0 when t has none (then the
   caller answers from the old fields); contents returns new references
   to derived types, as MPI_Type_get_contents must. */
/* The type signature of t one level down, in order: fn(ctx, child, reps)
   for each block of a struct, else once for the type t was built from,
   repeated t->size / child->size times; nothing for a predefined type.
   Returns 0 or the first non-zero result of fn. */
typedef int cli_child_fn(void *ctx, const cli_type_t *child, MPI_Count reps);
int cli_type_children(const cli_type_t *t, cli_child_fn *fn, void *ctx);
/* Contents of a type whose constructor took only integers (n of them,
   copied): the Fortran 90 parameterized types.  NULL when out of memory;
   the type that takes it owns it. */
cli_tcontents_t *cli_tc_ints(int combiner, int n, const int *ints);
/* 1 when t was made by MPI_Type_create_f90_*: it counts as the predefined
   type it stands for (t->base_predef) wherever the standard says so. */
int cli_type_f90(const cli_type_t *t);
int cli_tc_envelope(const cli_type_t *t, MPI_Count *ni, MPI_Count *na, MPI_Count *nl, MPI_Count *nd,
                    int *combiner);
void cli_tc_contents(const cli_type_t *t, int *ints, MPI_Aint *addrs, MPI_Count *larges,
                     MPI_Datatype *types);
/* Releases t's contents (cli.lock held). */
void cli_tc_destroy(cli_tcontents_t **self_p);

#endif
