/*  cli_type_derived.c - the type-map constructors and their contents.

    MPI_Type_vector / hvector with strides, indexed, hindexed,
    indexed_block, hindexed_block, struct, resized, subarray and darray
    (int and large-count forms) build a type map (cli_tmap.c) by
    appending blocks of their old types, then record their arguments for
    MPI_Type_get_envelope / get_contents.  A result that is one dense run
    starting at its origin (a vector whose stride equals its block
    length, a subarray covering the whole array) drops its map and keeps
    the contiguous fast path.  Struct types without an explicit resize
    get their extent rounded up to the largest alignment of their basic
    types, as MPICH and C lay out structs.  Bounds follow the standard:
    lb and ub are the lowest and highest bounds of any block (markers of
    resized children included); subarray and darray span the whole
    global array.
*/
#include "cli.h"
#include "cli_impl.h"
#include "cli_tmap.h"

#include <stdlib.h>
#include <string.h>

struct cli_tcontents {
    int combiner;
    MPI_Count ni, na, nl, nd;
    int *ints;
    MPI_Aint *addrs;
    MPI_Count *larges;
    cli_type_t **types; /* each holds a reference */
};

static cli_type_t *cli_dt(MPI_Datatype h)
{
    int why = 0;
    return cli_type_lookup(h, &why);
}

static cli_tcontents_t *cli_tc_new(int combiner, MPI_Count ni, MPI_Count na, MPI_Count nl,
                                   MPI_Count nd)
{
    cli_tcontents_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    *c = (cli_tcontents_t){.combiner = combiner, .ni = ni, .na = na, .nl = nl, .nd = nd};
    c->ints = calloc((size_t)ni + 1, sizeof *c->ints);
    c->addrs = calloc((size_t)na + 1, sizeof *c->addrs);
    c->larges = calloc((size_t)nl + 1, sizeof *c->larges);
    c->types = calloc((size_t)nd + 1, sizeof *c->types);
    if (c->ints == NULL || c->addrs == NULL || c->larges == NULL || c->types == NULL) {
        free(c->ints), free(c->addrs), free(c->larges), free(c->types), free(c);
        return NULL;
    }
    return c;
}

/* cli.lock held. */
void cli_tc_destroy(cli_tcontents_t **self_p)
{
    cli_tcontents_t *c = *self_p;
    if (c == NULL)
        return;
    for (MPI_Count i = 0; i < c->nd; i++)
        if (c->types[i] != NULL)
            cli_type_unref(c->types[i]);
    free(c->ints), free(c->addrs), free(c->larges), free(c->types), free(c);
    *self_p = NULL;
}

/* Registers the type made from builder b (consumed) with contents c
   (consumed; its types get their references here).  lb/extent >= 0 in
   `resize` (1) override the bounds; pad (1) rounds the extent up to the
   alignment (struct). */
static int cli_dt_make(cli_call_t *call, cli_tmap_builder_t *b, cli_tcontents_t *c, int resize,
                       MPI_Count lb, MPI_Count extent, int pad, MPI_Datatype *newtype)
{
    int err = 0;
    cli_tmap_t *m = cli_tmap_finish(b, &err);
    if (m == NULL) {
        cli_lock();
        cli_tc_destroy(&c);
        cli_unlock();
        return err == MPI_ERR_COUNT
                   ? cli_err(call, MPI_ERR_COUNT, NULL, "the datatype's displacements overflow")
                   : cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory for the datatype's map");
    }
    if (resize) {
        m->lb = lb;
        m->ub = lb + extent;
    } else if (pad && m->align > 1) {
        MPI_Count e = m->ub - m->lb, r = e % m->align;
        if (r != 0)
            m->ub += m->align - r;
    }
    cli_type_t *t = calloc(1, sizeof *t);
    if (t == NULL) {
        cli_tmap_destroy(&m);
        cli_lock();
        cli_tc_destroy(&c);
        cli_unlock();
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    }
    t->predef = -1;
    t->refs = 1;
    t->size = m->size;
    t->lb = m->lb;
    t->extent = m->ub - m->lb;
    t->true_lb = m->true_lb;
    t->true_extent = m->true_ub - m->true_lb;
    t->combiner = c->combiner;
    t->tc = c;
    if (m->homog >= 0) {
        const cli_type_t *p = &cli_predef_types[m->homog];
        t->base_predef = m->homog;
        t->basic = p->basic;
        t->category = p->category;
        t->mult = p->size > 0 ? m->size / (p->size / (p->mult > 0 ? p->mult : 1)) : 0;
    } else {
        t->base_predef = CLI_T_BYTE;
        t->basic = COLLAB_UINT8;
        t->category = CLI_CAT_NONE;
        t->mult = m->size;
    }
    /* One dense run at the origin of a type without padding: the fast path. */
    int dense = t->lb == 0 && t->extent == t->size &&
                (m->nseg == 0 || (m->nseg == 1 && m->segs[0].disp == 0)) && m->homog >= 0 &&
                cli_predef_types[m->homog].size == cli_predef_types[m->homog].extent;
    if (dense)
        cli_tmap_destroy(&m);
    t->map = m;
    cli_lock();
    for (MPI_Count i = 0; i < c->nd; i++)
        if (c->types[i] != NULL)
            c->types[i]->refs++;
    cli_unlock();
    if (cli_type_register(t, newtype) != MPI_SUCCESS) {
        cli_lock();
        cli_type_unref(t);
        cli_unlock();
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of datatype handles");
    }
    return MPI_SUCCESS;
}

