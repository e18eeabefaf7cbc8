/*  collab-monitor - the swarm's long-lived bootstrap peer (docs/monitor.md).

    A member of the swarm with the monitor role: it holds no rank and
    takes part in no collective, founds the swarm (and so fixes its
    swarm-wide settings) when started first, prints the join line, keeps
    its peer id and address across restarts (--identity and a fixed
    --listen port), receives every member's reports, keeps the run's
    history in SQLite and serves a dashboard, /metrics and JSON over HTTP.

    Flags map onto the COLLAB_* variables of the config table (so they are
    checked by the same code as every peer's environment); the engine is
    the library's own, started with cl_engine_start_hooks.  The main
    thread wakes every second: it samples the swarm into the history,
    stores events and logs progress.  A restarted monitor that finds peers
    alive in its history joins through them; if none answers within 5 s,
    it founds the swarm again.
*/
#include "cm_http.h"
#include "cm_state.h"
#include "cm_store.h"

#include "elastic/cl_checkpoint.h"
#include "engine/cl_engine.h"
#include "util/cl_config.h"
#include "util/cl_config_value.h"
#include "util/cl_identity.h"
#include "util/cl_log.h"

#include <czmq.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef CM_VERSION
#define CM_VERSION "unknown"
#endif

static volatile sig_atomic_t s_stop = 0;

static void on_signal(int sig)
{
    (void)sig;
    s_stop = 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: collab-monitor [--listen MULTIADDR] [--identity FILE] [--world-size N]\n"
            "                      [--compression none|fp16|int8|adaptive] [--target-group N]\n"
            "                      [--strict 0|1] [--http HOST:PORT|off] [--db FILE]\n"
            "                      [--run-id ID] [--swarm-key-file FILE] [--announce MULTIADDR]\n"
            "                      [--initial-peers ADDRS] [--tick SECONDS]\n"
            "                      [--checkpoint-dir DIR --checkpoint-every N]\n"
            "                      [--relay [--relay-mbit N]]\n"
            "       collab-monitor --check-checkpoint FILE\n"
            "\n"
            "The swarm's bootstrap peer: holds no rank, founds the swarm (fixing the\n"
            "swarm-wide settings) or joins it, prints the join line, records the peers'\n"
            "reports in SQLite and serves a dashboard (loopback by default).\n"
            "\n"
            "  --listen MULTIADDR     address to listen on (default /ip4/0.0.0.0/tcp/31337)\n"
            "  --identity FILE        key file (created if missing): the same peer id on restart\n"
            "  --world-size N         the swarm's COLLAB_WORLD_SIZE (when it founds the swarm)\n"
            "  --compression C        the swarm's COLLAB_COMPRESSION\n"
            "  --target-group N       the swarm's COLLAB_TARGET_GROUP\n"
            "  --strict 0|1           the swarm's COLLAB_STRICT\n"
            "  --http HOST:PORT       dashboard address (default 127.0.0.1:8080; port 0: any)\n"
            "  --db FILE              history database (default collab-monitor.db)\n"
            "  --run-id ID            COLLAB_RUN_ID\n"
            "  --swarm-key-file FILE  COLLAB_SWARM_KEY_FILE (closed swarm)\n"
            "  --announce MULTIADDR   COLLAB_ANNOUNCE (public address behind NAT)\n"
            "  --initial-peers ADDRS  join a running swarm through these peers\n"
            "  --tick SECONDS         seconds between two rows of the history (default 2)\n"
            "  --checkpoint-dir DIR   keep the swarm's checkpoints there (the newest 3) and \n"
            "                         resume a swarm whose peers all died from the latest\n"
            "  --checkpoint-every N   steps between two checkpoints\n"
            "  --check-checkpoint FILE  verify a checkpoint file, print what it holds and exit\n"
            "  --relay                forward sealed messages between client-mode trainers\n"
            "                         (when none of them accepts connections)\n"
            "  --relay-mbit N         the relay's rate limit, Mbit/s in all (default 100)\n"
            "\n"
            "Other COLLAB_* variables (COLLAB_TIMEOUT, COLLAB_LOG, ...) apply as for any peer.\n");
}

typedef struct {
    const char *flag;
    const char *var;
} flag_var_t;

