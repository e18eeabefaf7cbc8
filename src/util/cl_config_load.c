/*  cl_config_load.c - loading the configuration from the environment
    (the table of variables and their parsers: cl_config.c).

    Loading runs in three passes over a private copy of the values:
      1. every COLLAB_* name in the environment must be in the table (a
         typo is an error, with a suggestion when a known name is close);
      2. each variable that is set goes through its parser, in table order;
      3. checks that involve several variables (rank below world size,
         group bounds, client mode against listen addresses, ...).
    Then the run id gets its default and the swarm key or passphrase
    becomes the swarm secret.  The first problem stops the load with one
    line in err of the form "COLLAB_X='value': expected ...".  The value
    is quoted through cl_text_quote, and the swarm key is never printed.
    On error *cfg is left zeroed; secrets are wiped on every path, and
    cl_config_load scrubs the key and passphrase from the environment.
*/
#define _GNU_SOURCE
#include "util/cl_config.h"

#include "util/cl_config_int.h"
#include "util/cl_config_value.h"
#include "util/cl_log.h"
#include "util/cl_secret.h"
#include "util/cl_text.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

#define CL_QUOTE_MAX 100 /* characters of a value shown in a message */

/* Writes "NAME='value': reason" into err; secret values are not shown. */
static int s_report(char *err, size_t errlen, const char *name, const char *value,
                    const char *reason)
{
    if (err == NULL || errlen == 0)
        return -1;
    bool secret = strstr(name, "KEY") != NULL || strstr(name, "SECRET") != NULL ||
                  strstr(name, "PASS") != NULL || strstr(name, "TOKEN") != NULL;
    if (secret && strcmp(name, "COLLAB_SWARM_KEY_FILE") != 0) {
        snprintf(err, errlen, "%s=(%zu bytes, not shown): %s", name, strlen(value), reason);
    } else {
        char quoted[CL_QUOTE_MAX * 4 + 8];
        cl_text_quote(value, CL_QUOTE_MAX, quoted, sizeof quoted);
        snprintf(err, errlen, "%s='%s': %s", name, quoted, reason);
    }
    return -1;
}

/* The value of name in envp (first match), or NULL. */
static const char *s_lookup(char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (char *const *e = envp; *e != NULL; e++) {
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    }
    return NULL;
}

/* The known name closest to an unknown one, or NULL when none is close. */
static const char *s_suggest(const char *name)
{
    size_t nvars;
    const cl_config_entry_t *vars = cl_config_table(&nvars);
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    const char *tail = name + strlen("COLLAB_");
    for (size_t i = 0; i < nvars; i++) {
        const char *known = vars[i].name;
        size_t d = cl_text_distance(name, known);
        /* "COLLAB_PEERS" is far from "COLLAB_INITIAL_PEERS" in edits but
           clearly meant; count a contained tail as close. */
        if (strlen(tail) >= 4 && strstr(known, tail) != NULL && d > 3)
            d = 3;
        /* A name that differs only in case is the one meant, whatever
           other name is as many edits away ("COLLAB_log": LOG, not SHM). */
        if (strcasecmp(name, known) == 0)
            d = 0;
        if (d < best_d) {
            best_d = d;
            best = known;
        }
    }
    return best_d <= 3 ? best : NULL;
}

static int s_check_names(char *const *envp, char *err, size_t errlen)
{
    size_t nvars;
    const cl_config_entry_t *vars = cl_config_table(&nvars);
    for (char *const *e = envp; *e != NULL; e++) {
        if (strncmp(*e, "COLLAB_", 7) != 0)
            continue;
        const char *eq = strchr(*e, '=');
        if (eq == NULL)
            continue;
        char name[160];
        size_t n = (size_t)(eq - *e);
        if (n >= sizeof name) {
            char quoted[80];
            snprintf(err, errlen, "%s: unknown variable (name too long)",
                     cl_text_quote(*e, 40, quoted, sizeof quoted));
            return -1;
        }
        memcpy(name, *e, n);
        name[n] = '\0';
        bool known = false;
        for (size_t i = 0; i < nvars && !known; i++)
            known = strcmp(name, vars[i].name) == 0;
        if (known)
            continue;
        char qname[200], reason[200];
        cl_text_quote(name, 40, qname, sizeof qname);
        const char *hint = s_suggest(name);
        if (hint != NULL)
            snprintf(reason, sizeof reason, "unknown variable; did you mean %s?", hint);
        else
            snprintf(reason, sizeof reason, "unknown variable (not an mpicollab setting)");
        return s_report(err, errlen, qname, eq + 1, reason);
    }
    return 0;
}

