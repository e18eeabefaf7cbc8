/*  cr_run.h - one collab-run invocation: its peers, its faults and the
    loop that watches them.

    Peers are kept in slots in the order they were started: slots 0..N-1
    are the original peers (slot i asks for rank i), later slots are peers
    started by chaos faults.  The loop is driven by poll() on a signalfd
    (SIGCHLD and the forwarded signals) and on the peers' output pipes,
    with its timeout set to the next due time event; it never busy-polls.
*/
#ifndef CR_RUN_H_INCLUDED
#define CR_RUN_H_INCLUDED

#include "cr_elf.h"
#include "cr_opts.h"
#include "cr_output.h"
#include "cr_swarm.h"

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

/* Why collab-run itself ended a peer (such peers do not count toward the
   exit status). */
typedef enum {
    CR_BY_NOBODY = 0, /* it ended on its own (or by a signal from outside) */
    CR_BY_CHAOS,      /* kill:... fault */
    CR_BY_TIMEOUT,    /* --timeout */
    CR_BY_INTERRUPT,  /* a second SIGINT/SIGTERM: SIGKILL for everyone */
} cr_killer_t;

typedef struct cr_run cr_run_t;

typedef struct {
    cr_run_t *run;           /* back pointer, for output callbacks */
    int slot;                /* index in run->peers */
    int rank;                /* rank asked for (COLLAB_RANK), -1 for any */
    int started_no;          /* 0 for original peers, K for the K-th started */
    char name[32];           /* "rank 2" or "peer +1", for messages */
    char tag[32];            /* "[2] " or "[+1] " */
    pid_t pid;               /* also its process group id */
    bool running;            /* not reaped yet */
    bool stopped;            /* SIGSTOPped by a fault, SIGCONT pending */
    double cont_at;          /* when the SIGCONT is due (seconds since start) */
    cr_killer_t killed_by;   /* set when collab-run killed it on purpose */
    int wstatus;             /* waitpid status once reaped */
    double t_start, t_end;   /* seconds since start */
    int port;                /* its loopback listen port */
    char cpus[256];          /* cores it is bound to (Linux cpu list), "" = not bound */
    char key_path[PATH_MAX]; /* its identity file */
    char peer_id[64];        /* base58 peer id of that identity */
    cr_stream_t out, err;    /* its stdout and stderr pipes */
} cr_peer_t;

struct cr_run {
    cr_opts_t *opts;            /* parsed command line */
    char prog[PATH_MAX];        /* absolute path of the program */
    cr_abi_t abi;               /* ABI in use */
    char preload[PATH_MAX];     /* preload mode: library to preload */
    char replace_dir[PATH_MAX]; /* replace mode: folder for LD_LIBRARY_PATH */
    cr_swarm_t *swarm;          /* key folder and ports */
    const char *user_peers;     /* COLLAB_INITIAL_PEERS from the environment, or NULL */
    bool user_rank, user_identity, user_listen, user_announce; /* set by the user (n == 1) */
    bool user_matchmaking; /* COLLAB_MATCHMAKING_TIME set by the user */
    cr_peer_t **peers;     /* every peer ever started, by slot */
    size_t npeers, cappeers;
    int nstarted;    /* peers started by faults so far */
    double t0;       /* CLOCK_MONOTONIC at start */
    int sigfd;       /* signalfd */
    int interrupted; /* first forwarded SIGINT/SIGTERM/SIGHUP, or 0 */
    int escalated;   /* signal that made collab-run SIGKILL everyone, or 0 */
    bool timed_out;  /* --timeout expired */
    bool run_error;  /* collab-run failed to do something it had to */
};

/* Seconds since the run started. */
double cr_run_now(const cr_run_t *run);

/* Prepares and starts a peer in the next slot (cr_run_prepare, then
   cr_run_start).  Returns the peer (owned by run), or NULL with the
   reason logged. */
cr_peer_t *cr_run_launch(cr_run_t *run, int rank, int started_no);

/* Prepares a peer in the next slot (identity file and reserved port)
   without starting it, so that every original peer's address is known
   before any of them starts.  rank is the rank to ask for (-1: any),
   started_no the K of a peer started by a fault (0 for an original peer).
   Returns the peer (owned by run), or NULL (reason logged). */
cr_peer_t *cr_run_prepare(cr_run_t *run, int rank, int started_no);

/* Builds a prepared peer's environment and starts it (fork, own process
   group, exec).  Reserved ports must have been released.  Returns 0, or
   -1 (reason logged). */
int cr_run_start(cr_run_t *run, cr_peer_t *peer);

/* Runs the loop until every peer has ended and no fault can start more.
   Returns collab-run's exit status. */
int cr_run_loop(cr_run_t *run);

/* Kills (SIGKILL, process group) every running peer and reaps them; used
   when start-up fails half way. */
void cr_run_abort(cr_run_t *run);

/* Frees the peers and their streams. */
void cr_run_free_peers(cr_run_t *run);

#endif
