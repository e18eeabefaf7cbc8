/*  cl_engine_p2p_test.c - selftest of the point-to-point component
    (cl_engine_p2p.c with its credit, cl_engine_flow.c).

    Drives the component through a fake context, without sockets or a
    clock: this peer is world rank 0 of three, the other two are records
    the test owns, every message the component sends is recorded, and
    the test plays the other side's messages.  Checks a send and its
    matching receive, an unexpected message then its receive, a
    synchronous send that completes only on MATCHED (and the MATCHED this
    peer answers to a synchronous sender), a receive that fails with
    COLLAB_ERR_PROC_FAILED when its rank is gone (and one posted for an
    absent rank after the start-up grace), the sender's credit (a sender
    past its grant waits; CREDITs release its messages in order), and
    the receiver's (a sender past its grant is dropped and banned).
*/
#include "engine/cl_engine_p2p.h"
#include "engine/cl_engine_timer.h"

#include "engine/cl_comm.h"
#include "engine/cl_flow.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "selftest.h"

#include "p2p_fixture.h"

/* A send to rank 1 goes out as one P2P message and completes at once;
   the same bytes arriving from rank 1 complete a posted receive. */
static void test_send_recv(void)
{
    fake_t f;
    eng_p2p_t *p = setup(&f);
    collab_comm_t *world = cl_comm_new_world(NPEERS, 0);
    const char hello[] = "hello";
    collab_request_t *s = send_req(world, 1, 42, hello, sizeof hello, false);
    eng_p2p_send(p, s);
    CHECK(cl_request_done(s) && s->status == COLLAB_OK);
    CHECK(f.nsent == 1);
    CHECK(f.sent[0].to == 1 && f.sent[0].m.hdr.type == CL_MSG_P2P);
    CHECK(f.sent[0].m.hdr.aux == 42 && f.sent[0].m.hdr.part == 0);
    CHECK(f.sent[0].m.hdr.sub == CL_P2P_STANDARD);
    CHECK(f.sent[0].m.payload_len == sizeof hello && memcmp(f.sent[0].data, hello, 6) == 0);

    char buf[16] = {0};
    collab_request_t *r = recv_req(world, 1, 42, buf, sizeof buf);
    eng_p2p_recv(p, r);
    CHECK(!cl_request_done(r)); /* posted */
    cl_wire_msg_t m = p2p_msg(1, 43, "other", 6, 0);
    eng_p2p_on_message(p, &f.peers[1], &m); /* another tag: unexpected */
    CHECK(!cl_request_done(r));
    m = p2p_msg(1, 42, "world", 6, 0);
    eng_p2p_on_message(p, &f.peers[1], &m);
    CHECK(cl_request_done(r) && r->status == COLLAB_OK);
    CHECK(r->info.source == 1 && r->info.tag == 42 && r->info.bytes == 6);
    CHECK(strcmp(buf, "world") == 0);
    CHECK(f.nsent == 1); /* a standard send gets no answer */

    cl_request_destroy(&s);
    cl_request_destroy(&r);
    eng_p2p_destroy(&p);
    CHECK(p == NULL);
    cl_comm_destroy(&world);
}

/* Messages that arrive before their receive wait, in order, and the
   receives take them at once; a short buffer truncates. */
static void test_unexpected(void)
{
    fake_t f;
    eng_p2p_t *p = setup(&f);
    collab_comm_t *world = cl_comm_new_world(NPEERS, 0);
    cl_wire_msg_t m = p2p_msg(2, 5, "first", 6, 0);
    eng_p2p_on_message(p, &f.peers[2], &m);
    m = p2p_msg(2, 5, "second", 7, 0);
    eng_p2p_on_message(p, &f.peers[2], &m);

    char buf[16] = {0};
    collab_request_t *r = recv_req(world, COLLAB_ANY_SOURCE, 5, buf, sizeof buf);
    eng_p2p_recv(p, r);
    CHECK(cl_request_done(r) && r->status == COLLAB_OK);
    CHECK(r->info.source == 2 && strcmp(buf, "first") == 0);
    cl_request_destroy(&r);

    char small[3] = {0};
    r = recv_req(world, 2, COLLAB_ANY_TAG, small, sizeof small);
    eng_p2p_recv(p, r);
    CHECK(cl_request_done(r) && r->status == COLLAB_ERR_TRUNCATE);
    CHECK(r->info.bytes == 3 && memcmp(small, "sec", 3) == 0);
    cl_request_destroy(&r);

    /* Nothing left: the next receive waits. */
    r = recv_req(world, 2, 5, buf, sizeof buf);
    eng_p2p_recv(p, r);
    CHECK(!cl_request_done(r));
    eng_p2p_destroy(&p); /* cancels it */
    CHECK(cl_request_done(r) && r->info.cancelled == 1);
    cl_request_destroy(&r);
    cl_comm_destroy(&world);
}

