/*  cl_engine_streams_test.c - selftest of the collective streams
    (cl_engine_coll.c, _coll_start, _coll_env, _route, _fast) on fake
    contexts: two peers A (world rank 0) and B (rank 1), each its own
    eng_cs_t over real peer records of one formed group of two and real
    all-reduces (src/coll/); what one sends (the context's send) the test
    hands to the other (eng_coll_on_message).  The other components the
    streams ask (departures, groups, authority, suspicion, point-to-point,
    reports) are stubbed: nobody left, one group, nothing refused.

    Checked: calls on a communicator get its sequences in order, run one
    at a time and complete in that order; a message for a collective this
    peer has not started yet waits in the stream's early buffer (counted
    against its sender) and is taken when the collective starts; a
    stream a message opened for a communicator this program has not
    created is retired after ENG_STREAM_RETIRE_AFTER, out of the table
    with its early message, and taken back, message and all, when the
    program creates the communicator.
*/
#include "engine/cl_engine_coll_int.h"

#include "selftest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the components the streams ask, stubbed ------------------------- */

int eng_leave_status(eng_leave_t *l, int w, uint64_t comm, uint64_t seq)
{
    (void)l, (void)w, (void)comm, (void)seq;
    return -1; /* nobody said goodbye */
}
bool eng_leave_cut(eng_leave_t *l, int w, uint64_t comm, uint64_t seq)
{
    (void)l, (void)w, (void)comm, (void)seq;
    return false;
}
int eng_leave_world_of(eng_leave_t *l, const uint8_t key[32])
{
    (void)l, (void)key;
    return -1;
}
bool eng_leave_key(eng_leave_t *l, int w, uint8_t key[32])
{
    (void)l, (void)w, (void)key;
    return false;
}
int eng_leave_contributors(eng_leave_t *l, uint64_t comm, uint64_t seq, int *out, int max)
{
    (void)l, (void)comm, (void)seq, (void)out, (void)max;
    return 0;
}
bool eng_groups_split_applies(eng_groups_t *g, const collab_comm_t *comm, cl_coll_kind_t kind,
                              int k)
{
    (void)g, (void)comm, (void)kind, (void)k;
    return false;
}
int eng_groups_mine(eng_groups_t *g, int self, uint64_t seq, int k, int *rank, const double *weight,
                    const int *client)
{
    (void)g, (void)self, (void)seq, (void)rank, (void)weight, (void)client;
    return k;
}
void eng_auth_refused_data(eng_auth_t *a, const cl_peer_t *p, int sub, uint32_t part)
{
    (void)a, (void)p, (void)sub, (void)part;
}
void eng_suspect_overdrawn(eng_suspect_t *s, const cl_peer_t *p)
{
    (void)s, (void)p;
}
size_t eng_p2p_coll_waiting(const eng_p2p_t *self, int w)
{
    (void)self, (void)w;
    return 0;
}
bool eng_p2p_coll_refuse(eng_p2p_t *self, const cl_peer_t *p, size_t len)
{
    (void)self, (void)p, (void)len;
    return false;
}
int eng_p2p_coll_admit(eng_p2p_t *self, const cl_peer_t *from, size_t len)
{
    (void)self, (void)from, (void)len;
    return 1;
}
void eng_p2p_comm_free(eng_p2p_t *self, uint64_t comm)
{
    (void)self, (void)comm;
}
void eng_report_coll_done(eng_report_t *self, uint64_t comm_id, const collab_request_t *req,
                          int ncontrib, const collab_info_t *info, double now)
{
    (void)self, (void)comm_id, (void)req, (void)ncontrib, (void)info, (void)now;
}

/* --- two fake engines ------------------------------------------------ */

static double s_now = 100.0;
static uint8_t s_keys[2][32];
static cl_identity_t *s_ids[2]; /* the peers' identities (pair keys, proofs) */

/* A message one peer sent: delivered to the other by deliver(). */
typedef struct {
    int from, to; /* world ranks */
    cl_wire_hdr_t hdr;
    size_t len;
    uint8_t *data;
} sent_t;

