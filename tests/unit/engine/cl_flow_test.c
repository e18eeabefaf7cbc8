/*  cl_flow_test.c - selftest of the credit accounting of flow control.

    Checks the initial limit, the one message of any size when nothing is
    outstanding, that a receiver admits whatever its sender may send and
    refuses one past the grant, that CREDITs are cumulative (a repeated or
    older one changes nothing, an impossible one is refused), that a new
    incarnation starts the counts again, and when a CREDIT is due.
*/
#include "engine/cl_flow.h"

#include <stdio.h>
#include <string.h>

#include "selftest.h"

static const cl_flow_count_t none = {0, 0};

/* The initial limit: 64 messages, then the sender waits; the receiver
   admits those 64 and refuses the 65th while they wait. */
static void test_initial(void)
{
    cl_flow_tx_t tx;
    cl_flow_rx_t rx;
    cl_flow_tx_init(&tx);
    cl_flow_rx_init(&rx);
    cl_flow_count_t queued = none;
    int sent = 0;
    while (cl_flow_tx_may_send(&tx, 10) && sent < 1000) {
        cl_flow_tx_sent(&tx, 10);
        CHECK(cl_flow_rx_admit(&rx, 10, queued));
        queued.msgs++;
        queued.bytes += cl_flow_cost(10);
        sent++;
    }
    CHECK(sent == (int)CL_FLOW_INIT_MSGS);
    CHECK(!cl_flow_rx_admit(&rx, 10, queued)); /* a sender that ignored it */
    CHECK(rx.arrived.msgs == CL_FLOW_INIT_MSGS);
    /* In bytes: 1 MiB with 96 bytes a message. */
    cl_flow_tx_init(&tx);
    size_t len = 100000;
    sent = 0;
    while (cl_flow_tx_may_send(&tx, len) && sent < 1000) {
        cl_flow_tx_sent(&tx, len);
        sent++;
    }
    CHECK(sent == (int)(CL_FLOW_INIT_BYTES / (len + CL_FLOW_MSG_COST)));
}

/* One message larger than every limit goes when nothing is outstanding,
   and the next waits until it is consumed. */
static void test_large(void)
{
    cl_flow_tx_t tx;
    cl_flow_rx_t rx;
    cl_flow_tx_init(&tx);
    cl_flow_rx_init(&rx);
    size_t big = 64u << 20;
    CHECK(cl_flow_tx_may_send(&tx, big));
    cl_flow_tx_sent(&tx, big);
    CHECK(cl_flow_rx_admit(&rx, big, none));
    CHECK(!cl_flow_tx_may_send(&tx, 1));
    cl_flow_count_t queued = {1, cl_flow_cost(big)};
    CHECK(!cl_flow_rx_admit(&rx, 1, queued));
    /* Consumed and reported: another large one may go. */
    cl_flow_count_t consumed = cl_flow_rx_consumed(&rx, none);
    CHECK(consumed.msgs == 1 && consumed.bytes == cl_flow_cost(big));
    CHECK(cl_flow_rx_due(&rx, consumed, (cl_flow_count_t){64, 1u << 20}, false));
    cl_wire_credit_class_t c;
    cl_flow_rx_grant(&rx, consumed, (cl_flow_count_t){64, 1u << 20}, &c);
    CHECK(cl_flow_tx_credit(&tx, 7, &c));
    CHECK(cl_flow_tx_may_send(&tx, big));
    CHECK(cl_flow_tx_may_send(&tx, 1000));
}

/* A grant lets the sender send the window ahead of consumption, and the
   receiver admits exactly that; counts are cumulative and only grow. */
