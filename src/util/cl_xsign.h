/*  cl_xsign.h - Ed25519 signatures made with a peer's X25519 identity key
    (XEdDSA, as Signal specifies it), so that every member can check them
    against the identity alone (docs/security.md §6, relay proofs).

    A peer's identity is its CurveZMQ key pair: an X25519 secret scalar a
    and the public u = a·B (Montgomery).  The Edwards point A = a·B has
    that same u; its x sign bit is the one thing u does not fix, so the
    signing key is the point of the two with the sign bit clear (the
    scalar is negated when a·B's is set).  One identity key therefore has
    exactly one signing key, anyone can check that a key is it
    (cl_xsign_binds), and nobody can announce another one for a peer.
    Signatures are plain Ed25519 (R, S) that libsodium's
    crypto_sign_verify_detached accepts; the nonce is random.  Pure: no
    state, no clock, no sockets.
*/
#ifndef CL_XSIGN_H_INCLUDED
#define CL_XSIGN_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_XSIGN_PK 32  /* bytes of a signing (Ed25519) public key */
#define CL_XSIGN_SIG 64 /* bytes of a signature */

/* The signing key of the X25519 secret key xsk (32 bytes, clamped as
   X25519 clamps it).  Returns 0, or -1 for a key with no such point
   (never for a key crypto_box_keypair or CurveZMQ made). */
int cl_xsign_public(const uint8_t xsk[32], uint8_t pk[CL_XSIGN_PK]);

/* A signing key derived once from an X25519 secret (the scalar and the
   public key), for a signer that signs often.  Holds a secret: wipe it
   with sodium_memzero when done. */
typedef struct {
    uint8_t a[32];           /* the secret scalar, reduced and sign-adjusted */
    uint8_t pk[CL_XSIGN_PK]; /* its public key, as cl_xsign_public */
} cl_xsign_key_t;

/* Derives key from xsk.  Returns 0, or -1 as cl_xsign_public. */
int cl_xsign_key(const uint8_t xsk[32], cl_xsign_key_t *key);

/* As cl_xsign_sign with a derived key (one scalar multiplication less). */
void cl_xsign_sign_key(const cl_xsign_key_t *key, const uint8_t *m, size_t mlen,
                       uint8_t sig[CL_XSIGN_SIG]);

/* Signs m (mlen bytes) with xsk's signing key: sig gets R || S, and pk
   (unless NULL) the signing key, as cl_xsign_public gives it.  Returns 0,
   or -1 as cl_xsign_public.  Secrets are wiped. */
int cl_xsign_sign(const uint8_t xsk[32], const uint8_t *m, size_t mlen, uint8_t sig[CL_XSIGN_SIG],
                  uint8_t *pk);

/* True when pk is the signing key of the X25519 public key xpk: a valid
   point of the prime-order group whose Montgomery u is xpk and whose
   sign bit is clear. */
bool cl_xsign_binds(const uint8_t xpk[32], const uint8_t pk[CL_XSIGN_PK]);

/* True when sig is a valid signature of m under pk (Ed25519). */
bool cl_xsign_verify(const uint8_t pk[CL_XSIGN_PK], const uint8_t *m, size_t mlen,
                     const uint8_t sig[CL_XSIGN_SIG]);

#endif
