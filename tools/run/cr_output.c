/*  cr_output.c - line-preserving pass-through of the peers' output.

    collab-run is single-threaded and is the only writer of its stdout and
    stderr while peers run (peers write into pipes), so forwarding each
    whole line with one cr_write_all call is enough to keep lines intact.
    Untagged output is forwarded byte for byte: a final line without a
    newline stays without one.  Tagged output always ends lines with a
    newline, so that the next prefix starts a line.
*/
#include "cr_output.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static bool broken[3]; /* stdin, stdout, stderr: reader went away */

void cr_write_all(int fd, const char *buf, size_t len)
{
    if (fd >= 0 && fd < 3 && broken[fd])
        return;
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w > 0) {
            buf += w;
            len -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            (void)poll(&p, 1, 1000);
            continue;
        }
        if (fd >= 0 && fd < 3)
            broken[fd] = true; /* EPIPE or a dead terminal: drop the rest */
        return;
    }
}

void cr_say(const char *fmt, ...)
{
    char line[2048];
    int n = snprintf(line, sizeof line, "collab-run: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    cr_write_all(2, line, len);
}

int cr_stream_init(cr_stream_t *s, int fd, int out_fd, const char *prefix)
{
    memset(s, 0, sizeof *s);
    s->fd = fd;
    s->out_fd = out_fd;
    if (prefix != NULL)
        snprintf(s->prefix, sizeof s->prefix, "%s", prefix);
    s->buf = malloc(CR_LINE_MAX + 1);
    if (s->buf == NULL) {
        close(fd);
        s->fd = -1;
        return -1;
    }
    return 0;
}

/* Forwards one piece: a whole line (newline = true) or the unterminated
   tail of a stream / a piece of an overlong line (newline = false). */
static void emit(cr_stream_t *s, const char *p, size_t n, bool newline, cr_line_fn *fn, void *ctx)
{
    bool tagged = s->prefix[0] != '\0';
    size_t plen = strlen(s->prefix);
    char *out = malloc(plen + n + 1);
    if (out != NULL) {
        memcpy(out, s->prefix, plen);
        memcpy(out + plen, p, n);
        size_t total = plen + n;
        if (newline || tagged)
            out[total++] = '\n';
        cr_write_all(s->out_fd, out, total);
        free(out);
    }
    if (fn != NULL) {
        /* The callback gets a NUL-terminated copy (regexec needs one). */
        char *copy = malloc(n + 1);
        if (copy != NULL) {
            memcpy(copy, p, n);
            copy[n] = '\0';
            fn(ctx, copy, n);
            free(copy);
        }
    }
}

/* Forwards every complete line in buf and keeps the rest. */
static void split_lines(cr_stream_t *s, cr_line_fn *fn, void *ctx)
{
    size_t start = 0;
    for (;;) {
        char *nl = memchr(s->buf + start, '\n', s->len - start);
        if (nl == NULL)
            break;
        size_t n = (size_t)(nl - (s->buf + start));
        emit(s, s->buf + start, n, true, fn, ctx);
        start += n + 1;
    }
    if (start > 0) {
        memmove(s->buf, s->buf + start, s->len - start);
        s->len -= start;
    }
    if (s->len == CR_LINE_MAX) { /* overlong line: forward this piece now */
        emit(s, s->buf, s->len, false, fn, ctx);
        s->len = 0;
    }
}

int cr_stream_read(cr_stream_t *s, cr_line_fn *fn, void *ctx)
{
    if (s->fd < 0)
        return -1;
    size_t room = CR_LINE_MAX - s->len;
    ssize_t r;
    do
        r = read(s->fd, s->buf + s->len, room);
    while (r < 0 && errno == EINTR);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    if (r <= 0) {
        cr_stream_close(s, fn, ctx);
        return -1;
    }
    s->len += (size_t)r;
    split_lines(s, fn, ctx);
    return 1;
}

void cr_stream_drain(cr_stream_t *s, cr_line_fn *fn, void *ctx)
{
    /* Bounded: a runaway grandchild that keeps writing cannot hold us. */
    for (int i = 0; i < 1024; i++)
        if (cr_stream_read(s, fn, ctx) <= 0)
            return;
}

void cr_stream_close(cr_stream_t *s, cr_line_fn *fn, void *ctx)
{
    if (s->buf != NULL && s->len > 0)
        emit(s, s->buf, s->len, false, fn, ctx);
    s->len = 0;
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    free(s->buf);
    s->buf = NULL;
}

void cr_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
