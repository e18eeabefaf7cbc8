/*  cm_http.c - collab-monitor's read-only web server (cm_http.h).

    Every answer is built in memory from the live state (cm_state) and the
    history (cm_store), then handed to libmicrohttpd.  The dashboard draws
    its plots on the server as SVG: a polyline and one circle per row of
    the series (so a browser test can count them against /api/series),
    with no script and no third-party code; a meta refresh reloads it.
    Text from the network (addresses, peer ids, failure reasons) is
    escaped for HTML, JSON and CSV.
*/
#include "cm_http.h"

#include "util/cl_log.h"

#include <arpa/inet.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

struct cm_http {
    struct MHD_Daemon *d;
    cm_state_t *st;
    cm_store_t *store;
    char url[128];
};

/* ---------------------------------------------------------------------- */
/* A growing text buffer; on allocation failure it stays truncated and
   flags oom (the request then gets 500). */

typedef struct {
    char *p;
    size_t len, cap;
    bool oom;
} buf_t;

static void __attribute__((format(printf, 2, 3))) bp(buf_t *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p != NULL ? b->p + b->len : NULL, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = true;
            return;
        }
        if (b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap > 0 ? b->cap * 2 : 4096;
        while (cap <= b->len + (size_t)n)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (q == NULL) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
}

/* HTML text (also inside attributes). */
static void bp_html(buf_t *b, const char *s)
{
    for (; *s != '\0'; s++) {
        switch (*s) {
        case '<':
            bp(b, "&lt;");
            break;
        case '>':
            bp(b, "&gt;");
            break;
        case '&':
            bp(b, "&amp;");
            break;
        case '"':
            bp(b, "&quot;");
            break;
        case '\'':
            bp(b, "&#39;");
            break;
        default:
            if ((unsigned char)*s < 0x20)
                bp(b, "?");
            else
                bp(b, "%c", *s);
        }
    }
}

/* A JSON string, quotes included. */
static void bp_json(buf_t *b, const char *s)
{
    bp(b, "\"");
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            bp(b, "\\%c", c);
        else if (c < 0x20)
            bp(b, "\\u%04x", c);
        else
            bp(b, "%c", c);
    }
    bp(b, "\"");
}

/* A CSV field, quoted. */
static void bp_csv(buf_t *b, const char *s)
{
    bp(b, "\"");
    for (; *s != '\0'; s++) {
        if (*s == '"')
            bp(b, "\"\"");
        else if ((unsigned char)*s < 0x20)
            bp(b, " ");
        else
            bp(b, "%c", *s);
    }
    bp(b, "\"");
}

/* A number for JSON (finite) or null. */
static void bp_num(buf_t *b, double v)
{
    if (isfinite(v))
        bp(b, "%.6g", v);
    else
        bp(b, "null");
}

/* ---------------------------------------------------------------------- */
/* History into arrays. */

typedef struct {
    cm_sample_t *rows;
    int n, cap;
} rows_t;

static void collect_row(void *arg, const cm_sample_t *s)
{
    rows_t *r = arg;
    if (r->n == r->cap) {
        int cap = r->cap > 0 ? r->cap * 2 : 256;
        cm_sample_t *q = realloc(r->rows, (size_t)cap * sizeof *q);
        if (q == NULL)
            return;
        r->rows = q;
        r->cap = cap;
    }
    r->rows[r->n++] = *s;
}

typedef struct {
    cm_event_t *ev;
    int n, cap;
} events_t;

static void collect_event(void *arg, const cm_event_t *e)
{
    events_t *r = arg;
    if (r->n == r->cap) {
        int cap = r->cap > 0 ? r->cap * 2 : 64;
        cm_event_t *q = realloc(r->ev, (size_t)cap * sizeof *q);
        if (q == NULL)
            return;
        r->ev = q;
        r->cap = cap;
    }
    r->ev[r->n++] = *e;
}

/* The plotted series, in the order of the dashboard. */
typedef struct {
    const char *key; /* JSON field and element id */
    const char *title;
    const char *color;
} series_def_t;

