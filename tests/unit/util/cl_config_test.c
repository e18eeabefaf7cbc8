/*  cl_config_test.c - selftest of the table of variables and its
    parsers (cl_config.c): every variable with good and bad values through
    the real environment (setenv/unsetenv), the limits, the client mode,
    the report and aggregation settings, the table itself, and that
    messages name the variable and the value.  The loading's own rules
    (defaults, checks between variables, names, the swarm secret, the
    environment scrubbed) are cl_config_load_test's. */
#define _GNU_SOURCE
#include "cl_config_fixture.h"

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
        {"COLLAB_SHM_GROUP", "1", 18, 1},
        {"COLLAB_SHM_GROUP", "0", 18, 0},
        {"COLLAB_HOST_LEADER", "0", 19, 0},
        {"COLLAB_HOST_LEADER", "1", 19, 1},
        {"COLLAB_NCCL_ASYNC", "1", 16, 1},
        {"COLLAB_NCCL_ASYNC", "no", 16, 0},
        {"COLLAB_CUDA_PIPELINE", "0", 17, 0},
        {"COLLAB_CUDA_PIPELINE", "true", 17, 1},
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
            got = cfg.nccl_async;
            break;
        case 17:
            got = cfg.cuda_pipeline;
            break;
        case 18:
            got = cfg.shm_group;
            break;
        case 19:
            got = cfg.host_leader;
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
        {"COLLAB_NCCL_ASYNC", "async", "expected 1 or 0"},
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

