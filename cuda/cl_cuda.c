/*  cl_cuda.c - the device plugin libmpicollab-cuda.so: the operations
    table of cl_devops.h over the CUDA driver API (docs/cuda.md).

    Loaded by the core (src/util/cl_device.c) only where libcuda.so.1
    exists; exports collab_cuda_plugin_ops and nothing else.  It never
    calls cuInit: before the program initialises the driver, every query
    answers CL_DEVQ_NOCTX (no device memory can exist yet), so the program
    may still choose its devices (CUDA_VISIBLE_DEVICES) after MPI_Init.

    Work runs on the library's own stream, one per context (created on
    first use, non-blocking towards the legacy default stream); each call
    pushes the allocation's context, queues, waits for its stream and pops
    the context, so the caller's current context is left as it was.
    Pinned host memory is allocated portable (usable from every context).

    Events of the stream-ordered entries (the NCCL face) are recycled, never
    destroyed: event_wait runs on the face's proxy thread, and the driver
    serialises event destruction behind a lock that a program thread holds
    while it blocks in a copy to pageable memory, waiting for a stream that
    in turn waits for the proxy (seen with PyTorch: `.cpu()` after a
    collective).  For the same reason event_record, which runs on the
    program's thread, creates the context's library stream before the
    proxy needs it.
*/
#include "util/cl_devops.h"

#include "cl_cuda_kernels.h"

#include <cuda.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CL_CUDA_EXPORT __attribute__((visibility("default")))
#define CL_CUDA_STREAMS 32 /* contexts with a library stream, at most */

static __thread char s_err[512]; /* last_error() of this thread */

static pthread_mutex_t s_mu = PTHREAD_MUTEX_INITIALIZER; /* guards s_streams, s_last_ctx */
static struct {
    CUcontext ctx;
    CUstream stream;
} s_streams[CL_CUDA_STREAMS];
static CUcontext s_last_ctx = NULL; /* context of the last device pointer seen */

/* Recycled events (event_record / event_wait), by context; guarded by
   s_ev_mu.  Their number stays at the most ever in flight at once. */
static pthread_mutex_t s_ev_mu = PTHREAD_MUTEX_INITIALIZER;
static struct spare_event {
    CUcontext ctx;
    CUevent ev;
    struct spare_event *next;
} *s_ev_free, *s_ev_nodes; /* events to reuse; list nodes without an event */

static int fail(CUresult r, const char *what)
{
    const char *name = NULL, *text = NULL;
    (void)cuGetErrorName(r, &name);
    (void)cuGetErrorString(r, &text);
    snprintf(s_err, sizeof s_err, "%s: %s (%s)", what, text != NULL ? text : "unknown error",
             name != NULL ? name : "?");
    return -1;
}

static const char *last_error(void)
{
    return s_err[0] != '\0' ? s_err : "no error";
}

static const char *describe(void)
{
    static char text[128];
    int v = 0, n = 0;
    (void)cuDriverGetVersion(&v);
    if (cuDeviceGetCount(&n) != CUDA_SUCCESS) /* before cuInit: unknown */
        n = -1;
    if (n >= 0)
        snprintf(text, sizeof text, "CUDA driver %d.%d, %d device%s", v / 1000, v % 1000 / 10, n,
                 n == 1 ? "" : "s");
    else
        snprintf(text, sizeof text, "CUDA driver %d.%d, not initialised yet by the program",
                 v / 1000, v % 1000 / 10);
    return text;
}

