#define _GNU_SOURCE /* memmem */
/*  cl_wire_test.c - selftest of the wire codec.

    Round-trips every message type, then feeds the decoder every truncation
    of every encoded body, bad headers, out-of-range fields and a few
    hundred thousand deterministic random mutations, checking that each is
    rejected (or accepted and re-encodable) without a crash.
*/
#include "engine/cl_wire.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int s_failures = 0;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);              \
            s_failures++;                                                                          \
        }                                                                                          \
    } while (0)

static uint64_t s_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    s_rng ^= s_rng << 13;
    s_rng ^= s_rng >> 7;
    s_rng ^= s_rng << 17;
    return s_rng;
}

/* Encodes m fully; returns body (caller frees) and fills hdr bytes. */
static uint8_t *encode(cl_wire_msg_t *m, uint8_t hdr[CL_WIRE_HDR_SIZE], size_t *blen)
{
    uint8_t *body = NULL;
    int rc = cl_wire_encode_body(m, &body, blen);
    CHECK(rc == CL_WIRE_OK);
    m->hdr.length = *blen;
    cl_wire_hdr_encode(&m->hdr, hdr);
    return body;
}

static void base_hdr(cl_wire_msg_t *m, int type)
{
    memset(m, 0, sizeof *m);
    m->hdr.version = CL_WIRE_VERSION;
    m->hdr.type = (uint8_t)type;
    m->hdr.run = cl_wire_run_hash("default");
    m->hdr.epoch = 7;
}

/* Every strict prefix and one-byte extension of the body must fail. */
static void check_truncations(const uint8_t hdr[CL_WIRE_HDR_SIZE], const uint8_t *body,
                              size_t blen)
{
    uint8_t h2[CL_WIRE_HDR_SIZE];
    cl_wire_hdr_t h;
    CHECK(cl_wire_hdr_decode(hdr, CL_WIRE_HDR_SIZE, &h) == 0);
    for (size_t cut = 0; cut < blen; cut++) {
        h.length = cut;
        cl_wire_hdr_encode(&h, h2);
        cl_wire_msg_t m;
        int rc = cl_wire_decode(h2, sizeof h2, body, cut, &m);
        CHECK(rc == CL_WIRE_EBODY);
        cl_wire_msg_clear(&m);
    }
    uint8_t *longer = malloc(blen + 1);
    if (blen > 0)
        memcpy(longer, body, blen);
    longer[blen] = 0;
    h.length = blen + 1;
    cl_wire_hdr_encode(&h, h2);
    cl_wire_msg_t m;
    CHECK(cl_wire_decode(h2, sizeof h2, longer, blen + 1, &m) == CL_WIRE_EBODY);
    cl_wire_msg_clear(&m);
    free(longer);
}

static cl_wire_msg_t roundtrip(cl_wire_msg_t *in, uint8_t **body_keep, size_t *blen_keep)
{
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    size_t blen = 0;
    uint8_t *body = encode(in, hdr, &blen);
    cl_wire_msg_t out;
    int rc = cl_wire_decode(hdr, sizeof hdr, body, blen, &out);
    CHECK(rc == CL_WIRE_OK);
    CHECK(out.hdr.type == in->hdr.type && out.hdr.epoch == in->hdr.epoch);
    CHECK(out.hdr.run == in->hdr.run && out.hdr.length == blen);
    if (in->hdr.type != CL_MSG_COLL && in->hdr.type != CL_MSG_P2P &&
        in->hdr.type != CL_MSG_GOODBYE && in->hdr.type != CL_MSG_MATCH &&
        in->hdr.type != CL_MSG_RELAYED)
        check_truncations(hdr, body, blen);
    *body_keep = body;
    *blen_keep = blen;
    return out;
}

