/*  cl_devops.h - the operations table between the core and the device
    plugin (cuda/, libmpicollab-cuda.so).

    The core never links a GPU library: it dlopens the plugin (cl_device.c)
    and calls it only through this table.  Plain C types only, so the
    plugin and the core agree without sharing any CUDA header.  The plugin
    exports one function, collab_cuda_plugin_ops, that returns the table;
    `abi` must equal CL_DEVOPS_ABI and `size` sizeof(cl_devops_t) or the
    core refuses the plugin.

    Every entry returns 0 on success or a negative code (CL_DEVQ_*) and
    keeps a one-line reason for last_error().  None of them calls cuInit:
    when the program has not initialised the driver, query() answers
    CL_DEVQ_NOCTX and the pointer is host memory.
*/
#ifndef CL_DEVOPS_H_INCLUDED
#define CL_DEVOPS_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#define CL_DEVOPS_ABI 3

/* query() results. */
#define CL_DEVQ_HOST 0   /* host memory (or registered/pinned host memory) */
#define CL_DEVQ_DEVICE 1 /* device or managed memory: fields below are set */
#define CL_DEVQ_NOCTX 2  /* the driver is not initialised: no device memory exists */
#define CL_DEVQ_ERR (-1) /* the query failed: last_error() says why */

/* Element types the device kernels know (a subset of collab_dtype_t, named
   here so that the plugin needs no core header). */
#define CL_DEVT_F32 0
#define CL_DEVT_F64 1
#define CL_DEVT_F16 2

typedef struct {
    uintptr_t start;    /* first byte of the allocation holding the pointer */
    size_t size;        /* its size in bytes */
    uint64_t buffer_id; /* CU_POINTER_ATTRIBUTE_BUFFER_ID: new for every allocation */
    void *context;      /* the CUcontext owning the allocation */
    int device;         /* device ordinal */
    int managed;        /* 1 for managed (unified) memory */
} cl_devattr_t;

typedef struct {
    uint32_t abi;  /* CL_DEVOPS_ABI */
    uint32_t size; /* sizeof(cl_devops_t) */
    /* Driver version and device count, for the log ("CUDA 13.0, 1 device"). */
    const char *(*describe)(void);
    /* Kind of memory at p (one cuPointerGetAttributes call).  For
       CL_DEVQ_DEVICE fills *out. */
    int (*query)(const void *p, cl_devattr_t *out);
    /* Pinned host memory (cuMemHostAlloc, portable to every context) and
       its release.  alloc returns NULL on failure. */
    void *(*host_alloc)(size_t bytes);
    void (*host_free)(void *p);
    /* Copies between device memory in context ctx and pinned host memory,
       on the library's own stream of ctx; both return once the copy is
       complete. */
    int (*d2h)(void *ctx, void *host, const void *dev, size_t n);
    int (*h2d)(void *ctx, void *dev, const void *host, size_t n);
    /* Copies n bytes between any two of device, managed, pinned and
       pageable host memory (unified addressing decides the direction), in
       context ctx, on the library's stream; returns once complete.  The
       ranges must not overlap. */
    int (*copy)(void *ctx, void *dst, const void *src, size_t n);
    /* Waits for all work queued in ctx (every stream): the program's
       kernels may still be writing a buffer the library is about to read. */
    int (*ctx_sync)(void *ctx);
    /* Device kernels, bit for bit the host kernels (cl_reduce_float.c,
       cl_compress.c): inout[i] = in[i] + inout[i] for n elements of type
       t (CL_DEVT_*); fp16 and int8 wire encoding/decoding of F32/F64.
       Pointers are device memory of ctx; each returns once done. */
    int (*sum)(void *ctx, int t, const void *in, void *inout, size_t n);
    int (*fp16_encode)(void *ctx, int t, const void *src, size_t n, void *dst);
    int (*fp16_decode)(void *ctx, int t, const void *src, size_t n, void *dst);
    int (*int8_encode)(void *ctx, int t, const void *src, size_t n, void *dst);
    int (*int8_decode)(void *ctx, int t, const void *src, size_t n, void *dst);
    /* The reason of the last failure in this thread (static storage). */
    const char *(*last_error)(void);
    /* Stream work for the NCCL face (docs/nccl.md).  Unless said
       otherwise these run in the program's thread, with its context
       current; `stream` is a CUstream (NULL: the legacy default stream).
       event_record takes an event (blocking sync, no timing; a recycled
       one where it can), records it on stream and returns it with the
       stream's context; it also prepares the context's library stream, so
       that the thread running the operation creates nothing. */
    int (*event_record)(void *stream, void **ctx, void **event);
    /* Any thread: sleeps until the event has completed, then releases it
       for reuse (it is never destroyed there: destroying takes a driver
       lock that a program thread may hold while it waits for a stream
       that waits for this operation). */
    int (*event_wait)(void *ctx, void *event);
    /* A zeroed 32-bit word of pinned host memory that the device can read
       (cuMemHostAlloc, mapped), and its release. */
    int (*flag_alloc)(uint32_t **flag);
    void (*flag_free)(uint32_t *flag);
    /* Makes later work on stream wait until *flag >= value
       (cuStreamWaitValue32, GEQ); the host then writes the flag.  Fails
       where the device has no stream memory operations. */
    int (*stream_wait_flag)(void *stream, uint32_t *flag, uint32_t value);
    /* Device ordinal of the calling thread's context, or -1 without one. */
    int (*current_device)(void);
    /* Device memory in the current context (cuMemAlloc / cuMemFree). */
    int (*dev_alloc)(void **p, size_t n);
    int (*dev_free)(void *p);
    /* The chunk pipeline of staging (cl_stage.c, ABI 3).  Any thread; none
       of these waits for the device except stream_sync.  copy_async queues
       a copy of n bytes on ctx's library stream, from device memory dev to
       pinned host memory host when to_host, else the reverse, and returns
       at once; with event != NULL it records an event after the copy and
       returns it in *event (free it with event_free). */
    int (*copy_async)(void *ctx, void *host, void *dev, size_t n, int to_host, void **event);
    /* 1 once the event has completed, 0 while not yet, negative on error;
       never waits.  event_free releases a completed event (the plugin
       recycles it rather than destroy it on the engine's thread). */
    int (*event_done)(void *ctx, void *event);
    void (*event_free)(void *ctx, void *event);
    /* Waits for all work queued on ctx's library stream. */
    int (*stream_sync)(void *ctx);
    /* Queues on ctx's library stream a host function that writes an
       8-byte 1 to fd (an eventfd) once the work queued before it has
       completed, and returns at once (cuLaunchHostFunc).  NULL: the core
       looks at the events on a timer only. */
    int (*host_wake)(void *ctx, int fd);
} cl_devops_t;

/* The one symbol the plugin exports. */
typedef const cl_devops_t *(cl_devops_entry_t)(void);
#define CL_DEVOPS_ENTRY "collab_cuda_plugin_ops"

#endif
