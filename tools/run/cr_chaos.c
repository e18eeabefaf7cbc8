/*  cr_chaos.c - parsing and checking of --chaos specs.

    Parsing is strict and complete at start-up, so that a typo in a fault
    is reported before any peer runs, never discovered minutes later.  The
    regex of a line trigger is compiled here once; the run loop only calls
    regexec on each line of the watched peer.
*/
#include "cr_chaos.h"
#include "cr_output.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CR_MAX_SECONDS 1.0e7 /* about 115 days: anything larger is a typo */

int cr_parse_seconds(const char *text, double *out)
{
    if (text == NULL || text[0] < '0' || text[0] > '9')
        return -1; /* no sign, no leading dot, no "inf"/"nan" */
    const char *p = text;
    while (*p >= '0' && *p <= '9')
        p++;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return -1;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    double scale = 1.0;
    if (strcmp(p, "ms") == 0)
        scale = 1e-3;
    else if (strcmp(p, "s") != 0 && *p != '\0')
        return -1;
    char num[64];
    size_t len = (size_t)(p - text);
    if (len >= sizeof num)
        return -1;
    memcpy(num, text, len);
    num[len] = '\0';
    errno = 0;
    double v = strtod(num, NULL);
    if (errno != 0 || !isfinite(v))
        return -1;
    v *= scale;
    if (v > CR_MAX_SECONDS)
        return -1;
    *out = v;
    return 0;
}

const char *cr_target_text(cr_target_t t, char *buf, size_t len)
{
    if (t.started)
        snprintf(buf, len, "peer +%d", t.n);
    else
        snprintf(buf, len, "rank %d", t.n);
    return buf;
}

/* Parses a target of [s, s+len): "3" or "+2". */
static int parse_target(const char *s, size_t len, int world, cr_target_t *out, char *err,
                        size_t errlen, const char *spec)
{
    bool started = false;
    if (len > 0 && s[0] == '+') {
        started = true;
        s++;
        len--;
    }
    if (len == 0 || len > 9) {
        cr_set_err(err, errlen, "--chaos '%s': expected a rank or +K, got '%.*s'", spec,
                   (int)(len > 40 ? 40 : len), s);
        return -1;
    }
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            cr_set_err(err, errlen, "--chaos '%s': expected a rank or +K, got '%s%.*s'", spec,
                       started ? "+" : "", (int)(len > 40 ? 40 : len), s);
            return -1;
        }
        v = v * 10 + (s[i] - '0');
    }
    if (started) {
        if (v < 1) {
            cr_set_err(err, errlen, "--chaos '%s': started peers are numbered from +1", spec);
            return -1;
        }
    } else if (v >= world) {
        cr_set_err(err, errlen, "--chaos '%s': rank %ld is out of range (0..%d with -n %d)", spec,
                   v, world - 1, world);
        return -1;
    }
    out->started = started;
    out->n = (int)v;
    return 0;
}

/* Parses WHEN (the text after '@'). */
static int parse_when(cr_chaos_t *c, const char *when, int world, char *err, size_t errlen)
{
    if (strncmp(when, "line:", 5) == 0) {
        const char *t = when + 5;
        const char *colon = strchr(t, ':');
        if (colon == NULL) {
            cr_set_err(err, errlen, "--chaos '%s': expected line:RANK:REGEX", c->spec);
            return -1;
        }
        if (parse_target(t, (size_t)(colon - t), world, &c->line_target, err, errlen, c->spec) != 0)
            return -1;
        const char *re = colon + 1;
        if (re[0] == '\0') {
            cr_set_err(err, errlen, "--chaos '%s': the regular expression is empty", c->spec);
            return -1;
        }
        c->pattern = strdup(re);
        if (c->pattern == NULL) {
            cr_set_err(err, errlen, "out of memory");
            return -1;
        }
        int rc = regcomp(&c->regex, re, REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
            char why[160];
            regerror(rc, &c->regex, why, sizeof why);
            regfree(&c->regex);
            free(c->pattern);
            c->pattern = NULL;
            cr_set_err(err, errlen, "--chaos '%s': bad regular expression '%s': %s", c->spec, re,
                       why);
            return -1;
        }
        c->on_line = true;
        return 0;
    }
    if (cr_parse_seconds(when, &c->at_seconds) != 0) {
        cr_set_err(err, errlen,
                   "--chaos '%s': expected a time such as 5s, 2.5s or 500ms, or line:RANK:REGEX, "
                   "got '%s'",
                   c->spec, when);
        return -1;
    }
    c->on_line = false;
    return 0;
}

