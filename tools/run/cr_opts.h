/*  cr_opts.h - collab-run's command line.

    collab-run -n N [--abi mpich|ompi] [--mode preload|replace]
               [--tag-output] [--timeout SECONDS] [--libdir DIR]
               [--bind spread|none]
               [--chaos SPEC]... [--] prog args...

    Parsing stops at "--" or at the first word that is not an option, so
    the program's own options are never taken for collab-run's.
*/
#ifndef CR_OPTS_H_INCLUDED
#define CR_OPTS_H_INCLUDED

#include "cr_chaos.h"
#include "cr_elf.h"

#include <stdbool.h>
#include <stddef.h>

#define CR_MAX_PEERS 1024 /* -n limit: four pipes' worth of descriptors each */

typedef enum { CR_MODE_PRELOAD = 0, CR_MODE_REPLACE = 1 } cr_mode_t;

typedef struct {
    int n;              /* -n: number of peers, 1..CR_MAX_PEERS */
    cr_abi_t abi;       /* --abi, CR_ABI_UNKNOWN = detect from the program */
    cr_mode_t mode;     /* --mode, default preload */
    bool tag_output;    /* --tag-output */
    bool bind;          /* --bind spread (default) / none: pin peers to cores */
    double timeout;     /* --timeout seconds, 0 = none */
    const char *libdir; /* --libdir, NULL = next to the executable */
    cr_chaos_t **chaos; /* --chaos faults, in the order given (owned) */
    size_t nchaos;      /* entries in chaos */
    char **argv;        /* program and its arguments (points into main's argv) */
    bool help;          /* -h / --help given: print usage, run nothing */
    bool version;       /* --version given */
} cr_opts_t;

/* Parses argv into *o (zeroed first).  Returns 0, or -1 with a one-line
   reason in err (unknown option, missing or bad value, no program, chaos
   spec errors).  On success with o->help or o->version nothing else is
   required.  Free with cr_opts_clear in both cases. */
int cr_opts_parse(int argc, char **argv, cr_opts_t *o, char *err, size_t errlen);

/* Frees the chaos list; accepts a zeroed *o. */
void cr_opts_clear(cr_opts_t *o);

/* The --help text. */
const char *cr_opts_usage(void);

#endif
