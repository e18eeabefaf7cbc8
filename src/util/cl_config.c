/*  cl_config.c - the one table that reads the environment.

    CL_CONFIG_VARS below is the only list of COLLAB_* variables in the
    project: name, default as shown to users, parser and one line of help.
    The parser is a function of its own, or for the common kinds (an
    integer in a range, a duration, a flag) the field it stores into and
    the range, as columns of the table, parsed by cl_config_parse_var.
    It expands into the public table (cl_config_table, checked against the
    README and docs/config.md by tests) and into the parser array that
    cl_config_load_env (cl_config_load.c) runs through cl_config_parse_var.
    Each parser checks one value and stores it; checks between variables,
    defaults, the swarm secret and the environment's scrubbing are the
    loading's (cl_config_load.c).

    Numbers are parsed by hand (cl_config_value.c): strtol/strtod accept
    leading blanks, signs, hex, "inf" and depend on the C locale, none of
    which belongs in a configuration value.
*/
#define _GNU_SOURCE
#include "util/cl_config.h"

#include "util/cl_config_int.h"

#include "util/cl_addr.h"
#include "util/cl_config_value.h"
#include "util/cl_log.h"
#include "util/cl_secret.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CL_WORLD_MAX 65536  /* largest COLLAB_WORLD_SIZE */
#define CL_RUN_ID_MAX 128   /* longest COLLAB_RUN_ID */
#define CL_PATH_MAX 4095    /* longest file name accepted */
#define CL_STEP_MAX 1000000 /* largest COLLAB_COLLECTIVES_PER_STEP */
#define CL_WEIGHT_MAX 1e9   /* largest COLLAB_WEIGHT */

/* The bounds of COLLAB_BAN_TIME, in seconds: a second to a day. */
#define CL_BAN_TIME_MIN 1.0
#define CL_BAN_TIME_MAX 86400.0

/* A parser checks one value and stores it in *cfg.  On error it writes
   the reason, starting with "expected", into why and returns -1. */
typedef int(cl_config_parser_t)(const char *value, cl_config_t *cfg, char *why, size_t whylen);

static int __attribute__((format(printf, 3, 4)))
s_why(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return -1;
}

static int s_strdup(const char *value, char **dest, char *why, size_t whylen)
{
    char *copy = strdup(value);
    if (copy == NULL)
        return s_why(why, whylen, "out of memory");
    free(*dest);
    *dest = copy;
    return 0;
}

static int s_path(const char *value, char **dest, const char *what, char *why, size_t whylen)
{
    if (value[0] == '\0' || strlen(value) > CL_PATH_MAX)
        return s_why(why, whylen, "expected %s (1 to %d bytes)", what, CL_PATH_MAX);
    return s_strdup(value, dest, why, whylen);
}

/* ---------------------------------------------------------------------- */
/* Parsers, one per variable, in table order. */

static int p_initial_peers(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    cl_addr_t *list = NULL;
    size_t n = 0;
    char reason[600];
    if (cl_addr_parse_list(value, true, &list, &n, reason, sizeof reason) != 0)
        return s_why(why, whylen,
                     "expected addresses like /ip4/203.0.113.7/tcp/31337/p2p/<peer id>: %s",
                     reason);
    free(list);
    if (n == 0)
        return s_why(why, whylen,
                     "expected one or more addresses of live peers (unset the variable to start "
                     "a new swarm)");
    return s_strdup(value, &cfg->initial_peers, why, whylen);
}

/* Shared by LISTEN and ANNOUNCE: a multiaddr without /p2p (our own id is
   added by the engine). */
