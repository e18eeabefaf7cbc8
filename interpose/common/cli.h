/*  cli.h - internal interface of the ABI-generic MPI glue.

    The files of interpose/common are compiled once per face, against that
    face's mpi.h and translation header abi.h (docs/abi.md).  They share:
    the call context that the generated bindings pass to every impl, the
    argument checks, error reporting, and the handle tables of objects
    created at run time.  Nothing here is exported: the face library is
    built with -fvisibility=hidden and a version script.

    Locking: one mutex (cli.lock) protects every table and object field
    that can change after creation.  It is never held across a core call
    that may block, nor across a user callback (error handler, attribute
    copy/delete function, user op), so callbacks may call MPI again.
*/
#ifndef CLI_H_INCLUDED
#define CLI_H_INCLUDED

#include "abi.h"
#include "cli_ids.h"
#include "mpi_collab.h"
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <stddef.h>

/* ---------------------------------------------------------------------- */
/* Objects.  Predefined objects are static (index -1); run-time objects
   live in the tables below (predef -1). */

typedef struct cli_attr cli_attr_t;

typedef struct cli_errh {
    int predef;                       /* CLI_ERRH_* or -1 */
    int index;                        /* table index or -1 */
    int refs;                         /* handle + communicators using it */
    MPI_Comm_errhandler_function *fn; /* user function (dynamic only) */
} cli_errh_t;

typedef struct cli_info {
    int predef; /* CLI_INFO_ENV or -1 */
    int index;
    int nkeys;
    char **keys; /* owned, in insertion order */
    char **vals; /* owned */
} cli_info_t;

typedef struct cli_group {
    int predef; /* CLI_GROUP_EMPTY or -1 */
    int index;
    int refs; /* handles + internal users */
    int size;
    int *wranks; /* world rank of each member, owned */
} cli_group_t;

typedef struct cli_comm {
    int predef; /* CLI_COMM_WORLD / CLI_COMM_SELF or -1 */
    int index;
    collab_comm_t *core; /* the core's communicator */
    cli_errh_t *errh;    /* holds a reference */
    cli_attr_t *attrs;   /* attribute list, in order of setting */
    cli_info_t *hints;   /* info hints set by the program (or NULL) */
    int revoked;         /* MPIX_Comm_revoke was called */
    char name[MPI_MAX_OBJECT_NAME];
} cli_comm_t;

/* MPI categories of predefined datatypes, for the op/type table. */
enum {
    CLI_CAT_NONE = 0,     /* no reduction defined (char, packed, LB/UB) */
    CLI_CAT_CINT = 1,     /* C integer */
    CLI_CAT_FINT = 2,     /* Fortran integer */
    CLI_CAT_FLOAT = 4,    /* floating point */
    CLI_CAT_LOGICAL = 8,  /* C_BOOL, LOGICAL, CXX_BOOL */
    CLI_CAT_COMPLEX = 16, /* complex */
    CLI_CAT_BYTE = 32,    /* MPI_BYTE */
    CLI_CAT_PAIR = 64,    /* value/index pairs for MINLOC/MAXLOC */
    CLI_CAT_MULTI = 128   /* multi-language types: AINT, OFFSET, COUNT */
};

typedef struct cli_tmap cli_tmap_t;           /* cli_tmap.h */
typedef struct cli_tcontents cli_tcontents_t; /* cli_type_derived.c */

typedef struct cli_type {
    int predef; /* CLI_T_* or -1 */
    int index;
    int refs; /* handle + types built on it */
    int committed;
    collab_dtype_t basic;  /* core element type */
    MPI_Count mult;        /* core elements per element of this type */
    MPI_Count size;        /* bytes of data in one element */
    MPI_Count extent;      /* bytes from one element to the next */
    MPI_Count true_extent; /* bytes from the first to the last byte of data */
    int category;          /* CLI_CAT_* of the underlying predefined type */
    int base_predef;       /* the predefined type everything flattens to */
    int combiner;          /* MPI_COMBINER_NAMED / _DUP / _CONTIGUOUS / _VECTOR */
    MPI_Count comb_count;  /* contiguous count / vector count */
    MPI_Count comb_block;  /* vector blocklength */
    MPI_Count comb_stride; /* vector stride */
    struct cli_type *old;  /* type it was built from (holds a ref) or NULL */
    cli_tmap_t *map;       /* non-contiguous layout (owned), NULL: count x extent bytes */
    cli_tcontents_t *tc;   /* constructor arguments (type-map constructors) or NULL */
    MPI_Count lb;          /* lower bound (0 without a map) */
    MPI_Count true_lb;     /* first byte of data (0 without a map) */
    cli_attr_t *attrs;
    char name[MPI_MAX_OBJECT_NAME];
} cli_type_t;

