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

cl_peer_t *eng_coll_peer_of(coll_ctx_t *ctx, int comm_rank)
{
    int w = cl_comm_world_of(ctx->s->comm, comm_rank);
    return w >= 0 ? cl_member_at_rank(ctx->e->mb, w) : NULL;
}

static int env_send(void *eng, int to, const cl_coll_msg_t *msg)
{
    coll_ctx_t *ctx = eng;
    struct cl_engine *e = ctx->e;
    collab_comm_t *comm = ctx->s->comm;
    int w = cl_comm_world_of(comm, to);
    if (w < 0 || msg == NULL || (msg->data == NULL && msg->len > 0))
        return COLLAB_ERR_ARG;
    if (w == atomic_load(&e->rank)) {
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
        if (e->cs->local_tail != NULL)
            e->cs->local_tail->next = l;
        else
            e->cs->local_head = l;
        e->cs->local_tail = l;
        return COLLAB_OK;
    }
    cl_peer_t *p = cl_member_at_rank(e->mb, w);
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
    int rc = eng_send(e, p, &m);
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
    if (eng_leave_status(ctx->e->leave, w, ctx->s->comm_id, ctx->seq) >= 0)
        return ENG_DEPARTED_GRACE;
    cl_peer_t *p = eng_coll_peer_of(ctx, from);
    double bw = p != NULL && p->bandwidth > 0 ? p->bandwidth : DEFAULT_BANDWIDTH;
    return ctx->e->cfg.timeout + (double)bytes / bw;
}

/* Queues a late member for eng_coll_deferred: acting on it may change
   the view and call back into the algorithm, which must not happen while
   the algorithm is running. */
/* Makes room for one more late report; false when out of memory. */
static bool eng_coll_defer_grow(struct cl_engine *e)
{
    size_t cap = e->cs->caplate > 0 ? 2 * e->cs->caplate : 8;
    struct late_report *a = realloc(e->cs->late, cap * sizeof *a);
    if (a == NULL)
        return false;
    e->cs->late = a;
    e->cs->caplate = cap;
    return true;
}

void eng_coll_defer_late(struct cl_engine *e, const cl_peer_t *p, int reason)
{
    if (e->cs->nlate == e->cs->caplate && !eng_coll_defer_grow(e))
        return;
    memcpy(e->cs->late[e->cs->nlate].key, p->key, 32);
    e->cs->late[e->cs->nlate].reason = reason;
    e->cs->nlate++;
}

void eng_coll_deferred(struct cl_engine *e)
{
    for (size_t i = 0; i < e->cs->nlate; i++) {
        if (e->cs->late[i].reason == ENG_REASON_LEFT) {
            eng_coll_fail_departed(e, e->cs->late[i].key);
            continue;
        }
        cl_peer_t *p = cl_member_find(e->mb, e->cs->late[i].key);
        if (p != NULL && p->state != CL_PEER_GONE && e->cs->late[i].reason == CL_SUSPECT_CORRUPT)
            eng_report_corrupt(e, p);
        else if (p != NULL && p->state != CL_PEER_GONE)
            eng_report_late(e, p, e->cs->late[i].reason);
    }
    e->cs->nlate = 0;
}

static void env_suspect(void *eng, int r)
{
    coll_ctx_t *ctx = eng;
    struct cl_engine *e = ctx->e;
    int w = cl_comm_world_of(ctx->s->comm, r);
    uint8_t key[32];
    if (eng_leave_status(e->leave, w, ctx->s->comm_id, ctx->seq) >= 0 &&
        eng_leave_key(e->leave, w, key)) {
        /* It said goodbye and what this collective waits for never
           comes: failed here, whatever the view says. */
        if (e->cs->nlate < e->cs->caplate || eng_coll_defer_grow(e)) {
            memcpy(e->cs->late[e->cs->nlate].key, key, 32);
            e->cs->late[e->cs->nlate].reason = ENG_REASON_LEFT;
            e->cs->nlate++;
        }
        return;
    }
    cl_peer_t *p = eng_coll_peer_of(ctx, r);
    if (p != NULL)
        eng_coll_defer_late(e, p, CL_SUSPECT_STRAGGLER);
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
    return eng_pair_key(ctx->e, ctx->keys[at - ctx->members], key);
}

