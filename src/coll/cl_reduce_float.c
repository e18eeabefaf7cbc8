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
    CL_KERNEL_DEFINE(k_##tag##_prod, T, b *a)                                                      \
    CL_KERNEL_DEFINE(k_##tag##_max, T, b > a ? b : a)                                              \
    CL_KERNEL_DEFINE(k_##tag##_min, T, b < a ? b : a)

CL_REAL_KERNELS(f32, cl_ua_f32)
CL_REAL_KERNELS(f64, cl_ua_f64)
CL_REAL_KERNELS(ld, cl_ua_ld)

#define CL_COMPLEX_KERNELS(tag, T)                                                                 \
    CL_KERNEL_DEFINE(k_##tag##_sum, T, b + a)                                                      \
    CL_KERNEL_DEFINE(k_##tag##_prod, T, b *a)

CL_COMPLEX_KERNELS(cf, cl_ua_cf)
CL_COMPLEX_KERNELS(cd, cl_ua_cd)
CL_COMPLEX_KERNELS(cld, cl_ua_cld)

/* binary16 kernels walk blocks of CL_F16_BLOCK elements: widen both
   operands to float arrays, compute into a 32-bit array, then narrow.  In
   one fused loop GCC demotes the conversion's 32-bit masks to 16 bits (the
   result is 16 bits wide), and SSE2, which has no 32 -> 16 pack, then
   spends most of its time shuffling; split, every loop is plain 32-bit
   code.  Each block is read completely before it is written, so src may be
   out.  EXPR sees the operands as floats a, b and as bits ha, hb. */
#define CL_F16_BLOCK 256
#define CL_F16_KERNEL(name, EXPR)                                                                  \
    static void name(const void *in_, const void *src_, void *out_, size_t n)                      \
    {                                                                                              \
        const cl_ua_u16 *in = in_, *src = src_;                                                    \
        cl_ua_u16 *out = out_;                                                                     \
        float fa[CL_F16_BLOCK], fb[CL_F16_BLOCK];                                                  \
        uint32_t r[CL_F16_BLOCK];                                                                  \
        for (size_t base = 0; base < n; base += CL_F16_BLOCK) {                                    \
            const size_t m = n - base < CL_F16_BLOCK ? n - base : CL_F16_BLOCK;                    \
            for (size_t i = 0; i < m; i++)                                                         \
                fa[i] = cl_half_to_float(in[base + i]);                                            \
            for (size_t i = 0; i < m; i++)                                                         \
                fb[i] = cl_half_to_float(src[base + i]);                                           \
            for (size_t i = 0; i < m; i++) {                                                       \
                const float a = fa[i], b = fb[i];                                                  \
                const uint32_t ha = in[base + i], hb = src[base + i];                              \
                (void)ha;                                                                          \
                (void)hb;                                                                          \
                r[i] = (EXPR);                                                                     \
            }                                                                                      \
            for (size_t i = 0; i < m; i++)                                                         \
                out[base + i] = (uint16_t)r[i];                                                    \
        }                                                                                          \
    }

CL_F16_KERNEL(k_f16_sum, cl_half_from_float(b + a))
CL_F16_KERNEL(k_f16_prod, cl_half_from_float(b *a))
/* The result is one of the operands, bit for bit (no rounding). */
CL_F16_KERNEL(k_f16_max, cl_half_sel32(b > a, hb, ha))
CL_F16_KERNEL(k_f16_min, cl_half_sel32(b < a, hb, ha))

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
