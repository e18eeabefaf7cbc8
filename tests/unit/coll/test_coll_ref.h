/*  test_coll_ref.h - test data and plain-loop references for the
    collective selftests.

    The references are written out element by element, independently of
    the kernels, in the order the kernels promise (cl_reduce.h): rank order,
    acc = x0 then acc = x_i (op) acc for built-in ops, x0 o x1 o ... for
    the user op; weighted SUM as acc = w0 x0 + w1 x1 + ... in double, then
    acc x scale rounded once.  Supported: INT8/INT32/INT64/UINT8/UINT64,
    FLOAT, DOUBLE, C_BOOL, FLOAT_INT, 2INT with the built-in ops that MPI
    defines for them, and the user op tr_affine (on UINT64).
*/
#ifndef TEST_COLL_REF_H_INCLUDED
#define TEST_COLL_REF_H_INCLUDED

#include "mpi_collab.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Fills count elements with data suited to op (products stay finite,
   MAXLOC gets ties, logical values are 0/1...), from seed. */
void tr_fill(collab_dtype_t t, collab_op_kind_t op, void *buf, size_t count, uint64_t seed);

/* out = in[0] (op) ... (op) in[k-1] in rank order (k >= 1). */
void tr_reduce(collab_dtype_t t, const collab_op_t *op, void *out, const void *const *in, int k,
               size_t count);

/* out = scale * sum_i w[i] in[i] (w NULL: all 1), as the weighted kernel
   promises; DOUBLE, FLOAT, INT32 and INT64 only. */
void tr_weighted(collab_dtype_t t, void *out, const void *const *in, const double *w, int k,
                 size_t count, double scale);

/* DESIGN §2 for the k contributors idx[] of a group with these weights
   over a communicator of size `size`: plain op, or size x weighted mean
   for SUM when ranks are missing or weights differ. */
void tr_expect(collab_dtype_t t, const collab_op_t *op, void *out, const void *const *in,
               const double *weights, int k, int size, size_t count);

/* The user op: uint64 elements are affine maps x -> a x + b (mod 2^32),
   a in the high half; inout = in o inout (composition, not commutative). */
void tr_affine(const void *in, void *inout, size_t count, void *ctx);

/* A user op on triples of uint64 (x, y, z), as a face passes a derived
   datatype of three elements: A o B = (xa + xb, ya + yb, za + zb + xa yb)
   (associative, not commutative).  It counts the calls whose count is not
   a multiple of 3 in tr_triple_split (a collective must never cut a user
   element). */
void tr_triple(const void *in, void *inout, size_t count, void *ctx);
extern long tr_triple_split;

/* Absolute tolerance of compressed SUM results (codec 1 fp16, 2 int8). */
double tr_tolerance(int codec, int n);

#endif