static void test_roundtrips(void)
{
    cl_wire_msg_t m, o;
    uint8_t *b;
    size_t bl;

    base_hdr(&m, CL_MSG_HELLO);
    m.u.hello.max_version = 1;
    m.u.hello.min_version = 1;
    memset(m.u.hello.key, 0xab, 32);
    memset(m.u.hello.nonce, 0x11, 32);
    m.u.hello.flags = CL_HELLO_CLIENT;
    strcpy(m.u.hello.address, "/ip4/127.0.0.1/tcp/4000/p2p/abc");
    o = roundtrip(&m, &b, &bl);
    CHECK(memcmp(o.u.hello.key, m.u.hello.key, 32) == 0);
    CHECK(o.u.hello.flags == CL_HELLO_CLIENT);
    CHECK(strcmp(o.u.hello.address, m.u.hello.address) == 0);
    cl_wire_msg_clear(&o);
    free(b);

    base_hdr(&m, CL_MSG_WELCOME);
    m.u.welcome.version = 1;
    memset(m.u.welcome.mac, 0x5a, 32);
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.welcome.version == 1 && o.u.welcome.mac[31] == 0x5a);
    free(b);

    base_hdr(&m, CL_MSG_REFUSE);
    m.u.refuse.reason = CL_REFUSE_VERSION;
    m.u.refuse.max_version = 3;
    m.u.refuse.min_version = 2;
    strcpy(m.u.refuse.text, "speaks 2..3");
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.refuse.max_version == 3 && strcmp(o.u.refuse.text, "speaks 2..3") == 0);
    free(b);

    base_hdr(&m, CL_MSG_AUTH);
    memset(m.u.auth.mac, 7, 32);
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.auth.mac[0] == 7);
    free(b);

    base_hdr(&m, CL_MSG_JOIN);
    m.u.join.rank = 3;
    m.u.join.weight = 2.5;
    m.u.join.flags = CL_JOIN_WORLD_SET | CL_JOIN_TARGET_GROUP_SET;
    m.u.join.settings.world_size = 4;
    m.u.join.settings.compression = 2;
    m.u.join.settings.target_group = 70000;
    m.u.join.settings.aggregation = 3;
    m.u.join.settings.max_weight_ratio = 8;
    m.u.join.incarnation = 0x1122334455667788ull;
    strcpy(m.u.join.address, "/ip4/1.2.3.4/tcp/5/p2p/x");
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.join.rank == 3 && o.u.join.weight == 2.5 && o.u.join.settings.world_size == 4);
    CHECK(o.u.join.settings.compression == 2 && strcmp(o.u.join.address, m.u.join.address) == 0);
    CHECK(o.u.join.settings.target_group == 70000 && o.u.join.settings.aggregation == 3);
    CHECK(o.u.join.settings.robust_min == 0 && o.u.join.settings.max_weight_ratio == 8);
    CHECK(o.u.join.flags == (CL_JOIN_WORLD_SET | CL_JOIN_TARGET_GROUP_SET));
    CHECK(o.u.join.incarnation == 0x1122334455667788ull);
    free(b);

    base_hdr(&m, CL_MSG_JOIN_REPLY);
    m.u.join_reply.status = CL_JOIN_REDIRECT;
    memset(m.u.join_reply.key, 9, 32);
    strcpy(m.u.join_reply.address, "/ip4/127.0.0.1/tcp/9/p2p/y");
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.join_reply.status == CL_JOIN_REDIRECT && o.u.join_reply.key[5] == 9);
    CHECK(o.u.join_reply.settings.world_size == 0 && o.u.join_reply.settings.target_group == 0);
    free(b);

    base_hdr(&m, CL_MSG_JOIN_REPLY);
    m.u.join_reply.status = CL_JOIN_CONFLICT;
    m.u.join_reply.settings.world_size = 6;
    m.u.join_reply.settings.compression = 1;
    m.u.join_reply.settings.target_group = 2;
    m.u.join_reply.settings.aggregation = 1;
    m.u.join_reply.settings.robust_min = 1;
    m.u.join_reply.settings.max_weight_ratio = 16;
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.join_reply.status == CL_JOIN_CONFLICT && o.u.join_reply.settings.world_size == 6);
    CHECK(o.u.join_reply.settings.compression == 1 && o.u.join_reply.settings.target_group == 2);
    CHECK(o.u.join_reply.settings.aggregation == 1 && o.u.join_reply.settings.robust_min == 1 &&
          o.u.join_reply.settings.max_weight_ratio == 16);
    free(b);

    cl_wire_member_t mem[3];
    const char *addrs[3] = {"/ip4/127.0.0.1/tcp/1/p2p/a", "", "/dns/h.example/tcp/3/p2p/c"};
    for (int i = 0; i < 3; i++) {
        memset(mem[i].key, i + 1, 32);
        mem[i].rank = i * 2;
        mem[i].flags = i == 1 ? CL_MEMBER_CLIENT : CL_MEMBER_IN_GROUP;
        mem[i].weight = 1.0 + i;
        mem[i].address = addrs[i];
    }
    base_hdr(&m, CL_MSG_VIEW);
    m.u.view.epoch = 12;
    m.u.view.group_epoch = 10;
    m.u.view.settings.world_size = 8;
    m.u.view.settings.strict = 1;
    m.u.view.settings.target_group = 3;
    m.u.view.settings.aggregation = 2;
    m.u.view.settings.robust_min = 4096;
    m.u.view.settings.max_weight_ratio = 16;
    m.u.view.flags = CL_VIEW_GROUP_CLOSED;
    m.u.view.count = 3;
    m.u.view.members = mem;
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.view.epoch == 12 && o.u.view.count == 3 && o.u.view.settings.strict == 1);
    CHECK(o.u.view.group_epoch == 10 && o.u.view.settings.target_group == 3);
    CHECK(o.u.view.settings.aggregation == 2 && o.u.view.settings.robust_min == 4096 &&
          o.u.view.settings.max_weight_ratio == 16);
    CHECK(o.u.view.flags == CL_VIEW_GROUP_CLOSED);
    for (int i = 0; i < 3 && o.u.view.members != NULL; i++) {
        CHECK(o.u.view.members[i].rank == i * 2);
        CHECK(o.u.view.members[i].weight == 1.0 + i);
        CHECK(strcmp(o.u.view.members[i].address, addrs[i]) == 0);
        CHECK(o.u.view.members[i].key[0] == i + 1);
    }
    cl_wire_msg_clear(&o);
    free(b);

    base_hdr(&m, CL_MSG_HEARTBEAT);
    m.u.heartbeat.epoch = 99;
    m.u.heartbeat.progress = 1ull << 40;
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.heartbeat.progress == 1ull << 40);
    free(b);

    base_hdr(&m, CL_MSG_SUSPECT);
    memset(m.u.suspect.key, 3, 32);
    m.u.suspect.reason = CL_SUSPECT_STRAGGLER;
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.suspect.reason == CL_SUSPECT_STRAGGLER);
    free(b);

    base_hdr(&m, CL_MSG_GOODBYE);
    o = roundtrip(&m, &b, &bl);
    CHECK(bl == 0 && o.u.goodbye.count == 0);
    free(b);

    /* GOODBYE naming the collectives entered per communicator. */
    cl_wire_bye_comm_t bye[CL_WIRE_GOODBYE_MAX + 1];
    for (int i = 0; i <= CL_WIRE_GOODBYE_MAX; i++)
        bye[i] = (cl_wire_bye_comm_t){(uint64_t)i + 1, 1000u + (uint64_t)i};
    base_hdr(&m, CL_MSG_GOODBYE);
    m.u.goodbye.count = 2;
    m.u.goodbye.comms = bye;
    o = roundtrip(&m, &b, &bl);
    CHECK(bl == 2 + 2 * 16 && o.u.goodbye.count == 2 && o.u.goodbye.comms != NULL);
    CHECK(o.u.goodbye.comms[1].comm == 2 && o.u.goodbye.comms[1].entered == 1001);
    cl_wire_msg_clear(&o);
    free(b);
    {
        uint8_t gh[CL_WIRE_HDR_SIZE], gh2[CL_WIRE_HDR_SIZE];
        size_t gl = 0;
        uint8_t *gb = encode(&m, gh, &gl);
        cl_wire_hdr_t h;
        CHECK(cl_wire_hdr_decode(gh, sizeof gh, &h) == 0);
        for (size_t cut = 1; cut <= gl; cut++) { /* a strict prefix, or one byte more */
            uint8_t longer[2 + 3 * 16] = {0};
            memcpy(longer, gb, cut < gl ? cut : gl);
            h.length = cut < gl ? cut : gl + 1;
            cl_wire_hdr_encode(&h, gh2);
            CHECK(cl_wire_decode(gh2, sizeof gh2, longer, h.length, &o) == CL_WIRE_EBODY);
            cl_wire_msg_clear(&o);
        }
        /* The same communicator twice. */
        bye[1].comm = bye[0].comm;
        uint8_t *dup = encode(&m, gh, &gl);
        CHECK(cl_wire_decode(gh, sizeof gh, dup, gl, &o) == CL_WIRE_EBODY);
        cl_wire_msg_clear(&o);
        bye[1].comm = 2;
        free(dup);
        free(gb);
    }
    m.u.goodbye.count = CL_WIRE_GOODBYE_MAX + 1; /* too many */
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    m.u.goodbye.count = CL_WIRE_GOODBYE_MAX;
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.goodbye.count == CL_WIRE_GOODBYE_MAX);
    cl_wire_msg_clear(&o);
    free(b);
    base_hdr(&m, CL_MSG_BYE_ACK);
    o = roundtrip(&m, &b, &bl);
    CHECK(bl == 0);
    free(b);

    base_hdr(&m, CL_MSG_UPDATE);
    m.u.update.weight = 0.25;
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.update.weight == 0.25);
    free(b);

    uint8_t payload[100];
    for (int i = 0; i < 100; i++)
        payload[i] = (uint8_t)i;
    base_hdr(&m, CL_MSG_COLL);
    m.hdr.comm = 1;
    m.hdr.seq = 77;
    m.hdr.signature = 0xdeadbeef;
    m.hdr.part = 2;
    m.hdr.chunk = 3;
    m.hdr.aux = 4;
    m.hdr.sub = 5;
    m.payload = payload;
    m.payload_len = sizeof payload;
    o = roundtrip(&m, &b, &bl);
    CHECK(o.hdr.seq == 77 && o.hdr.signature == 0xdeadbeef && o.hdr.sub == 5);
    CHECK(o.hdr.part == 2 && o.hdr.chunk == 3 && o.hdr.aux == 4);
    CHECK(o.payload_len == 100 && memcmp(o.payload, payload, 100) == 0);
    free(b);
}

