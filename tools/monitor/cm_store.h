/*  cm_store.h - collab-monitor's history in SQLite.

    One database file per run (--db): the time series (one row per tick
    of the swarm's state), the events (joins, failures), and the peers
    last seen alive, so that a restarted monitor shows the whole run and
    can find the swarm again.  Tables (docs/monitor.md):

      series(t, alive, step, steps_per_s, samples_per_s, loss, mbit_s, group_size)
      events(t, kind, rank, peer, address, detail)
      peers(id PRIMARY KEY, rank, address, client, alive, last_seen)
      meta(key PRIMARY KEY, value)

    The connection is serialised (SQLite's full mutex), so the main loop
    and the HTTP thread share it.
*/
#ifndef CM_STORE_H_INCLUDED
#define CM_STORE_H_INCLUDED

#include "cm_state.h"

#include <stddef.h>

typedef struct cm_store cm_store_t;

/* Opens (creates) the database at path; ":memory:" keeps nothing.
   Returns NULL after writing the reason into err. */
cm_store_t *cm_store_open(const char *path, char *err, size_t errlen);
void cm_store_close(cm_store_t **self_p);

/* Appends a sample / events.  Return 0 or -1 (logged). */
int cm_store_sample(cm_store_t *self, const cm_sample_t *s);
int cm_store_events(cm_store_t *self, const cm_event_t *ev, int n);
/* Replaces the peers table with the current picture of st (locks st). */
int cm_store_peers(cm_store_t *self, cm_state_t *st);

/* Puts the peers of the peers table into st as departed (alive false),
   so that a restarted monitor's table shows the whole run.  Locks st. */
void cm_store_load_peers(cm_store_t *self, cm_state_t *st);

/* meta values: run id; returns 0, or -1 when missing. */
int cm_store_meta_get(cm_store_t *self, const char *key, char *out, size_t len);
int cm_store_meta_set(cm_store_t *self, const char *key, const char *value);

/* The addresses of the peers alive at the last store, space separated,
   into out (empty when none).  For a restarted monitor's way back in. */
void cm_store_last_alive(cm_store_t *self, char *out, size_t len);

/* Rows of the time series, oldest first, at most `limit` (the newest
   ones).  Calls fn for each; returns the row count or -1. */
typedef void(cm_row_fn)(void *arg, const cm_sample_t *s);
int cm_store_series(cm_store_t *self, int limit, cm_row_fn *fn, void *arg);

/* Events, oldest first, at most `limit` (the newest). */
typedef void(cm_event_fn)(void *arg, const cm_event_t *e);
int cm_store_events_list(cm_store_t *self, int limit, cm_event_fn *fn, void *arg);

/* Row counts (-1 on error). */
long cm_store_count(cm_store_t *self, const char *table);

#endif
