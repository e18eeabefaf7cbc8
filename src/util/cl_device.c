/*  cl_device.c - loading the device plugin, classifying pointers, the
    pinned buffer pool (see cl_device.h and docs/cuda.md).

    The plugin is looked for beside the library that holds this code
    (<prefix>/lib, also from <prefix>/lib/mpicollab), then on the loader's
    search path.  libcuda.so.1 is loaded first, on its own: where it cannot
    be, the plugin (which needs it) is never touched and `auto` means "no
    device support", silently.

    The pool keeps pinned buffers in power-of-two size classes from 64 KiB
    up, at most CL_POOL_KEEP per class; a request above 4 GiB is allocated
    and freed each time.  cudaMallocHost per operation costs up to 1000x a
    pooled buffer (MPICH's measurement), hence the pool.
*/
#define _GNU_SOURCE
#include "util/cl_device.h"

#include "mpi_collab.h"
#include "util/cl_devcache.h"
#include "util/cl_log.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CL_POOL_MIN_SHIFT 16 /* 64 KiB */
#define CL_POOL_MAX_SHIFT 32 /* 4 GiB */
#define CL_POOL_CLASSES (CL_POOL_MAX_SHIFT - CL_POOL_MIN_SHIFT + 1)
#define CL_POOL_KEEP 4 /* free buffers kept per class */

const cl_devops_t *_Atomic cl_device_ops_p = NULL;

static pthread_mutex_t s_mu = PTHREAD_MUTEX_INITIALIZER; /* init, pool */
static bool s_init_done = false;
/* collab_device_ordered() was called: contexts are never synchronised. */
static atomic_bool s_ordered = false;
static int s_init_rc = 0;
static cl_devcache_t *_Atomic s_cache = NULL;
static void *s_pool[CL_POOL_CLASSES][CL_POOL_KEEP];
static int s_pool_n[CL_POOL_CLASSES];
static const cl_devops_t *s_pool_ops = NULL; /* the table the pooled buffers came from */

static int query_fn(void *arg, const void *p, cl_devattr_t *out)
{
    const cl_devops_t *ops = arg;
    return ops->query(p, out);
}

static void install(const cl_devops_t *ops)
{
    cl_devcache_t *old = atomic_exchange(&s_cache, NULL);
    atomic_store(&cl_device_ops_p, NULL);
    cl_devcache_destroy(&old);
    if (ops == NULL)
        return;
    atomic_store(&s_cache, cl_devcache_new(query_fn, (void *)ops));
    if (atomic_load(&s_cache) != NULL)
        atomic_store(&cl_device_ops_p, ops);
}

/* Directory of the library (or program) holding this code, with a slash. */
static void own_dir(char *out, size_t len)
{
    Dl_info di;
    out[0] = '\0';
    if (dladdr((void *)&cl_device_init, &di) == 0 || di.dli_fname == NULL)
        return;
    const char *slash = strrchr(di.dli_fname, '/');
    if (slash == NULL)
        return;
    snprintf(out, len, "%.*s", (int)(slash - di.dli_fname + 1), di.dli_fname);
}

static void *open_plugin(char *why, size_t whylen)
{
    char dir[4096], path[4200];
    own_dir(dir, sizeof dir);
    const char *cands[] = {"libmpicollab-cuda.so", "../libmpicollab-cuda.so"};
    for (size_t i = 0; i < 2 && dir[0] != '\0'; i++) {
        snprintf(path, sizeof path, "%s%s", dir, cands[i]);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h != NULL)
            return h;
    }
    void *h = dlopen("libmpicollab-cuda.so", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        snprintf(why, whylen,
                 "the device plugin libmpicollab-cuda.so cannot be loaded (looked in "
                 "%s and on the library path: %s); it is built only where the CUDA toolkit is "
                 "found",
                 dir[0] != '\0' ? dir : "(unknown)", dlerror());
    return h;
}

