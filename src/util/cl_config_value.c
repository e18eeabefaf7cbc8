/*  cl_config_value.c - strict parsers for the values of COLLAB_* variables.

    Numbers are read digit by digit instead of with strtol/strtod: those
    skip blanks, accept signs, hex, "inf" and "nan", and read "0,5" or
    "0.5" depending on the locale the host program chose.  A number's
    significant digits are gathered into a 64-bit integer (digits beyond
    the 19th only shift the exponent), and the value is that integer times
    a power of ten, which is exact enough for every setting we read.

    The swarm key file is opened non-blocking and checked with fstat before
    anything is read, so a FIFO or a device named by mistake gives an error
    instead of a hang, and every buffer that held key bytes is wiped.
*/
#include "util/cl_config_value.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static int __attribute__((format(printf, 3, 4)))
s_why(char *why, size_t whylen, const char *fmt, ...)
{
    if (why != NULL && whylen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int cl_config_value_int(const char *text, long min, long max, long *out, char *why, size_t whylen)
{
    long v = 0;
    size_t n = strlen(text);
    bool ok = n >= 1 && n <= 18;
    for (size_t i = 0; ok && i < n; i++) {
        ok = text[i] >= '0' && text[i] <= '9';
        v = v * 10 + (text[i] - '0');
    }
    if (!ok || v < min || v > max)
        return s_why(why, whylen, "expected an integer from %ld to %ld", min, max);
    *out = v;
    return 0;
}

int cl_config_value_bool(const char *text, bool *out, char *why, size_t whylen)
{
    static const char *const yes[] = {"1", "true", "yes"};
    static const char *const no[] = {"0", "false", "no"};
    for (int i = 0; i < 3; i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(text, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return s_why(why, whylen, "expected 1 or 0 (also true/false, yes/no)");
}

int cl_config_value_number(const char *text, double *out)
{
    const char *p = text;
    uint64_t mantissa = 0;
    int digits = 0;    /* significant digits kept in mantissa */
    long exponent = 0; /* decimal exponent applied to mantissa */
    int seen = 0;      /* digits seen in total, before and after the point */
    for (; *p >= '0' && *p <= '9'; p++, seen++) {
        if (digits < 19) {
            mantissa = mantissa * 10 + (uint64_t)(*p - '0');
            digits += mantissa != 0;
        } else {
            exponent++;
        }
    }
    if (*p == '.') {
        p++;
        for (; *p >= '0' && *p <= '9'; p++, seen++) {
            if (digits < 19) {
                mantissa = mantissa * 10 + (uint64_t)(*p - '0');
                digits += mantissa != 0;
                exponent--;
            }
        }
    }
    if (seen == 0)
        return -1;
    if (*p == 'e' || *p == 'E') {
        p++;
        int sign = 1;
        if (*p == '+' || *p == '-')
            sign = *p++ == '-' ? -1 : 1;
        long e = 0;
        int edigits = 0;
        for (; *p >= '0' && *p <= '9'; p++, edigits++) {
            if (e < 100000)
                e = e * 10 + (*p - '0');
        }
        if (edigits == 0)
            return -1;
        exponent += sign * e;
    }
    if (*p != '\0')
        return -1;
    double v = mantissa == 0 ? 0.0 : (double)mantissa * pow(10.0, (double)exponent);
    if (!isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int cl_config_value_seconds(const char *text, double *out, char *why, size_t whylen)
{
    char number[64];
    size_t n = text != NULL ? strlen(text) : 0;
    double scale = 1.0;
    if (n > 2 && strcmp(text + n - 2, "ms") == 0) {
        n -= 2;
        scale = 0.001;
    } else if (n > 1 && text[n - 1] == 's') {
        n -= 1;
    }
    double v;
    if (text == NULL || n == 0 || n >= sizeof number)
        goto err_value;
    memcpy(number, text, n);
    number[n] = '\0';
    if (cl_config_value_number(number, &v) != 0)
        goto err_value;
    v *= scale;
    if (!(v >= CL_SECONDS_MIN) || !(v <= CL_SECONDS_MAX))
        goto err_value;
    *out = v;
    return 0;
err_value:
    return s_why(why, whylen,
                 "expected a duration in seconds from %g to %g, like 5, 0.5, 2s or 250ms",
                 CL_SECONDS_MIN, CL_SECONDS_MAX);
}

int cl_config_value_key(const char *text, char **out, char *why, size_t whylen)
{
    size_t n = strlen(text);
    if (n < CL_SWARM_KEY_MIN || n > CL_SWARM_KEY_MAX)
        return s_why(why, whylen, "expected a secret of %d to %d bytes", CL_SWARM_KEY_MIN,
                     CL_SWARM_KEY_MAX);
    char *copy = malloc(n + 1);
    if (copy == NULL)
        return s_why(why, whylen, "out of memory");
    memcpy(copy, text, n + 1);
    *out = copy;
    return 0;
}

int cl_config_value_key_file(const char *path, char **out, char *why, size_t whylen)
{
    if (path[0] == '\0')
        return s_why(why, whylen, "expected the path of a file holding the swarm key");
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0)
        return s_why(why, whylen, "expected a readable file holding the swarm key (%s)",
                     errno == ELOOP ? "it is a symbolic link; give the file itself"
                                    : strerror(errno));
    char buf[CL_SWARM_KEY_MAX + 3]; /* key, "\r\n", one byte to detect excess */
    size_t len = 0;
    int rc = -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        s_why(why, whylen, "expected a readable file holding the swarm key (%s)", strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        s_why(why, whylen, "expected a regular file holding the swarm key");
        goto out;
    }
    if (st.st_uid != geteuid()) {
        s_why(why, whylen, "expected a file owned by this user (it belongs to user %u)",
              (unsigned)st.st_uid);
        goto out;
    }
    if ((st.st_mode & 077) != 0) {
        s_why(why, whylen,
              "expected a file that group and others cannot access (mode is %04o; run chmod "
              "600 on it)",
              (unsigned)(st.st_mode & 07777));
        goto out;
    }
    for (;;) {
        ssize_t got = read(fd, buf + len, sizeof buf - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            s_why(why, whylen, "expected a readable file holding the swarm key (%s)",
                  strerror(errno));
            goto out;
        }
        if (got == 0)
            break;
        len += (size_t)got;
        if (len == sizeof buf)
            break;
    }
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
        len--;
    if (len < CL_SWARM_KEY_MIN || len > CL_SWARM_KEY_MAX) {
        s_why(why, whylen, "expected a file holding a secret of %d to %d bytes", CL_SWARM_KEY_MIN,
              CL_SWARM_KEY_MAX);
        goto out;
    }
    if (memchr(buf, '\0', len) != NULL) {
        s_why(why, whylen, "expected a key file without NUL bytes");
        goto out;
    }
    char *key = malloc(len + 1);
    if (key == NULL) {
        s_why(why, whylen, "out of memory");
        goto out;
    }
    memcpy(key, buf, len);
    key[len] = '\0';
    *out = key;
    rc = 0;
out:
    sodium_memzero(buf, sizeof buf);
    close(fd);
    return rc;
}
