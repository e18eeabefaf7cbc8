/*  cl_member_test.c - selftest of membership records and views.

    Covers rank assignment (preferred, previous, lowest free, standby),
    admission and removal deltas, a follower installing the coordinator's
    views through the wire codec, coordinator succession, silence
    detection, group formation and purging of old records, bandwidth
    figures in the view, an admission the coordinator adopts after its
    own views went past it.
*/
#include "engine/cl_member.h"

#include "mpi_collab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "selftest.h"

static void key_of(int i, uint8_t key[32])
{
    memset(key, 0, 32);
    key[0] = (uint8_t)(0x10 + i);
    key[7] = (uint8_t)(0xa0 + i);
}

/* Sends the coordinator's view through the codec to a follower. */
static int ship_view(const cl_member_t *from, cl_member_t *to, double now, cl_member_delta_t *d)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.version = CL_WIRE_VERSION;
    m.hdr.type = CL_MSG_VIEW;
    CHECK(cl_member_view(from, &m.u.view) == 0);
    uint8_t *body;
    size_t blen;
    CHECK(cl_wire_encode_body(&m, &body, &blen) == 0);
    free(m.u.view.members);
    m.hdr.length = blen;
    uint8_t hdr[CL_WIRE_HDR_SIZE];
    cl_wire_hdr_encode(&m.hdr, hdr);
    cl_wire_msg_t in;
    CHECK(cl_wire_decode(hdr, sizeof hdr, body, blen, &in) == 0);
    int rc = cl_member_apply_view(to, &in.u.view, now, d);
    cl_wire_msg_clear(&in);
    free(body);
    return rc;
}