typedef struct cli_op {
    int predef; /* collab_op_kind_t or -1 */
    int index;
    int commute;
    MPI_User_function *fn;     /* user function (int count) */
    MPI_User_function_c *fn_c; /* or large-count user function */
} cli_op_t;

enum { CLI_KEYVAL_COMM = 1, CLI_KEYVAL_TYPE = 2 };

typedef struct cli_keyval {
    int index;
    int kind;              /* CLI_KEYVAL_COMM or CLI_KEYVAL_TYPE */
    int refs;              /* handle + attributes using it */
    void (*copy_fn)(void); /* MPI_Comm_copy_attr_function / _Type_ (cast on call) */
    void (*delete_fn)(void);
    void *extra;
} cli_keyval_t;

struct cli_attr {
    cli_keyval_t *kv; /* holds a reference */
    void *value;
    struct cli_attr *next;
};

typedef struct cli_req cli_req_t;
/* Runs once when a request's core operation completed (status is the
   core status); may rewrite *st and returns the final core status.  Used
   to post-process nonblocking collectives and to free their arrays. */
typedef int (*cli_req_finish_fn)(cli_req_t *req, int status, collab_status_info_t *st);

struct cli_req {
    int index;
    int kind;                 /* CLI_REQ_* */
    collab_request_t *core;   /* NULL once completed (or for done-at-start) */
    int done;                 /* result cached in st/status */
    int status;               /* core status of the completed operation */
    collab_status_info_t st;  /* cached result */
    cli_comm_t *comm;         /* communicator (for errors), may be NULL */
    cli_req_finish_fn finish; /* optional completion hook */
    void *aux;                /* owned by the hook */
    int freed;                /* MPI_Request_free was called */
    struct cli_persist *pers; /* persistent request: how to start it (owned), or NULL */
};

enum {
    CLI_REQ_SEND, /* p2p send: status source/tag not meaningful */
    CLI_REQ_RECV, /* p2p receive: status filled from the core */
    CLI_REQ_COLL, /* nonblocking collective */
    CLI_REQ_DONE, /* completed when started (PROC_NULL, Imrecv, idup) */
    CLI_REQ_GREQ  /* generalized request (cli_greq.c): completed by the program */
};

typedef struct cli_msg {
    int index;
    collab_message_t *core;
    cli_comm_t *comm;
} cli_msg_t;

/* A growable table of objects of one kind; indices are handed out from 0
   and reused after removal. */
typedef struct {
    void **slots;
    int cap;
    int hint; /* lowest index that may be free */
} cli_table_t;

/* Process-wide state of the face. */
typedef struct {
    pthread_mutex_t lock;
    int state;             /* CLI_STATE_* */
    pthread_t main_thread; /* thread that called MPI_Init */
    int provided;          /* thread level provided */
    cli_table_t comms, groups, types, ops, errhs, reqs, msgs, infos, keyvals;
} cli_state_t;

enum { CLI_STATE_PRE = 0, CLI_STATE_INIT = 1, CLI_STATE_FINAL = 2 };

extern cli_state_t cli;
extern cli_comm_t cli_world, cli_self;
extern cli_errh_t cli_errh_predef[CLI_ERRH_PREDEF_COUNT];

void cli_lock(void);
void cli_unlock(void);

/* Table operations; call with cli.lock held.  cli_table_add returns the
   index, or -1 when out of memory or out of handle space. */
int cli_table_add(cli_table_t *t, void *obj);
void *cli_table_get(const cli_table_t *t, int index);
void cli_table_remove(cli_table_t *t, int index);

/* ---------------------------------------------------------------------- */
/* The call context passed by every generated binding. */

typedef struct {
    const char *name; /* "MPI_Send" */
    cli_comm_t *comm; /* communicator whose handler reports errors; NULL: world */
} cli_call_t;

