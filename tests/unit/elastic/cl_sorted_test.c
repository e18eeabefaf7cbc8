/*  cl_sorted_test.c - selftest of the sorted-array helpers.

    Locates present and absent indexes (first, middle, past the end, empty
    array), grows the room only when full (16, then doubling) and opens a
    slot by moving the later entries up.
*/
#include "elastic/cl_sorted.h"
#include "util/cl_selftest.h"

#include <stdlib.h>

typedef struct {
    uint64_t index;
    int tag;
} entry_t;

static void test_locate(void)
{
    bool found = true;
    CL_CHECK(cl_sorted_locate(NULL, 0, sizeof(entry_t), 7, &found) == 0 && !found);
    const entry_t v[] = {{2, 20}, {5, 50}, {9, 90}, {UINT64_MAX, -1}};
    const size_t n = sizeof v / sizeof v[0];
    CL_CHECK(cl_sorted_locate(v, n, sizeof *v, 2, &found) == 0 && found);
    CL_CHECK(cl_sorted_locate(v, n, sizeof *v, 9, &found) == 2 && found);
    CL_CHECK(cl_sorted_locate(v, n, sizeof *v, UINT64_MAX, &found) == 3 && found);
    CL_CHECK(cl_sorted_locate(v, n, sizeof *v, 0, &found) == 0 && !found);
    CL_CHECK(cl_sorted_locate(v, n, sizeof *v, 6, &found) == 2 && !found);
    CL_CHECK(cl_sorted_locate(v, n - 1, sizeof *v, 10, &found) == 3 && !found);
}

static void test_grow_and_open(void)
{
    entry_t *v = NULL;
    size_t n = 0, cap = 0;
    /* Inserts 40 entries in descending order: each goes in front. */
    for (int k = 40; k >= 1; k--) {
        entry_t *g = cl_sorted_grow(v, n, &cap, sizeof *v);
        CL_CHECK(g != NULL);
        if (g == NULL)
            break;
        v = g;
        CL_CHECK(cap == (n < 16 ? 16 : n < 32 ? 32 : 64));
        bool found = true;
        size_t pos = cl_sorted_locate(v, n, sizeof *v, (uint64_t)k * 3, &found);
        CL_CHECK(pos == 0 && !found);
        cl_sorted_open(v, n, sizeof *v, pos);
        v[pos] = (entry_t){.index = (uint64_t)k * 3, .tag = k};
        n++;
    }
    CL_CHECK(n == 40 && cap == 64);
    for (size_t i = 0; i < n; i++)
        CL_CHECK(v[i].index == (i + 1) * 3 && v[i].tag == (int)i + 1);
    /* A slot in the middle moves only the later entries. */
    bool found = true;
    size_t pos = cl_sorted_locate(v, n, sizeof *v, 31, &found);
    CL_CHECK(pos == 10 && !found);
    cl_sorted_open(v, n, sizeof *v, pos);
    v[pos] = (entry_t){.index = 31, .tag = 0};
    n++;
    CL_CHECK(v[9].index == 30 && v[10].index == 31 && v[11].index == 33 && v[40].index == 120);
    /* Room left: grow hands back the same array. */
    size_t before = cap;
    CL_CHECK(cl_sorted_grow(v, n, &cap, sizeof *v) == v && cap == before);
    free(v);
}

int main(void)
{
    test_locate();
    test_grow_and_open();
    return cl_selftest_end("cl_sorted_test");
}
