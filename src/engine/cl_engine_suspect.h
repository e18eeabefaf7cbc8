/*  cl_engine_suspect.h - the failure detector, one component of membership
    (cl_engine_suspect.c; docs/membership.md §3-§5).

    eng_suspect_t owns the heartbeats (sent every COLLAB_TIMEOUT/4), the
    check of silent members, suspicion (a member suspects a peer and tells
    the coordinator; the coordinator confirms and removes it), stragglers,
    COLLAB_VERIFY verdicts, and the coordinator's tenure: when the
    coordinator fails, the next member in rank order computes that it
    coordinates and takes over (its epochs jump above the views its
    predecessor may have sent to some peers only).

    It sees the engine only through the context it gets at creation
    (eng_suspect_ctx_t): it never includes the engine's private header.
    It writes the peer records it suspects (state, suspect_reason,
    suspect_since, link_closed) and changes the view only through the
    class cl_member; a view change it makes goes back to the engine
    through commit, which applies it and publishes the view.  Engine
    thread only.
*/
#ifndef CL_ENGINE_SUSPECT_H_INCLUDED
#define CL_ENGINE_SUSPECT_H_INCLUDED

#include "engine/cl_member.h"
#include "engine/cl_timer.h"
#include "engine/cl_wire.h"
#include "util/cl_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* suspect_reason of a peer that said goodbye (local only; the engine's
   ENG_REASON_LEFT). */
#define ENG_SUSPECT_LEFT 99

typedef struct eng_suspect eng_suspect_t;

/* The engine, incomplete here: the type of the context's argument, so that
   an adapter handed something else does not compile (docs/architecture.md,
   "Typed contexts"). */
struct cl_engine;

/* What the failure detector may ask of the engine.  Every function gets
   `arg`.  The pointers stay valid for the component's life. */
typedef struct {
    struct cl_engine *arg;   /* the engine, opaque here */
    const cl_config_t *cfg;  /* read only: COLLAB_TIMEOUT */
    const uint8_t *self_key; /* this peer's public key (32 bytes) */
    cl_member_t *mb;         /* the peer records and the view */
    cl_timer_t *timers;      /* the loop's set: one timer is registered in it */
    double hb_interval;      /* seconds between heartbeats and checks */
    /* The engine's clock (eng_now). */
    double (*now)(struct cl_engine *arg);
    /* Whether this peer is a member (not joining, not gone). */
    bool (*is_member)(struct cl_engine *arg);
    /* Sends m to member p; returns 0 or a negative status. */
    int (*send)(struct cl_engine *arg, const cl_peer_t *p, cl_wire_msg_t *m);
    /* Sends m back on the connection key's last message came on. */
    int (*reply)(struct cl_engine *arg, const uint8_t key[32], cl_wire_msg_t *m);
    /* Sends the current view back to key (eng_member_reply_view). */
    void (*reply_view)(struct cl_engine *arg, const uint8_t key[32]);
    /* Coordinator: applies view change d that this peer made, publishes
       the view (eng_member_commit); clears d. */
    void (*commit)(struct cl_engine *arg, cl_member_delta_t *d);
    /* Bans key at the transport for `seconds`. */
    void (*ban)(struct cl_engine *arg, const uint8_t key[32], double seconds);
    /* A peer's description for the logs (eng_peer_desc). */
    const char *(*desc)(struct cl_engine *arg, const cl_peer_t *p, char *out, size_t len);
    /* Collectives this peer completed (a heartbeat carries it), and the
       recent time between their completions. */
    uint64_t (*progress)(struct cl_engine *arg);
    double (*step_gap)(struct cl_engine *arg);
    /* Whether a step boundary is known at which a member taken out of
       the group could come back (eng_el_boundaries_known). */
    bool (*boundaries_known)(struct cl_engine *arg);
    /* A member became late now (the reports count it). */
    void (*late_seen)(struct cl_engine *arg, double now);
    /* The authority's rules (cl_engine_authority.c): whether epoch is a
       bounded step from own; members ahead of this coordinator for
       `patience` seconds; a straggler report that is enough. */
    bool (*epoch_step_ok)(struct cl_engine *arg, uint64_t own, uint64_t epoch);
    bool (*member_ahead)(struct cl_engine *arg, bool ahead, double patience);
    bool (*straggler_vote)(struct cl_engine *arg, const uint8_t subject[32],
                           const uint8_t reporter[32], size_t group_size);
    /* After each check of silent members, as the coordinator
       (coordinator: true) or not: the engine's matchmaking goes on. */
    void (*checked)(struct cl_engine *arg, bool coordinator, double now);
} eng_suspect_ctx_t;