#define CLI_PRE 1 /* cli_enter flag: allowed before MPI_Init / after MPI_Finalize */

/* Fills a call context for `name` with no communicator yet. */
void cli_call_init(cli_call_t *call, const char *name);
/* Starts a call: checks the library state (unless CLI_PRE).  Returns
   MPI_SUCCESS or the error code already reported. */
int cli_enter(cli_call_t *call, const char *name, int flags);

/* Argument checks of the table (docs/abi.md section 2).  Each returns
   MPI_SUCCESS or the code returned by the error handler. */
int cli_check_comm(cli_call_t *call, MPI_Comm h, const char *arg);
int cli_check_count(cli_call_t *call, MPI_Count n, const char *arg);
int cli_check_type(cli_call_t *call, MPI_Datatype h, const char *arg);
int cli_check_dtype(cli_call_t *call, MPI_Datatype h, const char *arg);
int cli_check_op(cli_call_t *call, MPI_Op h, const char *arg);
int cli_check_root(cli_call_t *call, int root, const char *arg);
int cli_check_dest(cli_call_t *call, int rank, const char *arg);
int cli_check_src(cli_call_t *call, int rank, const char *arg);
int cli_check_tag(cli_call_t *call, int tag, const char *arg);
int cli_check_rtag(cli_call_t *call, int tag, const char *arg);
int cli_check_buf(cli_call_t *call, const void *buf, MPI_Count n, const char *arg);
int cli_check_ptr(cli_call_t *call, const void *p, const char *arg);

/* ---------------------------------------------------------------------- */
/* Errors (cli_errors.c). */

/* Reports error class `errclass` for argument `arg` (may be NULL) with a
   printf-style detail through the error handler of call->comm (or of
   MPI_COMM_WORLD), and returns the code the call must return.  Never
   returns under MPI_ERRORS_ARE_FATAL / MPI_ERRORS_ABORT. */
