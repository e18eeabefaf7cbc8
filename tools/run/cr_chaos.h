/*  cr_chaos.h - collab-run's reproducible faults (--chaos SPEC).

    Grammar (one fault per --chaos option):
        kill:TARGET@WHEN            SIGKILL the target's process group
        stop:TARGET@WHEN+SECONDS    SIGSTOP it, SIGCONT after SECONDS
        start@WHEN                  start one more peer (any free rank)
        start:RANK@WHEN             start one more peer asking for RANK
    TARGET is a rank (0..N-1; the peer collab-run started with that rank,
    or the latest one started with start:RANK) or +K, the K-th peer started
    by a start fault (1-based, in the order they happened).
    WHEN is a time since collab-run started ("5s", "2.5s", "500ms", "3") or
    line:TARGET:REGEX, the first line that target prints on stdout or
    stderr matching the POSIX extended regular expression REGEX.
*/
#ifndef CR_CHAOS_H_INCLUDED
#define CR_CHAOS_H_INCLUDED

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

typedef enum { CR_CHAOS_KILL, CR_CHAOS_STOP, CR_CHAOS_START } cr_chaos_action_t;

/* A peer as chaos specs name it. */
typedef struct {
    bool started; /* true: the n-th started peer (+n); false: rank n */
    int n;        /* rank, or 1-based start index; -1 = none (start@) */
} cr_target_t;

typedef struct {
    char *spec;               /* the text as given, for messages */
    cr_chaos_action_t action; /* what to do */
    cr_target_t target;       /* kill/stop: whom; start: requested rank or n = -1 */
    double stop_seconds;      /* stop: how long the peer stays stopped */
    bool on_line;             /* true: WHEN is line:...; false: a time */
    double at_seconds;        /* time trigger, seconds since start */
    cr_target_t line_target;  /* line trigger: whose output is watched */
    char *pattern;            /* line trigger: the regex text */
    regex_t regex;            /* line trigger: compiled (REG_EXTENDED|REG_NOSUB) */
    bool done;                /* fired (or given up); never fires twice */
} cr_chaos_t;

/* Parses one spec for a run of `world` peers.  Returns a new fault, or
   NULL with a one-line reason in err (bad syntax, rank out of range,
   regex that does not compile, bad duration).  Caller owns the result. */
cr_chaos_t *cr_chaos_new(const char *spec, int world, char *err, size_t errlen);

/* Frees a fault (and its compiled regex); nulls *self_p; accepts NULL. */
void cr_chaos_destroy(cr_chaos_t **self_p);

/* Checks a whole list: every +K target must name a peer that some start
   fault will create (K <= number of start faults).  Returns 0, or -1 with
   a reason in err. */
int cr_chaos_check_list(cr_chaos_t *const *list, size_t n, char *err, size_t errlen);

/* Parses a duration: a non-negative decimal number of seconds, optionally
   followed by "s" or "ms".  Returns 0 and sets *out, or -1. */
int cr_parse_seconds(const char *text, double *out);

/* Formats a target as "rank 3" / "peer +2" into buf; returns buf. */
const char *cr_target_text(cr_target_t t, char *buf, size_t len);

#endif
