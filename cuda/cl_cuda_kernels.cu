/*  cl_cuda_kernels.cu - the device kernels: fp32/fp64/fp16 SUM and the
    fp16/int8 wire codecs (cl_reduce.h), bit for bit the host kernels.

    Same order and the same operations as the host code, one element per
    thread: a + b rounded once (no fused multiply-add: the file is built
    with -fmad=false, IEEE division and square root, no flush to zero).
    binary16 conversions are cl_half.h's own functions, compiled for the
    device.  The int8 block maximum is an integer maximum over bit
    patterns, so its order does not matter.  NaN results carry the
    device's canonical payload where the host keeps an operand's payload
    (docs/cuda.md).
*/
#define CL_HALF_FN static inline __host__ __device__
#include "coll/cl_half.h"
#include "util/cl_devops.h"

#include "cl_cuda_kernels.h"

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#define CL_K_THREADS 256
#define CL_K_INT8_BLOCK 256 /* elements per int8 block (cl_compress.c) */

static int launch_result(const char *what, char *why, size_t whylen)
{
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        return 0;
    snprintf(why, whylen, "%s kernel: %s", what, cudaGetErrorString(e));
    return -1;
}

static unsigned blocks_for(size_t n)
{
    return (unsigned)((n + CL_K_THREADS - 1) / CL_K_THREADS);
}

template <typename T> __global__ void k_sum(const T *in, T *io, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const T a = in[i];
        const T b = io[i];
        io[i] = b + a;
    }
}

__global__ void k_sum_f16(const uint16_t *in, uint16_t *io, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float a = cl_half_to_float(in[i]);
        const float b = cl_half_to_float(io[i]);
        io[i] = (uint16_t)cl_half_from_float(b + a);
    }
}

/* Grid size: enough blocks to fill a large GPU, the rest by striding. */
static unsigned grid_for(size_t n)
{
    unsigned b = blocks_for(n);
    return b > 65535u ? 65535u : (b == 0 ? 1u : b);
}

extern "C" int cl_cuda_k_sum(void *stream, int t, const void *in, void *inout, size_t n, char *why,
                             size_t whylen)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (n == 0)
        return 0;
    switch (t) {
    case CL_DEVT_F32:
        k_sum<float><<<grid_for(n), CL_K_THREADS, 0, s>>>((const float *)in, (float *)inout, n);
        break;
    case CL_DEVT_F64:
        k_sum<double><<<grid_for(n), CL_K_THREADS, 0, s>>>((const double *)in, (double *)inout, n);
        break;
    case CL_DEVT_F16:
        k_sum_f16<<<grid_for(n), CL_K_THREADS, 0, s>>>((const uint16_t *)in, (uint16_t *)inout, n);
        break;
    default:
        snprintf(why, whylen, "sum kernel: unknown element type %d", t);
        return -1;
    }
    return launch_result("sum", why, whylen);
}

/* ---- fp16 ------------------------------------------------------------- */

__global__ void k_fp16_enc_f32(const float *x, uint16_t *h, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i < n; i += (size_t)gridDim.x * blockDim.x)
        h[i] = (uint16_t)cl_half_from_float(x[i]);
}

__global__ void k_fp16_enc_f64(const double *x, uint16_t *h, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i < n; i += (size_t)gridDim.x * blockDim.x)
        h[i] = (uint16_t)cl_half_from_double(x[i]);
}

__global__ void k_fp16_dec_f32(const uint16_t *h, float *x, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = cl_half_to_float(h[i]);
}

__global__ void k_fp16_dec_f64(const uint16_t *h, double *x, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = (double)cl_half_to_float(h[i]);
}

extern "C" int cl_cuda_k_fp16_encode(void *stream, int t, const void *src, size_t n, void *dst,
                                     char *why, size_t whylen)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (n == 0)
        return 0;
    if (t == CL_DEVT_F32)
        k_fp16_enc_f32<<<grid_for(n), CL_K_THREADS, 0, s>>>((const float *)src, (uint16_t *)dst, n);
    else if (t == CL_DEVT_F64)
        k_fp16_enc_f64<<<grid_for(n), CL_K_THREADS, 0, s>>>((const double *)src, (uint16_t *)dst,
                                                            n);
    else {
        snprintf(why, whylen, "fp16 encoding: element type %d is not float or double", t);
        return -1;
    }
    return launch_result("fp16 encoding", why, whylen);
}

extern "C" int cl_cuda_k_fp16_decode(void *stream, int t, const void *src, size_t n, void *dst,
                                     char *why, size_t whylen)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (n == 0)
        return 0;
    if (t == CL_DEVT_F32)
        k_fp16_dec_f32<<<grid_for(n), CL_K_THREADS, 0, s>>>((const uint16_t *)src, (float *)dst, n);
    else if (t == CL_DEVT_F64)
        k_fp16_dec_f64<<<grid_for(n), CL_K_THREADS, 0, s>>>((const uint16_t *)src, (double *)dst,
                                                            n);
    else {
        snprintf(why, whylen, "fp16 decoding: element type %d is not float or double", t);
        return -1;
    }
    return launch_result("fp16 decoding", why, whylen);
}

/* ---- int8 ------------------------------------------------------------- */

