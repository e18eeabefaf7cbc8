/*  cl_addr.h - peer addresses in multiaddr style.

    /ip4/203.0.113.7/tcp/31337/p2p/<peer-id>, /ip6/::1/tcp/9/p2p/<id>,
    /dns/host.example/tcp/31337/p2p/<id> (also /dns4, /dns6).  The /p2p part
    is optional for listen addresses and required for COLLAB_INITIAL_PEERS.
*/
#ifndef CL_ADDR_H_INCLUDED
#define CL_ADDR_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { CL_ADDR_IP4 = 4, CL_ADDR_IP6 = 6, CL_ADDR_DNS = 1 } cl_addr_family_t;

typedef struct {
    cl_addr_family_t family;
    char host[256];      /* dotted quad, IPv6 text (no brackets) or DNS name */
    uint16_t port;       /* 0 = ephemeral (listen only) */
    bool has_key;        /* /p2p/<id> present */
    uint8_t key[32];     /* public key decoded from the peer id */
} cl_addr_t;

/* Parses one multiaddr.  Returns 0, or -1 with a reason in err. */
int cl_addr_parse(const char *text, cl_addr_t *out, char *err, size_t errlen);

/* Parses a list separated by spaces and/or commas; *out is malloc'ed
   (caller frees), *n its length (0 for an empty list).  Every entry must
   carry /p2p/<id> when require_key is true. */
int cl_addr_parse_list(const char *text, bool require_key, cl_addr_t **out, size_t *n,
                       char *err, size_t errlen);

/* Formats as multiaddr (with /p2p/ when has_key).  Returns 0 or -1. */
int cl_addr_format(const cl_addr_t *a, char *out, size_t len);

/* ZeroMQ endpoint "tcp://host:port" ("tcp://[v6]:port").  Returns 0 or -1. */
int cl_addr_endpoint(const cl_addr_t *a, char *out, size_t len);

#endif
