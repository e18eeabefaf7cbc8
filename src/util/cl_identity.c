/*  cl_identity.c - a peer's Curve25519 key pair, its file and its peer id.

    Keys come from libsodium's crypto_box_keypair (X25519, what CurveZMQ
    uses).  The file is a ZeroMQ secret certificate in CZMQ's text format,
    so zcert_load() reads it too:

        #   ZeroMQ CURVE **Secret** Certificate
        metadata
            peer-id = "<base58>"
        curve
            public-key = "<40 chars of Z85>"
            secret-key = "<40 chars of Z85>"

    A new file is written to a temporary name made by mkstemp (O_CREAT |
    O_EXCL, mode 0600, whatever the umask), synced, and then linked to its
    final name; link() never replaces an existing file, so two peers that
    create the same identity at once end up with one complete file, and a
    crash never leaves a half-written key under the real name.  Loading
    refuses anything but a regular file, a file that group or others may
    access (like ssh), a file larger than any certificate, and one whose
    public key is not the one derived from its secret key.  Every buffer
    that held the secret is wiped with sodium_memzero.
*/
#define _GNU_SOURCE
#include "util/cl_identity.h"
#include "util/cl_xsign.h"

#include "util/cl_log.h"
#include "util/cl_text.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#define CL_IDENTITY_FILE_MAX 4096 /* a certificate is about 400 bytes */
#define CL_KEY_BYTES 32
#define CL_Z85_CHARS 40

struct cl_identity {
    uint8_t public_key[CL_KEY_BYTES];
    uint8_t secret_key[CL_KEY_BYTES]; /* wiped on destroy */
    char public_z85[CL_Z85_CHARS + 1];
    char secret_z85[CL_Z85_CHARS + 1]; /* wiped on destroy */
    char peer_id[CL_PEER_ID_MAX];
    cl_xsign_key_t sign; /* the signing key of the secret key (cl_xsign), wiped on destroy */
};

/* Fills the derived fields (Z85 texts, peer id, signing key) from the two
   keys. */
static int s_derive(cl_identity_t *self)
{
    if (zmq_z85_encode(self->public_z85, self->public_key, CL_KEY_BYTES) == NULL ||
        zmq_z85_encode(self->secret_z85, self->secret_key, CL_KEY_BYTES) == NULL ||
        cl_xsign_key(self->secret_key, &self->sign) != 0)
        return -1;
    return cl_base58_encode(self->public_key, CL_KEY_BYTES, self->peer_id, sizeof self->peer_id);
}

