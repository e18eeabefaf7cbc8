/*  cl_engine_gens.c - generations of the world group.

    The world group of a view, with its members' weights and client
    flags, is a *generation* (the view's group_epoch, docs/wire.md
    section 6).  The collective streams remember the last ENG_GENS of
    them here, so that a collective runs under the same member list on
    every member: the oldest generation in use for a sequence number wins
    (cl_engine_coll_start.c, cl_engine_route.c).  A generation this peer
    never saw (the view that formed it was lost with its coordinator) is
    learned from a notice of a member of the current group
    (in_group), under the checks of eng_gens_learn.

    A component (cl_engine_gens.h): it sees the engine only through
    eng_gens_ctx_t, built by eng_cs_new (cl_engine_coll.c), whose
    eng_cs_gen, eng_cs_in_gen, eng_coll_gen_encode and eng_coll_learn_gen
    the rest of the engine calls.
*/
#include "engine/cl_engine_gens.h"

#include "util/cl_log.h"

#include <stdlib.h>
#include <string.h>

struct eng_gens {
    eng_gens_ctx_t ctx;
    group_gen_t gens[ENG_GENS]; /* recent generations of the world group */
    int gen_next;               /* slot the next one goes to */
};

static void gen_clear(group_gen_t *g)
{
    free(g->world);
    free(g->weight);
    free(g->client);
    free(g->bandwidth);
    memset(g, 0, sizeof *g);
}

eng_gens_t *eng_gens_new(const eng_gens_ctx_t *ctx)
{
    eng_gens_t *g = calloc(1, sizeof *g);
    if (g != NULL)
        g->ctx = *ctx;
    return g;
}

void eng_gens_destroy(eng_gens_t **g_p)
{
    eng_gens_t *g = g_p != NULL ? *g_p : NULL;
    if (g == NULL)
        return;
    for (int i = 0; i < ENG_GENS; i++)
        gen_clear(&g->gens[i]);
    free(g);
    *g_p = NULL;
}

const group_gen_t *eng_gens_find(const eng_gens_t *g, uint64_t gen)
{
    for (int i = 0; g != NULL && i < ENG_GENS && gen != 0; i++)
        if (g->gens[i].gen == gen)
            return &g->gens[i];
    return NULL;
}

/* Puts gen into the ring's oldest slot (taking its arrays). */
static void keep(eng_gens_t *self, group_gen_t *gen)
{
    gen_clear(&self->gens[self->gen_next]);
    self->gens[self->gen_next] = *gen;
    self->gen_next = (self->gen_next + 1) % ENG_GENS;
}

void eng_gens_record(eng_gens_t *self, uint64_t gen, const cl_peer_t *const *list, size_t n)
{
    if (gen == 0 || eng_gens_find(self, gen) != NULL)
        return;
    group_gen_t g = {gen,
                     0,
                     malloc((n > 0 ? n : 1) * sizeof(int)),
                     malloc((n > 0 ? n : 1) * sizeof(double)),
                     malloc((n > 0 ? n : 1) * sizeof(int)),
                     malloc((n > 0 ? n : 1) * sizeof(uint32_t))};
    if (g.world == NULL || g.weight == NULL || g.client == NULL || g.bandwidth == NULL) {
        gen_clear(&g);
        cl_error("out of memory recording the group");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (!list[i]->in_group)
            continue;
        g.world[g.n] = list[i]->rank;
        g.weight[g.n] = list[i]->weight;
        g.client[g.n] = list[i]->client ? 1 : 0;
        g.bandwidth[g.n] = list[i]->bw_figure;
        g.n++;
    }
    keep(self, &g);
}

/* A generation notice's body (docs/wire.md §6): per member of the
   generation, its world rank (u32), client flag (u8) and weight (IEEE
   double bits, u64), little-endian. */
#define GEN_ENTRY 13

size_t eng_gens_encode(const eng_gens_t *self, uint64_t gen, uint8_t **out)
{
    const group_gen_t *g = eng_gens_find(self, gen);
    *out = NULL;
    if (g == NULL || g->n <= 0 || (*out = malloc((size_t)g->n * GEN_ENTRY)) == NULL)
        return 0;
    uint8_t *b = *out;
    for (int i = 0; i < g->n; i++, b += GEN_ENTRY) {
        uint64_t bits;
        memcpy(&bits, &g->weight[i], 8);
        for (int k = 0; k < 4; k++)
            b[k] = (uint8_t)((uint32_t)g->world[i] >> (8 * k));
        b[4] = g->client[i] ? 1 : 0;
        for (int k = 0; k < 8; k++)
            b[5 + k] = (uint8_t)(bits >> (8 * k));
    }
    return (size_t)g->n * GEN_ENTRY;
}