#define MAXSENT 256
static sent_t s_sent[MAXSENT];
static int s_nsent;

/* The fake engine: the context's argument, struct cl_engine, which the
   component sees only as an incomplete type (docs/architecture.md). */
typedef struct cl_engine {
    int rank;
    cl_config_t cfg;
    cl_member_t *mb;
    cl_timer_t *timers;
    eng_cs_t *cs;
    uint64_t done[16]; /* sequences completed, in order (el_on_done) */
    int ndone;
    int nseen;         /* large data messages reported (data_seen) */
    size_t seen_bytes; /* ... their bytes */
} fake_t;

static double f_now(fake_t *f)
{
    (void)f;
    return s_now;
}
static int f_rank(fake_t *f)
{
    return f->rank;
}
static int f_world_size(fake_t *f)
{
    (void)f;
    return 2;
}
static bool f_yes(fake_t *f)
{
    (void)f;
    return true;
}
static bool f_no(fake_t *f)
{
    (void)f;
    return false;
}
static uint64_t f_zero(fake_t *f)
{
    (void)f;
    return 0;
}
static int f_send(fake_t *f, const cl_peer_t *to, cl_wire_msg_t *m)
{
    CHECK(s_nsent < MAXSENT);
    if (s_nsent >= MAXSENT)
        return COLLAB_ERR_NO_MEM;
    sent_t *x = &s_sent[s_nsent++];
    x->from = f->rank;
    x->to = to->rank;
    x->hdr = m->hdr;
    x->len = m->payload_len;
    x->data = malloc(x->len > 0 ? x->len : 1);
    CHECK(x->data != NULL);
    if (x->len > 0)
        memcpy(x->data, m->payload, x->len);
    return COLLAB_OK;
}
static const char *f_desc(const cl_peer_t *p, char *out, size_t len)
{
    snprintf(out, len, "rank %d", p != NULL ? p->rank : -1);
    return out;
}
static void f_set_info(fake_t *f, const collab_info_t *info)
{
    (void)f, (void)info;
}
static void f_peer(fake_t *f, const cl_peer_t *p)
{
    (void)f, (void)p;
}
static void f_late(fake_t *f, const cl_peer_t *p, int reason)
{
    (void)f, (void)p, (void)reason;
}
static int f_verify_target(fake_t *f, const int *ranks, int n, const collab_comm_t *comm)
{
    (void)f, (void)ranks, (void)n, (void)comm;
    return 0;
}
static void f_void(fake_t *f)
{
    (void)f;
}
static bool f_on_post(fake_t *f, stream_t *s, collab_request_t *req, bool again)
{
    (void)f, (void)s, (void)req, (void)again;
    return false;
}
static void f_on_done(fake_t *f, stream_t *s, collab_request_t *req, int status)
{
    CHECK(status == COLLAB_OK);
    /* What the elastic layer reads at a completion: the collective that
       ends, still the stream's running one. */
    uint64_t seq = 99, gen = 99;
    int nmismatch = -1, ncontrib = -1;
    CHECK(eng_stream_finishing(s, &seq, &gen, &nmismatch, &ncontrib));
    CHECK(seq == req->coll.seq && nmismatch == 0 && ncontrib == 2);
    CHECK(eng_stream_running(s, &seq, &gen) && seq == req->coll.seq);
    if (f->ndone < 16)
        f->done[f->ndone++] = req->coll.seq;
}
static void f_data_seen(fake_t *f, const cl_peer_t *p, size_t bytes, double now)
{
    CHECK(p == cl_member_at_rank(f->mb, 1 - f->rank) && bytes >= 65536);
    f->nseen++;
    f->seen_bytes += bytes;
    cl_member_data_seen(f->mb, p->key, bytes, now);
}
static void f_on_fast(fake_t *f, stream_t *s, const collab_request_t *req)
{
    (void)f, (void)s, (void)req;
}
static bool f_fast_ok(fake_t *f, stream_t *s)
{
    (void)f, (void)s;
    return false;
}
static uint64_t f_choose_gen(fake_t *f, stream_t *s, uint64_t seq)
{
    (void)f, (void)s, (void)seq;
    return ENG_CS_GEN_DEFAULT;
}
static bool f_gen_ok(fake_t *f, stream_t *s, uint64_t seq, uint64_t gen)
{
    (void)f, (void)s, (void)seq, (void)gen;
    return true;
}
static int f_route(fake_t *f, stream_t *s, uint64_t seq, uint64_t cur, uint64_t hgen)
{
    (void)f, (void)s, (void)seq, (void)cur, (void)hgen;
    return ENG_CS_ROUTE_DEFAULT;
}
static bool f_takes_part(fake_t *f, const collab_comm_t *comm, int w, uint64_t seq, double *weight)
{
    (void)f, (void)comm, (void)w, (void)seq, (void)weight;
    return true;
}