/* A synchronous send stays pending until the receiver answers MATCHED
   for its id; an answer for another id or from another rank changes
   nothing.  A synchronous message this peer receives is answered with
   MATCHED once a receive takes it. */
static void test_ssend(void)
{
    fake_t f;
    eng_p2p_t *p = setup(&f);
    collab_comm_t *world = cl_comm_new_world(NPEERS, 0);
    collab_request_t *s = send_req(world, 1, 9, "sync", 5, true);
    eng_p2p_send(p, s);
    CHECK(!cl_request_done(s));
    CHECK(f.nsent == 1 && f.sent[0].m.hdr.sub == CL_P2P_SYNC);
    uint64_t id = f.sent[0].m.hdr.seq;
    CHECK(id != 0 && s->sync_id == id);

    cl_wire_msg_t c = ctl_msg(CL_P2P_MATCHED, id + 1);
    eng_p2p_on_message(p, &f.peers[1], &c);
    CHECK(!cl_request_done(s));
    c = ctl_msg(CL_P2P_MATCHED, id);
    eng_p2p_on_message(p, &f.peers[2], &c); /* not its receiver */
    CHECK(!cl_request_done(s));
    eng_p2p_on_message(p, &f.peers[1], &c);
    CHECK(cl_request_done(s) && s->status == COLLAB_OK && s->info.cancelled == 0);
    cl_request_destroy(&s);

    /* The other direction: rank 2 sends synchronously, id 77. */
    cl_wire_msg_t m = p2p_msg(2, 3, "abc", 4, 77);
    eng_p2p_on_message(p, &f.peers[2], &m);
    CHECK(f.nsent == 1); /* not matched yet */
    char buf[8];
    collab_request_t *r = recv_req(world, 2, 3, buf, sizeof buf);
    eng_p2p_recv(p, r);
    CHECK(cl_request_done(r) && r->status == COLLAB_OK);
    CHECK(f.nsent == 2 && f.sent[1].to == 2);
    CHECK(f.sent[1].m.hdr.type == CL_MSG_P2P_CTL && f.sent[1].m.hdr.sub == CL_P2P_MATCHED);
    CHECK(f.sent[1].m.hdr.seq == 77);
    cl_request_destroy(&r);

    /* A synchronous send to a rank that fails completes with the failure. */
    s = send_req(world, 2, 9, "sync", 5, true);
    eng_p2p_send(p, s);
    CHECK(!cl_request_done(s));
    f.alive[2] = false;
    eng_p2p_peer_gone(p, &f.peers[2]);
    CHECK(cl_request_done(s) && s->status == COLLAB_ERR_PROC_FAILED);
    cl_request_destroy(&s);
    eng_p2p_destroy(&p);
    cl_comm_destroy(&world);
}

/* A receive waiting on a rank fails when that rank is gone; one from an
   absent rank fails at once after the start-up grace, and waits during
   it until the grace ends. */
static void test_gone(void)
{
    fake_t f;
    eng_p2p_t *p = setup(&f);
    collab_comm_t *world = cl_comm_new_world(NPEERS, 0);
    char buf[8];
    collab_request_t *r1 = recv_req(world, 1, 1, buf, sizeof buf);
    collab_request_t *r2 = recv_req(world, 2, 1, buf, sizeof buf);
    eng_p2p_recv(p, r1);
    eng_p2p_recv(p, r2);
    CHECK(!cl_request_done(r1) && !cl_request_done(r2));
    f.alive[1] = false;
    eng_p2p_peer_gone(p, &f.peers[1]);
    CHECK(cl_request_done(r1) && r1->status == COLLAB_ERR_PROC_FAILED);
    CHECK(!cl_request_done(r2)); /* another rank */
    collab_request_t *r3 = recv_req(world, 1, 1, buf, sizeof buf);
    eng_p2p_recv(p, r3);
    CHECK(cl_request_done(r3) && r3->status == COLLAB_ERR_PROC_FAILED);
    collab_request_t *s = send_req(world, 1, 1, "x", 1, false);
    eng_p2p_send(p, s);
    CHECK(cl_request_done(s) && s->status == COLLAB_ERR_PROC_FAILED);
    eng_p2p_destroy(&p);
    CHECK(cl_request_done(r2) && r2->info.cancelled == 1);
    cl_request_destroy(&r1);
    cl_request_destroy(&r2);
    cl_request_destroy(&r3);
    cl_request_destroy(&s);

    /* Within the grace (it ends at member_since 8 + 5), a rank no member
       has held yet may still come. */
    p = setup_at(&f, 10, 8, 2);
    f.alive[2] = false;
    collab_request_t *w = recv_req(world, 2, 1, buf, sizeof buf);
    eng_p2p_recv(p, w);
    CHECK(!cl_request_done(w)); /* rank 2 was never held: it may come */
    s = send_req(world, 2, 1, "y", 1, false);
    eng_p2p_send(p, s);
    CHECK(!cl_request_done(s)); /* waits for rank 2 */
    run_timers(&f);
    CHECK(!cl_request_done(w) && !cl_request_done(s));
    /* The loop, woken at each deadline of the set (the CREDIT rounds),
       wakes at the grace's end too. */
    for (f.now = cl_timer_next(s_timers); f.now < 8 + 5 - 1e-9; f.now = cl_timer_next(s_timers)) {
        run_timers(&f);
        CHECK(!cl_request_done(w) && !cl_request_done(s));
    }
    CHECK(fabs(f.now - (8 + 5)) < 1e-9);
    run_timers(&f);
    CHECK(cl_request_done(w) && w->status == COLLAB_ERR_PROC_FAILED);
    CHECK(cl_request_done(s) && s->status == COLLAB_ERR_PROC_FAILED);
    cl_request_destroy(&w);
    cl_request_destroy(&s);
    eng_p2p_destroy(&p);
    cl_comm_destroy(&world);
}

