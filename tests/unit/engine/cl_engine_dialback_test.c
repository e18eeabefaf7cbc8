/*  cl_engine_dialback_test.c - selftest of the coordinator's dial-back
    (cl_engine_dialback.c) on a fake context: the transport's links,
    connects, drops and replies, the records and the join protocol are
    this test's, the timer runs in a real cl_timer set.

    A public joiner is admitted at once when our link to it is up;
    otherwise the coordinator dials its announced address and admits it
    when the handshake completes (JOIN handled again), or answers
    JOIN_REPLY UNREACHABLE naming the address when the dial-back time
    (twice COLLAB_TIMEOUT, within 3 to 10 s) passes.  A verdict is kept
    for a minute; at most 16 dial-backs run at once.
*/
#include "engine/cl_engine_dialback.h"

#include "mpi_collab.h"
#include "selftest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXLOG 64

typedef struct {
    uint8_t key[32];
    char address[CL_WIRE_STR_MAX + 1];
    uint8_t status;                         /* a reply's */
    uint8_t settings_world;                 /* a reply's settings.world_size, as filled */
    char join_address[CL_WIRE_STR_MAX + 1]; /* an admitted JOIN's */
    uint32_t join_bandwidth;                /* an admitted JOIN's */
} logged_t;

/* The fake engine: the context's argument, struct cl_engine, which the
   component sees only as an incomplete type (docs/architecture.md). */
typedef struct cl_engine {
    cl_config_t cfg;
    cl_timer_t *timers;
    double now;
    uint8_t up[MAXLOG][32]; /* links up */
    int nup;
    uint8_t members[MAXLOG][32];
    int nmembers;
    bool coordinates;
    int connect_rc;
    logged_t connects[MAXLOG], drops[MAXLOG], replies[MAXLOG], admits[MAXLOG];
    int nconnects, ndrops, nreplies, nadmits;
} fake_t;

static bool has(uint8_t (*set)[32], int n, const uint8_t key[32])
{
    for (int i = 0; i < n; i++)
        if (memcmp(set[i], key, 32) == 0)
            return true;
    return false;
}

static logged_t *push(logged_t *log, int *n, const uint8_t key[32])
{
    CHECK(*n < MAXLOG);
    logged_t *x = &log[*n < MAXLOG ? (*n)++ : MAXLOG - 1];
    memset(x, 0, sizeof *x);
    memcpy(x->key, key, 32);
    return x;
}

static double f_now(fake_t *f)
{
    return f->now;
}

static bool f_link_up(fake_t *f, const uint8_t key[32])
{
    return has(f->up, f->nup, key);
}

static int f_connect(fake_t *f, const uint8_t key[32], const char *address)
{
    logged_t *x = push(f->connects, &f->nconnects, key);
    snprintf(x->address, sizeof x->address, "%s", address);
    return f->connect_rc;
}

static void f_drop(fake_t *f, const uint8_t key[32])
{
    (void)push(f->drops, &f->ndrops, key);
}

static bool f_is_member(fake_t *f, const uint8_t key[32])
{
    return has(f->members, f->nmembers, key);
}

static bool f_coordinates(fake_t *f)
{
    return f->coordinates;
}

static void f_reply_settings(fake_t *f, cl_wire_join_reply_t *r)
{
    (void)f;
    r->settings.world_size = 12;
}

static int f_reply(fake_t *f, const uint8_t key[32], cl_wire_msg_t *m)
{
    CHECK(m->hdr.type == CL_MSG_JOIN_REPLY);
    logged_t *x = push(f->replies, &f->nreplies, key);
    x->status = m->u.join_reply.status;
    x->settings_world = (uint8_t)m->u.join_reply.settings.world_size;
    CHECK(memcmp(m->u.join_reply.key, key, 32) == 0);
    snprintf(x->address, sizeof x->address, "%s", m->u.join_reply.address);
    return COLLAB_OK;
}

static void f_admit(fake_t *f, const uint8_t key[32], const cl_wire_join_t *j)
{
    logged_t *x = push(f->admits, &f->nadmits, key);
    snprintf(x->join_address, sizeof x->join_address, "%s", j->address);
    x->join_bandwidth = j->bandwidth;
}

static eng_dialback_t *fake_dialback(fake_t *f)
{
    memset(f, 0, sizeof *f);
    f->cfg.timeout = 2.0; /* the dial-back time: max(3, min(10, 4)) = 4 s */
    f->timers = cl_timer_new(8);
    CHECK(f->timers != NULL);
    f->now = 1000.0;
    f->coordinates = true;
    eng_dialback_ctx_t ctx = {.arg = f,
                              .cfg = &f->cfg,
                              .timers = f->timers,
                              .now = f_now,
                              .link_up = f_link_up,
                              .connect = f_connect,
                              .drop = f_drop,
                              .is_member = f_is_member,
                              .coordinates = f_coordinates,
                              .reply_settings = f_reply_settings,
                              .reply = f_reply,
                              .admit = f_admit};
    eng_dialback_t *d = eng_dialback_new(&ctx);
    CHECK(d != NULL);
    return d;
}

