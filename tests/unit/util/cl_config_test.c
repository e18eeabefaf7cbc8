/*  cl_config_test.c - selftest of cl_config: every variable with good and
    bad values through the real environment (setenv/unsetenv), checks that
    span several variables, unknown names with suggestions, the swarm key
    file rules, and that messages name the variable and the value. */
#define _GNU_SOURCE
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

static void s_clear_env(void)
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
static int s_load(cl_config_t *cfg, char *err, size_t errlen, ...)
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
static bool s_secret_is(const cl_config_t *cfg, const char *key)
{
    uint8_t want[32];
    cl_secret_from_key(key, strlen(key), want);
    return cfg->swarm_closed && cfg->swarm_key == NULL && cfg->swarm_passphrase == NULL &&
           memcmp(cfg->swarm_secret, want, 32) == 0;
}

static int s_is_zero(const cl_config_t *cfg)
{
    static const cl_config_t zero;
    return memcmp(cfg, &zero, sizeof zero) == 0;
}

static void test_defaults(void)
{
    cl_config_t cfg;
    char err[512];
    CL_CHECK(s_load(&cfg, err, sizeof err, NULL) == 0);
    CL_CHECK(cfg.initial_peers == NULL && cfg.listen == NULL && cfg.announce == NULL);
    CL_CHECK(!cfg.client_mode && cfg.identity == NULL);
    CL_CHECK_STREQ(cfg.run_id, "default");
    CL_CHECK(cfg.cuda == -1); /* COLLAB_CUDA=auto */
    CL_CHECK(cfg.shm);        /* COLLAB_SHM=auto */
    CL_CHECK(cfg.world_size == 64 && !cfg.world_size_set);
    CL_CHECK(cfg.rank == -1 && cfg.collectives_per_step == 0);
    CL_CHECK(cfg.min_group == 1 && cfg.target_group == 64);
    CL_CHECK(cfg.matchmaking_time == 5.0 && cfg.timeout == 5.0);
    CL_CHECK(cfg.compression == 0 && !cfg.compression_set);
    CL_CHECK(cfg.swarm_key == NULL && !cfg.swarm_closed && cfg.weight == 1.0);
    CL_CHECK(!cfg.strict && !cfg.strict_set);
    CL_CHECK(cfg.log_level == CL_LOG_INFO && cfg.log_file == NULL);
    cl_config_clear(&cfg);
    CL_CHECK(s_is_zero(&cfg));
    cl_config_clear(&cfg); /* twice is fine */
    cl_config_clear(NULL);
    /* Variables of other programs are none of our business. */
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLABX", "1", "MY_COLLAB_THING", "2", NULL) == 0);
    cl_config_clear(&cfg);
}