/* The sender's credit: the first CL_FLOW_INIT_MSGS messages to a member
   go out, the next wait (their sends complete: the payload is copied);
   each CREDIT lets out what it grants, in the order sent. */
static void test_credit(void)
{
    fake_t f;
    eng_p2p_t *p = setup(&f);
    collab_comm_t *world = cl_comm_new_world(NPEERS, 0);
    const int n = (int)CL_FLOW_INIT_MSGS + 3;
    for (int i = 0; i < n; i++) {
        uint32_t v = (uint32_t)i;
        collab_request_t *s = send_req(world, 1, 1, &v, sizeof v, false);
        eng_p2p_send(p, s);
        CHECK(cl_request_done(s) && s->status == COLLAB_OK);
        cl_request_destroy(&s);
    }
    CHECK(f.nsent == (int)CL_FLOW_INIT_MSGS);
    size_t bytes = 0;
    CHECK(eng_p2p_flow_waiting(p, 1, &bytes) == 3 && bytes == 3 * sizeof(uint32_t));
    CHECK(eng_p2p_flow_waiting(p, -1, NULL) == 3);
    CHECK(eng_p2p_flow_waiting(p, 2, NULL) == 0);

    /* A CREDIT for one more message lets exactly the next one out. */
    cl_wire_msg_t c = ctl_msg(CL_P2P_CREDIT, 0);
    c.u.credit.incarnation = 99;
    cl_wire_credit_class_t *cls = &c.u.credit.cls[CL_CREDIT_P2P];
    cls->consumed_msgs = 10;
    cls->consumed_bytes = 10 * cl_flow_cost(sizeof(uint32_t));
    cls->limit_msgs = CL_FLOW_INIT_MSGS + 1;
    cls->limit_bytes = CL_FLOW_INIT_BYTES;
    eng_p2p_on_message(p, &f.peers[1], &c);
    CHECK(f.nsent == (int)CL_FLOW_INIT_MSGS + 1);
    CHECK(eng_p2p_flow_waiting(p, 1, NULL) == 2);

    /* A send behind waiting ones waits too, even with credit for it. */
    uint32_t last = 1000;
    collab_request_t *s = send_req(world, 1, 1, &last, sizeof last, false);
    eng_p2p_send(p, s);
    CHECK(cl_request_done(s));
    cl_request_destroy(&s);
    CHECK(eng_p2p_flow_waiting(p, 1, NULL) == 3);

    /* An impossible CREDIT (more consumed than sent) changes nothing. */
    cls->consumed_msgs = 10000;
    cls->limit_msgs = 20000;
    eng_p2p_on_message(p, &f.peers[1], &c);
    CHECK(eng_p2p_flow_waiting(p, 1, NULL) == 3);

    cls->consumed_msgs = 60;
    cls->consumed_bytes = 60 * cl_flow_cost(sizeof(uint32_t));
    cls->limit_msgs = 1000;
    eng_p2p_on_message(p, &f.peers[1], &c);
    CHECK(eng_p2p_flow_waiting(p, 1, NULL) == 0);
    CHECK(f.nsent == n + 1);
    /* Every message went to rank 1, in the order sent. */
    for (int i = 0; i < f.nsent; i++) {
        uint32_t v;
        memcpy(&v, f.sent[i].data, sizeof v);
        CHECK(f.sent[i].to == 1 && f.sent[i].m.hdr.type == CL_MSG_P2P);
        CHECK(v == (i < n ? (uint32_t)i : last));
    }
    CHECK(f.bans == 0);

    /* To rank 2: a message past the byte grant waits, and a small one
       behind it waits too although the grant has room for it. */
    size_t big = CL_FLOW_INIT_BYTES;
    uint8_t *payload = calloc(1, big);
    CHECK(payload != NULL);
    int before = f.nsent;
    s = send_req(world, 2, 1, "a", 2, false);
    eng_p2p_send(p, s);
    cl_request_destroy(&s);
    s = send_req(world, 2, 1, payload, big, false);
    eng_p2p_send(p, s);
    CHECK(cl_request_done(s) && s->status == COLLAB_OK);
    cl_request_destroy(&s);
    s = send_req(world, 2, 1, "b", 2, false);
    eng_p2p_send(p, s);
    cl_request_destroy(&s);
    CHECK(f.nsent == before + 1);
    CHECK(eng_p2p_flow_waiting(p, 2, &bytes) == 2 && bytes == big + 2);
    /* Everything consumed: the big one may go (one message of any size),
       the small one waits for the next CREDIT. */
    cls->consumed_msgs = 1;
    cls->consumed_bytes = cl_flow_cost(2);
    cls->limit_msgs = CL_FLOW_INIT_MSGS;
    cls->limit_bytes = CL_FLOW_INIT_BYTES;
    eng_p2p_on_message(p, &f.peers[2], &c);
    CHECK(f.nsent == before + 2 && f.sent[before + 1].m.payload_len == big);
    CHECK(eng_p2p_flow_waiting(p, 2, NULL) == 1);
    cls->consumed_msgs = 2;
    cls->consumed_bytes = cl_flow_cost(2) + cl_flow_cost(big);
    cls->limit_bytes = cls->consumed_bytes + CL_FLOW_INIT_BYTES;
    eng_p2p_on_message(p, &f.peers[2], &c);
    CHECK(f.nsent == before + 3 && f.sent[before + 2].data[0] == 'b');
    CHECK(eng_p2p_flow_waiting(p, 2, NULL) == 0);
    free(payload);
    eng_p2p_destroy(&p);
    cl_comm_destroy(&world);
}

