/*  cl_statereg_test.c - selftest of the state registry and the stripe
    planner.

    Registers real buffers and checks: bookkeeping (duplicates, bad
    ranges, capacity, iteration while dropping, trimming), reads of the
    current contents, hashes against an independent computation (across
    chunk boundaries), writes, and - on both the process_vm_* path and the
    pipe path - that unmapped, shortened, read-only and inaccessible
    buffers give COLLAB_ERR_ARG instead of a crash.  The stripe planner is
    checked for coverage, sizes, alignment and donor spreading over many
    inputs.  Followed copies: reads, hashes and writes take the bytes at
    their destinations once the buffer's memory is reused, gaps at the
    buffer, the latest buffer at an address, copies across two buffers.
*/
#define _GNU_SOURCE
#include "elastic/cl_statereg.h"
#include "mpi_collab.h"
#include "util/cl_selftest.h"

#include "el_testlog.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sodium.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static size_t s_page;

/* The documented hash, computed independently of the registry. */
static void expected_hash(const void *buf, size_t bytes, uint8_t out[32])
{
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)((uint64_t)bytes >> (8 * i));
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, 32);
    crypto_generichash_update(&st, le, 8);
    crypto_generichash_update(&st, buf, bytes);
    crypto_generichash_final(&st, out, 32);
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)((i * 131u + seed * 7u) ^ (i >> 9));
}

static void test_bookkeeping(void)
{
    cl_statereg_t *r = cl_statereg_new();
    CL_CHECK(r != NULL);
    static char a[100], b[200], c[300];
    CL_CHECK(cl_statereg_add(r, 7, b, sizeof b) == 0);
    CL_CHECK(cl_statereg_add(r, 3, a, sizeof a) == 0);
    CL_CHECK(cl_statereg_add(r, 12, c, sizeof c) == 0);
    CL_CHECK(cl_statereg_add(r, 9, NULL, 0) == 0);              /* an empty broadcast */
    CL_CHECK(cl_statereg_add(r, 7, c, 1) == COLLAB_ERR_ARG);    /* duplicate */
    CL_CHECK(cl_statereg_add(r, 8, NULL, 4) == COLLAB_ERR_ARG); /* no buffer */
    CL_CHECK(cl_statereg_add(r, 8, (void *)(UINTPTR_MAX - 3), 8) == COLLAB_ERR_ARG); /* wraps */
    CL_CHECK(cl_statereg_add(NULL, 8, a, 1) == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_count(r) == 4);
    CL_CHECK(cl_statereg_total(r) == 600);
    cl_statereg_entry_t e;
    CL_CHECK(cl_statereg_find(r, 7, &e) == 0 && e.addr == b && e.bytes == 200 && e.index == 7);
    CL_CHECK(cl_statereg_find(r, 8, &e) == COLLAB_ERR_ARG);
    /* Ascending iteration, dropping as we go. */
    el_log_start(CL_LOG_WARN);
    uint64_t seen[8];
    int ns = 0;
    for (bool ok = cl_statereg_first(r, &e); ok; ok = cl_statereg_next(r, e.index, &e)) {
        seen[ns++] = e.index;
        if (e.index == 7)
            CL_CHECK(cl_statereg_drop(r, 7, "its contents differ between peers") == 0);
    }
    CL_CHECK(ns == 4 && seen[0] == 3 && seen[1] == 7 && seen[2] == 9 && seen[3] == 12);
    CL_CHECK(cl_statereg_drop(r, 7, "again") == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_drop(r, 3, NULL) == 0);
    char *log = el_log_take();
    CL_CHECK(el_count(log, "warning: start-up broadcast #7 (200 bytes at ") == 1);
    CL_CHECK_CONTAINS(log, "is no longer served to joiners: its contents differ between peers; a "
                           "joiner keeps its own value for it");
    CL_CHECK_CONTAINS(log, "#3 (100 bytes at ");
    CL_CHECK_CONTAINS(log, "joiners: dropped;");
    free(log);
    CL_CHECK(cl_statereg_count(r) == 2 && cl_statereg_total(r) == 300);
    CL_CHECK(cl_statereg_next(r, UINT64_MAX, &e) == false);
    CL_CHECK(cl_statereg_next(r, 12, &e) == false);

    /* Trim: broadcasts after the start-up prefix are not state. */
    CL_CHECK(cl_statereg_add(r, 20, a, 10) == 0);
    CL_CHECK(cl_statereg_add(r, 21, a, 10) == 0);
    CL_CHECK(cl_statereg_trim(r, 12) == 3);
    CL_CHECK(cl_statereg_count(r) == 1 && cl_statereg_total(r) == 0);
    CL_CHECK(cl_statereg_find(r, 9, &e) == 0);
    CL_CHECK(cl_statereg_trim(r, 100) == 0);
    cl_statereg_destroy(&r);
    CL_CHECK(r == NULL);
    cl_statereg_destroy(&r);
    cl_statereg_destroy(NULL);
    CL_CHECK(cl_statereg_count(NULL) == 0 && !cl_statereg_first(NULL, &e));

    /* Capacity: the registry is bounded and says so once. */
    r = cl_statereg_new();
    el_log_start(CL_LOG_WARN);
    int fails = 0;
    for (uint64_t i = 0; i < CL_STATEREG_MAX + 10; i++)
        fails += cl_statereg_add(r, i, a, 1) != 0;
    CL_CHECK(fails == 10 && cl_statereg_count(r) == CL_STATEREG_MAX);
    log = el_log_take();
    CL_CHECK(el_count(log, "more than 4096 start-up broadcasts; #4096 and later") == 1);
    free(log);
    cl_statereg_destroy(&r);
}

