/*  cl_config_load_test.c - selftest of the loading of the configuration
    (cl_config_load.c): the defaults, checks that span several variables,
    unknown names with suggestions, the swarm key file rules and the
    passphrase, the environment scrubbed of secrets, cl_config_load_env on
    a given environment, and the seconds and number parsers it uses. */
#define _GNU_SOURCE
#include "cl_config_fixture.h"

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

int main(void)
{
    if (s_fixture_init() != 0)
        return 1;
    test_defaults();
    test_combinations();
    test_unknown_names();
    test_swarm_key();
    test_swarm_passphrase();
    test_environ_scrubbed();
    test_load_env_and_seconds();
    s_fixture_fini();
    return cl_selftest_end("cl_config_load_test");
}