static void test_ranks_and_views(void)
{
    uint8_t k[8][32];
    for (int i = 0; i < 8; i++)
        key_of(i, k[i]);
    cl_member_t *coord = cl_member_new(k[0]);
    CHECK(coord != NULL);
    cl_settings_t s = {4, false, 0, 3, 0, 1, 16, false};
    CHECK(cl_member_found(coord, 0, "/ip4/127.0.0.1/tcp/1/p2p/a", false, 1.0, &s) == 0);
    CHECK(cl_member_epoch(coord) == 1);
    CHECK(cl_member_self(coord) != NULL && cl_member_self(coord)->rank == 0);
    CHECK(cl_member_coordinator(coord) == cl_member_self(coord));

    /* Preferred rank when free, else lowest free. */
    CHECK(cl_member_pick_rank(coord, k[1], 2, false) == 2);
    CHECK(cl_member_pick_rank(coord, k[1], 0, false) == 1);
    CHECK(cl_member_pick_rank(coord, k[1], 99, false) == 1);
    cl_member_delta_t d;
    CHECK(cl_member_admit(coord, k[1], 2, "/ip4/127.0.0.1/tcp/2/p2p/b", false, 1.0, 5.0, &d) == 0);
    CHECK(d.nadded == 1 && d.added[0]->rank == 2 && d.nremoved == 0);
    cl_member_delta_clear(&d);
    CHECK(cl_member_epoch(coord) == 2);
    /* Rank held by someone else. */
    CHECK(cl_member_admit(coord, k[2], 2, "", true, 1.0, 5.0, &d) == COLLAB_ERR_RANK);
    CHECK(cl_member_pick_rank(coord, k[2], 2, false) == 1);
    CHECK(cl_member_admit(coord, k[2], 1, "", true, 3.0, 5.0, &d) == 0);
    cl_member_delta_clear(&d);
    /* A member asking again keeps its rank. */
    CHECK(cl_member_pick_rank(coord, k[2], 3, false) == 1);

    /* A follower installs the view. */
    cl_member_t *fol = cl_member_new(k[2]);
    CHECK(ship_view(coord, fol, 6.0, &d) == 1);
    CHECK(d.self_added && d.nadded == 3 && !d.self_removed);
    cl_member_delta_clear(&d);
    CHECK(cl_member_self(fol)->rank == 1 && cl_member_self(fol)->client);
    CHECK(cl_member_self(fol)->weight == 3.0);
    CHECK(cl_member_at_rank(fol, 2) != NULL && cl_member_at_rank(fol, 3) == NULL);
    CHECK(cl_member_settings(fol)->world_size == 4);
    CHECK(cl_member_settings(fol)->target_group == 3);
    /* The same view again is stale. */
    CHECK(ship_view(coord, fol, 6.0, &d) == 0);

    /* Fill the last rank; then every rank is taken: standby. */
    CHECK(cl_member_pick_rank(coord, k[3], -1, false) == 3);
    CHECK(cl_member_admit(coord, k[3], 3, "/ip4/127.0.0.1/tcp/4/p2p/d", false, 1.0, 7.0, &d) == 0);
    cl_member_delta_clear(&d);
    CHECK(cl_member_pick_rank(coord, k[4], -1, false) == -1);
    CHECK(cl_member_pick_rank(coord, k[4], 1, false) == -1);

    /* Group formation changes the group's generation; admissions before
       it do not (nobody is in the group yet). */
    CHECK(cl_member_group_epoch(coord) == 1);
    CHECK(!cl_member_group_closed(coord));
    CHECK(cl_member_close_group(coord, &d) == 1 && d.group_closed_now);
    cl_member_delta_clear(&d);
    CHECK(cl_member_close_group(coord, &d) == 0);
    uint64_t gen = cl_member_group_epoch(coord);
    CHECK(gen == cl_member_epoch(coord) && gen > 1);
    cl_peer_t *grp[8];
    CHECK(cl_member_group(coord, grp, 8) == 4);
    CHECK(ship_view(coord, fol, 8.0, &d) == 1 && d.group_closed_now && d.nadded == 1);
    cl_member_delta_clear(&d);
    CHECK(cl_member_group_epoch(fol) == gen);

    /* Rank 3 leaves; its rank is remembered for its key. */
    uint8_t gone[1][32];
    memcpy(gone[0], k[3], 32);
    CHECK(cl_member_remove(coord, (const uint8_t(*)[32])gone, 1, 9.0, &d) == 1);
    CHECK(d.nremoved == 1 && d.removed[0]->prev_rank == 3 && d.removed[0]->rank == -1);
    cl_member_delta_clear(&d);
    CHECK(cl_member_remove(coord, (const uint8_t(*)[32])gone, 1, 9.0, &d) == 0);
    CHECK(ship_view(coord, fol, 9.5, &d) == 1 && d.nremoved == 1 && d.nadded == 0);
    cl_member_delta_clear(&d);
    CHECK(cl_member_find(fol, k[3])->state == CL_PEER_GONE);
    /* Rank 3 is free again; a newcomer preferring nothing gets it... */
    CHECK(cl_member_pick_rank(coord, k[5], -1, false) == 3);
    /* ...and the old owner gets its old rank back. */
    CHECK(cl_member_pick_rank(coord, k[3], -1, false) == 3);
    /* Had rank 3 gone silent (stopped: its program may come back holding
       rank 3), a newcomer would get rank 3 only as the last free one, and
       the old owner rejoining asks for rank 3 or nothing. */
    cl_member_find(coord, k[3])->suspect_reason = CL_SUSPECT_SILENT;
    CHECK(cl_member_pick_rank(coord, k[5], -1, false) == 3); /* the only free rank */
    CHECK(cl_member_pick_rank(coord, k[3], 3, true) == 3);
    CHECK(cl_member_pick_rank(coord, k[3], 2, true) == -1); /* held by rank 2 */
    cl_member_find(coord, k[3])->suspect_reason = 0;
    CHECK(cl_member_group_epoch(coord) > gen); /* a group member left */
    gen = cl_member_group_epoch(coord);
    /* A joiner after the group formed stays out of the group: the group's
       generation does not change. */
    CHECK(cl_member_admit(coord, k[3], 3, "/ip4/127.0.0.1/tcp/4/p2p/d", false, 1.0, 10, &d) == 0);
    cl_member_delta_clear(&d);
    CHECK(cl_member_group_epoch(coord) == gen && cl_member_epoch(coord) > gen);
    CHECK(cl_member_set_weight(coord, k[3], 5.0) == 1 && cl_member_group_epoch(coord) == gen);
    CHECK(cl_member_set_weight(coord, k[1], 5.0) == 1 && cl_member_group_epoch(coord) > gen);
    /* A measured bandwidth figure (UPDATE, wire version 11): like a
       weight, a new view, and a new generation for a member of the
       group; the same figure, 0, or a change within `every` seconds of
       the last one change nothing; a monitor has none. */
    gen = cl_member_group_epoch(coord);
    uint64_t ep = cl_member_epoch(coord);
    CHECK(cl_member_set_figure(coord, k[1], 0, 100.0, 5.0) == 0);
    CHECK(cl_member_set_figure(coord, k[1], 25000, 100.0, 5.0) == 1);
    CHECK(cl_member_find(coord, k[1])->bw_figure == 25000);
    CHECK(cl_member_epoch(coord) == ep + 1 && cl_member_group_epoch(coord) == ep + 1);
    CHECK(cl_member_set_figure(coord, k[1], 25000, 120.0, 5.0) == 0);
    CHECK(cl_member_set_figure(coord, k[1], 90000, 104.9, 5.0) == 0);
    CHECK(cl_member_find(coord, k[1])->bw_figure == 25000 && cl_member_epoch(coord) == ep + 1);
    CHECK(cl_member_set_figure(coord, k[1], 90000, 105.0, 5.0) == 1);
    CHECK(cl_member_find(coord, k[1])->bw_figure == 90000);
    gen = cl_member_group_epoch(coord);
    /* rank 3 is out of the group: no new generation */
    CHECK(cl_member_set_figure(coord, k[3], 30000, 106.0, 5.0) == 1 &&
          cl_member_group_epoch(coord) == gen);
    CHECK(cl_member_set_figure(coord, k[3], 40000, 106.0, 0) == 1); /* no limit asked */
    CHECK(!cl_member_at_rank(coord, 3)->in_group);
    CHECK(cl_member_group(coord, grp, 8) == 3);

    /* Ungrouping a straggler (the follower itself). */
    memcpy(gone[0], k[2], 32);
    CHECK(cl_member_ungroup(coord, (const uint8_t(*)[32])gone, 1, &d) == 1);
    CHECK(d.nungrouped == 1 && d.nremoved == 0);
    cl_member_delta_clear(&d);
    CHECK(ship_view(coord, fol, 11, &d) == 1 && d.nungrouped == 1 && d.nadded == 1);
    cl_member_delta_clear(&d);
    CHECK(!cl_member_self(fol)->in_group);

    /* Coordinator succession: the follower suspects rank 0 and computes
       the next lowest live public rank: rank 2 (the follower itself, rank
       1, is a client: nobody can connect to it). */
    CHECK(cl_member_coordinator(fol)->rank == 0);
    CHECK(cl_member_successor(fol) == cl_member_at_rank(fol, 2)); /* the one it names next */
    cl_member_find(fol, k[0])->state = CL_PEER_SUSPECT;
    CHECK(cl_member_coordinator(fol) == cl_member_at_rank(fol, 2));
    CHECK(cl_member_successor(fol) == cl_member_at_rank(fol, 3));

    /* Silence: members not heard from within the timeout. */
    cl_peer_t *sil[8];
    cl_member_heard(fol, k[1], 20.0);
    size_t ns = cl_member_silent(fol, 21.0, 5.0, sil, 8);
    CHECK(ns == 1 && sil[0]->rank == 3); /* rank 0 is suspect already, rank 2 heard at 20 */
    ns = cl_member_silent(fol, 30.0, 5.0, sil, 8);
    CHECK(ns == 2);

    /* The follower is removed: it learns it. */
    memcpy(gone[0], k[2], 32);
    CHECK(cl_member_remove(coord, (const uint8_t(*)[32])gone, 1, 12, &d) == 1);
    cl_member_delta_clear(&d);
    CHECK(ship_view(coord, fol, 12, &d) == 1 && d.self_removed);
    cl_member_delta_clear(&d);

    /* Purge forgets old departures, keeps members and self. */
    cl_member_purge(coord, 1000.0, 100.0);
    CHECK(cl_member_find(coord, k[2]) == NULL);
    CHECK(cl_member_find(coord, k[0]) != NULL && cl_member_find(coord, k[1]) != NULL);
    CHECK(cl_member_pick_rank(coord, k[2], -1, false) == 1);

    cl_member_destroy(&coord);
    cl_member_destroy(&fol);
    CHECK(coord == NULL);
    cl_member_destroy(&fol);
}

