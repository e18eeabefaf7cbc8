/*  cl_engine_elastic_adm.c - what every member of the elastic layer
    remembers of an admission and does with it (docs/elastic.md §3 and
    §8): the generation rule and entrants of each ADMIT
    (eng_elastic_remember), the ADMIT handed on by a coordinator that took
    over from an admitter that died (eng_elastic_hand_on), an admission
    voided when its admitter left before the group got its view
    (eng_elastic_void_lost), and the check that this peer did not complete
    an admission's sequence under an older generation
    (eng_elastic_check_admissions).  Part of the layer's logic on its own
    state (struct eng_elastic, cl_engine_elastic_int.h), as
    cl_engine_elastic.c, whose view handler calls it.
*/
#include "engine/cl_engine_elastic_int.h"

#include "util/cl_log.h"

#include <stdlib.h>
#include <string.h>

void eng_elastic_check_admissions(struct eng_elastic *el)
{
    cl_peer_t *me = el != NULL ? cl_member_self(el->ctx.mb) : NULL;
    if (el == NULL || el->ctx.state(el->ctx.arg) != ENG_MEMBER || me == NULL || !me->in_group ||
        el->st.evicted || el->st.phase != EL_IN)
        return;
    for (int i = 0; i < EL_BARRIERS; i++) {
        el_barrier_t *b = &el->barriers[i];
        if (b->gen == 0 || b->void_until != 0 || b->reported || el->done_seq <= b->s)
            continue;
        uint64_t seq = el->done_ring[b->s % EL_DONE_RING].seq;
        uint64_t gen = el->done_ring[b->s % EL_DONE_RING].gen;
        if (gen == 0 || seq != b->s || gen >= b->gen)
            continue;
        b->reported = true;
        cl_warn("collective #%llu, from which peers are admitted (generation %llu), already "
                "completed here under generation %llu: this peer's group ran ahead of the "
                "admitter; it asks to be taken out of the group and resynced",
                (unsigned long long)b->s, (unsigned long long)b->gen, (unsigned long long)gen);
        el->ctx.self_out(el->ctx.arg);
        return;
    }
}



void eng_elastic_remember(struct eng_elastic *el, const cl_elmsg_t *m, const uint8_t *admitter)
{
    const el_barrier_t *have = NULL;
    for (int i = 0; i < EL_BARRIERS; i++)
        if (el->barriers[i].gen == m->gen && el->barriers[i].s == m->s)
            have = &el->barriers[i];
    if (have != NULL && have->void_until != 0)
        return; /* a lost admission handed on late: it stays lost */
    if (have == NULL) {
        el_barrier_t *b = &el->barriers[el->next_barrier];
        free(b->admit);
        *b =
            (el_barrier_t){.gen = m->gen, .s = m->s, .prev_gen = cl_member_group_epoch(el->ctx.mb)};
        if (cl_elmsg_encode(m, &b->admit, &b->admit_len) != COLLAB_OK) {
            b->admit = NULL; /* then it cannot be handed on */
            b->admit_len = 0;
        }
        if (admitter != NULL)
            memcpy(b->admitter, admitter, 32);
        el->next_barrier = (el->next_barrier + 1) % EL_BARRIERS;
    }
    for (uint32_t j = 0; j < m->njoiners; j++) {
        const cl_el_joiner_t *x = &m->joiners[j];
        el_entrant_t *slot = NULL;
        for (int i = 0; i < EL_ENTRANTS && slot == NULL; i++)
            if (el->entrants[i].rank == x->rank)
                slot = &el->entrants[i];
        if (slot == NULL) {
            slot = &el->entrants[el->next_entrant];
            el->next_entrant = (el->next_entrant + 1) % EL_ENTRANTS;
        }
        memcpy(slot->key, x->key, 32);
        slot->rank = x->rank;
        slot->from = m->s;
        slot->w0_end = m->w0_end;
        slot->readmit = (x->flags & CL_EL_JOINER_READMIT) != 0;
        slot->gen = m->gen;
    }
}