int cli_err(cli_call_t *call, int errclass, const char *arg, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Same, for a failed core call: maps the collab_status_t to a class. */
int cli_err_core(cli_call_t *call, int status, const char *what);
/* Maps a collab_status_t to this ABI's error class (0 for COLLAB_OK). */
int cli_class_of_status(int status);
/* The unsupported paths of the generated bindings: through the handler of
   comm (or world), through the file handler (MPI_ERRORS_RETURN), or the
   tool interface's MPI_T_ERR_NOT_SUPPORTED without a handler. */
int cli_unsupported(cli_call_t *call, MPI_Comm comm, const char *reason);
int cli_unsupported_file(cli_call_t *call, const char *reason);
int cli_unsupported_tool(cli_call_t *call, const char *name);
/* Writes one "[collab] ..." line to stderr with a single write(). */
void cli_log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Error handler objects: lookup (NULL and *why as for the other kinds),
   handle, and references (a handle and every communicator using it hold
   one; the object goes when the last is dropped). */
cli_errh_t *cli_errh_lookup(MPI_Errhandler h, int *why);
MPI_Errhandler cli_errh_handle(const cli_errh_t *e);
void cli_errh_ref(cli_errh_t *e);   /* cli.lock held */
void cli_errh_unref(cli_errh_t *e); /* cli.lock held */

/* ---------------------------------------------------------------------- */
/* Lookups of handles (cli_objects.c).  Each returns the object or NULL;
 *why is set to CLI_H_NULL or CLI_H_BAD on failure. */

cli_comm_t *cli_comm_lookup(MPI_Comm h, int *why);
MPI_Comm cli_comm_handle(const cli_comm_t *c);
cli_group_t *cli_group_lookup(MPI_Group h, int *why);
MPI_Group cli_group_handle(const cli_group_t *g);
cli_type_t *cli_type_lookup(MPI_Datatype h, int *why);
MPI_Datatype cli_type_handle(const cli_type_t *t);
cli_op_t *cli_op_lookup(MPI_Op h, int *why);
MPI_Op cli_op_handle(const cli_op_t *o);
cli_info_t *cli_info_lookup(MPI_Info h, int *why);
MPI_Info cli_info_handle(const cli_info_t *i);
cli_req_t *cli_req_lookup(MPI_Request h, int *why);
MPI_Request cli_req_handle(const cli_req_t *r);
cli_msg_t *cli_msg_lookup(MPI_Message h, int *why);
cli_keyval_t *cli_keyval_lookup(int h, int *why);

/* Registers a new object in its table and returns its handle through
 *out; returns 0 or MPI_ERR_NO_MEM (nothing registered). */
int cli_comm_register(cli_comm_t *c, MPI_Comm *out);
int cli_group_register(cli_group_t *g, MPI_Group *out);
int cli_type_register(cli_type_t *t, MPI_Datatype *out);
int cli_op_register(cli_op_t *o, MPI_Op *out);
int cli_info_register(cli_info_t *i, MPI_Info *out);
int cli_req_register(cli_req_t *r, MPI_Request *out);
int cli_msg_register(cli_msg_t *m, MPI_Message *out);
int cli_errh_register(cli_errh_t *e, MPI_Errhandler *out);
int cli_keyval_register(cli_keyval_t *k, int *out);

/* ---------------------------------------------------------------------- */
/* Shared helpers of the other files. */

/* Groups (cli_group.c): caller owns the result (refs = 1). */
cli_group_t *cli_group_new(int size);
void cli_group_unref(cli_group_t *g);
cli_group_t *cli_group_of_comm(const cli_comm_t *c);
/* MPI_IDENT, MPI_SIMILAR or MPI_UNEQUAL for two member lists. */
int cli_group_relation(const cli_group_t *a, const cli_group_t *b);

/* Info objects (cli_info.c): caller owns the copy (NULL when out of memory). */
cli_info_t *cli_info_copy(const cli_info_t *src);
void cli_info_free(cli_info_t *i);
/* Fills MPI_INFO_ENV at MPI_Init. */
void cli_info_env_fill(int argc, char **argv, int thread_level);

/* Releases the requests the program freed with MPI_Request_free while
   they were active, once they complete; blocking: wait for all of them
   (MPI_Finalize). */
void cli_req_sweep(int blocking);

/* Communicators (cli_comm.c).  cli_comm_wrap makes a face communicator
   around a new core one (takes ownership of core, inherits parent's error
   handler) and returns its handle; cli_comm_check_live reports
   MPIX_ERR_REVOKED for a revoked communicator. */
int cli_comm_wrap(cli_call_t *call, cli_comm_t *parent, collab_comm_t *core, MPI_Comm *out);
int cli_comm_check_live(cli_call_t *call, cli_comm_t *c);

/* Attributes (cli_attr.c): copy on dup, delete on free; call without the lock. */
int cli_attr_copy_comm(cli_call_t *call, cli_comm_t *from, cli_comm_t *to);
int cli_attr_delete_all_comm(cli_call_t *call, cli_comm_t *c);
int cli_attr_copy_type(cli_call_t *call, cli_type_t *from, cli_type_t *to);
int cli_attr_delete_all_type(cli_call_t *call, cli_type_t *t);
void cli_keyval_unref(cli_keyval_t *k); /* cli.lock held */

/* Datatypes (cli_type.c). */
extern cli_type_t cli_predef_types[CLI_NTYPES];
void cli_type_unref(cli_type_t *t); /* cli.lock held */
/* Bytes moved for count elements (count * extent), or -1 on overflow. */
MPI_Count cli_type_bytes(const cli_type_t *t, MPI_Count count);
/* A count, size or extent narrowed for the int versions of the queries:
   MPI_UNDEFINED when it does not fit in an int, as the standard asks. */
static inline int cli_int_count(MPI_Count c)
{
    return c > INT_MAX ? MPI_UNDEFINED : (int)c;
}
/* Core elements for count elements (count * mult), or -1 on overflow. */
MPI_Count cli_type_elems(const cli_type_t *t, MPI_Count count);

/* Ops (cli_op.c): checks op against type and prepares the core op; ctx
   receives the state a user op needs (must live until completion).  The
   core reduces count * *cmult elements of *ctype: the type's own core
   type, or for user ops on multi-element types a carrier type as large as
   one element, so that the core never cuts an element in two. */
typedef struct {
    MPI_User_function *fn; /* copied from the op, so MPI_Op_free may run meanwhile */
    MPI_User_function_c *fn_c;
    MPI_Datatype dtype;       /* the handle the program passed */
    MPI_Count mult;           /* core elements per program element */
    int loc_kind;             /* MINLOC/MAXLOC done by the face (2REAL...), else 0 */
    collab_dtype_t loc_basic; /* COLLAB_FLOAT or COLLAB_DOUBLE for those */
    /* A predefined op the core has no kernel for, computed by the face
       (cli_op.c: logical ops on reals, REAL16, COMPLEX32), else NULL. */
    void (*face_fn)(const void *in, void *inout, size_t count, int kind);
    int face_kind; /* the COLLAB_OP_* face_fn computes */
} cli_user_op_ctx_t;
int cli_op_prepare(cli_call_t *call, cli_op_t *op, cli_type_t *type, collab_op_t *out,
                   cli_user_op_ctx_t *ctx, collab_dtype_t *ctype, MPI_Count *cmult);

/* Pairs of a predefined op (COLLAB_OP_*) and a predefined datatype
   (CLI_T_*) outside the standard's table that this face's real library
   accepts in reductions (measured by tests/abi/op_table.c; docs/abi.md).
   Defined by each face: 1 when accepted beyond the standard, -1 when the
   standard defines the pair but the real library refuses it, else 0. */
int cli_abi_op_extension(int op_kind, int type_id);

/* Requests (cli_request.c).  cli_req_start registers a request wrapping
   the core request `core` (handle in *out); `finish` runs once when it
   completes and owns `aux`.  On failure the operation is completed first
   (its hook run) and the error reported. */
int cli_req_start(cli_call_t *call, int kind, cli_comm_t *comm, collab_request_t *core,
                  cli_req_finish_fn finish, void *aux, MPI_Request *out);
/* Persistent requests (cli_persist.c): cli_req_adopt moves the state of
   the nonblocking request `inner` (just started) into the persistent
   request r and releases inner's handle; cli_persist_destroy frees a
   persistent request's recipe (when the request goes). */
int cli_req_adopt(cli_req_t *r, MPI_Request inner);
void cli_persist_destroy(struct cli_persist **p);
/* Posts the persistent collectives started since the last call, in the
   order of their initialisation (cli_persist.c); called by cli_enter. */
void cli_persist_flush(void);
/* Whether started persistent collectives wait to be posted (no lock). */
int cli_persist_queued(void);
/* Whether a persistent request was started and not yet completed by a
   wait or test (inactive ones count as MPI_REQUEST_NULL in arrays). */
int cli_persist_active(const struct cli_persist *p);
void cli_persist_set_active(struct cli_persist *p, int on);
/* A request that is already complete with the given result. */
int cli_req_done(cli_call_t *call, int kind, cli_comm_t *comm, int status,
                 const collab_status_info_t *st, MPI_Request *out);

/* Unregisters and frees a request (its recipe too, if persistent). */
void cli_req_release(cli_req_t *r);

/* Generalized requests (cli_greq.c), asked by the wait and test calls:
   cli_greq_poll says whether r was completed (blocking: waits for it);
   cli_greq_finish reports the completion (query_fn, free_fn) and nulls *h,
   returning the MPI code (raised through the handler when `report`);
   cli_greq_status fills st with query_fn; cli_greq_cancel and
   cli_greq_free are MPI_Cancel and MPI_Request_free on r; cli_greq_nap
   sleeps until a generalized request completes, at most a millisecond. */
int cli_greq_poll(cli_req_t *r, int blocking);
int cli_greq_finish(cli_call_t *call, cli_req_t *r, MPI_Request *h, MPI_Status *st, int report);
void cli_greq_status(cli_req_t *r, MPI_Status *st);
int cli_greq_cancel(cli_call_t *call, cli_req_t *r);
int cli_greq_free(cli_call_t *call, cli_req_t *r);
void cli_greq_nap(void);

/* Fills *st (unless MPI_STATUS_IGNORE) from a core result: source, tag
   and byte count for receives, the empty status otherwise; MPI_ERROR is
   left alone (the multiple-completion calls set it). */
void cli_status_fill(MPI_Status *st, int kind, int status, const collab_status_info_t *info);
/* The status of a receive from MPI_PROC_NULL. */
void cli_status_proc_null(MPI_Status *st);

/* Records that a collective on c completed (for MPIX_Collab_*). */
void cli_collab_note(cli_comm_t *c);

#endif
