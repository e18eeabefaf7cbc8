/*  cl_device.h - the core's only door to device memory (docs/cuda.md).

    COLLAB_CUDA decides at collab_init whether the device plugin
    (libmpicollab-cuda.so, built from cuda/) is loaded: `auto` loads it
    where the NVIDIA driver (libcuda.so.1) can be loaded, `0` never, `1`
    always, and a missing driver or plugin is then an error.  The core
    links no GPU library and never calls cuInit; all it knows of the
    device is the table in cl_devops.h.

    Without the plugin every pointer is host memory and cl_device_kind
    costs one relaxed atomic load.  With it, pointers are classified by the
    cache of cl_devcache.h.  Pinned host buffers for staging come from a
    pool: allocated once, reused, never freed before the process ends.
*/
#ifndef CL_DEVICE_H_INCLUDED
#define CL_DEVICE_H_INCLUDED

#include "util/cl_devops.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* COLLAB_CUDA values (cl_config_t.cuda). */
#define CL_DEVICE_AUTO (-1)
#define CL_DEVICE_OFF 0
#define CL_DEVICE_ON 1

/* Loads the plugin as `mode` says (once per process; later calls return
   the first outcome).  Returns 0, or COLLAB_ERR_CONFIG (logged, with the
   cause) when mode is CL_DEVICE_ON and the driver or the plugin cannot be
   loaded, or the plugin is not of this version. */
int cl_device_init(int mode);

/* The table in use, or NULL (no device support). */
extern const cl_devops_t *_Atomic cl_device_ops_p;

/* True when device pointers are possible in this process. */
static inline bool cl_device_active(void)
{
    return atomic_load_explicit(&cl_device_ops_p, memory_order_relaxed) != NULL;
}

/* Kind of [p, p + len): CL_DEVQ_HOST, CL_DEVQ_DEVICE (*out filled), or
   CL_DEVQ_ERR (logged once per cause).  Without the plugin always
   CL_DEVQ_HOST. */
int cl_device_kind_slow(const void *p, size_t len, cl_devattr_t *out);
static inline int cl_device_kind(const void *p, size_t len, cl_devattr_t *out)
{
    if (!cl_device_active())
        return CL_DEVQ_HOST;
    return cl_device_kind_slow(p, len, out);
}

/* A pinned host buffer of at least `bytes` from the pool (its capacity in
   *cap), or NULL when the allocation fails.  Give it back with
   cl_device_pinned_put. */
void *cl_device_pinned_get(size_t bytes, size_t *cap);
void cl_device_pinned_put(void *p, size_t cap);
/* Makes sure the pool holds, for each pooled size class, at least as many
   free buffers as sizes[0..n) name in that class (at most the pool's
   bound per class), allocating the missing ones in the calling thread.
   The NCCL face calls it in the program's thread before it queues an
   operation, so that the thread running the operation allocates no
   pinned memory: that allocation can wait on a driver lock that the
   program's thread holds while it blocks in a copy (docs/nccl.md §3).
   Returns 0, or COLLAB_ERR_NO_MEM (a debug line). */
int cl_device_pinned_reserve(const size_t *sizes, int n);

/* Copies through the plugin (see cl_devops_t); COLLAB_ERR_INTERNAL with a
   log line naming the driver's reason on failure. */
int cl_device_d2h(const cl_devattr_t *a, void *host, const void *dev, size_t n);
int cl_device_h2d(const cl_devattr_t *a, void *dev, const void *host, size_t n);
/* The chunk pipeline of staging (cl_stage.c): true when the table has the
   queued copies and events (ABI 3).  copy_async queues a copy on the
   library stream of a's context and returns at once (an event after it in
   *event when event != NULL); event_done answers 1 (completed), 0 (not
   yet) or a negative status without waiting; stream_sync waits for the
   library stream.  Failures are logged with the driver's reason and
   answered COLLAB_ERR_INTERNAL. */
bool cl_device_can_pipeline(void);
/* COLLAB_CUDA_PIPELINE: false turns the chunk pipeline off (whole-buffer
   staging for every call); set at collab_init. */
void cl_device_set_pipeline(bool on);
int cl_device_copy_async(const cl_devattr_t *a, void *host, void *dev, size_t n, bool to_host,
                         void **event);
int cl_device_event_done(const cl_devattr_t *a, void *event);
void cl_device_event_free(const cl_devattr_t *a, void *event);
int cl_device_stream_sync(const cl_devattr_t *a);
/* Wakes the engine (writes to the eventfd fd) once the library stream of
   a's context has done what is queued on it; COLLAB_ERR_INTERNAL where the
   table cannot (the caller then relies on its timer). */
int cl_device_host_wake(const cl_devattr_t *a, int fd);

/* Waits for the device work of a's context (queued kernels may still be
   writing a buffer the library is about to read or write); returns at
   once after collab_device_ordered(). */
int cl_device_sync(const cl_devattr_t *a);

/* Reads len bytes of device memory at src into host memory dst, and the
   reverse; the device pointer's context is synchronised first.  For the
   state registry: 0, or COLLAB_ERR_ARG when the pointer is not (or no
   longer) device memory or the copy fails. */
int cl_device_read(void *dst, const void *src, size_t len);
int cl_device_write(void *dst, const void *src, size_t len);

/* For tests: use `ops` (a fake device) instead of the plugin; NULL turns
   device support off again.  Clears the pointer cache. */
void cl_device_use_ops(const cl_devops_t *ops);

#endif
