/*  cl_elmsg_test.c - selftest of the ELASTIC body codec.

    Round-trips every message type, checks that the encoder refuses what
    the decoder rejects (bad ranges, unsorted lists, duplicate joiners),
    then feeds the decoder every truncation and extension of every encoded
    body and many deterministic random mutations: each is rejected or
    decodes to something that encodes back to the same bytes, never a
    crash or an out-of-bounds read (run it under ASan).
*/
#include "engine/cl_elmsg.h"
#include "mpi_collab.h"
#include "util/cl_selftest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t s_rng = 0x243f6a8885a308d3ull;
static uint64_t rnd(void)
{
    s_rng ^= s_rng << 13;
    s_rng ^= s_rng >> 7;
    s_rng ^= s_rng << 17;
    return s_rng;
}

static cl_el_joiner_t s_joiners[3];
static uint32_t s_sigs[7] = {1, 2, 3, 4, 5, 6, 0xdeadbeef};
static cl_el_buf_t s_bufs[2];
static cl_el_res_t s_res[1];
static uint64_t s_drops[3] = {2, 5, 900};
static uint8_t s_bytes[300];

/* One valid message of each type. */
static int samples(cl_elmsg_t *out, int max)
{
    int n = 0;
    for (int i = 0; i < 3; i++) {
        memset(s_joiners[i].key, 0x10 + i, 32);
        s_joiners[i].rank = 2 + i;
        s_joiners[i].flags = i == 1 ? CL_EL_JOINER_READMIT : 0;
    }
    for (int i = 0; i < 2; i++) {
        s_bufs[i].index = 3 * (uint64_t)i + 1;
        s_bufs[i].size = 1000 + (uint64_t)i;
        memset(s_bufs[i].hash, 0xa0 + i, CL_ELMSG_HASH);
    }
    s_res[0].index = 6;
    s_res[0].signature = 77;
    s_res[0].len = 8;
    memset(s_res[0].hash, 0x5c, CL_ELMSG_HASH);
    for (size_t i = 0; i < sizeof s_bytes; i++)
        s_bytes[i] = (uint8_t)(i * 7);
    memset(out, 0, (size_t)max * sizeof *out);
    out[n].type = CL_EL_ADMIT_REQ;
    out[n].readmit = 1;
    out[n++].posted = 123456789;
    out[n].type = CL_EL_ADMIT;
    out[n].s = 1007;
    out[n].prefix = 7;
    out[n].w0_end = 1013;
    out[n].gen = 42;
    out[n].joiners = s_joiners;
    out[n].njoiners = 3;
    out[n].sigs = s_sigs;
    out[n++].nsigs = 7;
    out[n].type = CL_EL_QUERY;
    out[n++].s = 99;
    out[n].type = CL_EL_HASHES;
    out[n].s = 99;
    out[n].bufs = s_bufs;
    out[n].nbufs = 2;
    out[n].res = s_res;
    out[n++].nres = 1;
    out[n].type = CL_EL_FETCH;
    out[n].s = 99;
    out[n].what = CL_EL_ITEM_BUFFER;
    out[n].index = 4;
    out[n].offset = 1 << 20;
    out[n++].len = 5 << 20;
    out[n].type = CL_EL_DATA;
    out[n].s = 99;
    out[n].what = CL_EL_ITEM_RESULT;
    out[n].index = 6;
    out[n].offset = 64;
    out[n].data = s_bytes;
    out[n++].len = sizeof s_bytes;
    out[n].type = CL_EL_DROP;
    out[n].s = 99;
    out[n].drops = s_drops;
    out[n++].ndrops = 3;
    out[n].type = CL_EL_NACK;
    out[n].s = 99;
    out[n].what = CL_EL_ITEM_BUFFER;
    out[n].index = 4;
    out[n].offset = 1;
    out[n].len = 2;
    out[n++].reason = CL_EL_NACK_READ;
    out[n].type = CL_EL_PROBE;
    out[n++].epoch = 17;
    out[n].type = CL_EL_CKPT;
    out[n].ckpt = CL_EL_CKPT_REQUEST;
    out[n].step = 40;
    out[n++].every = 10;
    out[n].type = CL_EL_CKPT;
    out[n].ckpt = CL_EL_CKPT_NOTICE;
    out[n].s = 1003;
    out[n].step = 50;
    out[n].prefix = 7;
    out[n].sigs = s_sigs;
    out[n].nsigs = 7;
    memset(out[n].key, 0x5a, 32);
    n++;
    CL_CHECK(n <= max);
    return n;
}