/* Reads, hashes and writes of live buffers, and every kind of bad memory,
   through the path chosen by use_pipe. */
static void test_access(bool use_pipe)
{
    cl_statereg_t *r = cl_statereg_new();
    if (use_pipe)
        cl_statereg_use_pipe(r);

    /* A heap buffer larger than a hash chunk and a pipe round. */
    size_t big = 3 * CL_STATEREG_CHUNK + 12345;
    uint8_t *buf = malloc(big), *copy = malloc(big);
    fill(buf, big, 1);
    CL_CHECK(cl_statereg_add(r, 1, buf, big) == 0);
    memset(copy, 0, big);
    CL_CHECK(cl_statereg_read(r, 1, 0, big, copy) == 0 && memcmp(copy, buf, big) == 0);
    uint8_t h[32], want[32];
    CL_CHECK(cl_statereg_hash(r, 1, h) == 0);
    expected_hash(buf, big, want);
    CL_CHECK(memcmp(h, want, 32) == 0);
    /* The current contents count, not those at registration. */
    buf[big - 1] ^= 0x5a;
    uint8_t h2[32];
    CL_CHECK(cl_statereg_hash(r, 1, h2) == 0 && memcmp(h2, h, 32) != 0);
    CL_CHECK(cl_statereg_read(r, 1, big - 1, 1, copy) == 0 && copy[0] == buf[big - 1]);
    buf[big - 1] ^= 0x5a;
    CL_CHECK(cl_statereg_hash(r, 1, h2) == 0 && memcmp(h2, h, 32) == 0);
    /* Ranges. */
    CL_CHECK(cl_statereg_read(r, 1, 100, 50, copy) == 0 && memcmp(copy, buf + 100, 50) == 0);
    CL_CHECK(cl_statereg_read(r, 1, big, 0, copy) == 0);
    CL_CHECK(cl_statereg_read(r, 1, big - 10, 11, copy) == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_read(r, 1, big + 1, 0, copy) == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_read(r, 1, SIZE_MAX, 2, copy) == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_read(r, 2, 0, 1, copy) == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_read(r, 1, 0, 1, NULL) == COLLAB_ERR_ARG);
    /* Writes (resync). */
    fill(copy, big, 9);
    CL_CHECK(cl_statereg_write(r, 1, 7, copy, big - 7) == 0);
    CL_CHECK(memcmp(buf + 7, copy, big - 7) == 0);
    CL_CHECK(cl_statereg_write(r, 1, 1, copy, big) == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_write(r, 1, 0, NULL, 1) == COLLAB_ERR_ARG);
    /* Equal contents hash equally; the size is part of the hash. */
    uint8_t *twin = malloc(big);
    memcpy(twin, buf, big);
    CL_CHECK(cl_statereg_add(r, 2, twin, big) == 0);
    CL_CHECK(cl_statereg_add(r, 3, twin, big - 1) == 0);
    uint8_t ha[32], hb[32], hc[32];
    CL_CHECK(cl_statereg_hash(r, 1, ha) == 0 && cl_statereg_hash(r, 2, hb) == 0);
    CL_CHECK(cl_statereg_hash(r, 3, hc) == 0);
    CL_CHECK(memcmp(ha, hb, 32) == 0 && memcmp(ha, hc, 32) != 0);
    CL_CHECK(cl_statereg_hash(r, 4, ha) == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_add(r, 4, NULL, 0) == 0);
    CL_CHECK(cl_statereg_hash(r, 4, ha) == 0);
    expected_hash("", 0, want);
    CL_CHECK(memcmp(ha, want, 32) == 0);

    /* A buffer the program unmapped. */
    size_t len = 3 * s_page;
    uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CL_CHECK(m != MAP_FAILED);
    fill(m, len, 3);
    CL_CHECK(cl_statereg_add(r, 10, m, len) == 0);
    CL_CHECK(cl_statereg_hash(r, 10, ha) == 0);
    CL_CHECK(munmap(m, len) == 0);
    CL_CHECK(cl_statereg_read(r, 10, 0, len, copy) == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_read(r, 10, 5, 1, copy) == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_hash(r, 10, ha) == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_write(r, 10, 0, copy, 16) == COLLAB_ERR_ARG);

    /* A buffer the program shortened: its last page is gone. */
    m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    fill(m, len, 4);
    CL_CHECK(cl_statereg_add(r, 11, m, len) == 0);
    CL_CHECK(munmap(m + 2 * s_page, s_page) == 0);
    CL_CHECK(cl_statereg_read(r, 11, 0, 2 * s_page, copy) == 0);
    CL_CHECK(memcmp(copy, m, 2 * s_page) == 0);
    CL_CHECK(cl_statereg_read(r, 11, 0, len, copy) == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_read(r, 11, 2 * s_page - 8, 16, copy) == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_hash(r, 11, ha) == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_write(r, 11, 2 * s_page - 8, copy, 16) == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_write(r, 11, 0, copy, 8) == 0 && memcmp(m, copy, 8) == 0);

    /* Read-only memory: readable, never written. */
    fill(m, 2 * s_page, 5);
    memcpy(twin, m, 2 * s_page);
    CL_CHECK(mprotect(m, 2 * s_page, PROT_READ) == 0);
    CL_CHECK(cl_statereg_add(r, 12, m, 2 * s_page) == 0);
    CL_CHECK(cl_statereg_read(r, 12, 0, 2 * s_page, copy) == 0);
    fill(copy, 2 * s_page, 6);
    CL_CHECK(cl_statereg_write(r, 12, 0, copy, 2 * s_page) == COLLAB_ERR_ARG);
    CL_CHECK(memcmp(m, twin, 2 * s_page) == 0);
    /* No access at all. */
    CL_CHECK(mprotect(m, 2 * s_page, PROT_NONE) == 0);
    CL_CHECK(cl_statereg_read(r, 12, 0, 1, copy) == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_hash(r, 12, ha) == COLLAB_ERR_ARG);
    /* After all those failures the next transfers are clean. */
    CL_CHECK(cl_statereg_read(r, 1, 0, big, copy) == 0 && memcmp(copy, buf, big) == 0);
    CL_CHECK(cl_statereg_write(r, 2, 0, buf, big) == 0 && memcmp(twin, buf, big) == 0);
    CL_CHECK(munmap(m, 2 * s_page) == 0);
    /* A wild address never mapped. */
    CL_CHECK(cl_statereg_add(r, 13, (void *)(uintptr_t)0x10, 64) == 0);
    CL_CHECK(cl_statereg_read(r, 13, 0, 64, copy) == COLLAB_ERR_ARG);

    cl_statereg_destroy(&r);
    free(twin);
    free(copy);
    free(buf);
}

