/*  cli_attr.c - keyvals and attributes of communicators and datatypes.

    An object's attributes are a list in order of setting; each holds a
    reference on its keyval, so MPI_Comm_free_keyval may run while
    attributes still use it.  Copy callbacks run on MPI_Comm_dup /
    MPI_Type_dup, delete callbacks on MPI_Comm_free / MPI_Type_free,
    MPI_*_delete_attr, replacement by MPI_*_set_attr, and (for
    MPI_COMM_SELF, then MPI_COMM_WORLD) at MPI_Finalize, in reverse order
    of setting.  Callbacks run without cli.lock held and may call MPI
    (mpi4py's do); the list is snapshotted first.  The predefined keys
    (MPI_TAG_UB ...) are answered from static values and cannot be set.
*/
#include "cli.h"
#include "cli_impl.h"

#include <stdlib.h>

extern int cli_lastusedcode;

static int cli_key_tag_ub = CLI_ABI_TAG_UB;
static int cli_key_host = MPI_PROC_NULL;
static int cli_key_io = MPI_ANY_SOURCE;
static int cli_key_wtime_global = 0;
static int cli_key_universe;
static int cli_key_appnum = 0;

void cli_keyval_unref(cli_keyval_t *k)
{
    if (--k->refs == 0) {
        cli_table_remove(&cli.keyvals, k->index);
        free(k);
    }
}