/* Bit patterns and constants of the host code (cl_compress.c). */
template <typename T> struct int8_traits;
template <> struct int8_traits<float> {
    typedef uint32_t U;
    static __device__ U bits(float x)
    {
        return __float_as_uint(x);
    }
    static __device__ float from(U b)
    {
        return __uint_as_float(b);
    }
    static const U abs_mask = 0x7fffffffu, inf = 0x7f800000u, qnan = 0x7fc00000u;
};
template <> struct int8_traits<double> {
    typedef unsigned long long U;
    static __device__ U bits(double x)
    {
        return (U)__double_as_longlong(x);
    }
    static __device__ double from(U b)
    {
        return __longlong_as_double((long long)b);
    }
    static const U abs_mask = 0x7fffffffffffffffull, inf = 0x7ff0000000000000ull,
                   qnan = 0x7ff8000000000000ull;
};

/* One CUDA block per int8 block of up to 256 elements; thread j encodes
   element j.  Layout: block b starts at byte b * (sizeof(T) + 256). */
template <typename T> __global__ void k_int8_enc(const T *x, size_t n, uint8_t *dst)
{
    typedef int8_traits<T> tr;
    typedef typename tr::U U;
    __shared__ U amax[CL_K_INT8_BLOCK];
    const size_t base = (size_t)blockIdx.x * CL_K_INT8_BLOCK;
    const size_t m = n - base < CL_K_INT8_BLOCK ? n - base : CL_K_INT8_BLOCK;
    const unsigned j = threadIdx.x;
    amax[j] = j < m ? (tr::bits(x[base + j]) & tr::abs_mask) : 0;
    __syncthreads();
    for (unsigned s = CL_K_INT8_BLOCK / 2; s > 0; s >>= 1) {
        if (j < s && amax[j + s] > amax[j])
            amax[j] = amax[j + s];
        __syncthreads();
    }
    const U amax_bits = amax[0];
    const bool bad = amax_bits >= tr::inf;
    const T scale = bad ? tr::from(tr::qnan) : tr::from(amax_bits) / (T)127;
    uint8_t *o = dst + (size_t)blockIdx.x * (sizeof(T) + CL_K_INT8_BLOCK);
    int8_t *q = (int8_t *)(o + sizeof(T));
    if (j < m) {
        int32_t t = 0;
        if (!(bad || scale == 0)) {
            T y = x[base + j] / scale;
            t = (int32_t)y; /* toward zero, exact */
            T f = y - (T)t;
            t += (f >= (T)0.5) - (f <= (T)-0.5); /* ties away from zero */
            t = t > 127 ? 127 : t;
            t = t < -127 ? -127 : t;
        }
        q[j] = (int8_t)t;
    }
    if (j < sizeof(T)) { /* the scale, little-endian, byte by byte (unaligned) */
        U b = tr::bits(scale);
        o[j] = (uint8_t)(b >> (8 * j));
    }
}

template <typename T> __global__ void k_int8_dec(const uint8_t *src, size_t n, T *x)
{
    typedef int8_traits<T> tr;
    typedef typename tr::U U;
    const size_t base = (size_t)blockIdx.x * CL_K_INT8_BLOCK;
    const size_t m = n - base < CL_K_INT8_BLOCK ? n - base : CL_K_INT8_BLOCK;
    const uint8_t *p = src + (size_t)blockIdx.x * (sizeof(T) + CL_K_INT8_BLOCK);
    U b = 0;
    for (unsigned k = 0; k < sizeof(T); k++)
        b |= (U)p[k] << (8 * k);
    const T scale = tr::from(b);
    const int8_t *q = (const int8_t *)(p + sizeof(T));
    const unsigned j = threadIdx.x;
    if (j < m)
        x[base + j] = scale * (T)q[j];
}

static int int8_grid(size_t n, unsigned *grid, char *why, size_t whylen)
{
    size_t b = (n + CL_K_INT8_BLOCK - 1) / CL_K_INT8_BLOCK;
    if (b > 0x7fffffffu) {
        snprintf(why, whylen, "int8 codec: %zu elements are too many for one launch", n);
        return -1;
    }
    *grid = (unsigned)b;
    return 0;
}

extern "C" int cl_cuda_k_int8_encode(void *stream, int t, const void *src, size_t n, void *dst,
                                     char *why, size_t whylen)
{
    cudaStream_t s = (cudaStream_t)stream;
    unsigned g;
    if (n == 0)
        return 0;
    if (int8_grid(n, &g, why, whylen) != 0)
        return -1;
    if (t == CL_DEVT_F32)
        k_int8_enc<float><<<g, CL_K_INT8_BLOCK, 0, s>>>((const float *)src, n, (uint8_t *)dst);
    else if (t == CL_DEVT_F64)
        k_int8_enc<double><<<g, CL_K_INT8_BLOCK, 0, s>>>((const double *)src, n, (uint8_t *)dst);
    else {
        snprintf(why, whylen, "int8 encoding: element type %d is not float or double", t);
        return -1;
    }
    return launch_result("int8 encoding", why, whylen);
}

extern "C" int cl_cuda_k_int8_decode(void *stream, int t, const void *src, size_t n, void *dst,
                                     char *why, size_t whylen)
{
    cudaStream_t s = (cudaStream_t)stream;
    unsigned g;
    if (n == 0)
        return 0;
    if (int8_grid(n, &g, why, whylen) != 0)
        return -1;
    if (t == CL_DEVT_F32)
        k_int8_dec<float><<<g, CL_K_INT8_BLOCK, 0, s>>>((const uint8_t *)src, n, (float *)dst);
    else if (t == CL_DEVT_F64)
        k_int8_dec<double><<<g, CL_K_INT8_BLOCK, 0, s>>>((const uint8_t *)src, n, (double *)dst);
    else {
        snprintf(why, whylen, "int8 decoding: element type %d is not float or double", t);
        return -1;
    }
    return launch_result("int8 decoding", why, whylen);
}
