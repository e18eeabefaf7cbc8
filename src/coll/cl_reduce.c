/*  cl_reduce.c - entry points of the reduction kernels: cl_reduce,
    cl_reduce_fold and collab_reduce_local.

    Dispatch looks the (datatype, op) kernel up in the tables of
    cl_reduce_int.c, cl_reduce_float.c and cl_reduce_pair.c; validity is
    decided by collab_op_valid() (cl_dtype.c, MPI's table), and the selftest
    checks that both agree.  The fold of n inputs for built-in ops walks the
    vector in blocks of CL_FOLD_BLOCK bytes so that the running result stays
    in L1 while every input streams through it once; element-wise kernels
    make the blocked result bit-identical to the unblocked sequence spelled
    out in cl_reduce.h.  User ops are folded left to right like the
    butterfly's reducer folds chunks (cl_coll_bfacc.c), so both give the
    same bits.
*/
#include "cl_reduce.h"
#include "cl_dtype.h"
#include "cl_reduce_impl.h"
#include <stdlib.h>
#include <string.h>

#define CL_FOLD_BLOCK 16384 /* bytes of the running result per block */

cl_kernel_fn *cl_reduce_kernel(collab_dtype_t t, collab_op_kind_t op)
{
    switch (cl_dtype_category(t)) {
    case CL_DTYPE_CAT_INTEGER:
    case CL_DTYPE_CAT_LOGICAL:
    case CL_DTYPE_CAT_BYTE:
        return cl_reduce_kernel_int(t, op);
    case CL_DTYPE_CAT_FLOAT:
    case CL_DTYPE_CAT_COMPLEX:
        return cl_reduce_kernel_float(t, op);
    case CL_DTYPE_CAT_PAIR:
        return cl_reduce_kernel_pair(t, op);
    case CL_DTYPE_CAT_INVALID:
        break;
    }
    return NULL;
}

/* Checks what every entry point needs; sets *kernel for built-in ops. */
static int s_check(const collab_op_t *op, collab_dtype_t t, cl_kernel_fn **kernel)
{
    if (op == NULL)
        return COLLAB_ERR_OP;
    if ((unsigned)t >= COLLAB_DTYPE_COUNT)
        return COLLAB_ERR_TYPE;
    if (!collab_op_valid(op->kind, t))
        return COLLAB_ERR_OP;
    if (op->kind == COLLAB_OP_USER) {
        if (op->user_fn == NULL)
            return COLLAB_ERR_OP;
        *kernel = NULL;
        return COLLAB_OK;
    }
    *kernel = cl_reduce_kernel(t, op->kind);
    /* collab_op_valid and the kernel tables are kept equal by the selftest. */
    return *kernel != NULL ? COLLAB_OK : COLLAB_ERR_OP;
}

int cl_reduce(const collab_op_t *op, collab_dtype_t t, const void *in, void *inout, size_t count)
{
    cl_kernel_fn *kernel;
    int rc = s_check(op, t, &kernel);
    if (rc != COLLAB_OK)
        return rc;
    if (count == 0)
        return COLLAB_OK;
    if (in == NULL || inout == NULL)
        return COLLAB_ERR_ARG;
    if (kernel != NULL)
        kernel(in, inout, inout, count);
    else
        op->user_fn(in, inout, count, op->user_ctx);
    return COLLAB_OK;
}

/* User op, left to right: acc = in[0]; acc = acc (op) in[i].  The function
   computes inout = in (op) inout, so each step copies in[i] to a buffer
   and passes acc as `in`; out and one temporary take turns so that the
   last step lands in out.  One call per input with the whole count, since
   a call may be costly (a Python callback, for instance). */
static int s_fold_user(const collab_op_t *op, void *out, const void *const *in, int n, size_t count,
                       size_t bytes)
{
    void *tmp = NULL;
    if (n > 2 && (tmp = malloc(bytes)) == NULL)
        return COLLAB_ERR_NO_MEM;
    const void *acc = in[0];
    if (n == 1)
        memcpy(out, in[0], bytes);
    for (int i = 1; i < n; i++) {
        void *dst = (n - 1 - i) % 2 == 0 ? out : tmp;
        memcpy(dst, in[i], bytes);
        op->user_fn(acc, dst, count, op->user_ctx);
        acc = dst;
    }
    free(tmp);
    return COLLAB_OK;
}

int cl_reduce_fold(const collab_op_t *op, collab_dtype_t t, void *out, const void *const *in, int n,
                   size_t count)
{
    cl_kernel_fn *kernel;
    int rc = s_check(op, t, &kernel);
    if (rc != COLLAB_OK)
        return rc;
    if (n < 1 || in == NULL)
        return COLLAB_ERR_ARG;
    if (count == 0)
        return COLLAB_OK;
    if ((rc = cl_reduce_check_bufs(out, in, n)) != COLLAB_OK)
        return rc;
    const size_t extent = collab_dtype_extent(t);
    if (count > SIZE_MAX / extent)
        return COLLAB_ERR_ARG;

    if (kernel == NULL)
        return s_fold_user(op, out, in, n, count, count * extent);
    if (n == 1) {
        memcpy(out, in[0], count * extent);
        return COLLAB_OK;
    }
    /* Built-in: acc = in[0]; acc = in[i] op acc for i = 1..n-1, per block.
       The first step reads in[0] and in[1] and writes out, so in[0] is
       never copied. */
    const size_t block = CL_FOLD_BLOCK / extent > 0 ? CL_FOLD_BLOCK / extent : 1;
    for (size_t base = 0; base < count; base += block) {
        const size_t m = count - base < block ? count - base : block;
        const size_t off = base * extent;
        char *o = (char *)out + off;
        kernel((const char *)in[1] + off, (const char *)in[0] + off, o, m);
        for (int i = 2; i < n; i++)
            kernel((const char *)in[i] + off, o, o, m);
    }
    return COLLAB_OK;
}

int collab_reduce_local(const void *in, void *inout, size_t count, collab_dtype_t t,
                        const collab_op_t *op)
{
    return cl_reduce(op, t, in, inout, count);
}
