/*  cl_engine_member_int.h - what cl_engine_member.c (views, heartbeats,
    the failure detector) and cl_engine_suspect.c (suspicion, the
    coordinator's side) share between themselves.

    What the rest of the engine calls of either is declared in
    cl_engine_int.h.
*/
#ifndef CL_ENGINE_MEMBER_INT_H_INCLUDED
#define CL_ENGINE_MEMBER_INT_H_INCLUDED

#include "engine/cl_engine_int.h"

#define REASON_LEFT ENG_REASON_LEFT

/* cl_engine_member.c */
/* Suspects p (alive, not this peer) for reason (CL_SUSPECT_*, REASON_LEFT):
   logs it, then removes it when this peer coordinates, else reports it to
   the coordinator (a departure excepted). */
void eng_suspect(struct cl_engine *e, cl_peer_t *p, int reason);

/* cl_engine_suspect.c */
/* Coordinator: removes every member this peer suspects, in one view. */
void eng_remove_suspects(struct cl_engine *e);
/* A member's suspicion of p, for the coordinator to confirm (SUSPECT). */
void eng_tell_coordinator(struct cl_engine *e, const cl_peer_t *p, int reason);
/* Coordinator: a member's SUSPECT report of another one (or of itself:
   eng_report_self_out). */
void eng_on_suspect(struct cl_engine *e, const cl_peer_t *from, const cl_wire_suspect_t *s);

#endif