/* Are the joiners of the admission of generation gen in the group in
   this peer's view (it installed the admitting view, or a later one that
   keeps them)?  False when a joiner is out of the group: then this
   peer's views void the admission (eng_elastic_view_changed). */
static bool joiners_in_group(const struct eng_elastic *el, uint64_t gen)
{
    bool any = false;
    for (int k = 0; k < EL_ENTRANTS; k++) {
        const el_entrant_t *x = &el->entrants[k];
        if (x->rank < 0 || x->gen != gen)
            continue;
        const cl_peer_t *p = cl_member_find(el->ctx.mb, x->key);
        if (p == NULL || p->state == CL_PEER_GONE || p->rank != x->rank || !p->in_group)
            return false;
        any = true;
    }
    return any;
}

/* An admitter may die after its ADMIT reached only some members: those
   run the admission's sequence s under its generation, the others under
   the one before, and neither side can complete s (each waits for the
   other; e2e.kill_admitter).  The coordinator that takes over, if it got
   that ADMIT and also the view that puts its joiners into the group, and
   has not completed s, hands the ADMIT on to every member: those that
   have it already ignore it, the others adopt the admission (and serve
   the joiners' FETCHes).  Without that view, its own views leave the
   joiners out and the admission is lost (eng_elastic_view_changed voids it
   first); it is not handed on.  A member that sees this coordinator's
   ADMIT before it sees the admitter fail keeps it until then
   (eng_auth_successor_check).  Once per admission. */
void eng_elastic_hand_on(struct eng_elastic *el)
{
    const uint8_t *self = el->ctx.self_key;
    const cl_peer_t *adm = cl_member_admitter(el->ctx.mb);
    if (el->ctx.state(el->ctx.arg) != ENG_MEMBER || adm == NULL || memcmp(adm->key, self, 32) != 0)
        return;
    for (int i = 0; i < EL_BARRIERS; i++) {
        el_barrier_t *b = &el->barriers[i];
        if (b->gen == 0 || b->admit == NULL || b->handed_on || b->void_until != 0 ||
            el->done_seq > b->s || memcmp(b->admitter, self, 32) == 0)
            continue;
        const cl_peer_t *a = cl_member_find(el->ctx.mb, b->admitter);
        if (a != NULL && a->rank >= 0 && a->state == CL_PEER_ALIVE)
            continue; /* its admitter lives: it sent the ADMIT to everyone */
        if (!joiners_in_group(el, b->gen))
            continue; /* this peer never got the admitting view: the admission is lost */
        b->handed_on = true;
        cl_elmsg_t m;
        if (cl_elmsg_decode(CL_EL_ADMIT, b->admit, b->admit_len, &m) != COLLAB_OK)
            continue;
        size_t n;
        cl_peer_t *const *list = cl_member_list(el->ctx.mb, &n);
        int sent = 0;
        for (size_t k = 0; k < n; k++) {
            const cl_peer_t *q = list[k];
            if (memcmp(q->key, self, 32) == 0 || q->state == CL_PEER_GONE || q->rank < 0 ||
                memcmp(q->key, b->admitter, 32) == 0)
                continue;
            if (eng_elastic_send(el, q->key, &m) == COLLAB_OK)
                sent++;
        }
        cl_info("the admitter of the admission at collective #%llu (generation %llu) failed "
                "during it; this peer, which admits now, handed its ADMIT on to %d member%s",
                (unsigned long long)b->s, (unsigned long long)b->gen, sent, sent == 1 ? "" : "s");
        cl_elmsg_clear(&m);
    }
}