static const flag_var_t s_flags[] = {
    {"--listen", "COLLAB_LISTEN"},
    {"--identity", "COLLAB_IDENTITY"},
    {"--world-size", "COLLAB_WORLD_SIZE"},
    {"--compression", "COLLAB_COMPRESSION"},
    {"--target-group", "COLLAB_TARGET_GROUP"},
    {"--strict", "COLLAB_STRICT"},
    {"--run-id", "COLLAB_RUN_ID"},
    {"--swarm-key-file", "COLLAB_SWARM_KEY_FILE"},
    {"--announce", "COLLAB_ANNOUNCE"},
    {"--initial-peers", "COLLAB_INITIAL_PEERS"},
    {"--checkpoint-dir", "COLLAB_CHECKPOINT_DIR"},
    {"--checkpoint-every", "COLLAB_CHECKPOINT_EVERY"},
    {"--relay-mbit", "COLLAB_RELAY_MBIT"},
};
#define NFLAGS (sizeof s_flags / sizeof s_flags[0])

/* Seconds a restarted monitor waits for a handshake with one of the peers
   of its history before it founds the swarm again (docs/monitor.md §5). */
#define REJOIN_WAIT 5.0

typedef struct {
    const char *http; /* NULL: off */
    const char *db;
    double tick; /* seconds between two samples */
} opts_t;

/* --check-checkpoint FILE: verifies a checkpoint (docs/monitor.md §7)
   and prints what it holds.  1 when it verifies (the caller exits 0), 2
   with the reason it is refused. */
static int check_checkpoint(const char *path)
{
    cl_ckpt_t c;
    char err[CL_CKPT_ERR_MAX];
    if (cl_checkpoint_read(path, &c, err) != 0) {
        fprintf(stderr, "collab-monitor: %s\n", err);
        return 2;
    }
    uint64_t bytes = 0;
    uint32_t bufs = 0;
    for (uint32_t i = 0; i < c.nitems; i++) {
        bytes += c.items[i].size;
        bufs += c.items[i].what == CL_CKPT_BUFFER;
    }
    printf("%s: verified; run %s, step %llu (collective #%llu, start-up prefix %llu): %u "
           "broadcast buffers and %u start-up results, %llu bytes\n",
           path, c.run_id, (unsigned long long)c.step, (unsigned long long)c.seq,
           (unsigned long long)c.prefix, bufs, c.nitems - bufs, (unsigned long long)bytes);
    cl_checkpoint_clear(&c);
    return 1;
}

/* Returns 0, 1 (--help printed) or 2 (error printed). */
static int parse_args(int argc, char **argv, opts_t *o)
{
    o->http = "127.0.0.1:8080";
    o->db = "collab-monitor.db";
    o->tick = 2.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (strcmp(a, "--version") == 0) {
            printf("collab-monitor %s\n", CM_VERSION);
            return 1;
        }
        if (strcmp(a, "--relay") == 0) {
            setenv("COLLAB_RELAY", "1", 1);
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "collab-monitor: %s needs a value (try --help)\n", a);
            return 2;
        }
        const char *v = argv[++i];
        if (strcmp(a, "--check-checkpoint") == 0)
            return check_checkpoint(v);
        if (strcmp(a, "--http") == 0) {
            char why[300];
            o->http = strcmp(v, "off") == 0 ? NULL : v;
            if (o->http != NULL && cm_http_check(o->http, why, sizeof why) != 0) {
                fprintf(stderr, "collab-monitor: %s\n", why);
                return 2;
            }
            continue;
        }
        if (strcmp(a, "--db") == 0) {
            o->db = v;
            continue;
        }
        if (strcmp(a, "--tick") == 0) {
            char why[200];
            if (cl_config_value_seconds(v, &o->tick, why, sizeof why) != 0 || o->tick < 0.1 ||
                o->tick > 86400) {
                fprintf(stderr,
                        "collab-monitor: --tick '%.40s': expected seconds from 0.1 to "
                        "86400\n",
                        v);
                return 2;
            }
            continue;
        }
        size_t k;
        for (k = 0; k < NFLAGS && strcmp(a, s_flags[k].flag) != 0; k++)
            ;
        if (k == NFLAGS) {
            fprintf(stderr, "collab-monitor: unknown option '%s' (try --help)\n", a);
            return 2;
        }
        if (setenv(s_flags[k].var, v, 1) != 0) {
            fprintf(stderr, "collab-monitor: %s: %s\n", a, strerror(errno));
            return 2;
        }
    }
    if (getenv("COLLAB_LISTEN") == NULL)
        setenv("COLLAB_LISTEN", "/ip4/0.0.0.0/tcp/31337", 1);
    const char *relay = getenv("COLLAB_RELAY");
    if (getenv("COLLAB_RELAY_MBIT") != NULL && (relay == NULL || strcmp(relay, "1") != 0))
        fprintf(stderr, "[collab] collab-monitor: warning: --relay-mbit (COLLAB_RELAY_MBIT) has "
                        "no effect without --relay\n");
    return 0;
}