static int load(int mode)
{
    bool must = mode == CL_DEVICE_ON;
    char why[1024] = "";
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (cuda == NULL) {
        if (!must) {
            cl_debug("device support off: no NVIDIA driver (%s)", dlerror());
            return COLLAB_OK;
        }
        cl_error("COLLAB_CUDA=1: the NVIDIA driver (libcuda.so.1) cannot be loaded: %s; set "
                 "COLLAB_CUDA=auto or 0 to run with host buffers only",
                 dlerror());
        return COLLAB_ERR_CONFIG;
    }
    void *h = open_plugin(why, sizeof why);
    if (h == NULL) {
        if (!must) {
            cl_info("device buffers unsupported: %s", why);
            return COLLAB_OK;
        }
        cl_error("COLLAB_CUDA=1: %s", why);
        return COLLAB_ERR_CONFIG;
    }
    cl_devops_entry_t *entry = (cl_devops_entry_t *)dlsym(h, CL_DEVOPS_ENTRY);
    const cl_devops_t *ops = entry != NULL ? entry() : NULL;
    if (ops == NULL || ops->abi != CL_DEVOPS_ABI || ops->size != sizeof(cl_devops_t)) {
        cl_log(must ? CL_LOG_ERROR : CL_LOG_WARN,
               "%sthe device plugin libmpicollab-cuda.so is not of this version (table abi "
               "%u, expected %u): device buffers unsupported",
               must ? "COLLAB_CUDA=1: " : "", ops != NULL ? ops->abi : 0u, CL_DEVOPS_ABI);
        return must ? COLLAB_ERR_CONFIG : COLLAB_OK;
    }
    install(ops);
    cl_debug("device support on: %s", ops->describe());
    return COLLAB_OK;
}

int cl_device_init(int mode)
{
    pthread_mutex_lock(&s_mu);
    if (!s_init_done) {
        s_init_done = true;
        s_init_rc = mode == CL_DEVICE_OFF ? COLLAB_OK : load(mode);
    }
    int rc = s_init_rc;
    pthread_mutex_unlock(&s_mu);
    return rc;
}

void cl_device_use_ops(const cl_devops_t *ops)
{
    pthread_mutex_lock(&s_mu);
    s_init_done = true;
    install(ops);
    pthread_mutex_unlock(&s_mu);
}

int cl_device_kind_slow(const void *p, size_t len, cl_devattr_t *out)
{
    cl_devcache_t *c = atomic_load_explicit(&s_cache, memory_order_acquire);
    if (c == NULL)
        return CL_DEVQ_HOST;
    cl_devattr_t tmp;
    int k = cl_devcache_kind(c, p, len, out != NULL ? out : &tmp);
    if (k == CL_DEVQ_ERR) {
        const cl_devops_t *ops = atomic_load(&cl_device_ops_p);
        cl_error("cannot tell whether buffer %p (%zu bytes) is device memory: %s", p, len,
                 ops != NULL ? ops->last_error() : "no device support");
    }
    return k;
}

/* ---------------------------------------------------------------------- */
/* Pinned pool. */

static int pool_class(size_t bytes)
{
    int c = 0;
    while (c < CL_POOL_CLASSES && ((size_t)1 << (CL_POOL_MIN_SHIFT + c)) < bytes)
        c++;
    return c < CL_POOL_CLASSES ? c : -1;
}

void *cl_device_pinned_get(size_t bytes, size_t *cap)
{
    const cl_devops_t *ops = atomic_load(&cl_device_ops_p);
    if (ops == NULL)
        return NULL;
    int c = pool_class(bytes);
    size_t want = c >= 0 ? (size_t)1 << (CL_POOL_MIN_SHIFT + c) : bytes;
    void *p = NULL;
    pthread_mutex_lock(&s_mu);
    if (s_pool_ops != ops) { /* another table (tests): its buffers are its own */
        memset(s_pool_n, 0, sizeof s_pool_n);
        s_pool_ops = ops;
    }
    if (c >= 0 && s_pool_n[c] > 0)
        p = s_pool[c][--s_pool_n[c]];
    pthread_mutex_unlock(&s_mu);
    if (p == NULL)
        p = ops->host_alloc(want);
    if (p == NULL) {
        cl_error("cannot allocate %zu bytes of pinned host memory for device staging: %s", want,
                 ops->last_error());
        return NULL;
    }
    *cap = want;
    return p;
}

void cl_device_pinned_put(void *p, size_t cap)
{
    const cl_devops_t *ops = atomic_load(&cl_device_ops_p);
    if (p == NULL || ops == NULL)
        return;
    int c = pool_class(cap);
    pthread_mutex_lock(&s_mu);
    bool kept = c >= 0 && ((size_t)1 << (CL_POOL_MIN_SHIFT + c)) == cap && s_pool_ops == ops &&
                s_pool_n[c] < CL_POOL_KEEP;
    if (kept)
        s_pool[c][s_pool_n[c]++] = p;
    pthread_mutex_unlock(&s_mu);
    if (!kept)
        ops->host_free(p);
}

