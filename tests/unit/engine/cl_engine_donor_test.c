/*  cl_engine_donor_test.c - selftest of the donor component
    (cl_engine_donor.c).

    Drives the donor through a fake context, without sockets or a clock:
    a real state registry over buffers of the test and a real start-up
    record, a fake engine that says how far its program is (its rule for
    "may this peer serve s" is eng_el_can_serve's), and a record of every
    elastic message the donor sends.  Checks a copy taken when the program
    posts the admission's sequence and served from there, after the
    program went on and changed its buffers, as HASHES then DATA to the
    expected joiner; a QUERY that waits for the program to reach s; a
    FETCH for a sequence this peer went past without a copy refused
    (NACK MOVED) and a key no copy is expected for not named by
    eng_donor_expects (the engine's gate); a range past the end of a
    buffer refused (NACK UNKNOWN); and the timer, registered in a real
    cl_timer set, dropping a copy nobody fetched and then staying
    disarmed.
*/
#include "engine/cl_engine_donor.h"

#include "engine/cl_engine_timer.h"
#include "mpi_collab.h"

#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_hash.h"
#include "selftest.h"

#define MAXSENT 64
#define BIG ((size_t)300 * 1024) /* more than one DATA piece */

typedef struct {
    uint8_t to[32];
    cl_elmsg_t m;  /* copied: bufs, res and data are the test's */
    uint8_t *data; /* DATA: its bytes */
} sent_t;

/* The fake engine: the context's argument, struct cl_engine, which the
   component sees only as an incomplete type (docs/architecture.md,
   "Typed contexts"). */
typedef struct cl_engine {
    cl_config_t cfg;
    double now;
    uint64_t next_seq; /* the program posted every collective below it */
    uint64_t done_seq; /* and completed every one below this one */
    el_donor_t *d;
    cl_timer_t *timers; /* the loop's set, run by the test as the loop would */
    sent_t sent[MAXSENT];
    int nsent;
} fake_t;

static double f_now(fake_t *f)
{
    return f->now;
}

static int f_send(fake_t *f, const uint8_t key[32], const cl_elmsg_t *m)
{
    if (f->nsent == MAXSENT)
        return COLLAB_ERR_NO_MEM;
    sent_t *x = &f->sent[f->nsent++];
    memcpy(x->to, key, 32);
    x->m = *m;
    x->m.bufs = NULL;
    x->m.res = NULL;
    x->m.data = NULL;
    x->data = NULL;
    if (m->nbufs > 0) {
        x->m.bufs = malloc(m->nbufs * sizeof *m->bufs);
        memcpy(x->m.bufs, m->bufs, m->nbufs * sizeof *m->bufs);
    }
    if (m->nres > 0) {
        x->m.res = malloc(m->nres * sizeof *m->res);
        memcpy(x->m.res, m->res, m->nres * sizeof *m->res);
    }
    if (m->type == CL_EL_DATA && m->len > 0) {
        x->data = malloc(m->len);
        memcpy(x->data, m->data, m->len);
    }
    return COLLAB_OK;
}

/* eng_el_can_serve's rule, over the fake program's position. */
static int f_can_serve(fake_t *f, uint64_t s)
{
    int snap = eng_donor_snapshot(f->d, s);
    if (snap > 0)
        return 1;
    if (f->done_seq > s)
        return -1;
    if (snap == 0)
        return 0;
    return f->next_seq > s ? 1 : 0;
}

static void forget_sent(fake_t *f)
{
    for (int i = 0; i < f->nsent; i++) {
        free(f->sent[i].m.bufs);
        free(f->sent[i].m.res);
        free(f->sent[i].data);
    }
    f->nsent = 0;
}

static cl_elmsg_t fetch(uint64_t s, int what, uint64_t index, uint64_t off, uint64_t len)
{
    cl_elmsg_t m;
    memset(&m, 0, sizeof m);
    m.type = CL_EL_FETCH;
    m.s = s;
    m.what = (uint8_t)what;
    m.index = index;
    m.offset = off;
    m.len = len;
    return m;
}