static void s_defaults(cl_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->world_size = 64;
    cfg->rank = -1;
    cfg->cuda = -1;
    cfg->cuda_pipeline = true;
    cfg->shm = true;
    cfg->shm_fast = true;
    cfg->shm_group = true;
    cfg->host_leader = true;
    cfg->min_group = 1;
    cfg->target_group = 64;
    cfg->matchmaking_time = 5.0;
    cfg->timeout = 5.0;
    cfg->weight = 1.0;
    cfg->bandwidth_measure = true;
    cfg->stripes = 1;
    cfg->client_auto = true;
    cfg->robust_min = 1;
    cfg->max_weight_ratio = 16;
    cfg->report_interval = 5.0;
    cfg->relay_mbit = 100;
    cfg->log_level = CL_LOG_INFO;
    cfg->max_message_mib = 1024;
    cfg->max_handshakes = 1024;
    cfg->max_handshakes_host = 64;
    cfg->link_idle = 300.0;
    cfg->ban_time = 60.0;
    cfg->max_unexpected_mib = 2048;
    cfg->max_unexpected_peer_mib = 1024;
    cfg->max_unexpected_msgs = 65536;
    cfg->max_streams = 1024;
    cfg->max_streams_peer = 64;
    cfg->max_held_mib = 256;
    cfg->max_held_msgs = 16384;
    cfg->max_held_peer = 1024;
    cfg->fetch_limit = 4;
    cfg->wire_version = CL_CONFIG_WIRE_VERSION;
}

/* Wipes and frees the plaintext key and passphrase. */
static void s_wipe_plaintext(cl_config_t *cfg)
{
    if (cfg->swarm_key != NULL)
        sodium_memzero(cfg->swarm_key, strlen(cfg->swarm_key));
    free(cfg->swarm_key);
    cfg->swarm_key = NULL;
    if (cfg->swarm_passphrase != NULL)
        sodium_memzero(cfg->swarm_passphrase, strlen(cfg->swarm_passphrase));
    free(cfg->swarm_passphrase);
    cfg->swarm_passphrase = NULL;
}

/* Checks between variables.  Returns 0 or -1 with err filled. */
static int s_check_combinations(const cl_config_t *cfg, char *const *envp, char *err, size_t errlen)
{
    char reason[300];
    if (cfg->client_mode && cfg->listen != NULL)
        return s_report(err, errlen, "COLLAB_LISTEN", cfg->listen,
                        "expected no listen address with COLLAB_CLIENT_MODE=1 (a client peer "
                        "accepts no connections); unset one of them");
    if (cfg->client_mode && cfg->announce != NULL)
        return s_report(err, errlen, "COLLAB_ANNOUNCE", cfg->announce,
                        "expected no announced address with COLLAB_CLIENT_MODE=1 (a client "
                        "peer accepts no connections); unset one of them");
    /* The world size is known when given, or when this peer founds the
       swarm with the default; a joiner adopts the founder's and the engine
       checks the rank again then. */
    bool size_known = cfg->world_size_set || cfg->initial_peers == NULL;
    const char *size_origin =
        cfg->world_size_set ? "COLLAB_WORLD_SIZE" : "the default world size (COLLAB_WORLD_SIZE)";
    if (cfg->rank_required && cfg->rank < 0)
        return s_report(err, errlen, "COLLAB_RANK_REQUIRED", s_lookup(envp, "COLLAB_RANK_REQUIRED"),
                        "expected COLLAB_RANK too (the rank that is required)");
    if (size_known && cfg->rank >= cfg->world_size) {
        snprintf(reason, sizeof reason, "expected a rank from 0 to %d, below %s %d",
                 cfg->world_size - 1, size_origin, cfg->world_size);
        return s_report(err, errlen, "COLLAB_RANK", s_lookup(envp, "COLLAB_RANK"), reason);
    }
    if (cfg->min_group > cfg->target_group) {
        snprintf(reason, sizeof reason, "expected at most COLLAB_TARGET_GROUP (%d%s)",
                 cfg->target_group,
                 s_lookup(envp, "COLLAB_TARGET_GROUP") == NULL ? ", its default" : "");
        return s_report(err, errlen, "COLLAB_MIN_GROUP", s_lookup(envp, "COLLAB_MIN_GROUP"),
                        reason);
    }
    if (size_known && cfg->min_group > cfg->world_size) {
        snprintf(reason, sizeof reason,
                 "expected at most %s %d (a group never has more members than ranks)", size_origin,
                 cfg->world_size);
        return s_report(err, errlen, "COLLAB_MIN_GROUP", s_lookup(envp, "COLLAB_MIN_GROUP"),
                        reason);
    }
    if (cfg->compression == CL_CONFIG_COMPRESSION_ADAPTIVE &&
        cfg->wire_version < CL_CONFIG_ADAPTIVE_WIRE_VERSION) {
        snprintf(reason, sizeof reason,
                 "adaptive needs wire version %d; COLLAB_WIRE_VERSION is %d",
                 CL_CONFIG_ADAPTIVE_WIRE_VERSION, cfg->wire_version);
        return s_report(err, errlen, "COLLAB_COMPRESSION", s_lookup(envp, "COLLAB_COMPRESSION"),
                        reason);
    }
    /* A swarm that signs keeps older peers out (docs/security.md §6): a
       peer that asks for one cannot speak below it itself. */
    if ((cfg->verify || cfg->aggregation != 0) &&
        cfg->wire_version < CL_CONFIG_SIGNED_WIRE_VERSION) {
        const char *name = cfg->verify ? "COLLAB_VERIFY" : "COLLAB_AGGREGATION";
        snprintf(reason, sizeof reason,
                 "a swarm that signs its relay proofs needs wire version %d on every link; "
                 "COLLAB_WIRE_VERSION is %d",
                 CL_CONFIG_SIGNED_WIRE_VERSION, cfg->wire_version);
        return s_report(err, errlen, name, s_lookup(envp, name), reason);
    }
    return 0;
}