/* The records of the group of two (rank 0 founded, rank 1 admitted, the
   group formed) as peer `self` holds them. */
static cl_member_t *records_of(int self)
{
    cl_settings_t set = {2, false, 0, 2, 0, 1, 16, false};
    cl_member_t *ct = cl_member_new(s_keys[0]);
    cl_member_delta_t d;
    CHECK(cl_member_found(ct, 0, "/ip4/127.0.0.1/tcp/1/p2p/a", false, 1.0, &set) == 0);
    CHECK(cl_member_admit(ct, s_keys[1], 1, "/ip4/127.0.0.1/tcp/2/p2p/b", false, 1.0, 0, &d) == 0);
    cl_member_delta_clear(&d);
    CHECK(cl_member_close_group(ct, &d) == 1);
    cl_member_delta_clear(&d);
    if (self == 0)
        return ct;
    cl_wire_view_t v;
    CHECK(cl_member_view(ct, &v) == 0);
    cl_member_t *mb = cl_member_new(s_keys[self]);
    CHECK(cl_member_apply_view(mb, &v, s_now, &d) == 1);
    cl_member_delta_clear(&d);
    free(v.members);
    cl_member_destroy(&ct);
    return mb;
}

static fake_t *fake_new(int rank)
{
    fake_t *f = calloc(1, sizeof *f);
    CHECK(f != NULL);
    f->rank = rank;
    f->cfg.timeout = 2.0;
    f->mb = records_of(rank);
    f->timers = cl_timer_new(8);
    CHECK(f->mb != NULL && f->timers != NULL);
    CHECK(cl_member_group_closed(f->mb));
    eng_cs_ctx_t ctx = {.arg = f,
                        .cfg = &f->cfg,
                        .id = s_ids[rank],
                        .mb = f->mb,
                        .timers = f->timers,
                        .now = f_now,
                        .rank = f_rank,
                        .world_size = f_world_size,
                        .is_member = f_yes,
                        .steps = f_zero,
                        .stopping = f_no,
                        .send = f_send,
                        .desc = f_desc,
                        .set_info = f_set_info,
                        .answered = f_peer,
                        .report_late = f_late,
                        .report_corrupt = f_peer,
                        .verify_target = f_verify_target,
                        .request_match = f_void,
                        .el_in_doubt = f_no,
                        .el_on_post = f_on_post,
                        .el_on_done = f_on_done,
                        .el_view_changed = f_void,
                        .el_on_fast = f_on_fast,
                        .el_fast_ok = f_fast_ok,
                        .el_period = f_zero,
                        .el_choose_gen = f_choose_gen,
                        .el_gen_ok = f_gen_ok,
                        .el_route = f_route,
                        .el_takes_part = f_takes_part};
    ctx.data_seen = f_data_seen;
    memcpy(ctx.self_key, s_keys[rank], 32);
    f->cs = eng_cs_new(&ctx);
    CHECK(f->cs != NULL);
    eng_coll_view_changed(f->cs); /* the group's generation recorded */
    eng_coll_member(f->cs);
    return f;
}

static void fake_free(fake_t *f)
{
    eng_cs_destroy(&f->cs);
    CHECK(isinf(cl_timer_next(f->timers)));
    cl_timer_destroy(&f->timers);
    cl_member_destroy(&f->mb);
    free(f);
}