/* A coordinator (k[0], rank 0) with ranks 1 and 2 admitted and the
   group closed: the three in it. */
static cl_member_t *three_in_group(uint8_t k[3][32])
{
    for (int i = 0; i < 3; i++)
        key_of(i, k[i]);
    cl_member_t *a = cl_member_new(k[0]);
    cl_settings_t s = {3, false, 0, 3, 0, 1, 16, false};
    CHECK(cl_member_found(a, 0, "/ip4/127.0.0.1/tcp/1/p2p/a", false, 1.0, &s) == 0);
    cl_member_delta_t d;
    for (int i = 1; i < 3; i++) {
        CHECK(cl_member_admit(a, k[i], i, "/ip4/127.0.0.1/tcp/2/p2p/b", false, 1.0, 2.0, &d) == 0);
        cl_member_delta_clear(&d);
    }
    CHECK(cl_member_close_group(a, &d) == 1);
    cl_member_delta_clear(&d);
    return a;
}

/* A coordinator taken out of the group whose members all left puts
   itself back in, alone: never while another member is in the group,
   never twice; the others stay out; the view goes to a follower. */
static void test_regroup_self(void)
{
    uint8_t k[3][32];
    cl_member_t *a = three_in_group(k);
    cl_member_delta_t d;
    /* The coordinator in the group: nothing to do. */
    CHECK(cl_member_regroup_self(a, &d) == 0);
    cl_member_delta_clear(&d);
    /* Ranks 0 and 1 taken out; rank 2 still in: nothing to do. */
    CHECK(cl_member_ungroup(a, (const uint8_t(*)[32])k[0], 2, &d) == 1);
    cl_member_delta_clear(&d);
    CHECK(cl_member_regroup_self(a, &d) == 0);
    cl_member_delta_clear(&d);
    /* Rank 2 leaves: the group is empty, and open. */
    CHECK(cl_member_remove(a, (const uint8_t(*)[32])k[2], 1, 3.0, &d) == 1);
    cl_member_delta_clear(&d);
    CHECK(!cl_member_group_closed(a));
    uint64_t epoch = cl_member_epoch(a);
    CHECK(cl_member_regroup_self(a, &d) == 1);
    cl_member_delta_clear(&d);
    CHECK(cl_member_epoch(a) == epoch + 1 && cl_member_group_epoch(a) == epoch + 1);
    CHECK(cl_member_group_closed(a) && cl_member_self(a)->in_group);
    CHECK(!cl_member_find(a, k[1])->in_group);
    CHECK(cl_member_regroup_self(a, &d) == 0);
    cl_member_delta_clear(&d);
    /* Rank 1 installs it: the group of rank 0 alone, itself outside. */
    cl_member_t *b = cl_member_new(k[1]);
    CHECK(ship_view(a, b, 4.0, &d) == 1);
    cl_member_delta_clear(&d);
    CHECK(cl_member_group_closed(b) && cl_member_find(b, k[0])->in_group &&
          !cl_member_self(b)->in_group);
    cl_member_destroy(&a);
    cl_member_destroy(&b);
}

