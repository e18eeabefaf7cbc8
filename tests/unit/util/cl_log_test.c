/*  cl_log_test.c - selftest of cl_log: prefix, tag, levels, destinations,
    sanitising, truncation, errno, and whole lines under concurrency (many
    threads, several processes, reconfiguration while writing). */
#define _GNU_SOURCE
#include "util/cl_log.h"
#include "util/cl_selftest.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char s_dir[256];

/* Reads a whole file into a malloc'ed string (NULL on error). */
static char *s_slurp(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return NULL;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    size_t len = 0;
    ssize_t n;
    while (buf != NULL && (n = read(fd, buf + len, (size_t)st.st_size - len)) > 0)
        len += (size_t)n;
    close(fd);
    if (buf != NULL)
        buf[len] = '\0';
    return buf;
}

/* Runs fn with stderr redirected to a file and returns what it wrote. */
static char *s_capture_stderr(void (*fn)(void))
{
    char path[300];
    snprintf(path, sizeof path, "%s/stderr.txt", s_dir);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    fn();
    dup2(saved, 2);
    close(saved);
    char *text = s_slurp(path);
    unlink(path);
    return text;
}

static void s_before_configuration(void)
{
    cl_error("an error %d", 1);
    cl_warn("a warning");
    cl_info("some info");
    cl_debug("debug is off by default");
}

static void test_defaults(void)
{
    CL_CHECK(cl_log_enabled(CL_LOG_INFO));
    CL_CHECK(!cl_log_enabled(CL_LOG_DEBUG));
    char *out = s_capture_stderr(s_before_configuration);
    CL_CHECK_STREQ(out, "[collab] error: an error 1\n"
                        "[collab] warning: a warning\n"
                        "[collab] some info\n");
    free(out);
}

static void s_levels_and_tag(void)
{
    cl_log_configure(CL_LOG_WARN, NULL);
    cl_info("hidden");
    cl_warn("shown");
    cl_log_configure(CL_LOG_DEBUG, "");
    cl_log_set_tag("rank 3");
    cl_debug("dbg %s", "x");
    cl_log_set_tag(NULL);
    cl_info("no tag");
    cl_log_set_tag("a\nb");
    cl_info("tag on one line");
    cl_log_set_tag("0123456789012345678901234567890123456789012345678901234567890123456789");
    cl_info("long tag");
    cl_log_set_tag(NULL);
    cl_log_configure(CL_LOG_ERROR, NULL);
    cl_warn("hidden");
    cl_error("err");
    CL_CHECK(cl_log_configure((cl_log_level_t)7, NULL) == -1); /* logs an error */
    CL_CHECK(cl_log_enabled(CL_LOG_ERROR) && !cl_log_enabled(CL_LOG_WARN));
    cl_log_configure(CL_LOG_INFO, NULL);
}

static void test_levels_and_tag(void)
{
    char *out = s_capture_stderr(s_levels_and_tag);
    CL_CHECK_STREQ(out, "[collab] warning: shown\n"
                        "[collab] rank 3: debug: dbg x\n"
                        "[collab] no tag\n"
                        "[collab] a?b: tag on one line\n"
                        "[collab] 012345678901234567890123456789012345678901234567890123456789012: "
                        "long tag\n"
                        "[collab] error: err\n"
                        "[collab] error: invalid log level 7\n");
    free(out);
}

static void s_content(void)
{
    cl_info("ctl \x01\x1b[31m del\x7f tab\tcr\r end");
    cl_info("join line follows:\nCOLLAB_INITIAL_PEERS=/ip4/1.2.3.4/tcp/5");
    cl_info("ends in a newline\n");
    cl_info("%s", "");
    errno = ENOENT;
    cl_info("errno: %m");
    CL_CHECK(errno == ENOENT);
    static char big[10000];
    memset(big, 'x', sizeof big - 1);
    cl_info("%s", big);
}

static void test_content(void)
{
    char *out = s_capture_stderr(s_content);
    CL_CHECK(out != NULL);
    if (out == NULL)
        return;
    CL_CHECK_CONTAINS(out, "[collab] ctl ??[31m del? tab\tcr? end\n");
    CL_CHECK_CONTAINS(out,
                      "[collab] join line follows:\nCOLLAB_INITIAL_PEERS=/ip4/1.2.3.4/tcp/5\n");
    CL_CHECK_CONTAINS(out, "[collab] ends in a newline\n[collab] \n");
    CL_CHECK_CONTAINS(out, "[collab] errno: No such file or directory\n");
    /* The long line is cut at 4096 bytes and says so. */
    char *longline = strstr(out, "[collab] xxx");
    CL_CHECK(longline != NULL);
    if (longline != NULL) {
        CL_CHECK(strlen(longline) == 4095);
        CL_CHECK(strcmp(longline + 4095 - 4, "...\n") == 0);
    }
    free(out);
}

