/*  coll_check.c - the self-checking MPI program: options, groups, summary.

    Usage: coll_check [--std] [--quick] [--groups a,b,...] [--list]
                      [--corrupt] [--verbose] [--fatal-error] [--abort N]

    Every check group runs collectively on MPI_COMM_WORLD.  At the end of
    each group the check and failure counts are summed over all ranks and
    rank 0 prints one line, so that the standard output depends only on
    the world size and the options: the same program on real MPICH and on
    mpicollab must print the same lines.  Details of each failure go to
    stderr, prefixed with the rank.  The exit status is 0 when every check
    passed on every rank, 1 otherwise.

    --std         also runs the checks that Debian's MPICH 4.0.2 fails:
                  argument errors the standard requires but MPICH does not
                  report (a negative count to a reduction), unsigned
                  MAX/MIN above the signed range (pmodels/mpich#6083),
                  MPIX_C_FLOAT16 reductions (MPICH crashes) and MPI_Allgatherv
                  displacements on one rank (MPICH ignores them);
                  expected to fail on MPICH.
    --quick       skips the large counts (65537 and 1M elements).
    --corrupt     perturbs one input on the last rank, so a correct
                  library must make the program fail (checks the checker).
    --fatal-error calls MPI_Allreduce with MPI_OP_NULL under the default
                  MPI_ERRORS_ARE_FATAL handler: the program must be ended
                  by the library with a non-zero status.
    --abort N     after a barrier, every rank calls MPI_Abort(MPI_COMM_WORLD, N).
*/
#include "coll_check.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PRINTED 5

void cc_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

void cc_group_begin(cc_ctx_t *c, const char *name)
{
    c->group = name;
    c->checks = 0;
    c->fails = 0;
    c->printed = 0;
}

long cc_group_end(cc_ctx_t *c)
{
    long mine[2] = {c->checks, c->fails}, all[2] = {0, 0};
    int rc = MPI_Allreduce(mine, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "coll_check: rank %d: %s: summing the check counts failed (%d)\n", c->rank,
                c->group, rc);
        all[0] = c->checks;
        all[1] = c->fails + 1;
        c->local_fail = 1;
    }
    c->groups++;
    c->all_checks += all[0];
    c->all_fails += all[1];
    if (all[1] > 0)
        c->failed_groups++;
    if (c->rank == 0) {
        if (all[1] == 0)
            printf("coll_check: %-24s %6ld checks ok\n", c->group, all[0]);
        else
            printf("coll_check: %-24s %6ld checks, %ld FAILED\n", c->group, all[0], all[1]);
        fflush(stdout);
    }
    return all[1];
}

int cc_check(cc_ctx_t *c, int ok, const char *fmt, ...)
{
    c->checks++;
    if (!ok) {
        c->fails++;
        c->local_fail = 1;
    }
    if ((!ok && c->printed < MAX_PRINTED) || c->verbose) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        fprintf(stderr, "coll_check: rank %d: %s: %s: %s\n", c->rank, c->group, ok ? "ok" : "FAIL",
                msg);
        if (!ok && ++c->printed == MAX_PRINTED)
            fprintf(stderr, "coll_check: rank %d: %s: further failures not shown\n", c->rank,
                    c->group);
    }
    return ok;
}

int cc_mpi_ok(cc_ctx_t *c, int rc, const char *what)
{
    if (rc == MPI_SUCCESS)
        return cc_check(c, 1, "%s", what);
    char err[MPI_MAX_ERROR_STRING] = "";
    int len = 0, cls = -1;
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, err, &len);
    return cc_check(c, 0, "%s returned %d (class %d: %.200s)", what, rc, cls, err);
}

int cc_call_failed(cc_ctx_t *c, int rc, const char *what)
{
    if (rc == MPI_SUCCESS)
        return 0;
    cc_mpi_ok(c, rc, what);
    return 1;
}

/* ---------------------------------------------------------------------- */

typedef struct {
    const char *name;
    void (*run)(cc_ctx_t *c);
    int large; /* only large counts: skipped by --quick */
} cc_group_t;

static const cc_group_t groups[] = {
    {"barrier", cc_run_barrier, 0},
    {"allreduce", cc_run_allreduce, 0},
    {"allreduce-large", cc_run_allreduce_large, 1},
    {"reduce", cc_run_reduce, 0},
    {"reduce-scatter-block", cc_run_reduce_scatter_block, 0},
    {"bcast", cc_run_bcast, 0},
    {"gather", cc_run_gather, 0},
    {"scatter", cc_run_scatter, 0},
    {"allgather", cc_run_allgather, 0},
    {"alltoall", cc_run_alltoall, 0},
    {"nonblocking", cc_run_nonblocking, 0},
    {"requests", cc_run_requests, 0},
    {"comms", cc_run_comms, 0},
    {"p2p", cc_run_p2p, 0},
    {"errors", cc_run_errors, 0},
};
#define NGROUPS (sizeof groups / sizeof groups[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: coll_check [--std] [--quick] [--groups a,b,...] [--list]\n"
               "                  [--corrupt] [--verbose] [--fatal-error] [--abort N]\n");
}

