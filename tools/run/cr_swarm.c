/*  cr_swarm.c - private key folder and loopback port picking.

    Ports: drawn outside the kernel's ephemeral range and tried by binding
    (cl_port.h: a port held by anyone is refused).  The socket stays bound
    until the peers are about to start, so two peers of one run can never
    be given the same port; every port handed out is also remembered for
    the whole run (peers started later by chaos faults).
*/
#include "cr_swarm.h"
#include "cr_output.h"

#include "util/cl_identity.h"
#include "util/cl_port.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CR_PORT_LOW 20000 /* below: well-known and commonly configured ports */
#define CR_PORT_TRIES 400

struct cr_swarm {
    char dir[PATH_MAX]; /* private folder */
    int *held;          /* sockets holding reserved ports */
    size_t nheld, capheld;
    int *used; /* every port handed out in this run */
    size_t nused, capused;
    int eph_lo, eph_hi; /* kernel ephemeral port range */
};

cr_swarm_t *cr_swarm_new(char *err, size_t errlen)
{
    cr_swarm_t *self = calloc(1, sizeof *self);
    if (self == NULL) {
        cr_set_err(err, errlen, "out of memory");
        return NULL;
    }
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] != '/')
        tmp = "/tmp";
    if ((size_t)snprintf(self->dir, sizeof self->dir, "%s/collab-run.XXXXXX", tmp) >=
        sizeof self->dir) {
        cr_set_err(err, errlen, "TMPDIR is too long");
        free(self);
        return NULL;
    }
    if (mkdtemp(self->dir) == NULL) {
        cr_set_err(err, errlen, "cannot create a private folder in %s: %s", tmp, strerror(errno));
        free(self);
        return NULL;
    }
    if (chmod(self->dir, 0700) != 0) { /* mkdtemp already does; be explicit */
        cr_set_err(err, errlen, "chmod %s: %s", self->dir, strerror(errno));
        rmdir(self->dir);
        free(self);
        return NULL;
    }
    cl_port_ephemeral(NULL, &self->eph_lo, &self->eph_hi);
    return self;
}

const char *cr_swarm_dir(const cr_swarm_t *self)
{
    return self->dir;
}

void cr_swarm_release_ports(cr_swarm_t *self)
{
    for (size_t i = 0; i < self->nheld; i++)
        close(self->held[i]);
    self->nheld = 0;
}

void cr_swarm_destroy(cr_swarm_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    cr_swarm_t *self = *self_p;
    cr_swarm_release_ports(self);
    DIR *d = opendir(self->dir);
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            if (unlinkat(dirfd(d), e->d_name, 0) != 0 && errno == EISDIR)
                (void)unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
        }
        closedir(d);
    }
    if (rmdir(self->dir) != 0 && errno != ENOENT)
        fprintf(stderr, "collab-run: warning: cannot remove %s: %s\n", self->dir, strerror(errno));
    free(self->held);
    free(self->used);
    free(self);
    *self_p = NULL;
}

int cr_swarm_identity(cr_swarm_t *self, int slot, char *path, size_t pathlen, char *peer_id,
                      size_t idlen, char *err, size_t errlen)
{
    if ((size_t)snprintf(path, pathlen, "%s/peer-%d.key", self->dir, slot) >= pathlen) {
        cr_set_err(err, errlen, "key file path too long");
        return -1;
    }
    char why[256] = "";
    cl_identity_t *id = cl_identity_new(path, why, sizeof why);
    if (id == NULL) {
        cr_set_err(err, errlen, "cannot create the identity %s: %s", path, why);
        return -1;
    }
    const char *pid = cl_identity_peer_id(id);
    if (pid == NULL || strlen(pid) >= idlen) {
        cl_identity_destroy(&id);
        cr_set_err(err, errlen, "identity %s has no usable peer id", path);
        return -1;
    }
    strcpy(peer_id, pid);
    cl_identity_destroy(&id);
    return 0;
}

/* A cl_port_taken_fn: port was handed out before in this run (arg the
   cr_swarm_t). */
static bool was_used(void *arg, int port)
{
    const cr_swarm_t *self = arg;
    for (size_t i = 0; i < self->nused; i++)
        if (self->used[i] == port)
            return true;
    return false;
}

static int remember(cr_swarm_t *self, int fd, int port)
{
    if (self->nheld == self->capheld) {
        size_t cap = self->capheld ? self->capheld * 2 : 16;
        int *h = realloc(self->held, cap * sizeof *h);
        if (h == NULL)
            return -1;
        self->held = h;
        self->capheld = cap;
    }
    if (self->nused == self->capused) {
        size_t cap = self->capused ? self->capused * 2 : 16;
        int *u = realloc(self->used, cap * sizeof *u);
        if (u == NULL)
            return -1;
        self->used = u;
        self->capused = cap;
    }
    self->held[self->nheld++] = fd;
    self->used[self->nused++] = port;
    return 0;
}

/* Keeps fd (bound to port bound) open until the run ends and hands the
   port out through *port.  Returns 0, or -1 (fd closed) when out of
   memory. */
static int hand_out(cr_swarm_t *self, int fd, int bound, int *port, char *err, size_t errlen)
{
    if (remember(self, fd, bound) != 0) {
        close(fd);
        cr_set_err(err, errlen, "out of memory");
        return -1;
    }
    *port = bound;
    return 0;
}

int cr_swarm_pick_port(cr_swarm_t *self, int *port, char *err, size_t errlen)
{
    int bound;
    int fd = cl_port_pick(CR_PORT_LOW, self->eph_lo, self->eph_hi, CR_PORT_TRIES, was_used, self,
                          &bound);
    if (fd < 0) {
        cr_set_err(err, errlen, "cannot find a free TCP port on 127.0.0.1: %s", strerror(errno));
        return -1;
    }
    return hand_out(self, fd, bound, port, err, errlen);
}
