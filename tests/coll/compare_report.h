/*  compare_report.h - what the programs of testlist mode "compare"
    (dt_check, ext_check) share: a hash of a buffer, one line per check on
    rank 0 with every rank's value, and a local check that prints FAIL:.

    Built with mpicc.mpich, never with our mpi.h.  Define CHECK_NAME (the
    program's name, the prefix of its lines) before including; the
    program sets rank and size after MPI_Init and exits non-zero when
    failures is not 0.
*/
#ifndef COMPARE_REPORT_H_INCLUDED
#define COMPARE_REPORT_H_INCLUDED

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef CHECK_NAME
#error "define CHECK_NAME before including compare_report.h"
#endif

static int rank, size, failures;

static uint64_t fnv(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* Prints name and every rank's value v. */
static void report(const char *name, uint64_t v)
{
    uint64_t *all = malloc((size_t)size * sizeof *all);
    MPI_Gather(&v, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf(CHECK_NAME ": %-28s", name);
        for (int r = 0; r < size; r++)
            printf(" %016llx", (unsigned long long)all[r]);
        printf("\n");
        fflush(stdout);
    }
    free(all);
}

static void expect(int ok, const char *what)
{
    if (!ok) {
        failures++;
        fprintf(stderr, CHECK_NAME ": rank %d: FAIL: %s\n", rank, what);
    }
}

#endif
