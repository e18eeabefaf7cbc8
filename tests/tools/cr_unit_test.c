/*  cr_unit_test.c - unit checks of collab-run's parsers: durations, chaos
    specs, the command line, ELF DT_NEEDED reading (synthetic images of
    both classes and byte orders, real binaries, and every truncation and
    many corruptions of them), environment blocks and output streams. */
#include "cr_chaos.h"
#include "cr_elf.h"
#include "cr_env.h"
#include "cr_opts.h"
#include "cr_output.h"

#include "util/cl_selftest.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------------- */

static void test_seconds(void)
{
    double v = -1;
    CL_CHECK(cr_parse_seconds("5", &v) == 0 && v == 5.0);
    CL_CHECK(cr_parse_seconds("5s", &v) == 0 && v == 5.0);
    CL_CHECK(cr_parse_seconds("2.5s", &v) == 0 && v == 2.5);
    CL_CHECK(cr_parse_seconds("250ms", &v) == 0 && v > 0.2499 && v < 0.2501);
    CL_CHECK(cr_parse_seconds("0", &v) == 0 && v == 0.0);
    const char *bad[] = {"",    "-1", "+1",  ".5", "5.",          "1e3",  "inf",
                         "nan", "5m", "5 s", "s",  "12345678901", "0x10", "5ss"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = cr_parse_seconds(bad[i], &v);
        CL_CHECK(rc == -1);
        if (rc != -1)
            fprintf(stderr, "  accepted '%s'\n", bad[i]);
    }
    CL_CHECK(cr_parse_seconds(NULL, &v) == -1);
}

static void test_chaos(void)
{
    char err[512];
    cr_chaos_t *c = cr_chaos_new("kill:2@5s", 4, err, sizeof err);
    CL_CHECK(c != NULL && c->action == CR_CHAOS_KILL && !c->target.started && c->target.n == 2 &&
             !c->on_line && c->at_seconds == 5.0);
    cr_chaos_destroy(&c);
    CL_CHECK(c == NULL);

    c = cr_chaos_new("stop:1@line:0:step [0-9]+ done+2.5", 2, err, sizeof err);
    CL_CHECK(c != NULL && c->action == CR_CHAOS_STOP && c->target.n == 1 && c->on_line &&
             c->line_target.n == 0 && c->stop_seconds == 2.5);
    if (c != NULL) {
        CL_CHECK_STREQ(c->pattern, "step [0-9]+ done");
        CL_CHECK(regexec(&c->regex, "step 12 done", 0, NULL, 0) == 0);
        CL_CHECK(regexec(&c->regex, "step x done", 0, NULL, 0) != 0);
    }
    cr_chaos_destroy(&c);

    c = cr_chaos_new("start@1.5s", 3, err, sizeof err);
    CL_CHECK(c != NULL && c->action == CR_CHAOS_START && c->target.n == -1 && c->at_seconds == 1.5);
    cr_chaos_destroy(&c);

    c = cr_chaos_new("start:2@line:+1:ready@host", 3, err, sizeof err);
    CL_CHECK(c != NULL && c->target.n == 2 && c->line_target.started && c->line_target.n == 1);
    if (c != NULL)
        CL_CHECK_STREQ(c->pattern, "ready@host");
    cr_chaos_destroy(&c);

    c = cr_chaos_new("kill:+2@500ms", 3, err, sizeof err);
    CL_CHECK(c != NULL && c->target.started && c->target.n == 2);
    cr_chaos_destroy(&c);

    struct {
        const char *spec;
        const char *msg;
    } bad[] = {
        {"", "empty"},
        {"kill:1", "missing '@'"},
        {"kill@5s", "needs a target"},
        {"kill:4@5s", "out of range"},
        {"kill:-1@5s", "expected a rank"},
        {"kill:x@5s", "expected a rank"},
        {"kill:+0@5s", "numbered from +1"},
        {"explode:1@5s", "unknown action"},
        {"kill:1@soon", "expected a time"},
        {"kill:1@-5s", "expected a time"},
        {"stop:1@5s", "needs a duration"},
        {"stop:1@5s+0", "must be positive"},
        {"stop:1@5s+x", "needs a duration"},
        {"start:+1@5s", "start takes a rank"},
        {"start:9@5s", "out of range"},
        {"kill:1@line:0", "line:RANK:REGEX"},
        {"kill:1@line:0:", "empty"},
        {"kill:1@line:7:x", "out of range"},
        {"kill:1@line:0:a(b", "bad regular expression"},
        {"kill:1@line:0:[z-a]", "bad regular expression"},
        {"kill:12345678901@1s", "expected a rank"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        c = cr_chaos_new(bad[i].spec, 4, err, sizeof err);
        CL_CHECK(c == NULL);
        if (c != NULL)
            fprintf(stderr, "  accepted '%s'\n", bad[i].spec);
        CL_CHECK_CONTAINS(err, bad[i].msg);
        cr_chaos_destroy(&c);
    }

    /* +K must name a peer that a start fault creates. */
    cr_chaos_t *list[3];
    list[0] = cr_chaos_new("start@1s", 2, err, sizeof err);
    list[1] = cr_chaos_new("kill:+1@2s", 2, err, sizeof err);
    list[2] = cr_chaos_new("kill:1@line:+2:x", 2, err, sizeof err);
    CL_CHECK(list[0] != NULL && list[1] != NULL && list[2] != NULL);
    if (list[0] != NULL && list[1] != NULL && list[2] != NULL) {
        CL_CHECK(cr_chaos_check_list(list, 2, err, sizeof err) == 0);
        CL_CHECK(cr_chaos_check_list(list, 3, err, sizeof err) == -1);
        CL_CHECK_CONTAINS(err, "peer +2 is never started");
    }
    for (int i = 0; i < 3; i++)
        cr_chaos_destroy(&list[i]);
}

/* ---------------------------------------------------------------------- */

static int parse(cr_opts_t *o, char *err, size_t errlen, ...)
{
    char *argv[32];
    int argc = 0;
    va_list ap;
    va_start(ap, errlen);
    argv[argc++] = "collab-run";
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && argc < 31)
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    err[0] = '\0';
    return cr_opts_parse(argc, argv, o, err, errlen);
}