/* Creates the failure detector; copies ctx and registers its timer in
   ctx.timers.  NULL without memory or without room in ctx.timers. */
eng_suspect_t *eng_suspect_new(const eng_suspect_ctx_t *ctx);
/* Unregisters its timer, frees it and nulls *s_p.  Accepts NULL. */
void eng_suspect_destroy(eng_suspect_t **s_p);

/* What a suspicion's reason (CL_SUSPECT_*, ENG_SUSPECT_LEFT) says. */
const char *eng_suspect_reason_text(int reason);

/* This peer became a member: heartbeats start (its timer is armed now;
   it runs while this peer is a member); a founder coordinates from the
   start (there is nothing to take over), any other begins no tenure (one
   that rejoins coordinated nothing while it was out). */
void eng_suspect_started(eng_suspect_t *s, bool founder);
/* Whether this peer is a member and its own coordinator
   (cl_member_coordinator).  Pure. */
bool eng_suspect_coordinates(const eng_suspect_t *s);
/* The takeover, before this peer acts as the coordinator (coordinates
   is true): the first call of a tenure raises the epoch above every view
   heard of; later calls do nothing. */
void eng_suspect_take_over(eng_suspect_t *s);

/* Suspects p (alive, not this peer) for reason (CL_SUSPECT_*,
   ENG_SUSPECT_LEFT): logs it, then removes it when this peer
   coordinates, else reports it to the coordinator (a departure
   excepted). */
void eng_suspect_peer(eng_suspect_t *s, cl_peer_t *p, int reason);
/* Coordinator: removes every member this peer suspects, in one view. */
void eng_suspect_remove(eng_suspect_t *s);
/* The connection to member p closed, or was refused (a member's). */
void eng_suspect_closed(eng_suspect_t *s, cl_peer_t *p);
/* HEARTBEAT and SUSPECT from key (from: its record, or NULL). */
void eng_suspect_on_message(eng_suspect_t *s, cl_peer_t *from, const uint8_t key[32],
                            const cl_wire_msg_t *m);
/* What the rest of the engine learns of a peer, written into its record
   here only: a message from p came in (now); p answered in a collective
   (no longer late); our connection to p works (again); a connection to
   the member p was refused (a failure, like a closed one); p left the
   view (its record keeps nothing of its suspicion). */
void eng_suspect_heard(eng_suspect_t *s, cl_peer_t *p);
void eng_suspect_answered(eng_suspect_t *s, cl_peer_t *p);
void eng_suspect_link_up(eng_suspect_t *s, cl_peer_t *p);
void eng_suspect_refused(eng_suspect_t *s, cl_peer_t *p);
void eng_suspect_forget(eng_suspect_t *s, cl_peer_t *p);
/* This peer was stopped: its own stop explains p's silence (heard now;
   a suspect that did not say goodbye and whose connection works is alive
   again). */
void eng_suspect_excuse(eng_suspect_t *s, cl_peer_t *p, double now);
/* Ends a tenure as coordinator when this peer no longer coordinates:
   called where that can change, by _member after each view it installs
   and by this component when a suspect is alive again. */
void eng_suspect_tenure(eng_suspect_t *s);

/* A collective found p late (reason CL_SUSPECT_STRAGGLER or _MISMATCH):
   suspected, or taken out of the group once late for long enough. */
void eng_suspect_late(eng_suspect_t *s, cl_peer_t *p, int reason);
/* p passed its grant of early collective messages (class EARLY) and the
   early buffer dropped one of them (docs/security-bounds.md §5): p is
   taken out of the group as a straggler is (the coordinator's vote), so
   that every member runs its collectives without it; never left out by
   this peer alone. */
void eng_suspect_overdrawn(eng_suspect_t *s, const cl_peer_t *p);
/* COLLAB_VERIFY: p reduced a wrong part (docs/security.md §6c). */
void eng_suspect_corrupt(eng_suspect_t *s, cl_peer_t *p);
/* This peer asks to be taken out of the group (docs/elastic.md §9). */
void eng_suspect_self_out(eng_suspect_t *s);
/* Coordinator: the member reported for a wrong result whose part this
   collective should check: 1 + its comm rank, or 0.  rank_of(comm, w)
   gives world rank w's rank in the collective's communicator, or -1. */
int eng_suspect_verify_target(eng_suspect_t *s, const int *ranks, int n,
                              int (*rank_of)(const void *comm, int world), const void *comm);

#endif