static int s_valid_z85(const char *s)
{
    static const char alphabet[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"
                                   "XYZ.-:+=^!/*?&<>()[]{}@%$#";
    if (strlen(s) != CL_Z85_CHARS)
        return 0;
    for (const char *p = s; *p != '\0'; p++) {
        if (strchr(alphabet, *p) == NULL)
            return 0;
    }
    return 1;
}

/* Parses the text of a certificate into self's keys.  Returns 0, or -1
   with the reason in why. */
static int s_parse(cl_identity_t *self, char *text, char *why, size_t whylen)
{
    enum { NONE, METADATA, CURVE, OTHER } section = NONE;
    int have_public = 0, have_secret = 0;
    char *save = NULL;
    int lineno = 0;
    for (char *line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        size_t n = strlen(line);
        if (n > 0 && line[n - 1] == '\r')
            line[--n] = '\0';
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0' || *p == '#')
            continue;
        if (p == line) { /* a section name */
            section = strcmp(p, "metadata") == 0 ? METADATA
                      : strcmp(p, "curve") == 0  ? CURVE
                                                 : OTHER;
            continue;
        }
        if (section != CURVE)
            continue; /* metadata and unknown sections are informational */
        char *eq = strchr(p, '=');
        if (eq == NULL)
            return cl_text_fail(why, whylen, "line %d is not 'name = \"value\"'", lineno);
        char *name_end = eq;
        while (name_end > p && (name_end[-1] == ' ' || name_end[-1] == '\t'))
            name_end--;
        *name_end = '\0';
        char *value = eq + 1;
        while (*value == ' ' || *value == '\t')
            value++;
        size_t vlen = strlen(value);
        while (vlen > 0 && (value[vlen - 1] == ' ' || value[vlen - 1] == '\t'))
            value[--vlen] = '\0';
        if (vlen >= 2 && value[0] == '"' && value[vlen - 1] == '"') {
            value[vlen - 1] = '\0';
            value++;
        }
        uint8_t *dest;
        int *seen;
        if (strcmp(p, "public-key") == 0) {
            dest = self->public_key;
            seen = &have_public;
        } else if (strcmp(p, "secret-key") == 0) {
            dest = self->secret_key;
            seen = &have_secret;
        } else {
            return cl_text_fail(why, whylen, "line %d: unknown curve field", lineno);
        }
        if (*seen)
            return cl_text_fail(why, whylen, "line %d: %s given twice", lineno, p);
        if (!s_valid_z85(value) || zmq_z85_decode(dest, value) == NULL)
            return cl_text_fail(why, whylen, "line %d: %s is not 40 characters of Z85", lineno, p);
        *seen = 1;
    }
    if (!have_public || !have_secret)
        return cl_text_fail(why, whylen, "no curve section with public-key and secret-key");
    uint8_t derived[CL_KEY_BYTES];
    int match = crypto_scalarmult_base(derived, self->secret_key) == 0 &&
                sodium_memcmp(derived, self->public_key, CL_KEY_BYTES) == 0;
    sodium_memzero(derived, sizeof derived);
    if (!match)
        return cl_text_fail(why, whylen, "public-key does not belong to secret-key");
    return 0;
}

/* Loads the certificate at path.  Returns 0, -1 with the reason in err,
   or 1 when the file does not exist (errno ENOENT). */
static int s_load(cl_identity_t *self, const char *path, char *err, size_t errlen)
{
    char qpath[300];
    cl_text_quote(path, 200, qpath, sizeof qpath);
    /* O_NOFOLLOW: a symbolic link planted at the path is refused, not
       followed to someone else's file. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ENOENT)
            return 1;
        if (errno == ELOOP)
            return cl_text_fail(
                err, errlen, "identity file '%s' is a symbolic link; give the file itself", qpath);
        return cl_text_fail(err, errlen, "cannot open identity file '%s': %s", qpath,
                            strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        cl_text_fail(err, errlen, "cannot stat identity file '%s': %s", qpath, strerror(errno));
        goto err_close;
    }
    if (!S_ISREG(st.st_mode)) {
        cl_text_fail(err, errlen, "identity file '%s' is not a regular file", qpath);
        goto err_close;
    }
    if (st.st_uid != geteuid()) {
        cl_text_fail(err, errlen,
                     "identity file '%s' belongs to user %u, not to this user (%u): refusing "
                     "a key someone else controls",
                     qpath, (unsigned)st.st_uid, (unsigned)geteuid());
        goto err_close;
    }
    if ((st.st_mode & 077) != 0) {
        cl_text_fail(err, errlen,
                     "identity file '%s' has mode %04o: group and others must have no access "
                     "(run: chmod 600 '%s')",
                     qpath, (unsigned)(st.st_mode & 07777), qpath);
        goto err_close;
    }
    if (st.st_size > CL_IDENTITY_FILE_MAX) {
        cl_text_fail(err, errlen,
                     "identity file '%s' is malformed: %lld bytes, too large for a key", qpath,
                     (long long)st.st_size);
        goto err_close;
    }
    char text[CL_IDENTITY_FILE_MAX + 2];
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, text + len, sizeof text - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            cl_text_fail(err, errlen, "cannot read identity file '%s': %s", qpath, strerror(errno));
            goto err_wipe;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len == sizeof text - 1) {
            cl_text_fail(err, errlen, "identity file '%s' is malformed: too large for a key",
                         qpath);
            goto err_wipe;
        }
    }
    text[len] = '\0';
    char why[160];
    if (memchr(text, '\0', len) != NULL) {
        cl_text_fail(err, errlen, "identity file '%s' is malformed: it contains NUL bytes", qpath);
        goto err_wipe;
    }
    if (s_parse(self, text, why, sizeof why) != 0) {
        cl_text_fail(err, errlen, "identity file '%s' is malformed: %s", qpath, why);
        goto err_wipe;
    }
    sodium_memzero(text, sizeof text);
    close(fd);
    return 0;
err_wipe:
    sodium_memzero(text, sizeof text);
err_close:
    close(fd);
    return -1;
}

static int s_write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Best effort: makes the new directory entry durable. */
static void s_sync_dir(const char *path)
{
    char copy[4096];
    if (strlen(path) >= sizeof copy)
        return;
    strcpy(copy, path);
    int dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
}

/* Writes self as a new certificate at path.  Returns 0, -1 with the
   reason in err, or 1 when path appeared meanwhile (another process won
   the race; the caller then loads it). */
static int s_save(const cl_identity_t *self, const char *path, char *err, size_t errlen)
{
    char qpath[300];
    cl_text_quote(path, 200, qpath, sizeof qpath);
    char text[640];
    int n = snprintf(text, sizeof text,
                     "#   ****  Generated by mpicollab  ****\n"
                     "#   ZeroMQ CURVE **Secret** Certificate\n"
                     "#   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.\n"
                     "\n"
                     "metadata\n"
                     "    peer-id = \"%s\"\n"
                     "curve\n"
                     "    public-key = \"%s\"\n"
                     "    secret-key = \"%s\"\n",
                     self->peer_id, self->public_z85, self->secret_z85);
    if (n < 0 || (size_t)n >= sizeof text) {
        sodium_memzero(text, sizeof text);
        return cl_text_fail(err, errlen, "internal error formatting the identity file");
    }
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 16);
    if (tmp == NULL) {
        sodium_memzero(text, sizeof text);
        return cl_text_fail(err, errlen, "out of memory");
    }
    memcpy(tmp, path, plen);
    strcpy(tmp + plen, ".tmp.XXXXXX");
    int rc = -1;
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        cl_text_fail(err, errlen, "cannot create identity file '%s': %s", qpath, strerror(errno));
        goto out;
    }
    if (fchmod(fd, 0600) != 0 || s_write_all(fd, text, (size_t)n) != 0 || fsync(fd) != 0) {
        cl_text_fail(err, errlen, "cannot write identity file '%s': %s", qpath, strerror(errno));
        close(fd);
        unlink(tmp);
        goto out;
    }
    close(fd);
    if (link(tmp, path) == 0) {
        rc = 0;
    } else if (errno == EEXIST) {
        rc = 1;
    } else {
        cl_text_fail(err, errlen, "cannot create identity file '%s': %s", qpath, strerror(errno));
    }
    unlink(tmp);
    if (rc == 0)
        s_sync_dir(path);
out:
    free(tmp);
    sodium_memzero(text, sizeof text);
    return rc;
}