static void test_bad_headers(void)
{
    cl_wire_msg_t m, o;
    uint8_t hdr[CL_WIRE_HDR_SIZE], h2[CL_WIRE_HDR_SIZE];
    base_hdr(&m, CL_MSG_GOODBYE);
    m.hdr.length = 0;
    cl_wire_hdr_encode(&m.hdr, hdr);
    CHECK(cl_wire_decode(hdr, sizeof hdr, NULL, 0, &o) == CL_WIRE_OK);
    CHECK(cl_wire_decode(hdr, sizeof hdr - 1, NULL, 0, &o) == CL_WIRE_ESIZE);
    CHECK(cl_wire_decode(NULL, 0, NULL, 0, &o) == CL_WIRE_ESIZE);
    memcpy(h2, hdr, sizeof h2);
    h2[0] = 'X';
    CHECK(cl_wire_decode(h2, sizeof h2, NULL, 0, &o) == CL_WIRE_EMAGIC);
    memcpy(h2, hdr, sizeof h2);
    h2[4] = CL_WIRE_VERSION + 1; /* a version this code does not read */
    CHECK(cl_wire_decode(h2, sizeof h2, NULL, 0, &o) == CL_WIRE_EVERSION);
    h2[4] = CL_WIRE_MIN_VERSION - 1; /* version 1: JOIN and VIEW had other layouts */
    CHECK(cl_wire_decode(h2, sizeof h2, NULL, 0, &o) == CL_WIRE_EVERSION);
    h2[4] = 0;
    CHECK(cl_wire_decode(h2, sizeof h2, NULL, 0, &o) == CL_WIRE_EVERSION);
    memcpy(h2, hdr, sizeof h2);
    h2[5] = 99;
    CHECK(cl_wire_decode(h2, sizeof h2, NULL, 0, &o) == CL_WIRE_ETYPE);
    memcpy(h2, hdr, sizeof h2);
    h2[7] = 1;
    CHECK(cl_wire_decode(h2, sizeof h2, NULL, 0, &o) == CL_WIRE_EFLAGS);
    uint8_t one = 0;
    CHECK(cl_wire_decode(hdr, sizeof hdr, &one, 1, &o) == CL_WIRE_ELENGTH);
    memcpy(h2, hdr, sizeof h2);
    h2[63] = 0x80; /* absurd length */
    CHECK(cl_wire_decode(h2, sizeof h2, NULL, 0, &o) == CL_WIRE_ELENGTH);

    /* A HELLO of a future version still decodes (frozen layout). */
    base_hdr(&m, CL_MSG_HELLO);
    m.hdr.version = 9;
    m.u.hello.max_version = 9;
    m.u.hello.min_version = 8;
    uint8_t *b;
    size_t bl;
    b = encode(&m, hdr, &bl);
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_OK);
    CHECK(o.hdr.version == 9 && o.u.hello.min_version == 8);
    free(b);
    /* So does one of version 1, so that such a peer can be refused. */
    m.hdr.version = 1;
    m.u.hello.max_version = 1;
    m.u.hello.min_version = 1;
    b = encode(&m, hdr, &bl);
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_OK);
    CHECK(o.hdr.version == 1 && o.u.hello.max_version == 1);
    free(b);
    base_hdr(&m, CL_MSG_REFUSE);
    m.hdr.version = 1;
    m.u.refuse.reason = CL_REFUSE_VERSION;
    m.u.refuse.max_version = 1;
    m.u.refuse.min_version = 1;
    b = encode(&m, hdr, &bl);
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_OK);
    free(b);

    /* P2P tag and source ranges. */
    base_hdr(&m, CL_MSG_P2P);
    m.hdr.aux = 0x80000000u;
    b = encode(&m, hdr, &bl);
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    free(b);
}