static void test_opts(void)
{
    cr_opts_t o;
    char err[512];
    CL_CHECK(parse(&o, err, sizeof err, "-n", "4", "prog", "-n", "9", NULL) == 0);
    CL_CHECK(o.n == 4 && o.abi == CR_ABI_UNKNOWN && o.mode == CR_MODE_PRELOAD && o.bind &&
             !o.tag_output && o.timeout == 0 && o.libdir == NULL && o.nchaos == 0);
    CL_CHECK_STREQ(o.argv[0], "prog");
    CL_CHECK_STREQ(o.argv[1], "-n"); /* the program's own options are its own */
    cr_opts_clear(&o);

    CL_CHECK(parse(&o, err, sizeof err, "-n3", "--abi=ompi", "--mode", "replace", "--tag-output",
                   "--timeout", "2.5s", "--libdir=/x", "--bind", "none", "--chaos", "kill:2@1s",
                   "--chaos=start@2s", "--", "-prog", NULL) == 0);
    CL_CHECK(o.n == 3 && o.abi == CR_ABI_OMPI && o.mode == CR_MODE_REPLACE && o.tag_output &&
             o.timeout == 2.5 && !o.bind && o.nchaos == 2);
    CL_CHECK_STREQ(o.libdir, "/x");
    CL_CHECK_STREQ(o.argv[0], "-prog");
    cr_opts_clear(&o);

    CL_CHECK(parse(&o, err, sizeof err, "-np", "2", "--abi", "mpich", "p", NULL) == 0 && o.n == 2 &&
             o.abi == CR_ABI_MPICH);
    cr_opts_clear(&o);
    CL_CHECK(parse(&o, err, sizeof err, "--help", NULL) == 0 && o.help);
    cr_opts_clear(&o);

    struct {
        const char *args[6];
        const char *msg;
    } bad[] = {
        {{"prog"}, "number of peers is required"},
        {{"-n", "0", "prog"}, "from 1 to"},
        {{"-n", "1025", "prog"}, "from 1 to"},
        {{"-n", "abc", "prog"}, "from 1 to"},
        {{"-n", "-3", "prog"}, "from 1 to"},
        {{"-n"}, "needs a number"},
        {{"-n", "2"}, "no program"},
        {{"-n", "2", "--"}, "no program"},
        {{"-n", "2", "--abi", "lam", "p"}, "expected mpich or ompi"},
        {{"-n", "2", "--abi"}, "--abi needs a value"},
        {{"-n", "2", "--mode", "inject", "p"}, "expected preload or replace"},
        {{"-n", "2", "--timeout", "0", "p"}, "positive number"},
        {{"-n", "2", "--timeout", "-1", "p"}, "positive number"},
        {{"-n", "2", "--timeout", "soon", "p"}, "positive number"},
        {{"-n", "2", "--libdir=", "p"}, "needs a folder"},
        {{"-n", "2", "--bind", "tight", "p"}, "spread or none"},
        {{"-n", "2", "--frobnicate", "p"}, "unknown option '--frobnicate'"},
        {{"-n", "2", "--chaos", "kill:2@1s", "p"}, "out of range"},
        {{"-n", "2", "--chaos", "kill:+1@1s", "p"}, "never started"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *argv[8] = {"collab-run"};
        int argc = 1;
        for (int k = 0; k < 6 && bad[i].args[k] != NULL; k++)
            argv[argc++] = (char *)bad[i].args[k];
        argv[argc] = NULL;
        err[0] = '\0';
        int rc = cr_opts_parse(argc, argv, &o, err, sizeof err);
        CL_CHECK(rc == -1);
        CL_CHECK_CONTAINS(err, bad[i].msg);
        cr_opts_clear(&o);
    }
}

/* ---------------------------------------------------------------------- */
/* ELF */

static void put_u(unsigned char *p, uint64_t v, size_t w, int big)
{
    for (size_t i = 0; i < w; i++) {
        size_t idx = big ? w - 1 - i : i;
        p[idx] = (unsigned char)(v >> (8 * i));
    }
}

/* Builds a minimal dynamically linked ELF image: header, PT_LOAD over the
   whole file at vaddr 0x400000, PT_DYNAMIC, dynamic entries and strings.
   Returns its size. */
static size_t build_elf(unsigned char *buf, size_t cap, int is64, int big, const char **names,
                        int n)
{
    memset(buf, 0, cap);
    size_t w = is64 ? 8 : 4;
    size_t ehsize = is64 ? 64 : 52, phent = is64 ? 56 : 32;
    size_t phoff = ehsize, dynoff = phoff + 2 * phent;
    size_t ndyn = (size_t)n + 3; /* NEEDED..., STRTAB, STRSZ, NULL */
    size_t stroff = dynoff + ndyn * 2 * w;
    /* Strings: "\0name0\0name1\0..." */
    size_t pos = stroff + 1;
    size_t offs[16];
    for (int i = 0; i < n; i++) {
        offs[i] = pos - stroff;
        strcpy((char *)buf + pos, names[i]);
        pos += strlen(names[i]) + 1;
    }
    size_t strsz = pos - stroff, total = pos;
    uint64_t base = 0x400000;
    memcpy(buf, "\177ELF", 4);
    buf[4] = is64 ? 2 : 1;
    buf[5] = big ? 2 : 1;
    buf[6] = 1;
    put_u(buf + 16, 3, 2, big);             /* e_type ET_DYN */
    put_u(buf + 18, is64 ? 62 : 3, 2, big); /* e_machine */
    put_u(buf + (is64 ? 0x20 : 0x1c), phoff, w, big);
    put_u(buf + (is64 ? 0x36 : 0x2a), phent, 2, big);
    put_u(buf + (is64 ? 0x38 : 0x2c), 2, 2, big);
    unsigned char *ph = buf + phoff;
    /* PT_LOAD */
    put_u(ph, 1, 4, big);
    if (is64) {
        put_u(ph + 8, 0, 8, big);
        put_u(ph + 16, base, 8, big);
        put_u(ph + 32, total, 8, big);
        put_u(ph + 40, total, 8, big);
    } else {
        put_u(ph + 4, 0, 4, big);
        put_u(ph + 8, base, 4, big);
        put_u(ph + 16, total, 4, big);
        put_u(ph + 20, total, 4, big);
    }
    /* PT_DYNAMIC */
    ph += phent;
    put_u(ph, 2, 4, big);
    if (is64) {
        put_u(ph + 8, dynoff, 8, big);
        put_u(ph + 16, base + dynoff, 8, big);
        put_u(ph + 32, ndyn * 16, 8, big);
    } else {
        put_u(ph + 4, dynoff, 4, big);
        put_u(ph + 8, base + dynoff, 4, big);
        put_u(ph + 16, ndyn * 8, 4, big);
    }
    unsigned char *d = buf + dynoff;
    for (int i = 0; i < n; i++, d += 2 * w) {
        put_u(d, 1, w, big);
        put_u(d + w, offs[i], w, big);
    }
    put_u(d, 5, w, big);
    put_u(d + w, base + stroff, w, big);
    d += 2 * w;
    put_u(d, 10, w, big);
    put_u(d + w, strsz, w, big);
    return total;
}

static void check_names(const unsigned char *img, size_t size, const char **want, int n)
{
    char **names = NULL;
    size_t count = 0;
    char err[256] = "";
    int rc = cr_elf_needed_mem(img, size, &names, &count, err, sizeof err);
    CL_CHECK(rc == 0);
    if (rc != 0) {
        fprintf(stderr, "  error: %s\n", err);
        return;
    }
    CL_CHECK(count == (size_t)n);
    for (int i = 0; i < n && (size_t)i < count; i++)
        CL_CHECK_STREQ(names[i], want[i]);
    cr_elf_free_names(names, count);
}

/* Every prefix and many one-byte corruptions must give an answer, never a
   crash (run under ASan/UBSan in CI). */
static void abuse(const unsigned char *img, size_t size)
{
    unsigned char *copy = malloc(size);
    if (copy == NULL)
        return;
    for (size_t len = 0; len < size; len++) {
        char **names = NULL;
        size_t count = 0;
        char err[256];
        if (cr_elf_needed_mem(img, len, &names, &count, err, sizeof err) == 0)
            cr_elf_free_names(names, count);
    }
    uint32_t seed = 12345;
    for (int t = 0; t < 20000; t++) {
        memcpy(copy, img, size);
        for (int k = 0; k < 3; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % size;
            seed = seed * 1103515245u + 12345u;
            copy[at] = (unsigned char)(seed >> 16);
        }
        char **names = NULL;
        size_t count = 0;
        char err[256];
        if (cr_elf_needed_mem(copy, size, &names, &count, err, sizeof err) == 0)
            cr_elf_free_names(names, count);
    }
    free(copy);
}

static void test_elf(void)
{
    unsigned char img[4096];
    const char *two[] = {"libmpich.so.12", "libc.so.6"};
    for (int is64 = 0; is64 < 2; is64++)
        for (int big = 0; big < 2; big++) {
            size_t n = build_elf(img, sizeof img, is64, big, two, 2);
            check_names(img, n, two, 2);
            abuse(img, n);
        }

    /* ABI detection through files. */
    char dir[] = "/tmp/cr_unit_XXXXXX";
    CL_CHECK(mkdtemp(dir) != NULL);
    struct {
        const char *libs[3];
        int n;
        cr_abi_t abi;
        const char *msg;
    } cases[] = {
        {{"libmpich.so.12", "libc.so.6"}, 2, CR_ABI_MPICH, NULL},
        {{"libmpi.so.12"}, 1, CR_ABI_MPICH, NULL},
        {{"libmpi_cxx.so.40", "libmpi.so.40", "libc.so.6"}, 3, CR_ABI_OMPI, NULL},
        {{"libc.so.6"}, 1, CR_ABI_UNKNOWN, "does not link"},
        {{"libmpi.so.40", "libmpich.so.12"}, 2, CR_ABI_UNKNOWN, "both"},
        {{"libmpi.so.4"}, 1, CR_ABI_UNKNOWN, "does not link"},
    };
    char path[256];
    snprintf(path, sizeof path, "%s/prog", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = build_elf(img, sizeof img, 1, 0, cases[i].libs, cases[i].n);
        FILE *f = fopen(path, "wb");
        CL_CHECK(f != NULL);
        if (f == NULL)
            continue;
        fwrite(img, 1, n, f);
        fclose(f);
        char err[256] = "";
        cr_abi_t abi = cr_detect_abi(path, err, sizeof err);
        CL_CHECK(abi == cases[i].abi);
        if (cases[i].msg != NULL)
            CL_CHECK_CONTAINS(err, cases[i].msg);
    }
    /* A script and a non-ELF file. */
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        fputs("#!/bin/sh\necho hi\n", f);
        fclose(f);
    }
    char err[256] = "";
    CL_CHECK(cr_detect_abi(path, err, sizeof err) == CR_ABI_UNKNOWN);
    CL_CHECK_CONTAINS(err, "script");
    f = fopen(path, "w");
    if (f != NULL) {
        fputs("hello", f);
        fclose(f);
    }
    CL_CHECK(cr_detect_abi(path, err, sizeof err) == CR_ABI_UNKNOWN);
    CL_CHECK_CONTAINS(err, "not an ELF");
    CL_CHECK(cr_detect_abi(dir, err, sizeof err) == CR_ABI_UNKNOWN);
    CL_CHECK_CONTAINS(err, "not a regular file");
    unlink(path);
    CL_CHECK(cr_detect_abi(path, err, sizeof err) == CR_ABI_UNKNOWN);
    CL_CHECK_CONTAINS(err, "cannot open");
    rmdir(dir);

    /* A real dynamically linked program: /bin/sh links libc. */
    char **names = NULL;
    size_t count = 0;
    CL_CHECK(cr_elf_needed("/bin/sh", &names, &count, err, sizeof err) == 0);
    int libc = 0;
    for (size_t i = 0; i < count; i++)
        libc |= strcmp(names[i], "libc.so.6") == 0;
    CL_CHECK(libc);
    cr_elf_free_names(names, count);

    /* Truncations and corruptions of the first 16 KiB of a real binary. */
    int fd = open("/bin/sh", O_RDONLY);
    if (fd >= 0) {
        static unsigned char head[16384];
        ssize_t got = read(fd, head, sizeof head);
        close(fd);
        if (got > 0)
            abuse(head, (size_t)got);
    }

    /* Program lookup. */
    char out[4096];
    CL_CHECK(cr_resolve_program("sh", out, sizeof out, err, sizeof err) == 0);
    CL_CHECK(out[0] == '/');
    CL_CHECK(cr_resolve_program("no-such-program-xyz", out, sizeof out, err, sizeof err) == -1);
    CL_CHECK_CONTAINS(err, "not found");
    char plain[] = "/tmp/cr_unit_plain_XXXXXX"; /* a file that is not executable */
    int pfd = mkstemp(plain);
    CL_CHECK(pfd >= 0);
    if (pfd >= 0) {
        close(pfd);
        chmod(plain, 0644);
        CL_CHECK(cr_resolve_program(plain, out, sizeof out, err, sizeof err) == -1);
        unlink(plain);
    }
    CL_CHECK(cr_resolve_program("/tmp", out, sizeof out, err, sizeof err) == -1);
    CL_CHECK(cr_resolve_program("", out, sizeof out, err, sizeof err) == -1);
}

