/*  cm_store.c - collab-monitor's history in SQLite (cm_store.h).

    Write-ahead logging with synchronous=NORMAL: a crash of the monitor
    loses at most the last tick, and the HTTP thread reads while the main
    loop writes.  Every statement is prepared with bound parameters; no
    text from the network is ever pasted into SQL.
*/
#include "cm_store.h"

#include "util/cl_log.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cm_store {
    sqlite3 *db;
};

static const char *const s_schema =
    "CREATE TABLE IF NOT EXISTS series(t REAL NOT NULL, alive INTEGER NOT NULL,"
    " step INTEGER NOT NULL, steps_per_s REAL NOT NULL, samples_per_s REAL NOT NULL,"
    " loss REAL, mbit_s REAL NOT NULL, group_size INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS events(t REAL NOT NULL, kind TEXT NOT NULL,"
    " rank INTEGER NOT NULL, peer TEXT NOT NULL, address TEXT NOT NULL, detail TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS peers(id TEXT PRIMARY KEY, rank INTEGER NOT NULL,"
    " address TEXT NOT NULL, client INTEGER NOT NULL, alive INTEGER NOT NULL,"
    " last_seen REAL NOT NULL);"
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);";

cm_store_t *cm_store_open(const char *path, char *err, size_t errlen)
{
    cm_store_t *self = calloc(1, sizeof *self);
    if (self == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    int rc = sqlite3_open_v2(
        path, &self->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL);
    char *msg = NULL;
    if (rc == SQLITE_OK)
        rc = sqlite3_busy_timeout(self->db, 2000);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(self->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL,
                          NULL, &msg);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(self->db, s_schema, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "cannot open the history database %s: %s", path,
                 msg != NULL ? msg : sqlite3_errmsg(self->db));
        sqlite3_free(msg);
        sqlite3_close(self->db);
        free(self);
        return NULL;
    }
    return self;
}

void cm_store_close(cm_store_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    sqlite3_close((*self_p)->db);
    free(*self_p);
    *self_p = NULL;
}

static sqlite3_stmt *prep(cm_store_t *self, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(self->db, sql, -1, &st, NULL) != SQLITE_OK) {
        cl_error("history database: %s", sqlite3_errmsg(self->db));
        return NULL;
    }
    return st;
}

static int step_done(cm_store_t *self, sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        cl_error("history database: %s", sqlite3_errmsg(self->db));
        return -1;
    }
    return 0;
}

int cm_store_sample(cm_store_t *self, const cm_sample_t *s)
{
    sqlite3_stmt *st = prep(self, "INSERT INTO series VALUES(?,?,?,?,?,?,?,?)");
    if (st == NULL)
        return -1;
    sqlite3_bind_double(st, 1, s->t);
    sqlite3_bind_int(st, 2, s->alive);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)s->step);
    sqlite3_bind_double(st, 4, s->steps_per_s);
    sqlite3_bind_double(st, 5, s->samples_per_s);
    if (s->has_loss)
        sqlite3_bind_double(st, 6, s->loss);
    else
        sqlite3_bind_null(st, 6);
    sqlite3_bind_double(st, 7, s->mbit_s);
    sqlite3_bind_int(st, 8, s->group_size);
    return step_done(self, st);
}

int cm_store_events(cm_store_t *self, const cm_event_t *ev, int n)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        sqlite3_stmt *st = prep(self, "INSERT INTO events VALUES(?,?,?,?,?,?)");
        if (st == NULL)
            return -1;
        sqlite3_bind_double(st, 1, ev[i].t);
        sqlite3_bind_text(st, 2, ev[i].kind, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(st, 3, ev[i].rank);
        sqlite3_bind_text(st, 4, ev[i].peer, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 5, ev[i].address, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 6, ev[i].detail, -1, SQLITE_TRANSIENT);
        bad |= step_done(self, st);
    }
    return bad;
}