/* Loads the configuration and identity and starts the engine as a monitor;
   found_after > 0: it rejoins through the peers of its history and founds
   the swarm again when none of them answers within that many seconds.
   Returns 0 or a collab status (logged). */
static int start_engine(cm_state_t *st, cl_engine_t **eng, double found_after)
{
    cl_config_t cfg;
    char err[600];
    if (cl_config_load(&cfg, err, sizeof err) != 0) {
        fprintf(stderr, "collab-monitor: %s\n", err);
        return COLLAB_ERR_CONFIG;
    }
    (void)cl_log_configure((cl_log_level_t)cfg.log_level, cfg.log_file);
    if (cfg.client_mode) {
        cl_error("a monitor cannot run in client mode (COLLAB_CLIENT_MODE): trainers must reach "
                 "it");
        cl_config_clear(&cfg);
        return COLLAB_ERR_CONFIG;
    }
    if (cfg.identity == NULL)
        cl_warn("no --identity: this monitor gets a new peer id at every start, so its join "
                "line changes");
    cl_identity_t *id = cl_identity_new(cfg.identity, err, sizeof err);
    if (id == NULL) {
        cl_error("%s", err);
        cl_config_clear(&cfg);
        return COLLAB_ERR_CONFIG;
    }
    snprintf(st->run_id, sizeof st->run_id, "%s", cfg.run_id != NULL ? cfg.run_id : "default");
    cfg.monitor = true;
    cfg.monitor_found_after = found_after;
    cl_engine_hooks_t hooks = cm_state_hooks(st);
    int rc = cl_engine_start_hooks(&cfg, &id, &hooks, eng);
    cl_identity_destroy(&id);
    cl_config_clear(&cfg);
    return rc;
}

static void sleep_tick(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - floor(seconds)) * 1e9)};
    nanosleep(&ts, NULL); /* a signal ends it early */
}