/* ---------------------------------------------------------------------- */

static void test_env(void)
{
    char *base[] = {"A=1", "LD_PRELOAD=/old.so", "B=x=y", "junk", "A=2", NULL};
    cr_env_t *e = cr_env_new(base);
    CL_CHECK(e != NULL);
    if (e == NULL)
        return;
    CL_CHECK_STREQ(cr_env_get(e, "A"), "1");
    CL_CHECK_STREQ(cr_env_get(e, "B"), "x=y");
    CL_CHECK(cr_env_get(e, "junk") == NULL);
    CL_CHECK(cr_env_get(e, "C") == NULL);
    cr_env_unset(e, "A"); /* every occurrence */
    CL_CHECK(cr_env_get(e, "A") == NULL);
    CL_CHECK(cr_env_set(e, "C", "3") == 0);
    CL_CHECK(cr_env_set(e, "C", "4") == 0);
    CL_CHECK_STREQ(cr_env_get(e, "C"), "4");
    CL_CHECK(cr_env_prepend(e, "LD_PRELOAD", "/new.so", ':') == 0);
    CL_CHECK_STREQ(cr_env_get(e, "LD_PRELOAD"), "/new.so:/old.so");
    CL_CHECK(cr_env_prepend(e, "LD_LIBRARY_PATH", "/lib/x", ':') == 0);
    CL_CHECK_STREQ(cr_env_get(e, "LD_LIBRARY_PATH"), "/lib/x");
    char **arr = cr_env_array(e);
    size_t n = 0, cs = 0;
    for (; arr[n] != NULL; n++)
        cs += strncmp(arr[n], "C=", 2) == 0;
    CL_CHECK(n == 4 && cs == 1);
    cr_env_destroy(&e);
    CL_CHECK(e == NULL);
    cr_env_destroy(&e);
}

