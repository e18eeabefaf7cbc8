/*  cl_elmsg.c - encoder and decoder of the ELASTIC bodies (docs/wire.md §7).

    Built on cl_wire.c's cursor (cl_cursor.h), with the same discipline: a
    failed read poisons the cursor, every field is range-checked after
    reading, and a body is accepted only when the cursor ends exactly at
    its end.  The writer grows one buffer and refuses (instead of
    writing) any value the reader would reject, so peers never send what
    they would drop themselves.
*/
#include "engine/cl_elmsg.h"

#include "engine/cl_cursor.h"

#include "mpi_collab.h"

#include <sodium.h>

#include <stdlib.h>
#include <string.h>

#define WORLD_MAX (1 << 20) /* as CL_WIRE_WORLD_MAX */

/* ---------------------------------------------------------------------- */
/* Lists announced in a body. */

/* Allocates n elements of size each for a list announced in the body,
   after checking that the body can hold them (min_each bytes apiece), so
   that a forged count never makes us allocate much. */
static void *rd_alloc(cl_rd_t *r, uint32_t n, size_t size, size_t min_each, bool *oom)
{
    if (r->bad || n == 0)
        return NULL;
    if ((uint64_t)n * min_each > r->left) {
        r->bad = true;
        return NULL;
    }
    void *a = calloc(n, size);
    if (a == NULL)
        *oom = true;
    return a;
}

/* ---------------------------------------------------------------------- */
/* Field rules shared by both directions. */

static bool range_ok(uint64_t offset, uint64_t len)
{
    return len >= 1 && offset <= UINT64_MAX - len;
}

static bool admit_ok(const cl_elmsg_t *m)
{
    return m->njoiners >= 1 && m->njoiners <= CL_ELMSG_MAX_JOINERS && m->gen >= 1 &&
           m->prefix <= CL_ELMSG_MAX_PREFIX && m->nsigs == m->prefix && m->s >= m->prefix &&
           m->w0_end >= m->s;
}

static bool ckpt_ok(const cl_elmsg_t *m)
{
    if (m->ckpt == CL_EL_CKPT_REQUEST)
        return m->every >= 1 && m->every <= ((uint64_t)1 << 30) && m->prefix == 0 &&
               m->nsigs == 0 && m->s == 0;
    return (m->ckpt == CL_EL_CKPT_NOTICE || m->ckpt == CL_EL_CKPT_RESUME) && m->every == 0 &&
           m->prefix <= CL_ELMSG_MAX_PREFIX && m->nsigs == m->prefix && m->s >= m->prefix;
}

static bool joiner_ok(const cl_el_joiner_t *j)
{
    return j->rank >= 0 && j->rank < WORLD_MAX && (j->flags & ~CL_EL_JOINER_READMIT) == 0;
}

/* ---------------------------------------------------------------------- */

