/*  cl_engine_p2p.h - point-to-point on the engine thread: one component.

    eng_p2p_t owns everything point-to-point keeps: the matching queues
    (cl_p2p), the sends waiting for their peer to appear, the synchronous
    sends waiting for MATCHED, the start-up grace, the table of world
    ranks a member ever held, and the credit of every member
    (cl_engine_flow.c, its private helper file; docs/wire.md section 10).
    It sees the engine only through the context it gets at creation
    (eng_p2p_ctx_t): it never includes the engine's private header, and
    nothing else writes its state.  Engine thread only.
*/
#ifndef CL_ENGINE_P2P_H_INCLUDED
#define CL_ENGINE_P2P_H_INCLUDED

#include "engine/cl_member.h"
#include "engine/cl_request.h"
#include "engine/cl_timer.h"
#include "engine/cl_wire.h"
#include "util/cl_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct eng_p2p eng_p2p_t;

/* The engine, incomplete here: the type of the context's argument, so that
   an adapter handed something else does not compile (docs/architecture.md,
   "Typed contexts"). */
struct cl_engine;

/* What the component may ask of the engine.  Every function gets `arg`.
   The pointers stay valid for the component's life. */
typedef struct {
    struct cl_engine *arg; /* the engine, opaque here */
    /* The engine's configuration (read only here; the engine may update
       swarm-wide settings it learns while joining). */
    const cl_config_t *cfg;
    double t0; /* the engine's clock when it started */
    /* The loop's set of deadlines: the component registers one timer
       there (the start-up grace, the CREDIT round, a link's version). */
    cl_timer_t *timers;
    uint64_t incarnation; /* this process's, in CREDITs (0: use 1) */
    /* The engine's clock (eng_now). */
    double (*now)(struct cl_engine *arg);
    /* This peer's world rank, -1 before it holds one. */
    int (*self_rank)(struct cl_engine *arg);
    /* True while this peer holds a rank (the engine's member state). */
    bool (*is_member)(struct cl_engine *arg);
    /* When this peer got its rank (0: never). */
    double (*member_since)(struct cl_engine *arg);
    /* The member of the current view holding world rank w, or NULL. */
    cl_peer_t *(*member_at)(struct cl_engine *arg, int w);
    /* Sends m to member `to`; returns 0 or a negative status. */
    int (*send)(struct cl_engine *arg, const cl_peer_t *to, cl_wire_msg_t *m);
    /* Writes a log description of p into out (len bytes); returns out. */
    const char *(*desc)(const cl_peer_t *p, char *out, size_t len);
    /* False when this peer knows communicator `comm` and its rank r is not
       world rank w; true otherwise (unknown communicators included). */
    bool (*comm_rank_is)(struct cl_engine *arg, uint64_t comm, int r, int w);
    /* The wire version negotiated with key's link, 0 until known. */
    int (*link_version)(struct cl_engine *arg, const uint8_t key[32]);
    /* Refuses key's messages and connections for `seconds`. */
    void (*ban)(struct cl_engine *arg, const uint8_t key[32], double seconds);
    /* Collective messages of world rank w waiting in the early buffer
       (counted against it), and their payload bytes in *bytes. */
    size_t (*early_queued)(struct cl_engine *arg, int w, size_t *bytes);
    /* Does a running collective wait for a message that world rank w
       could send (one on a communicator that has w)? */
    bool (*coll_waits_for)(struct cl_engine *arg, int w);
} eng_p2p_ctx_t;

/* Creates the component, with the unexpected-message bounds of ctx->cfg
   (COLLAB_MAX_UNEXPECTED*).  Copies ctx.  Returns NULL without memory;
   the caller owns the result. */
eng_p2p_t *eng_p2p_new(const eng_p2p_ctx_t *ctx);
/* Completes what still waits (sends waiting for their peer with
   COLLAB_ERR_NOT_INIT, receives and synchronous sends as cancelled),
   frees the component and nulls *self_p.  Accepts NULL. */
void eng_p2p_destroy(eng_p2p_t **self_p);

