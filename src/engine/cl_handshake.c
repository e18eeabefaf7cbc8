/*  cl_handshake.c - swarm key derivation and handshake MACs (libsodium).

    BLAKE2b (crypto_generichash) in keyed mode is a MAC; comparisons use
    sodium_memcmp, and every intermediate secret is wiped before return.
*/
#include "engine/cl_handshake.h"

#include <sodium.h>
#include <string.h>

static const char s_context[] = "mpicollab swarm v1";

void cl_hs_derive(const uint8_t *secret, const char *run_id, uint8_t out[32])
{
    bool keyed = secret != NULL;
    crypto_generichash_state st;
    crypto_generichash_init(&st, keyed ? secret : NULL, keyed ? 32 : 0, 32);
    crypto_generichash_update(&st, (const uint8_t *)s_context, sizeof s_context - 1);
    const char *run = run_id != NULL ? run_id : "";
    crypto_generichash_update(&st, (const uint8_t *)run, strlen(run));
    crypto_generichash_final(&st, out, 32);
    sodium_memzero(&st, sizeof st);
}

void cl_hs_mac(const uint8_t k[32], const char *label, const uint8_t client_key[32],
               const uint8_t server_key[32], const uint8_t client_nonce[32],
               const uint8_t server_nonce[32], uint8_t out[32])
{
    crypto_generichash_state st;
    crypto_generichash_init(&st, k, 32, 32);
    crypto_generichash_update(&st, (const uint8_t *)label, strlen(label));
    crypto_generichash_update(&st, client_key, 32);
    crypto_generichash_update(&st, server_key, 32);
    crypto_generichash_update(&st, client_nonce, 32);
    crypto_generichash_update(&st, server_nonce, 32);
    crypto_generichash_final(&st, out, 32);
    sodium_memzero(&st, sizeof st);
}

bool cl_hs_verify(const uint8_t k[32], const char *label, const uint8_t client_key[32],
                  const uint8_t server_key[32], const uint8_t client_nonce[32],
                  const uint8_t server_nonce[32], const uint8_t mac[32])
{
    uint8_t want[32];
    cl_hs_mac(k, label, client_key, server_key, client_nonce, server_nonce, want);
    bool ok = sodium_memcmp(want, mac, 32) == 0;
    sodium_memzero(want, sizeof want);
    return ok;
}

int cl_hs_pick_version(int min_a, int max_a, int min_b, int max_b)
{
    int lo = min_a > min_b ? min_a : min_b;
    int hi = max_a < max_b ? max_a : max_b;
    return lo <= hi ? hi : 0;
}