/* The resource bounds of docs/security-bounds.md §5: safe defaults, ranges. */
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
    /* Held messages and FETCH: defaults, values, refusals. */
    CL_CHECK(s_load(&cfg, err, sizeof err, NULL) == 0);
    CL_CHECK(cfg.max_held_mib == 256 && cfg.max_held_msgs == 16384 && cfg.max_held_peer == 1024 &&
             cfg.fetch_limit == 4);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_MAX_HELD", "8", "COLLAB_MAX_HELD_MSGS", "100",
                    "COLLAB_MAX_HELD_PER_PEER", "10", "COLLAB_FETCH_LIMIT", "2", NULL) == 0);
    CL_CHECK(cfg.max_held_mib == 8 && cfg.max_held_msgs == 100 && cfg.max_held_peer == 10 &&
             cfg.fetch_limit == 2);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_MAX_HELD_MSGS", "0", NULL) == -1);
    CL_CHECK(strstr(err, "COLLAB_MAX_HELD_MSGS") != NULL);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_MAX_HELD_PER_PEER", "x", NULL) == -1);
    CL_CHECK(strstr(err, "COLLAB_MAX_HELD_PER_PEER") != NULL);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_MAX_HELD", "-1", NULL) == -1);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_FETCH_LIMIT", "0", NULL) == -1);
    CL_CHECK(strstr(err, "COLLAB_FETCH_LIMIT") != NULL);
    /* A required rank needs the rank. */
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_RANK_REQUIRED", "1", NULL) == -1);
    CL_CHECK(strstr(err, "COLLAB_RANK_REQUIRED") != NULL && strstr(err, "COLLAB_RANK too") != NULL);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_RANK_REQUIRED", "yes please", NULL) == -1);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_RANK_REQUIRED", "1", "COLLAB_RANK", "2", NULL) ==
                 0 &&
             cfg.rank_required && cfg.rank == 2);
    cl_config_clear(&cfg);
    /* COLLAB_WIRE_VERSION: 5 to 12 (docs/wire.md section 5), default 12. */
    CL_CHECK(s_load(&cfg, err, sizeof err, NULL) == 0 && cfg.wire_version == 12);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_WIRE_VERSION", "10", NULL) == 0 &&
             cfg.wire_version == 10);
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
    /* a swarm that signs (COLLAB_VERIFY=1, a robust aggregation) needs
       version 10: refused below it, named (docs/security.md §6) */
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_WIRE_VERSION", "8", "COLLAB_VERIFY", "1",
                    NULL) == -1);
    CL_CHECK(strstr(err, "COLLAB_VERIFY") != NULL && strstr(err, "wire version 10") != NULL);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_WIRE_VERSION", "8", "COLLAB_AGGREGATION",
                    "trimmed_mean", NULL) == -1);
    CL_CHECK(strstr(err, "COLLAB_AGGREGATION") != NULL && strstr(err, "wire version 10") != NULL);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_WIRE_VERSION", "8", "COLLAB_VERIFY", "0",
                    NULL) == 0 &&
             cfg.wire_version == 8);
    cl_config_clear(&cfg);
    /* 9 does not carry the signed exchange pieces and broadcast chunks */
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_WIRE_VERSION", "9", "COLLAB_VERIFY", "1",
                    NULL) == -1);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_WIRE_VERSION", "10", "COLLAB_VERIFY", "1",
                    NULL) == 0 &&
             cfg.verify);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_WIRE_VERSION", "6", NULL) == 0 &&
             cfg.wire_version == 6);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_WIRE_VERSION", "5", NULL) == 0 &&
             cfg.wire_version == 5);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_WIRE_VERSION", "4", NULL) == -1);
    CL_CHECK(strstr(err, "COLLAB_WIRE_VERSION") != NULL);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_WIRE_VERSION", "13", NULL) == -1);
    cl_config_clear(&cfg);
    /* COLLAB_BANDWIDTH_MBIT: "measure" (the default), Mbit/s to kbit/s
       (declared: nothing measured), 0 none (nothing measured either);
       negative, non-finite, absurd or unparsable figures are refused with
       the variable named. */
    CL_CHECK(s_load(&cfg, err, sizeof err, NULL) == 0 && cfg.bandwidth_kbit == 0 &&
             cfg.bandwidth_measure);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_BANDWIDTH_MBIT", "measure", NULL) == 0 &&
             cfg.bandwidth_kbit == 0 && cfg.bandwidth_measure);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_BANDWIDTH_MBIT", "25.5", NULL) == 0 &&
             cfg.bandwidth_kbit == 25500 && !cfg.bandwidth_measure);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_BANDWIDTH_MBIT", "4000000", NULL) == 0 &&
             cfg.bandwidth_kbit == 4000000000u);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_BANDWIDTH_MBIT", "0", NULL) == 0 &&
             cfg.bandwidth_kbit == 0 && !cfg.bandwidth_measure);
    cl_config_clear(&cfg);
    const char *bad_bw[] = {"-1",     "nan",  "inf", "1e400",   "4000001",
                            "0.0001", "fast", "",    "Measure", "measured"};
    for (size_t i = 0; i < sizeof bad_bw / sizeof bad_bw[0]; i++) {
        CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_BANDWIDTH_MBIT", bad_bw[i], NULL) == -1);
        CL_CHECK(strstr(err, "COLLAB_BANDWIDTH_MBIT") != NULL);
        cl_config_clear(&cfg);
    }
    /* COLLAB_STRIPES: 1 by default, 1 to 16 connections, auto (at most
       8, measured) or auto:N (N 2 to 16), anything else refused with the
       variable named. */
    CL_CHECK(s_load(&cfg, err, sizeof err, NULL) == 0 && cfg.stripes == 1 && !cfg.stripes_auto);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_STRIPES", "16", NULL) == 0 &&
             cfg.stripes == 16 && !cfg.stripes_auto);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_STRIPES", "auto", NULL) == 0 &&
             cfg.stripes == 8 && cfg.stripes_auto);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_STRIPES", "auto:16", NULL) == 0 &&
             cfg.stripes == 16 && cfg.stripes_auto);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_STRIPES", "auto:2", NULL) == 0 &&
             cfg.stripes == 2 && cfg.stripes_auto);
    cl_config_clear(&cfg);
    const char *bad_stripes[] = {"0",      "17",      "-1",    "four", "2.5",   "",
                                 "auto:1", "auto:17", "auto:", "Auto", "auto8", "auto:x"};
    for (size_t i = 0; i < sizeof bad_stripes / sizeof bad_stripes[0]; i++) {
        CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_STRIPES", bad_stripes[i], NULL) == -1);
        CL_CHECK(strstr(err, "COLLAB_STRIPES") != NULL);
        cl_config_clear(&cfg);
    }
}

