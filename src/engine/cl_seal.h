/*  cl_seal.h - end-to-end sealing of relayed messages (docs/wire.md §11).

    A client-mode member reaches another one through a relaying monitor
    (docs/monitor.md §8).  The relay must neither read, forge nor replay
    what it forwards, so every relayed message is a libsodium crypto_box
    (X25519, XSalsa20-Poly1305) from the sender's long-term Curve25519
    secret key (the CurveZMQ identity) to the destination's public key.
    The 24-byte nonce is the sender's 64-bit counter for that ordered pair
    (LE) followed by the first 16 bytes of BLAKE2b-256(run id || sender
    key || destination key): each direction of a pair has a nonce space of
    its own, and another run's boxes never open.  A sender's counters start
    at its wall clock in nanoseconds, so a restarted process with the same
    identity continues above the counters it used before.  The receiver
    keeps, per sender, the highest counter opened and a 64-counter window
    below it; anything at or below the window, or seen in it, is a replay.
    A counter is recorded only after its box opened, so forgeries cannot
    move the window.  Pure class: no sockets; not thread-safe.
*/
#ifndef CL_SEAL_H_INCLUDED
#define CL_SEAL_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

/* Results of cl_seal_open (0 = opened). */
enum {
    CL_SEAL_EFORGED = -1, /* the box does not open: altered, or not from that key */
    CL_SEAL_EREPLAY = -2, /* its counter was opened already or is too old */
    CL_SEAL_ENOMEM = -3,  /* allocation failed */
    CL_SEAL_ESIZE = -4,   /* shorter than a MAC, or too large */
};

#define CL_SEAL_OVERHEAD 16 /* bytes a box adds to its plaintext */
#define CL_SEAL_WINDOW 64   /* counters below the highest still accepted once */

typedef struct cl_seal cl_seal_t;

/* A sealer for this peer's keys (copied; the secret is wiped at destroy)
   and run id.  Returns NULL when out of memory.  Caller owns. */
cl_seal_t *cl_seal_new(const uint8_t pk[32], const uint8_t sk[32], const char *run_id);

/* Wipes every key and frees; nulls *self_p; accepts NULL. */
void cl_seal_destroy(cl_seal_t **self_p);

/* Seals len bytes for dst: *box (malloc'ed, caller owns) receives len +
   CL_SEAL_OVERHEAD bytes and *counter the nonce counter to send with it.
   Returns 0, CL_SEAL_ENOMEM or CL_SEAL_ESIZE. */
int cl_seal_box(cl_seal_t *self, const uint8_t dst[32], const uint8_t *plain, size_t len,
                uint64_t *counter, uint8_t **box, size_t *boxlen);

/* Opens a box that src sealed for this peer under counter: *plain
   (malloc'ed, caller owns, at least one byte allocated) receives the
   message.  Returns 0 or a CL_SEAL_E* code; nothing is recorded unless
   it returns 0. */
int cl_seal_open(cl_seal_t *self, const uint8_t src[32], uint64_t counter, const uint8_t *box,
                 size_t boxlen, uint8_t **plain, size_t *len);

/* Short English text for a CL_SEAL_E* code. */
const char *cl_seal_strerror(int err);

#endif
