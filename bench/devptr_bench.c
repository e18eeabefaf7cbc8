/*  devptr_bench.c - what the device check costs a host buffer
    (docs/cuda.md; issue bound: under 50 ns).

      devptr_bench [--cuda | --cuda-noctx] [--runs 5] [--calls 10000000]

    Times cl_device_kind on host buffers (16 buffers of 4 KiB to 64 MiB,
    in turn), in runs interleaved with a baseline loop that does the same
    work without the check, and prints per configuration the median and
    spread (min..max) of ns per call over the runs:
      - "no device support": the plugin is not loaded (no driver, or
        COLLAB_CUDA=0), as on every machine without a GPU;
      - "cache, fake driver": the pointer cache in front of a driver stub
        that answers "host"; after the first query of each buffer every
        call is the cache's lock-free hit;
      - with --cuda (a GPU machine): the real plugin, after the bench has
        created a CUDA context itself (cuInit and the primary context of
        device 0, as a trainer's framework does), so the plugin's answer
        is the driver's.  libmpicollab-cuda.so must be on LD_LIBRARY_PATH;
      - with --cuda-noctx (a GPU machine): the real plugin in a program
        that never initialises CUDA (each call is one driver call that
        returns at once, not cached).
    The bench, not the library, calls cuInit: it plays the program.
    Times are this thread's CPU time, so that other processes on a busy
    machine do not count.
*/
#define _GNU_SOURCE
#include "mpi_collab.h"
#include "util/cl_devcache.h"
#include "util/cl_device.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBUF 16
static void *s_buf[NBUF];
static size_t s_len[NBUF];
static volatile int s_sink;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ns per call of the device check over `calls` calls (or of the same loop
   without it, when check == 0). */
static double run(long calls, int check)
{
    cl_devattr_t a;
    int acc = 0;
    double t0 = now();
    for (long i = 0; i < calls; i++) {
        int b = (int)(i & (NBUF - 1));
        if (check)
            acc += cl_device_kind(s_buf[b], s_len[b], &a);
        else
            acc += ((uintptr_t)s_buf[b] & 1) != 0;
        __asm__ volatile("" ::: "memory"); /* keep the loop a loop */
    }
    double t = now() - t0;
    s_sink = acc;
    return t / (double)calls * 1e9;
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Prints "name: median (min..max) ns per call, baseline ...". */
static void measure(const char *name, int runs, long calls)
{
    double c[32], b[32];
    (void)run(calls / 10, 1); /* warm the cache */
    for (int r = 0; r < runs; r++) {
        b[r] = run(calls, 0);
        c[r] = run(calls, 1);
    }
    double d[32];
    for (int r = 0; r < runs; r++)
        d[r] = c[r] - b[r];
    qsort(c, (size_t)runs, sizeof *c, cmp);
    qsort(b, (size_t)runs, sizeof *b, cmp);
    qsort(d, (size_t)runs, sizeof *d, cmp);
    printf("%-34s %7.2f ns/call (%.2f..%.2f), loop alone %.2f ns, check adds %.2f ns "
           "(%.2f..%.2f); bound 50 ns: %s\n",
           name, c[runs / 2], c[0], c[runs - 1], b[runs / 2], d[runs / 2], d[0], d[runs - 1],
           c[runs / 2] < 50.0 ? "met" : "NOT met");
}

static int fake_host(const void *p, cl_devattr_t *out)
{
    (void)p;
    (void)out;
    return CL_DEVQ_HOST;
}
static const char *fake_text(void)
{
    return "fake";
}
static void *fake_alloc(size_t n)
{
    return malloc(n);
}
static const cl_devops_t s_fake = {.abi = CL_DEVOPS_ABI,
                                   .size = sizeof(cl_devops_t),
                                   .describe = fake_text,
                                   .query = fake_host,
                                   .host_alloc = fake_alloc,
                                   .host_free = free,
                                   .last_error = fake_text};

/* Creates a CUDA context as a program would (driver API through dlsym, so
   the bench builds without CUDA headers).  Returns 0 or -1. */
static int make_context(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL) {
        fprintf(stderr, "devptr_bench: --cuda: %s\n", dlerror());
        return -1;
    }
    int (*cu_init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
    int (*dev_get)(int *, int) = (int (*)(int *, int))dlsym(h, "cuDeviceGet");
    int (*retain)(void **, int) = (int (*)(void **, int))dlsym(h, "cuDevicePrimaryCtxRetain");
    int (*set)(void *) = (int (*)(void *))dlsym(h, "cuCtxSetCurrent");
    int dev = 0;
    void *ctx = NULL;
    if (cu_init == NULL || dev_get == NULL || retain == NULL || set == NULL || cu_init(0) != 0 ||
        dev_get(&dev, 0) != 0 || retain(&ctx, dev) != 0 || set(ctx) != 0) {
        fprintf(stderr, "devptr_bench: --cuda: cannot create a CUDA context on device 0\n");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int runs = 5, cuda = 0;
    long calls = 10000000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cuda") == 0)
            cuda = 1;
        else if (strcmp(argv[i], "--cuda-noctx") == 0)
            cuda = 2;
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
            calls = atol(argv[++i]);
        else {
            fprintf(stderr, "usage: devptr_bench [--cuda | --cuda-noctx] [--runs N] [--calls N]\n");
            return 2;
        }
    }
    if (runs < 1 || runs > 31 || calls < 1000) {
        fprintf(stderr, "devptr_bench: --runs 1..31, --calls at least 1000\n");
        return 2;
    }
    for (int b = 0; b < NBUF; b++) {
        s_len[b] = (size_t)4096 << b % 15;
        s_buf[b] = malloc(s_len[b]);
        if (s_buf[b] == NULL)
            return 1;
        memset(s_buf[b], 1, s_len[b]);
    }
    if (cuda == 2) {
        if (cl_device_init(CL_DEVICE_ON) != COLLAB_OK)
            return 1;
        measure("CUDA plugin, CUDA not initialised", runs, calls / 10);
        return 0;
    }
    if (cuda) {
        if (make_context() != 0 || cl_device_init(CL_DEVICE_ON) != COLLAB_OK)
            return 1;
        measure("CUDA plugin, context current", runs, calls);
        return 0;
    }
    measure("no device support", runs, calls);
    cl_device_use_ops(&s_fake);
    measure("cache, fake driver", runs, calls);
    return 0;
}
