/*  cl_engine_coll_env.c - the environment a collective algorithm gets
    (cl_coll_env_t, src/coll/cl_coll.h).

    Sends to comm ranks (to this peer itself through a local queue that
    the main loop delivers, never re-entrantly), the clock, how long to
    wait for a peer (COLLAB_TIMEOUT plus the time its bytes take at its
    measured bandwidth; a peer that said goodbye gets ENG_DEPARTED_GRACE), the
    pair keys of relay tags (docs/security.md §6), which failures this
    peer confirms itself, and the suspicions and verdicts an algorithm
    raises.  Those may change the view, so they wait in a queue that the
    main loop empties (eng_coll_deferred), outside the algorithm.
*/
#include "engine/cl_engine_coll_int.h"

#include "util/cl_log.h"
#include "util/cl_xsign.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_BANDWIDTH 25e6 /* bytes/s assumed before any measurement */

const cl_peer_t *eng_coll_peer_of(coll_ctx_t *ctx, int comm_rank)
{
    int w = cl_comm_world_of(ctx->s->comm, comm_rank);
    return w >= 0 ? cl_member_at_rank(ctx->cs->ctx.mb, w) : NULL;
}

static int env_send(void *eng, int to, const cl_coll_msg_t *msg)
{
    coll_ctx_t *ctx = eng;
    eng_cs_t *cs = ctx->cs;
    collab_comm_t *comm = ctx->s->comm;
    int w = cl_comm_world_of(comm, to);
    if (w < 0 || msg == NULL || (msg->data == NULL && msg->len > 0))
        return COLLAB_ERR_ARG;
    if (w == cs->ctx.rank(cs->ctx.arg)) {
        /* To itself: delivered from the main loop, never re-entrantly. */
        local_msg_t *l = malloc(sizeof *l + msg->len);
        if (l == NULL)
            return COLLAB_ERR_NO_MEM;
        l->next = NULL;
        l->comm = ctx->s->comm_id;
        l->seq = ctx->seq;
        l->signature = ctx->signature;
        l->msg = *msg;
        l->msg.from = comm->rank;
        if (msg->len > 0)
            memcpy(l->payload, msg->data, msg->len);
        l->msg.data = l->payload;
        if (cs->local_tail != NULL)
            cs->local_tail->next = l;
        else
            cs->local_head = l;
        cs->local_tail = l;
        return COLLAB_OK;
    }
    const cl_peer_t *p = cl_member_at_rank(cs->ctx.mb, w);
    if (p == NULL)
        return COLLAB_ERR_PROC_FAILED;
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_COLL;
    m.hdr.sub = msg->type;
    m.hdr.comm = ctx->s->comm_id;
    m.hdr.epoch = ctx->gen;
    m.hdr.seq = ctx->seq;
    m.hdr.signature = ctx->signature;
    m.hdr.part = msg->part;
    m.hdr.chunk = msg->chunk;
    m.hdr.aux = msg->aux;
    m.payload = msg->data;
    m.payload_len = msg->len;
    int rc = cs->ctx.send(cs->ctx.arg, p, &m);
    cl_debug("coll send #%llu/%llu type %u part %u chunk %u aux %u len %zu to rank %d: %d",
             (unsigned long long)ctx->seq, (unsigned long long)ctx->gen, msg->type, msg->part,
             msg->chunk, msg->aux, msg->len, w, rc);
    return rc;
}

static double env_deadline(void *eng, int from, size_t bytes)
{
    coll_ctx_t *ctx = eng;
    /* Everything a peer that said goodbye sent has arrived (its GOODBYE
       came after it on the same connection): what is still missing never
       comes. */
    int w = cl_comm_world_of(ctx->s->comm, from);
    if (eng_leave_status(ctx->cs->ctx.leave, w, ctx->s->comm_id, ctx->seq) >= 0)
        return ENG_DEPARTED_GRACE;
    const cl_peer_t *p = eng_coll_peer_of(ctx, from);
    double bw = p != NULL && p->bandwidth > 0 ? p->bandwidth : DEFAULT_BANDWIDTH;
    return ctx->cs->ctx.cfg->timeout + (double)bytes / bw;
}

