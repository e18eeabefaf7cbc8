/*  cli_op.c - reduction operations.

    The predefined ops map to collab_op_kind_t.  Before a reduction runs,
    cli_op_prepare() checks the op against the datatype with the MPI
    standard's table (MAX/MIN on integers and floating point, SUM/PROD
    also on complex, logical ops on integers and logicals, bitwise ops on
    integers and MPI_BYTE, MINLOC/MAXLOC on pair types; MPI_REPLACE and
    MPI_NO_OP only in one-sided accumulates) and reports MPI_ERR_OP; a
    combination the standard allows but the core cannot compute (e.g.
    128-bit reals) is MPI_ERR_UNSUPPORTED_OPERATION.  User ops
    (MPI_Op_create) reach the core as COLLAB_OP_USER through a trampoline
    that calls the program's function with its own datatype handle and
    element count.
*/
#include "cli.h"
#include "cli_impl.h"

#include <stdlib.h>

cli_op_t cli_predef_ops[COLLAB_OP_COUNT] = {
#define O_(k) [k] = {.predef = k, .index = -1, .commute = 1}
    O_(COLLAB_OP_SUM),    O_(COLLAB_OP_PROD),   O_(COLLAB_OP_MAX),    O_(COLLAB_OP_MIN),
    O_(COLLAB_OP_LAND),   O_(COLLAB_OP_LOR),    O_(COLLAB_OP_LXOR),   O_(COLLAB_OP_BAND),
    O_(COLLAB_OP_BOR),    O_(COLLAB_OP_BXOR),   O_(COLLAB_OP_MAXLOC), O_(COLLAB_OP_MINLOC),
    O_(COLLAB_OP_REPLACE), O_(COLLAB_OP_NO_OP),
#undef O_
};

static const char *const cli_op_names[COLLAB_OP_COUNT] = {
    [COLLAB_OP_SUM] = "MPI_SUM",       [COLLAB_OP_PROD] = "MPI_PROD",
    [COLLAB_OP_MAX] = "MPI_MAX",       [COLLAB_OP_MIN] = "MPI_MIN",
    [COLLAB_OP_LAND] = "MPI_LAND",     [COLLAB_OP_LOR] = "MPI_LOR",
    [COLLAB_OP_LXOR] = "MPI_LXOR",     [COLLAB_OP_BAND] = "MPI_BAND",
    [COLLAB_OP_BOR] = "MPI_BOR",       [COLLAB_OP_BXOR] = "MPI_BXOR",
    [COLLAB_OP_MAXLOC] = "MPI_MAXLOC", [COLLAB_OP_MINLOC] = "MPI_MINLOC",
    [COLLAB_OP_REPLACE] = "MPI_REPLACE", [COLLAB_OP_NO_OP] = "MPI_NO_OP",
    [COLLAB_OP_USER] = "a user-defined op",
};

/* Categories of datatypes each predefined op is defined for. */
static int cli_op_categories(int kind)
{
    switch (kind) {
    case COLLAB_OP_MAX:
    case COLLAB_OP_MIN: return CLI_CAT_CINT | CLI_CAT_FINT | CLI_CAT_FLOAT;
    case COLLAB_OP_SUM:
    case COLLAB_OP_PROD: return CLI_CAT_CINT | CLI_CAT_FINT | CLI_CAT_FLOAT | CLI_CAT_COMPLEX;
    case COLLAB_OP_LAND:
    case COLLAB_OP_LOR:
    case COLLAB_OP_LXOR: return CLI_CAT_CINT | CLI_CAT_LOGICAL;
    case COLLAB_OP_BAND:
    case COLLAB_OP_BOR:
    case COLLAB_OP_BXOR: return CLI_CAT_CINT | CLI_CAT_FINT | CLI_CAT_BYTE;
    case COLLAB_OP_MAXLOC:
    case COLLAB_OP_MINLOC: return CLI_CAT_PAIR;
    default: return 0;
    }
}

/* The trampoline the core calls for user ops (on the engine thread). */
static void cli_user_op_tramp(const void *in, void *inout, size_t count, void *ctx)
{
    cli_user_op_ctx_t *c = ctx;
    MPI_Count n = c->mult > 0 ? (MPI_Count)count / c->mult : 0;
    MPI_Datatype dt = c->dtype;
    if (c->fn_c != NULL) {
        c->fn_c((void *)in, inout, &n, &dt);
    } else {
        int len = (int)n;
        c->fn((void *)in, inout, &len, &dt);
    }
}

int cli_op_prepare(cli_call_t *call, cli_op_t *op, cli_type_t *type, collab_op_t *out,
                   cli_user_op_ctx_t *ctx)
{
    if (op->predef < 0) {
        if (type->mult == 0 && type->size > 0)
            return cli_err(call, MPI_ERR_TYPE, "datatype", "empty datatype");
        ctx->fn = op->fn;
        ctx->fn_c = op->fn_c;
        ctx->dtype = cli_type_handle(type);
        ctx->mult = type->mult;
        *out = (collab_op_t){.kind = COLLAB_OP_USER,
                             .user_fn = cli_user_op_tramp,
                             .user_ctx = ctx,
                             .commutative = op->commute};
        return MPI_SUCCESS;
    }
    int kind = op->predef;
    const char *tname = cli_predef_types[type->base_predef].name;
    if (kind == COLLAB_OP_REPLACE || kind == COLLAB_OP_NO_OP)
        return cli_err(call, MPI_ERR_OP, "op", "%s is only valid in one-sided accumulate calls",
                       cli_op_names[kind]);
    if ((cli_op_categories(kind) & type->category) == 0)
        return cli_err(call, MPI_ERR_OP, "op", "%s is not defined for datatype %s",
                       cli_op_names[kind], tname);
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
    collab_op_t cop;
    cli_user_op_ctx_t ctx;
    int rc = cli_op_prepare(call, o, t, &cop, &ctx);
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Count elems = cli_type_elems(t, count);
    if (elems < 0)
        return cli_err(call, MPI_ERR_COUNT, "count", "%lld elements overflow", (long long)count);
    if (cop.kind == COLLAB_OP_USER) {
        cli_user_op_tramp(inbuf, inoutbuf, (size_t)elems, &ctx);
        return MPI_SUCCESS;
    }
    int st = collab_reduce_local(inbuf, inoutbuf, (size_t)elems, t->basic, &cop);
    if (st != COLLAB_OK)
        return cli_err_core(call, st, "local reduction");
    return MPI_SUCCESS;
}
