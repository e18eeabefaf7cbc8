/*  cudart_fake.c - the one CUDA runtime call the NCCL face interposes
    (cudaMemcpyAsync, docs/nccl.md §5), for nccl_face_test on a machine
    without a GPU: the face's definition runs first and finds this one
    with dlsym(RTLD_NEXT), as it finds libcudart's on a GPU machine.  The
    fake device's memory is host memory, so the copy is a memmove. */
#include <cuda_runtime_api.h>
#include <string.h>

int cudart_fake_calls; /* copies made, for the test */

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    (void)kind;
    (void)stream;
    if (count > 0 && (dst == NULL || src == NULL))
        return cudaErrorInvalidValue;
    memmove(dst, src, count);
    __atomic_add_fetch(&cudart_fake_calls, 1, __ATOMIC_RELAXED);
    return cudaSuccess;
}
