/*  cl_held_test.c - selftest of cl_held: the three bounds (messages in
    all, per sender, bytes with each record's cost) and the refusals they
    count, copies that outlive the sender's buffer, replays that hand on,
    keep in place or drop, one sender's order kept across replays and
    across messages held during a replay, and the byte count back to zero
    once everything is gone. */
#include "engine/cl_held.h"
#include "util/cl_selftest.h"

#include <stdlib.h>
#include <string.h>

static void key_of(int who, uint8_t key[32])
{
    memset(key, 0, 32);
    key[0] = (uint8_t)who;
}

/* A COLL message from `who` whose payload is `len` bytes of (who, n). */
static cl_wire_msg_t msg_of(int who, int n, uint8_t *buf, size_t len)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(i % 2 == 0 ? who : n);
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_COLL;
    m.hdr.seq = (uint64_t)n;
    m.payload = buf;
    m.payload_len = len;
    return m;
}

static cl_held_put_t put(cl_held_t *h, int who, int n, size_t len, double t)
{
    uint8_t key[32], *buf = malloc(len > 0 ? len : 1);
    key_of(who, key);
    cl_wire_msg_t m = msg_of(who, n, buf, len);
    cl_held_put_t r = cl_held_put(h, key, &m, t);
    memset(buf, 0xee, len); /* the queue kept its own copy */
    free(buf);
    return r;
}

/* What a replay saw, and what it decides. */
typedef struct {
    int seen_who[64], seen_n[64], nseen;
    int keep_who;       /* keep this sender's messages (-1: none) */
    double drop_before; /* drop those that arrived before (and are not kept) */
    cl_held_t *h;       /* hold a message from sender 9 during the replay */
    bool bad_payload;
} visit_t;

static bool visit(void *arg, const uint8_t key[32], const cl_wire_msg_t *m, double arrived)
{
    visit_t *v = arg;
    int who = key[0], n = (int)m->hdr.seq;
    for (size_t i = 0; i < m->payload_len; i++)
        if (m->payload[i] != (uint8_t)(i % 2 == 0 ? who : n))
            v->bad_payload = true;
    if (v->nseen < 64) {
        v->seen_who[v->nseen] = who;
        v->seen_n[v->nseen++] = n;
    }
    if (v->h != NULL) {
        CL_CHECK(put(v->h, 9, 100 + v->nseen, 4, arrived) == CL_HELD_KEPT);
    }
    return who == v->keep_who && arrived >= v->drop_before;
}

static void check_bounds(void)
{
    cl_held_limits_t lim = {.max_msgs = 5, .max_per_peer = 3, .max_bytes = 1 << 20};
    cl_held_t *h = cl_held_new(&lim);
    CL_CHECK(h != NULL);
    for (int i = 0; i < 3; i++)
        CL_CHECK(put(h, 1, i, 10, 0.0) == CL_HELD_KEPT);
    CL_CHECK(put(h, 1, 3, 10, 0.0) == CL_HELD_FULL_MSGS); /* per sender */
    CL_CHECK(put(h, 2, 0, 0, 0.0) == CL_HELD_KEPT);       /* empty */
    CL_CHECK(put(h, 3, 0, 10, 0.0) == CL_HELD_KEPT);
    CL_CHECK(put(h, 4, 0, 10, 0.0) == CL_HELD_FULL_MSGS); /* in all */
    CL_CHECK(cl_held_count(h) == 5);
    uint8_t k1[32], k4[32];
    key_of(1, k1);
    key_of(4, k4);
    CL_CHECK(cl_held_count_from(h, k1) == 3);
    CL_CHECK(cl_held_from(h, k1) && !cl_held_from(h, k4));
    CL_CHECK(cl_held_refused(h) == 2);
    CL_CHECK(cl_held_bytes(h) == 4 * cl_held_cost(10) + cl_held_cost(0));
    CL_CHECK(cl_held_cost(0) > 0); /* an empty message is not free */
    cl_held_destroy(&h);
    CL_CHECK(h == NULL);
    cl_held_destroy(&h); /* twice is harmless */

    /* Bytes: records count. */
    lim = (cl_held_limits_t){.max_msgs = 100,
                             .max_per_peer = 100,
                             .max_bytes = 2 * cl_held_cost(1000) + cl_held_cost(0) - 1};
    h = cl_held_new(&lim);
    CL_CHECK(put(h, 1, 0, 1000, 0.0) == CL_HELD_KEPT);
    CL_CHECK(put(h, 2, 0, 1000, 0.0) == CL_HELD_KEPT);
    CL_CHECK(put(h, 3, 0, 0, 0.0) == CL_HELD_FULL_BYTES); /* one byte short */
    CL_CHECK(cl_held_refused(h) == 1);
    /* A payload whose record would wrap size_t is refused, not kept. */
    uint8_t key[32], one = 0;
    key_of(5, key);
    cl_wire_msg_t huge = msg_of(5, 0, &one, 0);
    huge.payload_len = SIZE_MAX - 8;
    CL_CHECK(cl_held_put(h, key, &huge, 0.0) == CL_HELD_FULL_BYTES);
    cl_held_destroy(&h);
}