static const series_def_t s_series[] = {
    {"alive", "Alive peers", "#2b6cb0"},
    {"steps_per_s", "Steps per second", "#2f855a"},
    {"samples_per_s", "Samples per second", "#805ad5"},
    {"loss", "Loss (mean reported)", "#c53030"},
    {"mbit_s", "Network, Mbit/s sent", "#b7791f"},
    {"group_size", "Group size", "#319795"},
};
#define NSERIES (sizeof s_series / sizeof s_series[0])

/* Value of series k in row s; false when the row has none. */
static bool series_value(size_t k, const cm_sample_t *s, double *v)
{
    switch (k) {
    case 0:
        *v = s->alive;
        return true;
    case 1:
        *v = s->steps_per_s;
        return true;
    case 2:
        *v = s->samples_per_s;
        return true;
    case 3:
        *v = s->loss;
        return s->has_loss;
    case 4:
        *v = s->mbit_s;
        return true;
    default:
        *v = s->group_size;
        return true;
    }
}

static void clock_text(double t, char *out, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, len, "%H:%M:%S", &tm);
}

#define PW 440.0 /* plot width and height, and margins */
#define PH 170.0
#define ML 52.0
#define MR 10.0
#define MT 12.0
#define MB 22.0

/* One plot as SVG: axes, min/max labels, a polyline, a circle per row. */
static void plot(buf_t *b, size_t k, const rows_t *r, double t0, double t1)
{
    double lo = INFINITY, hi = -INFINITY, v;
    for (int i = 0; i < r->n; i++)
        if (series_value(k, &r->rows[i], &v)) {
            lo = fmin(lo, v);
            hi = fmax(hi, v);
        }
    if (!isfinite(lo)) {
        lo = 0;
        hi = 1;
    }
    if (k != 3)
        lo = fmin(lo, 0.0); /* counts and rates from 0; loss as it is */
    if (hi - lo < 1e-12)
        hi = lo + 1;
    double span = t1 - t0 > 1e-9 ? t1 - t0 : 1;
    bp(b, "<div class=\"card\"><h3>%s</h3>", s_series[k].title);
    bp(b,
       "<svg class=\"plot\" id=\"plot-%s\" data-series=\"%s\" width=\"%.0f\" height=\"%.0f\" "
       "viewBox=\"0 0 %.0f %.0f\" xmlns=\"http://www.w3.org/2000/svg\">",
       s_series[k].key, s_series[k].key, PW, PH, PW, PH);
    bp(b,
       "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"#fbfbfd\" "
       "stroke=\"#ccc\"/>",
       ML, MT, PW - ML - MR, PH - MT - MB);
    char a[16], z[16];
    clock_text(t0, a, sizeof a);
    clock_text(t1, z, sizeof z);
    bp(b, "<text x=\"%.0f\" y=\"%.0f\" class=\"ax\">%.4g</text>", 4.0, MT + 10, hi);
    bp(b, "<text x=\"%.0f\" y=\"%.0f\" class=\"ax\">%.4g</text>", 4.0, PH - MB, lo);
    bp(b, "<text x=\"%.0f\" y=\"%.0f\" class=\"ax\">%s</text>", ML, PH - 6, a);
    bp(b, "<text x=\"%.0f\" y=\"%.0f\" class=\"ax\" text-anchor=\"end\">%s UTC</text>", PW - MR,
       PH - 6, z);
    buf_t pts = {0};
    buf_t dots = {0};
    for (int i = 0; i < r->n; i++) {
        if (!series_value(k, &r->rows[i], &v))
            continue;
        double x = ML + (r->rows[i].t - t0) / span * (PW - ML - MR);
        double y = PH - MB - (v - lo) / (hi - lo) * (PH - MT - MB);
        bp(&pts, "%.1f,%.1f ", x, y);
        bp(&dots, "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"1.6\"/>", x, y);
    }
    if (pts.len > 0)
        bp(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"/>",
           s_series[k].color, pts.p);
    bp(b, "<g fill=\"%s\">%s</g></svg></div>", s_series[k].color, dots.len > 0 ? dots.p : "");
    b->oom |= pts.oom || dots.oom;
    free(pts.p);
    free(dots.p);
}

