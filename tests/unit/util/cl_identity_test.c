/*  cl_identity_test.c - selftest of cl_identity: key files (create, reload,
    permissions, malformed files, concurrent creation), Z85 and peer ids,
    and base58 against the Bitcoin test vectors. */
#define _GNU_SOURCE
#include "util/cl_identity.h"
#include "util/cl_selftest.h"

#include <czmq.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

static char s_dir[256]; /* scratch directory, removed at the end */

static size_t s_hex(const char *hex, uint8_t *out)
{
    size_t n = strlen(hex) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
    return n;
}

static void test_base58(void)
{
    /* bitcoin/src/test/data/base58_encode_decode.json */
    static const char *const vectors[][2] = {
        {"", ""},
        {"61", "2g"},
        {"626262", "a3gV"},
        {"636363", "aPEr"},
        {"73696d706c792061206c6f6e6720737472696e67", "2cFupjhnEsSn59qHXstmK2ffpLv2"},
        {"00eb15231dfceb60925886b67d065299925915aeb172c06647",
         "1NS17iag9jJgTHD1VXjvLCEnZuQ3rJDE9L"},
        {"516b6fcd0f", "ABnLTmg"},
        {"bf4f89001e670274dd", "3SEo3LWLoPntC"},
        {"572e4794", "3EFU7m"},
        {"ecac89cad93923c02321", "EJDM8drfXA6uyA"},
        {"10c8511e", "Rt5zm"},
        {"00000000000000000000", "1111111111"},
    };
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        uint8_t bytes[64], back[64];
        size_t n = s_hex(vectors[i][0], bytes);
        char text[128];
        CL_CHECK(cl_base58_encode(bytes, n, text, sizeof text) == 0);
        CL_CHECK_STREQ(text, vectors[i][1]);
        memset(back, 0xee, sizeof back);
        CL_CHECK(cl_base58_decode(vectors[i][1], back, n) == 0);
        CL_CHECK(memcmp(back, bytes, n) == 0);
        /* Exact length: one byte more or less is refused. */
        CL_CHECK(cl_base58_decode(vectors[i][1], back, n + 1) == -1);
        if (n > 0)
            CL_CHECK(cl_base58_decode(vectors[i][1], back, n - 1) == -1);
        /* The output buffer must hold the text and its NUL. */
        size_t tl = strlen(vectors[i][1]);
        CL_CHECK(cl_base58_encode(bytes, n, text, tl) == -1);
        CL_CHECK(cl_base58_encode(bytes, n, text, tl + 1) == 0);
    }
    uint8_t out[32];
    CL_CHECK(cl_base58_decode("2g0", out, 2) == -1); /* '0' not in the alphabet */
    CL_CHECK(cl_base58_decode("O", out, 1) == -1);   /* nor 'O', 'I', 'l' */
    CL_CHECK(cl_base58_decode("I", out, 1) == -1);
    CL_CHECK(cl_base58_decode("l", out, 1) == -1);
    CL_CHECK(cl_base58_decode(" 2g", out, 1) == -1);
    CL_CHECK(cl_base58_decode("2g ", out, 1) == -1);
    CL_CHECK(cl_base58_decode("5Q", out, 1) == 0 && out[0] == 0xff); /* 255 */
    CL_CHECK(cl_base58_decode("5R", out, 1) == -1);                  /* 256 */
    CL_CHECK(cl_base58_decode("11", out, 1) == -1);                  /* two zero bytes */
    CL_CHECK(cl_base58_decode("12", out, 2) == 0 && out[0] == 0 && out[1] == 1);
    CL_CHECK(cl_base58_decode(NULL, out, 1) == -1);
    /* A 32-byte key of 0xff encodes in 44 characters and back. */
    uint8_t ff[32], back[32];
    memset(ff, 0xff, sizeof ff);
    char id[CL_PEER_ID_MAX];
    CL_CHECK(cl_base58_encode(ff, 32, id, sizeof id) == 0);
    CL_CHECK(strlen(id) == 44);
    CL_CHECK(cl_base58_decode(id, back, 32) == 0 && memcmp(back, ff, 32) == 0);
    /* Long garbage is refused without work. */
    char longtext[5000];
    memset(longtext, 'z', sizeof longtext - 1);
    longtext[sizeof longtext - 1] = '\0';
    CL_CHECK(cl_base58_decode(longtext, out, 32) == -1);
}