static void test_good_values(void)
{
    cl_config_t cfg;
    char err[1024], peers[600];
    snprintf(peers, sizeof peers, " %s, %s ", s_peer, s_peer2);
    int rc =
        s_load(&cfg, err, sizeof err, "COLLAB_INITIAL_PEERS", peers, "COLLAB_LISTEN",
               "/ip4/127.0.0.1/tcp/31337", "COLLAB_ANNOUNCE", "/dns/peer.example/tcp/4000",
               "COLLAB_IDENTITY", "/tmp/some id.key", "COLLAB_RUN_ID", "exp-42_b/c",
               "COLLAB_WORLD_SIZE", "8", "COLLAB_RANK", "7", "COLLAB_COLLECTIVES_PER_STEP", "4",
               "COLLAB_MIN_GROUP", "2", "COLLAB_TARGET_GROUP", "2", "COLLAB_MATCHMAKING_TIME",
               "250ms", "COLLAB_TIMEOUT", "2.5s", "COLLAB_COMPRESSION", "FP16", "COLLAB_SWARM_KEY",
               "0123456789abcdef0123456789abcdef", "COLLAB_WEIGHT", "32.5", "COLLAB_STRICT", "yes",
               "COLLAB_LOG", "debug", "COLLAB_LOG_FILE", "/tmp/collab.log", NULL);
    CL_CHECK(rc == 0);
    if (rc != 0) {
        fprintf(stderr, "  %s\n", err);
        return;
    }
    CL_CHECK_STREQ(cfg.initial_peers, peers);
    CL_CHECK_STREQ(cfg.listen, "/ip4/127.0.0.1/tcp/31337");
    CL_CHECK_STREQ(cfg.announce, "/dns/peer.example/tcp/4000");
    CL_CHECK_STREQ(cfg.identity, "/tmp/some id.key");
    CL_CHECK_STREQ(cfg.run_id, "exp-42_b/c");
    CL_CHECK(cfg.world_size == 8 && cfg.world_size_set);
    CL_CHECK(cfg.rank == 7 && cfg.collectives_per_step == 4);
    CL_CHECK(cfg.min_group == 2 && cfg.target_group == 2);
    CL_CHECK(fabs(cfg.matchmaking_time - 0.25) < 1e-12 && cfg.timeout == 2.5);
    CL_CHECK(cfg.compression == 1 && cfg.compression_set);
    CL_CHECK(s_secret_is(&cfg, "0123456789abcdef0123456789abcdef"));
    CL_CHECK(cfg.weight == 32.5 && cfg.strict && cfg.strict_set);
    CL_CHECK(cfg.log_level == CL_LOG_DEBUG);
    CL_CHECK_STREQ(cfg.log_file, "/tmp/collab.log");
    cl_config_clear(&cfg);
    CL_CHECK(s_is_zero(&cfg));

    /* One variable at a time: name, value, and a check of the result. */
    const struct {
        const char *name, *value;
        int field; /* which field to compare */
        double expect;
    } cases[] = {
        {"COLLAB_CLIENT_MODE", "1", 0, 1},
        {"COLLAB_CLIENT_MODE", "TRUE", 0, 1},
        {"COLLAB_CLIENT_MODE", "no", 0, 0},
        {"COLLAB_CLIENT_MODE", "0", 0, 0},
        {"COLLAB_STRICT", "False", 1, 0},
        {"COLLAB_STRICT", "1", 1, 1},
        {"COLLAB_WORLD_SIZE", "1", 2, 1},
        {"COLLAB_WORLD_SIZE", "65536", 2, 65536},
        {"COLLAB_WORLD_SIZE", "007", 2, 7},
        {"COLLAB_RANK", "0", 3, 0},
        {"COLLAB_RANK", "63", 3, 63},
        {"COLLAB_TIMEOUT", "5", 4, 5},
        {"COLLAB_TIMEOUT", "0.001", 4, 0.001},
        {"COLLAB_TIMEOUT", "1ms", 4, 0.001},
        {"COLLAB_TIMEOUT", "1000000", 4, 1e6},
        {"COLLAB_TIMEOUT", "1e2", 4, 100},
        {"COLLAB_TIMEOUT", ".5", 4, 0.5},
        {"COLLAB_TIMEOUT", "3.", 4, 3},
        {"COLLAB_TIMEOUT", "2.5E-1s", 4, 0.25},
        {"COLLAB_WEIGHT", "1e9", 5, 1e9},
        {"COLLAB_WEIGHT", "0.000001", 5, 1e-6},
        {"COLLAB_COMPRESSION", "int8", 6, 2},
        {"COLLAB_COMPRESSION", "none", 6, 0},
        {"COLLAB_COMPRESSION", "Adaptive", 6, 3},
        {"COLLAB_LOG", "WARN", 7, CL_LOG_WARN},
        {"COLLAB_LOG", "warning", 7, CL_LOG_WARN},
        {"COLLAB_LOG", "error", 7, CL_LOG_ERROR},
        {"COLLAB_LOG", "info", 7, CL_LOG_INFO},
        {"COLLAB_MIN_GROUP", "64", 8, 64},
        {"COLLAB_TARGET_GROUP", "1", 9, 1},
        {"COLLAB_COLLECTIVES_PER_STEP", "1000000", 10, 1e6},
        {"COLLAB_MATCHMAKING_TIME", "0.05", 11, 0.05},
        {"COLLAB_CUDA", "auto", 12, -1},
        {"COLLAB_CUDA", "0", 12, 0},
        {"COLLAB_CUDA", "1", 12, 1},
        {"COLLAB_SHM", "auto", 14, 1},
        {"COLLAB_SHM", "0", 14, 0},
        {"COLLAB_SHM_FAST", "1", 15, 1},
        {"COLLAB_SHM_FAST", "0", 15, 0},
        {"COLLAB_CUDA_PIPELINE", "0", 16, 0},
        {"COLLAB_CUDA_PIPELINE", "true", 16, 1},
        {"COLLAB_LEAVE_ON", "SIGTERM", 13, 1},
        {"COLLAB_LEAVE_ON", "sigterm", 13, 1},
        {"COLLAB_LEAVE_ON", "none", 13, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rc = s_load(&cfg, err, sizeof err, cases[i].name, cases[i].value, NULL);
        CL_CHECK(rc == 0);
        if (rc != 0) {
            fprintf(stderr, "  %s\n", err);
            continue;
        }
        double got = 0;
        switch (cases[i].field) {
        case 0:
            got = cfg.client_mode;
            break;
        case 1:
            got = cfg.strict;
            CL_CHECK(cfg.strict_set);
            break;
        case 2:
            got = cfg.world_size;
            CL_CHECK(cfg.world_size_set);
            break;
        case 3:
            got = cfg.rank;
            break;
        case 4:
            got = cfg.timeout;
            break;
        case 5:
            got = cfg.weight;
            break;
        case 13:
            got = cfg.leave_on_sigterm;
            break;
        case 6:
            got = cfg.compression;
            CL_CHECK(cfg.compression_set);
            break;
        case 7:
            got = cfg.log_level;
            break;
        case 8:
            got = cfg.min_group;
            break;
        case 9:
            got = cfg.target_group;
            break;
        case 10:
            got = cfg.collectives_per_step;
            break;
        case 11:
            got = cfg.matchmaking_time;
            break;
        case 12:
            got = cfg.cuda;
            break;
        case 14:
            got = cfg.shm;
            break;
        case 15:
            got = cfg.shm_fast;
            break;
        case 16:
            got = cfg.cuda_pipeline;
            break;
        }
        CL_CHECK(fabs(got - cases[i].expect) <= 1e-12 * fabs(cases[i].expect));
        if (fabs(got - cases[i].expect) > 1e-12 * fabs(cases[i].expect))
            fprintf(stderr, "  %s=%s gave %g\n", cases[i].name, cases[i].value, got);
        cl_config_clear(&cfg);
    }
    /* A joiner does not know the swarm's size yet: any rank up to 65535. */
    rc = s_load(&cfg, err, sizeof err, "COLLAB_INITIAL_PEERS", s_peer, "COLLAB_RANK", "1000",
                "COLLAB_MIN_GROUP", "64", NULL);
    CL_CHECK(rc == 0 && cfg.rank == 1000);
    cl_config_clear(&cfg);
    rc = s_load(&cfg, err, sizeof err, "COLLAB_LISTEN", "/ip6/::/tcp/0", NULL);
    CL_CHECK(rc == 0);
    cl_config_clear(&cfg);
}

/* Each bad setting must fail with "NAME='value': ..." naming the value
   and a reason containing `why`, and leave cfg zeroed. */
static void test_bad_values(void)
{
    char long_value[CL_CONFIG_VALUE_MAX + 2];
    memset(long_value, '1', sizeof long_value - 1);
    long_value[sizeof long_value - 1] = '\0';
    char run_129[130];
    memset(run_129, 'r', 129);
    run_129[129] = '\0';
    char no_key[200];
    snprintf(no_key, sizeof no_key, "/ip4/127.0.0.1/tcp/5");

    const struct {
        const char *name, *value, *why;
    } cases[] = {
        {"COLLAB_INITIAL_PEERS", "", "one or more addresses"},
        {"COLLAB_INITIAL_PEERS", " , ", "one or more addresses"},
        {"COLLAB_INITIAL_PEERS", no_key, "no /p2p/"},
        {"COLLAB_INITIAL_PEERS", "/ip4/1.2.3/tcp/5/p2p/x", "not an IPv4"},
        {"COLLAB_INITIAL_PEERS", "localhost:5000", "does not start with '/'"},
        {"COLLAB_LISTEN", "", "expected an address"},
        {"COLLAB_LISTEN", "tcp://0.0.0.0:5", "expected an address"},
        {"COLLAB_LISTEN", "/ip4/0.0.0.0/tcp/70000", "not a port"},
        {"COLLAB_LISTEN", "/dns/localhost/tcp/5", "/ip4 or /ip6"},
        {"COLLAB_LISTEN", s_peer, "without /p2p/"},
        {"COLLAB_ANNOUNCE", "/ip4/1.2.3.4/tcp/5/x", "expected an address"},
        {"COLLAB_ANNOUNCE", s_peer, "without /p2p/"},
        {"COLLAB_CLIENT_MODE", "", "expected auto, 1 or 0"},
        {"COLLAB_CLIENT_MODE", "2", "expected auto, 1 or 0"},
        {"COLLAB_CLIENT_MODE", "on", "expected auto, 1 or 0"},
        {"COLLAB_CLIENT_MODE", " 1", "expected auto, 1 or 0"},
        {"COLLAB_CLIENT_MODE", "1 ", "expected auto, 1 or 0"},
        {"COLLAB_IDENTITY", "", "path of a key file"},
        {"COLLAB_RUN_ID", "", "printable"},
        {"COLLAB_RUN_ID", "two words", "printable"},
        {"COLLAB_RUN_ID", "tab\there", "printable"},
        {"COLLAB_RUN_ID", "caf\xc3\xa9", "printable"},
        {"COLLAB_RUN_ID", run_129, "1 to 128"},
        {"COLLAB_WORLD_SIZE", "", "integer from 1 to 65536"},
        {"COLLAB_WORLD_SIZE", "0", "integer from 1 to 65536"},
        {"COLLAB_WORLD_SIZE", "65537", "integer from 1 to 65536"},
        {"COLLAB_WORLD_SIZE", "-4", "integer from 1 to 65536"},
        {"COLLAB_WORLD_SIZE", "+4", "integer from 1 to 65536"},
        {"COLLAB_WORLD_SIZE", "4x", "integer from 1 to 65536"},
        {"COLLAB_WORLD_SIZE", "4 ", "integer from 1 to 65536"},
        {"COLLAB_WORLD_SIZE", " 4", "integer from 1 to 65536"},
        {"COLLAB_WORLD_SIZE", "4.0", "integer from 1 to 65536"},
        {"COLLAB_WORLD_SIZE", "0x10", "integer from 1 to 65536"},
        {"COLLAB_WORLD_SIZE", "99999999999999999999999", "integer from 1 to 65536"},
        {"COLLAB_RANK", "-1", "integer from 0 to 65535"},
        {"COLLAB_RANK", "64", "expected a rank from 0 to 63"},
        {"COLLAB_RANK", "r2", "integer from 0"},
        {"COLLAB_COLLECTIVES_PER_STEP", "0", "integer from 1 to 1000000"},
        {"COLLAB_COLLECTIVES_PER_STEP", "1000001", "integer from 1 to 1000000"},
        {"COLLAB_MIN_GROUP", "0", "integer from 1 to 65536"},
        {"COLLAB_MIN_GROUP", "65", "at most COLLAB_TARGET_GROUP (64, its default)"},
        {"COLLAB_TARGET_GROUP", "0", "integer from 1 to 65536"},
        {"COLLAB_TARGET_GROUP", "65537", "integer from 1 to 65536"},
        {"COLLAB_MATCHMAKING_TIME", "0", "duration in seconds"},
        {"COLLAB_MATCHMAKING_TIME", "-1", "duration in seconds"},
        {"COLLAB_MATCHMAKING_TIME", "5m", "duration in seconds"},
        {"COLLAB_TIMEOUT", "", "duration in seconds"},
        {"COLLAB_TIMEOUT", "0.0009", "duration in seconds"},
        {"COLLAB_TIMEOUT", "0.5ms", "duration in seconds"},
        {"COLLAB_TIMEOUT", "1000001", "duration in seconds"},
        {"COLLAB_TIMEOUT", "inf", "duration in seconds"},
        {"COLLAB_TIMEOUT", "nan", "duration in seconds"},
        {"COLLAB_TIMEOUT", "1e999", "duration in seconds"},
        {"COLLAB_TIMEOUT", "0x10", "duration in seconds"},
        {"COLLAB_TIMEOUT", "5,0", "duration in seconds"},
        {"COLLAB_TIMEOUT", "5 s", "duration in seconds"},
        {"COLLAB_TIMEOUT", "s", "duration in seconds"},
        {"COLLAB_TIMEOUT", "ms", "duration in seconds"},
        {"COLLAB_TIMEOUT", ".", "duration in seconds"},
        {"COLLAB_TIMEOUT", "1e", "duration in seconds"},
        {"COLLAB_TIMEOUT", "+5", "duration in seconds"},
        {"COLLAB_TIMEOUT", "5ss", "duration in seconds"},
        {"COLLAB_COMPRESSION", "", "none, fp16, int8 or adaptive"},
        {"COLLAB_COMPRESSION", "fp32", "none, fp16, int8 or adaptive"},
        {"COLLAB_COMPRESSION", "fp16 ", "none, fp16, int8 or adaptive"},
        {"COLLAB_WEIGHT", "0", "greater than 0"},
        {"COLLAB_WEIGHT", "-1", "greater than 0"},
        {"COLLAB_WEIGHT", "1e10", "greater than 0"},
        {"COLLAB_WEIGHT", "inf", "greater than 0"},
        {"COLLAB_WEIGHT", "NaN", "greater than 0"},
        {"COLLAB_WEIGHT", "", "greater than 0"},
        {"COLLAB_WEIGHT", "1/2", "greater than 0"},
        {"COLLAB_LEAVE_ON", "SIGINT", "expected SIGTERM or none"},
        {"COLLAB_LEAVE_ON", "", "expected SIGTERM or none"},
        {"COLLAB_LEAVE_ON", "TERM", "expected SIGTERM or none"},
        {"COLLAB_STRICT", "strict", "expected 1 or 0"},
        {"COLLAB_CUDA", "yes", "expected auto, 0 or 1"},
        {"COLLAB_CUDA", "AUTO", "expected auto, 0 or 1"},
        {"COLLAB_CUDA", "", "expected auto, 0 or 1"},
        {"COLLAB_SHM", "1", "expected auto or 0"},
        {"COLLAB_SHM", "off", "expected auto or 0"},
        {"COLLAB_SHM", "", "expected auto or 0"},
        {"COLLAB_SHM_FAST", "auto", "expected 1 or 0"},
        {"COLLAB_CUDA_PIPELINE", "auto", "expected 1 or 0"},
        {"COLLAB_LOG", "verbose", "error, warn, info or debug"},
        {"COLLAB_LOG", "", "error, warn, info or debug"},
        {"COLLAB_LOG_FILE", "", "path of a file"},
        {"COLLAB_TIMEOUT", long_value, "at most 262144 bytes"},
        {"COLLAB_RUN_ID", "bad\nline\x1b[0m", "printable"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cl_config_t cfg;
        char err[1024];
        int rc = s_load(&cfg, err, sizeof err, cases[i].name, cases[i].value, NULL);
        CL_CHECK(rc == -1);
        if (rc != -1)
            fprintf(stderr, "  accepted %s='%s'\n", cases[i].name, cases[i].value);
        CL_CHECK(s_is_zero(&cfg));
        char head[300];
        snprintf(head, sizeof head, "%s='%.40s", cases[i].name, cases[i].value);
        if (strspn(cases[i].value, " !#$%&()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                   "[]^_`abcdefghijklmnopqrstuvwxyz{|}~") == strlen(cases[i].value))
            CL_CHECK(strncmp(err, head, strlen(head)) == 0); /* names variable and value */
        else
            CL_CHECK(strncmp(err, head, strlen(cases[i].name) + 2) == 0);
        CL_CHECK_CONTAINS(err, "expected");
        CL_CHECK_CONTAINS(err, cases[i].why);
        CL_CHECK(strchr(err, '\n') == NULL && strchr(err, '\x1b') == NULL); /* one clean line */
        CL_CHECK(strlen(err) < 700);
    }
}

static void test_combinations(void)
{
    cl_config_t cfg;
    char err[1024];
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_WORLD_SIZE", "4", "COLLAB_RANK", "4", NULL) ==
             -1);
    CL_CHECK_STREQ(err, "COLLAB_RANK='4': expected a rank from 0 to 3, below COLLAB_WORLD_SIZE 4");
    /* With peers to join and an explicit size, the rank is still checked. */
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_INITIAL_PEERS", s_peer, "COLLAB_WORLD_SIZE", "2",
                    "COLLAB_RANK", "2", NULL) == -1);
    CL_CHECK_CONTAINS(err, "COLLAB_RANK='2'");
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_MIN_GROUP", "5", "COLLAB_TARGET_GROUP", "4",
                    NULL) == -1);
    CL_CHECK_STREQ(err, "COLLAB_MIN_GROUP='5': expected at most COLLAB_TARGET_GROUP (4)");
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_MIN_GROUP", "5", "COLLAB_WORLD_SIZE", "4",
                    NULL) == -1);
    CL_CHECK_CONTAINS(err, "COLLAB_MIN_GROUP='5': expected at most COLLAB_WORLD_SIZE 4");
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_CLIENT_MODE", "1", "COLLAB_LISTEN",
                    "/ip4/0.0.0.0/tcp/5", NULL) == -1);
    CL_CHECK_CONTAINS(err, "COLLAB_LISTEN='/ip4/0.0.0.0/tcp/5': expected no listen address");
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_CLIENT_MODE", "1", "COLLAB_ANNOUNCE",
                    "/ip4/1.2.3.4/tcp/5", NULL) == -1);
    CL_CHECK_CONTAINS(err, "COLLAB_ANNOUNCE='/ip4/1.2.3.4/tcp/5'");
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_CLIENT_MODE", "1", NULL) == 0);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_SWARM_KEY", "0123456789abcdef0123456789abcdef",
                    "COLLAB_SWARM_KEY_FILE", "/nonexistent", NULL) == -1);
    CL_CHECK_CONTAINS(err, "COLLAB_SWARM_KEY_FILE='/nonexistent': expected only one of");
    CL_CHECK(s_is_zero(&cfg));
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_SWARM_KEY", "0123456789abcdef0123456789abcdef",
                    "COLLAB_SWARM_PASSPHRASE", "correct horse battery", NULL) == -1);
    CL_CHECK_STREQ(err, "COLLAB_SWARM_PASSPHRASE=(21 bytes, not shown): expected only one of "
                        "COLLAB_SWARM_KEY, COLLAB_SWARM_KEY_FILE and COLLAB_SWARM_PASSPHRASE");
    CL_CHECK(s_is_zero(&cfg));
}

static void test_unknown_names(void)
{
    cl_config_t cfg;
    char err[1024];
    const struct {
        const char *name, *value, *expect;
    } cases[] = {
        {"COLLAB_TIMOUT", "5", "COLLAB_TIMOUT='5': unknown variable; did you mean COLLAB_TIMEOUT?"},
        {"COLLAB_INITIAL_PEER", "x", "did you mean COLLAB_INITIAL_PEERS?"},
        {"COLLAB_PEERS", "x", "did you mean COLLAB_INITIAL_PEERS?"},
        {"COLLAB_WORLDSIZE", "4", "did you mean COLLAB_WORLD_SIZE?"},
        {"COLLAB_log", "debug", "did you mean COLLAB_LOG?"},
        {"COLLAB_FROBNICATE", "1", "COLLAB_FROBNICATE='1': unknown variable (not an mpicollab"},
        {"COLLAB_", "1", "COLLAB_='1': unknown variable"},
        {"COLLAB_SWARMKEY", "hunter2hunter2hunter2", "COLLAB_SWARMKEY=(21 bytes, not shown)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CL_CHECK(s_load(&cfg, err, sizeof err, cases[i].name, cases[i].value, NULL) == -1);
        CL_CHECK_CONTAINS(err, cases[i].expect);
        CL_CHECK(strstr(err, "hunter2") == NULL);
        CL_CHECK(s_is_zero(&cfg));
    }
    /* Unknown names are reported even when a known variable is bad too. */
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_TIMEOUT", "x", "COLLAB_TIMEOUTS", "5", NULL) ==
             -1);
    CL_CHECK_CONTAINS(err, "COLLAB_TIMEOUTS");
}

static void s_write(const char *path, const char *text, size_t len, mode_t mode)
{
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    CL_CHECK(fd >= 0);
    if (fd < 0)
        return;
    CL_CHECK(write(fd, text, len) == (ssize_t)len);
    CL_CHECK(fchmod(fd, mode) == 0);
    close(fd);
}

static void test_swarm_key(void)
{
    cl_config_t cfg;
    char err[1024], path[300];
    snprintf(path, sizeof path, "%s/swarm.key", s_dir);

    /* Inline key: at least 32 bytes, and never shown; 16 bytes, which
       earlier versions accepted, are refused. */
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_SWARM_KEY", "short-secret", NULL) == -1);
    CL_CHECK_STREQ(err, "COLLAB_SWARM_KEY=(12 bytes, not shown): expected a secret of 32 to "
                        "4096 bytes");
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_SWARM_KEY", "0123456789abcdef0123456789abcde",
                    NULL) == -1);
    CL_CHECK_STREQ(err, "COLLAB_SWARM_KEY=(31 bytes, not shown): expected a secret of 32 to "
                        "4096 bytes");
    CL_CHECK(s_is_zero(&cfg));

    s_write(path, "a secret of thirty-five characters\n", 35, 0600);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_SWARM_KEY_FILE", path, NULL) == 0);
    CL_CHECK(s_secret_is(&cfg, "a secret of thirty-five characters"));
    cl_config_clear(&cfg);
    CL_CHECK(s_is_zero(&cfg));
    s_write(path, "a secret of thirty-five characters\r\n\n", 37, 0400);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_SWARM_KEY_FILE", path, NULL) == 0);
    CL_CHECK(s_secret_is(&cfg, "a secret of thirty-five characters"));
    cl_config_clear(&cfg);
    s_write(path, "0123456789abcdef0123456789abcdef", 32, 0600); /* no newline, exactly 32 */
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_SWARM_KEY_FILE", path, NULL) == 0);
    CL_CHECK(s_secret_is(&cfg, "0123456789abcdef0123456789abcdef"));
    cl_config_clear(&cfg);
    /* A symbolic link is refused, and (as root, who can give a file away)
       a file of another user (docs/security.md). */
    char link_path[600];
    snprintf(link_path, sizeof link_path, "%s.link", path);
    unlink(link_path);
    CL_CHECK(symlink(path, link_path) == 0);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_SWARM_KEY_FILE", link_path, NULL) == -1);
    CL_CHECK_CONTAINS(err, "symbolic link");
    unlink(link_path);
    if (geteuid() == 0) {
        CL_CHECK(chown(path, 12345, 12345) == 0);
        CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_SWARM_KEY_FILE", path, NULL) == -1);
        CL_CHECK_CONTAINS(err, "owned by this user (it belongs to user 12345)");
        CL_CHECK(chown(path, 0, 0) == 0);
    }

    const struct {
        const char *text;
        size_t len;
        mode_t mode;
        const char *why;
    } cases[] = {
        {"a secret of thirty-five characters\n", 35, 0644,
         "group and others cannot access (mode is 0644"},
        {"a secret of thirty-five characters\n", 35, 0640, "mode is 0640"},
        {"a secret of thirty-five characters\n", 35, 0602, "mode is 0602"},
        {"too short\n", 10, 0600, "32 to 4096 bytes"},
        {"0123456789abcdef\n", 17, 0600, "32 to 4096 bytes"},
        {"", 0, 0600, "32 to 4096 bytes"},
        {"\n\n\n", 3, 0600, "32 to 4096 bytes"},
        {"0123456789\0abcdefgh0123456789abcdef", 36, 0600, "NUL"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s_write(path, cases[i].text, cases[i].len, cases[i].mode);
        CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_SWARM_KEY_FILE", path, NULL) == -1);
        CL_CHECK(strncmp(err, "COLLAB_SWARM_KEY_FILE='", 23) == 0);
        CL_CHECK_CONTAINS(err, path);
        CL_CHECK_CONTAINS(err, cases[i].why);
        CL_CHECK(strstr(err, "thirty-five") == NULL);
    }
    static char big[5000];
    memset(big, 'k', sizeof big);
    s_write(path, big, sizeof big, 0600);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_SWARM_KEY_FILE", path, NULL) == -1);
    CL_CHECK_CONTAINS(err, "32 to 4096 bytes");
    unlink(path);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_SWARM_KEY_FILE", path, NULL) == -1);
    CL_CHECK_CONTAINS(err, "No such file or directory");
    CL_CHECK(mkfifo(path, 0600) == 0); /* must not block */
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_SWARM_KEY_FILE", path, NULL) == -1);
    CL_CHECK_CONTAINS(err, "regular file");
    unlink(path);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_SWARM_KEY_FILE", s_dir, NULL) == -1);
    CL_CHECK_CONTAINS(err, "regular file");
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_SWARM_KEY_FILE", "", NULL) == -1);
    CL_CHECK_CONTAINS(err, "expected the path");
}

static void test_swarm_passphrase(void)
{
    cl_config_t cfg;
    char err[1024];
    /* Too short, never shown. */
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_SWARM_PASSPHRASE", "hunter2", NULL) == -1);
    CL_CHECK_STREQ(err, "COLLAB_SWARM_PASSPHRASE=(7 bytes, not shown): expected a passphrase of "
                        "8 to 4096 bytes");
    /* Argon2id with the run id as salt: the same passphrase gives the same
       secret in one run, another in another run, and never the secret of
       a key with the same text. */
    uint8_t s1[32], s2[32], s3[32];
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_SWARM_PASSPHRASE", "correct horse battery",
                    "COLLAB_RUN_ID", "run-a", NULL) == 0);
    CL_CHECK(cfg.swarm_closed && cfg.swarm_passphrase == NULL);
    memcpy(s1, cfg.swarm_secret, 32);
    cl_config_clear(&cfg);
    CL_CHECK(cl_secret_from_passphrase("correct horse battery", 21, "run-a", s2) == 0);
    CL_CHECK(memcmp(s1, s2, 32) == 0);
    CL_CHECK(cl_secret_from_passphrase("correct horse battery", 21, "run-b", s3) == 0);
    CL_CHECK(memcmp(s1, s3, 32) != 0);
    CL_CHECK(cl_secret_from_passphrase("correct horse batterz", 21, "run-a", s3) == 0);
    CL_CHECK(memcmp(s1, s3, 32) != 0);
    cl_secret_from_key("correct horse battery", 21, s3);
    CL_CHECK(memcmp(s1, s3, 32) != 0);
}

/* cl_config_load overwrites the key and the passphrase where environ held
   them and unsets both, on success and on error. */
static void test_environ_scrubbed(void)
{
    cl_config_t cfg;
    char err[1024];
    static const char key[] = "0123456789abcdef0123456789abcdef-scrub";
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_SWARM_KEY", key, NULL) == 0);
    CL_CHECK(s_secret_is(&cfg, key));
    CL_CHECK(getenv("COLLAB_SWARM_KEY") == NULL);
    cl_config_clear(&cfg);

    /* The string environ pointed to is zeroed, not only unlinked. */
    s_clear_env();
    setenv("COLLAB_SWARM_PASSPHRASE", "correct horse battery", 1);
    setenv("COLLAB_TIMEOUT", "bogus", 1);
    char *value = getenv("COLLAB_SWARM_PASSPHRASE");
    CL_CHECK(value != NULL);
    CL_CHECK(cl_config_load(&cfg, err, sizeof err) == -1);
    CL_CHECK_CONTAINS(err, "COLLAB_TIMEOUT='bogus'");
    CL_CHECK(getenv("COLLAB_SWARM_PASSPHRASE") == NULL);
    static const char zeros[21];
    CL_CHECK(value != NULL && memcmp(value, zeros, sizeof zeros) == 0);
    CL_CHECK(getenv("COLLAB_TIMEOUT") != NULL); /* other variables stay */
    s_clear_env();
}

static void test_load_env_and_seconds(void)
{
    cl_config_t cfg;
    char err[512];
    char *envp[] = {"PATH=/bin", "COLLAB_TIMEOUT=7", "COLLAB_TIMEOUT=8",
                    "NOEQUALS",  "COLLAB_NOEQUALS",  NULL};
    CL_CHECK(cl_config_load_env(&cfg, envp, err, sizeof err) == 0);
    CL_CHECK(cfg.timeout == 7.0); /* first one wins, like getenv */
    cl_config_clear(&cfg);
    CL_CHECK(cl_config_load_env(&cfg, NULL, err, sizeof err) == 0);
    cl_config_clear(&cfg);
    CL_CHECK(cl_config_load_env(NULL, envp, err, sizeof err) == -1);
    char *bad[] = {"COLLAB_WEIGHT=0", NULL};
    CL_CHECK(cl_config_load_env(&cfg, bad, NULL, 0) == -1);

    double s = 0;
    CL_CHECK(cl_config_parse_seconds("5", &s) == 0 && s == 5.0);
    CL_CHECK(cl_config_parse_seconds("250ms", &s) == 0 && fabs(s - 0.25) < 1e-15);
    CL_CHECK(cl_config_parse_seconds("2s", &s) == 0 && s == 2.0);
    CL_CHECK(cl_config_parse_seconds("0.5", &s) == 0 && s == 0.5);
    s = 42;
    CL_CHECK(cl_config_parse_seconds("0", &s) == -1 && s == 42);
    CL_CHECK(cl_config_parse_seconds("", &s) == -1);
    CL_CHECK(cl_config_parse_seconds(NULL, &s) == -1);
    CL_CHECK(cl_config_parse_seconds("1h", &s) == -1);
    /* Many digits do not overflow. */
    CL_CHECK(cl_config_parse_seconds("000000000000000000000000000001.000000000000000000000000001",
                                     &s) == 0 &&
             fabs(s - 1.0) < 1e-12);
    CL_CHECK(cl_config_parse_seconds("123456789012345678901234567890", &s) == -1);

    /* The number parser itself: plain decimal, finite. */
    double v = 0;
    CL_CHECK(cl_config_value_number("0", &v) == 0 && v == 0.0);
    CL_CHECK(cl_config_value_number("12.5e1", &v) == 0 && v == 125.0);
    CL_CHECK(cl_config_value_number("1E+2", &v) == 0 && v == 100.0);
    CL_CHECK(cl_config_value_number("1e308", &v) == 0 && v == 1e308);
    CL_CHECK(cl_config_value_number("1e309", &v) == -1); /* would be infinite */
    CL_CHECK(cl_config_value_number("1e400", &v) == -1);
    CL_CHECK(cl_config_value_number("-1", &v) == -1);
    CL_CHECK(cl_config_value_number("1e+", &v) == -1);
    CL_CHECK(cl_config_value_number("1.2.3", &v) == -1);
    CL_CHECK(cl_config_value_number("", &v) == -1);
}

/* COLLAB_CLIENT_MODE=auto (the default): public until the swarm cannot
   connect back (docs/membership.md, reachability). */
static void test_client_auto(void)
{
    cl_config_t cfg;
    char err[512];
    CL_CHECK(s_load(&cfg, err, sizeof err, NULL) == 0);
    CL_CHECK(cfg.client_auto && !cfg.client_mode);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_CLIENT_MODE", "auto", NULL) == 0);
    CL_CHECK(cfg.client_auto && !cfg.client_mode);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_CLIENT_MODE", "0", NULL) == 0);
    CL_CHECK(!cfg.client_auto && !cfg.client_mode);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_CLIENT_MODE", "1", NULL) == 0);
    CL_CHECK(!cfg.client_auto && cfg.client_mode);
    cl_config_clear(&cfg);
    /* auto may announce an address (it is public until proven otherwise). */
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_CLIENT_MODE", "auto", "COLLAB_ANNOUNCE",
                    "/ip4/127.0.0.1/tcp/4000", NULL) == 0);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_CLIENT_MODE", "AUTO", NULL) == -1);
}

static void test_report_vars(void)
{
    cl_config_t cfg;
    char err[512];
    char *ok[] = {"COLLAB_REPORT_INTERVAL=2.5", "COLLAB_REPORT_LOSS=1", NULL};
    CL_CHECK(cl_config_load_env(&cfg, ok, err, sizeof err) == 0);
    CL_CHECK(cfg.report_interval == 2.5 && cfg.report_loss == 1);
    cl_config_clear(&cfg);
    char *none[] = {NULL};
    CL_CHECK(cl_config_load_env(&cfg, none, err, sizeof err) == 0);
    CL_CHECK(cfg.report_interval == 5.0 && cfg.report_loss == 0 && !cfg.monitor);
    cl_config_clear(&cfg);
    char *bad1[] = {"COLLAB_REPORT_LOSS=-1", NULL};
    CL_CHECK(cl_config_load_env(&cfg, bad1, err, sizeof err) == -1);
    CL_CHECK(strstr(err, "COLLAB_REPORT_LOSS") != NULL);
    char *bad2[] = {"COLLAB_REPORT_INTERVAL=0", NULL};
    CL_CHECK(cl_config_load_env(&cfg, bad2, err, sizeof err) == -1);
    CL_CHECK(strstr(err, "COLLAB_REPORT_INTERVAL") != NULL);
}

/* Robust aggregation: defaults, names in any case, ranges. */
static void test_aggregation_vars(void)
{
    cl_config_t cfg;
    char err[512];
    char *none[] = {NULL};
    CL_CHECK(cl_config_load_env(&cfg, none, err, sizeof err) == 0);
    CL_CHECK(cfg.aggregation == 0 && !cfg.aggregation_set && cfg.robust_min == 1 &&
             !cfg.robust_min_set && cfg.max_weight_ratio == 16 && !cfg.max_weight_ratio_set);
    cl_config_clear(&cfg);
    char *ok[] = {"COLLAB_AGGREGATION=Centered_Clip", "COLLAB_ROBUST_MIN=1024",
                  "COLLAB_MAX_WEIGHT_RATIO=4", NULL};
    CL_CHECK(cl_config_load_env(&cfg, ok, err, sizeof err) == 0);
    CL_CHECK(cfg.aggregation == 2 && cfg.aggregation_set && cfg.robust_min == 1024 &&
             cfg.robust_min_set && cfg.max_weight_ratio == 4 && cfg.max_weight_ratio_set);
    cl_config_clear(&cfg);
    char *tm[] = {"COLLAB_AGGREGATION=trimmed_mean", NULL};
    CL_CHECK(cl_config_load_env(&cfg, tm, err, sizeof err) == 0 && cfg.aggregation == 1);
    cl_config_clear(&cfg);
    char *bad1[] = {"COLLAB_AGGREGATION=median", NULL};
    CL_CHECK(cl_config_load_env(&cfg, bad1, err, sizeof err) == -1);
    CL_CHECK_STREQ(err,
                   "COLLAB_AGGREGATION='median': expected mean, trimmed_mean or centered_clip");
    char *bad2[] = {"COLLAB_ROBUST_MIN=0", NULL};
    CL_CHECK(cl_config_load_env(&cfg, bad2, err, sizeof err) == -1);
    CL_CHECK_CONTAINS(err, "COLLAB_ROBUST_MIN='0'");
    char *bad3[] = {"COLLAB_MAX_WEIGHT_RATIO=65537", NULL};
    CL_CHECK(cl_config_load_env(&cfg, bad3, err, sizeof err) == -1);
    CL_CHECK_CONTAINS(err, "COLLAB_MAX_WEIGHT_RATIO='65537'");
    CL_CHECK(s_is_zero(&cfg));
}

/* The resource bounds of docs/security.md §5: safe defaults, ranges. */
static void test_limits(void)
{
    cl_config_t cfg;
    char err[512];
    CL_CHECK(s_load(&cfg, err, sizeof err, NULL) == 0);
    CL_CHECK(cfg.max_message_mib == 1024 && cfg.max_handshakes == 1024 &&
             cfg.max_handshakes_host == 64 && cfg.link_idle == 300.0);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_MAX_MESSAGE", "16", "COLLAB_MAX_HANDSHAKES",
                    "64", "COLLAB_LINK_IDLE", "60", NULL) == 0);
    CL_CHECK(cfg.max_message_mib == 16 && cfg.max_handshakes == 64 && cfg.link_idle == 60.0);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_LINK_IDLE", "10", NULL) == -1);
    CL_CHECK(strstr(err, "COLLAB_LINK_IDLE") != NULL && strstr(err, "30") != NULL);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_MAX_MESSAGE", "0", NULL) == -1);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_MAX_HANDSHAKES", "-1", NULL) == -1);
    /* Queue and stream bounds: defaults, values, refusals. */
    CL_CHECK(s_load(&cfg, err, sizeof err, NULL) == 0);
    CL_CHECK(cfg.max_unexpected_mib == 2048 && cfg.max_unexpected_peer_mib == 1024 &&
             cfg.max_unexpected_msgs == 65536 && cfg.max_streams == 1024 &&
             cfg.max_streams_peer == 64);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_MAX_UNEXPECTED", "64",
                    "COLLAB_MAX_UNEXPECTED_PER_PEER", "16", "COLLAB_MAX_UNEXPECTED_MSGS", "1000",
                    "COLLAB_MAX_STREAMS", "8", "COLLAB_MAX_STREAMS_PER_PEER", "2", NULL) == 0);
    CL_CHECK(cfg.max_unexpected_mib == 64 && cfg.max_unexpected_peer_mib == 16 &&
             cfg.max_unexpected_msgs == 1000 && cfg.max_streams == 8 && cfg.max_streams_peer == 2);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_MAX_UNEXPECTED_MSGS", "0", NULL) == -1);
    CL_CHECK(strstr(err, "COLLAB_MAX_UNEXPECTED_MSGS") != NULL);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_MAX_STREAMS_PER_PEER", "x", NULL) == -1);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_MAX_UNEXPECTED_PER_PEER", "-5", NULL) == -1);
    /* A required rank needs the rank. */
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_RANK_REQUIRED", "1", NULL) == -1);
    CL_CHECK(strstr(err, "COLLAB_RANK_REQUIRED") != NULL && strstr(err, "COLLAB_RANK too") != NULL);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_RANK_REQUIRED", "yes please", NULL) == -1);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_RANK_REQUIRED", "1", "COLLAB_RANK", "2", NULL) ==
                 0 &&
             cfg.rank_required && cfg.rank == 2);
    cl_config_clear(&cfg);
    /* COLLAB_WIRE_VERSION: 5 to 9 (docs/wire.md section 5), default 9. */
    CL_CHECK(s_load(&cfg, err, sizeof err, NULL) == 0 && cfg.wire_version == 9);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_WIRE_VERSION", "8", NULL) == 0 &&
             cfg.wire_version == 8);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_WIRE_VERSION", "7", NULL) == 0 &&
             cfg.wire_version == 7);
    cl_config_clear(&cfg);
    /* adaptive compression needs version 8: refused below it, named */
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_WIRE_VERSION", "7", "COLLAB_COMPRESSION",
                    "adaptive", NULL) == -1);
    CL_CHECK(strstr(err, "COLLAB_COMPRESSION") != NULL && strstr(err, "wire version 8") != NULL);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_WIRE_VERSION", "8", "COLLAB_COMPRESSION",
                    "adaptive", NULL) == 0 &&
             cfg.compression == 3);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_WIRE_VERSION", "6", NULL) == 0 &&
             cfg.wire_version == 6);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_WIRE_VERSION", "5", NULL) == 0 &&
             cfg.wire_version == 5);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_WIRE_VERSION", "4", NULL) == -1);
    CL_CHECK(strstr(err, "COLLAB_WIRE_VERSION") != NULL);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_WIRE_VERSION", "10", NULL) == -1);
    cl_config_clear(&cfg);
    /* COLLAB_BANDWIDTH_MBIT: Mbit/s to kbit/s, 0 none; negative, non-finite,
       absurd or unparsable figures are refused with the variable named. */
    CL_CHECK(s_load(&cfg, err, sizeof err, NULL) == 0 && cfg.bandwidth_kbit == 0);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_BANDWIDTH_MBIT", "25.5", NULL) == 0 &&
             cfg.bandwidth_kbit == 25500);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_BANDWIDTH_MBIT", "4000000", NULL) == 0 &&
             cfg.bandwidth_kbit == 4000000000u);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_BANDWIDTH_MBIT", "0", NULL) == 0 &&
             cfg.bandwidth_kbit == 0);
    cl_config_clear(&cfg);
    const char *bad_bw[] = {"-1", "nan", "inf", "1e400", "4000001", "0.0001", "fast", ""};
    for (size_t i = 0; i < sizeof bad_bw / sizeof bad_bw[0]; i++) {
        CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_BANDWIDTH_MBIT", bad_bw[i], NULL) == -1);
        CL_CHECK(strstr(err, "COLLAB_BANDWIDTH_MBIT") != NULL);
        cl_config_clear(&cfg);
    }
}

static void test_table(void)
{
    size_t n = 0;
    const cl_config_entry_t *t = cl_config_table(&n);
    CL_CHECK(n == 48);
    const char *expected[] = {"COLLAB_INITIAL_PEERS",
                              "COLLAB_LISTEN",
                              "COLLAB_ANNOUNCE",
                              "COLLAB_CLIENT_MODE",
                              "COLLAB_IDENTITY",
                              "COLLAB_RUN_ID",
                              "COLLAB_WORLD_SIZE",
                              "COLLAB_RANK",
                              "COLLAB_RANK_REQUIRED",
                              "COLLAB_COLLECTIVES_PER_STEP",
                              "COLLAB_MIN_GROUP",
                              "COLLAB_TARGET_GROUP",
                              "COLLAB_MATCHMAKING_TIME",
                              "COLLAB_TIMEOUT",
                              "COLLAB_COMPRESSION",
                              "COLLAB_SWARM_KEY",
                              "COLLAB_SWARM_KEY_FILE",
                              "COLLAB_SWARM_PASSPHRASE",
                              "COLLAB_WEIGHT",
                              "COLLAB_BANDWIDTH_MBIT",
                              "COLLAB_LEAVE_ON",
                              "COLLAB_STRICT",
                              "COLLAB_AGGREGATION",
                              "COLLAB_ROBUST_MIN",
                              "COLLAB_MAX_WEIGHT_RATIO",
                              "COLLAB_VERIFY",
                              "COLLAB_CUDA",
                              "COLLAB_CUDA_PIPELINE",
                              "COLLAB_SHM",
                              "COLLAB_SHM_FAST",
                              "COLLAB_REPORT_INTERVAL",
                              "COLLAB_REPORT_LOSS",
                              "COLLAB_CHECKPOINT_DIR",
                              "COLLAB_CHECKPOINT_EVERY",
                              "COLLAB_RELAY",
                              "COLLAB_RELAY_MBIT",
                              "COLLAB_LOG",
                              "COLLAB_LOG_FILE",
                              "COLLAB_MAX_MESSAGE",
                              "COLLAB_MAX_HANDSHAKES",
                              "COLLAB_MAX_HANDSHAKES_PER_HOST",
                              "COLLAB_LINK_IDLE",
                              "COLLAB_MAX_UNEXPECTED",
                              "COLLAB_MAX_UNEXPECTED_PER_PEER",
                              "COLLAB_MAX_UNEXPECTED_MSGS",
                              "COLLAB_MAX_STREAMS",
                              "COLLAB_MAX_STREAMS_PER_PEER",
                              "COLLAB_WIRE_VERSION"};
    for (size_t i = 0; i < n && i < sizeof expected / sizeof expected[0]; i++) {
        CL_CHECK_STREQ(t[i].name, expected[i]);
        CL_CHECK(t[i].default_text != NULL && t[i].default_text[0] != '\0');
        CL_CHECK(t[i].help != NULL && strlen(t[i].help) > 10 && strchr(t[i].help, '\n') == NULL);
    }
}

int main(void)
{
    snprintf(s_dir, sizeof s_dir, "/tmp/cl_config_test.XXXXXX");
    if (mkdtemp(s_dir) == NULL) {
        perror("mkdtemp");
        return 1;
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

    test_defaults();
    test_good_values();
    test_bad_values();
    test_combinations();
    test_unknown_names();
    test_swarm_key();
    test_swarm_passphrase();
    test_environ_scrubbed();
    test_load_env_and_seconds();
    test_table();
    test_report_vars();
    test_client_auto();
    test_aggregation_vars();
    test_limits();
    s_clear_env();
    rmdir(s_dir);
    return cl_selftest_end("cl_config_test");
}
