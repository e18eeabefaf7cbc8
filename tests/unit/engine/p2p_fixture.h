/*  p2p_fixture.h - the fake context of cl_engine_p2p_test: a swarm of
    three members, this peer world rank 0, every message the component
    sends recorded, the loop's timer set real (s_timers), and the helpers
    that build requests and the other side's messages.

    Header-only, for that one test; every function is static.
*/
#ifndef P2P_FIXTURE_H_INCLUDED
#define P2P_FIXTURE_H_INCLUDED

#include "engine/cl_comm.h"
#include "engine/cl_engine_p2p.h"
#include "engine/cl_timer.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "engine_fake.h" /* fake_peer_desc */
#include "selftest.h"

#define NPEERS 3
#define MAXSENT 256

/* The loop's set of deadlines, one for the whole program: each component
   a test creates registers its timer there and removes it when
   destroyed. */
static cl_timer_t *s_timers;

typedef struct {
    cl_wire_msg_t m;  /* header fields; payload points at data */
    uint8_t data[64]; /* the first bytes of its payload */
    int to;           /* world rank */
} sent_t;

/* The fake engine: the context's argument, struct cl_engine, which the
   component sees only as an incomplete type (docs/architecture.md). */
typedef struct cl_engine {
    cl_config_t cfg;
    double now;
    double member_since;
    cl_peer_t peers[NPEERS]; /* by world rank; [0] is this peer */
    bool alive[NPEERS];
    sent_t sent[MAXSENT];
    int nsent;
    int bans;
    uint8_t banned[32];
    double ban_seconds;         /* the duration of the last ban */
    int version;                /* of every link (6 unless a test sets it) */
    size_t early_msgs[NPEERS];  /* early messages of each rank in the early buffer */
    size_t early_bytes[NPEERS]; /* and their payload bytes */
    bool coll_waits[NPEERS];    /* a running collective has that rank */
    bool not_member;            /* this peer lost its rank */
} fake_t;

static double f_now(fake_t *f)
{
    return f->now;
}

static int f_self_rank(fake_t *f)
{
    (void)f;
    return 0;
}

static bool f_is_member(fake_t *f)
{
    return !f->not_member;
}

static double f_member_since(fake_t *f)
{
    return f->member_since;
}

static cl_peer_t *f_member_at(fake_t *f, int w)
{
    return w >= 0 && w < NPEERS && f->alive[w] ? &f->peers[w] : NULL;
}

static int f_send(fake_t *f, const cl_peer_t *to, cl_wire_msg_t *m)
{
    if (f->nsent >= MAXSENT)
        return COLLAB_ERR_NO_MEM;
    sent_t *s = &f->sent[f->nsent++];
    s->m = *m;
    size_t n = m->payload_len < sizeof s->data ? m->payload_len : sizeof s->data;
    if (n > 0)
        memcpy(s->data, m->payload, n);
    s->m.payload = s->data;
    s->to = to->rank;
    return COLLAB_OK;
}

static bool f_comm_rank_is(fake_t *f, uint64_t comm, int r, int w)
{
    (void)f;
    return comm != CL_COMM_WORLD_ID || r == w;
}

static int f_link_version(fake_t *f, const uint8_t key[32])
{
    (void)key;
    return f->version;
}

static size_t f_early_queued(fake_t *f, int w, size_t *bytes)
{
    *bytes = f->early_bytes[w];
    return f->early_msgs[w];
}

static bool f_coll_waits_for(fake_t *f, int w)
{
    return f->coll_waits[w];
}

static void f_ban(fake_t *f, const uint8_t key[32], double seconds)
{
    f->bans++;
    memcpy(f->banned, key, 32);
    f->ban_seconds = seconds;
}

/* A fake swarm of three members, this peer rank 0, its clock at now,
   member since `since`; ranks [0, nseen) were held by a member. */
static eng_p2p_t *setup_at(fake_t *f, double now, double since, int nseen)
{
    memset(f, 0, sizeof *f);
    f->cfg.timeout = 5;
    f->cfg.matchmaking_time = 5;
    f->cfg.max_message_mib = 16;
    f->cfg.max_unexpected_mib = 64;
    f->cfg.max_unexpected_peer_mib = 16;
    f->cfg.max_unexpected_msgs = 1024;
    f->cfg.ban_time = 60;
    f->member_since = since;
    f->now = now;
    f->version = 6;
    for (int w = 0; w < NPEERS; w++) {
        memset(f->peers[w].key, 0x10 + w, 32);
        f->peers[w].rank = w;
        f->peers[w].prev_rank = -1;
        f->alive[w] = true;
    }
    eng_p2p_ctx_t ctx = {.arg = f,
                         .cfg = &f->cfg,
                         .t0 = 0,
                         .timers = s_timers,
                         .incarnation = 7,
                         .now = f_now,
                         .self_rank = f_self_rank,
                         .is_member = f_is_member,
                         .member_since = f_member_since,
                         .member_at = f_member_at,
                         .send = f_send,
                         .desc = fake_peer_desc,
                         .comm_rank_is = f_comm_rank_is,
                         .link_version = f_link_version,
                         .ban = f_ban,
                         .early_queued = f_early_queued,
                         .coll_waits_for = f_coll_waits_for};
    double armed = cl_timer_next(s_timers);
    eng_p2p_t *p = eng_p2p_new(&ctx);
    CHECK(p != NULL);
    for (int w = 0; w < nseen; w++)
        eng_p2p_mark_seen(p, w);
    CHECK(cl_timer_next(s_timers) == armed); /* not before this peer is a member */
    eng_p2p_member(p);                       /* as the engine, once it is one */
    return p;
}

/* The loop's turn at f->now: runs the deadlines that are due. */
static void run_timers(fake_t *f)
{
    (void)cl_timer_run(s_timers, f->now);
}

/* As setup_at, every rank held, the start-up grace over (the first timer
   ends it: now is far past member_since). */
static eng_p2p_t *setup(fake_t *f)
{
    eng_p2p_t *p = setup_at(f, 1000, 1, NPEERS);
    run_timers(f);
    return p;
}

static collab_request_t *send_req(collab_comm_t *comm, int peer, int tag, const void *buf,
                                  size_t len, bool sync)
{
    collab_request_t *r = cl_request_new(CL_OP_SEND);
    r->comm = comm;
    r->peer = peer;
    r->tag = tag;
    r->sbuf = buf;
    r->bytes = len;
    r->sync = sync;
    return r;
}

static collab_request_t *recv_req(collab_comm_t *comm, int peer, int tag, void *buf, size_t len)
{
    collab_request_t *r = cl_request_new(CL_OP_RECV);
    r->comm = comm;
    r->peer = peer;
    r->tag = tag;
    r->buf = buf;
    r->bytes = len;
    return r;
}

/* A P2P message from world rank `from` (its world rank as comm rank). */
static cl_wire_msg_t p2p_msg(int from, int tag, const void *data, size_t len, uint64_t sync)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_P2P;
    m.hdr.comm = CL_COMM_WORLD_ID;
    m.hdr.part = (uint32_t)from;
    m.hdr.aux = (uint32_t)tag;
    m.hdr.sub = sync != 0 ? CL_P2P_SYNC : CL_P2P_STANDARD;
    m.hdr.seq = sync;
    m.payload = data;
    m.payload_len = len;
    return m;
}

static cl_wire_msg_t ctl_msg(int sub, uint64_t seq)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_P2P_CTL;
    m.hdr.sub = (uint8_t)sub;
    m.hdr.comm = CL_COMM_WORLD_ID;
    m.hdr.seq = seq;
    return m;
}

#endif
