/*  cl_flow.h - credit accounting of flow control (docs/wire.md section 10).

    Pure counts, no sockets and no clock.  A sender keeps one cl_flow_tx_t
    per receiver and class, a receiver one cl_flow_rx_t per sender and
    class; every count is cumulative (messages, and bytes with
    CL_FLOW_MSG_COST per message) since the receiver's incarnation began,
    so a CREDIT that repeats or overtakes another changes nothing.
*/
#ifndef CL_FLOW_H_INCLUDED
#define CL_FLOW_H_INCLUDED

#include "engine/cl_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_FLOW_MSG_COST 96u          /* bytes counted per message besides its payload */
#define CL_FLOW_INIT_MSGS 64u         /* the protocol's initial limit, messages */
#define CL_FLOW_INIT_BYTES (1u << 20) /* and bytes */

typedef struct {
    uint64_t msgs, bytes;
} cl_flow_count_t;

/* The sender's side: what it sent to one receiver and what that receiver
   granted. */
typedef struct {
    uint64_t incarnation;     /* the receiver's, from its last CREDIT (0: none yet) */
    cl_flow_count_t sent;     /* sent since that incarnation began */
    cl_flow_count_t consumed; /* consumed, as the receiver last reported */
    cl_flow_count_t limit;    /* granted (the initial limit until a CREDIT) */
} cl_flow_tx_t;

/* The receiver's side: what one sender sent it and what it granted. */
typedef struct {
    cl_flow_count_t arrived;  /* admitted */
    cl_flow_count_t limit;    /* granted (the initial limit until a CREDIT) */
    cl_flow_count_t reported; /* consumed, as the last CREDIT said */
    bool told;                /* a CREDIT went out */
    uint64_t overdraft_mark;  /* arrived.msgs at the last overdraft */
} cl_flow_rx_t;

/* A message of len payload bytes, as counted against a byte limit. */
uint64_t cl_flow_cost(size_t len);

/* Sets tx to the protocol's initial state (nothing sent, initial limit). */
void cl_flow_tx_init(cl_flow_tx_t *tx);

/* May a message of len bytes go out now?  True within the limit, and for
   one message of any size when the receiver consumed all that was sent. */
bool cl_flow_tx_may_send(const cl_flow_tx_t *tx, size_t len);

/* Counts a message of len bytes sent. */
void cl_flow_tx_sent(cl_flow_tx_t *tx, size_t len);

/* Applies a CREDIT class from a receiver of the given incarnation.  A new
   incarnation starts the counts again from what the new one consumed
   (what went to the old one is gone with it).  Counts only grow: an older CREDIT changes nothing.
   Returns true when applied, false when the CREDIT is impossible (it reports more consumed than was
   sent, or a limit below what it consumed): then tx is unchanged. */
bool cl_flow_tx_credit(cl_flow_tx_t *tx, uint64_t incarnation, const cl_wire_credit_class_t *c);

/* As cl_flow_tx_credit, but a CREDIT that reports more consumed than
   was sent moves this side's count up to it instead of being refused:
   the two sides' counts came out of step (one forgot them when a member
   was removed while alive, and messages of the old counts still
   arrived), and the receiver's count is the one its grants are made
   of.  For a class whose receiver never bans a sender past its grant
   (class EARLY): what this side then sends beyond the receiver's true
   grant meets the receiver's bounds.  A limit below what it consumed is
   still refused. */
bool cl_flow_tx_credit_resync(cl_flow_tx_t *tx, uint64_t incarnation,
                              const cl_wire_credit_class_t *c);

/* Sets rx to the protocol's initial state. */
void cl_flow_rx_init(cl_flow_rx_t *rx);

/* A message of len bytes arrives while `queued` of the sender's admitted
   messages still wait (so arrived - queued are consumed).  True, and
   counted, when within what was granted (or, with nothing waiting, for
   one message of any size); false when the sender passed its grant. */
bool cl_flow_rx_admit(cl_flow_rx_t *rx, size_t len, cl_flow_count_t queued);

/* Counts a message of len bytes that arrived past the grant but is let
   through to the bounds (a receiver's grace). */
void cl_flow_rx_count(cl_flow_rx_t *rx, size_t len);

/* What the sender has consumed of rx, given what still waits. */
cl_flow_count_t cl_flow_rx_consumed(const cl_flow_rx_t *rx, cl_flow_count_t queued);

/* Is a CREDIT due?  When the sender sent something and has never been
   told, when the unreported consumption reaches a quarter of the window
   in messages or bytes, or when any is unreported and `now` is set (the
   receiver waits for a message, or its periodic report is due). */
bool cl_flow_rx_due(const cl_flow_rx_t *rx, cl_flow_count_t consumed, cl_flow_count_t window,
                    bool now);

/* Grants window above what is consumed (never below an earlier grant) and
   fills out with the CREDIT class to send; marks it reported. */
void cl_flow_rx_grant(cl_flow_rx_t *rx, cl_flow_count_t consumed, cl_flow_count_t window,
                      cl_wire_credit_class_t *out);

/* A receive of this peer waits for a message of the sender while `queued`
   of its messages wait here unreceived: is the sender due one message
   beyond the bound?  When something of it waits, and it used the last
   overdraft (or `periodic`: the first, or a lost one). */
bool cl_flow_rx_overdraft_due(const cl_flow_rx_t *rx, cl_flow_count_t queued, bool periodic);

/* Grants the sender one more message beyond what arrived, and `bytes`
   (counted as cl_flow_cost counts them) beyond the bytes that arrived,
   never below an earlier grant; fills out with the CREDIT class to send.
   The byte limit binds the sender as much as the count: while the count
   granted earlier is not used up, `bytes` may carry several messages. */
void cl_flow_rx_overdraft(cl_flow_rx_t *rx, cl_flow_count_t consumed, uint64_t bytes,
                          cl_wire_credit_class_t *out);

/* What rx granted beyond what is consumed (0 when nothing). */
cl_flow_count_t cl_flow_rx_outstanding(const cl_flow_rx_t *rx, cl_flow_count_t consumed);

#endif
