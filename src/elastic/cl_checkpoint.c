/*  cl_checkpoint.c - a swarm's registered state on disk (docs/monitor.md §7).

    Layout, little-endian:

      "COLLABCK"  version u32 (1)  nitems u32  step u64  seq u64  prefix u64
      run id length u32 (1 .. 128), the run id's bytes
      prefix x    signature u32
      nitems x    what u8, 3 zero bytes, signature u32, index u64, size u64,
                  hash[32]  (BLAKE2b-256 of size || data)
      the items' data, in table order
      BLAKE2b-256 of every byte above

    Reading checks the header, the bounds of both counts and the exact file
    size the table implies before it allocates anything for the data, then
    the whole-file hash, then each item's hash: a file cut short, grown,
    flipped or forged is refused with a message saying which.
*/
#include "elastic/cl_checkpoint.h"

#include "util/cl_log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "COLLABCK"
#define VERSION 1u
#define HEADER 44u
#define ITEM_ROW 56u
#define PREFIX_NAME "checkpoint-"
#define SUFFIX_NAME ".ckpt"

static void put_le(uint8_t *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void cl_checkpoint_item_hash(const void *data, uint64_t len, uint8_t out[CL_CKPT_HASH])
{
    crypto_generichash_state st;
    uint8_t le[8];
    put_le(le, len, 8);
    crypto_generichash_init(&st, NULL, 0, CL_CKPT_HASH);
    crypto_generichash_update(&st, le, sizeof le);
    if (len > 0)
        crypto_generichash_update(&st, data, (size_t)len);
    crypto_generichash_final(&st, out, CL_CKPT_HASH);
}

static int write_all(int fd, crypto_generichash_state *st, const void *p, size_t n)
{
    if (st != NULL && n > 0)
        crypto_generichash_update(st, p, n);
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

int cl_checkpoint_write(const char *dir, const cl_ckpt_t *c, char *path_out, size_t path_cap,
                        char err[CL_CKPT_ERR_MAX])
{
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s/.%s%012" PRIu64 ".tmp", dir, PREFIX_NAME, c->step);
    snprintf(path, sizeof path, "%s/%s%012" PRIu64 "%s", dir, PREFIX_NAME, c->step, SUFFIX_NAME);
    size_t rlen = strnlen(c->run_id, sizeof c->run_id);
    if (rlen == 0 || rlen > CL_CKPT_RUN_ID_MAX) {
        snprintf(err, CL_CKPT_ERR_MAX, "no run id");
        return -1;
    }
    if (c->nitems > CL_CKPT_MAX_ITEMS || c->prefix > CL_CKPT_MAX_PREFIX) {
        snprintf(err, CL_CKPT_ERR_MAX, "too many items (%u) or start-up collectives (%" PRIu64 ")",
                 c->nitems, c->prefix);
        return -1;
    }
    if (sodium_init() < 0) {
        snprintf(err, CL_CKPT_ERR_MAX, "libsodium failed to initialise");
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, CL_CKPT_ERR_MAX, "cannot create %s: %s", tmp, strerror(errno));
        return -1;
    }
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, CL_CKPT_HASH);
    uint8_t h[HEADER];
    memcpy(h, MAGIC, 8);
    put_le(h + 8, VERSION, 4);
    put_le(h + 12, c->nitems, 4);
    put_le(h + 16, c->step, 8);
    put_le(h + 24, c->seq, 8);
    put_le(h + 32, c->prefix, 8);
    put_le(h + 40, rlen, 4);
    int rc = write_all(fd, &st, h, sizeof h);
    if (rc == 0)
        rc = write_all(fd, &st, c->run_id, rlen);
    for (uint64_t i = 0; rc == 0 && i < c->prefix; i++) {
        uint8_t s[4];
        put_le(s, c->sigs[i], 4);
        rc = write_all(fd, &st, s, 4);
    }
    for (uint32_t i = 0; rc == 0 && i < c->nitems; i++) {
        const cl_ckpt_item_t *it = &c->items[i];
        uint8_t row[ITEM_ROW];
        memset(row, 0, sizeof row);
        row[0] = it->what;
        put_le(row + 4, it->signature, 4);
        put_le(row + 8, it->index, 8);
        put_le(row + 16, it->size, 8);
        memcpy(row + 24, it->hash, CL_CKPT_HASH);
        rc = write_all(fd, &st, row, sizeof row);
    }
    for (uint32_t i = 0; rc == 0 && i < c->nitems; i++)
        rc = write_all(fd, &st, c->items[i].data, (size_t)c->items[i].size);
    uint8_t whole[CL_CKPT_HASH];
    crypto_generichash_final(&st, whole, sizeof whole);
    if (rc == 0)
        rc = write_all(fd, NULL, whole, sizeof whole);
    if (rc == 0 && fsync(fd) != 0)
        rc = -1;
    int saved = errno;
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -1;
        saved = errno;
    }
    if (rc != 0) {
        snprintf(err, CL_CKPT_ERR_MAX, "cannot write %s: %s", path, strerror(saved));
        (void)unlink(tmp);
        return -1;
    }
    /* The rename is durable once the directory is synced. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        (void)close(dfd);
    }
    if (path_out != NULL)
        snprintf(path_out, path_cap, "%s", path);
    return 0;
}

void cl_checkpoint_clear(cl_ckpt_t *c)
{
    if (c == NULL)
        return;
    for (uint32_t i = 0; c->items != NULL && i < c->nitems; i++)
        free(c->items[i].data);
    free(c->items);
    free(c->sigs);
    memset(c, 0, sizeof *c);
}

static int read_all(int fd, void *p, size_t n)
{
    uint8_t *b = p;
    while (n > 0) {
        ssize_t r = read(fd, b, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

static int refuse(char err[CL_CKPT_ERR_MAX], const char *path, const char *why)
{
    snprintf(err, CL_CKPT_ERR_MAX, "%s is refused: %s", path, why);
    return -1;
}

int cl_checkpoint_read(const char *path, cl_ckpt_t *c, char err[CL_CKPT_ERR_MAX])
{
    memset(c, 0, sizeof *c);
    if (sodium_init() < 0)
        return refuse(err, path, "libsodium failed to initialise");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, CL_CKPT_ERR_MAX, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    uint8_t h[HEADER];
    uint8_t *table = NULL, *body = NULL;
    int rc = -1;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        refuse(err, path, "not a regular file");
        goto out;
    }
    uint64_t fsize = (uint64_t)sb.st_size;
    if (fsize < HEADER + CL_CKPT_HASH || read_all(fd, h, sizeof h) != 0) {
        refuse(err, path, "shorter than a checkpoint's header (cut short?)");
        goto out;
    }
    if (memcmp(h, MAGIC, 8) != 0) {
        refuse(err, path, "not a checkpoint (its first bytes are not COLLABCK)");
        goto out;
    }
    if (get_le(h + 8, 4) != VERSION) {
        char why[96];
        snprintf(why, sizeof why, "format version %" PRIu64 ", this build reads version %u",
                 get_le(h + 8, 4), VERSION);
        refuse(err, path, why);
        goto out;
    }
    uint64_t nitems = get_le(h + 12, 4), prefix = get_le(h + 32, 8), rlen = get_le(h + 40, 4);
    if (nitems > CL_CKPT_MAX_ITEMS || prefix > CL_CKPT_MAX_PREFIX) {
        refuse(err, path, "more items or start-up collectives than any swarm registers");
        goto out;
    }
    char run[CL_CKPT_RUN_ID_MAX + 1];
    if (rlen == 0 || rlen > CL_CKPT_RUN_ID_MAX || fsize < HEADER + rlen + CL_CKPT_HASH ||
        read_all(fd, run, (size_t)rlen) != 0) {
        refuse(err, path, "its run id is empty, longer than 128 bytes or cut short");
        goto out;
    }
    run[rlen] = '\0';
    uint64_t tlen = 4 * prefix + ITEM_ROW * nitems;
    if (fsize < HEADER + rlen + tlen + CL_CKPT_HASH) {
        refuse(err, path, "cut short inside its table");
        goto out;
    }
    table = malloc(tlen > 0 ? (size_t)tlen : 1);
    if (table == NULL || read_all(fd, table, (size_t)tlen) != 0) {
        refuse(err, path, table == NULL ? "out of memory" : "cannot read its table");
        goto out;
    }
    /* The data the table announces must fill the file exactly. */
    uint64_t data = 0;
    for (uint64_t i = 0; i < nitems; i++) {
        const uint8_t *row = table + 4 * prefix + ITEM_ROW * i;
        uint64_t size = get_le(row + 16, 8);
        if (size > fsize || data > fsize - size) {
            refuse(err, path, "an item larger than the file");
            goto out;
        }
        data += size;
    }
    if (HEADER + rlen + tlen + data + CL_CKPT_HASH != fsize) {
        refuse(err, path,
               fsize < HEADER + rlen + tlen + data + CL_CKPT_HASH
                   ? "cut short (its table announces more)"
                   : "longer than its table announces");
        goto out;
    }
    body = malloc((size_t)data + CL_CKPT_HASH);
    if (body == NULL || read_all(fd, body, (size_t)data + CL_CKPT_HASH) != 0) {
        refuse(err, path, body == NULL ? "out of memory" : "cannot read its data");
        goto out;
    }
    crypto_generichash_state st;
    uint8_t whole[CL_CKPT_HASH];
    crypto_generichash_init(&st, NULL, 0, CL_CKPT_HASH);
    crypto_generichash_update(&st, h, sizeof h);
    crypto_generichash_update(&st, (const uint8_t *)run, (size_t)rlen);
    crypto_generichash_update(&st, table, (size_t)tlen);
    crypto_generichash_update(&st, body, (size_t)data);
    crypto_generichash_final(&st, whole, sizeof whole);
    if (sodium_memcmp(whole, body + data, CL_CKPT_HASH) != 0) {
        refuse(err, path, "its hash does not match its contents (corrupted)");
        goto out;
    }
    memcpy(c->run_id, run, (size_t)rlen + 1);
    c->step = get_le(h + 16, 8);
    c->seq = get_le(h + 24, 8);
    c->prefix = prefix;
    c->sigs = calloc(prefix > 0 ? (size_t)prefix : 1, sizeof *c->sigs);
    c->items = calloc(nitems > 0 ? (size_t)nitems : 1, sizeof *c->items);
    if (c->sigs == NULL || c->items == NULL) {
        refuse(err, path, "out of memory");
        goto out;
    }
    for (uint64_t i = 0; i < prefix; i++)
        c->sigs[i] = (uint32_t)get_le(table + 4 * i, 4);
    uint64_t off = 0;
    for (uint64_t i = 0; i < nitems; i++) {
        const uint8_t *row = table + 4 * prefix + ITEM_ROW * i;
        cl_ckpt_item_t *it = &c->items[i];
        it->what = row[0];
        it->signature = (uint32_t)get_le(row + 4, 4);
        it->index = get_le(row + 8, 8);
        it->size = get_le(row + 16, 8);
        memcpy(it->hash, row + 24, CL_CKPT_HASH);
        c->nitems = (uint32_t)i + 1;
        if (it->what > CL_CKPT_RESULT ||
            (i > 0 &&
             (it[-1].what > it->what || (it[-1].what == it->what && it[-1].index >= it->index)))) {
            refuse(err, path, "its items are not in order");
            goto out;
        }
        uint8_t ih[CL_CKPT_HASH];
        cl_checkpoint_item_hash(body + off, it->size, ih);
        if (sodium_memcmp(ih, it->hash, CL_CKPT_HASH) != 0) {
            refuse(err, path, "an item's hash does not match its contents");
            goto out;
        }
        if (it->size > 0) {
            it->data = malloc((size_t)it->size);
            if (it->data == NULL) {
                refuse(err, path, "out of memory");
                goto out;
            }
            memcpy(it->data, body + off, (size_t)it->size);
        }
        off += it->size;
    }
    rc = 0;
