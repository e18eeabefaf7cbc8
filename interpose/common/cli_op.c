/*  cli_op.c - reduction operations.

    The predefined ops map to collab_op_kind_t.  Before a reduction runs,
    cli_op_prepare() checks the op against the datatype with the MPI
    standard's rules and reports MPI_ERR_OP: predefined ops apply to
    predefined datatypes only (derived types need a user op); MAX/MIN to
    integers and floating point, SUM/PROD also to complex, logical ops to
    C integers and logicals, bitwise ops to integers and MPI_BYTE,
    MINLOC/MAXLOC to pair types; MPI_REPLACE and MPI_NO_OP only in
    one-sided accumulates.  Beyond that table, each face accepts exactly
    the pairs its real library accepts (cli_abi_op_extension, measured by
    tests/abi/op_table.c; docs/abi.md): MPI_CHAR with arithmetic, logical
    and bitwise ops in both, logical ops on reals in MPICH's, arithmetic
    on MPI_BYTE in Open MPI's.  Pairs the core has no kernel for are
    computed here (logical ops on reals; MPI_REAL16 and MPI_COMPLEX32 as
    C long double and its complex, as both real libraries compute them).  A combination the standard
   allows but the core cannot compute (e.g. 128-bit reals) is MPI_ERR_UNSUPPORTED_OPERATION. User
   ops (MPI_Op_create) reach the core as COLLAB_OP_USER through a trampoline that calls the
   program's function with its own datatype handle and element count.
*/
#include "cli.h"
#include "cli_impl.h"
#include "cli_tmap.h"

#include <stdlib.h>

cli_op_t cli_predef_ops[COLLAB_OP_COUNT] = {
#define O_(k) [k] = {.predef = k, .index = -1, .commute = 1}
    O_(COLLAB_OP_SUM),     O_(COLLAB_OP_PROD),  O_(COLLAB_OP_MAX),    O_(COLLAB_OP_MIN),
    O_(COLLAB_OP_LAND),    O_(COLLAB_OP_LOR),   O_(COLLAB_OP_LXOR),   O_(COLLAB_OP_BAND),
    O_(COLLAB_OP_BOR),     O_(COLLAB_OP_BXOR),  O_(COLLAB_OP_MAXLOC), O_(COLLAB_OP_MINLOC),
    O_(COLLAB_OP_REPLACE), O_(COLLAB_OP_NO_OP),
#undef O_
};

static const char *const cli_op_names[COLLAB_OP_COUNT] = {
    [COLLAB_OP_SUM] = "MPI_SUM",
    [COLLAB_OP_PROD] = "MPI_PROD",
    [COLLAB_OP_MAX] = "MPI_MAX",
    [COLLAB_OP_MIN] = "MPI_MIN",
    [COLLAB_OP_LAND] = "MPI_LAND",
    [COLLAB_OP_LOR] = "MPI_LOR",
    [COLLAB_OP_LXOR] = "MPI_LXOR",
    [COLLAB_OP_BAND] = "MPI_BAND",
    [COLLAB_OP_BOR] = "MPI_BOR",
    [COLLAB_OP_BXOR] = "MPI_BXOR",
    [COLLAB_OP_MAXLOC] = "MPI_MAXLOC",
    [COLLAB_OP_MINLOC] = "MPI_MINLOC",
    [COLLAB_OP_REPLACE] = "MPI_REPLACE",
    [COLLAB_OP_NO_OP] = "MPI_NO_OP",
    [COLLAB_OP_USER] = "a user-defined op",
};

/* Categories of datatypes each predefined op is defined for. */
static int cli_op_categories(int kind)
{
    switch (kind) {
    case COLLAB_OP_MAX:
    case COLLAB_OP_MIN:
        return CLI_CAT_CINT | CLI_CAT_FINT | CLI_CAT_FLOAT | CLI_CAT_MULTI;
    case COLLAB_OP_SUM:
    case COLLAB_OP_PROD:
        return CLI_CAT_CINT | CLI_CAT_FINT | CLI_CAT_FLOAT | CLI_CAT_COMPLEX | CLI_CAT_MULTI;
    case COLLAB_OP_LAND:
    case COLLAB_OP_LOR:
    case COLLAB_OP_LXOR:
        return CLI_CAT_CINT | CLI_CAT_LOGICAL;
    case COLLAB_OP_BAND:
    case COLLAB_OP_BOR:
    case COLLAB_OP_BXOR:
        return CLI_CAT_CINT | CLI_CAT_FINT | CLI_CAT_BYTE | CLI_CAT_MULTI;
    case COLLAB_OP_MAXLOC:
    case COLLAB_OP_MINLOC:
        return CLI_CAT_PAIR;
    default:
        return 0;
    }
}

