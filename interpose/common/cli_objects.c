/*  cli_objects.c - handle tables and handle <-> object lookups.

    Objects created at run time (communicators, groups, datatypes, ops,
    error handlers, requests, messages, info objects, keyvals) live in one
    growable table per kind; the table index is what the face's abi.h
    encodes into a handle (MPICH: a DIRECT handle, Open MPI: an address).
    Predefined objects are static and are found through their predefined
    id.  All table access happens under cli.lock.
*/
#include "cli.h"

#include <stdlib.h>

cli_state_t cli = {.lock = PTHREAD_MUTEX_INITIALIZER, .state = CLI_STATE_PRE};

void cli_lock(void)
{
    int rc = pthread_mutex_lock(&cli.lock);
    (void)rc;
}

void cli_unlock(void)
{
    int rc = pthread_mutex_unlock(&cli.lock);
    (void)rc;
}

int cli_table_add(cli_table_t *t, void *obj)
{
    for (int i = t->hint; i < t->cap; i++) {
        if (t->slots[i] == NULL) {
            t->slots[i] = obj;
            t->hint = i + 1;
            return i;
        }
    }
    if (t->cap > CLI_ABI_MAX_INDEX)
        return -1;
    int ncap = t->cap ? t->cap * 2 : 64;
    if (ncap > CLI_ABI_MAX_INDEX + 1)
        ncap = CLI_ABI_MAX_INDEX + 1;
    void **ns = realloc(t->slots, (size_t)ncap * sizeof(void *));
    if (ns == NULL)
        return -1;
    for (int i = t->cap; i < ncap; i++)
        ns[i] = NULL;
    int idx = t->cap;
    t->slots = ns;
    t->cap = ncap;
    t->slots[idx] = obj;
    t->hint = idx + 1;
    return idx;
}

void *cli_table_get(const cli_table_t *t, int index)
{
    if (index < 0 || index >= t->cap)
        return NULL;
    return t->slots[index];
}

void cli_table_remove(cli_table_t *t, int index)
{
    if (index < 0 || index >= t->cap)
        return;
    t->slots[index] = NULL;
    if (index < t->hint)
        t->hint = index;
}

/* ---------------------------------------------------------------------- */
/* Lookups.  A predefined handle maps to its static object; a dynamic one
   to the table entry, which must exist. */

#define CLI_LOOKUP_DYN(table, idx, why, type)                                                      \
    do {                                                                                           \
        cli_lock();                                                                                \
        type *o_ = cli_table_get(&cli.table, idx);                                                 \
        cli_unlock();                                                                              \
        if (o_ == NULL)                                                                            \
            *(why) = CLI_H_BAD;                                                                    \
        return o_;                                                                                 \
    } while (0)

cli_comm_t *cli_comm_lookup(MPI_Comm h, int *why)
{
    int id = 0;
    int k = cli_abi_comm_decode(h, &id);
    if (k == CLI_H_PREDEF)
        return id == CLI_COMM_WORLD ? &cli_world : &cli_self;
    if (k == CLI_H_DYN)
        CLI_LOOKUP_DYN(comms, id, why, cli_comm_t);
    *why = k;
    return NULL;
}

MPI_Comm cli_comm_handle(const cli_comm_t *c)
{
    return c->predef >= 0 ? cli_abi_comm_predef(c->predef) : cli_abi_comm_dyn(c->index);
}

extern cli_group_t cli_group_empty;

cli_group_t *cli_group_lookup(MPI_Group h, int *why)
{
    int id = 0;
    int k = cli_abi_group_decode(h, &id);
    if (k == CLI_H_PREDEF)
        return &cli_group_empty;
    if (k == CLI_H_DYN)
        CLI_LOOKUP_DYN(groups, id, why, cli_group_t);
    *why = k;
    return NULL;
}

MPI_Group cli_group_handle(const cli_group_t *g)
{
    return g->predef >= 0 ? cli_abi_group_predef(g->predef) : cli_abi_group_dyn(g->index);
}

cli_type_t *cli_type_lookup(MPI_Datatype h, int *why)
{
    int id = 0;
    int k = cli_abi_type_decode(h, &id);
    if (k == CLI_H_PREDEF && id >= 0 && id < CLI_NTYPES)
        return &cli_predef_types[id];
    if (k == CLI_H_DYN)
        CLI_LOOKUP_DYN(types, id, why, cli_type_t);
    *why = k == CLI_H_PREDEF ? CLI_H_BAD : k;
    return NULL;
}

MPI_Datatype cli_type_handle(const cli_type_t *t)
{
    return t->predef >= 0 ? cli_abi_type_predef(t->predef) : cli_abi_type_dyn(t->index);
}

extern cli_op_t cli_predef_ops[COLLAB_OP_COUNT];

cli_op_t *cli_op_lookup(MPI_Op h, int *why)
{
    int id = 0;
    int k = cli_abi_op_decode(h, &id);
    if (k == CLI_H_PREDEF && id >= 0 && id < COLLAB_OP_USER)
        return &cli_predef_ops[id];
    if (k == CLI_H_DYN)
        CLI_LOOKUP_DYN(ops, id, why, cli_op_t);
    *why = k == CLI_H_PREDEF ? CLI_H_BAD : k;
    return NULL;
}

