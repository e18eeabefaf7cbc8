/*  cl_engine_sync_test.c - selftest of the joiner's state sync
    (cl_engine_sync.c).

    Drives the sync through a fake context, without sockets or a clock: a
    membership of the test's own peer records, a fake clock, and a record
    of every elastic message the sync sends; the test plays the donors,
    answering QUERY with HASHES and FETCH with DATA from its own copies of
    their state.  Checks (a) a QUERY to every donor, HASHES from a
    majority agreeing, the agreed items FETCHed in stripes and the DATA
    completing them (the bytes served are those the donors declared, the
    hash checked: bytes that do not match are fetched once more from
    another donor); (b) a donor declaring another hash outvoted (never
    asked for that item) and named in the log; (c) a donor silent past
    the stall asked once more, then its stripes asked of another donor;
    (d) a donor leaving the view, its stripes asked of another donor; (e)
    DATA at an offset nobody asked for ignored; (f) donors answering NACK
    MOVED (past s without this peer) leave the sync unserved while they
    live, NACK UNKNOWN does not.
*/
#include "engine/cl_engine_sync.h"

#include "engine/cl_engine_timer.h"
#include "mpi_collab.h"
#include "util/cl_log.h"

#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "el_fixture.h"
#include "selftest.h"

#define MAXSENT 256
#define NPEERS 4 /* this peer and three donors */

/* The fake engine: the context's argument, struct cl_engine, which the
   sync sees only as an incomplete type. */
typedef struct cl_engine {
    cl_config_t cfg;
    double now;
    cl_peer_t peers[NPEERS]; /* [0] is this peer */
    cl_peer_t *list[NPEERS];
    el_sent_t sent[MAXSENT];
    int nsent;
    int finished;
    cl_timer_t *timers; /* the loop's set, run by the test as the loop would */
} fake_t;

static double f_now(fake_t *f)
{
    return f->now;
}

static int f_send(fake_t *f, const uint8_t key[32], const cl_elmsg_t *m)
{
    return el_sent_push(f->sent, &f->nsent, MAXSENT, key, m);
}