int eng_pair_key(struct cl_engine *e, const uint8_t peer[32], uint8_t out[32])
{
    size_t n = sizeof e->cs->pairkeys / sizeof e->cs->pairkeys[0];
    for (size_t i = 0; i < n; i++)
        if (e->cs->pairkeys[i].set && memcmp(e->cs->pairkeys[i].peer, peer, 32) == 0) {
            memcpy(out, e->cs->pairkeys[i].key, 32);
            return COLLAB_OK;
        }
    uint8_t q[crypto_scalarmult_BYTES];
    if (crypto_scalarmult(q, cl_identity_secret_key(e->id), peer) != 0) {
        sodium_memzero(q, sizeof q);
        return COLLAB_ERR_ARG;
    }
    bool low = memcmp(e->self_key, peer, 32) < 0;
    crypto_generichash_state h;
    crypto_generichash_init(&h, NULL, 0, 32);
    crypto_generichash_update(&h, q, sizeof q);
    crypto_generichash_update(&h, low ? e->self_key : peer, 32);
    crypto_generichash_update(&h, low ? peer : e->self_key, 32);
    crypto_generichash_final(&h, out, 32);
    sodium_memzero(q, sizeof q);
    sodium_memzero(&h, sizeof h);
    size_t k = (size_t)e->cs->pairkey_next;
    e->cs->pairkey_next = (int)((k + 1) % n);
    memcpy(e->cs->pairkeys[k].peer, peer, 32);
    memcpy(e->cs->pairkeys[k].key, out, 32);
    e->cs->pairkeys[k].set = true;
    return COLLAB_OK;
}

/* Relay proofs signed with this peer's identity key (cl_xsign): the run
   id goes first, so that no proof serves in another run. */
static uint8_t *run_msg(struct cl_engine *e, const uint8_t *msg, size_t len, size_t *out_len)
{
    const char *run = e->cfg.run_id != NULL ? e->cfg.run_id : "default";
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
    uint8_t *m = run_msg(ctx->e, msg, len, &mlen);
    if (m == NULL)
        return COLLAB_ERR_NO_MEM;
    cl_identity_sign(ctx->e->id, m, mlen, proof, proof + CL_XSIGN_PK);
    free(m);
    return COLLAB_OK;
}

/* Whether sign is the signing key of identity key peer (cl_xsign_binds),
   with the bindings checked so far kept round-robin: a check costs about
   a signature verification, and the same members sign every collective. */
static bool signkey_binds(struct cl_engine *e, const uint8_t peer[32], const uint8_t sign[32])
{
    size_t n = sizeof e->cs->signkeys / sizeof e->cs->signkeys[0];
    for (size_t i = 0; i < n; i++)
        if (e->cs->signkeys[i].set && memcmp(e->cs->signkeys[i].peer, peer, 32) == 0)
            return memcmp(e->cs->signkeys[i].sign, sign, 32) == 0;
    if (!cl_xsign_binds(peer, sign))
        return false;
    size_t k = (size_t)e->cs->signkey_next;
    e->cs->signkey_next = (int)((k + 1) % n);
    memcpy(e->cs->signkeys[k].peer, peer, 32);
    memcpy(e->cs->signkeys[k].sign, sign, 32);
    e->cs->signkeys[k].set = true;
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
    if (!signkey_binds(ctx->e, ctx->keys[at - ctx->members], proof))
        return false;
    size_t mlen;
    uint8_t *m = run_msg(ctx->e, msg, len, &mlen);
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
    const cl_settings_t *set = cl_member_settings(ctx->e->mb);
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
    cl_peer_t *p = eng_coll_peer_of(ctx, r);
    if (p == NULL || p->state != CL_PEER_ALIVE || p->link_closed)
        return true;
    int w = cl_comm_world_of(ctx->s->comm, r);
    return eng_leave_status(ctx->e->leave, w, ctx->s->comm_id, ctx->seq) >= 0;
}

/* COLLAB_VERIFY: a verdict, acted on from the main loop like a suspicion
   (it may change the view). */
static void env_convict(void *eng, int r)
{
    coll_ctx_t *ctx = eng;
    cl_peer_t *p = eng_coll_peer_of(ctx, r);
    if (p != NULL)
        eng_coll_defer_late(ctx->e, p, CL_SUSPECT_CORRUPT);
}

cl_coll_env_t eng_coll_env(coll_ctx_t *ctx)
{
    cl_coll_env_t env = {ctx,         env_send,    eng_ctx_now,  env_deadline,
                         env_suspect, env_convict, env_pair_key, env_confirms_failed,
                         env_sign,    env_verify,  env_signs};
    return env;
}