/* The bytes of item (what, index) sent to key from the DATA recorded
   since `from`, assembled into out (len bytes); the number of pieces. */
static int gather(const fake_t *f, int from, const uint8_t key[32], int what, uint64_t index,
                  uint8_t *out, size_t len)
{
    int pieces = 0;
    for (int i = from; i < f->nsent; i++) {
        const cl_elmsg_t *m = &f->sent[i].m;
        if (m->type != CL_EL_DATA || m->what != what || m->index != index ||
            memcmp(f->sent[i].to, key, 32) != 0 || m->offset + m->len > len)
            continue;
        memcpy(out + m->offset, f->sent[i].data, m->len);
        pieces++;
    }
    return pieces;
}

int main(void)
{
    if (sodium_init() < 0)
        return 1;
    static uint8_t small[100], big[BIG], result[40];
    for (size_t i = 0; i < sizeof small; i++)
        small[i] = (uint8_t)(i * 7 + 1);
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 13 + 5);
    for (size_t i = 0; i < sizeof result; i++)
        result[i] = (uint8_t)(200 - i);
    uint8_t small_hash[CL_ELMSG_HASH], big_hash[CL_ELMSG_HASH], res_hash[CL_ELMSG_HASH];
    el_hash(small, sizeof small, small_hash);
    el_hash(big, sizeof big, big_hash);
    el_hash(result, sizeof result, res_hash);
    static uint8_t small0[sizeof small], big0[BIG];
    memcpy(small0, small, sizeof small);
    memcpy(big0, big, sizeof big);

    static fake_t f;
    f.cfg.timeout = 5.0;
    f.now = 100.0;
    f.next_seq = 5;
    f.done_seq = 4;
    cl_statereg_t *reg = cl_statereg_new();
    cl_startup_t *st = cl_startup_new(0);
    CHECK(reg != NULL && st != NULL);
    CHECK(cl_statereg_add(reg, 0, small, sizeof small) == COLLAB_OK);
    CHECK(cl_statereg_add(reg, 1, big, sizeof big) == COLLAB_OK);
    CHECK(cl_startup_put(st, 2, 0xabcd, result, sizeof result) == COLLAB_OK);
    eng_donor_ctx_t ctx = {.arg = &f,
                           .reg = reg,
                           .startup = st,
                           .cfg = &f.cfg,
                           .timers = f.timers = cl_timer_new(2),
                           .now = f_now,
                           .send = f_send,
                           .can_serve = f_can_serve};
    CHECK(f.timers != NULL);
    f.d = eng_donor_new(&ctx);
    CHECK(f.d != NULL);

    cl_el_joiner_t j;
    memset(&j, 0, sizeof j);
    memset(j.key, 0x4a, 32);
    uint8_t stranger[32];
    memset(stranger, 0x53, 32);

    /* The admission at s = 10, served from a copy. */
    eng_donor_expect(f.d, 10, &j, 1);
    CHECK(eng_donor_snapshot(f.d, 10) == 0);
    CHECK(eng_donor_expects(f.d, 10, j.key));
    CHECK(eng_donor_expects(f.d, UINT64_MAX, j.key));
    CHECK(!eng_donor_expects(f.d, UINT64_MAX, stranger));
    CHECK(!eng_donor_expects(f.d, 11, j.key));

    /* A QUERY before the program reaches s waits. */
    cl_elmsg_t q;
    memset(&q, 0, sizeof q);
    q.type = CL_EL_QUERY;
    q.s = 10;
    eng_donor_on_message(f.d, j.key, &q);
    eng_donor_progress(f.d);
    CHECK(f.nsent == 0);

    /* The program posts 10: the copy is taken, the query answered. */
    f.next_seq = 11;
    eng_donor_on_post(f.d, 10);
    CHECK(eng_donor_snapshot(f.d, 10) == 1);
    eng_donor_progress(f.d);
    CHECK(f.nsent == 1);
    if (f.nsent == 1) {
        const cl_elmsg_t *h = &f.sent[0].m;
        CHECK(h->type == CL_EL_HASHES && h->s == 10);
        CHECK(memcmp(f.sent[0].to, j.key, 32) == 0);
        CHECK(h->nbufs == 2 && h->nres == 1);
        if (h->nbufs == 2) {
            CHECK(h->bufs[0].index == 0 && h->bufs[0].size == sizeof small);
            CHECK(memcmp(h->bufs[0].hash, small_hash, CL_ELMSG_HASH) == 0);
            CHECK(h->bufs[1].index == 1 && h->bufs[1].size == BIG);
            CHECK(memcmp(h->bufs[1].hash, big_hash, CL_ELMSG_HASH) == 0);
        }
        if (h->nres == 1) {
            CHECK(h->res[0].index == 2 && h->res[0].signature == 0xabcd);
            CHECK(h->res[0].len == sizeof result);
            CHECK(memcmp(h->res[0].hash, res_hash, CL_ELMSG_HASH) == 0);
        }
    }
    forget_sent(&f);

    /* The program goes on past 10 and changes its buffers: the joiner
       still gets them as they were at 10. */
    f.next_seq = 20;
    f.done_seq = 19;
    memset(small, 0xee, sizeof small);
    memset(big, 0xdd, sizeof big);
    cl_elmsg_t m = fetch(10, CL_EL_ITEM_BUFFER, 0, 0, sizeof small);
    eng_donor_on_message(f.d, j.key, &m);
    static uint8_t got[BIG];
    memset(got, 0, sizeof got);
    CHECK(gather(&f, 0, j.key, CL_EL_ITEM_BUFFER, 0, got, sizeof small) == 1);
    CHECK(memcmp(got, small0, sizeof small) == 0);

    /* A range past the end of a buffer is refused. */
    int before = f.nsent;
    m = fetch(10, CL_EL_ITEM_BUFFER, 0, 50, 100);
    eng_donor_on_message(f.d, j.key, &m);
    CHECK(f.nsent == before + 1);
    if (f.nsent == before + 1) {
        const cl_elmsg_t *n = &f.sent[before].m;
        CHECK(n->type == CL_EL_NACK && n->reason == CL_EL_NACK_UNKNOWN && n->s == 10);
        CHECK(n->index == 0 && n->offset == 50 && n->len == 100);
    }
    /* So is a result range past its end. */
    before = f.nsent;
    m = fetch(10, CL_EL_ITEM_RESULT, 2, 0, sizeof result + 1);
    eng_donor_on_message(f.d, j.key, &m);
    CHECK(f.nsent == before + 1 && f.sent[before].m.type == CL_EL_NACK &&
          f.sent[before].m.reason == CL_EL_NACK_UNKNOWN);

    /* The big buffer comes in two pieces, as it was at 10; the result too. */
    before = f.nsent;
    m = fetch(10, CL_EL_ITEM_BUFFER, 1, 0, BIG);
    eng_donor_on_message(f.d, j.key, &m);
    memset(got, 0, sizeof got);
    CHECK(gather(&f, before, j.key, CL_EL_ITEM_BUFFER, 1, got, BIG) == 2);
    CHECK(memcmp(got, big0, BIG) == 0);
    before = f.nsent;
    m = fetch(10, CL_EL_ITEM_RESULT, 2, 0, sizeof result);
    eng_donor_on_message(f.d, j.key, &m);
    memset(got, 0, sizeof got);
    CHECK(gather(&f, before, j.key, CL_EL_ITEM_RESULT, 2, got, sizeof result) == 1);
    CHECK(memcmp(got, result, sizeof result) == 0);
    /* The joiner has it all: the copied contents are freed, the entry
       stays (a second fetch of a buffer is refused, results still go). */
    CHECK(eng_donor_snapshot(f.d, 10) == 1);
    before = f.nsent;
    m = fetch(10, CL_EL_ITEM_BUFFER, 0, 0, 10);
    eng_donor_on_message(f.d, j.key, &m);
    CHECK(f.nsent == before + 1 && f.sent[before].m.type == CL_EL_NACK);
    forget_sent(&f);

    /* A FETCH for a sequence this peer went past without a copy: NACK
       MOVED, whoever asks. */
    m = fetch(15, CL_EL_ITEM_BUFFER, 0, 0, 10);
    eng_donor_on_message(f.d, stranger, &m);
    CHECK(f.nsent == 1);
    if (f.nsent == 1) {
        CHECK(memcmp(f.sent[0].to, stranger, 32) == 0);
        CHECK(f.sent[0].m.type == CL_EL_NACK && f.sent[0].m.reason == CL_EL_NACK_MOVED);
        CHECK(f.sent[0].m.s == 15 && f.sent[0].m.offset == 0 && f.sent[0].m.len == 10);
    }
    forget_sent(&f);

    /* The timer: a copy nobody fetched is dropped when its time is up,
       max(60 s, 12 x COLLAB_TIMEOUT) after it was expected. */
    double keep = eng_donor_keep_limit(f.cfg.timeout);
    cl_el_joiner_t j2 = j;
    memset(j2.key, 0x4b, 32);
    eng_donor_expect(f.d, 30, &j2, 1);
    double t30 = f.now;
    f.next_seq = 31;
    eng_donor_on_post(f.d, 30);
    CHECK(eng_donor_snapshot(f.d, 30) == 1);
    f.now = t30 + keep - 1.0;
    (void)cl_timer_run(f.timers, f.now);
    double next = cl_timer_next(f.timers);
    CHECK(next <= t30 + keep && next > f.now);
    CHECK(eng_donor_snapshot(f.d, 30) == 1);
    f.now = t30 + keep;
    (void)cl_timer_run(f.timers, f.now);
    CHECK(eng_donor_snapshot(f.d, 30) == -1);
    CHECK(eng_donor_snapshot(f.d, 10) == -1); /* expected at t = 100 too */
    CHECK(!eng_donor_expects(f.d, UINT64_MAX, j2.key));
    /* Nothing left: the timer is not armed again. */
    CHECK(isinf(cl_timer_next(f.timers)));
    CHECK(f.nsent == 0);

    /* FETCH is bounded per joiner and admission (docs/security-bounds.md §5):
       served live at s = 40, a joiner gets COLLAB_FETCH_LIMIT times the
       state (the registry and the results), then NACK; another joiner,
       or the same one at another admission, has its own budget. */
    f.cfg.fetch_limit = 4;
    f.next_seq = 41;
    f.done_seq = 40;
    uint8_t k3[32], k4[32];
    memset(k3, 0x4c, 32);
    memset(k4, 0x4d, 32);
    uint64_t state = sizeof small + BIG + sizeof result;
    uint64_t asked = 0;
    int served = 0;
    for (int r = 0; r < 6; r++) {
        forget_sent(&f);
        m = fetch(40, CL_EL_ITEM_BUFFER, 1, 0, BIG);
        eng_donor_on_message(f.d, k3, &m);
        bool ok = f.nsent == 2 && f.sent[0].m.type == CL_EL_DATA;
        CHECK(ok == (asked + BIG <= 4 * state));
        if (!ok)
            CHECK(f.nsent == 1 && f.sent[0].m.type == CL_EL_NACK &&
                  f.sent[0].m.reason == CL_EL_NACK_UNKNOWN);
        asked += ok ? BIG : 0;
        served += ok;
    }
    CHECK(served == 4);
    forget_sent(&f);
    m = fetch(40, CL_EL_ITEM_BUFFER, 1, 0, BIG);
    eng_donor_on_message(f.d, k4, &m);
    CHECK(f.nsent == 2 && f.sent[0].m.type == CL_EL_DATA);
    forget_sent(&f);
    /* One FETCH larger than the bound is refused at once. */
    m = fetch(40, CL_EL_ITEM_BUFFER, 1, 0, 5 * state);
    eng_donor_on_message(f.d, k4, &m);
    CHECK(f.nsent == 1 && f.sent[0].m.type == CL_EL_NACK);
    forget_sent(&f);

    eng_donor_destroy(&f.d);
    CHECK(f.d == NULL);
    eng_donor_destroy(&f.d);
    cl_timer_destroy(&f.timers);
    cl_statereg_destroy(&reg);
    cl_startup_destroy(&st);
    printf("cl_engine_donor_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
