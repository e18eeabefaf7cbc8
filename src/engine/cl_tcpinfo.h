/*  cl_tcpinfo.h - what the kernel knows about one TCP connection: the
    bytes it saw acknowledged and whether the link holds data back.

    Its own file because the kernel's <linux/tcp.h>, which has the fields
    (tcpi_bytes_acked, tcpi_notsent_bytes, tcpi_rwnd_limited), cannot be
    included beside CZMQ's headers.  Linux only, as the rest of the
    transport.
*/
#ifndef CL_TCPINFO_H_INCLUDED
#define CL_TCPINFO_H_INCLUDED

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    uint64_t cookie;  /* the socket's SO_COOKIE: tells it from a later socket on the same fd */
    uint64_t acked;   /* bytes acknowledged by the receiver */
    uint64_t sent;    /* bytes handed to the network (retransmissions included) */
    uint64_t rwnd_us; /* microseconds the receiver's window limited sending */
    bool waiting;     /* bytes written wait in the socket, not yet sent */
    bool drained;     /* nothing waits in the socket or is unacknowledged */
} cl_tcpinfo_t;

/* Reads fd's figures into out.  Returns 0, or -1 when fd is not a TCP
   socket (or the kernel is too old to say): out is then untouched. */
int cl_tcpinfo_read(int fd, cl_tcpinfo_t *out);

/* Whether fd's remote end is an address of this host's loopback
   (127.0.0.0/8, ::1, or IPv4-mapped 127.x): such a link says nothing
   about the network.  False when it cannot be told. */
bool cl_tcpinfo_loopback(int fd);

#endif
