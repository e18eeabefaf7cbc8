/*  el_engine_fake.h - the fake engine of cl_engine_elastic_test.c: the
    elastic layer's context (eng_el_ctx_t) on real peer records of A
    (rank 0, the coordinator and the admitter), B (rank 1) and C (rank 2,
    joined after the group formed, outside it), a record of what went
    out, the world stream as a handle; an ADMIT to remember; and the
    components a view change calls (admitter, admittee, donor), created
    as cl_engine_elastic_ctx.c does, on stubs.

    Header-only, for that one test; every function is static.
*/
#ifndef EL_ENGINE_FAKE_H_INCLUDED
#define EL_ENGINE_FAKE_H_INCLUDED

#include "engine/cl_engine_elastic_int.h"

#include "mpi_collab.h"

#include <string.h>

#include "el_fixture.h"
#include "selftest.h"

#define MAXSENT 16

static uint8_t K[3][32]; /* A, B, C */

/* The fake engine, struct cl_engine: the argument of the layer's own
   context (eng_el_ctx_t) and of the admitter's, the admittee's and the
   donor's typed contexts, which see it only as an incomplete type
   (docs/architecture.md, "Typed contexts"). */
typedef struct cl_engine {
    cl_config_t cfg;
    uint8_t self[32];
    cl_member_t *mb;
    eng_state_t state;
    int rank;
    uint64_t known[4]; /* generations recorded here (listing A, B, C) */
    int nknown;
    int ranks[3];
    group_gen_t gen;
    el_sent_t sent[MAXSENT]; /* decoded, no pointers kept */
    int nsent;
    int replies;
    uint8_t reply_type;
    uint64_t reply_epoch;
    int bans;
    double ban_seconds;
    int self_outs;
    /* The world stream: a handle, its running collective, the restarts. */
    int world; /* its address is the handle */
    bool running;
    uint64_t run_seq, run_gen;
    int restarts;
    uint64_t restart_gen;
    cl_timer_t *timers; /* the components' (test_views) */
    zlist_t *queue;     /* the world stream's queue (test_adopt) */
    /* The layer the components ask (components_new). */
    struct eng_elastic *el;
} fake_t;

static eng_state_t f_state(fake_t *f)
{
    return f->state;
}

static int f_rank(fake_t *f)
{
    return f->rank;
}

static int f_send(fake_t *f, const uint8_t key[32], cl_wire_msg_t *m)
{
    cl_elmsg_t em;
    CHECK(m->hdr.type == CL_MSG_ELASTIC);
    if (cl_elmsg_decode(m->hdr.sub, m->payload, m->payload_len, &em) != COLLAB_OK)
        return COLLAB_ERR_ARG;
    int rc = el_sent_push(f->sent, &f->nsent, MAXSENT, key, &em);
    cl_elmsg_clear(&em);
    return rc;
}

/* The view sent back, as eng_member_reply_view sends it. */
static void f_reply_view(fake_t *f, const uint8_t key[32])
{
    (void)key;
    f->replies++;
    f->reply_type = CL_MSG_VIEW;
    f->reply_epoch = cl_member_epoch(f->mb);
}

static void f_ban(fake_t *f, const uint8_t key[32], double seconds)
{
    (void)key;
    f->bans++;
    f->ban_seconds = seconds;
}

static void f_self_out(fake_t *f)
{
    f->self_outs++;
}

static const group_gen_t *f_gen(fake_t *f, uint64_t gen)
{
    for (int i = 0; i < f->nknown; i++)
        if (f->known[i] == gen) {
            f->gen.gen = gen;
            return &f->gen;
        }
    return NULL;
}

static bool f_in_gen(fake_t *f, uint64_t gen)
{
    return f_gen(f, gen) != NULL;
}

/* The world stream, a handle the logic only hands back (test_views
   sets `running`; the other tests never ask for more than its
   existence). */
static struct stream *f_world(fake_t *f)
{
    return (struct stream *)&f->world;
}

static bool f_running(fake_t *f, struct stream *s, uint64_t *seq, uint64_t *gen)
{
    CHECK(s == f_world(f));
    *seq = f->run_seq;
    *gen = f->run_gen;
    return f->running;
}

static void f_restart(fake_t *f, struct stream *s, uint64_t gen)
{
    CHECK(s == f_world(f) && f->running);
    f->restarts++;
    f->restart_gen = gen;
    f->run_gen = gen;
}

static uint64_t f_next_seq(fake_t *f, struct stream *s)
{
    CHECK(s == f_world(f));
    return f->running ? f->run_seq + 1 : 0;
}

