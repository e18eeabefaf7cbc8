/*  cl_engine_auth.h - who may send what, one component of the engine
    (cl_engine_authority.c, the gate of docs/security.md §3, and
    cl_engine_auth_probe.c, its round after a pause, §4).

    eng_auth_t owns what the gate remembers: the peers this peer sent a
    JOIN, the drops per type and the senders of refused collective data
    named in the log, the straggler reports, how long members' epochs
    have been ahead, the messages of the coordinator's successor kept
    until the coordinator fails here, and the round after a pause (its
    tally of answers, deadlines and one timer in the loop's set).

    It sees the engine only through the context it gets at creation
    (eng_auth_ctx_t): it never includes the engine's private header and
    never writes a peer record; nothing else writes its state.  Engine
    thread only.
*/
#ifndef CL_ENGINE_AUTH_H_INCLUDED
#define CL_ENGINE_AUTH_H_INCLUDED

#include "engine/cl_engine.h"
#include "engine/cl_member.h"
#include "engine/cl_timer.h"
#include "engine/cl_wire.h"
#include "util/cl_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest step by which any message may raise a view epoch. */
#define EPOCH_STEP ((uint64_t)1 << 20)

typedef struct eng_auth eng_auth_t;

/* The engine, incomplete here: the type of the context's argument, so that
   an adapter handed something else does not compile (docs/architecture.md,
   "Typed contexts"). */
struct cl_engine;

/* What the authority may ask of the engine.  Every function but desc
   gets `arg`.  The pointers stay valid for the component's life. */
typedef struct {
    struct cl_engine *arg;
    /* The engine's configuration (read only, read when used):
       COLLAB_TIMEOUT (the pause's round, straggler reports, the
       successor's messages), monitor and relay (REPORT, RELAYED). */
    const cl_config_t *cfg;
    uint8_t self_key[32]; /* this peer's identity key */
    /* The loop's timer set: the component registers one timer there
       (the round after a pause). */
    cl_timer_t *timers;
    /* The membership's records (read only): the sender's role, this
       peer's view and epoch, who coordinates (cl_member_coordinator),
       who would next (cl_member_successor) and who admits. */
    const cl_member_t *mb;
    /* The engine's clock (eng_now). */
    double (*now)(struct cl_engine *arg);
    /* Whether this peer holds a rank in its own view (ENG_MEMBER); false
       while it joins, waits as a standby, rejoins after a removal or has
       left. */
    bool (*member)(struct cl_engine *arg);
    /* Whether this peer is a member and its own coordinator
       (eng_self_coordinates). */
    bool (*coordinates)(struct cl_engine *arg);
    /* Whether key is a joiner an ADMIT of the admitter named
       (eng_el_is_entrant): it may read a donor's state. */
    bool (*entrant)(struct cl_engine *arg, const uint8_t key[32]);
    /* Whether this peer expects key, a monitor, to fetch a copy of its
       state (eng_donor_expects, any admission). */
    bool (*copy_expected)(struct cl_engine *arg, const uint8_t key[32]);
    /* Coordinator: v, a smaller group's view that lost to this peer's,
       is answered by raising the epoch above v's and sending this
       peer's view (eng_member_outbid). */
    void (*outbid)(struct cl_engine *arg, const cl_wire_view_t *v);
    /* Hands a kept message of key to the engine as if it came now
       (eng_on_message: it passes this gate again, then its handler). */
    void (*deliver)(struct cl_engine *arg, const uint8_t key[32], const cl_wire_msg_t *m);
    /* Makes the transport ignore key for `seconds` (cl_transport_ban). */
    void (*ban)(struct cl_engine *arg, const uint8_t key[32], double seconds);
    /* Sends key, a member of the last view, a PROBE (eng_el_probe). */
    void (*probe)(struct cl_engine *arg, const uint8_t key[32]);
    /* Sends key a JOIN, over a new link when this peer dropped its own
       (eng_send_join_relinked); the JOIN is noted here through
       eng_auth_note_join_sent as any. */
    void (*rejoin)(struct cl_engine *arg, const uint8_t key[32]);
    /* key, a member asked after a pause, answered (a view, counted or
       not): it is alive, its silence must not take it out
       (eng_member_heard). */
    void (*answered)(struct cl_engine *arg, const uint8_t key[32]);
    /* The question "did the swarm go on without this peer"
       (eng_auth_went_on) was open and is decided now: a majority
       answered, this peer was taken back or given up, the rejoin window
       ended, the round found this peer no member, or a membership began
       again.  The pause, which holds the collectives while it is open,
       looks again (eng_pause_decided).  NULL: nobody is told. */
    void (*decided)(struct cl_engine *arg);
    /* The peers asked to take this peer back after a pause did not
       within the window: it holds a model the swarm went on without;
       the engine stops with `status` (eng_leave). */
    void (*give_up)(struct cl_engine *arg, int status);
    /* Taken back after a pause while its own view lists it in the group
       at a stale sequence: this peer asks its coordinator to take it out
       of the group (eng_report_self_out), to be re-admitted and resynced
       as a straggler.  NULL: nobody is asked. */
    void (*self_out)(struct cl_engine *arg);
    /* A peer's description for the log (eng_peer_desc). */
    const char *(*desc)(const cl_peer_t *p, char *out, size_t len);
} eng_auth_ctx_t;

