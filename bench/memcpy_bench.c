/*  memcpy_bench.c - this machine's memcpy bandwidth, the bound that
    bench/pair.sh divides bus bandwidth by.

    usage: memcpy_bench [--bytes B] [--runs R]

    Copies a buffer of B bytes (default 64 MiB, far beyond the caches)
    into another, R times (default 9) after one warm-up copy that also
    faults the pages in, and prints the median and the spread of the
    copy rate in MB/s (bytes copied / time; each byte is read once and
    written once):

      memcpy: bytes 67108864 runs 9 median_MBps 9876.5 min_MBps 9000.1 max_MBps 10100.2
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    size_t bytes = (size_t)64 << 20;
    int runs = 9;
    for (int k = 1; k < argc; k++) {
        char *end = NULL;
        if (strcmp(argv[k], "--bytes") == 0 && k + 1 < argc) {
            long long v = strtoll(argv[++k], &end, 10);
            if (*end != '\0' || v < 4096 || v > (1LL << 32)) {
                fprintf(stderr, "memcpy_bench: bad --bytes '%s' (4096 .. 4 GiB)\n", argv[k]);
                return 2;
            }
            bytes = (size_t)v;
        } else if (strcmp(argv[k], "--runs") == 0 && k + 1 < argc) {
            long v = strtol(argv[++k], &end, 10);
            if (*end != '\0' || v < 1 || v > 1000) {
                fprintf(stderr, "memcpy_bench: bad --runs '%s' (1 .. 1000)\n", argv[k]);
                return 2;
            }
            runs = (int)v;
        } else {
            fprintf(stderr, "usage: memcpy_bench [--bytes B] [--runs R]\n");
            return 2;
        }
    }
    char *a = malloc(bytes), *b = malloc(bytes);
    double *rate = malloc((size_t)runs * sizeof *rate);
    if (a == NULL || b == NULL || rate == NULL) {
        fprintf(stderr, "memcpy_bench: out of memory for 2 x %zu bytes\n", bytes);
        return 1;
    }
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    memcpy(b, a, bytes);
    for (int r = 0; r < runs; r++) {
        a[r % bytes] = (char)r; /* the copy cannot be skipped */
        double t0 = now();
        memcpy(b, a, bytes);
        double t = now() - t0;
        rate[r] = (double)bytes / t / 1e6;
        if (b[r % bytes] != (char)r) {
            fprintf(stderr, "memcpy_bench: the copy is wrong\n");
            return 1;
        }
    }
    qsort(rate, (size_t)runs, sizeof *rate, cmp);
    printf("memcpy: bytes %zu runs %d median_MBps %.1f min_MBps %.1f max_MBps %.1f\n", bytes, runs,
           rate[runs / 2], rate[0], rate[runs - 1]);
    free(a);
    free(b);
    free(rate);
    return 0;
}
