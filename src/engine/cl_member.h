/*  cl_member.h - membership records and numbered views (docs/membership.md).

    Soft state: one record per peer ever heard of (peer key, address, rank,
    client mode, weight, group flag, last heard), and the current view: an
    epoch-numbered list of the members that hold a rank, with the swarm-wide
    settings fixed by the founder.  The coordinator (the live member with
    the lowest rank) changes the view through the cl_member_admit/remove/...
    calls; everyone else installs the views it receives with
    cl_member_apply_view.  Both report what changed in a cl_member_delta_t
    so the engine can connect to new peers and fail the old ones.

    Pure logic: no sockets, no clock (times are passed in), one thread.
*/
#ifndef CL_MEMBER_H_INCLUDED
#define CL_MEMBER_H_INCLUDED

#include "engine/cl_wire.h"
#include "util/cl_identity.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    CL_PEER_ALIVE = 0,   /* member, heard from recently */
    CL_PEER_SUSPECT = 1, /* member, but this peer thinks it is dead */
    CL_PEER_GONE = 2,    /* not in the current view (left, failed, or never admitted) */
} cl_peer_state_t;

/* One record.  Owned by cl_member_t; pointers stay valid until the record
   is purged (cl_member_purge), never while it is in the view. */
typedef struct {
    uint8_t key[32];                   /* Curve25519 public key */
    char id[CL_PEER_ID_MAX];           /* base58 peer id */
    char address[CL_WIRE_STR_MAX + 1]; /* announced multiaddr, "" for clients */
    int rank;                          /* world rank while a member, else -1 */
    int prev_rank;                     /* last rank held (for rejoin), or -1 */
    bool client;                       /* client mode */
    bool monitor;                      /* a monitor (collab-monitor): in the view, no rank */
    bool relay;                        /* a monitor that relays between client members */
    bool in_group;                     /* member of the world group */
    double weight;                     /* averaging weight */
    uint32_t bw_figure;                /* agreed bandwidth figure from the view (kbit/s, the
                                          member's COLLAB_BANDWIDTH_MBIT or its measured
                                          upload), 0 unknown */
    double figure_at;                  /* coordinator: when an UPDATE last changed it */
    cl_peer_state_t state;             /* see above */
    double last_heard;                 /* local monotonic seconds of the last message */
    double gone_at;                    /* when it left the view (for purging) */
    /* Engine's per-peer bookkeeping, kept here to avoid a second table. */
    double bandwidth;     /* measured bytes/s from this peer, 0 = unknown */
    double last_data;     /* local time of its last large data message */
    double suspect_since; /* local time of the first late report, 0 = none */
    int suspect_reason;   /* CL_SUSPECT_* of the local suspicion */
    bool link_closed;     /* our connection to it closed */
    uint64_t incarnation; /* its JOIN's incarnation (coordinator), 0 = unknown */
} cl_peer_t;

/* Swarm-wide settings carried by every view. */
typedef struct {
    int world_size;            /* nominal MPI_COMM_WORLD size */
    bool strict;               /* COLLAB_STRICT */
    int compression;           /* 0 none, 1 fp16, 2 int8 */
    int target_group;          /* COLLAB_TARGET_GROUP: most members of one all-reduce group */
    int aggregation;           /* COLLAB_AGGREGATION: 0 mean, 1 trimmed_mean, 2 centered_clip */
    uint32_t robust_min;       /* COLLAB_ROBUST_MIN: elements, >= 1 */
    uint32_t max_weight_ratio; /* COLLAB_MAX_WEIGHT_RATIO: >= 1 */
    bool verify;               /* COLLAB_VERIFY */
} cl_settings_t;

/* What a view change did.  Arrays point at records; valid until the next
   call that changes the membership. */
