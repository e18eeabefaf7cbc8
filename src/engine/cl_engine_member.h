/*  cl_engine_member.h - membership's views, one component
    (cl_engine_member.c; docs/membership.md).

    eng_member_t owns what membership does with the records of the peers
    (cl_member_t) once a peer holds them: it installs a view a member sent
    (VIEW), acts on a view change the coordinator makes and publishes it
    (the commit), sends the view to one peer or back on a connection,
    outbids a smaller group's view, makes this peer a member (the join
    line, when it first got a rank), changes a weight (UPDATE), says
    goodbye, and dispatches membership's messages (JOIN, JOIN_REPLY, VIEW,
    HEARTBEAT, SUSPECT, GOODBYE, MATCH, UPDATE) to itself and to the
    components it drives (the join, the failure detector, matchmaking).
    Its own state is when this peer first became a member.  It sees the
    engine only through the context it gets at creation
    (eng_member_ctx_t): it never includes the engine's private header, and
    the engine's state, this peer's rank and world size, collab_init's
    request and the configuration stay the loop's, written through the
    context.  Engine thread only.
*/
#ifndef CL_ENGINE_MEMBER_H_INCLUDED
#define CL_ENGINE_MEMBER_H_INCLUDED

#include "engine/cl_engine_join.h" /* eng_state_t */
#include "engine/cl_member.h"
#include "engine/cl_wire.h"
#include "util/cl_config.h"
#include "util/cl_identity.h" /* CL_PEER_ID_MAX */

#include <stdbool.h>
#include <stdint.h>

typedef struct eng_member eng_member_t;

/* The engine, incomplete here: the type of the context's argument, so that
   an adapter handed something else does not compile (docs/architecture.md,
   "Typed contexts"). */
struct cl_engine;

/* What membership may ask of the engine.  Every function gets `arg`.
   The pointers stay valid for the component's life. */
typedef struct {
    struct cl_engine *arg; /* the engine, opaque here */
    /* The engine's configuration, read only (COLLAB_MONITOR,
       COLLAB_CLIENT_MODE, COLLAB_RANK for the join line; the settings a
       view must not conflict with). */
    const cl_config_t *cfg;
    uint8_t self_key[32];
    char self_id[CL_PEER_ID_MAX]; /* for the join line */
    /* The membership records: it installs views into them, sets weights
       and raises the epoch (the class cl_member). */
    cl_member_t *members;
    /* The engine's clock (eng_now). */
    double (*now)(struct cl_engine *arg);

    /* The loop's state.  state reads it; set_state moves it to
       ENG_MEMBER only (eng_set_state); set_rank and set_world_size publish
       this peer's world rank and the swarm's world size to the program's
       threads; fail completes collab_init with a status if it still waits
       and leaves (eng_fail_init: a view with settings this peer must not
       adopt). */
    eng_state_t (*state)(struct cl_engine *arg);
    void (*set_state)(struct cl_engine *arg, eng_state_t state);
    void (*set_rank)(struct cl_engine *arg, int rank);
    void (*set_world_size)(struct cl_engine *arg, int world_size);
    void (*fail)(struct cl_engine *arg, int status);

    /* The transport.  address: this peer's, for the join line.  send: to
       a peer with a record (eng_send); send_key: to a key without one
       (cl_transport_send); reply: on the connection key's last message
       came on (cl_transport_reply).  Each returns 0 when the message went
       out (or was queued). */
    const char *(*address)(struct cl_engine *arg);
    int (*send)(struct cl_engine *arg, const cl_peer_t *p, cl_wire_msg_t *m);
    int (*send_key)(struct cl_engine *arg, const uint8_t key[32], cl_wire_msg_t *m);
    int (*reply)(struct cl_engine *arg, const uint8_t key[32], cl_wire_msg_t *m);
    /* The wire version of the link to key (cl_transport_link_version). */
    int (*link_version)(struct cl_engine *arg, const uint8_t key[32]);
    /* A peer's log description (eng_peer_desc). */
    const char *(*desc)(const cl_peer_t *p, char *out, size_t len);

    /* The failure detector (cl_engine_suspect.h).  coordinates: this
       peer is a member and coordinates (eng_self_coordinates); take_over
       before it acts as the coordinator (eng_take_over); tenure after
       each view change (eng_suspect_tenure); started when this peer
       becomes a member (eng_suspect_started); forget for each peer a view
       dropped (eng_suspect_forget); on_message for HEARTBEAT and SUSPECT
       (eng_suspect_on_message); left for a member's GOODBYE
       (eng_suspect_peer, ENG_SUSPECT_LEFT). */
    bool (*coordinates)(struct cl_engine *arg);
    void (*take_over)(struct cl_engine *arg);
    void (*tenure)(struct cl_engine *arg);
    void (*started)(struct cl_engine *arg, bool founder);
    void (*forget)(struct cl_engine *arg, cl_peer_t *p);
    void (*suspect_message)(struct cl_engine *arg, cl_peer_t *from, const uint8_t key[32],
                            const cl_wire_msg_t *m);
    void (*left)(struct cl_engine *arg, cl_peer_t *p);

    /* The join (cl_engine_join.h): a JOIN this peer answers as the
       coordinator (eng_join_on_join), a JOIN_REPLY (eng_join_on_reply), a
       view that leaves this member out (eng_join_again), and the swarm's
       settings adopted with the view that first admitted this peer
       (eng_settings_adopted). */
    void (*on_join)(struct cl_engine *arg, const uint8_t key[32], const cl_wire_join_t *j);
    void (*on_join_reply)(struct cl_engine *arg, const uint8_t key[32],
                          const cl_wire_join_reply_t *r);
    void (*join_again)(struct cl_engine *arg);
    void (*settings_adopted)(struct cl_engine *arg, const cl_settings_t *s);

    /* Matchmaking (cl_engine_match.h): a rank a view added
       (eng_match_joined), a look at the group after each view installed
       or committed (eng_match_check), a MATCH (eng_match_on_request; from
       a member or not). */
    void (*joined)(struct cl_engine *arg, int rank);
    void (*match_check)(struct cl_engine *arg, double now);
    void (*match_request)(struct cl_engine *arg, bool from_member);

    /* The elastic layer: a VIEW came from key (eng_el_view_from: an
       answer to a PROBE). */
    void (*view_from)(struct cl_engine *arg, const uint8_t key[32]);
    /* The elastic layer: whether key's view of group generation gen, no
       newer than this coordinator's, is an admission it adopts
       (eng_el_adoptable; cl_member_adopt_admission checks the records). */
    bool (*adoptable)(struct cl_engine *arg, const uint8_t key[32], uint64_t gen);

    /* What a view change did, told to the loop, which fans it out to the
       rest of the engine (cl_engine_fanout.c): who joined, left or failed
       (eng_fan_out_peers), then the view (eng_fan_out_view); this peer
       became a member (eng_fan_out_member: collab_init completes); a
       weight changed (eng_fan_out_weight). */
    void (*fan_out_peers)(struct cl_engine *arg, const cl_member_delta_t *d);
    void (*fan_out_view)(struct cl_engine *arg);
    void (*fan_out_member)(struct cl_engine *arg);
    void (*fan_out_weight)(struct cl_engine *arg);
} eng_member_ctx_t;