static void test_file(void)
{
    char a[300], b[300];
    snprintf(a, sizeof a, "%s/a.log", s_dir);
    snprintf(b, sizeof b, "%s/b.log", s_dir);
    CL_CHECK(cl_log_configure(CL_LOG_INFO, a) == 0);
    cl_info("to a");
    CL_CHECK(cl_log_configure(CL_LOG_INFO, b) == 0);
    cl_info("to b");
    CL_CHECK(cl_log_configure(CL_LOG_INFO, a) == 0); /* appends */
    cl_info("to a again");
    char *ta = s_slurp(a), *tb = s_slurp(b);
    CL_CHECK_STREQ(ta, "[collab] to a\n[collab] to a again\n");
    CL_CHECK_STREQ(tb, "[collab] to b\n");
    free(ta);
    free(tb);
    /* A file that cannot be opened: -1, error on stderr, then stderr. */
    char bad[300];
    snprintf(bad, sizeof bad, "%s/no/such/dir.log", s_dir);
    fflush(stderr);
    char errpath[300];
    snprintf(errpath, sizeof errpath, "%s/err.txt", s_dir);
    int saved = dup(2);
    int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    CL_CHECK(cl_log_configure(CL_LOG_INFO, bad) == -1);
    cl_info("back on stderr");
    dup2(saved, 2);
    close(saved);
    char *te = s_slurp(errpath);
    CL_CHECK_CONTAINS(te, "[collab] error: cannot open log file");
    CL_CHECK_CONTAINS(te, "No such file or directory");
    CL_CHECK_CONTAINS(te, "[collab] back on stderr\n");
    free(te);
    ta = s_slurp(a);
    CL_CHECK(ta != NULL && strstr(ta, "back on stderr") == NULL);
    free(ta);
    unlink(a);
    unlink(b);
    unlink(errpath);
}

enum { THREADS = 6, LINES = 400 };

static void *s_writer(void *arg)
{
    long t = (long)arg;
    for (int i = 0; i < LINES; i++)
        cl_info("thread %ld line %d %s", t, i,
                "padding padding padding padding padding padding padding padding padding");
    return NULL;
}

/* Checks that text is made of whole lines "[collab] thread T line I ..."
   and counts them. */
static int s_count_whole_lines(const char *text, int *bad)
{
    int lines = 0;
    *bad = 0;
    for (const char *p = text; *p != '\0';) {
        const char *nl = strchr(p, '\n');
        if (nl == NULL) {
            (*bad)++;
            break;
        }
        long t;
        int i, used = 0;
        if (sscanf(p, "[collab] thread %ld line %d padding%n", &t, &i, &used) != 2 || used == 0 ||
            strncmp(nl - 7, "padding", 7) != 0)
            (*bad)++;
        lines++;
        p = nl + 1;
    }
    return lines;
}

static void test_concurrency(void)
{
    char a[300], b[300];
    snprintf(a, sizeof a, "%s/threads-a.log", s_dir);
    snprintf(b, sizeof b, "%s/threads-b.log", s_dir);
    CL_CHECK(cl_log_configure(CL_LOG_INFO, a) == 0);
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, s_writer, (void *)t);
    /* Switch files while the writers run: every line lands whole in one. */
    for (int k = 0; k < 20; k++)
        cl_log_configure(CL_LOG_INFO, k % 2 == 0 ? b : a);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    /* Two processes append to the same file as well. */
    pid_t pid = fork();
    if (pid == 0) {
        s_writer((void *)100);
        _exit(0);
    }
    s_writer((void *)101);
    int status;
    CL_CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
    cl_log_configure(CL_LOG_INFO, NULL);

    char *ta = s_slurp(a), *tb = s_slurp(b);
    CL_CHECK(ta != NULL && tb != NULL);
    if (ta != NULL && tb != NULL) {
        int bad_a, bad_b;
        int lines = s_count_whole_lines(ta, &bad_a) + s_count_whole_lines(tb, &bad_b);
        CL_CHECK(bad_a == 0 && bad_b == 0);
        CL_CHECK(lines == (THREADS + 2) * LINES);
    }
    free(ta);
    free(tb);
    unlink(a);
    unlink(b);
}

int main(void)
{
    snprintf(s_dir, sizeof s_dir, "/tmp/cl_log_test.XXXXXX");
    if (mkdtemp(s_dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    test_defaults(); /* must run first: nothing configured yet */
    test_levels_and_tag();
    test_content();
    test_file();
    test_concurrency();
    rmdir(s_dir);
    return cl_selftest_end("cl_log_test");
}