/* A member taken out of the group as a straggler and re-admitted (a view
   that puts it back in the group) owes nothing from before: the time it
   was first seen late is forgotten by the admitter and by every member
   that installs the view, so that its first collective back is not
   counted late from the start (which took it out again at once, and
   again at each re-admission).  A member that stayed in the group keeps
   its own. */
static void test_readmitted_not_late(void)
{
    uint8_t k[3][32];
    cl_member_t *a = three_in_group(k);
    cl_member_t *b = cl_member_new(k[1]);
    cl_member_delta_t d;
    CHECK(ship_view(a, b, 3.0, &d) == 1);
    cl_member_delta_clear(&d);
    CHECK(cl_member_ungroup(a, (const uint8_t(*)[32])k[2], 1, &d) == 1);
    cl_member_delta_clear(&d);
    CHECK(ship_view(a, b, 4.0, &d) == 1 && d.nungrouped == 1);
    cl_member_delta_clear(&d);
    cl_member_t *both[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        cl_peer_t *p = cl_member_find(both[i], k[2]);
        CHECK(p != NULL && !p->in_group && p->state == CL_PEER_ALIVE);
        p->suspect_since = 4.0;
        p->suspect_reason = CL_SUSPECT_STRAGGLER;
    }
    cl_member_find(a, k[1])->suspect_since = 5.0; /* late in the group's collective now */
    /* The admitter's view: rank 2 back in the group, a new generation. */
    cl_wire_view_t v;
    CHECK(cl_member_view(a, &v) == COLLAB_OK);
    int in = 0;
    for (uint32_t i = 0; i < v.count; i++)
        if (memcmp(v.members[i].key, k[2], 32) == 0) {
            v.members[i].flags |= CL_MEMBER_IN_GROUP;
            in++;
        }
    CHECK(in == 1);
    v.epoch++;
    v.group_epoch = v.epoch;
    CHECK(cl_member_apply_view(a, &v, 6.0, &d) == 1);
    cl_member_delta_clear(&d);
    free(v.members);
    CHECK(ship_view(a, b, 6.0, &d) == 1);
    cl_member_delta_clear(&d);
    for (int i = 0; i < 2; i++) {
        cl_peer_t *p = cl_member_find(both[i], k[2]);
        CHECK(p->in_group && p->suspect_since == 0 && p->suspect_reason == 0);
    }
    CHECK(cl_member_find(a, k[1])->suspect_since == 5.0);
    cl_member_destroy(&a);
    cl_member_destroy(&b);
}

/* The admitter's view v of b's table with key, and key2 unless NULL, put
   into the group (as publish in cl_engine_admitter.c makes it), installed
   by b. */
static void admission_view(cl_member_t *b, const uint8_t key[32], const uint8_t *key2,
                           cl_wire_view_t *v)
{
    CHECK(cl_member_view(b, v) == COLLAB_OK);
    for (uint32_t i = 0; i < v->count; i++)
        if (memcmp(v->members[i].key, key, 32) == 0 ||
            (key2 != NULL && memcmp(v->members[i].key, key2, 32) == 0))
            v->members[i].flags |= CL_MEMBER_IN_GROUP;
    v->epoch++;
    v->group_epoch = v->epoch;
    cl_member_delta_t d;
    CHECK(cl_member_apply_view(b, v, 5.0, &d) == 1);
    cl_member_delta_clear(&d);
}

/* The coordinator (rank 0) is outside the group; it took over, raising
   its epoch, and rank 1, which admits, publishes a view that puts rank 0
   into the group with a lower epoch.  Installing it is refused (old
   news); adopting it gives a view above the coordinator's epoch under
   the admission's generation, with the same group, which the admitter
   installs without a change of group.  Not adopted: a view that is not
   an admission (its generation is not its epoch), one that leaves a
   member of this peer's group out, one that records an entrant with
   another weight, the same admission twice. */
