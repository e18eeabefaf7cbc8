/*  cl_api_hier.c - all-reduces through host leaders (docs/collectives.md
    §5c): a host's peers act as one node toward the others.

    In strict mode (COLLAB_STRICT=1, plain MPI semantics: every rank
    takes part or the call fails), a blocking all-reduce of at least
    HIER_MIN_BYTES with a predefined op, on a communicator whose members
    sit on two hosts or more and several on one host, runs in three
    steps, as MPI libraries' node-aware collectives do:
      1. a reduction to the host's leader (its lowest comm rank), through
         shared memory (the fast path, cl_fast.h, when granted; else the
         engine over the host's shared-memory links);
      2. an all-reduce among the leaders, one per host, over the network;
      3. a broadcast from the leader to its host's peers.
    A host's link then carries one all-reduce's traffic instead of one
    per peer.  Every member gets the leader's bits: results agree bit for
    bit.  The order of summation differs from the flat path's (MPI
    promises no order).

    Not used in swarm mode: there a collective goes on without the peers
    that fail and counts each contributor with its weight, which needs
    every member's contribution on the network path (the relay rule,
    bitwise agreement under failure).  Nor with compression, robust
    aggregation, validation, weights other than 1 or device buffers
    (eng_coll_hier_ok, cl_device_active): the communicator stays flat.

    The decision.  At a communicator's first all-reduce that could go
    through leaders, every member (all are in the same call, as MPI
    requires) waits for a barrier, then exchanges its host key
    (cl_shm_host_key) and whether it may (eng_coll_hier_ok); all decide
    alike from the same table.  The communicators of each host and of the
    leaders are derived from the parent with the next two child indices
    (every member takes both, so later splits and dups name alike).

    Failures.  Every member goes through all three steps whatever an
    earlier one returned, so nobody waits for a member that gave up.  A
    leader's reduction result travels to the other leaders in a small
    all-reduce (MIN of the status codes) posted before the data's, and a
    leader broadcasts the combined status to its host before the data: a
    failure on one host fails the call on every host, as a failed rank
    fails a strict collective everywhere.
*/
#include "engine/cl_api_int.h"

#include "engine/cl_comm.h"
#include "engine/cl_shm.h"
#include "util/cl_device.h"
#include "util/cl_log.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define HIER_MIN_BYTES 65536 /* smaller all-reduces stay flat: latency, not links, bounds them */
#define HIER_DECIDING 3      /* comm->hier while the deciding thread works */

static atomic_int s_in_use; /* communicators through leaders (cl_hier_in_use) */

typedef struct {
    uint64_t host; /* cl_shm_host_key, 0 when unknown */
    uint32_t ok;   /* 1: this member may go through leaders */
    uint32_t pad;
} hier_entry_t;

/* A derived communicator over the comm ranks `ranks` (n, ascending) of
   parent, with id child `idx` of colour `colour`; its hier is preset
   flat (it never splits again).  NULL on allocation failure. */
static collab_comm_t *derive(collab_comm_t *parent, const int *ranks, int n, uint32_t idx,
                             int colour)
{
    int *map = malloc((size_t)n * sizeof *map);
    if (map == NULL)
        return NULL;
    int me = -1;
    for (int i = 0; i < n; i++) {
        map[i] = cl_comm_world_of(parent, ranks[i]);
        if (ranks[i] == parent->rank)
            me = i;
    }
    collab_comm_t *c =
        me >= 0 ? cl_comm_new_derived(cl_comm_child_id(parent->id, idx, colour), n, me, map) : NULL;
    free(map);
    if (c != NULL)
        atomic_store(&c->hier, CL_HIER_FLAT);
    return c;
}

/* From everybody's entries: through leaders when all may, the members
   lie on two hosts or more and some host holds two or more.  Sets
   comm's host communicators.  Returns CL_HIER_FLAT or CL_HIER_LEADERS,
   or a negative COLLAB_ERR_* (out of memory). */
