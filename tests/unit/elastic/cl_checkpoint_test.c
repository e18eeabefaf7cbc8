/*  cl_checkpoint_test.c - selftest of the checkpoint files.

    A checkpoint written and read back is identical (step, sequence,
    start-up signatures, every item bitwise); the write is atomic (no
    temporary file is left); a file with one flipped data byte, a flipped
    table byte, a cut-off tail, an appended byte, a forged item count or
    size, another version or another magic is refused with a message
    saying why, and cl_checkpoint_latest then falls back to the newest
    file that verifies; pruning keeps the newest CL_CKPT_KEEP.
*/
#include "elastic/cl_checkpoint.h"
#include "util/cl_selftest.h"

#include "el_testlog.h"

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static void make(cl_ckpt_t *c, uint64_t step, uint8_t *bufa, uint8_t *bufb, uint32_t *sigs)
{
    memset(c, 0, sizeof *c);
    static cl_ckpt_item_t items[3];
    for (size_t i = 0; i < 3000; i++)
        bufa[i] = (uint8_t)(i * 7 + step);
    memcpy(bufb, &step, sizeof step);
    items[0] = (cl_ckpt_item_t){.what = CL_CKPT_BUFFER, .index = 0, .size = 3000, .data = bufa};
    items[1] = (cl_ckpt_item_t){.what = CL_CKPT_BUFFER, .index = 2, .size = 8, .data = bufb};
    items[2] = (cl_ckpt_item_t){.what = CL_CKPT_RESULT, .index = 1, .size = 0, .signature = 77};
    for (int i = 0; i < 3; i++)
        cl_checkpoint_item_hash(items[i].data, items[i].size, items[i].hash);
    sigs[0] = 11;
    sigs[1] = 22;
    sigs[2] = 33;
    snprintf(c->run_id, sizeof c->run_id, "run-a");
    c->step = step;
    c->seq = 3 + 4 * step;
    c->prefix = 3;
    c->sigs = sigs;
    c->items = items;
    c->nitems = 3;
}

static void path_of(char *p, size_t cap, uint64_t step)
{
    snprintf(p, cap, "%s/checkpoint-%012llu.ckpt", dir, (unsigned long long)step);
}

static long file_size(const char *p)
{
    FILE *f = fopen(p, "rb");
    if (f == NULL)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

static void poke(const char *p, long at, uint8_t x)
{
    FILE *f = fopen(p, "r+b");
    CL_CHECK(f != NULL);
    if (f == NULL)
        return;
    fseek(f, at, SEEK_SET);
    int c = fgetc(f);
    fseek(f, at, SEEK_SET);
    fputc((c ^ x) & 0xff, f);
    fclose(f);
}

static void copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    CL_CHECK(a != NULL && b != NULL);
    int c;
    while (a != NULL && b != NULL && (c = fgetc(a)) != EOF)
        fputc(c, b);
    if (a != NULL)
        fclose(a);
    if (b != NULL)
        fclose(b);
}

static void test_roundtrip(void)
{
    uint8_t a[3000], b[8];
    uint32_t sigs[3];
    cl_ckpt_t c, r;
    make(&c, 12, a, b, sigs);
    char path[256], err[CL_CKPT_ERR_MAX], want[256];
    CL_CHECK(cl_checkpoint_write(dir, &c, path, sizeof path, err) == 0);
    path_of(want, sizeof want, 12);
    CL_CHECK_STREQ(path, want);
    CL_CHECK(cl_checkpoint_read(path, &r, err) == 0);
    CL_CHECK(r.step == 12 && r.seq == 51 && r.prefix == 3 && r.nitems == 3);
    CL_CHECK_STREQ(r.run_id, "run-a");
    CL_CHECK(r.sigs != NULL && r.sigs[0] == 11 && r.sigs[2] == 33);
    CL_CHECK(r.items != NULL && r.items[0].size == 3000 && memcmp(r.items[0].data, a, 3000) == 0);
    CL_CHECK(r.items != NULL && r.items[1].size == 8 && memcmp(r.items[1].data, b, 8) == 0);
    CL_CHECK(r.items != NULL && r.items[2].what == CL_CKPT_RESULT && r.items[2].signature == 77 &&
             r.items[2].data == NULL);
    cl_checkpoint_clear(&r);
    /* Atomic: nothing but the checkpoint is in the directory. */
    DIR *d = opendir(dir);
    int files = 0;
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL)
        files += de->d_name[0] != '.' || strstr(de->d_name, ".tmp") != NULL;
    if (d != NULL)
        closedir(d);
    CL_CHECK(files == 1);
}

