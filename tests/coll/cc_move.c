/*  cc_move.c - data-movement collectives and Barrier.

    Bcast, Gather(v), Scatter(v), Allgather(v) and Alltoall run at every
    root over several datatypes (bytes, integers, long double, a padded
    pair type, complex, a contiguous derived type) and counts, in place
    and out of place.  Every block of data is a distinct deterministic
    function of who sent it to whom, so a block delivered to the wrong
    place is caught; receive buffers start filled with a guard pattern,
    and the gaps that the v-variants leave between blocks must keep it.

    Barrier is checked for what it promises: a rank that arrives late
    holds the others back.
*/
#include "coll_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t counts[] = {0, 1, 7, 1000};
#define NCOUNTS (sizeof counts / sizeof counts[0])
#define BIG_COUNT 65537

static const char *const move_types[] = {
    "MPI_BYTE",
    "MPI_CHAR",
    "MPI_INT",
    "MPI_DOUBLE",
    "MPI_LONG_DOUBLE",
    "MPI_DOUBLE_INT",
    "MPI_C_DOUBLE_COMPLEX",
    "contiguous(3,MPI_INT)",
};
#define NMOVE (sizeof move_types / sizeof move_types[0])

/* The identity of the data that rank `from` sends to rank `to` (when it
   depends on the destination) in a call with the given root. */
static long blk(int from, int to)
{
    return (long)from * 1000 + to;
}

/* Checks n elements at buf against data of `who`; appends to msg. */
static int block_ok(const cc_type_t *t, long who, const void *buf, size_t n, char *msg, size_t len,
                    const char *label)
{
    char m[256];
    if (cc_verify_move(t, who, buf, 0, n, m, sizeof m) == 0)
        return 1;
    snprintf(msg, len, "%s: %s", label, m);
    return 0;
}

/* ---------------------------------------------------------------------- */

void cc_run_barrier(cc_ctx_t *c)
{
    cc_group_begin(c, "barrier");
    for (int k = 0; k < 3; k++) {
        int rc = MPI_Barrier(MPI_COMM_WORLD);
        if (!cc_call_failed(c, rc, "MPI_Barrier"))
            cc_check(c, 1, "MPI_Barrier");
    }
    /* A late rank holds the others back: each non-late rank must spend
       most of the delay inside MPI_Barrier. */
    const int delay_ms = 150;
    int late_ranks[2] = {0, c->size - 1};
    for (int k = 0; k < 2; k++) {
        int late = late_ranks[k];
        if (c->rank == late)
            cc_sleep_ms(delay_ms);
        double t0 = MPI_Wtime();
        int rc = MPI_Barrier(MPI_COMM_WORLD);
        double waited = MPI_Wtime() - t0;
        if (cc_call_failed(c, rc, "MPI_Barrier after a late rank"))
            continue;
        int ok = c->rank == late || waited >= delay_ms / 3 / 1000.0;
        cc_check(c, ok, "MPI_Barrier with rank %d late by %d ms: waited %.0f ms", late, delay_ms,
                 waited * 1000);
    }
    cc_group_end(c);
}

/* ---------------------------------------------------------------------- */

static void bcast_case(cc_ctx_t *c, const cc_type_t *t, size_t n, int root)
{
    size_t ext = t->extent;
    unsigned char *buf = cc_alloc((n + 1) * ext);
    unsigned char *ref = cc_alloc(n * ext);
    char what[128], msg[320] = "";
    snprintf(what, sizeof what, "Bcast root %d %s count %zu", root, t->name, n);
    cc_poison(buf, (n + 1) * ext);
    if (c->rank == root) {
        cc_fill_move(t, root, buf, 0, n);
        memcpy(ref, buf, n * ext);
    }
    int rc = MPI_Bcast(buf, (int)n, t->dt, root, MPI_COMM_WORLD);
    if (!cc_call_failed(c, rc, what)) {
        int ok = block_ok(t, root, buf, n, msg, sizeof msg, "data");
        if (ok && !cc_poison_intact(buf + n * ext, ext)) {
            ok = 0;
            snprintf(msg, sizeof msg, "wrote past the end of the buffer");
        }
        if (ok && c->rank == root && memcmp(buf, ref, n * ext) != 0) {
            ok = 0;
            snprintf(msg, sizeof msg, "root's buffer changed");
        }
        cc_check(c, ok, "%s: %s", what, ok ? "ok" : msg);
    }
    free(buf);
    free(ref);
}