static int plan(collab_comm_t *comm, const hier_entry_t *all)
{
    int n = comm->size;
    int *leader = malloc((size_t)n * sizeof *leader); /* comm rank of r's host's leader */
    int *ranks = malloc((size_t)n * sizeof *ranks);
    if (leader == NULL || ranks == NULL) {
        free(leader);
        free(ranks);
        return COLLAB_ERR_NO_MEM;
    }
    bool ok = true;
    int hosts = 0;
    for (int r = 0; r < n; r++) {
        ok &= all[r].ok == 1 && all[r].host != 0;
        leader[r] = r;
        for (int q = 0; q < r; q++)
            if (all[q].host == all[r].host) {
                leader[r] = leader[q];
                break;
            }
        hosts += leader[r] == r;
    }
    /* Both indices are taken whatever is decided: later splits and dups
       of comm must not depend on it. */
    uint32_t idx_local = atomic_fetch_add(&comm->children, 1);
    uint32_t idx_leaders = atomic_fetch_add(&comm->children, 1);
    int rc = CL_HIER_FLAT;
    if (ok && hosts >= 2 && hosts < n) {
        int mine = leader[comm->rank], k = 0;
        for (int r = 0; r < n; r++)
            if (leader[r] == mine)
                ranks[k++] = r;
        collab_comm_t *local = k > 1 ? derive(comm, ranks, k, idx_local, mine) : NULL;
        k = 0;
        for (int r = 0; r < n; r++)
            if (leader[r] == r)
                ranks[k++] = r;
        collab_comm_t *leaders = mine == comm->rank ? derive(comm, ranks, k, idx_leaders, 0) : NULL;
        int own = 0; /* members on this host */
        for (int r = 0; r < n; r++)
            own += leader[r] == mine;
        if ((own > 1 && local == NULL) || (mine == comm->rank && leaders == NULL)) {
            cl_comm_destroy(&local);
            cl_comm_destroy(&leaders);
            rc = COLLAB_ERR_NO_MEM;
        } else {
            comm->hier_local = local;
            comm->hier_leaders = leaders;
            rc = CL_HIER_LEADERS;
            cl_info("all-reduces of %d KiB or more on communicator %016llx go through host "
                    "leaders: %d hosts, %d members on this one (its leader: rank %d)",
                    HIER_MIN_BYTES / 1024, (unsigned long long)comm->id, hosts, own, mine);
        }
    }
    free(leader);
    free(ranks);
    return rc;
}

/* The decision (see the top), made by all members in the same call.
   Returns CL_HIER_FLAT or CL_HIER_LEADERS, or a COLLAB_ERR_* of the
   exchange (nothing decided: the next call tries again). */
static int decide(collab_comm_t *comm)
{
    int n = comm->size;
    hier_entry_t *all = calloc((size_t)n, sizeof *all);
    size_t *counts = malloc((size_t)n * sizeof *counts);
    size_t *displs = malloc((size_t)n * sizeof *displs);
    int rc = COLLAB_ERR_NO_MEM;
    if (all == NULL || counts == NULL || displs == NULL)
        goto done;
    /* The barrier: every member has joined the group before it says
       whether it may (eng_coll_hier_ok needs the group closed). */
    rc = collab_barrier(comm, NULL);
    if (rc != COLLAB_OK)
        goto done;
    hier_entry_t mine = {0, 0, 0};
    if (cl_shm_host_key(&mine.host) != 0)
        mine.host = 0;
    cl_engine_t *e = cl_api_engine();
    mine.ok = e != NULL && cl_engine_host_leader_ok(e) && !cl_device_active() ? 1 : 0;
    for (int r = 0; r < n; r++) {
        counts[r] = sizeof(hier_entry_t);
        displs[r] = (size_t)r * sizeof(hier_entry_t);
    }
    rc = collab_allgatherv(comm, &mine, sizeof mine, all, counts, displs, NULL);
    if (rc == COLLAB_OK)
        rc = plan(comm, all);
done:
    free(all);
    free(counts);
    free(displs);
    return rc;
}

/* Step 1 at a leader (sendbuf NULL: in place) or another member. */
static int reduce_in_host(collab_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                          collab_dtype_t dtype, const collab_op_t *op, bool leads)
{
    collab_comm_t *local = comm->hier_local;
    if (local == NULL) { /* alone on this host */
        if (sendbuf != NULL && count > 0)
            memcpy(recvbuf, sendbuf, count * collab_dtype_extent(dtype));
        return COLLAB_OK;
    }
    if (leads)
        return collab_reduce(local, sendbuf, recvbuf, count, dtype, op, 0, NULL);
    return collab_reduce(local, sendbuf != NULL ? sendbuf : recvbuf, NULL, count, dtype, op, 0,
                         NULL);
}