/* The receiver's credit: a sender that passes the grant while all it
   sent waits unreceived is dropped and banned for COLLAB_BAN_TIME (here
   not the default); periodic rounds send CREDITs for what was consumed. */
static void test_grant(void)
{
    fake_t f;
    eng_p2p_t *p = setup(&f);
    f.cfg.ban_time = 45;
    collab_comm_t *world = cl_comm_new_world(NPEERS, 0);
    for (uint32_t i = 0; i < CL_FLOW_INIT_MSGS; i++) {
        cl_wire_msg_t m = p2p_msg(2, 1, &i, sizeof i, 0);
        eng_p2p_on_message(p, &f.peers[2], &m);
    }
    CHECK(f.bans == 0);
    uint32_t x = 12345;
    cl_wire_msg_t m = p2p_msg(2, 1, &x, sizeof x, 0);
    eng_p2p_on_message(p, &f.peers[2], &m);
    CHECK(f.bans == 1 && memcmp(f.banned, f.peers[2].key, 32) == 0);
    CHECK(f.ban_seconds == 45);
    CHECK(eng_p2p_flow_refused(p, 2) == 1);

    /* What was admitted is there, in order; the refused one is not. */
    char buf[8];
    for (uint32_t i = 0; i < CL_FLOW_INIT_MSGS; i++) {
        uint32_t v = 0;
        collab_request_t *r = recv_req(world, 2, 1, &v, sizeof v);
        eng_p2p_recv(p, r);
        CHECK(cl_request_done(r) && r->status == COLLAB_OK && v == i);
        cl_request_destroy(&r);
    }
    collab_request_t *r = recv_req(world, 2, 1, buf, sizeof buf);
    eng_p2p_recv(p, r);
    CHECK(!cl_request_done(r));

    /* Everything consumed: a CREDIT goes to rank 2 with the counts. */
    int before = f.nsent;
    eng_p2p_progress(p);
    bool credit = false;
    for (int i = before; i < f.nsent; i++) {
        const cl_wire_msg_t *s = &f.sent[i].m;
        if (f.sent[i].to == 2 && s->hdr.type == CL_MSG_P2P_CTL && s->hdr.sub == CL_P2P_CREDIT) {
            credit = true;
            CHECK(s->u.credit.incarnation == 7);
            CHECK(s->u.credit.cls[CL_CREDIT_P2P].consumed_msgs == CL_FLOW_INIT_MSGS);
            CHECK(s->u.credit.cls[CL_CREDIT_P2P].limit_msgs > CL_FLOW_INIT_MSGS);
        }
    }
    CHECK(credit);
    eng_p2p_destroy(&p);
    CHECK(cl_request_done(r) && r->info.cancelled == 1);
    cl_request_destroy(&r);
    cl_comm_destroy(&world);
}

/* This peer left: receives from a live rank and from any source fail
   with the leave's status instead of waiting for ever, and so does a
   synchronous send still waiting for its match. */