static void test_adopt_admission(void)
{
    uint8_t k[3][32];
    cl_member_t *a = three_in_group(k);
    cl_member_delta_t d;
    CHECK(cl_member_ungroup(a, (const uint8_t(*)[32])k[0], 1, &d) == 1);
    cl_member_delta_clear(&d);
    cl_member_t *b = cl_member_new(k[1]);
    CHECK(ship_view(a, b, 3.0, &d) == 1);
    cl_member_delta_clear(&d);
    uint64_t gen_before = cl_member_group_epoch(a);
    cl_member_raise_epoch(a, cl_member_epoch(a) + 64);
    uint64_t raised = cl_member_epoch(a);
    cl_wire_view_t v;
    admission_view(b, k[0], NULL, &v);
    CHECK(v.epoch < raised && cl_member_group_epoch(b) == v.epoch);
    CHECK(cl_member_apply_view(a, &v, 6.0, &d) == 0); /* old news */
    cl_member_delta_clear(&d);

    v.group_epoch--; /* not an admission's view */
    CHECK(cl_member_adopt_admission(a, &v, 6.0, &d) == 0);
    cl_member_delta_clear(&d);
    v.group_epoch++;
    for (uint32_t i = 0; i < v.count; i++) {
        if (memcmp(v.members[i].key, k[2], 32) == 0) {
            v.members[i].flags &= (uint8_t)~CL_MEMBER_IN_GROUP; /* leaves rank 2 out */
            CHECK(cl_member_adopt_admission(a, &v, 6.0, &d) == 0);
            cl_member_delta_clear(&d);
            v.members[i].flags |= CL_MEMBER_IN_GROUP;
        }
        if (memcmp(v.members[i].key, k[0], 32) == 0) {
            v.members[i].weight = 2.0; /* not the entrant recorded here */
            CHECK(cl_member_adopt_admission(a, &v, 6.0, &d) == 0);
            cl_member_delta_clear(&d);
            v.members[i].weight = 1.0;
        }
    }
    CHECK(cl_member_epoch(a) == raised && cl_member_group_epoch(a) == gen_before);
    CHECK(!cl_member_self(a)->in_group);

    CHECK(cl_member_adopt_admission(a, &v, 6.0, &d) == 1);
    CHECK(d.nungrouped == 0 && d.nadded == 0 && d.nremoved == 0);
    cl_member_delta_clear(&d);
    CHECK(cl_member_epoch(a) == raised + 1 && cl_member_group_epoch(a) == v.epoch);
    cl_peer_t *grp[4];
    CHECK(cl_member_group(a, grp, 4) == 3 && cl_member_self(a)->in_group);
    CHECK(cl_member_adopt_admission(a, &v, 6.0, &d) == 0); /* adopted already */
    cl_member_delta_clear(&d);
    /* The admitter installs the coordinator's next view: same group, same
       generation. */
    CHECK(ship_view(a, b, 7.0, &d) == 1);
    CHECK(d.nungrouped == 0);
    cl_member_delta_clear(&d);
    CHECK(cl_member_epoch(b) == raised + 1 && cl_member_group_epoch(b) == v.epoch);
    CHECK(cl_member_find(b, k[0])->in_group && cl_member_group(b, grp, 4) == 3);
    free(v.members);
    cl_member_destroy(&a);
    cl_member_destroy(&b);

    /* Two entrants, ranks 0 and 2, around a member that stays (rank 1). */
    a = three_in_group(k);
    uint8_t out[2][32];
    memcpy(out[0], k[0], 32);
    memcpy(out[1], k[2], 32);
    CHECK(cl_member_ungroup(a, (const uint8_t(*)[32])out, 2, &d) == 1);
    cl_member_delta_clear(&d);
    b = cl_member_new(k[1]);
    CHECK(ship_view(a, b, 3.0, &d) == 1);
    cl_member_delta_clear(&d);
    cl_member_raise_epoch(a, cl_member_epoch(a) + 64);
    admission_view(b, k[0], k[2], &v);
    CHECK(cl_member_adopt_admission(a, &v, 6.0, &d) == 1);
    cl_member_delta_clear(&d);
    CHECK(cl_member_group(a, grp, 4) == 3 && cl_member_group_epoch(a) == v.epoch);
    CHECK(cl_member_find(a, k[0])->in_group && cl_member_find(a, k[2])->in_group);
    free(v.members);
    cl_member_destroy(&a);
    cl_member_destroy(&b);
}

