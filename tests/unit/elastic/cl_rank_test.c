/*  cl_rank_test.c - selftest of the rank policy.

    A member keeps its rank whatever it asks; a newcomer gets its
    preferred rank when free, else its remembered ranks in order, else the
    lowest free rank, else none.  Out-of-range ranks are never given.  A
    peer rejoining gets the rank it asks for or none.
*/
#include "elastic/cl_rank.h"
#include "util/cl_selftest.h"

/* A world of 4 ranks; bit r of *ctx set means rank r is taken. */
static bool taken_free(const void *ctx, int r)
{
    unsigned taken = *(const unsigned *)ctx;
    return r >= 0 && r < 4 && (taken & (1u << r)) == 0;
}

static int pick_req(unsigned taken, int current, int preferred, int rem0, int rem1,
                    bool required)
{
    int lowest = -1;
    for (int r = 0; r < 4 && lowest < 0; r++)
        if (taken_free(&taken, r))
            lowest = r;
    cl_rank_ask_t a = {current >= 0, required, current, preferred, {rem0, rem1}, lowest};
    return cl_rank_pick(&a, taken_free, &taken);
}

static int pick(unsigned taken, int current, int preferred, int rem0, int rem1)
{
    return pick_req(taken, current, preferred, rem0, rem1, false);
}

int main(void)
{
    /* A member keeps its rank; a monitor stays without one. */
    CL_CHECK(pick(0x1, 0, 2, 3, -1) == 0);
    cl_rank_ask_t mon = {true, false, -1, 1, {2, -1}, 1};
    unsigned none = 0;
    CL_CHECK(cl_rank_pick(&mon, taken_free, &none) == -1);
    /* Preferred when free, else the remembered ranks in order. */
    CL_CHECK(pick(0x1, -1, 2, 3, -1) == 2);
    CL_CHECK(pick(0x5, -1, 2, 3, 1) == 3);
    CL_CHECK(pick(0xD, -1, 2, 3, 1) == 1);
    /* Else the lowest free. */
    CL_CHECK(pick(0x5, -1, 2, 0, -1) == 1);
    CL_CHECK(pick(0x0, -1, -1, -1, -1) == 0);
    /* Out of range is never free. */
    CL_CHECK(pick(0x1, -1, 9, 7, -1) == 1);
    /* A full world: standby. */
    CL_CHECK(pick(0xF, -1, 1, 2, -1) == -1);
    /* Rejoining: its own rank when free, else none (never another one,
       though others are free); a member still keeps its rank. */
    CL_CHECK(pick_req(0x1, -1, 2, -1, -1, true) == 2);
    CL_CHECK(pick_req(0x5, -1, 2, 3, -1, true) == -1);
    CL_CHECK(pick_req(0x5, 1, 2, -1, -1, true) == 1);
    return cl_selftest_end("cl_rank");
}