static void test_left(void)
{
    fake_t f;
    eng_p2p_t *p = setup(&f);
    collab_comm_t *world = cl_comm_new_world(NPEERS, 0);
    char buf[8];
    collab_request_t *r1 = recv_req(world, 1, 1, buf, sizeof buf);
    collab_request_t *r2 = recv_req(world, COLLAB_ANY_SOURCE, COLLAB_ANY_TAG, buf, sizeof buf);
    collab_request_t *s = send_req(world, 2, 1, "z", 1, true);
    eng_p2p_recv(p, r1);
    eng_p2p_recv(p, r2);
    eng_p2p_send(p, s);
    CHECK(!cl_request_done(r1) && !cl_request_done(r2) && !cl_request_done(s));
    eng_p2p_fail_all(p, COLLAB_ERR_LEFT);
    CHECK(cl_request_done(r1) && r1->status == COLLAB_ERR_LEFT && r1->info.cancelled == 0);
    CHECK(cl_request_done(r2) && r2->status == COLLAB_ERR_LEFT);
    CHECK(cl_request_done(s) && s->status == COLLAB_ERR_LEFT);
    cl_request_destroy(&r1);
    cl_request_destroy(&r2);
    cl_request_destroy(&s);
    eng_p2p_destroy(&p);
    cl_comm_destroy(&world);
}


/* A COLL message of collective seq on communicator comm, payload v. */
static cl_wire_msg_t coll_msg(uint64_t comm, uint64_t seq, const uint32_t *v)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_COLL;
    m.hdr.comm = comm;
    m.hdr.seq = seq;
    m.hdr.epoch = 3;
    m.hdr.part = 5;
    m.payload = (const uint8_t *)v;
    m.payload_len = sizeof *v;
    return m;
}

/* The last CREDIT sent to world rank w since index `from` of the record,
   or NULL. */
static const cl_wire_msg_t *last_credit(fake_t *f, int from, int w)
{
    const cl_wire_msg_t *c = NULL;
    for (int i = from; i < f->nsent; i++)
        if (f->sent[i].to == w && f->sent[i].m.hdr.type == CL_MSG_P2P_CTL &&
            f->sent[i].m.hdr.sub == CL_P2P_CREDIT)
            c = &f->sent[i].m;
    return c;
}

/* Class EARLY, the sender (docs/wire.md section 10 item 8): on a link of
   version 8 every COLL message counts; past the initial limit they wait
   in the receiver's FIFO, in order (communicators mixed), the send
   returning at once; a CREDIT's class EARLY lets them out, its class P2P
   does not.  On a link of version 7 they go out at once, and a CREDIT's
   class EARLY (2^64 - 1 from an older receiver) changes nothing. */
