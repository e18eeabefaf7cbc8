/*  cl_auth_test.c - selftest of the authority gate (cl_engine_authority.c,
    docs/security.md §3) on a fake engine: real membership records and
    wire structures, the engine's other parts stubbed here (the clock,
    "do I coordinate", elastic state) and the transport's ban recorded
    (linked with --wrap=cl_transport_ban).

    The receiver is rank 0 of a view {0, 1, 2} with a monitor, a former
    member (rank 3, removed) and a stranger.  Each case hands the gate one
    message from one of them and checks the table: taken, dropped, or
    dropped with its sender banned.  The one ban rule: a ban only for
    content that breaks a bound every honest peer keeps, never for the
    sender's role (a JOIN_REPLY, BYE_ACK, REPORT or P2P_CTL from a
    stranger is dropped, not banned).
*/
#include "engine/cl_engine_int.h"

#include "engine/cl_elmsg.h"
#include "engine/cl_engine_elastic.h"
#include "util/cl_selftest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the stubbed rest of the engine ---------------------------------- */

static bool s_coordinates = true;
static int s_bans;

double eng_now(void)
{
    return 100.0;
}

bool eng_self_coordinates(struct cl_engine *e)
{
    (void)e;
    return s_coordinates;
}

const char *eng_peer_desc(const cl_peer_t *p, char *out, size_t len)
{
    snprintf(out, len, "rank %d", p != NULL ? p->rank : -1);
    return out;
}

bool eng_donor_expects(const el_donor_t *d, uint64_t s, const uint8_t key[32])
{
    (void)d, (void)s, (void)key;
    return false;
}

void eng_outbid_view(struct cl_engine *e, const cl_wire_view_t *v)
{
    (void)e, (void)v;
}

bool eng_el_is_entrant(struct cl_engine *e, const uint8_t key[32])
{
    (void)e, (void)key;
    return false;
}

void __wrap_cl_transport_ban(cl_transport_t *tp, const uint8_t key[32], double seconds);
void __wrap_cl_transport_ban(cl_transport_t *tp, const uint8_t key[32], double seconds)
{
    (void)tp, (void)key, (void)seconds;
    s_bans++;
}

/* --- the receiver ----------------------------------------------------- */

enum { ME, M1, M2, MON, FORMER, STRANGER, NKEYS };
static uint8_t s_key[NKEYS][32];
static struct cl_engine s_e;

static void setup(void)
{
    for (int i = 0; i < NKEYS; i++) {
        memset(s_key[i], 0, 32);
        s_key[i][0] = (uint8_t)(0x10 + i);
        s_key[i][9] = 0x77;
    }
    memset(&s_e, 0, sizeof s_e);
    memcpy(s_e.self_key, s_key[ME], 32);
    s_e.cfg.timeout = 5;
    s_e.state = ENG_MEMBER;
    s_e.mb = cl_member_new(s_key[ME]);
    CL_CHECK(s_e.mb != NULL);
    cl_settings_t st = {8, false, 0, 8, 0, 1, 16, false};
    CL_CHECK(cl_member_found(s_e.mb, 0, "", true, 1.0, &st) == COLLAB_OK);
    cl_member_delta_t d;
    CL_CHECK(cl_member_admit(s_e.mb, s_key[M1], 1, "", true, 1.0, 1.0, &d) == COLLAB_OK);
    cl_member_delta_clear(&d);
    CL_CHECK(cl_member_admit(s_e.mb, s_key[M2], 2, "", true, 1.0, 1.0, &d) == COLLAB_OK);
    cl_member_delta_clear(&d);
    CL_CHECK(cl_member_admit(s_e.mb, s_key[FORMER], 3, "", true, 1.0, 1.0, &d) == COLLAB_OK);
    cl_member_delta_clear(&d);
    CL_CHECK(cl_member_remove(s_e.mb, (const uint8_t(*)[32])s_key[FORMER], 1, 2.0, &d) == 1);
    cl_member_delta_clear(&d);
    CL_CHECK(cl_member_admit_monitor(s_e.mb, s_key[MON], "/ip4/127.0.0.1/tcp/9", false, 3.0, &d) ==
             COLLAB_OK);
    cl_member_delta_clear(&d);
    for (int i = M1; i <= M2; i++)
        cl_member_find(s_e.mb, s_key[i])->state = CL_PEER_ALIVE;
    CL_CHECK(eng_auth_init(&s_e) == COLLAB_OK);
}

/* Hands m from key k to the gate: 1 taken, 0 dropped, 2 dropped and the
   sender banned. */
static int gate(int k, cl_wire_msg_t *m)
{
    int bans = s_bans;
    const cl_peer_t *p = cl_member_find(s_e.mb, s_key[k]);
    bool taken = eng_auth_message(&s_e, p, s_key[k], m);
    return taken ? (s_bans == bans ? 1 : -1) : (s_bans == bans ? 0 : 2);
}

static cl_wire_msg_t msg(int type)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = (uint8_t)type;
    return m;
}

/* A view of epoch `epoch` listing keys ks (all client entries: no
   address), or with entry `bad_addr` public at another key's address. */
