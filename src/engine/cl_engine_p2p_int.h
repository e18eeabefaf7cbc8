/*  cl_engine_p2p_int.h - what cl_engine_p2p.c and its helper file
    cl_engine_flow.c (credit of point-to-point messages, docs/wire.md
    section 10) share.  Nothing else includes it.
*/
#ifndef CL_ENGINE_P2P_INT_H_INCLUDED
#define CL_ENGINE_P2P_INT_H_INCLUDED

#include "engine/cl_engine_p2p.h"
#include "engine/cl_p2p.h"

typedef struct eng_flow eng_flow_t;

/* The lowest wire version whose links count class EARLY (every COLL
   message; docs/wire.md section 10 item 8).  Class P2P: 6. */
#define ENG_FLOW_EARLY_VERSION 8

/* Creates the credit state of the component `owner`, which keeps the
   matching queues q; ctx must outlive it.  NULL without memory. */
eng_flow_t *eng_flow_new(const eng_p2p_ctx_t *ctx, cl_p2p_t *q, eng_p2p_t *owner);
/* Frees it (what waits for credit is dropped) and nulls *self_p. */
void eng_flow_destroy(eng_flow_t **self_p);
/* Sends P2P message m to member p now, or keeps a copy in p's FIFO until
   p grants credit.  Returns what ctx->send returns, or COLLAB_ERR_NO_MEM. */
int eng_flow_p2p_send(eng_flow_t *f, const cl_peer_t *p, cl_wire_msg_t *m);
/* A P2P message of len bytes from member `from` arrives: 0 on a link
   without flow control (the bounds apply), 1 when granted (to be queued
   past the bounds), -1 when past the grant (dropped; its sender is
   banned). */
int eng_flow_p2p_admit(eng_flow_t *f, const cl_peer_t *from, size_t len);
/* Sends COLL message m to member p now, or keeps a copy in p's FIFO of
   collective messages until p grants credit (class EARLY, on a link of
   version ENG_FLOW_EARLY_VERSION or later).  Returns what ctx->send
   returns, or COLLAB_ERR_NO_MEM. */
int eng_flow_coll_send(eng_flow_t *f, const cl_peer_t *p, cl_wire_msg_t *m);
/* A COLL message of len bytes from member `from` arrives (counted): 0 on
   a link without class EARLY or within the grace (the bounds apply), 1
   when granted (to be buffered past the bounds), -1 when past the grant
   (it may be delivered, not buffered: eng_flow_coll_refuse). */
int eng_flow_coll_admit(eng_flow_t *f, const cl_peer_t *from, size_t len);
/* The early buffer refuses such a message: counted and named (not
   banned); true when the sender is due a report (eng_p2p_coll_refuse). */
bool eng_flow_coll_refuse(eng_flow_t *f, const cl_peer_t *from, size_t len);
/* A CREDIT from member `from`. */
void eng_flow_on_credit(eng_flow_t *f, const cl_peer_t *from, const cl_wire_msg_t *m);
/* Removes synchronous send (comm, sync) to world rank w from its FIFO:
   true if it was still there (it never left). */
bool eng_flow_cancel(eng_flow_t *f, int w, uint64_t comm, uint64_t sync);
/* Forgets world rank w's counts and FIFO (its holder failed or left). */
void eng_flow_peer_gone(eng_flow_t *f, int w);
/* Messages (and payload bytes) waiting for credit to world rank w; w < 0:
   to every member. */
size_t eng_flow_waiting(const eng_flow_t *f, int w, size_t *bytes);
/* COLL messages (class EARLY) waiting for credit to world rank w. */
size_t eng_flow_coll_waiting(const eng_flow_t *f, int w);
/* Messages from world rank w dropped for passing their grant. */
uint64_t eng_flow_refused(const eng_flow_t *f, int w);
/* After each poll round: the CREDITs that are due, and what the credit
   lets out of the FIFOs.  Returns now + ENG_FLOW_VERSION_POLL while a
   FIFO waits for its link's version, else INFINITY. */
double eng_flow_progress(eng_flow_t *f);
/* At the deadline of eng_p2p_t's timer: the periodic CREDIT round and
   the FIFOs; returns when it wants to run next. */
double eng_flow_timer(eng_flow_t *f, double now);

/* Does a posted receive or probe of `self` wait for a message that world
   rank w could send (from w, or from any source)? */
bool eng_p2p_waits_for(eng_p2p_t *self, int w);

#endif