static void fake_free(fake_t *f, eng_dialback_t **d)
{
    eng_dialback_destroy(d);
    CHECK(*d == NULL);
    eng_dialback_destroy(d);                /* accepts NULL */
    CHECK(isinf(cl_timer_next(f->timers))); /* its timer went with it */
    cl_timer_destroy(&f->timers);
}

static cl_wire_join_t join_at(const char *address)
{
    cl_wire_join_t j;
    memset(&j, 0, sizeof j);
    j.rank = -1;
    j.weight = 1.0;
    snprintf(j.address, sizeof j.address, "%s", address);
    return j;
}

static void key_of(uint8_t key[32], int i)
{
    memset(key, 0x40 + i, 32);
}

/* Our link is up already: admitted at once, nothing dialed. */
static void test_link_up(void)
{
    fake_t f;
    eng_dialback_t *d = fake_dialback(&f);
    uint8_t k[32];
    key_of(k, 1);
    memcpy(f.up[f.nup++], k, 32);
    cl_wire_join_t j = join_at("/ip4/10.0.0.1/tcp/5/p2p/x");
    CHECK(eng_dialback_check(d, k, &j) == 1);
    CHECK(f.nconnects == 0 && f.nreplies == 0);
    CHECK(isinf(cl_timer_next(f.timers)));
    CHECK(eng_dialback_check(NULL, k, &j) == 1); /* without the component: admitted */
    eng_dialback_on_up(NULL, k);                 /* accepts NULL */
    fake_free(&f, &d);
}

/* Dialed, then the handshake completes: the latest JOIN is handled again
   (admitted now), and later JOINs are admitted. */
static void test_reached(void)
{
    fake_t f;
    eng_dialback_t *d = fake_dialback(&f);
    uint8_t k[32];
    key_of(k, 2);
    cl_wire_join_t j = join_at("/ip4/10.0.0.2/tcp/5/p2p/x");
    CHECK(eng_dialback_check(d, k, &j) == 0);
    CHECK(f.nconnects == 1 && strcmp(f.connects[0].address, j.address) == 0);
    CHECK(fabs(cl_timer_next(f.timers) - (f.now + 4.0)) < 1e-9);
    f.now += 1.0;
    cl_wire_join_t j2 = join_at("/ip4/10.0.0.2/tcp/5/p2p/x");
    j2.rank = 3;
    j2.bandwidth = 100000; /* a later JOIN may say more (a link's version learned) */
    CHECK(eng_dialback_check(d, k, &j2) == 0); /* still running: not dialed again */
    CHECK(f.nconnects == 1);
    uint8_t other[32];
    key_of(other, 9);
    eng_dialback_on_up(d, other); /* a link nobody dialed back: nothing */
    CHECK(f.nadmits == 0);
    eng_dialback_on_up(d, k);
    CHECK(f.nadmits == 1 && memcmp(f.admits[0].key, k, 32) == 0);
    CHECK(f.admits[0].join_bandwidth == 100000); /* the latest JOIN is admitted */
    eng_dialback_on_up(d, k);                    /* once */
    CHECK(f.nadmits == 1);
    CHECK(eng_dialback_check(d, k, &j) == 1); /* reached: its link may have dropped since */
    /* The timer ends nothing: the one dial-back is done. */
    CHECK(cl_timer_run(f.timers, f.now + 3.0) == 1);
    CHECK(f.nreplies == 0 && f.ndrops == 0);
    CHECK(isinf(cl_timer_next(f.timers)));
    /* Reached while another peer coordinates: not admitted here. */
    uint8_t k2[32];
    key_of(k2, 3);
    CHECK(eng_dialback_check(d, k2, &j) == 0);
    f.coordinates = false;
    eng_dialback_on_up(d, k2);
    CHECK(f.nadmits == 1);
    CHECK(eng_dialback_check(d, k2, &j) == 1);
    fake_free(&f, &d);
}

/* Nobody answers: at the dial-back time the joiner gets JOIN_REPLY
   UNREACHABLE naming its address, the link goes, and the same JOIN is
   refused at once; a minute later the verdict is forgotten. */