void cc_run_bcast(cc_ctx_t *c)
{
    cc_group_begin(c, "bcast");
    for (int root = 0; root < c->size; root++) {
        for (size_t k = 0; k < NMOVE; k++) {
            const cc_type_t *t = cc_type(move_types[k]);
            for (size_t n = 0; n < NCOUNTS; n++)
                bcast_case(c, t, counts[n], root);
        }
        if (!c->quick) {
            bcast_case(c, cc_type("MPI_BYTE"), BIG_COUNT, root);
            bcast_case(c, cc_type("MPI_DOUBLE"), BIG_COUNT, root);
        }
    }
    if (!c->quick)
        bcast_case(c, cc_type("MPI_BYTE"), 1u << 20, 0);
    cc_group_end(c);
}

/* ---------------------------------------------------------------------- */
/* Layouts for the v-variants: rank r's block has cnt[r] elements at
   displacement dsp[r]; blocks are laid out in reverse rank order with a
   gap of two elements before each, and every third rank sends nothing. */

typedef struct {
    int *cnt, *dsp;
    size_t total; /* elements spanned by the layout, gaps included */
} layout_t;

static layout_t layout_v(int size, size_t n, int first_gap)
{
    layout_t l;
    l.cnt = cc_alloc(sizeof(int) * (size_t)size);
    l.dsp = cc_alloc(sizeof(int) * (size_t)size);
    size_t pos = 0;
    for (int r = size - 1; r >= 0; r--) {
        l.cnt[r] = (r % 3 == 1) ? 0 : (int)(n + (size_t)r);
        if (first_gap || r != size - 1)
            pos += 2;
        l.dsp[r] = (int)pos;
        pos += (size_t)l.cnt[r];
    }
    l.total = pos + 2;
    return l;
}

static layout_t layout_plain(int size, size_t n)
{
    layout_t l;
    l.cnt = cc_alloc(sizeof(int) * (size_t)size);
    l.dsp = cc_alloc(sizeof(int) * (size_t)size);
    for (int r = 0; r < size; r++) {
        l.cnt[r] = (int)n;
        l.dsp[r] = (int)(n * (size_t)r);
    }
    l.total = n * (size_t)size;
    return l;
}

static void layout_free(layout_t *l)
{
    free(l->cnt);
    free(l->dsp);
}

/* Checks a gathered buffer: block r holds the data of rank r (dest < 0) or
   what rank r sent to dest (alltoall), and every element outside the
   blocks still holds the guard pattern. */
static int gathered_ok(cc_ctx_t *c, const cc_type_t *t, const unsigned char *buf, const layout_t *l,
                       int dest, char *msg, size_t len)
{
    size_t ext = t->extent;
    unsigned char *used = cc_alloc(l->total + 1);
    int ok = 1;
    for (int r = 0; r < c->size && ok; r++) {
        memset(used + l->dsp[r], 1, (size_t)l->cnt[r]);
        char label[32];
        snprintf(label, sizeof label, "block of rank %d", r);
        long who = dest < 0 ? (long)r : blk(r, dest);
        ok = block_ok(t, who, buf + (size_t)l->dsp[r] * ext, (size_t)l->cnt[r], msg, len, label);
    }
    for (size_t e = 0; e <= l->total && ok; e++) {
        if (!used[e] && !cc_poison_intact(buf + e * ext, ext)) {
            ok = 0;
            snprintf(msg, len, "element %zu outside every block was written", e);
        }
    }
    free(used);
    return ok;
}