static void s_path(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", s_dir, name);
}

static void s_write_file(const char *path, const char *text, mode_t mode)
{
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode);
    CL_CHECK(fd >= 0);
    if (fd < 0)
        return;
    CL_CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    CL_CHECK(fchmod(fd, mode) == 0);
    close(fd);
}

static void test_fresh(void)
{
    char err[256];
    cl_identity_t *a = cl_identity_new(NULL, err, sizeof err);
    cl_identity_t *b = cl_identity_new(NULL, err, sizeof err);
    CL_CHECK(a != NULL && b != NULL);
    if (a == NULL || b == NULL)
        return;
    CL_CHECK(memcmp(cl_identity_public_key(a), cl_identity_public_key(b), 32) != 0);
    CL_CHECK(strlen(cl_identity_public_z85(a)) == 40);
    CL_CHECK(strlen(cl_identity_secret_z85(a)) == 40);
    /* Z85 texts decode to the raw keys. */
    uint8_t raw[32];
    CL_CHECK(zmq_z85_decode(raw, cl_identity_public_z85(a)) != NULL);
    CL_CHECK(memcmp(raw, cl_identity_public_key(a), 32) == 0);
    CL_CHECK(zmq_z85_decode(raw, cl_identity_secret_z85(a)) != NULL);
    CL_CHECK(memcmp(raw, cl_identity_secret_key(a), 32) == 0);
    /* The peer id is the base58 of the public key. */
    uint8_t pk[32];
    CL_CHECK(cl_base58_decode(cl_identity_peer_id(a), pk, 32) == 0);
    CL_CHECK(memcmp(pk, cl_identity_public_key(a), 32) == 0);
    /* The pair is a real Curve25519 pair (what CurveZMQ checks). */
    char pub[41];
    CL_CHECK(zmq_curve_public(pub, cl_identity_secret_z85(a)) == 0);
    CL_CHECK_STREQ(pub, cl_identity_public_z85(a));
    cl_identity_destroy(&a);
    CL_CHECK(a == NULL);
    cl_identity_destroy(&a); /* NULL is fine */
    cl_identity_destroy(NULL);
    cl_identity_destroy(&b);
}

