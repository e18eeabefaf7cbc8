/*  cl_reduce_int.c - reduction kernels of the integer, C_BOOL and BYTE
    datatypes.

    SUM and PROD wrap modulo 2^bits like MPICH: they are computed in an
    unsigned type at least as wide as int (so neither signed overflow nor
    the promotion of unsigned short to int can be undefined) and converted
    back, which GCC defines as modulo reduction.  MAX and MIN use the plain
    comparison MPICH uses.  Logical ops give 0 or 1 and read any non-zero
    element (also a C_BOOL byte other than 1) as true.  Every kernel is a
    separate plain loop that GCC vectorises (see cl_reduce_impl.h).
*/
#include "cl_reduce_impl.h"

#define CL_INT_KERNELS(tag, T, U)                                                                  \
    CL_KERNEL_DEFINE(k_##tag##_sum, T, ((U)a + (U)b))                                              \
    CL_KERNEL_DEFINE(k_##tag##_prod, T, ((U)a * (U)b))                                             \
    CL_KERNEL_DEFINE(k_##tag##_max, T, b > a ? b : a)                                              \
    CL_KERNEL_DEFINE(k_##tag##_min, T, b < a ? b : a)                                              \
    CL_KERNEL_DEFINE(k_##tag##_land, T, ((a != 0) & (b != 0)))                                     \
    CL_KERNEL_DEFINE(k_##tag##_lor, T, ((a != 0) | (b != 0)))                                      \
    CL_KERNEL_DEFINE(k_##tag##_lxor, T, ((a != 0) ^ (b != 0)))                                     \
    CL_KERNEL_DEFINE(k_##tag##_band, T, (a & b))                                                   \
    CL_KERNEL_DEFINE(k_##tag##_bor, T, (a | b))                                                    \
    CL_KERNEL_DEFINE(k_##tag##_bxor, T, (a ^ b))

CL_INT_KERNELS(i8, cl_ua_i8, unsigned int)
CL_INT_KERNELS(i16, cl_ua_i16, unsigned int)
CL_INT_KERNELS(i32, cl_ua_i32, uint32_t)
CL_INT_KERNELS(i64, cl_ua_i64, uint64_t)
CL_INT_KERNELS(u8, cl_ua_u8, unsigned int)
CL_INT_KERNELS(u16, cl_ua_u16, unsigned int)
CL_INT_KERNELS(u32, cl_ua_u32, uint32_t)
CL_INT_KERNELS(u64, cl_ua_u64, uint64_t)

#define CL_INT_ROW(tag)                                                                            \
    {                                                                                              \
        [COLLAB_OP_SUM] = k_##tag##_sum, [COLLAB_OP_PROD] = k_##tag##_prod,                        \
        [COLLAB_OP_MAX] = k_##tag##_max, [COLLAB_OP_MIN] = k_##tag##_min,                          \
        [COLLAB_OP_LAND] = k_##tag##_land, [COLLAB_OP_LOR] = k_##tag##_lor,                        \
        [COLLAB_OP_LXOR] = k_##tag##_lxor, [COLLAB_OP_BAND] = k_##tag##_band,                      \
        [COLLAB_OP_BOR] = k_##tag##_bor, [COLLAB_OP_BXOR] = k_##tag##_bxor,                        \
    }

/* C_BOOL and BYTE are single bytes: the logical (resp. bitwise) kernels of
   uint8 compute exactly what MPI defines for them. */
static cl_kernel_fn *const s_table[COLLAB_DTYPE_COUNT][COLLAB_OP_COUNT] = {
    [COLLAB_INT8] = CL_INT_ROW(i8),
    [COLLAB_INT16] = CL_INT_ROW(i16),
    [COLLAB_INT32] = CL_INT_ROW(i32),
    [COLLAB_INT64] = CL_INT_ROW(i64),
    [COLLAB_UINT8] = CL_INT_ROW(u8),
    [COLLAB_UINT16] = CL_INT_ROW(u16),
    [COLLAB_UINT32] = CL_INT_ROW(u32),
    [COLLAB_UINT64] = CL_INT_ROW(u64),
    [COLLAB_C_BOOL] =
        {[COLLAB_OP_LAND] = k_u8_land, [COLLAB_OP_LOR] = k_u8_lor, [COLLAB_OP_LXOR] = k_u8_lxor},
    [COLLAB_BYTE] =
        {[COLLAB_OP_BAND] = k_u8_band, [COLLAB_OP_BOR] = k_u8_bor, [COLLAB_OP_BXOR] = k_u8_bxor},
};

cl_kernel_fn *cl_reduce_kernel_int(collab_dtype_t t, collab_op_kind_t op)
{
    if ((unsigned)t >= COLLAB_DTYPE_COUNT || (unsigned)op >= COLLAB_OP_COUNT)
        return NULL;
    return s_table[t][op];
}
