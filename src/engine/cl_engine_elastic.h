/*  cl_engine_elastic.h - the elastic swarm inside the engine
    (docs/elastic.md, docs/state-sync.md).

    cl_engine_elastic.c follows the world communicator's collective stream
    (cl_stream), admits joiners and re-admits stragglers into the world
    group at step boundaries (cl_admission, on the coordinator), maps a
    joiner's local collectives onto the group's sequence numbers and keeps
    the group generations straight around an admission; cl_engine_sync.c
    carries the state (registered broadcast buffers, cl_statereg; results
    of other start-up collectives, cl_startup) from the veterans to the
    joiners.  The rest of the engine calls the eng_el_* hooks below at a
    few well-defined points; everything here runs on the engine thread.
*/
#ifndef CL_ENGINE_ELASTIC_H_INCLUDED
#define CL_ENGINE_ELASTIC_H_INCLUDED

#include "engine/cl_comm.h"
#include "engine/cl_elmsg.h"
#include "engine/cl_member.h"
#include "engine/cl_request.h"
#include "engine/cl_wire.h"
#include "mpi_collab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The engine and a collective stream, opaque here (struct cl_engine is
   defined in cl_engine.c only): cl_engine_elastic.c, which includes this
   header, sees neither. */
struct cl_engine;
typedef struct stream stream_t;

/* The elastic layer's state, opaque here: its definition is in
   cl_engine_elastic_int.h, which only cl_engine_elastic.c,
   cl_engine_elastic_ctx.c and cl_engine_elastic_hooks.c include.  The
   loop holds the pointer in its parts (eng_parts(e)->el), which it alone
   writes. */
struct eng_elastic;

/* ---------------------------------------------------------------------- */
/* Hooks called by the rest of the engine. */

/* Creates the elastic state, after the collective streams: *out is set
   as soon as the layer exists (its parts' contexts may ask for it while
   they are made).  COLLAB_ERR_NO_MEM, or a checkpoint setting's
   COLLAB_ERR_CONFIG; on failure *out is NULL. */
int eng_el_create(struct cl_engine *e, struct eng_elastic **out);
/* Frees it, completing the requests still parked here with
   COLLAB_ERR_NOT_INIT; accepts NULL. */
void eng_el_destroy(struct eng_elastic **el);

/* The program posted collective req on stream s; req->coll.seq holds the
   sequence number the engine gave it.  Records it (step learning, state
   registry), may renumber it (a joiner's or re-admitted straggler's local
   index onto the group's sequence), lets the coordinator admit waiting
   peers, and returns true when it took the request over (a joiner's
   start-up collective answered from the veterans' state, a straggler held
   at its step boundary): the engine must then not queue it.  again: req
   was handed back (eng_cs_submit_at) and recorded when first posted;
   nothing is done. */
bool eng_el_on_post(struct cl_engine *e, stream_t *s, collab_request_t *req, bool again);

/* Collective req of stream s completed with status (just before the
   request completes): keeps start-up results for joiners. */
void eng_el_on_done(struct cl_engine *e, stream_t *s, collab_request_t *req, int status);

/* The fast path (cl_engine_fast.c) completed collective req of stream s
   (a stand-in request: arguments and sequence; the program is no longer
   in it): records it as eng_el_on_post and eng_el_on_done would. */
void eng_el_on_fast(struct cl_engine *e, stream_t *s, const collab_request_t *req);

/* May stream s run on the fast path now?  True for communicators other
   than the world; for the world only while this peer is in the group,
   past its start-up collectives, and no admission waits or is under
   way. */
bool eng_el_fast_ok(struct cl_engine *e, stream_t *s);

/* Collectives in one step of the world stream (1 while unknown). */
uint64_t eng_el_period(struct cl_engine *e);

/* MPIX_Collab_step was called. */
void eng_el_mark_step(struct cl_engine *e);

/* The program copied bytes out of start-up broadcast buffers
   (collab_state_follow): the registry reads and writes them there. */
void eng_el_follow(struct cl_engine *e, const collab_follow_t *v, size_t n);
/* Are this peer's step boundaries on the world communicator known
   (learned, configured or marked)?  Only then can a member taken out of
   the group be re-admitted, so only then is a late but live member taken
   out (docs/elastic.md §6). */
bool eng_el_boundaries_known(struct cl_engine *e);

/* A view was installed (after the engine recorded its group generation). */
void eng_el_view_changed(struct cl_engine *e);

/* An ELASTIC message from key (p: its record, NULL when unknown). */
void eng_el_on_message(struct cl_engine *e, cl_peer_t *p, const uint8_t key[32],
                       const cl_wire_msg_t *m);

/* The elastic layer's after-timers hook: the loop calls it every turn
   right after cl_timer_run and eng_auth_successor_check.  It makes a
   foreign program leave, frees a pull that is done, marks the turn for
   the pause (eng_pause_after_timers: the mark eng_el_check_pause measures
   a stop from; a pause's doubt ends once this peer is no member), and
   undoes an admission whose pull this turn's timers found unserved
   (eng_admittee_poll).  Its deadlines are in the loop's set: the end of a
   pause's doubt (cl_engine_pause.c) and a monitor's checkpoints
   (cl_engine_checkpoint.c). */
void eng_el_after_timers(struct cl_engine *e, double now);

/* This peer became a member (eng_fan_out_member): arms the timers of the
   elastic layer that run while it is one (a monitor's checkpoints). */
void eng_el_member(struct cl_engine *e);

