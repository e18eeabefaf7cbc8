/*  cl_text.h - small text helpers shared by the parsers of the core.

    Error messages quote what the user or the network gave us; cl_text_quote
    makes such text safe to print on one line (escapes, length cap).
*/
#ifndef CL_TEXT_H_INCLUDED
#define CL_TEXT_H_INCLUDED

#include <stddef.h>

/* Copies text into out (always NUL-terminated when len > 0) for use in a
   one-line message: bytes outside printable ASCII and the backslash are
   written as \xHH, and text longer than max_chars input bytes is cut and
   ends in "...".  NULL text gives "(null)".  Returns out. */
char *cl_text_quote(const char *text, size_t max_chars, char *out, size_t len);

/* Edit distance (insertions, deletions, substitutions) between a and b,
   or (size_t)-1 when either is longer than 128 bytes. */
size_t cl_text_distance(const char *a, const char *b);

/* Formats a message into err (errlen bytes, always NUL-terminated, cut
   when longer) for a parser that reports why it refused its input.  Does
   not write when err is NULL or errlen is 0.  Returns -1, so that a parser
   can write `return cl_text_fail(err, errlen, ...);`. */
int cl_text_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