static void test_bad_bodies(void)
{
    cl_wire_msg_t m, o;
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    uint8_t *b = NULL;
    size_t bl;

    /* The encoder refuses out-of-range fields. */
    base_hdr(&m, CL_MSG_JOIN);
    m.u.join.weight = NAN;
    m.u.join.settings.world_size = 4;
    m.u.join.settings.target_group = 2;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY && b == NULL);
    m.u.join.weight = 1;
    m.u.join.settings.world_size = 0;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    m.u.join.settings.world_size = 4;
    m.u.join.settings.target_group = 0;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    m.u.join.settings.target_group = CL_WIRE_WORLD_MAX + 1;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    m.u.join.settings.target_group = CL_WIRE_WORLD_MAX;
    m.u.join.flags = 0x80; /* unknown flag bit */
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    m.u.join.flags = CL_JOIN_RANK_REQUIRED; /* a required rank must be named */
    m.u.join.rank = -1;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    m.u.join.rank = 0;
    base_hdr(&m, CL_MSG_JOIN_REPLY);
    m.u.join_reply.status = CL_JOIN_STANDBY;
    m.u.join_reply.settings.target_group = -1;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    m.u.join_reply.settings.target_group = CL_WIRE_WORLD_MAX + 1;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    base_hdr(&m, CL_MSG_VIEW);
    cl_wire_member_t one = {.weight = 1, .address = ""};
    m.u.view = (cl_wire_view_t){.epoch = 1, .group_epoch = 1, .settings.world_size = 1, .count = 1,
                                .members = &one};
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY); /* target group 0 */
    m.u.view.settings.target_group = CL_WIRE_WORLD_MAX + 1;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);

    /* The decoder refuses them too: JOIN target group at offset 4+8+1+4+1+1. */
    base_hdr(&m, CL_MSG_JOIN);
    m.u.join.rank = -1;
    m.u.join.weight = 1;
    m.u.join.flags = CL_JOIN_TARGET_GROUP_SET;
    m.u.join.settings.world_size = 4;
    m.u.join.settings.target_group = 2;
    b = encode(&m, hdr, &bl);
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_OK && o.u.join.settings.target_group == 2);
    size_t jt = 4 + 8 + 1 + 4 + 1 + 1;
    memset(b + jt, 0, 4); /* 0 */
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    b[jt + 2] = 0x10; /* 2^20 + 1 */
    b[jt] = 1;
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    b[jt] = 0; /* 2^20, the largest */
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_OK &&
          o.u.join.settings.target_group == CL_WIRE_WORLD_MAX);
    memset(b + jt, 0xff, 4); /* -1 */
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    memset(b + jt, 0, 4);
    b[jt] = 2;
    b[4 + 8] = 0x20; /* unknown flag bit */
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    free(b);
    /* JOIN_REPLY: 0 is allowed (no settings), beyond 2^20 is not. */
    base_hdr(&m, CL_MSG_JOIN_REPLY);
    m.u.join_reply.status = CL_JOIN_NOT_MEMBER;
    b = encode(&m, hdr, &bl);
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_OK);
    size_t rt = bl - 4; /* the last field */
    b[rt + 2] = 0x10;
    b[rt] = 1;
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    b[rt + 3] = 0x80; /* negative */
    b[rt + 2] = 0;
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    free(b);
    base_hdr(&m, CL_MSG_UPDATE);
    m.u.update.weight = -1;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    base_hdr(&m, CL_MSG_HELLO);
    m.u.hello.max_version = 1;
    m.u.hello.min_version = 1;
    memset(m.u.hello.address, 'a', CL_WIRE_STR_MAX);
    m.u.hello.address[CL_WIRE_STR_MAX] = '\0';
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_OK);
    free(b);

    /* Hand-made malformed bodies. */
    base_hdr(&m, CL_MSG_HELLO);
    uint8_t hb[2 + 2 + 32 + 32 + 1 + 2 + 3];
    memset(hb, 0, sizeof hb);
    hb[0] = 1;
    hb[2] = 1;
    hb[68] = 0;
    hb[69] = 3;
    hb[71] = 'a';
    hb[72] = 0; /* NUL inside the string */
    hb[73] = 'b';
    m.hdr.length = sizeof hb;
    cl_wire_hdr_encode(&m.hdr, hdr);
    CHECK(cl_wire_decode(hdr, sizeof hdr, hb, sizeof hb, &o) == CL_WIRE_EBODY);
    hb[72] = 'x';
    CHECK(cl_wire_decode(hdr, sizeof hdr, hb, sizeof hb, &o) == CL_WIRE_OK);
    hb[0] = 0; /* max 0 < min 1 */
    CHECK(cl_wire_decode(hdr, sizeof hdr, hb, sizeof hb, &o) == CL_WIRE_EBODY);
    hb[0] = 1;
    hb[68] = 2; /* unknown flag bit */
    CHECK(cl_wire_decode(hdr, sizeof hdr, hb, sizeof hb, &o) == CL_WIRE_EBODY);

    /* Views: unsorted ranks, duplicate keys, rank beyond world, count beyond body. */
    cl_wire_member_t mem[2];
    memset(mem, 0, sizeof mem);
    mem[0].key[0] = 1;
    mem[1].key[0] = 2;
    mem[0].rank = 0;
    mem[1].rank = 1;
    mem[0].weight = mem[1].weight = 1;
    mem[0].address = mem[1].address = "";
    base_hdr(&m, CL_MSG_VIEW);
    m.hdr.version = 5; /* the offsets below are those of the version 5 layout */
    m.u.view.epoch = 1;
    m.u.view.group_epoch = 1;
    m.u.view.settings.world_size = 2;
    m.u.view.settings.target_group = 64;
    m.u.view.count = 2;
    m.u.view.members = mem;
    b = encode(&m, hdr, &bl);
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_OK);
    cl_wire_msg_clear(&o);
    /* Target group (offset 22) out of range: 0, 2^20 + 1, negative. */
    size_t vt = 8 + 8 + 4 + 1 + 1;
    b[vt] = 0;
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    b[vt] = 1;
    b[vt + 2] = 0x10;
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    b[vt + 2] = 0;
    b[vt + 3] = 0x80;
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    b[vt + 3] = 0;
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_OK && o.u.view.settings.target_group == 1);
    cl_wire_msg_clear(&o);
    b[vt] = 64;
    /* Swap the rank fields in the bytes: entry 0 at offset 40, rank at +32. */
    size_t e0 = 8 + 8 + 4 + 1 + 1 + 4 + 9 + 2 + 4; /* after verify, flags, count */
    size_t esz = 32 + 4 + 1 + 8 + 2;
    b[e0 + 32] = 1;
    b[e0 + esz + 32] = 0;
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    b[e0 + 32] = 0;
    b[e0 + esz + 32] = 1;
    b[e0 + esz] = 1; /* duplicate key */
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    b[e0 + esz] = 2;
    b[e0 + esz + 32] = 2; /* rank 2 in a world of 2 */
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    b[e0 + esz + 32] = 1;
    b[16 + 4 + 1 + 1 + 4 + 9 + 2] = 0xff; /* count 255 */
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    b[16 + 4 + 1 + 1 + 4 + 9 + 2] = 2;
    /* Aggregation (offset 26) beyond centered_clip. */
    b[26] = 3;
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    b[26] = 2;
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_OK && o.u.view.settings.aggregation == 2);
    cl_wire_msg_clear(&o);
    b[26] = 0;
    /* COLLAB_VERIFY (offset 35) is 0 or 1. */
    b[35] = 2;
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    b[35] = 1;
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_OK && o.u.view.settings.verify == 1);
    cl_wire_msg_clear(&o);
    b[35] = 0;
    b[8] = 2; /* group epoch 2 > epoch 1 */
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    b[8] = 1;
    b[e0 + 32 + 4 + 1 + 7] = 0xff; /* weight -> NaN pattern (0xff in the top byte) */
    b[e0 + 32 + 4 + 1 + 6] = 0xff;
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    free(b);

    /* A large view with duplicate keys exercises the sorted check. */
    int n = 200;
    cl_wire_member_t *big = calloc((size_t)n, sizeof *big);
    for (int i = 0; i < n; i++) {
        big[i].key[0] = (uint8_t)i;
        big[i].key[1] = (uint8_t)(i >> 8);
        big[i].rank = i;
        big[i].weight = 1;
        big[i].address = "/ip4/127.0.0.1/tcp/1";
    }
    base_hdr(&m, CL_MSG_VIEW);
    m.u.view.epoch = 3;
    m.u.view.group_epoch = 2;
    m.u.view.settings.world_size = n;
    m.u.view.settings.target_group = 16;
    m.u.view.count = (uint32_t)n;
    m.u.view.members = big;
    b = encode(&m, hdr, &bl);
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_OK && o.u.view.count == 200);
    cl_wire_msg_clear(&o);
    free(b);
    big[150].key[0] = 3;
    big[150].key[1] = 0;
    b = encode(&m, hdr, &bl);
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    free(b);
    free(big);
}

