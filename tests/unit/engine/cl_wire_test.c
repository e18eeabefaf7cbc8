#define _GNU_SOURCE /* memmem */
/*  cl_wire_test.c - selftest of the wire codec.

    Round-trips every message type, then feeds the decoder every truncation
    of every encoded body, bad headers, out-of-range fields and a few
    hundred thousand deterministic random mutations, checking that each is
    rejected (or accepted and re-encodable) without a crash.  The
    messages of later wire versions are tested in cl_wire_test_ext.c.
*/
#include "cl_wire_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int s_failures = 0;

static uint64_t s_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    s_rng ^= s_rng << 13;
    s_rng ^= s_rng >> 7;
    s_rng ^= s_rng << 17;
    return s_rng;
}

/* Encodes m fully; returns body (caller frees) and fills hdr bytes. */
uint8_t *encode(cl_wire_msg_t *m, uint8_t hdr[CL_WIRE_HDR_SIZE], size_t *blen)
{
    uint8_t *body = NULL;
    int rc = cl_wire_encode_body(m, &body, blen);
    CHECK(rc == CL_WIRE_OK);
    m->hdr.length = *blen;
    cl_wire_hdr_encode(&m->hdr, hdr);
    return body;
}

void base_hdr(cl_wire_msg_t *m, int type)
{
    memset(m, 0, sizeof *m);
    m->hdr.version = CL_WIRE_VERSION;
    m->hdr.type = (uint8_t)type;
    m->hdr.run = cl_wire_run_hash("default");
    m->hdr.epoch = 7;
}

/* Every strict prefix and one-byte extension of the body must fail. */
void check_truncations(const uint8_t hdr[CL_WIRE_HDR_SIZE], const uint8_t *body, size_t blen)
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

cl_wire_msg_t roundtrip(cl_wire_msg_t *in, uint8_t **body_keep, size_t *blen_keep)
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

    /* compression 3 (adaptive, version 8) reads back; 4 is refused */
    m.u.join_reply.settings.compression = 3;
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.join_reply.settings.compression == 3);
    free(b);
    m.u.join_reply.settings.compression = 4;
    b = NULL;
    CHECK(cl_wire_encode_body(&m, &b, &bl) != CL_WIRE_OK);
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
    CHECK(o.u.update.weight == 0.25 && o.u.update.bandwidth == 0);
    CHECK(bl == 12);
    free(b);
    /* Version 11: a measured figure with the weight unchanged (0). */
    base_hdr(&m, CL_MSG_UPDATE);
    m.u.update.bandwidth = 93500;
    o = roundtrip(&m, &b, &bl);
    CHECK(o.u.update.weight == 0 && o.u.update.bandwidth == 93500);
    free(b);
    /* Version 10: the weight alone, 8 bytes; neither a figure nor a
       weight of 0 can be said. */
    base_hdr(&m, CL_MSG_UPDATE);
    m.hdr.version = 10;
    m.u.update.weight = 2;
    o = roundtrip(&m, &b, &bl);
    CHECK(bl == 8 && o.u.update.weight == 2 && o.u.update.bandwidth == 0);
    free(b);
    m.u.update.bandwidth = 1;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);
    m.u.update.bandwidth = 0;
    m.u.update.weight = 0;
    CHECK(cl_wire_encode_body(&m, &b, &bl) == CL_WIRE_EBODY);

    /* FENCE (version 12): a count in seq, an empty body. */
    base_hdr(&m, CL_MSG_FENCE);
    m.hdr.epoch = 0;
    m.hdr.seq = 123456789;
    o = roundtrip(&m, &b, &bl);
    CHECK(bl == 0 && o.hdr.type == CL_MSG_FENCE && o.hdr.seq == 123456789);
    CHECK(cl_wire_msg_version(&m.hdr, 12) == CL_WIRE_STRIPE_VERSION);
    CHECK(strcmp(cl_wire_type_name(CL_MSG_FENCE), "FENCE") == 0);
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
    /* FENCE: only at version 12 and later, a count above 0, no other
       field, no body. */
    {
        base_hdr(&m, CL_MSG_FENCE);
        m.hdr.epoch = 0;
        m.hdr.seq = 3;
        cl_wire_hdr_encode(&m.hdr, hdr);
        CHECK(cl_wire_decode(hdr, sizeof hdr, NULL, 0, &o) == CL_WIRE_OK);
        const struct {
            int at;
            uint8_t v;
        } bad[] = {{4, 11}, {6, 1},  {16, 1}, {24, 1}, {32, 0},
                   {40, 1}, {44, 1}, {48, 1}, {52, 1}, {56, 1}};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            memcpy(h2, hdr, sizeof h2);
            h2[bad[i].at] = bad[i].v;
            uint8_t one = 0;
            CHECK(cl_wire_decode(h2, sizeof h2, bad[i].at == 56 ? &one : NULL, bad[i].at == 56,
                                 &o) == CL_WIRE_EBODY);
        }
    }
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
    /* A version 11 UPDATE: a weight that is neither 0 nor valid, and a
       body one byte short or long (the figure is a u32), are refused. */
    base_hdr(&m, CL_MSG_UPDATE);
    m.u.update.weight = 1;
    m.u.update.bandwidth = 5;
    b = encode(&m, hdr, &bl);
    CHECK(bl == 12 && cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_OK);
    double nan_w = NAN;
    memcpy(b, &nan_w, 8);
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    double neg_w = -0.5;
    memcpy(b, &neg_w, 8);
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl, &o) == CL_WIRE_EBODY);
    CHECK(cl_wire_decode(hdr, sizeof hdr, b, bl - 1, &o) != CL_WIRE_OK);
    free(b);
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
    hb[68] = CL_HELLO_STRIPE; /* a known flag bit */
    CHECK(cl_wire_decode(hdr, sizeof hdr, hb, sizeof hb, &o) == CL_WIRE_OK);
    hb[68] = 4; /* unknown flag bit */
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
