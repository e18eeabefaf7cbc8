/*  cl_config_fixture.h - what the selftests of the configuration
    (cl_config_test: the table and its parsers; cl_config_load_test: the
    loading) share: the real environment cleared and set (setenv/unsetenv)
    before a load, a scratch folder and two valid COLLAB_INITIAL_PEERS
    entries, and checks of the swarm secret.

    Header-only; included by one test file each, after _GNU_SOURCE.
*/
#ifndef CL_CONFIG_FIXTURE_H_INCLUDED
#define CL_CONFIG_FIXTURE_H_INCLUDED

#include "util/cl_config.h"
#include "util/cl_config_value.h"
#include "util/cl_identity.h"
#include "util/cl_log.h"
#include "util/cl_secret.h"
#include "util/cl_selftest.h"

#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

static char s_dir[256];
static char s_peer[200];  /* a valid COLLAB_INITIAL_PEERS entry */
static char s_peer2[200]; /* another one */

static inline void s_clear_env(void)
{
    for (;;) {
        char name[256] = "";
        for (char **e = environ; *e != NULL; e++) {
            if (strncmp(*e, "COLLAB_", 7) == 0) {
                const char *eq = strchr(*e, '=');
                size_t n = eq != NULL ? (size_t)(eq - *e) : strlen(*e);
                if (n < sizeof name) {
                    memcpy(name, *e, n);
                    name[n] = '\0';
                }
                break;
            }
        }
        if (name[0] == '\0')
            return;
        unsetenv(name);
    }
}

/* Sets exactly the given NAME, value pairs (NULL-terminated) and loads. */
static inline int s_load(cl_config_t *cfg, char *err, size_t errlen, ...)
{
    s_clear_env();
    va_list ap;
    va_start(ap, errlen);
    for (const char *name; (name = va_arg(ap, const char *)) != NULL;) {
        const char *value = va_arg(ap, const char *);
        setenv(name, value, 1);
    }
    va_end(ap);
    err[0] = '\0';
    return cl_config_load(cfg, err, errlen);
}

/* Whether cfg holds the swarm secret of key, and no plaintext. */
static inline bool s_secret_is(const cl_config_t *cfg, const char *key)
{
    uint8_t want[32];
    cl_secret_from_key(key, strlen(key), want);
    return cfg->swarm_closed && cfg->swarm_key == NULL && cfg->swarm_passphrase == NULL &&
           memcmp(cfg->swarm_secret, want, 32) == 0;
}

static inline int s_is_zero(const cl_config_t *cfg)
{
    static const cl_config_t zero;
    return memcmp(cfg, &zero, sizeof zero) == 0;
}

/* The scratch folder (removed by s_fixture_fini) and the peers. */
static inline int s_fixture_init(void)
{
    snprintf(s_dir, sizeof s_dir, "/tmp/cl_config_test.XXXXXX");
    if (mkdtemp(s_dir) == NULL) {
        perror("mkdtemp");
        return -1;
    }
    uint8_t key[32];
    char id[CL_PEER_ID_MAX];
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)(200 - i);
    cl_base58_encode(key, 32, id, sizeof id);
    snprintf(s_peer, sizeof s_peer, "/ip4/127.0.0.1/tcp/31337/p2p/%s", id);
    key[0] = 1;
    cl_base58_encode(key, 32, id, sizeof id);
    snprintf(s_peer2, sizeof s_peer2, "/dns/peer.example/tcp/1/p2p/%s", id);
    return 0;
}

static inline void s_fixture_fini(void)
{
    s_clear_env();
    rmdir(s_dir);
}

#endif
