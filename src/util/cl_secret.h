/*  cl_secret.h - the 32-byte swarm secret, from a key or a passphrase.

    A closed swarm is keyed by one 32-byte secret S, from which the
    handshake derives its MAC key (docs/wire.md section 4):
      - from a swarm key (COLLAB_SWARM_KEY / _FILE, 32 bytes or more):
        S = BLAKE2b-256(key);
      - from a passphrase (COLLAB_SWARM_PASSPHRASE): S = Argon2id13(
        passphrase, salt = BLAKE2b-128("mpicollab passphrase salt v1" ||
        run id), opslimit CL_SECRET_OPSLIMIT, memlimit CL_SECRET_MEMLIMIT).
    The cost is part of the protocol: every peer of a swarm must use the
    same one, so it is a constant, not a setting.  Callers wipe S.
*/
#ifndef CL_SECRET_H_INCLUDED
#define CL_SECRET_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_SECRET_BYTES 32                    /* size of S */
#define CL_SECRET_OPSLIMIT 3                  /* Argon2id passes (protocol constant) */
#define CL_SECRET_MEMLIMIT ((size_t)64 << 20) /* Argon2id memory, bytes (protocol constant) */
#define CL_PASSPHRASE_MIN 8                   /* shortest passphrase, in bytes */
#define CL_PASSPHRASE_MAX 4096                /* longest passphrase, in bytes */

/* S from a swarm key of len bytes.  Pure; never fails. */
void cl_secret_from_key(const char *key, size_t len, uint8_t out[CL_SECRET_BYTES]);

/* S from a passphrase of len bytes and the run id (the salt).  Returns 0,
   or -1 when Argon2id cannot get its memory (out is then zeroed).  Takes
   about 0.2 s of one core and CL_SECRET_MEMLIMIT bytes. */
int cl_secret_from_passphrase(const char *pass, size_t len, const char *run_id,
                              uint8_t out[CL_SECRET_BYTES]);

/* Fuzzing only: replaces Argon2id by a keyed BLAKE2b of the same inputs,
   so that a fuzz target can run millions of derivations.  Never called by
   the library. */
void cl_secret_stub_kdf_for_fuzzing(bool on);

#endif
