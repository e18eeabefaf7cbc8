/*  cl_engine_gens_test.c - selftest of the generations of the world
    group (cl_engine_gens.c, docs/wire.md §6).

    Drives the component through a fake context (this peer's world rank,
    the world size, who is in the group here), without an engine.  Checks
    (a) recording a view's group: only members in the group, their
    weights, client flags and bandwidth, a generation recorded once, none
    for 0; (b) the ring keeps the last ENG_GENS: the oldest is forgotten;
    (c) encoding a generation as a notice's body and learning it on
    another peer: its own weights for the members of its current group, 1
    and the notice's client flag for the others; (d) a notice refused:
    not older than the current generation, the current one unknown, a
    sender out of the group, a body cut or too long, ranks not ascending
    or beyond the world, a member of the current group or this peer
    missing, a peer in the group here that the current one does not
    count; (e) the newest older generation that lists given peers and
    this peer (never the current one or a newer one).
*/
#include "engine/cl_engine_gens.h"

#include "util/cl_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "selftest.h"

#define NP 6

/* The fake streams: the context's argument, struct eng_cs, which the
   component sees only as an incomplete type (docs/architecture.md). */
typedef struct eng_cs {
    int rank, world_size;
    bool in_group[NP]; /* by world rank */
} fake_t;

static int f_rank(fake_t *f)
{
    return f->rank;
}

static int f_world_size(fake_t *f)
{
    return f->world_size;
}

static bool f_in_group(fake_t *f, int w)
{
    return w >= 0 && w < NP && f->in_group[w];
}

static eng_gens_t *make(fake_t *f, int rank)
{
    memset(f, 0, sizeof *f);
    f->rank = rank;
    f->world_size = NP;
    eng_gens_ctx_t ctx = {
        .arg = f, .rank = f_rank, .world_size = f_world_size, .in_group = f_in_group};
    eng_gens_t *g = eng_gens_new(&ctx);
    CHECK(g != NULL);
    return g;
}

/* Peer records of world ranks 0..NP-1; those in `group` are in the
   group, with weight 1 + rank / 10, rank 4 a client. */
static cl_peer_t s_peers[NP];
static const cl_peer_t *s_list[NP];

static void peers(fake_t *f, const int *group, int n)
{
    for (int w = 0; w < NP; w++) {
        cl_peer_t *p = &s_peers[w];
        memset(p, 0, sizeof *p);
        memset(p->key, 0x30 + w, 32);
        p->rank = w;
        p->weight = 1.0 + w / 10.0;
        p->client = w == 4;
        p->bw_figure = 1000u * (uint32_t)(w + 1);
        p->state = CL_PEER_ALIVE;
        s_list[w] = p;
        f->in_group[w] = false;
    }
    for (int i = 0; i < n; i++) {
        s_peers[group[i]].in_group = true;
        f->in_group[group[i]] = true;
    }
}

static bool same_world(const group_gen_t *g, const int *w, int n)
{
    if (g == NULL || g->n != n)
        return false;
    for (int i = 0; i < n; i++)
        if (g->world[i] != w[i])
            return false;
    return true;
}

/* A notice's body of the given world ranks (client flag c[i], weight
   5.0): what a member that knows the generation sends. */
static size_t body_of(uint8_t *b, const int *w, int n, const int *c)
{
    for (int i = 0; i < n; i++, b += 13) {
        double wt = 5.0;
        uint64_t bits;
        memcpy(&bits, &wt, 8);
        for (int k = 0; k < 4; k++)
            b[k] = (uint8_t)((uint32_t)w[i] >> (8 * k));
        b[4] = c != NULL && c[i] ? 1 : 0;
        for (int k = 0; k < 8; k++)
            b[5 + k] = (uint8_t)(bits >> (8 * k));
    }
    return (size_t)n * 13;
}

