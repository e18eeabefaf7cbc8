/*  test_coll_harness.c - the in-process member simulator of the
    collective selftests (see test_coll_harness.h).
*/
#include "test_coll_harness.h"
#include "coll/cl_coll_impl.h"
#include "mpi_collab.h"
#include "util/cl_xsign.h"

#include <sodium.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EV_START, EV_MSG, EV_FAIL };

typedef struct {
    int kind;
    int from, to;    /* member indexes */
    int failed;      /* EV_FAIL: member index that failed */
    cl_coll_msg_t m; /* EV_MSG: copy (data owned) */
} th_ev_t;

typedef struct {
    th_t *h;
    int idx;
} th_member_t;

struct th {
    int n;
    int *ranks; /* comm rank of each member */
    cl_coll_t **coll;
    th_member_t *mem;
    bool *alive;
    bool *released;
    uint8_t **out;  /* per member: an all-reduce's output buffer, or NULL */
    size_t *outlen; /* its bytes */
    uint8_t **kept; /* its result, saved when released, while the program's copy is scribbled */
    th_ev_t *ev;
    size_t nev, cap;
    uint64_t rng;
    double clock;
    long events, refused, suspects, convictions;
    long fuzzed, fuzz_ok;
    bool drop_all;
    bool no_fail_to_done;
    uint64_t unsigned_mask;         /* th_unsigned at th_new */
    uint8_t (*xpk)[32], (*xsk)[32]; /* per member: identity key pair */
    cl_xsign_key_t *xkey;           /* per member: its signing key, derived once (as the engine) */
    th_tamper_fn *tamper;
    void *tamper_arg;
};

uint64_t th_unsigned = 0;
bool th_confirms = false;

void th_set_tamper(th_t *self, th_tamper_fn *fn, void *arg)
{
    self->tamper = fn;
    self->tamper_arg = arg;
}

uint64_t th_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int s_index(const th_t *h, int rank)
{
    for (int i = 0; i < h->n; i++)
        if (h->ranks[i] == rank)
            return i;
    return -1;
}

static int s_push(th_t *h, th_ev_t ev)
{
    if (h->nev == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 256;
        th_ev_t *e = realloc(h->ev, cap * sizeof *e);
        if (e == NULL)
            return COLLAB_ERR_NO_MEM;
        h->ev = e;
        h->cap = cap;
    }
    h->ev[h->nev++] = ev;
    return COLLAB_OK;
}

static int s_send(void *eng, int to, const cl_coll_msg_t *msg)
{
    th_member_t *me = eng;
    th_t *h = me->h;
    int t = s_index(h, to);
    if (t < 0) {
        fprintf(stderr, "harness: member %d sent to non-member rank %d\n", me->idx, to);
        abort();
    }
    th_ev_t ev = {.kind = EV_MSG, .from = me->idx, .to = t, .m = *msg};
    ev.m.from = h->ranks[me->idx];
    ev.m.data = NULL;
    if (msg->len > 0) {
        void *d = malloc(msg->len);
        if (d == NULL)
            return COLLAB_ERR_NO_MEM;
        memcpy(d, msg->data, msg->len);
        ev.m.data = d;
    }
    if (h->tamper != NULL && !h->tamper(h->tamper_arg, me->idx, t, &ev.m)) {
        free((void *)ev.m.data);
        return COLLAB_OK; /* dropped on the way */
    }
    return s_push(h, ev);
}

static double s_now(void *eng)
{
    return ((th_member_t *)eng)->h->clock;
}

static double s_deadline(void *eng, int from, size_t bytes)
{
    (void)eng;
    (void)from;
    return 1.0 + (double)bytes / 1e9;
}

static void s_suspect(void *eng, int r)
{
    th_member_t *me = eng;
    me->h->suspects++;
    fprintf(stderr, "harness: member %d suspects rank %d\n", me->idx, r);
}

/* COLLAB_VERIFY: a member found a reducer's result wrong. */
static void s_convict(void *eng, int r)
{
    th_member_t *me = eng;
    me->h->convictions++;
    fprintf(stderr, "harness: member %d convicts rank %d\n", me->idx, r);
}

long th_convictions(const th_t *self)
{
    return self->convictions;
}

/* Relay tags: a key per pair of comm ranks, the same at both ends. */
static int s_pair_key(void *eng, int r, uint8_t key[32])
{
    th_member_t *me = eng;
    int a = me->h->ranks[me->idx], lo = a < r ? a : r, hi = a < r ? r : a;
    memset(key, 0, 32);
    memcpy(key, &lo, sizeof lo);
    memcpy(key + 8, &hi, sizeof hi);
    key[31] = 0x5a;
    return COLLAB_OK;
}

