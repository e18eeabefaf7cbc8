/*  cl_engine_auth_int.h - what the two files of the authority share
    among themselves only: cl_engine_authority.c (the gate every message
    passes, docs/security.md §3) and cl_engine_auth_probe.c (the round of
    PROBEs after a pause, §4).  Nobody else includes it; the rest of the
    engine sees the authority through cl_engine_auth.h.

    Each field of struct eng_auth has one writer: the context is copied
    at creation; the gate's own memory is written by
    cl_engine_authority.c only, the round (struct auth_round) by
    cl_engine_auth_probe.c only, which the gate asks through
    eng_auth_acknowledged, eng_auth_was_probed, eng_auth_went_on_by and
    eng_auth_rejoining.
*/
#ifndef CL_ENGINE_AUTH_INT_H_INCLUDED
#define CL_ENGINE_AUTH_INT_H_INCLUDED

#include "engine/cl_engine_auth.h"
#include "engine/cl_viewack.h"

#define ASKED_MAX 64    /* peers remembered as asked for a rank */
#define WARNED_MAX 64   /* senders of refused collective data already named */
#define VOTES_MAX 64    /* straggler reports remembered */
#define SUCC_KEPT_MAX 8 /* messages of the coordinator's successor kept */
#define REFUSED_MAX 16  /* members whose newer answer was refused, remembered */

/* Back from a pause (docs/security.md §4): the members asked (PROBE)
   and their answers; a view of one that is not the coordinator counts
   once a majority of the last view answered with it.  Written by
   cl_engine_auth_probe.c only. */
struct auth_round {
    cl_viewack_t *ack;
    double ack_until;      /* the round's deadline */
    uint64_t ack_epoch;    /* this peer's view's epoch when the round began */
    double ack_next_probe; /* when the members that did not agree are asked again */
    double rejoin_until;   /* no proof in time: views of the peers then sent a JOIN count
                              until this (0: none) */
    double next_rejoin;    /* in that window, when the JOIN goes again */
    /* The members whose answer, a view newer than this peer's without
       it, the gate refused: the swarm may have gone on without it, with
       them. */
    uint8_t refused_keys[REFUSED_MAX][32];
    size_t nrefused;
    bool refused_newer; /* any such answer in this round */
    /* Taken back (eng_auth_taken_back) while its own view may still
       list it in the group at its stale sequence: it asks to be taken
       out (self_out, each second, next_self_out) and holds every
       collective until its view lists it out of the group, then it is
       re-admitted and resynced as a straggler; by taken_until at the
       latest (0: not taken back). */
    bool taken_back;
    double taken_until;
    double next_self_out;
    int probe_timer; /* the round's timer in the loop's set (-1: none) */
};

struct eng_auth {
    eng_auth_ctx_t ctx; /* copied at creation; read only */
    /* The gate's memory: written by cl_engine_authority.c only. */
    uint8_t asked[ASKED_MAX][32]; /* peers sent a JOIN (ring) */
    size_t nasked, next_asked;
    uint64_t dropped[256];          /* per message type (ELASTIC: 128 + sub) */
    uint64_t banned;                /* senders banned by this gate */
    uint8_t warned[WARNED_MAX][32]; /* senders of refused collective data named in the log */
    size_t nwarned;
    struct {
        uint8_t subject[32], reporter[32];
        double t;
    } votes[VOTES_MAX]; /* recent straggler reports (ring) */
    size_t next_vote;
    double ahead_since; /* coordinator: a member's epoch ahead of ours since (0: none) */
    /* Views and admissions of the coordinator's successor that arrived
       before this peer saw the coordinator fail, encoded as they came, in
       order, all from one sender (eng_auth_successor_check). */
    struct {
        double t;
        uint8_t hdr[CL_WIRE_HDR_SIZE];
        uint8_t *body;
        size_t blen;
    } succ[SUCC_KEPT_MAX];
    size_t nsucc;
    uint8_t succ_key[32];
    bool replaying; /* re-running the kept messages through this gate */
    /* The round after a pause: cl_engine_auth_probe.c only. */
    struct auth_round round;
};

/* Sets up the round's state (the tally, the timer registered in the
   context's set) in a->round; COLLAB_ERR_NO_MEM when out of memory.
   eng_auth_probe_fini undoes it, also after a failed init. */
int eng_auth_probe_init(eng_auth_t *a);
void eng_auth_probe_fini(eng_auth_t *a);

/* key, asked after the pause, answered with view m: true when more than
   half of the last view has now answered with that same view, which
   then counts (the round ends).  Tallies the answer either way. */
bool eng_auth_acknowledged(eng_auth_t *a, const uint8_t key[32], const cl_wire_msg_t *m);
/* Whether key was sent a PROBE in the latest round (open or ended). */
bool eng_auth_was_probed(const eng_auth_t *a, const uint8_t key[32]);
/* key sent a view that lists this peer and passed the gate: when key is
   one eng_auth_went_on_by names, the round or the rejoin window ends:
   this peer was taken back, and it resyncs as a straggler (taken_back
   in struct auth_round). */
void eng_auth_taken_back(eng_auth_t *a, const uint8_t key[32]);
/* Whether a view from key that lists this peer takes it back: key's
   newer answer, a view without it, was refused in this round, and the
   rejoin window is open or the round can find no majority any more
   (fewer members asked than one needs), so the window would trust that
   same view. */
bool eng_auth_went_on_by(const eng_auth_t *a, const uint8_t key[32]);
/* The gate refused key's answer, a view newer than this peer's that
   does not list it (no majority yet): while the round is open, the
   swarm may have gone on without this peer (eng_auth_went_on), with
   key.  A refused newer view that lists this peer is not reported: the
   swarm it shows still counts on this peer. */
void eng_auth_refused_newer(eng_auth_t *a, const uint8_t key[32]);
/* Whether the round ended without a majority and the peers then sent a
   JOIN may still answer with a view that lists this peer. */
bool eng_auth_rejoining(const eng_auth_t *a);

#endif