static void test_file(void)
{
    char path[512], err[512];
    s_path(path, sizeof path, "id.key");
    mode_t old = umask(0); /* creation must give 0600 whatever the umask */
    cl_identity_t *a = cl_identity_new(path, err, sizeof err);
    umask(old);
    CL_CHECK(a != NULL);
    if (a == NULL) {
        fprintf(stderr, "  %s\n", err);
        return;
    }
    struct stat st;
    CL_CHECK(stat(path, &st) == 0);
    CL_CHECK((st.st_mode & 07777) == 0600);
    /* No temporary file is left behind. */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq 1", s_dir);
    CL_CHECK(system(cmd) == 0);

    /* Reloading gives the same identity. */
    cl_identity_t *b = cl_identity_new(path, err, sizeof err);
    CL_CHECK(b != NULL);
    if (b != NULL) {
        CL_CHECK_STREQ(cl_identity_peer_id(a), cl_identity_peer_id(b));
        CL_CHECK(memcmp(cl_identity_secret_key(a), cl_identity_secret_key(b), 32) == 0);
        cl_identity_destroy(&b);
    }
    /* CZMQ reads our file as a certificate. */
    zcert_t *cert = zcert_load(path);
    CL_CHECK(cert != NULL);
    if (cert != NULL) {
        CL_CHECK_STREQ(zcert_public_txt(cert), cl_identity_public_z85(a));
        CL_CHECK_STREQ(zcert_secret_txt(cert), cl_identity_secret_z85(a));
        zcert_destroy(&cert);
    }
    /* And we read CZMQ's secret certificates. */
    char zpath[512];
    s_path(zpath, sizeof zpath, "czmq.cert");
    cert = zcert_new();
    CL_CHECK(cert != NULL && zcert_save_secret(cert, zpath) == 0);
    chmod(zpath, 0600);
    b = cl_identity_new(zpath, err, sizeof err);
    CL_CHECK(b != NULL);
    if (b != NULL && cert != NULL)
        CL_CHECK_STREQ(cl_identity_public_z85(b), zcert_public_txt(cert));
    cl_identity_destroy(&b);
    zcert_destroy(&cert);
    unlink(zpath);

    /* Group- or world-accessible files are refused, like ssh does. */
    const mode_t modes[] = {0644, 0640, 0604, 0620, 0660, 0601};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        CL_CHECK(chmod(path, modes[i]) == 0);
        err[0] = '\0';
        b = cl_identity_new(path, err, sizeof err);
        CL_CHECK(b == NULL);
        cl_identity_destroy(&b);
        CL_CHECK_CONTAINS(err, path);
        CL_CHECK_CONTAINS(err, "chmod 600");
    }
    CL_CHECK(chmod(path, 0400) == 0); /* read-only for the owner is fine */
    b = cl_identity_new(path, err, sizeof err);
    CL_CHECK(b != NULL);
    cl_identity_destroy(&b);
    /* A symbolic link is refused, not followed (docs/security.md). */
    char link_path[512];
    s_path(link_path, sizeof link_path, "link.key");
    CL_CHECK(symlink(path, link_path) == 0);
    err[0] = '\0';
    b = cl_identity_new(link_path, err, sizeof err);
    CL_CHECK(b == NULL);
    CL_CHECK_CONTAINS(err, "symbolic link");
    cl_identity_destroy(&b);
    unlink(link_path);
    /* A file of another user is refused (checked where this test may
       give a file away: as root). */
    if (geteuid() == 0) {
        CL_CHECK(chown(path, 12345, 12345) == 0);
        err[0] = '\0';
        b = cl_identity_new(path, err, sizeof err);
        CL_CHECK(b == NULL);
        CL_CHECK_CONTAINS(err, "belongs to user 12345");
        cl_identity_destroy(&b);
    }
    unlink(path);
    cl_identity_destroy(&a);

    /* A directory that does not exist gives a clear error. */
    s_path(path, sizeof path, "missing/id.key");
    b = cl_identity_new(path, err, sizeof err);
    CL_CHECK(b == NULL);
    CL_CHECK_CONTAINS(err, "cannot create identity file");
    b = cl_identity_new("", err, sizeof err);
    CL_CHECK(b == NULL);
}

