/*  cl_coll_sign.c - signed proofs of what a member produced (docs/security.md
    §6, relay proofs), shared by the algorithms of a collective that signs.

    The producer of a value signs (with its identity key, env->sign) the
    domain of the kind of value, comm id, seq, part, chunk, its own comm
    rank, a context and the BLAKE2b-256 digest of the value; every member
    that takes the value, from its producer or relayed by anyone, checks
    the signature against the producer's identity as the collective
    started (env->verify).  Three domains keep the kinds apart:

      "mpicollab chunk v1"  a butterfly RESULT chunk (ctx: contributor bitmap)
      "mpicollab piece v1"  an exchange piece, the input of its member
                            (ctx: the piece's announced length, u32)
      "mpicollab bcast v1"  a broadcast chunk of the root or of a stand-in
                            (ctx: the broadcast's length, u64)

    A member that sent a value its producer did not sign is hostile (an
    honest member checks every value before it holds, forwards or relays
    it, and the links are authenticated): cl_coll_disown names it in the
    log and counts it failed in this collective at this member, so that
    the repair of cl_relay.c fetches the value from another holder.
*/
#include "cl_coll_impl.h"

#include "util/cl_log.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

static const char *const s_domains[] = {"mpicollab chunk v1", "mpicollab piece v1",
                                        "mpicollab bcast v1"};

/* What a signed proof of (part, chunk) from member producer signs: the
   header of cl_coll_impl.h, ctx and the digest, in msg (malloc'd). */
static uint8_t *s_sig_msg(const cl_coll_t *self, cl_proof_kind_t kind, uint32_t part,
                          uint32_t chunk, int producer, const uint8_t *ctx, size_t ctxlen,
                          const void *val, size_t bytes, size_t *len)
{
    const char *domain = s_domains[kind];
    size_t d = strlen(domain), h = d + 28;
    uint8_t *m = malloc(h + ctxlen + 32);
    if (m == NULL)
        return NULL;
    memcpy(m, domain, d);
    uint64_t comm = self->a.comm_id, seq = self->a.seq;
    uint32_t rank = (uint32_t)self->members[producer];
    for (int k = 0; k < 8; k++) {
        m[d + k] = (uint8_t)(comm >> (8 * k));
        m[d + 8 + k] = (uint8_t)(seq >> (8 * k));
    }
    for (int k = 0; k < 4; k++) {
        m[d + 16 + k] = (uint8_t)(part >> (8 * k));
        m[d + 20 + k] = (uint8_t)(chunk >> (8 * k));
        m[d + 24 + k] = (uint8_t)(rank >> (8 * k));
    }
    if (ctxlen > 0)
        memcpy(m + h, ctx, ctxlen);
    crypto_generichash(m + h + ctxlen, 32, val, bytes, NULL, 0);
    *len = h + ctxlen + 32;
    return m;
}

int cl_coll_sig_make(cl_coll_t *self, cl_proof_kind_t kind, uint32_t part, uint32_t chunk,
                     const uint8_t *ctx, size_t ctxlen, const void *val, size_t bytes, uint8_t *out)
{
    if (self->env.sign == NULL)
        return COLLAB_ERR_INTERNAL;
    size_t len;
    uint8_t *m = s_sig_msg(self, kind, part, chunk, self->me, ctx, ctxlen, val, bytes, &len);
    if (m == NULL)
        return COLLAB_ERR_NO_MEM;
    int rc = self->env.sign(self->env.eng, m, len, out);
    free(m);
    return rc;
}

bool cl_coll_sig_valid(cl_coll_t *self, cl_proof_kind_t kind, uint32_t part, uint32_t chunk,
                       int producer, const uint8_t *ctx, size_t ctxlen, const void *val,
                       size_t bytes, const uint8_t *proof)
{
    if (self->env.verify == NULL || producer < 0 || producer >= self->n || producer == self->me)
        return false;
    size_t len;
    uint8_t *m = s_sig_msg(self, kind, part, chunk, producer, ctx, ctxlen, val, bytes, &len);
    if (m == NULL)
        return false;
    bool ok = self->env.verify(self->env.eng, self->members[producer], m, len, proof);
    free(m);
    return ok;
}

int cl_coll_proof_make(cl_coll_t *self, uint32_t part, uint32_t chunk, const uint8_t *ctx,
                       size_t ctxlen, const void *val, size_t bytes, uint8_t *out)
{
    if (!self->sig)
        return cl_coll_tags_make(self, part, chunk, ctx, ctxlen, val, bytes, out);
    return cl_coll_sig_make(self, CL_PROOF_CHUNK, part, chunk, ctx, ctxlen, val, bytes, out);
}

bool cl_coll_sig_check(cl_coll_t *self, uint32_t part, uint32_t chunk, int producer,
                       const uint8_t *ctx, size_t ctxlen, const void *val, size_t bytes,
                       const uint8_t *proof)
{
    return cl_coll_sig_valid(self, CL_PROOF_CHUNK, part, chunk, producer, ctx, ctxlen, val, bytes,
                             proof);
}

void cl_coll_disown(cl_coll_t *self, int from, const char *what, int part, size_t chunk,
                    int producer)
{
    if (from < 0 || from >= self->n || from == self->me || !cl_coll_alive(self, from))
        return;
    if (self->disowned == NULL && (self->disowned = calloc(self->nb, 1)) == NULL)
        return; /* out of memory: dropped only */
    cl_bit_set(self->disowned, (size_t)from);
    self->forged++;
    cl_warn("%s #%llu on comm %016llx: rank %d sent %s of (part %d, chunk %zu) that rank %d did "
            "not sign (forged); dropped, and rank %d counts as failed in this collective here",
            self->algo != NULL ? self->algo->name : "collective", (unsigned long long)self->a.seq,
            (unsigned long long)self->a.comm_id, self->members[from], what, part, chunk,
            producer >= 0 && producer < self->n ? self->members[producer] : -1,
            self->members[from]);
    (void)cl_coll_on_fail(self, self->members[from]);
}
