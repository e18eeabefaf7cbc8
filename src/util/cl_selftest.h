/*  cl_selftest.h - checks for the selftests of the core.

    A selftest is a plain program: CL_CHECK records a failure (with file,
    line and the failed expression) and carries on, so one run reports
    every broken case; cl_selftest_end() prints a summary and gives the
    exit status (0 only when nothing failed).  Header-only, for tests only.
*/
#ifndef CL_SELFTEST_H_INCLUDED
#define CL_SELFTEST_H_INCLUDED

#include <stdio.h>
#include <string.h>

static int cl_selftest_checks;   /* checks evaluated */
static int cl_selftest_failures; /* checks that failed */

#define CL_CHECK(cond)                                                                             \
    do {                                                                                           \
        cl_selftest_checks++;                                                                      \
        if (!(cond)) {                                                                             \
            cl_selftest_failures++;                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

/* Checks that string s contains part; prints both when it does not. */
#define CL_CHECK_CONTAINS(s, part)                                                                 \
    do {                                                                                           \
        const char *cl_s_ = (s), *cl_p_ = (part);                                                  \
        cl_selftest_checks++;                                                                      \
        if (cl_s_ == NULL || strstr(cl_s_, cl_p_) == NULL) {                                       \
            cl_selftest_failures++;                                                                \
            fprintf(stderr, "%s:%d: check failed: \"%s\" does not contain \"%s\"\n", __FILE__,     \
                    __LINE__, cl_s_ != NULL ? cl_s_ : "(null)", cl_p_);                            \
        }                                                                                          \
    } while (0)

/* Checks that two strings are equal; prints both when they are not. */
#define CL_CHECK_STREQ(a, b)                                                                       \
    do {                                                                                           \
        const char *cl_a_ = (a), *cl_b_ = (b);                                                     \
        cl_selftest_checks++;                                                                      \
        if (cl_a_ == NULL || cl_b_ == NULL || strcmp(cl_a_, cl_b_) != 0) {                         \
            cl_selftest_failures++;                                                                \
            fprintf(stderr, "%s:%d: check failed: \"%s\" != \"%s\"\n", __FILE__, __LINE__,         \
                    cl_a_ != NULL ? cl_a_ : "(null)", cl_b_ != NULL ? cl_b_ : "(null)");           \
        }                                                                                          \
    } while (0)

/* Prints the summary for test `name`; returns the process exit status. */
static inline int cl_selftest_end(const char *name)
{
    if (cl_selftest_failures > 0) {
        fprintf(stderr, "%s: %d of %d checks FAILED\n", name, cl_selftest_failures,
                cl_selftest_checks);
        return 1;
    }
    printf("%s: %d checks passed\n", name, cl_selftest_checks);
    return 0;
}

#endif
