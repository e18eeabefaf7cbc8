/*  cl_coll_xproof_test.c - selftest of the signed exchange pieces and
    broadcast chunks (docs/security.md §6, relay proofs).

    Four in-process members (test_coll_harness.c: every member signs, as
    in a swarm that signs, or none with th_unsigned = ~0, as in one that
    does not), each scenario run over several interleavings:

      relay    small all-reduce (the exchange), BOR of bit r from rank r.
               Member 3's RESULTs to member 0 are lost and member 3 dies
               once the others hold its piece; member 1, the lowest holder of
               member 3's piece, flips a bit of every RELAY of it it sends.
      absent   the same, but member 1 claims member 3's piece absent
               (an empty RELAY with CL_AUX_ABSENT).
      chain    broadcast of 64 bytes in chunks of 16 from member 0 (the
               chain 0 -> 1 -> 2 -> 3); member 1 flips a bit of every
               chunk it forwards.

    Signed: no hang, every survivor done, results bit-identical and exact
    (the exchange: bits 0..2, and bit 3 where member 3's chunk survived it;
    the broadcast: the root's bytes), and member
    0 (relay, absent) or 2 (chain) counted the forger (cl_coll_t.forged).
    Unsigned: the attack bites (some survivor's result differs) in most
    interleavings, which is what the signatures remove.
*/
#include "test_coll_harness.h"
#include "coll/cl_coll_impl.h"
#include "util/cl_selftest.h"

#include <stdlib.h>
#include <string.h>

#define N 4
#define COUNT 40 /* int32 of the exchange: 160 bytes, chunks of 64 */
#define BYTES 64 /* of the broadcast: chunks of 16 */

typedef enum { SC_RELAY, SC_ABSENT, SC_CHAIN } scenario_t;

static const int s_ranks[N] = {0, 1, 2, 3};

typedef struct {
    th_t *h;
    scenario_t sc;
    long last; /* events when member 3 sent its last RESULT */
    int forged;
} hostile_t;

static bool s_tamper(void *arg, int from, int to, cl_coll_msg_t *m)
{
    hostile_t *x = arg;
    uint8_t *d = (uint8_t *)m->data;
    if (x->sc == SC_CHAIN) {
        if (from == 1 && to == 2 && m->type == CL_MSG_RESULT && m->len > 0) {
            d[m->len - 1] ^= 0x40;
            x->forged++;
        }
        return true;
    }
    if (from == 3 && m->type == CL_MSG_RESULT) {
        x->last = th_events(x->h);
        return to != 0; /* lost on the way to member 0 */
    }
    if (from == 1 && m->type == CL_MSG_RELAY && m->part == 3 && m->len > 0) {
        x->forged++;
        if (x->sc == SC_ABSENT) {
            m->aux |= CL_AUX_ABSENT;
            m->len = 0;
        } else {
            d[m->len - 1] ^= 0x40;
        }
    }
    return true;
}

typedef struct {
    int32_t in[N][COUNT];
    int32_t out[N][COUNT];
    uint8_t bin[N][BYTES];
    cl_coll_args_t args[N];
} fix_t;

static void s_fix(fix_t *f, scenario_t sc)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < COUNT; k++)
            f->in[i][k] = (int32_t)((1u << i) | ((uint32_t)k << 8));
        for (int k = 0; k < BYTES; k++)
            f->bin[i][k] = i == 0 ? (uint8_t)(k * 7 + 3) : 0;
        bool bc = sc == SC_CHAIN;
        f->args[i] = (cl_coll_args_t){.kind = bc ? CL_COLL_BCAST : CL_COLL_ALLREDUCE,
                                      .comm_id = 5,
                                      .comm_size = N,
                                      .nmembers = N,
                                      .members = s_ranks,
                                      .self = i,
                                      .root = bc ? 0 : -1,
                                      .dtype = bc ? COLLAB_BYTE : COLLAB_INT32,
                                      .op = {.kind = COLLAB_OP_BOR},
                                      .count = bc ? BYTES : COUNT,
                                      .sendbuf = bc ? NULL : f->in[i],
                                      .recvbuf = bc ? (void *)f->bin[i] : (void *)f->out[i],
                                      .chunk_bytes = bc ? 16 : 64,
                                      .small_bytes = 1 << 20};
    }
}