/* The timeline: a circle per event, red for failures, green for joins. */
static void timeline(buf_t *b, const events_t *ev, double t0, double t1)
{
    double span = t1 - t0 > 1e-9 ? t1 - t0 : 1;
    double w = 2 * PW + 16, h = 60;
    bp(b, "<div class=\"card wide\"><h3>Failures and joins</h3>");
    bp(b,
       "<svg id=\"timeline\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
       "xmlns=\"http://www.w3.org/2000/svg\">",
       w, h, w, h);
    bp(b, "<line x1=\"%.0f\" y1=\"30\" x2=\"%.0f\" y2=\"30\" stroke=\"#999\"/>", ML, w - MR);
    for (int i = 0; i < ev->n; i++) {
        const cm_event_t *e = &ev->ev[i];
        double x = ML + fmin(fmax((e->t - t0) / span, 0.0), 1.0) * (w - ML - MR);
        const char *color = strcmp(e->kind, "failed") == 0   ? "#c53030"
                            : strcmp(e->kind, "joined") == 0 ? "#2f855a"
                                                             : "#718096";
        double y = strcmp(e->kind, "joined") == 0 ? 20 : 40;
        bp(b, "<circle class=\"ev ev-%s\" cx=\"%.1f\" cy=\"%.0f\" r=\"5\" fill=\"%s\"><title>",
           e->kind, x, y, color);
        char c[16];
        clock_text(e->t, c, sizeof c);
        bp(b, "%s rank %d %s: ", c, e->rank, e->kind);
        bp_html(b, e->detail);
        bp(b, "</title></circle>");
    }
    bp(b, "</svg></div>");
}

