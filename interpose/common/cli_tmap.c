/*  cli_tmap.c - type maps of non-contiguous derived datatypes.

    A map is built by appending blocks of child datatypes at byte
    displacements (cli_tmap_add): each child contributes its own runs
    (from its map, or for a type without one from its core layout: one
    dense run, or the value and the int of each pair type), shifted to
    where the block lies, and its bounds widen the new type's bounds.
    Adjacent runs merge, so a vector of contiguous blocks holds one run
    per block and a dense result holds one run.  Packing walks the runs
    of each element in order and copies them to a dense buffer; unpacking
    copies back.  The cost is one memcpy per run: a type with many tiny
    runs is slow, as it is in every MPI library without code generation.
*/
#include "cli_tmap.h"

#include <stdlib.h>
#include <string.h>

/* Runs beyond this many per element are refused (MPI_ERR_NO_MEM): the
   map would outgrow what a program can reasonably mean. */
#define CLI_TMAP_MAX_SEGS ((MPI_Count)1 << 26)

int cli_tmap_begin(cli_tmap_builder_t *b)
{
    *b = (cli_tmap_builder_t){0};
    b->m = calloc(1, sizeof *b->m);
    if (b->m == NULL)
        return MPI_ERR_NO_MEM;
    b->m->homog = -2; /* no basic type seen yet */
    b->m->align = 1;
    return MPI_SUCCESS;
}

static void cli_tmap_run(cli_tmap_builder_t *b, MPI_Count disp, MPI_Count len)
{
    cli_tmap_t *m = b->m;
    if (len <= 0 || b->err)
        return;
    if (m->nseg > 0) {
        cli_seg_t *last = &m->segs[m->nseg - 1];
        if (last->disp + last->len == disp) {
            last->len += len;
            m->size += len;
            return;
        }
    }
    if (m->nseg == b->cap) {
        MPI_Count cap = b->cap ? b->cap * 2 : 8;
        if (cap > CLI_TMAP_MAX_SEGS) {
            b->err = MPI_ERR_NO_MEM;
            return;
        }
        cli_seg_t *s = realloc(m->segs, (size_t)cap * sizeof *s);
        if (s == NULL) {
            b->err = MPI_ERR_NO_MEM;
            return;
        }
        m->segs = s;
        b->cap = cap;
    }
    m->segs[m->nseg++] = (cli_seg_t){disp, len};
    m->size += len;
}

/* Layout of one core element of a type without a map. */
static void cli_core_elem(const cli_type_t *t, MPI_Count *ext, MPI_Count *vsize, MPI_Count *ioff)
{
    *ioff = 0;
    switch (t->basic) {
    case COLLAB_FLOAT_INT:
        *ext = 8, *vsize = 4, *ioff = 4;
        return;
    case COLLAB_DOUBLE_INT:
    case COLLAB_LONG_INT:
        *ext = 16, *vsize = 8, *ioff = 8;
        return;
    case COLLAB_SHORT_INT:
        *ext = 8, *vsize = 2, *ioff = 4;
        return;
    case COLLAB_LONG_DOUBLE_INT:
        *ext = 32, *vsize = 16, *ioff = 16;
        return;
    default:
        *ext = *vsize = t->mult > 0 ? t->extent / t->mult : 0;
        return;
    }
}

/* Alignment of a predefined type, as C lays it out in a struct. */
static MPI_Count cli_predef_align(const cli_type_t *p)
{
    MPI_Count ext, vsize, ioff;
    cli_core_elem(p, &ext, &vsize, &ioff);
    if (ioff > 0)
        return vsize > 4 ? vsize : 4;
    if (p->category == CLI_CAT_COMPLEX || p->mult > 1)
        return p->size / (p->mult > 1 ? p->mult : 2) > 0 ? p->size / (p->mult > 1 ? p->mult : 2)
                                                         : 1;
    return p->size > 16 ? 16 : p->size > 0 ? p->size : 1;
}

static void cli_tmap_child_runs(cli_tmap_builder_t *b, const cli_type_t *c, MPI_Count base)
{
    if (c->map != NULL) {
        for (MPI_Count k = 0; k < c->map->nseg; k++)
            cli_tmap_run(b, base + c->map->segs[k].disp, c->map->segs[k].len);
        return;
    }
    MPI_Count ext, vsize, ioff;
    cli_core_elem(c, &ext, &vsize, &ioff);
    if (ioff == 0) {
        cli_tmap_run(b, base, c->size);
        return;
    }
    for (MPI_Count i = 0; i < c->mult; i++) {
        cli_tmap_run(b, base + i * ext, vsize);
        cli_tmap_run(b, base + i * ext + ioff, (MPI_Count)sizeof(int));
    }
}