static int query(const void *p, cl_devattr_t *out)
{
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,    CU_POINTER_ATTRIBUTE_BUFFER_ID,
        CU_POINTER_ATTRIBUTE_IS_MANAGED,     CU_POINTER_ATTRIBUTE_CONTEXT,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    };
    unsigned int memtype = 0;
    unsigned long long buffer_id = 0;
    unsigned int managed = 0;
    CUcontext ctx = NULL;
    int ordinal = -1;
    CUdeviceptr start = 0;
    size_t size = 0;
    void *data[] = {&memtype, &buffer_id, &managed, &ctx, &ordinal, &start, &size};
    CUresult r = cuPointerGetAttributes(7, attrs, data, (CUdeviceptr)(uintptr_t)p);
    if (r == CUDA_ERROR_INVALID_CONTEXT) {
        /* A thread without a current context (the engine's): ask again
           from the context of the last device buffer seen.  With none
           seen yet, no device buffer has reached the library. */
        pthread_mutex_lock(&s_mu);
        CUcontext last = s_last_ctx;
        pthread_mutex_unlock(&s_mu);
        if (last == NULL)
            return CL_DEVQ_NOCTX;
        CUcontext prev;
        if ((r = cuCtxPushCurrent(last)) != CUDA_SUCCESS)
            return fail(r, "cuCtxPushCurrent");
        r = cuPointerGetAttributes(7, attrs, data, (CUdeviceptr)(uintptr_t)p);
        (void)cuCtxPopCurrent(&prev);
    }
    if (r == CUDA_ERROR_NOT_INITIALIZED || r == CUDA_ERROR_DEINITIALIZED)
        return CL_DEVQ_NOCTX;
    if (r != CUDA_SUCCESS)
        return fail(r, "cuPointerGetAttributes");
    if (memtype != CU_MEMORYTYPE_DEVICE && !managed)
        return CL_DEVQ_HOST; /* plain or registered host memory */
    if (ctx == NULL) {       /* managed memory need not name a context */
        (void)cuCtxGetCurrent(&ctx);
        if (ctx == NULL && ordinal >= 0) {
            CUdevice dev;
            if (cuDeviceGet(&dev, ordinal) == CUDA_SUCCESS)
                (void)cuDevicePrimaryCtxRetain(&ctx, dev);
        }
        if (ctx == NULL) {
            snprintf(s_err, sizeof s_err, "device memory at %p belongs to no context", p);
            return CL_DEVQ_ERR;
        }
    }
    if (size == 0) { /* no range attribute (older drivers): ask the context */
        CUcontext prev;
        if ((r = cuCtxPushCurrent(ctx)) != CUDA_SUCCESS)
            return fail(r, "cuCtxPushCurrent");
        r = cuMemGetAddressRange(&start, &size, (CUdeviceptr)(uintptr_t)p);
        (void)cuCtxPopCurrent(&prev);
        if (r != CUDA_SUCCESS)
            return fail(r, "cuMemGetAddressRange");
    }
    out->start = (uintptr_t)start;
    out->size = size;
    out->buffer_id = buffer_id;
    out->context = ctx;
    out->device = ordinal;
    out->managed = managed != 0;
    pthread_mutex_lock(&s_mu);
    s_last_ctx = ctx;
    pthread_mutex_unlock(&s_mu);
    return CL_DEVQ_DEVICE;
}

/* The library's stream of ctx (ctx current); NULL with s_err set. */
static CUstream stream_of(CUcontext ctx)
{
    CUstream s = NULL;
    pthread_mutex_lock(&s_mu);
    int i = 0;
    for (; i < CL_CUDA_STREAMS && s_streams[i].ctx != NULL; i++)
        if (s_streams[i].ctx == ctx) {
            s = s_streams[i].stream;
            break;
        }
    if (s == NULL) {
        if (i == CL_CUDA_STREAMS) {
            snprintf(s_err, sizeof s_err, "more than %d CUDA contexts hold buffers",
                     CL_CUDA_STREAMS);
        } else {
            CUresult r = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
            if (r != CUDA_SUCCESS) {
                fail(r, "cuStreamCreate");
                s = NULL;
            } else {
                s_streams[i].ctx = ctx;
                s_streams[i].stream = s;
            }
        }
    }
    pthread_mutex_unlock(&s_mu);
    return s;
}

static int push(CUcontext ctx)
{
    CUresult r = cuCtxPushCurrent(ctx);
    return r == CUDA_SUCCESS ? 0 : fail(r, "cuCtxPushCurrent");
}

static void pop(void)
{
    CUcontext prev;
    (void)cuCtxPopCurrent(&prev);
}

