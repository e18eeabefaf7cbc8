/*  cl_xsign_test.c - selftest of cl_xsign: signatures of X25519 identity
    keys that libsodium's Ed25519 verifier accepts, one signing key per
    identity (the other sign, another identity's key and junk are refused),
    forged or altered signatures refused; with an argument, the cost of a
    sign and a verify (docs/security.md §6). */
#include "util/cl_selftest.h"
#include "util/cl_xsign.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_keys(void)
{
    for (int k = 0; k < 64; k++) {
        uint8_t xpk[32], xsk[32], pk[32], pk2[32], sig[64];
        crypto_box_keypair(xpk, xsk);
        CL_CHECK(cl_xsign_public(xsk, pk) == 0);
        CL_CHECK((pk[31] & 0x80) == 0);
        CL_CHECK(cl_xsign_public(xsk, pk2) == 0 && memcmp(pk, pk2, 32) == 0);
        CL_CHECK(cl_xsign_binds(xpk, pk));
        /* The other point with the same u (sign bit set) is not the key. */
        memcpy(pk2, pk, 32);
        pk2[31] |= 0x80;
        CL_CHECK(!cl_xsign_binds(xpk, pk2));
        /* Nor is a key of another identity, nor a plain Ed25519 key. */
        uint8_t opk[32], osk[32], esk[64], epk[32];
        crypto_box_keypair(opk, osk);
        CL_CHECK(!cl_xsign_binds(opk, pk));
        crypto_sign_keypair(epk, esk);
        CL_CHECK(!cl_xsign_binds(xpk, epk));
        uint8_t junk[32];
        randombytes_buf(junk, sizeof junk);
        CL_CHECK(!cl_xsign_binds(xpk, junk));

        uint8_t m[100];
        randombytes_buf(m, sizeof m);
        CL_CHECK(cl_xsign_sign(xsk, m, sizeof m, sig, NULL) == 0);
        CL_CHECK(cl_xsign_verify(pk, m, sizeof m, sig));
        CL_CHECK(crypto_sign_verify_detached(sig, m, sizeof m, pk) == 0);
        /* Randomised nonce: two signatures differ, both verify. */
        uint8_t sig2[64];
        CL_CHECK(cl_xsign_sign(xsk, m, sizeof m, sig2, pk2) == 0 && memcmp(pk2, pk, 32) == 0);
        CL_CHECK(memcmp(sig, sig2, 64) != 0 && cl_xsign_verify(pk, m, sizeof m, sig2));
        /* Another message, an altered signature, another key: refused. */
        m[k % sizeof m] ^= 1;
        CL_CHECK(!cl_xsign_verify(pk, m, sizeof m, sig));
        m[k % sizeof m] ^= 1;
        sig[k % 64] ^= 0x10;
        CL_CHECK(!cl_xsign_verify(pk, m, sizeof m, sig));
        sig[k % 64] ^= 0x10;
        uint8_t opk_ed[32];
        CL_CHECK(cl_xsign_public(osk, opk_ed) == 0);
        CL_CHECK(!cl_xsign_verify(opk_ed, m, sizeof m, sig));
        /* A signature made by another identity's secret does not pass
           under this identity's key. */
        CL_CHECK(cl_xsign_sign(osk, m, sizeof m, sig2, NULL) == 0);
        CL_CHECK(!cl_xsign_verify(pk, m, sizeof m, sig2));
        CL_CHECK(cl_xsign_binds(opk, opk_ed) && !cl_xsign_binds(xpk, opk_ed));
    }
}

/* The cost per chunk of the butterfly's proofs: a BLAKE2b-256 digest of
   the chunk, then a signature (producer) or a check of the key's binding
   and a verification (every holder). */
static void bench(size_t chunk, int runs)
{
    uint8_t xpk[32], xsk[32], pk[32], sig[64], dig[32];
    crypto_box_keypair(xpk, xsk);
    cl_xsign_public(xsk, pk);
    uint8_t *buf = malloc(chunk);
    if (buf == NULL)
        return;
    randombytes_buf(buf, chunk);
    double t0 = s_now();
    for (int i = 0; i < runs; i++)
        crypto_generichash(dig, sizeof dig, buf, chunk, NULL, 0);
    double t1 = s_now();
    for (int i = 0; i < runs; i++)
        cl_xsign_sign(xsk, dig, sizeof dig, sig, NULL);
    double t2 = s_now();
    int ok = 0;
    for (int i = 0; i < runs; i++)
        ok += cl_xsign_verify(pk, dig, sizeof dig, sig);
    double t3 = s_now();
    for (int i = 0; i < runs; i++)
        ok += cl_xsign_binds(xpk, pk);
    double t4 = s_now();
    printf("chunk %zu B, %d runs: digest %.1f us, sign %.1f us, verify %.1f us, "
           "key check %.1f us (%d ok)\n",
           chunk, runs, 1e6 * (t1 - t0) / runs, 1e6 * (t2 - t1) / runs, 1e6 * (t3 - t2) / runs,
           1e6 * (t4 - t3) / runs, ok);
    free(buf);
}

int main(int argc, char **argv)
{
    if (sodium_init() < 0)
        return 1;
    test_keys();
    if (argc > 1)
        bench((size_t)strtoul(argv[1], NULL, 10), argc > 2 ? atoi(argv[2]) : 2000);
    return cl_selftest_end("cl_xsign_test");
}