static void test_early_send(void)
{
    fake_t f;
    eng_p2p_t *p = setup(&f);
    f.version = 8;
    const int n = (int)CL_FLOW_INIT_MSGS + 4;
    for (int i = 0; i < n; i++) {
        uint32_t v = (uint32_t)i;
        cl_wire_msg_t m = coll_msg(i % 2 == 0 ? 11 : 12, (uint64_t)i, &v);
        CHECK(eng_p2p_coll_send(p, &f.peers[1], &m) == COLLAB_OK);
    }
    CHECK(f.nsent == (int)CL_FLOW_INIT_MSGS);
    size_t bytes = 0;
    CHECK(eng_p2p_flow_waiting(p, 1, &bytes) == 4 && bytes == 4 * sizeof(uint32_t));

    /* Class P2P's credit does not move them. */
    cl_wire_msg_t c = ctl_msg(CL_P2P_CREDIT, 0);
    c.u.credit.incarnation = 99;
    c.u.credit.cls[CL_CREDIT_P2P].limit_msgs = 100000;
    c.u.credit.cls[CL_CREDIT_P2P].limit_bytes = 1u << 30;
    c.u.credit.cls[CL_CREDIT_EARLY].limit_msgs = CL_FLOW_INIT_MSGS;
    c.u.credit.cls[CL_CREDIT_EARLY].limit_bytes = CL_FLOW_INIT_BYTES;
    eng_p2p_on_message(p, &f.peers[1], &c);
    CHECK(f.nsent == (int)CL_FLOW_INIT_MSGS && eng_p2p_flow_waiting(p, 1, NULL) == 4);

    /* Class EARLY for two more: exactly the next two, in order. */
    cl_wire_credit_class_t *e = &c.u.credit.cls[CL_CREDIT_EARLY];
    e->consumed_msgs = 30;
    e->consumed_bytes = 30 * cl_flow_cost(sizeof(uint32_t));
    e->limit_msgs = CL_FLOW_INIT_MSGS + 2;
    eng_p2p_on_message(p, &f.peers[1], &c);
    CHECK(f.nsent == (int)CL_FLOW_INIT_MSGS + 2 && eng_p2p_flow_waiting(p, 1, NULL) == 2);
    /* A later COLL message waits behind them although credit is short. */
    uint32_t last = 1000;
    cl_wire_msg_t m = coll_msg(12, 9999, &last);
    CHECK(eng_p2p_coll_send(p, &f.peers[1], &m) == COLLAB_OK);
    CHECK(eng_p2p_flow_waiting(p, 1, NULL) == 3);
    /* A CREDIT that reports more consumed than was sent (the two sides'
       counts out of step after a member was removed while alive) sets
       class EARLY's counts from the receiver's: its grant lets all three
       out at once, in order, instead of the sender waiting for good. */
    e->consumed_msgs = 5000;
    e->limit_msgs = 6000;
    eng_p2p_on_message(p, &f.peers[1], &c);
    CHECK(eng_p2p_flow_waiting(p, 1, NULL) == 0 && f.nsent == n + 1);
    /* An older CREDIT after it changes nothing. */
    e->consumed_msgs = CL_FLOW_INIT_MSGS + 2; /* all it sent */
    e->consumed_bytes = 0;
    e->limit_msgs = 1000;
    e->limit_bytes = 1u << 20;
    eng_p2p_on_message(p, &f.peers[1], &c);
    CHECK(eng_p2p_flow_waiting(p, 1, NULL) == 0 && f.nsent == n + 1);
    for (int i = 0; i < f.nsent; i++) {
        uint32_t v;
        memcpy(&v, f.sent[i].data, sizeof v);
        const cl_wire_hdr_t *h = &f.sent[i].m.hdr;
        CHECK(f.sent[i].to == 1 && h->type == CL_MSG_COLL && h->epoch == 3 && h->part == 5);
        CHECK(v == (i < n ? (uint32_t)i : last));
        CHECK(h->seq == (i < n ? (uint64_t)i : 9999) && h->comm == (i < n && i % 2 == 0 ? 11 : 12));
    }

    /* Version 7: no class EARLY, everything goes at once. */
    f.version = 7;
    int before = f.nsent;
    for (int i = 0; i < 2 * (int)CL_FLOW_INIT_MSGS; i++) {
        uint32_t v = (uint32_t)i;
        m = coll_msg(11, (uint64_t)i, &v);
        CHECK(eng_p2p_coll_send(p, &f.peers[2], &m) == COLLAB_OK);
    }
    CHECK(f.nsent == before + 2 * (int)CL_FLOW_INIT_MSGS && eng_p2p_flow_waiting(p, 2, NULL) == 0);
    /* ... nor is anything refused from it. */
    for (int i = 0; i < 3 * (int)CL_FLOW_INIT_MSGS; i++) {
        f.early_msgs[2]++;
        CHECK(eng_p2p_coll_admit(p, &f.peers[2], 4) == 0);
    }
    CHECK(f.bans == 0);
    eng_p2p_destroy(&p);
}

/* Class EARLY, the receiver: what waits in the early buffer holds the
   grant, what the route delivered or dropped is consumed; a message past
   its sender's grant is dropped (not banned); CREDITs carry class EARLY's counts on
   a link of version 8, 2^64 - 1 on one of 7. */
