/*  cl_reduce_pair.c - MAXLOC and MINLOC kernels of MPI's pair types.

    MPI's rule (MPI-4.0 section 6.9.4), as MPICH implements it: with u the
    inout element and v the in element, MAXLOC keeps u when u.value >
    v.value, takes v when u.value < v.value, and on equal values keeps the
    smaller index; MINLOC mirrors it.  Unordered values (NaN) keep u.  Only
    the value and index fields are written, never the padding, so that
    result buffers hash the same on every member.  The loops are written
    without branches so that GCC vectorises the float and int pairs.
*/
#include "cl_reduce_impl.h"

#define CL_PAIR_LOOP(CMP)                                                                          \
    for (size_t i_ = 0; i_ < n_; i_++) {                                                           \
        const __typeof__(in_[0].v) va = in_[i_].v, vb = src_[i_].v;                                \
        const int ia = in_[i_].i, ib = src_[i_].i;                                                 \
        const int take = vb CMP va; /* in wins */                                                  \
        const int tie = vb == va;                                                                  \
        const int lo = ia < ib ? ia : ib;                                                          \
        out_[i_].v = take ? va : vb;                                                               \
        out_[i_].i = tie ? lo : (take ? ia : ib);                                                  \
    }

// clang-format off
#define CL_PAIR_KERNEL(name, T, CMP)                                                               \
    static void name##_ip(const T *restrict in_, T *restrict out_, size_t n_)                      \
    {                                                                                              \
        const T *src_ = out_;                                                                      \
        CL_PAIR_LOOP(CMP)                                                                          \
    }                                                                                              \
    static void name##_3(const T *restrict in_, const T *restrict src_, T *restrict out_,          \
                         size_t n_)                                                                \
    {                                                                                              \
        CL_PAIR_LOOP(CMP)                                                                          \
    }                                                                                              \
    CL_KERNEL_ENTRY(name, T)
// clang-format on

/* MAXLOC takes the in element when the kept value is smaller. */
#define CL_PAIR_KERNELS(tag, T)                                                                    \
    CL_PAIR_KERNEL(k_##tag##_maxloc, T, <)                                                         \
    CL_PAIR_KERNEL(k_##tag##_minloc, T, >)

CL_PAIR_KERNELS(float_int, cl_ua_float_int)
CL_PAIR_KERNELS(double_int, cl_ua_double_int)
CL_PAIR_KERNELS(long_int, cl_ua_long_int)
CL_PAIR_KERNELS(short_int, cl_ua_short_int)
CL_PAIR_KERNELS(2int, cl_ua_2int)
CL_PAIR_KERNELS(long_double_int, cl_ua_long_double_int)

#define CL_PAIR_ROW(tag)                                                                           \
    {                                                                                              \
        [COLLAB_OP_MAXLOC] = k_##tag##_maxloc, [COLLAB_OP_MINLOC] = k_##tag##_minloc,              \
    }

static cl_kernel_fn *const s_table[COLLAB_DTYPE_COUNT][COLLAB_OP_COUNT] = {
    [COLLAB_FLOAT_INT] = CL_PAIR_ROW(float_int),
    [COLLAB_DOUBLE_INT] = CL_PAIR_ROW(double_int),
    [COLLAB_LONG_INT] = CL_PAIR_ROW(long_int),
    [COLLAB_SHORT_INT] = CL_PAIR_ROW(short_int),
    [COLLAB_2INT] = CL_PAIR_ROW(2int),
    [COLLAB_LONG_DOUBLE_INT] = CL_PAIR_ROW(long_double_int),
};

cl_kernel_fn *cl_reduce_kernel_pair(collab_dtype_t t, collab_op_kind_t op)
{
    if ((unsigned)t >= COLLAB_DTYPE_COUNT || (unsigned)op >= COLLAB_OP_COUNT)
        return NULL;
    return s_table[t][op];
}