/* MINLOC / MAXLOC on Fortran pairs of reals (MPI_2REAL,
   MPI_2DOUBLE_PRECISION), whose value and index have the same type and
   which the core has no type for: count pairs, each carried as one
   complex number.  Ties keep the lower index, as the standard says. */
#define CLI_LOC_KERNEL(T)                                                                          \
    static void cli_loc_##T(const T *in, T *io, size_t count, int max)                             \
    {                                                                                              \
        for (size_t i = 0; i < 2 * count; i += 2) {                                                \
            int take = max ? in[i] > io[i] : in[i] < io[i];                                        \
            if (take || (in[i] == io[i] && in[i + 1] < io[i + 1])) {                               \
                io[i] = in[i];                                                                     \
                io[i + 1] = in[i + 1];                                                             \
            }                                                                                      \
        }                                                                                          \
    }
CLI_LOC_KERNEL(float)
CLI_LOC_KERNEL(double)

/* Predefined ops on pairs the core has no kernel for.  MPI's rule
   inout[i] = in[i] op inout[i]; logical results are 1 or 0 in the type. */
typedef long double cli_ldouble;
typedef _Complex long double cli_cldouble;

#define CLI_LOGIC_(a, b, kind)                                                                     \
    ((kind) == COLLAB_OP_LAND  ? ((a) != 0 && (b) != 0)                                            \
     : (kind) == COLLAB_OP_LOR ? ((a) != 0 || (b) != 0)                                            \
                               : (((a) != 0) != ((b) != 0)))
#define CLI_REAL_KERNEL(T)                                                                         \
    static void cli_face_##T(const void *vin, void *vio, size_t n, int kind)                       \
    {                                                                                              \
        const T *in = vin;                                                                         \
        T *io = vio;                                                                               \
        for (size_t i = 0; i < n; i++) {                                                           \
            T a = in[i], b = io[i];                                                                \
            switch (kind) {                                                                        \
            case COLLAB_OP_SUM:                                                                    \
                io[i] = a + b;                                                                     \
                break;                                                                             \
            case COLLAB_OP_PROD:                                                                   \
                io[i] = a * b;                                                                     \
                break;                                                                             \
            case COLLAB_OP_MAX:                                                                    \
                io[i] = a > b ? a : b;                                                             \
                break;                                                                             \
            case COLLAB_OP_MIN:                                                                    \
                io[i] = a < b ? a : b;                                                             \
                break;                                                                             \
            default:                                                                               \
                io[i] = (T)CLI_LOGIC_(a, b, kind);                                                 \
                break;                                                                             \
            }                                                                                      \
        }                                                                                          \
    }
CLI_REAL_KERNEL(float)
CLI_REAL_KERNEL(double)
CLI_REAL_KERNEL(cli_ldouble)

static void cli_face_cldouble(const void *vin, void *vio, size_t n, int kind)
{
    const cli_cldouble *in = vin;
    cli_cldouble *io = vio;
    for (size_t i = 0; i < n; i++)
        io[i] = kind == COLLAB_OP_SUM ? in[i] + io[i] : in[i] * io[i];
}

/* The face's kernel for a predefined op on a predefined type the core
   cannot compute, or NULL. */
static void (*cli_face_kernel(int kind, const cli_type_t *t))(const void *, void *, size_t, int)
{
    int logical = kind == COLLAB_OP_LAND || kind == COLLAB_OP_LOR || kind == COLLAB_OP_LXOR;
    int arith = kind == COLLAB_OP_SUM || kind == COLLAB_OP_PROD || kind == COLLAB_OP_MAX ||
                kind == COLLAB_OP_MIN;
    if (t->predef == CLI_T_REAL16 && (logical || arith))
        return cli_face_cli_ldouble;
    if (t->predef == CLI_T_COMPLEX32 && (kind == COLLAB_OP_SUM || kind == COLLAB_OP_PROD))
        return cli_face_cldouble;
    if (!logical || t->mult != 1)
        return NULL;
    switch (t->basic) {
    case COLLAB_FLOAT:
        return cli_face_float;
    case COLLAB_DOUBLE:
        return cli_face_double;
    case COLLAB_LONG_DOUBLE:
        return cli_face_cli_ldouble;
    default:
        return NULL;
    }
}