/* Many peers: the index grows and lookups stay right. */
static void test_many(void)
{
    uint8_t self[32];
    key_of(0, self);
    cl_member_t *m = cl_member_new(self);
    cl_settings_t s = {600, false, 0, 64, 0, 1, 16, false};
    CHECK(cl_member_found(m, 0, "", false, 1, &s) == 0);
    for (int i = 1; i < 500; i++) {
        uint8_t k[32];
        memset(k, 0, 32);
        k[0] = (uint8_t)i;
        k[1] = (uint8_t)(i >> 8);
        k[2] = 0x55;
        int r = cl_member_pick_rank(m, k, -1, false);
        CHECK(r == i);
        cl_member_delta_t d;
        CHECK(cl_member_admit(m, k, r, "", false, 1, 0, &d) == 0);
        cl_member_delta_clear(&d);
    }
    for (int i = 1; i < 500; i++) {
        uint8_t k[32];
        memset(k, 0, 32);
        k[0] = (uint8_t)i;
        k[1] = (uint8_t)(i >> 8);
        k[2] = 0x55;
        cl_peer_t *p = cl_member_find(m, k);
        CHECK(p != NULL && p->rank == i);
        CHECK(cl_member_at_rank(m, i) == p);
    }
    size_t n;
    cl_member_list(m, &n);
    CHECK(n == 500);
    /* Ranks 100..199 leave, 100..149 of them gone silent (their programs
       may come back holding those ranks): a newcomer gets the lowest rank
       that no silent holder may come back to, a silent holder its own. */
    uint8_t gone[100][32];
    for (int i = 0; i < 100; i++)
        memcpy(gone[i], cl_member_at_rank(m, 100 + i)->key, 32);
    cl_member_delta_t d;
    CHECK(cl_member_remove(m, (const uint8_t(*)[32])gone, 100, 1.0, &d) == 1 && d.nremoved == 100);
    cl_member_delta_clear(&d);
    for (int i = 0; i < 50; i++)
        cl_member_find(m, gone[i])->suspect_reason = CL_SUSPECT_SILENT;
    uint8_t fresh[32];
    memset(fresh, 0xee, 32);
    CHECK(cl_member_pick_rank(m, fresh, -1, false) == 150);
    CHECK(cl_member_pick_rank(m, gone[20], 120, true) == 120);
    CHECK(cl_member_pick_rank(m, gone[20], -1, false) == 120); /* its remembered rank */
    /* Who holds a rank, alive or as this peer itself. */
    CHECK(cl_member_rank_live(m, 0, self));
    CHECK(!cl_member_rank_live(m, 120, self) && !cl_member_rank_live(m, 599, self));
    CHECK(!cl_member_rank_live(m, -1, self));
    cl_member_find(m, cl_member_at_rank(m, 99)->key)->state = CL_PEER_ALIVE;
    CHECK(cl_member_rank_live(m, 99, self));
    cl_member_find(m, cl_member_at_rank(m, 99)->key)->state = CL_PEER_SUSPECT;
    CHECK(!cl_member_rank_live(m, 99, self));
    /* With every free rank reserved but the silent ones, a newcomer gets
       the lowest silent one rather than none. */
    for (int r = 150; r < 600; r++) {
        if (cl_member_at_rank(m, r) != NULL)
            continue;
        uint8_t k[32];
        memset(k, 0, 32);
        k[0] = (uint8_t)r;
        k[1] = (uint8_t)(r >> 8);
        k[2] = 0x66;
        CHECK(cl_member_admit(m, k, r, "", false, 1, 0, &d) == 0);
        cl_member_delta_clear(&d);
    }
    CHECK(cl_member_pick_rank(m, fresh, -1, false) == 100);
    cl_member_destroy(&m);
}

/* A monitor founds, trainers join through it: the monitor stays out of
   the ranked list and the group, coordinates only while no ranked public
   member lives, and followers learn of it through the view. */