static int s_own_address(const char *value, bool bindable, char **dest, char *why, size_t whylen)
{
    cl_addr_t a;
    char reason[400];
    const char *example = bindable ? "/ip4/0.0.0.0/tcp/31337" : "/ip4/203.0.113.7/tcp/31337";
    if (cl_addr_parse(value, &a, reason, sizeof reason) != 0)
        return s_why(why, whylen, "expected an address like %s: %s", example, reason);
    if (a.has_key)
        return s_why(why, whylen,
                     "expected an address without /p2p/ (this peer's id comes from its keys)");
    if (bindable && a.family == CL_ADDR_DNS)
        return s_why(why, whylen, "expected an /ip4 or /ip6 address to listen on, like %s",
                     example);
    return s_strdup(value, dest, why, whylen);
}

static int p_listen(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    return s_own_address(value, true, &cfg->listen, why, whylen);
}

static int p_announce(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    return s_own_address(value, false, &cfg->announce, why, whylen);
}

static int p_client_mode(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    cfg->client_auto = strcmp(value, "auto") == 0;
    if (cfg->client_auto) {
        cfg->client_mode = false; /* public until the swarm fails to dial back */
        return 0;
    }
    if (cl_config_value_bool(value, &cfg->client_mode, why, whylen) != 0)
        return s_why(why, whylen, "expected auto, 1 or 0");
    return 0;
}

static int p_identity(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    return s_path(value, &cfg->identity, "the path of a key file", why, whylen);
}

static int p_run_id(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    size_t n = strlen(value);
    bool ok = n >= 1 && n <= CL_RUN_ID_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = value[i] > 0x20 && value[i] < 0x7f;
    if (!ok)
        return s_why(why, whylen, "expected 1 to %d printable ASCII characters without spaces",
                     CL_RUN_ID_MAX);
    return s_strdup(value, &cfg->run_id, why, whylen);
}

/* Parses an integer in [lo, hi] into *field (left alone on error). */
static int s_int(const char *value, long lo, long hi, int *field, char *why, size_t whylen)
{
    long v;
    if (cl_config_value_int(value, lo, hi, &v, why, whylen) != 0)
        return -1;
    *field = (int)v;
    return 0;
}

static int p_world_size(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    if (s_int(value, 1, CL_WORLD_MAX, &cfg->world_size, why, whylen) != 0)
        return -1;
    cfg->world_size_set = true;
    return 0;
}

static int p_link_idle(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    if (cl_config_value_seconds(value, &cfg->link_idle, why, whylen) != 0)
        return -1;
    if (cfg->link_idle < 30.0)
        return s_why(why, whylen,
                     "expected at least 30 seconds (honest links carry a "
                     "heartbeat every few seconds)");
    return 0;
}

static int p_ban_time(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    double v;
    if (cl_config_value_seconds(value, &v, why, whylen) != 0 || v < CL_BAN_TIME_MIN ||
        v > CL_BAN_TIME_MAX)
        return s_why(why, whylen, "expected a duration from %g to %g seconds, like 60 or 90s",
                     CL_BAN_TIME_MIN, CL_BAN_TIME_MAX);
    cfg->ban_time = v;
    return 0;
}

static int p_target_group(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    if (s_int(value, 1, CL_WORLD_MAX, &cfg->target_group, why, whylen) != 0)
        return -1;
    cfg->target_group_set = true;
    return 0;
}

static int p_compression(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    static const char *const names[] = {"none", "fp16", "int8", "adaptive"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(value, names[i]) == 0) {
            cfg->compression = i;
            cfg->compression_set = true;
            return 0;
        }
    }
    return s_why(why, whylen, "expected none, fp16, int8 or adaptive");
}

static int p_swarm_key(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    return cl_config_value_key(value, &cfg->swarm_key, why, whylen);
}

static int p_swarm_key_file(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    if (cfg->swarm_key != NULL) /* SWARM_KEY comes first in the table */
        return s_why(why, whylen,
                     "expected only one of COLLAB_SWARM_KEY and COLLAB_SWARM_KEY_FILE, not both");
    return cl_config_value_key_file(value, &cfg->swarm_key, why, whylen);
}

