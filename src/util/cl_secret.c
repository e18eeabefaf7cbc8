/*  cl_secret.c - the 32-byte swarm secret, from a key or a passphrase.

    A swarm key of 32 bytes or more is already strong: one BLAKE2b pass
    turns it into the secret.  A passphrase is not: whoever completes a
    handshake learns a MAC keyed from it and can guess offline, so it goes
    through Argon2id (libsodium's crypto_pwhash) with a cost fixed here,
    which makes each guess cost about 0.2 s and 64 MiB.  The
    salt comes from the run id, so a table of guesses made for one run is
    useless for another.  Every intermediate value is wiped.
*/
#include "util/cl_secret.h"

#include <sodium.h>
#include <string.h>

static const char s_salt_context[] = "mpicollab passphrase salt v1";
static bool s_stub;

void cl_secret_from_key(const char *key, size_t len, uint8_t out[CL_SECRET_BYTES])
{
    crypto_generichash(out, CL_SECRET_BYTES, (const uint8_t *)key, len, NULL, 0);
}

int cl_secret_from_passphrase(const char *pass, size_t len, const char *run_id,
                              uint8_t out[CL_SECRET_BYTES])
{
    uint8_t salt[crypto_pwhash_SALTBYTES];
    crypto_generichash_state st;
    const char *run = run_id != NULL ? run_id : "";
    crypto_generichash_init(&st, NULL, 0, sizeof salt);
    crypto_generichash_update(&st, (const uint8_t *)s_salt_context, sizeof s_salt_context - 1);
    crypto_generichash_update(&st, (const uint8_t *)run, strlen(run));
    crypto_generichash_final(&st, salt, sizeof salt);
    int rc = 0;
    if (s_stub) {
        crypto_generichash(out, CL_SECRET_BYTES, (const uint8_t *)pass, len, salt, sizeof salt);
    } else if (crypto_pwhash(out, CL_SECRET_BYTES, pass, len, salt, CL_SECRET_OPSLIMIT,
                             CL_SECRET_MEMLIMIT, crypto_pwhash_ALG_ARGON2ID13) != 0) {
        sodium_memzero(out, CL_SECRET_BYTES);
        rc = -1;
    }
    sodium_memzero(&st, sizeof st);
    return rc;
}

void cl_secret_stub_kdf_for_fuzzing(bool on)
{
    s_stub = on;
}
