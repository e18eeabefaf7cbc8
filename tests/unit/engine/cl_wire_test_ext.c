#define _GNU_SOURCE /* memmem */
/*  cl_wire_test_ext.c - selftest of the wire codec, part two (with
    cl_wire_test.c, one CTest): the messages and fields of later wire
    versions.

    P2P send modes and P2P_CTL (version 5), CREDIT (version 6), monitor
    entries in VIEW, the monitor flag of JOIN and REPORT (version 3), and
    RELAY (docs/wire.md §11): each round-trips, and the decoder rejects
    what breaks its rules.
*/
#include "cl_wire_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void test_p2p_modes(void)
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
void test_credit(void)
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
void test_bandwidth(void)
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
    m.hdr.version = 7; /* as cl_wire_msg_version writes it on links of 7 and later */
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
void test_monitors(void)
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
void test_relay(void)
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
