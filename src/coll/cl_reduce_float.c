/*  cl_reduce_float.c - reduction kernels of the floating-point and complex
    datatypes.

    MAX and MIN are the plain comparisons MPICH uses: inout = inout > in ?
    inout : in, so a NaN in inout is replaced by in and a NaN in in is
    kept (x86's maxps/minps do exactly this, so the loops vectorise without
    -ffast-math).  FLOAT16 is stored as IEEE binary16 bits and computed in
    float: a sum or product of two halves rounded once from float equals
    the correctly rounded binary16 result (float has more than 2 x 11 + 2
    significant bits), so results match a native binary16 unit.  Complex
    PROD is C's complex multiplication (Annex G recovery of infinities), the
    one MPICH uses.  The file is built with -ffp-contract=off: a fused
    multiply-add would change the bits depending on the target CPU.
*/
#include "cl_half.h"
#include "cl_reduce_impl.h"

#define CL_REAL_KERNELS(tag, T)                                                                    \
    CL_KERNEL_DEFINE(k_##tag##_sum, T, b + a)                                                      \
    CL_KERNEL_DEFINE(k_##tag##_prod, T, b * a)                                                     \
    CL_KERNEL_DEFINE(k_##tag##_max, T, b > a ? b : a)                                              \
    CL_KERNEL_DEFINE(k_##tag##_min, T, b < a ? b : a)

CL_REAL_KERNELS(f32, cl_ua_f32)
CL_REAL_KERNELS(f64, cl_ua_f64)
CL_REAL_KERNELS(ld, cl_ua_ld)

#define CL_COMPLEX_KERNELS(tag, T)                                                                 \
    CL_KERNEL_DEFINE(k_##tag##_sum, T, b + a)                                                      \
    CL_KERNEL_DEFINE(k_##tag##_prod, T, b * a)

CL_COMPLEX_KERNELS(cf, cl_ua_cf)
CL_COMPLEX_KERNELS(cd, cl_ua_cd)
CL_COMPLEX_KERNELS(cld, cl_ua_cld)

#define H2F(x) cl_half_to_float(x)
#define F2H(x) ((uint16_t)cl_half_from_float(x))
CL_KERNEL_DEFINE(k_f16_sum, cl_ua_u16, F2H(H2F(b) + H2F(a)))
CL_KERNEL_DEFINE(k_f16_prod, cl_ua_u16, F2H(H2F(b) * H2F(a)))
/* The result is one of the operands, bit for bit (no rounding). */
CL_KERNEL_DEFINE(k_f16_max, cl_ua_u16, (uint16_t)cl_half_sel32(H2F(b) > H2F(a), b, a))
CL_KERNEL_DEFINE(k_f16_min, cl_ua_u16, (uint16_t)cl_half_sel32(H2F(b) < H2F(a), b, a))

#define CL_REAL_ROW(tag)                                                                           \
    {                                                                                              \
        [COLLAB_OP_SUM] = k_##tag##_sum, [COLLAB_OP_PROD] = k_##tag##_prod,                        \
        [COLLAB_OP_MAX] = k_##tag##_max, [COLLAB_OP_MIN] = k_##tag##_min,                          \
    }
#define CL_COMPLEX_ROW(tag)                                                                        \
    {                                                                                              \
        [COLLAB_OP_SUM] = k_##tag##_sum, [COLLAB_OP_PROD] = k_##tag##_prod,                        \
    }

static cl_kernel_fn *const s_table[COLLAB_DTYPE_COUNT][COLLAB_OP_COUNT] = {
    [COLLAB_FLOAT16] = CL_REAL_ROW(f16),
    [COLLAB_FLOAT] = CL_REAL_ROW(f32),
    [COLLAB_DOUBLE] = CL_REAL_ROW(f64),
    [COLLAB_LONG_DOUBLE] = CL_REAL_ROW(ld),
    [COLLAB_C_FLOAT_COMPLEX] = CL_COMPLEX_ROW(cf),
    [COLLAB_C_DOUBLE_COMPLEX] = CL_COMPLEX_ROW(cd),
    [COLLAB_C_LONG_DOUBLE_COMPLEX] = CL_COMPLEX_ROW(cld),
};

cl_kernel_fn *cl_reduce_kernel_float(collab_dtype_t t, collab_op_kind_t op)
{
    if ((unsigned)t >= COLLAB_DTYPE_COUNT || (unsigned)op >= COLLAB_OP_COUNT)
        return NULL;
    return s_table[t][op];
}