static void check_replay(void)
{
    cl_held_limits_t lim = {.max_msgs = 100, .max_per_peer = 100, .max_bytes = 1 << 20};
    cl_held_t *h = cl_held_new(&lim);
    /* Interleaved senders 1 and 2, 1's older ones at t = 1, the rest at 5. */
    CL_CHECK(put(h, 1, 0, 7, 1.0) == CL_HELD_KEPT);
    CL_CHECK(put(h, 2, 0, 7, 5.0) == CL_HELD_KEPT);
    CL_CHECK(put(h, 1, 1, 7, 1.0) == CL_HELD_KEPT);
    CL_CHECK(put(h, 2, 1, 7, 5.0) == CL_HELD_KEPT);
    CL_CHECK(put(h, 1, 2, 7, 5.0) == CL_HELD_KEPT);
    /* Sender 1 is not a member yet: kept; sender 2 handed on. */
    visit_t v = {.keep_who = 1, .drop_before = 0.0};
    cl_held_replay(h, visit, &v);
    CL_CHECK(v.nseen == 5 && !v.bad_payload);
    int want_who[5] = {1, 2, 1, 2, 1}, want_n[5] = {0, 0, 1, 1, 2};
    for (int i = 0; i < 5 && i < v.nseen; i++)
        CL_CHECK(v.seen_who[i] == want_who[i] && v.seen_n[i] == want_n[i]);
    CL_CHECK(cl_held_count(h) == 3);
    CL_CHECK(cl_held_bytes(h) == 3 * cl_held_cost(7));

    /* Messages held during a replay go behind the kept ones, and are not
       offered in it; sender 1's older ones are dropped (aged). */
    v = (visit_t){.keep_who = 1, .drop_before = 2.0, .h = h};
    cl_held_replay(h, visit, &v);
    CL_CHECK(v.nseen == 3);
    CL_CHECK(cl_held_count(h) == 1 + 3); /* 1's newest, then three from 9 */
    v = (visit_t){.keep_who = 9, .drop_before = 0.0};
    cl_held_replay(h, visit, &v);
    CL_CHECK(v.nseen == 4);
    CL_CHECK(v.seen_who[0] == 1 && v.seen_n[0] == 2);
    for (int i = 1; i < 4 && i < v.nseen; i++)
        CL_CHECK(v.seen_who[i] == 9 && v.seen_n[i] == 100 + i);
    CL_CHECK(cl_held_count(h) == 3);

    /* Everything handed on: empty, no bytes, and the queue takes more. */
    v = (visit_t){.keep_who = -1};
    cl_held_replay(h, visit, &v);
    CL_CHECK(cl_held_count(h) == 0 && cl_held_bytes(h) == 0);
    CL_CHECK(put(h, 4, 0, 3, 0.0) == CL_HELD_KEPT);
    v = (visit_t){.keep_who = -1};
    cl_held_replay(h, visit, &v);
    CL_CHECK(v.nseen == 1 && v.seen_who[0] == 4 && !v.bad_payload);
    cl_held_replay(h, visit, &v); /* an empty queue */
    CL_CHECK(v.nseen == 1);
    cl_held_destroy(&h);
}

int main(void)
{
    check_bounds();
    check_replay();
    return cl_selftest_end("cl_held");
}
