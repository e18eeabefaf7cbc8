/*  cl_engine_relay.h - messages between two client-mode members through a
    relaying monitor, one component of the engine (cl_engine_relay.c;
    docs/monitor.md §8, docs/wire.md §11).

    eng_relay_t owns the seal of this peer's relayed messages, a relaying
    monitor's token bucket, its queue, the messages that wait for a view
    listing both ends, the counters, and one timer in the loop's set,
    armed while anything waits.

    It sees the engine only through the context it gets at creation
    (eng_relay_ctx_t): it never includes the engine's private header and
    never writes a peer record.  Engine thread only, except
    eng_relay_stats (any thread: the counters it reads are atomic).
*/
#ifndef CL_ENGINE_RELAY_H_INCLUDED
#define CL_ENGINE_RELAY_H_INCLUDED

#include "engine/cl_engine.h"
#include "engine/cl_member.h"
#include "engine/cl_timer.h"
#include "engine/cl_wire.h"
#include "util/cl_config.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct eng_relay eng_relay_t;

/* The engine, incomplete here: the type of the context's argument, so that
   an adapter handed something else does not compile (docs/architecture.md,
   "Typed contexts"). */
struct cl_engine;

/* What the relay may ask of the engine.  Every function but desc gets
   `arg`. */
typedef struct {
    struct cl_engine *arg; /* the engine, opaque here */
    /* COLLAB_RUN_ID, _TIMEOUT, _MAX_MESSAGE, _RELAY, _RELAY_MBIT,
       client mode, monitor; read when used. */
    const cl_config_t *cfg;
    const uint8_t *self_key;   /* this peer's identity key (32 bytes) */
    const uint8_t *secret_key; /* its secret key (32 bytes), read at creation only */
    cl_timer_t *timers;        /* the loop's set: one timer is registered in it */
    const cl_member_t *mb;     /* the peer records (read only) */
    /* The engine's clock (eng_now). */
    double (*now)(struct cl_engine *arg);
    /* Whether this peer has a link to key (one under way counts). */
    bool (*has_link)(struct cl_engine *arg, const uint8_t key[32]);
    /* Sends m to a member as the engine sends (eng_send); 0 or a
       negative status. */
    int (*send)(struct cl_engine *arg, const cl_peer_t *to, cl_wire_msg_t *m);
    /* Hands an opened message to the engine as if it had come from key
       (eng_on_message: the authority gate judges it as the sender's). */
    void (*deliver)(struct cl_engine *arg, const uint8_t key[32], const cl_wire_msg_t *m);
    /* A peer's description for the log (eng_peer_desc). */
    const char *(*desc)(const cl_peer_t *p, char *out, size_t len);
} eng_relay_ctx_t;

/* Creates the component (its timer registered, not armed) or NULL (out
   of memory).  Logs that COLLAB_RELAY does nothing on a peer that is no
   monitor, and a relaying monitor's rate. */
eng_relay_t *eng_relay_new(const eng_relay_ctx_t *ctx);
/* Destroys it with what waits (its timer removed); nulls *self_p;
   accepts NULL. */
void eng_relay_destroy(eng_relay_t **self_p);

/* Must a message to `to` go relayed (both are client-mode members)?
   False when self is NULL. */
bool eng_relay_needed(const eng_relay_t *self, const cl_peer_t *to);
/* Seals m for `to` and sends it to a relaying monitor of the view.  Returns
   as eng_send; COLLAB_ERR_PROC_FAILED (logged) when no monitor relays. */
int eng_relay_send(eng_relay_t *self, const cl_peer_t *to, cl_wire_msg_t *m);
/* A RELAY that passed the authority gate, from key (p its record, NULL
   if unknown): forwarded (a relaying monitor) or opened and handed to
   the context's deliver as the sender's (a member).  Accepts NULL self. */
void eng_relay_on_message(eng_relay_t *self, const cl_peer_t *p, const uint8_t key[32],
                          const cl_wire_msg_t *m);
/* The view changed: a relaying monitor looks at once at the messages that
   waited for it (its timer, armed while anything waits, forwards what
   the rate allows).  Accepts NULL. */
void eng_relay_view(eng_relay_t *self);
/* The counters for collab-monitor (zeroed when self is NULL). */
void eng_relay_stats(const eng_relay_t *self, cl_relay_stats_t *out);

#endif
