/*  cl_flow.c - credit accounting of flow control.

    The rule both sides apply (docs/wire.md section 10): a sender may have
    sent, in all, what the receiver's limit names, in messages and in
    bytes (payload + CL_FLOW_MSG_COST each), and one message of any size
    whenever everything it sent was consumed.  The sender sees the
    receiver's consumption only as reported, which is never more than the
    receiver's own count, and the receiver's limit is never lower than
    the last one it reported: whatever the sender may send, the receiver
    admits.
*/
#include "engine/cl_flow.h"

#include <string.h>

uint64_t cl_flow_cost(size_t len)
{
    return (uint64_t)len > UINT64_MAX - CL_FLOW_MSG_COST ? UINT64_MAX
                                                         : (uint64_t)len + CL_FLOW_MSG_COST;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Within limit after one more message of cost bytes on top of used? */
static bool within(cl_flow_count_t used, cl_flow_count_t limit, uint64_t cost)
{
    return used.msgs < limit.msgs && used.bytes <= limit.bytes && cost <= limit.bytes - used.bytes;
}

void cl_flow_tx_init(cl_flow_tx_t *tx)
{
    memset(tx, 0, sizeof *tx);
    tx->limit.msgs = CL_FLOW_INIT_MSGS;
    tx->limit.bytes = CL_FLOW_INIT_BYTES;
}

bool cl_flow_tx_may_send(const cl_flow_tx_t *tx, size_t len)
{
    if (tx->sent.msgs == tx->consumed.msgs)
        return true;
    return within(tx->sent, tx->limit, cl_flow_cost(len));
}

void cl_flow_tx_sent(cl_flow_tx_t *tx, size_t len)
{
    tx->sent.msgs++;
    tx->sent.bytes = sat_add(tx->sent.bytes, cl_flow_cost(len));
}

bool cl_flow_tx_credit(cl_flow_tx_t *tx, uint64_t incarnation, const cl_wire_credit_class_t *c)
{
    cl_flow_tx_t t = *tx;
    if (incarnation != t.incarnation) {
        if (t.incarnation != 0) {
            /* The receiver restarted under the same key: what went to the
               old one is gone with it; count from what the new one
               consumed. */
            cl_flow_tx_init(&t);
            t.sent.msgs = c->consumed_msgs;
            t.sent.bytes = c->consumed_bytes;
        }
        t.incarnation = incarnation;
    }
    if (c->consumed_msgs > t.sent.msgs || c->consumed_bytes > t.sent.bytes ||
        c->limit_msgs < c->consumed_msgs || c->limit_bytes < c->consumed_bytes)
        return false;
    t.consumed.msgs = max_u64(t.consumed.msgs, c->consumed_msgs);
    t.consumed.bytes = max_u64(t.consumed.bytes, c->consumed_bytes);
    t.limit.msgs = max_u64(t.limit.msgs, c->limit_msgs);
    t.limit.bytes = max_u64(t.limit.bytes, c->limit_bytes);
    *tx = t;
    return true;
}

bool cl_flow_tx_credit_resync(cl_flow_tx_t *tx, uint64_t incarnation,
                              const cl_wire_credit_class_t *c)
{
    if (cl_flow_tx_credit(tx, incarnation, c))
        return true;
    if (c->limit_msgs < c->consumed_msgs || c->limit_bytes < c->consumed_bytes)
        return false;
    cl_flow_tx_t t = *tx;
    if (incarnation != t.incarnation) {
        if (t.incarnation != 0)
            cl_flow_tx_init(&t);
        t.incarnation = incarnation;
    }
    t.sent.msgs = max_u64(t.sent.msgs, c->consumed_msgs);
    t.sent.bytes = max_u64(t.sent.bytes, c->consumed_bytes);
    *tx = t;
    return cl_flow_tx_credit(tx, incarnation, c);
}

void cl_flow_rx_init(cl_flow_rx_t *rx)
{
    memset(rx, 0, sizeof *rx);
    rx->limit.msgs = CL_FLOW_INIT_MSGS;
    rx->limit.bytes = CL_FLOW_INIT_BYTES;
}

cl_flow_count_t cl_flow_rx_consumed(const cl_flow_rx_t *rx, cl_flow_count_t queued)
{
    cl_flow_count_t c;
    c.msgs = rx->arrived.msgs >= queued.msgs ? rx->arrived.msgs - queued.msgs : 0;
    c.bytes = rx->arrived.bytes >= queued.bytes ? rx->arrived.bytes - queued.bytes : 0;
    return c;
}

void cl_flow_rx_count(cl_flow_rx_t *rx, size_t len)
{
    rx->arrived.msgs++;
    rx->arrived.bytes = sat_add(rx->arrived.bytes, cl_flow_cost(len));
}

bool cl_flow_rx_admit(cl_flow_rx_t *rx, size_t len, cl_flow_count_t queued)
{
    if (queued.msgs != 0 && !within(rx->arrived, rx->limit, cl_flow_cost(len)))
        return false;
    cl_flow_rx_count(rx, len);
    return true;
}

bool cl_flow_rx_due(const cl_flow_rx_t *rx, cl_flow_count_t consumed, cl_flow_count_t window,
                    bool now)
{
    if (!rx->told)
        return rx->arrived.msgs > 0;
    uint64_t um = consumed.msgs - rx->reported.msgs;
    uint64_t ub = consumed.bytes - rx->reported.bytes;
    if (um == 0 && ub == 0)
        return false;
    return now || um >= window.msgs / 4 || ub >= window.bytes / 4;
}

void cl_flow_rx_grant(cl_flow_rx_t *rx, cl_flow_count_t consumed, cl_flow_count_t window,
                      cl_wire_credit_class_t *out)
{
    rx->limit.msgs = max_u64(rx->limit.msgs, sat_add(consumed.msgs, window.msgs));
    rx->limit.bytes = max_u64(rx->limit.bytes, sat_add(consumed.bytes, window.bytes));
    rx->reported = consumed;
    rx->told = true;
    out->consumed_msgs = consumed.msgs;
    out->consumed_bytes = consumed.bytes;
    out->limit_msgs = rx->limit.msgs;
    out->limit_bytes = rx->limit.bytes;
}

bool cl_flow_rx_overdraft_due(const cl_flow_rx_t *rx, cl_flow_count_t queued, bool periodic)
{
    if (queued.msgs == 0 || !rx->told)
        return false;
    return periodic || rx->arrived.msgs > rx->overdraft_mark;
}

void cl_flow_rx_overdraft(cl_flow_rx_t *rx, cl_flow_count_t consumed, uint64_t bytes,
                          cl_wire_credit_class_t *out)
{
    rx->limit.msgs = max_u64(rx->limit.msgs, sat_add(rx->arrived.msgs, 1));
    rx->limit.bytes = max_u64(rx->limit.bytes, sat_add(rx->arrived.bytes, bytes));
    rx->overdraft_mark = rx->arrived.msgs;
    rx->reported = consumed;
    out->consumed_msgs = consumed.msgs;
    out->consumed_bytes = consumed.bytes;
    out->limit_msgs = rx->limit.msgs;
    out->limit_bytes = rx->limit.bytes;
}

cl_flow_count_t cl_flow_rx_outstanding(const cl_flow_rx_t *rx, cl_flow_count_t consumed)
{
    cl_flow_count_t o;
    o.msgs = rx->limit.msgs > consumed.msgs ? rx->limit.msgs - consumed.msgs : 0;
    o.bytes = rx->limit.bytes > consumed.bytes ? rx->limit.bytes - consumed.bytes : 0;
    return o;
}