static bool same(const cl_elmsg_t *a, const cl_elmsg_t *b)
{
    if (a->type != b->type || a->s != b->s || a->readmit != b->readmit || a->posted != b->posted ||
        a->prefix != b->prefix || a->w0_end != b->w0_end || a->gen != b->gen ||
        a->njoiners != b->njoiners || a->nsigs != b->nsigs || a->nbufs != b->nbufs ||
        a->nres != b->nres || a->what != b->what || a->index != b->index ||
        a->offset != b->offset || a->len != b->len || a->reason != b->reason ||
        a->ndrops != b->ndrops || a->epoch != b->epoch || a->ckpt != b->ckpt ||
        a->step != b->step || a->every != b->every || memcmp(a->key, b->key, 32) != 0)
        return false;
    if (a->njoiners > 0 && memcmp(a->joiners, b->joiners, a->njoiners * sizeof *a->joiners) != 0)
        return false;
    if (a->nsigs > 0 && memcmp(a->sigs, b->sigs, a->nsigs * sizeof *a->sigs) != 0)
        return false;
    for (uint32_t i = 0; i < a->nbufs; i++)
        if (a->bufs[i].index != b->bufs[i].index || a->bufs[i].size != b->bufs[i].size ||
            memcmp(a->bufs[i].hash, b->bufs[i].hash, CL_ELMSG_HASH) != 0)
            return false;
    for (uint32_t i = 0; i < a->nres; i++)
        if (a->res[i].index != b->res[i].index || a->res[i].len != b->res[i].len ||
            a->res[i].signature != b->res[i].signature ||
            memcmp(a->res[i].hash, b->res[i].hash, CL_ELMSG_HASH) != 0)
            return false;
    if (a->ndrops > 0 && memcmp(a->drops, b->drops, a->ndrops * sizeof *a->drops) != 0)
        return false;
    if (a->type == CL_EL_DATA && memcmp(a->data, b->data, (size_t)a->len) != 0)
        return false;
    return true;
}

static void round_trips(void)
{
    cl_elmsg_t m[16];
    int n = samples(m, 16);
    for (int i = 0; i < n; i++) {
        uint8_t *body;
        size_t len;
        CL_CHECK(cl_elmsg_encode(&m[i], &body, &len) == COLLAB_OK);
        cl_elmsg_t d;
        CL_CHECK(cl_elmsg_decode(m[i].type, body, len, &d) == COLLAB_OK);
        CL_CHECK(same(&m[i], &d));
        /* The same body under every other type must never crash; a
           truncated or extended body is always rejected. */
        for (int t = 0; t <= 12; t++) {
            cl_elmsg_t x;
            if (cl_elmsg_decode((uint8_t)t, body, len, &x) == COLLAB_OK)
                cl_elmsg_clear(&x);
        }
        for (size_t cut = 0; cut < len; cut++) {
            cl_elmsg_t x;
            int rc = cl_elmsg_decode(m[i].type, body, cut, &x);
            /* DATA carries a payload of any size >= 1: only cuts into its
               fixed part or its whole payload fail. */
            if (m[i].type != CL_EL_DATA || cut <= 25)
                CL_CHECK(rc == COLLAB_ERR_ARG);
            if (rc == COLLAB_OK)
                cl_elmsg_clear(&x);
        }
        if (m[i].type != CL_EL_DATA) {
            uint8_t *longer = malloc(len + 1);
            memcpy(longer, body, len);
            longer[len] = 0;
            cl_elmsg_t x;
            CL_CHECK(cl_elmsg_decode(m[i].type, longer, len + 1, &x) == COLLAB_ERR_ARG);
            free(longer);
        }
        cl_elmsg_clear(&d);
        free(body);
        CL_CHECK(strcmp(cl_elmsg_name(m[i].type), "unknown") != 0);
    }
    CL_CHECK(strcmp(cl_elmsg_name(0), "unknown") == 0);
    CL_CHECK(strcmp(cl_elmsg_name(200), "unknown") == 0);
}