static int cli_dt_begin(cli_call_t *call, cli_tmap_builder_t *b, cli_tcontents_t *c)
{
    if (c == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    if (cli_tmap_begin(b) != MPI_SUCCESS) {
        cli_lock();
        cli_tc_destroy(&c);
        cli_unlock();
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    }
    return MPI_SUCCESS;
}

/* Array arguments given as int[], MPI_Aint[] or MPI_Count[]. */
typedef struct {
    const int *i;
    const MPI_Aint *a;
    const MPI_Count *c;
} cli_arr_t;

static MPI_Count cli_arr(cli_arr_t v, MPI_Count k)
{
    return v.i ? v.i[k] : v.a ? v.a[k] : v.c[k];
}

static int cli_arr_ok(cli_call_t *call, cli_arr_t v, MPI_Count n, const char *name)
{
    if (n > 0 && v.i == NULL && v.a == NULL && v.c == NULL)
        return cli_err(call, MPI_ERR_ARG, name, "must not be NULL");
    return MPI_SUCCESS;
}

static int cli_nonneg(cli_call_t *call, cli_arr_t v, MPI_Count n, const char *name)
{
    for (MPI_Count k = 0; k < n; k++)
        if (cli_arr(v, k) < 0)
            return cli_err(call, MPI_ERR_ARG, name, "%s[%lld] = %lld is negative", name,
                           (long long)k, (long long)cli_arr(v, k));
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Vector, indexed, struct: blocks of old types at displacements.  unit:
   bytes per displacement unit (old extent for vector/indexed, 1 for the
   h forms).  Contents: ints (or larges when large) as the standard lists
   them for each combiner. */

typedef struct {
    int combiner;
    int large;   /* a _c constructor: counts in the large array */
    int hdisp;   /* displacements are bytes (h forms, struct) */
    int block;   /* one blocklength for all (vector, *_block) */
    int strided; /* one stride instead of a displacement list (vector) */
    MPI_Count count;
    MPI_Count bl;  /* blocklength when block */
    cli_arr_t bls; /* blocklengths otherwise */
    MPI_Count stride;
    cli_arr_t disps;
    const MPI_Datatype *types; /* struct, else NULL */
    MPI_Datatype old;
} cli_blocks_t;

static int cli_blocks(cli_call_t *call, const cli_blocks_t *a, MPI_Datatype *newtype)
{
    MPI_Count n = a->count;
    int rc;
    if (n < 0)
        return cli_err(call, MPI_ERR_COUNT, "count", "%lld is negative", (long long)n);
    if (a->block && a->bl < 0)
        return cli_err(call, MPI_ERR_ARG, "blocklength", "%lld is negative", (long long)a->bl);
    if (!a->block && ((rc = cli_arr_ok(call, a->bls, n, "array_of_blocklengths")) != MPI_SUCCESS ||
                      (rc = cli_nonneg(call, a->bls, n, "array_of_blocklengths")) != MPI_SUCCESS))
        return rc;
    if (!a->strided &&
        (rc = cli_arr_ok(call, a->disps, n, "array_of_displacements")) != MPI_SUCCESS)
        return rc;
    if (a->types != NULL) {
        for (MPI_Count k = 0; k < n; k++)
            if ((rc = cli_check_dtype(call, a->types[k], "array_of_types")) != MPI_SUCCESS)
                return rc;
    } else if ((rc = cli_check_dtype(call, a->old, "oldtype")) != MPI_SUCCESS) {
        return rc;
    }
    /* Contents, in the standard's order. */
    MPI_Count ni = 0, na = 0, nl = 0, nd = a->types ? n : 1;
    MPI_Count nlist = a->strided ? 0 : n; /* displacement entries */
    MPI_Count nbl = a->block ? 1 : n;
    if (a->large) {
        nl = 1 + nbl + (a->strided ? 1 : nlist);
    } else {
        ni = 1 + nbl + (a->hdisp || a->strided ? 0 : nlist) +
             (a->strided && a->combiner == MPI_COMBINER_VECTOR ? 1 : 0);
        na = a->hdisp ? (a->strided ? 1 : nlist) : 0;
    }
    cli_tcontents_t *c = cli_tc_new(a->combiner, ni, na, nl, nd);
    if (c != NULL) {
        MPI_Count *dst = a->large ? c->larges : NULL;
        MPI_Count k = 0;
        MPI_Count tmp[3];
        (void)tmp;
#define PUTI(v)                                                                                    \
    do {                                                                                           \
        if (dst)                                                                                   \
            dst[k++] = (v);                                                                        \
        else                                                                                       \
            c->ints[k++] = (int)(v);                                                               \
    } while (0)
        PUTI(n);
        if (a->block)
            PUTI(a->bl);
        else
            for (MPI_Count j = 0; j < n; j++)
                PUTI(cli_arr(a->bls, j));
        if (a->large || !a->hdisp) {
            if (a->strided)
                PUTI(a->stride);
            else
                for (MPI_Count j = 0; j < n; j++)
                    PUTI(cli_arr(a->disps, j));
        } else {
            if (a->strided)
                c->addrs[0] = (MPI_Aint)a->stride;
            else
                for (MPI_Count j = 0; j < n; j++)
                    c->addrs[j] = (MPI_Aint)cli_arr(a->disps, j);
        }
#undef PUTI
        for (MPI_Count j = 0; j < nd; j++)
            c->types[j] = cli_dt(a->types ? a->types[j] : a->old);
    }
    cli_tmap_builder_t b;
    if ((rc = cli_dt_begin(call, &b, c)) != MPI_SUCCESS)
        return rc;
    for (MPI_Count j = 0; j < n; j++) {
        cli_type_t *t = cli_dt(a->types ? a->types[j] : a->old);
        MPI_Count bl = a->block ? a->bl : cli_arr(a->bls, j);
        MPI_Count d = a->strided ? j * a->stride : cli_arr(a->disps, j);
        MPI_Count disp = d;
        if (!a->hdisp && __builtin_mul_overflow(d, t->extent, &disp)) {
            b.err = MPI_ERR_COUNT;
            break;
        }
        cli_tmap_add(&b, t, disp, bl);
    }
    return cli_dt_make(call, &b, c, 0, 0, 0, a->types != NULL, newtype);
}

/* Vector and hvector (also used by cli_type.c for strided vectors). */
int cli_type_vector(cli_call_t *call, MPI_Count count, MPI_Count bl, MPI_Count stride,
                    MPI_Datatype old, int bytes, int large, MPI_Datatype *newtype)
{
    cli_blocks_t a = {.combiner = bytes ? MPI_COMBINER_HVECTOR : MPI_COMBINER_VECTOR,
                      .large = large,
                      .hdisp = bytes,
                      .block = 1,
                      .strided = 1,
                      .count = count,
                      .bl = bl,
                      .stride = stride,
                      .old = old};
    return cli_blocks(call, &a, newtype);
}

#define CLI_IDX(fname, comb, large_, hdisp_, blty, dty)                                            \
    int cli_impl_##fname(cli_call_t *call, blty count, const blty array_of_blocklengths[],         \
                         const dty array_of_displacements[], MPI_Datatype oldtype,                 \
                         MPI_Datatype *newtype)
/* (written out below for each form; the macro only documents the shape) */
#undef CLI_IDX

static cli_arr_t cli_ai(const int *p)
{
    return (cli_arr_t){.i = p};
}
static cli_arr_t cli_aa(const MPI_Aint *p)
{
    return (cli_arr_t){.a = p};
}
static cli_arr_t cli_ac(const MPI_Count *p)
{
    return (cli_arr_t){.c = p};
}

int cli_impl_Type_indexed(cli_call_t *call, int count, const int array_of_blocklengths[],
                          const int array_of_displacements[], MPI_Datatype oldtype,
                          MPI_Datatype *newtype)
{
    cli_blocks_t a = {.combiner = MPI_COMBINER_INDEXED,
                      .count = count,
                      .bls = cli_ai(array_of_blocklengths),
                      .disps = cli_ai(array_of_displacements),
                      .old = oldtype};
    return cli_blocks(call, &a, newtype);
}

int cli_impl_Type_indexed_c(cli_call_t *call, MPI_Count count,
                            const MPI_Count array_of_blocklengths[],
                            const MPI_Count array_of_displacements[], MPI_Datatype oldtype,
                            MPI_Datatype *newtype)
{
    cli_blocks_t a = {.combiner = MPI_COMBINER_INDEXED,
                      .large = 1,
                      .count = count,
                      .bls = cli_ac(array_of_blocklengths),
                      .disps = cli_ac(array_of_displacements),
                      .old = oldtype};
    return cli_blocks(call, &a, newtype);
}

int cli_impl_Type_create_hindexed(cli_call_t *call, int count, const int array_of_blocklengths[],
                                  const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                                  MPI_Datatype *newtype)
{
    cli_blocks_t a = {.combiner = MPI_COMBINER_HINDEXED,
                      .hdisp = 1,
                      .count = count,
                      .bls = cli_ai(array_of_blocklengths),
                      .disps = cli_aa(array_of_displacements),
                      .old = oldtype};
    return cli_blocks(call, &a, newtype);
}

int cli_impl_Type_hindexed(cli_call_t *call, int count, int array_of_blocklengths[],
                           MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                           MPI_Datatype *newtype)
{
    return cli_impl_Type_create_hindexed(call, count, array_of_blocklengths, array_of_displacements,
                                         oldtype, newtype);
}

int cli_impl_Type_create_hindexed_c(cli_call_t *call, MPI_Count count,
                                    const MPI_Count array_of_blocklengths[],
                                    const MPI_Count array_of_displacements[], MPI_Datatype oldtype,
                                    MPI_Datatype *newtype)
{
    cli_blocks_t a = {.combiner = MPI_COMBINER_HINDEXED,
                      .large = 1,
                      .hdisp = 1,
                      .count = count,
                      .bls = cli_ac(array_of_blocklengths),
                      .disps = cli_ac(array_of_displacements),
                      .old = oldtype};
    return cli_blocks(call, &a, newtype);
}

int cli_impl_Type_create_indexed_block(cli_call_t *call, int count, int blocklength,
                                       const int array_of_displacements[], MPI_Datatype oldtype,
                                       MPI_Datatype *newtype)
{
    cli_blocks_t a = {.combiner = MPI_COMBINER_INDEXED_BLOCK,
                      .block = 1,
                      .count = count,
                      .bl = blocklength,
                      .disps = cli_ai(array_of_displacements),
                      .old = oldtype};
    return cli_blocks(call, &a, newtype);
}

int cli_impl_Type_create_indexed_block_c(cli_call_t *call, MPI_Count count, MPI_Count blocklength,
                                         const MPI_Count array_of_displacements[],
                                         MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    cli_blocks_t a = {.combiner = MPI_COMBINER_INDEXED_BLOCK,
                      .large = 1,
                      .block = 1,
                      .count = count,
                      .bl = blocklength,
                      .disps = cli_ac(array_of_displacements),
                      .old = oldtype};
    return cli_blocks(call, &a, newtype);
}

int cli_impl_Type_create_hindexed_block(cli_call_t *call, int count, int blocklength,
                                        const MPI_Aint array_of_displacements[],
                                        MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    cli_blocks_t a = {.combiner = MPI_COMBINER_HINDEXED_BLOCK,
                      .hdisp = 1,
                      .block = 1,
                      .count = count,
                      .bl = blocklength,
                      .disps = cli_aa(array_of_displacements),
                      .old = oldtype};
    return cli_blocks(call, &a, newtype);
}

int cli_impl_Type_create_hindexed_block_c(cli_call_t *call, MPI_Count count, MPI_Count blocklength,
                                          const MPI_Count array_of_displacements[],
                                          MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    cli_blocks_t a = {.combiner = MPI_COMBINER_HINDEXED_BLOCK,
                      .large = 1,
                      .hdisp = 1,
                      .block = 1,
                      .count = count,
                      .bl = blocklength,
                      .disps = cli_ac(array_of_displacements),
                      .old = oldtype};
    return cli_blocks(call, &a, newtype);
}

int cli_impl_Type_create_struct(cli_call_t *call, int count, const int array_of_blocklengths[],
                                const MPI_Aint array_of_displacements[],
                                const MPI_Datatype array_of_types[], MPI_Datatype *newtype)
{
    if (count > 0 && array_of_types == NULL)
        return cli_err(call, MPI_ERR_ARG, "array_of_types", "must not be NULL");
    cli_blocks_t a = {.combiner = MPI_COMBINER_STRUCT,
                      .hdisp = 1,
                      .count = count,
                      .bls = cli_ai(array_of_blocklengths),
                      .disps = cli_aa(array_of_displacements),
                      .types = array_of_types};
    return cli_blocks(call, &a, newtype);
}

int cli_impl_Type_struct(cli_call_t *call, int count, int array_of_blocklengths[],
                         MPI_Aint array_of_displacements[], MPI_Datatype array_of_types[],
                         MPI_Datatype *newtype)
{
    return cli_impl_Type_create_struct(call, count, array_of_blocklengths, array_of_displacements,
                                       array_of_types, newtype);
}

int cli_impl_Type_create_struct_c(cli_call_t *call, MPI_Count count,
                                  const MPI_Count array_of_blocklengths[],
                                  const MPI_Count array_of_displacements[],
                                  const MPI_Datatype array_of_types[], MPI_Datatype *newtype)
{
    if (count > 0 && array_of_types == NULL)
        return cli_err(call, MPI_ERR_ARG, "array_of_types", "must not be NULL");
    cli_blocks_t a = {.combiner = MPI_COMBINER_STRUCT,
                      .large = 1,
                      .hdisp = 1,
                      .count = count,
                      .bls = cli_ac(array_of_blocklengths),
                      .disps = cli_ac(array_of_displacements),
                      .types = array_of_types};
    return cli_blocks(call, &a, newtype);
}

/* ---------------------------------------------------------------------- */
/* Resized. */

static int cli_resized(cli_call_t *call, MPI_Datatype oldtype, MPI_Count lb, MPI_Count extent,
                       int large, MPI_Datatype *newtype)
{
    cli_tcontents_t *c = cli_tc_new(MPI_COMBINER_RESIZED, 0, large ? 0 : 2, large ? 2 : 0, 1);
    if (c != NULL) {
        if (large)
            c->larges[0] = lb, c->larges[1] = extent;
        else
            c->addrs[0] = (MPI_Aint)lb, c->addrs[1] = (MPI_Aint)extent;
        c->types[0] = cli_dt(oldtype);
    }
    cli_tmap_builder_t b;
    int rc = cli_dt_begin(call, &b, c);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_tmap_add(&b, cli_dt(oldtype), 0, 1);
    return cli_dt_make(call, &b, c, 1, lb, extent, 0, newtype);
}

int cli_impl_Type_create_resized(cli_call_t *call, MPI_Datatype oldtype, MPI_Aint lb,
                                 MPI_Aint extent, MPI_Datatype *newtype)
{
    return cli_resized(call, oldtype, lb, extent, 0, newtype);
}

int cli_impl_Type_create_resized_c(cli_call_t *call, MPI_Datatype oldtype, MPI_Count lb,
                                   MPI_Count extent, MPI_Datatype *newtype)
{
    return cli_resized(call, oldtype, lb, extent, 1, newtype);
}

/* ---------------------------------------------------------------------- */
/* Subarray and darray: the global array is walked in memory order; each
   dimension contributes a list of (start, length) index ranges. */

typedef struct {
    MPI_Count *start; /* index ranges owned in this dimension */
    MPI_Count *len;
    MPI_Count n;
} cli_ranges_t;

/* Appends every selected run: dims in memory order (slowest first);
   prefix is the linear index of the dimensions before d. */
static void cli_nd_walk(cli_tmap_builder_t *b, cli_type_t *old, int nd, const MPI_Count *gs,
                        cli_ranges_t *r, int d, MPI_Count prefix)
{
    for (MPI_Count i = 0; i < r[d].n && !b->err; i++) {
        if (d == nd - 1) {
            cli_tmap_add(b, old, (prefix * gs[d] + r[d].start[i]) * old->extent, r[d].len[i]);
            continue;
        }
        for (MPI_Count j = 0; j < r[d].len[i]; j++)
            cli_nd_walk(b, old, nd, gs, r, d + 1, prefix * gs[d] + r[d].start[i] + j);
    }
}

/* Builds the map of the selected ranges (given in the program's order
   `order`), with bounds [0, prod(gsizes) x extent). */
static int cli_nd_type(cli_call_t *call, int nd, const MPI_Count *gsizes_prog, cli_ranges_t *rprog,
                       int order, MPI_Datatype oldtype, cli_tcontents_t *c, MPI_Datatype *newtype)
{
    cli_type_t *old = cli_dt(oldtype);
    MPI_Count gs[32];
    cli_ranges_t r[32];
    MPI_Count total = old->extent;
    for (int k = 0; k < nd; k++) {
        int p = order == MPI_ORDER_C ? k : nd - 1 - k; /* memory order: slowest first */
        gs[k] = gsizes_prog[p];
        r[k] = rprog[p];
        if (__builtin_mul_overflow(total, gs[k], &total)) {
            cli_lock();
            cli_tc_destroy(&c);
            cli_unlock();
            return cli_err(call, MPI_ERR_COUNT, "array_of_sizes", "the array size overflows");
        }
    }
    cli_tmap_builder_t b;
    int rc = cli_dt_begin(call, &b, c);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_nd_walk(&b, old, nd, gs, r, 0, 0);
    return cli_dt_make(call, &b, c, 1, 0, total, 0, newtype);
}

static int cli_nd_args(cli_call_t *call, int ndims, int order, const char *arr, const void *p)
{
    if (ndims <= 0 || ndims > 32)
        return cli_err(call, MPI_ERR_ARG, "ndims", "%d is not in 1..32", ndims);
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
        return cli_err(call, MPI_ERR_ARG, "order", "%d is neither MPI_ORDER_C nor _FORTRAN", order);
    if (p == NULL)
        return cli_err(call, MPI_ERR_ARG, arr, "must not be NULL");
    return MPI_SUCCESS;
}

static int cli_subarray(cli_call_t *call, int ndims, cli_arr_t sizes, cli_arr_t subs,
                        cli_arr_t starts, int order, MPI_Datatype oldtype, int large,
                        MPI_Datatype *newtype)
{
    int rc = cli_nd_args(call, ndims, order, "array_of_sizes",
                         sizes.i ? (void *)sizes.i : (void *)sizes.c);
    if (rc == MPI_SUCCESS && (rc = cli_check_dtype(call, oldtype, "oldtype")) != MPI_SUCCESS)
        return rc;
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Count gs[32], st[32], ln[32];
    cli_ranges_t r[32];
    for (int k = 0; k < ndims; k++) {
        gs[k] = cli_arr(sizes, k), ln[k] = cli_arr(subs, k), st[k] = cli_arr(starts, k);
        if (gs[k] <= 0 || ln[k] <= 0 || st[k] < 0 || st[k] + ln[k] > gs[k])
            return cli_err(call, MPI_ERR_ARG, "array_of_subsizes",
                           "dimension %d: size %lld, subsize %lld, start %lld do not fit", k,
                           (long long)gs[k], (long long)ln[k], (long long)st[k]);
        r[k] = (cli_ranges_t){&st[k], &ln[k], 1};
    }
    cli_tcontents_t *c = cli_tc_new(MPI_COMBINER_SUBARRAY, large ? 2 : 2 + 3 * (MPI_Count)ndims, 0,
                                    large ? 3 * (MPI_Count)ndims : 0, 1);
    if (c != NULL) {
        c->ints[0] = ndims;
        for (int k = 0; k < ndims; k++) {
            if (large) {
                c->larges[k] = gs[k], c->larges[ndims + k] = ln[k],
                c->larges[2 * ndims + k] = st[k];
            } else {
                c->ints[1 + k] = (int)gs[k], c->ints[1 + ndims + k] = (int)ln[k],
                            c->ints[1 + 2 * ndims + k] = (int)st[k];
            }
        }
        c->ints[large ? 1 : 1 + 3 * ndims] = order;
        c->types[0] = cli_dt(oldtype);
    }
    return cli_nd_type(call, ndims, gs, r, order, oldtype, c, newtype);
}

int cli_impl_Type_create_subarray(cli_call_t *call, int ndims, const int array_of_sizes[],
                                  const int array_of_subsizes[], const int array_of_starts[],
                                  int order, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    if (array_of_subsizes == NULL || array_of_starts == NULL)
        return cli_err(call, MPI_ERR_ARG, "array_of_subsizes", "must not be NULL");
    return cli_subarray(call, ndims, cli_ai(array_of_sizes), cli_ai(array_of_subsizes),
                        cli_ai(array_of_starts), order, oldtype, 0, newtype);
}

int cli_impl_Type_create_subarray_c(cli_call_t *call, int ndims, const MPI_Count array_of_sizes[],
                                    const MPI_Count array_of_subsizes[],
                                    const MPI_Count array_of_starts[], int order,
                                    MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    if (array_of_subsizes == NULL || array_of_starts == NULL)
        return cli_err(call, MPI_ERR_ARG, "array_of_subsizes", "must not be NULL");
    return cli_subarray(call, ndims, cli_ac(array_of_sizes), cli_ac(array_of_subsizes),
                        cli_ac(array_of_starts), order, oldtype, 1, newtype);
}

/* darray: this process's coordinates in the process grid (row-major, as
   the standard says for every order), then per dimension the index
   ranges of a block, cyclic(darg) or undistributed layout. */
static int cli_darray(cli_call_t *call, int size, int rank, int ndims, cli_arr_t gsizes,
                      const int distribs[], const int dargs[], const int psizes[], int order,
                      MPI_Datatype oldtype, int large, MPI_Datatype *newtype)
{
    int rc = cli_nd_args(call, ndims, order, "array_of_gsizes",
                         gsizes.i ? (void *)gsizes.i : (void *)gsizes.c);
    if (rc != MPI_SUCCESS)
        return rc;
    if (distribs == NULL || dargs == NULL || psizes == NULL)
        return cli_err(call, MPI_ERR_ARG, "array_of_distribs", "must not be NULL");
    if ((rc = cli_check_dtype(call, oldtype, "oldtype")) != MPI_SUCCESS)
        return rc;
    MPI_Count prod = 1;
    for (int k = 0; k < ndims; k++) {
        if (psizes[k] <= 0)
            return cli_err(call, MPI_ERR_ARG, "array_of_psizes", "entry %d is %d", k, psizes[k]);
        prod *= psizes[k];
    }
    if (prod != size || rank < 0 || rank >= size)
        return cli_err(call, MPI_ERR_ARG, "array_of_psizes",
                       "the grid has %lld processes, size is %d, rank %d", (long long)prod, size,
                       rank);
    MPI_Count gs[32];
    int coord[32];
    cli_ranges_t r[32];
    int rem = rank;
    for (int k = ndims - 1; k >= 0; k--) {
        coord[k] = rem % psizes[k];
        rem /= psizes[k];
    }
    int ok = 1;
    for (int k = 0; k < ndims && ok; k++) {
        gs[k] = cli_arr(gsizes, k);
        r[k] = (cli_ranges_t){0};
        MPI_Count g = gs[k], p = psizes[k], q = coord[k];
        if (g <= 0) {
            ok = 0;
            break;
        }
        MPI_Count nmax = g + 1;
        r[k].start = malloc((size_t)nmax * sizeof(MPI_Count));
        r[k].len = malloc((size_t)nmax * sizeof(MPI_Count));
        if (r[k].start == NULL || r[k].len == NULL) {
            ok = 0;
            break;
        }
        if (distribs[k] == MPI_DISTRIBUTE_NONE) {
            if (p != 1) {
                ok = -1;
                break;
            }
            r[k].start[0] = 0, r[k].len[0] = g, r[k].n = 1;
        } else if (distribs[k] == MPI_DISTRIBUTE_BLOCK) {
            MPI_Count bs = dargs[k] == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : dargs[k];
            if (bs <= 0 || bs * p < g) {
                ok = -1;
                break;
            }
            MPI_Count s = q * bs, l = g - s < bs ? g - s : bs;
            r[k].n = 0;
            if (l > 0)
                r[k].start[0] = s, r[k].len[0] = l, r[k].n = 1;
        } else if (distribs[k] == MPI_DISTRIBUTE_CYCLIC) {
            MPI_Count bs = dargs[k] == MPI_DISTRIBUTE_DFLT_DARG ? 1 : dargs[k];
            if (bs <= 0) {
                ok = -1;
                break;
            }
            r[k].n = 0;
            for (MPI_Count s = q * bs; s < g; s += p * bs) {
                r[k].start[r[k].n] = s;
                r[k].len[r[k].n] = g - s < bs ? g - s : bs;
                r[k].n++;
            }
        } else {
            ok = -1;
        }
    }
    if (ok == 1) {
        cli_tcontents_t *c =
            cli_tc_new(MPI_COMBINER_DARRAY, 4 + 4 * (MPI_Count)ndims - (large ? ndims : 0), 0,
                       large ? ndims : 0, 1);
        if (c != NULL) {
            MPI_Count k = 0;
            c->ints[k++] = size, c->ints[k++] = rank, c->ints[k++] = ndims;
            for (int d = 0; d < ndims; d++) {
                if (large)
                    c->larges[d] = gs[d];
                else
                    c->ints[k++] = (int)gs[d];
            }
            for (int d = 0; d < ndims; d++)
                c->ints[k++] = distribs[d];
            for (int d = 0; d < ndims; d++)
                c->ints[k++] = dargs[d];
            for (int d = 0; d < ndims; d++)
                c->ints[k++] = psizes[d];
            c->ints[k++] = order;
            c->types[0] = cli_dt(oldtype);
        }
        rc = cli_nd_type(call, ndims, gs, r, order, oldtype, c, newtype);
    } else if (ok == 0) {
        rc = cli_err(call, MPI_ERR_ARG, "array_of_gsizes", "invalid size or out of memory");
    } else {
        rc = cli_err(call, MPI_ERR_ARG, "array_of_distribs",
                     "a distribution, its argument or the grid does not fit the array");
    }
    for (int k = 0; k < ndims; k++)
        free(r[k].start), free(r[k].len);
    return rc;
}

int cli_impl_Type_create_darray(cli_call_t *call, int size, int rank, int ndims,
                                const int array_of_gsizes[], const int array_of_distribs[],
                                const int array_of_dargs[], const int array_of_psizes[], int order,
                                MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return cli_darray(call, size, rank, ndims, cli_ai(array_of_gsizes), array_of_distribs,
                      array_of_dargs, array_of_psizes, order, oldtype, 0, newtype);
}

int cli_impl_Type_create_darray_c(cli_call_t *call, int size, int rank, int ndims,
                                  const MPI_Count array_of_gsizes[], const int array_of_distribs[],
                                  const int array_of_dargs[], const int array_of_psizes[],
                                  int order, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return cli_darray(call, size, rank, ndims, cli_ac(array_of_gsizes), array_of_distribs,
                      array_of_dargs, array_of_psizes, order, oldtype, 1, newtype);
}

/* ---------------------------------------------------------------------- */
/* Envelope and contents of the types made here. */

cli_tcontents_t *cli_tc_ints(int combiner, int n, const int *ints)
{
    cli_tcontents_t *c = cli_tc_new(combiner, n, 0, 0, 0);
    if (c != NULL && n > 0)
        memcpy(c->ints, ints, (size_t)n * sizeof *ints);
    return c;
}

int cli_type_children(const cli_type_t *t, cli_child_fn *fn, void *ctx)
{
    const cli_tcontents_t *c = t->tc;
    if (t->predef >= 0)
        return 0;
    if (c != NULL && c->combiner == MPI_COMBINER_STRUCT) {
        for (MPI_Count i = 0; i < c->nd; i++) {
            MPI_Count bl = c->nl > 0 ? c->larges[1 + i] : c->ints[1 + i];
            int rc = fn(ctx, c->types[i], bl);
            if (rc != 0)
                return rc;
        }
        return 0;
    }
    const cli_type_t *child = c != NULL && c->nd > 0 ? c->types[0] : t->old;
    if (child == NULL || child->size == 0)
        return 0;
    return fn(ctx, child, t->size / child->size);
}

int cli_type_f90(const cli_type_t *t)
{
    const cli_tcontents_t *c = t->tc;
    return c != NULL &&
           (c->combiner == MPI_COMBINER_F90_INTEGER || c->combiner == MPI_COMBINER_F90_REAL ||
            c->combiner == MPI_COMBINER_F90_COMPLEX);
}

int cli_tc_envelope(const cli_type_t *t, MPI_Count *ni, MPI_Count *na, MPI_Count *nl, MPI_Count *nd,
                    int *combiner)
{
    const cli_tcontents_t *c = t->tc;
    if (c == NULL)
        return 0;
    *ni = c->ni, *na = c->na, *nl = c->nl, *nd = c->nd, *combiner = c->combiner;
    return 1;
}

void cli_tc_contents(const cli_type_t *t, int *ints, MPI_Aint *addrs, MPI_Count *larges,
                     MPI_Datatype *types)
{
    const cli_tcontents_t *c = t->tc;
    if (c->ni > 0)
        memcpy(ints, c->ints, (size_t)c->ni * sizeof *ints);
    if (c->na > 0)
        memcpy(addrs, c->addrs, (size_t)c->na * sizeof *addrs);
    if (c->nl > 0 && larges != NULL)
        memcpy(larges, c->larges, (size_t)c->nl * sizeof *larges);
    cli_lock();
    for (MPI_Count i = 0; i < c->nd; i++) {
        if (c->types[i]->predef < 0)
            c->types[i]->refs++; /* the returned handle is the program's to free */
        types[i] = cli_type_handle(c->types[i]);
    }
    cli_unlock();
}