int cl_device_pinned_reserve(const size_t *sizes, int n)
{
    const cl_devops_t *ops = atomic_load(&cl_device_ops_p);
    if (ops == NULL || sizes == NULL || n <= 0)
        return COLLAB_OK;
    pthread_mutex_lock(&s_mu);
    if (s_pool_ops != ops) { /* as in cl_device_pinned_get */
        memset(s_pool_n, 0, sizeof s_pool_n);
        s_pool_ops = ops;
    }
    pthread_mutex_unlock(&s_mu);
    int want[CL_POOL_CLASSES] = {0};
    for (int i = 0; i < n; i++) {
        int c = sizes[i] > 0 ? pool_class(sizes[i]) : -1;
        if (c >= 0 && want[c] < CL_POOL_KEEP)
            want[c]++;
    }
    for (int c = 0; c < CL_POOL_CLASSES; c++) {
        for (;;) {
            pthread_mutex_lock(&s_mu);
            bool enough = s_pool_ops == ops && s_pool_n[c] >= want[c];
            pthread_mutex_unlock(&s_mu);
            if (enough || want[c] == 0)
                break;
            size_t cap = (size_t)1 << (CL_POOL_MIN_SHIFT + c);
            void *p = ops->host_alloc(cap);
            if (p == NULL) { /* the operation will try again itself */
                cl_debug("no %zu bytes of pinned host memory reserved for device staging: %s",
                         cap, ops->last_error());
                return COLLAB_ERR_NO_MEM;
            }
            cl_device_pinned_put(p, cap);
            pthread_mutex_lock(&s_mu);
            bool kept = s_pool_ops == ops && s_pool_n[c] > 0 && s_pool[c][s_pool_n[c] - 1] == p;
            pthread_mutex_unlock(&s_mu);
            if (!kept)
                break; /* another table or a full class: nothing more to do */
        }
    }
    return COLLAB_OK;
}

/* ---------------------------------------------------------------------- */
/* Copies. */

static int fail(const cl_devops_t *ops, const char *what)
{
    cl_error("device %s failed: %s", what, ops != NULL ? ops->last_error() : "no device support");
    return COLLAB_ERR_INTERNAL;
}

int cl_device_d2h(const cl_devattr_t *a, void *host, const void *dev, size_t n)
{
    const cl_devops_t *ops = atomic_load(&cl_device_ops_p);
    if (n == 0)
        return COLLAB_OK;
    if (ops == NULL || ops->d2h(a->context, host, dev, n) != 0)
        return fail(ops, "to host copy");
    return COLLAB_OK;
}

int cl_device_h2d(const cl_devattr_t *a, void *dev, const void *host, size_t n)
{
    const cl_devops_t *ops = atomic_load(&cl_device_ops_p);
    if (n == 0)
        return COLLAB_OK;
    if (ops == NULL || ops->h2d(a->context, dev, host, n) != 0)
        return fail(ops, "from host copy");
    return COLLAB_OK;
}

static atomic_bool s_pipeline = true; /* COLLAB_CUDA_PIPELINE */

void cl_device_set_pipeline(bool on)
{
    atomic_store(&s_pipeline, on);
}

bool cl_device_can_pipeline(void)
{
    /* Not under the NCCL face (collab_device_ordered): there the program's
       streams wait for the operation, and a driver call of the engine
       thread could wait behind a program thread that holds the driver's
       lock while it waits for such a stream (docs/nccl.md). */
    const cl_devops_t *ops = atomic_load(&cl_device_ops_p);
    return atomic_load(&s_pipeline) && !atomic_load(&s_ordered) && ops != NULL && ops->copy_async != NULL && ops->event_done != NULL &&
           ops->event_free != NULL && ops->stream_sync != NULL;
}

int cl_device_copy_async(const cl_devattr_t *a, void *host, void *dev, size_t n, bool to_host,
                         void **event)
{
    const cl_devops_t *ops = atomic_load(&cl_device_ops_p);
    if (ops == NULL || ops->copy_async(a->context, host, dev, n, to_host ? 1 : 0, event) != 0)
        return fail(ops, to_host ? "queued to host copy" : "queued from host copy");
    return COLLAB_OK;
}

int cl_device_event_done(const cl_devattr_t *a, void *event)
{
    const cl_devops_t *ops = atomic_load(&cl_device_ops_p);
    int r = ops != NULL ? ops->event_done(a->context, event) : -1;
    return r >= 0 ? r : fail(ops, "event query");
}

