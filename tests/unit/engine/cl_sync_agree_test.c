/*  cl_sync_agree_test.c - selftest of the majority rule of state sync and
    checkpoints (cl_sync_agree.c), driven without sockets.

    Checks that a version declared by more than half of the donors that
    answered is taken and every other declaration named; that an item more
    than half do not declare is left out; that a split (no majority either
    way) decides nothing and names each side; that donors that did not
    answer, or are gone, do not count; that a result's signature is part
    of its version; that one donor is named once however many items it
    declares otherwise; and that a monitor's pruning keeps in each list
    only what the majority declares, or nothing after a split.
*/
#include "engine/cl_sync_agree.h"

#include <stdio.h>
#include <string.h>

#include "selftest.h"

#define MAXD 5
#define MAXI 4

/* Donors whose lists live in fixed arrays. */
typedef struct {
    cl_sync_donor_t d[MAXD];
    cl_el_buf_t bufs[MAXD][MAXI];
    cl_el_res_t res[MAXD][MAXI];
    int n;
} fixture_t;

static void fixture_init(fixture_t *f, int n)
{
    memset(f, 0, sizeof *f);
    f->n = n;
    for (int k = 0; k < n; k++) {
        f->d[k].key[0] = (uint8_t)(k + 1);
        f->d[k].replied = true;
        f->d[k].bufs = f->bufs[k];
        f->d[k].res = f->res[k];
    }
}

/* Donor k declares broadcast buffer index with size and a hash made of
   tag (appended: the lists stay ascending when called in index order). */
static void add_buf(fixture_t *f, int k, uint64_t index, uint64_t size, uint8_t tag)
{
    cl_el_buf_t *b = &f->bufs[k][f->d[k].nbufs++];
    b->index = index;
    b->size = size;
    memset(b->hash, tag, sizeof b->hash);
}

static void add_res(fixture_t *f, int k, uint64_t index, uint64_t len, uint32_t sig, uint8_t tag)
{
    cl_el_res_t *r = &f->res[k][f->d[k].nres++];
    r->index = index;
    r->len = len;
    r->signature = sig;
    memset(r->hash, tag, sizeof r->hash);
}

static int replied(const fixture_t *f)
{
    int n = 0;
    for (int k = 0; k < f->n; k++)
        n += f->d[k].replied && !f->d[k].gone;
    return n;
}

/* Two of three donors declare buffer 7 alike: taken; the third, which
   declares another hash, is named; so is one with another size. */
static void test_majority(void)
{
    fixture_t f;
    fixture_init(&f, 3);
    add_buf(&f, 0, 7, 100, 0xaa);
    add_buf(&f, 1, 7, 100, 0xaa);
    add_buf(&f, 2, 7, 100, 0xbb);
    cl_sync_naming_t names[MAXD];
    memset(names, 0, sizeof names);
    cl_sync_decl_t keep;
    CHECK(cl_sync_agree_decide(names, f.d, f.n, replied(&f), false, 7, &keep) == 1);
    CHECK(keep.has && keep.size == 100 && keep.hash[0] == 0xaa);
    CHECK(names[0].count == 0 && names[1].count == 0 && names[2].count == 1);
    CHECK(strstr(names[2].first, "broadcast #7") != NULL);
    CHECK(strstr(names[2].first, "unlike the majority") != NULL);

    f.bufs[2][0].hash[0] = 0xaa;
    f.bufs[2][0].size = 101; /* same hash, another size: another version */
    memset(names, 0, sizeof names);
    CHECK(cl_sync_agree_decide(names, f.d, f.n, replied(&f), false, 7, &keep) == 1);
    CHECK(keep.has && keep.size == 100);
    CHECK(names[2].count == 1 && names[0].count == 0);

    /* No names asked for: the same decision. */
    CHECK(cl_sync_agree_decide(NULL, f.d, f.n, replied(&f), false, 7, &keep) == 1);
    CHECK(keep.has && keep.size == 100);
}

/* One of three donors declares buffer 3: more than half do not, so it is
   left out and the one that declares it is named. */
static void test_left_out(void)
{
    fixture_t f;
    fixture_init(&f, 3);
    add_buf(&f, 1, 3, 8, 0x11);
    cl_sync_naming_t names[MAXD];
    memset(names, 0, sizeof names);
    cl_sync_decl_t keep;
    CHECK(cl_sync_agree_decide(names, f.d, f.n, replied(&f), false, 3, &keep) == 1);
    CHECK(!keep.has);
    CHECK(names[1].count == 1 && names[0].count == 0 && names[2].count == 0);
    CHECK(strstr(names[1].first, "left out") != NULL);
}

/* Two donors that differ: no majority either way; both named. */
static void test_split(void)
{
    fixture_t f;
    fixture_init(&f, 2);
    add_buf(&f, 0, 1, 10, 0x01);
    add_buf(&f, 1, 1, 10, 0x02);
    cl_sync_naming_t names[MAXD];
    memset(names, 0, sizeof names);
    cl_sync_decl_t keep;
    CHECK(cl_sync_agree_decide(names, f.d, f.n, replied(&f), false, 1, &keep) == 0);
    CHECK(!keep.has);
    CHECK(names[0].count == 1 && names[1].count == 1);
    CHECK(strstr(names[0].first, "no version of it has a majority") != NULL);

    /* One declares it, one does not: a split too. */
    fixture_init(&f, 2);
    add_buf(&f, 0, 1, 10, 0x01);
    memset(names, 0, sizeof names);
    CHECK(cl_sync_agree_decide(names, f.d, f.n, replied(&f), false, 1, &keep) == 0);
    CHECK(!keep.has);
    CHECK(strstr(names[1].first, "did not declare start-up broadcast #1") != NULL);
}

