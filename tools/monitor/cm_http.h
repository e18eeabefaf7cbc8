/*  cm_http.h - collab-monitor's read-only web server (libmicrohttpd).

    Routes (docs/monitor.md): `/` the dashboard (server-drawn SVG plots,
    peer table, join line, refreshed every 5 s), `/metrics` (Prometheus
    text format), `/api/swarm`, `/api/peers`, `/api/series`,
    `/api/events` (JSON) and `/api/series.csv`, `/api/events.csv`.
    Only GET and HEAD; nothing it serves is secret (no swarm key, no
    identity).  One thread, inside libmicrohttpd.
*/
#ifndef CM_HTTP_H_INCLUDED
#define CM_HTTP_H_INCLUDED

#include "cm_state.h"
#include "cm_store.h"

#include <stddef.h>

typedef struct cm_http cm_http_t;

/* Serves on listen ("HOST:PORT", "[::1]:PORT"; port 0 = any free port).
   A host other than loopback is allowed with a warning.  Returns NULL
   after writing the reason into err. */
cm_http_t *cm_http_start(const char *listen, cm_state_t *st, cm_store_t *store, char *err,
                         size_t errlen);

/* Checks a --http value without serving: 0, or -1 with the reason in err. */
int cm_http_check(const char *listen, char *err, size_t errlen);

/* The URL it serves, e.g. "http://127.0.0.1:8080/". */
const char *cm_http_url(const cm_http_t *self);

void cm_http_stop(cm_http_t **self_p);

/* Rows of the series shown and served (the newest ones). */
#define CM_HTTP_ROWS 2000

#endif
