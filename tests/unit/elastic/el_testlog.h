/*  el_testlog.h - log capture for the selftests of src/elastic.

    el_log_start() sends the log to a fresh file in a private temporary
    directory; el_log_take() returns what was written since (caller frees)
    and sends the log back to stderr.  el_count() counts occurrences of a
    text.  Header-only, for tests only.
*/
#ifndef EL_TESTLOG_H_INCLUDED
#define EL_TESTLOG_H_INCLUDED

#include "util/cl_log.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char el_log_dir[64];   /* private directory of this test process */
static char el_log_path[128]; /* current capture file */
static int el_log_serial;     /* captures so far */

/* Starts capturing log lines of level <= level into a new file. */
static inline void el_log_start(cl_log_level_t level)
{
    if (el_log_dir[0] == '\0') {
        snprintf(el_log_dir, sizeof el_log_dir, "/tmp/cl_elastic_test.XXXXXX");
        if (mkdtemp(el_log_dir) == NULL) {
            perror("mkdtemp");
            exit(2);
        }
    }
    snprintf(el_log_path, sizeof el_log_path, "%s/log%d.txt", el_log_dir, el_log_serial++);
    if (cl_log_configure(level, el_log_path) != 0) {
        fprintf(stderr, "cannot capture the log in %s\n", el_log_path);
        exit(2);
    }
}

/* Stops capturing; returns the captured text (malloc'ed, "" when empty). */
static inline char *el_log_take(void)
{
    cl_log_configure(CL_LOG_INFO, NULL);
    char *text = NULL;
    FILE *f = fopen(el_log_path, "r");
    if (f != NULL) {
        struct stat st;
        if (fstat(fileno(f), &st) == 0) {
            text = calloc(1, (size_t)st.st_size + 1);
            if (text != NULL && fread(text, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
                text[0] = '\0';
        }
        fclose(f);
        unlink(el_log_path);
    }
    return text != NULL ? text : calloc(1, 1);
}

/* Occurrences of part in text. */
static inline int el_count(const char *text, const char *part)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, part)) != NULL; p += strlen(part))
        n++;
    return n;
}

/* Removes the private directory (call at the end of main). */
static inline void el_log_cleanup(void)
{
    if (el_log_dir[0] != '\0')
        rmdir(el_log_dir);
}

#endif