void cl_device_event_free(const cl_devattr_t *a, void *event)
{
    const cl_devops_t *ops = atomic_load(&cl_device_ops_p);
    if (ops != NULL && event != NULL)
        ops->event_free(a->context, event);
}

int cl_device_stream_sync(const cl_devattr_t *a)
{
    const cl_devops_t *ops = atomic_load(&cl_device_ops_p);
    if (ops == NULL || ops->stream_sync(a->context) != 0)
        return fail(ops, "stream synchronisation");
    return COLLAB_OK;
}

int cl_device_host_wake(const cl_devattr_t *a, int fd)
{
    const cl_devops_t *ops = atomic_load(&cl_device_ops_p);
    if (ops == NULL || ops->host_wake == NULL || ops->host_wake(a->context, fd) != 0)
        return COLLAB_ERR_INTERNAL;
    return COLLAB_OK;
}

void collab_device_ordered(void)
{
    atomic_store(&s_ordered, true);
}

int cl_device_sync(const cl_devattr_t *a)
{
    /* The NCCL face orders device work with events; its program's streams
       may be waiting on a flag that only the running operation releases. */
    if (atomic_load(&s_ordered))
        return COLLAB_OK;
    const cl_devops_t *ops = atomic_load(&cl_device_ops_p);
    if (ops == NULL || ops->ctx_sync(a->context) != 0)
        return fail(ops, "synchronisation");
    return COLLAB_OK;
}

int cl_device_read(void *dst, const void *src, size_t len)
{
    cl_devattr_t a;
    if (cl_device_kind(src, len, &a) != CL_DEVQ_DEVICE || cl_device_sync(&a) != COLLAB_OK)
        return COLLAB_ERR_ARG;
    return cl_device_d2h(&a, dst, src, len) == COLLAB_OK ? COLLAB_OK : COLLAB_ERR_ARG;
}

int cl_device_write(void *dst, const void *src, size_t len)
{
    cl_devattr_t a;
    if (cl_device_kind(dst, len, &a) != CL_DEVQ_DEVICE || cl_device_sync(&a) != COLLAB_OK)
        return COLLAB_ERR_ARG;
    if (cl_device_h2d(&a, dst, src, len) != COLLAB_OK)
        return COLLAB_ERR_ARG;
    return cl_device_sync(&a) == COLLAB_OK ? COLLAB_OK : COLLAB_ERR_ARG;
}

int collab_device_reserve(const size_t *sizes, int n)
{
    return cl_device_pinned_reserve(sizes, n);
}

int collab_device_support(void)
{
    return cl_device_active() ? 1 : 0;
}

int collab_is_device_buffer(const void *p)
{
    cl_devattr_t a;
    return p != NULL && cl_device_kind(p, 1, &a) == CL_DEVQ_DEVICE ? 1 : 0;
}

int collab_memcpy(void *dst, const void *src, size_t n)
{
    if (n == 0)
        return COLLAB_OK;
    if (dst == NULL || src == NULL)
        return COLLAB_ERR_ARG;
    cl_devattr_t ad, as;
    int kd = cl_device_kind(dst, n, &ad), ks = cl_device_kind(src, n, &as);
    if (kd == CL_DEVQ_ERR || ks == CL_DEVQ_ERR)
        return COLLAB_ERR_ARG;
    if (kd == CL_DEVQ_HOST && ks == CL_DEVQ_HOST) {
        memmove(dst, src, n);
        return COLLAB_OK;
    }
    const cl_devops_t *ops = atomic_load(&cl_device_ops_p);
    const cl_devattr_t *a = ks == CL_DEVQ_DEVICE ? &as : &ad;
    if (cl_device_sync(a) != COLLAB_OK) /* the program's kernels may still write src */
        return COLLAB_ERR_INTERNAL;
    uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    if (d >= s + n || s >= d + n) {
        if (ops->copy == NULL || ops->copy(a->context, dst, src, n) != 0)
            return fail(ops, "copy");
        return COLLAB_OK;
    }
    /* Overlapping device ranges: through a pinned buffer. */
    size_t cap = 0;
    void *tmp = cl_device_pinned_get(n, &cap);
    if (tmp == NULL)
        return COLLAB_ERR_NO_MEM;
    int rc = cl_device_d2h(a, tmp, src, n);
    if (rc == COLLAB_OK)
        rc = cl_device_h2d(a, dst, tmp, n);
    cl_device_pinned_put(tmp, cap);
    return rc;
}