/* Random mutation of valid messages: decode must not crash, and anything
   accepted must re-encode to the same bytes. */
static void test_mutations(void)
{
    cl_wire_member_t mem[2] = {{.rank = 0, .weight = 1, .address = "/ip4/127.0.0.1/tcp/2"},
                               {.rank = 1, .weight = 2, .address = ""}};
    mem[1].key[0] = 1;
    cl_wire_msg_t seeds[5];
    base_hdr(&seeds[0], CL_MSG_VIEW);
    seeds[0].u.view =
        (cl_wire_view_t){.epoch = 2, .group_epoch = 1, .settings.world_size = 4, .settings.target_group = 2,
                         .count = 2, .members = mem};
    base_hdr(&seeds[1], CL_MSG_HELLO);
    seeds[1].u.hello.max_version = seeds[1].u.hello.min_version = 1;
    strcpy(seeds[1].u.hello.address, "/ip4/127.0.0.1/tcp/1");
    base_hdr(&seeds[2], CL_MSG_JOIN);
    seeds[2].u.join = (cl_wire_join_t){.rank = -1, .weight = 1, .settings.world_size = 2, .settings.target_group = 3};
    base_hdr(&seeds[3], CL_MSG_JOIN_REPLY);
    seeds[3].u.join_reply.status = CL_JOIN_STANDBY;
    base_hdr(&seeds[4], CL_MSG_REFUSE);
    seeds[4].u.refuse = (cl_wire_refuse_t){.reason = 1, .max_version = 1, .min_version = 1};
    long accepted = 0;
    for (int s = 0; s < 5; s++) {
        uint8_t hdr[CL_WIRE_HDR_SIZE];
        size_t bl;
        uint8_t *b = encode(&seeds[s], hdr, &bl);
        for (int iter = 0; iter < 40000; iter++) {
            uint8_t h2[CL_WIRE_HDR_SIZE];
            uint8_t *b2 = malloc(bl + 8);
            memcpy(h2, hdr, sizeof h2);
            memcpy(b2, b, bl);
            size_t l2 = bl;
            int nmut = 1 + (int)(rnd() % 4);
            for (int k = 0; k < nmut; k++) {
                uint64_t r = rnd();
                if (r % 5 == 0)
                    h2[r / 5 % CL_WIRE_HDR_SIZE] ^= (uint8_t)(1u << (r >> 32) % 8);
                else if (l2 > 0)
                    b2[r / 5 % l2] = (uint8_t)(r >> 40);
                if (r % 13 == 0)
                    l2 = (size_t)(r >> 20) % (bl + 8);
            }
            cl_wire_msg_t o;
            int rc = cl_wire_decode(h2, sizeof h2, b2, l2, &o);
            if (rc == CL_WIRE_OK) {
                accepted++;
                uint8_t *re = NULL;
                size_t rl = 0;
                int erc = cl_wire_encode_body(&o, &re, &rl);
                CHECK(erc == CL_WIRE_OK);
                CHECK(rl == l2 && (rl == 0 || memcmp(re, b2, rl) == 0));
                free(re);
            }
            cl_wire_msg_clear(&o);
            free(b2);
        }
        free(b);
    }
    CHECK(accepted > 0);
}

/* P2P send modes and P2P_CTL (docs/wire.md section 8): the header fields
   that the codec checks for them. */
static int p2p_hdr(int type, int sub, uint64_t seq, size_t blen)
{
    cl_wire_msg_t m;
    base_hdr(&m, type);
    m.hdr.sub = (uint8_t)sub;
    m.hdr.seq = seq;
    m.hdr.comm = 1;
    uint8_t payload[4] = {1, 2, 3, 4};
    m.payload = blen > 0 ? payload : NULL;
    m.payload_len = blen;
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    uint8_t *body = NULL;
    size_t len = 0;
    int rc = cl_wire_encode_body(&m, &body, &len);
    if (rc != CL_WIRE_OK)
        return rc;
    m.hdr.length = len;
    cl_wire_hdr_encode(&m.hdr, hdr);
    cl_wire_msg_t out;
    rc = cl_wire_decode(hdr, sizeof hdr, body, len, &out);
    if (rc == CL_WIRE_OK)
        CHECK(out.hdr.sub == sub && out.hdr.seq == seq);
    cl_wire_msg_clear(&out);
    free(body);
    return rc;
}

static void test_p2p_modes(void)
{
    CHECK(p2p_hdr(CL_MSG_P2P, CL_P2P_STANDARD, 0, 4) == CL_WIRE_OK);
    CHECK(p2p_hdr(CL_MSG_P2P, CL_P2P_SYNC, 1, 4) == CL_WIRE_OK);
    CHECK(p2p_hdr(CL_MSG_P2P, CL_P2P_SYNC, UINT64_MAX, 0) == CL_WIRE_OK);
    CHECK(p2p_hdr(CL_MSG_P2P, CL_P2P_STANDARD, 5, 4) == CL_WIRE_EBODY); /* id without the mode */
    CHECK(p2p_hdr(CL_MSG_P2P, CL_P2P_SYNC, 0, 4) == CL_WIRE_EBODY);     /* mode without an id */
    CHECK(p2p_hdr(CL_MSG_P2P, 2, 1, 4) == CL_WIRE_EBODY);               /* unknown mode */
    for (int sub = CL_P2P_MATCHED; sub <= CL_P2P_CANCELLED; sub++) {
        CHECK(p2p_hdr(CL_MSG_P2P_CTL, sub, 9, 0) == CL_WIRE_OK);
        CHECK(p2p_hdr(CL_MSG_P2P_CTL, sub, 0, 0) == CL_WIRE_EBODY);
    }
    CHECK(p2p_hdr(CL_MSG_P2P_CTL, 0, 9, 0) == CL_WIRE_EBODY);
    CHECK(p2p_hdr(CL_MSG_P2P_CTL, 4, 9, 0) == CL_WIRE_EBODY);
    CHECK(strcmp(cl_wire_type_name(CL_MSG_P2P_CTL), "P2P_CTL") == 0);
    /* P2P_CTL has an empty body. */
    cl_wire_msg_t m, out;
    base_hdr(&m, CL_MSG_P2P_CTL);
    m.hdr.sub = CL_P2P_MATCHED;
    m.hdr.seq = 3;
    m.hdr.length = 4;
    uint8_t hdr[CL_WIRE_HDR_SIZE], body[4] = {0};
    cl_wire_hdr_encode(&m.hdr, hdr);
    CHECK(cl_wire_decode(hdr, sizeof hdr, body, sizeof body, &out) == CL_WIRE_EBODY);
    cl_wire_msg_clear(&out);
}