static void test_monitor(void)
{
    uint8_t k[4][32];
    for (int i = 0; i < 4; i++)
        key_of(i, k[i]);
    cl_settings_t st = {4, false, 0, 4, 0, 1, 16, false};
    cl_member_t *mon = cl_member_new(k[0]);
    cl_member_t *t1 = cl_member_new(k[1]);
    CHECK(cl_member_found_monitor(mon, "/ip4/127.0.0.1/tcp/31337", false, &st) == 0);
    size_t n, nm;
    (void)cl_member_list(mon, &n);
    cl_peer_t *const *ms = cl_member_monitors(mon, &nm);
    CHECK(n == 0 && nm == 1 && ms[0]->monitor && ms[0]->rank == -1);
    CHECK(cl_member_coordinator(mon) == ms[0]); /* no ranked member: the monitor coordinates */
    /* The monitor admits a trainer: rank 0, the lowest free. */
    CHECK(cl_member_pick_rank(mon, k[1], -1, false) == 0);
    cl_member_delta_t d;
    CHECK(cl_member_admit(mon, k[1], 0, "/ip4/127.0.0.1/tcp/2", false, 1.0, 0.0, &d) == 0);
    CHECK(d.nadded == 1 && d.nmon_added == 0);
    cl_member_delta_clear(&d);
    CHECK(cl_member_coordinator(mon) == cl_member_find(mon, k[1]));
    CHECK(cl_member_pick_rank(mon, k[2], -1, false) == 1);
    /* A monitor cannot take a rank, nor a member a monitor seat. */
    CHECK(cl_member_admit(mon, k[0], 1, "/ip4/127.0.0.1/tcp/3", false, 1.0, 0.0, &d) ==
          COLLAB_ERR_RANK);
    cl_member_delta_clear(&d);
    CHECK(cl_member_admit_monitor(mon, k[1], "/ip4/127.0.0.1/tcp/2", false, 0.0, &d) ==
          COLLAB_ERR_RANK);
    cl_member_delta_clear(&d);
    /* The trainer installs the view: it is rank 0 and knows the monitor. */
    CHECK(ship_view(mon, t1, 1.0, &d) == 1);
    CHECK(d.self_added && d.nmon_added == 1 && d.nadded == 1);
    cl_member_delta_clear(&d);
    ms = cl_member_monitors(t1, &nm);
    CHECK(nm == 1 && memcmp(ms[0]->key, k[0], 32) == 0);
    CHECK(cl_member_self(t1)->rank == 0);
    /* The group holds the trainer only; the monitor is never in it. */
    CHECK(cl_member_close_group(mon, &d) == 1);
    cl_member_delta_clear(&d);
    cl_peer_t *g[4];
    CHECK(cl_member_group(mon, g, 4) == 1 && g[0]->rank == 0);
    CHECK(!cl_member_self(mon)->in_group);
    /* A second monitor joins; the trainer removes the first (it failed). */
    CHECK(ship_view(mon, t1, 2.0, &d) == 1);
    cl_member_delta_clear(&d);
    CHECK(cl_member_admit_monitor(t1, k[3], "/ip4/127.0.0.1/tcp/4", false, 3.0, &d) == 0);
    CHECK(d.nmon_added == 1);
    cl_member_delta_clear(&d);
    (void)cl_member_monitors(t1, &nm);
    CHECK(nm == 2);
    CHECK(cl_member_remove(t1, (const uint8_t(*)[32])k[0], 1, 4.0, &d) == 1);
    CHECK(d.nmon_removed == 1 && d.nremoved == 0);
    cl_member_delta_clear(&d);
    ms = cl_member_monitors(t1, &nm);
    CHECK(nm == 1 && memcmp(ms[0]->key, k[3], 32) == 0);
    /* The old monitor, told by the next view, finds itself removed. */
    CHECK(ship_view(t1, mon, 5.0, &d) == 1);
    CHECK(d.self_removed);
    cl_member_delta_clear(&d);
    /* Silence of a monitor is seen like a member's. */
    cl_peer_t *silent[4];
    CHECK(cl_member_silent(t1, 100.0, 5.0, silent, 4) == 1 && silent[0]->monitor);
    /* The last member of the group goes: the group is open again, so a
       trainer that joins later forms a new one instead of waiting for an
       admission nobody can give. */
    CHECK(cl_member_group_closed(t1));
    CHECK(cl_member_admit(t1, k[2], 1, "/ip4/127.0.0.1/tcp/5", false, 1.0, 5.0, &d) == 0);
    cl_member_delta_clear(&d);
    CHECK(cl_member_remove(t1, (const uint8_t(*)[32])k[1], 1, 6.0, &d) == 1);
    cl_member_delta_clear(&d);
    CHECK(!cl_member_group_closed(t1));
    cl_member_destroy(&mon);
    cl_member_destroy(&t1);
}

/* The coordinator rule: the lowest live public rank.  Client-mode members
   take no JOINs and are passed over; a monitor coordinates only while no
   live public member is left. */
static void test_coordinator_rule(void)
{
    uint8_t k[4][32];
    for (int i = 0; i < 4; i++)
        key_of(i, k[i]);
    cl_settings_t s = {4, false, 0, 3, 0, 1, 16, false};
    cl_member_t *coord = cl_member_new(k[0]);
    cl_member_t *fol = cl_member_new(k[2]);
    CHECK(cl_member_coordinator(coord) == NULL); /* no view yet */
    CHECK(cl_member_found(coord, 0, "/ip4/127.0.0.1/tcp/1/p2p/a", false, 1.0, &s) == 0);
    cl_member_delta_t d;
    CHECK(cl_member_admit(coord, k[1], 1, "", true, 1.0, 0.0, &d) == 0);
    cl_member_delta_clear(&d);
    CHECK(cl_member_admit(coord, k[2], 2, "/ip4/127.0.0.1/tcp/3/p2p/c", false, 1.0, 0.0, &d) == 0);
    cl_member_delta_clear(&d);
    CHECK(ship_view(coord, fol, 1.0, &d) == 1);
    cl_member_delta_clear(&d);
    CHECK(cl_member_coordinator(fol) == cl_member_find(fol, k[0]));
    /* The successor passes over the client (rank 1): rank 2. */
    CHECK(cl_member_successor(fol) == cl_member_self(fol));
    /* Rank 0 is suspected: rank 1 is a client, so rank 2 (the follower
       itself) coordinates, and nobody would follow it. */
    CHECK(cl_member_find(fol, k[1])->client);
    cl_member_find(fol, k[0])->state = CL_PEER_SUSPECT;
    CHECK(cl_member_coordinator(fol) == cl_member_self(fol));
    CHECK(cl_member_successor(fol) == NULL);
    /* The coordinator never suspects itself. */
    cl_member_find(coord, k[1])->state = CL_PEER_SUSPECT;
    CHECK(cl_member_coordinator(coord) == cl_member_self(coord));
    cl_member_destroy(&coord);
    cl_member_destroy(&fol);
}

