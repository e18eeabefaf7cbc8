/*  cl_engine_leave.h - a graceful departure keeps its contributions, one
    component (cl_engine_leave.c; docs/elastic.md §10).

    eng_leave_t owns the records of the peers that said goodbye (what
    each entered, per communicator) and this peer's own departure (the
    members whose BYE_ACK it still waits for, its deadline, one timer in
    the loop's set).  It sees the engine only through the context it gets
    at creation (eng_leave_ctx_t): it never includes the engine's private
    header, and nothing else writes its state; the collective streams ask
    it through eng_leave_status and its siblings.  Engine thread only.
*/
#ifndef CL_ENGINE_LEAVE_H_INCLUDED
#define CL_ENGINE_LEAVE_H_INCLUDED

#include "engine/cl_member.h"
#include "engine/cl_timer.h"
#include "engine/cl_wire.h"
#include "util/cl_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct eng_leave eng_leave_t;

/* The engine, incomplete here: the type of the context's argument, so that
   an adapter handed something else does not compile (docs/architecture.md,
   "Typed contexts"). */
struct cl_engine;

/* What the departures may ask of the engine.  Every function gets `arg`.
   The pointers stay valid for the component's life. */
typedef struct {
    struct cl_engine *arg; /* the engine, opaque here */
    /* The engine's configuration (read only): COLLAB_TIMEOUT bounds the
       wait for acknowledgements. */
    const cl_config_t *cfg;
    uint8_t self_key[32]; /* this peer's identity key */
    /* The membership's records (read only): the members and monitors a
       GOODBYE goes to, the rank a departed peer held, who holds a rank
       now, whether a member still waited for is in the view. */
    const cl_member_t *members;
    /* The loop's timer set: the component registers one timer there,
       armed at the departure's deadline while acknowledgements are
       missing (it wakes the loop, which then asks eng_leave_done). */
    cl_timer_t *timers;
    /* The engine's clock (eng_now). */
    double (*now)(struct cl_engine *arg);
    /* Sends m to a member or monitor (eng_send); 0 or a negative status. */
    int (*send)(struct cl_engine *arg, const cl_peer_t *to, cl_wire_msg_t *m);
    /* Sends m back on the connection key's last message came on (a peer
       without a record: cl_transport_reply). */
    int (*reply)(struct cl_engine *arg, const uint8_t key[32], cl_wire_msg_t *m);
    /* A peer's description for the logs (eng_peer_desc). */
    const char *(*desc)(const cl_peer_t *p, char *out, size_t len);
    /* The communicators this peer entered collectives on (the world and
       derived ones; not its self communicator) with how many it entered
       on each: fills comms[0..max) and returns how many there are, more
       than max when some do not fit. */
    size_t (*entered)(struct cl_engine *arg, cl_wire_bye_comm_t *comms, size_t max);
} eng_leave_ctx_t;

/* Creates the component; copies ctx and registers its timer in
   ctx.timers.  Returns NULL without memory or without room in the set;
   the caller owns the result. */
eng_leave_t *eng_leave_new(const eng_leave_ctx_t *ctx);
/* Unregisters its timer, frees the records and nulls *l_p.  Accepts NULL. */
void eng_leave_destroy(eng_leave_t **l_p);

/* Whether the peer that held world rank w left gracefully and took part in
   collective seq of communicator comm: 1 it did (its contribution counts),
   0 it left before it (absent), -1 it did not leave (as far as known, or
   l is NULL). */
int eng_leave_status(eng_leave_t *l, int w, uint64_t comm, uint64_t seq);
/* A collective seq of comm waited in vain for what the departed peer
   that held world rank w sent it directly (everything it sent arrived
   before its GOODBYE): it ran seq, and so every later collective it
   names, in a group without this peer (a fragment that went on after
   taking this peer out).  From seq + 1 on it counts as absent here, so
   that no later collective waits for it again.  Returns whether the
   record changed (nothing without a record, or when seq + 1 is past what
   it entered). */
bool eng_leave_cut(eng_leave_t *l, int w, uint64_t comm, uint64_t seq);
/* Fills out (at most max) with the world ranks of the departed peers
   that took part in collective seq of comm; returns their number. */
int eng_leave_contributors(eng_leave_t *l, uint64_t comm, uint64_t seq, int *out, int max);
/* The key of the departed peer that held world rank w; false if none. */
bool eng_leave_key(eng_leave_t *l, int w, uint8_t key[32]);
/* The world rank a departed peer held, or -1. */
int eng_leave_world_of(eng_leave_t *l, const uint8_t key[32]);
/* A GOODBYE g from key (from: its record, NULL if it is no member):
   acknowledges it (BYE_ACK), counts as key's acknowledgement of this
   peer's own departure, and records what it took part in. */
void eng_leave_on_goodbye(eng_leave_t *l, const cl_peer_t *from, const uint8_t key[32],
                          const cl_wire_goodbye_t *g);
/* A BYE_ACK from key: one member fewer to wait for; the last one
   cancels the deadline. */
void eng_leave_on_ack(eng_leave_t *l, const uint8_t key[32]);
/* This peer leaves: sends every member and monitor a GOODBYE naming the
   collectives it entered, and waits for the members' BYE_ACK until
   COLLAB_TIMEOUT from now. */
void eng_leave_start(eng_leave_t *l);
/* Has this peer's departure started (false for NULL)? */
bool eng_leave_started(const eng_leave_t *l);
/* True once every member acknowledged or left the view, or COLLAB_TIMEOUT
   passed (the silent ones logged); true when nothing started. */
bool eng_leave_done(eng_leave_t *l, double now);

#endif
