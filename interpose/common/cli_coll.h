/*  cli_coll.h - helpers shared by the collective bindings.

    A collective call runs blocking (request == NULL) or nonblocking; both
    paths build a cli_coll_aux_t that owns what the core needs until the
    operation completes (per-rank byte arrays, a temporary vector, the
    user-op context) and is released by cli_coll_finish().
*/
#ifndef CLI_COLL_H_INCLUDED
#define CLI_COLL_H_INCLUDED

#include "cli.h"

#include <stdint.h>

typedef struct {
    cli_comm_t *comm;       /* for MPIX_Collab_* bookkeeping */
    size_t *counts;         /* per-rank byte counts (owned) */
    size_t *displs;         /* per-rank byte displacements (owned) */
    void *tmp;              /* temporary vector (owned) */
    const void *src;        /* at completion, copy src + off ... */
    void *dst;              /* ... to dst ... */
    size_t off, len;        /* ... len bytes (src, dst not owned) */
    cli_user_op_ctx_t uctx; /* state of a user op */
} cli_coll_aux_t;

/* Counts or displacements given as int[] or as MPI_Count[] / MPI_Aint[]. */
typedef struct {
    const int *i;
    const MPI_Count *c;
    const MPI_Aint *a;
} cli_vec_t;

static inline MPI_Count cli_vec_at(cli_vec_t v, int k)
{
    return v.i ? v.i[k] : v.c ? v.c[k] : v.a[k];
}

/* Starts a collective: checks comm is live and returns its auxiliary
   record (caller owns it: cli_coll_end, _nothing or _abort free it).
   On failure returns NULL and sets *rc to the MPI error already raised
   through the error handler. */
cli_coll_aux_t *cli_coll_begin(cli_call_t *call, int *rc);
/* Ends it: st/req are what the core call returned.  Blocking: completes
   and reports; nonblocking: wraps req into *request. */
int cli_coll_end(cli_call_t *call, cli_coll_aux_t *a, int st, collab_request_t *req,
                 MPI_Request *request, const char *what);
/* Releases a that was never handed to the core. */
int cli_coll_abort(cli_coll_aux_t *a, int rc);
/* A nonblocking collective that has nothing to do completes at once. */
int cli_coll_nothing(cli_call_t *call, cli_coll_aux_t *a, MPI_Request *request);

/* Resolves a datatype argument that the table could not check (it is
   significant only on some ranks): committed and valid. */
int cli_coll_type(cli_call_t *call, MPI_Datatype h, const char *arg, cli_type_t **out);
/* count * extent in bytes, with MPI_ERR_COUNT on a negative count or overflow. */
int cli_coll_bytes(cli_call_t *call, cli_type_t *t, MPI_Count count, const char *arg, size_t *out);
/* A receive/send buffer that must hold `bytes`: not NULL, not MPI_IN_PLACE. */
int cli_coll_buf(cli_call_t *call, const void *buf, size_t bytes, const char *arg);
/* 1 if the byte ranges [a, a + alen) and [b, b + blen) overlap: the
   standard forbids aliased send and receive buffers (MPI_ERR_BUFFER). */
static inline int cli_overlap(const void *a, size_t alen, const void *b, size_t blen)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return alen > 0 && blen > 0 && a != MPI_IN_PLACE && b != MPI_IN_PLACE && x < y + blen &&
           y < x + alen;
}

/* Fills a->counts / a->displs (n entries) from program arrays scaled by extent. */
int cli_coll_vectors(cli_call_t *call, cli_coll_aux_t *a, int n, cli_vec_t counts, cli_vec_t displs,
                     MPI_Count extent, const char *cname, const char *dname);

/* Non-contiguous datatypes (cli_coll_sparse.c): 1 when h is a valid
   datatype with a type map; the staged forms of the collectives, called
   by cli_coll.c and cli_gather.c when a significant type has a map. */
int cli_sparse_type(MPI_Datatype h);
int cli_sparse_bcast(cli_call_t *call, void *buffer, MPI_Count count, MPI_Datatype datatype,
                     int root, MPI_Request *request);
int cli_sparse_allgatherv(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                          MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                          cli_vec_t rcounts, cli_vec_t displs, MPI_Datatype recvtype, int uniform,
                          MPI_Request *request);
int cli_sparse_gatherv(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                       MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, cli_vec_t rcounts,
                       cli_vec_t displs, MPI_Datatype recvtype, int root, int uniform,
                       MPI_Request *request);
int cli_sparse_scatterv(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                        cli_vec_t scounts, cli_vec_t displs, MPI_Datatype sendtype, void *recvbuf,
                        MPI_Count recvcount, MPI_Datatype recvtype, int root, int uniform,
                        MPI_Request *request);
/* The all-to-all engine (cli_alltoallv.c) for a non-contiguous alltoall. */
int cli_sparse_alltoall(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                        MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                        MPI_Datatype recvtype, MPI_Request *request);
/* User ops on elements the core cannot carry (cli_coll_fold.c):
   cli_fold_needed says whether (op, datatype) must take this path;
   cli_fold_reduce runs Allreduce (root -1) or Reduce by gathering the
   packed contributions and folding them in rank order. */
int cli_fold_needed(MPI_Op op, MPI_Datatype datatype);
int cli_fold_reduce(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                    MPI_Datatype datatype, MPI_Op op, int root, MPI_Request *request);
/* The same for Scan/Exscan (exclusive 1) and for Reduce_scatter(_block):
   total elements in the vector, this rank's block of `mine` elements
   after `before` elements. */
int cli_fold_scan(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                  MPI_Datatype datatype, MPI_Op op, int exclusive, MPI_Request *request);
int cli_fold_rs(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count total,
                MPI_Count before, MPI_Count mine, MPI_Datatype datatype, MPI_Op op,
                MPI_Request *request);

#endif