static void test_malformed(void)
{
    char path[512], err[512];
    s_path(path, sizeof path, "bad.key");
    cl_identity_t *good = cl_identity_new(NULL, err, sizeof err);
    cl_identity_t *other = cl_identity_new(NULL, err, sizeof err);
    CL_CHECK(good != NULL && other != NULL);
    if (good == NULL || other == NULL)
        return;
    char mismatched[512], truncated[512], badchar[512], twice[512], unquoted[512];
    snprintf(mismatched, sizeof mismatched,
             "curve\n    public-key = \"%s\"\n    secret-key = \"%s\"\n",
             cl_identity_public_z85(other), cl_identity_secret_z85(good));
    snprintf(truncated, sizeof truncated,
             "curve\n    public-key = \"%.39s\"\n    secret-key = \"%s\"\n",
             cl_identity_public_z85(good), cl_identity_secret_z85(good));
    snprintf(badchar, sizeof badchar,
             "curve\n    public-key = \"%s\"\n    secret-key = \"%.39s~\"\n",
             cl_identity_public_z85(good), cl_identity_secret_z85(good));
    snprintf(twice, sizeof twice,
             "curve\n    public-key = \"%s\"\n    public-key = \"%s\"\n    secret-key = \"%s\"\n",
             cl_identity_public_z85(good), cl_identity_public_z85(good),
             cl_identity_secret_z85(good));
    /* zconfig also accepts unquoted values: so do we. */
    snprintf(unquoted, sizeof unquoted,
             "# comment\r\nmetadata\r\n    peer-id = x\r\ncurve\r\n    public-key = %s\r\n"
             "    secret-key = %s\r\n",
             cl_identity_public_z85(good), cl_identity_secret_z85(good));
    s_write_file(path, unquoted, 0600);
    cl_identity_t *id = cl_identity_new(path, err, sizeof err);
    CL_CHECK(id != NULL);
    if (id != NULL)
        CL_CHECK_STREQ(cl_identity_peer_id(id), cl_identity_peer_id(good));
    cl_identity_destroy(&id);

    const struct {
        const char *text;
        const char *why;
    } cases[] = {
        {"", "no curve section"},
        {"hello world\n", "no curve section"},
        {"curve\n    public-key = \"abc\"\n", "not 40 characters"},
        {"curve\n    nonsense\n", "not 'name = \"value\"'"},
        {"curve\n    colour = \"blue\"\n", "unknown curve field"},
        {mismatched, "does not belong"},
        {truncated, "not 40 characters"},
        {badchar, "not 40 characters"},
        {twice, "given twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s_write_file(path, cases[i].text, 0600);
        err[0] = '\0';
        id = cl_identity_new(path, err, sizeof err);
        CL_CHECK(id == NULL);
        cl_identity_destroy(&id);
        CL_CHECK_CONTAINS(err, "malformed");
        CL_CHECK_CONTAINS(err, cases[i].why);
    }
    /* The file must not have been replaced by a new identity. */
    struct stat st;
    CL_CHECK(stat(path, &st) == 0 && st.st_size == (off_t)strlen(twice));

    /* NUL bytes, an oversized file, a directory, a FIFO (no hang). */
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    CL_CHECK(fd >= 0 && write(fd, "curve\n\0\0", 8) == 8);
    close(fd);
    id = cl_identity_new(path, err, sizeof err);
    CL_CHECK(id == NULL);
    CL_CHECK_CONTAINS(err, "NUL");
    unlink(path);
    char big[10000];
    memset(big, '#', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    s_write_file(path, big, 0600);
    id = cl_identity_new(path, err, sizeof err);
    CL_CHECK(id == NULL);
    CL_CHECK_CONTAINS(err, "too large");
    unlink(path);
    CL_CHECK(mkdir(path, 0700) == 0);
    id = cl_identity_new(path, err, sizeof err);
    CL_CHECK(id == NULL);
    CL_CHECK_CONTAINS(err, "not a regular file");
    rmdir(path);
    CL_CHECK(mkfifo(path, 0600) == 0);
    id = cl_identity_new(path, err, sizeof err);
    CL_CHECK(id == NULL);
    CL_CHECK_CONTAINS(err, "not a regular file");
    unlink(path);
    cl_identity_destroy(&good);
    cl_identity_destroy(&other);
}

/* Several processes creating the same identity at once all end up with
   the one that was written first, complete. */
static void test_race(void)
{
    char path[512];
    s_path(path, sizeof path, "race.key");
    enum { N = 6 };
    int fds[N][2];
    pid_t pids[N];
    for (int i = 0; i < N; i++) {
        CL_CHECK(pipe(fds[i]) == 0);
        pids[i] = fork();
        if (pids[i] == 0) {
            char err[256];
            cl_identity_t *id = cl_identity_new(path, err, sizeof err);
            const char *text = id != NULL ? cl_identity_peer_id(id) : "FAILED";
            ssize_t w = write(fds[i][1], text, strlen(text));
            _exit(w > 0 && id != NULL ? 0 : 1);
        }
        close(fds[i][1]);
    }
    char first[CL_PEER_ID_MAX] = "";
    for (int i = 0; i < N; i++) {
        char id[CL_PEER_ID_MAX] = "";
        ssize_t n = read(fds[i][0], id, sizeof id - 1);
        close(fds[i][0]);
        id[n > 0 ? n : 0] = '\0';
        int status = 0;
        CL_CHECK(waitpid(pids[i], &status, 0) == pids[i]);
        CL_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        if (i == 0)
            strcpy(first, id);
        CL_CHECK_STREQ(id, first);
    }
    char err[256];
    cl_identity_t *id = cl_identity_new(path, err, sizeof err);
    CL_CHECK(id != NULL);
    if (id != NULL)
        CL_CHECK_STREQ(cl_identity_peer_id(id), first);
    cl_identity_destroy(&id);
    unlink(path);
}

int main(void)
{
    snprintf(s_dir, sizeof s_dir, "%s/cl_identity_test.XXXXXX",
             getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(s_dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    test_base58();
    test_fresh();
    test_file();
    test_malformed();
    test_race();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", s_dir);
    return cl_selftest_end("cl_identity_test");
}