/* Signed proofs with the member's identity key, as the engine makes them
   (without the run id). */
static int s_sign(void *eng, const uint8_t *msg, size_t len, uint8_t *proof)
{
    th_member_t *me = eng;
    cl_xsign_sign_key(&me->h->xkey[me->idx], msg, len, proof + CL_XSIGN_PK);
    memcpy(proof, me->h->xkey[me->idx].pk, CL_XSIGN_PK);
    return COLLAB_OK;
}

static bool s_verify(void *eng, int r, const uint8_t *msg, size_t len, const uint8_t *proof)
{
    th_member_t *me = eng;
    int i = s_index(me->h, r);
    /* The binding is checked once per member and kept, as the engine
       keeps it (cl_xsign_binds held for the key derived at th_new). */
    return i >= 0 && sodium_memcmp(me->h->xkey[i].pk, proof, CL_XSIGN_PK) == 0 &&
           cl_xsign_verify(proof, msg, len, proof + CL_XSIGN_PK);
}

/* As the engine: a member has evidence of a failure the harness made
   (a kill), never of one another member only claims. */
static bool s_confirms(void *eng, int r)
{
    th_member_t *me = eng;
    int i = s_index(me->h, r);
    return i < 0 || !me->h->alive[i];
}

static bool s_signs(void *eng, int r)
{
    th_member_t *me = eng;
    int i = s_index(me->h, r);
    return i >= 0 && !((me->h->unsigned_mask >> i) & 1);
}

th_t *th_new(int n, const cl_coll_args_t *args)
{
    if (sodium_init() < 0)
        return NULL;
    th_t *h = calloc(1, sizeof *h);
    if (h == NULL)
        return NULL;
    h->n = n;
    h->ranks = calloc((size_t)n, sizeof *h->ranks);
    h->coll = calloc((size_t)n, sizeof *h->coll);
    h->mem = calloc((size_t)n, sizeof *h->mem);
    h->alive = calloc((size_t)n, sizeof *h->alive);
    h->released = calloc((size_t)n, sizeof *h->released);
    h->out = calloc((size_t)n, sizeof *h->out);
    h->outlen = calloc((size_t)n, sizeof *h->outlen);
    h->kept = calloc((size_t)n, sizeof *h->kept);
    h->xpk = calloc((size_t)n, sizeof *h->xpk);
    h->xsk = calloc((size_t)n, sizeof *h->xsk);
    h->xkey = calloc((size_t)n, sizeof *h->xkey);
    h->unsigned_mask = th_unsigned;
    if (h->ranks == NULL || h->coll == NULL || h->mem == NULL || h->alive == NULL ||
        h->released == NULL || h->out == NULL || h->outlen == NULL || h->kept == NULL ||
        h->xpk == NULL || h->xsk == NULL ||
        h->xkey == NULL) {
        th_destroy(&h);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        h->ranks[i] = args[i].self;
        if (args[i].kind == CL_COLL_ALLREDUCE && args[i].recvbuf != NULL) {
            h->out[i] = args[i].recvbuf;
            h->outlen[i] = args[i].count * collab_dtype_extent(args[i].dtype);
        }
    }
    for (int i = 0; i < n; i++) {
        uint8_t seed[32] = {0};
        memcpy(seed, &h->ranks[i], sizeof h->ranks[i]);
        seed[31] = 0x17;
        crypto_box_seed_keypair(h->xpk[i], h->xsk[i], seed);
        if (cl_xsign_key(h->xsk[i], &h->xkey[i]) != 0 || !cl_xsign_binds(h->xpk[i], h->xkey[i].pk)) {
            th_destroy(&h);
            return NULL;
        }
    }
    for (int i = 0; i < n; i++) {
        h->mem[i] = (th_member_t){h, i};
        cl_coll_env_t env = {.eng = &h->mem[i],
                             .send = s_send,
                             .now = s_now,
                             .deadline = s_deadline,
                             .suspect = s_suspect,
                             .convict = s_convict,
                             .pair_key = s_pair_key};
        if (th_confirms)
            env.confirms_failed = s_confirms;
        if (!((h->unsigned_mask >> i) & 1)) {
            env.sign = s_sign;
            env.verify = s_verify;
            env.signs = s_signs;
        }
        h->coll[i] = cl_coll_new(&args[i], &env);
        if (h->coll[i] == NULL) {
            th_destroy(&h);
            return NULL;
        }
        h->alive[i] = true;
    }
    return h;
}

