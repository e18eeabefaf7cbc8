/*  cl_comm.h - communicators (the struct behind collab_comm_t).

    A communicator is immutable once made, except for its count of
    children and its counts of group creations (under a lock): its id,
    nominal size, this peer's rank and the map from comm ranks to world
    ranks.  Ids of derived communicators are computed from
    the parent id, the creation index and the colour, so that every peer
    (and a late joiner running the same program) names them alike.
    Application threads and the engine thread read it without locks.
*/
#ifndef CL_COMM_H_INCLUDED
#define CL_COMM_H_INCLUDED

#include "mpi_collab.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define CL_COMM_WORLD_ID 1u /* id of the world communicator */
#define CL_COMM_SELF_ID 2u  /* id of every peer's self communicator */

typedef enum { CL_COMM_WORLD = 0, CL_COMM_SELF = 1, CL_COMM_DERIVED = 2 } cl_comm_kind_t;

struct collab_comm {
    uint64_t id;             /* see above */
    cl_comm_kind_t kind;     /* world, self or derived */
    int size;                /* nominal size */
    int rank;                /* this peer's rank */
    int *world_of;           /* comm rank -> world rank (size entries); NULL for world */
    int *by_world;           /* sorted pairs (world rank, comm rank) for reverse lookup */
    atomic_uint children;    /* dup/split calls made on it so far */
    pthread_mutex_t lock;    /* guards the two fields below */
    uint64_t *group_keys;    /* pairs (key of a member list and tag, count) */
    int ngroup_keys;         /* pairs in group_keys */
    /* The same-host fast path (cl_fast.h): made, attached and granted by
       the engine, used by application threads; freed by the engine. */
    struct cl_fast *_Atomic fast;
    _Atomic int coll_pending; /* collectives submitted to the engine, not complete */
    /* All-reduces through host leaders (cl_api_hier.c), decided at the
       first all-reduce that could use them; application threads only. */
    _Atomic int hier;                 /* CL_HIER_* */
    struct collab_comm *hier_local;   /* this peer's host: NULL when alone on it */
    struct collab_comm *hier_leaders; /* one member per host: NULL unless this peer leads */
};

enum { CL_HIER_UNDECIDED = 0, CL_HIER_FLAT = 1, CL_HIER_LEADERS = 2 };

/* The world communicator of a peer at world rank `rank` of `size`.
   NULL on allocation failure.  Caller owns. */
collab_comm_t *cl_comm_new_world(int size, int rank);

/* The self communicator of the peer at world rank `world_rank`. */
collab_comm_t *cl_comm_new_self(int world_rank);

/* A derived communicator: `size` members, world_of[r] their world ranks
   (copied), this peer at `rank`.  NULL on allocation failure. */
collab_comm_t *cl_comm_new_derived(uint64_t id, int size, int rank, const int *world_of);

/* Frees and nulls *comm_p; accepts NULL. */
void cl_comm_destroy(collab_comm_t **comm_p);

/* World rank of comm rank r, or -1 when r is out of range. */
int cl_comm_world_of(const collab_comm_t *comm, int r);

/* Comm rank of world rank w, or -1 when w is not in the communicator. */
int cl_comm_rank_of_world(const collab_comm_t *comm, int w);

/* Id of the index-th child of parent with the given colour (dup uses
   colour -1).  Never 0, CL_COMM_WORLD_ID or CL_COMM_SELF_ID. */
uint64_t cl_comm_child_id(uint64_t parent, uint32_t index, int colour);

/* Id of a communicator made over a subset of parent (MPI_Comm_create_group):
   derived from the parent id, the members' world ranks in order, the tag,
   and how many times this peer made the same (members, tag) before, which
   it counts on parent.  Only the members call it, so the parent's child
   count (which every rank advances) is left alone.  0 when out of memory. */
uint64_t cl_comm_group_id(collab_comm_t *parent, const int *world_of, int n, int tag);

#endif
