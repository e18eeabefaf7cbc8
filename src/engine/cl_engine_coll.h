/*  cl_engine_coll.h - the collective streams as the rest of the engine
    sees them.

    The streams (cl_engine_coll.c with cl_engine_coll_start.c,
    cl_engine_coll_env.c, cl_engine_route.c and cl_engine_fast.c; what
    those files share: cl_engine_coll_int.h) keep their state in
    eng_cs_t, created by eng_coll_init and freed by eng_coll_fini.  Its
    struct is opaque to every other file: they read what they need
    through the functions below.  Engine thread only.
*/
#ifndef CL_ENGINE_COLL_H_INCLUDED
#define CL_ENGINE_COLL_H_INCLUDED

#include "engine/cl_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct eng_cs eng_cs_t;

/* Collectives completed here (on the engine or the fast path); 0 for a
   NULL cs.  The suspect's heartbeats and the reports read it. */
uint64_t eng_coll_completed(const eng_cs_t *cs);
/* Recent time between completions (an EWMA, seconds; 0 before the
   second one): how late a straggler is. */
double eng_coll_step_gap(const eng_cs_t *cs);
/* Does a call wait for the world group to form (matchmaking's
   question)? */
bool eng_coll_waiting_for_group(const eng_cs_t *cs);
/* Are messages this peer sent to itself waiting for delivery
   (eng_coll_deliver_local)?  The loop then polls without sleeping. */
bool eng_coll_local_pending(const eng_cs_t *cs);
/* False when a stream of communicator comm is known here and its comm
   rank r is not world rank w (point-to-point's check of a sender). */
bool eng_coll_comm_rank_is(const eng_cs_t *cs, uint64_t comm, int r, int w);
/* The communicators this peer entered collectives on, with how many:
   every stream but the self communicator's that started one.  Fills at
   most max entries of comms and returns how many there are (a
   GOODBYE's list, cl_engine_leave.h). */
size_t eng_coll_entered(const eng_cs_t *cs, cl_wire_bye_comm_t *comms, size_t max);

#endif