static size_t f_queued(fake_t *f, struct stream *s)
{
    (void)s;
    return f->queue != NULL ? zlist_size(f->queue) : 0;
}

static collab_request_t *f_queue_head(fake_t *f, struct stream *s)
{
    (void)s;
    return f->queue != NULL ? zlist_head(f->queue) : NULL;
}

static void f_dequeue(fake_t *f, struct stream *s, collab_request_t *req)
{
    (void)s;
    zlist_remove(f->queue, req);
}

static struct eng_elastic *fake_init(fake_t *f, int self)
{
    memset(f, 0, sizeof *f);
    f->cfg.timeout = 1.0;
    f->cfg.ban_time = 60.0;
    memcpy(f->self, K[self], 32);
    f->state = ENG_MEMBER;
    f->rank = self;
    f->mb = el_member_of_three(K, self, 100.0);
    CHECK(f->mb != NULL);
    for (int i = 0; i < 3; i++)
        f->ranks[i] = i;
    f->gen.n = 3;
    f->gen.world = f->ranks;
    eng_el_ctx_t ctx = {.arg = f,
                        .cfg = &f->cfg,
                        .self_key = f->self,
                        .mb = f->mb,
                        .state = f_state,
                        .rank = f_rank,
                        .send = f_send,
                        .reply_view = f_reply_view,
                        .ban = f_ban,
                        .self_out = f_self_out,
                        .gen = f_gen,
                        .in_gen = f_in_gen,
                        .world = f_world,
                        .next_seq = f_next_seq,
                        .running = f_running,
                        .restart = f_restart,
                        .queued = f_queued,
                        .queue_head = f_queue_head,
                        .dequeue = f_dequeue};
    struct eng_elastic *el = eng_elastic_new(&ctx);
    CHECK(el != NULL);
    return el;
}

static void fake_fini(fake_t *f, struct eng_elastic **el)
{
    eng_elastic_destroy(el);
    CHECK(*el == NULL);
    eng_elastic_destroy(el); /* NULL is fine */
    cl_member_destroy(&f->mb);
}

/* An ADMIT at sequence s under generation gen with one joiner (C), a
   re-admitted straggler weighing 0 until w0_end when `readmit`. */
static cl_elmsg_t admit_of(uint64_t s, uint64_t gen, cl_el_joiner_t *j, bool readmit,
                           uint64_t w0_end)
{
    memset(j, 0, sizeof *j);
    memcpy(j->key, K[2], 32);
    j->rank = 2;
    j->flags = readmit ? CL_EL_JOINER_READMIT : 0;
    cl_elmsg_t m;
    memset(&m, 0, sizeof m);
    m.type = CL_EL_ADMIT;
    m.s = s;
    m.gen = gen;
    m.w0_end = readmit ? w0_end : s; /* as an admitter sends it */
    m.joiners = j;
    m.njoiners = 1;
    return m;
}

/* The components a view change calls (the admitter, the admittee, the
   donor), created as cl_engine_elastic_ctx.c does, on stubs: none of
   them acts here (the admitter may not admit, nobody waits, nothing is
   served). */
static double c_now(fake_t *f)
{
    (void)f;
    return 100.0;
}

static int c_send(fake_t *f, const uint8_t key[32], const cl_elmsg_t *m)
{
    (void)f;
    (void)key;
    (void)m;
    return COLLAB_OK;
}

static bool c_false(fake_t *f)
{
    (void)f;
    return false;
}

static bool c_member(fake_t *f)
{
    return f->state == ENG_MEMBER;
}

static bool c_split(fake_t *f, const cl_el_joiner_t *js, uint32_t nj)
{
    (void)f;
    (void)js;
    (void)nj;
    return false;
}

static void c_remember(fake_t *f, const cl_elmsg_t *admit)
{
    (void)f;
    (void)admit;
}

static void c_commit(fake_t *f, cl_member_delta_t *d)
{
    (void)f;
    cl_member_delta_clear(d);
}

static void c_alone(fake_t *f, uint64_t s, const cl_el_joiner_t *js, uint32_t nj)
{
    (void)f;
    (void)s;
    (void)js;
    (void)nj;
}

static void c_seq2(fake_t *f, uint64_t a, uint64_t b)
{
    (void)f;
    (void)a;
    (void)b;
}

/* This peer never forms the group again here. */
static bool c_regroup(fake_t *f)
{
    (void)f;
    return false;
}

static const cl_peer_t *c_admitter(fake_t *f)
{
    return cl_member_admitter(f->mb);
}