static int p_swarm_passphrase(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    if (cfg->swarm_key != NULL) /* both key variables come first in the table */
        return s_why(why, whylen,
                     "expected only one of COLLAB_SWARM_KEY, COLLAB_SWARM_KEY_FILE and "
                     "COLLAB_SWARM_PASSPHRASE");
    size_t n = strlen(value);
    if (n < CL_PASSPHRASE_MIN || n > CL_PASSPHRASE_MAX)
        return s_why(why, whylen, "expected a passphrase of %d to %d bytes", CL_PASSPHRASE_MIN,
                     CL_PASSPHRASE_MAX);
    cfg->swarm_passphrase = strdup(value);
    if (cfg->swarm_passphrase == NULL)
        return s_why(why, whylen, "out of memory");
    return 0;
}

/* Mbit/s with up to three decimals (kbit/s on the wire, a u32), 0 none,
   or "measure". */
static int p_bandwidth(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    double v;
    if (strcmp(value, "measure") == 0) {
        cfg->bandwidth_kbit = 0;
        cfg->bandwidth_measure = true;
        return 0;
    }
    if (cl_config_value_number(value, &v) != 0 || !(v >= 0) || v > 4000000.0 ||
        (v > 0 && v < 0.001))
        return s_why(why, whylen,
                     "expected \"measure\", Mbit/s from 0.001 to 4000000 (this peer's link "
                     "rate, the slower of upload and download), like 100 or 25.5, or 0 for none");
    cfg->bandwidth_kbit = (uint32_t)(v * 1000.0 + 0.5);
    cfg->bandwidth_measure = false;
    return 0;
}

/* Connections per link: 1 .. CL_STRIPES_MAX, "auto" (at most
   CL_STRIPES_AUTO, measured) or "auto:N" (at most N, 2 .. CL_STRIPES_MAX). */
static int p_stripes(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    long v = CL_STRIPES_AUTO;
    const char *why_text = "expected connections per link from 1 to %d, \"auto\" (as many as "
                           "measurement says help, at most %d) or \"auto:N\" (at most N, 2 to %d)";
    bool is_auto = strncmp(value, "auto", 4) == 0 && (value[4] == '\0' || value[4] == ':');
    if (is_auto && value[4] == ':' &&
        cl_config_value_int(value + 5, 2, CL_STRIPES_MAX, &v, NULL, 0) != 0)
        is_auto = false;
    if (!is_auto && cl_config_value_int(value, 1, CL_STRIPES_MAX, &v, NULL, 0) != 0)
        return s_why(why, whylen, why_text, CL_STRIPES_MAX, CL_STRIPES_AUTO, CL_STRIPES_MAX);
    cfg->stripes = (int)v;
    cfg->stripes_auto = is_auto;
    return 0;
}

static int p_weight(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    double v;
    if (cl_config_value_number(value, &v) != 0 || !(v > 0) || v > CL_WEIGHT_MAX)
        return s_why(why, whylen, "expected a number greater than 0 and at most %g, like 1 or 32",
                     CL_WEIGHT_MAX);
    cfg->weight = v;
    return 0;
}

static int p_leave_on(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    if (strcasecmp(value, "SIGTERM") == 0) {
        cfg->leave_on_sigterm = true;
        return 0;
    }
    if (strcasecmp(value, "none") == 0)
        return 0;
    return s_why(why, whylen, "expected SIGTERM or none");
}

static int p_strict(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    if (cl_config_value_bool(value, &cfg->strict, why, whylen) != 0)
        return -1;
    cfg->strict_set = true;
    return 0;
}

static int p_aggregation(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    static const char *const names[] = {"mean", "trimmed_mean", "centered_clip"};
    for (int i = 0; i < 3; i++) {
        if (strcasecmp(value, names[i]) == 0) {
            cfg->aggregation = i;
            cfg->aggregation_set = true;
            return 0;
        }
    }
    return s_why(why, whylen, "expected mean, trimmed_mean or centered_clip");
}