out:
    if (rc != 0)
        cl_checkpoint_clear(c);
    free(table);
    free(body);
    (void)close(fd);
    return rc;
}

/* Step of a checkpoint file name, or -1. */
static int64_t name_step(const char *name)
{
    size_t lp = strlen(PREFIX_NAME), ls = strlen(SUFFIX_NAME), n = strlen(name);
    if (n != lp + 12 + ls || strncmp(name, PREFIX_NAME, lp) != 0 ||
        strcmp(name + n - ls, SUFFIX_NAME) != 0)
        return -1;
    int64_t v = 0;
    for (size_t i = lp; i < lp + 12; i++) {
        if (name[i] < '0' || name[i] > '9')
            return -1;
        v = v * 10 + (name[i] - '0');
    }
    return v;
}

static int cmp_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Steps of the checkpoints in dir, newest first (caller frees). */
static int64_t *list_steps(const char *dir, size_t *n, bool remove_tmp)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (d == NULL)
        return NULL;
    size_t cap = 16;
    int64_t *v = malloc(cap * sizeof *v);
    struct dirent *de;
    while (v != NULL && (de = readdir(d)) != NULL) {
        if (remove_tmp && strncmp(de->d_name, "." PREFIX_NAME, strlen(PREFIX_NAME) + 1) == 0) {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            (void)unlink(p);
            continue;
        }
        int64_t s = name_step(de->d_name);
        if (s < 0)
            continue;
        if (*n == cap) {
            int64_t *a = realloc(v, 2 * cap * sizeof *v);
            if (a == NULL)
                break;
            v = a;
            cap *= 2;
        }
        v[(*n)++] = s;
    }
    closedir(d);
    if (v != NULL)
        qsort(v, *n, sizeof *v, cmp_desc);
    return v;
}