static int f_rank(fake_t *f)
{
    return f->peers[0].rank;
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

static bool f_split(fake_t *f, const cl_el_joiner_t *js, uint32_t nj, int *members,
                    int *target_group)
{
    (void)f;
    (void)js;
    (void)nj;
    *members = NPEERS;
    *target_group = 0;
    return false;
}

static void f_finished(fake_t *f)
{
    f->finished++;
}

static void reset(fake_t *f)
{
    cl_timer_t *timers = f->timers; /* kept from a reset before */
    memset(f, 0, sizeof *f);
    f->timers = timers != NULL ? timers : cl_timer_new(8);
    CHECK(f->timers != NULL);
    f->cfg.timeout = 5.0;
    f->now = 100.0;
    for (int i = 0; i < NPEERS; i++) {
        cl_peer_t *p = &f->peers[i];
        memset(p->key, 0x10 + i, 32);
        snprintf(p->id, sizeof p->id, "peer%c", 'A' + i);
        p->rank = i;
        p->prev_rank = -1;
        p->in_group = true;
        p->state = CL_PEER_ALIVE;
        f->list[i] = p;
    }
}

static eng_sync_ctx_t ctx_of(fake_t *f)
{
    return (eng_sync_ctx_t){.arg = f,
                            .cfg = &f->cfg,
                            .self_key = f->peers[0].key,
                            .timers = f->timers,
                            .now = f_now,
                            .send = f_send,
                            .rank = f_rank,
                            .members = f_members,
                            .find = f_find,
                            .split = f_split,
                            .finished = f_finished};
}

/* Donor d's HASHES for s; with `liar`, buffer 0 declared with another
   hash. */
static void hashes(el_sync_t *y, const fake_t *f, int d, uint64_t s, bool liar)
{
    cl_el_buf_t bufs[2];
    cl_el_res_t res[1];
    cl_elmsg_t m;
    el_state_hashes(s, liar, bufs, res, &m);
    eng_sync_on_message(y, f->peers[d].key, &m);
}

static void data(el_sync_t *y, const uint8_t key[32], uint64_t s, int what, uint64_t index,
                 uint64_t off, uint64_t len, const uint8_t *bytes)
{
    cl_elmsg_t m;
    el_state_data(s, what, index, off, len, bytes, &m);
    eng_sync_on_message(y, key, &m);
}

static void deliver(void *arg, const uint8_t key[32], const cl_elmsg_t *m)
{
    eng_sync_on_message(arg, key, m);
}

/* Answers every FETCH sent since *from (and those the answers cause)
   with one DATA from the honest state, except FETCHes to `silent`
   (NULL: none); *from moves past them.  Returns the FETCHes answered. */
static int serve(el_sync_t *y, fake_t *f, int *from, uint64_t s, const uint8_t *silent)
{
    return el_state_serve(f->sent, &f->nsent, from, s, silent, deliver, y);
}

/* FETCHes sent since `from` to key: how many, and of item (what, index)
   alone when what >= 0. */
static int fetches_to(const fake_t *f, int from, const uint8_t key[32], int what, uint64_t index)
{
    int n = 0;
    for (int i = from; i < f->nsent; i++)
        n += f->sent[i].m.type == CL_EL_FETCH && memcmp(f->sent[i].to, key, 32) == 0 &&
             (what < 0 || (f->sent[i].m.what == what && f->sent[i].m.index == index));
    return n;
}

/* The served items equal the honest state. */
static void check_served(const el_sync_t *y)
{
    const uint8_t *d;
    size_t len;
    uint32_t sig = 0;
    CHECK(eng_sync_item(y, CL_EL_ITEM_BUFFER, 0, &d, &len, NULL) == COLLAB_OK && len == EL_SMALL &&
          memcmp(d, el_state()->small, EL_SMALL) == 0);
    CHECK(eng_sync_item(y, CL_EL_ITEM_BUFFER, 1, &d, &len, NULL) == COLLAB_OK && len == EL_BIG &&
          memcmp(d, el_state()->big, EL_BIG) == 0);
    CHECK(eng_sync_item(y, CL_EL_ITEM_RESULT, 2, &d, &len, &sig) == COLLAB_OK && len == EL_RES &&
          sig == EL_SIG && memcmp(d, el_state()->res, EL_RES) == 0);
    size_t nitems;
    uint64_t bytes;
    int ndonors;
    eng_sync_totals(y, &nitems, &bytes, &ndonors);
    CHECK(nitems == 3 && bytes == EL_SMALL + EL_BIG + EL_RES);
}

static bool log_has(const char *path, const char *needle)
{
    FILE *fp = fopen(path, "r");
    if (fp == NULL)
        return false;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

static cl_elmsg_t no_admit(void)
{
    cl_elmsg_t a;
    memset(&a, 0, sizeof a);
    a.type = CL_EL_ADMIT;
    return a;
}

/* (a), (b), (e) and the hash check. */
static void test_agree_fetch(const char *logpath)
{
    static fake_t f;
    reset(&f);
    eng_sync_ctx_t ctx = ctx_of(&f);
    cl_elmsg_t admit = no_admit();
    el_sync_t *y = eng_sync_start(&ctx, 10, &admit, NULL);
    CHECK(y != NULL);
    if (y == NULL)
        return;
    /* (a) A QUERY to every donor, none to this peer. */
    CHECK(f.nsent == 3);
    for (int d = 1; d < NPEERS; d++) {
        int q = 0;
        for (int i = 0; i < f.nsent; i++)
            q += f.sent[i].m.type == CL_EL_QUERY && f.sent[i].m.s == 10 &&
                 memcmp(f.sent[i].to, f.peers[d].key, 32) == 0;
        CHECK(q == 1);
    }
    int from = f.nsent;
    /* Two donors agree, the third (rank 3) declares buffer 0 otherwise. */
    hashes(y, &f, 1, 10, false);
    hashes(y, &f, 2, 10, false);
    CHECK(f.nsent == from); /* waits for the third */
    hashes(y, &f, 3, 10, true);
    CHECK(f.nsent > from);
    /* (b) The liar is outvoted: buffer 0 is never asked of it, but the
       others are; it is named. */
    CHECK(fetches_to(&f, from, f.peers[3].key, CL_EL_ITEM_BUFFER, 0) == 0);
    CHECK(fetches_to(&f, from, f.peers[1].key, CL_EL_ITEM_BUFFER, 0) +
              fetches_to(&f, from, f.peers[2].key, CL_EL_ITEM_BUFFER, 0) ==
          1);
    CHECK(fetches_to(&f, from, f.peers[3].key, CL_EL_ITEM_BUFFER, 1) == 1);
    CHECK(log_has(logpath, "state of collective #10: rank 3 (peerD)"));
    /* Buffer 1 is striped over all three donors. */
    for (int d = 1; d < NPEERS; d++)
        CHECK(fetches_to(&f, from, f.peers[d].key, CL_EL_ITEM_BUFFER, 1) == 1);

    /* (e) DATA at an offset nobody asked for, or from a donor not asked,
       is ignored: it neither lands nor completes the item. */
    const el_sent_t *fs = NULL;
    for (int i = from; i < f.nsent && fs == NULL; i++)
        if (f.sent[i].m.type == CL_EL_FETCH && f.sent[i].m.what == CL_EL_ITEM_BUFFER &&
            f.sent[i].m.index == 0)
            fs = &f.sent[i];
    CHECK(fs != NULL && fs->m.offset == 0 && fs->m.len == EL_SMALL);
    if (fs == NULL)
        goto out;
    const uint8_t *dp;
    size_t len;
    data(y, fs->to, 10, CL_EL_ITEM_BUFFER, 0, 1, EL_SMALL - 1, el_state()->small + 1);
    data(y, f.peers[3].key, 10, CL_EL_ITEM_BUFFER, 0, 0, EL_SMALL, el_state()->small);
    CHECK(eng_sync_item(y, CL_EL_ITEM_BUFFER, 0, &dp, &len, NULL) == COLLAB_ERR_ARG);

    /* The hash is checked: buffer 0 served with other bytes at the right
       offset fails it and is asked once more of the other agreeing
       donor. */
    static uint8_t wrong[EL_SMALL];
    memcpy(wrong, el_state()->small, EL_SMALL);
    wrong[7] ^= 0x01;
    int before = f.nsent;
    uint8_t first[32];
    memcpy(first, fs->to, 32);
    data(y, first, 10, CL_EL_ITEM_BUFFER, 0, 0, EL_SMALL, wrong);
    CHECK(eng_sync_item(y, CL_EL_ITEM_BUFFER, 0, &dp, &len, NULL) == COLLAB_ERR_ARG);
    CHECK(f.nsent == before + 1);
    if (f.nsent == before + 1) {
        const el_sent_t *r = &f.sent[before];
        CHECK(r->m.type == CL_EL_FETCH && r->m.index == 0 && r->m.offset == 0);
        CHECK(memcmp(r->to, first, 32) != 0 && memcmp(r->to, f.peers[3].key, 32) != 0);
    }
    CHECK(log_has(logpath, "does not match the hash its donors declared"));

    /* (a) Every FETCH answered: the items are complete and finished once. */
    from = before;
    CHECK(serve(y, &f, &from, 10, NULL) == 1);
    /* The first round's stripes of buffer 1 and the result. */
    for (int i = 3; i < before; i++) {
        const el_sent_t x = f.sent[i];
        if (x.m.type != CL_EL_FETCH || x.m.index == 0)
            continue;
        uint64_t size;
        const uint8_t *b = el_state_bytes(x.m.what, x.m.index, &size);
        data(y, x.to, 10, x.m.what, x.m.index, x.m.offset, x.m.len, b + x.m.offset);
    }
    CHECK(eng_sync_done(y));
    CHECK(f.finished == 1);
    check_served(y);
    CHECK(!eng_sync_unserved(y));
    /* Done: more DATA changes nothing. */
    data(y, f.peers[1].key, 10, CL_EL_ITEM_BUFFER, 0, 0, EL_SMALL, wrong);
    CHECK(f.finished == 1);
    check_served(y);
out:
    eng_sync_destroy(&y);
    CHECK(y == NULL);
    eng_sync_destroy(&y);
}

/* Starts a sync with donors 1 and 2 only (3 is not in the group) and
   lets both agree; *from is the first FETCH. */
static el_sync_t *two_donors(fake_t *f, eng_sync_ctx_t *ctx, uint64_t s, int *from)
{
    reset(f);
    f->peers[3].in_group = false;
    f->peers[3].state = CL_PEER_GONE;
    *ctx = ctx_of(f);
    cl_elmsg_t admit = no_admit();
    el_sync_t *y = eng_sync_start(ctx, s, &admit, NULL);
    CHECK(y != NULL);
    if (y == NULL)
        return NULL;
    CHECK(f->nsent == 2);
    *from = f->nsent;
    hashes(y, f, 1, s, false);
    hashes(y, f, 2, s, false);
    CHECK(f->nsent > *from);
    CHECK(fetches_to(f, *from, f->peers[2].key, CL_EL_ITEM_BUFFER, 1) == 1);
    return y;
}

/* (c) A silent live donor is asked once more, then its stripes go to
   the other donor. */
static void test_stall(void)
{
    static fake_t f;
    eng_sync_ctx_t ctx;
    int from;
    el_sync_t *y = two_donors(&f, &ctx, 20, &from);
    if (y == NULL)
        return;
    const uint8_t *silent = f.peers[2].key;
    int owed = fetches_to(&f, from, silent, -1, 0);
    CHECK(owed >= 1);
    serve(y, &f, &from, 20, silent);
    CHECK(!eng_sync_done(y));
    double stall = eng_sync_stall(f.cfg.timeout);
    /* Before the stall, nothing happens. */
    f.now += stall - 1.0;
    int before = f.nsent;
    (void)cl_timer_run(f.timers, f.now); /* armed when the pull started */
    double next = cl_timer_next(f.timers);
    CHECK(f.nsent == before && next > f.now);
    /* Past it: the same stripes asked of the silent donor once more, and
       nothing of the other. */
    f.now = next;
    CHECK(cl_timer_run(f.timers, f.now) == 1);
    CHECK(fetches_to(&f, before, silent, -1, 0) == owed);
    CHECK(fetches_to(&f, before, f.peers[1].key, -1, 0) == 0);
    /* Silent again: now its stripes go to donor 1. */
    before = f.nsent;
    f.now += stall;
    CHECK(cl_timer_run(f.timers, f.now) == 1);
    CHECK(fetches_to(&f, before, silent, -1, 0) == 0);
    CHECK(fetches_to(&f, before, f.peers[1].key, -1, 0) == owed);
    from = before;
    serve(y, &f, &from, 20, silent);
    CHECK(eng_sync_done(y) && f.finished == 1);
    check_served(y);
    /* Everything was served: nothing unserved, though the donor lives. */
    CHECK(!eng_sync_unserved(y));
    before = f.nsent;
    (void)cl_timer_run(f.timers, f.now + 1e6); /* done: not armed again */
    CHECK(isinf(cl_timer_next(f.timers)) && f.nsent == before);
    eng_sync_destroy(&y);
}

/* (d) A donor that leaves the view has its stripes asked of the other. */
static void test_leave(void)
{
    static fake_t f;
    eng_sync_ctx_t ctx;
    int from;
    el_sync_t *y = two_donors(&f, &ctx, 30, &from);
    if (y == NULL)
        return;
    const uint8_t *leaver = f.peers[2].key;
    int owed = fetches_to(&f, from, leaver, -1, 0);
    serve(y, &f, &from, 30, leaver);
    CHECK(!eng_sync_done(y));
    int before = f.nsent;
    eng_sync_view_changed(y); /* nobody left yet */
    CHECK(f.nsent == before);
    f.peers[2].state = CL_PEER_GONE;
    f.peers[2].in_group = false;
    eng_sync_view_changed(y);
    CHECK(fetches_to(&f, before, f.peers[1].key, -1, 0) == owed);
    CHECK(fetches_to(&f, before, leaver, -1, 0) == 0);
    from = before;
    serve(y, &f, &from, 30, NULL);
    CHECK(eng_sync_done(y) && f.finished == 1);
    check_served(y);
    eng_sync_destroy(&y);
}

/* Every FETCH sent since `from`, and those the answers cause, answered
   with NACK for `reason` by the donor it went to. */
static void nack_all(el_sync_t *y, fake_t *f, int from, uint64_t s, uint8_t reason)
{
    for (int i = from; i < f->nsent; i++) {
        const el_sent_t x = f->sent[i];
        if (x.m.type != CL_EL_FETCH)
            continue;
        cl_elmsg_t k;
        memset(&k, 0, sizeof k);
        k.type = CL_EL_NACK;
        k.s = s;
        k.what = x.m.what;
        k.index = x.m.index;
        k.offset = x.m.offset;
        k.len = x.m.len;
        k.reason = reason;
        eng_sync_on_message(y, x.to, &k);
    }
}

/* (f) Donors that answer that they went past s without a copy for this
   peer (the group ran s without it): the items end unserved, and
   eng_sync_unserved says so while such a donor lives, so that the
   admission is undone instead of keeping this peer's own values.  A
   buffer the donors no longer have (NACK UNKNOWN) is kept as before. */
static void test_moved(void)
{
    static fake_t f;
    eng_sync_ctx_t ctx;
    int from;
    el_sync_t *y = two_donors(&f, &ctx, 40, &from);
    if (y == NULL)
        return;
    nack_all(y, &f, from, 40, CL_EL_NACK_MOVED);
    CHECK(eng_sync_done(y) && f.finished == 1);
    const uint8_t *d;
    size_t len;
    CHECK(eng_sync_item(y, CL_EL_ITEM_BUFFER, 1, &d, &len, NULL) != COLLAB_OK);
    CHECK(eng_sync_unserved(y));
    /* Once those donors are gone, nobody could serve it: not unserved. */
    f.peers[1].state = CL_PEER_GONE;
    f.peers[2].state = CL_PEER_GONE;
    CHECK(!eng_sync_unserved(y));
    eng_sync_destroy(&y);

    y = two_donors(&f, &ctx, 41, &from);
    if (y == NULL)
        return;
    nack_all(y, &f, from, 41, CL_EL_NACK_UNKNOWN);
    CHECK(eng_sync_done(y) && f.finished == 1);
    CHECK(eng_sync_item(y, CL_EL_ITEM_BUFFER, 1, &d, &len, NULL) != COLLAB_OK);
    CHECK(!eng_sync_unserved(y));
    eng_sync_destroy(&y);
}

/* A joiner (docs/security-bounds.md §5): nothing is allocated before its own
   program tells an item's size (eng_sync_want), and a declared size
   unlike its own is refused. */
static int f_own_unknown(fake_t *f, int what, uint64_t index, uint64_t *size)
{
    (void)f;
    (void)what;
    (void)index;
    (void)size;
    return 0;
}

/* Donor d's HASHES with buffer 1 declared as `big` bytes (honest hash). */
static void hashes_sized(el_sync_t *y, const fake_t *f, int d, uint64_t s, uint64_t big)
{
    cl_el_buf_t bufs[2];
    cl_el_res_t res[1];
    cl_elmsg_t m;
    el_state_hashes(s, false, bufs, res, &m);
    bufs[1].size = big;
    eng_sync_on_message(y, f->peers[d].key, &m);
}

/* liars: a mask of the donors (1..3) that declare buffer 1 as 64 GiB. */
static el_sync_t *joiner_sync(fake_t *f, eng_sync_ctx_t *ctx, uint64_t s, unsigned liars)
{
    reset(f);
    *ctx = ctx_of(f);
    ctx->own_size = f_own_unknown;
    cl_elmsg_t admit = no_admit();
    el_sync_t *y = eng_sync_start(ctx, s, &admit, NULL);
    CHECK(y != NULL);
    if (y == NULL)
        return NULL;
    int from = f->nsent;
    for (int d = 1; d < NPEERS; d++)
        hashes_sized(y, f, d, s, (liars >> d) & 1 ? (uint64_t)1 << 36 : EL_BIG);
    /* Agreed, nothing asked for: the program has posted nothing yet. */
    CHECK(fetches_to(f, from, f->peers[1].key, -1, 0) +
              fetches_to(f, from, f->peers[2].key, -1, 0) +
              fetches_to(f, from, f->peers[3].key, -1, 0) ==
          0);
    CHECK(eng_sync_done(y) && f->finished == 1);
    return y;
}

static void test_bound(const char *logpath)
{
    static fake_t f;
    eng_sync_ctx_t ctx;
    const uint8_t *d;
    size_t len;
    /* One liar among three: outvoted; buffer 1 comes from the others when
       the program asks for it, and only then. */
    el_sync_t *y = joiner_sync(&f, &ctx, 30, 1u << 3);
    if (y == NULL)
        return;
    int from = f.nsent;
    CHECK(eng_sync_want(y, CL_EL_ITEM_BUFFER, 1, EL_BIG) == ENG_SYNC_PENDING);
    CHECK(!eng_sync_done(y));
    CHECK(fetches_to(&f, from, f.peers[3].key, -1, 0) == 0);
    CHECK(fetches_to(&f, from, f.peers[1].key, CL_EL_ITEM_BUFFER, 1) +
              fetches_to(&f, from, f.peers[2].key, CL_EL_ITEM_BUFFER, 1) >=
          1);
    CHECK(serve(y, &f, &from, 30, NULL) >= 1);
    CHECK(eng_sync_done(y) && f.finished == 2);
    CHECK(eng_sync_want(y, CL_EL_ITEM_BUFFER, 1, EL_BIG) == ENG_SYNC_READY);
    CHECK(eng_sync_item(y, CL_EL_ITEM_BUFFER, 1, &d, &len, NULL) == COLLAB_OK && len == EL_BIG &&
          memcmp(d, el_state()->big, EL_BIG) == 0);
    /* An item nobody declared: not served. */
    CHECK(eng_sync_want(y, CL_EL_ITEM_BUFFER, 7, 10) == ENG_SYNC_NONE);
    eng_sync_destroy(&y);

    /* Two liars of three (the majority declares 64 GiB): refused and
       named; the honest donor serves it, at this program's size. */
    y = joiner_sync(&f, &ctx, 31, (1u << 2) | (1u << 3));
    if (y == NULL)
        return;
    from = f.nsent;
    CHECK(eng_sync_want(y, CL_EL_ITEM_BUFFER, 1, EL_BIG) == ENG_SYNC_PENDING);
    CHECK(log_has(logpath, "rank 2 (peerC) declared start-up broadcast #1 as 68719476736 bytes, "
                           "but this program's own has"));
    CHECK(log_has(logpath, "rank 3 (peerD) declared start-up broadcast #1 as 68719476736"));
    CHECK(fetches_to(&f, from, f.peers[2].key, -1, 0) == 0);
    CHECK(fetches_to(&f, from, f.peers[3].key, -1, 0) == 0);
    CHECK(fetches_to(&f, from, f.peers[1].key, CL_EL_ITEM_BUFFER, 1) == 1);
    CHECK(serve(y, &f, &from, 31, NULL) == 1);
    CHECK(eng_sync_want(y, CL_EL_ITEM_BUFFER, 1, EL_BIG) == ENG_SYNC_READY);
    CHECK(eng_sync_item(y, CL_EL_ITEM_BUFFER, 1, &d, &len, NULL) == COLLAB_OK && len == EL_BIG &&
          memcmp(d, el_state()->big, EL_BIG) == 0);
    eng_sync_destroy(&y);

    /* Every donor lies: refused with an error, nothing fetched. */
    y = joiner_sync(&f, &ctx, 32, 0xeu);
    if (y == NULL)
        return;
    from = f.nsent;
    CHECK(eng_sync_want(y, CL_EL_ITEM_BUFFER, 1, EL_BIG) == ENG_SYNC_NONE);
    CHECK(f.nsent == from && eng_sync_done(y));
    CHECK(log_has(logpath, "no honest majority of the peers that answered declared the swarm's "
                           "start-up broadcast #1 with this program's size"));
    /* The other items are served at their own sizes. */
    CHECK(eng_sync_want(y, CL_EL_ITEM_BUFFER, 0, EL_SMALL) == ENG_SYNC_PENDING);
    CHECK(serve(y, &f, &from, 32, NULL) == 1);
    CHECK(eng_sync_want(y, CL_EL_ITEM_BUFFER, 0, EL_SMALL) == ENG_SYNC_READY);
    eng_sync_destroy(&y);
}

int main(void)
{
    if (sodium_init() < 0)
        return 1;
    char logpath[] = "/tmp/cl_engine_sync_test.XXXXXX";
    int fd = mkstemp(logpath);
    CHECK(fd >= 0);
    if (fd < 0)
        return 1;
    close(fd);
    CHECK(cl_log_configure(CL_LOG_WARN, logpath) == 0);
    bool filled = el_state_init();
    CHECK(filled);
    if (!filled)
        return 1;

    test_agree_fetch(logpath);
    test_stall();
    test_leave();
    test_moved();
    test_bound(logpath);

    cl_log_configure(CL_LOG_WARN, NULL);
    unlink(logpath);
    el_state_free();
    printf("cl_engine_sync_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
