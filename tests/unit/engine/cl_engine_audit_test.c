/*  cl_engine_audit_test.c - selftest of the periodic state check
    (cl_engine_audit.c).

    Drives the audit through a fake context, without sockets or a clock:
    this peer (A) and two members (B, C) whose records the test owns, a
    real state registry over two buffers of the test, and a record of
    every elastic message sent and of every member the audit asks the
    engine to take out of the group.  Checks that a check starts only
    every 64 steps and not while the group runs in several groups, that
    matching hashes pass (nothing dropped, nobody taken out), that a
    member whose hash differs from the majority is taken out (take_out,
    as the coordinator does today), that a buffer with no majority is
    dropped everywhere (DROP to the others, dropped here; a tie is no
    majority), and that a
    NACK, a member gone or the deadline abandon the check (its timer runs
    in a real cl_timer set: at the deadline, and at once after a view
    change, when a member may have left the group).
*/
#include "engine/cl_engine_audit.h"

#include "engine/cl_engine_timer.h"
#include "mpi_collab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_fixture.h"
#include "selftest.h"

#define NPEERS 3
#define MAXSENT 16

typedef struct {
    uint8_t to[32];
    cl_elmsg_t m; /* header fields */
    uint64_t drops[4];
} sent_t;

/* The fake engine: the context's argument, struct cl_engine, which the
   component sees only as an incomplete type (docs/architecture.md,
   "Typed contexts"). */
typedef struct cl_engine {
    cl_config_t cfg;
    double now;
    bool multigroup;
    cl_peer_t peers[NPEERS]; /* [0] is this peer */
    cl_peer_t *list[NPEERS];
    sent_t sent[MAXSENT];
    int nsent;
    uint8_t out[NPEERS][32]; /* taken out, last call */
    size_t nout;
    int take_outs;      /* calls */
    cl_timer_t *timers; /* the loop's set, run by the test as the loop would */
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
    x->m.drops = NULL;
    for (uint32_t i = 0; i < m->ndrops && i < 4; i++)
        x->drops[i] = m->drops[i];
    return COLLAB_OK;
}

static bool f_multigroup(fake_t *f)
{
    return f->multigroup;
}

static cl_peer_t *const *f_members(fake_t *f, size_t *n)
{
    *n = NPEERS;
    return f->list;
}

static cl_peer_t *f_find(fake_t *f, const uint8_t key[32])
{
    return el_peer_find(f->peers, NPEERS, key);
}

static void f_take_out(fake_t *f, const uint8_t (*keys)[32], size_t n)
{
    f->take_outs++;
    f->nout = n < NPEERS ? n : NPEERS;
    memcpy(f->out, keys, f->nout * 32);
}

/* The HASHES member i sends: bufs as given. */
static cl_elmsg_t hashes(uint64_t s, cl_el_buf_t *bufs, uint32_t n)
{
    cl_elmsg_t m;
    memset(&m, 0, sizeof m);
    m.type = CL_EL_HASHES;
    m.s = s;
    m.bufs = bufs;
    m.nbufs = n;
    return m;
}

/* This peer's (index, size, hash) of its two buffers, as now. */
static void own(cl_statereg_t *reg, cl_el_buf_t b[2])
{
    memset(b, 0, 2 * sizeof *b);
    for (uint64_t i = 0; i < 2; i++) {
        cl_statereg_entry_t ent;
        CHECK(cl_statereg_find(reg, i, &ent) == COLLAB_OK);
        b[i].index = i;
        b[i].size = ent.bytes;
        CHECK(cl_statereg_hash(reg, i, b[i].hash) == COLLAB_OK);
    }
}

static void reset(fake_t *f)
{
    f->nsent = 0;
    f->nout = 0;
    f->take_outs = 0;
}