static void s_clear(th_t *h)
{
    for (size_t k = 0; k < h->nev; k++)
        if (h->ev[k].kind == EV_MSG)
            free((void *)h->ev[k].m.data);
    h->nev = 0;
}

void th_destroy(th_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    th_t *h = *self_p;
    s_clear(h);
    free(h->ev);
    for (int i = 0; i < h->n && h->coll != NULL; i++)
        cl_coll_destroy(&h->coll[i]);
    free(h->coll);
    free(h->ranks);
    free(h->mem);
    free(h->alive);
    free(h->released);
    for (int i = 0; i < h->n && h->kept != NULL; i++)
        free(h->kept[i]);
    free(h->kept);
    free(h->out);
    free(h->outlen);
    free(h->xpk);
    if (h->xkey != NULL)
        sodium_memzero(h->xkey, (size_t)h->n * sizeof *h->xkey);
    free(h->xkey);
    free(h->xsk);
    free(h);
    *self_p = NULL;
}

static void s_kill(th_t *h, int who)
{
    if (who < 0 || who >= h->n || !h->alive[who])
        return;
    h->alive[who] = false;
    /* Its messages still queued are in flight: some arrive, some not. */
    for (size_t k = 0; k < h->nev;) {
        th_ev_t *e = &h->ev[k];
        bool drop = e->kind == EV_MSG && e->from == who && (h->drop_all || (th_rand(&h->rng) & 1));
        if (drop) {
            if (e->kind == EV_MSG)
                free((void *)e->m.data);
            h->ev[k] = h->ev[--h->nev];
        } else {
            k++;
        }
    }
    for (int i = 0; i < h->n; i++)
        if (i != who && h->alive[i])
            s_push(h, (th_ev_t){.kind = EV_FAIL, .to = i, .failed = who});
}

/* A released all-reduce's output belongs to the program again, which may
   reuse it at once (the next call's input): it is scribbled over until
   the run ends, so that a relay read from it afterwards fails the run. */
static void s_after(th_t *h, int i)
{
    if (h->alive[i] && !h->released[i] && cl_coll_done(h->coll[i])) {
        cl_coll_release_user_buffers(h->coll[i]);
        h->released[i] = true;
        if (h->out[i] != NULL && h->outlen[i] > 0 && h->kept[i] == NULL) {
            h->kept[i] = malloc(h->outlen[i]);
            if (h->kept[i] != NULL) {
                memcpy(h->kept[i], h->out[i], h->outlen[i]);
                memset(h->out[i], 0xA5, h->outlen[i]);
            }
        }
    }
}

/* The program's outputs back, for the caller's checks. */
static int s_restore(th_t *h, int rc)
{
    for (int i = 0; i < h->n; i++)
        if (h->kept[i] != NULL) {
            memcpy(h->out[i], h->kept[i], h->outlen[i]);
            free(h->kept[i]);
            h->kept[i] = NULL;
        }
    return rc;
}

static bool s_all_done(const th_t *h)
{
    for (int i = 0; i < h->n; i++)
        if (h->alive[i] && !cl_coll_done(h->coll[i]))
            return false;
    return true;
}

/* Injects one random message, shaped to get past the first checks often:
   a member sender, a known type, small part and chunk numbers, lengths
   near the ones the algorithms use. */
static void s_fuzz(th_t *h)
{
    int to = (int)(th_rand(&h->rng) % (uint64_t)h->n);
    if (!h->alive[to])
        return;
    uint64_t r = th_rand(&h->rng);
    int from = h->ranks[(r >> 8) % (uint64_t)h->n];
    if ((r & 15) == 0)
        from = (int)(r >> 40) % 1000 - 10; /* maybe not a member at all */
    static const size_t lens[] = {0, 1, 2, 3, 4, 8, 9, 12, 16, 17, 24, 32, 33, 48, 64, 100, 257};
    size_t len = lens[(r >> 16) % (sizeof lens / sizeof lens[0])];
    uint8_t data[300];
    for (size_t k = 0; k < sizeof data; k++)
        data[k] = (uint8_t)th_rand(&h->rng);
    uint64_t q = th_rand(&h->rng);
    cl_coll_msg_t m = {.type = (uint8_t)(q % 7),
                       .part = (uint32_t)((q >> 8) % 9),
                       .chunk = (uint32_t)((q >> 16) % 6),
                       .aux = (q >> 24) & 1 ? (uint32_t)(q >> 32) : (uint32_t)((q >> 28) % 4),
                       .from = from,
                       .data = len > 0 ? data : NULL,
                       .len = len};
    if ((q & 0xff) == 7)
        m.part = (uint32_t)(q >> 32); /* far out of range */
    h->fuzzed++;
    if (cl_coll_on_msg(h->coll[to], &m) == COLLAB_OK)
        h->fuzz_ok++;
    s_after(h, to);
}