static void test_early_grant(void)
{
    fake_t f;
    eng_p2p_t *p = setup(&f);
    f.version = 8;
    /* Rank 1's messages are delivered at once (its collectives run): far
       past the initial limit, never refused. */
    for (int i = 0; i < 3 * (int)CL_FLOW_INIT_MSGS; i++)
        CHECK(eng_p2p_coll_admit(p, &f.peers[1], 4) == 1);
    /* Rank 2's wait in the early buffer: the initial limit, then a drop
       (named and counted, without a ban: docs/wire.md section 10). */
    for (int i = 0; i < (int)CL_FLOW_INIT_MSGS; i++) {
        CHECK(eng_p2p_coll_admit(p, &f.peers[2], 4) == 1);
        f.early_msgs[2]++;
        f.early_bytes[2] += 4;
    }
    CHECK(f.bans == 0);
    /* Past the grant: counted (its collective may take it at once), and
       refused by the early buffer. */
    CHECK(eng_p2p_coll_admit(p, &f.peers[2], 4) == -1);
    CHECK(eng_p2p_coll_refuse(p, &f.peers[2], 4)); /* reported to the group at once */
    CHECK(eng_p2p_coll_admit(p, &f.peers[2], 4) == -1);
    CHECK(!eng_p2p_coll_refuse(p, &f.peers[2], 4)); /* not again within COLLAB_TIMEOUT / 4 */
    CHECK(f.bans == 0 && eng_p2p_flow_refused(p, 2) == 2);
    f.now += f.cfg.timeout / 4;
    CHECK(eng_p2p_coll_admit(p, &f.peers[2], 4) == -1);
    CHECK(eng_p2p_coll_refuse(p, &f.peers[2], 4)); /* and again after it */
    CHECK(eng_p2p_flow_refused(p, 2) == 3);

    /* The CREDITs: rank 1 consumed all, rank 2 none. */
    int before = f.nsent;
    eng_p2p_progress(p);
    const cl_wire_msg_t *c1 = last_credit(&f, before, 1), *c2 = last_credit(&f, before, 2);
    CHECK(c1 != NULL && c2 != NULL);
    if (c1 != NULL && c2 != NULL) {
        const cl_wire_credit_class_t *e1 = &c1->u.credit.cls[CL_CREDIT_EARLY];
        const cl_wire_credit_class_t *e2 = &c2->u.credit.cls[CL_CREDIT_EARLY];
        CHECK(e1->consumed_msgs == 3 * CL_FLOW_INIT_MSGS);
        CHECK(e1->consumed_bytes == 3 * CL_FLOW_INIT_MSGS * cl_flow_cost(4));
        CHECK(e1->limit_msgs == 3 * CL_FLOW_INIT_MSGS + (uint64_t)f.cfg.max_unexpected_msgs);
        /* (the three refused were never queued: consumed) */
        CHECK(e2->consumed_msgs == 3 &&
              e2->limit_msgs == 3 + (uint64_t)f.cfg.max_unexpected_msgs);
        /* Class P2P: nothing came, the initial limit stands. */
        CHECK(c1->u.credit.cls[CL_CREDIT_P2P].consumed_msgs == 0);
        CHECK(c1->u.credit.cls[CL_CREDIT_P2P].limit_msgs == CL_FLOW_INIT_MSGS);
    }
    /* Rank 2's messages leave the early buffer (its collective ran, or
       they were dropped as obsolete): consumed, and within the new grant
       the next ones are admitted. */
    f.early_msgs[2] = 0;
    f.early_bytes[2] = 0;
    for (int i = 0; i < 10; i++)
        CHECK(eng_p2p_coll_admit(p, &f.peers[2], 4) == 1);
    CHECK(f.bans == 0);

    /* On a link of version 7 class EARLY is not limited. */
    fake_t g;
    eng_p2p_t *q = setup(&g);
    g.version = 7;
    for (int i = 0; i < 3 * (int)CL_FLOW_INIT_MSGS; i++) {
        g.early_msgs[1]++;
        CHECK(eng_p2p_coll_admit(q, &g.peers[1], 4) == 0);
    }
    uint32_t x = 1;
    cl_wire_msg_t m = p2p_msg(1, 1, &x, sizeof x, 0);
    eng_p2p_on_message(q, &g.peers[1], &m);
    eng_p2p_progress(q);
    const cl_wire_msg_t *c = last_credit(&g, 0, 1);
    CHECK(c != NULL && c->u.credit.cls[CL_CREDIT_EARLY].limit_msgs == UINT64_MAX &&
          c->u.credit.cls[CL_CREDIT_EARLY].consumed_msgs == 0);
    CHECK(g.bans == 0);
    eng_p2p_destroy(&q);
    eng_p2p_destroy(&p);
}

/* Class EARLY's overdraft: rank 1 filled its grant with early messages
   (of collectives this peer has not called) and sends nothing more.
   While no running collective has rank 1, nothing beyond the bound is
   granted; once one does (it may wait for a message of rank 1 behind
   those), rank 1 gets one message more per round trip: once it used it,
   and until twice its window waits here. */