/* Hands every message sent so far to its addressee (and what those send
   in turn), in order. */
static void deliver(fake_t *peers[2])
{
    for (int i = 0; i < s_nsent; i++) {
        sent_t *x = &s_sent[i];
        fake_t *to = peers[x->to];
        cl_wire_msg_t m;
        memset(&m, 0, sizeof m);
        m.hdr = x->hdr;
        m.payload = x->data;
        m.payload_len = x->len;
        eng_coll_on_message(to->cs, cl_member_at_rank(to->mb, x->from), &m);
        free(x->data);
        x->data = NULL;
    }
    s_nsent = 0;
}

/* An all-reduce (int32 SUM of one element) on comm. */
static collab_request_t *allreduce(collab_comm_t *comm, int32_t *in, int32_t *out)
{
    collab_request_t *r = cl_request_new(CL_OP_COLL);
    CHECK(r != NULL);
    r->comm = comm;
    r->coll.kind = CL_COLL_ALLREDUCE;
    r->coll.root = -1;
    r->coll.dtype = COLLAB_INT32;
    r->coll.op.kind = COLLAB_OP_SUM;
    r->coll.count = 1;
    r->coll.sendbuf = in;
    r->coll.recvbuf = out;
    r->t_start = s_now;
    return r;
}

/* Order, and a message taken at its collective's start. */
static void test_order_and_early(void)
{
    fake_t *p[2] = {fake_new(0), fake_new(1)};
    collab_comm_t *wa = cl_comm_new_world(2, 0), *wb = cl_comm_new_world(2, 1);
    int32_t ain[2] = {1, 10}, bin[2] = {2, 20}, aout[2] = {0, 0}, bout[2] = {0, 0};
    collab_request_t *ra[2] = {allreduce(wa, &ain[0], &aout[0]), allreduce(wa, &ain[1], &aout[1])};
    collab_request_t *rb[2] = {allreduce(wb, &bin[0], &bout[0]), allreduce(wb, &bin[1], &bout[1])};

    /* A calls twice: sequences 0 and 1, the second waits for the first. */
    eng_coll_submit(p[0]->cs, ra[0]);
    eng_coll_submit(p[0]->cs, ra[1]);
    CHECK(ra[0]->coll.seq == 0 && ra[1]->coll.seq == 1);
    stream_t *sa = eng_cs_stream(p[0]->cs, CL_COMM_WORLD_ID, false);
    CHECK(sa != NULL && sa->active_req == ra[0] && zlist_size(sa->queue) == 1);
    CHECK(s_nsent > 0); /* its part of collective 0 went out */
    /* The stream as others read it (cl_engine_coll.h: eng_stream_*). */
    uint64_t seq = 99, gen = 99;
    int nmismatch = -1, ncontrib = -1;
    CHECK(eng_stream_is_world(sa) && !eng_stream_is_world(NULL));
    CHECK(eng_stream_comm_id(sa) == CL_COMM_WORLD_ID && eng_stream_comm(sa) == wa);
    CHECK(eng_stream_next_seq(sa) == 2);
    CHECK(eng_stream_queued(sa) == 1 && eng_stream_queue_head(sa) == ra[1]);
    (void)zlist_first(sa->queue);
    (void)zlist_next(sa->queue); /* the cursor past the end: the head is still read */
    CHECK(eng_stream_queue_head(sa) == ra[1]);
    eng_stream_dequeue(sa, ra[1]); /* taken out (the elastic layer hands it on) ... */
    CHECK(eng_stream_queued(sa) == 0 && eng_stream_queue_head(sa) == NULL);
    CHECK(zlist_append(sa->queue, ra[1]) == 0); /* ... and back for the rest of the test */
    CHECK(eng_stream_running(sa, &seq, &gen) && seq == 0 && gen == sa->active_ctx->gen);
    seq = gen = 99;
    CHECK(eng_stream_finishing(sa, &seq, &gen, &nmismatch, &ncontrib));
    CHECK(seq == 0 && gen == sa->active_ctx->gen && nmismatch == 0);

    /* B has not called: A's messages wait in B's early buffer, counted
       against A, on a stream they opened. */
    deliver(p);
    stream_t *sb = eng_cs_stream(p[1]->cs, CL_COMM_WORLD_ID, false);
    CHECK(sb != NULL && sb->comm == NULL && sb->active == NULL && sb->buf_head != NULL);
    /* Opened by a message: not the world's yet, nothing runs. */
    seq = gen = 99;
    nmismatch = ncontrib = -1;
    CHECK(!eng_stream_is_world(sb) && eng_stream_comm(sb) == NULL && eng_stream_next_seq(sb) == 0);
    CHECK(!eng_stream_running(sb, &seq, &gen) && seq == 99 && gen == 99);
    CHECK(!eng_stream_finishing(sb, &seq, &gen, &nmismatch, &ncontrib));
    CHECK(seq == 0 && gen == 0 && nmismatch == 0 && ncontrib == 0);
    size_t bytes = 0;
    size_t early = eng_coll_early_queued(p[1]->cs, 0, &bytes);
    CHECK(early > 0 && bytes > 0);
    CHECK(!eng_coll_idle(p[0]->cs) && eng_coll_idle(p[1]->cs));

    /* B's first call starts collective 0 and takes them. */
    eng_coll_submit(p[1]->cs, rb[0]);
    CHECK(rb[0]->coll.seq == 0 && sb->comm == wb);
    CHECK(eng_coll_early_queued(p[1]->cs, 0, &bytes) == 0 && bytes == 0);
    CHECK(sb->buf_head == NULL);
    eng_coll_submit(p[1]->cs, rb[1]);
    for (int k = 0; k < 20 && s_nsent > 0; k++) {
        deliver(p);
        eng_coll_deliver_local(p[0]->cs);
        eng_coll_deliver_local(p[1]->cs);
    }
    for (int i = 0; i < 2; i++) {
        CHECK(cl_request_done(ra[i]) && cl_request_done(rb[i]));
        CHECK(p[i]->ndone == 2 && p[i]->done[0] == 0 && p[i]->done[1] == 1);
        CHECK(p[i]->nseen == 0); /* small messages: no bandwidth sample */
        CHECK(eng_coll_completed(p[i]->cs) == 2);
        CHECK(eng_coll_idle(p[i]->cs));
    }
    CHECK(aout[0] == 3 && bout[0] == 3 && aout[1] == 30 && bout[1] == 30);

    for (int i = 0; i < 2; i++) {
        cl_request_destroy(&ra[i]);
        cl_request_destroy(&rb[i]);
    }
    fake_free(p[0]);
    fake_free(p[1]);
    cl_comm_destroy(&wa);
    cl_comm_destroy(&wb);
}

