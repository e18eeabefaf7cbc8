/*  ctx_fixture.h - what the selftests of the engine's components on a
    fake context share (cl_engine_join_test, cl_engine_match_test,
    cl_engine_member_test, cl_engine_leave_test, cl_engine_pause_test):
    the peers' keys (s_keys, set up by ctx_keys_init), the index of a key
    among them (key_index), the address of one as COLLAB_INITIAL_PEERS
    lists it (address_of), and the end of a component on its fake
    context (CTX_FAKE_FREE: destroyed twice, no timer of it left, the
    timer set and the peer records freed).

    Header-only, for one test each; every function is static inline, so
    a test uses what it needs.
*/
#ifndef CTX_FIXTURE_H_INCLUDED
#define CTX_FIXTURE_H_INCLUDED

#include "engine/cl_member.h"
#include "engine/cl_timer.h"
#include "util/cl_identity.h"

#include "selftest.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CTX_NKEYS 6 /* keys a test can name: s_keys[0..CTX_NKEYS) */

/* s_keys[0] is this peer's; the others follow in ascending order. */
static uint8_t s_keys[CTX_NKEYS][32];

/* Fills s_keys[i] with the byte first + 0x11 * i (first 0x01: 0x01,
   0x12, ...; first 0x11: 0x11, 0x22, ...), so that s_keys[0], this
   peer's, is the lowest. */
static inline void ctx_keys_init(uint8_t first)
{
    for (int i = 0; i < CTX_NKEYS; i++)
        memset(s_keys[i], first + 0x11 * i, 32);
}

/* The index of key in s_keys, or -1 for a key that is none of them. */
static inline int key_index(const uint8_t key[32])
{
    for (int i = 0; i < CTX_NKEYS; i++)
        if (memcmp(key, s_keys[i], 32) == 0)
            return i;
    return -1;
}

/* The address of s_keys[i], as COLLAB_INITIAL_PEERS lists it (port
   9001 + i), in out[len]. */
static inline void address_of(int i, char *out, size_t len)
{
    char id[64];
    CHECK(cl_base58_encode(s_keys[i], 32, id, sizeof id) == 0);
    snprintf(out, len, "/ip4/127.0.0.1/tcp/%d/p2p/%s", 9001 + i, id);
}

/* Frees the timer set and the peer records of a fake context, after
   checking that the component destroyed before left no timer in it. */
static inline void ctx_free_records(cl_timer_t **timers, cl_member_t **mb)
{
    CHECK(isinf(cl_timer_next(*timers))); /* its timer went with it */
    cl_timer_destroy(timers);
    cl_member_destroy(mb);
}

/* Ends a component on its fake context: destroy(pp) nulls *pp and
   accepts NULL the second time, then ctx_free_records(timers, mb).  A
   macro since every component has a destructor of its own type. */
#define CTX_FAKE_FREE(destroy, pp, timers, mb)                                                     \
    do {                                                                                           \
        destroy(pp);                                                                               \
        CHECK(*(pp) == NULL);                                                                      \
        destroy(pp); /* accepts NULL */                                                            \
        ctx_free_records(timers, mb);                                                              \
    } while (0)

#endif