typedef struct {
    cl_peer_t **added; /* new members */
    size_t nadded;
    cl_peer_t **removed; /* members no longer in the view */
    size_t nremoved;
    cl_peer_t **ungrouped; /* members that left the world group but stay members */
    size_t nungrouped;
    cl_peer_t **mon_added; /* new monitors (docs/monitor.md) */
    size_t nmon_added;
    cl_peer_t **mon_removed; /* monitors no longer in the view */
    size_t nmon_removed;
    bool group_closed_now; /* the world group was formed by this change */
    bool self_removed;     /* this peer is not in the new view */
    bool self_added;       /* this peer appears for the first time */
} cl_member_delta_t;

typedef struct cl_member cl_member_t;

/* Creates an empty table for the peer whose public key is self_key.
   Returns NULL on allocation failure.  Caller owns. */
cl_member_t *cl_member_new(const uint8_t self_key[32]);

/* Destroys and nulls *self_p; accepts NULL. */
void cl_member_destroy(cl_member_t **self_p);

/* Founds a swarm: view epoch 1 holding only this peer at `rank` (0 when
   rank < 0 or out of range) with the given settings.  Returns 0 or
   COLLAB_ERR_NO_MEM. */
int cl_member_found(cl_member_t *self, int rank, const char *address, bool client, double weight,
                    const cl_settings_t *settings);

/* cl_member_found with this peer's bandwidth figure (kbit/s, 0 none) in
   its entry. */
int cl_member_found_bw(cl_member_t *self, int rank, const char *address, bool client, double weight,
                       uint32_t bandwidth, const cl_settings_t *settings);

/* Founds a swarm as a monitor: view epoch 1 holding only this peer as a
   monitor entry (no rank) with the given settings.  Returns 0 or
   COLLAB_ERR_NO_MEM. */
int cl_member_found_monitor(cl_member_t *self, const char *address, bool relay,
                            const cl_settings_t *settings);

/* Coordinator: adds a monitor (no rank, never in the world group) and
   bumps the epoch.  Returns 0 (also when it is a monitor already, without
   a change: delta empty), COLLAB_ERR_RANK when the key is a ranked member
   or CL_WIRE_MONITORS_MAX monitors are in the view, COLLAB_ERR_ARG without
   a view or address, COLLAB_ERR_NO_MEM. */
int cl_member_admit_monitor(cl_member_t *self, const uint8_t key[32], const char *address,
                            bool relay, double now, cl_member_delta_t *delta);

/* The monitors of the current view, by key; *n receives the count.  They
   are not in cl_member_list. */
cl_peer_t *const *cl_member_monitors(const cl_member_t *self, size_t *n);

/* Installs a view received from the network when it is newer than the
   current one.  Returns 1 when installed (*delta filled), 0 when stale
   (ignored), or a negative status (COLLAB_ERR_ARG: the view contradicts
   itself, e.g. two members with the same key; COLLAB_ERR_NO_MEM). */
int cl_member_apply_view(cl_member_t *self, const cl_wire_view_t *view, double now,
                         cl_member_delta_t *delta);

/* Frees the arrays of *delta and zeroes it. */
void cl_member_delta_clear(cl_member_delta_t *delta);

/* Coordinator: the rank a joiner gets (COLLAB_RANK if free, else the rank
   this key held before, else the lowest free one), or -1 when every rank
   is taken (the joiner waits as a standby).  A key that is already a
   member keeps its rank.  `required`: preferred or none (a peer
   rejoining, whose program holds that rank). */
int cl_member_pick_rank(const cl_member_t *self, const uint8_t key[32], int preferred,
                        bool required);

/* Coordinator: adds (or refreshes) a member at `rank` and bumps the epoch.
   A member joining after the world group was formed stays out of it.
   Returns 0 or a negative status (COLLAB_ERR_RANK if the rank is held by
   another key, COLLAB_ERR_NO_MEM). */
int cl_member_admit(cl_member_t *self, const uint8_t key[32], int rank, const char *address,
                    bool client, double weight, double now, cl_member_delta_t *delta);

