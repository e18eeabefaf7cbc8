/*  cl_config.h - the one table that reads the environment.

    Every COLLAB_* variable has one entry (name, default, parser, help) in
    cl_config.c; cl_config_load validates them all and reports the first bad
    one as "COLLAB_X='value': expected ...".  The README's table of variables
    is checked against cl_config_table() by a test.

    Rules every caller can rely on (docs/config.md has the details): an
    unknown COLLAB_* name is an error (with a "did you mean" suggestion); an
    empty value is an error, never the default; values are validated and
    range-checked here, including the checks between variables (rank below
    the world size when that is known, min_group <= target_group and <=
    world size, no LISTEN/ANNOUNCE in client mode, only one of SWARM_KEY,
    SWARM_KEY_FILE and SWARM_PASSPHRASE); secrets are never printed.  The
    swarm key or passphrase is turned into the 32-byte swarm secret
    (cl_secret.h) while loading and its plaintext wiped; cl_config_load
    also wipes and removes COLLAB_SWARM_KEY and COLLAB_SWARM_PASSPHRASE from
    the environment.  LISTEN and ANNOUNCE
    carry no /p2p/ part, LISTEN is an /ip4 or /ip6 address, and an ANNOUNCE
    port of 0 means "the port actually bound".  The rank of a joiner that
    sets no world size is only checked against 65535 here: the engine checks
    it again once it has adopted the swarm's size.
*/
#ifndef CL_CONFIG_H_INCLUDED
#define CL_CONFIG_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *initial_peers;      /* COLLAB_INITIAL_PEERS raw text, NULL if unset (founder) */
    char *listen;             /* COLLAB_LISTEN multiaddr, NULL = /ip4/0.0.0.0/tcp/0 */
    char *announce;           /* COLLAB_ANNOUNCE multiaddr, NULL = derived from listen */
    bool client_mode;         /* COLLAB_CLIENT_MODE=1, or auto once the swarm could not dial back */
    bool client_auto;         /* COLLAB_CLIENT_MODE=auto (default) */
    char *identity;           /* COLLAB_IDENTITY path, NULL = fresh keys */
    char *run_id;             /* COLLAB_RUN_ID, default "default" */
    int world_size;           /* COLLAB_WORLD_SIZE, default 64 */
    bool world_size_set;      /* true if COLLAB_WORLD_SIZE was given */
    int rank;                 /* COLLAB_RANK, -1 = lowest free */
    bool rank_required;       /* COLLAB_RANK_REQUIRED: that rank or a standby's wait */
    int collectives_per_step; /* COLLAB_COLLECTIVES_PER_STEP, 0 = learn */
    int min_group;            /* COLLAB_MIN_GROUP, default 1 */
    int target_group;         /* COLLAB_TARGET_GROUP, default 64 */
    bool target_group_set;    /* true if COLLAB_TARGET_GROUP was given */
    double matchmaking_time;  /* COLLAB_MATCHMAKING_TIME seconds, default 5 */
    double timeout;           /* COLLAB_TIMEOUT seconds, default 5 */
    int compression;          /* COLLAB_COMPRESSION: 0 none, 1 fp16, 2 int8, 3 adaptive */
    bool compression_set;     /* true if COLLAB_COMPRESSION was given */
    char *swarm_key;          /* COLLAB_SWARM_KEY or contents of COLLAB_SWARM_KEY_FILE while
                                 loading; wiped and NULL once loaded */
    char *swarm_passphrase;   /* COLLAB_SWARM_PASSPHRASE while loading; wiped and NULL once
                                 loaded */
    bool swarm_closed;        /* a swarm key or passphrase was given */
    uint8_t swarm_secret[32]; /* the swarm secret (cl_secret.h) when closed; wiped by clear */
    double weight;            /* COLLAB_WEIGHT, default 1 */
    uint32_t bandwidth_kbit;  /* COLLAB_BANDWIDTH_MBIT in kbit/s, 0 (default) none declared */
    bool bandwidth_measure;   /* COLLAB_BANDWIDTH_MBIT=measure (the default): the figure is
                                 measured (cl_linkrate.h) */
    int stripes;              /* COLLAB_STRIPES: connections per link, default 1 (with
                                 stripes_auto: the most) */
    bool stripes_auto;        /* COLLAB_STRIPES=auto[:N]: the count is measured */
    bool leave_on_sigterm;    /* COLLAB_LEAVE_ON=SIGTERM */
    bool strict;              /* COLLAB_STRICT */
    bool strict_set;          /* true if COLLAB_STRICT was given */
    int aggregation;          /* COLLAB_AGGREGATION: 0 mean, 1 trimmed_mean, 2 centered_clip */
    bool aggregation_set;     /* true if COLLAB_AGGREGATION was given */
    long robust_min;          /* COLLAB_ROBUST_MIN elements, default 1 */
    bool robust_min_set;      /* true if COLLAB_ROBUST_MIN was given */
    int max_weight_ratio;     /* COLLAB_MAX_WEIGHT_RATIO, default 16 */
    bool max_weight_ratio_set; /* true if COLLAB_MAX_WEIGHT_RATIO was given */
    bool verify;              /* COLLAB_VERIFY (docs/security.md §6c) */
    bool verify_set;          /* true if COLLAB_VERIFY was given */
    int cuda;                 /* COLLAB_CUDA: -1 auto, 0 off, 1 required */
    bool cuda_pipeline;       /* COLLAB_CUDA_PIPELINE: large all-reduces of device buffers
                                 staged chunk by chunk (cl_stage.c) */
    bool shm;                 /* COLLAB_SHM: auto (true) or 0 */
    bool nccl_async;          /* COLLAB_NCCL_ASYNC: the NCCL face returns before completion */
    bool shm_fast;            /* COLLAB_SHM_FAST: small collectives of two same-host peers done
                                 by the application thread (cl_fast.h) */
    bool shm_group;           /* COLLAB_SHM_GROUP: all-reduces of 3 .. 8 same-host peers done
                                 by the application threads (cl_fast_group.c); on by default */
    bool host_leader;         /* COLLAB_HOST_LEADER: strict-mode all-reduces across hosts
                                 through one leader per host (cl_api_hier.c); on by default */
    double report_interval;   /* COLLAB_REPORT_INTERVAL seconds, default 5 */
    int report_loss;          /* COLLAB_REPORT_LOSS, 0 = off */
    bool monitor;             /* not an environment variable: set by collab-monitor, which
                                 joins with a monitor role (docs/monitor.md) */
    double monitor_found_after; /* not an environment variable: set by a restarted
                                   collab-monitor that rejoins through the peers of its
                                   history: seconds after which it founds the swarm again
                                   when none of them completed a handshake (0: never) */
    char *checkpoint_dir;     /* COLLAB_CHECKPOINT_DIR, NULL = none (collab-monitor) */
    int checkpoint_every;     /* COLLAB_CHECKPOINT_EVERY steps, 0 = off (collab-monitor) */
    bool relay;               /* COLLAB_RELAY: relay between client members (collab-monitor) */
    int relay_mbit;           /* COLLAB_RELAY_MBIT: the relay's rate limit, default 100 */
    int log_level;            /* COLLAB_LOG: cl_log_level_t, default info */
    char *log_file;           /* COLLAB_LOG_FILE, NULL = stderr */
    long max_message_mib;     /* COLLAB_MAX_MESSAGE MiB, default 1024 */
    int max_handshakes;       /* COLLAB_MAX_HANDSHAKES, default 1024 */
    int max_handshakes_host;  /* COLLAB_MAX_HANDSHAKES_PER_HOST, default 64 */
    double link_idle;         /* COLLAB_LINK_IDLE seconds, default 300 */
    double ban_time;          /* COLLAB_BAN_TIME seconds a banned sender is ignored, default 60
                                 (a convicted reducer: 10 times as long) */
    long max_unexpected_mib;  /* COLLAB_MAX_UNEXPECTED MiB, default 2048 */
    long max_unexpected_peer_mib; /* COLLAB_MAX_UNEXPECTED_PER_PEER MiB, default 1024 */
    int max_unexpected_msgs;  /* COLLAB_MAX_UNEXPECTED_MSGS per peer, default 65536 */
    int max_streams;          /* COLLAB_MAX_STREAMS, default 1024 */
    int max_streams_peer;     /* COLLAB_MAX_STREAMS_PER_PEER, default 64 */
    int max_held_mib;         /* COLLAB_MAX_HELD MiB: early data messages kept, default 256 */
    int max_held_msgs;        /* COLLAB_MAX_HELD_MSGS, default 16384 */
    int max_held_peer;        /* COLLAB_MAX_HELD_PER_PEER messages, default 1024 */
    int fetch_limit;          /* COLLAB_FETCH_LIMIT: state a joiner may fetch, x its size, 4 */
    int wire_version;         /* COLLAB_WIRE_VERSION: highest wire version spoken, default 10 */
} cl_config_t;