/* The trampoline the core calls for user ops (on the engine thread). */
static void cli_user_op_tramp(const void *in, void *inout, size_t count, void *ctx)
{
    cli_user_op_ctx_t *c = ctx;
    if (c->face_fn != NULL) {
        c->face_fn(in, inout, count, c->face_kind);
        return;
    }
    if (c->loc_kind != 0) {
        int max = c->loc_kind == COLLAB_OP_MAXLOC;
        if (c->loc_basic == COLLAB_FLOAT)
            cli_loc_float(in, inout, count, max);
        else
            cli_loc_double(in, inout, count, max);
        return;
    }
    MPI_Count n = c->mult > 0 ? (MPI_Count)count / c->mult : 0;
    MPI_Datatype dt = c->dtype;
    if (c->fn_c != NULL) {
        c->fn_c((void *)in, inout, &n, &dt);
    } else {
        int len = (int)n;
        c->fn((void *)in, inout, &len, &dt);
    }
}

/* A core type exactly `bytes` long that the core never interprets for
   user ops: it carries one program element per core element. */
static int cli_carrier(MPI_Count bytes, collab_dtype_t *t)
{
    switch (bytes) {
    case 1:
        *t = COLLAB_UINT8;
        return 1;
    case 2:
        *t = COLLAB_UINT16;
        return 1;
    case 4:
        *t = COLLAB_UINT32;
        return 1;
    case 8:
        *t = COLLAB_UINT64;
        return 1;
    case 16:
        *t = COLLAB_C_DOUBLE_COMPLEX;
        return 1;
    case 32:
        *t = COLLAB_C_LONG_DOUBLE_COMPLEX;
        return 1;
    default:
        return 0;
    }
}