MPI_Op cli_op_handle(const cli_op_t *o)
{
    return o->predef >= 0 ? cli_abi_op_predef(o->predef) : cli_abi_op_dyn(o->index);
}

extern cli_info_t cli_info_env;

cli_info_t *cli_info_lookup(MPI_Info h, int *why)
{
    int id = 0;
    int k = cli_abi_info_decode(h, &id);
    if (k == CLI_H_PREDEF)
        return &cli_info_env;
    if (k == CLI_H_DYN)
        CLI_LOOKUP_DYN(infos, id, why, cli_info_t);
    *why = k;
    return NULL;
}

MPI_Info cli_info_handle(const cli_info_t *i)
{
    return i->predef >= 0 ? cli_abi_info_predef(i->predef) : cli_abi_info_dyn(i->index);
}

cli_req_t *cli_req_lookup(MPI_Request h, int *why)
{
    int id = 0;
    int k = cli_abi_req_decode(h, &id);
    if (k == CLI_H_DYN)
        CLI_LOOKUP_DYN(reqs, id, why, cli_req_t);
    *why = k == CLI_H_PREDEF ? CLI_H_BAD : k;
    return NULL;
}

MPI_Request cli_req_handle(const cli_req_t *r)
{
    return cli_abi_req_dyn(r->index);
}

cli_msg_t *cli_msg_lookup(MPI_Message h, int *why)
{
    int id = 0;
    int k = cli_abi_msg_decode(h, &id);
    if (k == CLI_H_DYN)
        CLI_LOOKUP_DYN(msgs, id, why, cli_msg_t);
    *why = k; /* CLI_H_PREDEF: MPI_MESSAGE_NO_PROC, handled by the caller */
    return NULL;
}

cli_keyval_t *cli_keyval_lookup(int h, int *why)
{
    int id = 0, fortran = 0;
    int k = cli_abi_keyval_decode(h, &id, &fortran);
    if (k == CLI_H_DYN)
        CLI_LOOKUP_DYN(keyvals, id, why, cli_keyval_t);
    *why = k; /* CLI_H_PREDEF: a predefined key, handled by the caller */
    return NULL;
}

cli_errh_t *cli_errh_lookup(MPI_Errhandler h, int *why)
{
    int id = 0;
    int k = cli_abi_errh_decode(h, &id);
    if (k == CLI_H_PREDEF && id >= 0 && id < CLI_ERRH_PREDEF_COUNT)
        return &cli_errh_predef[id];
    if (k == CLI_H_DYN)
        CLI_LOOKUP_DYN(errhs, id, why, cli_errh_t);
    *why = k == CLI_H_PREDEF ? CLI_H_BAD : k;
    return NULL;
}

MPI_Errhandler cli_errh_handle(const cli_errh_t *e)
{
    return e->predef >= 0 ? cli_abi_errh_predef(e->predef) : cli_abi_errh_dyn(e->index);
}

/* ---------------------------------------------------------------------- */
/* Registration. */

#define CLI_REGISTER(table, obj, out, mk)                                                          \
    do {                                                                                           \
        cli_lock();                                                                                \
        int i_ = cli_table_add(&cli.table, obj);                                                   \
        if (i_ >= 0)                                                                               \
            (obj)->index = i_;                                                                     \
        cli_unlock();                                                                              \
        if (i_ < 0)                                                                                \
            return MPI_ERR_NO_MEM;                                                                 \
        *(out) = mk(i_);                                                                           \
        return MPI_SUCCESS;                                                                        \
    } while (0)

int cli_comm_register(cli_comm_t *c, MPI_Comm *out)
{
    CLI_REGISTER(comms, c, out, cli_abi_comm_dyn);
}

int cli_group_register(cli_group_t *g, MPI_Group *out)
{
    CLI_REGISTER(groups, g, out, cli_abi_group_dyn);
}

int cli_type_register(cli_type_t *t, MPI_Datatype *out)
{
    CLI_REGISTER(types, t, out, cli_abi_type_dyn);
}

int cli_op_register(cli_op_t *o, MPI_Op *out)
{
    CLI_REGISTER(ops, o, out, cli_abi_op_dyn);
}

int cli_info_register(cli_info_t *i, MPI_Info *out)
{
    CLI_REGISTER(infos, i, out, cli_abi_info_dyn);
}

int cli_req_register(cli_req_t *r, MPI_Request *out)
{
    CLI_REGISTER(reqs, r, out, cli_abi_req_dyn);
}

int cli_msg_register(cli_msg_t *m, MPI_Message *out)
{
    CLI_REGISTER(msgs, m, out, cli_abi_msg_dyn);
}

int cli_errh_register(cli_errh_t *e, MPI_Errhandler *out)
{
    CLI_REGISTER(errhs, e, out, cli_abi_errh_dyn);
}

int cli_keyval_register(cli_keyval_t *k, int *out)
{
    CLI_REGISTER(keyvals, k, out, cli_abi_keyval_dyn);
}