int cl_elmsg_decode(uint8_t type, const uint8_t *body, size_t len, cl_elmsg_t *out)
{
    memset(out, 0, sizeof *out);
    if (body == NULL && len > 0)
        return COLLAB_ERR_ARG;
    cl_rd_t r = {body, len, false};
    bool oom = false;
    out->type = type;
    switch (type) {
    case CL_EL_ADMIT_REQ:
        out->readmit = cl_rd_u8(&r);
        out->posted = cl_rd_u64(&r);
        cl_rd_check(&r, out->readmit <= 1);
        break;
    case CL_EL_ADMIT:
        out->s = cl_rd_u64(&r);
        out->prefix = cl_rd_u64(&r);
        out->w0_end = cl_rd_u64(&r);
        out->gen = cl_rd_u64(&r);
        out->njoiners = cl_rd_u32(&r);
        cl_rd_check(&r, out->njoiners >= 1 && out->njoiners <= CL_ELMSG_MAX_JOINERS);
        out->joiners = rd_alloc(&r, out->njoiners, sizeof *out->joiners, 37, &oom);
        for (uint32_t i = 0; out->joiners != NULL && i < out->njoiners; i++) {
            cl_el_joiner_t *j = &out->joiners[i];
            cl_rd_bytes(&r, j->key, 32);
            j->rank = (int32_t)cl_rd_u32(&r);
            j->flags = cl_rd_u8(&r);
            cl_rd_check(&r, joiner_ok(j));
            for (uint32_t k = 0; k < i; k++)
                cl_rd_check(&r, memcmp(out->joiners[k].key, j->key, 32) != 0 &&
                                    out->joiners[k].rank != j->rank);
        }
        out->nsigs = cl_rd_u32(&r);
        cl_rd_check(&r, out->nsigs <= CL_ELMSG_MAX_PREFIX);
        out->sigs = rd_alloc(&r, out->nsigs, sizeof *out->sigs, 4, &oom);
        for (uint32_t i = 0; out->sigs != NULL && i < out->nsigs; i++)
            out->sigs[i] = cl_rd_u32(&r);
        cl_rd_check(&r, admit_ok(out));
        break;
    case CL_EL_QUERY:
        out->s = cl_rd_u64(&r);
        break;
    case CL_EL_HASHES:
        out->s = cl_rd_u64(&r);
        out->nbufs = cl_rd_u32(&r);
        cl_rd_check(&r, out->nbufs <= CL_ELMSG_MAX_ITEMS);
        out->bufs = rd_alloc(&r, out->nbufs, sizeof *out->bufs, 48, &oom);
        for (uint32_t i = 0; out->bufs != NULL && i < out->nbufs; i++) {
            cl_el_buf_t *b = &out->bufs[i];
            b->index = cl_rd_u64(&r);
            b->size = cl_rd_u64(&r);
            cl_rd_bytes(&r, b->hash, CL_ELMSG_HASH);
            cl_rd_check(&r, i == 0 || b->index > out->bufs[i - 1].index);
        }
        out->nres = cl_rd_u32(&r);
        cl_rd_check(&r, out->nres <= CL_ELMSG_MAX_ITEMS);
        out->res = rd_alloc(&r, out->nres, sizeof *out->res, 52, &oom);
        for (uint32_t i = 0; out->res != NULL && i < out->nres; i++) {
            cl_el_res_t *x = &out->res[i];
            x->index = cl_rd_u64(&r);
            x->signature = cl_rd_u32(&r);
            x->len = cl_rd_u64(&r);
            cl_rd_bytes(&r, x->hash, CL_ELMSG_HASH);
            cl_rd_check(&r, i == 0 || x->index > out->res[i - 1].index);
        }
        break;
    case CL_EL_FETCH:
        out->s = cl_rd_u64(&r);
        out->what = cl_rd_u8(&r);
        out->index = cl_rd_u64(&r);
        out->offset = cl_rd_u64(&r);
        out->len = cl_rd_u64(&r);
        cl_rd_check(&r, out->what <= CL_EL_ITEM_RESULT && range_ok(out->offset, out->len));
        break;
    case CL_EL_DATA:
        out->s = cl_rd_u64(&r);
        out->what = cl_rd_u8(&r);
        out->index = cl_rd_u64(&r);
        out->offset = cl_rd_u64(&r);
        out->len = r.left;
        out->data = cl_rd_take(&r, r.left);
        cl_rd_check(&r, out->what <= CL_EL_ITEM_RESULT && range_ok(out->offset, out->len));
        break;
    case CL_EL_DROP:
        out->s = cl_rd_u64(&r);
        out->ndrops = cl_rd_u32(&r);
        cl_rd_check(&r, out->ndrops >= 1 && out->ndrops <= CL_ELMSG_MAX_ITEMS);
        out->drops = rd_alloc(&r, out->ndrops, sizeof *out->drops, 8, &oom);
        for (uint32_t i = 0; out->drops != NULL && i < out->ndrops; i++) {
            out->drops[i] = cl_rd_u64(&r);
            cl_rd_check(&r, i == 0 || out->drops[i] > out->drops[i - 1]);
        }
        break;
    case CL_EL_NACK:
        out->s = cl_rd_u64(&r);
        out->what = cl_rd_u8(&r);
        out->index = cl_rd_u64(&r);
        out->offset = cl_rd_u64(&r);
        out->len = cl_rd_u64(&r);
        out->reason = cl_rd_u8(&r);
        cl_rd_check(&r, out->what <= CL_EL_ITEM_RESULT);
        cl_rd_check(&r, out->reason >= CL_EL_NACK_MOVED && out->reason <= CL_EL_NACK_READ);
        break;
    case CL_EL_PROBE:
        out->epoch = cl_rd_u64(&r);
        break;
    case CL_EL_CKPT:
        out->ckpt = cl_rd_u8(&r);
        out->s = cl_rd_u64(&r);
        out->step = cl_rd_u64(&r);
        out->every = cl_rd_u64(&r);
        out->prefix = cl_rd_u64(&r);
        cl_rd_bytes(&r, out->key, 32);
        out->nsigs = cl_rd_u32(&r);
        cl_rd_check(&r, out->nsigs <= CL_ELMSG_MAX_PREFIX);
        out->sigs = rd_alloc(&r, out->nsigs, sizeof *out->sigs, 4, &oom);
        for (uint32_t i = 0; out->sigs != NULL && i < out->nsigs; i++)
            out->sigs[i] = cl_rd_u32(&r);
        cl_rd_check(&r, ckpt_ok(out));
        break;
    default:
        r.bad = true;
        break;
    }
    if (oom || r.bad || r.left != 0) {
        cl_elmsg_clear(out);
        return oom ? COLLAB_ERR_NO_MEM : COLLAB_ERR_ARG;
    }
    return COLLAB_OK;
}