cr_chaos_t *cr_chaos_new(const char *spec, int world, char *err, size_t errlen)
{
    if (spec == NULL || spec[0] == '\0') {
        cr_set_err(err, errlen, "--chaos: empty spec");
        return NULL;
    }
    cr_chaos_t *c = calloc(1, sizeof *c);
    if (c == NULL) {
        cr_set_err(err, errlen, "out of memory");
        return NULL;
    }
    c->spec = strdup(spec);
    char *work = strdup(spec);
    if (c->spec == NULL || work == NULL) {
        free(work);
        cr_chaos_destroy(&c);
        cr_set_err(err, errlen, "out of memory");
        return NULL;
    }
    c->target.n = -1;

    /* ACTION[:TARGET]@WHEN; the first '@' ends the head (a regex may hold '@'). */
    char *at = strchr(work, '@');
    if (at == NULL) {
        cr_set_err(err, errlen, "--chaos '%s': expected ACTION:RANK@WHEN (missing '@')", spec);
        goto fail;
    }
    *at = '\0';
    char *head = work, *when = at + 1;
    char *colon = strchr(head, ':');
    size_t alen = colon != NULL ? (size_t)(colon - head) : strlen(head);
    if (alen == 4 && strncmp(head, "kill", 4) == 0)
        c->action = CR_CHAOS_KILL;
    else if (alen == 4 && strncmp(head, "stop", 4) == 0)
        c->action = CR_CHAOS_STOP;
    else if (alen == 5 && strncmp(head, "start", 5) == 0)
        c->action = CR_CHAOS_START;
    else {
        cr_set_err(err, errlen,
                   "--chaos '%s': unknown action '%.*s' (expected kill, stop or start)", spec,
                   (int)(alen > 40 ? 40 : alen), head);
        goto fail;
    }
    if (c->action == CR_CHAOS_START) {
        if (colon != NULL) {
            if (colon[1] == '+') {
                cr_set_err(err, errlen, "--chaos '%s': start takes a rank, not +K", spec);
                goto fail;
            }
            if (parse_target(colon + 1, strlen(colon + 1), world, &c->target, err, errlen, spec) !=
                0)
                goto fail;
        }
    } else {
        if (colon == NULL) {
            cr_set_err(err, errlen, "--chaos '%s': %s needs a target (%s:RANK@WHEN)", spec, head,
                       head);
            goto fail;
        }
        if (parse_target(colon + 1, strlen(colon + 1), world, &c->target, err, errlen, spec) != 0)
            goto fail;
    }

    if (c->action == CR_CHAOS_STOP) {
        /* The duration follows the last '+' (a regex may hold '+' too). */
        char *plus = strrchr(when, '+');
        if (plus == NULL || cr_parse_seconds(plus + 1, &c->stop_seconds) != 0) {
            cr_set_err(err, errlen, "--chaos '%s': stop needs a duration: stop:RANK@WHEN+SECONDS",
                       spec);
            goto fail;
        }
        if (c->stop_seconds <= 0.0) {
            cr_set_err(err, errlen, "--chaos '%s': the stop duration must be positive", spec);
            goto fail;
        }
        *plus = '\0';
    }
    if (parse_when(c, when, world, err, errlen) != 0)
        goto fail;
    free(work);
    return c;
fail:
    free(work);
    cr_chaos_destroy(&c);
    return NULL;
}

void cr_chaos_destroy(cr_chaos_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    cr_chaos_t *c = *self_p;
    if (c->pattern != NULL)
        regfree(&c->regex);
    free(c->pattern);
    free(c->spec);
    free(c);
    *self_p = NULL;
}

int cr_chaos_check_list(cr_chaos_t *const *list, size_t n, char *err, size_t errlen)
{
    int starts = 0;
    for (size_t i = 0; i < n; i++)
        if (list[i]->action == CR_CHAOS_START)
            starts++;
    for (size_t i = 0; i < n; i++) {
        const cr_chaos_t *c = list[i];
        const cr_target_t *ts[2] = {&c->target, c->on_line ? &c->line_target : NULL};
        for (int k = 0; k < 2; k++) {
            if (ts[k] != NULL && ts[k]->started && ts[k]->n > starts) {
                cr_set_err(err, errlen,
                           "--chaos '%s': peer +%d is never started (%d start fault%s given)",
                           c->spec, ts[k]->n, starts, starts == 1 ? "" : "s");
                return -1;
            }
        }
    }
    return 0;
}