int cl_checkpoint_latest(const char *dir, cl_ckpt_t *c, char *path_out, size_t path_cap,
                         char err[CL_CKPT_ERR_MAX])
{
    memset(c, 0, sizeof *c);
    DIR *d = opendir(dir);
    if (d == NULL) {
        snprintf(err, CL_CKPT_ERR_MAX, "cannot read the directory %s: %s", dir, strerror(errno));
        return -1;
    }
    closedir(d);
    size_t n;
    int64_t *v = list_steps(dir, &n, false);
    for (size_t i = 0; v != NULL && i < n; i++) {
        char path[4096], why[CL_CKPT_ERR_MAX];
        snprintf(path, sizeof path, "%s/%s%012" PRId64 "%s", dir, PREFIX_NAME, v[i], SUFFIX_NAME);
        if (cl_checkpoint_read(path, c, why) == 0) {
            if (path_out != NULL)
                snprintf(path_out, path_cap, "%s", path);
            free(v);
            return 0;
        }
        cl_warn("%s; trying an older checkpoint", why);
    }
    free(v);
    return 1;
}

int cl_checkpoint_prune(const char *dir, int keep)
{
    size_t n;
    int64_t *v = list_steps(dir, &n, true);
    if (v == NULL)
        return -1;
    int removed = 0;
    for (size_t i = keep > 0 ? (size_t)keep : 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s%012" PRId64 "%s", dir, PREFIX_NAME, v[i], SUFFIX_NAME);
        if (unlink(path) == 0)
            removed++;
    }
    free(v);
    return removed;
}