int main(int argc, char **argv)
{
    opts_t o;
    int prc = parse_args(argc, argv, &o);
    if (prc != 0)
        return prc == 1 ? 0 : 2;
    signal(SIGPIPE, SIG_IGN);
    zsys_handler_set(NULL); /* CZMQ must not take SIGINT and SIGTERM over */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    cm_state_t st;
    if (cm_state_init(&st) != 0) {
        fprintf(stderr, "collab-monitor: out of memory\n");
        return 1;
    }
    char err[600];
    cm_store_t *store = cm_store_open(o.db, err, sizeof err);
    if (store == NULL) {
        fprintf(stderr, "collab-monitor: %s\n", err);
        cm_state_fini(&st);
        return 1;
    }
    cm_store_load_peers(store, &st);
    /* A restart finds the swarm through the peers alive when it stopped. */
    bool rejoin = false;
    if (getenv("COLLAB_INITIAL_PEERS") == NULL) {
        char last[4096];
        cm_store_last_alive(store, last, sizeof last);
        if (last[0] != '\0') {
            setenv("COLLAB_INITIAL_PEERS", last, 1);
            rejoin = true;
            fprintf(stderr, "[collab] collab-monitor: rejoining the swarm through the peers "
                            "alive when it last ran\n");
        }
    }
    /* Those peers are gone when none of them completes a handshake
       within REJOIN_WAIT: it founds the swarm again then, instead of at
       the join deadline (a trainer that is alive answers in far less).
       One that answers but does not take it in: founding at the deadline. */
    cl_engine_t *eng = NULL;
    int rc = start_engine(&st, &eng, rejoin ? REJOIN_WAIT : 0);
    if (rc == COLLAB_ERR_NETWORK && rejoin) {
        cl_warn("none of the peers of the last run took this monitor in; founding the swarm "
                "again");
        unsetenv("COLLAB_INITIAL_PEERS");
        rc = start_engine(&st, &eng, 0);
    }
    if (rc != COLLAB_OK) {
        fprintf(stderr, "collab-monitor: could not start (%s)\n", collab_strerror(rc));
        cm_store_close(&store);
        cm_state_fini(&st);
        return 1;
    }
    pthread_mutex_lock(&st.mu);
    snprintf(st.join_line, sizeof st.join_line, "COLLAB_INITIAL_PEERS=%s", cl_engine_address(eng));
    st.engine = eng;
    pthread_mutex_unlock(&st.mu);
    (void)cm_store_meta_set(store, "run_id", st.run_id);
    (void)cm_store_meta_set(store, "join_line", st.join_line);
    cm_http_t *http = NULL;
    if (o.http != NULL) {
        http = cm_http_start(o.http, &st, store, err, sizeof err);
        if (http == NULL) {
            cl_error("%s", err);
            cl_engine_stop(&eng);
            cm_store_close(&store);
            cm_state_fini(&st);
            return 1;
        }
        cl_info("dashboard at %s", cm_http_url(http));
    }
    cl_info("history in %s (%ld samples, %ld events so far)", o.db, cm_store_count(store, "series"),
            cm_store_count(store, "events"));

    uint64_t logged_step = 0;
    double last_log = 0;
    cl_relay_stats_t logged_relay;
    memset(&logged_relay, 0, sizeof logged_relay);
    double last_relay_log = 0;
    cm_event_t ev[64];
    double next = cm_wall() + o.tick;
    while (!s_stop) {
        double now = cm_wall();
        /* Events go to the history every second; samples every tick. */
        sleep_tick(fmin(1.0, fmax(0.0, next - now)));
        if (s_stop)
            break;
        int n;
        while ((n = cm_state_take_events(&st, ev, 64)) > 0)
            (void)cm_store_events(store, ev, n);
        now = cm_wall();
        cl_relay_stats_t rs;
        cl_engine_relay_stats(eng, &rs);
        pthread_mutex_lock(&st.mu);
        st.relay = rs;
        pthread_mutex_unlock(&st.mu);
        if (rs.serving && now - last_relay_log >= 10.0 &&
            (rs.forwarded_msgs != logged_relay.forwarded_msgs ||
             rs.dropped_msgs != logged_relay.dropped_msgs || rs.refused != logged_relay.refused)) {
            cl_info("relay: %.1f MB forwarded in %llu messages, %llu dropped (%.1f MB) over "
                    "--relay-mbit %d, %llu refused",
                    (double)rs.forwarded_bytes / 1e6, (unsigned long long)rs.forwarded_msgs,
                    (unsigned long long)rs.dropped_msgs, (double)rs.dropped_bytes / 1e6, rs.mbit,
                    (unsigned long long)rs.refused);
            logged_relay = rs;
            last_relay_log = now;
        }
        if (now < next)
            continue;
        next = now + o.tick;
        cm_sample_t s;
        cm_state_sample(&st, now, &s);
        (void)cm_store_sample(store, &s);
        (void)cm_store_peers(store, &st);
        if (s.step != logged_step && now - last_log >= 5.0) {
            if (s.has_loss)
                cl_info("step #%llu  loss = %.5g  peers = %d  samples/s = %.1f",
                        (unsigned long long)s.step, s.loss, s.alive, s.samples_per_s);
            else
                cl_info("step #%llu  loss = (not reported)  peers = %d  samples/s = %.1f",
                        (unsigned long long)s.step, s.alive, s.samples_per_s);
            logged_step = s.step;
            last_log = now;
        }
    }
    cl_relay_stats_t rs;
    cl_engine_relay_stats(eng, &rs);
    if (rs.serving)
        cl_info("relay: %.1f MB forwarded in %llu messages, %llu dropped (%.1f MB) over "
                "--relay-mbit %d, %llu refused",
                (double)rs.forwarded_bytes / 1e6, (unsigned long long)rs.forwarded_msgs,
                (unsigned long long)rs.dropped_msgs, (double)rs.dropped_bytes / 1e6, rs.mbit,
                (unsigned long long)rs.refused);
    cl_info("stopping");
    (void)cm_store_peers(store, &st); /* who was alive: the way back in at the next start */
    cm_http_stop(&http);
    pthread_mutex_lock(&st.mu);
    st.engine = NULL;
    pthread_mutex_unlock(&st.mu);
    cl_engine_stop(&eng);
    int n;
    while ((n = cm_state_take_events(&st, ev, 64)) > 0)
        (void)cm_store_events(store, ev, n);
    cm_store_close(&store);
    cm_state_fini(&st);
    return 0;
}
