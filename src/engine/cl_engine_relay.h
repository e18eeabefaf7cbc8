/*  cl_engine_relay.h - messages between two client-mode members through a
    relaying monitor, one component of the engine (cl_engine_relay.c;
    docs/monitor.md §8, docs/wire.md §11).
*/
#ifndef CL_ENGINE_RELAY_H_INCLUDED
#define CL_ENGINE_RELAY_H_INCLUDED

#include "engine/cl_engine.h"
#include "engine/cl_member.h"
#include "engine/cl_wire.h"

#include <stdbool.h>
#include <stdint.h>

struct cl_engine;

/* Must a message to `to` go relayed (both are client-mode members)? */
bool eng_relay_needed(const struct cl_engine *e, const cl_peer_t *to);
/* Seals m for `to` and sends it to a relaying monitor of the view.  Returns
   as eng_send; COLLAB_ERR_PROC_FAILED (logged) when no monitor relays. */
int eng_relay_send(struct cl_engine *e, const cl_peer_t *to, cl_wire_msg_t *m);
/* A RELAY that passed the authority gate: forwarded (a relaying monitor)
   or opened and handed to eng_on_message as the sender's (a member).
   eng_relay_init registers it with the loop. */
void eng_relay_on_message(struct cl_engine *e, const cl_peer_t *p, const uint8_t key[32],
                          const cl_wire_msg_t *m);
/* The view changed: a relaying monitor looks at once at the messages that
   waited for it (its timer in e->timers, armed while anything waits,
   forwards what the rate allows). */
void eng_relay_view(struct cl_engine *e);
void eng_relay_stats(const struct cl_engine *e, cl_relay_stats_t *out);

#endif
