/*  el_fixture.h - what the selftests of the elastic components (sync,
    checkpoint, donor, audit) share: the log of messages a component sent
    through its fake context, and the swarm's honest state that the
    state-sync tests fetch (two buffers and one result, with the hashes
    of docs/wire.md computed by el_hash.h, not by the library).

    Header-only; every function is static, so a test uses what it needs.
*/
#ifndef EL_FIXTURE_H_INCLUDED
#define EL_FIXTURE_H_INCLUDED

#include "elastic/cl_startup.h"
#include "elastic/cl_statereg.h"
#include "elastic/cl_stream.h"
#include "engine/cl_elmsg.h"
#include "engine/cl_member.h"
#include "engine/cl_timer.h"
#include "mpi_collab.h"

#include "el_hash.h"
#include "selftest.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One message a component sent: to whom, and the message with none of
   its pointers kept (a test that needs the pointed-to data copies it). */
typedef struct {
    uint8_t to[32];
    cl_elmsg_t m;
} el_sent_t;

/* Appends (key, m) to log[*n] of cap entries; COLLAB_ERR_NO_MEM when the
   log is full, so a component that sends without end fails its test. */
static inline int el_sent_push(el_sent_t *log, int *n, int cap, const uint8_t key[32],
                               const cl_elmsg_t *m)
{
    if (*n >= cap)
        return COLLAB_ERR_NO_MEM;
    el_sent_t *x = &log[(*n)++];
    memcpy(x->to, key, 32);
    x->m = *m;
    x->m.drops = NULL;
    x->m.bufs = NULL;
    x->m.res = NULL;
    x->m.sigs = NULL;
    x->m.data = NULL;
    x->m.joiners = NULL;
    return COLLAB_OK;
}

/* The record of key among peers[0..n), or NULL. */
static inline cl_peer_t *el_peer_find(cl_peer_t *peers, int n, const uint8_t key[32])
{
    for (int i = 0; i < n; i++)
        if (memcmp(peers[i].key, key, 32) == 0)
            return &peers[i];
    return NULL;
}

/* The swarm's state, as every honest member holds it: buffer 0 (small),
   buffer 1 (large enough to be striped over three donors), result 2. */
#define EL_SMALL 100
#define EL_BIG ((size_t)3 << 20)
#define EL_RES 40
#define EL_SIG 0xabcdu /* result 2's signature */

typedef struct {
    uint8_t small[EL_SMALL], res[EL_RES];
    uint8_t *big;
    uint8_t small_hash[CL_ELMSG_HASH], big_hash[CL_ELMSG_HASH], res_hash[CL_ELMSG_HASH];
} el_state_t;

/* The one state of this test program. */
static inline el_state_t *el_state(void)
{
    static el_state_t st;
    return &st;
}

/* Fills the state and its hashes; false when memory ran out. */
static inline bool el_state_init(void)
{
    el_state_t *st = el_state();
    st->big = malloc(EL_BIG);
    if (st->big == NULL)
        return false;
    for (size_t i = 0; i < EL_SMALL; i++)
        st->small[i] = (uint8_t)(i * 7 + 1);
    for (size_t i = 0; i < EL_BIG; i++)
        st->big[i] = (uint8_t)(i * 13 + 5 + (i >> 16));
    for (size_t i = 0; i < EL_RES; i++)
        st->res[i] = (uint8_t)(200 - i);
    el_hash(st->small, EL_SMALL, st->small_hash);
    el_hash(st->big, EL_BIG, st->big_hash);
    el_hash(st->res, EL_RES, st->res_hash);
    return true;
}

static inline void el_state_free(void)
{
    free(el_state()->big);
    el_state()->big = NULL;
}

/* Item (what, index) of the state: its bytes, and its size in *size. */
static inline const uint8_t *el_state_bytes(int what, uint64_t index, uint64_t *size)
{
    el_state_t *st = el_state();
    if (what == CL_EL_ITEM_RESULT) {
        *size = EL_RES;
        return st->res;
    }
    *size = index == 0 ? EL_SMALL : EL_BIG;
    return index == 0 ? st->small : st->big;
}

/* The state's HASHES for collective s into *m, its lists in bufs and res
   (which must outlive m); with `liar`, buffer 0 declared with another
   hash. */
static inline void el_state_hashes(uint64_t s, bool liar, cl_el_buf_t bufs[2], cl_el_res_t res[1],
                                   cl_elmsg_t *m)
{
    const el_state_t *st = el_state();
    memset(bufs, 0, 2 * sizeof *bufs);
    memset(res, 0, sizeof *res);
    bufs[0].index = 0;
    bufs[0].size = EL_SMALL;
    memcpy(bufs[0].hash, st->small_hash, CL_ELMSG_HASH);
    if (liar)
        bufs[0].hash[0] ^= 0xff;
    bufs[1].index = 1;
    bufs[1].size = EL_BIG;
    memcpy(bufs[1].hash, st->big_hash, CL_ELMSG_HASH);
    res[0].index = 2;
    res[0].signature = EL_SIG;
    res[0].len = EL_RES;
    memcpy(res[0].hash, st->res_hash, CL_ELMSG_HASH);
    memset(m, 0, sizeof *m);
    m->type = CL_EL_HASHES;
    m->s = s;
    m->bufs = bufs;
    m->nbufs = 2;
    m->res = res;
    m->nres = 1;
}

