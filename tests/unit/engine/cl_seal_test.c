/*  cl_seal_test.c - selftest of the end-to-end sealing of relayed messages.

    Three members A, B, C of one run and a relay in between that tries
    what a hostile relay can: flip a byte of a box, replay one, hand a
    box sealed for C to B, swap the sender, replay under a fresh counter,
    bring a box of another run.  Every such box is refused and refusing
    it changes nothing for the genuine messages that follow; reordering
    inside the window is accepted once.
*/
#include "engine/cl_seal.h"

#include "util/cl_selftest.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint8_t pk[32], sk[32];
} keys_t;

static int open_free(cl_seal_t *s, const uint8_t src[32], uint64_t c, const uint8_t *box, size_t n,
                     const char *want)
{
    uint8_t *m = NULL;
    size_t len = 0;
    int rc = cl_seal_open(s, src, c, box, n, &m, &len);
    if (rc == 0 && want != NULL)
        CL_CHECK(len == strlen(want) && memcmp(m, want, len) == 0);
    free(m);
    return rc;
}

int main(void)
{
    CL_CHECK(sodium_init() >= 0);
    keys_t a, b, c;
    crypto_box_keypair(a.pk, a.sk);
    crypto_box_keypair(b.pk, b.sk);
    crypto_box_keypair(c.pk, c.sk);
    cl_seal_t *sa = cl_seal_new(a.pk, a.sk, "run1");
    cl_seal_t *sb = cl_seal_new(b.pk, b.sk, "run1");
    cl_seal_t *sc = cl_seal_new(c.pk, c.sk, "run1");
    cl_seal_t *sb2 = cl_seal_new(b.pk, b.sk, "run2");
    CL_CHECK(sa != NULL && sb != NULL && sc != NULL && sb2 != NULL);

    /* A to B: opens, once. */
    uint64_t c1, c2, c3, cc;
    uint8_t *b1, *b2, *b3, *bc;
    size_t n1, n2, n3, nc;
    CL_CHECK(cl_seal_box(sa, b.pk, (const uint8_t *)"one", 3, &c1, &b1, &n1) == 0);
    CL_CHECK(n1 == 3 + CL_SEAL_OVERHEAD);
    CL_CHECK(cl_seal_box(sa, b.pk, (const uint8_t *)"two", 3, &c2, &b2, &n2) == 0);
    CL_CHECK(cl_seal_box(sa, b.pk, (const uint8_t *)"three", 5, &c3, &b3, &n3) == 0);
    CL_CHECK(c2 == c1 + 1 && c3 == c2 + 1);
    CL_CHECK(cl_seal_box(sa, c.pk, (const uint8_t *)"for c", 5, &cc, &bc, &nc) == 0);

    /* Another run's B cannot open it. */
    CL_CHECK(open_free(sb2, a.pk, c1, b1, n1, NULL) == CL_SEAL_EFORGED);
    /* A flipped byte, anywhere, is refused, and does not burn the counter. */
    for (size_t i = 0; i < n1; i++) {
        b1[i] ^= 0x20;
        CL_CHECK(open_free(sb, a.pk, c1, b1, n1, NULL) == CL_SEAL_EFORGED);
        b1[i] ^= 0x20;
    }
    /* A box under another counter (the relay rewrote it) is refused. */
    CL_CHECK(open_free(sb, a.pk, c1 + 7, b1, n1, NULL) == CL_SEAL_EFORGED);
    /* A box claimed to come from C is refused. */
    CL_CHECK(open_free(sb, c.pk, c1, b1, n1, NULL) == CL_SEAL_EFORGED);
    /* A box sealed for C, handed to B: refused. */
    CL_CHECK(open_free(sb, a.pk, cc, bc, nc, NULL) == CL_SEAL_EFORGED);
    /* Out of order inside the window: both open, once each. */
    CL_CHECK(open_free(sb, a.pk, c2, b2, n2, "two") == 0);
    CL_CHECK(open_free(sb, a.pk, c1, b1, n1, "one") == 0);
    CL_CHECK(open_free(sb, a.pk, c1, b1, n1, NULL) == CL_SEAL_EREPLAY);
    CL_CHECK(open_free(sb, a.pk, c2, b2, n2, NULL) == CL_SEAL_EREPLAY);
    CL_CHECK(open_free(sb, a.pk, c3, b3, n3, "three") == 0);
    CL_CHECK(open_free(sb, a.pk, c3, b3, n3, NULL) == CL_SEAL_EREPLAY);
    /* C opens its own. */
    CL_CHECK(open_free(sc, a.pk, cc, bc, nc, "for c") == 0);
    /* The same counter from B to A is another nonce (each direction has its
       own); A opens B's message. */
    uint64_t cb;
    uint8_t *bb;
    size_t nb;
    CL_CHECK(cl_seal_box(sb, a.pk, (const uint8_t *)"back", 4, &cb, &bb, &nb) == 0);
    CL_CHECK(open_free(sa, b.pk, cb, bb, nb, "back") == 0);
    /* Too short to hold a MAC. */
    CL_CHECK(open_free(sb, a.pk, c3 + 1, b3, CL_SEAL_OVERHEAD - 1, NULL) == CL_SEAL_ESIZE);
    /* A counter far below the window is a replay even if never seen. */
    uint64_t last = 0;
    for (int i = 0; i < CL_SEAL_WINDOW + 2; i++) {
        uint8_t *x;
        size_t nx;
        CL_CHECK(cl_seal_box(sa, b.pk, (const uint8_t *)"x", 1, &last, &x, &nx) == 0);
        if (i == CL_SEAL_WINDOW + 1)
            CL_CHECK(open_free(sb, a.pk, last, x, nx, "x") == 0);
        free(x);
    }
    CL_CHECK(open_free(sb, a.pk, last - CL_SEAL_WINDOW, b3, n3, NULL) == CL_SEAL_EREPLAY);
    /* A restarted A (same identity, new process) continues above. */
    cl_seal_t *sa2 = cl_seal_new(a.pk, a.sk, "run1");
    uint64_t cr;
    uint8_t *br;
    size_t nr;
    CL_CHECK(cl_seal_box(sa2, b.pk, (const uint8_t *)"again", 5, &cr, &br, &nr) == 0);
    CL_CHECK(open_free(sb, a.pk, cr, br, nr, "again") == 0);
    CL_CHECK(cr > last);
    CL_CHECK_CONTAINS(cl_seal_strerror(CL_SEAL_EREPLAY), "replay");
    free(b1);
    free(b2);
    free(b3);
    free(bc);
    free(bb);
    free(br);
    cl_seal_destroy(&sa);
    cl_seal_destroy(&sa2);
    cl_seal_destroy(&sb);
    cl_seal_destroy(&sb2);
    cl_seal_destroy(&sc);
    CL_CHECK(sa == NULL);
    return cl_selftest_end("cl_seal_test");
}
