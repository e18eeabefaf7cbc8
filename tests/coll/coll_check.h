/*  coll_check.h - shared declarations of the coll_check test program.

    coll_check is an ordinary MPI program (built with MPICH's mpicc, never
    with our mpi.h) that runs every collective the library supports on
    inputs that are deterministic functions of (rank, index), computes the
    exact expected result itself, and reports one summary line per check
    group on rank 0.  Inputs are small integers (also for floating-point
    types), so every expected value is exact whatever the summation order.
*/
#ifndef COLL_CHECK_H_INCLUDED
#define COLL_CHECK_H_INCLUDED

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------------- */
/* Run context and check accounting. */

typedef struct {
    int rank;          /* rank in MPI_COMM_WORLD */
    int size;          /* size of MPI_COMM_WORLD */
    int std;           /* also run checks that Debian's MPICH 4.0.2 fails */
    int quick;         /* skip the large counts (65537, 1M) */
    int corrupt;       /* deliberately corrupt one input (checker self-test) */
    int verbose;       /* print every check, not only failures */
    const char *group; /* name of the running check group */
    long checks;       /* checks run in the group on this rank */
    long fails;        /* failed checks in the group on this rank */
    int printed;       /* failure lines printed in the group */
    long all_checks;   /* checks over all groups, summed over ranks */
    long all_fails;    /* failures over all groups, summed over ranks */
    int groups;        /* groups run */
    int failed_groups; /* groups with at least one failure anywhere */
    int local_fail;    /* this rank saw a failure */
} cc_ctx_t;

/* Starts a check group; every cc_check until cc_group_end counts in it. */
void cc_group_begin(cc_ctx_t *c, const char *name);

/* Ends the group: sums checks and failures over MPI_COMM_WORLD and prints
   the group's summary line on rank 0.  Returns the global failure count. */
long cc_group_end(cc_ctx_t *c);

/* Records one check.  When ok is 0 the formatted message is printed on
   stderr with the rank and group (the first few per group only).
   Returns ok. */