/* Bandwidth figures (wire version 7): the founder's and each joiner's in
   their view entries, shipped to a follower as they are (none in the
   version 5 layout); a member that rejoins with another figure starts a
   new group generation, as a weight change does. */
static void test_bandwidth(void)
{
    uint8_t k[3][32];
    for (int i = 0; i < 3; i++)
        key_of(i, k[i]);
    cl_settings_t s = {3, false, 0, 3, 0, 1, 16, false};
    cl_member_t *coord = cl_member_new(k[0]);
    cl_member_t *fol = cl_member_new(k[1]);
    CHECK(cl_member_found_bw(coord, 0, "/ip4/127.0.0.1/tcp/1/p2p/a", false, 1.0, 100000, &s) == 0);
    cl_member_delta_t d;
    CHECK(cl_member_admit_bw(coord, k[1], 1, "/ip4/127.0.0.1/tcp/2/p2p/b", false, 1.0, 25000, 0.0,
                             &d) == 0);
    cl_member_delta_clear(&d);
    CHECK(cl_member_admit(coord, k[2], 2, "/ip4/127.0.0.1/tcp/3/p2p/c", false, 1.0, 0.0, &d) == 0);
    cl_member_delta_clear(&d);
    CHECK(cl_member_close_group(coord, &d) >= 0);
    cl_member_delta_clear(&d);
    uint64_t gen = cl_member_group_epoch(coord);
    CHECK(ship_view(coord, fol, 1.0, &d) == 1);
    cl_member_delta_clear(&d);
    CHECK(cl_member_at_rank(fol, 0)->bw_figure == 100000);
    CHECK(cl_member_self(fol)->bw_figure == 25000);
    CHECK(cl_member_at_rank(fol, 2)->bw_figure == 0);
    /* The same figure again changes nothing in the group... */
    CHECK(cl_member_admit_bw(coord, k[1], 1, "/ip4/127.0.0.1/tcp/2/p2p/b", false, 1.0, 25000, 2.0,
                             &d) == 0);
    cl_member_delta_clear(&d);
    CHECK(cl_member_group_epoch(coord) == gen);
    /* ...another one is a new generation. */
    CHECK(cl_member_admit_bw(coord, k[1], 1, "/ip4/127.0.0.1/tcp/2/p2p/b", false, 1.0, 50000, 3.0,
                             &d) == 0);
    cl_member_delta_clear(&d);
    CHECK(cl_member_group_epoch(coord) > gen);
    CHECK(ship_view(coord, fol, 3.0, &d) == 1);
    cl_member_delta_clear(&d);
    CHECK(cl_member_self(fol)->bw_figure == 50000);

    /* Measured bandwidth (cl_member_data_seen): the first message only
       dates; then an EWMA of bytes over the gap, gaps outside
       (1e-4 s, 1 s) only date, a sample is at most 1e10 bytes/s. */
    cl_peer_t *p0 = cl_member_at_rank(fol, 0);
    CHECK(p0->bandwidth == 0 && p0->last_data == 0);
    cl_member_data_seen(fol, p0->key, 1000000, 10.0);
    CHECK(p0->bandwidth == 0 && p0->last_data == 10.0);
    cl_member_data_seen(fol, p0->key, 1000000, 10.5);
    CHECK(fabs(p0->bandwidth - 2e6) < 1 && p0->last_data == 10.5);
    cl_member_data_seen(fol, p0->key, 4000000, 11.0);
    CHECK(fabs(p0->bandwidth - 3.2e6) < 1);
    cl_member_data_seen(fol, p0->key, 1000000, 13.0); /* 2 s: too long */
    CHECK(fabs(p0->bandwidth - 3.2e6) < 1 && p0->last_data == 13.0);
    cl_member_data_seen(fol, p0->key, 1000000, 13.00001); /* too short */
    CHECK(fabs(p0->bandwidth - 3.2e6) < 1 && p0->last_data == 13.00001);
    cl_member_data_seen(fol, p0->key, (size_t)1e12, 13.50001);
    CHECK(fabs(p0->bandwidth - (0.8 * 3.2e6 + 0.2 * 1e10)) < 1);
    CHECK(cl_member_self(fol)->bandwidth == 0); /* the others' records untouched */
    uint8_t stranger[32];
    memset(stranger, 0xA5, sizeof stranger);
    CHECK(cl_member_find(fol, stranger) == NULL);
    cl_member_data_seen(fol, stranger, 1000000, 14.0); /* no record: nothing */
    CHECK(p0->last_data == 13.50001);
    cl_member_destroy(&coord);
    cl_member_destroy(&fol);
}

int main(void)
{
    test_bandwidth();
    test_monitor();
    test_ranks_and_views();
    test_many();
    test_regroup_self();
    test_readmitted_not_late();
    test_adopt_admission();
    test_coordinator_rule();
    if (s_failures > 0) {
        fprintf(stderr, "cl_member_test: %d failures\n", s_failures);
        return 1;
    }
    printf("cl_member_test: ok\n");
    return 0;
}
