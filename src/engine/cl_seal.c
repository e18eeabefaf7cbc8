/*  cl_seal.c - end-to-end sealing of relayed messages.

    One entry per remote key, in a small open array (a peer relays only
    with the client members of its view): the precomputed crypto_box
    shared key, the nonce salts of both directions, the next counter to
    send and the receive window.  See cl_seal.h for the scheme.
*/
#include "engine/cl_seal.h"

#include <sodium.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    uint8_t key[32];                          /* the remote peer */
    uint8_t shared[crypto_box_BEFORENMBYTES]; /* X25519 + HSalsa20 shared key */
    uint8_t salt_out[16];                     /* nonce tail, this peer -> key */
    uint8_t salt_in[16];                      /* nonce tail, key -> this peer */
    uint64_t next_out;                        /* next counter to send, 0 = not started */
    uint64_t top_in;                          /* highest counter opened, 0 = none */
    uint64_t window;                          /* bit i: top_in - i opened (bit 0 = top_in) */
} pair_t;

struct cl_seal {
    uint8_t pk[32];
    uint8_t sk[32];
    uint8_t run[32]; /* BLAKE2b-256 of the run id */
    pair_t *pairs;
    size_t npairs, cap;
};

cl_seal_t *cl_seal_new(const uint8_t pk[32], const uint8_t sk[32], const char *run_id)
{
    if (sodium_init() < 0)
        return NULL;
    cl_seal_t *self = calloc(1, sizeof *self);
    if (self == NULL)
        return NULL;
    memcpy(self->pk, pk, 32);
    memcpy(self->sk, sk, 32);
    const char *r = run_id != NULL ? run_id : "";
    crypto_generichash(self->run, 32, (const uint8_t *)r, strlen(r), NULL, 0);
    return self;
}

void cl_seal_destroy(cl_seal_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    cl_seal_t *self = *self_p;
    if (self->pairs != NULL)
        sodium_memzero(self->pairs, self->cap * sizeof *self->pairs);
    free(self->pairs);
    sodium_memzero(self, sizeof *self);
    free(self);
    *self_p = NULL;
}

static void salt(const cl_seal_t *self, const uint8_t from[32], const uint8_t to[32],
                 uint8_t out[16])
{
    crypto_generichash_state st;
    uint8_t h[32];
    crypto_generichash_init(&st, NULL, 0, 32);
    crypto_generichash_update(&st, self->run, 32);
    crypto_generichash_update(&st, from, 32);
    crypto_generichash_update(&st, to, 32);
    crypto_generichash_final(&st, h, 32);
    memcpy(out, h, 16);
}

/* The entry of key, made on first use; NULL when out of memory or when
   key is not a valid public key (the shared key would be all zero). */
static pair_t *pair_of(cl_seal_t *self, const uint8_t key[32])
{
    for (size_t i = 0; i < self->npairs; i++)
        if (memcmp(self->pairs[i].key, key, 32) == 0)
            return &self->pairs[i];
    if (self->npairs == self->cap) {
        size_t n = self->cap == 0 ? 8 : 2 * self->cap;
        pair_t *a = malloc(n * sizeof *a);
        if (a == NULL)
            return NULL;
        if (self->npairs > 0) {
            memcpy(a, self->pairs, self->npairs * sizeof *a);
            sodium_memzero(self->pairs, self->cap * sizeof *self->pairs);
        }
        free(self->pairs);
        self->pairs = a;
        self->cap = n;
    }
    pair_t *p = &self->pairs[self->npairs];
    memset(p, 0, sizeof *p);
    if (crypto_box_beforenm(p->shared, key, self->sk) != 0)
        return NULL;
    memcpy(p->key, key, 32);
    salt(self, self->pk, key, p->salt_out);
    salt(self, key, self->pk, p->salt_in);
    self->npairs++;
    return p;
}

static void nonce(uint64_t counter, const uint8_t tail[16], uint8_t out[24])
{
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)(counter >> (8 * i));
    memcpy(out + 8, tail, 16);
}

int cl_seal_box(cl_seal_t *self, const uint8_t dst[32], const uint8_t *plain, size_t len,
                uint64_t *counter, uint8_t **box, size_t *boxlen)
{
    if (len > SIZE_MAX - CL_SEAL_OVERHEAD || len > crypto_box_MESSAGEBYTES_MAX)
        return CL_SEAL_ESIZE;
    pair_t *p = pair_of(self, dst);
    if (p == NULL)
        return CL_SEAL_ENOMEM;
    if (p->next_out == 0) {
        /* Above anything an earlier process of this identity sent. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        p->next_out = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + 1;
    }
    uint8_t *b = malloc(len + CL_SEAL_OVERHEAD);
    if (b == NULL)
        return CL_SEAL_ENOMEM;
    uint8_t n[24];
    nonce(p->next_out, p->salt_out, n);
    crypto_box_easy_afternm(b, plain, len, n, p->shared);
    *counter = p->next_out++;
    *box = b;
    *boxlen = len + CL_SEAL_OVERHEAD;
    return 0;
}

/* Was counter c opened already, or is it below the window? */
static bool seen(const pair_t *p, uint64_t c)
{
    if (c == 0)
        return true; /* never sent */
    if (p->top_in == 0 || c > p->top_in)
        return false;
    uint64_t d = p->top_in - c;
    return d >= CL_SEAL_WINDOW || ((p->window >> d) & 1u) != 0;
}

static void record(pair_t *p, uint64_t c)
{
    if (p->top_in == 0 || c > p->top_in) {
        uint64_t d = p->top_in == 0 ? CL_SEAL_WINDOW : c - p->top_in;
        p->window = d >= CL_SEAL_WINDOW ? 0 : p->window << d;
        p->window |= 1u;
        p->top_in = c;
    } else {
        p->window |= (uint64_t)1 << (p->top_in - c);
    }
}

int cl_seal_open(cl_seal_t *self, const uint8_t src[32], uint64_t counter, const uint8_t *box,
                 size_t boxlen, uint8_t **plain, size_t *len)
{
    if (boxlen < CL_SEAL_OVERHEAD)
        return CL_SEAL_ESIZE;
    pair_t *p = pair_of(self, src);
    if (p == NULL)
        return CL_SEAL_ENOMEM;
    if (seen(p, counter))
        return CL_SEAL_EREPLAY;
    size_t n = boxlen - CL_SEAL_OVERHEAD;
    uint8_t *m = malloc(n > 0 ? n : 1);
    if (m == NULL)
        return CL_SEAL_ENOMEM;
    uint8_t nn[24];
    nonce(counter, p->salt_in, nn);
    if (crypto_box_open_easy_afternm(m, box, boxlen, nn, p->shared) != 0) {
        free(m);
        return CL_SEAL_EFORGED;
    }
    record(p, counter);
    *plain = m;
    *len = n;
    return 0;
}

const char *cl_seal_strerror(int err)
{
    switch (err) {
    case 0:
        return "ok";
    case CL_SEAL_EFORGED:
        return "its seal does not open (altered, or not sealed by its sender for this peer)";
    case CL_SEAL_EREPLAY:
        return "its counter was received already or is older than the window (a replay)";
    case CL_SEAL_ENOMEM:
        return "out of memory";
    case CL_SEAL_ESIZE:
        return "its size is out of range";
    default:
        return "unknown error";
    }
}