int cl_elmsg_encode(const cl_elmsg_t *m, uint8_t **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    cl_wr_t w = {0};
    switch (m->type) {
    case CL_EL_ADMIT_REQ:
        cl_wr_check(&w, m->readmit <= 1);
        cl_wr_u8(&w, m->readmit);
        cl_wr_u64(&w, m->posted);
        break;
    case CL_EL_ADMIT:
        cl_wr_check(&w, admit_ok(m) && m->joiners != NULL && (m->nsigs == 0 || m->sigs != NULL));
        if (w.bad)
            break;
        cl_wr_u64(&w, m->s);
        cl_wr_u64(&w, m->prefix);
        cl_wr_u64(&w, m->w0_end);
        cl_wr_u64(&w, m->gen);
        cl_wr_u32(&w, m->njoiners);
        for (uint32_t i = 0; i < m->njoiners; i++) {
            const cl_el_joiner_t *j = &m->joiners[i];
            cl_wr_check(&w, joiner_ok(j));
            for (uint32_t k = 0; k < i; k++)
                cl_wr_check(&w, memcmp(m->joiners[k].key, j->key, 32) != 0 &&
                                    m->joiners[k].rank != j->rank);
            cl_wr_bytes(&w, j->key, 32);
            cl_wr_u32(&w, (uint32_t)j->rank);
            cl_wr_u8(&w, j->flags);
        }
        cl_wr_u32(&w, m->nsigs);
        for (uint32_t i = 0; i < m->nsigs; i++)
            cl_wr_u32(&w, m->sigs[i]);
        break;
    case CL_EL_QUERY:
        cl_wr_u64(&w, m->s);
        break;
    case CL_EL_HASHES:
        cl_wr_check(&w, m->nbufs <= CL_ELMSG_MAX_ITEMS && m->nres <= CL_ELMSG_MAX_ITEMS);
        cl_wr_check(&w, (m->nbufs == 0 || m->bufs != NULL) && (m->nres == 0 || m->res != NULL));
        if (w.bad)
            break;
        cl_wr_u64(&w, m->s);
        cl_wr_u32(&w, m->nbufs);
        for (uint32_t i = 0; i < m->nbufs; i++) {
            cl_wr_check(&w, i == 0 || m->bufs[i].index > m->bufs[i - 1].index);
            cl_wr_u64(&w, m->bufs[i].index);
            cl_wr_u64(&w, m->bufs[i].size);
            cl_wr_bytes(&w, m->bufs[i].hash, CL_ELMSG_HASH);
        }
        cl_wr_u32(&w, m->nres);
        for (uint32_t i = 0; i < m->nres; i++) {
            cl_wr_check(&w, i == 0 || m->res[i].index > m->res[i - 1].index);
            cl_wr_u64(&w, m->res[i].index);
            cl_wr_u32(&w, m->res[i].signature);
            cl_wr_u64(&w, m->res[i].len);
            cl_wr_bytes(&w, m->res[i].hash, CL_ELMSG_HASH);
        }
        break;
    case CL_EL_FETCH:
        cl_wr_check(&w, m->what <= CL_EL_ITEM_RESULT && range_ok(m->offset, m->len));
        cl_wr_u64(&w, m->s);
        cl_wr_u8(&w, m->what);
        cl_wr_u64(&w, m->index);
        cl_wr_u64(&w, m->offset);
        cl_wr_u64(&w, m->len);
        break;
    case CL_EL_DATA:
        cl_wr_check(&w,
                    m->what <= CL_EL_ITEM_RESULT && range_ok(m->offset, m->len) && m->data != NULL);
        cl_wr_u64(&w, m->s);
        cl_wr_u8(&w, m->what);
        cl_wr_u64(&w, m->index);
        cl_wr_u64(&w, m->offset);
        if (!w.bad)
            cl_wr_bytes(&w, m->data, (size_t)m->len);
        break;
    case CL_EL_DROP:
        cl_wr_check(&w, m->ndrops >= 1 && m->ndrops <= CL_ELMSG_MAX_ITEMS && m->drops != NULL);
        if (w.bad)
            break;
        cl_wr_u64(&w, m->s);
        cl_wr_u32(&w, m->ndrops);
        for (uint32_t i = 0; i < m->ndrops; i++) {
            cl_wr_check(&w, i == 0 || m->drops[i] > m->drops[i - 1]);
            cl_wr_u64(&w, m->drops[i]);
        }
        break;
    case CL_EL_NACK:
        cl_wr_check(&w, m->what <= CL_EL_ITEM_RESULT && m->reason >= CL_EL_NACK_MOVED &&
                            m->reason <= CL_EL_NACK_READ);
        cl_wr_u64(&w, m->s);
        cl_wr_u8(&w, m->what);
        cl_wr_u64(&w, m->index);
        cl_wr_u64(&w, m->offset);
        cl_wr_u64(&w, m->len);
        cl_wr_u8(&w, m->reason);
        break;
    case CL_EL_PROBE:
        cl_wr_u64(&w, m->epoch);
        break;
    case CL_EL_CKPT:
        cl_wr_check(&w, ckpt_ok(m) && (m->nsigs == 0 || m->sigs != NULL));
        if (w.bad)
            break;
        cl_wr_u8(&w, m->ckpt);
        cl_wr_u64(&w, m->s);
        cl_wr_u64(&w, m->step);
        cl_wr_u64(&w, m->every);
        cl_wr_u64(&w, m->prefix);
        cl_wr_bytes(&w, m->key, 32);
        cl_wr_u32(&w, m->nsigs);
        for (uint32_t i = 0; i < m->nsigs; i++)
            cl_wr_u32(&w, m->sigs[i]);
        break;
    default:
        w.bad = true;
        break;
    }
    if (w.oom || w.bad) {
        free(w.data);
        return w.oom && !w.bad ? COLLAB_ERR_NO_MEM : COLLAB_ERR_ARG;
    }
    *out = w.data;
    *outlen = w.len;
    return COLLAB_OK;
}

void cl_elmsg_clear(cl_elmsg_t *m)
{
    if (m == NULL)
        return;
    free(m->joiners);
    free(m->sigs);
    free(m->bufs);
    free(m->res);
    free(m->drops);
    memset(m, 0, sizeof *m);
}

const char *cl_elmsg_name(int type)
{
    static const char *const names[] = {"unknown", "ADMIT_REQ", "ADMIT", "QUERY", "HASHES", "FETCH",
                                        "DATA",    "DROP",      "NACK",  "PROBE", "CKPT"};
    return type >= 1 && type <= CL_EL_CKPT ? names[type] : "unknown";
}

void cl_elmsg_hash(const void *data, uint64_t len, uint8_t out[CL_ELMSG_HASH])
{
    crypto_generichash_state st;
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(len >> (8 * i));
    crypto_generichash_init(&st, NULL, 0, CL_ELMSG_HASH);
    crypto_generichash_update(&st, le, sizeof le);
    if (len > 0)
        crypto_generichash_update(&st, data, (size_t)len);
    crypto_generichash_final(&st, out, CL_ELMSG_HASH);
}
