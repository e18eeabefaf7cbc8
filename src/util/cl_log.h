/*  cl_log.h - the one logger of the core.

    Every line starts with "[collab] " and is written with a single write()
    so that lines of several threads and processes never interleave.  The
    destination and level come from COLLAB_LOG / COLLAB_LOG_FILE (applied by
    cl_log_configure at init); before that, errors, warnings and info lines
    go to stderr (level info).

    A line reads "[collab] <tag>: <severity>message": the tag only when
    set, the severity word for errors ("error: "), warnings ("warning: ")
    and debug lines ("debug: ").  Lines are cut at 4096 bytes (ending in
    "...").  Control characters other than tab and newline are printed as
    '?'; a newline inside a message starts an unprefixed line in the same
    write (for text meant to be copied, like the join line).  errno is
    preserved, so "%m" works and callers can log before they return.
*/
#ifndef CL_LOG_H_INCLUDED
#define CL_LOG_H_INCLUDED

#include <stdbool.h>

typedef enum {
    CL_LOG_ERROR = 0,
    CL_LOG_WARN = 1,
    CL_LOG_INFO = 2,
    CL_LOG_DEBUG = 3
} cl_log_level_t;

/* Sets the level and destination (path == NULL or "" means stderr; the
   file is opened for append).  Returns 0, or -1 if the file cannot be
   opened (then logging stays on stderr and the error is logged). */
int cl_log_configure(cl_log_level_t level, const char *path);

/* Sets a short tag printed after the prefix, e.g. "rank 2" (NULL clears);
   longer than 63 bytes it is cut.  The text is copied. */
void cl_log_set_tag(const char *tag);

/* True when messages of this level are printed. */
bool cl_log_enabled(cl_log_level_t level);

/* printf-style message; a newline is added. */
void cl_log(cl_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define cl_error(...) cl_log(CL_LOG_ERROR, __VA_ARGS__)
#define cl_warn(...) cl_log(CL_LOG_WARN, __VA_ARGS__)
#define cl_info(...) cl_log(CL_LOG_INFO, __VA_ARGS__)
#define cl_debug(...)                                                                              \
    do {                                                                                           \
        if (cl_log_enabled(CL_LOG_DEBUG))                                                          \
            cl_log(CL_LOG_DEBUG, __VA_ARGS__);                                                     \
    } while (0)

#endif
