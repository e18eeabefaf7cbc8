/*  cl_shm.h - collective payloads and point-to-point messages between
    peers of one host, through shared memory.

    A cl_shm_t belongs to the transport and runs on the engine thread.  It
    listens on an abstract unix socket named after the run and this peer's
    key; abstract names live in the network namespace, so only peers of the
    same host and namespace reach it.  For every authenticated link the
    transport reports (cl_shm_offer), the peer with the lower key connects
    and proposes a segment: the other checks the socket's SO_PEERCRED (same
    user), the boot id, the network namespace and the run, maps the segment
    and checks what the proposer wrote into it.  The segment is a memfd
    passed over the socket, so it has no name to unlink and a SIGKILL
    leaves nothing behind.  It holds one ring per direction.

    Only COLL, P2P and P2P_CTL messages travel on a ring (docs/wire.md
    framing: the 64-byte header then the payload); every other message
    stays on CurveZMQ.  One
    sender's messages keep their order across both paths: a message for
    CurveZMQ waits behind ring messages still queued (full ring), and the
    receiver drains a peer's ring before it reads that peer's next
    CurveZMQ message (cl_shm_drain_from).  A receiver that sleeps in poll
    is woken by one byte on the socket, sent only when it said it sleeps;
    the same byte tells a sender waiting for room that there is some.  A
    peer that dies closes the socket: what it wrote completely is
    delivered, a message it left half-written is dropped, and what this
    side still had queued for it goes out on CurveZMQ (in order), where
    the failure rules take over.  Everything read from the segment is
    bounds-checked: a peer writing nonsense loses its link, nothing else.
*/
#ifndef CL_SHM_H_INCLUDED
#define CL_SHM_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

typedef struct cl_shm cl_shm_t;

/* Bytes of a segment's fast-path area (cl_fast.h): after the segment's
   header page, before the rings; zero when the segment is made.  160 KiB
   of channels, then 4 channels x 2 members x 256 KiB of big rings. */
#define CL_SHM_FAST_BYTES ((size_t)2208 << 10)

/* Hands one message that arrived on a ring to the transport: hdr is the
   64-byte wire header, body its blen bytes; both valid during the call. */
typedef void(cl_shm_deliver_fn)(void *ctx, const uint8_t key[32], const uint8_t *hdr,
                                const uint8_t *body, size_t blen);

/* Sends an encoded message on CurveZMQ (the transport's path rule); takes
   ownership of body.  Used for messages that waited behind ring messages
   and for what was queued for a link that closed. */
typedef int(cl_shm_send_fn)(void *ctx, const uint8_t key[32], const uint8_t *hdr, uint8_t *body,
                            size_t blen);

/* Whether key is a peer the transport holds an authenticated link with
   (a proposal from any other key is refused). */
typedef bool(cl_shm_known_fn)(void *ctx, const uint8_t key[32]);

typedef struct {
    const uint8_t *self_key; /* 32 bytes, copied */
    uint64_t run;            /* run hash of docs/wire.md */
    size_t max_message;      /* largest body accepted */
    size_t ring_bytes;       /* bytes per direction (0 = 4 MiB), a power of two */
    cl_shm_deliver_fn *deliver;
    cl_shm_send_fn *send;
    cl_shm_known_fn *known;
    void *ctx; /* passed to the three callbacks */
} cl_shm_config_t;

/* Starts listening.  Returns NULL (with the reason logged at debug level)
   when this host offers no way to verify a peer (no boot id, no
   namespace file, no abstract socket): the transport then uses CurveZMQ
   for everything.  Caller owns. */
cl_shm_t *cl_shm_new(const cl_shm_config_t *cfg);

/* Closes every link (queued messages go out on CurveZMQ first) and the
   listening socket; nulls *self_p; accepts NULL. */
void cl_shm_destroy(cl_shm_t **self_p);

/* The transport has an authenticated link with key: proposes a segment
   when this peer's key is the lower one and none was tried yet.  Never
   blocks. */
void cl_shm_offer(cl_shm_t *self, const uint8_t key[32]);

/* True when COLL and P2P messages to key go through shared memory. */
bool cl_shm_up(const cl_shm_t *self, const uint8_t key[32]);

/* True when a same-host link with key exists in any state (being set up,
   up, or dead): the order between the ring and the network counts on the
   network's being one connection, so such a peer's link is never striped
   (docs/wire.md section 1.1). */
bool cl_shm_known(const cl_shm_t *self, const uint8_t key[32]);

/* Messages to key that still wait in this side's queue of its link (a
   ring message behind a CurveZMQ one the peer may not have yet, or one
   waiting for room in the ring): they have not left this process.  0
   without a link. */