/* Requests (CL_OP_SEND, _RECV, _PROBE, _CANCEL): each is completed, now
   or later, with cl_request_complete.  The component holds a request and
   its buffers only until it completes it. */
void eng_p2p_send(eng_p2p_t *self, collab_request_t *req);
void eng_p2p_recv(eng_p2p_t *self, collab_request_t *req);
void eng_p2p_probe(eng_p2p_t *self, collab_request_t *req);
void eng_p2p_cancel(eng_p2p_t *self, collab_request_t *req);

/* A P2P or P2P_CTL message from member `from` (it passed the authority
   gate). */
void eng_p2p_on_message(eng_p2p_t *self, cl_peer_t *from, const cl_wire_msg_t *m);
/* Member p (its rank, or previous rank) failed, left or was removed:
   what waits on it fails with COLLAB_ERR_PROC_FAILED, its credit is
   forgotten. */
void eng_p2p_peer_gone(eng_p2p_t *self, const cl_peer_t *p);
/* A member holds world rank w (it was added to the view). */
void eng_p2p_mark_seen(eng_p2p_t *self, int w);
/* The view changed: sends waiting for their peer try again. */
void eng_p2p_view_changed(eng_p2p_t *self);
/* The communicator `comm` is freed: its unexpected messages go. */
void eng_p2p_comm_free(eng_p2p_t *self, uint64_t comm);
/* This peer became a member: its timer runs, in the loop's set, while it
   is one (the end of the start-up grace, the periodic CREDIT round, and
   every ENG_FLOW_VERSION_POLL while a FIFO waits for a link's version);
   it stops when it finds this peer no member, until the next call. */
void eng_p2p_member(eng_p2p_t *self);
/* After each poll round (progress, not a deadline): the CREDITs that are
   due, and what the credit now lets out of the FIFOs. */
void eng_p2p_progress(eng_p2p_t *self);
/* Cancels every posted receive and probe and every synchronous send
   still waiting for its match (finalize, leave). */
void eng_p2p_cancel_all(eng_p2p_t *self);
/* Completes everything that waits with status (this peer left): every
   posted receive and probe, whatever its source, the sends waiting for
   their peer and the synchronous sends waiting for their match. */
void eng_p2p_fail_all(eng_p2p_t *self, int status);

/* Sends COLL message m to member `to` under class EARLY's credit: now, or
   a copy later, in order, from `to`'s FIFO of collective messages (the
   caller's send has completed either way).  Returns 0 or a negative
   status. */
int eng_p2p_coll_send(eng_p2p_t *self, const cl_peer_t *to, cl_wire_msg_t *m);
/* A COLL message of len bytes from member `from` arrives (before any
   other check of it; counted): 0 on a link without class EARLY or within
   the grace (the early buffer's bounds apply), 1 when granted (buffered
   past the bounds), -1 when past the grant (delivered if its collective
   runs, never buffered: eng_p2p_coll_refuse). */
int eng_p2p_coll_admit(eng_p2p_t *self, const cl_peer_t *from, size_t len);
/* The early buffer refuses a message that passed the grant of world rank
   w (len bytes): counted and named in the log, not banned.  True when
   the sender is due a report to the group (the first refusal, then at
   most one every COLLAB_TIMEOUT / 4): the caller takes it out of the
   group through the coordinator (eng_suspect_overdrawn), so that no
   receiver leaves its messages out alone. */
bool eng_p2p_coll_refuse(eng_p2p_t *self, const cl_peer_t *from, size_t len);

/* Messages (and payload bytes) waiting for credit to world rank w, both
   classes; w < 0: to every member. */
size_t eng_p2p_flow_waiting(const eng_p2p_t *self, int w, size_t *bytes);
/* COLL messages waiting for credit to world rank w (class EARLY only:
   point-to-point ones may wait for the receiver's program). */
size_t eng_p2p_coll_waiting(const eng_p2p_t *self, int w);
/* Messages from world rank w dropped for passing their grant. */
uint64_t eng_p2p_flow_refused(const eng_p2p_t *self, int w);

#endif
