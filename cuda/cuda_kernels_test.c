/*  cuda_kernels_test.c - the device plugin on a GPU: pointer detection
    (device, managed, pinned, host, freed and reallocated) and the device
    kernels against the host kernels, bit for bit.  Usage:
    cuda_kernels_test [path of libmpicollab-cuda.so] (default: the build's).

    Needs an NVIDIA GPU: where the driver or a device is missing it prints
    the reason and exits 77 (CTest's SKIP_RETURN_CODE; label gpu).  NaN
    elements only have to be NaN on both sides (docs/cuda.md).
*/
#define _GNU_SOURCE
#include "coll/cl_reduce.h"
#include "mpi_collab.h"
#include "util/cl_devops.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int s_fail = 0, s_checks = 0;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        s_checks++;                                                                                \
        if (!(cond)) {                                                                             \
            s_fail++;                                                                              \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

static uint64_t s_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    s_rng ^= s_rng << 13;
    s_rng ^= s_rng >> 7;
    s_rng ^= s_rng << 17;
    return s_rng;
}

/* Values of every kind: ordinary magnitudes, subnormals, zeros of both
   signs, infinities, NaN, values around the binary16 range. */
static double sample(int i)
{
    switch (i % 16) {
    case 0:
        return 0.0;
    case 1:
        return -0.0;
    case 2:
        return (double)(rnd() % 2000001) / 1000.0 - 1000.0;
    case 3:
        return ldexp((double)(rnd() % 1024), -24 - (int)(rnd() % 20)); /* tiny */
    case 4:
        return 65504.0 + (double)(rnd() % 64);
    case 5:
        return i % 1024 == 5 ? INFINITY : 1.5;
    case 6:
        return i % 4096 == 6 ? NAN : -2.75;
    default:
        return ldexp((double)(int64_t)(rnd() >> 11) / 9007199254740992.0, (int)(rnd() % 60) - 30);
    }
}

/* Equal bytes, or both NaN, element by element. */
static size_t mismatches(int t, const void *a, const void *b, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (t == CL_DEVT_F32) {
            float x, y;
            memcpy(&x, (const char *)a + 4 * i, 4);
            memcpy(&y, (const char *)b + 4 * i, 4);
            bad += memcmp(&x, &y, 4) != 0 && !(isnan(x) && isnan(y));
        } else if (t == CL_DEVT_F64) {
            double x, y;
            memcpy(&x, (const char *)a + 8 * i, 8);
            memcpy(&y, (const char *)b + 8 * i, 8);
            bad += memcmp(&x, &y, 8) != 0 && !(isnan(x) && isnan(y));
        } else {
            uint16_t x, y;
            memcpy(&x, (const char *)a + 2 * i, 2);
            memcpy(&y, (const char *)b + 2 * i, 2);
            bool nx = (x & 0x7c00) == 0x7c00 && (x & 0x3ff),
                 ny = (y & 0x7c00) == 0x7c00 && (y & 0x3ff);
            bad += x != y && !(nx && ny);
        }
    }
    return bad;
}

static void fill(int t, void *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double v = sample((int)i);
        if (t == CL_DEVT_F32) {
            float f = (float)v;
            memcpy((char *)p + 4 * i, &f, 4);
        } else if (t == CL_DEVT_F64) {
            memcpy((char *)p + 8 * i, &v, 8);
        } else {
            uint16_t h = (uint16_t)rnd(); /* every bit pattern */
            memcpy((char *)p + 2 * i, &h, 2);
        }
    }
}

static const cl_devops_t *s_ops;
static void *s_ctx;

static void *dev_alloc(size_t n)
{
    void *p = NULL;
    return cudaMalloc(&p, n) == cudaSuccess ? p : NULL;
}