/* P2P_CTL CREDIT (version 6, docs/wire.md section 10): round trip, the
   header rules, truncations; the version a message is written with. */
static void test_credit(void)
{
    cl_wire_msg_t m, out;
    base_hdr(&m, CL_MSG_P2P_CTL);
    m.hdr.version = 6;
    m.hdr.sub = CL_P2P_CREDIT;
    m.u.credit.incarnation = 0x1122334455667788ull;
    for (int k = 0; k < CL_CREDIT_CLASSES; k++) {
        m.u.credit.cls[k].consumed_msgs = 10u + (unsigned)k;
        m.u.credit.cls[k].consumed_bytes = 1000u + (unsigned)k;
        m.u.credit.cls[k].limit_msgs = 74u + (unsigned)k;
        m.u.credit.cls[k].limit_bytes = UINT64_MAX - (unsigned)k;
    }
    CHECK(cl_wire_msg_version(&m.hdr, 6) == 6 && cl_wire_msg_version(&m.hdr, 7) == 6);
    uint8_t *body = NULL;
    size_t len = 0;
    CHECK(cl_wire_encode_body(&m, &body, &len) == CL_WIRE_OK && len == 72);
    m.hdr.length = len;
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    cl_wire_hdr_encode(&m.hdr, hdr);
    CHECK(cl_wire_decode(hdr, sizeof hdr, body, len, &out) == CL_WIRE_OK);
    CHECK(out.u.credit.incarnation == m.u.credit.incarnation);
    CHECK(memcmp(out.u.credit.cls, m.u.credit.cls, sizeof m.u.credit.cls) == 0);
    cl_wire_msg_clear(&out);
    check_truncations(hdr, body, len);
    /* Not in a version 5 header; names no send. */
    m.hdr.version = 5;
    cl_wire_hdr_encode(&m.hdr, hdr);
    CHECK(cl_wire_decode(hdr, sizeof hdr, body, len, &out) == CL_WIRE_EBODY);
    m.hdr.version = 6;
    m.hdr.seq = 1;
    cl_wire_hdr_encode(&m.hdr, hdr);
    CHECK(cl_wire_decode(hdr, sizeof hdr, body, len, &out) == CL_WIRE_EBODY);
    m.hdr.seq = 0;
    m.hdr.comm = 1;
    cl_wire_hdr_encode(&m.hdr, hdr);
    CHECK(cl_wire_decode(hdr, sizeof hdr, body, len, &out) == CL_WIRE_EBODY);
    m.hdr.comm = 0;
    free(body);
    /* Incarnation 0 is refused both ways. */
    m.u.credit.incarnation = 0;
    CHECK(cl_wire_encode_body(&m, &body, &len) == CL_WIRE_EBODY);
    uint8_t zero[72] = {0};
    m.hdr.length = sizeof zero;
    cl_wire_hdr_encode(&m.hdr, hdr);
    CHECK(cl_wire_decode(hdr, sizeof hdr, zero, sizeof zero, &out) == CL_WIRE_EBODY);
    /* Everything else is written as version 5, which a version 5 peer reads. */
    cl_wire_hdr_t h;
    memset(&h, 0, sizeof h);
    h.type = CL_MSG_P2P_CTL;
    h.sub = CL_P2P_MATCHED;
    CHECK(cl_wire_msg_version(&h, 6) == 5 && cl_wire_msg_version(&h, 7) == 5);
    /* JOIN and VIEW carry bandwidth figures from version 7 on: written
       with 7 only on links of 7 (0: not known yet, the oldest layout). */
    h.type = CL_MSG_VIEW;
    CHECK(cl_wire_msg_version(&h, 5) == 5 && cl_wire_msg_version(&h, 6) == 5);
    CHECK(cl_wire_msg_version(&h, 7) == 7 && cl_wire_msg_version(&h, 0) == 5);
    h.type = CL_MSG_JOIN;
    CHECK(cl_wire_msg_version(&h, 6) == 5 && cl_wire_msg_version(&h, 7) == 7);
}

/* Version 7: bandwidth figures in JOIN and in VIEW entries; the version 5
   layout has none (0), a monitor entry never has one, and a body of one
   layout under the other's header is malformed. */
static void test_bandwidth(void)
{
    cl_wire_msg_t m, o;
    uint8_t *b = NULL, *b5 = NULL;
    size_t bl = 0, bl5 = 0;
    cl_wire_member_t mem[3];
    const char *addrs[3] = {"/ip4/10.0.0.9/tcp/1", "/ip4/127.0.0.1/tcp/4000", ""};
    memset(mem, 0, sizeof mem);
    for (int i = 0; i < 3; i++) {
        mem[i].key[0] = (uint8_t)(i + 1);
        mem[i].rank = i == 0 ? -1 : i;
        mem[i].flags = i == 0 ? CL_MEMBER_MONITOR : CL_MEMBER_IN_GROUP;
        mem[i].weight = 1.0;
        mem[i].address = addrs[i];
    }
    mem[2].flags |= CL_MEMBER_CLIENT;
    mem[1].bandwidth = 100000;
    mem[2].bandwidth = UINT32_MAX;
    base_hdr(&m, CL_MSG_VIEW);
    m.u.view.epoch = 5;
    m.u.view.group_epoch = 5;
    m.u.view.settings.world_size = 4;
    m.u.view.settings.target_group = 4;
    m.u.view.settings.robust_min = 1;
    m.u.view.settings.max_weight_ratio = 1;
    m.u.view.count = 3;
    m.u.view.members = mem;
    CHECK(m.hdr.version == 7);
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.view.count == 3 && o.u.view.members != NULL);
    if (o.u.view.members != NULL)
        CHECK(o.u.view.members[0].bandwidth == 0 && o.u.view.members[1].bandwidth == 100000 &&
              o.u.view.members[2].bandwidth == UINT32_MAX);
    cl_wire_msg_clear(&o);
    /* The version 5 layout: 4 bytes less per entry, figures read as 0. */
    m.hdr.version = 5;
    o = roundtrip(&m, &b5, &bl5);
    CHECK(bl5 + 3 * 4 == bl);
    if (o.u.view.members != NULL)
        CHECK(o.u.view.members[1].bandwidth == 0 && o.u.view.members[2].bandwidth == 0);
    cl_wire_msg_clear(&o);
    /* Each body under the other version's header is malformed. */
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    m.hdr.length = bl;
    cl_wire_hdr_encode(&m.hdr, hdr); /* version 5, the longer body */
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    m.hdr.version = 7;
    m.hdr.length = bl5;
    cl_wire_hdr_encode(&m.hdr, hdr);
    CHECK(cl_wire_decode(hdr, sizeof hdr, b5, bl5, &o) == CL_WIRE_EBODY);
    free(b);
    free(b5);
    /* A monitor entry with a figure is refused both ways. */
    mem[0].bandwidth = 1;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    mem[0].bandwidth = 0;
    b = encode(&m, hdr, &bl);
    /* the monitor entry's figure: the 4 bytes after its address */
    const uint8_t *a = memmem(b, bl, addrs[0], strlen(addrs[0]));
    CHECK(a != NULL);
    if (a != NULL) {
        size_t fig = (size_t)(a - b) + strlen(addrs[0]);
        CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_OK);
        cl_wire_msg_clear(&o);
        b[fig] = 1;
        CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    }
    free(b);
    /* JOIN: the figure after the address, from version 7 on. */
    base_hdr(&m, CL_MSG_JOIN);
    m.u.join.rank = 3;
    m.u.join.weight = 2.0;
    m.u.join.incarnation = 9;
    m.u.join.settings.world_size = 4;
    m.u.join.settings.target_group = 2;
    snprintf(m.u.join.address, sizeof m.u.join.address, "%s", addrs[1]);
    m.u.join.bandwidth = 25000;
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.join.bandwidth == 25000 && o.u.join.rank == 3);
    cl_wire_msg_clear(&o);
    m.hdr.version = 5;
    o = roundtrip(&m, &b5, &bl5);
    CHECK(o.u.join.bandwidth == 0 && bl5 + 4 == bl);
    cl_wire_msg_clear(&o);
    free(b);
    free(b5);
}