/* COLLAB_BAN_TIME: 60 s by default, a duration from 1 s to a day, and any
   other value refused with the variable named. */
static void test_ban_time(void)
{
    cl_config_t cfg;
    char err[512];
    CL_CHECK(s_load(&cfg, err, sizeof err, NULL) == 0);
    CL_CHECK(cfg.ban_time == 60.0);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_BAN_TIME", "7", NULL) == 0);
    CL_CHECK(cfg.ban_time == 7.0);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_BAN_TIME", "1", NULL) == 0);
    CL_CHECK(cfg.ban_time == 1.0);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_BAN_TIME", "86400", NULL) == 0);
    CL_CHECK(cfg.ban_time == 86400.0);
    cl_config_clear(&cfg);
    CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_BAN_TIME", "90s", NULL) == 0);
    CL_CHECK(cfg.ban_time == 90.0);
    cl_config_clear(&cfg);
    static const char *const bad[] = {"0", "-5", "abc", "86401", "1e9", "0.5", "", "60 "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CL_CHECK(s_load(&cfg, err, sizeof err, "COLLAB_BAN_TIME", bad[i], NULL) == -1);
        CL_CHECK(strstr(err, "COLLAB_BAN_TIME") != NULL);
        if (bad[i][0] != '\0') /* an empty value has a message of its own */
            CL_CHECK(strstr(err, "86400") != NULL);
        CL_CHECK(s_is_zero(&cfg));
    }
}

static void test_table(void)
{
    size_t n = 0;
    const cl_config_entry_t *t = cl_config_table(&n);
    CL_CHECK(n == 57);
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
                              "COLLAB_STRIPES",
                              "COLLAB_LEAVE_ON",
                              "COLLAB_STRICT",
                              "COLLAB_AGGREGATION",
                              "COLLAB_ROBUST_MIN",
                              "COLLAB_MAX_WEIGHT_RATIO",
                              "COLLAB_VERIFY",
                              "COLLAB_CUDA",
                              "COLLAB_CUDA_PIPELINE",
                              "COLLAB_NCCL_ASYNC",
                              "COLLAB_SHM",
                              "COLLAB_SHM_FAST",
                              "COLLAB_SHM_GROUP",
                              "COLLAB_HOST_LEADER",
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
                              "COLLAB_BAN_TIME",
                              "COLLAB_MAX_UNEXPECTED",
                              "COLLAB_MAX_UNEXPECTED_PER_PEER",
                              "COLLAB_MAX_UNEXPECTED_MSGS",
                              "COLLAB_MAX_STREAMS",
                              "COLLAB_MAX_STREAMS_PER_PEER",
                              "COLLAB_MAX_HELD",
                              "COLLAB_MAX_HELD_MSGS",
                              "COLLAB_MAX_HELD_PER_PEER",
                              "COLLAB_FETCH_LIMIT",
                              "COLLAB_WIRE_VERSION"};
    for (size_t i = 0; i < n && i < sizeof expected / sizeof expected[0]; i++) {
        CL_CHECK_STREQ(t[i].name, expected[i]);
        CL_CHECK(t[i].default_text != NULL && t[i].default_text[0] != '\0');
        CL_CHECK(t[i].help != NULL && strlen(t[i].help) > 10 && strchr(t[i].help, '\n') == NULL);
    }
}

int main(void)
{
    if (s_fixture_init() != 0)
        return 1;
    test_good_values();
    test_bad_values();
    test_table();
    test_report_vars();
    test_client_auto();
    test_aggregation_vars();
    test_limits();
    test_ban_time();
    s_fixture_fini();
    return cl_selftest_end("cl_config_test");
}