/* In a child whose seccomp filter refuses process_vm_readv/writev with
   ENOSYS, the registry finds out by itself and uses the pipe. */
static void test_refused_syscalls(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        struct sock_filter f[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 2, 0),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_writev, 1, 0),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        };
        struct sock_fprog prog = {.len = sizeof f / sizeof *f, .filter = f};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
            _exit(77); /* filters unavailable here */
        char probe;
        struct iovec l = {&probe, 1}, r = {&probe, 1};
        if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != -1 || errno != ENOSYS)
            _exit(10);
        cl_statereg_t *reg = cl_statereg_new();
        uint8_t buf[100000], copy[100000], h[32], want[32];
        fill(buf, sizeof buf, 8);
        int bad = cl_statereg_add(reg, 0, buf, sizeof buf) != 0;
        bad += cl_statereg_read(reg, 0, 0, sizeof buf, copy) != 0;
        bad += memcmp(copy, buf, sizeof buf) != 0;
        bad += cl_statereg_hash(reg, 0, h) != 0;
        expected_hash(buf, sizeof buf, want);
        bad += memcmp(h, want, 32) != 0;
        fill(copy, sizeof copy, 2);
        bad += cl_statereg_write(reg, 0, 0, copy, sizeof copy) != 0;
        bad += memcmp(copy, buf, sizeof buf) != 0;
        bad += cl_statereg_add(reg, 1, (void *)(uintptr_t)0x20, 8) != 0;
        bad += cl_statereg_read(reg, 1, 0, 8, copy) != COLLAB_ERR_ARG;
        cl_statereg_destroy(&reg);
        _exit(bad == 0 ? 0 : 11);
    }
    int status = 0;
    CL_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CL_CHECK(WIFEXITED(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
        printf("cl_statereg_test: seccomp filters unavailable; refused-syscall case skipped\n");
    else
        CL_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_stripes(void)
{
    cl_stripe_t s[CL_STRIPE_MAX];
    CL_CHECK(cl_stripe_plan(100, 0, 1, 0, s) == COLLAB_ERR_ARG);
    CL_CHECK(cl_stripe_plan(100, 2, 0, 0, s) == COLLAB_ERR_ARG);
    CL_CHECK(cl_stripe_plan(100, 2, 1, 0, NULL) == COLLAB_ERR_ARG);
    CL_CHECK(cl_stripe_plan(0, 3, 1, 0, s) == 0);

    /* 1 MiB over 8 donors with 64 KiB stripes: four equal stripes. */
    CL_CHECK(cl_stripe_plan(1 << 20, 8, 1 << 16, 6, s) == 4);
    for (int k = 0; k < 4; k++) {
        CL_CHECK(s[k].offset == (uint64_t)k << 18 && s[k].len == (uint64_t)1 << 18);
        CL_CHECK(s[k].donor == (6 + k) % 8);
    }
    /* A small buffer is one stripe. */
    CL_CHECK(cl_stripe_plan(1000, 4, 4096, 2, s) == 1);
    CL_CHECK(s[0].offset == 0 && s[0].len == 1000 && s[0].donor == 2);
    /* Two donors only. */
    CL_CHECK(cl_stripe_plan(1000000, 2, 1000, 1, s) == 2);
    CL_CHECK(s[0].donor == 1 && s[1].donor == 0);
    /* Minimum stripe allows only 3 of 4. */
    CL_CHECK(cl_stripe_plan(3 * 4096 + 100, 4, 4096, 0, s) == 3);

    /* Properties over many inputs. */
    int bad = 0;
    uint64_t totals[] = {
        1, 63, 64, 65, 255, 4096, 100000, 1 << 20, (1 << 20) + 17, 123456789, (uint64_t)5 << 32};
    uint64_t mins[] = {1, 64, 100, 4096, 1 << 20, (uint64_t)1 << 40};
    for (size_t ti = 0; ti < sizeof totals / sizeof *totals; ti++) {
        for (size_t mi = 0; mi < sizeof mins / sizeof *mins; mi++) {
            for (int nd = 1; nd <= 9; nd++) {
                for (unsigned rot = 0; rot < 11; rot += 5) {
                    uint64_t total = totals[ti], min = mins[mi];
                    int n = cl_stripe_plan(total, nd, min, rot, s);
                    int cap = nd < CL_STRIPE_MAX ? nd : CL_STRIPE_MAX;
                    if (n < 1 || n > cap) {
                        bad++;
                        continue;
                    }
                    uint64_t pos = 0;
                    int used[16] = {0};
                    for (int k = 0; k < n; k++) {
                        if (s[k].offset != pos || s[k].len == 0)
                            bad++;
                        if (n > 1 && (s[k].len < min || s[k].offset % CL_STRIPE_ALIGN != 0))
                            bad++;
                        if (s[k].donor < 0 || s[k].donor >= nd || used[s[k].donor]++)
                            bad++;
                        pos += s[k].len;
                    }
                    if (pos != total || s[0].donor != (int)(rot % (unsigned)nd))
                        bad++;
                    /* As many stripes as the minimum size allows. */
                    uint64_t fit = total / (uint64_t)cap / CL_STRIPE_ALIGN * CL_STRIPE_ALIGN;
                    if (n < cap && fit >= min && fit > 0)
                        bad++;
                }
            }
        }
    }
    CL_CHECK(bad == 0);
}

/* Followed copies: a broadcast bucket copied into "parameters", then the
   bucket's memory reused for something else. */
static void test_follow(bool use_pipe)
{
    cl_statereg_t *r = cl_statereg_new();
    if (use_pipe)
        cl_statereg_use_pipe(r);
    size_t big = 3 * CL_STATEREG_CHUNK + 777, cut1 = 1000, cut2 = 2 * CL_STATEREG_CHUNK + 5;
    uint8_t *bucket = malloc(big), *want = malloc(big), *copy = malloc(big);
    uint8_t *p1 = malloc(cut1), *p2 = malloc(cut2 - cut1), *p3 = malloc(big - cut2);
    fill(bucket, big, 4);
    memcpy(want, bucket, big);
    CL_CHECK(cl_statereg_add(r, 5, bucket, big) == 0);
    /* The program's copies into its parameters; p2 in two adjacent halves
       (one move after merging), p1 copied twice (the first copy wins). */
    size_t half = (cut2 - cut1) / 2;
    memcpy(p1, bucket, cut1);
    memcpy(p2, bucket + cut1, cut2 - cut1);
    memcpy(p3, bucket + cut2, big - cut2);
    CL_CHECK(cl_statereg_follow(r, bucket, p1, cut1) == (long long)cut1);
    CL_CHECK(cl_statereg_follow(r, bucket + cut1, p2, half) == (long long)half);
    CL_CHECK(cl_statereg_follow(r, bucket + cut1 + half, p2 + half, cut2 - cut1 - half) ==
             (long long)(cut2 - cut1 - half));
    uint8_t elsewhere[64];
    CL_CHECK(cl_statereg_follow(r, bucket + 10, elsewhere, sizeof elsewhere) == 0);
    cl_statereg_entry_t e;
    CL_CHECK(cl_statereg_find(r, 5, &e) == 0 && e.moved == cut2);
    CL_CHECK(cl_statereg_follow(r, bucket + cut2, p3, big - cut2) == (long long)(big - cut2));
    CL_CHECK(cl_statereg_find(r, 5, &e) == 0 && e.moved == big);
    /* The bucket's memory is reused; the parameters are read instead. */
    fill(bucket, big, 77);
    memset(copy, 0, big);
    CL_CHECK(cl_statereg_read(r, 5, 0, big, copy) == 0 && memcmp(copy, want, big) == 0);
    CL_CHECK(cl_statereg_read(r, 5, cut1 - 3, 10, copy) == 0 && memcmp(copy, want + cut1 - 3, 10) == 0);
    uint8_t h[32], hw[32];
    expected_hash(want, big, hw);
    CL_CHECK(cl_statereg_hash(r, 5, h) == 0 && memcmp(h, hw, 32) == 0);
    /* The parameters change (training): the registry sees it. */
    p2[7] ^= 0x11;
    CL_CHECK(cl_statereg_hash(r, 5, h) == 0 && memcmp(h, hw, 32) != 0);
    p2[7] ^= 0x11;
    /* A resync writes the parameters, never the reused bucket. */
    memcpy(copy, bucket, big);
    fill(want, big, 12);
    CL_CHECK(cl_statereg_write(r, 5, 0, want, big) == 0);
    CL_CHECK(memcmp(p1, want, cut1) == 0 && memcmp(p2, want + cut1, cut2 - cut1) == 0 &&
             memcmp(p3, want + cut2, big - cut2) == 0 && memcmp(copy, bucket, big) == 0);

    /* Partly followed: the gaps still come from the buffer itself. */
    uint8_t b2[300], q[100];
    fill(b2, sizeof b2, 3);
    CL_CHECK(cl_statereg_add(r, 6, b2, sizeof b2) == 0);
    memset(q, 0xee, sizeof q);
    CL_CHECK(cl_statereg_follow(r, b2 + 100, q, sizeof q) == 100);
    uint8_t got[300];
    CL_CHECK(cl_statereg_read(r, 6, 0, sizeof got, got) == 0);
    CL_CHECK(memcmp(got, b2, 100) == 0 && got[100] == 0xee && got[199] == 0xee &&
             memcmp(got + 200, b2 + 200, 100) == 0);

    /* The latest buffer at an address takes the copies (memory reused for
       a later broadcast); a copy across two adjacent buffers is cut. */
    uint8_t two[200], dst2[150];
    CL_CHECK(cl_statereg_add(r, 7, two, 100) == 0);
    CL_CHECK(cl_statereg_add(r, 8, two + 100, 100) == 0);
    CL_CHECK(cl_statereg_add(r, 9, two, 50) == 0);
    CL_CHECK(cl_statereg_follow(r, two, dst2, 150) == 150);
    CL_CHECK(cl_statereg_find(r, 9, &e) == 0 && e.moved == 50);
    CL_CHECK(cl_statereg_find(r, 7, &e) == 0 && e.moved == 50);
    CL_CHECK(cl_statereg_find(r, 8, &e) == 0 && e.moved == 50);
    /* Bad arguments. */
    CL_CHECK(cl_statereg_follow(r, NULL, dst2, 1) == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_follow(r, two, NULL, 1) == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_follow(r, (void *)(UINTPTR_MAX - 3), dst2, 8) == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_follow(NULL, two, dst2, 1) == COLLAB_ERR_ARG);
    CL_CHECK(cl_statereg_follow(r, two, dst2, 0) == 0);
    /* Dropping and trimming free the moves (checked under ASan). */
    el_log_start(CL_LOG_WARN);
    CL_CHECK(cl_statereg_drop(r, 6, "test") == 0);
    free(el_log_take());
    CL_CHECK(cl_statereg_trim(r, 8) == 2);
    cl_statereg_destroy(&r);
    free(bucket);
    free(want);
    free(copy);
    free(p1);
    free(p2);
    free(p3);
}

int main(void)
{
    s_page = (size_t)sysconf(_SC_PAGESIZE);
    if (sodium_init() < 0)
        return 2;
    test_bookkeeping();
    test_access(false);
    test_access(true);
    test_refused_syscalls();
    test_follow(false);
    test_follow(true);
    test_stripes();
    el_log_cleanup();
    return cl_selftest_end("cl_statereg_test");
}