static int p_robust_min(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    if (cl_config_value_int(value, 1, 0x7fffffffL, &cfg->robust_min, why, whylen) != 0)
        return -1;
    cfg->robust_min_set = true;
    return 0;
}

static int p_max_weight_ratio(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    long v;
    if (cl_config_value_int(value, 1, 65536, &v, why, whylen) != 0)
        return -1;
    cfg->max_weight_ratio = (int)v;
    cfg->max_weight_ratio_set = true;
    return 0;
}

static int p_verify(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    if (cl_config_value_bool(value, &cfg->verify, why, whylen) != 0)
        return -1;
    cfg->verify_set = true;
    return 0;
}

static int p_cuda(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    if (strcmp(value, "auto") == 0)
        cfg->cuda = -1;
    else if (strcmp(value, "0") == 0)
        cfg->cuda = 0;
    else if (strcmp(value, "1") == 0)
        cfg->cuda = 1;
    else
        return s_why(why, whylen, "expected auto, 0 or 1");
    return 0;
}

static int p_shm(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    if (strcmp(value, "auto") == 0)
        cfg->shm = true;
    else if (strcmp(value, "0") == 0)
        cfg->shm = false;
    else
        return s_why(why, whylen, "expected auto or 0");
    return 0;
}

static int p_checkpoint_dir(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    return s_path(value, &cfg->checkpoint_dir, "the path of a directory", why, whylen);
}

static int p_relay(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    if (cl_config_value_bool(value, &cfg->relay, why, whylen) != 0)
        return s_why(why, whylen, "expected 1 or 0");
    return 0;
}

static int p_log(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    static const struct {
        const char *name;
        cl_log_level_t level;
    } levels[] = {{"error", CL_LOG_ERROR},
                  {"warn", CL_LOG_WARN},
                  {"warning", CL_LOG_WARN},
                  {"info", CL_LOG_INFO},
                  {"debug", CL_LOG_DEBUG}};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        if (strcasecmp(value, levels[i].name) == 0) {
            cfg->log_level = (int)levels[i].level;
            return 0;
        }
    }
    return s_why(why, whylen, "expected error, warn, info or debug");
}

static int p_log_file(const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    return s_path(value, &cfg->log_file, "the path of a file (unset the variable for stderr)", why,
                  whylen);
}

/* ---------------------------------------------------------------------- */
/* The table.  Order matters only where a parser looks at an earlier
   variable (SWARM_KEY before SWARM_KEY_FILE before SWARM_PASSPHRASE).

   The parser column is a parser of its own, CL_FN(p_...), or one of the
   common kinds with the field of cl_config_t it stores into: CL_INT (an
   int) and CL_LONG (a long) with the range [lo, hi] the value must be
   in, CL_SECONDS (a double: CL_SECONDS_MIN to CL_SECONDS_MAX), CL_BOOL.
   The field's type is checked at compile time.  COLLAB_RANK's bound
   against the world size is checked once both are known (loading). */

typedef enum { CL_KIND_FN, CL_KIND_INT, CL_KIND_LONG, CL_KIND_SECONDS, CL_KIND_BOOL } cl_kind_t;

typedef struct {
    cl_kind_t kind;
    cl_config_parser_t *fn; /* CL_KIND_FN */
    size_t offset;          /* of the field in cl_config_t (the other kinds) */
    long lo, hi;            /* CL_KIND_INT, CL_KIND_LONG: the range allowed */
} cl_config_parse_t;

/* offsetof(cl_config_t, field), which must be of type `type`. */
// clang-format off
#define CL_FIELD(field, type)                                                                      \
    (offsetof(cl_config_t, field) +                                                                \
     0 * sizeof(char[_Generic(((cl_config_t *)0)->field, type: 1, default: -1)]))
