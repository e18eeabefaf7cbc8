/*  cl_engine_join.h - how a peer gets a rank, one component
    (cl_engine_join.c; docs/membership.md).

    eng_join_t owns the join: COLLAB_INITIAL_PEERS and the state of each
    (trying, up, refused, when it was lost, when it last answered
    NOT_MEMBER), the last definitive refusal, the coordinator a REDIRECT
    named, the join's start, deadline and next JOIN, and one timer in the
    loop's set.  On the coordinator it answers a JOIN (admits the joiner,
    STANDBY, CONFLICT, NO_PATH).  It sees the engine only through the
    context it gets at creation (eng_join_ctx_t): it never includes the
    engine's private header, and nothing else writes its state.  The
    engine's state (eng_state_t) stays the loop's: the join reads it and
    moves it between ENG_JOINING and ENG_STANDBY through its context.
    Engine thread only.
*/
#ifndef CL_ENGINE_JOIN_H_INCLUDED
#define CL_ENGINE_JOIN_H_INCLUDED

#include "engine/cl_member.h"
#include "engine/cl_timer.h"
#include "engine/cl_wire.h"
#include "util/cl_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where this peer stands (the loop's state, eng_state). */
typedef enum {
    ENG_JOINING = 0, /* looking for the swarm */
    ENG_STANDBY = 1, /* the swarm is full; waiting for a free rank */
    ENG_MEMBER = 2,  /* holds a rank */
    ENG_LEFT = 3,    /* said goodbye */
} eng_state_t;

typedef struct eng_join eng_join_t;

/* The engine, incomplete here: the type of the context's argument, so that
   an adapter handed something else does not compile (docs/architecture.md,
   "Typed contexts"). */
struct cl_engine;

/* What the join may ask of the engine.  Every function gets `arg`.  The
   pointers stay valid for the component's life. */
typedef struct {
    struct cl_engine *arg; /* the engine, opaque here */
    /* The engine's configuration (read only here; COLLAB_CLIENT_MODE
       turns on through set_client). */
    const cl_config_t *cfg;
    uint8_t self_key[32]; /* this peer's identity key */
    uint64_t incarnation; /* tells a restart of this identity (its JOIN) */
    /* The membership records: a founder founds them, the coordinator
       admits a joiner and removes a restarted one, a joiner records the
       coordinator a REDIRECT named. */
    cl_member_t *members;
    /* The loop's timer set: the component registers one timer there,
       armed while this peer joins or waits as a standby. */
    cl_timer_t *timers;
    /* The engine's clock (eng_now). */
    double (*now)(struct cl_engine *arg);
    /* The engine's state, and the join's moves of it (ENG_JOINING,
       ENG_STANDBY only). */
    eng_state_t (*state)(struct cl_engine *arg);
    void (*set_state)(struct cl_engine *arg, eng_state_t state);
    /* When this peer first became a member (0: never), and the world rank
       the program holds (-1: none). */
    double (*member_since)(struct cl_engine *arg);
    int (*rank)(struct cl_engine *arg);
    /* The transport: this peer's address, sending to a key (a link or a
       new connection), replying on the connection key's last message
       came on, connecting, whether a link to key exists, its wire
       version (0: unknown). */
    const char *(*address)(struct cl_engine *arg);
    int (*send)(struct cl_engine *arg, const uint8_t key[32], cl_wire_msg_t *m);
    int (*reply)(struct cl_engine *arg, const uint8_t key[32], cl_wire_msg_t *m);
    int (*connect)(struct cl_engine *arg, const uint8_t key[32], const char *address);
    bool (*has_link)(struct cl_engine *arg, const uint8_t key[32]);
    int (*link_version)(struct cl_engine *arg, const uint8_t key[32]);
    /* COLLAB_CLIENT_MODE=auto: the swarm could not connect back, this
       peer becomes a client (the configuration and the transport). */
    void (*set_client)(struct cl_engine *arg);
    /* This peer sent key a JOIN (the authority gate lets key answer). */
    void (*join_sent)(struct cl_engine *arg, const uint8_t key[32]);
    /* Whether a pause's round of probes runs (a REDIRECT then helps a
       member back from a pause). */
    bool (*probing)(struct cl_engine *arg);
    /* Whether this peer is back from a pause and its collectives are
       held until the others answered (eng_el_in_doubt): it admits nobody
       then (its view may be stale).  NULL: never. */
    bool (*in_doubt)(struct cl_engine *arg);
    /* Back from a pause, key answered this peer's JOIN with a REDIRECT to
       `to` (eng_auth_redirected). */
    void (*redirected)(struct cl_engine *arg, const uint8_t key[32], const uint8_t to[32]);
    /* The coordinator's dial-back of a public joiner (eng_dialback_check):
       1 reachable, else it answers later. */
    int (*reachable)(struct cl_engine *arg, const uint8_t key[32], const cl_wire_join_t *j);
    /* This peer founded the swarm (the records hold it): it is a member. */
    void (*founded)(struct cl_engine *arg);
    /* The join failed: collab_init completes with status, no more joining. */
    void (*fail)(struct cl_engine *arg, int status);
    /* Sends the current view to p (a joiner that asks again). */
    void (*send_view)(struct cl_engine *arg, const cl_peer_t *p);
    /* Coordinator: acts on a view change it made (d) and publishes it. */
    void (*commit)(struct cl_engine *arg, cl_member_delta_t *d);
    /* Coordinator: a joiner got a rank; told before its view, on the same
       link (the elastic layer's admission). */
    void (*admit_rank)(struct cl_engine *arg, const uint8_t key[32]);
    /* A peer's description for the logs (eng_peer_desc). */
    const char *(*desc)(const cl_peer_t *p, char *out, size_t len);
} eng_join_ctx_t;