/* ---------------------------------------------------------------------- */

typedef struct {
    char lines[64][128];
    int n;
} seen_t;

static void on_line(void *ctx, const char *line, size_t len)
{
    seen_t *s = ctx;
    if (s->n < 64 && len < 128)
        memcpy(s->lines[s->n++], line, len + 1);
}

static size_t slurp(int fd, char *buf, size_t cap)
{
    size_t got = 0;
    ssize_t r;
    while (got < cap - 1 && (r = read(fd, buf + got, cap - 1 - got)) > 0)
        got += (size_t)r;
    buf[got] = '\0';
    return got;
}

static void run_stream(const char *prefix, const char *input, const char *want_out, int want_lines)
{
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) {
        CL_CHECK(0);
        return;
    }
    fcntl(in[0], F_SETFL, O_NONBLOCK);
    cr_stream_t s;
    CL_CHECK(cr_stream_init(&s, in[0], out[1], prefix) == 0);
    seen_t seen = {.n = 0};
    /* Feed one byte at a time, reading in between: lines must come out whole. */
    for (const char *p = input; *p != '\0'; p++) {
        CL_CHECK(write(in[1], p, 1) == 1);
        CL_CHECK(cr_stream_read(&s, on_line, &seen) == 1);
    }
    CL_CHECK(cr_stream_read(&s, on_line, &seen) == 0); /* nothing pending */
    close(in[1]);
    cr_stream_drain(&s, on_line, &seen);
    CL_CHECK(s.fd == -1);
    cr_stream_close(&s, on_line, &seen); /* twice is fine */
    close(out[1]);
    char got[4096];
    slurp(out[0], got, sizeof got);
    close(out[0]);
    CL_CHECK_STREQ(got, want_out);
    CL_CHECK(seen.n == want_lines);
}