/* Turns the key or passphrase into the swarm secret and wipes the
   plaintext (the salt of a passphrase is the run id, known only now). */
static int s_derive_secret(cl_config_t *cfg, char *err, size_t errlen)
{
    int rc = 0;
    if (cfg->swarm_key != NULL) {
        cl_secret_from_key(cfg->swarm_key, strlen(cfg->swarm_key), cfg->swarm_secret);
        cfg->swarm_closed = true;
    } else if (cfg->swarm_passphrase != NULL) {
        size_t n = strlen(cfg->swarm_passphrase);
        if (cl_secret_from_passphrase(cfg->swarm_passphrase, n, cfg->run_id, cfg->swarm_secret) !=
            0) {
            snprintf(err, errlen,
                     "COLLAB_SWARM_PASSPHRASE=(%zu bytes, not shown): cannot stretch it: "
                     "Argon2id needs %zu MiB of memory",
                     n, CL_SECRET_MEMLIMIT >> 20);
            rc = -1;
        } else {
            cfg->swarm_closed = true;
        }
    }
    s_wipe_plaintext(cfg);
    return rc;
}

int cl_config_load_env(cl_config_t *cfg, char *const *envp, char *err, size_t errlen)
{
    static char *const empty_env[] = {NULL};
    if (cfg == NULL) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "no configuration to fill");
        return -1;
    }
    if (envp == NULL)
        envp = empty_env;
    size_t nvars;
    const cl_config_entry_t *vars = cl_config_table(&nvars);
    s_defaults(cfg);
    if (s_check_names(envp, err, errlen) != 0)
        goto err_cfg;
    for (size_t i = 0; i < nvars; i++) {
        const char *value = s_lookup(envp, vars[i].name);
        if (value == NULL)
            continue;
        char why[900];
        if (strlen(value) > CL_CONFIG_VALUE_MAX) {
            snprintf(why, sizeof why, "expected at most %d bytes", CL_CONFIG_VALUE_MAX);
            s_report(err, errlen, vars[i].name, value, why);
            goto err_cfg;
        }
        if (cl_config_parse_var(i, value, cfg, why, sizeof why) != 0) {
            s_report(err, errlen, vars[i].name, value, why);
            sodium_memzero(why, sizeof why);
            goto err_cfg;
        }
    }
    if (s_check_combinations(cfg, envp, err, errlen) != 0)
        goto err_cfg;
    if (cfg->run_id == NULL) {
        cfg->run_id = strdup("default");
        if (cfg->run_id == NULL) {
            snprintf(err, errlen, "out of memory reading the configuration");
            goto err_cfg;
        }
    }
    if (s_derive_secret(cfg, err, errlen) != 0)
        goto err_cfg;
    return 0;
err_cfg:
    cl_config_clear(cfg);
    return -1;
}

/* Overwrites the value of every "name=..." entry of environ in place, then
   unsets name.  Overwriting reaches the memory that /proc/PID/environ
   shows for variables the process started with; unsetenv alone would only
   drop the pointer. */
static void s_scrub_env(const char *name)
{
    size_t n = strlen(name);
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            sodium_memzero(*e + n + 1, strlen(*e + n + 1));
    }
    unsetenv(name);
}

int cl_config_load(cl_config_t *cfg, char *err, size_t errlen)
{
    int rc = cl_config_load_env(cfg, environ, err, errlen);
    s_scrub_env("COLLAB_SWARM_KEY");
    s_scrub_env("COLLAB_SWARM_PASSPHRASE");
    return rc;
}

void cl_config_clear(cl_config_t *cfg)
{
    if (cfg == NULL)
        return;
    s_wipe_plaintext(cfg);
    sodium_memzero(cfg->swarm_secret, sizeof cfg->swarm_secret);
    free(cfg->initial_peers);
    free(cfg->listen);
    free(cfg->announce);
    free(cfg->identity);
    free(cfg->run_id);
    free(cfg->log_file);
    free(cfg->checkpoint_dir);
    memset(cfg, 0, sizeof *cfg);
}