/* Queues a late member for eng_coll_deferred: acting on it may change
   the view and call back into the algorithm, which must not happen while
   the algorithm is running. */
/* Makes room for one more late report; false when out of memory. */
static bool eng_coll_defer_grow(eng_cs_t *cs)
{
    size_t cap = cs->caplate > 0 ? 2 * cs->caplate : 8;
    struct late_report *a = realloc(cs->late, cap * sizeof *a);
    if (a == NULL)
        return false;
    cs->late = a;
    cs->caplate = cap;
    return true;
}

/* One late report: the peer's key, why, and for ENG_REASON_LEFT the
   collective that waited for it (comm, seq); dropped without memory. */
static void defer(eng_cs_t *cs, const uint8_t key[32], int reason, uint64_t comm, uint64_t seq)
{
    if (cs->nlate == cs->caplate && !eng_coll_defer_grow(cs))
        return;
    struct late_report *l = &cs->late[cs->nlate++];
    memcpy(l->key, key, 32);
    l->reason = reason;
    l->comm = comm;
    l->seq = seq;
}

void eng_coll_defer_late(eng_cs_t *cs, const cl_peer_t *p, int reason)
{
    defer(cs, p->key, reason, 0, 0);
}

void eng_coll_deferred(eng_cs_t *cs)
{
    for (size_t i = 0; i < cs->nlate; i++) {
        if (cs->late[i].reason == ENG_REASON_LEFT) {
            /* What it sent all arrived before its GOODBYE: it ran this
               collective, and those after it, without this peer. */
            (void)eng_leave_cut(cs->ctx.leave, eng_leave_world_of(cs->ctx.leave, cs->late[i].key),
                                cs->late[i].comm, cs->late[i].seq);
            eng_coll_fail_departed(cs, cs->late[i].key);
            continue;
        }
        const cl_peer_t *p = cl_member_find(cs->ctx.mb, cs->late[i].key);
        if (p != NULL && p->state != CL_PEER_GONE && cs->late[i].reason == CL_SUSPECT_CORRUPT)
            cs->ctx.report_corrupt(cs->ctx.arg, p);
        else if (p != NULL && p->state != CL_PEER_GONE)
            cs->ctx.report_late(cs->ctx.arg, p, cs->late[i].reason);
    }
    cs->nlate = 0;
}