static void dashboard(cm_http_t *h, buf_t *b)
{
    rows_t r = {0};
    events_t ev = {0};
    (void)cm_store_series(h->store, CM_HTTP_ROWS, collect_row, &r);
    (void)cm_store_events_list(h->store, CM_HTTP_ROWS, collect_event, &ev);
    double now = cm_wall();
    double t0 = r.n > 0 ? r.rows[0].t : now, t1 = r.n > 0 ? r.rows[r.n - 1].t : now;
    if (ev.n > 0) {
        t0 = fmin(t0, ev.ev[0].t);
        t1 = fmax(t1, ev.ev[ev.n - 1].t);
    }
    cm_state_t *st = h->st;
    bp(b, "<!DOCTYPE html><html><head><meta charset=\"utf-8\">"
          "<meta http-equiv=\"refresh\" content=\"5\"><title>collab-monitor</title><style>"
          "body{font-family:sans-serif;margin:16px;color:#222}"
          ".card{display:inline-block;vertical-align:top;margin:6px;padding:6px;"
          "border:1px solid #ddd;border-radius:6px}.card h3{margin:2px 4px;font-size:14px}"
          ".ax{font-size:10px;fill:#555}table{border-collapse:collapse;font-size:13px}"
          "td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}"
          "td.l,th.l{text-align:left}td.l{max-width:330px;word-break:break-all}"
          "tr.dead{color:#999}tr.late{background:#fff3cd}"
          "pre{background:#f4f4f8;padding:8px;user-select:all;white-space:pre-wrap}"
          "</style></head><body>");
    pthread_mutex_lock(&st->mu);
    int alive = 0;
    for (int i = 0; i < st->npeers; i++)
        alive += st->peers[i].alive && !st->peers[i].monitor;
    bp(b, "<h2>collab-monitor: run ");
    bp_html(b, st->run_id);
    bp(b,
       "</h2><p id=\"summary\"><b id=\"alive\">%d</b> peers alive of world size %d; "
       "view epoch %llu; reports received: %llu</p>",
       alive, st->world_size, (unsigned long long)st->epoch, (unsigned long long)st->reports_total);
    bp(b, "<p>Start trainers on other machines with this line in their environment:</p>"
          "<pre id=\"join\">");
    bp_html(b, st->join_line);
    bp(b, "</pre>");
    pthread_mutex_unlock(&st->mu);
    for (size_t k = 0; k < NSERIES; k++)
        plot(b, k, &r, t0, t1);
    timeline(b, &ev, t0, t1);
    /* The peer table. */
    bp(b, "<h3>Peers</h3><table id=\"peers\"><tr><th>rank</th><th class=\"l\">peer id</th>"
          "<th class=\"l\">address</th><th>status</th><th>last seen</th><th>step</th>"
          "<th>late</th><th>in group</th><th>link MB/s (mean)</th><th>loss</th></tr>");
    pthread_mutex_lock(&st->mu);
    uint64_t top = 0;
    for (int i = 0; i < st->npeers; i++)
        if (st->peers[i].alive && st->peers[i].has_report && st->peers[i].rep.steps > top)
            top = st->peers[i].rep.steps;
    for (int i = 0; i < st->npeers; i++) {
        const cm_peer_t *p = &st->peers[i];
        if (p->monitor)
            continue;
        bool late = p->alive && (p->straggler || (p->has_report && p->rep.steps + 2 < top));
        bp(b, "<tr class=\"peer%s%s\" data-rank=\"%d\"><td>%d</td><td class=\"l\" title=\"",
           p->alive ? "" : " dead", late ? " late" : "", p->rank, p->rank);
        bp_html(b, p->id);
        char shortid[11];
        memcpy(shortid, p->id, sizeof shortid - 1); /* ids are longer than 10 */
        shortid[sizeof shortid - 1] = '\0';
        bp(b, "\">");
        bp_html(b, shortid);
        bp(b, "…</td><td class=\"l\">");
        bp_html(b, p->client ? "client mode" : p->address);
        bp(b, "</td><td class=\"status\">%s</td>", p->alive ? "alive" : "gone");
        if (p->last_seen > 0)
            bp(b, "<td>%.0f s ago</td>", now - p->last_seen);
        else
            bp(b, "<td>never</td>");
        double bw = 0, loss = NAN;
        if (p->has_report) {
            for (int k = 0; k < p->rep.nlinks; k++)
                bw += p->rep.links[k].bandwidth / p->rep.nlinks;
            for (int k = 0; k < p->rep.nvalues; k++)
                if (strcmp(p->rep.values[k].name, "loss") == 0)
                    loss = p->rep.values[k].value;
            bp(b, "<td class=\"step\">%llu</td>", (unsigned long long)p->rep.steps);
        } else {
            bp(b, "<td class=\"step\">-</td>");
        }
        bp(b, "<td>%s</td><td>%s</td><td>%.1f</td><td>", late ? "yes" : "no",
           p->in_group ? "yes" : "no", bw / 1e6);
        if (isfinite(loss))
            bp(b, "%.4g", loss);
        bp(b, "</td></tr>");
    }
    pthread_mutex_unlock(&st->mu);
    bp(b, "</table><p>Data: <a href=\"/api/series\">series</a> "
          "(<a href=\"/api/series.csv\">CSV</a>), <a href=\"/api/events\">events</a> "
          "(<a href=\"/api/events.csv\">CSV</a>), <a href=\"/api/peers\">peers</a>, "
          "<a href=\"/metrics\">metrics</a>.</p></body></html>\n");
    free(r.rows);
    free(ev.ev);
}

/* ---------------------------------------------------------------------- */
/* JSON, CSV, metrics. */

static void api_swarm(cm_http_t *h, buf_t *b)
{
    cm_state_t *st = h->st;
    pthread_mutex_lock(&st->mu);
    int alive = 0;
    for (int i = 0; i < st->npeers; i++)
        alive += st->peers[i].alive && !st->peers[i].monitor;
    bp(b, "{\"run_id\":");
    bp_json(b, st->run_id);
    bp(b, ",\"join_line\":");
    bp_json(b, st->join_line);
    bp(b,
       ",\"epoch\":%llu,\"world_size\":%d,\"target_group\":%d,\"compression\":%d,"
       "\"strict\":%s,\"alive\":%d,\"reports\":%llu}\n",
       (unsigned long long)st->epoch, st->world_size, st->target_group, st->compression,
       st->strict ? "true" : "false", alive, (unsigned long long)st->reports_total);
    pthread_mutex_unlock(&st->mu);
}

