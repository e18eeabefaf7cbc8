/*  cl_engine_donor.c - a veteran serving its state to joiners
    (docs/state-sync.md §3-§5).

    A joiner admitted at sequence s asks every donor for the hashes of its
    state (QUERY).  A donor answers only while its program is blocked
    inside collective s of the world communicator, so that what it hashes
    and later sends is the state after step s - 1 on every member: a query
    that arrives earlier waits here until the program posts s, one that
    arrives after the donor went past s is refused (NACK).  The answer
    (HASHES) lists (index, size, BLAKE2b-256) of each registered broadcast
    buffer, read with process_vm_readv through cl_statereg (a buffer that
    cannot be read is dropped with a warning), and of each kept start-up
    result.  The joiner then FETCHes stripes, which go out as DATA pieces
    of CHUNK bytes; a DROP names buffers whose hashes differed between
    donors, which every donor forgets.

    The donor never blocks: every read is bounded by the stripe asked for,
    and ZeroMQ queues what it sends.
*/
#include "engine/cl_engine_elastic.h"

#include "util/cl_log.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK ((size_t)256 * 1024) /* bytes of state per DATA message */
#define MAX_QUERIES 1024           /* queries waiting at most */

typedef struct query {
    struct query *next;
    uint8_t key[32];
    uint64_t s;
} query_t;

struct el_donor {
    query_t *head;
    size_t n;
};

el_donor_t *eng_donor_new(void)
{
    return calloc(1, sizeof(el_donor_t));
}

void eng_donor_destroy(el_donor_t **d_p)
{
    if (d_p == NULL || *d_p == NULL)
        return;
    query_t *q = (*d_p)->head;
    while (q != NULL) {
        query_t *next = q->next;
        free(q);
        q = next;
    }
    free(*d_p);
    *d_p = NULL;
}

static void nack(struct cl_engine *e, const uint8_t key[32], uint64_t s, int what, uint64_t index,
                 uint64_t offset, uint64_t len, int reason)
{
    cl_elmsg_t m;
    memset(&m, 0, sizeof m);
    m.type = CL_EL_NACK;
    m.s = s;
    m.what = (uint8_t)what;
    m.index = index;
    m.offset = offset;
    m.len = len;
    m.reason = (uint8_t)reason;
    (void)eng_el_send(e, key, &m);
}

/* BLAKE2b-256 over len (u64 LE) || bytes, as cl_statereg_hash does. */
static void hash_bytes(const void *data, size_t len, uint8_t out[CL_ELMSG_HASH])
{
    crypto_generichash_state st;
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)((uint64_t)len >> (8 * i));
    crypto_generichash_init(&st, NULL, 0, CL_ELMSG_HASH);
    crypto_generichash_update(&st, le, sizeof le);
    if (len > 0)
        crypto_generichash_update(&st, data, len);
    crypto_generichash_final(&st, out, CL_ELMSG_HASH);
}

static void send_hashes(struct cl_engine *e, const uint8_t key[32], uint64_t s)
{
    cl_statereg_t *reg = e->el->reg;
    cl_startup_t *st = e->el->startup;
    size_t nb = cl_statereg_count(reg), nr = cl_startup_count(st);
    cl_elmsg_t m;
    memset(&m, 0, sizeof m);
    m.type = CL_EL_HASHES;
    m.s = s;
    m.bufs = calloc(nb > 0 ? nb : 1, sizeof *m.bufs);
    m.res = calloc(nr > 0 ? nr : 1, sizeof *m.res);
    if (m.bufs == NULL || m.res == NULL) {
        cl_error("out of memory answering a joiner's state query");
        goto out;
    }
    cl_statereg_entry_t ent;
    for (bool ok = cl_statereg_first(reg, &ent); ok && m.nbufs < CL_ELMSG_MAX_ITEMS;
         ok = cl_statereg_next(reg, ent.index, &ent)) {
        cl_el_buf_t *b = &m.bufs[m.nbufs];
        if (cl_statereg_hash(reg, ent.index, b->hash) != COLLAB_OK) {
            (void)cl_statereg_drop(reg, ent.index, "it can no longer be read");
            continue;
        }
        b->index = ent.index;
        b->size = ent.bytes;
        m.nbufs++;
    }
    cl_startup_entry_t r;
    for (bool ok = cl_startup_first(st, &r); ok && m.nres < CL_ELMSG_MAX_ITEMS;
         ok = cl_startup_next(st, r.index, &r)) {
        cl_el_res_t *x = &m.res[m.nres++];
        x->index = r.index;
        x->signature = r.signature;
        x->len = r.len;
        hash_bytes(r.data, r.len, x->hash);
    }
    cl_debug("state query for collective #%llu: %u buffers, %u results", (unsigned long long)s,
             m.nbufs, m.nres);
    (void)eng_el_send(e, key, &m);
out:
    free(m.bufs);
    free(m.res);
}

