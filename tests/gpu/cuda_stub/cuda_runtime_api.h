/*  cuda_runtime_api.h (test stand-in) - the few CUDA runtime calls of
    scripts/gpu/gpu_allreduce.c, on host memory, so that the check program
    of gpu-check.sh's `mpi` stage runs in CI on a machine without a GPU:
    its MPI logic, the type and op table, its output and the stage's
    collab-run command line.  Not a CUDA: "device" buffers are host memory
    here, so this checks the program, not device support (cl_stage_test
    and cl_stage_mixed do that with a fake device).
*/
#ifndef CUDA_RUNTIME_API_STUB_H
#define CUDA_RUNTIME_API_STUB_H

#include <stdlib.h>
#include <string.h>

typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorMemoryAllocation = 2 };
enum { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };

static inline cudaError_t cudaMalloc(void **p, size_t n)
{
    *p = malloc(n);
    return *p != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
}
static inline cudaError_t cudaMallocHost(void **p, size_t n)
{
    return cudaMalloc(p, n);
}
static inline cudaError_t cudaFree(void *p)
{
    free(p);
    return cudaSuccess;
}
static inline cudaError_t cudaFreeHost(void *p)
{
    return cudaFree(p);
}
static inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, int kind)
{
    (void)kind;
    memcpy(d, s, n);
    return cudaSuccess;
}
static inline cudaError_t cudaMemset(void *d, int v, size_t n)
{
    memset(d, v, n);
    return cudaSuccess;
}
static inline cudaError_t cudaGetDeviceCount(int *n)
{
    *n = 1;
    return cudaSuccess;
}
static inline cudaError_t cudaSetDevice(int d)
{
    (void)d;
    return cudaSuccess;
}
static inline const char *cudaGetErrorString(cudaError_t e)
{
    return e == cudaSuccess ? "no error" : "out of memory";
}

#endif
