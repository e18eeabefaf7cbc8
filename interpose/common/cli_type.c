/*  cli_type.c - datatypes.

    Every predefined datatype of either ABI is described once here
    (cli_predef_types, indexed by the ABI-neutral id of cli_ids.h): its
    name, the core element type it maps to with a multiplier, its size,
    extent and MPI category (for the op/type table of cli_op.c).  Derived
    types made by MPI_Type_contiguous, MPI_Type_dup and MPI_Type_(h)vector
    with contiguous blocks flatten to (core type, multiplier), so every
    type the face accepts is one contiguous run of core elements; other
    constructors report MPI_ERR_UNSUPPORTED_OPERATION.  Data moves as
    count * extent bytes (pair types keep their padding), and MPI_Pack
    packs densely (size bytes per element) as the standard requires.
*/
#include "cli.h"
#include "cli_impl.h"
#include "cli_tmap.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define T_(id, nm, bt, ml, sz, ext, text, cat)                                                     \
    [CLI_T_##id] = {.predef = CLI_T_##id,                                                          \
                    .index = -1,                                                                   \
                    .refs = 1,                                                                     \
                    .committed = 1,                                                                \
                    .basic = bt,                                                                   \
                    .mult = ml,                                                                    \
                    .size = sz,                                                                    \
                    .extent = ext,                                                                 \
                    .true_extent = text,                                                           \
                    .category = cat,                                                               \
                    .base_predef = CLI_T_##id,                                                     \
                    .combiner = MPI_COMBINER_NAMED,                                                \
                    .name = nm}
#define S_(id, nm, bt, sz, cat) T_(id, nm, bt, 1, sz, sz, sz, cat)