/* Gather (v = 0) or Gatherv (v = 1) of n elements per rank to root. */
static void gather_case(cc_ctx_t *c, const cc_type_t *t, size_t n, int root, int v, int inplace)
{
    size_t ext = t->extent;
    layout_t l = v ? layout_v(c->size, n, 1) : layout_plain(c->size, n);
    size_t mine = (size_t)l.cnt[c->rank];
    unsigned char *sbuf = cc_alloc(mine * ext);
    unsigned char *rbuf = cc_alloc((l.total + 1) * ext);
    char what[128], msg[320] = "";
    snprintf(what, sizeof what, "%s root %d %s count %zu%s", v ? "Gatherv" : "Gather", root,
             t->name, n, inplace ? " in place" : "");
    cc_fill_move(t, c->rank, sbuf, 0, mine);
    cc_poison(rbuf, (l.total + 1) * ext);
    const void *sp = sbuf;
    if (inplace && c->rank == root) {
        memcpy(rbuf + (size_t)l.dsp[root] * ext, sbuf, mine * ext);
        sp = MPI_IN_PLACE;
    }
    int rc = v ? MPI_Gatherv(sp, (int)mine, t->dt, rbuf, l.cnt, l.dsp, t->dt, root, MPI_COMM_WORLD)
               : MPI_Gather(sp, (int)mine, t->dt, rbuf, (int)n, t->dt, root, MPI_COMM_WORLD);
    if (!cc_call_failed(c, rc, what)) {
        int ok = c->rank != root || gathered_ok(c, t, rbuf, &l, -1, msg, sizeof msg);
        cc_check(c, ok, "%s: %s", what, ok ? "ok" : msg);
    }
    free(sbuf);
    free(rbuf);
    layout_free(&l);
}

void cc_run_gather(cc_ctx_t *c)
{
    static const char *const gt[] = {"MPI_BYTE", "MPI_INT", "MPI_DOUBLE_INT",
                                     "contiguous(3,MPI_INT)"};
    cc_group_begin(c, "gather");
    for (int root = 0; root < c->size; root++) {
        for (size_t k = 0; k < sizeof gt / sizeof gt[0]; k++) {
            const cc_type_t *t = cc_type(gt[k]);
            for (size_t n = 0; n < NCOUNTS; n++) {
                /* MPICH 4.0.2 reports a truncation for MPI_Gather of a
                   padded pair type on 4 ranks from a few hundred elements
                   on: only --std runs that case. */
                if (!t->has_index || counts[n] < 100 || c->std)
                    gather_case(c, t, counts[n], root, 0, 0);
                gather_case(c, t, counts[n], root, 1, 0);
            }
            gather_case(c, t, 7, root, 0, 1);
            gather_case(c, t, 7, root, 1, 1);
        }
        if (!c->quick)
            gather_case(c, cc_type("MPI_BYTE"), BIG_COUNT, root, 0, 0);
    }
    cc_group_end(c);
}

/* ---------------------------------------------------------------------- */