cl_identity_t *cl_identity_new(const char *path, char *err, size_t errlen)
{
    if (sodium_init() < 0) {
        cl_text_fail(err, errlen, "libsodium could not be initialized");
        return NULL;
    }
    if (path != NULL && path[0] == '\0') {
        cl_text_fail(err, errlen, "empty identity file name");
        return NULL;
    }
    cl_identity_t *self = calloc(1, sizeof *self);
    if (self == NULL) {
        cl_text_fail(err, errlen, "out of memory");
        return NULL;
    }
    int rc = path != NULL ? s_load(self, path, err, errlen) : 1;
    if (rc == 1) {
        crypto_box_keypair(self->public_key, self->secret_key);
        if (s_derive(self) != 0) {
            cl_text_fail(err, errlen, "cannot encode the new key pair");
            goto err_self;
        }
        if (path != NULL) {
            rc = s_save(self, path, err, errlen);
            if (rc == 1) /* created by another process meanwhile: use that one */
                rc = s_load(self, path, err, errlen);
            if (rc == 1)
                rc = cl_text_fail(err, errlen, "identity file vanished while it was created");
            if (rc == 0)
                cl_debug("created identity file %s", path);
        } else {
            rc = 0;
        }
    }
    if (rc != 0)
        goto err_self;
    if (s_derive(self) != 0) {
        cl_text_fail(err, errlen, "cannot encode the key pair");
        goto err_self;
    }
    return self;
err_self:
    cl_identity_destroy(&self);
    return NULL;
}

void cl_identity_destroy(cl_identity_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    sodium_memzero(*self_p, sizeof **self_p);
    free(*self_p);
    *self_p = NULL;
}

void cl_identity_sign(const cl_identity_t *self, const uint8_t *m, size_t mlen, uint8_t *pk,
                      uint8_t *sig)
{
    memcpy(pk, self->sign.pk, CL_XSIGN_PK);
    cl_xsign_sign_key(&self->sign, m, mlen, sig);
}

const uint8_t *cl_identity_public_key(const cl_identity_t *self)
{
    return self->public_key;
}

const uint8_t *cl_identity_secret_key(const cl_identity_t *self)
{
    return self->secret_key;
}

const char *cl_identity_public_z85(const cl_identity_t *self)
{
    return self->public_z85;
}

const char *cl_identity_secret_z85(const cl_identity_t *self)
{
    return self->secret_z85;
}

const char *cl_identity_peer_id(const cl_identity_t *self)
{
    return self->peer_id;
}