int cc_check(cc_ctx_t *c, int ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Records a check that rc == MPI_SUCCESS; names the call on failure. */
int cc_mpi_ok(cc_ctx_t *c, int rc, const char *what);

/* If rc is not MPI_SUCCESS, records one failed check naming the call, the
   code and its error string, and returns 1; otherwise records nothing and
   returns 0 (the caller then checks the result). */
int cc_call_failed(cc_ctx_t *c, int rc, const char *what);

/* Sleeps for ms milliseconds (used by polling loops and delay checks). */
void cc_sleep_ms(int ms);

/* ---------------------------------------------------------------------- */
/* Datatypes and operations. */

typedef enum {
    CC_CAT_CINT,    /* C integer */
    CC_CAT_FINT,    /* Fortran integer */
    CC_CAT_MULTI,   /* multi-language types: MPI_AINT, MPI_OFFSET, MPI_COUNT */
    CC_CAT_FLOAT,   /* floating point */
    CC_CAT_COMPLEX, /* complex */
    CC_CAT_LOGICAL, /* logical */
    CC_CAT_BYTE,    /* MPI_BYTE */
    CC_CAT_PAIR,    /* value-index pairs for MAXLOC/MINLOC */
    CC_CAT_OTHER    /* data movement only (MPI_CHAR, derived types) */
} cc_cat_t;

typedef enum { CC_S_SINT, CC_S_UINT, CC_S_FLT, CC_S_BOOL } cc_scalar_t;

typedef enum {
    CC_FAM_C,       /* C types */
    CC_FAM_FORTRAN, /* Fortran types used from C */
    CC_FAM_CXX      /* C++ types used from C */
} cc_family_t;

typedef struct {
    const char *name;  /* MPI name, for messages */
    MPI_Datatype dt;   /* handle (set at start for derived types) */
    cc_cat_t cat;      /* category of the standard's op table */
    cc_family_t fam;   /* which report group it belongs to */
    cc_scalar_t vkind; /* kind of each value component */
    int vsize;         /* bytes of one value component */
    int ncomp;         /* value components: 1, 2 (complex) or 3 (derived) */
    int has_index;     /* pair type: an index follows the value */
    cc_scalar_t ikind; /* kind of the index */
    int isize;         /* bytes of the index */
    size_t ioff;       /* offset of the index in the element */
    size_t extent;     /* bytes of one element */
    int std_only;      /* reduced only in --std runs (see cc_types_init) */
} cc_type_t;

typedef enum {
    CC_OP_SUM,
    CC_OP_PROD,
    CC_OP_MAX,
    CC_OP_MIN,
    CC_OP_LAND,
    CC_OP_LOR,
    CC_OP_LXOR,
    CC_OP_BAND,
    CC_OP_BOR,
    CC_OP_BXOR,
    CC_OP_MAXLOC,
    CC_OP_MINLOC,
    CC_OP_COUNT
} cc_op_t;

/* One element's value: integer components in u (two's complement,
   normalised to the type's width), floating components in f. */
typedef struct {
    uint64_t u[3];
    long double f[3];
    long double idx;
} cc_val_t;

/* Creates the derived types of the table; call once after MPI_Init.
   std != 0 adds what Debian's MPICH 4.0.2 gets wrong: MPIX_C_FLOAT16
   reductions (it crashes) and unsigned MAX/MIN inputs with the top bit
   set (it compares them as signed, pmodels/mpich#6083). */
void cc_types_init(int std);
/* Frees them; call before MPI_Finalize. */
void cc_types_fini(void);

/* The table of every datatype under test; *n receives its length. */
const cc_type_t *cc_types(size_t *n);
/* Looks a type up by its MPI name ("MPI_INT"); NULL when unknown. */
const cc_type_t *cc_type(const char *name);

/* 1 if op is defined for t by the MPI standard's table. */
int cc_op_valid(const cc_type_t *t, cc_op_t op);
MPI_Op cc_op_handle(cc_op_t op);
const char *cc_op_name(cc_op_t op);

/* Input of element i at comm rank `rank` for a reduction with op. */
void cc_gen_reduce(const cc_type_t *t, cc_op_t op, int rank, size_t i, cc_val_t *v);
/* Exact result of element i reduced with op over ranks 0..nranks-1. */
void cc_expect_reduce(const cc_type_t *t, cc_op_t op, int nranks, size_t i, cc_val_t *v);
/* Input of element i of data owned by `who` for data-movement calls. */
void cc_gen_move(const cc_type_t *t, long who, size_t i, cc_val_t *v);

/* Writes/reads element i of buf.  Only value and index bytes are touched,
   never padding. */
void cc_store(const cc_type_t *t, void *buf, size_t i, const cc_val_t *v);
void cc_load(const cc_type_t *t, const void *buf, size_t i, cc_val_t *v);
/* 1 if two values are equal (by value; padding ignored). */
int cc_equal(const cc_type_t *t, const cc_val_t *a, const cc_val_t *b);
/* Formats a value for messages. */
void cc_format(const cc_type_t *t, const cc_val_t *v, char *out, size_t len);

/* Fills buf with n reduction inputs / data-movement values. */
void cc_fill_reduce(const cc_type_t *t, cc_op_t op, int rank, void *buf, size_t n);
void cc_fill_move(const cc_type_t *t, long who, void *buf, size_t first, size_t n);

/* Compares n elements of buf, starting at element `first`, against the
   expected reduction (element index offset by `first`) or data-movement
   values; returns the number of mismatches and describes the first one
   in msg. */
size_t cc_verify_reduce(const cc_type_t *t, cc_op_t op, int nranks, const void *buf, size_t first,
                        size_t n, char *msg, size_t len);
size_t cc_verify_move(const cc_type_t *t, long who, const void *buf, size_t first, size_t n,
                      char *msg, size_t len);

/* Guard bytes: a recognisable pattern written around and between result
   blocks so that writes outside the expected ranges are detected. */
#define CC_POISON 0xA5
void cc_poison(void *buf, size_t bytes);
int cc_poison_intact(const void *buf, size_t bytes);

/* Allocates bytes (at least 1), zeroed; exits the program on failure. */
void *cc_alloc(size_t bytes);

/* ---------------------------------------------------------------------- */
/* Check groups.  Each runs collectively on MPI_COMM_WORLD. */

void cc_run_allreduce(cc_ctx_t *c);
void cc_run_allreduce_large(cc_ctx_t *c);
void cc_run_reduce(cc_ctx_t *c);
void cc_run_reduce_scatter_block(cc_ctx_t *c);
void cc_run_barrier(cc_ctx_t *c);
void cc_run_bcast(cc_ctx_t *c);
void cc_run_gather(cc_ctx_t *c);
void cc_run_scatter(cc_ctx_t *c);
void cc_run_allgather(cc_ctx_t *c);
void cc_run_alltoall(cc_ctx_t *c);
void cc_run_nonblocking(cc_ctx_t *c);
void cc_run_requests(cc_ctx_t *c);
void cc_run_comms(cc_ctx_t *c);
void cc_run_p2p(cc_ctx_t *c);
void cc_run_errors(cc_ctx_t *c);

/* One reduction on comm, verified: root < 0 means Allreduce.  inplace uses
   MPI_IN_PLACE (at root only for Reduce).  nonblocking uses the I-form and
   MPI_Wait.  Counts one check. */
void cc_reduce_case(cc_ctx_t *c, MPI_Comm comm, const cc_type_t *t, cc_op_t op, size_t count,
                    int root, int inplace, int nonblocking);

#endif