bool eng_gens_learn(eng_gens_t *self, uint64_t gen, uint64_t cur, int from_world,
                    const uint8_t *body, size_t len)
{
    const group_gen_t *c = eng_gens_find(self, cur);
    int me = self->ctx.rank(self->ctx.arg), ws = self->ctx.world_size(self->ctx.arg);
    if (eng_gens_find(self, gen) != NULL)
        return true;
    if (gen == 0 || gen >= cur || c == NULL || len == 0 || len % GEN_ENTRY != 0 ||
        len / GEN_ENTRY > (size_t)ws || !self->ctx.in_group(self->ctx.arg, from_world))
        return false;
    int n = (int)(len / GEN_ENTRY);
    group_gen_t g = {gen,
                     0,
                     malloc((size_t)n * sizeof(int)),
                     malloc((size_t)n * sizeof(double)),
                     malloc((size_t)n * sizeof(int)),
                     malloc((size_t)n * sizeof(uint32_t))};
    bool ok = g.world != NULL && g.weight != NULL && g.client != NULL && g.bandwidth != NULL,
         has_me = false;
    for (int i = 0; i < n && ok; i++) {
        const uint8_t *b = body + (size_t)i * GEN_ENTRY;
        uint32_t w = 0;
        for (int k = 0; k < 4; k++)
            w |= (uint32_t)b[k] << (8 * k);
        ok = w < (uint32_t)ws && (g.n == 0 || (int)w > g.world[g.n - 1]); /* ascending */
        if (!ok)
            break;
        /* A member of the current generation keeps what this peer knows
           of it; any other must be gone here, so that the generation
           learned counts nobody this peer's own would not. */
        int j = 0;
        while (j < c->n && c->world[j] != (int)w)
            j++;
        if (j < c->n) {
            g.weight[g.n] = c->weight[j];
            g.client[g.n] = c->client[j];
            g.bandwidth[g.n] = c->bandwidth[j];
        } else {
            ok = !self->ctx.in_group(self->ctx.arg, (int)w);
            g.weight[g.n] = 1.0;
            g.client[g.n] = b[4] != 0;
            g.bandwidth[g.n] = 0; /* unknown: the parts stay equal */
        }
        has_me = has_me || (int)w == me;
        g.world[g.n++] = (int)w;
    }
    /* Every member of the current generation is in it. */
    for (int j = 0; j < c->n && ok; j++) {
        bool found = false;
        for (int i = 0; i < g.n && !found; i++)
            found = g.world[i] == c->world[j];
        ok = found;
    }
    if (!ok || !has_me) {
        gen_clear(&g);
        return false;
    }
    cl_debug("learned group generation %llu (%d members) from rank %d: the view that formed it "
             "did not reach this peer",
             (unsigned long long)gen, g.n, from_world);
    keep(self, &g);
    return true;
}

bool eng_gens_has_self(const eng_gens_t *self, uint64_t gen)
{
    const group_gen_t *g = eng_gens_find(self, gen);
    int me = self->ctx.rank(self->ctx.arg);
    for (int i = 0; g != NULL && i < g->n; i++)
        if (g->world[i] == me)
            return true;
    return false;
}

bool eng_gens_lists(const group_gen_t *gen, int w)
{
    for (int i = 0; i < gen->n; i++)
        if (gen->world[i] == w)
            return true;
    return false;
}

uint64_t eng_gens_newest_listing(const eng_gens_t *self, uint64_t cur, const int *w, int k)
{
    uint64_t best = 0;
    for (int j = 0; j < ENG_GENS; j++) {
        const group_gen_t *c = &self->gens[j];
        if (c->gen == 0 || c->gen >= cur || c->gen <= best || !eng_gens_has_self(self, c->gen))
            continue;
        bool ok = true;
        for (int i = 0; i < k && ok; i++)
            ok = eng_gens_lists(c, w[i]);
        if (ok)
            best = c->gen;
    }
    return best;
}