static void test_stream(void)
{
    run_stream(NULL, "one\ntwo\n", "one\ntwo\n", 2);
    run_stream("[3] ", "one\ntwo\n", "[3] one\n[3] two\n", 2);
    run_stream(NULL, "a\n\nlast", "a\n\nlast", 3);            /* untagged: bytes unchanged */
    run_stream("[+1] ", "a\nlast", "[+1] a\n[+1] last\n", 2); /* tagged: line closed */

    /* An overlong line is forwarded in pieces of CR_LINE_MAX. */
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0)
        return;
    fcntl(in[0], F_SETFL, O_NONBLOCK);
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    /* Room for a whole overlong line: the stream writes it in one go. */
    CL_CHECK(fcntl(out[1], F_SETPIPE_SZ, 4 * CR_LINE_MAX) >= 4 * CR_LINE_MAX);
    cr_stream_t s;
    cr_stream_init(&s, in[0], out[1], "[0] ");
    static char big[CR_LINE_MAX + 10];
    memset(big, 'z', sizeof big);
    size_t off = 0;
    static char outbuf[4 * CR_LINE_MAX];
    size_t outlen = 0;
    while (off < sizeof big) {
        ssize_t w = write(in[1], big + off, sizeof big - off);
        if (w > 0)
            off += (size_t)w;
        while (cr_stream_read(&s, NULL, NULL) == 1)
            ;
        ssize_t r;
        while ((r = read(out[0], outbuf + outlen, sizeof outbuf - outlen)) > 0)
            outlen += (size_t)r;
    }
    close(in[1]);
    cr_stream_drain(&s, NULL, NULL);
    close(out[1]);
    ssize_t r;
    while ((r = read(out[0], outbuf + outlen, sizeof outbuf - outlen)) > 0)
        outlen += (size_t)r;
    close(out[0]);
    /* "[0] " + 65536 z + "\n" + "[0] " + 10 z + "\n" */
    CL_CHECK(outlen == 4 + CR_LINE_MAX + 1 + 4 + 10 + 1);
}

int main(void)
{
    test_seconds();
    test_chaos();
    test_opts();
    test_elf();
    test_env();
    test_stream();
    return cl_selftest_end("tools_cr_unit");
}