int cli_op_prepare(cli_call_t *call, cli_op_t *op, cli_type_t *type, collab_op_t *out,
                   cli_user_op_ctx_t *ctx, collab_dtype_t *ctype, MPI_Count *cmult)
{
    *ctype = type->basic;
    *cmult = type->mult;
    if (op->predef < 0) {
        if (type->mult == 0 && type->size > 0)
            return cli_err(call, MPI_ERR_TYPE, "datatype", "empty datatype");
        *ctx = (cli_user_op_ctx_t){
            .fn = op->fn, .fn_c = op->fn_c, .dtype = cli_type_handle(type), .mult = type->mult};
        if (type->mult > 1) {
            /* The core cuts vectors on its element boundaries: make one
               core element one program element. */
            if (!cli_carrier(type->extent, ctype))
                return cli_err(call, MPI_ERR_UNSUPPORTED_OPERATION, "datatype",
                               "user-defined ops on a %lld-byte derived datatype are not "
                               "supported (element sizes 1, 2, 4, 8, 16 and 32 bytes are)",
                               (long long)type->extent);
            *cmult = 1;
            ctx->mult = 1;
        }
        *out = (collab_op_t){.kind = COLLAB_OP_USER,
                             .user_fn = cli_user_op_tramp,
                             .user_ctx = ctx,
                             .commutative = op->commute};
        return MPI_SUCCESS;
    }
    if (type->predef < 0 && cli_type_f90(type)) /* counts as the type it stands for */
        type = &cli_predef_types[type->base_predef];
    int kind = op->predef;
    const char *tname = cli_predef_types[type->base_predef].name;
    if (type->predef < 0) /* unlike accumulate, reductions allow only predefined types */
        return cli_err(call, MPI_ERR_OP, "op",
                       "%s is defined only for predefined datatypes, not for a derived type "
                       "(use a user-defined op)",
                       cli_op_names[kind]);
    if (kind == COLLAB_OP_REPLACE || kind == COLLAB_OP_NO_OP)
        return cli_err(call, MPI_ERR_OP, "op", "%s is only valid in one-sided accumulate calls",
                       cli_op_names[kind]);
    int ext = cli_abi_op_extension(kind, type->predef);
    if (ext < 0)
        return cli_err(call, MPI_ERR_UNSUPPORTED_OPERATION, "op",
                       "%s on datatype %s is not supported by this ABI's library either",
                       cli_op_names[kind], tname);
    if ((cli_op_categories(kind) & type->category) == 0 && ext == 0)
        return cli_err(call, MPI_ERR_OP, "op", "%s is not defined for datatype %s",
                       cli_op_names[kind], tname);
    void (*face_fn)(const void *, void *, size_t, int) = cli_face_kernel(kind, type);
    if (face_fn != NULL) {
        /* One carrier element per program element: the core moves it
           and never interprets it. */
        if (!cli_carrier(type->extent, ctype))
            return cli_err(call, MPI_ERR_UNSUPPORTED_OPERATION, "op",
                           "%s on datatype %s is not supported by mpicollab", cli_op_names[kind],
                           tname);
        *ctx = (cli_user_op_ctx_t){.face_fn = face_fn, .face_kind = kind};
        *cmult = 1;
        *out = (collab_op_t){.kind = COLLAB_OP_USER,
                             .user_fn = cli_user_op_tramp,
                             .user_ctx = ctx,
                             .commutative = 1};
        return MPI_SUCCESS;
    }
    if ((kind == COLLAB_OP_MINLOC || kind == COLLAB_OP_MAXLOC) &&
        (type->basic == COLLAB_FLOAT || type->basic == COLLAB_DOUBLE)) {
        /* One core element per (value, index) pair, carried as a complex
           number of the same layout so that no pair is cut in two. */
        *ctx = (cli_user_op_ctx_t){.loc_kind = kind, .loc_basic = type->basic};
        *ctype = type->basic == COLLAB_FLOAT ? COLLAB_C_FLOAT_COMPLEX : COLLAB_C_DOUBLE_COMPLEX;
        *cmult = type->mult / 2;
        *out = (collab_op_t){.kind = COLLAB_OP_USER,
                             .user_fn = cli_user_op_tramp,
                             .user_ctx = ctx,
                             .commutative = 1};
        return MPI_SUCCESS;
    }
    if (!collab_op_valid((collab_op_kind_t)kind, type->basic))
        return cli_err(call, MPI_ERR_UNSUPPORTED_OPERATION, "op",
                       "%s on datatype %s is not supported by mpicollab", cli_op_names[kind],
                       tname);
    *out = (collab_op_t){.kind = (collab_op_kind_t)kind};
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */

static int cli_op_new(cli_call_t *call, MPI_User_function *fn, MPI_User_function_c *fn_c,
                      int commute, MPI_Op *op)
{
    cli_op_t *o = calloc(1, sizeof *o);
    if (o == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    o->predef = -1;
    o->commute = commute != 0;
    o->fn = fn;
    o->fn_c = fn_c;
    if (cli_op_register(o, op) != MPI_SUCCESS) {
        free(o);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of op handles");
    }
    return MPI_SUCCESS;
}

int cli_impl_Op_create(cli_call_t *call, MPI_User_function *user_fn, int commute, MPI_Op *op)
{
    return cli_op_new(call, user_fn, NULL, commute, op);
}

int cli_impl_Op_create_c(cli_call_t *call, MPI_User_function_c *user_fn, int commute, MPI_Op *op)
{
    return cli_op_new(call, NULL, user_fn, commute, op);
}

int cli_impl_Op_free(cli_call_t *call, MPI_Op *op)
{
    int rc = cli_check_op(call, *op, "op");
    if (rc != MPI_SUCCESS)
        return rc;
    int why = 0;
    cli_op_t *o = cli_op_lookup(*op, &why);
    if (o->predef >= 0)
        return cli_err(call, MPI_ERR_OP, "op", "%s is predefined and cannot be freed",
                       cli_op_names[o->predef]);
    cli_lock();
    cli_table_remove(&cli.ops, o->index);
    cli_unlock();
    free(o);
    *op = cli_abi_op_null();
    return MPI_SUCCESS;
}

int cli_impl_Op_commutative(cli_call_t *call, MPI_Op op, int *commute)
{
    (void)call;
    int why = 0;
    *commute = cli_op_lookup(op, &why)->commute;
    return MPI_SUCCESS;
}

int cli_impl_Reduce_local_c(cli_call_t *call, const void *inbuf, void *inoutbuf, MPI_Count count,
                            MPI_Datatype datatype, MPI_Op op)
{
    int why = 0;
    cli_type_t *t = cli_type_lookup(datatype, &why);
    cli_op_t *o = cli_op_lookup(op, &why);
    if (count == 0)
        return MPI_SUCCESS;
    if (inbuf == NULL || inbuf == MPI_IN_PLACE)
        return cli_err(call, MPI_ERR_BUFFER, "inbuf", "NULL or MPI_IN_PLACE with count %lld",
                       (long long)count);
    if (inoutbuf == NULL || inoutbuf == MPI_IN_PLACE)
        return cli_err(call, MPI_ERR_BUFFER, "inoutbuf", "NULL or MPI_IN_PLACE with count %lld",
                       (long long)count);
    collab_op_t cop = {0};
    cli_user_op_ctx_t ctx;
    collab_dtype_t ctype;
    MPI_Count cmult, elems;
    int rc = cli_op_prepare(call, o, t, &cop, &ctx, &ctype, &cmult);
    if (rc != MPI_SUCCESS)
        return rc;
    if (__builtin_mul_overflow(count, cmult, &elems))
        return cli_err(call, MPI_ERR_COUNT, "count", "%lld elements overflow", (long long)count);
    if (cop.kind == COLLAB_OP_USER) {
        cli_user_op_tramp(inbuf, inoutbuf, (size_t)elems, &ctx);
        return MPI_SUCCESS;
    }
    int st = collab_reduce_local(inbuf, inoutbuf, (size_t)elems, ctype, &cop);
    if (st != COLLAB_OK)
        return cli_err_core(call, st, "local reduction");
    return MPI_SUCCESS;
}