/* cl_member_admit with the member's bandwidth figure (kbit/s, 0 none, as
   its JOIN declared it).  A figure is part of the world group like a
   weight: changing a grouped member's starts a new generation. */
int cl_member_admit_bw(cl_member_t *self, const uint8_t key[32], int rank, const char *address,
                       bool client, double weight, uint32_t bandwidth, double now,
                       cl_member_delta_t *delta);

/* Coordinator: removes members or monitors (bumps the epoch once).  When
   the last member of the formed world group goes, the group is open again
   (matchmaking forms a new one).  Keys that are not
   members are ignored.  Returns 1 if the view changed, 0 if not, or a
   negative status. */
int cl_member_remove(cl_member_t *self, const uint8_t (*keys)[32], size_t n, double now,
                     cl_member_delta_t *delta);

/* Coordinator: takes members out of the world group without removing them
   from the swarm (stragglers, mismatches).  Same returns as remove. */
int cl_member_ungroup(cl_member_t *self, const uint8_t (*keys)[32], size_t n,
                      cl_member_delta_t *delta);

/* Coordinator that was taken out of the world group, every member of
   which then left or failed: puts itself back in (the group is formed,
   of it alone, closed) so that it re-admits the other members outside
   the group.  Returns 1 if the view changed, 0 if not (another member is
   in the group, or this peer is), or a negative status. */
int cl_member_regroup_self(cl_member_t *self, cl_member_delta_t *delta);

/* Coordinator: adopts an admission it got after its own views had gone
   past it.  v is the admitter's view that admits peers into the world
   group (its epoch is its group generation) with an epoch no higher than
   this peer's, and its group is this peer's plus members here outside
   it, each as recorded here (rank, weight, figure, client mode).  The
   view that follows puts them into the group under v's generation, so
   that the generation lists the same members everywhere (docs/elastic.md,
   "An admission the coordinator got late").  Returns 1 if the view
   changed, 0 if v is no such admission, or a negative status. */
int cl_member_adopt_admission(cl_member_t *self, const cl_wire_view_t *v, double now,
                              cl_member_delta_t *delta);

/* Coordinator: forms the world group from every current member.  Returns
   1 if the view changed, 0 if the group was already formed. */
int cl_member_close_group(cl_member_t *self, cl_member_delta_t *delta);
/* The highest view epoch there can be: views above it are refused, and
   raising an epoch stops below it, so epochs never wrap. */
#define CL_EPOCH_MAX ((uint64_t)1 << 62)

/* Raises the epoch of the current view to `epoch` (if higher), so that
   the next view this peer makes as coordinator gets a higher one. */
void cl_member_raise_epoch(cl_member_t *self, uint64_t epoch);

/* Coordinator: sets a member's weight.  Returns 1 if changed, 0 if not. */
int cl_member_set_weight(cl_member_t *self, const uint8_t key[32], double weight);

/* Coordinator: sets a member's bandwidth figure (kbit/s, > 0) at time
   now, like its weight: a new view, and a new group generation when the
   member is in the group.  A figure that changed less than `every`
   seconds before is kept (a member cannot make the views churn).
   Returns 1 if changed, 0 if not. */
int cl_member_set_figure(cl_member_t *self, const uint8_t key[32], uint32_t kbit, double now,
                         double every);

/* The current view as a wire message body.  members[] is malloc'ed (the
   caller frees it, not the addresses, which point into the records).
   Returns 0 or COLLAB_ERR_NO_MEM; COLLAB_ERR_ARG when there is no view. */
int cl_member_view(const cl_member_t *self, cl_wire_view_t *out);

/* Record of a key (any state), or NULL. */
cl_peer_t *cl_member_find(const cl_member_t *self, const uint8_t key[32]);

/* Creates (or returns) the record of a key that is not a member yet, e.g.
   a peer that just connected.  NULL on allocation failure. */