static void test_grant(void)
{
    cl_flow_tx_t tx;
    cl_flow_rx_t rx;
    cl_flow_tx_init(&tx);
    cl_flow_rx_init(&rx);
    cl_flow_count_t window = {200, 1u << 20};
    cl_flow_count_t queued = none;
    /* First message: the receiver owes a CREDIT at once (it raises the
       initial limit to its window). */
    cl_flow_tx_sent(&tx, 0);
    CHECK(cl_flow_rx_admit(&rx, 0, queued));
    queued.msgs++;
    queued.bytes += cl_flow_cost(0);
    CHECK(cl_flow_rx_due(&rx, cl_flow_rx_consumed(&rx, queued), window, false));
    cl_wire_credit_class_t c;
    cl_flow_rx_grant(&rx, cl_flow_rx_consumed(&rx, queued), window, &c);
    CHECK(c.consumed_msgs == 0 && c.limit_msgs == 200);
    CHECK(cl_flow_tx_credit(&tx, 9, &c));
    CHECK(!cl_flow_rx_due(&rx, cl_flow_rx_consumed(&rx, queued), window, true));
    int n = 1;
    while (cl_flow_tx_may_send(&tx, 0) && n < 10000) {
        cl_flow_tx_sent(&tx, 0);
        CHECK(cl_flow_rx_admit(&rx, 0, queued));
        queued.msgs++;
        queued.bytes += cl_flow_cost(0);
        n++;
    }
    CHECK(n == 200);
    CHECK(!cl_flow_rx_admit(&rx, 0, queued));
    /* 49 consumed: under a quarter, not due unless the receiver waits. */
    cl_flow_count_t q2 = {queued.msgs - 49, queued.bytes - 49 * cl_flow_cost(0)};
    CHECK(!cl_flow_rx_due(&rx, cl_flow_rx_consumed(&rx, q2), window, false));
    CHECK(cl_flow_rx_due(&rx, cl_flow_rx_consumed(&rx, q2), window, true));
    cl_flow_count_t q3 = {queued.msgs - 50, queued.bytes - 50 * cl_flow_cost(0)};
    CHECK(cl_flow_rx_due(&rx, cl_flow_rx_consumed(&rx, q3), window, false));
    cl_wire_credit_class_t c2;
    cl_flow_rx_grant(&rx, cl_flow_rx_consumed(&rx, q3), window, &c2);
    CHECK(c2.consumed_msgs == 50 && c2.limit_msgs == 250);
    /* The older CREDIT after the newer one changes nothing. */
    CHECK(cl_flow_tx_credit(&tx, 9, &c2));
    CHECK(cl_flow_tx_credit(&tx, 9, &c));
    CHECK(tx.limit.msgs == 250 && tx.consumed.msgs == 50);
    for (int i = 0; i < 50; i++) {
        CHECK(cl_flow_tx_may_send(&tx, 0));
        cl_flow_tx_sent(&tx, 0);
        CHECK(cl_flow_rx_admit(&rx, 0, q3));
        q3.msgs++;
        q3.bytes += cl_flow_cost(0);
    }
    CHECK(!cl_flow_tx_may_send(&tx, 0));
    CHECK(!cl_flow_rx_admit(&rx, 0, q3));
    /* Outstanding: the grant above consumption. */
    cl_flow_count_t o = cl_flow_rx_outstanding(&rx, cl_flow_rx_consumed(&rx, q3));
    CHECK(o.msgs == 200);
}

/* Impossible CREDITs are refused; a new incarnation starts again. */
static void test_credit_checks(void)
{
    cl_flow_tx_t tx;
    cl_flow_tx_init(&tx);
    for (int i = 0; i < 10; i++)
        cl_flow_tx_sent(&tx, 5);
    cl_wire_credit_class_t bad = {11, 11 * cl_flow_cost(5), 100, 1u << 20};
    CHECK(!cl_flow_tx_credit(&tx, 3, &bad));
    CHECK(tx.incarnation == 0 && tx.consumed.msgs == 0);
    cl_wire_credit_class_t low = {5, 5 * cl_flow_cost(5), 4, 1u << 20};
    CHECK(!cl_flow_tx_credit(&tx, 3, &low));
    cl_wire_credit_class_t ok = {10, 10 * cl_flow_cost(5), 80, 1u << 20};
    CHECK(cl_flow_tx_credit(&tx, 3, &ok));
    CHECK(tx.incarnation == 3 && tx.limit.msgs == 80);
    /* The receiver restarted: its first CREDIT counts from zero. */
    cl_wire_credit_class_t fresh = {2, 2 * cl_flow_cost(5), 66, 1u << 20};
    CHECK(cl_flow_tx_credit(&tx, 4, &fresh));
    CHECK(tx.incarnation == 4 && tx.sent.msgs == 2 && tx.limit.msgs == 66);
}

/* Counts out of step (the receiver counted more than this side sent):
   cl_flow_tx_credit refuses the CREDIT, cl_flow_tx_credit_resync takes
   the receiver's count and its grant; a limit below the consumption is
   refused by both. */
static void test_credit_resync(void)
{
    cl_flow_tx_t tx;
    cl_flow_tx_init(&tx);
    for (int i = 0; i < 10; i++)
        cl_flow_tx_sent(&tx, 5);
    cl_wire_credit_class_t ahead = {138, 138 * cl_flow_cost(5), 400, 1u << 20};
    CHECK(!cl_flow_tx_credit(&tx, 3, &ahead));
    CHECK(tx.sent.msgs == 10 && tx.incarnation == 0);
    CHECK(cl_flow_tx_credit_resync(&tx, 3, &ahead));
    CHECK(tx.sent.msgs == 138 && tx.consumed.msgs == 138 && tx.limit.msgs == 400 &&
          tx.incarnation == 3);
    CHECK(cl_flow_tx_may_send(&tx, 5));
    cl_wire_credit_class_t low = {500, 500 * cl_flow_cost(5), 499, 1u << 30};
    CHECK(!cl_flow_tx_credit_resync(&tx, 3, &low));
    CHECK(tx.sent.msgs == 138 && tx.limit.msgs == 400);
    /* in step: the same as cl_flow_tx_credit */
    cl_wire_credit_class_t ok = {138, 138 * cl_flow_cost(5), 450, 1u << 20};
    CHECK(cl_flow_tx_credit_resync(&tx, 3, &ok) && tx.sent.msgs == 138 && tx.limit.msgs == 450);
}

/* The overdraft: one message beyond the grant per round trip, and only
   while something of the sender waits and it used the last one. */
