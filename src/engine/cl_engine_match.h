/*  cl_engine_match.h - matchmaking of the world group, one component
    (cl_engine_match.c; docs/membership.md §2).

    eng_match_t owns matchmaking: when the group was first asked for
    (the window's start), the coordinator this peer sent MATCH to, the
    ranks that were ever members, and one timer in the loop's set (the
    window's end).  It sees the engine only through the context it gets
    at creation (eng_match_ctx_t): it never includes the engine's private
    header, reads the membership records without writing them, and hands
    the closing of the group back to the engine (close_group).  Engine
    thread only.
*/
#ifndef CL_ENGINE_MATCH_H_INCLUDED
#define CL_ENGINE_MATCH_H_INCLUDED

#include "engine/cl_member.h"
#include "engine/cl_timer.h"
#include "engine/cl_wire.h"
#include "util/cl_config.h"

#include <stdbool.h>

typedef struct eng_match eng_match_t;

/* The engine, incomplete here: the type of the context's argument, so that
   an adapter handed something else does not compile (docs/architecture.md,
   "Typed contexts"). */
struct cl_engine;

/* What matchmaking may ask of the engine.  Every function gets `arg`.
   The pointers stay valid for the component's life. */
typedef struct {
    struct cl_engine *arg; /* the engine, opaque here */
    /* The engine's configuration (COLLAB_MATCHMAKING_TIME,
       COLLAB_MIN_GROUP; read only). */
    const cl_config_t *cfg;
    /* The membership records, read only: the view, this peer's rank, the
       coordinator, the swarm's settings, whether the group is formed. */
    const cl_member_t *members;
    /* The loop's timer set: the component registers one timer there, the
       end of the matchmaking window. */
    cl_timer_t *timers;
    /* The engine's clock (eng_now). */
    double (*now)(struct cl_engine *arg);
    /* Whether this peer holds a rank (the engine's state is ENG_MEMBER). */
    bool (*is_member)(struct cl_engine *arg);
    /* Whether this peer is a member and coordinates (eng_self_coordinates),
       and the takeover before it acts as the coordinator (eng_take_over). */
    bool (*coordinates)(struct cl_engine *arg);
    void (*take_over)(struct cl_engine *arg);
    /* Whether some call of the program waits for the world group. */
    bool (*waiting)(struct cl_engine *arg);
    /* Sends m to p (MATCH to the coordinator); 0 when it went out. */
    int (*send)(struct cl_engine *arg, const cl_peer_t *p, cl_wire_msg_t *m);
    /* Coordinator: the group is to be formed now.  close_group closes it
       in the records (cl_member_close_group): 1 when that changed them,
       with the change in *d (the caller clears d either way).  commit acts
       on the change and publishes the view (eng_member_commit; clears
       d); it tells this component again (eng_match_check), a call
       deferred until commit returns. */
    int (*close_group)(struct cl_engine *arg, cl_member_delta_t *d);
    void (*commit)(struct cl_engine *arg, cl_member_delta_t *d);
} eng_match_ctx_t;

/* Creates the component; copies ctx and registers its timer in
   ctx.timers.  Returns NULL without memory or without room in the set;
   the caller owns the result. */
eng_match_t *eng_match_new(const eng_match_ctx_t *ctx);
/* Unregisters its timer, frees the ranks ever members and nulls *m_p.
   Accepts NULL. */
void eng_match_destroy(eng_match_t **m_p);

/* Rank r is (or was) a member (a view added it): once every rank of the
   world was one, nobody else can join the first group. */
void eng_match_joined(eng_match_t *m, int r);
/* Looks whether the group is to be formed now (this peer coordinates,
   someone asked, and every rank of the world was a member, the target
   size is present, or the window ended with COLLAB_MIN_GROUP members;
   COLLAB_STRICT waits for the target or the world), and forms it through
   close_group and commit.  A call made while commit runs is deferred to
   its return. */
void eng_match_check(eng_match_t *m, double now);
/* The program waits for the group: the coordinator starts the window's
   clock and looks at once; another member sends the coordinator MATCH
   (once per coordinator).  Nothing once the group is formed or when this
   peer is not a member. */
void eng_match_request(eng_match_t *m);
/* A MATCH arrived; from_member: its sender is a member of the view.  A
   member that does not coordinate (yet) keeps the window's start too. */
void eng_match_on_request(eng_match_t *m, bool from_member);
/* After each check of silent members (the timer of _suspect): the
   coordinator looks at the group (and starts the window if the program
   waits); another member that waits asks again. */
void eng_match_checked(eng_match_t *m, bool coordinator, double now);
/* When the window ends (INFINITY: nobody asked yet), the number of
   distinct ranks that were ever members. */
double eng_match_due(const eng_match_t *m);
int eng_match_njoined(const eng_match_t *m);

#endif