/* Step 2 at a leader: the data's all-reduce among leaders, and the
   leaders' status (the lowest code: any error wins over COLLAB_OK). */
static int across_hosts(collab_comm_t *comm, void *recvbuf, size_t count, collab_dtype_t dtype,
                        const collab_op_t *op, int status)
{
    collab_comm_t *leaders = comm->hier_leaders;
    int32_t mine = status, lowest = status;
    collab_op_t min = {.kind = COLLAB_OP_MIN};
    collab_request_t *sreq = NULL;
    int rc = collab_allreduce(leaders, &mine, &lowest, 1, COLLAB_INT32, &min, &sreq);
    int rc_data = collab_allreduce(leaders, NULL, recvbuf, count, dtype, op, NULL);
    if (rc == COLLAB_OK)
        rc = collab_wait(&sreq, NULL);
    if (rc != COLLAB_OK)
        return rc;
    if (lowest != COLLAB_OK) /* another host's reduction failed: a peer there failed */
        return status != COLLAB_OK ? status : COLLAB_ERR_PROC_FAILED;
    return rc_data;
}

/* Step 3: the leader's status, then (when good) its result. */
static int back_to_host(collab_comm_t *comm, void *recvbuf, size_t count, collab_dtype_t dtype,
                        int status)
{
    collab_comm_t *local = comm->hier_local;
    if (local == NULL)
        return status;
    int32_t st = status;
    int rc = collab_bcast(local, &st, sizeof st, 0, NULL);
    if (rc != COLLAB_OK)
        return rc;
    if (st != COLLAB_OK)
        return st;
    return collab_bcast(local, recvbuf, count * collab_dtype_extent(dtype), 0, NULL);
}

int cl_hier_allreduce(collab_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                      collab_dtype_t dtype, const collab_op_t *op, int *rc_out)
{
    /* Whether to decide at all depends only on what every member shares:
       the swarm's strictness and the call's arguments. */
    int state = atomic_load(&comm->hier);
    cl_engine_t *e = cl_api_engine();
    if (state == CL_HIER_FLAT || e == NULL || !cl_engine_strict(e) ||
        op->kind == COLLAB_OP_USER || comm->size < 3 ||
        count * collab_dtype_extent(dtype) < HIER_MIN_BYTES)
        return 0;
    if (state == CL_HIER_UNDECIDED) {
        int expect = CL_HIER_UNDECIDED;
        if (!atomic_compare_exchange_strong(&comm->hier, &expect, HIER_DECIDING))
            return 0; /* another thread decides (an erroneous program: two at once) */
        int d = decide(comm);
        atomic_store(&comm->hier, d >= 0 ? d : CL_HIER_UNDECIDED);
        if (d < 0) {
            *rc_out = d;
            return 1;
        }
        if (d == CL_HIER_LEADERS)
            atomic_fetch_add(&s_in_use, 1);
        state = d;
    }
    if (state != CL_HIER_LEADERS)
        return 0;
    bool leads = comm->hier_leaders != NULL;
    int rc = reduce_in_host(comm, sendbuf, recvbuf, count, dtype, op, leads);
    if (leads)
        rc = across_hosts(comm, recvbuf, count, dtype, op, rc);
    int rc3 = back_to_host(comm, recvbuf, count, dtype, leads ? rc : COLLAB_OK);
    *rc_out = rc != COLLAB_OK ? rc : rc3;
    return 1;
}

int cl_hier_free(collab_comm_t *comm)
{
    int rc = COLLAB_OK;
    if (atomic_load(&comm->hier) == CL_HIER_LEADERS)
        atomic_fetch_sub(&s_in_use, 1);
    if (comm->hier_local != NULL)
        rc = collab_comm_free(&comm->hier_local);
    if (comm->hier_leaders != NULL) {
        int rc2 = collab_comm_free(&comm->hier_leaders);
        if (rc == COLLAB_OK)
            rc = rc2;
    }
    return rc;
}

bool cl_hier_in_use(void)
{
    return atomic_load(&s_in_use) > 0;
}
