/*  cl_coll_fail_fx.h - the fixture of cl_coll_fail_test: a case (kind,
    size, members, op, options), its buffers and arguments for every
    member, and the check of a reduction's result against the survivors.
    Shared by the sweep (cl_coll_fail_test.c) and the staged cases
    (cl_coll_fail_staged.c).
*/
#ifndef CL_COLL_FAIL_FX_H_INCLUDED
#define CL_COLL_FAIL_FX_H_INCLUDED

#include "test_coll_harness.h"
#include "coll/cl_coll_impl.h"

#include <stdbool.h>
#include <stdint.h>

#define MAXN 8

typedef struct {
    const char *name;
    cl_coll_kind_t kind;
    int n, size;
    collab_dtype_t dt;
    collab_op_kind_t op;
    size_t count; /* elements (reductions) or bytes */
    size_t chunk, small;
    int root;
    unsigned clients;
    int codec;
    bool strict;
    bool inplace;
    const uint32_t *bw; /* per member: bandwidth figure (parts sized by it), or NULL */
} fcase_t;

typedef struct {
    const fcase_t *tc;
    int ranks[MAXN];
    size_t e, vec, cap;
    uint8_t *in[MAXN], *out[MAXN];
    size_t counts[MAXN], displs[MAXN];
    int clients[MAXN];
    cl_coll_args_t args[MAXN];
} fx_t;

/* Byte k of rank r's data in the data-movement cases. */
uint8_t fx_byte(int rank, size_t k);

/* True for the kinds that reduce. */
bool fx_reduction(cl_coll_kind_t k);

/* Buffers and arguments of every member for case tc (fx keeps tc). */
void fx_setup(fx_t *fx, const fcase_t *tc);
void fx_teardown(fx_t *fx);

/* Member index of comm rank r, -1 when none. */
int fx_index(const fx_t *fx, int rank);

/* Checks a reduction result at member i against the survivors: BOR holds
   every survivor's bit and only members' bits; SUM is size x mean of some
   contributor set between the survivors and all members. */
void fx_check_reduction(fx_t *fx, th_t *h, int i, const uint8_t *res, size_t count,
                        size_t block);

/* The staged cases (cl_coll_fail_staged.c). */
void fx_hostile_producer(void);
void fx_early_completion(void);

/* cl_selftest.h counts checks per file: the checks made in the fixture's
   file and in the staged cases' file, for main to count as its own. */
void fx_counts(int *checks, int *failures);
void fx_staged_counts(int *checks, int *failures);

#endif