static void send_range(struct cl_engine *e, const uint8_t key[32], const cl_elmsg_t *f)
{
    cl_statereg_t *reg = e->el->reg;
    uint64_t end = f->offset + f->len;
    const uint8_t *src = NULL;
    if (f->what == CL_EL_ITEM_BUFFER) {
        cl_statereg_entry_t ent;
        if (cl_statereg_find(reg, f->index, &ent) != COLLAB_OK || end > ent.bytes) {
            nack(e, key, f->s, f->what, f->index, f->offset, f->len, CL_EL_NACK_UNKNOWN);
            return;
        }
    } else {
        cl_startup_entry_t r;
        if (cl_startup_get(e->el->startup, f->index, &r) != COLLAB_OK || end > r.len) {
            nack(e, key, f->s, f->what, f->index, f->offset, f->len, CL_EL_NACK_UNKNOWN);
            return;
        }
        src = r.data;
    }
    uint8_t *chunk = f->what == CL_EL_ITEM_BUFFER ? malloc(CHUNK) : NULL;
    if (f->what == CL_EL_ITEM_BUFFER && chunk == NULL) {
        cl_error("out of memory serving a joiner");
        return;
    }
    cl_elmsg_t d;
    memset(&d, 0, sizeof d);
    d.type = CL_EL_DATA;
    d.s = f->s;
    d.what = f->what;
    d.index = f->index;
    for (uint64_t off = f->offset; off < end;) {
        size_t n = end - off < CHUNK ? (size_t)(end - off) : CHUNK;
        if (chunk != NULL) {
            if (cl_statereg_read(reg, f->index, (size_t)off, n, chunk) != COLLAB_OK) {
                (void)cl_statereg_drop(reg, f->index, "it can no longer be read");
                nack(e, key, f->s, f->what, f->index, off, end - off, CL_EL_NACK_READ);
                break;
            }
            d.data = chunk;
        } else {
            d.data = src + off;
        }
        d.offset = off;
        d.len = n;
        if (eng_el_send(e, key, &d) != COLLAB_OK)
            break; /* the joiner is gone; it will ask someone else */
        off += n;
    }
    free(chunk);
}

void eng_donor_on_message(struct cl_engine *e, el_donor_t *d, const uint8_t key[32],
                          const cl_elmsg_t *m)
{
    int can = eng_el_can_serve(e, m->s);
    switch (m->type) {
    case CL_EL_QUERY:
        if (can > 0) {
            send_hashes(e, key, m->s);
        } else if (can < 0) {
            nack(e, key, m->s, CL_EL_ITEM_BUFFER, 0, 0, 0, CL_EL_NACK_MOVED);
        } else {
            for (query_t *q = d->head; q != NULL; q = q->next)
                if (q->s == m->s && memcmp(q->key, key, 32) == 0)
                    return;
            query_t *q = d->n < MAX_QUERIES ? calloc(1, sizeof *q) : NULL;
            if (q == NULL) {
                nack(e, key, m->s, CL_EL_ITEM_BUFFER, 0, 0, 0, CL_EL_NACK_MOVED);
                return;
            }
            memcpy(q->key, key, 32);
            q->s = m->s;
            q->next = d->head;
            d->head = q;
            d->n++;
        }
        break;
    case CL_EL_FETCH:
        if (can > 0)
            send_range(e, key, m);
        else
            nack(e, key, m->s, m->what, m->index, m->offset, m->len, CL_EL_NACK_MOVED);
        break;
    case CL_EL_DROP:
        for (uint32_t i = 0; i < m->ndrops; i++) {
            cl_statereg_entry_t ent;
            if (cl_statereg_find(e->el->reg, m->drops[i], &ent) == COLLAB_OK)
                (void)cl_statereg_drop(e->el->reg, m->drops[i],
                                       "its contents differ between peers");
        }
        break;
    default:
        break;
    }
}

void eng_donor_progress(struct cl_engine *e, el_donor_t *d)
{
    query_t **pp = &d->head;
    while (*pp != NULL) {
        query_t *q = *pp;
        int can = eng_el_can_serve(e, q->s);
        if (can == 0) {
            pp = &q->next;
            continue;
        }
        *pp = q->next;
        d->n--;
        if (can > 0)
            send_hashes(e, q->key, q->s);
        else
            nack(e, q->key, q->s, CL_EL_ITEM_BUFFER, 0, 0, 0, CL_EL_NACK_MOVED);
        free(q);
    }
}
