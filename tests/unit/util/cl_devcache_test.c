/*  cl_devcache_test.c - selftest of cl_devcache with a fake driver, and of
    cl_device where no NVIDIA driver is installed (COLLAB_CUDA=auto gives
    host memory, COLLAB_CUDA=1 a clear error).

    The fake driver holds a table of "device allocations" (address ranges
    with a buffer id) and counts its queries, so each check can see whether
    the cache answered or asked. */
#define _GNU_SOURCE
#include "mpi_collab.h"
#include "util/cl_devcache.h"
#include "util/cl_device.h"
#include "util/cl_selftest.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define FAKE_MAX 8

static struct {
    cl_devattr_t dev[FAKE_MAX]; /* size 0: unused */
    int answer;                 /* forced answer when not CL_DEVQ_DEVICE (host, noctx, err) */
    int queries;
} s_fake;

static int fake_query(void *arg, const void *p, cl_devattr_t *out)
{
    (void)arg;
    __atomic_add_fetch(&s_fake.queries, 1, __ATOMIC_RELAXED);
    uintptr_t u = (uintptr_t)p;
    for (int i = 0; i < FAKE_MAX; i++) {
        const cl_devattr_t *d = &s_fake.dev[i];
        if (d->size > 0 && u >= d->start && u < d->start + d->size) {
            *out = *d;
            return CL_DEVQ_DEVICE;
        }
    }
    return s_fake.answer;
}

static void fake_alloc(int slot, uintptr_t start, size_t size, uint64_t id)
{
    s_fake.dev[slot] = (cl_devattr_t){.start = start, .size = size, .buffer_id = id};
}

static void *s_reader(void *arg)
{
    cl_devcache_t *c = arg;
    static char buf[1 << 16];
    int bad = 0;
    cl_devattr_t a;
    for (int i = 0; i < 200000; i++)
        bad += cl_devcache_kind(c, buf + (i % 1000) * 8, 64, &a) != CL_DEVQ_HOST;
    return (void *)(intptr_t)bad;
}

