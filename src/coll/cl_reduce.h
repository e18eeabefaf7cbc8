/*  cl_reduce.h - reduction kernels and wire compression for every
    datatype x op of mpi_collab.h.

    Kernels are plain loops over typed arrays that the compiler vectorises.
    The order of operations is fixed by the caller (rank order), so every
    member that runs the same sequence of calls gets the same bits.

    Which op is defined for which datatype is MPI's table (MPI-4.0 6.9.2),
    see collab_op_valid(); MPI_REPLACE and MPI_NO_OP are accumulate-only
    (one-sided, out of scope) and are rejected like any undefined pair.
    Semantics follow MPICH: integer SUM/PROD wrap modulo 2^bits; MAX/MIN
    keep inout when inout > in (resp. <), else take in (so NaN in inout is
    replaced, NaN in in kept); logical ops yield 0/1; MAXLOC/MINLOC keep the
    smaller index on equal values and write only the value and index
    fields; FLOAT16 results are the correctly rounded binary16 results.
    Buffers may start at any byte address (frames from the network).
*/
#ifndef CL_REDUCE_H_INCLUDED
#define CL_REDUCE_H_INCLUDED

#include "mpi_collab.h"
#include <stddef.h>
#include <stdint.h>

/* inout[i] = in[i] (op) inout[i] for count elements of type t.  For
   COLLAB_OP_USER calls op->user_fn.  Returns 0, or COLLAB_ERR_OP when op is
   undefined for t (see collab_op_valid) or op is NULL or a user op has no
   function, COLLAB_ERR_TYPE when t is out of range, COLLAB_ERR_ARG for a
   NULL buffer with count > 0.  in and inout must not overlap. */
int cl_reduce(const collab_op_t *op, collab_dtype_t t, const void *in, void *inout, size_t count);

/* Folds n inputs (given in rank order) into out, which may alias none of
   them:  out = in[0] (op) in[1] (op) ... (op) in[n-1], evaluated left to
   right, so a non-commutative user op sees MPI's order.  n >= 1.
   Bit for bit, a built-in op gives what acc = copy of in[0], then
   cl_reduce(op, t, in[i], acc, count) for i = 1 .. n-1 gives (so a reducer
   that folds chunks as they arrive, in rank order, gets the same bits); a
   user op gives acc = copy of in[0], then for i = 1 .. n-1: y = copy of
   in[i], cl_reduce(op, t, acc, y, count), acc = y.  Errors as cl_reduce,
   COLLAB_ERR_ARG when n < 1, COLLAB_ERR_NO_MEM when a user op over n > 2
   inputs cannot get its temporary buffer. */
int cl_reduce_fold(const collab_op_t *op, collab_dtype_t t, void *out, const void *const *in, int n,
                   size_t count);

/* DESIGN §2 rule for MPI_SUM with ranks absent or weights set:
   out[k] = scale * sum_i w[i] * in[i][k], summed in rank order i = 0..n-1,
   integers rounded to nearest (ties away from zero) and saturated to the
   type's range; complex types scale both parts.  Caller passes
   scale = size / sum(w).  Only for SUM-able types (not pair types, bool).
   w == NULL means every weight is 1.  Sums are kept in double (long double
   for 64-bit integers and long double types) and rounded once to the type.
   Returns 0; COLLAB_ERR_OP for a type without SUM, COLLAB_ERR_TYPE for t
   out of range, COLLAB_ERR_ARG for n < 1, a NULL buffer, a weight that is
   negative or not finite, or a scale that is negative or not finite.  out
   may alias none of the inputs. */
int cl_reduce_weighted_sum(collab_dtype_t t, void *out, const void *const *in, const double *w,
                           int n, size_t count, double scale);

/* True when the plain (unweighted) sum must be used: every rank present
   (n == size) and all weights equal.  w == NULL means all weights are 1. */
int cl_reduce_is_plain_sum(int n, int size, const double *w);

/* Wire compression of float payloads of SUM (DESIGN §5).

   Formats (all little-endian, no header; the count travels elsewhere):
   - CL_COMPRESS_NONE: the raw elements, count * extent bytes.
   - CL_COMPRESS_FP16: count IEEE binary16 values, 2 bytes each.  Round to
     nearest even (a single rounding, also from double); magnitudes from
     65520 up become infinity; infinities, signed zeros and NaN (quiet,
     upper payload bits kept) are preserved; subnormal halves are used.
   - CL_COMPRESS_INT8: the elements in blocks of 256 (the last one may be
     shorter).  Each block is its scale s, stored as one element of t (4
     bytes for FLOAT, 8 for DOUBLE), followed by one int8 q per element.
     s = max|x| / 127 over the block; q = x / s rounded to nearest (ties
     away from zero), clamped to [-127, 127]; decoding gives s * q.  A
     block whose elements are all 0 (or so tiny that s underflows to 0)
     has s = 0.  A block holding an infinity or NaN has s = NaN and q = 0,
     so every element of it decodes to NaN: an overflow stays visible to
     the trainer.  The absolute error of a decoded element is at most
     s / 2 (plus rounding of the last bits).  Size: count + nblocks *
     extent bytes, nblocks = ceil(count / 256).
   FP16 and INT8 apply to COLLAB_FLOAT and COLLAB_DOUBLE only; for every
   other datatype each codec means CL_COMPRESS_NONE (raw elements).
   Decoders on every member compute the same bits from the same bytes. */
typedef enum { CL_COMPRESS_NONE = 0, CL_COMPRESS_FP16 = 1, CL_COMPRESS_INT8 = 2 } cl_compress_t;

/* Bytes needed to encode count elements of t with codec c (t must be
   COLLAB_FLOAT or COLLAB_DOUBLE for FP16/INT8, otherwise c is NONE).
   Returns 0 when c or t is invalid or the size does not fit in size_t. */
size_t cl_compress_bound(cl_compress_t c, collab_dtype_t t, size_t count);

/* Encodes count elements into dst (cl_compress_bound bytes).  Returns the
   number of bytes written (0 for count == 0 or invalid arguments).  src
   and dst may start at any byte and must not overlap. */
size_t cl_compress_encode(cl_compress_t c, collab_dtype_t t, const void *src, size_t count,
                          void *dst);

/* Decodes len bytes into count elements at dst.  Returns 0, or
   COLLAB_ERR_ARG when len does not match (malformed input from the net),
   or when c, t or a buffer is invalid.  Any byte pattern of the right
   length decodes without reading or writing out of bounds. */
int cl_compress_decode(cl_compress_t c, collab_dtype_t t, const void *src, size_t len, size_t count,
                       void *dst);

#endif