static void test_unreachable(void)
{
    fake_t f;
    eng_dialback_t *d = fake_dialback(&f);
    uint8_t k[32], m[32];
    key_of(k, 4);
    key_of(m, 5);
    cl_wire_join_t j = join_at("/ip4/10.0.0.4/tcp/5/p2p/x");
    double t0 = f.now;
    CHECK(eng_dialback_check(d, k, &j) == 0);
    f.now += 1.0;
    CHECK(eng_dialback_check(d, m, &j) == 0); /* a second one, one second later */
    memcpy(f.members[f.nmembers++], m, 32);   /* ... that becomes a member meanwhile */
    CHECK(cl_timer_run(f.timers, t0 + 3.9) == 0);
    CHECK(cl_timer_run(f.timers, t0 + 4.0) == 1);
    CHECK(f.nreplies == 1 && memcmp(f.replies[0].key, k, 32) == 0);
    CHECK(f.replies[0].status == CL_JOIN_UNREACHABLE);
    CHECK(strcmp(f.replies[0].address, j.address) == 0);
    CHECK(f.replies[0].settings_world == 12); /* the swarm's settings filled in */
    CHECK(f.ndrops == 1 && memcmp(f.drops[0].key, k, 32) == 0);
    /* Armed again at the end of the one still running. */
    CHECK(fabs(cl_timer_next(f.timers) - (t0 + 5.0)) < 1e-9);
    f.coordinates = false;
    CHECK(cl_timer_run(f.timers, t0 + 5.0) == 1);
    CHECK(f.ndrops == 1);   /* a member now: its link stays */
    CHECK(f.nreplies == 1); /* no longer the coordinator: no answer */
    CHECK(isinf(cl_timer_next(f.timers)));
    f.coordinates = true;
    /* The same JOIN again: refused at once. */
    f.now = t0 + 10.0;
    CHECK(eng_dialback_check(d, k, &j) == -1);
    CHECK(f.nreplies == 2 && f.replies[1].status == CL_JOIN_UNREACHABLE);
    CHECK(f.nconnects == 2);
    /* A minute after the verdict it is forgotten: dialed again. */
    f.now = t0 + 4.0 + 59.0;
    CHECK(eng_dialback_check(d, k, &j) == -1);
    CHECK(f.nreplies == 3);
    f.now += 1.0;
    CHECK(eng_dialback_check(d, k, &j) == 0);
    CHECK(f.nconnects == 3 && strcmp(f.connects[2].address, j.address) == 0);
    CHECK(fabs(cl_timer_next(f.timers) - (f.now + 4.0)) < 1e-9);
    fake_free(&f, &d);
}

/* A joiner found unreachable that JOINs again from another address
   within the minute is dialed at the new address, not refused: its
   verdict was about the old one. */
static void test_new_address(void)
{
    fake_t f;
    eng_dialback_t *d = fake_dialback(&f);
    uint8_t k[32];
    key_of(k, 7);
    cl_wire_join_t j = join_at("/ip4/10.0.0.7/tcp/5/p2p/x");
    double t0 = f.now;
    CHECK(eng_dialback_check(d, k, &j) == 0);
    CHECK(cl_timer_run(f.timers, t0 + 4.0) == 1);
    CHECK(f.nreplies == 1 && f.replies[0].status == CL_JOIN_UNREACHABLE);
    f.now = t0 + 10.0;
    cl_wire_join_t j2 = join_at("/ip4/10.0.0.8/tcp/6/p2p/x");
    CHECK(eng_dialback_check(d, k, &j2) == 0); /* dialed, not refused */
    CHECK(f.nreplies == 1);
    CHECK(f.nconnects == 2 && strcmp(f.connects[1].address, j2.address) == 0);
    CHECK(fabs(cl_timer_next(f.timers) - (f.now + 4.0)) < 1e-9);
    /* The old address again while the new one is dialed: waits, and the
       JOIN admitted when the link comes up is the one dialed. */
    CHECK(eng_dialback_check(d, k, &j) == 0);
    CHECK(f.nconnects == 2);
    eng_dialback_on_up(d, k);
    CHECK(f.nadmits == 1 && strcmp(f.admits[0].join_address, j2.address) == 0);
    fake_free(&f, &d);
}

/* A connect the transport refuses is an unreachable joiner at once. */
static void test_connect_fails(void)
{
    fake_t f;
    eng_dialback_t *d = fake_dialback(&f);
    uint8_t k[32];
    key_of(k, 6);
    f.connect_rc = COLLAB_ERR_ARG;
    cl_wire_join_t j = join_at("not an address");
    CHECK(eng_dialback_check(d, k, &j) == -1);
    CHECK(f.nreplies == 1 && f.replies[0].status == CL_JOIN_UNREACHABLE);
    CHECK(isinf(cl_timer_next(f.timers)));
    fake_free(&f, &d);
}

/* At most 16 run at once; a verdict gives way to a new one, a running
   dial-back never. */
static void test_bounded(void)
{
    fake_t f;
    eng_dialback_t *d = fake_dialback(&f);
    cl_wire_join_t j = join_at("/ip4/10.0.0.7/tcp/5/p2p/x");
    uint8_t k[32];
    for (int i = 0; i < 16; i++) {
        key_of(k, 10 + i);
        CHECK(eng_dialback_check(d, k, &j) == 0);
    }
    CHECK(f.nconnects == 16);
    key_of(k, 40);
    CHECK(eng_dialback_check(d, k, &j) == 0); /* no room: left for its next try */
    CHECK(f.nconnects == 16);
    uint8_t done[32];
    key_of(done, 10);
    eng_dialback_on_up(d, done); /* one verdict: its slot may be taken */
    CHECK(eng_dialback_check(d, k, &j) == 0);
    CHECK(f.nconnects == 17 && memcmp(f.connects[16].key, k, 32) == 0);
    fake_free(&f, &d);
}

int main(void)
{
    test_link_up();
    test_reached();
    test_unreachable();
    test_new_address();
    test_connect_fails();
    test_bounded();
    printf("cl_engine_dialback_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
