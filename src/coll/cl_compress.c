/*  cl_compress.c - wire compression of float payloads of SUM
    (COLLAB_COMPRESSION=fp16|int8, DESIGN section 5).  The formats are
    specified in cl_reduce.h.

    Encoding runs only on the sender; every receiver decodes the same bytes
    with the same arithmetic (one multiplication per INT8 element, exact
    conversions for FP16), so all members see identical values.  Decoding
    is the only code here that reads network bytes: the length must be
    exactly cl_compress_bound(), and any bit pattern of the right length
    decodes to some value without reading or writing out of bounds.  The
    byte order on the wire is little-endian on every host.
*/
#include "cl_dtype.h"
#include "cl_half.h"
#include "cl_reduce.h"
#include "cl_reduce_impl.h"
#include <math.h>
#include <string.h>

#define CL_INT8_BLOCK 256

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define CL_LE16(x) __builtin_bswap16(x)
#define CL_LE32(x) __builtin_bswap32(x)
#define CL_LE64(x) __builtin_bswap64(x)
#else
#define CL_LE16(x) (x)
#define CL_LE32(x) (x)
#define CL_LE64(x) (x)
#endif

/* Codec actually used for (c, t): FP16/INT8 apply to FLOAT and DOUBLE
   only; every other datatype travels raw.  -1 for an unknown codec. */
static int s_effective(cl_compress_t c, collab_dtype_t t)
{
    if (c != CL_COMPRESS_NONE && c != CL_COMPRESS_FP16 && c != CL_COMPRESS_INT8)
        return -1;
    return cl_dtype_compressible(t) ? (int)c : CL_COMPRESS_NONE;
}

size_t cl_compress_bound(cl_compress_t c, collab_dtype_t t, size_t count)
{
    const size_t extent = collab_dtype_extent(t);
    if (extent == 0)
        return 0;
    switch (s_effective(c, t)) {
    case CL_COMPRESS_NONE:
        return count > SIZE_MAX / extent ? 0 : count * extent;
    case CL_COMPRESS_FP16:
        return count > SIZE_MAX / 2 ? 0 : count * 2;
    case CL_COMPRESS_INT8: {
        size_t blocks = count / CL_INT8_BLOCK + (count % CL_INT8_BLOCK != 0);
        if (blocks > (SIZE_MAX - count) / extent)
            return 0;
        return blocks * extent + count;
    }
    default:
        return 0;
    }
}

/* ---- FP16 ------------------------------------------------------------- */

/* Encoders go through a 32-bit block for the same reason as the binary16
   kernels (cl_reduce_float.c): a fused loop is demoted to 16-bit lanes. */
#define CL_FP16_BLOCK 256

static void s_fp16_enc_f32(const cl_ua_f32 *x, cl_ua_u16 *h, size_t n)
{
    uint32_t r[CL_FP16_BLOCK];
    for (size_t base = 0; base < n; base += CL_FP16_BLOCK) {
        const size_t m = n - base < CL_FP16_BLOCK ? n - base : CL_FP16_BLOCK;
        for (size_t i = 0; i < m; i++)
            r[i] = cl_half_from_float(x[base + i]);
        for (size_t i = 0; i < m; i++)
            h[base + i] = CL_LE16((uint16_t)r[i]);
    }
}

static void s_fp16_enc_f64(const cl_ua_f64 *x, cl_ua_u16 *h, size_t n)
{
    uint32_t r[CL_FP16_BLOCK];
    for (size_t base = 0; base < n; base += CL_FP16_BLOCK) {
        const size_t m = n - base < CL_FP16_BLOCK ? n - base : CL_FP16_BLOCK;
        for (size_t i = 0; i < m; i++)
            r[i] = cl_half_from_double(x[base + i]);
        for (size_t i = 0; i < m; i++)
            h[base + i] = CL_LE16((uint16_t)r[i]);
    }
}

static void s_fp16_dec_f32(const cl_ua_u16 *restrict h, cl_ua_f32 *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = cl_half_to_float(CL_LE16(h[i]));
}

static void s_fp16_dec_f64(const cl_ua_u16 *restrict h, cl_ua_f64 *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (double)cl_half_to_float(CL_LE16(h[i]));
}

/* ---- INT8 ------------------------------------------------------------- */

/* Encodes one block of m <= CL_INT8_BLOCK elements of real type T into a
   scale (type T, little-endian) followed by m signed bytes.  XT is T of
   alignment 1 (src may start at any byte), UT the unsigned integer type of
   T's size, ABS_MASK clears its sign bit, INF is the pattern of +infinity.
   max|x| is taken over the bit patterns with the sign cleared: for
   non-negative floats IEEE order is unsigned integer order, and NaN and
   infinity sort above every finite value, so one integer max (which
   vectorises, unlike a float max that must respect NaN) also finds them.
   |x / s| exceeds 127 at most by rounding (or a little more when s is
   subnormal), so the clamp is applied to the rounded integer. */