int cm_store_peers(cm_store_t *self, cm_state_t *s)
{
    if (sqlite3_exec(self->db, "BEGIN; UPDATE peers SET alive = 0;", NULL, NULL, NULL) != SQLITE_OK)
        return -1;
    int bad = 0;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->npeers && !bad; i++) {
        const cm_peer_t *p = &s->peers[i];
        if (p->monitor)
            continue;
        sqlite3_stmt *st = prep(self, "INSERT OR REPLACE INTO peers VALUES(?,?,?,?,?,?)");
        if (st == NULL) {
            bad = -1;
            break;
        }
        sqlite3_bind_text(st, 1, p->id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(st, 2, p->rank);
        sqlite3_bind_text(st, 3, p->address, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(st, 4, p->client ? 1 : 0);
        sqlite3_bind_int(st, 5, p->alive ? 1 : 0);
        sqlite3_bind_double(st, 6, p->last_seen);
        bad |= step_done(self, st);
    }
    pthread_mutex_unlock(&s->mu);
    sqlite3_exec(self->db, bad ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL);
    return bad;
}

void cm_store_load_peers(cm_store_t *self, cm_state_t *s)
{
    sqlite3_stmt *st =
        prep(self, "SELECT id, rank, address, client, last_seen FROM peers ORDER BY rank");
    if (st == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    while (sqlite3_step(st) == SQLITE_ROW && s->npeers < CM_PEERS_MAX) {
        cm_peer_t *p = &s->peers[s->npeers++];
        memset(p, 0, sizeof *p);
        snprintf(p->id, sizeof p->id, "%s", (const char *)sqlite3_column_text(st, 0));
        p->rank = sqlite3_column_int(st, 1);
        snprintf(p->address, sizeof p->address, "%s", (const char *)sqlite3_column_text(st, 2));
        p->client = sqlite3_column_int(st, 3) != 0;
        p->last_seen = sqlite3_column_double(st, 4);
        p->first_seen = p->last_seen;
    }
    pthread_mutex_unlock(&s->mu);
    sqlite3_finalize(st);
}

int cm_store_meta_get(cm_store_t *self, const char *key, char *out, size_t len)
{
    sqlite3_stmt *st = prep(self, "SELECT value FROM meta WHERE key = ?");
    if (st == NULL)
        return -1;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
    int rc = -1;
    if (sqlite3_step(st) == SQLITE_ROW) {
        snprintf(out, len, "%s", (const char *)sqlite3_column_text(st, 0));
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

int cm_store_meta_set(cm_store_t *self, const char *key, const char *value)
{
    sqlite3_stmt *st = prep(self, "INSERT OR REPLACE INTO meta VALUES(?,?)");
    if (st == NULL)
        return -1;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, value, -1, SQLITE_TRANSIENT);
    return step_done(self, st);
}

void cm_store_last_alive(cm_store_t *self, char *out, size_t len)
{
    out[0] = '\0';
    sqlite3_stmt *st =
        prep(self, "SELECT address FROM peers WHERE alive = 1 AND address != '' ORDER BY rank");
    if (st == NULL)
        return;
    size_t used = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *a = (const char *)sqlite3_column_text(st, 0);
        size_t n = strlen(a);
        if (used + n + 2 > len)
            break;
        if (used > 0)
            out[used++] = ' ';
        memcpy(out + used, a, n);
        used += n;
        out[used] = '\0';
    }
    sqlite3_finalize(st);
}

int cm_store_series(cm_store_t *self, int limit, cm_row_fn *fn, void *arg)
{
    sqlite3_stmt *st = prep(self, "SELECT * FROM (SELECT t, alive, step, steps_per_s,"
                                  " samples_per_s, loss, mbit_s, group_size FROM series"
                                  " ORDER BY rowid DESC LIMIT ?) ORDER BY t");
    if (st == NULL)
        return -1;
    sqlite3_bind_int(st, 1, limit);
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        cm_sample_t s;
        memset(&s, 0, sizeof s);
        s.t = sqlite3_column_double(st, 0);
        s.alive = sqlite3_column_int(st, 1);
        s.step = (uint64_t)sqlite3_column_int64(st, 2);
        s.steps_per_s = sqlite3_column_double(st, 3);
        s.samples_per_s = sqlite3_column_double(st, 4);
        s.has_loss = sqlite3_column_type(st, 5) != SQLITE_NULL;
        s.loss = s.has_loss ? sqlite3_column_double(st, 5) : 0;
        s.mbit_s = sqlite3_column_double(st, 6);
        s.group_size = sqlite3_column_int(st, 7);
        fn(arg, &s);
        n++;
    }
    sqlite3_finalize(st);
    return n;
}

int cm_store_events_list(cm_store_t *self, int limit, cm_event_fn *fn, void *arg)
{
    sqlite3_stmt *st = prep(self, "SELECT * FROM (SELECT t, kind, rank, peer, address, detail"
                                  " FROM events ORDER BY rowid DESC LIMIT ?) ORDER BY t");
    if (st == NULL)
        return -1;
    sqlite3_bind_int(st, 1, limit);
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        cm_event_t e;
        memset(&e, 0, sizeof e);
        e.t = sqlite3_column_double(st, 0);
        snprintf(e.kind, sizeof e.kind, "%s", (const char *)sqlite3_column_text(st, 1));
        e.rank = sqlite3_column_int(st, 2);
        snprintf(e.peer, sizeof e.peer, "%s", (const char *)sqlite3_column_text(st, 3));
        snprintf(e.address, sizeof e.address, "%s", (const char *)sqlite3_column_text(st, 4));
        snprintf(e.detail, sizeof e.detail, "%s", (const char *)sqlite3_column_text(st, 5));
        fn(arg, &e);
        n++;
    }
    sqlite3_finalize(st);
    return n;
}

long cm_store_count(cm_store_t *self, const char *table)
{
    const char *sql = strcmp(table, "series") == 0   ? "SELECT count(*) FROM series"
                      : strcmp(table, "events") == 0 ? "SELECT count(*) FROM events"
                                                     : NULL;
    if (sql == NULL)
        return -1;
    sqlite3_stmt *st = prep(self, sql);
    if (st == NULL)
        return -1;
    long n = sqlite3_step(st) == SQLITE_ROW ? (long)sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return n;
}
