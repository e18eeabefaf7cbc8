/*  el_hash.h - the hash of state sync (docs/wire.md: BLAKE2b-256 over
    len (u64 LE) || bytes), written here apart from the library's
    cl_elmsg_hash, so that the selftests of the donor and of the sync
    check the code under test against the wire's definition, not against
    itself. */
#ifndef EL_HASH_H_INCLUDED
#define EL_HASH_H_INCLUDED

#include <sodium.h>
#include <stddef.h>
#include <stdint.h>

static inline void el_hash(const void *data, size_t len, uint8_t out[32])
{
    crypto_generichash_state st;
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)((uint64_t)len >> (8 * i));
    crypto_generichash_init(&st, NULL, 0, 32);
    crypto_generichash_update(&st, le, sizeof le);
    if (len > 0)
        crypto_generichash_update(&st, data, len);
    crypto_generichash_final(&st, out, 32);
}

#endif
