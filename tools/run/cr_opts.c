/*  cr_opts.c - strict parsing of collab-run's options.

    Each option accepts "--opt VALUE" and "--opt=VALUE" (and "-nN"), and
    every value is checked here, so that a run never starts with a half
    understood command line.  Chaos specs are parsed after -n is known,
    because their rank ranges depend on it.
*/
#include "cr_opts.h"
#include "cr_output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CR_STR2(x) #x
#define CR_STR(x) CR_STR2(x)

const char *cr_opts_usage(void)
{
    return "usage: collab-run -n N [options] [--] program [args...]\n"
           "\n"
           "Starts N peers of an MPI program on this machine as one mpicollab swarm\n"
           "(the local equivalent of mpiexec -n N).\n"
           "\n"
           "options:\n"
           "  -n, -np N            number of peers (1.." CR_STR(
               CR_MAX_PEERS) ")\n"
                             "  --abi mpich|ompi     MPI ABI of the program (default: read from "
                             "the\n"
                             "                       program's ELF dependencies)\n"
                             "  --mode preload|replace\n"
                             "                       preload: LD_PRELOAD the library (default);\n"
                             "                       replace: LD_LIBRARY_PATH=<libdir>/mpicollab\n"
                             "  --tag-output         prefix every output line with \"[rank] \"\n"
                             "  --timeout SECONDS    kill every peer after SECONDS and exit 124\n"
                             "  --bind spread|none   spread: give each peer its own share of the "
                             "cores\n"
                             "                       (default); none: leave placement to the "
                             "system\n"
                             "  --libdir DIR         where the mpicollab libraries are\n"
                             "                       (default: <collab-run's folder>/../lib)\n"
                             "  --chaos SPEC         inject a fault (repeatable):\n"
                             "                         kill:RANK@WHEN  stop:RANK@WHEN+SECONDS\n"
                             "                         start@WHEN      start:RANK@WHEN\n"
                             "                       WHEN = 5s | 2.5s | 500ms | line:RANK:REGEX;\n"
                             "                       RANK may be +K, the K-th started peer\n"
                             "  -h, --help           show this text\n"
                             "  --version            show the version\n"
                             "\n"
                             "Exit status: the worst status of the peers not killed on purpose\n"
                             "(128+N for signal N), 124 on --timeout, 2 on a usage error.\n";
}

void cr_opts_clear(cr_opts_t *o)
{
    if (o == NULL)
        return;
    for (size_t i = 0; i < o->nchaos; i++)
        cr_chaos_destroy(&o->chaos[i]);
    free(o->chaos);
    o->chaos = NULL;
    o->nchaos = 0;
}

/* Matches argv[*i] against a long option that takes a value (--name VALUE
   or --name=VALUE).  Returns 1 and sets *val on a match, 0 if the word is
   another option, -1 if the value is missing. */
static int take_value(int argc, char **argv, int *i, const char *name, const char **val)
{
    const char *a = argv[*i];
    size_t len = strlen(name);
    if (strncmp(a, name, len) != 0)
        return 0;
    if (a[len] == '=') {
        *val = a + len + 1;
        return 1;
    }
    if (a[len] != '\0')
        return 0;
    if (*i + 1 >= argc)
        return -1;
    (*i)++;
    *val = argv[*i];
    return 1;
}

static int parse_count(const char *s, int *out)
{
    if (s == NULL || s[0] < '0' || s[0] > '9')
        return -1;
    long v = 0;
    for (const char *p = s; *p != '\0'; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
        if (v > 1000000)
            return -1;
    }
    *out = (int)v;
    return 0;
}

