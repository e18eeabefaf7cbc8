/*  collab-keygen - creates a peer identity file and prints its peer id.

    collab-keygen [--force] FILE   creates FILE (mode 0600) with a fresh
                                   Curve25519 key pair
    collab-keygen --show FILE      prints the peer id of an existing FILE
    collab-keygen --swarm-key [--force] FILE
                                   creates FILE (mode 0600) with a fresh
                                   swarm key: 32 random bytes, written as
                                   64 hex digits and a newline, for
                                   COLLAB_SWARM_KEY_FILE

    The file is what COLLAB_IDENTITY names: a peer started with it keeps
    its peer id (and so its rank) across restarts.  Without --force an
    existing file is never touched.  With --force the new key is written
    under a temporary name in the same folder and renamed over FILE, so
    FILE always holds a complete key.
*/
#include "util/cl_identity.h"

#include <fcntl.h>
#include <sodium.h>

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CK_VERSION
#define CK_VERSION "unknown"
#endif

static const char *usage_text =
    "usage: collab-keygen [--force] FILE\n"
    "       collab-keygen --show FILE\n"
    "       collab-keygen --swarm-key [--force] FILE\n"
    "\n"
    "Creates an mpicollab peer identity (a Curve25519 key pair, mode 0600)\n"
    "in FILE and prints its peer id and the line other peers join with.\n"
    "Use it with COLLAB_IDENTITY=FILE.\n"
    "\n"
    "  --force   replace FILE if it exists\n"
    "  --show    print the peer id of the existing FILE\n"
    "  --swarm-key  write a new swarm key (32 random bytes as 64 hex digits,\n"
    "               mode 0600) to FILE instead; give it to every peer of a\n"
    "               closed swarm with COLLAB_SWARM_KEY_FILE=FILE\n";

/* Writes 32 random bytes as hex and a newline to a new file at a
   temporary name next to path (O_EXCL, mode 0600, synced) and links it to
   path: without force an existing path is never replaced.  Returns 0 or
   1 (reason printed). */
static int write_swarm_key(const char *path, bool force)
{
    char tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.new.XXXXXX", path) >= sizeof tmp) {
        fprintf(stderr, "collab-keygen: %s: path too long\n", path);
        return 1;
    }
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "collab-keygen: cannot create a file next to %s: %s\n", path,
                strerror(errno));
        return 1;
    }
    uint8_t key[32];
    char hex[2 * sizeof key + 2];
    randombytes_buf(key, sizeof key);
    sodium_bin2hex(hex, sizeof hex, key, sizeof key);
    hex[2 * sizeof key] = '\n';
    int rc = 1;
    size_t len = 2 * sizeof key + 1;
    if (fchmod(fd, 0600) != 0 || write(fd, hex, len) != (ssize_t)len || fsync(fd) != 0) {
        fprintf(stderr, "collab-keygen: cannot write %s: %s\n", tmp, strerror(errno));
    } else if (force ? rename(tmp, path) != 0 : link(tmp, path) != 0) {
        fprintf(stderr, "collab-keygen: cannot create %s: %s\n", path, strerror(errno));
    } else {
        rc = 0;
    }
    sodium_memzero(key, sizeof key);
    sodium_memzero(hex, sizeof hex);
    close(fd);
    unlink(tmp);
    return rc;
}

static void print_identity(const char *path, const cl_identity_t *id)
{
    const char *peer = cl_identity_peer_id(id);
    printf("peer id: %s\n", peer);
    printf("identity file: %s (use COLLAB_IDENTITY=%s)\n", path, path);
    printf("other peers can join it with:\n");
    printf("COLLAB_INITIAL_PEERS=/ip4/<your public ip>/tcp/<port>/p2p/%s\n", peer);
}

/* Creates a new key at a temporary name next to path and renames it over
   path.  Returns the identity or NULL (reason printed). */