#define CL_INT8_ENCODE_BLOCK(name, T, XT, UT, LE, ABS_MASK, INF)                                   \
    static size_t name(const XT *restrict x, size_t m, uint8_t *restrict dst)                      \
    {                                                                                              \
        UT amax_bits = 0;                                                                          \
        for (size_t j = 0; j < m; j++) {                                                           \
            UT b;                                                                                  \
            memcpy(&b, &x[j], sizeof b);                                                           \
            b &= (ABS_MASK);                                                                       \
            amax_bits = b > amax_bits ? b : amax_bits;                                             \
        }                                                                                          \
        const int bad = amax_bits >= (INF); /* NaN or infinity in the block */                     \
        T amax;                                                                                    \
        memcpy(&amax, &amax_bits, sizeof amax);                                                    \
        T scale = bad ? (T)NAN : amax / (T)127;                                                    \
        int8_t *restrict q = (int8_t *)(dst + sizeof(T));                                          \
        if (bad || scale == 0) {                                                                   \
            memset(q, 0, m);                                                                       \
        } else {                                                                                   \
            for (size_t j = 0; j < m; j++) {                                                       \
                T y = x[j] / scale;                                                                \
                int32_t t = (int32_t)y; /* toward zero, exact */                                   \
                T f = y - (T)t;                                                                    \
                t += (f >= (T)0.5) - (f <= (T)-0.5); /* ties away from zero */                     \
                t = t > 127 ? 127 : t;                                                             \
                t = t < -127 ? -127 : t;                                                           \
                q[j] = (int8_t)t;                                                                  \
            }                                                                                      \
        }                                                                                          \
        UT bits;                                                                                   \
        memcpy(&bits, &scale, sizeof bits);                                                        \
        bits = LE(bits);                                                                           \
        memcpy(dst, &bits, sizeof bits);                                                           \
        return sizeof(T) + m;                                                                      \
    }

#define CL_INT8_DECODE_BLOCK(name, T, UT, LE)                                                      \
    static void name(const uint8_t *restrict src, size_t m, T *restrict x)                         \
    {                                                                                              \
        UT bits;                                                                                   \
        T scale;                                                                                   \
        memcpy(&bits, src, sizeof bits);                                                           \
        bits = LE(bits);                                                                           \
        memcpy(&scale, &bits, sizeof scale);                                                       \
        const int8_t *restrict q = (const int8_t *)(src + sizeof(T));                              \
        for (size_t j = 0; j < m; j++)                                                             \
            x[j] = scale * (T)q[j];                                                                \
    }

CL_INT8_ENCODE_BLOCK(s_int8_enc_f32, float, cl_ua_f32, uint32_t, CL_LE32, 0x7fffffffu, 0x7f800000u)
CL_INT8_ENCODE_BLOCK(s_int8_enc_f64, double, cl_ua_f64, uint64_t, CL_LE64, 0x7fffffffffffffffull,
                     0x7ff0000000000000ull)
CL_INT8_DECODE_BLOCK(s_int8_dec_f32, cl_ua_f32, uint32_t, CL_LE32)
CL_INT8_DECODE_BLOCK(s_int8_dec_f64, cl_ua_f64, uint64_t, CL_LE64)

size_t cl_compress_encode(cl_compress_t c, collab_dtype_t t, const void *src, size_t count,
                          void *dst)
{
    const size_t bytes = cl_compress_bound(c, t, count);
    if (bytes == 0 || src == NULL || dst == NULL)
        return 0;
    switch (s_effective(c, t)) {
    case CL_COMPRESS_NONE:
        memcpy(dst, src, bytes);
        return bytes;
    case CL_COMPRESS_FP16:
        if (t == COLLAB_FLOAT)
            s_fp16_enc_f32(src, dst, count);
        else
            s_fp16_enc_f64(src, dst, count);
        return bytes;
    case CL_COMPRESS_INT8: {
        uint8_t *o = dst;
        for (size_t base = 0; base < count; base += CL_INT8_BLOCK) {
            size_t m = count - base < CL_INT8_BLOCK ? count - base : CL_INT8_BLOCK;
            if (t == COLLAB_FLOAT)
                o += s_int8_enc_f32((const cl_ua_f32 *)src + base, m, o);
            else
                o += s_int8_enc_f64((const cl_ua_f64 *)src + base, m, o);
        }
        return (size_t)(o - (uint8_t *)dst);
    }
    default:
        return 0;
    }
}

int cl_compress_decode(cl_compress_t c, collab_dtype_t t, const void *src, size_t len, size_t count,
                       void *dst)
{
    const int eff = s_effective(c, t);
    const size_t bytes = cl_compress_bound(c, t, count);
    if (eff < 0 || collab_dtype_extent(t) == 0)
        return COLLAB_ERR_ARG;
    if (count > 0 && bytes == 0) /* size overflows */
        return COLLAB_ERR_ARG;
    if (len != bytes)
        return COLLAB_ERR_ARG;
    if (count == 0)
        return COLLAB_OK;
    if (src == NULL || dst == NULL)
        return COLLAB_ERR_ARG;
    switch (eff) {
    case CL_COMPRESS_NONE:
        memcpy(dst, src, bytes);
        break;
    case CL_COMPRESS_FP16:
        if (t == COLLAB_FLOAT)
            s_fp16_dec_f32(src, dst, count);
        else
            s_fp16_dec_f64(src, dst, count);
        break;
    case CL_COMPRESS_INT8: {
        const uint8_t *p = src;
        const size_t extent = collab_dtype_extent(t);
        for (size_t base = 0; base < count; base += CL_INT8_BLOCK) {
            size_t m = count - base < CL_INT8_BLOCK ? count - base : CL_INT8_BLOCK;
            if (t == COLLAB_FLOAT)
                s_int8_dec_f32(p, m, (cl_ua_f32 *)dst + base);
            else
                s_int8_dec_f64(p, m, (cl_ua_f64 *)dst + base);
            p += extent + m;
        }
        break;
    }
    }
    return COLLAB_OK;
}
