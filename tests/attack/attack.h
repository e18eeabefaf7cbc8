/*  attack.h - the scenarios of the attack program (attack.c), one file a
    theme; each returns the number of peers that failed (0: the attack had
    no effect) and sets s_setup_failed when the test could not be set up.
*/
#ifndef ATTACK_H_INCLUDED
#define ATTACK_H_INCLUDED

#include "harness.h"

/* harness_prepare for scenario sc with n peers (run id attack-<sc>-<pid>). */
void prepare(const char *sc, int n);

/* attack_stranger.c */
int sc_view(void);
int sc_heartbeat(void);
int sc_join_reply(void);
/* attack_handshake.c */
int sc_prehs(void);
int sc_conntable(void);
int sc_hellos(void);
/* attack_member.c: mode suspect, admit, update, result or status; cnt
   floats per all-reduce. */
int sc_member(const char *mode, size_t cnt);
/* flood: collective messages for communicators nobody created; credit:
   point-to-point messages past the credit each victim grants; early:
   early collective messages past the credit each victim grants. */
int sc_flood(const char *mode);
/* attack_proofs.c: proofs, proofs_v8 or proofs_mixed. */
int sc_proofs(const char *mode);
/* attack_proofs.c: an older peer (wire version 8) against a swarm that signs. */
int sc_downgrade(bool adopted);
/* attack_xproof.c: xrelay (a forged relay of a failed member's exchange
   piece) or xbcast (a broadcast-chain intermediate that alters chunks). */
int sc_xproof(const char *mode);
/* attack_checkpoint.c */
int sc_checkpoint(void);
/* n trainers (3: a majority against the liar; 2: a tie), the last lies:
   in its HASHES, or (data) in the DATA it serves. */
int sc_checkpoint_liar(int n, bool data);
/* 4 trainers of a world of 5, rank 3 lying in its HASHES, and a joiner. */
int sc_sync_liar(void);
/* attack_state.c: sync_huge (a donor declaring 8 GiB buffers) or
   fetch_flood (a joiner repeating its FETCHes). */
int sc_state(const char *mode);
/* attack_streams.c: a live member filling COLLAB_MAX_STREAMS. */
int sc_streams(void);
/* attack_streams.c: a stranger filling the held queue (COLLAB_MAX_HELD_MSGS). */
int sc_held(void);
/* attack_floor.c: a JOIN over a link older than the swarm's wire floor. */
int sc_wirefloor(void);
/* attack_malformed.c: a malformed message from a stranger that completed
   the handshake, under COLLAB_BAN_TIME=7. */
int sc_malformed(void);
/* attack_goodbye.c: a member that leaves naming 1 << 30 world collectives
   entered in its GOODBYE. */
int sc_goodbye(void);
/* attack_pause.c: a hostile member's forged views to a peer back from a
   pause. */
int sc_pauseview(void);
/* attack_pause.c: a peer back from a pause with no majority of its last
   view left to answer (the fallback: JOIN through a newer view). */
int sc_pausefallback(void);
/* attack_formation.c: the founder dies as it forms the group, its last
   views reaching the newest peer only (a fault, not an attack); known:
   the others got the view that admitted it, only not the one forming
   the group. */
int sc_formation(bool known);

#endif