/* Donors that did not answer or are gone neither vote nor are named:
   1 honest donor against 2 silent ones decides alone; with a liar that
   answered, 1 against 1 is a split. */
static void test_absent(void)
{
    fixture_t f;
    fixture_init(&f, 4);
    add_buf(&f, 0, 5, 64, 0x55);
    add_buf(&f, 1, 5, 64, 0x66);
    add_buf(&f, 2, 5, 64, 0x66);
    f.d[1].replied = false;
    f.d[2].gone = true;
    cl_sync_naming_t names[MAXD];
    memset(names, 0, sizeof names);
    cl_sync_decl_t keep;
    CHECK(!cl_sync_agree_decl(&f.d[1], false, 5).has);
    CHECK(!cl_sync_agree_decl(&f.d[2], false, 5).has);
    CHECK(cl_sync_agree_decl(&f.d[0], false, 5).has);
    /* Donors 0 and 3 answered; 3 does not declare it: a split. */
    CHECK(replied(&f) == 2);
    CHECK(cl_sync_agree_decide(names, f.d, f.n, replied(&f), false, 5, &keep) == 0);
    CHECK(names[1].count == 0 && names[2].count == 0);
    CHECK(names[0].count == 1 && names[3].count == 1);
    /* Donor 3 gone too: donor 0 alone is the majority. */
    f.d[3].gone = true;
    memset(names, 0, sizeof names);
    CHECK(cl_sync_agree_decide(names, f.d, f.n, replied(&f), false, 5, &keep) == 1);
    CHECK(keep.has && keep.hash[0] == 0x55);
    for (int k = 0; k < f.n; k++)
        CHECK(names[k].count == 0);
}

/* A result's signature is part of its version; results and buffers of
   the same index are different items. */
static void test_results(void)
{
    fixture_t f;
    fixture_init(&f, 3);
    add_res(&f, 0, 2, 16, 0x1234, 0x77);
    add_res(&f, 1, 2, 16, 0x1234, 0x77);
    add_res(&f, 2, 2, 16, 0x9999, 0x77);
    add_buf(&f, 2, 2, 16, 0x77);
    cl_sync_naming_t names[MAXD];
    memset(names, 0, sizeof names);
    cl_sync_decl_t keep;
    CHECK(cl_sync_agree_decide(names, f.d, f.n, replied(&f), true, 2, &keep) == 1);
    CHECK(keep.has && keep.signature == 0x1234 && keep.size == 16);
    CHECK(names[2].count == 1 && strstr(names[2].first, "result #2") != NULL);
    CHECK(!cl_sync_agree_decl(&f.d[0], false, 2).has);
    cl_sync_decl_t a = cl_sync_agree_decl(&f.d[0], true, 2),
                   b = cl_sync_agree_decl(&f.d[2], true, 2);
    CHECK(a.has && b.has && !cl_sync_agree_same(&a, &b));
    cl_sync_decl_t none1 = cl_sync_agree_decl(&f.d[0], true, 9),
                   none2 = cl_sync_agree_decl(&f.d[1], true, 9);
    CHECK(cl_sync_agree_same(&none1, &none2));
}

/* A monitor prunes: each list keeps only the majority's items, in the
   majority's version; a liar that declares several items otherwise is
   named once, with a count. */
static void test_prune(void)
{
    fixture_t f;
    fixture_init(&f, 3);
    for (int k = 0; k < 3; k++) {
        add_buf(&f, k, 1, 10, 0x01);
        add_buf(&f, k, 2, 20, k == 2 ? 0xee : 0x02); /* donor 2 lies about #2 */
    }
    add_buf(&f, 2, 3, 1u << 30, 0xee); /* and invents #3 */
    add_res(&f, 0, 4, 8, 1, 0x04);
    add_res(&f, 1, 4, 8, 1, 0x04);
    cl_sync_naming_t names[MAXD];
    memset(names, 0, sizeof names);
    CHECK(cl_sync_agree_prune(names, f.d, f.n));
    CHECK(f.d[0].nbufs == 2 && f.d[1].nbufs == 2);
    CHECK(f.d[2].nbufs == 1 && f.d[2].bufs[0].index == 1);
    CHECK(f.d[0].nres == 1 && f.d[1].nres == 1 && f.d[2].nres == 0);
    CHECK(names[0].count == 0 && names[1].count == 0);
    CHECK(names[2].count == 3); /* #2, #3 and result #4 */

    /* A split: nothing is kept anywhere. */
    fixture_init(&f, 2);
    add_buf(&f, 0, 1, 10, 0x01);
    add_buf(&f, 1, 1, 10, 0x01);
    add_buf(&f, 0, 2, 10, 0x02);
    add_buf(&f, 1, 2, 10, 0x03);
    CHECK(!cl_sync_agree_prune(NULL, f.d, f.n));
    CHECK(f.d[0].nbufs == 0 && f.d[1].nbufs == 0);
}

int main(void)
{
    test_majority();
    test_left_out();
    test_split();
    test_absent();
    test_results();
    test_prune();
    if (s_failures > 0) {
        fprintf(stderr, "cl_sync_agree_test: %d failures\n", s_failures);
        return 1;
    }
    printf("cl_sync_agree_test: ok\n");
    return 0;
}