static cl_identity_t *replace_identity(const char *path)
{
    char dir[PATH_MAX];
    if ((size_t)snprintf(dir, sizeof dir, "%s.new.XXXXXX", path) >= sizeof dir) {
        fprintf(stderr, "collab-keygen: %s: path too long\n", path);
        return NULL;
    }
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "collab-keygen: cannot create a temporary folder next to %s: %s\n", path,
                strerror(errno));
        return NULL;
    }
    char tmp[PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s/key", dir);
    char err[512] = "";
    cl_identity_t *id = cl_identity_new(tmp, err, sizeof err);
    if (id == NULL) {
        fprintf(stderr, "collab-keygen: %s\n", err);
    } else if (rename(tmp, path) != 0) {
        fprintf(stderr, "collab-keygen: cannot replace %s: %s\n", path, strerror(errno));
        cl_identity_destroy(&id);
    }
    unlink(tmp);
    rmdir(dir);
    return id;
}

int main(int argc, char **argv)
{
    bool force = false, show = false, swarm_key = false, opts_done = false;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (opts_done || a[0] != '-' || a[1] == '\0') {
            if (path != NULL) {
                fprintf(stderr, "collab-keygen: one FILE only ('%s' is extra)\n", a);
                return 2;
            }
            path = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            opts_done = true;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (strcmp(a, "--version") == 0) {
            printf("collab-keygen (mpicollab) %s\n", CK_VERSION);
            return 0;
        }
        if (strcmp(a, "--force") == 0 || strcmp(a, "-f") == 0) {
            force = true;
        } else if (strcmp(a, "--show") == 0) {
            show = true;
        } else if (strcmp(a, "--swarm-key") == 0) {
            swarm_key = true;
        } else {
            fprintf(stderr, "collab-keygen: unknown option '%s'\n%s", a, usage_text);
            return 2;
        }
    }
    if (path == NULL || path[0] == '\0') {
        fprintf(stderr, "collab-keygen: FILE is required\n%s", usage_text);
        return 2;
    }
    if (force && show) {
        fprintf(stderr, "collab-keygen: --force and --show exclude each other\n");
        return 2;
    }
    if (swarm_key && show) {
        fprintf(stderr, "collab-keygen: --swarm-key and --show exclude each other\n");
        return 2;
    }

    struct stat st;
    bool exists = lstat(path, &st) == 0;
    if (!exists && errno != ENOENT) {
        fprintf(stderr, "collab-keygen: %s: %s\n", path, strerror(errno));
        return 1;
    }
    if (swarm_key) {
        if (exists && !force) {
            fprintf(stderr,
                    "collab-keygen: %s already exists; use --force to replace it (every "
                    "peer of the swarm then needs the new key)\n",
                    path);
            return 1;
        }
        if (exists && !S_ISREG(st.st_mode)) {
            fprintf(stderr, "collab-keygen: %s is not a regular file; not replacing it\n", path);
            return 1;
        }
        if (sodium_init() < 0) {
            fprintf(stderr, "collab-keygen: libsodium cannot start\n");
            return 1;
        }
        if (write_swarm_key(path, exists) != 0)
            return 1;
        printf("swarm key file: %s (32 random bytes; give every peer of the swarm a copy, mode "
               "0600, with COLLAB_SWARM_KEY_FILE=%s)\n",
               path, path);
        return fflush(stdout) == 0 ? 0 : 1;
    }
    cl_identity_t *id = NULL;
    char err[512] = "";
    if (show) {
        if (!exists) {
            fprintf(stderr, "collab-keygen: %s does not exist\n", path);
            return 1;
        }
        id = cl_identity_new(path, err, sizeof err);
        if (id == NULL) {
            fprintf(stderr, "collab-keygen: %s\n", err);
            return 1;
        }
    } else if (exists) {
        if (!force) {
            fprintf(stderr,
                    "collab-keygen: %s already exists; use --force to replace it "
                    "(peers started with it will get a new peer id) or --show to print it\n",
                    path);
            return 1;
        }
        if (!S_ISREG(st.st_mode)) {
            fprintf(stderr, "collab-keygen: %s is not a regular file; not replacing it\n", path);
            return 1;
        }
        id = replace_identity(path);
        if (id == NULL)
            return 1;
    } else {
        id = cl_identity_new(path, err, sizeof err);
        if (id == NULL) {
            fprintf(stderr, "collab-keygen: %s\n", err);
            return 1;
        }
    }
    print_identity(path, id);
    cl_identity_destroy(&id);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "collab-keygen: cannot write the output: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}
