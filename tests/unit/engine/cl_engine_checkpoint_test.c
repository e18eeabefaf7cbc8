/*  cl_engine_checkpoint_test.c - selftest of a monitor's checkpoints
    (cl_engine_checkpoint.c, docs/monitor.md §7).

    Drives the component through a fake context, without sockets or a
    clock: a membership of the test's own peer records (this peer a
    monitor, three members, the first the admitter), a fake clock, and a
    record of every elastic message sent.  The fetch runs as the real
    pull of the state (cl_engine_sync.c) on a fake context of its own, as
    the engine starts it; the test plays the members, answering QUERY
    with HASHES and FETCH with DATA from its own copy of their state, and
    reads the checkpoint files back from a directory of its own.  Checks
    (a) REQUESTs to the admitter, a NOTICE from another member or for
    another monitor ignored, the admitter's NOTICE fetched from every
    member and written as a checkpoint equal to the state, and the next
    REQUEST sent at once; (b) the monitor serving that checkpoint to a
    resuming peer (HASHES, DATA, a FETCH beyond an item and a QUERY of
    another collective refused) and sending RESUME to a rank it admits
    while the group forms; (c) a member silent past the stall asked once
    more, then its stripes fetched from the others: the checkpoint is
    written; (d) every member silent: the fetch given up, nothing
    written, the next REQUEST sent; an item whose bytes fail the hash at
    every member given up on: nothing written either; (e) bytes that fail the hash fetched
    again elsewhere, DATA beyond what was asked ignored; (f) no majority
    among the members: nothing written; (g) the admitter: a monitor's
    REQUEST (none from a member that is no monitor), the NOTICE at the
    first step boundary at least EL_ADMIT_AHEAD collectives ahead, to
    every group member and the monitor, with the start-up signatures, the
    copy for the monitor expected, not before the step asked for nor
    within a second of the last; (h) a member keeping a copy for the
    monitor on the admitter's NOTICE only; (i) a monitor's RESUME taken
    once, passed on by the coordinator that resumed from it, refused once
    the program ran.
*/
#include "engine/cl_engine_checkpoint.h"

#include "elastic/cl_checkpoint.h"
#include "engine/cl_engine_timer.h"
#include "mpi_collab.h"
#include "util/cl_log.h"

#include <dirent.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "el_fixture.h"
#include "selftest.h"

#define MAXSENT 512
#define NPEERS 4 /* this monitor and three members */

/* The fake engine: the context's argument of the checkpoints and of the
   pull, struct cl_engine, which both see only as an incomplete type. */
typedef struct cl_engine {
    cl_config_t cfg;
    double now;
    cl_peer_t peers[NPEERS]; /* [0] is this monitor, [1] the admitter */
    cl_peer_t *list[NPEERS];
    bool closed; /* the world group is formed */
    el_sent_t sent[MAXSENT];
    int nsent;
    el_ckpt_t *c;
    el_sync_t *y; /* the running pull (the engine's, here the test's) */
    int fetches;  /* fetches started */
    int self;     /* this peer's record (0: the monitor) */
    bool fresh;   /* no world collective posted yet */
    int copies;   /* keep_copy calls, the last one's arguments */
    uint64_t copy_s;
    uint8_t copy_key[32];
    bool copy_now;
    uint32_t sigs[8]; /* the sigs of the last CKPT sent */
    uint32_t nsigs;
    cl_timer_t *timers; /* the loop's set, run by the test as the loop would */
} fake_t;

static double f_now(fake_t *f)
{
    return f->now;
}

static int f_send(fake_t *f, const uint8_t key[32], const cl_elmsg_t *m)
{
    if (m->type == CL_EL_CKPT) {
        f->nsigs = m->nsigs < 8 ? m->nsigs : 8;
        if (f->nsigs > 0)
            memcpy(f->sigs, m->sigs, f->nsigs * sizeof *f->sigs);
    }
    return el_sent_push(f->sent, &f->nsent, MAXSENT, key, m);
}

static bool f_member(fake_t *f)
{
    (void)f;
    return true;
}

