/*  cl_text_test.c - selftest of cl_text: quoting for messages, edit distance,
    error messages of parsers. */
#include "util/cl_selftest.h"
#include "util/cl_text.h"

int main(void)
{
    char out[64];
    CL_CHECK_STREQ(cl_text_quote("plain text", 100, out, sizeof out), "plain text");
    CL_CHECK_STREQ(cl_text_quote("a\nb\\c\x7f\xff", 100, out, sizeof out),
                   "a\\x0ab\\x5cc\\x7f\\xff");
    CL_CHECK_STREQ(cl_text_quote(NULL, 100, out, sizeof out), "(null)");
    CL_CHECK_STREQ(cl_text_quote("abcdefgh", 4, out, sizeof out), "abcd...");
    CL_CHECK_STREQ(cl_text_quote("abcd", 4, out, sizeof out), "abcd");
    /* A small buffer is never overrun and says the text was cut. */
    char small[8];
    memset(small, 'z', sizeof small);
    CL_CHECK_STREQ(cl_text_quote("abcdefghijkl", 100, small, sizeof small), "abcd...");
    CL_CHECK_STREQ(cl_text_quote("\x01\x02", 100, small, sizeof small), "\\x01...");
    char one[1];
    CL_CHECK_STREQ(cl_text_quote("abc", 100, one, sizeof one), "");
    CL_CHECK(cl_text_quote("abc", 100, NULL, 0) == NULL);

    CL_CHECK(cl_text_distance("", "") == 0);
    CL_CHECK(cl_text_distance("abc", "abc") == 0);
    CL_CHECK(cl_text_distance("COLLAB_TIMOUT", "COLLAB_TIMEOUT") == 1);
    CL_CHECK(cl_text_distance("kitten", "sitting") == 3);
    CL_CHECK(cl_text_distance("", "abcd") == 4);
    CL_CHECK(cl_text_distance("abcd", "") == 4);
    char big[200];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CL_CHECK(cl_text_distance(big, "a") == (size_t)-1);

    char err[8] = "unset";
    CL_CHECK(cl_text_fail(err, sizeof err, "bad %s", "x") == -1);
    CL_CHECK_STREQ(err, "bad x");
    CL_CHECK(cl_text_fail(err, sizeof err, "%s", "much too long") == -1);
    CL_CHECK_STREQ(err, "much to");
    CL_CHECK(cl_text_fail(err, 0, "ignored") == -1);
    CL_CHECK_STREQ(err, "much to");
    CL_CHECK(cl_text_fail(NULL, 16, "ignored") == -1);
    return cl_selftest_end("cl_text_test");
}
