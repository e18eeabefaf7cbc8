/*  cr_output.h - collab-run's handling of the peers' output streams.

    Every peer's stdout and stderr arrive through pipes.  A stream cuts
    what it reads into lines and forwards each whole line with one write
    (prefixed with "[rank] " under --tag-output), so lines of different
    peers never mix; every line is also handed to a callback (chaos line
    triggers).  A line longer than CR_LINE_MAX is forwarded in pieces.
    The helpers that word collab-run's own messages live here too.
*/
#ifndef CR_OUTPUT_H_INCLUDED
#define CR_OUTPUT_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

#define CR_LINE_MAX 65536 /* longest line kept whole */

/* Called for each line read (without its newline; NUL-terminated copy). */
typedef void(cr_line_fn)(void *ctx, const char *line, size_t len);

typedef struct {
    int fd;          /* read end of the pipe (nonblocking), -1 once closed */
    int out_fd;      /* 1 or 2: where lines are forwarded */
    char prefix[32]; /* "[3] " under --tag-output, else empty */
    char *buf;       /* pending partial line (CR_LINE_MAX + 1 bytes) */
    size_t len;      /* bytes pending in buf */
} cr_stream_t;

/* Sets up a stream reading fd and forwarding to out_fd.  prefix may be
   NULL (untagged).  Returns 0, or -1 when out of memory. */
int cr_stream_init(cr_stream_t *s, int fd, int out_fd, const char *prefix);

/* Reads once (up to 64 KiB) from the stream.  Returns 1 when data was
   read, 0 when nothing was available, -1 when the stream reached its end
   (then it has flushed its partial line and closed the fd). */
int cr_stream_read(cr_stream_t *s, cr_line_fn *fn, void *ctx);

/* Reads until nothing more is available now or the stream ends. */
void cr_stream_drain(cr_stream_t *s, cr_line_fn *fn, void *ctx);

/* Flushes a partial line (with a newline added when tagged), closes the
   fd and frees the buffer.  Safe to call twice. */
void cr_stream_close(cr_stream_t *s, cr_line_fn *fn, void *ctx);

/* Writes all of buf to fd (retrying on EINTR, waiting on EAGAIN).  Once a
   descriptor reports EPIPE, later writes to it are dropped silently. */
void cr_write_all(int fd, const char *buf, size_t len);

/* Writes "collab-run: <message>\n" to stderr in one write. */
void cr_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Formats a message into err (errlen bytes, always NUL-terminated,
   truncated when longer) for the parsers that report why they failed.
   Does nothing when err is NULL or errlen is 0. */
void cr_set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