static cl_peer_t *f_admitter(fake_t *f)
{
    return &f->peers[1];
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

static bool f_closed(fake_t *f)
{
    return f->closed;
}

static bool f_fresh(fake_t *f)
{
    return f->fresh;
}

static void f_keep_copy(fake_t *f, uint64_t s, const uint8_t key[32], bool now_if_blocked)
{
    f->copies++;
    f->copy_s = s;
    memcpy(f->copy_key, key, 32);
    f->copy_now = now_if_blocked;
}

static const el_sync_t *f_sync(fake_t *f)
{
    return f->y;
}

/* The pull's context: the engine's adapters, played by the test. */
static int f_rank(fake_t *f)
{
    (void)f;
    return -1;
}

static bool f_split(fake_t *f, const cl_el_joiner_t *js, uint32_t nj, int *members,
                    int *target_group)
{
    (void)f;
    (void)js;
    (void)nj;
    *members = NPEERS - 1;
    *target_group = 0;
    return false;
}

static void f_finished(fake_t *f)
{
    eng_ckpt_fetched(f->c, f->y);
}

static bool f_fetch(fake_t *f, uint64_t s, const uint8_t admitter[32])
{
    eng_sync_destroy(&f->y);
    eng_sync_ctx_t sctx = {.arg = f,
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
    cl_elmsg_t none;
    memset(&none, 0, sizeof none);
    f->y = eng_sync_start(&sctx, s, &none, admitter);
    if (f->y == NULL)
        return false;
    f->fetches++;
    eng_sync_view_changed(f->y);
    return true;
}

static uint32_t s_sigs[1] = {0x1234u};

/* This peer is record `self`: 0 the monitor (dir: its checkpoints), else
   a member (dir NULL); stream: the world stream it reads (NULL). */
static void start_as(fake_t *f, const char *dir, int self, const cl_stream_t *stream)
{
    cl_timer_t *timers = f->timers; /* kept from a start before */
    memset(f, 0, sizeof *f);
    f->timers = timers != NULL ? timers : cl_timer_new(8);
    CHECK(f->timers != NULL);
    f->self = self;
    f->fresh = true;
    f->cfg.timeout = 5.0;
    f->cfg.monitor = self == 0;
    f->cfg.checkpoint_dir = (char *)dir;
    f->cfg.checkpoint_every = self == 0 ? 2 : 0;
    f->now = 100.0;
    f->closed = true;
    for (int i = 0; i < NPEERS; i++) {
        cl_peer_t *p = &f->peers[i];
        memset(p->key, 0x20 + i, 32);
        snprintf(p->id, sizeof p->id, "peer%c", 'A' + i);
        p->rank = i - 1;
        p->prev_rank = -1;
        p->in_group = i > 0;
        p->monitor = i == 0;
        p->state = CL_PEER_ALIVE;
        f->list[i] = p;
    }
    eng_ckpt_ctx_t ctx = {.arg = f,
                          .cfg = &f->cfg,
                          .self_key = f->peers[self].key,
                          .stream = stream,
                          .now = f_now,
                          .send = f_send,
                          .member = f_member,
                          .admitter = f_admitter,
                          .members = f_members,
                          .find = f_find,
                          .group_closed = f_closed,
                          .fresh = f_fresh,
                          .keep_copy = f_keep_copy,
                          .sync = f_sync,
                          .fetch = f_fetch,
                          .timers = f->timers};
    CHECK(eng_ckpt_new(&ctx, &f->c) == COLLAB_OK && f->c != NULL);
}

static void start(fake_t *f, const char *dir)
{
    start_as(f, dir, 0, NULL);
}

static void stop(fake_t *f)
{
    eng_sync_destroy(&f->y);
    eng_ckpt_destroy(&f->c);
    CHECK(f->c == NULL);
}

/* Messages of type (and checkpoint sub type ckpt, when type is CKPT) sent
   since `from` to key (NULL: to anyone). */
static int sent_of(const fake_t *f, int from, const uint8_t *key, int type, int ckpt)
{
    int n = 0;
    for (int i = from; i < f->nsent; i++)
        n += f->sent[i].m.type == type && (type != CL_EL_CKPT || f->sent[i].m.ckpt == ckpt) &&
             (key == NULL || memcmp(f->sent[i].to, key, 32) == 0);
    return n;
}

static const el_sent_t *last_of(const fake_t *f, int type, int ckpt)
{
    for (int i = f->nsent - 1; i >= 0; i--)
        if (f->sent[i].m.type == type && (type != CL_EL_CKPT || f->sent[i].m.ckpt == ckpt))
            return &f->sent[i];
    return NULL;
}

/* The admitter (or `from`) tells this monitor (or `for`) to fetch
   collective s, step `step`. */
static void notice(fake_t *f, int from, const uint8_t *for_key, uint64_t s, uint64_t step)
{
    cl_elmsg_t m;
    memset(&m, 0, sizeof m);
    m.type = CL_EL_CKPT;
    m.ckpt = CL_EL_CKPT_NOTICE;
    m.s = s;
    m.step = step;
    m.prefix = 1;
    m.sigs = s_sigs;
    m.nsigs = 1;
    memcpy(m.key, for_key, 32);
    CHECK(eng_ckpt_on_message(f->c, &f->peers[from], f->peers[from].key, &m));
}

/* Member d's HASHES for s; with `liar`, buffer 0 declared with another
   hash. */
static void hashes(fake_t *f, int d, uint64_t s, bool liar)
{
    cl_el_buf_t bufs[2];
    cl_el_res_t res[1];
    cl_elmsg_t m;
    el_state_hashes(s, liar, bufs, res, &m);
    if (f->y != NULL)
        eng_sync_on_message(f->y, f->peers[d].key, &m);
}

static void data(fake_t *f, const uint8_t key[32], uint64_t s, int what, uint64_t index,
                 uint64_t off, uint64_t len, const uint8_t *bytes)
{
    cl_elmsg_t m;
    el_state_data(s, what, index, off, len, bytes, &m);
    if (f->y != NULL)
        eng_sync_on_message(f->y, key, &m);
}

static void deliver(void *arg, const uint8_t key[32], const cl_elmsg_t *m)
{
    fake_t *f = arg;
    if (f->y != NULL)
        eng_sync_on_message(f->y, key, m);
}

/* Answers every FETCH sent since *from (and those the answers cause)
   with DATA from the honest state, except FETCHes to `silent` (NULL:
   none). */
static void serve_all(fake_t *f, int *from, uint64_t s, const uint8_t *silent)
{
    (void)el_state_serve(f->sent, &f->nsent, from, s, silent, deliver, f);
}

/* The newest checkpoint of dir: 0 and *out (clear it), or 1 when none. */
static int newest(const char *dir, cl_ckpt_t *out)
{
    char path[4096], err[CL_CKPT_ERR_MAX];
    memset(out, 0, sizeof *out);
    return cl_checkpoint_latest(dir, out, path, sizeof path, err);
}

/* The newest checkpoint of dir is of step `step` at s and holds the
   honest state. */
static void check_written(const char *dir, uint64_t s, uint64_t step)
{
    cl_ckpt_t k;
    CHECK(newest(dir, &k) == 0);
    CHECK(k.step == step && k.seq == s && k.prefix == 1 && k.sigs != NULL &&
          k.sigs[0] == s_sigs[0] && strcmp(k.run_id, "default") == 0);
    CHECK(k.nitems == 3);
    if (k.nitems == 3) {
        CHECK(k.items[0].what == CL_CKPT_BUFFER && k.items[0].index == 0 &&
              k.items[0].size == EL_SMALL &&
              memcmp(k.items[0].data, el_state()->small, EL_SMALL) == 0);
        CHECK(k.items[1].what == CL_CKPT_BUFFER && k.items[1].index == 1 &&
              k.items[1].size == EL_BIG && memcmp(k.items[1].data, el_state()->big, EL_BIG) == 0);
        CHECK(k.items[2].what == CL_CKPT_RESULT && k.items[2].index == 2 &&
              k.items[2].size == EL_RES && k.items[2].signature == EL_SIG &&
              memcmp(k.items[2].data, el_state()->res, EL_RES) == 0);
    }
    cl_checkpoint_clear(&k);
}

static void rmdir_all(const char *dir)
{
    DIR *d = opendir(dir);
    if (d != NULL) {
        struct dirent *de;
        char path[4096];
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.' && (de->d_name[1] == '\0' || de->d_name[1] == '.'))
                continue;
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

static void make_dir(char *tmpl)
{
    CHECK(mkdtemp(tmpl) != NULL);
}

/* (a) and (b). */
static void test_fetch_write(void)
{
    char dir[] = "/tmp/cl_engine_checkpoint_test.XXXXXX";
    make_dir(dir);
    static fake_t f;
    start(&f, dir);
    /* (a) Its timer, armed when this peer becomes a member, sends a
       REQUEST to the admitter, none yet taken; again 2 s later. */
    (void)cl_timer_run(f.timers, f.now);
    CHECK(f.nsent == 0);
    eng_ckpt_member(f.c);
    (void)cl_timer_run(f.timers, f.now);
    CHECK(sent_of(&f, 0, f.peers[1].key, CL_EL_CKPT, CL_EL_CKPT_REQUEST) == 1);
    CHECK(f.nsent == 1 && f.sent[0].m.step == 0 && f.sent[0].m.every == 2);
    double next = cl_timer_next(f.timers);
    CHECK(next > f.now && next <= f.now + 2.0);
    f.now = next;
    (void)cl_timer_run(f.timers, f.now);
    CHECK(sent_of(&f, 0, f.peers[1].key, CL_EL_CKPT, CL_EL_CKPT_REQUEST) == 2);

    /* A NOTICE from a member that is not the admitter, or for another
       monitor, starts nothing. */
    notice(&f, 2, f.peers[0].key, 10, 4);
    notice(&f, 1, f.peers[3].key, 10, 4);
    CHECK(f.fetches == 0 && f.y == NULL);

    /* The admitter's: a QUERY to every member. */
    int from = f.nsent;
    notice(&f, 1, f.peers[0].key, 10, 4);
    CHECK(f.fetches == 1 && f.y != NULL);
    for (int d = 1; d < NPEERS; d++)
        CHECK(sent_of(&f, from, f.peers[d].key, CL_EL_QUERY, 0) == 1);
    CHECK(sent_of(&f, from, f.peers[0].key, CL_EL_QUERY, 0) == 0);
    /* A second NOTICE while fetching starts no other fetch. */
    notice(&f, 1, f.peers[0].key, 12, 5);
    CHECK(f.fetches == 1);
    /* While it fetches, the timer looks at it often and asks nothing. */
    int before = f.nsent;
    CHECK(cl_timer_next(f.timers) <= f.now + ENG_CKPT_POLL);
    (void)cl_timer_run(f.timers, f.now);
    CHECK(f.nsent == before);

    from = f.nsent;
    for (int d = 1; d < NPEERS; d++)
        hashes(&f, d, 10, false);
    int req_before = sent_of(&f, 0, NULL, CL_EL_CKPT, CL_EL_CKPT_REQUEST);
    serve_all(&f, &from, 10, NULL);
    CHECK(eng_sync_done(f.y));
    check_written(dir, 10, 4);
    /* The next one is asked for at once, after step 4. */
    CHECK(sent_of(&f, 0, NULL, CL_EL_CKPT, CL_EL_CKPT_REQUEST) == req_before + 1);
    const el_sent_t *r = last_of(&f, CL_EL_CKPT, CL_EL_CKPT_REQUEST);
    CHECK(r != NULL && r->m.step == 4 && memcmp(r->to, f.peers[1].key, 32) == 0);

    /* (b) Serving that checkpoint to a resuming peer (a member now). */
    const uint8_t *who = f.peers[2].key;
    cl_elmsg_t q;
    memset(&q, 0, sizeof q);
    q.type = CL_EL_QUERY;
    q.s = 10;
    from = f.nsent;
    CHECK(eng_ckpt_on_message(f.c, &f.peers[2], who, &q));
    CHECK(sent_of(&f, from, who, CL_EL_HASHES, 0) == 1);
    r = last_of(&f, CL_EL_HASHES, 0);
    CHECK(r != NULL && r->m.nbufs == 2 && r->m.nres == 1 && r->m.s == 10);
    q.type = CL_EL_FETCH;
    q.what = CL_EL_ITEM_BUFFER;
    q.index = 1;
    q.offset = 1000;
    q.len = 600 * 1024;
    from = f.nsent;
    CHECK(eng_ckpt_on_message(f.c, &f.peers[2], who, &q));
    /* In pieces of at most 256 KiB, covering what was asked. */
    CHECK(sent_of(&f, from, who, CL_EL_DATA, 0) == 3);
    uint64_t covered = 0;
    for (int i = from; i < f.nsent; i++)
        if (f.sent[i].m.type == CL_EL_DATA) {
            CHECK(f.sent[i].m.offset == 1000 + covered && f.sent[i].m.len <= 256 * 1024);
            covered += f.sent[i].m.len;
        }
    CHECK(covered == q.len);
    /* A FETCH beyond the item is refused. */
    q.offset = EL_BIG - 10;
    q.len = 11;
    from = f.nsent;
    CHECK(eng_ckpt_on_message(f.c, &f.peers[2], who, &q));
    CHECK(sent_of(&f, from, who, CL_EL_DATA, 0) == 0 && sent_of(&f, from, who, CL_EL_NACK, 0) == 1);
    r = last_of(&f, CL_EL_NACK, 0);
    CHECK(r != NULL && r->m.reason == CL_EL_NACK_UNKNOWN);
    /* Another collective than the checkpoint's: moved on. */
    q.type = CL_EL_QUERY;
    q.s = 11;
    from = f.nsent;
    CHECK(eng_ckpt_on_message(f.c, &f.peers[2], who, &q));
    r = last_of(&f, CL_EL_NACK, 0);
    CHECK(sent_of(&f, from, who, CL_EL_NACK, 0) == 1 && r != NULL &&
          r->m.reason == CL_EL_NACK_MOVED);
    /* A rank admitted while the group forms resumes from it. */
    uint8_t newcomer[32];
    memset(newcomer, 0x77, 32);
    from = f.nsent;
    eng_ckpt_on_admit_rank(f.c, newcomer);
    CHECK(f.nsent == from); /* the group is formed: not */
    f.closed = false;
    eng_ckpt_on_admit_rank(f.c, newcomer);
    CHECK(sent_of(&f, from, newcomer, CL_EL_CKPT, CL_EL_CKPT_RESUME) == 1);
    r = last_of(&f, CL_EL_CKPT, CL_EL_CKPT_RESUME);
    CHECK(r != NULL && r->m.s == 10 && r->m.step == 4 && r->m.prefix == 1 &&
          memcmp(r->m.key, f.peers[0].key, 32) == 0);
    stop(&f);

    /* A monitor started again loads it from the directory. */
    start(&f, dir);
    from = f.nsent;
    eng_ckpt_member(f.c);
    (void)cl_timer_run(f.timers, f.now);
    r = last_of(&f, CL_EL_CKPT, CL_EL_CKPT_REQUEST);
    CHECK(r != NULL && r->m.step == 4);
    stop(&f);
    rmdir_all(dir);
}

/* A fetch whose pull another replaced (no eng_ckpt_fetched) ends at the
   timer's next look (every ENG_CKPT_POLL while it fetches, from the
   NOTICE on), with a REQUEST. */
static void test_fetch_replaced(void)
{
    char dir[] = "/tmp/cl_engine_checkpoint_test.XXXXXX";
    make_dir(dir);
    static fake_t f;
    start(&f, dir);
    eng_ckpt_member(f.c);
    (void)cl_timer_run(f.timers, f.now);
    CHECK(sent_of(&f, 0, NULL, CL_EL_CKPT, CL_EL_CKPT_REQUEST) == 1);
    /* Replaced at once: the timer's first look, ENG_CKPT_POLL after the
       NOTICE (before the next REQUEST was due), ends it. */
    f.now += 0.5;
    notice(&f, 1, f.peers[0].key, 10, 4);
    CHECK(f.fetches == 1 && f.y != NULL);
    eng_sync_destroy(&f.y); /* replaced: the engine's pull is another */
    f.now += ENG_CKPT_POLL;
    (void)cl_timer_run(f.timers, f.now);
    CHECK(sent_of(&f, 0, NULL, CL_EL_CKPT, CL_EL_CKPT_REQUEST) == 2);
    /* Replaced later: it looks at the running fetch every ENG_CKPT_POLL,
       asking nothing meanwhile, and the look after the pull went ends
       it. */
    f.now += 0.5;
    notice(&f, 1, f.peers[0].key, 12, 5);
    CHECK(f.fetches == 2 && f.y != NULL);
    f.now += ENG_CKPT_POLL;
    (void)cl_timer_run(f.timers, f.now);
    CHECK(sent_of(&f, 0, NULL, CL_EL_CKPT, CL_EL_CKPT_REQUEST) == 2);
    eng_sync_destroy(&f.y);
    f.now += ENG_CKPT_POLL;
    (void)cl_timer_run(f.timers, f.now);
    CHECK(sent_of(&f, 0, NULL, CL_EL_CKPT, CL_EL_CKPT_REQUEST) == 3);
    notice(&f, 1, f.peers[0].key, 14, 6);
    CHECK(f.fetches == 3);
    stop(&f);
    rmdir_all(dir);
}

/* (c) A member silent past the stall: asked once more, then replaced. */
static void test_silent_replaced(void)
{
    char dir[] = "/tmp/cl_engine_checkpoint_test.XXXXXX";
    make_dir(dir);
    static fake_t f;
    start(&f, dir);
    notice(&f, 1, f.peers[0].key, 20, 6);
    int from = f.nsent;
    for (int d = 1; d < NPEERS; d++)
        hashes(&f, d, 20, false);
    const uint8_t *silent = f.peers[2].key;
    CHECK(sent_of(&f, from, silent, CL_EL_FETCH, 0) >= 1);
    serve_all(&f, &from, 20, silent);
    CHECK(!eng_sync_done(f.y));
    CHECK(newest(dir, &(cl_ckpt_t){0}) == 1);
    /* Past the stall: asked once more; then its stripes go elsewhere. */
    f.now += eng_sync_stall(f.cfg.timeout) + 0.1;
    int again = f.nsent;
    (void)cl_timer_run(f.timers, f.now);
    CHECK(sent_of(&f, again, silent, CL_EL_FETCH, 0) >= 1);
    serve_all(&f, &from, 20, silent);
    CHECK(!eng_sync_done(f.y));
    f.now += eng_sync_stall(f.cfg.timeout) + 0.1;
    int moved = f.nsent;
    (void)cl_timer_run(f.timers, f.now);
    CHECK(sent_of(&f, moved, silent, CL_EL_FETCH, 0) == 0);
    CHECK(sent_of(&f, moved, f.peers[1].key, CL_EL_FETCH, 0) +
              sent_of(&f, moved, f.peers[3].key, CL_EL_FETCH, 0) >=
          1);
    serve_all(&f, &from, 20, silent);
    CHECK(eng_sync_done(f.y));
    check_written(dir, 20, 6);
    stop(&f);
    rmdir_all(dir);
}

/* (d) Every member silent after its HASHES: the fetch is given up,
   nothing written, the next checkpoint asked for. */
static void test_given_up(void)
{
    char dir[] = "/tmp/cl_engine_checkpoint_test.XXXXXX";
    make_dir(dir);
    static fake_t f;
    start(&f, dir);
    notice(&f, 1, f.peers[0].key, 30, 8);
    for (int d = 1; d < NPEERS; d++)
        hashes(&f, d, 30, false);
    int req_before = sent_of(&f, 0, NULL, CL_EL_CKPT, CL_EL_CKPT_REQUEST);
    for (int round = 0; round < 4 && !eng_sync_done(f.y); round++) {
        f.now += eng_sync_stall(f.cfg.timeout) + 0.1;
        (void)cl_timer_run(f.timers, f.now);
    }
    CHECK(eng_sync_done(f.y));
    CHECK(newest(dir, &(cl_ckpt_t){0}) == 1);
    CHECK(sent_of(&f, 0, NULL, CL_EL_CKPT, CL_EL_CKPT_REQUEST) == req_before + 1);
    /* The timer no longer takes it for a running fetch: it asks again
       2 s after the fetch ended, not before. */
    int req_after = sent_of(&f, 0, NULL, CL_EL_CKPT, CL_EL_CKPT_REQUEST);
    (void)cl_timer_run(f.timers, f.now + ENG_CKPT_POLL);
    CHECK(sent_of(&f, 0, NULL, CL_EL_CKPT, CL_EL_CKPT_REQUEST) == req_after);
    /* The next NOTICE starts a new fetch. */
    eng_sync_destroy(&f.y);
    notice(&f, 1, f.peers[0].key, 40, 10);
    CHECK(f.fetches == 2);
    /* Buffer 0 served by every member with bytes that fail the hash: it
       is given up on while the members still serve the rest; a
       checkpoint without it is not written. */
    int from = f.nsent;
    for (int d = 1; d < NPEERS; d++)
        hashes(&f, d, 40, false);
    static uint8_t wrong[EL_SMALL];
    memcpy(wrong, el_state()->small, EL_SMALL);
    wrong[3] ^= 0x40;
    for (; from < f.nsent; from++) {
        const el_sent_t x = f.sent[from];
        if (x.m.type != CL_EL_FETCH)
            continue;
        uint64_t size;
        const uint8_t *b = el_state_bytes(x.m.what, x.m.index, &size);
        if (x.m.what == CL_EL_ITEM_BUFFER && x.m.index == 0)
            b = wrong;
        data(&f, x.to, 40, x.m.what, x.m.index, x.m.offset, x.m.len, b + x.m.offset);
    }
    CHECK(eng_sync_done(f.y));
    size_t nitems = 0;
    uint64_t bytes = 0;
    int ndonors = 0;
    eng_sync_totals(f.y, &nitems, &bytes, &ndonors);
    CHECK(ndonors == 3 && nitems == 2 && eng_sync_count(f.y) == 3);
    CHECK(newest(dir, &(cl_ckpt_t){0}) == 1);
    CHECK(sent_of(&f, 0, NULL, CL_EL_CKPT, CL_EL_CKPT_REQUEST) == req_before + 2);
    stop(&f);
    rmdir_all(dir);
}

/* (e) Bad replies refused; (f) no majority: nothing written. */
static void test_refused(void)
{
    char dir[] = "/tmp/cl_engine_checkpoint_test.XXXXXX";
    make_dir(dir);
    static fake_t f;
    start(&f, dir);
    notice(&f, 1, f.peers[0].key, 50, 12);
    int from = f.nsent;
    for (int d = 1; d < NPEERS; d++)
        hashes(&f, d, 50, false);
    /* Buffer 0 served with other bytes, and longer than asked: neither
       lands; it is asked once more. */
    const el_sent_t *fs = NULL;
    for (int i = from; i < f.nsent && fs == NULL; i++)
        if (f.sent[i].m.type == CL_EL_FETCH && f.sent[i].m.what == CL_EL_ITEM_BUFFER &&
            f.sent[i].m.index == 0)
            fs = &f.sent[i];
    CHECK(fs != NULL);
    if (fs != NULL) {
        static uint8_t wrong[EL_SMALL + 8];
        memcpy(wrong, el_state()->small, EL_SMALL);
        wrong[7] ^= 0x01;
        data(&f, fs->to, 50, CL_EL_ITEM_BUFFER, 0, 0, EL_SMALL + 8, wrong);
        const uint8_t *dp;
        size_t len;
        CHECK(eng_sync_item(f.y, CL_EL_ITEM_BUFFER, 0, &dp, &len, NULL) == COLLAB_ERR_ARG);
        int before = f.nsent;
        data(&f, fs->to, 50, CL_EL_ITEM_BUFFER, 0, 0, EL_SMALL, wrong);
        CHECK(f.nsent > before); /* fetched again */
    }
    /* Everything else served honestly (the wrong FETCH's answer skipped). */
    for (; from < f.nsent; from++) {
        const el_sent_t x = f.sent[from];
        if (x.m.type != CL_EL_FETCH || &f.sent[from] == fs)
            continue;
        uint64_t size;
        const uint8_t *b = el_state_bytes(x.m.what, x.m.index, &size);
        data(&f, x.to, 50, x.m.what, x.m.index, x.m.offset, x.m.len, b + x.m.offset);
    }
    CHECK(eng_sync_done(f.y));
    check_written(dir, 50, 12);
    stop(&f);
    rmdir_all(dir);

    /* (f) Two members, one declaring buffer 0 otherwise: no majority. */
    char dir2[] = "/tmp/cl_engine_checkpoint_test.XXXXXX";
    make_dir(dir2);
    start(&f, dir2);
    f.peers[3].state = CL_PEER_GONE;
    f.peers[3].in_group = false;
    notice(&f, 1, f.peers[0].key, 60, 14);
    from = f.nsent;
    hashes(&f, 1, 60, false);
    hashes(&f, 2, 60, true);
    serve_all(&f, &from, 60, NULL);
    CHECK(eng_sync_done(f.y));
    CHECK(eng_sync_split(f.y));
    CHECK(newest(dir2, &(cl_ckpt_t){0}) == 1);
    stop(&f);
    rmdir_all(dir2);
}

/* A member's CKPT of sub type `sub` from record `from`. */
static bool ckpt_msg(fake_t *f, int from, int sub, uint64_t step, uint64_t every,
                     const uint8_t *key)
{
    cl_elmsg_t m;
    memset(&m, 0, sizeof m);
    m.type = CL_EL_CKPT;
    m.ckpt = (uint8_t)sub;
    m.step = step;
    m.every = every;
    m.s = 10;
    m.prefix = 1;
    m.sigs = s_sigs;
    m.nsigs = 1;
    if (key != NULL)
        memcpy(m.key, key, 32);
    return eng_ckpt_on_message(f->c, &f->peers[from], f->peers[from].key, &m);
}

/* (g) The admitter: a monitor's REQUEST, the NOTICE at the first step
   boundary far enough ahead, to every group member and the monitor, and
   the copy for the monitor expected. */
static void test_admitter(void)
{
    /* The world stream: 3 start-up collectives, then steps of 2. */
    cl_stream_t *w = cl_stream_new("the world communicator", 2);
    CHECK(w != NULL);
    if (w == NULL)
        return;
    uint32_t pre[3] = {0x51, 0x52, 0x53};
    for (int i = 0; i < 3; i++)
        (void)cl_stream_record(w, pre[i], NULL, NULL);
    for (int i = 0; i < 20; i++)
        (void)cl_stream_record(w, i % 2 == 0 ? 0x60u : 0x61u, NULL, NULL);
    CHECK(cl_stream_prefix(w) == 3 && cl_stream_period(w) == 2);
    static fake_t f;
    start_as(&f, NULL, 1, w); /* the admitter */
    const uint8_t *mon = f.peers[0].key;
    /* Nothing asked: a boundary does nothing. */
    eng_ckpt_on_boundary(f.c, 21, 21);
    CHECK(f.nsent == 0 && f.copies == 0);
    /* A REQUEST from a member that is no monitor is ignored. */
    CHECK(ckpt_msg(&f, 2, CL_EL_CKPT_REQUEST, 0, 2, NULL));
    eng_ckpt_on_boundary(f.c, 21, 21);
    CHECK(f.nsent == 0);
    /* The monitor's REQUEST (its last checkpoint at step 0, every 2). */
    CHECK(ckpt_msg(&f, 0, CL_EL_CKPT_REQUEST, 0, 2, NULL));
    /* Not a boundary the stream knows ahead: 21 + 8 = 29, a boundary
       (3 + 2m): s = 29, step 13. */
    eng_ckpt_on_boundary(f.c, 21, 21);
    CHECK(sent_of(&f, 0, NULL, CL_EL_CKPT, CL_EL_CKPT_NOTICE) == 3);
    CHECK(sent_of(&f, 0, mon, CL_EL_CKPT, CL_EL_CKPT_NOTICE) == 1);
    CHECK(sent_of(&f, 0, f.peers[2].key, CL_EL_CKPT, CL_EL_CKPT_NOTICE) == 1);
    CHECK(sent_of(&f, 0, f.peers[3].key, CL_EL_CKPT, CL_EL_CKPT_NOTICE) == 1);
    CHECK(sent_of(&f, 0, f.peers[1].key, CL_EL_CKPT, CL_EL_CKPT_NOTICE) == 0);
    const el_sent_t *n = last_of(&f, CL_EL_CKPT, CL_EL_CKPT_NOTICE);
    CHECK(n != NULL && n->m.s == 29 && n->m.step == 13 && n->m.prefix == 3 && n->m.nsigs == 3 &&
          memcmp(n->m.key, mon, 32) == 0);
    CHECK(f.nsigs == 3 && f.sigs[0] == 0x51 && f.sigs[2] == 0x53);
    CHECK(f.copies == 1 && f.copy_s == 29 && memcmp(f.copy_key, mon, 32) == 0 && !f.copy_now);
    /* Done: the next boundary sends nothing more. */
    int before = f.nsent;
    eng_ckpt_on_boundary(f.c, 23, 23);
    CHECK(f.nsent == before);
    /* A REQUEST whose next checkpoint is far off waits for its step; and
       no two checkpoints within a second. */
    CHECK(ckpt_msg(&f, 0, CL_EL_CKPT_REQUEST, 13, 10, NULL));
    f.now += 2.0;
    eng_ckpt_on_boundary(f.c, 25, 25); /* step 15 < 23 */
    CHECK(f.nsent == before);
    eng_ckpt_on_boundary(f.c, 41, 41); /* s 49, step 23 */
    CHECK(sent_of(&f, before, mon, CL_EL_CKPT, CL_EL_CKPT_NOTICE) == 1);
    n = last_of(&f, CL_EL_CKPT, CL_EL_CKPT_NOTICE);
    CHECK(n != NULL && n->m.s == 49 && n->m.step == 23);
    CHECK(ckpt_msg(&f, 0, CL_EL_CKPT_REQUEST, 23, 1, NULL));
    before = f.nsent;
    eng_ckpt_on_boundary(f.c, 51, 51);
    CHECK(f.nsent == before); /* within MIN_GAP of the last */
    f.now += 1.5;
    eng_ckpt_on_boundary(f.c, 53, 53);
    CHECK(sent_of(&f, before, mon, CL_EL_CKPT, CL_EL_CKPT_NOTICE) == 1);
    stop(&f);
    cl_stream_destroy(&w);
}

/* (h) A member: the admitter's NOTICE makes it keep a copy for the
   monitor; another member's, or one naming no monitor, does not.  (i) A
   new first peer: a monitor's RESUME taken once, passed on as the
   coordinator that resumed from it; refused once its program ran. */
static void test_member_resume(void)
{
    static fake_t f;
    start_as(&f, NULL, 2, NULL);
    const uint8_t *mon = f.peers[0].key;
    CHECK(ckpt_msg(&f, 3, CL_EL_CKPT_NOTICE, 4, 0, mon));
    CHECK(ckpt_msg(&f, 1, CL_EL_CKPT_NOTICE, 4, 0, f.peers[3].key));
    CHECK(f.copies == 0);
    CHECK(ckpt_msg(&f, 1, CL_EL_CKPT_NOTICE, 4, 0, mon));
    CHECK(f.copies == 1 && f.copy_s == 10 && memcmp(f.copy_key, mon, 32) == 0 && f.copy_now);
    /* A member never answers QUERY or FETCH here: the donor's. */
    cl_elmsg_t q;
    memset(&q, 0, sizeof q);
    q.type = CL_EL_QUERY;
    CHECK(!eng_ckpt_on_message(f.c, &f.peers[3], f.peers[3].key, &q));

    /* (i) */
    eng_ckpt_resume_t r;
    CHECK(!eng_ckpt_take_resume(f.c, &r));
    CHECK(ckpt_msg(&f, 3, CL_EL_CKPT_RESUME, 4, 0, NULL)); /* no monitor: ignored */
    CHECK(!eng_ckpt_take_resume(f.c, &r));
    CHECK(ckpt_msg(&f, 0, CL_EL_CKPT_RESUME, 4, 0, NULL));
    memset(&r, 0, sizeof r);
    CHECK(eng_ckpt_take_resume(f.c, &r));
    CHECK(r.s == 10 && r.step == 4 && r.prefix == 1 && r.sigs != NULL && r.sigs[0] == s_sigs[0] &&
          memcmp(r.key, mon, 32) == 0);
    CHECK(!eng_ckpt_take_resume(f.c, &r)); /* once */
    /* As the coordinator while the group forms, it passes it on. */
    uint8_t newcomer[32];
    memset(newcomer, 0x77, 32);
    f.closed = false;
    eng_ckpt_on_admit_rank(f.c, newcomer);
    CHECK(sent_of(&f, 0, newcomer, CL_EL_CKPT, CL_EL_CKPT_RESUME) == 0); /* not resumed yet */
    eng_ckpt_resuming(f.c);
    eng_ckpt_on_admit_rank(f.c, newcomer);
    const el_sent_t *x = last_of(&f, CL_EL_CKPT, CL_EL_CKPT_RESUME);
    CHECK(sent_of(&f, 0, newcomer, CL_EL_CKPT, CL_EL_CKPT_RESUME) == 1 && x != NULL &&
          x->m.s == 10 && x->m.step == 4 && memcmp(x->m.key, mon, 32) == 0);
    /* Its program ran already: a RESUME is refused. */
    f.fresh = false;
    CHECK(ckpt_msg(&f, 0, CL_EL_CKPT_RESUME, 4, 0, NULL));
    CHECK(!eng_ckpt_take_resume(f.c, &r));
    stop(&f);
}

int main(void)
{
    if (sodium_init() < 0)
        return 1;
    CHECK(cl_log_configure(CL_LOG_ERROR, NULL) == 0);
    bool filled = el_state_init();
    CHECK(filled);
    if (!filled)
        return 1;

    test_fetch_write();
    test_fetch_replaced();
    test_silent_replaced();
    test_given_up();
    test_refused();
    test_admitter();
    test_member_resume();

    el_state_free();
    printf("cl_engine_checkpoint_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