static int cli_keyval_new(cli_call_t *call, int kind, void (*copy)(void), void (*del)(void),
                          void *extra, int *keyval)
{
    cli_keyval_t *k = calloc(1, sizeof *k);
    if (k == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    k->kind = kind;
    k->refs = 1;
    k->copy_fn = copy;
    k->delete_fn = del;
    k->extra = extra;
    if (cli_keyval_register(k, keyval) != MPI_SUCCESS) {
        free(k);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of keyval handles");
    }
    return MPI_SUCCESS;
}

/* Resolves a created keyval of the given kind. */
static int cli_keyval_arg(cli_call_t *call, int keyval, int kind, cli_keyval_t **out)
{
    int why = 0;
    *out = cli_keyval_lookup(keyval, &why);
    if (*out == NULL)
        return cli_err(call, MPI_ERR_KEYVAL, "keyval", "%s",
                       why == CLI_H_PREDEF ? "a predefined attribute key cannot be used here"
                       : why == CLI_H_NULL ? "MPI_KEYVAL_INVALID"
                                           : "not a keyval handle");
    if ((*out)->kind != kind)
        return cli_err(call, MPI_ERR_KEYVAL, "keyval", "the keyval was created for %s",
                       (*out)->kind == CLI_KEYVAL_COMM ? "communicators" : "datatypes");
    return MPI_SUCCESS;
}

static int cli_keyval_release(cli_call_t *call, int *keyval, int kind)
{
    cli_keyval_t *k;
    int rc = cli_keyval_arg(call, *keyval, kind, &k);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_lock();
    cli_keyval_unref(k);
    cli_unlock();
    *keyval = cli_abi_keyval_null();
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Callbacks, typed per object kind. */

typedef struct {
    int kind;
    cli_comm_t *comm;
    cli_type_t *type;
} cli_obj_t;

static int cli_call_delete(const cli_obj_t *o, cli_keyval_t *k, void *value)
{
    if (k->delete_fn == NULL)
        return MPI_SUCCESS;
    int kh = cli_abi_keyval_dyn(k->index);
    if (o->kind == CLI_KEYVAL_COMM)
        return ((MPI_Comm_delete_attr_function *)k->delete_fn)(cli_comm_handle(o->comm), kh, value,
                                                               k->extra);
    return ((MPI_Type_delete_attr_function *)k->delete_fn)(cli_type_handle(o->type), kh, value,
                                                           k->extra);
}

static int cli_call_copy(const cli_obj_t *o, cli_keyval_t *k, void *in, void **out, int *flag)
{
    *flag = 0;
    if (k->copy_fn == NULL)
        return MPI_SUCCESS;
    int kh = cli_abi_keyval_dyn(k->index);
    if (o->kind == CLI_KEYVAL_COMM)
        return ((MPI_Comm_copy_attr_function *)k->copy_fn)(cli_comm_handle(o->comm), kh, k->extra,
                                                           in, out, flag);
    return ((MPI_Type_copy_attr_function *)k->copy_fn)(cli_type_handle(o->type), kh, k->extra, in,
                                                       out, flag);
}

static cli_attr_t **cli_obj_list(const cli_obj_t *o)
{
    return o->kind == CLI_KEYVAL_COMM ? &o->comm->attrs : &o->type->attrs;
}

/* ---------------------------------------------------------------------- */
/* Generic set / get / delete on a list. */

static int cli_attr_set(cli_call_t *call, const cli_obj_t *o, cli_keyval_t *k, void *value)
{
    cli_attr_t **list = cli_obj_list(o);
    cli_lock();
    cli_attr_t *a = *list;
    while (a != NULL && a->kv != k)
        a = a->next;
    void *old = a ? a->value : NULL;
    int had = a != NULL;
    if (had)
        k->refs++; /* keep k alive across the callback */
    cli_unlock();
    if (had) {
        int rc = cli_call_delete(o, k, old);
        cli_lock();
        cli_keyval_unref(k);
        cli_unlock();
        if (rc != MPI_SUCCESS)
            return cli_err(call, rc, "attribute_val",
                           "the delete callback of the previous value returned %d", rc);
    }
    cli_attr_t *n = calloc(1, sizeof *n);
    if (n == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    cli_lock();
    for (a = *list; a != NULL && a->kv != k; a = a->next)
        ;
    if (a != NULL) {
        a->value = value;
        free(n);
    } else {
        n->kv = k;
        n->value = value;
        k->refs++;
        cli_attr_t **p = list;
        while (*p != NULL)
            p = &(*p)->next;
        *p = n;
    }
    cli_unlock();
    return MPI_SUCCESS;
}

static int cli_attr_get(const cli_obj_t *o, cli_keyval_t *k, void *attribute_val, int *flag)
{
    cli_lock();
    cli_attr_t *a = *cli_obj_list(o);
    while (a != NULL && a->kv != k)
        a = a->next;
    *flag = a != NULL;
    if (a != NULL)
        *(void **)attribute_val = a->value;
    cli_unlock();
    return MPI_SUCCESS;
}

static int cli_attr_delete(cli_call_t *call, const cli_obj_t *o, cli_keyval_t *k)
{
    cli_attr_t **list = cli_obj_list(o);
    cli_lock();
    cli_attr_t *a = *list;
    while (a != NULL && a->kv != k)
        a = a->next;
    void *value = a ? a->value : NULL;
    cli_unlock();
    if (a == NULL)
        return cli_err(call, MPI_ERR_KEYVAL, "keyval", "no attribute is set for this key");
    int rc = cli_call_delete(o, k, value);
    if (rc != MPI_SUCCESS)
        return cli_err(call, rc, "keyval", "the delete callback returned %d", rc);
    cli_lock();
    for (cli_attr_t **p = list; *p != NULL; p = &(*p)->next) {
        if ((*p)->kv == k) {
            cli_attr_t *dead = *p;
            *p = dead->next;
            cli_keyval_unref(dead->kv);
            free(dead);
            break;
        }
    }
    cli_unlock();
    return MPI_SUCCESS;
}

/* Takes a snapshot of a list: arrays of keyvals (each referenced) and
   values.  Returns the count, or -1 when out of memory. */
static int cli_attr_snapshot(cli_attr_t *list, cli_keyval_t ***kvs, void ***vals)
{
    int n = 0;
    for (cli_attr_t *a = list; a != NULL; a = a->next)
        n++;
    *kvs = malloc((size_t)(n ? n : 1) * sizeof **kvs);
    *vals = malloc((size_t)(n ? n : 1) * sizeof **vals);
    if (*kvs == NULL || *vals == NULL) {
        free(*kvs);
        free(*vals);
        return -1;
    }
    int i = 0;
    for (cli_attr_t *a = list; a != NULL; a = a->next, i++) {
        (*kvs)[i] = a->kv;
        (*vals)[i] = a->value;
        a->kv->refs++;
    }
    return n;
}

static int cli_attr_copy_all(cli_call_t *call, const cli_obj_t *from, const cli_obj_t *to)
{
    cli_keyval_t **kvs;
    void **vals;
    cli_lock();
    int n = cli_attr_snapshot(*cli_obj_list(from), &kvs, &vals);
    cli_unlock();
    if (n < 0)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    int rc = MPI_SUCCESS;
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
        void *out = NULL;
        int flag = 0;
        int cb = cli_call_copy(from, kvs[i], vals[i], &out, &flag);
        if (cb != MPI_SUCCESS)
            rc = cli_err(call, cb, NULL, "an attribute copy callback returned %d", cb);
        else if (flag)
            rc = cli_attr_set(call, to, kvs[i], out);
    }
    cli_lock();
    for (int i = 0; i < n; i++)
        cli_keyval_unref(kvs[i]);
    cli_unlock();
    free(kvs);
    free(vals);
    return rc;
}

static int cli_attr_delete_all(cli_call_t *call, const cli_obj_t *o)
{
    cli_keyval_t **kvs;
    void **vals;
    cli_lock();
    int n = cli_attr_snapshot(*cli_obj_list(o), &kvs, &vals);
    cli_unlock();
    if (n < 0)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    int rc = MPI_SUCCESS;
    for (int i = n - 1; i >= 0 && rc == MPI_SUCCESS; i--) {
        int cb = cli_call_delete(o, kvs[i], vals[i]);
        if (cb != MPI_SUCCESS) {
            rc = cli_err(call, cb, NULL, "an attribute delete callback returned %d", cb);
            break;
        }
        cli_lock();
        for (cli_attr_t **p = cli_obj_list(o); *p != NULL; p = &(*p)->next) {
            if ((*p)->kv == kvs[i]) {
                cli_attr_t *dead = *p;
                *p = dead->next;
                cli_keyval_unref(dead->kv);
                free(dead);
                break;
            }
        }
        cli_unlock();
    }
    cli_lock();
    for (int i = 0; i < n; i++)
        cli_keyval_unref(kvs[i]);
    cli_unlock();
    free(kvs);
    free(vals);
    return rc;
}

int cli_attr_copy_comm(cli_call_t *call, cli_comm_t *from, cli_comm_t *to)
{
    cli_obj_t a = {CLI_KEYVAL_COMM, from, NULL}, b = {CLI_KEYVAL_COMM, to, NULL};
    return cli_attr_copy_all(call, &a, &b);
}

int cli_attr_delete_all_comm(cli_call_t *call, cli_comm_t *c)
{
    cli_obj_t o = {CLI_KEYVAL_COMM, c, NULL};
    return cli_attr_delete_all(call, &o);
}

int cli_attr_copy_type(cli_call_t *call, cli_type_t *from, cli_type_t *to)
{
    cli_obj_t a = {CLI_KEYVAL_TYPE, NULL, from}, b = {CLI_KEYVAL_TYPE, NULL, to};
    return cli_attr_copy_all(call, &a, &b);
}

int cli_attr_delete_all_type(cli_call_t *call, cli_type_t *t)
{
    cli_obj_t o = {CLI_KEYVAL_TYPE, NULL, t};
    return cli_attr_delete_all(call, &o);
}

/* ---------------------------------------------------------------------- */
/* Communicator attributes. */

int cli_impl_Comm_create_keyval(cli_call_t *call, MPI_Comm_copy_attr_function *copy_fn,
                                MPI_Comm_delete_attr_function *delete_fn, int *comm_keyval,
                                void *extra_state)
{
    return cli_keyval_new(call, CLI_KEYVAL_COMM, (void (*)(void))copy_fn, (void (*)(void))delete_fn,
                          extra_state, comm_keyval);
}

int cli_impl_Keyval_create(cli_call_t *call, MPI_Copy_function *copy_fn,
                           MPI_Delete_function *delete_fn, int *keyval, void *extra_state)
{
    return cli_keyval_new(call, CLI_KEYVAL_COMM, (void (*)(void))copy_fn, (void (*)(void))delete_fn,
                          extra_state, keyval);
}

int cli_impl_Comm_free_keyval(cli_call_t *call, int *comm_keyval)
{
    return cli_keyval_release(call, comm_keyval, CLI_KEYVAL_COMM);
}

int cli_impl_Keyval_free(cli_call_t *call, int *keyval)
{
    return cli_keyval_release(call, keyval, CLI_KEYVAL_COMM);
}

int cli_impl_Comm_set_attr(cli_call_t *call, MPI_Comm comm, int comm_keyval, void *attribute_val)
{
    (void)comm;
    cli_keyval_t *k;
    int rc = cli_keyval_arg(call, comm_keyval, CLI_KEYVAL_COMM, &k);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_obj_t o = {CLI_KEYVAL_COMM, call->comm, NULL};
    return cli_attr_set(call, &o, k, attribute_val);
}

int cli_impl_Attr_put(cli_call_t *call, MPI_Comm comm, int keyval, void *attribute_val)
{
    return cli_impl_Comm_set_attr(call, comm, keyval, attribute_val);
}

int cli_impl_Comm_get_attr(cli_call_t *call, MPI_Comm comm, int comm_keyval, void *attribute_val,
                           int *flag)
{
    (void)comm;
    int id = 0, fortran = 0;
    int kind = cli_abi_keyval_decode(comm_keyval, &id, &fortran);
    if (kind == CLI_H_PREDEF) {
        int *p = NULL;
        switch (id) {
        case CLI_KEY_TAG_UB:
            p = &cli_key_tag_ub;
            break;
        case CLI_KEY_HOST:
            p = &cli_key_host;
            break;
        case CLI_KEY_IO:
            p = &cli_key_io;
            break;
        case CLI_KEY_WTIME_IS_GLOBAL:
            p = &cli_key_wtime_global;
            break;
        case CLI_KEY_UNIVERSE_SIZE:
            __atomic_store_n(&cli_key_universe, collab_world_size(), __ATOMIC_RELAXED);
            p = &cli_key_universe;
            break;
        case CLI_KEY_LASTUSEDCODE:
            p = &cli_lastusedcode;
            break;
        case CLI_KEY_APPNUM:
            p = &cli_key_appnum;
            break;
        default:
            return cli_err(call, MPI_ERR_KEYVAL, "comm_keyval", "unknown predefined key");
        }
        if (fortran)
            *(MPI_Aint *)attribute_val = *p; /* the Fortran form returns the value */
        else
            *(int **)attribute_val = p;
        *flag = 1;
        return MPI_SUCCESS;
    }
    cli_keyval_t *k;
    int rc = cli_keyval_arg(call, comm_keyval, CLI_KEYVAL_COMM, &k);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_obj_t o = {CLI_KEYVAL_COMM, call->comm, NULL};
    return cli_attr_get(&o, k, attribute_val, flag);
}

int cli_impl_Attr_get(cli_call_t *call, MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
    return cli_impl_Comm_get_attr(call, comm, keyval, attribute_val, flag);
}

int cli_impl_Comm_delete_attr(cli_call_t *call, MPI_Comm comm, int comm_keyval)
{
    (void)comm;
    cli_keyval_t *k;
    int rc = cli_keyval_arg(call, comm_keyval, CLI_KEYVAL_COMM, &k);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_obj_t o = {CLI_KEYVAL_COMM, call->comm, NULL};
    return cli_attr_delete(call, &o, k);
}

int cli_impl_Attr_delete(cli_call_t *call, MPI_Comm comm, int keyval)
{
    return cli_impl_Comm_delete_attr(call, comm, keyval);
}

/* ---------------------------------------------------------------------- */
/* Datatype attributes. */

int cli_impl_Type_create_keyval(cli_call_t *call, MPI_Type_copy_attr_function *type_copy_attr_fn,
                                MPI_Type_delete_attr_function *type_delete_attr_fn,
                                int *type_keyval, void *extra_state)
{
    return cli_keyval_new(call, CLI_KEYVAL_TYPE, (void (*)(void))type_copy_attr_fn,
                          (void (*)(void))type_delete_attr_fn, extra_state, type_keyval);
}

int cli_impl_Type_free_keyval(cli_call_t *call, int *type_keyval)
{
    return cli_keyval_release(call, type_keyval, CLI_KEYVAL_TYPE);
}

static cli_type_t *cli_type_of(MPI_Datatype h)
{
    int why = 0;
    return cli_type_lookup(h, &why);
}

int cli_impl_Type_set_attr(cli_call_t *call, MPI_Datatype datatype, int type_keyval,
                           void *attribute_val)
{
    cli_keyval_t *k;
    int rc = cli_keyval_arg(call, type_keyval, CLI_KEYVAL_TYPE, &k);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_obj_t o = {CLI_KEYVAL_TYPE, NULL, cli_type_of(datatype)};
    return cli_attr_set(call, &o, k, attribute_val);
}

int cli_impl_Type_get_attr(cli_call_t *call, MPI_Datatype datatype, int type_keyval,
                           void *attribute_val, int *flag)
{
    cli_keyval_t *k;
    int rc = cli_keyval_arg(call, type_keyval, CLI_KEYVAL_TYPE, &k);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_obj_t o = {CLI_KEYVAL_TYPE, NULL, cli_type_of(datatype)};
    return cli_attr_get(&o, k, attribute_val, flag);
}

int cli_impl_Type_delete_attr(cli_call_t *call, MPI_Datatype datatype, int type_keyval)
{
    cli_keyval_t *k;
    int rc = cli_keyval_arg(call, type_keyval, CLI_KEYVAL_TYPE, &k);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_obj_t o = {CLI_KEYVAL_TYPE, NULL, cli_type_of(datatype)};
    return cli_attr_delete(call, &o, k);
}