/* Corrupts a copy of checkpoint 12 as step 20 and expects a refusal. */
static void expect_refused(const char *what, long at, uint8_t x, long cut, const char *reason)
{
    char good[256], bad[256], err[CL_CKPT_ERR_MAX];
    path_of(good, sizeof good, 12);
    path_of(bad, sizeof bad, 20);
    copy_file(good, bad);
    if (at >= 0)
        poke(bad, at, x);
    if (cut > 0)
        CL_CHECK(truncate(bad, file_size(bad) - cut) == 0);
    if (cut < 0) {
        FILE *f = fopen(bad, "ab");
        fputc(0, f);
        fclose(f);
    }
    cl_ckpt_t r;
    memset(&r, 0xff, sizeof r);
    int rc = cl_checkpoint_read(bad, &r, err);
    if (rc == 0)
        fprintf(stderr, "%s: accepted\n", what);
    CL_CHECK(rc == -1);
    CL_CHECK(r.items == NULL && r.sigs == NULL && r.nitems == 0);
    CL_CHECK_CONTAINS(err, "is refused");
    CL_CHECK_CONTAINS(err, reason);
    /* The newest file is corrupt: the latest that verifies is 12. */
    el_log_start(CL_LOG_WARN);
    char got[256];
    CL_CHECK(cl_checkpoint_latest(dir, &r, got, sizeof got, err) == 0);
    CL_CHECK(r.step == 12);
    cl_checkpoint_clear(&r);
    char *log = el_log_take();
    CL_CHECK_CONTAINS(log, "checkpoint-000000000020.ckpt is refused");
    free(log);
    unlink(bad);
}

static void test_corrupt(void)
{
    /* Header 44, run id "run-a" (5), 3 signatures (12), 3 rows of 56:
       data starts at 229. */
    expect_refused("data byte", 229 + 1500, 0x01, 0, "hash does not match");
    expect_refused("table byte", 49 + 12 + 56 + 30, 0x80, 0, "hash does not match");
    expect_refused("signature", 49, 0x01, 0, "hash does not match");
    expect_refused("run id", 45, 0x01, 0, "hash does not match");
    expect_refused("run id length", 41, 0x01, 0, "run id");
    expect_refused("cut tail", -1, 0, 5, "cut short");
    expect_refused("appended", -1, 0, -1, "longer than");
    expect_refused("magic", 0, 0x20, 0, "not a checkpoint");
    expect_refused("version", 8, 0x02, 0, "format version");
    expect_refused("item count", 13, 0x40, 0, "more items");
    expect_refused("item size", 49 + 12 + 16 + 5, 0x10, 0, "larger than the file");
    expect_refused("item size small", 49 + 12 + 16, 0x01, 0, "");
    expect_refused("data cut off", -1, 0, 3000, "larger than the file");
}

static void test_prune(void)
{
    uint8_t a[3000], b[8];
    uint32_t sigs[3];
    char err[CL_CKPT_ERR_MAX], p[256];
    for (uint64_t s = 30; s < 36; s++) {
        cl_ckpt_t c;
        make(&c, s, a, b, sigs);
        CL_CHECK(cl_checkpoint_write(dir, &c, NULL, 0, err) == 0);
    }
    /* 12 and 30..35: the three newest stay. */
    CL_CHECK(cl_checkpoint_prune(dir, CL_CKPT_KEEP) == 4);
    path_of(p, sizeof p, 35);
    CL_CHECK(access(p, F_OK) == 0);
    path_of(p, sizeof p, 33);
    CL_CHECK(access(p, F_OK) == 0);
    path_of(p, sizeof p, 32);
    CL_CHECK(access(p, F_OK) != 0);
    path_of(p, sizeof p, 12);
    CL_CHECK(access(p, F_OK) != 0);
    cl_ckpt_t r;
    CL_CHECK(cl_checkpoint_latest(dir, &r, NULL, 0, err) == 0 && r.step == 35);
    CL_CHECK(r.items != NULL && memcmp(r.items[1].data, &(uint64_t){35}, 8) == 0);
    cl_checkpoint_clear(&r);
    CL_CHECK(cl_checkpoint_latest("/nonexistent/dir", &r, NULL, 0, err) == -1);
    CL_CHECK_CONTAINS(err, "cannot read the directory");
    CL_CHECK(cl_checkpoint_read("/nonexistent/x.ckpt", &r, err) == -1);
    CL_CHECK_CONTAINS(err, "cannot open");
    for (uint64_t s = 33; s < 36; s++) {
        path_of(p, sizeof p, s);
        unlink(p);
    }
    CL_CHECK(cl_checkpoint_latest(dir, &r, NULL, 0, err) == 1);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/cl_checkpoint_test.XXXXXX");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    test_roundtrip();
    test_corrupt();
    test_prune();
    rmdir(dir);
    el_log_cleanup();
    return cl_selftest_end("cl_checkpoint_test");
}