bool eng_elastic_adoptable(const struct eng_elastic *el, const uint8_t from[32], uint64_t gen)
{
    const uint8_t *self = el->ctx.self_key;
    const cl_peer_t *adm = cl_member_admitter(el->ctx.mb);
    if (adm == NULL || memcmp(adm->key, from, 32) != 0 || memcmp(from, self, 32) == 0)
        return false;
    bool held = false;
    for (int i = 0; i < EL_BARRIERS && !held; i++) {
        const el_barrier_t *b = &el->barriers[i];
        held = b->gen == gen && b->void_until == 0 && memcmp(b->admitter, from, 32) == 0;
    }
    if (!held)
        return false;
    for (int k = 0; k < EL_ENTRANTS; k++) {
        const el_entrant_t *x = &el->entrants[k];
        if (x->rank >= 0 && x->gen == gen && memcmp(x->key, self, 32) == 0)
            return eng_admittee_pending(el->admittee) && eng_admittee_gen(el->admittee) == gen;
    }
    return true;
}

static bool is_gone(const struct eng_elastic *el, const uint8_t key[32])
{
    const cl_peer_t *p = cl_member_find(el->ctx.mb, key);
    return p == NULL || p->rank < 0 || p->state == CL_PEER_GONE;
}

/* An admission is lost when its admitter left the view before the whole
   group got the view that admits the joiners: the coordinator that took
   over publishes views without them in the group (a live joiner outside
   the group), while members that got the admitting view run s under its
   generation and those that did not, under the one before.  Nobody can
   have completed s under the admitting generation (the new coordinator
   never ran it), but under the one before, with the admitter counted as
   failed, it can.  So the admitting generations are barred from s on,
   the one before is allowed again, the joiners' first sequences are
   forgotten (a new admitter admits them at a later s), and whoever is
   inside s under another generation restarts it under the one before;
   the messages of that generation it refused meanwhile were kept
   (cl_engine_route.c), since a member that completed s under it will not
   send them again.  The engine's rule that the oldest generation wins
   settles the rest (docs/elastic.md §8). */
void eng_elastic_void_lost(struct eng_elastic *el)
{
    struct cl_engine *arg = el->ctx.arg;
    uint64_t epoch = cl_member_epoch(el->ctx.mb), cur = cl_member_group_epoch(el->ctx.mb);
    for (int i = 0; i < EL_BARRIERS; i++) {
        el_barrier_t *b = &el->barriers[i];
        if (b->gen == 0 || b->void_until != 0 || epoch <= b->gen || el->done_seq > b->s ||
            !is_gone(el, b->admitter))
            continue;
        bool lost = false;
        for (int k = 0; k < EL_ENTRANTS && !lost; k++) {
            const el_entrant_t *x = &el->entrants[k];
            if (x->rank < 0 || x->gen != b->gen)
                continue;
            const cl_peer_t *p = cl_member_find(el->ctx.mb, x->key);
            lost = p != NULL && p->rank == x->rank && p->state != CL_PEER_GONE && !p->in_group;
        }
        if (!lost)
            continue;
        b->void_until = cur > b->gen ? cur : b->gen + 1;
        for (int k = 0; k < EL_ENTRANTS; k++)
            if (el->entrants[k].gen == b->gen)
                el->entrants[k].rank = -1;
        cl_info("the admission at collective #%llu (generation %llu) did not take effect: its "
                "admitter left before the group got its view",
                (unsigned long long)b->s, (unsigned long long)b->gen);
        struct stream *w = el->ctx.world(arg);
        cl_peer_t *me = cl_member_self(el->ctx.mb);
        uint64_t gen = b->prev_gen != 0 && el->ctx.in_gen(arg, b->prev_gen) ? b->prev_gen : cur;
        uint64_t aseq, agen;
        if (w != NULL && el->ctx.running(arg, w, &aseq, &agen) && agen != 0 && aseq >= b->s &&
            me != NULL && me->in_group && agen != gen && el->ctx.in_gen(arg, gen) &&
            !el->st.evicted)
            el->ctx.restart(arg, w, gen);
    }
}