#define CL_FN(fn) {CL_KIND_FN, fn, 0, 0, 0}
#define CL_INT(field, lo, hi) {CL_KIND_INT, NULL, CL_FIELD(field, int), lo, hi}
#define CL_LONG(field, lo, hi) {CL_KIND_LONG, NULL, CL_FIELD(field, long), lo, hi}
#define CL_SECONDS(field) {CL_KIND_SECONDS, NULL, CL_FIELD(field, double), 0, 0}
#define CL_BOOL(field) {CL_KIND_BOOL, NULL, CL_FIELD(field, bool), 0, 0}
// clang-format on

// clang-format off
#define CL_CONFIG_VARS(X)                                                                          \
    X("COLLAB_INITIAL_PEERS", "none (this peer starts a new swarm)", CL_FN(p_initial_peers),       \
      "addresses of live peers (/ip4/<ip>/tcp/<port>/p2p/<peer id>), space or comma separated")    \
    X("COLLAB_LISTEN", "/ip4/0.0.0.0/tcp/0 (all interfaces, a free port)", CL_FN(p_listen),        \
      "address to listen on, e.g. /ip4/0.0.0.0/tcp/31337")                                         \
    X("COLLAB_ANNOUNCE", "the listen address", CL_FN(p_announce),                                  \
      "address other peers should use to reach this one (public address behind NAT)")              \
    X("COLLAB_CLIENT_MODE", "auto", CL_FN(p_client_mode),                                          \
      "1: accept no connections, only connect out (behind NAT or a firewall); auto: so when the "  \
      "swarm cannot connect back")                                                                 \
    X("COLLAB_IDENTITY", "none (fresh keys at each start)", CL_FN(p_identity),                     \
      "key file, created (mode 0600) if missing; a restart keeps peer id and rank")                \
    X("COLLAB_RUN_ID", "default", CL_FN(p_run_id),                                                 \
      "experiment name (1-128 printable characters); different runs never mix")                    \
    X("COLLAB_WORLD_SIZE", "64 (collab-run: -n)", CL_FN(p_world_size),                             \
      "nominal MPI_Comm_size, 1-65536; fixed by the peer that founds the swarm")                   \
    X("COLLAB_RANK", "lowest free rank", CL_INT(rank, 0, CL_WORLD_MAX - 1),                        \
      "preferred rank, below the world size")                                                      \
    X("COLLAB_RANK_REQUIRED", "0", CL_BOOL(rank_required),                                         \
      "1: COLLAB_RANK or nothing: while another peer holds it, wait as a standby")                 \
    X("COLLAB_COLLECTIVES_PER_STEP", "learned from the program",                                   \
      CL_INT(collectives_per_step, 1, CL_STEP_MAX),                                                \
      "collectives in one training step, when the period cannot be learned")                       \
    X("COLLAB_MIN_GROUP", "1", CL_INT(min_group, 1, CL_WORLD_MAX),                                 \
      "fewest peers a collective group may have")                                                  \
    X("COLLAB_TARGET_GROUP", "64", CL_FN(p_target_group),                                          \
      "group size at which a leader closes matchmaking at once; larger groups run world "          \
      "all-reduces in several groups of at most this size (swarm-wide)")                           \
    X("COLLAB_MATCHMAKING_TIME", "5", CL_SECONDS(matchmaking_time),                                \
      "seconds a leader waits for followers (\"0.5\", \"250ms\")")                                 \
    X("COLLAB_TIMEOUT", "5", CL_SECONDS(timeout),                                                  \
      "seconds of silence before a peer counts as failed; floor of data deadlines")                \
    X("COLLAB_COMPRESSION", "none", CL_FN(p_compression),                                          \
      "none, fp16, int8 or adaptive (each peer's uploads by the speed of its link): wire format "  \
      "of float SUM payloads (swarm-wide)")                                                        \
    X("COLLAB_SWARM_KEY", "none (open swarm)", CL_FN(p_swarm_key),                                 \
      "shared secret (32 bytes or more): peers without it cannot join")                            \
    X("COLLAB_SWARM_KEY_FILE", "none", CL_FN(p_swarm_key_file),                                    \
      "file holding the shared secret (collab-keygen --swarm-key; mode 0600; a trailing newline "  \
      "is ignored)")                                                                               \
    X("COLLAB_SWARM_PASSPHRASE", "none", CL_FN(p_swarm_passphrase),                                \
      "a passphrase (8 bytes or more) instead of a key, stretched with Argon2id (salt from the "   \
      "run id)")                                                                                   \
    X("COLLAB_WEIGHT", "1", CL_FN(p_weight),                                                       \
      "this peer's averaging weight, e.g. its local batch size")                                   \
    X("COLLAB_BANDWIDTH_MBIT", "measure", CL_FN(p_bandwidth),                                      \
      "Mbit/s of this peer's link (the slower way), `measure` (its upload as TCP acknowledges "    \
      "it while the link is full) or 0 (no figure): butterfly all-reduce parts are sized by "      \
      "the members' figures when every member has one")                                            \
    X("COLLAB_STRIPES", "1", CL_FN(p_stripes),                                                     \
      "TCP connections per link to a peer, 1-16: collective payloads spread over them, for links " \
      "that one connection cannot fill; auto (at most 8) or auto:N: as many as measurement of "    \
      "this peer's upload says help")                                                              \
    X("COLLAB_LEAVE_ON", "none", CL_FN(p_leave_on),                                                \
      "SIGTERM: leave the swarm gracefully when the signal arrives (spot preemption), then end "   \
      "as the program's previous disposition says")                                                \
    X("COLLAB_STRICT", "0", CL_FN(p_strict),                                                       \
      "1: collectives wait for all ranks and failures raise MPIX_ERR_PROC_FAILED (swarm-wide)")    \
    X("COLLAB_AGGREGATION", "mean", CL_FN(p_aggregation),                                          \
      "mean, trimmed_mean or centered_clip: how float SUM all-reduces on the world "               \
      "communicator combine members' contributions (swarm-wide)")                                  \
    X("COLLAB_ROBUST_MIN", "1", CL_FN(p_robust_min),                                               \
      "elements: smaller tensors are summed as with mean in the robust modes (swarm-wide)")        \
    X("COLLAB_MAX_WEIGHT_RATIO", "16", CL_FN(p_max_weight_ratio),                                  \
      "in the robust modes, most a weight counts, relative to the group's median weight "          \
      "(swarm-wide)")                                                                              \
    X("COLLAB_VERIFY", "0", CL_FN(p_verify),                                                       \
      "1: validators drawn at random recompute about one part of each butterfly all-reduce and "   \
      "report a reducer whose result is wrong (swarm-wide)")                                       \
    X("COLLAB_CUDA", "auto", CL_FN(p_cuda),                                                        \
      "device (CUDA) buffers: auto where the NVIDIA driver is found, 0 never, 1 required")         \
    X("COLLAB_CUDA_PIPELINE", "1", CL_BOOL(cuda_pipeline),                                         \
      "1: an all-reduce of 64 KiB or more of device buffers is copied to and from the device "     \
      "chunk by chunk while other chunks are on the network; 0: whole buffers, before and after")  \
    X("COLLAB_NCCL_ASYNC", "0", CL_BOOL(nccl_async),                                               \
      "NCCL face: 0: each call returns once its operation completed; 1: calls return at once "     \
      "and the program's streams wait for the operation (can deadlock, see docs/nccl.md §3)")      \
    X("COLLAB_SHM", "auto", CL_FN(p_shm),                                                          \
      "collective payloads and point-to-point messages between peers of one host (same boot, "    \
      "user and network namespace) through shared memory: auto, or 0 for the network")           \
    X("COLLAB_SHM_FAST", "1", CL_BOOL(shm_fast),                                                   \
      "1: all-reduces, small broadcasts and barriers of a communicator of two peers of one host, "  \
      "and all-reduces of one of 3 to 8 peers all of one host (unless COLLAB_SHM_GROUP=0), are "   \
      "done by the calling thread through shared memory; 0: by the engine")                        \
    X("COLLAB_SHM_GROUP", "1", CL_BOOL(shm_group),                                                 \
      "1: all-reduces of a communicator of 3 to 8 peers all of one host through one shared area "  \
      "(a member slow to call costs the others up to 0.5 s a call); 0: by the engine")             \
    X("COLLAB_HOST_LEADER", "1", CL_BOOL(host_leader),                                             \
      "1: in strict mode, an all-reduce of 64 KiB or more on a communicator spanning hosts with "  \
      "several peers on one is reduced inside each host, exchanged by one leader per host, and "   \
      "broadcast back; 0: every peer exchanges across hosts")                                      \
    X("COLLAB_REPORT_INTERVAL", "5", CL_SECONDS(report_interval),                                  \
      "seconds between two reports of this peer to the swarm's monitors (collab-monitor)")         \
    X("COLLAB_REPORT_LOSS", "0 (off)", CL_INT(report_loss, 0, 1000),                               \
      "N: report the mean of the N-th one-element float SUM all-reduce after each other "          \
      "collective as the loss")                                                                    \
    X("COLLAB_CHECKPOINT_DIR", "none", CL_FN(p_checkpoint_dir),                                    \
      "collab-monitor: directory of the swarm's checkpoints (--checkpoint-dir); read at start "    \
      "to resume a swarm whose peers all died")                                                    \
    X("COLLAB_CHECKPOINT_EVERY", "0 (off)", CL_INT(checkpoint_every, 1, 1L << 30),                 \
      "collab-monitor: steps between two checkpoints (--checkpoint-every)")                        \
    X("COLLAB_RELAY", "0", CL_FN(p_relay),                                                         \
      "collab-monitor: 1 forwards sealed messages between client-mode members (--relay)")          \
    X("COLLAB_RELAY_MBIT", "100", CL_INT(relay_mbit, 1, 1000000),                                  \
      "collab-monitor: Mbit/s the relay forwards at most, in all (--relay-mbit)")                  \
    X("COLLAB_LOG", "info", CL_FN(p_log), "log level: error, warn, info or debug")                 \
    X("COLLAB_LOG_FILE", "stderr", CL_FN(p_log_file), "file the log is appended to")               \
    X("COLLAB_MAX_MESSAGE", "1024", CL_LONG(max_message_mib, 1, 1L << 20),                         \
      "MiB: largest message a peer sends or accepts (frames above it are cut off unread)")         \
    X("COLLAB_MAX_HANDSHAKES", "1024", CL_INT(max_handshakes, 1, 1 << 20),                         \
      "unfinished inbound handshakes kept at once; more get BUSY")                                 \
    X("COLLAB_MAX_HANDSHAKES_PER_HOST", "64", CL_INT(max_handshakes_host, 1, 1 << 20),             \
      "of those, how many one IP address may hold")                                                \
    X("COLLAB_LINK_IDLE", "300", CL_FN(p_link_idle),                                               \
      "seconds after which a silent inbound connection is forgotten")                              \
    X("COLLAB_BAN_TIME", "60", CL_FN(p_ban_time),                                                  \
      "seconds a peer that broke the protocol is ignored, 1-86400 (a member convicted of a "       \
      "wrong result under COLLAB_VERIFY: 10 times as long)")                                       \
    X("COLLAB_MAX_UNEXPECTED", "2048", CL_LONG(max_unexpected_mib, 1, 1L << 24),                   \
      "MiB: unexpected point-to-point messages kept in all, and early collective messages in all") \
    X("COLLAB_MAX_UNEXPECTED_PER_PEER", "1024", CL_LONG(max_unexpected_peer_mib, 1, 1L << 24),     \
      "MiB: of those, how much one sending peer may hold in each")                                 \
    X("COLLAB_MAX_UNEXPECTED_MSGS", "65536", CL_INT(max_unexpected_msgs, 1, 1 << 24),              \
      "messages one sending peer may hold in each (four times as many in all)")                    \
    X("COLLAB_MAX_STREAMS", "1024", CL_INT(max_streams, 1, 1 << 20),                               \
      "communicators this program has not created that peers may open streams for, in all")        \
    X("COLLAB_MAX_STREAMS_PER_PEER", "64", CL_INT(max_streams_peer, 1, 1 << 20),                   \
      "of those, how many one peer may open")                                                      \
    X("COLLAB_MAX_HELD", "256", CL_INT(max_held_mib, 1, 1 << 20),                                  \
      "MiB: data messages kept while the view that admits their sender is on its way, in all")     \
    X("COLLAB_MAX_HELD_MSGS", "16384", CL_INT(max_held_msgs, 1, 1 << 24),                          \
      "of those, how many messages in all")                                                        \
    X("COLLAB_MAX_HELD_PER_PEER", "1024", CL_INT(max_held_peer, 1, 1 << 24),                       \
      "of those, how many messages from one sender")                                               \
    X("COLLAB_FETCH_LIMIT", "4", CL_INT(fetch_limit, 1, 1024),                                     \
      "a donor serves one joiner per admission at most this many times its state (FETCH), "        \
      "then refuses")                                                                              \
    X("COLLAB_WIRE_VERSION", "12", CL_INT(wire_version, 5, CL_CONFIG_WIRE_VERSION),                \
      "highest wire protocol version spoken (11: no stripes, 10: no measured bandwidth figures, "   \
      "9: the exchange "                                                                            \
      "and broadcasts carry no proofs either, 8: "                                                 \
      "relay proofs of the butterfly tagged, not signed, "                                         \
      "7: no flow control of collective messages and no adaptive compression either, 6: no "       \
      "bandwidth figures either, 5: no flow control at all, as peers of the releases before)")