int th_run(th_t *h, const th_plan_t *plan)
{
    /* Messages queued before the run (members started by th_inject) stay. */
    h->rng = plan->seed * 2654435761u + 12345;
    h->events = h->refused = h->suspects = h->fuzzed = h->fuzz_ok = 0;
    h->drop_all = plan->drop_all_inflight;
    h->no_fail_to_done = plan->no_fail_to_done;
    for (int i = 0; i < h->n; i++)
        s_push(h, (th_ev_t){.kind = EV_START, .to = i});
    int stuck = 0, woken = 0;
    while (stuck < 3) {
        for (int k = 0; k < plan->nkill; k++)
            if (plan->kill_at[k] == h->events)
                s_kill(h, plan->kill_who[k]);
        if (h->nev == 0) {
            if (s_all_done(h))
                return s_restore(h, 0);
            /* Quiet and not done.  The engine's timer first: a member
               that asked to be looked at again (cl_coll_wake_at) is, at
               that time, before any deadline passes. */
            double wake = INFINITY;
            for (int i = 0; i < h->n; i++)
                if (h->alive[i])
                    wake = fmin(wake, cl_coll_wake_at(h->coll[i]));
            if (wake < INFINITY && woken < 100) {
                woken++;
                h->clock = fmax(h->clock, wake);
                for (int i = 0; i < h->n; i++)
                    if (h->alive[i]) {
                        (void)cl_coll_recheck(h->coll[i]); /* nothing before its time */
                        s_after(h, i);
                    }
                continue;
            }
            /* Then let every deadline pass. */
            h->clock += 10.0;
            for (int i = 0; i < h->n; i++)
                if (h->alive[i])
                    cl_coll_on_tick(h->coll[i]);
            stuck++;
            continue;
        }
        if (plan->fuzz_every > 0 && h->events % plan->fuzz_every == 0)
            s_fuzz(h);
        size_t k = (size_t)(th_rand(&h->rng) % h->nev);
        th_ev_t e = h->ev[k];
        h->ev[k] = h->ev[--h->nev];
        h->events++;
        if (!h->alive[e.to]) {
            if (e.kind == EV_MSG)
                free((void *)e.m.data);
            continue;
        }
        cl_coll_t *c = h->coll[e.to];
        int rc = COLLAB_OK;
        switch (e.kind) {
        case EV_START:
            rc = cl_coll_start(c);
            break;
        case EV_MSG:
            rc = cl_coll_on_msg(c, &e.m);
            free((void *)e.m.data);
            break;
        default:
            if (!(h->no_fail_to_done && cl_coll_done(c)))
                rc = cl_coll_on_fail(c, h->ranks[e.failed]);
            break;
        }
        if (rc != COLLAB_OK) {
            h->refused++;
            fprintf(stderr, "harness: member %d refused event kind %d type %d from %d: %d\n", e.to,
                    e.kind, e.kind == EV_MSG ? e.m.type : -1, e.from, rc);
        }
        /* Exercise the deadline scan without letting time pass. */
        if ((h->events & 7) == 0)
            cl_coll_on_tick(c);
        s_after(h, e.to);
    }
    return s_restore(h, -1);
}

cl_coll_t *th_coll(th_t *self, int i)
{
    return self->coll[i];
}

bool th_alive(const th_t *self, int i)
{
    return self->alive[i];
}

long th_events(const th_t *self)
{
    return self->events;
}

double th_clock(const th_t *self)
{
    return self->clock;
}

long th_refused(const th_t *self)
{
    return self->refused;
}

long th_suspects(const th_t *self)
{
    return self->suspects;
}

long th_fuzzed(const th_t *self)
{
    return self->fuzzed;
}

long th_fuzz_accepted(const th_t *self)
{
    return self->fuzz_ok;
}

int th_inject(th_t *self, int i, const cl_coll_msg_t *msg)
{
    return cl_coll_on_msg(self->coll[i], msg);
}