/* Creates the component; copies ctx and registers its timer in
   ctx.timers.  Returns NULL without memory or without room in the set;
   the caller owns the result. */
eng_join_t *eng_join_new(const eng_join_ctx_t *ctx);
/* Unregisters its timer, frees the initial peers and nulls *j_p.
   Accepts NULL. */
void eng_join_destroy(eng_join_t **j_p);

/* Founds the swarm (no initial peers) or starts joining it (connects to
   every initial peer).  COLLAB_ERR_CONFIG for a bad COLLAB_INITIAL_PEERS
   or a client without one, COLLAB_ERR_NO_MEM. */
int eng_join_start(eng_join_t *j);
/* A view left this member out (the others lost contact with it): it
   joins again through the coordinator, with no deadline. */
void eng_join_again(eng_join_t *j);
/* Something that founding again depends on changed (a link to an
   initial peer, a JOIN_REPLY): while this peer joins, it may found the
   swarm again now, and the join's timer is armed again.  Accepts NULL. */
void eng_join_changed(eng_join_t *j);
/* A link to key came up, went down, or was refused (reason CL_REFUSE_*,
   text the transport's): the state of an initial peer, a JOIN to an
   initial peer or the coordinator named by a REDIRECT; a joiner whose
   coordinator refused its version gives up.  Accept NULL. */
void eng_join_link_up(eng_join_t *j, const uint8_t key[32]);
void eng_join_link_down(eng_join_t *j, const uint8_t key[32]);
void eng_join_link_refused(eng_join_t *j, const uint8_t key[32], int reason, const char *text);
/* Sends this peer's JOIN to key. */
void eng_join_send(eng_join_t *j, const uint8_t key[32]);
/* The same over a new link when this peer has none to key (a member it
   removed, whose link it dropped) but still knows its address. */
void eng_join_send_relinked(eng_join_t *j, const uint8_t key[32]);
/* Coordinator: a JOIN from key. */
void eng_join_on_join(eng_join_t *j, const uint8_t key[32], const cl_wire_join_t *m);
/* Joiner: an answer to its JOIN. */
void eng_join_on_reply(eng_join_t *j, const uint8_t key[32], const cl_wire_join_reply_t *r);
/* Fills the swarm-wide settings every JOIN_REPLY carries. */
void eng_join_reply_settings(eng_join_t *j, cl_wire_join_reply_t *r);
/* When the join's timer is due next (INFINITY: disarmed). */
double eng_join_due(const eng_join_t *j);

/* True (and logged) when an explicitly set COLLAB_* swarm-wide setting
   of cfg differs from the swarm's s. */
bool eng_settings_conflict(const cl_config_t *cfg, const cl_settings_t *s);
/* The lowest wire version every link of a swarm with settings s must
   speak (0: no floor above the code's own), and in *why a sentence that
   says which setting needs it (static text).  Signing (COLLAB_VERIFY=1 or
   a robust COLLAB_AGGREGATION) needs 10, COLLAB_COMPRESSION=adaptive 8. */
int eng_settings_wire_floor(const cl_settings_t *s, const char **why);
/* The same for the settings a peer of configuration cfg would found a
   swarm with, for its transport's first handshakes. */
int eng_own_wire_floor(const cl_config_t *cfg, const char **why);

#endif