/* (a) and (b). */
static void test_record_ring(void)
{
    fake_t f;
    eng_gens_t *g = make(&f, 1);
    int grp[] = {0, 1, 3, 4};
    peers(&f, grp, 4);
    CHECK(eng_gens_find(g, 0) == NULL && eng_gens_find(g, 7) == NULL);
    eng_gens_record(g, 0, s_list, NP);
    CHECK(eng_gens_find(g, 0) == NULL);
    eng_gens_record(g, 7, s_list, NP);
    const group_gen_t *r = eng_gens_find(g, 7);
    CHECK(same_world(r, grp, 4));
    if (r != NULL && r->n == 4) {
        CHECK(r->weight[2] == 1.0 + 3 / 10.0 && r->client[3] == 1 && r->client[0] == 0);
        CHECK(r->bandwidth[1] == 2000u && r->bandwidth[3] == 5000u);
    }
    CHECK(eng_gens_has_self(g, 7) && !eng_gens_has_self(g, 8));
    CHECK(eng_gens_lists(r, 3) && !eng_gens_lists(r, 2));
    /* Recorded once: a later view of the same generation changes nothing. */
    int grp2[] = {0, 1};
    peers(&f, grp2, 2);
    eng_gens_record(g, 7, s_list, NP);
    CHECK(same_world(eng_gens_find(g, 7), grp, 4));
    /* The ring: ENG_GENS more generations push 7 out, the rest stay. */
    for (uint64_t gen = 8; gen < 8 + ENG_GENS - 1; gen++)
        eng_gens_record(g, gen, s_list, NP);
    CHECK(eng_gens_find(g, 7) != NULL);
    eng_gens_record(g, 8 + ENG_GENS - 1, s_list, NP);
    CHECK(eng_gens_find(g, 7) == NULL);
    for (uint64_t gen = 8; gen < 8 + ENG_GENS; gen++)
        CHECK(same_world(eng_gens_find(g, gen), grp2, 2));
    eng_gens_destroy(&g);
    CHECK(g == NULL);
    eng_gens_destroy(&g);
}

/* (c) and (d). */
static void test_encode_learn(void)
{
    /* Peer A (rank 0) knows generation 5: ranks 0, 1, 2, 4. */
    fake_t fa, fb;
    eng_gens_t *a = make(&fa, 0);
    int g5[] = {0, 1, 2, 4};
    peers(&fa, g5, 4);
    eng_gens_record(a, 5, s_list, NP);
    uint8_t *body = NULL;
    size_t len = eng_gens_encode(a, 5, &body);
    CHECK(len == 4 * 13 && body != NULL);
    uint8_t *none = (uint8_t *)1;
    CHECK(eng_gens_encode(a, 6, &none) == 0 && none == NULL);

    /* Peer B (rank 1) missed generation 5; its current one, 6, holds
       ranks 0 and 1 (2 and 4 left, out of the group here). */
    eng_gens_t *b = make(&fb, 1);
    int g6[] = {0, 1};
    peers(&fb, g6, 2);
    s_peers[0].weight = 2.5; /* B's own record of rank 0 */
    eng_gens_record(b, 6, s_list, NP);
    /* (d) Refusals first (each leaves 5 unknown). */
    CHECK(!eng_gens_learn(b, 7, 6, 0, body, len)); /* not older than the current */
    CHECK(eng_gens_find(b, 7) == NULL);
    CHECK(!eng_gens_learn(b, 5, 9, 0, body, len));     /* current one unknown */
    CHECK(!eng_gens_learn(b, 5, 6, 2, body, len));     /* sender out of the group */
    CHECK(!eng_gens_learn(b, 5, 6, 0, body, len - 1)); /* cut */
    CHECK(!eng_gens_learn(b, 5, 6, 0, body, 0));
    CHECK(!eng_gens_learn(b, 0, 6, 0, body, len));
    uint8_t bad[16 * 13];
    int desc[] = {0, 2, 1};
    CHECK(!eng_gens_learn(b, 5, 6, 0, bad, body_of(bad, desc, 3, NULL))); /* not ascending */
    int beyond[] = {0, 1, NP};
    CHECK(!eng_gens_learn(b, 5, 6, 0, bad, body_of(bad, beyond, 3, NULL)));
    int nome[] = {0, 2, 4};
    CHECK(!eng_gens_learn(b, 5, 6, 0, bad, body_of(bad, nome, 3, NULL))); /* this peer missing */
    int nozero[] = {1, 2, 4};
    CHECK(!eng_gens_learn(b, 5, 6, 0, bad, body_of(bad, nozero, 3, NULL))); /* rank 0 missing */
    int many[NP + 1] = {0, 1, 2, 3, 4, 5, 6};
    CHECK(!eng_gens_learn(b, 5, 6, 0, bad, body_of(bad, many, NP + 1, NULL))); /* too long */
    /* Rank 3 is in the group here, yet not in B's current generation: a
       generation that counts it is refused. */
    fb.in_group[3] = true;
    int with3[] = {0, 1, 3};
    CHECK(!eng_gens_learn(b, 5, 6, 0, bad, body_of(bad, with3, 3, NULL)));
    fb.in_group[3] = false;
    CHECK(eng_gens_find(b, 5) == NULL);
    /* A peer outside its current generation (rank 5, taken out) never
       learns one that does not list it either. */
    fake_t fc;
    eng_gens_t *c = make(&fc, 5);
    peers(&fc, g6, 2);
    eng_gens_record(c, 6, s_list, NP);
    CHECK(!eng_gens_learn(c, 5, 6, 0, body, len) && eng_gens_find(c, 5) == NULL);
    eng_gens_destroy(&c);

    /* (c) A's notice: learned, with B's weight for rank 0 and 1 (members
       of its current generation), 1 and the notice's flags for 2 and 4. */
    CHECK(eng_gens_learn(b, 5, 6, 0, body, len));
    const group_gen_t *l = eng_gens_find(b, 5);
    CHECK(same_world(l, g5, 4));
    if (l != NULL && l->n == 4) {
        CHECK(l->weight[0] == 2.5 && l->weight[1] == 1.0 + 1 / 10.0 && l->weight[2] == 1.0 &&
              l->weight[3] == 1.0);
        CHECK(l->client[3] == 1 && l->client[2] == 0 && l->bandwidth[2] == 0 &&
              l->bandwidth[0] == 1000u);
    }
    CHECK(eng_gens_has_self(b, 5));
    /* Known now: true at once, whatever the body. */
    CHECK(eng_gens_learn(b, 5, 6, 2, NULL, 0));
    /* Encoded again by B, it reads as A's (ranks and client flags). */
    uint8_t *again = NULL;
    size_t alen = eng_gens_encode(b, 5, &again);
    CHECK(alen == len && again != NULL && memcmp(again, body, 5) == 0 &&
          memcmp(again + 13, body + 13, 5) == 0 && memcmp(again + 39, body + 39, 5) == 0);
    free(again);
    free(body);
    eng_gens_destroy(&a);
    eng_gens_destroy(&b);
}