static void *host_alloc(size_t bytes)
{
    pthread_mutex_lock(&s_mu);
    CUcontext ctx = s_last_ctx;
    pthread_mutex_unlock(&s_mu);
    if (ctx == NULL && cuCtxGetCurrent(&ctx) != CUDA_SUCCESS)
        ctx = NULL; /* the calling thread's context, before any device pointer was seen */
    if (ctx == NULL) {
        snprintf(s_err, sizeof s_err, "no CUDA context known yet for pinned memory");
        return NULL;
    }
    if (push(ctx) != 0)
        return NULL;
    void *p = NULL;
    CUresult r = cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE);
    pop();
    if (r != CUDA_SUCCESS) {
        fail(r, "cuMemHostAlloc");
        return NULL;
    }
    return p;
}

static void host_free(void *p)
{
    if (p != NULL)
        (void)cuMemFreeHost(p);
}

static int copy(void *ctx, void *dst, const void *src, size_t n, int to_host)
{
    if (n == 0)
        return 0;
    if (push(ctx) != 0)
        return -1;
    CUstream s = stream_of(ctx);
    CUresult r = CUDA_SUCCESS;
    if (s == NULL) {
        pop();
        return -1;
    }
    if (to_host)
        r = cuMemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)src, n, s);
    else
        r = cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dst, src, n, s);
    if (r == CUDA_SUCCESS)
        r = cuStreamSynchronize(s);
    pop();
    return r == CUDA_SUCCESS ? 0 : fail(r, to_host ? "device to host copy" : "host to device copy");
}

static int d2h(void *ctx, void *host, const void *dev, size_t n)
{
    return copy(ctx, host, dev, n, 1);
}

static int h2d(void *ctx, void *dev, const void *host, size_t n)
{
    return copy(ctx, dev, host, n, 0);
}

static int copy_any(void *ctx, void *dst, const void *src, size_t n)
{
    if (n == 0)
        return 0;
    if (push(ctx) != 0)
        return -1;
    CUstream s = stream_of(ctx);
    CUresult r = CUDA_SUCCESS;
    if (s == NULL) {
        pop();
        return -1;
    }
    r = cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n, s);
    if (r == CUDA_SUCCESS)
        r = cuStreamSynchronize(s);
    pop();
    return r == CUDA_SUCCESS ? 0 : fail(r, "copy");
}

static int ctx_sync(void *ctx)
{
    if (push(ctx) != 0)
        return -1;
    CUresult r = cuCtxSynchronize();
    pop();
    return r == CUDA_SUCCESS ? 0 : fail(r, "cuCtxSynchronize");
}

typedef int(kernel_fn)(void *stream, int t, const void *a, void *b, size_t n, char *why,
                       size_t whylen);

/* Runs a kernel launcher on ctx's library stream and waits for it. */
static int run_kernel(void *ctx, kernel_fn *k, int t, const void *a, void *b, size_t n)
{
    if (push(ctx) != 0)
        return -1;
    CUstream s = stream_of(ctx);
    int rc = s != NULL ? k(s, t, a, b, n, s_err, sizeof s_err) : -1;
    if (rc == 0) {
        CUresult r = cuStreamSynchronize(s);
        rc = r == CUDA_SUCCESS ? 0 : fail(r, "kernel");
    }
    pop();
    return rc;
}

static int k_sum(void *stream, int t, const void *in, void *inout, size_t n, char *why,
                 size_t whylen)
{
    return cl_cuda_k_sum(stream, t, in, inout, n, why, whylen);
}

static int sum(void *ctx, int t, const void *in, void *inout, size_t n)
{
    return run_kernel(ctx, k_sum, t, in, inout, n);
}

