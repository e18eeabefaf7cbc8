/*  cl_port.h - picking loopback TCP ports for the local peers that
    collab-run and the multi-process tests start.

    A peer's port must be free when the peer binds it, which comes later
    than the pick.  A port inside the kernel's ephemeral range
    (ip_local_port_range) may be handed to an outbound connection in
    between: a peer that dials another's address before that one listens
    may even connect to itself there (TCP's simultaneous open), and the
    owner's bind then fails (EADDRINUSE).  So ports are drawn at random
    outside that range, and each candidate is tried with a bind.  Keeping
    two peers of one run off one port is the caller's (collab-run holds
    each picked socket bound until its peers start; the tests remember
    what they handed out).
*/
#ifndef CL_PORT_H_INCLUDED
#define CL_PORT_H_INCLUDED

#include <stdbool.h>
#include <stdint.h>

/* The kernel's ephemeral port range read from `path` (NULL:
   /proc/sys/net/ipv4/ip_local_port_range) into *lo and *hi; Linux's
   default 32768-60999 when the file is missing or does not hold two
   ports 1 <= lo <= hi <= 65535. */
void cl_port_ephemeral(const char *path, int *lo, int *hi);

/* Maps the random number r onto [floor, 65535] without [eph_lo, eph_hi],
   uniformly over the ports left (floor at least 1024).  Returns the
   port, or -1 when none is left. */
int cl_port_candidate(uint32_t r, int floor, int eph_lo, int eph_hi);

/* A TCP socket bound to 127.0.0.1:port (0: the kernel's choice), without
   SO_REUSEADDR, so a port anyone holds (listening, connected, in
   TIME_WAIT, or bound on the wildcard address) is refused.  Returns the
   socket (close-on-exec) and the port it got in *bound, or -1. */
int cl_port_bind(int port, int *bound);

/* Says whether the caller already handed out port (arg: the caller's). */
typedef bool (*cl_port_taken_fn)(void *arg, int port);

/* Picks a free port: up to `tries` random candidates (cl_port_candidate
   over floor and the range eph_lo..eph_hi), skipping those taken(arg,
   port) names, each tried with cl_port_bind; then, on a crowded
   machine, up to CL_PORT_KERNEL_TRIES of the kernel's choices that are
   not taken.  Returns the bound socket (the caller keeps or closes it)
   and its port in *port, or -1 (errno from the last attempt). */
#define CL_PORT_KERNEL_TRIES 64
int cl_port_pick(int floor, int eph_lo, int eph_hi, int tries, cl_port_taken_fn taken, void *arg,
                 int *port);

#endif