/* 1 if name is in the comma-separated list (NULL list: everything). */
static int selected(const char *list, const char *name)
{
    if (list == NULL)
        return 1;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        if (end == NULL)
            break;
        p = end + 1;
    }
    return 0;
}

static int fatal_error_path(void)
{
    /* Default handler on MPI_COMM_WORLD: MPI_ERRORS_ARE_FATAL. */
    int in = 1, out = 0;
    int rc = MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD);
    fprintf(stderr,
            "coll_check: MPI_Allreduce with MPI_OP_NULL returned %d under "
            "MPI_ERRORS_ARE_FATAL instead of ending the program\n",
            rc);
    return 3;
}

int main(int argc, char **argv)
{
    cc_ctx_t ctx;
    memset(&ctx, 0, sizeof ctx);
    const char *only = NULL;
    int fatal = 0, abort_code = -1, list = 0;

    for (int k = 1; k < argc; k++) {
        const char *a = argv[k];
        if (strcmp(a, "--std") == 0 || strcmp(a, "--std-errors") == 0) {
            ctx.std = 1;
        } else if (strcmp(a, "--quick") == 0) {
            ctx.quick = 1;
        } else if (strcmp(a, "--corrupt") == 0) {
            ctx.corrupt = 1;
        } else if (strcmp(a, "--verbose") == 0) {
            ctx.verbose = 1;
        } else if (strcmp(a, "--fatal-error") == 0) {
            fatal = 1;
        } else if (strcmp(a, "--list") == 0) {
            list = 1;
        } else if (strcmp(a, "--groups") == 0 && k + 1 < argc) {
            only = argv[++k];
        } else if (strcmp(a, "--abort") == 0 && k + 1 < argc) {
            char *end;
            long v = strtol(argv[++k], &end, 10);
            if (*end != '\0' || v < 0 || v > 255) {
                fprintf(stderr, "coll_check: --abort wants a code in 0..255, got '%s'\n", argv[k]);
                return 2;
            }
            abort_code = (int)v;
        } else if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "coll_check: unknown argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (list) {
        for (size_t g = 0; g < NGROUPS; g++)
            printf("%s\n", groups[g].name);
        return 0;
    }
    if (only != NULL) {
        /* Reject unknown group names before starting MPI. */
        char *copy = strdup(only), *save = NULL;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            int known = 0;
            for (size_t g = 0; g < NGROUPS; g++)
                known |= strcmp(tok, groups[g].name) == 0;
            if (!known) {
                fprintf(stderr, "coll_check: unknown group '%s' (see --list)\n", tok);
                free(copy);
                return 2;
            }
        }
        free(copy);
    }

    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "coll_check: MPI_Init failed\n");
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ctx.size);

    if (fatal)
        return fatal_error_path();
    if (abort_code >= 0) {
        /* Every rank is there before anyone aborts. */
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Abort(MPI_COMM_WORLD, abort_code);
        fprintf(stderr, "coll_check: MPI_Abort returned\n");
        return 3;
    }

    /* Errors become checks instead of ending the program, so that a
       failing call is reported with its name and the run goes on. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    cc_types_init(ctx.std);
    if (ctx.rank == 0) {
        printf("coll_check: %d ranks%s%s\n", ctx.size, ctx.std ? ", std" : "",
               ctx.quick ? ", quick" : "");
        fflush(stdout);
    }
    double t0 = MPI_Wtime();
    for (size_t g = 0; g < NGROUPS; g++) {
        if (!selected(only, groups[g].name) || (ctx.quick && groups[g].large))
            continue;
        double tg = MPI_Wtime();
        groups[g].run(&ctx);
        if (ctx.verbose && ctx.rank == 0)
            fprintf(stderr, "coll_check: group %s took %.2f s\n", groups[g].name, MPI_Wtime() - tg);
    }
    if (ctx.rank == 0) {
        if (ctx.all_fails == 0)
            printf("coll_check: PASS: %ld checks in %d groups\n", ctx.all_checks, ctx.groups);
        else
            printf("coll_check: FAIL: %ld of %ld checks failed in %d of %d groups\n", ctx.all_fails,
                   ctx.all_checks, ctx.failed_groups, ctx.groups);
        fflush(stdout);
        fprintf(stderr, "coll_check: %.2f s\n", MPI_Wtime() - t0);
    }
    cc_types_fini();
    MPI_Finalize();
    return (ctx.all_fails > 0 || ctx.local_fail) ? 1 : 0;
}
