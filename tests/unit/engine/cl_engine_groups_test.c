/*  cl_engine_groups_test.c - selftest of the groups component
    (cl_engine_groups.c) on a fake context: the swarm's settings are a
    struct of this test that it changes between calls.

    A world all-reduce with more members than COLLAB_TARGET_GROUP is
    split, other kinds, other communicators and strict mode are not; every
    member of the list computes the same partition for a sequence (each
    keeps exactly its own part), the parts change with the sequence, and
    a peer outside the list keeps the list as it is.
*/
#include "engine/cl_engine_groups.h"

#include "engine/cl_comm.h"
#include "selftest.h"

#include <stdio.h>
#include <string.h>

/* The fake engine: the context's argument, struct cl_engine, which the
   component sees only as an incomplete type (docs/architecture.md). */
typedef struct cl_engine {
    cl_settings_t set;
    int asked; /* calls of settings */
} fake_t;

static const cl_settings_t *f_settings(fake_t *f)
{
    f->asked++;
    return &f->set;
}

static eng_groups_t *fake_groups(fake_t *f, int target, bool strict)
{
    memset(f, 0, sizeof *f);
    f->set.world_size = 64;
    f->set.target_group = target;
    f->set.strict = strict;
    eng_groups_ctx_t ctx = {.arg = f, .settings = f_settings};
    eng_groups_t *g = eng_groups_new(&ctx);
    CHECK(g != NULL);
    return g;
}

/* Which collectives are split, and the count of groups it remembers. */
static void test_applies(void)
{
    fake_t f;
    eng_groups_t *g = fake_groups(&f, 4, false);
    collab_comm_t world = {.id = CL_COMM_WORLD_ID, .kind = CL_COMM_WORLD, .size = 64};
    collab_comm_t derived = {.id = 77, .kind = CL_COMM_DERIVED, .size = 64};
    CHECK(eng_groups_count(g) == 0);
    CHECK(!eng_groups_split_applies(g, &world, CL_COLL_ALLREDUCE, 4)); /* at the target */
    CHECK(eng_groups_count(g) == 1);
    CHECK(eng_groups_split_applies(g, &world, CL_COLL_ALLREDUCE, 9)); /* 3 groups */
    CHECK(eng_groups_count(g) == 3);
    CHECK(f.asked > 0); /* the settings come from the context */
    /* Other kinds and communicators keep the whole list, and leave the
       count alone. */
    CHECK(!eng_groups_split_applies(g, &world, CL_COLL_BCAST, 9));
    CHECK(!eng_groups_split_applies(g, &world, CL_COLL_REDUCE, 9));
    CHECK(!eng_groups_split_applies(g, &derived, CL_COLL_ALLREDUCE, 9));
    CHECK(eng_groups_count(g) == 3);
    /* The view's settings change: read at every call. */
    f.set.target_group = 16;
    CHECK(!eng_groups_split_applies(g, &world, CL_COLL_ALLREDUCE, 9));
    CHECK(eng_groups_count(g) == 1);
    f.set.target_group = 2;
    CHECK(eng_groups_split_applies(g, &world, CL_COLL_ALLREDUCE, 9));
    CHECK(eng_groups_count(g) == 5);
    f.set.strict = true;
    CHECK(!eng_groups_split_applies(g, &world, CL_COLL_ALLREDUCE, 9));
    eng_groups_destroy(&g);
    CHECK(g == NULL);
    eng_groups_destroy(&g); /* accepts NULL */
}

#define K 10

/* Every member of a list of K computes the same parts: each part holds
   its members only, the parts cover the list once, none exceeds the
   target (weights and client flags all plain).  Writes the partition to
   part_of: each member's part, named by the lowest rank in it. */
static void partition(eng_groups_t *g, uint64_t seq, const int *ranks, int part_of[K])
{
    double weight[K];
    int client[K];
    for (int i = 0; i < K; i++) {
        weight[i] = 1.0;
        client[i] = 0;
        part_of[i] = -1;
    }
    for (int i = 0; i < K; i++) {
        int list[K];
        memcpy(list, ranks, sizeof list);
        int n = eng_groups_mine(g, ranks[i], seq, K, list, weight, client);
        CHECK(n > 0 && n <= 4);
        bool self_in = false;
        for (int j = 0; j < n; j++) {
            self_in |= list[j] == ranks[i];
            if (j > 0)
                CHECK(list[j] > list[j - 1]); /* still ascending */
        }
        CHECK(self_in);
        /* Every member of this part computes this very part. */
        for (int j = 0; j < n; j++) {
            int m = -1;
            for (int x = 0; x < K; x++)
                if (ranks[x] == list[j])
                    m = x;
            CHECK(m >= 0);
            if (m < 0)
                continue;
            if (part_of[m] < 0)
                part_of[m] = list[0];
            CHECK(part_of[m] == list[0]);
        }
    }
    for (int i = 0; i < K; i++)
        CHECK(part_of[i] >= 0); /* covered */
}

static void test_mine(void)
{
    fake_t f;
    eng_groups_t *g = fake_groups(&f, 4, false);
    int ranks[K] = {0, 2, 3, 5, 8, 9, 11, 12, 20, 31}; /* comm ranks, ascending */
    int a[K], b[K];
    partition(g, 7, ranks, a);
    partition(g, 7, ranks, b);
    CHECK(memcmp(a, b, sizeof a) == 0); /* a pure function of the sequence */
    bool differs = false;
    for (uint64_t seq = 8; seq < 40 && !differs; seq++) {
        partition(g, seq, ranks, b);
        differs = memcmp(a, b, sizeof a) != 0;
    }
    CHECK(differs); /* regrouped at other collectives */
    /* A peer that is not in the list: nothing to pick, the list kept. */
    int list[K];
    memcpy(list, ranks, sizeof list);
    CHECK(eng_groups_mine(g, 4, 7, K, list, NULL, NULL) == K);
    CHECK(memcmp(list, ranks, sizeof list) == 0);
    /* Weights and client flags may be NULL (all 1, none a client). */
    CHECK(eng_groups_mine(g, 5, 7, K, list, NULL, NULL) > 0);
    eng_groups_destroy(&g);
}

int main(void)
{
    test_applies();
    test_mine();
    printf("cl_engine_groups_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