#define CL_CODEC(name)                                                                             \
    static int k_##name(void *stream, int t, const void *src, void *dst, size_t n, char *why,      \
                        size_t whylen)                                                             \
    {                                                                                              \
        return cl_cuda_k_##name(stream, t, src, n, dst, why, whylen);                              \
    }                                                                                              \
    static int name(void *ctx, int t, const void *src, size_t n, void *dst)                        \
    {                                                                                              \
        return run_kernel(ctx, k_##name, t, src, dst, n);                                          \
    }

CL_CODEC(fp16_encode)
CL_CODEC(fp16_decode)
CL_CODEC(int8_encode)
CL_CODEC(int8_decode)

/* A spare event of ctx, or NULL. */
static CUevent spare_take(CUcontext ctx)
{
    CUevent ev = NULL;
    pthread_mutex_lock(&s_ev_mu);
    for (struct spare_event **pp = &s_ev_free; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->ctx == ctx) {
            struct spare_event *n = *pp;
            *pp = n->next;
            ev = n->ev;
            n->next = s_ev_nodes;
            s_ev_nodes = n;
            break;
        }
    pthread_mutex_unlock(&s_ev_mu);
    return ev;
}

/* Keeps ev for reuse; destroys it only when no list node can be had (the
   caller then risks the lock described above, which beats a leak). */
static void spare_put(CUcontext ctx, CUevent ev)
{
    pthread_mutex_lock(&s_ev_mu);
    struct spare_event *n = s_ev_nodes;
    if (n != NULL)
        s_ev_nodes = n->next;
    else
        n = malloc(sizeof *n);
    if (n != NULL) {
        *n = (struct spare_event){.ctx = ctx, .ev = ev, .next = s_ev_free};
        s_ev_free = n;
    }
    pthread_mutex_unlock(&s_ev_mu);
    if (n == NULL)
        (void)cuEventDestroy(ev);
}

static int event_record(void *stream, void **ctx_out, void **event_out)
{
    CUcontext ctx = NULL;
    CUresult r = cuStreamGetCtx((CUstream)stream, &ctx);
    if (r != CUDA_SUCCESS)
        return fail(r, "cuStreamGetCtx");
    if (push(ctx) != 0)
        return -1;
    (void)stream_of(ctx); /* created here, on the program's thread */
    CUevent ev = spare_take(ctx);
    r = ev != NULL ? CUDA_SUCCESS
                   : cuEventCreate(&ev, CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING);
    if (r == CUDA_SUCCESS) {
        r = cuEventRecord(ev, (CUstream)stream);
        if (r != CUDA_SUCCESS)
            spare_put(ctx, ev);
    }
    pop();
    if (r != CUDA_SUCCESS)
        return fail(r, "cuEventRecord");
    *ctx_out = ctx;
    *event_out = ev;
    return 0;
}

static int event_wait(void *ctx, void *event)
{
    if (push(ctx) != 0)
        return -1;
    CUresult r = cuEventSynchronize((CUevent)event);
    pop();
    spare_put((CUcontext)ctx, (CUevent)event);
    return r == CUDA_SUCCESS ? 0 : fail(r, "cuEventSynchronize");
}

static int flag_alloc(uint32_t **flag)
{
    void *p = NULL;
    CUresult r = cuMemHostAlloc(&p, 64, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    if (r != CUDA_SUCCESS)
        return fail(r, "cuMemHostAlloc (flag)");
    memset(p, 0, 64);
    *flag = p;
    return 0;
}

static void flag_free(uint32_t *flag)
{
    if (flag != NULL)
        (void)cuMemFreeHost(flag);
}

static int stream_wait_flag(void *stream, uint32_t *flag, uint32_t value)
{
    CUdeviceptr d = 0;
    CUresult r = cuMemHostGetDevicePointer(&d, flag, 0);
    if (r != CUDA_SUCCESS)
        return fail(r, "cuMemHostGetDevicePointer");
    r = cuStreamWaitValue32((CUstream)stream, d, value, CU_STREAM_WAIT_VALUE_GEQ);
    return r == CUDA_SUCCESS ? 0 : fail(r, "cuStreamWaitValue32");
}

static int current_device(void)
{
    CUdevice d = 0;
    return cuCtxGetDevice(&d) == CUDA_SUCCESS ? (int)d : -1;
}

static int dev_alloc(void **p, size_t n)
{
    CUdeviceptr d = 0;
    CUresult r = cuMemAlloc(&d, n);
    if (r != CUDA_SUCCESS)
        return fail(r, "cuMemAlloc");
    *p = (void *)(uintptr_t)d;
    return 0;
}

static int dev_free(void *p)
{
    CUresult r = cuMemFree((CUdeviceptr)(uintptr_t)p);
    return r == CUDA_SUCCESS ? 0 : fail(r, "cuMemFree");
}

/* The chunk pipeline (cl_stage.c): copies queued without waiting, each
   optionally followed by an event that the engine thread queries.  The
   events come from the same recycled list as event_record's (blocking
   sync for both: a recycled event may be waited on), so that the engine
   thread creates and destroys none after the first operations. */
static int copy_async(void *ctx, void *host, void *dev, size_t n, int to_host, void **event)
{
    if (push(ctx) != 0)
        return -1;
    CUstream s = stream_of(ctx);
    CUresult r = CUDA_SUCCESS;
    CUevent ev = NULL;
    if (s == NULL) {
        pop();
        return -1;
    }
    if (n > 0 && to_host)
        r = cuMemcpyDtoHAsync(host, (CUdeviceptr)(uintptr_t)dev, n, s);
    else if (n > 0)
        r = cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dev, host, n, s);
    if (r == CUDA_SUCCESS && event != NULL) {
        ev = spare_take((CUcontext)ctx);
        if (ev == NULL)
            r = cuEventCreate(&ev, CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING);
        if (r == CUDA_SUCCESS && (r = cuEventRecord(ev, s)) != CUDA_SUCCESS)
            spare_put((CUcontext)ctx, ev);
    }
    pop();
    if (r != CUDA_SUCCESS)
        return fail(r, to_host ? "queued device to host copy" : "queued host to device copy");
    if (event != NULL)
        *event = ev;
    return 0;
}

static int event_done(void *ctx, void *event)
{
    if (push(ctx) != 0)
        return -1;
    CUresult r = cuEventQuery((CUevent)event);
    pop();
    if (r == CUDA_SUCCESS)
        return 1;
    if (r == CUDA_ERROR_NOT_READY)
        return 0;
    return fail(r, "cuEventQuery");
}

static void event_free(void *ctx, void *event)
{
    if (event != NULL)
        spare_put((CUcontext)ctx, (CUevent)event);
}

static int stream_sync(void *ctx)
{
    if (push(ctx) != 0)
        return -1;
    CUstream s = stream_of(ctx);
    CUresult r = s != NULL ? cuStreamSynchronize(s) : CUDA_SUCCESS;
    pop();
    if (s == NULL)
        return -1;
    return r == CUDA_SUCCESS ? 0 : fail(r, "cuStreamSynchronize");
}

/* Runs in the driver's callback thread: no CUDA call here. */
static void CUDA_CB wake_fn(void *arg)
{
    uint64_t one = 1;
    ssize_t w;
    do
        w = write((int)(intptr_t)arg, &one, sizeof one);
    while (w < 0 && errno == EINTR);
}

static int host_wake(void *ctx, int fd)
{
    if (push(ctx) != 0)
        return -1;
    CUstream s = stream_of(ctx);
    CUresult r = s != NULL ? cuLaunchHostFunc(s, wake_fn, (void *)(intptr_t)fd) : CUDA_SUCCESS;
    pop();
    if (s == NULL)
        return -1;
    return r == CUDA_SUCCESS ? 0 : fail(r, "cuLaunchHostFunc");
}

static const cl_devops_t s_ops = {
    .abi = CL_DEVOPS_ABI,
    .size = sizeof(cl_devops_t),
    .describe = describe,
    .query = query,
    .host_alloc = host_alloc,
    .host_free = host_free,
    .d2h = d2h,
    .h2d = h2d,
    .copy = copy_any,
    .ctx_sync = ctx_sync,
    .sum = sum,
    .fp16_encode = fp16_encode,
    .fp16_decode = fp16_decode,
    .int8_encode = int8_encode,
    .int8_decode = int8_decode,
    .last_error = last_error,
    .event_record = event_record,
    .event_wait = event_wait,
    .flag_alloc = flag_alloc,
    .flag_free = flag_free,
    .stream_wait_flag = stream_wait_flag,
    .current_device = current_device,
    .dev_alloc = dev_alloc,
    .dev_free = dev_free,
    .copy_async = copy_async,
    .event_done = event_done,
    .event_free = event_free,
    .stream_sync = stream_sync,
    .host_wake = host_wake,
};

CL_CUDA_EXPORT const cl_devops_t *collab_cuda_plugin_ops(void)
{
    return &s_ops;
}