#define CL_CONFIG_WIRE_VERSION 12         /* highest wire version (cl_wire.h's CL_WIRE_VERSION) */
#define CL_CONFIG_COMPRESSION_ADAPTIVE 3  /* COLLAB_COMPRESSION=adaptive */
#define CL_CONFIG_ADAPTIVE_WIRE_VERSION 8 /* the first version that carries it */
/* The lowest wire version of a swarm that signs its relay proofs
   (COLLAB_VERIFY=1 or a robust COLLAB_AGGREGATION; docs/security.md §6). */
#define CL_CONFIG_SIGNED_WIRE_VERSION 10
/* COLLAB_STRIPES: the most connections per link (CL_TP_STRIPES_MAX), and
   the most that "auto" tries. */
#define CL_STRIPES_MAX 16
#define CL_STRIPES_AUTO 8

/* One row of the table, for documentation checks and --help output. */
typedef struct {
    const char *name;         /* "COLLAB_TIMEOUT" */
    const char *default_text; /* "5" */
    const char *help;         /* one line */
} cl_config_entry_t;

/* Reads every COLLAB_* variable from the environment into *cfg (zeroed
   first).  Returns 0, or -1 with a one-line message in err naming the
   variable, the value and what was expected.  An unknown COLLAB_* variable
   is also an error (a typo must not be silently ignored).  On every path
   the values of COLLAB_SWARM_KEY and COLLAB_SWARM_PASSPHRASE are
   overwritten in place in environ and the variables unset (docs/config.md
   says what that does for /proc/PID/environ). */
int cl_config_load(cl_config_t *cfg, char *err, size_t errlen);

/* As cl_config_load, but reads the variables from envp, an array of
   "NAME=value" strings ended by NULL (the format of environ); entries
   without '=' are ignored and the first of duplicate names wins, as with
   getenv.  For tests and fuzzing; the library calls cl_config_load. */
int cl_config_load_env(cl_config_t *cfg, char *const *envp, char *err, size_t errlen);

/* Frees the strings of *cfg and wipes the swarm secrets; accepts a zeroed cfg. */
void cl_config_clear(cl_config_t *cfg);

/* The table; *n receives its length. */
const cl_config_entry_t *cl_config_table(size_t *n);

/* Parses a duration in seconds ("5", "0.5", "250ms", "2s"); returns 0 or -1.
   Plain decimal only (no sign, no hex, no inf/nan, independent of the C
   locale); the result must lie between 0.001 and 1000000 seconds. */
int cl_config_parse_seconds(const char *text, double *out);

#endif