static void c_seen(fake_t *f, const cl_elmsg_t *m, const uint8_t *admitter)
{
    (void)f;
    (void)m;
    (void)admitter;
}

static int c_submit(fake_t *f, collab_request_t *req, uint64_t seq, uint64_t next)
{
    (void)f;
    (void)req;
    (void)seq;
    (void)next;
    return COLLAB_OK;
}

static size_t c_take_back(fake_t *f, collab_request_t **taken, size_t max)
{
    (void)f;
    (void)taken;
    (void)max;
    return 0;
}

static const el_sync_t *c_sync(fake_t *f)
{
    (void)f;
    return NULL;
}

static bool c_sync_start(fake_t *f, uint64_t s, const cl_elmsg_t *admit, const uint8_t *admitter)
{
    (void)f;
    (void)s;
    (void)admit;
    (void)admitter;
    return false;
}

static bool c_sync_start_one(fake_t *f, uint64_t s, const uint8_t key[32])
{
    (void)f;
    (void)s;
    (void)key;
    return false;
}

static int c_sync_want(fake_t *f, int what, uint64_t index, uint64_t size)
{
    (void)f;
    (void)what;
    (void)index;
    (void)size;
    return 0;
}

static void c_void(fake_t *f)
{
    (void)f;
}

static bool c_take_resume(fake_t *f, eng_ckpt_resume_t *r)
{
    (void)f;
    (void)r;
    return false;
}

static void c_leave(fake_t *f, int status)
{
    (void)f;
    (void)status;
}

static const char *c_kind_name(cl_coll_kind_t kind)
{
    (void)kind;
    return "collective";
}

static void c_stand(fake_t *x, el_st_field_t f, uint64_t v)
{
    eng_elastic_stand(x->el, f, v);
}

static int c_can_serve(fake_t *f, uint64_t s)
{
    (void)f;
    (void)s;
    return 0;
}

static void components_new(fake_t *f, struct eng_elastic *el)
{
    f->timers = cl_timer_new(8);
    CHECK(f->timers != NULL);
    f->el = el;
    eng_admitter_ctx_t mctx = {.arg = f,
                               .cfg = &f->cfg,
                               .self_key = f->self,
                               .mb = f->mb,
                               .stream = el->stream,
                               .startup = el->startup,
                               .reg = el->reg,
                               .kinds = el->kinds,
                               .timers = f->timers,
                               .now = c_now,
                               .send = c_send,
                               .may_admit = c_false,
                               .split = c_split,
                               .remember = c_remember,
                               .commit = c_commit,
                               .serve_alone = c_alone,
                               .boundary = c_seq2,
                               .idle = c_seq2};
    el->admitter = eng_admitter_new(&mctx);
    eng_admittee_ctx_t tctx = {.arg = f,
                               .cfg = &f->cfg,
                               .self_key = f->self,
                               .mb = f->mb,
                               .st = &el->st,
                               .stream = el->stream,
                               .reg = el->reg,
                               .startup = el->startup,
                               .timers = f->timers,
                               .now = c_now,
                               .send = c_send,
                               .member = c_member,
                               .admitter = c_admitter,
                               .regroup = c_regroup,
                               .seen = c_seen,
                               .submit = c_submit,
                               .renumber = c_seq2,
                               .take_back = c_take_back,
                               .sync = c_sync,
                               .sync_start = c_sync_start,
                               .sync_start_one = c_sync_start_one,
                               .sync_want = c_sync_want,
                               .sync_check = c_void,
                               .sync_stop = c_void,
                               .take_resume = c_take_resume,
                               .resuming = c_void,
                               .leave = c_leave,
                               .signature = eng_el_signature,
                               .result_span = eng_el_result_span,
                               .kind_name = c_kind_name,
                               .stand = c_stand};
    el->admittee = eng_admittee_new(&tctx);
    eng_donor_ctx_t dctx = {.arg = f,
                            .reg = el->reg,
                            .startup = el->startup,
                            .cfg = &f->cfg,
                            .timers = f->timers,
                            .now = c_now,
                            .send = c_send,
                            .can_serve = c_can_serve};
    el->donor = eng_donor_new(&dctx);
    CHECK(el->admitter != NULL && el->admittee != NULL && el->donor != NULL);
}

static void components_free(fake_t *f, struct eng_elastic *el)
{
    eng_admittee_destroy(&el->admittee);
    eng_admitter_destroy(&el->admitter);
    eng_donor_destroy(&el->donor);
    cl_timer_destroy(&f->timers);
}

#endif
