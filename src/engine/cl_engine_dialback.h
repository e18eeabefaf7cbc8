/*  cl_engine_dialback.h - the coordinator's check that a joiner can be
    reached, one component (cl_engine_dialback.c; docs/membership.md,
    "Reachability").

    eng_dialback_t owns the dial-backs running and the verdicts kept, and
    one timer in the loop's set.  It sees the engine only through the
    context it gets at creation (eng_dialback_ctx_t): it never includes
    the engine's private header, and nothing else writes its state.
    Engine thread only.
*/
#ifndef CL_ENGINE_DIALBACK_H_INCLUDED
#define CL_ENGINE_DIALBACK_H_INCLUDED

#include "engine/cl_timer.h"
#include "engine/cl_wire.h"
#include "util/cl_config.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct eng_dialback eng_dialback_t;

/* The engine, incomplete here: the type of the context's argument, so that
   an adapter handed something else does not compile (docs/architecture.md,
   "Typed contexts"). */
struct cl_engine;

/* What the dial-back may ask of the engine.  Every function gets `arg`.
   The pointers stay valid for the component's life. */
typedef struct {
    struct cl_engine *arg; /* the engine, opaque here */
    /* The engine's configuration (read only): COLLAB_TIMEOUT sets how long
       a dial-back may take (twice it, within 3 to 10 s). */
    const cl_config_t *cfg;
    /* The loop's timer set: the component registers one timer there,
       armed at the earliest end of a running dial-back. */
    cl_timer_t *timers;
    /* The engine's clock (eng_now). */
    double (*now)(struct cl_engine *arg);
    /* The transport: is our outbound link to key up (its handshake
       done); open one to address (0 or a negative status); drop it. */
    bool (*link_up)(struct cl_engine *arg, const uint8_t key[32]);
    int (*connect)(struct cl_engine *arg, const uint8_t key[32], const char *address);
    void (*drop)(struct cl_engine *arg, const uint8_t key[32]);
    /* Is key a member of this peer's view (a record not gone)? */
    bool (*is_member)(struct cl_engine *arg, const uint8_t key[32]);
    /* Is this peer the coordinator now (eng_self_coordinates)? */
    bool (*coordinates)(struct cl_engine *arg);
    /* Fills the swarm's settings into a JOIN_REPLY (eng_join_reply_settings). */
    void (*reply_settings)(struct cl_engine *arg, cl_wire_join_reply_t *r);
    /* Sends m back on the connection key's last message came on (its
       JOIN): cl_transport_reply. */
    int (*reply)(struct cl_engine *arg, const uint8_t key[32], cl_wire_msg_t *m);
    /* Handles key's JOIN j again now that the dial-back reached it
       (eng_join_on_join): it is admitted at once, not at its next try. */
    void (*admit)(struct cl_engine *arg, const uint8_t key[32], const cl_wire_join_t *j);
} eng_dialback_ctx_t;

/* Creates the component; copies ctx and registers its timer in
   ctx.timers.  Returns NULL without memory or without room in the set;
   the caller owns the result. */
eng_dialback_t *eng_dialback_new(const eng_dialback_ctx_t *ctx);
/* Unregisters its timer, frees it and nulls *d_p.  Accepts NULL. */
void eng_dialback_destroy(eng_dialback_t **d_p);
/* Coordinator, on a JOIN j from a public peer key that is not a member:
   1 admit it (reached, or our link to it is up; also when d is NULL),
   0 not yet (the dial-back runs, or too many run; it is admitted when it
   completes), -1 unreachable (answered JOIN_REPLY UNREACHABLE). */
int eng_dialback_check(eng_dialback_t *d, const uint8_t key[32], const cl_wire_join_t *j);
/* Our outbound link to key completed its handshake: a dial-back to key
   succeeded, and the joiner is admitted now if this peer coordinates.
   Accepts NULL. */
void eng_dialback_on_up(eng_dialback_t *d, const uint8_t key[32]);

#endif