cl_peer_t *cl_member_touch(cl_member_t *self, const uint8_t key[32]);

/* The member holding world rank r, or NULL. */
cl_peer_t *cl_member_at_rank(const cl_member_t *self, int r);

/* Settings to the wire's block and back: the fixed form of a VIEW, or
   (optional) the form of JOIN_REPLY, where aggregation and verify are 1 +
   the value. */
void cl_settings_to_wire(const cl_settings_t *s, bool optional, cl_wire_settings_t *out);
void cl_settings_from_wire(const cl_wire_settings_t *w, bool optional, cl_settings_t *out);

/* Whether rank r is held by a member believed alive, or by this peer
   (self_key) itself.  O(log n). */
bool cl_member_rank_live(const cl_member_t *self, int r, const uint8_t self_key[32]);

/* This peer's record, or NULL before it has one. */
cl_peer_t *cl_member_self(const cl_member_t *self);

/* The members of the current view in rank order; *n receives the count. */
cl_peer_t *const *cl_member_list(const cl_member_t *self, size_t *n);

/* The coordinator, the one rule of the swarm: the public member (client-
   mode members take no JOINs: nobody can connect to them) with the lowest
   rank that this peer does not suspect (it never suspects itself).  A
   monitor coordinates only while no such member lives (it founded the
   swarm, or every trainer died): the live monitor with the lowest key.
   NULL without a view. */
cl_peer_t *cl_member_coordinator(const cl_member_t *self);
/* The admitter (docs/elastic.md §8): the coordinator when it is in the
   formed group, else the lowest-ranked live public member of the group,
   else (no public member in it) the lowest-ranked live client in it;
   this peer counts as live.  Every member computes it alike, and the
   authority checks an admission's sender against it.  NULL when the
   group has no live member. */
cl_peer_t *cl_member_admitter(const cl_member_t *self);
/* The successor: the member the coordinator rule would name if the
   coordinator failed (the next live public member in rank order; NULL
   when there is none, or while a monitor coordinates).  A view or an
   admission it sends before this peer sees the coordinator fail is kept
   for then (docs/security.md §4). */
cl_peer_t *cl_member_successor(const cl_member_t *self);

/* Current epoch (0 = no view yet), settings, and whether the world group
   is formed. */
uint64_t cl_member_epoch(const cl_member_t *self);
/* The generation of the world group: the epoch of the view in which its
   members, weights or client flags last changed (0 = no view). */
uint64_t cl_member_group_epoch(const cl_member_t *self);
const cl_settings_t *cl_member_settings(const cl_member_t *self);
bool cl_member_group_closed(const cl_member_t *self);

/* Live members of the world group, in rank order, into out[cap]; returns
   the count (may exceed cap: then only cap were written). */
size_t cl_member_group(const cl_member_t *self, cl_peer_t **out, size_t cap);

/* Records that a message from key arrived at time now (members only). */
void cl_member_heard(cl_member_t *self, const uint8_t key[32], double now);

/* Records that a large data message of `bytes` from the peer with key
   arrived at time now: its record's measured bandwidth (an EWMA of bytes
   over the time since its previous one, when that lies in (1e-4 s, 1 s);
   each sample at most 1e10 bytes/s) and last_data; nothing for a key
   without a record.  The collective streams report them (their data
   deadlines read bandwidth); they hold the records read only, and name
   the sender by its key. */
void cl_member_data_seen(cl_member_t *self, const uint8_t key[32], size_t bytes, double now);

/* Members and monitors other than this peer, alive and not heard from since
   now - timeout, into out[cap]; returns the count written. */
size_t cl_member_silent(const cl_member_t *self, double now, double timeout, cl_peer_t **out,
                        size_t cap);

/* Forgets records of peers gone for more than `keep` seconds. */
void cl_member_purge(cl_member_t *self, double now, double keep);

#endif