/* Version 3: monitor entries in VIEW, the monitor flag of JOIN, REPORT. */
static void test_monitors(void)
{
    cl_wire_msg_t m, o;
    uint8_t *b = NULL;
    size_t bl;
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    cl_wire_member_t e[4];
    memset(e, 0, sizeof e);
    for (int i = 0; i < 4; i++) {
        e[i].key[0] = (uint8_t)(i + 1);
        e[i].weight = 1;
        e[i].address = "/ip4/127.0.0.1/tcp/1";
    }
    e[0].rank = e[1].rank = -1;
    e[0].flags = e[1].flags = CL_MEMBER_MONITOR;
    e[2].rank = 0;
    e[3].rank = 2;
    e[3].flags = CL_MEMBER_IN_GROUP;
    base_hdr(&m, CL_MSG_VIEW);
    m.u.view = (cl_wire_view_t){.epoch = 3, .group_epoch = 2, .settings.world_size = 4,
                                .settings.target_group = 4, .count = 4, .members = e};
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.view.count == 4 && o.u.view.members[0].rank == -1 &&
          o.u.view.members[1].flags == CL_MEMBER_MONITOR && o.u.view.members[3].rank == 2);
    cl_wire_msg_clear(&o);
    free(b);
    /* A view of one monitor alone (founded by collab-monitor). */
    m.u.view.count = 1;
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.view.count == 1 && o.u.view.members[0].flags == CL_MEMBER_MONITOR);
    cl_wire_msg_clear(&o);
    free(b);
    /* Refused: monitors out of key order, a monitor after a ranked entry,
       a monitor with a rank, with another flag, without an address. */
    m.u.view.count = 4;
    e[0].key[0] = 9;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    e[0].key[0] = 1;
    cl_wire_member_t swap = e[1];
    e[1] = e[2];
    e[2] = swap;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    swap = e[1];
    e[1] = e[2];
    e[2] = swap;
    e[1].rank = 1;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    e[1].rank = -1;
    e[1].flags = CL_MEMBER_MONITOR | CL_MEMBER_IN_GROUP;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    e[1].flags = CL_MEMBER_MONITOR;
    e[1].address = "";
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    e[1].address = e[0].address;
    /* The decoder refuses the same: encode a good view, then flip the
       first entry's rank (offset 8+8+4+1+1+4+9+1+4 + 32) to 0. */
    base_hdr(&m, CL_MSG_VIEW);
    m.u.view = (cl_wire_view_t){.epoch = 3, .group_epoch = 2, .settings.world_size = 4,
                                .settings.target_group = 4, .count = 4, .members = e};
    b = encode(&m, hdr, &bl);
    b[40 + 32] = 0;
    b[40 + 33] = 0;
    b[40 + 34] = 0;
    b[40 + 35] = 0;
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    cl_wire_msg_clear(&o);
    free(b);
    /* More than CL_WIRE_MONITORS_MAX monitors. */
    cl_wire_member_t many[CL_WIRE_MONITORS_MAX + 1];
    memset(many, 0, sizeof many);
    for (int i = 0; i <= CL_WIRE_MONITORS_MAX; i++) {
        many[i].key[0] = (uint8_t)(i + 1);
        many[i].rank = -1;
        many[i].flags = CL_MEMBER_MONITOR;
        many[i].weight = 1;
        many[i].address = "/ip4/127.0.0.1/tcp/1";
    }
    m.u.view.members = many;
    m.u.view.count = CL_WIRE_MONITORS_MAX;
    b = encode(&m, hdr, &bl);
    free(b);
    m.u.view.count = CL_WIRE_MONITORS_MAX + 1;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);

    /* JOIN with the monitor flag: rank -1, not a client, an address. */
    base_hdr(&m, CL_MSG_JOIN);
    m.u.join = (cl_wire_join_t){.rank = -1, .weight = 1, .flags = CL_JOIN_MONITOR,
                                .settings.world_size = 4, .settings.target_group = 4};
    snprintf(m.u.join.address, sizeof m.u.join.address, "/ip4/127.0.0.1/tcp/1");
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.join.flags == CL_JOIN_MONITOR);
    cl_wire_msg_clear(&o);
    free(b);
    m.u.join.rank = 0;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    m.u.join.rank = -1;
    m.u.join.flags |= CL_JOIN_CLIENT;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);

    /* REPORT. */
    base_hdr(&m, CL_MSG_REPORT);
    cl_wire_report_t *r = &m.u.report;
    r->rank = 3;
    r->flags = CL_REPORT_IN_GROUP;
    r->compression = 1;
    r->steps = 120;
    r->collectives = 240;
    r->weight = 32;
    r->bytes_sent = 1u << 30;
    r->bytes_recv = 12345;
    r->group_size = 4;
    r->coll_seconds = 1.5;
    r->wait_seconds = 0.25;
    r->failures = 1;
    r->joins = 2;
    r->nlinks = 2;
    r->links[0] = (cl_wire_link_t){0, 1e9};
    r->links[1] = (cl_wire_link_t){2, 0};
    r->nvalues = 2;
    snprintf(r->values[0].name, sizeof r->values[0].name, "loss");
    r->values[0].value = 2.5;
    snprintf(r->values[1].name, sizeof r->values[1].name, "lr.warmup_1");
    r->values[1].value = -1e-3;
    o = roundtrip(&m, &b, &bl);
    CHECK(bl < 400); /* a few hundred bytes */
    CHECK(memcmp(&o.u.report, r, sizeof *r) == 0);
    cl_wire_msg_clear(&o);
    /* Decoder: a NaN value (the last 8 bytes) is refused. */
    uint64_t nanbits = 0x7ff8000000000000ull;
    m.hdr.length = bl;
    cl_wire_hdr_encode(&m.hdr, hdr);
    for (int i = 0; i < 8; i++)
        b[bl - 8 + i] = (uint8_t)(nanbits >> (8 * i));
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    free(b);
    r->values[1].value = INFINITY;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    r->values[1].value = 1;
    snprintf(r->values[1].name, sizeof r->values[1].name, "bad name");
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    snprintf(r->values[1].name, sizeof r->values[1].name, "ok");
    r->coll_seconds = -1;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    r->coll_seconds = 0;
    r->rank = -1;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    r->rank = 0;
    r->nlinks = CL_WIRE_REPORT_LINKS + 1;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    CHECK(cl_wire_report_name_ok("loss") && !cl_wire_report_name_ok("") &&
          !cl_wire_report_name_ok("a/b") &&
          !cl_wire_report_name_ok("abcdefghijklmnopqrstuvwxyz0123456"));
}