/* One run; returns whether every survivor completed with the right
   result, all equal.  *forged: forgers member 0 (2 for the chain)
   counted; *sent: whether member 1 forged anything (member 3 may die
   before member 1 holds its piece, and then nothing is relayed by it). */
static bool s_run(scenario_t sc, bool sig, uint64_t seed, int *forged, bool *sent)
{
    th_unsigned = sig ? 0 : ~(uint64_t)0;
    th_confirms = true;
    long kill = -1;
    bool right = false;
    *forged = 0;
    *sent = false;
    for (int pass = sc == SC_CHAIN ? 1 : 0; pass < 2; pass++) {
        fix_t *f = malloc(sizeof *f);
        CL_CHECK(f != NULL);
        if (f == NULL)
            break;
        s_fix(f, sc);
        th_t *h = th_new(N, f->args);
        CL_CHECK(h != NULL);
        if (h == NULL) {
            free(f);
            break;
        }
        hostile_t x = {.h = h, .sc = sc, .last = -1};
        th_set_tamper(h, s_tamper, &x);
        /* Pass 0 runs until only member 0 waits (for member 3's piece);
           pass 1, with the same interleaving, kills member 3 then, so
           that members 1 and 2 hold its piece (were member 1 its only
           holder, a forger withholding it would stall the repair: a
           liveness attack this does not address, docs/security.md §6). */
        th_plan_t plan = {.seed = seed};
        if (pass == 1 && sc != SC_CHAIN) {
            plan.nkill = 1;
            plan.kill_at[0] = kill;
            plan.kill_who[0] = 3;
        }
        int rc = th_run(h, &plan);
        if (pass == 0) {
            kill = th_events(h);
        } else {
            int alive = sc == SC_CHAIN ? N : N - 1;
            *sent = x.forged > 0;
            right = rc == 0;
            for (int i = 0; i < alive && right; i++) {
                right = cl_coll_done(th_coll(h, i)) && cl_coll_status(th_coll(h, i)) == COLLAB_OK;
                /* Bits 0..2 and the position; bit 3 unless member 3's
                   chunk died with it (absent everywhere); all equal. */
                for (int k = 0; k < COUNT && right && sc != SC_CHAIN; k++)
                    right = (f->out[i][k] & ~(int32_t)8) == (int32_t)(7u | ((uint32_t)k << 8)) &&
                            f->out[i][k] == f->out[0][k];
                for (int k = 0; k < BYTES && right && sc == SC_CHAIN; k++)
                    right = f->bin[i][k] == (uint8_t)(k * 7 + 3);
            }
            *forged = th_coll(h, sc == SC_CHAIN ? 2 : 0)->forged;
        }
        th_destroy(&h);
        free(f);
    }
    th_unsigned = 0;
    th_confirms = false;
    return right;
}

int main(void)
{
    static const char *const names[] = {"relay", "absent", "chain"};
    for (int sc = SC_RELAY; sc <= SC_CHAIN; sc++) {
        int ok = 0, named = 0, bitten = 0, runs = 0;
        for (uint64_t seed = 1; seed <= 16; seed++) {
            int forged;
            bool sent;
            bool right = s_run((scenario_t)sc, true, seed, &forged, &sent);
            CL_CHECK(right);
            if (!sent)
                continue; /* no forgery in this interleaving */
            runs++;
            CL_CHECK(forged >= 1);
            ok += right;
            named += forged >= 1;
            if (!s_run((scenario_t)sc, false, seed, &forged, &sent) && sent)
                bitten++;
        }
        /* The attack still bites where nothing is signed (in most
           interleavings: the victim may learn of member 3's failure only
           once member 2's copy is on its way). */
        CL_CHECK(runs >= 8 && bitten * 2 >= runs);
        fprintf(stderr,
                "%s: %d runs with a forgery: signed: %d right, forger counted in %d; unsigned: %d "
                "wrong\n",
                names[sc], runs, ok, named, bitten);
    }
    return cl_selftest_end("cl_coll_xproof_test");
}
