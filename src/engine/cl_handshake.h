/*  cl_handshake.h - the cryptographic part of the peer handshake.

    docs/wire.md section 4: a swarm key K derived from COLLAB_SWARM_KEY and
    the run id, MACs over both public keys and both nonces, compared in
    constant time, and the version negotiation rule.  Pure functions.
*/
#ifndef CL_HANDSHAKE_H_INCLUDED
#define CL_HANDSHAKE_H_INCLUDED

#include <stdbool.h>
#include <stdint.h>

/* K = BLAKE2b-256(key = the 32-byte swarm secret S or none,
                   "mpicollab swarm v1" || run_id).
   S comes from the swarm key or passphrase (util/cl_secret.h); secret
   NULL means an open swarm.  The caller wipes out. */
void cl_hs_derive(const uint8_t *secret, const char *run_id, uint8_t out[32]);

/* MAC over label || client key || server key || client nonce || server
   nonce, keyed with K. */
void cl_hs_mac(const uint8_t k[32], const char *label, const uint8_t client_key[32],
               const uint8_t server_key[32], const uint8_t client_nonce[32],
               const uint8_t server_nonce[32], uint8_t out[32]);

/* Recomputes the MAC and compares it with `mac` in constant time. */
bool cl_hs_verify(const uint8_t k[32], const char *label, const uint8_t client_key[32],
                  const uint8_t server_key[32], const uint8_t client_nonce[32],
                  const uint8_t server_nonce[32], const uint8_t mac[32]);

/* The highest version in both [min_a, max_a] and [min_b, max_b], or 0 when
   the ranges do not overlap. */
int cl_hs_pick_version(int min_a, int max_a, int min_b, int max_b);

#endif
