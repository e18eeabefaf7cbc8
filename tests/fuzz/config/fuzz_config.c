/*  fuzz_config.c - fuzz target for the configuration reader (cl_config).

    The input is an environment, one "NAME=value" entry per line; a name
    that does not start with "COLLAB_" gets that prefix, so the fuzzer
    spends its time on our variables.  The entries go to
    cl_config_load_env (the real environment is not touched).  Invariants:
    a refused environment gives one line that starts with the variable's
    name and leaves the configuration zeroed; an accepted one has every
    field within its documented range.  Nothing is written to disk; a
    COLLAB_SWARM_KEY_FILE entry may make the parser read a file, which it
    does without blocking.  Argon2id is stubbed (cl_secret.h): a
    COLLAB_SWARM_PASSPHRASE entry would otherwise cost 64 MiB and a
    quarter of a second per execution.
*/
#include "util/cl_config.h"
#include "util/cl_config_value.h"
#include "util/cl_log.h"
#include "util/cl_secret.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_MAX_ENTRIES 64

static void s_check_ranges(const cl_config_t *c)
{
    int ok = c->run_id != NULL && strlen(c->run_id) >= 1 && strlen(c->run_id) <= 128 &&
             c->world_size >= 1 && c->world_size <= 65536 && c->rank >= -1 && c->rank < 65536 &&
             c->collectives_per_step >= 0 && c->min_group >= 1 && c->min_group <= c->target_group &&
             c->target_group <= 65536 && c->matchmaking_time >= CL_SECONDS_MIN &&
             c->matchmaking_time <= CL_SECONDS_MAX && c->timeout >= CL_SECONDS_MIN &&
             c->timeout <= CL_SECONDS_MAX && c->compression >= 0 && c->compression <= 2 &&
             isfinite(c->weight) && c->weight > 0 && c->weight <= 1e9 &&
             c->log_level >= CL_LOG_ERROR && c->log_level <= CL_LOG_DEBUG && c->swarm_key == NULL &&
             c->swarm_passphrase == NULL &&
             !(c->client_mode && (c->listen != NULL || c->announce != NULL));
    if (c->world_size_set || c->initial_peers == NULL)
        ok = ok && c->rank < c->world_size && c->min_group <= c->world_size;
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cl_secret_stub_kdf_for_fuzzing(true);
    char *text = malloc(size + 1);
    char *envp[FUZZ_MAX_ENTRIES + 1];
    size_t n = 0;
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    for (char *line = text, *next; line != NULL && n < FUZZ_MAX_ENTRIES; line = next) {
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        size_t len = strlen(line);
        int prefix = strncmp(line, "COLLAB_", 7) != 0;
        char *entry = malloc(len + 8);
        if (entry == NULL)
            break;
        memcpy(entry, "COLLAB_", prefix ? 7 : 0);
        memcpy(entry + (prefix ? 7 : 0), line, len + 1);
        envp[n++] = entry;
    }
    envp[n] = NULL;

    cl_config_t cfg;
    char err[1024];
    err[0] = '\0';
    if (cl_config_load_env(&cfg, envp, err, sizeof err) == 0) {
        s_check_ranges(&cfg);
        cl_config_clear(&cfg);
    } else {
        static const cl_config_t zero;
        if (strncmp(err, "COLLAB_", 7) != 0 || strchr(err, '\n') != NULL ||
            memcmp(&cfg, &zero, sizeof zero) != 0)
            abort();
    }
    for (size_t i = 0; i < n; i++)
        free(envp[i]);
    free(text);
    return 0;
}