static void api_peers(cm_http_t *h, buf_t *b)
{
    cm_state_t *st = h->st;
    double now = cm_wall();
    bp(b, "[");
    pthread_mutex_lock(&st->mu);
    bool first = true;
    for (int i = 0; i < st->npeers; i++) {
        const cm_peer_t *p = &st->peers[i];
        bp(b, "%s{\"id\":", first ? "" : ",\n");
        first = false;
        bp_json(b, p->id);
        bp(b,
           ",\"rank\":%d,\"monitor\":%s,\"client\":%s,\"alive\":%s,\"in_group\":%s,"
           "\"address\":",
           p->rank, p->monitor ? "true" : "false", p->client ? "true" : "false",
           p->alive ? "true" : "false", p->in_group ? "true" : "false");
        bp_json(b, p->address);
        bp(b, ",\"last_seen_s\":");
        bp_num(b, p->last_seen > 0 ? now - p->last_seen : NAN);
        if (p->has_report) {
            const cl_wire_report_t *r = &p->rep;
            bp(b, ",\"steps\":%llu,\"collectives\":%llu,\"weight\":", (unsigned long long)r->steps,
               (unsigned long long)r->collectives);
            bp_num(b, r->weight);
            bp(b,
               ",\"bytes_sent\":%llu,\"bytes_recv\":%llu,\"group_size\":%u,"
               "\"coll_seconds\":",
               (unsigned long long)r->bytes_sent, (unsigned long long)r->bytes_recv, r->group_size);
            bp_num(b, r->coll_seconds);
            bp(b, ",\"wait_seconds\":");
            bp_num(b, r->wait_seconds);
            bp(b, ",\"failures\":%u,\"joins\":%u,\"compression\":%u,\"links\":[", r->failures,
               r->joins, r->compression);
            for (int k = 0; k < r->nlinks; k++) {
                bp(b, "%s{\"rank\":%d,\"bytes_per_s\":", k ? "," : "", r->links[k].rank);
                bp_num(b, r->links[k].bandwidth);
                bp(b, "}");
            }
            bp(b, "],\"values\":{");
            for (int k = 0; k < r->nvalues; k++) {
                bp(b, "%s", k ? "," : "");
                bp_json(b, r->values[k].name);
                bp(b, ":");
                bp_num(b, r->values[k].value);
            }
            bp(b, "}");
        }
        bp(b, "}");
    }
    pthread_mutex_unlock(&st->mu);
    bp(b, "]\n");
}

static void api_series(cm_http_t *h, buf_t *b, bool csv)
{
    rows_t r = {0};
    (void)cm_store_series(h->store, CM_HTTP_ROWS, collect_row, &r);
    if (csv)
        bp(b, "t,alive,step,steps_per_s,samples_per_s,loss,mbit_s,group_size\r\n");
    else
        bp(b, "[");
    for (int i = 0; i < r.n; i++) {
        const cm_sample_t *s = &r.rows[i];
        if (csv) {
            bp(b, "%.3f,%d,%llu,%.6g,%.6g,", s->t, s->alive, (unsigned long long)s->step,
               s->steps_per_s, s->samples_per_s);
            if (s->has_loss)
                bp(b, "%.9g", s->loss);
            bp(b, ",%.6g,%d\r\n", s->mbit_s, s->group_size);
            continue;
        }
        bp(b, "%s{\"t\":%.3f,\"alive\":%d,\"step\":%llu,\"steps_per_s\":", i ? ",\n" : "", s->t,
           s->alive, (unsigned long long)s->step);
        bp_num(b, s->steps_per_s);
        bp(b, ",\"samples_per_s\":");
        bp_num(b, s->samples_per_s);
        bp(b, ",\"loss\":");
        bp_num(b, s->has_loss ? s->loss : NAN);
        bp(b, ",\"mbit_s\":");
        bp_num(b, s->mbit_s);
        bp(b, ",\"group_size\":%d}", s->group_size);
    }
    if (!csv)
        bp(b, "]\n");
    free(r.rows);
}