static void test_early_overdraft(void)
{
    fake_t f;
    eng_p2p_t *p = setup(&f);
    f.version = 8;
    uint64_t win = f.cfg.max_unexpected_msgs;
    for (uint64_t i = 0; i < CL_FLOW_INIT_MSGS; i++) {
        CHECK(eng_p2p_coll_admit(p, &f.peers[1], 4) == 1);
        f.early_msgs[1]++;
        f.early_bytes[1] += 4;
    }
    eng_p2p_progress(p); /* the first CREDIT: the window */
    const cl_wire_msg_t *c = last_credit(&f, 0, 1);
    CHECK(c != NULL && c->u.credit.cls[CL_CREDIT_EARLY].limit_msgs == win);
    for (uint64_t i = CL_FLOW_INIT_MSGS; i < win; i++) {
        CHECK(eng_p2p_coll_admit(p, &f.peers[1], 4) == 1);
        f.early_msgs[1]++;
        f.early_bytes[1] += 4;
    }
    int before = f.nsent;
    eng_p2p_progress(p);
    f.now += 10;
    run_timers(&f); /* the periodic round too */
    CHECK(last_credit(&f, before, 1) == NULL);

    f.coll_waits[1] = true;
    f.cfg.max_message_mib = 1024; /* the largest message: far over the window */
    eng_p2p_progress(p);
    c = last_credit(&f, before, 1);
    CHECK(c != NULL && c->u.credit.cls[CL_CREDIT_EARLY].limit_msgs == win + 1);
    CHECK(c != NULL && c->u.credit.cls[CL_CREDIT_EARLY].consumed_msgs == 0);
    /* Its bytes stay within twice the window held from this sender, not
       one message of the largest size past what arrived: the count
       granted before is not the bound here (the window's bytes are). */
    uint64_t wbytes = (uint64_t)f.cfg.max_unexpected_peer_mib << 20;
    if (c != NULL) {
        uint64_t limit = c->u.credit.cls[CL_CREDIT_EARLY].limit_bytes;
        uint64_t arrived = win * cl_flow_cost(4);
        CHECK(limit > arrived);
        CHECK(limit - arrived <= 2 * wbytes);
    }
    before = f.nsent;
    eng_p2p_progress(p); /* not used yet: no second one */
    CHECK(last_credit(&f, before, 1) == NULL);
    CHECK(eng_p2p_coll_admit(p, &f.peers[1], 4) == 1);
    f.early_msgs[1]++;
    f.early_bytes[1] += 4;
    eng_p2p_progress(p);
    c = last_credit(&f, before, 1);
    CHECK(c != NULL && c->u.credit.cls[CL_CREDIT_EARLY].limit_msgs == win + 2);
    /* Twice its window waits here: no more overdraft (a sender that
       ignores its grant gains nothing while a collective is stalled). */
    CHECK(eng_p2p_coll_admit(p, &f.peers[1], 4) == 1);
    f.early_msgs[1] = 2 * win;
    f.early_bytes[1] = 8 * win;
    before = f.nsent;
    eng_p2p_progress(p);
    CHECK(last_credit(&f, before, 1) == NULL);
    CHECK(f.bans == 0);
    eng_p2p_destroy(&p);
}

/* The component's timer in the loop's set: the CREDIT round every
   COLLAB_TIMEOUT/4 while this peer is a member, stopped while it is not
   and armed again when it becomes one; a FIFO waiting for its link's
   version wakes the loop every ENG_FLOW_VERSION_POLL until it is known. */
static void test_timer(void)
{
    fake_t f;
    eng_p2p_t *p = setup(&f); /* its first round ran at 1000 */
    double period = f.cfg.timeout / 4;
    CHECK(fabs(cl_timer_next(s_timers) - (1000 + period)) < 1e-9);
    f.now = 1000 + period;
    run_timers(&f);
    CHECK(fabs(cl_timer_next(s_timers) - (1000 + 2 * period)) < 1e-9);
    f.not_member = true;
    f.now += period;
    run_timers(&f);
    CHECK(isinf(cl_timer_next(s_timers))); /* no member: nothing due */
    f.not_member = false;
    eng_p2p_member(p); /* a member again */
    CHECK(cl_timer_next(s_timers) <= f.now);
    run_timers(&f);
    CHECK(fabs(cl_timer_next(s_timers) - (f.now + period)) < 1e-9);

    /* The link's version unknown: what the credit holds back waits. */
    f.version = 0;
    collab_comm_t *world = cl_comm_new_world(NPEERS, 0);
    const int n = (int)CL_FLOW_INIT_MSGS + 2;
    for (int i = 0; i < n; i++) {
        uint32_t v = (uint32_t)i;
        collab_request_t *s = send_req(world, 1, 1, &v, sizeof v, false);
        eng_p2p_send(p, s);
        cl_request_destroy(&s);
    }
    CHECK(eng_p2p_flow_waiting(p, 1, NULL) == 2);
    eng_p2p_progress(p); /* after the poll round: the loop must look again soon */
    CHECK(cl_timer_next(s_timers) <= f.now + ENG_FLOW_VERSION_POLL + 1e-9);
    f.version = 5; /* older than credit: what waits goes at once */
    int before = f.nsent;
    f.now += ENG_FLOW_VERSION_POLL;
    run_timers(&f);
    CHECK(f.nsent - before >= 2 && eng_p2p_flow_waiting(p, 1, NULL) == 0);
    CHECK(fabs(cl_timer_next(s_timers) - (f.now - ENG_FLOW_VERSION_POLL + period)) < 1e-9);
    eng_p2p_destroy(&p);
    CHECK(isinf(cl_timer_next(s_timers))); /* removed with it */
    cl_comm_destroy(&world);
}

int main(void)
{
    s_timers = cl_timer_new(8);
    CHECK(s_timers != NULL);
    test_send_recv();
    test_unexpected();
    test_ssend();
    test_gone();
    test_credit();
    test_grant();
    test_left();
    test_early_send();
    test_early_grant();
    test_early_overdraft();
    test_timer();
    CHECK(isinf(cl_timer_next(s_timers))); /* every component removed its timer */
    cl_timer_destroy(&s_timers);
    if (s_failures == 0)
        printf("cl_engine_p2p_test: ok\n");
    return s_failures != 0;
}
