/*  cr_swarm.h - the local resources of a collab-run swarm: a private
    folder for the peers' key files and free loopback ports.

    The folder is created with mode 0700 under $TMPDIR (or /tmp) and is
    removed with everything in it by cr_swarm_destroy.
*/
#ifndef CR_SWARM_H_INCLUDED
#define CR_SWARM_H_INCLUDED

#include <stddef.h>

typedef struct cr_swarm cr_swarm_t;

/* Creates the private folder.  Returns NULL with a reason in err.
   Caller owns the result. */
cr_swarm_t *cr_swarm_new(char *err, size_t errlen);

/* Releases reserved ports, removes the folder and its files, frees;
   nulls *self_p; accepts NULL. */
void cr_swarm_destroy(cr_swarm_t **self_p);

/* The private folder's path. */
const char *cr_swarm_dir(const cr_swarm_t *self);

/* Creates a fresh identity file "peer-<slot>.key" in the folder (through
   cl_identity, mode 0600) and writes its path and peer id.  Returns 0, or
   -1 with a reason in err. */
int cr_swarm_identity(cr_swarm_t *self, int slot, char *path, size_t pathlen, char *peer_id,
                      size_t idlen, char *err, size_t errlen);

/* Picks a loopback TCP port that is free now and was not handed out
   before by this swarm.  It prefers ports outside the kernel's ephemeral
   range (so outgoing connections cannot take it first) and keeps it bound
   until cr_swarm_release_ports.  Returns 0, or -1 with a reason in err. */
int cr_swarm_pick_port(cr_swarm_t *self, int *port, char *err, size_t errlen);

/* Closes the sockets holding reserved ports, so that peers can bind them;
   call right before starting the peers that use them. */
void cr_swarm_release_ports(cr_swarm_t *self);

#endif
