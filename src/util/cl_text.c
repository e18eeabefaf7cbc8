/*  cl_text.c - small text helpers shared by the parsers of the core.

    cl_text_quote escapes everything outside printable ASCII, so that a
    quoted value can never break a log line or a terminal, and caps the
    length so that a megabyte of garbage does not end up in one message.
    cl_text_distance is the classic two-row Levenshtein distance, used to
    suggest the variable a user probably meant.
*/
#include "util/cl_text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

char *cl_text_quote(const char *text, size_t max_chars, char *out, size_t len)
{
    if (out == NULL || len == 0)
        return out;
    if (text == NULL)
        text = "(null)";
    size_t o = 0;
    size_t i = 0;
    for (; text[i] != '\0' && i < max_chars; i++) {
        unsigned char c = (unsigned char)text[i];
        char piece[5];
        size_t plen;
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            piece[0] = (char)c;
            plen = 1;
        } else {
            snprintf(piece, sizeof piece, "\\x%02x", c);
            plen = 4;
        }
        if (o + plen + 4 > len) /* keep room for "..." and the NUL */
            break;
        memcpy(out + o, piece, plen);
        o += plen;
    }
    if (text[i] != '\0' && o + 4 <= len) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o < len ? o : len - 1] = '\0';
    return out;
}

size_t cl_text_distance(const char *a, const char *b)
{
    enum { MAX = 128 };
    size_t la = strlen(a), lb = strlen(b);
    if (la > MAX || lb > MAX)
        return (size_t)-1;
    size_t prev[MAX + 1], cur[MAX + 1];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t subst = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1;
            size_t ins = cur[j - 1] + 1;
            size_t best = subst < del ? subst : del;
            cur[j] = best < ins ? best : ins;
        }
        memcpy(prev, cur, (lb + 1) * sizeof prev[0]);
    }
    return prev[lb];
}

int cl_text_fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err != NULL && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}