static cl_wire_msg_t view(uint64_t epoch, const int *ks, int n, cl_wire_member_t *ents)
{
    cl_wire_msg_t m = msg(CL_MSG_VIEW);
    m.u.view.epoch = epoch;
    m.u.view.group_epoch = 1;
    m.u.view.settings = (cl_wire_settings_t){.world_size = 8, .target_group = 8, .robust_min = 1};
    for (int i = 0; i < n; i++)
        ents[i] =
            (cl_wire_member_t){.rank = i, .flags = CL_MEMBER_CLIENT, .weight = 1.0, .address = ""};
    for (int i = 0; i < n; i++)
        memcpy(ents[i].key, s_key[ks[i]], 32);
    m.u.view.count = (uint32_t)n;
    m.u.view.members = ents;
    return m;
}

static void test_table(void)
{
    uint64_t own = cl_member_epoch(s_e.mb);
    cl_wire_msg_t m;

    /* JOIN: anyone; a weight above 1e9 is content no honest peer sends. */
    m = msg(CL_MSG_JOIN);
    m.u.join.weight = 1.0;
    CL_CHECK(gate(STRANGER, &m) == 1);
    m.u.join.weight = 1e308;
    CL_CHECK(gate(STRANGER, &m) == 2);

    /* JOIN_REPLY: only from a peer asked; a stranger's is dropped, not
       banned (a late answer to an earlier incarnation looks the same). */
    s_e.state = ENG_JOINING;
    m = msg(CL_MSG_JOIN_REPLY);
    CL_CHECK(gate(STRANGER, &m) == 0);
    eng_auth_note_join_sent(&s_e, s_key[STRANGER]);
    CL_CHECK(gate(STRANGER, &m) == 1);
    s_e.state = ENG_MEMBER;

    /* HEARTBEAT: members; a stranger to the coordinator; an epoch more
       than 2^20 ahead is banned from anyone. */
    m = msg(CL_MSG_HEARTBEAT);
    m.u.heartbeat.epoch = own;
    CL_CHECK(gate(M1, &m) == 1);
    CL_CHECK(gate(MON, &m) == 1);
    CL_CHECK(gate(STRANGER, &m) == 1); /* answered with a view */
    s_coordinates = false;
    CL_CHECK(gate(STRANGER, &m) == 0);
    s_coordinates = true;
    m.u.heartbeat.epoch = own + ((uint64_t)1 << 21);
    CL_CHECK(gate(M1, &m) == 2);
    CL_CHECK(gate(STRANGER, &m) == 2);

    /* UPDATE and SUSPECT: to the coordinator, from members (SUSPECT also
       from a monitor); strangers dropped; a weight above 1e9 banned. */
    m = msg(CL_MSG_UPDATE);
    m.u.update.weight = 2.0;
    CL_CHECK(gate(M2, &m) == 1);
    CL_CHECK(gate(STRANGER, &m) == 0);
    CL_CHECK(gate(MON, &m) == 0);
    m.u.update.weight = 1e10;
    CL_CHECK(gate(M2, &m) == 2);
    m = msg(CL_MSG_SUSPECT);
    CL_CHECK(gate(MON, &m) == 1);
    CL_CHECK(gate(STRANGER, &m) == 0);
    s_coordinates = false;
    CL_CHECK(gate(M1, &m) == 0);
    s_coordinates = true;

    /* Answers and control of a role the sender lacks: dropped, never
       banned. */
    m = msg(CL_MSG_BYE_ACK);
    CL_CHECK(gate(FORMER, &m) == 1);
    CL_CHECK(gate(STRANGER, &m) == 0);
    m = msg(CL_MSG_P2P_CTL);
    CL_CHECK(gate(M1, &m) == 1);
    CL_CHECK(gate(STRANGER, &m) == 0);
    m = msg(CL_MSG_REPORT);
    CL_CHECK(gate(M1, &m) == 0); /* this peer is no monitor */
    CL_CHECK(gate(STRANGER, &m) == 0);
    m = msg(CL_MSG_GOODBYE);
    CL_CHECK(gate(MON, &m) == 1);
    CL_CHECK(gate(STRANGER, &m) == 0);
    m = msg(CL_MSG_ELASTIC);
    m.hdr.sub = CL_EL_ADMIT;
    CL_CHECK(gate(STRANGER, &m) == 0);
    CL_CHECK(gate(M2, &m) == 0); /* not the admitter */
    m.hdr.sub = CL_EL_PROBE;
    CL_CHECK(gate(FORMER, &m) == 1);
    CL_CHECK(gate(STRANGER, &m) == 0);

    /* VIEW.  From a member that is not the coordinator: dropped.  Not
       listing its sender: dropped (a role question).  An epoch jump or an
       address that is not its member's own: banned, from anyone. */
    cl_wire_member_t ents[4];
    int ks[3] = {ME, M1, M2};
    m = view(own + 1, ks, 3, ents);
    CL_CHECK(gate(M1, &m) == 0);
    int others[2] = {ME, M1};
    m = view(own + 1, others, 2, ents);
    CL_CHECK(gate(M2, &m) == 0);
    CL_CHECK(gate(STRANGER, &m) == 0);
    m = view(own + ((uint64_t)1 << 21), ks, 3, ents);
    CL_CHECK(gate(M1, &m) == 2);
    m = view(own + 1, ks, 3, ents);
    ents[1].flags = 0;
    ents[1].address = "/ip4/127.0.0.1/tcp/9/p2p/12D3KooWAddressOfSomebodyElse";
    CL_CHECK(gate(M1, &m) == 2);

    /* A type the engine does not take. */
    m = msg(99);
    CL_CHECK(gate(M1, &m) == 2);
}

int main(void)
{
    setup();
    test_table();
    eng_auth_fini(&s_e);
    cl_member_destroy(&s_e.mb);
    return cl_selftest_end("cl_auth_test");
}