static void test_detection(void)
{
    cl_devattr_t a;
    char *host = calloc(1, 1 << 20);
    CHECK(s_ops->query(host, &a) == CL_DEVQ_HOST);
    void *pinned = NULL;
    CHECK(cudaMallocHost(&pinned, 1 << 20) == cudaSuccess);
    CHECK(s_ops->query(pinned, &a) == CL_DEVQ_HOST); /* pinned host memory is host memory */
    char *d = dev_alloc(1 << 20);
    memset(&a, 0, sizeof a);
    CHECK(s_ops->query(d + 100, &a) == CL_DEVQ_DEVICE);
    CHECK(a.start == (uintptr_t)d && a.size >= (1 << 20) && a.context != NULL && !a.managed);
    uint64_t id = a.buffer_id;
    cudaFree(d);
    char *d2 = dev_alloc(1 << 20);
    CHECK(s_ops->query(d2, &a) == CL_DEVQ_DEVICE);
    CHECK(a.buffer_id != id); /* a new allocation, even at the same address */
    void *m = NULL;
    CHECK(cudaMallocManaged(&m, 1 << 20, cudaMemAttachGlobal) == cudaSuccess);
    CHECK(s_ops->query(m, &a) == CL_DEVQ_DEVICE && a.managed);
    s_ctx = NULL;
    CHECK(s_ops->query(d2, &a) == CL_DEVQ_DEVICE);
    s_ctx = a.context;
    /* Copies through the library's stream. */
    memset(host, 7, 1 << 20);
    CHECK(s_ops->h2d(s_ctx, d2, host, 1 << 20) == 0);
    memset(pinned, 0, 1 << 20);
    CHECK(s_ops->d2h(s_ctx, pinned, d2, 1 << 20) == 0);
    CHECK(memcmp(pinned, host, 1 << 20) == 0);
    CHECK(s_ops->ctx_sync(s_ctx) == 0);
    void *ph = s_ops->host_alloc(1 << 16);
    CHECK(ph != NULL);
    s_ops->host_free(ph);
    cudaFree(m);
    cudaFree(d2);
    cudaFreeHost(pinned);
    free(host);
}

static size_t ext_of(int t)
{
    return t == CL_DEVT_F32 ? 4 : t == CL_DEVT_F64 ? 8 : 2;
}

static collab_dtype_t dtype_of(int t)
{
    return t == CL_DEVT_F32 ? COLLAB_FLOAT : t == CL_DEVT_F64 ? COLLAB_DOUBLE : COLLAB_FLOAT16;
}

static void test_sum(int t, size_t n)
{
    size_t bytes = n * ext_of(t);
    void *in = malloc(bytes), *io = malloc(bytes), *got = malloc(bytes);
    fill(t, in, n);
    fill(t, io, n);
    void *din = dev_alloc(bytes), *dio = dev_alloc(bytes);
    CHECK(s_ops->h2d(s_ctx, din, in, bytes) == 0 && s_ops->h2d(s_ctx, dio, io, bytes) == 0);
    collab_op_t op = {.kind = COLLAB_OP_SUM};
    CHECK(collab_reduce_local(in, io, n, dtype_of(t), &op) == COLLAB_OK);
    CHECK(s_ops->sum(s_ctx, t, din, dio, n) == 0);
    CHECK(s_ops->d2h(s_ctx, got, dio, bytes) == 0);
    size_t bad = mismatches(t, io, got, n);
    CHECK(bad == 0);
    printf("sum type %d, %zu elements: %zu differ\n", t, n, bad);
    cudaFree(din);
    cudaFree(dio);
    free(in);
    free(io);
    free(got);
}