static void test_cache(void)
{
    cl_devcache_t *c = cl_devcache_new(fake_query, NULL);
    CL_CHECK(c != NULL);
    CL_CHECK(cl_devcache_new(NULL, NULL) == NULL);
    cl_devattr_t a;
    cl_devcache_stats_t st;

    /* NULL and empty buffers: host, no query. */
    CL_CHECK(cl_devcache_kind(c, NULL, 100, &a) == CL_DEVQ_HOST);
    CL_CHECK(s_fake.queries == 0);

    /* Host memory: asked once, then answered from the cache, also for a
       buffer inside the same pages. */
    static char host[3 * 4096];
    s_fake.answer = CL_DEVQ_HOST;
    CL_CHECK(cl_devcache_kind(c, host, sizeof host, &a) == CL_DEVQ_HOST);
    CL_CHECK(s_fake.queries == 1);
    CL_CHECK(cl_devcache_kind(c, host, sizeof host, &a) == CL_DEVQ_HOST);
    CL_CHECK(cl_devcache_kind(c, host, 10, &a) == CL_DEVQ_HOST);
    CL_CHECK(s_fake.queries == 1);
    cl_devcache_stats(c, &st);
    CL_CHECK(st.queries == 1);

    /* A failing driver: an error, never taken for host, never cached. */
    char *other = (char *)0x7d0000000000ull; /* never dereferenced */
    s_fake.answer = CL_DEVQ_ERR;
    CL_CHECK(cl_devcache_kind(c, other, 64, &a) == CL_DEVQ_ERR);
    CL_CHECK(cl_devcache_kind(c, other, 64, &a) == CL_DEVQ_ERR);
    CL_CHECK(s_fake.queries == 3);

    /* No CUDA context: host memory, but asked again each time (the
       program may initialise CUDA, and the driver reuse these addresses). */
    s_fake.answer = CL_DEVQ_NOCTX;
    CL_CHECK(cl_devcache_kind(c, other, 64, &a) == CL_DEVQ_HOST);
    CL_CHECK(cl_devcache_kind(c, other, 64, &a) == CL_DEVQ_HOST);
    CL_CHECK(s_fake.queries == 5);
    s_fake.answer = CL_DEVQ_HOST;
    CL_CHECK(cl_devcache_kind(c, other, 64, &a) == CL_DEVQ_HOST);
    CL_CHECK(cl_devcache_kind(c, other, 64, &a) == CL_DEVQ_HOST);
    CL_CHECK(s_fake.queries == 6);

    /* Device memory: the allocation's attributes; a repeat is revalidated
       by asking for the buffer id again. */
    s_fake.answer = CL_DEVQ_ERR;
    const uintptr_t D = (uintptr_t)0x7f0000000000ull;
    fake_alloc(0, D, 1 << 20, 41);
    CL_CHECK(cl_devcache_kind(c, (void *)(D + 4096), 1000, &a) == CL_DEVQ_DEVICE);
    CL_CHECK(a.start == D && a.size == 1 << 20 && a.buffer_id == 41);
    int q = s_fake.queries;
    CL_CHECK(cl_devcache_kind(c, (void *)D, 1 << 20, &a) == CL_DEVQ_DEVICE);
    CL_CHECK(s_fake.queries == q + 1);
    cl_devcache_stats(c, &st);
    CL_CHECK(st.device_hits == 1);

    /* Freed and reallocated at the same address (new buffer id, smaller):
       the stale entry is caught and the new allocation reported. */
    fake_alloc(0, D, 1 << 16, 42);
    CL_CHECK(cl_devcache_kind(c, (void *)D, 100, &a) == CL_DEVQ_DEVICE);
    CL_CHECK(a.buffer_id == 42 && a.size == 1 << 16);
    /* A buffer running past its allocation is an error. */
    CL_CHECK(cl_devcache_kind(c, (void *)D, (1 << 16) + 1, &a) == CL_DEVQ_ERR);

    /* Freed, the range now unmapped: the driver says "not device" and the
       revalidation drops the entry instead of trusting it. */
    fake_alloc(0, 0, 0, 0);
    s_fake.answer = CL_DEVQ_HOST;
    CL_CHECK(cl_devcache_kind(c, (void *)D, 100, &a) == CL_DEVQ_HOST);

    /* Managed memory reported as device stays device. */
    fake_alloc(1, D + (8u << 20), 1 << 20, 77);
    s_fake.dev[1].managed = 1;
    CL_CHECK(cl_devcache_kind(c, (void *)(D + (8u << 20)), 8, &a) == CL_DEVQ_DEVICE);
    CL_CHECK(a.managed == 1);

    /* A device allocation found over pages once cached as host clears
       them: the host verdict is not trusted afterwards. */
    const uintptr_t H = (uintptr_t)0x7e0000000000ull;
    s_fake.answer = CL_DEVQ_HOST;
    CL_CHECK(cl_devcache_kind(c, (void *)H, 64, &a) == CL_DEVQ_HOST);
    fake_alloc(2, H - 4096 * 4, 1 << 20, 99);
    CL_CHECK(cl_devcache_kind(c, (void *)(H + 65536), 64, &a) == CL_DEVQ_DEVICE);
    CL_CHECK(cl_devcache_kind(c, (void *)H, 64, &a) == CL_DEVQ_DEVICE);
    CL_CHECK(a.buffer_id == 99);

    /* Clearing forgets everything: the next look asks again. */
    cl_devcache_clear(c);
    q = s_fake.queries;
    CL_CHECK(cl_devcache_kind(c, host, 10, &a) == CL_DEVQ_HOST);
    CL_CHECK(s_fake.queries == q + 1);

    /* Wrapping ranges are refused. */
    CL_CHECK(cl_devcache_kind(c, (void *)(UINTPTR_MAX - 10), 100, &a) == CL_DEVQ_ERR);

    /* Readers on several threads while the fast path is hot. */
    memset(&s_fake.dev, 0, sizeof s_fake.dev);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, s_reader, c);
    int bad = 0;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(th[i], &r);
        bad += (int)(intptr_t)r;
    }
    CL_CHECK(bad == 0);
    cl_devcache_destroy(&c);
    CL_CHECK(c == NULL);
    cl_devcache_destroy(&c);
}

/* cl_device_init in a child process (it runs once per process). */
static int child_init(int mode)
{
    pid_t pid = fork();
    if (pid == 0) {
        int rc = cl_device_init(mode);
        cl_devattr_t a;
        static char buf[16];
        int host = cl_device_kind(buf, sizeof buf, &a) == CL_DEVQ_HOST;
        _exit(rc == COLLAB_OK ? (host && !cl_device_active() && !collab_device_support() ? 0 : 2)
                              : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
}

static void test_no_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h != NULL) {
        printf("cl_devcache_test: an NVIDIA driver is installed; the no-driver checks are "
               "skipped\n");
        dlclose(h);
        return;
    }
    /* Before init, and with COLLAB_CUDA=0 or auto: every pointer is host
       memory and device support is off. */
    CL_CHECK(!cl_device_active());
    CL_CHECK(child_init(CL_DEVICE_OFF) == 0);
    CL_CHECK(child_init(CL_DEVICE_AUTO) == 0);
    /* COLLAB_CUDA=1 without a driver: an error. */
    CL_CHECK(child_init(CL_DEVICE_ON) == 1);
}

int main(void)
{
    test_cache();
    test_no_driver();
    return cl_selftest_end("cl_devcache_test");
}
