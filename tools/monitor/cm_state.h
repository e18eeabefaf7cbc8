/*  cm_state.h - what collab-monitor knows about its swarm right now.

    The engine's hooks (engine thread) write here: the view (who is a
    member, ranks, addresses), each member's latest REPORT, and joins and
    failures as events.  The main loop samples it every tick into one row
    of the time series (cm_store), and the HTTP thread reads it for the
    peer table and /metrics.  One mutex guards everything; no call blocks
    on anything but that mutex.
*/
#ifndef CM_STATE_H_INCLUDED
#define CM_STATE_H_INCLUDED

#include "engine/cl_engine.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define CM_PEERS_MAX 4096  /* members tracked at once */
#define CM_EVENTS_MAX 1024 /* events waiting to be stored */

/* One peer, member now or before. */
typedef struct {
    char id[64];           /* base58 peer id */
    char address[520];     /* announced multiaddr, "" for clients */
    int rank;              /* world rank (last held) */
    bool monitor;          /* a monitor entry */
    bool client;           /* client mode */
    bool alive;            /* in the current view */
    bool in_group;         /* member of the world group */
    double first_seen;     /* wall-clock seconds */
    double last_seen;      /* wall-clock seconds of its last report (0: none) */
    bool has_report;       /* rep is valid */
    cl_wire_report_t rep;  /* its latest report */
    cl_wire_report_t prev; /* the report before, for rates */
    double prev_t;         /* when prev arrived (0: none) */
    double rep_t;          /* when rep arrived */
    bool straggler;        /* waited for, or taken out of the group as late */
} cm_peer_t;

typedef struct {
    double t;      /* wall-clock seconds */
    char kind[16]; /* "joined", "failed", "left", "ungrouped" */
    int rank;      /* -1 for a monitor */
    char peer[64]; /* peer id */
    char address[520];
    char detail[128];
} cm_event_t;

/* One sample of the whole swarm (a row of the time series). */
typedef struct {
    double t;             /* wall-clock seconds */
    int alive;            /* ranked members in the view */
    uint64_t step;        /* highest step reported by a live member */
    double steps_per_s;   /* from the two latest reports of each member */
    double samples_per_s; /* sum of steps/s x weight */
    bool has_loss;
    double loss;    /* mean of the live members' latest "loss" */
    double mbit_s;  /* collective traffic sent, all members, Mbit/s */
    int group_size; /* largest group size reported */
} cm_sample_t;

typedef struct {
    pthread_mutex_t mu;
    cm_peer_t *peers; /* CM_PEERS_MAX entries */
    int npeers;
    cm_event_t *events; /* not yet stored (CM_EVENTS_MAX) */
    int nevents;
    uint64_t events_total[4]; /* per CL_EVENT_* since start */
    uint64_t reports_total;
    uint64_t epoch; /* of the current view */
    int world_size, target_group, compression;
    bool strict;
    char join_line[600]; /* "COLLAB_INITIAL_PEERS=..." */
    char run_id[160];
    double started; /* wall-clock seconds */
    cl_relay_stats_t relay; /* the relay's totals (copied by the main loop) */
    const cl_engine_t *engine; /* set while the engine runs, for its relay totals */
} cm_state_t;

/* Zeroes and initialises *st.  Returns 0, or -1 out of memory. */
int cm_state_init(cm_state_t *st);
void cm_state_fini(cm_state_t *st);

/* The hooks that feed *st (arg = st). */
cl_engine_hooks_t cm_state_hooks(cm_state_t *st);

/* Computes the current sample (locks). */
void cm_state_sample(cm_state_t *st, double now, cm_sample_t *out);

/* Moves the pending events into out[cap]; returns their count (locks). */
int cm_state_take_events(cm_state_t *st, cm_event_t *out, int cap);

/* Wall-clock seconds (gettimeofday). */
double cm_wall(void);

#endif
