/*  cl_cuda_kernels.h - launchers of the device kernels (cl_cuda_kernels.cu),
    called by the plugin (cl_cuda.c) with the allocation's context current.

    Each enqueues its kernel on `stream` and returns 0, or -1 with the
    runtime's reason in why.  The arithmetic is the host kernels', element
    for element (cl_reduce_float.c, cl_compress.c), built with -fmad=false:
    see docs/cuda.md for the one difference (NaN payloads).
*/
#ifndef CL_CUDA_KERNELS_H_INCLUDED
#define CL_CUDA_KERNELS_H_INCLUDED

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* inout[i] = inout[i] + in[i], type t (CL_DEVT_*). */
int cl_cuda_k_sum(void *stream, int t, const void *in, void *inout, size_t n, char *why,
                  size_t whylen);
/* COLLAB_COMPRESSION=fp16 and int8 formats (cl_reduce.h) of F32/F64. */
int cl_cuda_k_fp16_encode(void *stream, int t, const void *src, size_t n, void *dst, char *why,
                          size_t whylen);
int cl_cuda_k_fp16_decode(void *stream, int t, const void *src, size_t n, void *dst, char *why,
                          size_t whylen);
int cl_cuda_k_int8_encode(void *stream, int t, const void *src, size_t n, void *dst, char *why,
                          size_t whylen);
int cl_cuda_k_int8_decode(void *stream, int t, const void *src, size_t n, void *dst, char *why,
                          size_t whylen);

#ifdef __cplusplus
}
#endif

#endif