static void api_events(cm_http_t *h, buf_t *b, bool csv)
{
    events_t ev = {0};
    (void)cm_store_events_list(h->store, CM_HTTP_ROWS, collect_event, &ev);
    if (csv)
        bp(b, "t,kind,rank,peer,address,detail\r\n");
    else
        bp(b, "[");
    for (int i = 0; i < ev.n; i++) {
        const cm_event_t *e = &ev.ev[i];
        if (csv) {
            bp(b, "%.3f,%s,%d,", e->t, e->kind, e->rank);
            bp_csv(b, e->peer);
            bp(b, ",");
            bp_csv(b, e->address);
            bp(b, ",");
            bp_csv(b, e->detail);
            bp(b, "\r\n");
            continue;
        }
        bp(b, "%s{\"t\":%.3f,\"kind\":", i ? ",\n" : "", e->t);
        bp_json(b, e->kind);
        bp(b, ",\"rank\":%d,\"peer\":", e->rank);
        bp_json(b, e->peer);
        bp(b, ",\"address\":");
        bp_json(b, e->address);
        bp(b, ",\"detail\":");
        bp_json(b, e->detail);
        bp(b, "}");
    }
    if (!csv)
        bp(b, "]\n");
    free(ev.ev);
}

/* A label value of the Prometheus text format. */
static void bp_label(buf_t *b, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\' || *s == '"')
            bp(b, "\\%c", *s);
        else if (*s == '\n')
            bp(b, "\\n");
        else
            bp(b, "%c", *s);
    }
}

static void metrics(cm_http_t *h, buf_t *b)
{
    cm_state_t *st = h->st;
    cm_sample_t s;
    cm_state_sample(st, cm_wall(), &s);
    bp(b,
       "# HELP collab_peers_alive Ranked members in the swarm's current view.\n"
       "# TYPE collab_peers_alive gauge\ncollab_peers_alive %d\n",
       s.alive);
    bp(b,
       "# HELP collab_step Highest training step a live member reported.\n"
       "# TYPE collab_step gauge\ncollab_step %llu\n",
       (unsigned long long)s.step);
    bp(b,
       "# HELP collab_steps_per_second Training steps per second of the swarm.\n"
       "# TYPE collab_steps_per_second gauge\ncollab_steps_per_second %.6g\n",
       s.steps_per_s);
    bp(b,
       "# HELP collab_samples_per_second Samples per second (steps times weights).\n"
       "# TYPE collab_samples_per_second gauge\ncollab_samples_per_second %.6g\n",
       s.samples_per_s);
    bp(b,
       "# HELP collab_network_mbit_per_second Collective traffic sent by all members.\n"
       "# TYPE collab_network_mbit_per_second gauge\ncollab_network_mbit_per_second %.6g\n",
       s.mbit_s);
    bp(b,
       "# HELP collab_group_size Largest all-reduce group reported.\n"
       "# TYPE collab_group_size gauge\ncollab_group_size %d\n",
       s.group_size);
    if (s.has_loss)
        bp(b,
           "# HELP collab_loss Mean of the loss the live members reported.\n"
           "# TYPE collab_loss gauge\ncollab_loss %.9g\n",
           s.loss);
    pthread_mutex_lock(&st->mu);
    bp(b,
       "# HELP collab_view_epoch Epoch of the swarm's current view.\n"
       "# TYPE collab_view_epoch gauge\ncollab_view_epoch %llu\n",
       (unsigned long long)st->epoch);
    bp(b,
       "# HELP collab_world_size Nominal world size of the swarm.\n"
       "# TYPE collab_world_size gauge\ncollab_world_size %d\n",
       st->world_size);
    bp(b,
       "# HELP collab_reports_total Reports received from members.\n"
       "# TYPE collab_reports_total counter\ncollab_reports_total %llu\n",
       (unsigned long long)st->reports_total);
    /* The relay's totals now, not as of the last tick: rates computed
       from two reads are exact to the read. */
    cl_relay_stats_t rs = st->relay;
    if (st->engine != NULL)
        cl_engine_relay_stats(st->engine, &rs);
    if (rs.serving) {
        bp(b,
           "# HELP collab_relay_bytes_total Bytes forwarded between client-mode members.\n"
           "# TYPE collab_relay_bytes_total counter\ncollab_relay_bytes_total %llu\n",
           (unsigned long long)rs.forwarded_bytes);
        bp(b,
           "# HELP collab_relay_messages_total Messages forwarded between client-mode members.\n"
           "# TYPE collab_relay_messages_total counter\ncollab_relay_messages_total %llu\n",
           (unsigned long long)rs.forwarded_msgs);
        bp(b,
           "# HELP collab_relay_dropped_total Relayed messages dropped: over the rate limit's "
           "queue, or their destination left.\n"
           "# TYPE collab_relay_dropped_total counter\ncollab_relay_dropped_total %llu\n",
           (unsigned long long)rs.dropped_msgs);
        bp(b,
           "# HELP collab_relay_refused_total RELAY messages refused (not between client-mode "
           "members).\n"
           "# TYPE collab_relay_refused_total counter\ncollab_relay_refused_total %llu\n",
           (unsigned long long)rs.refused);
        bp(b,
           "# HELP collab_relay_limit_mbit_per_second The relay's rate limit (--relay-mbit).\n"
           "# TYPE collab_relay_limit_mbit_per_second gauge\n"
           "collab_relay_limit_mbit_per_second %d\n",
           rs.mbit);
    }
    static const char *const kinds[] = {"joined", "failed", "left", "ungrouped"};
    bp(b, "# HELP collab_events_total Membership events seen by the monitor.\n"
          "# TYPE collab_events_total counter\n");
    for (int k = 0; k < 4; k++)
        bp(b, "collab_events_total{kind=\"%s\"} %llu\n", kinds[k],
           (unsigned long long)st->events_total[k]);
    bp(b, "# HELP collab_peer_steps Steps a member reported.\n# TYPE collab_peer_steps gauge\n");
    for (int i = 0; i < st->npeers; i++) {
        const cm_peer_t *p = &st->peers[i];
        if (!p->alive || p->monitor || !p->has_report)
            continue;
        bp(b, "collab_peer_steps{rank=\"%d\",peer=\"", p->rank);
        bp_label(b, p->id);
        bp(b, "\"} %llu\n", (unsigned long long)p->rep.steps);
    }
    bp(b, "# HELP collab_peer_bytes_sent_total Collective bytes a member sent.\n"
          "# TYPE collab_peer_bytes_sent_total counter\n");
    for (int i = 0; i < st->npeers; i++) {
        const cm_peer_t *p = &st->peers[i];
        if (!p->alive || p->monitor || !p->has_report)
            continue;
        bp(b, "collab_peer_bytes_sent_total{rank=\"%d\",peer=\"", p->rank);
        bp_label(b, p->id);
        bp(b, "\"} %llu\n", (unsigned long long)p->rep.bytes_sent);
    }
    bp(b, "# HELP collab_peer_wait_seconds_total Time a member waited for late members.\n"
          "# TYPE collab_peer_wait_seconds_total counter\n");
    for (int i = 0; i < st->npeers; i++) {
        const cm_peer_t *p = &st->peers[i];
        if (!p->alive || p->monitor || !p->has_report)
            continue;
        bp(b, "collab_peer_wait_seconds_total{rank=\"%d\",peer=\"", p->rank);
        bp_label(b, p->id);
        bp(b, "\"} %.6g\n", p->rep.wait_seconds);
    }
    pthread_mutex_unlock(&st->mu);
}