/* Creates the component; copies ctx.  Returns NULL without memory; the
   caller owns the result. */
eng_member_t *eng_member_new(const eng_member_ctx_t *ctx);
/* Frees it and nulls *m_p.  Accepts NULL. */
void eng_member_destroy(eng_member_t **m_p);

/* When this peer first got a rank (eng_now), 0 before; a rejoin keeps the
   first.  0 for NULL. */
double eng_member_since(const eng_member_t *m);

/* This peer holds a rank now (founder: it founded the swarm): the state
   ENG_MEMBER, its rank and world size published, the failure detector
   started, the join line (the first time), then the loop's fan-out
   (collab_init completes). */
void eng_member_become(eng_member_t *m, bool founder);
/* Coordinator: acts on the view change d it made (takes d: cleared),
   publishes the view to every other member and monitor, then looks at
   the group (matchmaking). */
void eng_member_commit(eng_member_t *m, cl_member_delta_t *d);
/* Sends the current view to p (a member, or a joiner that asks again). */
void eng_member_send_view(eng_member_t *m, const cl_peer_t *p);
/* Sends the current view back on the connection key's last message came
   on (a JOIN, a PROBE): it needs no new connection. */
void eng_member_reply_view(eng_member_t *m, const uint8_t key[32]);
/* Coordinator: v, from a smaller group of this peer's members that does
   not list it, lost to this peer's view: raises the epoch above v's and
   sends them this peer's view. */
void eng_member_outbid(eng_member_t *m, const cl_wire_view_t *v);
/* This peer's weight is w now (the configuration already says so): the
   coordinator records it and publishes the view (a new group
   generation), another member sends the coordinator UPDATE.  Nothing
   while this peer is no member. */
void eng_member_set_weight(eng_member_t *m, double w);
/* This peer measured its link at kbit (kbit/s, > 0; cl_linkrate.h): the
   coordinator records it as this peer's figure and publishes the view,
   another member sends the coordinator UPDATE with it (when their link
   speaks wire version 11; an older coordinator keeps the figure it has).
   The coordinator takes a member's new figure at most every
   ENG_FIGURE_EVERY seconds.  Nothing while this peer is no member. */
void eng_member_set_figure(eng_member_t *m, uint32_t kbit);
/* GOODBYE to every member and monitor of the view but this peer. */
void eng_member_goodbye_all(eng_member_t *m);
/* A membership message m from key (from: its record, NULL without one),
   past the authority's gate: JOIN, JOIN_REPLY, VIEW, HEARTBEAT, SUSPECT,
   GOODBYE, MATCH, UPDATE; other types are ignored. */
void eng_member_message(eng_member_t *m, cl_peer_t *from, const uint8_t key[32],
                        const cl_wire_msg_t *msg);

#endif
