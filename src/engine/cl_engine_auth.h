/*  cl_engine_auth.h - who may send what, one component of the engine
    (cl_engine_authority.c, the gate of docs/security.md §3, and
    cl_engine_auth_probe.c, its round after a pause, §4).
*/
#ifndef CL_ENGINE_AUTH_H_INCLUDED
#define CL_ENGINE_AUTH_H_INCLUDED

#include "engine/cl_member.h"
#include "engine/cl_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cl_engine;

/* Largest step by which any message may raise a view epoch. */
#define EPOCH_STEP ((uint64_t)1 << 20)
/* This peer sent key a JOIN: key may answer it (JOIN_REPLY, VIEW). */
void eng_auth_note_join_sent(struct cl_engine *e, const uint8_t key[32]);
/* This peer, back from a pause, asks the members of its view (PROBE):
   a new round of the majority-acknowledgement tally (docs/security.md
   §4), for max(10 s, 4 × COLLAB_TIMEOUT); its timer in the loop's set
   asks again each second and acts at the deadline. */
void eng_auth_probe_start(struct cl_engine *e);
/* This peer, back from a pause, sent key a PROBE: key's view answers it,
   and counts once a majority of the last view answered with it. */
void eng_auth_note_probe_sent(struct cl_engine *e, const uint8_t key[32]);
/* This peer became a member (again, eng_fan_out_member): a round or a
   rejoin window of its former membership ends. */
void eng_auth_member(struct cl_engine *e);
/* True while a pause's round is open or the peers asked after it may
   still answer. */
bool eng_auth_probing(struct cl_engine *e);
/* True when key (record p, NULL if none) may send m in this peer's state;
   otherwise m is dropped, counted, logged and key banned where only a
   hostile peer sends such a message. */
bool eng_auth_message(struct cl_engine *e, const cl_peer_t *p, const uint8_t key[32],
                      const cl_wire_msg_t *m);
/* True when `epoch` is at most EPOCH_STEP above `own` and below the
   ceiling CL_EPOCH_MAX. */
bool eng_auth_epoch_step_ok(uint64_t own, uint64_t epoch);
/* Runs the views and admissions kept from the coordinator's successor
   (refused while the coordinator looked alive here) through the gate
   again once the successor coordinates here; forgets them when it does
   not take over within 4 × COLLAB_TIMEOUT.  Called after every event. */
void eng_auth_successor_check(struct cl_engine *e);
/* A collective algorithm refused a message of p (sub, part): counted and
   warned about once per sender. */
void eng_auth_refused_data(struct cl_engine *e, const cl_peer_t *p, int sub, uint32_t part);
/* Coordinator: reporter (a group member, or this peer itself) finds
   subject straggling.  True once that is enough to take it out of the
   group: the subject's own report, or two distinct reporters within
   max(10 s, 4 x COLLAB_TIMEOUT) (one in a group of two), so that one
   hostile member cannot evict an honest one. */
bool eng_auth_straggler_vote(struct cl_engine *e, const uint8_t subject[32],
                             const uint8_t reporter[32], size_t group_size);
/* Coordinator: a member's heartbeat shows an epoch ahead of this peer's
   (ahead), or one that is not (!ahead, resets).  True once members have
   been ahead for `patience` seconds: time for the coordinator to raise
   its epoch above theirs. */
bool eng_auth_member_ahead(struct cl_engine *e, bool ahead, double patience);

#endif
