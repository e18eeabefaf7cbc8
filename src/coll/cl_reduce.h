/*  cl_reduce.h - reduction kernels and wire compression for every
    datatype x op of mpi_collab.h.

    Kernels are plain loops over typed arrays that the compiler vectorises.
    The order of operations is fixed by the caller (rank order), so every
    member that runs the same sequence of calls gets the same bits.
*/
#ifndef CL_REDUCE_H_INCLUDED
#define CL_REDUCE_H_INCLUDED

#include "mpi_collab.h"
#include <stddef.h>
#include <stdint.h>

/* inout[i] = in[i] (op) inout[i] for count elements of type t.  For
   COLLAB_OP_USER calls op->user_fn.  Returns 0, or COLLAB_ERR_OP when op is
   undefined for t (see collab_op_valid). */
int cl_reduce(const collab_op_t *op, collab_dtype_t t, const void *in, void *inout,
              size_t count);

/* Folds n inputs (given in rank order) into out, which may alias none of
   them:  out = in[0] (op) in[1] (op) ... (op) in[n-1], evaluated so that a
   non-commutative user op sees MPI's order.  n >= 1. */
int cl_reduce_fold(const collab_op_t *op, collab_dtype_t t, void *out,
                   const void *const *in, int n, size_t count);

/* DESIGN §2 rule for MPI_SUM with ranks absent or weights set:
   out[k] = scale * sum_i w[i] * in[i][k], summed in rank order i = 0..n-1,
   integers rounded to nearest (ties away from zero) and saturated to the
   type's range; complex types scale both parts.  Caller passes
   scale = size / sum(w).  Only for SUM-able types (not pair types, bool). */
int cl_reduce_weighted_sum(collab_dtype_t t, void *out, const void *const *in,
                           const double *w, int n, size_t count, double scale);

/* True when the plain (unweighted) sum must be used: every rank present
   (n == size) and all weights equal. */
int cl_reduce_is_plain_sum(int n, int size, const double *w);

/* Wire compression of float payloads of SUM (DESIGN §5). */
typedef enum { CL_COMPRESS_NONE = 0, CL_COMPRESS_FP16 = 1, CL_COMPRESS_INT8 = 2 } cl_compress_t;

/* Bytes needed to encode count elements of t with codec c (t must be
   COLLAB_FLOAT or COLLAB_DOUBLE for FP16/INT8, otherwise c is NONE). */
size_t cl_compress_bound(cl_compress_t c, collab_dtype_t t, size_t count);

/* Encodes count elements into dst (cl_compress_bound bytes).  Returns the
   number of bytes written. */
size_t cl_compress_encode(cl_compress_t c, collab_dtype_t t, const void *src, size_t count,
                          void *dst);

/* Decodes len bytes into count elements at dst.  Returns 0, or
   COLLAB_ERR_ARG when len does not match (malformed input from the net). */
int cl_compress_decode(cl_compress_t c, collab_dtype_t t, const void *src, size_t len,
                       size_t count, void *dst);

#endif