int main(void)
{
    static fake_t f;
    f.cfg.timeout = 2.0;
    f.now = 50.0;
    for (int i = 0; i < NPEERS; i++) {
        memset(f.peers[i].key, 0x41 + i, 32);
        f.peers[i].rank = i;
        f.peers[i].in_group = true;
        f.peers[i].state = CL_PEER_ALIVE;
        f.list[i] = &f.peers[i];
    }
    static uint8_t params[256], scratch[64];
    for (size_t i = 0; i < sizeof params; i++)
        params[i] = (uint8_t)i;
    cl_statereg_t *reg = cl_statereg_new();
    CHECK(reg != NULL);
    CHECK(cl_statereg_add(reg, 0, params, sizeof params) == COLLAB_OK);
    CHECK(cl_statereg_add(reg, 1, scratch, sizeof scratch) == COLLAB_OK);
    eng_audit_ctx_t ctx = {.arg = &f,
                           .reg = reg,
                           .cfg = &f.cfg,
                           .self_key = f.peers[0].key,
                           .timers = f.timers = cl_timer_new(2),
                           .now = f_now,
                           .send = f_send,
                           .multigroup = f_multigroup,
                           .members = f_members,
                           .find = f_find,
                           .take_out = f_take_out};
    CHECK(f.timers != NULL);
    el_audit_t *a = eng_audit_new(&ctx);
    CHECK(a != NULL);
    cl_el_buf_t mine[2], theirs[2];
    own(reg, mine);

    /* Only every 64 steps, and not in several groups. */
    eng_audit_maybe_start(a, 630, 63);
    CHECK(!eng_audit_running(a) && f.nsent == 0);
    f.multigroup = true;
    eng_audit_maybe_start(a, 640, 64);
    CHECK(!eng_audit_running(a) && f.nsent == 0);
    f.multigroup = false;

    /* Matching hashes pass. */
    eng_audit_maybe_start(a, 640, 64);
    CHECK(eng_audit_running(a));
    CHECK(f.nsent == 2);
    for (int i = 0; i < f.nsent; i++) {
        CHECK(f.sent[i].m.type == CL_EL_QUERY && f.sent[i].m.s == 640);
        CHECK(memcmp(f.sent[i].to, f.peers[0].key, 32) != 0);
    }
    CHECK(cl_timer_next(f.timers) == f.now + eng_exchange_limit(f.cfg.timeout));
    reset(&f);
    cl_elmsg_t m = hashes(640, mine, 2);
    eng_audit_on_message(a, f.peers[1].key, &m);
    CHECK(eng_audit_running(a));
    eng_audit_on_message(a, f.peers[2].key, &m);
    CHECK(!eng_audit_running(a));
    CHECK(f.nsent == 0 && f.take_outs == 0);
    CHECK(cl_statereg_count(reg) == 2);

    /* C's parameters differ from the majority's: it is taken out. */
    eng_audit_maybe_start(a, 1280, 128);
    CHECK(eng_audit_running(a));
    reset(&f);
    memcpy(theirs, mine, sizeof theirs);
    theirs[0].hash[5] ^= 1;
    m = hashes(1280, mine, 2);
    eng_audit_on_message(a, f.peers[1].key, &m);
    m = hashes(1280, theirs, 2);
    eng_audit_on_message(a, f.peers[2].key, &m);
    CHECK(!eng_audit_running(a));
    CHECK(f.take_outs == 1 && f.nout == 1);
    CHECK(f.nout == 1 && memcmp(f.out[0], f.peers[2].key, 32) == 0);
    CHECK(f.nsent == 0 && cl_statereg_count(reg) == 2);

    /* A size that differs counts as a different state too. */
    eng_audit_maybe_start(a, 1920, 192);
    reset(&f);
    memcpy(theirs, mine, sizeof theirs);
    theirs[0].size++;
    m = hashes(1920, theirs, 2);
    eng_audit_on_message(a, f.peers[1].key, &m);
    m = hashes(1920, mine, 2);
    eng_audit_on_message(a, f.peers[2].key, &m);
    CHECK(f.take_outs == 1 && f.nout == 1 && memcmp(f.out[0], f.peers[1].key, 32) == 0);

    /* No majority for buffer 1 (each holds another value): it is not
       shared state, every member drops it. */
    eng_audit_maybe_start(a, 2560, 256);
    reset(&f);
    cl_el_buf_t b1[2], c1[2];
    memcpy(b1, mine, sizeof b1);
    memcpy(c1, mine, sizeof c1);
    b1[1].hash[0] ^= 1;
    c1[1].hash[0] ^= 2;
    m = hashes(2560, b1, 2);
    eng_audit_on_message(a, f.peers[1].key, &m);
    m = hashes(2560, c1, 2);
    eng_audit_on_message(a, f.peers[2].key, &m);
    CHECK(!eng_audit_running(a));
    CHECK(f.take_outs == 0);
    CHECK(f.nsent == 2);
    for (int i = 0; i < f.nsent; i++) {
        CHECK(f.sent[i].m.type == CL_EL_DROP && f.sent[i].m.s == 2560);
        CHECK(f.sent[i].m.ndrops == 1 && f.sent[i].drops[0] == 1);
    }
    CHECK(cl_statereg_count(reg) == 1);
    cl_statereg_entry_t ent;
    CHECK(cl_statereg_find(reg, 1, &ent) != COLLAB_OK);

    /* A NACK abandons the check (that member went past s). */
    eng_audit_maybe_start(a, 3200, 320);
    CHECK(eng_audit_running(a));
    cl_elmsg_t nack;
    memset(&nack, 0, sizeof nack);
    nack.type = CL_EL_NACK;
    nack.s = 3200;
    nack.reason = CL_EL_NACK_MOVED;
    eng_audit_on_message(a, f.peers[1].key, &nack);
    CHECK(!eng_audit_running(a));

    /* Answers for another sequence are ignored; the deadline abandons. */
    reset(&f);
    eng_audit_maybe_start(a, 3840, 384);
    CHECK(eng_audit_running(a));
    m = hashes(3839, mine, 1);
    eng_audit_on_message(a, f.peers[1].key, &m);
    eng_audit_on_message(a, f.peers[2].key, &m);
    CHECK(eng_audit_running(a));
    double deadline = f.now + eng_exchange_limit(f.cfg.timeout);
    CHECK(cl_timer_next(f.timers) == deadline);
    CHECK(cl_timer_run(f.timers, deadline - 0.5) == 0);
    CHECK(eng_audit_running(a));
    CHECK(cl_timer_run(f.timers, deadline) == 1);
    CHECK(!eng_audit_running(a));
    CHECK(isinf(cl_timer_next(f.timers)));

    /* A member that leaves the group abandons it at the next turn after
       the view (and only after a view: the timer waits for the deadline
       otherwise). */
    eng_audit_maybe_start(a, 4480, 448);
    CHECK(eng_audit_running(a));
    f.peers[2].in_group = false;
    (void)cl_timer_run(f.timers, f.now);
    CHECK(eng_audit_running(a));
    eng_audit_view_changed(a);
    CHECK(cl_timer_next(f.timers) == f.now);
    (void)cl_timer_run(f.timers, f.now);
    CHECK(!eng_audit_running(a));

    /* Step 512 ran on the same-host fast path, unseen: not before the
       window of 512 .. 575, then the first boundary seen in it checks. */
    eng_audit_maybe_start(a, 5000, 500);
    CHECK(!eng_audit_running(a));
    /* A tie is no majority: C does not report buffer 0, B's differs from
       this peer's; the buffer is dropped, nobody is taken out. */
    f.peers[2].in_group = true;
    eng_audit_maybe_start(a, 5130, 513);
    CHECK(eng_audit_running(a));
    reset(&f);
    memcpy(theirs, mine, sizeof theirs);
    theirs[0].hash[9] ^= 4;
    m = hashes(5130, theirs, 1);
    eng_audit_on_message(a, f.peers[1].key, &m);
    m = hashes(5130, NULL, 0);
    eng_audit_on_message(a, f.peers[2].key, &m);
    CHECK(!eng_audit_running(a));
    CHECK(f.take_outs == 0);
    CHECK(f.nsent == 2 && f.sent[0].m.type == CL_EL_DROP && f.sent[0].drops[0] == 0);
    CHECK(cl_statereg_count(reg) == 0);

    eng_audit_destroy(&a);
    CHECK(a == NULL);
    eng_audit_destroy(&a);
    cl_timer_destroy(&f.timers);
    cl_statereg_destroy(&reg);
    printf("cl_engine_audit_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