static void refusals(void)
{
    cl_elmsg_t m[16];
    samples(m, 16);
    uint8_t *body;
    size_t len;
    cl_elmsg_t a = m[1]; /* ADMIT */
    a.nsigs = 6;         /* must equal prefix */
    CL_CHECK(cl_elmsg_encode(&a, &body, &len) == COLLAB_ERR_ARG);
    a = m[1];
    a.s = 3; /* below the prefix */
    CL_CHECK(cl_elmsg_encode(&a, &body, &len) == COLLAB_ERR_ARG);
    a = m[1];
    a.w0_end = a.s - 1;
    CL_CHECK(cl_elmsg_encode(&a, &body, &len) == COLLAB_ERR_ARG);
    a = m[1];
    a.njoiners = 0;
    CL_CHECK(cl_elmsg_encode(&a, &body, &len) == COLLAB_ERR_ARG);
    cl_el_joiner_t dup[2] = {s_joiners[0], s_joiners[0]};
    dup[1].rank = 9;
    a = m[1];
    a.joiners = dup;
    a.njoiners = 2;
    CL_CHECK(cl_elmsg_encode(&a, &body, &len) == COLLAB_ERR_ARG);
    cl_el_joiner_t bad = s_joiners[0];
    bad.rank = -1;
    a.joiners = &bad;
    a.njoiners = 1;
    CL_CHECK(cl_elmsg_encode(&a, &body, &len) == COLLAB_ERR_ARG);
    bad.rank = 1;
    bad.flags = 0x80;
    CL_CHECK(cl_elmsg_encode(&a, &body, &len) == COLLAB_ERR_ARG);
    cl_elmsg_t f = m[4]; /* FETCH */
    f.len = 0;
    CL_CHECK(cl_elmsg_encode(&f, &body, &len) == COLLAB_ERR_ARG);
    f = m[4];
    f.offset = UINT64_MAX;
    CL_CHECK(cl_elmsg_encode(&f, &body, &len) == COLLAB_ERR_ARG);
    f = m[4];
    f.what = 2;
    CL_CHECK(cl_elmsg_encode(&f, &body, &len) == COLLAB_ERR_ARG);
    cl_elmsg_t h = m[3]; /* HASHES, unsorted */
    cl_el_buf_t rev[2] = {s_bufs[1], s_bufs[0]};
    h.bufs = rev;
    CL_CHECK(cl_elmsg_encode(&h, &body, &len) == COLLAB_ERR_ARG);
    cl_elmsg_t d = m[6]; /* DROP */
    uint64_t unsorted[2] = {5, 5};
    d.drops = unsorted;
    d.ndrops = 2;
    CL_CHECK(cl_elmsg_encode(&d, &body, &len) == COLLAB_ERR_ARG);
    cl_elmsg_t k = m[7]; /* NACK */
    k.reason = 9;
    CL_CHECK(cl_elmsg_encode(&k, &body, &len) == COLLAB_ERR_ARG);
    cl_elmsg_t u = {.type = 77};
    CL_CHECK(cl_elmsg_encode(&u, &body, &len) == COLLAB_ERR_ARG);
    cl_elmsg_t x;
    CL_CHECK(cl_elmsg_decode(77, (const uint8_t *)"", 0, &x) == COLLAB_ERR_ARG);
    CL_CHECK(cl_elmsg_decode(CL_EL_QUERY, NULL, 8, &x) == COLLAB_ERR_ARG);
    /* A forged count far beyond the body is refused before allocating. */
    uint8_t forged[8 + 4] = {0};
    forged[8] = 0xff;
    forged[9] = 0x0f;
    CL_CHECK(cl_elmsg_decode(CL_EL_DROP, forged, sizeof forged, &x) == COLLAB_ERR_ARG);
}

static void mutations(void)
{
    cl_elmsg_t m[16];
    int n = samples(m, 16);
    for (int i = 0; i < n; i++) {
        uint8_t *body;
        size_t len;
        CL_CHECK(cl_elmsg_encode(&m[i], &body, &len) == COLLAB_OK);
        uint8_t *mut = malloc(len);
        for (int round = 0; round < 20000; round++) {
            memcpy(mut, body, len);
            int flips = 1 + (int)(rnd() % 4);
            for (int f = 0; f < flips; f++)
                mut[rnd() % len] = (uint8_t)rnd();
            cl_elmsg_t x;
            if (cl_elmsg_decode(m[i].type, mut, len, &x) != COLLAB_OK)
                continue;
            /* Whatever decodes is valid: it encodes back byte for byte. */
            uint8_t *again;
            size_t alen;
            CL_CHECK(cl_elmsg_encode(&x, &again, &alen) == COLLAB_OK);
            CL_CHECK(alen == len && memcmp(again, mut, len) == 0);
            free(again);
            cl_elmsg_clear(&x);
        }
        free(mut);
        free(body);
    }
}

/* cl_elmsg_test --write-corpus DIR: writes every sample message as the
   fuzz target's input (the type byte, then the body) into DIR, the seed
   corpus of tests/fuzz/elmsg. */
static int write_corpus(const char *dir)
{
    cl_elmsg_t m[16];
    int n = samples(m, 16);
    for (int i = 0; i < n; i++) {
        uint8_t *body;
        size_t len;
        if (cl_elmsg_encode(&m[i], &body, &len) != COLLAB_OK)
            return 1;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s_%d", dir, cl_elmsg_name(m[i].type), i);
        FILE *f = fopen(path, "wb");
        uint8_t t = (uint8_t)m[i].type;
        if (f == NULL || fwrite(&t, 1, 1, f) != 1 || (len > 0 && fwrite(body, 1, len, f) != len)) {
            perror(path);
            return 1;
        }
        fclose(f);
        free(body);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--write-corpus") == 0)
        return write_corpus(argv[2]);
    round_trips();
    refusals();
    mutations();
    return cl_selftest_end("cl_elmsg");
}