cli_type_t cli_predef_types[CLI_NTYPES] = {
    S_(CHAR, "MPI_CHAR", COLLAB_INT8, 1, CLI_CAT_NONE),
    S_(SIGNED_CHAR, "MPI_SIGNED_CHAR", COLLAB_INT8, 1, CLI_CAT_CINT),
    S_(UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", COLLAB_UINT8, 1, CLI_CAT_CINT),
    S_(BYTE, "MPI_BYTE", COLLAB_UINT8, 1, CLI_CAT_BYTE),
    S_(WCHAR, "MPI_WCHAR", COLLAB_INT32, 4, CLI_CAT_NONE),
    S_(SHORT, "MPI_SHORT", COLLAB_INT16, 2, CLI_CAT_CINT),
    S_(UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", COLLAB_UINT16, 2, CLI_CAT_CINT),
    S_(INT, "MPI_INT", COLLAB_INT32, 4, CLI_CAT_CINT),
    S_(UNSIGNED, "MPI_UNSIGNED", COLLAB_UINT32, 4, CLI_CAT_CINT),
    S_(LONG, "MPI_LONG", COLLAB_INT64, 8, CLI_CAT_CINT),
    S_(UNSIGNED_LONG, "MPI_UNSIGNED_LONG", COLLAB_UINT64, 8, CLI_CAT_CINT),
    S_(FLOAT, "MPI_FLOAT", COLLAB_FLOAT, 4, CLI_CAT_FLOAT),
    S_(DOUBLE, "MPI_DOUBLE", COLLAB_DOUBLE, 8, CLI_CAT_FLOAT),
    S_(LONG_DOUBLE, "MPI_LONG_DOUBLE", COLLAB_LONG_DOUBLE, 16, CLI_CAT_FLOAT),
    S_(LONG_LONG_INT, "MPI_LONG_LONG_INT", COLLAB_INT64, 8, CLI_CAT_CINT),
    S_(UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", COLLAB_UINT64, 8, CLI_CAT_CINT),
    S_(PACKED, "MPI_PACKED", COLLAB_BYTE, 1, CLI_CAT_NONE),
    T_(LB, "MPI_LB", COLLAB_BYTE, 0, 0, 0, 0, CLI_CAT_NONE),
    T_(UB, "MPI_UB", COLLAB_BYTE, 0, 0, 0, 0, CLI_CAT_NONE),
    T_(FLOAT_INT, "MPI_FLOAT_INT", COLLAB_FLOAT_INT, 1, 8, 8, 8, CLI_CAT_PAIR),
    T_(DOUBLE_INT, "MPI_DOUBLE_INT", COLLAB_DOUBLE_INT, 1, 12, 16, 12, CLI_CAT_PAIR),
    T_(LONG_INT, "MPI_LONG_INT", COLLAB_LONG_INT, 1, 12, 16, 12, CLI_CAT_PAIR),
    T_(SHORT_INT, "MPI_SHORT_INT", COLLAB_SHORT_INT, 1, 6, 8, 8, CLI_CAT_PAIR),
    T_(2INT, "MPI_2INT", COLLAB_2INT, 1, 8, 8, 8, CLI_CAT_PAIR),
    T_(LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT", COLLAB_LONG_DOUBLE_INT, 1, 20, 32, 20, CLI_CAT_PAIR),
    S_(COMPLEX, "MPI_COMPLEX", COLLAB_C_FLOAT_COMPLEX, 8, CLI_CAT_COMPLEX),
    S_(DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", COLLAB_C_DOUBLE_COMPLEX, 16, CLI_CAT_COMPLEX),
    S_(LOGICAL, "MPI_LOGICAL", COLLAB_INT32, 4, CLI_CAT_LOGICAL),
    S_(REAL, "MPI_REAL", COLLAB_FLOAT, 4, CLI_CAT_FLOAT),
    S_(DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", COLLAB_DOUBLE, 8, CLI_CAT_FLOAT),
    S_(INTEGER, "MPI_INTEGER", COLLAB_INT32, 4, CLI_CAT_FINT),
    T_(2INTEGER, "MPI_2INTEGER", COLLAB_2INT, 1, 8, 8, 8, CLI_CAT_PAIR),
    T_(2REAL, "MPI_2REAL", COLLAB_FLOAT, 2, 8, 8, 8, CLI_CAT_PAIR),
    T_(2DOUBLE_PRECISION, "MPI_2DOUBLE_PRECISION", COLLAB_DOUBLE, 2, 16, 16, 16, CLI_CAT_PAIR),
    T_(2COMPLEX, "MPI_2COMPLEX", COLLAB_C_FLOAT_COMPLEX, 2, 16, 16, 16, CLI_CAT_NONE),
    T_(2DOUBLE_COMPLEX, "MPI_2DOUBLE_COMPLEX", COLLAB_C_DOUBLE_COMPLEX, 2, 32, 32, 32,
       CLI_CAT_NONE),
    S_(CHARACTER, "MPI_CHARACTER", COLLAB_INT8, 1, CLI_CAT_NONE),
    S_(REAL2, "MPI_REAL2", COLLAB_FLOAT16, 2, CLI_CAT_FLOAT),
    S_(REAL4, "MPI_REAL4", COLLAB_FLOAT, 4, CLI_CAT_FLOAT),
    S_(REAL8, "MPI_REAL8", COLLAB_DOUBLE, 8, CLI_CAT_FLOAT),
    T_(REAL16, "MPI_REAL16", COLLAB_BYTE, 16, 16, 16, 16, CLI_CAT_FLOAT),
    T_(COMPLEX4, "MPI_COMPLEX4", COLLAB_BYTE, 4, 4, 4, 4, CLI_CAT_COMPLEX),
    S_(COMPLEX8, "MPI_COMPLEX8", COLLAB_C_FLOAT_COMPLEX, 8, CLI_CAT_COMPLEX),
    S_(COMPLEX16, "MPI_COMPLEX16", COLLAB_C_DOUBLE_COMPLEX, 16, CLI_CAT_COMPLEX),
    T_(COMPLEX32, "MPI_COMPLEX32", COLLAB_BYTE, 32, 32, 32, 32, CLI_CAT_COMPLEX),
    S_(INTEGER1, "MPI_INTEGER1", COLLAB_INT8, 1, CLI_CAT_FINT),
    S_(INTEGER2, "MPI_INTEGER2", COLLAB_INT16, 2, CLI_CAT_FINT),
    S_(INTEGER4, "MPI_INTEGER4", COLLAB_INT32, 4, CLI_CAT_FINT),
    S_(INTEGER8, "MPI_INTEGER8", COLLAB_INT64, 8, CLI_CAT_FINT),
    T_(INTEGER16, "MPI_INTEGER16", COLLAB_BYTE, 16, 16, 16, 16, CLI_CAT_FINT),
    S_(LOGICAL1, "MPI_LOGICAL1", COLLAB_INT8, 1, CLI_CAT_LOGICAL),
    S_(LOGICAL2, "MPI_LOGICAL2", COLLAB_INT16, 2, CLI_CAT_LOGICAL),
    S_(LOGICAL4, "MPI_LOGICAL4", COLLAB_INT32, 4, CLI_CAT_LOGICAL),
    S_(LOGICAL8, "MPI_LOGICAL8", COLLAB_INT64, 8, CLI_CAT_LOGICAL),
    S_(INT8_T, "MPI_INT8_T", COLLAB_INT8, 1, CLI_CAT_CINT),
    S_(INT16_T, "MPI_INT16_T", COLLAB_INT16, 2, CLI_CAT_CINT),
    S_(INT32_T, "MPI_INT32_T", COLLAB_INT32, 4, CLI_CAT_CINT),
    S_(INT64_T, "MPI_INT64_T", COLLAB_INT64, 8, CLI_CAT_CINT),
    S_(UINT8_T, "MPI_UINT8_T", COLLAB_UINT8, 1, CLI_CAT_CINT),
    S_(UINT16_T, "MPI_UINT16_T", COLLAB_UINT16, 2, CLI_CAT_CINT),
    S_(UINT32_T, "MPI_UINT32_T", COLLAB_UINT32, 4, CLI_CAT_CINT),
    S_(UINT64_T, "MPI_UINT64_T", COLLAB_UINT64, 8, CLI_CAT_CINT),
    S_(C_BOOL, "MPI_C_BOOL", COLLAB_C_BOOL, 1, CLI_CAT_LOGICAL),
    S_(C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", COLLAB_C_FLOAT_COMPLEX, 8, CLI_CAT_COMPLEX),
    S_(C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", COLLAB_C_DOUBLE_COMPLEX, 16, CLI_CAT_COMPLEX),
    S_(C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX", COLLAB_C_LONG_DOUBLE_COMPLEX, 32,
       CLI_CAT_COMPLEX),
    S_(C_FLOAT16, "MPIX_C_FLOAT16", COLLAB_FLOAT16, 2, CLI_CAT_FLOAT),
    S_(AINT, "MPI_AINT", COLLAB_INT64, 8, CLI_CAT_MULTI),
    S_(OFFSET, "MPI_OFFSET", COLLAB_INT64, 8, CLI_CAT_MULTI),
    S_(COUNT, "MPI_COUNT", COLLAB_INT64, 8, CLI_CAT_MULTI),
    S_(CXX_BOOL, "MPI_CXX_BOOL", COLLAB_C_BOOL, 1, CLI_CAT_LOGICAL),
    S_(CXX_FLOAT_COMPLEX, "MPI_CXX_FLOAT_COMPLEX", COLLAB_C_FLOAT_COMPLEX, 8, CLI_CAT_COMPLEX),
    S_(CXX_DOUBLE_COMPLEX, "MPI_CXX_DOUBLE_COMPLEX", COLLAB_C_DOUBLE_COMPLEX, 16, CLI_CAT_COMPLEX),
    S_(CXX_LONG_DOUBLE_COMPLEX, "MPI_CXX_LONG_DOUBLE_COMPLEX", COLLAB_C_LONG_DOUBLE_COMPLEX, 32,
       CLI_CAT_COMPLEX),
};
#undef S_
#undef T_

MPI_Count cli_type_bytes(const cli_type_t *t, MPI_Count count)
{
    MPI_Count r;
    if (__builtin_mul_overflow(count, t->extent, &r))
        return -1;
    return r;
}

MPI_Count cli_type_elems(const cli_type_t *t, MPI_Count count)
{
    MPI_Count r;
    if (__builtin_mul_overflow(count, t->mult, &r))
        return -1;
    return r;
}

void cli_type_unref(cli_type_t *t)
{
    if (t->predef >= 0)
        return;
    if (--t->refs == 0) {
        cli_table_remove(&cli.types, t->index);
        if (t->old != NULL)
            cli_type_unref(t->old);
        cli_tmap_destroy(&t->map);
        cli_tc_destroy(&t->tc);
        free(t);
    }
}

static cli_type_t *cli_type_get(MPI_Datatype h)
{
    int why = 0;
    return cli_type_lookup(h, &why); /* already checked by the binding */
}

/* ---------------------------------------------------------------------- */
/* Queries. */

int cli_impl_Type_size(cli_call_t *call, MPI_Datatype datatype, int *size)
{
    (void)call;
    *size = cli_int_count(cli_type_get(datatype)->size);
    return MPI_SUCCESS;
}

int cli_impl_Type_size_x(cli_call_t *call, MPI_Datatype datatype, MPI_Count *size)
{
    (void)call;
    *size = cli_type_get(datatype)->size;
    return MPI_SUCCESS;
}

int cli_impl_Type_size_c(cli_call_t *call, MPI_Datatype datatype, MPI_Count *size)
{
    return cli_impl_Type_size_x(call, datatype, size);
}

int cli_impl_Type_get_extent(cli_call_t *call, MPI_Datatype datatype, MPI_Aint *lb,
                             MPI_Aint *extent)
{
    (void)call;
    *lb = (MPI_Aint)cli_type_get(datatype)->lb;
    *extent = (MPI_Aint)cli_type_get(datatype)->extent;
    return MPI_SUCCESS;
}

int cli_impl_Type_get_extent_x(cli_call_t *call, MPI_Datatype datatype, MPI_Count *lb,
                               MPI_Count *extent)
{
    (void)call;
    *lb = cli_type_get(datatype)->lb;
    *extent = cli_type_get(datatype)->extent;
    return MPI_SUCCESS;
}

int cli_impl_Type_get_extent_c(cli_call_t *call, MPI_Datatype datatype, MPI_Count *lb,
                               MPI_Count *extent)
{
    return cli_impl_Type_get_extent_x(call, datatype, lb, extent);
}

int cli_impl_Type_get_true_extent(cli_call_t *call, MPI_Datatype datatype, MPI_Aint *true_lb,
                                  MPI_Aint *true_extent)
{
    (void)call;
    *true_lb = (MPI_Aint)cli_type_get(datatype)->true_lb;
    *true_extent = (MPI_Aint)cli_type_get(datatype)->true_extent;
    return MPI_SUCCESS;
}

int cli_impl_Type_get_true_extent_x(cli_call_t *call, MPI_Datatype datatype, MPI_Count *true_lb,
                                    MPI_Count *true_extent)
{
    (void)call;
    *true_lb = cli_type_get(datatype)->true_lb;
    *true_extent = cli_type_get(datatype)->true_extent;
    return MPI_SUCCESS;
}

int cli_impl_Type_get_true_extent_c(cli_call_t *call, MPI_Datatype datatype, MPI_Count *true_lb,
                                    MPI_Count *true_extent)
{
    return cli_impl_Type_get_true_extent_x(call, datatype, true_lb, true_extent);
}

int cli_impl_Type_extent(cli_call_t *call, MPI_Datatype datatype, MPI_Aint *extent)
{
    (void)call;
    *extent = (MPI_Aint)cli_type_get(datatype)->extent;
    return MPI_SUCCESS;
}

int cli_impl_Type_lb(cli_call_t *call, MPI_Datatype datatype, MPI_Aint *displacement)
{
    (void)call;
    *displacement = (MPI_Aint)cli_type_get(datatype)->lb;
    return MPI_SUCCESS;
}

int cli_impl_Type_ub(cli_call_t *call, MPI_Datatype datatype, MPI_Aint *displacement)
{
    (void)call;
    cli_type_t *t = cli_type_get(datatype);
    *displacement = (MPI_Aint)(t->lb + t->extent);
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Constructors. */

static int cli_type_derive(cli_call_t *call, cli_type_t *old, MPI_Count n, int combiner,
                           MPI_Count block, MPI_Count stride, MPI_Datatype *newtype)
{
    MPI_Count mult, size, extent;
    if (__builtin_mul_overflow(old->mult, n, &mult) ||
        __builtin_mul_overflow(old->size, n, &size) ||
        __builtin_mul_overflow(old->extent, n, &extent))
        return cli_err(call, MPI_ERR_COUNT, "count", "%lld elements overflow the type size",
                       (long long)n);
    cli_type_t *t = calloc(1, sizeof *t);
    if (t == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    t->predef = -1;
    t->refs = 1;
    t->basic = old->basic;
    t->mult = mult;
    t->size = size;
    t->extent = extent;
    t->true_extent = n > 0 ? (n - 1) * old->extent + old->true_extent : 0;
    t->category = old->category;
    t->base_predef = old->base_predef;
    t->combiner = combiner;
    t->comb_count = combiner == MPI_COMBINER_VECTOR || combiner == MPI_COMBINER_HVECTOR
                        ? n / (block ? block : 1)
                        : n;
    t->comb_block = block;
    t->comb_stride = stride;
    t->old = old;
    if (old->map != NULL) { /* contiguous or dup of a non-contiguous type */
        int err = 0;
        if ((t->map = cli_tmap_repeat(old, n, &err)) == NULL) {
            free(t);
            return cli_err(call, err, NULL, "out of memory for the datatype's map");
        }
        t->lb = t->map->lb;
        t->extent = t->map->ub - t->map->lb;
        t->true_lb = t->map->true_lb;
        t->true_extent = t->map->true_ub - t->map->true_lb;
    }
    cli_lock();
    old->refs++;
    cli_unlock();
    if (cli_type_register(t, newtype) != MPI_SUCCESS) {
        cli_lock();
        cli_type_unref(old);
        cli_unlock();
        free(t);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of datatype handles");
    }
    return MPI_SUCCESS;
}

int cli_impl_Type_contiguous_c(cli_call_t *call, MPI_Count count, MPI_Datatype oldtype,
                               MPI_Datatype *newtype)
{
    return cli_type_derive(call, cli_type_get(oldtype), count, MPI_COMBINER_CONTIGUOUS, 0, 0,
                           newtype);
}

int cli_impl_Type_vector_c(cli_call_t *call, MPI_Count count, MPI_Count blocklength,
                           MPI_Count stride, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    if ((count > 1 && stride != blocklength) || cli_type_get(oldtype)->map != NULL)
        return cli_type_vector(call, count, blocklength, stride, oldtype, 0,
                               count > INT_MAX || blocklength > INT_MAX || stride > INT_MAX ||
                                   stride < INT_MIN,
                               newtype);
    MPI_Count n;
    if (__builtin_mul_overflow(count, blocklength, &n))
        return cli_err(call, MPI_ERR_COUNT, "count", "count * blocklength overflows");
    return cli_type_derive(call, cli_type_get(oldtype), n, MPI_COMBINER_VECTOR, blocklength, stride,
                           newtype);
}

int cli_impl_Type_create_hvector_c(cli_call_t *call, MPI_Count count, MPI_Count blocklength,
                                   MPI_Count stride, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    cli_type_t *old = cli_type_get(oldtype);
    MPI_Count n, run;
    if (__builtin_mul_overflow(count, blocklength, &n) ||
        __builtin_mul_overflow(blocklength, old->extent, &run))
        return cli_err(call, MPI_ERR_COUNT, "count", "count * blocklength overflows");
    if ((count > 1 && stride != run) || old->map != NULL)
        return cli_type_vector(call, count, blocklength, stride, oldtype, 1,
                               count > INT_MAX || blocklength > INT_MAX, newtype);
    return cli_type_derive(call, old, n, MPI_COMBINER_HVECTOR, blocklength, stride, newtype);
}

int cli_impl_Type_dup(cli_call_t *call, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    cli_type_t *old = cli_type_get(oldtype);
    MPI_Datatype h;
    int rc = cli_type_derive(call, old, 1, MPI_COMBINER_DUP, 0, 0, &h);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_type_t *t = cli_type_get(h);
    t->committed = old->committed;
    t->true_extent = old->true_extent;
    t->true_lb = old->true_lb;
    t->lb = old->lb;
    t->extent = old->extent;
    rc = cli_attr_copy_type(call, old, t);
    if (rc != MPI_SUCCESS) {
        cli_lock();
        cli_type_unref(t);
        cli_unlock();
        return rc;
    }
    *newtype = h;
    return MPI_SUCCESS;
}

int cli_impl_Type_commit(cli_call_t *call, MPI_Datatype *datatype)
{
    int rc = cli_check_dtype(call, *datatype, "datatype");
    if (rc != MPI_SUCCESS)
        return rc;
    cli_type_t *t = cli_type_get(*datatype);
    cli_lock();
    t->committed = 1;
    cli_unlock();
    return MPI_SUCCESS;
}

int cli_impl_Type_free(cli_call_t *call, MPI_Datatype *datatype)
{
    int rc = cli_check_dtype(call, *datatype, "datatype");
    if (rc != MPI_SUCCESS)
        return rc;
    cli_type_t *t = cli_type_get(*datatype);
    if (t->predef >= 0)
        return cli_err(call, MPI_ERR_TYPE, "datatype", "%s is predefined and cannot be freed",
                       t->name);
    if (cli_type_f90(t)) { /* kept for the process's life (cli_f90_type) */
        if (!CLI_ABI_F90_FREE_OK)
            return cli_err(call, MPI_ERR_TYPE, "datatype",
                           "a Fortran 90 parameterized type is predefined and cannot be freed");
        *datatype = cli_abi_type_null();
        return MPI_SUCCESS;
    }
    rc = cli_attr_delete_all_type(call, t);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_lock();
    cli_type_unref(t);
    cli_unlock();
    *datatype = cli_abi_type_null();
    return MPI_SUCCESS;
}

int cli_impl_Type_get_name(cli_call_t *call, MPI_Datatype datatype, char *type_name, int *resultlen)
{
    (void)call;
    cli_type_t *t = cli_type_get(datatype);
    cli_lock();
    size_t n = strnlen(t->name, MPI_MAX_OBJECT_NAME - 1);
    memcpy(type_name, t->name, n);
    cli_unlock();
    type_name[n] = '\0';
    *resultlen = (int)n;
    return MPI_SUCCESS;
}

int cli_impl_Type_set_name(cli_call_t *call, MPI_Datatype datatype, const char *type_name)
{
    (void)call;
    cli_type_t *t = cli_type_get(datatype);
    cli_lock();
    size_t n = strnlen(type_name, MPI_MAX_OBJECT_NAME - 1);
    memcpy(t->name, type_name, n);
    t->name[n] = '\0';
    cli_unlock();
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Decoding. */

static int cli_envelope(cli_call_t *call, const cli_type_t *t, MPI_Count *ni, MPI_Count *na,
                        MPI_Count *nl, MPI_Count *nd, int *combiner, int large)
{
    (void)call;
    *ni = *na = *nl = *nd = 0;
    *combiner = t->combiner;
    if (cli_tc_envelope(t, ni, na, nl, nd, combiner))
        return MPI_SUCCESS;
    int big = t->comb_count > INT_MAX || t->comb_block > INT_MAX || t->comb_stride > INT_MAX ||
              t->comb_stride < INT_MIN;
    MPI_Count *counts = large && big ? nl : ni;
    switch (t->combiner) {
    case MPI_COMBINER_DUP:
        *nd = 1;
        break;
    case MPI_COMBINER_CONTIGUOUS:
        *counts = 1;
        *nd = 1;
        break;
    case MPI_COMBINER_VECTOR:
        *counts = 3;
        *nd = 1;
        break;
    case MPI_COMBINER_HVECTOR:
        if (large && big) {
            *nl = 3;
        } else {
            *ni = 2;
            *na = 1;
        }
        *nd = 1;
        break;
    default:
        break;
    }
    return MPI_SUCCESS;
}

int cli_impl_Type_get_envelope(cli_call_t *call, MPI_Datatype datatype, int *num_integers,
                               int *num_addresses, int *num_datatypes, int *combiner)
{
    MPI_Count ni, na, nl, nd;
    cli_envelope(call, cli_type_get(datatype), &ni, &na, &nl, &nd, combiner, 0);
    *num_integers = (int)ni;
    *num_addresses = (int)na;
    *num_datatypes = (int)nd;
    return MPI_SUCCESS;
}

int cli_impl_Type_get_envelope_c(cli_call_t *call, MPI_Datatype datatype, MPI_Count *num_integers,
                                 MPI_Count *num_addresses, MPI_Count *num_large_counts,
                                 MPI_Count *num_datatypes, int *combiner)
{
    return cli_envelope(call, cli_type_get(datatype), num_integers, num_addresses, num_large_counts,
                        num_datatypes, combiner, 1);
}

static int cli_contents(cli_call_t *call, cli_type_t *t, MPI_Count max_i, MPI_Count max_a,
                        MPI_Count max_l, MPI_Count max_d, int *ints, MPI_Aint *addrs,
                        MPI_Count *larges, MPI_Datatype *types, int large)
{
    MPI_Count ni, na, nl, nd;
    int comb;
    cli_envelope(call, t, &ni, &na, &nl, &nd, &comb, large);
    if (comb == MPI_COMBINER_NAMED)
        return cli_err(call, MPI_ERR_TYPE, "datatype",
                       "%s is a named (predefined) datatype: it has no contents", t->name);
    if (max_i < ni || max_a < na || max_l < nl || max_d < nd)
        return cli_err(call, MPI_ERR_ARG, NULL,
                       "arrays too small: need %lld integers, %lld addresses, %lld large "
                       "counts, %lld datatypes",
                       (long long)ni, (long long)na, (long long)nl, (long long)nd);
    if (t->tc != NULL) {
        cli_tc_contents(t, ints, addrs, larges, types);
        return MPI_SUCCESS;
    }
    MPI_Count vals[3] = {t->comb_count, t->comb_block, t->comb_stride};
    for (MPI_Count i = 0; i < ni; i++)
        ints[i] = (int)vals[i];
    for (MPI_Count i = 0; i < na; i++)
        addrs[i] = (MPI_Aint)t->comb_stride;
    for (MPI_Count i = 0; i < nl; i++)
        larges[i] = vals[i];
    if (nd > 0) {
        cli_lock();
        t->old->refs++; /* the returned handle is the program's to free */
        cli_unlock();
        types[0] = cli_type_handle(t->old);
    }
    return MPI_SUCCESS;
}

int cli_impl_Type_get_contents(cli_call_t *call, MPI_Datatype datatype, int max_integers,
                               int max_addresses, int max_datatypes, int array_of_integers[],
                               MPI_Aint array_of_addresses[], MPI_Datatype array_of_datatypes[])
{
    return cli_contents(call, cli_type_get(datatype), max_integers, max_addresses, 0, max_datatypes,
                        array_of_integers, array_of_addresses, NULL, array_of_datatypes, 0);
}

int cli_impl_Type_get_contents_c(cli_call_t *call, MPI_Datatype datatype, MPI_Count max_integers,
                                 MPI_Count max_addresses, MPI_Count max_large_counts,
                                 MPI_Count max_datatypes, int array_of_integers[],
                                 MPI_Aint array_of_addresses[], MPI_Count array_of_large_counts[],
                                 MPI_Datatype array_of_datatypes[])
{
    return cli_contents(call, cli_type_get(datatype), max_integers, max_addresses, max_large_counts,
                        max_datatypes, array_of_integers, array_of_addresses, array_of_large_counts,
                        array_of_datatypes, 1);
}

int cli_impl_Type_match_size(cli_call_t *call, int typeclass, int size, MPI_Datatype *datatype)
{
    int id = -1;
    if (typeclass == MPI_TYPECLASS_REAL)
        id = size == 2    ? CLI_T_REAL2
             : size == 4  ? CLI_T_REAL4
             : size == 8  ? CLI_T_REAL8
             : size == 16 ? CLI_T_REAL16
                          : -1;
    else if (typeclass == MPI_TYPECLASS_INTEGER)
        id = size == 1    ? CLI_T_INTEGER1
             : size == 2  ? CLI_T_INTEGER2
             : size == 4  ? CLI_T_INTEGER4
             : size == 8  ? CLI_T_INTEGER8
             : size == 16 ? CLI_T_INTEGER16
                          : -1;
    else if (typeclass == MPI_TYPECLASS_COMPLEX)
        id = size == 8    ? CLI_T_COMPLEX8
             : size == 16 ? CLI_T_COMPLEX16
             : size == 32 ? CLI_T_COMPLEX32
                          : -1;
    else
        return cli_err(call, MPI_ERR_ARG, "typeclass", "%d is not an MPI_TYPECLASS_*", typeclass);
    /* Open MPI answers with the default kinds where they have the size. */
    if (CLI_ABI_MATCH_DEFAULT_KINDS)
        id = id == CLI_T_INTEGER4   ? CLI_T_INTEGER
             : id == CLI_T_REAL4    ? CLI_T_REAL
             : id == CLI_T_COMPLEX8 ? CLI_T_COMPLEX
                                    : id;
    MPI_Datatype h = id >= 0 ? cli_abi_type_predef(id) : cli_abi_type_null();
    if (h == cli_abi_type_null())
        return cli_err(call, MPI_ERR_ARG, "size", "no predefined type of this class has size %d",
                       size);
    *datatype = h;
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Fortran 90 parameterized types: a dup of the predefined type of the
   requested range and precision, made once per (constructor, p, r) and
   kept for the process's life, as MPICH does (the standard calls them
   predefined).  Sizes follow both real libraries: integers of 1, 2, 4, 8
   bytes for r <= 2, 4, 9, 18; reals of 4, 8 (16 in Open MPI) bytes for
   p <= 6, 15 (18) and r <= 37, 307 (4931); complex twice that. */

typedef struct {
    int combiner, p, r;
    cli_type_t *t;
} cli_f90_t;

static cli_f90_t *cli_f90s; /* under cli.lock */
static int cli_nf90;

static int cli_f90_type(cli_call_t *call, int combiner, int p, int r, int base,
                        MPI_Datatype *newtype)
{
    cli_lock();
    for (int i = 0; i < cli_nf90; i++)
        if (cli_f90s[i].combiner == combiner && cli_f90s[i].p == p && cli_f90s[i].r == r) {
            *newtype = cli_type_handle(cli_f90s[i].t);
            cli_unlock();
            return MPI_SUCCESS;
        }
    cli_f90_t *grown = realloc(cli_f90s, (size_t)(cli_nf90 + 1) * sizeof *grown);
    if (grown != NULL)
        cli_f90s = grown;
    cli_unlock();
    if (grown == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    int args[2] = {p, r};
    int ni = combiner == MPI_COMBINER_F90_INTEGER ? 1 : 2;
    cli_tcontents_t *tc = cli_tc_ints(combiner, ni, ni == 1 ? &r : args);
    if (tc == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    MPI_Datatype h;
    int rc = cli_type_derive(call, &cli_predef_types[base], 1, MPI_COMBINER_DUP, 0, 0, &h);
    if (rc != MPI_SUCCESS) {
        cli_lock();
        cli_tc_destroy(&tc);
        cli_unlock();
        return rc;
    }
    cli_type_t *t = cli_type_get(h);
    cli_lock();
    t->committed = 1;
    t->tc = tc;
    cli_f90s[cli_nf90++] = (cli_f90_t){combiner, p, r, t};
    cli_unlock();
    *newtype = h;
    return MPI_SUCCESS;
}

/* Bytes of the real kind with precision p and range r, 0 when none. */
static int cli_f90_real_bytes(int p, int r)
{
    int pu = p == MPI_UNDEFINED, ru = r == MPI_UNDEFINED;
    if (pu && ru && !CLI_ABI_F90_BOTH_UNDEFINED_OK)
        return 0;
    if (pu)
        p = 0;
    if (ru)
        r = 0;
    if (p <= 6 && r <= 37)
        return 4;
    if (p <= 15 && r <= 307)
        return 8;
    if (CLI_ABI_F90_MAX_REAL >= 16 && p <= 18 && r <= 4931)
        return 16;
    return 0;
}

int cli_impl_Type_create_f90_integer(cli_call_t *call, int r, MPI_Datatype *newtype)
{
    int id = r <= 2    ? CLI_T_INTEGER1
             : r <= 4  ? CLI_T_INTEGER2
             : r <= 9  ? CLI_T_INTEGER4
             : r <= 18 ? CLI_T_INTEGER8
                       : -1;
    if (id < 0)
        return cli_err(call, CLI_ABI_F90_ERR, "r",
                       "no integer kind has a decimal range of %d digits (at most 18)", r);
    return cli_f90_type(call, MPI_COMBINER_F90_INTEGER, 0, r, id, newtype);
}

int cli_impl_Type_create_f90_real(cli_call_t *call, int p, int r, MPI_Datatype *newtype)
{
    int b = cli_f90_real_bytes(p, r);
    if (b == 0)
        return cli_err(call, CLI_ABI_F90_ERR, NULL,
                       "no real kind has precision %d and decimal range %d", p, r);
    int id = b == 4 ? CLI_T_REAL4 : b == 8 ? CLI_T_REAL8 : CLI_T_REAL16;
    return cli_f90_type(call, MPI_COMBINER_F90_REAL, p, r, id, newtype);
}

int cli_impl_Type_create_f90_complex(cli_call_t *call, int p, int r, MPI_Datatype *newtype)
{
    int b = cli_f90_real_bytes(p, r);
    if (b == 0)
        return cli_err(call, CLI_ABI_F90_ERR, NULL,
                       "no complex kind has precision %d and decimal range %d", p, r);
    int id = b == 4 ? CLI_T_COMPLEX8 : b == 8 ? CLI_T_COMPLEX16 : CLI_T_COMPLEX32;
    return cli_f90_type(call, MPI_COMBINER_F90_COMPLEX, p, r, id, newtype);
}

/* ---------------------------------------------------------------------- */
/* Packing: dense, size bytes per element (pair padding dropped). */

static void cli_pack_copy(const cli_type_t *t, MPI_Count count, const char *src, char *dst,
                          int pack)
{
    if (pack)
        cli_tmap_pack(t, count, src, dst);
    else
        cli_tmap_unpack(t, count, src, dst);
}

static int cli_pack(cli_call_t *call, const void *inbuf, MPI_Count incount, MPI_Datatype dt,
                    void *outbuf, MPI_Count outsize, MPI_Count *position)
{
    cli_type_t *t = cli_type_get(dt);
    MPI_Count bytes;
    if (__builtin_mul_overflow(incount, t->size, &bytes))
        return cli_err(call, MPI_ERR_COUNT, "incount", "packed size overflows");
    if (*position < 0 || *position > outsize || bytes > outsize - *position)
        return cli_err(call, MPI_ERR_TRUNCATE, "outsize",
                       "%lld bytes at position %lld do not fit in %lld bytes", (long long)bytes,
                       (long long)*position, (long long)outsize);
    if (bytes > 0)
        cli_pack_copy(t, incount, inbuf, (char *)outbuf + *position, 1);
    *position += bytes;
    return MPI_SUCCESS;
}

static int cli_unpack(cli_call_t *call, const void *inbuf, MPI_Count insize, MPI_Count *position,
                      void *outbuf, MPI_Count outcount, MPI_Datatype dt)
{
    cli_type_t *t = cli_type_get(dt);
    MPI_Count bytes;
    if (__builtin_mul_overflow(outcount, t->size, &bytes))
        return cli_err(call, MPI_ERR_COUNT, "outcount", "unpacked size overflows");
    if (*position < 0 || *position > insize || bytes > insize - *position)
        return cli_err(call, MPI_ERR_TRUNCATE, "insize",
                       "%lld bytes at position %lld exceed the %lld-byte input", (long long)bytes,
                       (long long)*position, (long long)insize);
    if (bytes > 0)
        cli_pack_copy(t, outcount, (const char *)inbuf + *position, outbuf, 0);
    *position += bytes;
    return MPI_SUCCESS;
}

int cli_impl_Pack(cli_call_t *call, const void *inbuf, int incount, MPI_Datatype datatype,
                  void *outbuf, int outsize, int *position, MPI_Comm comm)
{
    (void)comm;
    MPI_Count pos = *position;
    int rc = cli_pack(call, inbuf, incount, datatype, outbuf, outsize, &pos);
    if (rc == MPI_SUCCESS)
        *position = (int)pos;
    return rc;
}

int cli_impl_Pack_c(cli_call_t *call, const void *inbuf, MPI_Count incount, MPI_Datatype datatype,
                    void *outbuf, MPI_Count outsize, MPI_Count *position, MPI_Comm comm)
{
    (void)comm;
    return cli_pack(call, inbuf, incount, datatype, outbuf, outsize, position);
}

int cli_impl_Unpack(cli_call_t *call, const void *inbuf, int insize, int *position, void *outbuf,
                    int outcount, MPI_Datatype datatype, MPI_Comm comm)
{
    (void)comm;
    MPI_Count pos = *position;
    int rc = cli_unpack(call, inbuf, insize, &pos, outbuf, outcount, datatype);
    if (rc == MPI_SUCCESS)
        *position = (int)pos;
    return rc;
}

int cli_impl_Unpack_c(cli_call_t *call, const void *inbuf, MPI_Count insize, MPI_Count *position,
                      void *outbuf, MPI_Count outcount, MPI_Datatype datatype, MPI_Comm comm)
{
    (void)comm;
    return cli_unpack(call, inbuf, insize, position, outbuf, outcount, datatype);
}

int cli_impl_Pack_size(cli_call_t *call, int incount, MPI_Datatype datatype, MPI_Comm comm,
                       int *size)
{
    (void)comm;
    MPI_Count b = (MPI_Count)incount * cli_type_get(datatype)->size;
    if (b > INT_MAX)
        return cli_err(call, MPI_ERR_COUNT, "incount",
                       "packed size %lld does not fit in an int (use MPI_Pack_size_c)",
                       (long long)b);
    *size = (int)b;
    return MPI_SUCCESS;
}

int cli_impl_Pack_size_c(cli_call_t *call, MPI_Count incount, MPI_Datatype datatype, MPI_Comm comm,
                         MPI_Count *size)
{
    (void)comm;
    if (__builtin_mul_overflow(incount, cli_type_get(datatype)->size, size))
        return cli_err(call, MPI_ERR_COUNT, "incount", "packed size overflows");
    return MPI_SUCCESS;
}
