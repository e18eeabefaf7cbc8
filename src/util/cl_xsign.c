/*  cl_xsign.c - Ed25519 signatures of an X25519 identity key (XEdDSA).

    Signing with scalar a (the clamped X25519 secret, reduced mod L, and
    negated when a·B has its sign bit set, so that A = a·B is the key of
    cl_xsign_public):
        r = SHA-512("mpicollab xsign v1" || a || Z || m) mod L, Z random
        R = r·B,  h = SHA-512(R || A || m) mod L,  S = r + h·a mod L
    which is Ed25519's equation S·B = R + h·A, so libsodium's verifier
    checks it.  The same key serves X25519 and these signatures, as in
    XEdDSA; the signatures are over messages of a fixed domain, never over
    anything a Diffie-Hellman exchange feeds.  See cl_xsign.h.
*/
#include "cl_xsign.h"

#include <sodium.h>
#include <string.h>

static const char s_domain[] = "mpicollab xsign v1";

/* The scalar a (mod L) and the key A of xsk. */
static int s_scalar(const uint8_t xsk[32], uint8_t a[32], uint8_t pk[32])
{
    uint8_t wide[64] = {0};
    memcpy(wide, xsk, 32);
    wide[0] &= 248;
    wide[31] &= 127;
    wide[31] |= 64;
    crypto_core_ed25519_scalar_reduce(a, wide);
    sodium_memzero(wide, sizeof wide);
    if (crypto_scalarmult_ed25519_base_noclamp(pk, a) != 0) {
        sodium_memzero(a, 32);
        return -1;
    }
    if (pk[31] & 0x80) {
        uint8_t neg[32];
        crypto_core_ed25519_scalar_negate(neg, a);
        memcpy(a, neg, 32);
        sodium_memzero(neg, sizeof neg);
        pk[31] &= 0x7f;
    }
    return 0;
}

int cl_xsign_public(const uint8_t xsk[32], uint8_t pk[CL_XSIGN_PK])
{
    uint8_t a[32];
    int rc = s_scalar(xsk, a, pk);
    sodium_memzero(a, sizeof a);
    return rc;
}

int cl_xsign_key(const uint8_t xsk[32], cl_xsign_key_t *key)
{
    return s_scalar(xsk, key->a, key->pk);
}

void cl_xsign_sign_key(const cl_xsign_key_t *key, const uint8_t *m, size_t mlen,
                       uint8_t sig[CL_XSIGN_SIG])
{
    uint8_t z[64], hr[64], r[32], hh[64], h[32], ha[32];
    crypto_hash_sha512_state st;
    do {
        randombytes_buf(z, sizeof z);
        crypto_hash_sha512_init(&st);
        crypto_hash_sha512_update(&st, (const uint8_t *)s_domain, sizeof s_domain - 1);
        crypto_hash_sha512_update(&st, key->a, sizeof key->a);
        crypto_hash_sha512_update(&st, z, sizeof z);
        crypto_hash_sha512_update(&st, m, mlen);
        crypto_hash_sha512_final(&st, hr);
        crypto_core_ed25519_scalar_reduce(r, hr);
    } while (crypto_scalarmult_ed25519_base_noclamp(sig, r) != 0); /* r = 0: draw again */
    crypto_hash_sha512_init(&st);
    crypto_hash_sha512_update(&st, sig, 32);
    crypto_hash_sha512_update(&st, key->pk, sizeof key->pk);
    crypto_hash_sha512_update(&st, m, mlen);
    crypto_hash_sha512_final(&st, hh);
    crypto_core_ed25519_scalar_reduce(h, hh);
    crypto_core_ed25519_scalar_mul(ha, h, key->a);
    crypto_core_ed25519_scalar_add(sig + 32, r, ha);
    sodium_memzero(z, sizeof z);
    sodium_memzero(hr, sizeof hr);
    sodium_memzero(r, sizeof r);
    sodium_memzero(ha, sizeof ha);
    sodium_memzero(&st, sizeof st);
}

int cl_xsign_sign(const uint8_t xsk[32], const uint8_t *m, size_t mlen, uint8_t sig[CL_XSIGN_SIG],
                  uint8_t *pk_out)
{
    cl_xsign_key_t key;
    int rc = cl_xsign_key(xsk, &key);
    if (rc == 0) {
        cl_xsign_sign_key(&key, m, mlen, sig);
        if (pk_out != NULL)
            memcpy(pk_out, key.pk, sizeof key.pk);
    }
    sodium_memzero(&key, sizeof key);
    return rc;
}

bool cl_xsign_binds(const uint8_t xpk[32], const uint8_t pk[CL_XSIGN_PK])
{
    uint8_t u[32];
    if ((pk[31] & 0x80) != 0 || crypto_sign_ed25519_pk_to_curve25519(u, pk) != 0)
        return false;
    return sodium_memcmp(u, xpk, 32) == 0;
}

bool cl_xsign_verify(const uint8_t pk[CL_XSIGN_PK], const uint8_t *m, size_t mlen,
                     const uint8_t sig[CL_XSIGN_SIG])
{
    return crypto_sign_verify_detached(sig, m, mlen, pk) == 0;
}