/* ---------------------------------------------------------------------- */
/* The server. */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *type, buf_t *b)
{
    struct MHD_Response *r;
    if (b->oom) {
        free(b->p);
        static const char oom[] = "out of memory\n";
        r = MHD_create_response_from_buffer(sizeof oom - 1, (void *)oom, MHD_RESPMEM_PERSISTENT);
        code = MHD_HTTP_INTERNAL_SERVER_ERROR;
        type = "text/plain";
    } else {
        r = MHD_create_response_from_buffer(b->len, b->p != NULL ? b->p : (void *)"",
                                            b->p != NULL ? MHD_RESPMEM_MUST_FREE
                                                         : MHD_RESPMEM_PERSISTENT);
    }
    if (r == NULL)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    enum MHD_Result rc = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    (void)upload_data;
    cm_http_t *h = cls;
    buf_t b = {0};
    if (*con_cls == NULL) { /* first call: headers only */
        *con_cls = h;
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        bp(&b, "read-only: only GET and HEAD\n");
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", &b);
    }
    if (*upload_size != 0) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (strcmp(url, "/") == 0) {
        dashboard(h, &b);
        return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", &b);
    }
    if (strcmp(url, "/metrics") == 0) {
        metrics(h, &b);
        return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", &b);
    }
    if (strcmp(url, "/api/swarm") == 0) {
        api_swarm(h, &b);
        return reply(c, MHD_HTTP_OK, "application/json", &b);
    }
    if (strcmp(url, "/api/peers") == 0) {
        api_peers(h, &b);
        return reply(c, MHD_HTTP_OK, "application/json", &b);
    }
    if (strcmp(url, "/api/series") == 0 || strcmp(url, "/api/series.csv") == 0) {
        bool csv = strcmp(url, "/api/series.csv") == 0;
        api_series(h, &b, csv);
        return reply(c, MHD_HTTP_OK, csv ? "text/csv" : "application/json", &b);
    }
    if (strcmp(url, "/api/events") == 0 || strcmp(url, "/api/events.csv") == 0) {
        bool csv = strcmp(url, "/api/events.csv") == 0;
        api_events(h, &b, csv);
        return reply(c, MHD_HTTP_OK, csv ? "text/csv" : "application/json", &b);
    }
    bp(&b, "not found\n");
    return reply(c, MHD_HTTP_NOT_FOUND, "text/plain", &b);
}