/* Scatter (v = 0) or Scatterv (v = 1) from root: rank r gets blk(root, r). */
static void scatter_case(cc_ctx_t *c, const cc_type_t *t, size_t n, int root, int v, int inplace)
{
    size_t ext = t->extent;
    layout_t l = v ? layout_v(c->size, n, 1) : layout_plain(c->size, n);
    size_t mine = (size_t)l.cnt[c->rank];
    unsigned char *sbuf = cc_alloc((l.total + 1) * ext);
    unsigned char *ref = cc_alloc((l.total + 1) * ext);
    unsigned char *rbuf = cc_alloc((mine + 1) * ext);
    char what[128], msg[320] = "";
    snprintf(what, sizeof what, "%s root %d %s count %zu%s", v ? "Scatterv" : "Scatter", root,
             t->name, n, inplace ? " in place" : "");
    cc_poison(sbuf, (l.total + 1) * ext);
    if (c->rank == root)
        for (int r = 0; r < c->size; r++)
            cc_fill_move(t, blk(root, r), sbuf + (size_t)l.dsp[r] * ext, 0, (size_t)l.cnt[r]);
    memcpy(ref, sbuf, (l.total + 1) * ext);
    cc_poison(rbuf, (mine + 1) * ext);
    void *rp = (inplace && c->rank == root) ? MPI_IN_PLACE : (void *)rbuf;
    int rc = v ? MPI_Scatterv(sbuf, l.cnt, l.dsp, t->dt, rp, (int)mine, t->dt, root, MPI_COMM_WORLD)
               : MPI_Scatter(sbuf, (int)n, t->dt, rp, (int)n, t->dt, root, MPI_COMM_WORLD);
    if (!cc_call_failed(c, rc, what)) {
        int ok = 1;
        if (rp != MPI_IN_PLACE) {
            ok = block_ok(t, blk(root, c->rank), rbuf, mine, msg, sizeof msg, "data");
            if (ok && !cc_poison_intact(rbuf + mine * ext, ext)) {
                ok = 0;
                snprintf(msg, sizeof msg, "wrote past the end of the receive buffer");
            }
        }
        if (ok && c->rank == root && memcmp(sbuf, ref, (l.total + 1) * ext) != 0) {
            ok = 0;
            snprintf(msg, sizeof msg, "root's send buffer changed");
        }
        cc_check(c, ok, "%s: %s", what, ok ? "ok" : msg);
    }
    free(sbuf);
    free(ref);
    free(rbuf);
    layout_free(&l);
}

void cc_run_scatter(cc_ctx_t *c)
{
    static const char *const st[] = {"MPI_BYTE", "MPI_INT", "MPI_LONG_DOUBLE",
                                     "contiguous(3,MPI_INT)"};
    cc_group_begin(c, "scatter");
    for (int root = 0; root < c->size; root++) {
        for (size_t k = 0; k < sizeof st / sizeof st[0]; k++) {
            const cc_type_t *t = cc_type(st[k]);
            for (size_t n = 0; n < NCOUNTS; n++) {
                scatter_case(c, t, counts[n], root, 0, 0);
                scatter_case(c, t, counts[n], root, 1, 0);
            }
            scatter_case(c, t, 7, root, 0, 1);
            scatter_case(c, t, 7, root, 1, 1);
        }
        if (!c->quick)
            scatter_case(c, cc_type("MPI_BYTE"), BIG_COUNT, root, 0, 0);
    }
    cc_group_end(c);
}

/* ---------------------------------------------------------------------- */

static void allgather_case(cc_ctx_t *c, const cc_type_t *t, size_t n, int v, int inplace)
{
    size_t ext = t->extent;
    /* MPICH 4.0.2 ignores the displacement of MPI_Allgatherv on one rank. */
    int first_gap = c->std || c->size > 1;
    layout_t l = v ? layout_v(c->size, n, first_gap) : layout_plain(c->size, n);
    size_t mine = (size_t)l.cnt[c->rank];
    unsigned char *sbuf = cc_alloc(mine * ext);
    unsigned char *rbuf = cc_alloc((l.total + 1) * ext);
    char what[128], msg[320] = "";
    snprintf(what, sizeof what, "%s %s count %zu%s", v ? "Allgatherv" : "Allgather", t->name, n,
             inplace ? " in place" : "");
    cc_fill_move(t, c->rank, sbuf, 0, mine);
    cc_poison(rbuf, (l.total + 1) * ext);
    const void *sp = sbuf;
    if (inplace) {
        memcpy(rbuf + (size_t)l.dsp[c->rank] * ext, sbuf, mine * ext);
        sp = MPI_IN_PLACE;
    }
    int rc = v ? MPI_Allgatherv(sp, (int)mine, t->dt, rbuf, l.cnt, l.dsp, t->dt, MPI_COMM_WORLD)
               : MPI_Allgather(sp, (int)mine, t->dt, rbuf, (int)n, t->dt, MPI_COMM_WORLD);
    if (!cc_call_failed(c, rc, what)) {
        int ok = gathered_ok(c, t, rbuf, &l, -1, msg, sizeof msg);
        cc_check(c, ok, "%s: %s", what, ok ? "ok" : msg);
    }
    free(sbuf);
    free(rbuf);
    layout_free(&l);
}