size_t cl_shm_queued(const cl_shm_t *self, const uint8_t key[32]);

/* How cl_shm_send takes a message: CL_SHM_RING for the ring (else for
   CurveZMQ), CL_SHM_FLOW when flow control already bounds what the
   sender has in flight to that peer (point-to-point messages, docs/wire.md
   §10), so the queue's own bound does not apply. */
enum { CL_SHM_RING = 1, CL_SHM_FLOW = 2 };

/* Sends one encoded message to key.  A COLL or P2P message (CL_SHM_RING)
   on an up link goes to the ring, or waits in order when the ring is
   full; a message for CurveZMQ waits only when ring messages are queued
   before it.  body stays the caller's (copied when queued).  Returns 1
   (taken), 0 (not taken: send it on CurveZMQ now), or COLLAB_ERR_NO_MEM /
   COLLAB_ERR_PROC_FAILED (more than 256 MiB queued, without
   CL_SHM_FLOW). */
int cl_shm_send(cl_shm_t *self, const uint8_t key[32], const uint8_t *hdr, const uint8_t *body,
                size_t blen, unsigned how);

/* Poll items cl_shm_poll_items may write (0 for NULL). */
size_t cl_shm_nfds(const cl_shm_t *self);

/* Before the transport sleeps in poll: writes this module's poll items
   (at most cap) into items and returns how many; *busy is set when a ring
   holds data or room for queued messages already, so the poll must not
   sleep. */
size_t cl_shm_poll_items(cl_shm_t *self, zmq_pollitem_t *items, size_t cap, bool *busy);

/* After poll: accepts and answers proposals, reads wake-ups, delivers
   every complete message of every ring, moves queued messages, closes
   links whose peer is gone.  items/n are what cl_shm_poll_items wrote,
   with revents set. */
void cl_shm_after_poll(cl_shm_t *self, const zmq_pollitem_t *items, size_t n);

/* A CurveZMQ message from key (encoded header and body) is handed on now:
   the peer learns it through the shared segment, and sends COLL messages
   on the ring again only after that (messages keep their order when a
   ring one follows a CurveZMQ one). */
void cl_shm_net_received(cl_shm_t *self, const uint8_t key[32], const uint8_t *hdr,
                         const uint8_t *body, size_t blen);

/* Delivers what key's ring holds now (called before a CurveZMQ message of
   key is handed on, so that it cannot overtake them). */
void cl_shm_drain_from(cl_shm_t *self, const uint8_t key[32]);

/* The id of the up link to key (unique in this process, never 0), or 0
   when none is up. */
uint64_t cl_shm_link_id(const cl_shm_t *self, const uint8_t key[32]);

/* A new mapping of the fast-path area (CL_SHM_FAST_BYTES) of the segment
   shared with key, or NULL when no link to key is up.  *low is set when
   this peer's key is the lower of the two.  The mapping is the caller's
   (munmap); it stays valid after the link closes. */
void *cl_shm_fast_map(cl_shm_t *self, const uint8_t key[32], bool *low);

/* Offers the group area in memfd mfd (bytes long, sealed against
   shrinking; stays the caller's) for communicator comm_id of k members,
   tag naming its members, to key over the up link's socket.  True when
   sent; the peer keeps the last offer of each link. */
bool cl_shm_group_offer(cl_shm_t *self, const uint8_t key[32], uint64_t comm_id, uint32_t k,
                        uint64_t tag, int mfd, size_t bytes);

/* The tag of the group area key offers for (comm_id, k, bytes) and
   nobody took yet; 0 when none. */
uint64_t cl_shm_group_offered(const cl_shm_t *self, const uint8_t key[32], uint64_t comm_id,
                              uint32_t k, size_t bytes);

/* The memfd of the group area key offered for exactly (comm_id, k, tag,
   bytes), sealed and of that size; -1 when there is none.  Caller owns
   the result (the offer is taken). */
int cl_shm_group_take(cl_shm_t *self, const uint8_t key[32], uint64_t comm_id, uint32_t k,
                      uint64_t tag, size_t bytes);

/* Links up now and messages moved through rings (sent, received). */
/* This process's host as shared memory sees it (boot id, effective user,
   network namespace), hashed: equal for two processes that may share
   memory, as far as they can tell alone.  0 with the key in *out, -1
   when one of them cannot be read. */
int cl_shm_host_key(uint64_t *out);

void cl_shm_stats(const cl_shm_t *self, size_t *links, uint64_t *sent, uint64_t *received);

#endif