static void test_overdraft(void)
{
    cl_flow_tx_t tx;
    cl_flow_rx_t rx;
    cl_flow_tx_init(&tx);
    cl_flow_rx_init(&rx);
    cl_flow_count_t queued = none;
    cl_wire_credit_class_t c;
    CHECK(!cl_flow_rx_overdraft_due(&rx, queued, true)); /* nothing waits */
    while (cl_flow_tx_may_send(&tx, 10)) {
        cl_flow_tx_sent(&tx, 10);
        CHECK(cl_flow_rx_admit(&rx, 10, queued));
        queued.msgs++;
        queued.bytes += cl_flow_cost(10);
    }
    cl_flow_rx_grant(&rx, cl_flow_rx_consumed(&rx, queued), (cl_flow_count_t){64, 1u << 20}, &c);
    CHECK(cl_flow_tx_credit(&tx, 5, &c));
    CHECK(!cl_flow_tx_may_send(&tx, 10)); /* nothing consumed: still full */
    CHECK(cl_flow_rx_overdraft_due(&rx, queued, false));
    cl_flow_rx_overdraft(&rx, cl_flow_rx_consumed(&rx, queued), cl_flow_cost(1000), &c);
    CHECK(c.limit_msgs == 65);
    CHECK(cl_flow_tx_credit(&tx, 5, &c));
    CHECK(!cl_flow_rx_overdraft_due(&rx, queued, false)); /* not used yet */
    CHECK(cl_flow_tx_may_send(&tx, 1000));
    CHECK(!cl_flow_tx_may_send(&tx, 1001 + CL_FLOW_INIT_BYTES));
    cl_flow_tx_sent(&tx, 1000);
    CHECK(!cl_flow_tx_may_send(&tx, 0));
    CHECK(cl_flow_rx_admit(&rx, 1000, queued));
    queued.msgs++;
    queued.bytes += cl_flow_cost(1000);
    CHECK(!cl_flow_rx_admit(&rx, 0, queued)); /* only one */
    CHECK(cl_flow_rx_overdraft_due(&rx, queued, false));
}

/* The honest path never passes its grant: a sender that sends only what
   cl_flow_tx_may_send allows is admitted every time, whatever the
   receiver grants (windows, overdrafts whose bytes are only the room left
   under the caps, down to nothing) and consumes, with messages of every
   size, over many round trips (a fixed pseudo-random sequence).  A
   receiver drops a message of class EARLY only past the grant, and
   reports its sender to the group for it: an honest sender must never
   get there. */
static void test_honest_never_past(void)
{
    cl_flow_tx_t tx;
    cl_flow_rx_t rx;
    cl_flow_tx_init(&tx);
    cl_flow_rx_init(&rx);
    uint32_t r = 12345;
#define NEXT() (r = r * 1103515245u + 12345u, (r >> 8) & 0xffffu)
    cl_flow_count_t queued = none;
    const cl_flow_count_t window = {64, 256u << 10};
    uint64_t admitted = 0, refused = 0;
    size_t next_len = NEXT() % 70000; /* the head of the sender's FIFO */
    for (int round = 0; round < 20000; round++) {
        /* The sender: its FIFO's head goes out only when allowed. */
        while (cl_flow_tx_may_send(&tx, next_len)) {
            cl_flow_tx_sent(&tx, next_len);
            if (cl_flow_rx_admit(&rx, next_len, queued))
                admitted++;
            else
                refused++;
            queued.msgs++;
            queued.bytes += cl_flow_cost(next_len);
            next_len = NEXT() % 4 == 0 ? NEXT() * 4u : NEXT() % 512;
        }
        /* The receiver consumes some of what waits (a collective ran). */
        uint32_t take = NEXT() % 4 == 0 ? (uint32_t)queued.msgs : NEXT() % 3;
        for (uint32_t k = 0; k < take && queued.msgs > 0; k++) {
            uint64_t avg = queued.bytes / queued.msgs;
            queued.msgs--;
            queued.bytes = queued.msgs == 0 ? 0 : queued.bytes - avg;
        }
        /* and reports: a window, or an overdraft of what room it has. */
        cl_wire_credit_class_t c;
        cl_flow_count_t consumed = cl_flow_rx_consumed(&rx, queued);
        if (NEXT() % 3 == 0) {
            uint64_t room = NEXT() % 3 == 0 ? 0 : (uint64_t)NEXT() * 8u;
            cl_flow_rx_overdraft(&rx, consumed, room, &c);
        } else {
            cl_flow_rx_grant(&rx, consumed, window, &c);
        }
        CHECK(cl_flow_tx_credit(&tx, 9, &c));
    }
#undef NEXT
    CHECK(admitted > 1000);
    CHECK(refused == 0);
}

int main(void)
{
    test_initial();
    test_large();
    test_grant();
    test_credit_checks();
    test_credit_resync();
    test_overdraft();
    test_honest_never_past();
    if (s_failures != 0) {
        fprintf(stderr, "cl_flow_test: %d checks failed\n", s_failures);
        return 1;
    }
    printf("cl_flow_test: ok\n");
    return 0;
}
