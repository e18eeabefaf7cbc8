/*  mpix_collab.h - mpicollab's MPI extensions and the ULFM calls.

    Included by mpicollab's mpi.h.  It can also be included after another
    MPI's mpi.h (MPICH or Open MPI) by a program that is compiled against
    that MPI and run on mpicollab (preloaded or as a replacement): every
    definition is guarded, and the ULFM error classes take the numbers of
    the MPI whose header came first (MPICH: 101/103, Open MPI: 75/77).

    Every extension has an environment-variable twin, so unchanged
    programs can use it too: MPIX_Collab_step <-> COLLAB_COLLECTIVES_PER_STEP,
    MPIX_Collab_set_weight <-> COLLAB_WEIGHT, MPIX_Collab_leave <->
    COLLAB_LEAVE_ON.
*/
#ifndef MPIX_COLLAB_H_INCLUDED
#define MPIX_COLLAB_H_INCLUDED

#if defined(__cplusplus)
extern "C" {
#endif

#ifndef MPICOLLAB_API
#define MPICOLLAB_API __attribute__((visibility("default")))
#endif

/* ---------------------------------------------------------------------- */
/* ULFM (user-level failure mitigation) error classes. */

#if defined(OPEN_MPI)
#ifndef MPIX_ERR_PROC_FAILED
#define MPIX_ERR_PROC_FAILED 75
#endif
#ifndef MPIX_ERR_PROC_FAILED_PENDING
#define MPIX_ERR_PROC_FAILED_PENDING 76
#endif
#ifndef MPIX_ERR_REVOKED
#define MPIX_ERR_REVOKED 77
#endif
#else /* the MPICH ABI */
#ifndef MPIX_ERR_PROC_FAILED
#define MPIX_ERR_PROC_FAILED MPICH_ERR_FIRST_MPIX + 1
#endif
#ifndef MPIX_ERR_PROC_FAILED_PENDING
#define MPIX_ERR_PROC_FAILED_PENDING MPICH_ERR_FIRST_MPIX + 2
#endif
#ifndef MPIX_ERR_REVOKED
#define MPIX_ERR_REVOKED MPICH_ERR_FIRST_MPIX + 3
#endif
#ifndef MPIX_ERR_EAGAIN
#define MPIX_ERR_EAGAIN MPICH_ERR_FIRST_MPIX + 4
#endif
#ifndef MPIX_ERR_NOREQ
#define MPIX_ERR_NOREQ MPICH_ERR_FIRST_MPIX + 5
#endif
#endif

/* ULFM calls.  In a swarm, absent peers are departures rather than
   failures (DESIGN section 2); these calls matter in strict mode
   (COLLAB_STRICT=1) and for point-to-point.
   MPIX_Comm_revoke marks comm revoked: later calls on it fail with
   MPIX_ERR_REVOKED.  MPIX_Comm_shrink creates a communicator over the
   live members.  MPIX_Comm_agree ANDs *flag over the live members.
   MPIX_Comm_failure_ack / _get_acked acknowledge and report failed
   members (a group caller must free). */
MPICOLLAB_API int MPIX_Comm_revoke(MPI_Comm comm);
MPICOLLAB_API int MPIX_Comm_shrink(MPI_Comm comm, MPI_Comm *newcomm);
MPICOLLAB_API int MPIX_Comm_failure_ack(MPI_Comm comm);
MPICOLLAB_API int MPIX_Comm_failure_get_acked(MPI_Comm comm, MPI_Group *failedgrp);
MPICOLLAB_API int MPIX_Comm_agree(MPI_Comm comm, int *flag);
MPICOLLAB_API int PMPIX_Comm_revoke(MPI_Comm comm);
MPICOLLAB_API int PMPIX_Comm_shrink(MPI_Comm comm, MPI_Comm *newcomm);
MPICOLLAB_API int PMPIX_Comm_failure_ack(MPI_Comm comm);
MPICOLLAB_API int PMPIX_Comm_failure_get_acked(MPI_Comm comm, MPI_Group *failedgrp);
MPICOLLAB_API int PMPIX_Comm_agree(MPI_Comm comm, int *flag);

/* ---------------------------------------------------------------------- */
/* Swarm extensions. */

/* Marks the top of a training step: the swarm admits joiners only at such
   boundaries.  Call it once per step, before the step's first collective.
   Without it the step period is learned, or set by
   COLLAB_COLLECTIVES_PER_STEP.  Returns MPI_SUCCESS or an error class. */
MPICOLLAB_API int MPIX_Collab_step(void);
MPICOLLAB_API int PMPIX_Collab_step(void);

/* Sets this peer's averaging weight for MPI_SUM (e.g. its local batch
   size); weight must be finite and > 0, else MPI_ERR_ARG.  The default is
   COLLAB_WEIGHT, or 1. */
MPICOLLAB_API int MPIX_Collab_set_weight(double weight);
MPICOLLAB_API int PMPIX_Collab_set_weight(double weight);

/* Leaves the swarm gracefully while the program runs on, as MPI_Finalize
   does (its contributions count in every collective it entered), and
   returns once the members acknowledged, at most 2 x COLLAB_TIMEOUT + 2 s
   (else MPI_ERR_OTHER; the leave goes on).  Afterwards every MPI call but
   MPI_Finalize fails with MPI_ERR_OTHER.  May be called from a signal
   handler (a program whose own SIGTERM handler replaced the one
   COLLAB_LEAVE_ON=SIGTERM installs). */
MPICOLLAB_API int MPIX_Collab_leave(void);
MPICOLLAB_API int PMPIX_Collab_leave(void);

/* Reports a named value of the program (e.g. "loss") to the swarm's
   monitors (collab-monitor): the latest value of each name goes out with
   this peer's next report (COLLAB_REPORT_INTERVAL).  name: 1 to 32
   characters of A-Z a-z 0-9 _ . (at most 16 names are kept, the oldest
   gives way); value finite.  MPI_ERR_ARG otherwise.  Cheap: it only
   stores the value.  The environment twin: COLLAB_REPORT_LOSS. */
MPICOLLAB_API int MPIX_Collab_report(const char *name, double value);
MPICOLLAB_API int PMPIX_Collab_report(const char *name, double value);

/* Tells which comm ranks took part in the last collective this peer
   completed on comm: *nranks = their number (at most
   MPIX_COLLAB_MAX_INFO_RANKS are reported), ranks[0..min(*nranks,
   maxranks)) = the ranks in ascending order.  If the last collective this
   peer completed ran on another communicator, or none completed yet, it
   fails with MPI_ERR_OTHER (the caller's arrays are left untouched). */
MPICOLLAB_API int MPIX_Collab_group(MPI_Comm comm, int maxranks, int ranks[], int *nranks);
MPICOLLAB_API int PMPIX_Collab_group(MPI_Comm comm, int maxranks, int ranks[], int *nranks);

#define MPIX_COLLAB_MAX_INFO_RANKS 1024

/* What MPIX_Collab_last_info reports about the last collective this peer
   completed.  The caller owns the structure (about 4 KiB). */
typedef struct MPIX_Collab_info {
    MPI_Comm comm;            /* communicator it ran on */
    int comm_size;            /* nominal size of that communicator */
    int group_size;           /* members that took part */
    int nranks;               /* entries used in ranks[] (<= MPIX_COLLAB_MAX_INFO_RANKS) */
    int reserved;             /* zero */
    MPI_Count sequence;       /* collective sequence number on comm */
    MPI_Count bytes_sent;     /* payload bytes this peer sent */
    MPI_Count bytes_received; /* payload bytes this peer received */
    double seconds;           /* wall time spent in the call */
    int ranks[MPIX_COLLAB_MAX_INFO_RANKS]; /* comm ranks that took part, ascending */
} MPIX_Collab_info;

/* Fills *info about the last collective this peer completed; fails with
   MPI_ERR_OTHER if none completed yet. */
MPICOLLAB_API int MPIX_Collab_last_info(MPIX_Collab_info *info);
MPICOLLAB_API int PMPIX_Collab_last_info(MPIX_Collab_info *info);

#if defined(__cplusplus)
}
#endif

#endif /* MPIX_COLLAB_H_INCLUDED */