/* A stream a message opened, retired and taken back. */
static void test_retired(void)
{
    fake_t *p[2] = {fake_new(0), fake_new(1)};
    const int world_of[2] = {0, 1};
    const uint64_t X = 1000, Y = 1001;
    collab_comm_t *xa = cl_comm_new_derived(X, 2, 0, world_of);
    collab_comm_t *xb = cl_comm_new_derived(X, 2, 1, world_of);
    collab_comm_t *ya = cl_comm_new_derived(Y, 2, 0, world_of);
    CHECK(xa != NULL && xb != NULL && ya != NULL);
    int32_t ain = 5, bin = 7, aout = 0, bout = 0, yin = 1, yout = 0;
    collab_request_t *ra = allreduce(xa, &ain, &aout), *rb = allreduce(xb, &bin, &bout);
    collab_request_t *ry = allreduce(ya, &yin, &yout);

    /* A's call on X opens X at B, which has not created X. */
    eng_coll_submit(p[0]->cs, ra);
    deliver(p);
    stream_t *sx = eng_cs_stream(p[1]->cs, X, false);
    CHECK(sx != NULL && sx->comm == NULL && sx->opened_by == 1 && sx->buf_head != NULL);
    size_t bytes = 0, early = eng_coll_early_queued(p[1]->cs, 0, &bytes);
    CHECK(early > 0);

    /* Not yet retired before ENG_STREAM_RETIRE_AFTER: a message for Y
       opening another stream leaves X in the table. */
    s_now += ENG_STREAM_RETIRE_AFTER(p[1]->cfg.timeout) / 2;
    eng_coll_submit(p[0]->cs, ry);
    deliver(p);
    CHECK(eng_cs_stream(p[1]->cs, X, false) == sx && eng_coll_retired(p[1]->cs, X) == NULL);
    /* Past it, the next stream opened retires X with its message. */
    s_now += ENG_STREAM_RETIRE_AFTER(p[1]->cfg.timeout);
    eng_coll_retire_streams(p[1]->cs, s_now, ENG_STREAM_RETIRE_AFTER(p[1]->cfg.timeout));
    CHECK(eng_cs_stream(p[1]->cs, X, false) == NULL);
    CHECK(eng_coll_retired(p[1]->cs, X) == sx && sx->buf_head != NULL);
    CHECK(eng_coll_early_queued(p[1]->cs, 0, &bytes) >= early); /* still counted */

    /* B creates X: the stream comes back, its message taken at the start,
       and the all-reduce completes on both. */
    eng_coll_submit(p[1]->cs, rb);
    CHECK(eng_coll_retired(p[1]->cs, X) == NULL);
    CHECK(eng_cs_stream(p[1]->cs, X, false) == sx && sx->comm == xb);
    for (int k = 0; k < 20 && s_nsent > 0; k++)
        deliver(p);
    CHECK(cl_request_done(ra) && cl_request_done(rb));
    CHECK(aout == 12 && bout == 12);

    cl_request_destroy(&ra);
    cl_request_destroy(&rb);
    fake_free(p[0]); /* ry, never called at B, completes with COLLAB_ERR_NOT_INIT */
    fake_free(p[1]);
    CHECK(cl_request_done(ry));
    cl_request_destroy(&ry);
    cl_comm_destroy(&xa);
    cl_comm_destroy(&xb);
    cl_comm_destroy(&ya);
}