int cr_opts_parse(int argc, char **argv, cr_opts_t *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->abi = CR_ABI_UNKNOWN;
    o->mode = CR_MODE_PRELOAD;
    o->bind = true;
    const char **specs = calloc((size_t)(argc > 0 ? argc : 1), sizeof *specs);
    size_t nspecs = 0;
    if (specs == NULL) {
        cr_set_err(err, errlen, "out of memory");
        return -1;
    }
    int n_seen = 0;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        int r;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == '\0')
            break; /* the program */
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            o->help = true;
            free(specs);
            return 0;
        }
        if (strcmp(a, "--version") == 0) {
            o->version = true;
            free(specs);
            return 0;
        }
        if (strcmp(a, "--tag-output") == 0) {
            o->tag_output = true;
            continue;
        }
        /* -n N, -nN, -np N, --n=N, --np N */
        if (strcmp(a, "-n") == 0 || strcmp(a, "-np") == 0 || strcmp(a, "--np") == 0 ||
            strcmp(a, "--n") == 0) {
            if (i + 1 >= argc) {
                cr_set_err(err, errlen, "%s needs a number of peers", a);
                goto fail;
            }
            val = argv[++i];
        } else if (strncmp(a, "-n", 2) == 0 && a[2] >= '0' && a[2] <= '9') {
            val = a + 2;
        } else if (strncmp(a, "--np=", 5) == 0 || strncmp(a, "--n=", 4) == 0) {
            val = strchr(a, '=') + 1;
        }
        if (val != NULL) {
            if (parse_count(val, &o->n) != 0 || o->n < 1 || o->n > CR_MAX_PEERS) {
                cr_set_err(err, errlen, "-n '%s': expected a number of peers from 1 to %d", val,
                           CR_MAX_PEERS);
                goto fail;
            }
            n_seen = 1;
            continue;
        }
        if ((r = take_value(argc, argv, &i, "--abi", &val)) != 0) {
            if (r < 0) {
                cr_set_err(err, errlen, "--abi needs a value: mpich or ompi");
                goto fail;
            }
            if (strcmp(val, "mpich") == 0)
                o->abi = CR_ABI_MPICH;
            else if (strcmp(val, "ompi") == 0 || strcmp(val, "openmpi") == 0)
                o->abi = CR_ABI_OMPI;
            else {
                cr_set_err(err, errlen, "--abi '%s': expected mpich or ompi", val);
                goto fail;
            }
            continue;
        }
        if ((r = take_value(argc, argv, &i, "--mode", &val)) != 0) {
            if (r < 0) {
                cr_set_err(err, errlen, "--mode needs a value: preload or replace");
                goto fail;
            }
            if (strcmp(val, "preload") == 0)
                o->mode = CR_MODE_PRELOAD;
            else if (strcmp(val, "replace") == 0)
                o->mode = CR_MODE_REPLACE;
            else {
                cr_set_err(err, errlen, "--mode '%s': expected preload or replace", val);
                goto fail;
            }
            continue;
        }
        if ((r = take_value(argc, argv, &i, "--bind", &val)) != 0) {
            if (r < 0) {
                cr_set_err(err, errlen, "--bind needs a value: spread or none");
                goto fail;
            }
            if (strcmp(val, "spread") == 0)
                o->bind = true;
            else if (strcmp(val, "none") == 0)
                o->bind = false;
            else {
                cr_set_err(err, errlen, "--bind '%s': expected spread or none", val);
                goto fail;
            }
            continue;
        }
        if ((r = take_value(argc, argv, &i, "--timeout", &val)) != 0) {
            if (r < 0) {
                cr_set_err(err, errlen, "--timeout needs a number of seconds");
                goto fail;
            }
            if (cr_parse_seconds(val, &o->timeout) != 0 || o->timeout <= 0.0) {
                cr_set_err(err, errlen,
                           "--timeout '%s': expected a positive number of seconds (e.g. 30, 2.5s)",
                           val);
                goto fail;
            }
            continue;
        }
        if ((r = take_value(argc, argv, &i, "--libdir", &val)) != 0) {
            if (r < 0 || val[0] == '\0') {
                cr_set_err(err, errlen, "--libdir needs a folder");
                goto fail;
            }
            o->libdir = val;
            continue;
        }
        if ((r = take_value(argc, argv, &i, "--chaos", &val)) != 0) {
            if (r < 0) {
                cr_set_err(err, errlen, "--chaos needs a spec such as kill:1@5s");
                goto fail;
            }
            specs[nspecs++] = val;
            continue;
        }
        cr_set_err(err, errlen, "unknown option '%s'", a);
        goto fail;
    }
    if (!n_seen) {
        cr_set_err(err, errlen, "the number of peers is required (-n N)");
        goto fail;
    }
    if (i >= argc) {
        cr_set_err(err, errlen, "no program given");
        goto fail;
    }
    o->argv = argv + i;

    if (nspecs > 0) {
        o->chaos = calloc(nspecs, sizeof *o->chaos);
        if (o->chaos == NULL) {
            cr_set_err(err, errlen, "out of memory");
            goto fail;
        }
        for (size_t k = 0; k < nspecs; k++) {
            o->chaos[k] = cr_chaos_new(specs[k], o->n, err, errlen);
            if (o->chaos[k] == NULL)
                goto fail;
            o->nchaos++;
        }
        if (cr_chaos_check_list(o->chaos, o->nchaos, err, errlen) != 0)
            goto fail;
    }
    free(specs);
    return 0;
fail:
    free(specs);
    cr_opts_clear(o);
    return -1;
}