// clang-format on

#define CL_ENTRY(name, def, parser, help) {name, def, help},
#define CL_PARSER(name, def, parser, help) parser,

static const cl_config_entry_t s_entries[] = {CL_CONFIG_VARS(CL_ENTRY)};
static const cl_config_parse_t s_parsers[] = {CL_CONFIG_VARS(CL_PARSER)};
#define CL_NVARS (sizeof s_entries / sizeof s_entries[0])

const cl_config_entry_t *cl_config_table(size_t *n)
{
    if (n != NULL)
        *n = CL_NVARS;
    return s_entries;
}

int cl_config_parse_var(size_t i, const char *value, cl_config_t *cfg, char *why, size_t whylen)
{
    if (i >= CL_NVARS)
        return s_why(why, whylen, "expected a variable of the table");
    const cl_config_parse_t *p = &s_parsers[i];
    char *field = (char *)cfg + p->offset;
    long v;
    switch (p->kind) {
    case CL_KIND_FN:
        return p->fn(value, cfg, why, whylen);
    case CL_KIND_INT:
        if (cl_config_value_int(value, p->lo, p->hi, &v, why, whylen) != 0)
            return -1;
        *(int *)(void *)field = (int)v;
        return 0;
    case CL_KIND_LONG:
        return cl_config_value_int(value, p->lo, p->hi, (long *)(void *)field, why, whylen);
    case CL_KIND_SECONDS:
        return cl_config_value_seconds(value, (double *)(void *)field, why, whylen);
    case CL_KIND_BOOL:
        return cl_config_value_bool(value, (bool *)(void *)field, why, whylen);
    }
    return s_why(why, whylen, "expected a variable of the table");
}

int cl_config_parse_seconds(const char *text, double *out)
{
    char why[200];
    return cl_config_value_seconds(text, out, why, sizeof why);
}