/* RELAY (docs/wire.md §11), the relay flag of a monitor entry and of a
   monitor's JOIN, JOIN_REPLY NO_PATH. */
static void test_relay(void)
{
    cl_wire_msg_t m, o;
    uint8_t *b = NULL;
    size_t bl;
    uint8_t box[CL_WIRE_RELAY_MAC + CL_WIRE_HDR_SIZE + 5];
    for (size_t i = 0; i < sizeof box; i++)
        box[i] = (uint8_t)i;
    base_hdr(&m, CL_MSG_RELAYED);
    memset(m.u.relay.dst, 1, 32);
    memset(m.u.relay.src, 2, 32);
    m.u.relay.counter = 0x0102030405060708ull;
    m.payload = box;
    m.payload_len = sizeof box;
    o = roundtrip(&m, &b, &bl);
    CHECK(bl == CL_WIRE_RELAY_FIXED + sizeof box);
    CHECK(o.u.relay.counter == m.u.relay.counter && o.u.relay.dst[31] == 1 &&
          o.u.relay.src[0] == 2 && o.payload_len == sizeof box &&
          memcmp(o.payload, box, sizeof box) == 0);
    CHECK(strcmp(cl_wire_type_name(CL_MSG_RELAYED), "RELAY") == 0);
    /* Cut below a sealed header: refused. */
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    cl_wire_hdr_t h = o.hdr;
    for (size_t cut = 0; cut < CL_WIRE_RELAY_FIXED + CL_WIRE_RELAY_MAC + CL_WIRE_HDR_SIZE;
         cut++) {
        h.length = cut;
        cl_wire_hdr_encode(&h, hdr);
        cl_wire_msg_t x;
        CHECK(cl_wire_decode(hdr, sizeof hdr, b, cut, &x) == CL_WIRE_EBODY);
        cl_wire_msg_clear(&x);
    }
    cl_wire_msg_clear(&o);
    /* The same key at both ends: refused by both sides of the codec. */
    memcpy(b + 32, b, 32);
    h.length = bl;
    cl_wire_hdr_encode(&h, hdr);
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    cl_wire_msg_clear(&o);
    free(b);
    memcpy(m.u.relay.src, m.u.relay.dst, 32);
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    memset(m.u.relay.src, 2, 32);
    m.payload_len = CL_WIRE_RELAY_MAC + CL_WIRE_HDR_SIZE - 1;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    /* The relay flag: on a monitor entry only. */
    cl_wire_member_t e[2];
    memset(e, 0, sizeof e);
    e[0].key[0] = 1;
    e[0].rank = -1;
    e[0].flags = CL_MEMBER_MONITOR | CL_MEMBER_RELAY;
    e[0].weight = 1;
    e[0].address = "/ip4/127.0.0.1/tcp/1";
    e[1].key[0] = 2;
    e[1].flags = CL_MEMBER_CLIENT;
    e[1].weight = 1;
    e[1].address = "";
    base_hdr(&m, CL_MSG_VIEW);
    m.u.view = (cl_wire_view_t){.epoch = 3, .group_epoch = 2, .settings.world_size = 4,
                                .settings.target_group = 4, .count = 2, .members = e};
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.view.count == 2 && o.u.view.members[0].flags == (CL_MEMBER_MONITOR | CL_MEMBER_RELAY));
    cl_wire_msg_clear(&o);
    free(b);
    e[1].flags = CL_MEMBER_CLIENT | CL_MEMBER_RELAY;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    e[1].flags = CL_MEMBER_CLIENT;
    e[0].flags = CL_MEMBER_MONITOR | CL_MEMBER_RELAY | CL_MEMBER_CLIENT;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    /* JOIN: the relay bit only with the monitor bit. */
    base_hdr(&m, CL_MSG_JOIN);
    m.u.join = (cl_wire_join_t){.rank = -1, .weight = 1, .settings.world_size = 4, .settings.target_group = 4,
                                .flags = CL_JOIN_MONITOR | CL_JOIN_RELAY};
    snprintf(m.u.join.address, sizeof m.u.join.address, "/ip4/127.0.0.1/tcp/1");
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.join.flags == (CL_JOIN_MONITOR | CL_JOIN_RELAY));
    cl_wire_msg_clear(&o);
    free(b);
    m.u.join.flags = CL_JOIN_RELAY;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    /* JOIN_REPLY NO_PATH. */
    base_hdr(&m, CL_MSG_JOIN_REPLY);
    m.u.join_reply.status = CL_JOIN_NO_PATH;
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.join_reply.status == CL_JOIN_NO_PATH);
    cl_wire_msg_clear(&o);
    free(b);
    m.u.join_reply.status = CL_JOIN_NO_PATH + 1;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
}

int main(void)
{
    test_relay();
    test_monitors();
    test_roundtrips();
    test_p2p_modes();
    test_credit();
    test_bandwidth();
    test_bad_headers();
    test_bad_bodies();
    test_mutations();
    CHECK(cl_wire_run_hash("a") != cl_wire_run_hash("b"));
    CHECK(cl_wire_run_hash("default") == cl_wire_run_hash("default"));
    if (s_failures > 0) {
        fprintf(stderr, "cl_wire_test: %d failures\n", s_failures);
        return 1;
    }
    printf("cl_wire_test: ok\n");
    return 0;
}