/* Sends key (a member) a PROBE: this peer, back from a pause, asks for
   its view (cl_engine_elastic_hooks.c).  Nothing without the layer
   (before eng_el_create, after eng_el_destroy). */
void eng_el_probe(struct cl_engine *e, const uint8_t key[32]);

/* Called first thing in every turn of the engine loop and for every event:
   notices that this process was stopped for longer than COLLAB_TIMEOUT
   (SIGSTOP, a frozen VM), so that the silence of the others is not taken
   for their death and the peer finds out whether it was taken out
   (eng_pause_check, cl_engine_pause.h). */
void eng_el_check_pause(struct cl_engine *e);

/* After such a pause, until every member it asked answered with its view
   (or COLLAB_TIMEOUT passed): true, and no collective starts or
   completes, so that one the others may have completed without this peer
   never folds in their inputs that waited for it (docs/collectives.md §3,
   "Members that were stopped").  The answers may take it out of the
   group: its running collective then restarts alone. */
bool eng_el_in_doubt(struct cl_engine *e);
/* The authority decided the question a pause holds the collectives for
   (eng_auth_went_on turned false): eng_pause_decided. */
void eng_el_pause_decided(struct cl_engine *e);
/* A VIEW from key was handled (installed or not): an answer to a PROBE
   ends the doubt once every member asked has answered. */
void eng_el_view_from(struct cl_engine *e, const uint8_t key[32]);
/* An admitter's view of group generation gen from `from`, older than this
   coordinator's own, is an admission to adopt (eng_elastic_adoptable). */
bool eng_el_adoptable(struct cl_engine *e, const uint8_t from[32], uint64_t gen);

/* Generation rules.  ENG_EL_DEFAULT lets the engine decide. */
#define ENG_EL_DEFAULT (UINT64_MAX - 1)
/* The generation collective seq of s must start under: 0 (alone: an
   evicted straggler finishing its step), or ENG_EL_DEFAULT. */
uint64_t eng_el_choose_gen(struct cl_engine *e, stream_t *s, uint64_t seq);
/* May collective seq of s run under generation gen?  False for
   generations older than an admission that takes effect at or before seq. */
bool eng_el_gen_ok(struct cl_engine *e, stream_t *s, uint64_t seq, uint64_t gen);

/* What to do with a message of generation hgen for the running collective
   seq of s, which runs under cur. */
typedef enum {
    ENG_EL_ROUTE_DEFAULT = 0, /* the engine's rule: the older generation wins */
    ENG_EL_ROUTE_RESTART = 1, /* restart under hgen (ours predates an admission), deliver */
    ENG_EL_ROUTE_NOTIFY = 2,  /* drop it and tell the sender our generation */
    ENG_EL_ROUTE_KEEP = 3,    /* tell the sender ours, and keep it for when we switch */
} eng_el_route_t;
eng_el_route_t eng_el_route(struct cl_engine *e, stream_t *s, uint64_t seq, uint64_t cur,
                            uint64_t hgen);

/* True when an ADMIT of the admitter named key as one of its joiners (a
   new peer or a straggler to resync) and that admission is still
   remembered: the peers a donor serves (docs/security.md §3). */
bool eng_el_is_entrant(struct cl_engine *e, const uint8_t key[32]);

/* Does world rank w take part in collective seq on comm, and with which
   weight (*weight holds the view's; set to 0 for a re-admitted straggler's
   first step)?  False for a joiner before the sequence that admits it. */
bool eng_el_takes_part(struct cl_engine *e, const collab_comm_t *comm, int w, uint64_t seq,
                       double *weight);

/* Does the group with the joiners js of an admission hold more than
   COLLAB_TARGET_GROUP members, so that world all-reduces run in several
   groups (never in strict mode)?  Then the admitter alone serves the
   state, from a copy taken at s (docs/elastic.md §9).  The joiners count
   once whether or not the current view has them in the group; their
   count with the members goes to *members (may be NULL). */
bool eng_el_split_admission(struct cl_engine *e, const cl_el_joiner_t *js, uint32_t nj,
                            int *members);

/* May this peer serve the state of admission s now (its program is
   blocked inside collective s of the world communicator, or it holds a
   copy of its state taken there)?  1 yes, 0 not yet, -1 never (it went
   past s without a copy, or is outside the group). */
int eng_el_can_serve(struct cl_engine *e, uint64_t s);

/* Completes every request this peer's admission parked or held with
   status (eng_admittee_abort), when it leaves or stops. */
void eng_el_abort(struct cl_engine *e, int status);

/* Checkpoints (cl_engine_checkpoint.h) as the rest of the engine asks:
   does a monitor that takes checkpoints accept ELASTIC messages of this
   sub type (the loop drops the others); this peer, as coordinator,
   admits a rank (before the view goes out: a new first peer resumes from
   a monitor's checkpoint). */
bool eng_el_monitor_accepts(struct cl_engine *e, int sub);
void eng_el_on_admit_rank(struct cl_engine *e, const uint8_t key[32]);

/* Is a copy of this peer's state expected for the monitor key, for any
   admission (a checkpoint, docs/monitor.md §7: eng_donor_expects)?  For
   the authority's context (copy_expected). */
bool eng_el_copy_expected(struct cl_engine *e, const uint8_t key[32]);

/* The steps the elastic layer learned on the world stream: collectives
   past the start-up prefix over the period; 0 while either is unknown
   (for the reports, when the program never called MPIX_Collab_step). */
uint64_t eng_el_steps(struct cl_engine *e);

#endif