/* Parses "HOST:PORT" or "[V6]:PORT" into addr; true when loopback. */
static int parse_listen(const char *text, struct sockaddr_storage *ss, bool *loopback, char *err,
                        size_t errlen)
{
    char host[128];
    const char *colon;
    memset(ss, 0, sizeof *ss);
    if (text[0] == '[') {
        const char *end = strchr(text, ']');
        if (end == NULL || end[1] != ':' || (size_t)(end - text - 1) >= sizeof host)
            goto bad;
        memcpy(host, text + 1, (size_t)(end - text - 1));
        host[end - text - 1] = '\0';
        colon = end + 1;
    } else {
        colon = strrchr(text, ':');
        if (colon == NULL || (size_t)(colon - text) >= sizeof host)
            goto bad;
        memcpy(host, text, (size_t)(colon - text));
        host[colon - text] = '\0';
    }
    char *endp;
    long port = strtol(colon + 1, &endp, 10);
    if (colon[1] == '\0' || *endp != '\0' || port < 0 || port > 65535)
        goto bad;
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof host, "127.0.0.1");
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        *loopback = (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
        return 0;
    }
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        *loopback = IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
        return 0;
    }
bad:
    snprintf(err, errlen,
             "--http '%.100s': expected HOST:PORT with a numeric host, like 127.0.0.1:8080 or "
             "[::1]:8080",
             text);
    return -1;
}

int cm_http_check(const char *listen, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    bool loopback;
    return parse_listen(listen, &ss, &loopback, err, errlen);
}

cm_http_t *cm_http_start(const char *listen, cm_state_t *st, cm_store_t *store, char *err,
                         size_t errlen)
{
    struct sockaddr_storage ss;
    bool loopback = false;
    if (parse_listen(listen, &ss, &loopback, err, errlen) != 0)
        return NULL;
    if (!loopback)
        cl_warn("the dashboard listens on %s, which is not a loopback address: anyone who can "
                "reach it sees the swarm's statistics and addresses (nothing secret)",
                listen);
    cm_http_t *h = calloc(1, sizeof *h);
    if (h == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->st = st;
    h->store = store;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, &ss,
                            MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
                            MHD_OPTION_END);
    if (h->d == NULL) {
        snprintf(err, errlen, "cannot serve HTTP on %s (address in use or not available)", listen);
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    unsigned port = info != NULL ? info->port : 0;
    char host[INET6_ADDRSTRLEN] = "127.0.0.1";
    if (ss.ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host, sizeof host);
        snprintf(h->url, sizeof h->url, "http://[%s]:%u/", host, port);
    } else {
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof host);
        snprintf(h->url, sizeof h->url, "http://%s:%u/", host, port);
    }
    return h;
}

const char *cm_http_url(const cm_http_t *self)
{
    return self->url;
}

void cm_http_stop(cm_http_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    MHD_stop_daemon((*self_p)->d);
    free(*self_p);
    *self_p = NULL;
}