static void test_codec(int t, cl_compress_t c, size_t n)
{
    size_t bytes = n * ext_of(t), wire = cl_compress_bound(c, dtype_of(t), n);
    void *x = malloc(bytes), *enc = malloc(wire), *denc = malloc(wire);
    void *dec = malloc(bytes), *ddec = malloc(bytes);
    fill(t, x, n);
    void *dx = dev_alloc(bytes), *dw = dev_alloc(wire), *dy = dev_alloc(bytes);
    CHECK(s_ops->h2d(s_ctx, dx, x, bytes) == 0);
    CHECK(cl_compress_encode(c, dtype_of(t), x, n, enc) == wire);
    int rc = c == CL_COMPRESS_FP16 ? s_ops->fp16_encode(s_ctx, t, dx, n, dw)
                                   : s_ops->int8_encode(s_ctx, t, dx, n, dw);
    CHECK(rc == 0);
    CHECK(s_ops->d2h(s_ctx, denc, dw, wire) == 0);
    size_t bad_enc = 0;
    if (c == CL_COMPRESS_FP16) {
        bad_enc = mismatches(CL_DEVT_F16, enc, denc, n);
    } else { /* scales compared as floats (NaN = NaN), bytes as bytes */
        const size_t ext = ext_of(t);
        for (size_t b = 0, off = 0; off < wire; b++) {
            size_t m = n - b * 256 < 256 ? n - b * 256 : 256;
            bad_enc += mismatches(t, (char *)enc + off, (char *)denc + off, 1);
            bad_enc += memcmp((char *)enc + off + ext, (char *)denc + off + ext, m) != 0;
            off += ext + m;
        }
    }
    CHECK(bad_enc == 0);
    /* Decoding the host's bytes on both sides. */
    CHECK(cl_compress_decode(c, dtype_of(t), enc, wire, n, dec) == COLLAB_OK);
    CHECK(s_ops->h2d(s_ctx, dw, enc, wire) == 0);
    rc = c == CL_COMPRESS_FP16 ? s_ops->fp16_decode(s_ctx, t, dw, n, dy)
                               : s_ops->int8_decode(s_ctx, t, dw, n, dy);
    CHECK(rc == 0);
    CHECK(s_ops->d2h(s_ctx, ddec, dy, bytes) == 0);
    size_t bad_dec = mismatches(t, dec, ddec, n);
    CHECK(bad_dec == 0);
    printf("%s type %d, %zu elements: encoding %zu differ, decoding %zu differ\n",
           c == CL_COMPRESS_FP16 ? "fp16" : "int8", t, n, bad_enc, bad_dec);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dy);
    free(x);
    free(enc);
    free(denc);
    free(dec);
    free(ddec);
}

int main(int argc, char **argv)
{
    const char *plugin = argc > 1 ? argv[1] : COLLAB_CUDA_PLUGIN;
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (drv == NULL) {
        printf("SKIP: no NVIDIA driver on this machine (libcuda.so.1: %s); this test needs a "
               "GPU (scripts/gpu-check.sh runs it)\n",
               dlerror());
        return 77;
    }
    /* Loading the plugin and asking it about memory must not initialise
       the driver: the program may still choose its devices afterwards. */
    void *h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "cannot load the plugin %s: %s\n", plugin, dlerror());
        return 1;
    }
    cl_devops_entry_t *entry = (cl_devops_entry_t *)dlsym(h, CL_DEVOPS_ENTRY);
    s_ops = entry != NULL ? entry() : NULL;
    if (s_ops == NULL || s_ops->abi != CL_DEVOPS_ABI || s_ops->size != sizeof(cl_devops_t)) {
        fprintf(stderr, "the plugin's table is missing or of another version\n");
        return 1;
    }
    int (*dev_count)(int *) = (int (*)(int *))dlsym(drv, "cuDeviceGetCount");
    cl_devattr_t a0;
    static char before[64];
    CHECK(s_ops->query(before, &a0) == CL_DEVQ_NOCTX);
    printf("%s\n", s_ops->describe());
    int n0 = 0;
    CHECK(dev_count != NULL && dev_count(&n0) == 3 /* CUDA_ERROR_NOT_INITIALIZED */);
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        printf("SKIP: the NVIDIA driver is installed but no GPU is usable (%s)\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 77;
    }
    if (cudaSetDevice(0) != cudaSuccess || cudaFree(NULL) != cudaSuccess) {
        fprintf(stderr, "cannot create a CUDA context on device 0\n");
        return 1;
    }
    test_detection();
    if (s_ctx == NULL) {
        fprintf(stderr, "no context found for device memory\n");
        return 1;
    }
    const size_t sizes[] = {1, 255, 256, 257, 1000003};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (int t = CL_DEVT_F32; t <= CL_DEVT_F16; t++)
            test_sum(t, sizes[i]);
        for (int t = CL_DEVT_F32; t <= CL_DEVT_F64; t++) {
            test_codec(t, CL_COMPRESS_FP16, sizes[i]);
            test_codec(t, CL_COMPRESS_INT8, sizes[i]);
        }
    }
    printf("cuda_kernels_test: %d of %d checks failed\n", s_fail, s_checks);
    return s_fail == 0 ? 0 : 1;
}