/* Large data messages are reported to membership (the records' only
   writer), small ones not. */
static void test_data_seen(void)
{
    fake_t *p[2] = {fake_new(0), fake_new(1)};
    collab_comm_t *w[2] = {cl_comm_new_world(2, 0), cl_comm_new_world(2, 1)};
    enum { N = 65536 };
    int32_t *in[2], *out[2];
    collab_request_t *r[2];
    for (int i = 0; i < 2; i++) {
        in[i] = calloc(N, sizeof(int32_t));
        out[i] = calloc(N, sizeof(int32_t));
        CHECK(in[i] != NULL && out[i] != NULL);
        in[i][N - 1] = i + 1;
        r[i] = allreduce(w[i], in[i], out[i]);
        r[i]->coll.count = N;
        eng_coll_submit(p[i]->cs, r[i]);
    }
    for (int k = 0; k < 20 && s_nsent > 0; k++) {
        s_now += 0.01;
        deliver(p);
    }
    for (int i = 0; i < 2; i++) {
        CHECK(cl_request_done(r[i]) && out[i][N - 1] == 3);
        CHECK(p[i]->nseen > 0 && p[i]->seen_bytes >= (size_t)N * sizeof(int32_t) / 2);
        CHECK(cl_member_at_rank(p[i]->mb, 1 - i)->last_data > 0);
        cl_request_destroy(&r[i]);
        free(in[i]);
        free(out[i]);
    }
    fake_free(p[0]);
    fake_free(p[1]);
    cl_comm_destroy(&w[0]);
    cl_comm_destroy(&w[1]);
}

int main(void)
{
    char err[128];
    for (int i = 0; i < 2; i++) {
        s_ids[i] = cl_identity_new(NULL, err, sizeof err);
        CHECK(s_ids[i] != NULL);
        if (s_ids[i] == NULL)
            return 1;
        memcpy(s_keys[i], cl_identity_public_key(s_ids[i]), 32);
    }
    test_order_and_early();
    test_retired();
    test_data_seen();
    for (int i = 0; i < 2; i++)
        cl_identity_destroy(&s_ids[i]);
    printf("cl_engine_streams_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