/* A DATA message for collective s: len bytes at off of item (what,
   index). */
static inline void el_state_data(uint64_t s, int what, uint64_t index, uint64_t off, uint64_t len,
                                 const uint8_t *bytes, cl_elmsg_t *m)
{
    memset(m, 0, sizeof *m);
    m->type = CL_EL_DATA;
    m->s = s;
    m->what = (uint8_t)what;
    m->index = index;
    m->offset = off;
    m->len = len;
    m->data = bytes;
}

/* Answers every FETCH of sent[*from..nsent) (and those the answers
   cause, since deliver may append to sent) with DATA of the honest state
   for collective s, handed to deliver(arg, donor key, m); FETCHes to
   `silent` (NULL: none) go unanswered.  *from moves past them.  Returns
   the FETCHes answered; a FETCH of another collective or beyond its item
   fails the test. */
typedef void(el_deliver_fn)(void *arg, const uint8_t key[32], const cl_elmsg_t *m);

static inline int el_state_serve(const el_sent_t *sent, const int *nsent, int *from, uint64_t s,
                                 const uint8_t *silent, el_deliver_fn *deliver, void *arg)
{
    int answered = 0;
    for (; *from < *nsent; (*from)++) {
        const el_sent_t x = sent[*from];
        if (x.m.type != CL_EL_FETCH || (silent != NULL && memcmp(x.to, silent, 32) == 0))
            continue;
        uint64_t size;
        const uint8_t *b = el_state_bytes(x.m.what, x.m.index, &size);
        CHECK(x.m.s == s && x.m.offset + x.m.len <= size);
        if (x.m.offset > size || x.m.len > size - x.m.offset)
            continue;
        cl_elmsg_t m;
        el_state_data(s, x.m.what, x.m.index, x.m.offset, x.m.len, b + x.m.offset, &m);
        deliver(arg, x.to, &m);
        answered++;
    }
    return answered;
}

/* Member records of a group of three peers keys[0..2]: A founds, B is
   admitted and the group formed, then C is admitted.  Returns the record
   of keys[self] with that view applied at `now` (CHECKs on the way), or
   NULL. */
static inline cl_member_t *el_member_of_three(uint8_t keys[3][32], int self, double now)
{
    cl_settings_t set = {4, false, 0, 3, 0, 1, 16, false};
    cl_member_t *ct = cl_member_new(keys[0]);
    cl_member_delta_t d;
    CHECK(cl_member_found(ct, 0, "/ip4/127.0.0.1/tcp/1/p2p/a", false, 1.0, &set) == 0);
    CHECK(cl_member_admit(ct, keys[1], 1, "/ip4/127.0.0.1/tcp/2/p2p/b", false, 1.0, 0, &d) == 0);
    cl_member_delta_clear(&d);
    CHECK(cl_member_close_group(ct, &d) == 1);
    cl_member_delta_clear(&d);
    CHECK(cl_member_admit(ct, keys[2], 2, "/ip4/127.0.0.1/tcp/3/p2p/c", false, 1.0, 0, &d) == 0);
    cl_member_delta_clear(&d);
    cl_wire_view_t v;
    CHECK(cl_member_view(ct, &v) == 0);
    cl_member_t *mb = cl_member_new(keys[self]);
    CHECK(cl_member_apply_view(mb, &v, now, &d) == 1);
    cl_member_delta_clear(&d);
    free(v.members);
    cl_member_destroy(&ct);
    return mb;
}

/* The clock and the send of a selftest's fake context, for a fake_t with
   fields `now`, `sent` and `nsent` (a log of at most MAXSENT messages). */
#define EL_FAKE_NOW_AND_SEND(fake_t)                                                               \
    static double f_now(void *arg)                                                                 \
    {                                                                                              \
        return ((fake_t *)arg)->now;                                                               \
    }                                                                                              \
    static int f_send(void *arg, const uint8_t key[32], const cl_elmsg_t *m)                       \
    {                                                                                              \
        fake_t *f = arg;                                                                           \
        return el_sent_push(f->sent, &f->nsent, MAXSENT, key, m);                                  \
    }

/* The same for a typed context (docs/architecture.md, "Typed contexts"):
   fake_t is the test's struct cl_engine, so its functions take it as
   they are, without a conversion. */
#define EL_FAKE_ENGINE_NOW_AND_SEND(fake_t)                                                        \
    static double f_now(fake_t *f)                                                                 \
    {                                                                                              \
        return f->now;                                                                             \
    }                                                                                              \
    static int f_send(fake_t *f, const uint8_t key[32], const cl_elmsg_t *m)                       \
    {                                                                                              \
        return el_sent_push(f->sent, &f->nsent, MAXSENT, key, m);                                  \
    }

/* Frees what a selftest's fake engine holds for a component, after
   checking that the component's timer went with it. */
static inline void el_world_free(cl_timer_t **timers, cl_member_t **mb, cl_stream_t **stream,
                                 cl_startup_t **startup, cl_statereg_t **reg)
{
    CHECK(isinf(cl_timer_next(*timers))); /* its timer went with it */
    cl_timer_destroy(timers);
    cl_member_destroy(mb);
    cl_stream_destroy(stream);
    cl_startup_destroy(startup);
    cl_statereg_destroy(reg);
}

#endif