/* (e) */
static void test_newest_listing(void)
{
    fake_t f;
    eng_gens_t *g = make(&f, 1);
    int g3[] = {0, 1, 2, 3};
    int g4[] = {0, 1, 2};
    int g5[] = {0, 1};
    int g6[] = {0, 1, 2, 3};
    int g7[] = {0, 2, 3}; /* without this peer */
    peers(&f, g3, 4);
    eng_gens_record(g, 3, s_list, NP);
    peers(&f, g4, 3);
    eng_gens_record(g, 4, s_list, NP);
    peers(&f, g7, 3);
    eng_gens_record(g, 7, s_list, NP);
    peers(&f, g6, 4);
    eng_gens_record(g, 6, s_list, NP);
    peers(&f, g5, 2);
    eng_gens_record(g, 5, s_list, NP);
    int dep2[] = {2};
    int dep3[] = {3};
    int dep23[] = {2, 3};
    /* Older than the current (5) only: 4 lists rank 2, 3 lists 3. */
    CHECK(eng_gens_newest_listing(g, 5, dep2, 1) == 4);
    CHECK(eng_gens_newest_listing(g, 5, dep3, 1) == 3);
    CHECK(eng_gens_newest_listing(g, 5, dep23, 2) == 3);
    /* Under 8: 7 lists 2 and 3 but not this peer, so 6. */
    CHECK(eng_gens_newest_listing(g, 8, dep23, 2) == 6);
    /* None lists rank 5. */
    int dep5[] = {5};
    CHECK(eng_gens_newest_listing(g, 8, dep5, 1) == 0);
    CHECK(eng_gens_newest_listing(g, 3, dep2, 1) == 0);
    eng_gens_destroy(&g);
}

int main(void)
{
    CHECK(cl_log_configure(CL_LOG_ERROR, NULL) == 0);
    test_record_ring();
    test_encode_learn();
    test_newest_listing();
    printf("cl_engine_gens_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