/* Creates the component; copies ctx and registers its timer in
   ctx.timers (not armed).  Returns NULL without memory or without room
   in the set; the caller owns the result. */
eng_auth_t *eng_auth_new(const eng_auth_ctx_t *ctx);
/* Unregisters its timer, frees the kept messages and the tally, and
   nulls *a_p.  Reads neither the records nor the clock.  Accepts NULL. */
void eng_auth_destroy(eng_auth_t **a_p);

/* True when key (record p, NULL if none) may send m in this peer's state;
   otherwise m is dropped, counted, logged and key banned where only a
   hostile peer sends such a message.  True when a is NULL. */
bool eng_auth_message(eng_auth_t *a, const cl_peer_t *p, const uint8_t key[32],
                      const cl_wire_msg_t *m);
/* This peer sent key a JOIN: key may answer it (JOIN_REPLY, VIEW).
   Accepts NULL. */
void eng_auth_note_join_sent(eng_auth_t *a, const uint8_t key[32]);
/* This peer, back from a pause, asks the members of its view (PROBE):
   a new round of the majority-acknowledgement tally (docs/security.md
   §4), for max(10 s, 4 × COLLAB_TIMEOUT); its timer in the loop's set
   asks again each second and acts at the deadline.  Accepts NULL. */
void eng_auth_probe_start(eng_auth_t *a);
/* This peer, back from a pause, sent key a PROBE: key's view answers it,
   and counts once a majority of the last view answered with it.
   Accepts NULL. */
void eng_auth_note_probe_sent(eng_auth_t *a, const uint8_t key[32]);
/* This peer became a member (again, eng_fan_out_member): a round or a
   rejoin window of its former membership ends.  Accepts NULL. */
void eng_auth_member(eng_auth_t *a);
/* Back from a pause, in the rejoin window: from, a member whose newer
   answer without this peer was refused (the swarm that went on),
   answered this peer's JOIN with a REDIRECT to `to`, its coordinator: a
   view of `to` that lists this peer takes it back as one of from's
   would (from could have answered with it itself).  Accepts NULL. */
void eng_auth_redirected(eng_auth_t *a, const uint8_t from[32], const uint8_t to[32]);
/* This peer's view changed (eng_fan_out_view): once a peer taken back
   after a pause is out of the group (or no member), the question ends
   (the context's decided); while it is still in, its timer asks to take
   it out at once.  Accepts NULL. */
void eng_auth_view_changed(eng_auth_t *a);
/* True while a pause's round is open or the peers asked after it may
   still answer; false when a is NULL. */
bool eng_auth_probing(const eng_auth_t *a);
/* True while the question "did the swarm go on without this peer" is
   open: the pause's round is open and the gate refused a member's
   answer, a view newer than this peer's that does not list it, or the
   peers then asked to take it back may still answer, or it was taken
   back and its view still lists it in the group.  No collective may
   start or complete meanwhile (the pause holds them, cl_engine_pause.c);
   the context's decided is called when it stops being true.  False when
   a is NULL. */
bool eng_auth_went_on(const eng_auth_t *a);
/* True when `epoch` is at most EPOCH_STEP above `own` and below the
   ceiling CL_EPOCH_MAX. */
bool eng_auth_epoch_step_ok(uint64_t own, uint64_t epoch);
/* Runs the views and admissions kept from the coordinator's successor
   (refused while the coordinator looked alive here) through the gate
   again, through the context's deliver, once the successor coordinates
   here; forgets them when it does not take over within
   4 × COLLAB_TIMEOUT.  Called after every event.  Accepts NULL. */
void eng_auth_successor_check(eng_auth_t *a);
/* A collective algorithm refused a message of p (sub, part): counted and
   warned about once per sender.  Accepts NULL. */
void eng_auth_refused_data(eng_auth_t *a, const cl_peer_t *p, int sub, uint32_t part);
/* Coordinator: reporter (a group member, or this peer itself) finds
   subject straggling.  True once that is enough to take it out of the
   group: the subject's own report, or two distinct reporters within
   max(10 s, 4 x COLLAB_TIMEOUT) (one in a group of two), so that one
   hostile member cannot evict an honest one.  True when a is NULL. */
bool eng_auth_straggler_vote(eng_auth_t *a, const uint8_t subject[32], const uint8_t reporter[32],
                             size_t group_size);
/* Coordinator: a member's heartbeat shows an epoch ahead of this peer's
   (ahead), or one that is not (!ahead, resets).  True once members have
   been ahead for `patience` seconds: time for the coordinator to raise
   its epoch above theirs.  `ahead` when a is NULL. */
bool eng_auth_member_ahead(eng_auth_t *a, bool ahead, double patience);

#endif
