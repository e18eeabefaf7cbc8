/*  cl_identity.h - a peer's Curve25519 key pair and its peer id.

    The peer id is the base58 (Bitcoin alphabet) text of the 32-byte public
    key.  With a path the pair is loaded, or created with mode 0600; a file
    that group or others can read is refused, as ssh does with keys.

    The file is a ZeroMQ secret certificate in CZMQ's text format (zcert_load
    reads it, and we read zcert_save_secret's files).  A new file appears
    atomically and complete under its name, even when several processes
    create the same identity at once (they all end up with the same keys).
    Anything that is not a regular file, holds no matching key pair or is
    larger than a certificate is refused, never overwritten.
*/
#ifndef CL_IDENTITY_H_INCLUDED
#define CL_IDENTITY_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

typedef struct cl_identity cl_identity_t;

#define CL_PEER_ID_MAX 64 /* base58 of 32 bytes is at most 44 chars + NUL */

/* Loads or creates the identity at path (NULL: fresh keys, not saved).
   Returns NULL with a one-line reason in err.  Caller owns the result. */
cl_identity_t *cl_identity_new(const char *path, char *err, size_t errlen);

/* Wipes the secret key and frees; nulls *self_p; accepts NULL. */
void cl_identity_destroy(cl_identity_t **self_p);

/* Accessors.  The results live as long as self; the secret ones must never
   be logged or sent anywhere. */
const uint8_t *cl_identity_public_key(const cl_identity_t *self); /* 32 bytes */
const uint8_t *cl_identity_secret_key(const cl_identity_t *self); /* 32 bytes */
const char *cl_identity_public_z85(const cl_identity_t *self);    /* 40 chars + NUL */

/* Signs m (mlen bytes) with the identity's signing key (cl_xsign.h,
   derived once when the identity is loaded): pk gets the key (32 bytes),
   sig the signature (64). */
void cl_identity_sign(const cl_identity_t *self, const uint8_t *m, size_t mlen, uint8_t *pk,
                      uint8_t *sig);
const char *cl_identity_secret_z85(const cl_identity_t *self);    /* 40 chars + NUL */
const char *cl_identity_peer_id(const cl_identity_t *self);       /* base58 */

/* Base58 of len bytes into out (NUL-terminated).  Returns 0, or -1 if out
   is too small. */
int cl_base58_encode(const uint8_t *in, size_t len, char *out, size_t outlen);

/* Decodes base58 text into exactly outlen bytes (leading zero bytes
   restored).  Returns 0, or -1 on a bad character or length. */
int cl_base58_decode(const char *in, uint8_t *out, size_t outlen);

#endif