static void env_suspect(void *eng, int r)
{
    coll_ctx_t *ctx = eng;
    eng_cs_t *cs = ctx->cs;
    int w = cl_comm_world_of(ctx->s->comm, r);
    uint8_t key[32];
    if (eng_leave_status(cs->ctx.leave, w, ctx->s->comm_id, ctx->seq) >= 0 &&
        eng_leave_key(cs->ctx.leave, w, key)) {
        /* It said goodbye and what this collective waits for never
           comes: failed here, whatever the view says. */
        defer(cs, key, ENG_REASON_LEFT, ctx->s->comm_id, ctx->seq);
        return;
    }
    const cl_peer_t *p = eng_coll_peer_of(ctx, r);
    if (p != NULL)
        eng_coll_defer_late(cs, p, CL_SUSPECT_STRAGGLER);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Relay tags (docs/security.md §6): the key shared with comm rank r, from
   the identity r had when the collective started.  The peer table is not
   asked: once r failed its record goes, or its rank passes to a
   newcomer, while its chunks are still relayed and checked. */
static int env_pair_key(void *eng, int r, uint8_t key[32])
{
    coll_ctx_t *ctx = eng;
    const int *at = bsearch(&r, ctx->members, (size_t)ctx->nmembers, sizeof r, cmp_int);
    if (at == NULL || ctx->keys == NULL || !ctx->haskey[at - ctx->members])
        return COLLAB_ERR_ARG;
    return eng_pair_key(ctx->cs, ctx->keys[at - ctx->members], key);
}

int eng_pair_key(eng_cs_t *cs, const uint8_t peer[32], uint8_t out[32])
{
    size_t n = sizeof cs->pairkeys / sizeof cs->pairkeys[0];
    for (size_t i = 0; i < n; i++)
        if (cs->pairkeys[i].set && memcmp(cs->pairkeys[i].peer, peer, 32) == 0) {
            memcpy(out, cs->pairkeys[i].key, 32);
            return COLLAB_OK;
        }
    uint8_t q[crypto_scalarmult_BYTES];
    if (crypto_scalarmult(q, cl_identity_secret_key(cs->ctx.id), peer) != 0) {
        sodium_memzero(q, sizeof q);
        return COLLAB_ERR_ARG;
    }
    bool low = memcmp(cs->ctx.self_key, peer, 32) < 0;
    crypto_generichash_state h;
    crypto_generichash_init(&h, NULL, 0, 32);
    crypto_generichash_update(&h, q, sizeof q);
    crypto_generichash_update(&h, low ? cs->ctx.self_key : peer, 32);
    crypto_generichash_update(&h, low ? peer : cs->ctx.self_key, 32);
    crypto_generichash_final(&h, out, 32);
    sodium_memzero(q, sizeof q);
    sodium_memzero(&h, sizeof h);
    size_t k = (size_t)cs->pairkey_next;
    cs->pairkey_next = (int)((k + 1) % n);
    memcpy(cs->pairkeys[k].peer, peer, 32);
    memcpy(cs->pairkeys[k].key, out, 32);
    cs->pairkeys[k].set = true;
    return COLLAB_OK;
}

/* Relay proofs signed with this peer's identity key (cl_xsign): the run
   id goes first, so that no proof serves in another run. */
static uint8_t *run_msg(eng_cs_t *cs, const uint8_t *msg, size_t len, size_t *out_len)
{
    const char *run = cs->ctx.cfg->run_id != NULL ? cs->ctx.cfg->run_id : "default";
    size_t r = strlen(run);
    uint8_t *m = malloc(2 + r + len);
    if (m == NULL)
        return NULL;
    m[0] = (uint8_t)(r & 0xff);
    m[1] = (uint8_t)(r >> 8);
    memcpy(m + 2, run, r);
    memcpy(m + 2 + r, msg, len);
    *out_len = 2 + r + len;
    return m;
}

static int env_sign(void *eng, const uint8_t *msg, size_t len, uint8_t *proof)
{
    coll_ctx_t *ctx = eng;
    size_t mlen;
    uint8_t *m = run_msg(ctx->cs, msg, len, &mlen);
    if (m == NULL)
        return COLLAB_ERR_NO_MEM;
    cl_identity_sign(ctx->cs->ctx.id, m, mlen, proof, proof + CL_XSIGN_PK);
    free(m);
    return COLLAB_OK;
}

/* Whether sign is the signing key of identity key peer (cl_xsign_binds),
   with the bindings checked so far kept round-robin: a check costs about
   a signature verification, and the same members sign every collective. */
static bool signkey_binds(eng_cs_t *cs, const uint8_t peer[32], const uint8_t sign[32])
{
    size_t n = sizeof cs->signkeys / sizeof cs->signkeys[0];
    for (size_t i = 0; i < n; i++)
        if (cs->signkeys[i].set && memcmp(cs->signkeys[i].peer, peer, 32) == 0)
            return memcmp(cs->signkeys[i].sign, sign, 32) == 0;
    if (!cl_xsign_binds(peer, sign))
        return false;
    size_t k = (size_t)cs->signkey_next;
    cs->signkey_next = (int)((k + 1) % n);
    memcpy(cs->signkeys[k].peer, peer, 32);
    memcpy(cs->signkeys[k].sign, sign, 32);
    cs->signkeys[k].set = true;
    return true;
}

/* The signing key in a proof counts only as the one of r's identity when
   the collective started; a member's proofs are then checked against it. */
static bool env_verify(void *eng, int r, const uint8_t *msg, size_t len, const uint8_t *proof)
{
    coll_ctx_t *ctx = eng;
    const int *at = bsearch(&r, ctx->members, (size_t)ctx->nmembers, sizeof r, cmp_int);
    if (at == NULL || ctx->keys == NULL || !ctx->haskey[at - ctx->members])
        return false;
    if (!signkey_binds(ctx->cs, ctx->keys[at - ctx->members], proof))
        return false;
    size_t mlen;
    uint8_t *m = run_msg(ctx->cs, msg, len, &mlen);
    if (m == NULL)
        return false;
    bool ok = cl_xsign_verify(proof, m, mlen, proof + CL_XSIGN_PK);
    free(m);
    return ok;
}

/* Whether comm rank r reads signed proofs: every member of the
   collective does in a swarm that signs, none in another.  Members must
   agree on the kind (attack_verify: a coordinator that made tags after
   it had removed a convicted reducer saw them refused by every other
   member), so the kind follows only settings every member shares, never
   a link's version: a swarm that signs keeps every peer below version 10
   out at the handshake and at the JOIN (eng_settings_wire_floor), and a
   member cannot bring tags back by speaking 8 (attack_downgrade). */
static bool env_signs(void *eng, int r)
{
    coll_ctx_t *ctx = eng;
    /* Only a swarm that expects hostile members signs: one that runs a
       robust aggregation or COLLAB_VERIFY (settings every member shares,
       fixed by the founder, so all agree).  Under the default mean a
       hostile member can spoil every result anyway (NaN, weights), and
       the check of every received chunk would double the cost of the
       butterfly on one host's peers for a liveness gain only. */
    const cl_settings_t *set = cl_member_settings(ctx->cs->ctx.mb);
    if (set->aggregation == 0 && !set->verify)
        return false;
    const int *at = bsearch(&r, ctx->members, (size_t)ctx->nmembers, sizeof r, cmp_int);
    return at != NULL && ctx->keys != NULL;
}

/* A failure a STATUS names counts here only with this peer's own
   evidence (docs/security.md §3). */
static bool env_confirms_failed(void *eng, int r)
{
    coll_ctx_t *ctx = eng;
    for (int i = 0; i < ctx->nfailed; i++)
        if (ctx->failed[i] == r)
            return true;
    const cl_peer_t *p = eng_coll_peer_of(ctx, r);
    if (p == NULL || p->state != CL_PEER_ALIVE || p->link_closed)
        return true;
    int w = cl_comm_world_of(ctx->s->comm, r);
    return eng_leave_status(ctx->cs->ctx.leave, w, ctx->s->comm_id, ctx->seq) >= 0;
}

/* COLLAB_VERIFY: a verdict, acted on from the main loop like a suspicion
   (it may change the view). */
static void env_convict(void *eng, int r)
{
    coll_ctx_t *ctx = eng;
    const cl_peer_t *p = eng_coll_peer_of(ctx, r);
    if (p != NULL)
        eng_coll_defer_late(ctx->cs, p, CL_SUSPECT_CORRUPT);
}

/* The engine's clock. */
static double env_now(void *eng)
{
    const coll_ctx_t *ctx = eng;
    return cs_now(ctx->cs);
}

cl_coll_env_t eng_coll_env(coll_ctx_t *ctx)
{
    cl_coll_env_t env = {ctx,         env_send,    env_now,      env_deadline,
                         env_suspect, env_convict, env_pair_key, env_confirms_failed,
                         env_sign,    env_verify,  env_signs};
    return env;
}
