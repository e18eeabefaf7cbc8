/*  cl_log.c - the one logger of the core.

    A line is formatted into a stack buffer ("[collab] ", the optional tag,
    a severity word for errors, warnings and debug lines, the message, a
    newline) and handed to the kernel with one write(), so that lines of
    several threads, and of several processes sharing a file or a terminal,
    never interleave.  Nothing here allocates, so the logger also works when
    memory is short.

    The destination is either stderr (fd 2, looked up on every line, so a
    program that redirects its stderr redirects our lines too) or a private
    descriptor opened on COLLAB_LOG_FILE.  That descriptor is never closed
    once created: reconfiguring to another file dup3()s the new file onto
    it, which the kernel does atomically, so a thread that is writing while
    another thread reconfigures never writes to a closed or recycled fd.

    Control characters in a message (other than newline and tab) are
    replaced by '?' so that text from the network or the environment cannot
    forge or garble log lines.  A newline inside a message is kept: the join
    line prints the address on a line of its own so that it can be copied.
*/
#define _GNU_SOURCE
#include "util/cl_log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CL_LOG_LINE_MAX 4096 /* longer messages are cut and end in "..." */
#define CL_LOG_TAG_MAX 64

static atomic_int s_level = CL_LOG_INFO; /* messages above this level are dropped */
static atomic_bool s_use_file = false;   /* true: write to s_file_fd, else fd 2 */
static int s_file_fd = -1;               /* private fd for the log file, never closed */
static pthread_mutex_t s_lock = PTHREAD_MUTEX_INITIALIZER; /* guards s_file_fd, s_tag */
static char s_tag[CL_LOG_TAG_MAX];                         /* "" = no tag */

static int s_current_fd(void)
{
    return atomic_load_explicit(&s_use_file, memory_order_acquire) ? s_file_fd : STDERR_FILENO;
}

/* Writes all of buf, retrying after signals and short writes.  Errors are
   ignored: there is nowhere left to report them. */
static void s_write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        buf += n;
        len -= (size_t)n;
    }
}

int cl_log_configure(cl_log_level_t level, const char *path)
{
    if (level < CL_LOG_ERROR || level > CL_LOG_DEBUG) {
        cl_log(CL_LOG_ERROR, "invalid log level %d", (int)level);
        return -1;
    }
    atomic_store(&s_level, (int)level);
    if (path == NULL || path[0] == '\0') {
        atomic_store_explicit(&s_use_file, false, memory_order_release);
        return 0;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0644);
    if (fd < 0) {
        int saved = errno;
        atomic_store_explicit(&s_use_file, false, memory_order_release);
        errno = saved;
        cl_log(CL_LOG_ERROR, "cannot open log file '%s': %m; logging to stderr", path);
        return -1;
    }
    pthread_mutex_lock(&s_lock);
    if (s_file_fd < 0) {
        s_file_fd = fd;
    } else {
        /* Atomically points the private fd at the new file. */
        while (dup3(fd, s_file_fd, O_CLOEXEC) < 0 && errno == EINTR)
            ;
        close(fd);
    }
    pthread_mutex_unlock(&s_lock);
    atomic_store_explicit(&s_use_file, true, memory_order_release);
    return 0;
}

void cl_log_set_tag(const char *tag)
{
    pthread_mutex_lock(&s_lock);
    if (tag == NULL) {
        s_tag[0] = '\0';
    } else {
        snprintf(s_tag, sizeof s_tag, "%s", tag);
    }
    pthread_mutex_unlock(&s_lock);
}

bool cl_log_enabled(cl_log_level_t level)
{
    return (int)level <= atomic_load_explicit(&s_level, memory_order_relaxed);
}

static const char *s_level_word(cl_log_level_t level)
{
    switch (level) {
    case CL_LOG_ERROR:
        return "error: ";
    case CL_LOG_WARN:
        return "warning: ";
    case CL_LOG_DEBUG:
        return "debug: ";
    default:
        return "";
    }
}

void cl_log(cl_log_level_t level, const char *fmt, ...)
{
    if (!cl_log_enabled(level))
        return;
    int saved_errno = errno; /* kept for %m and restored for the caller */
    char line[CL_LOG_LINE_MAX];
    size_t room = sizeof line - 1; /* one byte kept for the newline */

    pthread_mutex_lock(&s_lock);
    int n = s_tag[0] != '\0' ? snprintf(line, room, "[collab] %s: %s", s_tag, s_level_word(level))
                             : snprintf(line, room, "[collab] %s", s_level_word(level));
    pthread_mutex_unlock(&s_lock);
    size_t prefix = n < 0 ? 0 : (size_t)n < room ? (size_t)n : room - 1;
    /* Tags come from callers; keep them on one line as well. */
    for (size_t i = 0; i < prefix; i++) {
        if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
            line[i] = '?';
    }

    va_list ap;
    va_start(ap, fmt);
    errno = saved_errno;
    n = vsnprintf(line + prefix, room - prefix, fmt, ap);
    va_end(ap);
    size_t len = prefix;
    if (n > 0) {
        len += (size_t)n;
        if (len >= room) {
            len = room - 1; /* vsnprintf stopped there and wrote a NUL */
            memcpy(line + len - 3, "...", 3);
        }
    }
    for (size_t i = prefix; i < len; i++) {
        unsigned char c = (unsigned char)line[i];
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
            line[i] = '?';
    }
    /* A message that ends in a newline gets no second one. */
    if (len == prefix || line[len - 1] != '\n')
        line[len++] = '\n';
    s_write_all(s_current_fd(), line, len);
    errno = saved_errno;
}
