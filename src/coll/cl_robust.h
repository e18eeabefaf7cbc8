/*  cl_robust.h - robust aggregation of float SUM contributions.

    With COLLAB_AGGREGATION=trimmed_mean or centered_clip, a world
    all-reduce of floats with MPI_SUM is not a sum of whatever the members
    sent but size x a robust weighted mean of their contributions, so that
    one member with the swarm key cannot move the result far (docs/security.md).
    Every member calls this with the same inputs in the same order and gets
    the same bits (doubles, fixed order of operations, no FMA contraction).
*/
#ifndef CL_ROBUST_H_INCLUDED
#define CL_ROBUST_H_INCLUDED

#include "mpi_collab.h"
#include <stddef.h>
#include <stdint.h>

/* Aggregation modes; the values travel on the wire (docs/wire.md). */
typedef enum {
    CL_AGG_MEAN = 0,          /* MPICH's sum (DESIGN's weighted mean rule); no exclusion */
    CL_AGG_TRIMMED_MEAN = 1,  /* per element, drop the ceil(n/10) lowest and highest */
    CL_AGG_CENTERED_CLIP = 2, /* centered clipping around the median */
} cl_agg_t;

#define CL_ROBUST_CLIP_ITERS 3 /* centered clip iterations */

/* out = size x the robust weighted mean of the n inputs (count elements
   of type t, COLLAB_FLOAT or COLLAB_DOUBLE), mode TRIMMED_MEAN or
   CENTERED_CLIP:
     1. an input with a non-finite element is left out (kept[i] = 0);
     2. each weight counts at most max_ratio x the lower median of the
        positive weights kept (max_ratio 0: no cap; all weights 0: every
        weight 1);
     3. the mode's estimate, element by element (trimmed mean) or over the
        whole vector (centered clip, radius = the median distance from the
        coordinate-wise median).
   With at most 2 inputs kept, out is size x their weighted mean (two
   contributions cannot outvote each other).  When no input is finite, out
   is size x the weighted mean of all of them (non-finite values
   propagate, as with mean) and every kept[i] is 1.
   kept has n bytes.  Returns 0, COLLAB_ERR_TYPE for another type,
   COLLAB_ERR_ARG for n < 1 or another mode, COLLAB_ERR_NO_MEM. */
int cl_robust_aggregate(cl_agg_t mode, collab_dtype_t t, void *out, const void *const *in,
                        const double *w, int n, size_t count, double size, double max_ratio,
                        uint8_t *kept);

/* Number of inputs trimmed from each end by TRIMMED_MEAN among n. */
int cl_robust_trim(int n);

#endif