void cli_tmap_add(cli_tmap_builder_t *b, const cli_type_t *child, MPI_Count disp, MPI_Count count)
{
    if (b->err || count <= 0)
        return;
    cli_tmap_t *m = b->m;
    MPI_Count ext = child->extent;
    MPI_Count clb = child->lb, cub = child->lb + child->extent;
    MPI_Count span, last;
    if (__builtin_mul_overflow(count - 1, ext, &span) ||
        __builtin_add_overflow(disp, span, &last)) {
        b->err = MPI_ERR_COUNT;
        return;
    }
    /* Bounds of the whole block (extent may be negative after resizing). */
    MPI_Count lo = disp + (span < 0 ? span : 0), hi = disp + (span > 0 ? span : 0);
    MPI_Count blb = lo + clb, bub = hi + cub;
    if (!b->any) {
        m->lb = blb, m->ub = bub;
    } else {
        if (blb < m->lb)
            m->lb = blb;
        if (bub > m->ub)
            m->ub = bub;
    }
    if (child->size > 0) {
        MPI_Count tlb = lo + child->true_lb, tub = hi + child->true_lb + child->true_extent;
        if (m->true_ub <= m->true_lb && m->size == 0) {
            m->true_lb = tlb, m->true_ub = tub;
        } else {
            if (tlb < m->true_lb)
                m->true_lb = tlb;
            if (tub > m->true_ub)
                m->true_ub = tub;
        }
    }
    b->any = 1;
    int h = child->map != NULL ? child->map->homog : child->base_predef;
    MPI_Count nb = child->map != NULL ? child->map->nbasic
                                      : child->mult * (child->category == CLI_CAT_PAIR &&
                                                               child->basic != COLLAB_FLOAT &&
                                                               child->basic != COLLAB_DOUBLE
                                                           ? 2
                                                           : 1);
    if (child->size > 0) {
        if (m->homog == -2)
            m->homog = h;
        else if (m->homog != h)
            m->homog = -1;
        m->nbasic += nb * count;
    }
    MPI_Count al = child->map != NULL ? child->map->align
                                      : cli_predef_align(&cli_predef_types[child->base_predef]);
    if (al > m->align)
        m->align = al;
    for (MPI_Count i = 0; i < count && !b->err; i++)
        cli_tmap_child_runs(b, child, disp + i * ext);
}

cli_tmap_t *cli_tmap_finish(cli_tmap_builder_t *b, int *err)
{
    cli_tmap_t *m = b->m;
    b->m = NULL;
    if (b->err) {
        *err = b->err;
        cli_tmap_destroy(&m);
        return NULL;
    }
    if (m->homog == -2)
        m->homog = -1;
    if (m->size == 0)
        m->true_lb = m->true_ub = 0;
    return m;
}

void cli_tmap_destroy(cli_tmap_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    free((*self_p)->segs);
    free(*self_p);
    *self_p = NULL;
}

/* ---------------------------------------------------------------------- */

/* Copies between a typed buffer and a dense one; pack: typed -> dense. */
static void cli_tmap_copy(const cli_type_t *t, MPI_Count count, char *typed, char *dense,
                          MPI_Count limit, int pack)
{
    if (t->map == NULL) {
        MPI_Count ext, vsize, ioff;
        cli_core_elem(t, &ext, &vsize, &ioff);
        if (ioff == 0) {
            MPI_Count n = count * t->size;
            if (n > limit)
                n = limit;
            if (pack)
                memcpy(dense, typed, (size_t)n);
            else
                memcpy(typed, dense, (size_t)n);
            return;
        }
        /* pair types: value and int, padding dropped */
        MPI_Count dsz = vsize + (MPI_Count)sizeof(int), n = count * t->mult;
        for (MPI_Count i = 0; i < n && limit > 0; i++) {
            char *e = typed + i * ext, *d = dense + i * dsz;
            MPI_Count v = vsize < limit ? vsize : limit;
            MPI_Count r = limit - v < (MPI_Count)sizeof(int) ? limit - v : (MPI_Count)sizeof(int);
            if (pack) {
                memcpy(d, e, (size_t)v);
                memcpy(d + vsize, e + ioff, (size_t)r);
            } else {
                memcpy(e, d, (size_t)v);
                memcpy(e + ioff, d + vsize, (size_t)r);
            }
            limit -= v + r;
        }
        return;
    }
    const cli_tmap_t *m = t->map;
    for (MPI_Count i = 0; i < count && limit > 0; i++) {
        char *base = typed + i * t->extent;
        for (MPI_Count k = 0; k < m->nseg && limit > 0; k++) {
            MPI_Count len = m->segs[k].len < limit ? m->segs[k].len : limit;
            if (pack)
                memcpy(dense, base + m->segs[k].disp, (size_t)len);
            else
                memcpy(base + m->segs[k].disp, dense, (size_t)len);
            dense += len;
            limit -= len;
        }
    }
}

void cli_tmap_pack(const cli_type_t *t, MPI_Count count, const void *buf, void *out)
{
    cli_tmap_copy(t, count, (char *)buf, out, count * t->size, 1);
}

void cli_tmap_unpack(const cli_type_t *t, MPI_Count count, const void *in, void *buf)
{
    cli_tmap_copy(t, count, buf, (char *)in, count * t->size, 0);
}

void cli_tmap_unpack_part(const cli_type_t *t, MPI_Count bytes, const void *in, void *buf)
{
    if (t->size <= 0)
        return;
    MPI_Count count = (bytes + t->size - 1) / t->size;
    cli_tmap_copy(t, count, buf, (char *)in, bytes, 0);
}

cli_tmap_t *cli_tmap_repeat(const cli_type_t *old, MPI_Count n, int *err)
{
    cli_tmap_builder_t b;
    if (cli_tmap_begin(&b) != MPI_SUCCESS) {
        *err = MPI_ERR_NO_MEM;
        return NULL;
    }
    cli_tmap_add(&b, old, 0, n);
    cli_tmap_t *m = cli_tmap_finish(&b, err);
    if (m != NULL && n == 0)
        m->lb = m->ub = 0;
    return m;
}