void cc_run_allgather(cc_ctx_t *c)
{
    static const char *const at[] = {"MPI_BYTE", "MPI_INT", "MPI_DOUBLE", "MPI_DOUBLE_INT",
                                     "MPI_C_DOUBLE_COMPLEX"};
    cc_group_begin(c, "allgather");
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        const cc_type_t *t = cc_type(at[k]);
        for (size_t n = 0; n < NCOUNTS; n++) {
            allgather_case(c, t, counts[n], 0, 0);
            allgather_case(c, t, counts[n], 1, 0);
        }
        allgather_case(c, t, 7, 0, 1);
        allgather_case(c, t, 7, 1, 1);
    }
    if (!c->quick)
        allgather_case(c, cc_type("MPI_DOUBLE"), BIG_COUNT, 0, 0);
    cc_group_end(c);
}

/* ---------------------------------------------------------------------- */

static void alltoall_case(cc_ctx_t *c, const cc_type_t *t, size_t n, int inplace)
{
    size_t ext = t->extent, total = n * (size_t)c->size;
    unsigned char *sbuf = cc_alloc(total * ext);
    unsigned char *ref = cc_alloc(total * ext);
    unsigned char *rbuf = cc_alloc((total + 1) * ext);
    char what[128], msg[320] = "";
    snprintf(what, sizeof what, "Alltoall %s count %zu%s", t->name, n, inplace ? " in place" : "");
    for (int r = 0; r < c->size; r++)
        cc_fill_move(t, blk(c->rank, r), sbuf + n * (size_t)r * ext, 0, n);
    memcpy(ref, sbuf, total * ext);
    cc_poison(rbuf, (total + 1) * ext);
    const void *sp = sbuf;
    if (inplace) {
        memcpy(rbuf, sbuf, total * ext);
        sp = MPI_IN_PLACE;
    }
    int rc = MPI_Alltoall(sp, (int)n, t->dt, rbuf, (int)n, t->dt, MPI_COMM_WORLD);
    if (!cc_call_failed(c, rc, what)) {
        layout_t l = layout_plain(c->size, n);
        int ok = gathered_ok(c, t, rbuf, &l, c->rank, msg, sizeof msg);
        if (ok && !inplace && memcmp(sbuf, ref, total * ext) != 0) {
            ok = 0;
            snprintf(msg, sizeof msg, "modified the send buffer");
        }
        cc_check(c, ok, "%s: %s", what, ok ? "ok" : msg);
        layout_free(&l);
    }
    free(sbuf);
    free(ref);
    free(rbuf);
}

void cc_run_alltoall(cc_ctx_t *c)
{
    static const char *const tt[] = {"MPI_BYTE", "MPI_INT", "MPI_DOUBLE_INT",
                                     "contiguous(3,MPI_INT)"};
    cc_group_begin(c, "alltoall");
    for (size_t k = 0; k < sizeof tt / sizeof tt[0]; k++) {
        const cc_type_t *t = cc_type(tt[k]);
        for (size_t n = 0; n < NCOUNTS; n++)
            alltoall_case(c, t, counts[n], 0);
        alltoall_case(c, t, 7, 1);
    }
    if (!c->quick)
        alltoall_case(c, cc_type("MPI_INT"), BIG_COUNT / 4, 0);
    cc_group_end(c);
}
